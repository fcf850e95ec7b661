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

/// Busy time per entry method over a run, one run at a time (the overview's colours need it
/// before the views' pass: the first replay of [`crate::streamed`] collects it).
#[derive(Debug)]
pub struct EntryBusy<'a> {
    feed: &'a Feed<'a>,
    /// Busy ps per entry id.
    pub totals: Vec<u64>,
}

impl<'a> EntryBusy<'a> {
    /// Zero totals for the entries of `feed`'s trace.
    pub fn new(feed: &'a Feed<'a>) -> EntryBusy<'a> {
        EntryBusy {
            feed,
            totals: vec![0; feed.blocks().body().entries.len()],
        }
    }
}

impl TimelineSink for EntryBusy<'_> {
    fn record(&mut self, r: &TimelineRecord) {
        if let Some(x) = self.totals.get_mut(self.feed.entry(r.block) as usize) {
            *x += r.end.saturating_since(r.start).as_ps();
        }
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
    let mut busy = EntryBusy::new(&feed);
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
