//! A command-line fuzzer (issue 33): every subcommand with hostile arguments (huge, negative
//! and non-finite numbers, empty and enormous strings, `/dev/zero`, a folder, the input itself)
//! under a memory cap (`ulimit -v`) and a time limit. No case may panic, abort, be killed, run
//! past its time or exit with anything but 0, 1 (a run that failed) or 2 (bad input); output
//! files are never an input. The table is fixed (a few hundred cases), so CI runs the same
//! cases every time.

use crate::cli::{gen_trace, stderr, tmpdir};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Address space for each case (2 GiB): a case that tried to allocate past it would abort,
/// which the fuzzer reports.
const ULIMIT_V_KB: u64 = 2 << 20;
/// Wall time for each case (the debug build).
const DEADLINE: Duration = Duration::from_secs(30);

struct Case {
    args: Vec<String>,
}

fn run(case: &Case, cwd: &Path) -> Result<(), String> {
    let quoted: Vec<String> = case
        .args
        .iter()
        .map(|a| format!("'{}'", a.replace('\'', "'\\''")))
        .collect();
    let script = format!(
        "ulimit -v {ULIMIT_V_KB} && exec {} {}",
        env!("CARGO_BIN_EXE_whatif"),
        quoted.join(" ")
    );
    let t0 = Instant::now();
    // In the scratch folder: a value taken as a relative output path lands there.
    let mut child = Command::new("sh")
        .current_dir(cwd)
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    // Read stderr on a thread so a chatty child cannot block on a full pipe.
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut v).ok();
        v
    });
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s;
        }
        if t0.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("ran past {DEADLINE:?}"));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let e = String::from_utf8_lossy(&reader.join().unwrap()).into_owned();
    let head: String = e.chars().take(600).collect();
    if e.contains("panicked") {
        return Err(format!("panicked: {head}"));
    }
    if e.len() > 64 << 10 {
        return Err(format!("{} bytes of stderr", e.len()));
    }
    match status.code() {
        Some(0..=2) => Ok(()),
        Some(c) => Err(format!("exit status {c}: {head}")),
        None => Err(format!("killed by a signal: {head}")),
    }
}

#[test]
fn cli_fuzzer_finds_no_panic_abort_or_wrong_exit_code() {
    let dir = tmpdir("cli-fuzz");
    let p = |x: &Path| x.to_str().unwrap().to_string();
    let r = dir.join("r.trace");
    gen_trace(&r, &["ring", "--ranks", "8", "--iters", "3"]);
    let r = p(&r);
    let study = dir.join("s.toml");
    std::fs::write(
        &study,
        format!(
            "name = \"f\"\n[workload]\ntrace = \"{r}\"\n[net]\nmodel = \"latency\"\nlat = \"1us\"\n"
        ),
    )
    .unwrap();
    let study = p(&study);
    let out = p(&dir.join("out"));
    let outf = p(&dir.join("o.csv"));
    let big = "9".repeat(100_000);
    let hostile: Vec<String> = [
        "18446744073709551615",
        "18446744073709551616",
        "4294967295",
        "4294967296",
        "-1",
        "0",
        "1e308",
        "NaN",
        "inf",
        "",
        "1e-300",
        "0x10",
        "/dev/zero",
        &big,
        &r,
        &p(&dir),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // Templates: `X` is replaced by each hostile value.
    let templates: Vec<Vec<&str>> = vec![
        vec!["replay", &r, "--pes", "X"],
        vec!["replay", &r, "--cpu-scale", "X"],
        vec!["replay", &r, "--block-overhead", "X"],
        vec!["replay", &r, "--max-events", "X"],
        vec!["replay", &r, "--max-time", "X"],
        vec!["replay", &r, "--max-memory", "X"],
        vec!["replay", &r, "--seed", "X"],
        vec!["replay", &r, "--noise", "jitter:max=X"],
        vec!["replay", &r, "--noise", "jitter:cv=X"],
        vec!["replay", &r, "--noise", "detour:every=X,lose=1us"],
        vec!["replay", &r, "--net", "latency:lat=X"],
        vec!["replay", &r, "--net", "alphabeta:lat=1us,bw=X"],
        vec!["replay", &r, "--speedup", "entry:recv=X"],
        vec!["replay", &r, "--trace-window", "X"],
        vec!["replay", &r, "--net-file", "X"],
        vec!["replay", "X"],
        vec!["replay", &r, "--timeline", "X"],
        vec!["replay", &r, "--out", &out, "--bin", "X"],
        vec!["gen", "ring", "--ranks", "X", "--out", &outf],
        vec!["gen", "ring", "--iters", "X", "--out", &outf],
        vec!["gen", "ring", "--compute", "X", "--out", &outf],
        vec!["gen", "ring", "--bytes", "X", "--out", &outf],
        vec!["gen", "halo3d", "--dims", "X", "--out", &outf],
        vec!["gen", "pipeline", "--stages", "X", "--out", &outf],
        vec!["emulate", "pingpong", "--pes", "X", "--out", &outf],
        vec!["emulate", "stencil3d", "--set", "grid=X", "--out", &outf],
        vec!["emulate", "pingpong", "--max-blocks", "X", "--out", &outf],
        vec![
            "emulate", "pingpong", "--set", "iters=X", "--flat", "--out", &outf,
        ],
        vec![
            "emulate",
            "pingpong",
            "--net",
            "contention:topo=fattree:k=X,levels=3,bw=10GB/s",
            "--out",
            &outf,
        ],
        vec![
            "emulate",
            "pingpong",
            "--net",
            "flow:topo=full:X,bw=10GB/s",
            "--out",
            &outf,
        ],
        vec![
            "predict",
            "stencil3d",
            "--small",
            "2,4,8",
            "--at",
            "16",
            "--net",
            "flow:topo=fattree:k=X,levels=3,bw=10GB/s",
        ],
        vec![
            "lb",
            &r,
            "--net",
            "contention:topo=fattree:k=X,levels=3,bw=10GB/s",
        ],
        vec![
            "emulate",
            "pingpong",
            "--costs",
            "X",
            "--costs-at",
            "4",
            "--out",
            &outf,
        ],
        vec!["analyze", &r, "--factor", "X"],
        vec!["analyze", &r, "--bin", "X"],
        vec!["lb", &r, "--strategies", "X"],
        vec!["lb", &r, "--migrate-bytes", "X"],
        vec!["inspect", "X"],
        vec!["export", "goal", "X", "--out", &outf],
        vec!["import", "goal", "X", "--out", &outf],
        vec!["import", "projections", "X", "--out", &outf],
        vec!["model", "X"],
        vec!["model", "--predict", "X", &outf],
        vec!["sweep", "X", "--out", &out],
        vec!["sweep", &study, "--jobs", "X", "--out", &out],
        vec!["report", "X"],
        vec!["merge", "X", "--out", &out],
        vec!["bench", "--ranks", "X", "--repeat", "1"],
    ];
    let mut failures = Vec::new();
    let mut n = 0;
    for t in &templates {
        for h in &hostile {
            let case = Case {
                args: t
                    .iter()
                    .map(|a| {
                        if *a == "X" {
                            h.clone()
                        } else {
                            a.replace("=X", &format!("={h}"))
                                .replace(":X,", &format!(":{h},"))
                        }
                    })
                    .collect(),
            };
            n += 1;
            if let Err(why) = run(&case, &dir) {
                let shown: Vec<String> = case
                    .args
                    .iter()
                    .map(|a| a.chars().take(40).collect())
                    .collect();
                failures.push(format!("whatif {}: {why}", shown.join(" ")));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {n} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        std::fs::read(Path::new(&r)).is_ok_and(|b| b.starts_with(b"WHATIFT")),
        "the input trace is intact"
    );
    // `/dev/zero` was an output path in some cases: it must still be the device (a run as
    // root once renamed a timeline over it).
    use std::os::unix::fs::FileTypeExt;
    assert!(
        std::fs::metadata("/dev/zero").is_ok_and(|m| m.file_type().is_char_device()),
        "/dev/zero is still a device"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_fuzzer_sees_a_crash() {
    // The runner itself: a case that aborts is reported (a shell that kills itself).
    let o = Command::new("sh")
        .args(["-c", "kill -ABRT $$"])
        .output()
        .unwrap();
    assert!(o.status.code().is_none(), "{}", stderr(&o));
}
