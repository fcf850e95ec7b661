//! `whatif replay --out DIR`: Chrome trace events, Projections logs and CSV summaries.

use crate::cli::{stderr, tmpdir, whatif};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

/// Emulates a small stencil (with a reduction at the end) and replays it into `out`.
fn replay_out(dir: &Path, net: &str) -> std::path::PathBuf {
    let t = dir.join("s.trace");
    let o = whatif(&[
        "emulate",
        "stencil3d",
        "--pes",
        "6",
        "--set",
        "grid=24x16x16",
        "--set",
        "block=8x8x4",
        "--set",
        "iters=4",
        "--out",
        t.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = dir.join(format!("out-{}", net.replace([':', '=', ',', '/'], "_")));
    let o = whatif(&[
        "replay",
        t.to_str().unwrap(),
        "--net",
        net,
        "--out",
        out.to_str().unwrap(),
        "--report",
        "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// timeline.csv as block -> (pe, start, end) in picoseconds.
fn timeline(out: &Path) -> HashMap<u64, (u64, u64, u64)> {
    let text = read(&out.join("timeline.csv"));
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| head.iter().position(|h| *h == n).unwrap();
    let (b, pe, st, en) = (col("block"), col("pe"), col("start_s"), col("end_s"));
    // Seconds with 12 decimals: exact picoseconds once the point is dropped.
    let ps = |v: &str| {
        let (w, f) = v.split_once('.').unwrap();
        assert_eq!(f.len(), 12, "{v}");
        w.parse::<u64>().unwrap() * 1_000_000_000_000 + f.parse::<u64>().unwrap()
    };
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let n = |i: usize| f[i].parse::<u64>().unwrap();
            (n(b), (n(pe), ps(f[st]), ps(f[en])))
        })
        .collect()
}

/// Microseconds with 6 decimals back to picoseconds, exactly.
fn ps(v: &Value) -> u64 {
    let s = v.to_string();
    let (i, f) = s.split_once('.').unwrap_or((&s, "0"));
    let f = format!("{f:0<6}");
    i.parse::<u64>().unwrap() * 1_000_000 + f[..6].parse::<u64>().unwrap()
}

#[test]
fn chrome_trace_has_every_block_once_with_its_pe_and_duration() {
    let dir = tmpdir("out-chrome");
    let out = replay_out(&dir, "alphabeta:lat=3us,bw=1GB/s");
    let tl = timeline(&out);
    let doc: Value = serde_json::from_str(&read(&out.join("trace.json"))).expect("valid JSON");
    let events = doc["traceEvents"].as_array().expect("traceEvents list");
    let mut seen: HashMap<u64, u32> = HashMap::new();
    let (mut starts, mut finishes) = (0u64, 0u64);
    for e in events {
        let ph = e["ph"].as_str().expect("every event has a phase");
        assert!(e["pid"].is_u64(), "{e}");
        match ph {
            "X" => {
                let b = e["args"]["block"].as_u64().unwrap();
                *seen.entry(b).or_default() += 1;
                let (pe, st, en) = tl[&b];
                assert_eq!(e["tid"].as_u64().unwrap(), pe, "block {b}");
                assert_eq!(ps(&e["ts"]), st, "block {b} start");
                assert_eq!(ps(&e["dur"]), en - st, "block {b} duration");
                assert!(e["name"].is_string());
            }
            "s" => starts += 1,
            "f" => {
                finishes += 1;
                assert_eq!(e["bp"], "e");
            }
            "M" => assert!(e["args"]["name"].is_string() || e["args"]["sort_index"].is_u64()),
            other => panic!("unexpected phase {other}"),
        }
    }
    assert_eq!(seen.len(), tl.len(), "every block appears");
    assert!(seen.values().all(|&n| n == 1), "and only once");
    let summary: Value = serde_json::from_str(&read(&out.join("summary.json"))).unwrap();
    assert_eq!(
        starts,
        summary["messages"].as_u64().unwrap(),
        "one flow per delivery"
    );
    assert_eq!(starts, finishes);
    std::fs::remove_dir_all(&dir).ok();
}

/// `--compress`: trace.json.gz and predicted.<pe>.log.gz hold exactly the plain outputs, and
/// the compressed logs import back like the plain ones.
#[test]
fn compressed_outputs_decompress_to_the_plain_ones() {
    use std::io::Read;
    let dir = tmpdir("out-gz");
    let plain = replay_out(&dir, "latency:lat=3us");
    let t = dir.join("s.trace");
    let gz = dir.join("gz");
    let o = whatif(&[
        "replay",
        t.to_str().unwrap(),
        "--net",
        "latency:lat=3us",
        "--out",
        gz.to_str().unwrap(),
        "--compress",
        "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let gunzip = |p: &Path| {
        let bytes = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert_eq!(&bytes[..2], b"\x1f\x8b", "{} is gzip", p.display());
        let mut text = String::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_string(&mut text)
            .unwrap();
        text
    };
    assert!(!gz.join("trace.json").exists());
    assert_eq!(
        gunzip(&gz.join("trace.json.gz")),
        read(&plain.join("trace.json"))
    );
    for pe in 0..6 {
        assert_eq!(
            gunzip(&gz.join(format!("projections/predicted.{pe}.log.gz"))),
            read(&plain.join(format!("projections/predicted.{pe}.log")))
        );
    }
    assert_eq!(
        read(&gz.join("timeline.csv")),
        read(&plain.join("timeline.csv"))
    );
    let import = |dir: &Path| {
        importers::import(
            importers::Format::Projections,
            &dir.join("projections/predicted.sts"),
            &importers::ImportOptions::default(),
        )
        .unwrap()
        .trace
        .num_blocks()
    };
    assert_eq!(import(&gz), import(&plain));
    // --compress needs --out.
    let o = whatif(&["replay", t.to_str().unwrap(), "--compress"]);
    assert!(!o.status.success());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn projections_logs_import_back_to_the_predicted_run() {
    let dir = tmpdir("out-proj");
    let out = replay_out(&dir, "latency:lat=7us");
    let sts = out.join("projections/predicted.sts");
    let imp = importers::import(
        importers::Format::Projections,
        &sts,
        &importers::ImportOptions::default(),
    )
    .expect("our Projections logs import");
    let summary: Value = serde_json::from_str(&read(&out.join("summary.json"))).unwrap();
    assert_eq!(
        imp.trace.num_blocks() as u64,
        summary["blocks"].as_u64().unwrap()
    );
    assert_eq!(imp.trace.meta.recorded_pes, 6);
    // Replaying the logs' own schedule gives the predicted makespan, to the microsecond.
    let r = crate::run_with(
        &imp.trace,
        "recorded",
        &replay::ReplayConfig {
            recorded_order: true,
            ..Default::default()
        },
    );
    let predicted = summary["makespan_ps"].as_u64().unwrap();
    assert_eq!(r.makespan.as_ps(), predicted / 1_000_000 * 1_000_000);
    assert_eq!(r.messages.total(), summary["messages"].as_u64().unwrap());
    let sts_text = read(&sts);
    assert!(sts_text.starts_with("PROJECTIONS_ID\nVERSION 11.0\n"));
    assert!(
        sts_text.contains("ENTRY CHARE 1 \"recvGhost()\" 0 0"),
        "{sts_text}"
    );
    let log0 = read(&out.join("projections/predicted.0.log"));
    let first = log0.lines().next().unwrap();
    assert_eq!(
        first,
        format!("PROJECTIONS-RECORD {}", log0.lines().count() - 1)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn csv_summaries_add_up_and_outputs_are_deterministic() {
    let dir = tmpdir("out-csv");
    let out = replay_out(&dir, "hops:topo=mesh:3x2,lat=1us,hop=100ns,bw=2GB/s");
    let summary: Value = serde_json::from_str(&read(&out.join("summary.json"))).unwrap();
    let rows = |f: &str| -> Vec<Vec<String>> {
        read(&out.join(f))
            .lines()
            .skip(1)
            .map(|l| l.split(',').map(String::from).collect())
            .collect()
    };
    let secs = |s: &str| -> u64 {
        let (i, f) = s.split_once('.').unwrap();
        i.parse::<u64>().unwrap() * 1_000_000_000_000 + f.parse::<u64>().unwrap()
    };
    let pe = rows("pe.csv");
    assert_eq!(pe.len(), 6);
    let busy: u64 = pe.iter().map(|r| secs(&r[2])).sum();
    assert_eq!(busy, summary["busy_ps_total"].as_u64().unwrap());
    let blocks: u64 = pe.iter().map(|r| r[1].parse::<u64>().unwrap()).sum();
    assert_eq!(blocks, summary["blocks"].as_u64().unwrap());
    let entries = rows("entries.csv");
    let eb: u64 = entries.iter().map(|r| r[2].parse::<u64>().unwrap()).sum();
    assert_eq!(eb, blocks);
    let remote: u64 = entries.iter().map(|r| r[7].parse::<u64>().unwrap()).sum();
    assert_eq!(remote, summary["remote_messages"].as_u64().unwrap());
    let its = rows("iterations.csv");
    assert_eq!(its.len(), summary["iterations"].as_u64().unwrap() as usize);
    let last_end = secs(&its.last().unwrap()[1]);
    assert!(last_end <= summary["makespan_ps"].as_u64().unwrap());
    assert!(read(&out.join("links.csv")).starts_with("kind,node,port"));
    // --report: the machine plot lays the 3x2 mesh out, for the whole run and in six
    // snapshots (and the communication matrix is 6 x 6 cells).
    let html = read(&out.join("report.html"));
    assert!(html.contains("3x2 mesh"));
    assert_eq!(html.matches("class=\"node\"").count(), 6 * (1 + 6) + 6 * 6);

    // Same inputs, same bytes in every file.
    let first: Vec<(String, Vec<u8>)> = walk(&out);
    let o = whatif(&[
        "replay",
        dir.join("s.trace").to_str().unwrap(),
        "--net",
        "hops:topo=mesh:3x2,lat=1us,hop=100ns,bw=2GB/s",
        "--out",
        dir.join("second").to_str().unwrap(),
        "--report",
        "-q",
    ]);
    assert!(o.status.success());
    let second = walk(&dir.join("second"));
    // --report adds the analysis (its reproduce commands do not name the folder).
    assert!(first.iter().any(|(n, _)| n == "analysis.json"));
    assert!(first.iter().any(|(n, _)| n == "critical_path.csv"));
    assert_eq!(first.len(), second.len());
    for ((n1, b1), (n2, b2)) in first.iter().zip(&second) {
        assert_eq!(n1, n2);
        if n1 == safe_output::MARKER {
            // The finished-run marker records the command line, which names the folder.
            continue;
        }
        assert!(b1 == b2, "{n1} differs between two runs");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Every file under `root` with its bytes, by relative path.
fn walk(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "report.html") {
                // The report names its folder; the data files are what must match.
                continue;
            } else {
                let rel = p.strip_prefix(root).unwrap().display().to_string();
                v.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    v.sort();
    v
}

/// Per-block outputs within a budget: a tiny `--trace-budget` keeps the representative PEs
/// (and the critical path's) in trace.json and timeline.csv, says so in notes.txt and the
/// report, while the summaries and the report's overview still cover every PE; an explicit
/// PE list and a window keep exactly what they name.
#[test]
fn per_block_outputs_stay_within_their_budget_and_say_what_they_left_out() {
    let dir = tmpdir("out-budget");
    let full = replay_out(&dir, "latency:lat=2us");
    let all = timeline(&full);
    let t = dir.join("s.trace");
    let run = |name: &str, extra: &[&str]| {
        let out = dir.join(name);
        let mut args = vec![
            "replay",
            t.to_str().unwrap(),
            "--net",
            "latency:lat=2us",
            "--out",
            out.to_str().unwrap(),
            "--report",
            "-q",
        ];
        args.extend_from_slice(extra);
        let o = whatif(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out
    };
    // Within the default budget nothing is left out.
    assert!(!full.join("notes.txt").exists());
    // 440 blocks make about 142 KiB; the 4 PEs kept (3 representatives and the path's)
    // about 95 KiB.
    let small = run("small", &["--trace-budget", "100KiB"]);
    let notes = read(&small.join("notes.txt"));
    assert!(notes.contains("--trace-pes all"), "{notes}");
    let kept = timeline(&small);
    assert!(
        !kept.is_empty() && kept.len() < all.len(),
        "{} of {}",
        kept.len(),
        all.len()
    );
    let pes: std::collections::BTreeSet<u64> = kept.values().map(|v| v.0).collect();
    // Every kept row is the full run's row, and every block of a kept PE is there.
    for (b, v) in &kept {
        assert_eq!(all[b], *v, "block {b}");
    }
    for (b, v) in &all {
        assert_eq!(
            kept.contains_key(b),
            pes.contains(&v.0),
            "block {b} on PE {}",
            v.0
        );
    }
    // The representatives of clusters.csv are among the kept PEs.
    let clusters = read(&small.join("clusters.csv"));
    for l in clusters.lines().skip(1) {
        let f: Vec<&str> = l.split(',').collect();
        if f[2] != "member" {
            assert!(pes.contains(&f[0].parse().unwrap()), "{l}");
        }
    }
    // trace.json holds the same blocks, and flows only between kept blocks.
    let doc: Value = serde_json::from_str(&read(&small.join("trace.json"))).unwrap();
    let xs: Vec<u64> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| e["args"]["block"].as_u64().unwrap())
        .collect();
    assert_eq!(xs.len(), kept.len());
    assert!(xs.iter().all(|b| kept.contains_key(b)));
    // The report says so and still draws every PE: its overview and summaries are the full
    // run's (overview.csv, pe.csv and the rest do not depend on the selection).
    let html = read(&small.join("report.html"));
    assert!(html.contains("class=\"note\"") && html.contains("--trace-pes all"));
    for f in ["overview.csv", "pe.csv", "usage.csv", "time_profile.csv"] {
        assert_eq!(
            read(&small.join(f)),
            read(&full.join(f)),
            "{f} does not depend on the selection"
        );
    }
    // An explicit list and a window.
    let (t0, t1) = (20_000_000u64, 60_000_000u64); // 20 us .. 60 us
    let chosen = run(
        "chosen",
        &["--trace-pes", "1,3-4", "--trace-window", "20us..60us"],
    );
    let kept = timeline(&chosen);
    let want: Vec<u64> = all
        .iter()
        .filter(|(_, v)| {
            [1, 3, 4].contains(&v.0) && v.1 < t1 && (v.2 > t0 || (v.1 == v.2 && v.1 >= t0))
        })
        .map(|(b, _)| *b)
        .collect();
    assert!(!want.is_empty());
    assert_eq!(kept.len(), want.len());
    assert!(want.iter().all(|b| kept.contains_key(b)));
    assert!(
        !chosen.join("notes.txt").exists(),
        "asked for, nothing to note"
    );
    // Bad selections are clear errors.
    for (flag, v, says) in [
        ("--trace-pes", "3-1", "low to high"),
        ("--trace-window", "5us..1us", "end after it starts"),
        ("--trace-window", "5us", "T0..T1"),
    ] {
        let o = whatif(&[
            "replay",
            t.to_str().unwrap(),
            "--out",
            dir.join("bad").to_str().unwrap(),
            flag,
            v,
        ]);
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{e}");
        assert!(e.contains(says), "{e}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `replay --out --report` of a repeated trace (two replays, no timeline; the per-block files
/// written from the kept PEs' blocks only, `Repeated::subset`) writes the same files, byte
/// for byte, as the replay of its expansion with a timeline: below the Projections limit
/// (every PE kept) and above it (100,000 PEs: the representatives and the critical path's
/// PEs kept, the logs naming senders on PEs left out).
#[test]
fn a_repeated_trace_writes_the_same_outputs_as_its_expansion() {
    let d = tmpdir("repeated-outputs");
    for (dims, iters, jitter) in [([4u32, 3, 2], 3, "0.2"), ([50, 50, 40], 1, "0")] {
        let p = scenarios::SynthParams {
            iters,
            jitter: sim_core::Ratio::parse(jitter).unwrap(),
            seed: 3,
            ..scenarios::SynthParams::default()
        };
        let rep = scenarios::halo_repeated(&dims, true, &p).unwrap();
        assert!(!rep.is_flat());
        let (a, b) = (d.join("rep.trace"), d.join("flat.trace"));
        trace::write_repeated_file(&rep, &a, trace::Format::Binary).unwrap();
        trace::write_trace_file(&rep.expand(), &b, trace::Format::Binary).unwrap();
        let out = |t: &Path, name: &str| {
            let dir = d.join(name);
            let o = whatif(&[
                "replay",
                t.to_str().unwrap(),
                "--net",
                "alphabeta:lat=1us,bw=10GB/s",
                "--out",
                dir.to_str().unwrap(),
                "--report",
                "-q",
            ]);
            assert!(o.status.success(), "{}", stderr(&o));
            dir
        };
        let (x, y) = (out(&a, "out-rep"), out(&b, "out-flat"));
        let mut files = Vec::new();
        let mut stack = vec![x.clone()];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    files.push(p.strip_prefix(&x).unwrap().to_path_buf());
                }
            }
        }
        files.sort();
        assert!(files.len() > 20, "{files:?}");
        for f in &files {
            let name = f.to_string_lossy();
            if name == "report.html" || name == "whatif-complete.json" {
                continue; // they name the output folder
            }
            let (p, q) = (
                std::fs::read(x.join(f)).unwrap(),
                std::fs::read(y.join(f)).unwrap(),
            );
            // (The analysis's commands name the trace file.)
            let p = String::from_utf8_lossy(&p).replace("rep.trace", "flat.trace");
            let q = String::from_utf8_lossy(&q).into_owned();
            assert!(
                p == q,
                "{dims:?}: {name} differs ({} vs {} bytes)",
                p.len(),
                q.len()
            );
        }
        let logs = std::fs::read_dir(x.join("projections")).unwrap().count();
        if dims[0] == 50 {
            assert!(logs < 100, "above the limit only some logs: {logs}");
            let notes = std::fs::read_to_string(x.join("notes.txt")).unwrap();
            assert!(notes.contains("representative PEs only"), "{notes}");
        } else {
            assert_eq!(logs, 4 * 3 * 2 + 1, "every PE's log and the .sts");
        }
    }
    std::fs::remove_dir_all(&d).ok();
}

/// `.zst` outputs of `gen`, `emulate` and `import` are compressed, and every command reads
/// them as it reads the plain files.
#[test]
fn compressed_traces_replay_like_plain_ones() {
    let dir = tmpdir("zst");
    let p = |n: &str| dir.join(n).to_str().unwrap().to_string();
    let run = |args: &[&str]| {
        let o = whatif(args);
        assert!(
            o.status.success(),
            "whatif {}: {}",
            args.join(" "),
            stderr(&o)
        );
        o.stdout
    };
    let emulate = |out: &str| {
        let a = [
            "emulate",
            "stencil3d",
            "--pes",
            "8",
            "--set",
            "grid=32x32x16",
            "--set",
            "block=8x8x8",
            "--set",
            "iters=3",
            "--flat",
            "--out",
            out,
            "-q",
        ];
        run(&a);
    };
    emulate(&p("e.trace"));
    emulate(&p("e.trace.zst"));
    let halo = [
        "gen",
        "halo3d",
        "--dims",
        "4x4x4",
        "--iters",
        "5",
        "--compute",
        "10us",
        "--bytes",
        "4096",
    ];
    for out in ["h.trace", "h.trace.zst", "h.jsonl.zst"] {
        let mut a = halo.to_vec();
        let o = p(out);
        a.extend_from_slice(&["--out", &o, "-q"]);
        run(&a);
    }
    for (plain, packed) in [
        ("e.trace", "e.trace.zst"),
        ("h.trace", "h.trace.zst"),
        ("h.trace", "h.jsonl.zst"),
    ] {
        let a = std::fs::read(dir.join(plain)).unwrap();
        let b = std::fs::read(dir.join(packed)).unwrap();
        assert_eq!(
            b[..4],
            [0x28, 0xb5, 0x2f, 0xfd],
            "{packed} is a Zstandard stream"
        );
        if !packed.contains("jsonl") {
            assert!(
                b.len() * 4 < a.len(),
                "{packed}: {} vs {} bytes",
                b.len(),
                a.len()
            );
        }
        for net in [
            "alphabeta:lat=1us,bw=10GB/s",
            "flow:topo=torus:4x4x4,lat=1us,bw=10GB/s",
        ] {
            let x = run(&["replay", &p(plain), "--net", net, "--json", "-q"]);
            let y = run(&["replay", &p(packed), "--net", net, "--json", "-q"]);
            assert_eq!(x, y, "{plain} and {packed} on {net}");
        }
    }
    let x = run(&["inspect", &p("e.trace")]);
    let y = run(&["inspect", &p("e.trace.zst")]);
    assert_eq!(
        String::from_utf8_lossy(&x).replace("e.trace", "e.trace.zst"),
        String::from_utf8_lossy(&y)
    );
}
