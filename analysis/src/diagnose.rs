//! Diagnoses in the spirit of Sinha's expert system for Charm++ (load imbalance, a critical
//! path through a few objects or one entry, message time not hidden, too few PEs, too-fine
//! grains, ordering), each with a severity measured by re-simulation: the makespan when that
//! cause is removed.

use crate::AnalysisError;
use crate::critical::{Blocks, CriticalPath, critical_path};
use crate::transform::{Speedup, Target, critical_path_priorities, speed_up, speed_up_repeated};
use lb_strategies::{DbOptions, LbDatabase, LbPoint, PeTopology, SyncPlan, parse_list};
use network_models::NetSpec;
use replay::{CpuScale, Mapping, ReplayConfig, ReplayReport, SchedPolicy};
use serde::Serialize;
use sim_core::{Ratio, SimDuration};
use trace::{Repeated, Trace};

/// One replay: the trace, the network and the machine.
#[derive(Clone, Copy, Debug)]
pub struct Scenario<'a> {
    /// The trace: flat, or repeated (what-ifs that need every block expand it up to
    /// [`MAX_EXPANDED_BLOCKS`], and are skipped beyond).
    pub trace: Blocks<'a>,
    /// The network model.
    pub net: &'a NetSpec,
    /// The machine (its `timeline` flag is ignored).
    pub cfg: &'a ReplayConfig,
    /// Root seed (the randomised strategies' draws).
    pub seed: u64,
}

/// The change a finding's re-simulation makes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WhatIf {
    /// Objects placed by the greedy load balancer for the whole run.
    GreedyBalance,
    /// Every message free (`--net ideal`).
    IdealNetwork,
    /// Each object on its own PE.
    OnePePerObject {
        /// PEs of that machine.
        pes: u32,
    },
    /// An entry method or object made faster ([`Speedup`]).
    Faster(Speedup),
    /// The runtime's per-block and local-message costs and the model's CPU overheads removed.
    NoCpuOverheads {
        /// The model without its overheads.
        net: String,
    },
    /// Ready blocks run by bottom level ([`crate::transform::critical_path_priorities`]).
    CriticalPathPriority,
}

/// What a finding says is wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Diagnosis {
    /// Some PEs work much more than others.
    LoadImbalance,
    /// Message time sits on the critical path.
    MessageTimeNotHidden,
    /// One entry method dominates the critical path.
    HotEntry,
    /// One object holds much of the critical path.
    BottleneckObject,
    /// Per-block and per-message CPU costs are large against the grains.
    FineGrains,
    /// The critical path waits behind other blocks on its PEs.
    Ordering,
}

impl Diagnosis {
    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            Diagnosis::LoadImbalance => "load imbalance",
            Diagnosis::MessageTimeNotHidden => "message time not hidden",
            Diagnosis::HotEntry => "hot entry method",
            Diagnosis::BottleneckObject => "bottleneck object",
            Diagnosis::FineGrains => "fine grains",
            Diagnosis::Ordering => "ordering on the critical path",
        }
    }
}

/// One diagnosis with its re-simulated severity.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    /// What is wrong.
    pub diagnosis: Diagnosis,
    /// The evidence, in words and figures.
    pub evidence: String,
    /// The change the re-simulation made.
    pub what_if: WhatIf,
    /// The change, in words.
    pub remedy: String,
    /// Makespan as replayed.
    pub makespan_ps: u64,
    /// Makespan with the change.
    pub what_if_makespan_ps: u64,
    /// Time the change saves (negative: it costs).
    pub saved_ps: i64,
    /// `saved / makespan`.
    pub saved_fraction: f64,
}

/// A diagnosis that could not be measured, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// What.
    pub diagnosis: Diagnosis,
    /// Why.
    pub why: String,
}

/// The whole analysis of one replay.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Analysis {
    /// The replay's makespan.
    pub makespan_ps: u64,
    /// PEs.
    pub pes: u32,
    /// Blocks.
    pub blocks: u64,
    /// Busy time over all PEs.
    pub busy_ps: u64,
    /// Busy time of the busiest PE.
    pub max_pe_busy_ps: u64,
    /// Mean PE busy time.
    pub mean_pe_busy_ps: u64,
    /// `busy / makespan`: how many PEs work on average.
    pub average_parallelism: f64,
    /// The critical path.
    pub critical_path: CriticalPath,
    /// Findings, the largest saving first.
    pub findings: Vec<Finding>,
    /// Diagnoses not measured.
    pub skipped: Vec<Skipped>,
    /// What no program change below the machine's size can beat.
    pub limits: Limits,
}

/// Bounds on the makespan, for scale: what more PEs would give.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Limits {
    /// All work spread evenly over the PEs, with no waits: `busy / P`.
    pub work_over_pes_ps: u64,
    /// The makespan with each object on its own PE (re-simulated; `None` when not run: as
    /// many PEs as objects already, or too many objects).
    pub one_pe_per_object: Option<Bound>,
    /// Why the one-PE-per-object bound is missing, when it was tried.
    pub note: Option<String>,
}

/// A re-simulated bound.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bound {
    /// The change.
    pub what_if: WhatIf,
    /// Its makespan.
    pub makespan_ps: u64,
}

/// Options of [`analyze`].
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Re-simulate each finding (otherwise only the critical path is computed).
    pub resimulate: bool,
    /// How much faster the hot entry method and the bottleneck object are made.
    pub speedup: u32,
    /// Re-simulations run at once, each on its own thread (1: one after the other). The
    /// findings do not depend on it; the memory does: each holds its own replay (and
    /// changed copy of the trace), see [`crate::footprint::what_ifs`].
    pub jobs: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            resimulate: true,
            speedup: 2,
            jobs: 1,
        }
    }
}

/// Largest object count for which the one-PE-per-object what-if is tried.
const MAX_PES_PER_OBJECT: usize = 1 << 20;

/// Largest run a what-if that needs every block (critical-path priorities, a greedy balance
/// of per-iteration loads) expands a repeated trace to.
pub const MAX_EXPANDED_BLOCKS: u64 = 1 << 23;

/// A trace a what-if made.
#[derive(Clone, Debug)]
pub enum Changed {
    /// Flat.
    Flat(Trace),
    /// Repeated.
    Repeated(Repeated),
}

impl Changed {
    /// As the walk's input.
    pub fn blocks(&self) -> Blocks<'_> {
        match self {
            Changed::Flat(t) => Blocks::Flat(t),
            Changed::Repeated(r) => Blocks::Repeated(r),
        }
    }
}

fn replay_of(
    trace: Blocks<'_>,
    net: &NetSpec,
    cfg: &ReplayConfig,
    progress: &mut dyn sim_core::Progress,
) -> Result<ReplayReport, AnalysisError> {
    let mut m = net.build();
    let p = match trace {
        Blocks::Flat(t) => replay::Prepared::new_with(t, m.as_mut(), cfg, progress),
        Blocks::Repeated(t) => replay::Prepared::new_with(t, m.as_mut(), cfg, progress),
    };
    p.and_then(|p| p.run_with(m.as_mut(), progress))
        .map_err(|e| AnalysisError::Replay(e.to_string()))
}

/// One re-simulation: `w` applied to `sc`, replayed.
pub(crate) fn what_if_run(
    sc: &Scenario<'_>,
    w: &WhatIf,
    progress: &mut dyn sim_core::Progress,
) -> Result<ReplayReport, AnalysisError> {
    apply(sc, w).and_then(|(tr, net, cfg)| {
        replay_of(
            tr.as_ref().map_or(sc.trace, Changed::blocks),
            &net,
            &cfg,
            progress,
        )
    })
}

/// The what-ifs whose re-simulation does not depend on the base run (the greedy balance,
/// from the trace's loads; the ideal network), which [`diagnose_with`] will most likely
/// call for: they can run while the base run replays.
pub fn early_what_ifs(sc: &Scenario<'_>) -> Vec<WhatIf> {
    let t = sc.trace.body();
    let pes = sc.cfg.pes.unwrap_or(t.meta.recorded_pes);
    let mut v = Vec::new();
    if pes > 1 && t.objects.len() > 1 {
        v.push(WhatIf::GreedyBalance);
    }
    if !matches!(sc.net, NetSpec::Ideal) {
        v.push(WhatIf::IdealNetwork);
    }
    v
}

/// Runs `what_ifs` one after the other, without progress, for [`diagnose_with_early`].
pub fn run_early(
    sc: &Scenario<'_>,
    what_ifs: Vec<WhatIf>,
) -> Vec<(WhatIf, Result<ReplayReport, AnalysisError>)> {
    what_ifs
        .into_iter()
        .map(|w| {
            let r = what_if_run(sc, &w, &mut sim_core::NoProgress);
            (w, r)
        })
        .collect()
}

/// A what-if run early and its re-simulation.
pub type EarlyResult = (WhatIf, Result<ReplayReport, AnalysisError>);

/// Runs `f` on this thread while `what_ifs` ([`early_what_ifs`]) run on another
/// ([`run_early`]); returns both results, for [`diagnose_with_early`]. With no what-ifs,
/// just `f`.
pub fn with_early<R>(
    sc: &Scenario<'_>,
    what_ifs: Vec<WhatIf>,
    f: impl FnOnce() -> R,
) -> (R, Vec<EarlyResult>) {
    if what_ifs.is_empty() {
        return (f(), Vec::new());
    }
    std::thread::scope(|s| {
        let side = s.spawn(|| run_early(sc, what_ifs));
        let r = f();
        let early = side.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        (r, early)
    })
}

/// Every block of `b` (a repeated trace expanded, up to [`MAX_EXPANDED_BLOCKS`]).
fn flat_of<'a>(b: Blocks<'a>, what: &str) -> Result<std::borrow::Cow<'a, Trace>, AnalysisError> {
    match b {
        Blocks::Flat(t) => Ok(std::borrow::Cow::Borrowed(t)),
        Blocks::Repeated(r) if r.is_flat() => Ok(std::borrow::Cow::Borrowed(r.body())),
        Blocks::Repeated(r) if r.num_blocks() <= MAX_EXPANDED_BLOCKS => {
            Ok(std::borrow::Cow::Owned(r.expand()))
        }
        Blocks::Repeated(r) => Err(AnalysisError::Replay(format!(
            "{what} needs every block, and this run has {} (one iteration repeated {} times; at most {MAX_EXPANDED_BLOCKS} are expanded)",
            r.num_blocks(),
            r.reps()
        ))),
    }
}

/// The same model without CPU overheads, if it has any.
pub fn without_cpu_overheads(net: &NetSpec) -> Option<NetSpec> {
    match net {
        NetSpec::AlphaBeta {
            lat,
            bw,
            o_send,
            o_recv,
        } if *o_send > SimDuration::ZERO || *o_recv > SimDuration::ZERO => {
            Some(NetSpec::AlphaBeta {
                lat: *lat,
                bw: *bw,
                o_send: SimDuration::ZERO,
                o_recv: SimDuration::ZERO,
            })
        }
        NetSpec::LogGops(p) if p.o > SimDuration::ZERO || p.o_per_byte > SimDuration::ZERO => {
            let mut q = *p;
            q.o = SimDuration::ZERO;
            q.o_per_byte = SimDuration::ZERO;
            Some(NetSpec::LogGops(q))
        }
        _ => None,
    }
}

/// The greedy strategy's map of every object for the whole run.
///
/// For a repeated trace whose iterations all weigh the same, one iteration's loads give the
/// map (every load and byte count is the same multiple of them); otherwise every block.
pub fn greedy_map(sc: &Scenario<'_>) -> Result<Vec<u32>, AnalysisError> {
    let t = match sc.trace {
        Blocks::Repeated(r) if r.varying().blocks.is_empty() => {
            std::borrow::Cow::Borrowed(r.body())
        }
        b => flat_of(
            b,
            "the greedy balance of loads that change between iterations",
        )?,
    };
    let t = &*t;
    let pes = sc.cfg.pes.unwrap_or(t.meta.recorded_pes);
    let lb = |e: lb_strategies::LbError| AnalysisError::Lb(e.to_string());
    let current = sc
        .cfg
        .mapping
        .resolve(t, pes)
        .map_err(|e| AnalysisError::Replay(e.to_string()))?;
    let cpu: Vec<Ratio> = match &sc.cfg.cpu_scale {
        CpuScale::Uniform(r) => vec![*r],
        CpuScale::PerPe(v) => v.clone(),
    };
    let plan = SyncPlan::find(t, LbPoint::Start).map_err(lb)?;
    let db = LbDatabase::from_trace(
        t,
        &plan,
        &DbOptions {
            current: &current,
            pes,
            cpu_scale: &cpu,
            migrate_bytes: 0,
        },
    )
    .map_err(lb)?;
    let topo = sc.net.topology().map(|(t, ppn)| PeTopology {
        topology: t.clone(),
        pes_per_node: ppn,
    });
    let greedy = parse_list("greedy").map_err(lb)?;
    greedy[0].map(&db, topo.as_ref(), sc.seed).map_err(lb)
}

/// The trace, model and machine a what-if replays.
pub fn apply(
    sc: &Scenario<'_>,
    w: &WhatIf,
) -> Result<(Option<Changed>, NetSpec, ReplayConfig), AnalysisError> {
    let mut cfg = sc.cfg.clone();
    cfg.timeline = false;
    cfg.bindings = false;
    let mut net = sc.net.clone();
    let mut trace = None;
    match w {
        WhatIf::GreedyBalance => cfg.mapping = Mapping::Explicit(greedy_map(sc)?),
        WhatIf::IdealNetwork => net = NetSpec::Ideal,
        WhatIf::OnePePerObject { pes } => {
            cfg.pes = Some(*pes);
            cfg.mapping = Mapping::Block;
        }
        // Without a copy: the replay scales the hit blocks (`replay::BlockScale`), unless
        // the machine scales blocks already.
        WhatIf::Faster(s) if cfg.block_scale.is_none() => {
            cfg.block_scale = Some(crate::transform::block_scale(sc.trace.body(), s)?);
        }
        WhatIf::Faster(s) => {
            trace = Some(match sc.trace {
                Blocks::Flat(t) => {
                    let mut t = t.clone();
                    speed_up(&mut t, s)?;
                    Changed::Flat(t)
                }
                Blocks::Repeated(r) => Changed::Repeated(speed_up_repeated(r, s)?.0),
            });
        }
        WhatIf::NoCpuOverheads { .. } => {
            cfg.block_overhead = SimDuration::ZERO;
            cfg.local_msg_cost = SimDuration::ZERO;
            if let Some(n) = without_cpu_overheads(&net) {
                net = n;
            }
        }
        WhatIf::CriticalPathPriority => {
            let mut t = flat_of(sc.trace, "critical-path priorities")?.into_owned();
            critical_path_priorities(&mut t)?;
            trace = Some(Changed::Flat(t));
            cfg.policy = SchedPolicy::Priority;
        }
    }
    Ok((trace, net, cfg))
}

/// Replays the scenario with its timeline, computes the critical path and (with
/// [`Options::resimulate`]) measures every applicable diagnosis by re-simulation.
pub fn analyze(sc: &Scenario<'_>, opts: &Options) -> Result<Analysis, AnalysisError> {
    let Blocks::Flat(t) = sc.trace else {
        return Err(AnalysisError::Options(
            "analyze: a repeated trace goes through analysis::streamed".into(),
        ));
    };
    let mut cfg = sc.cfg.clone();
    cfg.timeline = true;
    let base = replay_of(sc.trace, sc.net, &cfg, &mut sim_core::NoProgress)?;
    let cp = critical_path(t, &base, sc.net, sc.cfg)?;
    diagnose(sc, &base, cp, opts)
}

/// [`analyze`] for a replay already made of a flat trace (`base` must hold its timeline).
pub fn analyze_report(
    sc: &Scenario<'_>,
    base: &ReplayReport,
    opts: &Options,
) -> Result<Analysis, AnalysisError> {
    let Blocks::Flat(t) = sc.trace else {
        return Err(AnalysisError::NoTimeline);
    };
    let cp = critical_path(t, base, sc.net, sc.cfg)?;
    diagnose(sc, base, cp, opts)
}

/// The diagnoses of a replay `base` whose critical path is `cp` (from [`critical_path`] or
/// [`crate::streamed::replay_and_walk`]), each measured by re-simulation.
pub fn diagnose(
    sc: &Scenario<'_>,
    base: &ReplayReport,
    cp: CriticalPath,
    opts: &Options,
) -> Result<Analysis, AnalysisError> {
    diagnose_with(sc, base, cp, opts, &mut sim_core::NoProgress)
}

/// [`diagnose`], reporting each re-simulation to `progress` (a stage per what-if, named
/// after it, then its replay's stages).
pub fn diagnose_with(
    sc: &Scenario<'_>,
    base: &ReplayReport,
    cp: CriticalPath,
    opts: &Options,
    progress: &mut dyn sim_core::Progress,
) -> Result<Analysis, AnalysisError> {
    diagnose_with_early(sc, base, cp, opts, Vec::new(), progress)
}

/// [`diagnose_with`], given re-simulations already run ([`early_what_ifs`], run by
/// [`run_early`] while the base run replayed): those the diagnoses call for are taken as
/// they are, the others dropped. The findings are the same as without them.
pub fn diagnose_with_early(
    sc: &Scenario<'_>,
    base: &ReplayReport,
    cp: CriticalPath,
    opts: &Options,
    early: Vec<(WhatIf, Result<ReplayReport, AnalysisError>)>,
    progress: &mut dyn sim_core::Progress,
) -> Result<Analysis, AnalysisError> {
    let t = sc.trace.body();
    let makespan = base.makespan.as_ps();
    let pes = base.pes;
    let busy = base.busy_total().as_ps();
    let max_busy = base.pe_busy_ps.iter().copied().max().unwrap_or(0);
    let mean_busy = busy / pes.max(1) as u64;
    let mut out = Analysis {
        makespan_ps: makespan,
        pes,
        blocks: base.blocks,
        busy_ps: busy,
        max_pe_busy_ps: max_busy,
        mean_pe_busy_ps: mean_busy,
        average_parallelism: if makespan == 0 {
            0.0
        } else {
            busy as f64 / makespan as f64
        },
        critical_path: cp,
        findings: Vec::new(),
        skipped: Vec::new(),
        limits: Limits {
            work_over_pes_ps: mean_busy,
            one_pe_per_object: None,
            note: None,
        },
    };
    if !opts.resimulate || makespan == 0 {
        return Ok(out);
    }
    let cp = &out.critical_path;
    let pct = |x: u64| 100.0 * x as f64 / makespan as f64;
    let mut cands: Vec<(Diagnosis, String, WhatIf, String)> = Vec::new();
    if pes > 1 && t.objects.len() > 1 {
        cands.push((
            Diagnosis::LoadImbalance,
            format!(
                "the busiest PE works {}, the mean {} (max/mean {:.2})",
                fmt_ps(max_busy),
                fmt_ps(mean_busy),
                max_busy as f64 / mean_busy.max(1) as f64
            ),
            WhatIf::GreedyBalance,
            "objects placed by the greedy load balancer for the whole run".into(),
        ));
    }
    let nt = cp.network.total_ps();
    if !matches!(sc.net, NetSpec::Ideal) && base.messages.remote > 0 {
        cands.push((
            Diagnosis::MessageTimeNotHidden,
            format!(
                "{} of the critical path ({:.1}%) is message time: latency {}, serialisation {}, queueing {}, overheads {} ({} remote messages on the path)",
                fmt_ps(nt),
                pct(nt),
                fmt_ps(cp.network.latency_ps),
                fmt_ps(cp.network.serialization_ps),
                fmt_ps(cp.network.queueing_ps),
                fmt_ps(cp.network.overhead_ps),
                cp.network.remote_messages
            ),
            WhatIf::IdealNetwork,
            "every message free (an ideal network)".into(),
        ));
    }
    let objects = t.objects.len();
    let factor = Ratio::new(opts.speedup.max(1) as u64, 1).unwrap_or(Ratio::ONE);
    if let Some(e) = cp.by_entry.first().filter(|e| e.compute_ps > 0) {
        cands.push((
            Diagnosis::HotEntry,
            format!(
                "entry `{}` is {} of the critical path ({:.1}%, {} blocks)",
                e.name,
                fmt_ps(e.compute_ps),
                pct(e.compute_ps),
                e.blocks
            ),
            WhatIf::Faster(Speedup {
                target: Target::Entry(e.name.clone()),
                factor,
            }),
            format!("entry `{}` {}x faster", e.name, opts.speedup),
        ));
    }
    if objects > 1
        && let Some(o) = cp.by_object.first().filter(|o| o.compute_ps > 0)
    {
        cands.push((
            Diagnosis::BottleneckObject,
            format!(
                "object {} `{}` is {} of the critical path ({:.1}%, {} blocks; {} objects on the path)",
                o.id,
                o.name,
                fmt_ps(o.compute_ps),
                pct(o.compute_ps),
                o.blocks,
                cp.objects_on_path
            ),
            WhatIf::Faster(Speedup {
                target: Target::Object(o.id),
                factor,
            }),
            format!("object {} `{}` {}x faster", o.id, o.name, opts.speedup),
        ));
    }
    let model_oh = without_cpu_overheads(sc.net);
    if sc.cfg.block_overhead > SimDuration::ZERO
        || sc.cfg.local_msg_cost > SimDuration::ZERO
        || model_oh.is_some()
    {
        let work = sc.trace.work_ps();
        let n = sc.trace.len().max(1);
        cands.push((
            Diagnosis::FineGrains,
            format!(
                "mean grain {} against a per-block cost of {} and a local-message cost of {}{}; {} of the critical path ({:.1}%) is CPU overhead",
                fmt_ps(work / n),
                fmt_ps(sc.cfg.block_overhead.as_ps()),
                fmt_ps(sc.cfg.local_msg_cost.as_ps()),
                if model_oh.is_some() {
                    ", plus the network model's CPU overheads"
                } else {
                    ""
                },
                fmt_ps(cp.overhead_ps + cp.network.overhead_ps),
                pct(cp.overhead_ps + cp.network.overhead_ps)
            ),
            WhatIf::NoCpuOverheads {
                net: model_oh.as_ref().unwrap_or(sc.net).to_string(),
            },
            "no per-block, local-message or network CPU overheads (as if grains were merged)"
                .into(),
        ));
    }
    if cp.queued_ps > 0 {
        cands.push((
            Diagnosis::Ordering,
            format!(
                "for {} ({:.1}%) of the critical path a ready path block waited behind other blocks on its PE",
                fmt_ps(cp.queued_ps),
                pct(cp.queued_ps)
            ),
            WhatIf::CriticalPathPriority,
            "ready blocks run longest-chain-ahead first (critical-path priorities)".into(),
        ));
    }
    let bound = (objects as u64 > pes as u64 && objects <= MAX_PES_PER_OBJECT).then_some(
        WhatIf::OnePePerObject {
            pes: objects as u32,
        },
    );
    let n = cands.len() + usize::from(bound.is_some());
    let mut tasks: Vec<(String, WhatIf)> = cands
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("what-if {} of {n} ({}): ", i + 1, c.3), c.2.clone()))
        .collect();
    if let Some(w) = &bound {
        tasks.push((
            format!("what-if {n} of {n} (one PE per object): "),
            w.clone(),
        ));
    }
    let mut results =
        crate::resim::run_all(sc, &tasks, (opts.jobs, base.blocks), early, progress).into_iter();
    for (diagnosis, evidence, what_if, remedy) in cands {
        let r = results
            .next()
            .unwrap_or_else(|| Err(AnalysisError::Internal("a what-if was not run".into())));
        match r {
            Ok(r) => {
                let w = r.makespan.as_ps();
                let saved = makespan as i64 - w as i64;
                out.findings.push(Finding {
                    diagnosis,
                    evidence,
                    what_if,
                    remedy,
                    makespan_ps: makespan,
                    what_if_makespan_ps: w,
                    saved_ps: saved,
                    saved_fraction: saved as f64 / makespan as f64,
                });
            }
            Err(e) => out.skipped.push(Skipped {
                diagnosis,
                why: e.to_string(),
            }),
        }
    }
    if let Some(w) = bound {
        let r = results
            .next()
            .unwrap_or_else(|| Err(AnalysisError::Internal("a what-if was not run".into())));
        match r {
            Ok(r) => {
                out.limits.one_pe_per_object = Some(Bound {
                    what_if: w,
                    makespan_ps: r.makespan.as_ps(),
                })
            }
            Err(e) => out.limits.note = Some(format!("one PE per object: {e}")),
        }
    }
    out.findings.sort_by(|a, b| {
        b.saved_ps
            .cmp(&a.saved_ps)
            .then(a.diagnosis.cmp(&b.diagnosis))
    });
    Ok(out)
}

/// A duration with 4 significant digits and a unit.
pub fn fmt_ps(ps: u64) -> String {
    let s = ps as f64 * 1e-12;
    let (v, u) = if s >= 1.0 {
        (s, "s")
    } else if s >= 1e-3 {
        (s * 1e3, "ms")
    } else if s >= 1e-6 {
        (s * 1e6, "us")
    } else if s >= 1e-9 {
        (s * 1e9, "ns")
    } else {
        return format!("{ps} ps");
    };
    let decimals = if v >= 100.0 {
        1
    } else if v >= 10.0 {
        2
    } else {
        3
    };
    format!("{v:.decimals$} {u}")
}
