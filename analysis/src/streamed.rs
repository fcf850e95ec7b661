//! The critical path of a run too large to keep its timeline: two replays instead of one
//! timeline.
//!
//! 1. The first replay records only the *bindings* (5 bytes per block: why each block started
//!    when it did, [`replay::Bindings`]) and hands every block's run to the caller's
//!    [`TimelineSink`] (streaming views), keeping nothing else per block.
//! 2. The path's blocks follow from the bindings alone ([`crate::path_blocks`]); the
//!    bindings are then dropped but for the path's.
//! 3. The second replay (the same run: replays are deterministic) keeps the runs of the path's
//!    blocks only ([`crate::PathRuns`]: one bit per block), and the walk splits the path by
//!    cause exactly as [`crate::critical_path`] does on a timeline. Its runs also go to a
//!    second sink of the caller's, built once the first replay's makespan is known (binned
//!    views: [`crate::allviews::ViewsSink`]).
//!
//! Memory: the replay's own, plus 5 bytes per block during the first replay and one bit per
//! block during the second. Time: two replays; the second sink runs on a second thread
//! ([`crate::pipe`]), so the views cost little more than the replay that feeds them.

use crate::AnalysisError;
use crate::critical::{Blocks, CriticalPath, PathRuns, critical_path_of, path_blocks};
use network_models::NetSpec;
use replay::{Binding, ReplayConfig, ReplayReport, TimelineSink};
use sim_core::Progress;

/// The first replay's report (no timeline, no bindings) and the critical path.
#[derive(Debug)]
pub struct Walked {
    /// The replay (as [`replay::replay`] reports it).
    pub report: ReplayReport,
    /// Its critical path.
    pub critical_path: CriticalPath,
}

fn run(
    g: Blocks<'_>,
    spec: &NetSpec,
    cfg: &ReplayConfig,
    progress: &mut dyn Progress,
    sink: &mut dyn TimelineSink,
) -> Result<ReplayReport, AnalysisError> {
    let mut net = spec.build();
    let prepared = match g {
        Blocks::Flat(t) => replay::Prepared::new_with(t, net.as_mut(), cfg, progress),
        Blocks::Repeated(r) => replay::Prepared::new_with(r, net.as_mut(), cfg, progress),
    };
    prepared
        .and_then(|p| p.run_observed(net.as_mut(), progress, sink))
        .map_err(|e| AnalysisError::Replay(e.to_string()))
}

/// Replays `g` on `spec` with `cfg` twice (see the [module docs](self)): every block's run
/// goes to `first` during the first replay, and to the sink `second` builds from the first
/// replay's report (it knows the makespan), `first` and the critical path's blocks
/// (ascending) during the second; returns the first replay's
/// report, the critical path and the second sink. `cfg.timeline` is ignored.
pub fn replay_and_walk<F: TimelineSink + Send, S: TimelineSink + Send>(
    g: Blocks<'_>,
    spec: &NetSpec,
    cfg: &ReplayConfig,
    progress: &mut dyn Progress,
    first: &mut F,
    second: impl FnOnce(&ReplayReport, &F, &[u32]) -> Result<S, AnalysisError>,
) -> Result<(Walked, S), AnalysisError> {
    let mut once = cfg.clone();
    once.timeline = false;
    once.bindings = true;
    let mut report = crate::pipe::pipelined(first, |first| run(g, spec, &once, progress, first))?;
    sim_core::memory::checkpoint("first replay (bindings)");
    let bindings = report
        .bindings
        .take()
        .ok_or_else(|| AnalysisError::Internal("the replay recorded no bindings".into()))?;
    let mut path = path_blocks(g, &bindings)?;
    let last = bindings.last();
    let mut bound: Vec<(u32, Binding)> = path.iter().map(|&b| (b, bindings.get(b))).collect();
    drop(bindings);
    sim_core::memory::checkpoint("the critical path's blocks");
    bound.sort_unstable_by_key(|x| x.0);
    path.sort_unstable();
    let mut twice = cfg.clone();
    twice.timeline = false;
    twice.bindings = false;
    let mut runs = PathRuns::new(g.len(), &path);
    let mut user = second(&report, first, &path)?;
    let mut named = Prefixed {
        inner: progress,
        prefix: "second replay (critical path, views): ".into(),
    };
    // The path's bits on the replay's thread, the caller's sink (the views: as much work
    // as the replay itself at 1M ranks) on a second one.
    let again = crate::pipe::pipelined(&mut user, |user| {
        run(
            g,
            spec,
            &twice,
            &mut named,
            &mut Tee {
                a: &mut runs,
                b: user,
            },
        )
    })?;
    sim_core::memory::checkpoint("second replay (path runs, views)");
    if again.makespan != report.makespan || again.events != report.events {
        return Err(AnalysisError::Internal(format!(
            "the second replay differs from the first (makespan {} vs {} ps)",
            again.makespan.as_ps(),
            report.makespan.as_ps()
        )));
    }
    let bind = |b: u32| {
        bound
            .binary_search_by_key(&b, |x| x.0)
            .map_or(Binding::Start, |i| bound[i].1)
    };
    let critical_path = critical_path_of(
        g,
        &mut runs,
        &bind,
        last,
        report.makespan.as_ps(),
        spec,
        cfg,
    )?;
    Ok((
        Walked {
            report,
            critical_path,
        },
        user,
    ))
}

/// Two sinks fed the same runs.
struct Tee<'x> {
    a: &'x mut dyn TimelineSink,
    b: &'x mut dyn TimelineSink,
}

impl TimelineSink for Tee<'_> {
    fn record(&mut self, r: &replay::TimelineRecord) {
        self.a.record(r);
        self.b.record(r);
    }
}

/// Forwards progress with each stage's name prefixed.
pub(crate) struct Prefixed<'p> {
    pub(crate) inner: &'p mut dyn Progress,
    pub(crate) prefix: String,
}

impl Progress for Prefixed<'_> {
    fn stage(&mut self, name: &str, total: u64, unit: &'static str) {
        self.inner
            .stage(&format!("{}{name}", self.prefix), total, unit);
    }
    fn advance_to(&mut self, done: u64) {
        self.inner.advance_to(done);
    }
}
