//! The in-memory trace: objects, entry methods, groups and execution blocks.

use crate::error::ValidationError;
use crate::ids::{BlockId, EntryId, GroupId, MsgId, ObjectId, PeId};
use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};
use std::ops::Range;

/// Facts about how and where a trace was produced.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceMeta {
    /// Short name, e.g. `halo3d-10x10x10`.
    pub name: String,
    /// What produced it, e.g. `whatif gen halo3d --dims 10x10x10 ...`.
    pub generator: String,
    /// Free text.
    pub description: String,
    /// Number of PEs the trace was recorded on (objects' `recorded_pe` are below this).
    pub recorded_pes: u32,
    /// The network model spec the producer assumed (replay's default `--net`), if any.
    pub net: Option<String>,
    /// The root seed the producer used, if it used randomness.
    pub seed: Option<u64>,
    /// CPU-speed factor the replay applies by default to durations and send offsets (a ratio
    /// such as `0.5` or `1/3`: target CPU time per recorded time), e.g. when the trace was
    /// recorded on a host slower or faster than the target. `None`: 1.
    pub cpu_scale: Option<String>,
    /// Every object is a sequential entity whose blocks must run in trace order (its state
    /// carries over from block to block, as for Charm++ chares and MPI ranks). The replay then
    /// makes each block wait for the previous block of its object, so a block never runs
    /// before the messages its object consumed earlier (a computation triggered by the last
    /// of several messages still waits for the others). Set by the emulator.
    #[serde(default)]
    pub sequential_objects: bool,
}

/// An entry method (a handler a message can invoke).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryMethod {
    /// Its name, e.g. `compute` or `recvGhost`.
    pub name: String,
}

/// A migratable object: a chare, an array element or an MPI rank.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectInfo {
    /// Its name, e.g. `rank[12]` or `block(1,2,3)`.
    pub name: String,
    /// The PE it ran on when the trace was recorded.
    pub recorded_pe: PeId,
}

/// A multicast group of objects.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Group {
    /// The member objects.
    pub members: Vec<ObjectId>,
}

/// Where a message goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Destination {
    /// One object.
    Object(ObjectId),
    /// Every member of a group.
    Group(GroupId),
    /// Every object (broadcast).
    All,
    /// Every object but one (BigSim's "broadcast except").
    AllExcept(ObjectId),
}

impl Destination {
    /// Whether `object` receives a message sent to this destination.
    pub fn includes(&self, object: ObjectId, groups: &[Group]) -> bool {
        match *self {
            Destination::Object(o) => o == object,
            Destination::Group(g) => groups
                .get(g.index())
                .is_some_and(|g| g.members.contains(&object)),
            Destination::All => true,
            Destination::AllExcept(o) => o != object,
        }
    }
}

/// A message sent during a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Send {
    /// Its label, unique in the trace; receiving blocks name it as their trigger.
    pub msg: MsgId,
    /// When it leaves, measured from the start of the sending block (at most its duration).
    pub offset: SimDuration,
    /// Where it goes.
    pub dest: Destination,
    /// Payload size in bytes.
    pub bytes: u64,
    /// The entry method it invokes at the destination.
    pub entry: EntryId,
}

/// One non-preemptive run of an entry method on an object. Its dependencies and sends are
/// stored in the [`Trace`] ([`Trace::deps`], [`Trace::sends`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    /// The object it ran on.
    pub object: ObjectId,
    /// The entry method it executed.
    pub entry: EntryId,
    /// Its recorded execution time (before CPU-speed scaling).
    pub duration: SimDuration,
    /// The message whose arrival starts it, or `None` for a block that needs no message.
    pub trigger: Option<MsgId>,
    /// The iteration it belongs to (used for per-iteration times), if any.
    pub iteration: Option<u32>,
    /// The object reaches a load-balancing sync point (`at_sync`) in this block.
    pub lb_sync: bool,
    /// Scheduling priority when replaying with priorities: smaller runs first (Charm++ style).
    pub priority: i32,
    /// When it started in the recorded run, if known.
    pub recorded_start: Option<SimTime>,
    /// When its trigger message arrived in the recorded run, if known. With the sender's
    /// `recorded_start` and the send offset this gives the message's recorded delay, which a
    /// replay can use instead of a network model (`ReplayConfig::recorded_delays`).
    pub recorded_arrival: Option<SimTime>,
}

impl Block {
    /// A block with no trigger, marker or priority.
    pub fn new(object: ObjectId, entry: EntryId, duration: SimDuration) -> Self {
        Block {
            object,
            entry,
            duration,
            trigger: None,
            iteration: None,
            lb_sync: false,
            priority: 0,
            recorded_start: None,
            recorded_arrival: None,
        }
    }
}

/// A complete trace. Blocks, their dependency lists and their sends are stored flat
/// (compressed-sparse-row), so a trace of millions of blocks costs a few allocations.
///
/// Invariants (checked by [`Trace::validate`], which every decoder and the builder run):
/// references are in range; a block's dependencies are earlier blocks; a send leaves within its
/// block; message labels are unique; a block's trigger, if sent, is addressed to the block's
/// object; no two blocks of one object consume the same message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// Where the trace came from.
    pub meta: TraceMeta,
    /// Entry methods, indexed by [`EntryId`].
    pub entries: Vec<EntryMethod>,
    /// Objects, indexed by [`ObjectId`].
    pub objects: Vec<ObjectInfo>,
    /// Multicast groups, indexed by [`GroupId`].
    pub groups: Vec<Group>,
    blocks: Vec<Block>,
    deps_end: Vec<u32>,
    sends_end: Vec<u32>,
    deps: Vec<BlockId>,
    sends: Vec<Send>,
}

impl Trace {
    /// An empty trace.
    pub fn new(meta: TraceMeta) -> Self {
        Trace {
            meta,
            ..Default::default()
        }
    }

    /// Appends a block; returns its id. References are checked later by [`Trace::validate`].
    ///
    /// # Panics
    /// If the trace would exceed 2^32 - 1 blocks, dependencies or sends.
    pub fn push_block(&mut self, block: Block, deps: &[BlockId], sends: &[Send]) -> BlockId {
        let id = BlockId(u32::try_from(self.blocks.len()).expect("more than 2^32 blocks"));
        self.blocks.push(block);
        self.deps.extend_from_slice(deps);
        self.sends.extend_from_slice(sends);
        self.deps_end
            .push(u32::try_from(self.deps.len()).expect("more than 2^32 dependencies"));
        self.sends_end
            .push(u32::try_from(self.sends.len()).expect("more than 2^32 sends"));
        id
    }

    /// Number of blocks.
    pub fn num_blocks(&self) -> usize {
        self.blocks.len()
    }
    /// Number of sends (message entries) over all blocks.
    pub fn num_sends(&self) -> usize {
        self.sends.len()
    }
    /// All blocks in id order.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }
    /// One block.
    pub fn block(&self, id: BlockId) -> &Block {
        &self.blocks[id.index()]
    }
    /// The range of `id`'s dependencies in the flat dependency array.
    pub fn dep_range(&self, id: BlockId) -> Range<usize> {
        let i = id.index();
        let start = if i == 0 {
            0
        } else {
            self.deps_end[i - 1] as usize
        };
        start..self.deps_end[i] as usize
    }
    /// The range of `id`'s sends in [`Trace::all_sends`].
    pub fn send_range(&self, id: BlockId) -> Range<usize> {
        let i = id.index();
        let start = if i == 0 {
            0
        } else {
            self.sends_end[i - 1] as usize
        };
        start..self.sends_end[i] as usize
    }
    /// The blocks that must finish before `id` may start.
    pub fn deps(&self, id: BlockId) -> &[BlockId] {
        &self.deps[self.dep_range(id)]
    }
    /// The messages `id` sends.
    pub fn sends(&self, id: BlockId) -> &[Send] {
        &self.sends[self.send_range(id)]
    }
    /// Every send of the trace, grouped by block in block order.
    pub fn all_sends(&self) -> &[Send] {
        &self.sends
    }
    /// Every dependency edge, grouped by block in block order.
    pub fn all_deps(&self) -> &[BlockId] {
        &self.deps
    }
    /// Iterator over block ids.
    pub fn block_ids(&self) -> impl Iterator<Item = BlockId> + use<> {
        (0..self.blocks.len() as u32).map(BlockId)
    }
    /// Index from message label to the send that carries it.
    pub fn message_index(&self) -> MessageIndex {
        MessageIndex::new(&self.sends)
    }
    /// The sending block of every send (index into [`Trace::all_sends`] -> block id).
    pub fn send_blocks(&self) -> Vec<u32> {
        let mut v = Vec::with_capacity(self.sends.len());
        for (b, &end) in self.sends_end.iter().enumerate() {
            v.resize(end as usize, b as u32);
        }
        v
    }
    /// Who each send triggers: for send `s`, the blocks whose trigger it is are
    /// `blocks[start[s]..start[s + 1]]`, in block order (one for point-to-point, one per
    /// receiving object for broadcasts and groups).
    pub fn consumers(&self) -> Consumers {
        let index = self.message_index();
        let n_sends = self.sends.len();
        let trigger_send: Vec<u32> = self
            .blocks
            .iter()
            .map(|b| {
                b.trigger
                    .and_then(|m| index.lookup(m))
                    .map_or(u32::MAX, |s| s as u32)
            })
            .collect();
        let mut start = vec![0u32; n_sends + 1];
        for &s in &trigger_send {
            if s != u32::MAX {
                start[s as usize + 1] += 1;
            }
        }
        for i in 0..n_sends {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut blocks = vec![0u32; start[n_sends] as usize];
        for (b, &s) in trigger_send.iter().enumerate() {
            if s != u32::MAX {
                blocks[fill[s as usize] as usize] = b as u32;
                fill[s as usize] += 1;
            }
        }
        Consumers {
            start,
            blocks,
            trigger_send,
        }
    }

    /// Checks every invariant listed on [`Trace`].
    pub fn validate(&self) -> Result<(), ValidationError> {
        let bad = |s: String| Err(ValidationError(s));
        let n_obj = self.objects.len();
        if n_obj > 0 && self.meta.recorded_pes == 0 {
            return bad("recorded_pes is 0 but the trace has objects".into());
        }
        for (i, o) in self.objects.iter().enumerate() {
            if o.recorded_pe.0 >= self.meta.recorded_pes {
                return bad(format!(
                    "object {i} ({}) was recorded on {} but the trace has only {} PEs",
                    o.name, o.recorded_pe, self.meta.recorded_pes
                ));
            }
        }
        for (i, g) in self.groups.iter().enumerate() {
            if g.members.is_empty() {
                return bad(format!("group {i} has no members"));
            }
            if let Some(m) = g.members.iter().find(|m| m.index() >= n_obj) {
                return bad(format!(
                    "group {i} names {m}, but there are {n_obj} objects"
                ));
            }
        }
        let n_entries = self.entries.len();
        for id in self.block_ids() {
            let b = self.block(id);
            if b.object.index() >= n_obj {
                return bad(format!(
                    "{id} runs on {}, but there are {n_obj} objects",
                    b.object
                ));
            }
            if b.entry.index() >= n_entries {
                return bad(format!(
                    "{id} runs {}, but there are {n_entries} entries",
                    b.entry
                ));
            }
            if let Some(d) = self.deps(id).iter().find(|d| **d >= id) {
                return bad(format!(
                    "{id} depends on {d}, which is not an earlier block"
                ));
            }
            for s in self.sends(id) {
                if s.offset > b.duration {
                    return bad(format!(
                        "{id} sends {} at offset {}, after its end ({})",
                        s.msg, s.offset, b.duration
                    ));
                }
                if s.entry.index() >= n_entries {
                    return bad(format!("{id} sends {} to missing {}", s.msg, s.entry));
                }
                match s.dest {
                    Destination::Object(o) | Destination::AllExcept(o) if o.index() >= n_obj => {
                        return bad(format!("{id} sends {} to missing {o}", s.msg));
                    }
                    Destination::Group(g) if g.index() >= self.groups.len() => {
                        return bad(format!("{id} sends {} to missing {g}", s.msg));
                    }
                    _ => {}
                }
            }
        }
        let index = self.message_index();
        if let Some(m) = index.duplicate() {
            return bad(format!("message label {m} is sent more than once"));
        }
        let mut consumed: Vec<(MsgId, ObjectId, BlockId)> = Vec::new();
        for id in self.block_ids() {
            let b = self.block(id);
            let Some(m) = b.trigger else { continue };
            if let Some(si) = index.lookup(m) {
                let s = &self.sends[si];
                if !s.dest.includes(b.object, &self.groups) {
                    return bad(format!(
                        "{id} on {} is triggered by {m}, which is addressed to {:?}",
                        b.object, s.dest
                    ));
                }
            }
            consumed.push((m, b.object, id));
        }
        consumed.sort_unstable();
        for w in consumed.windows(2) {
            if w[0].0 == w[1].0 && w[0].1 == w[1].1 {
                return bad(format!(
                    "{} and {} on {} are both triggered by {}",
                    w[0].2, w[1].2, w[0].1, w[0].0
                ));
            }
        }
        Ok(())
    }
}

/// The consumers of every send, in compressed-sparse-row form ([`Trace::consumers`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Consumers {
    /// `start[s]..start[s + 1]` is send `s`'s range in `blocks` (length: sends + 1).
    pub start: Vec<u32>,
    /// Consumer block ids, grouped by send.
    pub blocks: Vec<u32>,
    /// Per block, the send that triggers it (`u32::MAX`: none, or a label no block sends).
    pub trigger_send: Vec<u32>,
}

/// Maps message labels to send indices. When labels are exactly `0..n` in send order (as the
/// generators emit), lookups are a bounds check; otherwise a binary search.
#[derive(Clone, Debug)]
pub struct MessageIndex {
    dense: usize,
    sorted: Vec<(MsgId, u32)>,
}

impl MessageIndex {
    fn new(sends: &[Send]) -> Self {
        if sends.iter().enumerate().all(|(i, s)| s.msg.0 == i as u64) {
            return MessageIndex {
                dense: sends.len(),
                sorted: Vec::new(),
            };
        }
        let mut sorted: Vec<(MsgId, u32)> = sends
            .iter()
            .enumerate()
            .map(|(i, s)| (s.msg, i as u32))
            .collect();
        sorted.sort_unstable();
        MessageIndex { dense: 0, sorted }
    }
    /// The index (into [`Trace::all_sends`]) of the send carrying `msg`.
    pub fn lookup(&self, msg: MsgId) -> Option<usize> {
        if self.sorted.is_empty() {
            return (msg.0 < self.dense as u64).then_some(msg.0 as usize);
        }
        self.sorted
            .binary_search_by_key(&msg, |e| e.0)
            .ok()
            .map(|p| self.sorted[p].1 as usize)
    }
    fn duplicate(&self) -> Option<MsgId> {
        self.sorted
            .windows(2)
            .find(|w| w[0].0 == w[1].0)
            .map(|w| w[0].0)
    }
}

/// Builds a trace: allocates ids and message labels, then validates.
#[derive(Debug)]
pub struct TraceBuilder {
    trace: Trace,
    next_msg: u64,
}

impl TraceBuilder {
    /// Starts a trace.
    pub fn new(meta: TraceMeta) -> Self {
        TraceBuilder {
            trace: Trace::new(meta),
            next_msg: 0,
        }
    }
    /// Adds an entry method.
    pub fn entry(&mut self, name: impl Into<String>) -> EntryId {
        self.trace.entries.push(EntryMethod { name: name.into() });
        EntryId(self.trace.entries.len() as u32 - 1)
    }
    /// Adds an object recorded on `pe`.
    pub fn object(&mut self, name: impl Into<String>, pe: PeId) -> ObjectId {
        self.trace.objects.push(ObjectInfo {
            name: name.into(),
            recorded_pe: pe,
        });
        ObjectId(self.trace.objects.len() as u32 - 1)
    }
    /// Adds a multicast group.
    pub fn group(&mut self, members: Vec<ObjectId>) -> GroupId {
        self.trace.groups.push(Group { members });
        GroupId(self.trace.groups.len() as u32 - 1)
    }
    /// A fresh message label. Labels are handed out as 0, 1, 2, ...; a generator that uses them
    /// for its sends in order gets the dense fast path of [`MessageIndex`].
    pub fn new_msg(&mut self) -> MsgId {
        self.next_msg += 1;
        MsgId(self.next_msg - 1)
    }
    /// Appends a block.
    pub fn block(&mut self, block: Block, deps: &[BlockId], sends: &[Send]) -> BlockId {
        self.trace.push_block(block, deps, sends)
    }
    /// Blocks added so far.
    pub fn num_blocks(&self) -> usize {
        self.trace.num_blocks()
    }
    /// Validates and returns the trace.
    pub fn finish(self) -> Result<Trace, ValidationError> {
        self.trace.validate()?;
        Ok(self.trace)
    }
}
