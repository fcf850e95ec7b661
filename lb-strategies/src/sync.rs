//! Where a load balancer runs: at the start, or at a sync point (`at_sync`) of the trace.
//!
//! A block marked `lb_sync` is an object's arrival at a sync point. The sync point's
//! **iteration** is one more than the highest iteration label among the object's blocks up to
//! and including that block (0 if it has none): the iteration the object resumes into. E.g. in
//! `simple-imbalance` with `lb_at=5` every object syncs after its iteration-4 work, so the sync
//! point is iteration 5.
//!
//! Blocks of one object are taken in trace order, which is their execution order (the
//! emulator and the importers write them so).
//!
//! At sync point `K` ([`LbPoint::Iteration`]):
//! * objects with an `lb_sync` block at iteration `K` are **migratable**; the balancer may move
//!   them, and their blocks after that block run on the new PE;
//! * objects without one are **not migratable** (they never call `at_sync` there); their load
//!   counts as the background load of their PE;
//! * the **load window** of a migratable object is its blocks after its previous sync block (or
//!   from its first block) up to and including its sync block at `K`; for a non-migratable
//!   object, its blocks whose running iteration label is in `[K_prev, K)`, where `K_prev` is
//!   the previous sync iteration in the trace (0 if none).
//!
//! At [`LbPoint::Start`] every object is migratable and the window is the whole trace: the
//! balancer maps the whole run (as a static partitioner or an initial placement would).
//!
//! At either point a [pinned](trace::ObjectInfo::pinned) object is never migratable (a
//! Charm++ PE's main chare, groups and runtime): its load is its PE's background load, and at
//! a sync point its window is that of an object without a sync block.

use crate::LbError;
use std::fmt;
use std::str::FromStr;
use trace::{BlockId, Trace};

/// When the balancer runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LbPoint {
    /// Before the first block: the new map applies to the whole run.
    #[default]
    Start,
    /// At the sync point of iteration `K`.
    Iteration(u32),
}

impl FromStr for LbPoint {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "start" => Ok(LbPoint::Start),
            t => t.parse().map(LbPoint::Iteration).map_err(|_| {
                format!("LB point `{s}`: expected `start` or an iteration number, e.g. 5")
            }),
        }
    }
}

impl fmt::Display for LbPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LbPoint::Start => write!(f, "start"),
            LbPoint::Iteration(k) => write!(f, "iteration {k}"),
        }
    }
}

/// The sync points found in a trace and the one chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncPlan {
    /// The chosen point.
    pub point: LbPoint,
    /// Per object: may the balancer move it?
    pub migratable: Vec<bool>,
    /// Per object: its sync block at the chosen point (`None` at the start and for objects
    /// that are not migratable). Pass it to the replay's remap.
    pub switch_after: Vec<Option<BlockId>>,
    /// Per block: does its duration count in the load window?
    pub in_window: Vec<bool>,
}

/// Every sync iteration in the trace, sorted and distinct.
pub fn sync_iterations(trace: &Trace) -> Vec<u32> {
    let mut v: Vec<u32> = sync_blocks(trace).into_iter().map(|(_, k, _)| k).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// `(object, sync iteration, block)` for every `lb_sync` block, in block order.
fn sync_blocks(trace: &Trace) -> Vec<(u32, u32, BlockId)> {
    let mut running: Vec<Option<u32>> = vec![None; trace.objects.len()];
    let mut out = Vec::new();
    for id in trace.block_ids() {
        let b = trace.block(id);
        let o = b.object.index();
        if let Some(k) = b.iteration {
            running[o] = Some(running[o].map_or(k, |r| r.max(k)));
        }
        if b.lb_sync {
            out.push((o as u32, running[o].map_or(0, |r| r.saturating_add(1)), id));
        }
    }
    out
}

impl SyncPlan {
    /// Finds the sync blocks of `point`. Errors when no object syncs at that iteration (the
    /// message lists the iterations that have sync points).
    pub fn find(trace: &Trace, point: LbPoint) -> Result<SyncPlan, LbError> {
        let n_obj = trace.objects.len();
        let n = trace.num_blocks();
        let LbPoint::Iteration(k) = point else {
            return Ok(SyncPlan {
                point,
                migratable: trace.objects.iter().map(|o| !o.pinned).collect(),
                switch_after: vec![None; n_obj],
                in_window: vec![true; n],
            });
        };
        let syncs = sync_blocks(trace);
        let mut switch_after: Vec<Option<BlockId>> = vec![None; n_obj];
        let mut prev: Vec<Option<BlockId>> = vec![None; n_obj];
        let mut k_prev = 0u32;
        for &(o, it, b) in &syncs {
            let o = o as usize;
            if it < k {
                prev[o] = Some(b);
                k_prev = k_prev.max(it);
            } else if it == k && switch_after[o].is_none() {
                switch_after[o] = Some(b);
            }
        }
        if switch_after.iter().all(Option::is_none) {
            let its = sync_iterations(trace);
            return Err(LbError::NoSyncPoint(if its.is_empty() {
                format!(
                    "trace `{}` has no LB sync point (no block is marked lb_sync); use the start \
                     (--at start) instead of iteration {k}",
                    trace.meta.name
                )
            } else {
                format!(
                    "trace `{}` has no LB sync point at iteration {k}; it has sync points at \
                     iteration{} {}",
                    trace.meta.name,
                    if its.len() == 1 { "" } else { "s" },
                    its.iter()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }));
        }
        for (s, o) in switch_after.iter_mut().zip(&trace.objects) {
            if o.pinned {
                *s = None;
            }
        }
        let migratable: Vec<bool> = switch_after.iter().map(Option::is_some).collect();
        let mut in_window = vec![false; n];
        let mut running: Vec<Option<u32>> = vec![None; n_obj];
        for id in trace.block_ids() {
            let b = trace.block(id);
            let o = b.object.index();
            if let Some(it) = b.iteration {
                running[o] = Some(running[o].map_or(it, |r| r.max(it)));
            }
            in_window[id.index()] = match switch_after[o] {
                Some(s) => id <= s && prev[o].is_none_or(|p| id > p),
                None => {
                    let r = running[o].unwrap_or(0);
                    r >= k_prev && r < k
                }
            };
        }
        Ok(SyncPlan {
            point,
            migratable,
            switch_after,
            in_window,
        })
    }
}
