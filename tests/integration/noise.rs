//! OS noise (issue 16, part 4): periodic detours as closed forms, jitter as the expected
//! maximum of P draws on a bulk-synchronous workload, determinism by seed.

use crate::run_with;
use replay::{Noise, ReplayConfig};
use sim_core::SimDuration;
use trace::{Block, Destination, MsgId, ObjectId, PeId, Send, Trace, TraceBuilder, TraceMeta};

const US: u64 = 1_000_000;

fn noisy(spec: &str, seed: u64) -> ReplayConfig {
    let mut noise: Noise = spec.parse().unwrap();
    noise.seed = seed;
    ReplayConfig {
        noise,
        ..ReplayConfig::default()
    }
}

fn send(msg: MsgId, to: ObjectId, offset: SimDuration, e: trace::EntryId) -> Send {
    Send {
        msg,
        offset,
        dest: Destination::Object(to),
        bytes: 8,
        entry: e,
    }
}

/// `n` blocks of `d` in a chain on one PE, each triggered by the previous one's message.
fn chain(n: usize, d: SimDuration) -> Trace {
    let mut b = TraceBuilder::new(TraceMeta {
        name: "chain".into(),
        recorded_pes: 1,
        ..Default::default()
    });
    let e = b.entry("work");
    let objs: Vec<_> = (0..n).map(|i| b.object(format!("o{i}"), PeId(0))).collect();
    let msgs: Vec<_> = (0..n).map(|_| b.new_msg()).collect();
    for i in 0..n {
        let sends = if i + 1 < n {
            vec![send(msgs[i], objs[i + 1], d, e)]
        } else {
            vec![]
        };
        b.block(
            Block {
                trigger: (i > 0).then(|| msgs[i - 1]),
                ..Block::new(objs[i], e, d)
            },
            &[],
            &sends,
        );
    }
    b.finish().unwrap()
}

#[test]
fn aligned_detours_stretch_a_chain_by_the_closed_form() {
    // 250 us of work from t = 0 with 10 us lost every 100 us, windows at 0, 100, 200:
    // [10, 100) + [110, 200) + [210, 280) -> 280 us, on every delivery path.
    let t = chain(5, SimDuration::from_us(50));
    for net in ["latency:lat=0", "loggops:L=0,o=0,g=0,G=0"] {
        let r = run_with(
            &t,
            net,
            &noisy("detour:every=100us,lose=10us,phase=aligned", 1),
        );
        assert_eq!(r.makespan.as_ps(), 280 * US, "{net}");
    }
    // Without noise: 250 us.
    assert_eq!(
        run_with(&t, "latency:lat=0", &ReplayConfig::default())
            .makespan
            .as_ps(),
        250 * US
    );
    // A random phase moves the windows: still 250 us of work plus 2 or 3 windows.
    for seed in 1..20 {
        let r = run_with(
            &t,
            "latency:lat=0",
            &noisy("detour:every=100us,lose=10us", seed),
        );
        let m = r.makespan.as_ps();
        assert!((270 * US..=280 * US).contains(&m), "seed {seed}: {m}");
    }
}

#[test]
fn a_send_inside_a_block_waits_for_the_work_before_it() {
    // One block of 100 us on PE 0 sends at offset 40 us to a 0-time block on PE 1. With 10 us
    // lost every 30 us from 0, the CPU is free in [10,30) [40,60) [70,90) ...: the first 40 us
    // of work are done at 60 us (the send leaves then), all 100 us at 150 us.
    let mut b = TraceBuilder::new(TraceMeta {
        name: "mid".into(),
        recorded_pes: 2,
        ..Default::default()
    });
    let e = b.entry("e");
    let (a, z) = (b.object("a", PeId(0)), b.object("z", PeId(1)));
    let m = b.new_msg();
    b.block(
        Block::new(a, e, SimDuration::from_us(100)),
        &[],
        &[send(m, z, SimDuration::from_us(40), e)],
    );
    b.block(
        Block {
            trigger: Some(m),
            ..Block::new(z, e, SimDuration::ZERO)
        },
        &[],
        &[],
    );
    let t = b.finish().unwrap();
    let cfg = ReplayConfig {
        timeline: true,
        ..noisy("detour:every=30us,lose=10us,phase=aligned", 1)
    };
    let r = run_with(&t, "latency:lat=0", &cfg);
    let tl = r.timeline.unwrap();
    let z_start = tl.iter().find(|x| x.block == 1).unwrap().start.as_ps();
    assert_eq!(
        z_start,
        60 * US,
        "the send leaves when 40 us of work are done"
    );
    // 100 us of work in 20-us free stretches: 5 periods, ending at 4*30 + 30 = 150.
    let a_end = tl.iter().find(|x| x.block == 0).unwrap().end.as_ps();
    assert_eq!(a_end, 150 * US);
}

/// `p` PEs, `k` iterations of: every PE computes `c`, sends to a collector on PE 0; when all
/// arrived the collector's zero-time block sends the next iteration's trigger to every PE.
fn bsp(p: u32, k: usize, c: SimDuration) -> Trace {
    let mut b = TraceBuilder::new(TraceMeta {
        name: "bsp".into(),
        recorded_pes: p,
        ..Default::default()
    });
    let (work, recv, bar) = (b.entry("work"), b.entry("recv"), b.entry("barrier"));
    let objs: Vec<_> = (0..p).map(|i| b.object(format!("w{i}"), PeId(i))).collect();
    let root = b.object("root", PeId(0));
    let mut trig: Vec<Option<MsgId>> = vec![None; p as usize];
    for it in 0..k {
        let mut recvs = Vec::new();
        for (i, &o) in objs.iter().enumerate() {
            let m = b.new_msg();
            b.block(
                Block {
                    trigger: trig[i],
                    iteration: Some(it as u32),
                    ..Block::new(o, work, c)
                },
                &[],
                &[send(m, root, c, recv)],
            );
            let r = b.block(
                Block {
                    trigger: Some(m),
                    ..Block::new(root, recv, SimDuration::ZERO)
                },
                &[],
                &[],
            );
            recvs.push(r);
        }
        let next: Vec<MsgId> = (0..p).map(|_| b.new_msg()).collect();
        let sends: Vec<Send> = objs
            .iter()
            .zip(&next)
            .map(|(&o, &m)| send(m, o, SimDuration::ZERO, work))
            .collect();
        b.block(Block::new(root, bar, SimDuration::ZERO), &recvs, &sends);
        trig = next.into_iter().map(Some).collect();
    }
    b.finish().unwrap()
}

/// The test's own generator (SplitMix64), independent of the simulator's hashing.
fn splitmix64(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The mean over `k` iterations of the maximum of `p` draws, drawn with this test's own
/// generator (SplitMix64), uniform on whole picoseconds in [0, max].
fn monte_carlo(p: u32, k: usize, max: u64, seed: u64) -> f64 {
    let mut s = seed;
    let mut next = || splitmix64(&mut s);
    let total: u64 = (0..k)
        .map(|_| (0..p).map(|_| next() % (max + 1)).max().unwrap())
        .sum();
    total as f64 / k as f64
}

#[test]
fn jitter_on_a_bulk_synchronous_run_costs_the_expected_maximum_of_p_draws() {
    let (k, c, max) = (400usize, SimDuration::from_us(100), 20 * US);
    let mut last = 0.0;
    for p in [2u32, 8, 32] {
        let t = bsp(p, k, c);
        let r = run_with(&t, "latency:lat=0", &noisy("jitter:max=20us", 7));
        // Without noise every iteration is exactly c; with it, c + max of p draws.
        let extra = r.makespan.as_ps() as f64 / k as f64 - c.as_ps() as f64;
        let expected = max as f64 * p as f64 / (p as f64 + 1.0);
        let mc = monte_carlo(p, 20_000, max, 99);
        assert!(
            (mc - expected).abs() < 0.01 * max as f64,
            "MC {mc} vs {expected}"
        );
        assert!(
            (extra - mc).abs() < 0.05 * max as f64,
            "P={p}: simulated {extra} ps per iteration vs Monte Carlo {mc}"
        );
        assert!(extra > last, "grows with P");
        last = extra;
    }
    let t = bsp(8, 50, c);
    assert_eq!(
        run_with(&t, "latency:lat=0", &ReplayConfig::default())
            .makespan
            .as_ps(),
        50 * c.as_ps()
    );
}

/// The mean over `k` iterations of the maximum of `p` log-normal factors of mean 1 and
/// coefficient of variation `cv`, drawn with this test's own generator (SplitMix64 and
/// Box-Muller).
fn monte_carlo_log_normal(p: u32, k: usize, cv: f64, seed: u64) -> f64 {
    let mut s = seed;
    let mut uniform = || (splitmix64(&mut s) >> 11) as f64 / (1u64 << 53) as f64;
    let sigma2 = (1.0 + cv * cv).ln();
    let total: f64 = (0..k)
        .map(|_| {
            (0..p)
                .map(|_| {
                    let (u1, u2) = (1.0 - uniform(), uniform());
                    let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                    (sigma2.sqrt() * z - sigma2 / 2.0).exp()
                })
                .fold(0.0, f64::max)
        })
        .sum();
    total / k as f64
}

#[test]
fn log_normal_jitter_costs_the_expected_maximum_of_p_factors() {
    let (k, c, cv) = (400usize, SimDuration::from_us(100), 0.2);
    let mut last = 0.0;
    for p in [2u32, 8, 32] {
        let t = bsp(p, k, c);
        let r = run_with(&t, "latency:lat=0", &noisy("jitter:cv=0.2", 11));
        // Every iteration lasts c times the largest of p factors (sends leave at the end of
        // the stretched block).
        let per_iter = r.makespan.as_ps() as f64 / k as f64 / c.as_ps() as f64;
        let mc = monte_carlo_log_normal(p, 20_000, cv, 5);
        assert!(
            (per_iter - mc).abs() < 0.02,
            "P={p}: simulated {per_iter} c per iteration vs Monte Carlo {mc}"
        );
        assert!(per_iter > last, "grows with P");
        last = per_iter;
    }
    assert!(last > 1.3, "32 PEs wait for a factor well above 1: {last}");
}

#[test]
fn a_loggopsim_noise_trace_is_read_as_detours() {
    // The same machine twice: a periodic detour, and a LogGOPSim noise-trace file of it
    // (the last detour's start is the period).
    let dir = crate::cli::tmpdir("noise-trace");
    let file = dir.join("noise.txt");
    std::fs::write(&file, "# start_ns\tduration_ns\n0\t30000\n1000000\t30000\n").unwrap();
    let t = bsp(16, 50, SimDuration::from_us(100));
    for phase in ["aligned", "random"] {
        let det = run_with(
            &t,
            "latency:lat=1us",
            &noisy(&format!("detour:every=1ms,lose=30us,phase={phase}"), 4),
        );
        let tr = run_with(
            &t,
            "latency:lat=1us",
            &noisy(&format!("trace:file={},phase={phase}", file.display()), 4),
        );
        assert_eq!(det.makespan, tr.makespan, "{phase}");
        assert_eq!(det.pe_busy_ps, tr.pe_busy_ps, "{phase}");
        let plain = run_with(&t, "latency:lat=1us", &ReplayConfig::default());
        assert!(tr.makespan > plain.makespan, "{phase}: detours cost time");
    }
    // From the command line, and a clear error for a bad file.
    let tf = dir.join("t.json");
    crate::cli::gen_trace(&tf, &["halo2d", "--dims", "4x4", "--iters", "3"]);
    let spec = format!("trace:file={}", file.display());
    let with = crate::cli::makespan_ps(&["replay", tf.to_str().unwrap(), "--noise", &spec]);
    let without = crate::cli::makespan_ps(&["replay", tf.to_str().unwrap()]);
    assert!(with > without, "{with} vs {without}");
    std::fs::write(&file, "0 10\n100 x\n").unwrap();
    let o = crate::cli::whatif(&["replay", tf.to_str().unwrap(), "--noise", &spec]);
    assert!(!o.status.success());
    let e = crate::cli::stderr(&o);
    assert!(e.contains("noise.txt:2: duration `x`"), "{e}");
}

#[test]
fn noise_is_deterministic_by_seed_and_thread_free() {
    let t = bsp(16, 50, SimDuration::from_us(100));
    let spec = "detour:every=1ms,lose=30us;jitter:max=10us,cv=0.1";
    let a = run_with(&t, "latency:lat=1us", &noisy(spec, 5));
    let b = run_with(&t, "latency:lat=1us", &noisy(spec, 5));
    let c = run_with(&t, "latency:lat=1us", &noisy(spec, 6));
    assert_eq!(a.makespan, b.makespan);
    assert_eq!(a.pe_busy_ps, b.pe_busy_ps);
    assert_ne!(a.makespan, c.makespan, "another seed, other draws");
    // Recorded delays and noise do not mix.
    let cfg = ReplayConfig {
        recorded_delays: true,
        ..noisy(spec, 5)
    };
    let spec_net: network_models::NetSpec = "latency:lat=1us".parse().unwrap();
    let mut net = spec_net.build();
    let e = replay::replay(&t, net.as_mut(), &cfg).unwrap_err();
    assert!(e.to_string().contains("noise"), "{e}");
}

/// The built-in noise study: co-scheduled detours cost about their CPU share; the same detours
/// with a phase per PE cost far more on a bulk-synchronous stencil.
#[test]
fn unsynchronised_noise_costs_more_than_its_cpu_share() {
    let out = crate::cli::sweep_builtin("stencil-noise.toml");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let it = |noise: &str| -> f64 {
        v.as_array()
            .unwrap()
            .iter()
            .find(|r| r["machine.noise"] == noise)
            .unwrap_or_else(|| panic!("no row for {noise:?}"))["mean_iteration_s"]
            .as_f64()
            .unwrap()
    };
    let quiet = it("");
    let aligned = it("detour:every=1ms,lose=25us,phase=aligned");
    let random = it("detour:every=1ms,lose=25us");
    let jitter = it("jitter:max=10us");
    assert!((quiet - 70.632e-6).abs() < 1e-12, "{quiet}");
    // Aligned: about the CPU share (2.5%), at most one window per iteration.
    assert!(aligned > quiet && aligned <= quiet + 25e-6, "{aligned}");
    assert!(
        random > 1.1 * aligned,
        "random phase {random} vs aligned {aligned}"
    );
    assert!(
        jitter > quiet && jitter < quiet + 2.0 * 10e-6 * 6.0,
        "{jitter}"
    );
}
