//! Projections' analyses as data (Sinha, Lee): the time profile, usage per PE by entry method,
//! communication over time and grain-size histograms, and the extrema (Lee 3.3): the PEs that
//! stand out. All from a replay's timeline; every figure is simulated.

use crate::AnalysisError;
use crate::feed::{Acc, Feed, feed_all};
use replay::{ReplayReport, TimelineRecord};
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
    let feed = Feed::of_timeline(trace, tl)?;
    let mut acc = ProfilesAcc::new(
        trace.entries.len(),
        report.pes,
        report.makespan.as_ps(),
        bin_ps,
    )?;
    feed_all(&feed, tl, &mut acc);
    Ok(acc.finish(&report.pe_busy_ps))
}

/// [`profiles`] one run at a time.
pub(crate) struct ProfilesAcc {
    bin: u64,
    bins: usize,
    entries: usize,
    pes: usize,
    prof: Vec<u64>,
    usage: Vec<(u64, u64)>,
    grains: std::collections::BTreeMap<(u32, u32), u64>,
    comm: Vec<CommRow>,
    sent: Vec<(u64, u64)>,
}

impl ProfilesAcc {
    /// For `entries` entry methods on `pes` PEs over a run of `makespan` ps.
    pub(crate) fn new(
        entries: usize,
        pes: u32,
        makespan: u64,
        bin_ps: u64,
    ) -> Result<ProfilesAcc, AnalysisError> {
        let bin = if bin_ps == 0 {
            (makespan / 100).max(1)
        } else {
            bin_ps
        };
        let bins = makespan / bin + 1;
        if bins > 1_000_000 {
            return Err(AnalysisError::Options(format!(
                "a bin of {bin} ps gives {bins} bins over the run; at most 1000000"
            )));
        }
        let bins = bins as usize;
        let pes = pes as usize;
        Ok(ProfilesAcc {
            bin,
            bins,
            entries,
            pes,
            prof: vec![0u64; bins * entries],
            usage: vec![(0u64, 0u64); pes * entries],
            grains: Default::default(),
            comm: (0..bins)
                .map(|k| CommRow {
                    bin_start_ps: k as u64 * bin,
                    ..Default::default()
                })
                .collect(),
            sent: vec![(0, 0); pes],
        })
    }

    /// The analyses, with each PE's busy time from `pe_busy_ps`.
    pub(crate) fn finish(self, pe_busy_ps: &[u64]) -> Profiles {
        let (bin, bins, entries, pes) = (self.bin, self.bins, self.entries, self.pes);
        let figs: Vec<PeFigures> = (0..pes as u32)
            .map(|pe| PeFigures {
                pe,
                busy_ps: pe_busy_ps.get(pe as usize).copied().unwrap_or(0),
                messages_sent: self.sent[pe as usize].0,
                bytes_sent: self.sent[pe as usize].1,
            })
            .collect();
        let top = outlier_count(pes as u32);
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
                let v = self.prof[k * entries + e];
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
                let (busy, blocks) = self.usage[pe * entries + e];
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
        let grains = self
            .grains
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
        Profiles {
            bin_ps: bin,
            time_profile,
            usage: usage_rows,
            communication: self.comm,
            grains,
            pes: figs,
            extrema,
        }
    }
}

impl Acc for ProfilesAcc {
    fn block(&mut self, r: &TimelineRecord, entry: u32) {
        let (bin, bins, entries) = (self.bin, self.bins, self.entries);
        let e = (entry as usize).min(entries.saturating_sub(1));
        if entries == 0 || r.pe as usize >= self.pes {
            return;
        }
        let (s, t) = (r.start.as_ps(), r.end.as_ps());
        let u = &mut self.usage[r.pe as usize * entries + e];
        u.0 += t - s;
        u.1 += 1;
        let d = t - s;
        let class = if d == 0 { 0 } else { 64 - d.leading_zeros() };
        *self.grains.entry((e as u32, class)).or_default() += 1;
        let prof = &mut self.prof;
        crate::views::for_each_bin(r, bin, bins, |k, ps| prof[k * entries + e] += ps);
    }
    fn wants_deliveries(&self) -> bool {
        true
    }
    fn delivery(&mut self, at: u64, src: u32, dst: u32, bytes: u64) {
        let row = &mut self.comm[((at / self.bin) as usize).min(self.bins - 1)];
        if src == dst {
            row.local_messages += 1;
            row.local_bytes += bytes;
        } else {
            row.remote_messages += 1;
            row.remote_bytes += bytes;
            if let Some(f) = self.sent.get_mut(src as usize) {
                f.0 += 1;
                f.1 += bytes;
            }
        }
    }
}
