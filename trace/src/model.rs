//! The in-memory trace: objects, entry methods, groups and execution blocks.

use crate::error::ValidationError;
use crate::ids::{BlockId, EntryId, GroupId, MsgId, ObjectId, PeId};
use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};
use std::ops::Range;
use std::sync::OnceLock;

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
    /// Its blocks take no part in their object's sequential order
    /// ([`TraceMeta::sequential_objects`]): a message handler that only takes a message in for
    /// its object, such as an AMPI rank's (`ampi::generic`), which runs whenever the message
    /// arrives. The block that needs the message depends on the handler's block explicitly.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub outside_object_order: bool,
}

impl EntryMethod {
    /// An entry method in its object's order.
    pub fn new(name: impl Into<String>) -> Self {
        EntryMethod {
            name: name.into(),
            outside_object_order: false,
        }
    }
}

/// An object: a chare, an array element or an MPI rank; migratable unless [pinned](Self::pinned).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectInfo {
    /// Its name, e.g. `rank[12]` or `block(1,2,3)`.
    pub name: String,
    /// The PE it ran on when the trace was recorded (its first PE, if it moved).
    pub recorded_pe: PeId,
    /// Where a load balancer moved it during the recorded run, in trace order: from block
    /// `from` on it ran on `pe` (empty: it never moved). A replay with the recorded mapping
    /// runs each block where it was recorded ([`Trace::recorded_block_pes`]).
    #[serde(default, skip_serializing_if = "Moves::none")]
    pub moves: Moves,
    /// It can never migrate: a load balancer leaves it where it is, and a placement that
    /// spreads objects over another PE count puts it where the recorded placement would
    /// (its recorded PE, scaled). What a Charm++ log's per-PE object holds (the main chare,
    /// groups, the runtime) is pinned; chares, array elements and ranks are not.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pinned: bool,
}

/// An object's recorded moves ([`ObjectInfo::moves`]): a list that costs one pointer when
/// empty, as it is for almost every object (a million-rank trace holds a million objects; a
/// `Vec` here made its replay's peak 22 MB larger). Reads as a slice.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "Vec<RecordedMove>", into = "Vec<RecordedMove>")]
// The box is the point: one pointer per object (a `Box<[_]>` would be two words).
#[allow(clippy::box_collection)]
pub struct Moves(Option<Box<Vec<RecordedMove>>>);

impl Moves {
    /// Adds a move after the others.
    pub fn push(&mut self, m: RecordedMove) {
        self.0.get_or_insert_with(Box::default).push(m);
    }
    /// Removes every move.
    pub fn clear(&mut self) {
        self.0 = None;
    }
    /// No move.
    pub fn none(&self) -> bool {
        self.0.is_none()
    }
}

impl std::ops::Deref for Moves {
    type Target = [RecordedMove];
    fn deref(&self) -> &[RecordedMove] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }
}

impl From<Vec<RecordedMove>> for Moves {
    fn from(v: Vec<RecordedMove>) -> Moves {
        Moves((!v.is_empty()).then(|| Box::new(v)))
    }
}

impl From<Moves> for Vec<RecordedMove> {
    fn from(m: Moves) -> Vec<RecordedMove> {
        m.0.map(|b| *b).unwrap_or_default()
    }
}

/// A recorded migration of an object: from its block `from` on (in trace order, its
/// execution order), the object ran on `pe`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedMove {
    /// The first block the object ran on `pe`.
    pub from: BlockId,
    /// The PE it ran on from then on.
    pub pe: PeId,
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
    /// The destination's kind in the binary columns: 0 object, 1 group, 2 all, 3 all-except.
    pub fn kind_code(&self) -> u8 {
        match self {
            Destination::Object(_) => 0,
            Destination::Group(_) => 1,
            Destination::All => 2,
            Destination::AllExcept(_) => 3,
        }
    }

    /// The object or group id in the binary columns (0 for all).
    pub fn id_code(&self) -> u32 {
        match *self {
            Destination::Object(o) | Destination::AllExcept(o) => o.0,
            Destination::Group(g) => g.0,
            Destination::All => 0,
        }
    }

    /// The destination of [`Self::kind_code`] `kind` (0 to 3) and [`Self::id_code`] `id`.
    pub fn from_codes(kind: u8, id: u32) -> Option<Destination> {
        Some(match kind {
            0 => Destination::Object(ObjectId(id)),
            1 => Destination::Group(GroupId(id)),
            2 => Destination::All,
            3 => Destination::AllExcept(ObjectId(id)),
            _ => return None,
        })
    }

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
    /// A network event, not a computation: it takes no time (its duration is 0), occupies
    /// no PE and is never queued behind one; it happens the moment its conditions are met (its
    /// trigger arrived, its dependencies finished) and its sends leave then, from its
    /// object's PE. The MPI importers use it for a rendezvous transfer, which starts when both
    /// the send and its receive are posted, and for a transfer's completion that the sender
    /// waits for (MPI protocol: `importers::mpi`).
    pub network: bool,
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
            network: false,
            recorded_start: None,
            recorded_arrival: None,
        }
    }
}

/// "No value" in the `u64` block columns (triggers, recorded times).
pub const NONE_U64: u64 = u64::MAX;
/// "No iteration" in [`BlockColumns::iteration`].
pub const NO_ITERATION: u32 = u32::MAX;
/// Bit of [`BlockColumns::flags`]: the block is a load-balancing sync point.
pub const FLAG_LB_SYNC: u8 = 1;
/// Bit of [`BlockColumns::flags`]: the block is a network event ([`Block::network`]).
pub const FLAG_NETWORK: u8 = 2;
/// Every defined bit of [`BlockColumns::flags`].
pub const FLAG_ALL: u8 = FLAG_LB_SYNC | FLAG_NETWORK;

/// The blocks of a trace, one column per field (structure of arrays): what a decoder fills
/// and a replay reads in bulk. Optional fields (`iteration`, `priority`, `flags`,
/// `recorded_start`, `recorded_arrival`) are empty when no block has them; absent values are
/// [`NONE_U64`] and [`NO_ITERATION`], which are therefore not valid labels or times.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockColumns {
    /// Object of each block.
    pub object: Vec<u32>,
    /// Entry method of each block.
    pub entry: Vec<u32>,
    /// Recorded duration in picoseconds.
    pub duration_ps: Vec<u64>,
    /// Trigger message label, or [`NONE_U64`].
    pub trigger: Vec<u64>,
    /// Iteration label, or [`NO_ITERATION`] (empty: no block has one).
    pub iteration: Vec<u32>,
    /// Priority (empty: all 0).
    pub priority: Vec<i32>,
    /// Flag bits ([`FLAG_LB_SYNC`], [`FLAG_NETWORK`]; empty: all 0).
    pub flags: Vec<u8>,
    /// Recorded start in picoseconds or [`NONE_U64`] (empty: none recorded).
    pub recorded_start: Vec<u64>,
    /// Recorded trigger arrival in picoseconds or [`NONE_U64`] (empty: none recorded).
    pub recorded_arrival: Vec<u64>,
}

impl BlockColumns {
    fn len(&self) -> usize {
        self.object.len()
    }
    fn get(&self, i: usize) -> Block {
        let opt = |v: &Vec<u64>| match v.get(i) {
            Some(&x) if x != NONE_U64 => Some(SimTime::from_ps(x)),
            _ => None,
        };
        Block {
            object: ObjectId(self.object[i]),
            entry: EntryId(self.entry[i]),
            duration: SimDuration::from_ps(self.duration_ps[i]),
            trigger: match self.trigger[i] {
                NONE_U64 => None,
                m => Some(MsgId(m)),
            },
            iteration: self
                .iteration
                .get(i)
                .copied()
                .filter(|&k| k != NO_ITERATION),
            lb_sync: self.flags.get(i).is_some_and(|f| f & FLAG_LB_SYNC != 0),
            priority: self.priority.get(i).copied().unwrap_or(0),
            network: self.flags.get(i).is_some_and(|f| f & FLAG_NETWORK != 0),
            recorded_start: opt(&self.recorded_start),
            recorded_arrival: opt(&self.recorded_arrival),
        }
    }
    /// Appends `b`; returns a description of a reserved value it uses, if any.
    fn push(&mut self, b: &Block) -> Option<String> {
        let n = self.len();
        self.object.push(b.object.0);
        self.entry.push(b.entry.0);
        self.duration_ps.push(b.duration.as_ps());
        self.trigger.push(b.trigger.map_or(NONE_U64, |m| m.0));
        // An optional column is present once some block has a value (`len == n`).
        fn optional<T: Copy + PartialEq>(col: &mut Vec<T>, n: usize, v: T, zero: T) {
            if v != zero || (n > 0 && col.len() == n) {
                col.resize(n, zero);
                col.push(v);
            }
        }
        optional(
            &mut self.iteration,
            n,
            b.iteration.unwrap_or(NO_ITERATION),
            NO_ITERATION,
        );
        optional(&mut self.priority, n, b.priority, 0);
        optional(
            &mut self.flags,
            n,
            (if b.lb_sync { FLAG_LB_SYNC } else { 0 }) | if b.network { FLAG_NETWORK } else { 0 },
            0,
        );
        let t = |x: Option<SimTime>| x.map_or(NONE_U64, |t| t.as_ps());
        optional(&mut self.recorded_start, n, t(b.recorded_start), NONE_U64);
        optional(
            &mut self.recorded_arrival,
            n,
            t(b.recorded_arrival),
            NONE_U64,
        );
        if b.trigger == Some(MsgId(NONE_U64)) {
            return Some(format!(
                "block{n} is triggered by the reserved label {NONE_U64}"
            ));
        }
        if b.iteration == Some(NO_ITERATION) {
            return Some(format!(
                "block{n} has the reserved iteration label {NO_ITERATION}"
            ));
        }
        if b.recorded_start.map(|t| t.as_ps()) == Some(NONE_U64)
            || b.recorded_arrival.map(|t| t.as_ps()) == Some(NONE_U64)
        {
            return Some(format!(
                "block{n} has the reserved recorded time {NONE_U64} ps"
            ));
        }
        None
    }
}

/// A complete trace. Blocks are stored column by column ([`BlockColumns`]); their dependency
/// lists and sends are stored flat (compressed-sparse-row), so a trace of millions of blocks
/// costs a few allocations and about 36 bytes per block plus 40 per send and 4 per dependency.
///
/// Invariants (checked by [`Trace::validate`], which every decoder and the builder run):
/// references are in range; a block's dependencies are earlier blocks; a send leaves within its
/// block; message labels are unique; a block's trigger, if sent, is addressed to the block's
/// object; no two blocks of one object consume the same message; the reserved values
/// ([`NONE_U64`], [`NO_ITERATION`]) are not used as labels or times.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    /// Where the trace came from.
    pub meta: TraceMeta,
    /// Entry methods, indexed by [`EntryId`].
    pub entries: Vec<EntryMethod>,
    /// Objects, indexed by [`ObjectId`].
    pub objects: Vec<ObjectInfo>,
    /// Multicast groups, indexed by [`GroupId`].
    pub groups: Vec<Group>,
    cols: BlockColumns,
    deps_end: Vec<u32>,
    sends_end: Vec<u32>,
    deps: Vec<BlockId>,
    sends: Vec<Send>,
    /// The first reserved value a pushed block used (reported by [`Trace::validate`]).
    reserved: Option<String>,
    /// Who consumes each send, computed once ([`Trace::consumers`]).
    consumers: OnceLock<Consumers>,
}

impl PartialEq for Trace {
    fn eq(&self, o: &Self) -> bool {
        self.meta == o.meta
            && self.entries == o.entries
            && self.objects == o.objects
            && self.groups == o.groups
            && self.cols == o.cols
            && self.deps_end == o.deps_end
            && self.sends_end == o.sends_end
            && self.deps == o.deps
            && self.sends == o.sends
            && self.reserved == o.reserved
    }
}
impl Eq for Trace {}

/// The raw parts of a trace, for decoders that fill columns in bulk ([`Trace::from_parts`]).
#[derive(Debug, Default)]
pub struct TraceParts {
    /// Metadata.
    pub meta: TraceMeta,
    /// Entry methods.
    pub entries: Vec<EntryMethod>,
    /// Objects.
    pub objects: Vec<ObjectInfo>,
    /// Groups.
    pub groups: Vec<Group>,
    /// Block columns.
    pub cols: BlockColumns,
    /// Per block, the end of its dependencies in `deps`.
    pub deps_end: Vec<u32>,
    /// Dependencies of all blocks.
    pub deps: Vec<BlockId>,
    /// Per block, the end of its sends in `sends`.
    pub sends_end: Vec<u32>,
    /// Sends of all blocks.
    pub sends: Vec<Send>,
}

impl Trace {
    /// An empty trace.
    pub fn new(meta: TraceMeta) -> Self {
        Trace {
            meta,
            ..Default::default()
        }
    }

    /// Assembles a trace from columns and validates it (the column lengths included).
    pub fn from_parts(p: TraceParts) -> Result<Trace, ValidationError> {
        let n = p.cols.len();
        let c = &p.cols;
        let opt_ok = |len: usize| len == 0 || len == n;
        if c.entry.len() != n
            || c.duration_ps.len() != n
            || c.trigger.len() != n
            || !opt_ok(c.iteration.len())
            || !opt_ok(c.priority.len())
            || !opt_ok(c.flags.len())
            || !opt_ok(c.recorded_start.len())
            || !opt_ok(c.recorded_arrival.len())
            || p.deps_end.len() != n
            || p.sends_end.len() != n
        {
            return Err(ValidationError("block columns of different lengths".into()));
        }
        let ends_ok = |ends: &[u32], total: usize| {
            ends.windows(2).all(|w| w[0] <= w[1])
                && ends.last().map_or(total == 0, |&e| e as usize == total)
        };
        if !ends_ok(&p.deps_end, p.deps.len()) || !ends_ok(&p.sends_end, p.sends.len()) {
            return Err(ValidationError(
                "dependency or send ranges out of order or not covering their lists".into(),
            ));
        }
        let t = Trace {
            meta: p.meta,
            entries: p.entries,
            objects: p.objects,
            groups: p.groups,
            cols: p.cols,
            deps_end: p.deps_end,
            sends_end: p.sends_end,
            deps: p.deps,
            sends: p.sends,
            reserved: None,
            consumers: OnceLock::new(),
        };
        t.validate()?;
        Ok(t)
    }

    /// Bytes this trace holds on the heap (column capacities, names, groups and the consumer
    /// index once computed): what keeping it in memory costs, for memory estimates.
    pub fn heap_bytes(&self) -> u64 {
        fn vec<T>(v: &Vec<T>) -> u64 {
            (v.capacity() * std::mem::size_of::<T>()) as u64
        }
        let c = &self.cols;
        let cols = vec(&c.object)
            + vec(&c.entry)
            + vec(&c.duration_ps)
            + vec(&c.trigger)
            + vec(&c.iteration)
            + vec(&c.priority)
            + vec(&c.flags)
            + vec(&c.recorded_start)
            + vec(&c.recorded_arrival);
        let consumers = self
            .consumers
            .get()
            .map_or(0, |k| vec(&k.start) + vec(&k.blocks) + vec(&k.trigger_send));
        self.without_blocks_ref_bytes()
            + cols
            + vec(&self.deps_end)
            + vec(&self.sends_end)
            + vec(&self.deps)
            + vec(&self.sends)
            + consumers
    }

    /// Bytes of the header alone on the heap (metadata, entries, objects, groups).
    pub(crate) fn without_blocks_ref_bytes(&self) -> u64 {
        fn vec<T>(v: &Vec<T>) -> u64 {
            (v.capacity() * std::mem::size_of::<T>()) as u64
        }
        let m = &self.meta;
        let meta = (m.name.capacity()
            + m.generator.capacity()
            + m.description.capacity()
            + m.net.as_ref().map_or(0, String::capacity)
            + m.cpu_scale.as_ref().map_or(0, String::capacity)) as u64;
        let names = vec(&self.entries)
            + self
                .entries
                .iter()
                .map(|e| e.name.capacity() as u64)
                .sum::<u64>()
            + vec(&self.objects)
            + self
                .objects
                .iter()
                .map(|o| o.name.capacity() as u64)
                .sum::<u64>()
            + vec(&self.groups)
            + self.groups.iter().map(|g| vec(&g.members)).sum::<u64>();
        meta + names
    }

    /// The header alone (metadata, entries, objects, groups), every block dropped: what a
    /// report needs once a replay is planned.
    pub fn without_blocks(self) -> Trace {
        Trace {
            meta: self.meta,
            entries: self.entries,
            objects: self.objects,
            groups: self.groups,
            ..Default::default()
        }
    }

    /// Reserves room for `blocks` more blocks, `deps` dependencies and `sends` sends (so that
    /// a trace built block by block does not over-allocate).
    pub fn reserve(&mut self, blocks: usize, deps: usize, sends: usize) {
        let c = &mut self.cols;
        c.object.reserve_exact(blocks);
        c.entry.reserve_exact(blocks);
        c.duration_ps.reserve_exact(blocks);
        c.trigger.reserve_exact(blocks);
        self.deps_end.reserve_exact(blocks);
        self.sends_end.reserve_exact(blocks);
        self.deps.reserve_exact(deps);
        self.sends.reserve_exact(sends);
    }

    /// Reserves `blocks` more of each optional column `like` has (iterations, priorities,
    /// flags, recorded times), for a trace built from copies of `like`'s blocks.
    pub(crate) fn reserve_optional_like(&mut self, like: &Trace, blocks: usize) {
        let (c, l) = (&mut self.cols, &like.cols);
        let n = |v: usize| if v > 0 { blocks } else { 0 };
        c.iteration.reserve_exact(n(l.iteration.len()));
        c.priority.reserve_exact(n(l.priority.len()));
        c.flags.reserve_exact(n(l.flags.len()));
        c.recorded_start.reserve_exact(n(l.recorded_start.len()));
        c.recorded_arrival
            .reserve_exact(n(l.recorded_arrival.len()));
    }

    /// Replaces every message label (of sends and triggers) `m` by `f(m)`; `f` must keep
    /// labels distinct. Call [`Trace::validate`] afterwards (a [`TraceBuilder`] does).
    pub fn relabel(&mut self, f: impl Fn(u64) -> u64) {
        for s in &mut self.sends {
            s.msg = MsgId(f(s.msg.0));
        }
        for t in &mut self.cols.trigger {
            if *t != NONE_U64 {
                *t = f(*t);
            }
        }
        self.consumers = OnceLock::new();
    }

    /// Appends a block; returns its id. References are checked later by [`Trace::validate`].
    ///
    /// # Panics
    /// If the trace would exceed 2^32 - 1 blocks, dependencies or sends.
    pub fn push_block(&mut self, block: Block, deps: &[BlockId], sends: &[Send]) -> BlockId {
        let id = BlockId(u32::try_from(self.cols.len()).expect("more than 2^32 blocks"));
        if let Some(r) = self.cols.push(&block)
            && self.reserved.is_none()
        {
            self.reserved = Some(r);
        }
        self.deps.extend_from_slice(deps);
        self.sends.extend_from_slice(sends);
        self.deps_end
            .push(u32::try_from(self.deps.len()).expect("more than 2^32 dependencies"));
        self.sends_end
            .push(u32::try_from(self.sends.len()).expect("more than 2^32 sends"));
        self.consumers = OnceLock::new();
        id
    }

    /// Every block's duration in picoseconds, to retime blocks in place (a what-if such as
    /// "this entry method twice as fast"); nothing else depends on them.
    pub fn durations_mut(&mut self) -> &mut [u64] {
        &mut self.cols.duration_ps
    }

    /// Every send's offset inside its block, in send order (see [`Trace::send_range`]), to
    /// retime sends with their blocks.
    pub fn send_offsets_mut(&mut self) -> impl Iterator<Item = &mut SimDuration> {
        self.sends.iter_mut().map(|s| &mut s.offset)
    }

    /// Replaces every block's priority (one value per block, in block order).
    pub fn set_priorities(&mut self, priorities: Vec<i32>) -> Result<(), ValidationError> {
        if priorities.len() != self.cols.len() {
            return Err(ValidationError(format!(
                "{} priorities given for {} blocks",
                priorities.len(),
                self.cols.len()
            )));
        }
        self.cols.priority = priorities;
        Ok(())
    }

    /// Number of blocks.
    pub fn num_blocks(&self) -> usize {
        self.cols.len()
    }
    /// Number of sends (message entries) over all blocks.
    pub fn num_sends(&self) -> usize {
        self.sends.len()
    }
    /// The block columns (for code that reads every block: faster than [`Trace::block`]).
    pub fn columns(&self) -> &BlockColumns {
        &self.cols
    }
    /// Per block, the end of its dependency range in [`Trace::all_deps`].
    pub fn deps_ends(&self) -> &[u32] {
        &self.deps_end
    }
    /// Per block, the end of its send range in [`Trace::all_sends`].
    pub fn sends_ends(&self) -> &[u32] {
        &self.sends_end
    }
    /// Every block, materialised in id order (80 bytes each: for tests and small traces;
    /// prefer [`Trace::iter_blocks`] or [`Trace::columns`]).
    pub fn blocks(&self) -> Vec<Block> {
        self.iter_blocks().collect()
    }
    /// Every block in id order, assembled from the columns one at a time.
    pub fn iter_blocks(&self) -> impl ExactSizeIterator<Item = Block> + '_ {
        (0..self.cols.len()).map(|i| self.cols.get(i))
    }
    /// One block.
    pub fn block(&self, id: BlockId) -> Block {
        self.cols.get(id.index())
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
        (0..self.cols.len() as u32).map(BlockId)
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
    /// The PE each block ran on in the recorded run: its object's recorded PE, or where the
    /// object's last [`RecordedMove`] up to that block took it.
    pub fn recorded_block_pes(&self) -> Vec<u32> {
        let mut at: Vec<(u32, usize)> = self.objects.iter().map(|o| (o.recorded_pe.0, 0)).collect();
        self.cols
            .object
            .iter()
            .enumerate()
            .map(|(b, &o)| {
                let (pe, next) = &mut at[o as usize];
                let moves = &*self.objects[o as usize].moves;
                while let Some(m) = moves.get(*next).filter(|m| m.from.index() <= b) {
                    *pe = m.pe.0;
                    *next += 1;
                }
                *pe
            })
            .collect()
    }

    /// Whether any object moved during the recorded run.
    pub fn has_recorded_moves(&self) -> bool {
        self.objects.iter().any(|o| !o.moves.is_empty())
    }

    /// Who each send triggers: for send `s`, the blocks whose trigger it is are
    /// `blocks[start[s]..start[s + 1]]`, in block order (one for point-to-point, one per
    /// receiving object for broadcasts and groups). Computed once and kept.
    pub fn consumers(&self) -> &Consumers {
        self.consumers
            .get_or_init(|| Consumers::of(&self.cols.trigger, &self.sends))
    }

    /// Checks every invariant listed on [`Trace`].
    pub fn validate(&self) -> Result<(), ValidationError> {
        let bad = |s: String| Err(ValidationError(s));
        if let Some(r) = &self.reserved {
            return bad(r.clone());
        }
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
            let mut after: Option<BlockId> = None;
            for m in o.moves.iter() {
                if m.pe.0 >= self.meta.recorded_pes {
                    return bad(format!(
                        "object {i} ({}) moved to {} but the trace has only {} PEs",
                        o.name, m.pe, self.meta.recorded_pes
                    ));
                }
                if m.from.index() >= self.num_blocks()
                    || self.cols.object[m.from.index()] as usize != i
                {
                    return bad(format!(
                        "object {i} ({}) moved at {}, which is not one of its blocks",
                        o.name, m.from
                    ));
                }
                if after.is_some_and(|a| m.from <= a) {
                    return bad(format!(
                        "object {i} ({}): its moves are not in block order ({} after {})",
                        o.name,
                        m.from,
                        after.expect("checked")
                    ));
                }
                after = Some(m.from);
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
        self.validate_blocks()?;
        if let Some(m) = self.consumers().duplicate {
            return bad(format!("message label {m} is sent more than once"));
        }
        self.validate_consumers()
    }

    /// Per-block checks, in block order (the first violation is reported).
    fn validate_blocks(&self) -> Result<(), ValidationError> {
        let c = &self.cols;
        let (n_obj, n_entries, n_groups) = (
            self.objects.len() as u32,
            self.entries.len() as u32,
            self.groups.len() as u32,
        );
        // Fast pass: one flag per kind of violation; the slow pass below names the first.
        let objects_ok = c.object.iter().all(|&o| o < n_obj);
        let entries_ok = c.entry.iter().all(|&e| e < n_entries);
        let mut deps_ok = true;
        let mut start = 0usize;
        for (b, &end) in self.deps_end.iter().enumerate() {
            let end = end as usize;
            deps_ok &= self.deps[start..end].iter().all(|d| (d.0 as usize) < b);
            start = end;
        }
        let mut sends_ok = true;
        let mut start = 0usize;
        for (b, &end) in self.sends_end.iter().enumerate() {
            let end = end as usize;
            let dur = c.duration_ps[b];
            sends_ok &= self.sends[start..end].iter().all(|s| {
                s.offset.as_ps() <= dur
                    && s.entry.0 < n_entries
                    && match s.dest {
                        Destination::Object(o) | Destination::AllExcept(o) => o.0 < n_obj,
                        Destination::Group(g) => g.0 < n_groups,
                        Destination::All => true,
                    }
            });
            start = end;
        }
        // Network blocks take no time.
        let network_ok = c.flags.is_empty()
            || c.flags
                .iter()
                .zip(&c.duration_ps)
                .all(|(&f, &d)| f & FLAG_NETWORK == 0 || d == 0);
        if objects_ok && entries_ok && deps_ok && sends_ok && network_ok {
            return Ok(());
        }
        let bad = |s: String| Err(ValidationError(s));
        let (n_obj, n_entries) = (n_obj as usize, n_entries as usize);
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
            if b.network && b.duration > SimDuration::ZERO {
                return bad(format!(
                    "{id} is a network block but lasts {} (network blocks take no time)",
                    b.duration
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
        Ok(())
    }

    /// Triggers: addressed to the consuming block's object; no object consumes one message
    /// twice.
    fn validate_consumers(&self) -> Result<(), ValidationError> {
        let bad = |s: String| Err(ValidationError(s));
        let cons = self.consumers();
        let objects = &self.cols.object;
        // Group membership: sorted copies for binary search.
        let mut sorted_groups: Vec<Option<Vec<ObjectId>>> = vec![None; self.groups.len()];
        for (b, &s) in cons.trigger_send.iter().enumerate() {
            if s == u32::MAX {
                continue;
            }
            let send = &self.sends[s as usize];
            let obj = ObjectId(objects[b]);
            let ok = match send.dest {
                Destination::Object(o) => o == obj,
                Destination::All => true,
                Destination::AllExcept(o) => o != obj,
                Destination::Group(g) => {
                    let members = &self.groups[g.index()].members;
                    if members.len() <= 16 {
                        members.contains(&obj)
                    } else {
                        sorted_groups[g.index()]
                            .get_or_insert_with(|| {
                                let mut m = members.clone();
                                m.sort_unstable();
                                m
                            })
                            .binary_search(&obj)
                            .is_ok()
                    }
                }
            };
            if !ok {
                return bad(format!(
                    "{} on {obj} is triggered by {}, which is addressed to {:?}",
                    BlockId(b as u32),
                    send.msg,
                    send.dest
                ));
            }
        }
        // One consumer per object per message. Point-to-point sends have one possible
        // consumer object, so only sends with several consumers and labels no block sends
        // need a closer look.
        let mut seen: Vec<(MsgId, ObjectId, BlockId)> = Vec::new();
        for s in 0..self.sends.len() {
            let (a, z) = (cons.start[s] as usize, cons.start[s + 1] as usize);
            if z - a > 1 {
                seen.extend(
                    cons.blocks[a..z]
                        .iter()
                        .map(|&b| (self.sends[s].msg, ObjectId(objects[b as usize]), BlockId(b))),
                );
            }
        }
        for (b, &s) in cons.trigger_send.iter().enumerate() {
            if s == u32::MAX && self.cols.trigger[b] != NONE_U64 {
                seen.push((
                    MsgId(self.cols.trigger[b]),
                    ObjectId(objects[b]),
                    BlockId(b as u32),
                ));
            }
        }
        seen.sort_unstable();
        for w in seen.windows(2) {
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
    /// A label that two sends carry, if any (the trace is then invalid).
    pub duplicate: Option<MsgId>,
}

impl Consumers {
    /// Resolves every trigger label against the sends' labels.
    fn of(triggers: &[u64], sends: &[Send]) -> Consumers {
        let index = MessageIndex::new(sends);
        let n_sends = sends.len();
        let trigger_send: Vec<u32> = triggers
            .iter()
            .map(|&m| {
                if m == NONE_U64 {
                    return u32::MAX;
                }
                index.lookup(MsgId(m)).map_or(u32::MAX, |s| s as u32)
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
            duplicate: index.duplicate(),
        }
    }
}

/// Maps message labels to send indices. When labels are exactly `0..n` in send order (as the
/// generators emit), lookups are a bounds check; when they are `0..n` in another order, an
/// array lookup; otherwise a binary search.
#[derive(Clone, Debug)]
pub struct MessageIndex {
    dense: usize,
    /// Labels `0..n` in some order: the send carrying each label.
    perm: Vec<u32>,
    /// Any other labels: (label, send), sorted.
    sorted: Vec<(MsgId, u32)>,
    /// A label carried by two sends (the index is then of the sorted kind).
    dup: Option<MsgId>,
}

impl MessageIndex {
    fn new(sends: &[Send]) -> Self {
        let n = sends.len();
        if sends.iter().enumerate().all(|(i, s)| s.msg.0 == i as u64) {
            return MessageIndex {
                dense: n,
                perm: Vec::new(),
                sorted: Vec::new(),
                dup: None,
            };
        }
        if sends.iter().all(|s| s.msg.0 < n as u64) {
            let mut perm = vec![u32::MAX; n];
            let mut dup = None;
            for (i, s) in sends.iter().enumerate() {
                let slot = &mut perm[s.msg.0 as usize];
                if *slot != u32::MAX && dup.is_none() {
                    dup = Some(s.msg);
                }
                *slot = i as u32;
            }
            if dup.is_none() {
                return MessageIndex {
                    dense: 0,
                    perm,
                    sorted: Vec::new(),
                    dup: None,
                };
            }
        }
        let mut sorted: Vec<(MsgId, u32)> = sends
            .iter()
            .enumerate()
            .map(|(i, s)| (s.msg, i as u32))
            .collect();
        sorted.sort_unstable();
        let dup = sorted.windows(2).find(|w| w[0].0 == w[1].0).map(|w| w[0].0);
        MessageIndex {
            dense: 0,
            perm: Vec::new(),
            sorted,
            dup,
        }
    }
    /// The index (into [`Trace::all_sends`]) of the send carrying `msg`.
    pub fn lookup(&self, msg: MsgId) -> Option<usize> {
        if !self.perm.is_empty() {
            return self.perm.get(msg.0 as usize).map(|&s| s as usize);
        }
        if self.sorted.is_empty() {
            return (msg.0 < self.dense as u64).then_some(msg.0 as usize);
        }
        self.sorted
            .binary_search_by_key(&msg, |e| e.0)
            .ok()
            .map(|p| self.sorted[p].1 as usize)
    }
    fn duplicate(&self) -> Option<MsgId> {
        self.dup
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
        self.trace.entries.push(EntryMethod::new(name));
        EntryId(self.trace.entries.len() as u32 - 1)
    }
    /// Marks entry `e`'s blocks as outside their objects' order
    /// ([`EntryMethod::outside_object_order`]).
    pub fn entry_outside_object_order(&mut self, e: EntryId) {
        if let Some(en) = self.trace.entries.get_mut(e.index()) {
            en.outside_object_order = true;
        }
    }
    /// Adds an object recorded on `pe`.
    pub fn object(&mut self, name: impl Into<String>, pe: PeId) -> ObjectId {
        self.trace.objects.push(ObjectInfo {
            name: name.into(),
            recorded_pe: pe,
            moves: Moves::default(),
            pinned: false,
        });
        ObjectId(self.trace.objects.len() as u32 - 1)
    }
    /// Marks object `o` as one that never migrates ([`ObjectInfo::pinned`]).
    pub fn pin_object(&mut self, o: ObjectId) {
        if let Some(ob) = self.trace.objects.get_mut(o.index()) {
            ob.pinned = true;
        }
    }
    /// Records that object `o` ran on `pe` from its block `from` on (a load balancer moved
    /// it); moves are added in block order ([`ObjectInfo::moves`]).
    pub fn object_moved(&mut self, o: ObjectId, from: BlockId, pe: PeId) {
        if let Some(ob) = self.trace.objects.get_mut(o.index()) {
            ob.moves.push(RecordedMove { from, pe });
        }
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
    /// Replaces every message label ([`Trace::relabel`]).
    pub fn relabel(&mut self, f: impl Fn(u64) -> u64) {
        self.trace.relabel(f);
    }
    /// Reserves room ([`Trace::reserve`]).
    pub fn reserve(&mut self, blocks: usize, deps: usize, sends: usize) {
        self.trace.reserve(blocks, deps, sends);
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
