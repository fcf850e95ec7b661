//! Static quality of a map (Charm++'s `LBInfo`, plus hop-bytes).

use crate::{LbDatabase, PeTopology};

/// How good a map looks before any replay.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Metrics {
    /// Largest effective PE load, in ps.
    pub max_load_ps: u64,
    /// Mean effective PE load, in ps.
    pub avg_load_ps: u64,
    /// `max_load / avg_load` (1 is perfect; 0 for an empty database).
    pub max_avg_load: f64,
    /// Objects whose PE changed.
    pub migrations: u64,
    /// Their migration sizes, summed.
    pub migrated_bytes: u64,
    /// Bytes between objects on different PEs (the cut of the communication graph).
    pub cut_bytes: u64,
    /// Messages between objects on different PEs.
    pub cut_messages: u64,
    /// Sum over the communication graph of bytes x hops between the two objects' PEs (PEs on
    /// one node are 0 hops apart); `None` without a topology.
    pub hop_bytes: Option<u64>,
}

/// The metrics of `map` (one PE per object) against the database.
pub fn metrics(db: &LbDatabase, map: &[u32], topo: Option<&PeTopology>) -> Metrics {
    let raw = db.raw_loads(map);
    let eff: Vec<u64> = raw
        .iter()
        .enumerate()
        .map(|(p, &r)| db.effective_ps(p as u32, r))
        .collect();
    let max = eff.iter().copied().max().unwrap_or(0);
    let sum: u128 = eff.iter().map(|&e| e as u128).sum();
    let avg = (sum / eff.len().max(1) as u128) as u64;
    let mut m = Metrics {
        max_load_ps: max,
        avg_load_ps: avg,
        max_avg_load: if sum == 0 {
            0.0
        } else {
            max as f64 * eff.len() as f64 / sum as f64
        },
        migrations: 0,
        migrated_bytes: 0,
        cut_bytes: 0,
        cut_messages: 0,
        hop_bytes: topo.map(|_| 0),
    };
    for (o, r) in db.objects.iter().enumerate() {
        if map[o] != r.from_pe {
            m.migrations += 1;
            m.migrated_bytes = m.migrated_bytes.saturating_add(r.migrate_bytes);
        }
    }
    for e in &db.edges {
        let (pa, pb) = (map[e.a as usize], map[e.b as usize]);
        if pa != pb {
            m.cut_bytes = m.cut_bytes.saturating_add(e.bytes);
            m.cut_messages += e.messages;
        }
        if let (Some(t), Some(hb)) = (topo, m.hop_bytes.as_mut()) {
            *hb = hb.saturating_add(e.bytes.saturating_mul(t.hops(pa, pb) as u64));
        }
    }
    m
}
