//! The analysis files that `whatif analyze --out` and `whatif replay --out` write next to the
//! replay's own outputs, and that `whatif report` draws: Projections' analyses
//! (`time_profile.csv`, `usage.csv`, `communication.csv`, `grain_sizes.csv`, `extrema.csv`),
//! Rover's metrics over time (`metrics.csv`), utilisation snapshots per PE
//! (`snapshots.csv`), the k-means clustering of the PEs (`clusters.csv`), the communication
//! matrix (`comm_matrix.csv`) and the message sizes (`message_sizes.csv`). Times are integer
//! picoseconds (`_ps`); ratios are plain decimals.

use crate::error::{Ctx, Result};
use network_models::NetSpec;
use replay::ReplayReport;
use trace::Trace;

/// Clusters asked of k-means (Lee used k = 15).
pub const CLUSTERS: usize = 15;
/// Representative PEs kept (exemplars, then outliers).
pub const REPRESENTATIVES: usize = 20;
/// Snapshots of the machine plot.
pub const SNAPSHOTS: usize = 6;

/// Everything the files hold, computed once.
pub type Views = analysis::allviews::Views;

/// The views' sizes (`bin_ps` 0: the makespan over 100).
pub fn options(bin_ps: u64) -> analysis::allviews::ViewOptions {
    analysis::allviews::ViewOptions {
        bin_ps,
        clusters: CLUSTERS,
        representatives: REPRESENTATIVES,
        snapshots: SNAPSHOTS,
        matrix_groups: 64,
    }
}

/// Computes every view of a replay with its timeline.
pub fn of(trace: &Trace, r: &ReplayReport, net: &NetSpec, bin_ps: u64) -> Result<Views> {
    analysis::allviews::of_timeline(trace, r, net, options(bin_ps)).ctx(|| "the analysis views")
}

/// The file names [`write`] writes.
pub const FILES: &str = "time_profile.csv, usage.csv, communication.csv, grain_sizes.csv, extrema.csv, metrics.csv, snapshots.csv, clusters.csv, comm_matrix.csv, message_sizes.csv, overview.csv";

/// Writes every view file into `dir`.
pub fn write(views: &Views, dir: &std::path::Path, trace: &Trace) -> Result<()> {
    views.write_files(dir, trace)
}

trait WriteFiles {
    fn write_files(&self, dir: &std::path::Path, trace: &Trace) -> Result<()>;
}

impl WriteFiles for Views {
    fn write_files(&self, dir: &std::path::Path, trace: &Trace) -> Result<()> {
        write_profiles(dir, &self.profiles, trace)?;
        let opt = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.6}"));
        let mut w = crate::csv_file(&dir.join("metrics.csv"))?;
        w.write_record([
            "bin_start_ps",
            "bin_end_ps",
            "utilization",
            "balance",
            "blocks",
            "mean_grain_ps",
            "remote_bytes",
            "busy_ps_per_byte",
            "channel_utilization",
        ])?;
        for m in &self.metrics {
            w.write_record([
                m.bin_start_ps.to_string(),
                m.bin_end_ps.to_string(),
                format!("{:.6}", m.utilization),
                opt(m.balance),
                m.blocks.to_string(),
                m.mean_grain_ps.map_or(String::new(), |x| format!("{x:.1}")),
                m.remote_bytes.to_string(),
                opt(m.busy_ps_per_byte),
                opt(m.channel_utilization),
            ])?;
        }
        crate::commit_csv(w)?;
        let mut w = crate::csv_file(&dir.join("snapshots.csv"))?;
        w.write_record(["slice", "pe", "utilization"])?;
        for (k, s) in self.snapshots.iter().enumerate() {
            for (pe, u) in s.iter().enumerate() {
                w.write_record([k.to_string(), pe.to_string(), format!("{u:.4}")])?;
            }
        }
        crate::commit_csv(w)?;
        let c = &self.clusters;
        let reps = c.representatives();
        let mut w = crate::csv_file(&dir.join("clusters.csv"))?;
        w.write_record(["pe", "cluster", "role", "distance_ps", "cluster_size"])?;
        for (pe, &k) in c.assignment.iter().enumerate() {
            let cl = &c.clusters[k as usize];
            let role = if cl.exemplar == pe as u32 {
                "exemplar"
            } else if reps.binary_search(&(pe as u32)).is_ok() {
                "outlier"
            } else {
                "member"
            };
            w.write_record([
                pe.to_string(),
                k.to_string(),
                role.to_string(),
                format!("{:.0}", c.distance_ps[pe]),
                cl.size.to_string(),
            ])?;
        }
        crate::commit_csv(w)?;
        let m = &self.matrix;
        let mut w = crate::csv_file(&dir.join("comm_matrix.csv"))?;
        w.write_record([
            "src_first_pe",
            "dst_first_pe",
            "group_pes",
            "messages",
            "bytes",
        ])?;
        let g = m.groups as usize;
        for i in 0..g {
            for j in 0..g {
                if m.messages[i * g + j] > 0 {
                    w.write_record([
                        (i as u64 * m.group_size as u64).to_string(),
                        (j as u64 * m.group_size as u64).to_string(),
                        m.group_size.to_string(),
                        m.messages[i * g + j].to_string(),
                        m.bytes[i * g + j].to_string(),
                    ])?;
                }
            }
        }
        crate::commit_csv(w)?;
        // The overview: its busy cells (row of PEs, time column, busy time, dominant entry).
        let o = &self.overview;
        let ras = &o.raster;
        let mut w = crate::csv_file(&dir.join("overview.csv"))?;
        w.write_record([
            "row", "pe_first", "pe_last", "col", "t0_ps", "t1_ps", "busy_ps", "dominant",
        ])?;
        let mut first = 0u64;
        for (row, &n) in ras.row_pes.iter().enumerate() {
            for col in 0..ras.cols {
                let i = row * ras.cols + col;
                if ras.busy_ps[i] == 0 {
                    continue;
                }
                let (a, b) = ras.col_span(col);
                let d = ras.dominant[i] as usize;
                w.write_record([
                    row.to_string(),
                    first.to_string(),
                    (first + u64::from(n.max(1)) - 1).to_string(),
                    col.to_string(),
                    a.to_string(),
                    b.to_string(),
                    ras.busy_ps[i].to_string(),
                    o.top.get(d).map_or("other".to_string(), |&e| {
                        trace
                            .entries
                            .get(e)
                            .map_or(String::new(), |x| x.name.clone())
                    }),
                ])?;
            }
            first += u64::from(n);
        }
        crate::commit_csv(w)?;
        let mut w = crate::csv_file(&dir.join("message_sizes.csv"))?;
        w.write_record(["lo_bytes", "hi_bytes", "messages", "bytes"])?;
        for s in &self.sizes {
            w.write_record([
                s.lo_bytes.to_string(),
                s.hi_bytes.to_string(),
                s.messages.to_string(),
                s.bytes.to_string(),
            ])?;
        }
        crate::commit_csv(w)
    }
}

/// Writes the CSVs of [`analysis::profile::profiles`] into `dir`.
fn write_profiles(
    dir: &std::path::Path,
    p: &analysis::profile::Profiles,
    trace: &Trace,
) -> Result<()> {
    let name = |e: u32| {
        trace
            .entries
            .get(e as usize)
            .map_or(String::new(), |x| x.name.clone())
    };
    let mut w = crate::csv_file(&dir.join("time_profile.csv"))?;
    w.write_record(["bin_start_ps", "bin_ps", "entry", "busy_ps"])?;
    for r in &p.time_profile {
        w.write_record([
            r.bin_start_ps.to_string(),
            p.bin_ps.to_string(),
            name(r.entry),
            r.busy_ps.to_string(),
        ])?;
    }
    crate::commit_csv(w)?;
    let mut w = crate::csv_file(&dir.join("usage.csv"))?;
    w.write_record(["pe", "entry", "busy_ps", "blocks"])?;
    for r in &p.usage {
        w.write_record([
            r.pe.to_string(),
            name(r.entry),
            r.busy_ps.to_string(),
            r.blocks.to_string(),
        ])?;
    }
    crate::commit_csv(w)?;
    let mut w = crate::csv_file(&dir.join("communication.csv"))?;
    w.write_record([
        "bin_start_ps",
        "bin_ps",
        "remote_messages",
        "remote_bytes",
        "local_messages",
        "local_bytes",
    ])?;
    for r in &p.communication {
        w.write_record([
            r.bin_start_ps.to_string(),
            p.bin_ps.to_string(),
            r.remote_messages.to_string(),
            r.remote_bytes.to_string(),
            r.local_messages.to_string(),
            r.local_bytes.to_string(),
        ])?;
    }
    crate::commit_csv(w)?;
    let mut w = crate::csv_file(&dir.join("grain_sizes.csv"))?;
    w.write_record(["entry", "lo_ps", "hi_ps", "blocks"])?;
    for r in &p.grains {
        w.write_record([
            name(r.entry),
            r.lo_ps.to_string(),
            r.hi_ps.to_string(),
            r.blocks.to_string(),
        ])?;
    }
    crate::commit_csv(w)?;
    let mut w = crate::csv_file(&dir.join("extrema.csv"))?;
    w.write_record([
        "measure",
        "rank",
        "pe",
        "value",
        "outlier_mean",
        "rest_mean",
    ])?;
    for e in &p.extrema {
        for (i, (pe, v)) in e.pes.iter().zip(&e.values).enumerate() {
            w.write_record([
                e.measure.to_string(),
                (i + 1).to_string(),
                pe.to_string(),
                v.to_string(),
                format!("{:.1}", e.outlier_mean),
                format!("{:.1}", e.rest_mean),
            ])?;
        }
    }
    crate::commit_csv(w)
}
