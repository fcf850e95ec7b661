//! MPI semantics shared by the importers of MPI traces (SimGrid TI, OTF2).
//!
//! An importer *records* each rank's MPI program through [`Ctx`] (work, non-blocking sends
//! and receives, waits; collectives through [`expand`]), rank after rank. [`Ctx::finish`]
//! then matches every receive to a send ([`matching`]) and *lowers* the programs into
//! execution blocks under an [`MpiProtocol`] ([`lower`]):
//!
//! * **Ranks are objects** (`rank<r>` on PE `r`). A rank's execution is a chain of *segment*
//!   blocks: one per stretch of work between the points where it must wait (a wait on a
//!   receive, or on a send that does not complete at once) and, under a rendezvous protocol,
//!   also cut at the points where a rendezvous message is sent or its receive is posted.
//!   Segments are named after the call that opened them (`init`, `recv`, `wait`, `bcast`, ...).
//! * **Receives.** Every message has a zero-time *receive block* (entry `msg`) on the
//!   receiver, triggered by the message: the transfer's end. A wait depends on the receive
//!   blocks of the receives it waits for.
//! * **Eager messages** (the protocol's eager class) are sent from the sender's segment at the
//!   offset reached when the send is issued.
//! * **Rendezvous messages** are sent by a *transfer block* (entry `transfer`, a network
//!   block: no PE, no time) of the sender that depends on the segment ending where the send
//!   was issued and on the segment ending where the matching receive was posted: the transfer
//!   starts at the later of the two, as in SimGrid (a transfer starts when both sides have
//!   posted) and in MPI rendezvous protocols.
//! * **Sends that do not complete at once** (above the protocol's detached size): the wait
//!   that completes the send (a blocking send's own, or the wait on a non-blocking send's
//!   request) depends on the message's receive block, which is then a network block, so
//!   the sender is released when the transfer ends, whatever its receiver is doing.
//! * **Matching**: the k-th send from `a` to `b` with tag `t` is received by the k-th receive
//!   at `b` naming source `a` and tag `t` (MPI's non-overtaking order). Receives from any
//!   source or with any tag are matched in posting order: each takes, among the first
//!   unmatched message of every channel it accepts (and that later specific receives do not
//!   need), the one whose sender had done the least work when it sent it (ties: lower rank,
//!   then lower tag): an estimate of which arrives first, since a trace records no times.
//!
//! Collectives become point-to-point messages ([`Coll`], [`expand`]): whatif's algorithms or
//! those SimGrid 3.32's default selector picks ([`Collectives`]). Non-blocking collectives
//! post all their messages at the call and complete at a wait, as SimGrid runs them
//! ([`nbc`]).

mod colls;
mod lower;
mod matching;
mod nbc;
pub mod protocol;

pub(crate) use colls::{Coll, expand};
pub use colls::{Collectives, alltoall_ompi_algorithm};
pub(crate) use nbc::{is_simgrid_nbc_tag, post as post_nbc, simgrid_nbc_tag};
pub use protocol::{MpiProtocol, Profile};

use crate::ImportError;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use trace::{EntryId, PeId, TraceBuilder};

/// A fast, deterministic hasher for small integer keys (multiply and rotate, as rustc's
/// FxHash): the channel table is looked up for every message.
#[derive(Default)]
pub(crate) struct FxHasher(u64);

impl Hasher for FxHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(i as u64);
    }
    fn write_i64(&mut self, i: i64) {
        self.write_u64(i as u64);
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// A receive from any source.
pub(crate) const ANY_SOURCE: u32 = u32::MAX;
/// A receive with any (non-negative) tag.
pub(crate) const ANY_TAG: i64 = i64::MIN;
/// "None" in `u32` fields.
pub(crate) const NIL: u32 = u32::MAX;
/// "No recorded time" in `u64` time fields.
pub(crate) const NONE_PS: u64 = u64::MAX;

/// A rank's request: its `i`-th send or receive (indices into the whole run's tables).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Req {
    Send(u32),
    Recv(u32),
}

/// One point-to-point send.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SendRec {
    pub(crate) src: u32,
    pub(crate) dst: u32,
    /// Payload bytes.
    pub(crate) bytes: u64,
    /// Its channel `(src, dst, tag)` and its number in it.
    pub(crate) chan: u32,
    pub(crate) k: u32,
    /// The sender's work (ps) before it: an estimate of when it leaves, for wildcards.
    pub(crate) work_ps: u64,
    pub(crate) mode: SendMode,
}

/// How a send completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SendMode {
    /// As the protocol says for its size (`MPI_Send`, `MPI_Isend`).
    Standard,
    /// Never at once (`MPI_Ssend`).
    Synchronous,
    /// Always at once (`MPI_Bsend`).
    Buffered,
}

/// One receive.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RecvRec {
    pub(crate) dst: u32,
    /// The source, or [`ANY_SOURCE`].
    pub(crate) src: u32,
    /// The tag, or [`ANY_TAG`].
    pub(crate) tag: i64,
    /// Its channel, or [`NIL`] for a wildcard receive.
    pub(crate) chan: u32,
    /// Recorded time its receive block is stamped with, or [`NONE_PS`].
    pub(crate) stamp: u64,
}

/// One step of a rank's program, as the lowering replays it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Op {
    /// A rank's program starts: its first segment runs `entry`, recorded to start at `start`.
    Begin {
        rank: u32,
        entry: EntryId,
        start: u64,
    },
    /// Work (ps) in the open segment.
    Work(u64),
    /// A send is issued (index into the sends).
    Send(u32),
    /// A receive is posted (index into the receives).
    Post(u32),
    /// The rank waits for `wait_reqs[from..from + len]`; the segment after is `entry`,
    /// stamped `stamp`.
    Wait {
        from: u32,
        len: u32,
        entry: EntryId,
        stamp: u64,
    },
    /// The open segment ends here; the next one (`entry`, stamped `stamp`) follows it.
    #[cfg_attr(not(feature = "otf2"), allow(dead_code))]
    Cut { entry: EntryId, stamp: u64 },
    /// The open segment (still empty) is renamed and restamped.
    #[cfg_attr(not(feature = "otf2"), allow(dead_code))]
    Rename { entry: EntryId, start: u64 },
    /// The rank's last segment is complete.
    Close,
}

/// Messages of one channel `(source, destination, tag)`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Channel {
    pub(crate) id: u32,
    pub(crate) sent: u32,
    /// Receives naming this channel exactly.
    pub(crate) recvd: u32,
}

/// Where an importer is in one rank's program.
pub(crate) struct Seg {
    pub(crate) rank: u32,
    /// Entry method of the open segment.
    pub(crate) entry: EntryId,
    /// Work in the open segment so far (ps).
    pub(crate) dur_ps: u64,
    /// The open segment has sent something.
    pub(crate) sent: bool,
    /// The open segment was opened by a wait.
    pub(crate) waited: bool,
    /// Work of the rank so far (ps).
    work_ps: u64,
}

/// The programs of all ranks, recorded rank by rank, and the trace they become.
pub(crate) struct Ctx {
    pub(crate) collectives: Collectives,
    pub(crate) protocol: MpiProtocol,
    pub(crate) b: TraceBuilder,
    pub(crate) e_msg: EntryId,
    entries: HashMap<String, EntryId>,
    /// Recorded time (ps) stamped on what is recorded now: receive blocks get it as recorded
    /// start and arrival, segments opened by a wait as recorded start (OTF2; `None` for
    /// formats without timestamps).
    pub(crate) stamp: Option<u64>,
    /// Waits recorded so far (those that wait for something under the protocol).
    pub(crate) waits: u64,
    pub(crate) ranks: u32,
    pub(crate) ops: Vec<Op>,
    pub(crate) wait_reqs: Vec<Req>,
    pub(crate) sends: Vec<SendRec>,
    pub(crate) recvs: Vec<RecvRec>,
    pub(crate) channels: HashMap<(u32, u32, i64), Channel, BuildHasherDefault<FxHasher>>,
    /// Ranks that post a wildcard receive.
    pub(crate) wildcard_ranks: Vec<bool>,
}

impl Ctx {
    /// A context building `b` for `ranks` ranks: entry `msg` for receive blocks, object
    /// `rank<r>` on PE `r` for every rank.
    pub(crate) fn new(
        mut b: TraceBuilder,
        collectives: Collectives,
        protocol: MpiProtocol,
        ranks: u32,
    ) -> Ctx {
        let e_msg = b.entry("msg");
        for r in 0..ranks {
            b.object(format!("rank{r}"), PeId(r));
        }
        Ctx {
            collectives,
            protocol,
            b,
            e_msg,
            entries: HashMap::new(),
            stamp: None,
            waits: 0,
            ranks,
            ops: Vec::new(),
            wait_reqs: Vec::new(),
            sends: Vec::new(),
            recvs: Vec::new(),
            channels: HashMap::default(),
            wildcard_ranks: vec![false; ranks as usize],
        }
    }

    /// Room for about `ops` steps and `msgs` messages.
    pub(crate) fn reserve(&mut self, ops: usize, msgs: usize) {
        self.ops.reserve(ops);
        self.sends.reserve(msgs);
        self.recvs.reserve(msgs);
    }

    pub(crate) fn entry(&mut self, name: &str) -> EntryId {
        if let Some(&e) = self.entries.get(name) {
            return e;
        }
        let e = self.b.entry(name);
        self.entries.insert(name.to_string(), e);
        e
    }

    /// Starts rank `r`'s program (ranks in order): its first segment runs `entry`, recorded
    /// to start at `start_ps` (formats with timestamps).
    pub(crate) fn begin(&mut self, r: u32, entry: EntryId, start_ps: Option<u64>) -> Seg {
        self.ops.push(Op::Begin {
            rank: r,
            entry,
            start: start_ps.unwrap_or(NONE_PS),
        });
        Seg {
            rank: r,
            entry,
            dur_ps: 0,
            sent: false,
            waited: false,
            work_ps: 0,
        }
    }

    fn channel(&mut self, src: u32, dst: u32, tag: i64) -> &mut Channel {
        let n = self.channels.len() as u32;
        self.channels.entry((src, dst, tag)).or_insert(Channel {
            id: n,
            sent: 0,
            recvd: 0,
        })
    }

    /// Issues a non-blocking send of `bytes` to `dst` with `tag`.
    pub(crate) fn isend(&mut self, s: &mut Seg, dst: u32, tag: i64, bytes: u64) -> Req {
        let c = self.channel(s.rank, dst, tag);
        c.sent += 1;
        let (chan, k) = (c.id, c.sent - 1);
        let i = self.sends.len() as u32;
        self.sends.push(SendRec {
            src: s.rank,
            dst,
            bytes,
            chan,
            k,
            work_ps: s.work_ps,
            mode: SendMode::Standard,
        });
        self.ops.push(Op::Send(i));
        s.sent = true;
        Req::Send(i)
    }

    /// A blocking send: issued, then waited for (which holds the rank only if the protocol
    /// does not complete it at once).
    pub(crate) fn send(&mut self, s: &mut Seg, dst: u32, tag: i64, bytes: u64, name: &str) {
        let r = self.isend(s, dst, tag, bytes);
        self.wait(s, &[r], name);
    }

    /// Posts a receive from `src` (or [`ANY_SOURCE`]) with `tag` (or [`ANY_TAG`]).
    pub(crate) fn irecv(&mut self, s: &Seg, src: u32, tag: i64) -> Req {
        let chan = if src == ANY_SOURCE || tag == ANY_TAG {
            self.wildcard_ranks[s.rank as usize] = true;
            NIL
        } else {
            let c = self.channel(src, s.rank, tag);
            c.recvd += 1;
            c.id
        };
        let j = self.recvs.len() as u32;
        self.recvs.push(RecvRec {
            dst: s.rank,
            src,
            tag,
            chan,
            stamp: self.stamp.unwrap_or(NONE_PS),
        });
        self.ops.push(Op::Post(j));
        Req::Recv(j)
    }

    /// A blocking receive.
    pub(crate) fn recv(&mut self, s: &mut Seg, src: u32, tag: i64, name: &str) {
        let r = self.irecv(s, src, tag);
        self.wait(s, &[r], name);
    }

    /// Both a send and a receive, then a wait for both (`MPI_Sendrecv`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn sendrecv(
        &mut self,
        s: &mut Seg,
        dst: u32,
        stag: i64,
        bytes: u64,
        src: u32,
        rtag: i64,
        name: &str,
    ) {
        let a = self.isend(s, dst, stag, bytes);
        let b = self.irecv(s, src, rtag);
        self.wait(s, &[a, b], name);
    }

    /// Makes send `r` synchronous (`MPI_Ssend`: it completes when its transfer ends).
    pub(crate) fn set_synchronous(&mut self, r: Req) {
        if let Req::Send(i) = r {
            self.sends[i as usize].mode = SendMode::Synchronous;
        }
    }

    /// Makes send `r` buffered (`MPI_Bsend`: it completes at once).
    pub(crate) fn set_buffered(&mut self, r: Req) {
        if let Req::Send(i) = r {
            self.sends[i as usize].mode = SendMode::Buffered;
        }
    }

    /// Whether waiting for `r` can hold the rank: a receive always, a send unless the
    /// protocol (or its mode) completes it at once.
    pub(crate) fn holds(&self, r: Req) -> bool {
        match r {
            Req::Recv(_) => true,
            Req::Send(i) => {
                let s = &self.sends[i as usize];
                match s.mode {
                    SendMode::Standard => !self.protocol.is_detached(s.bytes),
                    SendMode::Synchronous => true,
                    SendMode::Buffered => false,
                }
            }
        }
    }

    /// Waits for `reqs`; the segment after is named `name`. Requests that cannot hold the
    /// rank are left out; when none is left the wait is a no-op. Returns whether it waits.
    pub(crate) fn wait(&mut self, s: &mut Seg, reqs: &[Req], name: &str) -> bool {
        let from = self.wait_reqs.len();
        for &r in reqs {
            if self.holds(r) {
                self.wait_reqs.push(r);
            }
        }
        let len = self.wait_reqs.len() - from;
        if len == 0 {
            return false;
        }
        let entry = self.entry(name);
        self.ops.push(Op::Wait {
            from: from as u32,
            len: len as u32,
            entry,
            stamp: self.stamp.unwrap_or(NONE_PS),
        });
        self.waits += 1;
        s.entry = entry;
        s.dur_ps = 0;
        s.sent = false;
        s.waited = true;
        true
    }

    /// Takes `reqs` back out of the wait recorded as operation `op` (a later `wait` shows
    /// that an earlier `waitall` did not include them; see the SimGrid importer). The wait's
    /// other requests keep their order; a wait left with none only ends its segment there.
    pub(crate) fn release_from_wait(&mut self, op: usize, reqs: &[Req]) {
        let Some(Op::Wait { from, len, .. }) = self.ops.get_mut(op) else {
            return;
        };
        let (from, end) = (*from as usize, (*from + *len) as usize);
        let mut kept = from;
        for k in from..end {
            let r = self.wait_reqs[k];
            if !reqs.contains(&r) {
                self.wait_reqs[kept] = r;
                kept += 1;
            }
        }
        *len = (kept - from) as u32;
    }

    /// The index the next recorded operation gets (see [`Self::release_from_wait`]).
    pub(crate) fn next_op(&self) -> usize {
        self.ops.len()
    }

    /// Ends the open segment here; the next one is named `name` (stamped with the stamp).
    #[cfg_attr(not(feature = "otf2"), allow(dead_code))]
    pub(crate) fn cut(&mut self, s: &mut Seg, name: &str) {
        let entry = self.entry(name);
        self.ops.push(Op::Cut {
            entry,
            stamp: self.stamp.unwrap_or(NONE_PS),
        });
        s.entry = entry;
        s.dur_ps = 0;
        s.sent = false;
        s.waited = false;
    }

    /// Renames the open segment (which has done nothing yet) and sets its recorded start.
    #[cfg_attr(not(feature = "otf2"), allow(dead_code))]
    pub(crate) fn rename(&mut self, s: &mut Seg, name: &str, start_ps: Option<u64>) {
        let entry = self.entry(name);
        self.ops.push(Op::Rename {
            entry,
            start: start_ps.unwrap_or(NONE_PS),
        });
        s.entry = entry;
    }

    /// Adds `ps` of work to the open segment.
    pub(crate) fn work(&mut self, s: &mut Seg, ps: u64) {
        if ps == 0 {
            return;
        }
        s.dur_ps = s.dur_ps.saturating_add(ps);
        s.work_ps = s.work_ps.saturating_add(ps);
        self.ops.push(Op::Work(ps));
    }

    /// The rank's last segment is complete (without it, an open segment is dropped).
    pub(crate) fn close(&mut self) {
        self.ops.push(Op::Close);
    }

    /// Matches every receive (errors name `input` and the first unmatched channel) and
    /// lowers the programs into the trace's blocks; returns the builder and notes.
    pub(crate) fn finish(
        mut self,
        input: &str,
    ) -> Result<(TraceBuilder, Vec<String>), ImportError> {
        let m = matching::match_receives(&self, input)?;
        let notes = lower::lower(&mut self, &m)?;
        Ok((self.b, notes))
    }
}

/// A collective's identity, to check that all ranks call the same one.
pub(crate) fn coll_tag(c: u64, step: u64) -> i64 {
    -1 - ((c << 20) | step) as i64
}
