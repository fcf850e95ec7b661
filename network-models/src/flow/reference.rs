//! The `flow` model as first written (a full re-solve of the component at every start and
//! end, the bottleneck found by a linear scan): the oracle the tests compare the solver with.

use super::{Flow, FlowParams, PPM, end_flow};
use crate::{Driving, MessageInfo, NetIo, NetworkModel};
use priority_queue::PriorityQueue;
use sim_core::{SimDuration, SimTime};
use std::cmp::Reverse;

/// Event ids: a flow's start (`START | slot`), or a wake-up (generation, below `START`).
const START: u32 = 1 << 31;

/// The `flow` model as it was before the batched solver: every start and end re-solves its
/// component at once, with a linear scan for the bottleneck (the oracle of the tests).
#[derive(Debug)]
pub(crate) struct OldFlowModel {
    p: FlowParams,
    /// Per directed link: the active flows on it.
    on_link: Vec<Vec<u32>>,
    flows: Vec<Flow>,
    free: Vec<u32>,
    next: PriorityQueue<u32, Reverse<u64>>,
    /// The generation of the one wake-up event that counts, and its time.
    generation: u32,
    wake_ps: u64,
    // Scratch for recomputation.
    comp_links: Vec<u64>,
    comp_flows: Vec<u32>,
    stack: Vec<u64>,
    cap: Vec<f64>,
    unfixed: Vec<u32>,
    wsum: Vec<f64>,
    seeds: Vec<u64>,
    mark_link: Vec<u32>,
    mark_flow: Vec<u32>,
    stamp: u32,
}

impl OldFlowModel {
    fn bw(&self) -> f64 {
        self.p.net.bandwidth.bytes_per_s() as f64
    }

    /// Brings every flow of the component of the links in `self.seeds` up to `now`,
    /// recomputes their max-min rates and their predicted completions. Scratch buffers live in
    /// the model: no allocation once warm.
    fn recompute(&mut self, now: u64) {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.mark_link.iter_mut().for_each(|m| *m = 0);
            self.mark_flow.iter_mut().for_each(|m| *m = 0);
            self.stamp = 1;
        }
        let st = self.stamp;
        self.comp_links.clear();
        self.comp_flows.clear();
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        for &l in &self.seeds {
            if self.mark_link[l as usize] != st {
                self.mark_link[l as usize] = st;
                stack.push(l);
            }
        }
        while let Some(l) = stack.pop() {
            self.comp_links.push(l);
            for &f in &self.on_link[l as usize] {
                if self.mark_flow[f as usize] != st {
                    self.mark_flow[f as usize] = st;
                    self.comp_flows.push(f);
                    for &l2 in &self.flows[f as usize].links {
                        if self.mark_link[l2 as usize] != st {
                            self.mark_link[l2 as usize] = st;
                            stack.push(l2);
                        }
                    }
                }
            }
        }
        self.stack = stack;
        self.comp_links.sort_unstable();
        self.comp_flows.sort_unstable();
        // Bytes sent since the last update, at the old rates.
        for &f in &self.comp_flows {
            let fl = &mut self.flows[f as usize];
            let dt = now.saturating_sub(fl.at_ps) as f64 / 1e12;
            fl.remaining = (fl.remaining - fl.rate * dt).max(0.0);
            fl.at_ps = now;
            fl.rate = -1.0; // unfixed
        }
        // Progressive filling, weighted: on each link the unfixed flows share what is left in
        // proportion to their weights; the link with the smallest share per unit of weight
        // fixes its flows first (ties: lowest link id).
        let bw = self.bw();
        let (mut cap, mut unfixed, mut wsum) = (
            std::mem::take(&mut self.cap),
            std::mem::take(&mut self.unfixed),
            std::mem::take(&mut self.wsum),
        );
        cap.clear();
        cap.resize(self.comp_links.len(), bw);
        unfixed.clear();
        wsum.clear();
        for &l in &self.comp_links {
            let on = &self.on_link[l as usize];
            unfixed.push(on.len() as u32);
            wsum.push(on.iter().map(|&f| self.flows[f as usize].weight).sum());
        }
        loop {
            let mut best: Option<(f64, usize)> = None;
            for (i, &n) in unfixed.iter().enumerate() {
                if n > 0 {
                    let share = cap[i] / wsum[i];
                    if best.is_none_or(|(b, _)| share < b) {
                        best = Some((share, i));
                    }
                }
            }
            let Some((share, i)) = best else { break };
            let l = self.comp_links[i];
            for k in 0..self.on_link[l as usize].len() {
                let f = self.on_link[l as usize][k];
                if self.flows[f as usize].rate >= 0.0 {
                    continue;
                }
                let w = self.flows[f as usize].weight;
                let rate = share * w;
                self.flows[f as usize].rate = rate;
                for &l2 in &self.flows[f as usize].links {
                    let j = self
                        .comp_links
                        .binary_search(&l2)
                        .expect("in the component");
                    cap[j] = (cap[j] - rate).max(0.0);
                    unfixed[j] -= 1;
                    wsum[j] = if unfixed[j] == 0 { 0.0 } else { wsum[j] - w };
                }
            }
        }
        // Bytes cross at the allocation times the bandwidth factor.
        let factor = self.p.bw_factor_ppm as f64 / PPM as f64;
        if self.p.bw_factor_ppm != PPM {
            for &f in &self.comp_flows {
                self.flows[f as usize].rate *= factor;
            }
        }
        for &f in &self.comp_flows {
            let fl = &self.flows[f as usize];
            let left_ps = if fl.rate > 0.0 {
                (fl.remaining / fl.rate * 1e12).round() as u64
            } else {
                u64::MAX / 4
            };
            self.next.push(f, Reverse(now.saturating_add(left_ps)));
        }
        self.cap = cap;
        self.unfixed = unfixed;
        self.wsum = wsum;
    }

    /// Makes sure the engine will wake the model at the earliest predicted completion.
    fn arm(&mut self, io: &mut NetIo) {
        if let Some((_, Reverse(t))) = self.next.peek()
            && *t != self.wake_ps
        {
            self.generation = (self.generation + 1) % START;
            self.wake_ps = *t;
            io.events.push((SimTime::from_ps(*t), self.generation));
        }
    }

    fn link_slot(&mut self, l: u64) {
        let need = l as usize + 1;
        if self.on_link.len() < need {
            self.on_link.resize_with(need, Vec::new);
            self.mark_link.resize(need, 0);
        }
    }
}

impl NetworkModel for OldFlowModel {
    fn wire_time(&mut self, _msg: &MessageInfo, _depart: SimTime) -> SimDuration {
        unreachable!("the flow model is event-driven")
    }
    fn driving(&self) -> Driving {
        Driving::EventDriven
    }
    fn check_pes(&self, pes: u32) -> Result<(), String> {
        crate::hops::check_fit(&self.p.net.topology, self.p.net.pes_per_node, pes)
    }
    fn start_message(&mut self, now: SimTime, msg: &MessageInfo, token: u32, io: &mut NetIo) {
        let Some((a, b)) = crate::nodes_or_deliver(
            self.p.net.pes_per_node,
            self.p.net.intra_latency,
            self.p.net.intra_bandwidth,
            now,
            msg,
            token,
            io,
        ) else {
            return;
        };
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.flows.push(Flow::default());
                self.mark_flow.push(0);
                (self.flows.len() - 1) as u32
            }
        };
        let links = std::mem::take(&mut self.flows[slot as usize].links);
        let (flow, startup) = self.p.new_flow(a, b, now, msg, token, links);
        self.flows[slot as usize] = flow;
        io.events.push((
            now.saturating_add(SimDuration::from_ps(startup)),
            START | slot,
        ));
    }
    fn handle_event(&mut self, now: SimTime, event: u32, io: &mut NetIo) {
        let t = now.as_ps();
        if event & START != 0 {
            let f = event & !START;
            let links = std::mem::take(&mut self.flows[f as usize].links);
            for &l in &links {
                self.link_slot(l);
                self.on_link[l as usize].push(f);
            }
            {
                let fl = &mut self.flows[f as usize];
                fl.links = links;
                fl.at_ps = t;
                fl.live = true;
            }
            if self.flows[f as usize].links.is_empty() || self.flows[f as usize].remaining == 0.0 {
                self.finish(f, t, io);
            } else {
                self.seeds.clear();
                self.seeds.extend_from_slice(&self.flows[f as usize].links);
                self.recompute(t);
            }
            self.arm(io);
            return;
        }
        if event != self.generation || t != self.wake_ps {
            return; // superseded
        }
        self.wake_ps = u64::MAX;
        let mut seeds = std::mem::take(&mut self.seeds);
        seeds.clear();
        while let Some((_, Reverse(at))) = self.next.peek() {
            if *at > t {
                break;
            }
            let (f, _) = self.next.pop().expect("peeked");
            for &l in &self.flows[f as usize].links {
                seeds.push(l);
            }
            self.finish(f, t, io);
        }
        seeds.sort_unstable();
        seeds.dedup();
        seeds.retain(|&l| !self.on_link[l as usize].is_empty());
        let any = !seeds.is_empty();
        self.seeds = seeds;
        if any {
            self.recompute(t);
        }
        self.arm(io);
    }
}

impl OldFlowModel {
    pub(crate) fn new(p: FlowParams) -> Self {
        OldFlowModel {
            p,
            on_link: Vec::new(),
            flows: Vec::new(),
            free: Vec::new(),
            next: PriorityQueue::new(),
            generation: 0,
            wake_ps: u64::MAX,
            comp_links: Vec::new(),
            comp_flows: Vec::new(),
            stack: Vec::new(),
            cap: Vec::new(),
            unfixed: Vec::new(),
            wsum: Vec::new(),
            seeds: Vec::new(),
            mark_link: Vec::new(),
            mark_flow: Vec::new(),
            stamp: 0,
        }
    }
}

impl OldFlowModel {
    /// Flow `f` has delivered its last byte at `t`.
    fn finish(&mut self, f: u32, t: u64, io: &mut NetIo) {
        end_flow(&mut self.on_link, &mut self.flows[f as usize], f, t, io);
        self.next.remove(&f);
        self.free.push(f);
    }
}
