//! `whatif model`: fit scaling models (the `models` crate) to measurements: an Extra-P text
//! file, or a sweep's `results.csv` (a metric against a numeric axis, one model per
//! combination of the other axes), with predictions and 95% bands; `--extrap-out` writes the
//! measurements in Extra-P's text format.

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use models::extrap::{Experiment, Series};
use models::{EXTRAP_TERMS, Model, Point};
use std::collections::BTreeMap;
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

/// A results.csv as an experiment: one series per combination of the other axes.
fn from_sweep(path: &std::path::Path, x: &str, metric: Option<&str>) -> Result<Experiment> {
    let len = std::fs::metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .len();
    if len > models::extrap::MAX_BYTES {
        bail!(
            "{}: {len} bytes; results files up to {} bytes are read",
            path.display(),
            models::extrap::MAX_BYTES
        );
    }
    let mut r =
        csv::Reader::from_path(path).with_context(|| format!("cannot read {}", path.display()))?;
    let h = r.headers()?.clone();
    let col = |n: &str| h.iter().position(|c| c == n);
    let xi = col(x).with_context(|| {
        format!(
            "{}: no column `{x}` (columns: {})",
            path.display(),
            h.iter().collect::<Vec<_>>().join(", ")
        )
    })?;
    let rows: Vec<csv::StringRecord> = r
        .records()
        .collect::<Result<_, _>>()
        .with_context(|| format!("{}: not CSV", path.display()))?;
    let metric = match metric {
        Some(m) => m.to_string(),
        None if col("mean_iteration_s").is_some_and(|i| rows.iter().all(|r| !r[i].is_empty())) => {
            "mean_iteration_s".into()
        }
        None => "makespan_s".into(),
    };
    let mi = col(&metric).with_context(|| format!("{}: no column `{metric}`", path.display()))?;
    // Axis columns sit between `fingerprint` and `pes` in results.csv.
    let first = col("fingerprint").map_or(0, |i| i + 1);
    let last = col("pes").unwrap_or(h.len());
    let others: Vec<usize> = (first..last).filter(|&i| i != xi).collect();
    let mut groups: BTreeMap<String, BTreeMap<u64, (f64, Vec<f64>)>> = BTreeMap::new();
    for (n, row) in rows.iter().enumerate() {
        let line = n + 2;
        let xv: f64 = row[xi].parse().with_context(|| {
            format!(
                "{} line {line}: {x} = `{}` is not a number",
                path.display(),
                &row[xi]
            )
        })?;
        let yv: f64 = row[mi].parse().with_context(|| {
            format!(
                "{} line {line}: {metric} = `{}` is not a number",
                path.display(),
                &row[mi]
            )
        })?;
        let key = others
            .iter()
            .map(|&i| format!("{}={}", &h[i], &row[i]))
            .collect::<Vec<_>>()
            .join(",");
        groups
            .entry(if key.is_empty() { "all".into() } else { key })
            .or_default()
            .entry(xv.to_bits())
            .or_insert((xv, Vec::new()))
            .1
            .push(yv);
    }
    let series = groups
        .into_iter()
        .map(|(region, pts)| {
            let mut points: Vec<Point> = pts
                .into_values()
                .map(|(x, values)| Point { x, values })
                .collect();
            points.sort_by(|a, b| a.x.total_cmp(&b.x));
            Series {
                region,
                metric: metric.clone(),
                points,
            }
        })
        .collect();
    Ok(Experiment {
        params: vec![x.rsplit('.').next().unwrap_or(x).to_string()],
        series,
    })
}

/// Distinct iteration labels of `t`, at least 1.
pub(crate) fn iteration_count(t: &trace::Trace) -> usize {
    t.columns()
        .iteration
        .iter()
        .filter(|&&i| i != trace::NO_ITERATION)
        .collect::<std::collections::HashSet<_>>()
        .len()
        .max(1)
}

/// Each entry method's time per object per iteration, in picoseconds: its blocks' total
/// duration over (objects that run it x iteration labels in the trace, at least 1). `None`
/// for entries without blocks. This is the unit of block-cost models: it does not change when
/// the mix of an entry's blocks changes (a halo object with more neighbours runs more
/// receive-only blocks, not more work).
pub(crate) fn entry_costs(t: &trace::Trace) -> Vec<Option<f64>> {
    let cols = t.columns();
    let n = t.entries.len();
    let mut total = vec![0u128; n];
    let mut objects: Vec<std::collections::HashSet<u32>> = vec![Default::default(); n];
    for ((&e, &d), &o) in cols.entry.iter().zip(&cols.duration_ps).zip(&cols.object) {
        total[e as usize] += d as u128;
        objects[e as usize].insert(o);
    }
    let iters = iteration_count(t);
    (0..n)
        .map(|e| {
            (!objects[e].is_empty()).then(|| total[e] as f64 / (objects[e].len() * iters) as f64)
        })
        .collect()
}

/// Traces at parameter values as an experiment: one series per entry method (present in every
/// trace), its time per object per iteration in seconds ([`entry_costs`]) at each value.
fn from_traces(specs: &[String], param: &str) -> Result<Experiment> {
    let mut per_entry: BTreeMap<String, Vec<Point>> = BTreeMap::new();
    let n = specs.len();
    for s in specs {
        let (v, path) = s
            .split_once('=')
            .with_context(|| format!("--trace `{s}`: expected VALUE=PATH"))?;
        let x: f64 = v
            .trim()
            .parse()
            .ok()
            .filter(|x: &f64| x.is_finite())
            .with_context(|| format!("--trace `{s}`: `{v}` is not a number"))?;
        let t = trace::read_trace_file(std::path::Path::new(path.trim()))
            .with_context(|| format!("--trace {s}"))?;
        for (e, v) in crate::model_cmd::entry_costs(&t).into_iter().enumerate() {
            if let Some(v) = v {
                per_entry
                    .entry(t.entries[e].name.clone())
                    .or_default()
                    .push(Point {
                        x,
                        values: vec![v / 1e12],
                    });
            }
        }
    }
    let series: Vec<Series> = per_entry
        .into_iter()
        .filter(|(_, pts)| pts.len() == n)
        .map(|(region, mut points)| {
            points.sort_by(|a, b| a.x.total_cmp(&b.x));
            Series {
                region,
                metric: "s_per_object_iteration".into(),
                points,
            }
        })
        .collect();
    if series.is_empty() {
        bail!("no entry method appears in every --trace");
    }
    Ok(Experiment {
        params: vec![param.to_string()],
        series,
    })
}

/// The per-entry cost models as JSON (`whatif emulate --costs`).
fn costs_json(param: &str, fits: &[(&Series, Model)]) -> serde_json::Value {
    serde_json::json!({
        "param": param,
        "entries": fits.iter().map(|(s, m)| serde_json::json!({
            "entry": s.region,
            "model": m.show(),
            "unit": "seconds per object per iteration",
            "constant_s": m.constant,
            "term": m.term.map(|(c, t)| serde_json::json!({
                "coefficient_s": c, "num": t.num, "den": t.den, "log": t.log
            })),
            "smape_pct": m.smape_pct,
        })).collect::<Vec<_>>(),
    })
}

/// Per-entry cost models read back: entry name -> model.
pub(crate) fn read_costs(path: &std::path::Path) -> Result<(String, Vec<(String, Model)>)> {
    let text = crate::files::read_text(path, crate::files::SMALL_TEXT_BYTES)?;
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))?;
    let param = v["param"].as_str().unwrap_or("x").to_string();
    let mut out = Vec::new();
    for (i, e) in v["entries"]
        .as_array()
        .with_context(|| format!("{}: no `entries` list", path.display()))?
        .iter()
        .enumerate()
    {
        let bad = |what: &str| anyhow::anyhow!("{}: entries[{i}]: {what}", path.display());
        let name = e["entry"].as_str().ok_or_else(|| bad("no `entry` name"))?;
        let c0 = e["constant_s"]
            .as_f64()
            .ok_or_else(|| bad("no `constant_s` number"))?;
        let term = match &e["term"] {
            serde_json::Value::Null => None,
            t => {
                let c1 = t["coefficient_s"]
                    .as_f64()
                    .ok_or_else(|| bad("term without `coefficient_s`"))?;
                let int = |k: &str| {
                    t[k].as_i64()
                        .ok_or_else(|| bad(&format!("term without `{k}`")))
                };
                let (num, den, log) = (int("num")?, int("den")?, int("log")?);
                if !(1..=1000).contains(&den) || !(0..=10).contains(&log) || num.abs() > 1000 {
                    return Err(bad("term exponents out of range"));
                }
                Some((
                    c1,
                    models::Term {
                        num: num as i32,
                        den: den as u32,
                        log: log as u32,
                    },
                ))
            }
        };
        out.push((name.to_string(), Model::from_parts(&param, c0, term)));
    }
    Ok((param, out))
}

pub(crate) fn model(a: ModelArgs) -> Result<()> {
    if !a.trace.is_empty() {
        let exp = from_traces(&a.trace, &a.param)?;
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
        from_sweep(&input, &a.x, a.metric.as_deref())?
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
            &serde_json::to_string_pretty(&costs_json(&param, &fits))?,
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
