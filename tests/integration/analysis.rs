//! `analysis`: the critical path sums to the makespan on every model and is the expected
//! chain on closed forms; diagnoses rank the known cause first with the known severity; the
//! printed commands reproduce each what-if.

use crate::cli::{stderr, tmpdir, whatif};
use crate::closed_forms::params;
use crate::us;
use analysis::{Diagnosis, Edge, Options, Scenario, critical_path};
use network_models::NetSpec;
use replay::ReplayConfig;
use sim_core::{Bandwidth, SimDuration};
use trace::{Block, PeId, Trace, TraceBuilder, TraceMeta};

fn cp_of(t: &Trace, net: &str, cfg: &ReplayConfig) -> analysis::CriticalPath {
    let spec: NetSpec = net.parse().unwrap();
    let cfg = ReplayConfig {
        timeline: true,
        ..cfg.clone()
    };
    let r = crate::run_with(t, net, &cfg);
    let cp = critical_path(t, &r, &spec, &cfg)
        .unwrap_or_else(|e| panic!("{} on {net}: {e}", t.meta.name));
    assert_eq!(
        cp.total_ps(),
        r.makespan.as_ps(),
        "{} on {net}",
        t.meta.name
    );
    // The segments tile [0, makespan]: each step's run and waits, in time order.
    let mut t_at = 0u64;
    for s in &cp.steps {
        let before = match &s.edge {
            Edge::Message {
                send_ps, arrive_ps, ..
            } => {
                assert_eq!(*send_ps, t_at, "message leaves where the path is");
                *arrive_ps
            }
            _ => t_at,
        };
        assert_eq!(before + s.idle_before_ps, s.start_ps, "{s:?}");
        t_at = s.start_ps + s.compute_ps + s.overhead_ps + s.sched_wait_ps;
        assert!(
            t_at <= s.end_ps,
            "the path leaves a block before its end: {s:?}"
        );
    }
    assert_eq!(t_at, r.makespan.as_ps(), "the path ends at the makespan");
    cp
}

#[test]
fn critical_path_sums_to_the_makespan_on_every_model() {
    let p = params(4, us(20), 4096);
    let traces = [
        scenarios::ring(8, &p).unwrap(),
        scenarios::halo(&[4, 4], true, &p).unwrap(),
        scenarios::pipeline(5, &p).unwrap(),
        scenarios::pingpong(&p).unwrap(),
    ];
    let nets = [
        "ideal",
        "latency:lat=3us",
        "alphabeta:lat=1us,bw=1GB/s,o_send=500ns,o_recv=700ns",
        "hops:topo=torus:4x4,lat=1us,hop=100ns,bw=2GB/s",
        "loggops:L=2us,o=1us,g=3us,G=1ns,O=0,S=65535",
        "contention:topo=torus:4x4,lat=1us,hop=100ns,bw=1GB/s,packet=1024",
        "contention:topo=mesh:4x4,lat=1us,hop=100ns,bw=1GB/s,packet=512,switching=saf,nic_bw=2GB/s",
        "flow:topo=torus:4x4,lat=1us,hop=100ns,bw=1GB/s",
    ];
    let costly = ReplayConfig {
        block_overhead: SimDuration::from_ns(300),
        local_msg_cost: SimDuration::from_ns(200),
        noise: "jitter:cv=0.2".parse().unwrap(),
        ..Default::default()
    };
    for t in &traces {
        for net in nets {
            cp_of(t, net, &ReplayConfig::default());
            cp_of(t, net, &costly);
        }
    }
    // Queueing shows on a contended model: 16 ranks exchanging 64 KiB on a 4x4 mesh.
    let t = scenarios::halo(&[4, 4], true, &params(2, us(1), 65536)).unwrap();
    let cp = cp_of(
        &t,
        "contention:topo=mesh:4x4,lat=1us,hop=100ns,bw=1GB/s,packet=1024",
        &ReplayConfig::default(),
    );
    assert!(cp.network.queueing_ps > 0, "{:?}", cp.network);
}

#[test]
fn critical_path_of_a_ring_is_k_computes_and_k_messages() {
    let (k, c, s) = (7u64, us(100), 65536u64);
    let t = scenarios::ring(16, &params(k as u32, c, s)).unwrap();
    let cp = cp_of(&t, "alphabeta:lat=1us,bw=10GB/s", &ReplayConfig::default());
    let ser = Bandwidth::parse("10GB/s").unwrap().transfer_time(s).as_ps();
    assert_eq!(cp.compute_ps, k * c.as_ps());
    assert_eq!(cp.network.latency_ps, k * us(1).as_ps());
    assert_eq!(cp.network.serialization_ps, k * ser);
    assert_eq!(cp.network.remote_messages, k);
    assert_eq!(
        (cp.network.queueing_ps, cp.sched_wait_ps, cp.idle_ps),
        (0, 0, 0)
    );
}

#[test]
fn critical_path_of_the_mk_pipeline_is_the_fill_then_the_last_stage() {
    // MK's pipeline: (D-1)(tau + W) + B*W. Two chains are critical (the first stage's B items
    // then the last item through the other stages; or the first item through the stages then
    // the last stage's B items): at a tie the walk prefers a block's dependency (the stage's
    // previous item) over its message, so the path is MK's reading: fill, then B items.
    for (d, b, w, s) in [(8u64, 20u64, 50u64, 4096u64), (3, 5, 10, 100), (1, 4, 7, 8)] {
        let t = scenarios::pipeline(d as u32, &params(b as u32, us(w), s)).unwrap();
        let cp = cp_of(&t, "alphabeta:lat=2us,bw=1GB/s", &ReplayConfig::default());
        let ser = Bandwidth::parse("1GB/s").unwrap().transfer_time(s).as_ps();
        let w = us(w).as_ps();
        assert_eq!(cp.compute_ps, (d - 1 + b) * w, "D={d} B={b}");
        assert_eq!(cp.sched_wait_ps, 0, "D={d} B={b}");
        let last_stage = cp.steps.last().unwrap().pe;
        let on_last = cp.steps.iter().filter(|s| s.pe == last_stage).count() as u64;
        assert_eq!(on_last, b, "the last stage's B items are on the path");
        assert_eq!(cp.network.latency_ps, (d - 1) * us(2).as_ps());
        assert_eq!(cp.network.serialization_ps, (d - 1) * ser);
        assert_eq!(cp.network.remote_messages, d - 1);
        assert_eq!(cp.idle_ps, 0);
    }
}

/// `overloaded` objects on PE 0 and one on each other PE, each one block of `w` of entry
/// `work`.
fn overloaded_pe(pes: u32, overloaded: u32, w: SimDuration) -> Trace {
    let mut b = TraceBuilder::new(TraceMeta {
        name: "overloaded-pe".into(),
        recorded_pes: pes,
        ..Default::default()
    });
    let e = b.entry("work");
    let mut objs = Vec::new();
    for i in 0..overloaded {
        objs.push(b.object(format!("hot{i}"), PeId(0)));
    }
    for p in 1..pes {
        objs.push(b.object(format!("cold{p}"), PeId(p)));
    }
    for o in objs {
        b.block(Block::new(o, e, w), &[], &[]);
    }
    b.finish().unwrap()
}

fn analyze(t: &Trace, net: &str, cfg: &ReplayConfig) -> analysis::Analysis {
    let spec: NetSpec = net.parse().unwrap();
    analysis::analyze(
        &Scenario {
            trace: t,
            net: &spec,
            cfg,
            seed: 1,
        },
        &Options::default(),
    )
    .unwrap()
}

#[test]
fn an_overloaded_pe_is_diagnosed_as_load_imbalance_first() {
    // 5 objects of w on PE 0, one on each of 3 others: 5w; greedy puts 8 objects two per PE
    // (2w, saving 3w); the hot entry 2x faster gives 2.5w.
    let w = us(100);
    let t = overloaded_pe(4, 5, w);
    let a = analyze(&t, "ideal", &ReplayConfig::default());
    assert_eq!(a.makespan_ps, 5 * w.as_ps());
    let f = &a.findings[0];
    assert_eq!(f.diagnosis, Diagnosis::LoadImbalance, "{:#?}", a.findings);
    assert_eq!(f.saved_ps, 3 * w.as_ps() as i64);
    assert_eq!(a.findings[1].diagnosis, Diagnosis::HotEntry);
    assert_eq!(a.findings[1].saved_ps, (5 * w.as_ps() / 2) as i64);
    // Every block is on the path's PE: the first four runs are waits for the fifth.
    assert_eq!(a.critical_path.sched_wait_ps, 4 * w.as_ps());
    let lim = a.limits.one_pe_per_object.as_ref().unwrap();
    assert_eq!(lim.makespan_ps, w.as_ps());
}

#[test]
fn a_latency_bound_ring_is_diagnosed_as_message_time_first() {
    // 5 trips of 10 us compute + 100 us latency: 550 us; free messages save 5 x 100 us.
    let t = scenarios::ring(8, &params(5, us(10), 8)).unwrap();
    let a = analyze(&t, "latency:lat=100us", &ReplayConfig::default());
    assert_eq!(a.makespan_ps, us(550).as_ps());
    let f = &a.findings[0];
    assert_eq!(
        f.diagnosis,
        Diagnosis::MessageTimeNotHidden,
        "{:#?}",
        a.findings
    );
    assert_eq!(f.saved_ps, us(500).as_ps() as i64);
    assert_eq!(a.critical_path.network.latency_ps, us(500).as_ps());
}

#[test]
fn a_fine_grained_pipeline_is_diagnosed_as_fine_grains_first() {
    // D stages, B items of W = 1 us, a per-block cost of o = 4 us: (D-1)(W+o) + B(W+o) with
    // the cost, (D-1)W + BW without (ideal network).
    let (d, b) = (4u64, 50u64);
    let t = scenarios::pipeline(d as u32, &params(b as u32, us(1), 8)).unwrap();
    let cfg = ReplayConfig {
        block_overhead: us(4),
        ..Default::default()
    };
    let a = analyze(&t, "ideal", &cfg);
    assert_eq!(a.makespan_ps, (d - 1 + b) * us(5).as_ps());
    let f = &a.findings[0];
    assert_eq!(f.diagnosis, Diagnosis::FineGrains, "{:#?}", a.findings);
    assert_eq!(f.saved_ps, ((d - 1 + b) * us(4).as_ps()) as i64);
}

/// Runs a printed reproduce command and returns its makespan in ps.
fn run_command(cmd: &str) -> u64 {
    let cmd = cmd.split("   (").next().unwrap();
    let words: Vec<&str> = cmd.split_whitespace().collect();
    assert_eq!(words[0], "whatif", "{cmd}");
    let mut args: Vec<&str> = words[1..].to_vec();
    args.extend_from_slice(&["--json", "-q"]);
    let o = whatif(&args);
    assert!(o.status.success(), "{cmd}: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    if words[1] == "lb" {
        let s = v[0]["makespan_s"].as_f64().unwrap();
        (s * 1e12).round() as u64
    } else {
        v["makespan_ps"].as_u64().unwrap()
    }
}

#[test]
fn analyze_prints_commands_that_reproduce_every_finding() {
    let dir = tmpdir("analyze-cmds");
    let t = dir.join("si.trace");
    let o = whatif(&[
        "emulate",
        "simple-imbalance",
        "--pes",
        "8",
        "--out",
        t.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = whatif(&[
        "analyze",
        t.to_str().unwrap(),
        "--net",
        "alphabeta:lat=20us,bw=1GB/s,o_send=1us",
        "--block-overhead",
        "2us",
        "--json",
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let fs = v["findings"].as_array().unwrap();
    assert!(fs.len() >= 5, "{v:#}");
    let kinds: Vec<&str> = fs
        .iter()
        .map(|f| f["diagnosis"].as_str().unwrap())
        .collect();
    for k in [
        "load_imbalance",
        "message_time_not_hidden",
        "hot_entry",
        "fine_grains",
    ] {
        assert!(kinds.contains(&k), "{k} missing from {kinds:?}");
    }
    for f in fs {
        let cmd = f["command"].as_str().unwrap();
        let want = f["what_if_makespan_ps"].as_u64().unwrap();
        let got = run_command(cmd);
        // lb prints seconds as a float: equal to within its precision.
        let tol = if cmd.starts_with("whatif lb") { 2 } else { 0 };
        assert!(got.abs_diff(want) <= tol, "{cmd}: {got} vs {want}");
    }
    // The human form prints the same ranking and the breakdown.
    let o = whatif(&["analyze", t.to_str().unwrap(), "-q"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("total (= makespan)"), "{out}");
    assert!(out.contains(" 1. "), "{out}");
    assert!(out.contains("reproduce: whatif"), "{out}");
    assert!(out.contains("PEs that stand out"), "{out}");
    // --out: the analysis and Projections' analyses as CSV.
    let out_dir = dir.join("an");
    let o = whatif(&[
        "analyze",
        t.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--bin",
        "1ms",
        "--no-resim",
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    for f in [
        "analysis.json",
        "critical_path.csv",
        "time_profile.csv",
        "usage.csv",
        "communication.csv",
        "grain_sizes.csv",
        "extrema.csv",
    ] {
        assert!(out_dir.join(f).exists(), "{f}");
    }
    let comm = std::fs::read_to_string(out_dir.join("communication.csv")).unwrap();
    assert!(
        comm.lines().nth(1).unwrap().starts_with("0,1000000000,"),
        "{comm}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn analyze_on_the_bigsim_jacobi_trace() {
    let Some(dir) = crate::shared_data("bigsim-jacobi2d/traceJ0") else {
        return;
    };
    let bg = dir.join("bgTrace");
    let o = whatif(&[
        "analyze",
        bg.to_str().unwrap(),
        "--format",
        "bgtrace",
        "--net",
        "alphabeta:lat=5us,bw=1GB/s",
        "--json",
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let cp = &v["critical_path"];
    assert_eq!(
        cp["makespan_ps"].as_u64(),
        v["makespan_ps"].as_u64(),
        "{cp:#}"
    );
    assert!(v["findings"].as_array().unwrap().len() >= 4);
    // The first finding's command reproduces it.
    let f = &v["findings"][0];
    assert_eq!(
        run_command(f["command"].as_str().unwrap()),
        f["what_if_makespan_ps"].as_u64().unwrap()
    );
}

/// The report of the BigSim trace shows the whole run (the first wave showed its first
/// 262 us of 2,623 us, the start-up phase only), with windows and the analyses' files.
#[test]
fn the_bigsim_jacobi_report_shows_the_whole_run() {
    let Some(data) = crate::shared_data("bigsim-jacobi2d/traceJ0") else {
        return;
    };
    let dir = tmpdir("j0-report");
    let out = dir.join("out");
    let o = whatif(&[
        "replay",
        data.join("bgTrace").to_str().unwrap(),
        "--format",
        "bgtrace",
        "--net",
        "alphabeta:lat=5us,bw=1GB/s",
        "--out",
        out.to_str().unwrap(),
        "--report",
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    for f in [
        "metrics.csv",
        "snapshots.csv",
        "clusters.csv",
        "comm_matrix.csv",
        "message_sizes.csv",
        "time_profile.csv",
        "usage.csv",
        "grain_sizes.csv",
    ] {
        assert!(out.join(f).exists(), "replay --out wrote no {f}");
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    crate::cli::check_whole_run(&html, "2.62 ms");
    // 24 entry methods: 9 named in the legend, the rest as "other".
    assert!(
        html.contains("other (15 entry methods)"),
        "legend: top 9 + other"
    );
    assert_eq!(
        html.matches("<h3>Window ").count(),
        3,
        "three zoomed windows"
    );
    crate::cli::render_and_check(&out.join("report.html"), &dir);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn projections_analyses_add_up_to_the_replay() {
    let t = crate::emulator::emulate(
        "simple-imbalance",
        &[],
        8,
        "latency:lat=1us",
        emulator::Timing::Model,
    );
    let cfg = ReplayConfig {
        timeline: true,
        ..Default::default()
    };
    let r = crate::run_with(&t, "latency:lat=5us", &cfg);
    let p = analysis::profile::profiles(&t, &r, 0).unwrap();
    assert_eq!(p.bin_ps, r.makespan.as_ps() / 100);
    let busy: u64 = r.busy_total().as_ps();
    assert_eq!(p.time_profile.iter().map(|x| x.busy_ps).sum::<u64>(), busy);
    assert_eq!(p.usage.iter().map(|x| x.busy_ps).sum::<u64>(), busy);
    for pe in 0..r.pes {
        let u: u64 = p
            .usage
            .iter()
            .filter(|x| x.pe == pe)
            .map(|x| x.busy_ps)
            .sum();
        assert_eq!(u, r.pe_busy_ps[pe as usize], "PE {pe}");
    }
    let remote: u64 = p.communication.iter().map(|c| c.remote_messages).sum();
    let local: u64 = p.communication.iter().map(|c| c.local_messages).sum();
    assert_eq!((remote, local), (r.messages.remote, r.messages.local));
    let grains: u64 = p.grains.iter().map(|g| g.blocks).sum();
    assert_eq!(grains, r.blocks);
    // Extrema: top min(ceil(P/10), 20) PEs; the busiest is the replay's busiest.
    let busiest = (0..r.pes)
        .max_by_key(|&q| (r.pe_busy_ps[q as usize], u32::MAX - q))
        .unwrap();
    let e = &p.extrema[0];
    assert_eq!(e.measure, "busy");
    assert_eq!(e.pes.len(), analysis::profile::outlier_count(r.pes));
    assert_eq!(e.pes[0], busiest);
    assert!(e.outlier_mean >= e.rest_mean);
    // A bin so small there would be too many: an error, not an allocation.
    assert!(analysis::profile::profiles(&t, &r, 1).is_err());
}

#[test]
fn the_overloaded_pe_is_the_busy_extreme() {
    let t = overloaded_pe(30, 5, us(100));
    let cfg = ReplayConfig {
        timeline: true,
        ..Default::default()
    };
    let r = crate::run_with(&t, "ideal", &cfg);
    let p = analysis::profile::profiles(&t, &r, 0).unwrap();
    let e = &p.extrema[0];
    assert_eq!(e.pes.len(), 3);
    assert_eq!(e.pes[0], 0);
    assert_eq!(e.values[0], us(500).as_ps());
    // The other two are cold PEs of 100 us; the rest (27 PEs) average 100 us too.
    assert_eq!(e.outlier_mean, us(700).as_ps() as f64 / 3.0);
    assert_eq!(e.rest_mean, us(100).as_ps() as f64);
}

#[test]
fn views_add_up_to_the_replay() {
    // A 3-D halo on a torus, so that channel utilisation is defined.
    let t = crate::emulator::emulate(
        "stencil3d",
        &[
            ("grid".to_string(), "16x16x16".to_string()),
            ("block".to_string(), "8x8x8".to_string()),
            ("iters".to_string(), "3".to_string()),
        ],
        8,
        "latency:lat=1us",
        emulator::Timing::Model,
    );
    let net = "hops:topo=torus:2x2x2,lat=2us,hop=100ns,bw=1GB/s";
    let spec: NetSpec = net.parse().unwrap();
    let cfg = ReplayConfig {
        timeline: true,
        ..Default::default()
    };
    let r = crate::run_with(&t, net, &cfg);
    let m = r.makespan.as_ps();
    let busy = r.busy_total().as_ps();
    // Metrics: utilisation x width x P over the bins is the busy time (to rounding).
    let rows = analysis::views::metrics(&t, &r, &spec, 0).unwrap();
    assert_eq!(rows.last().unwrap().bin_end_ps, m);
    let back: f64 = rows
        .iter()
        .map(|x| x.utilization * (x.bin_end_ps - x.bin_start_ps) as f64 * r.pes as f64)
        .sum();
    assert!(
        (back - busy as f64).abs() < 1e-6 * busy as f64,
        "{back} vs {busy}"
    );
    assert_eq!(rows.iter().map(|x| x.blocks).sum::<u64>(), r.blocks);
    assert_eq!(
        rows.iter().map(|x| x.remote_bytes).sum::<u64>(),
        r.messages.remote_bytes
    );
    for x in &rows {
        assert!(
            x.balance.is_none_or(|b| b > 0.0 && b <= 1.0 + 1e-12),
            "{x:?}"
        );
        assert!(x.channel_utilization.is_some(), "a torus has channels");
    }
    // Channel utilisation: bytes x hops / bw over (links x time), summed back over the bins.
    let topo = network_models::Topology::Torus {
        dims: vec![2, 2, 2],
    };
    let bw = Bandwidth::parse("1GB/s").unwrap();
    let mut link_ps = 0u128;
    let tl = r.timeline.as_ref().unwrap();
    let mut pe = vec![0u32; t.num_blocks()];
    for rec in tl {
        pe[rec.block as usize] = rec.pe;
    }
    let cons = t.consumers();
    let sends = t.all_sends();
    for b in 0..t.num_blocks() as u32 {
        for si in t.send_range(trace::BlockId(b)) {
            for &c in &cons.blocks[cons.start[si] as usize..cons.start[si + 1] as usize] {
                let (a, d) = (pe[b as usize] as u64, pe[c as usize] as u64);
                link_ps +=
                    topo.hops(a, d) as u128 * bw.transfer_time(sends[si].bytes).as_ps() as u128;
            }
        }
    }
    let chan: f64 = rows
        .iter()
        .map(|x| {
            x.channel_utilization.unwrap() * (x.bin_end_ps - x.bin_start_ps) as f64 * 8.0 * 6.0
        })
        .sum();
    assert!(link_ps > 0);
    assert!(
        (chan - link_ps as f64).abs() < 1e-6 * link_ps as f64,
        "{chan} vs {link_ps}"
    );
    // Snapshots: each slice's utilisation per PE, back to each PE's busy time.
    let snaps = analysis::views::snapshots(&r, 4).unwrap();
    assert_eq!(snaps.len(), 4);
    assert_eq!(snaps[0].len(), 8);
    // Matrix and sizes: every byte between PEs once.
    let mx = analysis::views::comm_matrix(&t, &r, 4).unwrap();
    assert_eq!((mx.group_size, mx.groups), (2, 4));
    assert_eq!(mx.bytes.iter().sum::<u64>(), r.messages.remote_bytes);
    assert_eq!(mx.messages.iter().sum::<u64>(), r.messages.remote);
    let sizes = analysis::views::message_sizes(&t, &r).unwrap();
    assert_eq!(
        sizes.iter().map(|s| s.messages).sum::<u64>(),
        r.messages.remote
    );
    for s in &sizes {
        assert!(s.bytes >= s.lo_bytes * s.messages && s.bytes < s.hi_bytes * s.messages);
    }
    // Raster of the whole run: its cells hold every busy picosecond.
    let runs: Vec<analysis::views::Run> = tl
        .iter()
        .map(|x| analysis::views::Run {
            pe: x.pe,
            class: 0,
            start_ps: x.start.as_ps(),
            end_ps: x.end.as_ps(),
        })
        .collect();
    let rows_of: Vec<u32> = (0..8).map(|p| p / 3).collect();
    let ras = analysis::views::raster(&runs, &rows_of, 3, 1, (0, m), 97).unwrap();
    assert_eq!(ras.busy_ps.iter().sum::<u64>(), busy);
    assert_eq!(ras.row_pes, [3, 3, 2]);
    for row in 0..3 {
        for c in 0..97 {
            assert!((0.0..=1.0).contains(&ras.fraction(row, c)));
        }
    }
    // Sizes that would not fit are errors, not allocations.
    assert!(analysis::views::raster(&runs, &rows_of, 1 << 20, 16, (0, m), 1 << 10).is_err());
}

#[test]
fn balance_and_clusters_of_an_overloaded_pe() {
    // PE 0 runs 5 x 100 us, 29 PEs 100 us each: in the first bin balance is mean/max.
    let t = overloaded_pe(30, 5, us(100));
    let cfg = ReplayConfig {
        timeline: true,
        ..Default::default()
    };
    let r = crate::run_with(&t, "ideal", &cfg);
    let spec: NetSpec = "ideal".parse().unwrap();
    // Bins of 100 us: in the first, every PE is busy (balance 1); after it, only PE 0.
    let rows = analysis::views::metrics(&t, &r, &spec, us(100).as_ps()).unwrap();
    assert_eq!(rows.len(), 5);
    assert_eq!(rows[0].balance, Some(1.0));
    assert_eq!(rows[0].utilization, 1.0);
    for x in &rows[1..] {
        assert_eq!(x.balance, Some(1.0 / 30.0));
        assert_eq!(x.utilization, 1.0 / 30.0);
    }
    assert_eq!(
        rows[0].channel_utilization, None,
        "no topology, no channels"
    );
    // Two behaviours, two clusters: PE 0 alone (its own exemplar), the 29 others.
    let c = analysis::cluster::cluster_pes(&t, &r, 15, 20).unwrap();
    assert_eq!(c.clusters.len(), 2);
    assert_eq!(c.clusters[0].size, 1);
    assert_eq!(c.clusters[0].exemplar, 0);
    assert_eq!(c.clusters[1].size, 29);
    assert_eq!(
        c.clusters[1].exemplar, 1,
        "all cold PEs are equal: the lowest"
    );
    assert!(
        c.clusters[1].outliers.is_empty(),
        "no cold PE is off its centroid"
    );
    assert_eq!(c.representatives(), [0, 1]);
    assert_eq!(c.assignment.iter().filter(|&&k| k == 1).count(), 29);
}
