//! Integer simulated time in picoseconds.

use std::fmt;

/// Picoseconds per nanosecond.
pub const PS_PER_NS: u64 = 1_000;
/// Picoseconds per microsecond.
pub const PS_PER_US: u64 = 1_000_000;
/// Picoseconds per millisecond.
pub const PS_PER_MS: u64 = 1_000_000_000;
/// Picoseconds per second.
pub const PS_PER_S: u64 = 1_000_000_000_000;

/// An instant of simulated time: picoseconds since the start of the simulation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(u64);

/// A span of simulated time in picoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimDuration(u64);

impl SimTime {
    /// The start of every simulation.
    pub const ZERO: SimTime = SimTime(0);
    /// The largest representable instant.
    pub const MAX: SimTime = SimTime(u64::MAX);

    /// An instant `ps` picoseconds after the start.
    pub const fn from_ps(ps: u64) -> Self {
        SimTime(ps)
    }
    /// Picoseconds since the start.
    pub const fn as_ps(self) -> u64 {
        self.0
    }
    /// Seconds since the start, for reporting only (never fed back into the simulation).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / PS_PER_S as f64
    }
    /// `self + d`, or `None` on overflow.
    pub const fn checked_add(self, d: SimDuration) -> Option<SimTime> {
        match self.0.checked_add(d.0) {
            Some(v) => Some(SimTime(v)),
            None => None,
        }
    }
    /// `self + d`, saturating at [`SimTime::MAX`].
    pub const fn saturating_add(self, d: SimDuration) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }
    /// The span from `earlier` to `self`, or zero if `earlier` is later.
    pub const fn saturating_since(self, earlier: SimTime) -> SimDuration {
        SimDuration(self.0.saturating_sub(earlier.0))
    }
}

impl SimDuration {
    /// No time at all.
    pub const ZERO: SimDuration = SimDuration(0);
    /// The largest representable span.
    pub const MAX: SimDuration = SimDuration(u64::MAX);

    /// A span of `ps` picoseconds.
    pub const fn from_ps(ps: u64) -> Self {
        SimDuration(ps)
    }
    /// A span of `ns` nanoseconds (saturating).
    pub const fn from_ns(ns: u64) -> Self {
        SimDuration(ns.saturating_mul(PS_PER_NS))
    }
    /// A span of `us` microseconds (saturating).
    pub const fn from_us(us: u64) -> Self {
        SimDuration(us.saturating_mul(PS_PER_US))
    }
    /// A span of `ms` milliseconds (saturating).
    pub const fn from_ms(ms: u64) -> Self {
        SimDuration(ms.saturating_mul(PS_PER_MS))
    }
    /// Picoseconds in this span.
    pub const fn as_ps(self) -> u64 {
        self.0
    }
    /// Seconds, for reporting only.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / PS_PER_S as f64
    }
    /// Seconds as exact decimal text with 12 decimals (`0.000001500000`): for CSV and JSON
    /// outputs that must be byte-stable and lose nothing.
    pub fn secs_exact(self) -> String {
        format!("{}.{:012}", self.0 / PS_PER_S, self.0 % PS_PER_S)
    }
    /// `self + other`, or `None` on overflow.
    pub const fn checked_add(self, other: SimDuration) -> Option<SimDuration> {
        match self.0.checked_add(other.0) {
            Some(v) => Some(SimDuration(v)),
            None => None,
        }
    }
    /// `self + other`, saturating at [`SimDuration::MAX`].
    pub const fn saturating_add(self, other: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_add(other.0))
    }
    /// `self * n`, saturating at [`SimDuration::MAX`].
    pub const fn saturating_mul(self, n: u64) -> SimDuration {
        SimDuration(self.0.saturating_mul(n))
    }
}

/// Formats picoseconds with the largest unit that keeps the value >= 1, e.g. `12.5 us`.
/// Exact: trailing zeros are dropped, no rounding.
fn fmt_ps(ps: u64, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let (unit, per) = if ps >= PS_PER_S {
        ("s", PS_PER_S)
    } else if ps >= PS_PER_MS {
        ("ms", PS_PER_MS)
    } else if ps >= PS_PER_US {
        ("us", PS_PER_US)
    } else if ps >= PS_PER_NS {
        ("ns", PS_PER_NS)
    } else {
        ("ps", 1)
    };
    let int = ps / per;
    let frac = ps % per;
    if frac == 0 {
        return write!(f, "{int} {unit}");
    }
    let width = per.ilog10() as usize;
    let digits = format!("{frac:0width$}");
    write!(f, "{int}.{} {unit}", digits.trim_end_matches('0'))
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_ps(self.0, f)
    }
}

impl fmt::Display for SimDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_ps(self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_exact_and_picks_unit() {
        assert_eq!(SimDuration::from_ps(0).to_string(), "0 ps");
        assert_eq!(SimDuration::from_ps(999).to_string(), "999 ps");
        assert_eq!(SimDuration::from_ps(1_500).to_string(), "1.5 ns");
        assert_eq!(SimDuration::from_us(12).to_string(), "12 us");
        assert_eq!(
            SimTime::from_ps(1_234_567_000_001).to_string(),
            "1.234567000001 s"
        );
    }

    #[test]
    fn exact_seconds_text() {
        assert_eq!(
            SimDuration::from_ps(1_500_000).secs_exact(),
            "0.000001500000"
        );
        assert_eq!(
            SimDuration::from_ps(12_000_000_000_001).secs_exact(),
            "12.000000000001"
        );
    }

    #[test]
    fn checked_arithmetic() {
        assert_eq!(SimTime::MAX.checked_add(SimDuration::from_ps(1)), None);
        assert_eq!(
            SimTime::from_ps(5).checked_add(SimDuration::from_ps(7)),
            Some(SimTime::from_ps(12))
        );
        assert_eq!(
            SimTime::from_ps(3).saturating_since(SimTime::from_ps(5)),
            SimDuration::ZERO
        );
    }
}
