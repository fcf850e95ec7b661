//! Test support for the event-driven models: a driver that runs messages through a model as
//! the replay does, and random message sets.

use crate::{Delivery, MessageInfo, NetIo, NetworkModel};
use sim_core::SimTime;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A message of a test run: leaves at `depart`, or `delay` after message `after` arrived.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Msg {
    pub src: u32,
    pub dst: u32,
    pub bytes: u64,
    pub depart: u64,
    pub after: Option<(u32, u64)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Depart(u32),
    Net(u32),
}

/// Runs `msgs` through `model` as the replay does (events at equal times in the order they
/// were pushed; message `i` has token `i`); returns every delivery in the order reported.
pub(crate) fn drive(model: &mut dyn NetworkModel, msgs: &[Msg]) -> Vec<Delivery> {
    let mut q: BinaryHeap<Reverse<(u64, u64, Ev)>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut push = |q: &mut BinaryHeap<_>, t: u64, e: Ev| {
        seq += 1;
        q.push(Reverse((t, seq, e)));
    };
    for (i, m) in msgs.iter().enumerate() {
        if m.after.is_none() {
            push(&mut q, m.depart, Ev::Depart(i as u32));
        }
    }
    let mut io = NetIo::default();
    let mut out = Vec::new();
    while let Some(Reverse((t, _, e))) = q.pop() {
        let now = SimTime::from_ps(t);
        match e {
            Ev::Depart(i) => {
                let m = msgs[i as usize];
                let info = MessageInfo {
                    src_pe: m.src,
                    dst_pe: m.dst,
                    bytes: m.bytes,
                };
                model.start_message(now, &info, i, &mut io);
            }
            Ev::Net(id) => model.handle_event(now, id, &mut io),
        }
        for (at, id) in io.events.drain(..) {
            assert!(at.as_ps() >= t, "an event in the past");
            push(&mut q, at.as_ps(), Ev::Net(id));
        }
        for d in io.deliveries.drain(..) {
            out.push(d);
            for (j, m) in msgs.iter().enumerate() {
                if let Some((a, delay)) = m.after
                    && a == d.token
                {
                    push(&mut q, d.at.as_ps() + delay, Ev::Depart(j as u32));
                }
            }
        }
    }
    assert_eq!(out.len(), msgs.len(), "every message arrives");
    out
}

/// SplitMix64: a small deterministic generator for the random cases.
pub(crate) struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Random messages on `pes` PEs: sizes from `sizes` (equal ones end together) and a quarter
/// of odd ones up to `odd_max`, departures on a grid of `grid` ps with `slots` points (many
/// start together), a third of them chained to an earlier message's arrival, 0, 1 or 2
/// `delay` after it (starts that meet ends).
pub(crate) fn random_msgs(
    rng: &mut Rng,
    pes: u32,
    n: usize,
    sizes: &[u64],
    odd_max: u64,
    (grid, slots, delay): (u64, u64, u64),
) -> Vec<Msg> {
    (0..n)
        .map(|i| {
            let src = rng.below(pes as u64) as u32;
            let mut dst = rng.below(pes as u64) as u32;
            if dst == src {
                dst = (dst + 1) % pes;
            }
            let bytes = if rng.below(4) == 0 {
                1 + rng.below(odd_max)
            } else {
                sizes[rng.below(sizes.len() as u64) as usize]
            };
            let after = (i > 0 && rng.below(3) == 0)
                .then(|| (rng.below(i as u64) as u32, rng.below(3) * delay));
            Msg {
                src,
                dst,
                bytes,
                depart: rng.below(slots) * grid,
                after,
            }
        })
        .collect()
}
