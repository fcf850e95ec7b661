//! MPI semantics shared by the importers of MPI traces (SimGrid TI, OTF2): ranks as objects
//! whose execution is cut into *segments* at every wait, point-to-point messages labelled by
//! channel `(source, destination, tag)` order, and collectives expanded into point-to-point
//! messages ([`Coll`], [`expand`]; the algorithms are listed in the `simgrid` module docs).

use crate::ImportError;
use sim_core::{SimDuration, SimTime};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use trace::{Block, BlockId, Destination, EntryId, MsgId, ObjectId, PeId, Send, TraceBuilder};

/// A fast, deterministic hasher for small integer keys (multiply and rotate, as rustc's
/// FxHash): the channel table is looked up twice per message.
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

/// Messages of one channel `(source, destination, tag)`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Channel {
    pub(crate) id: u64,
    pub(crate) sent: u64,
    pub(crate) recvd: u64,
}

/// Message labels: the k-th message of a channel is labelled `channel id * 2^32 + k` by its
/// sender and its receiver alike.
#[derive(Default)]
pub(crate) struct Labels {
    pub(crate) channels: HashMap<(u32, u32, i64), Channel, BuildHasherDefault<FxHasher>>,
}

impl Labels {
    fn channel(&mut self, src: u32, dst: u32, tag: i64) -> &mut Channel {
        let n = self.channels.len() as u64;
        self.channels.entry((src, dst, tag)).or_insert(Channel {
            id: n,
            sent: 0,
            recvd: 0,
        })
    }
    pub(crate) fn send(&mut self, src: u32, dst: u32, tag: i64) -> MsgId {
        let c = self.channel(src, dst, tag);
        c.sent += 1;
        MsgId((c.id << 32) | (c.sent - 1))
    }
    fn recv(&mut self, src: u32, dst: u32, tag: i64) -> MsgId {
        let c = self.channel(src, dst, tag);
        c.recvd += 1;
        MsgId((c.id << 32) | (c.recvd - 1))
    }
}

pub(crate) struct Ctx {
    pub(crate) collectives: Collectives,
    pub(crate) b: TraceBuilder,
    pub(crate) labels: Labels,
    pub(crate) e_msg: EntryId,
    pub(crate) entries: HashMap<String, EntryId>,
    /// Recorded time (ps) stamped on the blocks made now: receive blocks get it as recorded
    /// start and arrival, segments opened by a wait as recorded start (OTF2; `None` for
    /// formats without timestamps).
    pub(crate) stamp: Option<u64>,
    /// Receives posted while stamping, made by the next wait (see [`Ctx::post_recv`]).
    pub(crate) deferred: Vec<MsgId>,
    /// Waits made so far ([`Ctx::wait_for`] calls).
    pub(crate) waits: u64,
}

/// The open segment of one rank.
pub(crate) struct Seg {
    pub(crate) obj: ObjectId,
    pub(crate) rank: u32,
    pub(crate) entry: EntryId,
    pub(crate) dur_ps: u64,
    pub(crate) deps: Vec<BlockId>,
    pub(crate) sends: Vec<Send>,
    pub(crate) irecvs: Vec<((u32, u32, i64), BlockId)>,
    /// Recorded start of the segment (formats with timestamps).
    pub(crate) start_ps: Option<u64>,
}

impl Seg {
    /// The first segment of rank `r` (object `r`), entry `entry`.
    pub(crate) fn new(r: u32, entry: EntryId) -> Seg {
        Seg {
            obj: ObjectId(r),
            rank: r,
            entry,
            dur_ps: 0,
            deps: Vec::new(),
            sends: Vec::new(),
            irecvs: Vec::new(),
            start_ps: None,
        }
    }
}

impl Ctx {
    /// A context building `b`: entry `msg` for receive blocks, object `rank<r>` on PE `r`
    /// for every rank.
    pub(crate) fn new(mut b: TraceBuilder, collectives: Collectives, ranks: u32) -> Ctx {
        let e_msg = b.entry("msg");
        for r in 0..ranks {
            b.object(format!("rank{r}"), PeId(r));
        }
        Ctx {
            collectives,
            b,
            labels: Labels::default(),
            e_msg,
            entries: HashMap::new(),
            stamp: None,
            deferred: Vec::new(),
            waits: 0,
        }
    }
    pub(crate) fn entry(&mut self, name: &str) -> EntryId {
        if let Some(&e) = self.entries.get(name) {
            return e;
        }
        let e = self.b.entry(name);
        self.entries.insert(name.to_string(), e);
        e
    }
    pub(crate) fn send(&mut self, s: &mut Seg, dst: u32, tag: i64, bytes: u64) {
        let msg = self.labels.send(s.rank, dst, tag);
        s.sends.push(Send {
            msg,
            offset: SimDuration::from_ps(s.dur_ps),
            dest: Destination::Object(ObjectId(dst)),
            bytes,
            entry: self.e_msg,
        });
    }
    /// A receive block of this rank for the next message on channel `(src, rank, tag)`.
    /// With a stamp, the block is made by the next [`Ctx::wait_for`], after the segment it
    /// closes, and this returns a placeholder: blocks stamped with one time are then in the
    /// order they run (segment, receives, next segment), which is the recorded order's
    /// tie-break (time, then block id).
    pub(crate) fn post_recv(&mut self, s: &Seg, src: u32, tag: i64) -> BlockId {
        let msg = self.labels.recv(src, s.rank, tag);
        if self.stamp.is_some() {
            self.deferred.push(msg);
            return BlockId(DEFERRED - (self.deferred.len() as u32 - 1));
        }
        let mut blk = Block::new(s.obj, self.e_msg, SimDuration::ZERO);
        blk.trigger = Some(msg);
        self.b.block(blk, &[], &[])
    }
    /// Closes the segment; the next one (entry `name`) waits for it and for `wait`.
    pub(crate) fn wait_for(&mut self, s: &mut Seg, wait: &[BlockId], name: &str) {
        let mut blk = Block::new(s.obj, s.entry, SimDuration::from_ps(s.dur_ps));
        blk.recorded_start = s.start_ps.map(SimTime::from_ps);
        let id = self.b.block(blk, &s.deps, &s.sends);
        s.sends.clear();
        s.deps.clear();
        s.deps.push(id);
        let stamp = self.stamp;
        // Deferred receives (stamped formats), made now, after the segment they follow.
        let made: Vec<BlockId> = std::mem::take(&mut self.deferred)
            .into_iter()
            .map(|msg| {
                let mut r = Block::new(s.obj, self.e_msg, SimDuration::ZERO);
                r.trigger = Some(msg);
                r.recorded_start = stamp.map(SimTime::from_ps);
                r.recorded_arrival = r.recorded_start;
                self.b.block(r, &[], &[])
            })
            .collect();
        for &w in wait {
            let deferred = w.0 <= DEFERRED && DEFERRED - w.0 < made.len() as u32;
            let real = if deferred {
                made[(DEFERRED - w.0) as usize]
            } else {
                w
            };
            s.deps.push(real);
        }
        s.dur_ps = 0;
        s.entry = self.entry(name);
        s.start_ps = stamp;
        self.waits += 1;
    }
    /// Adds `ps` of work to the open segment.
    pub(crate) fn work(&self, s: &mut Seg, ps: u64) {
        s.dur_ps = s.dur_ps.saturating_add(ps);
    }
    /// Closes the last segment of a rank.
    pub(crate) fn close(&mut self, s: &Seg) {
        let mut blk = Block::new(s.obj, s.entry, SimDuration::from_ps(s.dur_ps));
        blk.recorded_start = s.start_ps.map(SimTime::from_ps);
        self.b.block(blk, &s.deps, &s.sends);
        // Receives posted but never waited for still consume their messages.
        for msg in std::mem::take(&mut self.deferred) {
            let mut r = Block::new(s.obj, self.e_msg, SimDuration::ZERO);
            r.trigger = Some(msg);
            r.recorded_start = self.stamp.or(s.start_ps).map(SimTime::from_ps);
            r.recorded_arrival = r.recorded_start;
            self.b.block(r, &[], &[]);
        }
    }
}

/// Placeholder ids of deferred receives count down from here.
const DEFERRED: u32 = u32::MAX - 1;

/// A collective's identity, to check that all ranks call the same one.
pub(crate) fn coll_tag(c: u64, step: u64) -> i64 {
    -1 - ((c << 20) | step) as i64
}

/// How collectives become point-to-point messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Collectives {
    /// whatif's algorithms (dissemination barrier, binomial reduce, pairwise all-to-all).
    #[default]
    Classic,
    /// SimGrid 3.32's default selector, as `smpirun -replay` runs them (mostly linear).
    Smpi,
}

impl std::str::FromStr for Collectives {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "classic" => Ok(Collectives::Classic),
            "smpi" => Ok(Collectives::Smpi),
            o => Err(format!(
                "`{o}` is not a collective set; use classic (whatif's) or smpi (SimGrid's defaults)"
            )),
        }
    }
}

impl std::fmt::Display for Collectives {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Collectives::Classic => "classic",
            Collectives::Smpi => "smpi",
        })
    }
}

/// One rank's view of a collective call, sizes in bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Coll {
    /// `MPI_Barrier`.
    Barrier,
    /// `MPI_Bcast` of `n` bytes from `root`.
    Bcast { n: u64, root: u32 },
    /// `MPI_Reduce` of `n` bytes to `root`; with `all`, `MPI_Allreduce` (to 0, then bcast).
    Reduce { n: u64, root: u32, all: bool },
    /// `MPI_Alltoall(v)`: `sizes[dst]` bytes to every other rank (`v`: the v variant).
    Alltoall { sizes: Vec<u64>, v: bool },
    /// `MPI_Gather(v)`: `n` bytes from this rank to `root`.
    Gather { n: u64, root: u32, v: bool },
    /// `MPI_Scatter(v)`: `sizes[q]` bytes from `root` to rank `q`.
    Scatter { sizes: Vec<u64>, root: u32, v: bool },
    /// `MPI_Allgather(v)`: rank `q` contributes `sizes[q]` bytes.
    Allgather { sizes: Vec<u64>, v: bool },
    /// `MPI_Reduce_scatter`: rank `q` receives `counts[q]` bytes of the reduction.
    ReduceScatter { counts: Vec<u64> },
}

impl Coll {
    /// The TI action name of the call.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Coll::Barrier => "barrier",
            Coll::Bcast { .. } => "bcast",
            Coll::Reduce { all: false, .. } => "reduce",
            Coll::Reduce { all: true, .. } => "allreduce",
            Coll::Alltoall { v: false, .. } => "alltoall",
            Coll::Alltoall { v: true, .. } => "alltoallv",
            Coll::Gather { v: false, .. } => "gather",
            Coll::Gather { v: true, .. } => "gatherv",
            Coll::Scatter { v: false, .. } => "scatter",
            Coll::Scatter { v: true, .. } => "scatterv",
            Coll::Allgather { v: false, .. } => "allgather",
            Coll::Allgather { v: true, .. } => "allgatherv",
            Coll::ReduceScatter { .. } => "reducescatter",
        }
    }
    /// Its root (0 when it has none).
    pub(crate) fn root(&self) -> u32 {
        match self {
            Coll::Bcast { root, .. }
            | Coll::Reduce { root, .. }
            | Coll::Gather { root, .. }
            | Coll::Scatter { root, .. } => *root,
            _ => 0,
        }
    }
}

/// Expands the `c`-th collective call of this rank into messages and waits on `p` ranks; the
/// segments after its waits are named `seg`.
pub(crate) fn expand(cx: &mut Ctx, s: &mut Seg, coll: &Coll, c: u64, p: u32, seg: &str) {
    let r = s.rank;
    let mut step = 0u64;
    let mut next_tag = || {
        step += 1;
        coll_tag(c, step - 1)
    };
    let name = seg;
    let smpi = cx.collectives == Collectives::Smpi;
    match coll {
        Coll::Barrier if smpi => {
            // Open MPI's basic linear barrier (SimGrid's default).
            let (up, down) = (next_tag(), next_tag());
            if r == 0 {
                let ids: Vec<BlockId> = (1..p).map(|q| cx.post_recv(s, q, up)).collect();
                if !ids.is_empty() {
                    cx.wait_for(s, &ids, name);
                }
                for q in 1..p {
                    cx.send(s, q, down, 0);
                }
            } else {
                cx.send(s, 0, up, 0);
                let id = cx.post_recv(s, 0, down);
                cx.wait_for(s, &[id], name);
            }
        }
        Coll::Barrier => {
            let mut k = 1u32;
            while k < p {
                let tag = next_tag();
                cx.send(s, (r + k) % p, tag, 0);
                let id = cx.post_recv(s, (r + p - k) % p, tag);
                cx.wait_for(s, &[id], name);
                k = k.saturating_mul(2);
            }
        }
        Coll::Bcast { n, root } => bcast(cx, s, p, *root, *n, next_tag(), name),
        Coll::Reduce { n, root, all } => {
            if smpi {
                reduce_linear(cx, s, p, *root, *n, next_tag(), name);
            } else {
                reduce(cx, s, p, *root, *n, next_tag(), name);
            }
            if *all {
                bcast(cx, s, p, 0, *n, next_tag(), name);
            }
        }
        Coll::Alltoall { sizes, .. } => {
            if smpi {
                let tag = next_tag();
                linear_exchange(cx, s, p, tag, name, |dst| sizes[dst as usize]);
                return;
            }
            for k in 1..p {
                let tag = next_tag();
                let dst = (r + k) % p;
                cx.send(s, dst, tag, sizes[dst as usize]);
                let id = cx.post_recv(s, (r + p - k) % p, tag);
                cx.wait_for(s, &[id], name);
            }
        }
        // Linear: every rank sends to the root (as a linear reduce).
        Coll::Gather { n, root, .. } => reduce_linear(cx, s, p, *root, *n, next_tag(), name),
        Coll::Scatter { sizes, root, .. } => {
            let tag = next_tag();
            if r == *root {
                for q in (0..p).filter(|q| q != root) {
                    cx.send(s, q, tag, sizes[q as usize]);
                }
            } else {
                let id = cx.post_recv(s, *root, tag);
                cx.wait_for(s, &[id], name);
            }
        }
        Coll::Allgather { sizes, .. } => {
            if smpi {
                let tag = next_tag();
                let mine = sizes[r as usize];
                linear_exchange(cx, s, p, tag, name, |_| mine);
                return;
            }
            for k in 0..p.saturating_sub(1) {
                let tag = next_tag();
                let block = ((r + p - k) % p) as usize;
                cx.send(s, (r + 1) % p, tag, sizes[block]);
                let id = cx.post_recv(s, (r + p - 1) % p, tag);
                cx.wait_for(s, &[id], name);
            }
        }
        Coll::ReduceScatter { counts } => {
            let total: u64 = counts.iter().sum();
            if smpi {
                reduce_linear(cx, s, p, 0, total, next_tag(), name);
            } else {
                reduce(cx, s, p, 0, total, next_tag(), name);
            }
            let tag = next_tag();
            if r == 0 {
                for q in 1..p {
                    cx.send(s, q, tag, counts[q as usize]);
                }
            } else {
                let id = cx.post_recv(s, 0, tag);
                cx.wait_for(s, &[id], name);
            }
        }
    }
}

/// Binomial broadcast (MPICH): receive from the parent, then send to children.
pub(crate) fn bcast(cx: &mut Ctx, s: &mut Seg, p: u32, root: u32, n: u64, tag: i64, name: &str) {
    let vr = (s.rank + p - root) % p;
    let mut mask = 1u32;
    while mask < p {
        if vr & mask != 0 {
            let src = (vr - mask + root) % p;
            let id = cx.post_recv(s, src, tag);
            cx.wait_for(s, &[id], name);
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        if vr + mask < p {
            cx.send(s, (vr + mask + root) % p, tag, n);
        }
        mask >>= 1;
    }
}

/// Linear reduction or gather (SimGrid's `ireduce`, `igather`): every rank sends to `root`,
/// which waits for all.
pub(crate) fn reduce_linear(
    cx: &mut Ctx,
    s: &mut Seg,
    p: u32,
    root: u32,
    n: u64,
    tag: i64,
    name: &str,
) {
    if s.rank == root {
        let ids: Vec<BlockId> = (0..p)
            .filter(|&q| q != root)
            .map(|q| cx.post_recv(s, q, tag))
            .collect();
        if !ids.is_empty() {
            cx.wait_for(s, &ids, name);
        }
    } else {
        cx.send(s, root, tag, n);
    }
}

/// Linear all-to-all (Open MPI's basic linear, SimGrid's `ialltoallv`): receives from every
/// other rank posted, every send issued at once (to `r-1, r-2, ...`), then one wait for all.
pub(crate) fn linear_exchange(
    cx: &mut Ctx,
    s: &mut Seg,
    p: u32,
    tag: i64,
    name: &str,
    size_to: impl Fn(u32) -> u64,
) {
    let r = s.rank;
    let ids: Vec<BlockId> = (1..p).map(|k| cx.post_recv(s, (r + k) % p, tag)).collect();
    for k in 1..p {
        let dst = (r + p - k) % p;
        cx.send(s, dst, tag, size_to(dst));
    }
    if !ids.is_empty() {
        cx.wait_for(s, &ids, name);
    }
}

/// Binomial reduction toward `root`.
pub(crate) fn reduce(cx: &mut Ctx, s: &mut Seg, p: u32, root: u32, n: u64, tag: i64, name: &str) {
    let vr = (s.rank + p - root) % p;
    let mut mask = 1u32;
    while mask < p {
        if vr & mask == 0 {
            let child = vr | mask;
            if child < p {
                let id = cx.post_recv(s, (child + root) % p, tag);
                cx.wait_for(s, &[id], name);
            }
        } else {
            cx.send(s, (vr - mask + root) % p, tag, n);
            break;
        }
        mask <<= 1;
    }
}

/// Checks that every send is matched by a receive and vice versa (errors name `input` and
/// the first unmatched channel, in source, destination, tag order), then relabels messages
/// `channel << 32 | k` as `0..messages`, channel by channel, so that the trace's message
/// index is an array, not a sorted table.
pub(crate) fn match_messages(cx: &mut Ctx, input: &str) -> Result<(), ImportError> {
    // Point-to-point: every send matched by a receive and vice versa (reported in channel
    // order: source, destination, tag).
    let mut channels: Vec<((u32, u32, i64), Channel)> = cx.labels.channels.drain().collect();
    channels.sort_unstable_by_key(|c| c.0);
    for &((src, dst, tag), c) in &channels {
        if c.sent > 0 && c.sent != c.recvd {
            let tagtxt = if tag >= 0 {
                format!("tag {tag}")
            } else {
                "a collective".into()
            };
            return Err(ImportError::inconsistent(
                input,
                format!(
                    "rank {src} sends {} messages to rank {dst} with {tagtxt}, but rank {dst} receives {}",
                    c.sent, c.recvd
                ),
            ));
        }
    }
    for &((src, dst, tag), c) in &channels {
        if c.sent == 0 {
            return Err(ImportError::inconsistent(
                input,
                format!(
                    "rank {dst} receives {} messages from rank {src} with tag {tag}, but rank {src} sends none",
                    c.recvd
                ),
            ));
        }
    }
    // Labels `channel << 32 | k` become 0..messages (channel by channel), so that the trace's
    // message index is an array, not a sorted table.
    let mut base = vec![0u64; channels.len()];
    let mut total = 0u64;
    let mut by_id: Vec<(u64, u64)> = channels.iter().map(|c| (c.1.id, c.1.sent)).collect();
    drop(channels);
    by_id.sort_unstable();
    for (id, sent) in by_id {
        base[id as usize] = total;
        total += sent;
    }
    cx.b.relabel(|m| base[(m >> 32) as usize] + (m & 0xffff_ffff));
    Ok(())
}
