//! Every view the report and the analysis files draw, computed in one pass over a replay's
//! runs: from a timeline in memory ([`of_timeline`]) or from a replay's stream
//! ([`ViewsSink`], a [`replay::TimelineSink`]), holding O(PEs + bins + entries) and nothing
//! per block. Both give the same result (the same accumulators run in both).

use crate::AnalysisError;
use crate::cluster::{Clustering, UsageAcc};
use crate::feed::{Acc, Feed};
use crate::profile::{Profiles, ProfilesAcc};
use crate::views::{
    CommMatrix, MatrixAcc, MetricsAcc, MetricsRow, Overview, OverviewAcc, SizeRow, SizesAcc,
    SnapshotsAcc,
};
use network_models::NetSpec;
use replay::{ReplayReport, TimelineRecord, TimelineSink};

/// Sizes of the views.
#[derive(Clone, Copy, Debug)]
pub struct ViewOptions {
    /// Time bin of the profiles and metrics (0: the makespan over 100).
    pub bin_ps: u64,
    /// Clusters asked of k-means.
    pub clusters: usize,
    /// Representative PEs kept.
    pub representatives: usize,
    /// Snapshots of the machine plot.
    pub snapshots: usize,
    /// Groups per side of the communication matrix.
    pub matrix_groups: u32,
}

/// Everything the analysis files hold.
#[derive(Debug, PartialEq)]
pub struct Views {
    /// Projections' analyses and the extrema.
    pub profiles: Profiles,
    /// Rover's metrics.
    pub metrics: Vec<MetricsRow>,
    /// Per-slice, per-PE utilisation.
    pub snapshots: Vec<Vec<f64>>,
    /// The PEs' clusters.
    pub clusters: Clustering,
    /// Bytes by PE group pair.
    pub matrix: CommMatrix,
    /// Sizes of the messages between PEs.
    pub sizes: Vec<SizeRow>,
    /// The report's whole-run overview.
    pub overview: Overview,
}

/// Totals of a run, one run at a time: per entry method its busy time, blocks and longest
/// block (the overview's colours and `entries.csv`), and the PE x entry busy table the
/// clustering reads (so the representatives are known before a second replay).
#[derive(Debug)]
pub struct RunTotals<'a> {
    feed: &'a Feed<'a>,
    /// Busy ps per entry id.
    pub totals: Vec<u64>,
    /// Blocks per entry id.
    pub blocks: Vec<u64>,
    /// Longest block per entry id, ps.
    pub max_ps: Vec<u64>,
    usage: Option<UsageAcc>,
}

impl<'a> RunTotals<'a> {
    /// Zero totals for the entries of `feed`'s trace; with `pes`, also the PE x entry table.
    pub fn new(feed: &'a Feed<'a>, pes: Option<u32>) -> Result<RunTotals<'a>, AnalysisError> {
        let n = feed.blocks().body().entries.len();
        Ok(RunTotals {
            feed,
            totals: vec![0; n],
            blocks: vec![0; n],
            max_ps: vec![0; n],
            usage: pes.map(|p| UsageAcc::new(p, n)).transpose()?,
        })
    }
    /// The k-means clustering of the PEs (needs the PE x entry table).
    pub fn clusters(&self, k: usize, representatives: usize) -> Result<Clustering, AnalysisError> {
        self.usage
            .as_ref()
            .ok_or_else(|| AnalysisError::Internal("no PE x entry table was kept".into()))?
            .finish(k, representatives)
    }
}

impl TimelineSink for RunTotals<'_> {
    fn record(&mut self, r: &TimelineRecord) {
        let e = self.feed.entry(r.block);
        let d = r.end.saturating_since(r.start).as_ps();
        if let (Some(x), Some(n), Some(m)) = (
            self.totals.get_mut(e as usize),
            self.blocks.get_mut(e as usize),
            self.max_ps.get_mut(e as usize),
        ) {
            *x = x.saturating_add(d);
            *n += 1;
            *m = (*m).max(d);
        }
        if let Some(u) = self.usage.as_mut() {
            u.block(r, e);
        }
    }
}

/// The runs of some PEs, kept whole (the per-block outputs of those PEs).
#[derive(Debug)]
pub struct KeepPes {
    keep: Vec<bool>,
    /// The kept runs, in stream order.
    pub runs: Vec<TimelineRecord>,
}

impl KeepPes {
    /// Keeps the runs of the PEs marked in `keep` (`None`: every PE), with room for
    /// `expected` runs (the blocks of those PEs: no doubling of the vector, which would need
    /// up to three times its size while it grows).
    pub fn new(keep: Option<Vec<bool>>, expected: usize) -> KeepPes {
        KeepPes {
            keep: keep.unwrap_or_default(),
            runs: Vec::with_capacity(expected),
        }
    }
}

impl TimelineSink for KeepPes {
    fn record(&mut self, r: &TimelineRecord) {
        if self.keep.is_empty() || self.keep.get(r.pe as usize).copied().unwrap_or(false) {
            self.runs.push(*r);
        }
    }
}

/// Where the messages into some PEs come from: per delivery to a block on a kept PE, the
/// sending PE, the send's event number there (its sends counted in run order, as a
/// Projections log numbers them) and its size. What the logs of a few PEs need of the PEs
/// whose runs are not kept.
#[derive(Debug)]
pub struct Senders<'a> {
    feed: &'a Feed<'a>,
    keep: Vec<bool>,
    next: Vec<u64>,
    /// `(consumer block, sending PE, event, bytes)`, in run order of the senders.
    pub into_kept: Vec<(u32, u32, u64, u64)>,
}

impl<'a> Senders<'a> {
    /// For the PEs marked in `keep` (of `keep.len()` PEs).
    pub fn new(feed: &'a Feed<'a>, keep: Vec<bool>) -> Senders<'a> {
        Senders {
            feed,
            next: vec![0; keep.len()],
            keep,
            into_kept: Vec::new(),
        }
    }
}

impl TimelineSink for Senders<'_> {
    fn record(&mut self, r: &TimelineRecord) {
        let Some(n) = self.next.get_mut(r.pe as usize) else {
            return;
        };
        let (keep, out, first) = (&self.keep, &mut self.into_kept, *n);
        *n += self.feed.each_send(r, |j, bytes, c, pe| {
            if keep.get(pe as usize).copied().unwrap_or(false) {
                out.push((c, r.pe, first + j, bytes));
            }
        });
    }
}

/// Two sinks fed the same runs.
#[derive(Debug)]
pub struct Both<A, B>(pub A, pub B);

impl<A: TimelineSink, B: TimelineSink> TimelineSink for Both<A, B> {
    fn record(&mut self, r: &TimelineRecord) {
        self.0.record(r);
        self.1.record(r);
    }
}

/// The views' accumulators, fed one run at a time.
pub struct ViewsSink<'a> {
    feed: &'a Feed<'a>,
    opts: ViewOptions,
    prof: ProfilesAcc,
    met: MetricsAcc,
    snap: SnapshotsAcc,
    usage: UsageAcc,
    matrix: MatrixAcc,
    sizes: SizesAcc,
    overview: OverviewAcc,
}

impl std::fmt::Debug for ViewsSink<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ViewsSink").finish_non_exhaustive()
    }
}

impl<'a> ViewsSink<'a> {
    /// For a run on `pes` PEs that ends at `makespan_ps`, whose entries were busy
    /// `entry_busy_ps` in all (the overview's colours); `net` is the run's model.
    pub fn new(
        feed: &'a Feed<'a>,
        pes: u32,
        makespan_ps: u64,
        entry_busy_ps: &[u64],
        net: &NetSpec,
        opts: ViewOptions,
    ) -> Result<ViewsSink<'a>, AnalysisError> {
        let entries = feed.blocks().body().entries.len();
        Ok(ViewsSink {
            feed,
            opts,
            prof: ProfilesAcc::new(entries, pes, makespan_ps, opts.bin_ps)?,
            met: MetricsAcc::new(pes, makespan_ps, net, opts.bin_ps)?,
            snap: SnapshotsAcc::new(pes, makespan_ps, opts.snapshots)?,
            usage: UsageAcc::new(pes, entries)?,
            matrix: MatrixAcc::new(pes, opts.matrix_groups),
            sizes: SizesAcc::default(),
            overview: OverviewAcc::new(entry_busy_ps, pes, makespan_ps)?,
        })
    }

    /// The views; `pe_busy_ps` is the replay's busy time per PE.
    pub fn finish(self, pe_busy_ps: &[u64]) -> Result<Views, AnalysisError> {
        Ok(Views {
            profiles: self.prof.finish(pe_busy_ps),
            metrics: self.met.finish(),
            snapshots: self.snap.finish(),
            clusters: self
                .usage
                .finish(self.opts.clusters, self.opts.representatives)?,
            matrix: self.matrix.0,
            sizes: self.sizes.finish(),
            overview: self.overview.finish(),
        })
    }
}

impl TimelineSink for ViewsSink<'_> {
    fn record(&mut self, r: &TimelineRecord) {
        self.feed.feed(
            r,
            &mut [
                &mut self.prof as &mut dyn Acc,
                &mut self.met,
                &mut self.snap,
                &mut self.usage,
                &mut self.matrix,
                &mut self.sizes,
                &mut self.overview,
            ],
        );
    }
}

/// Every view of `report`, a replay of the flat `trace` with its timeline.
pub fn of_timeline(
    trace: &trace::Trace,
    report: &ReplayReport,
    net: &NetSpec,
    opts: ViewOptions,
) -> Result<Views, AnalysisError> {
    let tl = report.timeline.as_ref().ok_or(AnalysisError::NoTimeline)?;
    let feed = Feed::of_timeline(trace, tl)?;
    let mut busy = RunTotals::new(&feed, None)?;
    for r in tl {
        busy.record(r);
    }
    let totals = busy.totals;
    let mut sink = ViewsSink::new(
        &feed,
        report.pes,
        report.makespan.as_ps(),
        &totals,
        net,
        opts,
    )?;
    for r in tl {
        sink.record(r);
    }
    sink.finish(&report.pe_busy_ps)
}
