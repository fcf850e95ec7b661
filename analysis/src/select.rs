//! Which blocks the per-block outputs (`trace.json`, `timeline.csv`) hold: all of them while
//! they fit a size budget, else a subset a user can still read, chosen the way Lee's data
//! reduction does (the k-means representatives of the PEs), and then, if needed, the start
//! of the run. The choice is a pure function of the timeline, the trace and the budget, so
//! the same run always writes the same files; the notes say what was left out and how to get
//! it.
//!
//! Sizes are estimates of `trace.json`'s bytes: a complete (`X`) event per block of about
//! [`BLOCK_EVENT_BYTES`] plus its entry's and object's names, and [`FLOW_BYTES`] per message
//! drawn as a flow (measured on a 100,000-PE halo: 153 bytes per `X` event with 7- and
//! 6-byte names, 185 per `s`/`f` pair).

use replay::TimelineRecord;
use trace::{BlockId, Trace};

/// Estimated bytes of one block's `X` event, without its names.
pub const BLOCK_EVENT_BYTES: u64 = 140;
/// Estimated bytes of one message's flow (`s` and `f` events).
pub const FLOW_BYTES: u64 = 190;
/// Default budget of `trace.json` (256 MiB).
pub const DEFAULT_BUDGET_BYTES: u64 = 256 << 20;

/// Which PEs the user asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeChoice {
    /// All PEs while the budget allows, else the representatives (the default).
    Auto,
    /// Every PE, whatever the size.
    All,
    /// The k-means representatives (exemplars and outliers).
    Representatives,
    /// These PEs.
    List(Vec<u32>),
}

impl std::str::FromStr for PeChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "auto" => return Ok(PeChoice::Auto),
            "all" => return Ok(PeChoice::All),
            "representatives" | "reps" => return Ok(PeChoice::Representatives),
            _ => {}
        }
        let mut v = Vec::new();
        for part in s.split(',').map(str::trim) {
            let num = |x: &str| {
                x.trim().parse::<u32>().map_err(|_| {
                    format!(
                        "`{x}` is not a PE number; expected `auto`, `all`, `representatives` or a list such as `0,4,10-20`"
                    )
                })
            };
            match part.split_once('-') {
                Some((a, b)) => {
                    let (a, b) = (num(a)?, num(b)?);
                    if b < a {
                        return Err(format!("`{part}`: a range goes from low to high"));
                    }
                    if (b - a) as usize > MAX_LISTED_PES || v.len() > MAX_LISTED_PES {
                        return Err(format!(
                            "`{part}`: at most {MAX_LISTED_PES} PEs can be listed"
                        ));
                    }
                    v.extend(a..=b);
                }
                None => v.push(num(part)?),
            }
            if v.len() > MAX_LISTED_PES {
                return Err(format!("at most {MAX_LISTED_PES} PEs can be listed"));
            }
        }
        v.sort_unstable();
        v.dedup();
        Ok(PeChoice::List(v))
    }
}

/// Most PEs a list may name (a larger selection is `all`).
pub const MAX_LISTED_PES: usize = 1 << 20;

/// What the per-block outputs hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    /// Per PE: kept; `None`: every PE.
    pub pes: Option<Vec<bool>>,
    /// Kept time window `[t0, t1)` in picoseconds (a block is kept when it overlaps it);
    /// `None`: the whole run.
    pub window_ps: Option<(u64, u64)>,
    /// What was left out and how to get it, one sentence each (empty when nothing was).
    pub notes: Vec<String>,
    /// Estimated `trace.json` bytes of what is kept.
    pub estimated_bytes: u64,
}

impl Selection {
    /// Everything.
    pub fn all() -> Selection {
        Selection {
            pes: None,
            window_ps: None,
            notes: Vec::new(),
            estimated_bytes: 0,
        }
    }

    /// Whether PE `pe` is kept.
    pub fn keeps_pe(&self, pe: u32) -> bool {
        self.pes
            .as_ref()
            .is_none_or(|k| k.get(pe as usize).copied().unwrap_or(false))
    }

    /// Whether a block that ran on `pe` over `[start, end]` is kept.
    pub fn keeps(&self, pe: u32, start_ps: u64, end_ps: u64) -> bool {
        self.keeps_pe(pe)
            && self.window_ps.is_none_or(|(a, b)| {
                start_ps < b && (end_ps > a || (end_ps == start_ps && start_ps >= a))
            })
    }
}

/// Estimated `trace.json` bytes of one record (its `X` event and the flows into it).
fn record_bytes(t: &Trace, rec: &TimelineRecord, flows_in: &[u32]) -> u64 {
    let b = t.block(BlockId(rec.block));
    let names = t.entries.get(b.entry.index()).map_or(0, |e| e.name.len())
        + t.objects.get(b.object.index()).map_or(0, |o| o.name.len());
    BLOCK_EVENT_BYTES + names as u64 + FLOW_BYTES * u64::from(flows_in[rec.block as usize])
}

/// Estimated `trace.json` bytes of every block of a run ([`select`]'s estimate of all PEs),
/// from the trace alone: a repeated trace's iterations all weigh the same.
pub fn all_bytes(g: crate::Blocks<'_>) -> u64 {
    let t = g.body();
    let mut flows_in = vec![0u32; t.num_blocks()];
    for &b in &t.consumers().blocks {
        if let Some(n) = flows_in.get_mut(b as usize) {
            *n = n.saturating_add(1);
        }
    }
    let cols = t.columns();
    let one: u64 = (0..t.num_blocks())
        .map(|b| {
            let names = t
                .entries
                .get(cols.entry[b] as usize)
                .map_or(0, |e| e.name.len())
                + t.objects
                    .get(cols.object[b] as usize)
                    .map_or(0, |o| o.name.len());
            BLOCK_EVENT_BYTES + names as u64 + FLOW_BYTES * u64::from(flows_in[b])
        })
        .fold(0u64, |a, x| a.saturating_add(x));
    match g {
        crate::Blocks::Flat(_) => one,
        crate::Blocks::Repeated(r) => one.saturating_mul(r.reps() as u64),
    }
}

/// Decides what the per-block outputs hold. `tl` is the timeline (in start order) of a replay
/// of the flat trace `t` on `pes` PEs; `representatives` the k-means representatives;
/// `window_ps` a window the user asked for; `budget_bytes` the size `trace.json` should stay
/// under when the user did not ask for every PE. `all_bytes`: the estimate for every PE
/// when `tl` holds the runs of some PEs only ([`all_bytes`]; then `tl` must hold every run
/// of the representatives and of a listed choice); `None` computes it from `tl`.
#[allow(clippy::too_many_arguments)]
pub fn select(
    t: &Trace,
    tl: &[TimelineRecord],
    pes: u32,
    choice: &PeChoice,
    representatives: &[u32],
    window_ps: Option<(u64, u64)>,
    budget_bytes: u64,
    all_bytes: Option<u64>,
) -> Selection {
    // Messages drawn as flows, counted at the consuming block.
    let mut flows_in = vec![0u32; t.num_blocks()];
    {
        let c = t.consumers();
        for &b in &c.blocks {
            if let Some(n) = flows_in.get_mut(b as usize) {
                *n = n.saturating_add(1);
            }
        }
    }
    let mark = |list: &[u32]| {
        let mut k = vec![false; pes as usize];
        for &p in list {
            if let Some(x) = k.get_mut(p as usize) {
                *x = true;
            }
        }
        k
    };
    let mut sel = Selection {
        pes: match choice {
            PeChoice::Auto | PeChoice::All => None,
            PeChoice::Representatives => Some(mark(representatives)),
            PeChoice::List(v) => Some(mark(v)),
        },
        window_ps,
        notes: Vec::new(),
        estimated_bytes: 0,
    };
    let size = |sel: &Selection| -> u64 {
        tl.iter()
            .filter(|r| sel.keeps(r.pe, r.start.as_ps(), r.end.as_ps()))
            .map(|r| record_bytes(t, r, &flows_in))
            .sum()
    };
    sel.estimated_bytes = match (all_bytes, &sel.pes) {
        (Some(b), None) => b,
        _ => size(&sel),
    };
    if matches!(choice, PeChoice::Auto) && sel.estimated_bytes > budget_bytes {
        let full = sel.estimated_bytes;
        sel.pes = Some(mark(representatives));
        sel.estimated_bytes = size(&sel);
        let kept = representatives.iter().filter(|&&p| p < pes).count();
        sel.notes.push(format!(
            "trace.json and timeline.csv hold the blocks of {kept} of {pes} PEs (the k-means representatives of clusters.csv, and with --report the critical path's PEs): all PEs would make a trace.json of about {} (--trace-budget {}); --trace-pes all writes every PE, --trace-pes 0,5,10-20 chooses PEs, --trace-window 1ms..2ms a time window",
            human(full),
            human(budget_bytes)
        ));
        if sel.estimated_bytes > budget_bytes {
            // Still too large: the start of the run, up to the budget (records are in start
            // order, so the window ends where the running total passes the budget).
            let mut sum = 0u64;
            let mut end = None;
            for (i, r) in tl
                .iter()
                .filter(|r| sel.keeps(r.pe, r.start.as_ps(), r.end.as_ps()))
                .enumerate()
            {
                sum += record_bytes(t, r, &flows_in);
                if sum > budget_bytes {
                    // At least the first block.
                    end = Some(if i == 0 {
                        r.end.as_ps().max(r.start.as_ps() + 1)
                    } else {
                        r.start.as_ps()
                    });
                    break;
                }
            }
            if let Some(end) = end {
                let a = window_ps.map_or(0, |w| w.0);
                let b = window_ps.map_or(end, |w| w.1.min(end));
                sel.window_ps = Some((a, b.max(a)));
                sel.estimated_bytes = size(&sel);
                sel.notes.push(format!(
                    "even those PEs exceed the budget: the files hold {} to {} of the run; --trace-window chooses another window",
                    crate::fmt_ps(a),
                    crate::fmt_ps(b)
                ));
            }
        }
    }
    sel
}

fn human(b: u64) -> String {
    sim_core::units::human_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pe_lists_parse_with_ranges_and_reject_nonsense() {
        assert_eq!("auto".parse::<PeChoice>(), Ok(PeChoice::Auto));
        assert_eq!("all".parse::<PeChoice>(), Ok(PeChoice::All));
        assert_eq!("reps".parse::<PeChoice>(), Ok(PeChoice::Representatives));
        assert_eq!(
            "7, 0,2-4,3".parse::<PeChoice>(),
            Ok(PeChoice::List(vec![0, 2, 3, 4, 7]))
        );
        assert!(
            "4-2"
                .parse::<PeChoice>()
                .unwrap_err()
                .contains("low to high")
        );
        assert!(
            "x".parse::<PeChoice>()
                .unwrap_err()
                .contains("not a PE number")
        );
        assert!(
            "0-4294967295"
                .parse::<PeChoice>()
                .unwrap_err()
                .contains("at most")
        );
    }

    #[test]
    fn a_window_keeps_blocks_that_overlap_it() {
        let s = Selection {
            window_ps: Some((10, 20)),
            ..Selection::all()
        };
        assert!(s.keeps(0, 5, 11));
        assert!(s.keeps(0, 19, 30));
        assert!(!s.keeps(0, 0, 10));
        assert!(!s.keeps(0, 20, 25));
        assert!(s.keeps(0, 10, 10), "an instant block at the window's start");
        let p = Selection {
            pes: Some(vec![true, false]),
            ..Selection::all()
        };
        assert!(p.keeps(0, 0, 1) && !p.keeps(1, 0, 1) && !p.keeps(2, 0, 1));
    }
}
