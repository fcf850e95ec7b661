//! `whatif demo`: a small built-in study, end to end, into one folder with an HTML report.

use crate::files;
use anyhow::{Context, Result};
use clap::Args;
use network_models::NetSpec;
use replay::ReplayConfig;
use report::summary::RunInfo;
use sim_core::Ratio;
use std::path::PathBuf;
use std::time::Instant;

/// The demo study: Lee's small stencil latency-tolerance study, reduced to 4 x 14 points.
pub(crate) const DEMO_STUDY: &str = r#"# whatif demo: how much network latency can a 7-point stencil tolerate, and how does the
# virtualization factor (objects per PE) change that? (Lee 2009, section 6.5, small problem.)
# 64x64x48 points on 48 PEs, VF 1 / 2 / 4 / 8, latency 1 us - 500 us, mean iteration time over
# iterations 10-20 of 25. Copy this file and edit it; `whatif sweep --help` explains the keys.
name = "demo-stencil-latency"
description = "7-point stencil 64x64x48 on 48 PEs: VF 1-8 x latency 1us-500us"
seed = 1

[workload]
program = "stencil3d"
pes = 48
params = { grid = "64x64x48", block = "16x16x16", iters = 25 }

[net]
model = "latency"
lat = "1us"

[report]
iterations = [10, 20]
x = "net.lat"
series = "workload.params.block"

[[sweep]]
key = "workload.params.block"
values = ["16x16x16", "16x8x16", "16x8x8", "8x8x8"]

[[sweep]]
key = "net.lat"
log = ["1us", "500us"]
steps = 14
"#;

/// The network of the demo's detailed replay: a contended 4x4x3 torus, 48 nodes.
const DEMO_NET: &str = "contention:topo=torus:4x4x3,lat=20us,hop=100ns,bw=2GB/s";

pub(crate) const DEMO_HELP: &str = "\
Examples:
  whatif demo                                   # whatif-demo/report.html, whatif-demo/sweep/, replay/
  whatif demo --out my-demo --jobs 2 -q         # elsewhere, on 2 threads, quietly
  whatif report my-demo --out my-demo/again.html   # the report alone, from the demo's folders";

#[derive(Args)]
pub(crate) struct DemoArgs {
    /// Output folder.
    #[arg(long, value_name = "DIR", default_value = "whatif-demo")]
    out: PathBuf,
    /// Worker threads for the sweep, 1 to 1024 [default: all cores].
    #[arg(long, value_parser = crate::sweep_cmd::parse_jobs)]
    jobs: Option<usize>,
    /// No progress on stderr.
    #[arg(long, short)]
    quiet: bool,
    /// Write into --out even if it is a non-empty folder that is not a whatif output (its
    /// other files are kept). A previous whatif output is always replaced as a whole.
    #[arg(long)]
    force: bool,
}

pub(crate) fn demo(a: DemoArgs) -> Result<()> {
    let t0 = Instant::now();
    // Everything is built in a staging folder and put in place at the end, with the
    // finished-run marker: an interrupted demo never leaves a half-written folder.
    let staged = files::begin_dir(&a.out, a.force)?;
    let w = staged.path().to_path_buf();
    let study = a.out.join("study.toml");
    files::write_text(&w.join("study.toml"), DEMO_STUDY)?;
    if !a.quiet {
        eprintln!("1/3 sweep: {} (56 points)", study.display());
    }
    workflow::sweep::run(
        &workflow::sweep::SweepSpec {
            jobs: a.jobs,
            quiet: a.quiet,
            ..workflow::sweep::SweepSpec::new(&w.join("study.toml"), &w.join("sweep"))
        },
        &mut crate::set_interrupt_note,
    )?;

    if !a.quiet {
        eprintln!("2/3 replay: stencil3d VF 4 on a contended 4x4x3 torus with 20 us latency");
    }
    let spec: NetSpec = DEMO_NET.parse().map_err(anyhow::Error::msg)?;
    let cfg = emulator::EmulateConfig {
        pes: 48,
        generator: "whatif demo: emulate stencil3d --pes 48 --set grid=64x64x48 --set block=16x8x8 --set iters=25".into(),
        net_spec: "latency:lat=1us".into(),
        ..Default::default()
    };
    let sets: Vec<(String, String)> = [("grid", "64x64x48"), ("block", "16x8x8"), ("iters", "25")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut emu_net = NetSpec::Latency {
        lat: sim_core::SimDuration::from_us(1),
    }
    .build();
    let e = scenarios::programs::emulate("stencil3d", &sets, &cfg, emu_net.as_mut(), &mut |_| {})
        .context("emulating the demo stencil")?;
    let trace_path = w.join("stencil-vf4.trace");
    trace::write_trace_file(&e.trace, &trace_path, trace::Format::Binary)?;
    let mut net = spec.build();
    let r = replay::replay(
        &e.trace,
        net.as_mut(),
        &ReplayConfig {
            timeline: true,
            ..ReplayConfig::default()
        },
    )?;
    let info = RunInfo {
        trace: &e.trace,
        net: spec.to_string(),
        mapping: "recorded".into(),
        cpu_scale: "1".into(),
        policy: "fifo",
        seed: sim_core::SeedTree::DEFAULT_ROOT,
        cpu_costs: (0, 0, "none".into()),
    };
    std::fs::create_dir_all(w.join("replay"))
        .with_context(|| format!("cannot create {}", w.join("replay").display()))?;
    let views = report::views::of(&e.trace, &r, &spec, 0)?;
    report::outputs::write_all(
        &w.join("replay"),
        &info,
        &r,
        report::outputs::Options {
            cpu_scale: Ratio::ONE,
            force: false,
            compress: false,
            representatives: &views.clusters.representatives(),
            shown_pes: &views.clusters.representatives(),
            trace_pes: &analysis::select::PeChoice::Auto,
            trace_window_ps: None,
            trace_budget_bytes: analysis::select::DEFAULT_BUDGET_BYTES,
            partial: None,
        },
    )?;
    report::views::write(&views, &w.join("replay"), &e.trace)?;
    // Why the replay takes as long as it does: critical path and re-simulated diagnoses, with
    // commands on the trace the demo wrote.
    let an = analysis::analyze_report(
        &analysis::Scenario {
            trace: analysis::Blocks::Flat(&e.trace),
            net: &spec,
            cfg: &ReplayConfig::default(),
            seed: sim_core::SeedTree::DEFAULT_ROOT,
        },
        &r,
        &analysis::Options::default(),
    )
    .context("analysing the demo replay")?;
    let base = vec![
        a.out.join("stencil-vf4.trace").display().to_string(),
        "--net".to_string(),
        spec.to_string(),
    ];
    workflow::analyze::write_outputs(&w.join("replay"), &an, &e.trace, &spec.to_string(), &base)?;

    if !a.quiet {
        eprintln!("3/3 report");
    }
    report::html::write_titled(&w, None, &a.out)?;
    files::finish_dir(staged)?;
    let page = a.out.join("report.html");
    println!(
        "whatif demo finished in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    println!("  report      {}   (open it in a browser)", page.display());
    println!(
        "  study       {}   (edit and rerun: whatif sweep {} --out <dir>)",
        study.display(),
        study.display()
    );
    println!(
        "  results     {}/sweep/results.csv, results.json",
        a.out.display()
    );
    println!(
        "  timeline    {}/replay/trace.json   (https://ui.perfetto.dev or chrome://tracing)",
        a.out.display()
    );
    println!(
        "  projections {}/replay/projections/predicted.sts",
        a.out.display()
    );
    Ok(())
}
