//! Compressed trace files: any trace format inside one Zstandard stream.
//!
//! * **Writing.** A file whose name ends in `.zst` (`run.trace.zst`, `run.jsonl.zst`) is
//!   written through a Zstandard encoder at [`LEVEL`] with [`WORKERS`] threads (always that
//!   many: the bytes depend on the trace only, never on the machine). The name before `.zst` picks the format inside,
//!   as for an uncompressed file ([`crate::Format::from_path`]).
//! * **Reading.** A file that starts with Zstandard's magic number is read through a decoder,
//!   whatever its name (so `zstd run.trace` by hand works too), and the format inside is then
//!   recognised by its own magic bytes.
//! * **Sizes.** The readers check every count against the bytes the input holds before they
//!   allocate. For a compressed file that is the *decompressed* size, which a first pass
//!   measures by decompressing into nothing ([`decompressed_len`]): no allocation beyond the
//!   decoder's window, and a corrupt or cut stream is reported there, before anything is built.
//!   The pass costs one extra decompression (about 1 GB/s on one core).
//! * Error offsets inside a compressed file count bytes of the decompressed content; the file
//!   is named `NAME (decompressed)` in them.
//!
//! Emulated and imported traces are repetitive: the flat trace of a 32,768-object stencil
//! (168.9 MB) is 8.5 MB at level 3.

use crate::error::TraceError;
use std::io::{self, Read, Write};
use std::path::Path;

/// The four bytes every Zstandard frame starts with (0xFD2FB528, little-endian).
pub const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
/// The compression level written (Zstandard's default: fast, and most of the gain).
pub const LEVEL: i32 = 3;
/// Compression worker threads (fixed, so that the bytes are the same on every computer).
pub const WORKERS: u32 = 2;

/// Whether `path`'s name asks for a compressed file (it ends in `.zst`).
pub fn is_compressed_name(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()) == Some("zst")
}

/// `path` without a final `.zst`, for choosing the format inside.
pub(crate) fn inner_name(path: &Path) -> &Path {
    if is_compressed_name(path) {
        Path::new(path.file_stem().unwrap_or_default())
    } else {
        path
    }
}

/// Runs `write` on `w`, through an encoder when `compressed`, and finishes the stream.
pub(crate) fn write_maybe_compressed<W: Write>(
    w: W,
    compressed: bool,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    if compressed {
        let mut enc = zstd::stream::write::Encoder::new(w, LEVEL)?;
        // Always two workers, whatever this computer has: the bytes depend on the worker
        // setting (one thread in-line differs from workers), never on the cores that run it.
        enc.multithread(WORKERS)?;
        write(&mut enc)?;
        enc.finish()?;
        Ok(())
    } else {
        let mut w = w;
        write(&mut w)
    }
}

/// A decoder over `r`, a compressed stream read from its first byte.
pub(crate) fn decoder<R: Read>(r: R) -> io::Result<impl Read> {
    zstd::stream::read::Decoder::new(r)
}

/// The size of the content of the compressed stream `r`, by decompressing it into nothing.
/// `name` names the file in errors.
pub(crate) fn decompressed_len<R: Read>(r: R, name: &str) -> Result<u64, TraceError> {
    let fail = |e: io::Error| TraceError::Binary {
        path: name.to_string(),
        offset: 0,
        expected: "a whole Zstandard stream (a compressed trace)".into(),
        found: format!("a stream that does not decompress: {e}"),
    };
    let mut d = decoder(r).map_err(fail)?;
    io::copy(&mut d, &mut io::sink()).map_err(fail)
}
