//! Exact parsing of the units users type: durations, sizes, bandwidths and ratios.
//!
//! | kind | accepted suffixes | example |
//! |---|---|---|
//! | duration | `ps`, `ns`, `us` (or `µs`), `ms`, `s` | `1.5us`, `250ns`, `0` |
//! | size | `B`, `KB`, `MB`, `GB` (10^3), `KiB`, `MiB`, `GiB` (2^10) | `64KiB`, `1500`, `1.5MB` |
//! | bandwidth | a size per second: `B/s`, `KB/s`, `MB/s`, `GB/s`, `KiB/s`, `MiB/s`, `GiB/s` | `10GB/s` |
//! | ratio | a decimal or a fraction | `0.5`, `2`, `1/3` |
//!
//! A bare number is picoseconds for a duration only if it is `0`; otherwise a unit is required
//! (a bare `5` is ambiguous). A bare number is bytes for a size. Decimals are exact: a value
//! that does not land on a whole picosecond (or byte) is rejected rather than rounded.

use crate::time::{PS_PER_MS, PS_PER_NS, PS_PER_S, PS_PER_US, SimDuration};
use std::fmt;

/// An error in a user-supplied quantity; says what was given and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind} `{input}`: {reason}")]
pub struct UnitError {
    /// What kind of quantity was being parsed ("duration", "size", ...).
    pub kind: &'static str,
    /// The text as given.
    pub input: String,
    /// What was wrong and what is accepted.
    pub reason: String,
}

fn err(kind: &'static str, input: &str, reason: impl Into<String>) -> UnitError {
    UnitError {
        kind,
        input: input.to_string(),
        reason: reason.into(),
    }
}

/// Splits `"1.5us"` into `("1.5", "us")`.
/// Refuses a leading sign: every quantity here is non-negative.
fn unsigned<'a>(kind: &'static str, input: &str, s: &'a str) -> Result<&'a str, UnitError> {
    if s.starts_with('-') {
        return Err(err(kind, input, "must not be negative"));
    }
    Ok(s.strip_prefix('+').unwrap_or(s))
}

fn split_number(s: &str) -> (&str, &str) {
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    (&s[..end], s[end..].trim())
}

/// Parses a non-negative decimal `num` and multiplies it by `mult`, requiring an exact integer.
fn scaled_decimal(
    kind: &'static str,
    input: &str,
    num: &str,
    mult: u128,
) -> Result<u128, UnitError> {
    if num.is_empty() {
        return Err(err(kind, input, "expected a number first"));
    }
    let (int_part, frac_part) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num, ""),
    };
    if frac_part.contains('.') || (int_part.is_empty() && frac_part.is_empty()) {
        return Err(err(kind, input, "malformed number"));
    }
    if frac_part.len() > 30 || int_part.len() > 30 {
        return Err(err(kind, input, "too many digits"));
    }
    let int: u128 = if int_part.is_empty() {
        0
    } else {
        int_part
            .parse()
            .map_err(|_| err(kind, input, "malformed number"))?
    };
    let mut value = int
        .checked_mul(mult)
        .ok_or_else(|| err(kind, input, "value too large"))?;
    if !frac_part.is_empty() {
        let frac: u128 = frac_part
            .parse()
            .map_err(|_| err(kind, input, "malformed number"))?;
        let denom = 10u128.pow(frac_part.len() as u32);
        let scaled = frac
            .checked_mul(mult)
            .ok_or_else(|| err(kind, input, "value too large"))?;
        if scaled % denom != 0 {
            return Err(err(
                kind,
                input,
                "more precision than the smallest unit (1 ps for durations, 1 byte for sizes)",
            ));
        }
        value += scaled / denom;
    }
    Ok(value)
}

fn to_u64(kind: &'static str, input: &str, v: u128) -> Result<u64, UnitError> {
    u64::try_from(v).map_err(|_| err(kind, input, "value too large for 64 bits"))
}

/// Parses a duration such as `5us`, `1.5ns`, `250ps`, `2ms`, `1s` or `0`.
pub fn parse_duration(input: &str) -> Result<SimDuration, UnitError> {
    const KIND: &str = "duration";
    let s = unsigned(KIND, input, input.trim())?;
    let (num, unit) = split_number(s);
    if num.is_empty() {
        return Err(err(
            KIND,
            input,
            "expected a number and a unit, e.g. `5us` (units: ps, ns, us, ms, s)",
        ));
    }
    let mult: u64 = match unit {
        "ps" => 1,
        "ns" => PS_PER_NS,
        "us" | "µs" => PS_PER_US,
        "ms" => PS_PER_MS,
        "s" => PS_PER_S,
        "" if num.chars().all(|c| c == '0' || c == '.') && !num.is_empty() => 1,
        "" => {
            return Err(err(
                KIND,
                input,
                "a unit is required: one of ps, ns, us, ms, s (e.g. `5us`)",
            ));
        }
        other => {
            return Err(err(
                KIND,
                input,
                format!("unknown unit `{other}`; expected one of ps, ns, us, ms, s"),
            ));
        }
    };
    let v = scaled_decimal(KIND, input, num, mult as u128)?;
    Ok(SimDuration::from_ps(to_u64(KIND, input, v)?))
}

fn size_multiplier(unit: &str) -> Option<u64> {
    Some(match unit {
        "" | "B" => 1,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "TiB" => 1 << 40,
        _ => return None,
    })
}

/// Parses a size in bytes such as `65536`, `64KiB`, `1.5MB`.
pub fn parse_bytes(input: &str) -> Result<u64, UnitError> {
    const KIND: &str = "size";
    let s = unsigned(KIND, input, input.trim())?;
    let (num, unit) = split_number(s);
    let mult = size_multiplier(unit).ok_or_else(|| {
        err(
            KIND,
            input,
            format!("unknown unit `{unit}`; expected B, KB, MB, GB, KiB, MiB or GiB"),
        )
    })?;
    let v = scaled_decimal(KIND, input, num, mult as u128)?;
    to_u64(KIND, input, v)
}

/// A link or NIC bandwidth in bytes per second (must be > 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Bandwidth {
    bytes_per_s: u64,
}

impl Bandwidth {
    /// A bandwidth of `bytes_per_s` bytes per second; `None` if zero.
    pub const fn from_bytes_per_s(bytes_per_s: u64) -> Option<Self> {
        if bytes_per_s == 0 {
            None
        } else {
            Some(Bandwidth { bytes_per_s })
        }
    }
    /// Bytes per second.
    pub const fn bytes_per_s(self) -> u64 {
        self.bytes_per_s
    }
    /// Time to push `bytes` through this bandwidth: `ceil(bytes * 1e12 / bytes_per_s)` ps.
    /// Exact whenever the bandwidth divides 10^12 (e.g. 10 GB/s = 100 ps per byte).
    pub fn transfer_time(self, bytes: u64) -> SimDuration {
        let num = bytes as u128 * PS_PER_S as u128;
        let ps = num.div_ceil(self.bytes_per_s as u128);
        SimDuration::from_ps(u64::try_from(ps).unwrap_or(u64::MAX))
    }
    /// Parses `10GB/s`, `100MiB/s`, `1e9`-style is not accepted; a bare number is bytes/s.
    pub fn parse(input: &str) -> Result<Self, UnitError> {
        const KIND: &str = "bandwidth";
        let s = input.trim();
        let size = s.strip_suffix("/s").unwrap_or(s);
        let bytes = parse_bytes(size).map_err(|e| {
            err(
                KIND,
                input,
                format!("{}; expected a size per second such as `10GB/s`", e.reason),
            )
        })?;
        Bandwidth::from_bytes_per_s(bytes).ok_or_else(|| err(KIND, input, "must be greater than 0"))
    }
}

impl fmt::Display for Bandwidth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.bytes_per_s;
        for (unit, m) in [
            ("TB", 1_000_000_000_000u64),
            ("TiB", 1 << 40),
            ("GB", 1_000_000_000),
            ("GiB", 1 << 30),
            ("MB", 1_000_000),
            ("MiB", 1 << 20),
            ("KB", 1_000),
            ("KiB", 1 << 10),
        ] {
            if b % m == 0 {
                return write!(f, "{}{unit}/s", b / m);
            }
        }
        write!(f, "{b}B/s")
    }
}

/// An exact non-negative ratio `num/den`, used for CPU-speed scaling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ratio {
    num: u64,
    den: u64,
}

impl Ratio {
    /// The identity ratio 1/1.
    pub const ONE: Ratio = Ratio { num: 1, den: 1 };

    /// `num/den`, reduced; `None` if `den == 0`.
    pub fn new(num: u64, den: u64) -> Option<Self> {
        if den == 0 {
            return None;
        }
        let g = gcd(num, den).max(1);
        Some(Ratio {
            num: num / g,
            den: den / g,
        })
    }
    /// Numerator.
    pub const fn num(self) -> u64 {
        self.num
    }
    /// Denominator.
    pub const fn den(self) -> u64 {
        self.den
    }
    /// True for 1/1.
    pub const fn is_one(self) -> bool {
        self.num == self.den
    }
    /// `d * num / den`, rounded down to a whole picosecond (saturating).
    pub fn scale(self, d: SimDuration) -> SimDuration {
        if self.is_one() {
            return d;
        }
        let v = d.as_ps() as u128 * self.num as u128 / self.den as u128;
        SimDuration::from_ps(u64::try_from(v).unwrap_or(u64::MAX))
    }
    /// Parses `0.5`, `2`, `1/3`.
    pub fn parse(input: &str) -> Result<Self, UnitError> {
        const KIND: &str = "ratio";
        let s = unsigned(KIND, input, input.trim())?;
        if let Some((n, d)) = s.split_once('/') {
            let n: u64 = n
                .trim()
                .parse()
                .map_err(|_| err(KIND, input, "expected an integer numerator"))?;
            let d: u64 = d
                .trim()
                .parse()
                .map_err(|_| err(KIND, input, "expected an integer denominator"))?;
            return Ratio::new(n, d).ok_or_else(|| err(KIND, input, "denominator is zero"));
        }
        let (num, rest) = split_number(s);
        if !rest.is_empty() {
            return Err(err(
                KIND,
                input,
                "expected a decimal (`0.5`) or a fraction (`1/2`)",
            ));
        }
        let digits = num.split_once('.').map_or(0, |(_, f)| f.len()) as u32;
        if digits > 18 {
            return Err(err(KIND, input, "too many decimal digits"));
        }
        let den = 10u64.pow(digits);
        let n = scaled_decimal(KIND, input, num, den as u128)?;
        Ratio::new(to_u64(KIND, input, n)?, den).ok_or_else(|| err(KIND, input, "malformed"))
    }
}

impl fmt::Display for Ratio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.den == 1 {
            write!(f, "{}", self.num)
        } else {
            write!(f, "{}/{}", self.num, self.den)
        }
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Bytes as people read them: `1.5 GiB`, `640 MiB`, `12 KiB`, `100 B`.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else if v < 10.0 {
        format!("{v:.1} {}", UNITS[u])
    } else {
        format!("{v:.0} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5us").unwrap().as_ps(), 5_000_000);
        assert_eq!(parse_duration("1.5ns").unwrap().as_ps(), 1_500);
        assert_eq!(parse_duration(" 250ps ").unwrap().as_ps(), 250);
        assert_eq!(parse_duration("0").unwrap().as_ps(), 0);
        assert_eq!(parse_duration("2ms").unwrap().as_ps(), 2_000_000_000);
        assert_eq!(parse_duration(".5s").unwrap().as_ps(), 500_000_000_000);
        assert!(
            parse_duration("5")
                .unwrap_err()
                .reason
                .contains("unit is required")
        );
        assert!(
            parse_duration("5 parsecs")
                .unwrap_err()
                .reason
                .contains("unknown unit")
        );
        assert!(
            parse_duration("0.0001ps")
                .unwrap_err()
                .reason
                .contains("precision")
        );
        assert!(parse_duration("1.2.3us").is_err());
        assert!(parse_duration("").is_err());
        assert!(parse_duration("us").is_err());
        assert!(parse_duration("99999999999999s").is_err());
    }

    #[test]
    fn sizes_and_bandwidths() {
        assert_eq!(parse_bytes("65536").unwrap(), 65536);
        assert_eq!(parse_bytes("64KiB").unwrap(), 65536);
        assert_eq!(parse_bytes("1.5MB").unwrap(), 1_500_000);
        assert!(parse_bytes("1.5B").is_err());
        assert!(parse_bytes("3 furlongs").is_err());
        let bw = Bandwidth::parse("10GB/s").unwrap();
        assert_eq!(bw.bytes_per_s(), 10_000_000_000);
        assert_eq!(bw.transfer_time(65536).as_ps(), 6_553_600);
        assert_eq!(bw.to_string(), "10GB/s");
        // 3 B/s: one byte takes 333.33.. ms, rounded up to the picosecond.
        let slow = Bandwidth::parse("3").unwrap();
        assert_eq!(slow.transfer_time(1).as_ps(), 333_333_333_334);
        assert!(Bandwidth::parse("0GB/s").is_err());
        assert!(Bandwidth::parse("fast").is_err());
    }

    #[test]
    fn ratios() {
        let half = Ratio::parse("0.5").unwrap();
        assert_eq!((half.num(), half.den()), (1, 2));
        assert_eq!(half.scale(SimDuration::from_ps(101)).as_ps(), 50);
        assert_eq!(Ratio::parse("1/3").unwrap().to_string(), "1/3");
        assert!(
            Ratio::parse("2")
                .unwrap()
                .scale(SimDuration::from_ps(7))
                .as_ps()
                == 14
        );
        assert!(Ratio::parse("1/0").is_err());
        assert!(Ratio::parse("abc").is_err());
        assert!(Ratio::ONE.is_one());
    }
}
