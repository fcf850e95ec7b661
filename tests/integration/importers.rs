//! Importers on real traces from other projects (skipped when the shared data is absent), on
//! hand-written inputs with closed-form answers, and on broken inputs.

use crate::cli::{stderr, tmpdir, whatif};
use crate::{run_with, shared_data, us};
use importers::{Format, ImportError, ImportOptions, import};
use replay::ReplayConfig;
use sim_core::{SimDuration, SimTime};
use std::path::Path;

fn imp(format: Format, path: &Path) -> importers::Imported {
    import(format, path, &ImportOptions::default())
        .unwrap_or_else(|e| panic!("import {}: {e}", path.display()))
}

/// Asserts that some import note starts with each of `prefixes`.
fn assert_notes(imported: &importers::Imported, prefixes: &[&str]) {
    for want in prefixes {
        assert!(
            imported.notes.iter().any(|n| n.starts_with(want)),
            "no note starts with {want:?}: {:?}",
            imported.notes
        );
    }
}

/// The block that sends each message.
fn senders(t: &trace::Trace) -> std::collections::HashMap<trace::MsgId, trace::BlockId> {
    let mut sender = std::collections::HashMap::new();
    for b in t.block_ids() {
        for s in t.sends(b) {
            sender.insert(s.msg, b);
        }
    }
    sender
}

/// How far the faithful replay (recorded order, recorded delays) ends from the recorded end
/// (the latest recorded block end), in ps.
fn faithful_miss_ps(t: &trace::Trace) -> u64 {
    let faithful = run_with(t, "recorded", &recorded_order()).makespan.as_ps();
    let recorded = t
        .iter_blocks()
        .map(|b| b.recorded_start.unwrap().as_ps() + b.duration.as_ps())
        .max()
        .unwrap();
    faithful.abs_diff(recorded)
}

/// Each block's start and end in a replay run with `timeline`.
fn block_times(t: &trace::Trace, r: &replay::ReplayReport) -> (Vec<SimTime>, Vec<SimTime>) {
    let mut start = vec![SimTime::ZERO; t.num_blocks()];
    let mut finish = vec![SimTime::ZERO; t.num_blocks()];
    for rec in r.timeline.as_ref().expect("a timeline") {
        start[rec.block as usize] = rec.start;
        finish[rec.block as usize] = rec.end;
    }
    (start, finish)
}

// ---------------------------------------------------------------------------------------------
// BigSim

#[test]
fn bgtrace_j0_counts_match_the_files() {
    let Some(dir) = shared_data("bigsim-jacobi2d/traceJ0") else {
        return;
    };
    let (sum, tls, counts) = importers::bgtrace::read_set(&dir).unwrap();
    assert_eq!(sum.total_procs, 64);
    assert_eq!(sum.shape, [4, 4, 4]);
    assert_eq!(sum.emulating_pes, 8);
    assert_eq!(tls.len(), 64);
    // bgTrace0 holds 8 of the 64 timelines: the counts the issue quotes.
    let c0 = &counts[0];
    assert_eq!(
        (
            c0.timelines,
            c0.blocks,
            c0.messages,
            c0.p2p,
            c0.broadcast_except,
            c0.broadcast
        ),
        (8, 1739, 346, 326, 18, 2)
    );
    // The whole set.
    let blocks: usize = counts.iter().map(|c| c.blocks).sum();
    let msgs: usize = counts.iter().map(|c| c.messages).sum();
    assert_eq!((blocks, msgs), (13910, 2552));

    let t = imp(Format::BgTrace, &dir).trace;
    assert_eq!(t.objects.len(), 64);
    assert_eq!(t.meta.recorded_pes, 64);
    assert_eq!(t.num_blocks(), 13910);
    assert_eq!(t.num_sends(), 2552);
    let s = trace::TraceSummary::of(&t);
    assert_eq!(
        (s.point_to_point, s.broadcast, s.broadcast_except),
        (2532, 2, 18)
    );
}

#[test]
fn bgtrace_j0_recorded_schedule_is_reproduced() {
    let Some(dir) = shared_data("bigsim-jacobi2d/traceJ0") else {
        return;
    };
    let imported = imp(Format::BgTrace, &dir);
    let recorded_end = imported.recorded_end.unwrap();
    let t = imported.trace;
    let cfg = ReplayConfig {
        recorded_order: true,
        ..ReplayConfig::default()
    };
    let r = run_with(&t, "recorded", &cfg);
    // Every field is rounded to the picosecond on import, independently; the differences
    // along a timeline stay below 1 ps per block.
    let diff = r.makespan.as_ps().abs_diff(recorded_end.as_ps());
    assert!(
        diff <= 100,
        "replayed {} vs recorded {} (diff {diff} ps)",
        r.makespan,
        recorded_end
    );
    assert_eq!(r.blocks, 13910);
    // Re-deciding the order message by message (the BigSim correction's rule) finishes
    // earlier: the emulator ran some blocks long after their messages had arrived.
    let free = run_with(&t, "recorded", &ReplayConfig::default());
    assert!(free.makespan < r.makespan);
    // And any network model completes.
    let zero = run_with(&t, "latency:lat=0", &ReplayConfig::default());
    assert!(zero.makespan > SimTime::ZERO && zero.blocks == 13910);
}

#[test]
fn bgtrace_j1_imports_and_replays() {
    let Some(dir) = shared_data("bigsim-jacobi2d/traceJ1") else {
        return;
    };
    let imported = imp(Format::BgTrace, &dir.join("bgTrace"));
    assert_eq!(imported.trace.objects.len(), 32);
    let cfg = ReplayConfig {
        recorded_order: true,
        ..ReplayConfig::default()
    };
    let r = run_with(&imported.trace, "recorded", &cfg);
    let diff = r
        .makespan
        .as_ps()
        .abs_diff(imported.recorded_end.unwrap().as_ps());
    assert!(diff <= 100, "diff {diff} ps");
    run_with(
        &imported.trace,
        "alphabeta:lat=1us,bw=1GB/s",
        &ReplayConfig::default(),
    );
}

#[test]
fn bgtrace_cli_import_inspect_replay() {
    let Some(dir) = shared_data("bigsim-jacobi2d/traceJ0") else {
        return;
    };
    let out = tmpdir("bgtrace").keep().join("j0.trace");
    let o = whatif(&[
        "import",
        "bgtrace",
        dir.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("1739 blocks, 346 message entries (326 point-to-point, 18 broadcast-except, 2 broadcast)"), "{err}");
    let o = whatif(&["inspect", out.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("objects       64"), "{text}");
    let o = whatif(&[
        "replay",
        out.to_str().unwrap(),
        "--net",
        "latency:lat=0",
        "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = whatif(&[
        "replay",
        dir.to_str().unwrap(),
        "--format",
        "bgtrace",
        "--net",
        "recorded",
        "--recorded-order",
        "--json",
        "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// README tour step 5: each what-if is compared with a run under the same ordering rule, and
/// a slower network is slower under both (figures as printed in the README).
#[test]
fn readme_step5_compares_like_with_like() {
    let Some(dir) = shared_data("bigsim-jacobi2d/traceJ0") else {
        return;
    };
    let makespan = |extra: &[&str]| -> String {
        let mut args = vec!["replay", dir.to_str().unwrap(), "--format", "bgtrace", "-q"];
        args.extend_from_slice(extra);
        let o = whatif(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        format!("{:.3}", v["makespan_s"].as_f64().unwrap() * 1e3)
    };
    let rec = makespan(&["--net", "recorded", "--recorded-order", "--json"]);
    let rec_slow = makespan(&["--net", "latency:lat=5us", "--recorded-order", "--json"]);
    let md = makespan(&["--net", "recorded", "--json"]);
    let md_slow = makespan(&["--net", "latency:lat=5us", "--json"]);
    assert_eq!(
        [rec.as_str(), &rec_slow, &md, &md_slow],
        ["2.832", "2.936", "2.563", "2.618"]
    );
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    for (net, ordered, v) in [
        ("--net recorded ", true, &rec),
        ("--net latency:lat=5us ", true, &rec_slow),
        ("--net recorded ", false, &md),
        ("--net latency:lat=5us ", false, &md_slow),
    ] {
        let line = format!("{net}(ordered: {ordered})");
        let l = readme
            .lines()
            .find(|l| {
                l.starts_with("whatif replay j0.trace")
                    && l.contains(net)
                    && l.contains("--recorded-order") == ordered
            })
            .unwrap_or_else(|| panic!("README has no j0 line with `{line}`"));
        assert!(
            l.ends_with(&format!("{v} ms")),
            "README line `{l}` should end with {v} ms"
        );
    }
}

/// A minimal hand-made log set: 2 target processors, one emulating PE; VP 0 runs a block of
/// 1 us that sends 100 bytes to VP 1 at 0.5 us; VP 1 receives it at 0.7 us and runs 2 us.
fn tiny_bgtrace(dir: &Path) {
    fn header(v: &mut Vec<u8>) {
        v.extend_from_slice(&[0x10, 0xea, 0xbd, 0xf9, 1, 1, 2, 4, 8, 16, 1, 4, 8, 1, 1, 8]);
    }
    fn int(v: &mut Vec<u8>, x: i32) {
        v.extend_from_slice(&x.to_le_bytes());
    }
    fn f(v: &mut Vec<u8>, x: f64) {
        v.extend_from_slice(&x.to_le_bytes());
    }
    #[allow(clippy::too_many_arguments)]
    fn log(
        v: &mut Vec<u8>,
        seq: i32,
        src: (i32, i32),
        recv: f64,
        start: f64,
        exec: f64,
        name: &str,
        msgs: &[(i32, i32, f64, f64, i32)],
    ) {
        int(v, 0);
        int(v, seq);
        int(v, src.0);
        int(v, src.1);
        v.extend_from_slice(&0u16.to_le_bytes());
        int(v, 0);
        v.extend_from_slice(&(-1i16).to_le_bytes());
        for x in [recv, recv, start, exec, start + exec] {
            f(v, x);
        }
        v.push(0);
        let mut n = [0u8; 20];
        n[..name.len()].copy_from_slice(name.as_bytes());
        v.extend_from_slice(&n);
        for _ in 0..4 {
            int(v, -1);
        }
        int(v, msgs.len() as i32);
        for &(id, dst, send, recv, size) in msgs {
            int(v, id);
            int(v, dst);
            f(v, send);
            f(v, recv);
            v.extend_from_slice(&0i16.to_le_bytes());
            int(v, size);
            int(v, 1);
        }
        int(v, 0); // events
        int(v, 0); // backward
        int(v, 0); // forward
    }
    let mut s = Vec::new();
    header(&mut s);
    for x in [2, 2, 1, 1, 1, 1, 0, 0, 1, 6, 1] {
        int(&mut s, x);
    }
    std::fs::write(dir.join("bgTrace"), &s).unwrap();
    let mut p = Vec::new();
    header(&mut p);
    int(&mut p, 2);
    let off0 = p.len();
    int(&mut p, 0);
    int(&mut p, 0);
    let t0 = p.len();
    int(&mut p, 1);
    log(
        &mut p,
        0,
        (-1, -1),
        0.0,
        0.0,
        1e-6,
        "compute",
        &[(0, 1, 0.5e-6, 0.7e-6, 100)],
    );
    let t1 = p.len();
    int(&mut p, 1);
    log(&mut p, 0, (0, 0), 0.7e-6, 0.7e-6, 2e-6, "recv", &[]);
    p[off0..off0 + 4].copy_from_slice(&(t0 as i32).to_le_bytes());
    p[off0 + 4..off0 + 8].copy_from_slice(&(t1 as i32).to_le_bytes());
    std::fs::write(dir.join("bgTrace0"), &p).unwrap();
}

#[test]
fn bgtrace_hand_made_gives_closed_form() {
    let dir = tmpdir("bg-tiny");
    tiny_bgtrace(&dir);
    let t = imp(Format::BgTrace, &dir).trace;
    assert_eq!((t.objects.len(), t.num_blocks(), t.num_sends()), (2, 2, 1));
    // Recorded delay: 0.7 - 0.5 = 0.2 us; end = 0.5 + 0.2 + 2 = 2.7 us.
    let r = run_with(&t, "recorded", &ReplayConfig::default());
    assert_eq!(r.makespan, SimTime::from_ps(2_700_000));
    // alphabeta: 0.5 us + 1 us + 100 B at 100 MB/s (1 us) + 2 us = 4.5 us.
    let r = run_with(&t, "alphabeta:lat=1us,bw=100MB/s", &ReplayConfig::default());
    assert_eq!(r.makespan, SimTime::from_ps(4_500_000));
}

#[test]
fn bgtrace_bad_inputs_are_reported_with_offsets() {
    let dir = tmpdir("bg-bad");
    tiny_bgtrace(&dir);
    let good = std::fs::read(dir.join("bgTrace0")).unwrap();
    // Truncated in the middle of the second timeline.
    std::fs::write(dir.join("bgTrace0"), &good[..good.len() - 10]).unwrap();
    let e = import(Format::BgTrace, &dir, &ImportOptions::default()).unwrap_err();
    assert!(matches!(e, ImportError::Binary { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("bgTrace0: byte offset") && msg.contains("end of file"),
        "{msg}"
    );
    // Big-endian header.
    let mut be = good.clone();
    be[10] = 0;
    std::fs::write(dir.join("bgTrace0"), &be).unwrap();
    let e = import(Format::BgTrace, &dir, &ImportOptions::default()).unwrap_err();
    assert!(matches!(e, ImportError::Unsupported { .. }), "{e}");
    assert!(e.to_string().contains("big-endian"), "{e}");
    // Not a BigSim file at all.
    std::fs::write(dir.join("bgTrace0"), b"hello").unwrap();
    let e = import(Format::BgTrace, &dir, &ImportOptions::default()).unwrap_err();
    assert!(e.to_string().contains("magic"), "{e}");
    // Missing file.
    std::fs::remove_file(dir.join("bgTrace0")).unwrap();
    let e = import(Format::BgTrace, &dir, &ImportOptions::default()).unwrap_err();
    assert!(matches!(e, ImportError::Inconsistent { .. }), "{e}");
    assert!(e.to_string().contains("file of PE 0"), "{e}");
    assert!(e.to_string().contains("bgTrace0) does not exist"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// GOAL

/// LogGOPS by hand for a broadcast tree given as GOAL text whose ranks only `recv` once and
/// then `send` (no calc): a rank whose receive completes at `t` starts its k-th send at
/// `t + k * max(o, g + (s-1)G)`; that message completes at the child `o + L + o + (s-1)G`
/// after the send starts. Returns the latest completion (ns).
fn loggops_tree_by_hand(text: &str, s: u64) -> u64 {
    let (l, o, g, gb) = (2500u64, 1500u64, 1000u64, 6u64);
    let mut sends: Vec<Vec<usize>> = Vec::new();
    let mut cur = 0usize;
    for line in text.lines() {
        let t: Vec<&str> = line.split_whitespace().collect();
        match t.as_slice() {
            ["num_ranks", n] => sends = vec![Vec::new(); n.parse().unwrap()],
            ["rank", r, "{"] => cur = r.parse().unwrap(),
            [_, "send", _, "to", to, ..] => sends[cur].push(to.parse().unwrap()),
            _ => {}
        }
    }
    let mut done = vec![None; sends.len()];
    done[0] = Some(0u64);
    let mut queue = vec![0usize];
    let mut end = 0;
    while let Some(r) = queue.pop() {
        let t = done[r].unwrap();
        for (k, &c) in sends[r].iter().enumerate() {
            let start = t + k as u64 * o.max(g + (s - 1) * gb);
            end = end.max(start + o);
            let at = start + o + l + o + (s - 1) * gb;
            done[c] = Some(at);
            end = end.max(at);
            queue.push(c);
        }
    }
    end
}

#[test]
fn goal_trees_replay_as_loggops_by_hand() {
    let Some(dir) = shared_data("goal") else {
        return;
    };
    for (file, ranks, size) in [
        ("binary_tree_32.goal", 32, 1),
        ("binomialtreebcast_128_1024.goal", 128, 1024),
    ] {
        let path = dir.join(file);
        let t = imp(Format::Goal, &path).trace;
        assert_eq!(t.objects.len(), ranks);
        // A broadcast tree: every rank but the root receives once.
        assert_eq!(t.num_sends(), ranks - 1, "{file}");
        let text = std::fs::read_to_string(&path).unwrap();
        let want = loggops_tree_by_hand(&text, size);
        let r = run_with(&t, "loggops", &ReplayConfig::default());
        assert_eq!(r.makespan, SimTime::from_ps(want * 1000), "{file}");
        let r = run_with(&t, "alphabeta:lat=1us,bw=1GB/s", &ReplayConfig::default());
        assert_eq!(r.blocks, t.num_blocks() as u64);
    }
}

fn goal_file(name: &str, text: &str) -> std::path::PathBuf {
    let p = tmpdir("goal").keep().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn goal_pingpong_and_rendezvous_closed_forms() {
    // 2-rank ping-pong of 1024 B: 2 * (o + L + o + (s-1)G) with LogGOPSim's defaults.
    let p = goal_file(
        "pp.goal",
        "num_ranks 2\n\nrank 0 {\nl1: send 1024b to 1 tag 7\nl2: recv 1024b from 1 tag 7\nl2 requires l1\n}\n\
         rank 1 {\nl1: recv 1024b from 0 tag 7 // first\nl2: send 1024b to 0 tag 7 cpu 0 nic 0\nl2 requires l1\n}\n",
    );
    let t = imp(Format::Goal, &p).trace;
    let r = run_with(&t, "loggops", &ReplayConfig::default());
    let one_way = 1500 + 2500 + 1500 + 1023 * 6;
    assert_eq!(r.makespan, SimTime::from_ps(2 * one_way * 1000));

    // Rendezvous: rank 0's calc requires a 100 kB send, which completes only when rank 1
    // (busy for 50 us first) has received it.
    let text = "num_ranks 2\nrank 0 {\nl1: send 100000b to 1 tag 0\nl2: calc 1000\nl2 requires l1\n}\n\
                rank 1 {\nl1: calc 50000\nl2: recv 100000b from 0 tag 0\nl2 requires l1\n}\n";
    let p = goal_file("rdv.goal", text);
    let t = imp(Format::Goal, &p).trace;
    let r = run_with(&t, "loggops", &ReplayConfig::default());
    let recv_done = 50_000 + 1500 + 99_999 * 6;
    assert_eq!(r.makespan, SimTime::from_ps((recv_done + 1000) * 1000));
    // The same schedule with a larger eager limit: rank 0 finishes early, rank 1 decides.
    let opts = ImportOptions {
        eager_limit: 1 << 20,
        ..ImportOptions::default()
    };
    let t = import(Format::Goal, &p, &opts).unwrap().trace;
    let r = run_with(&t, "loggops", &ReplayConfig::default());
    assert_eq!(r.makespan, SimTime::from_ps(recv_done * 1000));
    // irequires: l2 may start when l1 could (both at 0 here), so the sends overlap l1's wait.
    let text = "num_ranks 2\nrank 0 {\nl1: recv 8b from 1 tag 0\nl2: send 8b to 1 tag 0\nl2 irequires l1\n}\n\
                rank 1 {\nl1: recv 8b from 0 tag 0\nl2: send 8b to 0 tag 0\nl2 irequires l1\n}\n";
    let t = imp(Format::Goal, &goal_file("ireq.goal", text)).trace;
    let r = run_with(&t, "loggops", &ReplayConfig::default());
    assert_eq!(
        r.makespan,
        SimTime::from_ps((1500 + 2500 + 1500 + 7 * 6) * 1000)
    );
}

#[test]
fn goal_export_round_trip_keeps_the_prediction() {
    let dir = tmpdir("goal-export");
    for (kind, extra) in [("pingpong", vec![]), ("ring", vec!["--ranks", "5"])] {
        let tr = dir.join(format!("{kind}.trace"));
        let g = dir.join(format!("{kind}.goal"));
        let mut args = vec![
            "gen",
            kind,
            "--iters",
            "4",
            "--bytes",
            "2000",
            "--out",
            tr.to_str().unwrap(),
        ];
        args.extend(extra);
        assert!(whatif(&args).status.success());
        let o = whatif(&[
            "export",
            "goal",
            tr.to_str().unwrap(),
            "--out",
            g.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let original = trace::read_trace_file(&tr).unwrap();
        let back = imp(Format::Goal, &g).trace;
        for net in ["loggops", "alphabeta:lat=1us,bw=1GB/s"] {
            let a = run_with(&original, net, &ReplayConfig::default());
            let b = run_with(&back, net, &ReplayConfig::default());
            assert_eq!(a.makespan, b.makespan, "{kind} on {net}");
        }
    }
}

#[test]
fn goal_errors_name_the_line() {
    let cases = [
        (
            "num_ranks 2\nrank 0 {\nl1: sned 8b to 1\n}\n",
            ":3: expected send, recv or calc",
        ),
        (
            "num_ranks 2\nrank 0 {\nl1: send 8b to 5\n}\n",
            ":3: expected a destination rank (0..2)",
        ),
        (
            "num_ranks 2\nrank 0 {\nl1: send 8b to 1\n}\nrank 1 {\n}\n",
            ":3: send `l1` from rank 0 to rank 1 tag 0 has no matching recv",
        ),
        (
            "num_ranks 1\nrank 0 {\nl1: calc 5\nl1 requires l9\n}\n",
            ":4: expected a label defined in rank 0",
        ),
        (
            "num_ranks 2\nrank 0 {\nl1: recv 8b from -1\n}\n",
            "ANY_SOURCE",
        ),
        // Two rendezvous sends, each waiting for the other side's receive: a deadlock.
        (
            "num_ranks 2\nrank 0 {\nl1: send 99999b to 1\nl2: recv 99999b from 1\nl2 requires l1\n}\nrank 1 {\nl1: send 99999b to 0\nl2: recv 99999b from 0\nl2 requires l1\n}\n",
            "cycle",
        ),
        ("rank 0 {\n}\n", ":1: expected `num_ranks N` first"),
        (
            "num_ranks 1\nrank 0 {\nl1: calc 5\n",
            "expected `}` closing the last rank",
        ),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let p = goal_file(&format!("bad{i}.goal"), text);
        let e = import(Format::Goal, &p, &ImportOptions::default()).unwrap_err();
        assert!(e.to_string().contains(want), "case {i}: {e}");
    }
    // Both ranks receive before they send: imports (the blocks are fine) but cannot finish;
    // the replay names the stuck blocks.
    let text = "num_ranks 2\nrank 0 {\nl1: recv 8b from 1\nl2: send 8b to 1\nl2 requires l1\n}\n\
                rank 1 {\nl1: recv 8b from 0\nl2: send 8b to 0\nl2 requires l1\n}\n";
    let t = imp(Format::Goal, &goal_file("deadlock.goal", text)).trace;
    let mut net = "loggops"
        .parse::<network_models::NetSpec>()
        .unwrap()
        .build();
    let e = replay::replay(&t, net.as_mut(), &ReplayConfig::default()).unwrap_err();
    assert!(matches!(e, replay::ReplayError::Stuck(_)), "{e}");
}

// ---------------------------------------------------------------------------------------------
// SimGrid time-independent traces

fn ti_file(name: &str, text: &str) -> std::path::PathBuf {
    let p = tmpdir("ti").keep().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn simgrid_32_ranks_import_and_replay() {
    let Some(dir) = shared_data("simgrid-ti") else {
        return;
    };
    // The index lists paths relative to its own folder; the test runs from elsewhere.
    let imported = imp(Format::SimGrid, &dir.join("smpi_replay.txt"));
    let t = &imported.trace;
    assert_eq!(t.objects.len(), 32);
    // 32 ranks x (45 compute, 16 barrier, 9 bcast, 6 allreduce, 5 alltoall, 2 alltoallv, 1 gather).
    assert!(
        imported.notes[0].contains(
            "192 allreduce, 160 alltoall, 64 alltoallv, 512 barrier, 288 bcast, 480 comm_size, 1440 compute, 32 finalize, 32 gather, 32 init"
        ),
        "{:?}",
        imported.notes
    );
    // Rank 0's compute alone, at 1 Gflop/s, bounds the makespan from below.
    let text = std::fs::read_to_string(dir.join("ti_traces_32_1/ti_trace0.txt")).unwrap();
    let flops: f64 = text
        .lines()
        .filter_map(|l| l.strip_prefix("0 compute "))
        .map(|v| v.trim().parse::<f64>().unwrap())
        .sum();
    let bound = SimTime::from_ps((flops / 1e9 * 1e12) as u64);
    for net in ["alphabeta:lat=1us,bw=1GB/s", "loggops"] {
        let r = run_with(t, net, &ReplayConfig::default());
        assert_eq!(r.blocks, t.num_blocks() as u64);
        assert!(r.makespan >= bound, "{net}: {} < {bound}", r.makespan);
    }
    // Twice the compute speed: the prediction drops, but not below half the bound.
    let fast = import(
        Format::SimGrid,
        &dir.join("smpi_replay.txt"),
        &ImportOptions {
            flops_per_s: 2e9,
            ..ImportOptions::default()
        },
    )
    .unwrap();
    let a = run_with(t, "alphabeta:lat=1us,bw=1GB/s", &ReplayConfig::default());
    let b = run_with(
        &fast.trace,
        "alphabeta:lat=1us,bw=1GB/s",
        &ReplayConfig::default(),
    );
    assert!(b.makespan < a.makespan && b.makespan.as_ps() * 2 >= bound.as_ps());
}

#[test]
fn simgrid_small_examples_all_replay() {
    let Some(dir) = shared_data("simgrid-ti/small") else {
        return;
    };
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("actions_") {
            continue;
        }
        let t = imp(Format::SimGrid, &p).trace;
        run_with(&t, "alphabeta:lat=1us,bw=1GB/s", &ReplayConfig::default());
        n += 1;
    }
    assert_eq!(n, 11);
    // actions0.txt and actions1.txt are one rank each: replay them through an index file.
    let index = ti_file(
        "index.txt",
        &format!(
            "{}\n{}\n",
            dir.join("actions0.txt").display(),
            dir.join("actions1.txt").display()
        ),
    );
    let t = imp(Format::SimGrid, &index).trace;
    assert_eq!(t.objects.len(), 2);
    // rank 1 computes 1e9 flops (1 s) between its receive and its replies.
    let r = run_with(&t, "ideal", &ReplayConfig::default());
    assert_eq!(r.makespan, SimTime::from_ps(1_000_000_000_000));
}

/// A SimGrid import with whatif's classic collectives and the eager protocol (transfers at
/// the send, sends never block, no envelope): the closed forms below predate the protocol.
fn imp_classic_eager(path: &Path) -> importers::Imported {
    import(
        Format::SimGrid,
        path,
        &ImportOptions {
            collectives: Some(importers::mpi::Collectives::Classic),
            mpi_protocol: Some(importers::mpi::MpiProtocol::EAGER),
            ..ImportOptions::default()
        },
    )
    .unwrap()
}

#[test]
fn simgrid_hand_written_closed_forms() {
    // Ping-pong of 1000 bytes.
    let pp = ti_file(
        "pp.txt",
        "0 init\n1 init\n0 send 1 0 1000\n0 recv 1 0 1000\n1 recv 0 0 1000\n1 send 0 0 1000\n0 finalize\n1 finalize\n",
    );
    let t = imp_classic_eager(&pp).trace;
    let r = run_with(&t, "alphabeta:lat=1us,bw=1GB/s", &ReplayConfig::default());
    assert_eq!(r.makespan, SimTime::from_ps(2 * (1_000_000 + 1_000_000)));
    let r = run_with(&t, "loggops", &ReplayConfig::default());
    assert_eq!(
        r.makespan,
        SimTime::from_ps(2 * (1500 + 2500 + 1500 + 999 * 6) * 1000)
    );
    // Collectives on 4 ranks, T = lat + S/bw = 2 us for 1000 B:
    // bcast (binomial, depth 2) = 2T; barrier (dissemination, 0 B) = 2 lat;
    // allreduce = reduce + bcast = 4T, then 1e6 flops (1 ms at 1 Gflop/s).
    let net = "alphabeta:lat=1us,bw=1GB/s";
    for (body, want_ps) in [
        ("bcast 1000", 4_000_000u64),
        ("barrier", 2_000_000),
        ("allreduce 1000 1e6", 8_000_000 + 1_000_000_000),
        ("alltoall 1000 1000", 3 * 2_000_000),
        ("allgather 1000 1000", 3 * 2_000_000),
        ("gather 1000 1000 2", 2_000_000),
    ] {
        let text: String = (0..4).map(|r| format!("{r} {body}\n")).collect();
        let t = imp_classic_eager(&ti_file("coll.txt", &text)).trace;
        let r = run_with(&t, net, &ReplayConfig::default());
        assert_eq!(r.makespan, SimTime::from_ps(want_ps), "{body}");
    }
    // SimGrid's default algorithms (--collectives smpi): linear barrier = 2 lat (up to rank 0,
    // back); linear reduce = T, so allreduce = T + binomial bcast 2T; linear all-to-all and
    // allgather post every send at once: T without contention.
    let smpi = ImportOptions {
        collectives: Some(importers::mpi::Collectives::Smpi),
        mpi_protocol: Some(importers::mpi::MpiProtocol::EAGER),
        ..ImportOptions::default()
    };
    for (body, want_ps) in [
        ("bcast 1000", 4_000_000u64),
        ("barrier", 2_000_000),
        ("allreduce 1000 1e6", 6_000_000 + 1_000_000_000),
        ("reduce 1000 0 3", 2_000_000),
        ("alltoall 1000 1000", 2_000_000),
        (
            "alltoallv 4000 1000 1000 1000 1000 4000 1000 1000 1000 1000",
            2_000_000,
        ),
        ("allgather 1000 1000", 2_000_000),
        ("gather 1000 1000 2", 2_000_000),
    ] {
        let text: String = (0..4).map(|r| format!("{r} {body}\n")).collect();
        let t = import(Format::SimGrid, &ti_file("coll-smpi.txt", &text), &smpi)
            .unwrap()
            .trace;
        let r = run_with(&t, net, &ReplayConfig::default());
        assert_eq!(r.makespan, SimTime::from_ps(want_ps), "smpi {body}");
    }
    // init with an argument: sizes count 8-byte doubles.
    let t = imp_classic_eager(&ti_file(
        "dbl.txt",
        "0 init 1\n1 init 1\n0 send 1 0 125\n1 recv 0 0 125\n",
    ))
    .trace;
    assert_eq!(t.all_sends()[0].bytes, 1000);
}

#[test]
fn simgrid_errors_name_the_line() {
    let cases = [
        ("0 init\n0 jump 3\n", ":2: expected a TI action"),
        (
            "0 init\n0 send 7 0 10\n",
            ":2: expected send: destination (a rank in 0..1)",
        ),
        (
            "0 send 1 0 10\n1 init\n",
            "rank 0 sends 1 messages to rank 1 with tag 0, but rank 1 receives 0",
        ),
        (
            "0 bcast 10\n1 barrier\n",
            "collective #0 is `barrier` (root 0) on rank 1 (line 2) but `bcast` (root 0) on rank 0 (line 1)",
        ),
        ("x init\n", ":1: expected `<rank> <action> ...`"),
        (
            "0 compute -5\n",
            ":1: expected compute: flops (a non-negative number)",
        ),
        ("0 init\n2 init\n", "rank 1 has no actions"),
        // Datatype ids are SimGrid 3.32's: 60 is not one.
        (
            "0 init\n0 send 0 0 10 60\n0 recv 0 0 10\n",
            ":2: expected send: a SimGrid 3.32 datatype id (0 to 59, or -1 for a derived type) as argument 4; found `60`",
        ),
        (
            "0 init\n0 recv -7 0 10 0\n",
            ":2: expected recv: source (a rank in 0..1, or -333 for any source); found `-7`",
        ),
        (
            "0 init\n0 recv 0 -3 10 0\n",
            ":2: expected recv: a tag (a number >= 0, or -444 for any tag); found `-3`",
        ),
        ("0 init\n0 waitAny\n", ":2: not supported: `waitAny`"),
        // A wildcard receive that no message can satisfy.
        (
            "0 irecv -333 5 1 1\n0 wait -333 0 5\n",
            "rank 0's receive #1 (from any source, tag 5) matches no message",
        ),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let p = ti_file(&format!("bad{i}.txt"), text);
        let e = import(Format::SimGrid, &p, &ImportOptions::default()).unwrap_err();
        assert!(e.to_string().contains(want), "case {i}: {e}");
    }
    // comm_split and comm_dup are no-ops, as in SimGrid's replay, and said so.
    let p = ti_file("split.txt", "0 init\n0 comm_split 2\n0 barrier\n");
    let imported = import(Format::SimGrid, &p, &ImportOptions::default()).unwrap();
    assert!(
        imported
            .notes
            .iter()
            .any(|n| n.contains("1 comm_split/comm_dup lines: ignored")),
        "{:?}",
        imported.notes
    );
    // An index naming a missing file.
    let idx = ti_file("idx.txt", "nothere/trace0.txt\n");
    let e = import(Format::SimGrid, &idx, &ImportOptions::default()).unwrap_err();
    assert!(e.to_string().contains("nothere/trace0.txt"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// Projections

#[test]
fn projections_hello_v3_imports_and_replays() {
    let Some(dir) = shared_data("projections-hello") else {
        return;
    };
    let imported = imp(Format::Projections, &dir.join("hello.sts"));
    let t = &imported.trace;
    assert_eq!(
        (t.objects.len(), t.num_blocks(), t.num_sends()),
        (4, 46, 53)
    );
    let s = trace::TraceSummary::of(t);
    let sayhi = s
        .entry_table
        .iter()
        .find(|e| e.name == "Hello::SayHi")
        .unwrap();
    assert_eq!(sayhi.blocks, 20);
    for (pe, n) in [(0, 102), (1, 80), (2, 74), (3, 72)] {
        let want = format!("hello.{pe}.log: {n} records");
        assert!(
            imported.notes.iter().any(|x| x.ends_with(&want)),
            "{:?}",
            imported.notes
        );
    }
    run_with(t, "latency:lat=1us", &ReplayConfig::default());
    // The recorded schedule comes back up to the clock skew between the PEs' logs: three
    // messages are processed up to 28 us "before" they were created; their delay is
    // floored at 0, which can only delay the replay, by at most 3 x 28 us.
    assert!(
        imported
            .notes
            .iter()
            .any(|x| x.contains("3 messages begin processing before their creation time"))
    );
    let cfg = ReplayConfig {
        recorded_order: true,
        ..ReplayConfig::default()
    };
    let r = run_with(t, "recorded", &cfg);
    let end = imported.recorded_end.unwrap();
    assert!(
        r.makespan >= end && r.makespan.as_ps() - end.as_ps() <= 84_000_000,
        "{} vs {end}",
        r.makespan
    );
}

fn projections_v11(dir: &Path) -> std::path::PathBuf {
    let sts = "PROJECTIONS_ID\nVERSION 11.0\nMACHINE \"test\"\nPROCESSORS 2\nTOTAL_CHARES 1\nTOTAL_EPS 2\n\
               TOTAL_MSGS 1\nCHARE 0 \"Main\" -1\nENTRY CHARE 0 \"ping(Msg* m)\" 0 0\n\
               ENTRY CHARE 1 \"pong(Msg* m)\" 0 0\nMESSAGE 0 1000\nEND\n";
    std::fs::write(dir.join("pp.sts"), sts).unwrap();
    // PE 0: ping (100 us, sends at +50), then a reply handler (100 us).
    std::fs::write(
        dir.join("pp.0.log"),
        "PROJECTIONS-RECORD 6\n6 0\n2 0 0 100 0 -1 0 0 0 0 0 0 0\n1 0 1 150 1 0 1000 0\n\
         3 0 0 200 0 0 0 0\n2 0 0 500 5 1 1000 500 0 0 0 0 0\n3 0 0 600 5 1 0 0\n7 700\n",
    )
    .unwrap();
    // PE 1: pong (50 us, replies at +20).
    std::fs::write(
        dir.join("pp.1.log"),
        "PROJECTIONS-RECORD 3\n2 0 1 300 1 0 1000 300 0 0 0 0 0\n1 0 0 320 5 1 1000 0\n3 0 1 350 1 0 0 0\n",
    )
    .unwrap();
    dir.join("pp.sts")
}

#[test]
fn projections_v11_hand_made_closed_forms() {
    let dir = tmpdir("proj11");
    let sts = projections_v11(&dir);
    let imported = imp(Format::Projections, &sts);
    let t = &imported.trace;
    assert_eq!((t.num_blocks(), t.num_sends()), (3, 2));
    assert_eq!(t.entries[t.blocks()[0].entry.index()].name, "Main::ping");
    // alphabeta, T = 40 us + 1000 B at 1 GB/s = 41 us: 50 + T + 20 + T + 100.
    let r = run_with(t, "alphabeta:lat=40us,bw=1GB/s", &ReplayConfig::default());
    assert_eq!(
        r.makespan,
        SimTime::from_ps((50 + 41 + 20 + 41 + 100) * 1_000_000)
    );
    // The recorded schedule, exactly.
    let cfg = ReplayConfig {
        recorded_order: true,
        ..ReplayConfig::default()
    };
    let r = run_with(t, "recorded", &cfg);
    assert_eq!(r.makespan, imported.recorded_end.unwrap());
    assert_eq!(r.makespan, SimTime::from_ps(600_000_000));
}

fn gzip(path: &Path) {
    use std::io::Write;
    let text = std::fs::read(path).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&text).unwrap();
    let mut name = path.as_os_str().to_owned();
    name.push(".gz");
    std::fs::write(&name, gz.finish().unwrap()).unwrap();
    std::fs::remove_file(path).unwrap();
}

#[test]
fn projections_gzip_logs_read_as_the_plain_ones() {
    let dir = tmpdir("proj-gz");
    let sts = projections_v11(&dir);
    let plain = imp(Format::Projections, &sts);
    gzip(&dir.join("pp.0.log"));
    gzip(&dir.join("pp.1.log"));
    let gz = imp(Format::Projections, &sts);
    let bytes = |t: &trace::Trace| {
        let mut v = Vec::new();
        trace::binary::write_binary(t, &mut v).unwrap();
        v
    };
    assert_eq!(bytes(&gz.trace), bytes(&plain.trace));
    assert!(
        gz.notes
            .iter()
            .any(|n| n.ends_with("pp.1.log.gz: 3 records")),
        "{:?}",
        gz.notes
    );
    // A plain log wins over a .gz next to it (here a corrupt one).
    projections_v11(&dir);
    std::fs::write(dir.join("pp.0.log.gz"), b"\x1f\x8b\x08\0garbage").unwrap();
    let again = imp(Format::Projections, &sts);
    assert_eq!(again.trace.num_blocks(), plain.trace.num_blocks());
    // Only the corrupt .gz: a clear error naming it, not a panic.
    std::fs::remove_file(dir.join("pp.0.log")).unwrap();
    let e = import(Format::Projections, &sts, &ImportOptions::default()).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("pp.0.log.gz") && msg.contains("gzip-compressed data"),
        "{msg}"
    );
    // Neither: the message names both.
    std::fs::remove_file(dir.join("pp.0.log.gz")).unwrap();
    let e = import(Format::Projections, &sts, &ImportOptions::default()).unwrap_err();
    assert!(
        e.to_string().contains("pp.0.log or .gz) does not exist"),
        "{e}"
    );
}

/// A real Charm++ 7.0 run (the pipit project's ping-pong test data): 2 PEs, gzip-compressed
/// logs, a `[threaded]` entry whose thread suspends and resumes under one message.
#[test]
fn projections_pingpong_real_gzip_run_imports_and_replays() {
    let Some(dir) = shared_data("projections-pingpong") else {
        return;
    };
    let imported = imp(Format::Projections, &dir.join("pingpong.prj.sts"));
    let t = &imported.trace;
    // Objects are the chares (issue 30): the two PEs' own objects (groups, the main chare, the
    // runtime) and the elements of the program's four 1-D to 3-D arrays, two each (one per
    // PE). 325 blocks and 180 messages before the untraced messages were read: each of the
    // 73 handlers of a message to a `[notrace]` entry is now its own block (70 more: those
    // that deliver used to merge with the runtime's neighbouring creations, and the silent
    // ones run on their PE's CPU too), and 39 messages inferred from a pack on the other PE
    // trigger 40 of them (one through a traced broadcast's creation).
    assert_eq!(
        (t.objects.len(), t.num_blocks(), t.num_sends()),
        (10, 395, 219)
    );
    assert!(
        imported.notes.iter().any(
            |n| n.starts_with("73 blocks handle a message to an untraced")
                && n.contains("0 sent on their own PE, 40 from another PE")
        ),
        "{:?}",
        imported.notes
    );
    let names: Vec<&str> = t.objects.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "pe0",
            "pe1",
            "Ping1[0]",
            "Ping1[1]",
            "Ping2[0,0]",
            "Ping2[0,1]",
            "Ping3[0,0,0]",
            "Ping3[0,0,1]",
            "PingMarshall[0]",
            "PingMarshall[1]"
        ]
    );
    for want in [
        "pingpong.prj.0.log.gz: 985 records",
        "pingpong.prj.1.log.gz: 947 records",
        // 137 before issue 30: the creation message of the four arrays (event 0 of PE 0) is
        // now consumed by each array's element on each PE (8 deliveries that used to count
        // as resumptions of one consumer). 129 until the thread resumes' stale envelopes
        // (`dummy_thread_ep` naming event 0, another entry's creation) stopped counting as
        // consumptions of that creation: each `trecv` resume follows its thread instead.
        "76 repeated consumptions of one message on one PE (a threaded entry resumed)",
        "76 thread resumes (`dummy_thread_ep`) name no awaken record",
        "76 resumed threaded entries wait for the thread's resume just before them",
    ] {
        assert!(
            imported.notes.iter().any(|n| n.contains(want)),
            "{want}: {:?}",
            imported.notes
        );
    }
    // Receive times are 0 (not recorded) in these logs: no clock skew is invented from them.
    assert!(
        !imported.notes.iter().any(|n| n.contains("clock skew")),
        "{:?}",
        imported.notes
    );
    let s = trace::TraceSummary::of(t);
    let trecv = s
        .entry_table
        .iter()
        .find(|e| e.name.contains("trecv"))
        .expect("the threaded entry");
    assert_eq!(
        trecv.blocks,
        60 + 54,
        "its BEGIN_PROCESSING records on PE 0 and PE 1"
    );
    // The recorded schedule comes back exactly: the run's last END_PROCESSING at 82,953 us.
    let cfg = ReplayConfig {
        recorded_order: true,
        ..ReplayConfig::default()
    };
    let r = run_with(t, "recorded", &cfg);
    assert_eq!(r.makespan, imported.recorded_end.unwrap());
    assert_eq!(r.makespan, SimTime::from_ps(82_953_000_000));
    // A latency what-if: every remote message on the chain pays it, so the makespan grows
    // by at most (remote messages) x the added latency, and by at least the ping-pong's
    // round trips (the 40 timed `recv` exchanges).
    let at = |lat_us: u64| {
        run_with(
            t,
            &format!("latency:lat={lat_us}us"),
            &ReplayConfig::default(),
        )
        .makespan
        .as_ps()
    };
    let (a, b) = (at(2), at(4));
    let r4 = run_with(t, "latency:lat=4us", &ReplayConfig::default());
    let remote = r4.messages.remote;
    assert!(b > a);
    assert!(b - a <= remote * 2_000_000, "{a} -> {b}, {remote} remote");
    assert!(b - a >= 40 * 2_000_000, "{a} -> {b}");
}

#[test]
fn projections_message_from_a_pe_that_does_not_exist_is_noted() {
    let dir = tmpdir("proj-badsrc");
    let sts = projections_v11(&dir);
    // PE 1's pong names PE 7 (of 2) as its sender.
    std::fs::write(
        dir.join("pp.1.log"),
        "PROJECTIONS-RECORD 3\n2 0 1 300 1 7 1000 300 0 0 0 0 0\n1 0 0 320 5 1 1000 0\n3 0 1 350 1 0 0 0\n",
    )
    .unwrap();
    let imported = imp(Format::Projections, &sts);
    let note = imported
        .notes
        .iter()
        .find(|n| n.contains("source PE beyond"))
        .unwrap_or_else(|| panic!("no note in {:?}", imported.notes));
    assert!(
        note.starts_with("1 blocks") && note.contains("2 PEs") && note.contains("PE 7"),
        "{note}"
    );
}

#[test]
fn an_entry_name_with_a_newline_survives_the_projections_output() {
    let dir = tmpdir("proj-newline");
    let jsonl = dir.join("t.jsonl");
    let o = whatif(&[
        "gen",
        "ring",
        "--ranks",
        "2",
        "--iters",
        "2",
        "--out",
        jsonl.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success());
    // Rename the entry method to a name with a newline, a quote and a tab (JSON escapes).
    let text = std::fs::read_to_string(&jsonl).unwrap();
    let first_entry = text
        .lines()
        .find(|l| l.contains("\"entry\"") && l.contains("\"name\""))
        .expect("an entry record");
    let name = first_entry
        .split("\"name\":\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    let evil = text.replacen(
        &format!("\"name\":\"{name}\""),
        "\"name\":\"step\\nwith \\\"quotes\\\"\\tand tab\"",
        1,
    );
    assert_ne!(evil, text, "the entry name was not replaced");
    std::fs::write(&jsonl, evil).unwrap();
    let out = dir.join("o");
    let o = whatif(&[
        "replay",
        jsonl.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let sts = out.join("projections/predicted.sts");
    let written = std::fs::read_to_string(&sts).unwrap();
    assert!(
        written
            .lines()
            .any(|l| l.contains("step with 'quotes' and tab")),
        "{written}"
    );
    let back = imp(Format::Projections, &sts);
    assert!(
        back.trace
            .entries
            .iter()
            .any(|e| e.name.contains("step with 'quotes' and tab"))
    );
}

#[test]
fn projections_errors() {
    let dir = tmpdir("proj-bad");
    let sts = projections_v11(&dir);
    let good = std::fs::read_to_string(&sts).unwrap();
    std::fs::write(&sts, good.replace("11.0", "6.0")).unwrap();
    let e = import(Format::Projections, &sts, &ImportOptions::default()).unwrap_err();
    assert!(
        e.to_string().contains("accepted versions are 3.0 and 11.0"),
        "{e}"
    );
    std::fs::write(&sts, &good).unwrap();
    std::fs::write(
        dir.join("pp.1.log"),
        "PROJECTIONS-RECORD 1\n2 0 1 abc 1 0 1000 300 0 0 0 0 0\n",
    )
    .unwrap();
    let e = import(Format::Projections, &sts, &ImportOptions::default()).unwrap_err();
    assert!(
        e.to_string()
            .contains("pp.1.log:2: expected time (a number)"),
        "{e}"
    );
    std::fs::write(dir.join("pp.1.log"), "PROJECTIONS-RECORD 1\n77 0\n").unwrap();
    let e = import(Format::Projections, &sts, &ImportOptions::default()).unwrap_err();
    assert!(
        e.to_string()
            .contains("pp.1.log:2: expected a Projections record type"),
        "{e}"
    );
    std::fs::remove_file(dir.join("pp.1.log")).unwrap();
    let e = import(Format::Projections, &sts, &ImportOptions::default()).unwrap_err();
    assert!(
        matches!(e, ImportError::Inconsistent { .. })
            && e.to_string().contains("log of PE 1 (")
            && e.to_string().contains("pp.1.log or .gz) does not exist"),
        "{e}"
    );
}

// ---------------------------------------------------------------------------------------------
// No input makes an importer panic (debug build: arithmetic overflow panics too).

#[test]
fn importers_survive_mutated_inputs() {
    let root = tmpdir("fuzz");
    let bg = root.join("bg");
    std::fs::create_dir_all(&bg).unwrap();
    tiny_bgtrace(&bg);
    let goal = goal_file(
        "fz.goal",
        "num_ranks 3\nrank 0 {\nl1: calc 100\nl2: send 70000b to 1 tag 1\nl2 requires l1\nl3: recv 8b from 2 tag 0\n}\n\
         rank 1 {\nl1: recv 70000b from 0 tag 1\nl2: send 8b to 2 tag 0 cpu 0 nic 0\nl2 irequires l1\n}\n\
         rank 2 {\nl1: recv 8b from 1 tag 0\nl2: send 8b to 0 tag 0\nl2 requires l1\n}\n",
    );
    let ti = ti_file(
        "fz.txt",
        "0 init\n1 init\n2 init\n0 compute 1e6\n0 isend 1 0 100\n1 irecv 0 0 100\n1 wait 0 1 0\n\
         0 bcast 1000 1\n1 bcast 1000 1\n2 bcast 1000 1\n0 allreduce 10 1e3\n1 allreduce 10 1e3\n2 allreduce 10 1e3\n\
         0 alltoallv 9 1 2 3 9 1 2 3\n1 alltoallv 9 2 2 3 9 2 2 3\n2 alltoallv 9 3 2 3 9 3 2 3\n0 finalize\n",
    );
    let proj = tmpdir("fuzz-proj");
    let sts = projections_v11(&proj);
    let mut inputs = vec![
        (Format::BgTrace, bg),
        (Format::Goal, goal),
        (Format::SimGrid, ti),
        (Format::Projections, sts),
    ];
    if let Some(d) = shared_data("projections-hello") {
        inputs.push((Format::Projections, d.join("hello.sts")));
    }
    // Gzip-compressed logs: mutated compressed bytes go through the decoder.
    if let Some(d) = shared_data("projections-pingpong") {
        inputs.push((Format::Projections, d.join("pingpong.prj.sts")));
    }
    for (i, (format, input)) in inputs.into_iter().enumerate() {
        // The input itself is valid.
        imp(format, &input);
        let work = root.join(format!("work{i}"));
        std::fs::create_dir_all(&work).unwrap();
        let r = importers::fuzz::fuzz(
            format,
            &input,
            &work,
            &importers::fuzz::FuzzConfig {
                seed: i as u64 + 1,
                duration: std::time::Duration::from_secs(120),
                max_execs: 400,
                opts: ImportOptions::default(),
                // Tests run in parallel threads of one process and a debug build: the
                // per-input budgets are the CLI's business (`whatif fuzz-import`).
                time_per_input: std::time::Duration::from_secs(600),
                memory_per_input_bytes: u64::MAX,
            },
            |_, _| {},
        )
        .unwrap();
        assert_eq!(r.execs, 400);
        assert!(r.panics.is_empty(), "{format}: panics on {:?}", r.panics);
        assert!(
            r.over_budget.is_empty(),
            "{format}: over budget: {:?}",
            r.over_budget
        );
        // Most mutations are rejected, some survive: both paths are exercised.
        assert!(r.rejected > 0, "{format}: {r:?}");
    }
}

/// Issue 30, closed form: an array broadcast created on PE 0 is logged on PE 1 with PE 1 as
/// source and PE 0's event number; PE 1 later creates its own event 3 (for another entry),
/// which must not be taken as the cause. SDAG serials (event -1) run after their entry.
#[test]
fn projections_broadcast_and_sdag_closed_forms() {
    let dir = tmpdir("proj-bcast");
    let sts = "PROJECTIONS_ID\nVERSION 11.0\nMACHINE \"test\"\nPROCESSORS 2\nTOTAL_CHARES 2\n\
               TOTAL_EPS 3\nTOTAL_MSGS 1\nCHARE 0 \"SDAG\" -1\nCHARE 1 \"A\" 1\n\
               ENTRY CHARE 0 \"SDAG_RTS\" 0 0\nENTRY CHARE 1 \"go()\" 1 0\n\
               ENTRY CHARE 2 \"A_work\" 1 0\nMESSAGE 0 80\nEND\n";
    std::fs::write(dir.join("b.sts"), sts).unwrap();
    // PE 0: the runtime broadcasts go (event 3) at 50; A[0] runs go 100-110, its serial
    // 110-200.
    std::fs::write(
        dir.join("b.0.log"),
        "PROJECTIONS-RECORD 5\n1 0 1 50 3 0 80 0\n2 0 1 100 3 0 80 0 0 0\n3 0 1 110 3 0 0 0\n\
         2 0 2 110 -1 0 0 0 0 0\n3 0 2 200 -1 0 0 0\n",
    )
    .unwrap();
    // PE 1: A[1] runs go 300-305 (logged with source PE 1), its serial 305-400, which
    // creates PE 1's own event 3 at 350 for another entry.
    std::fs::write(
        dir.join("b.1.log"),
        "PROJECTIONS-RECORD 5\n2 0 1 300 3 1 80 0 1 0\n3 0 1 305 3 1 0 0\n\
         2 0 2 305 -1 1 0 0 1 0\n1 0 2 350 3 1 8 0\n3 0 2 400 -1 1 0 0\n",
    )
    .unwrap();
    let imported = imp(Format::Projections, &dir.join("b.sts"));
    let t = &imported.trace;
    let names: Vec<&str> = t.objects.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["pe0", "pe1", "A[0]", "A[1]"]);
    assert!(
        imported
            .notes
            .iter()
            .any(|n| n.starts_with("1 deliveries name their own PE as source")),
        "{:?}",
        imported.notes
    );
    assert!(!imported.notes.iter().any(|n| n.contains("clock skew")));
    // Recorded order: exactly the recorded end.
    let cfg = ReplayConfig {
        recorded_order: true,
        ..ReplayConfig::default()
    };
    let r = run_with(t, "recorded", &cfg);
    assert_eq!(r.makespan, SimTime::from_ps(400_000_000));
    // Message driven, 1 ms latency: the runtime's block starts at 0 (nothing holds it), A[1]'s
    // go arrives at 1000 us, runs 5 us, then its serial 95 us.
    let r = run_with(t, "latency:lat=1ms", &ReplayConfig::default());
    assert_eq!(r.makespan, SimTime::from_ps(1_100_000_000));
}

/// Messages to untraced entries (`[notrace]`, e.g. CkMulticast's): the sender only packs,
/// the receiver unpacks outside any processing and acts. A receipt after a step takes that
/// step's send (the local queue comes first); the send left unreceived when a traced message
/// begins went to the other PE, whose receipt (a handler that delivers) takes the latest such
/// send before it.
#[test]
fn projections_untraced_messages_closed_forms() {
    let dir = tmpdir("proj-untraced");
    let sts = "PROJECTIONS_ID\nVERSION 11.0\nMACHINE \"test\"\nPROCESSORS 2\nTOTAL_CHARES 3\n\
               TOTAL_EPS 3\nTOTAL_MSGS 1\nCHARE 0 \"SDAG\" -1\nCHARE 1 \"A\" 1\n\
               CHARE 2 \"CkMulticastMgr\" -1\n\
               ENTRY CHARE 0 \"SDAG_RTS\" 0 0\nENTRY CHARE 1 \"go()\" 1 0\n\
               ENTRY CHARE 2 \"work()\" 1 0\nMESSAGE 0 80\nEND\n";
    // CkMulticastMgr is registered: the runtime module with `[notrace]` entries is linked in.
    std::fs::write(dir.join("u.sts"), sts).unwrap();
    // PE 0: A[0] runs go 100-200: it creates work (event 4) at 120 and packs that traced
    // message, then packs two untraced ones at 140 and 150. The runtime receives one at 205
    // and forwards it (a pack at 206); then the traced work message is unpacked at 249 and
    // runs 250-300.
    std::fs::write(
        dir.join("u.0.log"),
        "PROJECTIONS-RECORD 12\n2 0 1 100 3 -1 80 0 0 0\n1 0 2 120 4 0 80 0\n16 120 0\n17 121 0\n\
         16 140 0\n17 141 0\n16 150 0\n17 151 0\n3 0 1 200 3 0 0 0\n18 205 0\n19 205 0\n\
         16 206 0\n17 206 0\n18 249 0\n19 249 0\n2 0 2 250 4 0 80 0 0 0\n3 0 2 300 4 0 0 0\n",
    )
    .unwrap();
    // PE 1: the runtime receives a message at 180 and creates work for A[1] (event 7) at 181;
    // A[1] runs it 190-280. Then the runtime receives a message at 290 and only forwards it
    // (a pack at 291, no creation), and receives that forward itself at 295 (a silent
    // handler: nothing recorded but its UNPACK).
    std::fs::write(
        dir.join("u.1.log"),
        "PROJECTIONS-RECORD 12\n18 180 1\n19 180 1\n1 0 2 181 7 1 64 0\n\
         2 0 2 190 7 1 64 0 1 0\n3 0 2 280 7 1 0 0\n18 290 1\n19 290 1\n16 291 1\n17 291 1\n\
         18 295 1\n19 296 1\n14 298 1\n",
    )
    .unwrap();
    let imported = imp(Format::Projections, &dir.join("u.sts"));
    assert!(
        imported.notes.iter().any(|n| n
            .starts_with("4 blocks handle a message to an untraced entry")
            && n.contains("2 sent on their own PE, 2 from another PE")
            && n.contains("0 not found")),
        "{:?}",
        imported.notes
    );
    let t = &imported.trace;
    let names: Vec<&str> = t.objects.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["pe0", "pe1", "A[0]", "A[1]"]);
    // The receipt on PE 1 is triggered by a 64-byte message A[0]'s go sends at offset 50 us
    // (its second untraced pack), addressed to PE 1's runtime object.
    let go = t
        .block_ids()
        .find(|&id| t.block(id).object == trace::ObjectId(2) && t.deps(id).is_empty())
        .unwrap();
    let sends: Vec<_> = t.sends(go).to_vec();
    assert_eq!(sends.len(), 2, "{sends:?}");
    let untraced = sends
        .iter()
        .find(|s| s.dest == trace::Destination::Object(trace::ObjectId(1)))
        .unwrap();
    assert_eq!(untraced.offset, SimDuration::from_ps(50_000_000));
    assert_eq!(untraced.bytes, 64);
    // PE 0's receipt took go's first send (the local queue first): a dependency on go, not
    // a message. PE 1's forwarding handler (290) took the latest unpaired send from PE 0
    // before it (PE 0's receipt forwarding at 206), and its own forward went to PE 1's silent
    // handler (295), which waits for it. Every handler is a block, the silent one too (its
    // CPU time is the PE's): go, PE 0's receipt, A[0]'s work, PE 1's three receipts and
    // A[1]'s work.
    assert_eq!(t.num_blocks(), 7);
    // Recorded order: the recorded end.
    let cfg = ReplayConfig {
        recorded_order: true,
        ..ReplayConfig::default()
    };
    assert_eq!(
        run_with(t, "recorded", &cfg).makespan,
        SimTime::from_ps(300_000_000)
    );
    // Message driven, 1 ms latency: go runs 0-100 us and sends at 50 us; PE 1's runtime
    // receives at 1050 us and runs 10 us (180-190; it creates work at 1 us, a local message);
    // A[1]'s work then has the PE and runs 90 us, to 1150 us. PE 1's log has an idle record,
    // so a gap between two pieces is the runtime's work, taken into the piece after it. On
    // PE 0, the receipt that depends on go keeps go's place in the queue (BigSim's effective
    // receive time, 0 us) ahead of work (20 us): it runs 100-149 us (44 us and the 5 us
    // since go ended) and forwards at 106 us, which reaches PE 1 at 1106 us; PE 1's
    // forwarding handler runs 1150-1165 us (5 us and the 10 us since A[1]'s work ended) and
    // its silent handler after it, 1165-1168 us.
    let r = run_with(t, "latency:lat=1ms", &ReplayConfig::default());
    assert_eq!(r.makespan, SimTime::from_ps(1_168_000_000));
}

/// Beyond eight logs the import notes say one line for all of them (issue 31: 1000 PEs used to
/// print 1000 lines), with the total and the extremes.
#[test]
fn projections_notes_summarise_many_logs_in_one_line() {
    let dir = tmpdir("proj-many-logs");
    std::fs::write(
        dir.join("m.sts"),
        "PROJECTIONS_ID\nVERSION 11.0\nMACHINE \"test\"\nPROCESSORS 9\nTOTAL_CHARES 1\n\
         TOTAL_EPS 1\nTOTAL_MSGS 0\nCHARE 0 \"A\" -1\nENTRY CHARE 0 \"go()\" 0 0\nEND\n",
    )
    .unwrap();
    for pe in 0..9 {
        // PE p logs p + 1 idle periods.
        let mut log = format!("PROJECTIONS-RECORD {}\n", 2 * (pe + 1));
        for k in 0..=pe {
            log.push_str(&format!("14 {} {pe}\n15 {} {pe}\n", 10 * k, 10 * k + 5));
        }
        std::fs::write(dir.join(format!("m.{pe}.log")), log).unwrap();
    }
    let imported = imp(Format::Projections, &dir.join("m.sts"));
    let lines: Vec<&String> = imported
        .notes
        .iter()
        .filter(|n| n.contains("records"))
        .collect();
    assert_eq!(lines.len(), 1, "{:?}", imported.notes);
    assert!(
        lines[0].starts_with("9 logs: 90 records, 2 to 18 per log (")
            && lines[0].contains("m.0.log to ")
            && lines[0].ends_with("m.8.log)"),
        "{}",
        lines[0]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A log-buffer flush inside an entry method (BEGIN_INTERRUPT .. END_INTERRUPT, which
/// Charm++ writes around writing its full buffer to disk) is tracing overhead: taken out of
/// the block's duration and of the offsets of its later sends, and noted. The ping of
/// `projections_v11` with a 20 us flush at +20: it sends at +30 and lasts 80 us.
#[test]
fn projections_log_flush_inside_a_block_is_taken_out() {
    let dir = tmpdir("proj-flush");
    let sts = projections_v11(&dir);
    std::fs::write(
        dir.join("pp.0.log"),
        "PROJECTIONS-RECORD 8\n6 0\n2 0 0 100 0 -1 0 0 0 0 0 0 0\n8 120 0 0\n9 140 0 0\n\
         1 0 1 150 1 0 1000 0\n3 0 0 200 0 0 0 0\n2 0 0 500 5 1 1000 500 0 0 0 0 0\n\
         3 0 0 600 5 1 0 0\n7 700\n",
    )
    .unwrap();
    let imported = imp(Format::Projections, &sts);
    let t = &imported.trace;
    assert_eq!(t.blocks()[0].duration, SimDuration::from_us(80));
    assert_eq!(
        t.sends(trace::BlockId(0))[0].offset,
        SimDuration::from_us(30)
    );
    assert!(
        imported
            .notes
            .iter()
            .any(|n| n.starts_with("1 log-buffer flushes") && n.contains("20 us")),
        "{:?}",
        imported.notes
    );
    // 30 + T + 20 + T + 100 with T = 41 us.
    let r = run_with(t, "alphabeta:lat=40us,bw=1GB/s", &ReplayConfig::default());
    assert_eq!(
        r.makespan,
        SimTime::from_ps((30 + 41 + 20 + 41 + 100) * 1_000_000)
    );
}

/// `inspect --format projections` reads the `.sts` and every log: an `--objects` output
/// naming one of the logs is refused before anything is read or written.
#[test]
fn inspect_of_projections_logs_never_writes_over_a_log() {
    let dir = tmpdir("proj-inspect");
    let sts = projections_v11(&dir);
    let log = dir.join("pp.1.log");
    let before = std::fs::read(&log).unwrap();
    let inspect = |objects: &Path| {
        whatif(&[
            "inspect",
            sts.to_str().unwrap(),
            "--format",
            "projections",
            "--objects",
            objects.to_str().unwrap(),
            "-q",
        ])
    };
    let o = inspect(&log);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("pp.1.log"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&log).unwrap(), before);
    // A fresh CSV is written: one row per object, with its recorded PE.
    let csv = dir.join("objects.csv");
    let o = inspect(&csv);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(rows.lines().count(), 3, "{rows}");
    assert!(rows.contains("pe1,1"), "{rows}");
}

/// Objects `pe0`, `A[0]`, `A[1]` dealt over 2 PEs in id order: `pe0` and `A[1]` on PE 0,
/// `A[0]` on PE 1 (`--map round-robin` keeps the pinned `pe0` out of the deal).
fn two_pes_round_robin() -> ReplayConfig {
    ReplayConfig {
        pes: Some(2),
        mapping: replay::Mapping::Explicit(vec![0, 1, 0]),
        ..ReplayConfig::default()
    }
}

/// Each recorded PE's blocks in their recorded order.
fn recorded_order() -> ReplayConfig {
    ReplayConfig {
        recorded_order: true,
        ..ReplayConfig::default()
    }
}

/// Checks the split of the two-element logs below: A[1]'s piece (recorded 300-400 us, block
/// 2) ends at 390 us, where its tail (block 3, 390-400 us) begins; the work depends on
/// nothing, the tail on the work and on A[0]'s piece (block 1).
fn assert_split_at_390_us(t: &trace::Trace) {
    let (work, tail) = (t.block(trace::BlockId(2)), t.block(trace::BlockId(3)));
    assert_eq!(
        (work.object, tail.object),
        (trace::ObjectId(2), trace::ObjectId(2))
    );
    assert_eq!((work.duration, tail.duration), (us(90), us(10)));
    assert_eq!(tail.recorded_start, Some(SimTime::from_ps(390_000_000)));
    assert!(t.deps(trace::BlockId(2)).is_empty());
    assert_eq!(
        t.deps(trace::BlockId(3)),
        [trace::BlockId(2), trace::BlockId(1)]
    );
}

/// A reduction's result is a message to an entry that takes a `CkReductionMsg`, here a plain
/// entry named by the callback (kNeighbor's `Main::nextStep(CkReductionMsg*)`), created in
/// the block of the last element to contribute on its PE. Contributions are local calls,
/// so the result waits for every element's latest block on that PE, not only the creator.
/// An array broadcast's piece at the PE's array manager (message type 24, zero index) is the
/// runtime's, not element 0's.
#[test]
fn projections_reduction_result_waits_for_every_local_contributor() {
    let dir = tmpdir("proj-reduction");
    let sts = "PROJECTIONS_ID\nVERSION 11.0\nMACHINE \"test\"\nPROCESSORS 1\nTOTAL_CHARES 2\n\
               TOTAL_EPS 3\nTOTAL_MSGS 1\nCHARE 0 \"Main\" -1\nCHARE 1 \"A\" 1\n\
               ENTRY CHARE 0 \"next(CkReductionMsg* impl_msg)\" 0 8\n\
               ENTRY CHARE 1 \"A()\" 1 0\nENTRY CHARE 2 \"work()\" 1 0\nMESSAGE 0 80\nEND\n";
    std::fs::write(dir.join("r.sts"), sts).unwrap();
    // The array manager takes A's creation broadcast 10-100 (index fields 0). A[0] works
    // 100-300, A[1] 300-400 and contributes last: the result (event 5) is created at 390;
    // Main::next runs 400-410.
    std::fs::write(
        dir.join("r.0.log"),
        "PROJECTIONS-RECORD 9\n2 24 1 10 1 -1 80 0 0 0\n3 0 1 100 1 0 0 0\n\
         2 4 2 100 2 -1 80 0 0 0\n3 0 2 300 2 0 0 0\n2 4 2 300 3 -1 80 0 1 0\n\
         1 0 0 390 5 0 80 0\n3 0 2 400 3 0 0 0\n2 0 0 400 5 0 80 0 0 0 0 0 0\n3 0 0 410 5 0 0 0\n",
    )
    .unwrap();
    let imported = imp(Format::Projections, &dir.join("r.sts"));
    let t = &imported.trace;
    let names: Vec<&str> = t.objects.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["pe0", "A[0]", "A[1]"], "no phantom A[0] piece");
    // The PE's object holds the main chare and the runtime: pinned; the elements migrate.
    let pins: Vec<bool> = t.objects.iter().map(|o| o.pinned).collect();
    assert_eq!(pins, [true, false, false]);
    let manager = t.block(trace::BlockId(0));
    assert_eq!(manager.object, trace::ObjectId(0));
    assert!(
        imported
            .notes
            .iter()
            .any(|n| n.starts_with("1 blocks send for a reduction")),
        "{:?}",
        imported.notes
    );
    // A[1]'s piece is split at its contribution (the result's creation at 390): its work
    // 300-390, then the tail 390-400 that sends the result and waits for A[0].
    assert!(
        imported
            .notes
            .iter()
            .any(|n| n.contains("1 of them reach that point (the send, or the phase's end) after they began and are split there")),
        "{:?}",
        imported.notes
    );
    assert_split_at_390_us(t);
    let tail_sends = t.sends(trace::BlockId(3));
    assert!(t.sends(trace::BlockId(2)).is_empty() && tail_sends.len() == 1);
    assert_eq!(tail_sends[0].offset, SimDuration::ZERO);
    let next = trace::BlockId(4);
    assert_eq!(t.entries[t.block(next).entry.index()].name, "Main::next");
    assert_eq!(t.block(next).trigger, Some(tail_sends[0].msg));
    // Objects round-robin on 2 PEs: pe0 and A[1] on PE 0, A[0] on PE 1. A[0] runs 0-200 us
    // and the manager 0-90 us. A[1]'s work runs 90-180 us, beside A[0]'s; the tail waits
    // for A[0]'s end: 200-210 us, and Main::next 210-220 us. Were the whole piece held
    // (before the split), A[1] would run 200-300 us and Main::next 300-310 us; without the
    // rule, Main::next would run 180-190 us, before A[0] contributed.
    let cfg = two_pes_round_robin();
    let r = run_with(t, "latency:lat=1us", &cfg);
    assert_eq!(r.makespan, SimTime::from_ps(220_000_000));
}

/// `AtSync()` is a local call: the load-balancing step starts in the piece of the PE's last
/// element to call it, where the phase ends (END_PHASE), and from there on that piece waits
/// for every other local element. What the piece did before is the element's own work: the
/// piece is split at the phase's end, as at a reduction's contribution.
#[test]
fn projections_a_phase_end_waits_from_there_on() {
    let dir = tmpdir("proj-phase-split");
    let sts = "PROJECTIONS_ID\nVERSION 11.0\nMACHINE \"test\"\nPROCESSORS 1\nTOTAL_CHARES 2\n\
               TOTAL_EPS 3\nTOTAL_MSGS 1\nCHARE 0 \"Main\" -1\nCHARE 1 \"A\" 1\n\
               ENTRY CHARE 0 \"resume()\" 0 0\n\
               ENTRY CHARE 1 \"A()\" 1 0\nENTRY CHARE 2 \"work()\" 1 0\nMESSAGE 0 80\nEND\n";
    std::fs::write(dir.join("a.sts"), sts).unwrap();
    // The array manager 10-100; A[0] works 100-300; A[1] works 300-400, calls AtSync() last:
    // the phase ends at 390, and the step's resumption (event 5) is created at 395;
    // Main::resume runs 400-410.
    std::fs::write(
        dir.join("a.0.log"),
        "PROJECTIONS-RECORD 10\n2 24 1 10 1 -1 80 0 0 0\n3 0 1 100 1 0 0 0\n\
         2 4 2 100 2 -1 80 0 0 0\n3 0 2 300 2 0 0 0\n2 4 2 300 3 -1 80 0 1 0\n30 0 390\n\
         1 0 0 395 5 0 80 0\n3 0 2 400 3 0 0 0\n2 0 0 400 5 0 80 0 0 0 0 0 0\n3 0 0 410 5 0 0 0\n",
    )
    .unwrap();
    let imported = imp(Format::Projections, &dir.join("a.sts"));
    assert!(
        imported
            .notes
            .iter()
            .any(|n| n.starts_with("1 blocks send for a reduction")
                && n.contains(
                    "1 of them reach that point (the send, or the phase's end) after they began"
                )),
        "{:?}",
        imported.notes
    );
    let t = &imported.trace;
    assert_split_at_390_us(t);
    let (work, tail) = (t.block(trace::BlockId(2)), t.block(trace::BlockId(3)));
    // A[1]'s sync point is the tail, which ends its piece; both parts are in phase 0.
    assert!(!work.lb_sync && tail.lb_sync && t.block(trace::BlockId(1)).lb_sync);
    assert_eq!((work.iteration, tail.iteration), (Some(0), Some(0)));
    let sends = t.sends(trace::BlockId(3));
    assert_eq!(sends.len(), 1);
    assert_eq!(sends[0].offset, SimDuration::from_us(5));
    let resume = t.block(trace::BlockId(4));
    assert_eq!(t.entries[resume.entry.index()].name, "Main::resume");
    assert_eq!(
        (resume.trigger, resume.iteration),
        (Some(sends[0].msg), Some(1))
    );
    // Round-robin on 2 PEs (A[0] alone on PE 1): A[1]'s work runs 90-180 us beside A[0]'s
    // 0-200 us; the tail 200-210 us, Main::resume 210-220 us. Held as a whole, A[1]'s piece
    // would run 200-300 us and Main::resume 300-310 us.
    let r = run_with(t, "latency:lat=1us", &two_pes_round_robin());
    assert_eq!(r.makespan, SimTime::from_ps(220_000_000));
    // The recorded order at the recorded delays ends where the recording did.
    assert_eq!(faithful_miss_ps(t), 0);
}

/// On one PE a section reduction's contribution is neither packed nor remote: the untraced
/// handler that delivers the result (`redn_wrapper_*`, after an UNPACK outside any
/// processing) was sent by the contributor, the traced block before it on the PE.
#[test]
fn projections_section_reduction_on_one_pe_follows_its_contributor() {
    let dir = tmpdir("proj-section");
    let sts = "PROJECTIONS_ID\nVERSION 11.0\nMACHINE \"test\"\nPROCESSORS 1\nTOTAL_CHARES 2\n\
               TOTAL_EPS 2\nTOTAL_MSGS 1\nCHARE 0 \"CkMulticastMgr\" -1\nCHARE 1 \"A\" 1\n\
               ENTRY CHARE 0 \"work()\" 1 0\n\
               ENTRY CHARE 1 \"redn_wrapper_done(CkReductionMsg *impl_msg)\" 1 8\n\
               MESSAGE 0 80\nEND\n";
    std::fs::write(dir.join("s.sts"), sts).unwrap();
    // A[0] works 100-200 and contributes; the multicast manager's untraced handler unpacks
    // at 205 and creates the result for A[1] (event 9) at 206; A[1] runs it 210-250.
    std::fs::write(
        dir.join("s.0.log"),
        "PROJECTIONS-RECORD 7\n2 4 0 100 2 -1 80 0 0 0\n3 0 0 200 2 0 0 0\n18 205 0\n19 205 0\n\
         1 0 1 206 9 0 80 0\n2 4 1 210 9 0 80 0 1 0\n3 0 1 250 9 0 0 0\n",
    )
    .unwrap();
    let imported = imp(Format::Projections, &dir.join("s.sts"));
    assert!(
        imported.notes.iter().any(|n| n
            .starts_with("1 blocks handle a message to an untraced entry")
            && n.contains("1 with no send found are sent by the latest traced block")
            && n.contains("0 not found")),
        "{:?}",
        imported.notes
    );
    let t = &imported.trace;
    // The handler's trigger is a message A[0]'s block sends at its end.
    let work = trace::BlockId(0);
    let sends = t.sends(work);
    assert_eq!(sends.len(), 1, "{sends:?}");
    assert_eq!(sends[0].offset, SimDuration::from_us(100));
    assert_eq!(
        sends[0].dest,
        trace::Destination::Object(trace::ObjectId(0))
    );
    // pe0 (the handler) and A[1] on PE 0, A[0] on PE 1, 1 ms latency: A[0] runs 0-100 us;
    // the handler gets its message at 1100 us and runs 10 us (205-210, to the next record
    // not its own, and the 5 us since A[0] ended: on one PE a gap is the runtime's work);
    // the result is local, and A[1] runs it 1110-1150 us. Unsent, the handler and A[1]
    // would run at 0 and the run would end at 100 us.
    let cfg = two_pes_round_robin();
    let r = run_with(t, "latency:lat=1ms", &cfg);
    assert_eq!(r.makespan, SimTime::from_ps(1_150_000_000));
    // Recorded order: the recorded end.
    let cfg = recorded_order();
    assert_eq!(
        run_with(t, "recorded", &cfg).makespan,
        SimTime::from_ps(250_000_000)
    );
    // The runtime's work between entry methods: a span of 150 us, 145 us in the three
    // blocks, 5 us before the handler (1667 ns per block), taken into it: on one PE the
    // blocks alone now last the recorded span.
    assert!(
        imported
            .notes
            .iter()
            .any(|n| n.starts_with("the runtime's work")
                && n.contains(
                    "took 5 us in all, 1667 ns per block on average and 3.3% of PE 0's span"
                )),
        "{:?}",
        imported.notes
    );
    assert_eq!(
        t.block(trace::BlockId(1)).duration,
        SimDuration::from_us(10)
    );
    assert_eq!(
        run_with(t, "ideal", &ReplayConfig::default()).makespan,
        SimTime::from_ps(150_000_000)
    );
}

/// PE 1's timer runs 10 us behind PE 0's: its log says `pong` began at 140 us, before `ping`
/// created its message at 150 us. The import adds the smallest offset that leaves no
/// message arriving before its creation (10 us: the reply still takes 330 us the other
/// way), so no delay is floored and the recorded schedule comes back exactly.
#[test]
fn projections_clock_offset_between_pes_is_taken_out() {
    let dir = tmpdir("proj-clock");
    let sts = projections_v11(&dir);
    std::fs::write(
        dir.join("pp.1.log"),
        "PROJECTIONS-RECORD 3\n2 0 1 140 1 0 1000 140 0 0 0 0 0\n1 0 0 160 5 1 1000 0\n3 0 1 190 1 0 0 0\n",
    )
    .unwrap();
    let imported = imp(Format::Projections, &sts);
    assert!(
        imported
            .notes
            .iter()
            .any(|n| n.starts_with("the PEs' clocks disagree") && n.ends_with("PE 1 +10 us")),
        "{:?}",
        imported.notes
    );
    // Without idle records, a gap between two blocks may be idleness: no runtime-work note.
    assert!(
        !imported
            .notes
            .iter()
            .any(|n| n.contains("clock skew") || n.starts_with("the runtime's work")),
        "{:?}",
        imported.notes
    );
    let t = &imported.trace;
    let pong = trace::BlockId(1);
    assert_eq!(t.entries[t.block(pong).entry.index()].name, "Main::pong");
    assert_eq!(
        t.block(pong).recorded_start,
        Some(SimTime::from_ps(150_000_000))
    );
    let cfg = recorded_order();
    let r = run_with(t, "recorded", &cfg);
    assert_eq!(r.makespan, imported.recorded_end.unwrap());
    assert_eq!(r.makespan, SimTime::from_ps(600_000_000));
    // The model's closed form does not depend on the clocks: 50 + T + 20 + T + 100, T = 41 us.
    let r = run_with(t, "alphabeta:lat=40us,bw=1GB/s", &ReplayConfig::default());
    assert_eq!(
        r.makespan,
        SimTime::from_ps((50 + 41 + 20 + 41 + 100) * 1_000_000)
    );
}

/// The runtime's work before a block counts only CPU time: a one-PE log where `Fib(...)`
/// (a singleton chare's constructor, message type 2) ends at 200 us with 150 us of CPU time
/// and `calc` begins at 300 us with 170 us: 20 us of work, not 100 (the process was off the
/// CPU for 80 us). The chare creation is noted: plain chares have no identity in the log.
#[test]
fn projections_runtime_work_is_cpu_time_and_singleton_chares_are_noted() {
    let dir = tmpdir("proj-cpu");
    let sts = "PROJECTIONS_ID\nVERSION 11.0\nMACHINE \"test\"\nPROCESSORS 1\nTOTAL_CHARES 1\n\
               TOTAL_EPS 2\nTOTAL_MSGS 1\nCHARE 0 \"Fib\" -1\n\
               ENTRY CHARE 0 \"Fib(int n)\" 0 0\nENTRY CHARE 1 \"calc(int n)\" 0 0\n\
               MESSAGE 0 80\nEND\n";
    std::fs::write(dir.join("f.sts"), sts).unwrap();
    // Fib 100-200 (CPU 50-150) creates calc (event 2) at 150; calc 300-350 (CPU 170-220).
    std::fs::write(
        dir.join("f.0.log"),
        "PROJECTIONS-RECORD 5\n2 2 0 100 1 -1 80 0 0 0 0 0 50\n1 0 1 150 2 0 80 0\n\
         3 0 0 200 1 0 0 150\n2 4 1 300 2 0 80 0 0 0 0 0 170\n3 0 1 350 2 0 0 220\n",
    )
    .unwrap();
    let imported = imp(Format::Projections, &dir.join("f.sts"));
    let t = &imported.trace;
    assert_eq!(
        t.block(trace::BlockId(0)).duration,
        SimDuration::from_us(100)
    );
    assert_eq!(
        t.block(trace::BlockId(1)).duration,
        SimDuration::from_us(70)
    );
    assert_eq!(
        t.block(trace::BlockId(1)).recorded_start,
        Some(SimTime::from_ps(280_000_000))
    );
    assert_notes(
        &imported,
        &[
            "1 singleton chares were created as the program ran",
            "the runtime's work between entry methods",
        ],
    );
    // Recorded order, recorded delays: calc's message (sent at 150 us) arrives at 280 us,
    // its recorded start; the run ends at the recorded 350 us.
    let cfg = recorded_order();
    assert_eq!(
        run_with(t, "recorded", &cfg).makespan,
        SimTime::from_ps(350_000_000)
    );
    // Message driven on an ideal network: 100 + 70 us.
    assert_eq!(
        run_with(t, "ideal", &ReplayConfig::default()).makespan,
        SimTime::from_ps(170_000_000)
    );
}

/// A `[threaded]` entry that waits on a future (the second Charm++ check's `future`, F8).
/// PE 0: `Main::compute` creates `run` (event 2); `run` runs 100-110 us and suspends;
/// `SetFuture`, from PE 1 (event 7, created at 490 us in PE 1's 400 us `compute`), runs
/// 520-525 and awakens the thread (a creation for `dummy_thread_ep`, event 9, at 522); the
/// resume piece (`dummy_thread_ep`, event 9) runs 530-531 and `run` resumes 532-600 (the
/// same message again). A later resume piece names event 2, another entry's creation: a
/// stale envelope. The resume is triggered by the awaken, and the resumed `run` waits for
/// it; the stale resume has no trigger and follows the piece before it.
#[test]
fn projections_resumed_thread_waits_for_what_woke_it() {
    let dir = tmpdir("proj-thread");
    let sts = "PROJECTIONS_ID\nVERSION 11.0\nMACHINE \"test\"\nPROCESSORS 2\nTOTAL_CHARES 3\n\
               TOTAL_EPS 4\nTOTAL_MSGS 1\nCHARE 0 \"dummy_thread_chare\" -1\n\
               CHARE 1 \"Main\" -1\nCHARE 2 \"FutureBOC\" -1\n\
               ENTRY CHARE 0 \"dummy_thread_ep\" 0 0\nENTRY CHARE 1 \"run()\" 1 0\n\
               ENTRY CHARE 2 \"SetFuture(FutureInitMsg* impl_msg)\" 2 0\n\
               ENTRY CHARE 3 \"compute()\" 1 0\nMESSAGE 0 80\nEND\n";
    std::fs::write(dir.join("t.sts"), sts).unwrap();
    std::fs::write(
        dir.join("t.0.log"),
        "PROJECTIONS-RECORD 14\n\
         2 0 3 10 1 -1 80 0 0 0 0 0 0\n1 0 1 15 2 0 80 0\n3 0 3 20 1 0 0 0\n\
         2 0 1 100 2 0 80 0 0 0 0 0 0\n3 0 1 110 2 0 0 0\n\
         2 0 2 520 7 1 80 0 0 0 0 0 0\n1 0 0 522 9 0 0 0\n3 0 2 525 7 1 0 0\n\
         2 0 0 530 9 0 0 0 0 0 0 0 0\n3 0 0 531 9 0 0 0\n\
         2 0 1 532 2 0 80 0 0 0 0 0 0\n3 0 1 600 2 0 0 0\n\
         2 0 0 610 2 0 0 0 0 0 0 0 0\n3 0 0 612 2 0 0 0\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("t.1.log"),
        "PROJECTIONS-RECORD 3\n2 0 3 100 1 -1 80 0 0 0 0 0 0\n1 0 2 490 7 1 80 0\n\
         3 0 3 500 1 1 0 0\n",
    )
    .unwrap();
    let imported = imp(Format::Projections, &dir.join("t.sts"));
    let t = &imported.trace;
    let entry = |i: u32| {
        t.entries[t.block(trace::BlockId(i)).entry.index()]
            .name
            .clone()
    };
    let starts: Vec<(String, u64)> = (0..t.num_blocks() as u32)
        .map(|i| {
            let b = t.block(trace::BlockId(i));
            (entry(i), b.recorded_start.unwrap().as_ps() / 1_000_000)
        })
        .collect();
    let at = |name: &str, us: u64| {
        let i = starts
            .iter()
            .position(|(n, s)| n.ends_with(name) && *s == us)
            .unwrap_or_else(|| panic!("{name} at {us} us in {starts:?}"));
        trace::BlockId(i as u32)
    };
    let (set, wake, run0, run1, stale) = (
        at("SetFuture", 520),
        at("dummy_thread_ep", 530),
        at("run", 100),
        at("run", 532),
        at("dummy_thread_ep", 610),
    );
    let awaken = t.sends(set);
    assert_eq!(awaken.len(), 1);
    assert_eq!(
        t.block(wake).trigger,
        Some(awaken[0].msg),
        "the resume is the awaken's"
    );
    let mut deps = t.deps(run1).to_vec();
    deps.sort();
    assert_eq!(deps, [run0, wake], "the resumed run waits for its resume");
    assert_eq!(t.block(stale).trigger, None);
    assert_eq!(t.deps(stale), [run1]);
    assert_notes(
        &imported,
        &[
            "1 thread resumes (`dummy_thread_ep`) name no awaken record",
            "1 resumed threaded entries wait for the thread's resume",
        ],
    );
    // Chares free of their recorded order, 1 ms latency: PE 1's compute (0-400 us) sends at
    // 390 us; SetFuture runs 1390-1395 us, the awaken (1392 us) resumes the thread 1395-1396,
    // run's second piece 1396-1464 and the stale resume 1464-1466 us. Without the resume's
    // dependency the second piece ran at 20 us and the run ended at 1396 us.
    let cfg = ReplayConfig {
        object_order: Some(false),
        ..ReplayConfig::default()
    };
    let r = run_with(t, "latency:lat=1ms", &cfg);
    assert_eq!(r.makespan, SimTime::from_ps(1_466_000_000));
}

/// A real run of Charm++'s `future` example (`tests/data/charm-future`, how it was recorded
/// in its README): `[threaded]` entries waiting on futures. Every awaken that
/// `FutureBOC::SetFuture` writes triggers a thread resume, and the program's answer (the last
/// piece of `Main::run`, which printed it) descends, by triggers and dependencies alone, from
/// every `SetFuture` that woke a thread, unless the chain from it passes a `SetFuture` that
/// woke no one (a value set before its `get`: the reader finds it without suspending, and no
/// record says which thread read it; the PE's sequential object orders those). Before thread
/// ids and resumes were linked, 6 of the 21 waking `SetFuture`s reached the answer this way.
#[test]
fn projections_real_future_run_threads_wait_for_what_woke_them() {
    let sts = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/charm-future/fib.prj.sts");
    let imported = imp(Format::Projections, &sts);
    let t = &imported.trace;
    assert_notes(
        &imported,
        &[
            "25 singleton chares were created",
            "50 thread resumes (`dummy_thread_ep`) name no awaken record",
            "52 resumed threaded entries wait for the thread's resume",
            "20 pieces run in a thread",
        ],
    );
    let name = |b: trace::BlockId| t.entries[t.block(b).entry.index()].name.as_str();
    let ids: Vec<trace::BlockId> = t.block_ids().collect();
    let mut sender = std::collections::HashMap::new();
    for &b in &ids {
        for s in t.sends(b) {
            sender.insert(s.msg, b);
        }
    }
    let mut kids: Vec<Vec<trace::BlockId>> = vec![Vec::new(); ids.len()];
    for &b in &ids {
        let trig = t.block(b).trigger.and_then(|m| sender.get(&m).copied());
        for p in t.deps(b).iter().copied().chain(trig) {
            kids[p.index()].push(b);
        }
    }
    // Every awaken is consumed by a thread resume.
    let setters: Vec<trace::BlockId> = ids
        .iter()
        .copied()
        .filter(|&b| name(b).starts_with("FutureBOC::SetFuture"))
        .collect();
    assert_eq!(setters.len(), 25);
    let waking: Vec<trace::BlockId> = setters
        .iter()
        .copied()
        .filter(|&b| !t.sends(b).is_empty())
        .collect();
    assert_eq!(waking.len(), 21);
    for &s in &waking {
        assert!(
            kids[s.index()]
                .iter()
                .any(|&k| name(k).ends_with("dummy_thread_ep")),
            "SetFuture block {s:?} woke no thread resume"
        );
    }
    let answer = *ids
        .iter()
        .rev()
        .find(|&&b| name(b).starts_with("Main::run"))
        .unwrap();
    // Walk down from each waking SetFuture: it reaches the answer, or a silent SetFuture.
    let mut reached = 0;
    for &s in &waking {
        let mut seen = vec![false; ids.len()];
        let mut stack = vec![s];
        let (mut hits_answer, mut hits_silent) = (false, false);
        while let Some(x) = stack.pop() {
            if std::mem::replace(&mut seen[x.index()], true) {
                continue;
            }
            hits_answer |= x == answer;
            hits_silent |= x != s && setters.contains(&x) && t.sends(x).is_empty();
            stack.extend(kids[x.index()].iter().copied());
        }
        assert!(
            hits_answer || hits_silent,
            "SetFuture block {s:?}: its woken thread's work leads nowhere"
        );
        reached += hits_answer as usize;
    }
    assert_eq!(reached, 18);
    // The recorded order at the recorded delays ends where the recording did.
    let recorded_end = ids
        .iter()
        .map(|&b| t.block(b).recorded_start.unwrap().as_ps() + t.block(b).duration.as_ps())
        .max()
        .unwrap();
    let cfg = recorded_order();
    let end = run_with(t, "recorded", &cfg).makespan;
    let gap_ps = recorded_end.abs_diff(end.as_ps());
    assert!(gap_ps <= 5_000_000, "{end:?} vs recorded {recorded_end:?}");
}

/// An array broadcast counts in the clock estimate: each PE's array manager delivers it with
/// its own PE as source, so its creation is the one of that event and entry on the other PE.
/// `Main::go` on PE 0 creates the broadcast (event 5) at 110 us; `A[1]` takes it on PE 1 at
/// 105 us of PE 1's clock, which is therefore at least 5 us behind: PE 1 moves by +5 us and no
/// delay is floored (before, the note said one message began before its creation).
#[test]
fn projections_clock_offset_counts_array_broadcasts() {
    let dir = tmpdir("proj-clock-bcast");
    let sts = "PROJECTIONS_ID\nVERSION 11.0\nMACHINE \"test\"\nPROCESSORS 2\nTOTAL_CHARES 2\n\
               TOTAL_EPS 2\nTOTAL_MSGS 1\nCHARE 0 \"Main\" -1\nCHARE 1 \"A\" 1\n\
               ENTRY CHARE 0 \"go()\" 0 0\nENTRY CHARE 1 \"work()\" 1 0\nMESSAGE 0 80\nEND\n";
    std::fs::write(dir.join("b.sts"), sts).unwrap();
    std::fs::write(
        dir.join("b.0.log"),
        "PROJECTIONS-RECORD 5\n2 0 0 100 1 -1 80 0 0 0 0 0 0\n1 0 1 110 5 0 80 0\n\
         3 0 0 120 1 0 0 0\n2 0 1 130 5 0 80 0 0 0\n3 0 1 200 5 0 0 0\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("b.1.log"),
        "PROJECTIONS-RECORD 2\n2 0 1 105 5 1 80 0 1 0\n3 0 1 150 5 1 0 0\n",
    )
    .unwrap();
    let imported = imp(Format::Projections, &dir.join("b.sts"));
    assert!(
        imported
            .notes
            .iter()
            .any(|n| n.starts_with("the PEs' clocks disagree") && n.ends_with("PE 1 +5 us")),
        "{:?}",
        imported.notes
    );
    assert!(
        !imported.notes.iter().any(|n| n.contains("clock skew")),
        "{:?}",
        imported.notes
    );
    let t = &imported.trace;
    let a1 = t
        .block_ids()
        .find(|&b| t.objects[t.block(b).object.index()].name == "A[1]")
        .unwrap();
    assert_eq!(
        t.block(a1).recorded_start,
        Some(SimTime::from_ps(110_000_000))
    );
    assert!(t.block(a1).trigger.is_some(), "the broadcast triggers A[1]");
}

/// Real AMPI runs (`tests/data/ampi`, README): MPI ranks run as Charm++ threads, whose chare
/// AMPI renames `AMPI` and entry `rank`. The ranks' code is in those pieces; each is woken by
/// its rank's `ampi[r]` block (message handler, reduction or barrier result), so it belongs to
/// rank r's object, one per rank (`ampi`, `ampiParent`, `TCharm` are bound arrays). Before,
/// 96-98 % of the block time sat in the pinned `pe<p>` objects, and a rank piece did not wait
/// for a halo that its own handler had taken before it (jacobi1d +p2 at 2 us: 700 of 2,208
/// deliveries ended after the rank piece that used them had started; the third Charm++
/// check's F1 and F2).
#[test]
fn projections_ampi_ranks_are_objects_and_wait_for_their_messages() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ampi");
    let imported = imp(
        Format::Projections,
        &dir.join("jacobi1d/p2/jacobi1d.prj.sts"),
    );
    let t = &imported.trace;
    let mut names: Vec<&str> = t.objects.iter().map(|o| o.name.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "ampi[0]", "ampi[1]", "ampi[2]", "ampi[3]", "ampi[4]", "ampi[5]", "ampi[6]", "ampi[7]",
            "pe0", "pe1"
        ]
    );
    assert_notes(
        &imported,
        &["1432 thread resumes were woken by an array element's block"],
    );
    let total: u64 = t.iter_blocks().map(|b| b.duration.as_ps()).sum();
    let in_ranks: u64 = t
        .iter_blocks()
        .filter(|b| t.objects[b.object.index()].name.starts_with("ampi["))
        .map(|b| b.duration.as_ps())
        .sum();
    assert!(
        in_ranks as f64 >= 0.98 * total as f64,
        "{in_ranks} of {total} ps"
    );
    // The recorded order at the recorded delays ends where the recording did (0.544650 s).
    let end = run_with(t, "recorded", &recorded_order()).makespan;
    assert!(
        end.as_ps().abs_diff(544_650_000_000) <= 5_000_000,
        "{end:?}"
    );
    // AMPI's point-to-point handlers are outside their rank's order (they run when the message
    // arrives). Message driven at 2 us, a rank piece that ends a wait for a message (woken by
    // its rank's `ampi::generic`) starts after every `ampi::generic` of its rank recorded
    // before it: the messages the wait needed, those taken in before it waited included.
    let handler = |b: trace::BlockId| t.entries[t.block(b).entry.index()].name == "ampi::generic";
    let outside: Vec<&str> = t
        .entries
        .iter()
        .filter(|e| e.outside_object_order)
        .map(|e| e.name.as_str())
        .collect();
    assert_eq!(outside, ["ampi::generic"]);
    let cfg = ReplayConfig {
        timeline: true,
        ..ReplayConfig::default()
    };
    let r = run_with(t, "latency:lat=2us", &cfg);
    let (start, finish) = block_times(t, &r);
    let sender = senders(t);
    let mut latest_handler_end = vec![SimTime::ZERO; t.objects.len()];
    let (mut handlers, mut checked, mut early) = (0, 0, 0);
    for b in t.block_ids() {
        let blk = t.block(b);
        let o = blk.object.index();
        if handler(b) {
            latest_handler_end[o] = latest_handler_end[o].max(finish[b.index()]);
            handlers += 1;
            continue;
        }
        if t.entries[blk.entry.index()].name != "AMPI::rank" {
            continue;
        }
        let waker = blk.trigger.and_then(|m| sender.get(&m).copied());
        if waker.is_some_and(|w| handler(w) && t.block(w).object == blk.object) {
            assert!(
                start[b.index()] >= latest_handler_end[o],
                "block {b:?} of {} ended a wait before its rank's messages were in",
                t.objects[o].name
            );
            checked += 1;
        } else if start[b.index()] < latest_handler_end[o] {
            // Computing while a halo taken in earlier in the recording is still on its way.
            early += 1;
        }
    }
    assert!(
        early > 0,
        "every rank piece waited for its rank's earlier handlers"
    );
    assert!(
        handlers >= 1100 && checked >= 500,
        "{handlers} {checked} {early}"
    );
    eprintln!(
        "{handlers} handlers, {checked} waits ended, {early} pieces ran before an earlier handler"
    );
    // Latency: an Allreduce per iteration is a reduction to PE 0 and a broadcast back, so
    // 1 ms costs at least 2 ms per iteration (100 iterations).
    let slow = run_with(t, "latency:lat=1ms", &ReplayConfig::default()).makespan;
    let per_iter_ms = (slow.as_ps() - r.makespan.as_ps()) as f64 / 1e9 / 100.0;
    assert!((1.9..=2.5).contains(&per_iter_ms), "{per_iter_ms} ms");
}

/// AMPI `coll` (rank r computes r+1 units; Bcast, Reduce, Barrier per iteration): the +p1
/// log on 2 PEs (`--map block`) predicts the measured speedup (untraced medians 0.9018 s ->
/// 0.6654 s, 1.355). Before the ranks were objects it predicted 1.00.
#[test]
fn projections_ampi_one_to_two_pes_predicts_the_measured_speedup() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ampi");
    let t = imp(Format::Projections, &dir.join("coll/p1/coll.prj.sts")).trace;
    let one = run_with(&t, "latency:lat=2us", &ReplayConfig::default()).makespan;
    let cfg = ReplayConfig {
        pes: Some(2),
        mapping: replay::Mapping::Block,
        ..ReplayConfig::default()
    };
    let two = run_with(&t, "latency:lat=2us", &cfg).makespan;
    let predicted = one.as_ps() as f64 / two.as_ps() as f64;
    let measured = 0.9018 / 0.6654;
    eprintln!(
        "coll: predicted speedup {predicted:.3} ({one:?} -> {two:?}), measured {measured:.3}"
    );
    assert!(
        (predicted / measured - 1.0).abs() <= 0.10,
        "predicted {predicted}, measured {measured}"
    );
}

/// AMPI `jacobi1d` (each iteration: Isend/Irecv halos to both neighbours, compute, Waitall,
/// Allreduce): the +p1 log on 2 PEs (`--map block`) predicts what the +p2 log's own blocks
/// give, once both have the same CPU cost. In the +p1 run rank r took in rank r+1's halo
/// before it computed; in object order that halo's handler held the computation back, so each
/// PE waited for the other's boundary rank every iteration (661 ms, 1.17 PEs busy on average,
/// the third Charm++ check). AMPI's handlers are outside their rank's order: a rank computes
/// while its halos travel and waits for them where its `MPI_Waitall` ended.
///
/// The measured run is slower than both (untraced medians 0.8640 s on 1 PE, 0.5637 s on 2,
/// speedup 1.53): with two processes on this 2-core machine each piece takes longer (the +p2
/// log's blocks sum to 16 % more than the +p1 log's, PE 1's to 24 % more than half), which a
/// 1-PE log cannot show.
#[test]
fn projections_ampi_halo_ranks_compute_while_their_halos_travel() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ampi");
    let one = imp(
        Format::Projections,
        &dir.join("jacobi1d/p1/jacobi1d.prj.sts"),
    )
    .trace;
    let two = imp(
        Format::Projections,
        &dir.join("jacobi1d/p2/jacobi1d.prj.sts"),
    )
    .trace;
    let busy = |t: &trace::Trace| t.iter_blocks().map(|b| b.duration.as_ps()).sum::<u64>();
    let cfg = ReplayConfig {
        pes: Some(2),
        mapping: replay::Mapping::Block,
        ..ReplayConfig::default()
    };
    let predicted = run_with(&one, "latency:lat=2us", &cfg).makespan.as_ps();
    // Without waiting on each other, the two PEs share the work (0.78 s) evenly.
    let even = busy(&one) / 2;
    assert!(
        predicted as f64 <= 1.05 * even as f64,
        "{predicted} ps for {even} ps of work per PE"
    );
    // The +p2 log at the +p1 log's CPU cost.
    let same_cpu = ReplayConfig {
        cpu_scale: replay::CpuScale::Uniform(
            sim_core::Ratio::new(busy(&one) / 1_000_000, busy(&two) / 1_000_000).unwrap(),
        ),
        ..ReplayConfig::default()
    };
    let recorded_two = run_with(&two, "latency:lat=2us", &same_cpu)
        .makespan
        .as_ps();
    eprintln!(
        "jacobi1d: +p1 log on 2 PEs {predicted} ps, +p2 log at its CPU cost {recorded_two} ps"
    );
    assert!(
        (predicted as f64 / recorded_two as f64 - 1.0).abs() <= 0.07,
        "{predicted} against {recorded_two}"
    );
}

/// AMPI messages a rank took in before it waited for them (the fourth Charm++ check,
/// `tests/data/ampi/{polling,redwait}`; the programs mark each receive with a Projections
/// user event, which gave the check every message's consumer). `polling`: `MPI_Irecv` early,
/// compute in chunks with `MPI_Test` between them; a failed test yields, so the piece that
/// uses the message is resumed by the rank's own yield, and before the fix no early message
/// was its dependency (+p2 at 2 us: 101 consumers ran up to 19.7 ms before their message).
/// `redwait`: `MPI_Wait` on a receive after an `MPI_Allreduce`: the piece woken by the
/// reduction's result finds the message in. Checked here as those rules: message driven at
/// 2 us (and +p1 on 2 PEs), every piece resumed by its rank's yield starts after every
/// earlier `ampi::generic` of its rank, and so does every `redwait` piece woken by
/// `ampi::rednResult`.
#[test]
fn projections_ampi_polling_and_waiting_after_a_reduction_use_early_messages() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ampi");
    for (log, woken_by, pes) in [
        ("polling/p2/polling.prj.sts", "AMPI::rank", None),
        ("polling/p1/polling.prj.sts", "AMPI::rank", Some(2)),
        ("redwait/p1/redwait.prj.sts", "ampi::rednResult", Some(2)),
    ] {
        let imported = imp(Format::Projections, &dir.join(log));
        let t = &imported.trace;
        let name = |b: trace::BlockId| t.entries[t.block(b).entry.index()].name.as_str();
        let sender = senders(t);
        let cfg = ReplayConfig {
            timeline: true,
            pes,
            mapping: if pes.is_some() {
                replay::Mapping::Block
            } else {
                replay::Mapping::Recorded
            },
            ..ReplayConfig::default()
        };
        let r = run_with(t, "latency:lat=2us", &cfg);
        let (start, finish) = block_times(t, &r);
        let mut handler_end = vec![SimTime::ZERO; t.objects.len()];
        let mut checked = 0;
        for b in t.block_ids() {
            let blk = t.block(b);
            let o = blk.object.index();
            if name(b) == "ampi::generic" {
                handler_end[o] = handler_end[o].max(finish[b.index()]);
                continue;
            }
            let waker = blk.trigger.and_then(|m| sender.get(&m).copied());
            let Some(w) = waker.filter(|&w| t.block(w).object == blk.object) else {
                continue;
            };
            if name(b) == "AMPI::rank" && name(w) == woken_by {
                assert!(
                    start[b.index()] >= handler_end[o],
                    "{log}: block {b:?} of {} (woken by {woken_by}) ran before its rank's messages were in",
                    t.objects[o].name
                );
                checked += 1;
            }
        }
        assert!(checked >= 90, "{log}: {checked}");
        // The recorded order at the recorded delays still ends where the recording did.
        let miss = faithful_miss_ps(t);
        assert!(miss <= 100_000_000, "{log}: {miss} ps");
    }
}

/// A reduction's contribution is at the end of its contributor's piece (redwait: each rank
/// computes, then calls `MPI_Allreduce`). The last local contributor's piece is split at its
/// send: its work runs as soon as it may, and only the tail that sends the result waits for
/// the other ranks' pieces. Before the split the whole piece waited: on 2 PEs each iteration
/// ran the last contributor's work after the other PE's, 491.3 ms against 451.9 ms now,
/// where the busier PE computes for 407.5 ms (the +p1 log's pieces vary by iteration: the
/// recording shared the machine).
#[test]
fn projections_a_reduction_waits_at_the_contribution_not_before_the_work() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ampi");
    let imported = imp(Format::Projections, &dir.join("redwait/p1/redwait.prj.sts"));
    let t = &imported.trace;
    assert!(
        imported
            .notes
            .iter()
            .any(|n| n.contains("104 of them reach that point (the send, or the phase's end) after they began and are split there")),
        "{:?}",
        imported.notes
    );
    let name = |b: trace::BlockId| t.entries[t.block(b).entry.index()].name.as_str();
    let cfg = ReplayConfig {
        timeline: true,
        pes: Some(2),
        mapping: replay::Mapping::Block,
        ..ReplayConfig::default()
    };
    let r = run_with(t, "latency:lat=2us", &cfg);
    let (start, finish) = block_times(t, &r);
    let (mut tails, mut overlapped) = (0, 0);
    for b in t.block_ids().skip(1) {
        // A tail follows its work: the same rank, recorded back to back, no trigger; it
        // depends on the work and on the other ranks' latest pieces.
        let tail = t.block(b);
        let work_id = trace::BlockId(b.0 - 1);
        let work = t.block(work_id);
        let deps = t.deps(b);
        let back_to_back = work.recorded_start.unwrap().as_ps() + work.duration.as_ps()
            == tail.recorded_start.unwrap().as_ps();
        let split = tail.trigger.is_none()
            && work.object == tail.object
            && deps.first() == Some(&work_id)
            && deps.len() > 1
            && back_to_back;
        if !split {
            continue;
        }
        assert_eq!((name(b), name(work_id)), ("AMPI::rank", "AMPI::rank"));
        // The contribution is the tail's first send, at its start.
        assert_eq!(
            t.sends(b).first().map(|s| s.offset),
            Some(SimDuration::ZERO)
        );
        assert!(
            deps.len() >= 8,
            "the work and the 7 other ranks' latest pieces"
        );
        let others_end = deps[1..].iter().map(|d| finish[d.index()]).max().unwrap();
        assert!(start[b.index()] >= others_end);
        tails += 1;
        // The work ran while another rank was still computing.
        overlapped += usize::from(start[work_id.index()] < others_end);
    }
    // One per MPI_Allreduce (100 iterations), and the start-up's collectives.
    assert_eq!(tails, 104);
    // 91 of 104 here; without the split no block is a tail and the work waits for the others.
    assert!(overlapped >= 80, "{overlapped} of {tails}");
    let busiest = *r.pe_busy_ps.iter().max().unwrap();
    let ratio = r.makespan.as_ps() as f64 / busiest as f64;
    assert!(
        ratio < 1.15,
        "makespan {} / busiest PE {busiest} ps = {ratio}",
        r.makespan
    );
}

/// A CkMulticast section loop across two PEs (`tests/data/charm-secloop`, README): PE 0's
/// `Check[0]::next` multicasts to the section, whose copy for PE 1 is unpacked by an untraced
/// handler that delivers `Check::recvMsg` to PE 1's members; their section reduction ends in
/// `Main::done`, which starts the next `next`. No traced message goes between the PEs, and
/// PE 1's clock is behind: a copy seems unpacked before its pack. Before, the pairing took
/// the latest pack not later than the unpack, a pack of the previous iteration, for 87 of the
/// 99 copies (the third Charm++ check's F3), so at 1 ms of latency an iteration cost 0.27 ms
/// more instead of at least 2 ms (a multicast and a reduction message cross PEs). Now a copy
/// pairs with a pack of a piece that delivers the same entry, the copies measure the clocks
/// (PE 1 +30 us), and every copy comes from its iteration's `next`.
#[test]
fn projections_multicast_copies_under_clock_skew_come_from_their_root() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/charm-secloop");
    let imported = imp(Format::Projections, &dir.join("p2/secloop.prj.sts"));
    assert_notes(&imported, &["the PEs' clocks disagree"]);
    assert!(
        imported
            .notes
            .iter()
            .any(|n| n.ends_with("relative to PE 0: PE 1 +30 us")),
        "{:?}",
        imported.notes
    );
    let t = &imported.trace;
    let name = |b: trace::BlockId| t.entries[t.block(b).entry.index()].name.as_str();
    let sender = senders(t);
    // PE 1's multicast handlers: untraced blocks of `pe1` that deliver `Check::recvMsg`.
    let pe1 = t.objects.iter().position(|o| o.name == "pe1").unwrap();
    let mut from = std::collections::BTreeMap::new();
    for b in t.block_ids() {
        let blk = t.block(b);
        let delivers = t
            .sends(b)
            .iter()
            .filter(|s| t.entries[s.entry.index()].name == "Check::recvMsg");
        if blk.object.index() == pe1 && name(b) == "(runtime)" && delivers.count() >= 2 {
            let s = blk.trigger.and_then(|m| sender.get(&m).copied());
            *from.entry(s.map_or("none", name)).or_insert(0) += 1;
        }
    }
    // The first copy is `createSection`'s (it calls `next(0)` inline); then one per `next`.
    assert_eq!(from.get("Check::next"), Some(&99), "{from:?}");
    let one = |lat: &str| run_with(t, lat, &ReplayConfig::default()).makespan.as_ps();
    let per_iteration_ms = (one("latency:lat=1ms") - one("latency:lat=2us")) as f64 / 1e9 / 99.0;
    assert!(per_iteration_ms >= 1.9, "{per_iteration_ms} ms");
    // The faithful replay ends where the recording did (PE 1's end moved by its +30 us).
    let miss = faithful_miss_ps(t);
    assert!(miss <= 5_000_000, "{miss} ps");
}

/// A `[threaded]` array entry started by a broadcast (`tests/data/charm-threaded-ring`,
/// README): the array manager (`CkArray::recvBroadcast`) runs each element's thread in its
/// own pieces, with the element's index in the id fields. Those pieces are the element's, so
/// the +p1 log predicts the 2-PE run; before, 98 % of the work sat in `pe0` and the
/// prediction was speedup 1.00 (the third Charm++ check's F4). Element 0 writes zeros, which
/// cannot be told from no index: its thread stays in `pe0`.
#[test]
fn projections_threaded_array_entry_started_by_a_broadcast_is_the_elements() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/charm-threaded-ring");
    for run in ["p1", "p2"] {
        let imported = imp(
            Format::Projections,
            &dir.join(run).join("threaded_ring2.prj.sts"),
        );
        assert_notes(&imported, &["7 pieces of an array manager run"]);
        let t = &imported.trace;
        for r in 1..8 {
            let name = format!("Ring[{r}]");
            let ms: u64 = t
                .iter_blocks()
                .filter(|b| t.objects[b.object.index()].name == name)
                .map(|b| b.duration.as_ps())
                .sum::<u64>()
                / 1_000_000_000;
            assert!((80..=95).contains(&ms), "{run}: {name} holds {ms} ms");
        }
    }
    let t = imp(Format::Projections, &dir.join("p1/threaded_ring2.prj.sts")).trace;
    let one = run_with(&t, "latency:lat=2us", &ReplayConfig::default()).makespan;
    let cfg = ReplayConfig {
        pes: Some(2),
        mapping: replay::Mapping::Block,
        ..ReplayConfig::default()
    };
    let two = run_with(&t, "latency:lat=2us", &cfg).makespan;
    let predicted = one.as_ps() as f64 / two.as_ps() as f64;
    // Untraced medians 0.6570 s -> 0.3863 s (1.70); predicted 1.98, 16 % high (cause not
    // established).
    let measured = 0.6570 / 0.3863;
    eprintln!("threaded ring: predicted speedup {predicted:.3}, measured {measured:.3}");
    assert!(
        (predicted / measured - 1.0).abs() <= 0.20,
        "predicted {predicted}, measured {measured}"
    );
    // The +p2 log at its recorded order and delays ends at the recorded 0.394466 s.
    let t2 = imp(Format::Projections, &dir.join("p2/threaded_ring2.prj.sts")).trace;
    let end = run_with(&t2, "recorded", &recorded_order()).makespan;
    assert!(
        end.as_ps().abs_diff(394_466_000_000) <= 5_000_000,
        "{end:?}"
    );
}
