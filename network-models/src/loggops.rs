//! LogGOPS: LogGP with a per-byte CPU overhead `O` and an eager/rendezvous threshold `S`
//! (Hoefler, Schneider, Lumsdaine), with the semantics of LogGOPSim's `LogGOPSim.cpp`.
//!
//! For a message of `s` bytes (`s1 = max(s, 1) - 1`), sent by a block that reaches the send at
//! time `t`:
//!
//! | step | LogGOPSim | here |
//! |---|---|---|
//! | send starts | at `ts = max(t, nextgs[src])` (CPU and NIC free) | same: the sending block waits for its NIC, then pays `o + s1*O` of CPU |
//! | sender NIC | `nextgs[src] = ts + g + s1*G` | same |
//! | first byte at receiver | `ts + o + L` | same |
//! | receiver NIC takes it | at `tr = max(arrival, nextgr[dst], nexto[dst])`; `nextgr[dst] = tr + g + s1*G` | at `tr = max(arrival, nextgr[dst])`; `nextgr[dst] = tr + g + s1*G` |
//! | receiver CPU | `nexto[dst] = tr + o + max(s1*O, s1*G)` | the block the message triggers starts at or after `tr` and first pays `o + max(s1*O, s1*G)` |
//!
//! The one difference: LogGOPSim does not let the receive NIC take a message while the
//! receiving CPU is busy; here the NIC and the CPU are independent. Results are identical
//! whenever `o >= g` (then the CPU term always dominates), which holds for LogGOPSim's defaults
//! (`o = 1500`, `g = 1000`).
//!
//! GOAL schedules are simulated by the `opsim` crate with LogGOPSim's operation semantics
//! exactly; this model serves message-driven blocks.
//!
//! `S` (eager limit): in LogGOPSim, a message larger than `S` is sent by rendezvous, which
//! delays only the *completion* of the send operation (operations that `require` it wait for
//! the receiver to match). A message-driven block never waits for its own sends to complete,
//! so `S` changes nothing in replaying such traces; importers of operation-based schedules
//! (GOAL) use it to decide which send completions wait for the receiver.

use crate::{Driving, MessageInfo, NetworkModel, SendTiming};
use sim_core::{SimDuration, SimTime};

/// The LogGOPS parameters. `G` and `O` are times per byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogGopsParams {
    /// `L`: wire latency of the first byte.
    pub l: SimDuration,
    /// `o`: CPU overhead per message, on the sender and on the receiver.
    pub o: SimDuration,
    /// `g`: NIC gap between consecutive messages.
    pub g: SimDuration,
    /// `G`: NIC gap per byte (1 / bandwidth).
    pub g_per_byte: SimDuration,
    /// `O`: CPU overhead per byte.
    pub o_per_byte: SimDuration,
    /// `S`: largest eager message in bytes.
    pub eager_limit: u64,
}

impl Default for LogGopsParams {
    /// LogGOPSim's defaults read as nanoseconds: `L=2500ns,o=1500ns,g=1000ns,G=6ns,O=0,S=65535`.
    fn default() -> Self {
        LogGopsParams {
            l: SimDuration::from_ns(2500),
            o: SimDuration::from_ns(1500),
            g: SimDuration::from_ns(1000),
            g_per_byte: SimDuration::from_ns(6),
            o_per_byte: SimDuration::ZERO,
            eager_limit: 65535,
        }
    }
}

/// The LogGOPS model: per-PE send and receive NIC availability (`nextgs`, `nextgr`).
#[derive(Clone, Debug)]
pub struct LogGops {
    /// Parameters.
    pub params: LogGopsParams,
    next_send_ps: Vec<u64>,
    next_recv_ps: Vec<u64>,
}

impl LogGops {
    /// A model with every NIC free at time 0.
    pub fn new(params: LogGopsParams) -> Self {
        LogGops {
            params,
            next_send_ps: Vec::new(),
            next_recv_ps: Vec::new(),
        }
    }

    /// `(s - 1) * per_byte`, with `s = 0` treated as 1 byte.
    fn per_byte(per_byte: SimDuration, bytes: u64) -> u64 {
        per_byte.as_ps().saturating_mul(bytes.saturating_sub(1))
    }
}

fn slot(v: &mut Vec<u64>, pe: u32) -> &mut u64 {
    let i = pe as usize;
    if i >= v.len() {
        v.resize(i + 1, 0);
    }
    &mut v[i]
}

impl NetworkModel for LogGops {
    /// From departure (`ts + o`) to the receive NIC taking the message.
    fn wire_time(&mut self, msg: &MessageInfo, depart: SimTime) -> SimDuration {
        let p = self.params;
        let first = depart.as_ps().saturating_add(p.l.as_ps());
        let nic = slot(&mut self.next_recv_ps, msg.dst_pe);
        let tr = first.max(*nic);
        *nic = tr
            .saturating_add(p.g.as_ps())
            .saturating_add(Self::per_byte(p.g_per_byte, msg.bytes));
        SimDuration::from_ps(tr - depart.as_ps())
    }
    fn recv_overhead(&self, msg: &MessageInfo) -> SimDuration {
        let p = &self.params;
        let extra =
            Self::per_byte(p.o_per_byte, msg.bytes).max(Self::per_byte(p.g_per_byte, msg.bytes));
        SimDuration::from_ps(p.o.as_ps().saturating_add(extra))
    }
    fn sender(&mut self, msg: &MessageInfo, ready: SimTime) -> SendTiming {
        let p = self.params;
        let nic = slot(&mut self.next_send_ps, msg.src_pe);
        let ts = ready.as_ps().max(*nic);
        *nic = ts
            .saturating_add(p.g.as_ps())
            .saturating_add(Self::per_byte(p.g_per_byte, msg.bytes));
        let cpu = (ts - ready.as_ps())
            .saturating_add(p.o.as_ps())
            .saturating_add(Self::per_byte(p.o_per_byte, msg.bytes));
        SendTiming {
            cpu: SimDuration::from_ps(cpu),
            depart: SimTime::from_ps(ts.saturating_add(p.o.as_ps())),
        }
    }
    fn has_overheads(&self) -> bool {
        true
    }
    fn driving(&self) -> Driving {
        Driving::DepartureOrdered
    }
}
