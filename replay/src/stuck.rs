//! Explains why a replay could not finish.

use crate::plan::Plan;
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

pub(crate) fn diagnose(plan: &Plan, completed: u64) -> StuckReport {
    // After the loop drains, exactly the blocks with pending > 0 never ran.
    let stuck = |b: u32| plan.wait[b as usize].pending > 0;
    // Inverse of the dependents CSR, only for stuck blocks: which stuck deps does a block wait on?
    let n = plan.blocks.len();
    let mut waits_on: Vec<Vec<Wait>> = vec![Vec::new(); n];
    for d in 0..n as u32 {
        if !stuck(d) {
            continue;
        }
        for i in plan.dep_start[d as usize]..plan.dep_start[d as usize + 1] {
            let b = plan.dependents[i as usize];
            waits_on[b as usize].push(Wait::Block(d));
        }
        // Order chains (recorded PE order, object order) are waits on a block too.
        for chain in [&plan.chain_next, &plan.obj_next] {
            if let Some(&b) = chain.get(d as usize)
                && b != u32::MAX
            {
                waits_on[b as usize].push(Wait::Block(d));
            }
        }
    }
    let mut sender_of = vec![u32::MAX; n];
    for (si, s) in plan.sends.iter().enumerate() {
        for slot in s.cons_start..s.cons_end {
            sender_of[plan.consumers[slot as usize] as usize] = plan.send_block[si];
        }
    }
    let (mut roots, mut others) = (Vec::new(), Vec::new());
    let (mut root_count, mut other_count) = (0u64, 0u64);
    for b in 0..n as u32 {
        if !stuck(b) {
            continue;
        }
        let mut waits = std::mem::take(&mut waits_on[b as usize]);
        let mut root = waits.is_empty();
        // `pending` counts unfinished dependencies plus one while the trigger has not arrived.
        if plan.wait[b as usize].pending > waits.len() as u32 {
            match sender_of[b as usize] {
                u32::MAX => waits.push(Wait::MessageNeverSent),
                s => {
                    waits.push(Wait::MessageFromStuck { sender: s });
                    root = false;
                }
            }
        }
        let entry = StuckBlock { block: b, waits };
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
    StuckReport {
        total: n as u64,
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
