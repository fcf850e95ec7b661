//! The `flow` model: messages as flows sharing link bandwidth by max-min fairness (the
//! fluid model of SimGrid's CM02 family).
//!
//! A remote message between nodes `a != b` waits `lat + hops * hop` (its start-up), then
//! becomes a flow of `S` bytes over the directed links of the topology's route
//! ([`crate::Topology::next_hop`]). Each link has capacity `bw`; the active flows get the max-min
//! fair allocation (progressive filling: the most loaded link fixes its flows at an equal
//! share of what it has left, repeatedly, ties to the lowest link id). Allocations are
//! recomputed when a flow starts or ends, over the links and flows connected to it only
//! (a connected component of the flow-link graph); the others keep their rates. A message
//! arrives when its last byte has crossed. Between two PEs of one node: `lat_intra +
//! ceil(S / bw_intra)`, no sharing.
//!
//! Rates are `f64` (bytes per second) and remaining bytes too; completion times are rounded
//! to whole picoseconds, so event times stay integers. The next completion comes from a
//! re-prioritised set (`priority-queue`): the engine holds one wake-up event for the model at
//! a time, renewed (with a new generation number) when the earliest completion moves.
//!
//! **SimGrid's sharing** (`sharing=cm02` or `lv08`). SimGrid's CM02/LV08 models weight each
//! flow's share by the inverse of a *penalty* (TCP's RTT unfairness): the route's latency
//! `lat + H*hop` (before any factor) plus `weight_s / bw` per link crossed, or 1 when the
//! route has no latency. On a link, rates are proportional to 1/penalty. `lat_factor`
//! multiplies the start-up, `bw_factor` the rate at which a flow's bytes cross (its share of
//! the links is computed at full bandwidth, as SimGrid does). `cm02` uses factors 1 and
//! `weight_s = 0`; `lv08` uses 13.01, 0.97 and 20537 B. Either matches SimGrid with
//! `network/crosstraffic:0` and `network/TCP-gamma:1e30` (no TCP window), on the platform
//! [`crate::simgrid::platform_xml`] writes for the same machine.
//!
//! Closed forms (tested): a lone message takes `lat + H*hop + S/bw`; `n` equal flows starting
//! together on one link each get `bw/n`; with flows of unequal bottlenecks, max-min shares
//! (e.g. 1/3 on a link of three flows, 2/3 for the flow that shares only the other link).

use crate::{Delivery, Driving, MessageInfo, NetIo, NetStats, NetworkModel};
use priority_queue::PriorityQueue;
use sim_core::{Bandwidth, SimDuration, SimTime};
use std::cmp::Reverse;

/// How flows on a link share it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Sharing {
    /// Plain max-min fairness: equal shares on a bottleneck.
    #[default]
    MaxMin,
    /// SimGrid's CM02: shares weighted by 1/penalty (route latency + `weight_s`/bw per link).
    Cm02,
    /// SimGrid's LV08: CM02 weighting with its default factors (13.01, 0.97, 20537 B).
    Lv08,
}

impl std::fmt::Display for Sharing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Sharing::MaxMin => "maxmin",
            Sharing::Cm02 => "cm02",
            Sharing::Lv08 => "lv08",
        })
    }
}

impl std::str::FromStr for Sharing {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "maxmin" => Ok(Sharing::MaxMin),
            "cm02" => Ok(Sharing::Cm02),
            "lv08" => Ok(Sharing::Lv08),
            other => Err(format!(
                "`{other}` is not a sharing rule; use maxmin (plain max-min), cm02 or lv08 (SimGrid's models)"
            )),
        }
    }
}

/// One million: factors are held in millionths, so specs stay exact and comparable.
pub const PPM: u64 = 1_000_000;

/// Parameters of the `flow` model: the `hops` keys, the sharing rule and SimGrid's factors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowParams {
    /// Topology, latencies, bandwidths, PEs per node (as `hops`).
    pub net: crate::Hops,
    /// How a link's bandwidth is divided.
    pub sharing: Sharing,
    /// Factor on the start-up latency, in millionths (13.01 = 13_010_000).
    pub lat_factor_ppm: u64,
    /// Factor on the rate a flow's bytes cross at, in millionths (0.97 = 970_000).
    pub bw_factor_ppm: u64,
    /// SimGrid's `weight-S` in bytes: adds `weight_s / bw` per link to a flow's penalty.
    pub weight_s_bytes: u64,
}

impl FlowParams {
    /// The defaults of a sharing rule: (lat_factor, bw_factor, weight_s).
    pub fn defaults(sharing: Sharing) -> (u64, u64, u64) {
        match sharing {
            Sharing::MaxMin | Sharing::Cm02 => (PPM, PPM, 0),
            Sharing::Lv08 => (13_010_000, 970_000, 20537),
        }
    }
}

/// Event ids: a flow's start (`START | slot`), or a wake-up (generation, below `START`).
const START: u32 = 1 << 31;

#[derive(Debug, Default, Clone)]
struct Flow {
    token: u32,
    links: Vec<u64>,
    remaining: f64,
    rate: f64,
    /// When `remaining` was last brought up to date (ps).
    at_ps: u64,
    depart_ps: u64,
    /// Wire time alone (`lat + H*hop + S/bw`), for the queueing figure.
    alone_ps: u64,
    /// Sharing weight: 1 / penalty (1 under plain max-min).
    weight: f64,
    live: bool,
}

/// The `flow` model at run time.
#[derive(Debug)]
pub struct FlowModel {
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
    messages: u64,
}

impl FlowParams {
    /// The `flow` model with no flow active.
    pub fn flow_model(self) -> FlowModel {
        FlowModel {
            p: self,
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
            messages: 0,
        }
    }
}

impl FlowModel {
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

impl NetworkModel for FlowModel {
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
        self.messages += 1;
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.flows.push(Flow::default());
                self.mark_flow.push(0);
                (self.flows.len() - 1) as u32
            }
        };
        let mut links = std::mem::take(&mut self.flows[slot as usize].links);
        links.clear();
        self.p.net.topology.for_each_link(a, b, |l| links.push(l.0));
        let hops = links.len() as u64;
        let net = &self.p.net;
        let route_ps = net
            .latency
            .as_ps()
            .saturating_add(hops.saturating_mul(net.per_hop.as_ps()));
        let startup = scale_ppm(route_ps, self.p.lat_factor_ppm);
        let bw = self.bw();
        let weight = match self.p.sharing {
            Sharing::MaxMin => 1.0,
            // SimGrid: penalty = route latency + weight_S / bw per link; a route without
            // latency keeps penalty 1.
            Sharing::Cm02 | Sharing::Lv08 => {
                if route_ps == 0 {
                    1.0
                } else {
                    let penalty =
                        route_ps as f64 / 1e12 + hops as f64 * self.p.weight_s_bytes as f64 / bw;
                    1.0 / penalty
                }
            }
        };
        let cross_ps = if self.p.bw_factor_ppm == PPM {
            Bandwidth::transfer_time(net.bandwidth, msg.bytes).as_ps()
        } else {
            (msg.bytes as f64 / (bw * self.p.bw_factor_ppm as f64 / PPM as f64) * 1e12).round()
                as u64
        };
        let alone = startup.saturating_add(cross_ps);
        self.flows[slot as usize] = Flow {
            token,
            links,
            remaining: msg.bytes as f64,
            rate: 0.0,
            at_ps: 0,
            depart_ps: now.as_ps(),
            alone_ps: alone,
            weight,
            live: false,
        };
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
    fn stats(&self) -> Option<NetStats> {
        Some(NetStats {
            messages: self.messages,
            ..NetStats::default()
        })
    }
}

/// `ps * ppm / 10^6`, rounded to the nearest picosecond, saturating.
fn scale_ppm(ps: u64, ppm: u64) -> u64 {
    if ppm == PPM {
        return ps;
    }
    let v = (ps as u128 * ppm as u128 + PPM as u128 / 2) / PPM as u128;
    v.min(u64::MAX as u128) as u64
}

impl FlowModel {
    /// Flow `f` has delivered its last byte at `t`.
    fn finish(&mut self, f: u32, t: u64, io: &mut NetIo) {
        let links = std::mem::take(&mut self.flows[f as usize].links);
        for &l in &links {
            let v = &mut self.on_link[l as usize];
            if let Some(i) = v.iter().position(|&x| x == f) {
                v.swap_remove(i);
            }
        }
        let fl = &mut self.flows[f as usize];
        fl.links = links;
        fl.live = false;
        fl.remaining = 0.0;
        self.next.remove(&f);
        let wire = t.saturating_sub(fl.depart_ps);
        io.deliveries.push(Delivery {
            at: SimTime::from_ps(t),
            token: fl.token,
            wire: SimDuration::from_ps(wire),
            queueing: SimDuration::from_ps(wire.saturating_sub(fl.alone_ps)),
        });
        self.free.push(f);
    }
}
