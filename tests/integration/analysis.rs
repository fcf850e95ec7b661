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
        t_at = s.start_ps + s.compute_ps + s.overhead_ps;
        assert!(s.queued_ps <= s.compute_ps + s.overhead_ps, "{s:?}");
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
        (cp.network.queueing_ps, cp.queued_ps, cp.idle_ps),
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
        assert_eq!(cp.queued_ps, 0, "D={d} B={b}");
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
            trace: analysis::Blocks::Flat(t),
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
    // Every block is on the path's PE, and all of the path is their compute; the fifth
    // waited behind the first four (ready at 0, queued for their whole runs).
    assert_eq!(a.critical_path.compute_ps, 5 * w.as_ps());
    assert_eq!(a.critical_path.queued_ps, 4 * w.as_ps());
    assert_eq!(a.critical_path.by_entry[0].compute_ps, 5 * w.as_ps());
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

/// `whatif emulate simple-imbalance EMULATE --out DIR/si.trace`, then `whatif analyze` on it
/// with ANALYZE and `--json`: the trace's path and the analysis.
fn simple_imbalance_analysis(
    dir: &std::path::Path,
    emulate: &[&str],
    analyze: &[&str],
) -> (std::path::PathBuf, serde_json::Value) {
    let t = dir.join("si.trace");
    let mut args = vec!["emulate", "simple-imbalance"];
    args.extend_from_slice(emulate);
    args.extend_from_slice(&["--out", t.to_str().unwrap(), "-q"]);
    let o = whatif(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut args = vec!["analyze", t.to_str().unwrap()];
    args.extend_from_slice(analyze);
    args.extend_from_slice(&["--json", "-q"]);
    let o = whatif(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = serde_json::from_slice(&o.stdout).unwrap();
    (t, v)
}

#[test]
fn analyze_prints_commands_that_reproduce_every_finding() {
    let dir = tmpdir("analyze-cmds");
    let (t, v) = simple_imbalance_analysis(
        &dir,
        &["--pes", "8"],
        &[
            "--net",
            "alphabeta:lat=20us,bw=1GB/s,o_send=1us",
            "--block-overhead",
            "2us",
        ],
    );
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
        html.matches("<h3 id=\"window-").count(),
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

// ---------------------------------------------------------------------------------------------
// An independent oracle for the critical path's causes (issue 31).

/// SplitMix64: a small seeded stream for random traces.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random message-driven trace: 1-4 PEs, a few more objects, 10-60 blocks of 1-50 us in
/// three entries; a block consumes a pending message (then it runs on its destination) or
/// none, may depend on an earlier block (with `deps_on_triggered` false, only a block no
/// message triggers), and sends 0-2 messages of 0-64 KiB at offsets inside it.
fn random_trace_with(seed: u64, deps_on_triggered: bool) -> Trace {
    use trace::{Destination, MsgId, Send};
    let mut r = Mix(seed);
    let pes = 1 + r.below(4) as u32;
    let n_objects = pes + r.below(6) as u32;
    let mut b = TraceBuilder::new(TraceMeta {
        name: format!("random{seed}"),
        recorded_pes: pes,
        ..TraceMeta::default()
    });
    let entries = [b.entry("a"), b.entry("b"), b.entry("c")];
    let objects: Vec<_> = (0..n_objects)
        .map(|o| b.object(format!("o{o}"), PeId(o % pes)))
        .collect();
    let mut pending: Vec<Send> = Vec::new();
    let mut label = 0u64;
    let n = 10 + r.below(50);
    for i in 0..n {
        let trigger = (!pending.is_empty() && r.below(10) < 7)
            .then(|| pending.swap_remove(r.below(pending.len() as u64) as usize));
        let (object, entry) = match &trigger {
            Some(s) => match s.dest {
                Destination::Object(o) => (o, s.entry),
                _ => unreachable!(),
            },
            None => (
                objects[r.below(n_objects as u64) as usize],
                entries[r.below(3) as usize],
            ),
        };
        let dur = us(1 + r.below(50));
        let mut blk = Block::new(object, entry, dur);
        blk.trigger = trigger.as_ref().map(|s| s.msg);
        let dep = i > 0 && r.below(10) < 3;
        let deps: Vec<trace::BlockId> = if dep && (deps_on_triggered || trigger.is_none()) {
            vec![trace::BlockId(r.below(i) as u32)]
        } else {
            Vec::new()
        };
        let sends: Vec<Send> = (0..r.below(3))
            .map(|_| {
                label += 1;
                Send {
                    msg: MsgId(label),
                    offset: SimDuration::from_ps(r.below(dur.as_ps() + 1)),
                    dest: Destination::Object(objects[r.below(n_objects as u64) as usize]),
                    bytes: r.below(65537),
                    entry: entries[r.below(3) as usize],
                }
            })
            .collect();
        pending.extend(sends.iter().cloned());
        b.block(blk, &deps, &sends);
    }
    b.finish().unwrap()
}

fn random_trace(seed: u64) -> Trace {
    random_trace_with(seed, true)
}

/// How the oracle learns a message's arrival: from the models' closed forms (stateless
/// models: the sender's start, the offset and the wire time of the bytes), or, for models
/// whose message times depend on the other messages, as the time the receiving block was
/// released (on traces where a triggered block waits for nothing else, that is its
/// message's arrival: the network's output is the oracle's input, the schedule, the path and
/// the split are its own).
enum Arrivals<'a> {
    ClosedForm(&'a dyn Fn(u64) -> u64),
    Released,
}

/// A lone message's parts from the model's closed form, for `(src PE, dst PE, bytes)`: the
/// sender's CPU before it leaves, its zero-byte wire time, and what its bytes add.
type Lone<'a> = &'a dyn Fn(u32, u32, u64) -> (u64, u64, u64);

/// The longest path through the replayed run, computed forward (not from the replay's
/// bindings): a block starts at the latest of its PE's previous block's end, its
/// dependencies' ends and its trigger's arrival (0 wire on one PE). Ties go to a condition
/// over the PE (a dependency, then the message), as the walk's documented order. Each part
/// is split by the documented definitions: a block's run is compute up to its duration and
/// CPU overhead beyond; a message's time from its send point (the sender's start plus the
/// offset, within the sender's run) to its arrival is, in this order, the sender's CPU cost
/// of a lone message, the lone zero-byte wire time, what the bytes add alone, and queueing
/// (the rest); a local message's is all CPU overhead.
fn oracle(t: &Trace, r: &replay::ReplayReport, arrivals: Arrivals<'_>, lone: Lone<'_>) -> Oracle {
    let tl = r.timeline.as_ref().unwrap();
    let n = t.num_blocks();
    let mut at = vec![usize::MAX; n];
    for (i, rec) in tl.iter().enumerate() {
        at[rec.block as usize] = i;
    }
    let cols = t.columns();
    let consumers = t.consumers();
    let send_block = t.send_blocks();
    let sends = t.all_sends();
    #[derive(Clone, Copy)]
    enum From {
        Start,
        Pe(usize),
        Dep(usize),
        Msg(usize, usize),
    }
    let mut start = vec![0u64; n];
    let mut end = vec![0u64; n];
    let mut arrive = vec![0u64; n];
    let mut from = vec![From::Start; n];
    let mut last_on_pe: std::collections::HashMap<u32, usize> = Default::default();
    for rec in tl {
        let b = rec.block as usize;
        let run = rec.end.as_ps() - rec.start.as_ps();
        let mut cond = (0u64, From::Start);
        if consumers.trigger_send[b] != u32::MAX {
            let si = consumers.trigger_send[b] as usize;
            let s = send_block[si] as usize;
            let remote = tl[at[s]].pe != rec.pe;
            arrive[b] = match &arrivals {
                Arrivals::ClosedForm(wire) => {
                    let w = if remote { wire(sends[si].bytes) } else { 0 };
                    start[s] + sends[si].offset.as_ps() + w
                }
                Arrivals::Released => {
                    assert!(
                        t.deps(trace::BlockId(b as u32)).is_empty(),
                        "block {b}: a triggered block with dependencies hides its arrival"
                    );
                    rec.released.as_ps()
                }
            };
            cond = (arrive[b], From::Msg(s, si));
        }
        for d in t.deps(trace::BlockId(b as u32)) {
            let d = d.0 as usize;
            if end[d] >= cond.0 {
                cond = (end[d], From::Dep(d));
            }
        }
        let (s, f) = match last_on_pe.insert(rec.pe, b) {
            Some(p) if end[p] > cond.0 => (end[p], From::Pe(p)),
            _ => cond,
        };
        assert_eq!(
            s,
            rec.start.as_ps(),
            "block {b}: the oracle gives its start"
        );
        (start[b], end[b], from[b]) = (s, s + run, f);
    }
    // Walk the argmax back from the last block to end (the latest in timeline order).
    let mut cur = tl
        .iter()
        .enumerate()
        .max_by_key(|(i, rec)| (rec.end, *i))
        .map(|(_, rec)| rec.block as usize)
        .unwrap();
    let mut o = Oracle::default();
    let mut part_end = end[cur];
    loop {
        o.path.push(cur as u32);
        let e = t.entries[cols.entry[cur] as usize].name.clone();
        let own = part_end - start[cur];
        let compute = own.min(cols.duration_ps[cur]);
        *o.compute_by_entry.entry(e).or_default() += compute;
        o.overhead += own - compute;
        match from[cur] {
            From::Start => {
                o.idle = start[cur];
                break;
            }
            From::Pe(p) | From::Dep(p) => {
                part_end = end[p];
                cur = p;
            }
            From::Msg(s, si) => {
                let send = (start[s] + sends[si].offset.as_ps())
                    .min(end[s])
                    .min(arrive[cur]);
                let mut left = arrive[cur] - send;
                let mut take = |x: u64| {
                    let y = x.min(left);
                    left -= y;
                    y
                };
                let (src, dst) = (tl[at[s]].pe, tl[at[cur]].pe);
                if src != dst {
                    let (oh, lat, ser) = lone(src, dst, sends[si].bytes);
                    o.net[0] += take(oh);
                    o.net[1] += take(lat);
                    o.net[2] += take(ser);
                    o.net[3] += take(u64::MAX);
                    o.remote += 1;
                } else {
                    o.net[0] += take(u64::MAX);
                }
                part_end = send;
                cur = s;
            }
        }
    }
    o.path.reverse();
    o
}

#[derive(Default, Debug)]
struct Oracle {
    compute_by_entry: std::collections::BTreeMap<String, u64>,
    overhead: u64,
    /// Message time: CPU overhead, latency, serialisation, queueing.
    net: [u64; 4],
    remote: u64,
    idle: u64,
    path: Vec<u32>,
}

/// Checks the walk's causes against the oracle's, cause by cause; returns the path's
/// queueing (to see that the traces exercise it).
fn agrees(t: &Trace, net: &str, arrivals: Arrivals<'_>, lone: Lone<'_>, ctx: &str) -> (u64, u64) {
    let cfg = ReplayConfig {
        timeline: true,
        ..ReplayConfig::default()
    };
    let r = crate::run_with(t, net, &cfg);
    let cp = cp_of(t, net, &cfg);
    let o = oracle(t, &r, arrivals, lone);
    let walk_path: Vec<u32> = cp.steps.iter().map(|s| s.block).collect();
    assert_eq!(walk_path, o.path, "{ctx}");
    let by_entry: std::collections::BTreeMap<String, u64> = cp
        .by_entry
        .iter()
        .filter(|e| e.compute_ps > 0)
        .map(|e| (e.name.clone(), e.compute_ps))
        .collect();
    let oracle_by_entry: std::collections::BTreeMap<String, u64> = o
        .compute_by_entry
        .iter()
        .filter(|(_, v)| **v > 0)
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    assert_eq!(by_entry, oracle_by_entry, "{ctx}: compute per entry");
    assert_eq!(cp.overhead_ps, o.overhead, "{ctx}: CPU overhead");
    let n = &cp.network;
    assert_eq!(
        [
            n.overhead_ps,
            n.latency_ps,
            n.serialization_ps,
            n.queueing_ps
        ],
        o.net,
        "{ctx}: network overhead, latency, serialisation, queueing"
    );
    assert_eq!(n.remote_messages, o.remote, "{ctx}: remote messages");
    assert_eq!(cp.idle_ps, o.idle, "{ctx}: idle");
    let behind = cp
        .steps
        .iter()
        .filter(|s| matches!(s.edge, Edge::Pe { .. }))
        .count() as u64;
    (behind, n.queueing_ps)
}

/// The walk's causes agree with the oracle's on random traces, cause by cause: compute per
/// entry (a block the path waited behind on its PE counts in full), CPU overhead, each part
/// of message time, remote messages, idle, and the path's blocks.
#[test]
fn critical_path_causes_agree_with_a_brute_force_oracle_on_random_traces() {
    let ab_bw = Bandwidth::parse("1GB/s").unwrap();
    type Wire = Box<dyn Fn(u64) -> u64>;
    let models: [(&str, Wire); 3] = [
        ("ideal", Box::new(|_| 0)),
        ("latency:lat=7us", Box::new(|_| us(7).as_ps())),
        (
            "alphabeta:lat=3us,bw=1GB/s",
            Box::new(move |bytes| us(3).as_ps() + ab_bw.transfer_time(bytes).as_ps()),
        ),
    ];
    let mut waited_behind = 0u64;
    for seed in 0..40 {
        let t = random_trace(seed);
        for (net, wire) in &models {
            let lone = |_: u32, _: u32, bytes: u64| (0, wire(0), wire(bytes) - wire(0));
            let (behind, queueing) = agrees(
                &t,
                net,
                Arrivals::ClosedForm(wire.as_ref()),
                &lone,
                &format!("seed {seed} on {net}"),
            );
            assert_eq!(queueing, 0, "seed {seed} on {net}: a lone message each");
            waited_behind += behind;
        }
    }
    assert!(
        waited_behind > 50,
        "the traces exercise waits for a busy PE: {waited_behind}"
    );
}

/// The same on the models whose message times depend on the other messages (links and NICs
/// shared, LogGOPS's gaps and CPU overheads) and on a topology: the lone-message parts come
/// from each model's documented closed form (1 GB/s: 1000 ps a byte), and the traces must
/// make messages queue.
#[test]
fn critical_path_causes_agree_with_the_oracle_on_contended_models() {
    let topo: network_models::Topology = "torus:2x2".parse().unwrap();
    let (lat, hop) = (us(3).as_ps(), us(1).as_ps());
    let wire = |a: u32, b: u32, bytes: u64| {
        lat + topo.hops(a as u64, b as u64) as u64 * hop + 1000 * bytes
    };
    let on_links =
        |a: u32, b: u32, bytes: u64| (0, wire(a, b, 0), wire(a, b, bytes) - wire(a, b, 0));
    // LogGOPS: the sender's CPU is o (O = 0), the wire L whatever the size.
    let loggops = |_: u32, _: u32, _: u64| (us(1).as_ps(), us(3).as_ps(), 0);
    let models: [(&str, Lone<'_>); 4] = [
        ("hops:topo=torus:2x2,lat=3us,hop=1us,bw=1GB/s", &on_links),
        (
            "contention:topo=torus:2x2,lat=3us,hop=1us,bw=1GB/s,packet=4KiB",
            &on_links,
        ),
        ("flow:topo=torus:2x2,lat=3us,hop=1us,bw=1GB/s", &on_links),
        ("loggops:L=3us,o=1us,g=2us,G=0,O=0,S=65535", &loggops),
    ];
    let mut queued = [0u64; 4];
    let mut behind = 0;
    for seed in 0..40 {
        let t = random_trace_with(seed, false);
        for (i, (net, lone)) in models.iter().enumerate() {
            let (b, q) = agrees(
                &t,
                net,
                Arrivals::Released,
                *lone,
                &format!("seed {seed} on {net}"),
            );
            behind += b;
            queued[i] += q;
        }
    }
    assert_eq!(queued[0], 0, "hops: no message ever queues");
    for (i, (net, _)) in models.iter().enumerate().skip(1) {
        assert!(queued[i] > 0, "{net}: the traces make path messages queue");
    }
    assert!(behind > 50, "waits for a busy PE: {behind}");
}

/// Issue 31's case: SimpleImbalance (100 PEs, 20 objects per PE, 20 us latency). The PEs are
/// busy all along and every object is ready early, so the path is a busy PE's run: compute,
/// not waiting; the hot entry comes first and its 2x speed-up is re-simulated.
#[test]
fn simple_imbalance_critical_path_is_compute_and_its_hot_entry_is_found() {
    let dir = tmpdir("si-analyze");
    let (_, a) = simple_imbalance_analysis(
        &dir,
        &["--pes", "100", "--set", "objects_per_pe=20"],
        &["--net", "latency:lat=20us"],
    );
    let cp = &a["critical_path"];
    let makespan = a["makespan_ps"].as_u64().unwrap();
    let compute = cp["compute_ps"].as_u64().unwrap();
    assert!(
        compute as f64 >= 0.9 * makespan as f64,
        "compute {compute} of {makespan}"
    );
    // A block the path's next block waited behind on its PE is on the path for its whole run.
    let steps = cp["steps"].as_array().unwrap();
    let mut behind = 0;
    for w in steps.windows(2) {
        if w[1]["edge"]["kind"] == "pe" {
            let run = w[0]["end_ps"].as_u64().unwrap() - w[0]["start_ps"].as_u64().unwrap();
            assert_eq!(w[0]["compute_ps"].as_u64().unwrap(), run, "{}", w[0]);
            behind += 1;
        }
    }
    assert!(behind > 100, "{behind} waits for a busy PE on the path");
    let first = &a["findings"][0];
    assert_eq!(first["diagnosis"], "hot_entry", "{first}");
    assert_eq!(first["what_if"]["target"]["name"], "next");
    // Measured: --speedup entry:next=2 cuts 401.1 ms to 241.1 ms.
    assert!(first["saved_ps"].as_i64().unwrap() as f64 >= 0.35 * makespan as f64);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The busy time per bin summed and maximised over the PEs without a PE x bin table (what
/// Rover's balance needs at a million PEs) equals the one read from the full table, on random
/// traces and bin widths that do and do not divide the run.
#[test]
fn binned_busy_sum_and_max_match_the_pe_by_bin_table() {
    for seed in 0..20 {
        let t = random_trace(seed);
        let cfg = ReplayConfig {
            timeline: true,
            ..ReplayConfig::default()
        };
        let r = crate::run_with(&t, "latency:lat=3us", &cfg);
        let m = r.makespan.as_ps().max(1);
        for bins in [1usize, 7, 100] {
            let bin = m.div_ceil(bins as u64).max(1);
            let bins = m.div_ceil(bin) as usize;
            let table = analysis::views::pe_busy_by_bin(&r, bin, bins).unwrap();
            let (sum, max) = analysis::views::bin_busy_sum_max(&r, bin, bins).unwrap();
            for k in 0..bins {
                let col: Vec<u64> = (0..r.pes as usize).map(|p| table[p * bins + k]).collect();
                assert_eq!(sum[k], col.iter().sum::<u64>(), "seed {seed}, bin {k}");
                assert_eq!(max[k], *col.iter().max().unwrap(), "seed {seed}, bin {k}");
            }
            assert_eq!(
                sum.iter().sum::<u64>(),
                r.busy_total().as_ps(),
                "seed {seed}"
            );
        }
    }
    let t = random_trace(1);
    let r = crate::run_with(
        &t,
        "ideal",
        &ReplayConfig {
            timeline: true,
            ..ReplayConfig::default()
        },
    );
    let e = analysis::views::bin_busy_sum_max(&r, 1, analysis::views::MAX_BINS + 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("choose a larger bin"), "{e}");
}

/// The re-simulations give the same findings however many run at once (they are
/// independent and each deterministic), on a flat trace and on a repeated one.
#[test]
fn analyses_are_the_same_whatever_the_number_of_re_simulations_at_once() {
    // Flat: many what-ifs (imbalance, message time, hot entry, object, overheads).
    let t = overloaded_pe(6, 4, us(50));
    let spec: NetSpec = "loggops:L=5us,o=2us,g=1us,G=1ns".parse().unwrap();
    let cfg = ReplayConfig {
        block_overhead: us(1),
        ..Default::default()
    };
    let run = |jobs: usize| {
        let a = analysis::analyze(
            &Scenario {
                trace: analysis::Blocks::Flat(&t),
                net: &spec,
                cfg: &cfg,
                seed: 1,
            },
            &Options {
                jobs,
                ..Default::default()
            },
        )
        .unwrap();
        serde_json::to_string(&a).unwrap()
    };
    let one = run(1);
    let v: serde_json::Value = serde_json::from_str(&one).unwrap();
    assert!(
        v["findings"].as_array().unwrap().len() >= 3,
        "a test of several what-ifs: {one}"
    );
    for jobs in [2, 3, 8] {
        assert_eq!(run(jobs), one, "{jobs} at once");
    }
    // Repeated, through the command (the streamed analysis).
    let dir = tmpdir("analysis-jobs");
    let tr = dir.join("h.trace");
    let o = whatif(&[
        "gen",
        "halo3d",
        "--dims",
        "4x4x4",
        "--periodic",
        "--iters",
        "6",
        "--out",
        tr.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let cli = |jobs: &str| {
        let o = whatif(&[
            "analyze",
            tr.to_str().unwrap(),
            "--net",
            "alphabeta:lat=2us,bw=1GB/s",
            "--jobs",
            jobs,
            "--json",
            "-q",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        o.stdout
    };
    let one = cli("1");
    assert!(!one.is_empty());
    assert_eq!(cli("3"), one);
    assert!(
        !String::from_utf8_lossy(&one).contains("--jobs"),
        "the reproducing commands leave --jobs out"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
