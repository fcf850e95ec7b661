//! Scalability outputs from a table of predictions (MK §5.5): relative speedup and
//! efficiency over a PE-count axis, the optimal value of a grain axis (argmin of the time),
//! and constant-time curves (the problem size each P can run in a given time).

use serde::Serialize;

/// Speedup and efficiency at one PE count.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SpeedupRow {
    /// PEs.
    pub pes: f64,
    /// Time.
    pub time: f64,
    /// `P0 T(P0) / T(P)`: speedup relative to the smallest P measured, scaled so that it is
    /// P0 there (it is `T(1)/T(P)` when P0 = 1 and the smallest run was perfectly efficient).
    pub speedup: f64,
    /// `speedup / P`.
    pub efficiency: f64,
}

/// The points with both coordinates positive, by the first.
fn positive_sorted(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut p: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(n, t)| *n > 0.0 && *t > 0.0)
        .collect();
    p.sort_by(|a, b| a.0.total_cmp(&b.0));
    p
}

/// Speedup and efficiency of `(pes, time)` points (any order; sorted by PEs in the result).
pub fn speedup(points: &[(f64, f64)]) -> Vec<SpeedupRow> {
    let p = positive_sorted(points);
    let Some(&(p0, t0)) = p.first() else {
        return Vec::new();
    };
    p.iter()
        .map(|&(n, t)| {
            let s = p0 * t0 / t;
            SpeedupRow {
                pes: n,
                time: t,
                speedup: s,
                efficiency: s / n,
            }
        })
        .collect()
}

/// The entry with the smallest time (the first on ties): `(value, time)`.
pub fn argmin<T: Clone>(values: &[(T, f64)]) -> Option<(T, f64)> {
    values
        .iter()
        .filter(|(_, t)| t.is_finite())
        .fold(None, |best: Option<&(T, f64)>, v| match best {
            Some(b) if b.1 <= v.1 => Some(b),
            _ => Some(v),
        })
        .cloned()
}

/// The problem size at which `(size, time)` points reach `target` time, interpolated
/// linearly in log-log between the two points around it (`None` when no two neighbouring
/// points bracket it).
pub fn size_for_time(points: &[(f64, f64)], target: f64) -> Option<f64> {
    positive_sorted(points).windows(2).find_map(|w| {
        let ((n0, t0), (n1, t1)) = (w[0], w[1]);
        let (lo, hi) = (t0.min(t1), t0.max(t1));
        if target < lo || target > hi {
            return None;
        }
        if t1 == t0 {
            return Some(n0);
        }
        let f = (target.ln() - t0.ln()) / (t1.ln() - t0.ln());
        Some((n0.ln() + f * (n1.ln() - n0.ln())).exp())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speedup_efficiency_argmin_and_constant_time() {
        // T = 100/P + 1: relative to P = 2 (T = 51).
        let pts: Vec<(f64, f64)> = [8.0, 2.0, 4.0]
            .iter()
            .map(|&p| (p, 100.0 / p + 1.0))
            .collect();
        let s = speedup(&pts);
        assert_eq!(s[0].pes, 2.0);
        assert_eq!(s[0].speedup, 2.0);
        assert!((s[2].speedup - 2.0 * 51.0 / 13.5).abs() < 1e-12);
        assert!((s[2].efficiency - s[2].speedup / 8.0).abs() < 1e-12);
        assert_eq!(
            argmin(&[(1, 5.0), (4, 3.0), (8, 3.0), (16, 4.0)]),
            Some((4, 3.0))
        );
        // T = N^2: the size that takes 100 is 10, between 8 (64) and 16 (256).
        let q = [(8.0, 64.0), (16.0, 256.0), (32.0, 1024.0)];
        assert!((size_for_time(&q, 100.0).unwrap() - 10.0).abs() < 1e-9);
        assert_eq!(size_for_time(&q, 5000.0), None);
    }
}
