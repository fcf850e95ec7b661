//! The recorder: collects the emulated blocks and, when asked, finds where iterations repeat.
//!
//! Blocks arrive in the order they start (the emulated schedule), which is the order of the
//! trace. With detection on, the stream is cut into *segments*: a segment starts at the first
//! block whose iteration label exceeds every label seen before (the blocks before the first
//! label form segment 0). Each segment is kept with *relative* references (a dependency or a
//! trigger is `(lag, offset)`: the block or send at `offset` in the segment `lag` segments
//! back), so two segments that do the same thing compare equal field by field whatever their
//! place in the run. When a segment ends it is compared with the previous one: same blocks in
//! the same order (object, entry, priority, flags, iteration label relative to the segment's
//! first label), same references, same sends (destination, size, entry method); durations
//! and send offsets may differ (they become per-copy tables). Equal segments start or extend
//! a run; a segment that differs ends the run and becomes the candidate for the next one;
//! segments that never match are kept as flat pieces with absolute references. So at most
//! the flat pieces, one run's body and two segments are held: when iterations repeat, the
//! recorder holds about two iterations, not the whole run.
//!
//! The result is a [`trace::Periodic`] when some segment repeated, else the flat trace; both
//! expand to the same blocks in the same order (a periodic trace keeps recorded times for its
//! flat pieces only).
//!
//! **Spilling** (with a [`SpillPlan`]): blocks that do not repeat need not stay in memory.
//! * While nothing has repeated, the flat blocks are a prefix of the trace: once they reach
//!   `batch_blocks` they are appended to a [`ColumnSpill`] on disk. If a run starts later, the
//!   spilled prefix is read back as the run's first flat piece (a periodic trace is built in
//!   memory).
//! * If the recorder holds `detect_blocks` blocks while nothing has repeated (iterations too
//!   large to hold two of, or none repeating), detection stops: everything recorded is made
//!   absolute and spilled, and the rest of the run is recorded flat, a batch at a time. It
//!   stops as soon as the segment being recorded (an iteration's) passes half of
//!   `detect_blocks`: a run of such segments needs two held, more than the cap, so nothing
//!   is lost by stopping there, and half as much is held (at a million objects, 2 M blocks
//!   of an iteration's 6.2 M instead of 4 M).
//! * Without detection, the blocks are spilled a batch at a time from the start.
//!
//! A spilled recording ends as [`Recorded::Spilled`]: the trace's header and its blocks on
//! disk, written out by [`ColumnSpill::finish`] with the bytes the in-memory trace would have.

use crate::EmuError;
use sim_core::SimTime;
use std::path::PathBuf;
use trace::periodic::{Piece, Ref, Segment, rel, rel_parts};
use trace::spill::ColumnSpill;
use trace::{
    Block, BlockId, FLAG_LB_SYNC, FLAG_NETWORK, MsgId, NO_ITERATION, NONE_U64, Periodic, Send,
    Trace, TraceParts, ValidationError,
};

const NIL: u32 = u32::MAX;

/// A run being extended: its body (the first copy, relative references) and per-copy values.
#[derive(Debug)]
struct Run {
    body: Segment,
    /// Segment index of the first copy.
    first: usize,
    reps: u32,
    /// Label base of the first copy (the body's labels) and of the last, and the stride
    /// between copies.
    base0: u32,
    base: u32,
    stride: u32,
    /// Per body block: its column in `durs`, or `NIL`.
    dur_of: Vec<u32>,
    /// (body block, its duration in every copy so far).
    durs: Vec<(u32, Vec<u64>)>,
    off_of: Vec<u32>,
    offs: Vec<(u32, Vec<u64>)>,
}

/// Adds one copy's values `(value, body's value)` to per-copy columns: a position whose value
/// differs from the body's for the first time gets a column (the body's value for the `reps`
/// copies so far); positions with a column get the value.
fn track(
    of: &mut [u32],
    cols: &mut Vec<(u32, Vec<u64>)>,
    reps: usize,
    values: impl Iterator<Item = (u64, u64)>,
) {
    for (i, (x, b)) in values.enumerate() {
        match of[i] {
            NIL if x == b => {}
            NIL => {
                of[i] = cols.len() as u32;
                let mut col = vec![b; reps];
                col.push(x);
                cols.push((i as u32, col));
            }
            c => cols[c as usize].1.push(x),
        }
    }
}

/// Whether `a` (label base `ab`) and `b` (base `bb`) record the same blocks, durations and
/// send offsets aside.
fn same_shape(a: &Segment, ab: u32, b: &Segment, bb: u32) -> bool {
    a.len() == b.len()
        && a.object == b.object
        && a.entry == b.entry
        && a.trigger == b.trigger
        && a.priority == b.priority
        && a.flags == b.flags
        && a.deps_end == b.deps_end
        && a.deps == b.deps
        && a.sends_end == b.sends_end
        && a.iteration.iter().zip(&b.iteration).all(|(&x, &y)| {
            if x == NO_ITERATION || y == NO_ITERATION {
                x == y
            } else {
                x.wrapping_sub(ab) == y.wrapping_sub(bb)
            }
        })
        && a.sends.len() == b.sends.len()
        && a.sends
            .iter()
            .zip(&b.sends)
            .all(|(x, y)| x.dest == y.dest && x.bytes == y.bytes && x.entry == y.entry)
}

impl Run {
    fn new(body: Segment, base0: u32, first: usize, second: &Segment, base1: u32) -> Run {
        let n = body.len();
        let mut r = Run {
            dur_of: vec![NIL; n],
            off_of: vec![NIL; body.sends.len()],
            body,
            first,
            reps: 1,
            base0,
            base: base0,
            stride: base1.wrapping_sub(base0),
            durs: Vec::new(),
            offs: Vec::new(),
        };
        r.add(second, base1);
        r
    }

    fn matches(&self, s: &Segment, base: u32) -> bool {
        base.wrapping_sub(self.base) == self.stride && same_shape(&self.body, self.base0, s, base)
    }

    /// Adds copy `s` (it matches).
    fn add(&mut self, s: &Segment, base: u32) {
        let reps = self.reps as usize;
        let (body_d, body_s) = (&self.body.duration_ps, &self.body.sends);
        let durs = s.duration_ps.iter().copied().zip(body_d.iter().copied());
        track(&mut self.dur_of, &mut self.durs, reps, durs);
        let offs = (s.sends.iter().zip(body_s)).map(|(x, b)| (x.offset.as_ps(), b.offset.as_ps()));
        track(&mut self.off_of, &mut self.offs, reps, offs);
        self.reps += 1;
        self.base = base;
    }

    /// The run as a piece; `starts` are the segments' `(block, send)` starts.
    fn into_piece(mut self, starts: &[(u64, u64)]) -> Piece {
        let table = |mut cols: Vec<(u32, Vec<u64>)>, reps: usize| -> (Vec<u32>, Vec<u64>) {
            cols.sort_unstable_by_key(|c| c.0);
            let pos: Vec<u32> = cols.iter().map(|c| c.0).collect();
            let mut t = Vec::with_capacity(reps * cols.len());
            for k in 0..reps {
                t.extend(cols.iter().map(|c| c.1[k]));
            }
            (pos, t)
        };
        let reps = self.reps as usize;
        let (var_blocks, var_durations) = table(std::mem::take(&mut self.durs), reps);
        let (var_sends, var_offsets) = table(std::mem::take(&mut self.offs), reps);
        let max_lag = self
            .body
            .deps
            .iter()
            .chain(&self.body.trigger)
            .filter_map(|&r| if r == NONE_U64 { None } else { rel_parts(r) })
            .map(|(lag, _)| lag as usize)
            .max()
            .unwrap_or(0);
        let before = (1..=max_lag.min(self.first))
            .map(|l| starts[self.first - l])
            .collect();
        self.body.recorded_start.clear();
        self.body.recorded_arrival.clear();
        Piece {
            seg: self.body,
            reps: self.reps,
            iter_stride: self.stride,
            var_blocks,
            var_durations,
            var_sends,
            var_offsets,
            before,
        }
    }
}

/// When and where blocks that do not repeat leave memory; see the [module docs](self).
#[derive(Clone, Debug)]
pub struct SpillPlan {
    /// The folder to write them to (created when first needed, removed with the spill).
    pub dir: PathBuf,
    /// Flat blocks spilled at a time.
    pub batch_blocks: u64,
    /// Blocks held without a repeat after which detection stops.
    pub detect_blocks: u64,
    /// Compress the columns as they are spilled ([`ColumnSpill::create_compressed`]: for an
    /// output that is compressed anyway).
    pub compress: bool,
}

/// Collects blocks; see the [module docs](self).
#[derive(Debug)]
pub(crate) struct Recorder {
    detect: bool,
    plan: Option<SpillPlan>,
    spill: Option<ColumnSpill>,
    /// The most blocks held, sampled before each spill (held blocks only grow between them),
    /// with a batch more for the vectors' capacity.
    pub peak_held: u64,
    header: Trace,
    /// Blocks and sends recorded so far (the next block's id and the next send's label).
    pub nb: u64,
    pub ns: u64,
    /// `(block, send)` where each segment starts.
    starts: Vec<(u64, u64)>,
    max_label: Option<u32>,
    cur: Segment,
    cur_base: u32,
    /// The last segment, not yet placed: (blocks, label base, segment index).
    prev: Option<(Segment, u32, usize)>,
    run: Option<Run>,
    /// Flat blocks not yet in a piece (absolute references).
    flat: Segment,
    pieces: Vec<Piece>,
    spare: Segment,
}

impl Recorder {
    pub(crate) fn new(header: Trace, detect: bool, plan: Option<SpillPlan>) -> Recorder {
        Recorder {
            detect,
            plan,
            spill: None,
            peak_held: 0,
            header,
            nb: 0,
            ns: 0,
            starts: vec![(0, 0)],
            max_label: None,
            cur: Segment::default(),
            cur_base: 0,
            prev: None,
            run: None,
            flat: Segment::default(),
            pieces: Vec::new(),
            spare: Segment::default(),
        }
    }

    /// Blocks held in memory (flat pieces, a run's body, the segments being compared).
    pub(crate) fn held_blocks(&self) -> u64 {
        (self.flat.len()
            + self.cur.len()
            + self.prev.as_ref().map_or(0, |p| p.0.len())
            + self.run.as_ref().map_or(0, |r| r.body.len())
            + self.pieces.iter().map(|p| p.seg.len()).sum::<usize>()) as u64
    }

    /// The reference to global block (`sends`: send) `x` from the current segment.
    fn reference(&self, x: u64, sends: bool) -> Ref {
        if !self.detect {
            return x;
        }
        let j = self
            .starts
            .partition_point(|s| if sends { s.1 <= x } else { s.0 <= x })
            - 1;
        let start = if sends {
            self.starts[j].1
        } else {
            self.starts[j].0
        };
        rel((self.starts.len() - 1 - j) as u32, (x - start) as u32)
    }

    /// Records the next block: `deps` are global block ids, `trigger` the global label of the
    /// send that triggers it; the sends' labels must be the next ones in order.
    pub(crate) fn push(
        &mut self,
        b: &Block,
        deps: &[BlockId],
        sends: &[Send],
    ) -> Result<(), EmuError> {
        if self.detect
            && let Some(l) = b.iteration
            && self.max_label.is_none_or(|m| l > m)
        {
            if !self.cur.is_empty() {
                self.end_segment()?;
                self.starts.push((self.nb, self.ns));
            }
            self.cur_base = l;
            self.max_label = Some(l);
        }
        let trigger = b.trigger.map_or(NONE_U64, |m| self.reference(m.0, true));
        for d in deps {
            let r = self.reference(d.0 as u64, false);
            self.cur.deps.push(r);
        }
        let s = &mut self.cur;
        s.object.push(b.object.0);
        s.entry.push(b.entry.0);
        s.duration_ps.push(b.duration.as_ps());
        s.trigger.push(trigger);
        s.iteration.push(b.iteration.unwrap_or(NO_ITERATION));
        s.priority.push(b.priority);
        s.flags.push(
            if b.lb_sync { FLAG_LB_SYNC } else { 0 } | if b.network { FLAG_NETWORK } else { 0 },
        );
        s.recorded_start
            .push(b.recorded_start.map_or(NONE_U64, SimTime::as_ps));
        s.recorded_arrival
            .push(b.recorded_arrival.map_or(NONE_U64, SimTime::as_ps));
        s.deps_end.push(s.deps.len() as u32);
        debug_assert!(
            sends
                .iter()
                .enumerate()
                .all(|(j, x)| x.msg.0 == self.ns + j as u64)
        );
        s.sends.extend_from_slice(sends);
        s.sends_end.push(s.sends.len() as u32);
        self.nb += 1;
        self.ns += sends.len() as u64;
        if let Some(plan) = &self.plan {
            if !self.detect {
                if self.cur.len() as u64 >= plan.batch_blocks {
                    // The batch's vectors are reused for the next one.
                    let mut cur = std::mem::take(&mut self.cur);
                    self.spill_out(&cur)?;
                    cur.clear();
                    self.cur = cur;
                }
            } else if self.run.is_none()
                && self.pieces.is_empty()
                && (self.held_blocks() >= plan.detect_blocks
                    || (self.max_label.is_some() && self.cur.len() as u64 > plan.detect_blocks / 2))
            {
                self.stop_detecting()?;
            }
        }
        Ok(())
    }

    /// Appends flat blocks with absolute references (the next ones of the trace) to the spill.
    fn spill_out(&mut self, s: &Segment) -> Result<(), EmuError> {
        let plan = self.plan.as_ref().expect("spilling needs a plan");
        // What is held, and a batch more: the capacity the recorder's vectors keep between
        // spills (a batch grows by doubling; the segments compared keep theirs). Measured on
        // stencil3d: without it the estimate fell to 0.7 of the peak.
        let held = self.held_blocks() + s.len() as u64 + plan.batch_blocks;
        self.peak_held = self.peak_held.max(held);
        let io = |source| EmuError::Spill {
            path: plan.dir.clone(),
            source,
        };
        if self.spill.is_none() {
            let sp = if plan.compress {
                ColumnSpill::create_compressed(&plan.dir)
            } else {
                ColumnSpill::create(&plan.dir)
            };
            self.spill = Some(sp.map_err(io)?);
        }
        let sp = self.spill.as_mut().expect("created above");
        sp.push(s).map_err(io)
    }

    /// Nothing repeated and the recorder holds too much: everything recorded so far (a flat
    /// prefix) goes to the spill, and the rest of the run is recorded flat.
    /// Each part goes out where it is (no copy into the flat blocks), and the spare segment
    /// is freed: nothing of the detection stays in memory.
    fn stop_detecting(&mut self) -> Result<(), EmuError> {
        let flat = std::mem::take(&mut self.flat);
        if !flat.is_empty() {
            self.spill_out(&flat)?;
        }
        drop(flat);
        if let Some((mut p, _, pidx)) = self.prev.take() {
            self.make_absolute(&mut p, pidx);
            self.spill_out(&p)?;
        }
        let idx = self.starts.len() - 1;
        let mut cur = std::mem::take(&mut self.cur);
        self.make_absolute(&mut cur, idx);
        self.spill_out(&cur)?;
        self.spare = Segment::default();
        self.detect = false;
        Ok(())
    }

    /// The current segment has ended: extend the run, start one, or keep it flat.
    fn end_segment(&mut self) -> Result<(), EmuError> {
        let idx = self.starts.len() - 1;
        let base = self.cur_base;
        let cur = std::mem::replace(&mut self.cur, std::mem::take(&mut self.spare));
        if let Some(run) = &mut self.run {
            if run.matches(&cur, base) {
                run.add(&cur, base);
                self.recycle(cur);
                return Ok(());
            }
            self.close_run();
            self.prev = Some((cur, base, idx));
            return Ok(());
        }
        if let Some((p, pbase, pidx)) = self.prev.take() {
            let stride = base.wrapping_sub(pbase);
            if stride > 0 && stride < u32::MAX / 2 && same_shape(&p, pbase, &cur, base) {
                self.close_flat()?;
                let run = Run::new(p, pbase, pidx, &cur, base);
                self.run = Some(run);
                self.recycle(cur);
                return Ok(());
            }
            self.commit_flat(p, pidx)?;
        }
        self.prev = Some((cur, base, idx));
        Ok(())
    }

    fn recycle(&mut self, mut s: Segment) {
        s.clear();
        self.spare = s;
    }

    fn close_run(&mut self) {
        if let Some(run) = self.run.take() {
            self.pieces.push(run.into_piece(&self.starts));
        }
    }

    /// The flat blocks so far become a piece (the spilled prefix read back before them).
    fn close_flat(&mut self) -> Result<(), EmuError> {
        let seg = match self.spill.take() {
            Some(sp) => {
                let dir = self
                    .plan
                    .as_ref()
                    .map(|p| p.dir.clone())
                    .unwrap_or_default();
                let mut s = sp
                    .into_segment()
                    .map_err(|source| EmuError::Spill { path: dir, source })?;
                s.append(&self.flat);
                self.flat.clear();
                s
            }
            None => std::mem::take(&mut self.flat),
        };
        if !seg.is_empty() {
            self.pieces.push(Piece {
                seg,
                reps: 1,
                ..Default::default()
            });
        }
        Ok(())
    }

    /// Makes the references of segment `idx` absolute.
    fn make_absolute(&self, s: &mut Segment, idx: usize) {
        let abs = |r: Ref, sends: bool| -> Ref {
            match rel_parts(r) {
                Some((lag, off)) => {
                    let st = self.starts[idx - lag as usize];
                    (if sends { st.1 } else { st.0 }) + off as u64
                }
                None => r,
            }
        };
        for t in s.trigger.iter_mut().filter(|t| **t != NONE_U64) {
            *t = abs(*t, true);
        }
        for d in &mut s.deps {
            *d = abs(*d, false);
        }
    }

    /// Appends segment `idx` to the flat blocks, its references made absolute.
    fn commit_flat(&mut self, mut s: Segment, idx: usize) -> Result<(), EmuError> {
        self.make_absolute(&mut s, idx);
        if self.flat.is_empty() && self.flat.deps.capacity() == 0 {
            self.flat = s;
        } else {
            self.flat.append(&s);
            self.recycle(s);
        }
        // While nothing repeated, the flat blocks are the trace's prefix: they may leave.
        if let Some(plan) = &self.plan
            && self.run.is_none()
            && self.pieces.is_empty()
            && self.flat.len() as u64 >= plan.batch_blocks
        {
            // Freed, not recycled: a recycled segment keeps a batch's capacity, and the
            // segments being compared would each grow to it.
            let flat = std::mem::take(&mut self.flat);
            self.spill_out(&flat)?;
        }
        Ok(())
    }

    /// Ends the recording: a periodic trace when some segment repeated, else the flat trace.
    pub(crate) fn finish(mut self) -> Result<Recorded, EmuError> {
        if self.detect {
            if !self.cur.is_empty() {
                self.end_segment()?;
                self.starts.push((self.nb, self.ns));
            }
            self.close_run();
            if let Some((p, _, pidx)) = self.prev.take() {
                self.commit_flat(p, pidx)?;
            }
            if self.pieces.iter().any(|p| p.reps > 1) {
                self.close_flat()?;
                let p = Periodic {
                    header: self.header,
                    pieces: self.pieces,
                };
                return Ok(Recorded::Periodic(p));
            }
            // Nothing repeated: one flat segment, in order (no piece was closed).
            debug_assert!(self.pieces.is_empty());
        } else if self.flat.is_empty() {
            self.flat = std::mem::take(&mut self.cur);
        } else {
            let cur = std::mem::take(&mut self.cur);
            self.flat.append(&cur);
        }
        if self.spill.is_some() {
            let flat = std::mem::take(&mut self.flat);
            self.spill_out(&flat)?;
            let spill = self.spill.take().expect("checked above");
            return Ok(Recorded::Spilled {
                header: self.header,
                spill: Box::new(spill),
            });
        }
        Ok(flat_trace(self.header, self.flat).map(Recorded::Flat)?)
    }
}

/// What the recorder produced.
#[derive(Debug)]
pub(crate) enum Recorded {
    Flat(Trace),
    Periodic(Periodic),
    /// The flat trace on disk: its header (no blocks) and its blocks.
    Spilled {
        header: Trace,
        spill: Box<ColumnSpill>,
    },
}

/// The trace of flat blocks with absolute references (global ids and labels), validated.
fn flat_trace(header: Trace, s: Segment) -> Result<Trace, ValidationError> {
    // Optional columns are present when some block has a value (as `Trace::push_block`).
    fn opt<T: PartialEq + Copy>(v: Vec<T>, none: T) -> Vec<T> {
        if v.iter().all(|&x| x == none) {
            Vec::new()
        } else {
            v
        }
    }
    let mut sends = s.sends;
    for (j, x) in sends.iter_mut().enumerate() {
        x.msg = MsgId(j as u64);
    }
    let deps = s.deps.iter().map(|&d| BlockId(d as u32)).collect();
    let cols = trace::BlockColumns {
        object: s.object,
        entry: s.entry,
        duration_ps: s.duration_ps,
        trigger: s.trigger,
        iteration: opt(s.iteration, NO_ITERATION),
        priority: opt(s.priority, 0),
        flags: opt(s.flags, 0),
        recorded_start: opt(s.recorded_start, NONE_U64),
        recorded_arrival: opt(s.recorded_arrival, NONE_U64),
    };
    Trace::from_parts(TraceParts {
        meta: header.meta,
        entries: header.entries,
        objects: header.objects,
        groups: header.groups,
        cols,
        deps_end: s.deps_end,
        deps,
        sends_end: s.sends_end,
        sends,
    })
}
