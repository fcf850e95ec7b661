//! Memory estimates against measured peaks: each command runs in a child process with
//! `WHATIF_MEMORY_LOG`, which logs the estimate the command made (and enforced) and its peak
//! resident memory (`VmHWM`) at exit; the estimate must be within 25% of the peak, at three
//! sizes per command.

use crate::cli::{gen_trace, stderr, tmpdir};
use std::path::Path;
use std::process::Command;

/// Runs `whatif ARGS` and returns `(estimate, peak)` in bytes from its memory log.
fn estimate_and_peak(dir: &Path, args: &[&str]) -> (u64, u64) {
    let log = dir.join("memory.log");
    let _ = std::fs::remove_file(&log);
    let o = Command::new(env!("CARGO_BIN_EXE_whatif"))
        .args(args)
        .env("WHATIF_MEMORY_LOG", &log)
        .env_remove("WHATIF_MEMORY_TRACE")
        .output()
        .expect("run whatif");
    assert!(
        o.status.success(),
        "whatif {}: {}",
        args.join(" "),
        stderr(&o)
    );
    let text = std::fs::read_to_string(&log).expect("the memory log");
    let v: serde_json::Value =
        serde_json::from_str(text.lines().last().expect("a line")).expect("JSON");
    (
        v["estimate_bytes"].as_u64().expect("estimate_bytes"),
        v["peak_rss_bytes"].as_u64().expect("peak_rss_bytes"),
    )
}

/// Checks every case, printing the table first so that one failure shows all figures.
fn check(cases: &[(String, u64, u64)]) {
    for (what, est, peak) in cases {
        eprintln!(
            "{what:50} estimate {:8.1} MB  peak {:8.1} MB  ratio {:.2}",
            *est as f64 / 1e6,
            *peak as f64 / 1e6,
            *est as f64 / *peak as f64
        );
    }
    for (what, est, peak) in cases {
        let r = *est as f64 / *peak as f64;
        assert!(
            (0.75..=1.25).contains(&r),
            "{what}: estimate {est} B is {r:.2} times the measured peak {peak} B"
        );
    }
}

#[test]
fn memory_estimates_are_within_a_quarter_of_the_measured_peak() {
    if !Path::new("/proc/self/status").exists() {
        eprintln!("skipped: no /proc/self/status to measure peaks with");
        return;
    }
    let dir = tmpdir("memory");
    let p = |x: &Path| x.to_str().unwrap().to_string();
    let net = "alphabeta:lat=1us,bw=10GB/s";
    let mut cases: Vec<(String, u64, u64)> = Vec::new();
    let mut run = |what: String, args: Vec<String>| {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let (e, pk) = estimate_and_peak(&dir, &a);
        cases.push((what, e, pk));
    };
    for dims in ["10x10x20", "20x20x25", "30x30x40"] {
        let t = dir.join(format!("h{dims}.trace"));
        gen_trace(
            &t,
            &[
                "halo3d",
                "--dims",
                dims,
                "--periodic",
                "--iters",
                "10",
                "--compute",
                "100us",
                "--bytes",
                "65536",
            ],
        );
        let out = dir.join(format!("out{dims}"));
        let sv = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        run(
            format!("gen halo {dims}"),
            sv(&[
                "gen",
                "halo3d",
                "--dims",
                dims,
                "--iters",
                "10",
                "--out",
                &p(&dir.join(format!("g{dims}.trace"))),
                "-q",
            ]),
        );
        run(
            format!("replay halo {dims}"),
            sv(&["replay", &p(&t), "--net", net, "-q"]),
        );
        // Packets on the links of a torus of the halo's shape (event-driven: messages in
        // flight, the model's links).
        run(
            format!("replay halo {dims}, contention"),
            sv(&[
                "replay",
                &p(&t),
                "--net",
                &format!("contention:topo=torus:{dims},lat=1us,bw=10GB/s"),
                "-q",
            ]),
        );
        // Flows sharing the links by max-min (event-driven: flows in flight, link slots).
        run(
            format!("replay halo {dims}, flow"),
            sv(&[
                "replay",
                &p(&t),
                "--net",
                &format!("flow:topo=torus:{dims},lat=1us,bw=10GB/s"),
                "-q",
            ]),
        );
        run(
            format!("analyze halo {dims}"),
            sv(&["analyze", &p(&t), "--net", net, "-q"]),
        );
        run(
            format!("replay --out --report halo {dims}"),
            sv(&[
                "replay",
                &p(&t),
                "--net",
                net,
                "--out",
                &p(&out),
                "--report",
                "-q",
            ]),
        );
        let study = dir.join(format!("s{dims}.toml"));
        std::fs::write(
            &study,
            format!(
                "name = \"mem\"\n[workload]\ntrace = \"{}\"\n[net]\nmodel = \"alphabeta\"\nlat = \"1us\"\nbw = \"10GB/s\"\n[[sweep]]\nkey = \"net.lat\"\nvalues = [\"1us\", \"2us\"]\n",
                p(&t)
            ),
        )
        .unwrap();
        run(
            format!("sweep halo {dims}, 2 points"),
            sv(&[
                "sweep",
                &p(&study),
                "--out",
                &p(&dir.join(format!("sw{dims}"))),
                "--jobs",
                "1",
                "-q",
            ]),
        );
    }
    for (grid, pes) in [
        ("128x128x128", "512"),
        ("160x160x160", "1000"),
        ("192x192x192", "1728"),
    ] {
        let t = dir.join(format!("s{grid}.trace"));
        run(
            format!("emulate stencil3d {grid}"),
            [
                "emulate",
                "stencil3d",
                "--pes",
                pes,
                "--set",
                &format!("grid={grid}"),
                "--set",
                "block=8x8x8",
                "--set",
                "iters=10",
                "--out",
                &p(&t),
                "-q",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        );
    }
    for pes in ["250", "500", "1000"] {
        let t = dir.join(format!("si{pes}.trace"));
        run(
            format!("emulate simple-imbalance {pes} PEs"),
            [
                "emulate",
                "simple-imbalance",
                "--pes",
                pes,
                "--set",
                "objects_per_pe=4",
                "--out",
                &p(&t),
                "-q",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        );
        run(
            format!("lb simple-imbalance {pes} PEs"),
            ["lb", &p(&t), "--net", "latency:lat=20us", "-q"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
        );
    }
    check(&cases);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_command_above_its_memory_limit_is_refused_before_it_starts() {
    let dir = tmpdir("memory-limit");
    let t = dir.join("h.trace");
    gen_trace(
        &t,
        &[
            "halo3d",
            "--dims",
            "20x20x25",
            "--iters",
            "10",
            "--compute",
            "100us",
        ],
    );
    let t = t.to_str().unwrap();
    // The trace compact (one iteration) where the command replays it so, expanded for lb.
    for (cmd, trace_part) in [
        (vec!["analyze", t], "the trace 6.4 MiB"),
        (
            vec!["replay", t, "--out", "/nonexistent-whatif-out"],
            "the trace 6.4 MiB",
        ),
        (vec!["lb", t], "the trace 55 MiB"),
    ] {
        let mut a = cmd.clone();
        a.extend(["--max-memory", "30MiB"]);
        let o = crate::cli::whatif(&a);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{}: {e}", a.join(" "));
        assert!(e.contains("memory limit of 30 MiB"), "{}: {e}", a.join(" "));
        // The breakdown and the way out.
        // The whatif binary is built with the tests' profile (debug or release).
        let process = format!("the process {} MiB", replay::footprint::PROCESS_BYTES >> 20);
        assert!(e.contains(&process), "{}: {e}", a.join(" "));
        assert!(e.contains(trace_part), "{}: {e}", a.join(" "));
        assert!(e.contains("--max-memory"), "{}: {e}", a.join(" "));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
