//! Unit tests on hand-made databases and small traces.

use super::*;
use network_models::Topology;
use sim_core::{Ratio, SimDuration};
use trace::{Block, PeId, TraceBuilder, TraceMeta};

const UNIT: u64 = 1_000_000_000; // 1 ms in ps

/// A database from (load units, pe) per object, uniform speeds, all migratable.
fn db(objs: &[(u64, u32)], pes: u32, edges: &[(u32, u32, u64)]) -> LbDatabase {
    let mut e: Vec<CommEdge> = edges
        .iter()
        .map(|&(a, b, bytes)| CommEdge {
            a: a.min(b),
            b: a.max(b),
            messages: 1,
            bytes,
        })
        .collect();
    e.sort_by_key(|e| (e.a, e.b));
    LbDatabase {
        point: LbPoint::Start,
        objects: objs
            .iter()
            .enumerate()
            .map(|(i, &(l, pe))| ObjectRecord {
                name: format!("o{i}"),
                load_ps: l * UNIT,
                from_pe: pe,
                migratable: true,
                migrate_bytes: 100,
            })
            .collect(),
        pes: (0..pes)
            .map(|_| PeRecord {
                background_ps: 0,
                cpu_scale: Ratio::ONE,
            })
            .collect(),
        edges: e,
    }
}

/// SimpleImbalance: `opp` objects per PE, block-placed; upper half of the PEs heavy (2 units).
fn simple_imbalance(pes: u32, opp: u32) -> LbDatabase {
    let objs: Vec<(u64, u32)> = (0..pes * opp)
        .map(|i| {
            let pe = i / opp;
            (if pe >= pes / 2 { 2 } else { 1 }, pe)
        })
        .collect();
    db(&objs, pes, &[])
}

fn run(name: &str, d: &LbDatabase) -> (Vec<u32>, Metrics) {
    let s: Strategy = name.parse().unwrap();
    let m = s.map(d, None, 1).unwrap();
    let x = metrics(d, &m, None);
    (m, x)
}

#[test]
fn greedy_balances_simple_imbalance_to_three_quarters() {
    for opp in [2, 20] {
        let d = simple_imbalance(100, opp);
        let (_, before) = run("dummy", &d);
        let (_, g) = run("greedy", &d);
        assert_eq!(before.max_load_ps, 2 * opp as u64 * UNIT);
        assert_eq!(before.migrations, 0);
        // 3/2 units per object on average: every PE ends with 1.5 * opp units.
        assert_eq!(g.max_load_ps * 4, before.max_load_ps * 3, "opp {opp}");
        assert!((g.max_avg_load - 1.0).abs() < 1e-12);
    }
}

#[test]
fn rotate_moves_everything_and_dummy_nothing() {
    let d = simple_imbalance(10, 3);
    let (m, r) = run("rotate", &d);
    assert_eq!(r.migrations, 30);
    assert_eq!(r.migrated_bytes, 3000);
    assert_eq!(m[29], 0, "the last PE's objects wrap to PE 0");
    assert_eq!(run("dummy", &d).1.migrations, 0);
    // Rotating a block map keeps the load multiset: max load unchanged.
    assert_eq!(r.max_load_ps, run("dummy", &d).1.max_load_ps);
}

#[test]
fn random_is_seeded() {
    let d = simple_imbalance(16, 4);
    let a = run("random:seed=7", &d).0;
    assert_eq!(a, run("random:seed=7", &d).0);
    assert_ne!(a, run("random:seed=8", &d).0);
    assert!(a.iter().all(|&p| p < 16));
    // Without a seed it uses the caller's root seed.
    let s: Strategy = "random".parse().unwrap();
    assert_eq!(s.map(&d, None, 7).unwrap(), a);
}

#[test]
fn greedy_refine_tolerance_one_matches_greedy_with_fewer_moves() {
    for opp in [2, 20] {
        let d = simple_imbalance(100, opp);
        let (_, g) = run("greedy", &d);
        let (_, gr) = run("greedy-refine:tolerance=1.0", &d);
        assert_eq!(gr.max_load_ps, g.max_load_ps, "opp {opp}");
        assert!(
            gr.migrations < g.migrations,
            "{} vs {}",
            gr.migrations,
            g.migrations
        );
        // A looser cap never moves more.
        let (_, loose) = run("greedy-refine:tolerance=1.2", &d);
        assert!(loose.migrations <= gr.migrations);
        assert!(loose.max_load_ps <= g.max_load_ps * 12 / 10);
    }
}

#[test]
fn refine_moves_few_objects_within_its_threshold() {
    // 20 per PE: refine can reach greedy's max by moving heavy objects only.
    let d = simple_imbalance(100, 20);
    let (_, g) = run("greedy", &d);
    for v in ["refine", "refine-a", "refine:variant=b"] {
        let (_, r) = run(v, &d);
        assert!(
            r.migrations < g.migrations,
            "{v}: {} vs {}",
            r.migrations,
            g.migrations
        );
        assert!(r.max_load_ps * 100 <= g.max_load_ps * 101, "{v}");
        // Each heavy PE (40 units) sheds 10 units = 5 heavy objects; 50 heavy PEs.
        assert_eq!(r.migrations, 250, "{v}");
    }
    // 2 per PE: no move fits under 1.5 x greedy's max except leaving things as they are.
    let d = simple_imbalance(100, 2);
    let (_, r) = run("refine", &d);
    assert_eq!(r.migrations, 0);
    assert!(r.max_avg_load <= 1.5);
}

#[test]
fn non_migratable_objects_stay_and_count_as_background() {
    let mut d = simple_imbalance(4, 2);
    d.objects[7].migratable = false; // heavy, on PE 3
    d.pes[3].background_ps = d.objects[7].load_ps;
    for s in [
        "rotate",
        "random:seed=3",
        "greedy",
        "greedy-refine",
        "refine",
        "rec-bipart",
    ] {
        let (m, _) = run(s, &d);
        assert_eq!(m[7], 3, "{s} moved a non-migratable object");
    }
    // Greedy: 2 on PE 3 already; 1+1+1+1+2+2+2 = 10 spread over the 4 PEs on top.
    let (m, g) = run("greedy", &d);
    let on3: u64 = (0..7)
        .filter(|&o| m[o] == 3)
        .map(|o| d.objects[o].load_ps)
        .sum();
    assert!(on3 <= UNIT, "PE 3 got {on3} more");
    assert_eq!(g.max_load_ps, 3 * UNIT);
}

#[test]
fn greedy_gives_faster_pes_more_work() {
    let mut d = db(&vec![(1, 0); 30], 2, &[]);
    d.pes[0].cpu_scale = Ratio::new(1, 2).unwrap(); // twice as fast
    let (m, g) = run("greedy", &d);
    let on0 = m.iter().filter(|&&p| p == 0).count();
    assert_eq!(on0, 20);
    assert_eq!(g.max_load_ps, 10 * UNIT);
}

/// A `w x h` grid of unit objects with 1000-byte edges to the right and below.
fn grid(w: u32, h: u32, pes: u32) -> LbDatabase {
    let mut edges = Vec::new();
    for y in 0..h {
        for x in 0..w {
            let i = y * w + x;
            if x + 1 < w {
                edges.push((i, i + 1, 1000));
            }
            if y + 1 < h {
                edges.push((i, i + w, 1000));
            }
        }
    }
    let objs: Vec<(u64, u32)> = (0..w * h).map(|i| (1, i % pes)).collect();
    db(&objs, pes, &edges)
}

#[test]
fn rec_bipart_cuts_far_less_than_greedy_and_stays_balanced() {
    let d = grid(16, 16, 8);
    let (_, g) = run("greedy", &d);
    let (m, rb) = run("rec-bipart", &d);
    assert!(m.iter().all(|&p| p < 8));
    assert!(rb.max_avg_load <= 1.05 + 1e-9, "{}", rb.max_avg_load);
    // 8 parts of 32 grid cells: a good partition cuts about 16*7 edges at most; greedy
    // scatters neighbours and cuts nearly all 480.
    assert!(
        rb.cut_bytes * 2 < g.cut_bytes,
        "{} vs {}",
        rb.cut_bytes,
        g.cut_bytes
    );
    assert!(rb.cut_bytes <= 112 * 1000, "{}", rb.cut_bytes);
}

#[test]
fn rec_bipart_handles_disconnected_and_empty_graphs() {
    let d = simple_imbalance(6, 3); // no edges
    let (m, r) = run("rec-bipart", &d);
    assert!(m.iter().all(|&p| p < 6));
    assert_eq!(r.cut_bytes, 0);
    assert!(r.max_avg_load < 1.34, "{}", r.max_avg_load);
}

#[test]
fn topo_lowers_hop_bytes_on_a_torus() {
    // A chain of 16 objects, one per PE; PEs on a 4x4 torus. Chain order along PE ids jumps
    // rows; topo can snake.
    let edges: Vec<(u32, u32, u64)> = (0..15).map(|i| (i, i + 1, 1000)).collect();
    let objs: Vec<(u64, u32)> = (0..16).map(|i| (1, (i * 7) % 16)).collect();
    let d = db(&objs, 16, &edges);
    let t = PeTopology {
        topology: Topology::Torus { dims: vec![4, 4] },
        pes_per_node: 1,
    };
    let score = |s: &str| {
        let st: Strategy = s.parse().unwrap();
        let m = st.map(&d, Some(&t), 1).unwrap();
        metrics(&d, &m, Some(&t))
    };
    let rb = score("rec-bipart");
    let tp = score("topo");
    let g = score("greedy");
    assert_eq!(tp.max_load_ps, UNIT);
    assert_eq!(tp.hop_bytes, Some(15_000), "every chain link one hop apart");
    assert!(rb.hop_bytes.unwrap() >= tp.hop_bytes.unwrap());
    assert!(g.hop_bytes.unwrap() > tp.hop_bytes.unwrap());
    // Without a topology it is an error, not a guess.
    let st: Strategy = "topo".parse().unwrap();
    let e = st.map(&d, None, 1).unwrap_err().to_string();
    assert!(e.contains("needs a network model with a topology"), "{e}");
}

#[test]
fn strategy_names_and_parameters() {
    let e = "fancy".parse::<Strategy>().unwrap_err().to_string();
    assert!(e.contains("unknown load-balancing strategy `fancy`"), "{e}");
    assert!(e.contains("greedy-refine") && e.contains("topo"), "{e}");
    let e = "greedy:tolerance=2"
        .parse::<Strategy>()
        .unwrap_err()
        .to_string();
    assert!(e.contains("greedy takes none"), "{e}");
    let e = "greedy-refine:tolerance=abc"
        .parse::<Strategy>()
        .unwrap_err()
        .to_string();
    assert!(e.contains("tolerance"), "{e}");
    let e = "greedy-refine:tolerance=0.9"
        .parse::<Strategy>()
        .unwrap_err()
        .to_string();
    assert!(e.contains("at least 1"), "{e}");
    let e = "refine:variant=c"
        .parse::<Strategy>()
        .unwrap_err()
        .to_string();
    assert!(e.contains("expected a or b"), "{e}");
    let l =
        parse_list("dummy, greedy-refine:tolerance=1.05,refine:variant=a,upper=1.2,topo").unwrap();
    let names: Vec<String> = l.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        names,
        [
            "dummy",
            "greedy-refine:tolerance=1.05",
            "refine:variant=a,upper=1.2",
            "topo"
        ]
    );
    assert_eq!(
        l[2].kind,
        Kind::Refine {
            variant: RefineVariant::A,
            upper: Ratio::new(6, 5).unwrap()
        }
    );
    assert!(parse_list(" , ").is_err());
}

/// Two objects on two PEs; each iterates 3 times with a sync after iteration 1 (object 0
/// only) — object 1 never syncs.
fn sync_trace() -> trace::Trace {
    let mut b = TraceBuilder::new(TraceMeta {
        name: "sync".into(),
        recorded_pes: 2,
        ..TraceMeta::default()
    });
    let e = b.entry("work");
    let o0 = b.object("a", PeId(0));
    let o1 = b.object("b", PeId(1));
    for it in 0..3u32 {
        for (o, us) in [(o0, 10u64), (o1, 30)] {
            let mut blk = Block::new(o, e, SimDuration::from_us(us * (it as u64 + 1)));
            blk.iteration = Some(it);
            blk.lb_sync = o == o0 && it == 1;
            b.block(blk, &[], &[]);
        }
    }
    b.finish().unwrap()
}

#[test]
fn sync_points_windows_and_background() {
    let t = sync_trace();
    assert_eq!(sync_iterations(&t), vec![2]);
    let e = SyncPlan::find(&t, LbPoint::Iteration(3))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no LB sync point at iteration 3") && e.contains("iteration 2"),
        "{e}"
    );
    let p = SyncPlan::find(&t, LbPoint::Iteration(2)).unwrap();
    assert_eq!(p.migratable, vec![true, false]);
    assert_eq!(p.switch_after[0].map(|b| b.0), Some(2));
    let d = LbDatabase::from_trace(
        &t,
        &p,
        &DbOptions {
            current: &[0, 1],
            pes: 2,
            cpu_scale: &[],
            migrate_bytes: 64,
        },
    )
    .unwrap();
    // Object 0: iterations 0 and 1 (10 + 20 us). Object 1 (not migratable): running label
    // in [0, 2): 30 + 60 us, as background of PE 1.
    assert_eq!(d.objects[0].load_ps, 30_000_000);
    assert_eq!(d.objects[1].load_ps, 90_000_000);
    assert_eq!(d.pes[1].background_ps, 90_000_000);
    assert_eq!(d.pes[0].background_ps, 0);
    let s = SyncPlan::find(&t, LbPoint::Start).unwrap();
    assert!(s.in_window.iter().all(|w| *w));
    // JSON and CSV exports.
    let j = d.to_json();
    assert_eq!(j["objects"][1]["migratable"], false);
    let dir = std::env::temp_dir().join(format!("whatif-lbdb-{}", std::process::id()));
    d.write_csv(&dir).unwrap();
    let objs = std::fs::read_to_string(dir.join("objects.csv")).unwrap();
    assert!(objs.starts_with("object,name,load_s,from_pe,migratable,migrate_bytes\n"));
    assert!(objs.contains("0,a,0.000030000000,0,true,64"), "{objs}");
    let pes = std::fs::read_to_string(dir.join("pes.csv")).unwrap();
    assert!(pes.contains("1,0.000090000000,1,1,0.000090000000"), "{pes}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn graph_lists_are_sorted_and_symmetric() {
    let d = grid(5, 4, 3);
    let g = partition::Graph::of(&d);
    for v in 0..d.objects.len() {
        let r = g.start[v]..g.start[v + 1];
        assert!(
            g.nbr[r.clone()].windows(2).all(|p| p[0] < p[1]),
            "vertex {v}"
        );
        for &u in &g.nbr[r] {
            let ru = g.start[u as usize]..g.start[u as usize + 1];
            assert!(g.nbr[ru].contains(&(v as u32)));
        }
    }
    assert_eq!(g.nbr.len(), 2 * d.edges.len());
}

/// A small `+LBDump` file: 2 PEs, 3 objects, one object-to-object record and one to a PE.
fn dump_bytes() -> Vec<u8> {
    let mut b = vec![0x10, 0xea, 0xbd, 0xf9, 1, 1, 2, 4, 8, 16, 1, 4, 8, 1, 1, 8];
    let i32s = |b: &mut Vec<u8>, v: i32| b.extend_from_slice(&v.to_le_bytes());
    let u64s = |b: &mut Vec<u8>, v: u64| b.extend_from_slice(&v.to_le_bytes());
    let f64s = |b: &mut Vec<u8>, v: f64| b.extend_from_slice(&v.to_le_bytes());
    i32s(&mut b, 3); // lbversion
    i32s(&mut b, 2); // stats_msg_count
    i32s(&mut b, 2); // n_migrateobjs
    u64s(&mut b, 2);
    for (pe, bg) in [(0, 0.5), (1, 0.25)] {
        f64s(&mut b, 2.0);
        f64s(&mut b, 0.1);
        f64s(&mut b, bg);
        f64s(&mut b, 1.0);
        b.push(1);
        i32s(&mut b, 2);
        i32s(&mut b, pe);
    }
    u64s(&mut b, 3);
    for (id, wall, mig) in [(7u64, 1.0, 1u8), (8, 2.0, 1), (9, 4.0, 0)] {
        i32s(&mut b, 10);
        i32s(&mut b, 0);
        u64s(&mut b, id);
        i32s(&mut b, id as i32);
        f64s(&mut b, wall);
        b.push(mig);
        b.push(0);
        b.extend_from_slice(&((1u16 << 13) | 3).to_le_bytes()); // 3 x 256 B
    }
    u64s(&mut b, 3);
    for pe in [0, 0, 1] {
        i32s(&mut b, pe);
    }
    u64s(&mut b, 2);
    // 7 -> 9: 5 messages, 500 bytes.
    i32s(&mut b, -1);
    i32s(&mut b, 10);
    u64s(&mut b, 7);
    b.push(2);
    i32s(&mut b, 10);
    u64s(&mut b, 9);
    i32s(&mut b, 1);
    i32s(&mut b, 5);
    i32s(&mut b, 500);
    // 8 -> PE 1.
    i32s(&mut b, -1);
    i32s(&mut b, 10);
    u64s(&mut b, 8);
    b.push(1);
    i32s(&mut b, 1);
    i32s(&mut b, 1);
    i32s(&mut b, 10);
    b
}

#[test]
fn lbdump_reads_into_the_database() {
    let d = crate::parse_lbdump(&dump_bytes(), "d").unwrap();
    assert_eq!(d.objects.len(), 3);
    assert_eq!(d.objects[0].pup_bytes, 768);
    assert_eq!(crate::lbdump::decode_pup_size(0), 0);
    let (db, used) = d.database(None, Ratio::ONE, 64).unwrap();
    // PE 0: bg 0.5 + objects 7 and 8 (1 + 2 s); PE 1: bg 0.25 + non-migratable 9 (4 s).
    assert_eq!(db.pes[0].background_ps, 500_000_000_000);
    assert_eq!(db.pes[1].background_ps, 4_250_000_000_000);
    assert_eq!(
        db.raw_loads(&db.current_map()),
        vec![3_500_000_000_000, 4_250_000_000_000]
    );
    assert_eq!(db.edges.len(), 1);
    assert_eq!(
        (
            db.edges[0].a,
            db.edges[0].b,
            db.edges[0].messages,
            db.edges[0].bytes
        ),
        (0, 2, 5, 500)
    );
    assert_eq!(used.pe_records, 1);
    assert_eq!(db.objects[1].migrate_bytes, 64);
    assert_eq!(db.objects[2].name, "om10:9");
    // On 1 PE everything folds onto PE 0.
    let (db1, _) = d.database(Some(1), Ratio::ONE, 0).unwrap();
    assert_eq!(db1.raw_loads(&db1.current_map()), vec![7_750_000_000_000]);
}

#[test]
fn lbdump_errors_name_the_offset() {
    let good = dump_bytes();
    let msg = |b: &[u8]| crate::parse_lbdump(b, "f.0").unwrap_err().to_string();
    let mut bad = good.clone();
    bad[0] = 0;
    assert!(msg(&bad).contains("f.0: byte offset 0: expected the PUP::machineInfo magic"));
    let mut bad = good.clone();
    bad[16] = 9; // lbversion
    assert!(msg(&bad).contains("byte offset 16: expected LB database format version"));
    // A PE count far beyond the file: refused before allocating.
    let mut bad = good.clone();
    bad[28..36].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(msg(&bad).contains("the PE count: at most"), "{}", msg(&bad));
    // Trailing bytes (a CPU-timer build).
    let mut bad = good.clone();
    bad.push(0);
    assert!(msg(&bad).contains("1 bytes are left"));
    // Cut anywhere: an error, never a panic.
    for n in 0..good.len() {
        assert!(crate::parse_lbdump(&good[..n], "f").is_err());
    }
}
