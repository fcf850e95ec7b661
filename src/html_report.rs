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
    let header: Vec<String> = csv
        .lines()
        .next()
        .unwrap_or("")
        .split(',')
        .map(String::from)
        .collect();
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
        let fmt = |v: f64| svg::num(v);
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
        h.push_str(&chart.svg());
        h.push_str("</figure>");
        if is_num {
            let _ = write!(
                h,
                "<h3>Knees</h3><p>Where each curve first exceeds its value at the smallest {x} by 10% (interpolated in log {x}).</p><table class=\"knees\"><tr><th>series</th><th>at smallest {x}</th><th>knee ({unit})</th></tr>"
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

struct Rec {
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
    let (e, p, s, en) = (col("entry")?, col("pe")?, col("start_s")?, col("end_s")?);
    let ps = |v: &str| {
        crate::report::parse_secs(v)
            .with_context(|| format!("{}: `{v}` is not a time in seconds", path.display()))
    };
    let mut v = Vec::new();
    for rec in r.records() {
        let rec = rec?;
        v.push(Rec {
            entry: rec[e].to_string(),
            pe: rec[p].parse()?,
            start: ps(&rec[s])?,
            end: ps(&rec[en])?,
        });
    }
    Ok(v)
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
fn machine_plot(util: &[f64], net: Option<&NetSpec>) -> String {
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
    let (cells, title, label): Layout = match &topo {
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
    svg::grid(&title, &cells, &*label)
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
        ("scheduling waits", g(&cp["sched_wait_ps"])),
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

fn replay_section(dir: &Path) -> Result<Option<Section>> {
    let spath = dir.join("summary.json");
    if !spath.exists() || !dir.join("timeline.csv").exists() {
        return Ok(None);
    }
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&spath)?)
        .with_context(|| format!("{}: not JSON", spath.display()))?;
    let tl = read_timeline(&dir.join("timeline.csv"))?;
    let pes = s["pes"].as_u64().unwrap_or(1) as u32;
    let makespan = s["makespan_ps"].as_u64().unwrap_or(0);
    let net: Option<NetSpec> = s["net"].as_str().and_then(|n| n.parse().ok());
    let mut h = String::new();
    let _ = write!(
        h,
        "<table class=\"summary\"><tr><th>trace</th><td>{}</td></tr><tr><th>network</th><td>{}</td></tr><tr><th>PEs</th><td>{pes}</td></tr><tr><th>makespan</th><td>{} us</td></tr><tr><th>utilisation</th><td>{:.1}%</td></tr><tr><th>blocks</th><td>{}</td></tr><tr><th>messages</th><td>{} ({} remote)</td></tr></table>",
        esc(s["trace"].as_str().unwrap_or("")),
        esc(s["net"].as_str().unwrap_or("")),
        svg::num(makespan as f64 / 1e6),
        s["utilization"].as_f64().unwrap_or(0.0) * 100.0,
        s["blocks"],
        s["messages"],
        s["remote_messages"]
    );
    if let Some(a) = analysis_html(dir)? {
        h.push_str(&a);
    }
    let mut entries: Vec<String> = Vec::new();
    let mut total_by_entry: Vec<u64> = Vec::new();
    let idx = |e: &str, entries: &mut Vec<String>, totals: &mut Vec<u64>| -> usize {
        match entries.iter().position(|x| x == e) {
            Some(i) => i,
            None => {
                entries.push(e.to_string());
                totals.push(0);
                entries.len() - 1
            }
        }
    };
    let mut eidx = Vec::with_capacity(tl.len());
    for r in &tl {
        let i = idx(&r.entry, &mut entries, &mut total_by_entry);
        total_by_entry[i] += r.end - r.start;
        eidx.push(i);
    }
    // Timeline window: the first iterations (up to 2), else the first 10% of the run.
    let ends: Vec<u64> = s["iteration_ends_ps"]
        .as_array()
        .map(|v| v.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default();
    let t1 = ends
        .get(1)
        .or(ends.first())
        .copied()
        .unwrap_or(makespan / 10)
        .max(1);
    let mut shown: Vec<(u32, f64, f64, usize, String)> = Vec::new();
    for (r, &e) in tl.iter().zip(&eidx) {
        if r.start < t1 && r.end > r.start && shown.len() < 20_000 {
            shown.push((
                r.pe,
                r.start as f64 / 1e6,
                r.end as f64 / 1e6,
                e,
                format!(
                    "{} on PE {}: {} - {} us",
                    r.entry,
                    r.pe,
                    svg::num(r.start as f64 / 1e6),
                    svg::num(r.end as f64 / 1e6)
                ),
            ));
        }
    }
    h.push_str("<h3>Timeline</h3><figure>");
    h.push_str(&svg::timeline(
        &format!("Timeline, first {} us", svg::num(t1 as f64 / 1e6)),
        pes,
        0.0,
        t1 as f64 / 1e6,
        &shown,
    ));
    let legend: Vec<String> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            format!(
                "<span style=\"color:{}\">&#9632;</span> {}",
                svg::PALETTE[i % svg::PALETTE.len()],
                esc(e)
            )
        })
        .collect();
    let _ = write!(
        h,
        "<figcaption>{}</figcaption></figure>",
        legend.join(" &nbsp; ")
    );
    // Time profile: utilisation by entry method over 100 bins.
    let bins = 100usize;
    let bin = (makespan / bins as u64).max(1);
    let mut layers = vec![vec![0.0f64; bins]; entries.len()];
    for (r, &e) in tl.iter().zip(&eidx) {
        let (mut a, b) = (r.start, r.end);
        while a < b {
            let k = ((a / bin) as usize).min(bins - 1);
            let edge = if k == bins - 1 {
                b
            } else {
                ((k as u64 + 1) * bin).min(b)
            };
            layers[e][k] += (edge - a) as f64;
            a = edge;
        }
    }
    let denom = bin as f64 * pes as f64;
    for l in &mut layers {
        for v in l.iter_mut() {
            *v /= denom;
        }
    }
    h.push_str("<h3>Time profile</h3><figure>");
    h.push_str(&svg::stacked(
        "Utilisation by entry method over time",
        "time (us)",
        makespan as f64 / 1e6,
        &entries,
        &layers,
    ));
    h.push_str("</figure>");
    // Usage per PE.
    let mut busy = vec![0u64; pes as usize];
    for r in &tl {
        if let Some(b) = busy.get_mut(r.pe as usize) {
            *b += r.end - r.start;
        }
    }
    let util: Vec<f64> = busy
        .iter()
        .map(|b| *b as f64 / makespan.max(1) as f64)
        .collect();
    h.push_str("<h3>Usage per PE</h3><figure>");
    h.push_str(&svg::bars(
        "Busy fraction per PE",
        "busy fraction",
        &util
            .iter()
            .enumerate()
            .map(|(p, u)| (p.to_string(), *u))
            .collect::<Vec<_>>(),
    ));
    h.push_str("</figure><h3>Machine</h3><figure>");
    h.push_str(&machine_plot(&util, net.as_ref()));
    h.push_str("</figure>");
    // Grain size: histogram of block durations for the entries with the most time.
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(total_by_entry[i]));
    h.push_str("<h3>Grain size</h3>");
    for &e in order.iter().take(3).filter(|&&e| total_by_entry[e] > 0) {
        let durs: Vec<u64> = tl
            .iter()
            .zip(&eidx)
            .filter(|(_, x)| **x == e)
            .map(|(r, _)| r.end - r.start)
            .collect();
        let max = durs.iter().copied().max().unwrap_or(0).max(1);
        let nb = 20usize;
        let mut hist = vec![0u64; nb];
        for d in &durs {
            hist[((*d as u128 * nb as u128 / (max as u128 + 1)) as usize).min(nb - 1)] += 1;
        }
        let items: Vec<(String, f64)> = hist
            .iter()
            .enumerate()
            .map(|(i, c)| {
                (
                    svg::num((i as f64 + 0.5) * max as f64 / nb as f64 / 1e6),
                    *c as f64,
                )
            })
            .collect();
        h.push_str("<figure>");
        h.push_str(&svg::bars(
            &format!(
                "Grain size of {} ({} blocks; x: duration in us)",
                entries[e],
                durs.len()
            ),
            "blocks",
            &items,
        ));
        h.push_str("</figure>");
    }
    Ok(Some(Section {
        title: format!("Replay of {}", s["trace"].as_str().unwrap_or("a trace")),
        html: h,
    }))
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
h2{border-bottom:2px solid #4e79a7;padding-bottom:4px}</style></head><body>\n<h1>whatif report</h1>\n",
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
