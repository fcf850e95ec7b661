//! Issue 33 (in part): the reproductions of the mechanisms built so far, each under a time
//! and memory bound: outputs never overwrite or delete an input (the input registry), whole
//! files read with a bound, errors that quote at most a few hundred bytes of input, no
//! panic, expansions of repeated traces checked before they are made, importers within
//! `--max-memory`, exit status 2 for bad input.

use crate::cli::{gen_trace, stderr, tmpdir, whatif};
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

/// Runs `whatif ARGS`, requiring it to end within 20 s (generous for the debug build).
fn run(args: &[&str]) -> Output {
    let t0 = Instant::now();
    let o = whatif(args);
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "whatif {} took {:?}",
        args.join(" "),
        t0.elapsed()
    );
    let e = stderr(&o);
    assert!(!e.contains("panicked"), "whatif {}: {e}", args.join(" "));
    o
}

/// Exit status 2 with an `error:` line containing every needle, no longer than 2 KiB.
fn refused(args: &[&str], needles: &[&str]) {
    let o = run(args);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "whatif {}: {e}", args.join(" "));
    let line = e
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line in:\n{e}"));
    assert!(line.len() < 2048, "a {}-byte error line", line.len());
    for n in needles {
        assert!(line.contains(n), "`{n}` missing from: {line}");
    }
}

/// Sends SIGINT (Ctrl-C) to process `pid`.
fn sigint(pid: u32) {
    let k = std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(k.success());
}

fn s(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

#[test]
fn outputs_never_overwrite_or_delete_inputs() {
    let dir = tmpdir("h33-overwrite");
    let r = dir.join("r.trace");
    gen_trace(&r, &["ring", "--ranks", "8", "--iters", "3"]);
    let noise = dir.join("n.txt");
    std::fs::write(&noise, "0 1000\n10000 1000\n").unwrap();
    let before = std::fs::read(&noise).unwrap();
    // A noise trace is an input like the trace.
    refused(
        &[
            "replay",
            &s(&r),
            "--noise",
            &format!("trace:file={}", s(&noise)),
            "--per-pe",
            &s(&noise),
        ],
        &["would overwrite the input", "n.txt"],
    );
    assert_eq!(std::fs::read(&noise).unwrap(), before);
    // Through a symbolic link to the input.
    let link = dir.join("link.txt");
    std::os::unix::fs::symlink(&noise, &link).unwrap();
    refused(
        &[
            "replay",
            &s(&r),
            "--noise",
            &format!("trace:file={}", s(&noise)),
            "--timeline",
            &s(&link),
        ],
        &["n.txt"],
    );
    assert_eq!(std::fs::read(&noise).unwrap(), before);
    // A report written onto a file it reads.
    let out = dir.join("run");
    let o = run(&["replay", &s(&r), "--out", &s(&out), "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let summary = std::fs::read(out.join("summary.json")).unwrap();
    refused(
        &["report", &s(&out), "--out", &s(&out.join("summary.json"))],
        &["summary.json", "overwrite"],
    );
    assert_eq!(std::fs::read(out.join("summary.json")).unwrap(), summary);
    // A noise trace kept inside a previous output folder: replacing the folder would delete it.
    let kept = out.join("noise.txt");
    std::fs::write(&kept, "0 1000\n10000 1000\n").unwrap();
    refused(
        &[
            "replay",
            &s(&r),
            "--noise",
            &format!("trace:file={}", s(&kept)),
            "--out",
            &s(&out),
        ],
        &["noise.txt"],
    );
    assert!(kept.exists(), "the input inside the folder is still there");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn whole_file_reads_are_bounded() {
    if !Path::new("/dev/zero").exists() {
        eprintln!("skipped: no /dev/zero");
        return;
    }
    let dir = tmpdir("h33-zero");
    let r = dir.join("r.trace");
    gen_trace(&r, &["ring", "--ranks", "8", "--iters", "3"]);
    let e = dir.join("e.trace");
    refused(
        &[
            "emulate",
            "pingpong",
            "--costs",
            "/dev/zero",
            "--costs-at",
            "4",
            "--out",
            &s(&e),
        ],
        &["/dev/zero", "larger than"],
    );
    refused(
        &["replay", &s(&r), "--net-file", "/dev/zero"],
        &["/dev/zero", "larger than"],
    );
    refused(
        &["sweep", "/dev/zero", "--out", &s(&dir.join("sw"))],
        &["/dev/zero"],
    );
    refused(&["model", "/dev/zero"], &["/dev/zero"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn no_panics_on_extreme_values() {
    let dir = tmpdir("h33-panics");
    let r = dir.join("r.trace");
    gen_trace(&r, &["ring", "--ranks", "8", "--iters", "3"]);
    // Jitter of up to 2^64 - 1 ps (it once divided by zero): refused, at most a day.
    let o = run(&[
        "replay",
        &s(&r),
        "--noise",
        "jitter:max=18446744073709551615ps",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("at most 1 day"), "{}", stderr(&o));
    // A day per block is accepted; 20 such blocks would pass 2^63 ps only after 100 days:
    // it runs (or says the time overflowed, a run that could not finish: 1).
    let o = run(&["replay", &s(&r), "--noise", "jitter:max=86400s"]);
    assert!(
        matches!(o.status.code(), Some(0) | Some(1)),
        "{}",
        stderr(&o)
    );
    // An entry name of 70,000 bytes.
    let long = dir.join("long.jsonl");
    let o = run(&["inspect", &s(&r), "--objects", &s(&dir.join("o.csv"))]);
    assert!(o.status.success(), "{}", stderr(&o));
    let name = "e".repeat(70_000);
    let text = format!(
        "{{\"kind\":\"header\",\"format\":\"whatif-trace\",\"version\":1,\"meta\":{{\"name\":\"long\",\"generator\":\"test\",\"description\":\"\",\"recorded_pes\":1}}}}\n{{\"kind\":\"entry\",\"id\":0,\"name\":\"{name}\"}}\n{{\"kind\":\"object\",\"id\":0,\"name\":\"o\",\"recorded_pe\":0}}\n{{\"kind\":\"block\",\"id\":0,\"object\":0,\"entry\":0,\"duration_ps\":5}}\n"
    );
    std::fs::write(&long, text).unwrap();
    let o = run(&["inspect", &s(&long)]);
    if o.status.success() {
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.contains("eee..."),
            "the name is cut: {}",
            &out[..out.len().min(400)]
        );
        assert!(out.len() < 10_000, "{} bytes of output", out.len());
    } else {
        // The hand-written text form may be refused; then with a short, clean error.
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).len() < 4096);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn repeated_traces_are_not_expanded_beyond_the_limit() {
    let dir = tmpdir("h33-expand");
    let r = dir.join("r.trace");
    // 8 ranks x 268,435,455 iterations: a small file of 4.3 G blocks.
    gen_trace(&r, &["ring", "--ranks", "8", "--iters", "268435455"]);
    let r = s(&r);
    let goal = s(&dir.join("r.goal"));
    for args in [
        vec!["export", "goal", &r, "--out", &goal],
        vec!["replay", &r, "--speedup", "entry:recv=2"],
        vec!["replay", &r, "--timeline", &goal],
        vec!["lb", &r],
        vec!["phases", &r],
        vec!["analyze", &r],
    ] {
        refused(&args, &["memory limit"]);
    }
    assert!(!Path::new(&goal).exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn importers_keep_within_max_memory_and_errors_quote_little() {
    use std::io::Write;
    let dir = tmpdir("h33-import");
    // A Projections log set whose one log is a 64 MiB gzip bomb of a repeated line.
    let sts = dir.join("p.sts");
    std::fs::write(
        &sts,
        "PROJECTIONS_ID\nVERSION 11.0\nMACHINE \"x\"\nPROCESSORS 1\nTOTAL_CHARES 1\nTOTAL_EPS 1\nTOTAL_MSGS 1\nTOTAL_PSEUDOS 0\nTOTAL_EVENTS 0\nCHARE 0 \"c\" 1\nENTRY CHARE 0 \"e()\" 0 0\nMESSAGE 0 0\nTOTAL_PHASES 0\nEND\n",
    )
    .unwrap();
    let f = std::fs::File::create(dir.join("p.0.log.gz")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(f, flate2::Compression::best());
    gz.write_all(b"PROJECTIONS-RECORD 1\n").unwrap();
    let line = vec![b'7'; 1 << 20];
    for _ in 0..64 {
        gz.write_all(&line).unwrap();
    }
    gz.write_all(b"\n").unwrap();
    gz.finish().unwrap();
    let out = s(&dir.join("p.trace"));
    refused(
        &[
            "import",
            "projections",
            &s(&sts),
            "--out",
            &out,
            "--max-memory",
            "16MiB",
        ],
        &["p.0.log.gz", "memory limit"],
    );
    // Without the limit, the 64 MiB line stops the decompression at 16 MiB, with a short
    // message (the whole line was once echoed).
    let o = run(&["import", "projections", &s(&sts), "--out", &out]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("line 2 of the decompressed text is longer than 16777216 bytes"),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).len() < 2048,
        "{} bytes of errors",
        stderr(&o).len()
    );
    // A GOAL schedule within a 100-byte budget (its 3 operations need about 480).
    let goal = dir.join("g.goal");
    std::fs::write(
        &goal,
        "num_ranks 2\nrank 0 {\nl1: calc 100\nl2: send 10b to 1\nl2 requires l1\n}\nrank 1 {\nl1: recv 10b from 0\n}\n",
    )
    .unwrap();
    refused(
        &[
            "import",
            "goal",
            &s(&goal),
            "--out",
            &out,
            "--max-memory",
            "100",
        ],
        &["g.goal"],
    );
    // A calc that does not fit picoseconds is refused, not saturated.
    std::fs::write(
        &goal,
        "num_ranks 1\nrank 0 {\nl1: calc 100000000000000000\n}\n",
    )
    .unwrap();
    refused(&["import", "goal", &s(&goal), "--out", &out], &["calc"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_exits_2() {
    let dir = tmpdir("h33-exit");
    let r = dir.join("r.trace");
    gen_trace(&r, &["ring", "--ranks", "8", "--iters", "3"]);
    let r = s(&r);
    let e = s(&dir.join("e.trace"));
    for args in [
        vec!["emulate", "stencil3d", "--set", "grid=7x7x7", "--out", &e],
        vec!["emulate", "pingpong", "--set", "nosuch=1", "--out", &e],
        vec!["lb", &r, "--strategies", "nosuch"],
        vec!["gen", "halo3d", "--dims", "10x10", "--out", &e],
        vec!["model", "--predict", "NaN", &r],
        vec!["report", &s(&dir.join("nothing-here"))],
        vec!["replay", &s(&dir)],
    ] {
        let o = run(&args);
        assert_eq!(
            o.status.code(),
            Some(2),
            "whatif {}: {}",
            args.join(" "),
            stderr(&o)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Under `ulimit -v`, the default memory limit is three quarters of the address space allowed,
/// so a run too large for it is refused with the figures instead of aborting in an allocation.
#[test]
fn the_default_memory_limit_follows_ulimit() {
    let dir = tmpdir("h33-ulimit");
    let r = dir.join("r.trace");
    gen_trace(&r, &["ring", "--ranks", "8", "--iters", "3"]);
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v 2000000 && exec {} replay {} --pes 20000000 --force",
            env!("CARGO_BIN_EXE_whatif"),
            s(&r)
        ))
        .output()
        .unwrap();
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("memory limit of 1.4 GiB"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// SIGINT stops a run with a message and exit status 130, removing its staging folder; the
/// previous output stays whole.
#[test]
fn an_interrupted_run_cleans_up_and_says_so() {
    let dir = tmpdir("h33-sigint");
    let t = dir.join("h.trace");
    gen_trace(
        &t,
        &[
            "halo3d",
            "--dims",
            "30x30x40",
            "--iters",
            "10",
            "--compute",
            "100us",
        ],
    );
    let small = dir.join("r.trace");
    gen_trace(&small, &["ring", "--ranks", "8", "--iters", "3"]);
    let out = dir.join("out");
    let o = run(&["replay", &s(&small), "--out", &s(&out), "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let before = std::fs::read(out.join("summary.json")).unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_whatif"))
        .args(["replay", &s(&t), "--out", &s(&out), "--trace-pes", "all"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once its staging folder exists, interrupt it.
    let t0 = Instant::now();
    let staging = |d: &Path| {
        std::fs::read_dir(d)
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().contains(".whatif-staging."))
    };
    while !staging(&dir) && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(staging(&dir), "the run started its output");
    sigint(child.id());
    let o = child.wait_with_output().unwrap();
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(130), "{e}");
    assert!(e.contains("interrupted"), "{e}");
    assert!(!staging(&dir), "the staging folder is removed");
    assert_eq!(std::fs::read(out.join("summary.json")).unwrap(), before);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Messages that say what to do: a foreign file read as a whatif trace names the --format, a
/// folder names bgtrace, `--out` of the current folder is refused before the run.
#[test]
fn messages_say_what_to_do() {
    let dir = tmpdir("h33-messages");
    let goal = dir.join("x.goal");
    std::fs::write(&goal, "num_ranks 1\nrank 0 {\nl1: calc 1\n}\n").unwrap();
    refused(&["replay", &s(&goal)], &["--format goal"]);
    let sts = dir.join("x.sts");
    std::fs::write(&sts, "PROJECTIONS_ID\n").unwrap();
    refused(&["inspect", &s(&sts)], &["--format projections"]);
    refused(&["replay", &s(&dir)], &["is a folder", "--format bgtrace"]);
    let r = dir.join("r.trace");
    gen_trace(&r, &["ring", "--ranks", "8", "--iters", "3"]);
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_whatif"))
        .args(["replay", &s(&r), "--out", "."])
        .current_dir(&empty)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("current folder"), "{}", stderr(&o));
    assert!(
        !stderr(&o).contains("replayed"),
        "refused before the replay"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn network_specs_and_programs_too_large_are_refused_before_allocating() {
    let dir = tmpdir("h33-sizes");
    let r = dir.join("r.trace");
    gen_trace(&r, &["ring", "--ranks", "8", "--iters", "2"]);
    let r = s(&r);
    let out = s(&dir.join("e.trace"));
    // Network models whose state is indexed by link or vertex: estimated and refused.
    for net in [
        "contention:topo=fattree:k=1000,levels=3,bw=10GB/s",
        "flow:topo=fattree:k=1000,levels=3,bw=10GB/s",
        "flow:topo=full:4294967295,bw=10GB/s",
        "contention:topo=full:4294967295,bw=10GB/s",
    ] {
        refused(&["replay", &r, "--net", net], &["memory limit", "network"]);
        // Emulations build the same models: refused before running (emulate aborted
        // allocating 117 TiB of links, predict's small runs too).
        refused(
            &[
                "emulate",
                "pingpong",
                "--net",
                net,
                "--out",
                &s(&dir.join("n.trace")),
            ],
            &["the network model's links", "memory limit"],
        );
        refused(
            &[
                "predict",
                "stencil3d",
                "--small",
                "2,4,8",
                "--at",
                "16",
                "--net",
                net,
            ],
            &["the network model's links", "memory limit"],
        );
    }
    // Programs: objects, a stencil's real data, kneighbor's links, all before allocating.
    refused(
        &[
            "emulate",
            "leanmd",
            "--set",
            "cells=1000x1000x1000",
            "--out",
            &out,
        ],
        &["1000000000 objects of collection `cell`", "memory limit"],
    );
    refused(
        &[
            "emulate",
            "stencil3d",
            "--timing",
            "measured",
            "--set",
            "grid=1024x1024x1024",
            "--set",
            "block=1024x1024x1024",
            "--max-memory",
            "4GiB",
            "--out",
            &out,
        ],
        &[
            "the data of 1 blocks of 1024x1024x1024 cells",
            "memory limit",
        ],
    );
    refused(
        &[
            "emulate",
            "kneighbor",
            "--pes",
            "100000",
            "--set",
            "k=4294967295",
            "--out",
            &out,
        ],
        &["neighbour links", "memory limit"],
    );
    refused(
        &[
            "run-native",
            "stencil3d",
            "--set",
            "grid=1024x1024x1024",
            "--set",
            "block=1024x1024x1024",
            "--max-memory",
            "1GiB",
        ],
        &["the data of 1 blocks", "memory limit of 1.0 GiB"],
    );
    refused(
        &["run-native", "stencil3d", "--pes", "100000"],
        &["1 to 1024"],
    );
    // predict's target replay holds a state per PE (its emulation only per PE with
    // objects): refused before it is allocated (aborted under `ulimit -v 10000000`).
    refused(
        &[
            "predict",
            "stencil3d",
            "--small",
            "2,4,8",
            "--at",
            "100000000",
            "--max-memory",
            "4GiB",
        ],
        &[
            "replaying stencil3d on 100000000 PEs",
            "100000000 PEs",
            "memory limit of 4.0 GiB",
        ],
    );
    // A flat emulation of more blocks than memory holds: refused before it runs (was 11 s
    // and 3.6 GB of running before the recorder's limit stopped it).
    let jsonl = s(&dir.join("e.jsonl"));
    let t0 = std::time::Instant::now();
    refused(
        &[
            "emulate",
            "pingpong",
            "--set",
            "iters=1000000000",
            "--flat",
            "--max-memory",
            "8GiB",
            "--out",
            &jsonl,
        ],
        &[
            "at least 2000000000 blocks",
            "(--flat)",
            "memory limit of 8.0 GiB",
        ],
    );
    assert!(t0.elapsed().as_secs() < 5, "took {:?}", t0.elapsed());
    assert!(!Path::new(&jsonl).exists());
    // A huge k on a few objects is their few neighbours (was a 4-billion-step loop).
    let o = run(&[
        "emulate",
        "kneighbor",
        "--set",
        "k=4294967295",
        "--out",
        &out,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!Path::new(&out).exists() || std::fs::metadata(&out).unwrap().len() > 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 33 item 13: a sweep stopped by Ctrl-C keeps its finished points in
/// `<out>.partial.jsonl`, says so, and the same command resumes: it runs only the others and
/// writes files byte-identical to an uninterrupted run's.
#[test]
fn an_interrupted_sweep_resumes_from_its_finished_points() {
    let dir = tmpdir("h33-sweep-resume");
    let t = dir.join("h.trace");
    gen_trace(
        &t,
        &[
            "halo3d",
            "--dims",
            "20x20x20",
            "--iters",
            "10",
            "--compute",
            "100us",
        ],
    );
    let study = dir.join("s.toml");
    std::fs::write(
        &study,
        format!(
            "name = \"resume\"\n[workload]\ntrace = \"{}\"\n[net]\nmodel = \"alphabeta\"\nlat = \"1us\"\nbw = \"1GB/s\"\n[[sweep]]\nkey = \"net.lat\"\nlog = [\"1us\", \"1ms\"]\nsteps = 16\n",
            s(&t)
        ),
    )
    .unwrap();
    let (study, a, b) = (s(&study), dir.join("a"), dir.join("b"));
    let journal = dir.join("a.partial.jsonl");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_whatif"))
        .args(["sweep", &study, "--out", &s(&a), "--jobs", "1"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt it once two points are journaled.
    let rows = || {
        std::fs::read_to_string(&journal)
            .map(|t| t.lines().count().saturating_sub(1))
            .unwrap_or(0)
    };
    let t0 = Instant::now();
    while rows() < 2 && t0.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(10));
    }
    sigint(child.id());
    let o = child.wait_with_output().unwrap();
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(130), "{e}");
    assert!(
        e.contains("a.partial.jsonl; the same command resumes"),
        "{e}"
    );
    let kept = rows();
    assert!((2..16).contains(&kept), "{kept} points journaled of 16");
    assert!(!a.join("results.csv").exists());
    // The same command resumes.
    let o = run(&["sweep", &study, "--out", &s(&a), "--jobs", "1"]);
    let e = stderr(&o);
    assert!(o.status.success(), "{e}");
    assert!(
        e.contains(&format!("resuming: {kept} of 16 points finished earlier")),
        "{e}"
    );
    assert!(
        !journal.exists(),
        "the journal is removed once the outputs are written"
    );
    // Byte-identical to an uninterrupted run.
    let o = run(&["sweep", &study, "--out", &s(&b), "--jobs", "2", "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    for f in ["results.csv", "results.json", "manifest.json"] {
        assert_eq!(
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
            "{f}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 33 item 12: a full disk names the output (it said only "No space left on device"),
/// exits 1 (the machine's failure, not the input's) and leaves no staging folder. Needs a
/// small tmpfs (root); skipped with a message where it cannot be mounted.
#[test]
fn a_full_disk_names_the_output() {
    let dir = tmpdir("h33-full");
    let r = dir.join("r.trace");
    gen_trace(&r, &["ring", "--ranks", "8", "--iters", "3"]);
    let tiny = dir.join("tiny");
    std::fs::create_dir_all(&tiny).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs", &s(&tiny)])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|st| st.success());
    if !mounted {
        eprintln!("skipping: cannot mount a small tmpfs here (needs root)");
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    let out = tiny.join("out");
    let o = run(&["replay", &s(&r), "--out", &s(&out), "-q"]);
    let e = stderr(&o);
    let left = std::fs::read_dir(&tiny).map_or(0, |d| d.count());
    let _ = std::process::Command::new("umount").arg(&tiny).status();
    assert_eq!(left, 0, "the staging folder is removed");
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains(&format!("cannot write the outputs in {}", s(&out))),
        "{e}"
    );
    assert!(e.contains("No space left on device"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
