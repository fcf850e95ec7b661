//! # analysis: why a predicted run takes as long as it does
//!
//! Contract of this crate: given a trace (flat, or repeated: [`Blocks`]), a
//! [`network_models::NetSpec`] and a [`replay::ReplayConfig`], it explains the replay's
//! makespan:
//!
//! * [`critical_path`]: the chain of block runs, messages and waits that ends with the last
//!   block, and its length split into compute per entry method, CPU overheads, network time by
//!   component (overhead, latency, serialisation, queueing) and idle gaps; blocks a path
//!   block waited behind on its PE are on the path (their compute is what it waited for).
//!   The parts sum to the makespan exactly (checked; an error otherwise).
//! * [`analyze`]: the critical path plus diagnoses (load imbalance, message time not hidden,
//!   a hot entry method, a bottleneck object, fine grains, ordering), each with a
//!   severity *measured by re-simulation*: the makespan when that cause is removed
//!   ([`WhatIf`]), ranked by the time saved; and the limits more PEs would reach
//!   ([`Limits`]: work over P, the makespan with one PE per object).
//! * [`profile`]: Projections' analyses as data (time profile, usage per PE by entry,
//!   communication over time, grain-size histograms) and the extrema (outlier PEs by busy
//!   time, messages and bytes sent, against the rest).
//! * [`cluster`]: k-means clustering of the PEs by busy time per entry method, with
//!   exemplars and outliers as representatives (Lee 2009, ch. 4).
//! * [`views`]: what the report draws, as data: a downsampled timeline raster, Rover's
//!   metrics over time (utilisation, balance, granularity, channel utilisation), utilisation
//!   snapshots per PE, the communication matrix and message sizes.
//! * [`select`]: which blocks the per-block outputs hold (all while `trace.json` fits a
//!   budget, else the representative PEs, then the start of the run), with notes saying so.
//! * [`phases`]: MK's communication phases (pipelines, loosely synchronous exchanges) found
//!   from the message graph, each with MK's analytic time beside its simulated time, and MK's
//!   whole-run `T_s + T_p`.
//! * [`transform`]: the trace changes the what-ifs make (an entry or object made faster,
//!   critical-path priorities), also offered by `whatif replay` so that each finding can be
//!   reproduced.
//!
//! * [`streamed`]: the critical path and the views without a timeline (two replays: the
//!   bindings, then the path's runs and the views' accumulators, [`feed`] and [`allviews`]),
//!   5 bytes per block on top of the replay; the same results as with a timeline.
//!
//! Everything is deterministic: the same inputs give the same analysis. Re-simulations use
//! fresh network models built from the spec. With a timeline ([`critical_path`],
//! [`analyze_report`]) memory grows with the number of blocks (about 100 bytes per block on
//! top of the replay); [`streamed`] keeps 5.

pub mod allviews;
pub mod cluster;
mod critical;
mod diagnose;
pub mod feed;
pub mod footprint;
pub mod phases;
pub mod pipe;
pub mod profile;
mod resim;
pub mod select;
pub mod streamed;
pub mod transform;
pub mod views;

pub use critical::{
    Blocks, CriticalPath, Edge, NetworkParts, PathRuns, Share, Step, critical_path,
    critical_path_of, path_blocks,
};
pub use diagnose::{
    Analysis, Bound, Changed, Diagnosis, Finding, Limits, MAX_EXPANDED_BLOCKS, Options, Scenario,
    Skipped, WhatIf, analyze, analyze_report, apply, diagnose, diagnose_with, diagnose_with_early,
    early_what_ifs, fmt_ps, greedy_map, run_early, with_early, without_cpu_overheads,
};
pub use resim::holds_copy;

/// Why an analysis failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnalysisError {
    /// The replay report has no timeline.
    #[error("the analysis needs the replay's timeline (ReplayConfig::timeline)")]
    NoTimeline,
    /// The timeline is not the trace's.
    #[error("the timeline has {records} records for a trace of {blocks} blocks")]
    TimelineMismatch {
        /// Timeline records.
        records: u64,
        /// Trace blocks.
        blocks: u64,
    },
    /// A replay (the baseline or a what-if) failed.
    #[error("replay: {0}")]
    Replay(String),
    /// The load balancer failed.
    #[error("load balancer: {0}")]
    Lb(String),
    /// A speed-up names something the trace does not have.
    #[error("--speedup: {0}")]
    Speedup(String),
    /// An option out of range.
    #[error("{0}")]
    Options(String),
    /// A bug: an invariant of the analysis does not hold.
    #[error("internal error in the analysis: {0}")]
    Internal(String),
}
