//! The emulator: the recorded timeline is what the replay predicts, for every program and
//! network model; native runs; errors.

use crate::run_with;
use emulator::{EmulateConfig, InitialMap, Timing};
use network_models::NetSpec;
use replay::ReplayConfig;
use scenarios::programs::{self, PROGRAMS};
use trace::Trace;

fn sets(kv: &[(&str, &str)]) -> Vec<(String, String)> {
    kv.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Small parameters for each program, so every test runs in milliseconds.
fn small(name: &str) -> Vec<(String, String)> {
    sets(match name {
        "stencil3d" => &[("grid", "16x16x12"), ("block", "4x8x4"), ("iters", "5")],
        "simple-imbalance" => &[("iters", "6"), ("lb_at", "3"), ("work", "100us")],
        "pingpong" => &[("iters", "10")],
        "ring" => &[("laps", "3")],
        "kneighbor" => &[("k", "2"), ("iters", "4")],
        "pipeline" => &[("items", "6")],
        "broadcast-tree" | "collect-tree" => &[("rounds", "3")],
        "divide-conquer" => &[("depth", "4"), ("iters", "2")],
        "chain" => &[("chains", "3")],
        "cycle" => &[("cycles", "2")],
        "leanmd" => &[("atoms", "20"), ("steps", "3")],
        _ => &[],
    })
}

pub fn emulate(name: &str, kv: &[(String, String)], pes: u32, net: &str, timing: Timing) -> Trace {
    emulate_cfg(
        name,
        kv,
        net,
        &EmulateConfig {
            pes,
            timing,
            ..Default::default()
        },
    )
}

fn emulate_cfg(name: &str, kv: &[(String, String)], net: &str, cfg: &EmulateConfig) -> Trace {
    let spec: NetSpec = net.parse().expect("net spec");
    let mut model = spec.build();
    let cfg = EmulateConfig {
        net_spec: spec.to_string(),
        ..cfg.clone()
    };
    programs::emulate(name, kv, &cfg, model.as_mut(), &mut |_| {})
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .trace
}

/// Replays `t` on `net` with the recorded mapping; returns how many blocks start elsewhere
/// than the emulator said, and the first of them.
fn mismatches(t: &Trace, net: &str, policy: replay::SchedPolicy) -> (usize, Option<String>) {
    let cfg = ReplayConfig {
        timeline: true,
        policy,
        ..Default::default()
    };
    let r = run_with(t, net, &cfg);
    let tl = r.timeline.expect("timeline");
    assert_eq!(tl.len(), t.num_blocks());
    let mut wrong = 0;
    let mut first = None;
    for rec in &tl {
        let b = t.block(trace::BlockId(rec.block));
        if b.recorded_start != Some(rec.start) {
            wrong += 1;
            first.get_or_insert(format!(
                "block {} emulated at {:?}, replayed at {}",
                rec.block, b.recorded_start, rec.start
            ));
        }
    }
    (wrong, first)
}

fn assert_reproduced(t: &Trace, net: &str, policy: replay::SchedPolicy, what: &str) {
    let (wrong, first) = mismatches(t, net, policy);
    assert_eq!(
        wrong, 0,
        "{what}: {wrong} blocks start elsewhere, first {first:?}"
    );
}

#[test]
fn another_network_gives_another_timeline() {
    // The exactness check can fail: the same trace on a slower network starts blocks later.
    let t = emulate(
        "stencil3d",
        &small("stencil3d"),
        8,
        "latency:lat=3us",
        Timing::Model,
    );
    let (wrong, _) = mismatches(&t, "latency:lat=4us", replay::SchedPolicy::Fifo);
    assert!(wrong > t.num_blocks() / 2, "{wrong} of {}", t.num_blocks());
}

const NETS: &[&str] = &[
    "ideal",
    "latency:lat=3us",
    "alphabeta:lat=2us,bw=1GB/s,o_send=300ns,o_recv=500ns",
    "hops:topo=torus:2x2x2,lat=1us,hop=100ns,bw=2GB/s",
    "loggops:L=2us,o=400ns,g=1us,G=1ns,O=0ns,S=65536",
    "contention:topo=torus:2x2x2,lat=500ns,hop=100ns,bw=1GB/s,packet=1024",
];

#[test]
fn model_traces_replay_to_the_emulated_start_of_every_block() {
    for p in PROGRAMS {
        for net in NETS {
            let t = emulate(p.name, &small(p.name), 8, net, Timing::Model);
            assert_reproduced(
                &t,
                net,
                replay::SchedPolicy::Fifo,
                &format!("{} on {net}", p.name),
            );
        }
    }
}

#[test]
fn round_robin_map_and_fewer_pes_are_reproduced_too() {
    for p in ["stencil3d", "leanmd", "simple-imbalance", "kneighbor"] {
        let cfg = EmulateConfig {
            pes: 3,
            map: InitialMap::RoundRobin,
            ..Default::default()
        };
        let net = "alphabeta:lat=1us,bw=1GB/s,o_send=100ns";
        let t = emulate_cfg(
            p,
            &small(p),
            net,
            &EmulateConfig {
                net_spec: String::new(),
                ..cfg
            },
        );
        assert_reproduced(&t, net, replay::SchedPolicy::Fifo, p);
    }
}

#[test]
fn priorities_and_cpu_scale_are_reproduced() {
    let kv = sets(&[
        ("grid", "16x16x12"),
        ("block", "4x4x4"),
        ("iters", "6"),
        ("prioritize", "1"),
    ]);
    let net = "alphabeta:lat=5us,bw=1GB/s,o_recv=1us";
    let cfg = EmulateConfig {
        pes: 4,
        priority: true,
        ..Default::default()
    };
    let t = emulate_cfg("stencil3d", &kv, net, &cfg);
    assert!(t.blocks().iter().any(|b| b.priority > 0));
    assert_reproduced(
        &t,
        net,
        replay::SchedPolicy::Priority,
        "stencil3d with priorities",
    );
    // CPU-speed factor: recorded in the trace and applied by the emulated timeline as by the
    // replay.
    let third = sim_core::Ratio::parse("1/3").unwrap();
    let cfg = EmulateConfig {
        pes: 4,
        cpu_scale: third,
        ..Default::default()
    };
    let t = emulate_cfg("leanmd", &small("leanmd"), net, &cfg);
    assert_eq!(t.meta.cpu_scale.as_deref(), Some("1/3"));
    let rc = ReplayConfig {
        timeline: true,
        cpu_scale: replay::CpuScale::Uniform(third),
        ..Default::default()
    };
    let r = run_with(&t, net, &rc);
    for rec in r.timeline.unwrap() {
        assert_eq!(
            t.block(trace::BlockId(rec.block)).recorded_start,
            Some(rec.start)
        );
    }
}

#[test]
fn measured_traces_replay_to_the_emulated_timeline() {
    for p in ["stencil3d", "pingpong", "leanmd", "divide-conquer"] {
        let net = "latency:lat=2us";
        let t = emulate(p, &small(p), 4, net, Timing::Measured);
        assert!(
            t.blocks().iter().any(|b| b.duration.as_ps() > 0),
            "{p}: measured something"
        );
        assert_reproduced(&t, net, replay::SchedPolicy::Fifo, p);
        // Makespan: the emulator's own (latest recorded end) equals the replay's.
        let emu_end = t
            .blocks()
            .iter()
            .map(|b| b.recorded_start.unwrap().as_ps() + b.duration.as_ps())
            .max()
            .unwrap();
        let r = crate::run(&t, net);
        assert_eq!(r.makespan.as_ps(), emu_end, "{p}");
    }
}

#[test]
fn model_emulation_is_deterministic() {
    for p in PROGRAMS {
        let a = emulate(p.name, &small(p.name), 5, "latency:lat=1us", Timing::Model);
        let b = emulate(p.name, &small(p.name), 5, "latency:lat=1us", Timing::Model);
        let (mut x, mut y) = (Vec::new(), Vec::new());
        trace::binary::write_binary(&a, &mut x).unwrap();
        trace::binary::write_binary(&b, &mut y).unwrap();
        assert!(x == y, "{}: two emulations differ", p.name);
    }
}

// ---- One property of each program's trace ----

fn entry(t: &Trace, name: &str) -> trace::EntryId {
    trace::EntryId(
        t.entries
            .iter()
            .position(|e| e.name == name)
            .unwrap_or_else(|| panic!("no entry {name}")) as u32,
    )
}

/// `(source object, destination object)` of every send invoking `name`.
fn edges(t: &Trace, name: &str) -> Vec<(u32, u32)> {
    let e = entry(t, name);
    let mut out = Vec::new();
    for id in t.block_ids() {
        for s in t.sends(id) {
            if s.entry == e {
                let trace::Destination::Object(d) = s.dest else {
                    panic!("not p2p")
                };
                out.push((t.block(id).object.0, d.0));
            }
        }
    }
    out
}

fn model(name: &str, kv: &[(&str, &str)], pes: u32) -> Trace {
    emulate(name, &sets(kv), pes, "latency:lat=1us", Timing::Model)
}

#[test]
fn stencil3d_sends_one_face_per_neighbour_pair_per_iteration() {
    // 4x2x3 objects: directed neighbour pairs 2((a-1)bc + a(b-1)c + ab(c-1)) = 2(18+12+16) = 92.
    let t = model(
        "stencil3d",
        &[("grid", "16x8x12"), ("block", "4x4x4"), ("iters", "7")],
        6,
    );
    assert_eq!(t.objects.len(), 24);
    let e = edges(&t, "recvGhost");
    assert_eq!(e.len(), 92 * 7);
    // Every face goes to a grid neighbour (linear ids differ by 1, 3 or 6 here).
    assert!(e.iter().all(|(a, b)| [1, 3, 6].contains(&a.abs_diff(*b))));
    // Face size: 4x4 points of 8 bytes.
    assert!(
        t.all_sends()
            .iter()
            .filter(|s| s.entry == entry(&t, "recvGhost"))
            .all(|s| s.bytes == 128)
    );
    // Each object computes each iteration exactly once: objects x iters marked blocks.
    assert_eq!(
        t.blocks().iter().filter(|b| b.iteration.is_some()).count(),
        24 * 7
    );
    // Model cost: 64 points x 17 ns per compute.
    assert!(
        t.blocks()
            .iter()
            .filter(|b| b.iteration.is_some())
            .all(|b| b.duration.as_ps() == 64 * 17_000)
    );
}

#[test]
fn stencil3d_expresses_lee_table_6_1() {
    // 64x64x48 on 48 PEs: VF 1, 2, 4, 8, 16.
    for (block, vf) in [
        ("16x16x16", 1),
        ("16x8x16", 2),
        ("16x8x8", 4),
        ("8x8x8", 8),
        ("8x8x4", 16),
    ] {
        let t = model(
            "stencil3d",
            &[("grid", "64x64x48"), ("block", block), ("iters", "2")],
            48,
        );
        assert_eq!(t.objects.len(), 48 * vf, "{block}");
    }
    // 256x256x192 with 64x64x64 blocks: 48 objects.
    let p = scenarios::programs::find("stencil3d").unwrap();
    let params = scenarios::programs::Params::parse(
        p.name,
        p.params,
        &sets(&[("grid", "256x256x192"), ("block", "64x32x32")]),
    )
    .unwrap();
    let s = scenarios::programs::stencil3d::Stencil3d::new(&params).unwrap();
    assert_eq!(s.objects().iter().product::<u32>(), 48 * 4);
}

#[test]
fn simple_imbalance_heavy_objects_do_twice_the_work_and_all_sync_once() {
    let t = model(
        "simple-imbalance",
        &[
            ("objects_per_pe", "3"),
            ("iters", "6"),
            ("lb_at", "3"),
            ("work", "1ms"),
        ],
        4,
    );
    assert_eq!(t.objects.len(), 12);
    let mut work = [0u64; 12];
    for b in t.blocks() {
        work[b.object.index()] += b.duration.as_ps();
    }
    // Objects of PEs 0-1 (ids 0-5) are light, PEs 2-3 heavy: 6 iterations of 1 or 2 ms.
    assert!(work[..6].iter().all(|w| *w == 6_000_000_000));
    assert!(work[6..].iter().all(|w| *w == 12_000_000_000));
    assert_eq!(t.blocks().iter().filter(|b| b.lb_sync).count(), 12);
    // Every iteration is one barrier: iterations 0..6 marked on every object.
    for k in 0..6 {
        assert_eq!(
            t.blocks().iter().filter(|b| b.iteration == Some(k)).count(),
            12
        );
    }
    // Iteration time before the sync is the heavy PE's 3 objects x 2 ms (+ barrier latency).
    let r = crate::run(&t, "latency:lat=1us");
    let its = r.iteration_times();
    assert!(
        its[1].as_ps() >= 6_000_000_000 && its[1].as_ps() < 6_100_000_000,
        "{:?}",
        its[1]
    );
}

#[test]
fn pingpong_alternates_between_the_two_objects() {
    let t = model("pingpong", &[("iters", "9"), ("bytes", "100")], 2);
    let mut all = edges(&t, "ping");
    all.extend(edges(&t, "pong"));
    assert_eq!(all.len(), 18);
    assert_eq!(edges(&t, "ping"), vec![(0, 1); 9]);
    assert_eq!(edges(&t, "pong"), vec![(1, 0); 9]);
    // Closed form with work 0 on latency L: 2 x iters x L.
    assert_eq!(
        crate::run(&t, "latency:lat=5us").makespan.as_ps(),
        2 * 9 * 5_000_000
    );
}

#[test]
fn ring_token_visits_the_next_object_each_hop() {
    let t = model("ring", &[("laps", "3"), ("objects_per_pe", "2")], 5);
    let e = edges(&t, "token");
    assert_eq!(e.len(), 3 * 10 - 1);
    assert!(e.iter().all(|(a, b)| *b == (a + 1) % 10));
}

#[test]
fn kneighbor_exchanges_2k_messages_per_object_per_iteration() {
    let t = model("kneighbor", &[("k", "2"), ("iters", "5")], 9);
    let e = edges(&t, "exchange");
    assert_eq!(e.len(), 2 * 2 * 9 * 5);
    assert!(e.iter().all(|(a, b)| {
        let d = a.abs_diff(*b);
        d <= 2 || d >= 7
    }));
}

#[test]
fn pipeline_fill_plus_steady_state() {
    // MK: makespan (D-1)(L+W) + B W, one stage per PE.
    let (d, b, w, l) = (6u64, 10u64, 7_000_000u64, 3_000_000u64);
    let t = model(
        "pipeline",
        &[("items", "10"), ("work", "7us"), ("bytes", "0")],
        6,
    );
    assert_eq!(edges(&t, "stage").len() as u64, (d - 1) * b);
    let r = crate::run(&t, "latency:lat=3us");
    assert_eq!(r.makespan.as_ps(), (d - 1) * (l + w) + b * w);
}

#[test]
fn broadcast_tree_uses_hypercube_edges_and_depth_dim() {
    let t = model("broadcast-tree", &[("rounds", "3"), ("work", "0ns")], 16);
    let e = edges(&t, "down");
    assert_eq!(e.len(), 3 * 15);
    assert!(e.iter().all(|(a, b)| (a ^ b).is_power_of_two()));
    // One round on latency L with no work reaches the deepest node after dim hops.
    let t1 = model("broadcast-tree", &[("rounds", "1"), ("work", "0ns")], 16);
    assert_eq!(
        crate::run(&t1, "latency:lat=2us").makespan.as_ps(),
        4 * 2_000_000
    );
}

#[test]
fn collect_tree_root_receives_dim_messages_per_round() {
    let t = model("collect-tree", &[("rounds", "4")], 32);
    let e = edges(&t, "up");
    assert_eq!(e.len(), 4 * 31);
    assert_eq!(e.iter().filter(|(_, b)| *b == 0).count(), 4 * 5);
    assert!(e.iter().all(|(a, b)| (a ^ b).is_power_of_two() && b < a));
}

#[test]
fn divide_conquer_splits_down_and_combines_up() {
    let t = model("divide-conquer", &[("depth", "5"), ("iters", "2")], 8);
    let nodes = 63;
    assert_eq!(t.objects.len(), nodes);
    assert_eq!(edges(&t, "task").len(), 2 * (nodes - 1));
    assert_eq!(edges(&t, "result").len(), 2 * (nodes - 1));
    // Leaves (32 of them) each run one 10us task per problem.
    let leaf = t
        .blocks()
        .iter()
        .filter(|b| b.duration.as_ps() == 10_000_000)
        .count();
    assert_eq!(leaf, 2 * 32);
    assert!(edges(&t, "result").iter().all(|(a, b)| *b == (a - 1) / 2));
}

#[test]
fn chain_visits_every_object_once_per_chain() {
    let t = model("chain", &[("chains", "4")], 7);
    let e = edges(&t, "visit");
    assert_eq!(e.len(), 4 * 6);
    let visit = entry(&t, "visit");
    for o in 1..7u32 {
        assert_eq!(
            t.blocks()
                .iter()
                .filter(|b| b.entry == visit && b.object.0 == o)
                .count(),
            4
        );
    }
    assert!(
        t.blocks()
            .iter()
            .all(|b| b.entry != visit || b.object.0 != 0)
    );
}

#[test]
fn cycle_each_object_receives_one_token_per_step() {
    let (n, cycles) = (6u32, 2u32);
    let t = model("cycle", &[("cycles", "2")], n);
    let e = edges(&t, "token");
    assert_eq!(e.len() as u32, n * n * cycles);
    for o in 0..n {
        assert_eq!(e.iter().filter(|(_, b)| *b == o).count() as u32, n * cycles);
    }
    // In step s every object handles one token: with no work and latency L, token blocks
    // start at multiples of L, n of them at each.
    let t0 = emulate(
        "cycle",
        &sets(&[("cycles", "1"), ("work", "0ns")]),
        n,
        "latency:lat=1us",
        Timing::Model,
    );
    let tok = entry(&t0, "token");
    for s in 1..=n as u64 {
        let at = t0
            .blocks()
            .iter()
            .filter(|b| b.entry == tok && b.recorded_start.unwrap().as_ps() == s * 1_000_000)
            .count();
        assert_eq!(at as u32, n, "step {s}");
    }
}

#[test]
fn leanmd_cells_get_27_positions_and_forces_per_step() {
    let t = model(
        "leanmd",
        &[("cells", "3x4x3"), ("steps", "3"), ("atoms", "10")],
        6,
    );
    let cells = 36usize;
    assert_eq!(t.objects.len(), cells + cells * 14);
    assert_eq!(edges(&t, "calculateForces").len(), 3 * 27 * cells);
    assert_eq!(edges(&t, "receiveForces").len(), 3 * 27 * cells);
    for c in 0..cells as u32 {
        assert_eq!(
            edges(&t, "receiveForces")
                .iter()
                .filter(|(_, b)| *b == c)
                .count(),
            3 * 27
        );
    }
    // One energy reduction per step, each broadcasting nextStep to every cell.
    assert_eq!(edges(&t, "nextStep").len(), 3 * cells);
}

#[test]
fn native_runs_execute_the_same_blocks_and_messages_as_the_emulation() {
    for p in PROGRAMS {
        let kv = small(p.name);
        let spec: NetSpec = "latency:lat=1us".parse().unwrap();
        let mut net = spec.build();
        let cfg = EmulateConfig {
            pes: 2,
            ..Default::default()
        };
        let e = programs::emulate(p.name, &kv, &cfg, net.as_mut(), &mut |_| {}).unwrap();
        let n = programs::run_native(
            p.name,
            &kv,
            &emulator::NativeConfig {
                threads: 2,
                map: InitialMap::Block,
                priority: false,
                max_memory_bytes: 0,
            },
        )
        .unwrap();
        assert_eq!(n.blocks, e.trace.num_blocks() as u64, "{}", p.name);
        assert_eq!(n.remote_messages, e.remote_messages, "{}", p.name);
        let marked: std::collections::BTreeSet<u32> = e
            .trace
            .blocks()
            .iter()
            .filter_map(|b| b.iteration)
            .collect();
        assert_eq!(n.iterations.len(), marked.len(), "{}", p.name);
    }
}

#[test]
fn bad_programs_and_parameters_are_clear_errors() {
    let cfg = EmulateConfig {
        pes: 4,
        ..Default::default()
    };
    let mut net = NetSpec::Ideal.build();
    let err = |name: &str, kv: &[(&str, &str)]| {
        let mut net = NetSpec::Ideal.build();
        programs::emulate(name, &sets(kv), &cfg, net.as_mut(), &mut |_| {})
            .unwrap_err()
            .to_string()
    };
    let e = err("stencil4d", &[]);
    assert!(
        e.contains("unknown program `stencil4d`") && e.contains("stencil3d, simple-imbalance"),
        "{e}"
    );
    let e = err("stencil3d", &[("blocks", "8x8x8")]);
    assert!(
        e.contains("no parameter `blocks`")
            && e.contains("grid, block, iters, cell_cost, prioritize"),
        "{e}"
    );
    let e = err("stencil3d", &[("block", "7x8x8")]);
    assert!(e.contains("does not divide"), "{e}");
    let e = err("stencil3d", &[("grid", "64x64")]);
    assert!(e.contains("expected three positive extents"), "{e}");
    let e = err("ring", &[("work", "10")]);
    assert!(e.contains("work=10") && e.contains("duration"), "{e}");
    let e = err("simple-imbalance", &[("lb_at", "10")]);
    assert!(e.contains("must be below iters"), "{e}");
    let e = err("leanmd", &[("cells", "2x3x3")]);
    assert!(e.contains("at least 3"), "{e}");
    // The recorded-delay model cannot drive an emulation.
    let mut rec = NetSpec::Recorded.build();
    let e = programs::emulate("ring", &[], &cfg, rec.as_mut(), &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("recorded"), "{e}");
    // A model too small for the machine.
    let mut small_topo = "hops:topo=torus:2x2x1,lat=1us,hop=1ns,bw=1GB/s"
        .parse::<NetSpec>()
        .unwrap()
        .build();
    let e = programs::emulate(
        "ring",
        &[],
        &EmulateConfig {
            pes: 8,
            ..cfg.clone()
        },
        small_topo.as_mut(),
        &mut |_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("network model"), "{e}");
    // A program that declares more blocks than the block limit is refused before it runs.
    let e = programs::emulate(
        "ring",
        &sets(&[("laps", "1000")]),
        &EmulateConfig {
            max_blocks: 100,
            ..cfg.clone()
        },
        net.as_mut(),
        &mut |_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("at least 4000 blocks, more than the limit of 100"),
        "{e}"
    );
}

/// Emulated chares are sequential: replayed on fewer PEs and a slower network, a stencil
/// iteration cannot finish before the remote faces it needs arrive.
#[test]
fn emulated_objects_keep_their_order_on_other_machines() {
    let t = model(
        "stencil3d",
        &[("grid", "16x16x8"), ("block", "8x8x4"), ("iters", "6")],
        4,
    );
    assert!(t.meta.sequential_objects);
    let cfg = ReplayConfig {
        pes: Some(2),
        ..ReplayConfig::default()
    };
    let r = run_with(&t, "alphabeta:lat=1ms,bw=1GB/s", &cfg);
    for d in r.iteration_times() {
        assert!(
            d.as_ps() >= 1_000_000_000,
            "an iteration shorter than the latency: {d}"
        );
    }
    let free = run_with(
        &t,
        "alphabeta:lat=1ms,bw=1GB/s",
        &ReplayConfig {
            object_order: Some(false),
            ..cfg
        },
    );
    assert!(
        free.makespan < r.makespan,
        "free order lets computations run early"
    );
}

/// Parameters under which each program's iterations repeat (several copies of its steady
/// state), beside start-up and wind-down blocks that do not.
fn repeating(name: &str) -> Vec<(String, String)> {
    sets(match name {
        "stencil3d" => &[("grid", "32x32x32"), ("block", "8x8x8"), ("iters", "20")],
        "simple-imbalance" => &[("iters", "20"), ("lb_at", "10"), ("work", "100us")],
        "pingpong" => &[("iters", "50")],
        "ring" => &[("laps", "20")],
        "kneighbor" => &[("k", "2"), ("iters", "20")],
        "leanmd" => &[("atoms", "20"), ("steps", "10")],
        _ => &[],
    })
}

/// `t` without recorded times (what a periodic trace keeps for its repeated blocks).
fn without_recorded_times(t: &Trace) -> Trace {
    let mut cols = t.columns().clone();
    cols.recorded_start.clear();
    cols.recorded_arrival.clear();
    Trace::from_parts(trace::TraceParts {
        meta: t.meta.clone(),
        entries: t.entries.clone(),
        objects: t.objects.clone(),
        groups: t.groups.clone(),
        cols,
        deps_end: t.deps_ends().to_vec(),
        deps: t.all_deps().to_vec(),
        sends_end: t.sends_ends().to_vec(),
        sends: t.all_sends().to_vec(),
    })
    .expect("valid")
}

/// Emulates `name` with repetition detection on and off.
fn both_ways(
    name: &str,
    kv: &[(String, String)],
    pes: u32,
    timing: Timing,
) -> (emulator::Emulation, Trace) {
    let run = |detect: bool| {
        let spec: NetSpec = "latency:lat=1us".parse().unwrap();
        let mut model = spec.build();
        let cfg = EmulateConfig {
            pes,
            timing,
            net_spec: spec.to_string(),
            detect_repetition: detect,
            ..Default::default()
        };
        programs::emulate(name, kv, &cfg, model.as_mut(), &mut |_| {})
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let flat = run(false).trace;
    (run(true), flat)
}

#[test]
fn emulator_records_repeating_iterations_once_and_expands_to_the_flat_trace() {
    let mut compact = Vec::new();
    for p in PROGRAMS {
        let kv = repeating(p.name);
        let kv = if kv.is_empty() { small(p.name) } else { kv };
        let (e, flat) = both_ways(p.name, &kv, 8, Timing::Model);
        let Some(per) = &e.periodic else {
            // Nothing repeated: the same flat trace, recorded times included.
            assert_eq!(e.trace, flat, "{}", p.name);
            continue;
        };
        compact.push(p.name);
        assert!(per.has_runs(), "{}", p.name);
        assert!(per.stored_blocks() < flat.num_blocks() as u64, "{}", p.name);
        assert_eq!(e.blocks, flat.num_blocks() as u64, "{}", p.name);
        assert!(e.peak_held_blocks < flat.num_blocks() as u64, "{}", p.name);
        // The same blocks in the same order: only the repeated blocks' recorded times are
        // gone (the flat pieces keep theirs).
        let x = per
            .expand()
            .unwrap_or_else(|err| panic!("{}: {err}", p.name));
        assert_eq!(
            without_recorded_times(&x),
            without_recorded_times(&flat),
            "{}",
            p.name
        );
        // Its file form reads back as the same blocks.
        let dir = crate::cli::tmpdir(&format!("periodic-{}", p.name));
        let path = dir.join("p.trace");
        trace::write_periodic_file(per, &path).unwrap();
        let back = trace::read_trace_file(&path).unwrap();
        assert_eq!(back, x, "{}", p.name);
        // And replays to the flat trace's makespan and iteration times, on the recorded
        // network and on others.
        for net in [
            "latency:lat=1us",
            "latency:lat=200us",
            "alphabeta:lat=5us,bw=100MB/s",
        ] {
            for pes in [8, 3] {
                let cfg = ReplayConfig {
                    pes: Some(pes),
                    ..Default::default()
                };
                let a = run_with(&x, net, &cfg);
                let b = run_with(&flat, net, &cfg);
                assert_eq!(a.makespan, b.makespan, "{} on {net}, {pes} PEs", p.name);
                assert_eq!(a.iterations, b.iterations, "{} on {net}, {pes} PEs", p.name);
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    for must in [
        "stencil3d",
        "simple-imbalance",
        "pingpong",
        "ring",
        "leanmd",
    ] {
        assert!(
            compact.contains(&must),
            "{must} did not repeat: {compact:?}"
        );
    }
}

#[test]
fn emulator_keeps_durations_that_change_per_iteration() {
    // Measured durations differ from iteration to iteration: a repeated body keeps one
    // duration per copy (or, when the schedule changes too, the trace stays flat).
    let kv = sets(&[("iters", "40"), ("work", "20us")]);
    let (e, flat) = both_ways("pingpong", &kv, 2, Timing::Measured);
    let x = match &e.periodic {
        Some(p) => {
            let piece = p.pieces.iter().find(|x| x.reps > 1).expect("a run");
            assert!(!piece.var_blocks.is_empty(), "measured durations vary");
            p.expand().unwrap()
        }
        None => e.trace.clone(),
    };
    // (Two runs measure different durations: compare the structure only.)
    assert_eq!(x.num_blocks(), flat.num_blocks());
    assert_eq!(x.columns().object, flat.columns().object);
    assert_eq!(x.columns().trigger, flat.columns().trigger);
}

/// Every program's [`emulator::Builder::expect_blocks`] is a lower bound of the blocks it
/// runs, and a flat emulation that could not hold that many is refused before it runs.
#[test]
fn declared_block_counts_are_lower_bounds_and_refuse_flat_runs_up_front() {
    let mut declared = 0;
    for p in PROGRAMS {
        let kv = small(p.name);
        let spec: NetSpec = "latency:lat=1us".parse().unwrap();
        let cfg = EmulateConfig {
            pes: 4,
            ..Default::default()
        };
        let mut net = spec.build();
        let e = programs::emulate(p.name, &kv, &cfg, net.as_mut(), &mut |_| {}).unwrap();
        let ran = e.trace.num_blocks() as u64;
        // A recorder that may hold a single block: any declared count refuses the run.
        let tiny = EmulateConfig {
            max_held_blocks: 1,
            ..cfg.clone()
        };
        let mut net = spec.build();
        let mut calls = 0;
        match programs::emulate(p.name, &kv, &tiny, net.as_mut(), &mut |_| calls += 1) {
            Err(emulator::EmuError::TooManyBlocks { expected, limit }) => {
                declared += 1;
                assert!(
                    expected >= 1 && expected <= ran,
                    "{}: {expected} > {ran}",
                    p.name
                );
                assert_eq!(limit, 1);
                assert_eq!(calls, 0, "{}: refused after running", p.name);
                // Exactly enough room for the declared blocks plus one: it runs.
                let room = EmulateConfig {
                    max_held_blocks: ran + 1,
                    ..cfg.clone()
                };
                let mut net = spec.build();
                let again = programs::emulate(p.name, &kv, &room, net.as_mut(), &mut |_| {})
                    .unwrap_or_else(|e| panic!("{}: {e}", p.name));
                assert_eq!(again.trace.num_blocks() as u64, ran, "{}", p.name);
                // Repetition detection holds far fewer blocks: never refused up front.
                let detect = EmulateConfig {
                    detect_repetition: true,
                    ..tiny.clone()
                };
                let mut net = spec.build();
                let r = programs::emulate(p.name, &kv, &detect, net.as_mut(), &mut |_| {});
                assert!(
                    !matches!(r, Err(emulator::EmuError::TooManyBlocks { .. })),
                    "{}",
                    p.name
                );
            }
            Err(other) => panic!("{}: {other}", p.name),
            // Programs that declare nothing run (the limit is checked every 65,536 blocks).
            Ok(_) => {}
        }
    }
    // pingpong, ring, kneighbor, pipeline, chain, cycle, stencil3d.
    assert!(
        declared >= 7,
        "only {declared} programs declare their blocks"
    );
}

/// `emulate` writes blocks that do not repeat to disk as it runs (`--spill-blocks` sets the
/// batch; detection stops after four batches held without a repeat). Whatever the batch, the
/// file has the bytes of the recording held in memory: the periodic trace when detection
/// finds the repeat (here after the spilled prefix is read back), else the `--flat` trace.
#[test]
fn spilled_emulations_write_the_bytes_of_the_ones_held_in_memory() {
    let dir = crate::cli::tmpdir("spill");
    let p = |n: &str| dir.join(n).to_str().unwrap().to_string();
    let run = |args: &[&str], out: &str, extra: &[&str]| -> Vec<u8> {
        let mut a = vec!["emulate"];
        a.extend_from_slice(args);
        a.extend_from_slice(&["--out", out, "-q"]);
        a.extend_from_slice(extra);
        let o = crate::cli::whatif(&a);
        assert!(
            o.status.success(),
            "{}: {}",
            a.join(" "),
            crate::cli::stderr(&o)
        );
        std::fs::read(out).unwrap()
    };
    let si: &[&str] = &["simple-imbalance", "--pes", "8"];
    let lm: &[&str] = &["leanmd", "--pes", "8"];
    let st: &[&str] = &[
        "stencil3d",
        "--pes",
        "8",
        "--set",
        "grid=32x32x32",
        "--set",
        "block=8x8x8",
        "--set",
        "iters=6",
    ];
    for (name, args, batch, kind) in [
        // 47 flat blocks spilled, then read back when the iterations start repeating.
        ("si", si, "30", b"WHATIFTP"),
        // Detection stops: the rest is recorded flat, a batch at a time.
        ("lm", lm, "10", b"WHATIFTC"),
        ("st", st, "13", b"WHATIFTC"),
    ] {
        let held = run(args, &p(&format!("{name}.trace")), &[]);
        let spilled = run(
            args,
            &p(&format!("{name}-s.trace")),
            &["--spill-blocks", batch],
        );
        assert_eq!(&spilled[..8], kind, "{name}");
        if kind == b"WHATIFTP" {
            assert!(spilled == held, "{name}: periodic, as held in memory");
        } else {
            let mut flat_args = args.to_vec();
            flat_args.push("--flat");
            let flat = run(&flat_args, &p(&format!("{name}-f.trace")), &[]);
            assert!(spilled == flat, "{name}: the --flat trace");
            let flat_spilled = run(
                &flat_args,
                &p(&format!("{name}-fs.trace")),
                &["--spill-blocks", batch],
            );
            assert!(flat_spilled == flat, "{name}: --flat, spilled");
            // A compressed output from the spill holds the same bytes.
            let z = run(
                args,
                &p(&format!("{name}-s.trace.zst")),
                &["--spill-blocks", batch],
            );
            assert!(
                zstd::stream::decode_all(&z[..]).unwrap() == flat,
                "{name}: .zst"
            );
        }
    }
    // No scratch folder is left beside the outputs.
    let left: Vec<String> = std::fs::read_dir(&*dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
