//! The event loop. See the crate docs for the semantics it implements.
//!
//! # Layout
//!
//! Blocks are addressed as `(k, i)`: block `i` of iteration `k` (a flat trace has one
//! iteration). What changes while a block waits (unmet conditions, effective receive time, its
//! link in a ready list) lives in a [`Window`] of iteration slots: only the iterations that
//! have started and not yet finished hold state, so a run that repeats an iteration many
//! times needs state for a few iterations, not for all of them.
//!
//! Each PE's ready set is a FIFO list threaded through the waiting-state records (blocks
//! usually become ready in `(priority, effective receive time, block)` order, so appending
//! keeps the list sorted) plus a binary heap for the blocks that arrive out of order; the
//! smaller of the two heads runs next. The order is exactly that of one heap.

use crate::plan::{Delivery, NIL, NO_ITER, Plan};
use crate::{Bindings, EntryNetStats, ReplayError, ReplayReport, TimelineRecord, TimelineSink};
use network_models::{Driving, MessageInfo, NetIo, NetworkModel};
use sim_core::{EventClass, EventQueue, RunLimits, SchedError, Scheduler, SimDuration, SimTime};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

// Event payload: kind in the top 3 bits; for block and delivery events the iteration in the
// next 29 bits and the block (or slot) in the low 32.
const KIND_SHIFT: u32 = 61;
const ARRIVE: u64 = 0; // (k, block whose trigger arrives)
const END: u64 = 1; // PE whose running block ends
const DISPATCH: u64 = 2; // PE that should pick its next ready block
const DEPART: u64 = 3; // (k, slot) whose message leaves (per-message plans, ordered models)
const NET: u64 = 4; // the network model's own event id (event-driven models)
const RELEASE: u64 = 5; // (0, block) released at its recorded start
const RUN_NET: u64 = 6; // (k, network block) that is ready: it happens now
/// Progress is reported every 2^14 events: often enough that a slow model (a few thousand
/// events per second) shows its first line within seconds, rarely enough to cost nothing
/// (the reporter reads the clock once per call).
const PROGRESS_MASK: u64 = (1 << 14) - 1;
/// Iterations the event encoding can address.
pub(crate) const MAX_REPS: u32 = 1 << 29;

#[inline]
fn ev(kind: u64, k: u32, index: u32) -> u64 {
    (kind << KIND_SHIFT) | ((k as u64) << 32) | index as u64
}

/// A block's place in the ready order: `(priority, effective receive time, k << 32 | i)`.
type Ord3 = (i32, u64, u64);

#[inline]
fn kid(k: u32, i: u32) -> u64 {
    ((k as u64) << 32) | i as u64
}

/// What a block still waits for, and its link in its PE's ready list.
#[derive(Clone, Copy, Debug, Default)]
struct Wait {
    /// Effective receive time (BigSim's `effRecvTime`).
    key_ps: u64,
    /// Unfinished dependencies, plus one while the trigger has not arrived.
    pending: u32,
    /// Next block in the PE's ready list (a state index), or `NIL`.
    next: u32,
}

/// Ranks of the conditions that release a block, for the bindings: a dependency's rank is its
/// position in the block's list (below these).
const RANK_OBJ: u32 = u32::MAX - 4;
const RANK_REC: u32 = u32::MAX - 3;
const RANK_TRIGGER: u32 = u32::MAX - 2;
const RANK_RELEASE: u32 = u32::MAX - 1;
const RANK_NONE: u32 = u32::MAX;

/// With a sink or bindings, beside each [`Wait`]: when the block's conditions were last met
/// (its release) and which of the conditions met then ranks first.
#[derive(Clone, Copy, Debug)]
struct Aux {
    released_ps: u64,
    rank: u32,
    from: u32,
}

const AUX0: Aux = Aux {
    released_ps: 0,
    rank: RANK_NONE,
    from: NIL,
};

/// Exact division of a state index by the number of blocks per iteration.
#[derive(Clone, Copy, Debug)]
struct Div {
    d: u32,
    m: u64,
}

impl Div {
    fn new(d: u32) -> Div {
        // Lemire, Kaser and Kurz: floor(n / d) = (ceil(2^64 / d) * n) >> 64 for 32-bit n.
        Div {
            d,
            m: if d <= 1 { 0 } else { u64::MAX / d as u64 + 1 },
        }
    }
    #[inline]
    fn div(self, n: u32) -> u32 {
        if self.d <= 1 {
            n
        } else {
            ((self.m as u128 * n as u128) >> 64) as u32
        }
    }
}

/// The waiting state of the live iterations `lo..hi`, iteration `k` in slot `k mod w`.
struct Window {
    b: u32,
    mask: u32,
    lo: u32,
    hi: u32,
    st: Vec<Wait>,
    /// Parallel to `st` with a sink or bindings (empty otherwise).
    aux: Vec<Aux>,
    /// Per slot: blocks of its iteration not finished yet.
    remaining: Vec<u32>,
    /// Per slot: the iteration in it.
    slot_iter: Vec<u32>,
    div: Div,
}

impl Window {
    #[inline]
    fn idx(&self, k: u32, i: u32) -> usize {
        (k & self.mask) as usize * self.b as usize + i as usize
    }
    /// `(k, i)` of a state index.
    #[inline]
    fn block_of(&self, idx: u32) -> (u32, u32) {
        let slot = self.div.div(idx);
        (self.slot_iter[slot as usize], idx - slot * self.b)
    }
}

#[derive(Debug)]
struct Pe {
    busy: bool,
    dispatch_pending: bool,
    /// FIFO ready list (state indices), sorted by the ready order.
    head: u32,
    tail: u32,
    /// Ready order of the list's tail.
    tail_ord: Ord3,
    running: u64,
    busy_ps: u64,
    blocks: u64,
    /// With bindings: the block it ran last (global id) and its end.
    last: u32,
    last_end_ps: u64,
    /// Ready blocks that arrived out of order.
    heap: BinaryHeap<Reverse<Ord3>>,
}

impl Default for Pe {
    fn default() -> Self {
        Pe {
            busy: false,
            dispatch_pending: false,
            head: NIL,
            tail: NIL,
            tail_ord: (0, 0, 0),
            running: 0,
            busy_ps: 0,
            blocks: 0,
            last: NIL,
            last_end_ps: 0,
            heap: BinaryHeap::new(),
        }
    }
}

/// `NET_BLOCKS`: whether the plan has network blocks (without, the loop never checks for
/// them).
pub(crate) struct Engine<'a, 's, Q: EventQueue<u64>, const NET_BLOCKS: bool> {
    plan: &'a Plan,
    net: &'a mut dyn NetworkModel,
    sched: Scheduler<u64, Q>,
    win: Window,
    pes: Vec<Pe>,
    overheads: bool,
    driving: Driving,
    io: NetIo,
    /// Event-driven models over several iterations: the `(k, slot)` of each token in flight.
    tokens: Vec<u64>,
    free_tokens: Vec<u32>,
    entry_net: Vec<EntryNetStats>,
    completed: u64,
    makespan: SimTime,
    iter_end: Vec<SimTime>,
    sink: Option<&'s mut dyn TimelineSink>,
    /// Per block (`k * B + i`), how it was bound (with bindings).
    bind: Option<Bindings>,
    /// The block that ended last so far, and its end (with bindings).
    last: (u32, u64),
    /// Whether `win.aux` is kept.
    aux_on: bool,
    /// Per PE, working blocks started so far (jitter draws); empty without jitter.
    jitter_draws: Vec<u64>,
}

impl<'a, 's, Q: EventQueue<u64>, const NET_BLOCKS: bool> Engine<'a, 's, Q, NET_BLOCKS> {
    pub(crate) fn new(
        plan: &'a Plan,
        net: &'a mut dyn NetworkModel,
        queue: Q,
        limits: RunLimits,
        sink: Option<&'s mut dyn TimelineSink>,
        bindings: bool,
    ) -> Self {
        let b = plan.blocks;
        Engine {
            win: Window {
                b,
                mask: 0,
                lo: 0,
                hi: 0,
                st: Vec::new(),
                aux: Vec::new(),
                remaining: vec![0],
                slot_iter: vec![0],
                div: Div::new(b),
            },
            pes: (0..plan.pes).map(|_| Pe::default()).collect(),
            jitter_draws: if plan.noise.has_jitter() {
                vec![0; plan.pes as usize]
            } else {
                Vec::new()
            },
            iter_end: vec![SimTime::ZERO; plan.iter_labels.len() * plan.reps as usize],
            aux_on: sink.is_some() || bindings,
            sink,
            bind: bindings.then(|| Bindings::new(plan.total_blocks() as usize)),
            last: (NIL, 0),
            overheads: net.has_overheads(),
            driving: net.driving(),
            io: NetIo::default(),
            tokens: Vec::new(),
            free_tokens: Vec::new(),
            entry_net: plan.entry_net.clone(),
            plan,
            net,
            sched: Scheduler::new(queue, limits),
            completed: 0,
            makespan: SimTime::ZERO,
        }
    }

    pub(crate) fn run(
        mut self,
        progress: &mut dyn sim_core::Progress,
    ) -> Result<ReplayReport, ReplayError> {
        let plan = self.plan;
        progress.stage("replay", plan.total_blocks(), "blocks");
        // Iterations with blocks ready at time 0: the first `max_lag` ones (their carried
        // dependencies reach back before the start), or all if some block needs nothing.
        let first = if plan.free_in_steady_state {
            plan.reps
        } else {
            plan.max_lag.clamp(1, plan.reps)
        };
        if plan.blocks > 0 && plan.reps > 0 {
            self.touch(first - 1);
        }
        for &(b, t) in &plan.releases {
            let idx = self.win.idx(0, b);
            self.win.st[idx].pending += 1;
            self.sched
                .schedule(SimTime::from_ps(t), EventClass::Normal, ev(RELEASE, 0, b))?;
        }
        for k in 0..first.min(self.win.hi) {
            for i in 0..plan.blocks {
                if self.win.st[self.win.idx(k, i)].pending == 0 {
                    self.make_ready(k, i, SimTime::ZERO)?;
                }
            }
        }
        while let Some((t, e)) = self.sched.next_event()? {
            if self.sched.events() & PROGRESS_MASK == 0 {
                progress.advance_to(self.completed);
            }
            let k = ((e >> 32) as u32) & (MAX_REPS - 1);
            let index = e as u32;
            match e >> KIND_SHIFT {
                ARRIVE | RELEASE => {
                    let idx = self.win.idx(k, index);
                    if self.bind.is_some() {
                        let rank = if e >> KIND_SHIFT == ARRIVE {
                            RANK_TRIGGER
                        } else {
                            RANK_RELEASE
                        };
                        self.note(idx, t, rank, NIL);
                    }
                    let w = &mut self.win.st[idx];
                    w.key_ps = w.key_ps.max(t.as_ps());
                    w.pending -= 1;
                    if w.pending == 0 {
                        self.make_ready(k, index, t)?;
                    }
                }
                END => {
                    let pe = &mut self.pes[index as usize];
                    pe.busy = false;
                    let b = pe.running;
                    self.finish((b >> 32) as u32, b as u32, t)?;
                    let pe = &mut self.pes[index as usize];
                    if (pe.head != NIL || !pe.heap.is_empty()) && !pe.dispatch_pending {
                        pe.dispatch_pending = true;
                        self.sched
                            .schedule(t, EventClass::Late, ev(DISPATCH, 0, index))?;
                    }
                }
                DISPATCH => self.dispatch(index, t)?,
                DEPART => self.depart(k, index, t)?,
                // (Dead code without network blocks, so `start` stays inlined in `dispatch`.)
                RUN_NET if NET_BLOCKS => self.run_net(k, index, t)?,
                _ => {
                    self.net.handle_event(t, index, &mut self.io);
                    self.drain_net()?;
                }
            }
        }
        progress.advance_to(self.completed);
        let total = plan.total_blocks();
        if self.completed < total {
            return Err(ReplayError::Stuck(self.diagnose()));
        }
        // Per-link tables are built next; the model's in-flight state is no longer needed.
        self.net.end_of_run();
        let labels = plan.iter_labels.len();
        let iterations = (0..self.iter_end.len())
            .map(|g| {
                let (k, j) = (g / labels.max(1), g % labels.max(1));
                (
                    plan.iter_labels[j] + k as u32 * plan.iter_stride,
                    self.iter_end[g],
                )
            })
            .collect();
        Ok(ReplayReport {
            makespan: self.makespan,
            pes: plan.pes,
            blocks: total,
            iterations,
            messages: plan.msgs,
            pe_busy_ps: self.pes.iter().map(|p| p.busy_ps).collect(),
            pe_blocks: self.pes.iter().map(|p| p.blocks).collect(),
            events: self.sched.events(),
            timeline: None,
            bindings: self.bind.map(|mut b| {
                if self.last.0 != NIL {
                    b.set_last(self.last.0);
                }
                b
            }),
            entry_net: self.entry_net,
            net: self.net.stats(),
        })
    }

    /// Makes iterations up to `k` live, initialising their waiting state.
    fn touch(&mut self, k: u32) {
        while self.win.hi <= k {
            let w = self.win.mask + 1;
            if self.win.st.is_empty() || self.win.hi - self.win.lo == w {
                self.grow();
            }
            let hi = self.win.hi;
            let b = self.win.b as usize;
            let s = (hi & self.win.mask) as usize;
            let plan = self.plan;
            if self.aux_on {
                self.win.aux[s * b..(s + 1) * b].fill(AUX0);
            }
            let st = &mut self.win.st[s * b..(s + 1) * b];
            for (w, &p) in st.iter_mut().zip(&plan.pending) {
                *w = Wait {
                    key_ps: 0,
                    pending: p,
                    next: NIL,
                };
            }
            if hi < plan.max_lag {
                // Nothing to wait for `lag > hi` iterations back.
                for d in plan.deps.iter().filter(|d| d.lag > hi) {
                    st[d.block as usize].pending -= 1;
                }
            }
            self.win.remaining[s] = plan.blocks;
            self.win.slot_iter[s] = hi;
            self.win.hi += 1;
        }
    }

    /// Doubles the number of iteration slots (or allocates the first one), moving the live
    /// iterations and renumbering the ready lists.
    fn grow(&mut self) {
        let b = self.win.b as usize;
        if self.win.st.is_empty() {
            self.win.st = vec![Wait::default(); b];
            if self.aux_on {
                self.win.aux = vec![AUX0; b];
            }
            return;
        }
        let old_w = self.win.mask as usize + 1;
        let new_w = old_w * 2;
        let new_mask = (new_w - 1) as u32;
        let mut st = vec![Wait::default(); new_w * b];
        let mut aux = if self.aux_on {
            vec![AUX0; new_w * b]
        } else {
            Vec::new()
        };
        let mut remaining = vec![0u32; new_w];
        let mut slot_iter = vec![0u32; new_w];
        let renumber = |win: &Window, idx: u32| -> u32 {
            if idx == NIL {
                return NIL;
            }
            let (k, i) = win.block_of(idx);
            ((k & new_mask) as usize * b + i as usize) as u32
        };
        for k in self.win.lo..self.win.hi {
            let (os, ns) = ((k & self.win.mask) as usize, (k & new_mask) as usize);
            for i in 0..b {
                let mut w = self.win.st[os * b + i];
                w.next = renumber(&self.win, w.next);
                st[ns * b + i] = w;
                if self.aux_on {
                    aux[ns * b + i] = self.win.aux[os * b + i];
                }
            }
            remaining[ns] = self.win.remaining[os];
            slot_iter[ns] = k;
        }
        for pe in &mut self.pes {
            pe.head = renumber(&self.win, pe.head);
            pe.tail = renumber(&self.win, pe.tail);
        }
        self.win.st = st;
        self.win.aux = aux;
        self.win.remaining = remaining;
        self.win.slot_iter = slot_iter;
        self.win.mask = new_mask;
    }

    #[inline]
    fn make_ready(&mut self, k: u32, i: u32, t: SimTime) -> Result<(), ReplayError> {
        if self.aux_on {
            let idx = self.win.idx(k, i);
            self.win.aux[idx].released_ps = t.as_ps();
        }
        if NET_BLOCKS && self.plan.is_net(i) {
            // A network block is never queued: it happens at once (as an event, so that a
            // chain of them cannot recurse).
            self.sched
                .schedule(t, EventClass::Normal, ev(RUN_NET, k, i))?;
            return Ok(());
        }
        let h = self.plan.hot[i as usize];
        let idx = self.win.idx(k, i);
        let ord = (self.plan.prio(i), self.win.st[idx].key_ps, kid(k, i));
        let pe = &mut self.pes[h.pe as usize];
        if pe.head == NIL {
            pe.head = idx as u32;
            pe.tail = idx as u32;
            pe.tail_ord = ord;
            self.win.st[idx].next = NIL;
        } else if ord > pe.tail_ord {
            self.win.st[pe.tail as usize].next = idx as u32;
            self.win.st[idx].next = NIL;
            pe.tail = idx as u32;
            pe.tail_ord = ord;
        } else {
            pe.heap.push(Reverse(ord));
        }
        if !pe.busy && !pe.dispatch_pending {
            pe.dispatch_pending = true;
            self.sched
                .schedule(t, EventClass::Late, ev(DISPATCH, 0, h.pe))?;
        }
        Ok(())
    }

    /// Removes the first ready block of `pe`.
    #[inline]
    fn pop_ready(&mut self, pe_idx: u32) -> Option<(u32, u32)> {
        let pe = &mut self.pes[pe_idx as usize];
        let from_list = match (pe.head, pe.heap.peek()) {
            (NIL, None) => return None,
            (NIL, Some(_)) => false,
            (_, None) => true,
            (head, Some(Reverse(top))) => {
                let (k, i) = self.win.block_of(head);
                (
                    self.plan.prio(i),
                    self.win.st[head as usize].key_ps,
                    kid(k, i),
                ) < *top
            }
        };
        if from_list {
            let head = pe.head;
            pe.head = self.win.st[head as usize].next;
            if pe.head == NIL {
                pe.tail = NIL;
            }
            Some(self.win.block_of(head))
        } else {
            let Reverse((_, _, b)) = pe.heap.pop()?;
            Some(((b >> 32) as u32, b as u32))
        }
    }

    /// Runs ready blocks on `pe` at `t`: zero-time blocks complete inline, the first block that
    /// takes time makes the PE busy until its END event.
    fn dispatch(&mut self, pe_idx: u32, t: SimTime) -> Result<(), ReplayError> {
        // `dispatch_pending` stays set while we loop so blocks made ready inline don't schedule
        // another DISPATCH for this PE.
        loop {
            if self.pes[pe_idx as usize].busy {
                break;
            }
            let Some((k, i)) = self.pop_ready(pe_idx) else {
                break;
            };
            let dur = self.start(k, i, pe_idx, t)?;
            let end = t
                .checked_add(dur)
                .ok_or(ReplayError::Sched(SchedError::Overflow))?;
            let pe = &mut self.pes[pe_idx as usize];
            pe.busy_ps += dur.as_ps();
            pe.blocks += 1;
            if self.aux_on {
                self.observe(k, i, pe_idx, t, end);
            }
            let pe = &mut self.pes[pe_idx as usize];
            if dur == SimDuration::ZERO {
                self.finish(k, i, t)?;
            } else {
                pe.busy = true;
                pe.running = kid(k, i);
                self.sched
                    .schedule(end, EventClass::Normal, ev(END, 0, pe_idx))?;
                break;
            }
        }
        self.pes[pe_idx as usize].dispatch_pending = false;
        Ok(())
    }

    /// Network block `(k, i)` happens at `t`: its messages leave and it finishes, on no PE.
    fn run_net(&mut self, k: u32, i: u32, t: SimTime) -> Result<(), ReplayError> {
        let pe = self.plan.hot[i as usize].pe;
        self.start(k, i, pe, t)?;
        if self.aux_on {
            self.observe(k, i, pe, t, t);
        }
        self.finish(k, i, t)
    }

    /// A condition of the waiting block at state index `idx` is met at `t` (bindings): it
    /// binds the block if it is the latest so far, or as late and of a better rank.
    #[inline]
    fn note(&mut self, idx: usize, t: SimTime, rank: u32, from: u32) {
        let a = &mut self.win.aux[idx];
        let t = t.as_ps();
        if t > a.released_ps || (t == a.released_ps && rank < a.rank) {
            *a = Aux {
                released_ps: t,
                rank,
                from,
            };
        }
    }

    /// Block `(k, i)` runs on `pe` from `start` to `end`: its record goes to the sink, its
    /// binding is decided (the PE if it waited for it, else its best condition).
    fn observe(&mut self, k: u32, i: u32, pe: u32, start: SimTime, end: SimTime) {
        let idx = self.win.idx(k, i);
        let a = self.win.aux[idx];
        let block = k.wrapping_mul(self.plan.blocks).wrapping_add(i);
        if let Some(s) = self.sink.as_mut() {
            s.record(&TimelineRecord {
                block,
                pe,
                ready: SimTime::from_ps(self.win.st[idx].key_ps),
                released: SimTime::from_ps(a.released_ps),
                start,
                end,
            });
        }
        if let Some(b) = self.bind.as_mut() {
            let p = &mut self.pes[pe as usize];
            let (s, r) = (start.as_ps(), a.released_ps);
            let (kind, from) = if s > r && p.last != NIL && p.last_end_ps >= r && p.last_end_ps <= s
            {
                (Bindings::PE, p.last)
            } else {
                match a.rank {
                    RANK_NONE => (Bindings::START, NIL),
                    RANK_OBJ => (Bindings::OBJ, a.from),
                    RANK_REC => (Bindings::REC, a.from),
                    RANK_TRIGGER => (Bindings::TRIGGER, NIL),
                    RANK_RELEASE => (Bindings::RELEASE, NIL),
                    _ => (Bindings::DEP, a.from),
                }
            };
            b.set(block, kind, from);
            p.last = block;
            p.last_end_ps = end.as_ps();
            if self.last.0 == NIL || end.as_ps() >= self.last.1 {
                self.last = (block, end.as_ps());
            }
        }
    }

    /// Starts block `(k, i)` on `pe` at `t`: schedules its messages; returns its CPU time.
    #[inline]
    fn start(&mut self, k: u32, i: u32, pe: u32, t: SimTime) -> Result<SimDuration, ReplayError> {
        let plan = self.plan;
        let (h, next) = (plan.hot[i as usize], plan.hot[i as usize + 1]);
        let v = plan.var.of(i as usize);
        if v != NIL && plan.delivery == Delivery::Fixed {
            return self.start_varying(k, i, v, h, pe, t);
        }
        if plan.delivery == Delivery::Fixed {
            let t = t.as_ps();
            for s in &plan.slots[h.slot_start as usize..next.slot_start as usize] {
                let at = t.checked_add(s.delay_ps).ok_or(SchedError::Overflow)?;
                self.sched.schedule(
                    SimTime::from_ps(at),
                    EventClass::Normal,
                    ev(ARRIVE, k, s.consumer),
                )?;
            }
            return Ok(SimDuration::from_ps(h.dur_ps));
        }
        self.start_per_message(k, i, h, pe, t)
    }

    /// [`Engine::start`] for a block whose duration and send offsets vary by iteration, when
    /// deliveries have fixed costs (`Slot::delay_ps` then excludes the send offset).
    fn start_varying(
        &mut self,
        k: u32,
        i: u32,
        v: u32,
        h: crate::plan::Hot,
        pe: u32,
        t: SimTime,
    ) -> Result<SimDuration, ReplayError> {
        let plan = self.plan;
        let var = &plan.var;
        let (dur, raw) = var.duration(k, v, pe);
        let t = t.as_ps();
        let mut slot = h.slot_start as usize;
        let sends = plan.send_start[i as usize] as usize..plan.send_start[i as usize + 1] as usize;
        for s in sends {
            let off = var.offset(s, raw, pe);
            let end = var.send_slots[s + 1] as usize - var.send_slots[s] as usize + slot;
            for sl in &plan.slots[slot..end] {
                let at = t
                    .checked_add(off)
                    .and_then(|x| x.checked_add(sl.delay_ps))
                    .ok_or(SchedError::Overflow)?;
                self.sched.schedule(
                    SimTime::from_ps(at),
                    EventClass::Normal,
                    ev(ARRIVE, k, sl.consumer),
                )?;
            }
            slot = end;
        }
        Ok(SimDuration::from_ps(
            dur.checked_add(h.dur_ps).ok_or(SchedError::Overflow)?,
        ))
    }

    /// [`Engine::start`] when the network model is asked message by message.
    fn start_per_message(
        &mut self,
        k: u32,
        i: u32,
        h: crate::plan::Hot,
        pe: u32,
        t: SimTime,
    ) -> Result<SimDuration, ReplayError> {
        let plan = self.plan;
        let mut recv_oh = plan.recv_oh.get(i as usize).copied().unwrap_or(0);
        let mut send_oh = 0u64;
        let v = plan.var.of(i as usize);
        let (mut dur, raw) = if v == NIL {
            (h.dur_ps, 0)
        } else {
            plan.var.duration(k, v, pe)
        };
        // Noise: uniform jitter is extra CPU before a working block, log-normal jitter scales
        // its duration and send offsets; detours stretch the block's work (`noisy` maps CPU
        // done since `t` to the time it is done).
        let noise = &plan.noise;
        let mut factor = 1.0;
        if dur > 0 && !self.jitter_draws.is_empty() {
            let n = &mut self.jitter_draws[pe as usize];
            recv_oh = recv_oh.saturating_add(noise.jitter(pe, *n));
            factor = noise.jitter_factor(pe, *n);
            *n += 1;
            if factor != 1.0 {
                dur = scale_ps(dur, factor);
            }
        }
        // A network block spends no CPU time, so noise cannot delay it.
        let net_block = NET_BLOCKS && plan.is_net(i);
        let detours = noise.has_detours() && !net_block;
        let t0 = t.as_ps();
        let noisy = |cpu: u64| -> u64 {
            if detours {
                noise.finish(pe, t0, cpu)
            } else {
                t0.saturating_add(cpu)
            }
        };
        let base = t.as_ps().checked_add(recv_oh).ok_or(SchedError::Overflow)?;
        let (s0, s1) = (
            h.slot_start as usize,
            plan.hot[i as usize + 1].slot_start as usize,
        );
        // A varying block's offsets: per send, in the order of its deliveries.
        let mut send = if v == NIL {
            usize::MAX
        } else {
            plan.send_start[i as usize] as usize
        };
        let mut send_end = s0;
        let mut off = 0;
        for slot in s0..s1 {
            let sl = plan.mslots[slot];
            if v == NIL {
                off = sl.off_ps;
            } else {
                while slot >= send_end {
                    off = plan.var.offset(send, raw, pe);
                    send_end +=
                        plan.var.send_slots[send + 1] as usize - plan.var.send_slots[send] as usize;
                    send += 1;
                }
            }
            // (`off` stays raw: a varying block's sends share it over several slots.)
            let off = if factor != 1.0 {
                scale_ps(off, factor)
            } else {
                off
            };
            let ready = if detours {
                noisy(recv_oh.saturating_add(off).saturating_add(send_oh))
            } else {
                base.checked_add(off + send_oh)
                    .ok_or(SchedError::Overflow)?
            };
            if sl.dst == pe {
                self.sched.schedule(
                    SimTime::from_ps(ready),
                    EventClass::Normal,
                    ev(ARRIVE, k, sl.consumer),
                )?;
                continue;
            }
            let info = MessageInfo {
                src_pe: pe,
                dst_pe: sl.dst,
                bytes: sl.bytes,
            };
            let (depart, cpu) = if self.overheads {
                let st = self.net.sender(&info, SimTime::from_ps(ready));
                (st.depart, st.cpu.as_ps())
            } else {
                (SimTime::from_ps(ready), 0)
            };
            let cpu = if net_block { 0 } else { cpu };
            send_oh = send_oh.checked_add(cpu).ok_or(SchedError::Overflow)?;
            let es = &mut self.entry_net[sl.entry as usize];
            es.overhead_ps += cpu;
            if self.driving == Driving::Stateless {
                let wire = self.net.wire_time(&info, depart);
                es.wire_ps += wire.as_ps();
                let at = depart.checked_add(wire).ok_or(SchedError::Overflow)?;
                self.sched
                    .schedule(at, EventClass::Normal, ev(ARRIVE, k, sl.consumer))?;
            } else {
                self.sched
                    .schedule(depart, EventClass::Normal, ev(DEPART, k, slot as u32))?;
            }
        }
        let total = recv_oh
            .checked_add(dur)
            .and_then(|d| d.checked_add(send_oh))
            .ok_or(SchedError::Overflow)?;
        if detours {
            return Ok(SimDuration::from_ps(noisy(total) - t0));
        }
        Ok(SimDuration::from_ps(total))
    }

    /// A message of an ordered or event-driven model leaves now.
    fn depart(&mut self, k: u32, slot: u32, t: SimTime) -> Result<(), ReplayError> {
        let plan = self.plan;
        let sl = plan.mslots[slot as usize];
        let info = MessageInfo {
            src_pe: sl.src,
            dst_pe: sl.dst,
            bytes: sl.bytes,
        };
        if self.driving == Driving::EventDriven {
            let token = if plan.reps == 1 {
                slot
            } else if let Some(tok) = self.free_tokens.pop() {
                self.tokens[tok as usize] = kid(k, slot);
                tok
            } else {
                self.tokens.push(kid(k, slot));
                (self.tokens.len() - 1) as u32
            };
            self.net.start_message(t, &info, token, &mut self.io);
            return self.drain_net();
        }
        let wire = self.net.wire_time(&info, t);
        self.entry_net[sl.entry as usize].wire_ps += wire.as_ps();
        let at = t.checked_add(wire).ok_or(SchedError::Overflow)?;
        self.sched
            .schedule(at, EventClass::Normal, ev(ARRIVE, k, sl.consumer))?;
        Ok(())
    }

    /// Moves an event-driven model's new events and deliveries into the event queue.
    fn drain_net(&mut self) -> Result<(), ReplayError> {
        for i in 0..self.io.events.len() {
            let (at, e) = self.io.events[i];
            self.sched.schedule(at, EventClass::Normal, ev(NET, 0, e))?;
        }
        self.io.events.clear();
        for i in 0..self.io.deliveries.len() {
            let d = self.io.deliveries[i];
            let (k, slot) = if self.plan.reps == 1 {
                (0, d.token)
            } else {
                let x = self.tokens[d.token as usize];
                self.free_tokens.push(d.token);
                ((x >> 32) as u32, x as u32)
            };
            let sl = self.plan.mslots[slot as usize];
            let c = sl.consumer;
            let es = &mut self.entry_net[sl.entry as usize];
            es.wire_ps += d.wire.as_ps();
            es.queueing_ps += d.queueing.as_ps();
            self.sched
                .schedule(d.at, EventClass::Normal, ev(ARRIVE, k, c))?;
        }
        self.io.deliveries.clear();
        Ok(())
    }

    #[inline]
    fn finish(&mut self, k: u32, i: u32, t: SimTime) -> Result<(), ReplayError> {
        let plan = self.plan;
        self.completed += 1;
        if t > self.makespan {
            self.makespan = t;
        }
        let (h, next) = (plan.hot[i as usize], plan.hot[i as usize + 1]);
        if h.iter != NO_ITER {
            let g = k as usize * plan.iter_labels.len() + h.iter as usize;
            if self.iter_end[g] < t {
                self.iter_end[g] = t;
            }
        }
        let key = self.win.st[self.win.idx(k, i)].key_ps;
        let me = k.wrapping_mul(plan.blocks).wrapping_add(i);
        let bound = self.bind.is_some();
        if let Some(&nb) = plan.chain_next.get(i as usize)
            && nb != NIL
        {
            let idx = self.win.idx(0, nb);
            if bound {
                self.note(idx, t, RANK_REC, me);
            }
            let w = &mut self.win.st[idx];
            w.key_ps = w.key_ps.max(key);
            w.pending -= 1;
            if w.pending == 0 {
                self.make_ready(0, nb, t)?;
            }
        }
        if let Some(&nb) = plan.obj_next.get(i as usize)
            && nb != NIL
        {
            let idx = self.win.idx(0, nb);
            if bound {
                self.note(idx, t, RANK_OBJ, me);
            }
            let w = &mut self.win.st[idx];
            w.pending -= 1;
            if w.pending == 0 {
                self.make_ready(0, nb, t)?;
            }
        }
        for j in h.dep_start as usize..next.dep_start as usize {
            let d = &plan.deps[j];
            let kk = k + d.lag;
            if kk >= plan.reps {
                continue;
            }
            if kk >= self.win.hi {
                self.touch(kk);
            }
            let idx = self.win.idx(kk, d.block);
            if bound {
                self.note(idx, t, plan.dep_rank[j], me);
            }
            let w = &mut self.win.st[idx];
            w.key_ps = w.key_ps.max(key);
            w.pending -= 1;
            if w.pending == 0 {
                self.make_ready(kk, d.block, t)?;
            }
        }
        let s = (k & self.win.mask) as usize;
        self.win.remaining[s] -= 1;
        while self.win.lo < self.win.hi
            && self.win.remaining[(self.win.lo & self.win.mask) as usize] == 0
        {
            self.win.lo += 1;
        }
        Ok(())
    }

    /// The blocks that never ran, from the waiting state of the live iterations.
    fn diagnose(&self) -> crate::StuckReport {
        let plan = self.plan;
        let mut pending = Vec::new();
        for k in self.win.lo..self.win.hi {
            for i in 0..plan.blocks {
                pending.push((k, i, self.win.st[self.win.idx(k, i)].pending));
            }
        }
        crate::stuck::diagnose(plan, self.completed, self.win.hi, &pending)
    }
}

/// `ps` scaled by a jitter factor, rounded to the nearest picosecond.
fn scale_ps(ps: u64, factor: f64) -> u64 {
    // `as` saturates at u64::MAX for huge products.
    (ps as f64 * factor).round() as u64
}
