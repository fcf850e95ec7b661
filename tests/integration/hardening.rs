//! Issue 15 (in part): resources bounded before allocating, outputs that never overwrite an
//! input, one-line errors with exit status 2 for bad input. Each case is a reproduction from
//! the issue; the binary must refuse it quickly (before the allocation it would need).

use crate::cli::{gen_trace, stderr, tmpdir, whatif};
use std::path::Path;
use std::process::Output;

/// Exit status 2, one `error:` line that contains every `needle`.
fn refused(o: &Output, needles: &[&str]) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "exit status; stderr:\n{e}");
    let line = e
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line in:\n{e}"));
    for n in needles {
        assert!(line.contains(n), "`{n}` missing from: {line}");
    }
}

fn ring(dir: &Path, objects: u32) -> String {
    let p = dir.join(format!("ring{objects}.trace"));
    gen_trace(
        &p,
        &["ring", "--ranks", &objects.to_string(), "--iters", "3"],
    );
    p.to_str().unwrap().to_string()
}

#[test]
fn huge_machines_are_refused_before_allocating() {
    let dir = tmpdir("hard-pes");
    let r = ring(&dir, 100);
    // More PEs than objects, above a million: refused with the figures and the way out.
    for pes in ["4000000000", "1000000000", "100000000"] {
        let o = whatif(&["replay", &r, "--pes", pes]);
        refused(&o, &[pes, "100 objects", "--force"]);
    }
    // Forced, the memory estimate still stops it (the limit named, nothing allocated).
    let o = whatif(&["replay", &r, "--pes", "1000000000", "--force"]);
    refused(&o, &["needs about", "1000000000 PEs", "memory limit"]);
    assert!(stderr(&o).contains("--max-memory"), "{}", stderr(&o));
    let o = whatif(&[
        "replay",
        &r,
        "--pes",
        "10000000",
        "--force",
        "--max-memory",
        "100MiB",
    ]);
    refused(&o, &["1.2 GiB", "100 MiB"]);
    // The same checks in `lb` and `emulate`.
    let o = whatif(&["lb", &r, "--pes", "100000000", "--net", "latency:lat=1us"]);
    refused(&o, &["100000000", "100 objects"]);
    let out = dir.join("e.trace");
    let o = whatif(&[
        "emulate",
        "pingpong",
        "--pes",
        "4000000000",
        "--out",
        out.to_str().unwrap(),
    ]);
    refused(&o, &["--pes 4000000000", "memory limit", "--max-memory"]);
    assert!(!out.exists());
}

#[test]
fn idle_pes_get_a_warning_that_says_what_would_use_them() {
    let dir = tmpdir("hard-idle");
    let r = ring(&dir, 100);
    let o = whatif(&["replay", &r, "--pes", "1024"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("warning: 924 of 1024 PEs get no object"), "{e}");
    // More PEs than objects: no mapping helps; the warning says why and what would.
    assert!(e.contains("the trace has 100 objects"), "{e}");
    assert!(e.contains("whatif predict"), "{e}");
    // Every PE used: no warning.
    let o = whatif(&["replay", &r, "--pes", "50"]);
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
}

#[test]
fn outputs_never_overwrite_inputs() {
    let dir = tmpdir("hard-overwrite");
    let r = ring(&dir, 10);
    let before = std::fs::read(&r).unwrap();
    let same = format!(
        "{}/./{}",
        dir.display(),
        Path::new(&r).file_name().unwrap().to_str().unwrap()
    );
    for flag in ["--timeline", "--per-pe", "--entries", "--links"] {
        let o = whatif(&["replay", &r, flag, &same]);
        refused(&o, &[flag, "would overwrite the input"]);
    }
    let o = whatif(&["replay", &r, "--out", dir.to_str().unwrap()]);
    refused(&o, &["--out", "would overwrite the input"]);
    let o = whatif(&["export", "goal", &r, "--out", &r]);
    refused(&o, &["would overwrite the input"]);
    assert_eq!(std::fs::read(&r).unwrap(), before, "the input was changed");

    let g = dir.join("g.goal");
    std::fs::write(&g, "num_ranks 2\nrank 0 {\nl1: calc 100\n}\n").unwrap();
    let o = whatif(&[
        "import",
        "goal",
        g.to_str().unwrap(),
        "--out",
        g.to_str().unwrap(),
    ]);
    refused(&o, &["would overwrite the input"]);
    assert!(
        std::fs::read_to_string(&g)
            .unwrap()
            .starts_with("num_ranks 2")
    );

    // A placement file is an input too, for replay, analyze and lb.
    let m = dir.join("m.csv");
    std::fs::write(&m, "name,pe\n").unwrap();
    let (ms, map) = (m.to_str().unwrap(), format!("file:{}", m.display()));
    for args in [
        vec!["replay", &r, "--map", &map, "--per-pe", ms],
        vec!["lb", &r, "--map", &map, "--csv", ms],
    ] {
        refused(&whatif(&args), &["would overwrite the input"]);
    }
    let o = whatif(&["analyze", &r, "--map", &map, "--out", dir.to_str().unwrap()]);
    refused(&o, &["--out", "would overwrite the input"]);
    assert_eq!(std::fs::read_to_string(&m).unwrap(), "name,pe\n");
}

#[test]
fn header_counts_are_bounded_by_what_the_input_holds() {
    let dir = tmpdir("hard-counts");
    let out = dir.join("x.trace");
    let out = out.to_str().unwrap();
    // 19 bytes claiming 16,777,216 ranks.
    let g = dir.join("big.goal");
    std::fs::write(&g, "num_ranks 16777216\n").unwrap();
    let o = whatif(&["import", "goal", g.to_str().unwrap(), "--out", out]);
    refused(&o, &["big.goal:1", "19-byte file", "num_ranks 16777216"]);
    // A .sts claiming 16,777,215 PEs with no logs: the first missing log stops it.
    let sts = dir.join("fake.sts");
    std::fs::write(
        &sts,
        "PROJECTIONS_ID\nVERSION 11.0\nMACHINE \"net\"\nPROCESSORS 16777215\nTOTAL_CHARES 0\nTOTAL_EPS 0\nTOTAL_MSGS 0\nTOTAL_PSEUDOS 0\nTOTAL_EVENTS 0\nEND\n",
    )
    .unwrap();
    let o = whatif(&["import", "projections", sts.to_str().unwrap(), "--out", out]);
    refused(
        &o,
        &[
            "fake.sts",
            "PROCESSORS 16777215",
            "log of PE 0",
            "fake.0.log",
            "does not exist",
        ],
    );
    // A BigSim summary claiming 2^26 emulating PEs (field at byte 48), no per-PE files.
    if let Some(j0) = crate::shared_data("bigsim-jacobi2d/traceJ0") {
        let mut b = std::fs::read(j0.join("bgTrace")).unwrap();
        assert_eq!(&b[48..52], &8i32.to_le_bytes());
        b[48..52].copy_from_slice(&(1i32 << 26).to_le_bytes());
        let bg = dir.join("bg");
        std::fs::create_dir_all(&bg).unwrap();
        std::fs::write(bg.join("bgTrace"), b).unwrap();
        let o = whatif(&["import", "bgtrace", bg.to_str().unwrap(), "--out", out]);
        refused(
            &o,
            &["67108864 emulating PEs", "bgTrace0", "does not exist"],
        );
    } else {
        println!("skipped the BigSim case: ../shared/data not found");
    }
}

#[test]
fn errors_are_said_once() {
    let dir = tmpdir("hard-once");
    let missing = dir.join("nope.trace");
    let o = whatif(&["replay", missing.to_str().unwrap()]);
    refused(&o, &["nope.trace", "No such file or directory"]);
    let line = stderr(&o);
    assert_eq!(
        line.matches("No such file or directory").count(),
        1,
        "{line}"
    );
}

#[test]
fn a_text_trace_cut_at_a_line_boundary_is_refused() {
    let dir = tmpdir("hard-cut");
    let full = dir.join("r.jsonl");
    let o = whatif(&[
        "gen",
        "ring",
        "--ranks",
        "4",
        "--iters",
        "10",
        "--out",
        full.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&full).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // The case: cut after the blocks of iteration 2 (a shorter, valid-looking ring).
    let cut = dir.join("cut.jsonl");
    std::fs::write(&cut, lines[..lines.len() / 4].join("\n") + "\n").unwrap();
    let o = whatif(&["replay", cut.to_str().unwrap()]);
    refused(&o, &["cut.jsonl", "end", "cut short"]);
    let o = whatif(&["replay", full.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// The file names under `dir`, recursively, sorted (relative paths).
fn listing(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn kill_9_during_replay_out_leaves_the_previous_output_or_no_marker() {
    use std::time::Instant;
    let dir = tmpdir("hard-kill");
    let h = dir.join("h.trace");
    gen_trace(&h, &["halo3d", "--dims", "12x12x12", "--iters", "10"]);
    let out = dir.join("out");
    let args = [
        "replay",
        h.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "-q",
    ];
    // The previous, complete output; the duration of a whole run sets the kill moments.
    let t0 = Instant::now();
    let o = whatif(&args);
    let full = t0.elapsed();
    assert!(o.status.success(), "{}", stderr(&o));
    let reference = listing(&out);
    assert!(reference.contains(&safe_output::MARKER.to_string()));
    let summary = std::fs::read(out.join("summary.json")).unwrap();
    let chrome = std::fs::read(out.join("trace.json")).unwrap();
    let mut killed = 0;
    for i in 1..=8u32 {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_whatif"))
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(full * i / 8);
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap(); // SIGKILL
            killed += 1;
        }
        child.wait().unwrap();
        if out.join(safe_output::MARKER).exists() {
            // A marker means a complete output, byte for byte the run's.
            assert_eq!(
                listing(&out),
                reference,
                "kill {i}: files of a marked output"
            );
            assert_eq!(std::fs::read(out.join("summary.json")).unwrap(), summary);
            assert_eq!(std::fs::read(out.join("trace.json")).unwrap(), chrome);
        }
    }
    assert!(
        killed >= 3,
        "only {killed} of 8 runs were killed before finishing"
    );
    // A later run cleans up what the killed ones left and finishes normally.
    let o = whatif(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(listing(&out), reference);
    let leftovers: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".whatif-"))
        .collect();
    assert!(leftovers.is_empty(), "left behind: {leftovers:?}");
}

#[test]
fn output_folders_are_replaced_whole_and_foreign_ones_refused() {
    let dir = tmpdir("hard-outdir");
    let r = ring(&dir, 8);
    let out = dir.join("o");
    let o = whatif(&["replay", &r, "--out", out.to_str().unwrap(), "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.join("projections/predicted.7.log").exists());
    // A 2-PE run into the same folder leaves no log of the 8-PE one.
    let o = whatif(&[
        "replay",
        &r,
        "--pes",
        "2",
        "--map",
        "block",
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.join("projections/predicted.1.log").exists());
    assert!(!out.join("projections/predicted.7.log").exists());
    // A folder of other files: refused before the replay, kept; --force writes beside them.
    let mine = dir.join("mine");
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::write(mine.join("notes.txt"), "keep").unwrap();
    let o = whatif(&["replay", &r, "--out", mine.to_str().unwrap()]);
    refused(&o, &["--out", "not a whatif output", "--force"]);
    assert!(stderr(&o).lines().all(|l| !l.starts_with("replayed")));
    let o = whatif(&[
        "replay",
        &r,
        "--out",
        mine.to_str().unwrap(),
        "--force",
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(mine.join("notes.txt").exists() && mine.join(safe_output::MARKER).exists());
    // Output files in a folder that does not exist: refused before the replay.
    for flag in ["--timeline", "--per-pe", "--links", "--entries"] {
        let p = dir.join("nope/x.csv");
        let o = whatif(&["replay", &r, flag, p.to_str().unwrap()]);
        refused(&o, &[flag, "does not exist"]);
        assert!(stderr(&o).lines().all(|l| !l.starts_with("replayed")));
    }
}

#[test]
fn a_collective_that_expands_beyond_memory_is_refused_before_building() {
    let dir = tmpdir("hard-a2a");
    // The case: 20,000 ranks doing one alltoall (under a megabyte of text) expand
    // into 4e8 messages, estimated at up to 1.6e9 blocks (each message may need a receive
    // block, a transfer block and two cuts under a rendezvous protocol). Refused after the
    // scan, with the figures and the limit.
    let f = dir.join("a2a.txt");
    let mut text = String::new();
    for r in 0..20_000 {
        text.push_str(&format!("{r} init\n{r} alltoall 100 100\n{r} finalize\n"));
    }
    std::fs::write(&f, text).unwrap();
    let out = dir.join("a.trace");
    let o = whatif(&[
        "import",
        "simgrid",
        f.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    refused(
        &o,
        &[
            "a2a.txt",
            "1600380000 blocks and 400000000 messages",
            "above the limit",
            "--max-memory",
        ],
    );
    assert!(!out.exists());
    let o = whatif(&["replay", f.to_str().unwrap(), "--format", "simgrid"]);
    refused(&o, &["1600380000 blocks"]);
    // The same through an index of one file per rank (the one-pass reader): refused while
    // rank 0 is read, before the collective is built.
    let idx = dir.join("index.txt");
    let mut names = String::new();
    for r in 0..2_000 {
        let p = dir.join(format!("r{r}.txt"));
        std::fs::write(&p, format!("{r} init\n{r} alltoall 100 100\n")).unwrap();
        names.push_str(&format!("{}\n", p.display()));
    }
    std::fs::write(&idx, names).unwrap();
    let o = whatif(&[
        "import",
        "simgrid",
        idx.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--max-memory",
        "100MiB",
    ]);
    refused(&o, &["index.txt", "blocks", "above the limit of 100 MiB"]);
    // A rank number the input cannot hold is refused before it sizes anything.
    std::fs::write(&f, "16000000 init\n").unwrap();
    let o = whatif(&[
        "import",
        "simgrid",
        f.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    refused(&o, &["rank 16000000", "a rank below"]);
}

#[test]
fn huge_packet_counts_and_studies_are_refused() {
    let dir = tmpdir("hard-packets");
    // One 1e13-byte message under `contention` would queue 2.4e9 packets at once.
    let p = dir.join("big.trace");
    gen_trace(&p, &["pingpong", "--bytes", "10TB", "--iters", "1"]);
    let o = whatif(&[
        "replay",
        p.to_str().unwrap(),
        "--net",
        "contention:topo=mesh:2,bw=10GB/s",
    ]);
    refused(
        &o,
        &[
            "10000000000000 bytes",
            "2441406250 packets",
            "limit",
            "packet=",
        ],
    );
    // The same message under a model without packets is fine.
    let o = whatif(&[
        "replay",
        p.to_str().unwrap(),
        "--net",
        "alphabeta:lat=1us,bw=10GB/s",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // A study of 10^10 points: refused at once, naming each axis.
    let study = dir.join("big.toml");
    std::fs::write(
        &study,
        "name = \"big\"\n[workload]\nprogram = \"pingpong\"\npes = 2\n[net]\nmodel = \"latency\"\nlat = \"1us\"\n\
         [[sweep]]\nkey = \"machine.pes\"\nlinear = [1, 100000]\nsteps = 100000\n\
         [[sweep]]\nkey = \"workload.params.iters\"\nlinear = [1, 100000]\nsteps = 100000\n",
    )
    .unwrap();
    let o = whatif(&["sweep", study.to_str().unwrap(), "--list"]);
    refused(&o, &["big.toml", "10000000000 points", "limit of 100000"]);
}

#[test]
fn messages_name_the_actual_problem() {
    let dir = tmpdir("hard-msgs");
    let r = ring(&dir, 4);
    for (args, needles) in [
        (
            vec!["--net", "alphabeta:lat=abc"],
            vec!["lat:", "`abc`", "expected a number and a unit"],
        ),
        (
            vec!["--net", "alphabeta:lat=-5us,bw=1GB/s"],
            vec!["lat:", "must not be negative"],
        ),
        (
            vec!["--pes", "10000000000"],
            vec!["10000000000", "at most 4294967295 PEs"],
        ),
        (
            vec!["--cpu-scale", "0"],
            vec!["--cpu-scale", "greater than 0"],
        ),
    ] {
        let mut a = vec!["replay", r.as_str()];
        a.extend(args.iter().copied());
        let o = whatif(&a);
        refused(&o, &needles);
        assert!(!stderr(&o).contains("needs a bandwidth"), "{}", stderr(&o));
    }
    let o = whatif(&["replay", &r, "--noise", "detour:every=1ms,lose=2ms"]);
    refused(&o, &["--noise", "shorter than every"]);
    let o = whatif(&[
        "replay",
        &r,
        "--noise",
        "detour:every=1ms,lose=20us",
        "--noise",
        "jitter:max=5us",
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = whatif(&["report", dir.join("nope").to_str().unwrap()]);
    refused(&o, &["nope", "no such folder"]);
    // A mistyped sweep key: the line of the user's file, not of an internal document.
    let study = dir.join("typo.toml");
    std::fs::write(
        &study,
        "name = \"typo\"\n[workload]\nprogram = \"pingpong\"\npes = 2\n[net]\nmodel = \"latency\"\nlat = \"1us\"\n\n[[sweep]]\nkey = \"workload.parms.iters\"\nvalues = [1, 2]\n",
    )
    .unwrap();
    let o = whatif(&["sweep", study.to_str().unwrap(), "--list"]);
    refused(
        &o,
        &["typo.toml", "swept at line 10", "unknown field `parms`"],
    );
    assert!(!stderr(&o).contains("TOML parse error"), "{}", stderr(&o));
    // Sizes for people, with the exact figure where it matters.
    let o = whatif(&["inspect", &r]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(text.contains("KiB (") && text.contains(" bytes)"), "{text}");
    // Bandwidths are echoed in the unit they were given.
    let o = whatif(&[
        "replay",
        &r,
        "--net",
        "alphabeta:lat=1us,bw=10GiB/s",
        "--json",
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("bw=10GiB/s"));
}

#[test]
fn help_keeps_its_promises() {
    let help = |args: &[&str]| String::from_utf8_lossy(&whatif(args).stdout).into_owned();
    let top = help(&["--help"]);
    assert!(top.contains("whatif demo"), "{top}");
    // `--net ... listed below`: the list is there, on every command that has --net.
    for cmd in ["run", "replay", "lb"] {
        let h = help(&[cmd, "--help"]);
        assert!(h.contains("listed below"), "{cmd}");
        assert!(
            h.contains("contention:topo=T"),
            "{cmd} --help lacks the model list"
        );
    }
    let lb = help(&["lb", "--help"]);
    let mig = lb.lines().find(|l| l.contains("--migrate-bytes")).unwrap();
    let full: String = lb
        .split("--migrate-bytes")
        .nth(1)
        .unwrap()
        .split("\n      --")
        .next()
        .unwrap()
        .to_string();
    assert_eq!(full.matches("[default:").count(), 1, "{mig}");
    let fz = help(&["fuzz-import", "--help"]);
    assert!(!fz.contains("18446744073709551615"), "{fz}");
}

#[test]
fn the_fuzzer_covers_the_native_formats_and_replays_what_it_accepts() {
    let dir = tmpdir("hard-fuzz");
    let r = ring(&dir, 6);
    for f in ["trace", "trace-v3", "jsonl"] {
        let work = dir.join(format!("work-{f}"));
        let o = whatif(&[
            "fuzz-import",
            f,
            &r,
            "--max-execs",
            "300",
            "--time",
            "60s",
            // A debug build beside other tests: generous time, memory measured as usual.
            "--time-per-input",
            "30s",
            "--work",
            work.to_str().unwrap(),
        ]);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(o.status.success(), "{f}: {out}\n{}", stderr(&o));
        assert!(out.contains("300 execs"), "{out}");
        assert!(out.contains("0 panics, 0 over budget"), "{out}");
        // Some inputs survive the mutations and are replayed, most are refused.
        let accepted: u64 = out
            .split(" accepted and replayed")
            .next()
            .and_then(|s| s.rsplit(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(accepted > 0 && accepted < 300, "{out}");
    }
    // An unknown format is a usage error that lists the seven.
    let o = whatif(&["fuzz-import", "nope", &r]);
    assert_eq!(o.status.code(), Some(2));
    for f in [
        "bgtrace",
        "projections",
        "simgrid",
        "goal",
        "trace",
        "trace-v3",
        "jsonl",
    ] {
        assert!(stderr(&o).contains(f), "{}", stderr(&o));
    }
}

#[test]
fn input_bytes_are_never_echoed_raw() {
    let dir = tmpdir("hard-raw");
    let bin = dir.join("esc.trace");
    std::fs::write(&bin, b"\x01\x02\x1b[31mred\x07\xff\xfe").unwrap();
    let o = whatif(&["replay", bin.to_str().unwrap()]);
    refused(&o, &["esc.trace", "byte offset 0", "the bytes 01 02 1b 5b"]);
    let goal = dir.join("esc.goal");
    std::fs::write(&goal, b"num_ranks 2\n\x1b[31mrank 0 {\n}\n").unwrap();
    let o = whatif(&[
        "import",
        "goal",
        goal.to_str().unwrap(),
        "--out",
        dir.join("x.trace").to_str().unwrap(),
    ]);
    refused(&o, &["esc.goal:2", "\\u{1b}[31mrank"]);
    for o in [whatif(&["replay", bin.to_str().unwrap()]), o] {
        assert!(
            !o.stderr.iter().any(|&b| b < 0x20 && b != b'\n'),
            "a control byte reached the terminal: {:?}",
            stderr(&o)
        );
    }
}

/// A replay folder whose files claim sizes the report would allocate for (a PE count past
/// 2^26, a communication matrix of more than 256 groups a side) is refused with the file named.
#[test]
fn report_bounds_sizes_from_its_files() {
    let dir = tmpdir("hard-report-sizes");
    let t = dir.join("r.trace");
    gen_trace(&t, &["ring", "--ranks", "4"]);
    let out = dir.join("out");
    let o = whatif(&[
        "replay",
        t.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let summary = std::fs::read_to_string(out.join("summary.json")).unwrap();
    let set_pes = |n: u64| {
        let mut v: serde_json::Value = serde_json::from_str(&summary).unwrap();
        v["pes"] = n.into();
        std::fs::write(out.join("summary.json"), v.to_string()).unwrap();
    };
    set_pes(1 << 40);
    let o = whatif(&["report", out.to_str().unwrap()]);
    refused(&o, &["summary.json", "a report covers at most"]);
    set_pes(100_000);
    std::fs::write(
        out.join("comm_matrix.csv"),
        "src_first_pe,dst_first_pe,group_pes,messages,bytes\n0,1,1,1,8\n",
    )
    .unwrap();
    let o = whatif(&["report", out.to_str().unwrap()]);
    refused(&o, &["comm_matrix.csv", "groups per side"]);
    std::fs::remove_dir_all(&dir).ok();
}

/// A reader that stops early (`whatif inspect t.trace | head -1`) closes the pipe: the command
/// ends quietly with the shell's SIGPIPE status (141), not a panic (status 101, a backtrace).
#[test]
fn a_closed_stdout_ends_quietly() {
    let dir = tmpdir("closed-stdout");
    let t = ring(&dir, 8);
    // Close the reading end before the child can write its first line. A child another test
    // forks at that moment can hold the pipe open a little longer (its output then fits in
    // the pipe and it ends with 0): try until the closed pipe is seen.
    let mut saw_closed = false;
    for _ in 0..20 {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_whatif"))
            .args(["inspect", &t])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        let e = stderr(&o);
        assert!(!e.contains("panicked"), "{e}");
        match o.status.code() {
            Some(0) => continue,
            code => {
                assert_eq!(code, Some(141), "{e}");
                saw_closed = true;
                break;
            }
        }
    }
    assert!(saw_closed, "the closed pipe was never seen");
    let _ = std::fs::remove_dir_all(&dir);
}
