//! What-if changes to a trace: an entry method or an object made faster, blocks given
//! critical-path priorities. `whatif replay --speedup` and `--critical-path-priority` apply
//! them, so a diagnosis's re-simulation can be reproduced on the command line.

use crate::AnalysisError;
use serde::Serialize;
use sim_core::{Ratio, SimDuration};
use std::str::FromStr;
use trace::{BlockId, Repeated, Trace};

/// What a [`Speedup`] makes faster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "name", rename_all = "snake_case")]
pub enum Target {
    /// Every block of the entry methods of this name.
    Entry(String),
    /// Every block of this object (by id).
    Object(u32),
}

/// Blocks of one entry method or object run `factor` times faster: their durations and send
/// offsets are divided by it (rounded down to the picosecond).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Speedup {
    /// What is made faster.
    pub target: Target,
    /// How much faster (2 = twice as fast).
    #[serde(serialize_with = "ratio_str")]
    pub factor: Ratio,
}

fn ratio_str<S: serde::Serializer>(r: &Ratio, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&r.to_string())
}

/// Help for the `--speedup` syntax.
pub const SPEEDUP_SYNTAX: &str = "`entry:NAME=F` (every block of entry method NAME F times faster) or `object:ID=F` (every block of object ID)";

impl FromStr for Speedup {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("`{s}`: expected {SPEEDUP_SYNTAX}, e.g. entry:compute=2");
        let (what, factor) = s.rsplit_once('=').ok_or_else(bad)?;
        let factor = Ratio::parse(factor).map_err(|e| format!("`{s}`: {e}"))?;
        if factor.num() == 0 {
            return Err(format!("`{s}`: the factor must be greater than 0"));
        }
        let target = match what.split_once(':') {
            Some(("entry", name)) if !name.is_empty() => Target::Entry(name.to_string()),
            Some(("object", id)) => Target::Object(id.trim().parse().map_err(|_| {
                format!("`{s}`: `object:` takes an object id (a number, as `whatif inspect` and the analysis print)")
            })?),
            _ => return Err(bad()),
        };
        Ok(Speedup { target, factor })
    }
}

impl std::fmt::Display for Speedup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.target {
            Target::Entry(n) => write!(f, "entry:{n}={}", self.factor),
            Target::Object(o) => write!(f, "object:{o}={}", self.factor),
        }
    }
}

/// Applies `s` to `trace`; returns the number of blocks changed. An entry name or object id
/// the trace does not have is an error naming what it has.
pub fn speed_up(trace: &mut Trace, s: &Speedup) -> Result<u64, AnalysisError> {
    let hit = hits(trace, s)?;
    speed_up_hits(trace, s, &hit)
}

/// [`speed_up`] on a repeated trace: its body, and the per-iteration durations of the body
/// blocks it hits. An end-anchored send's offset follows its block's sped-up duration, so it
/// can differ by a picosecond of rounding from the expanded trace sped up.
pub fn speed_up_repeated(r: &Repeated, s: &Speedup) -> Result<(Repeated, u64), AnalysisError> {
    let mut body = r.body().clone();
    let hit = hits(&body, s)?;
    let changed = speed_up_hits(&mut body, s, &hit)?;
    let by = Ratio::new(s.factor.den(), s.factor.num())
        .ok_or_else(|| AnalysisError::Speedup("a speed-up factor of 0".into()))?;
    let mut varying = r.varying().clone();
    let per = varying.blocks.len();
    if per > 0 {
        for (v, &b) in varying.blocks.clone().iter().enumerate() {
            if hit[b as usize] {
                for k in 0..r.reps() as usize {
                    let d = &mut varying.durations_ps[k * per + v];
                    *d = by.scale(SimDuration::from_ps(*d)).as_ps();
                }
            }
        }
    }
    let out = Repeated::new(
        body,
        r.reps(),
        r.carried_ends().to_vec(),
        r.all_carried().to_vec(),
        r.msg_stride(),
        r.iter_stride(),
        varying,
    )
    .map_err(|e| AnalysisError::Internal(format!("sped-up repeated trace: {e}")))?;
    Ok((out, changed * r.reps() as u64))
}

/// [`speed_up`] as a replay setting ([`replay::BlockScale`]): the same replay as the sped-up
/// trace (flat or repeated), without copying it.
pub fn block_scale(trace: &Trace, s: &Speedup) -> Result<replay::BlockScale, AnalysisError> {
    let by = Ratio::new(s.factor.den(), s.factor.num())
        .ok_or_else(|| AnalysisError::Speedup("a speed-up factor of 0".into()))?;
    Ok(match &s.target {
        Target::Entry(_) => replay::BlockScale {
            entries: hit_entries(trace, s)?,
            object: None,
            by,
        },
        Target::Object(o) => {
            hit_entries(trace, s)?;
            replay::BlockScale {
                entries: Vec::new(),
                object: Some(*o),
                by,
            }
        }
    })
}

/// The entry methods a speed-up hits (empty for an object), or why it cannot apply.
fn hit_entries(trace: &Trace, s: &Speedup) -> Result<Vec<bool>, AnalysisError> {
    match &s.target {
        Target::Entry(name) => {
            let v: Vec<bool> = trace.entries.iter().map(|e| &e.name == name).collect();
            if !v.iter().any(|x| *x) {
                let mut names: Vec<&str> = trace.entries.iter().map(|e| e.name.as_str()).collect();
                names.truncate(12);
                return Err(AnalysisError::Speedup(format!(
                    "the trace has no entry method `{name}`; it has: {}",
                    names.join(", ")
                )));
            }
            Ok(v)
        }
        Target::Object(o) => {
            if *o as usize >= trace.objects.len() {
                return Err(AnalysisError::Speedup(format!(
                    "the trace has no object {o} (ids 0..{})",
                    trace.objects.len()
                )));
            }
            Ok(Vec::new())
        }
    }
}

/// Which blocks a speed-up hits.
fn hits(trace: &Trace, s: &Speedup) -> Result<Vec<bool>, AnalysisError> {
    let entries = hit_entries(trace, s)?;
    Ok(match &s.target {
        Target::Entry(_) => trace
            .columns()
            .entry
            .iter()
            .map(|&e| entries[e as usize])
            .collect(),
        Target::Object(o) => trace.columns().object.iter().map(|&x| x == *o).collect(),
    })
}

fn speed_up_hits(trace: &mut Trace, s: &Speedup, hit: &[bool]) -> Result<u64, AnalysisError> {
    // Dividing by num/den is multiplying by den/num.
    let by = Ratio::new(s.factor.den(), s.factor.num())
        .ok_or_else(|| AnalysisError::Speedup("a speed-up factor of 0".into()))?;
    let send_ranges: Vec<std::ops::Range<usize>> = (0..trace.num_blocks() as u32)
        .filter(|&b| hit[b as usize])
        .map(|b| trace.send_range(BlockId(b)))
        .collect();
    let mut changed = 0;
    for (d, &h) in trace.durations_mut().iter_mut().zip(hit) {
        if h {
            *d = by.scale(SimDuration::from_ps(*d)).as_ps();
            changed += 1;
        }
    }
    let mut ranges = send_ranges.into_iter().peekable();
    for (i, off) in trace.send_offsets_mut().enumerate() {
        while ranges.peek().is_some_and(|r| r.end <= i) {
            ranges.next();
        }
        if ranges.peek().is_some_and(|r| r.contains(&i)) {
            *off = by.scale(*off);
        }
    }
    Ok(changed)
}

/// Each block's *bottom level*: the longest chain of compute from its start to the end of the
/// run, through its dependents and the blocks its messages trigger (at the send's offset);
/// messages cost nothing here (their cost depends on the mapping). Blocks on a cycle (an
/// invalid trace) count their own duration only.
pub fn bottom_levels(trace: &Trace) -> Vec<u64> {
    let n = trace.num_blocks();
    let cols = trace.columns();
    let consumers = trace.consumers();
    let send_block = trace.send_blocks();
    // Successor counts for a reverse topological order (Kahn on the reversed graph).
    let mut succ_left = vec![0u32; n];
    let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n];
    for b in 0..n as u32 {
        for d in trace.deps(BlockId(b)) {
            succ_left[d.index()] += 1;
            preds[b as usize].push(d.0);
        }
        let s = consumers.trigger_send[b as usize];
        if s != u32::MAX {
            let from = send_block[s as usize];
            succ_left[from as usize] += 1;
            preds[b as usize].push(from);
        }
    }
    let mut level = vec![0u64; n];
    let mut done = vec![false; n];
    let mut stack: Vec<u32> = (0..n as u32)
        .filter(|&b| succ_left[b as usize] == 0)
        .collect();
    let sends = trace.all_sends();
    // A block's level is known once all its successors have theirs.
    let mut tail = vec![0u64; n]; // best chain after the block's end (dependents)
    let mut via_send = vec![0u64; n]; // best chain from the block's start through a message
    while let Some(b) = stack.pop() {
        let bi = b as usize;
        done[bi] = true;
        let dur = cols.duration_ps[bi];
        level[bi] = dur.saturating_add(tail[bi]).max(via_send[bi]).max(dur);
        let lv = level[bi];
        for d in trace.deps(BlockId(b)) {
            let x = &mut tail[d.index()];
            *x = (*x).max(lv);
        }
        let s = consumers.trigger_send[bi];
        if s != u32::MAX {
            let from = send_block[s as usize] as usize;
            let x = &mut via_send[from];
            *x = (*x).max(sends[s as usize].offset.as_ps().saturating_add(lv));
        }
        for &p in &preds[bi] {
            succ_left[p as usize] -= 1;
            if succ_left[p as usize] == 0 {
                stack.push(p);
            }
        }
    }
    for b in 0..n {
        if !done[b] {
            level[b] = cols.duration_ps[b];
        }
    }
    level
}

/// Gives every block the priority of its bottom level (a longer chain ahead runs first;
/// [`bottom_levels`]), for a replay with priority scheduling.
pub fn critical_path_priorities(trace: &mut Trace) -> Result<(), AnalysisError> {
    let levels = bottom_levels(trace);
    let max = levels.iter().copied().max().unwrap_or(0);
    // Units so the largest level fits an i32.
    let unit = (max >> 30) + 1;
    let prio = levels.iter().map(|&l| -((l / unit) as i32)).collect();
    trace
        .set_priorities(prio)
        .map_err(|e| AnalysisError::Internal(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace::{Block, Destination, MsgId, PeId, Send, TraceBuilder, TraceMeta};

    /// a (10 us) sends at 4 us to b (5 us); c (1 us) depends on a; d (20 us) is alone.
    fn small() -> Trace {
        let mut t = TraceBuilder::new(TraceMeta {
            name: "small".into(),
            recorded_pes: 2,
            ..Default::default()
        });
        let (e, f) = (t.entry("work"), t.entry("other"));
        let (o0, o1) = (t.object("x", PeId(0)), t.object("y", PeId(1)));
        let us = SimDuration::from_us;
        let m = t.new_msg();
        let a = t.block(
            Block::new(o0, e, us(10)),
            &[],
            &[Send {
                msg: m,
                offset: us(4),
                dest: Destination::Object(o1),
                bytes: 8,
                entry: f,
            }],
        );
        let mut b = Block::new(o1, f, us(5));
        b.trigger = Some(MsgId(m.0));
        t.block(b, &[], &[]);
        t.block(Block::new(o0, e, us(1)), &[a], &[]);
        t.block(Block::new(o1, f, us(20)), &[], &[]);
        t.finish().unwrap()
    }

    #[test]
    fn bottom_levels_follow_dependencies_and_messages() {
        let t = small();
        let us = |x: u64| x * 1_000_000;
        // a: max(10 + 1, 4 + 5) = 11 us; b: 5; c: 1; d: 20.
        assert_eq!(bottom_levels(&t), vec![us(11), us(5), us(1), us(20)]);
        let mut t = t;
        critical_path_priorities(&mut t).unwrap();
        let p = &t.columns().priority;
        assert!(p[3] < p[0] && p[0] < p[1] && p[1] < p[2], "{p:?}");
    }

    #[test]
    fn speedups_divide_durations_and_offsets_of_their_target_only() {
        let mut t = small();
        let s: Speedup = "entry:work=2".parse().unwrap();
        assert_eq!(s.to_string(), "entry:work=2");
        assert_eq!(speed_up(&mut t, &s).unwrap(), 2);
        assert_eq!(
            t.columns().duration_ps,
            vec![5_000_000, 5_000_000, 500_000, 20_000_000]
        );
        assert_eq!(t.all_sends()[0].offset, SimDuration::from_us(2));
        let s: Speedup = "object:1=4".parse().unwrap();
        assert_eq!(speed_up(&mut t, &s).unwrap(), 2);
        assert_eq!(t.columns().duration_ps[3], 5_000_000);
        for bad in [
            "entry:work",
            "thing:x=2",
            "object:x=2",
            "entry:work=0",
            "entry:=2",
        ] {
            assert!(bad.parse::<Speedup>().is_err(), "{bad}");
        }
        let e = speed_up(&mut t, &"entry:nope=2".parse().unwrap()).unwrap_err();
        assert!(e.to_string().contains("work, other"), "{e}");
        assert!(speed_up(&mut t, &"object:9=2".parse().unwrap()).is_err());
    }
}
