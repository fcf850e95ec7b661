//! Repeated traces: a replay of the compact form equals the replay of its expansion, block for
//! block, on every network model and machine setting.

use network_models::NetSpec;
use replay::{CpuScale, Mapping, ReplayConfig, ReplayError, SchedPolicy};
use scenarios::SynthParams;
use sim_core::rng::below;
use sim_core::{QueueKind, Ratio, SeedTree};
use trace::{
    Block, BlockId, Carried, Destination, ObjectId, PeId, Repeated, Send, TraceBuilder, TraceMeta,
    Varying,
};

const NETS: [&str; 6] = [
    "ideal",
    "alphabeta:lat=1us,bw=10GB/s",
    "alphabeta:lat=2us,bw=3GB/s,o_send=300ns,o_recv=700ns",
    "hops:topo=torus:4x4x2,lat=1us,hop=50ns,bw=10GB/s",
    "loggops:L=3us,o=500ns,g=2us,G=1ns,O=1ps,S=1000",
    "contention:topo=mesh:4x4x2,lat=1us,bw=1GB/s,packet=1KiB,switching=saf,nic_bw=2GB/s",
];

/// Replays both forms and asserts identical reports (timeline included).
fn same(rep: &Repeated, net: &str, cfg: &ReplayConfig, what: &str) {
    let spec: NetSpec = net.parse().unwrap();
    let cfg = ReplayConfig {
        timeline: true,
        ..cfg.clone()
    };
    let flat = rep.expand();
    let a = replay::replay(rep, spec.build().as_mut(), &cfg);
    let b = replay::replay(&flat, spec.build().as_mut(), &cfg);
    match (a, b) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a, b, "{what} on {net}");
            assert_eq!(a.blocks, rep.num_blocks(), "{what} on {net}");
        }
        (a, b) => panic!("{what} on {net}: {a:?} vs {b:?}"),
    }
}

fn configs() -> Vec<(ReplayConfig, &'static str)> {
    vec![
        (ReplayConfig::default(), "as recorded"),
        (
            ReplayConfig {
                pes: Some(5),
                mapping: Mapping::Block,
                cpu_scale: CpuScale::Uniform(Ratio::parse("2/3").unwrap()),
                ..Default::default()
            },
            "5 PEs, block, cpu 2/3",
        ),
        (
            ReplayConfig {
                pes: Some(3),
                mapping: Mapping::RoundRobin,
                policy: SchedPolicy::Priority,
                queue: QueueKind::Binary,
                cpu_scale: CpuScale::PerPe(vec![
                    Ratio::ONE,
                    Ratio::parse("0.5").unwrap(),
                    Ratio::parse("3").unwrap(),
                ]),
                ..Default::default()
            },
            "3 PEs, round robin, priorities, per-PE speeds",
        ),
    ]
}

#[test]
fn generated_halos_and_rings_replay_like_their_expansion() {
    for (jitter, periodic) in [("0", false), ("0.3", true)] {
        let p = SynthParams {
            iters: 5,
            jitter: Ratio::parse(jitter).unwrap(),
            seed: 5,
            ..SynthParams::default()
        };
        let halo = scenarios::halo_repeated(&[4, 2, 3], periodic, &p).unwrap();
        let ring = scenarios::ring_repeated(9, &p).unwrap();
        for net in NETS {
            for (cfg, what) in configs() {
                same(&halo, net, &cfg, &format!("halo jitter {jitter}, {what}"));
                same(&ring, net, &cfg, &format!("ring jitter {jitter}, {what}"));
            }
        }
    }
}

/// A random repeated trace: objects on a few PEs, blocks with same-iteration dependencies,
/// messages within the iteration (point-to-point and broadcasts), carried dependencies with
/// lags 1-3, priorities, and per-iteration durations with anchored and fixed send offsets.
fn random_repeated(seed: u64) -> Repeated {
    let mut rng = SeedTree::new(seed).stream("repeated-test");
    let mut r = |n: u64| below(&mut rng, n);
    let objs = 2 + r(5) as u32;
    let pes = 1 + r(3) as u32;
    let mut b = TraceBuilder::new(TraceMeta {
        name: format!("random-{seed}"),
        recorded_pes: pes,
        ..Default::default()
    });
    let e = b.entry("e");
    let o: Vec<ObjectId> = (0..objs)
        .map(|i| b.object(format!("o{i}"), PeId(i % pes)))
        .collect();
    let n = 4 + r(12) as u32;
    let mut pending: Vec<(trace::MsgId, ObjectId)> = Vec::new();
    let mut sends_per_block = Vec::new();
    for i in 0..n {
        let obj = o[r(objs as u64) as usize];
        let mut blk = Block::new(obj, e, sim_core::SimDuration::from_ps(r(5) * 1000));
        if let Some(p) = pending.iter().position(|(_, to)| *to == obj)
            && r(3) > 0
        {
            blk.trigger = Some(pending.remove(p).0);
        }
        blk.priority = r(3) as i32 - 1;
        blk.iteration = Some(r(2) as u32);
        let deps: Vec<BlockId> = if i > 0 && r(2) == 0 {
            vec![BlockId(r(i as u64) as u32)]
        } else {
            vec![]
        };
        let mut sends = Vec::new();
        for _ in 0..r(3) {
            let m = b.new_msg();
            let dest = if r(5) == 0 {
                for &x in &o {
                    pending.push((m, x));
                }
                Destination::All
            } else {
                let to = o[r(objs as u64) as usize];
                pending.push((m, to));
                Destination::Object(to)
            };
            sends.push(Send {
                msg: m,
                offset: blk.duration,
                dest,
                bytes: r(3) * 3000,
                entry: e,
            });
        }
        sends_per_block.push(sends.len());
        b.block(blk, &deps, &sends);
    }
    let body = b.finish().unwrap();
    let reps = 2 + r(5) as u32;
    let mut carried = Vec::new();
    let mut carried_end = Vec::new();
    for _ in 0..n {
        for _ in 0..r(3) {
            carried.push(Carried {
                block: BlockId(r(n as u64) as u32),
                lag: 1 + r(3) as u32,
            });
        }
        carried_end.push(carried.len() as u32);
    }
    // Half the blocks vary; their sends (all at the block's end) stay anchored to it.
    let blocks: Vec<u32> = (0..n).filter(|i| i % 2 == 0).collect();
    let mut durations_ps = Vec::new();
    for k in 0..reps {
        for &i in &blocks {
            let d = body.block(BlockId(i)).duration.as_ps();
            durations_ps.push(if k == 0 { d } else { r(7) * 1000 });
        }
    }
    let end_anchored = vec![1u8; body.num_sends()];
    let max_label = body.num_sends() as u64;
    Repeated::new(
        body,
        reps,
        carried_end,
        carried,
        max_label + 1,
        2,
        Varying {
            blocks,
            durations_ps,
            end_anchored,
        },
    )
    .unwrap()
}

#[test]
fn random_repeated_traces_replay_like_their_expansion() {
    for seed in 0..40 {
        let rep = random_repeated(seed);
        for net in NETS {
            for (cfg, what) in configs() {
                if net.contains("topo") && cfg.pes.is_none_or(|p| p > 32) {
                    continue;
                }
                same(
                    &rep,
                    net,
                    &cfg,
                    &format!("random seed {seed}, {what} (reproduce: random_repeated({seed}))"),
                );
            }
        }
    }
}

/// A copy of `body` in which `edit` may change each block and its sends.
fn rebuild(body: &trace::Trace, mut edit: impl FnMut(&mut Block, &mut Vec<Send>)) -> trace::Trace {
    let mut b = TraceBuilder::new(body.meta.clone());
    for e in &body.entries {
        b.entry(e.name.clone());
    }
    for o in &body.objects {
        b.object(o.name.clone(), o.recorded_pe);
    }
    for id in body.block_ids() {
        let mut blk = body.block(id);
        let mut sends = body.sends(id).to_vec();
        edit(&mut blk, &mut sends);
        b.block(blk, body.deps(id), &sends);
    }
    b.finish().unwrap()
}

#[test]
fn a_rank_that_runs_ahead_widens_the_window_and_results_stay_exact() {
    // A chain: rank r sends to rank r+1 only, so rank 0 runs every iteration at once while
    // the last rank is still in the first: the live window must grow to all iterations.
    let p = SynthParams {
        iters: 37,
        ..SynthParams::default()
    };
    let chain = {
        let ring = scenarios::ring_repeated(6, &p).unwrap();
        // Drop the wrap-around message: rank 0's receive block waits instead for rank 0's
        // compute block of the iteration before (so no block is free after the first
        // iteration, and the window grows as the ranks drift apart, not all at once).
        let mut recv0 = None;
        let mut id = 0;
        let body = rebuild(ring.body(), |blk, sends| {
            sends.retain(|s| s.dest != Destination::Object(ObjectId(0)));
            if blk.trigger.is_some() && blk.object == ObjectId(0) {
                blk.trigger = None;
                recv0 = Some(id);
            }
            id += 1;
        });
        let recv0 = recv0.unwrap();
        let mut carried = Vec::new();
        let mut carried_end = Vec::new();
        for b in body.block_ids() {
            carried.extend(ring.carried(b).iter().copied());
            if b.0 == recv0 {
                carried.push(Carried {
                    block: BlockId(0),
                    lag: 1,
                });
            }
            carried_end.push(carried.len() as u32);
        }
        Repeated::new(
            body,
            p.iters,
            carried_end,
            carried,
            ring.msg_stride(),
            1,
            Varying::default(),
        )
        .unwrap()
    };
    for net in ["ideal", "latency:lat=150us", "loggops"] {
        same(&chain, net, &ReplayConfig::default(), "chain");
    }
}

#[test]
fn a_stuck_repeated_trace_names_its_blocks_with_global_ids() {
    // A ring whose receive of rank 0 waits for a message nobody sends.
    let p = SynthParams {
        iters: 3,
        ..SynthParams::default()
    };
    let ring = scenarios::ring_repeated(3, &p).unwrap();
    let mut id = 0;
    let body = rebuild(ring.body(), |blk, _| {
        if id == 3 {
            blk.trigger = Some(trace::MsgId(999));
        }
        id += 1;
    });
    let stuck = Repeated::new(
        body,
        3,
        ring.carried_ends().to_vec(),
        ring.all_carried().to_vec(),
        1000,
        1,
        Varying::default(),
    )
    .unwrap();
    let err =
        replay::replay(&stuck, &mut network_models::Ideal, &ReplayConfig::default()).unwrap_err();
    let ReplayError::Stuck(rep) = err else {
        panic!("expected a stuck report")
    };
    assert_eq!(rep.total, 18);
    // The lost message is in the body: every iteration's copy of the receive is a root.
    let roots: Vec<u32> = rep.roots.iter().map(|r| r.block).collect();
    assert_eq!(roots, [3, 9, 15], "{rep}");
    assert!(
        rep.to_string().contains("no block in the trace sends"),
        "{rep}"
    );
    let flat_err = replay::replay(
        &stuck.expand(),
        &mut network_models::Ideal,
        &ReplayConfig::default(),
    )
    .unwrap_err();
    let ReplayError::Stuck(flat) = flat_err else {
        panic!("expected a stuck report")
    };
    assert_eq!((flat.total, flat.completed), (rep.total, rep.completed));
    assert_eq!(flat.roots, rep.roots);
    assert_eq!(flat.others, rep.others);
}

/// Records every progress stage and the furthest `advance_to` in it.
#[derive(Default)]
struct Stages(Vec<(String, u64, &'static str, u64)>);

impl sim_core::Progress for Stages {
    fn stage(&mut self, name: &str, total: u64, unit: &'static str) {
        self.0.push((name.to_string(), total, unit, 0));
    }
    fn advance_to(&mut self, done: u64) {
        if let Some(s) = self.0.last_mut() {
            s.3 = s.3.max(done);
        }
    }
}

/// Progress stages give true totals in their own units: a 600,000-rank ring is "600000
/// ranks" (not twice that), planning 1.2 M blocks counts to at most 1.2 M, and each stage's
/// progress stays within its total.
#[test]
fn progress_stages_report_true_totals() {
    let ranks = 600_000u32;
    let p = SynthParams {
        iters: 1,
        ..SynthParams::default()
    };
    let mut gen_stages = Stages::default();
    let rep = scenarios::ring_repeated_with(ranks, &p, &mut gen_stages).unwrap();
    let names: Vec<&str> = gen_stages.0.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(names, ["generate: sends", "generate: receives"]);
    for (name, total, unit, done) in &gen_stages.0 {
        assert_eq!((*total, *unit), (ranks as u64, "ranks"), "{name}");
        assert!(*done > 0 && *done < *total, "{name}: reached {done}");
    }
    let t = rep.expand();
    let blocks = t.num_blocks() as u64;
    assert!(
        blocks > 1 << 20,
        "{blocks} blocks: enough for progress reports"
    );
    let mut plan_stages = Stages::default();
    let mut net = "ideal".parse::<NetSpec>().unwrap().build();
    let prepared =
        replay::Prepared::new_with(&t, net.as_mut(), &ReplayConfig::default(), &mut plan_stages)
            .unwrap();
    prepared.run_with(net.as_mut(), &mut plan_stages).unwrap();
    let names: Vec<&str> = plan_stages.0.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(names, ["plan: blocks", "plan: messages", "replay"]);
    for (name, total, unit, done) in &plan_stages.0 {
        assert_eq!((*total, *unit), (blocks, "blocks"), "{name}");
        assert!(
            *done > 0 && *done <= *total,
            "{name}: reached {done} of {total}"
        );
    }
}

/// The critical path without a timeline (bindings in a first replay, the path's runs in a
/// second: `analysis::streamed`) equals the walk of the expansion's timeline, step by step and
/// cause by cause, and so does its first replay's report; what the stream carried is the
/// expansion's timeline.
fn same_path(rep: &Repeated, net: &str, cfg: &ReplayConfig, what: &str) -> bool {
    let spec: NetSpec = net.parse().unwrap();
    let flat = rep.expand();
    let with_tl = ReplayConfig {
        timeline: true,
        ..cfg.clone()
    };
    let Ok(base) = replay::replay(&flat, spec.build().as_mut(), &with_tl) else {
        return false;
    };
    let want = analysis::critical_path(&flat, &base, &spec, &with_tl).unwrap();
    let mut seen: Vec<replay::TimelineRecord> = Vec::new();
    let (got, again) = analysis::streamed::replay_and_walk(
        analysis::Blocks::Repeated(rep),
        &spec,
        cfg,
        &mut sim_core::NoProgress,
        &mut seen,
        |_, _, _| Ok(Vec::<replay::TimelineRecord>::new()),
    )
    .unwrap_or_else(|e| panic!("{what} on {net}: {e}"));
    assert_eq!(got.critical_path, want, "{what} on {net}");
    assert_eq!(Some(&seen), base.timeline.as_ref(), "{what} on {net}");
    assert_eq!(again, seen, "{what} on {net}: the second replay's stream");
    assert_eq!(got.report.makespan, base.makespan, "{what} on {net}");
    assert_eq!(got.report.pe_busy_ps, base.pe_busy_ps, "{what} on {net}");
    assert!(got.report.timeline.is_none() && got.report.bindings.is_none());
    !want.steps.is_empty()
}

#[test]
fn the_critical_path_without_a_timeline_equals_the_walk_of_the_expansion() {
    let p = SynthParams {
        iters: 5,
        jitter: Ratio::parse("0.3").unwrap(),
        seed: 5,
        ..SynthParams::default()
    };
    let halo = scenarios::halo_repeated(&[4, 2, 3], true, &p).unwrap();
    let ring = scenarios::ring_repeated(9, &p).unwrap();
    let mut steps = 0;
    for net in NETS {
        for (cfg, what) in configs() {
            assert!(same_path(&halo, net, &cfg, &format!("halo, {what}")));
            assert!(same_path(&ring, net, &cfg, &format!("ring, {what}")));
        }
    }
    for seed in 0..40 {
        let rep = random_repeated(seed);
        for net in NETS {
            for (cfg, what) in configs() {
                if net.contains("topo") && cfg.pes.is_none_or(|p| p > 32) {
                    continue;
                }
                steps += same_path(
                    &rep,
                    net,
                    &cfg,
                    &format!("random seed {seed}, {what} (reproduce: random_repeated({seed}))"),
                ) as u32;
            }
        }
    }
    assert!(steps > 500, "{steps} random cases compared");
}

/// The whole analysis of a repeated trace without a timeline or an expansion (two replays,
/// views fed one run at a time, re-simulations on the compact trace) equals the analysis of
/// its expansion with a timeline: critical path, every finding and its re-simulated makespan,
/// the limits, and every view (profiles, extrema, metrics, snapshots, clusters, matrix, sizes,
/// overview).
#[test]
fn the_analysis_of_a_repeated_trace_equals_that_of_its_expansion() {
    use analysis::allviews::{RunTotals, ViewOptions, ViewsSink};
    use analysis::feed::{Feed, PeOf};
    let p = SynthParams {
        iters: 4,
        jitter: Ratio::parse("0.3").unwrap(),
        seed: 9,
        ..SynthParams::default()
    };
    let opts = ViewOptions {
        bin_ps: 0,
        clusters: 4,
        representatives: 6,
        snapshots: 5,
        matrix_groups: 4,
    };
    let traces = [
        (
            "halo",
            scenarios::halo_repeated(&[3, 2, 2], true, &p).unwrap(),
        ),
        ("ring", scenarios::ring_repeated(7, &p).unwrap()),
        ("random 3", random_repeated(3)),
        ("random 11", random_repeated(11)),
    ];
    let mut findings = 0;
    for (name, rep) in &traces {
        for net in [NETS[2], NETS[5]] {
            let spec: NetSpec = net.parse().unwrap();
            let cfg = ReplayConfig {
                pes: Some(rep.body().meta.recorded_pes.min(32)),
                ..ReplayConfig::default()
            };
            let what = format!("{name} on {net}");
            let flat = rep.expand();
            let with_tl = ReplayConfig {
                timeline: true,
                ..cfg.clone()
            };
            let base = replay::replay(&flat, spec.build().as_mut(), &with_tl).unwrap();
            let sc = analysis::Scenario {
                trace: analysis::Blocks::Flat(&flat),
                net: &spec,
                cfg: &with_tl,
                seed: 1,
            };
            let want = analysis::analyze_report(&sc, &base, &analysis::Options::default()).unwrap();
            let want_views = analysis::allviews::of_timeline(&flat, &base, &spec, opts).unwrap();

            let g = analysis::Blocks::Repeated(rep);
            let map = cfg.mapping.resolve(rep.body(), cfg.pes.unwrap()).unwrap();
            let feed = Feed::new(g, PeOf::Object(map));
            let mut busy = RunTotals::new(&feed, None).unwrap();
            let (walked, sink) = analysis::streamed::replay_and_walk(
                g,
                &spec,
                &cfg,
                &mut sim_core::NoProgress,
                &mut busy,
                |r, b, _| ViewsSink::new(&feed, r.pes, r.makespan.as_ps(), &b.totals, &spec, opts),
            )
            .unwrap();
            let views = sink.finish(&walked.report.pe_busy_ps).unwrap();
            assert_eq!(views, want_views, "{what}: views");
            let sc = analysis::Scenario {
                trace: g,
                net: &spec,
                cfg: &cfg,
                seed: 1,
            };
            let got = analysis::diagnose(
                &sc,
                &walked.report,
                walked.critical_path,
                &analysis::Options::default(),
            )
            .unwrap();
            assert_eq!(
                got.critical_path, want.critical_path,
                "{what}: critical path"
            );
            assert_eq!(got.limits, want.limits, "{what}: limits");
            assert_eq!(got.skipped, want.skipped, "{what}: skipped");
            assert_eq!(got.findings.len(), want.findings.len(), "{what}: findings");
            for (a, b) in got.findings.iter().zip(&want.findings) {
                assert_eq!(
                    (a.diagnosis, &a.what_if, &a.evidence),
                    (b.diagnosis, &b.what_if, &b.evidence),
                    "{what}"
                );
                assert_eq!(
                    a.what_if_makespan_ps, b.what_if_makespan_ps,
                    "{what}: {:?}",
                    a.what_if
                );
                findings += 1;
            }
            assert_eq!(
                (got.makespan_ps, got.busy_ps, got.max_pe_busy_ps),
                (want.makespan_ps, want.busy_ps, want.max_pe_busy_ps),
                "{what}"
            );
        }
    }
    assert!(findings >= 10, "{findings} findings compared");
}

/// A sped-up entry or object as a replay setting (`ReplayConfig::block_scale`, no copy)
/// replays exactly like the trace sped up by `analysis::transform`, repeated and flat.
#[test]
fn block_scales_replay_like_the_sped_up_trace() {
    use analysis::transform::{Speedup, Target, block_scale, speed_up, speed_up_repeated};
    let mut compared = 0;
    for seed in 0..40 {
        let rep = random_repeated(seed);
        let flat = rep.expand();
        for (target, factor) in [
            (Target::Entry("e".into()), "2"),
            (Target::Object(0), "3/2"),
            (Target::Object(1), "1/3"),
        ] {
            let s = Speedup {
                target,
                factor: Ratio::parse(factor).unwrap(),
            };
            let scale = block_scale(rep.body(), &s).unwrap();
            let sped = speed_up_repeated(&rep, &s).unwrap().0;
            let mut sped_flat = flat.clone();
            speed_up(&mut sped_flat, &s).unwrap();
            for net in NETS {
                for (cfg, what) in configs() {
                    if net.contains("topo") && cfg.pes.is_none_or(|p| p > 32) {
                        continue;
                    }
                    let spec: NetSpec = net.parse().unwrap();
                    let plain = ReplayConfig {
                        timeline: true,
                        ..cfg.clone()
                    };
                    let scaled = ReplayConfig {
                        block_scale: Some(scale.clone()),
                        ..plain.clone()
                    };
                    let why = format!("seed {seed}, {s:?}, {what} on {net}");
                    let a = replay::replay(&rep, spec.build().as_mut(), &scaled);
                    let b = replay::replay(&sped, spec.build().as_mut(), &plain);
                    match (a, b) {
                        (Ok(a), Ok(b)) => {
                            assert_eq!(a, b, "repeated: {why}");
                            compared += 1;
                        }
                        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{why}"),
                        (a, b) => panic!("{why}: {:?} vs {:?}", a.err(), b.err()),
                    }
                    let a = replay::replay(&flat, spec.build().as_mut(), &scaled);
                    let b = replay::replay(&sped_flat, spec.build().as_mut(), &plain);
                    match (a, b) {
                        (Ok(a), Ok(b)) => assert_eq!(a, b, "flat: {why}"),
                        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{why}"),
                        (a, b) => panic!("{why}: {:?} vs {:?}", a.err(), b.err()),
                    }
                }
            }
        }
    }
    assert!(compared > 1000, "only {compared} replays compared");
}
