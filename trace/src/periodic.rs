//! Traces stored as a sequence of pieces, some of which repeat: what the emulator records
//! when a program's iterations repeat (`whatif emulate`).
//!
//! A [`Periodic`] trace is a header (metadata, entries, objects, groups) and a list of
//! [`Piece`]s. A piece is a [`Segment`] of blocks and a repetition count: a *flat* piece
//! (`reps == 1`) is stored block by block; a *run* stores one copy (the *body*) and stands for
//! `reps` consecutive copies of it. The trace *means* its expansion ([`Periodic::expand`]): the
//! pieces' blocks in order, each run's copies one after the other.
//!
//! Unlike a [`crate::Repeated`] trace, a message may cross from one copy to the next (a
//! message-driven program starts each iteration with messages of the previous one), and the
//! repetition may be preceded and followed by blocks that do not repeat (start-up, the final
//! reduction). In exchange a periodic trace is replayed through its expansion.
//!
//! **References.** A block names its dependencies and its trigger by [`Ref`]: an absolute
//! index in the expansion (a block id, or a send's position among all sends) or, for a run, a
//! place relative to the copy: `(lag, offset)` is the block (or send) at `offset` in the copy
//! `lag` copies back. Copies are counted over the whole trace (a flat piece is one copy), so a
//! run's first copy may refer back into the pieces before it; [`Piece::before`] holds where
//! those copies start.
//!
//! **Labels.** Message labels are implicit: the `s`-th send of the expansion carries label
//! `s`, which is how the emulator numbers its messages; a trigger names the send it consumes.
//! Iteration labels of copy `k` of a run are the body's plus `k * iter_stride`.
//!
//! **Durations** and send offsets may change from copy to copy: [`Piece::var_blocks`] and
//! [`Piece::var_sends`] list the body blocks and sends that do, with one value per copy.
//! Recorded times are kept for flat pieces only.

use crate::binary::{BinaryReader, Out};
use crate::error::{TraceError, ValidationError};
use crate::ids::{BlockId, EntryId, MsgId, ObjectId};
use crate::model::{
    Block, Destination, FLAG_ALL, FLAG_LB_SYNC, FLAG_NETWORK, NO_ITERATION, NONE_U64, Send, Trace,
};
use sim_core::{SimDuration, SimTime};
use std::io::{self, Read, Write};

/// The 8 bytes a periodic trace file starts with.
pub const MAGIC: &[u8; 8] = b"WHATIFTP";
/// The version this build writes and reads.
pub const VERSION: u16 = 1;
const TRAILER: &[u8; 4] = b"WEND";

/// A reference to a block or a send: absolute (`< REL`) or relative ([`rel`]).
pub type Ref = u64;
/// The bit that marks a relative reference.
pub const REL: u64 = 1 << 63;

/// The relative reference to `offset` in the copy `lag` copies back (`lag < 2^31`).
pub fn rel(lag: u32, offset: u32) -> Ref {
    REL | ((lag as u64) << 32) | offset as u64
}

/// `(lag, offset)` of a relative reference, or `None` for an absolute one.
pub fn rel_parts(r: Ref) -> Option<(u32, u32)> {
    (r & REL != 0).then_some((((r & !REL) >> 32) as u32, r as u32))
}

/// Blocks of one piece, one column per field. Every column has one entry per block except
/// the recorded times (empty: none).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Segment {
    /// Object of each block.
    pub object: Vec<u32>,
    /// Entry method of each block.
    pub entry: Vec<u32>,
    /// Duration in picoseconds (a run: of its first copy).
    pub duration_ps: Vec<u64>,
    /// The send that triggers each block, or [`NONE_U64`].
    pub trigger: Vec<Ref>,
    /// Iteration label (a run: of its first copy), or [`NO_ITERATION`].
    pub iteration: Vec<u32>,
    /// Priority.
    pub priority: Vec<i32>,
    /// Flag bits ([`FLAG_LB_SYNC`], [`FLAG_NETWORK`]).
    pub flags: Vec<u8>,
    /// Recorded start in picoseconds or [`NONE_U64`] (flat pieces; empty: none).
    pub recorded_start: Vec<u64>,
    /// Recorded trigger arrival in picoseconds or [`NONE_U64`] (flat pieces; empty: none).
    pub recorded_arrival: Vec<u64>,
    /// Per block, the end of its range in `deps`.
    pub deps_end: Vec<u32>,
    /// Dependencies.
    pub deps: Vec<Ref>,
    /// Per block, the end of its range in `sends`.
    pub sends_end: Vec<u32>,
    /// Sends (their labels are implicit: `msg` is ignored).
    pub sends: Vec<Send>,
}

impl Segment {
    /// Blocks.
    pub fn len(&self) -> usize {
        self.object.len()
    }
    /// True when it has no block.
    pub fn is_empty(&self) -> bool {
        self.object.is_empty()
    }
    /// Block `i`'s range in `deps`.
    pub fn dep_range(&self, i: usize) -> std::ops::Range<usize> {
        let s = if i == 0 { 0 } else { self.deps_end[i - 1] };
        s as usize..self.deps_end[i] as usize
    }
    /// Block `i`'s range in `sends`.
    pub fn send_range(&self, i: usize) -> std::ops::Range<usize> {
        let s = if i == 0 { 0 } else { self.sends_end[i - 1] };
        s as usize..self.sends_end[i] as usize
    }
    /// Drops every block, keeping the allocations.
    pub fn clear(&mut self) {
        self.object.clear();
        self.entry.clear();
        self.duration_ps.clear();
        self.trigger.clear();
        self.iteration.clear();
        self.priority.clear();
        self.flags.clear();
        self.recorded_start.clear();
        self.recorded_arrival.clear();
        self.deps_end.clear();
        self.deps.clear();
        self.sends_end.clear();
        self.sends.clear();
    }
    /// Appends the blocks of `o` (same kind of references).
    pub fn append(&mut self, o: &Segment) {
        let (d0, s0) = (self.deps.len() as u32, self.sends.len() as u32);
        let n = self.len();
        self.object.extend_from_slice(&o.object);
        self.entry.extend_from_slice(&o.entry);
        self.duration_ps.extend_from_slice(&o.duration_ps);
        self.trigger.extend_from_slice(&o.trigger);
        self.iteration.extend_from_slice(&o.iteration);
        self.priority.extend_from_slice(&o.priority);
        self.flags.extend_from_slice(&o.flags);
        let times = |a: &mut Vec<u64>, b: &Vec<u64>| {
            if !a.is_empty() || !b.is_empty() {
                a.resize(n, NONE_U64);
                if b.is_empty() {
                    a.resize(n + o.len(), NONE_U64);
                } else {
                    a.extend_from_slice(b);
                }
            }
        };
        times(&mut self.recorded_start, &o.recorded_start);
        times(&mut self.recorded_arrival, &o.recorded_arrival);
        self.deps_end.extend(o.deps_end.iter().map(|e| e + d0));
        self.deps.extend_from_slice(&o.deps);
        self.sends_end.extend(o.sends_end.iter().map(|e| e + s0));
        self.sends.extend_from_slice(&o.sends);
    }
    /// Bytes its columns hold on the heap.
    pub fn heap_bytes(&self) -> u64 {
        fn v<T>(x: &Vec<T>) -> u64 {
            (x.capacity() * std::mem::size_of::<T>()) as u64
        }
        v(&self.object)
            + v(&self.entry)
            + v(&self.duration_ps)
            + v(&self.trigger)
            + v(&self.iteration)
            + v(&self.priority)
            + v(&self.flags)
            + v(&self.recorded_start)
            + v(&self.recorded_arrival)
            + v(&self.deps_end)
            + v(&self.deps)
            + v(&self.sends_end)
            + v(&self.sends)
    }
}

/// Blocks stored once and repeated `reps` times (see the [module docs](self)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Piece {
    /// The blocks of one copy.
    pub seg: Segment,
    /// Copies (1: a flat piece).
    pub reps: u32,
    /// Iteration labels of copy `k` are the body's plus `k * iter_stride`.
    pub iter_stride: u32,
    /// Body blocks whose duration changes from copy to copy (ascending).
    pub var_blocks: Vec<u32>,
    /// `var_durations[k * var_blocks.len() + v]`: duration of `var_blocks[v]` in copy `k`.
    pub var_durations: Vec<u64>,
    /// Body sends (positions in `seg.sends`) whose offset changes from copy to copy
    /// (ascending).
    pub var_sends: Vec<u32>,
    /// `var_offsets[k * var_sends.len() + v]`: offset of `var_sends[v]` in copy `k`.
    pub var_offsets: Vec<u64>,
    /// Where the copies before this piece start, nearest first: `before[l - 1]` is the
    /// `(block, send)` position in the expansion of the copy `l` copies before this piece's
    /// first (as far back as the piece's relative references reach).
    pub before: Vec<(u64, u64)>,
}

impl Piece {
    /// Blocks this piece stands for.
    pub fn expanded_blocks(&self) -> u64 {
        self.seg.len() as u64 * self.reps as u64
    }
    /// Sends this piece stands for.
    pub fn expanded_sends(&self) -> u64 {
        self.seg.sends.len() as u64 * self.reps as u64
    }
    /// Bytes held on the heap.
    pub fn heap_bytes(&self) -> u64 {
        fn v<T>(x: &Vec<T>) -> u64 {
            (x.capacity() * std::mem::size_of::<T>()) as u64
        }
        self.seg.heap_bytes()
            + v(&self.var_blocks)
            + v(&self.var_durations)
            + v(&self.var_sends)
            + v(&self.var_offsets)
            + v(&self.before)
    }
}

/// A trace of pieces, some repeated. See the [module docs](self).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Periodic {
    /// Metadata, entries, objects and groups (no blocks).
    pub header: Trace,
    /// The pieces, in order.
    pub pieces: Vec<Piece>,
}

impl Periodic {
    /// Blocks of the expansion.
    pub fn num_blocks(&self) -> u64 {
        self.pieces.iter().map(Piece::expanded_blocks).sum()
    }
    /// Blocks stored (one copy per run).
    pub fn stored_blocks(&self) -> u64 {
        self.pieces.iter().map(|p| p.seg.len() as u64).sum()
    }
    /// Whether some piece repeats.
    pub fn has_runs(&self) -> bool {
        self.pieces.iter().any(|p| p.reps > 1)
    }
    /// Bytes held on the heap.
    pub fn heap_bytes(&self) -> u64 {
        self.header.heap_bytes() + self.pieces.iter().map(Piece::heap_bytes).sum::<u64>()
    }

    /// The flat trace this stands for, validated. Costs what the flat trace costs.
    pub fn expand(&self) -> Result<Trace, ValidationError> {
        let mut t = self.header.clone().without_blocks();
        let (blocks, sends) = (
            self.num_blocks(),
            self.pieces.iter().map(Piece::expanded_sends).sum::<u64>(),
        );
        let deps: u64 = self
            .pieces
            .iter()
            .map(|p| p.seg.deps.len() as u64 * p.reps as u64)
            .sum();
        if blocks >= u32::MAX as u64 || sends >= u32::MAX as u64 || deps >= u32::MAX as u64 {
            return Err(ValidationError(format!(
                "{blocks} blocks, {deps} dependencies and {sends} sends: at most {} of each fit",
                u32::MAX - 1
            )));
        }
        t.reserve(blocks as usize, deps as usize, sends as usize);
        let (mut nb, mut ns) = (0u64, 0u64);
        let (mut dbuf, mut sbuf) = (Vec::new(), Vec::new());
        for (pi, p) in self.pieces.iter().enumerate() {
            check_piece(p, pi)?;
            let s = &p.seg;
            let (b, sn) = (s.len() as u64, s.sends.len() as u64);
            let vb = p.var_blocks.len();
            let vs = p.var_sends.len();
            for k in 0..p.reps as u64 {
                let (cb, cs) = (nb + k * b, ns + k * sn);
                // Where the copy `lag` back starts (blocks, sends).
                let start = |lag: u32| -> Option<(u64, u64)> {
                    if (lag as u64) <= k {
                        Some((cb - lag as u64 * b, cs - lag as u64 * sn))
                    } else {
                        p.before.get((lag as u64 - k - 1) as usize).copied()
                    }
                };
                let resolve = |r: Ref, sends: bool, own: u64| -> Result<u64, ValidationError> {
                    let at = match rel_parts(r) {
                        None => r,
                        Some((lag, off)) => {
                            let (sb, ss) = start(lag).ok_or_else(|| {
                                ValidationError(format!(
                                    "piece {pi}: a reference {lag} copies back reaches before the trace"
                                ))
                            })?;
                            (if sends { ss } else { sb }) + off as u64
                        }
                    };
                    if at >= own {
                        return Err(ValidationError(format!(
                            "piece {pi}, copy {k}: a reference to {} {at} at or after {own}",
                            if sends { "send" } else { "block" }
                        )));
                    }
                    Ok(at)
                };
                let mut vi = 0usize;
                let mut si = 0usize;
                for i in 0..s.len() {
                    let g = cb + i as u64;
                    dbuf.clear();
                    for &d in &s.deps[s.dep_range(i)] {
                        dbuf.push(BlockId(resolve(d, false, g)? as u32));
                    }
                    let mut dur = s.duration_ps[i];
                    while vi < vb && (p.var_blocks[vi] as usize) < i {
                        vi += 1;
                    }
                    if vi < vb && p.var_blocks[vi] as usize == i {
                        dur = p.var_durations[k as usize * vb + vi];
                    }
                    sbuf.clear();
                    let range = s.send_range(i);
                    let first_send = cs + range.start as u64;
                    for j in range {
                        let mut send = s.sends[j];
                        send.msg = MsgId(cs + j as u64);
                        while si < vs && (p.var_sends[si] as usize) < j {
                            si += 1;
                        }
                        if si < vs && p.var_sends[si] as usize == j {
                            send.offset = SimDuration::from_ps(p.var_offsets[k as usize * vs + si]);
                        }
                        sbuf.push(send);
                    }
                    let trigger = match s.trigger[i] {
                        NONE_U64 => None,
                        r => Some(MsgId(resolve(r, true, first_send)?)),
                    };
                    let rec = |v: &Vec<u64>| match v.get(i) {
                        Some(&x) if x != NONE_U64 && p.reps == 1 => Some(SimTime::from_ps(x)),
                        _ => None,
                    };
                    let f = s.flags[i];
                    let block = Block {
                        object: ObjectId(s.object[i]),
                        entry: EntryId(s.entry[i]),
                        duration: SimDuration::from_ps(dur),
                        trigger,
                        iteration: match s.iteration[i] {
                            NO_ITERATION => None,
                            l => Some(l.wrapping_add((k as u32).wrapping_mul(p.iter_stride))),
                        },
                        lb_sync: f & FLAG_LB_SYNC != 0,
                        priority: s.priority[i],
                        network: f & FLAG_NETWORK != 0,
                        recorded_start: rec(&s.recorded_start),
                        recorded_arrival: rec(&s.recorded_arrival),
                    };
                    t.push_block(block, &dbuf, &sbuf);
                }
            }
            nb += b * p.reps as u64;
            ns += sn * p.reps as u64;
        }
        t.validate()?;
        Ok(t)
    }

    /// Writes the trace in its file form (magic `WHATIFTP`).
    pub fn write<W: Write>(&self, w: W) -> io::Result<()> {
        let mut pw = PeriodicWriter::new(w, &self.header)?;
        for p in &self.pieces {
            pw.piece(p)?;
        }
        pw.finish().map(|_| ())
    }

    /// Reads a periodic trace of `len` bytes (the whole input). `path` names it in errors.
    /// The pieces are checked when the trace is expanded.
    pub fn read<R: Read>(r: R, len: u64, path: &str) -> Result<Periodic, TraceError> {
        let mut rd = BinaryReader::new(r, path);
        let rd = &mut rd;
        let mut magic = [0u8; 8];
        rd.fill(&mut magic, "the magic bytes \"WHATIFTP\"")?;
        if &magic != MAGIC {
            return rd.fail(
                0,
                "the magic bytes \"WHATIFTP\" (a periodic whatif trace)",
                format!("found {}", crate::describe_bytes(&magic)),
            );
        }
        let mut ver = [0u8; 2];
        rd.fill(&mut ver, "format version")?;
        let version = u16::from_le_bytes(ver);
        if version != VERSION {
            return rd.fail(
                8,
                format!("periodic format version {VERSION}"),
                format!("found version {version} (this build reads version {VERSION})"),
            );
        }
        let (meta, entries, objects, groups) = rd.meta(3)?;
        let mut header = Trace::new(meta);
        header.entries = entries;
        header.objects = objects;
        header.groups = groups;
        let mut pieces = Vec::new();
        loop {
            let at = rd.offset;
            match rd.u8("piece marker (1: a piece, 0: the end)")? {
                0 => break,
                1 => pieces.push(read_piece(rd, len)?),
                x => return rd.fail(at, "piece marker 0 or 1", format!("found {x}")),
            }
        }
        let mut end = [0u8; 4];
        rd.fill(&mut end, "the trailer \"WEND\"")?;
        if &end != TRAILER {
            return rd.fail(
                rd.offset - 4,
                "the trailer \"WEND\"",
                format!("found {}", crate::describe_bytes(&end)),
            );
        }
        Ok(Periodic { header, pieces })
    }
}

/// Checks the shape of a piece (column lengths, ranges, tables) before it is expanded.
fn check_piece(p: &Piece, pi: usize) -> Result<(), ValidationError> {
    let s = &p.seg;
    let n = s.len();
    let bad = |m: &str| Err(ValidationError(format!("piece {pi}: {m}")));
    if p.reps == 0 {
        return bad("no copies");
    }
    if [
        s.entry.len(),
        s.duration_ps.len(),
        s.trigger.len(),
        s.iteration.len(),
    ]
    .iter()
    .chain(&[
        s.priority.len(),
        s.flags.len(),
        s.deps_end.len(),
        s.sends_end.len(),
    ])
    .any(|&l| l != n)
        || (!s.recorded_start.is_empty() && s.recorded_start.len() != n)
        || (!s.recorded_arrival.is_empty() && s.recorded_arrival.len() != n)
    {
        return bad("columns of different lengths");
    }
    let ends_ok = |e: &[u32], total: usize| {
        e.windows(2).all(|w| w[0] <= w[1]) && e.last().map_or(total == 0, |&x| x as usize == total)
    };
    if !ends_ok(&s.deps_end, s.deps.len()) || !ends_ok(&s.sends_end, s.sends.len()) {
        return bad("dependency or send ranges do not cover their lists");
    }
    if s.flags.iter().any(|f| f & !FLAG_ALL != 0) {
        return bad("undefined flag bits");
    }
    let asc = |v: &[u32], max: usize| {
        v.windows(2).all(|w| w[0] < w[1]) && v.last().is_none_or(|&x| (x as usize) < max)
    };
    if !asc(&p.var_blocks, n) || !asc(&p.var_sends, s.sends.len()) {
        return bad("varying blocks or sends out of order or out of range");
    }
    if p.var_durations.len() as u64 != p.var_blocks.len() as u64 * p.reps as u64
        || p.var_offsets.len() as u64 != p.var_sends.len() as u64 * p.reps as u64
    {
        return bad("per-copy tables of the wrong size");
    }
    Ok(())
}

/// Writes a periodic trace piece by piece (so a recorder need not keep the pieces it has
/// written).
pub struct PeriodicWriter<W: Write> {
    out: Out<W>,
    /// Bytes written so far.
    pub bytes: u64,
}

impl<W: Write> std::fmt::Debug for PeriodicWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PeriodicWriter {{ bytes: {} }}", self.bytes)
    }
}

impl<W: Write> PeriodicWriter<W> {
    /// Starts a file with `header`'s metadata, entries, objects and groups.
    pub fn new(w: W, header: &Trace) -> io::Result<Self> {
        let mut head = Out { w: Vec::new() };
        head.bytes(MAGIC)?;
        head.bytes(&VERSION.to_le_bytes())?;
        head.meta(header)?;
        let mut out = Out { w };
        out.bytes(&head.w)?;
        Ok(PeriodicWriter {
            out,
            bytes: head.w.len() as u64,
        })
    }

    /// Appends a piece.
    pub fn piece(&mut self, p: &Piece) -> io::Result<()> {
        let s = &p.seg;
        let mut h = Out { w: Vec::new() };
        h.u8(1)?;
        for v in [
            s.len() as u64,
            s.deps.len() as u64,
            s.sends.len() as u64,
            p.reps as u64,
            p.iter_stride as u64,
            (!s.recorded_start.is_empty()) as u64 | ((!s.recorded_arrival.is_empty()) as u64) << 1,
            p.var_blocks.len() as u64,
            p.var_sends.len() as u64,
            p.before.len() as u64,
        ] {
            h.v(v)?;
        }
        self.out.bytes(&h.w)?;
        self.bytes += h.w.len() as u64;
        let mut buf = Vec::with_capacity(1 << 16);
        macro_rules! col {
            ($it:expr) => {
                for x in $it {
                    buf.extend_from_slice(&x.to_le_bytes());
                    if buf.len() >= 1 << 16 {
                        self.out.bytes(&buf)?;
                        self.bytes += buf.len() as u64;
                        buf.clear();
                    }
                }
            };
        }
        col!(s.object.iter());
        col!(s.entry.iter());
        col!(s.duration_ps.iter());
        col!(s.trigger.iter());
        col!(s.iteration.iter());
        col!(s.priority.iter());
        col!(s.flags.iter());
        col!(s.recorded_start.iter());
        col!(s.recorded_arrival.iter());
        col!(s.deps_end.iter());
        col!(s.deps.iter());
        col!(s.sends_end.iter());
        col!(s.sends.iter().map(|x| x.offset.as_ps()));
        col!(s.sends.iter().map(|x| x.bytes));
        col!(s.sends.iter().map(|x| x.entry.0));
        col!(s.sends.iter().map(|x| x.dest.kind_code()));
        col!(s.sends.iter().map(|x| x.dest.id_code()));
        col!(p.var_blocks.iter());
        col!(p.var_durations.iter());
        col!(p.var_sends.iter());
        col!(p.var_offsets.iter());
        col!(p.before.iter().flat_map(|&(a, b)| [a, b]));
        self.out.bytes(&buf)?;
        self.bytes += buf.len() as u64;
        Ok(())
    }

    /// Ends the file; returns the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.u8(0)?;
        self.out.bytes(TRAILER)?;
        self.bytes += 5;
        self.out.w.flush()?;
        Ok(self.out.w)
    }
}

/// Reads `n` little-endian values of `W` bytes, refusing counts the file cannot hold.
fn raw<R: Read, const W: usize>(
    rd: &mut BinaryReader<R>,
    len: u64,
    n: u64,
    what: &str,
) -> Result<Vec<[u8; W]>, TraceError> {
    let need = n.saturating_mul(W as u64);
    if need > len.saturating_sub(rd.offset) {
        return rd.fail(
            rd.offset,
            format!("{what}: {n} values"),
            format!("found only {} bytes left", len.saturating_sub(rd.offset)),
        );
    }
    let mut bytes = vec![0u8; need as usize];
    rd.fill(&mut bytes, what)?;
    Ok(bytes
        .chunks_exact(W)
        .map(|c| c.try_into().expect("chunk of W bytes"))
        .collect())
}

fn read_piece<R: Read>(rd: &mut BinaryReader<R>, len: u64) -> Result<Piece, TraceError> {
    let mut c = [0u64; 9];
    for (v, what) in c.iter_mut().zip([
        "block count",
        "dependency count",
        "send count",
        "repetitions",
        "iteration stride",
        "recorded-time bits",
        "varying-block count",
        "varying-send count",
        "earlier-copy count",
    ]) {
        *v = rd.v(what)?;
    }
    let [n, nd, ns, reps, stride, times, vb, vs, nbefore] = c;
    let at = rd.offset;
    if reps == 0 || reps > u32::MAX as u64 || stride > u32::MAX as u64 || times > 3 {
        return rd.fail(
            at,
            "a piece of 1 to 2^32-1 copies, a 32-bit stride and recorded-time bits 0-3",
            format!("found {reps} copies, stride {stride}, bits {times}"),
        );
    }
    let u32s = |rd: &mut BinaryReader<R>, n: u64, what: &str| -> Result<Vec<u32>, TraceError> {
        Ok(raw::<R, 4>(rd, len, n, what)?
            .into_iter()
            .map(u32::from_le_bytes)
            .collect())
    };
    let u64s = |rd: &mut BinaryReader<R>, n: u64, what: &str| -> Result<Vec<u64>, TraceError> {
        Ok(raw::<R, 8>(rd, len, n, what)?
            .into_iter()
            .map(u64::from_le_bytes)
            .collect())
    };
    let mut s = Segment {
        object: u32s(rd, n, "object column")?,
        entry: u32s(rd, n, "entry column")?,
        duration_ps: u64s(rd, n, "duration column")?,
        trigger: u64s(rd, n, "trigger column")?,
        iteration: u32s(rd, n, "iteration column")?,
        priority: u32s(rd, n, "priority column")?
            .into_iter()
            .map(|x| x as i32)
            .collect(),
        flags: raw::<R, 1>(rd, len, n, "flag column")?
            .into_iter()
            .map(|x| x[0])
            .collect(),
        ..Default::default()
    };
    if times & 1 != 0 {
        s.recorded_start = u64s(rd, n, "recorded-start column")?;
    }
    if times & 2 != 0 {
        s.recorded_arrival = u64s(rd, n, "recorded-arrival column")?;
    }
    s.deps_end = u32s(rd, n, "dependency-end column")?;
    s.deps = u64s(rd, nd, "dependency column")?;
    s.sends_end = u32s(rd, n, "send-end column")?;
    let off = u64s(rd, ns, "send-offset column")?;
    let bytes = u64s(rd, ns, "send-size column")?;
    let entry = u32s(rd, ns, "send-entry column")?;
    let at = rd.offset;
    let kind: Vec<u8> = raw::<R, 1>(rd, len, ns, "destination-kind column")?
        .into_iter()
        .map(|x| x[0])
        .collect();
    let dest = u32s(rd, ns, "destination column")?;
    s.sends = Vec::with_capacity(ns as usize);
    for i in 0..ns as usize {
        let Some(d) = Destination::from_codes(kind[i], dest[i]) else {
            let x = kind[i];
            return rd.fail(at + i as u64, "destination kind 0-3", format!("found {x}"));
        };
        s.sends.push(Send {
            msg: MsgId(0),
            offset: SimDuration::from_ps(off[i]),
            dest: d,
            bytes: bytes[i],
            entry: EntryId(entry[i]),
        });
    }
    let var_blocks = u32s(rd, vb, "varying-block column")?;
    let var_durations = u64s(rd, vb.saturating_mul(reps), "per-copy duration table")?;
    let var_sends = u32s(rd, vs, "varying-send column")?;
    let var_offsets = u64s(rd, vs.saturating_mul(reps), "per-copy offset table")?;
    let b = u64s(rd, nbefore.saturating_mul(2), "earlier-copy table")?;
    Ok(Piece {
        seg: s,
        reps: reps as u32,
        iter_stride: stride as u32,
        var_blocks,
        var_durations,
        var_sends,
        var_offsets,
        before: b.chunks_exact(2).map(|c| (c[0], c[1])).collect(),
    })
}
