//! # lb-strategies: load-balancing strategies as pure functions
//!
//! Contract of this crate: from a trace and a chosen LB point it builds an [`LbDatabase`]
//! (per-object load in the window before the point, background load and CPU speed per PE,
//! the object communication graph, migration sizes), and each [`Strategy`] turns that
//! database (and, for `topo`, the simulated topology) into a new object -> PE map. Strategies
//! are pure: the same database, topology and seed give the same map. [`metrics`] scores a map
//! statically (max/avg load, migrations, cut bytes, hop-bytes); the `replay` crate applies it
//! (`replay::Mapping::Explicit` at the start, `replay::Remap` at a sync point) to score it
//! dynamically.
//!
//! | name | algorithm | uses |
//! |---|---|---|
//! | `dummy` | no moves | - |
//! | `rotate` | `p + 1 mod P` | - |
//! | `random` | uniform PE from a seeded ChaCha8 stream | seed |
//! | `greedy` | LPT: heaviest object to least-loaded PE | loads, background, speed |
//! | `greedy-refine` | keep an object home under greedy's max x tolerance | + current PE |
//! | `refine` (a/b) | bisected threshold, moves off the heaviest PE | + current PE |
//! | `rec-bipart` | recursive bipartition of graph and PE set | + communication graph |
//! | `topo` | rec-bipart groups placed to minimise hop-bytes | + topology |
//!
//! Placement files (`--map file:PATH`: a PE per object name) are read by [`mapfile`].
//! Sync points and load windows are defined in [`sync`]; the algorithms' exact rules are in
//! their modules. Ties are broken by lower object id, then lower PE id, everywhere.

mod db;
mod error;
mod greedy;
pub mod lbdump;
pub mod mapfile;
mod metrics;
mod partition;
mod refine;
mod strategy;
pub mod sync;
mod topo;

#[cfg(test)]
mod tests;

pub use db::{CommEdge, DbOptions, LbDatabase, ObjectRecord, PeRecord};
pub use error::LbError;
pub use lbdump::{LbDump, parse_lbdump};
pub use metrics::{Metrics, metrics};
pub use refine::RefineVariant;
pub use strategy::{KNOWN, Kind, STRATEGIES_HELP, Strategy, parse_list};
pub use sync::{LbPoint, SyncPlan, sync_iterations};

use network_models::Topology;

/// Where PEs sit on the interconnect: PE `p` is on node `p / pes_per_node`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeTopology {
    /// The interconnect.
    pub topology: Topology,
    /// PEs per node (at least 1).
    pub pes_per_node: u32,
}

impl PeTopology {
    /// Hops between the nodes of PEs `a` and `b` (0 on one node).
    pub fn hops(&self, a: u32, b: u32) -> u32 {
        let ppn = self.pes_per_node.max(1);
        let (x, y) = ((a / ppn) as u64, (b / ppn) as u64);
        if x == y { 0 } else { self.topology.hops(x, y) }
    }
    /// Checks that `pes` PEs fit on the topology.
    pub fn check(&self, pes: u32) -> Result<(), LbError> {
        let need = pes.div_ceil(self.pes_per_node.max(1)) as u64;
        if need > self.topology.nodes() {
            return Err(LbError::Config(format!(
                "{pes} PEs at {} per node need {need} nodes, but {} has {}",
                self.pes_per_node,
                self.topology,
                self.topology.nodes()
            )));
        }
        Ok(())
    }
}
