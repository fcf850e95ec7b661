//! Compiles a trace, a mapping and CPU speeds into flat arrays the event loop walks.
//!
//! All per-block and per-send work that does not depend on simulated time happens here, once:
//! PE of each block, scaled durations and send offsets, the dependents of each block
//! (inverse of its dependency list), and the consumer blocks of each send (the blocks whose
//! trigger it is). The loop then does no lookups, hashing or allocation per event.

use crate::{ReplayConfig, ReplayError, SchedPolicy};
use sim_core::Ratio;
use trace::{BlockId, Trace};

/// Sentinel for "no iteration".
pub(crate) const NO_ITER: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
pub(crate) struct CBlock {
    pub pe: u32,
    pub iter_slot: u32,
    pub dur_ps: u64,
    pub prio: i32,
    /// PE of the block that sends this block's trigger, or `u32::MAX` (none, or never sent).
    pub trigger_src_pe: u32,
}

/// Per-block data only the overhead path needs (kept out of [`CBlock`] so the hot array stays
/// 24 bytes).
#[derive(Clone, Copy, Debug)]
pub(crate) struct CBlockExtra {
    /// Entry method id.
    pub entry: u32,
    /// Index in `sends` of the trigger message's send, or `u32::MAX`.
    pub trigger_send: u32,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct CSend {
    pub off_ps: u64,
    pub bytes: u64,
    pub cons_start: u32,
    pub cons_end: u32,
}

/// What a block still waits for.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct BlockWait {
    /// Effective receive time (BigSim's `effRecvTime`): the latest of its trigger's arrival
    /// and its dependencies' effective receive times. Ready blocks run in order of it.
    pub key_ps: u64,
    /// Unfinished dependencies, plus one while the trigger has not arrived.
    pub pending: u32,
}

#[derive(Debug)]
pub(crate) struct Plan {
    pub pes: u32,
    pub blocks: Vec<CBlock>,
    pub extra: Vec<CBlockExtra>,
    /// Per block: unmet conditions and effective receive time, side by side (one cache line
    /// per update).
    pub wait: Vec<BlockWait>,
    /// Per consumer slot, the message's recorded delay, when the replay uses recorded delays.
    pub recorded_wire: Option<Vec<u64>>,
    /// With recorded delays: blocks that need neither a message nor another block, with their
    /// recorded start (they are released then instead of at 0).
    pub releases: Vec<(u32, u64)>,
    /// With recorded order: the next block of the same recorded PE (or `u32::MAX`).
    pub chain_next: Vec<u32>,
    /// With object order: the next block of the same object (or `u32::MAX`); it waits for
    /// this one without inheriting its effective receive time.
    pub obj_next: Vec<u32>,
    /// `dependents[dep_start[b]..dep_start[b+1]]` are the blocks that list `b` as a dependency.
    pub dep_start: Vec<u32>,
    pub dependents: Vec<u32>,
    /// `sends[send_start[b]..send_start[b+1]]` are block `b`'s sends.
    pub send_start: Vec<u32>,
    pub sends: Vec<CSend>,
    /// Consumer blocks of all sends, grouped by send.
    pub consumers: Vec<u32>,
    /// PE of each entry of `consumers` (saves a random access per message).
    pub consumer_pe: Vec<u32>,
    /// Entry method of each entry of `consumers` (same reason).
    pub consumer_entry: Vec<u32>,
    /// Sorted distinct iteration labels; a block's `iter_slot` indexes this.
    pub iter_labels: Vec<u32>,
    /// For each send, the index of the sending block (used by stuck diagnosis).
    pub send_block: Vec<u32>,
    /// Number of entry methods in the trace.
    pub entries: usize,
}

impl Plan {
    pub(crate) fn build(
        trace: &Trace,
        cfg: &ReplayConfig,
        recorded: bool,
    ) -> Result<Plan, ReplayError> {
        let pes = cfg.pes.unwrap_or(trace.meta.recorded_pes);
        if pes == 0 {
            return Err(ReplayError::Config(
                "the machine needs at least one PE".into(),
            ));
        }
        if let crate::CpuScale::PerPe(v) = &cfg.cpu_scale
            && v.len() != pes as usize
        {
            return Err(ReplayError::Config(format!(
                "{} CPU speed factors given for {pes} PEs",
                v.len()
            )));
        }
        let map = cfg.mapping.resolve(trace, pes)?;
        let n = trace.num_blocks();
        let block_pe = block_pes(trace, &map, cfg.remap.as_ref(), pes)?;

        // Iteration labels -> dense slots.
        let mut iter_labels: Vec<u32> = trace.blocks().iter().filter_map(|b| b.iteration).collect();
        iter_labels.sort_unstable();
        iter_labels.dedup();

        let all_sends = trace.all_sends();
        let send_block = trace.send_blocks();
        let trace::Consumers {
            start: cons_start,
            blocks: consumers,
            trigger_send,
        } = trace.consumers();

        let mut blocks = Vec::with_capacity(n);
        let mut extra = Vec::with_capacity(n);
        let mut wait: Vec<BlockWait> = Vec::with_capacity(n);
        for id in trace.block_ids() {
            let b = trace.block(id);
            let pe = block_pe[id.index()];
            let scale: Ratio = cfg.cpu_scale.of(pe);
            let sent = trigger_send[id.index()];
            let trigger_src_pe = if sent == u32::MAX {
                u32::MAX
            } else {
                block_pe[send_block[sent as usize] as usize]
            };
            blocks.push(CBlock {
                pe,
                iter_slot: b.iteration.map_or(NO_ITER, |i| {
                    iter_labels.binary_search(&i).map_or(NO_ITER, |p| p as u32)
                }),
                dur_ps: scale.scale(b.duration).as_ps(),
                prio: if cfg.policy == SchedPolicy::Priority {
                    b.priority
                } else {
                    0
                },
                trigger_src_pe,
            });
            extra.push(CBlockExtra {
                entry: b.entry.0,
                trigger_send: sent,
            });
            wait.push(BlockWait {
                key_ps: 0,
                pending: trace.deps(id).len() as u32 + b.trigger.is_some() as u32,
            });
        }

        let consumer_pe: Vec<u32> = consumers.iter().map(|&c| blocks[c as usize].pe).collect();
        let consumer_entry: Vec<u32> = consumers.iter().map(|&c| extra[c as usize].entry).collect();
        let mut sends = Vec::with_capacity(all_sends.len());
        let mut send_start = Vec::with_capacity(n + 1);
        send_start.push(0u32);
        for id in trace.block_ids() {
            let scale = cfg.cpu_scale.of(blocks[id.index()].pe);
            for si in trace.send_range(id) {
                let s = &all_sends[si];
                sends.push(CSend {
                    off_ps: scale.scale(s.offset).as_ps(),
                    bytes: s.bytes,
                    cons_start: cons_start[si],
                    cons_end: cons_start[si + 1],
                });
            }
            send_start.push(sends.len() as u32);
        }

        // Dependents CSR: inverse of the dependency lists.
        let mut dep_count = vec![0u32; n + 1];
        for d in trace.all_deps() {
            dep_count[d.index()] += 1;
        }
        let mut dep_start = vec![0u32; n + 1];
        for b in 0..n {
            dep_start[b + 1] = dep_start[b] + dep_count[b];
        }
        let mut fill = dep_start.clone();
        let mut dependents = vec![0u32; dep_start[n] as usize];
        for id in trace.block_ids() {
            for d in trace.deps(id) {
                dependents[fill[d.index()] as usize] = id.0;
                fill[d.index()] += 1;
            }
        }

        let mut chain_next = Vec::new();
        if cfg.recorded_order {
            chain_next = vec![u32::MAX; n];
            let mut order: Vec<(u32, u64, u32)> = trace
                .block_ids()
                .map(|id| {
                    let b = trace.block(id);
                    let t = b.recorded_start.ok_or_else(|| {
                        ReplayError::Config(format!(
                            "recorded order needs recorded start times, but {id} has none"
                        ))
                    })?;
                    Ok((
                        trace.objects[b.object.index()].recorded_pe.0,
                        t.as_ps(),
                        id.0,
                    ))
                })
                .collect::<Result<_, ReplayError>>()?;
            order.sort_unstable();
            for w in order.windows(2) {
                if w[0].0 == w[1].0 {
                    chain_next[w[0].2 as usize] = w[1].2;
                    wait[w[1].2 as usize].pending += 1;
                }
            }
        }
        let mut obj_next = Vec::new();
        if cfg.object_order.unwrap_or(trace.meta.sequential_objects) {
            obj_next = vec![u32::MAX; n];
            let mut last = vec![u32::MAX; trace.objects.len()];
            for id in trace.block_ids() {
                let o = trace.block(id).object.index();
                if last[o] != u32::MAX {
                    obj_next[last[o] as usize] = id.0;
                    wait[id.index()].pending += 1;
                }
                last[o] = id.0;
            }
        }
        let mut releases = Vec::new();
        let recorded_wire = if cfg.recorded_delays || recorded {
            for id in trace.block_ids() {
                let b = trace.block(id);
                if b.trigger.is_none()
                    && trace.deps(id).is_empty()
                    && let Some(t) = b.recorded_start
                    && t.as_ps() > 0
                {
                    releases.push((id.0, t.as_ps()));
                }
            }
            Some(recorded_wire(trace, &consumers, &cons_start, &send_block)?)
        } else {
            None
        };

        Ok(Plan {
            pes,
            blocks,
            extra,
            wait,
            recorded_wire,
            releases,
            chain_next,
            obj_next,
            dep_start,
            dependents,
            send_start,
            sends,
            consumers,
            consumer_pe,
            consumer_entry,
            iter_labels,
            send_block,
            entries: trace.entries.len(),
        })
    }
}

/// The PE of every block: its object's PE under `map`, or under the remap after the object's
/// switch block.
fn block_pes(
    trace: &Trace,
    map: &[u32],
    remap: Option<&crate::Remap>,
    pes: u32,
) -> Result<Vec<u32>, ReplayError> {
    let Some(r) = remap else {
        return Ok(trace
            .blocks()
            .iter()
            .map(|b| map[b.object.index()])
            .collect());
    };
    r.check(trace, pes)?;
    Ok(trace
        .block_ids()
        .map(|id| {
            let o = trace.block(id).object.index();
            match r.switch_after[o] {
                Some(s) if id > s => r.map[o],
                _ => map[o],
            }
        })
        .collect())
}

/// The recorded delay of every (send, consumer) pair: the consumer's recorded arrival minus
/// the recorded send time (sender's recorded start + offset), floored at 0.
fn recorded_wire(
    trace: &Trace,
    consumers: &[u32],
    cons_start: &[u32],
    send_block: &[u32],
) -> Result<Vec<u64>, ReplayError> {
    let sends = trace.all_sends();
    let mut out = vec![0u64; consumers.len()];
    for (si, s) in sends.iter().enumerate() {
        let sender = BlockId(send_block[si]);
        let Some(start) = trace.block(sender).recorded_start else {
            return Err(ReplayError::Config(format!(
                "recorded delays need recorded start times, but {sender} (which sends {}) has none",
                s.msg
            )));
        };
        let sent = start.saturating_add(s.offset);
        for slot in cons_start[si]..cons_start[si + 1] {
            let c = BlockId(consumers[slot as usize]);
            let Some(arrival) = trace.block(c).recorded_arrival else {
                return Err(ReplayError::Config(format!(
                    "recorded delays need recorded arrival times, but {c} (triggered by {}) has none",
                    s.msg
                )));
            };
            out[slot as usize] = arrival.saturating_since(sent).as_ps();
        }
    }
    Ok(out)
}
