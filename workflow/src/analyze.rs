//! The analysis of a run ([`analyze`]: critical path, re-simulated diagnoses, views) and its
//! files: `analysis.json` (with each finding's reproducing command) and
//! `critical_path.csv`, and the baseline replay an analysis starts from.

use crate::error::{Ctx, Result};
use crate::limits;
use crate::machine::{Machine, MachineSpec, cpu_scale_for, machine_config, machine_for, net_for};
use crate::{files, memory, progress};
use analysis::{Analysis, Edge, Options, Scenario, WhatIf};
use std::path::Path;
use trace::Trace;

/// A trace's replay on a machine, with its timeline: what the flat analyses start from.
#[derive(Debug)]
pub struct Baseline {
    /// The network model.
    pub spec: network_models::NetSpec,
    /// The replay configuration (with a timeline).
    pub cfg: replay::ReplayConfig,
    /// The replay's result.
    pub report: replay::ReplayReport,
}

/// Replays `trace` on the machine `m` describes, with a timeline (PE count checked).
pub fn baseline(trace: &Trace, m: &MachineSpec) -> Result<Baseline> {
    let spec = net_for(trace, m)?;
    let cpu = cpu_scale_for(trace, m)?;
    let cfg = machine_config(m, trace, cpu, true)?;
    let pes = cfg.pes.unwrap_or(trace.meta.recorded_pes);
    limits::check_pes(pes as u64, trace.objects.len() as u64, m.force)?;
    let mut net = spec.build();
    let report = replay::replay(trace, net.as_mut(), &cfg)
        .ctx(|| format!("replay of `{}`", trace.meta.name))?;
    Ok(Baseline { spec, cfg, report })
}

/// What an analysis computes besides the machine: re-simulations or only the critical path,
/// the what-ifs' speed-up factor, threads, the views' bin width.
#[derive(Clone, Debug)]
pub struct AnalyzeSpec {
    /// Re-simulate the what-ifs (else only the critical path).
    pub resimulate: bool,
    /// How much faster the hot entry and the bottleneck object are made in their what-ifs.
    pub factor: u32,
    /// Re-simulations at once [default: this computer's cores (at most 4), fewer if the
    /// memory limit cannot hold them].
    pub jobs: Option<usize>,
    /// The binned views' bin width [default: the makespan over 100].
    pub bin: Option<sim_core::SimDuration>,
    /// No progress on stderr.
    pub quiet: bool,
}

impl Default for AnalyzeSpec {
    fn default() -> Self {
        AnalyzeSpec {
            resimulate: true,
            factor: 2,
            jobs: None,
            bin: None,
            quiet: true,
        }
    }
}

/// An analysis's result: the analysis (critical path, diagnoses), the views of the run
/// (profiles, clusters, ...) and the network model it ran on.
#[derive(Debug)]
pub struct Analysed {
    /// The critical path and the re-simulated diagnoses.
    pub analysis: Analysis,
    /// Projections' and Rover's views of the base run.
    pub views: report::views::Views,
    /// The network model.
    pub spec: network_models::NetSpec,
}

/// Analyses `input` on the machine `m` describes (as `whatif analyze` does): a flat trace
/// from its timeline, a repeated one in two replays without its expansion; then the
/// re-simulations. The memory estimate is checked first.
pub fn analyze(input: &trace::Repeated, m: &MachineSpec, a: &AnalyzeSpec) -> Result<Analysed> {
    let jobs = {
        let Machine { spec, cfg, pes, .. } = machine_for(input.body(), m)?;
        let (j, est) = memory::what_if_jobs(a.jobs, cfg.limits.max_memory_bytes, |j| {
            memory::analyze_estimate(input, &spec, &cfg, pes, j)
        })?;
        memory::settle(&est, cfg.limits.max_memory_bytes, a.quiet)?;
        j
    };
    let opts = Options {
        resimulate: a.resimulate,
        speedup: a.factor,
        jobs,
    };
    let bin_ps = a.bin.map_or(0, |d| d.as_ps());
    let (an, views, spec) = if input.is_flat() {
        let trace = input.body();
        let Baseline {
            spec,
            cfg,
            report: base_run,
        } = baseline(trace, m)?;
        let sc = Scenario {
            trace: analysis::Blocks::Flat(trace),
            net: &spec,
            cfg: &cfg,
            seed: m.seed,
        };
        let an = analysis::analyze_report(&sc, &base_run, &opts)
            .ctx(|| format!("analysis of `{}`", trace.meta.name))?;
        memory::checkpoint("the analysis");
        let views = report::views::of(trace, &base_run, &spec, bin_ps)?;
        memory::checkpoint("the views");
        (an, views, spec)
    } else {
        streamed(input, m, &opts, bin_ps, a.quiet)?
    };
    Ok(Analysed {
        analysis: an,
        views,
        spec,
    })
}

/// The analysis of a repeated trace without its timeline or its expansion: two replays
/// (`analysis::streamed`: the bindings, then the path's runs and the views, one run at a
/// time), then the re-simulations on the compact trace. Memory: the replay's, plus 5 bytes
/// per block during the first replay.
fn streamed(
    input: &trace::Repeated,
    m: &MachineSpec,
    opts: &Options,
    bin_ps: u64,
    quiet: bool,
) -> Result<(Analysis, report::views::Views, network_models::NetSpec)> {
    let body = input.body();
    let Machine { spec, cfg, map, .. } = machine_for(body, m)?;
    let g = analysis::Blocks::Repeated(input);
    let feed = analysis::feed::Feed::new(g, analysis::feed::PeOf::Object(map));
    let mut progress = progress::Reporter::new(quiet);
    let mut busy = analysis::allviews::RunTotals::new(&feed, None)?;
    let sc = Scenario {
        trace: g,
        net: &spec,
        cfg: &cfg,
        seed: m.seed,
    };
    // The what-ifs that do not need the base run start on another core meanwhile.
    let early = if opts.resimulate && opts.jobs > 1 {
        analysis::early_what_ifs(&sc)
    } else {
        Vec::new()
    };
    let (walked, early) = analysis::with_early(&sc, early, || {
        analysis::streamed::replay_and_walk(g, &spec, &cfg, &mut progress, &mut busy, |r, b, _| {
            analysis::allviews::ViewsSink::new(
                &feed,
                r.pes,
                r.makespan.as_ps(),
                &b.totals,
                &spec,
                report::views::options(bin_ps),
            )
        })
    });
    let (walked, sink) = walked.ctx(|| format!("replay of `{}`", body.meta.name))?;
    memory::checkpoint("the two replays");
    let views = sink.finish(&walked.report.pe_busy_ps)?;
    memory::checkpoint("the views");
    let an = analysis::diagnose_with_early(
        &sc,
        &walked.report,
        walked.critical_path,
        opts,
        early,
        &mut progress,
    )
    .ctx(|| format!("analysis of `{}`", body.meta.name))?;
    progress.done();
    memory::checkpoint("the re-simulations");
    Ok((an, views, spec))
}

/// The analysis as JSON, with the network, the trace's name and each finding's command
/// (`base`: the analysed command's trace and replay arguments, without `whatif` and the
/// subcommand).
pub fn to_json(
    an: &Analysis,
    trace: &Trace,
    net: &str,
    base: &[String],
) -> Result<serde_json::Value> {
    let mut v = serde_json::to_value(an)?;
    v["network"] = serde_json::Value::String(net.to_string());
    v["trace"] = serde_json::Value::String(trace.meta.name.clone());
    if let Some(fs) = v["findings"].as_array_mut() {
        for (f, x) in fs.iter_mut().zip(&an.findings) {
            f["command"] = serde_json::Value::String(command(base, &x.what_if));
        }
    }
    if let Some(b) = &an.limits.one_pe_per_object {
        v["limits"]["one_pe_per_object"]["command"] =
            serde_json::Value::String(command(base, &b.what_if));
    }
    Ok(v)
}

/// Writes `analysis.json` and `critical_path.csv` (one row per path block, first to last)
/// into `dir`.
pub fn write_outputs(
    dir: &Path,
    an: &Analysis,
    trace: &Trace,
    net: &str,
    base: &[String],
) -> Result<()> {
    let v = to_json(an, trace, net, base)?;
    files::write_text(
        &dir.join("analysis.json"),
        &(serde_json::to_string_pretty(&v)? + "\n"),
    )?;
    let mut w = files::csv_file(&dir.join("critical_path.csv"))?;
    w.write_record([
        "block",
        "entry",
        "object",
        "pe",
        "start_ps",
        "end_ps",
        "compute_ps",
        "overhead_ps",
        "queued_ps",
        "idle_before_ps",
        "bound_by",
        "from_block",
        "message_bytes",
        "net_overhead_ps",
        "net_latency_ps",
        "net_serialization_ps",
        "net_queueing_ps",
    ])?;
    for s in &an.critical_path.steps {
        let (kind, from, msg) = match &s.edge {
            Edge::Start => ("start", None, None),
            Edge::Message {
                from,
                bytes,
                overhead_ps,
                latency_ps,
                serialization_ps,
                queueing_ps,
                remote,
                ..
            } => (
                if *remote {
                    "remote_message"
                } else {
                    "local_message"
                },
                Some(*from),
                Some((
                    *bytes,
                    *overhead_ps,
                    *latency_ps,
                    *serialization_ps,
                    *queueing_ps,
                )),
            ),
            Edge::Dependency { from } => ("dependency", Some(*from), None),
            Edge::ObjectOrder { from } => ("object_order", Some(*from), None),
            Edge::RecordedOrder { from } => ("recorded_order", Some(*from), None),
            Edge::Pe { from, .. } => ("pe_busy", Some(*from), None),
        };
        let opt = |x: Option<u64>| x.map_or(String::new(), |v| v.to_string());
        w.write_record([
            s.block.to_string(),
            trace
                .entries
                .get(s.entry as usize)
                .map_or(String::new(), |e| e.name.clone()),
            s.object.to_string(),
            s.pe.to_string(),
            s.start_ps.to_string(),
            s.end_ps.to_string(),
            s.compute_ps.to_string(),
            s.overhead_ps.to_string(),
            s.queued_ps.to_string(),
            s.idle_before_ps.to_string(),
            kind.to_string(),
            opt(from.map(u64::from)),
            opt(msg.map(|m| m.0)),
            opt(msg.map(|m| m.1)),
            opt(msg.map(|m| m.2)),
            opt(msg.map(|m| m.3)),
            opt(msg.map(|m| m.4)),
        ])?;
    }
    Ok(files::commit_csv(w)?)
}

/// `args` without the flags in `drop` (`(flag, takes a value)`), in either `--f v` or `--f=v`
/// form.
pub fn strip(args: &[String], drop: &[(&str, bool)]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let hit = drop.iter().find(|(f, _)| {
            a == f || (a.starts_with(f) && a[f.len()..].starts_with('=') && f.starts_with("--"))
        });
        match hit {
            Some((f, true)) if a == f => i += 2,
            Some(_) => i += 1,
            None => {
                out.push(a.clone());
                i += 1;
            }
        }
    }
    out
}

/// A shell word.
fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:=,+@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The command that reproduces a what-if, from the analysis's own arguments (`base`: the
/// trace and replay flags).
pub fn command(base: &[String], w: &WhatIf) -> String {
    let (sub, drop, add): (&str, Vec<(&str, bool)>, Vec<String>) = match w {
        WhatIf::GreedyBalance => (
            "lb",
            vec![],
            vec![
                "--strategies".into(),
                "greedy".into(),
                "--at".into(),
                "start".into(),
            ],
        ),
        WhatIf::IdealNetwork => (
            "replay",
            vec![("--net", true), ("--net-file", true)],
            vec!["--net".into(), "ideal".into()],
        ),
        WhatIf::OnePePerObject { .. } => (
            "replay",
            vec![("--pes", true), ("--map", true)],
            vec!["--pes".into(), "objects".into()],
        ),
        WhatIf::Faster(s) => ("replay", vec![], vec!["--speedup".into(), s.to_string()]),
        WhatIf::NoCpuOverheads { net } => (
            "replay",
            vec![
                ("--block-overhead", true),
                ("--local-msg-cost", true),
                ("--net", true),
                ("--net-file", true),
            ],
            vec!["--net".into(), net.clone()],
        ),
        WhatIf::CriticalPathPriority => (
            "replay",
            vec![("--priority", false)],
            vec!["--critical-path-priority".into()],
        ),
    };
    let mut words = vec!["whatif".to_string(), sub.to_string()];
    words.extend(strip(base, &drop));
    words.extend(add);
    let shown: Vec<String> = words.iter().map(|w| quote(w)).collect();
    let tail = if sub == "lb" {
        "   (column makespan_s)"
    } else {
        ""
    };
    format!("{}{tail}", shown.join(" "))
}
