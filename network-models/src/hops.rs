//! The `hops` model: latency, per-hop latency and bandwidth on a topology, no contention.

use crate::{FixedCosts, MessageInfo, NetStats, NetworkModel, Topology};
use sim_core::{Bandwidth, SimDuration, SimTime};

/// Latency, per-hop latency and bandwidth on a topology, without contention: a remote message
/// between nodes `a != b` takes `lat + hops(a, b) * hop + ceil(S / bw)`; between two PEs of one
/// node, `lat_intra + ceil(S / bw_intra)`. PE `p` sits on node `p / ppn`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hops {
    /// The interconnect.
    pub topology: Topology,
    /// Start-up latency of an inter-node message.
    pub latency: SimDuration,
    /// Added per hop.
    pub per_hop: SimDuration,
    /// Inter-node bandwidth.
    pub bandwidth: Bandwidth,
    /// PEs per node (at least 1).
    pub pes_per_node: u32,
    /// Latency between PEs of one node.
    pub intra_latency: SimDuration,
    /// Bandwidth between PEs of one node.
    pub intra_bandwidth: Bandwidth,
}

impl Hops {
    /// The model, with empty traffic counters.
    pub fn model(self) -> HopsModel {
        HopsModel {
            p: self,
            messages: 0,
            hop_bytes: 0,
        }
    }
}

/// The [`Hops`] model at run time: the parameters plus traffic counters.
#[derive(Clone, Debug)]
pub struct HopsModel {
    p: Hops,
    messages: u64,
    hop_bytes: u64,
}

impl HopsModel {
    /// The wire time of `msg`, counted `times` times in the traffic statistics.
    fn wire_counted(&mut self, msg: &MessageInfo, times: u64) -> SimDuration {
        let p = &self.p;
        let ppn = p.pes_per_node.max(1);
        let (a, b) = ((msg.src_pe / ppn) as u64, (msg.dst_pe / ppn) as u64);
        if a == b {
            return p
                .intra_latency
                .saturating_add(p.intra_bandwidth.transfer_time(msg.bytes));
        }
        let hops = p.topology.hops(a, b) as u64;
        self.messages = self.messages.saturating_add(times);
        self.hop_bytes = self
            .hop_bytes
            .saturating_add(hops.saturating_mul(msg.bytes).saturating_mul(times));
        p.latency
            .saturating_add(p.per_hop.saturating_mul(hops))
            .saturating_add(p.bandwidth.transfer_time(msg.bytes))
    }
}

impl NetworkModel for HopsModel {
    #[inline]
    fn wire_time(&mut self, msg: &MessageInfo, _depart: SimTime) -> SimDuration {
        self.wire_counted(msg, 1)
    }
    fn fixed_costs(&mut self, msg: &MessageInfo, times: u64) -> Option<FixedCosts> {
        Some(FixedCosts {
            wire: self.wire_counted(msg, times),
            ..FixedCosts::default()
        })
    }
    fn check_pes(&self, pes: u32) -> Result<(), String> {
        check_fit(&self.p.topology, self.p.pes_per_node, pes)
    }
    fn stats(&self) -> Option<NetStats> {
        Some(NetStats {
            messages: self.messages,
            hop_bytes: self.hop_bytes,
            ..NetStats::default()
        })
    }
}

/// Checks that `pes` PEs at `ppn` per node fit on `topology`.
pub(crate) fn check_fit(topology: &Topology, ppn: u32, pes: u32) -> Result<(), String> {
    let need = pes.div_ceil(ppn.max(1)) as u64;
    if need > topology.nodes() {
        return Err(format!(
            "{pes} PEs at {ppn} per node need {need} nodes, but {topology} has {}",
            topology.nodes()
        ));
    }
    Ok(())
}
