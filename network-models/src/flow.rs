//! The `flow` model: messages as flows sharing link bandwidth by max-min fairness (the
//! fluid model of SimGrid's CM02 family).
//!
//! A remote message between nodes `a != b` waits `lat + hops * hop` (its start-up), then
//! becomes a flow of `S` bytes over the directed links of the topology's route
//! ([`crate::Topology::next_hop`]). Each link has capacity `bw`; the active flows get the max-min
//! fair allocation (progressive filling: the most loaded link fixes its flows at an equal
//! share of what it has left, repeatedly, ties to the lowest link id). A message arrives when
//! its last byte has crossed. Between two PEs of one node: `lat_intra + ceil(S / bw_intra)`, no
//! sharing.
//!
//! **Solving.** Starts and ends only mark their links; one `SOLVE` event per time step (queued
//! at the first change) re-solves the connected components of the flow-link graph that hold a
//! marked link, once, however many flows started or ended at that instant. The others keep
//! their rates. A wake-up that finds changes of its own time step not yet solved solves them
//! first (as if each start had been solved when it happened). Within a component, progressive
//! filling takes the bottleneck from an indexed heap of links (a scan below [`SCAN_LINKS`]
//! links); the arithmetic and its order are those of a re-solve at every change, so arrivals
//! are the same to the picosecond (tested against that re-solve, kept as the tests' oracle).
//!
//! Rates are `f64` (bytes per second) and remaining bytes too; completion times are rounded
//! to whole picoseconds, so event times stay integers. The next completion comes from an
//! indexed heap of flow slots (`completions`, with the tie order of the `priority-queue`
//! crate it replaced: flows ending at one picosecond are reported in that order); the
//! engine holds one wake-up event for the model at
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
use sim_core::{Bandwidth, SimDuration, SimTime};

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

/// Event ids: a flow's start (`START | slot`), the batched solve of a time step (`SOLVE`),
/// or a wake-up (generation, below `SOLVE`).
const START: u32 = 1 << 31;
const SOLVE: u32 = START - 1;

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

/// Components with at most this many links find each bottleneck by a scan (cheaper than the
/// heap's pushes when there are few links).
pub const SCAN_LINKS: usize = 64;

/// An indexed binary min-heap of a component's links (by index into `comp_links`), ordered
/// by share (`f64::total_cmp`) then index, i.e. then link id: one entry per link, moved in
/// place when its share changes.
#[derive(Debug, Default)]
struct LinkHeap {
    order: Vec<u32>,
    /// Per link index, its place in `order` (`NOT_IN` when absent).
    at: Vec<u32>,
}

const NOT_IN: u32 = u32::MAX;

/// Bytes per link slot: its list of flows (24), its marks and places in the solver's
/// scratch (12), and the heap's index (4).
const LINK_SLOT_BYTES: u64 = 40;
/// Bytes per flow in flight: its record (~90), its route (8 per hop) and its entries on the
/// links (4 per hop) for a route of about 10 hops, its completion-heap entry and place (~20).
const FLOW_BYTES: u64 = 230;
/// The solver's scratch and the allocator's slack as flows come and go: 540 bytes per flow
/// in flight, up to 16 MiB (measured: halos of 2,000 to 36,000 ranks on tori, estimate 0.94
/// to 1.20 times the peak in the memory test; it was 24 MiB and 270 bytes a flow before the
/// completions left the hashed priority queue).
const SLACK_PER_FLOW_BYTES: u64 = 540;
const SLACK_MAX_BYTES: u64 = 16 << 20;

impl LinkHeap {
    fn clear(&mut self, n: usize) {
        self.order.clear();
        self.at.clear();
        self.at.resize(n, NOT_IN);
    }
    #[inline]
    fn less(s: &[f64], a: u32, b: u32) -> bool {
        match s[a as usize].total_cmp(&s[b as usize]) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Greater => false,
            std::cmp::Ordering::Equal => a < b,
        }
    }
    fn push(&mut self, s: &[f64], i: u32) {
        self.at[i as usize] = self.order.len() as u32;
        self.order.push(i);
        self.up(s, self.order.len() - 1);
    }
    /// The first link, removed.
    fn pop(&mut self, s: &[f64]) -> Option<u32> {
        let first = *self.order.first()?;
        self.remove(s, first);
        Some(first)
    }
    fn remove(&mut self, s: &[f64], i: u32) {
        let p = self.at[i as usize];
        if p == NOT_IN {
            return;
        }
        self.at[i as usize] = NOT_IN;
        let last = self.order.pop().expect("non-empty");
        if last != i {
            self.order[p as usize] = last;
            self.at[last as usize] = p;
            self.up(s, p as usize);
            self.down(s, self.at[last as usize] as usize);
        }
    }
    /// Link `i`'s share has changed.
    fn update(&mut self, s: &[f64], i: u32) {
        let p = self.at[i as usize];
        if p != NOT_IN {
            self.up(s, p as usize);
            self.down(s, self.at[i as usize] as usize);
        }
    }
    fn up(&mut self, s: &[f64], mut p: usize) {
        let x = self.order[p];
        while p > 0 {
            let q = (p - 1) / 2;
            let y = self.order[q];
            if !Self::less(s, x, y) {
                break;
            }
            self.order[p] = y;
            self.at[y as usize] = p as u32;
            p = q;
        }
        self.order[p] = x;
        self.at[x as usize] = p as u32;
    }
    fn down(&mut self, s: &[f64], mut p: usize) {
        let x = self.order[p];
        let n = self.order.len();
        loop {
            let mut c = 2 * p + 1;
            if c >= n {
                break;
            }
            if c + 1 < n && Self::less(s, self.order[c + 1], self.order[c]) {
                c += 1;
            }
            let y = self.order[c];
            if !Self::less(s, y, x) {
                break;
            }
            self.order[p] = y;
            self.at[y as usize] = p as u32;
            p = c;
        }
        self.order[p] = x;
        self.at[x as usize] = p as u32;
    }
}

/// The `flow` model at run time.
#[derive(Debug)]
pub struct FlowModel {
    p: FlowParams,
    /// Per directed link: the active flows on it.
    on_link: Vec<Vec<u32>>,
    /// Per directed link: the sum of its flows' weights (in `on_link`'s order), and whether
    /// its flows changed since that sum was taken.
    link_wsum: Vec<f64>,
    wsum_stale: Vec<bool>,
    flows: Vec<Flow>,
    free: Vec<u32>,
    next: Completions,
    /// The generation of the one wake-up event that counts, and its time.
    generation: u32,
    wake_ps: u64,
    /// Links of the flows that started or ended since the last solve (with repeats).
    seeds: Vec<u64>,
    /// A `SOLVE` event is queued for the current time.
    solve_queued: bool,
    // Scratch for solving.
    comp_links: Vec<u64>,
    comp_flows: Vec<u32>,
    stack: Vec<u64>,
    cap: Vec<f64>,
    unfixed: Vec<u32>,
    wsum: Vec<f64>,
    /// Per link, its index in `comp_links` (valid where `mark_link` is the current stamp).
    pos: Vec<u32>,
    /// The component's links with unfixed flows, by share then index.
    heap: LinkHeap,
    /// Per link of the component, its unfixed flows' share per unit of weight.
    shares: Vec<f64>,
    /// Links (indices in `comp_links`) touched by the current filling step, and per link the
    /// step that last touched it.
    touched: Vec<u32>,
    touch_step: Vec<u32>,
    mark_link: Vec<u32>,
    mark_flow: Vec<u32>,
    stamp: u32,
    messages: u64,
    hop_bytes: u64,
    stats: SolveStats,
}

/// Counters of the solver's work (for tests and tuning).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SolveStats {
    /// Solves run.
    pub solves: u64,
    /// Flows whose rate was computed, summed over solves.
    pub flows: u64,
    /// Links considered, summed over solves.
    pub links: u64,
}

impl FlowParams {
    /// The `flow` model with no flow active.
    pub fn flow_model(self) -> FlowModel {
        FlowModel {
            p: self,
            on_link: Vec::new(),
            link_wsum: Vec::new(),
            wsum_stale: Vec::new(),
            flows: Vec::new(),
            free: Vec::new(),
            next: Completions::default(),
            generation: 0,
            wake_ps: u64::MAX,
            seeds: Vec::new(),
            solve_queued: false,
            comp_links: Vec::new(),
            comp_flows: Vec::new(),
            stack: Vec::new(),
            cap: Vec::new(),
            unfixed: Vec::new(),
            wsum: Vec::new(),
            pos: Vec::new(),
            heap: LinkHeap::default(),
            shares: Vec::new(),
            touched: Vec::new(),
            touch_step: Vec::new(),
            mark_link: Vec::new(),
            mark_flow: Vec::new(),
            stamp: 0,
            messages: 0,
            hop_bytes: 0,
            stats: SolveStats::default(),
        }
    }
}

impl FlowModel {
    fn bw(&self) -> f64 {
        self.p.net.bandwidth.bytes_per_s() as f64
    }

    /// The solver's work so far.
    pub fn solve_stats(&self) -> SolveStats {
        self.stats
    }

    /// Brings every flow of the components of the links in `self.seeds` up to `now`,
    /// recomputes their max-min rates and their predicted completions. Scratch buffers live in
    /// the model: no allocation once warm.
    fn solve(&mut self, now: u64) {
        let mut seeds = std::mem::take(&mut self.seeds);
        seeds.sort_unstable();
        seeds.dedup();
        seeds.retain(|&l| !self.on_link[l as usize].is_empty());
        self.seeds = seeds;
        if self.seeds.is_empty() {
            return;
        }
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
        self.seeds.clear();
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
        self.stats.solves += 1;
        self.stats.flows += self.comp_flows.len() as u64;
        self.stats.links += self.comp_links.len() as u64;
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
        let mut heap = std::mem::take(&mut self.heap);
        let mut shares = std::mem::take(&mut self.shares);
        heap.clear(self.comp_links.len());
        let mut touched = std::mem::take(&mut self.touched);
        let mut touch_step = std::mem::take(&mut self.touch_step);
        touch_step.clear();
        touch_step.resize(self.comp_links.len(), 0);
        let mut step = 0u32;
        shares.clear();
        cap.clear();
        cap.resize(self.comp_links.len(), bw);
        unfixed.clear();
        wsum.clear();
        // Small components scan their links for the bottleneck; large ones keep a heap.
        let use_heap = self.comp_links.len() > SCAN_LINKS;
        for (i, &l) in self.comp_links.iter().enumerate() {
            self.pos[l as usize] = i as u32;
            let on = &self.on_link[l as usize];
            unfixed.push(on.len() as u32);
            // The sum of the link's weights, in the order of its flows: kept from the last
            // solve unless a flow has come or gone on it since.
            let w = if self.wsum_stale[l as usize] {
                let w: f64 = on.iter().map(|&f| self.flows[f as usize].weight).sum();
                self.link_wsum[l as usize] = w;
                self.wsum_stale[l as usize] = false;
                w
            } else {
                self.link_wsum[l as usize]
            };
            wsum.push(w);
            shares.push(bw / w);
        }
        if use_heap {
            for i in 0..self.comp_links.len() {
                heap.push(&shares, i as u32);
            }
        }
        loop {
            // The unfixed link with the smallest share; ties to the lowest link id (the
            // lowest index: `comp_links` is sorted).
            let i = if use_heap {
                let Some(i) = heap.pop(&shares) else {
                    break;
                };
                i as usize
            } else {
                let mut best: Option<(f64, usize)> = None;
                for (i, &n) in unfixed.iter().enumerate() {
                    if n > 0 && best.is_none_or(|(b, _)| shares[i] < b) {
                        best = Some((shares[i], i));
                    }
                }
                let Some((_, i)) = best else { break };
                i
            };
            let share = shares[i];
            let l = self.comp_links[i];
            // A link's share is only read at the next bottleneck choice, so it is computed
            // once per step from its final capacity and weight (the same values, in the same
            // order of subtraction, as after each flow): one division and one heap move per
            // link touched, not per flow crossing it.
            step = step.wrapping_add(1);
            touched.clear();
            for k in 0..self.on_link[l as usize].len() {
                let f = self.on_link[l as usize][k];
                if self.flows[f as usize].rate >= 0.0 {
                    continue;
                }
                let w = self.flows[f as usize].weight;
                let rate = share * w;
                self.flows[f as usize].rate = rate;
                for &l2 in &self.flows[f as usize].links {
                    let j = self.pos[l2 as usize] as usize;
                    cap[j] = (cap[j] - rate).max(0.0);
                    unfixed[j] -= 1;
                    wsum[j] = if unfixed[j] == 0 { 0.0 } else { wsum[j] - w };
                    if touch_step[j] != step {
                        touch_step[j] = step;
                        touched.push(j as u32);
                    }
                }
            }
            for &j in &touched {
                let j = j as usize;
                if unfixed[j] > 0 {
                    shares[j] = cap[j] / wsum[j];
                    if use_heap {
                        heap.update(&shares, j as u32);
                    }
                } else if use_heap && j != i {
                    heap.remove(&shares, j as u32);
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
            self.next.push(f, now.saturating_add(left_ps));
        }
        self.cap = cap;
        self.unfixed = unfixed;
        self.wsum = wsum;
        self.heap = heap;
        self.shares = shares;
        self.touched = touched;
        self.touch_step = touch_step;
    }

    /// Queues the solve of the current time step (once).
    fn queue_solve(&mut self, now: u64, io: &mut NetIo) {
        if !self.solve_queued {
            self.solve_queued = true;
            io.events.push((SimTime::from_ps(now), SOLVE));
        }
    }

    /// Makes sure the engine will wake the model at the earliest predicted completion.
    fn arm(&mut self, io: &mut NetIo) {
        if let Some((_, t)) = self.next.peek()
            && t != self.wake_ps
        {
            self.generation = (self.generation + 1) % SOLVE;
            self.wake_ps = t;
            io.events.push((SimTime::from_ps(t), self.generation));
        }
    }

    fn link_slot(&mut self, l: u64) {
        let need = l as usize + 1;
        if self.on_link.len() < need {
            self.on_link.resize_with(need, Vec::new);
            self.link_wsum.resize(need, 0.0);
            self.wsum_stale.resize(need, true);
            self.mark_link.resize(need, 0);
            self.pos.resize(need, 0);
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
    /// Link slots are indexed by link id (`vertex * ports + port`), so they span every
    /// vertex of an indirect network (its switches follow the hosts) and the hosts in use
    /// of a direct one; each flow in flight has its record, its route and its place in the
    /// completion queue.
    fn state_bytes(&self, pes: u32, in_flight: u64, _mean_bytes: u64) -> u64 {
        let t = &self.p.net.topology;
        let hosts = (pes as u64)
            .div_ceil(self.p.net.pes_per_node.max(1) as u64)
            .min(t.nodes());
        let vertices = if t.vertices() > t.nodes() {
            t.vertices()
        } else {
            hosts
        };
        vertices
            .saturating_mul(t.ports().max(1))
            .saturating_mul(LINK_SLOT_BYTES)
            .saturating_add(in_flight.saturating_mul(FLOW_BYTES))
            .saturating_add(
                in_flight
                    .saturating_mul(SLACK_PER_FLOW_BYTES)
                    .min(SLACK_MAX_BYTES),
            )
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
        let links = std::mem::take(&mut self.flows[slot as usize].links);
        let (flow, startup) = self.p.new_flow(a, b, now, msg, token, links);
        self.hop_bytes = self
            .hop_bytes
            .saturating_add((flow.links.len() as u64).saturating_mul(msg.bytes));
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
                self.wsum_stale[l as usize] = true;
            }
            {
                let fl = &mut self.flows[f as usize];
                fl.links = links;
                fl.at_ps = t;
                fl.live = true;
            }
            if self.flows[f as usize].links.is_empty() || self.flows[f as usize].remaining == 0.0 {
                self.finish(f, t, io);
                self.arm(io);
            } else {
                self.seeds.extend_from_slice(&self.flows[f as usize].links);
                self.queue_solve(t, io);
            }
            return;
        }
        if event == SOLVE {
            self.solve_queued = false;
            self.solve(t);
            self.arm(io);
            return;
        }
        if event != self.generation || t != self.wake_ps {
            return; // superseded
        }
        self.wake_ps = u64::MAX;
        // Flows that started earlier in this time step share the links with those ending
        // now, as if each start had been solved when it happened.
        if !self.seeds.is_empty() {
            self.solve(t);
            if self.next.peek().is_none_or(|(_, at)| at > t) {
                self.arm(io);
                return;
            }
        }
        let mut seeds = std::mem::take(&mut self.seeds);
        while let Some((_, at)) = self.next.peek() {
            if at > t {
                break;
            }
            let (f, _) = self.next.pop().expect("peeked");
            seeds.extend_from_slice(&self.flows[f as usize].links);
            self.finish(f, t, io);
        }
        self.seeds = seeds;
        self.queue_solve(t, io);
    }
    fn stats(&self) -> Option<NetStats> {
        Some(NetStats {
            messages: self.messages,
            hop_bytes: self.hop_bytes,
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
        for &l in &self.flows[f as usize].links {
            self.wsum_stale[l as usize] = true;
        }
        end_flow(&mut self.on_link, &mut self.flows[f as usize], f, t, io);
        self.next.remove(f);
        self.free.push(f);
    }
}

impl FlowParams {
    /// The flow of `msg` from node `a` to node `b` (`a != b`) leaving at `now`, its route
    /// written into `links` (a buffer to reuse), and its start-up in ps.
    fn new_flow(
        &self,
        a: u64,
        b: u64,
        now: SimTime,
        msg: &MessageInfo,
        token: u32,
        mut links: Vec<u64>,
    ) -> (Flow, u64) {
        links.clear();
        self.net.topology.for_each_link(a, b, |l| links.push(l.0));
        let hops = links.len() as u64;
        let net = &self.net;
        let route_ps = net
            .latency
            .as_ps()
            .saturating_add(hops.saturating_mul(net.per_hop.as_ps()));
        let startup = scale_ppm(route_ps, self.lat_factor_ppm);
        let bw = net.bandwidth.bytes_per_s() as f64;
        let weight = match self.sharing {
            Sharing::MaxMin => 1.0,
            // SimGrid: penalty = route latency + weight_S / bw per link; a route without
            // latency keeps penalty 1.
            Sharing::Cm02 | Sharing::Lv08 => {
                if route_ps == 0 {
                    1.0
                } else {
                    let penalty =
                        route_ps as f64 / 1e12 + hops as f64 * self.weight_s_bytes as f64 / bw;
                    1.0 / penalty
                }
            }
        };
        let cross_ps = if self.bw_factor_ppm == PPM {
            Bandwidth::transfer_time(net.bandwidth, msg.bytes).as_ps()
        } else {
            (msg.bytes as f64 / (bw * self.bw_factor_ppm as f64 / PPM as f64) * 1e12).round() as u64
        };
        let flow = Flow {
            token,
            links,
            remaining: msg.bytes as f64,
            rate: 0.0,
            at_ps: 0,
            depart_ps: now.as_ps(),
            alone_ps: startup.saturating_add(cross_ps),
            weight,
            live: false,
        };
        (flow, startup)
    }
}

/// Flow `f` (`fl`) has delivered its last byte at `t`: off its links, and its delivery
/// reported.
fn end_flow(on_link: &mut [Vec<u32>], fl: &mut Flow, f: u32, t: u64, io: &mut NetIo) {
    for &l in &fl.links {
        let v = &mut on_link[l as usize];
        if let Some(i) = v.iter().position(|&x| x == f) {
            v.swap_remove(i);
        }
    }
    fl.live = false;
    fl.remaining = 0.0;
    let wire = t.saturating_sub(fl.depart_ps);
    io.deliveries.push(Delivery {
        at: SimTime::from_ps(t),
        token: fl.token,
        wire: SimDuration::from_ps(wire),
        queueing: SimDuration::from_ps(wire.saturating_sub(fl.alone_ps)),
    });
}

mod completions;
use completions::Completions;

#[cfg(test)]
mod reference;

#[cfg(test)]
mod tests {
    use super::reference::OldFlowModel;
    use super::*;
    use crate::NetSpec;
    use crate::testkit::{self, Msg, Rng};

    /// Runs `msgs` through `model`; returns `(token, arrival, wire, queueing)` per message,
    /// by token.
    fn drive(model: &mut dyn NetworkModel, msgs: &[Msg]) -> Vec<(u32, u64, u64, u64)> {
        let mut out: Vec<_> = testkit::drive(model, msgs)
            .iter()
            .map(|d| (d.token, d.at.as_ps(), d.wire.as_ps(), d.queueing.as_ps()))
            .collect();
        out.sort_unstable();
        out
    }

    fn params(spec: &str) -> FlowParams {
        match spec.parse::<NetSpec>().unwrap() {
            NetSpec::Flow(p) => p,
            other => panic!("not a flow spec: {other}"),
        }
    }

    /// Random messages on `pes` PEs: sizes from a few round values (equal shares end
    /// together) and odd ones, departures on a coarse grid (many start together), a third of
    /// them chained to an earlier message's arrival (starts that meet ends).
    fn random_msgs(rng: &mut Rng, pes: u32, n: usize) -> Vec<Msg> {
        let sizes = [1000u64, 4096, 10_000, 65_536, 1_000_000];
        testkit::random_msgs(rng, pes, n, &sizes, 200_000, (2_000_000, 8, 500_000))
    }

    #[test]
    fn batched_solver_gives_the_full_resolves_arrivals_to_the_picosecond() {
        let specs = [
            ("flow:topo=mesh:4,bw=1GB/s", 4),
            ("flow:topo=mesh:4,lat=1us,hop=1us,bw=1GB/s,sharing=cm02", 4),
            ("flow:topo=torus:3x3,lat=1us,hop=100ns,bw=10GB/s", 9),
            (
                "flow:topo=torus:4x4,lat=1us,hop=100ns,bw=10GB/s,sharing=cm02",
                16,
            ),
            (
                "flow:topo=fattree:k=4,levels=2,up=2,lat=1us,hop=100ns,bw=100MB/s,sharing=lv08",
                16,
            ),
            (
                "flow:topo=fattree:k=4,levels=2,up=1,bw=3GB/s,sharing=cm02",
                16,
            ),
            (
                "flow:topo=fattree:k=3,levels=3,lat=1us,bw=10GB/s,sharing=cm02,weight_s=5000,bw_factor=0.9",
                27,
            ),
            ("flow:topo=full:5,lat=2us,bw=1GB/s,ppn=2", 10),
            (
                "flow:topo=dragonfly:groups=5,routers=2,hosts=2,global=2,routing=valiant,lat=1us,hop=50ns,bw=10GB/s,sharing=cm02",
                20,
            ),
            // Components of more than `SCAN_LINKS` links: the heap finds the bottlenecks.
            (
                "flow:topo=torus:8x8,lat=1us,hop=100ns,bw=10GB/s,sharing=cm02",
                64,
            ),
            ("flow:topo=fattree:k=4,levels=3,up=2,bw=1GB/s", 64),
        ];
        let mut rng = Rng(32);
        let mut cases = 0;
        for (spec, pes) in specs {
            for _ in 0..12 {
                let n = 5 + rng.below(if pes == 64 { 600 } else { 120 }) as usize;
                let msgs = random_msgs(&mut rng, pes, n);
                let p = params(spec);
                let want = drive(&mut OldFlowModel::new(p.clone()), &msgs);
                let got = drive(&mut p.flow_model(), &msgs);
                assert_eq!(got, want, "{spec}: {msgs:?}");
                cases += 1;
            }
        }
        assert_eq!(cases, 132);
    }

    #[test]
    fn hop_bytes_count_every_link_crossed() {
        // mesh:4 (a line): 0 -> 3 crosses 3 links, 1 -> 2 one; PEs of one node cross none.
        let p = params("flow:topo=mesh:4,lat=1us,bw=1GB/s,ppn=2");
        let mut m = p.flow_model();
        let msgs = [(0, 7, 1000), (2, 4, 500), (0, 1, 300)].map(|(src, dst, bytes)| Msg {
            src,
            dst,
            bytes,
            depart: 0,
            after: None,
        });
        drive(&mut m, &msgs);
        let s = m.stats().unwrap();
        assert_eq!((s.messages, s.hop_bytes), (2, 3 * 1000 + 500));
    }
}
