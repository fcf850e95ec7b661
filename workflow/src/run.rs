//! A replay and its outputs: the checks a replay makes before it allocates (PE count, memory
//! estimate), the replay itself with progress, and what it writes (the `--out` folder with its
//! views, analysis and report; the timeline, per-PE, link and entry CSVs).
//!
//! [`replay()`] hands the result to a `show` callback as soon as it exists (the command line
//! prints its summary there; the Python package keeps it), then writes the outputs the
//! [`OutputSpec`] asks for. A repeated trace with an output folder and no timeline is
//! replayed twice without its expansion (`analysis::streamed`), as `whatif replay --out` does.

use crate::analyze;
use crate::error::{Ctx, Result, WorkflowError};
use crate::input::whatif_trace;
use crate::machine::{Machine, MachineSpec, cpu_scale_for, machine_config, machine_for, net_for};
use crate::{files, limits, memory, progress};
use network_models::NetSpec;
use replay::{ReplayError, ReplayReport};
use report::summary::RunInfo;
use sim_core::{SimDuration, SimTime};
use std::path::PathBuf;
use std::time::Instant;
use trace::{Repeated, Trace};

/// What a replay writes besides its result. [`Default`]: nothing, quietly.
#[derive(Clone, Debug)]
pub struct OutputSpec {
    /// Write every output into this folder (trace.json, projections/, CSV summaries and
    /// analyses).
    pub out: Option<PathBuf>,
    /// With `out`: also analyse the run and write the HTML report.
    pub report: bool,
    /// With `out`: gzip trace.json and the Projections logs.
    pub compress: bool,
    /// With `out`: the PEs whose blocks trace.json and timeline.csv hold.
    pub trace_pes: analysis::select::PeChoice,
    /// With `out`: only blocks overlapping this window go into trace.json and timeline.csv.
    pub trace_window: Option<(SimTime, SimTime)>,
    /// With `out`: the binned analyses' bin width [default: the makespan over 100].
    pub bin: Option<SimDuration>,
    /// With `out` and automatic PEs: the size trace.json should stay under.
    pub trace_budget: u64,
    /// The predicted timeline (one row per block) as CSV.
    pub timeline: Option<PathBuf>,
    /// Per-PE busy/idle time as CSV.
    pub per_pe: Option<PathBuf>,
    /// Per-link and per-NIC traffic as CSV.
    pub links: Option<PathBuf>,
    /// The network cost per entry method as CSV.
    pub entries: Option<PathBuf>,
    /// No progress, notes or simulator speed on stderr.
    pub quiet: bool,
    /// The command that ran (its arguments after the subcommand), from which the report's
    /// findings build their reproducing commands.
    pub command_args: Vec<String>,
}

impl Default for OutputSpec {
    fn default() -> Self {
        OutputSpec {
            out: None,
            report: false,
            compress: false,
            trace_pes: analysis::select::PeChoice::Auto,
            trace_window: None,
            bin: None,
            trace_budget: 256 << 20,
            timeline: None,
            per_pe: None,
            links: None,
            entries: None,
            quiet: true,
            command_args: Vec::new(),
        }
    }
}

impl OutputSpec {
    /// The output paths, each with the flag that names it.
    pub fn paths(&self) -> Vec<(&'static str, &std::path::Path)> {
        [
            ("--timeline", &self.timeline),
            ("--per-pe", &self.per_pe),
            ("--links", &self.links),
            ("--entries", &self.entries),
            ("--out", &self.out),
        ]
        .into_iter()
        .filter_map(|(f, p)| p.as_deref().map(|p| (f, p)))
        .collect()
    }

    /// Refuses outputs that would overwrite one of `inputs` (the trace's files) or a file
    /// the machine `m` reads (a placement file, a network file, a noise trace).
    pub fn refuse_overwrite(&self, inputs: &[PathBuf], m: &MachineSpec) -> Result<()> {
        let inputs = [inputs.to_vec(), m.files_read()].concat();
        limits::refuse_overwrite(&inputs, &self.paths())
    }

    /// Checks, before any work, that every output can be written (`force`: into a non-empty
    /// folder that is not a whatif output).
    pub fn check_paths(&self, force: bool) -> Result<()> {
        let (dirs, file_outs): (Vec<_>, Vec<_>) =
            self.paths().into_iter().partition(|(f, _)| *f == "--out");
        files::check_outputs(&file_outs, &dirs, force)
    }
}

/// `whatif replay` flags that choose outputs, not the run: dropped from the reproduce
/// commands of the report's analysis.
const REPLAY_OUTPUT_FLAGS: &[(&str, bool)] = &[
    ("--out", true),
    ("--report", false),
    ("--compress", false),
    ("--trace-pes", true),
    ("--trace-window", true),
    ("--trace-budget", true),
    ("--bin", true),
    ("--json", false),
    ("--timeline", true),
    ("--per-pe", true),
    ("--links", true),
    ("--entries", true),
    ("--quiet", false),
    ("-q", false),
];

/// PEs of the critical path (from its end) added to the representatives in the per-block
/// files of `replay --out --report` when those hold only some PEs.
const MAX_PATH_PES: usize = 32;

/// The line an analysis for the report ends with, unless quiet.
fn say_analysed(o: &OutputSpec, an: &analysis::Analysis, t1: Instant) {
    if !o.quiet {
        eprintln!(
            "analysed (critical path, {} re-simulations) in {:.2} s",
            an.findings.len() + an.skipped.len(),
            t1.elapsed().as_secs_f64()
        );
    }
}

/// The summary's description of the machine.
fn run_info<'a>(
    trace: &'a Trace,
    spec: &NetSpec,
    m: &MachineSpec,
    cpu_scale: sim_core::Ratio,
    cfg: &replay::ReplayConfig,
) -> RunInfo<'a> {
    RunInfo {
        trace,
        net: spec.to_string(),
        mapping: m.map.to_string(),
        cpu_scale: cpu_scale.to_string(),
        policy: m.policy_name(),
        seed: m.seed,
        cpu_costs: (
            m.block_overhead.as_ps(),
            m.local_msg_cost.as_ps(),
            cfg.noise.to_string(),
        ),
    }
}

/// Replays `input` on the machine `m` describes and writes what `o` asks for. `show` gets the
/// machine's description and the result as soon as the replay ends (before the outputs are
/// written). Returns the result.
///
/// Errors: [`WorkflowError::Invalid`] for a machine or an output that cannot be (too many
/// PEs, a memory estimate above the limit, an output path that would overwrite an input);
/// [`WorkflowError::NotFinished`] when the replay gets stuck or hits a run limit; the
/// underlying error for the rest.
pub fn replay(
    input: Repeated,
    m: &MachineSpec,
    o: &OutputSpec,
    show: &mut dyn FnMut(&RunInfo<'_>, &ReplayReport) -> Result<()>,
) -> Result<ReplayReport> {
    let input = whatif_trace(input, m)?;
    if o.out.is_some() && o.timeline.is_none() && !input.is_flat() {
        return replay_out_streamed(&input, m, o, show);
    }
    // Outputs that describe every block need every block.
    let per_block = o.timeline.is_some() || o.out.is_some();
    let spec = net_for(input.body(), m)?;
    let cpu_scale = cpu_scale_for(input.body(), m)?;
    let cfg = machine_config(m, input.body(), cpu_scale, per_block)?;
    let pes = cfg.pes.unwrap_or(input.body().meta.recorded_pes);
    let objects = input.body().objects.len();
    limits::check_pes(pes as u64, objects as u64, m.force)?;
    let report = o.out.is_some() && o.report;
    let (jobs, est) = memory::what_if_jobs(None, cfg.limits.max_memory_bytes, |j| {
        memory::replay_estimate(&input, &spec, &cfg, per_block, report, j)
    })?;
    memory::settle(&est, cfg.limits.max_memory_bytes, o.quiet)?;
    let input = if per_block && !input.is_flat() {
        Repeated::flat(input.expand())
    } else {
        input
    };
    if !o.quiet
        && let Ok(mut on) = cfg.mapping.resolve(input.body(), pes)
    {
        on.sort_unstable();
        on.dedup();
        if let Some(w) = limits::idle_warning(pes, on.len(), objects, &m.map.to_string()) {
            eprintln!("{w}");
        }
        if let Some(w) =
            limits::priority_warning(input.body(), m.priority && !m.critical_path_priority)
        {
            eprintln!("{w}");
        }
    }
    let mut net = spec.build();
    let t0 = Instant::now();
    let mut progress = progress::Reporter::new(o.quiet);
    let prepared = replay::Prepared::new_with(&input, net.as_mut(), &cfg, &mut progress);
    let plan_s = t0.elapsed().as_secs_f64();
    // Once planned, the replay needs no block of the trace: keep its header for the report
    // (and its blocks for per-block outputs).
    let trace = if per_block {
        input.into_body()
    } else {
        input.into_body().without_blocks()
    };
    let trace = &trace;
    let result =
        prepared.and_then(|p| p.run_with(net.as_mut(), &mut progress).map(|r| (r, plan_s)));
    progress.done();
    memory::checkpoint("the replay");
    let wall = t0.elapsed().as_secs_f64();
    let (r, plan_s) = match result {
        Ok(r) => r,
        Err(e @ ReplayError::Stuck(_)) | Err(e @ ReplayError::Sched(_)) => {
            return Err(WorkflowError::NotFinished {
                trace: trace.meta.name.clone(),
                source: e,
            });
        }
        Err(e) => return Err(e.into()),
    };
    if !o.quiet {
        let loop_s = wall - plan_s;
        eprintln!(
            "replayed {} events, {} messages in {wall:.3} s (plan {plan_s:.3} s, event loop {loop_s:.3} s: {}, {})",
            r.events,
            r.messages.total(),
            progress::rate(r.events as f64, loop_s, "events"),
            progress::rate(r.messages.total() as f64, loop_s, "messages")
        );
    }
    let info = run_info(trace, &spec, m, cpu_scale, &cfg);
    show(&info, &r)?;
    if let Some(p) = &o.timeline {
        report::summary::write_timeline(p, trace, &r)?;
    }
    if let Some(dir) = &o.out {
        let t0 = Instant::now();
        let staged = files::begin_dir(dir, m.force)?;
        let views = report::views::of(trace, &r, &spec, o.bin.map_or(0, |d| d.as_ps()))?;
        memory::checkpoint("the views");
        let reps = views.clusters.representatives();
        // The analysis (critical path, re-simulated diagnoses) for the report's "why"; the
        // PEs of the critical path join the representatives in the per-block files, so the
        // report's windows around path blocks have their blocks.
        let analysed = if o.report {
            let t1 = Instant::now();
            let sc = analysis::Scenario {
                trace: analysis::Blocks::Flat(trace),
                net: &spec,
                cfg: &cfg,
                seed: m.seed,
            };
            let an = analysis::analyze_report(
                &sc,
                &r,
                &analysis::Options {
                    jobs,
                    ..Default::default()
                },
            )
            .ctx(|| "analysis for the report")?;
            memory::checkpoint("the analysis");
            say_analysed(o, &an, t1);
            Some(an)
        } else {
            None
        };
        let mut shown = reps.clone();
        if let Some(an) = &analysed {
            let mut path_pes: Vec<u32> = Vec::new();
            for st in an.critical_path.steps.iter().rev() {
                if path_pes.len() == MAX_PATH_PES {
                    break;
                }
                if !path_pes.contains(&st.pe) {
                    path_pes.push(st.pe);
                }
            }
            shown.extend(path_pes);
            shown.sort_unstable();
            shown.dedup();
        }
        let notes = report::outputs::write_all(
            staged.path(),
            &info,
            &r,
            report::outputs::Options {
                cpu_scale,
                force: m.force,
                compress: o.compress,
                representatives: &reps,
                shown_pes: &shown,
                trace_pes: &o.trace_pes,
                trace_window_ps: o.trace_window.map(|(a, b)| (a.as_ps(), b.as_ps())),
                trace_budget_bytes: o.trace_budget,
                partial: None,
            },
        )
        .ctx(|| format!("cannot write the outputs in {}", dir.display()))?;
        finish_out(
            staged,
            dir,
            Some(&views),
            analysed.as_ref(),
            trace,
            &spec,
            notes,
            o,
            t0,
        )
        .ctx(|| format!("cannot write the outputs in {}", dir.display()))?;
    }
    write_side_files(o, &r, trace)?;
    Ok(r)
}

/// `replay --out` of a repeated trace without its timeline or its expansion: two replays
/// (`analysis::streamed`): the first keeps the bindings and the totals the selection needs
/// (per entry; PE x entry for the representatives); the second feeds the views and keeps
/// the runs of the PEs the per-block files show (all PEs when trace.json fits its budget,
/// else the representatives and the critical path's PEs, and every PE's for projections/
/// up to its limit). The per-block files are written from the trace of those blocks only
/// (`Repeated::subset`), with each block's id in the whole run.
fn replay_out_streamed(
    input: &Repeated,
    m: &MachineSpec,
    o: &OutputSpec,
    show: &mut dyn FnMut(&RunInfo<'_>, &ReplayReport) -> Result<()>,
) -> Result<ReplayReport> {
    let dir = o.out.as_ref().ctx(|| "--out")?;
    let body = input.body();
    let Machine {
        spec,
        cpu_scale,
        cfg,
        pes,
        map,
    } = machine_for(body, m)?;
    let objects = body.objects.len();
    if !o.quiet {
        let mut on = map.clone();
        on.sort_unstable();
        on.dedup();
        if let Some(w) = limits::idle_warning(pes, on.len(), objects, &m.map.to_string()) {
            eprintln!("{w}");
        }
        if let Some(w) = limits::priority_warning(body, m.priority && !m.critical_path_priority) {
            eprintln!("{w}");
        }
    }
    let g = analysis::Blocks::Repeated(input);
    let feed = analysis::feed::Feed::new(g, analysis::feed::PeOf::Object(map.clone()));
    let bin_ps = o.bin.map_or(0, |d| d.as_ps());
    let all_bytes = analysis::select::all_bytes(g);
    let all_projections = pes <= report::outputs::MAX_PROJECTIONS_PES || m.force;
    let every = match &o.trace_pes {
        analysis::select::PeChoice::All => true,
        analysis::select::PeChoice::Auto => all_bytes <= o.trace_budget,
        _ => false,
    };
    let jobs = {
        // The kept PEs: all, or the representatives, the path's and the listed ones.
        let kept_pes = if every || all_projections {
            pes as u64
        } else {
            let listed = match &o.trace_pes {
                analysis::select::PeChoice::List(v) => v.len(),
                _ => 0,
            };
            (report::views::REPRESENTATIVES + MAX_PATH_PES + listed).min(pes as usize) as u64
        };
        let shown_pes = if every {
            pes as u64
        } else {
            kept_pes.min((report::views::REPRESENTATIVES + MAX_PATH_PES) as u64)
        };
        let (jobs, est) = memory::what_if_jobs(None, cfg.limits.max_memory_bytes, |j| {
            memory::replay_out_estimate(input, &spec, &cfg, (pes, kept_pes, shown_pes), o.report, j)
        })?;
        if let Some(limit) = cfg.limits.max_memory_bytes
            && est.bytes() > limit
            && kept_pes == pes as u64
            && kept_pes > (report::views::REPRESENTATIVES + MAX_PATH_PES) as u64
        {
            return Err(WorkflowError::Invalid(format!(
                "writing every PE's blocks (for {}) needs {}, above the memory limit of {}: --trace-pes representatives keeps the representative PEs' only{}, or raise the limit with --max-memory",
                if every {
                    "trace.json and timeline.csv"
                } else {
                    "projections/"
                },
                est.describe(),
                replay::footprint::human_bytes(limit),
                if all_projections && pes > report::outputs::MAX_PROJECTIONS_PES {
                    " (and without --force, projections/ too)"
                } else {
                    ""
                }
            )));
        }
        memory::settle(&est, cfg.limits.max_memory_bytes, o.quiet)?;
        jobs
    };
    let t0 = Instant::now();
    let mut progress = progress::Reporter::new(o.quiet);
    let mut first = analysis::allviews::RunTotals::new(&feed, Some(pes))?;
    let mut reps = Vec::new();
    let mut shown = Vec::new();
    let sc = analysis::Scenario {
        trace: g,
        net: &spec,
        cfg: &cfg,
        seed: m.seed,
    };
    // With --report, the what-ifs that do not need the base run start on another core
    // meanwhile.
    let early = if o.report && jobs > 1 {
        analysis::early_what_ifs(&sc)
    } else {
        Vec::new()
    };
    let (walked, early) = analysis::with_early(&sc, early, || {
        analysis::streamed::replay_and_walk(
            g,
            &spec,
            &cfg,
            &mut progress,
            &mut first,
            |r, f, path| {
                reps = f
                    .clusters(report::views::CLUSTERS, report::views::REPRESENTATIVES)?
                    .representatives();
                // The critical path's PEs (from its end), as the flat path shows them.
                let mut path_pes: Vec<u32> = Vec::new();
                if o.report {
                    let mut by_end: Vec<u32> = path.to_vec();
                    by_end.sort_unstable_by(|a, b| b.cmp(a));
                    for b in by_end {
                        if path_pes.len() == MAX_PATH_PES {
                            break;
                        }
                        let obj =
                            body.columns().object[(b % body.num_blocks().max(1) as u32) as usize];
                        let pe = map[obj as usize];
                        if !path_pes.contains(&pe) {
                            path_pes.push(pe);
                        }
                    }
                }
                shown = reps.clone();
                shown.extend(path_pes);
                shown.sort_unstable();
                shown.dedup();
                let keep = if every {
                    None
                } else {
                    let mut k = vec![all_projections; pes as usize];
                    let listed: &[u32] = match &o.trace_pes {
                        analysis::select::PeChoice::List(v) => v,
                        _ => &[],
                    };
                    for &p in shown.iter().chain(listed) {
                        if let Some(x) = k.get_mut(p as usize) {
                            *x = true;
                        }
                    }
                    Some(k)
                };
                // The kept PEs' blocks: every iteration places its blocks the same way.
                let expected = match &keep {
                    None => input.num_blocks() as usize,
                    Some(k) => {
                        body.columns()
                            .object
                            .iter()
                            .filter(|&&o| k[map[o as usize] as usize])
                            .count()
                            * input.reps() as usize
                    }
                };
                // Messages into the kept PEs from the others (the logs name their senders).
                let senders = keep
                    .as_ref()
                    .filter(|k| k.contains(&false))
                    .map(|k| analysis::allviews::Senders::new(&feed, k.clone()));
                Ok(analysis::allviews::Both(
                    analysis::allviews::ViewsSink::new(
                        &feed,
                        r.pes,
                        r.makespan.as_ps(),
                        &f.totals,
                        &spec,
                        report::views::options(bin_ps),
                    )?,
                    analysis::allviews::Both(
                        analysis::allviews::KeepPes::new(keep, expected),
                        senders,
                    ),
                ))
            },
        )
    });
    let walked = walked.ctx(|| format!("replay of `{}`", body.meta.name))?;
    let (walked, analysis::allviews::Both(views_sink, analysis::allviews::Both(kept, senders))) =
        walked;
    let replay_s = t0.elapsed().as_secs_f64();
    memory::checkpoint("the two replays");
    let r = walked.report;
    let views = views_sink.finish(&r.pe_busy_ps)?;
    let info = run_info(body, &spec, m, cpu_scale, &cfg);
    // The kept blocks as a trace of their own, the runs renumbered to it.
    let mut runs = kept.runs;
    let mut senders = senders.map(|s| s.into_kept).unwrap_or_default();
    senders.sort_unstable_by_key(|x| x.0);
    let mut ids: Vec<u32> = runs.iter().map(|x| x.block).collect();
    ids.sort_unstable();
    ids.dedup();
    let sub = input.subset(&ids);
    memory::checkpoint("the kept blocks' trace");
    for x in &mut runs {
        x.block = ids.binary_search(&x.block).map_or(u32::MAX, |i| i as u32);
    }
    let t2 = Instant::now();
    let staged = files::begin_dir(dir, m.force)?;
    let mut rs = r.clone();
    rs.timeline = Some(runs);
    let sub_info = report::summary::RunInfo {
        trace: &sub,
        ..info.clone()
    };
    // The per-block outputs and the views do not depend on the analysis: written on
    // another core while the re-simulations run.
    let (analysed, notes) = std::thread::scope(|s| {
        let writer = s.spawn(|| {
            report::outputs::write_all(
                staged.path(),
                &sub_info,
                &rs,
                report::outputs::Options {
                    cpu_scale,
                    force: m.force,
                    compress: o.compress,
                    representatives: &reps,
                    shown_pes: &shown,
                    trace_pes: &o.trace_pes,
                    trace_window_ps: o.trace_window.map(|(a, b)| (a.as_ps(), b.as_ps())),
                    trace_budget_bytes: o.trace_budget,
                    partial: Some(report::outputs::Partial {
                        all_bytes,
                        block_ids: &ids,
                        entry_blocks: &first.blocks,
                        entry_busy_ps: &first.totals,
                        entry_max_ps: &first.max_ps,
                        senders: &senders,
                    }),
                },
            )
            .and_then(|notes| {
                report::views::write(&views, staged.path(), body)?;
                memory::checkpoint("outputs: the views");
                Ok(notes)
            })
        });
        let analysed = (|| -> Result<Option<analysis::Analysis>> {
            Ok(if o.report {
                let t1 = Instant::now();
                let an = analysis::diagnose_with_early(
                    &sc,
                    &r,
                    walked.critical_path,
                    &analysis::Options {
                        jobs,
                        ..Default::default()
                    },
                    early,
                    &mut progress,
                )
                .ctx(|| "analysis for the report")?;
                progress.done();
                memory::checkpoint("the analysis");
                say_analysed(o, &an, t1);
                Some(an)
            } else {
                progress.done();
                None
            })
        })();
        let notes = writer
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (analysed, notes)
    });
    let analysed = analysed?;
    let notes = notes.ctx(|| format!("cannot write the outputs in {}", dir.display()))?;
    if !o.quiet {
        eprintln!(
            "replayed {} events, {} messages twice (the bindings, then the critical path's runs and the views) in {replay_s:.3} s: {}",
            r.events,
            r.messages.total(),
            progress::rate(2.0 * r.events as f64, replay_s, "events")
        );
    }
    show(&info, &r)?;
    finish_out(
        staged,
        dir,
        None,
        analysed.as_ref(),
        body,
        &spec,
        notes,
        o,
        t2,
    )
    .ctx(|| format!("cannot write the outputs in {}", dir.display()))?;
    write_side_files(o, &r, body)?;
    Ok(r)
}

/// The end of `replay --out`: the views, the analysis and the report into the staged folder,
/// put in place; what was left out and where it went, on stderr.
#[allow(clippy::too_many_arguments)]
fn finish_out(
    staged: safe_output::OutputDir,
    dir: &std::path::Path,
    views: Option<&report::views::Views>,
    analysed: Option<&analysis::Analysis>,
    trace: &Trace,
    spec: &NetSpec,
    notes: Vec<String>,
    o: &OutputSpec,
    t0: Instant,
) -> Result<()> {
    if let Some(views) = views {
        report::views::write(views, staged.path(), trace)?;
        memory::checkpoint("outputs: the views");
    }
    if let Some(an) = analysed {
        let base = analyze::strip(&o.command_args, REPLAY_OUTPUT_FLAGS);
        analyze::write_outputs(staged.path(), an, trace, &spec.to_string(), &base)?;
        report::html::write_titled(staged.path(), None, dir)?;
        memory::checkpoint("outputs: the report");
    }
    files::finish_dir(staged)?;
    if !o.quiet {
        for n in notes {
            eprintln!("{n}");
        }
        if o.report {
            eprintln!("wrote {}", dir.join("report.html").display());
        }
        eprintln!(
            "wrote {} ({}, projections/, CSV summaries and analyses) in {:.2} s",
            dir.display(),
            if o.compress {
                "trace.json.gz"
            } else {
                "trace.json"
            },
            t0.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// `--per-pe`, `--links` and `--entries`.
fn write_side_files(o: &OutputSpec, r: &replay::ReplayReport, trace: &Trace) -> Result<()> {
    if let Some(p) = &o.per_pe {
        report::summary::write_per_pe(p, r)?;
    }
    if let Some(p) = &o.links {
        report::summary::write_links(p, r)?;
    }
    if let Some(p) = &o.entries {
        report::summary::write_entries(p, trace, r)?;
    }
    Ok(())
}
