//! GOAL operation schedules simulated under LogGOPS with the event semantics of LogGOPSim
//! (Hoefler, Schneider, Lumsdaine; `src/LogGOPSim/LogGOPSim.cpp` of spcl/LogGOPSim), so that
//! `whatif replay x.goal --format goal --net loggops` gives LogGOPSim's finishing time.
//!
//! The block replay turns operations into execution blocks, which cannot express two rules of
//! LogGOPSim: a send waiting for its NIC does not hold the CPU, and a message is received (its
//! CPU cost charged) when it arrives and the CPU and receive NIC are free, whether or not its
//! receive is posted. This crate runs the operations themselves.
//!
//! Contract (one CPU and one NIC per rank; times in picoseconds, LogGOPSim's nanoseconds x
//! 1000; `s1 = max(s, 1) - 1`):
//! - One event list ordered by `(time, stamp)`. Every operation that becomes executable and
//!   every message gets the next stamp; an event that finds its resources busy is put back
//!   at the time they free up, keeping its stamp.
//! - Executable operations of a rank are collected in the order their last dependency was
//!   satisfied (dependents in the order of the `requires` lines; `irequires` when the
//!   operation starts, `requires` when it completes), and given stamps after each event,
//!   ranks in increasing order, sends before receives before calcs, in the order libstdc++'s
//!   `std::sort` leaves them (LogGOPSim sorts with it; it is not stable above 16 elements,
//!   so `stdsort` reproduces it). They are queued at: calc and recv `nexto`; send
//!   `max(nexto, nextgs)`.
//! - calc: when the CPU is free: `nexto = t + N`; started and completed at `t`.
//! - send: when CPU and send NIC are free: `nexto = t + o + s1*O`, `nextgs = t + g + s1*G`;
//!   started at `t`; a message reaches the receiver at `t + o + L`; an eager send (`s <= S`)
//!   completes at `t`, a rendezvous send when it is matched.
//! - message: when the receiver's CPU and receive NIC are free: `nexto = t + o + max(s1*O,
//!   s1*G)`, `nextgr = t + g + s1*G`; matched against posted receives (first with the same
//!   source and tag), else queued as unexpected. A matched rendezvous message completes its
//!   send and moves the sender's `nexto` and `nextgs` up to `t`.
//! - recv: started at `t`; takes the first unexpected message with its source and tag
//!   (completing a rendezvous send as above) and completes, else is posted.
//! - The finishing time is the largest `nexto`.
//!
//! Differences: zero-byte messages cost as one byte (LogGOPSim's `(s-1)` wraps around);
//! only the LogGP network (no congestion backend), no noise traces.

mod stdsort;

use importers::goal::{OpKind, OpSchedule};
use network_models::LogGopsParams;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// What a simulation found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpReport {
    /// The largest CPU-free time over all ranks (LogGOPSim's "maximum finishing time").
    pub finish_ps: u64,
    /// The rank that reaches it (the lowest such rank).
    pub finish_rank: u32,
    /// Per rank, its CPU-free time at the end.
    pub rank_finish_ps: Vec<u64>,
    /// Events stamped (operations and messages).
    pub events: u64,
    /// Operations that never completed (a schedule that deadlocks: receives without sends).
    pub unfinished: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// Operation `op` (its kind decides what happens).
    Op(u32),
    /// The message of send `op`, at its receiver.
    Msg(u32),
}

#[derive(Clone, Copy)]
struct Queued {
    /// Source (unexpected messages) or the posted receive's source.
    src: u32,
    tag: u64,
    /// The send (unexpected) or the receive (posted).
    op: u32,
}

/// Runs `sched` under `p` with LogGOPSim's semantics.
pub fn simulate(sched: &OpSchedule, p: &LogGopsParams) -> OpReport {
    let n = sched.ops.len();
    let ranks = sched.base.len().saturating_sub(1);
    let (l, o, g) = (p.l.as_ps(), p.o.as_ps(), p.g.as_ps());
    let (gb, ob, big) = (p.g_per_byte.as_ps(), p.o_per_byte.as_ps(), p.eager_limit);
    let s1 = |s: u64| s.max(1) - 1;
    let mut rank_of = vec![0u32; n];
    for r in 0..ranks {
        for i in sched.base[r]..sched.base[r + 1] {
            rank_of[i as usize] = r as u32;
        }
    }
    // Dependents in file order of the edges, and dependency counts.
    let mut pending = vec![0u32; n];
    let (mut on_done, mut on_start): (Vec<Vec<u32>>, Vec<Vec<u32>>) =
        (vec![Vec::new(); n], vec![Vec::new(); n]);
    for &(op, dep, immediate) in &sched.edges {
        pending[op as usize] += 1;
        if immediate {
            on_start[dep as usize].push(op);
        } else {
            on_done[dep as usize].push(op);
        }
    }
    let (mut nexto, mut nextgr, mut nextgs) =
        (vec![0u64; ranks], vec![0u64; ranks], vec![0u64; ranks]);
    let mut ready: Vec<Vec<u32>> = vec![Vec::new(); ranks];
    let (mut posted, mut unexpected): (Vec<VecDeque<Queued>>, Vec<VecDeque<Queued>>) =
        (vec![VecDeque::new(); ranks], vec![VecDeque::new(); ranks]);
    let mut heap: BinaryHeap<Reverse<(u64, u64, Ev)>> = BinaryHeap::new();
    let mut stamp = 0u64;
    let mut completed = 0usize;
    let order = |k: OpKind| match k {
        OpKind::Send => 0,
        OpKind::Recv => 1,
        OpKind::Calc => 2,
    };
    for r in 0..ranks {
        let mut roots: Vec<u32> = (sched.base[r]..sched.base[r + 1])
            .filter(|&i| pending[i as usize] == 0)
            .collect();
        stdsort::sort(&mut roots, &|a: &u32, b: &u32| {
            order(sched.ops[*a as usize].kind) < order(sched.ops[*b as usize].kind)
        });
        for i in roots {
            heap.push(Reverse((0, stamp, Ev::Op(i))));
            stamp += 1;
        }
    }
    let mut touched: Vec<u32> = Vec::new();
    // Satisfies the edges leaving `op` in `list`; newly executable operations join their
    // rank's list.
    fn release(list: &[u32], pending: &mut [u32], ready: &mut [Vec<u32>], rank_of: &[u32]) {
        for &d in list {
            pending[d as usize] -= 1;
            if pending[d as usize] == 0 {
                ready[rank_of[d as usize] as usize].push(d);
            }
        }
    }
    while let Some(Reverse((t, ts, ev))) = heap.pop() {
        touched.clear();
        match ev {
            Ev::Op(i) => {
                let op = sched.ops[i as usize];
                let h = rank_of[i as usize] as usize;
                match op.kind {
                    OpKind::Calc => {
                        if nexto[h] <= t {
                            nexto[h] = t + op.size.saturating_mul(1000);
                            release(&on_start[i as usize], &mut pending, &mut ready, &rank_of);
                            release(&on_done[i as usize], &mut pending, &mut ready, &rank_of);
                            touched.push(h as u32);
                            completed += 1;
                        } else {
                            heap.push(Reverse((nexto[h], ts, ev)));
                        }
                    }
                    OpKind::Send => {
                        let free = nexto[h].max(nextgs[h]);
                        if free <= t {
                            release(&on_start[i as usize], &mut pending, &mut ready, &rank_of);
                            touched.push(h as u32);
                            nexto[h] = t + o + s1(op.size) * ob;
                            nextgs[h] = t + g + s1(op.size) * gb;
                            heap.push(Reverse((t + o + l, stamp, Ev::Msg(i))));
                            stamp += 1;
                            if op.size <= big {
                                release(&on_done[i as usize], &mut pending, &mut ready, &rank_of);
                                completed += 1;
                            }
                        } else {
                            heap.push(Reverse((free, ts, ev)));
                        }
                    }
                    OpKind::Recv => {
                        release(&on_start[i as usize], &mut pending, &mut ready, &rank_of);
                        touched.push(h as u32);
                        let q = &mut unexpected[h];
                        match q.iter().position(|m| m.src == op.peer && m.tag == op.tag) {
                            Some(k) => {
                                let m = q.remove(k).expect("found");
                                if op.size > big {
                                    let src = m.src as usize;
                                    release(
                                        &on_done[m.op as usize],
                                        &mut pending,
                                        &mut ready,
                                        &rank_of,
                                    );
                                    touched.push(m.src);
                                    nexto[src] = nexto[src].max(t);
                                    nextgs[src] = nextgs[src].max(t);
                                    completed += 1;
                                }
                                release(&on_done[i as usize], &mut pending, &mut ready, &rank_of);
                                completed += 1;
                            }
                            None => posted[h].push_back(Queued {
                                src: op.peer,
                                tag: op.tag,
                                op: i,
                            }),
                        }
                    }
                }
            }
            Ev::Msg(i) => {
                let op = sched.ops[i as usize];
                let (h, src) = (op.peer as usize, rank_of[i as usize]);
                let free = nexto[h].max(nextgr[h]);
                if free <= t {
                    let s = s1(op.size);
                    nexto[h] = t + o + (s * ob).max(s * gb);
                    nextgr[h] = t + g + s * gb;
                    let q = &mut posted[h];
                    match q.iter().position(|r| r.src == src && r.tag == op.tag) {
                        Some(k) => {
                            let r = q.remove(k).expect("found");
                            if op.size > big {
                                release(&on_done[i as usize], &mut pending, &mut ready, &rank_of);
                                touched.push(src);
                                let s = src as usize;
                                nexto[s] = nexto[s].max(t);
                                nextgs[s] = nextgs[s].max(t);
                                completed += 1;
                            }
                            release(&on_done[r.op as usize], &mut pending, &mut ready, &rank_of);
                            completed += 1;
                            touched.push(h as u32);
                        }
                        None => unexpected[h].push_back(Queued {
                            src,
                            tag: op.tag,
                            op: i,
                        }),
                    }
                } else {
                    heap.push(Reverse((free, ts, ev)));
                }
            }
        }
        touched.sort_unstable();
        touched.dedup();
        for &h in &touched {
            let h = h as usize;
            let mut list = std::mem::take(&mut ready[h]);
            stdsort::sort(&mut list, &|a: &u32, b: &u32| {
                order(sched.ops[*a as usize].kind) < order(sched.ops[*b as usize].kind)
            });
            for &i in &list {
                let at = match sched.ops[i as usize].kind {
                    OpKind::Send => nexto[h].max(nextgs[h]),
                    _ => nexto[h],
                };
                heap.push(Reverse((at, stamp, Ev::Op(i))));
                stamp += 1;
            }
            list.clear();
            ready[h] = list;
        }
    }
    let (finish_rank, finish_ps) = nexto.iter().enumerate().fold(
        (0u32, 0u64),
        |(br, bt), (r, &t)| if t > bt { (r as u32, t) } else { (br, bt) },
    );
    OpReport {
        finish_ps,
        finish_rank,
        rank_finish_ps: nexto,
        events: stamp,
        unfinished: n - completed,
    }
}
