//! A flat columnar trace built on disk, for traces whose blocks do not fit in memory.
//!
//! Blocks arrive in batches ([`Segment`]s with absolute references: dependencies are block
//! ids, triggers send labels, counted from the first block ever pushed). Each of the 18
//! columns is appended to its own file in a spill folder, so memory stays at one batch
//! whatever the trace's length. [`ColumnSpill::finish`] then writes the columnar header, every
//! column in the format's order and the trailer: the bytes
//! [`crate::columnar::write_columnar_flat`] writes for the same trace (a test checks this on
//! emulated programs). The trace is not validated here (its producer must keep the trace's
//! invariants); every reader validates it when the file is loaded.
//!
//! The folder and its files are removed when the spill is dropped, finished or not, and by
//! [`safe_output::remove_temporaries`] when the run is interrupted.
//!
//! **Compressed** ([`ColumnSpill::create_compressed`], for an output that will be compressed
//! anyway): each column file is one Zstandard frame, compressed on a worker thread while the
//! producer goes on (up to a batch of columns is queued). [`ColumnSpill::finish_compressed`] then
//! writes the output as a series of frames (the header, each column's file as it is, the
//! padding and the trailer) without compressing anything again: Zstandard decodes
//! concatenated frames as the concatenation of their contents, so the file *reads* exactly as
//! the single-stream file [`crate::write_file`] would write, and is as deterministic (its
//! bytes depend on the trace and the batch size only). A flat emulation of a million objects
//! spills 5.26 GB of columns: compressed, about a tenth goes to disk, and the final write is a
//! copy instead of a 17 s compression.

use crate::binary::Out;
use crate::columnar::{MAGIC, OPT_ARRIVAL, OPT_FLAGS, OPT_ITERATION, OPT_PRIORITY, OPT_START};
use crate::columnar::{TRAILER, VERSION, pad8};
use crate::ids::{EntryId, MsgId};
use crate::model::{Destination, NO_ITERATION, NONE_U64, Send, Trace};
use crate::periodic::Segment;
use sim_core::SimDuration;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

/// The columns, in the format's order ([`crate::columnar`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Col {
    Object,
    Entry,
    Duration,
    Trigger,
    Iteration,
    Priority,
    Flags,
    Start,
    Arrival,
    DepsEnd,
    Deps,
    SendsEnd,
    SendMsg,
    SendOffset,
    SendBytes,
    SendEntry,
    SendKind,
    SendDest,
}

const COLS: [Col; 18] = [
    Col::Object,
    Col::Entry,
    Col::Duration,
    Col::Trigger,
    Col::Iteration,
    Col::Priority,
    Col::Flags,
    Col::Start,
    Col::Arrival,
    Col::DepsEnd,
    Col::Deps,
    Col::SendsEnd,
    Col::SendMsg,
    Col::SendOffset,
    Col::SendBytes,
    Col::SendEntry,
    Col::SendKind,
    Col::SendDest,
];

/// The most blocks, dependencies or sends a columnar trace holds (its reader's limit).
const MAX_COUNT: u64 = u32::MAX as u64 - 1;

/// A columnar trace being written column by column; see the [module docs](self).
#[derive(Debug)]
pub struct ColumnSpill {
    dir: PathBuf,
    sink: Sink,
    /// Bytes of each column so far (uncompressed).
    col_bytes: [u64; COLS.len()],
    blocks: u64,
    deps: u64,
    sends: u64,
    /// Optional-column bits of the columns some block has a value in.
    opt: u8,
}

/// Where the columns go.
#[derive(Debug)]
enum Sink {
    /// One file per column, as is.
    Plain(Vec<BufWriter<File>>),
    /// One Zstandard frame per column, compressed on a worker thread.
    Compressed(Compressor),
}

/// The window of a column's compressor: 1 MiB (the 18 compressors hold about 40 MB). The
/// 32,768-object stencil's file comes out 2% larger than one stream with Zstandard's default
/// window (8 MiB at level 3); with 512 KiB, 8% larger.
const COLUMN_WINDOW_LOG: u32 = 20;

/// The worker compressing a [`Sink::Compressed`] spill's columns.
#[derive(Debug)]
struct Compressor {
    /// A batch's column to compress: its index and bytes; `None` once finished.
    tx: Option<SyncSender<(usize, Vec<u8>)>>,
    /// Buffers the worker has written, for the next columns.
    back: Receiver<Vec<u8>>,
    worker: Option<JoinHandle<io::Result<()>>>,
}

impl Compressor {
    fn start(paths: Vec<PathBuf>) -> io::Result<Compressor> {
        // A stream per column: one frame per file, matches across batches (a frame per
        // batch and column, with one context for all, made the 32,768-object stencil's
        // flat file 45% larger).
        let mut encoders = Vec::with_capacity(paths.len());
        for p in &paths {
            let f = BufWriter::with_capacity(1 << 16, File::create(p)?);
            let mut e = zstd::stream::write::Encoder::new(f, crate::compress::LEVEL)?;
            e.window_log(COLUMN_WINDOW_LOG)?;
            encoders.push(e);
        }
        // Up to a batch of columns waits for the worker, so the producer goes on while they
        // are compressed (with no queue it waited for each column: compression was no longer
        // overlapped, 1M objects took 105 s instead of 83); about two batches' buffers exist.
        let (tx, rx) = sync_channel::<(usize, Vec<u8>)>(COLS.len());
        let (back_tx, back) = sync_channel::<Vec<u8>>(COLS.len());
        let worker = std::thread::Builder::new()
            .name("whatif-spill-zstd".into())
            .spawn(move || -> io::Result<()> {
                for (i, mut b) in rx {
                    encoders[i].write_all(&b)?;
                    b.clear();
                    let _ = back_tx.try_send(b);
                }
                for e in encoders {
                    e.finish()?.flush()?;
                }
                Ok(())
            })?;
        Ok(Compressor {
            tx: Some(tx),
            back,
            worker: Some(worker),
        })
    }

    /// An empty buffer for a column: a returned one, or new.
    fn buffer(&mut self) -> Vec<u8> {
        self.back.try_recv().unwrap_or_default()
    }

    /// Hands column `i`'s bytes to the worker; an error if it has stopped on one.
    fn send(&mut self, i: usize, bytes: Vec<u8>) -> io::Result<()> {
        let sent = match &self.tx {
            Some(tx) => tx.send((i, bytes)).is_ok(),
            None => false,
        };
        if sent {
            Ok(())
        } else {
            self.join()?;
            Err(io::Error::other(
                "the spill's compressor thread stopped early",
            ))
        }
    }

    /// Waits for the worker to write out every batch and close its frames.
    fn join(&mut self) -> io::Result<()> {
        self.tx = None;
        match self.worker.take() {
            Some(w) => w
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the spill's compressor thread failed"))),
            None => Ok(()),
        }
    }
}

fn put<T: bytemuck::Pod>(w: &mut impl Write, v: &[T], to_le: impl Fn(T) -> T) -> io::Result<()> {
    if cfg!(target_endian = "little") {
        w.write_all(bytemuck::cast_slice(v))
    } else {
        for &x in v {
            w.write_all(bytemuck::bytes_of(&to_le(x)))?;
        }
        Ok(())
    }
}

fn put_each<I, T: bytemuck::Pod>(
    w: &mut impl Write,
    items: impl Iterator<Item = I>,
    f: impl Fn(I) -> T,
) -> io::Result<()> {
    for x in items {
        w.write_all(bytemuck::bytes_of(&f(x)))?;
    }
    Ok(())
}

impl ColumnSpill {
    /// Creates the folder `dir` (which must not exist) and its column files.
    pub fn create(dir: &Path) -> io::Result<ColumnSpill> {
        Self::create_as(dir, false)
    }

    /// As [`ColumnSpill::create`], the columns compressed as they come (see the
    /// [module docs](self)).
    pub fn create_compressed(dir: &Path) -> io::Result<ColumnSpill> {
        Self::create_as(dir, true)
    }

    fn create_as(dir: &Path, compressed: bool) -> io::Result<ColumnSpill> {
        std::fs::create_dir(dir)?;
        safe_output::track_temporary(dir, true);
        let paths: Vec<PathBuf> = (0..COLS.len()).map(|i| column_path(dir, i)).collect();
        let sink = if compressed {
            Sink::Compressed(Compressor::start(paths)?)
        } else {
            let mut files = Vec::with_capacity(COLS.len());
            for p in paths {
                files.push(BufWriter::with_capacity(1 << 18, File::create(p)?));
            }
            Sink::Plain(files)
        };
        Ok(ColumnSpill {
            dir: dir.to_path_buf(),
            sink,
            col_bytes: [0; COLS.len()],
            blocks: 0,
            deps: 0,
            sends: 0,
            opt: 0,
        })
    }

    /// Whether the columns are compressed ([`ColumnSpill::create_compressed`]).
    pub fn is_compressed(&self) -> bool {
        matches!(self.sink, Sink::Compressed(_))
    }

    fn path(&self, i: usize) -> PathBuf {
        column_path(&self.dir, i)
    }

    /// Blocks pushed so far.
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    /// Appends the blocks of `s`, whose references are absolute. An error if the trace would
    /// pass the format's 2^32-2 blocks, dependencies or sends.
    pub fn push(&mut self, s: &Segment) -> io::Result<()> {
        let n = s.len();
        let (b0, d0, s0) = (self.blocks, self.deps, self.sends);
        let (nb, nd, ns) = (
            b0 + n as u64,
            d0 + s.deps.len() as u64,
            s0 + s.sends.len() as u64,
        );
        if nb > MAX_COUNT || nd > MAX_COUNT || ns > MAX_COUNT {
            return Err(io::Error::other(format!(
                "a trace of {nb} blocks, {nd} dependencies and {ns} sends: the trace format holds at most {MAX_COUNT} of each"
            )));
        }
        let opt_col = |v: &[u64]| v.iter().any(|&x| x != NONE_U64);
        if s.iteration.iter().any(|&x| x != NO_ITERATION) {
            self.opt |= OPT_ITERATION;
        }
        if s.priority.iter().any(|&x| x != 0) {
            self.opt |= OPT_PRIORITY;
        }
        if s.flags.iter().any(|&x| x != 0) {
            self.opt |= OPT_FLAGS;
        }
        if opt_col(&s.recorded_start) {
            self.opt |= OPT_START;
        }
        if opt_col(&s.recorded_arrival) {
            self.opt |= OPT_ARRIVAL;
        }
        for (i, c) in COLS.iter().enumerate() {
            self.col_bytes[i] += match &mut self.sink {
                Sink::Plain(files) => write_column(&mut files[i], *c, s, (d0, s0, ns))?,
                Sink::Compressed(z) => {
                    let mut b = z.buffer();
                    let k = write_column(&mut b, *c, s, (d0, s0, ns))?;
                    z.send(i, b)?;
                    k
                }
            };
        }
        (self.blocks, self.deps, self.sends) = (nb, nd, ns);
        Ok(())
    }

    /// Whether column `c` is in the file.
    fn written(&self, c: Col) -> bool {
        let bit = match c {
            Col::Iteration => OPT_ITERATION,
            Col::Priority => OPT_PRIORITY,
            Col::Flags => OPT_FLAGS,
            Col::Start => OPT_START,
            Col::Arrival => OPT_ARRIVAL,
            _ => return true,
        };
        self.opt & bit != 0
    }

    /// Writes every column out: flushes the files, or lets the compressor finish its frames.
    fn flush_columns(&mut self) -> io::Result<()> {
        match &mut self.sink {
            Sink::Plain(files) => files.iter_mut().try_for_each(|f| f.flush()),
            Sink::Compressed(c) => c.join(),
        }
    }

    /// The columnar header (`header`'s metadata, entries, objects and groups; its blocks, if
    /// any, are ignored) and the padding after it.
    fn head(&self, header: &Trace) -> io::Result<Vec<u8>> {
        let mut head = Out { w: Vec::new() };
        head.bytes(MAGIC)?;
        head.bytes(&VERSION.to_le_bytes())?;
        head.meta(header)?;
        head.v(self.blocks)?;
        head.v(self.deps)?;
        head.v(self.sends)?;
        head.u8(self.opt)?;
        head.v(1)?; // repetitions
        head.v(0)?; // carried dependencies
        head.v(0)?; // message-label stride
        head.v(0)?; // iteration-label stride
        head.v(0)?; // varying blocks
        head.u8(0)?; // end anchors
        let at = head.w.len() as u64;
        head.w.resize(pad8(at) as usize, 0);
        Ok(head.w)
    }

    /// The columns in the file, in order, with the zero bytes that follow each.
    fn columns_in_file(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let mut at = 0u64;
        COLS.iter()
            .enumerate()
            .filter(|(_, c)| self.written(**c))
            .map(move |(i, _)| {
                // Columns start 8-aligned (the header is padded), so each one's padding
                // depends on its own length only.
                at += self.col_bytes[i];
                let pad = pad8(at) - at;
                at += pad;
                (i, pad as usize)
            })
    }

    /// Writes the columnar trace: `header`'s metadata, entries, objects and groups (its
    /// blocks, if any, are ignored), then the columns pushed, then the trailer. Plain bytes
    /// whichever way the columns were spilled (compressed ones are decoded on the way).
    pub fn finish(&mut self, header: &Trace, w: &mut dyn Write) -> io::Result<()> {
        self.flush_columns()?;
        w.write_all(&self.head(header)?)?;
        let compressed = self.is_compressed();
        let mut buf = vec![0u8; 1 << 20];
        for (i, pad) in self.columns_in_file().collect::<Vec<_>>() {
            let f = File::open(self.path(i))?;
            let mut r: Box<dyn Read> = if compressed {
                Box::new(crate::compress::decoder(f)?)
            } else {
                Box::new(f)
            };
            loop {
                let k = r.read(&mut buf)?;
                if k == 0 {
                    break;
                }
                w.write_all(&buf[..k])?;
            }
            w.write_all(&[0u8; 8][..pad])?;
        }
        w.write_all(TRAILER)?;
        w.flush()
    }

    /// With compressed columns ([`ColumnSpill::create_compressed`]): writes the trace as
    /// Zstandard frames to `w` (the file itself): the header, each column's frame as
    /// spilled, the padding and the trailer. It decompresses to [`ColumnSpill::finish`]'s
    /// bytes. An error for a plain spill.
    pub fn finish_compressed(&mut self, header: &Trace, w: &mut dyn Write) -> io::Result<()> {
        if !self.is_compressed() {
            return Err(io::Error::other(
                "finish_compressed needs a spill created compressed",
            ));
        }
        self.flush_columns()?;
        let frame = |w: &mut dyn Write, bytes: &[u8]| -> io::Result<()> {
            if bytes.is_empty() {
                return Ok(());
            }
            w.write_all(&zstd::bulk::compress(bytes, crate::compress::LEVEL)?)
        };
        frame(w, &self.head(header)?)?;
        let mut tail = Vec::new();
        for (i, pad) in self.columns_in_file().collect::<Vec<_>>() {
            // The padding before this column goes in a frame of its own.
            frame(w, &tail)?;
            tail.clear();
            io::copy(&mut File::open(self.path(i))?, w)?;
            tail.resize(pad, 0);
        }
        tail.extend_from_slice(TRAILER);
        frame(w, &tail)?;
        w.flush()
    }
}

impl ColumnSpill {
    /// The blocks pushed, back in memory as one segment (absolute references, sends'
    /// labels ignored), and the folder removed.
    pub fn into_segment(mut self) -> io::Result<Segment> {
        self.flush_columns()?;
        let z = self.is_compressed();
        fn col<T: bytemuck::Pod + Default>(z: bool, path: &Path, n: u64) -> io::Result<Vec<T>> {
            let mut v = vec![T::default(); n as usize];
            let mut f = File::open(path)?;
            let buf = bytemuck::cast_slice_mut(&mut v);
            if z {
                crate::compress::decoder(&mut f)?.read_exact(buf)?;
            } else {
                f.read_exact(buf)?;
            }
            Ok(v)
        }
        let (n, d, k) = (self.blocks, self.deps, self.sends);
        let p = |c: Col| self.path(COLS.iter().position(|&x| x == c).expect("a column"));
        let le32 = |v: Vec<u32>| -> Vec<u32> { v.into_iter().map(u32::from_le).collect() };
        let le64 = |v: Vec<u64>| -> Vec<u64> { v.into_iter().map(u64::from_le).collect() };
        let mut s = Segment {
            object: le32(col(z, &p(Col::Object), n)?),
            entry: le32(col(z, &p(Col::Entry), n)?),
            duration_ps: le64(col(z, &p(Col::Duration), n)?),
            trigger: le64(col(z, &p(Col::Trigger), n)?),
            iteration: le32(col(z, &p(Col::Iteration), n)?),
            priority: col::<i32>(z, &p(Col::Priority), n)?
                .into_iter()
                .map(i32::from_le)
                .collect(),
            flags: col(z, &p(Col::Flags), n)?,
            recorded_start: le64(col(z, &p(Col::Start), n)?),
            recorded_arrival: le64(col(z, &p(Col::Arrival), n)?),
            deps_end: le32(col(z, &p(Col::DepsEnd), n)?),
            deps: le32(col(z, &p(Col::Deps), d)?)
                .into_iter()
                .map(u64::from)
                .collect(),
            sends_end: le32(col(z, &p(Col::SendsEnd), n)?),
            sends: Vec::with_capacity(k as usize),
        };
        let offset = le64(col(z, &p(Col::SendOffset), k)?);
        let bytes = le64(col(z, &p(Col::SendBytes), k)?);
        let entry = le32(col(z, &p(Col::SendEntry), k)?);
        let kind: Vec<u8> = col(z, &p(Col::SendKind), k)?;
        let dest = le32(col(z, &p(Col::SendDest), k)?);
        for j in 0..k as usize {
            s.sends.push(Send {
                msg: MsgId(j as u64),
                offset: SimDuration::from_ps(offset[j]),
                // Written by `push` from a destination: a kind 0-3.
                dest: Destination::from_codes(kind[j], dest[j]).unwrap_or(Destination::All),
                bytes: bytes[j],
                entry: EntryId(entry[j]),
            });
        }
        Ok(s)
    }
}

/// Column `i`'s file in spill folder `dir`.
fn column_path(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("col{i:02}"))
}

/// A writer that counts the bytes written through it.
struct Counted<'a, W> {
    w: &'a mut W,
    n: u64,
}

impl<W: Write> Write for Counted<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let k = self.w.write(buf)?;
        self.n += k as u64;
        Ok(k)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }
}

/// Appends column `c` of `s` (absolute references; `d0`, `s0`: dependencies and sends
/// before it, `ns`: sends after it) to `w`; returns the bytes written.
fn write_column(
    w: &mut impl Write,
    c: Col,
    s: &Segment,
    (d0, s0, ns): (u64, u64, u64),
) -> io::Result<u64> {
    let n = s.len();
    let w = &mut Counted { w, n: 0 };
    match c {
        Col::Object => put(w, &s.object, u32::to_le)?,
        Col::Entry => put(w, &s.entry, u32::to_le)?,
        Col::Duration => put(w, &s.duration_ps, u64::to_le)?,
        Col::Trigger => put(w, &s.trigger, u64::to_le)?,
        Col::Iteration => fill(w, &s.iteration, n, NO_ITERATION, u32::to_le)?,
        Col::Priority => fill(w, &s.priority, n, 0, i32::to_le)?,
        Col::Flags => fill(w, &s.flags, n, 0, |x| x)?,
        Col::Start => fill(w, &s.recorded_start, n, NONE_U64, u64::to_le)?,
        Col::Arrival => fill(w, &s.recorded_arrival, n, NONE_U64, u64::to_le)?,
        Col::DepsEnd => put_each(w, s.deps_end.iter(), |&e| (e + d0 as u32).to_le())?,
        Col::Deps => put_each(w, s.deps.iter(), |&d| (d as u32).to_le())?,
        Col::SendsEnd => put_each(w, s.sends_end.iter(), |&e| (e + s0 as u32).to_le())?,
        Col::SendMsg => put_each(w, s0..ns, u64::to_le)?,
        Col::SendOffset => put_each(w, s.sends.iter(), |x| x.offset.as_ps().to_le())?,
        Col::SendBytes => put_each(w, s.sends.iter(), |x| x.bytes.to_le())?,
        Col::SendEntry => put_each(w, s.sends.iter(), |x| x.entry.0.to_le())?,
        Col::SendKind => put_each(w, s.sends.iter(), |x| x.dest.kind_code())?,
        Col::SendDest => put_each(w, s.sends.iter(), |x| x.dest.id_code().to_le())?,
    }
    Ok(w.n)
}

/// Writes an optional column: `v`, or `n` copies of `none` when the batch has no such column.
fn fill<T: bytemuck::Pod>(
    w: &mut impl Write,
    v: &[T],
    n: usize,
    none: T,
    to_le: impl Fn(T) -> T,
) -> io::Result<()> {
    if v.is_empty() {
        put_each(w, 0..n, |_| to_le(none))
    } else {
        put(w, v, to_le)
    }
}

impl Drop for ColumnSpill {
    fn drop(&mut self) {
        // Close the files (the compressor's thread writes until its queue is empty).
        match &mut self.sink {
            Sink::Plain(files) => files.clear(),
            Sink::Compressed(c) => {
                let _ = c.join();
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
        safe_output::track_temporary(&self.dir, false);
    }
}
