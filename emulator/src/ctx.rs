//! What an entry method can do: send, broadcast, contribute, mark, declare work.

use crate::model::{Callback, Coll, Index, Message, ObjRef, ReduceOp};
use sim_core::SimDuration;
use std::time::Instant;

/// How block durations are obtained.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Timing {
    /// Wall-clock time of each entry method on the host (monotonic clock). Entry methods do
    /// their real work; [`Ctx::work`] spins for the declared time.
    Measured,
    /// The durations the program declares with [`Ctx::work`] and [`Ctx::cost`]; no real
    /// work is needed (deterministic traces).
    #[default]
    Model,
}

impl std::str::FromStr for Timing {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "measured" => Ok(Timing::Measured),
            "model" => Ok(Timing::Model),
            o => Err(format!("unknown timing `{o}`; expected measured or model")),
        }
    }
}

/// Which reduction stream a contribution belongs to.
pub(crate) const STREAM_USER: u8 = 0;
pub(crate) const STREAM_SYNC: u8 = 1;

/// A message as the runtime carries it. Reduction messages are boxed: they are one per
/// tree node per reduction, where user messages are most of a run's items, and an item's
/// size grows with its payload's (at most 32 bytes for a stencil-like message, a unit test checks;
/// with the reduction fields inline, items were 120).
#[derive(Debug)]
pub(crate) enum Payload<M> {
    User(M),
    /// A partial reduction result from a child in the reduction tree.
    Contrib(Box<Reduction<M>>),
    /// A reduction completed at this element (a continuation block, no message); its
    /// `blocks` are the contributing blocks, the continuation's dependencies.
    Done(Box<Reduction<M>>),
    /// All elements reached `at_sync`.
    Resume,
}

/// A reduction's partial or complete result.
#[derive(Debug)]
pub(crate) struct Reduction<M> {
    pub stream: u8,
    pub seq: u32,
    pub value: f64,
    pub op: ReduceOp,
    pub bytes: u64,
    pub cb: Option<Callback<M>>,
    /// With [`Payload::Done`]: the contributing blocks and their effective receive times
    /// (empty in a [`Payload::Contrib`]).
    pub blocks: Vec<(u32, u64)>,
}

impl<M> Payload<M> {
    /// A continuation's dependencies: blocks and their effective receive times (none for a
    /// message).
    pub(crate) fn deps(&self) -> &[(u32, u64)] {
        match self {
            Payload::Done(r) => &r.blocks,
            _ => &[],
        }
    }
}

/// One message an entry method sent.
#[derive(Debug)]
pub(crate) struct Out<M> {
    pub offset_ps: u64,
    pub to: ObjRef,
    pub bytes: u64,
    pub prio: i32,
    pub payload: Payload<M>,
}

/// A contribution an entry method made.
#[derive(Debug)]
pub(crate) struct Contribution<M> {
    pub stream: u8,
    pub value: f64,
    pub op: ReduceOp,
    pub bytes: u64,
    pub cb: Option<Callback<M>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Clock {
    Model,
    Wall,
}

/// The runtime as an entry method sees it.
#[derive(Debug)]
pub struct Ctx<'a, M> {
    pub(crate) me: ObjRef,
    pub(crate) coll: Coll,
    pub(crate) pe: u32,
    pub(crate) pes: u32,
    pub(crate) clock: Clock,
    /// When the entry method started: wall-clock timing only (model timing reads no clock).
    pub(crate) t0: Option<Instant>,
    pub(crate) model_ps: u64,
    pub(crate) outs: &'a mut Vec<Out<M>>,
    pub(crate) contribs: &'a mut Vec<Contribution<M>>,
    pub(crate) iteration: Option<u32>,
    pub(crate) lb_sync: bool,
}

impl<M: Message> Ctx<'_, M> {
    /// This object.
    pub fn me(&self) -> ObjRef {
        self.me
    }
    /// The collection this object belongs to.
    pub fn coll(&self) -> Coll {
        self.coll
    }
    /// This object's coordinates in its collection.
    pub fn index(&self) -> Index {
        self.coll.index_of(self.me.0 - self.coll.base)
    }
    /// The PE this object was placed on at start.
    pub fn pe(&self) -> u32 {
        self.pe
    }
    /// Number of (virtual) PEs.
    pub fn num_pes(&self) -> u32 {
        self.pes
    }
    /// Whether entry methods should do their real work: false when emulating with
    /// [`Timing::Model`], where durations come from [`Ctx::work`] / [`Ctx::cost`] alone.
    pub fn real_work(&self) -> bool {
        self.clock == Clock::Wall
    }
    /// Time since the entry method started (declared time in model timing), in ps.
    pub(crate) fn elapsed_ps(&self) -> u64 {
        match self.clock {
            Clock::Model => self.model_ps,
            Clock::Wall => self.t0.map_or(0, |t0| {
                (t0.elapsed().as_nanos() as u64).saturating_mul(1000)
            }),
        }
    }
    /// Work of duration `d` happens here: in model timing the block's clock advances by `d`;
    /// otherwise the host spins for `d` (a synthetic grain of work).
    pub fn work(&mut self, d: SimDuration) {
        match self.clock {
            Clock::Model => self.model_ps = self.model_ps.saturating_add(d.as_ps()),
            Clock::Wall => {
                let until = std::time::Duration::from_nanos(d.as_ps() / 1000);
                let t = Instant::now();
                while t.elapsed() < until {
                    std::hint::spin_loop();
                }
            }
        }
    }
    /// Declares the modelled cost `d` of real work the entry method does itself: in model
    /// timing the block's clock advances by `d`; otherwise nothing (the real work is timed).
    pub fn cost(&mut self, d: SimDuration) {
        if self.clock == Clock::Model {
            self.model_ps = self.model_ps.saturating_add(d.as_ps());
        }
    }
    /// Sends `msg` (`bytes` bytes on the wire) to `to`.
    pub fn send(&mut self, to: ObjRef, bytes: u64, msg: M) {
        self.send_prio(to, bytes, 0, msg);
    }
    /// Sends `msg` with a priority (smaller runs first when the scheduler honours priorities).
    pub fn send_prio(&mut self, to: ObjRef, bytes: u64, prio: i32, msg: M) {
        let offset_ps = self.elapsed_ps();
        self.outs.push(Out {
            offset_ps,
            to,
            bytes,
            prio,
            payload: Payload::User(msg),
        });
    }
    /// Sends a copy of `msg` to every element of `c` (recorded as one message per element).
    pub fn broadcast(&mut self, c: Coll, bytes: u64, msg: M)
    where
        M: Clone,
    {
        for o in c.elements() {
            self.send(o, bytes, msg.clone());
        }
    }
    /// Contributes `value` to the next reduction over this object's collection. When every
    /// element has contributed, `cb` receives the combined value. Partial results travel up a
    /// tree (elements of a PE to the PE's first element, then a 4-ary tree over PEs), each hop
    /// a message of `bytes` bytes.
    pub fn contribute(&mut self, value: f64, op: ReduceOp, bytes: u64, cb: Callback<M>) {
        self.contribs.push(Contribution {
            stream: STREAM_USER,
            value,
            op,
            bytes,
            cb: Some(cb),
        });
    }
    /// Marks this block as a load-balancing sync point. Once every element of the collection
    /// has called it, each receives [`crate::Chare::resume_from_sync`] (a barrier through the
    /// same tree as [`Ctx::contribute`], with 8-byte messages).
    pub fn at_sync(&mut self) {
        self.lb_sync = true;
        self.contribs.push(Contribution {
            stream: STREAM_SYNC,
            value: 0.0,
            op: ReduceOp::Sum,
            bytes: 8,
            cb: None,
        });
    }
    /// Marks this block as part of iteration `k` (per-iteration times use the latest end of
    /// the blocks of each iteration).
    pub fn iteration(&mut self, k: u32) {
        self.iteration = Some(k);
    }
}
