//! Importers on real traces from other projects (skipped when the shared data is absent), on
//! hand-written inputs with closed-form answers, and on broken inputs.

use crate::cli::{tmpdir, whatif};
use crate::{run_with, shared_data};
use importers::{Format, ImportError, ImportOptions, import};
use replay::ReplayConfig;
use sim_core::SimTime;
use std::path::Path;

fn imp(format: Format, path: &Path) -> importers::Imported {
    import(format, path, &ImportOptions::default())
        .unwrap_or_else(|e| panic!("import {}: {e}", path.display()))
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
    let out = tmpdir("bgtrace").join("j0.trace");
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
    assert!(matches!(e, ImportError::Io { .. }), "{e}");
}
