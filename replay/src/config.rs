//! What a replay is asked to do: machine size, object placement, CPU speed, scheduling policy.

use crate::ReplayError;
use sim_core::{QueueKind, Ratio, RunLimits, SimDuration};
use std::str::FromStr;
use trace::Trace;

/// How objects are placed on the simulated PEs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Mapping {
    /// As recorded. With a different PE count P' than the recorded P, object on recorded PE p
    /// goes to `p * P' / P` (contiguous folding or spreading of recorded PEs).
    #[default]
    Recorded,
    /// Objects in id order split into P' contiguous, near-equal chunks: object i goes to
    /// `i * P' / n_objects`. [Pinned](trace::ObjectInfo::pinned) objects are placed as
    /// recorded and left out of the count (`i` and `n_objects` are over the others).
    Block,
    /// Object i goes to `i mod P'` (pinned objects as for `Block`).
    RoundRobin,
    /// An explicit PE per object (as a load balancer computes).
    Explicit(Vec<u32>),
}

impl FromStr for Mapping {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "recorded" => Ok(Mapping::Recorded),
            "block" => Ok(Mapping::Block),
            "round-robin" | "rr" => Ok(Mapping::RoundRobin),
            other => Err(format!(
                "unknown mapping `{other}`; expected recorded, block or round-robin"
            )),
        }
    }
}

impl std::fmt::Display for Mapping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mapping::Recorded => write!(f, "recorded"),
            Mapping::Block => write!(f, "block"),
            Mapping::RoundRobin => write!(f, "round-robin"),
            Mapping::Explicit(v) => write!(f, "explicit ({} objects)", v.len()),
        }
    }
}

/// Where the recorded mapping puts what ran on recorded PE `pe`, on a machine of `pes` PEs:
/// the same PE, or spread out in proportion when the PE count differs.
pub(crate) fn recorded_on(pe: u32, trace: &Trace, pes: u32) -> u32 {
    let rec = trace.meta.recorded_pes.max(1) as u64;
    if rec == pes as u64 {
        pe
    } else {
        (pe as u64 * pes as u64 / rec) as u32
    }
}

impl Mapping {
    /// The PE of every object, for a machine of `pes` PEs.
    pub fn resolve(&self, trace: &Trace, pes: u32) -> Result<Vec<u32>, ReplayError> {
        let n = trace.objects.len() as u64;
        let p = pes as u64;
        Ok(match self {
            Mapping::Recorded => trace
                .objects
                .iter()
                .map(|o| recorded_on(o.recorded_pe.0, trace, pes))
                .collect(),
            Mapping::Block | Mapping::RoundRobin => {
                let free = trace.objects.iter().filter(|o| !o.pinned).count() as u64;
                let mut i = 0u64;
                let mut out = Vec::with_capacity(trace.objects.len());
                for o in &trace.objects {
                    out.push(if o.pinned {
                        recorded_on(o.recorded_pe.0, trace, pes)
                    } else {
                        i += 1;
                        match self {
                            Mapping::Block => ((i - 1) * p / free) as u32,
                            _ => ((i - 1) % p) as u32,
                        }
                    });
                }
                out
            }
            Mapping::Explicit(v) => {
                if v.len() as u64 != n {
                    return Err(ReplayError::Config(format!(
                        "the mapping names {} objects but the trace has {n}",
                        v.len()
                    )));
                }
                if let Some((i, pe)) = v.iter().enumerate().find(|(_, pe)| **pe >= pes) {
                    return Err(ReplayError::Config(format!(
                        "the mapping puts object {i} on PE {pe}, but there are {pes} PEs"
                    )));
                }
                v.clone()
            }
        })
    }
}

/// The order in which a PE runs its ready blocks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SchedPolicy {
    /// By ready time; ties by block id (trace order).
    #[default]
    Fifo,
    /// By block priority (smaller first), then ready time, then block id.
    Priority,
}

/// CPU speed of the simulated PEs, as a factor applied to recorded durations and send offsets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CpuScale {
    /// Every PE scales by the same factor (`0.5` = twice as fast a CPU as recorded).
    Uniform(Ratio),
    /// One factor per PE.
    PerPe(Vec<Ratio>),
}

impl Default for CpuScale {
    fn default() -> Self {
        CpuScale::Uniform(Ratio::ONE)
    }
}

impl CpuScale {
    pub(crate) fn of(&self, pe: u32) -> Ratio {
        match self {
            CpuScale::Uniform(r) => *r,
            CpuScale::PerPe(v) => v[pe as usize],
        }
    }
}

/// Some blocks made faster (or slower) than recorded: each block of a listed entry method or
/// of the object takes `by` times its recorded duration, and its sends leave at `by` times
/// their offsets, before the CPU scale applies. The same replay as a trace whose durations
/// and offsets were changed so (`analysis::transform::speed_up`), without the copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockScale {
    /// Per entry method id: whether its blocks are scaled (shorter than the entry table:
    /// the others are not).
    pub entries: Vec<bool>,
    /// An object whose blocks are scaled.
    pub object: Option<u32>,
    /// The factor (`1/2`: twice as fast).
    pub by: Ratio,
}

impl BlockScale {
    /// Whether a block of `entry` and `object` is scaled.
    #[inline]
    pub fn hits(&self, entry: u32, object: u32) -> bool {
        self.entries.get(entry as usize).copied().unwrap_or(false) || self.object == Some(object)
    }
}

/// Everything a replay needs besides the trace and the network model.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplayConfig {
    /// Simulated PEs; `None` means as recorded.
    pub pes: Option<u32>,
    /// Object placement.
    pub mapping: Mapping,
    /// CPU speed factors.
    pub cpu_scale: CpuScale,
    /// Blocks of some entries or an object scaled before the CPU factor (`None`: as
    /// recorded).
    pub block_scale: Option<BlockScale>,
    /// Ready-block order on each PE.
    pub policy: SchedPolicy,
    /// Event queue implementation (results are identical; speed differs).
    pub queue: QueueKind,
    /// Bounds on the run.
    pub limits: RunLimits,
    /// Record the full timeline (one record per block) and the bindings
    /// ([`crate::Bindings`]).
    pub timeline: bool,
    /// Record, per block, the condition that let it start (5 bytes per block; the critical
    /// path walks them back). Implied by [`ReplayConfig::timeline`].
    pub bindings: bool,
    /// Deliver every message (local ones too) after the delay recorded in the trace (the
    /// consumer's `recorded_arrival` minus the recorded send time) instead of asking the
    /// network model. Needs recorded start and arrival times (BigSim imports have them).
    pub recorded_delays: bool,
    /// Keep each recorded PE's blocks in their recorded order (by recorded start, then block
    /// id): a block also waits for the previous block of its recorded PE. This replays the
    /// recorded schedule (a validation mode) rather than re-deciding it message by message.
    pub recorded_order: bool,
    /// Objects that move to other PEs part-way through the run (a load balancer's decision at
    /// a sync point); `None`: every object stays where [`ReplayConfig::mapping`] puts it.
    pub remap: Option<crate::Remap>,
    /// Whether a block also waits for the previous block of its object (trace order):
    /// `None` follows the trace (`TraceMeta::sequential_objects`), `Some(b)` forces it on or
    /// off. The wait does not change the block's effective receive time, so a replay on the
    /// recorded configuration is unaffected; on another one it keeps each object's blocks in
    /// their recorded order.
    pub object_order: Option<bool>,
    /// The runtime's scheduling cost per block: CPU time a PE spends before each block it
    /// starts (picking it from the queue, unpacking its message). Default 0.
    pub block_overhead: SimDuration,
    /// CPU time a PE spends on a message from one of its own objects (the local delivery a
    /// remote message's `recv_overhead` models for the network), paid at the start of the
    /// block it triggers. Default 0.
    pub local_msg_cost: SimDuration,
    /// OS noise on the CPUs (none by default); see [`crate::noise`].
    pub noise: crate::Noise,
}
