//! # trace: the execution-block IR every whatif input is converted to
//!
//! Contract of this crate:
//!
//! * A [`Trace`] is a set of **objects** (chares, array elements or ranks, each with the PE it
//!   was recorded on), an **entry-method** table, optional multicast **groups**, and
//!   **execution blocks** in the sense of BigSim's sequential execution blocks: one
//!   non-preemptive run of an entry method on an object, with
//!   - its recorded `duration`;
//!   - the message that triggers it (`trigger`, or none);
//!   - backward dependencies on *earlier* blocks (which must finish before it starts);
//!   - the messages it sends, each at an `offset` from the block's start, to an object, a group,
//!     all objects or all but one, with a size in bytes and a target entry method;
//!   - markers: the iteration it belongs to and whether it is a load-balancing sync point.
//! * A block may start once its trigger has arrived and its dependencies have finished; what
//!   "arrived" means (network, mapping, CPU speed) is the replay's business, not this crate's.
//! * Every decoder and the [`TraceBuilder`] validate the invariants listed on [`Trace`]; a
//!   [`Trace`] you get from this crate is consistent.
//! * Blocks are stored as columns ([`BlockColumns`]; [`Trace::block`] returns a [`Block`] by
//!   value), dependencies and sends as CSR arrays; consumers of each message are resolved once
//!   and cached ([`Trace::consumers`]).
//! * A [`Repeated`] trace stores one iteration and runs it `K` times (structure sharing); it
//!   *means* its expansion ([`Repeated::expand`]), which the replay never has to build.
//! * Three serialisations, all versioned: the [`columnar`] format (magic `WHATIFTC`; what
//!   [`write_trace_file`] writes: fixed-width little-endian columns read in bulk, sizes
//!   checked against the file before any allocation, repeated traces kept compact), the older
//!   varint [`binary`] format (magic `WHATIFTR`, streamable block by block; still read and
//!   written) and a [`text`] JSON-lines form for people and scripts. [`read_trace_file`] tells
//!   them apart by content, not by file name. Any of them may be compressed with Zstandard
//!   ([`compress`]): written so when the file name ends in `.zst`, read so whatever the name.
//! * Long loads report progress through [`sim_core::Progress`] ([`read_repeated_file_with`]).
//! * Decoding never panics on bad input: errors name the file and the byte offset (binary) or
//!   line (text) and say what was expected.

pub mod binary;
pub mod columnar;
pub mod compress;
mod error;
mod ids;
mod model;
pub mod periodic;
mod repeat;
pub mod spill;
mod summary;
pub mod text;

pub use error::{TraceError, ValidationError};
pub use ids::{BlockId, EntryId, GroupId, MsgId, ObjectId, PeId};
pub use model::{
    Block, BlockColumns, Consumers, Destination, EntryMethod, FLAG_ALL, FLAG_LB_SYNC, FLAG_NETWORK,
    Group, MessageIndex, NO_ITERATION, NONE_U64, ObjectInfo, RecordedMove, Send, Trace,
    TraceBuilder, TraceMeta, TraceParts,
};
pub use periodic::Periodic;
pub use repeat::{Carried, MAX_REPS, Repeated, Varying};
pub use summary::{EntrySummary, TraceSummary};

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

/// Which serialisation to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The compact binary format ([`binary`]).
    Binary,
    /// JSON lines ([`text`]).
    Text,
}

impl Format {
    /// `Text` for names ending in `.jsonl` or `.json`, `Binary` otherwise; a final `.zst`
    /// (compressed) is looked through: `run.jsonl.zst` is compressed text.
    pub fn from_path(path: &Path) -> Format {
        match compress::inner_name(path)
            .extension()
            .and_then(|e| e.to_str())
        {
            Some("jsonl") | Some("json") => Format::Text,
            _ => Format::Binary,
        }
    }
}

fn io_err(path: &Path, source: std::io::Error) -> TraceError {
    TraceError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Reads a trace file in any format (detected from its first bytes) and validates it. A
/// repeated trace is expanded into every block (see [`read_repeated_file`] to keep it
/// compact).
pub fn read_trace_file(path: &Path) -> Result<Trace, TraceError> {
    let r = read_repeated_file(path)?;
    Ok(if r.is_flat() {
        r.into_body()
    } else {
        r.expand()
    })
}

/// Reads a trace file in any format (detected from its first bytes) and validates it,
/// keeping a repeated trace compact (a flat trace comes back as one repetition).
pub fn read_repeated_file(path: &Path) -> Result<Repeated, TraceError> {
    read_repeated_file_with(path, &mut sim_core::NoProgress)
}

/// [`read_repeated_file`], reporting the bytes read (columnar files) to `progress`. A file
/// compressed with Zstandard is read through a decoder ([`compress`]).
pub fn read_repeated_file_with(
    path: &Path,
    progress: &mut dyn sim_core::Progress,
) -> Result<Repeated, TraceError> {
    sim_core::inputs::register(path);
    let open = || -> Result<(BufReader<File>, u64), TraceError> {
        let file = File::open(path).map_err(|e| io_err(path, e))?;
        let len = file.metadata().map_err(|e| io_err(path, e))?.len();
        Ok((BufReader::with_capacity(1 << 16, file), len))
    };
    let (mut r, len) = open()?;
    let name = path.display().to_string();
    let head = first_bytes(&mut r).map_err(|e| io_err(path, e))?;
    if head.starts_with(&compress::ZSTD_MAGIC) {
        let name = format!("{name} (decompressed)");
        progress.stage("measure", len, "compressed bytes");
        let inner_len = compress::decompressed_len(open()?.0, &name)?;
        let bad = |e: std::io::Error| TraceError::Binary {
            path: name.clone(),
            offset: 0,
            expected: "a Zstandard stream".into(),
            found: format!("a stream that does not decompress: {e}"),
        };
        let mut d = compress::decoder(open()?.0).map_err(bad)?;
        let head = first_bytes(&mut d).map_err(bad)?;
        if head.starts_with(&compress::ZSTD_MAGIC) {
            return Err(TraceError::Binary {
                path: name,
                offset: 0,
                expected: "a whatif trace inside the compressed stream".into(),
                found: "a second compressed stream (the file was compressed twice: decompress it once with `zstd -d`)".into(),
            });
        }
        return read_content(&head, d, inner_len, &name, progress);
    }
    read_content(&head, r, len, &name, progress)
}

/// Up to the first 8 bytes of `r`.
fn first_bytes(r: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let mut first = [0u8; 8];
    let mut got = 0;
    while got < first.len() {
        match r.read(&mut first[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(first[..got].to_vec())
}

/// Reads the trace whose first bytes `head` were taken from `r`, `len` bytes in all.
fn read_content(
    head: &[u8],
    r: impl Read,
    len: u64,
    name: &str,
    progress: &mut dyn sim_core::Progress,
) -> Result<Repeated, TraceError> {
    let rest = std::io::Cursor::new(head.to_vec()).chain(r);
    if head == columnar::MAGIC {
        return columnar::read_columnar_with(rest, len, name, progress);
    }
    if head == binary::MAGIC {
        return binary::read_binary(rest, name).map(Repeated::flat);
    }
    if head == periodic::MAGIC {
        // A periodic trace (what the emulator writes when iterations repeat) is replayed
        // through its expansion.
        progress.stage("load", len, "bytes");
        let p = Periodic::read(rest, len, name)?;
        return p
            .expand()
            .map(Repeated::flat)
            .map_err(|source| TraceError::Invalid {
                path: name.to_string(),
                source,
            });
    }
    match head.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => text::read_text(BufReader::new(rest), name).map(Repeated::flat),
        _ => Err(TraceError::Binary {
            path: name.to_string(),
            offset: 0,
            expected: "a whatif trace: the magic bytes \"WHATIFTC\", \"WHATIFTP\" or \"WHATIFTR\" (binary), a JSON-lines header starting with '{', or any of them compressed with Zstandard".into(),
            found: if head.is_empty() {
                "found an empty file".into()
            } else {
                format!("found {}", describe_bytes(head))
            },
        }),
    }
}

/// Bytes from a file for an error message: quoted when they are printable text, else in hex
/// (never raw: a terminal must not receive control characters from an input).
pub fn describe_bytes(b: &[u8]) -> String {
    if b.iter()
        .all(|c| (0x20..0x7f).contains(c) || *c == b'\n' || *c == b'\t')
    {
        format!("{:?}", String::from_utf8_lossy(b))
    } else {
        let hex: Vec<String> = b.iter().map(|c| format!("{c:02x}")).collect();
        format!("the bytes {}", hex.join(" "))
    }
}

/// Writes a trace file in `format` (binary: the columnar format), atomically: a temporary
/// file renamed into place, so a killed writer never leaves a cut trace behind.
/// A name ending in `.zst` is written compressed ([`compress`]).
pub fn write_trace_file(trace: &Trace, path: &Path, format: Format) -> Result<(), TraceError> {
    write_file(path, |w| match format {
        Format::Binary => columnar::write_columnar_flat(trace, w),
        Format::Text => text::write_text(trace, w),
    })
}

/// Writes `path` atomically with `write`, compressed when its name ends in `.zst`.
pub fn write_file(
    path: &Path,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<(), TraceError> {
    let mut f = safe_output::AtomicFile::create(path).map_err(|e| out_err(path, e))?;
    compress::write_maybe_compressed(&mut f, compress::is_compressed_name(path), write)
        .map_err(|e| io_err(path, e))?;
    f.commit().map_err(|e| out_err(path, e))
}

/// Writes the flat trace of `header` and the blocks of `spill` atomically to `path`
/// (compressed: a name ending in `.zst`; a spill compressed as it went is then copied frame
/// by frame, not compressed again: [`spill::ColumnSpill::finish_compressed`]).
pub fn write_spill_file(
    spill: &mut spill::ColumnSpill,
    header: &Trace,
    path: &Path,
) -> Result<(), TraceError> {
    if !(spill.is_compressed() && compress::is_compressed_name(path)) {
        return write_file(path, |w| spill.finish(header, w));
    }
    let mut f = safe_output::AtomicFile::create(path).map_err(|e| out_err(path, e))?;
    spill
        .finish_compressed(header, &mut f)
        .map_err(|e| io_err(path, e))?;
    f.commit().map_err(|e| out_err(path, e))
}

/// Writes a periodic trace (magic `WHATIFTP`) atomically (compressed: a name ending in
/// `.zst`).
pub fn write_periodic_file(p: &Periodic, path: &Path) -> Result<(), TraceError> {
    write_file(path, |w| p.write(w))
}

/// Writes a repeated trace: compact in the binary format, expanded in the text form.
/// A name ending in `.zst` is written compressed.
pub fn write_repeated_file(rep: &Repeated, path: &Path, format: Format) -> Result<(), TraceError> {
    write_file(path, |w| match format {
        Format::Binary => columnar::write_columnar(rep, w),
        Format::Text => text::write_text(&rep.expand(), w),
    })
}

fn out_err(path: &Path, e: safe_output::OutputError) -> TraceError {
    match e {
        safe_output::OutputError::Io { source, .. } => io_err(path, source),
        other => io_err(path, std::io::Error::other(other.to_string())),
    }
}

#[cfg(test)]
mod tests;
