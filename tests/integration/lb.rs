//! Load balancing: strategies on emulated traces, remapping at a sync point, migration cost,
//! remapping to other PE counts, and the `whatif lb` command.

use crate::cli::{tmpdir, whatif};
use crate::{run_with, us};
use lb_strategies::{DbOptions, LbDatabase, LbPoint, Strategy, SyncPlan, metrics};
use replay::{Mapping, Remap, ReplayConfig};
use serde_json::Value;
use sim_core::SimDuration;
use trace::{Block, BlockId, PeId, TraceBuilder, TraceMeta};

/// Runs `whatif lb ... --json` and returns the rows.
fn lb_rows(args: &[&str]) -> Vec<Value> {
    let mut all = vec!["lb"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--json", "-q"]);
    let o = whatif(&all);
    assert!(
        o.status.success(),
        "whatif {}: {}",
        all.join(" "),
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).expect("JSON rows");
    v.as_array().expect("a list").clone()
}

fn row<'a>(rows: &'a [Value], name: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["strategy"] == name)
        .unwrap_or_else(|| panic!("no row {name}"))
}

fn f(r: &Value, k: &str) -> f64 {
    r[k].as_f64().unwrap_or_else(|| panic!("{k} in {r}"))
}

fn emulate(dir: &std::path::Path, name: &str, program: &str, pes: &str, sets: &[&str]) -> String {
    let out = dir.join(name).display().to_string();
    let mut args = vec!["emulate", program, "--pes", pes, "--out", &out, "-q"];
    for s in sets {
        args.extend_from_slice(&["--set", s]);
    }
    let o = whatif(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

/// Lee 6.6.2: SimpleImbalance on 100 PEs, LB at iteration 5 of 10.
#[test]
fn simple_imbalance_greedy_gives_three_quarters_and_controls_change_nothing() {
    let dir = tmpdir("lb-si");
    for opp in ["2", "20"] {
        let t = emulate(
            &dir,
            &format!("si{opp}.trace"),
            "simple-imbalance",
            "100",
            &[&format!("objects_per_pe={opp}"), "iters=10", "lb_at=5"],
        );
        let rows = lb_rows(&[
            &t,
            "--net",
            "latency:lat=1us",
            "--at",
            "5",
            "--strategies",
            "dummy,rotate,greedy,greedy-refine:tolerance=1.0,refine",
        ]);
        let n_obj = 100.0 * opp.parse::<f64>().unwrap();
        let ratio = |s: &str| f(row(&rows, s), "post_over_pre");
        assert!(
            (ratio("greedy") - 0.75).abs() < 0.0075,
            "opp {opp}: greedy {}",
            ratio("greedy")
        );
        for c in ["dummy", "rotate"] {
            assert!((ratio(c) - 1.0).abs() < 0.01, "opp {opp}: {c} {}", ratio(c));
        }
        assert_eq!(
            f(row(&rows, "rotate"), "migrations"),
            n_obj,
            "rotate moves every object"
        );
        assert_eq!(f(row(&rows, "dummy"), "migrations"), 0.0);
        // Refine: fewer moves than greedy, max/avg within its threshold (1.5 x greedy's max).
        let (g, r) = (row(&rows, "greedy"), row(&rows, "refine"));
        assert!(f(r, "migrations") < f(g, "migrations"), "opp {opp}");
        assert!(f(r, "max_avg_load") <= 1.5 * f(g, "max_avg_load") + 1e-9);
        // GreedyRefine at tolerance 1 reaches greedy's max load.
        let gr = row(&rows, "greedy-refine:tolerance=1.0");
        assert_eq!(f(gr, "max_load_s"), f(g, "max_load_s"), "opp {opp}");
        assert!(f(gr, "migrations") < f(g, "migrations"));
        // Before the sync point every strategy runs the same schedule.
        let pre = f(row(&rows, "dummy"), "pre_lb_iteration_s");
        assert!(rows.iter().all(|r| f(r, "pre_lb_iteration_s") == pre));
        // The heavy PEs do `opp` objects x 2 units of 1 ms per iteration (plus a barrier).
        let expect = 2.0 * opp.parse::<f64>().unwrap() * 1e-3;
        assert!(pre >= expect && pre - expect < 50e-6, "{pre} vs {expect}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Two objects on two PEs: `a` ends a 10 us sync block, then a dependent block. Moving `a` to
/// PE 1 after the sync block runs the dependent block there, after the migration message.
#[test]
fn remap_after_a_sync_block_and_migration_cost_closed_form() {
    let mut b = TraceBuilder::new(TraceMeta {
        name: "move".into(),
        recorded_pes: 2,
        ..TraceMeta::default()
    });
    let e = b.entry("work");
    let a = b.object("a", PeId(0));
    let _other = b.object("b", PeId(1));
    let mut s = Block::new(a, e, us(10));
    s.lb_sync = true;
    s.iteration = Some(0);
    let sync = b.block(s, &[], &[]);
    let mut next = Block::new(a, e, us(5));
    next.iteration = Some(1);
    let after = b.block(next, &[sync], &[]);
    let t = b.finish().unwrap();
    let remap = Remap {
        map: vec![1, 1],
        switch_after: vec![Some(sync), None],
    };
    let net = "alphabeta:lat=2us,bw=1GB/s";
    let cfg = ReplayConfig {
        remap: Some(remap.clone()),
        timeline: true,
        ..ReplayConfig::default()
    };
    let r = run_with(&t, net, &cfg);
    let tl = r.timeline.as_ref().unwrap();
    let rec = |blk: BlockId| tl.iter().find(|x| x.block == blk.0).copied().unwrap();
    assert_eq!(rec(sync).pe, 0);
    assert_eq!(
        rec(after).pe,
        1,
        "the block after the switch runs on the new PE"
    );
    assert_eq!(rec(after).start.as_ps(), us(10).as_ps(), "free move");

    // 64 KB over 1 GB/s = 64 us, plus 2 us latency, after the sync block ends at 10 us.
    let (t2, r2, charged) =
        replay::with_migration_cost(&t, &remap, &[0, 1], &[64_000, 64_000]).unwrap();
    assert_eq!(charged, 1, "object b does not move");
    let r = run_with(
        &t2,
        net,
        &ReplayConfig {
            remap: Some(r2),
            timeline: true,
            ..ReplayConfig::default()
        },
    );
    let last = r
        .timeline
        .as_ref()
        .unwrap()
        .iter()
        .max_by_key(|x| x.start)
        .copied()
        .unwrap();
    assert_eq!(last.pe, 1);
    assert_eq!(last.start.as_ps(), us(76).as_ps());
    assert_eq!(r.makespan.as_ps(), us(81).as_ps());
    assert!(t2.entries.iter().any(|e| e.name == replay::MIGRATE_ENTRY));

    // A remap naming a foreign block is rejected.
    let bad = Remap {
        map: vec![1, 1],
        switch_after: vec![Some(BlockId(0)), Some(BlockId(1))],
    };
    let spec: network_models::NetSpec = net.parse().unwrap();
    let err = replay::replay(
        &t,
        spec.build().as_mut(),
        &ReplayConfig {
            remap: Some(bad),
            ..ReplayConfig::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("not one of its blocks"), "{err}");
}

/// Migration cost through the command line: bigger objects make the LB iteration longer.
#[test]
fn migration_cost_lengthens_the_lb_iteration() {
    let dir = tmpdir("lb-mig");
    let t = emulate(
        &dir,
        "si.trace",
        "simple-imbalance",
        "16",
        &["iters=6", "lb_at=3", "work=100us"],
    );
    let make = |bytes: &str| {
        let rows = lb_rows(&[
            &t,
            "--net",
            "alphabeta:lat=1us,bw=1GB/s",
            "--strategies",
            "greedy",
            "--migrate-bytes",
            bytes,
        ]);
        f(&rows[0], "makespan_s")
    };
    let free = make("0");
    let costly = make("1MB");
    // Moved objects wait 1 MB / 1 GB/s = 1 ms (plus latency) before they continue.
    assert!(
        costly - free > 0.9e-3 && costly - free < 1.2e-3,
        "{free} -> {costly}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// The ChaNGa lesson: on a torus with little bandwidth, placing neighbours together (and near
/// each other) beats pure load balance.
#[test]
fn comm_and_topology_aware_beat_greedy_on_a_contended_torus() {
    let dir = tmpdir("lb-topo");
    let t = emulate(
        &dir,
        "st.trace",
        "stencil3d",
        "64",
        &["grid=64x64x64", "block=8x8x8", "iters=4"],
    );
    let rows = lb_rows(&[
        &t,
        "--net",
        "contention:topo=torus:4x4x4,lat=1us,hop=50ns,bw=20MB/s",
        "--strategies",
        "greedy,rec-bipart,topo",
    ]);
    let (g, rb, tp) = (
        row(&rows, "greedy"),
        row(&rows, "rec-bipart"),
        row(&rows, "topo"),
    );
    for r in [g, rb, tp] {
        assert!((f(r, "max_avg_load") - 1.0).abs() < 1e-9, "{r}");
    }
    assert!(f(rb, "cut_bytes") < 0.8 * f(g, "cut_bytes"), "{rb} vs {g}");
    assert!(f(tp, "hop_bytes") < f(rb, "hop_bytes"));
    assert!(
        f(tp, "post_lb_iteration_s") < 0.8 * f(g, "post_lb_iteration_s"),
        "topo {} vs greedy {}",
        f(tp, "post_lb_iteration_s"),
        f(g, "post_lb_iteration_s")
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A 48-PE stencil remapped to 24 and 96 PEs and to one object per PE.
#[test]
fn remap_a_48_pe_stencil_to_other_pe_counts() {
    let dir = tmpdir("lb-pes");
    // 192 objects of 16x8x8 points (4 per PE); 17 ns per point = 17.408 us per object.
    let t = emulate(
        &dir,
        "st48.trace",
        "stencil3d",
        "48",
        &["grid=64x64x48", "block=16x8x8", "iters=6"],
    );
    let net = "latency:lat=1us";
    let obj_us = 1024.0 * 17e-3;
    let at = |pes: &str| {
        lb_rows(&[
            &t,
            "--net",
            net,
            "--at",
            "start",
            "--pes",
            pes,
            "--strategies",
            "dummy,greedy,rec-bipart",
        ])
    };
    let base = f(row(&at("48"), "dummy"), "post_lb_iteration_s") * 1e6;
    assert!(base >= 4.0 * obj_us && base < 4.0 * obj_us + 10.0, "{base}");

    let r24 = at("24");
    for s in ["greedy", "rec-bipart"] {
        let r = row(&r24, s);
        assert_eq!(r["pes"], 24);
        assert!((f(r, "max_avg_load") - 1.0).abs() < 1e-9);
        let it = f(r, "post_lb_iteration_s") * 1e6;
        assert!(
            it >= 8.0 * obj_us && it < 8.0 * obj_us + 10.0,
            "{s} on 24: {it}"
        );
    }
    let r96 = at("96");
    let fold = f(row(&r96, "dummy"), "post_lb_iteration_s") * 1e6;
    assert!(
        (fold - base).abs() < 5.0,
        "spreading 48 recorded PEs over 96 leaves half idle: {fold}"
    );
    for s in ["greedy", "rec-bipart"] {
        let it = f(row(&r96, s), "post_lb_iteration_s") * 1e6;
        assert!(
            it >= 2.0 * obj_us && it < 2.0 * obj_us + 10.0,
            "{s} on 96: {it}"
        );
    }
    let one = at("objects");
    for s in ["greedy", "rec-bipart"] {
        let r = row(&one, s);
        assert_eq!(r["pes"], 192);
        let it = f(r, "post_lb_iteration_s") * 1e6;
        assert!(
            it >= obj_us && it < obj_us + 10.0,
            "{s}, one object per PE: {it}"
        );
    }
    // `whatif replay --pes objects` is the same bound.
    let o = whatif(&[
        "replay", &t, "--net", net, "--pes", "objects", "--json", "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["pes"], 192);
    std::fs::remove_dir_all(&dir).ok();
}

/// The library path: database, strategy, metrics, replay with an explicit map.
#[test]
fn library_path_start_map_matches_the_cli() {
    let dir = tmpdir("lb-lib");
    let path = emulate(
        &dir,
        "st.trace",
        "stencil3d",
        "8",
        &["grid=16x16x16", "block=8x8x4", "iters=3"],
    );
    let t = trace::read_trace_file(std::path::Path::new(&path)).unwrap();
    let plan = SyncPlan::find(&t, LbPoint::Start).unwrap();
    let current = Mapping::Recorded.resolve(&t, 4).unwrap();
    let db = LbDatabase::from_trace(
        &t,
        &plan,
        &DbOptions {
            current: &current,
            pes: 4,
            cpu_scale: &[],
            migrate_bytes: 0,
        },
    )
    .unwrap();
    let s: Strategy = "greedy".parse().unwrap();
    let map = s.map(&db, None, 1).unwrap();
    let m = metrics(&db, &map, None);
    let r = run_with(
        &t,
        "latency:lat=1us",
        &ReplayConfig {
            pes: Some(4),
            mapping: Mapping::Explicit(map),
            ..ReplayConfig::default()
        },
    );
    let rows = lb_rows(&[
        &path,
        "--net",
        "latency:lat=1us",
        "--pes",
        "4",
        "--strategies",
        "greedy",
    ]);
    assert_eq!(f(&rows[0], "makespan_s"), r.makespan.as_ps() as f64 / 1e12);
    assert_eq!(f(&rows[0], "migrations"), m.migrations as f64);
    assert_eq!(f(&rows[0], "max_avg_load"), m.max_avg_load);
    // 16 objects of equal load on 4 PEs.
    assert_eq!(m.max_load_ps, m.avg_load_ps);
    assert_eq!(db.objects.len(), 16);
    assert!(
        db.objects
            .iter()
            .all(|o| o.load_ps > SimDuration::ZERO.as_ps())
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn lb_outputs_errors_and_determinism() {
    let dir = tmpdir("lb-cli");
    let t = emulate(
        &dir,
        "si.trace",
        "simple-imbalance",
        "8",
        &["iters=4", "lb_at=2", "work=10us"],
    );
    // Same inputs, same rows, byte for byte (random included: seeded).
    let args = [
        "lb",
        &t,
        "--net",
        "latency:lat=1us",
        "--json",
        "-q",
        "--strategies",
        "random,greedy",
    ];
    let a = whatif(&args);
    let b = whatif(&args);
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout);
    let c = whatif(&[
        "lb",
        &t,
        "--net",
        "latency:lat=1us",
        "--json",
        "-q",
        "--strategies",
        "random",
        "--seed",
        "9",
    ]);
    assert!(c.status.success());
    let (ra, rc): (Value, Value) = (
        serde_json::from_slice(&a.stdout).unwrap(),
        serde_json::from_slice(&c.stdout).unwrap(),
    );
    assert_eq!(ra[0]["strategy"], "random");
    assert_ne!(ra[0], rc[0], "another seed, another random map");

    // Table, CSV, database and maps.
    let csv = dir.join("rows.csv");
    let db = dir.join("db");
    let maps = dir.join("maps");
    let o = whatif(&[
        "lb",
        &t,
        "--net",
        "latency:lat=1us",
        "-q",
        "--strategies",
        "dummy,greedy-refine:tolerance=1.05",
        "--csv",
        csv.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
        "--maps",
        maps.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.starts_with("strategy"), "{table}");
    assert!(table.contains("greedy-refine:tolerance=1.05"));
    let rows = std::fs::read_to_string(&csv).unwrap();
    let header = rows.lines().next().unwrap();
    for col in [
        "strategy",
        "pre_lb_iteration_s",
        "post_lb_iteration_s",
        "makespan_s",
        "max_avg_load",
        "migrations",
    ] {
        assert!(header.split(',').any(|h| h == col), "{col} in {header}");
    }
    assert_eq!(rows.lines().count(), 3);
    for f in ["objects.csv", "pes.csv", "edges.csv", "db.json"] {
        assert!(db.join(f).exists(), "{f}");
    }
    let objs = std::fs::read_to_string(db.join("objects.csv")).unwrap();
    assert_eq!(objs.lines().count(), 1 + 16);
    assert!(maps.join("greedy-refine_tolerance_1.05.csv").exists());

    // Errors name what is wrong and what is known.
    let e = whatif(&["lb", &t, "--strategies", "best"]);
    let msg = String::from_utf8_lossy(&e.stderr);
    assert!(!e.status.success());
    assert!(
        msg.contains("unknown load-balancing strategy `best`") && msg.contains("greedy-refine"),
        "{msg}"
    );
    let e = whatif(&["lb", &t, "--at", "3"]);
    let msg = String::from_utf8_lossy(&e.stderr);
    assert!(
        msg.contains("no LB sync point at iteration 3") && msg.contains("iteration 2"),
        "{msg}"
    );
    let e = whatif(&["lb", &t, "--strategies", "topo"]);
    let msg = String::from_utf8_lossy(&e.stderr);
    assert!(
        msg.contains("needs a network model with a topology"),
        "{msg}"
    );
    let e = whatif(&["lb", &t, "--pes", "0"]);
    assert!(String::from_utf8_lossy(&e.stderr).contains("at least one PE"));
    let h = whatif(&["lb", "--help"]);
    let help = String::from_utf8_lossy(&h.stdout);
    for name in lb_strategies::KNOWN {
        assert!(help.contains(name), "--help lists {name}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Objects a load balancer moved in the recorded run (`ObjectInfo::moves`, from Projections
/// logs of a run with `+balancer`): the recorded mapping runs each block where it ran,
/// including the recorded order's per-PE chains; another mapping places each object once.
/// Object A runs two 1 ms blocks in a chain, B one 1 ms block, all recorded on PE 0 except
/// A's second block, which ran on PE 1 after A moved: 2 ms with the move, 3 ms without.
#[test]
fn recorded_moves_place_each_block_where_it_ran() {
    let ms = sim_core::SimDuration::from_ms;
    let mut b = TraceBuilder::new(TraceMeta {
        name: "moved".into(),
        recorded_pes: 2,
        ..TraceMeta::default()
    });
    let e = b.entry("work");
    let a = b.object("A", PeId(0));
    let o = b.object("B", PeId(0));
    let start = |obj, t: u64| Block {
        recorded_start: Some(sim_core::SimTime::from_ps(t)),
        ..Block::new(obj, e, ms(1))
    };
    let a0 = b.block(start(a, 0), &[], &[]);
    b.block(start(o, 1_000_000_000), &[], &[]);
    let a1 = b.block(start(a, 1_000_000_000), &[a0], &[]);
    b.object_moved(a, a1, PeId(1));
    let t = b.finish().unwrap();
    assert_eq!(t.recorded_block_pes(), vec![0, 0, 1]);
    let makespan = |cfg: &ReplayConfig| run_with(&t, "ideal", cfg).makespan;
    let recorded = ReplayConfig::default();
    assert_eq!(
        makespan(&recorded),
        sim_core::SimTime::from_ps(2_000_000_000)
    );
    let ordered = ReplayConfig {
        recorded_order: true,
        ..ReplayConfig::default()
    };
    assert_eq!(
        makespan(&ordered),
        sim_core::SimTime::from_ps(2_000_000_000)
    );
    // The same placement given explicitly: each object once, on PE 0.
    let explicit = ReplayConfig {
        mapping: replay::Mapping::Explicit(vec![0, 0]),
        ..ReplayConfig::default()
    };
    assert_eq!(
        makespan(&explicit),
        sim_core::SimTime::from_ps(3_000_000_000)
    );
    // Without the move, the recorded mapping keeps A on PE 0.
    let mut unmoved = t.clone();
    unmoved.objects[0].moves.clear();
    assert_eq!(
        run_with(&unmoved, "ideal", &recorded).makespan,
        sim_core::SimTime::from_ps(3_000_000_000)
    );
}

/// A pinned object (a Charm++ PE's groups, main chare and singleton chares: `pe<p>` of a
/// Projections import) never moves. Recorded on 2 PEs: `pe0` (pinned) works 4 ms on PE 0,
/// `pe1` (pinned) nothing on PE 1, chares A and B 1 ms each on PE 0. Every strategy may move
/// only A and B: greedy puts both on PE 1, so PE 0 keeps pe0's 4 ms (without the pin it would
/// have moved pe0 away and A, B kept PE 0 at 2 ms). At a sync point a pinned object with a
/// sync block is not migratable either. `--map block`/`round-robin` onto 4 PEs put the pinned
/// objects where the recorded map does (PEs 0 and 2) and spread A and B as if alone.
#[test]
fn pinned_objects_never_move() {
    let ms = sim_core::SimDuration::from_ms;
    let mut b = TraceBuilder::new(TraceMeta {
        name: "pinned".into(),
        recorded_pes: 2,
        ..TraceMeta::default()
    });
    let e = b.entry("work");
    let pe0 = b.object("pe0", PeId(0));
    let pe1 = b.object("pe1", PeId(1));
    let a = b.object("A", PeId(0));
    let c = b.object("B", PeId(0));
    b.pin_object(pe0);
    b.pin_object(pe1);
    let sync = |o, d| Block {
        iteration: Some(0),
        lb_sync: true,
        ..Block::new(o, e, ms(d))
    };
    b.block(sync(pe0, 4), &[], &[]);
    b.block(sync(a, 1), &[], &[]);
    b.block(sync(c, 1), &[], &[]);
    let t = b.finish().unwrap();
    assert_eq!(
        t.objects.iter().map(|o| o.pinned).collect::<Vec<_>>(),
        [true, true, false, false]
    );

    for point in [LbPoint::Start, LbPoint::Iteration(1)] {
        let plan = SyncPlan::find(&t, point).unwrap();
        assert_eq!(plan.migratable, [false, false, true, true], "{point}");
        let current = Mapping::Recorded.resolve(&t, 2).unwrap();
        assert_eq!(current, [0, 1, 0, 0]);
        let db = LbDatabase::from_trace(
            &t,
            &plan,
            &DbOptions {
                current: &current,
                pes: 2,
                cpu_scale: &[],
                migrate_bytes: 0,
            },
        )
        .unwrap();
        for name in lb_strategies::KNOWN.iter().filter(|n| **n != "topo") {
            let s: Strategy = name.parse().unwrap();
            let map = s.map(&db, None, 1).unwrap();
            assert_eq!(
                &map[..2],
                &[0, 1],
                "{name} at {point} moved a pinned object"
            );
            if *name == "greedy" {
                assert_eq!(map, [0, 1, 1, 1], "{point}");
                assert_eq!(metrics(&db, &map, None).max_load_ps, ms(4).as_ps());
            }
        }
    }
    assert_eq!(Mapping::Block.resolve(&t, 4).unwrap(), [0, 2, 0, 2]);
    assert_eq!(Mapping::RoundRobin.resolve(&t, 4).unwrap(), [0, 2, 0, 1]);
    // Without pins, as before: objects in id order.
    let mut free = t.clone();
    free.objects.iter_mut().for_each(|o| o.pinned = false);
    assert_eq!(Mapping::Block.resolve(&free, 4).unwrap(), [0, 1, 2, 3]);
    assert_eq!(Mapping::RoundRobin.resolve(&free, 4).unwrap(), [0, 1, 2, 3]);
    assert_eq!(
        SyncPlan::find(&free, LbPoint::Start).unwrap().migratable,
        [true; 4]
    );
}

/// `whatif lb` on a Charm++ log whose work is all in pinned per-PE objects (singleton
/// chares): nothing can move, and it says so instead of comparing identical maps silently.
#[test]
fn lb_warns_when_every_object_is_pinned() {
    let dir = tmpdir("lb-pinned");
    let sts = "PROJECTIONS_ID\nVERSION 11.0\nMACHINE \"test\"\nPROCESSORS 2\nTOTAL_CHARES 1\n\
               TOTAL_EPS 1\nTOTAL_MSGS 1\nCHARE 0 \"Fib\" -1\nENTRY CHARE 0 \"calc()\" 0 0\n\
               MESSAGE 0 80\nEND\n";
    std::fs::write(dir.join("f.sts"), sts).unwrap();
    std::fs::write(
        dir.join("f.0.log"),
        "PROJECTIONS-RECORD 2\n2 0 0 100 1 -1 80 0 0 0 0 0 0\n3 0 0 900 1 0 0 0\n",
    )
    .unwrap();
    std::fs::write(dir.join("f.1.log"), "PROJECTIONS-RECORD 0\n").unwrap();
    let o = whatif(&[
        "lb",
        "--format",
        "projections",
        dir.join("f.sts").to_str().unwrap(),
        "--strategies",
        "dummy,greedy",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("2 objects (0 migratable)"), "{err}");
    assert!(
        err.contains("warning: no object of `f` can move at start (2 of 2 objects are pinned"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// `whatif lb` on a real AMPI run (`tests/data/ampi/coll/p2`, 8 ranks of unequal work on 2
/// PEs): greedy's predicted gain matches what `+balancer GreedyLB` measured (untraced
/// medians 0.6654 s -> 0.5387 s, 0.81). Before the ranks were objects, greedy moved only
/// empty `ampi`/`TCharm` elements and predicted +0.3 %.
#[test]
fn lb_on_an_ampi_run_predicts_greedylb() {
    let sts = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/ampi/coll/p2/coll.prj.sts");
    let rows = lb_rows(&[
        "--format",
        "projections",
        sts.to_str().unwrap(),
        "--net",
        "latency:lat=2us",
        "--strategies",
        "dummy,greedy",
    ]);
    let ratio = f(row(&rows, "greedy"), "makespan_s") / f(row(&rows, "dummy"), "makespan_s");
    let measured = 0.5387 / 0.6654;
    assert!(
        (ratio - measured).abs() <= 0.05,
        "predicted {ratio}, measured {measured}"
    );
    assert!(f(row(&rows, "greedy"), "migrations") >= 1.0);
}
