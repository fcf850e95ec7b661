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
    files: Vec<BufWriter<File>>,
    blocks: u64,
    deps: u64,
    sends: u64,
    /// Optional-column bits of the columns some block has a value in.
    opt: u8,
}

fn put<T: bytemuck::Pod>(
    w: &mut BufWriter<File>,
    v: &[T],
    to_le: impl Fn(T) -> T,
) -> io::Result<()> {
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
    w: &mut BufWriter<File>,
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
        std::fs::create_dir(dir)?;
        safe_output::track_temporary(dir, true);
        let mut s = ColumnSpill {
            dir: dir.to_path_buf(),
            files: Vec::with_capacity(COLS.len()),
            blocks: 0,
            deps: 0,
            sends: 0,
            opt: 0,
        };
        for (i, _) in COLS.iter().enumerate() {
            let f = File::create(s.path(i))?;
            s.files.push(BufWriter::with_capacity(1 << 18, f));
        }
        Ok(s)
    }

    fn path(&self, i: usize) -> PathBuf {
        self.dir.join(format!("col{i:02}"))
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
        let f = &mut self.files;
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
            let w = &mut f[i];
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

    /// Writes the columnar trace: `header`'s metadata, entries, objects and groups (its
    /// blocks, if any, are ignored), then the columns pushed, then the trailer.
    pub fn finish(&mut self, header: &Trace, w: &mut dyn Write) -> io::Result<()> {
        for f in &mut self.files {
            f.flush()?;
        }
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
        let mut at = head.w.len() as u64;
        w.write_all(&head.w)?;
        let pad = |w: &mut dyn Write, at: &mut u64| -> io::Result<()> {
            let k = (pad8(*at) - *at) as usize;
            *at += k as u64;
            w.write_all(&[0u8; 8][..k])
        };
        pad(w, &mut at)?;
        let mut buf = vec![0u8; 1 << 20];
        for (i, c) in COLS.iter().enumerate() {
            if !self.written(*c) {
                continue;
            }
            let mut f = File::open(self.path(i))?;
            loop {
                let k = f.read(&mut buf)?;
                if k == 0 {
                    break;
                }
                w.write_all(&buf[..k])?;
                at += k as u64;
            }
            pad(w, &mut at)?;
        }
        w.write_all(TRAILER)?;
        w.flush()
    }
}

impl ColumnSpill {
    /// The blocks pushed, back in memory as one segment (absolute references, sends'
    /// labels ignored), and the folder removed.
    pub fn into_segment(mut self) -> io::Result<Segment> {
        for f in &mut self.files {
            f.flush()?;
        }
        fn col<T: bytemuck::Pod + Default>(path: &Path, n: u64) -> io::Result<Vec<T>> {
            let mut v = vec![T::default(); n as usize];
            File::open(path)?.read_exact(bytemuck::cast_slice_mut(&mut v))?;
            Ok(v)
        }
        let (n, d, k) = (self.blocks, self.deps, self.sends);
        let p = |c: Col| self.path(COLS.iter().position(|&x| x == c).expect("a column"));
        let le32 = |v: Vec<u32>| -> Vec<u32> { v.into_iter().map(u32::from_le).collect() };
        let le64 = |v: Vec<u64>| -> Vec<u64> { v.into_iter().map(u64::from_le).collect() };
        let mut s = Segment {
            object: le32(col(&p(Col::Object), n)?),
            entry: le32(col(&p(Col::Entry), n)?),
            duration_ps: le64(col(&p(Col::Duration), n)?),
            trigger: le64(col(&p(Col::Trigger), n)?),
            iteration: le32(col(&p(Col::Iteration), n)?),
            priority: col::<i32>(&p(Col::Priority), n)?
                .into_iter()
                .map(i32::from_le)
                .collect(),
            flags: col(&p(Col::Flags), n)?,
            recorded_start: le64(col(&p(Col::Start), n)?),
            recorded_arrival: le64(col(&p(Col::Arrival), n)?),
            deps_end: le32(col(&p(Col::DepsEnd), n)?),
            deps: le32(col(&p(Col::Deps), d)?)
                .into_iter()
                .map(u64::from)
                .collect(),
            sends_end: le32(col(&p(Col::SendsEnd), n)?),
            sends: Vec::with_capacity(k as usize),
        };
        let offset = le64(col(&p(Col::SendOffset), k)?);
        let bytes = le64(col(&p(Col::SendBytes), k)?);
        let entry = le32(col(&p(Col::SendEntry), k)?);
        let kind: Vec<u8> = col(&p(Col::SendKind), k)?;
        let dest = le32(col(&p(Col::SendDest), k)?);
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

/// Writes an optional column: `v`, or `n` copies of `none` when the batch has no such column.
fn fill<T: bytemuck::Pod>(
    w: &mut BufWriter<File>,
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
        self.files.clear();
        let _ = std::fs::remove_dir_all(&self.dir);
        safe_output::track_temporary(&self.dir, false);
    }
}
