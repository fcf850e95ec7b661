//! `whatif report DIR`: one self-contained HTML page (inline SVG, no scripts, no network) from
//! a sweep folder (`results.json` + `manifest.json`) and/or a replay folder (`whatif replay
//! --out`): sweep curves with a knee table, a timeline window, the time profile, usage per PE,
//! grain-size histograms per entry method, and a machine plot laid out on the topology.

use crate::svg::{self, LineChart, Series};
use anyhow::{Context, Result, bail};
use network_models::{NetSpec, Topology};
use serde_json::Value;
use sim_core::Bandwidth;
use sim_core::units::{parse_bytes, parse_duration};
use std::fmt::Write;
use std::path::{Path, PathBuf};

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A swept value as a number with its axis unit, if it has one.
fn numeric(v: &str) -> Option<(f64, &'static str)> {
    // A bare number is itself (a PE count is not 4 B/s).
    if let Ok(x) = v.parse::<f64>() {
        return Some((x, ""));
    }
    if let Ok(d) = parse_duration(v) {
        return Some((d.as_ps() as f64 / 1e6, "us"));
    }
    if let Ok(b) = Bandwidth::parse(v) {
        return Some((b.bytes_per_s() as f64 / 1e6, "MB/s"));
    }
    if let Ok(b) = parse_bytes(v) {
        return Some((b as f64, "bytes"));
    }
    v.parse::<f64>().ok().map(|x| (x, ""))
}

/// Where a curve first exceeds `factor` x its first value, interpolated in log x.
pub fn knee(points: &[(f64, f64)], factor: f64) -> Option<f64> {
    let base = points.first()?.1;
    let i = points.iter().position(|p| p.1 > factor * base)?;
    if i == 0 {
        return Some(points[0].0);
    }
    let (a, b) = (points[i - 1], points[i]);
    let f = (factor * base - a.1) / (b.1 - a.1);
    if a.0 > 0.0 && b.0 > 0.0 {
        Some((a.0.ln() + f * (b.0.ln() - a.0.ln())).exp())
    } else {
        Some(a.0 + f * (b.0 - a.0))
    }
}

struct Section {
    title: String,
    html: String,
}

fn sweep_section(dir: &Path) -> Result<Option<Section>> {
    let (mpath, rpath) = (dir.join("manifest.json"), dir.join("results.json"));
    if !mpath.exists() || !rpath.exists() {
        return Ok(None);
    }
    let m: Value = serde_json::from_str(&std::fs::read_to_string(&mpath)?)
        .with_context(|| format!("{}: not JSON", mpath.display()))?;
    let rows: Value = serde_json::from_str(&std::fs::read_to_string(&rpath)?)
        .with_context(|| format!("{}: not JSON", rpath.display()))?;
    let rows = rows.as_array().context("results.json is not a list")?;
    let study = m["study"].as_str().unwrap_or("study");
    let mut h = String::new();
    if rows.is_empty() {
        return Ok(Some(Section {
            title: format!("Study {study}"),
            html: "<p>No rows.</p>".into(),
        }));
    }
    let fixed = [
        "point",
        "fingerprint",
        "pes",
        "makespan_s",
        "mean_iteration_s",
        "iterations",
        "utilization",
        "blocks",
        "remote_messages",
        "remote_bytes",
        "lb_migrations",
        "lb_max_avg_load",
    ];
    let axes: Vec<String> = rows[0]
        .as_object()
        .map(|o| {
            o.keys()
                .filter(|k| !fixed.contains(&k.as_str()))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    // serde_json keeps keys sorted; restore the column order of the CSV (axis order).
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap_or_default();
    let header = csv_header(dir, "results.csv");
    let mut axes_ordered: Vec<String> = header
        .iter()
        .filter(|c| axes.contains(c))
        .cloned()
        .collect();
    if axes_ordered.len() != axes.len() {
        axes_ordered = axes;
    }
    let x_key = m["x"]
        .as_str()
        .map(String::from)
        .or_else(|| axes_ordered.first().cloned());
    let metric = if rows.iter().all(|r| r["mean_iteration_s"].is_f64()) {
        "mean_iteration_s"
    } else {
        "makespan_s"
    };
    let ymax = rows
        .iter()
        .filter_map(|r| r[metric].as_f64())
        .fold(0.0, f64::max);
    let (yscale, yunit) = if ymax >= 1.0 {
        (1.0, "s")
    } else if ymax >= 1e-3 {
        (1e3, "ms")
    } else {
        (1e6, "us")
    };
    let _ = write!(
        h,
        "<p>{} points; fingerprint {}; metric: <code>{metric}</code>.</p>",
        rows.len(),
        esc(m["fingerprint"].as_str().unwrap_or("-"))
    );
    if let Some(x) = &x_key {
        let label = |r: &Value| -> String {
            axes_ordered
                .iter()
                .filter(|k| Some(*k) != x_key.as_ref())
                .map(|k| {
                    format!(
                        "{}={}",
                        k.rsplit('.').next().unwrap_or(k),
                        r[k].as_str().unwrap_or("")
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let xs: Vec<String> = rows
            .iter()
            .map(|r| r[x].as_str().unwrap_or("").to_string())
            .collect();
        let nums: Vec<Option<(f64, &str)>> = xs.iter().map(|v| numeric(v)).collect();
        let is_num = nums.iter().all(Option::is_some);
        let unit = nums.first().copied().flatten().map_or("", |n| n.1);
        let mut cats: Vec<String> = Vec::new();
        for v in &xs {
            if !cats.contains(v) {
                cats.push(v.clone());
            }
        }
        let mut series: Vec<Series> = Vec::new();
        for (i, r) in rows.iter().enumerate() {
            let Some(y) = r[metric].as_f64() else {
                continue;
            };
            let xv = if is_num {
                nums[i].expect("numeric").0
            } else {
                cats.iter().position(|c| *c == xs[i]).unwrap_or(0) as f64
            };
            let name = label(r);
            let name = if name.is_empty() {
                "all".to_string()
            } else {
                name
            };
            match series.iter_mut().find(|s| s.name == name) {
                Some(s) => s.points.push((xv, y * yscale)),
                None => series.push(Series {
                    name,
                    points: vec![(xv, y * yscale)],
                }),
            }
        }
        for s in &mut series {
            s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        let log_x = is_num && series.iter().flat_map(|s| &s.points).all(|p| p.0 > 0.0) && {
            let (lo, hi) = series
                .iter()
                .flat_map(|s| &s.points)
                .fold((f64::MAX, 0.0f64), |(a, b), p| (a.min(p.0), b.max(p.0)));
            hi / lo >= 20.0
        };
        let x_label = if unit.is_empty() {
            x.clone()
        } else {
            format!("{x} ({unit})")
        };
        let fmt = |v: f64| svg::tick(v);
        let chart = LineChart {
            title: &format!("{study}: {metric} vs {x}"),
            x_label: &x_label,
            y_label: &format!("{metric} ({yunit})"),
            log_x,
            categories: (!is_num).then(|| cats.clone()),
            x_fmt: &fmt,
            series: series.clone(),
        };
        h.push_str("<figure>");
        if is_num {
            h.push_str(&chart.svg());
        } else {
            // Categories (strategies, models) are not a continuum: bars, not a line.
            h.push_str(&svg::grouped_bars(
                chart.title,
                chart.y_label,
                &cats,
                &chart.series,
            ));
        }
        h.push_str("</figure>");
        if is_num {
            let _ = write!(
                h,
                "<h3>Knees</h3><p>Where each curve first exceeds its value at the smallest {x} by 10% (interpolated in log {x}).</p><table class=\"knees\"><tr><th>series</th><th>at smallest {x}</th><th>knee{}</th></tr>",
                if unit.is_empty() {
                    String::new()
                } else {
                    format!(" ({unit})")
                }
            );
            for s in &series {
                let k = knee(&s.points, 1.1);
                let _ = write!(
                    h,
                    "<tr><td>{}</td><td>{} {yunit}</td><td>{}</td></tr>",
                    esc(&s.name),
                    svg::num(s.points[0].1),
                    k.map_or("beyond the range".into(), svg::num)
                );
            }
            h.push_str("</table>");
        }
    }
    h.push_str(&scaling_html(dir)?);
    // The rows themselves (first 200).
    h.push_str("<h3>Rows</h3><table class=\"rows\"><tr>");
    let cols: Vec<&String> = header.iter().collect();
    for c in &cols {
        let _ = write!(h, "<th>{}</th>", esc(c));
    }
    h.push_str("</tr>");
    for line in csv.lines().skip(1).take(200) {
        h.push_str("<tr>");
        for cell in line.split(',') {
            let _ = write!(h, "<td>{}</td>", esc(cell));
        }
        h.push_str("</tr>");
    }
    h.push_str("</table>");
    if rows.len() > 200 {
        let _ = write!(
            h,
            "<p>... {} more rows in results.csv.</p>",
            rows.len() - 200
        );
    }
    Ok(Some(Section {
        title: format!("Study {study}"),
        html: h,
    }))
}

/// Speedup and efficiency curves (speedup.csv) and the best grain (optimum.csv) of a sweep.
fn scaling_html(dir: &Path) -> Result<String> {
    let mut h = String::new();
    let sp = read_csv(dir, "speedup.csv")?;
    if !sp.is_empty() {
        let fixed = [
            "pes",
            "speedup",
            "efficiency",
            "makespan_s",
            "mean_iteration_s",
        ];
        let mut series: Vec<Series> = Vec::new();
        let mut eff: Vec<Series> = Vec::new();
        for r in &sp {
            let mut keys: Vec<(&String, &String)> = r
                .iter()
                .filter(|(k, _)| !fixed.contains(&k.as_str()) && !k.starts_with("best_"))
                .collect();
            keys.sort();
            let name = keys
                .iter()
                .map(|(k, v)| format!("{}={v}", k.rsplit('.').next().unwrap_or(k)))
                .collect::<Vec<_>>()
                .join(", ");
            let name = if name.is_empty() {
                "all".to_string()
            } else {
                name
            };
            let (Some(p), Some(s), Some(e)) = (
                field::<f64>(r, "pes"),
                field::<f64>(r, "speedup"),
                field::<f64>(r, "efficiency"),
            ) else {
                continue;
            };
            for (list, y) in [(&mut series, s), (&mut eff, e)] {
                match list.iter_mut().find(|x| x.name == name) {
                    Some(x) => x.points.push((p, y)),
                    None => list.push(Series {
                        name: name.clone(),
                        points: vec![(p, y)],
                    }),
                }
            }
        }
        let fmt = |v: f64| svg::tick(v);
        let _ = write!(
            h,
            "<h3>Scalability</h3><p>Speedup relative to the smallest P (P0 T(P0) / T(P)) and efficiency (speedup / P){}. Data: speedup.csv.</p><figure>",
            if sp[0].keys().any(|k| k.starts_with("best_")) {
                ", each at its best grain"
            } else {
                ""
            }
        );
        for (title, y, list) in [
            ("Speedup", "speedup", series),
            ("Efficiency", "efficiency", eff),
        ] {
            h.push_str(
                &LineChart {
                    title,
                    x_label: "PEs",
                    y_label: y,
                    log_x: true,
                    categories: None,
                    x_fmt: &fmt,
                    series: list,
                }
                .svg(),
            );
        }
        h.push_str("</figure>");
    }
    let op = read_csv(dir, "optimum.csv")?;
    if let Some(first) = op.first() {
        let csv = std::fs::read_to_string(dir.join("optimum.csv")).unwrap_or_default();
        let header: Vec<&str> = csv.lines().next().unwrap_or("").split(',').collect();
        let best = header
            .iter()
            .find(|c| c.starts_with("best_workload") || c.starts_with("best_"))
            .map_or("", |c| c);
        let _ = write!(
            h,
            "<h3>Optimal grain</h3><p>The value of <code>{}</code> with the least time, per combination of the other axes (the argmin MK derives from dT/dK = 0). Data: optimum.csv.</p><table><tr>",
            esc(best.trim_start_matches("best_"))
        );
        for c in &header {
            let _ = write!(h, "<th>{}</th>", esc(c));
        }
        h.push_str("</tr>");
        for r in &op {
            h.push_str("<tr>");
            for c in &header {
                let _ = write!(h, "<td>{}</td>", esc(r.get(*c).map_or("", String::as_str)));
            }
            h.push_str("</tr>");
        }
        h.push_str("</table>");
        let _ = first;
    }
    h.push_str(&constant_time_html(dir)?);
    Ok(h)
}

/// The column names of a CSV file of `dir` (empty when it cannot be read).
fn csv_header(dir: &Path, name: &str) -> Vec<String> {
    let csv = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
    csv.lines()
        .next()
        .unwrap_or("")
        .split(',')
        .map(String::from)
        .collect()
}

/// Constant-time curves (constant_time.csv): the problem size reaching each target time, over
/// the plot axis.
fn constant_time_html(dir: &Path) -> Result<String> {
    let rows = read_csv(dir, "constant_time.csv")?;
    if rows.is_empty() {
        return Ok(String::new());
    }
    let header = csv_header(dir, "constant_time.csv");
    let n = header.len();
    if n < 3 {
        return Ok(String::new());
    }
    let (xk, tk, sk) = (&header[n - 3], &header[n - 2], &header[n - 1]);
    let mut series: Vec<Series> = Vec::new();
    for r in &rows {
        let (Some(x), Some(t), Some(size)) = (
            field::<f64>(r, xk),
            field::<f64>(r, tk),
            field::<f64>(r, sk),
        ) else {
            continue;
        };
        let mut name: Vec<String> = header[..n - 3]
            .iter()
            .map(|k| {
                format!(
                    "{}={}",
                    k.rsplit('.').next().unwrap_or(k),
                    r.get(k).map_or("", String::as_str)
                )
            })
            .collect();
        name.push(format!(
            "T = {}",
            analysis::fmt_ps((t * 1e12).round() as u64)
        ));
        let name = name.join(", ");
        match series.iter_mut().find(|s| s.name == name) {
            Some(s) => s.points.push((x, size)),
            None => series.push(Series {
                name,
                points: vec![(x, size)],
            }),
        }
    }
    if series.is_empty() {
        return Ok(String::new());
    }
    let fmt = |v: f64| svg::tick(v);
    let short = |k: &str| k.rsplit('.').next().unwrap_or(k).to_string();
    let (x_label, y_label) = (short(xk), short(sk));
    let mut h = String::new();
    let _ = write!(
        h,
        "<h3>Constant-time curves</h3><p>The value of <code>{}</code> at which the {} reaches each target time, over <code>{}</code> (log-log interpolation between the swept values; a missing point: no two swept values bracket the target). Data: constant_time.csv.</p><figure>",
        esc(sk),
        esc(tk.trim_start_matches("target_")),
        esc(xk)
    );
    h.push_str(
        &LineChart {
            title: "Problem size at constant time",
            x_label: &x_label,
            y_label: &y_label,
            log_x: true,
            categories: None,
            x_fmt: &fmt,
            series,
        }
        .svg(),
    );
    h.push_str("</figure>");
    Ok(h)
}

struct Rec {
    block: u32,
    entry: String,
    pe: u32,
    start: u64,
    end: u64,
}

fn read_timeline(path: &Path) -> Result<Vec<Rec>> {
    let mut r =
        csv::Reader::from_path(path).with_context(|| format!("cannot read {}", path.display()))?;
    let h = r.headers()?.clone();
    let col = |n: &str| {
        h.iter()
            .position(|c| c == n)
            .with_context(|| format!("{}: no column {n}", path.display()))
    };
    let (bl, e, p, s, en) = (
        col("block")?,
        col("entry")?,
        col("pe")?,
        col("start_s")?,
        col("end_s")?,
    );
    let ps = |v: &str| {
        crate::report::parse_secs(v)
            .with_context(|| format!("{}: `{v}` is not a time in seconds", path.display()))
    };
    let mut v = Vec::new();
    for (line, rec) in r.records().enumerate() {
        let rec = rec?;
        let bad = |what: &str| format!("{} line {}: {what}", path.display(), line + 2);
        v.push(Rec {
            block: rec[bl]
                .parse()
                .with_context(|| bad("block is not a number"))?,
            entry: rec[e].to_string(),
            pe: rec[p].parse().with_context(|| bad("pe is not a number"))?,
            start: ps(&rec[s])?,
            end: ps(&rec[en])?,
        });
    }
    Ok(v)
}

/// The rows of an optional CSV file of `dir` as header-keyed maps (empty when absent).
fn read_csv(dir: &Path, name: &str) -> Result<Vec<std::collections::HashMap<String, String>>> {
    let p = dir.join(name);
    if !p.exists() {
        return Ok(Vec::new());
    }
    let mut r =
        csv::Reader::from_path(&p).with_context(|| format!("cannot read {}", p.display()))?;
    let h = r.headers()?.clone();
    let mut out = Vec::new();
    for rec in r.records() {
        let rec = rec.with_context(|| format!("{}: not CSV", p.display()))?;
        out.push(
            h.iter()
                .zip(rec.iter())
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
    }
    Ok(out)
}

/// Calls `f` with the named columns of each row of `dir/name`, streaming (a report of a
/// million PEs reads million-row files); `Ok(false)` when the file is absent.
fn csv_rows(
    dir: &Path,
    name: &str,
    cols: &[&str],
    mut f: impl FnMut(&[&str]) -> Result<()>,
) -> Result<bool> {
    let p = dir.join(name);
    if !p.exists() {
        return Ok(false);
    }
    let mut r =
        csv::Reader::from_path(&p).with_context(|| format!("cannot read {}", p.display()))?;
    let h = r.headers()?.clone();
    let idx: Vec<usize> = cols
        .iter()
        .map(|c| {
            h.iter()
                .position(|x| x == *c)
                .with_context(|| format!("{}: no column {c}", p.display()))
        })
        .collect::<Result<_>>()?;
    let mut rec = csv::StringRecord::new();
    let mut line = 1usize;
    loop {
        line += 1;
        if !r
            .read_record(&mut rec)
            .with_context(|| format!("{}: not CSV", p.display()))?
        {
            break;
        }
        let v: Vec<&str> = idx.iter().map(|&i| rec.get(i).unwrap_or("")).collect();
        f(&v).with_context(|| format!("{} line {line}", p.display()))?;
    }
    Ok(true)
}

/// A number in a CSV field.
fn num<T: std::str::FromStr>(v: &str) -> Result<T> {
    v.parse()
        .ok()
        .with_context(|| format!("`{v}` is not a number"))
}

fn field<T: std::str::FromStr>(
    row: &std::collections::HashMap<String, String>,
    k: &str,
) -> Option<T> {
    row.get(k).and_then(|v| v.parse().ok())
}

/// Cells, title and cell labeller of a machine plot.
type Layout = (
    Vec<Vec<Option<f64>>>,
    String,
    Box<dyn Fn(usize, usize) -> String>,
);

/// Per-node utilisation laid out on the topology: a 2-D grid for meshes and tori (3-D: the z
/// planes side by side), a Gray-code grid for hypercubes (neighbouring cells differ in one
/// address bit, as in Rover's machine plots), a near-square grid otherwise.
fn machine_plot(util: &[f64], net: Option<&NetSpec>, when: &str, max_cells: usize) -> String {
    let pes = util.len();
    let (topo, ppn) = match net.and_then(|n| n.topology()) {
        Some((t, ppn)) => (Some(t.clone()), ppn as usize),
        None => (None, 1),
    };
    let nodes = pes.div_ceil(ppn.max(1));
    let node_util = |n: usize| -> Option<f64> {
        let r = n * ppn..((n + 1) * ppn).min(pes);
        (!r.is_empty()).then(|| r.clone().map(|p| util[p]).sum::<f64>() / r.len() as f64)
    };
    let gray = |i: usize| i ^ (i >> 1);
    // Past `max_cells` nodes, a near-square grid of consecutive node groups (averaged)
    // keeps the page small.
    let grouped = nodes > max_cells;
    let (cells, title, label): Layout = match &topo {
        _ if grouped => {
            let g = nodes.div_ceil(max_cells);
            let n = nodes.div_ceil(g);
            let cols = (n as f64).sqrt().ceil().max(1.0) as usize;
            let mean = |k: usize| {
                let r = k * g..((k + 1) * g).min(nodes);
                let v: Vec<f64> = r.filter_map(node_util).collect();
                (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
            };
            let cells = (0..n.div_ceil(cols))
                .map(|r| {
                    (0..cols)
                        .map(|c| r * cols + c)
                        .map(|k| if k < n { mean(k) } else { None })
                        .collect()
                })
                .collect();
            (
                cells,
                format!("Machine: {nodes} nodes in groups of {g} (mean utilisation), row by row"),
                Box::new(move |r, c| {
                    let k = r * cols + c;
                    format!("nodes {}-{}", k * g, (k + 1) * g - 1)
                }),
            )
        }
        Some(Topology::Hypercube { dim }) => {
            let (rb, cb) = ((*dim / 2) as usize, (*dim - *dim / 2) as usize);
            let cells = (0..1usize << rb)
                .map(|r| {
                    (0..1usize << cb)
                        .map(|c| {
                            let n = (gray(r) << cb) | gray(c);
                            if n < nodes { node_util(n) } else { None }
                        })
                        .collect()
                })
                .collect();
            (
                cells,
                format!("Machine: {dim}-D hypercube, Gray-code layout (node utilisation)"),
                Box::new(move |r, c| format!("node {}", (gray(r) << cb) | gray(c))),
            )
        }
        Some(Topology::Mesh { dims } | Topology::Torus { dims }) if !dims.is_empty() => {
            let a = dims[0] as usize;
            let b = dims.get(1).copied().unwrap_or(1) as usize;
            let planes: usize = dims
                .iter()
                .skip(2)
                .map(|d| *d as usize)
                .product::<usize>()
                .max(1);
            let cells = (0..b)
                .map(|y| {
                    (0..planes)
                        .flat_map(|z| (0..a).map(move |x| (x, z)))
                        .map(|(x, z)| {
                            let n = x + a * (y + b * z);
                            if n < nodes { node_util(n) } else { None }
                        })
                        .collect()
                })
                .collect();
            let kind = if matches!(topo, Some(Topology::Torus { .. })) {
                "torus"
            } else {
                "mesh"
            };
            let dims_s = dims
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join("x");
            (
                cells,
                format!("Machine: {dims_s} {kind} (x across, y down, z planes side by side)"),
                Box::new(move |y, col| {
                    let (z, x) = (col / a, col % a);
                    format!("node {} ({x},{y},{z})", x + a * (y + b * z))
                }),
            )
        }
        Some(Topology::FatTree { k, levels, .. }) => {
            // One row per leaf switch, its k hosts across.
            let k = *k as usize;
            let rows = k.pow(levels.saturating_sub(1));
            let cells = (0..rows)
                .map(|r| {
                    (0..k)
                        .map(|c| {
                            let n = r * k + c;
                            if n < nodes { node_util(n) } else { None }
                        })
                        .collect()
                })
                .collect();
            (
                cells,
                format!(
                    "Machine: {k}-ary {levels}-tree fat-tree, one row per leaf switch (host utilisation)"
                ),
                Box::new(move |r, c| format!("host {} (leaf switch {r})", r * k + c)),
            )
        }
        Some(Topology::Dragonfly {
            groups,
            routers,
            hosts,
            ..
        }) => {
            // One row per group, its routers' hosts across.
            let per_group = (*routers * *hosts) as usize;
            let h = *hosts as usize;
            let cells = (0..*groups as usize)
                .map(|g| {
                    (0..per_group)
                        .map(|c| {
                            let n = g * per_group + c;
                            if n < nodes { node_util(n) } else { None }
                        })
                        .collect()
                })
                .collect();
            (
                cells,
                format!(
                    "Machine: dragonfly, one row per group ({routers} routers x {hosts} hosts across; host utilisation)"
                ),
                Box::new(move |g, c| {
                    format!("host {} (group {g}, router {})", g * per_group + c, c / h)
                }),
            )
        }
        _ => {
            let cols = (nodes as f64).sqrt().ceil().max(1.0) as usize;
            let cells = (0..nodes.div_ceil(cols))
                .map(|r| {
                    (0..cols)
                        .map(|c| r * cols + c)
                        .map(|n| if n < nodes { node_util(n) } else { None })
                        .collect()
                })
                .collect();
            (
                cells,
                "Machine: PEs (no topology in the network model)".to_string(),
                Box::new(move |r, c| format!("PE {}", r * cols + c)),
            )
        }
    };
    svg::grid(
        &if when.is_empty() {
            title
        } else {
            when.to_string()
        },
        &cells,
        &*label,
        &|u| format!("{:.1}% busy", u * 100.0),
        ("idle", "100% busy"),
    )
}

/// "Why is it slow?": the critical path's breakdown and the ranked findings of
/// `analysis.json` (written by `whatif replay --out --report` and `whatif analyze --out`).
fn analysis_html(dir: &Path) -> Result<Option<String>> {
    let p = dir.join("analysis.json");
    if !p.exists() {
        return Ok(None);
    }
    let a: Value = serde_json::from_str(&std::fs::read_to_string(&p)?)
        .with_context(|| format!("{}: not JSON", p.display()))?;
    let cp = &a["critical_path"];
    let n = &cp["network"];
    let m = a["makespan_ps"].as_u64().unwrap_or(0).max(1) as f64;
    let g = |v: &Value| v.as_u64().unwrap_or(0) as f64;
    let parts = [
        ("compute", g(&cp["compute_ps"])),
        ("CPU overheads", g(&cp["overhead_ps"])),
        ("net: overhead", g(&n["overhead_ps"])),
        ("net: latency", g(&n["latency_ps"])),
        ("net: serialisation", g(&n["serialization_ps"])),
        ("net: queueing", g(&n["queueing_ps"])),
        ("idle", g(&cp["idle_ps"])),
    ];
    let mut h = String::from("<h3>Why is it slow?</h3>");
    let _ = write!(
        h,
        "<p>The critical path (the chain of blocks, messages and waits that ends with the last block) has {} blocks on {} objects and {} remote messages; its parts sum to the makespan. Each finding below was re-simulated with its cause removed; the command reproduces it.</p><figure>",
        cp["steps"].as_array().map_or(0, Vec::len),
        cp["objects_on_path"],
        n["remote_messages"]
    );
    h.push_str(&svg::bars(
        "Critical path by cause (fraction of the makespan)",
        "fraction",
        &parts
            .iter()
            .map(|(k, v)| (k.to_string(), v / m))
            .collect::<Vec<_>>(),
    ));
    h.push_str("</figure><table><tr><th>entry method on the path</th><th>compute (us)</th><th>share</th><th>blocks</th></tr>");
    for e in cp["by_entry"].as_array().into_iter().flatten().take(8) {
        let _ = write!(
            h,
            "<tr><td style=\"text-align:left\">{}</td><td>{}</td><td>{:.1}%</td><td>{}</td></tr>",
            esc(e["name"].as_str().unwrap_or("")),
            svg::num(g(&e["compute_ps"]) / 1e6),
            100.0 * g(&e["compute_ps"]) / m,
            e["blocks"]
        );
    }
    h.push_str("</table><table><tr><th>#</th><th>diagnosis</th><th>makespan without it (us)</th><th>saves</th><th style=\"text-align:left\">evidence</th><th style=\"text-align:left\">reproduce</th></tr>");
    for (i, f) in a["findings"].as_array().into_iter().flatten().enumerate() {
        let saved = f["saved_ps"].as_i64().unwrap_or(0);
        let _ = write!(
            h,
            "<tr><td>{}</td><td style=\"text-align:left\">{}</td><td>{}</td><td>{:.1}%</td><td style=\"text-align:left\">{}</td><td style=\"text-align:left\"><code>{}</code></td></tr>",
            i + 1,
            esc(&f["diagnosis"].as_str().unwrap_or("").replace('_', " ")),
            svg::num(g(&f["what_if_makespan_ps"]) / 1e6),
            100.0 * saved as f64 / m,
            esc(f["evidence"].as_str().unwrap_or("")),
            esc(f["command"].as_str().unwrap_or(""))
        );
    }
    h.push_str("</table>");
    Ok(Some(h))
}

/// Cells of a machine plot at most (nodes are grouped beyond).
const MAX_MACHINE_CELLS: usize = 4096;

/// Top entry methods drawn in their own colours; the rest share grey ("other").
const TOP_ENTRIES: usize = analysis::views::OVERVIEW_TOP_ENTRIES;
/// Rows of the whole-run overview at most (PEs are grouped beyond).
const OVERVIEW_ROWS: usize = analysis::views::OVERVIEW_ROWS;
/// Columns (time pixels) of the overview.
const OVERVIEW_COLS: usize = analysis::views::OVERVIEW_COLS;
/// Rows of a zoomed window at most.
const WINDOW_ROWS: usize = 48;

/// An HTML legend (wraps instead of clipping).
fn legend(names: &[String], colours: &[&str]) -> String {
    let items: Vec<String> = names
        .iter()
        .zip(colours)
        .map(|(n, c)| {
            format!(
                "<span class=\"key\"><span style=\"background:{c}\"></span>{}</span>",
                esc(n)
            )
        })
        .collect();
    format!("<div class=\"legend\">{}</div>", items.join(" "))
}

fn fmt_time(ps: f64) -> String {
    let (d, u) = svg::time_unit(ps.abs().max(1.0) * 2.0);
    format!("{} {u}", svg::num(ps / d))
}

fn fmt_bytes(b: u64) -> String {
    match b {
        0..1024 => format!("{b} B"),
        1024..1048576 => format!("{} KiB", b / 1024),
        1048576..1073741824 => format!("{} MiB", b / 1048576),
        _ => format!("{} GiB", b / 1073741824),
    }
}

/// A zoomed window: where it is, why, and the PE rows it shows.
struct Zoom {
    t0: u64,
    t1: u64,
    why: String,
    pe: Option<u32>,
}

/// Windows at the points the top findings name: for each of the first three findings that
/// save time, the critical-path step that finding is about (the longest step of the hot
/// entry or bottleneck object, the costliest message, the longest scheduling wait), widened
/// to show its neighbourhood. Without findings: the start and the end of the run.
fn zooms(dir: &Path, makespan: u64) -> Result<Vec<Zoom>> {
    let steps = read_csv(dir, "critical_path.csv")?;
    let a: Value = match std::fs::read_to_string(dir.join("analysis.json")) {
        Ok(t) => serde_json::from_str(&t).unwrap_or(Value::Null),
        Err(_) => Value::Null,
    };
    let num =
        |r: &std::collections::HashMap<String, String>, k: &str| field::<u64>(r, k).unwrap_or(0);
    let net = |r: &std::collections::HashMap<String, String>| {
        [
            "net_overhead_ps",
            "net_latency_ps",
            "net_serialization_ps",
            "net_queueing_ps",
        ]
        .iter()
        .map(|k| num(r, k))
        .sum::<u64>()
    };
    let widen = |r: &std::collections::HashMap<String, String>, why: String| {
        let (s, e) = (num(r, "start_ps"), num(r, "end_ps"));
        let from = s.saturating_sub(net(r) + num(r, "idle_before_ps"));
        let span = (e - from).max(1);
        // Three times the step, between 1/40 and 1/4 of the run; a step longer than that
        // is shown by its end (where the path goes on).
        let w = (3 * span).clamp(makespan / 40, makespan / 4).max(1);
        let c = if w >= span {
            from + span / 2
        } else {
            e.saturating_sub(w / 6)
        };
        let t0 = c.saturating_sub(w / 2).min(makespan.saturating_sub(w));
        Zoom {
            t0,
            t1: (t0 + w).min(makespan.max(1)),
            why,
            pe: field(r, "pe"),
        }
    };
    let best = |key: &dyn Fn(&std::collections::HashMap<String, String>) -> Option<u64>| {
        steps
            .iter()
            .filter_map(|r| key(r).map(|k| (k, r)))
            .max_by_key(|(k, _)| *k)
            .map(|(_, r)| r)
    };
    let mut out = Vec::new();
    for f in a["findings"].as_array().into_iter().flatten() {
        if out.len() == 3 || f["saved_ps"].as_i64().unwrap_or(0) <= 0 {
            continue;
        }
        let w = &f["what_if"];
        let target = &w["target"];
        let step = match (w["kind"].as_str(), target["kind"].as_str()) {
            (Some("faster"), Some("entry")) => {
                let name = target["name"].as_str().unwrap_or("").to_string();
                best(&|r| (r.get("entry") == Some(&name)).then(|| num(r, "compute_ps")))
            }
            (Some("faster"), Some("object")) => {
                let id = target["name"].as_u64().map(|v| v.to_string());
                best(&|r| (r.get("object") == id.as_ref()).then(|| num(r, "compute_ps")))
            }
            (Some("ideal_network"), _) => best(&|r| Some(net(r))),
            (Some("critical_path_priority"), _) => best(&|r| Some(num(r, "queued_ps"))),
            _ => best(&|r| Some(num(r, "compute_ps"))),
        };
        if let Some(r) = step {
            let block = r.get("block").cloned();
            // Says what the window shows, as it shows it: the block's own run.
            let why = format!(
                "{}: {} saves {:.1}%; the path's `{}` block on PE {} runs from {} to {}",
                f["diagnosis"].as_str().unwrap_or("").replace('_', " "),
                f["remedy"].as_str().unwrap_or(""),
                100.0 * f["saved_fraction"].as_f64().unwrap_or(0.0),
                r.get("entry").map_or("", String::as_str),
                r.get("pe").map_or("", String::as_str),
                fmt_time(num(r, "start_ps") as f64),
                fmt_time(num(r, "end_ps") as f64)
            );
            // Two findings about the same step share its window.
            match out.iter_mut().find(|(b, _)| *b == block) {
                Some((_, z)) => {
                    let z: &mut Zoom = z;
                    z.why = format!("{}; {}", z.why, why);
                }
                None => out.push((block, widen(r, why))),
            }
        }
    }
    let mut out: Vec<Zoom> = out.into_iter().map(|(_, z)| z).collect();
    if out.is_empty() && makespan > 0 {
        let w = (makespan / 20).max(1);
        out.push(Zoom {
            t0: 0,
            t1: w,
            why: "the start of the run".into(),
            pe: None,
        });
        out.push(Zoom {
            t0: makespan - w,
            t1: makespan,
            why: "the end of the run".into(),
            pe: None,
        });
    }
    Ok(out)
}

fn replay_section(dir: &Path) -> Result<Option<Section>> {
    let spath = dir.join("summary.json");
    if !spath.exists() || !dir.join("timeline.csv").exists() {
        return Ok(None);
    }
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&spath)?)
        .with_context(|| format!("{}: not JSON", spath.display()))?;
    let tl = read_timeline(&dir.join("timeline.csv"))?;
    let pes = s["pes"].as_u64().unwrap_or(1).max(1);
    // Per-PE arrays follow; a replay's PE count is a u32, and more than 2^26 PEs would not
    // fit a report anyway.
    if pes > 1 << 26 {
        return Err(crate::BadInput(format!(
            "{}: {pes} PEs; a report covers at most {} PEs",
            spath.display(),
            1u64 << 26
        ))
        .into());
    }
    let pes = pes as u32;
    if let Some(r) = tl.iter().find(|r| r.pe >= pes) {
        bail!(
            "{}: block {} on PE {} but summary.json says {pes} PEs",
            dir.join("timeline.csv").display(),
            r.block,
            r.pe
        );
    }
    let makespan = s["makespan_ps"].as_u64().unwrap_or(0);
    let span = makespan.max(1) as f64;
    let net: Option<NetSpec> = s["net"].as_str().and_then(|n| n.parse().ok());
    let mut h = String::new();
    let _ = write!(
        h,
        "<table class=\"summary\"><tr><th>trace</th><td>{}</td></tr><tr><th>network</th><td>{}</td></tr><tr><th>PEs</th><td>{pes}</td></tr><tr><th>makespan</th><td>{}</td></tr><tr><th>utilisation</th><td>{:.1}%</td></tr><tr><th>blocks</th><td>{}</td></tr><tr><th>messages</th><td>{} ({} remote)</td></tr></table>",
        esc(s["trace"].as_str().unwrap_or("")),
        esc(s["net"].as_str().unwrap_or("")),
        fmt_time(makespan as f64),
        s["utilization"].as_f64().unwrap_or(0.0) * 100.0,
        s["blocks"],
        s["messages"],
        s["remote_messages"]
    );
    // What the outputs left out (notes.txt, from `replay --out`).
    if let Ok(text) = std::fs::read_to_string(dir.join("notes.txt")) {
        for line in text.lines().filter(|l| !l.trim().is_empty()).take(20) {
            let _ = write!(h, "<p class=\"note\">{}</p>", esc(line));
        }
    }
    h.push_str(&files_html(dir));
    // Entry methods: the top ones by busy time get stable colours everywhere in the section.
    // Their totals come from entries.csv (every block), else from the timeline.
    let mut entries: Vec<String> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = Default::default();
    let mut totals: Vec<u64> = Vec::new();
    let from_csv = csv_rows(dir, "entries.csv", &["name", "total_s", "blocks"], |v| {
        if v[2] == "0" {
            // Never ran: nothing to colour.
            return Ok(());
        }
        index.entry(v[0].to_string()).or_insert(entries.len());
        entries.push(v[0].to_string());
        totals.push(
            crate::report::parse_secs(v[1])
                .with_context(|| format!("`{}` is not a time in seconds", v[1]))?,
        );
        Ok(())
    })?;
    let mut eidx = Vec::with_capacity(tl.len());
    for r in &tl {
        let i = *index.entry(r.entry.clone()).or_insert_with(|| {
            entries.push(r.entry.clone());
            totals.push(0);
            entries.len() - 1
        });
        if !from_csv {
            totals[i] += r.end - r.start;
        }
        eidx.push(i);
    }
    let (class_of, top) = analysis::views::top_classes(&totals, TOP_ENTRIES);
    let other = entries.len() > top.len();
    let classes = top.len() + usize::from(other);
    let mut names: Vec<String> = top.iter().map(|&e| entries[e].clone()).collect();
    if other {
        names.push(format!(
            "other ({} entry methods)",
            entries.len() - top.len()
        ));
    }
    let colours: Vec<&str> = (0..classes)
        .map(|k| svg::class_colour(k, other, classes))
        .collect();
    let key = legend(&names, &colours);
    let colour_of = |e: usize| colours[class_of[e] as usize];
    if let Some(a) = analysis_html(dir)? {
        h.push_str(&a);
    }
    // The whole run.
    let zs = zooms(dir, makespan)?;
    let group = (pes as usize).div_ceil(OVERVIEW_ROWS).max(1);
    let rows = (pes as usize).div_ceil(group);
    let row_of_pe: Vec<u32> = (0..pes).map(|p| p / group as u32).collect();
    let row_labels: Vec<String> = (0..rows)
        .map(|r| {
            let (a, b) = (r * group, ((r + 1) * group).min(pes as usize) - 1);
            if a == b {
                format!("PE {a}")
            } else {
                format!("PE {a}-{b}")
            }
        })
        .collect();
    // The overview: from overview.csv (made from every block), else from the timeline.
    let mut dominant = vec![u16::MAX; rows * OVERVIEW_COLS];
    let mut fraction = vec![0.0f64; rows * OVERVIEW_COLS];
    let from_overview = csv_rows(
        dir,
        "overview.csv",
        &[
            "row", "col", "t0_ps", "t1_ps", "busy_ps", "dominant", "pe_first", "pe_last",
        ],
        |v| {
            let (row, col): (usize, usize) = (num(v[0])?, num(v[1])?);
            let (a, b, busy): (u64, u64, u64) = (num(v[2])?, num(v[3])?, num(v[4])?);
            let (p0, p1): (u64, u64) = (num(v[6])?, num(v[7])?);
            if row >= rows || col >= OVERVIEW_COLS || b <= a || p1 < p0 {
                bail!("row {row}, column {col} is outside the overview of {rows} rows");
            }
            let i = row * OVERVIEW_COLS + col;
            dominant[i] = index.get(v[5]).map_or(top.len() as u16, |&e| class_of[e]);
            fraction[i] = (busy as f64 / ((b - a) as f64 * (p1 - p0 + 1) as f64)).min(1.0);
            Ok(())
        },
    )?;
    if !from_overview {
        let runs: Vec<analysis::views::Run> = tl
            .iter()
            .zip(&eidx)
            .map(|(r, &e)| analysis::views::Run {
                pe: r.pe,
                class: class_of[e],
                start_ps: r.start,
                end_ps: r.end,
            })
            .collect();
        let ras = analysis::views::raster(
            &runs,
            &row_of_pe,
            rows,
            classes,
            (0, makespan.max(1)),
            OVERVIEW_COLS,
        )
        .context("the overview")?;
        fraction = (0..rows * OVERVIEW_COLS)
            .map(|i| ras.fraction(i / OVERVIEW_COLS, i % OVERVIEW_COLS))
            .collect();
        dominant = ras.dominant;
    }
    let letters = ["A", "B", "C", "D"];
    let marks: Vec<(f64, f64, String)> = zs
        .iter()
        .zip(letters)
        .map(|(z, l)| (z.t0 as f64, z.t1 as f64, l.to_string()))
        .collect();
    let _ = write!(
        h,
        "<h3>The whole run</h3><p>Every PE{} over all {} of the run, {} time columns of {} each; a cell takes the colour of the entry method that ran most in it, darker the busier it was (blank: idle). Dashed boxes mark the zoomed windows below.</p><figure>",
        if group > 1 {
            format!(" (rows of {group} PEs, averaged)")
        } else {
            String::new()
        },
        fmt_time(span),
        OVERVIEW_COLS,
        fmt_time(span / OVERVIEW_COLS as f64)
    );
    h.push_str(
        &svg::Overview {
            title: &format!("Timeline overview: {pes} PEs, 0 to {}", fmt_time(span)),
            rows: &row_labels,
            span_ps: (0.0, span),
            cols: OVERVIEW_COLS,
            dominant: &dominant,
            fraction: &fraction,
            colours: &colours,
            names: &names,
            marks: &marks,
        }
        .svg(),
    );
    let _ = write!(h, "<figcaption>{key}</figcaption></figure>");
    // Zoomed windows, with the critical path outlined.
    let critical: std::collections::HashSet<u32> = read_csv(dir, "critical_path.csv")?
        .iter()
        .filter_map(|r| field(r, "block"))
        .collect();
    let reps: Vec<u32> = read_csv(dir, "clusters.csv")?
        .iter()
        .filter(|r| r.get("role").is_some_and(|x| x != "member"))
        .filter_map(|r| field(r, "pe"))
        .collect();
    for (z, l) in zs.iter().zip(letters) {
        let mut shown: Vec<u32> = if pes as usize <= WINDOW_ROWS {
            (0..pes).collect()
        } else {
            let mut v: Vec<u32> = reps.iter().copied().take(WINDOW_ROWS - 1).collect();
            v.extend(z.pe);
            v.sort_unstable();
            v.dedup();
            v
        };
        if shown.is_empty() {
            shown = (0..pes.min(WINDOW_ROWS as u32)).collect();
        }
        let row: std::collections::HashMap<u32, usize> =
            shown.iter().enumerate().map(|(i, &p)| (p, i)).collect();
        let mut blocks = Vec::new();
        for (r, &e) in tl.iter().zip(&eidx) {
            if r.end > z.t0 && r.start < z.t1 && blocks.len() < 20_000 {
                if let Some(&i) = row.get(&r.pe) {
                    blocks.push((
                        i,
                        r.start as f64,
                        r.end as f64,
                        colour_of(e),
                        format!(
                            "{} (block {}) on PE {}: {} - {}",
                            r.entry,
                            r.block,
                            r.pe,
                            fmt_time(r.start as f64),
                            fmt_time(r.end as f64)
                        ),
                        critical.contains(&r.block),
                    ));
                }
            }
        }
        let labels: Vec<String> = shown.iter().map(|p| format!("PE {p}")).collect();
        let _ = write!(
            h,
            "<h3>Window {l}: {}</h3><p>{} to {}{}; blocks outlined in black are on the critical path.</p><figure>",
            esc(&z.why),
            fmt_time(z.t0 as f64),
            fmt_time(z.t1 as f64),
            if pes as usize > WINDOW_ROWS {
                format!(
                    "; {} of {pes} PEs: the k-means representatives (clusters.csv) and the PE named",
                    shown.len()
                )
            } else {
                String::new()
            }
        );
        h.push_str(&svg::window(
            &format!(
                "Window {l}: {} - {}",
                fmt_time(z.t0 as f64),
                fmt_time(z.t1 as f64)
            ),
            &labels,
            (z.t0 as f64, z.t1 as f64),
            &blocks,
        ));
        let _ = write!(h, "<figcaption>{key}</figcaption></figure>");
    }
    // Time profile: utilisation by entry method over time, from time_profile.csv (every
    // block), else over 100 bins of the timeline.
    let mut prof: Vec<(u64, u64, usize, u64)> = Vec::new();
    let from_profile = csv_rows(
        dir,
        "time_profile.csv",
        &["bin_start_ps", "bin_ps", "entry", "busy_ps"],
        |v| {
            let e = index.get(v[2]).copied().unwrap_or(usize::MAX);
            prof.push((num(v[0])?, num(v[1])?, e, num(v[3])?));
            Ok(())
        },
    )?;
    // The file's bins, merged into at most 200 columns.
    let (bins, bin) = match prof.first() {
        Some(&(_, w, _, _)) if from_profile && w > 0 => {
            let n = prof.iter().map(|p| p.0 / w).max().unwrap_or(0) + 1;
            let merge = n.div_ceil(200).max(1);
            (n.div_ceil(merge) as usize, w.saturating_mul(merge))
        }
        _ => (100usize, makespan.div_ceil(100).max(1)),
    };
    let mut layers = vec![vec![0.0f64; bins]; classes];
    for &(a, _, e, busy) in &prof {
        let k = ((a / bin) as usize).min(bins - 1);
        let c = class_of.get(e).map_or(classes - 1, |&c| c as usize);
        layers[c.min(classes - 1)][k] += busy as f64;
    }
    for (r, &e) in tl.iter().zip(&eidx).filter(|_| !from_profile) {
        let (mut a, b) = (r.start, r.end);
        while a < b {
            let k = ((a / bin) as usize).min(bins - 1);
            let edge = if k == bins - 1 {
                b
            } else {
                ((k as u64 + 1) * bin).min(b)
            };
            layers[class_of[e] as usize][k] += (edge - a) as f64;
            a = edge;
        }
    }
    for l in &mut layers {
        for v in l.iter_mut() {
            *v /= bin as f64 * pes as f64;
        }
    }
    h.push_str("<h3>Time profile</h3><figure>");
    h.push_str(&svg::stacked(
        "Utilisation by entry method over time",
        (bin * bins as u64) as f64,
        &names,
        &colours,
        &layers,
    ));
    let _ = write!(h, "<figcaption>{key}</figcaption></figure>");
    h.push_str(&iterations_html(dir)?);
    h.push_str(&metrics_html(dir)?);
    // Usage per PE, split by entry method.
    let ugroup = (pes as usize).div_ceil(64).max(1);
    let ubars = (pes as usize).div_ceil(ugroup);
    let mut usage = vec![vec![0.0f64; ubars]; classes];
    let from_usage = csv_rows(dir, "usage.csv", &["pe", "entry", "busy_ps"], |v| {
        let pe: usize = num(v[0])?;
        let busy: u64 = num(v[2])?;
        if pe >= pes as usize {
            bail!("PE {pe} of {pes}");
        }
        let c = index
            .get(v[1])
            .map_or(classes - 1, |&e| class_of[e] as usize);
        usage[c.min(classes - 1)][pe / ugroup] += busy as f64;
        Ok(())
    })?;
    for (r, &e) in tl.iter().zip(&eidx).filter(|_| !from_usage) {
        usage[class_of[e] as usize][r.pe as usize / ugroup] += (r.end - r.start) as f64;
    }
    for (b, _) in (0..ubars).zip(0..) {
        let n = (((b + 1) * ugroup).min(pes as usize) - b * ugroup) as f64;
        for l in &mut usage {
            l[b] /= n * span;
        }
    }
    let ulabels: Vec<String> = (0..ubars)
        .map(|b| {
            if ugroup == 1 {
                b.to_string()
            } else {
                format!("{}-", b * ugroup)
            }
        })
        .collect();
    h.push_str("<h3>Usage per PE</h3><figure>");
    h.push_str(&svg::stacked_bars(
        &if ugroup == 1 {
            "Busy fraction per PE, by entry method".to_string()
        } else {
            format!("Busy fraction per group of {ugroup} PEs (mean), by entry method")
        },
        "busy fraction",
        &ulabels,
        &colours,
        &names,
        &usage,
    ));
    let _ = write!(h, "<figcaption>{key}</figcaption></figure>");
    h.push_str(&clusters_html(dir)?);
    // The machine: the whole run, then snapshots over time.
    let mut busy = vec![0u64; pes as usize];
    let from_pe = csv_rows(dir, "pe.csv", &["pe", "busy_s"], |v| {
        let pe: usize = num(v[0])?;
        let b = crate::report::parse_secs(v[1])
            .with_context(|| format!("`{}` is not a time in seconds", v[1]))?;
        *busy
            .get_mut(pe)
            .with_context(|| format!("PE {pe} of {pes}"))? = b;
        Ok(())
    })?;
    for r in tl.iter().filter(|_| !from_pe) {
        busy[r.pe as usize] += r.end - r.start;
    }
    let util: Vec<f64> = busy.iter().map(|b| *b as f64 / span).collect();
    h.push_str("<h3>Machine</h3><figure>");
    h.push_str(&machine_plot(&util, net.as_ref(), "", MAX_MACHINE_CELLS));
    h.push_str("</figure>");
    let snaps = read_csv(dir, "snapshots.csv")?;
    let nsl = snaps
        .iter()
        .filter_map(|r| field::<usize>(r, "slice"))
        .max()
        .map_or(0, |m| m + 1);
    if nsl > 1 && snaps.len() == nsl * pes as usize {
        let _ = write!(
            h,
            "<p>Snapshots (Rover's machine plot over time): the same layout, utilisation of each node in {nsl} equal slices of the run.</p><div class=\"multiples\">"
        );
        for k in 0..nsl {
            let u: Vec<f64> = snaps[k * pes as usize..(k + 1) * pes as usize]
                .iter()
                .map(|r| field(r, "utilization").unwrap_or(0.0))
                .collect();
            let (a, b) = (
                span * k as f64 / nsl as f64,
                span * (k + 1) as f64 / nsl as f64,
            );
            h.push_str(&machine_plot(
                &u,
                net.as_ref(),
                &format!("{} - {}", fmt_time(a), fmt_time(b)),
                MAX_MACHINE_CELLS / 4,
            ));
        }
        h.push_str("</div>");
    }
    h.push_str(&comm_html(dir, pes)?);
    h.push_str(&grains_html(dir, &names[..top.len()], &colours)?);
    Ok(Some(Section {
        title: format!("Replay of {}", s["trace"].as_str().unwrap_or("a trace")),
        html: h,
    }))
}

/// Links to the other outputs of the folder that exist, with what opens them.
fn files_html(dir: &Path) -> String {
    const FILES: [(&str, &str); 11] = [
        (
            "trace.json",
            "Chrome trace events: ui.perfetto.dev or chrome://tracing",
        ),
        (
            "trace.json.gz",
            "Chrome trace events, gzip: ui.perfetto.dev",
        ),
        (
            "projections/predicted.sts",
            "Projections logs: open in Projections",
        ),
        ("otf2/traces.otf2", "OTF2 archive: Vampir, otf2-print"),
        ("timeline.csv", "one row per block shown"),
        ("summary.json", "the run's figures"),
        ("analysis.json", "the critical path and the findings"),
        ("critical_path.csv", "the path's blocks"),
        ("pe.csv", "per PE: blocks, busy, idle"),
        ("entries.csv", "per entry method"),
        ("iterations.csv", "per iteration"),
    ];
    let items: Vec<String> = FILES
        .iter()
        .filter(|(f, _)| dir.join(f).exists())
        .map(|(f, what)| format!("<li><a href=\"{f}\"><code>{f}</code></a>: {what}</li>"))
        .collect();
    if items.is_empty() {
        return String::new();
    }
    format!(
        "<details class=\"files\"><summary>Files of this run</summary><ul>{}</ul></details>",
        items.concat()
    )
}

/// Iteration times (iterations.csv) as a line, when there are at least two.
fn iterations_html(dir: &Path) -> Result<String> {
    let mut pts: Vec<(f64, f64)> = Vec::new();
    csv_rows(dir, "iterations.csv", &["iteration", "time_s"], |v| {
        let it: f64 = num(v[0])?;
        let t = crate::report::parse_secs(v[1])
            .with_context(|| format!("`{}` is not a time in seconds", v[1]))?;
        pts.push((it, t as f64));
        Ok(())
    })?;
    if pts.len() < 2 {
        return Ok(String::new());
    }
    let top = pts.iter().map(|p| p.1).fold(0.0, f64::max);
    let (div, unit) = svg::time_unit(top.max(1.0));
    for p in &mut pts {
        p.1 /= div;
    }
    let mean = pts.iter().map(|p| p.1).sum::<f64>() / pts.len() as f64;
    let fmt = |x: f64| svg::tick(x);
    let chart = svg::LineChart {
        title: "Time of each iteration",
        x_label: "iteration",
        y_label: &format!("iteration time ({unit})"),
        log_x: false,
        categories: None,
        x_fmt: &fmt,
        series: vec![svg::Series {
            name: "iteration time".into(),
            points: pts,
        }],
    };
    Ok(format!(
        "<h3>Iterations</h3><figure>{}<figcaption>Mean {} {unit} (iterations.csv); the end of an iteration is the end of its last block, so a slow iteration shows which one to zoom on.</figcaption></figure>",
        chart.svg(),
        svg::num(mean)
    ))
}

/// Rover's metrics over time (metrics.csv).
fn metrics_html(dir: &Path) -> Result<String> {
    let rows = read_csv(dir, "metrics.csv")?;
    if rows.is_empty() {
        return Ok(String::new());
    }
    let end = rows
        .last()
        .and_then(|r| field::<f64>(r, "bin_end_ps"))
        .unwrap_or(1.0);
    let (div, unit) = svg::time_unit(end);
    let mid = |r: &std::collections::HashMap<String, String>| {
        (field::<f64>(r, "bin_start_ps").unwrap_or(0.0)
            + field::<f64>(r, "bin_end_ps").unwrap_or(0.0))
            / 2.0
            / div
    };
    let series = |name: &str, col: &str, scale: f64| Series {
        name: name.to_string(),
        points: rows
            .iter()
            .filter_map(|r| field::<f64>(r, col).map(|v| (mid(r), v * scale)))
            .collect(),
    };
    let mut lines = vec![
        series("utilisation", "utilization", 1.0),
        series("balance", "balance", 1.0),
    ];
    let chan = series("channel utilisation", "channel_utilization", 1.0);
    if !chan.points.is_empty() {
        lines.push(chan);
    }
    let fmt = |v: f64| svg::tick(v);
    let mut h = String::from(
        "<h3>Rover's metrics over time</h3><p>Utilisation (busy PEs / PEs), balance (mean over max busy time per PE in the bin; 1 is even), and, on topologies, channel utilisation (link serialisation time charged to each link of a message's route, over all links); then the grain size (mean run time of the blocks starting in the bin). Data: metrics.csv.</p><figure>",
    );
    h.push_str(
        &LineChart {
            title: "Utilisation, balance and channel utilisation",
            x_label: &format!("time ({unit})"),
            y_label: "fraction",
            log_x: false,
            categories: None,
            x_fmt: &fmt,
            series: lines,
        }
        .svg(),
    );
    let grain = series("mean grain", "mean_grain_ps", 1.0);
    let gmax = grain.points.iter().map(|p| p.1).fold(0.0, f64::max);
    let (gd, gu) = svg::time_unit(gmax * 2.0);
    let grain = Series {
        name: "mean grain".into(),
        points: grain.points.iter().map(|&(x, y)| (x, y / gd)).collect(),
    };
    h.push_str(
        &LineChart {
            title: "Granularity: mean grain size of the blocks starting in each bin",
            x_label: &format!("time ({unit})"),
            y_label: &format!("grain ({gu})"),
            log_x: false,
            categories: None,
            x_fmt: &fmt,
            series: vec![grain],
        }
        .svg(),
    );
    h.push_str("</figure>");
    Ok(h)
}

/// The k-means clusters (clusters.csv).
fn clusters_html(dir: &Path) -> Result<String> {
    let rows = read_csv(dir, "clusters.csv")?;
    if rows.is_empty() {
        return Ok(String::new());
    }
    let mut by: std::collections::BTreeMap<u32, (u32, Option<u32>, Vec<u32>, f64)> =
        Default::default();
    for r in &rows {
        let (Some(c), Some(pe)) = (field::<u32>(r, "cluster"), field::<u32>(r, "pe")) else {
            continue;
        };
        let e = by.entry(c).or_insert((0, None, Vec::new(), 0.0));
        e.0 += 1;
        e.3 = e.3.max(field(r, "distance_ps").unwrap_or(0.0));
        match r.get("role").map(String::as_str) {
            Some("exemplar") => e.1 = Some(pe),
            Some("outlier") => e.2.push(pe),
            _ => {}
        }
    }
    let mut h = format!(
        "<h3>Clusters of PEs</h3><p>k-means on each PE's busy time per entry method (Lee 2009): {} cluster(s). Each exemplar stands for its cluster; outliers are the members farthest from their centroid. Data: clusters.csv.</p><table><tr><th>cluster</th><th>PEs</th><th>exemplar</th><th>outliers</th><th>farthest from centroid</th></tr>",
        by.len()
    );
    for (c, (n, ex, out, far)) in by.iter().take(30) {
        let _ = write!(
            h,
            "<tr><td>{c}</td><td>{n}</td><td>{}</td><td style=\"text-align:left\">{}</td><td>{}</td></tr>",
            ex.map_or("-".into(), |p| format!("PE {p}")),
            out.iter()
                .map(|p| format!("PE {p}"))
                .collect::<Vec<_>>()
                .join(", "),
            fmt_time(*far)
        );
    }
    h.push_str("</table>");
    Ok(h)
}

/// The communication matrix and the message sizes.
fn comm_html(dir: &Path, pes: u32) -> Result<String> {
    let rows = read_csv(dir, "comm_matrix.csv")?;
    let mut h = String::new();
    if let Some(size) = rows.first().and_then(|r| field::<u32>(r, "group_pes")) {
        let size = size.max(1);
        let g = pes.div_ceil(size) as usize;
        if g > analysis::views::MAX_MATRIX_GROUPS as usize {
            return Err(crate::BadInput(format!(
                "{}: groups of {size} PEs make {g} groups per side; at most {} (whatif writes it with at most 64)",
                dir.join("comm_matrix.csv").display(),
                analysis::views::MAX_MATRIX_GROUPS
            ))
            .into());
        }
        let mut cells = vec![vec![Some(0.0f64); g]; g];
        let mut max = 0u64;
        for r in &rows {
            let (Some(a), Some(b), Some(v)) = (
                field::<u32>(r, "src_first_pe"),
                field::<u32>(r, "dst_first_pe"),
                field::<u64>(r, "bytes"),
            ) else {
                continue;
            };
            let (i, j) = ((a / size) as usize, (b / size) as usize);
            if i < g && j < g {
                cells[i][j] = Some(v as f64);
                max = max.max(v);
            }
        }
        for row in &mut cells {
            for c in row.iter_mut() {
                *c = c.map(|v| v / max.max(1) as f64);
            }
        }
        let who = if size == 1 {
            "PE".to_string()
        } else {
            format!("group of {size} PEs")
        };
        let _ = write!(
            h,
            "<h3>Communication</h3><p>Bytes sent between PEs over the run (row: sender, column: receiver{}). Data: comm_matrix.csv.</p><figure>",
            if size > 1 {
                format!("; PEs in contiguous groups of {size}")
            } else {
                String::new()
            }
        );
        let m = max as f64;
        h.push_str(&svg::grid(
            &format!("Bytes by {who} pair (max {})", fmt_bytes(max)),
            &cells,
            &|r, c| {
                format!(
                    "{who} {} -> {}",
                    r as u64 * size as u64,
                    c as u64 * size as u64
                )
            },
            &|u| fmt_bytes((u * m).round() as u64),
            ("0", &fmt_bytes(max)),
        ));
        h.push_str("</figure>");
    }
    let sizes = read_csv(dir, "message_sizes.csv")?;
    if !sizes.is_empty() {
        let items: Vec<(String, f64)> = sizes
            .iter()
            .map(|r| {
                (
                    fmt_bytes(field(r, "lo_bytes").unwrap_or(0)),
                    field::<f64>(r, "messages").unwrap_or(0.0),
                )
            })
            .collect();
        h.push_str("<figure>");
        h.push_str(&svg::bars(
            "Message sizes between PEs (x: at least this size, power-of-two bins)",
            "messages",
            &items,
        ));
        h.push_str("</figure>");
    }
    Ok(h)
}

/// Grain-size histograms (grain_sizes.csv) of the top entries, in their colours.
fn grains_html(dir: &Path, top: &[String], colours: &[&str]) -> Result<String> {
    let rows = read_csv(dir, "grain_sizes.csv")?;
    if rows.is_empty() {
        return Ok(String::new());
    }
    let mut h = String::from(
        "<h3>Grain size</h3><p>Blocks per run-time class (power-of-two bins) for the entry methods with the most time. Data: grain_sizes.csv.</p>",
    );
    for (k, name) in top.iter().enumerate().take(4) {
        let items: Vec<(String, f64)> = rows
            .iter()
            .filter(|r| r.get("entry") == Some(name))
            .map(|r| {
                let lo = field::<f64>(r, "lo_ps").unwrap_or(0.0);
                (
                    if lo == 0.0 {
                        "0".to_string()
                    } else {
                        fmt_time(lo)
                    },
                    field(r, "blocks").unwrap_or(0.0),
                )
            })
            .collect();
        if items.is_empty() {
            continue;
        }
        let n: f64 = items.iter().map(|i| i.1).sum();
        h.push_str("<figure>");
        h.push_str(&svg::stacked_bars(
            &format!(
                "Grain size of {} ({n} blocks; x: at least this long)",
                svg::truncate(name, 40)
            ),
            "blocks",
            &items.iter().map(|i| i.0.clone()).collect::<Vec<_>>(),
            &colours[k..=k],
            std::slice::from_ref(name),
            &[items.iter().map(|i| i.1).collect()],
        ));
        h.push_str("</figure>");
    }
    Ok(h)
}

/// Writes the report for `dir` (and its `sweep/` and `replay/` subfolders, as `whatif demo`
/// lays them out) to `out` (default `dir/report.html`).
pub fn write(dir: &Path, out: Option<&Path>) -> Result<PathBuf> {
    if !dir.is_dir() {
        return Err(crate::BadInput(format!(
            "{}: no such folder (give a folder written by `whatif sweep`, `whatif replay --out` or `whatif demo`)",
            dir.display()
        ))
        .into());
    }
    write_titled(dir, out, dir)
}

/// [`write`], naming the folder `title` in the page (a staged folder is read under its
/// final name).
pub fn write_titled(dir: &Path, out: Option<&Path>, title: &Path) -> Result<PathBuf> {
    let mut sections = Vec::new();
    for d in [dir.to_path_buf(), dir.join("sweep"), dir.join("replay")] {
        if let Some(s) = sweep_section(&d)? {
            sections.push(s);
        }
        if let Some(s) = replay_section(&d)? {
            sections.push(s);
        }
    }
    if sections.is_empty() {
        bail!(
            "{} holds neither sweep results (results.json + manifest.json, from `whatif sweep`) nor replay outputs (summary.json + timeline.csv, from `whatif replay --out`)",
            dir.display()
        );
    }
    let mut html = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>whatif report</title><style>\
body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}\
table{border-collapse:collapse;font-size:12px;margin:0.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}\
th{background:#f3f3f3}figure{margin:1em 0}svg.chart{max-width:100%;height:auto;background:#fff}\
.legend{font-size:12px;line-height:1.6}.key{white-space:nowrap;margin-right:1em}.key span{display:inline-block;width:10px;height:10px;margin-right:4px}\
td code{word-break:break-all}.multiples{display:flex;flex-wrap:wrap;gap:8px}.multiples svg.chart{max-width:360px}\
h2{border-bottom:2px solid #4e79a7;padding-bottom:4px}.note{background:#fff8e1;border-left:4px solid #f0b400;padding:4px 8px;font-size:13px}</style></head><body>\n<h1>whatif report</h1>\n",
    );
    let _ = write!(
        html,
        "<p>Predicted by whatif {} from <code>{}</code>. All figures are simulated.</p>\n<ul>",
        env!("CARGO_PKG_VERSION"),
        esc(&title.display().to_string())
    );
    for (i, s) in sections.iter().enumerate() {
        let _ = write!(html, "<li><a href=\"#s{i}\">{}</a></li>", esc(&s.title));
    }
    html.push_str("</ul>\n");
    for (i, s) in sections.iter().enumerate() {
        let _ = writeln!(
            html,
            "<section id=\"s{i}\"><h2>{}</h2>{}</section>",
            esc(&s.title),
            s.html
        );
    }
    html.push_str("</body></html>\n");
    let path = out
        .map(Path::to_path_buf)
        .unwrap_or_else(|| dir.join("report.html"));
    crate::files::write_text(&path, &html)?;
    Ok(path)
}
