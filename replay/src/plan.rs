//! Compiles a trace, a mapping, CPU speeds and the network model into flat arrays the event
//! loop walks.
//!
//! All per-block and per-message work that does not depend on simulated time happens here,
//! once: the PE of each block, scaled durations and send offsets, the dependents of each block
//! (inverse of its dependency lists), the consumer blocks of each send and, when the network
//! model's costs do not depend on time ([`NetworkModel::fixed_costs`]) or the replay uses
//! recorded delays, each delivery's arrival offset from the start of its sending block and
//! every message statistic. The loop then does no lookups, hashing or allocation per event.
//!
//! The plan describes one *iteration* of `B` blocks that the run repeats `K` times (a flat
//! trace is `K = 1`); block `i` of iteration `k` is global block `k * B + i`. A dependency may
//! reach back `lag` iterations (block `i` of iteration `k` waits for block `j` of iteration
//! `k - lag`, when `k >= lag`); messages stay within an iteration.

use crate::{
    CpuScale, EntryNetStats, Mapping, MessageStats, ReplayConfig, ReplayError, SchedPolicy,
};
use network_models::{MessageInfo, NetworkModel};
use sim_core::{Ratio, SimDuration};
use trace::{BlockId, Repeated, Trace};

/// "None" in the plan's `u32` fields.
pub(crate) const NIL: u32 = u32::MAX;
/// `Hot::iter` of a block with no iteration label.
pub(crate) const NO_ITER: u32 = u32::MAX;

/// What the loop reads when it starts, finishes or queues a block (24 bytes; `B + 1` entries,
/// the last one closing the ranges).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Hot {
    /// Fixed-cost plans: the block's whole CPU time (receive overhead + scaled duration + send
    /// overheads; for a varying block, everything but the duration). Otherwise: the scaled
    /// duration.
    pub dur_ps: u64,
    /// The PE it runs on.
    pub pe: u32,
    /// Its deliveries are `slots[slot_start..next.slot_start]` (or `mslots`).
    pub slot_start: u32,
    /// Its dependents are `deps[dep_start..next.dep_start]`.
    pub dep_start: u32,
    /// Index of its iteration label among the labels of one iteration, or [`NO_ITER`].
    pub iter: u32,
}

/// One delivery of a fixed-cost plan: a message reaching one consuming block.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Slot {
    /// The consuming block (same iteration as the sender).
    pub consumer: u32,
    /// Arrival minus the sending block's start (for a varying block, minus the send's offset
    /// too).
    pub delay_ps: u64,
}

/// One delivery, for plans that ask the network model message by message (32 bytes: all the
/// loop reads when the block starts and when the message departs).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MsgSlot {
    /// The consuming block (same iteration as the sender).
    pub consumer: u32,
    /// The consumer's PE.
    pub dst: u32,
    /// The sending block's PE.
    pub src: u32,
    /// The consuming block's entry method (for its network statistics).
    pub entry: u32,
    /// Scaled send offset.
    pub off_ps: u64,
    /// Payload size.
    pub bytes: u64,
}

/// A block that must finish before another starts: block `block` of iteration `k + lag`
/// waits for the finishing block of iteration `k`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Dep {
    pub block: u32,
    pub lag: u32,
}

/// How deliveries are timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// Every arrival is the sender's start plus a fixed offset (`Slot::delay_ps`).
    Fixed,
    /// The network model is asked per message (state, time-dependent costs, packets).
    PerMessage,
}

#[derive(Debug)]
pub(crate) struct Plan {
    /// OS noise (per-message delivery when active).
    pub noise: crate::Noise,
    pub pes: u32,
    /// Blocks per iteration (`B`).
    pub blocks: u32,
    /// Iterations (`K`).
    pub reps: u32,
    pub delivery: Delivery,
    /// Per block, plus a closing entry.
    pub hot: Vec<Hot>,
    /// Per block: its priority (empty under FIFO scheduling: all 0).
    pub prio: Vec<i32>,
    /// Network blocks, one bit per block (empty when the trace has none).
    pub network: Vec<u64>,
    /// Per block, plus a closing entry: its sends are `send_start[i]..send_start[i + 1]`
    /// (plans with varying blocks; empty otherwise).
    pub send_start: Vec<u32>,
    pub slots: Vec<Slot>,
    pub deps: Vec<Dep>,
    /// With bindings ([`ReplayConfig::bindings`]): per entry of `deps`, the finishing block's
    /// position in the dependent's dependency list (its own dependencies first, then the
    /// carried ones), which decides between dependencies that end at the same instant.
    pub dep_rank: Vec<u32>,
    /// Per-message plans: the deliveries, in the place of `slots`.
    pub mslots: Vec<MsgSlot>,
    /// Per block: the receive overhead its trigger costs (per-message plans with overheads).
    pub recv_oh: Vec<u64>,
    /// Unmet conditions of each block in an iteration after the first `max_lag` ones (the
    /// first iterations have nothing to wait for `lag` iterations back: their counts are
    /// lowered from `deps`).
    pub pending: Vec<u32>,
    /// The largest lag (0 for a flat trace).
    pub max_lag: u32,
    /// Some block needs nothing in steady state: every iteration has blocks ready at time 0.
    pub free_in_steady_state: bool,
    /// Per-iteration durations.
    pub var: Var,
    /// With recorded delays: blocks released at their recorded start (flat traces).
    pub releases: Vec<(u32, u64)>,
    /// With recorded order: the next block of the same recorded PE, or `NIL` (flat traces).
    pub chain_next: Vec<u32>,
    /// With object order: the next block of the same object, or `NIL` (flat traces); it waits
    /// for this one without inheriting its effective receive time.
    pub obj_next: Vec<u32>,
    /// Sorted distinct iteration labels of one iteration.
    pub iter_labels: Vec<u32>,
    /// Label of iteration `k`'s copy of label `l`: `l + k * iter_stride`.
    pub iter_stride: u32,
    /// Message statistics of the whole run (every send happens once per iteration).
    pub msgs: MessageStats,
    /// Network cost per entry of the whole run: counts and bytes always; wire time and
    /// overheads too for fixed-cost plans.
    pub entry_net: Vec<EntryNetStats>,
}

impl Plan {
    /// Plans `trace`, or, with `rep`, the repeated trace whose body it is.
    pub(crate) fn build(
        trace: &Trace,
        rep: Option<&Repeated>,
        cfg: &ReplayConfig,
        net: &mut dyn NetworkModel,
        progress: &mut dyn sim_core::Progress,
    ) -> Result<Plan, ReplayError> {
        let reps = rep.map_or(1, |r| r.reps());
        progress.stage("plan: blocks", trace.num_blocks() as u64, "blocks");
        let pes = cfg.pes.unwrap_or(trace.meta.recorded_pes);
        if pes == 0 {
            return Err(ReplayError::Config(
                "the machine needs at least one PE".into(),
            ));
        }
        if let CpuScale::PerPe(v) = &cfg.cpu_scale
            && v.len() != pes as usize
        {
            return Err(ReplayError::Config(format!(
                "{} CPU speed factors given for {pes} PEs",
                v.len()
            )));
        }
        let recorded = cfg.recorded_delays || net.uses_recorded_delays();
        let map = cfg.mapping.resolve(trace, pes)?;
        let n = trace.num_blocks();
        if n >= NIL as usize {
            return Err(ReplayError::Config(format!(
                "{n} blocks: the replay handles at most {} per iteration",
                NIL - 1
            )));
        }
        // Each block's recorded PE, when a load balancer moved objects in the recorded run.
        let recorded_pe = trace
            .has_recorded_moves()
            .then(|| trace.recorded_block_pes());
        let block_pe = block_pes(
            trace,
            &map,
            cfg.remap.as_ref(),
            pes,
            recorded_pe
                .as_deref()
                .filter(|_| matches!(cfg.mapping, Mapping::Recorded)),
        )?;

        let iter_labels = distinct_labels(
            trace
                .columns()
                .iteration
                .iter()
                .copied()
                .filter(|&i| i != trace::NO_ITERATION),
        );

        let all_sends = trace.all_sends();
        let send_block = trace.send_blocks();
        let cons = trace.consumers();
        let (cons_start, consumers, trigger_send) = (&cons.start, &cons.blocks, &cons.trigger_send);
        let scale_of = |pe: u32| -> Ratio { cfg.cpu_scale.of(pe) };
        // Blocks made faster or slower before the CPU scale (`ReplayConfig::block_scale`).
        let pre = Pre::new(trace, cfg);

        // Hot records (ranges filled below).
        let mut hot = Vec::with_capacity(n + 1);
        let mut entry: Vec<u32> = Vec::with_capacity(n);
        let mut prio = Vec::new();
        let mut pending = Vec::with_capacity(n);
        let network = network_bits(trace);
        let is_net =
            |b: usize| -> bool { !network.is_empty() && network[b / 64] >> (b % 64) & 1 != 0 };
        for id in trace.block_ids() {
            if id.0 & 0xf_ffff == 0 {
                progress.advance_to(id.0 as u64);
            }
            let b = trace.block(id);
            let pe = block_pe[id.index()];
            hot.push(Hot {
                // (A network block's duration is 0: the trace checks it.)
                dur_ps: scale_of(pe)
                    .scale(pre.apply(id.index(), b.duration))
                    .as_ps(),
                pe,
                slot_start: 0,
                dep_start: 0,
                iter: b.iteration.map_or(NO_ITER, |i| {
                    iter_labels.binary_search(&i).map_or(NO_ITER, |p| p as u32)
                }),
            });
            entry.push(b.entry.0);
            if cfg.policy == SchedPolicy::Priority {
                prio.push(b.priority);
            }
            let carried = rep.map_or(0, |r| r.carried(id).len()) as u32;
            pending.push(trace.deps(id).len() as u32 + carried + b.trigger.is_some() as u32);
        }
        hot.push(Hot::default());
        let var = Var::build(trace, rep, cfg)?;

        let mut chain_next = Vec::new();
        if cfg.recorded_order {
            chain_next = vec![NIL; n];
            // Network blocks run on no PE: they are not in any PE's chain.
            let mut order: Vec<(u32, u64, u32)> = trace
                .block_ids()
                .filter(|id| !is_net(id.index()))
                .map(|id| {
                    let b = trace.block(id);
                    let t = b.recorded_start.ok_or_else(|| {
                        ReplayError::Config(format!(
                            "recorded order needs recorded start times, but {id} has none"
                        ))
                    })?;
                    // An object that moved ran its blocks on several PEs.
                    let pe = match &recorded_pe {
                        Some(rec) => rec[id.index()],
                        None => trace.objects[b.object.index()].recorded_pe.0,
                    };
                    Ok((pe, t.as_ps(), id.0))
                })
                .collect::<Result<_, ReplayError>>()?;
            order.sort_unstable();
            for w in order.windows(2) {
                if w[0].0 == w[1].0 {
                    chain_next[w[0].2 as usize] = w[1].2;
                    pending[w[1].2 as usize] += 1;
                }
            }
        }
        let has_overheads = net.has_overheads();
        let trigger_src = |b: usize| -> u32 {
            match trigger_send[b] {
                NIL => NIL,
                s => block_pe[send_block[s as usize] as usize],
            }
        };
        // Receive overhead of each block whose trigger comes from another PE.
        let net_recv_oh = |b: usize, net: &dyn NetworkModel| -> u64 {
            let src = trigger_src(b);
            if !has_overheads || src == NIL || src == block_pe[b] || is_net(b) {
                return 0;
            }
            net.recv_overhead(&MessageInfo {
                src_pe: src,
                dst_pe: block_pe[b],
                bytes: all_sends[trigger_send[b] as usize].bytes,
            })
            .as_ps()
        };
        // The runtime's own costs on the PE (ReplayConfig::block_overhead, local_msg_cost),
        // paid at the start of the block like a receive overhead.
        let (block_oh, local_cost) = (cfg.block_overhead.as_ps(), cfg.local_msg_cost.as_ps());
        let runtime_oh = |b: usize| -> u64 {
            if is_net(b) {
                return 0;
            }
            let src = trigger_src(b);
            let local = if src != NIL && src == block_pe[b] {
                local_cost
            } else {
                0
            };
            block_oh.saturating_add(local)
        };
        let cpu_costs = has_overheads || block_oh > 0 || local_cost > 0;

        // Deliveries: fixed offsets when the model allows it (and no noise moves sends).
        if cfg.noise.is_active() && recorded {
            return Err(ReplayError::Config(
                "noise cannot be combined with recorded message delays".into(),
            ));
        }
        let delivery = if cfg.noise.is_active() {
            Delivery::PerMessage
        } else if recorded
            || fixed_probe(
                net,
                &block_pe,
                all_sends,
                &send_block,
                consumers,
                cons_start,
            )
        {
            Delivery::Fixed
        } else {
            Delivery::PerMessage
        };
        let recorded_wire = if recorded {
            Some(recorded_wire(
                trace,
                consumers,
                cons_start,
                &send_block,
                &pre,
            )?)
        } else {
            None
        };
        let mut msgs = MessageStats::default();
        let mut entry_net = vec![EntryNetStats::default(); trace.entries.len()];
        let mut slots = Vec::with_capacity(consumers.len());
        let mut mslots = Vec::new();
        let mut recv_ohs = Vec::new();
        progress.stage("plan: messages", n as u64, "blocks");
        for id in trace.block_ids() {
            if id.0 & 0xf_ffff == 0 {
                progress.advance_to(id.0 as u64);
            }
            let i = id.index();
            let pe = block_pe[i];
            let scale = scale_of(pe);
            let n_oh = net_recv_oh(i, net);
            if n_oh > 0 {
                entry_net[entry[i] as usize].overhead_ps += n_oh;
            }
            let r_oh = n_oh.saturating_add(runtime_oh(i));
            if delivery == Delivery::PerMessage && cpu_costs {
                recv_ohs.push(r_oh);
            }
            hot[i].slot_start = (slots.len() + mslots.len()) as u32;
            let mut cpu_total = 0u64;
            let varies = var.of(i) != NIL;
            for si in trace.send_range(id) {
                let s = &all_sends[si];
                let off = scale.scale(pre.apply(i, s.offset)).as_ps();
                // A varying block's send offsets are computed per iteration.
                let fixed_off = if varies { 0 } else { off };
                let (c0, c1) = (cons_start[si] as usize, cons_start[si + 1] as usize);
                if c0 == c1 {
                    msgs.unconsumed_sends += 1;
                }
                for (c, &consumer) in consumers.iter().enumerate().take(c1).skip(c0) {
                    let dst = block_pe[consumer as usize];
                    let es = &mut entry_net[entry[consumer as usize] as usize];
                    if dst == pe {
                        msgs.local += 1;
                        msgs.local_bytes += s.bytes;
                    } else {
                        msgs.remote += 1;
                        msgs.remote_bytes += s.bytes;
                        es.messages += 1;
                        es.bytes += s.bytes;
                    }
                    let delay_ps = match (delivery, &recorded_wire) {
                        (Delivery::PerMessage, _) => {
                            mslots.push(MsgSlot {
                                consumer,
                                dst,
                                src: pe,
                                entry: entry[consumer as usize],
                                off_ps: off,
                                bytes: s.bytes,
                            });
                            continue;
                        }
                        (Delivery::Fixed, Some(rw)) => {
                            let wire = rw[c];
                            if dst != pe {
                                es.wire_ps += wire;
                            }
                            sum(&[r_oh, fixed_off, wire])?
                        }
                        (Delivery::Fixed, None) if dst == pe => sum(&[r_oh, fixed_off, cpu_total])?,
                        (Delivery::Fixed, None) => {
                            let info = MessageInfo {
                                src_pe: pe,
                                dst_pe: dst,
                                bytes: s.bytes,
                            };
                            let fc = net.fixed_costs(&info, reps as u64).ok_or_else(|| {
                                ReplayError::Config(
                                    "the network model gave fixed costs for some messages only"
                                        .into(),
                                )
                            })?;
                            // A network block spends no CPU on its sends.
                            let cpu = if has_overheads && !is_net(i) {
                                fc.send_cpu.as_ps()
                            } else {
                                0
                            };
                            cpu_total = sum(&[cpu_total, cpu])?;
                            es.overhead_ps += cpu;
                            es.wire_ps += fc.wire.as_ps();
                            sum(&[r_oh, fixed_off, cpu_total, fc.wire.as_ps()])?
                        }
                    };
                    slots.push(Slot { consumer, delay_ps });
                }
            }
            if delivery == Delivery::Fixed {
                // Varying blocks: what they add to their per-iteration duration.
                let d = if varies { 0 } else { hot[i].dur_ps };
                hot[i].dur_ps = sum(&[r_oh, d, cpu_total])?;
            }
        }
        hot[n].slot_start = (slots.len() + mslots.len()) as u32;

        // Dependents: inverse of the dependency lists, same-iteration ones first (by block),
        // then carried ones by (lag, block): the order of the expansion's block ids.
        let mut dep_count = vec![0u32; n + 1];
        for d in trace.all_deps() {
            dep_count[d.index()] += 1;
        }
        let mut max_lag = 0;
        if let Some(r) = rep {
            for c in r.all_carried() {
                dep_count[c.block.index()] += 1;
                max_lag = max_lag.max(c.lag);
            }
        }
        let mut start = 0u32;
        for (b, h) in hot.iter_mut().enumerate() {
            h.dep_start = start;
            start += dep_count.get(b).copied().unwrap_or(0);
        }
        drop(dep_count);
        let mut fill: Vec<u32> = hot.iter().map(|h| h.dep_start).collect();
        let mut deps = vec![Dep::default(); start as usize];
        let ranked = cfg.timeline || cfg.bindings;
        let mut dep_rank = if ranked {
            vec![0u32; start as usize]
        } else {
            Vec::new()
        };
        for id in trace.block_ids() {
            for (j, d) in trace.deps(id).iter().enumerate() {
                let at = fill[d.index()] as usize;
                deps[at] = Dep {
                    block: id.0,
                    lag: 0,
                };
                if ranked {
                    dep_rank[at] = j as u32;
                }
                fill[d.index()] += 1;
            }
        }
        if let Some(r) = rep {
            // One pass per lag keeps the order (lag, block) without sorting.
            for lag in 1..=max_lag {
                for id in trace.block_ids() {
                    let own = trace.deps(id).len() as u32;
                    for (j, c) in r
                        .carried(id)
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| c.lag == lag)
                    {
                        let on = c.block.index();
                        let at = fill[on] as usize;
                        deps[at] = Dep { block: id.0, lag };
                        if ranked {
                            dep_rank[at] = own + j as u32;
                        }
                        fill[on] += 1;
                    }
                }
            }
        }
        drop(fill);

        let mut obj_next = Vec::new();
        if cfg.object_order.unwrap_or(trace.meta.sequential_objects) {
            obj_next = vec![NIL; n];
            let mut last = vec![NIL; trace.objects.len()];
            // Network blocks and the blocks of entries outside object order (message
            // handlers that only take a message in) run whenever they can.
            let outside: Vec<bool> = trace
                .entries
                .iter()
                .map(|e| e.outside_object_order)
                .collect();
            for id in trace.block_ids().filter(|id| !is_net(id.index())) {
                if outside[trace.block(id).entry.index()] {
                    continue;
                }
                let o = trace.block(id).object.index();
                if last[o] != NIL {
                    obj_next[last[o] as usize] = id.0;
                    pending[id.index()] += 1;
                }
                last[o] = id.0;
            }
        }
        let mut releases = Vec::new();
        if recorded {
            for id in trace.block_ids() {
                let b = trace.block(id);
                if b.trigger.is_none()
                    && trace.deps(id).is_empty()
                    && let Some(t) = b.recorded_start
                    && t.as_ps() > 0
                {
                    releases.push((id.0, t.as_ps()));
                }
            }
        }
        let mut send_start = Vec::new();
        if var.count > 0 {
            send_start.extend(
                trace
                    .block_ids()
                    .map(|id| trace.send_range(id).start as u32),
            );
            send_start.push(all_sends.len() as u32);
        }
        drop(entry);
        if reps > 1 {
            msgs = msgs.times(reps as u64);
            for e in &mut entry_net {
                *e = e.times(reps as u64);
            }
        }
        Ok(Plan {
            noise: cfg.noise.clone(),
            pes,
            blocks: n as u32,
            reps,
            delivery,
            hot,
            prio,
            network,
            send_start,
            slots,
            deps,
            dep_rank,
            mslots,
            recv_oh: recv_ohs,
            free_in_steady_state: pending.contains(&0),
            pending,
            max_lag,
            var,
            releases,
            chain_next,
            obj_next,
            iter_labels,
            iter_stride: rep.map_or(0, |r| r.iter_stride()),
            msgs,
            entry_net,
        })
    }

    /// The consumer of delivery `s`.
    pub(crate) fn consumer(&self, s: usize) -> u32 {
        match self.delivery {
            Delivery::Fixed => self.slots[s].consumer,
            Delivery::PerMessage => self.mslots[s].consumer,
        }
    }

    /// Whether block `i` is a network block (it runs on no PE).
    #[inline]
    pub(crate) fn is_net(&self, i: u32) -> bool {
        !self.network.is_empty() && self.network[i as usize / 64] >> (i % 64) & 1 != 0
    }

    /// Priority of block `i` (0 under FIFO scheduling).
    #[inline]
    pub(crate) fn prio(&self, i: u32) -> i32 {
        self.prio.get(i as usize).copied().unwrap_or(0)
    }

    /// Blocks in the whole run.
    pub(crate) fn total_blocks(&self) -> u64 {
        self.blocks as u64 * self.reps as u64
    }
}

/// Blocks whose duration (and end-anchored send offsets) change from iteration to iteration.
#[derive(Debug, Default)]
pub(crate) struct Var {
    /// Per block: its index among the varying blocks, or `NIL` (empty: no block varies).
    of: Vec<u32>,
    /// Varying blocks.
    pub count: usize,
    /// `raw_ps[k * count + v]`: recorded duration of varying block `v` in iteration `k`.
    pub raw_ps: Vec<u64>,
    /// Per send: unscaled offset, or, with [`ANCHORED`], unscaled distance before the end.
    pub send: Vec<u64>,
    /// `send_slots[s]..send_slots[s + 1]`: the deliveries of send `s`.
    pub send_slots: Vec<u32>,
    /// CPU factors (per PE).
    pub scale: CpuScale,
}

/// [`ReplayConfig::block_scale`] on a trace's blocks.
struct Pre<'t> {
    scale: Option<&'t crate::BlockScale>,
    cols: &'t trace::BlockColumns,
}

impl<'t> Pre<'t> {
    fn new(trace: &'t Trace, cfg: &'t ReplayConfig) -> Pre<'t> {
        Pre {
            scale: cfg.block_scale.as_ref(),
            cols: trace.columns(),
        }
    }
    fn active(&self) -> bool {
        self.scale.is_some()
    }
    /// `d` (a duration or send offset of block `b`), scaled when `b` is hit.
    #[inline]
    fn apply(&self, b: usize, d: SimDuration) -> SimDuration {
        match self.scale {
            Some(s) if s.hits(self.cols.entry[b], self.cols.object[b]) => s.by.scale(d),
            _ => d,
        }
    }
}

/// [`Var::send`] flag: the offset is measured back from the block's end.
pub(crate) const ANCHORED: u64 = 1 << 63;

impl Var {
    fn build(
        trace: &Trace,
        rep: Option<&Repeated>,
        cfg: &ReplayConfig,
    ) -> Result<Var, ReplayError> {
        let Some(v) = rep.map(|r| r.varying()).filter(|v| !v.blocks.is_empty()) else {
            return Ok(Var::default());
        };
        let mut of = vec![NIL; trace.num_blocks()];
        for (p, &b) in v.blocks.iter().enumerate() {
            of[b as usize] = p as u32;
        }
        let durs = &trace.columns().duration_ps;
        let sender = trace.send_blocks();
        let pre = Pre::new(trace, cfg);
        let send = trace
            .all_sends()
            .iter()
            .enumerate()
            .map(|(s, send)| {
                let b = sender[s] as usize;
                let off = pre.apply(b, send.offset).as_ps();
                if v.end_anchored.get(s) == Some(&1) {
                    (pre.apply(b, SimDuration::from_ps(durs[b])).as_ps() - off) | ANCHORED
                } else {
                    off
                }
            })
            .collect();
        let mut raw_ps = v.durations_ps.clone();
        if pre.active() {
            let count = v.blocks.len();
            for (k, d) in raw_ps.iter_mut().enumerate() {
                *d = pre
                    .apply(v.blocks[k % count] as usize, SimDuration::from_ps(*d))
                    .as_ps();
            }
        }
        Ok(Var {
            of,
            count: v.blocks.len(),
            raw_ps,
            send,
            send_slots: trace.consumers().start.clone(),
            scale: cfg.cpu_scale.clone(),
        })
    }

    /// Index of block `i` among the varying blocks, or `NIL`.
    #[inline]
    pub(crate) fn of(&self, i: usize) -> u32 {
        self.of.get(i).copied().unwrap_or(NIL)
    }

    /// Scaled duration of varying block `v` (on `pe`) in iteration `k`, and the unscaled one.
    #[inline]
    pub(crate) fn duration(&self, k: u32, v: u32, pe: u32) -> (u64, u64) {
        let raw = self.raw_ps[k as usize * self.count + v as usize];
        (
            self.scale.of(pe).scale(SimDuration::from_ps(raw)).as_ps(),
            raw,
        )
    }

    /// Scaled offset of send `s` of a varying block whose unscaled duration is `raw`.
    #[inline]
    pub(crate) fn offset(&self, s: usize, raw: u64, pe: u32) -> u64 {
        let x = self.send[s];
        let off = if x & ANCHORED != 0 {
            raw.saturating_sub(x & !ANCHORED)
        } else {
            x
        };
        self.scale.of(pe).scale(SimDuration::from_ps(off)).as_ps()
    }
}

/// One bit per block of `trace`: whether it is a network block (empty when none is).
fn network_bits(trace: &Trace) -> Vec<u64> {
    let flags = &trace.columns().flags;
    if !flags.iter().any(|f| f & trace::FLAG_NETWORK != 0) {
        return Vec::new();
    }
    let mut bits = vec![0u64; flags.len().div_ceil(64)];
    for (b, f) in flags.iter().enumerate() {
        if f & trace::FLAG_NETWORK != 0 {
            bits[b / 64] |= 1 << (b % 64);
        }
    }
    bits
}

/// The sorted distinct values of `labels` (which usually come in long runs of one value).
pub(crate) fn distinct_labels(labels: impl Iterator<Item = u32>) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::new();
    let mut limit = 4096;
    for l in labels {
        if out.last() != Some(&l) {
            out.push(l);
            if out.len() > limit {
                out.sort_unstable();
                out.dedup();
                limit = 2 * out.len() + 4096;
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Checked sum of picosecond values.
fn sum(parts: &[u64]) -> Result<u64, ReplayError> {
    parts
        .iter()
        .try_fold(0u64, |a, &b| a.checked_add(b))
        .ok_or(ReplayError::Sched(sim_core::SchedError::Overflow))
}

/// Whether the model gives fixed costs (asks about the first remote delivery, counting it 0
/// times). A trace without remote deliveries never asks the model anything.
fn fixed_probe(
    net: &mut dyn NetworkModel,
    block_pe: &[u32],
    sends: &[trace::Send],
    send_block: &[u32],
    consumers: &[u32],
    cons_start: &[u32],
) -> bool {
    for (s, send) in sends.iter().enumerate() {
        let src = block_pe[send_block[s] as usize];
        for &c in &consumers[cons_start[s] as usize..cons_start[s + 1] as usize] {
            let dst = block_pe[c as usize];
            if src != dst {
                let info = MessageInfo {
                    src_pe: src,
                    dst_pe: dst,
                    bytes: send.bytes,
                };
                return net.fixed_costs(&info, 0).is_some();
            }
        }
    }
    true
}

/// The PE of every block: its object's PE under `map`, or under the remap after the object's
/// switch block. Under the recorded mapping and without a remap, `recorded` (each block's
/// recorded PE, when objects moved in the recorded run) places each block where it ran.
fn block_pes(
    trace: &Trace,
    map: &[u32],
    remap: Option<&crate::Remap>,
    pes: u32,
    recorded: Option<&[u32]>,
) -> Result<Vec<u32>, ReplayError> {
    if let (None, Some(rec)) = (remap, recorded) {
        return Ok(rec
            .iter()
            .map(|&pe| crate::config::recorded_on(pe, trace, pes))
            .collect());
    }
    let Some(r) = remap else {
        return Ok(trace
            .columns()
            .object
            .iter()
            .map(|&o| map[o as usize])
            .collect());
    };
    r.check(trace, pes)?;
    Ok(trace
        .block_ids()
        .map(|id| {
            let o = trace.block(id).object.index();
            match r.switch_after[o] {
                Some(s) if id > s => r.map[o],
                _ => map[o],
            }
        })
        .collect())
}

/// The recorded delay of every (send, consumer) pair: the consumer's recorded arrival minus
/// the recorded send time (sender's recorded start + offset), floored at 0.
fn recorded_wire(
    trace: &Trace,
    consumers: &[u32],
    cons_start: &[u32],
    send_block: &[u32],
    pre: &Pre<'_>,
) -> Result<Vec<u64>, ReplayError> {
    let sends = trace.all_sends();
    let mut out = vec![0u64; consumers.len()];
    for (si, s) in sends.iter().enumerate() {
        let sender = BlockId(send_block[si]);
        let Some(start) = trace.block(sender).recorded_start else {
            return Err(ReplayError::Config(format!(
                "recorded delays need recorded start times, but {sender} (which sends {}) has none",
                s.msg
            )));
        };
        let sent = start.saturating_add(pre.apply(sender.index(), s.offset));
        for slot in cons_start[si]..cons_start[si + 1] {
            let c = BlockId(consumers[slot as usize]);
            let Some(arrival) = trace.block(c).recorded_arrival else {
                return Err(ReplayError::Config(format!(
                    "recorded delays need recorded arrival times, but {c} (triggered by {}) has none",
                    s.msg
                )));
            };
            out[slot as usize] = arrival.saturating_since(sent).as_ps();
        }
    }
    Ok(out)
}
