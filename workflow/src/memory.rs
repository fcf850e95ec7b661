//! Memory: what a command is estimated to need before it allocates, and what it used.
//!
//! Commands record their estimate with [`note`] (the largest one counts) once they know their
//! sizes. Two environment variables serve tests and developers:
//! `WHATIF_MEMORY_LOG=FILE` appends one JSON line per run at exit, `{"args": ...,
//! "estimate_bytes": ..., "peak_rss_bytes": ...}` (the peak from `VmHWM`), which the memory
//! test compares; `WHATIF_MEMORY_TRACE=1` prints the peak of each stage a
//! [`checkpoint`] closes (`sim_core::memory`), to find where a command's peak is. The peak
//! logged at exit is the whole run's only without `WHATIF_MEMORY_TRACE` (checkpoints restart
//! it).

use crate::error::{Result, WorkflowError};
use std::sync::atomic::{AtomicU64, Ordering};

static ESTIMATE: AtomicU64 = AtomicU64::new(0);

/// Records a command's memory estimate (the largest recorded counts).
pub fn note(bytes: u64) {
    ESTIMATE.fetch_max(bytes, Ordering::Relaxed);
}

/// The largest estimate recorded so far (0: none).
pub fn estimate() -> u64 {
    ESTIMATE.load(Ordering::Relaxed)
}

pub use sim_core::memory::{checkpoint, peak_rss, reset_peak_rss};

/// With `WHATIF_MEMORY_LOG=FILE` set, appends this run's estimate and peak to `FILE`.
pub fn log_at_exit() {
    let Some(path) = std::env::var_os("WHATIF_MEMORY_LOG") else {
        return;
    };
    let line = serde_json::json!({
        "args": std::env::args().skip(1).collect::<Vec<_>>(),
        "estimate_bytes": estimate(),
        "peak_rss_bytes": peak_rss(),
    });
    let mut f = match std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) => {
            eprintln!("warning: WHATIF_MEMORY_LOG: {e}");
            return;
        }
    };
    use std::io::Write;
    if let Err(e) = writeln!(f, "{line}") {
        eprintln!("warning: WHATIF_MEMORY_LOG: {e}");
    }
}

/// Records `est` as this command's estimate, prints it when it is large (or with
/// `WHATIF_MEMORY_TRACE`), and refuses it above `limit`.
pub fn settle(est: &replay::footprint::Estimate, limit: Option<u64>, quiet: bool) -> Result<()> {
    note(est.bytes());
    let refused = limit.is_some_and(|l| est.bytes() > l);
    if std::env::var_os("WHATIF_MEMORY_TRACE").is_some()
        || (!quiet && !refused && est.bytes() >= SHOW_ABOVE_BYTES)
    {
        eprintln!(
            "memory: {}{}",
            est.describe(),
            limit.map_or(String::new(), |l| format!(
                ", limit {}",
                replay::footprint::human_bytes(l)
            ))
        );
    }
    if let Some(limit) = limit
        && est.bytes() > limit
    {
        return Err(WorkflowError::Invalid(format!(
            "this needs {}, above the memory limit of {}; the estimate is made before anything large is allocated: raise the limit with --max-memory (e.g. --max-memory {}) if this computer has the memory, or make the run smaller",
            est.describe(),
            replay::footprint::human_bytes(limit),
            replay::footprint::human_bytes(est.bytes().next_power_of_two()).replace(' ', "")
        )));
    }
    Ok(())
}

/// Re-simulations an analysis runs at once: `requested` (`--jobs`), else this computer's
/// cores (at most 4: an analysis has at most 6 what-ifs, most often 4), fewer while the
/// estimate `est(jobs)` is above `limit`. Returns the count and its estimate.
pub fn what_if_jobs(
    requested: Option<usize>,
    limit: Option<u64>,
    est: impl Fn(usize) -> Result<Estimate>,
) -> Result<(usize, Estimate)> {
    if let Some(j) = requested {
        return Ok((j, est(j)?));
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut j = cores.clamp(1, 4);
    loop {
        let e = est(j)?;
        if j == 1 || limit.is_none_or(|l| e.bytes() <= l) {
            return Ok((j, e));
        }
        j -= 1;
    }
}

/// `whatif gen` (and `bench`'s generator) storing `stored` blocks: 136 bytes per block
/// while the generator builds it, plus its indexes (440 per block up to 14 MiB), measured on
/// halos of 2,000 to 100,000 ranks.
pub fn gen_estimate(stored: u64) -> Estimate {
    Estimate::new().stage(
        "generating",
        vec![
            (
                format!("{stored} stored blocks"),
                stored.saturating_mul(136),
            ),
            (
                "the generator's indexes".into(),
                stored.saturating_mul(440).min(14 << 20),
            ),
        ],
    )
}

/// Estimates below this are not printed (without `WHATIF_MEMORY_TRACE`).
const SHOW_ABOVE_BYTES: u64 = 1 << 30;

use network_models::NetSpec;
use replay::ReplayConfig;
use replay::footprint::{Estimate, Footprint, PER_BOUND_BYTES, PER_TIMELINE_BYTES};
use trace::Repeated;

/// Bytes per block a timeline's analysis keeps beside the timeline (each run's PE for the
/// views' feed, the critical path's walk).
const PER_ANALYSED_BLOCK_BYTES: u64 = 8;
/// Bytes per block kept for the per-block outputs (its run).
const PER_KEPT_BLOCK_BYTES: u64 = 40;
/// Bytes per block shown in `trace.json` and `timeline.csv` while the outputs are written
/// (the writers' indexes, the report's read of `timeline.csv`), beside a kept block's.
const PER_WRITTEN_BLOCK_BYTES: u64 = 40;
/// Bytes per kept block while the outputs are written (the selection, each PE's list of
/// runs and each send's event number for the Projections logs): 43 measured on a
/// 36,000-rank halo.
const PER_LOGGED_BLOCK_BYTES: u64 = 43;
/// What writing a `--out` folder needs whatever its size (the report's tables and text):
/// 16 MiB measured on a 2,000-rank halo.
const OUTPUT_FIXED_BYTES: u64 = 16 << 20;

/// `whatif replay`: the trace (expanded for per-block outputs) and the replay; with
/// `--out`, the views and the per-block outputs beside the timeline; with `--report`, the
/// re-simulations too.
pub fn replay_estimate(
    input: &Repeated,
    spec: &NetSpec,
    cfg: &ReplayConfig,
    per_block: bool,
    report: bool,
    jobs: usize,
) -> Result<Estimate> {
    let net = spec.build();
    let expand = per_block && !input.is_flat();
    let f = if expand {
        Footprint::of_expansion(input, net.as_ref(), cfg)?
    } else {
        Footprint::of(input, net.as_ref(), cfg)?
    };
    let trace_bytes = if expand {
        input.expanded_heap_bytes()
    } else {
        input.heap_bytes()
    };
    let mut est =
        Estimate::new()
            .keep("the trace", trace_bytes)
            .replay_stage("the replay", &f, vec![]);
    if per_block {
        let n = f.timeline_blocks;
        let pes = f.pes;
        let entries = input.body().entries.len() as u64;
        let mut parts = vec![
            (
                format!("the timeline of {n} blocks"),
                n.saturating_mul(PER_TIMELINE_BYTES + PER_BOUND_BYTES),
            ),
            (
                "the analysis of the timeline".into(),
                n.saturating_mul(PER_ANALYSED_BLOCK_BYTES),
            ),
            ("the views".into(), analysis::footprint::views(pes, entries)),
            (
                "the per-block outputs".into(),
                n.saturating_mul(PER_KEPT_BLOCK_BYTES),
            ),
        ];
        if report {
            let mut plain = cfg.clone();
            plain.timeline = false;
            plain.bindings = false;
            let r = Footprint::of_expansion(input, net.as_ref(), &plain)?;
            // Each thread's replay and, at some point, a changed copy (the allocator keeps
            // each thread's pages apart).
            let mut sims: Vec<(String, u64)> = r.parts().into_iter().filter(|p| p.1 > 0).collect();
            sims.push(("a changed copy of the trace".into(), trace_bytes));
            parts.extend(analysis::footprint::times(sims, jobs));
        }
        est = est.stage(
            if report {
                analysis::footprint::at_once(
                    "the views, the analysis, the re-simulations and the outputs",
                    jobs,
                )
            } else {
                "the views and the outputs".into()
            },
            parts,
        );
    }
    Ok(est)
}

/// `whatif replay --out` of a repeated trace ((`replay` with an output folder)): the trace,
/// two replays with the views, the runs of `kept_pes` of the `pes` PEs, the
/// re-simulations with `--report`, then the kept blocks' outputs, of which `shown_pes`' go
/// to `trace.json` and `timeline.csv` (the others' to `projections/` only).
pub fn replay_out_estimate(
    input: &Repeated,
    spec: &NetSpec,
    cfg: &ReplayConfig,
    (pes, kept_pes, shown_pes): (u32, u64, u64),
    report: bool,
    jobs: usize,
) -> Result<Estimate> {
    let _ = input.body().consumers();
    let g = analysis::Blocks::Repeated(input);
    let kept_blocks = (input.num_blocks() as u128 * kept_pes as u128 / pes.max(1) as u128) as u64;
    let kept = kept_blocks.saturating_mul(PER_KEPT_BLOCK_BYTES);
    let shown_blocks = (input.num_blocks() as u128 * shown_pes as u128 / pes.max(1) as u128) as u64;
    let mut est = analysis::footprint::streamed(
        Estimate::new().keep("the trace", input.heap_bytes()),
        g,
        spec,
        cfg,
        pes as u64,
        true,
        vec![(format!("the runs of {kept_blocks} kept blocks"), kept)],
        if report {
            early_count(g, spec, cfg, jobs)
        } else {
            0
        },
    )?;
    if report {
        let early = early_count(g, spec, cfg, jobs) > 0;
        est = analysis::footprint::what_ifs(est, g, spec, cfg, copy_bytes(input), (jobs, early))?;
    }
    let sub = (input.expanded_heap_bytes() as u128 * kept_pes as u128 / pes.max(1) as u128) as u64;
    // The second replay's memory is not all reused by the outputs (measured): it stays.
    let mut plain = cfg.clone();
    plain.timeline = false;
    plain.bindings = false;
    let net = spec.build();
    let mut second = Footprint::of(input, net.as_ref(), &plain)?;
    second.observed = true;
    let mut parts: Vec<(String, u64)> = second.parts().into_iter().filter(|p| p.1 > 0).collect();
    parts.extend([
        (format!("the runs of {kept_blocks} kept blocks"), kept),
        ("their trace".into(), sub),
        (
            "writing them".into(),
            kept_blocks
                .saturating_mul(PER_LOGGED_BLOCK_BYTES)
                .saturating_add(shown_blocks.saturating_mul(PER_WRITTEN_BLOCK_BYTES))
                .saturating_add(OUTPUT_FIXED_BYTES),
        ),
    ]);
    if report && jobs > 1 {
        // The re-simulations' other threads (the outputs are written beside them): their
        // heaps. Their replays' pages are mostly reused by then (measured on halos of 2,000
        // to 36,000 ranks, whose peaks vary by 15% from run to run with the threads' timing).
        let others = (jobs - 1) as u64;
        parts.push((
            format!("the re-simulations' {others} other thread(s)"),
            analysis::footprint::THREAD_BYTES.saturating_mul(others),
        ));
    }
    Ok(est.stage("the per-block outputs", parts))
}

/// The copy a re-simulation of a repeated trace may make, for critical-path priorities when
/// its expansion is not too large to be tried (a sped-up entry or object is a replay
/// setting, `replay::BlockScale`, and copies nothing): counted as large as the trace, which
/// the measured peaks follow (the priorities are tried only when a path block waited).
fn copy_bytes(input: &Repeated) -> u64 {
    if input.num_blocks() <= analysis::MAX_EXPANDED_BLOCKS {
        input.heap_bytes()
    } else {
        0
    }
}

/// What-ifs an analysis of `g` runs during its two replays (with more than one job).
fn early_count(g: analysis::Blocks<'_>, spec: &NetSpec, cfg: &ReplayConfig, jobs: usize) -> usize {
    if jobs <= 1 {
        return 0;
    }
    analysis::early_what_ifs(&analysis::Scenario {
        trace: g,
        net: spec,
        cfg,
        seed: 0,
    })
    .len()
}

/// `whatif analyze`: a repeated trace in two replays (no timeline), a flat one with its
/// timeline; then the re-simulations.
pub fn analyze_estimate(
    input: &Repeated,
    spec: &NetSpec,
    cfg: &ReplayConfig,
    pes: u32,
    jobs: usize,
) -> Result<Estimate> {
    // After a footprint: it computes the trace's consumer index, part of the trace's memory.
    let _ = input.body().consumers();
    let trace_bytes = input.heap_bytes();
    let est = Estimate::new().keep("the trace", trace_bytes);
    if input.is_flat() {
        let net = spec.build();
        let mut with_timeline = cfg.clone();
        with_timeline.timeline = true;
        let f = Footprint::of(input, net.as_ref(), &with_timeline)?;
        let n = f.timeline_blocks;
        let entries = input.body().entries.len() as u64;
        let kept = vec![
            (
                format!("the timeline of {n} blocks"),
                n.saturating_mul(PER_TIMELINE_BYTES + PER_BOUND_BYTES),
            ),
            (
                "the analysis of the timeline".into(),
                n.saturating_mul(PER_ANALYSED_BLOCK_BYTES),
            ),
            (
                "the views".into(),
                analysis::footprint::views(pes as u64, entries),
            ),
            (
                "the analysis's fixed tables".into(),
                analysis::footprint::FIXED_BYTES,
            ),
        ];
        let est = est.replay_stage("the replay", &f, vec![]);
        let g = analysis::Blocks::Flat(input.body());
        let mut est = analysis::footprint::what_ifs(est, g, spec, cfg, trace_bytes, (jobs, false))?;
        // The timeline stays while the re-simulations run: count it in that stage.
        est = est.stage(
            analysis::footprint::at_once("the re-simulations beside the timeline", jobs),
            {
                let mut plain = cfg.clone();
                plain.timeline = false;
                plain.bindings = false;
                let r = Footprint::of(input, net.as_ref(), &plain)?;
                let mut sims: Vec<(String, u64)> =
                    r.parts().into_iter().filter(|p| p.1 > 0).collect();
                sims.push(("a changed copy of the trace".into(), trace_bytes));
                let mut p = analysis::footprint::times(sims, jobs);
                p.extend(kept);
                p
            },
        );
        Ok(est)
    } else {
        let g = analysis::Blocks::Repeated(input);
        let early = early_count(g, spec, cfg, jobs);
        let est =
            analysis::footprint::streamed(est, g, spec, cfg, pes as u64, false, vec![], early)?;
        Ok(analysis::footprint::what_ifs(
            est,
            g,
            spec,
            cfg,
            copy_bytes(input),
            (jobs, early > 0),
        )?)
    }
}

/// Bytes per object of the load balancer's database, sync plan and maps.
const PER_LB_OBJECT_BYTES: u64 = 256;
/// Bytes per send of the load balancer's communication graph (built from every send).
const PER_LB_SEND_BYTES: u64 = 48;
/// What `lb` needs whatever its size (the strategies' tables, the allocator's pages): 16 MiB
/// measured on SimpleImbalance at 250 to 1,000 PEs.
const LB_FIXED_BYTES: u64 = 16 << 20;

/// `whatif lb`: the trace with every block (expanded), the database, and one replay at a
/// time with its objects remapped (every block planned).
pub fn lb_estimate(input: &Repeated, spec: &NetSpec, cfg: &ReplayConfig) -> Result<Estimate> {
    let net = spec.build();
    let f = Footprint::of_expansion(input, net.as_ref(), cfg)?;
    let db = lb_database_bytes(input.body().objects.len() as u64, input.num_sends());
    Ok(Estimate::new()
        .keep("the trace", input.expanded_heap_bytes())
        .keep("the load balancer's database", db)
        .replay_stage(
            "a replay",
            &f,
            vec![("the strategies' tables".into(), LB_FIXED_BYTES)],
        ))
}

/// The load balancer's database for `objects` objects and `sends` sends.
pub fn lb_database_bytes(objects: u64, sends: u64) -> u64 {
    objects
        .saturating_mul(PER_LB_OBJECT_BYTES)
        .saturating_add(sends.saturating_mul(PER_LB_SEND_BYTES))
}

/// The trace with every block (`r` expanded when it repeats), once its estimate (the expansion
/// plus `extra` parts) is within `limit` (default: 3/4 of this computer's memory).
pub fn expand(
    r: Repeated,
    limit: Option<u64>,
    extra: Vec<replay::footprint::Part>,
    quiet: bool,
) -> Result<trace::Trace> {
    if r.is_flat() {
        return Ok(r.into_body());
    }
    let mut est = Estimate::new().keep("the trace", r.heap_bytes());
    est = est.stage(
        format!("its expansion to {} blocks", r.num_blocks()),
        std::iter::once(("every block".to_string(), r.expanded_heap_bytes()))
            .chain(extra)
            .collect(),
    );
    settle(
        &est,
        Some(limit.unwrap_or_else(crate::limits::default_memory_limit)),
        quiet,
    )?;
    Ok(r.expand())
}
