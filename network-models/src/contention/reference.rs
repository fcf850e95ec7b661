//! The `contention` model as it was before packets entered the network a message at a time
//! and waiting packets were kept as runs: one event per packet from the start, a queue of
//! start times per resource. The oracle the tests compare the model with.

use super::{ContentionParams, MAX_PACKETS_PER_MESSAGE};
use crate::hops::check_fit;
use crate::{Delivery, Driving, LinkStats, MessageInfo, NetIo, NetStats, NetworkModel};
use sim_core::{SimDuration, SimTime};
use std::collections::VecDeque;

const MEMO: usize = 8;

const STAGE_INJECT: u8 = 0;
const STAGE_NET: u8 = 1;
const STAGE_EJECT: u8 = 2;
/// `Msg::via` of a route without a waypoint.
const NO_WAYPOINT: u64 = u64::MAX;

#[derive(Clone, Copy, Debug)]
struct Packet {
    msg: u32,
    stage: u8,
    /// Whether the packet has passed its message's waypoint (or it has none).
    past_waypoint: bool,
    node: u64,
    tail_ps: u64,
    bytes: u64,
    ser_link: u64,
    ser_nic: u64,
}

#[derive(Clone, Copy, Debug)]
struct Msg {
    token: u32,
    left: u64,
    dst: u64,
    /// [`Topology::waypoint`] of the route, `NO_WAYPOINT` for none.
    via: u64,
    sent_ps: u64,
    done_ps: u64,
    bytes: u64,
    hops: u32,
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
                (self.items.len() - 1) as u32
            }
        }
    }
}

/// One link or NIC: when it is next free, what it carried, who waits for it.
#[derive(Clone, Debug, Default)]
struct Res {
    free_ps: u64,
    bytes: u64,
    packets: u64,
    busy_ps: u64,
    max_queue: u64,
    max_wait_ps: u64,
    /// Start times of packets queued and not yet started (increasing).
    waiting: VecDeque<u64>,
}

/// The contention model at run time. Resources are numbered per node: `node * (ports + 2) +
/// port` for links, `+ ports` for the injection NIC, `+ ports + 1` for the ejection NIC, and
/// allocated as nodes are first touched.
#[derive(Debug)]
pub(crate) struct OldContention {
    p: ContentionParams,
    ports: u64,
    res: Vec<Res>,
    packets: Slab<Packet>,
    msgs: Slab<Msg>,
    /// `(bytes, hops, uncontended wire)` of recent message shapes.
    memo: [(u64, u32, u64); MEMO],
    memo_next: usize,
    scratch: Vec<u64>,
    messages: u64,
    hop_bytes: u64,
    packets_total: u64,
    packet_hops: u64,
}

impl OldContention {
    pub(crate) fn new(p: ContentionParams) -> Self {
        OldContention {
            ports: p.topology.ports(),
            p,
            res: Vec::new(),
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

    fn res_index(&self, node: u64, port: u64) -> usize {
        (node * (self.ports + 2) + port) as usize
    }

    fn res_mut(&mut self, i: usize) -> &mut Res {
        if i >= self.res.len() {
            let per_node = self.ports as usize + 2;
            self.res
                .resize_with((i / per_node + 1) * per_node, Res::default);
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
}

impl NetworkModel for OldContention {
    fn wire_time(&mut self, _msg: &MessageInfo, _depart: SimTime) -> SimDuration {
        // Event-driven: the replay calls `start_message` instead.
        SimDuration::ZERO
    }
    fn driving(&self) -> Driving {
        Driving::EventDriven
    }
    fn check_pes(&self, pes: u32) -> Result<(), String> {
        check_fit(&self.p.topology, self.p.pes_per_node, pes)
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
        let (k, full, last) = self.p.split(msg.bytes);
        self.packets_total += k;
        let via = self.p.topology.waypoint(a, b);
        let m = Msg {
            token,
            left: k,
            dst: b,
            via: via.unwrap_or(NO_WAYPOINT),
            sent_ps: now.as_ps(),
            done_ps: 0,
            bytes: msg.bytes,
            hops,
        };
        let mi = self.msgs.insert(m);
        let t0 = now.as_ps().saturating_add(self.p.latency.as_ps());
        let stage = if self.p.nic_bandwidth.is_some() {
            STAGE_INJECT
        } else {
            STAGE_NET
        };
        let (full_link, full_nic) = self.p.ser(full);
        for j in 0..k {
            let bytes = if j + 1 == k { last } else { full };
            let (ser_link, ser_nic) = if bytes == full {
                (full_link, full_nic)
            } else {
                self.p.ser(bytes)
            };
            let pk = Packet {
                msg: mi,
                stage,
                past_waypoint: via.is_none(),
                node: a,
                tail_ps: t0,
                bytes,
                ser_link,
                ser_nic,
            };
            let pi = self.packets.insert(pk);
            io.events.push((SimTime::from_ps(t0), pi));
        }
    }

    fn handle_event(&mut self, now: SimTime, event: u32, io: &mut NetIo) {
        let now = now.as_ps();
        let mut pk = self.packets.items[event as usize];
        let (dst, via) = {
            let m = &self.msgs.items[pk.msg as usize];
            (m.dst, m.via)
        };
        let nic = self.p.nic_bandwidth.is_some();
        // The resource this packet is at, and where it goes after it.
        let (idx, ser, hop, next_stage, next_node, last) = match pk.stage {
            STAGE_INJECT => (
                self.res_index(pk.node, self.ports),
                pk.ser_nic,
                0,
                STAGE_NET,
                pk.node,
                false,
            ),
            STAGE_EJECT => (
                self.res_index(pk.node, self.ports + 1),
                pk.ser_nic,
                0,
                STAGE_EJECT,
                pk.node,
                true,
            ),
            _ => {
                let target = if pk.past_waypoint { dst } else { via };
                let (link, next) = self
                    .p
                    .topology
                    .next_hop(pk.node, target)
                    .expect("a packet in the network is never at its destination or waypoint");
                if next == via {
                    pk.past_waypoint = true;
                }
                self.packet_hops += 1;
                let port = link.0 % self.ports.max(1);
                let arrived = next == dst;
                (
                    self.res_index(pk.node, port),
                    pk.ser_link,
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
        };
        let free = self.res_mut(idx).free_ps;
        let st = self.p.step(now, pk.tail_ps, free, ser, hop);
        let r = &mut self.res[idx];
        r.free_ps = st.end;
        r.bytes += pk.bytes;
        r.packets += 1;
        r.busy_ps += ser;
        r.max_wait_ps = r.max_wait_ps.max(st.start - st.ready);
        while r.waiting.front().is_some_and(|&s| s <= now) {
            r.waiting.pop_front();
        }
        if st.start > st.ready {
            r.waiting.push_back(st.start);
            r.max_queue = r.max_queue.max(r.waiting.len() as u64);
        }
        let (next, tail) = (st.next, st.tail);
        if last {
            self.packets.free.push(event);
            self.deliver(pk.msg, tail, io);
            return;
        }
        pk.stage = next_stage;
        pk.node = next_node;
        pk.tail_ps = tail;
        self.packets.items[event as usize] = pk;
        io.events.push((SimTime::from_ps(next), event));
    }

    fn stats(&self) -> Option<NetStats> {
        let per_node = self.ports + 2;
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
                    max_queue: r.max_queue,
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
