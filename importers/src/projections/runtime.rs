//! The runtime's own work between entry methods.
//!
//! A PE of a Charm++ run is, at every moment, in an entry method (a piece), idle
//! (BEGIN_IDLE..END_IDLE), flushing its log, or in the runtime: the scheduler taking the next
//! message, unpacking it, creating chares, polling the network. The last is in no record of
//! its own, so a replay of the entry methods alone runs faster than the recording: by 1.8% in
//! stencil3d +p1, 7% in kNeighbor +p1, 15% in kNeighbor +p2, and by more than half in programs
//! of microsecond entry methods (a recursive fib of singleton chares, manyToMany).
//!
//! That work is what it takes to get each entry method going, so it is taken into the piece
//! that follows it: the piece's *lead* is the time since the latest of its PE's previous
//! piece's end, the end of its PE's last idle period or log flush, the creation of the
//! message that triggered it (the runtime cannot handle a message before it exists) and the
//! end of the pieces it depends on; and at most the CPU time the process spent between the
//! previous entry method's end and this one's begin (11.0 logs write both), since time the
//! operating system took the process off the CPU is nobody's work (fib +p2: a 7.165 ms gap
//! with 88 us of CPU time). The
//! block then starts that much earlier, lasts that much longer, and sends that much later
//! after its start; where it moves, the work moves with it. Only when the gaps can be told
//! from idleness: some log has idle records, or there is one PE (a hand-written log without
//! idle records is read as before). A PE's first piece has no lead (start-up).

use super::link::Linked;
use super::log::Logs;

/// The leads and what they add up to.
pub(crate) struct Leads {
    /// Per piece, the runtime's work before it (ps).
    pub(crate) lead_ps: Vec<u64>,
    total_ps: u64,
    pieces: u64,
    /// The PE whose span has the largest share of lead, and that share.
    worst: (usize, f64),
}

/// The runtime's work before every piece, or `None` when the logs cannot tell it from
/// idleness or there is none.
pub(crate) fn leads(logs: &Logs, linked: &Linked) -> Option<Leads> {
    let pes = logs.outside_spans.len();
    if !(logs.has_idle || pes == 1) {
        return None;
    }
    let n = logs.pieces.len();
    let mut lead_ps = vec![0u64; n];
    // Per PE its pieces in time order (log order on ties).
    let mut by_pe: Vec<Vec<usize>> = vec![Vec::new(); pes];
    for (i, p) in logs.pieces.iter().enumerate() {
        by_pe[p.pe as usize].push(i);
    }
    let (mut total_ps, mut pieces, mut worst) = (0u64, 0u64, (0usize, 0.0f64));
    for (pe, list) in by_pe.iter_mut().enumerate() {
        list.sort_by_key(|&i| (logs.pieces[i].begin_ps, i));
        let spans = &logs.outside_spans[pe];
        let mut k = 0usize;
        let mut prev_end: Option<u64> = None;
        let mut prev_cpu_end: Option<u64> = None;
        let mut pe_lead = 0u64;
        for &i in list.iter() {
            let p = &logs.pieces[i];
            let mut floor = prev_end;
            while k < spans.len() && spans[k].1 <= p.begin_ps {
                floor = Some(floor.map_or(spans[k].1, |f| f.max(spans[k].1)));
                k += 1;
            }
            let inside_span = spans.get(k).is_some_and(|&(from, _)| from < p.begin_ps);
            if let (Some(f), false) = (floor, inside_span) {
                // Nor before the pieces it depends on have ended (on another PE, for a
                // collective point or an untraced message).
                let created = linked.trigger[i].map_or(0, |c| logs.creations[c].time_ps);
                let deps_end = linked.deps[i]
                    .iter()
                    .map(|&j| logs.pieces[j].end_ps)
                    .max()
                    .unwrap_or(0);
                let mut lead = p.begin_ps.saturating_sub(f.max(created).max(deps_end));
                // Work takes CPU time: a wall-clock gap the process spent off the CPU
                // (descheduled by the OS) is not the runtime's.
                if let (Some(cb), Some(ce)) = (p.cpu_begin_ps, prev_cpu_end) {
                    lead = lead.min(cb.saturating_sub(ce));
                }
                lead_ps[i] = lead;
                pe_lead = pe_lead.saturating_add(lead);
            }
            let end = p.end_ps.saturating_add(p.paused_ps);
            prev_end = Some(prev_end.map_or(end, |e| e.max(end)));
            if !p.runtime {
                prev_cpu_end = p.cpu_end_ps;
            }
        }
        total_ps = total_ps.saturating_add(pe_lead);
        pieces += list.len() as u64;
        if let (Some(&first), Some(end)) = (list.first(), prev_end) {
            let span = end.saturating_sub(logs.pieces[first].begin_ps).max(1);
            let share = pe_lead as f64 / span as f64;
            if share > worst.1 {
                worst = (pe, share);
            }
        }
    }
    (total_ps > 0).then_some(Leads {
        lead_ps,
        total_ps,
        pieces,
        worst,
    })
}

impl Leads {
    /// The import note.
    pub(crate) fn describe(&self) -> String {
        use sim_core::SimDuration;
        let per_piece_ns = (self.total_ps / self.pieces.max(1) + 500) / 1000;
        format!(
            "the runtime's work between entry methods (scheduling, message handling, chare creation, network polling: a PE's time in no entry method, idle period or log flush) took {} in all, {per_piece_ns} ns per block on average and {:.1}% of PE {}'s span at most: it is taken into the block that follows it (which starts that much earlier and carries it wherever it is placed), at most the CPU time the process spent in between (time off the CPU is nobody's work), so a replay at the recorded settings lasts as the recording did less that time",
            SimDuration::from_ps(self.total_ps),
            self.worst.1 * 100.0,
            self.worst.0
        )
    }
}
