//! `whatif predict`: from small runs to large predictions with error bars (issue 18 item 8).
//! Emulates a built-in program at a few small PE counts, fits Extra-P's normal form to the
//! predicted times (`models::pmnf`, with its 95% band), then predicts each target PE count two
//! ways: analytically from the fit, and by emulating and replaying the program at the target
//! (BigSim's path). Where the simulation falls outside the band it says so, and why, from MK's
//! phase analysis (`analysis::phases`) of the largest small run and the target run.

use analysis::fmt_ps;
use anyhow::Result;
use clap::Args;
use models::pmnf::Model;
use network_models::NetSpec;
use std::fmt::Write as _;
use std::path::PathBuf;
use workflow::predict::{PredictSpec, Prediction, Row};

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

pub(crate) fn predict(a: PredictArgs) -> Result<()> {
    if let Some(p) = &a.csv {
        crate::files::check_outputs(&[("--csv", p)], &[], false)?;
    }
    let net = a.machine.clone().unwrap_or_else(|| a.net.clone());
    let Prediction { net, model, rows } = workflow::predict::predict(&PredictSpec {
        program: a.program.clone(),
        sets: a.sets.clone(),
        net,
        small: a.small.clone(),
        at: a.at.clone(),
        metric: a.metric.clone(),
        no_simulate: a.no_simulate,
        max_memory: a.max_memory,
        quiet: a.quiet,
    })?;
    if let Some(path) = &a.csv {
        workflow::predict::write_csv(path, &rows)?;
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
