//! # replay: run a trace on a simulated machine
//!
//! Contract of this crate: given a [`Trace`], a [`NetworkModel`] and a [`ReplayConfig`],
//! [`replay`] predicts when every execution block runs, without re-running the program.
//!
//! ## Semantics
//!
//! * **Machine.** `P` PEs (default: as recorded). Objects are placed by the [`Mapping`]
//!   (default: as recorded); a block runs on its object's PE. A [`Remap`]
//!   ([`ReplayConfig::remap`]) moves objects to new PEs after given blocks (a load balancer's
//!   decision at a sync point); [`with_migration_cost`] also charges the moves as messages.
//! * **Readiness.** A block is *ready* when its trigger message (if any) has arrived and all its
//!   dependencies have finished. Blocks with neither are ready at time 0.
//! * **Scheduling.** Each PE is message-driven and non-preemptive: it runs one ready block at a
//!   time, picking the smallest `(priority, effective receive time, block id)`. The *effective
//!   receive time* is BigSim's `effRecvTime`: the latest of the trigger's arrival and the
//!   effective receive times of the block's dependencies (not their end times), so a
//!   continuation block (a dependency-only split of an entry method) keeps its parent's place in
//!   the queue instead of queueing behind messages that arrived while the parent ran. Priority
//!   is 0 for all blocks under [`SchedPolicy::Fifo`] (the default), so the order is FIFO by
//!   effective receive time with ties broken by trace order. A block starts at
//!   `max(ready time, PE free)`. Decisions at an instant are taken after every arrival and
//!   completion at that instant ([`sim_core::EventClass::Late`]).
//! * **Durations.** A block takes `recv_overhead + duration * cpu_scale(PE) + send_overheads`.
//!   The receive overhead applies when its trigger came from another PE; each remote delivery
//!   adds the model's send overhead. Scaling rounds down to the picosecond.
//! * **Messages.** A send leaves at `start + recv_overhead + offset * cpu_scale(PE) + (send
//!   overheads of this block's earlier-or-same remote deliveries)`. It is delivered to every block
//!   that names it as trigger (one for point-to-point, one per receiving object for broadcasts
//!   and groups). A delivery to a block on the same PE arrives when sent; a remote one arrives
//!   `wire_time` later as the [`NetworkModel`] says. Models with state are asked at each
//!   departure in time order ([`network_models::Driving`]); packet models run their own events
//!   inside this replay's event queue and report deliveries. With
//!   [`ReplayConfig::recorded_delays`] every delivery (local or remote) takes the delay the trace
//!   recorded for it instead, and the model is not asked; blocks that need neither a message nor
//!   another block are then released at their recorded start instead of at 0. With
//!   [`ReplayConfig::recorded_order`] a block also waits for the block its recorded PE ran
//!   before it (by recorded start), which replays the recorded schedule.
//! * **Network blocks.** A block marked [`trace::Block::network`] is a network event, not
//!   work: it is never queued on its PE and takes no CPU time (no overheads, no noise); the
//!   moment it is ready it happens, its sends leave (from its object's PE, at its start) and
//!   its dependents are released. It is not part of the recorded-order or object-order chains
//!   and does not count as a block its PE ran. The MPI importers use such blocks for a
//!   rendezvous transfer (it starts when both the send and its receive are posted) and for a
//!   transfer's completion that the sender waits for.
//! * **Object order.** With [`ReplayConfig::object_order`] (default: the trace's
//!   `sequential_objects` flag, which the emulator sets) a block also waits for the previous
//!   block of its object in trace order, without inheriting its effective receive time: on the
//!   recorded configuration nothing changes; elsewhere, a computation triggered by the last of
//!   several messages still waits for the blocks that consumed the others. Blocks of an entry
//!   [outside object order](trace::EntryMethod::outside_object_order) (a message handler that
//!   only takes a message in) are not in the chain: they run when their message arrives, and
//!   the block that uses the message depends on them explicitly.
//! * **Completion.** The makespan is the end of the last block. The end of iteration `k` is the
//!   latest end of a block marked with iteration `k`; iteration times are the differences between
//!   successive ends (the first measured from 0).
//! * **Failure.** If blocks remain that can never become ready, [`replay`] returns
//!   [`ReplayError::Stuck`] naming them and what they wait for; run limits stop runaway replays.
//! * **Determinism.** Integer time and a total event order: the same inputs give identical
//!   results, whichever event queue is used.
//!
//! ## Scale
//!
//! A [`Repeated`] trace (one iteration run `K` times) is replayed without expanding it: the
//! plan is sized by one iteration and the waiting state by the iterations in flight, so a
//! 1M-rank, 10-iteration halo (70 M blocks) replays in about 1.3 GB. Results equal those of
//! the expanded trace. [`Prepared::run_with`] reports progress through
//! [`sim_core::Progress`] every 2^14 events.
//!
//! ## Observing a run
//!
//! With [`ReplayConfig::timeline`] the report keeps one [`TimelineRecord`] per block;
//! [`Prepared::run_observed`] instead hands each record to a [`TimelineSink`] as the block
//! starts and keeps nothing. [`ReplayConfig::bindings`] (implied by the timeline) records,
//! per block, why it started when it did ([`Bindings`], 5 bytes per block): what the
//! critical path walks back through.

mod config;
mod engine;
pub mod footprint;
pub mod noise;
mod plan;
mod remap;
mod stuck;

pub use config::{BlockScale, CpuScale, Mapping, ReplayConfig, SchedPolicy};
pub use noise::Noise;
pub use remap::{MIGRATE_ENTRY, Remap, with_migration_cost};
pub use stuck::{StuckBlock, StuckReport, Wait};

use network_models::NetworkModel;
use sim_core::{BinaryHeapQueue, QueueKind, RadixQueue, SchedError, SimDuration, SimTime};
use trace::{Repeated, Trace};

/// Why a replay failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The configuration does not fit the trace (bad mapping, zero PEs, ...).
    #[error("replay configuration: {0}")]
    Config(String),
    /// A run limit was hit, or simulated time overflowed.
    #[error(transparent)]
    Sched(#[from] SchedError),
    /// Some blocks can never run.
    #[error("{0}")]
    Stuck(StuckReport),
    /// The replay would need more memory than [`sim_core::RunLimits::max_memory_bytes`]
    /// allows; nothing was allocated.
    #[error(
        "this replay needs about {} (mostly for {largest}), above the memory limit of {}",
        footprint::human_bytes(*needed_bytes),
        footprint::human_bytes(*limit_bytes)
    )]
    TooLarge {
        /// The estimate ([`footprint::Footprint::bytes`]).
        needed_bytes: u64,
        /// The limit.
        limit_bytes: u64,
        /// Its largest part, e.g. "100000000 PEs".
        largest: String,
    },
}

/// Message counts. A *delivery* is one message copy reaching one consuming block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MessageStats {
    /// Deliveries between different PEs.
    pub remote: u64,
    /// Deliveries within a PE.
    pub local: u64,
    /// Bytes of remote deliveries.
    pub remote_bytes: u64,
    /// Bytes of local deliveries.
    pub local_bytes: u64,
    /// Sends that no block consumes (traffic with no effect on the replay).
    pub unconsumed_sends: u64,
}

impl MessageStats {
    /// Every count multiplied by `k` (a plan's one iteration, repeated).
    pub(crate) fn times(self, k: u64) -> MessageStats {
        MessageStats {
            remote: self.remote * k,
            local: self.local * k,
            remote_bytes: self.remote_bytes.saturating_mul(k),
            local_bytes: self.local_bytes.saturating_mul(k),
            unconsumed_sends: self.unconsumed_sends * k,
        }
    }
    /// All deliveries.
    pub fn total(&self) -> u64 {
        self.remote + self.local
    }
}

/// Network cost of the remote messages that invoke one entry method.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct EntryNetStats {
    /// Remote deliveries to blocks of this entry.
    pub messages: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Sum of their wire times (departure to arrival), in ps.
    pub wire_ps: u64,
    /// Part of `wire_ps` spent queueing for links or NICs (models that report it), in ps.
    pub queueing_ps: u64,
    /// CPU overheads they cost: sender (including waits for a busy NIC) plus receiver, in ps.
    pub overhead_ps: u64,
}

impl EntryNetStats {
    /// Every figure multiplied by `k` (a plan's one iteration, repeated).
    pub(crate) fn times(self, k: u64) -> EntryNetStats {
        EntryNetStats {
            messages: self.messages * k,
            bytes: self.bytes.saturating_mul(k),
            wire_ps: self.wire_ps.saturating_mul(k),
            queueing_ps: self.queueing_ps.saturating_mul(k),
            overhead_ps: self.overhead_ps.saturating_mul(k),
        }
    }
}

/// One block's place in the predicted timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimelineRecord {
    /// Block id.
    pub block: u32,
    /// PE it ran on.
    pub pe: u32,
    /// Its effective receive time: when it became ready as far as messages go (trigger
    /// arrival, or its dependencies' effective receive times; 0 for blocks that need neither).
    pub ready: SimTime,
    /// When its last condition was met (trigger arrival, a dependency's end, the previous
    /// block of its object or recorded PE, its recorded release; 0 for blocks that need
    /// nothing): the earliest it could start. It starts later only while its PE is busy.
    pub released: SimTime,
    /// Start.
    pub start: SimTime,
    /// End.
    pub end: SimTime,
}

/// Receives every block's run as the replay decides it: in the order blocks start (a network
/// block when it happens), so records of one PE come in time order. What
/// [`Prepared::run_observed`] feeds instead of keeping a timeline: analyses that need each
/// block once then hold nothing per block.
pub trait TimelineSink {
    /// One block's run.
    fn record(&mut self, r: &TimelineRecord);
}

impl TimelineSink for Vec<TimelineRecord> {
    fn record(&mut self, r: &TimelineRecord) {
        self.push(*r);
    }
}

/// A sink that may be absent.
impl<T: TimelineSink> TimelineSink for Option<T> {
    fn record(&mut self, r: &TimelineRecord) {
        if let Some(s) = self {
            s.record(r);
        }
    }
}

/// Why a block started when it did: the condition met last, or its PE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binding {
    /// It needed nothing (or only its recorded release, see [`Binding::Release`]).
    Start,
    /// It was ready but waited for its PE, which ran the given block last (that block ended
    /// between the release and the start).
    Pe(u32),
    /// A dependency, the given block, ended last (among dependencies ending at the same
    /// instant, the first in the block's list: its own, then the carried ones).
    Dependency(u32),
    /// The previous block of its object (object order) ended last.
    ObjectOrder(u32),
    /// The previous block of its recorded PE (recorded order) ended last.
    RecordedOrder(u32),
    /// Its trigger message arrived last.
    Trigger,
    /// Its recorded release time came last (recorded delays).
    Release,
}

/// Per block (global id `k * B + i`), how its start was bound, and the block that ended
/// last: the critical path's walk back, without the timeline. 5 bytes per block.
///
/// Ties: a block that waits for its PE is bound to the PE; otherwise, among conditions met
/// at its release instant, dependencies (first in list order) come before object order,
/// recorded order, the trigger and the recorded release.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bindings {
    kind: Vec<u8>,
    from: Vec<u32>,
    last: Option<u32>,
}

impl Bindings {
    pub(crate) const START: u8 = 0;
    pub(crate) const PE: u8 = 1;
    pub(crate) const DEP: u8 = 2;
    pub(crate) const OBJ: u8 = 3;
    pub(crate) const REC: u8 = 4;
    pub(crate) const TRIGGER: u8 = 5;
    pub(crate) const RELEASE: u8 = 6;

    pub(crate) fn new(blocks: usize) -> Bindings {
        Bindings {
            kind: vec![Self::START; blocks],
            from: vec![u32::MAX; blocks],
            last: None,
        }
    }
    #[inline]
    pub(crate) fn set(&mut self, block: u32, kind: u8, from: u32) {
        self.kind[block as usize] = kind;
        self.from[block as usize] = from;
    }
    pub(crate) fn set_last(&mut self, block: u32) {
        self.last = Some(block);
    }
    /// Blocks covered.
    pub fn len(&self) -> usize {
        self.kind.len()
    }
    /// No block.
    pub fn is_empty(&self) -> bool {
        self.kind.is_empty()
    }
    /// The block that ended last (the latest to start among equal ends); `None` for an
    /// empty run.
    pub fn last(&self) -> Option<u32> {
        self.last
    }
    /// How `block` was bound (`Start` for an id out of range).
    pub fn get(&self, block: u32) -> Binding {
        let (Some(&k), Some(&f)) = (self.kind.get(block as usize), self.from.get(block as usize))
        else {
            return Binding::Start;
        };
        match k {
            Self::PE => Binding::Pe(f),
            Self::DEP => Binding::Dependency(f),
            Self::OBJ => Binding::ObjectOrder(f),
            Self::REC => Binding::RecordedOrder(f),
            Self::TRIGGER => Binding::Trigger,
            Self::RELEASE => Binding::Release,
            _ => Binding::Start,
        }
    }
}

/// The predicted run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayReport {
    /// End of the last block.
    pub makespan: SimTime,
    /// Simulated PEs.
    pub pes: u32,
    /// Blocks executed.
    pub blocks: u64,
    /// `(iteration label, end time)` for each marked iteration, in label order.
    pub iterations: Vec<(u32, SimTime)>,
    /// Message counts.
    pub messages: MessageStats,
    /// Busy time of each PE in picoseconds.
    pub pe_busy_ps: Vec<u64>,
    /// Blocks run by each PE.
    pub pe_blocks: Vec<u64>,
    /// Simulator events processed (a cost figure, not a simulated result).
    pub events: u64,
    /// Every block's start and end, in start order, when requested.
    pub timeline: Option<Vec<TimelineRecord>>,
    /// How each block's start was bound ([`ReplayConfig::bindings`] or
    /// [`ReplayConfig::timeline`]).
    pub bindings: Option<Bindings>,
    /// Network cost per entry method, indexed by entry id.
    pub entry_net: Vec<EntryNetStats>,
    /// The network model's traffic statistics (models with a topology).
    pub net: Option<network_models::NetStats>,
}

impl ReplayReport {
    /// Duration of each marked iteration: end of iteration minus end of the previous one.
    pub fn iteration_times(&self) -> Vec<SimDuration> {
        let mut prev = SimTime::ZERO;
        self.iterations
            .iter()
            .map(|&(_, end)| {
                let d = end.saturating_since(prev);
                prev = prev.max(end);
                d
            })
            .collect()
    }
    /// Mean duration (ps, rounded down) of the iterations whose labels pass `keep`, and how
    /// many there are; `None` when none does.
    pub fn mean_iteration_ps(&self, keep: impl Fn(u32) -> bool) -> Option<(u64, usize)> {
        let (mut sum, mut n) = (0u128, 0usize);
        for ((label, _), d) in self.iterations.iter().zip(self.iteration_times()) {
            if keep(*label) {
                sum += d.as_ps() as u128;
                n += 1;
            }
        }
        (n > 0).then(|| ((sum / n as u128) as u64, n))
    }
    /// Total busy time over all PEs.
    pub fn busy_total(&self) -> SimDuration {
        SimDuration::from_ps(
            self.pe_busy_ps
                .iter()
                .fold(0u64, |a, b| a.saturating_add(*b)),
        )
    }
    /// Mean PE utilisation: busy time over `P * makespan` (0 for an empty run).
    pub fn utilization(&self) -> f64 {
        let denom = self.pes as f64 * self.makespan.as_ps() as f64;
        if denom == 0.0 {
            0.0
        } else {
            self.busy_total().as_ps() as f64 / denom
        }
    }
}

/// What a replay runs: a flat trace, or a repeated one in its compact form.
#[derive(Clone, Copy, Debug)]
pub enum Input<'a> {
    /// Every block stored.
    Flat(&'a Trace),
    /// One iteration stored, run several times ([`trace::Repeated`]).
    Repeated(&'a Repeated),
}

impl<'a> Input<'a> {
    /// The body and, for a repeated trace that is not flat, the repeated trace.
    fn parts(self) -> (&'a Trace, Option<&'a Repeated>) {
        match self {
            Input::Flat(t) => (t, None),
            Input::Repeated(r) if r.is_flat() => (r.body(), None),
            Input::Repeated(r) => (r.body(), Some(r)),
        }
    }

    /// Whether the replay needs every block planned (a repeated trace is then expanded):
    /// remapping, recorded delays or orders, object order.
    fn needs_every_block(self, net: &dyn NetworkModel, cfg: &ReplayConfig) -> bool {
        let (body, _) = self.parts();
        cfg.remap.is_some()
            || cfg.recorded_order
            || cfg.recorded_delays
            || net.uses_recorded_delays()
            || cfg.object_order.unwrap_or(body.meta.sequential_objects)
    }
}

impl<'a> From<&'a Trace> for Input<'a> {
    fn from(t: &'a Trace) -> Self {
        Input::Flat(t)
    }
}

impl<'a> From<&'a Repeated> for Input<'a> {
    fn from(r: &'a Repeated) -> Self {
        Input::Repeated(r)
    }
}

/// Replays `trace` (a [`Trace`] or a [`Repeated`] trace) on the machine described by `cfg`
/// with network model `net`.
pub fn replay<'a>(
    trace: impl Into<Input<'a>>,
    net: &mut dyn NetworkModel,
    cfg: &ReplayConfig,
) -> Result<ReplayReport, ReplayError> {
    Prepared::new(trace, net, cfg)?.run(net)
}

/// A replay compiled for one machine and network model, ready to run: [`replay`] in two steps,
/// so that callers can time (or report progress on) the planning and the event loop apart.
#[derive(Debug)]
pub struct Prepared {
    plan: plan::Plan,
    queue: QueueKind,
    limits: sim_core::RunLimits,
    timeline: bool,
    bindings: bool,
}

impl Prepared {
    /// Checks the configuration and compiles the plan. `net` must be the model [`Prepared::run`]
    /// is given (a fixed-cost model counts its statistics here).
    ///
    /// A repeated trace is planned as one iteration, and its run keeps waiting state for the
    /// iterations in progress only. Remapping objects part-way, recorded delays or orders and
    /// object order need every block: for those the trace is expanded first.
    pub fn new<'a>(
        trace: impl Into<Input<'a>>,
        net: &mut dyn NetworkModel,
        cfg: &ReplayConfig,
    ) -> Result<Prepared, ReplayError> {
        Prepared::new_with(trace, net, cfg, &mut sim_core::NoProgress)
    }

    /// [`Prepared::new`], reporting the blocks planned to `progress` now and then.
    pub fn new_with<'a>(
        trace: impl Into<Input<'a>>,
        net: &mut dyn NetworkModel,
        cfg: &ReplayConfig,
        progress: &mut dyn sim_core::Progress,
    ) -> Result<Prepared, ReplayError> {
        let input = trace.into();
        footprint::Footprint::of(input, net, cfg)?.check(cfg.limits.max_memory_bytes)?;
        let (body, rep) = input.parts();
        let pes = cfg.pes.unwrap_or(body.meta.recorded_pes);
        let needs_every_block = input.needs_every_block(net, cfg);
        let bindings = cfg.timeline || cfg.bindings;
        net.check_pes(pes)
            .map_err(|e| ReplayError::Config(format!("network model: {e}")))?;
        let largest = body.all_sends().iter().map(|s| s.bytes).max().unwrap_or(0);
        net.check_message(largest)
            .map_err(|e| ReplayError::Config(format!("network model: {e}")))?;
        let plan = match rep {
            Some(r) if needs_every_block => {
                plan::Plan::build(&r.expand(), None, cfg, net, progress)?
            }
            _ => plan::Plan::build(body, rep, cfg, net, progress)?,
        };
        sim_core::memory::checkpoint("planning");
        Ok(Prepared {
            plan,
            queue: cfg.queue,
            limits: cfg.limits,
            timeline: cfg.timeline,
            bindings,
        })
    }

    /// Blocks the run will execute.
    pub fn blocks(&self) -> u64 {
        self.plan.total_blocks()
    }

    /// Runs the event loop.
    pub fn run(self, net: &mut dyn NetworkModel) -> Result<ReplayReport, ReplayError> {
        self.run_with(net, &mut sim_core::NoProgress)
    }

    /// Runs the event loop, reporting blocks completed to `progress` now and then.
    pub fn run_with(
        self,
        net: &mut dyn NetworkModel,
        progress: &mut dyn sim_core::Progress,
    ) -> Result<ReplayReport, ReplayError> {
        if !self.timeline {
            return self.run_inner(net, progress, None);
        }
        let mut tl: Vec<TimelineRecord> =
            Vec::with_capacity(self.plan.total_blocks().min(1 << 24) as usize);
        let mut r = self.run_inner(net, progress, Some(&mut tl))?;
        r.timeline = Some(tl);
        Ok(r)
    }

    /// Runs the event loop, giving every block's run to `sink` (nothing is kept:
    /// [`ReplayReport::timeline`] is `None` even with [`ReplayConfig::timeline`]).
    pub fn run_observed(
        self,
        net: &mut dyn NetworkModel,
        progress: &mut dyn sim_core::Progress,
        sink: &mut dyn TimelineSink,
    ) -> Result<ReplayReport, ReplayError> {
        self.run_inner(net, progress, Some(sink))
    }

    fn run_inner(
        self,
        net: &mut dyn NetworkModel,
        progress: &mut dyn sim_core::Progress,
        sink: Option<&mut dyn TimelineSink>,
    ) -> Result<ReplayReport, ReplayError> {
        let p = &self.plan;
        let (limits, bindings) = (self.limits, self.bindings);
        // Traces without network blocks run an engine compiled without their check.
        match (self.queue, p.network.is_empty()) {
            (QueueKind::Radix, true) => {
                engine::Engine::<_, false>::new(p, net, RadixQueue::new(), limits, sink, bindings)
                    .run(progress)
            }
            (QueueKind::Radix, false) => {
                engine::Engine::<_, true>::new(p, net, RadixQueue::new(), limits, sink, bindings)
                    .run(progress)
            }
            (QueueKind::Binary, true) => engine::Engine::<_, false>::new(
                p,
                net,
                BinaryHeapQueue::new(),
                limits,
                sink,
                bindings,
            )
            .run(progress),
            (QueueKind::Binary, false) => engine::Engine::<_, true>::new(
                p,
                net,
                BinaryHeapQueue::new(),
                limits,
                sink,
                bindings,
            )
            .run(progress),
        }
    }
}
