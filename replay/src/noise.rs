//! OS noise on the simulated CPUs: periodic detours and per-block jitter.
//!
//! * **Detours** (`detour:every=E,lose=Y[,phase=aligned|random]`): each PE loses the CPU for
//!   `Y` out of every `E`, in windows `[phi_p + k*E, phi_p + k*E + Y)`. A block's CPU work
//!   (receive overhead, duration, send overheads) runs only outside them, so it ends later, and
//!   each send leaves when the work before it is done. `phase=aligned`: `phi_p = 0` on every
//!   PE (co-scheduled noise); `phase=random` (the default): `phi_p` uniform in `[0, E)`, a
//!   function of the seed and the PE. Zero work takes no time, even inside a window.
//! * **Jitter** (`jitter:max=J`): every block that does work (duration > 0) takes an extra
//!   `U[0, J]` of CPU before it (whole picoseconds), the `n`-th such block of PE `p` drawing
//!   `mix64(seed ^ mix64(p << 32 | n))`. Draws depend only on the seed, the PE and the order
//!   of the PE's blocks, never on threads or other PEs.
//!
//! The seed is `derive_seed(root seed, "noise")`. A PE's busy time includes the time its
//! blocks lose to detours.

use sim_core::SimDuration;
use sim_core::rng::mix64;
use std::fmt;
use std::str::FromStr;

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

/// The noise of a replay (none by default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Noise {
    /// Periodic detours.
    pub detour: Option<Detour>,
    /// Largest per-block jitter (0: none).
    pub jitter_max: SimDuration,
    /// Seed of the phases and draws.
    pub seed: u64,
}

impl Noise {
    /// Whether any noise is configured.
    pub fn is_active(&self) -> bool {
        self.detour.is_some() || self.jitter_max > SimDuration::ZERO
    }

    /// Adds one `detour:...` or `jitter:...` spec to this noise.
    pub fn add(&mut self, spec: &str) -> Result<(), String> {
        let (kind, params) = spec.split_once(':').unwrap_or((spec, ""));
        let mut kv = Vec::new();
        for part in params.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("noise `{spec}`: `{part}` is not key=value"))?;
            kv.push((k.trim(), v.trim()));
        }
        let dur = |k: &str| -> Result<Option<SimDuration>, String> {
            kv.iter()
                .find(|(key, _)| *key == k)
                .map(|(_, v)| {
                    sim_core::units::parse_duration(v)
                        .map_err(|e| format!("noise `{spec}`: {k}: {e}"))
                })
                .transpose()
        };
        let allowed: &[&str] = match kind.trim() {
            "detour" => &["every", "lose", "phase"],
            "jitter" => &["max"],
            other => {
                return Err(format!(
                    "noise `{spec}`: unknown kind `{other}`; expected detour:every=D,lose=D[,phase=aligned|random] or jitter:max=D"
                ));
            }
        };
        if let Some((k, _)) = kv.iter().find(|(k, _)| !allowed.contains(k)) {
            return Err(format!(
                "noise `{spec}`: {kind} has no parameter `{k}`; it takes {}",
                allowed.join(", ")
            ));
        }
        if kind.trim() == "jitter" {
            self.jitter_max =
                dur("max")?.ok_or_else(|| format!("noise `{spec}`: jitter needs max=D"))?;
            return Ok(());
        }
        let every = dur("every")?.ok_or_else(|| format!("noise `{spec}`: detour needs every=D"))?;
        let lose = dur("lose")?.ok_or_else(|| format!("noise `{spec}`: detour needs lose=D"))?;
        if lose >= every || every == SimDuration::ZERO {
            return Err(format!(
                "noise `{spec}`: lose must be shorter than every (a CPU that is always away never finishes)"
            ));
        }
        let random_phase = match kv.iter().find(|(k, _)| *k == "phase").map(|(_, v)| *v) {
            None | Some("random") => true,
            Some("aligned") => false,
            Some(other) => {
                return Err(format!(
                    "noise `{spec}`: phase={other}; expected aligned or random"
                ));
            }
        };
        self.detour = Some(Detour {
            every,
            lose,
            random_phase,
        });
        Ok(())
    }

    /// The start of PE `pe`'s first detour window, in `[0, every)`.
    pub fn phase(&self, pe: u32) -> u64 {
        match self.detour {
            Some(d) if d.random_phase => {
                mix64(self.seed ^ mix64(0xd7 << 56 | pe as u64)) % d.every.as_ps()
            }
            _ => 0,
        }
    }

    /// The extra CPU time of the `n`-th working block of PE `pe`.
    pub fn jitter(&self, pe: u32, n: u64) -> u64 {
        let m = self.jitter_max.as_ps();
        if m == 0 {
            return 0;
        }
        mix64(self.seed ^ mix64((pe as u64) << 32 ^ n)) % (m + 1)
    }

    /// When `work` picoseconds of CPU started at `t` on PE `pe` are done, detours skipped.
    pub fn finish(&self, pe: u32, t: u64, work: u64) -> u64 {
        let Some(d) = self.detour else {
            return t.saturating_add(work);
        };
        if work == 0 {
            return t;
        }
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
        if self.jitter_max > SimDuration::ZERO {
            parts.push(format!("jitter:max={}", self.jitter_max));
        }
        if parts.is_empty() {
            parts.push("none".into());
        }
        f.write_str(&parts.join(" "))
    }
}

impl FromStr for Noise {
    type Err = String;
    /// One spec (`detour:...` or `jitter:...`) or several joined by `;`.
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
        let again = n;
        for pe in 0..100 {
            assert!(n.phase(pe) < 1_000_000_000);
            assert_eq!(n.phase(pe), again.phase(pe));
            assert!(n.jitter(pe, 3) <= 5_000_000);
        }
        let distinct: std::collections::BTreeSet<u64> = (0..100).map(|p| n.phase(p)).collect();
        assert!(distinct.len() > 90, "random phases differ between PEs");
        let other = Noise { seed: 43, ..n };
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
}
