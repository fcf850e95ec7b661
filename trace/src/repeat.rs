//! Traces that repeat one iteration: the same block graph stored once and run `K` times
//! (structure sharing, as ScalaTrace compresses MPI traces into loops).
//!
//! A [`Repeated`] trace is a *body* (a valid flat [`Trace`] of `B` blocks: one iteration)
//! plus the number of repetitions `K`, the dependencies that reach back into earlier
//! iterations, and optionally per-iteration durations. It *means* its expansion
//! ([`Repeated::expand`]), the flat trace of `K * B` blocks in which block `i` of iteration `k`
//! is block `k * B + i` and:
//!
//! * object, entry method, priority and sync flag are the body block's;
//! * its duration is the body's, or, for the blocks listed as *varying*, the iteration's entry
//!   of the duration table (iteration 0's entry equals the body's duration);
//! * its trigger and its sends' labels are the body's plus `k * msg_stride`, and its iteration
//!   label the body's plus `k * iter_stride` (the strides exceed every body label, so copies
//!   never collide);
//! * its dependencies are the body's (same iteration) followed by its *carried* dependencies:
//!   block `j` of iteration `k - lag` for each `(j, lag)` with `1 <= lag <= k`;
//! * a send of a varying block that is *end-anchored* leaves at the same distance before the
//!   block's end as in the body (a block that sends its results when it finishes); other sends
//!   keep their offset.
//!
//! Messages never cross iterations (a trigger names a message of its own iteration). A flat
//! trace is a `Repeated` with `K = 1` and nothing carried. Replays use the compact form
//! directly; commands that need every block call [`Repeated::expand`].

use crate::error::ValidationError;
use crate::ids::{BlockId, MsgId};
use crate::model::{Block, NO_ITERATION, NONE_U64, Send, Trace};
use sim_core::SimDuration;

/// A dependency on a block of an earlier iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Carried {
    /// The body block depended on.
    pub block: BlockId,
    /// How many iterations back (at least 1).
    pub lag: u32,
}

/// Per-iteration durations of some body blocks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Varying {
    /// The body blocks whose duration changes from iteration to iteration (ascending).
    pub blocks: Vec<u32>,
    /// `durations_ps[k * blocks.len() + v]`: duration of `blocks[v]` in iteration `k`.
    pub durations_ps: Vec<u64>,
    /// Per body send (empty: none): 1 if it is end-anchored (see the module docs).
    pub end_anchored: Vec<u8>,
}

/// A trace of one iteration run `reps` times. See the [module docs](self).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Repeated {
    body: Trace,
    reps: u32,
    carried_end: Vec<u32>,
    carried: Vec<Carried>,
    msg_stride: u64,
    iter_stride: u32,
    varying: Varying,
}

/// The largest number of repetitions (the replay's event encoding addresses 2^29 iterations).
pub const MAX_REPS: u32 = 1 << 29;

impl Repeated {
    /// A flat trace seen as one iteration.
    pub fn flat(body: Trace) -> Repeated {
        Repeated {
            body,
            reps: 1,
            carried_end: Vec::new(),
            carried: Vec::new(),
            msg_stride: 0,
            iter_stride: 0,
            varying: Varying::default(),
        }
    }

    /// Assembles and checks a repeated trace. `carried_end[i]` closes block `i`'s range in
    /// `carried`; the strides must exceed every label of the body.
    pub fn new(
        body: Trace,
        reps: u32,
        carried_end: Vec<u32>,
        carried: Vec<Carried>,
        msg_stride: u64,
        iter_stride: u32,
        varying: Varying,
    ) -> Result<Repeated, ValidationError> {
        let r = Repeated {
            body,
            reps,
            carried_end,
            carried,
            msg_stride,
            iter_stride,
            varying,
        };
        r.validate()?;
        Ok(r)
    }

    /// The same trace with its metadata changed by `f` (the name, the default network, ...).
    pub fn with_meta(mut self, f: impl FnOnce(&mut crate::TraceMeta)) -> Repeated {
        f(&mut self.body.meta);
        self
    }

    /// Bytes [`Repeated::expand`]'s trace will hold on the heap (its columns sized once),
    /// known before expanding.
    pub fn expanded_heap_bytes(&self) -> u64 {
        if self.is_flat() {
            return self.body.heap_bytes();
        }
        let b = &self.body;
        let reps = self.reps as u64;
        let cols = b.columns();
        let per_block = [
            cols.object.len() * 4,
            cols.entry.len() * 4,
            cols.duration_ps.len() * 8,
            cols.trigger.len() * 8,
            cols.iteration.len() * 4,
            cols.priority.len() * 4,
            cols.flags.len(),
            cols.recorded_start.len() * 8,
            cols.recorded_arrival.len() * 8,
            b.num_blocks() * 8, // deps_end, sends_end
        ]
        .iter()
        .sum::<usize>() as u64;
        let deps =
            ((b.all_deps().len() + self.carried.len()) * std::mem::size_of::<BlockId>()) as u64;
        let sends = (b.num_sends() * std::mem::size_of::<crate::Send>()) as u64;
        // The consumer index the expansion computes when it is planned.
        let k = b.consumers();
        let consumers = ((k.start.len() + k.blocks.len() + k.trigger_send.len()) * 4) as u64;
        let header = b.without_blocks_ref_bytes();
        header + (per_block + deps + sends + consumers).saturating_mul(reps)
    }

    /// Bytes this trace holds on the heap: its body ([`Trace::heap_bytes`]), carried
    /// dependencies and per-iteration durations.
    pub fn heap_bytes(&self) -> u64 {
        fn vec<T>(v: &Vec<T>) -> u64 {
            (v.capacity() * std::mem::size_of::<T>()) as u64
        }
        self.body.heap_bytes()
            + vec(&self.carried_end)
            + vec(&self.carried)
            + vec(&self.varying.blocks)
            + vec(&self.varying.durations_ps)
            + vec(&self.varying.end_anchored)
    }

    /// The iteration every repetition runs.
    pub fn body(&self) -> &Trace {
        &self.body
    }
    /// The body, taken out (for a flat trace: the trace itself).
    pub fn into_body(self) -> Trace {
        self.body
    }
    /// Repetitions (`K`).
    pub fn reps(&self) -> u32 {
        self.reps
    }
    /// True for a plain trace: one iteration, nothing carried.
    pub fn is_flat(&self) -> bool {
        self.reps == 1 && self.carried.is_empty() && self.varying.blocks.is_empty()
    }
    /// Blocks of the expansion (`K * B`).
    pub fn num_blocks(&self) -> u64 {
        self.reps as u64 * self.body.num_blocks() as u64
    }
    /// Dependencies on earlier iterations, over the body's blocks.
    pub fn num_carried(&self) -> usize {
        self.carried.len()
    }
    /// Sends of the expansion.
    pub fn num_sends(&self) -> u64 {
        self.reps as u64 * self.body.num_sends() as u64
    }
    /// Block `i`'s dependencies on earlier iterations.
    pub fn carried(&self, i: BlockId) -> &[Carried] {
        if self.carried_end.is_empty() {
            return &[];
        }
        let start = if i.0 == 0 {
            0
        } else {
            self.carried_end[i.index() - 1] as usize
        };
        &self.carried[start..self.carried_end[i.index()] as usize]
    }
    /// Every carried dependency, grouped by block.
    pub fn all_carried(&self) -> &[Carried] {
        &self.carried
    }
    /// Per block, the end of its range in [`Repeated::all_carried`] (empty when nothing is
    /// carried).
    pub fn carried_ends(&self) -> &[u32] {
        &self.carried_end
    }
    /// Label stride between iterations.
    pub fn msg_stride(&self) -> u64 {
        self.msg_stride
    }
    /// Iteration-label stride between iterations.
    pub fn iter_stride(&self) -> u32 {
        self.iter_stride
    }
    /// The per-iteration durations.
    pub fn varying(&self) -> &Varying {
        &self.varying
    }
    /// The largest lag of a carried dependency (0 if none).
    pub fn max_lag(&self) -> u32 {
        self.carried.iter().map(|c| c.lag).max().unwrap_or(0)
    }

    /// Duration of body block `i` in iteration `k`.
    pub fn duration(&self, k: u32, i: u32) -> SimDuration {
        let v = &self.varying;
        match v.blocks.binary_search(&i) {
            Ok(p) => SimDuration::from_ps(v.durations_ps[k as usize * v.blocks.len() + p]),
            Err(_) => SimDuration::from_ps(self.body.columns().duration_ps[i as usize]),
        }
    }

    /// Offset of body send `s` (of body block `i`) in iteration `k`.
    pub fn send_offset(&self, k: u32, i: u32, s: usize) -> SimDuration {
        let off = self.body.all_sends()[s].offset;
        if self.varying.end_anchored.get(s) != Some(&1) {
            return off;
        }
        let gap = self.body.columns().duration_ps[i as usize].saturating_sub(off.as_ps());
        SimDuration::from_ps(self.duration(k, i).as_ps().saturating_sub(gap))
    }

    /// Checks the repetition against the body (the body itself is valid by construction).
    pub fn validate(&self) -> Result<(), ValidationError> {
        let bad = |s: String| Err(ValidationError(s));
        let b = &self.body;
        let n = b.num_blocks();
        if self.reps == 0 || self.reps > MAX_REPS {
            return bad(format!(
                "{} repetitions: expected 1 to {MAX_REPS}",
                self.reps
            ));
        }
        let total = self.reps as u64 * n as u64;
        if total >= u32::MAX as u64 {
            return bad(format!(
                "{} repetitions of {n} blocks make {total} blocks; at most {} fit",
                self.reps,
                u32::MAX - 1
            ));
        }
        let deps_total = self.reps as u64 * (b.all_deps().len() + self.carried.len()) as u64;
        let sends_total = self.reps as u64 * b.num_sends() as u64;
        if deps_total >= u32::MAX as u64 || sends_total >= u32::MAX as u64 {
            return bad(format!(
                "{} repetitions make {deps_total} dependencies and {sends_total} sends; at most {} of each fit",
                self.reps,
                u32::MAX - 1
            ));
        }
        if (self.carried_end.len() != n && !self.carried_end.is_empty())
            || !self.carried_end.windows(2).all(|w| w[0] <= w[1])
            || self.carried_end.last().map_or(0, |&e| e as usize) != self.carried.len()
        {
            return bad("carried-dependency ranges do not cover the list".into());
        }
        if let Some(c) = self
            .carried
            .iter()
            .find(|c| c.lag == 0 || c.block.index() >= n)
        {
            return bad(format!(
                "a carried dependency on {} with lag {}: expected a body block and a lag of at least 1",
                c.block, c.lag
            ));
        }
        // Labels: copies must not collide, and the reserved values stay free.
        let cols = b.columns();
        let max_label = b
            .all_sends()
            .iter()
            .map(|s| s.msg.0)
            .chain(cols.trigger.iter().copied().filter(|&m| m != NONE_U64))
            .max();
        if self.reps > 1
            && let Some(m) = max_label
        {
            let last = (self.reps as u64 - 1)
                .checked_mul(self.msg_stride)
                .and_then(|x| x.checked_add(m));
            if self.msg_stride <= m || last.is_none_or(|l| l == NONE_U64) {
                return bad(format!(
                    "message-label stride {} with largest body label {m} over {} repetitions: labels would collide or overflow",
                    self.msg_stride, self.reps
                ));
            }
        }
        let max_iter = cols
            .iteration
            .iter()
            .copied()
            .filter(|&i| i != NO_ITERATION)
            .max();
        if self.reps > 1
            && let Some(m) = max_iter
        {
            let last = (self.reps - 1)
                .checked_mul(self.iter_stride)
                .and_then(|x| x.checked_add(m));
            if self.iter_stride <= m || last.is_none_or(|l| l == NO_ITERATION) {
                return bad(format!(
                    "iteration-label stride {} with largest body label {m} over {} repetitions: labels would collide or overflow",
                    self.iter_stride, self.reps
                ));
            }
        }
        if self.reps > 1 && (!cols.recorded_start.is_empty() || !cols.recorded_arrival.is_empty()) {
            return bad("a repeated trace cannot carry recorded times".into());
        }
        self.validate_varying()
    }

    fn validate_varying(&self) -> Result<(), ValidationError> {
        let bad = |s: String| Err(ValidationError(s));
        let v = &self.varying;
        let b = &self.body;
        let n = b.num_blocks();
        if !v.blocks.windows(2).all(|w| w[0] < w[1])
            || v.blocks.last().is_some_and(|&x| x as usize >= n)
        {
            return bad("varying blocks must be ascending body blocks".into());
        }
        if v.durations_ps.len() as u64 != self.reps as u64 * v.blocks.len() as u64 {
            return bad(format!(
                "{} per-iteration durations for {} varying blocks over {} repetitions",
                v.durations_ps.len(),
                v.blocks.len(),
                self.reps
            ));
        }
        if !v.end_anchored.is_empty() && v.end_anchored.len() != b.num_sends() {
            return bad("end-anchor flags must cover every send".into());
        }
        if v.end_anchored.iter().any(|&a| a > 1) {
            return bad("end-anchor flags must be 0 or 1".into());
        }
        let durs = &b.columns().duration_ps;
        for (p, &i) in v.blocks.iter().enumerate() {
            if v.durations_ps[p] != durs[i as usize] {
                return bad(format!(
                    "block{i}: iteration 0 of the duration table ({} ps) differs from the body ({} ps)",
                    v.durations_ps[p], durs[i as usize]
                ));
            }
            let sends = b.send_range(BlockId(i));
            for k in 0..self.reps {
                let d = v.durations_ps[k as usize * v.blocks.len() + p];
                for s in sends.clone() {
                    let send = &b.all_sends()[s];
                    let fits = if v.end_anchored.get(s) == Some(&1) {
                        durs[i as usize] - send.offset.as_ps() <= d
                    } else {
                        send.offset.as_ps() <= d
                    };
                    if !fits {
                        return bad(format!(
                            "block{i} sends {} after its end in iteration {k} ({d} ps)",
                            send.msg
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Block `i` of iteration `k` as it appears in the expansion.
    pub fn block(&self, k: u32, i: u32) -> Block {
        let mut blk = self.body.block(BlockId(i));
        blk.duration = self.duration(k, i);
        blk.trigger = blk.trigger.map(|m| MsgId(m.0 + k as u64 * self.msg_stride));
        blk.iteration = blk.iteration.map(|l| l + k * self.iter_stride);
        blk
    }

    /// The flat trace this stands for. Costs what the flat trace costs: use it only where a
    /// command needs every block.
    pub fn expand(&self) -> Trace {
        if self.is_flat() {
            return self.body.clone();
        }
        let b = &self.body;
        let n = b.num_blocks() as u32;
        let mut t = Trace::new(b.meta.clone());
        t.entries = b.entries.clone();
        t.objects = b.objects.clone();
        t.groups = b.groups.clone();
        // Sized once: no doubling (twice the memory at worst) while the copies are pushed.
        let reps = self.reps as usize;
        t.reserve(
            b.num_blocks() * reps,
            (b.all_deps().len() + self.carried.len()) * reps,
            b.num_sends() * reps,
        );
        t.reserve_optional_like(b, b.num_blocks() * reps);
        let mut scratch = (Vec::new(), Vec::new());
        for k in 0..self.reps {
            for i in 0..n {
                self.push_copy(&mut t, k, i, &mut scratch, |g| Some(BlockId(g)));
            }
        }
        t
    }

    /// Appends block `i` of iteration `k` to `t` as the expansion has it, its dependencies
    /// renamed by `id_of` (global id to `t`'s; `None` leaves one out).
    fn push_copy(
        &self,
        t: &mut Trace,
        k: u32,
        i: u32,
        (deps, sends): &mut (Vec<BlockId>, Vec<Send>),
        id_of: impl Fn(u32) -> Option<BlockId>,
    ) {
        let b = &self.body;
        let n = b.num_blocks() as u32;
        let (id, base) = (BlockId(i), k * n);
        deps.clear();
        deps.extend(b.deps(id).iter().filter_map(|d| id_of(d.0 + base)));
        deps.extend(
            self.carried(id)
                .iter()
                .filter(|c| c.lag <= k)
                .filter_map(|c| id_of((k - c.lag) * n + c.block.0)),
        );
        sends.clear();
        for s in b.send_range(id) {
            let mut send = b.all_sends()[s];
            send.msg = MsgId(send.msg.0 + k as u64 * self.msg_stride);
            send.offset = self.send_offset(k, i, s);
            sends.push(send);
        }
        t.push_block(self.block(k, i), deps, sends);
    }

    /// The flat trace of some blocks of the run: `blocks` (global ids `k * B + i`, ascending)
    /// become blocks `0..blocks.len()` in that order, with their own sends (labels and
    /// offsets as in the expansion) and their dependencies among themselves; a trigger whose
    /// sender is left out stays unsent. What per-block outputs of a few PEs need, without the
    /// expansion. Ids out of range are left out.
    pub fn subset(&self, blocks: &[u32]) -> Trace {
        let b = &self.body;
        let n = b.num_blocks() as u32;
        let total = self.num_blocks();
        let mut t = Trace::new(b.meta.clone());
        t.entries = b.entries.clone();
        t.objects = b.objects.clone();
        t.groups = b.groups.clone();
        let local = |g: u32| blocks.binary_search(&g).ok().map(|x| BlockId(x as u32));
        // Sized once (dependencies and sends in proportion to the blocks kept).
        let share = |x: usize| (x as u128 * blocks.len() as u128 / (n as u128).max(1)) as usize;
        t.reserve(
            blocks.len(),
            share(b.all_deps().len() + self.carried.len()),
            share(b.num_sends()),
        );
        t.reserve_optional_like(b, blocks.len());
        let mut scratch = (Vec::new(), Vec::new());
        for &g in blocks.iter().filter(|&&g| (g as u64) < total) {
            let (k, i) = g.checked_div(n).map_or((0, 0), |k| (k, g % n));
            self.push_copy(&mut t, k, i, &mut scratch, local);
        }
        t
    }
}
