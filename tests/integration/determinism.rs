//! Same inputs and seed => byte-identical outputs.

use crate::cli::{tmpdir, whatif};

#[test]
fn two_replays_give_identical_json_and_timelines() {
    let dir = tmpdir("determinism");
    let tr = dir.join("h.trace");
    let out = whatif(&[
        "gen",
        "halo3d",
        "--dims",
        "4x3x3",
        "--iters",
        "5",
        "--jitter",
        "0.2",
        "--seed",
        "9",
        "--out",
        tr.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut runs = Vec::new();
    for i in 0..2 {
        let tl = dir.join(format!("tl{i}.csv"));
        let out = whatif(&[
            "replay",
            tr.to_str().unwrap(),
            "--net",
            "alphabeta:lat=2us,bw=1GB/s",
            "--pes",
            "7",
            "--json",
            "--timeline",
            tl.to_str().unwrap(),
            "-q",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        runs.push((out.stdout, std::fs::read(&tl).unwrap()));
    }
    assert!(
        runs[0].0 == runs[1].0,
        "JSON differs between identical runs"
    );
    assert!(
        runs[0].1 == runs[1].1,
        "timeline differs between identical runs"
    );
    assert!(runs[0].1.len() > 1000);

    // Same seed => same trace bytes; another seed => different jitter.
    let a = dir.join("a.trace");
    let b = dir.join("b.trace");
    let c = dir.join("c.trace");
    for (p, seed) in [(&a, "9"), (&b, "9"), (&c, "10")] {
        let out = whatif(&[
            "gen",
            "ring",
            "--ranks",
            "5",
            "--jitter",
            "0.5",
            "--seed",
            seed,
            "--out",
            p.to_str().unwrap(),
        ]);
        assert!(out.status.success());
    }
    let (a, b, c) = (
        std::fs::read(a).unwrap(),
        std::fs::read(b).unwrap(),
        std::fs::read(c).unwrap(),
    );
    assert!(a == b, "same seed, different trace bytes");
    assert!(a != c, "different seeds, same trace bytes");
}
