//! What the report draws, as data: a downsampled timeline raster (all PEs and all time at a
//! fixed number of pixel columns), Rover's metrics over time (utilisation, balance,
//! granularity, channel utilisation), per-PE utilisation snapshots for machine plots, the
//! communication matrix (bytes by PE pair, aggregated to groups of PEs for large P) and the
//! message-size histogram. Every function is deterministic and bounded: sizes that grow with
//! the input (PEs x bins, groups x groups) are checked before they are allocated.

use crate::AnalysisError;
use network_models::NetSpec;
use replay::ReplayReport;
use serde::Serialize;
use trace::{BlockId, Trace};

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
    (t0_ps, t1_ps): (u64, u64),
    cols: usize,
) -> Result<Raster, AnalysisError> {
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
    let mut by_class = vec![0u64; cells];
    let mut row_pes = vec![0u32; rows];
    for &r in row_of_pe {
        if let Some(n) = row_pes.get_mut(r as usize) {
            *n += 1;
        }
    }
    let w = (t1_ps - t0_ps) as u128;
    let col_of = |t: u64| ((((t - t0_ps) as u128) * cols as u128 / w) as usize).min(cols - 1);
    let edge = |k: usize| t0_ps + (w * k as u128 / cols as u128) as u64;
    for run in runs {
        let Some(&row) = row_of_pe.get(run.pe as usize) else {
            continue;
        };
        if row as usize >= rows {
            continue;
        }
        let (mut a, b) = (run.start_ps.max(t0_ps), run.end_ps.min(t1_ps));
        let class = (run.class as usize).min(classes - 1);
        while a < b {
            let c = col_of(a);
            let e = edge(c + 1).min(b).max(a + 1);
            by_class[(row as usize * cols + c) * classes + class] += e - a;
            a = e;
        }
    }
    let mut busy_ps = vec![0u64; rows * cols];
    let mut dominant = vec![u16::MAX; rows * cols];
    for (i, chunk) in by_class.chunks_exact(classes).enumerate() {
        busy_ps[i] = chunk.iter().sum();
        let mut best = (0u64, u16::MAX);
        for (k, &v) in chunk.iter().enumerate() {
            if v > best.0 {
                best = (v, k as u16);
            }
        }
        dominant[i] = best.1;
    }
    Ok(Raster {
        t0_ps,
        t1_ps,
        cols,
        row_pes,
        busy_ps,
        dominant,
    })
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
    let mut totals = vec![0u64; trace.entries.len()];
    for r in tl {
        let e = trace.block(BlockId(r.block)).entry.index();
        if let Some(x) = totals.get_mut(e) {
            *x += r.end.saturating_since(r.start).as_ps();
        }
    }
    let (class_of, top) = top_classes(&totals, OVERVIEW_TOP_ENTRIES);
    let classes = top.len() + usize::from(trace.entries.len() > top.len());
    let pes = report.pes as usize;
    let group = pes.div_ceil(OVERVIEW_ROWS).max(1);
    let rows = pes.div_ceil(group);
    let row_of_pe: Vec<u32> = (0..report.pes).map(|p| p / group as u32).collect();
    let runs: Vec<Run> = tl
        .iter()
        .map(|r| Run {
            pe: r.pe,
            class: class_of[trace.block(BlockId(r.block)).entry.index()],
            start_ps: r.start.as_ps(),
            end_ps: r.end.as_ps(),
        })
        .collect();
    let raster = raster(
        &runs,
        &row_of_pe,
        rows,
        classes,
        (0, report.makespan.as_ps().max(1)),
        OVERVIEW_COLS,
    )?;
    Ok(Overview {
        group: group as u32,
        top,
        raster,
    })
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
        let (mut a, b) = (r.start.as_ps(), r.end.as_ps());
        let base = r.pe as usize * bins;
        while a < b {
            let k = ((a / bin_ps) as usize).min(bins - 1);
            let e = if k == bins - 1 {
                b
            } else {
                ((k as u64 + 1) * bin_ps).min(b)
            };
            out[base + k] += e - a;
            a = e;
        }
    }
    Ok(out)
}

/// Per bin of `bin_ps` from 0 (the last bin also takes anything past its end): the busy time
/// summed over the PEs, and the busiest PE's. Memory O(records + PEs + bins): each PE's
/// records are binned in turn into one scratch row, so there is no PE x bin table.
pub fn bin_busy_sum_max(
    report: &ReplayReport,
    bin_ps: u64,
    bins: usize,
) -> Result<(Vec<u64>, Vec<u64>), AnalysisError> {
    let tl = report.timeline.as_ref().ok_or(AnalysisError::NoTimeline)?;
    let pes = report.pes as usize;
    if bins == 0 || bin_ps == 0 || bins > MAX_BINS {
        return Err(AnalysisError::Options(format!(
            "{bins} bins of {bin_ps} ps: between 1 and {MAX_BINS} bins (choose a larger bin)"
        )));
    }
    // Records grouped by PE (a counting sort of their indices).
    let mut first = vec![0u32; pes + 1];
    for r in tl {
        if let Some(n) = first.get_mut(r.pe as usize + 1) {
            *n += 1;
        }
    }
    for p in 0..pes {
        first[p + 1] += first[p];
    }
    let mut at = first.clone();
    let mut order = vec![0u32; tl.len()];
    for (i, r) in tl.iter().enumerate() {
        if let Some(slot) = at.get_mut(r.pe as usize) {
            order[*slot as usize] = i as u32;
            *slot += 1;
        }
    }
    let (mut sum, mut max) = (vec![0u64; bins], vec![0u64; bins]);
    let mut row = vec![0u64; bins];
    let mut touched: Vec<usize> = Vec::new();
    for p in 0..pes {
        for &i in &order[first[p] as usize..first[p + 1] as usize] {
            let r = &tl[i as usize];
            let (mut a, b) = (r.start.as_ps(), r.end.as_ps());
            while a < b {
                let k = ((a / bin_ps) as usize).min(bins - 1);
                let e = if k == bins - 1 {
                    b
                } else {
                    ((k as u64 + 1) * bin_ps).min(b)
                };
                if row[k] == 0 {
                    touched.push(k);
                }
                row[k] += e - a;
                sum[k] += e - a;
                a = e;
            }
        }
        for &k in &touched {
            max[k] = max[k].max(row[k]);
            row[k] = 0;
        }
        touched.clear();
    }
    Ok((sum, max))
}

/// At most this many time bins in [`metrics`].
pub const MAX_BINS: usize = 1 << 24;

/// Send time of every send slot and the PE of every block, from the timeline.
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

fn placement(trace: &Trace, report: &ReplayReport) -> Result<(Vec<u64>, Vec<u32>), AnalysisError> {
    let tl = timeline_of(trace, report)?;
    let n = trace.num_blocks();
    let mut start = vec![0u64; n];
    let mut pe = vec![0u32; n];
    for r in tl {
        start[r.block as usize] = r.start.as_ps();
        pe[r.block as usize] = r.pe;
    }
    Ok((start, pe))
}

/// Calls `f(send_time_ps, src_pe, dst_pe, bytes)` for every delivery of `trace` in block order.
pub(crate) fn for_each_delivery(
    trace: &Trace,
    report: &ReplayReport,
    mut f: impl FnMut(u64, u32, u32, u64),
) -> Result<(), AnalysisError> {
    let (start, pe) = placement(trace, report)?;
    let consumers = trace.consumers();
    let sends = trace.all_sends();
    for b in 0..trace.num_blocks() as u32 {
        for si in trace.send_range(BlockId(b)) {
            let s = &sends[si];
            let at = start[b as usize].saturating_add(s.offset.as_ps());
            let (c0, c1) = (
                consumers.start[si] as usize,
                consumers.start[si + 1] as usize,
            );
            for &c in &consumers.blocks[c0..c1] {
                f(at, pe[b as usize], pe[c as usize], s.bytes);
            }
        }
    }
    Ok(())
}

/// Rover's metrics over time, in bins of `bin_ps` (0: the makespan over 100).
pub fn metrics(
    trace: &Trace,
    report: &ReplayReport,
    net: &NetSpec,
    bin_ps: u64,
) -> Result<Vec<MetricsRow>, AnalysisError> {
    let makespan = report.makespan.as_ps().max(1);
    let bin = if bin_ps == 0 {
        makespan.div_ceil(100).max(1)
    } else {
        bin_ps
    };
    let bins = makespan.div_ceil(bin) as usize;
    let pes = report.pes as usize;
    let (busy_sum, busy_max) = bin_busy_sum_max(report, bin, bins)?;
    let tl = report.timeline.as_ref().ok_or(AnalysisError::NoTimeline)?;
    let mut blocks = vec![(0u64, 0u64); bins];
    for r in tl {
        let k = ((r.start.as_ps() / bin) as usize).min(bins - 1);
        blocks[k].0 += 1;
        blocks[k].1 += r.end.as_ps() - r.start.as_ps();
    }
    let topo = net.topology();
    let bw = link_bandwidth(net);
    let channels = topo.map(|(t, _)| t.vertices().saturating_mul(t.ports()));
    let mut bytes = vec![0u64; bins];
    let mut chan_ps = vec![0u128; bins];
    for_each_delivery(trace, report, |at, src, dst, b| {
        if src == dst {
            return;
        }
        let k = ((at / bin) as usize).min(bins - 1);
        bytes[k] += b;
        if let (Some((t, ppn)), Some(bw)) = (topo, bw) {
            let (na, nb) = ((src / ppn) as u64, (dst / ppn) as u64);
            if na != nb {
                let hops = t.hops(na, nb) as u128;
                chan_ps[k] += hops * bw.transfer_time(b).as_ps() as u128;
            }
        }
    })?;
    let mut rows = Vec::with_capacity(bins);
    for k in 0..bins {
        let (a, e) = (k as u64 * bin, ((k as u64 + 1) * bin).min(makespan));
        let width = (e - a).max(1) as f64;
        let (sum, max) = (busy_sum[k], busy_max[k]);
        let (n, d) = blocks[k];
        rows.push(MetricsRow {
            bin_start_ps: a,
            bin_end_ps: e,
            utilization: sum as f64 / (width * pes.max(1) as f64),
            balance: (max > 0).then(|| sum as f64 / pes as f64 / max as f64),
            blocks: n,
            mean_grain_ps: (n > 0).then(|| d as f64 / n as f64),
            remote_bytes: bytes[k],
            busy_ps_per_byte: (bytes[k] > 0).then(|| sum as f64 / bytes[k] as f64),
            channel_utilization: match (channels, bw) {
                (Some(c), Some(_)) if c > 0 => Some(chan_ps[k] as f64 / (c as f64 * width)),
                _ => None,
            },
        });
    }
    Ok(rows)
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
    let makespan = report.makespan.as_ps().max(1);
    let n = n.clamp(1, 1000);
    let bin = makespan.div_ceil(n as u64).max(1);
    let bins = makespan.div_ceil(bin) as usize;
    let busy = pe_busy_by_bin(report, bin, bins)?;
    let pes = report.pes as usize;
    Ok((0..bins)
        .map(|k| {
            let width = (((k as u64 + 1) * bin).min(makespan) - k as u64 * bin).max(1) as f64;
            (0..pes)
                .map(|p| (busy[p * bins + k] as f64 / width).min(1.0))
                .collect()
        })
        .collect())
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
    let pes = report.pes.max(1);
    let max_groups = max_groups.clamp(1, MAX_MATRIX_GROUPS);
    let size = pes.div_ceil(max_groups);
    let groups = pes.div_ceil(size);
    let g = groups as usize;
    let mut m = CommMatrix {
        group_size: size,
        groups,
        bytes: vec![0; g * g],
        messages: vec![0; g * g],
    };
    for_each_delivery(trace, report, |_, src, dst, b| {
        if src != dst {
            let i = (src / size) as usize * g + (dst / size) as usize;
            m.bytes[i] += b;
            m.messages[i] += 1;
        }
    })?;
    Ok(m)
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
    let mut h = [(0u64, 0u64); 65];
    for_each_delivery(trace, report, |_, src, dst, b| {
        if src != dst {
            let c = if b == 0 {
                0
            } else {
                64 - b.leading_zeros() as usize
            };
            h[c].0 += 1;
            h[c].1 += b;
        }
    })?;
    Ok(h.iter()
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
        .collect())
}
