//! `whatif report DIR`: one self-contained HTML page (inline SVG, no scripts, no network) from
//! a sweep folder (`results.json` + `manifest.json`) and/or a replay folder (`whatif replay
//! --out`): sweep curves with a knee table, a timeline window, the time profile, usage per PE,
//! grain-size histograms per entry method, and a machine plot laid out on the topology.

use crate::error::{Ctx, Result, bail};
use crate::svg::{self, LineChart, Series};
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

/// A column of a sweep's files or a study axis in words, for axis labels and table heads:
/// `mean_iteration_s` is "mean iteration time", `net.lat` "network latency".
pub fn words(key: &str) -> String {
    let known = match key {
        "mean_iteration_s" => "mean iteration time",
        "makespan_s" => "makespan",
        "utilization" => "utilisation",
        "pes" | "workload.pes" | "machine.pes" => "PEs",
        "remote_messages" => "remote messages",
        "remote_bytes" => "remote bytes",
        "lb_migrations" => "LB migrations",
        "lb_max_avg_load" => "LB max/avg load",
        "net.lat" => "network latency",
        "net.bw" => "link bandwidth",
        "net.topo" => "topology",
        "net.model" => "network model",
        "lb.strategy" => "LB strategy",
        "lb.at" => "LB at iteration",
        "machine.noise" => "noise",
        "machine.block_overhead" => "block overhead",
        "machine.local_msg_cost" => "local message cost",
        "worst_over_best" => "worst / best",
        _ => "",
    };
    if !known.is_empty() {
        return known.to_string();
    }
    if let Some(k) = key.strip_prefix("best_") {
        return format!("best {}", words(k));
    }
    if let Some(k) = key.strip_prefix("worst_") {
        return format!("worst {}", words(k));
    }
    let last = key.rsplit('.').next().unwrap_or(key);
    last.strip_suffix("_s").unwrap_or(last).replace('_', " ")
}

/// The unit for seconds up to `max`: (factor from seconds, name).
fn secs_unit(max: f64) -> (f64, &'static str) {
    if max >= 1.0 {
        (1.0, "s")
    } else if max >= 1e-3 {
        (1e3, "ms")
    } else if max >= 1e-6 {
        (1e6, "us")
    } else {
        (1e9, "ns")
    }
}

/// A table of CSV rows for people: heads in words (the column's name on hover); columns of
/// seconds (`_s`) in one unit fitted to the column with 4 significant digits; utilisation in
/// percent; other cells as written.
fn table_html(class: &str, header: &[String], rows: &[Vec<String>]) -> String {
    let col_max = |i: usize| -> Option<f64> {
        let mut m = 0.0f64;
        for r in rows {
            let v = r.get(i).map_or("", String::as_str);
            if v.is_empty() {
                continue;
            }
            m = m.max(v.parse::<f64>().ok()?.abs());
        }
        Some(m)
    };
    let kinds: Vec<Option<(f64, &str)>> = header
        .iter()
        .enumerate()
        .map(|(i, c)| {
            if c.ends_with("_s") {
                col_max(i).map(secs_unit)
            } else if c == "utilization" {
                col_max(i).map(|_| (100.0, "%"))
            } else {
                None
            }
        })
        .collect();
    let mut h = format!("<div class=\"scroll\"><table class=\"{class}\"><tr>");
    for (c, k) in header.iter().zip(&kinds) {
        let _ = write!(
            h,
            "<th title=\"{}\">{}{}</th>",
            esc(c),
            esc(&words(c)),
            k.map_or(String::new(), |(_, u)| format!(" ({u})"))
        );
    }
    h.push_str("</tr>");
    for r in rows {
        h.push_str("<tr>");
        for (i, k) in kinds.iter().enumerate() {
            let v = r.get(i).map_or("", String::as_str);
            let cell = match (k, v.parse::<f64>()) {
                (Some((f, _)), Ok(x)) => svg::sig(x * f, 4),
                _ => v.to_string(),
            };
            let _ = write!(h, "<td>{}</td>", esc(&cell));
        }
        h.push_str("</tr>");
    }
    h.push_str("</table></div>");
    h
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

/// The note under a line chart naming the series drawn on top of each other (their dash
/// patterns and markers differ, so both stay visible; the note says so in words).
fn coincidence_note(chart: &LineChart) -> String {
    let notes = chart.coincident();
    if notes.is_empty() {
        return String::new();
    }
    format!(
        "<p class=\"note\">Drawn on top of each other (dashes and markers tell them apart): {}.</p>",
        esc(&notes.join("; "))
    )
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
    let m: Value = serde_json::from_str(&crate::read_text(&mpath)?)
        .ctx(|| format!("{}: not JSON", mpath.display()))?;
    let rows: Value = serde_json::from_str(&crate::read_text(&rpath)?)
        .ctx(|| format!("{}: not JSON", rpath.display()))?;
    let rows = rows.as_array().ctx(|| "results.json is not a list")?;
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
    let csv = crate::read_text(&dir.join("results.csv")).unwrap_or_default();
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
    let metric_words = words(metric);
    let _ = write!(
        h,
        "<p>{} points; fingerprint {}; plotted: the {metric_words} (<code>{metric}</code>).</p>",
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
            // With no other axis there is one series, named after what it shows (a single
            // series gets no legend).
            let name = label(r);
            let name = if name.is_empty() {
                metric_words.clone()
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
        let x_words = words(x);
        let x_label = if unit.is_empty() {
            x_words.clone()
        } else {
            format!("{x_words} ({unit})")
        };
        let fmt = |v: f64| svg::tick(v);
        let chart = LineChart {
            title: &format!("{study}: {metric_words} by {x_words}"),
            x_label: &x_label,
            y_label: &format!("{metric_words} ({yunit})"),
            log_x,
            categories: (!is_num).then(|| cats.clone()),
            x_fmt: &fmt,
            series: series.clone(),
        };
        h.push_str("<figure>");
        if is_num {
            h.push_str(&chart.svg());
            h.push_str(&coincidence_note(&chart));
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
                "<h3>Knees</h3><p>Where each curve first exceeds its value at the smallest {x_words} by 10% (interpolated in log {x_words}).</p><table class=\"knees\"><tr><th>series</th><th>at smallest {x_words}</th><th>knee{}</th></tr>",
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
                    svg::sig(s.points[0].1, 4),
                    k.map_or("beyond the range".into(), |v| svg::sig(v, 3))
                );
            }
            h.push_str("</table>");
        }
    }
    h.push_str(&scaling_html(dir)?);
    // The rows themselves (first 200).
    h.push_str("<h3>Rows</h3>");
    let cells: Vec<Vec<String>> = csv
        .lines()
        .skip(1)
        .take(200)
        .map(|l| l.split(',').map(String::from).collect())
        .collect();
    h.push_str(&table_html("rows", &header, &cells));
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
            // One series (no other axis) gets no legend; its name is only its hover text.
            let name = if name.is_empty() {
                "every point".to_string()
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
            let chart = LineChart {
                title,
                x_label: "PEs",
                y_label: y,
                log_x: true,
                categories: None,
                x_fmt: &fmt,
                series: list,
            };
            h.push_str(&chart.svg());
            h.push_str(&coincidence_note(&chart));
        }
        h.push_str("</figure>");
    }
    let op = read_csv(dir, "optimum.csv")?;
    if let Some(first) = op.first() {
        let csv = crate::read_text(&dir.join("optimum.csv")).unwrap_or_default();
        let header: Vec<&str> = csv.lines().next().unwrap_or("").split(',').collect();
        let best = header
            .iter()
            .find(|c| c.starts_with("best_workload") || c.starts_with("best_"))
            .map_or("", |c| c);
        let _ = write!(
            h,
            "<h3>Optimal grain</h3><p>The value of <code>{}</code> with the least time, per combination of the other axes (the argmin MK derives from dT/dK = 0). Data: optimum.csv.</p>",
            esc(best.trim_start_matches("best_"))
        );
        let head: Vec<String> = header.iter().map(|c| c.to_string()).collect();
        let cells: Vec<Vec<String>> = op
            .iter()
            .map(|r| {
                header
                    .iter()
                    .map(|c| r.get(*c).cloned().unwrap_or_default())
                    .collect()
            })
            .collect();
        h.push_str(&table_html("optimum", &head, &cells));
        let _ = first;
    }
    h.push_str(&constant_time_html(dir)?);
    Ok(h)
}

/// The column names of a CSV file of `dir` (empty when it cannot be read).
fn csv_header(dir: &Path, name: &str) -> Vec<String> {
    let csv = crate::read_text(&dir.join(name)).unwrap_or_default();
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
    let (x_label, y_label) = (words(xk), words(sk));
    let mut h = String::new();
    let _ = write!(
        h,
        "<h3>Constant-time curves</h3><p>The value of <code>{}</code> at which the {} reaches each target time, over <code>{}</code> (log-log interpolation between the swept values; a missing point: no two swept values bracket the target). Data: constant_time.csv.</p><figure>",
        esc(sk),
        esc(tk.trim_start_matches("target_")),
        esc(xk)
    );
    let chart = LineChart {
        title: "Problem size at constant time",
        x_label: &x_label,
        y_label: &y_label,
        log_x: true,
        categories: None,
        x_fmt: &fmt,
        series,
    };
    h.push_str(&chart.svg());
    h.push_str(&coincidence_note(&chart));
    h.push_str("</figure>");
    Ok(h)
}

struct Rec {
    block: u32,
    /// Index into the timeline's entry names.
    entry: u32,
    pe: u32,
    start: u64,
    end: u64,
}

/// The rows of `timeline.csv` and the entry names they index (interned: a row costs 32
/// bytes, not a string).
fn read_timeline(path: &Path) -> Result<(Vec<Rec>, Vec<String>)> {
    let mut r = csv::Reader::from_path(path).ctx(|| format!("cannot read {}", path.display()))?;
    let h = r.headers()?.clone();
    let col = |n: &str| {
        h.iter()
            .position(|c| c == n)
            .ctx(|| format!("{}: no column {n}", path.display()))
    };
    let (bl, e, p, s, en) = (
        col("block")?,
        col("entry")?,
        col("pe")?,
        col("start_s")?,
        col("end_s")?,
    );
    let ps = |v: &str| {
        crate::parse_secs(v).ctx(|| format!("{}: `{v}` is not a time in seconds", path.display()))
    };
    let mut v = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let mut known: std::collections::HashMap<String, u32> = Default::default();
    for (line, rec) in r.records().enumerate() {
        let rec = rec?;
        let bad = |what: &str| format!("{} line {}: {what}", path.display(), line + 2);
        let entry = match known.get(&rec[e]) {
            Some(&i) => i,
            None => {
                let i = names.len() as u32;
                names.push(rec[e].to_string());
                known.insert(rec[e].to_string(), i);
                i
            }
        };
        v.push(Rec {
            block: rec[bl].parse().ctx(|| bad("block is not a number"))?,
            entry,
            pe: rec[p].parse().ctx(|| bad("pe is not a number"))?,
            start: ps(&rec[s])?,
            end: ps(&rec[en])?,
        });
    }
    Ok((v, names))
}

/// The rows of an optional CSV file of `dir` as header-keyed maps (empty when absent).
fn read_csv(dir: &Path, name: &str) -> Result<Vec<std::collections::HashMap<String, String>>> {
    let p = dir.join(name);
    if !p.exists() {
        return Ok(Vec::new());
    }
    let mut r = csv::Reader::from_path(&p).ctx(|| format!("cannot read {}", p.display()))?;
    let h = r.headers()?.clone();
    let mut out = Vec::new();
    for rec in r.records() {
        let rec = rec.ctx(|| format!("{}: not CSV", p.display()))?;
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
    let mut r = csv::Reader::from_path(&p).ctx(|| format!("cannot read {}", p.display()))?;
    let h = r.headers()?.clone();
    let idx: Vec<usize> = cols
        .iter()
        .map(|c| {
            h.iter()
                .position(|x| x == *c)
                .ctx(|| format!("{}: no column {c}", p.display()))
        })
        .collect::<Result<_>>()?;
    let mut rec = csv::StringRecord::new();
    let mut line = 1usize;
    loop {
        line += 1;
        if !r
            .read_record(&mut rec)
            .ctx(|| format!("{}: not CSV", p.display()))?
        {
            break;
        }
        let v: Vec<&str> = idx.iter().map(|&i| rec.get(i).unwrap_or("")).collect();
        f(&v).ctx(|| format!("{} line {line}", p.display()))?;
    }
    Ok(true)
}

/// A number in a CSV field.
fn num<T: std::str::FromStr>(v: &str) -> Result<T> {
    v.parse().ok().ctx(|| format!("`{v}` is not a number"))
}

fn field<T: std::str::FromStr>(
    row: &std::collections::HashMap<String, String>,
    k: &str,
) -> Option<T> {
    row.get(k).and_then(|v| v.parse().ok())
}

/// A machine plot's layout: the cells (node values), its title, what a cell is, and the
/// axes (rows' name and ticks, columns' name, ticks and bands).
struct Layout {
    cells: Vec<Vec<Option<f64>>>,
    title: String,
    label: Box<dyn Fn(usize, usize) -> String>,
    rows_name: String,
    cols_name: String,
    row_ticks: Vec<(usize, String)>,
    col_ticks: Vec<(usize, String)>,
    col_bands: Vec<(usize, usize, String)>,
}

/// What a machine plot shows: a value in 0..=1 per node, its text, the scale's ends.
struct NodeValues<'a> {
    /// Per node (host), in 0..=1.
    values: &'a [f64],
    /// Groups of nodes show their largest value (else their mean).
    group_max: bool,
    /// A value as text.
    fmt: &'a dyn Fn(f64) -> String,
    /// The colour scale's ends.
    scale: (&'a str, &'a str),
    /// What the value is, for the title ("utilisation").
    what: &'a str,
}

/// Per-node means of per-PE values: `ppn` consecutive PEs per node.
fn per_node(pe_values: &[f64], ppn: usize) -> Vec<f64> {
    pe_values
        .chunks(ppn.max(1))
        .map(|c| c.iter().sum::<f64>() / c.len() as f64)
        .collect()
}

/// Node values laid out on the topology: a 2-D grid for meshes and tori (3-D: the z planes
/// side by side), a Gray-code grid for hypercubes (neighbouring cells differ in one address
/// bit, as in Rover's machine plots), one row per leaf switch (fat-tree) or group
/// (dragonfly), a near-square grid otherwise; with ticks and axis names, so a node can be
/// found without hovering. `width`: the plot area at most, px.
fn machine_plot(
    v: &NodeValues,
    topo: Option<&Topology>,
    when: &str,
    max_cells: usize,
    width: f64,
) -> String {
    let nodes = v.values.len();
    let what = v.what;
    let val = |n: usize| v.values.get(n).copied();
    let gray = |i: usize| i ^ (i >> 1);
    let counted = |n: usize, step: usize| -> Vec<(usize, String)> {
        (0..n)
            .step_by(step.max(1))
            .map(|i| (i, i.to_string()))
            .collect()
    };
    // Past `max_cells` nodes, a near-square grid of consecutive node groups keeps the page
    // small.
    let grouped = nodes > max_cells;
    let l: Layout = match topo {
        _ if grouped => {
            let g = nodes.div_ceil(max_cells);
            let n = nodes.div_ceil(g);
            let cols = (n as f64).sqrt().ceil().max(1.0) as usize;
            let agg = |k: usize| {
                let r = k * g..((k + 1) * g).min(nodes);
                let s = &v.values[r];
                (!s.is_empty()).then(|| {
                    if v.group_max {
                        s.iter().copied().fold(0.0, f64::max)
                    } else {
                        s.iter().sum::<f64>() / s.len() as f64
                    }
                })
            };
            let cells = (0..n.div_ceil(cols))
                .map(|r| {
                    (0..cols)
                        .map(|c| r * cols + c)
                        .map(|k| if k < n { agg(k) } else { None })
                        .collect()
                })
                .collect();
            Layout {
                cells,
                title: format!(
                    "Machine: {nodes} nodes in groups of {g} ({} {what}), row by row",
                    if v.group_max { "largest" } else { "mean" }
                ),
                label: Box::new(move |r, c| {
                    let k = r * cols + c;
                    format!("nodes {}-{}", k * g, ((k + 1) * g).min(nodes) - 1)
                }),
                rows_name: "first node of the row".into(),
                cols_name: format!("then {g} nodes a cell, across"),
                row_ticks: (0..n.div_ceil(cols))
                    .map(|r| (r, (r * cols * g).to_string()))
                    .collect(),
                col_ticks: (0..cols).map(|c| (c, format!("+{}", c * g))).collect(),
                col_bands: Vec::new(),
            }
        }
        Some(Topology::Hypercube { dim }) => {
            let (rb, cb) = ((*dim / 2) as usize, (*dim - *dim / 2) as usize);
            let cells = (0..1usize << rb)
                .map(|r| {
                    (0..1usize << cb)
                        .map(|c| {
                            let n = (gray(r) << cb) | gray(c);
                            if n < nodes { val(n) } else { None }
                        })
                        .collect()
                })
                .collect();
            let bits = |x: usize, w: usize| format!("{x:0w$b}");
            Layout {
                cells,
                title: format!("Machine: {dim}-D hypercube, Gray-code layout (node {what})"),
                label: Box::new(move |r, c| format!("node {}", (gray(r) << cb) | gray(c))),
                rows_name: if rb > 0 {
                    format!("address bits {}..{cb}", dim - 1)
                } else {
                    String::new()
                },
                cols_name: format!("address bits {}..0 (Gray order)", cb.saturating_sub(1)),
                row_ticks: (0..1usize << rb)
                    .filter(|_| rb > 0)
                    .map(|r| (r, bits(gray(r), rb)))
                    .collect(),
                col_ticks: (0..1usize << cb)
                    .map(|c| (c, bits(gray(c), cb.max(1))))
                    .collect(),
                col_bands: Vec::new(),
            }
        }
        Some(t @ (Topology::Mesh { dims } | Topology::Torus { dims })) if !dims.is_empty() => {
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
                            if n < nodes { val(n) } else { None }
                        })
                        .collect()
                })
                .collect();
            let kind = if matches!(t, Topology::Torus { .. }) {
                "torus"
            } else {
                "mesh"
            };
            let dims_s = dims
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join("x");
            let plane = if dims.len() > 3 { "plane" } else { "z" };
            Layout {
                cells,
                title: format!("Machine: {dims_s} {kind} (node {what})"),
                label: Box::new(move |y, col| {
                    let (z, x) = (col / a, col % a);
                    format!("node {} ({x},{y},{z})", x + a * (y + b * z))
                }),
                rows_name: "y".into(),
                cols_name: if planes > 1 {
                    format!("x, in each {plane} plane ({plane} planes left to right)")
                } else {
                    "x".into()
                },
                row_ticks: counted(b, 1),
                col_ticks: (0..planes)
                    .flat_map(|z| (0..a).map(move |x| (z * a + x, x.to_string())))
                    .collect(),
                col_bands: if planes > 1 {
                    (0..planes)
                        .map(|z| (z * a, a, format!("{plane}={z}")))
                        .collect()
                } else {
                    Vec::new()
                },
            }
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
                            if n < nodes { val(n) } else { None }
                        })
                        .collect()
                })
                .collect();
            Layout {
                cells,
                title: format!(
                    "Machine: {k}-ary {levels}-tree fat-tree, one row per leaf switch (host {what})"
                ),
                label: Box::new(move |r, c| format!("host {} (leaf switch {r})", r * k + c)),
                rows_name: "leaf switch".into(),
                cols_name: "host on the leaf switch".into(),
                row_ticks: counted(rows, 1),
                col_ticks: counted(k, 1),
                col_bands: Vec::new(),
            }
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
                            if n < nodes { val(n) } else { None }
                        })
                        .collect()
                })
                .collect();
            Layout {
                cells,
                title: format!("Machine: dragonfly, one row per group (host {what})"),
                label: Box::new(move |g, c| {
                    format!("host {} (group {g}, router {})", g * per_group + c, c / h)
                }),
                rows_name: "group".into(),
                cols_name: format!("hosts, {hosts} per router"),
                row_ticks: counted(*groups as usize, 1),
                col_ticks: (0..per_group).map(|c| (c, (c % h).to_string())).collect(),
                col_bands: (0..*routers as usize)
                    .map(|r| (r * h, h, format!("router {r}")))
                    .collect(),
            }
        }
        _ => {
            let cols = (nodes as f64).sqrt().ceil().max(1.0) as usize;
            let rows = nodes.div_ceil(cols);
            let cells = (0..rows)
                .map(|r| {
                    (0..cols)
                        .map(|c| r * cols + c)
                        .map(|n| if n < nodes { val(n) } else { None })
                        .collect()
                })
                .collect();
            Layout {
                cells,
                title: format!(
                    "Machine: PEs, row by row (no topology in the network model; {what})"
                ),
                label: Box::new(move |r, c| format!("PE {}", r * cols + c)),
                rows_name: "first PE of the row".into(),
                cols_name: "then one PE a cell, across".into(),
                row_ticks: (0..rows).map(|r| (r, (r * cols).to_string())).collect(),
                col_ticks: (0..cols).map(|c| (c, format!("+{c}"))).collect(),
                col_bands: Vec::new(),
            }
        }
    };
    let title = if when.is_empty() {
        l.title.clone()
    } else {
        when.to_string()
    };
    svg::Grid {
        title: &title,
        cells: &l.cells,
        label: &*l.label,
        value: v.fmt,
        scale: v.scale,
        rows_name: &l.rows_name,
        cols_name: &l.cols_name,
        row_ticks: l.row_ticks,
        col_ticks: l.col_ticks,
        col_bands: l.col_bands,
        width,
    }
    .svg()
}

/// "Why is it slow?": the critical path's breakdown and the ranked findings of
/// `analysis.json` (written by `whatif replay --out --report` and `whatif analyze --out`).
fn analysis_html(dir: &Path) -> Result<Option<String>> {
    let p = dir.join("analysis.json");
    if !p.exists() {
        return Ok(None);
    }
    let a: Value = serde_json::from_str(&crate::read_text(&p)?)
        .ctx(|| format!("{}: not JSON", p.display()))?;
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
        "fraction of the makespan",
        "cause",
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
    // The command to reproduce each finding goes on a row of its own, the table's width,
    // wrapped only between arguments (a scroll bar for an argument longer than the line).
    h.push_str("</table><table class=\"findings\"><tr><th>#</th><th>diagnosis</th><th>makespan without it (us)</th><th>saves</th><th style=\"text-align:left\">evidence</th></tr>");
    for (i, f) in a["findings"].as_array().into_iter().flatten().enumerate() {
        let saved = f["saved_ps"].as_i64().unwrap_or(0);
        let _ = write!(
            h,
            "<tr><td rowspan=\"2\">{}</td><td style=\"text-align:left\">{}</td><td>{}</td><td>{:.1}%</td><td style=\"text-align:left\">{}</td></tr><tr><td colspan=\"4\" style=\"text-align:left\"><pre class=\"cmd\">{}</pre></td></tr>",
            i + 1,
            esc(&f["diagnosis"].as_str().unwrap_or("").replace('_', " ")),
            svg::num(g(&f["what_if_makespan_ps"]) / 1e6),
            100.0 * saved as f64 / m,
            esc(f["evidence"].as_str().unwrap_or("")),
            cmd_spans(f["command"].as_str().unwrap_or(""))
        );
    }
    h.push_str("</table>");
    Ok(Some(h))
}

/// A command line for a `pre.cmd` block: each argument in a span that does not break
/// (browsers break after hyphens: `--critical-path-priority`), the spaces between them
/// where lines may wrap.
fn cmd_spans(cmd: &str) -> String {
    cmd.split(' ')
        .map(|a| format!("<span class=\"arg\">{}</span>", esc(a)))
        .collect::<Vec<_>>()
        .join(" ")
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

/// Bytes in binary units with 3 significant digits: `512 B`, `3.75 MiB`.
fn fmt_bytes(b: u64) -> String {
    let (d, u) = match b {
        0..1024 => return format!("{b} B"),
        1024..1048576 => (1024.0, "KiB"),
        1048576..1073741824 => (1048576.0, "MiB"),
        _ => (1073741824.0, "GiB"),
    };
    format!("{} {u}", short(b as f64 / d))
}

/// A zoomed window: where it is, what it is centred on, the findings it is shown for, and
/// the PE it names.
struct Zoom {
    t0: u64,
    t1: u64,
    /// What the window shows ("the critical path's `recv` block on PE 3"); the heading.
    focus: String,
    /// When that block runs, in the window's unit.
    when: String,
    /// The findings the window is for (numbered as in the table).
    why: Vec<String>,
    pe: Option<u32>,
}

impl Zoom {
    /// The window's span as its time axis writes it: `807.2-1075.6 us`.
    fn range(&self) -> String {
        let (a, b, unit) = svg::time_range(self.t0 as f64, self.t1 as f64);
        format!("{a}-{b} {unit}")
    }
}

/// Windows at the points the top findings name: for each of the first three findings that
/// save time, the critical-path step that finding is about (the longest step of the hot
/// entry or bottleneck object, the costliest message, the longest scheduling wait), widened
/// to show its neighbourhood. Without findings: the start and the end of the run.
fn zooms(dir: &Path, makespan: u64) -> Result<Vec<Zoom>> {
    let steps = read_csv(dir, "critical_path.csv")?;
    let a: Value = match crate::read_text(&dir.join("analysis.json")) {
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
    let widen = |r: &std::collections::HashMap<String, String>, why: String| -> Zoom {
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
        let t1 = (t0 + w).min(makespan.max(1));
        // The block's run in the window's unit, and how much of it the window shows.
        let at = |t: u64| svg::time_in(t as f64, (t1 - t0) as f64);
        let when = match (s == e, s < t0, e > t1) {
            (true, _, _) => format!("at {} (it takes no time)", at(s)),
            (_, false, false) => format!("from {} to {}", at(s), at(e)),
            (_, true, false) => format!(
                "from {}, before the window, to {}: the window shows its end",
                at(s),
                at(e)
            ),
            (_, false, true) => format!("from {} to {}, after the window", at(s), at(e)),
            (_, true, true) => format!("from {}, before the window, to {}, after it", at(s), at(e)),
        };
        Zoom {
            t0,
            t1,
            focus: format!(
                "the critical path's `{}` block on PE {}",
                r.get("entry").map_or("", String::as_str),
                r.get("pe").map_or("", String::as_str)
            ),
            when,
            why: vec![why],
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
    for (i, f) in a["findings"].as_array().into_iter().flatten().enumerate() {
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
            let why = format!(
                "finding {} ({}): {} saves {:.1}%",
                i + 1,
                f["diagnosis"].as_str().unwrap_or("").replace('_', " "),
                f["remedy"].as_str().unwrap_or(""),
                100.0 * f["saved_fraction"].as_f64().unwrap_or(0.0),
            );
            // Two findings about the same step share its window.
            match out.iter_mut().find(|(b, _)| *b == block) {
                Some((_, z)) => {
                    let z: &mut Zoom = z;
                    z.why.push(why);
                }
                None => out.push((block, widen(r, why))),
            }
        }
    }
    let mut out: Vec<Zoom> = out.into_iter().map(|(_, z)| z).collect();
    if out.is_empty() && makespan > 0 {
        let w = (makespan / 20).max(1);
        for (t0, t1, what) in [
            (0, w, "the start of the run"),
            (makespan - w, makespan, "the end of the run"),
        ] {
            out.push(Zoom {
                t0,
                t1,
                focus: what.into(),
                when: String::new(),
                why: Vec::new(),
                pe: None,
            });
        }
    }
    Ok(out)
}

fn replay_section(dir: &Path, rel: &str) -> Result<Option<Section>> {
    let spath = dir.join("summary.json");
    if !spath.exists() || !dir.join("timeline.csv").exists() {
        return Ok(None);
    }
    let s: Value = serde_json::from_str(&crate::read_text(&spath)?)
        .ctx(|| format!("{}: not JSON", spath.display()))?;
    let (tl, tl_names) = read_timeline(&dir.join("timeline.csv"))?;
    let pes = s["pes"].as_u64().unwrap_or(1).max(1);
    // Per-PE arrays follow; a replay's PE count is a u32, and more than 2^26 PEs would not
    // fit a report anyway.
    if pes > 1 << 26 {
        bail!(
            "{}: {pes} PEs; a report covers at most {} PEs",
            spath.display(),
            1u64 << 26
        );
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
    if let Ok(text) = crate::read_text(&dir.join("notes.txt")) {
        for line in text.lines().filter(|l| !l.trim().is_empty()).take(20) {
            let _ = write!(h, "<p class=\"note\">{}</p>", esc(line));
        }
    }
    h.push_str(&files_html(dir, rel));
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
        totals
            .push(crate::parse_secs(v[1]).ctx(|| format!("`{}` is not a time in seconds", v[1]))?);
        Ok(())
    })?;
    // The timeline's entry names in the section's numbering.
    let of_name: Vec<usize> = tl_names
        .iter()
        .map(|n| {
            *index.entry(n.clone()).or_insert_with(|| {
                entries.push(n.clone());
                totals.push(0);
                entries.len() - 1
            })
        })
        .collect();
    let mut eidx = Vec::with_capacity(tl.len());
    for r in &tl {
        let i = of_name[r.entry as usize];
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
        .ctx(|| "the overview")?;
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
    // clusters.csv has a row per PE: streamed.
    let mut reps: Vec<u32> = Vec::new();
    csv_rows(dir, "clusters.csv", &["pe", "role"], |v| {
        if v[1] != "member"
            && let Ok(pe) = v[0].parse()
        {
            reps.push(pe);
        }
        Ok(())
    })?;
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
                            tl_names[r.entry as usize],
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
        // The heading says what the window shows and spans exactly what its axis does.
        let range = z.range();
        let mut text = String::new();
        if !z.when.is_empty() {
            let _ = write!(text, "The block runs {}. ", esc(&z.when));
        }
        if !z.why.is_empty() {
            let _ = write!(text, "Shown for {}. ", esc(&z.why.join("; ")));
        }
        if pes as usize > WINDOW_ROWS {
            let _ = write!(
                text,
                "Rows: {} of {pes} PEs, the k-means representatives (clusters.csv) and the PE named. ",
                shown.len()
            );
        }
        let _ = write!(
            h,
            "<h3 id=\"window-{l}\">Window {l}, {range}: {}</h3><p>{text}Blocks outlined in black are on the critical path.</p><figure>",
            esc(&z.focus),
        );
        let chart = svg::window(
            &format!("Window {l}: {range}"),
            &labels,
            (z.t0 as f64, z.t1 as f64),
            &blocks,
        );
        // The window's exact span, for tools and tests.
        h.push_str(&chart.replacen(
            "class=\"chart window\"",
            &format!(
                "class=\"chart window\" data-t0-ps=\"{}\" data-t1-ps=\"{}\"",
                z.t0, z.t1
            ),
            1,
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
    // Every group by its first and last PE (a group of one by its PE).
    let ulabels: Vec<String> = (0..ubars)
        .map(|b| {
            let (a, z) = (b * ugroup, ((b + 1) * ugroup).min(pes as usize) - 1);
            if a == z {
                a.to_string()
            } else {
                format!("{a}-{z}")
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
        if ugroup == 1 {
            "PE"
        } else {
            "PEs (first-last of each group)"
        },
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
        let b = crate::parse_secs(v[1]).ctx(|| format!("`{}` is not a time in seconds", v[1]))?;
        *busy.get_mut(pe).ctx(|| format!("PE {pe} of {pes}"))? = b;
        Ok(())
    })?;
    for r in tl.iter().filter(|_| !from_pe) {
        busy[r.pe as usize] += r.end - r.start;
    }
    let util: Vec<f64> = busy.iter().map(|b| *b as f64 / span).collect();
    let topo = net.as_ref().and_then(|n| n.topology());
    let ppn = topo.map_or(1, |(_, p)| p.max(1) as usize);
    let topo = topo.map(|(t, _)| t);
    let busy_fmt = |u: f64| format!("{:.1}% busy", u * 100.0);
    let node_util = per_node(&util, ppn);
    h.push_str("<h3>Machine</h3><figure>");
    h.push_str(&machine_plot(
        &NodeValues {
            values: &node_util,
            group_max: false,
            fmt: &busy_fmt,
            scale: ("idle", "100% busy"),
            what: "utilisation",
        },
        topo,
        "",
        MAX_MACHINE_CELLS,
        900.0,
    ));
    h.push_str("</figure>");
    // Snapshots: one utilisation per (slice, PE), streamed.
    let mut snaps: Vec<f64> = Vec::new();
    let mut nsl = 0usize;
    let mut ok = true;
    csv_rows(dir, "snapshots.csv", &["slice", "pe", "utilization"], |v| {
        let (k, pe): (usize, usize) = (num(v[0])?, num(v[1])?);
        let u: f64 = num(v[2])?;
        if k >= 64 || pe >= pes as usize {
            ok = false;
            return Ok(());
        }
        if k >= nsl {
            nsl = k + 1;
            snaps.resize(nsl * pes as usize, 0.0);
        }
        snaps[k * pes as usize + pe] = u;
        Ok(())
    })?;
    if nsl > 1 && ok {
        let _ = write!(
            h,
            "<p>Snapshots (Rover's machine plot over time): the same layout, utilisation of each node in {nsl} equal slices of the run.</p><div class=\"multiples\">"
        );
        for k in 0..nsl {
            let u = per_node(&snaps[k * pes as usize..(k + 1) * pes as usize], ppn);
            let (a, b) = (
                span * k as f64 / nsl as f64,
                span * (k + 1) as f64 / nsl as f64,
            );
            let (ta, tb, unit) = svg::time_range(a, b);
            h.push_str(&machine_plot(
                &NodeValues {
                    values: &u,
                    group_max: false,
                    fmt: &busy_fmt,
                    scale: ("idle", "100% busy"),
                    what: "utilisation",
                },
                topo,
                &format!("{ta}-{tb} {unit}"),
                MAX_MACHINE_CELLS / 4,
                250.0,
            ));
        }
        h.push_str("</div>");
    }
    h.push_str(&links_html(dir, topo, makespan)?);
    h.push_str(&extrema_html(dir, pes)?);
    h.push_str(&comm_html(dir, pes)?);
    h.push_str(&grains_html(dir, &names[..top.len()], &colours)?);
    Ok(Some(Section {
        title: format!("Replay of {}", s["trace"].as_str().unwrap_or("a trace")),
        html: h,
    }))
}

/// Links to the other outputs of the folder that exist, with what opens them: the traces
/// for other viewers in view, the CSV and JSON files under "Files of this run". `rel` is the
/// folder relative to the report's (`replay/` in the demo's layout).
fn files_html(dir: &Path, rel: &str) -> String {
    const VIEWERS: [(&str, &str); 4] = [
        (
            "trace.json",
            "Perfetto (ui.perfetto.dev) or chrome://tracing",
        ),
        ("trace.json.gz", "Perfetto (ui.perfetto.dev)"),
        ("projections/predicted.sts", "Projections"),
        ("otf2/traces.otf2", "Vampir or otf2-print"),
    ];
    const FILES: [(&str, &str); 11] = [
        ("timeline.csv", "one row per block shown"),
        ("summary.json", "the run's figures"),
        ("analysis.json", "the critical path and the findings"),
        ("critical_path.csv", "the path's blocks"),
        ("pe.csv", "per PE: blocks, busy, idle"),
        ("entries.csv", "per entry method"),
        ("iterations.csv", "per iteration"),
        ("links.csv", "per link and NIC: bytes, busy time, queues"),
        ("extrema.csv", "the PEs that stand out"),
        ("clusters.csv", "k-means clusters of the PEs"),
        ("notes.txt", "what the outputs left out"),
    ];
    let link = |f: &str| format!("<a href=\"{rel}{f}\"><code>{f}</code></a>");
    let viewers: Vec<String> = VIEWERS
        .iter()
        .filter(|(f, _)| dir.join(f).exists())
        .map(|(f, what)| format!("{} in {what}", link(f)))
        .collect();
    let items: Vec<String> = FILES
        .iter()
        .filter(|(f, _)| dir.join(f).exists())
        .map(|(f, what)| format!("<li>{}: {what}</li>", link(f)))
        .collect();
    let mut h = String::new();
    if !viewers.is_empty() {
        let _ = write!(
            h,
            "<p class=\"files\">Open the predicted run: {}.</p>",
            viewers.join("; ")
        );
    }
    if !items.is_empty() {
        let _ = write!(
            h,
            "<details class=\"files\"><summary>Files of this run</summary><ul>{}</ul></details>",
            items.concat()
        );
    }
    h
}

/// Iteration times (iterations.csv) as a line, when there are at least two.
fn iterations_html(dir: &Path) -> Result<String> {
    let mut pts: Vec<(f64, f64)> = Vec::new();
    csv_rows(dir, "iterations.csv", &["iteration", "time_s"], |v| {
        let it: f64 = num(v[0])?;
        let t = crate::parse_secs(v[1]).ctx(|| format!("`{}` is not a time in seconds", v[1]))?;
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

/// Rows of the busiest-links table.
const TOP_LINKS: usize = 20;

/// One row of links.csv, as the report keeps it.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
struct LinkRow {
    busy_ps: u64,
    bytes: u64,
    /// Earlier rows first among equals.
    order: std::cmp::Reverse<u64>,
    kind: String,
    node: u64,
    port: u64,
    to_node: u64,
    packets: u64,
    max_queue: u64,
    max_wait_ps: u64,
}

/// A vertex of the topology by name: mesh and torus nodes with their coordinates, the
/// switches of indirect networks as switches.
fn vertex_name(topo: Option<&Topology>, v: u64) -> String {
    match topo {
        Some(Topology::Mesh { dims } | Topology::Torus { dims }) => {
            let mut rest = v;
            let c: Vec<String> = dims
                .iter()
                .map(|&d| {
                    let x = rest % d.max(1) as u64;
                    rest /= d.max(1) as u64;
                    x.to_string()
                })
                .collect();
            format!("node {v} ({})", c.join(","))
        }
        Some(t) if v >= t.nodes() => format!("switch {v}"),
        _ => format!("node {v}"),
    }
}

/// The link view of a contention or flow run (links.csv, read streaming: it has a row per
/// link that carried something, millions on a large machine): the busiest links, the load
/// per direction or level, and a heat map of each node's busiest outgoing link on the
/// machine plot. Nothing when the file is absent or has no rows.
fn links_html(dir: &Path, topo: Option<&Topology>, makespan: u64) -> Result<String> {
    use std::collections::{BTreeMap, BinaryHeap};
    let span = makespan.max(1) as f64;
    let mut top: BinaryHeap<std::cmp::Reverse<LinkRow>> = BinaryHeap::new();
    // Per class: links, bytes, busy time, the busiest link's busy time.
    let mut classes: BTreeMap<String, (u64, u64, u128, u64)> = BTreeMap::new();
    let nodes = topo.map_or(0, |t| t.nodes());
    let vertices = topo.map_or(0, |t| t.vertices());
    // Each node's busiest outgoing link (hosts only: the machine plot's cells).
    let mut heat: Vec<u64> = if nodes > 0 && nodes <= 1 << 26 {
        vec![0; nodes as usize]
    } else {
        Vec::new()
    };
    let mut rows = 0u64;
    // Every column but the utilisation (recomputed from the busy time).
    let cols: Vec<&str> = crate::LINK_COLUMNS
        .into_iter()
        .filter(|c| *c != "utilization")
        .collect();
    let present = csv_rows(dir, "links.csv", &cols, |v| {
        let secs = |x: &str| crate::parse_secs(x).ctx(|| format!("`{x}` is not a time in seconds"));
        let r = LinkRow {
            kind: v[0].to_string(),
            node: num(v[1])?,
            port: num(v[2])?,
            to_node: num(v[3])?,
            bytes: num(v[4])?,
            packets: num(v[5])?,
            busy_ps: secs(v[6])?,
            max_queue: num(v[7])?,
            max_wait_ps: secs(v[8])?,
            order: std::cmp::Reverse(rows),
        };
        rows += 1;
        let class = match (r.kind.as_str(), topo) {
            ("link", Some(t)) => {
                if r.node >= vertices || r.port >= t.ports() {
                    bail!(
                        "link {} port {} is not in the topology {t} ({vertices} vertices, {} ports)",
                        r.node,
                        r.port,
                        t.ports()
                    );
                }
                t.link_class(r.node, r.port)
            }
            ("link", None) => "link".to_string(),
            (nic, _) => format!("NIC {nic}"),
        };
        let c = classes.entry(class).or_default();
        c.0 += 1;
        c.1 += r.bytes;
        c.2 += u128::from(r.busy_ps);
        c.3 = c.3.max(r.busy_ps);
        if r.kind == "link"
            && let Some(hv) = heat.get_mut(r.node as usize)
        {
            *hv = (*hv).max(r.busy_ps);
        }
        top.push(std::cmp::Reverse(r));
        if top.len() > TOP_LINKS {
            top.pop();
        }
        Ok(())
    })?;
    if !present || rows == 0 {
        return Ok(String::new());
    }
    let mut top: Vec<LinkRow> = top.into_iter().map(|r| r.0).collect();
    top.sort_by(|a, b| b.cmp(a));
    let mut h = format!(
        "<h3>Links</h3><p>{rows} links and NICs carried traffic (links.csv). The {} busiest by transmission time; utilisation is busy time over the makespan, the queue the most packets that waited for the link at once.</p>",
        top.len()
    );
    h.push_str("<table class=\"links\"><tr><th>#</th><th style=\"text-align:left\">link</th><th>direction</th><th>bytes</th><th>packets</th><th>busy</th><th>utilisation</th><th>max queue (packets)</th><th>longest wait</th></tr>");
    for (i, r) in top.iter().enumerate() {
        let (what, class) = if r.kind == "link" {
            (
                format!(
                    "{} -> {}",
                    vertex_name(topo, r.node),
                    vertex_name(topo, r.to_node)
                ),
                topo.map_or("link".into(), |t| t.link_class(r.node, r.port)),
            )
        } else {
            (
                format!("{} NIC of {}", r.kind, vertex_name(topo, r.node)),
                format!("NIC {}", r.kind),
            )
        };
        let _ = write!(
            h,
            "<tr><td>{}</td><td style=\"text-align:left\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}%</td><td>{}</td><td>{}</td></tr>",
            i + 1,
            esc(&what),
            esc(&class),
            fmt_bytes(r.bytes),
            r.packets,
            fmt_time(r.busy_ps as f64),
            100.0 * r.busy_ps as f64 / span,
            r.max_queue,
            fmt_time(r.max_wait_ps as f64)
        );
    }
    h.push_str("</table>");
    // Load per direction (mesh, torus, hypercube) or level (fat-tree, dragonfly).
    let per = match topo {
        Some(Topology::FatTree { .. } | Topology::Dragonfly { .. }) => "level",
        _ => "direction",
    };
    let items: Vec<(String, f64)> = classes
        .iter()
        .map(|(k, c)| (k.clone(), c.2 as f64 / c.0.max(1) as f64 / span))
        .collect();
    let _ = write!(
        h,
        "<figure>{}</figure><table class=\"links\"><tr><th style=\"text-align:left\">{per}</th><th>links</th><th>bytes</th><th>mean utilisation</th><th>busiest link</th></tr>",
        svg::bars(
            &format!("Load per {per}: mean utilisation of the links that carried traffic"),
            "mean utilisation",
            per,
            &items
        )
    );
    for (k, c) in &classes {
        let _ = write!(
            h,
            "<tr><td style=\"text-align:left\">{}</td><td>{}</td><td>{}</td><td>{:.1}%</td><td>{:.1}%</td></tr>",
            esc(k),
            c.0,
            fmt_bytes(c.1),
            100.0 * c.2 as f64 / c.0.max(1) as f64 / span,
            100.0 * c.3 as f64 / span
        );
    }
    h.push_str("</table>");
    // The heat map: each node's busiest outgoing link, on the machine's layout.
    let hmax = heat.iter().copied().max().unwrap_or(0);
    if hmax > 0 {
        let m = hmax as f64;
        let values: Vec<f64> = heat.iter().map(|&b| b as f64 / m).collect();
        let fmt = |u: f64| format!("busiest outgoing link {:.1}% busy", 100.0 * u * m / span);
        let top_pct = format!("{:.1}% busy", 100.0 * m / span);
        h.push_str("<figure>");
        h.push_str(&machine_plot(
            &NodeValues {
                values: &values,
                group_max: true,
                fmt: &fmt,
                scale: ("0", &top_pct),
                what: "busiest outgoing link",
            },
            topo,
            "",
            MAX_MACHINE_CELLS,
            900.0,
        ));
        h.push_str("<figcaption>Each node's busiest outgoing link (utilisation, the scale's top is the busiest link of the run); groups of nodes show their busiest.</figcaption></figure>");
    }
    Ok(h)
}

/// Projections' extrema (extrema.csv): the PEs that stand out by busy time, messages sent
/// and bytes sent, with their mean against the rest's.
fn extrema_html(dir: &Path, pes: u32) -> Result<String> {
    struct M {
        measure: String,
        pes: Vec<(u64, u64)>,
        outlier_mean: f64,
        rest_mean: f64,
    }
    let mut ms: Vec<M> = Vec::new();
    csv_rows(
        dir,
        "extrema.csv",
        &["measure", "pe", "value", "outlier_mean", "rest_mean"],
        |v| {
            let (pe, value): (u64, u64) = (num(v[1])?, num(v[2])?);
            if pe >= u64::from(pes) {
                bail!("PE {pe} of {pes}");
            }
            if ms.last().is_none_or(|m| m.measure != v[0]) {
                if ms.len() == 16 {
                    bail!("more than 16 measures");
                }
                ms.push(M {
                    measure: v[0].to_string(),
                    pes: Vec::new(),
                    outlier_mean: num(v[3])?,
                    rest_mean: num(v[4])?,
                });
            }
            let m = ms.last_mut().expect("pushed");
            if m.pes.len() < 1000 {
                m.pes.push((pe, value));
            }
            Ok(())
        },
    )?;
    if ms.is_empty() {
        return Ok(String::new());
    }
    let mut h = String::from(
        "<h3>Extrema</h3><p>The PEs that stand out (Projections' extrema): the most loaded by busy time, messages sent and bytes sent, and the mean of those listed against the mean of all other PEs. Data: extrema.csv.</p><table class=\"extrema\"><tr><th style=\"text-align:left\">measure</th><th style=\"text-align:left\">top PEs (value)</th><th>PEs listed</th><th>their mean</th><th>the rest's mean</th><th>ratio</th></tr>",
    );
    for m in &ms {
        let (name, show): (&str, Box<dyn Fn(f64) -> String>) = match m.measure.as_str() {
            "busy" => ("busy time", Box::new(fmt_time)),
            "messages_sent" => ("messages sent", Box::new(short)),
            "bytes_sent" => ("bytes sent", Box::new(|v| fmt_bytes(v as u64))),
            other => (other, Box::new(|v| svg::sig(v, 4))),
        };
        let list: Vec<String> = m
            .pes
            .iter()
            .take(5)
            .map(|(p, v)| format!("PE {p} ({})", show(*v as f64)))
            .collect();
        let ratio = if m.rest_mean > 0.0 {
            format!("{:.2}x", m.outlier_mean / m.rest_mean)
        } else {
            "-".into()
        };
        let _ = write!(
            h,
            "<tr><td style=\"text-align:left\">{name}</td><td style=\"text-align:left\">{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{ratio}</td></tr>",
            esc(&list.join(", ")),
            if m.pes.len() > 5 { ", ..." } else { "" },
            m.pes.len(),
            show(m.outlier_mean),
            show(m.rest_mean)
        );
    }
    h.push_str("</table>");
    Ok(h)
}

/// The k-means clusters (clusters.csv).
fn clusters_html(dir: &Path) -> Result<String> {
    // A row per PE: streamed, one entry per cluster kept.
    let mut by: std::collections::BTreeMap<u32, (u32, Option<u32>, Vec<u32>, f64)> =
        Default::default();
    csv_rows(
        dir,
        "clusters.csv",
        &["cluster", "pe", "distance_ps", "role"],
        |v| {
            let (Ok(c), Ok(pe)) = (v[0].parse::<u32>(), v[1].parse::<u32>()) else {
                return Ok(());
            };
            let e = by.entry(c).or_insert((0, None, Vec::new(), 0.0));
            e.0 += 1;
            e.3 = e.3.max(v[2].parse().unwrap_or(0.0));
            match v[3] {
                "exemplar" => e.1 = Some(pe),
                "outlier" => e.2.push(pe),
                _ => {}
            }
            Ok(())
        },
    )?;
    if by.is_empty() {
        return Ok(String::new());
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
            bail!(
                "{}: groups of {size} PEs make {g} groups per side; at most {} (whatif writes it with at most 64)",
                dir.join("comm_matrix.csv").display(),
                analysis::views::MAX_MATRIX_GROUPS
            );
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
            "PEs".to_string()
        } else {
            format!("groups of {size} PEs")
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
        let first = |i: usize| (i as u64 * size as u64).to_string();
        let ticks: Vec<(usize, String)> = (0..g).map(|i| (i, first(i))).collect();
        let (rows_name, cols_name) = if size == 1 {
            ("sender PE".to_string(), "receiver PE".to_string())
        } else {
            (
                format!("sender PEs (first of {size})"),
                format!("receiver PEs (first of {size})"),
            )
        };
        let range = |i: usize| {
            if size == 1 {
                format!("PE {i}")
            } else {
                format!(
                    "PEs {}-{}",
                    i as u64 * size as u64,
                    (((i + 1) as u64 * size as u64).min(u64::from(pes))).saturating_sub(1)
                )
            }
        };
        h.push_str(
            &svg::Grid {
                title: &format!("Bytes between {who} (max {})", fmt_bytes(max)),
                cells: &cells,
                label: &|r, c| format!("{} -> {}", range(r), range(c)),
                value: &|u| fmt_bytes((u * m).round() as u64),
                scale: ("0", &fmt_bytes(max)),
                rows_name: &rows_name,
                cols_name: &cols_name,
                row_ticks: ticks.clone(),
                col_ticks: ticks,
                col_bands: Vec::new(),
                width: 560.0,
            }
            .svg(),
        );
        h.push_str("</figure>");
    }
    let mut sizes: Vec<(u64, u64, f64)> = Vec::new();
    csv_rows(
        dir,
        "message_sizes.csv",
        &["lo_bytes", "hi_bytes", "messages"],
        |v| {
            sizes.push((num(v[0])?, num(v[1])?, num(v[2])?));
            Ok(())
        },
    )?;
    if !sizes.is_empty() {
        let items: Vec<(String, f64)> = pow2_bins(sizes)
            .into_iter()
            .map(|(lo, hi, n)| (bytes_bin(lo, hi), n))
            .collect();
        h.push_str("<figure>");
        h.push_str(&svg::bars(
            "Message sizes between PEs",
            "messages",
            "message size (power-of-two bins, every bin of the range)",
            &items,
        ));
        h.push_str("</figure>");
    }
    Ok(h)
}

/// Power-of-two histogram bins `(lo, hi, count)` with every bin of the range: the empty bins
/// between the smallest and the largest, and one empty bin on each side, so that the shape
/// and its edges show; the zero bin (`0..1`) stays first. Bins that are not powers of two
/// (a file from elsewhere) are left as they are, in order.
fn pow2_bins(mut bins: Vec<(u64, u64, f64)>) -> Vec<(u64, u64, f64)> {
    bins.sort_by_key(|b| b.0);
    let pow2 = |b: &(u64, u64, f64)| b.0.is_power_of_two() && b.1 == b.0.saturating_mul(2);
    let zero = bins.iter().find(|b| b.0 == 0).copied();
    let rest: Vec<&(u64, u64, f64)> = bins.iter().filter(|b| b.0 > 0).collect();
    if rest.iter().any(|b| !pow2(b)) || bins.iter().filter(|b| b.0 == 0).count() > 1 {
        return bins;
    }
    let mut out: Vec<(u64, u64, f64)> = zero.into_iter().collect();
    if let (Some(first), Some(last)) = (rest.first(), rest.last()) {
        let (k0, k1) = (first.0.trailing_zeros(), last.0.trailing_zeros());
        for k in k0.saturating_sub(1)..=(k1 + 1).min(62) {
            let lo = 1u64 << k;
            let n = rest.iter().find(|b| b.0 == lo).map_or(0.0, |b| b.2);
            out.push((lo, lo * 2, n));
        }
    }
    out
}

/// A bin of run times, ps, by its bounds in one unit: `67.1-134 us` (`0` for the bin of
/// blocks that take no time).
fn time_bin(lo: u64, hi: u64) -> String {
    if lo == 0 {
        return "0".into();
    }
    let (d, u) = svg::time_unit(hi as f64);
    format!("{}-{} {u}", short(lo as f64 / d), short(hi as f64 / d))
}

/// A number with 3 significant digits, without trailing zeros: `8`, `16.8`, `134`.
fn short(v: f64) -> String {
    let t = svg::num(v);
    if t.contains('.') && !t.contains('e') {
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        t
    }
}

/// A bin of sizes, bytes, by its bounds in one unit: `64-128 KiB`, `512-1024 B`.
fn bytes_bin(lo: u64, hi: u64) -> String {
    if lo == 0 {
        return "0 B".into();
    }
    let (d, u) = [
        (1u64 << 30, "GiB"),
        (1 << 20, "MiB"),
        (1 << 10, "KiB"),
        (1, "B"),
    ]
    .into_iter()
    .find(|&(d, _)| lo >= d)
    .unwrap_or((1, "B"));
    let f = |v: u64| short(v as f64 / d as f64);
    format!("{}-{} {u}", f(lo), f(hi))
}

/// Grain-size histograms (grain_sizes.csv) of the top entries, in their colours: every
/// power-of-two bin of each entry's range, labelled by its bounds.
fn grains_html(dir: &Path, top: &[String], colours: &[&str]) -> Result<String> {
    let mut by: Vec<Vec<(u64, u64, f64)>> = vec![Vec::new(); top.len().min(4)];
    let present = csv_rows(
        dir,
        "grain_sizes.csv",
        &["entry", "lo_ps", "hi_ps", "blocks"],
        |v| {
            if let Some(k) = top.iter().take(4).position(|t| t == v[0]) {
                by[k].push((num(v[1])?, num(v[2])?, num(v[3])?));
            }
            Ok(())
        },
    )?;
    if !present {
        return Ok(String::new());
    }
    let mut h = String::from(
        "<h3>Grain size</h3><p>Blocks per run time for the entry methods with the most time, in power-of-two bins labelled by their bounds (a bin holds the blocks from its lower bound up to, not including, its upper one); every bin of the range is drawn, empty or not, and <code>0</code> is the blocks that take no time. Data: grain_sizes.csv.</p>",
    );
    let mut instant: Vec<&str> = Vec::new();
    for (k, name) in top.iter().enumerate().take(4) {
        let bins = pow2_bins(std::mem::take(&mut by[k]));
        if bins.is_empty() {
            continue;
        }
        // An entry whose every block takes no time has one bar at 0: a sentence says it.
        if bins.iter().all(|b| b.0 == 0) {
            instant.push(name);
            continue;
        }
        let items: Vec<(String, f64)> = bins
            .iter()
            .map(|&(lo, hi, n)| (time_bin(lo, hi), n))
            .collect();
        let n: f64 = items.iter().map(|i| i.1).sum();
        h.push_str("<figure>");
        h.push_str(&svg::stacked_bars(
            &format!("Grain size of {} ({n} blocks)", svg::truncate(name, 40)),
            "blocks",
            "run time of a block",
            &items.iter().map(|i| i.0.clone()).collect::<Vec<_>>(),
            &colours[k..=k],
            &["blocks".to_string()],
            &[items.iter().map(|i| i.1).collect()],
        ));
        h.push_str("</figure>");
    }
    if !instant.is_empty() {
        let _ = write!(
            h,
            "<p>Every block of {} takes no time (all in the bin <code>0</code>).</p>",
            esc(&instant.join(", "))
        );
    }
    Ok(h)
}

/// Writes the report for `dir` (and its `sweep/` and `replay/` subfolders, as `whatif demo`
/// lays them out) to `out` (default `dir/report.html`).
pub fn write(dir: &Path, out: Option<&Path>) -> Result<PathBuf> {
    if !dir.is_dir() {
        bail!(
            "{}: no such folder (give a folder written by `whatif sweep`, `whatif replay --out` or `whatif demo`)",
            dir.display()
        );
    }
    write_titled(dir, out, dir)
}

/// [`write`], naming the folder `title` in the page (a staged folder is read under its
/// final name).
pub fn write_titled(dir: &Path, out: Option<&Path>, title: &Path) -> Result<PathBuf> {
    let mut sections = Vec::new();
    // Links in a section are relative to the report's folder (`dir`).
    for (d, rel) in [
        (dir.to_path_buf(), ""),
        (dir.join("sweep"), "sweep/"),
        (dir.join("replay"), "replay/"),
    ] {
        if let Some(s) = sweep_section(&d)? {
            sections.push(s);
        }
        if let Some(s) = replay_section(&d, rel)? {
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
pre.cmd .arg{white-space:nowrap}.rows td{white-space:nowrap}pre.cmd{margin:0;font-size:12px;white-space:pre-wrap;word-break:normal;overflow-wrap:normal;overflow-x:auto;max-width:1000px}\
.scroll{overflow-x:auto;max-width:100%}.multiples{display:flex;flex-wrap:wrap;gap:8px}.multiples svg.chart{max-width:380px}\
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
    crate::write_text(&path, &html)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_bins_cover_their_range_and_say_their_bounds() {
        // 100 us blocks: one bin, 2^26..2^27 ps, with an empty neighbour on each side.
        let bins = pow2_bins(vec![(1 << 26, 1 << 27, 10.0)]);
        assert_eq!(
            bins,
            [
                (1 << 25, 1 << 26, 0.0),
                (1 << 26, 1 << 27, 10.0),
                (1 << 27, 1 << 28, 0.0)
            ]
        );
        assert_eq!(time_bin(1 << 26, 1 << 27), "67.1-134 us");
        // Gaps are filled; the zero bin stays first.
        let bins = pow2_bins(vec![(8, 16, 1.0), (0, 1, 4.0), (64, 128, 2.0)]);
        let los: Vec<u64> = bins.iter().map(|b| b.0).collect();
        assert_eq!(los, [0, 4, 8, 16, 32, 64, 128]);
        assert_eq!(bytes_bin(65536, 131072), "64-128 KiB");
        assert_eq!(bytes_bin(512, 1024), "512-1024 B");
        assert_eq!(time_bin(0, 1), "0");
    }

    #[test]
    fn columns_and_axes_read_in_words() {
        assert_eq!(words("mean_iteration_s"), "mean iteration time");
        assert_eq!(words("net.lat"), "network latency");
        assert_eq!(words("workload.params.block"), "block");
        assert_eq!(words("best_mean_iteration_s"), "best mean iteration time");
        let t = table_html(
            "rows",
            &["makespan_s".into(), "utilization".into()],
            &[vec!["0.400055000000".into(), "0.749897".into()]],
        );
        assert!(t.contains(">makespan (ms)</th>") && t.contains("<td>400.1</td>"));
        assert!(t.contains(">utilisation (%)</th>") && t.contains("<td>74.99</td>"));
    }
}
