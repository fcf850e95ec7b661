//! `whatif model`: Extra-P's model choice, checked against Extra-P itself (PyPI `extrap`,
//! installed by .ci/run into a venv) on Extra-P's example and on three whatif sweeps.

use crate::cli::{stderr, tmpdir, whatif};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The `extrap` executable: $WHATIF_EXTRAP, the venv .ci/run makes, or PATH.
fn extrap() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let candidates = [
        std::env::var_os("WHATIF_EXTRAP").map(PathBuf::from),
        home.map(|h| h.join(".cache/whatif/extrap-venv/bin/extrap")),
        Some(PathBuf::from("extrap")),
    ];
    candidates.into_iter().flatten().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// (constant, coefficient, term) of an Extra-P model string: `c0 + c1 * term` or `c0`.
fn parse_model(s: &str) -> (f64, f64, String) {
    let s = s.trim();
    match s.split_once(" + ") {
        None => (s.parse().unwrap(), 0.0, String::new()),
        Some((c0, rest)) => {
            let (c1, term) = rest.split_once(" * ").unwrap();
            (c0.parse().unwrap(), c1.parse().unwrap(), term.to_string())
        }
    }
}

fn close(a: f64, b: f64, scale: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()) + 1e-9 * scale.abs()
}

/// whatif's models for `input` (JSON), written as Extra-P text too.
fn whatif_models(input: &Path, extra: &[&str], txt: &Path) -> Vec<serde_json::Value> {
    let mut a = vec![
        "model",
        input.to_str().unwrap(),
        "--json",
        "--extrap-out",
        txt.to_str().unwrap(),
    ];
    a.extend_from_slice(extra);
    let o = whatif(&a);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice::<serde_json::Value>(&o.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// Extra-P's `Model:` lines for an Extra-P text file, in callpath order.
fn extrap_models(bin: &Path, txt: &Path) -> Vec<String> {
    let o = Command::new(bin)
        .args(["--text", txt.to_str().unwrap(), "--disable-progress"])
        .output()
        .expect("run extrap");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Model: ").map(str::to_string))
        .collect()
}

/// Extra-P 4.2.5's model for its own example (`extrap --text docs/examples/input.txt`, run
/// here): 2.8183276094059404 + 0.48270031135124886 * p^(5/4) * log2(p)^(1), RSS 61.8.
#[test]
fn the_extrap_example_gets_extraps_model() {
    let Some(data) = crate::shared_data("extrap/input.txt") else {
        return;
    };
    let dir = tmpdir("model-example");
    let m = whatif_models(&data, &[], &dir.join("x.txt"));
    assert_eq!(m.len(), 1);
    let (c0, c1, term) = parse_model(m[0]["model"].as_str().unwrap());
    assert_eq!(term, "p^(5/4) * log2(p)^(1)");
    assert!(close(c0, 2.8183276094059404, 1.0), "{c0}");
    assert!(close(c1, 0.48270031135124886, 1.0), "{c1}");
    assert!((m[0]["rss"].as_f64().unwrap() - 61.8).abs() < 0.05);
    // The human output names the model and a band that holds the prediction.
    let o = whatif(&["model", data.to_str().unwrap(), "--predict", "1024"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("p^(5/4) * log2(p)^(1)") && out.contains("95% band"),
        "{out}"
    );
    // Bad input: a clear error with the line.
    let bad = dir.join("bad.txt");
    std::fs::write(&bad, "PARAMETER p\nPOINTS (4) (8)\nDATA 1\nDATA x\n").unwrap();
    let e = whatif(&["model", bad.to_str().unwrap()]);
    assert!(
        stderr(&e).contains("line 4: value `x` is not a number"),
        "{}",
        stderr(&e)
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Side by side with Extra-P: the same term and coefficients on Extra-P's example and on
/// three sweeps (a binomial broadcast: log2 P; ATM2D on the Paragon, three lambdas; PGE2's
/// makespan, a strong-scaling U that PMNF fits poorly, chosen alike all the same).
#[test]
fn whatif_chooses_the_models_extrap_chooses() {
    let Some(bin) = extrap() else {
        eprintln!(
            "skipped: Extra-P not found (.ci/run installs it: python3 -m venv ~/.cache/whatif/extrap-venv && pip install extrap)"
        );
        return;
    };
    let dir = tmpdir("model-vs-extrap");
    let sweep = |f: &Path, name: &str| -> PathBuf {
        let out = dir.join(name);
        let o = whatif(&[
            "sweep",
            f.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "-q",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        out.join("results.csv")
    };
    let study = |name: &str, text: &str| -> PathBuf {
        let f = dir.join(format!("{name}.toml"));
        std::fs::write(&f, text).unwrap();
        sweep(&f, name)
    };
    let bcast = study(
        "bcast",
        "name = \"bcast\"\n[workload]\nprogram = \"broadcast-tree\"\npes = 4\n[net]\nmodel = \"alphabeta\"\nlat = \"5us\"\nbw = \"1GB/s\"\n[[sweep]]\nkey = \"workload.pes\"\nvalues = [4, 8, 16, 32, 64, 128, 256]\n",
    );
    let pge = study(
        "pge",
        "name = \"pge\"\n[workload]\nprogram = \"pge\"\npes = 4\nparams = { n = 4096, arrays = 256, k = 8, ways = 2, row_cost = \"20ns\" }\n[net]\nmodel = \"paragon\"\n[[sweep]]\nkey = \"workload.pes\"\nvalues = [4, 8, 16, 32, 64, 128]\n",
    );
    let atm = sweep(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/studies/atm2d-paragon.toml"),
        "atm",
    );
    let mut cases: Vec<(String, PathBuf, Vec<&str>)> = vec![
        ("bcast".into(), bcast, vec!["--x", "workload.pes"]),
        ("atm2d".into(), atm, vec!["--x", "workload.pes"]),
        (
            "pge".into(),
            pge,
            vec!["--x", "workload.pes", "--metric", "makespan_s"],
        ),
    ];
    if let Some(d) = crate::shared_data("extrap/input.txt") {
        cases.push(("example".into(), d, vec![]));
    }
    let mut compared = 0;
    for (name, input, extra) in cases {
        let txt = dir.join(format!("{name}.txt"));
        let ours = whatif_models(&input, &extra, &txt);
        let theirs = extrap_models(&bin, &txt);
        assert_eq!(ours.len(), theirs.len(), "{name}: {theirs:?}");
        for (o, t) in ours.iter().zip(&theirs) {
            let (a0, a1, at) = parse_model(o["model"].as_str().unwrap());
            let (b0, b1, bt) = parse_model(t);
            let scale = o["points"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["mean"].as_f64().unwrap().abs())
                .fold(0.0, f64::max);
            eprintln!("{name}: whatif {} | Extra-P {t}", o["model"]);
            assert_eq!(at, bt, "{name}: terms differ");
            assert!(close(a0, b0, scale), "{name}: constant {a0} vs {b0}");
            assert!(close(a1, b1, scale), "{name}: coefficient {a1} vs {b1}");
            compared += 1;
        }
    }
    assert!(compared >= 5, "{compared} models compared");
    std::fs::remove_dir_all(&dir).ok();
}

/// `whatif calibrate` recovers a known per-cell cost exactly: ATM2D on 2 x 2 takes
/// steps x (2 tau(m) + lambda^2 c) on the Paragon (tested in closed_forms), so a "measured"
/// time made with c = 2.5 us must calibrate back to 2.5 us, from one measurement (bisection)
/// and from two (golden section); the calibrated study loads and predicts the measurement.
#[test]
fn calibrate_recovers_a_known_cell_cost() {
    let dir = tmpdir("calibrate");
    let study = dir.join("atm.toml");
    std::fs::write(
        &study,
        "name = \"atm\"\n[workload]\nprogram = \"atm2d\"\npes = 4\nparams = { lambda = 128, steps = 3, cell_cost = \"1us\" }\n[net]\nmodel = \"paragon\"\n[[sweep]]\nkey = \"params.lambda\"\nvalues = [64, 128, 256]\n",
    )
    .unwrap();
    let bw = sim_core::Bandwidth::parse("30MB/s").unwrap();
    let t = |lambda: u64| {
        let tau = 120_000_000 + bw.transfer_time(16 * lambda).as_ps();
        3 * (2 * tau + lambda * lambda * 2_500_000)
    };
    let secs = |ps: u64| format!("{}s", sim_core::SimDuration::from_ps(ps).secs_exact());
    let one = format!("params.lambda=128:{}", secs(t(128)));
    let two = format!("params.lambda=64:{}", secs(t(64)));
    for (name, measured) in [("one", vec![one.clone()]), ("two", vec![one, two])] {
        let out = dir.join(format!("{name}.toml"));
        let mut a = vec![
            "calibrate",
            study.to_str().unwrap(),
            "--param",
            "params.cell_cost",
            "--out",
            out.to_str().unwrap(),
            "-q",
        ];
        for m in &measured {
            a.push("--measured");
            a.push(m);
        }
        let o = whatif(&a);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        let text = std::fs::read_to_string(&out).unwrap();
        let v: toml::Table = toml::from_str(&text).unwrap();
        let c = v["workload"]["params"]["cell_cost"]
            .as_str()
            .unwrap()
            .to_string();
        let ps: u64 = c.trim_end_matches("ps").parse().unwrap();
        assert!(ps.abs_diff(2_500_000) <= 1, "{name}: calibrated {c}");
        // The calibrated study keeps its axes and runs.
        let res = dir.join(format!("{name}-out"));
        let o = whatif(&[
            "sweep",
            out.to_str().unwrap(),
            "--out",
            res.to_str().unwrap(),
            "-q",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let csv = std::fs::read_to_string(res.join("results.csv")).unwrap();
        assert_eq!(csv.lines().count(), 4);
    }
    // A measurement below what even a zero cost predicts is a clear error.
    let e = whatif(&[
        "calibrate",
        study.to_str().unwrap(),
        "--param",
        "params.cell_cost",
        "--measured",
        "params.lambda=128:1us",
        "--out",
        dir.join("x.toml").to_str().unwrap(),
    ]);
    assert!(
        stderr(&e).contains("predicts more than measured"),
        "{}",
        stderr(&e)
    );
    let e = whatif(&[
        "calibrate",
        study.to_str().unwrap(),
        "--param",
        "params.nope",
        "--measured",
        "params.lambda=128:1s",
        "--out",
        dir.join("x.toml").to_str().unwrap(),
    ]);
    assert!(
        stderr(&e).contains("no `workload.params.nope` to calibrate"),
        "{}",
        stderr(&e)
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Block-cost models feed emulation (BigSim's path with MK's models): per-entry mean block
/// durations of stencil3d at five small block sizes (4x4x4 objects on 8 PEs, so every block
/// has the same neighbours) are fitted against the block's points (exactly linear here), and
/// emulating the 8x8x8 block with `--costs` at 512 points predicts the direct emulation's
/// makespan to rounding.
#[test]
fn fitted_block_costs_predict_a_larger_block() {
    let dir = tmpdir("costs");
    let emulate = |grid: &str, block: &str, out: &Path, extra: &[&str]| {
        let mut a = vec![
            "emulate",
            "stencil3d",
            "--pes",
            "8",
            "--set",
            &format!("grid={grid}"),
            "--set",
            &format!("block={block}"),
            "--set",
            "iters=3",
        ]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
        a.extend(extra.iter().map(|s| s.to_string()));
        a.extend(["--out".into(), out.display().to_string(), "-q".into()]);
        let o = whatif(&a.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(o.status.success(), "{}", stderr(&o));
    };
    let mut args: Vec<String> = vec!["model".into()];
    for (grid, block, pts) in [
        ("8x8x8", "2x2x2", 8),
        ("16x8x8", "4x2x2", 16),
        ("16x16x8", "4x4x2", 32),
        ("16x16x16", "4x4x4", 64),
        ("32x16x16", "8x4x4", 128),
    ] {
        let t = dir.join(format!("b{pts}.trace"));
        emulate(grid, block, &t, &[]);
        args.push("--trace".into());
        args.push(format!("{pts}={}", t.display()));
    }
    let costs = dir.join("costs.json");
    args.extend([
        "--param".into(),
        "points".into(),
        "--costs-out".into(),
        costs.display().to_string(),
    ]);
    let o = whatif(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&costs).unwrap()).unwrap();
    let rg = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["entry"] == "recvGhost")
        .unwrap();
    assert_eq!(rg["term"]["num"], 1, "linear in the points: {rg}");
    assert_eq!(rg["term"]["log"], 0);
    let (direct, pred) = (dir.join("direct.trace"), dir.join("pred.trace"));
    emulate("32x32x32", "8x8x8", &direct, &[]);
    emulate(
        "32x32x32",
        "8x8x8",
        &pred,
        &["--costs", costs.to_str().unwrap(), "--costs-at", "512"],
    );
    let (a, b) = (
        crate::cli::makespan_ps(&["replay", direct.to_str().unwrap()]),
        crate::cli::makespan_ps(&["replay", pred.to_str().unwrap()]),
    );
    assert!(
        a.abs_diff(b) as f64 <= 1e-6 * a as f64,
        "direct {a} ps vs predicted {b} ps"
    );
    // A cost file that models none of the program's entries is an error.
    let bad = dir.join("bad.json");
    std::fs::write(
        &bad,
        r#"{"param":"x","entries":[{"entry":"nope","constant_s":1e-6,"term":null}]}"#,
    )
    .unwrap();
    let o = whatif(&[
        "emulate",
        "stencil3d",
        "--costs",
        bad.to_str().unwrap(),
        "--costs-at",
        "1",
        "--out",
        dir.join("x.trace").to_str().unwrap(),
    ]);
    assert!(
        stderr(&o).contains("models none of the trace's entry methods"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Several parameters at once (item 4): ATM2D on 2 x 2 over alphabeta takes steps x (2 (lat +
/// 16 lambda / bw) + lambda^2 c) (closed_forms); two "measurements" made with c = 2 us and lat
/// = 50 us at lambda = 64 and 16 (different mixes of compute and latency) calibrate both back
/// exactly. One measurement for two parameters is refused.
#[test]
fn calibrate_sets_two_parameters_by_least_squares() {
    let dir = tmpdir("calibrate-two");
    let study = dir.join("atm.toml");
    std::fs::write(
        &study,
        "name = \"atm-ab\"\n[workload]\nprogram = \"atm2d\"\npes = 4\nparams = { lambda = 64, steps = 10, cell_cost = \"1us\" }\n[net]\nmodel = \"alphabeta\"\nlat = \"20us\"\nbw = \"1GB/s\"\n",
    )
    .unwrap();
    let bw = sim_core::Bandwidth::parse("1GB/s").unwrap();
    let t = |lambda: u64| {
        let tau = 50_000_000 + bw.transfer_time(16 * lambda).as_ps();
        10 * (2 * tau + lambda * lambda * 2_000_000)
    };
    let secs = |ps: u64| format!("{}s", sim_core::SimDuration::from_ps(ps).secs_exact());
    let m1 = format!("params.lambda=64:{}", secs(t(64)));
    let m2 = format!("params.lambda=16:{}", secs(t(16)));
    let out = dir.join("c.toml");
    let args = |ms: &[&str]| {
        let mut a = vec![
            "calibrate".to_string(),
            study.to_str().unwrap().to_string(),
            "--param".into(),
            "params.cell_cost".into(),
            "--param".into(),
            "net.lat".into(),
            "--out".into(),
            out.to_str().unwrap().to_string(),
            "-q".into(),
        ];
        for m in ms {
            a.push("--measured".into());
            a.push(m.to_string());
        }
        a
    };
    let a = args(&[&m1, &m2]);
    let o = whatif(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", stderr(&o));
    let v: toml::Table = toml::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let ps = |s: &str| -> u64 { s.trim_end_matches("ps").parse().unwrap() };
    let c = ps(v["workload"]["params"]["cell_cost"].as_str().unwrap());
    let lat = ps(v["net"]["lat"].as_str().unwrap());
    assert!(c.abs_diff(2_000_000) <= 1, "cell_cost {c} ps");
    assert!(lat.abs_diff(50_000_000) <= 1, "lat {lat} ps");
    std::fs::remove_file(&out).ok();
    let a = args(&[&m1]);
    let o = whatif(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("need at least 2 measurements"),
        "{}",
        stderr(&o)
    );
}
