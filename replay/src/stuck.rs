//! Explains why a replay could not finish.

use crate::plan::{NIL, Plan};
use std::fmt;

/// What a block that never ran was waiting for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Wait {
    /// A block it must follow that never finished: a dependency, or the previous block of its
    /// object (object order) or of its recorded PE (recorded order).
    Block(u32),
    /// Its trigger message, sent by a block that never ran.
    MessageFromStuck {
        /// The sending block.
        sender: u32,
    },
    /// Its trigger message, which no block in the trace sends.
    MessageNeverSent,
}

/// A block that never ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StuckBlock {
    /// Block id.
    pub block: u32,
    /// What it waits for.
    pub waits: Vec<Wait>,
}

/// The blocks that could not run, root causes first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StuckReport {
    /// Blocks in the trace.
    pub total: u64,
    /// Blocks that completed.
    pub completed: u64,
    /// Stuck blocks that wait only on messages no block sends (the root causes).
    pub roots: Vec<StuckBlock>,
    /// A sample of the other stuck blocks (waiting on stuck blocks).
    pub others: Vec<StuckBlock>,
    /// How many root-cause blocks there are in all.
    pub root_count: u64,
    /// How many other stuck blocks there are in all.
    pub other_count: u64,
}

const SHOW: usize = 10;

/// Explains a replay that ended with blocks left. `live` lists `(k, i, pending)` for every
/// block of the iterations that had started (`k < started`), in order; blocks of later
/// iterations never started either and are counted among the others.
pub(crate) fn diagnose(
    plan: &Plan,
    completed: u64,
    started: u32,
    live: &[(u32, u32, u32)],
) -> StuckReport {
    let b = plan.blocks as u64;
    let gid = |k: u32, i: u32| -> u32 { (k as u64 * b + i as u64) as u32 };
    // After the loop drains, exactly the blocks with pending > 0 never ran.
    let position = |k: u32, i: u32| -> Option<usize> {
        let first = live.first()?.0;
        let p = (k.checked_sub(first)? as u64 * b + i as u64) as usize;
        (p < live.len()).then_some(p)
    };
    let mut waits_on: Vec<Vec<Wait>> = vec![Vec::new(); live.len()];
    for &(k, d, pending) in live {
        if pending == 0 {
            continue;
        }
        let h = plan.hot[d as usize];
        let next = plan.hot[d as usize + 1];
        for dep in &plan.deps[h.dep_start as usize..next.dep_start as usize] {
            if let Some(p) = position(k + dep.lag, dep.block) {
                waits_on[p].push(Wait::Block(gid(k, d)));
            }
        }
        // Order chains (recorded PE order, object order) are waits on a block too.
        for chain in [&plan.chain_next, &plan.obj_next] {
            if let Some(&nb) = chain.get(d as usize)
                && nb != NIL
                && let Some(p) = position(k, nb)
            {
                waits_on[p].push(Wait::Block(gid(k, d)));
            }
        }
    }
    let mut sender_of = vec![NIL; plan.blocks as usize];
    for i in 0..plan.blocks as usize {
        for s in plan.hot[i].slot_start as usize..plan.hot[i + 1].slot_start as usize {
            sender_of[plan.consumer(s) as usize] = i as u32;
        }
    }
    let (mut roots, mut others) = (Vec::new(), Vec::new());
    let (mut root_count, mut other_count) = (0u64, 0u64);
    for (p, &(k, i, pending)) in live.iter().enumerate() {
        if pending == 0 {
            continue;
        }
        let mut waits = std::mem::take(&mut waits_on[p]);
        let mut root = waits.is_empty();
        // `pending` counts unfinished dependencies plus one while the trigger has not arrived.
        if pending > waits.len() as u32 {
            match sender_of[i as usize] {
                NIL => waits.push(Wait::MessageNeverSent),
                s => {
                    waits.push(Wait::MessageFromStuck { sender: gid(k, s) });
                    root = false;
                }
            }
        }
        let entry = StuckBlock {
            block: gid(k, i),
            waits,
        };
        if root {
            root_count += 1;
            if roots.len() < SHOW {
                roots.push(entry);
            }
        } else {
            other_count += 1;
            if others.len() < SHOW {
                others.push(entry);
            }
        }
    }
    other_count += (plan.reps - started) as u64 * b;
    StuckReport {
        total: plan.total_blocks(),
        completed,
        roots,
        others,
        root_count,
        other_count,
    }
}

impl fmt::Display for StuckBlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "block {} waits for ", self.block)?;
        for (i, w) in self.waits.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            match w {
                Wait::Block(d) => write!(f, "block {d} (never ran)")?,
                Wait::MessageFromStuck { sender } => {
                    write!(f, "its trigger message from block {sender} (never ran)")?
                }
                Wait::MessageNeverSent => {
                    write!(f, "its trigger message, which no block in the trace sends")?
                }
            }
        }
        Ok(())
    }
}

impl fmt::Display for StuckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "replay cannot finish: {} of {} blocks never ran",
            self.total - self.completed,
            self.total
        )?;
        if self.roots.is_empty() {
            writeln!(
                f,
                "no block waits on an unsent message: the stuck blocks wait on each other (a cycle)"
            )?;
        } else {
            writeln!(
                f,
                "root causes ({} blocks; first {} shown):",
                self.root_count,
                self.roots.len()
            )?;
            for r in &self.roots {
                writeln!(f, "  {r}")?;
            }
        }
        if !self.others.is_empty() {
            writeln!(
                f,
                "blocked behind them ({} blocks; first {} shown):",
                self.other_count,
                self.others.len()
            )?;
            for o in &self.others {
                writeln!(f, "  {o}")?;
            }
        }
        Ok(())
    }
}
