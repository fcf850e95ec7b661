//! Exact closed forms, to the picosecond.

use crate::{run, run_with, us};
use replay::{CpuScale, ReplayConfig};
use scenarios::SynthParams;
use sim_core::{Bandwidth, Ratio, SimDuration};

pub(crate) fn params(iters: u32, compute: SimDuration, bytes: u64) -> SynthParams {
    SynthParams {
        iters,
        compute,
        bytes,
        ..SynthParams::default()
    }
}

/// lat + S/bw in picoseconds.
fn l(lat: SimDuration, bw: &str, bytes: u64) -> u64 {
    lat.as_ps() + Bandwidth::parse(bw).unwrap().transfer_time(bytes).as_ps()
}

#[test]
fn pingpong_is_2k_times_transfer_plus_compute() {
    for (k, c, s, lat, bw) in [
        (1, 0, 8, 1, "10GB/s"),
        (10, 7, 65536, 2, "10GB/s"),
        (25, 3, 1_000_001, 5, "3GB/s"),
    ] {
        let t = scenarios::pingpong(&params(k, us(c), s)).unwrap();
        let r = run(&t, &format!("alphabeta:lat={lat}us,bw={bw}"));
        let expect = 2 * k as u64 * (l(us(lat), bw, s) + us(c).as_ps());
        assert_eq!(
            r.makespan.as_ps(),
            expect,
            "K={k} C={c}us S={s} lat={lat}us bw={bw}"
        );
        assert_eq!(r.messages.remote, 2 * k as u64);
    }
}

#[test]
fn ring_and_halo_are_k_times_compute_plus_transfer() {
    let (k, c, s) = (7u32, us(100), 65536u64);
    let p = params(k, c, s);
    let lt = l(us(1), "10GB/s", s);
    let expect = k as u64 * (c.as_ps() + lt);
    let net = "alphabeta:lat=1us,bw=10GB/s";
    for t in [
        scenarios::ring(16, &p).unwrap(),
        scenarios::ring(2, &p).unwrap(),
        scenarios::halo(&[5, 4], false, &p).unwrap(),
        scenarios::halo(&[3, 4, 5], false, &p).unwrap(),
        scenarios::halo(&[4, 4, 4], true, &p).unwrap(),
    ] {
        let r = run(&t, net);
        assert_eq!(r.makespan.as_ps(), expect, "{}", t.meta.name);
        let its = r.iteration_times();
        assert_eq!(its.len(), k as usize, "{}", t.meta.name);
        assert!(
            its.iter().all(|d| d.as_ps() == c.as_ps() + lt),
            "{}: {its:?}",
            t.meta.name
        );
    }
}

#[test]
fn halo_message_counts_match_the_grid() {
    // 3x4x5 non-periodic: each axis of size n contributes 2(n-1) directed edges per line.
    let t = scenarios::halo(&[3, 4, 5], false, &params(2, us(1), 8)).unwrap();
    let edges = 2 * (2 * 4 * 5 + 3 * 3 * 5 + 4 * 3 * 4);
    let r = run(&t, "ideal");
    assert_eq!(r.messages.total(), 2 * edges);
    // Periodic 4x4x4: six neighbours each.
    let t = scenarios::halo(&[4, 4, 4], true, &params(3, us(1), 8)).unwrap();
    assert_eq!(run(&t, "ideal").messages.total(), 3 * 64 * 6);
}

#[test]
fn latency_model_adds_latency_only() {
    let t = scenarios::ring(8, &params(5, us(10), 1 << 20)).unwrap();
    assert_eq!(
        run(&t, "latency:lat=3us").makespan.as_ps(),
        5 * us(13).as_ps()
    );
    assert_eq!(run(&t, "ideal").makespan.as_ps(), 5 * us(10).as_ps());
}

#[test]
fn mk_pipeline_fill_plus_steady_state() {
    // (D-1)(tau + W) + B*W with D = processors in the chain, tau = lat + S/bw.
    for (d, b, w, s) in [
        (2u64, 1u32, 5u64, 100u64),
        (8, 20, 50, 4096),
        (16, 3, 1, 1 << 16),
        (1, 10, 10, 8),
    ] {
        let t = scenarios::pipeline(d as u32, &params(b, us(w), s)).unwrap();
        let tau = l(us(2), "1GB/s", s);
        let r = run(&t, "alphabeta:lat=2us,bw=1GB/s");
        let expect = (d - 1) * (tau + us(w).as_ps()) + b as u64 * us(w).as_ps();
        assert_eq!(r.makespan.as_ps(), expect, "D={d} B={b} W={w}us S={s}");
    }
}

#[test]
fn cpu_scale_scales_compute_only() {
    let t = scenarios::ring(4, &params(6, us(100), 65536)).unwrap();
    let cfg = ReplayConfig {
        cpu_scale: CpuScale::Uniform(Ratio::parse("0.5").unwrap()),
        ..Default::default()
    };
    let r = run_with(&t, "alphabeta:lat=1us,bw=10GB/s", &cfg);
    assert_eq!(
        r.makespan.as_ps(),
        6 * (us(50).as_ps() + l(us(1), "10GB/s", 65536))
    );
}

#[test]
fn per_message_overheads_add_to_each_iteration() {
    // Each iteration: compute C, send overhead o_s (sender CPU), wire L, receive overhead o_r.
    let (k, c) = (9u32, us(20));
    let t = scenarios::ring(5, &params(k, c, 1000)).unwrap();
    let r = run(&t, "alphabeta:lat=1us,bw=1GB/s,o_send=300ns,o_recv=700ns");
    let per = c.as_ps() + 300_000 + l(us(1), "1GB/s", 1000) + 700_000;
    assert_eq!(r.makespan.as_ps(), k as u64 * per);
    // Busy time includes the overheads: per rank and iteration C + o_s + o_r.
    assert_eq!(r.pe_busy_ps[0], k as u64 * (c.as_ps() + 1_000_000));
}

#[test]
fn folding_onto_fewer_pes_makes_messages_local() {
    // Ring of 8 on 4 PEs (recorded mapping folds 2 ranks per PE): ranks 2i and 2i+1 share a PE,
    // so half the ring messages are local. The local ones cost no network time, but two ranks now
    // share each CPU: per iteration a PE computes 2C and the remote message adds L once.
    let (k, c, s) = (4u32, us(10), 65536u64);
    let t = scenarios::ring(8, &params(k, c, s)).unwrap();
    let cfg = ReplayConfig {
        pes: Some(4),
        ..Default::default()
    };
    let r = run_with(&t, "alphabeta:lat=1us,bw=10GB/s", &cfg);
    assert_eq!(r.pes, 4);
    assert_eq!(r.messages.local, 4 * k as u64);
    assert_eq!(r.messages.remote, 4 * k as u64);
    assert!(r.makespan.as_ps() >= k as u64 * 2 * c.as_ps());
    // One PE: everything local, pure compute.
    let cfg = ReplayConfig {
        pes: Some(1),
        ..Default::default()
    };
    let r = run_with(&t, "alphabeta:lat=1us,bw=10GB/s", &cfg);
    assert_eq!(r.messages.remote, 0);
    assert_eq!(r.makespan.as_ps(), 8 * k as u64 * c.as_ps());
}

#[test]
fn pingpong_on_hops_topologies_is_exact_for_chosen_node_pairs() {
    // Map the two ranks onto chosen PEs of a machine with one PE per node:
    // T = 2K(C + lat + hops*hop + S/bw).
    let (k, c, s) = (4u32, us(3), 4096u64);
    let t = scenarios::pingpong(&params(k, c, s)).unwrap();
    let transfer = Bandwidth::parse("10GB/s").unwrap().transfer_time(s).as_ps();
    for (topo, pes, a, b, hops) in [
        ("torus:8x8x8", 512u32, 0u32, 7 + 8 * 7 + 64 * 7, 3u64),
        ("torus:8x8x8", 512, 0, 4 + 8 * 4 + 64 * 4, 12),
        ("mesh:8x8x8", 512, 0, 511, 21),
        ("hypercube:10", 1024, 0, 1023, 10),
        ("hypercube:10", 1024, 5, 6, 2),
    ] {
        let cfg = ReplayConfig {
            pes: Some(pes),
            mapping: replay::Mapping::Explicit(vec![a, b]),
            ..Default::default()
        };
        let r = run_with(
            &t,
            &format!("hops:topo={topo},lat=1us,hop=50ns,bw=10GB/s"),
            &cfg,
        );
        let expect = 2 * k as u64 * (c.as_ps() + 1_000_000 + hops * 50_000 + transfer);
        assert_eq!(r.makespan.as_ps(), expect, "{topo} {a}->{b}");
    }
}

#[test]
fn halo_on_a_torus_with_one_rank_per_node_is_k_times_compute_plus_one_hop() {
    // Non-periodic halo on a torus of the same shape: every neighbour is one hop away.
    let (k, c, s) = (5u32, us(50), 65536u64);
    let t = scenarios::halo(&[4, 4, 4], false, &params(k, c, s)).unwrap();
    let r = run(&t, "hops:topo=torus:4x4x4,lat=1us,hop=100ns,bw=10GB/s");
    let per = c.as_ps()
        + 1_000_000
        + 100_000
        + Bandwidth::parse("10GB/s").unwrap().transfer_time(s).as_ps();
    assert_eq!(r.makespan.as_ps(), k as u64 * per);
}

#[test]
fn hops_refuses_a_machine_larger_than_the_topology() {
    let t = scenarios::ring(8, &params(1, us(1), 8)).unwrap();
    let spec: network_models::NetSpec = "hops:topo=torus:2x2,bw=1GB/s".parse().unwrap();
    let e = replay::replay(&t, spec.build().as_mut(), &ReplayConfig::default()).unwrap_err();
    assert!(
        e.to_string().contains("need 8 nodes, but torus:2x2 has 4"),
        "{e}"
    );
}

/// MK's ATM2D on a 2 x 2 grid: each object has two neighbours and both exchanges pair objects
/// that are ready together, so a step is exactly 2 (tau(m) + s + r) + lambda^2 cell_cost with
/// m = 2 lambda x 8 bytes; on the `paragon` machine tau(m) = 120 us + m / 30 MB/s.
#[test]
fn atm2d_steps_are_two_synchronous_phases_and_lambda_squared_work() {
    let kv = |k: &str, v: &str| (k.to_string(), v.to_string());
    for (lambda, net, s, r) in [
        (128u64, "paragon", 0u64, 0u64),
        (
            64,
            "alphabeta:lat=10us,bw=1GB/s,o_send=2us,o_recv=3us",
            2,
            3,
        ),
        (256, "paragon", 0, 0),
    ] {
        let steps = 5u64;
        let sets = [
            kv("lambda", &lambda.to_string()),
            kv("steps", &steps.to_string()),
            kv("cell_cost", "100ns"),
        ];
        let t = crate::emulator::emulate("atm2d", &sets, 4, net, emulator::Timing::Model);
        let r_ = run(&t, net);
        let m = 2 * lambda * 8;
        let tau = match net {
            "paragon" => l(us(120), "30MB/s", m),
            _ => l(us(10), "1GB/s", m),
        };
        let step = 2 * (tau + us(s).as_ps() + us(r).as_ps()) + lambda * lambda * 100_000;
        assert_eq!(
            r_.makespan.as_ps(),
            steps * step,
            "lambda {lambda} on {net}"
        );
        assert_eq!(r_.iterations.len() as u64, steps);
    }
}

/// MK's pipelined Gaussian elimination. Without CPU overheads each pipeline of depth D takes
/// MK's Fill + Remain, (D-1)(tau(m2) + W) + B W, and PGE2 is two such stages around the
/// middle exchange: its backward stage is MK's worked formula tau(m1) + (P/2-1)(tau(m2) +
/// T(C3)) + B T(C3) (his convention: o = 0, no overhead in the fill). With send and receive
/// overheads s and r each pipeline takes MK's general Fill + Remain, (D-1)(tau + s + r + W)
/// + B (s + r + W), less s + r: the source receives nothing and the turn forwards nothing.
#[test]
fn pge_pipelines_follow_mks_fill_and_remain() {
    let kv = |k: &str, v: u64| (k.to_string(), v.to_string());
    let (n, arrays, row_ps) = (1024u64, 96u64, 50_000u64);
    for (pes, k, ways, s, r) in [
        (8u32, 8u64, 2u32, 0u64, 0u64),
        (16, 4, 2, 0, 0),
        (2, 32, 2, 0, 0),
        (8, 8, 1, 0, 0),
        (4, 5, 1, 0, 0),
        (8, 8, 2, 2, 3),
        (16, 12, 1, 1, 4),
    ] {
        let net = format!("alphabeta:lat=20us,bw=50MB/s,o_send={s}us,o_recv={r}us");
        let sets = [
            kv("n", n),
            kv("arrays", arrays),
            kv("k", k),
            kv("ways", ways as u64),
        ];
        let mut sets = sets.to_vec();
        sets.push(("row_cost".into(), "50ns".into()));
        let t = crate::emulator::emulate("pge", &sets, pes, &net, emulator::Timing::Model);
        let got = run(&t, &net).makespan.as_ps();
        let tau = |m: u64| l(us(20), "50MB/s", m);
        let rows = n / pes as u64;
        let blocks = arrays.div_ceil(k);
        // Every block here holds k systems except perhaps the last.
        let w = |b: u64| (arrays - b * k).min(k) * rows * row_ps;
        let all_w: u64 = (0..blocks).map(w).sum();
        let (so, ro) = (us(s).as_ps(), us(r).as_ps());
        let depth = if ways == 1 {
            pes as u64
        } else {
            pes as u64 / 2
        };
        // The fill carries the first block (full when k <= arrays).
        let pipeline = (depth - 1) * (tau(2 * k * 8) + so + ro + w(0)) + blocks * (so + ro) + all_w
            - (so + ro);
        let want = if ways == 1 {
            2 * pipeline
        } else {
            2 * pipeline + tau(2 * arrays * 8) + so + ro
        };
        assert_eq!(got, want, "P={pes} k={k} ways={ways} s={s} r={r}");
        if ways == 2 && s == 0 && r == 0 {
            // MK's worked backward-stage formula, after the forward stage.
            let h = pes as u64 / 2;
            let backward = tau(2 * arrays * 8) + (h - 1) * (tau(2 * k * 8) + w(0)) + all_w;
            assert_eq!(got - pipeline, backward, "P={pes} k={k}");
        }
    }
}
