//! Moving objects part-way through a run: the mapping a load balancer decides at a sync point.
//!
//! A [`Remap`] gives each object a new PE and the block after which it applies: the object's
//! blocks up to and including `switch_after[o]` run where [`crate::Mapping`] puts them; its
//! later blocks (in trace order, which is an object's execution order) run on `map[o]`.
//! Objects with no switch block never move. A remap at the very start is simply
//! [`crate::Mapping::Explicit`].
//!
//! [`with_migration_cost`] charges the move itself: the object's state travels from its old PE
//! to its new one as a message of its migration size, and none of its later blocks can start
//! before that message has arrived.

use crate::ReplayError;
use trace::{Block, BlockId, Destination, EntryId, EntryMethod, MsgId, Send, Trace};

/// Objects moving to new PEs after given blocks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Remap {
    /// The new PE of every object (ignored for objects that never switch).
    pub map: Vec<u32>,
    /// Per object, the last block that runs on the old PE (`None`: the object never moves).
    pub switch_after: Vec<Option<BlockId>>,
}

/// Name of the entry method [`with_migration_cost`] adds for arriving objects.
pub const MIGRATE_ENTRY: &str = "lb_migrate";

impl Remap {
    /// Checks the remap against a trace and a machine of `pes` PEs.
    pub fn check(&self, trace: &Trace, pes: u32) -> Result<(), ReplayError> {
        let n = trace.objects.len();
        if self.map.len() != n || self.switch_after.len() != n {
            return Err(ReplayError::Config(format!(
                "the remap names {} objects ({} switch points) but the trace has {n}",
                self.map.len(),
                self.switch_after.len()
            )));
        }
        for (o, (pe, sw)) in self.map.iter().zip(&self.switch_after).enumerate() {
            if let Some(b) = sw {
                if *pe >= pes {
                    return Err(ReplayError::Config(format!(
                        "the remap puts object {o} on PE {pe}, but there are {pes} PEs"
                    )));
                }
                if b.index() >= trace.num_blocks() || trace.block(*b).object.index() != o {
                    return Err(ReplayError::Config(format!(
                        "the remap switches object {o} after {b}, which is not one of its blocks"
                    )));
                }
            }
        }
        Ok(())
    }
}

/// Returns a copy of `trace` in which every object that changes PE under `remap` (its PE under
/// `old_map` differs from `remap.map`) and has a migration size above 0 sends itself from its
/// switch block, at that block's end, to a new zero-duration block of entry [`MIGRATE_ENTRY`]
/// on its new PE; every later block of the object depends on that block. Also returns the remap
/// adjusted to the new block numbering (the migrate block is the first block on the new PE)
/// and the number of objects that were charged.
///
/// `old_map` and `bytes` give each object's PE before the switch and its migration size.
pub fn with_migration_cost(
    trace: &Trace,
    remap: &Remap,
    old_map: &[u32],
    bytes: &[u64],
) -> Result<(Trace, Remap, usize), ReplayError> {
    let n_obj = trace.objects.len();
    if old_map.len() != n_obj || bytes.len() != n_obj {
        return Err(ReplayError::Config(format!(
            "migration cost needs an old PE and a size for each of the {n_obj} objects"
        )));
    }
    let moves =
        |o: usize| remap.switch_after[o].is_some() && old_map[o] != remap.map[o] && bytes[o] > 0;
    // Which block (old id) each moving object migrates after.
    let mut migrate_after = vec![u32::MAX; trace.num_blocks()];
    let mut charged = 0usize;
    for o in 0..n_obj {
        if moves(o) {
            let b = remap.switch_after[o].expect("moves() checked it");
            migrate_after[b.index()] = o as u32;
            charged += 1;
        }
    }
    let mut next_msg = trace
        .all_sends()
        .iter()
        .map(|s| s.msg.0)
        .max()
        .map_or(0, |m| m + 1);
    for b in trace.iter_blocks() {
        if let Some(m) = b.trigger {
            next_msg = next_msg.max(m.0.saturating_add(1));
        }
    }
    let mut out = Trace::new(trace.meta.clone());
    out.entries = trace.entries.clone();
    out.objects = trace.objects.clone();
    out.groups = trace.groups.clone();
    let migrate_entry = EntryId(out.entries.len() as u32);
    out.entries.push(EntryMethod::new(MIGRATE_ENTRY));

    let mut new_id = vec![BlockId(0); trace.num_blocks()];
    // Per object: the migrate block its later blocks must wait for.
    let mut arrived: Vec<Option<BlockId>> = vec![None; n_obj];
    let mut new_switch = remap.switch_after.clone();
    let mut deps: Vec<BlockId> = Vec::new();
    let mut sends: Vec<Send> = Vec::new();
    for id in trace.block_ids() {
        let b = trace.block(id);
        let o = b.object.index();
        deps.clear();
        deps.extend(trace.deps(id).iter().map(|d| new_id[d.index()]));
        if let Some(m) = arrived[o] {
            deps.push(m);
        }
        sends.clear();
        sends.extend_from_slice(trace.sends(id));
        let migrating = migrate_after[id.index()] != u32::MAX;
        let msg = MsgId(next_msg);
        if migrating {
            next_msg += 1;
            sends.push(Send {
                msg,
                offset: b.duration,
                dest: Destination::Object(b.object),
                bytes: bytes[o],
                entry: migrate_entry,
            });
        }
        let nid = out.push_block(b, &deps, &sends);
        new_id[id.index()] = nid;
        if remap.switch_after[o] == Some(id) {
            new_switch[o] = Some(nid);
        }
        if migrating {
            let mut mb = Block::new(b.object, migrate_entry, sim_core::SimDuration::ZERO);
            mb.trigger = Some(msg);
            mb.priority = i32::MIN;
            let mid = out.push_block(mb, &[], &[]);
            arrived[o] = Some(mid);
            // The switch point becomes the send; the migrate block runs on the new PE.
            new_switch[o] = Some(nid);
        }
    }
    out.validate()
        .map_err(|e| ReplayError::Config(format!("migration cost: {e}")))?;
    Ok((
        out,
        Remap {
            map: remap.map.clone(),
            switch_after: new_switch,
        },
        charged,
    ))
}
