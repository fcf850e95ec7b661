//! `whatif model`: fit scaling models (the `models` crate) to measurements: an Extra-P text
//! file, or a sweep's `results.csv` (a metric against a numeric axis, one model per
//! combination of the other axes), with predictions and 95% bands; `--extrap-out` writes the
//! measurements in Extra-P's text format.

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use models::extrap::{Experiment, Series};
use models::{EXTRAP_TERMS, Model};
use std::fmt::Write as _;
use std::path::PathBuf;

pub(crate) const MODEL_HELP: &str = "\
How it chooses (Extra-P's basic modeller, Calotoiu et al.): the constant model, then every
c0 + c1 * x^(i) * log2(x)^(j) of Extra-P's 42 default exponent pairs (i from 0 to 3, j 0..2),
each fitted by least squares and scored by leave-one-out cross-validation; the lowest
cross-validated SMAPE wins (terms contributing under 0.05% are dropped). Values at a point are
the mean of its repetitions. Predictions come with a 95% least-squares prediction band.

Inputs:
  Extra-P text      PARAMETER / POINTS / REGION / METRIC / DATA (one parameter)
  results.csv       from `whatif sweep`: --x names the numeric axis column (default: pes),
                    --metric the value column (default: mean_iteration_s when every row has
                    it, else makespan_s); one model per combination of the other axes

Examples:
  whatif model ../shared/data/extrap/input.txt
  whatif sweep scenarios/studies/atm2d-paragon.toml --out atm/
  whatif model atm/results.csv --x workload.pes --predict 256,1024 --extrap-out atm.txt
  extrap --text atm.txt                        # Extra-P's own choice, for comparison";

/// Input format.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum ModelFormat {
    /// `.csv`: a sweep's results.csv; anything else: Extra-P text.
    Auto,
    /// Extra-P's text format.
    Extrap,
    /// A sweep's results.csv.
    Sweep,
}

#[derive(Args)]
pub(crate) struct ModelArgs {
    /// Measurements: an Extra-P text file or a sweep's results.csv (or give --trace).
    #[arg(required_unless_present = "trace", conflicts_with = "trace")]
    input: Option<PathBuf>,
    /// Block-cost models instead: a trace recorded at a parameter value, repeatable
    /// (VALUE=PATH, e.g. --trace 512=b8.trace --trace 4096=b16.trace); one model per entry
    /// method of its time per object per iteration against the parameter (--param names it).
    #[arg(long, value_name = "VALUE=PATH")]
    trace: Vec<String>,
    /// --trace: the parameter's name (e.g. points, lambda, k).
    #[arg(long, default_value = "x")]
    param: String,
    /// --trace: write the per-entry cost models as JSON, for `whatif emulate --costs`.
    #[arg(long, value_name = "FILE")]
    costs_out: Option<PathBuf>,
    /// Input format.
    #[arg(long, value_enum, default_value = "auto")]
    format: ModelFormat,
    /// results.csv: the parameter column (a numeric sweep axis).
    #[arg(long, default_value = "pes")]
    x: String,
    /// results.csv: the value column [default: mean_iteration_s if every row has it, else
    /// makespan_s].
    #[arg(long)]
    metric: Option<String>,
    /// Parameter values to predict at, comma-separated (e.g. 1024,4096).
    #[arg(long, value_delimiter = ',', value_parser = finite)]
    predict: Vec<f64>,
    /// Print JSON instead of the human summary.
    #[arg(long)]
    json: bool,
    /// Also write the measurements as an Extra-P text file (to open or check in Extra-P).
    #[arg(long, value_name = "FILE")]
    extrap_out: Option<PathBuf>,
    /// No notes on stderr (the models go to stdout).
    #[arg(long, short)]
    quiet: bool,
}

pub(crate) fn model(a: ModelArgs) -> Result<()> {
    if !a.trace.is_empty() {
        let exp = workflow::model::from_traces(&a.trace, &a.param)?;
        return finish(&a, exp);
    }
    let input = a.input.clone().context("give an input file or --trace")?;
    let a = ModelArgs {
        input: Some(input.clone()),
        ..a
    };
    let sweep = match a.format {
        ModelFormat::Sweep => true,
        ModelFormat::Extrap => false,
        ModelFormat::Auto => input.extension().is_some_and(|e| e == "csv"),
    };
    let exp = if sweep {
        workflow::model::from_sweep(&input, &a.x, a.metric.as_deref())?
    } else {
        let meta = std::fs::metadata(&input)
            .with_context(|| format!("cannot read {}", input.display()))?;
        if meta.len() > models::extrap::MAX_BYTES {
            bail!(
                "{}: {} bytes; Extra-P text files up to {} bytes are read",
                input.display(),
                meta.len(),
                models::extrap::MAX_BYTES
            );
        }
        let text = crate::files::read_text(&input, models::extrap::MAX_BYTES)?;
        models::extrap::parse(&text).with_context(|| format!("{}", input.display()))?
    };
    finish(&a, exp)
}

fn finish(a: &ModelArgs, exp: Experiment) -> Result<()> {
    if let Some(p) = &a.extrap_out {
        crate::files::write_text(p, &models::extrap::write(&exp))?;
    }
    let param = exp.params[0].clone();
    let mut fits: Vec<(&Series, Model)> = Vec::new();
    for s in &exp.series {
        let m = models::fit(&param, &s.points, EXTRAP_TERMS)
            .with_context(|| format!("region `{}`, metric `{}`", s.region, s.metric))?;
        fits.push((s, m));
    }
    if let Some(p) = &a.costs_out {
        if a.trace.is_empty() {
            bail!("--costs-out needs --trace (block-cost models come from traces)");
        }
        crate::files::write_text(
            p,
            &serde_json::to_string_pretty(&workflow::model::costs_json(&param, &fits))?,
        )?;
    }
    if a.json {
        let v: Vec<serde_json::Value> = fits
            .iter()
            .map(|(s, m)| {
                let preds: Vec<serde_json::Value> = a
                    .predict
                    .iter()
                    .map(|&x| {
                        let (lo, hi) = m.band(x);
                        serde_json::json!({"x": x, "value": m.eval(x), "band_low": lo, "band_high": hi})
                    })
                    .collect();
                serde_json::json!({
                    "region": s.region,
                    "metric": s.metric,
                    "param": param,
                    "model": m.show(),
                    "constant": m.constant,
                    "term": m.term.map(|(c, t)| serde_json::json!({
                        "coefficient": c, "exponent_num": t.num, "exponent_den": t.den, "log": t.log
                    })),
                    "smape_pct": m.smape_pct,
                    "rss": m.rss,
                    "fit_rss": m.fit_rss,
                    "adj_r2": m.adj_r2,
                    "points": s.points.iter().map(|p| serde_json::json!({"x": p.x, "mean": p.mean(), "values": p.values})).collect::<Vec<_>>(),
                    "predictions": preds,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    let mut o = String::new();
    for (s, m) in &fits {
        let (lo, hi) = (
            s.points.first().map_or(0.0, |p| p.x),
            s.points.last().map_or(0.0, |p| p.x),
        );
        let _ = writeln!(
            o,
            "{} / {} ({} points, {param} = {lo}..{hi})",
            s.region,
            s.metric,
            s.points.len()
        );
        let _ = writeln!(o, "  model    {}", m.short());
        let _ = writeln!(
            o,
            "  fit      SMAPE {:.3}% ({}), RSS {:.4e}, adjusted R^2 {:.4}",
            m.smape_pct,
            if m.term.is_some() {
                "leave-one-out"
            } else {
                "constant, in-sample"
            },
            m.rss,
            m.adj_r2
        );
        if s.points.len() < 5 {
            let _ = writeln!(
                o,
                "  note     {} points; Extra-P asks for at least 5",
                s.points.len()
            );
        }
        for &x in &a.predict {
            let (l, h) = m.band(x);
            let _ = writeln!(
                o,
                "  {param} = {x:<8} {:.4e}   (95% band {:.4e} .. {:.4e})",
                m.eval(x),
                l,
                h
            );
        }
    }
    print!("{o}");
    Ok(())
}

/// A finite number (not NaN or infinite), for `--predict`.
fn finite(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        Ok(_) => Err(format!("`{s}` is not a finite number")),
        Err(e) => Err(format!("`{s}`: {e}")),
    }
}
