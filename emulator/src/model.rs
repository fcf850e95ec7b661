//! The programming model: programs, object collections, messages, reductions.

use crate::ctx::Ctx;
use crate::error::EmuError;

/// Coordinates of an element in its collection (unused dimensions are 0).
pub type Index = [u32; 3];

/// A reference to one object (its id in the recorded trace).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjRef(pub u32);

/// A collection of objects (a Charm++ chare array) indexed in 1, 2 or 3 dimensions.
/// Elements are numbered row-major (the last coordinate varies fastest).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coll {
    pub(crate) id: u32,
    pub(crate) base: u32,
    pub(crate) dims: [u32; 3],
}

impl Coll {
    /// Its extent in each dimension (1 for unused dimensions).
    pub fn dims(&self) -> [u32; 3] {
        self.dims
    }
    /// Number of elements.
    pub fn len(&self) -> u32 {
        self.dims[0] * self.dims[1] * self.dims[2]
    }
    /// True if it has no elements (never, for a collection a [`Builder`] made).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The element at `idx`, or `None` outside the collection.
    pub fn get(&self, idx: [i64; 3]) -> Option<ObjRef> {
        let mut lin = 0u64;
        for (&i, &d) in idx.iter().zip(&self.dims) {
            if i < 0 || i >= d as i64 {
                return None;
            }
            lin = lin * d as u64 + i as u64;
        }
        Some(ObjRef(self.base + lin as u32))
    }
    /// The element at `idx`.
    ///
    /// # Panics
    /// If `idx` is outside the collection (a bug in the program).
    pub fn at(&self, idx: Index) -> ObjRef {
        self.get([idx[0] as i64, idx[1] as i64, idx[2] as i64])
            .unwrap_or_else(|| panic!("index {idx:?} outside a collection of {:?}", self.dims))
    }
    /// The element with linear number `i` (row-major).
    ///
    /// # Panics
    /// If `i >= len()` (a bug in the program).
    pub fn nth(&self, i: u32) -> ObjRef {
        assert!(
            i < self.len(),
            "element {i} of a collection of {}",
            self.len()
        );
        ObjRef(self.base + i)
    }
    /// The linear number of `o` in this collection, if it belongs to it.
    pub fn position(&self, o: ObjRef) -> Option<u32> {
        (o.0 >= self.base && o.0 - self.base < self.len()).then(|| o.0 - self.base)
    }
    /// Coordinates of the element with linear number `i`.
    pub fn index_of(&self, i: u32) -> Index {
        let [_, y, z] = self.dims;
        [i / (y * z), (i / z) % y, i % z]
    }
    /// Every element, in linear order.
    pub fn elements(&self) -> impl Iterator<Item = ObjRef> + use<> {
        let b = self.base;
        (0..self.len()).map(move |i| ObjRef(b + i))
    }
}

/// A message type: each value names the entry method it invokes.
pub trait Message: Send + 'static {
    /// Index of its entry method in [`Program::entries`].
    fn entry(&self) -> usize;
}

/// An object (chare). Entry methods run to completion: [`Chare::receive`] is called once per
/// message and may not block.
pub trait Chare: Send + 'static {
    /// The messages it receives.
    type Msg: Message;
    /// Runs the entry method `msg` names.
    fn receive(&mut self, msg: Self::Msg, ctx: &mut Ctx<'_, Self::Msg>);
    /// Called on every element of a collection once all of them have called
    /// [`Ctx::at_sync`] (after any load balancing).
    fn resume_from_sync(&mut self, _ctx: &mut Ctx<'_, Self::Msg>) {}
}

/// A message-driven program: its objects, entry methods and start messages.
pub trait Program {
    /// Messages of the program.
    type Msg: Message;
    /// Objects of the program (an enum when it has several kinds).
    type Obj: Chare<Msg = Self::Msg>;
    /// Short name with the parameters that matter, e.g. `stencil3d-64x64x48-b16x8x8`.
    fn name(&self) -> String;
    /// Names of the entry methods, indexed by [`Message::entry`].
    fn entries(&self) -> &'static [&'static str];
    /// Declares the collections, creates the objects and posts the start messages.
    fn build(&self, b: &mut Builder<Self::Obj, Self::Msg>) -> Result<(), EmuError>;
}

/// How a reduction combines values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// Sum.
    Sum,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
}

impl ReduceOp {
    pub(crate) fn combine(self, a: f64, b: f64) -> f64 {
        match self {
            ReduceOp::Sum => a + b,
            ReduceOp::Max => a.max(b),
            ReduceOp::Min => a.min(b),
        }
    }
}

/// Where a reduction's result goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// One object.
    Object(ObjRef),
    /// Every element of a collection.
    Broadcast(Coll),
}

/// What happens when a reduction completes: a message `make(result)` of `bytes` bytes to
/// `target`.
#[derive(Debug)]
pub struct Callback<M> {
    /// Receiver(s).
    pub target: Target,
    /// Size of the result message.
    pub bytes: u64,
    /// Builds the message from the reduced value.
    pub make: fn(f64) -> M,
}

impl<M> Clone for Callback<M> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<M> Copy for Callback<M> {}

/// How elements are placed on the PEs at start (per collection).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InitialMap {
    /// Element `i` of `n` goes to PE `i * P / n` (contiguous chunks; Charm++'s default block
    /// map).
    #[default]
    Block,
    /// Element `i` goes to PE `i mod P`.
    RoundRobin,
}

impl std::str::FromStr for InitialMap {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "block" => Ok(InitialMap::Block),
            "round-robin" | "rr" => Ok(InitialMap::RoundRobin),
            o => Err(format!(
                "unknown initial map `{o}`; expected block or round-robin"
            )),
        }
    }
}

impl InitialMap {
    /// PE of element `i` of `n` on `pes` PEs.
    pub fn pe(self, i: u32, n: u32, pes: u32) -> u32 {
        match self {
            InitialMap::Block => (i as u64 * pes as u64 / n.max(1) as u64) as u32,
            InitialMap::RoundRobin => i % pes,
        }
    }
}

pub(crate) struct CollInfo {
    pub(crate) name: String,
    pub(crate) coll: Coll,
    pub(crate) filled: bool,
}

/// Receives a program's collections, objects and start messages ([`Program::build`]).
#[derive(Debug)]
pub struct Builder<O, M> {
    pub(crate) pes: u32,
    pub(crate) colls: Vec<CollInfo>,
    pub(crate) objects: Vec<Option<O>>,
    pub(crate) starts: Vec<(ObjRef, M)>,
    pub(crate) budget: Budget,
    /// Blocks the program said it will run at least ([`Builder::expect_blocks`]).
    pub(crate) expected_blocks: u64,
}

/// What a program may allocate while it is built ([`Builder::reserve`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Budget {
    /// Blocks compute for real (measured timing, native runs): programs allocate their data.
    pub(crate) real_work: bool,
    /// Bytes the objects and their data may take (`u64::MAX`: no limit).
    pub(crate) limit_bytes: u64,
    /// Bytes reserved so far.
    pub(crate) reserved_bytes: u64,
}

impl Budget {
    /// `limit_bytes` 0 means no limit.
    pub(crate) fn new(real_work: bool, limit_bytes: u64) -> Budget {
        Budget {
            real_work,
            limit_bytes: if limit_bytes == 0 {
                u64::MAX
            } else {
                limit_bytes
            },
            reserved_bytes: 0,
        }
    }
}

/// Bytes per object while a program runs (the program's object, its runtime slot, its name
/// in the trace, its messages in flight): about 600 measured on stencil3d and
/// simple-imbalance. [`Builder::collection`] reserves it for every element.
pub const OBJECT_BYTES: u64 = 600;

impl std::fmt::Debug for CollInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {:?}", self.name, self.coll.dims)
    }
}

/// Most objects a program may create.
pub const MAX_OBJECTS: u64 = 1 << 30;

impl<O, M> Builder<O, M> {
    pub(crate) fn new(pes: u32, budget: Budget) -> Self {
        Builder {
            pes,
            colls: Vec::new(),
            objects: Vec::new(),
            starts: Vec::new(),
            budget,
            expected_blocks: 0,
        }
    }
    /// Declares that the program will run at least `blocks` execution blocks (pingpong:
    /// two per iteration). A hint, not a limit: an emulation that records every block
    /// (no repetition detection) and could not hold that many is refused before it starts,
    /// instead of after minutes of running. Calls add up.
    pub fn expect_blocks(&mut self, blocks: u64) {
        self.expected_blocks = self.expected_blocks.saturating_add(blocks);
    }
    /// True when blocks compute for real (measured timing, native runs): the program
    /// allocates the data its entry methods work on, and should [`reserve`](Self::reserve) it.
    pub fn real_work(&self) -> bool {
        self.budget.real_work
    }
    /// Reserves `bytes` of the run's memory for `what` (a program's arrays, its neighbour
    /// lists), before allocating them: an error above the run's limit, so a program too
    /// large for this computer is refused at once instead of aborting.
    pub fn reserve(&mut self, what: &str, bytes: u64) -> Result<(), EmuError> {
        let total = self.budget.reserved_bytes.saturating_add(bytes);
        if total > self.budget.limit_bytes {
            return Err(EmuError::Memory {
                what: what.to_string(),
                bytes: total,
                limit: self.budget.limit_bytes,
            });
        }
        self.budget.reserved_bytes = total;
        Ok(())
    }
    /// Number of PEs the program runs on (virtual PEs when emulating, threads when native).
    pub fn pes(&self) -> u32 {
        self.pes
    }
    /// Declares a collection of `dims[0] x dims[1] x dims[2]` elements named `name`; fill it
    /// with [`Builder::fill`]. Declaring every collection first lets objects of one refer to
    /// another.
    pub fn collection(&mut self, name: &str, dims: [u32; 3]) -> Result<Coll, EmuError> {
        let n = dims.iter().map(|&d| d as u64).product::<u64>();
        if n == 0 {
            return Err(EmuError::Program(format!(
                "collection `{name}` has a zero dimension ({dims:?})"
            )));
        }
        let base = self.objects.len() as u64;
        if base + n > MAX_OBJECTS {
            return Err(EmuError::Program(format!(
                "collection `{name}` would bring the object count to {}; at most {MAX_OBJECTS} are supported",
                base + n
            )));
        }
        self.reserve(
            &format!("{n} objects of collection `{name}` (at {OBJECT_BYTES} bytes each)"),
            n.saturating_mul(OBJECT_BYTES),
        )?;
        let coll = Coll {
            id: self.colls.len() as u32,
            base: base as u32,
            dims,
        };
        self.objects.resize_with((base + n) as usize, || None);
        self.colls.push(CollInfo {
            name: name.to_string(),
            coll,
            filled: false,
        });
        Ok(coll)
    }
    /// Creates every element of `c` with `make(index)`.
    pub fn fill(&mut self, c: Coll, mut make: impl FnMut(Index) -> O) {
        for i in 0..c.len() {
            self.objects[(c.base + i) as usize] = Some(make(c.index_of(i)));
        }
        self.colls[c.id as usize].filled = true;
    }
    /// Posts `msg` to `to` at time 0 (it runs as a block with no triggering message).
    pub fn start(&mut self, to: ObjRef, msg: M) {
        self.starts.push((to, msg));
    }
    /// Posts `make(element)` to every element of `c` at time 0.
    pub fn start_all(&mut self, c: Coll, mut make: impl FnMut(ObjRef) -> M) {
        for o in c.elements() {
            self.starts.push((o, make(o)));
        }
    }
}
