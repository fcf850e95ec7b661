//! The re-simulations of an analysis, several at once ([`crate::Options::jobs`]).
//!
//! Each what-if is an independent, deterministic replay, so the findings are the same
//! whatever the number of threads; only time and memory change:
//! - **Time:** `jobs` replays run at once. This thread runs them too (its allocator holds
//!   the pages the analysis's own replays freed, which a new thread would not reuse) and
//!   between its progress reports relays the others' (one stage for all: every task counts
//!   the base run's blocks).
//! - **Memory:** `jobs` replays, and at most one changed copy of the trace: what-ifs that
//!   replay a copy ([`holds_copy`]) run one at a time ([`Board`]).

use crate::diagnose::what_if_run;
use crate::{AnalysisError, Scenario, WhatIf};
use replay::ReplayReport;
use sim_core::Progress;
use std::sync::mpsc;

/// Whether what-if `w` replays a changed copy of the trace (a trace expanded for
/// priorities; a sped-up entry or object is a replay setting, `replay::BlockScale`, but for
/// a machine that scales blocks already): such what-ifs run one at a time, so that the
/// re-simulations hold at most one copy however many run at once.
pub fn holds_copy(w: &WhatIf, cfg: &replay::ReplayConfig) -> bool {
    match w {
        WhatIf::Faster(_) => cfg.block_scale.is_some(),
        WhatIf::CriticalPathPriority => true,
        _ => false,
    }
}

type Outcome = Result<ReplayReport, AnalysisError>;

/// Runs `tasks` (a progress prefix and a what-if each), `jobs` at once, but for those in
/// `early` (run before: taken as they are), and returns their results in the tasks' order.
/// `per_task_blocks`: the blocks each task replays (the base run's), for the progress.
pub(crate) fn run_all(
    sc: &Scenario<'_>,
    tasks: &[(String, WhatIf)],
    (jobs, per_task_blocks): (usize, u64),
    early: Vec<(WhatIf, Outcome)>,
    progress: &mut dyn Progress,
) -> Vec<Outcome> {
    // The tasks already run: their results as they are, the rest run here.
    let mut early: Vec<Option<(WhatIf, Outcome)>> = early.into_iter().map(Some).collect();
    let mut known: Vec<Option<Outcome>> = tasks
        .iter()
        .map(|(_, w)| {
            let k = early
                .iter()
                .position(|e| e.as_ref().is_some_and(|(x, _)| x == w))?;
            early[k].take().map(|(_, r)| r)
        })
        .collect();
    let left: Vec<usize> = (0..tasks.len()).filter(|&i| known[i].is_none()).collect();
    let todo: Vec<(String, WhatIf)> = left.iter().map(|&i| tasks[i].clone()).collect();
    for (i, r) in left
        .into_iter()
        .zip(run_rest(sc, &todo, (jobs, per_task_blocks), progress))
    {
        known[i] = Some(r);
    }
    known
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(AnalysisError::Internal("a what-if was not run".into()))))
        .collect()
}

fn run_rest(
    sc: &Scenario<'_>,
    tasks: &[(String, WhatIf)],
    (jobs, per_task_blocks): (usize, u64),
    progress: &mut dyn Progress,
) -> Vec<Outcome> {
    let n = tasks.len();
    if jobs <= 1 || n <= 1 {
        return tasks
            .iter()
            .map(|(prefix, w)| {
                let mut named = crate::streamed::Prefixed {
                    inner: &mut *progress,
                    prefix: prefix.clone(),
                };
                let r = what_if_run(sc, w, &mut named);
                sim_core::memory::checkpoint(prefix.trim_end_matches(": "));
                r
            })
            .collect();
    }
    let board = Board::new(tasks.iter().map(|t| holds_copy(&t.1, sc.cfg)).collect());
    let (tx, rx) = mpsc::channel::<Msg>();
    let per = per_task_blocks.max(1);
    progress.stage(
        &format!(
            "re-simulations ({n} what-ifs, {} at once): replay",
            jobs.min(n)
        ),
        per.saturating_mul(n as u64),
        "blocks",
    );
    let mut relay = Relay {
        progress,
        tasks,
        per,
        replaying: vec![false; n],
        done: vec![0; n],
        results: (0..n).map(|_| None).collect(),
    };
    std::thread::scope(|s| {
        for _ in 1..jobs.min(n) {
            let (tx, board) = (tx.clone(), &board);
            s.spawn(move || {
                while let Some(i) = board.take() {
                    let mut p = Sent { task: i, tx: &tx };
                    let r = what_if_run(sc, &tasks[i].1, &mut p);
                    board.done(i);
                    if tx.send(Msg::Done(i, Box::new(r))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        loop {
            if let Some(i) = board.try_take() {
                let r = {
                    let mut p = Here {
                        task: i,
                        relay: &mut relay,
                        rx: &rx,
                    };
                    what_if_run(sc, &tasks[i].1, &mut p)
                };
                board.done(i);
                relay.apply(Msg::Done(i, Box::new(r)));
                continue;
            }
            // Every task is taken (or the next holds a copy while another copy runs): wait
            // for the workers' news; the channel closes when they are all done.
            match rx.recv() {
                Ok(m) => relay.apply(m),
                Err(_) => break,
            }
        }
    });
    relay
        .results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(AnalysisError::Internal("a what-if was not run".into()))))
        .collect()
}

/// The tasks: workers take the first task not taken yet, except a task that holds a copy
/// while another such task runs (they wait for it, or take a later task).
struct Board {
    copies: Vec<bool>,
    /// Which tasks are taken, and whether a copy-holding one runs.
    state: std::sync::Mutex<(Vec<bool>, bool)>,
    changed: std::sync::Condvar,
}

impl Board {
    fn new(copies: Vec<bool>) -> Board {
        let n = copies.len();
        Board {
            copies,
            state: std::sync::Mutex::new((vec![false; n], false)),
            changed: std::sync::Condvar::new(),
        }
    }
    /// The next task that may start now, if any.
    fn try_take(&self) -> Option<usize> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (taken, copy_running) = &mut *st;
        let i = (0..taken.len()).find(|&i| !(taken[i] || self.copies[i] && *copy_running))?;
        taken[i] = true;
        *copy_running |= self.copies[i];
        Some(i)
    }
    /// The next task, waiting while only copy-holding tasks are left and one runs; `None`
    /// when every task is taken.
    fn take(&self) -> Option<usize> {
        loop {
            if let Some(i) = self.try_take() {
                return Some(i);
            }
            let st = self.state.lock().unwrap_or_else(|p| p.into_inner());
            if st.0.iter().all(|t| *t) {
                return None;
            }
            if !st.1 {
                // The copy finished between the two locks: look again.
                continue;
            }
            drop(self.changed.wait(st).unwrap_or_else(|p| p.into_inner()));
        }
    }
    /// Task `i` finished.
    fn done(&self, i: usize) {
        if self.copies[i] {
            let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
            st.1 = false;
            self.changed.notify_all();
        }
    }
}

/// What a worker tells this thread.
enum Msg {
    /// A task's stage began (its name).
    Stage(usize, String),
    /// A task's progress in its stage.
    Advance(usize, u64),
    /// A task finished.
    Done(usize, Box<Outcome>),
}

/// The progress of every task, shown as one stage, and the results so far.
struct Relay<'a, 'p> {
    progress: &'p mut dyn Progress,
    tasks: &'a [(String, WhatIf)],
    per: u64,
    replaying: Vec<bool>,
    done: Vec<u64>,
    results: Vec<Option<Outcome>>,
}

impl Relay<'_, '_> {
    fn apply(&mut self, m: Msg) {
        match m {
            Msg::Stage(i, name) => {
                self.replaying[i] = name == "replay";
                self.done[i] = 0;
            }
            Msg::Advance(i, d) => {
                if self.replaying[i] {
                    self.done[i] = d.min(self.per);
                }
            }
            Msg::Done(i, r) => {
                self.results[i] = Some(*r);
                self.done[i] = self.per;
                sim_core::memory::checkpoint(self.tasks[i].0.trim_end_matches(": "));
            }
        }
        self.progress.advance_to(self.done.iter().sum());
    }
}

/// A worker's progress, sent to this thread.
struct Sent<'t> {
    task: usize,
    tx: &'t mpsc::Sender<Msg>,
}

impl Progress for Sent<'_> {
    fn stage(&mut self, name: &str, _total: u64, _unit: &'static str) {
        let _ = self.tx.send(Msg::Stage(self.task, name.to_string()));
    }
    fn advance_to(&mut self, done: u64) {
        let _ = self.tx.send(Msg::Advance(self.task, done));
    }
}

/// This thread's own task's progress: applied directly, with the workers' news so far.
struct Here<'r, 'a, 'p> {
    task: usize,
    relay: &'r mut Relay<'a, 'p>,
    rx: &'r mpsc::Receiver<Msg>,
}

impl Progress for Here<'_, '_, '_> {
    fn stage(&mut self, name: &str, _total: u64, _unit: &'static str) {
        self.relay.apply(Msg::Stage(self.task, name.to_string()));
    }
    fn advance_to(&mut self, done: u64) {
        while let Ok(m) = self.rx.try_recv() {
            self.relay.apply(m);
        }
        self.relay.apply(Msg::Advance(self.task, done));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_board_runs_one_copy_at_a_time_and_every_task_once() {
        // Copy-holding tasks 0, 2 and 3; two takers.
        let b = Board::new(vec![true, false, true, true]);
        assert_eq!(b.try_take(), Some(0));
        // Task 2 and 3 hold copies while 0 runs: the next free is 1.
        assert_eq!(b.try_take(), Some(1));
        assert_eq!(b.try_take(), None);
        b.done(1);
        assert_eq!(b.try_take(), None, "a copy still runs");
        b.done(0);
        assert_eq!(b.try_take(), Some(2));
        b.done(2);
        assert_eq!(b.take(), Some(3));
        b.done(3);
        assert_eq!(b.take(), None);
        // Threads: each task taken exactly once, never two copies at once.
        let b = Board::new((0..40).map(|i| i % 3 == 0).collect());
        let running = std::sync::atomic::AtomicUsize::new(0);
        let seen = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    while let Some(i) = b.take() {
                        if b.copies[i] {
                            let r = running.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            assert_eq!(r, 0, "two copies at once");
                            std::thread::yield_now();
                            running.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                        }
                        seen.lock().unwrap().push(i);
                        b.done(i);
                    }
                });
            }
        });
        let mut seen = seen.into_inner().unwrap();
        seen.sort_unstable();
        assert_eq!(seen, (0..40).collect::<Vec<_>>());
    }
}
