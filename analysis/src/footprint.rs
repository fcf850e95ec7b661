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
/// (what the caller's second sink keeps); beside both, `early` what-ifs on another thread.
#[allow(clippy::too_many_arguments)]
pub fn streamed(
    est: Estimate,
    g: Blocks<'_>,
    net: &NetSpec,
    cfg: &ReplayConfig,
    pes: u64,
    pe_table: bool,
    second: Vec<(String, u64)>,
    early: usize,
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
    // The what-ifs run meanwhile on another thread (`crate::run_early`), one at a time.
    let beside = if early > 0 {
        let mut plain = cfg.clone();
        plain.timeline = false;
        plain.bindings = false;
        // One after the other, but the allocator may not have handed the first one's pages
        // back when the next allocates: counted as held together (measured peaks vary by
        // 20% with the threads' timing on halos of 10,000 to 36,000 ranks).
        vec![(
            format!("{early} what-if(s) on another thread, one at a time"),
            footprint(g, net, &plain)?
                .bytes()
                .saturating_mul(early as u64)
                .saturating_add(THREAD_BYTES),
        )]
    } else {
        Vec::new()
    };
    parts.extend(beside.iter().cloned());
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
            [
                ("the analysis's fixed tables".into(), FIXED_BYTES),
                ("the run's totals".into(), totals),
            ]
            .into_iter()
            .chain(beside)
            .collect(),
        )
        .replay_stage("the second replay", &again, parts))
}

/// Adds the re-simulations of [`crate::diagnose_with`] as a stage: `jobs` replays of `g` at
/// once (`Options::jobs`), each thread with a changed copy of its blocks at some point
/// (`copy_bytes`: a sped-up entry or object; such re-simulations run one at a time), laid
/// out by [`on_threads`].
pub fn what_ifs(
    est: Estimate,
    g: Blocks<'_>,
    net: &NetSpec,
    cfg: &ReplayConfig,
    copy_bytes: u64,
    (jobs, early): (usize, bool),
) -> Result<Estimate, AnalysisError> {
    let mut plain = cfg.clone();
    plain.timeline = false;
    plain.bindings = false;
    let f = footprint(g, net, &plain)?;
    let one: Vec<(String, u64)> = f.parts().into_iter().filter(|p| p.1 > 0).collect();
    let parts = on_threads(
        &est,
        one,
        ("a changed copy of the trace", copy_bytes),
        (jobs, early),
    );
    Ok(est.stage(at_once("the re-simulations", jobs), parts))
}

/// The parts of a stage that runs the replay `one` on each of `jobs` threads, after the
/// stages of `est`, beside one `copy` at a time: this thread reuses the pages its earlier
/// stages freed (it holds the larger of those and `one` with the copy), the other threads
/// allocate their own (the allocator keeps each thread's pages apart). Measured: within
/// 10% on halos of 2,000 to 10^6 ranks.
///
/// With `early` (the earlier stages count a what-if on another thread: [`streamed`]'s
/// `early`), the other threads reuse that thread's pages: the stage is the larger of the
/// earlier stages and this one's replays.
pub fn on_threads(
    est: &Estimate,
    mut one: Vec<(String, u64)>,
    copy: (&str, u64),
    (jobs, early): (usize, bool),
) -> Vec<(String, u64)> {
    if jobs <= 1 {
        one.push((copy.0.to_string(), copy.1));
        return one;
    }
    let mine: u64 = one.iter().map(|p| p.1).sum::<u64>().saturating_add(copy.1);
    let earlier = est.largest_stage_bytes();
    let others = (jobs - 1) as u64;
    if early {
        let all = one
            .iter()
            .map(|p| p.1)
            .sum::<u64>()
            .saturating_mul(others)
            .saturating_add(THREAD_BYTES.saturating_mul(others))
            .saturating_add(mine);
        return vec![(
            format!("{jobs} threads' replays and a copy, in the pages of the earlier stages"),
            all.max(earlier),
        )];
    }
    let mut parts = if earlier > mine {
        vec![(
            "this thread's replay, in the pages of the earlier stages".to_string(),
            earlier,
        )]
    } else {
        one.iter()
            .chain(std::iter::once(&(copy.0.to_string(), copy.1)))
            .map(|(w, b)| (format!("this thread's {w}"), *b))
            .collect()
    };
    parts.extend(one.into_iter().map(|(w, b)| {
        (
            format!("{others} other thread(s)' {w}"),
            b.saturating_mul(others),
        )
    }));
    parts.push(threads_part(others as usize));
    parts
}

/// A stage's name with its concurrency.
pub fn at_once(what: &str, jobs: usize) -> String {
    if jobs > 1 {
        format!("{what}, {jobs} at once")
    } else {
        what.to_string()
    }
}

/// What each thread beyond the first costs whatever it does (its allocator's heap, its
/// stack): 16 MiB measured on halos of 2,000 to 36,000 ranks.
pub const THREAD_BYTES: u64 = 16 << 20;

fn threads_part(others: usize) -> (String, u64) {
    (
        format!("{others} more thread(s)"),
        THREAD_BYTES.saturating_mul(others as u64),
    )
}

/// `parts` held `jobs` times at once, on as many threads.
pub fn times(parts: Vec<(String, u64)>, jobs: usize) -> Vec<(String, u64)> {
    if jobs <= 1 {
        return parts;
    }
    let mut out: Vec<(String, u64)> = parts
        .into_iter()
        .map(|(w, b)| (format!("{jobs} x {w}"), b.saturating_mul(jobs as u64)))
        .collect();
    out.push(threads_part(jobs - 1));
    out
}
