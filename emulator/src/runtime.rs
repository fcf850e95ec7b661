//! What the emulator and the native run share: object slots, reduction trees and the
//! execution of one message on one object.

use crate::ctx::{Clock, Contribution, Ctx, Out, Payload, Reduction, STREAM_SYNC};
use crate::error::EmuError;
use crate::model::{
    Builder, Callback, Chare, Coll, InitialMap, Message, ObjRef, Program, ReduceOp, Target,
};
use std::time::Instant;

/// Names of the runtime's own entry methods, appended after the program's.
pub const RUNTIME_ENTRIES: [&str; 3] = ["reduction", "reduction_complete", "resume_from_sync"];

pub(crate) const NO_PARENT: u32 = u32::MAX;

#[derive(Debug)]
struct Pending<M> {
    stream: u8,
    seq: u32,
    got: u32,
    value: f64,
    op: ReduceOp,
    bytes: u64,
    cb: Option<Callback<M>>,
    /// Contributing blocks and their effective receive times.
    blocks: Vec<(u32, u64)>,
}

/// One object and its runtime state. Laid out in declaration order, what every block reads
/// (the collection, for its `Ctx`) first, then the object: a program that puts the fields its
/// common entry reads first finds them in the same cache line (at a million objects each
/// line a block touches is a cache miss; `stencil3d`'s `Block` does).
#[derive(Debug)]
#[repr(C)]
pub(crate) struct Slot<O, M> {
    pub coll: Coll,
    next_seq: [u32; 2],
    pub obj: O,
    pending: Vec<Pending<M>>,
}

/// The static shape of a program instance: collections, placement, reduction trees.
#[derive(Debug)]
pub(crate) struct World {
    pub coll_names: Vec<String>,
    pub colls: Vec<Coll>,
    /// Collection of each object.
    pub coll_of: Vec<u32>,
    /// PE of each object.
    pub pe_of: Vec<u32>,
    /// Reduction tree: parent of each object (or `NO_PARENT`) and contributions it waits for
    /// (its own plus one per child).
    pub parent: Vec<u32>,
    pub need: Vec<u32>,
    pub user_entries: u32,
    pub pes: u32,
}

impl World {
    pub fn object_name(&self, o: u32) -> String {
        let c = self.colls[self.coll_of[o as usize] as usize];
        let idx = c.index_of(o - c.base);
        let name = &self.coll_names[c.id as usize];
        match c.dims {
            [_, 1, 1] => format!("{name}[{}]", idx[0]),
            [_, _, 1] => format!("{name}[{},{}]", idx[0], idx[1]),
            _ => format!("{name}[{},{},{}]", idx[0], idx[1], idx[2]),
        }
    }
}

/// A built program: the world, the objects and the start messages.
pub(crate) struct Instance<O, M> {
    pub world: World,
    pub slots: Vec<Slot<O, M>>,
    pub starts: Vec<(ObjRef, M)>,
    /// [`Builder::expect_blocks`]'s total.
    pub expected_blocks: u64,
}

pub(crate) fn instantiate<P: Program>(
    p: &P,
    pes: u32,
    map: InitialMap,
    budget: crate::model::Budget,
) -> Result<Instance<P::Obj, P::Msg>, EmuError> {
    if pes == 0 {
        return Err(EmuError::Config("the machine needs at least one PE".into()));
    }
    let mut b = Builder::new(pes, budget);
    p.build(&mut b)?;
    if let Some(c) = b.colls.iter().find(|c| !c.filled) {
        return Err(EmuError::Program(format!(
            "collection `{}` was declared but never filled",
            c.name
        )));
    }
    let n = b.objects.len();
    let mut coll_of = vec![0u32; n];
    let mut pe_of = vec![0u32; n];
    let mut parent = vec![NO_PARENT; n];
    let mut need = vec![1u32; n];
    for info in &b.colls {
        let c = info.coll;
        let len = c.len();
        // Leader of each PE: its first element. Members report to their leader, leaders form
        // a 4-ary tree in PE order.
        let mut leaders: Vec<(u32, u32)> = Vec::new(); // (pe, object)
        for i in 0..len {
            let o = c.base + i;
            let pe = map.pe(i, len, pes);
            coll_of[o as usize] = c.id;
            pe_of[o as usize] = pe;
            leaders.push((pe, o));
        }
        leaders.sort_unstable();
        leaders.dedup_by_key(|l| l.0);
        // (`leaders` is sorted by PE: no per-PE table, so PEs without objects cost nothing.)
        for (j, &(_, o)) in leaders.iter().enumerate() {
            if j > 0 {
                let par = leaders[(j - 1) / 4].1;
                parent[o as usize] = par;
                need[par as usize] += 1;
            }
        }
        for i in 0..len {
            let o = c.base + i;
            let pe = pe_of[o as usize];
            let l = leaders[leaders.partition_point(|x| x.0 < pe)].1;
            if l != o {
                parent[o as usize] = l;
                need[l as usize] += 1;
            }
        }
    }
    let entries = p.entries();
    let world = World {
        coll_names: b.colls.iter().map(|c| c.name.clone()).collect(),
        colls: b.colls.iter().map(|c| c.coll).collect(),
        coll_of,
        pe_of,
        parent,
        need,
        user_entries: entries.len() as u32,
        pes,
    };
    let colls = world.colls.clone();
    let slots = b
        .objects
        .into_iter()
        .enumerate()
        .map(|(i, o)| {
            Slot::new(
                o.expect("filled collections have every object"),
                colls[world.coll_of[i] as usize],
            )
        })
        .collect();
    for (o, m) in &b.starts {
        if o.0 as usize >= n {
            return Err(EmuError::Program(format!(
                "a start message goes to object {} but there are {n}",
                o.0
            )));
        }
        let e = m.entry();
        if e >= entries.len() {
            return Err(EmuError::Program(format!(
                "a message names entry {e} but the program has {}",
                entries.len()
            )));
        }
    }
    Ok(Instance {
        world,
        slots,
        starts: b.starts,
        expected_blocks: b.expected_blocks,
    })
}

/// A reduction completed at an element: its [`Payload::Done`] continuation, which carries
/// the blocks it depends on (the contributing blocks at this element, with their effective
/// receive times).
pub(crate) type Completion<M> = Payload<M>;

/// The result of running one message.
#[derive(Debug)]
pub(crate) struct Executed<M> {
    pub entry: u32,
    pub dur_ps: u64,
    pub iteration: Option<u32>,
    pub lb_sync: bool,
    pub completions: Vec<Completion<M>>,
}

/// Scratch buffers reused across executions.
#[derive(Debug)]
pub(crate) struct Scratch<M> {
    pub outs: Vec<Out<M>>,
    contribs: Vec<Contribution<M>>,
}

impl<M> Default for Scratch<M> {
    fn default() -> Self {
        Scratch {
            outs: Vec::new(),
            contribs: Vec::new(),
        }
    }
}

impl<O: Chare<Msg = M>, M: Message> Slot<O, M> {
    pub(crate) fn new(obj: O, coll: Coll) -> Self {
        Slot {
            obj,
            coll,
            next_seq: [0; 2],
            pending: Vec::new(),
        }
    }

    /// Adds one contribution `r` (this element's own or a child's partial result) to its
    /// reduction; returns the completion when it was the last one expected here.
    fn accumulate(
        &mut self,
        need: u32,
        mut r: Box<Reduction<M>>,
        block: (u32, u64),
    ) -> Option<Completion<M>> {
        if need == 1 {
            // The only contribution expected here (an element without children in the
            // tree, most of them): complete at once, in the same box, without pending state.
            r.blocks = vec![block];
            return Some(Payload::Done(r));
        }
        let Reduction {
            stream,
            seq,
            value,
            op,
            bytes,
            cb,
            ..
        } = *r;
        let i = match self
            .pending
            .iter()
            .position(|p| p.stream == stream && p.seq == seq)
        {
            Some(i) => {
                let p = &mut self.pending[i];
                p.value = p.op.combine(p.value, value);
                i
            }
            None => {
                // Room for one reduction at a time, the common case, kept for the next: a
                // doubling Vec would keep four (~400 bytes per object, 400 MB at a million).
                if self.pending.capacity() == 0 {
                    self.pending.reserve_exact(1);
                }
                self.pending.push(Pending {
                    stream,
                    seq,
                    got: 0,
                    value,
                    op,
                    bytes: 0,
                    cb: None,
                    blocks: Vec::new(),
                });
                self.pending.len() - 1
            }
        };
        let p = &mut self.pending[i];
        p.got += 1;
        p.bytes = p.bytes.max(bytes);
        if p.cb.is_none() {
            p.cb = cb;
        }
        p.blocks.push(block);
        if p.got < need {
            return None;
        }
        let p = self.pending.remove(i);
        Some(Payload::Done(Box::new(Reduction {
            stream,
            seq,
            value: p.value,
            op: p.op,
            bytes: p.bytes,
            cb: p.cb,
            blocks: p.blocks,
        })))
    }

    /// Reductions that have started here but not completed: `(stream, seq, got)`.
    pub(crate) fn unfinished(&self) -> impl Iterator<Item = (u8, u32, u32)> + '_ {
        self.pending.iter().map(|p| (p.stream, p.seq, p.got))
    }

    /// Runs `payload` on this object (`(me, pe)`: its id and its PE), recording sends into
    /// `scratch.outs` (cleared first). `block` is the id the execution gets in the trace and
    /// its effective receive time (for reduction dependencies). The caller knows the PE:
    /// per-object tables are read only when needed (each is a cache miss at a million
    /// objects).
    pub(crate) fn execute(
        &mut self,
        world: &World,
        (me, pe): (ObjRef, u32),
        payload: Payload<M>,
        clock: Clock,
        block: (u32, u64),
        scratch: &mut Scratch<M>,
    ) -> Executed<M> {
        scratch.outs.clear();
        scratch.contribs.clear();
        let u = world.user_entries;
        let need = || world.need[me.0 as usize];
        let mut ctx = Ctx {
            me,
            coll: self.coll,
            pe,
            pes: world.pes,
            clock,
            t0: (clock == Clock::Wall).then(Instant::now),
            model_ps: 0,
            outs: &mut scratch.outs,
            contribs: &mut scratch.contribs,
            iteration: None,
            lb_sync: false,
        };
        let mut completions = Vec::new();
        let entry = match payload {
            Payload::User(m) => {
                let e = m.entry() as u32;
                self.obj.receive(m, &mut ctx);
                e
            }
            Payload::Resume => {
                self.obj.resume_from_sync(&mut ctx);
                u + 2
            }
            Payload::Contrib(r) => {
                completions.extend(self.accumulate(need(), r, block));
                u
            }
            Payload::Done(mut r) => {
                let (stream, value, bytes, cb) = (r.stream, r.value, r.bytes, r.cb);
                let parent = world.parent[me.0 as usize];
                let offset_ps = ctx.elapsed_ps();
                if parent != NO_PARENT {
                    ctx.outs.push(Out {
                        offset_ps,
                        to: ObjRef(parent),
                        bytes,
                        prio: 0,
                        // The same box travels up the tree, without its dependencies.
                        payload: Payload::Contrib({
                            r.blocks = Vec::new();
                            r
                        }),
                    });
                } else if stream == STREAM_SYNC {
                    for o in self.coll.elements() {
                        ctx.outs.push(Out {
                            offset_ps,
                            to: o,
                            bytes,
                            prio: 0,
                            payload: Payload::Resume,
                        });
                    }
                } else if let Some(cb) = cb {
                    let deliver = |to: ObjRef| Out {
                        offset_ps,
                        to,
                        bytes: cb.bytes,
                        prio: 0,
                        payload: Payload::User((cb.make)(value)),
                    };
                    match cb.target {
                        Target::Object(o) => ctx.outs.push(deliver(o)),
                        Target::Broadcast(c) => {
                            for o in c.elements() {
                                ctx.outs.push(deliver(o));
                            }
                        }
                    }
                }
                u + 1
            }
        };
        let dur_ps = ctx.elapsed_ps();
        let (iteration, lb_sync) = (ctx.iteration, ctx.lb_sync);
        let contribs = std::mem::take(&mut scratch.contribs);
        for c in &contribs {
            let seq = self.next_seq[c.stream as usize];
            self.next_seq[c.stream as usize] += 1;
            let r = Box::new(Reduction {
                stream: c.stream,
                seq,
                value: c.value,
                op: c.op,
                bytes: c.bytes,
                cb: c.cb,
                blocks: Vec::new(),
            });
            completions.extend(self.accumulate(need(), r, block));
        }
        scratch.contribs = contribs;
        Executed {
            entry,
            dur_ps,
            iteration,
            lb_sync,
            completions,
        }
    }
}
