//! # network-models: how long a message takes, and what it costs the CPUs
//!
//! Contract of this crate:
//!
//! * A [`NetworkModel`] answers, for a message of `bytes` bytes from PE `src` to PE `dst`
//!   (`src != dst`; messages between objects on the same PE never reach the model and arrive
//!   when they are sent), the **wire time** from departure to arrival, and the **CPU overheads**
//!   the sender and receiver pay per message.
//! * A model either is *stateless* ([`NetworkModel::needs_departure_order`] is `false`: the
//!   replay may ask about a message at any point, e.g. when its sending block starts) or
//!   *stateful* (links, queues: the replay asks in non-decreasing order of departure time).
//! * Every model is built from a one-line [`NetSpec`] such as `alphabeta:lat=1us,bw=10GB/s`,
//!   whose [`Display`](std::fmt::Display) is canonical (all parameters, in a fixed order), so a
//!   spec printed in a result file can be pasted back on the command line.
//! * All arithmetic is integer picoseconds; byte costs round up to the next picosecond
//!   ([`Bandwidth::transfer_time`]).
//!
//! Models in this release (each row is `--net` syntax):
//!
//! | spec | wire time for a remote message of S bytes | CPU overheads |
//! |---|---|---|
//! | `ideal` | 0 | none |
//! | `latency:lat=D` | `lat` | none |
//! | `alphabeta:lat=D,bw=B[,o_send=D][,o_recv=D]` | `lat + ceil(S / bw)` | `o_send` on the sender, `o_recv` on the receiver, per remote message |
//!
//! Topologies (hypercube, mesh, torus), routing, link contention and LogGOPS extend this trait.

mod spec;
pub mod topology;

pub use sim_core::Bandwidth;
pub use spec::{NET_HELP, NetSpec, SpecError};
pub use topology::{LinkId, Topology};

use sim_core::SimDuration;

/// A message as the network sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessageInfo {
    /// Sending PE.
    pub src_pe: u32,
    /// Receiving PE (never equal to `src_pe`).
    pub dst_pe: u32,
    /// Payload size in bytes.
    pub bytes: u64,
}

/// A network cost model. See the [crate docs](crate) for the contract.
pub trait NetworkModel: std::fmt::Debug {
    /// Time from the message leaving the sender to its arrival at the receiver.
    fn wire_time(&mut self, msg: &MessageInfo) -> SimDuration;
    /// CPU time the sending PE spends per remote message (added to the sending block).
    fn send_overhead(&self, _msg: &MessageInfo) -> SimDuration {
        SimDuration::ZERO
    }
    /// CPU time the receiving PE spends per remote message (added to the triggered block).
    fn recv_overhead(&self, _msg: &MessageInfo) -> SimDuration {
        SimDuration::ZERO
    }
    /// True if some overhead can be non-zero (lets the replay skip overhead bookkeeping).
    fn has_overheads(&self) -> bool {
        false
    }
    /// True for stateful models that must see messages in non-decreasing departure order.
    fn needs_departure_order(&self) -> bool {
        false
    }
}

/// Messages arrive the instant they are sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ideal;

impl NetworkModel for Ideal {
    fn wire_time(&mut self, _msg: &MessageInfo) -> SimDuration {
        SimDuration::ZERO
    }
}

/// A fixed latency on every remote message (BigSim's simple model).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Latency {
    /// The per-message latency.
    pub latency: SimDuration,
}

impl NetworkModel for Latency {
    fn wire_time(&mut self, _msg: &MessageInfo) -> SimDuration {
        self.latency
    }
}

/// Latency plus size over bandwidth, with optional per-message CPU overheads (Hockney's model;
/// LogP's `o` as `o_send`/`o_recv`). No contention: every message sees the full bandwidth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AlphaBeta {
    /// Start-up latency (alpha).
    pub latency: SimDuration,
    /// Bandwidth (1/beta).
    pub bandwidth: Bandwidth,
    /// CPU time on the sender per remote message.
    pub send_overhead: SimDuration,
    /// CPU time on the receiver per remote message.
    pub recv_overhead: SimDuration,
    ps_per_byte: Option<u64>,
}

impl AlphaBeta {
    /// A model with the given parameters.
    pub fn new(
        latency: SimDuration,
        bandwidth: Bandwidth,
        send_overhead: SimDuration,
        recv_overhead: SimDuration,
    ) -> Self {
        let per_s = bandwidth.bytes_per_s();
        let ps_per_byte = (1_000_000_000_000u64 % per_s == 0).then(|| 1_000_000_000_000u64 / per_s);
        AlphaBeta {
            latency,
            bandwidth,
            send_overhead,
            recv_overhead,
            ps_per_byte,
        }
    }
}

impl NetworkModel for AlphaBeta {
    #[inline]
    fn wire_time(&mut self, msg: &MessageInfo) -> SimDuration {
        let transfer = match self.ps_per_byte {
            Some(p) => SimDuration::from_ps(msg.bytes.saturating_mul(p)),
            None => self.bandwidth.transfer_time(msg.bytes),
        };
        self.latency.saturating_add(transfer)
    }
    fn send_overhead(&self, _msg: &MessageInfo) -> SimDuration {
        self.send_overhead
    }
    fn recv_overhead(&self, _msg: &MessageInfo) -> SimDuration {
        self.recv_overhead
    }
    fn has_overheads(&self) -> bool {
        self.send_overhead != SimDuration::ZERO || self.recv_overhead != SimDuration::ZERO
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(bytes: u64) -> MessageInfo {
        MessageInfo {
            src_pe: 0,
            dst_pe: 1,
            bytes,
        }
    }

    #[test]
    fn closed_forms() {
        assert_eq!(Ideal.wire_time(&msg(1 << 30)), SimDuration::ZERO);
        let mut l = Latency {
            latency: SimDuration::from_us(5),
        };
        assert_eq!(l.wire_time(&msg(1 << 30)), SimDuration::from_us(5));
        let bw = Bandwidth::parse("10GB/s").unwrap();
        let mut ab = AlphaBeta::new(
            SimDuration::from_us(1),
            bw,
            SimDuration::ZERO,
            SimDuration::ZERO,
        );
        // 1 us + 65536 B * 100 ps/B
        assert_eq!(ab.wire_time(&msg(65536)).as_ps(), 1_000_000 + 6_553_600);
        assert!(!ab.has_overheads());
        // A bandwidth that does not divide 10^12 takes the exact rounding-up path.
        let mut odd = AlphaBeta::new(
            SimDuration::ZERO,
            Bandwidth::parse("3GB/s").unwrap(),
            SimDuration::ZERO,
            SimDuration::ZERO,
        );
        assert_eq!(odd.wire_time(&msg(1)).as_ps(), 334);
        assert_eq!(odd.wire_time(&msg(3)).as_ps(), 1000);
    }
}
