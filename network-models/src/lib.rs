//! # network-models: how long a message takes, and what it costs the CPUs
//!
//! Contract of this crate:
//!
//! * A [`NetworkModel`] answers, for a message of `bytes` bytes from PE `src` to PE `dst`
//!   (`src != dst`; messages between objects on the same PE never reach the model and arrive
//!   when they are sent), the **wire time** from departure to arrival, and the **CPU overheads**
//!   the sender and receiver pay per message.
//! * How the replay drives a model is its [`Driving`]: *stateless* models are asked about a
//!   message whenever convenient (when its sending block starts); *departure-ordered* models
//!   (per-NIC state, e.g. LogGOPS) are asked at each departure in time order; *event-driven*
//!   models (packets on links) schedule their own events in the replay's queue through
//!   [`NetIo`] and report each delivery with its wire and queueing time.
//! * The sender's side of a message ([`NetworkModel::sender`]) may stall the sending block
//!   (LogGOPS waits for a busy NIC) and sets the departure time; the receiver's CPU overhead
//!   ([`NetworkModel::recv_overhead`]) is paid at the start of the block the message triggers.
//! * Every model is built from a one-line [`NetSpec`] such as `alphabeta:lat=1us,bw=10GB/s`,
//!   or from a table with `model = "..."` (TOML, JSON: [`NetSpec`] implements
//!   `serde::Deserialize` for both forms). Its [`Display`](std::fmt::Display) is canonical
//!   (all parameters, in a fixed order), so a spec printed in a result file can be pasted back
//!   on the command line.
//! * All arithmetic is integer picoseconds; byte costs round up to the next picosecond
//!   ([`Bandwidth::transfer_time`]).
//!
//! Models in this release (each row is `--net` syntax; `s1 = S - 1`):
//!
//! | spec | wire time for a remote message of S bytes | CPU overheads |
//! |---|---|---|
//! | `ideal` | 0 | none |
//! | `recorded` ([`Recorded`]) | the delay recorded in the trace, for local messages too | none |
//! | `latency:lat=D` | `lat` | none |
//! | `alphabeta:lat=D,bw=B[,o_send=D][,o_recv=D]` | `lat + ceil(S / bw)` | `o_send` on the sender, `o_recv` on the receiver, per remote message |
//! | `hops:topo=T,lat=D,hop=D,bw=B[,ppn=N,lat_intra=D,bw_intra=B]` | `lat + hops * hop + ceil(S / bw)` between nodes; `lat_intra + ceil(S / bw_intra)` within a node | none |
//! | `loggops:L=D,o=D,g=D,G=D,O=D,S=BYTES` ([`loggops`]) | first byte `o + L` after the send starts; NICs busy `g + s1*G` per message on each side | sender `o + s1*O` (plus any wait for its NIC), receiver `o + max(s1*O, s1*G)` |
//! | `contention:topo=T,lat=D,hop=D,bw=B[,packet=BYTES,switching=vct\|saf,nic_bw=B\|off,ppn=N,...]` ([`contention`]) | packets through per-link FIFO queues (and NICs when `nic_bw` is set); alone: `lat + H*hop + sum(s_j)` (vct), plus `(H-1)*s_1` (saf) | none |
//!
//! Topologies `T` ([`Topology`]): `full:N`, `hypercube:D`, `mesh:AxBxC`, `torus:AxBxC`, with
//! dimension-order routing, `fattree:...` (D-mod-k) and `dragonfly:...` (minimal or Valiant)
//! ([`topology`]).
//!
//! Topology models report [`NetStats`] (inter-node messages, hop-bytes; per-link bytes, busy
//! time, maximum queue and wait for `contention`).

pub mod contention;
pub mod flow;
mod hops;
pub mod loggops;
mod lone;
pub mod simgrid;
mod spec;
#[cfg(test)]
mod testkit;
pub mod topology;

pub use contention::{Contention, ContentionParams, Switching};
pub use flow::{FlowModel, FlowParams};
pub use hops::{Hops, HopsModel};
pub use loggops::{LogGops, LogGopsParams};
pub use lone::lone_wire_time;
pub use sim_core::Bandwidth;
pub use spec::{
    MACHINES, NET_HELP, NetSpec, SpecError, TOPOLOGY_KEYS, fmt_ppm, machine, parse_ppm,
};
pub use topology::{LinkId, Topology};

use sim_core::{SimDuration, SimTime};

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

/// How the replay must drive a model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driving {
    /// [`NetworkModel::wire_time`] may be asked at any moment (when the sending block starts).
    Stateless,
    /// [`NetworkModel::wire_time`] is asked at each message's departure, in non-decreasing
    /// departure time (ties in the replay's event order): models with per-NIC state.
    DepartureOrdered,
    /// The model runs its own events through [`NetworkModel::start_message`] and
    /// [`NetworkModel::handle_event`], and reports deliveries in a [`NetIo`]: packet models.
    EventDriven,
}

/// What sending one message costs the sender, from [`NetworkModel::sender`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendTiming {
    /// CPU time the sending block spends on this message, from the moment it asked to send
    /// (includes any wait for a busy NIC).
    pub cpu: SimDuration,
    /// When the message leaves the sender (its departure time for the wire model).
    pub depart: SimTime,
}

/// The costs of a message under a model whose costs depend only on the message itself
/// ([`NetworkModel::fixed_costs`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FixedCosts {
    /// Departure to arrival.
    pub wire: SimDuration,
    /// CPU time the sending block spends on it (its departure is that much later).
    pub send_cpu: SimDuration,
    /// CPU time the receiving block spends on it (at its start).
    pub recv_cpu: SimDuration,
}

/// One message delivered by an event-driven model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// Arrival time (the last byte is at the receiver).
    pub at: SimTime,
    /// The token the replay gave in [`NetworkModel::start_message`].
    pub token: u32,
    /// Time from departure to arrival.
    pub wire: SimDuration,
    /// Part of `wire` spent waiting for busy links or NICs.
    pub queueing: SimDuration,
}

/// Output buffer of an event-driven model: events to schedule and messages delivered. The
/// replay drains both after every call, so the buffers stop growing once warm (no allocation
/// per event).
#[derive(Debug, Default)]
pub struct NetIo {
    /// `(time, model event id)`: the replay calls [`NetworkModel::handle_event`] with the id at
    /// that time. Events at equal times are handled in the order they were pushed.
    pub events: Vec<(SimTime, u32)>,
    /// Messages whose last byte has arrived.
    pub deliveries: Vec<Delivery>,
}

/// A network cost model. See the [crate docs](crate) for the contract.
pub trait NetworkModel: std::fmt::Debug {
    /// Time from the message leaving the sender at `depart` to its arrival at the receiver
    /// ([`Driving::Stateless`] and [`Driving::DepartureOrdered`] models).
    fn wire_time(&mut self, msg: &MessageInfo, depart: SimTime) -> SimDuration;
    /// CPU time the sending PE spends per remote message (added to the sending block).
    fn send_overhead(&self, _msg: &MessageInfo) -> SimDuration {
        SimDuration::ZERO
    }
    /// CPU time the receiving PE spends per remote message (added to the triggered block).
    fn recv_overhead(&self, _msg: &MessageInfo) -> SimDuration {
        SimDuration::ZERO
    }
    /// The sender's side of a message the sending block asks to send at `ready`. Called once
    /// per remote message, for each PE in non-decreasing `ready` order. The default is
    /// [`NetworkModel::send_overhead`] of CPU and departure when that overhead is paid.
    fn sender(&mut self, msg: &MessageInfo, ready: SimTime) -> SendTiming {
        let cpu = self.send_overhead(msg);
        SendTiming {
            cpu,
            depart: ready.saturating_add(cpu),
        }
    }
    /// For a model whose costs for `msg` depend neither on time nor on other messages: those
    /// costs, having counted `msg` `times` times in its statistics (as if
    /// [`NetworkModel::wire_time`] had been asked that often). The replay then computes every
    /// delivery up front and never calls the model while it runs. `None` (the default): the
    /// replay asks the model message by message, as [`NetworkModel::driving`] says.
    fn fixed_costs(&mut self, _msg: &MessageInfo, _times: u64) -> Option<FixedCosts> {
        None
    }
    /// True if some overhead can be non-zero (lets the replay skip overhead bookkeeping).
    fn has_overheads(&self) -> bool {
        false
    }
    /// How the replay must drive this model.
    fn driving(&self) -> Driving {
        Driving::Stateless
    }
    /// Event-driven models: the message identified by `token` leaves at `now`.
    fn start_message(&mut self, _now: SimTime, _msg: &MessageInfo, _token: u32, _io: &mut NetIo) {}
    /// Event-driven models: an event the model pushed to [`NetIo::events`] is due at `now`.
    fn handle_event(&mut self, _now: SimTime, _event: u32, _io: &mut NetIo) {}
    /// Checks that a machine of `pes` PEs fits this model (e.g. enough topology nodes).
    fn check_pes(&self, _pes: u32) -> Result<(), String> {
        Ok(())
    }
    /// Checks that the largest message of a run (`bytes`) is within what this model can
    /// simulate in bounded memory (e.g. its packet count).
    fn check_message(&self, _bytes: u64) -> Result<(), String> {
        Ok(())
    }
    /// Bytes this model is expected to hold at its peak (its per-link and per-message state),
    /// for memory estimates made before a run: a machine of `pes` PEs, at most `in_flight`
    /// messages in flight at once, of `mean_bytes` bytes on average. 0 (the default): the
    /// model holds nothing that grows with the machine or the traffic.
    fn state_bytes(&self, _pes: u32, _in_flight: u64, _mean_bytes: u64) -> u64 {
        0
    }
    /// The run has ended (no message in flight): the model may free what only messages in
    /// flight needed, before [`NetworkModel::stats`] builds its tables. Statistics are kept.
    fn end_of_run(&mut self) {}
    /// Traffic statistics gathered so far (models with a topology).
    fn stats(&self) -> Option<NetStats> {
        None
    }
    /// True if the replay should deliver each message after the delay recorded in the trace
    /// instead of asking this model ([`Recorded`]).
    fn uses_recorded_delays(&self) -> bool {
        false
    }
}

/// The source and destination nodes of `msg` (PE `p` is on node `p / ppn`), or `None` after
/// delivering it when both PEs share a node (`lat_intra + ceil(S / bw_intra)`, no sharing):
/// the topology models' first step for every message.
pub(crate) fn nodes_or_deliver(
    ppn: u32,
    intra_latency: SimDuration,
    intra_bandwidth: sim_core::Bandwidth,
    now: SimTime,
    msg: &MessageInfo,
    token: u32,
    io: &mut NetIo,
) -> Option<(u64, u64)> {
    let ppn = ppn.max(1);
    let (a, b) = ((msg.src_pe / ppn) as u64, (msg.dst_pe / ppn) as u64);
    if a != b {
        return Some((a, b));
    }
    let wire = intra_latency.saturating_add(intra_bandwidth.transfer_time(msg.bytes));
    io.deliveries.push(Delivery {
        at: now.saturating_add(wire),
        token,
        wire,
        queueing: SimDuration::ZERO,
    });
    None
}

/// What one link or NIC carried.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LinkStats {
    /// `link`, `inject` (a node's NIC toward the network) or `eject` (network to node).
    pub kind: &'static str,
    /// Node the link leaves (or the NIC's node).
    pub node: u64,
    /// Output port on `node` (see [`topology`]); 0 for NICs.
    pub port: u64,
    /// Node the link leads to (the NIC's node for NICs).
    pub to_node: u64,
    /// Payload bytes carried.
    pub bytes: u64,
    /// Packets carried.
    pub packets: u64,
    /// Time spent transmitting.
    pub busy_ps: u64,
    /// Most packets ever waiting for it at once (not counting the one on it).
    pub max_queue: u64,
    /// Longest wait of one packet for it.
    pub max_wait_ps: u64,
}

/// Traffic statistics of a topology model.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NetStats {
    /// Inter-node messages.
    pub messages: u64,
    /// Sum over inter-node messages of bytes x hops.
    pub hop_bytes: u64,
    /// Packets injected (contention model; 0 otherwise).
    pub packets: u64,
    /// Link traversals by packets (contention model; 0 otherwise).
    pub packet_hops: u64,
    /// Links and NICs that carried something, in resource order (contention model).
    pub links: Vec<LinkStats>,
}

/// Messages arrive the instant they are sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ideal;

impl NetworkModel for Ideal {
    fn wire_time(&mut self, _msg: &MessageInfo, _depart: SimTime) -> SimDuration {
        SimDuration::ZERO
    }
    fn fixed_costs(&mut self, _msg: &MessageInfo, _times: u64) -> Option<FixedCosts> {
        Some(FixedCosts::default())
    }
}

/// Each message takes the delay recorded in the trace (from its recorded send time to the
/// recorded arrival at the consumer), local messages included. The replay does the work: this
/// model only tells it to ([`NetworkModel::uses_recorded_delays`]); its own wire time is 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recorded;

impl NetworkModel for Recorded {
    fn wire_time(&mut self, _msg: &MessageInfo, _depart: SimTime) -> SimDuration {
        SimDuration::ZERO
    }
    fn uses_recorded_delays(&self) -> bool {
        true
    }
}

/// A fixed latency on every remote message (BigSim's simple model).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Latency {
    /// The per-message latency.
    pub latency: SimDuration,
}

impl NetworkModel for Latency {
    fn wire_time(&mut self, _msg: &MessageInfo, _depart: SimTime) -> SimDuration {
        self.latency
    }
    fn fixed_costs(&mut self, _msg: &MessageInfo, _times: u64) -> Option<FixedCosts> {
        Some(FixedCosts {
            wire: self.latency,
            ..FixedCosts::default()
        })
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
    fn wire_time(&mut self, msg: &MessageInfo, _depart: SimTime) -> SimDuration {
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
    fn fixed_costs(&mut self, msg: &MessageInfo, _times: u64) -> Option<FixedCosts> {
        Some(FixedCosts {
            wire: self.wire_time(msg, SimTime::ZERO),
            send_cpu: self.send_overhead,
            recv_cpu: self.recv_overhead,
        })
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
        assert_eq!(
            Ideal.wire_time(&msg(1 << 30), SimTime::ZERO),
            SimDuration::ZERO
        );
        let mut l = Latency {
            latency: SimDuration::from_us(5),
        };
        assert_eq!(
            l.wire_time(&msg(1 << 30), SimTime::ZERO),
            SimDuration::from_us(5)
        );
        let bw = Bandwidth::parse("10GB/s").unwrap();
        let mut ab = AlphaBeta::new(
            SimDuration::from_us(1),
            bw,
            SimDuration::ZERO,
            SimDuration::ZERO,
        );
        // 1 us + 65536 B * 100 ps/B
        assert_eq!(
            ab.wire_time(&msg(65536), SimTime::ZERO).as_ps(),
            1_000_000 + 6_553_600
        );
        assert!(!ab.has_overheads());
        // A bandwidth that does not divide 10^12 takes the exact rounding-up path.
        let mut odd = AlphaBeta::new(
            SimDuration::ZERO,
            Bandwidth::parse("3GB/s").unwrap(),
            SimDuration::ZERO,
            SimDuration::ZERO,
        );
        assert_eq!(odd.wire_time(&msg(1), SimTime::ZERO).as_ps(), 334);
        assert_eq!(odd.wire_time(&msg(3), SimTime::ZERO).as_ps(), 1000);
    }

    #[test]
    fn hops_uncontended_message_is_lat_plus_hops_times_hop_plus_size_over_bw() {
        let s = 65536u64;
        let transfer = Bandwidth::parse("10GB/s").unwrap().transfer_time(s).as_ps();
        for (topo, pairs) in [
            ("hypercube:10", vec![(0u32, 1023u32), (5, 6), (1, 2)]),
            ("mesh:8x8x8", vec![(0, 511), (9, 10), (3, 3 + 8 * 5)]),
            ("torus:8x8x8", vec![(0, 511), (0, 4), (7, 8 * 7)]),
            ("full:64", vec![(0, 63), (10, 11)]),
        ] {
            let NetSpec::Hops(h) = format!("hops:topo={topo},lat=1us,hop=50ns,bw=10GB/s")
                .parse()
                .unwrap()
            else {
                unreachable!()
            };
            let topology = h.topology.clone();
            let mut m = h.model();
            for (a, b) in pairs {
                let hops = topology.hops(a as u64, b as u64) as u64;
                let info = MessageInfo {
                    src_pe: a,
                    dst_pe: b,
                    bytes: s,
                };
                assert_eq!(
                    m.wire_time(&info, SimTime::ZERO).as_ps(),
                    1_000_000 + hops * 50_000 + transfer,
                    "{topo} {a}->{b}"
                );
            }
        }
        // Two PEs per node: PEs 6 and 7 share node 3 and use the intra-node parameters.
        let NetSpec::Hops(h) =
            "hops:topo=torus:4x4,lat=1us,hop=50ns,bw=10GB/s,ppn=2,lat_intra=200ns,bw_intra=40GB/s"
                .parse()
                .unwrap()
        else {
            unreachable!()
        };
        let mut m = h.model();
        assert_eq!(
            m.wire_time(
                &MessageInfo {
                    src_pe: 6,
                    dst_pe: 7,
                    bytes: 4000
                },
                SimTime::ZERO
            )
            .as_ps(),
            200_000 + 100_000
        );
        // PE 1 (node 0) to PE 7 (node 3 = (3,0)): wraps to 1 hop.
        assert_eq!(
            m.wire_time(
                &MessageInfo {
                    src_pe: 1,
                    dst_pe: 7,
                    bytes: 0
                },
                SimTime::ZERO
            )
            .as_ps(),
            1_050_000
        );
        assert!(m.check_pes(32).is_ok());
        assert!(m.check_pes(33).unwrap_err().contains("need 17 nodes"));
    }
}
