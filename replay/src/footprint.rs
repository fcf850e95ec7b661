//! Memory estimates, made before anything is allocated, so that a machine or trace too large
//! for this computer is refused with a clear error instead of an abort.
//!
//! [`Footprint`] is a replay's own need (plan, waiting state, timeline, bindings), from the
//! counts of its trace and machine; [`Footprint::of`] computes it as [`crate::Prepared`]
//! checks it. [`Estimate`] is a whole command's: what it keeps throughout (the process, its
//! input) plus the largest of its stages (a replay, a second replay with views, the
//! re-simulations, writing outputs), each a sum of named parts; commands report it and check
//! it against their memory limit before they start.
//!
//! The figures per item were measured (peak resident memory, `VmHWM`, release build with
//! mimalloc) on halos, rings and emulated stencils from 10^4 to 10^6 PEs; the integration test
//! `memory_estimates` checks whole commands against their measured peak in a child process.

use crate::{Input, ReplayConfig, ReplayError};
use network_models::NetworkModel;

/// The process itself: the binary, the allocator's arenas, stacks (15.1 MB measured for a
/// replay of an 8-block trace with the release build, 23.5 MB with the larger debug build,
/// whose 125 MB binary grows with every feature: 21.5 MB when this was first measured).
pub const PROCESS_BYTES: u64 = if cfg!(debug_assertions) {
    23 << 20
} else {
    16 << 20
};
/// Bytes per simulated PE (scheduler state, statistics, the report's per-PE columns).
pub const PER_PE_BYTES: u64 = 128;
/// Bytes per planned block: its plan record and pending count, and its waiting state for
/// the iterations in flight (46 measured on halos of 10^4 to 10^6 ranks; a flat trace has
/// one iteration in flight, a repeated one a few).
pub const PER_BLOCK_BYTES: u64 = 46;
/// Extra bytes per planned block when the run is observed (a sink or bindings): the release
/// time and best-ranked condition beside each waiting record, and the waiting state of the
/// iterations an observed run keeps in flight (100 measured on the same halos).
pub const PER_OBSERVED_BLOCK_BYTES: u64 = 100;
/// Bytes per planned dependency (the dependents lists; 4 more with bindings: their ranks).
pub const PER_DEP_BYTES: u64 = 8;
/// Bytes per planned delivery (a fixed-cost slot; per-message models keep 32).
pub const PER_DELIVERY_BYTES: u64 = 16;
/// Bytes per planned delivery for models whose costs depend on time.
pub const PER_MESSAGE_DELIVERY_BYTES: u64 = 32;
/// Bytes per message in flight in the replay with an event-driven model (contention, flow):
/// its token (the iteration and delivery it stands for, 8 + 4 to reuse it) and its departure
/// event (16); the model's own state is [`NetworkModel::state_bytes`].
pub const PER_IN_FLIGHT_BYTES: u64 = 28;
/// Bytes an event-driven model's run holds whatever its size: the vectors that grow with the
/// traffic (messages, tokens, links) each hold up to a 2 MiB huge page beyond their length
/// (mimalloc with transparent huge pages; measured 12-16 MB on halos of 2,000 ranks).
pub const EVENT_DRIVEN_BYTES: u64 = 12 << 20;
/// Bytes per expanded block when a repeated trace must be expanded first.
pub const PER_EXPANDED_BLOCK_BYTES: u64 = 96;
/// Bytes per timeline record (the record, reserved at once).
pub const PER_TIMELINE_BYTES: u64 = 40;
/// Bytes per block of the bindings (a kind and a block id).
pub const PER_BOUND_BYTES: u64 = 5;

/// What a replay is estimated to need.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Footprint {
    /// Simulated PEs.
    pub pes: u64,
    /// Blocks the plan describes (one iteration of a repeated trace, or all).
    pub planned_blocks: u64,
    /// Dependencies the plan describes.
    pub planned_deps: u64,
    /// Deliveries the plan describes.
    pub planned_deliveries: u64,
    /// Blocks created by expanding a repeated trace (0 if it is not expanded).
    pub expanded_blocks: u64,
    /// Timeline records (0 without a timeline).
    pub timeline_blocks: u64,
    /// Blocks with bindings recorded (0 without).
    pub bound_blocks: u64,
    /// The run is observed (a sink or bindings).
    pub observed: bool,
    /// Deliveries are planned per message (models whose costs depend on time, noise).
    pub per_message: bool,
    /// Messages in flight at once with an event-driven model (0 otherwise): one iteration's
    /// deliveries.
    pub in_flight: u64,
    /// The network model's own state ([`NetworkModel::state_bytes`]) and
    /// [`EVENT_DRIVEN_BYTES`] (0 unless event-driven).
    pub model_bytes: u64,
}

impl Footprint {
    /// What replaying `trace` with `cfg` on `net` needs: the figure [`crate::Prepared::new`]
    /// checks against [`sim_core::RunLimits::max_memory_bytes`]. An error if the trace has
    /// more blocks than a timeline or the bindings can address.
    pub fn of<'a>(
        trace: impl Into<Input<'a>>,
        net: &dyn NetworkModel,
        cfg: &ReplayConfig,
    ) -> Result<Footprint, ReplayError> {
        Footprint::with(trace.into(), net, cfg, false)
    }

    /// [`Footprint::of`] the flat trace [`trace::Repeated::expand`] makes of `trace`, known
    /// before expanding it (the expanded trace itself is not counted: see
    /// [`trace::Repeated::expanded_heap_bytes`]).
    pub fn of_expansion(
        trace: &trace::Repeated,
        net: &dyn NetworkModel,
        cfg: &ReplayConfig,
    ) -> Result<Footprint, ReplayError> {
        Footprint::with(Input::Repeated(trace), net, cfg, true)
    }

    fn with(
        input: Input<'_>,
        net: &dyn NetworkModel,
        cfg: &ReplayConfig,
        flattened: bool,
    ) -> Result<Footprint, ReplayError> {
        let (body, rep) = input.parts();
        let pes = cfg.pes.unwrap_or(body.meta.recorded_pes);
        let total_blocks = rep.map_or(body.num_blocks() as u64, |r| r.num_blocks());
        let bindings = cfg.timeline || cfg.bindings;
        if bindings && total_blocks > u32::MAX as u64 {
            return Err(ReplayError::Config(format!(
                "{total_blocks} blocks: a timeline or the bindings address at most {} blocks",
                u32::MAX
            )));
        }
        let expanded = rep.is_some() && input.needs_every_block(net, cfg) && !flattened;
        let reps = rep.map_or(1, |r| r.reps() as u64);
        let times = if expanded || flattened { reps } else { 1 };
        let body_deps = body.all_deps().len() as u64 + rep.map_or(0, |r| r.num_carried() as u64);
        let deliveries = body.consumers().blocks.len() as u64;
        let event_driven = net.driving() == network_models::Driving::EventDriven;
        let (in_flight, model_bytes) = if event_driven {
            // One iteration's messages in flight: a repeated trace's body, or a flat trace's
            // deliveries over its iterations.
            let in_flight = if rep.is_some() {
                deliveries
            } else {
                deliveries.div_ceil(iterations(body))
            };
            let sends = body.all_sends();
            let mean_bytes = sends.iter().map(|s| s.bytes).sum::<u64>() / sends.len().max(1) as u64;
            (
                in_flight,
                EVENT_DRIVEN_BYTES.saturating_add(net.state_bytes(pes, in_flight, mean_bytes)),
            )
        } else {
            (0, 0)
        };
        Ok(Footprint {
            pes: pes as u64,
            planned_blocks: (body.num_blocks() as u64).saturating_mul(times),
            planned_deps: body_deps.saturating_mul(times),
            planned_deliveries: (body.consumers().blocks.len() as u64).saturating_mul(times),
            expanded_blocks: if expanded { total_blocks } else { 0 },
            timeline_blocks: if cfg.timeline { total_blocks } else { 0 },
            bound_blocks: if bindings { total_blocks } else { 0 },
            observed: bindings,
            per_message: cfg.noise.is_active()
                || !matches!(net.driving(), network_models::Driving::Stateless),
            in_flight,
            model_bytes,
        })
    }

    /// The parts, named, with their bytes (saturating).
    pub fn parts(&self) -> [(String, u64); 7] {
        let per_block = PER_BLOCK_BYTES
            + if self.observed {
                PER_OBSERVED_BLOCK_BYTES
            } else {
                0
            };
        let per_dep = PER_DEP_BYTES + if self.bound_blocks > 0 { 4 } else { 0 };
        let per_delivery = if self.per_message {
            PER_MESSAGE_DELIVERY_BYTES
        } else {
            PER_DELIVERY_BYTES
        };
        [
            (
                format!("{} PEs", self.pes),
                self.pes.saturating_mul(PER_PE_BYTES),
            ),
            (
                format!("{} planned blocks", self.planned_blocks),
                self.planned_blocks
                    .saturating_mul(per_block)
                    .saturating_add(self.planned_deps.saturating_mul(per_dep)),
            ),
            (
                format!("{} planned deliveries", self.planned_deliveries),
                self.planned_deliveries.saturating_mul(per_delivery),
            ),
            (
                format!("{} blocks of the expanded trace", self.expanded_blocks),
                self.expanded_blocks
                    .saturating_mul(PER_EXPANDED_BLOCK_BYTES),
            ),
            (
                format!("{} timeline records", self.timeline_blocks),
                self.timeline_blocks.saturating_mul(PER_TIMELINE_BYTES),
            ),
            (
                format!("the bindings of {} blocks", self.bound_blocks),
                self.bound_blocks.saturating_mul(PER_BOUND_BYTES),
            ),
            (
                format!(
                    "the network's links and {} messages in flight",
                    self.in_flight
                ),
                self.in_flight
                    .saturating_mul(PER_IN_FLIGHT_BYTES)
                    .saturating_add(self.model_bytes),
            ),
        ]
    }

    /// Estimated bytes (saturating).
    pub fn bytes(&self) -> u64 {
        self.parts().iter().fold(0u64, |a, p| a.saturating_add(p.1))
    }

    /// The largest part, in words ("100000000 PEs"), for error messages.
    pub fn largest_part(&self) -> String {
        let parts = self.parts();
        parts
            .iter()
            .max_by_key(|p| p.1)
            .map(|p| p.0.clone())
            .unwrap_or_default()
    }

    /// An error if the estimate exceeds `limit` bytes.
    pub fn check(&self, limit: Option<u64>) -> Result<(), ReplayError> {
        over(self.bytes(), limit, || self.largest_part())
    }
}

/// The iterations of a flat trace: the span of its blocks' iteration labels (1 without).
fn iterations(t: &trace::Trace) -> u64 {
    let labels = t
        .columns()
        .iteration
        .iter()
        .filter(|&&i| i != trace::NO_ITERATION);
    let (lo, hi) = labels.fold((u32::MAX, 0), |(lo, hi), &i| (lo.min(i), hi.max(i)));
    if lo > hi { 1 } else { (hi - lo) as u64 + 1 }
}

/// A whole command's memory estimate: what it keeps throughout (the process, its input, ...)
/// plus its largest stage, each a sum of named parts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Estimate {
    kept: Vec<Part>,
    stages: Vec<(String, Vec<Part>)>,
}

/// A named part of an estimate and its bytes.
pub type Part = (String, u64);

impl Default for Estimate {
    fn default() -> Self {
        Estimate::new()
    }
}

impl Estimate {
    /// The process alone ([`PROCESS_BYTES`]).
    pub fn new() -> Estimate {
        Estimate {
            kept: vec![("the process".into(), PROCESS_BYTES)],
            stages: Vec::new(),
        }
    }

    /// Adds something kept throughout, e.g. the loaded trace.
    pub fn keep(mut self, what: impl Into<String>, bytes: u64) -> Estimate {
        self.kept.push((what.into(), bytes));
        self
    }

    /// Adds a stage: its parts are needed together, and only the largest stage counts.
    pub fn stage(mut self, what: impl Into<String>, parts: Vec<(String, u64)>) -> Estimate {
        self.stages.push((what.into(), parts));
        self
    }

    /// Adds a stage that is one replay's [`Footprint`] plus `extra` parts.
    pub fn replay_stage(
        self,
        what: impl Into<String>,
        f: &Footprint,
        extra: Vec<(String, u64)>,
    ) -> Estimate {
        let mut parts: Vec<(String, u64)> = f.parts().into_iter().filter(|p| p.1 > 0).collect();
        parts.extend(extra);
        self.stage(what, parts)
    }

    fn sum(parts: &[(String, u64)]) -> u64 {
        parts.iter().fold(0u64, |a, p| a.saturating_add(p.1))
    }

    /// Bytes of the largest stage so far (0 without stages).
    pub fn largest_stage_bytes(&self) -> u64 {
        self.largest_stage().map_or(0, |s| s.1)
    }

    /// The largest stage, if any: its name and its bytes.
    fn largest_stage(&self) -> Option<(&(String, Vec<Part>), u64)> {
        self.stages
            .iter()
            .map(|s| (s, Estimate::sum(&s.1)))
            .fold(None, |best, (s, b)| match best {
                Some((_, bb)) if bb >= b => best,
                _ => Some((s, b)),
            })
    }

    /// Estimated peak bytes: everything kept plus the largest stage (saturating).
    pub fn bytes(&self) -> u64 {
        Estimate::sum(&self.kept).saturating_add(self.largest_stage().map_or(0, |s| s.1))
    }

    /// The largest single part, in words ("the trace", "7000000 planned blocks").
    pub fn largest_part(&self) -> String {
        let stage = self
            .largest_stage()
            .map(|s| s.0.1.as_slice())
            .unwrap_or(&[]);
        self.kept
            .iter()
            .chain(stage)
            .max_by_key(|p| p.1)
            .map(|p| p.0.clone())
            .unwrap_or_default()
    }

    /// One line: the total, what is kept, and the largest stage with its parts.
    pub fn describe(&self) -> String {
        let list = |parts: &[(String, u64)]| {
            parts
                .iter()
                .filter(|p| p.1 > 0)
                .map(|(w, b)| format!("{w} {}", human_bytes(*b)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut s = format!("about {} ({}", human_bytes(self.bytes()), list(&self.kept));
        if let Some(((name, parts), b)) = self.largest_stage() {
            s.push_str(&format!(
                "; then at most {} for {name}: {}",
                human_bytes(b),
                list(parts)
            ));
        }
        s.push(')');
        s
    }

    /// An error if the estimate exceeds `limit` bytes.
    pub fn check(&self, limit: Option<u64>) -> Result<(), ReplayError> {
        over(self.bytes(), limit, || self.largest_part())
    }
}

/// [`ReplayError::TooLarge`] if `bytes` exceed `limit`, naming the `largest` part.
fn over(
    bytes: u64,
    limit: Option<u64>,
    largest: impl FnOnce() -> String,
) -> Result<(), ReplayError> {
    match limit {
        Some(limit) if bytes > limit => Err(ReplayError::TooLarge {
            needed_bytes: bytes,
            limit_bytes: limit,
            largest: largest(),
        }),
        _ => Ok(()),
    }
}

pub use sim_core::units::human_bytes;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_adds_the_parts_and_names_the_largest() {
        let f = Footprint {
            pes: 1_000_000,
            planned_blocks: 10,
            planned_deliveries: 10,
            ..Footprint::default()
        };
        assert_eq!(
            f.bytes(),
            1_000_000 * PER_PE_BYTES + 10 * PER_BLOCK_BYTES + 10 * PER_DELIVERY_BYTES
        );
        assert_eq!(f.largest_part(), "1000000 PEs");
        assert!(f.check(Some(f.bytes())).is_ok());
        let e = f.check(Some(f.bytes() - 1)).unwrap_err().to_string();
        assert!(e.contains("1000000 PEs"), "{e}");
        assert!(f.check(None).is_ok());
        let huge = Footprint { pes: u64::MAX, ..f };
        assert_eq!(huge.bytes(), u64::MAX);
    }

    #[test]
    fn a_command_keeps_its_input_and_needs_its_largest_stage() {
        let f = Footprint {
            pes: 10,
            planned_blocks: 1000,
            ..Footprint::default()
        };
        let e = Estimate::new()
            .keep("the trace", 5000)
            .replay_stage("the replay", &f, vec![("the views".into(), 7)])
            .stage("writing", vec![("buffers".into(), 100)]);
        let replay = 10 * PER_PE_BYTES + 1000 * PER_BLOCK_BYTES + 7;
        assert_eq!(e.bytes(), PROCESS_BYTES + 5000 + replay);
        assert_eq!(e.largest_part(), "the process");
        let d = e.describe();
        assert!(d.contains("the trace 4.9 KiB"), "{d}");
        assert!(d.contains("for the replay"), "{d}");
        assert!(!d.contains("writing"), "{d}");
        let err = e.check(Some(e.bytes() - 1)).unwrap_err().to_string();
        assert!(err.contains("the process"), "{err}");
        assert!(e.check(Some(e.bytes())).is_ok());
        let big = Estimate::new().stage("huge", vec![("x".into(), u64::MAX)]);
        assert_eq!(big.bytes(), u64::MAX);
    }

    #[test]
    fn bytes_read_like_people_write_them() {
        assert_eq!(human_bytes(100), "100 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(640 << 20), "640 MiB");
        assert_eq!(human_bytes(12 << 30), "12 GiB");
    }
}
