//! The `contention` model: packets on links with per-link FIFO queues.
//!
//! A message of `S` bytes between PEs on different nodes is cut into `k = max(1, ceil(S / P))`
//! packets of `P` bytes (the last one shorter). All `k` enter the first resource of the route
//! at `depart + lat`, in order. The resources a packet crosses are, in order:
//!
//! 1. the source node's **injection NIC** (only when `nic_bw` is set),
//! 2. the **links** of the dimension-order route ([`Topology::next_hop`]), each directed
//!    (full duplex: the two directions are independent resources),
//! 3. the destination node's **ejection NIC** (only when `nic_bw` is set).
//!
//! Each resource serves packets one at a time, first come first served in the order they reach
//! it (ties in event order), with unbounded buffers. A packet of `b` bytes occupies a link for
//! `s = ceil(b / bw)` and a NIC for `ceil(b / nic_bw)`; crossing a link also takes the per-hop
//! latency `hop` (NICs have none). With `r` the time a packet reaches a resource and `free`
//! the time the resource finishes its previous packet:
//!
//! * **store-and-forward** (`switching=saf`): `start = max(r, free)`; the packet reaches the
//!   next resource when its tail has: `start + s + hop`.
//! * **virtual cut-through** (`switching=vct`, the default): the header moves on as soon as it
//!   is through: the next resource is reached at `start + hop`, but no resource finishes a
//!   packet before its tail has arrived: `start = max(r, free, tail - s)` where `tail` is when
//!   the last byte arrives (previous resource's finish `+ hop`).
//!
//! A message arrives when the tail of its last packet reaches the destination.
//!
//! **Closed forms** for one message alone on the network, `H` hops, NICs off, packet
//! serialisation times `s_1..s_k` (`s_1` the first, full packet):
//!
//! * cut-through: `lat + H*hop + (s_1 + ... + s_k)`;
//! * store-and-forward: the same plus `(H - 1) * s_1`, since every link but the last waits for
//!   a whole packet before forwarding it.
//!
//! Messages between PEs of the same node use `lat_intra + ceil(S / bw_intra)` and no
//! resources.
//!
//! **Queueing** reported for a message is its wire time minus the wire time it would have had
//! alone on the network ([`ContentionParams::uncontended_wire`]).

use crate::hops::check_fit;
use crate::{Delivery, Driving, LinkStats, MessageInfo, NetIo, NetStats, NetworkModel, Topology};
use sim_core::{Bandwidth, SimDuration, SimTime};
use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;

/// The most packets one message may have: all of a message's packets pass its first resource
/// at once, and each one that goes on is held until it arrives (a 24-byte record and a 16-byte
/// event), so this bounds one message to about 160 MiB.
pub const MAX_PACKETS_PER_MESSAGE: u64 = 1 << 22;

/// How a router forwards a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Switching {
    /// Receive the whole packet, then forward it (`saf`).
    StoreAndForward,
    /// Forward the header as soon as it has arrived (`vct`).
    CutThrough,
}

impl fmt::Display for Switching {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Switching::StoreAndForward => "saf",
            Switching::CutThrough => "vct",
        })
    }
}

impl FromStr for Switching {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "saf" | "store-and-forward" => Ok(Switching::StoreAndForward),
            "vct" | "cut-through" => Ok(Switching::CutThrough),
            other => Err(format!(
                "`{other}` is not a switching mode; expected saf (store-and-forward) or vct (virtual cut-through)"
            )),
        }
    }
}

/// Parameters of the contention model (see the [module docs](self)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContentionParams {
    /// The interconnect.
    pub topology: Topology,
    /// Start-up latency, paid once per message before its first packet enters the network.
    pub latency: SimDuration,
    /// Latency per link crossed.
    pub per_hop: SimDuration,
    /// Bandwidth of every link (each direction).
    pub bandwidth: Bandwidth,
    /// Packet size in bytes (at least 1).
    pub packet_bytes: u64,
    /// Store-and-forward or virtual cut-through.
    pub switching: Switching,
    /// Bandwidth of each node's injection and ejection NIC; `None`: no NIC limit.
    pub nic_bandwidth: Option<Bandwidth>,
    /// PEs per node (at least 1); PE `p` is on node `p / ppn`.
    pub pes_per_node: u32,
    /// Latency between PEs of one node.
    pub intra_latency: SimDuration,
    /// Bandwidth between PEs of one node.
    pub intra_bandwidth: Bandwidth,
}

impl ContentionParams {
    /// The model, with every link idle.
    pub fn model(self) -> Contention {
        let ports = self.topology.ports();
        Contention {
            ports,
            per_node: (ports + if self.nic_bandwidth.is_some() { 2 } else { 0 }).max(1),
            full_ser: self.ser(self.packet_bytes.max(1)),
            p: self,
            res: Vec::new(),
            more: Vec::new(),
            free_more: Vec::new(),
            packets: Slab::default(),
            msgs: Slab::default(),
            memo: [(u64::MAX, 0, 0); MEMO],
            memo_next: 0,
            scratch: Vec::new(),
            messages: 0,
            hop_bytes: 0,
            packets_total: 0,
            packet_hops: 0,
        }
    }

    /// Packets of a message: `(count, bytes of a full packet, bytes of the last one)`.
    fn split(&self, bytes: u64) -> (u64, u64, u64) {
        let p = self.packet_bytes.max(1);
        if bytes <= p {
            return (1, bytes, bytes);
        }
        let k = bytes.div_ceil(p);
        (k, p, bytes - (k - 1) * p)
    }

    /// Wire time of a message of `bytes` bytes crossing `hops` links with the network otherwise
    /// idle: the same recurrences as the simulation, without other traffic.
    pub fn uncontended_wire(&self, bytes: u64, hops: u32) -> SimDuration {
        let mut scratch = Vec::new();
        SimDuration::from_ps(self.lone(bytes, hops, &mut scratch))
    }

    fn lone(&self, bytes: u64, hops: u32, free: &mut Vec<u64>) -> u64 {
        let nic = self.nic_bandwidth.is_some() as usize;
        let stages = hops as usize + 2 * nic;
        free.clear();
        free.resize(stages, 0);
        let (k, full, last) = self.split(bytes);
        let t0 = self.latency.as_ps();
        let mut done = t0;
        for j in 0..k {
            let b = if j + 1 == k { last } else { full };
            let (s_link, s_nic) = self.ser(b);
            let (mut t, mut tail) = (t0, t0);
            for (i, f) in free.iter_mut().enumerate() {
                let is_nic = nic == 1 && (i == 0 || i + 1 == stages);
                let (s, h) = if is_nic {
                    (s_nic, 0)
                } else {
                    (s_link, self.per_hop.as_ps())
                };
                let step = self.step(t, tail, *f, s, h);
                *f = step.end;
                t = step.next;
                tail = step.tail;
            }
            done = done.max(tail);
        }
        // The message left at time 0.
        done
    }

    /// Serialisation of a `b`-byte packet on a link and on a NIC.
    fn ser(&self, b: u64) -> (u64, u64) {
        let link = self.bandwidth.transfer_time(b).as_ps();
        let nic = self.nic_bandwidth.map_or(0, |n| n.transfer_time(b).as_ps());
        (link, nic)
    }

    /// One packet through one resource: reached at `r` (header), tail there at `tail`, the
    /// resource free at `free`, serialisation `s`, latency after it `h`.
    #[inline]
    fn step(&self, r: u64, tail: u64, free: u64, s: u64, h: u64) -> Step {
        let ready = match self.switching {
            Switching::StoreAndForward => r,
            Switching::CutThrough => r.max(tail.saturating_sub(s)),
        };
        let start = ready.max(free);
        let end = start.saturating_add(s);
        let (next, tail) = match self.switching {
            Switching::StoreAndForward => (end.saturating_add(h), end.saturating_add(h)),
            Switching::CutThrough => (start.saturating_add(h), end.saturating_add(h)),
        };
        Step {
            ready,
            start,
            end,
            next,
            tail,
        }
    }
}

struct Step {
    ready: u64,
    start: u64,
    end: u64,
    next: u64,
    tail: u64,
}

const MEMO: usize = 8;

const STAGE_INJECT: u8 = 0;
const STAGE_NET: u8 = 1;
const STAGE_EJECT: u8 = 2;
/// `Msg::via` of a route without a waypoint.
const NO_WAYPOINT: u32 = u32::MAX;
/// The most vertices a topology may have for this model: a message keeps its vertices as
/// `u32` (below [`NO_WAYPOINT`]).
pub const MAX_VERTICES: u64 = NO_WAYPOINT as u64;
/// Event ids: a message's packets entering its first resource (`INJECT | message slot`), or
/// one packet reaching its next resource (the packet's slot, below `INJECT`).
const INJECT: u32 = 1 << 31;
/// "None" for `u32` handles.
const NIL: u32 = u32::MAX;

/// A packet past its first resource (24 bytes). Its size is the model's packet size, or the
/// message's remainder for its last packet.
#[derive(Clone, Copy, Debug)]
struct Packet {
    node: u64,
    tail_ps: u64,
    msg: u32,
    stage: u8,
    /// Whether the packet has passed its message's waypoint (or it has none).
    past_waypoint: bool,
    /// The message's last packet.
    last: bool,
}

/// A message in flight (48 bytes).
#[derive(Clone, Copy, Debug)]
struct Msg {
    sent_ps: u64,
    done_ps: u64,
    bytes: u64,
    /// Source and destination vertices (below [`MAX_VERTICES`], checked by `check_pes`).
    src: u32,
    dst: u32,
    /// [`Topology::waypoint`] of the route, `NO_WAYPOINT` for none.
    via: u32,
    token: u32,
    /// Packets not delivered yet (all of them until the message enters the network).
    left: u32,
    hops: u32,
}

/// A message's waypoint as a vertex id (`u64::MAX`: none), as routing takes it.
#[inline]
fn via64(via: u32) -> u64 {
    if via == NO_WAYPOINT {
        u64::MAX
    } else {
        via as u64
    }
}

/// Records addressed by `u32` slot, reusing freed slots (no allocation once warm).
#[derive(Debug)]
struct Slab<T> {
    items: Vec<T>,
    free: Vec<u32>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            items: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> Slab<T> {
    fn insert(&mut self, x: T) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.items[i as usize] = x;
                i
            }
            None => {
                self.items.push(x);
                let i = self.items.len() - 1;
                assert!(
                    i < INJECT as usize,
                    "more than 2^31 packets or messages in flight"
                );
                i as u32
            }
        }
    }
}

/// Start times `first + i * step` for `i < count`: packets queued at a resource back to back
/// (a message's packets behind one another) are one run.
#[derive(Clone, Copy, Debug, Default)]
struct Run {
    first: u64,
    step: u32,
    count: u32,
}

impl Run {
    /// How many of the run's times are at or before `now` (a prefix: the times increase).
    #[inline]
    fn started_by(&self, now: u64) -> u32 {
        if self.count == 0 || self.first > now {
            0
        } else if self.count == 1 || self.step == 0 {
            self.count
        } else {
            ((now - self.first) / self.step as u64 + 1).min(self.count as u64) as u32
        }
    }
    /// Appends `x` (at least the last time) if it continues the run.
    #[inline]
    fn extend(&mut self, x: u64) -> bool {
        if self.count == 1 {
            match u32::try_from(x - self.first) {
                Ok(step) => {
                    self.step = step;
                    self.count = 2;
                    true
                }
                Err(_) => false,
            }
        } else if self.count < u32::MAX && x == self.first + self.count as u64 * self.step as u64 {
            self.count += 1;
            true
        } else {
            false
        }
    }
}

/// The runs of a resource beyond its first (see [`Res::more`]).
#[derive(Debug, Default)]
struct MoreRuns {
    runs: VecDeque<Run>,
    /// Times in `runs`.
    len: u64,
}

/// One link or NIC (64 bytes): when it is next free, what it carried, who waits for it.
#[derive(Clone, Copy, Debug)]
struct Res {
    free_ps: u64,
    bytes: u64,
    packets: u64,
    busy_ps: u64,
    max_wait_ps: u64,
    /// Start times of the packets queued and not yet started (increasing), as runs: the
    /// oldest here (empty when nothing waits), the others in `Contention::more[more]` (or
    /// `NIL`).
    run: Run,
    more: u32,
    max_queue: u32,
}

impl Default for Res {
    fn default() -> Self {
        Res {
            free_ps: 0,
            bytes: 0,
            packets: 0,
            busy_ps: 0,
            max_wait_ps: 0,
            run: Run::default(),
            more: NIL,
            max_queue: 0,
        }
    }
}

/// The contention model at run time. Resources are numbered per vertex: `vertex * per_node +
/// port` for links, `+ ports` for the injection NIC and `+ ports + 1` for the ejection NIC
/// (when `nic_bw` is set; `per_node` is `ports`, or `ports + 2` with NICs), and allocated as
/// vertices are first touched.
#[derive(Debug)]
pub struct Contention {
    p: ContentionParams,
    ports: u64,
    per_node: u64,
    res: Vec<Res>,
    /// Lists of further waiting runs of resources, reused (`free_more`).
    more: Vec<MoreRuns>,
    free_more: Vec<u32>,
    packets: Slab<Packet>,
    msgs: Slab<Msg>,
    /// Serialisation of a full packet on a link and on a NIC.
    full_ser: (u64, u64),
    /// `(bytes, hops, uncontended wire)` of recent message shapes.
    memo: [(u64, u32, u64); MEMO],
    memo_next: usize,
    scratch: Vec<u64>,
    messages: u64,
    hop_bytes: u64,
    packets_total: u64,
    packet_hops: u64,
}

/// Bytes the contention model keeps per resource (link or NIC) of the vertices it touches.
pub const RESOURCE_BYTES: u64 = std::mem::size_of::<Res>() as u64;
/// Bytes per message in flight in the contention model: its record, its slot's reuse entry
/// and its injection event in the replay's queue (84), and the allocator's share (the slabs
/// grow by doubling; 176 measured on 3-D halos of 2,000 to 10^6 ranks).
pub const MESSAGE_BYTES: u64 = 176;
/// Bytes per packet past its first resource: its record and its event.
pub const PACKET_BYTES: u64 = std::mem::size_of::<Packet>() as u64 + 4 + 16;

impl Contention {
    /// The parameters.
    pub fn params(&self) -> &ContentionParams {
        &self.p
    }

    fn res_index(&self, node: u64, port: u64) -> usize {
        (node * self.per_node + port) as usize
    }

    fn res_mut(&mut self, i: usize) -> &mut Res {
        if i >= self.res.len() {
            let per_node = self.per_node as usize;
            let need = (i / per_node + 1) * per_node;
            if self.res.capacity() < need {
                // Every vertex's resources at once when that is moderate (no doubling, no
                // copy), else as needed.
                let all = self.p.topology.vertices().saturating_mul(self.per_node);
                let want = if all.saturating_mul(RESOURCE_BYTES) <= 4 << 30 {
                    (all as usize).max(need)
                } else {
                    need
                };
                self.res.reserve_exact(want - self.res.len());
            }
            self.res.resize(need, Res::default());
        }
        &mut self.res[i]
    }

    fn uncontended(&mut self, bytes: u64, hops: u32) -> u64 {
        if let Some(&(_, _, w)) = self.memo.iter().find(|m| m.0 == bytes && m.1 == hops) {
            return w;
        }
        let w = self.p.lone(bytes, hops, &mut self.scratch);
        self.memo[self.memo_next] = (bytes, hops, w);
        self.memo_next = (self.memo_next + 1) % MEMO;
        w
    }

    fn deliver(&mut self, m: u32, tail: u64, io: &mut NetIo) {
        let msg = &mut self.msgs.items[m as usize];
        msg.done_ps = msg.done_ps.max(tail);
        msg.left -= 1;
        if msg.left > 0 {
            return;
        }
        let msg = *msg;
        self.msgs.free.push(m);
        let wire = msg.done_ps - msg.sent_ps;
        let alone = self.uncontended(msg.bytes, msg.hops);
        io.deliveries.push(Delivery {
            at: SimTime::from_ps(msg.done_ps),
            token: msg.token,
            wire: SimDuration::from_ps(wire),
            queueing: SimDuration::from_ps(wire.saturating_sub(alone)),
        });
    }

    /// Drops the waiting packets of resource `idx` that have started by `now`.
    #[inline]
    fn expire(&mut self, idx: usize, now: u64) {
        let r = &mut self.res[idx];
        loop {
            let n = r.run.started_by(now);
            if n < r.run.count {
                r.run.first += n as u64 * r.run.step as u64;
                r.run.count -= n;
                return;
            }
            r.run.count = 0;
            if r.more == NIL {
                return;
            }
            let m = &mut self.more[r.more as usize];
            let run = m.runs.pop_front().expect("a list of runs is never empty");
            m.len -= run.count as u64;
            r.run = run;
            if m.runs.is_empty() {
                self.free_more.push(r.more);
                r.more = NIL;
            }
        }
    }

    /// Queues a packet that starts on resource `idx` at `x` (no earlier than those waiting);
    /// returns the number waiting.
    #[inline]
    fn push_waiting(&mut self, idx: usize, x: u64) -> u64 {
        let r = &mut self.res[idx];
        let fresh = Run {
            first: x,
            step: 0,
            count: 1,
        };
        if r.run.count == 0 {
            r.run = fresh;
            return 1;
        }
        if r.more == NIL {
            if r.run.extend(x) {
                return r.run.count as u64;
            }
            let h = match self.free_more.pop() {
                Some(h) => h,
                None => {
                    self.more.push(MoreRuns::default());
                    (self.more.len() - 1) as u32
                }
            };
            r.more = h;
            let m = &mut self.more[h as usize];
            m.runs.push_back(fresh);
            m.len = 1;
            return r.run.count as u64 + 1;
        }
        let m = &mut self.more[r.more as usize];
        if !m.runs.back_mut().expect("non-empty").extend(x) {
            m.runs.push_back(fresh);
        }
        m.len += 1;
        r.run.count as u64 + m.len
    }

    /// Queues `n` packets that start on resource `idx` at `x, x + s, ..., x + (n-1) * s`;
    /// returns the number waiting. The same as `n` calls of [`Contention::push_waiting`].
    fn push_progression(&mut self, idx: usize, x: u64, s: u64, n: u32) -> u64 {
        let mut len = 0;
        // After three single pushes the last run holds the last two with step `s`.
        for i in 0..n.min(3) {
            len = self.push_waiting(idx, x.saturating_add(i as u64 * s));
        }
        if n <= 3 {
            return len;
        }
        let rest = n - 3;
        let r = &mut self.res[idx];
        let run = if r.more == NIL {
            &mut r.run
        } else {
            self.more[r.more as usize]
                .runs
                .back_mut()
                .expect("non-empty")
        };
        if run.count >= 3
            && run.step as u64 == s
            && run.first + (run.count as u64 - 1) * s == x.saturating_add(2 * s)
            && run.count.checked_add(rest).is_some()
            && x.checked_add((n as u64 - 1) * s).is_some()
        {
            run.count += rest;
            if r.more != NIL {
                self.more[r.more as usize].len += rest as u64;
            }
            return len + rest as u64;
        }
        for i in 3..n {
            len = self.push_waiting(idx, x.saturating_add(i as u64 * s));
        }
        len
    }

    /// `k` packets of one message reach resource `idx` (allocated) at `now`, their tails too:
    /// `k - 1` of `full` bytes served in `s` and a last one of `last_bytes` in `s_last`. They
    /// are served back to back after those queued before them, exactly as `k` calls of
    /// [`Contention::serve`] would; returns the first one's start (packet `j` starts `j * s`
    /// later).
    #[allow(clippy::too_many_arguments)]
    fn serve_train(
        &mut self,
        idx: usize,
        now: u64,
        k: u32,
        s: u64,
        s_last: u64,
        full: u64,
        last_bytes: u64,
    ) -> u64 {
        let r = &mut self.res[idx];
        let n = (k - 1) as u64;
        let start0 = now.max(r.free_ps);
        let last_start = start0.saturating_add(n.saturating_mul(s));
        r.free_ps = last_start.saturating_add(s_last);
        r.bytes += n * full + last_bytes;
        r.packets += k as u64;
        r.busy_ps += n * s + s_last;
        r.max_wait_ps = r.max_wait_ps.max(last_start - now);
        self.expire(idx, now);
        // Packet `j` waits if it starts after `now`: all of them if the first does, else all
        // but the first if they take time.
        let (first, count) = if start0 > now {
            (start0, k)
        } else if s > 0 {
            (start0.saturating_add(s), k - 1)
        } else {
            (0, 0)
        };
        if count > 0 {
            let queued = self.push_progression(idx, first, s, count);
            let r = &mut self.res[idx];
            r.max_queue = r.max_queue.max(queued.min(u32::MAX as u64) as u32);
        }
        start0
    }

    /// The output port and next vertex of a packet at `node` in the network (not at its
    /// NICs), heading for `target`.
    #[inline]
    fn route_step(&self, node: u64, target: u64) -> (u64, u64) {
        let (link, next) = self
            .p
            .topology
            .next_hop(node, target)
            .expect("a packet in the network is never at its destination or waypoint");
        (link.0 % self.ports.max(1), next)
    }

    /// Where packet `pk` is (a resource) and what follows it there: `(resource index, whether
    /// it is a NIC, latency after it, next stage, next vertex, whether the packet arrives
    /// there)`; marks the waypoint passed. `step`: its [`Contention::route_step`] if known.
    #[inline]
    fn place(
        &self,
        pk: &mut Packet,
        dst: u64,
        via: u64,
        step: Option<(u64, u64)>,
    ) -> (usize, bool, u64, u8, u64, bool) {
        let nic = self.p.nic_bandwidth.is_some();
        match pk.stage {
            STAGE_INJECT => (
                self.res_index(pk.node, self.ports),
                true,
                0,
                STAGE_NET,
                pk.node,
                false,
            ),
            STAGE_EJECT => (
                self.res_index(pk.node, self.ports + 1),
                true,
                0,
                STAGE_EJECT,
                pk.node,
                true,
            ),
            _ => {
                let (port, next) = step.unwrap_or_else(|| {
                    self.route_step(pk.node, if pk.past_waypoint { dst } else { via })
                });
                if next == via {
                    pk.past_waypoint = true;
                }
                let arrived = next == dst;
                (
                    self.res_index(pk.node, port),
                    false,
                    self.p.per_hop.as_ps(),
                    if arrived && nic {
                        STAGE_EJECT
                    } else {
                        STAGE_NET
                    },
                    next,
                    arrived && !nic,
                )
            }
        }
    }

    /// A packet of `bytes` bytes reaches resource `idx` (allocated) at `now`, its tail at
    /// `tail`: it is served after those before it; the resource's statistics and queue are
    /// updated.
    #[inline]
    fn serve(&mut self, idx: usize, now: u64, tail: u64, ser: u64, hop: u64, bytes: u64) -> Step {
        let r = &mut self.res[idx];
        let st = self.p.step(now, tail, r.free_ps, ser, hop);
        r.free_ps = st.end;
        r.bytes += bytes;
        r.packets += 1;
        r.busy_ps += ser;
        r.max_wait_ps = r.max_wait_ps.max(st.start - st.ready);
        let waits = st.start > st.ready;
        self.expire(idx, now);
        if waits {
            let queued = self.push_waiting(idx, st.start);
            let r = &mut self.res[idx];
            r.max_queue = r.max_queue.max(queued.min(u32::MAX as u64) as u32);
        }
        st
    }

    /// Packet `pk` (stored in `slot`) reaches its next resource at `now`: it is queued there,
    /// then delivered or sent on.
    fn advance(&mut self, mut pk: Packet, slot: u32, now: u64, io: &mut NetIo) {
        let (dst, via, msg_bytes) = {
            let m = &self.msgs.items[pk.msg as usize];
            (m.dst as u64, via64(m.via), m.bytes)
        };
        let (bytes, (ser_link, ser_nic)) = if pk.last {
            let last = self.p.split(msg_bytes).2;
            (last, self.p.ser(last))
        } else {
            (self.p.packet_bytes.max(1), self.full_ser)
        };
        let (idx, is_nic, hop, next_stage, next_node, last) = self.place(&mut pk, dst, via, None);
        if !is_nic {
            self.packet_hops += 1;
        }
        let ser = if is_nic { ser_nic } else { ser_link };
        self.res_mut(idx);
        let st = self.serve(idx, now, pk.tail_ps, ser, hop, bytes);
        if last {
            self.packets.free.push(slot);
            self.deliver(pk.msg, st.tail, io);
            return;
        }
        pk.stage = next_stage;
        pk.node = next_node;
        pk.tail_ps = st.tail;
        self.packets.items[slot as usize] = pk;
        io.events.push((SimTime::from_ps(st.next), slot));
    }

    /// Message `mi`'s packets reach its first resource at `now`, one after another (as the
    /// per-packet events they replace would, consecutive in the event order): each is served
    /// there, then delivered or sent on.
    fn inject(&mut self, mi: u32, now: u64, io: &mut NetIo) {
        let m = self.msgs.items[mi as usize];
        let (k, full, last_bytes) = self.p.split(m.bytes);
        let k = k as u32;
        let last_ser = self.p.ser(last_bytes);
        let nic = self.p.nic_bandwidth.is_some();
        let (stage, step) = if nic {
            (STAGE_INJECT, None)
        } else {
            // Every packet takes the first link of the route.
            let target = if m.via == NO_WAYPOINT { m.dst } else { m.via };
            (
                STAGE_NET,
                Some(self.route_step(m.src as u64, target as u64)),
            )
        };
        let mut pk = Packet {
            node: m.src as u64,
            tail_ps: now,
            msg: mi,
            stage,
            past_waypoint: m.via == NO_WAYPOINT,
            last: false,
        };
        let (idx, is_nic, hop, next_stage, next_node, arrives) =
            self.place(&mut pk, m.dst as u64, via64(m.via), step);
        if !is_nic {
            self.packet_hops += k as u64;
        }
        self.res_mut(idx);
        let (ser_full, ser_last) = if is_nic {
            (self.full_ser.1, last_ser.1)
        } else {
            (self.full_ser.0, last_ser.0)
        };
        let full_ser = if k == 1 { ser_last } else { ser_full };
        let start0 = self.serve_train(idx, now, k, full_ser, ser_last, full, last_bytes);
        let saf = self.p.switching == Switching::StoreAndForward;
        if arrives {
            // Every packet has arrived: the message is delivered with its last one.
            let end = start0
                .saturating_add((k - 1) as u64 * full_ser)
                .saturating_add(ser_last);
            let msg = &mut self.msgs.items[mi as usize];
            msg.left = 1;
            self.deliver(mi, end.saturating_add(hop), io);
            return;
        }
        for j in 0..k {
            let last = j + 1 == k;
            let start = start0.saturating_add(j as u64 * full_ser);
            let end = start.saturating_add(if last { ser_last } else { full_ser });
            let tail = end.saturating_add(hop);
            let next = if saf { tail } else { start.saturating_add(hop) };
            let slot = self.packets.insert(Packet {
                node: next_node,
                tail_ps: tail,
                stage: next_stage,
                last,
                ..pk
            });
            io.events.push((SimTime::from_ps(next), slot));
        }
    }
}

impl NetworkModel for Contention {
    fn wire_time(&mut self, _msg: &MessageInfo, _depart: SimTime) -> SimDuration {
        // Event-driven: the replay calls `start_message` instead.
        SimDuration::ZERO
    }
    fn driving(&self) -> Driving {
        Driving::EventDriven
    }
    fn check_pes(&self, pes: u32) -> Result<(), String> {
        let vertices = self.p.topology.vertices();
        if vertices > MAX_VERTICES {
            return Err(format!(
                "the topology has {vertices} vertices; the contention model handles at most {MAX_VERTICES} (use flow or hops for larger machines)"
            ));
        }
        check_fit(&self.p.topology, self.p.pes_per_node, pes)
    }

    /// The resources of the vertices the PEs are on (of every vertex of an indirect network:
    /// routes cross the switches, numbered after the hosts), each message in flight, and its
    /// packets where routes have more than one resource (NICs, switches; a direct network's
    /// messages are counted as one hop: nearest neighbours).
    fn state_bytes(&self, pes: u32, in_flight: u64, mean_bytes: u64) -> u64 {
        let t = &self.p.topology;
        let hosts = (pes as u64)
            .div_ceil(self.p.pes_per_node.max(1) as u64)
            .min(t.nodes());
        let indirect = t.vertices() > t.nodes();
        let vertices = if indirect { t.vertices() } else { hosts };
        let multi = indirect || self.p.nic_bandwidth.is_some();
        let per_msg = MESSAGE_BYTES
            + if multi {
                self.p.split(mean_bytes).0.saturating_mul(PACKET_BYTES)
            } else {
                0
            };
        vertices
            .saturating_mul(self.per_node)
            .saturating_mul(RESOURCE_BYTES)
            .saturating_add(in_flight.saturating_mul(per_msg))
    }

    fn check_message(&self, bytes: u64) -> Result<(), String> {
        let (k, full, _) = self.p.split(bytes);
        if k > MAX_PACKETS_PER_MESSAGE {
            return Err(format!(
                "a message of {bytes} bytes is {k} packets of {full} bytes, above the limit of {MAX_PACKETS_PER_MESSAGE} packets per message (each packet is queued at once); raise packet= or use a model without packets (alphabeta, loggops)"
            ));
        }
        Ok(())
    }

    fn start_message(&mut self, now: SimTime, msg: &MessageInfo, token: u32, io: &mut NetIo) {
        let Some((a, b)) = crate::nodes_or_deliver(
            self.p.pes_per_node,
            self.p.intra_latency,
            self.p.intra_bandwidth,
            now,
            msg,
            token,
            io,
        ) else {
            return;
        };
        let hops = self.p.topology.hops(a, b);
        self.messages += 1;
        self.hop_bytes = self
            .hop_bytes
            .saturating_add((hops as u64).saturating_mul(msg.bytes));
        let k = self.p.split(msg.bytes).0;
        self.packets_total += k;
        let via = self.p.topology.waypoint(a, b);
        let m = Msg {
            sent_ps: now.as_ps(),
            done_ps: 0,
            bytes: msg.bytes,
            // `check_pes` refused topologies of more than `MAX_VERTICES` vertices.
            src: a as u32,
            dst: b as u32,
            via: via.map_or(NO_WAYPOINT, |v| v as u32),
            token,
            left: k as u32,
            hops,
        };
        let mi = self.msgs.insert(m);
        let t0 = now.as_ps().saturating_add(self.p.latency.as_ps());
        // All the packets reach the first resource at `t0`, one after another, before
        // anything else at that instant: one event takes them through it.
        io.events.push((SimTime::from_ps(t0), INJECT | mi));
    }

    fn handle_event(&mut self, now: SimTime, event: u32, io: &mut NetIo) {
        let now = now.as_ps();
        if event & INJECT == 0 {
            let pk = self.packets.items[event as usize];
            self.advance(pk, event, now, io);
        } else {
            self.inject(event & !INJECT, now, io);
        }
    }

    /// Frees the message and packet slabs and the queues' spare runs (a 10^6-rank halo's
    /// messages in flight held ~300 MB).
    fn end_of_run(&mut self) {
        self.packets = Slab::default();
        self.msgs = Slab::default();
        self.more = Vec::new();
        self.free_more = Vec::new();
        for r in &mut self.res {
            r.more = NIL;
        }
    }

    fn stats(&self) -> Option<NetStats> {
        let per_node = self.per_node;
        let links = self
            .res
            .iter()
            .enumerate()
            .filter(|(_, r)| r.packets > 0)
            .map(|(i, r)| {
                let (node, port) = (i as u64 / per_node, i as u64 % per_node);
                let (kind, port, to_node) = if port == self.ports {
                    ("inject", 0, node)
                } else if port == self.ports + 1 {
                    ("eject", 0, node)
                } else {
                    let link = crate::LinkId(node * self.ports + port);
                    ("link", port, self.p.topology.link_target(link))
                };
                LinkStats {
                    kind,
                    node,
                    port,
                    to_node,
                    bytes: r.bytes,
                    packets: r.packets,
                    busy_ps: r.busy_ps,
                    max_queue: r.max_queue as u64,
                    max_wait_ps: r.max_wait_ps,
                }
            })
            .collect();
        Some(NetStats {
            messages: self.messages,
            hop_bytes: self.hop_bytes,
            packets: self.packets_total,
            packet_hops: self.packet_hops,
            links,
        })
    }
}

#[cfg(test)]
mod reference;

#[cfg(test)]
mod tests {
    use super::reference::OldContention;
    use super::*;
    use crate::NetSpec;
    use crate::testkit::{self, Msg, Rng, drive};

    fn params(spec: &str) -> ContentionParams {
        match spec.parse::<NetSpec>().unwrap() {
            NetSpec::Contention(p) => p,
            other => panic!("not a contention spec: {other}"),
        }
    }

    /// Random messages on `pes` PEs: round sizes (trains of equal packets) and odd ones,
    /// departures on a coarse grid (many start together), a third chained to an earlier
    /// message's arrival.
    fn random_msgs(rng: &mut Rng, pes: u32, n: usize) -> Vec<Msg> {
        let sizes = [0u64, 100, 4096, 10_000, 65_536];
        testkit::random_msgs(rng, pes, n, &sizes, 50_000, (3_000_000, 6, 700_000))
    }

    #[test]
    fn packets_entering_a_message_at_a_time_give_the_per_packet_models_results() {
        let specs = [
            ("contention:topo=mesh:4,bw=1GB/s,packet=1KiB", 4),
            (
                "contention:topo=torus:3x3,lat=1us,hop=100ns,bw=10GB/s,packet=2KiB,switching=saf",
                9,
            ),
            (
                "contention:topo=torus:4x4,lat=1us,hop=50ns,bw=10GB/s,packet=1KiB,nic_bw=5GB/s",
                16,
            ),
            (
                "contention:topo=torus:4x4,bw=10GB/s,packet=4KiB,nic_bw=20GB/s,switching=saf,ppn=2",
                32,
            ),
            (
                "contention:topo=fattree:k=4,levels=2,up=2,lat=1us,hop=100ns,bw=1GB/s,packet=1KiB",
                16,
            ),
            (
                "contention:topo=dragonfly:groups=5,routers=2,hosts=2,global=2,routing=valiant,lat=1us,hop=50ns,bw=10GB/s,packet=2KiB",
                20,
            ),
            (
                "contention:topo=full:5,lat=2us,bw=100MB/s,packet=512,ppn=2",
                10,
            ),
            ("contention:topo=hypercube:3,bw=10GB/s,packet=100", 8),
        ];
        let mut rng = Rng(2);
        for (spec, pes) in specs {
            for _ in 0..10 {
                let n = 5 + rng.below(150) as usize;
                let msgs = random_msgs(&mut rng, pes, n);
                let p = params(spec);
                let mut old = OldContention::new(p.clone());
                let mut new = p.model();
                let want = drive(&mut old, &msgs);
                let got = drive(&mut new, &msgs);
                assert_eq!(got, want, "{spec}: {msgs:?}");
                assert_eq!(new.stats(), old.stats(), "{spec}: {msgs:?}");
                // Freeing the in-flight state at the end keeps every statistic.
                new.end_of_run();
                assert_eq!(new.stats(), old.stats(), "{spec}: after end_of_run");
                assert!(new.msgs.items.is_empty() && new.packets.items.is_empty());
            }
        }
    }

    #[test]
    fn topologies_beyond_u32_vertices_are_refused_by_name() {
        // A message keeps its vertices as u32. Topologies refuse more than 2^32 - 1 hosts,
        // but a fat-tree's switches come on top: k = 1625, 3 levels has 4,291,015,625 hosts.
        let m = params("contention:topo=fattree:k=1625,levels=3,bw=10GB/s").model();
        let vertices = m.params().topology.vertices();
        assert!(vertices > MAX_VERTICES, "{vertices}");
        let e = m.check_pes(8).unwrap_err();
        assert!(
            e.contains(&format!("{vertices} vertices")) && e.contains("at most 4294967295"),
            "{e}"
        );
        // Exactly 2^32 - 1 vertices (k = 65535, 2 levels) fit.
        let m = params("contention:topo=fattree:k=65535,levels=2,bw=10GB/s").model();
        assert_eq!(m.params().topology.vertices(), MAX_VERTICES);
        assert!(m.check_pes(8).is_ok());
    }

    #[test]
    fn waiting_runs_count_like_a_queue_of_start_times() {
        let mut rng = Rng(7);
        for _ in 0..200 {
            let mut m = params("contention:topo=mesh:2,bw=1GB/s").model();
            m.res_mut(0);
            let mut q: VecDeque<u64> = VecDeque::new();
            let (mut now, mut x) = (0u64, 0u64);
            for _ in 0..300 {
                now += rng.below(4) * rng.below(50);
                x = x.max(now) + [0, 7, 7, 7, 13, 1 << 33][rng.below(6) as usize];
                let waits = rng.below(5) != 0;
                while q.front().is_some_and(|&s| s <= now) {
                    q.pop_front();
                }
                if waits {
                    q.push_back(x);
                }
                m.expire(0, now);
                if waits {
                    assert_eq!(m.push_waiting(0, x), q.len() as u64);
                }
                if rng.below(3) == 0 {
                    // A train: `n` starts `s` apart.
                    let (n, s) = (
                        1 + rng.below(20) as u32,
                        [0, 7, 7, 1 << 33][rng.below(4) as usize],
                    );
                    x += 1;
                    for i in 0..n as u64 {
                        q.push_back(x + i * s);
                    }
                    assert_eq!(m.push_progression(0, x, s, n), q.len() as u64);
                    x += (n as u64 - 1) * s;
                }
            }
        }
    }
}
