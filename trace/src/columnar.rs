//! The columnar binary trace format (magic `WHATIFTC`, version 1): the format `whatif` writes.
//!
//! Every per-block and per-send field is one fixed-width little-endian array, so a reader
//! fills each in-memory column with one bulk read (no per-field decoding) and checks the whole
//! trace once. Repeated traces ([`Repeated`]) keep their compact form. The streamable varint
//! format ([`crate::binary`], magic `WHATIFTR`, versions 1-3) is still read and written.
//!
//! ```text
//! offset 0   magic      8 bytes  "WHATIFTC"
//!        8   version    u16      1
//! header     the fields of the varint format's header (name ... groups; see crate::binary),
//!            then varints: n_blocks, n_deps, n_sends, optional-column bits (u8: 1 priority,
//!            2 flags, 4 recorded_start, 8 recorded_arrival, 16 iteration), reps, n_carried, msg_stride,
//!            iter_stride, n_varying, end-anchor flag (u8 0|1)
//!            zero bytes up to a multiple of 8
//! columns    each a raw little-endian array, followed by zero bytes up to a multiple of 8:
//!            object u32[n], entry u32[n], duration_ps u64[n], trigger u64[n] (2^64-1: none),
//!            [iteration u32[n] (2^32-1: none)], [priority i32[n]], [flags u8[n] (1 lb_sync, 2 network)],
//!            [recorded_start u64[n]], [recorded_arrival u64[n]] (2^64-1: none),
//!            deps_end u32[n], deps u32[n_deps], sends_end u32[n],
//!            send_msg u64[s], send_offset_ps u64[s], send_bytes u64[s], send_entry u32[s],
//!            send_dest_kind u8[s] (0 object, 1 group, 2 all, 3 all-except), send_dest u32[s],
//!            [carried_end u32[n], carried_block u32[c], carried_lag u32[c]]  (if n_carried > 0)
//!            [varying u32[v], durations_ps u64[reps * v]]                     (if n_varying > 0)
//!            [end_anchored u8[s]]                                             (if the flag is 1)
//! trailer    4 bytes "WEND", then end of file
//! ```
//!
//! Before allocating anything the reader checks that the file holds exactly the bytes the
//! header announces, so a corrupt count cannot make it allocate more than the file's size.

use crate::binary::{BinaryReader, Out};
use crate::error::TraceError;
use crate::ids::{BlockId, EntryId, MsgId};
use crate::model::{BlockColumns, Destination, Send, Trace, TraceParts};
use crate::repeat::{Carried, Repeated, Varying};
use sim_core::SimDuration;
use std::io::{self, Read, Write};

/// The 8 bytes a columnar trace starts with.
pub const MAGIC: &[u8; 8] = b"WHATIFTC";
/// The version this build writes and reads.
pub const VERSION: u16 = 1;
pub(crate) const TRAILER: &[u8; 4] = b"WEND";
pub(crate) const OPT_PRIORITY: u8 = 1;
pub(crate) const OPT_FLAGS: u8 = 2;
pub(crate) const OPT_START: u8 = 4;
pub(crate) const OPT_ARRIVAL: u8 = 8;
pub(crate) const OPT_ITERATION: u8 = 16;
/// Elements converted per step when sends are encoded or decoded.
const CHUNK: usize = 1 << 14;

/// A fixed-width little-endian column element.
trait Elem: bytemuck::Pod + Default {
    fn to_le(self) -> Self;
}
macro_rules! elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            #[inline]
            fn to_le(self) -> Self {
                <$t>::to_le(self)
            }
        }
    )*};
}
elem!(u8, u32, u64, i32);

pub(crate) fn pad8(n: u64) -> u64 {
    n.div_ceil(8) * 8
}

struct Writer<W: Write> {
    out: Out<W>,
    at: u64,
}

impl<W: Write> Writer<W> {
    fn raw(&mut self, b: &[u8]) -> io::Result<()> {
        self.out.bytes(b)?;
        self.at += b.len() as u64;
        Ok(())
    }
    fn pad(&mut self) -> io::Result<()> {
        let n = (pad8(self.at) - self.at) as usize;
        self.raw(&[0u8; 8][..n])
    }
    /// One column from a slice.
    fn col<T: Elem>(&mut self, v: &[T]) -> io::Result<()> {
        if cfg!(target_endian = "little") {
            self.raw(bytemuck::cast_slice(v))?;
        } else {
            for c in v.chunks(CHUNK) {
                let le: Vec<T> = c.iter().map(|x| x.to_le()).collect();
                self.raw(bytemuck::cast_slice(&le))?;
            }
        }
        self.pad()
    }
    /// One column computed from each element of `items`.
    fn col_of<I, T: Elem>(&mut self, items: &[I], f: impl Fn(&I) -> T) -> io::Result<()> {
        let mut buf: Vec<T> = Vec::with_capacity(CHUNK.min(items.len()));
        for c in items.chunks(CHUNK) {
            buf.clear();
            buf.extend(c.iter().map(|x| f(x).to_le()));
            self.raw(bytemuck::cast_slice(&buf))?;
        }
        self.pad()
    }
}

/// Writes `rep` in the columnar format.
pub fn write_columnar<W: Write>(rep: &Repeated, w: W) -> io::Result<()> {
    write(rep.body(), Some(rep), w)
}

/// Writes a flat trace in the columnar format.
pub fn write_columnar_flat<W: Write>(t: &Trace, w: W) -> io::Result<()> {
    write(t, None, w)
}

fn write<W: Write>(t: &Trace, rep: Option<&Repeated>, w: W) -> io::Result<()> {
    let none = Varying::default();
    let var = rep.map_or(&none, |r| r.varying());
    let carried: &[Carried] = rep.map_or(&[], |r| r.all_carried());
    let c = t.columns();
    let mut w = Writer {
        out: Out { w },
        at: 0,
    };
    // The header goes through a buffer so that its length is known for the padding.
    let mut head = Out { w: Vec::new() };
    head.bytes(MAGIC)?;
    head.bytes(&VERSION.to_le_bytes())?;
    head.meta(t)?;
    head.v(t.num_blocks() as u64)?;
    head.v(t.all_deps().len() as u64)?;
    head.v(t.num_sends() as u64)?;
    let mut opt = 0u8;
    for (col, bit) in [
        (c.priority.is_empty(), OPT_PRIORITY),
        (c.flags.is_empty(), OPT_FLAGS),
        (c.recorded_start.is_empty(), OPT_START),
        (c.recorded_arrival.is_empty(), OPT_ARRIVAL),
        (c.iteration.is_empty(), OPT_ITERATION),
    ] {
        if !col {
            opt |= bit;
        }
    }
    head.u8(opt)?;
    head.v(rep.map_or(1, |r| r.reps()) as u64)?;
    head.v(carried.len() as u64)?;
    head.v(rep.map_or(0, |r| r.msg_stride()))?;
    head.v(rep.map_or(0, |r| r.iter_stride()) as u64)?;
    head.v(var.blocks.len() as u64)?;
    head.u8(!var.end_anchored.is_empty() as u8)?;
    w.raw(&head.w)?;
    w.pad()?;

    w.col(&c.object)?;
    w.col(&c.entry)?;
    w.col(&c.duration_ps)?;
    w.col(&c.trigger)?;
    if opt & OPT_ITERATION != 0 {
        w.col(&c.iteration)?;
    }
    if opt & OPT_PRIORITY != 0 {
        w.col(&c.priority)?;
    }
    if opt & OPT_FLAGS != 0 {
        w.col(&c.flags)?;
    }
    if opt & OPT_START != 0 {
        w.col(&c.recorded_start)?;
    }
    if opt & OPT_ARRIVAL != 0 {
        w.col(&c.recorded_arrival)?;
    }
    w.col(t.deps_ends())?;
    w.col_of(t.all_deps(), |d| d.0)?;
    w.col(t.sends_ends())?;
    let sends = t.all_sends();
    w.col_of(sends, |s| s.msg.0)?;
    w.col_of(sends, |s| s.offset.as_ps())?;
    w.col_of(sends, |s| s.bytes)?;
    w.col_of(sends, |s| s.entry.0)?;
    w.col_of(sends, |s| s.dest.kind_code())?;
    w.col_of(sends, |s| s.dest.id_code())?;
    if let Some(r) = rep.filter(|_| !carried.is_empty()) {
        w.col(r.carried_ends())?;
        w.col_of(carried, |c| c.block.0)?;
        w.col_of(carried, |c| c.lag)?;
    }
    if !var.blocks.is_empty() {
        w.col(&var.blocks)?;
        w.col(&var.durations_ps)?;
    }
    if !var.end_anchored.is_empty() {
        w.col(&var.end_anchored)?;
    }
    w.raw(TRAILER)?;
    w.out.w.flush()
}

/// Reads a columnar trace of `len` bytes (the whole input) and validates it. `path` names the
/// source in errors.
pub fn read_columnar<R: Read>(r: R, len: u64, path: &str) -> Result<Repeated, TraceError> {
    read_columnar_with(r, len, path, &mut sim_core::NoProgress)
}

/// [`read_columnar`], reporting the bytes read to `progress`.
pub fn read_columnar_with<R: Read>(
    r: R,
    len: u64,
    path: &str,
    progress: &mut dyn sim_core::Progress,
) -> Result<Repeated, TraceError> {
    progress.stage("load", len, "bytes");
    let mut rd = BinaryReader::new(r, path);
    let rd = &mut rd;
    let mut magic = [0u8; 8];
    rd.fill(&mut magic, "the magic bytes \"WHATIFTC\"")?;
    if &magic != MAGIC {
        return rd.fail(
            0,
            "the magic bytes \"WHATIFTC\" (a columnar whatif trace)",
            format!("found {}", crate::describe_bytes(&magic)),
        );
    }
    let mut ver = [0u8; 2];
    rd.fill(&mut ver, "format version")?;
    let version = u16::from_le_bytes(ver);
    if version != VERSION {
        return rd.fail(
            8,
            format!("columnar format version {VERSION}"),
            format!("found version {version} (this build reads version {VERSION})"),
        );
    }
    let (meta, entries, objects, groups) = rd.meta(3)?;
    let count = |rd: &mut BinaryReader<R>, what: &str, max: u64| -> Result<u64, TraceError> {
        let at = rd.offset;
        let v = rd.v(what)?;
        if v > max {
            return rd.fail(at, format!("{what} of at most {max}"), format!("found {v}"));
        }
        Ok(v)
    };
    let lim = u32::MAX as u64 - 1;
    let n = count(rd, "block count", lim)? as usize;
    let n_deps = count(rd, "dependency count", lim)? as usize;
    let n_sends = count(rd, "send count", lim)? as usize;
    let at = rd.offset;
    let opt = rd.u8("optional-column bits")?;
    if opt & !31 != 0 {
        return rd.fail(
            at,
            "optional-column bits 0-4 only",
            format!("found {opt:#04x}"),
        );
    }
    let reps = count(rd, "repetition count", crate::repeat::MAX_REPS as u64)? as u32;
    let n_carried = count(rd, "carried-dependency count", lim)? as usize;
    let msg_stride = rd.v("message-label stride")?;
    let iter_stride = count(rd, "iteration-label stride", u32::MAX as u64)? as u32;
    let n_varying = count(rd, "varying-block count", lim)? as usize;
    let anchored = rd.flag("end-anchor flag")?;
    let header_end = pad8(rd.offset);

    // Every column's size, from the counts: the file must hold exactly that.
    let (n64, d64, s64, c64, v64) = (
        n as u64,
        n_deps as u64,
        n_sends as u64,
        n_carried as u64,
        n_varying as u64,
    );
    let opt_bytes = [
        (OPT_ITERATION, 4),
        (OPT_PRIORITY, 4),
        (OPT_FLAGS, 1),
        (OPT_START, 8),
        (OPT_ARRIVAL, 8),
    ]
    .iter()
    .filter(|(bit, _)| opt & bit != 0)
    .map(|(_, w)| pad8(n64 * w))
    .sum::<u64>();
    let mut expect = pad8(n64 * 4) * 2 + pad8(n64 * 8) * 2 + opt_bytes;
    expect += pad8(n64 * 4) + pad8(d64 * 4) + pad8(n64 * 4);
    expect += pad8(s64 * 8) * 3 + pad8(s64 * 4) * 2 + pad8(s64);
    if n_carried > 0 {
        expect += pad8(n64 * 4) + pad8(c64 * 4) * 2;
    }
    if n_varying > 0 {
        let table = (reps as u64)
            .checked_mul(v64 * 8)
            .ok_or_else(|| TraceError::Binary {
                path: path.to_string(),
                offset: header_end,
                expected: "a duration table that fits in a file".into(),
                found: format!("{reps} repetitions of {n_varying} blocks"),
            })?;
        expect += pad8(v64 * 4) + pad8(table);
    }
    if anchored {
        expect += pad8(s64);
    }
    expect += TRAILER.len() as u64;
    let have = len.saturating_sub(header_end);
    if have != expect {
        return rd.fail(
            header_end,
            format!(
                "{expect} bytes of columns and trailer for {n} blocks, {n_deps} dependencies and {n_sends} sends"
            ),
            format!("found {have} bytes (the file is cut, or a count is corrupt)"),
        );
    }
    let skip = (header_end - rd.offset) as usize;
    rd.fill(&mut [0u8; 8][..skip], "header padding")?;

    let mut cols = BlockColumns {
        object: col(rd, progress, n, "object column")?,
        entry: col(rd, progress, n, "entry column")?,
        duration_ps: col(rd, progress, n, "duration column")?,
        trigger: col(rd, progress, n, "trigger column")?,
        ..BlockColumns::default()
    };
    if opt & OPT_ITERATION != 0 {
        cols.iteration = col(rd, progress, n, "iteration column")?;
    }
    if opt & OPT_PRIORITY != 0 {
        cols.priority = col(rd, progress, n, "priority column")?;
    }
    if opt & OPT_FLAGS != 0 {
        cols.flags = col(rd, progress, n, "flags column")?;
        if let Some(p) = cols.flags.iter().position(|&f| f & !crate::FLAG_ALL != 0) {
            return rd.fail(
                rd.offset,
                "block flags 0 to 3 (bit 0 lb_sync, bit 1 network)",
                format!("found {} for block{p}", cols.flags[p]),
            );
        }
    }
    if opt & OPT_START != 0 {
        cols.recorded_start = col(rd, progress, n, "recorded-start column")?;
    }
    if opt & OPT_ARRIVAL != 0 {
        cols.recorded_arrival = col(rd, progress, n, "recorded-arrival column")?;
    }
    let deps_end: Vec<u32> = col(rd, progress, n, "dependency-end column")?;
    let deps: Vec<u32> = col(rd, progress, n_deps, "dependency column")?;
    let deps: Vec<BlockId> = deps.into_iter().map(BlockId).collect();
    let sends_end: Vec<u32> = col(rd, progress, n, "send-end column")?;
    let sends = read_sends(rd, progress, n_sends)?;
    let mut carried_end = Vec::new();
    let mut carried = Vec::new();
    if n_carried > 0 {
        carried_end = col(rd, progress, n, "carried-end column")?;
        let blocks: Vec<u32> = col(rd, progress, n_carried, "carried-block column")?;
        let lags: Vec<u32> = col(rd, progress, n_carried, "carried-lag column")?;
        carried = blocks
            .iter()
            .zip(&lags)
            .map(|(&b, &lag)| Carried {
                block: BlockId(b),
                lag,
            })
            .collect();
    }
    let mut varying = Varying::default();
    if n_varying > 0 {
        varying.blocks = col(rd, progress, n_varying, "varying-block column")?;
        varying.durations_ps = col(rd, progress, reps as usize * n_varying, "duration table")?;
    }
    if anchored {
        varying.end_anchored = col(rd, progress, n_sends, "end-anchor column")?;
    }
    let at = rd.offset;
    let mut t = [0u8; 4];
    rd.fill(&mut t, "the trailer \"WEND\"")?;
    if &t != TRAILER {
        return rd.fail(
            at,
            "the trailer \"WEND\" after the last column",
            format!("found {t:?}"),
        );
    }
    let invalid = |source| TraceError::Invalid {
        path: path.to_string(),
        source,
    };
    let body = Trace::from_parts(TraceParts {
        meta,
        entries,
        objects,
        groups,
        cols,
        deps_end,
        deps,
        sends_end,
        sends,
    })
    .map_err(invalid)?;
    if reps == 1 && n_carried == 0 && n_varying == 0 && !anchored {
        return Ok(Repeated::flat(body));
    }
    Repeated::new(
        body,
        reps,
        carried_end,
        carried,
        msg_stride,
        iter_stride,
        varying,
    )
    .map_err(invalid)
}

/// Reads one column of `n` elements (and its padding) straight into its vector.
fn col<R: Read, T: Elem>(
    rd: &mut BinaryReader<R>,
    progress: &mut dyn sim_core::Progress,
    n: usize,
    what: &str,
) -> Result<Vec<T>, TraceError> {
    let mut v = vec![T::default(); n];
    // In pieces of 64 MiB, to report progress on large columns.
    for piece in bytemuck::cast_slice_mut::<T, u8>(&mut v).chunks_mut(64 << 20) {
        rd.fill(piece, what)?;
        progress.advance_to(rd.offset);
    }
    if cfg!(target_endian = "big") {
        for x in &mut v {
            *x = x.to_le();
        }
    }
    skip_pad(rd, what)?;
    Ok(v)
}

fn skip_pad<R: Read>(rd: &mut BinaryReader<R>, what: &str) -> Result<(), TraceError> {
    let k = (pad8(rd.offset) - rd.offset) as usize;
    rd.fill(&mut [0u8; 8][..k], what)
}

/// Reads the six send columns into `Send` records, a chunk at a time.
fn read_sends<R: Read>(
    rd: &mut BinaryReader<R>,
    progress: &mut dyn sim_core::Progress,
    n: usize,
) -> Result<Vec<Send>, TraceError> {
    let blank = Send {
        msg: MsgId(0),
        offset: SimDuration::ZERO,
        dest: Destination::All,
        bytes: 0,
        entry: EntryId(0),
    };
    let mut sends = vec![blank; n];
    column_into(
        rd,
        progress,
        &mut sends,
        "send-label column",
        |s, x: u64| s.msg = MsgId(x),
    )?;
    column_into(
        rd,
        progress,
        &mut sends,
        "send-offset column",
        |s, x: u64| s.offset = SimDuration::from_ps(x),
    )?;
    column_into(rd, progress, &mut sends, "send-size column", |s, x: u64| {
        s.bytes = x
    })?;
    column_into(
        rd,
        progress,
        &mut sends,
        "send-entry column",
        |s, x: u32| s.entry = EntryId(x),
    )?;
    let kind_at = rd.offset;
    let mut kinds: Vec<u8> = col(rd, progress, n, "destination-kind column")?;
    if let Some(p) = kinds.iter().position(|&k| k > 3) {
        return rd.fail(
            kind_at + p as u64,
            "a destination kind 0-3",
            format!("found {}", kinds[p]),
        );
    }
    let mut i = 0;
    column_into(
        rd,
        progress,
        &mut sends,
        "destination column",
        |s, x: u32| {
            // Kinds were checked to be 0-3 above.
            s.dest = Destination::from_codes(kinds[i], x).unwrap_or(Destination::All);
            i += 1;
        },
    )?;
    kinds.clear();
    Ok(sends)
}

/// Reads a column of `sends.len()` elements in chunks, handing each to `set`.
fn column_into<R: Read, T: Elem>(
    rd: &mut BinaryReader<R>,
    progress: &mut dyn sim_core::Progress,
    sends: &mut [Send],
    what: &str,
    mut set: impl FnMut(&mut Send, T),
) -> Result<(), TraceError> {
    let mut buf = vec![T::default(); CHUNK.min(sends.len())];
    for c in sends.chunks_mut(CHUNK) {
        let b = &mut buf[..c.len()];
        rd.fill(bytemuck::cast_slice_mut(b), what)?;
        for (s, &x) in c.iter_mut().zip(b.iter()) {
            set(s, x.to_le());
        }
    }
    progress.advance_to(rd.offset);
    skip_pad(rd, what)
}
