//! The runtime's own costs on a PE (issue 16, part 5): a scheduling cost per block and a CPU
//! cost per local message, as closed forms, on both delivery paths of the plan, and the
//! virtualisation-factor effect they produce (Lee, section 6.5.2).

use crate::{run_with, us};
use replay::{Mapping, ReplayConfig};
use sim_core::SimDuration;
use trace::{Block, Destination, MsgId, PeId, Send, Trace, TraceBuilder, TraceMeta};

/// `n` objects in a chain, object `i` on PE `pe_of(i)`; block `i` takes `d`, is triggered by
/// block `i - 1`'s message (sent at its end) and sends to block `i + 1`.
fn chain(n: u32, pes: u32, d: SimDuration) -> Trace {
    let mut b = TraceBuilder::new(TraceMeta {
        name: "chain".into(),
        recorded_pes: pes,
        ..Default::default()
    });
    let e = b.entry("step");
    let objs: Vec<_> = (0..n)
        .map(|i| b.object(format!("o{i}"), PeId(i % pes)))
        .collect();
    let msgs: Vec<MsgId> = (0..n).map(|_| b.new_msg()).collect();
    for i in 0..n as usize {
        let sends = if i + 1 < n as usize {
            vec![Send {
                msg: msgs[i],
                offset: d,
                dest: Destination::Object(objs[i + 1]),
                bytes: 64,
                entry: e,
            }]
        } else {
            vec![]
        };
        let trigger = (i > 0).then(|| msgs[i - 1]);
        b.block(
            Block {
                trigger,
                ..Block::new(objs[i], e, d)
            },
            &[],
            &sends,
        );
    }
    b.finish().unwrap()
}

fn cfg(block_oh: u64, local: u64) -> ReplayConfig {
    ReplayConfig {
        block_overhead: SimDuration::from_ns(block_oh),
        local_msg_cost: SimDuration::from_ns(local),
        ..ReplayConfig::default()
    }
}

#[test]
fn block_and_local_message_costs_are_closed_forms() {
    let (n, d) = (10u64, us(5));
    // One PE: every message is local. n blocks pay the block cost; n - 1 triggered blocks pay
    // the local-message cost. The same on the fixed-delivery path (latency) and the
    // per-message path (loggops, whose costs apply to remote messages only).
    let t = chain(n as u32, 1, d);
    for net in ["latency:lat=1us", "loggops"] {
        assert_eq!(
            run_with(&t, net, &cfg(0, 0)).makespan.as_ps(),
            n * 5_000_000,
            "{net}"
        );
        let r = run_with(&t, net, &cfg(500, 200));
        assert_eq!(
            r.makespan.as_ps(),
            n * (5_000_000 + 500_000) + (n - 1) * 200_000,
            "{net}: n (d + block) + (n - 1) local"
        );
        // Not network costs: the per-entry network overheads stay 0.
        assert_eq!(r.entry_net.iter().map(|e| e.overhead_ps).sum::<u64>(), 0);
    }
    // Two PEs, alternating: every message is remote and pays the latency, never the local
    // cost; every block still pays the block cost.
    let t = chain(n as u32, 2, d);
    let r = run_with(&t, "latency:lat=1us", &cfg(500, 200));
    assert_eq!(
        r.makespan.as_ps(),
        n * (5_000_000 + 500_000) + (n - 1) * 1_000_000
    );
    // Folded onto one PE by the mapping, the same trace pays local costs again.
    let folded = ReplayConfig {
        pes: Some(1),
        mapping: Mapping::Block,
        ..cfg(500, 200)
    };
    let r = run_with(&t, "latency:lat=1us", &folded);
    assert_eq!(
        r.makespan.as_ps(),
        n * (5_000_000 + 500_000) + (n - 1) * 200_000
    );
}

/// Lee 2009 6.5.2 through the built-in study: without runtime costs the stencil's iteration
/// time is flat in the virtualisation factor; with a block cost it rises at every step.
#[test]
fn the_vf_effect_appears_with_runtime_costs() {
    let out = crate::cli::sweep_builtin("stencil-vf-overhead.toml");
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| head.iter().position(|h| *h == n).unwrap();
    let (bo, lc, it) = (
        col("machine.block_overhead"),
        col("machine.local_msg_cost"),
        col("mean_iteration_s"),
    );
    let series = |b: &str, l: &str| -> Vec<f64> {
        csv.lines()
            .skip(1)
            .map(|r| r.split(',').collect::<Vec<_>>())
            .filter(|f| f[bo] == b && f[lc] == l)
            .map(|f| f[it].parse::<f64>().unwrap())
            .collect()
    };
    let none = series("0ns", "0ns");
    assert_eq!(none.len(), 4);
    let (lo, hi) = none
        .iter()
        .fold((f64::MAX, 0f64), |(a, b), x| (a.min(*x), b.max(*x)));
    assert!(hi / lo < 1.02, "flat without costs: {none:?}");
    for (b, l) in [("1us", "0ns"), ("0ns", "1us"), ("1us", "1us")] {
        let s = series(b, l);
        assert!(
            s.windows(2).all(|w| w[1] > w[0]),
            "{b}/{l} rises with VF: {s:?}"
        );
    }
    let both = series("1us", "1us");
    assert!(both[3] > 1.5 * both[0], "VF 8 vs VF 1 with costs: {both:?}");
}

/// Issue 16's question about `--priority` on stencil3d with `prioritize=1`. Under the default
/// object order (an object's blocks run in trace order) a PE's ready blocks belong to
/// different objects of the same iteration, so iteration priorities have nothing to reorder
/// and the prediction does not move. With `--free-object-order` and a slow network, ghosts of
/// two iterations are ready on a PE together; priorities run the older iteration first and
/// the run is shorter, as they should make it.
#[test]
fn stencil_priorities_matter_when_iterations_overlap() {
    use crate::cli::{makespan_ps, stderr, tmpdir, whatif};
    let t = tmpdir("prio").keep().join("sp.trace");
    let tp = t.to_str().unwrap();
    let o = whatif(&[
        "emulate",
        "stencil3d",
        "--pes",
        "8",
        "--set",
        "prioritize=1",
        "--set",
        "iters=10",
        "--set",
        "block=8x8x8",
        "--out",
        tp,
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let makespan = |extra: &[&str]| -> u64 {
        let mut a = vec!["replay", tp, "--net", "latency:lat=200us"];
        a.extend_from_slice(extra);
        makespan_ps(&a)
    };
    assert_eq!(
        makespan(&[]),
        makespan(&["--priority"]),
        "object order: nothing to reorder"
    );
    let fifo = makespan(&["--free-object-order"]);
    let prio = makespan(&["--free-object-order", "--priority"]);
    assert!(
        prio < fifo,
        "older iterations first is faster: {prio} vs {fifo}"
    );
    // Figures of this run (release build, 2026-11-23): 4.96051 ms FIFO, 4.77792 ms priority.
    assert_eq!((fifo, prio), (4_960_512_000, 4_777_920_000));
}
