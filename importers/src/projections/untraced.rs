//! Messages to untraced entries: who sent what an untraced handler received.
//!
//! Charm++ declares some runtime entries `[notrace]` (8.0.1 `ck-core/ckmulticast.ci`: the
//! section multicast `recvMsg`, `recvPacket`, `sendToLocal` and the section reduction
//! `recvRedMsg`). Their messages leave no CREATION and their handlers no BEGIN_PROCESSING;
//! what remains is the packing of each such message at its sender (BEGIN_PACK inside the
//! sending piece, not right after a CREATION) and its unpacking at its receiver (BEGIN_UNPACK
//! outside any processing, not followed by a BEGIN_PROCESSING), followed by what the handler
//! did: creations (a multicast's local deliveries, a section reduction's result) or packs of
//! its own (forwarding down or up the spanning tree). Neither record names the other end, so
//! the pairs are inferred from the Converse scheduler's order:
//!
//! * **Local first.** A message a PE sends to itself goes to its local queue, which the
//!   scheduler empties before it takes the next message from the network or its own queue
//!   [conv-core/convcore.C, `CsdNextMessage`]. So the untraced receipts that follow a
//!   scheduler step, before the next traced message begins, take that step's untraced sends
//!   in order: each is received on its own PE.
//!   Except that a multicast reaches each PE once: a receipt that delivers an entry its
//!   candidate sender delivered itself (the root's own deliveries) came from elsewhere, and
//!   that send left the PE.
//! * **Remote otherwise.** Sends still unreceived when the next traced message begins went to
//!   another PE; receipts with no local send waiting came from another PE, and so do
//!   handlers that deliver messages (a multicast's local deliveries, a section reduction's
//!   result: they act on a message of the spanning tree). Each such receipt takes the latest
//!   unpaired send from another PE that is not later than it and not older than
//!   [`WINDOW_PS`]. Not the earliest: some packs are never received by an untraced handler
//!   (LeanMD's computes pack two messages per force step and their PE receives one), and a
//!   first-in-first-out pairing would drift onto ever older sends and hide the latency.
//!   A receipt that delivers messages first looks for a multicast copy: an unpaired send of
//!   a piece that delivers the same entry (the multicast's root, or a PE forwarding it down
//!   the tree), the latest not later than it. When the receiver's clock is behind the
//!   sender's, no such send is earlier; a first pairing then also takes the earliest one up
//!   to [`SKEW_PS`] later, only to measure the clocks ([`copy_delays`]): the import shifts the
//!   logs by the clock estimate with those delays and pairs again without later sends (a
//!   send after its receipt began could close a cycle).
//! * **No sender found.** A message that stays on its PE is not packed, so a receipt that
//!   finds no send by these rules may have come from its own PE, leaving no record there.
//!   It was, when the logs are of one PE, and when it delivers a reduction's result (an entry
//!   that takes a `CkReductionMsg`): a section reduction's partials from other PEs are
//!   packed, so its unmatched contribution is a local one (LeanMD +p1: every
//!   `redn_wrapper_reduceForces` result comes right after the last contributing `Compute`'s
//!   piece, with no BEGIN_PACK). Such a receipt is sent by the latest traced piece before it
//!   on its PE, at that piece's end. Any other stays without a sender (on several PEs it may
//!   be a remote message that was not packed, such as the tracing module's shutdown).
//! * **Traced fan-outs.** A receipt that delivers entry E and comes after a CREATION_BCAST or
//!   CREATION_MULTICAST of E on another PE is that broadcast's copy for its PE (the creation
//!   is traced, the runtime's forwarding is not): the creation triggers it.
//!
//! None of these rules can be checked against the log: the pairs are an inference, the notes count
//! them, and a message paired with a slightly later send than its own makes its receipt wait
//! a little longer than it did.

use super::link::SKEW_PS;
use super::log::{Logs, Untraced};
use std::collections::VecDeque;

/// A remote send older than this when a receipt looks for its sender is never paired.
pub(crate) const WINDOW_PS: u64 = 50_000_000_000;

/// Sends examined per receipt beyond the first candidate (bounds the work with many PEs).
const SCAN: usize = 256;

/// The inferred pairs.
#[derive(Default)]
pub(crate) struct Pairs {
    /// (receiving piece, sending piece) on one PE.
    pub(crate) local: Vec<(usize, usize)>,
    /// (receiving piece, sending piece on another PE, time of the send).
    pub(crate) remote: Vec<(usize, usize, u64)>,
    /// Of `remote`, the indices of multicast copies: the sender delivers the entry the
    /// receipt delivers (their delays can tell the clocks apart, [`copy_delays`]).
    pub(crate) copies: Vec<usize>,
    /// Copies paired with a pack later than the receipt (only with `later_copies`).
    pub(crate) later_copies: usize,
    /// (receiving piece, broadcast or multicast creation on another PE it forwards).
    pub(crate) fanout: Vec<(usize, usize)>,
    /// (receiving piece with no sender found, the latest traced piece before it on its PE).
    pub(crate) unpaired: Vec<(usize, usize)>,
}

/// Whether pieces `a` and `b` both create messages for one entry.
fn same_deliveries(logs: &Logs, a: usize, b: usize) -> bool {
    let eps = |p: usize| logs.pieces[p].sends.iter().map(|&c| logs.creations[c].ep);
    eps(a).any(|e| eps(b).any(|f| f == e))
}

/// Pairs every untraced receipt with the send it most likely received.
///
/// `one_pe`: the logs are of a single PE. `reduction_result(ep)`: entry `ep` takes a
/// reduction's result (see "No sender found").
///
/// `later_copies`: a multicast copy may take a pack up to [`SKEW_PS`] later than the receipt
/// when no earlier one is left (the receiver's clock behind the sender's). Such pairs only
/// serve to measure the clocks ([`copy_delays`]): a message sent after its receipt began can
/// close a cycle, so the pairs a trace is built from are made without (`false`), on times
/// the clock estimate corrected.
pub(crate) fn pair(
    logs: &Logs,
    one_pe: bool,
    later_copies: bool,
    reduction_result: impl Fn(i64) -> bool,
) -> Pairs {
    let mut out = Pairs::default();
    // The latest traced piece before each piece on its PE (what a receipt with no sender
    // found follows).
    let mut prev_traced: Vec<Option<usize>> = Vec::with_capacity(logs.pieces.len());
    let mut last: Option<usize> = None;
    for (i, p) in logs.pieces.iter().enumerate() {
        if last.is_some_and(|j| logs.pieces[j].pe != p.pe) {
            last = None;
        }
        prev_traced.push(last);
        if !p.runtime {
            last = Some(i);
        }
    }
    // (time, pe, piece) of sends that left their PE and of receipts that came from another.
    let mut sends: Vec<(u64, u32, usize)> = Vec::new();
    let mut receipts: Vec<(u64, u32, usize)> = Vec::new();
    for (pe, stream) in logs.untraced.iter().enumerate() {
        let pe = pe as u32;
        let mut waiting: VecDeque<(usize, u64)> = VecDeque::new();
        for ev in stream {
            match *ev {
                Untraced::Pack { piece, time_ps } => waiting.push_back((piece, time_ps)),
                Untraced::Step => {
                    sends.extend(waiting.drain(..).map(|(piece, t)| (t, pe, piece)));
                }
                Untraced::Receipt { piece } => {
                    // A multicast reaches each PE once: a handler delivering the entry that
                    // the sending piece delivered itself got another PE's copy, and that
                    // piece's send left its PE.
                    while let Some(&(from, t)) = waiting.front() {
                        if !same_deliveries(logs, piece, from) {
                            break;
                        }
                        waiting.pop_front();
                        sends.push((t, pe, from));
                    }
                    // A handler that delivers messages (a multicast's local deliveries, a
                    // reduction's result) acts on a message from the spanning tree, which
                    // the scheduler takes from the network: its sender is on another PE.
                    let delivers = !logs.pieces[piece].sends.is_empty();
                    match waiting.front().copied().filter(|_| !delivers) {
                        Some((from, _)) => {
                            waiting.pop_front();
                            out.local.push((piece, from));
                        }
                        None => receipts.push((logs.pieces[piece].begin_ps, pe, piece)),
                    }
                }
            }
        }
        sends.extend(waiting.drain(..).map(|(piece, t)| (t, pe, piece)));
    }
    sends.sort_unstable();
    receipts.sort_unstable();
    // Broadcasts and multicasts whose creation is traced but whose handler on each PE is
    // not (the runtime forwards them to the local recipients, e.g. a group broadcast).
    let mut fanouts: Vec<(u64, usize)> = logs
        .creations
        .iter()
        .enumerate()
        .filter(|(_, c)| c.fanout)
        .map(|(k, c)| (c.time_ps, k))
        .collect();
    fanouts.sort_unstable();
    let mut fanout_used: std::collections::HashSet<(usize, u32)> = Default::default();
    receipts.retain(|&(t, pe, piece)| {
        let Some(&first) = logs.pieces[piece].sends.first() else {
            return true;
        };
        let ep = logs.creations[first].ep;
        let end = fanouts.partition_point(|&(ct, _)| ct <= t);
        let found = fanouts[..end]
            .iter()
            .rev()
            .take_while(|&&(ct, _)| ct >= t.saturating_sub(WINDOW_PS))
            .take(SCAN)
            .map(|&(_, k)| k)
            .find(|&k| {
                let c = &logs.creations[k];
                c.ep == ep && c.pe != pe && !fanout_used.contains(&(k, pe))
            });
        match found {
            Some(k) => {
                fanout_used.insert((k, pe));
                out.fanout.push((piece, k));
                false
            }
            None => true,
        }
    });
    let mut used = vec![false; sends.len()];
    let mut next = 0usize; // sends[..next] are not later than the current receipt
    for &(t, pe, piece) in &receipts {
        while next < sends.len() && sends[next].0 <= t {
            next += 1;
        }
        let oldest = t.saturating_sub(WINDOW_PS);
        let earlier = || {
            (0..next)
                .rev()
                .take_while(|&k| sends[k].0 >= oldest)
                .take(SCAN)
        };
        // A multicast's copy for this PE: the sender delivers the same entry on its own PE
        // (the root, or a PE forwarding down the tree). Its pack may seem up to the clock
        // tolerance later than the receipt when this PE's clock is behind.
        let copy =
            |k: usize| !used[k] && sends[k].1 != pe && same_deliveries(logs, piece, sends[k].2);
        let copy_of = || {
            earlier().find(|&k| copy(k)).or_else(|| {
                (next..sends.len())
                    .take_while(|&k| later_copies && sends[k].0 <= t.saturating_add(SKEW_PS))
                    .take(SCAN)
                    .find(|&k| copy(k))
                    .inspect(|_| out.later_copies += 1)
            })
        };
        let delivers = !logs.pieces[piece].sends.is_empty();
        let found = match delivers.then(copy_of).flatten() {
            Some(k) => {
                out.copies.push(out.remote.len());
                Some(k)
            }
            None => earlier().find(|&k| !used[k] && sends[k].1 != pe),
        };
        match found {
            Some(k) => {
                used[k] = true;
                out.remote.push((piece, sends[k].2, sends[k].0));
            }
            None => {
                let result = logs.pieces[piece]
                    .sends
                    .iter()
                    .any(|&c| reduction_result(logs.creations[c].ep));
                if one_pe || result {
                    if let Some(j) = prev_traced[piece] {
                        out.unpaired.push((piece, j));
                    }
                }
            }
        }
    }
    out
}

/// The recorded delays of the multicast copies among `pairs`: `((sender's PE, receiver's PE),
/// receipt begin - send time)`, negative when the receiver's clock is behind. The clock
/// estimate ([`super::clock::offsets`]) takes them with the traced messages' delays: a
/// program whose messages between two PEs are all untraced (a CkMulticast section loop)
/// has no other.
pub(crate) fn copy_delays(logs: &Logs, pairs: &Pairs) -> Vec<((u32, u32), i64)> {
    let signed = |t: u64| i64::try_from(t).unwrap_or(i64::MAX);
    pairs
        .copies
        .iter()
        .map(|&k| {
            let (r, from, at) = pairs.remote[k];
            let (pr, pf) = (&logs.pieces[r], &logs.pieces[from]);
            (
                (pf.pe, pr.pe),
                signed(pr.begin_ps).saturating_sub(signed(at)),
            )
        })
        .collect()
}
