//! Studies: `whatif sweep` (threads, shards, single points) and `whatif merge`.

use crate::cli::{tmpdir, whatif};
use std::path::Path;

const STUDY: &str = r#"
name = "mini"
seed = 7

[workload]
program = "stencil3d"
pes = 4
params = { grid = "16x16x8", block = "8x8x4", iters = 6 }

[net]
model = "alphabeta"
lat = "1us"
bw = "1GB/s"

[report]
iterations = [2, 5]

[[sweep]]
key = "params.block"
values = ["8x8x4", "4x8x4"]

[[sweep]]
key = "net.lat"
log = ["1us", "1ms"]
steps = 4

[[sweep]]
key = "machine.pes"
values = [2, 4]
"#;

fn ok(args: &[&str]) -> String {
    let o = whatif(args);
    assert!(
        o.status.success(),
        "whatif {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    ["results.csv", "results.json", "manifest.json"]
        .iter()
        .map(|f| (f.to_string(), std::fs::read(dir.join(f)).unwrap()))
        .collect()
}

#[test]
fn threads_shards_and_merge_give_identical_bytes() {
    let dir = tmpdir("sweep");
    let study = dir.join("mini.toml");
    std::fs::write(&study, STUDY).unwrap();
    let s = study.to_str().unwrap();
    let out = |n: &str| dir.join(n).to_str().unwrap().to_string();
    ok(&["sweep", s, "--jobs", "1", "--out", &out("j1"), "-q"]);
    ok(&["sweep", s, "--jobs", "2", "--out", &out("j2"), "-q"]);
    for i in 0..3 {
        ok(&[
            "sweep",
            s,
            "--shard",
            &format!("{i}/3"),
            "--out",
            &out(&format!("s{i}")),
            "-q",
        ]);
    }
    // Shards may be merged in any order.
    ok(&[
        "merge",
        &out("s2"),
        &out("s0"),
        &out("s1"),
        "--out",
        &out("merged"),
    ]);
    let single = files(&dir.join("j1"));
    assert_eq!(single, files(&dir.join("j2")), "--jobs 1 vs --jobs 2");
    assert_eq!(
        single,
        files(&dir.join("merged")),
        "shards + merge vs one run"
    );

    let csv = String::from_utf8(single[0].1.clone()).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1 + 16, "2 x 4 x 2 points");
    assert!(lines[0].starts_with(
        "point,fingerprint,workload.params.block,net.lat,machine.pes,pes,makespan_s,mean_iteration_s,iterations,"
    ), "{}", lines[0]);
    // Row-major order: the last axis varies fastest.
    assert!(
        lines[1].starts_with("0,") && lines[1].contains(",8x8x4,1us,2,2,"),
        "{}",
        lines[1]
    );
    assert!(lines[2].contains(",8x8x4,1us,4,4,"), "{}", lines[2]);
    assert!(lines[3].contains(",8x8x4,10us,2,"), "{}", lines[3]);
    // Mean over iterations 2..=5: 4 iterations counted.
    assert!(lines[1].split(',').nth(8) == Some("4"), "{}", lines[1]);
    // Latency hurts: at 1 ms the iteration is longer than at 1 us.
    let mean = |l: &str| l.split(',').nth(7).unwrap().parse::<f64>().unwrap();
    assert!(
        mean(lines[7]) > mean(lines[1]) + 0.9e-3,
        "{} vs {}",
        lines[7],
        lines[1]
    );
    // Fingerprints differ per point.
    let mut fps: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l.split(',').nth(1).unwrap())
        .collect();
    fps.sort();
    fps.dedup();
    assert_eq!(fps.len(), 16);
    let json: serde_json::Value = serde_json::from_slice(&single[1].1).unwrap();
    assert_eq!(json.as_array().unwrap().len(), 16);
    assert_eq!(json[5]["point"], 5);
    assert!(json[0]["mean_iteration_s"].is_f64());

    // One point alone reproduces its row.
    ok(&["sweep", s, "--point", "5", "--out", &out("p5"), "-q"]);
    let p5 = std::fs::read_to_string(dir.join("p5/results.csv")).unwrap();
    assert_eq!(p5.lines().nth(1), Some(lines[6]));
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("p5/manifest.json")).unwrap()).unwrap();
    assert_eq!(m["points"], serde_json::json!([5]));
    let listed = ok(&["sweep", s, "--list"]);
    assert_eq!(listed.lines().count(), 16);

    // Incomplete or mixed shards are refused.
    let e = whatif(&["merge", &out("s0"), &out("s1"), "--out", &out("bad")]);
    let msg = String::from_utf8_lossy(&e.stderr);
    assert!(
        !e.status.success() && msg.contains("missing: 2, 5, 8"),
        "{msg}"
    );
    let e = whatif(&["merge", &out("s0"), &out("s0"), "--out", &out("bad")]);
    assert!(String::from_utf8_lossy(&e.stderr).contains("more than one shard"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn study_errors_point_at_the_problem() {
    let dir = tmpdir("sweep-err");
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let bad = write(
        "bad.toml",
        &STUDY.replace("seed = 7", "seed = 7\nthreads = 4"),
    );
    let e = whatif(&["sweep", &bad, "--list"]);
    let msg = String::from_utf8_lossy(&e.stderr);
    assert!(!e.status.success());
    assert!(
        msg.contains("bad.toml") && msg.contains("unknown field `threads`") && msg.contains("line"),
        "{msg}"
    );
    let unit = write(
        "unit.toml",
        &STUDY.replace("log = [\"1us\", \"1ms\"]", "log = [\"1us\", \"1MB\"]"),
    );
    let msg = String::from_utf8_lossy(&whatif(&["sweep", &unit, "--list"]).stderr).into_owned();
    assert!(msg.contains("different units"), "{msg}");
    let lb = write("lb.toml", &format!("{STUDY}\n[lb]\nstrategy = \"best\"\n"));
    let msg = String::from_utf8_lossy(
        &whatif(&["sweep", &lb, "--out", dir.join("o").to_str().unwrap(), "-q"]).stderr,
    )
    .into_owned();
    assert!(
        msg.contains("unknown load-balancing strategy `best`") && msg.contains("reproduce with"),
        "{msg}"
    );
    let e = whatif(&["sweep", &bad, "--shard", "3/3"]);
    assert!(String::from_utf8_lossy(&e.stderr).contains("expected i/n"));
    std::fs::remove_dir_all(&dir).ok();
}

/// The built-in study files parse and expand to the documented sizes.
#[test]
fn builtin_studies_are_valid() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/studies");
    for (f, n) in [
        ("stencil-latency-large.toml", 105),
        ("stencil-latency-small.toml", 108),
        ("simple-imbalance-lb.toml", 7),
        ("topology-compare.toml", 30),
        ("stencil-vf-overhead.toml", 16),
        ("stencil-noise.toml", 5),
        ("atm2d-paragon.toml", 18),
        ("pge-block-size.toml", 54),
    ] {
        let s = scenarios::study::Study::from_file(&root.join(f))
            .unwrap_or_else(|e| panic!("{f}: {e}"));
        assert_eq!(s.num_points(), n, "{f}");
    }
}

/// Lee 2009 6.5 in small: every curve is flat at low latency, then rises; the knee (where the
/// mean iteration time first exceeds its low-latency value by 10%, interpolated in log
/// latency) moves to higher latency as the virtualization factor grows.
#[test]
fn stencil_latency_tolerance_grows_with_the_virtualization_factor() {
    let dir = tmpdir("sweep-knees");
    let study = dir.join("knees.toml");
    std::fs::write(
        &study,
        r#"
name = "knees"
[workload]
program = "stencil3d"
pes = 48
params = { grid = "64x64x48", block = "16x16x16", iters = 25 }
[net]
model = "latency"
lat = "1us"
[report]
iterations = [10, 20]
[[sweep]]
key = "params.block"
values = ["16x16x16", "16x8x16", "8x8x8"]
[[sweep]]
key = "net.lat"
log = ["1us", "500us"]
steps = 14
"#,
    )
    .unwrap();
    let out = dir.join("out");
    ok(&[
        "sweep",
        study.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    let rows: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
    let lat_us = |s: &str| -> f64 {
        let d = sim_core::units::parse_duration(s).unwrap();
        d.as_ps() as f64 / 1e6
    };
    let mut knees = Vec::new();
    for vf in ["16x16x16", "16x8x16", "8x8x8"] {
        let pts: Vec<(f64, f64)> = rows
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["workload.params.block"] == vf)
            .map(|r| {
                (
                    lat_us(r["net.lat"].as_str().unwrap()),
                    r["mean_iteration_s"].as_f64().unwrap(),
                )
            })
            .collect();
        assert_eq!(pts.len(), 14);
        let base = pts[0].1;
        // Flat at low latency (VF 1 has no other work to overlap, so latency adds directly:
        // 'hurt early', as Lee found; its first step still costs under 2%).
        let flat = if vf == "16x16x16" { 2 } else { 5 };
        assert!(
            pts[..flat].iter().all(|p| (p.1 / base - 1.0).abs() < 0.02),
            "{vf} flat: {pts:?}"
        );
        assert!(pts[13].1 > 1.5 * base, "{vf} rises: {pts:?}");
        assert!(
            pts.windows(2).all(|w| w[1].1 >= w[0].1 * 0.98),
            "{vf} about monotone: {pts:?}"
        );
        let i = pts.iter().position(|p| p.1 > 1.1 * base).unwrap();
        let (a, b) = (pts[i - 1], pts[i]);
        let f = (1.1 * base - a.1) / (b.1 - a.1);
        knees.push((vf, (a.0.ln() + f * (b.0.ln() - a.0.ln())).exp()));
    }
    assert!(
        knees[0].1 < knees[1].1 && knees[1].1 < knees[2].1,
        "knees grow with VF: {knees:?}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A categorical axis (LB strategies) is drawn as bars, one per strategy, not as a line.
#[test]
fn a_strategy_comparison_is_drawn_as_bars() {
    let dir = tmpdir("sweep-bars");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/studies");
    let out = dir.join("out");
    ok(&[
        "sweep",
        root.join("simple-imbalance-lb.toml").to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    ok(&["report", out.to_str().unwrap()]);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert_eq!(
        html.matches("class=\"bar\"").count(),
        7,
        "one bar per strategy"
    );
    assert!(
        !html.contains("class=\"series\""),
        "no line through categories"
    );
    for s in ["dummy", "greedy-refine", "rec-bipart"] {
        assert!(html.contains(&format!(">{s}</text>")), "{s} labels its bar");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `[report] optimum` and a PE axis: optimum.csv holds each P's best block size (checked
/// against results.csv here), speedup.csv the speedup and efficiency at it, and the report
/// draws both.
#[test]
fn optimal_grain_and_speedup_outputs() {
    let dir = tmpdir("sweep-optimum");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/studies");
    let out = dir.join("out");
    ok(&[
        "sweep",
        root.join("pge-block-size.toml").to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--report",
        "-q",
    ]);
    let rows = |f: &str| -> Vec<Vec<String>> {
        std::fs::read_to_string(out.join(f))
            .unwrap()
            .lines()
            .skip(1)
            .map(|l| l.split(',').map(String::from).collect())
            .collect()
    };
    let results = rows("results.csv");
    let optimum = rows("optimum.csv");
    assert_eq!(optimum.len(), 6, "one best K per P");
    for o in &optimum {
        // results.csv: point, fingerprint, workload.pes, workload.params.k, pes, makespan_s, ...
        let best = results
            .iter()
            .filter(|r| r[2] == o[0])
            .min_by(|a, b| {
                a[5].parse::<f64>()
                    .unwrap()
                    .total_cmp(&b[5].parse::<f64>().unwrap())
            })
            .unwrap();
        assert_eq!(o[1], best[3], "P={}", o[0]);
        assert!(o[4].parse::<f64>().unwrap() > 1.0, "worst over best");
    }
    let sp = rows("speedup.csv");
    assert_eq!(sp.len(), 6);
    // pes, makespan_s, best K, speedup, efficiency: the smallest P has speedup P0.
    assert_eq!(sp[0][0], "4");
    assert_eq!(sp[0][3].parse::<f64>().unwrap(), 4.0);
    for r in &sp {
        let (p, s, e): (f64, f64, f64) = (
            r[0].parse().unwrap(),
            r[3].parse().unwrap(),
            r[4].parse().unwrap(),
        );
        assert!((e - s / p).abs() < 1e-5, "{r:?}");
        let best = optimum.iter().find(|o| o[0] == r[0]).unwrap();
        assert_eq!(r[2], best[1], "speedup at the best K");
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("Optimal grain") && html.contains("<title>Speedup</title>"));
    std::fs::remove_dir_all(&dir).ok();
}

/// `[report] constant_time`: for every P and target time, constant_time.csv holds the domain
/// side whose step takes that time, interpolated in log-log between the two swept sides
/// around it (recomputed here from results.csv), and the report draws the curves.
#[test]
fn constant_time_curves_interpolate_the_sweep() {
    let dir = tmpdir("sweep-constant-time");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/studies");
    let out = dir.join("out");
    ok(&[
        "sweep",
        root.join("atm2d-paragon.toml").to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--report",
        "-q",
    ]);
    let read = |f: &str| -> (Vec<String>, Vec<Vec<String>>) {
        let text = std::fs::read_to_string(out.join(f)).unwrap();
        let mut lines = text.lines();
        let head = lines.next().unwrap().split(',').map(String::from).collect();
        (
            head,
            lines
                .map(|l| l.split(',').map(String::from).collect())
                .collect(),
        )
    };
    let (rh, results) = read("results.csv");
    let col = |n: &str| rh.iter().position(|c| c == n).unwrap();
    let (pc, lc, tc) = (
        col("workload.pes"),
        col("workload.params.lambda"),
        col("mean_iteration_s"),
    );
    let (ch, curves) = read("constant_time.csv");
    assert_eq!(
        ch,
        [
            "workload.pes",
            "target_mean_iteration_s",
            "workload.params.lambda"
        ]
    );
    assert_eq!(curves.len(), 6 * 2, "6 P x 2 targets");
    for c in &curves {
        let target: f64 = c[1].parse().unwrap();
        let mut pts: Vec<(f64, f64)> = results
            .iter()
            .filter(|r| r[pc] == c[0])
            .map(|r| (r[lc].parse().unwrap(), r[tc].parse().unwrap()))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let w = pts
            .windows(2)
            .find(|w| w[0].1 <= target && target <= w[1].1)
            .expect("the targets are inside the swept range");
        let f = (target.ln() - w[0].1.ln()) / (w[1].1.ln() - w[0].1.ln());
        let want = (w[0].0.ln() + f * (w[1].0.ln() - w[0].0.ln())).exp();
        let got: f64 = c[2].parse().unwrap();
        assert!((got - want).abs() < 1e-5, "{c:?}: {got} vs {want}");
        assert!(got > w[0].0 && got < w[1].0);
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("Constant-time curves"), "report section");
    assert!(html.contains("Problem size at constant time"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn constant_time_needs_its_targets() {
    let dir = tmpdir("sweep-constant-time-bad");
    let study = dir.join("s.toml");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/studies");
    let text = std::fs::read_to_string(root.join("atm2d-paragon.toml"))
        .unwrap()
        .replace("constant_time_s = [0.05, 0.2]\n", "");
    std::fs::write(&study, text).unwrap();
    let o = whatif(&[
        "sweep",
        study.to_str().unwrap(),
        "--out",
        dir.join("o").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", crate::cli::stderr(&o));
    assert!(
        crate::cli::stderr(&o).contains("constant_time needs constant_time_s"),
        "{}",
        crate::cli::stderr(&o)
    );
}
