//! Scheduler semantics, failure reports and engine equivalences.

use crate::{run, run_with, us};
use network_models::{AlphaBeta, Driving, MessageInfo, NetworkModel};
use replay::{ReplayConfig, ReplayError, SchedPolicy, Wait};
use scenarios::SynthParams;
use sim_core::{Bandwidth, QueueKind, RunLimits, SimDuration, SimTime};
use trace::{Block, Destination, MsgId, PeId, Send, TraceBuilder, TraceMeta};

#[test]
fn a_block_waiting_for_an_unsent_message_is_reported_stuck() {
    let mut b = TraceBuilder::new(TraceMeta {
        name: "stuck".into(),
        recorded_pes: 2,
        ..Default::default()
    });
    let e = b.entry("work");
    let o0 = b.object("a", PeId(0));
    let o1 = b.object("b", PeId(1));
    let first = b.block(Block::new(o0, e, us(1)), &[], &[]);
    // Waits for msg 77, which nobody sends; the next block depends on it.
    let lost = b.block(
        Block {
            trigger: Some(MsgId(77)),
            ..Block::new(o1, e, us(1))
        },
        &[],
        &[],
    );
    b.block(Block::new(o1, e, us(1)), &[lost, first], &[]);
    let t = b.finish().unwrap();
    let mut net = network_models::Ideal;
    let err = replay::replay(&t, &mut net, &ReplayConfig::default()).unwrap_err();
    let ReplayError::Stuck(rep) = &err else {
        panic!("expected Stuck, got {err}")
    };
    assert_eq!((rep.total, rep.completed), (3, 1));
    assert_eq!(rep.roots.len(), 1);
    assert_eq!(rep.roots[0].block, 1);
    assert_eq!(rep.roots[0].waits, vec![Wait::MessageNeverSent]);
    assert_eq!(rep.others[0].block, 2);
    assert_eq!(rep.others[0].waits, vec![Wait::Block(1)]);
    let text = err.to_string();
    assert!(
        text.contains("2 of 3 blocks never ran") && text.contains("no block in the trace sends"),
        "{text}"
    );
}

#[test]
fn a_message_cycle_is_reported_as_a_cycle() {
    let mut b = TraceBuilder::new(TraceMeta {
        recorded_pes: 1,
        ..Default::default()
    });
    let e = b.entry("e");
    let o = b.object("o", PeId(0));
    let (m0, m1) = (b.new_msg(), b.new_msg());
    let s = |m| Send {
        msg: m,
        offset: SimDuration::ZERO,
        dest: Destination::Object(o),
        bytes: 1,
        entry: e,
    };
    b.block(
        Block {
            trigger: Some(m1),
            ..Block::new(o, e, us(1))
        },
        &[],
        &[s(m0)],
    );
    b.block(
        Block {
            trigger: Some(m0),
            ..Block::new(o, e, us(1))
        },
        &[],
        &[s(m1)],
    );
    let t = b.finish().unwrap();
    let err = replay::replay(&t, &mut network_models::Ideal, &ReplayConfig::default()).unwrap_err();
    assert!(err.to_string().contains("cycle"), "{err}");
}

#[test]
fn run_limits_stop_runaway_replays() {
    let t = scenarios::ring(
        4,
        &SynthParams {
            iters: 50,
            ..SynthParams::default()
        },
    )
    .unwrap();
    let mut cfg = ReplayConfig {
        limits: RunLimits {
            max_events: Some(100),
            ..RunLimits::default()
        },
        ..Default::default()
    };
    let mut net = network_models::Ideal;
    let e = replay::replay(&t, &mut net, &cfg).unwrap_err();
    assert!(e.to_string().contains("after 100 events"), "{e}");
    cfg.limits = RunLimits {
        max_sim_time: Some(sim_core::SimTime::from_ps(us(250).as_ps())),
        ..RunLimits::default()
    };
    let e = replay::replay(&t, &mut net, &cfg).unwrap_err();
    assert!(e.to_string().contains("simulated-time limit"), "{e}");
}

/// Two blocks become ready at the same instant on one PE.
fn contention_trace(prio_first: i32, prio_second: i32) -> trace::Trace {
    let mut b = TraceBuilder::new(TraceMeta {
        recorded_pes: 2,
        ..Default::default()
    });
    let e = b.entry("e");
    let src = b.object("src", PeId(0));
    let (x, y) = (b.object("x", PeId(1)), b.object("y", PeId(1)));
    let (m0, m1) = (b.new_msg(), b.new_msg());
    let s = |m, o| Send {
        msg: m,
        offset: us(1),
        dest: Destination::Object(o),
        bytes: 0,
        entry: e,
    };
    b.block(Block::new(src, e, us(1)), &[], &[s(m0, x), s(m1, y)]);
    b.block(
        Block {
            trigger: Some(m0),
            priority: prio_first,
            ..Block::new(x, e, us(10))
        },
        &[],
        &[],
    );
    b.block(
        Block {
            trigger: Some(m1),
            priority: prio_second,
            ..Block::new(y, e, us(20))
        },
        &[],
        &[],
    );
    b.finish().unwrap()
}

#[test]
fn fifo_breaks_ties_by_block_id_and_priority_overrides() {
    let cfg = ReplayConfig {
        timeline: true,
        ..Default::default()
    };
    let t = contention_trace(5, -5);
    let r = run_with(&t, "latency:lat=1us", &cfg);
    let tl = r.timeline.as_ref().unwrap();
    // FIFO: block 1 (ready at 2us, lower id) first, then block 2 waits.
    assert_eq!(
        (
            tl[1].block,
            tl[1].start.as_ps(),
            tl[2].block,
            tl[2].start.as_ps()
        ),
        (1, us(2).as_ps(), 2, us(12).as_ps())
    );
    let cfg = ReplayConfig {
        policy: SchedPolicy::Priority,
        ..cfg
    };
    let r = run_with(&t, "latency:lat=1us", &cfg);
    let tl = r.timeline.as_ref().unwrap();
    assert_eq!(
        (tl[1].block, tl[2].block, tl[2].start.as_ps()),
        (2, 1, us(22).as_ps())
    );
    assert_eq!(r.makespan.as_ps(), us(32).as_ps());
}

#[test]
fn broadcasts_and_groups_reach_every_consumer() {
    let mut b = TraceBuilder::new(TraceMeta {
        recorded_pes: 4,
        ..Default::default()
    });
    let e = b.entry("e");
    let objs: Vec<_> = (0..4).map(|i| b.object(format!("o{i}"), PeId(i))).collect();
    let g = b.group(vec![objs[1], objs[3]]);
    let (all, except, grp) = (b.new_msg(), b.new_msg(), b.new_msg());
    let s = |m, dest| Send {
        msg: m,
        offset: us(1),
        dest,
        bytes: 100,
        entry: e,
    };
    b.block(
        Block::new(objs[0], e, us(1)),
        &[],
        &[
            s(all, Destination::All),
            s(except, Destination::AllExcept(objs[0])),
            s(grp, Destination::Group(g)),
        ],
    );
    for (i, o) in objs.iter().enumerate() {
        b.block(
            Block {
                trigger: Some(all),
                ..Block::new(*o, e, us(1))
            },
            &[],
            &[],
        );
        if i > 0 {
            b.block(
                Block {
                    trigger: Some(except),
                    ..Block::new(*o, e, us(1))
                },
                &[],
                &[],
            );
        }
    }
    for o in [objs[1], objs[3]] {
        b.block(
            Block {
                trigger: Some(grp),
                ..Block::new(o, e, us(1))
            },
            &[],
            &[],
        );
    }
    let t = b.finish().unwrap();
    let r = run(&t, "latency:lat=1us");
    assert_eq!(r.messages.total(), 4 + 3 + 2);
    assert_eq!(r.messages.local, 1);
    // PE 1 and 3 each run three 1us blocks after the 2us arrival.
    assert_eq!(r.makespan.as_ps(), us(5).as_ps());
}

/// Alpha-beta that asks for messages in departure order: the engine's stateful-model path.
#[derive(Debug)]
struct Ordered {
    inner: AlphaBeta,
    last_depart_check: bool,
}
impl NetworkModel for Ordered {
    fn wire_time(&mut self, msg: &MessageInfo, depart: SimTime) -> SimDuration {
        self.last_depart_check = true;
        self.inner.wire_time(msg, depart)
    }
    fn send_overhead(&self, m: &MessageInfo) -> SimDuration {
        self.inner.send_overhead(m)
    }
    fn recv_overhead(&self, m: &MessageInfo) -> SimDuration {
        self.inner.recv_overhead(m)
    }
    fn has_overheads(&self) -> bool {
        self.inner.has_overheads()
    }
    fn driving(&self) -> Driving {
        Driving::DepartureOrdered
    }
}

#[test]
fn queues_and_departure_ordering_give_identical_results() {
    let p = SynthParams {
        iters: 6,
        jitter: sim_core::Ratio::parse("0.3").unwrap(),
        seed: 42,
        ..SynthParams::default()
    };
    let t = scenarios::halo(&[5, 5, 4], true, &p).unwrap();
    let ab = AlphaBeta::new(
        us(1),
        Bandwidth::parse("5GB/s").unwrap(),
        SimDuration::from_ns(200),
        SimDuration::from_ns(300),
    );
    let mut results = Vec::new();
    for queue in [QueueKind::Radix, QueueKind::Binary] {
        for ordered in [false, true] {
            let cfg = ReplayConfig {
                queue,
                timeline: true,
                pes: Some(16),
                ..Default::default()
            };
            let r = if ordered {
                let mut m = Ordered {
                    inner: ab,
                    last_depart_check: false,
                };
                let r = replay::replay(&t, &mut m, &cfg).unwrap();
                assert!(m.last_depart_check);
                r
            } else {
                let mut m = ab;
                replay::replay(&t, &mut m, &cfg).unwrap()
            };
            results.push(r);
        }
    }
    for r in &results[1..] {
        assert_eq!(r.makespan, results[0].makespan);
        assert_eq!(r.timeline, results[0].timeline);
        assert_eq!(r.pe_busy_ps, results[0].pe_busy_ps);
    }
}

#[test]
fn explicit_mapping_is_checked() {
    let t = scenarios::ring(4, &SynthParams::default()).unwrap();
    let cfg = ReplayConfig {
        mapping: replay::Mapping::Explicit(vec![0, 1, 2]),
        ..Default::default()
    };
    let e = replay::replay(&t, &mut network_models::Ideal, &cfg).unwrap_err();
    assert!(
        e.to_string()
            .contains("names 3 objects but the trace has 4"),
        "{e}"
    );
    let cfg = ReplayConfig {
        mapping: replay::Mapping::Explicit(vec![0, 1, 2, 9]),
        pes: Some(4),
        ..Default::default()
    };
    let e = replay::replay(&t, &mut network_models::Ideal, &cfg).unwrap_err();
    assert!(e.to_string().contains("PE 9"), "{e}");
    let cfg = ReplayConfig {
        mapping: replay::Mapping::Explicit(vec![0, 0, 0, 0]),
        ..Default::default()
    };
    let r = replay::replay(&t, &mut network_models::Ideal, &cfg).unwrap();
    assert_eq!(r.messages.remote, 0);
}

/// Object `a` (PE 0) gets two messages: `m1` from `b` (PE 1) and `m2` from `c` (PE 0). It
/// recorded them in the order m1, m2 (its second block does the work once both are in).
/// Replayed with a slow network, m2 (local) arrives first: with object order the working
/// block still waits for the block that consumed m1; without, it runs early.
#[test]
fn object_order_keeps_an_objects_blocks_in_trace_order() {
    let build = |sequential: bool| {
        let mut b = TraceBuilder::new(TraceMeta {
            name: "order".into(),
            recorded_pes: 2,
            sequential_objects: sequential,
            ..TraceMeta::default()
        });
        let e = b.entry("msg");
        let oa = b.object("a", PeId(0));
        let ob = b.object("b", PeId(1));
        let oc = b.object("c", PeId(0));
        let (m1, m2) = (b.new_msg(), b.new_msg());
        let send = |msg, to| Send {
            msg,
            offset: SimDuration::ZERO,
            dest: Destination::Object(to),
            bytes: 8,
            entry: e,
        };
        b.block(Block::new(ob, e, SimDuration::ZERO), &[], &[send(m1, oa)]);
        b.block(Block::new(oc, e, SimDuration::ZERO), &[], &[send(m2, oa)]);
        let mut first = Block::new(oa, e, SimDuration::ZERO);
        first.trigger = Some(m1);
        b.block(first, &[], &[]);
        let mut work = Block::new(oa, e, us(10));
        work.trigger = Some(m2);
        b.block(work, &[], &[]);
        b.finish().unwrap()
    };
    let lat = "latency:lat=100us";
    // In order: the work starts when m1 arrives (100 us) and ends 10 us later.
    assert_eq!(run(&build(true), lat).makespan.as_ps(), us(110).as_ps());
    // Free order (the trace does not say objects are sequential): the work runs at 0.
    let free = run(&build(false), lat);
    assert_eq!(free.makespan.as_ps(), us(100).as_ps());
    // The config overrides the trace either way.
    let forced = run_with(
        &build(false),
        lat,
        &ReplayConfig {
            object_order: Some(true),
            ..ReplayConfig::default()
        },
    );
    assert_eq!(forced.makespan.as_ps(), us(110).as_ps());
    // A stuck predecessor is named as what the next block of the object waits for.
    let mut t = build(true);
    let mut b = TraceBuilder::new(t.meta.clone());
    let e = b.entry("msg");
    let oa = b.object("a", PeId(0));
    let mut lost = Block::new(oa, e, SimDuration::ZERO);
    lost.trigger = Some(MsgId(99));
    let first = b.block(lost, &[], &[]);
    b.block(Block::new(oa, e, us(1)), &[], &[]);
    t = b.finish().unwrap();
    let spec: network_models::NetSpec = lat.parse().unwrap();
    match replay::replay(&t, spec.build().as_mut(), &ReplayConfig::default()) {
        Err(ReplayError::Stuck(r)) => {
            assert_eq!(r.roots.len(), 1);
            assert_eq!(r.others[0].waits, vec![Wait::Block(first.0)]);
        }
        other => panic!("expected stuck, got {other:?}"),
    }
}

/// An MPI rank `a` (PE 0) took in a halo from `b` (PE 1) with a handler `h` before it
/// computed (block `c`, 10 us, started at 0); a later block `w` ends the wait for the halo.
/// With the handler's entry outside object order, `c` starts at 0 and `w` waits for `h` only
/// through its explicit dependency: at 100 us of latency `h` runs at 100 us, `w` after it
/// (101 us). In object order `c` would wait for `h`: 100 + 10 + 1 us.
#[test]
fn an_entry_outside_object_order_runs_when_its_message_arrives() {
    let build = |outside: bool| {
        let mut b = TraceBuilder::new(TraceMeta {
            name: "handlers".into(),
            recorded_pes: 2,
            sequential_objects: true,
            ..TraceMeta::default()
        });
        let handler = b.entry("handler");
        if outside {
            b.entry_outside_object_order(handler);
        }
        let work = b.entry("work");
        let oa = b.object("a", PeId(0));
        let ob = b.object("b", PeId(1));
        let halo = b.new_msg();
        let send = Send {
            msg: halo,
            offset: SimDuration::ZERO,
            dest: Destination::Object(oa),
            bytes: 8,
            entry: handler,
        };
        b.block(Block::new(ob, work, SimDuration::ZERO), &[], &[send]);
        let mut h = Block::new(oa, handler, SimDuration::ZERO);
        h.trigger = Some(halo);
        let h = b.block(h, &[], &[]);
        b.block(Block::new(oa, work, us(10)), &[], &[]);
        b.block(Block::new(oa, work, us(1)), &[h], &[]);
        b.finish().unwrap()
    };
    let lat = "latency:lat=100us";
    let cfg = ReplayConfig {
        timeline: true,
        ..ReplayConfig::default()
    };
    let r = run_with(&build(true), lat, &cfg);
    let starts: Vec<u64> = r
        .timeline
        .as_ref()
        .unwrap()
        .iter()
        .map(|x| x.start.as_ps())
        .collect();
    assert_eq!(r.makespan.as_ps(), us(101).as_ps(), "{starts:?}");
    let at = |block: u32| {
        let t = r.timeline.as_ref().unwrap();
        t.iter().find(|x| x.block == block).unwrap().start.as_ps()
    };
    assert_eq!((at(1), at(2), at(3)), (us(100).as_ps(), 0, us(100).as_ps()));
    assert_eq!(run(&build(false), lat).makespan.as_ps(), us(111).as_ps());
}

/// PE 0 runs a 10 us block; at 2 us a message from PE 1 triggers block `n` on PE 0's
/// object, which forwards 0 bytes to PE 1's last block. `network`: whether `n` is a
/// network block.
fn forwarding_trace(network: bool) -> trace::Trace {
    let mut b = TraceBuilder::new(TraceMeta {
        recorded_pes: 2,
        ..Default::default()
    });
    let e = b.entry("e");
    let o0 = b.object("a", PeId(0));
    let o1 = b.object("b", PeId(1));
    let (m0, m1) = (b.new_msg(), b.new_msg());
    let s = |m, to| Send {
        msg: m,
        offset: SimDuration::ZERO,
        dest: Destination::Object(to),
        bytes: 0,
        entry: e,
    };
    b.block(Block::new(o0, e, us(10)), &[], &[]);
    let sender = Block::new(o1, e, us(2));
    b.block(
        sender,
        &[],
        &[Send {
            offset: us(2),
            ..s(m0, o0)
        }],
    );
    b.block(
        Block {
            trigger: Some(m0),
            network,
            ..Block::new(o0, e, SimDuration::ZERO)
        },
        &[],
        &[s(m1, o1)],
    );
    b.block(
        Block {
            trigger: Some(m1),
            ..Block::new(o1, e, us(1))
        },
        &[],
        &[],
    );
    b.finish().unwrap()
}

#[test]
fn network_blocks_happen_at_once_whatever_their_pe_is_doing() {
    // A block on the busy PE 0 waits for its 10 us block: the reply leaves at 10 us.
    let r = run(&forwarding_trace(false), "latency:lat=1us");
    // 2 us + 1 us there, queued to 10 us, 1 us back, 1 us of work.
    assert_eq!(r.makespan, SimTime::from_ps(12_000_000));
    // A network block happens when its message arrives (3 us); the reply is back at 4 us.
    let t = forwarding_trace(true);
    let cfg = ReplayConfig {
        timeline: true,
        ..ReplayConfig::default()
    };
    let r = run_with(&t, "latency:lat=1us", &cfg);
    assert_eq!(r.makespan, SimTime::from_ps(10_000_000));
    let tl = r.timeline.as_ref().unwrap();
    let n = tl.iter().find(|x| x.block == 2).unwrap();
    assert_eq!(
        (n.start, n.end),
        (SimTime::from_ps(3_000_000), SimTime::from_ps(3_000_000))
    );
    let last = tl.iter().find(|x| x.block == 3).unwrap();
    assert_eq!(last.start, SimTime::from_ps(4_000_000));
    // It is not a block its PE ran, and costs no CPU: with LogGOPS overheads (o = 1.5 us,
    // L = 2.5 us) the reply still leaves at its arrival: 2 + 1.5 + 2.5 (+ o on receipt) ...
    assert_eq!(r.pe_blocks, vec![1, 2]);
    let plain = run(
        &forwarding_trace(false),
        "loggops:L=2500ns,o=1500ns,g=0,G=0,O=0,S=0",
    );
    let net = run(&t, "loggops:L=2500ns,o=1500ns,g=0,G=0,O=0,S=0");
    // ... while the ordinary block waits for PE 0 and pays o to receive and o to send.
    assert!(
        net.makespan < plain.makespan,
        "{} vs {}",
        net.makespan,
        plain.makespan
    );
    // Both PEs lose [6k, 6k + 5 us) to detours: PE 1's 2 us block ends at 12 us, its message
    // arrives at 13 us, inside a detour of PE 0, which would delay a computation but not the
    // network block: it happens at 13 us.
    let mut noise = replay::Noise::default();
    noise
        .add("detour:every=6us,lose=5us,phase=aligned")
        .unwrap();
    let cfg = ReplayConfig {
        timeline: true,
        noise,
        ..ReplayConfig::default()
    };
    let r = run_with(&t, "latency:lat=1us", &cfg);
    let n = r
        .timeline
        .as_ref()
        .unwrap()
        .iter()
        .find(|x| x.block == 2)
        .unwrap();
    assert_eq!(n.start, SimTime::from_ps(13_000_000));
    assert_eq!((n.released, n.end), (n.start, n.start));
}
