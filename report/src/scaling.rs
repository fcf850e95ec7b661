//! Scalability files of a sweep (`models::scaling`), written next to results.csv:
//! `optimum.csv` when the study names a grain axis (`[report] optimum`): its best value per
//! combination of the other axes; `speedup.csv` when the plot axis is a PE count
//! (`workload.pes` or `machine.pes`): speedup and efficiency per series, at the best grain
//! when there is an optimum axis. The metric is `mean_iteration_s` when every row has it,
//! else `makespan_s` (as the report).

use crate::error::{Ctx, Result};
use std::collections::HashMap;

/// Groups in first-seen order (the order of results.csv, row-major over the study's axes).
struct Groups<V> {
    order: Vec<(Vec<String>, Vec<V>)>,
    index: HashMap<Vec<String>, usize>,
}

impl<V> Groups<V> {
    fn new() -> Self {
        Groups {
            order: Vec::new(),
            index: HashMap::new(),
        }
    }
    fn push(&mut self, key: Vec<String>, v: V) {
        let i = *self.index.entry(key.clone()).or_insert_with(|| {
            self.order.push((key, Vec::new()));
            self.order.len() - 1
        });
        self.order[i].1.push(v);
    }
}

/// The parsed rows of results.csv: axis columns and the metric.
struct Table {
    axes: Vec<String>,
    rows: Vec<(Vec<String>, f64)>,
    metric: String,
}

fn table(csv_text: &str) -> Result<Table> {
    let mut r = csv::Reader::from_reader(csv_text.as_bytes());
    let h = r.headers()?.clone();
    let col = |n: &str| h.iter().position(|c| c == n);
    let first = col("fingerprint").map_or(0, |i| i + 1);
    let last = col("pes").unwrap_or(h.len());
    let axes: Vec<String> = (first..last).map(|i| h[i].to_string()).collect();
    let recs: Vec<csv::StringRecord> = r.records().collect::<Result<_, _>>()?;
    let metric = match col("mean_iteration_s") {
        Some(i) if recs.iter().all(|r| !r[i].is_empty()) => "mean_iteration_s",
        _ => "makespan_s",
    };
    let mi = col(metric).ctx(|| "results.csv has no makespan_s")?;
    let mut rows = Vec::new();
    for rec in &recs {
        let Ok(v) = rec[mi].parse::<f64>() else {
            continue;
        };
        rows.push(((first..last).map(|i| rec[i].to_string()).collect(), v));
    }
    Ok(Table {
        axes,
        rows,
        metric: metric.to_string(),
    })
}

fn line(cells: &[String]) -> Result<String> {
    let mut w = csv::WriterBuilder::new().from_writer(Vec::new());
    w.write_record(cells)?;
    Ok(String::from_utf8(w.into_inner()?)?.trim_end().to_string())
}

/// The files (name, text) for results.csv text and the manifest's `x`, `optimum` and
/// `constant_time` (size axis, target seconds).
pub fn files(
    csv_text: &str,
    x: Option<&str>,
    optimum: Option<&str>,
    constant_time: Option<(&str, &[f64])>,
) -> Result<Vec<(&'static str, String)>> {
    let t = table(csv_text)?;
    let mut out = constant_time_file(&t, x, constant_time)?;
    let idx = |k: Option<&str>| k.and_then(|k| t.axes.iter().position(|a| a == k));
    let (xi, oi) = (idx(x), idx(optimum));
    // Best grain per combination of the other axes.
    let mut best: Vec<(Vec<String>, (String, f64))> = Vec::new();
    if let Some(oi) = oi {
        let mut groups: Groups<(String, f64)> = Groups::new();
        for (vals, v) in &t.rows {
            let key: Vec<String> = vals
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != oi)
                .map(|(_, s)| s.clone())
                .collect();
            groups.push(key, (vals[oi].clone(), *v));
        }
        let mut header: Vec<String> = t
            .axes
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != oi)
            .map(|(_, a)| a.clone())
            .collect();
        header.extend([
            format!("best_{}", t.axes[oi]),
            format!("best_{}", t.metric),
            format!("worst_{}", t.metric),
            "worst_over_best".into(),
        ]);
        let mut text = line(&header)? + "\n";
        for (key, vals) in &groups.order {
            let Some((b, bt)) = models::scaling::argmin(vals) else {
                continue;
            };
            let wt = vals.iter().map(|v| v.1).fold(f64::MIN, f64::max);
            let mut cells = key.clone();
            cells.extend([
                b.clone(),
                format!("{bt:.12}"),
                format!("{wt:.12}"),
                format!("{:.6}", wt / bt),
            ]);
            text += &(line(&cells)? + "\n");
            best.push((key.clone(), (b, bt)));
        }
        out.push(("optimum.csv", text));
    }
    // Speedup over a PE-count axis.
    if let (Some(xi), Some(xk)) = (xi, x)
        && (xk == "workload.pes" || xk == "machine.pes")
    {
        let mut series: Groups<(f64, f64, String)> = Groups::new();
        let rows: Vec<(Vec<String>, f64, String)> = if oi.is_some() {
            best.iter()
                .map(|(k, (g, v))| (k.clone(), *v, g.clone()))
                .collect()
        } else {
            t.rows
                .iter()
                .map(|(k, v)| (k.clone(), *v, String::new()))
                .collect()
        };
        // Column positions after the optimum axis is dropped.
        let xpos = match oi {
            Some(o) if o < xi => xi - 1,
            _ => xi,
        };
        for (key, v, g) in rows {
            let Ok(p) = key[xpos].parse::<f64>() else {
                continue;
            };
            let skey: Vec<String> = key
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != xpos)
                .map(|(_, s)| s.clone())
                .collect();
            series.push(skey, (p, v, g));
        }
        let mut header: Vec<String> = t
            .axes
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != xi && Some(*i) != oi)
            .map(|(_, a)| a.clone())
            .collect();
        header.extend(["pes".into(), t.metric.clone()]);
        if let Some(oi) = oi {
            header.push(format!("best_{}", t.axes[oi]));
        }
        header.extend(["speedup".into(), "efficiency".into()]);
        let mut text = line(&header)? + "\n";
        for (key, pts) in &series.order {
            let s =
                models::scaling::speedup(&pts.iter().map(|(p, v, _)| (*p, *v)).collect::<Vec<_>>());
            for r in s {
                let mut cells = key.clone();
                cells.push(format!("{}", r.pes));
                cells.push(format!("{:.12}", r.time));
                if oi.is_some() {
                    let g = pts
                        .iter()
                        .find(|(p, _, _)| *p == r.pes)
                        .map_or(String::new(), |x| x.2.clone());
                    cells.push(g);
                }
                cells.push(format!("{:.6}", r.speedup));
                cells.push(format!("{:.6}", r.efficiency));
                text += &(line(&cells)? + "\n");
            }
        }
        out.push(("speedup.csv", text));
    }
    Ok(out)
}

/// `constant_time.csv`: per combination of the axes other than the size axis and `x`, per
/// value of `x` and per target time, the problem size that takes that time (log-log
/// interpolation between the two sizes around it; empty when no two sizes bracket it).
fn constant_time_file(
    t: &Table,
    x: Option<&str>,
    constant_time: Option<(&str, &[f64])>,
) -> Result<Vec<(&'static str, String)>> {
    let Some((size_key, targets)) = constant_time else {
        return Ok(Vec::new());
    };
    let idx = |k: &str| t.axes.iter().position(|a| a == k);
    let (Some(si), Some(xi)) = (idx(size_key), x.and_then(idx)) else {
        return Ok(Vec::new());
    };
    if si == xi {
        return Ok(Vec::new());
    }
    // Series: the other axes; within each, per x value, the (size, time) points.
    let mut groups: Groups<(String, f64, f64)> = Groups::new();
    for (vals, v) in &t.rows {
        let Ok(n) = vals[si].parse::<f64>() else {
            continue;
        };
        let key: Vec<String> = vals
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != si && *i != xi)
            .map(|(_, s)| s.clone())
            .collect();
        groups.push(key, (vals[xi].clone(), n, *v));
    }
    let mut header: Vec<String> = t
        .axes
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != si && *i != xi)
        .map(|(_, a)| a.clone())
        .collect();
    header.extend([
        t.axes[xi].clone(),
        format!("target_{}", t.metric),
        t.axes[si].clone(),
    ]);
    let mut text = line(&header)? + "\n";
    for (key, pts) in &groups.order {
        let mut xs: Vec<&String> = Vec::new();
        for p in pts {
            if !xs.contains(&&p.0) {
                xs.push(&p.0);
            }
        }
        for &target in targets {
            for xv in &xs {
                let curve: Vec<(f64, f64)> = pts
                    .iter()
                    .filter(|p| &&p.0 == xv)
                    .map(|p| (p.1, p.2))
                    .collect();
                let size = models::scaling::size_for_time(&curve, target)
                    .map_or(String::new(), |n| format!("{n:.6}"));
                let mut cells = key.clone();
                cells.extend([xv.to_string(), format!("{target:e}"), size]);
                text += &(line(&cells)? + "\n");
            }
        }
    }
    Ok(vec![("constant_time.csv", text)])
}
