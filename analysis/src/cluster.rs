//! k-means clustering of PEs by their behaviour (Lee 2009, ch. 4), so that a run on thousands
//! of PEs can be looked at through a few representatives.
//!
//! * Features: each PE's total busy time per entry method, in picoseconds, not normalised
//!   (Lee: within one class of metrics, large-time entries should dominate); entries that no
//!   PE ran are dropped.
//! * Seeds: `k` points spread uniformly along the diagonal of the data's bounding box (Lee's
//!   option 2), so no random numbers are involved and the result is reproducible.
//! * Lloyd iterations (assign each PE to its nearest centroid, ties to the lower cluster;
//!   recompute centroids) until no PE changes cluster, at most [`MAX_ITERATIONS`] times.
//!   Empty clusters are dropped.
//! * Representatives: each cluster's exemplar (the PE closest to its centroid, ties to the
//!   lower PE), then `R - C` outliers shared among the clusters in proportion to their size
//!   (round((R-C) |C_i| / P), the PEs farthest from their centroid; a PE on its centroid is
//!   never an outlier).

use crate::AnalysisError;
use serde::Serialize;

/// Lloyd iterations at most.
pub const MAX_ITERATIONS: usize = 100;
/// At most this many PE x feature values.
pub const MAX_FEATURE_CELLS: usize = 1 << 27;

/// One cluster.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cluster {
    /// Number of PEs in it.
    pub size: u32,
    /// The PE closest to its centroid.
    pub exemplar: u32,
    /// Outliers chosen from it (farthest from the centroid first).
    pub outliers: Vec<u32>,
    /// Centroid: mean busy time per feature entry, ps.
    pub centroid_ps: Vec<f64>,
    /// Mean distance of its PEs to the centroid, ps.
    pub spread_ps: f64,
}

/// A clustering of the PEs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Clustering {
    /// The entry methods used as features (ids), in feature order.
    pub features: Vec<u32>,
    /// Cluster of each PE (an index into `clusters`).
    pub assignment: Vec<u32>,
    /// Distance of each PE to its cluster's centroid, ps.
    pub distance_ps: Vec<f64>,
    /// Non-empty clusters, by their lowest PE.
    pub clusters: Vec<Cluster>,
    /// Lloyd iterations run.
    pub iterations: usize,
}

impl Clustering {
    /// The representative PEs: exemplars then outliers, cluster by cluster, sorted by PE.
    pub fn representatives(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self
            .clusters
            .iter()
            .flat_map(|c| std::iter::once(c.exemplar).chain(c.outliers.iter().copied()))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

fn dist2(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// Clusters `pes` PEs whose busy time per entry method is `usage[pe * entries + e]` into at
/// most `k` clusters, and picks `representatives` (at least one per cluster).
pub fn kmeans(
    usage: &[u64],
    pes: usize,
    entries: usize,
    k: usize,
    representatives: usize,
) -> Result<Clustering, AnalysisError> {
    if usage.len() != pes.saturating_mul(entries) || pes == 0 {
        return Err(AnalysisError::Options(format!(
            "k-means: {} values for {pes} PEs x {entries} entries",
            usage.len()
        )));
    }
    if k == 0 {
        return Err(AnalysisError::Options(
            "k-means: k must be at least 1".into(),
        ));
    }
    let features: Vec<usize> = (0..entries)
        .filter(|&e| (0..pes).any(|p| usage[p * entries + e] > 0))
        .collect();
    let m = features.len().max(1);
    if pes.saturating_mul(m) > MAX_FEATURE_CELLS {
        return Err(AnalysisError::Options(format!(
            "k-means: {pes} PEs x {m} entry methods is over {MAX_FEATURE_CELLS} values"
        )));
    }
    let x: Vec<f64> = (0..pes)
        .flat_map(|p| {
            let row = &usage[p * entries..(p + 1) * entries];
            let f = &features;
            (0..m).map(move |i| f.get(i).map_or(0.0, |&e| row[e] as f64))
        })
        .collect();
    let pt = |p: usize| &x[p * m..(p + 1) * m];
    let k = k.min(pes);
    let (mut lo, mut hi) = (vec![f64::MAX; m], vec![f64::MIN; m]);
    for p in 0..pes {
        for (i, v) in pt(p).iter().enumerate() {
            lo[i] = lo[i].min(*v);
            hi[i] = hi[i].max(*v);
        }
    }
    let mut cent: Vec<f64> = (0..k)
        .flat_map(|c| {
            let f = (c as f64 + 0.5) / k as f64;
            (0..m).map(move |i| (i, f))
        })
        .map(|(i, f)| lo[i] + f * (hi[i] - lo[i]))
        .collect();
    let mut assign = vec![u32::MAX; pes];
    let mut iterations = 0;
    loop {
        let mut changed = false;
        for (p, slot) in assign.iter_mut().enumerate() {
            let mut best = (f64::MAX, 0u32);
            for c in 0..k {
                let d = dist2(pt(p), &cent[c * m..(c + 1) * m]);
                if d < best.0 {
                    best = (d, c as u32);
                }
            }
            if *slot != best.1 {
                *slot = best.1;
                changed = true;
            }
        }
        iterations += 1;
        let mut sum = vec![0.0f64; k * m];
        let mut n = vec![0usize; k];
        for (p, &c) in assign.iter().enumerate() {
            let c = c as usize;
            n[c] += 1;
            for (i, v) in pt(p).iter().enumerate() {
                sum[c * m + i] += v;
            }
        }
        for c in 0..k {
            if n[c] > 0 {
                for i in 0..m {
                    cent[c * m + i] = sum[c * m + i] / n[c] as f64;
                }
            }
        }
        if !changed || iterations >= MAX_ITERATIONS {
            break;
        }
    }
    // Renumber the non-empty clusters by their lowest PE.
    let mut renum = vec![u32::MAX; k];
    let mut order = Vec::new();
    for &c in &assign {
        if renum[c as usize] == u32::MAX {
            renum[c as usize] = order.len() as u32;
            order.push(c as usize);
        }
    }
    let assignment: Vec<u32> = assign.iter().map(|&c| renum[c as usize]).collect();
    let distance_ps: Vec<f64> = (0..pes)
        .map(|p| {
            let c = assign[p] as usize;
            dist2(pt(p), &cent[c * m..(c + 1) * m]).sqrt()
        })
        .collect();
    let nc = order.len();
    let mut members: Vec<Vec<u32>> = vec![Vec::new(); nc];
    for (p, &c) in assignment.iter().enumerate() {
        members[c as usize].push(p as u32);
    }
    let extra = representatives.saturating_sub(nc);
    let clusters = order
        .iter()
        .zip(&members)
        .map(|(&c, mem)| {
            let by_dist = |a: &u32, b: &u32| {
                distance_ps[*a as usize]
                    .total_cmp(&distance_ps[*b as usize])
                    .then(a.cmp(b))
            };
            let exemplar = *mem.iter().min_by(|a, b| by_dist(a, b)).expect("non-empty");
            let share = ((extra * mem.len()) as f64 / pes as f64).round() as usize;
            // A PE on the centroid is no outlier, however many are asked for.
            let mut far: Vec<u32> = mem
                .iter()
                .copied()
                .filter(|&p| p != exemplar && distance_ps[p as usize] > 0.0)
                .collect();
            far.sort_by(|a, b| {
                distance_ps[*b as usize]
                    .total_cmp(&distance_ps[*a as usize])
                    .then(a.cmp(b))
            });
            far.truncate(share);
            Cluster {
                size: mem.len() as u32,
                exemplar,
                outliers: far,
                centroid_ps: cent[c * m..(c + 1) * m].to_vec(),
                spread_ps: mem.iter().map(|&p| distance_ps[p as usize]).sum::<f64>()
                    / mem.len() as f64,
            }
        })
        .collect();
    Ok(Clustering {
        features: features.iter().map(|&e| e as u32).collect(),
        assignment,
        distance_ps,
        clusters,
        iterations,
    })
}

/// [`kmeans`] on the replay's per-PE busy time per entry method.
pub fn cluster_pes(
    trace: &trace::Trace,
    report: &replay::ReplayReport,
    k: usize,
    representatives: usize,
) -> Result<Clustering, AnalysisError> {
    let tl = report.timeline.as_ref().ok_or(AnalysisError::NoTimeline)?;
    let feed = crate::feed::Feed::of_timeline(trace, tl)?;
    let mut acc = UsageAcc::new(report.pes, trace.entries.len())?;
    crate::feed::feed_all(&feed, tl, &mut acc);
    acc.finish(k, representatives)
}

/// [`cluster_pes`] one run at a time: the PE x entry busy table.
#[derive(Debug)]
pub(crate) struct UsageAcc {
    pes: usize,
    entries: usize,
    usage: Vec<u64>,
}

impl UsageAcc {
    pub(crate) fn new(pes: u32, entries: usize) -> Result<UsageAcc, AnalysisError> {
        let (pes, entries) = (pes as usize, entries.max(1));
        if pes.saturating_mul(entries) > MAX_FEATURE_CELLS {
            return Err(AnalysisError::Options(format!(
                "k-means: {pes} PEs x {entries} entry methods is over {MAX_FEATURE_CELLS} values"
            )));
        }
        Ok(UsageAcc {
            pes,
            entries,
            usage: vec![0u64; pes * entries],
        })
    }
    pub(crate) fn finish(
        &self,
        k: usize,
        representatives: usize,
    ) -> Result<Clustering, AnalysisError> {
        kmeans(&self.usage, self.pes, self.entries, k, representatives)
    }
}

impl crate::feed::Acc for UsageAcc {
    fn block(&mut self, r: &replay::TimelineRecord, entry: u32) {
        let e = (entry as usize).min(self.entries - 1);
        if let Some(u) = self.usage.get_mut(r.pe as usize * self.entries + e) {
            *u += r.end.as_ps() - r.start.as_ps();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_behaviours_make_two_clusters_with_central_exemplars() {
        // 10 PEs: PEs 0..3 run entry 0 for ~100, PEs 3..10 run entry 1 for ~50.
        let mut u = vec![0u64; 10 * 2];
        for p in 0..10 {
            if p < 3 {
                u[p * 2] = 100 + p as u64; // 100, 101, 102
            } else {
                u[p * 2 + 1] = 40 + 2 * (p as u64 - 3); // 40, 42, ..., 52
            }
        }
        let c = kmeans(&u, 10, 2, 2, 4).unwrap();
        assert_eq!(c.clusters.len(), 2);
        assert_eq!(c.assignment, [0, 0, 0, 1, 1, 1, 1, 1, 1, 1]);
        assert_eq!(c.clusters[0].exemplar, 1, "101 is the mean of 100..=102");
        assert_eq!(c.clusters[1].exemplar, 6, "46 is the mean of 40..=52");
        assert_eq!(c.clusters[1].size, 7);
        // Two outliers shared 3:7 -> round(0.6) = 1 and round(1.4) = 1, the farthest ones.
        assert_eq!(c.clusters[0].outliers, [0]);
        assert_eq!(c.clusters[1].outliers, [3]);
        assert_eq!(c.representatives(), [0, 1, 3, 6]);
    }

    #[test]
    fn identical_pes_make_one_cluster_and_bad_sizes_are_errors() {
        let u = vec![7u64; 5 * 3];
        let c = kmeans(&u, 5, 3, 15, 15).unwrap();
        assert_eq!(c.clusters.len(), 1);
        assert_eq!(c.clusters[0].exemplar, 0);
        assert!(kmeans(&u, 4, 3, 2, 2).is_err());
        assert!(kmeans(&u, 5, 3, 0, 2).is_err());
    }
}
