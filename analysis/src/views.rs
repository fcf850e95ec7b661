//! What the report draws, as data: a downsampled timeline raster (all PEs and all time at a
//! fixed number of pixel columns), Rover's metrics over time (utilisation, balance,
//! granularity, channel utilisation), per-PE utilisation snapshots for machine plots, the
//! communication matrix (bytes by PE pair, aggregated to groups of PEs for large P) and the
//! message-size histogram. Every function is deterministic and bounded: sizes that grow with
//! the input (PEs x bins, groups x groups) are checked before they are allocated.

use crate::AnalysisError;
use crate::feed::{Acc, Feed, feed_all};
use network_models::NetSpec;
use replay::{ReplayReport, TimelineRecord};
use serde::Serialize;
use trace::Trace;

/// At most this many cells (rows x columns x classes) in a raster.
pub const MAX_RASTER_CELLS: usize = 1 << 24;
/// At most this many PE x bin cells in [`metrics`] and [`snapshots`].
pub const MAX_PE_BINS: usize = 1 << 26;
/// At most this many groups per side of a [`comm_matrix`].
pub const MAX_MATRIX_GROUPS: u32 = 256;

/// One block run as the raster sees it: a PE, a colour class and an interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// PE.
    pub pe: u32,
    /// Colour class (for example the rank of its entry method; see [`top_classes`]).
    pub class: u16,
    /// Start, ps.
    pub start_ps: u64,
    /// End, ps.
    pub end_ps: u64,
}

/// A timeline downsampled to `cols` columns over `[t0_ps, t1_ps)` and a set of rows (each
/// row one PE or a group of PEs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Raster {
    /// Window start, ps.
    pub t0_ps: u64,
    /// Window end, ps.
    pub t1_ps: u64,
    /// Columns.
    pub cols: usize,
    /// Number of PEs in each row.
    pub row_pes: Vec<u32>,
    /// Busy time per (row, column), summed over the row's PEs: `busy_ps[row * cols + col]`.
    pub busy_ps: Vec<u64>,
    /// The class with the most busy time per (row, column) (the lowest on ties; `u16::MAX`
    /// when the cell is idle).
    pub dominant: Vec<u16>,
}

impl Raster {
    /// Span of column `c`: `[t0 + c*w/cols, t0 + (c+1)*w/cols)`.
    pub fn col_span(&self, c: usize) -> (u64, u64) {
        let w = (self.t1_ps - self.t0_ps) as u128;
        let at = |k: usize| self.t0_ps + (w * k as u128 / self.cols as u128) as u64;
        (at(c), at(c + 1))
    }

    /// Busy fraction of a cell: busy time over (row PEs x column width), in 0..=1.
    pub fn fraction(&self, row: usize, col: usize) -> f64 {
        let (a, b) = self.col_span(col);
        let cap = (b - a) as f64 * self.row_pes[row].max(1) as f64;
        if cap <= 0.0 {
            0.0
        } else {
            (self.busy_ps[row * self.cols + col] as f64 / cap).min(1.0)
        }
    }
}

/// Downsamples `runs` into a raster of `rows` rows (PE `p` goes to row `row_of_pe[p]`;
/// `u32::MAX` leaves it out) and `cols` columns over `[t0_ps, t1_ps)`, with `classes`
/// colour classes.
pub fn raster(
    runs: &[Run],
    row_of_pe: &[u32],
    rows: usize,
    classes: usize,
    window: (u64, u64),
    cols: usize,
) -> Result<Raster, AnalysisError> {
    let mut acc = RasterAcc::new(row_of_pe.to_vec(), rows, classes, window, cols)?;
    for run in runs {
        acc.add(run);
    }
    Ok(acc.finish())
}

/// [`raster`] one run at a time.
///
/// A run adds its overlap to its first and last columns directly, and counts once in a
/// difference array for the columns it covers whole (each then gets its full width in
/// [`RasterAcc::finish`]): O(1) per run however many columns it spans (a 100 us block over
/// a 1 ms run spans 60 of the overview's 640 columns, and a per-column loop was 16% of an
/// analysis at 1M ranks).
pub(crate) struct RasterAcc {
    row_of_pe: Vec<u32>,
    rows: usize,
    classes: usize,
    t0_ps: u64,
    t1_ps: u64,
    cols: usize,
    by_class: Vec<u64>,
    /// Per (row, class), `cols + 1` differences of the count of runs covering a column
    /// whole: `full[(row * classes + class) * (cols + 1) + col]`.
    full: Vec<i64>,
}

impl RasterAcc {
    pub(crate) fn new(
        row_of_pe: Vec<u32>,
        rows: usize,
        classes: usize,
        (t0_ps, t1_ps): (u64, u64),
        cols: usize,
    ) -> Result<RasterAcc, AnalysisError> {
        if cols == 0 || t1_ps <= t0_ps {
            return Err(AnalysisError::Options(format!(
                "a raster needs columns and a window (got {cols} columns over {t0_ps}..{t1_ps} ps)"
            )));
        }
        let classes = classes.max(1);
        let cells = rows.saturating_mul(cols).saturating_mul(classes);
        if cells > MAX_RASTER_CELLS {
            return Err(AnalysisError::Options(format!(
                "a raster of {rows} rows x {cols} columns x {classes} classes is over {MAX_RASTER_CELLS} cells"
            )));
        }
        Ok(RasterAcc {
            row_of_pe,
            rows,
            classes,
            t0_ps,
            t1_ps,
            cols,
            by_class: vec![0u64; cells],
            full: vec![0i64; rows * classes * (cols + 1)],
        })
    }

    /// Start of column `k` (`k <= cols`): `t0 + floor(k * w / cols)`, as [`Raster::col_span`].
    fn edge(&self, k: usize) -> u64 {
        let w = self.t1_ps - self.t0_ps;
        self.t0_ps
            + match w.checked_mul(k as u64) {
                Some(x) => x / self.cols as u64,
                None => (w as u128 * k as u128 / self.cols as u128) as u64,
            }
    }

    /// The column holding instant `t` (`t0 <= t < t1`): the last `c` with `edge(c) <= t`.
    fn col_of(&self, t: u64) -> usize {
        let (w, cols) = (self.t1_ps - self.t0_ps, self.cols);
        let x = t - self.t0_ps;
        // floor(x * cols / w) is the column or the one before (columns are at least 1 ps
        // wide when w >= cols); narrower columns are searched.
        let mut c = match x.checked_mul(cols as u64) {
            Some(v) => (v / w) as usize,
            None => (x as u128 * cols as u128 / w as u128) as usize,
        }
        .min(cols - 1);
        while c + 1 < cols && self.edge(c + 1) <= t {
            c += 1;
        }
        c
    }

    pub(crate) fn add(&mut self, run: &Run) {
        let (cols, classes) = (self.cols, self.classes);
        let Some(&row) = self.row_of_pe.get(run.pe as usize) else {
            return;
        };
        if row as usize >= self.rows {
            return;
        }
        let (a, b) = (run.start_ps.max(self.t0_ps), run.end_ps.min(self.t1_ps));
        if a >= b {
            return;
        }
        let class = (run.class as usize).min(classes - 1);
        let cell = |c: usize| (row as usize * cols + c) * classes + class;
        let (ca, cb) = (self.col_of(a), self.col_of(b - 1));
        if ca == cb {
            self.by_class[cell(ca)] += b - a;
            return;
        }
        self.by_class[cell(ca)] += self.edge(ca + 1) - a;
        self.by_class[cell(cb)] += b - self.edge(cb);
        if ca + 1 < cb {
            let base = (row as usize * classes + class) * (cols + 1);
            self.full[base + ca + 1] += 1;
            self.full[base + cb] -= 1;
        }
    }

    pub(crate) fn finish(mut self) -> Raster {
        let (rows, cols, classes) = (self.rows, self.cols, self.classes);
        // The columns runs covered whole: each gets its width once per covering run.
        let widths: Vec<u64> = (0..cols).map(|c| self.edge(c + 1) - self.edge(c)).collect();
        for row in 0..rows {
            for class in 0..classes {
                let base = (row * classes + class) * (cols + 1);
                let mut open = 0i64;
                for (c, w) in widths.iter().enumerate() {
                    open += self.full[base + c];
                    if open > 0 {
                        self.by_class[(row * cols + c) * classes + class] += open as u64 * w;
                    }
                }
            }
        }
        self.full = Vec::new();
        let mut row_pes = vec![0u32; rows];
        for &r in &self.row_of_pe {
            if let Some(n) = row_pes.get_mut(r as usize) {
                *n += 1;
            }
        }
        let mut busy_ps = vec![0u64; rows * cols];
        let mut dominant = vec![u16::MAX; rows * cols];
        for (i, chunk) in self.by_class.chunks_exact(classes).enumerate() {
            busy_ps[i] = chunk.iter().sum();
            let mut best = (0u64, u16::MAX);
            for (k, &v) in chunk.iter().enumerate() {
                if v > best.0 {
                    best = (v, k as u16);
                }
            }
            dominant[i] = best.1;
        }
        Raster {
            t0_ps: self.t0_ps,
            t1_ps: self.t1_ps,
            cols,
            row_pes,
            busy_ps,
            dominant,
        }
    }
}

/// Entry methods the report colours apart (the rest are "other").
pub const OVERVIEW_TOP_ENTRIES: usize = 9;
/// Rows of the whole-run overview at most (PEs are grouped beyond).
pub const OVERVIEW_ROWS: usize = 96;
/// Columns (time pixels) of the whole-run overview.
pub const OVERVIEW_COLS: usize = 640;

/// The whole-run overview the report draws: every PE (in at most [`OVERVIEW_ROWS`] rows of
/// consecutive PEs) over the whole run in [`OVERVIEW_COLS`] columns, coloured by the
/// [`OVERVIEW_TOP_ENTRIES`] entry methods with the most busy time (the others share the
/// class after them). Computed from the whole timeline, so the report stays whole when the
/// per-block files hold only some PEs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overview {
    /// PEs per row (the last row may hold fewer).
    pub group: u32,
    /// The entries of classes `0..top.len()`, by busy time.
    pub top: Vec<usize>,
    /// The raster.
    pub raster: Raster,
}

/// The whole-run overview of `report` (a replay of `trace` with its timeline).
pub fn overview(trace: &Trace, report: &ReplayReport) -> Result<Overview, AnalysisError> {
    let tl = timeline_of(trace, report)?;
    let feed = crate::feed::Feed::of_timeline(trace, tl)?;
    let mut totals = vec![0u64; trace.entries.len()];
    for r in tl {
        if let Some(x) = totals.get_mut(feed.entry(r.block) as usize) {
            *x += r.end.saturating_since(r.start).as_ps();
        }
    }
    let mut acc = OverviewAcc::new(&totals, report.pes, report.makespan.as_ps())?;
    feed_all(&feed, tl, &mut acc);
    Ok(acc.finish())
}

/// [`overview`] one run at a time (the entries' busy totals known beforehand).
pub(crate) struct OverviewAcc {
    class_of: Vec<u16>,
    top: Vec<usize>,
    group: u32,
    raster: RasterAcc,
}

impl OverviewAcc {
    /// With `totals[e]` the busy time of entry `e` over the run.
    pub(crate) fn new(
        totals: &[u64],
        pes: u32,
        makespan: u64,
    ) -> Result<OverviewAcc, AnalysisError> {
        let (class_of, top) = top_classes(totals, OVERVIEW_TOP_ENTRIES);
        let classes = top.len() + usize::from(totals.len() > top.len());
        let pes = pes as usize;
        let group = pes.div_ceil(OVERVIEW_ROWS).max(1);
        let rows = pes.div_ceil(group);
        let row_of_pe: Vec<u32> = (0..pes as u32).map(|p| p / group as u32).collect();
        Ok(OverviewAcc {
            class_of,
            top,
            group: group as u32,
            raster: RasterAcc::new(
                row_of_pe,
                rows,
                classes,
                (0, makespan.max(1)),
                OVERVIEW_COLS,
            )?,
        })
    }
    pub(crate) fn finish(self) -> Overview {
        Overview {
            group: self.group,
            top: self.top,
            raster: self.raster.finish(),
        }
    }
}

impl Acc for OverviewAcc {
    fn block(&mut self, r: &TimelineRecord, entry: u32) {
        let class = self.class_of.get(entry as usize).copied().unwrap_or(0);
        self.raster.add(&Run {
            pe: r.pe,
            class,
            start_ps: r.start.as_ps(),
            end_ps: r.end.as_ps(),
        });
    }
}

/// Colour classes for entry methods: the `k` with the most busy time get classes 0..k in
/// that order (ties: lower id first); all others share class `k` ("other"). Returns the class
/// of each entry and the entries of classes 0..k.
pub fn top_classes(busy_by_entry: &[u64], k: usize) -> (Vec<u16>, Vec<usize>) {
    let mut order: Vec<usize> = (0..busy_by_entry.len()).collect();
    order.sort_by(|&a, &b| busy_by_entry[b].cmp(&busy_by_entry[a]).then(a.cmp(&b)));
    let k = k.min(order.len()).min(u16::MAX as usize - 1);
    let top: Vec<usize> = order[..k].to_vec();
    let mut class = vec![k as u16; busy_by_entry.len()];
    for (c, &e) in top.iter().enumerate() {
        class[e] = c as u16;
    }
    (class, top)
}

/// Rover's metrics in one time bin.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricsRow {
    /// Bin start, ps.
    pub bin_start_ps: u64,
    /// Bin end, ps (the last bin ends at the makespan).
    pub bin_end_ps: u64,
    /// Busy time over all PEs in the bin / (PEs x bin width): Rover's utilisation
    /// (concurrency / N) averaged over the bin.
    pub utilization: f64,
    /// AVG_p / MAX_p of the PEs' busy time in the bin (Rover's computational balance; 1 is
    /// perfectly even). `None` when no PE is busy.
    pub balance: Option<f64>,
    /// Blocks that started in the bin.
    pub blocks: u64,
    /// Their mean run time, ps (the grain size). `None` without blocks.
    pub mean_grain_ps: Option<f64>,
    /// Bytes of remote messages sent in the bin.
    pub remote_bytes: u64,
    /// Busy ps per remote byte sent in the bin (Rover's granularity factor, computation per
    /// unit of traffic, in time rather than operations). `None` without traffic.
    pub busy_ps_per_byte: Option<f64>,
    /// Time-averaged fraction of the network's channels busy serialising in the bin, each
    /// remote message charging bytes/bandwidth to every link of its route in the bin it was
    /// sent (Rover's chan_util = channels in use / (N x d), weighted by time; offered load, so
    /// it may exceed 1 under contention). `None` for models without a topology.
    pub channel_utilization: Option<f64>,
}

/// Per-PE busy time per bin: `out[pe * bins + k]`, bins of `bin_ps` from 0 (the last bin
/// also takes anything past its end).
pub fn pe_busy_by_bin(
    report: &ReplayReport,
    bin_ps: u64,
    bins: usize,
) -> Result<Vec<u64>, AnalysisError> {
    let tl = report.timeline.as_ref().ok_or(AnalysisError::NoTimeline)?;
    let pes = report.pes as usize;
    if bins == 0 || bin_ps == 0 || pes.saturating_mul(bins) > MAX_PE_BINS {
        return Err(AnalysisError::Options(format!(
            "{pes} PEs x {bins} bins: at most {MAX_PE_BINS} cells (choose a larger bin)"
        )));
    }
    let mut out = vec![0u64; pes * bins];
    for r in tl {
        let base = r.pe as usize * bins;
        for_each_bin(r, bin_ps, bins, |k, ps| out[base + k] += ps);
    }
    Ok(out)
}

/// Per bin of `bin_ps` from 0 (the last bin also takes anything past its end): the busy time
/// summed over the PEs, and the busiest PE's. Memory O(PEs + bins): each PE's runs come in
/// time order, so one open bin per PE is enough (no PE x bin table).
pub fn bin_busy_sum_max(
    report: &ReplayReport,
    bin_ps: u64,
    bins: usize,
) -> Result<(Vec<u64>, Vec<u64>), AnalysisError> {
    let tl = report.timeline.as_ref().ok_or(AnalysisError::NoTimeline)?;
    let mut acc = BusyBins::new(report.pes, bin_ps, bins)?;
    for r in tl {
        acc.add(r);
    }
    Ok(acc.finish())
}

/// [`bin_busy_sum_max`] one run at a time. A PE's runs must come in time order (a replay's
/// stream does: a PE runs one block at a time).
pub(crate) struct BusyBins {
    bin_ps: u64,
    bins: usize,
    /// Per PE: its open bin and its busy time there.
    open: Vec<(u32, u64)>,
    sum: Vec<u64>,
    max: Vec<u64>,
}

impl BusyBins {
    pub(crate) fn new(pes: u32, bin_ps: u64, bins: usize) -> Result<BusyBins, AnalysisError> {
        if bins == 0 || bin_ps == 0 || bins > MAX_BINS {
            return Err(AnalysisError::Options(format!(
                "{bins} bins of {bin_ps} ps: between 1 and {MAX_BINS} bins (choose a larger bin)"
            )));
        }
        Ok(BusyBins {
            bin_ps,
            bins,
            open: vec![(0, 0); pes as usize],
            sum: vec![0; bins],
            max: vec![0; bins],
        })
    }
    pub(crate) fn add(&mut self, r: &TimelineRecord) {
        let (bin_ps, bins) = (self.bin_ps, self.bins);
        let Some(open) = self.open.get_mut(r.pe as usize) else {
            return;
        };
        let (max, sum) = (&mut self.max, &mut self.sum);
        for_each_bin(r, bin_ps, bins, |k, ps| {
            if open.0 as usize != k {
                let m = &mut max[open.0 as usize];
                *m = (*m).max(open.1);
                *open = (k as u32, 0);
            }
            open.1 += ps;
            sum[k] += ps;
        });
    }
    pub(crate) fn finish(mut self) -> (Vec<u64>, Vec<u64>) {
        for &(k, v) in &self.open {
            let m = &mut self.max[k as usize];
            *m = (*m).max(v);
        }
        (self.sum, self.max)
    }
}

/// Calls `f(bin, ps)` for each bin of `bin_ps` (from 0; the last of `bins` also takes
/// anything past its end) that run `r` overlaps, with the overlap.
pub(crate) fn for_each_bin(
    r: &TimelineRecord,
    bin_ps: u64,
    bins: usize,
    mut f: impl FnMut(usize, u64),
) {
    let (mut a, b) = (r.start.as_ps(), r.end.as_ps());
    while a < b {
        let k = ((a / bin_ps) as usize).min(bins - 1);
        let e = if k == bins - 1 {
            b
        } else {
            ((k as u64 + 1) * bin_ps).min(b)
        };
        f(k, e - a);
        a = e;
    }
}

/// At most this many time bins in [`metrics`].
pub const MAX_BINS: usize = 1 << 24;

/// The replay's timeline, checked to be `trace`'s (one record per block).
pub(crate) fn timeline_of<'a>(
    trace: &Trace,
    report: &'a ReplayReport,
) -> Result<&'a [replay::TimelineRecord], AnalysisError> {
    let tl = report.timeline.as_ref().ok_or(AnalysisError::NoTimeline)?;
    if tl.len() != trace.num_blocks() {
        return Err(AnalysisError::TimelineMismatch {
            records: tl.len() as u64,
            blocks: trace.num_blocks() as u64,
        });
    }
    Ok(tl)
}

/// Rover's metrics over time, in bins of `bin_ps` (0: the makespan over 100).
pub fn metrics(
    trace: &Trace,
    report: &ReplayReport,
    net: &NetSpec,
    bin_ps: u64,
) -> Result<Vec<MetricsRow>, AnalysisError> {
    let tl = report.timeline.as_ref().ok_or(AnalysisError::NoTimeline)?;
    let feed = Feed::of_timeline(trace, tl)?;
    let mut acc = MetricsAcc::new(report.pes, report.makespan.as_ps(), net, bin_ps)?;
    feed_all(&feed, tl, &mut acc);
    Ok(acc.finish())
}

/// [`metrics`] one run at a time.
pub(crate) struct MetricsAcc {
    makespan: u64,
    bin: u64,
    bins: usize,
    pes: usize,
    busy: BusyBins,
    blocks: Vec<(u64, u64)>,
    bytes: Vec<u64>,
    chan_ps: Vec<u128>,
    topo: Option<(network_models::Topology, u32)>,
    bw: Option<sim_core::Bandwidth>,
    channels: Option<u64>,
}

impl MetricsAcc {
    pub(crate) fn new(
        pes: u32,
        makespan: u64,
        net: &NetSpec,
        bin_ps: u64,
    ) -> Result<MetricsAcc, AnalysisError> {
        let makespan = makespan.max(1);
        let bin = if bin_ps == 0 {
            makespan.div_ceil(100).max(1)
        } else {
            bin_ps
        };
        let bins = makespan.div_ceil(bin) as usize;
        let busy = BusyBins::new(pes, bin, bins)?;
        let topo = net.topology().map(|(t, ppn)| (t.clone(), ppn));
        let channels = topo
            .as_ref()
            .map(|(t, _)| t.vertices().saturating_mul(t.ports()));
        Ok(MetricsAcc {
            makespan,
            bin,
            bins,
            pes: pes as usize,
            busy,
            blocks: vec![(0, 0); bins],
            bytes: vec![0; bins],
            chan_ps: vec![0; bins],
            topo,
            bw: link_bandwidth(net),
            channels,
        })
    }

    pub(crate) fn finish(self) -> Vec<MetricsRow> {
        let (makespan, bin, bins, pes) = (self.makespan, self.bin, self.bins, self.pes);
        let (busy_sum, busy_max) = self.busy.finish();
        let mut rows = Vec::with_capacity(bins);
        for k in 0..bins {
            let (a, e) = (k as u64 * bin, ((k as u64 + 1) * bin).min(makespan));
            let width = (e - a).max(1) as f64;
            let (sum, max) = (busy_sum[k], busy_max[k]);
            let (n, d) = self.blocks[k];
            rows.push(MetricsRow {
                bin_start_ps: a,
                bin_end_ps: e,
                utilization: sum as f64 / (width * pes.max(1) as f64),
                balance: (max > 0).then(|| sum as f64 / pes as f64 / max as f64),
                blocks: n,
                mean_grain_ps: (n > 0).then(|| d as f64 / n as f64),
                remote_bytes: self.bytes[k],
                busy_ps_per_byte: (self.bytes[k] > 0).then(|| sum as f64 / self.bytes[k] as f64),
                channel_utilization: match (self.channels, self.bw) {
                    (Some(c), Some(_)) if c > 0 => {
                        Some(self.chan_ps[k] as f64 / (c as f64 * width))
                    }
                    _ => None,
                },
            });
        }
        rows
    }
}

impl Acc for MetricsAcc {
    fn block(&mut self, r: &TimelineRecord, _entry: u32) {
        self.busy.add(r);
        let k = ((r.start.as_ps() / self.bin) as usize).min(self.bins - 1);
        self.blocks[k].0 += 1;
        self.blocks[k].1 += r.end.as_ps() - r.start.as_ps();
    }
    fn wants_deliveries(&self) -> bool {
        true
    }
    fn delivery(&mut self, at: u64, src: u32, dst: u32, b: u64) {
        if src == dst {
            return;
        }
        let k = ((at / self.bin) as usize).min(self.bins - 1);
        self.bytes[k] += b;
        if let (Some((t, ppn)), Some(bw)) = (&self.topo, self.bw) {
            let (na, nb) = ((src / ppn) as u64, (dst / ppn) as u64);
            if na != nb {
                let hops = t.hops(na, nb) as u128;
                self.chan_ps[k] += hops * bw.transfer_time(b).as_ps() as u128;
            }
        }
    }
}

/// The link bandwidth of the models that route over a topology.
fn link_bandwidth(net: &NetSpec) -> Option<sim_core::Bandwidth> {
    match net {
        NetSpec::Hops(h) => Some(h.bandwidth),
        NetSpec::Flow(f) => Some(f.net.bandwidth),
        NetSpec::Contention(c) => Some(c.bandwidth),
        _ => None,
    }
}

/// Per-PE utilisation in `n` equal slices of the run: `out[slice][pe]` in 0..=1 (the machine
/// plot as a sequence of snapshots, after Rover).
pub fn snapshots(report: &ReplayReport, n: usize) -> Result<Vec<Vec<f64>>, AnalysisError> {
    let tl = report.timeline.as_ref().ok_or(AnalysisError::NoTimeline)?;
    let mut acc = SnapshotsAcc::new(report.pes, report.makespan.as_ps(), n)?;
    for r in tl {
        acc.block(r, 0);
    }
    Ok(acc.finish())
}

/// [`snapshots`] one run at a time (a PE x slice table: the output's own size).
pub(crate) struct SnapshotsAcc {
    makespan: u64,
    bin: u64,
    bins: usize,
    pes: usize,
    busy: Vec<u64>,
}

impl SnapshotsAcc {
    pub(crate) fn new(pes: u32, makespan: u64, n: usize) -> Result<SnapshotsAcc, AnalysisError> {
        let makespan = makespan.max(1);
        let n = n.clamp(1, 1000);
        let bin = makespan.div_ceil(n as u64).max(1);
        let bins = makespan.div_ceil(bin) as usize;
        let pes = pes as usize;
        if pes.saturating_mul(bins) > MAX_PE_BINS {
            return Err(AnalysisError::Options(format!(
                "{pes} PEs x {bins} bins: at most {MAX_PE_BINS} cells (choose a larger bin)"
            )));
        }
        Ok(SnapshotsAcc {
            makespan,
            bin,
            bins,
            pes,
            busy: vec![0; pes * bins],
        })
    }
    pub(crate) fn finish(self) -> Vec<Vec<f64>> {
        let (makespan, bin, bins, pes) = (self.makespan, self.bin, self.bins, self.pes);
        (0..bins)
            .map(|k| {
                let width = (((k as u64 + 1) * bin).min(makespan) - k as u64 * bin).max(1) as f64;
                (0..pes)
                    .map(|p| (self.busy[p * bins + k] as f64 / width).min(1.0))
                    .collect()
            })
            .collect()
    }
}

impl Acc for SnapshotsAcc {
    fn block(&mut self, r: &TimelineRecord, _entry: u32) {
        let (bin_ps, bins) = (self.bin, self.bins);
        if r.pe as usize >= self.pes {
            return;
        }
        let base = r.pe as usize * bins;
        let busy = &mut self.busy;
        for_each_bin(r, bin_ps, bins, |k, ps| busy[base + k] += ps);
    }
}

/// Bytes and deliveries between groups of PEs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CommMatrix {
    /// PEs per group (contiguous: group g holds PEs g*size .. (g+1)*size).
    pub group_size: u32,
    /// Groups per side.
    pub groups: u32,
    /// Bytes from group i to group j: `bytes[i * groups + j]` (deliveries between PEs only).
    pub bytes: Vec<u64>,
    /// Deliveries from group i to group j.
    pub messages: Vec<u64>,
}

/// The communication matrix, with at most `max_groups` (<= [`MAX_MATRIX_GROUPS`]) groups per
/// side: one group per PE when P fits, else contiguous groups of ceil(P / max_groups) PEs.
pub fn comm_matrix(
    trace: &Trace,
    report: &ReplayReport,
    max_groups: u32,
) -> Result<CommMatrix, AnalysisError> {
    let tl = report.timeline.as_ref().ok_or(AnalysisError::NoTimeline)?;
    let feed = Feed::of_timeline(trace, tl)?;
    let mut acc = MatrixAcc::new(report.pes, max_groups);
    feed_all(&feed, tl, &mut acc);
    Ok(acc.0)
}

/// [`comm_matrix`] one delivery at a time.
pub(crate) struct MatrixAcc(pub(crate) CommMatrix);

impl MatrixAcc {
    pub(crate) fn new(pes: u32, max_groups: u32) -> MatrixAcc {
        let pes = pes.max(1);
        let max_groups = max_groups.clamp(1, MAX_MATRIX_GROUPS);
        let size = pes.div_ceil(max_groups);
        let groups = pes.div_ceil(size);
        let g = groups as usize;
        MatrixAcc(CommMatrix {
            group_size: size,
            groups,
            bytes: vec![0; g * g],
            messages: vec![0; g * g],
        })
    }
}

impl Acc for MatrixAcc {
    fn wants_deliveries(&self) -> bool {
        true
    }
    fn delivery(&mut self, _at: u64, src: u32, dst: u32, b: u64) {
        let m = &mut self.0;
        if src != dst {
            let g = m.groups as usize;
            let i = (src / m.group_size) as usize * g + (dst / m.group_size) as usize;
            if let (Some(x), Some(n)) = (m.bytes.get_mut(i), m.messages.get_mut(i)) {
                *x += b;
                *n += 1;
            }
        }
    }
}

/// Remote deliveries whose size falls in `[lo, hi)` bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SizeRow {
    /// Lower bound (0 or a power of two).
    pub lo_bytes: u64,
    /// Upper bound, exclusive.
    pub hi_bytes: u64,
    /// Deliveries.
    pub messages: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// Histogram of the sizes of deliveries between PEs, in power-of-two bins (non-empty bins).
pub fn message_sizes(trace: &Trace, report: &ReplayReport) -> Result<Vec<SizeRow>, AnalysisError> {
    let tl = report.timeline.as_ref().ok_or(AnalysisError::NoTimeline)?;
    let feed = Feed::of_timeline(trace, tl)?;
    let mut acc = SizesAcc::default();
    feed_all(&feed, tl, &mut acc);
    Ok(acc.finish())
}

/// [`message_sizes`] one delivery at a time.
pub(crate) struct SizesAcc([(u64, u64); 65]);

impl Default for SizesAcc {
    fn default() -> Self {
        SizesAcc([(0, 0); 65])
    }
}

impl SizesAcc {
    pub(crate) fn finish(&self) -> Vec<SizeRow> {
        self.0
            .iter()
            .enumerate()
            .filter(|(_, (n, _))| *n > 0)
            .map(|(c, &(messages, bytes))| SizeRow {
                lo_bytes: if c == 0 { 0 } else { 1u64 << (c - 1) },
                hi_bytes: match c {
                    0 => 1,
                    64 => u64::MAX,
                    _ => 1u64 << c,
                },
                messages,
                bytes,
            })
            .collect()
    }
}

impl Acc for SizesAcc {
    fn wants_deliveries(&self) -> bool {
        true
    }
    fn delivery(&mut self, _at: u64, src: u32, dst: u32, b: u64) {
        if src != dst {
            let c = if b == 0 {
                0
            } else {
                64 - b.leading_zeros() as usize
            };
            self.0[c].0 += 1;
            self.0[c].1 += b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute force: every picosecond of every run goes to the column whose span
    /// ([`Raster::col_span`]) holds it.
    fn oracle(
        runs: &[Run],
        row_of_pe: &[u32],
        rows: usize,
        window: (u64, u64),
        cols: usize,
    ) -> Vec<u64> {
        let probe = Raster {
            t0_ps: window.0,
            t1_ps: window.1,
            cols,
            row_pes: vec![1; rows],
            busy_ps: vec![],
            dominant: vec![],
        };
        let spans: Vec<(u64, u64)> = (0..cols).map(|c| probe.col_span(c)).collect();
        let mut busy = vec![0u64; rows * cols];
        for r in runs {
            let row = row_of_pe[r.pe as usize] as usize;
            if row >= rows {
                continue;
            }
            for (c, &(a, b)) in spans.iter().enumerate() {
                let (x, y) = (r.start_ps.max(a), r.end_ps.min(b));
                if x < y {
                    busy[row * cols + c] += y - x;
                }
            }
        }
        busy
    }

    #[test]
    fn the_raster_matches_a_per_column_oracle() {
        // A small deterministic generator (xorshift).
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s % n.max(1)
        };
        // Windows wider and narrower than the columns, offset and not.
        for (window, cols) in [
            ((0, 1_000_000), 640),
            ((17, 1_000_003), 97),
            ((5, 300), 640),
            ((0, 64), 64),
            ((1000, 1001), 7),
            ((0, u64::MAX / 2), 640),
        ] {
            let (t0, t1) = window;
            let rows = 3;
            let row_of_pe = vec![0, 1, 2, 2, u32::MAX];
            let span = t1 - t0;
            let mut runs = Vec::new();
            for _ in 0..400 {
                let a = t0.saturating_sub(span / 10) + next(span + span / 5);
                let len = match next(3) {
                    0 => next(span / cols as u64 + 2),
                    1 => next(span / 4 + 1),
                    _ => next(span + 1),
                };
                runs.push(Run {
                    pe: next(5) as u32,
                    class: next(3) as u16,
                    start_ps: a,
                    end_ps: a.saturating_add(len),
                });
            }
            let got = raster(&runs, &row_of_pe, rows, 3, window, cols).unwrap();
            let want = oracle(&runs, &row_of_pe, rows, window, cols);
            assert_eq!(got.busy_ps, want, "window {window:?}, {cols} columns");
            // Each cell's dominant class is one that has busy time there.
            for (i, &d) in got.dominant.iter().enumerate() {
                assert_eq!(d == u16::MAX, want[i] == 0, "cell {i}");
            }
        }
    }
}
