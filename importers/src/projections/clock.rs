//! Clock offsets between the PEs' logs.
//!
//! Each process of a Charm++ run writes its log with its own timer, and the timers of two
//! processes can disagree by tens of microseconds (netlrts on one machine: up to 103 us in a
//! kNeighbor run), so some messages seem to begin before they were created. Their recorded
//! delays are then floored at 0, and each floored delay makes a faithful replay
//! (`--recorded-order --net recorded`) start a block late.
//!
//! The correction is the smallest that leaves no message arriving before it was created. For
//! two PEs `a` and `b`, with `d(a->b)` the smallest recorded delay (receive time on `b` minus
//! creation time on `a`; the begin time when the log has no receive time) of a message from
//! `a` to `b`, adding `x` to `b`'s times keeps every delay at or above 0 when
//! `-d(a->b) <= x <= d(b->a)`: the `x` in that range nearest 0 is taken. (The midpoint, as
//! NTP takes, needs the receive times: without them a delay includes the wait in the
//! receiver's queue, and the fastest message one way can be far slower than the other.)
//! When the range is empty the clocks do not differ by a constant and the pair is left
//! alone. Only messages matched as the trigger rules match them count: same entry, and
//! created at most [`SKEW_PS`] after the delivery (a resumed thread's envelope can name an
//! event number its PE reuses a second later). An array broadcast, which each PE's array
//! manager delivers with its own PE as source, counts from the PE that created it when
//! exactly one other PE has a creation of that event and entry (the latest before the
//! delivery, else the earliest within the tolerance). When a multicast's untraced copy seems
//! unpacked before it was packed, the estimate is made again with the copies' delays too
//! ([`super::untraced::copy_delays`]): a CkMulticast section loop sends nothing traced
//! between its PEs. PEs are reached from PE 0 through pairs that
//! exchange messages (breadth first,
//! the busiest pair first); a PE not reached keeps its clock. Every time on a PE's log is
//! then shifted by its offset, and all by a common amount so that none is negative.

use super::link::SKEW_PS;
use super::log::{Logs, Untraced};
use std::collections::{HashMap, VecDeque};

/// Per ordered PE pair `(from, to)`: the smallest recorded delay (may be negative) and the
/// number of messages.
type Delays = HashMap<(u32, u32), (i64, u64)>;

/// Per-PE amounts (ps) to add to every time of its log, or `None` when no PE needs one.
/// `extra`: more recorded delays `((from, to), delay)` of messages between PEs (untraced
/// multicast copies, [`super::untraced::copy_delays`]).
pub(crate) fn offsets(logs: &Logs, pes: u32, extra: &[((u32, u32), i64)]) -> Option<Vec<u64>> {
    if pes < 2 {
        return None;
    }
    let mut by_pe_event: HashMap<(u32, i64), usize> = HashMap::new();
    let mut by_event_ep: HashMap<(i64, i64), Vec<usize>> = HashMap::new();
    for (i, c) in logs.creations.iter().enumerate() {
        by_pe_event.entry((c.pe, c.event)).or_insert(i);
        by_event_ep.entry((c.event, c.ep)).or_default().push(i);
    }
    let signed = |t: u64| i64::try_from(t).unwrap_or(i64::MAX);
    let mut delays: Delays = HashMap::new();
    for p in &logs.pieces {
        if p.runtime || p.event < 0 || p.src < 0 || p.src >= pes as i64 {
            continue;
        }
        let own = by_pe_event.get(&(p.src as u32, p.event)).copied();
        let c = if p.src != p.pe as i64 {
            match own {
                Some(c) => c,
                None => continue,
            }
        } else if own.is_some_and(|c| logs.creations[c].ep == p.ep) {
            continue; // a message between two objects of one PE
        } else {
            // An array broadcast, delivered with the delivering PE as source: its creation is
            // the one of that event and entry on another PE, when only one PE has such a
            // creation near enough to be its cause.
            let near = |c: &&usize| {
                let c = &logs.creations[**c];
                c.pe != p.pe
                    && signed(c.time_ps) <= signed(p.arrival_ps).saturating_add(SKEW_PS as i64)
            };
            let list: Vec<usize> = by_event_ep
                .get(&(p.event, p.ep))
                .into_iter()
                .flatten()
                .filter(near)
                .copied()
                .collect();
            let Some(&first) = list.first() else { continue };
            let from = logs.creations[first].pe;
            if list.iter().any(|&c| logs.creations[c].pe != from) {
                continue;
            }
            let time = |c: &usize| (logs.creations[*c].time_ps, *c);
            let before = list
                .iter()
                .copied()
                .filter(|&c| logs.creations[c].time_ps <= p.arrival_ps)
                .max_by_key(time);
            match before.or_else(|| list.iter().copied().min_by_key(time)) {
                Some(c) => c,
                None => continue,
            }
        };
        let c = &logs.creations[c];
        if c.ep != p.ep {
            continue;
        }
        let d = signed(p.arrival_ps).saturating_sub(signed(c.time_ps));
        // A creation far later than the delivery is not its cause (a resumed thread's
        // envelope names an event number its PE reuses): the trigger rules skip it too.
        if d < -(SKEW_PS as i64) {
            continue;
        }
        let e = delays.entry((c.pe, p.pe)).or_insert((d, 0));
        e.0 = e.0.min(d);
        e.1 += 1;
    }
    for &(pair, d) in extra {
        if d < -(SKEW_PS as i64) || pair.0 >= pes || pair.1 >= pes || pair.0 == pair.1 {
            continue;
        }
        let e = delays.entry(pair).or_insert((d, 0));
        e.0 = e.0.min(d);
        e.1 += 1;
    }
    // Neighbours of each PE through pairs with messages either way, busiest first.
    let mut next: Vec<Vec<(u64, u32)>> = vec![Vec::new(); pes as usize];
    for (&(a, b), &(_, n)) in &delays {
        let m = delays.get(&(b, a)).map_or(0, |&(_, m)| m);
        next[a as usize].push((n + m, b));
        if m == 0 {
            next[b as usize].push((n, a));
        }
    }
    for list in &mut next {
        list.sort_unstable_by(|x, y| y.cmp(x));
        list.dedup();
    }
    let mut offset: Vec<Option<i64>> = vec![None; pes as usize];
    offset[0] = Some(0);
    let mut queue = VecDeque::from([0u32]);
    while let Some(a) = queue.pop_front() {
        let oa = offset[a as usize].unwrap_or(0);
        for &(_, b) in &next[a as usize] {
            if offset[b as usize].is_some() {
                continue;
            }
            // Adding x to b's times makes a->b delays d + x and b->a delays d - x; both stay
            // at or above 0 for x in [lo, hi]. Take the x nearest 0 (none when the bounds
            // cross: the clocks do not differ by a constant).
            let lo = delays
                .get(&(a, b))
                .map_or(i64::MIN, |&(d, _)| d.saturating_neg());
            let hi = delays.get(&(b, a)).map_or(i64::MAX, |&(d, _)| d);
            let x = if lo > hi { 0 } else { 0.clamp(lo, hi) };
            offset[b as usize] = Some(oa.saturating_add(x));
            queue.push_back(b);
        }
    }
    let offset: Vec<i64> = offset.into_iter().map(|o| o.unwrap_or(0)).collect();
    if offset.iter().all(|&o| o == 0) {
        return None;
    }
    let low = offset.iter().copied().min().unwrap_or(0);
    Some(offset.iter().map(|&o| o.abs_diff(low)).collect())
}

/// Adds `by[pe]` to every time of `pe`'s log.
pub(crate) fn shift(logs: &mut Logs, by: &[u64]) {
    for p in &mut logs.pieces {
        let s = by[p.pe as usize];
        p.begin_ps = p.begin_ps.saturating_add(s);
        p.end_ps = p.end_ps.saturating_add(s);
        p.arrival_ps = p.arrival_ps.saturating_add(s);
        for t in &mut p.packs {
            *t = t.saturating_add(s);
        }
    }
    for (&i, t) in &mut logs.phase_ends {
        *t = t.saturating_add(by[logs.pieces[i].pe as usize]);
    }
    for c in &mut logs.creations {
        c.time_ps = c.time_ps.saturating_add(by[c.pe as usize]);
    }
    for (pe, spans) in logs.outside_spans.iter_mut().enumerate() {
        for (from, to) in spans {
            *from = from.saturating_add(by[pe]);
            *to = to.saturating_add(by[pe]);
        }
    }
    for (pe, stream) in logs.untraced.iter_mut().enumerate() {
        for ev in stream {
            if let Untraced::Pack { time_ps, .. } = ev {
                *time_ps = time_ps.saturating_add(by[pe]);
            }
        }
    }
}

/// The import note: which PEs' times moved, and by how much.
pub(crate) fn describe(by: &[u64]) -> String {
    use sim_core::SimDuration;
    let base = by[0];
    let moved: Vec<(usize, i128)> = by
        .iter()
        .enumerate()
        .map(|(pe, &s)| (pe, s as i128 - base as i128))
        .filter(|&(_, d)| d != 0)
        .collect();
    let show = |d: i128| {
        let sign = if d < 0 { "-" } else { "+" };
        format!("{sign}{}", SimDuration::from_ps(d.unsigned_abs() as u64))
    };
    let listed: Vec<String> = moved
        .iter()
        .take(4)
        .map(|&(pe, d)| format!("PE {pe} {}", show(d)))
        .collect();
    let more = if moved.len() > 4 {
        let worst = moved.iter().map(|&(_, d)| d.abs()).max().unwrap_or(0);
        format!(
            " and {} more (largest {})",
            moved.len() - 4,
            SimDuration::from_ps(worst as u64)
        )
    } else {
        String::new()
    };
    format!(
        "the PEs' clocks disagree (messages between them arrive before their creation): each PE's log times moved by the smallest offset that leaves none doing so, relative to PE 0: {}{more}",
        listed.join(", ")
    )
}
