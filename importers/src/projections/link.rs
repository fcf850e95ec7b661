//! From pieces to causes: which object ran each piece, which creation triggered it, which
//! earlier pieces it continues, and where the load-balancing steps are.
//!
//! Rules (Charm++ 8.0.1 sources in brackets):
//!
//! * **Objects.** A piece of a chare array's entry carries the element's index: the object is
//!   that element. An SDAG piece (event -1) belongs to the object of the piece it continues.
//!   Every other piece (groups, node groups, singleton chares, the runtime) belongs to its
//!   PE's object `pe<p>`, which never migrates.
//! * **Triggers.** A BEGIN_PROCESSING names `(srcPe, event)`. It is matched to the creation
//!   with that PE and event number when that creation is for the same entry; else to a
//!   creation of the same event number *and entry* on another PE (an array broadcast: the
//!   array manager of each PE delivers it to its local elements with its own PE as source but
//!   the creating PE's event number [ck-core/ckarray.C, `recvBroadcast`]); else to the
//!   creation `(srcPe, event)` for another entry (the runtime forwarding a message to the
//!   entry that handles it, e.g. an array's creation broadcast to its elements'
//!   constructors). Creations later than the delivery (beyond a 1 ms clock tolerance) never
//!   match. Source PEs outside `0..PEs` other than -1 are garbage in the log (a resumed
//!   thread's envelope, e.g. `dummy_thread_ep`): such a piece has no trigger.
//! * **SDAG.** charmxi logs every `serial` and the SDAG runtime tail (`SDAG_RTS`) with event
//!   -1 and the own PE [xlat-i/sdag/CSdagConstruct.C:587,606]: they run inside the entry
//!   invocation just before them on the PE, so they depend on that piece. A `when` clause
//!   that finds its message already buffered consumes it in such a chain: the serial then also
//!   depends on the piece that delivered (and buffered) the message. Which entry a serial's
//!   `when` waits for is learned from the chains where the message arrived to a waiting
//!   `when` (entry piece directly followed by the serial); buffered messages are consumed in
//!   arrival order per object.
//! * **Repeated consumption** of one message by one object (a `[threaded]` entry resumed, or
//!   an entry resumed after a nested one [trace-projections.C, `endExecute`]): the later piece
//!   has no trigger and depends on the previous piece of that message. A `dummy_thread_ep`
//!   piece (a thread resuming) under a message its PE already ran belongs to that message's
//!   last consumer there.
//! * **AMPI.** AMPI renames the thread chare `AMPI` and its entry `rank`: the MPI ranks run
//!   as such threads. Its arrays `ampi`, `ampiParent` and `TCharm` are bound (elements of
//!   one index share a PE and migrate together): their elements of index `r` are one object,
//!   `ampi[r]`, MPI rank `r`. AMPI's message handlers (`ampi::generic`, `rednResult`, ...)
//!   take a message in whenever it arrives: their entries are outside object order. One that
//!   wakes the rank triggers its resume; one that does not took the message in before the
//!   rank waited for it, and the later piece of the rank that used it depends on it (the end
//!   of its next wait for such a message, a poll, or a reduction's result it waited for
//!   first: `ampi_buffered_messages`). A collective point waits for the ranks' pieces, not
//!   their handlers.
//! * **Threads.** A thread is woken by an awaken record: a creation for `dummy_thread_ep`
//!   (e.g. in `FutureBOC::SetFuture`), which the resume piece (`dummy_thread_ep`) names
//!   [ck-core/ck.C, `CthAwaken` traced by `traceAwaken`]. A resume piece whose envelope
//!   names another entry's creation, none, or a PE that does not exist is stale (a thread
//!   resumed after a yield keeps an old or uninitialised envelope): it has no trigger and
//!   follows the piece before it on its PE. The threaded entry's piece resumed right after a
//!   resume piece (a repeated consumption) also depends on it, so it waits for whatever woke
//!   the thread (F8 of the second Charm++ check: it depended only on its previous piece).
//!   A piece that runs in a thread writes the thread's id in its id fields (11.0, entries
//!   that are not an array's: the thread's PE, then a serial number; zeros are no id;
//!   `SDAG_RTS` writes its element's index there instead): it also depends on the previous
//!   piece of that thread, whose state it continues (a thread waiting on several futures
//!   resumes several times, each time after other work). A resume woken by an array
//!   element's block (an AMPI rank's message handler or reduction result) runs in that
//!   element's thread: it belongs to that element's object, and so do its repeated pieces.
//!   A piece of a non-array entry matched to the creation of an array element's entry (the
//!   runtime forwarding it) that writes an index in its id fields is the array manager
//!   running the element's entry inline: `CkArray::recvBroadcast` starts a `[threaded]`
//!   entry reached by a broadcast in its own piece. It belongs to that element, and the
//!   thread's later pieces (the same ids) follow it there.
//! * **Collective points.** A reduction contribution and `AtSync()` are local calls, not
//!   messages: the PE's partial reduction (or its result), and the resumption after a
//!   load-balancing step, leave from whichever local element comes last. A piece that sends
//!   for a reduction or load-balancing chare (`CkReductionMgr`, `CkNodeReductionMgr`,
//!   `CkSyncBarrier`, the balancers), or a reduction's result (any entry that takes a
//!   `CkReductionMsg`: a `redn_wrapper_*`, or a plain entry named by the callback, such as
//!   kNeighbor's `Main::nextStep(CkReductionMsg*)`), or in which a phase ends, therefore
//!   depends on the latest earlier piece of every array element on its PE. A contribution
//!   is where its send is, usually at the end of the contributor's piece, and `AtSync()`
//!   where the phase ends (END_PHASE): a piece whose collective point comes after it began
//!   is split there ([`Tail`]), and only its tail (from that point on) waits for the others,
//!   so its own work before it does not (the fourth Charm++ check: AMPI ranks on 2 PEs each
//!   computing before an `MPI_Allreduce` ran one after the other's end).
//! * **Load-balancing steps.** Charm++ ends a trace phase (END_PHASE) at every load-balancing
//!   step. Pieces are labelled with their phase (the trace's iterations), and each array
//!   element's last piece of a phase that ended on its PE is its sync point (`lb_sync`).

use super::log::{Index, Logs};
use super::sts::Sts;
use std::collections::{HashMap, VecDeque};

/// Creations this much later than a delivery (clock differences between PEs' logs) may
/// still be its cause.
pub(crate) const SKEW_PS: u64 = 1_000_000_000;

/// Chares whose messages leave from a collective point (reductions, load balancing).
const COLLECTIVE_CHARES: [&str; 10] = [
    "CkReductionMgr",
    "CkNodeReductionMgr",
    "CkSyncBarrier",
    "LBManager",
    "CentralLB",
    "TreeLB",
    "DistBaseLB",
    "DistributedLB",
    "HybridBaseLB",
    "MetaBalancer",
];

/// AMPI's message handlers on a rank's `ampi` element [ampi.ci]: each takes a message in
/// for the rank (and wakes its thread if the rank waits for it). The point-to-point ones
/// (the first three) run when the message arrives, not in the rank's order: their entries are
/// outside object order.
const AMPI_HANDLERS: [&str; 8] = [
    "ampi::generic",
    "ampi::genericSync",
    "ampi::genericRdma",
    "ampi::bcastResult",
    "ampi::rednResult",
    "ampi::irednResult",
    "ampi::barrierResult",
    "ampi::ibarrierResult",
];

/// Whether entry `ep` is one of AMPI's message handlers ([`AMPI_HANDLERS`]).
pub(crate) fn is_ampi_handler(sts: &Sts, ep: i64) -> bool {
    sts.entries
        .get(&ep)
        .is_some_and(|e| AMPI_HANDLERS.contains(&e.name.as_str()))
}

/// Whether entry `ep` is one of AMPI's point-to-point message handlers (the first three of
/// [`AMPI_HANDLERS`]): those are outside object order. A collective's result reaches each
/// rank in the collective, after its own part, so its handler keeps its rank's order; taken
/// out of it, `bcastResult` let coll's +p2 GreedyLB log replay 11 % slower than in its
/// recorded order at every latency (2 us: 592.5 against 532.2 ms), for no message it
/// waited for.
pub(crate) fn is_ampi_point_to_point(sts: &Sts, ep: i64) -> bool {
    sts.entries
        .get(&ep)
        .is_some_and(|e| AMPI_HANDLERS[..3].contains(&e.name.as_str()))
}

/// Who ran a piece.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Obj {
    /// The PE's own object: groups, singleton chares, the runtime.
    Pe(u32),
    /// A chare array element: the array's chare id and the index.
    Elem(i64, Index),
}

/// How the triggers were found (counts for the notes).
#[derive(Default)]
pub(crate) struct Stats {
    pub(crate) direct: usize,
    pub(crate) broadcast: usize,
    pub(crate) forwarded: usize,
    pub(crate) unmatched: usize,
    pub(crate) garbage_src: usize,
    pub(crate) worst_src: i64,
    pub(crate) negative_src: usize,
    pub(crate) repeated: usize,
    /// Thread resume pieces (`dummy_thread_ep`) whose envelope names no awaken record.
    pub(crate) stale_resumes: usize,
    /// Resumed threaded entries that wait for the resume piece before them.
    pub(crate) resumed_after_wake: usize,
    /// Pieces that continue their thread's previous piece (by the thread id on the record).
    pub(crate) thread_continued: usize,
    /// Thread resumes woken by an array element's block: that element's thread.
    pub(crate) thread_of_element: usize,
    /// An array manager's pieces running an element's entry (its index on the record).
    pub(crate) inline_element: usize,
    /// AMPI messages taken in before the rank waited for them, used by the piece that ends
    /// its next wait for such a message.
    pub(crate) ampi_buffered: usize,
    /// AMPI messages taken in early and found by a piece woken by another entry's handler
    /// (an `MPI_Wait` after an `MPI_Allreduce`).
    pub(crate) ampi_found: usize,
    /// AMPI messages taken in early and used by a piece the rank's own yield resumed (it
    /// polls: `MPI_Test`, `MPI_Iprobe`).
    pub(crate) ampi_polled: usize,
    /// AMPI messages taken in early that no later wait took: the rank's next piece uses them.
    pub(crate) ampi_left: usize,
    pub(crate) sdag: usize,
    pub(crate) sdag_buffered: usize,
    pub(crate) sync_blocks: usize,
    pub(crate) collective: usize,
    /// Collective points split where they are reached ([`Tail`]).
    pub(crate) collective_split: usize,
    pub(crate) skewed: usize,
    pub(crate) worst_skew_ps: u64,
    pub(crate) untraced_local: usize,
    pub(crate) untraced_remote: usize,
    pub(crate) untraced_unpaired: usize,
    /// Receipts with no send found, sent by the latest traced piece before them on their PE.
    pub(crate) untraced_followed: usize,
    pub(crate) received: usize,
    /// Silent untraced handlers that a later acting handler on their PE waits for.
    pub(crate) absorbed: usize,
}

pub(crate) struct Linked {
    pub(crate) obj: Vec<Obj>,
    pub(crate) trigger: Vec<Option<usize>>,
    pub(crate) deps: Vec<Vec<usize>>,
    /// Pieces whose collective point comes after they began, by piece: from that point on,
    /// a block of its own (the tail) waits for the other local elements' latest pieces.
    pub(crate) tails: HashMap<usize, Tail>,
    pub(crate) lb_sync: Vec<bool>,
    /// Whether the logs mark phases (then every piece's iteration is its phase).
    pub(crate) phased: bool,
    pub(crate) stats: Stats,
}

/// The part of a piece from its collective point (its first send for a reduction's partial
/// or result, or the end of a phase: `AtSync()`) to its end. The local contributions are
/// complete only there, so the tail, not the whole piece, waits for every other local
/// element's latest piece: the work before that point is the element's own.
pub(crate) struct Tail {
    /// Where the tail begins: the first such send's time, or the phase's end.
    pub(crate) at_ps: u64,
    /// The other local elements' latest pieces.
    pub(crate) deps: Vec<usize>,
}

/// Trigger rule that matched.
enum Rule {
    Direct,
    Broadcast,
    Forwarded,
}

fn find_creation(
    logs: &Logs,
    by_pe_event: &HashMap<(u32, i64), usize>,
    by_event_ep: &HashMap<(i64, i64), Vec<usize>>,
    src: u32,
    event: i64,
    ep: i64,
    begin_ps: u64,
) -> Option<(usize, Rule)> {
    let cr = &logs.creations;
    let not_later = |c: usize| cr[c].time_ps <= begin_ps.saturating_add(SKEW_PS);
    let own = by_pe_event
        .get(&(src, event))
        .copied()
        .filter(|&c| not_later(c));
    if let Some(c) = own.filter(|&c| cr[c].ep == ep) {
        return Some((c, Rule::Direct));
    }
    if let Some(list) = by_event_ep.get(&(event, ep)) {
        let before = list
            .iter()
            .copied()
            .filter(|&c| cr[c].time_ps <= begin_ps)
            .max_by_key(|&c| (cr[c].time_ps, c));
        let near = || {
            list.iter()
                .copied()
                .filter(|&c| not_later(c))
                .min_by_key(|&c| (cr[c].time_ps, c))
        };
        if let Some(c) = before.or_else(near) {
            return Some((c, Rule::Broadcast));
        }
    }
    own.map(|c| (c, Rule::Forwarded))
}

/// AMPI's bound arrays: `ampi`, `ampiParent` and `TCharm` elements of one index always share
/// a PE and migrate together (they are bound arrays) [ampi.C, `ampiParent` and `ampi` bound
/// to `TCharm`]: each maps to `ampi`'s chare id, so index `r` is one object, MPI rank `r`.
fn ampi_bound_arrays(sts: &Sts) -> HashMap<i64, i64> {
    let id = |name: &str| {
        sts.chares
            .iter()
            .filter(|(_, c)| c.name == name && c.ndims >= 1)
            .map(|(&i, _)| i)
            .min()
    };
    let (Some(ampi), Some(tcharm)) = (id("ampi"), id("TCharm")) else {
        return HashMap::new();
    };
    let mut m = HashMap::from([(tcharm, ampi)]);
    if let Some(parent) = id("ampiParent") {
        m.insert(parent, ampi);
    }
    m
}

pub(crate) fn link(sts: &Sts, logs: &Logs) -> Linked {
    let n = logs.pieces.len();
    let pes = sts.pes as i64;
    let mut st = Stats::default();
    let is_rts = |ep: i64| sts.chare_of(ep).is_some_and(|(_, c)| c.name == "SDAG");

    let mut by_pe_event: HashMap<(u32, i64), usize> = HashMap::new();
    let mut by_event_ep: HashMap<(i64, i64), Vec<usize>> = HashMap::new();
    // Creations for array elements' entries, by event number.
    let mut by_event_array: HashMap<i64, Vec<usize>> = HashMap::new();
    for (i, c) in logs.creations.iter().enumerate() {
        if sts.array_of(c.ep).is_some() {
            by_event_array.entry(c.event).or_default().push(i);
        }
        // A repeated event number on one PE: the first creation keeps it.
        by_pe_event.entry((c.pe, c.event)).or_insert(i);
        by_event_ep.entry((c.event, c.ep)).or_default().push(i);
    }

    // Objects, and the piece each SDAG piece continues (the previous piece on its PE).
    let bound = ampi_bound_arrays(sts);
    let mut obj = Vec::with_capacity(n);
    let mut prev_on_pe: Vec<Option<usize>> = vec![None; n];
    let mut last: Option<(u32, usize)> = None;
    for (i, p) in logs.pieces.iter().enumerate() {
        let prev = last.filter(|(pe, _)| *pe == p.pe).map(|(_, j)| j);
        prev_on_pe[i] = prev;
        let o = if p.runtime {
            Obj::Pe(p.pe)
        } else if let (Some((chare, _)), Some(ix)) = (sts.array_of(p.ep), p.index) {
            Obj::Elem(bound.get(&chare).copied().unwrap_or(chare), ix)
        } else if p.event == -1 {
            prev.map_or(Obj::Pe(p.pe), |j: usize| obj[j])
        } else {
            Obj::Pe(p.pe)
        };
        obj.push(o);
        if !p.runtime {
            last = Some((p.pe, i));
        }
    }

    // Triggers and repeated consumptions.
    let mut trigger = vec![None; n];
    let mut deps: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut consumed: HashMap<(usize, Obj), usize> = HashMap::new();
    let mut consumer_on_pe: HashMap<(usize, u32), Obj> = HashMap::new();
    // AMPI renames the thread chare `AMPI` and its entry `rank` [ampi.C, `ampiProcInit`].
    let is_thread = |ep: i64| {
        sts.chare_of(ep)
            .is_some_and(|(_, c)| c.name == "dummy_thread_chare" || c.name == "AMPI")
    };
    let mut last_of_thread: HashMap<[i32; 2], usize> = HashMap::new();
    // A thread's resume piece whose envelope names no awaken record (a stale or garbage
    // one): the scheduler reached it after the piece before it on its PE.
    let stale_resume = |i: usize, deps: &mut Vec<Vec<usize>>, st: &mut Stats| {
        st.stale_resumes += 1;
        if let Some(j) = prev_on_pe[i] {
            deps[i].push(j);
        }
    };
    // Untraced messages that did nothing visible (a reduction's partial contribution kept
    // in the runtime's state): the next untraced handler on the PE that acts waits for them.
    let mut silent: Vec<usize> = Vec::new();
    let mut silent_pe = u32::MAX;
    for (i, p) in logs.pieces.iter().enumerate() {
        if p.pe != silent_pe {
            silent.clear();
            silent_pe = p.pe;
        }
        if p.received {
            if p.sends.is_empty() && p.packs.is_empty() {
                silent.push(i);
            } else {
                st.absorbed += silent.len();
                deps[i].append(&mut silent);
            }
        }
        if p.runtime {
            if let Some(j) = p.after {
                deps[i].push(j);
                st.untraced_local += 1;
            }
            if let Some(c) = p.cause {
                trigger[i] = Some(c);
                st.untraced_remote += 1;
            }
            continue;
        }
        // A thread's piece continues the thread's previous piece (its state), wherever the
        // scheduler ran other work in between.
        if let Some(thread) = p.thread().filter(|_| !is_rts(p.ep)) {
            if let Some(j) = last_of_thread.insert(thread, i) {
                if Some(j) != prev_on_pe[i] {
                    deps[i].push(j);
                    st.thread_continued += 1;
                }
                // The thread of an array element (below) stays that element's.
                if let (Obj::Pe(_), o @ Obj::Elem(..)) = (obj[i], obj[j]) {
                    obj[i] = o;
                }
            }
        }
        if p.event == -1 {
            if let Some(j) = prev_on_pe[i] {
                deps[i].push(j);
                st.sdag += 1;
            }
            continue;
        }
        let src = if p.src == -1 {
            continue;
        } else if p.src < 0 || p.src >= pes {
            if is_thread(p.ep) {
                stale_resume(i, &mut deps, &mut st);
            }
            st.garbage_src += 1;
            if p.src < 0 {
                st.negative_src += 1;
            } else {
                st.worst_src = st.worst_src.max(p.src);
            }
            continue;
        } else {
            p.src as u32
        };
        let mut found = find_creation(
            logs,
            &by_pe_event,
            &by_event_ep,
            src,
            p.event,
            p.ep,
            p.begin_ps,
        );
        // An array manager running an element's entry for a broadcast from another PE names
        // its own PE as source: the creation is the array entry's, of that event, elsewhere.
        let array_creation = |c: usize| sts.array_of(logs.creations[c].ep).is_some();
        if src == p.pe
            && p.thread().is_some()
            && !is_thread(p.ep)
            && sts.array_of(p.ep).is_none()
            && !found.as_ref().is_some_and(|(c, _)| array_creation(*c))
        {
            if let Some(&c) = by_event_array.get(&p.event).and_then(|l| {
                l.iter()
                    .filter(|&&c| logs.creations[c].pe != p.pe)
                    .filter(|&&c| logs.creations[c].time_ps <= p.begin_ps.saturating_add(SKEW_PS))
                    .max_by_key(|&&c| (logs.creations[c].time_ps, c))
            }) {
                found = Some((c, Rule::Forwarded));
            }
        }
        match found {
            None if is_thread(p.ep) => stale_resume(i, &mut deps, &mut st),
            None => st.unmatched += 1,
            // A thread is woken by its own awaken record (a creation for `dummy_thread_ep`,
            // e.g. in `SetFuture`); an envelope that names another entry's creation is stale.
            Some((_, Rule::Broadcast | Rule::Forwarded)) if is_thread(p.ep) => {
                stale_resume(i, &mut deps, &mut st)
            }
            Some((c, rule)) => {
                // An array manager running an element's entry inline (a `[threaded]` entry
                // reached by a broadcast starts its thread in `CkArray::recvBroadcast`):
                // the piece is the manager's, for the creation of the element's entry, and
                // writes the element's index in its id fields. It is the element's.
                if let (Rule::Forwarded, Obj::Pe(_), Some((chare, nd))) =
                    (&rule, obj[i], sts.array_of(logs.creations[c].ep))
                {
                    if p.thread().is_some() && !is_thread(p.ep) && nd <= 4 {
                        let mut v = [0i32; 6];
                        v[..nd].copy_from_slice(&p.ids[..nd]);
                        let ix = super::log::Index { len: nd as u8, v };
                        obj[i] = Obj::Elem(bound.get(&chare).copied().unwrap_or(chare), ix);
                        st.inline_element += 1;
                    }
                }
                // A thread resuming (`dummy_thread_ep`) under a message its PE already ran
                // continues the thread of that message's last consumer there; woken by an
                // array element's block (an AMPI rank's `ampi[r]` or `TCharm[r]`), it is
                // that element's thread.
                if is_thread(p.ep) {
                    if let Some(&o) = consumer_on_pe.get(&(c, p.pe)) {
                        obj[i] = o;
                    } else if let o @ Obj::Elem(..) = obj[logs.creations[c].piece] {
                        obj[i] = o;
                        st.thread_of_element += 1;
                    }
                }
                consumer_on_pe.insert((c, p.pe), obj[i]);
                match consumed.get(&(c, obj[i])) {
                    Some(&before) => {
                        deps[i].push(before);
                        consumed.insert((c, obj[i]), i);
                        st.repeated += 1;
                        // A threaded entry resumed: what woke it is the thread's resume
                        // piece just before it on its PE.
                        if let Some(j) = prev_on_pe[i].filter(|&j| {
                            j != before && !is_thread(p.ep) && is_thread(logs.pieces[j].ep)
                        }) {
                            deps[i].push(j);
                            st.resumed_after_wake += 1;
                        }
                    }
                    None => {
                        consumed.insert((c, obj[i]), i);
                        trigger[i] = Some(c);
                        match rule {
                            Rule::Direct => st.direct += 1,
                            Rule::Broadcast => st.broadcast += 1,
                            Rule::Forwarded => st.forwarded += 1,
                        }
                        let sent = logs.creations[c].time_ps;
                        if p.arrival_ps < sent {
                            st.skewed += 1;
                            st.worst_skew_ps = st.worst_skew_ps.max(sent - p.arrival_ps);
                        }
                    }
                }
            }
        }
    }

    ampi_buffered_messages(sts, logs, &obj, &trigger, &mut deps, &mut st);

    // SDAG `when` clauses that find their message buffered. First learn which entry each
    // serial's `when` waits for: the entry of a chain's head when the serial comes first.
    let mut when_of: HashMap<i64, Option<i64>> = HashMap::new();
    for (i, p) in logs.pieces.iter().enumerate() {
        if p.runtime || p.event != -1 || is_rts(p.ep) {
            continue;
        }
        if let Some(h) = prev_on_pe[i].filter(|&h| logs.pieces[h].event != -1) {
            let e = logs.pieces[h].ep;
            when_of
                .entry(p.ep)
                .and_modify(|w| {
                    if *w != Some(e) {
                        *w = None
                    }
                })
                .or_insert(Some(e));
        }
    }
    // Then walk the chains: a head whose chain has no SDAG piece buffered its message; a
    // serial not directly after a head of its `when` entry takes the oldest buffered one.
    let mut buffered: HashMap<(Obj, i64), VecDeque<usize>> = HashMap::new();
    let mut head: Option<usize> = None;
    let mut head_has_sdag = false;
    let close = |head: Option<usize>,
                 has_sdag: bool,
                 buffered: &mut HashMap<(Obj, i64), VecDeque<usize>>| {
        if let Some(h) = head.filter(|&h| !has_sdag && trigger[h].is_some()) {
            let ep = logs.pieces[h].ep;
            if when_of.values().any(|w| *w == Some(ep)) {
                buffered.entry((obj[h], ep)).or_default().push_back(h);
            }
        }
    };
    for (i, p) in logs.pieces.iter().enumerate() {
        if p.runtime {
            continue;
        }
        let new_pe = head.is_some_and(|h| logs.pieces[h].pe != p.pe);
        if p.event != -1 || new_pe {
            close(head, head_has_sdag, &mut buffered);
            head = (p.event != -1).then_some(i);
            head_has_sdag = false;
            continue;
        }
        head_has_sdag = true;
        if is_rts(p.ep) {
            continue;
        }
        let Some(Some(e)) = when_of.get(&p.ep).copied() else {
            continue;
        };
        let direct = prev_on_pe[i] == head && head.is_some_and(|h| logs.pieces[h].ep == e);
        if direct {
            continue;
        }
        if let Some(m) = buffered.get_mut(&(obj[i], e)).and_then(VecDeque::pop_front) {
            if !deps[i].contains(&m) {
                deps[i].push(m);
            }
            st.sdag_buffered += 1;
        }
    }

    // Collective points wait for every local element's latest piece.
    let collective_ep = |ep: i64| {
        sts.entries.get(&ep).is_some_and(|e| {
            let chare = sts.chares.get(&e.chare).map_or("", |c| c.name.as_str());
            COLLECTIVE_CHARES.contains(&chare)
                || e.takes_reduction
                || e.name.contains("::redn_wrapper_")
        })
    };
    let mut latest: HashMap<Obj, usize> = HashMap::new();
    let mut pe_now = u32::MAX;
    let mut collective = 0usize;
    let mut tails = HashMap::new();
    for (i, p) in logs.pieces.iter().enumerate() {
        if p.pe != pe_now {
            latest.clear();
            pe_now = p.pe;
        }
        // A handler of untraced messages follows them: not a collective point.
        let first_collective_ps = (!p.received)
            .then(|| {
                p.sends
                    .iter()
                    .filter(|&&c| collective_ep(logs.creations[c].ep))
                    .map(|&c| logs.creations[c].time_ps)
                    .min()
            })
            .flatten();
        // The collective point: its first such send, or where the phase ended.
        let point_ps = match (first_collective_ps, logs.phase_ends.get(&i).copied()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(at_ps) = point_ps.map(|t| t.min(p.end_ps)) {
            let mut extra: Vec<usize> = latest
                .iter()
                .filter(|(o, _)| **o != obj[i])
                .map(|(_, &j)| j)
                .filter(|j| !deps[i].contains(j))
                .collect();
            extra.sort_unstable();
            if !extra.is_empty() {
                collective += 1;
            }
            // The contribution (or `AtSync()`) is made there: what came before it in the
            // piece is the element's own work.
            if at_ps > p.begin_ps && !extra.is_empty() {
                tails.insert(i, Tail { at_ps, deps: extra });
            } else {
                deps[i].extend(extra);
            }
        }
        // An AMPI rank's message handler contributes nothing (its rank's pieces do).
        if matches!(obj[i], Obj::Elem(..)) && !p.runtime && !is_ampi_handler(sts, p.ep) {
            latest.insert(obj[i], i);
        }
    }
    st.collective = collective;
    st.collective_split = tails.len();

    // Phases: iterations and sync points.
    let phased = logs.phases.iter().any(|&k| k > 0);
    let mut lb_sync = vec![false; n];
    if phased {
        let mut last_of: HashMap<(Obj, u32), usize> = HashMap::new();
        for (i, p) in logs.pieces.iter().enumerate() {
            if matches!(obj[i], Obj::Elem(..)) && !p.runtime {
                last_of.insert((obj[i], p.phase), i);
            }
        }
        for (&(_, k), &i) in &last_of {
            if k < logs.phases[logs.pieces[i].pe as usize] {
                lb_sync[i] = true;
                st.sync_blocks += 1;
            }
        }
    }
    Linked {
        obj,
        trigger,
        deps,
        tails,
        lb_sync,
        phased,
        stats: st,
    }
}

/// How a rank's piece was resumed ([`ampi_buffered_messages`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wake {
    /// By one of its rank's handlers of this entry: the end of a wait for such a message.
    Handler(i64),
    /// By its rank's own piece: a yield (a failed `MPI_Test` or `MPI_Iprobe` yields
    /// [ampi.C]); the rank polls, and may use whatever came in.
    Yield,
    /// Otherwise (no trigger: a repeated consumption, or a message of another object).
    Other,
}

/// AMPI's message handlers run when their message arrives, outside their rank's order
/// ([`AMPI_HANDLERS`]). A handler that wakes the rank is the trigger of the resume; one that
/// does not took the message in before the rank waited for it (a halo that came early). The
/// rank uses it in a later piece, which depends on it:
///
/// * a piece that ends a wait for a message of the handler's entry (woken by a handler of
///   that entry) takes every earlier one of that entry;
/// * a piece resumed by the rank's own yield (polling) takes every earlier one;
/// * a piece woken by a handler of another entry (a reduction's result) takes the earlier
///   ones of the entries its rank's next piece does not wait for: when that next piece ends
///   a wait for such a message, the rank waited for it after this piece (a halo exchange's
///   `MPI_Waitall` after the computation the reduction's result started), else this piece
///   found it in (an `MPI_Wait` after an `MPI_Allreduce`);
/// * what no piece took by the end: the rank's next piece after it.
fn ampi_buffered_messages(
    sts: &Sts,
    logs: &Logs,
    obj: &[Obj],
    trigger: &[Option<usize>],
    deps: &mut [Vec<usize>],
    st: &mut Stats,
) {
    let pieces = &logs.pieces;
    let cr = &logs.creations;
    if !pieces.iter().any(|p| is_ampi_handler(sts, p.ep)) {
        return;
    }
    // The elements' pieces in recorded time order (a rank may migrate between PEs).
    let mut order: Vec<usize> = (0..pieces.len())
        .filter(|&i| !pieces[i].runtime && matches!(obj[i], Obj::Elem(..)))
        .collect();
    order.sort_by_key(|&i| (pieces[i].begin_ps, pieces[i].pe, i));
    let mut seq = vec![0usize; pieces.len()];
    for (k, &i) in order.iter().enumerate() {
        seq[i] = k;
    }
    let handler = |i: usize| is_ampi_handler(sts, pieces[i].ep);
    let wake = |i: usize| {
        let Some(c) = trigger[i] else {
            return Wake::Other;
        };
        let waker = cr[c].piece;
        if obj[waker] != obj[i] {
            Wake::Other
        } else if handler(waker) {
            Wake::Handler(pieces[waker].ep)
        } else {
            Wake::Yield
        }
    };
    // Per rank: its other pieces in order.
    let mut ordered: HashMap<Obj, Vec<usize>> = HashMap::new();
    for &i in order.iter().filter(|&&i| !handler(i)) {
        ordered.entry(obj[i]).or_default().push(i);
    }
    let next_of = |i: usize| {
        let list = &ordered[&obj[i]];
        list.get(list.partition_point(|&j| seq[j] <= seq[i]))
            .copied()
    };
    // Per rank: its handlers' pieces not yet used.
    let mut pending: HashMap<Obj, Vec<usize>> = HashMap::new();
    for &i in &order {
        let p = &pieces[i];
        let o = obj[i];
        if handler(i) {
            let wakes = p.sends.iter().any(|&c| {
                sts.chare_of(cr[c].ep)
                    .is_some_and(|(_, ch)| ch.name == "AMPI" || ch.name == "dummy_thread_chare")
            });
            if !wakes {
                pending.entry(o).or_default().push(i);
            }
            continue;
        }
        let w = wake(i);
        let then = next_of(i).map(wake);
        let Some(list) = pending.get_mut(&o) else {
            continue;
        };
        list.retain(|&h| {
            let ep = pieces[h].ep;
            let takes = match w {
                Wake::Handler(e) if e == ep => {
                    st.ampi_buffered += 1;
                    true
                }
                Wake::Handler(_) if then != Some(Wake::Handler(ep)) => {
                    st.ampi_found += 1;
                    true
                }
                Wake::Yield => {
                    st.ampi_polled += 1;
                    true
                }
                _ => false,
            };
            if takes && !deps[i].contains(&h) {
                deps[i].push(h);
            }
            !takes
        });
    }
    // What no piece took: the rank's next piece after it.
    let mut left: Vec<usize> = pending.into_values().flatten().collect();
    left.sort_unstable_by_key(|&h| seq[h]);
    for h in left {
        if let Some(j) = ordered.get(&obj[h]).and_then(|list| {
            list.get(list.partition_point(|&j| seq[j] < seq[h]))
                .copied()
        }) {
            deps[j].push(h);
            st.ampi_left += 1;
        }
    }
}
