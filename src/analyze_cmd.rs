//! `whatif analyze`: why a predicted run takes as long as it does (the `analysis` crate),
//! with a command that reproduces each finding's re-simulation.

use crate::{ImportOpts, MachineArgs, cpu_scale_for, machine_config, net_for};
use analysis::{Analysis, Edge, Options, Scenario, WhatIf, fmt_ps};
use anyhow::{Context, Result};
use clap::Args;
use std::fmt::Write as _;
use std::path::PathBuf;
use trace::Trace;

/// Help shown after the options: what it prints, examples, then the network models.
pub(crate) fn analyze_help() -> String {
    format!("{ANALYZE_HELP}\n\n{}", network_models::NET_HELP)
}

const ANALYZE_HELP: &str = "\
What it prints:
  critical path   the chain of blocks, messages and waits that ends with the last block, its
                  length (= the makespan) split into compute per entry method, CPU overheads,
                  network time (overhead before departure, latency = a lone zero-byte message,
                  serialisation = the extra time of its bytes alone, queueing = the rest),
                  and idle gaps. The parts sum to the makespan exactly. A block that waited
                  for its PE puts the blocks its PE ran before it on the path (their compute
                  is what it waited for); `queued` says how much of that compute ran while
                  a path block was ready behind it (what another order could move).
  diagnoses       load imbalance, message time not hidden, a hot entry method, a bottleneck
                  object, fine grains, ordering; each re-simulated with its cause removed
                  (greedy balancing, an ideal network, the entry or object 2x faster, no CPU
                  overheads, critical-path priorities) and ranked by the time it saves. Each
                  comes with the command that reproduces it.
  limits          all work spread evenly over the PEs, and the makespan with each object on
                  its own PE (re-simulated): what more PEs could give.

Examples:
  whatif emulate simple-imbalance --pes 8 --out si.trace
  whatif analyze si.trace
  whatif analyze si.trace --net latency:lat=20us --json
  whatif analyze ../shared/data/bigsim-jacobi2d/traceJ0/bgTrace --format bgtrace \\
      --net alphabeta:lat=5us,bw=1GB/s";

#[derive(Args)]
pub(crate) struct AnalyzeArgs {
    /// Trace file (binary or JSON lines), or with --format a foreign trace.
    trace: PathBuf,
    /// Read the input as this foreign format (as `whatif import` does).
    #[arg(long, value_parser = crate::parse_format)]
    format: Option<importers::Format>,
    #[command(flatten)]
    import: ImportOpts,
    #[command(flatten)]
    machine: MachineArgs,
    /// Print the analysis as one JSON object (every path step included).
    #[arg(long)]
    json: bool,
    /// Only the critical path: no re-simulated diagnoses.
    #[arg(long)]
    no_resim: bool,
    /// How much faster the hot entry method and the bottleneck object are made in their
    /// what-ifs.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(2..=1000))]
    factor: u32,
    /// Re-simulations run at once, one thread each; the findings do not depend on it
    /// [default: this computer's cores, fewer if the memory limit cannot hold them].
    #[arg(long, value_name = "N", value_parser = crate::sweep_cmd::parse_jobs)]
    jobs: Option<usize>,
    /// Path steps to list in the human output (the longest ones).
    #[arg(long, default_value_t = 8)]
    steps: usize,
    /// Time-bin width of the time profile and communication CSVs (--out), e.g. 10us
    /// [default: the makespan over 100].
    #[arg(long, value_parser = crate::parse_duration)]
    bin: Option<sim_core::SimDuration>,
    /// Also write analysis.json (everything --json prints) and critical_path.csv (one row
    /// per path block: its run, how its start was bound, the message's parts) into this folder,
    /// with Projections' analyses as data: time_profile.csv (busy time per bin and entry),
    /// usage.csv (per PE and entry), communication.csv (messages and bytes sent per bin),
    /// grain_sizes.csv (blocks per entry in power-of-two duration bins), extrema.csv (the
    /// PEs that stand out by busy time, messages and bytes sent), metrics.csv (Rover's
    /// utilisation, balance, grain, busy time per byte and channel utilisation per bin),
    /// snapshots.csv (utilisation per PE in 6 slices), clusters.csv (k-means of the PEs by
    /// busy time per entry: cluster, exemplar / outlier / member), comm_matrix.csv (bytes by
    /// PE pair, PEs grouped beyond 64) and message_sizes.csv (power-of-two bins).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// No progress or notes on stderr.
    #[arg(long, short)]
    quiet: bool,
}

/// Flags of `whatif analyze` itself: `(flag, takes a value)`; the rest are the replay's.
const OWN_FLAGS: &[(&str, bool)] = &[
    ("--json", false),
    ("--no-resim", false),
    ("--factor", true),
    ("--steps", true),
    ("--out", true),
    ("--bin", true),
    ("--jobs", true),
    ("--quiet", false),
    ("-q", false),
];

/// A trace's replay on the machine the flags describe, with its timeline: what the analyses
/// start from.
pub(crate) struct Baseline {
    pub spec: network_models::NetSpec,
    pub cfg: replay::ReplayConfig,
    pub report: replay::ReplayReport,
}

/// Replays `trace` on the machine `m` describes, with a timeline (PE count checked).
pub(crate) fn baseline(trace: &Trace, m: &MachineArgs) -> Result<Baseline> {
    let spec = net_for(trace, m)?;
    let cpu = cpu_scale_for(trace, m)?;
    let cfg = machine_config(m, trace, cpu, true)?;
    let pes = cfg.pes.unwrap_or(trace.meta.recorded_pes);
    crate::limits::check_pes(pes as u64, trace.objects.len() as u64, m.force)?;
    let mut net = spec.build();
    let report = replay::replay(trace, net.as_mut(), &cfg)
        .with_context(|| format!("replay of `{}`", trace.meta.name))?;
    Ok(Baseline { spec, cfg, report })
}

pub(crate) fn analyze(a: AnalyzeArgs) -> Result<()> {
    if let Some(dir) = &a.out {
        let inputs = [vec![a.trace.clone()], a.machine.files_read()].concat();
        crate::limits::refuse_overwrite(&inputs, &[("--out", dir)])?;
        crate::files::check_outputs(&[], &[("--out", dir)], a.machine.force)?;
    }
    let input = crate::whatif_trace(
        crate::load_input(&a.trace, a.format, &a.import, &a.machine, a.quiet)?,
        &a.machine,
    )?;
    let jobs = {
        let crate::Machine { spec, cfg, pes, .. } = crate::machine_for(input.body(), &a.machine)?;
        let (j, est) = crate::memory::what_if_jobs(a.jobs, cfg.limits.max_memory_bytes, |j| {
            crate::memory::analyze_estimate(&input, &spec, &cfg, pes, j)
        })?;
        crate::memory::settle(&est, cfg.limits.max_memory_bytes, a.quiet)?;
        j
    };
    let t0 = std::time::Instant::now();
    let opts = Options {
        resimulate: !a.no_resim,
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
        } = baseline(trace, &a.machine)?;
        let sc = Scenario {
            trace: analysis::Blocks::Flat(trace),
            net: &spec,
            cfg: &cfg,
            seed: a.machine.seed,
        };
        let an = analysis::analyze_report(&sc, &base_run, &opts)
            .with_context(|| format!("analysis of `{}`", trace.meta.name))?;
        crate::memory::checkpoint("the analysis");
        let views = report::views::of(trace, &base_run, &spec, bin_ps)?;
        crate::memory::checkpoint("the views");
        (an, views, spec)
    } else {
        streamed(&input, &a.machine, &opts, bin_ps, a.quiet)?
    };
    let trace = input.body();
    let prof = &views.profiles;
    if !a.quiet {
        eprintln!(
            "analysed in {:.2} s ({} re-simulations)",
            t0.elapsed().as_secs_f64(),
            an.findings.len() + an.skipped.len()
        );
    }
    let args: Vec<String> = std::env::args().skip(2).collect();
    let base = strip(&args, OWN_FLAGS);
    if let Some(dir) = &a.out {
        let staged = crate::files::begin_dir(dir, a.machine.force)?;
        write_outputs(staged.path(), &an, trace, &spec.to_string(), &base)?;
        report::views::write(&views, staged.path(), trace)?;
        crate::files::finish_dir(staged)?;
        if !a.quiet {
            eprintln!(
                "wrote {} (analysis.json, critical_path.csv, {})",
                dir.display(),
                report::views::FILES
            );
        }
    }
    if a.json {
        let mut v = to_json(&an, trace, &spec.to_string(), &base)?;
        v["extrema"] = serde_json::to_value(&prof.extrema)?;
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!("{}", human(&an, trace, &spec.to_string(), &base, a.steps));
        print!("{}", extrema_text(prof));
    }
    Ok(())
}

/// The analysis of a repeated trace without its timeline or its expansion: two replays
/// (`analysis::streamed`: the bindings, then the path's runs and the views, one run at a
/// time), then the re-simulations on the compact trace. Memory: the replay's, plus 5 bytes
/// per block during the first replay.
fn streamed(
    input: &trace::Repeated,
    m: &MachineArgs,
    opts: &Options,
    bin_ps: u64,
    quiet: bool,
) -> Result<(Analysis, report::views::Views, network_models::NetSpec)> {
    let body = input.body();
    let crate::Machine { spec, cfg, map, .. } = crate::machine_for(body, m)?;
    let g = analysis::Blocks::Repeated(input);
    let feed = analysis::feed::Feed::new(g, analysis::feed::PeOf::Object(map));
    let mut progress = crate::progress::Reporter::new(quiet);
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
    let (walked, sink) = walked.with_context(|| format!("replay of `{}`", body.meta.name))?;
    crate::memory::checkpoint("the two replays");
    let views = sink.finish(&walked.report.pe_busy_ps)?;
    crate::memory::checkpoint("the views");
    let an = analysis::diagnose_with_early(
        &sc,
        &walked.report,
        walked.critical_path,
        opts,
        early,
        &mut progress,
    )
    .with_context(|| format!("analysis of `{}`", body.meta.name))?;
    progress.done();
    crate::memory::checkpoint("the re-simulations");
    Ok((an, views, spec))
}

/// The analysis as JSON, with the network, the trace's name and each finding's command.
pub(crate) fn to_json(
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
pub(crate) fn write_outputs(
    dir: &std::path::Path,
    an: &Analysis,
    trace: &Trace,
    net: &str,
    base: &[String],
) -> Result<()> {
    let v = to_json(an, trace, net, base)?;
    crate::files::write_text(
        &dir.join("analysis.json"),
        &(serde_json::to_string_pretty(&v)? + "\n"),
    )?;
    let mut w = crate::files::csv_file(&dir.join("critical_path.csv"))?;
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
    Ok(crate::files::commit_csv(w)?)
}

/// The extrema, in words: the top PEs by busy time and messages sent against the rest.
fn extrema_text(p: &analysis::profile::Profiles) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "\nPEs that stand out (top {} of {}):",
        p.extrema.first().map_or(0, |e| e.pes.len()),
        p.pes.len()
    );
    for e in &p.extrema {
        let show = |v: u64| {
            if e.measure == "busy" {
                fmt_ps(v)
            } else {
                v.to_string()
            }
        };
        let list: Vec<String> = e
            .pes
            .iter()
            .zip(&e.values)
            .take(5)
            .map(|(pe, v)| format!("PE {pe} ({})", show(*v)))
            .collect();
        let _ = writeln!(
            o,
            "  {:<14} {}{}; mean {} vs {} for the rest",
            e.measure.replace('_', " "),
            list.join(", "),
            if e.pes.len() > 5 { ", ..." } else { "" },
            show(e.outlier_mean.round() as u64),
            show(e.rest_mean.round() as u64)
        );
    }
    o
}

fn pct(x: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        100.0 * x as f64 / of as f64
    }
}

/// The human report: critical-path breakdown, longest steps, ranked findings with commands.
pub(crate) fn human(
    an: &Analysis,
    trace: &Trace,
    net: &str,
    base: &[String],
    steps: usize,
) -> String {
    let cp = &an.critical_path;
    let m = an.makespan_ps;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "`{}` on {} PEs, network {net}: makespan {}, {} blocks; {:.2} PEs busy on average",
        trace.meta.name,
        an.pes,
        fmt_ps(m),
        an.blocks,
        an.average_parallelism
    );
    let _ = writeln!(
        o,
        "\ncritical path: {} blocks on {} objects, {} messages ({} remote)",
        cp.steps.len(),
        cp.objects_on_path,
        cp.network.remote_messages + cp.network.local_messages,
        cp.network.remote_messages
    );
    let n = &cp.network;
    let rows: [(&str, u64); 8] = [
        ("compute", cp.compute_ps),
        ("CPU overheads", cp.overhead_ps),
        ("network: overhead", n.overhead_ps),
        ("network: latency", n.latency_ps),
        ("network: serialisation", n.serialization_ps),
        ("network: queueing", n.queueing_ps),
        ("idle", cp.idle_ps),
        ("total (= makespan)", cp.total_ps()),
    ];
    for (name, v) in rows {
        let _ = writeln!(o, "  {name:<24} {:>12} {:>6.1}%", fmt_ps(v), pct(v, m));
    }
    let _ = writeln!(
        o,
        "  of compute and overheads, queued (a ready path block waited behind them on its PE): {} {:.1}%",
        fmt_ps(cp.queued_ps),
        pct(cp.queued_ps, m)
    );
    let _ = writeln!(o, "  compute by entry method:");
    for e in cp.by_entry.iter().take(6) {
        let _ = writeln!(
            o,
            "    {:<30} {:>12} {:>6.1}%  ({} blocks)",
            clip(&e.name, 30),
            fmt_ps(e.compute_ps),
            pct(e.compute_ps, m),
            e.blocks
        );
    }
    if cp.by_entry.len() > 6 {
        let rest: u64 = cp.by_entry[6..].iter().map(|e| e.compute_ps).sum();
        let _ = writeln!(
            o,
            "    {:<30} {:>12} {:>6.1}%",
            format!("({} others)", cp.by_entry.len() - 6),
            fmt_ps(rest),
            pct(rest, m)
        );
    }
    if steps > 0 && !cp.steps.is_empty() {
        let mut idx: Vec<usize> = (0..cp.steps.len()).collect();
        idx.sort_by_key(|&i| std::cmp::Reverse(cp.steps[i].end_ps - cp.steps[i].start_ps));
        idx.truncate(steps);
        idx.sort_unstable();
        let _ = writeln!(o, "  longest path blocks (in path order):");
        for i in idx {
            let s = &cp.steps[i];
            let entry = trace
                .entries
                .get(s.entry as usize)
                .map_or("?", |e| e.name.as_str());
            let how = match &s.edge {
                Edge::Start => "starts the path".to_string(),
                Edge::Message { from, remote, .. } => format!(
                    "{} message from block {from}",
                    if *remote { "remote" } else { "local" }
                ),
                Edge::Dependency { from } => format!("after block {from}"),
                Edge::ObjectOrder { from } => format!("after its object's block {from}"),
                Edge::RecordedOrder { from } => format!("after its PE's recorded block {from}"),
                Edge::Pe { from, .. } => format!("waited for its PE (block {from})"),
            };
            let _ = writeln!(
                o,
                "    block {:<8} {:<24} PE {:<5} {:>12} .. {:>12}  {how}",
                s.block,
                clip(entry, 24),
                s.pe,
                fmt_ps(s.start_ps),
                fmt_ps(s.end_ps)
            );
        }
    }
    if !an.findings.is_empty() {
        let _ = writeln!(
            o,
            "\ndiagnoses, ranked by the time a re-simulation without the cause saves:"
        );
    }
    for (i, f) in an.findings.iter().enumerate() {
        let gain = if f.saved_ps > 0 {
            format!(
                "saves {} ({:.1}%)",
                fmt_ps(f.saved_ps as u64),
                100.0 * f.saved_fraction
            )
        } else if f.saved_ps == 0 {
            "no change".to_string()
        } else {
            format!("costs {} more", fmt_ps(f.saved_ps.unsigned_abs()))
        };
        let _ = writeln!(o, "{:>2}. {}: {gain}", i + 1, f.diagnosis.name());
        let _ = writeln!(o, "    {}", f.evidence);
        let _ = writeln!(
            o,
            "    with {}: makespan {} -> {}",
            f.remedy,
            fmt_ps(f.makespan_ps),
            fmt_ps(f.what_if_makespan_ps)
        );
        let _ = writeln!(o, "    reproduce: {}", command(base, &f.what_if));
    }
    let _ = writeln!(o, "\nlimits (what more PEs could give):");
    let _ = writeln!(
        o,
        "  all work spread evenly over the {} PEs: {}",
        an.pes,
        fmt_ps(an.limits.work_over_pes_ps)
    );
    if let Some(b) = &an.limits.one_pe_per_object {
        if let WhatIf::OnePePerObject { pes } = &b.what_if {
            let _ = writeln!(
                o,
                "  each object on its own PE ({pes} PEs): {} ({:.2}x faster)\n    reproduce: {}",
                fmt_ps(b.makespan_ps),
                m as f64 / b.makespan_ps.max(1) as f64,
                command(base, &b.what_if)
            );
        }
    }
    if let Some(n) = &an.limits.note {
        let _ = writeln!(o, "  not measured: {n}");
    }
    for s in &an.skipped {
        let _ = writeln!(o, "not measured: {}: {}", s.diagnosis.name(), s.why);
    }
    o
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('~');
        t
    }
}

/// `args` without the flags in `drop` (`(flag, takes a value)`), in either `--f v` or `--f=v`
/// form.
pub(crate) fn strip(args: &[String], drop: &[(&str, bool)]) -> Vec<String> {
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
pub(crate) fn command(base: &[String], w: &WhatIf) -> String {
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
