//! OS noise on the simulated CPUs: periodic detours, noise traces and per-block jitter.
//!
//! * **Detours** (`detour:every=E,lose=Y[,phase=aligned|random]`): each PE loses the CPU for
//!   `Y` out of every `E`, in windows `[phi_p + k*E, phi_p + k*E + Y)`. A block's CPU work
//!   (receive overhead, duration, send overheads) runs only outside them, so it ends later, and
//!   each send leaves when the work before it is done. `phase=aligned`: `phi_p = 0` on every
//!   PE (co-scheduled noise); `phase=random` (the default): `phi_p` uniform in `[0, E)`, a
//!   function of the seed and the PE. Zero work takes no time, even inside a window.
//! * **Noise traces** (`trace:file=PATH[,phase=aligned|random]`): the windows come from a
//!   file in LogGOPSim's `--noise-trace` format, one `<start>\t<duration>` line per detour,
//!   both in nanoseconds (decimals allowed), `#` comment lines. As in LogGOPSim, the trace
//!   repeats with a period equal to the start of its last detour, which so stands for time 0
//!   of the next round (`0 10000` + `100000 10000` is `detour:every=100us,lose=10us`);
//!   detours reaching past the period wrap around, overlapping ones merge. PE `p`'s windows
//!   are the trace's shifted by `phi_p` (0 when aligned, uniform in `[0, period)` when
//!   random), as for detours. Work runs only outside the windows: unlike LogGOPSim, which
//!   adds the detours that start during an operation once, a detour that starts while the
//!   CPU is already away also counts.
//! * **Uniform jitter** (`jitter:max=J`): every block that does work (duration > 0) takes an
//!   extra `U[0, J]` of CPU before it (whole picoseconds).
//! * **Log-normal jitter** (`jitter:cv=C`): every working block's duration, and the offsets
//!   of its sends, are multiplied by a log-normal factor of mean 1 and coefficient of
//!   variation `C` (`sigma^2 = ln(1 + C^2)`, `mu = -sigma^2/2`), rounded to picoseconds.
//!   `max` and `cv` may be given together: the factor applies to the block, the extra
//!   time comes before it.
//!
//! The `n`-th working block of PE `p` draws from `mix64(seed ^ mix64(p << 32 ^ n))` (and a
//! second stream for the log-normal factor). Draws depend only on the seed, the PE and the
//! order of the PE's blocks, never on threads or other PEs. The seed is
//! `derive_seed(root seed, "noise")`. A PE's busy time includes the time its blocks lose to
//! detours.

use sim_core::SimDuration;
use sim_core::rng::mix64;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// Largest number of detours read from a noise trace.
pub const MAX_TRACE_DETOURS: usize = 10_000_000;

/// Periodic detours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Detour {
    /// Period.
    pub every: SimDuration,
    /// CPU time lost per period (`< every`).
    pub lose: SimDuration,
    /// Per-PE random phase (`false`: every PE's windows start at 0).
    pub random_phase: bool,
}

/// One merged window of a noise trace, `[start_ps, end_ps)` within the period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Window {
    start_ps: u64,
    end_ps: u64,
    /// Total length of the windows before this one.
    covered_before_ps: u64,
}

/// Detours read from a noise-trace file (LogGOPSim's `--noise-trace` format).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoiseTrace {
    /// The file, as given.
    pub path: String,
    /// Per-PE random offset into the trace (`false`: every PE reads it from 0).
    pub random_phase: bool,
    /// The trace repeats with this period: the start of its last detour.
    pub period_ps: u64,
    windows: Arc<[Window]>,
}

impl NoiseTrace {
    /// Parses a noise trace's text; `path` names it in errors.
    pub fn parse(path: &str, text: &str, random_phase: bool) -> Result<NoiseTrace, String> {
        let mut raw: Vec<(u64, u64)> = Vec::new();
        let ns = |v: &str, what: &str, line: usize| -> Result<u64, String> {
            let x: f64 = v.parse().map_err(|_| {
                format!("{path}:{line}: {what} `{v}` is not a number of nanoseconds")
            })?;
            // 1e6 s is far beyond any run; the bound keeps start + duration within u64 ps.
            if !(0.0..=1e15).contains(&x) {
                return Err(format!(
                    "{path}:{line}: {what} {v} ns is out of range (expected 0 to 1e15 ns)"
                ));
            }
            Ok((x * 1000.0).round() as u64)
        };
        for (i, l) in text.lines().enumerate() {
            let l = l.trim();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            let mut f = l.split_whitespace();
            let (Some(s), Some(d), None) = (f.next(), f.next(), f.next()) else {
                return Err(format!(
                    "{path}:{}: expected `<start-ns>\\t<duration-ns>`, found `{l}`",
                    i + 1
                ));
            };
            if raw.len() == MAX_TRACE_DETOURS {
                return Err(format!(
                    "{path}:{}: more than {MAX_TRACE_DETOURS} detours",
                    i + 1
                ));
            }
            let start = ns(s, "start", i + 1)?;
            let dur = ns(d, "duration", i + 1)?;
            raw.push((start, start + dur));
        }
        let period_ps = raw.iter().map(|r| r.0).max().unwrap_or(0);
        if period_ps == 0 {
            return Err(format!(
                "{path}: a noise trace needs detours at two start times at least: it repeats with the start of its last detour as period (lines are `<start-ns>\\t<duration-ns>`)"
            ));
        }
        // Fold into one period: the last detour's start is the next round's 0.
        let mut folded = Vec::with_capacity(raw.len() + 1);
        for (s, e) in raw {
            if e == s {
                continue;
            }
            let s0 = s % period_ps;
            let e0 = s0 + (e - s);
            if e0 <= period_ps {
                folded.push((s0, e0));
            } else {
                folded.push((s0, period_ps));
                folded.push((0, (e0 - period_ps).min(period_ps)));
            }
        }
        let mut raw = folded;
        raw.sort_unstable();
        let mut windows: Vec<Window> = Vec::with_capacity(raw.len());
        let mut covered = 0u64;
        for (s, e) in raw {
            match windows.last_mut() {
                Some(w) if s <= w.end_ps => {
                    if e > w.end_ps {
                        covered += e - w.end_ps;
                        w.end_ps = e;
                    }
                }
                _ => {
                    windows.push(Window {
                        start_ps: s,
                        end_ps: e,
                        covered_before_ps: covered,
                    });
                    covered += e - s;
                }
            }
        }
        if covered >= period_ps {
            return Err(format!(
                "{path}: the detours cover the whole trace ({} ns); a CPU that is always away never finishes",
                period_ps as f64 / 1000.0
            ));
        }
        Ok(NoiseTrace {
            path: path.to_string(),
            random_phase,
            period_ps,
            windows: windows.into(),
        })
    }

    /// Reads a noise-trace file (at most 1 GiB).
    pub fn read(path: &str, random_phase: bool) -> Result<NoiseTrace, String> {
        const MAX_BYTES: u64 = 1 << 30;
        use sim_core::inputs::ReadError;
        let text = sim_core::inputs::read_to_string(std::path::Path::new(path), MAX_BYTES)
            .map_err(|e| match e {
                ReadError::Io { source, .. } => format!("cannot read noise trace {path}: {source}"),
                ReadError::TooLarge { .. } => format!("noise trace {path} is larger than 1 GiB"),
                other => format!("noise trace: {other}"),
            })?;
        Self::parse(path, &text, random_phase)
    }

    /// CPU time free of detours in one period.
    fn free_per_period(&self) -> u64 {
        let covered = self
            .windows
            .last()
            .map_or(0, |w| w.covered_before_ps + (w.end_ps - w.start_ps));
        self.period_ps - covered
    }

    /// Free CPU time in `[0, x)` of a period (`x <= period`).
    fn free_before(&self, x: u64) -> u64 {
        let j = self.windows.partition_point(|w| w.start_ps < x);
        if j == 0 {
            return x;
        }
        let w = self.windows[j - 1];
        x - (w.covered_before_ps + (x.min(w.end_ps) - w.start_ps))
    }

    /// The earliest point of a period by which `f > 0` free time has passed.
    fn point_with_free(&self, f: u64) -> u64 {
        let j = self
            .windows
            .partition_point(|w| w.start_ps - w.covered_before_ps < f);
        let covered = if j == 0 {
            0
        } else {
            let w = self.windows[j - 1];
            w.covered_before_ps + (w.end_ps - w.start_ps)
        };
        f + covered
    }

    /// When `work > 0` of CPU started at trace time `x` is done, in trace time.
    fn finish_at(&self, x: u128, work: u64) -> u128 {
        let period = self.period_ps as u128;
        let r = (x % period) as u64;
        let base = x - r as u128;
        let free = self.free_per_period() as u128;
        let target = self.free_before(r) as u128 + work as u128;
        let (mut k, mut rem) = (target / free, target % free);
        if rem == 0 {
            k -= 1;
            rem = free;
        }
        base + k * period + self.point_with_free(rem as u64) as u128
    }
}

/// The noise of a replay (none by default).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Noise {
    /// Periodic detours.
    pub detour: Option<Detour>,
    /// Detours from a noise trace (not with `detour`).
    pub trace: Option<NoiseTrace>,
    /// Largest uniform per-block jitter (0: none).
    pub jitter_max: SimDuration,
    /// Coefficient of variation of the log-normal per-block factor, in millionths (0: none).
    pub jitter_cv_ppm: u64,
    /// Seed of the phases and draws.
    pub seed: u64,
}

/// Largest `jitter:cv` (a factor with CV 100 is already meaningless as a machine).
/// The largest `jitter:max` (one day).
const MAX_JITTER: SimDuration = SimDuration::from_ps(86_400 * 1_000_000_000_000);
const MAX_CV_PPM: u64 = 100_000_000;

impl Noise {
    /// Whether any noise is configured.
    pub fn is_active(&self) -> bool {
        self.detour.is_some() || self.trace.is_some() || self.has_jitter()
    }

    /// Whether blocks draw jitter.
    pub fn has_jitter(&self) -> bool {
        self.jitter_max > SimDuration::ZERO || self.jitter_cv_ppm > 0
    }

    /// Whether CPU work is stretched by detours (periodic or from a trace).
    pub fn has_detours(&self) -> bool {
        self.detour.is_some() || self.trace.is_some()
    }

    /// Adds one `detour:...`, `trace:...` or `jitter:...` spec to this noise (a trace file is
    /// read here).
    pub fn add(&mut self, spec: &str) -> Result<(), String> {
        let (kind, params) = spec.split_once(':').unwrap_or((spec, ""));
        let mut kv = Vec::new();
        for part in params.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("noise `{spec}`: `{part}` is not key=value"))?;
            kv.push((k.trim(), v.trim()));
        }
        let get = |k: &str| kv.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
        let dur = |k: &str| -> Result<Option<SimDuration>, String> {
            get(k)
                .map(|v| {
                    sim_core::units::parse_duration(v)
                        .map_err(|e| format!("noise `{spec}`: {k}: {e}"))
                })
                .transpose()
        };
        let kind = kind.trim();
        let allowed: &[&str] = match kind {
            "detour" => &["every", "lose", "phase"],
            "trace" => &["file", "phase"],
            "jitter" => &["max", "cv"],
            other => {
                return Err(format!(
                    "noise `{spec}`: unknown kind `{other}`; expected detour:every=D,lose=D[,phase=aligned|random], trace:file=PATH[,phase=aligned|random] or jitter:max=D|cv=X"
                ));
            }
        };
        if let Some((k, _)) = kv.iter().find(|(k, _)| !allowed.contains(k)) {
            return Err(format!(
                "noise `{spec}`: {kind} has no parameter `{k}`; it takes {}",
                allowed.join(", ")
            ));
        }
        if kind == "jitter" {
            let max = dur("max")?;
            let cv = get("cv")
                .map(|v| {
                    network_models::parse_ppm(v)
                        .ok()
                        .filter(|&c| c <= MAX_CV_PPM)
                        .ok_or_else(|| {
                            format!(
                                "noise `{spec}`: cv={v}; expected a coefficient of variation from 0 to 100, e.g. 0.1"
                            )
                        })
                })
                .transpose()?;
            if max.is_none() && cv.is_none() {
                return Err(format!(
                    "noise `{spec}`: jitter needs max=D (uniform extra CPU) or cv=X (log-normal factor)"
                ));
            }
            if let Some(m) = max {
                // One block's extra CPU beyond a day is a typo, not noise: it would overflow
                // simulated time (2^63 ps, 106 days) within a few blocks.
                if m > MAX_JITTER {
                    return Err(format!(
                        "noise `{spec}`: max={m} is more than a day of extra CPU per block; expected a jitter of at most 1 day (e.g. max=10us)"
                    ));
                }
                self.jitter_max = m;
            }
            if let Some(c) = cv {
                self.jitter_cv_ppm = c;
            }
            return Ok(());
        }
        let random_phase = match get("phase") {
            None | Some("random") => true,
            Some("aligned") => false,
            Some(other) => {
                return Err(format!(
                    "noise `{spec}`: phase={other}; expected aligned or random"
                ));
            }
        };
        if kind == "trace" {
            if self.detour.is_some() {
                return Err(format!(
                    "noise `{spec}`: a noise trace cannot be combined with detour:..."
                ));
            }
            let file =
                get("file").ok_or_else(|| format!("noise `{spec}`: trace needs file=PATH"))?;
            self.trace = Some(NoiseTrace::read(file, random_phase)?);
            return Ok(());
        }
        if self.trace.is_some() {
            return Err(format!(
                "noise `{spec}`: detours cannot be combined with trace:..."
            ));
        }
        let every = dur("every")?.ok_or_else(|| format!("noise `{spec}`: detour needs every=D"))?;
        let lose = dur("lose")?.ok_or_else(|| format!("noise `{spec}`: detour needs lose=D"))?;
        if lose >= every || every == SimDuration::ZERO {
            return Err(format!(
                "noise `{spec}`: lose must be shorter than every (a CPU that is always away never finishes)"
            ));
        }
        self.detour = Some(Detour {
            every,
            lose,
            random_phase,
        });
        Ok(())
    }

    /// The start of PE `pe`'s first detour window, in `[0, every)`; for a noise trace, the
    /// offset at which PE `pe` reads it, in `[0, period)`.
    pub fn phase(&self, pe: u32) -> u64 {
        let (random, period) = match (&self.detour, &self.trace) {
            (Some(d), _) => (d.random_phase, d.every.as_ps()),
            (None, Some(t)) => (t.random_phase, t.period_ps),
            _ => return 0,
        };
        if random {
            mix64(self.seed ^ mix64(0xd7 << 56 | pe as u64)) % period
        } else {
            0
        }
    }

    /// The extra CPU time of the `n`-th working block of PE `pe`.
    pub fn jitter(&self, pe: u32, n: u64) -> u64 {
        let m = self.jitter_max.as_ps();
        if m == 0 {
            return 0;
        }
        let h = mix64(self.seed ^ mix64((pe as u64) << 32 ^ n));
        // U[0, m]; for m = 2^64 - 1 every value is in range.
        m.checked_add(1).map_or(h, |span| h % span)
    }

    /// The log-normal factor of the `n`-th working block of PE `pe` (1 without `cv`).
    pub fn jitter_factor(&self, pe: u32, n: u64) -> f64 {
        if self.jitter_cv_ppm == 0 {
            return 1.0;
        }
        let cv = self.jitter_cv_ppm as f64 / 1e6;
        let sigma2 = (1.0 + cv * cv).ln();
        let key = mix64(self.seed ^ 0x6c6f_676e_6f72_6d00) ^ mix64((pe as u64) << 32 ^ n);
        // Two uniforms in (0, 1] and [0, 1), Box-Muller.
        let u1 = ((mix64(key) >> 11) + 1) as f64 / (1u64 << 53) as f64;
        let u2 = (mix64(key ^ 0x9e37_79b9_7f4a_7c15) >> 11) as f64 / (1u64 << 53) as f64;
        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        (sigma2.sqrt() * z - sigma2 / 2.0).exp()
    }

    /// When `work` picoseconds of CPU started at `t` on PE `pe` are done, detours skipped.
    pub fn finish(&self, pe: u32, t: u64, work: u64) -> u64 {
        if work == 0 {
            return t;
        }
        if let Some(tr) = &self.trace {
            // Trace time runs `period - phi` ahead, so PE windows start at `phi + k*period`.
            let ahead = (tr.period_ps - self.phase(pe)) as u128;
            let end = tr.finish_at(t as u128 + ahead, work) - ahead;
            return u64::try_from(end).unwrap_or(u64::MAX);
        }
        let Some(d) = self.detour else {
            return t.saturating_add(work);
        };
        let (e, y) = (d.every.as_ps(), d.lose.as_ps());
        let free = e - y;
        let phi = self.phase(pe);
        // Position in the period; a window starts at r = 0.
        let r = (t % e + e - phi) % e;
        let mut now = t;
        let mut r = r;
        if r < y {
            now = now.saturating_add(y - r);
            r = y;
        }
        let avail = e - r;
        if work <= avail {
            return now.saturating_add(work);
        }
        // The rest of this period, then whole free stretches of `free` each.
        let rest = work - avail;
        let start = now.saturating_add(avail).saturating_add(y);
        let (full, rem) = (rest / free, rest % free);
        if rem == 0 {
            start
                .saturating_add((full - 1).saturating_mul(e))
                .saturating_add(free)
        } else {
            start
                .saturating_add(full.saturating_mul(e))
                .saturating_add(rem)
        }
    }
}

impl fmt::Display for Noise {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(d) = self.detour {
            parts.push(format!(
                "detour:every={},lose={},phase={}",
                d.every,
                d.lose,
                if d.random_phase { "random" } else { "aligned" }
            ));
        }
        if let Some(t) = &self.trace {
            parts.push(format!(
                "trace:file={},phase={}",
                t.path,
                if t.random_phase { "random" } else { "aligned" }
            ));
        }
        let mut jitter = Vec::new();
        if self.jitter_max > SimDuration::ZERO {
            jitter.push(format!("max={}", self.jitter_max));
        }
        if self.jitter_cv_ppm > 0 {
            jitter.push(format!(
                "cv={}",
                network_models::fmt_ppm(self.jitter_cv_ppm)
            ));
        }
        if !jitter.is_empty() {
            parts.push(format!("jitter:{}", jitter.join(",")));
        }
        if parts.is_empty() {
            parts.push("none".into());
        }
        f.write_str(&parts.join(" "))
    }
}

impl FromStr for Noise {
    type Err = String;
    /// One spec (`detour:...`, `trace:...` or `jitter:...`) or several joined by `;`.
    fn from_str(s: &str) -> Result<Self, String> {
        let mut n = Noise::default();
        for part in s.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            if part != "none" {
                n.add(part)?;
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aligned(every_us: u64, lose_us: u64) -> Noise {
        Noise {
            detour: Some(Detour {
                every: SimDuration::from_us(every_us),
                lose: SimDuration::from_us(lose_us),
                random_phase: false,
            }),
            ..Noise::default()
        }
    }

    #[test]
    fn detours_stretch_work_by_the_closed_form() {
        let n = aligned(100, 10);
        let us = |x: u64| x * 1_000_000;
        // Start inside a window: wait until 10, 90 of work to 100, skip 100-110, 90 more to
        // 200, skip 200-210, the last 70 to 280.
        assert_eq!(n.finish(0, 0, us(250)), us(280));
        // Work that ends exactly where a window starts.
        assert_eq!(n.finish(0, us(10), us(90)), us(100));
        assert_eq!(n.finish(0, us(10), us(180)), us(200));
        // Started mid-period with room to spare.
        assert_eq!(n.finish(0, us(50), us(20)), us(70));
        // Zero work takes no time, even inside a window.
        assert_eq!(n.finish(0, us(5), 0), us(5));
        // Long work: the fraction lost tends to lose/every.
        let w = us(90_000);
        assert_eq!(n.finish(0, us(10), w), us(10) + us(100_000) - us(10));
        // No detour: plain addition.
        assert_eq!(Noise::default().finish(3, 7, 11), 18);
    }

    #[test]
    fn phases_and_draws_are_functions_of_seed_pe_and_order() {
        let mut n: Noise = "detour:every=1ms,lose=10us;jitter:max=5us".parse().unwrap();
        n.seed = 42;
        let again = n.clone();
        for pe in 0..100 {
            assert!(n.phase(pe) < 1_000_000_000);
            assert_eq!(n.phase(pe), again.phase(pe));
            assert!(n.jitter(pe, 3) <= 5_000_000);
        }
        let distinct: std::collections::BTreeSet<u64> = (0..100).map(|p| n.phase(p)).collect();
        assert!(distinct.len() > 90, "random phases differ between PEs");
        let other = Noise {
            seed: 43,
            ..n.clone()
        };
        assert_ne!(n.jitter(0, 0), other.jitter(0, 0));
        assert_eq!(
            n.to_string(),
            "detour:every=1 ms,lose=10 us,phase=random jitter:max=5 us"
        );
    }

    #[test]
    fn specs_explain_their_errors() {
        for (s, want) in [
            ("detour:every=1ms", "needs lose"),
            ("detour:every=1ms,lose=2ms", "shorter than every"),
            ("detour:every=1ms,lose=1us,phase=odd", "aligned or random"),
            ("jitter:mean=1us", "no parameter `mean`"),
            ("storm:x=1", "unknown kind"),
            ("jitter:max=abc", "max:"),
        ] {
            let e = s.parse::<Noise>().unwrap_err();
            assert!(e.contains(want), "{s}: {e}");
        }
    }

    fn trace(text: &str, random_phase: bool, seed: u64) -> Noise {
        Noise {
            trace: Some(NoiseTrace::parse("t.txt", text, random_phase).unwrap()),
            seed,
            ..Noise::default()
        }
    }

    #[test]
    fn a_two_line_trace_is_the_periodic_detour() {
        // LogGOPSim's convention: the last detour's start is the period.
        for random in [false, true] {
            let tr = trace(
                "# every 100 us, lose 10 us\n0\t10000\n100000\t10000\n",
                random,
                9,
            );
            let det = Noise {
                detour: Some(Detour {
                    every: SimDuration::from_us(100),
                    lose: SimDuration::from_us(10),
                    random_phase: random,
                }),
                seed: 9,
                ..Noise::default()
            };
            for pe in 0..8 {
                assert_eq!(tr.phase(pe), det.phase(pe));
                for t in [
                    0,
                    1,
                    9_999_999,
                    10_000_000,
                    55_555_555,
                    99_999_999,
                    123_456_789_012,
                ] {
                    for work in [
                        1,
                        1_000_000,
                        89_999_999,
                        90_000_000,
                        90_000_001,
                        1_234_567_890,
                    ] {
                        assert_eq!(
                            tr.finish(pe, t, work),
                            det.finish(pe, t, work),
                            "pe {pe} t {t} work {work} random {random}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn trace_windows_fold_merge_and_wrap() {
        // Period 60 ns; [60, 63) is [0, 3) of the next round and merges with [0, 10).
        let n = trace("0 10\n50 5\n60 3\n", false, 0);
        let ns = |x: u64| x * 1000;
        assert_eq!(n.trace.as_ref().unwrap().period_ps, ns(60));
        assert_eq!(n.finish(0, 0, ns(40)), ns(50));
        assert_eq!(n.finish(0, 0, ns(41)), ns(56));
        assert_eq!(n.finish(0, 0, ns(45)), ns(60));
        assert_eq!(n.finish(0, 0, ns(46)), ns(71));
        assert_eq!(n.finish(0, ns(52), ns(1)), ns(56));
        // Ten whole periods of free time and one more nanosecond.
        assert_eq!(n.finish(0, ns(10), ns(450) + ns(1)), ns(600 + 10 + 1));
        // A detour longer than the rest of the period wraps into the next one.
        let w = trace("0 0\n90 20\n100 0\n", false, 0);
        assert_eq!(w.finish(0, 0, ns(60)), ns(70));
        assert_eq!(w.finish(0, ns(85), ns(10)), ns(115));
    }

    #[test]
    fn noise_traces_explain_their_errors() {
        for (text, want) in [
            ("0 10\nabc 3\n", "t.txt:2: start `abc`"),
            ("0 10\n5\n", "t.txt:2: expected `<start-ns>"),
            ("0 10\n100 -1\n", "t.txt:2: duration -1 ns is out of range"),
            ("0 10\n", "two start times"),
            ("", "two start times"),
            ("0 60\n50 20\n", "cover the whole trace"),
        ] {
            let e = NoiseTrace::parse("t.txt", text, true).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        let e = "trace:file=/nonexistent/noise.txt"
            .parse::<Noise>()
            .unwrap_err();
        assert!(
            e.contains("cannot read noise trace /nonexistent/noise.txt"),
            "{e}"
        );
        let e = "detour:every=1ms,lose=1us;trace:file=x"
            .parse::<Noise>()
            .unwrap_err();
        assert!(e.contains("cannot be combined"), "{e}");
    }

    #[test]
    fn mutated_noise_traces_end_in_a_result_never_a_panic() {
        let good = b"# start\tduration\n0\t10.5\n50\t5\n60\t3\n1e3\t2\n9e14\t1\n";
        let mut state = 7u64;
        for _ in 0..20_000 {
            let mut text = good.to_vec();
            for _ in 0..1 + mix64(state) % 4 {
                state = mix64(state);
                let at = (state % text.len() as u64) as usize;
                let alphabet = b"0123456789.-e \t\n#xE+";
                let byte = alphabet[(state >> 32) as usize % alphabet.len()];
                match (state >> 40) % 3 {
                    0 => text[at] = byte,
                    1 => text.insert(at, byte),
                    _ => {
                        text.remove(at);
                    }
                }
                if text.is_empty() {
                    text.push(b'0');
                }
            }
            let text = String::from_utf8_lossy(&text);
            if let Ok(t) = NoiseTrace::parse("m.txt", &text, true) {
                // Whatever parsed can be used.
                let n = Noise {
                    trace: Some(t),
                    seed: state,
                    ..Noise::default()
                };
                for pe in 0..3 {
                    assert!(n.finish(pe, state >> 20, 1 + (state & 0xffff)) > state >> 20);
                }
            }
        }
    }

    #[test]
    fn log_normal_factors_have_mean_one_and_the_given_cv() {
        for cv in ["0.1", "0.5"] {
            let mut n: Noise = format!("jitter:cv={cv}").parse().unwrap();
            n.seed = 3;
            let want: f64 = cv.parse().unwrap();
            let k = 200_000u64;
            let xs: Vec<f64> = (0..k)
                .map(|i| n.jitter_factor((i % 64) as u32, i / 64))
                .collect();
            let mean = xs.iter().sum::<f64>() / k as f64;
            let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / k as f64;
            assert!((mean - 1.0).abs() < 0.01, "cv {cv}: mean {mean}");
            assert!(
                (var.sqrt() / mean - want).abs() < 0.03 * want + 0.005,
                "cv {cv}: {}",
                var.sqrt()
            );
            assert!(xs.iter().all(|&x| x > 0.0));
            // The median of a log-normal is exp(mu) < 1.
            let below = xs.iter().filter(|&&x| x < 1.0).count() as f64 / k as f64;
            assert!(below > 0.5, "cv {cv}: {below} below 1");
        }
        assert_eq!(Noise::default().jitter_factor(0, 0), 1.0);
        let n: Noise = "jitter:max=2us,cv=0.25".parse().unwrap();
        assert_eq!(n.to_string(), "jitter:max=2 us,cv=0.25");
        let e = "jitter:cv=-1".parse::<Noise>().unwrap_err();
        assert!(e.contains("coefficient of variation"), "{e}");
    }
}
