//! `whatif predict`: from small runs to large predictions with error bars (issue 18 item 8).
//! Emulates a built-in program at a few small PE counts, fits Extra-P's normal form to the
//! predicted times (`models::pmnf`, with its 95% band), then predicts each target PE count two
//! ways: analytically from the fit, and by emulating and replaying the program at the target
//! (BigSim's path). Where the simulation falls outside the band it says so, and why, from MK's
//! phase analysis (`analysis::phases`) of the largest small run and the target run.

use analysis::fmt_ps;
use analysis::phases::{Kind, Phases};
use anyhow::{Context, Result, bail};
use clap::Args;
use emulator::{EmulateConfig, Timing};
use models::pmnf::{self, Model, Point};
use network_models::NetSpec;
use replay::ReplayConfig;
use std::fmt::Write as _;
use std::path::PathBuf;

/// Help after the options.
pub(crate) const PREDICT_HELP: &str = "\
How it works:
  1. emulates PROGRAM at each --small PE count (its --set parameters fixed: strong scaling,
     unless the program's work grows with P, like atm2d's per-object lambda) and replays it
     on the network: the measured series;
  2. fits Extra-P's performance-model normal form c0 + c1 P^i log2(P)^j (leave-one-out
     cross-validation, as `whatif model`) with a 95% prediction band;
  3. at each --at PE count: the model's value and band (analytic), and the program emulated
     and replayed at that scale (simulated; --no-simulate skips it);
  4. when the simulation is outside the band, why: MK's phases (`whatif phases`) of the
     largest small run against the target run: which phase grew beyond the fit, and by skew,
     contention, busy receivers or pipeline fill.

Examples:
  whatif predict stencil3d --small 4,8,16,32 --at 64,512 \\
      --set grid=64x64x64 --set block=8x8x8 --net alphabeta:lat=2us,bw=10GB/s
  whatif predict atm2d --small 4,8,16,32,64 --at 128,256 --machine paragon --set steps=3
  whatif predict pge --small 4,8,16,32 --at 64,128 --set ways=2 --machine paragon --csv p.csv";

#[derive(Args)]
pub(crate) struct PredictArgs {
    /// Built-in program (as `whatif emulate`).
    program: String,
    /// PE counts of the small runs the model is fitted to (at least 3; Extra-P asks for 5).
    #[arg(long, value_delimiter = ',', required = true, value_name = "P,P,...")]
    small: Vec<u32>,
    /// PE counts to predict.
    #[arg(long, value_delimiter = ',', required = true, value_name = "P,P,...")]
    at: Vec<u32>,
    /// Program parameter, repeatable: --set key=value.
    #[arg(long = "set", value_parser = crate::emulate_cmd::parse_kv, value_name = "KEY=VALUE")]
    sets: Vec<(String, String)>,
    /// Network model.
    #[arg(long, default_value = "latency:lat=1us")]
    net: NetSpec,
    /// A named machine instead of --net (`paragon`).
    #[arg(long, value_name = "NAME", value_parser = workflow::machine::parse_machine, conflicts_with = "net")]
    machine: Option<NetSpec>,
    /// What to predict: the makespan or the mean iteration time.
    #[arg(long, default_value = "makespan", value_parser = ["makespan", "iteration"])]
    metric: String,
    /// Only the analytic prediction (no emulation at the target scale).
    #[arg(long)]
    no_simulate: bool,
    /// Refuse PE counts whose emulated state alone would exceed this, e.g. `32GiB`
    /// [default: 3/4 of this computer's memory].
    #[arg(long, value_name = "BYTES", value_parser = sim_core::units::parse_bytes)]
    max_memory: Option<u64>,
    /// Write one CSV row per PE count (small and target) to this file.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Print everything as one JSON object.
    #[arg(long)]
    json: bool,
    /// No progress on stderr.
    #[arg(long, short)]
    quiet: bool,
}

/// One emulated and replayed run.
struct RunOut {
    pes: u32,
    objects: usize,
    busy_pes: usize,
    seconds: f64,
    phases: Phases,
}

#[derive(serde::Serialize)]
struct Row {
    pes: u32,
    role: &'static str,
    simulated_s: Option<f64>,
    analytic_s: Option<f64>,
    band_low_s: Option<f64>,
    band_high_s: Option<f64>,
    outside_band: Option<bool>,
    why: Vec<String>,
}

fn run_at(a: &PredictArgs, net: &NetSpec, pes: u32) -> Result<RunOut> {
    let t0 = std::time::Instant::now();
    let cfg = EmulateConfig {
        pes,
        timing: Timing::Model,
        net_spec: net.to_string(),
        generator: format!("whatif predict {} at P = {pes}", a.program),
        max_memory_bytes: a
            .max_memory
            .unwrap_or_else(crate::limits::default_memory_limit),
        ..Default::default()
    };
    let mut model = net.build();
    let e = scenarios::programs::emulate(&a.program, &a.sets, &cfg, model.as_mut(), &mut |_| {})
        .with_context(|| format!("emulating {} on {pes} PEs", a.program))?;
    let trace = e.trace;
    let rcfg = ReplayConfig {
        timeline: true,
        ..Default::default()
    };
    let mut model = net.build();
    // The replay holds a state per PE (the emulation only per PE with objects): checked
    // against the limit before it is allocated.
    let f = replay::footprint::Footprint::of(&trace, model.as_ref(), &rcfg)?;
    let est = replay::footprint::Estimate::new()
        .keep("the emulated trace", trace.heap_bytes())
        .replay_stage("the replay", &f, vec![]);
    crate::memory::settle(
        &est,
        Some(
            a.max_memory
                .unwrap_or_else(crate::limits::default_memory_limit),
        ),
        true,
    )
    .with_context(|| format!("replaying {} on {pes} PEs", a.program))?;
    let report = replay::replay(&trace, model.as_mut(), &rcfg)
        .with_context(|| format!("replay of {} on {pes} PEs", a.program))?;
    let ps = if a.metric == "iteration" {
        report
            .mean_iteration_ps(|_| true)
            .map(|(v, _)| v)
            .with_context(|| {
                format!(
                    "{} has no iteration markers: use --metric makespan",
                    a.program
                )
            })?
    } else {
        report.makespan.as_ps()
    };
    let phases = analysis::phases::phases(&trace, &report, net)
        .with_context(|| format!("phases of {} on {pes} PEs", a.program))?;
    if !a.quiet {
        eprintln!(
            "  P = {pes}: {} ({} blocks, {:.2} s)",
            fmt_ps(ps),
            trace.num_blocks(),
            t0.elapsed().as_secs_f64()
        );
    }
    Ok(RunOut {
        pes,
        objects: trace.objects.len(),
        busy_pes: report.pe_blocks.iter().filter(|&&b| b > 0).count(),
        seconds: ps as f64 * 1e-12,
        phases,
    })
}

pub(crate) fn predict(a: PredictArgs) -> Result<()> {
    if let Some(p) = &a.csv {
        crate::files::check_outputs(&[("--csv", p)], &[], false)?;
    }
    let mut small = a.small.clone();
    small.sort_unstable();
    small.dedup();
    if small.len() < 3 {
        bail!(crate::BadInput(format!(
            "--small needs at least 3 distinct PE counts (got {}): a two-coefficient model \
             with a band needs 3 points; Extra-P recommends 5",
            small.len()
        )));
    }
    if let Some(&p) = small.iter().chain(&a.at).find(|&&p| p == 0) {
        bail!(crate::BadInput(format!("PE count {p} is not at least 1")));
    }
    for &p in small.iter().chain(&a.at) {
        crate::emulate_cmd::check_emulated_pes(p, a.max_memory, "--max-memory")
            .with_context(|| format!("PE count {p}"))?;
    }
    let net = a.machine.clone().unwrap_or_else(|| a.net.clone());
    if !a.quiet {
        eprintln!("small runs of {} on {net}:", a.program);
    }
    let mut runs = Vec::new();
    for &p in &small {
        runs.push(run_at(&a, &net, p)?);
    }
    let points: Vec<Point> = runs
        .iter()
        .map(|r| Point {
            x: r.pes as f64,
            values: vec![r.seconds],
        })
        .collect();
    let model =
        pmnf::fit("P", &points, &pmnf::scaling_terms()).context("fitting the small runs")?;
    let mut rows: Vec<Row> = runs
        .iter()
        .map(|r| Row {
            pes: r.pes,
            role: "small",
            simulated_s: Some(r.seconds),
            analytic_s: Some(model.eval(r.pes as f64)),
            band_low_s: None,
            band_high_s: None,
            outside_band: None,
            why: Vec::new(),
        })
        .collect();
    if !a.no_simulate && !a.quiet {
        eprintln!("target runs:");
    }
    let last_small = runs.last().expect("3 small runs");
    for &p in &a.at {
        let y = model.eval(p as f64);
        let (lo, hi) = model.band(p as f64);
        let mut row = Row {
            pes: p,
            role: "target",
            simulated_s: None,
            analytic_s: Some(y),
            band_low_s: lo.is_finite().then_some(lo),
            band_high_s: hi.is_finite().then_some(hi),
            outside_band: None,
            why: Vec::new(),
        };
        if !a.no_simulate {
            let r = run_at(&a, &net, p)?;
            let outside = !(lo..=hi).contains(&r.seconds);
            row.simulated_s = Some(r.seconds);
            row.outside_band = Some(outside);
            if outside {
                row.why = explain(&model, last_small, &r);
            }
        }
        rows.push(row);
    }
    if let Some(path) = &a.csv {
        write_csv(path, &rows)?;
    }
    if a.json {
        let v = serde_json::json!({
            "program": a.program,
            "sets": a.sets.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(),
            "net": net.to_string(),
            "metric": a.metric,
            "model": model,
            "model_text": model.show(),
            "rows": rows,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    print!("{}", render(&a, &net, &model, &rows));
    Ok(())
}

/// Why the target's simulation leaves the fit's band: the phases whose time grew most from
/// the largest small run to the target, with their causes.
fn explain(model: &Model, small: &RunOut, target: &RunOut) -> Vec<String> {
    let mut out = Vec::new();
    let fit_growth = model.eval(target.pes as f64) / model.eval(small.pes as f64);
    let sim_growth = target.seconds / small.seconds;
    out.push(format!(
        "from P = {} to {}: the fit grows {:.3}x, the simulation {:.3}x",
        small.pes, target.pes, fit_growth, sim_growth
    ));
    if target.busy_pes < target.pes as usize {
        out.push(format!(
            "only {} of {} PEs run anything: the program has {} objects at this size, and a \
             PE count beyond the objects cannot divide the work further (give the program a \
             larger problem or finer decomposition with --set)",
            target.busy_pes, target.pes, target.objects
        ));
    }
    let total = |ph: &analysis::phases::Phase| -> f64 {
        ph.instances
            .iter()
            .map(|i| i.simulated_ps as f64)
            .sum::<f64>()
            * 1e-12
    };
    let mut grew: Vec<(f64, String)> = Vec::new();
    for t in &target.phases.phases {
        let Some(s) = small.phases.phases.iter().find(|p| p.name == t.name) else {
            grew.push((
                total(t),
                format!(
                    "phase {} appears at P = {} ({} total)",
                    t.name,
                    target.pes,
                    fmt_ps((total(t) * 1e12) as u64)
                ),
            ));
            continue;
        };
        let (ts, ss) = (total(t), total(s));
        let delta = ts - ss;
        let mut causes = Vec::new();
        let w = t.why();
        if t.kind == Kind::Pipeline && t.depth > s.depth {
            causes.push(format!(
                "pipeline fill: depth {} -> {}, (D-1)(tau + s + r + W) = {} at the target",
                s.depth,
                t.depth,
                fmt_ps((t.depth as u64 - 1).saturating_mul(t.tau_ps + t.s_ps + t.r_ps + t.w_ps))
            ));
        }
        if w.skew_ps > s.why().skew_ps {
            causes.push(format!("skew {}", fmt_ps(w.skew_ps)));
        }
        if w.excess_wire_ps > s.why().excess_wire_ps {
            causes.push(format!(
                "contention: messages up to {} over their time alone",
                fmt_ps(w.excess_wire_ps)
            ));
        }
        if w.receiver_busy_ps > s.why().receiver_busy_ps {
            causes.push(format!(
                "busy receivers: up to {}",
                fmt_ps(w.receiver_busy_ps)
            ));
        }
        if t.tau_ps > s.tau_ps {
            causes.push(format!(
                "tau {} -> {} (longer routes or larger messages)",
                fmt_ps(s.tau_ps),
                fmt_ps(t.tau_ps)
            ));
        }
        let what = if causes.is_empty() {
            String::new()
        } else {
            format!(": {}", causes.join("; "))
        };
        grew.push((
            delta.abs(),
            format!(
                "phase {} ({}): {} -> {} in all{what}",
                t.name,
                t.kind.name(),
                fmt_ps((ss * 1e12) as u64),
                fmt_ps((ts * 1e12) as u64)
            ),
        ));
    }
    grew.sort_by(|a, b| b.0.total_cmp(&a.0));
    out.extend(grew.into_iter().take(3).map(|g| g.1));
    let (sp, tp) = (&small.phases, &target.phases);
    out.push(format!(
        "MK's T_s + T_p: {} + {} at P = {}, {} + {} at P = {} (work outside phases vs phases)",
        fmt_ps(sp.t_s_ps),
        fmt_ps(sp.t_p_ps),
        small.pes,
        fmt_ps(tp.t_s_ps),
        fmt_ps(tp.t_p_ps),
        target.pes
    ));
    out
}

fn secs(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    fmt_ps((v * 1e12).round().max(0.0) as u64)
}

fn render(a: &PredictArgs, net: &NetSpec, model: &Model, rows: &[Row]) -> String {
    let mut s = String::new();
    let sets: Vec<String> = a.sets.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let _ = writeln!(
        s,
        "{} {}: {} over P on {net}",
        a.program,
        sets.join(" "),
        a.metric
    );
    let _ = writeln!(
        s,
        "fit to P = {}: T(P) = {} s (LOO SMAPE {:.2}%, adj. R^2 {:.4})",
        rows.iter()
            .filter(|r| r.role == "small")
            .map(|r| r.pes.to_string())
            .collect::<Vec<_>>()
            .join(","),
        model.short(),
        model.smape_pct,
        model.adj_r2
    );
    let _ = writeln!(
        s,
        "{:>8} {:>7} {:>11} {:>11} {:>25} {:>8}  verdict",
        "P", "run", "simulated", "analytic", "95% band", "diff"
    );
    for r in rows {
        let band = match (r.band_low_s, r.band_high_s) {
            (Some(l), Some(h)) => format!("{} .. {}", secs(l), secs(h)),
            _ => "-".into(),
        };
        let diff = match (r.simulated_s, r.analytic_s) {
            (Some(sim), Some(an)) if sim > 0.0 => format!("{:+.1}%", (an - sim) / sim * 100.0),
            _ => "-".into(),
        };
        let verdict = match r.outside_band {
            Some(true) => "simulation outside the band",
            Some(false) => "agree (within the band)",
            None if r.role == "small" => "fitted",
            None => "not simulated",
        };
        let _ = writeln!(
            s,
            "{:>8} {:>7} {:>11} {:>11} {:>25} {:>8}  {verdict}",
            r.pes,
            r.role,
            r.simulated_s.map_or("-".into(), secs),
            r.analytic_s.map_or("-".into(), secs),
            band,
            diff
        );
    }
    for r in rows.iter().filter(|r| !r.why.is_empty()) {
        let _ = writeln!(s, "why P = {} differs:", r.pes);
        for w in &r.why {
            let _ = writeln!(s, "  {w}");
        }
    }
    let _ = writeln!(
        s,
        "(diff: analytic against simulated; the simulated value at a target is the program emulated and replayed at that scale)"
    );
    s
}

fn write_csv(path: &std::path::Path, rows: &[Row]) -> Result<()> {
    let mut w = crate::files::csv_file(path)?;
    w.write_record([
        "pes",
        "run",
        "simulated_s",
        "analytic_s",
        "band_low_s",
        "band_high_s",
        "outside_band",
    ])?;
    let f = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:e}"));
    for r in rows {
        w.write_record([
            r.pes.to_string(),
            r.role.to_string(),
            f(r.simulated_s),
            f(r.analytic_s),
            f(r.band_low_s),
            f(r.band_high_s),
            r.outside_band.map_or(String::new(), |b| b.to_string()),
        ])?;
    }
    Ok(crate::files::commit_csv(w)?)
}
