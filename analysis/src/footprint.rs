//! Memory estimates of the analyses, as stages of a command's
//! [`replay::footprint::Estimate`]: the two replays of [`crate::streamed`] with the views'
//! accumulators, and the re-simulations of [`crate::diagnose_with`].
//!
//! The figures per item were measured like the replay's (peak resident memory, release
//! build) and are checked by the integration test `memory_estimates` on whole commands.

use crate::{AnalysisError, Blocks};
use network_models::NetSpec;
use replay::ReplayConfig;
use replay::footprint::{Estimate, Footprint};

/// What an analysis needs whatever its size (the overview raster, the communication
/// matrix, the allocator's pages for its many small tables): 20 MiB measured on a
/// 10,000-rank halo.
pub const FIXED_BYTES: u64 = 20 << 20;
/// Bytes per PE of the views (snapshots, Rover's open bins, messages sent per PE, the
/// overview's rows, the finished views).
pub const PER_PE_VIEWS_BYTES: u64 = 160;
/// Bytes per PE and entry method of the views (Projections' usage, the clustering's table
/// and features).
pub const PER_PE_ENTRY_VIEWS_BYTES: u64 = 40;
/// Bytes per PE and entry method of [`crate::allviews::RunTotals`] with its PE x entry table.
pub const PER_PE_ENTRY_TOTALS_BYTES: u64 = 8;

/// The views' accumulators and results for `pes` PEs and `entries` entry methods.
pub fn views(pes: u64, entries: u64) -> u64 {
    pes.saturating_mul(
        PER_PE_VIEWS_BYTES.saturating_add(entries.saturating_mul(PER_PE_ENTRY_VIEWS_BYTES)),
    )
}

fn footprint(g: Blocks<'_>, net: &NetSpec, cfg: &ReplayConfig) -> Result<Footprint, AnalysisError> {
    let model = net.build();
    match g {
        Blocks::Flat(t) => Footprint::of(t, model.as_ref(), cfg),
        Blocks::Repeated(r) => Footprint::of(r, model.as_ref(), cfg),
    }
    .map_err(|e| AnalysisError::Replay(e.to_string()))
}

/// Adds the two replays of [`crate::streamed::replay_and_walk`] on `pes` PEs as stages: the
/// first with the bindings and the per-entry totals (`pe_table`: with the PE x entry
/// table), the second observed, with one bit per block for the path, the views and `second`
/// (what the caller's second sink keeps).
pub fn streamed(
    est: Estimate,
    g: Blocks<'_>,
    net: &NetSpec,
    cfg: &ReplayConfig,
    pes: u64,
    pe_table: bool,
    second: Vec<(String, u64)>,
) -> Result<Estimate, AnalysisError> {
    let entries = g.body().entries.len() as u64;
    let blocks = g.len();
    let mut once = cfg.clone();
    once.timeline = false;
    once.bindings = true;
    let first = footprint(g, net, &once)?;
    let mut twice = cfg.clone();
    twice.timeline = false;
    twice.bindings = false;
    let mut again = footprint(g, net, &twice)?;
    again.observed = true;
    let mut parts = vec![
        ("the analysis's fixed tables".to_string(), FIXED_BYTES),
        ("the path's bits".to_string(), blocks.div_ceil(8)),
        ("the views".to_string(), views(pes, entries)),
    ];
    parts.extend(second);
    let totals = if pe_table {
        pes.saturating_mul(entries)
            .saturating_mul(PER_PE_ENTRY_TOTALS_BYTES)
    } else {
        0
    };
    Ok(est
        .replay_stage(
            "the first replay",
            &first,
            vec![
                ("the analysis's fixed tables".into(), FIXED_BYTES),
                ("the run's totals".into(), totals),
            ],
        )
        .replay_stage("the second replay", &again, parts))
}

/// Adds the re-simulations of [`crate::diagnose_with`] as a stage: one replay of `g` at a
/// time, beside a changed copy of its blocks (`copy_bytes`: a sped-up entry or object).
pub fn what_ifs(
    est: Estimate,
    g: Blocks<'_>,
    net: &NetSpec,
    cfg: &ReplayConfig,
    copy_bytes: u64,
) -> Result<Estimate, AnalysisError> {
    let mut plain = cfg.clone();
    plain.timeline = false;
    plain.bindings = false;
    let f = footprint(g, net, &plain)?;
    Ok(est.replay_stage(
        "the re-simulations",
        &f,
        vec![("a changed copy of the trace".into(), copy_bytes)],
    ))
}
