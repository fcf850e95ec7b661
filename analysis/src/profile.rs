//! Projections' analyses as data (Sinha, Lee): the time profile, usage per PE by entry method,
//! communication over time and grain-size histograms, and the extrema (Lee 3.3): the PEs that
//! stand out. All from a replay's timeline; every figure is simulated.

use crate::AnalysisError;
use replay::ReplayReport;
use serde::Serialize;
use trace::Trace;

/// Busy time of one entry method in one time bin.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ProfileRow {
    /// Bin start, ps.
    pub bin_start_ps: u64,
    /// Entry method id.
    pub entry: u32,
    /// Busy time of its blocks inside the bin, summed over PEs.
    pub busy_ps: u64,
}

/// Busy time of one entry method on one PE.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UsageRow {
    /// PE.
    pub pe: u32,
    /// Entry method id.
    pub entry: u32,
    /// Busy time.
    pub busy_ps: u64,
    /// Blocks.
    pub blocks: u64,
}

/// Messages sent in one time bin.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CommRow {
    /// Bin start, ps.
    pub bin_start_ps: u64,
    /// Deliveries between PEs sent in the bin.
    pub remote_messages: u64,
    /// Their bytes.
    pub remote_bytes: u64,
    /// Deliveries within a PE.
    pub local_messages: u64,
    /// Their bytes.
    pub local_bytes: u64,
}

/// Blocks of one entry method whose run time falls in `[lo, hi)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GrainRow {
    /// Entry method id.
    pub entry: u32,
    /// Lower bound, ps (a power of two, or 0).
    pub lo_ps: u64,
    /// Upper bound, ps (exclusive).
    pub hi_ps: u64,
    /// Blocks.
    pub blocks: u64,
}

/// One PE's figures, for the extrema.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PeFigures {
    /// PE.
    pub pe: u32,
    /// Busy time.
    pub busy_ps: u64,
    /// Deliveries it sent.
    pub messages_sent: u64,
    /// Their bytes.
    pub bytes_sent: u64,
}

/// PEs that stand out on one measure, and how they compare with the rest.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Extremes {
    /// The measure: `busy` (least idle), `messages_sent` or `bytes_sent`.
    pub measure: &'static str,
    /// The top PEs, most first.
    pub pes: Vec<u32>,
    /// Their values, in the same order.
    pub values: Vec<u64>,
    /// Mean of the top PEs.
    pub outlier_mean: f64,
    /// Mean of all other PEs.
    pub rest_mean: f64,
}

/// Everything this module computes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Profiles {
    /// Bin width, ps.
    pub bin_ps: u64,
    /// Time profile, by bin then entry (non-zero rows only).
    pub time_profile: Vec<ProfileRow>,
    /// Usage per PE by entry (non-zero rows only).
    pub usage: Vec<UsageRow>,
    /// Communication over time (every bin).
    pub communication: Vec<CommRow>,
    /// Grain sizes per entry in power-of-two bins (non-zero rows only).
    pub grains: Vec<GrainRow>,
    /// Per-PE figures.
    pub pes: Vec<PeFigures>,
    /// Outliers by busy time, messages and bytes sent.
    pub extrema: Vec<Extremes>,
}

/// How many outliers to list on `pes` PEs: min(ceil(10% of P), 20), at least 1.
pub fn outlier_count(pes: u32) -> usize {
    (pes as usize).div_ceil(10).clamp(1, 20)
}

/// The analyses of `report` (a replay of the flat `trace` with its timeline), with time bins
/// of `bin_ps` (0: the makespan over 100, at least 1 ps). At most 1,000,000 bins.
pub fn profiles(
    trace: &Trace,
    report: &ReplayReport,
    bin_ps: u64,
) -> Result<Profiles, AnalysisError> {
    let tl = report.timeline.as_ref().ok_or(AnalysisError::NoTimeline)?;
    if tl.len() != trace.num_blocks() {
        return Err(AnalysisError::TimelineMismatch {
            records: tl.len() as u64,
            blocks: trace.num_blocks() as u64,
        });
    }
    let makespan = report.makespan.as_ps();
    let bin = if bin_ps == 0 {
        (makespan / 100).max(1)
    } else {
        bin_ps
    };
    let bins = (makespan / bin + 1) as usize;
    if bins > 1_000_000 {
        return Err(AnalysisError::Options(format!(
            "a bin of {bin} ps gives {bins} bins over the run; at most 1000000"
        )));
    }
    let entries = trace.entries.len();
    let pes = report.pes as usize;
    let cols = trace.columns();
    let mut prof = vec![0u64; bins * entries];
    let mut usage = vec![(0u64, 0u64); pes * entries];
    let mut grains: std::collections::BTreeMap<(u32, u32), u64> = Default::default();
    for r in tl {
        let b = r.block as usize;
        let e = cols.entry[b] as usize;
        let (s, t) = (r.start.as_ps(), r.end.as_ps());
        let u = &mut usage[r.pe as usize * entries + e];
        u.0 += t - s;
        u.1 += 1;
        let d = t - s;
        let class = if d == 0 { 0 } else { 64 - d.leading_zeros() };
        *grains.entry((e as u32, class)).or_default() += 1;
        let mut a = s;
        while a < t {
            let k = ((a / bin) as usize).min(bins - 1);
            let edge = ((k as u64 + 1) * bin).min(t);
            let edge = if k == bins - 1 { t } else { edge };
            prof[k * entries + e] += edge - a;
            a = edge;
        }
    }
    let mut comm: Vec<CommRow> = (0..bins)
        .map(|k| CommRow {
            bin_start_ps: k as u64 * bin,
            ..Default::default()
        })
        .collect();
    let mut figs: Vec<PeFigures> = (0..pes as u32)
        .map(|pe| PeFigures {
            pe,
            busy_ps: report.pe_busy_ps.get(pe as usize).copied().unwrap_or(0),
            messages_sent: 0,
            bytes_sent: 0,
        })
        .collect();
    crate::views::for_each_delivery(trace, report, |at, src, dst, bytes| {
        let row = &mut comm[((at / bin) as usize).min(bins - 1)];
        if src == dst {
            row.local_messages += 1;
            row.local_bytes += bytes;
        } else {
            row.remote_messages += 1;
            row.remote_bytes += bytes;
            let f = &mut figs[src as usize];
            f.messages_sent += 1;
            f.bytes_sent += bytes;
        }
    })?;
    let top = outlier_count(report.pes);
    let extrema = [
        ("busy", (|f: &PeFigures| f.busy_ps) as fn(&PeFigures) -> u64),
        ("messages_sent", |f: &PeFigures| f.messages_sent),
        ("bytes_sent", |f: &PeFigures| f.bytes_sent),
    ]
    .into_iter()
    .map(|(measure, get)| {
        let mut order: Vec<&PeFigures> = figs.iter().collect();
        order.sort_by(|a, b| get(b).cmp(&get(a)).then(a.pe.cmp(&b.pe)));
        let (hi, lo) = order.split_at(top.min(order.len()));
        let mean = |v: &[&PeFigures]| {
            if v.is_empty() {
                0.0
            } else {
                v.iter().map(|f| get(f) as f64).sum::<f64>() / v.len() as f64
            }
        };
        Extremes {
            measure,
            pes: hi.iter().map(|f| f.pe).collect(),
            values: hi.iter().map(|f| get(f)).collect(),
            outlier_mean: mean(hi),
            rest_mean: mean(lo),
        }
    })
    .collect();
    let mut time_profile = Vec::new();
    for k in 0..bins {
        for e in 0..entries {
            let v = prof[k * entries + e];
            if v > 0 {
                time_profile.push(ProfileRow {
                    bin_start_ps: k as u64 * bin,
                    entry: e as u32,
                    busy_ps: v,
                });
            }
        }
    }
    let mut usage_rows = Vec::new();
    for pe in 0..pes {
        for e in 0..entries {
            let (busy, blocks) = usage[pe * entries + e];
            if blocks > 0 {
                usage_rows.push(UsageRow {
                    pe: pe as u32,
                    entry: e as u32,
                    busy_ps: busy,
                    blocks,
                });
            }
        }
    }
    let grains = grains
        .into_iter()
        .map(|((entry, class), blocks)| GrainRow {
            entry,
            lo_ps: if class == 0 { 0 } else { 1u64 << (class - 1) },
            hi_ps: if class == 0 {
                1
            } else if class >= 64 {
                u64::MAX
            } else {
                1u64 << class
            },
            blocks,
        })
        .collect();
    Ok(Profiles {
        bin_ps: bin,
        time_profile,
        usage: usage_rows,
        communication: comm,
        grains,
        pes: figs,
        extrema,
    })
}
