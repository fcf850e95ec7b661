//! Scaling models of whatif's results (`whatif model`): a study's results or a set of traces
//! at parameter values as an Extra-P experiment, per-entry block-cost models written for
//! `whatif emulate --costs` and read back.

use crate::error::{Ctx, Result, WorkflowError, bail};
use crate::files;
use models::extrap::{Experiment, Series};
use models::{Model, Point};
use std::collections::BTreeMap;

/// A results.csv as an experiment: one series per combination of the other axes.
pub fn from_sweep(path: &std::path::Path, x: &str, metric: Option<&str>) -> Result<Experiment> {
    let len = std::fs::metadata(path)
        .ctx(|| format!("cannot read {}", path.display()))?
        .len();
    if len > models::extrap::MAX_BYTES {
        bail!(
            "{}: {len} bytes; results files up to {} bytes are read",
            path.display(),
            models::extrap::MAX_BYTES
        );
    }
    let mut r = csv::Reader::from_path(path).ctx(|| format!("cannot read {}", path.display()))?;
    let h = r.headers()?.clone();
    let col = |n: &str| h.iter().position(|c| c == n);
    let xi = col(x).ctx(|| {
        format!(
            "{}: no column `{x}` (columns: {})",
            path.display(),
            h.iter().collect::<Vec<_>>().join(", ")
        )
    })?;
    let rows: Vec<csv::StringRecord> = r
        .records()
        .collect::<Result<_, _>>()
        .ctx(|| format!("{}: not CSV", path.display()))?;
    let metric = match metric {
        Some(m) => m.to_string(),
        None if col("mean_iteration_s").is_some_and(|i| rows.iter().all(|r| !r[i].is_empty())) => {
            "mean_iteration_s".into()
        }
        None => "makespan_s".into(),
    };
    let mi = col(&metric).ctx(|| format!("{}: no column `{metric}`", path.display()))?;
    // Axis columns sit between `fingerprint` and `pes` in results.csv.
    let first = col("fingerprint").map_or(0, |i| i + 1);
    let last = col("pes").unwrap_or(h.len());
    let others: Vec<usize> = (first..last).filter(|&i| i != xi).collect();
    let mut groups: BTreeMap<String, BTreeMap<u64, (f64, Vec<f64>)>> = BTreeMap::new();
    for (n, row) in rows.iter().enumerate() {
        let line = n + 2;
        let xv: f64 = row[xi].parse().ctx(|| {
            format!(
                "{} line {line}: {x} = `{}` is not a number",
                path.display(),
                &row[xi]
            )
        })?;
        let yv: f64 = row[mi].parse().ctx(|| {
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
pub fn iteration_count(t: &trace::Trace) -> usize {
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
pub fn entry_costs(t: &trace::Trace) -> Vec<Option<f64>> {
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
pub fn from_traces(specs: &[String], param: &str) -> Result<Experiment> {
    let mut per_entry: BTreeMap<String, Vec<Point>> = BTreeMap::new();
    let n = specs.len();
    for s in specs {
        let (v, path) = s
            .split_once('=')
            .ctx(|| format!("--trace `{s}`: expected VALUE=PATH"))?;
        let x: f64 = v
            .trim()
            .parse()
            .ok()
            .filter(|x: &f64| x.is_finite())
            .ctx(|| format!("--trace `{s}`: `{v}` is not a number"))?;
        let t = trace::read_trace_file(std::path::Path::new(path.trim()))
            .ctx(|| format!("--trace {s}"))?;
        for (e, v) in entry_costs(&t).into_iter().enumerate() {
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
pub fn costs_json(param: &str, fits: &[(&Series, Model)]) -> serde_json::Value {
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
pub fn read_costs(path: &std::path::Path) -> Result<(String, Vec<(String, Model)>)> {
    let text = files::read_text(path, files::SMALL_TEXT_BYTES)?;
    let v: serde_json::Value =
        serde_json::from_str(&text).ctx(|| format!("{}: not JSON", path.display()))?;
    let param = v["param"].as_str().unwrap_or("x").to_string();
    let mut out = Vec::new();
    for (i, e) in v["entries"]
        .as_array()
        .ctx(|| format!("{}: no `entries` list", path.display()))?
        .iter()
        .enumerate()
    {
        let bad = |what: &str| {
            WorkflowError::Invalid(format!("{}: entries[{i}]: {what}", path.display()))
        };
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
