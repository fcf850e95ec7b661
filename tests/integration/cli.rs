//! The command-line tool, end to end.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn whatif(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_whatif"))
        .args(args)
        .output()
        .expect("run whatif")
}

/// A test's scratch folder, removed when the test passes (kept, for a look, when it fails).
pub struct TmpDir(PathBuf);

impl std::ops::Deref for TmpDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TmpDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for TmpDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept the failed test's folder {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// A fresh scratch folder `whatif-it-NAME-PID` under the system's temporary folder.
pub fn tmpdir(name: &str) -> TmpDir {
    let d = std::env::temp_dir().join(format!("whatif-it-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    TmpDir(d)
}

impl TmpDir {
    /// The folder, kept after the test: for helpers that several tests share by name.
    pub fn keep(self) -> PathBuf {
        let d = self.0.clone();
        std::mem::forget(self);
        d
    }
}

/// `whatif gen ARGS --out PATH -q`, which must succeed.
pub fn gen_trace(path: &Path, args: &[&str]) {
    let mut a = vec!["gen"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["--out", path.to_str().unwrap(), "-q"]);
    let o = whatif(&a);
    assert!(o.status.success(), "whatif {}: {}", a.join(" "), stderr(&o));
}

/// `makespan_ps` of `whatif ARGS --json -q`, which must succeed.
pub fn makespan_ps(args: &[&str]) -> u64 {
    let mut a = args.to_vec();
    a.extend_from_slice(&["--json", "-q"]);
    let o = whatif(&a);
    assert!(o.status.success(), "whatif {}: {}", a.join(" "), stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["makespan_ps"].as_u64().expect("makespan_ps")
}

/// Runs the built-in study `scenarios/studies/NAME` into a new folder and returns the folder.
pub fn sweep_builtin(name: &str) -> PathBuf {
    let study = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios/studies")
        .join(name);
    let out = tmpdir(&format!("study-{name}")).keep().join("out");
    let o = whatif(&[
        "sweep",
        study.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{name}: {}", stderr(&o));
    out
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn issue_examples_gen_inspect_replay() {
    let dir = tmpdir("examples");
    let h = dir.join("h.trace");
    let r = dir.join("r.jsonl");
    let o = whatif(&[
        "gen",
        "halo3d",
        "--dims",
        "4x4x4",
        "--iters",
        "10",
        "--compute",
        "100us",
        "--bytes",
        "65536",
        "--out",
        h.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = whatif(&[
        "gen",
        "ring",
        "--ranks",
        "100",
        "--iters",
        "10",
        "--compute",
        "100us",
        "--bytes",
        "65536",
        "--out",
        r.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The text form is really JSON lines.
    let text = std::fs::read_to_string(&r).unwrap();
    assert!(
        text.lines()
            .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok())
    );

    let o = whatif(&["inspect", h.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(
        s.contains("objects       64") && s.contains("compute") && s.contains("recv"),
        "{s}"
    );
    let o = whatif(&["inspect", r.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["objects"], 100);
    assert_eq!(v["sends"], 1000);
    assert_eq!(v["iterations"], 10);

    let o = whatif(&[
        "replay",
        r.to_str().unwrap(),
        "--net",
        "alphabeta:lat=1us,bw=10GB/s",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // K(C + lat + S/bw) = 10 * (100us + 1us + 6.5536us)
    assert_eq!(v["makespan_ps"], 10 * 107_553_600u64);
    assert_eq!(v["iterations_s"].as_array().unwrap().len(), 10);
    assert_eq!(v["pes"], 100);
    assert_eq!(v["messages"], 1000);
    assert_eq!(v["blocks"], 2000);
    assert!(
        stderr(&o).contains("events/s"),
        "speed figures go to stderr"
    );
    assert!(
        !stdout(&o).contains("events/s"),
        "stdout holds simulated results only"
    );
}

#[test]
fn net_defaults_to_the_recorded_model_else_ideal() {
    let dir = tmpdir("netdefault");
    let a = dir.join("a.trace");
    let b = dir.join("b.trace");
    assert!(
        whatif(&[
            "gen",
            "pingpong",
            "--iters",
            "3",
            "--compute",
            "1us",
            "--bytes",
            "0",
            "--net",
            "latency:lat=5us",
            "--out",
            a.to_str().unwrap()
        ])
        .status
        .success()
    );
    assert!(
        whatif(&[
            "gen",
            "pingpong",
            "--iters",
            "3",
            "--compute",
            "1us",
            "--bytes",
            "0",
            "--out",
            b.to_str().unwrap()
        ])
        .status
        .success()
    );
    let get = |p: &PathBuf| -> serde_json::Value {
        serde_json::from_slice(&whatif(&["replay", p.to_str().unwrap(), "--json", "-q"]).stdout)
            .unwrap()
    };
    let va = get(&a);
    assert_eq!(va["net"], "latency:lat=5us");
    assert_eq!(va["makespan_ps"], 6 * 6_000_000u64);
    let vb = get(&b);
    assert_eq!(vb["net"], "ideal");
    assert_eq!(vb["makespan_ps"], 6 * 1_000_000u64);
}

#[test]
fn bad_input_gets_clear_errors() {
    let dir = tmpdir("bad");
    let good = dir.join("g.trace");
    assert!(
        whatif(&[
            "gen",
            "ring",
            "--ranks",
            "3",
            "--out",
            good.to_str().unwrap()
        ])
        .status
        .success()
    );
    let bytes = std::fs::read(&good).unwrap();
    let cut = dir.join("cut.trace");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let o = whatif(&["replay", cut.to_str().unwrap()]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("cut.trace") && e.contains("byte offset") && e.contains("expected"),
        "{e}"
    );
    assert!(!e.contains("panicked"), "{e}");

    let o = whatif(&[
        "replay",
        good.to_str().unwrap(),
        "--net",
        "alphabeta:lat=1us",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("needs a bandwidth"), "{}", stderr(&o));
    let o = whatif(&["replay", good.to_str().unwrap(), "--net", "warp:speed=9"]);
    assert!(stderr(&o).contains("known models"), "{}", stderr(&o));
    let o = whatif(&[
        "gen",
        "halo3d",
        "--dims",
        "4x4",
        "--out",
        dir.join("x").to_str().unwrap(),
    ]);
    assert!(
        !o.status.success() && stderr(&o).contains("needs 3"),
        "{}",
        stderr(&o)
    );
    let o = whatif(&["replay", dir.join("missing.trace").to_str().unwrap()]);
    assert!(
        !o.status.success() && stderr(&o).contains("missing.trace"),
        "{}",
        stderr(&o)
    );
    let o = whatif(&["replay", good.to_str().unwrap(), "--max-events", "10"]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("after 10 events") && e.contains("reproduce with: whatif replay"),
        "{e}"
    );
}

#[test]
fn replay_help_lists_every_model_with_units() {
    let o = whatif(&["replay", "--help"]);
    let s = stdout(&o);
    for needle in [
        "ideal",
        "latency:lat=D",
        "alphabeta:lat=D,bw=B",
        "hops:topo=T",
        "torus:AxBxC",
        "loggops:L=D,o=D,g=D,G=D,O=D,S=BYTES",
        "contention:topo=T",
        "switching=vct|saf",
        "nic_bw=B|off",
        "packet=4KiB",
        "o_send",
        "10GB/s",
        "ps|ns|us|ms|s",
        "--cpu-scale",
        "--pes",
        "--timeline",
    ] {
        assert!(
            s.contains(needle),
            "`{needle}` missing from replay --help:\n{s}"
        );
    }
}

#[test]
fn builtin_run_and_csv_outputs() {
    let dir = tmpdir("run");
    let pe = dir.join("pe.csv");
    let o = whatif(&["run", "--json", "-q", "--per-pe", pe.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // 20 * (100us + 1us + 65536 B / 10 GB/s)
    assert_eq!(v["makespan_ps"], 20 * 107_553_600u64);
    let csv = std::fs::read_to_string(&pe).unwrap();
    assert_eq!(csv.lines().count(), 513);
    assert!(csv.starts_with("pe,blocks,busy_s,idle_s,utilization"));
    let o = whatif(&["run"]);
    assert!(
        stdout(&o).contains("makespan     2.151072 ms"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn network_statistics_in_json_and_csv() {
    let dir = tmpdir("netstats");
    let t = dir.join("h.trace");
    let o = whatif(&[
        "gen",
        "halo3d",
        "--dims",
        "4x4x4",
        "--periodic",
        "--iters",
        "2",
        "--bytes",
        "8KiB",
        "--out",
        t.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (links, entries) = (dir.join("links.csv"), dir.join("entries.csv"));
    let net = "contention:topo=torus:4x4x4,lat=1us,bw=10GB/s,packet=4KiB,nic_bw=10GB/s";
    let o = whatif(&[
        "replay",
        t.to_str().unwrap(),
        "--net",
        net,
        "--json",
        "-q",
        "--links",
        links.to_str().unwrap(),
        "--entries",
        entries.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // 64 ranks x 6 neighbours x 2 iterations, 1 hop each, 2 packets each.
    assert_eq!(v["network"]["messages"], 768);
    assert_eq!(v["network"]["hop_bytes"], 768 * 8192);
    assert_eq!(v["network"]["packets"], 1536);
    assert_eq!(v["entries"][0]["entry"], "recv");
    assert_eq!(v["entries"][0]["messages"], 768);
    assert!(
        v["entries"][0]["queueing_ps"].as_u64().unwrap() > 0,
        "the NIC queues"
    );
    let csv = std::fs::read_to_string(&links).unwrap();
    // 64 nodes x 6 links + 64 injection + 64 ejection NICs.
    assert_eq!(csv.lines().count(), 1 + 64 * 8);
    assert!(csv.starts_with(
        "kind,node,port,to_node,bytes,packets,busy_s,utilization,max_queue,max_wait_s"
    ));
    let csv = std::fs::read_to_string(&entries).unwrap();
    assert!(
        csv.starts_with("entry,messages,bytes,wire_s,queueing_s,overhead_s,mean_wire_s"),
        "{csv}"
    );
    // The same model from a TOML file.
    let file = dir.join("net.toml");
    std::fs::write(
        &file,
        "[net]\nmodel = \"contention\"\ntopo = \"torus:4x4x4\"\nlat = \"1us\"\nbw = \"10GB/s\"\nnic_bw = \"10GB/s\"\n",
    )
    .unwrap();
    let o2 = whatif(&[
        "replay",
        t.to_str().unwrap(),
        "--net-file",
        file.to_str().unwrap(),
        "--json",
        "-q",
    ]);
    assert!(o2.status.success(), "{}", stderr(&o2));
    assert_eq!(o2.stdout, o.stdout);
    // The example file in docs/ parses and runs.
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/examples/net-contention.toml"
    );
    let o3 = whatif(&[
        "replay",
        t.to_str().unwrap(),
        "--net-file",
        example,
        "--pes",
        "64",
        "-q",
    ]);
    assert!(o3.status.success(), "{}", stderr(&o3));
    assert!(
        stdout(&o3).contains("switching=vct,nic_bw=10GB/s"),
        "{}",
        stdout(&o3)
    );
    // Human summary names the busiest resource.
    let o = whatif(&["replay", t.to_str().unwrap(), "--net", net, "-q"]);
    assert!(stdout(&o).contains("busiest      "), "{}", stdout(&o));
}

#[test]
fn emulate_help_lists_every_program_with_its_parameters() {
    let o = whatif(&["emulate", "--help"]);
    assert!(o.status.success());
    let h = stdout(&o);
    for p in scenarios::programs::PROGRAMS {
        assert!(
            h.contains(&format!("  {}: ", p.name)),
            "{} missing from help",
            p.name
        );
        for s in p.params {
            assert!(
                h.contains(&format!("{}={}", s.key, s.default)),
                "{}.{}",
                p.name,
                s.key
            );
        }
    }
}

#[test]
fn emulate_then_replay_reproduces_the_emulated_makespan() {
    let d = tmpdir("emulate");
    let t = d.join("s.trace");
    let o = whatif(&[
        "emulate",
        "stencil3d",
        "--pes",
        "6",
        "--set",
        "grid=16x16x12",
        "--set",
        "block=4x8x4",
        "--set",
        "iters=4",
        "--net",
        "latency:lat=2us",
        "--cpu-scale",
        "1/2",
        "--out",
        t.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let makespan = err
        .lines()
        .find_map(|l| l.strip_prefix("emulated makespan "))
        .and_then(|l| l.split(';').next())
        .expect("makespan line")
        .to_string();
    // The trace records the network and CPU factor, so a plain replay reproduces the run.
    let o = whatif(&["replay", t.to_str().unwrap(), "--json", "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let ps = v["makespan_ps"].as_u64().unwrap();
    let shown = sim_core::units::parse_duration(&makespan).unwrap();
    assert_eq!(ps, shown.as_ps(), "{makespan}");
    assert_eq!(v["cpu_scale"], "1/2");
}

#[test]
fn emulate_and_run_native_errors_are_clear() {
    let o = whatif(&["emulate", "stencil", "--out", "/dev/null"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("unknown program `stencil`; known programs: stencil3d"),
        "{}",
        stderr(&o)
    );
    let o = whatif(&["emulate", "ring", "--set", "laps", "--out", "/dev/null"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("`laps` is not key=value"),
        "{}",
        stderr(&o)
    );
    let o = whatif(&["run-native", "ring", "--pes", "0"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("PEs (OS threads) from 1 to 1024"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn run_native_reports_iterations_as_json() {
    let o = whatif(&[
        "run-native",
        "kneighbor",
        "--threads",
        "2",
        "--set",
        "iters=5",
        "--set",
        "work=20us",
        "--repeat",
        "2",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), 2);
    for r in v["runs"].as_array().unwrap() {
        let its = r["iterations_s"].as_array().unwrap();
        assert_eq!(its.len(), 5);
        // Each iteration spins 20 us of work on each object.
        assert!(its.iter().all(|x| x.as_f64().unwrap() >= 20e-6), "{its:?}");
    }
    assert!(v["median_mean_iteration_s"].as_f64().unwrap() >= 20e-6);
}

/// The overview of a report spans the whole run: its title ends at `makespan` and it draws
/// cells in the last tenth of the plot.
pub fn check_whole_run(html: &str, makespan: &str) {
    let i = html
        .find("class=\"chart overview\"")
        .expect("the report has a timeline overview");
    let svg = &html[i..i + html[i..].find("</svg>").unwrap()];
    assert!(
        svg.contains(&format!("0 to {makespan}")),
        "the overview does not span 0 to {makespan}"
    );
    // Plot from x = 96 to 96 + 764 (see svg::Overview).
    let right = svg
        .split("class=\"cell\" x=\"")
        .skip(1)
        .map(|c| {
            let x: f64 = c.split('"').next().unwrap().parse().unwrap();
            let w: f64 = c
                .split("width=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            x + w
        })
        .fold(0.0f64, f64::max);
    assert!(
        right > 96.0 + 0.9 * 764.0,
        "the overview's cells end at x = {right}: not the whole run"
    );
}

/// Renders `report` in headless Chromium and checks: the page renders its charts;
/// no element of any chart lies outside its chart and the page does not overflow the window
/// sideways (a script measures both in a copy of the page); the screenshot is not blank.
/// Without Chromium it fails when `WHATIF_REQUIRE_CHROMIUM` is set (as .ci/run does) and is
/// skipped with a message otherwise.
pub fn render_and_check(report: &std::path::Path, dir: &std::path::Path) {
    let browser = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        });
    let Some(b) = browser else {
        // CI (.ci/run installs the Debian `chromium` package and sets the variable) must
        // render the report; elsewhere the check is skipped with a message.
        assert!(
            std::env::var_os("WHATIF_REQUIRE_CHROMIUM").is_none_or(|v| v.is_empty() || v == "0"),
            "WHATIF_REQUIRE_CHROMIUM is set but no chromium is on PATH (apt-get install chromium)"
        );
        eprintln!(
            "skipped: no chromium on PATH (apt-get install chromium; WHATIF_REQUIRE_CHROMIUM=1 makes this a failure)"
        );
        return;
    };
    let html = std::fs::read_to_string(report).unwrap();
    let probe = r#"<script>
const bad = [];
for (const svg of document.querySelectorAll('svg.chart')) {
  const s = svg.getBoundingClientRect();
  for (const el of svg.querySelectorAll('text,rect,polyline,polygon,line,circle')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    if (r.left < s.left - 1 || r.top < s.top - 1 || r.right > s.right + 1 || r.bottom > s.bottom + 1) {
      bad.push(svg.querySelector('title').textContent + ': <' + el.tagName + '> ' + (el.textContent || '').slice(0, 40));
    }
  }
}
const p = document.createElement('pre');
p.textContent = 'CLIPPED ' + bad.length + ' OVERFLOW ' + (document.documentElement.scrollWidth > window.innerWidth ? 1 : 0) + '\n' + bad.slice(0, 10).join('\n') + '\nEND';
document.body.appendChild(p);
</script></body>"#;
    let probed = dir.join("probe.html");
    std::fs::write(&probed, html.replace("</body>", probe)).unwrap();
    let url = |p: &std::path::Path| format!("file://{}", p.display());
    let dom = Command::new(b)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--window-size=1200,2000",
            "--dump-dom",
            &url(&probed),
        ])
        .output()
        .expect("run chromium");
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(
        dom.contains("<h1>whatif report</h1>"),
        "chromium did not render the page"
    );
    let charts = dom.matches("<svg").count();
    assert!(charts >= 6, "chromium sees {charts} charts");
    // The last occurrence is the script's output (the page also holds its source).
    let verdict = dom
        .rsplit("CLIPPED ")
        .next()
        .and_then(|v| v.split("END").next())
        .filter(|v| v.as_bytes().first().is_some_and(u8::is_ascii_digit))
        .expect("the probe script ran");
    assert!(
        verdict.starts_with("0 OVERFLOW 0"),
        "clipped or overflowing content: {verdict}"
    );
    let png = dir.join("report.png");
    let shot = Command::new(b)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--window-size=1200,3000",
            &format!("--screenshot={}", png.display()),
            &url(report),
        ])
        .output()
        .expect("run chromium");
    assert!(shot.status.success());
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(&png).expect("a screenshot"),
    ));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("PNG pixels");
    let px = info.color_type.samples();
    let pixels = &buf[..info.buffer_size()];
    let inked = pixels
        .chunks_exact(px)
        .filter(|p| p[..3].iter().any(|&c| c < 200))
        .count();
    let total = pixels.len() / px;
    assert!(
        inked * 20 > total,
        "a nearly blank screenshot: {inked} of {total} pixels drawn"
    );
}

/// `whatif demo`: a study, a detailed replay and a report with every kind of chart.
#[test]
fn demo_writes_a_report_with_charts_and_chromium_renders_it() {
    let dir = tmpdir("demo");
    let out = dir.join("demo");
    let o = whatif(&["demo", "--out", out.to_str().unwrap(), "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("report.html"));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    let charts = html.matches("class=\"chart\"").count();
    assert!(charts >= 6, "{charts} charts");
    for needle in [
        "class=\"series\"", // sweep curves
        "class=\"knees\"",  // knee table
        "class=\"block\"",  // timeline
        "class=\"layer\"",  // time profile
        "class=\"bar\"",    // usage per PE and grain size
        "class=\"node\"",   // machine plot
        "4x4x3 torus",
    ] {
        assert!(html.contains(needle), "report lacks {needle}");
    }
    let sweep = &html[..html.find("<h2>Replay of").expect("a replay section")];
    assert_eq!(
        sweep.matches("class=\"series\"").count(),
        4,
        "one curve per VF"
    );
    let csv = std::fs::read_to_string(out.join("sweep/results.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 56);
    assert!(out.join("replay/trace.json").exists());
    assert!(out.join("replay/projections/predicted.sts").exists());
    // The report of a folder is reproducible.
    let again = whatif(&[
        "report",
        out.to_str().unwrap(),
        "--out",
        dir.join("r2.html").to_str().unwrap(),
    ]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(std::fs::read_to_string(dir.join("r2.html")).unwrap(), html);
    let e = whatif(&["report", dir.to_str().unwrap()]);
    assert!(
        stderr(&e).contains("holds neither sweep results"),
        "{}",
        stderr(&e)
    );

    // The report shows the whole run: the overview spans 0 to the makespan and has cells in
    // its last tenth; the zoomed windows are marked on it.
    check_whole_run(&html, "1.85 ms");
    assert!(html.contains("class=\"mark\""), "zoom windows marked");
    assert!(html.contains("class=\"chart window\""));
    assert!(html.contains("Rover's metrics over time"));
    assert!(html.contains("Bytes between PEs"));
    assert!(html.contains("Message sizes between PEs"));
    assert!(html.contains("Snapshots (Rover's machine plot over time)"));
    assert!(
        html.contains("idle</text>"),
        "the machine plot has a colour scale"
    );
    // Headless Chromium renders it, nothing is clipped, the screenshot is not blank.
    render_and_check(&out.join("report.html"), &dir);
    std::fs::remove_dir_all(&dir).ok();
}

/// `--machine paragon` (replay and emulate) is `--net paragon`, the Paragon of MK's ATM2D
/// study: a message of m bytes takes 120 us + m / 30 MB/s. Parameters on a machine and
/// unknown machines are clear errors.
#[test]
fn the_paragon_machine_in_emulate_and_replay() {
    let dir = tmpdir("paragon");
    let t = dir.join("a.trace");
    let o = whatif(&[
        "emulate",
        "atm2d",
        "--pes",
        "4",
        "--machine",
        "paragon",
        "--set",
        "steps=3",
        "--out",
        t.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // 3 steps of 2 (120 us + 2048 B / 30 MB/s) + 128^2 x 1 us.
    let bw = sim_core::Bandwidth::parse("30MB/s").unwrap();
    let tau = 120_000_000 + bw.transfer_time(2048).as_ps();
    let want = 3 * (2 * tau + 16_384_000_000);
    for net in [
        &["--machine", "paragon"][..],
        &["--net", "paragon"][..],
        &[][..],
    ] {
        let mut a = vec!["replay", t.to_str().unwrap()];
        a.extend_from_slice(net);
        let got = makespan_ps(&a);
        assert_eq!(got, want, "{net:?}");
    }
    let e = whatif(&["replay", t.to_str().unwrap(), "--net", "paragon:lat=1us"]);
    assert!(
        stderr(&e).contains("takes no parameters") && stderr(&e).contains("lat=120us"),
        "{}",
        stderr(&e)
    );
    let e = whatif(&["replay", t.to_str().unwrap(), "--machine", "cray"]);
    assert!(
        stderr(&e).contains("unknown machine `cray`; known machines: paragon"),
        "{}",
        stderr(&e)
    );
    let e = whatif(&[
        "replay",
        t.to_str().unwrap(),
        "--machine",
        "paragon",
        "--net",
        "ideal",
    ]);
    assert!(!e.status.success());
    std::fs::remove_dir_all(&dir).ok();
}

/// A foreign trace given where a whatif trace is expected: `inspect` takes the `--format` its
/// error names (and reads the file as `whatif import` does: same counts as the imported
/// trace); `export`, which has no input `--format`, says to convert it with `whatif import`.
#[test]
fn inspect_reads_a_foreign_trace_with_the_format_its_error_names() {
    let dir = tmpdir("inspect-format");
    let (h, goal, imported) = (dir.join("h.trace"), dir.join("h.goal"), dir.join("i.trace"));
    gen_trace(&h, &["halo2d", "--dims", "3x3", "--iters", "2"]);
    let o = whatif(&[
        "export",
        "goal",
        h.to_str().unwrap(),
        "--out",
        goal.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Without --format: the error names the option.
    let o = whatif(&["inspect", goal.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("add --format goal"), "{}", stderr(&o));
    // With it: the summary of the imported trace.
    let o = whatif(&[
        "inspect",
        goal.to_str().unwrap(),
        "--format",
        "goal",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let direct: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let o = whatif(&[
        "import",
        "goal",
        goal.to_str().unwrap(),
        "--out",
        imported.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = whatif(&["inspect", imported.to_str().unwrap(), "--json"]);
    let via_import: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for key in ["objects", "blocks", "sends", "entries"] {
        assert_eq!(direct[key], via_import[key], "{key}");
    }
    assert!(direct["blocks"].as_u64().unwrap() > 0, "{direct}");
    // export: no --format of its own input; it says how to convert.
    let o = whatif(&[
        "export",
        "goal",
        goal.to_str().unwrap(),
        "--out",
        dir.join("again.goal").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("whatif import goal"), "{}", stderr(&o));
}

/// `--priority` on a trace whose blocks have no priority says it changes nothing (Projections
/// logs record none); `--critical-path-priority` computes its own and says nothing. `bigsim`
/// names the bgTrace format.
#[test]
fn priority_without_priorities_warns_and_bigsim_names_bgtrace() {
    let dir = tmpdir("prio-warn");
    let t = dir.join("r.trace");
    let t = t.to_str().unwrap();
    let o = whatif(&[
        "gen", "ring", "--ranks", "4", "--iters", "2", "--out", t, "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = whatif(&["replay", t, "--priority"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("warning: --priority has no effect"),
        "{}",
        stderr(&o)
    );
    let o = whatif(&["replay", t, "--critical-path-priority"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        !stderr(&o).contains("--priority has no effect"),
        "{}",
        stderr(&o)
    );
    let o = whatif(&["inspect", "no-such-bgTrace", "--format", "bigsim"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(!stderr(&o).contains("unknown format"), "{}", stderr(&o));
    assert!(stderr(&o).contains("no-such-bgTrace"), "{}", stderr(&o));
}
