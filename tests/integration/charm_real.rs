//! Real Charm++ 8.0.1 programs (issue 30): Projections logs of unmodified stencil3d and
//! jacobi2d runs at +p1 and +p2, their measured wall times (`MEASURED.md`), and stencil3d's
//! CentralLB `+LBDump` databases, all in `../shared/data/charm-*` (skipped when absent).

use crate::cli::{tmpdir, whatif};
use crate::{run_with, shared_data};
use importers::{Format, ImportOptions, Imported, import};
use replay::{Mapping, ReplayConfig};
use std::path::{Path, PathBuf};

struct Program {
    dir: PathBuf,
    stem: &'static str,
    /// Iterations the run made (stencil3d: 100; jacobi2d: converged after 90).
    iterations: u64,
    /// Iterations that end in a reduction whose result is broadcast back to the array
    /// (stencil3d: all but the 20 that end in AtSync or the final report; jacobi2d: all).
    barriers: u64,
}

fn program(name: &str, stem: &'static str, iterations: u64, barriers: u64) -> Option<Program> {
    shared_data(name).map(|dir| Program {
        dir,
        stem,
        iterations,
        barriers,
    })
}

fn load(p: &Program, pes: &str) -> Imported {
    let sts = p.dir.join(format!("logs/{pes}/{}.sts", p.stem));
    import(Format::Projections, &sts, &ImportOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e}", sts.display()))
}

/// The median of the quiet untraced runs of `config` (`p1`, `p2`, `p2-RefineLB`, ...) from
/// the summary table of `MEASURED.md`: `| p2 | 3, 4.421, 4.522 | ...`.
fn measured_median(p: &Program, config: &str) -> f64 {
    let text = std::fs::read_to_string(p.dir.join("MEASURED.md")).unwrap();
    let row = text
        .lines()
        .find(|l| l.starts_with(&format!("| {config} | ")))
        .unwrap_or_else(|| panic!("no summary row `{config}` in MEASURED.md"));
    let quiet = row.split('|').nth(2).unwrap();
    quiet.split(',').nth(2).unwrap().trim().parse().unwrap()
}

fn secs(t: sim_core::SimTime) -> f64 {
    t.as_ps() as f64 * 1e-12
}

/// The +p2 recorded schedule comes back exactly: every trigger is matched to a creation
/// that precedes it (no cycle), SDAG pieces are chained, objects are the chares. Exactly up
/// to the clock skew the import could not take out: a message that seems to arrive before
/// its creation is floored at 0 and starts its block late, and since the runtime's work
/// between entry methods is in the blocks, no idle gap absorbs that (at most the note's
/// count times its largest skew).
fn recorded_order_is_the_recorded_run(p: &Program, chares: usize) {
    let imported = load(p, "p2");
    let t = &imported.trace;
    let elements = t.objects.iter().filter(|o| o.name.contains('[')).count();
    assert_eq!(elements, chares, "one object per chare array element");
    assert_eq!(t.objects.len(), chares + 2, "and one per PE");
    for want in [
        "deliveries name their own PE as source but were created on another PE",
        "SDAG serial/SDAG_RTS blocks (event -1) continue",
    ] {
        assert!(
            imported.notes.iter().any(|n| n.contains(want)),
            "{want}: {:?}",
            imported.notes
        );
    }
    let cfg = ReplayConfig {
        recorded_order: true,
        ..ReplayConfig::default()
    };
    let r = run_with(t, "recorded", &cfg);
    let end = imported.recorded_end.unwrap();
    let slack_ps = floored_skew_bound_ps(&imported.notes);
    assert!(
        r.makespan >= end && r.makespan.as_ps() - end.as_ps() <= slack_ps,
        "{} vs recorded {end}, slack {slack_ps} ps",
        r.makespan
    );
}

/// From the note "N messages begin processing before their creation time (..., up to D)":
/// N x D in ps (0 without the note).
fn floored_skew_bound_ps(notes: &[String]) -> u64 {
    let Some(n) = notes
        .iter()
        .find(|n| n.contains("messages begin processing before their creation time"))
    else {
        return 0;
    };
    let count: u64 = n.split_whitespace().next().unwrap().parse().unwrap();
    let worst = n.split("up to ").nth(1).unwrap();
    let worst = worst.split(')').next().unwrap();
    let (value, unit) = worst.split_once(' ').unwrap();
    let scale = match unit {
        "ns" => 1e3,
        "us" => 1e6,
        "ms" => 1e9,
        other => panic!("unit {other} in {n}"),
    };
    count * (value.parse::<f64>().unwrap() * scale) as u64
}

/// A message-driven replay of the +p2 log pays the network: each iteration has at least one
/// cross-PE exchange on its critical path (ghosts across the PE boundary) and at most three
/// (a reduction's partial up to PE 0, its result broadcast down, the ghost exchange), so 1 ms
/// of latency adds between 1 and 3 ms per iteration over 2 us.
///
/// At a latency that dwarfs the compute (1 s) the makespan counts the PE crossings on the
/// longest chain: two per barrier iteration (the partial up, the broadcast down; the ghosts
/// travel while the broadcast does) plus the start and the end, and up to two more in an
/// iteration without a barrier: a chare consumes its messages in the recorded order (the
/// trace's objects are sequential), so one that received a neighbour's next ghost before it
/// computed waits for that ghost's crossing too (stencil3d: 201 crossings for 80 barriers in
/// 100 iterations; 166 at most when an object's blocks could run in any order, which let
/// kNeighbor's second reply start a step before the first had arrived). 1 ms can add at most
/// that many milliseconds; less where a PE's slack hides it.
fn latency_costs_what_the_dependencies_imply(p: &Program) -> f64 {
    let t = load(p, "p2").trace;
    let at = |lat: &str| {
        run_with(&t, &format!("latency:lat={lat}"), &ReplayConfig::default())
            .makespan
            .as_ps()
    };
    let (fast, slow, huge) = (at("2us"), at("1ms"), at("1s"));
    let added_ms = (slow - fast) as f64 * 1e-9;
    let per_iteration = added_ms / p.iterations as f64;
    let crossings = ((huge - fast) as f64 * 1e-12).round() as u64;
    eprintln!(
        "{}: 2us {:.6} s, 1ms {:.6} s: +{:.2}% ({per_iteration:.2} ms per iteration), 1s {:.6} s: {crossings} crossings",
        p.stem,
        fast as f64 * 1e-12,
        slow as f64 * 1e-12,
        (slow as f64 / fast as f64 - 1.0) * 100.0,
        huge as f64 * 1e-12
    );
    let free = p.iterations - p.barriers;
    assert!(
        (2 * p.barriers..=2 * p.barriers + 2 * free + 6).contains(&crossings),
        "{crossings} crossings for {} barriers in {} iterations",
        p.barriers,
        p.iterations
    );
    assert!(
        added_ms <= crossings as f64 && added_ms >= 0.5 * crossings as f64,
        "{added_ms} ms added by 1 ms over {crossings} crossings"
    );
    assert!(
        (1.0..=3.0).contains(&per_iteration),
        "{per_iteration} ms per iteration"
    );
    slow as f64 / fast as f64 - 1.0
}

/// The +p1 log on 2 PEs, the chares placed as Charm++'s default array map places them
/// (contiguous blocks of the index space: `--map block`), predicts the measured speedup.
/// That map is the one the +p2 run recorded: each chare of the +p1 log sits on the PE where
/// the chare of the same name ran in the +p2 log.
fn one_to_two_pes_predicts_the_measured_speedup(p: &Program) -> f64 {
    let t = load(p, "p1").trace;
    let recorded_p2: std::collections::HashMap<String, u32> = load(p, "p2")
        .trace
        .objects
        .iter()
        .map(|o| (o.name.clone(), o.recorded_pe.0))
        .collect();
    let block = Mapping::Block.resolve(&t, 2).unwrap();
    let mut chares = 0;
    for (o, pe) in t.objects.iter().zip(&block) {
        if o.name.contains('[') {
            assert_eq!(recorded_p2.get(&o.name), Some(pe), "{}", o.name);
            chares += 1;
        }
    }
    assert!(chares >= 64, "{chares} chares");
    let one = run_with(&t, "latency:lat=2us", &ReplayConfig::default()).makespan;
    let cfg = ReplayConfig {
        pes: Some(2),
        mapping: Mapping::Block,
        ..ReplayConfig::default()
    };
    let two = run_with(&t, "latency:lat=2us", &cfg).makespan;
    let predicted = secs(one) / secs(two);
    let measured = measured_median(p, "p1") / measured_median(p, "p2");
    eprintln!(
        "{}: predicted speedup {predicted:.3} ({:.6} s -> {:.6} s), measured {measured:.3}",
        p.stem,
        secs(one),
        secs(two)
    );
    assert!(
        (predicted / measured - 1.0).abs() <= 0.15,
        "predicted {predicted}, measured {measured}"
    );
    predicted / measured - 1.0
}

#[test]
fn stencil3d_real_run() {
    let Some(p) = program("charm-stencil3d", "stencil3d.prj", 100, 80) else {
        return;
    };
    recorded_order_is_the_recorded_run(&p, 64);
    latency_costs_what_the_dependencies_imply(&p);
    one_to_two_pes_predicts_the_measured_speedup(&p);
}

#[test]
fn jacobi2d_real_run() {
    let Some(p) = program("charm-jacobi2d", "jacobi2d.prj", 90, 90) else {
        return;
    };
    recorded_order_is_the_recorded_run(&p, 256);
    latency_costs_what_the_dependencies_imply(&p);
    one_to_two_pes_predicts_the_measured_speedup(&p);
}

/// The CLI route for a program with its own map: `inspect --objects` writes the +p2 trace's
/// recorded placement, and `replay --map file:` places the +p1 log's chares by it. For
/// jacobi2d that is Charm++'s default map, so the replay is the `--map block` one.
#[test]
fn jacobi2d_p1_placed_by_the_p2_runs_recorded_map() {
    let Some(p) = program("charm-jacobi2d", "jacobi2d.prj", 90, 90) else {
        return;
    };
    let dir = tmpdir("charm-map");
    let (p2, map) = (dir.join("p2.trace"), dir.join("map.csv"));
    trace::write_trace_file(&load(&p, "p2").trace, &p2, trace::Format::Binary).unwrap();
    let o = whatif(&[
        "inspect",
        p2.to_str().unwrap(),
        "--objects",
        map.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&map).unwrap();
    assert_eq!(
        text.lines().count(),
        1 + 256 + 2,
        "header, chares, PE objects"
    );
    assert!(
        text.starts_with("object,name,pe\n0,pe0,0\n1,pe1,1\n"),
        "{text:.60}"
    );
    let sts = p.dir.join(format!("logs/p1/{}.sts", p.stem));
    let replay = |map: &str| {
        let o = whatif(&[
            "replay",
            sts.to_str().unwrap(),
            "--format",
            "projections",
            "--pes",
            "2",
            "--map",
            map,
            "--net",
            "latency:lat=2us",
            "--json",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        (
            v["makespan_ps"].as_u64().unwrap(),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    };
    let (by_file, notes) = replay(&format!("file:{}", map.display()));
    let (by_block, _) = replay("block");
    assert_eq!(by_file, by_block);
    // The +p1 log has no PE 1 object: one name of the file is not in the trace.
    assert!(
        notes.contains("map.csv: 1 names are not objects of the trace"),
        "{notes}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The load-balancing steps are in the log (END_PHASE at each AtSync): iterations and sync
/// points are marked, the 64 chares are migratable there, and `whatif lb` ranks RefineLB
/// against no balancer as measured. Measured (quiet untraced runs, median of 3): no LB
/// 4.522 s (runs 4.421-4.523), RefineLB 4.401 s (4.172-4.567): a ratio of 0.973, inside a
/// run-to-run spread of about +-4%.
#[test]
fn stencil3d_lb_refine_against_no_lb_as_measured() {
    let Some(p) = program("charm-stencil3d", "stencil3d.prj", 100, 80) else {
        return;
    };
    let imported = load(&p, "p2");
    let t = &imported.trace;
    let its = lb_strategies::sync_iterations(t);
    assert_eq!(its, (1..20).collect::<Vec<u32>>(), "19 LB steps");
    let plan = lb_strategies::SyncPlan::find(t, lb_strategies::LbPoint::Iteration(1)).unwrap();
    assert_eq!(plan.migratable.iter().filter(|m| **m).count(), 64);
    let dir = tmpdir("charm-lb");
    let tr = dir.join("p2.trace");
    trace::write_trace_file(t, &tr, trace::Format::Binary).unwrap();
    let o = whatif(&[
        "lb",
        tr.to_str().unwrap(),
        "--strategies",
        "dummy,refine,greedy",
        "--net",
        "latency:lat=2us",
        "--json",
        "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let makespan = |s: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["strategy"] == s)
            .unwrap()["makespan_s"]
            .as_f64()
            .unwrap()
    };
    let predicted = makespan("refine") / makespan("dummy");
    let measured = measured_median(&p, "p2-RefineLB") / measured_median(&p, "p2");
    eprintln!("refine/no LB: predicted {predicted:.4}, measured {measured:.4}");
    assert!(predicted < 1.0, "refine helps: {predicted}");
    assert!((predicted - measured).abs() <= 0.10);
    // Greedy moves most chares (measured: bimodal, 4.6-31 s, from the moves' cost over
    // UDP); without a migration cost whatif can only say it balances as well as refine.
    assert!(makespan("greedy") < makespan("dummy"));
}

// ---------------------------------------------------------------------------------------------
// LB dumps

/// CSV rows of a reference-reader file, header dropped.
fn csv_rows(path: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

/// Every value of the three dumps equals what the reference reader (`read_lbdump.py`, which
/// checks it consumed every byte) wrote into the CSVs next to them.
#[test]
fn lbdumps_read_byte_for_byte_as_the_reference_reader() {
    let Some(dir) = shared_data("charm-stencil3d/lbdump") else {
        return;
    };
    for step in 0..3 {
        let file = dir.join(format!("lbdata.{step}"));
        let bytes = std::fs::read(&file).unwrap();
        let d = lb_strategies::parse_lbdump(&bytes, "dump").unwrap();
        assert_eq!((d.lbversion, d.stats_msg_count), (3, 2));
        let csv = dir.join(format!("lbdata.{step}.csv"));
        let f = |s: &str| s.parse::<f64>().unwrap();
        let procs = csv_rows(&csv.join("procs.csv"));
        assert_eq!(procs.len(), d.pes.len());
        for (r, p) in procs.iter().zip(&d.pes) {
            assert_eq!(r[0].parse::<i32>().unwrap(), p.pe);
            assert_eq!(f(&r[1]), p.total_walltime_s);
            assert_eq!(f(&r[2]), p.idle_s);
            assert_eq!(f(&r[3]), p.bg_walltime_s);
            assert_eq!(f(&r[4]), p.pe_speed);
            assert_eq!(r[5] == "1", p.available);
            assert_eq!(r[6].parse::<i32>().unwrap(), p.n_objs);
        }
        let objs = csv_rows(&csv.join("objs.csv"));
        assert_eq!(objs.len(), 64);
        assert_eq!(d.n_migrateobjs, 64);
        for (i, r) in objs.iter().enumerate() {
            let o = &d.objects[i];
            assert_eq!(r[1].parse::<i32>().unwrap(), o.om_id);
            assert_eq!(r[2].parse::<i32>().unwrap(), o.om_handle);
            assert_eq!(r[3].parse::<u64>().unwrap(), o.obj_id);
            assert_eq!(r[4].parse::<i32>().unwrap(), o.handle);
            assert_eq!(f(&r[5]), o.wall_s);
            assert_eq!(r[6] == "1", o.migratable);
            assert_eq!(r[7] == "1", o.async_arrival);
            let enc: u16 = r[8].parse().unwrap();
            assert_eq!(lb_strategies::lbdump::decode_pup_size(enc), o.pup_bytes);
            assert_eq!(r[9].parse::<i32>().unwrap(), d.from_pe[i]);
        }
        let comm = csv_rows(&csv.join("comm.csv"));
        assert_eq!(comm.len(), d.comm.len());
        for (r, c) in comm.iter().zip(&d.comm) {
            assert_eq!(r[0].parse::<i32>().unwrap(), c.src_pe);
            assert_eq!(
                (r[1].parse::<i32>().unwrap(), r[2].parse::<u64>().unwrap()),
                c.sender
            );
            match &c.dest {
                lb_strategies::lbdump::DumpDest::Object { key, last_pe } => {
                    assert_eq!(r[3], "2");
                    assert_eq!(
                        (r[5].parse::<i32>().unwrap(), r[6].parse::<u64>().unwrap()),
                        *key
                    );
                    assert_eq!(r[7].parse::<i32>().unwrap(), *last_pe);
                }
                lb_strategies::lbdump::DumpDest::Pe(pe) => {
                    assert_eq!(r[3], "1");
                    assert_eq!(r[4].parse::<i32>().unwrap(), *pe);
                }
                other => panic!("no multicast in stencil3d: {other:?}"),
            }
            assert_eq!(r[8].parse::<i32>().unwrap(), c.messages);
            assert_eq!(r[9].parse::<i32>().unwrap(), c.bytes);
        }
        // The database: loads per PE as the dump's, the graph from the object records.
        let (db, used) = d.database(None, sim_core::Ratio::ONE, 0).unwrap();
        let loads = db.raw_loads(&db.current_map());
        for (pe, load) in loads.iter().enumerate() {
            let want: f64 = d.pes[pe].bg_walltime_s
                + d.objects
                    .iter()
                    .zip(&d.from_pe)
                    .filter(|(_, p)| **p as usize == pe)
                    .map(|(o, _)| o.wall_s)
                    .sum::<f64>();
            assert!(
                (*load as f64 * 1e-12 - want).abs() < 1e-9,
                "{load} vs {want}"
            );
        }
        let pe_records = d
            .comm
            .iter()
            .filter(|c| c.src_pe != -1 || matches!(c.dest, lb_strategies::lbdump::DumpDest::Pe(_)))
            .count();
        assert_eq!(used.pe_records, pe_records);
        assert!(!db.edges.is_empty());
    }
}

/// `whatif lb --format lbdump` compares strategies on each dump; refine and greedy both
/// balance better than no balancer, and charging the moves (0.6 MB per chare: two 34^3
/// arrays of doubles) makes greedy's 30-odd moves cost more than refine's few.
#[test]
fn lb_on_the_dumps() {
    let Some(dir) = shared_data("charm-stencil3d/lbdump") else {
        return;
    };
    for step in 0..3 {
        let file = dir.join(format!("lbdata.{step}"));
        let o = whatif(&[
            "lb",
            "--format",
            "lbdump",
            file.to_str().unwrap(),
            "--strategies",
            "dummy,greedy,refine",
            "--net",
            "alphabeta:lat=20us,bw=1GB/s",
            "--migrate-bytes",
            "600KB",
            "--json",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("64 objects (64 migratable"), "{err}");
        let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let get = |s: &str, k: &str| {
            rows.as_array()
                .unwrap()
                .iter()
                .find(|r| r["strategy"] == s)
                .unwrap()[k]
                .as_f64()
                .unwrap()
        };
        assert_eq!(get("dummy", "migrations"), 0.0);
        assert!(get("refine", "max_avg_load") < get("dummy", "max_avg_load"));
        assert!(get("greedy", "max_avg_load") <= get("refine", "max_avg_load") + 1e-9);
        assert!(get("greedy", "migrations") > get("refine", "migrations"));
        assert!(get("refine", "predicted_step_s") < get("dummy", "predicted_step_s"));
        assert!(get("refine", "predicted_step_s") < get("greedy", "predicted_step_s"));
    }
    // A truncated dump: a clear error with the byte offset, no panic.
    let bytes = std::fs::read(dir.join("lbdata.0")).unwrap();
    let t = tmpdir("lbdump-bad");
    let cut = t.join("cut.0");
    std::fs::write(&cut, &bytes[..1000]).unwrap();
    let o = whatif(&["lb", "--format", "lbdump", cut.to_str().unwrap(), "-q"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("byte offset") && err.contains("cut.0"),
        "{err}"
    );
}
