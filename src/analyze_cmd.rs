//! `whatif analyze`: why a predicted run takes as long as it does (the `analysis` crate),
//! with a command that reproduces each finding's re-simulation.

use crate::{ImportOpts, MachineArgs};
use analysis::{Analysis, Edge, WhatIf, fmt_ps};
use anyhow::Result;
use clap::Args;
use std::fmt::Write as _;
use std::path::PathBuf;
use trace::Trace;
use workflow::analyze::{command, strip, to_json, write_outputs};

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

pub(crate) fn analyze(a: AnalyzeArgs) -> Result<()> {
    let machine = a.machine.spec();
    if let Some(dir) = &a.out {
        let inputs = [vec![a.trace.clone()], machine.files_read()].concat();
        crate::limits::refuse_overwrite(&inputs, &[("--out", dir)])?;
        crate::files::check_outputs(&[], &[("--out", dir)], a.machine.force)?;
    }
    let input = workflow::whatif_trace(
        workflow::load(&a.trace, a.format, &a.import.spec(), &machine, a.quiet)?,
        &machine,
    )?;
    let t0 = std::time::Instant::now();
    let workflow::analyze::Analysed {
        analysis: an,
        views,
        spec,
    } = workflow::analyze::analyze(
        &input,
        &machine,
        &workflow::analyze::AnalyzeSpec {
            resimulate: !a.no_resim,
            factor: a.factor,
            jobs: a.jobs,
            bin: a.bin,
            quiet: a.quiet,
        },
    )?;
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
