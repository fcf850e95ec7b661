//! `analysis::phases` (MK's communication phases) against MK's closed forms on the programs
//! whose timing is known exactly, and `whatif phases` on the command line.

use analysis::phases::{Kind, Phases, phases};
use emulator::Timing;
use network_models::NetSpec;
use replay::ReplayConfig;
use sim_core::{Bandwidth, SimDuration};

fn kv(k: &str, v: &str) -> (String, String) {
    (k.to_string(), v.to_string())
}

/// Emulates `program` on `pes`, replays it on `net` with a timeline, finds its phases.
fn phases_of(program: &str, sets: &[(String, String)], pes: u32, net: &str) -> Phases {
    let t = crate::emulator::emulate(program, sets, pes, net, Timing::Model);
    let r = crate::run_with(
        &t,
        net,
        &ReplayConfig {
            timeline: true,
            ..Default::default()
        },
    );
    let spec: NetSpec = net.parse().unwrap();
    phases(&t, &r, &spec).expect("phases")
}

fn tau(lat_us: u64, bw: &str, bytes: u64) -> u64 {
    SimDuration::from_us(lat_us).as_ps()
        + Bandwidth::parse(bw).unwrap().transfer_time(bytes).as_ps()
}

/// PGE without CPU overheads: MK's phases exactly. PGE1 has a forward and a backward pipeline
/// of depth P; PGE2 two forward pipelines of depth P/2 (disjoint domains, overlapped), the
/// middle exchange (synchronous, tau(m1)) and two backward pipelines. Each pipeline's
/// simulated span is MK's Fill + Remain, and T_s + T_p is the makespan.
#[test]
fn pge_phases_are_mks_pipelines_exactly() {
    let net = "alphabeta:lat=20us,bw=50MB/s";
    let (n, arrays, k) = (1024u64, 96u64, 8u64);
    for (pes, ways) in [(8u32, 1u32), (8, 2), (16, 2), (4, 1)] {
        let sets = [
            kv("n", &n.to_string()),
            kv("arrays", &arrays.to_string()),
            kv("k", &k.to_string()),
            kv("ways", &ways.to_string()),
            kv("row_cost", "50ns"),
        ];
        let ph = phases_of("pge", &sets, pes, net);
        let rows = n / pes as u64;
        let w = k * rows * 50_000;
        let b = arrays.div_ceil(k);
        let depth = if ways == 1 { pes } else { pes / 2 };
        let pipeline = (depth as u64 - 1) * (tau(20, "50MB/s", 2 * k * 8) + w) + b * w;
        let pipes: Vec<_> = ph
            .phases
            .iter()
            .filter(|p| p.kind == Kind::Pipeline)
            .collect();
        assert_eq!(
            pipes.len(),
            2 * ways as usize,
            "P={pes} ways={ways}: {ph:#?}"
        );
        for p in &pipes {
            assert_eq!(p.depth, depth, "{}", p.name);
            assert_eq!(p.instances.len(), 1);
            let i = &p.instances[0];
            assert_eq!(i.rounds_or_width as u64, b, "{} width", p.name);
            assert_eq!(i.analytic_ps, pipeline, "{} analytic", p.name);
            assert_eq!(i.simulated_ps, pipeline, "{} simulated", p.name);
            assert_eq!(p.explain(), None);
        }
        let syncs: Vec<_> = ph
            .phases
            .iter()
            .filter(|p| p.kind == Kind::Synchronous)
            .collect();
        if ways == 2 {
            assert_eq!(syncs.len(), 1, "{ph:#?}");
            let m1 = tau(20, "50MB/s", 2 * arrays * 8);
            assert_eq!(syncs[0].instances[0].analytic_ps, m1);
            assert_eq!(syncs[0].instances[0].simulated_ps, m1);
            assert_eq!((syncs[0].senders, syncs[0].receivers), (2, 2));
        } else {
            assert!(syncs.is_empty());
        }
        assert_eq!(ph.t_s_ps, 0, "P={pes} ways={ways}");
        assert_eq!(ph.analytic_ps(), ph.makespan_ps, "P={pes} ways={ways}");
    }
}

/// With send and receive overheads MK's general pipeline form counts s + r once more than the
/// simulator takes (the source receives nothing and the turn forwards nothing; see the closed
/// forms), and the phase table shows exactly that difference.
#[test]
fn pge_with_overheads_differs_from_mk_by_one_s_plus_r() {
    let (s, r) = (2u64, 3u64);
    let net = format!("alphabeta:lat=20us,bw=50MB/s,o_send={s}us,o_recv={r}us");
    let sets = [
        kv("n", "1024"),
        kv("arrays", "96"),
        kv("k", "8"),
        kv("ways", "1"),
        kv("row_cost", "50ns"),
    ];
    let ph = phases_of("pge", &sets, 8, &net);
    assert_eq!(ph.phases.len(), 2);
    for p in &ph.phases {
        assert_eq!((p.s_ps, p.r_ps), (s * 1_000_000, r * 1_000_000));
        let i = &p.instances[0];
        assert_eq!(
            i.analytic_ps - i.simulated_ps,
            (s + r) * 1_000_000,
            "{}",
            p.name
        );
    }
}

/// ATM2D on 2 x 2: one synchronous phase, one instance per step of two rounds, each exactly
/// 2 (tau(m) + s + r); T_s is the steps' lambda^2 work and T_s + T_p the makespan.
#[test]
fn atm2d_steps_are_synchronous_phases_of_two_rounds() {
    let net = "alphabeta:lat=10us,bw=1GB/s,o_send=2us,o_recv=3us";
    let (lambda, steps) = (64u64, 5u64);
    let sets = [
        kv("lambda", &lambda.to_string()),
        kv("steps", &steps.to_string()),
        kv("cell_cost", "100ns"),
    ];
    let ph = phases_of("atm2d", &sets, 4, net);
    assert_eq!(ph.phases.len(), 1, "{ph:#?}");
    let p = &ph.phases[0];
    assert_eq!(p.kind, Kind::Synchronous);
    assert_eq!(p.instances.len() as u64, steps);
    let want = 2 * (tau(10, "1GB/s", 2 * lambda * 8) + 5_000_000);
    for i in &p.instances {
        assert_eq!(i.rounds_or_width, 2);
        assert_eq!(i.messages, 8);
        assert_eq!(i.analytic_ps, want);
        assert_eq!(i.simulated_ps, want, "step {}", i.epoch);
    }
    assert_eq!(ph.t_s_ps, steps * lambda * lambda * 100_000);
    assert_eq!(ph.analytic_ps(), ph.makespan_ps);
}

/// On a 4 x 4 grid the edge objects have fewer exchanges and start the next step early: the
/// steps after the first take longer than four rounds, and the table names the skew (MK's
/// alpha sqrt(P) term was fitted to exactly this).
#[test]
fn atm2d_on_a_larger_grid_shows_skew() {
    let sets = [
        kv("lambda", "128"),
        kv("steps", "4"),
        kv("cell_cost", "1us"),
    ];
    let ph = phases_of("atm2d", &sets, 16, "paragon");
    let p = &ph.phases[0];
    assert_eq!(p.instances.len(), 4);
    assert!(p.instances.iter().all(|i| i.rounds_or_width == 4));
    let first = &p.instances[0];
    assert_eq!(first.simulated_ps, first.analytic_ps);
    let later = &p.instances[1];
    assert!(later.simulated_ps > later.analytic_ps, "{later:?}");
    assert!(later.why.skew_ps > 0);
    let why = p.explain().expect("a difference to explain");
    assert!(why.contains("skew"), "{why}");
}

/// The command line: the table, the CSV of instances, and a clear error for a missing file.
#[test]
fn phases_command_prints_the_table_and_writes_instances() {
    let dir = crate::cli::tmpdir("phases-cli");
    let t = dir.join("pge.trace");
    let o = crate::cli::whatif(&[
        "emulate",
        "pge",
        "--pes",
        "8",
        "--set",
        "ways=2",
        "--net",
        "paragon",
        "--out",
        t.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", crate::cli::stderr(&o));
    let csv = dir.join("phases.csv");
    let o = crate::cli::whatif(&[
        "phases",
        t.to_str().unwrap(),
        "--net",
        "paragon",
        "--csv",
        csv.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", crate::cli::stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for needle in [
        "forward#1",
        "forward#2",
        "backward#1",
        "pipeline",
        "synchronous",
    ] {
        assert!(out.contains(needle), "{needle} in\n{out}");
    }
    assert!(out.contains("whole run: MK's T_s + T_p"), "{out}");
    let rows = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(rows.lines().count(), 1 + 5, "{rows}");
    assert!(rows.starts_with("phase,kind,epoch,begin_ps,simulated_ps,analytic_ps"));
    let o = crate::cli::whatif(&["phases", dir.join("absent.trace").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", crate::cli::stderr(&o));
    assert!(crate::cli::stderr(&o).contains("absent.trace"));
}

/// `whatif predict` on PGE2: fitted on P = 2..16, where dividing the rows dominates, the model
/// falls as 1/P; at P = 128 the pipelines' fill (depth P/2) dominates, the simulation lands
/// far above the band, and the phase analysis names the fill.
#[test]
fn predict_names_pipeline_fill_when_the_fit_misses() {
    let dir = crate::cli::tmpdir("predict-pge");
    let csv = dir.join("p.csv");
    let o = crate::cli::whatif(&[
        "predict",
        "pge",
        "--small",
        "2,4,8,16",
        "--at",
        "128",
        "--set",
        "ways=2",
        "--set",
        "row_cost=200ns",
        "--machine",
        "paragon",
        "--csv",
        csv.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", crate::cli::stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("P^(-1)"), "{out}");
    assert!(out.contains("simulation outside the band"), "{out}");
    assert!(out.contains("pipeline fill: depth 8 -> 64"), "{out}");
    let rows = std::fs::read_to_string(&csv).unwrap();
    let last = rows.lines().last().unwrap();
    assert!(last.starts_with("128,target,"), "{rows}");
    assert!(last.ends_with(",true"), "{rows}");
    // The simulated value is the program emulated at 128 and replayed: compare with a direct
    // emulation.
    let t = crate::emulator::emulate(
        "pge",
        &[kv("ways", "2"), kv("row_cost", "200ns")],
        128,
        "paragon",
        Timing::Model,
    );
    let direct = crate::run(&t, "paragon").makespan.as_ps() as f64 * 1e-12;
    let sim: f64 = last.split(',').nth(2).unwrap().parse().unwrap();
    assert!(
        (sim - direct).abs() <= 1e-12 * direct.max(1.0),
        "{sim} vs {direct}"
    );
}

/// `whatif predict` where the fit holds (stencil3d, strong scaling, P = 32: within 1% of the
/// simulation) and where the program runs out of objects (P = 128 > 64 objects): the
/// explanation says so instead of trusting the 1/P curve.
#[test]
fn predict_agrees_until_the_objects_run_out() {
    let o = crate::cli::whatif(&[
        "predict",
        "stencil3d",
        "--small",
        "2,4,8,16",
        "--at",
        "32,128",
        "--set",
        "grid=32x32x32",
        "--set",
        "block=8x8x8",
        "--json",
        "-q",
    ]);
    assert!(o.status.success(), "{}", crate::cli::stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 6);
    let at = |p: u64| {
        rows.iter()
            .find(|r| r["pes"] == p && r["role"] == "target")
            .unwrap()
    };
    let r32 = at(32);
    let (sim, an) = (
        r32["simulated_s"].as_f64().unwrap(),
        r32["analytic_s"].as_f64().unwrap(),
    );
    assert!((sim - an).abs() / sim < 0.01, "{sim} vs {an}");
    let r128 = at(128);
    assert_eq!(r128["outside_band"], true);
    let why = r128["why"].to_string();
    assert!(why.contains("only 64 of 128 PEs run anything"), "{why}");
}

#[test]
fn predict_refuses_too_few_small_runs() {
    let o = crate::cli::whatif(&["predict", "pge", "--small", "4,8,8", "--at", "64"]);
    assert_eq!(o.status.code(), Some(2), "{}", crate::cli::stderr(&o));
    assert!(crate::cli::stderr(&o).contains("at least 3 distinct"));
    // A target whose emulated PEs alone would not fit in memory is refused before any run.
    let o = crate::cli::whatif(&["predict", "pge", "--small", "2,4,8", "--at", "4000000000"]);
    assert_eq!(o.status.code(), Some(2), "{}", crate::cli::stderr(&o));
    assert!(crate::cli::stderr(&o).contains("memory limit"));
}
