//! Recorded MPI programs to execution blocks under a protocol (see the module docs of
//! [`crate::mpi`]).

use super::matching::Matching;
use super::{Ctx, NIL, NONE_PS, Op, Req};
use crate::ImportError;
use sim_core::{SimDuration, SimTime};
use trace::{Block, BlockId, Destination, EntryId, MsgId, ObjectId, Send};

/// The open segment of the rank being lowered.
struct Open {
    obj: ObjectId,
    entry: EntryId,
    dur_ps: u64,
    deps: Vec<BlockId>,
    sends: Vec<Send>,
    start: u64,
}

fn stamp(t: u64) -> Option<SimTime> {
    (t != NONE_PS).then(|| SimTime::from_ps(t))
}

struct Lowering<'a> {
    cx: &'a mut Ctx,
    m: &'a Matching,
    /// Per send: its receive block, once made.
    r_block: Vec<u32>,
    /// Per send: the sender waits for its transfer to end.
    waited: Vec<bool>,
    /// Per rendezvous send: the blocks ending where it was sent and where its receive was
    /// posted.
    send_point: Vec<u32>,
    post_point: Vec<u32>,
    /// The block ending at the rank's current point, while nothing happened since.
    point: Option<BlockId>,
    /// Receives posted under a stamp, made by the next wait (after the segment it closes),
    /// so that blocks stamped with one time are in the order they run.
    deferred: Vec<(u32, u64)>,
}

impl Lowering<'_> {
    fn rendezvous(&self, i: u32) -> bool {
        !self.cx.protocol.is_eager(self.cx.sends[i as usize].bytes)
    }

    /// The receive block of send `i` (made now if it is not yet), stamped `t`.
    fn receive_block(&mut self, i: u32, t: u64) -> BlockId {
        if self.r_block[i as usize] != NIL {
            return BlockId(self.r_block[i as usize]);
        }
        let s = self.cx.sends[i as usize];
        let mut r = Block::new(ObjectId(s.dst), self.cx.e_msg, SimDuration::ZERO);
        r.trigger = Some(MsgId(self.m.label[i as usize]));
        r.network = self.waited[i as usize];
        r.recorded_start = stamp(t);
        r.recorded_arrival = r.recorded_start;
        let id = self.cx.b.block(r, &[], &[]);
        self.r_block[i as usize] = id.0;
        id
    }

    /// Closes the open segment as a block.
    fn close(&mut self, o: &mut Open) -> BlockId {
        let mut blk = Block::new(o.obj, o.entry, SimDuration::from_ps(o.dur_ps));
        blk.recorded_start = stamp(o.start);
        let id = self.cx.b.block(blk, &o.deps, &o.sends);
        o.sends.clear();
        o.deps.clear();
        o.dur_ps = 0;
        o.start = NONE_PS;
        id
    }

    /// Makes the receives deferred under a stamp.
    fn make_deferred(&mut self) {
        for (i, t) in std::mem::take(&mut self.deferred) {
            self.receive_block(i, t);
        }
    }

    /// A block ending at the rank's current point: the open segment is cut here (unless
    /// nothing happened since the last cut).
    fn point(&mut self, o: &mut Open) -> BlockId {
        if let Some(p) = self.point {
            return p;
        }
        let id = self.close(o);
        o.deps.push(id);
        self.point = Some(id);
        id
    }

    fn op(&mut self, op: Op, o: &mut Open) {
        match op {
            Op::Begin { rank, entry, start } => {
                // (A rank that ended without closing leaves no deferred receive behind.)
                self.make_deferred();
                *o = Open {
                    obj: ObjectId(rank),
                    entry,
                    dur_ps: 0,
                    deps: Vec::new(),
                    sends: Vec::new(),
                    start,
                };
                self.point = None;
            }
            Op::Work(ps) => {
                o.dur_ps = o.dur_ps.saturating_add(ps);
                self.point = None;
            }
            Op::Send(i) => {
                if self.rendezvous(i) {
                    self.send_point[i as usize] = self.point(o).0;
                } else {
                    let s = self.cx.sends[i as usize];
                    o.sends.push(Send {
                        msg: MsgId(self.m.label[i as usize]),
                        offset: SimDuration::from_ps(o.dur_ps),
                        dest: Destination::Object(ObjectId(s.dst)),
                        bytes: self.cx.protocol.wire_bytes(s.bytes),
                        entry: self.cx.e_msg,
                    });
                }
            }
            Op::Post(j) => {
                let i = self.m.send_of[j as usize];
                if self.rendezvous(i) {
                    self.post_point[i as usize] = self.point(o).0;
                }
                let t = self.cx.recvs[j as usize].stamp;
                if t != NONE_PS {
                    self.deferred.push((i, t));
                } else {
                    self.receive_block(i, NONE_PS);
                }
            }
            Op::Wait {
                from,
                len,
                entry,
                stamp,
            } => {
                let id = self.close(o);
                self.make_deferred();
                o.deps.push(id);
                for k in from..from + len {
                    let i = match self.cx.wait_reqs[k as usize] {
                        Req::Recv(j) => self.m.send_of[j as usize],
                        Req::Send(i) => i,
                    };
                    let r = self.receive_block(i, stamp);
                    o.deps.push(r);
                }
                o.entry = entry;
                o.start = stamp;
                self.point = None;
            }
            Op::Cut { entry, stamp } => {
                let id = self.close(o);
                self.make_deferred();
                o.deps.push(id);
                o.entry = entry;
                o.start = stamp;
                self.point = None;
            }
            Op::Rename { entry, start } => {
                o.entry = entry;
                o.start = start;
            }
            Op::Close => {
                let start = o.start;
                self.close(o);
                // Receives posted (under a stamp) but never waited for still consume their
                // messages; they are stamped with the segment's start.
                for (i, _) in std::mem::take(&mut self.deferred) {
                    self.receive_block(i, start);
                }
            }
        }
    }
}

/// Lowers `cx`'s recorded programs into blocks (in `cx.b`) under `cx.protocol`; returns
/// notes on what the protocol did.
pub(crate) fn lower(cx: &mut Ctx, m: &Matching) -> Result<Vec<String>, ImportError> {
    let n = cx.sends.len();
    let mut waited = vec![false; n];
    for r in &cx.wait_reqs {
        if let Req::Send(i) = *r {
            waited[i as usize] = true;
        }
    }
    let ops = std::mem::take(&mut cx.ops);
    let mut l = Lowering {
        cx,
        m,
        r_block: vec![NIL; n],
        waited,
        send_point: vec![NIL; n],
        post_point: vec![NIL; n],
        point: None,
        deferred: Vec::new(),
    };
    let mut o = Open {
        obj: ObjectId(0),
        entry: EntryId(0),
        dur_ps: 0,
        deps: Vec::new(),
        sends: Vec::new(),
        start: NONE_PS,
    };
    for &op in &ops {
        l.op(op, &mut o);
    }
    drop(ops);
    // Transfer blocks of rendezvous messages: on the sender, after the send and the post.
    let e_xfer = (0..n as u32)
        .any(|i| l.rendezvous(i))
        .then(|| l.cx.entry("transfer"));
    let (mut rdv, mut rdv_bytes, mut held) = (0u64, 0u64, 0u64);
    for i in 0..n as u32 {
        let s = l.cx.sends[i as usize];
        held += l.waited[i as usize] as u64;
        if !l.rendezvous(i) {
            continue;
        }
        let (a, b) = (l.send_point[i as usize], l.post_point[i as usize]);
        if a == NIL || b == NIL {
            return Err(ImportError::inconsistent(
                "MPI program",
                format!(
                    "internal error: message {i} from rank {} to rank {} has no send or receive point",
                    s.src, s.dst
                ),
            ));
        }
        rdv += 1;
        rdv_bytes += s.bytes;
        let deps = if a == b {
            vec![BlockId(a)]
        } else {
            vec![BlockId(a.min(b)), BlockId(a.max(b))]
        };
        let mut t = Block::new(
            ObjectId(s.src),
            e_xfer.expect("a rendezvous message exists"),
            SimDuration::ZERO,
        );
        t.network = true;
        let send = Send {
            msg: MsgId(l.m.label[i as usize]),
            offset: SimDuration::ZERO,
            dest: Destination::Object(ObjectId(s.dst)),
            bytes: l.cx.protocol.wire_bytes(s.bytes),
            entry: l.cx.e_msg,
        };
        l.cx.b.block(t, &deps, &[send]);
    }
    let p = l.cx.protocol;
    let mut notes = vec![p.describe()];
    if !p.is_plain_eager() {
        notes.push(format!(
            "{rdv} of {n} messages ({} B) start when their receive is posted (transfer blocks); {held} sends hold their sender until their transfer ends",
            rdv_bytes
        ));
    }
    Ok(notes)
}
