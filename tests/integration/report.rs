//! `whatif report`: what a reader of the HTML page sees (issue 31, part 5): windows whose
//! headings span what they draw, grain-size bins labelled by their bounds with no gaps, a
//! link view for contention runs, the extrema, words and units on a study's axes.

use crate::cli::{gen_trace, render_and_check, stderr, tmpdir, whatif};
use serde_json::Value;
use std::path::Path;

/// `whatif ARGS`, which must succeed.
fn ok(args: &[&str]) {
    let o = whatif(args);
    assert!(
        o.status.success(),
        "whatif {}: {}",
        args.join(" "),
        stderr(&o)
    );
}

/// The `<svg ...>...</svg>` element whose title is `title`.
fn chart<'a>(html: &'a str, title: &str) -> &'a str {
    let at = html
        .find(&format!("<title>{title}"))
        .unwrap_or_else(|| panic!("no chart titled {title}"));
    let start = html[..at].rfind("<svg").unwrap();
    let end = at + html[at..].find("</svg>").unwrap();
    &html[start..end]
}

/// A bar chart's bins: its labels (every one written: the charts tested have few) with the
/// count of each from the hover titles (`LABEL: N blocks`; an empty bin draws no bar).
fn bar_titles(svg: &str) -> Vec<(String, f64)> {
    let counts: Vec<(String, f64)> = svg
        .split("<rect class=\"bar\"")
        .skip(1)
        .map(|b| {
            let t = b
                .split("<title>")
                .nth(1)
                .unwrap()
                .split("</title>")
                .next()
                .unwrap();
            let (label, rest) = t.rsplit_once(": ").unwrap();
            let n: f64 = rest.split(' ').next().unwrap().parse().unwrap();
            (label.to_string(), n)
        })
        .collect();
    svg.split("font-size=\"10\"")
        .skip(1)
        .map(|t| {
            t.split('>')
                .nth(1)
                .unwrap()
                .split('<')
                .next()
                .unwrap()
                .to_string()
        })
        .map(|l| {
            let n = counts.iter().find(|c| c.0 == l).map_or(0.0, |c| c.1);
            (l, n)
        })
        .collect()
}

/// Seconds with up to 12 decimals (as the CSV files write them) as picoseconds.
fn secs_ps(v: &str) -> u64 {
    let (w, f) = v.split_once('.').unwrap_or((v, ""));
    w.parse::<u64>().unwrap() * 1_000_000_000_000 + format!("{f:0<12}").parse::<u64>().unwrap()
}

/// A bin label `A-B unit` as (A, B) in microseconds.
fn bin_us(label: &str) -> (f64, f64) {
    let (range, unit) = label.split_once(' ').expect("a unit");
    let (a, b) = range.split_once('-').expect("a range");
    let f = match unit {
        "ns" => 1e-3,
        "us" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        u => panic!("unit {u}"),
    };
    (a.parse::<f64>().unwrap() * f, b.parse::<f64>().unwrap() * f)
}

/// A 4x4x4 halo of 100 us blocks replayed on a contended torus, with its report.
fn contention_run(dir: &Path) -> std::path::PathBuf {
    let t = dir.join("h.trace");
    gen_trace(
        &t,
        &[
            "halo3d",
            "--dims",
            "4x4x4",
            "--iters",
            "3",
            "--compute",
            "100us",
            "--bytes",
            "65536",
        ],
    );
    let out = dir.join("run");
    ok(&[
        "replay",
        t.to_str().unwrap(),
        "--net",
        "contention:topo=torus:4x4x4,lat=1us,bw=10GB/s",
        "--out",
        out.to_str().unwrap(),
        "--report",
        "-q",
    ]);
    out
}

/// A contention run's report: the busiest link of links.csv heads the link table; the
/// summary keeps no per-link rows; 100 us blocks fall in a bin labelled to contain 100 us,
/// with no gap between bins; each window's heading spans exactly the window drawn.
#[test]
fn a_contention_report_shows_links_grains_and_true_windows() {
    let dir = tmpdir("report-contention");
    let out = contention_run(&dir);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();

    // summary.json: totals and where the rows are, not the rows.
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let links = std::fs::read_to_string(out.join("links.csv")).unwrap();
    let rows: Vec<Vec<&str>> = links
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert!(rows.len() > 100, "{} link rows", rows.len());
    assert!(
        s["network"].get("links").is_none(),
        "summary.json holds per-link rows"
    );
    assert_eq!(s["network"]["link_rows"], rows.len());
    assert_eq!(s["network"]["links_file"], "links.csv");

    // The busiest link (busy, then bytes, then the first row) heads the table.
    let busy = |r: &[&str]| secs_ps(r[6]);
    let best = (0..rows.len())
        .max_by_key(|&i| {
            (
                busy(&rows[i]),
                rows[i][4].parse::<u64>().unwrap(),
                std::cmp::Reverse(i),
            )
        })
        .unwrap();
    let (a, b): (u64, u64) = (
        rows[best][1].parse().unwrap(),
        rows[best][3].parse().unwrap(),
    );
    let coords = |n: u64| format!("({},{},{})", n % 4, n / 4 % 4, n / 16);
    let want = format!("node {a} {} -&gt; node {b} {}", coords(a), coords(b));
    let section = &html[html.find("<h3>Links</h3>").expect("a link section")..];
    let first = section
        .split("<tr><td>1</td>")
        .nth(1)
        .expect("a first row")
        .split("</tr>")
        .next()
        .unwrap();
    assert!(first.contains(&want), "first row {first}, want {want}");
    assert!(
        html.contains("Load per direction"),
        "the load per direction"
    );
    assert!(
        html.contains("(node busiest outgoing link)"),
        "the link heat map"
    );

    // Grain sizes of `compute` (every block 100 us): a bin whose bounds hold 100 us, and
    // consecutive bins that share their bounds.
    let bars = bar_titles(chart(&html, "Grain size of compute"));
    assert!(bars.len() >= 3, "{bars:?}");
    let (holds, n) = bars
        .iter()
        .map(|(l, n)| (bin_us(l), *n))
        .find(|((lo, hi), _)| *lo <= 100.0 && 100.0 < *hi)
        .expect("a bin holding 100 us");
    assert!(n > 0.0, "the bin {holds:?} holding 100 us is empty");
    for w in bars.windows(2) {
        let (x, y) = (bin_us(&w[0].0), bin_us(&w[1].0));
        assert!(
            (x.1 - y.0).abs() <= 0.01 * y.0,
            "a gap between {} and {}",
            w[0].0,
            w[1].0
        );
    }

    // Each window's heading range is its drawn span, in the axis's unit.
    let mut windows = 0;
    for part in html.split("<h3 id=\"window-").skip(1) {
        windows += 1;
        let head = part.split("</h3>").next().unwrap();
        let range = head.split(", ").nth(1).unwrap().split(':').next().unwrap();
        let (ab, unit) = range.split_once(' ').unwrap();
        let (a, b) = ab.split_once('-').unwrap();
        let svg = &part[part.find("<svg").unwrap()..];
        let attr = |k: &str| -> f64 {
            svg.split(&format!("{k}=\""))
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        let (t0, t1) = (attr("data-t0-ps"), attr("data-t1-ps"));
        let ps = match unit {
            "ns" => 1e3,
            "us" => 1e6,
            "ms" => 1e9,
            "s" => 1e12,
            u => panic!("unit {u}"),
        };
        let half = 0.5 * 10f64.powi(-(a.split('.').nth(1).map_or(0, str::len) as i32));
        for (text, t) in [(a, t0), (b, t1)] {
            let v: f64 = text.parse().unwrap();
            assert!(
                (v - t / ps).abs() <= half + 1e-9,
                "{head}: {text} {unit} for {t} ps"
            );
        }
        assert!(
            svg[..svg.find("</title>").unwrap()].contains(range),
            "the chart's title says {range}"
        );
        assert!(
            t1 > t0
                && t1 - t0 >= 0.9 * (b.parse::<f64>().unwrap() - a.parse::<f64>().unwrap()) * ps
        );
    }
    assert!(windows >= 1, "no zoomed window");
    // Every chart fits its box in Chromium, with the link view and turned labels.
    render_and_check(&out.join("report.html"), &dir);
    std::fs::remove_dir_all(&dir).ok();
}

/// A GOAL trace where rank 3 computes 50x longer and sends 8x larger messages: the extrema
/// section names PE 3 first for busy time and bytes sent.
#[test]
fn the_extrema_name_the_hot_pe() {
    let dir = tmpdir("report-extrema");
    let mut g = String::from("num_ranks 8\n");
    for r in 0..8u32 {
        g += &format!("rank {r} {{\n");
        let mut prev = None;
        for k in 0..3u32 {
            let (c, snd, rcv) = (3 * k + 1, 3 * k + 2, 3 * k + 3);
            let left = (r + 7) % 8;
            g += &format!("l{c}: calc {}\n", if r == 3 { 50000 } else { 1000 });
            g += &format!(
                "l{snd}: send {}b to {} tag {k}\n",
                if r == 3 { 4096 } else { 512 },
                (r + 1) % 8
            );
            g += &format!(
                "l{rcv}: recv {}b from {left} tag {k}\n",
                if left == 3 { 4096 } else { 512 }
            );
            g += &format!("l{snd} requires l{c}\nl{rcv} requires l{c}\n");
            if let Some(p) = prev {
                g += &format!("l{c} requires l{p}\n");
            }
            prev = Some(rcv);
        }
        g += "}\n";
    }
    let t = dir.join("hot.goal");
    std::fs::write(&t, g).unwrap();
    let out = dir.join("hot");
    ok(&[
        "replay",
        t.to_str().unwrap(),
        "--format",
        "goal",
        "--out",
        out.to_str().unwrap(),
        "--report",
        "-q",
    ]);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let ex = &html[html.find("<h3>Extrema</h3>").expect("an extrema section")..];
    for measure in ["busy time", "bytes sent"] {
        let row = ex
            .split(&format!(">{measure}</td>"))
            .nth(1)
            .unwrap_or_else(|| panic!("no row for {measure}"));
        let cell = row.split("<td").nth(1).unwrap();
        assert!(cell.contains(">PE 3 ("), "{measure}: {cell}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// A study with one series (the LB study's shape, small): no legend, no "all", axis labels
/// in words with their unit, times in the table in a fitted unit (no 12-decimal seconds).
#[test]
fn a_study_report_reads_in_words_and_units() {
    let dir = tmpdir("report-study");
    let study = dir.join("lb.toml");
    std::fs::write(
        &study,
        r#"name = "lb-small"
seed = 1

[workload]
program = "simple-imbalance"
pes = 8
params = { objects_per_pe = 4, iters = 6, lb_at = 3, work = "1ms" }

[net]
model = "latency"
lat = "1us"

[lb]
strategy = "dummy"
at = 3

[report]
iterations = [4, 5]
x = "lb.strategy"

[[sweep]]
key = "lb.strategy"
values = ["dummy", "greedy", "refine"]
"#,
    )
    .unwrap();
    let out = dir.join("sweep");
    ok(&[
        "sweep",
        study.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    ok(&["report", out.to_str().unwrap()]);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let svg = chart(&html, "lb-small: mean iteration time by LB strategy");
    assert!(!svg.contains(">all<"), "a legend entry `all`");
    assert!(
        !svg.contains("width=\"12\" height=\"12\""),
        "a legend for one series"
    );
    assert!(
        svg.contains(">mean iteration time (ms)</text>"),
        "the y axis in words"
    );
    assert!(
        !html.contains("mean_iteration_s ("),
        "a column name as a label"
    );
    let rows = &html[html.find("<h3>Rows</h3>").unwrap()..];
    assert!(
        rows.contains(">makespan (ms)</th>"),
        "the makespan column's unit"
    );
    let twelve = rows.split(['>', '<']).any(|t| {
        t.split_once('.')
            .is_some_and(|(_, d)| d.len() >= 8 && d.bytes().all(|b| b.is_ascii_digit()))
    });
    assert!(!twelve, "a number with 8 or more decimals in the rows");
    std::fs::remove_dir_all(&dir).ok();
}
