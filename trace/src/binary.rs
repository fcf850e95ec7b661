//! The binary trace format, version 3 (versions 1, without `cpu_scale`, and 2, without
//! `sequential_objects`, are still read).
//!
//! Little-endian; integers marked *v* are unsigned LEB128 varints, *z* are zigzag varints,
//! *str* is a *v* length followed by that many UTF-8 bytes.
//!
//! ```text
//! offset 0   magic      8 bytes  "WHATIFTR"
//!        8   version    u16      3
//! header     name str, generator str, description str, recorded_pes v,
//!            has_net u8 (0|1) [net str], has_seed u8 (0|1) [seed v],
//!            has_cpu_scale u8 (0|1) [cpu_scale str]          (version 2 and later)
//!            object flags u8: bit0 sequential_objects, bit1 objects carry moves,
//!                             bit2 some objects are pinned,
//!                             bit3 some entries are outside object order (version 3 and later)
//!            n_entries v  then per entry:  name str
//!            n_objects v  then per object: name str, recorded_pe v
//!            [if bit1: per object: n_moves v, then per move: from block v, pe v]
//!            [if bit2: n_pinned v, then per pinned object, ascending:
//!                      id v (the first), id - previous id v (the others, >= 1)]
//!            [if bit3: n_outside v, then per entry outside object order, ascending:
//!                      id v (the first), id - previous id v (the others, >= 1)]
//!            n_groups v   then per group:  n_members v, member object v ...
//!            n_blocks v
//! blocks     n_blocks times:
//!            flags u8: bit0 trigger, bit1 iteration, bit2 lb_sync, bit3 priority,
//!                      bit4 recorded_start, bit5 recorded_arrival, bit6 network (a network
//!                      block; read since network blocks exist: older readers refuse the bit)
//!                      (bit 7 must be 0)
//!            object v, entry v, duration_ps v,
//!            [trigger msg v] [iteration v] [priority z] [recorded_start_ps v] [recorded_arrival_ps v]
//!            n_deps v, then per dep: (this block id - dep block id) v   (>= 1)
//!            n_sends v, then per send: msg v, offset_ps v,
//!                       dest kind u8 (0 object, 1 group, 2 all, 3 all-except) [dest id v],
//!                       bytes v, entry v
//! trailer    4 bytes "WEND", then end of file
//! ```
//!
//! The block count is in the header and every block is self-delimiting, so a reader can stream
//! blocks one at a time ([`BinaryReader`]). Every decoding error names the byte offset at which
//! the format was violated.

use crate::error::TraceError;
use crate::ids::{BlockId, EntryId, GroupId, MsgId, ObjectId, PeId};
use crate::model::{
    Block, Destination, EntryMethod, Group, ObjectInfo, RecordedMove, Send, Trace, TraceMeta,
};
use sim_core::{SimDuration, SimTime};
use std::io::{self, Read, Write};

/// The 8 bytes every binary trace starts with.
pub const MAGIC: &[u8; 8] = b"WHATIFTR";
/// The format version this build writes and reads.
pub const VERSION: u16 = 3;
const TRAILER: &[u8; 4] = b"WEND";
const MAX_STRING: u64 = 1 << 20;

const F_TRIGGER: u8 = 1;
const F_ITERATION: u8 = 2;
const F_LB_SYNC: u8 = 4;
const F_PRIORITY: u8 = 8;
const F_RECORDED_START: u8 = 16;
const F_RECORDED_ARRIVAL: u8 = 32;
const F_NETWORK: u8 = 64;
const F_ALL: u8 = 127;

pub(crate) struct Out<W: Write> {
    pub(crate) w: W,
}

impl<W: Write> Out<W> {
    pub(crate) fn bytes(&mut self, b: &[u8]) -> io::Result<()> {
        self.w.write_all(b)
    }
    pub(crate) fn u8(&mut self, v: u8) -> io::Result<()> {
        self.w.write_all(&[v])
    }
    pub(crate) fn v(&mut self, mut v: u64) -> io::Result<()> {
        let mut buf = [0u8; 10];
        let mut n = 0;
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                buf[n] = byte;
                n += 1;
                break;
            }
            buf[n] = byte | 0x80;
            n += 1;
        }
        self.w.write_all(&buf[..n])
    }
    fn z(&mut self, v: i64) -> io::Result<()> {
        self.v(((v << 1) ^ (v >> 63)) as u64)
    }
    /// Everything of the header but the magic, the version and the counts (format version 3).
    pub(crate) fn meta(&mut self, trace: &Trace) -> io::Result<()> {
        let o = self;
        let m = &trace.meta;
        o.str(&m.name)?;
        o.str(&m.generator)?;
        o.str(&m.description)?;
        o.v(m.recorded_pes as u64)?;
        match &m.net {
            Some(n) => {
                o.u8(1)?;
                o.str(n)?;
            }
            None => o.u8(0)?,
        }
        match m.seed {
            Some(s) => {
                o.u8(1)?;
                o.v(s)?;
            }
            None => o.u8(0)?,
        }
        match &m.cpu_scale {
            Some(c) => {
                o.u8(1)?;
                o.str(c)?;
            }
            None => o.u8(0)?,
        }
        // Bit 1 only when some object moved: traces without moves are written as before.
        let moves = trace.objects.iter().any(|ob| !ob.moves.is_empty());
        // Bit 2 likewise only when some object is pinned.
        let pinned = trace.objects.iter().filter(|ob| ob.pinned).count();
        // Bit 3 likewise only when some entry is outside object order.
        let outside = trace
            .entries
            .iter()
            .filter(|e| e.outside_object_order)
            .count();
        o.u8(m.sequential_objects as u8
            | (moves as u8) << 1
            | ((pinned > 0) as u8) << 2
            | ((outside > 0) as u8) << 3)?;
        o.v(trace.entries.len() as u64)?;
        for e in &trace.entries {
            o.str(&e.name)?;
        }
        o.v(trace.objects.len() as u64)?;
        for ob in &trace.objects {
            o.str(&ob.name)?;
            o.v(ob.recorded_pe.0 as u64)?;
        }
        if moves {
            for ob in &trace.objects {
                o.v(ob.moves.len() as u64)?;
                for mv in ob.moves.iter() {
                    o.v(mv.from.0 as u64)?;
                    o.v(mv.pe.0 as u64)?;
                }
            }
        }
        if pinned > 0 {
            let ids = trace.objects.iter().enumerate().filter(|(_, ob)| ob.pinned);
            o.id_list(pinned, ids.map(|(i, _)| i))?;
        }
        if outside > 0 {
            let ids = trace.entries.iter().enumerate();
            let ids = ids.filter(|(_, e)| e.outside_object_order);
            o.id_list(outside, ids.map(|(i, _)| i))?;
        }
        o.v(trace.groups.len() as u64)?;
        for g in &trace.groups {
            o.v(g.members.len() as u64)?;
            for mem in &g.members {
                o.v(mem.0 as u64)?;
            }
        }
        Ok(())
    }
    fn str(&mut self, s: &str) -> io::Result<()> {
        self.v(s.len() as u64)?;
        self.bytes(s.as_bytes())
    }
    /// `n` ascending ids: the count, the first id, then each id less the one before.
    fn id_list(&mut self, n: usize, ids: impl Iterator<Item = usize>) -> io::Result<()> {
        self.v(n as u64)?;
        let mut prev = 0u64;
        for i in ids {
            self.v(i as u64 - prev)?;
            prev = i as u64;
        }
        Ok(())
    }
}

/// Writes `trace` in the binary format.
pub fn write_binary<W: Write>(trace: &Trace, w: W) -> io::Result<()> {
    let mut o = Out { w };
    o.bytes(MAGIC)?;
    o.bytes(&VERSION.to_le_bytes())?;
    o.meta(trace)?;
    o.v(trace.num_blocks() as u64)?;
    for id in trace.block_ids() {
        let b = trace.block(id);
        let mut flags = 0;
        if b.trigger.is_some() {
            flags |= F_TRIGGER;
        }
        if b.iteration.is_some() {
            flags |= F_ITERATION;
        }
        if b.lb_sync {
            flags |= F_LB_SYNC;
        }
        if b.network {
            flags |= F_NETWORK;
        }
        if b.priority != 0 {
            flags |= F_PRIORITY;
        }
        if b.recorded_start.is_some() {
            flags |= F_RECORDED_START;
        }
        if b.recorded_arrival.is_some() {
            flags |= F_RECORDED_ARRIVAL;
        }
        o.u8(flags)?;
        o.v(b.object.0 as u64)?;
        o.v(b.entry.0 as u64)?;
        o.v(b.duration.as_ps())?;
        if let Some(t) = b.trigger {
            o.v(t.0)?;
        }
        if let Some(i) = b.iteration {
            o.v(i as u64)?;
        }
        if b.priority != 0 {
            o.z(b.priority as i64)?;
        }
        if let Some(s) = b.recorded_start {
            o.v(s.as_ps())?;
        }
        if let Some(s) = b.recorded_arrival {
            o.v(s.as_ps())?;
        }
        let deps = trace.deps(id);
        o.v(deps.len() as u64)?;
        for d in deps {
            o.v((id.0 - d.0) as u64)?;
        }
        let sends = trace.sends(id);
        o.v(sends.len() as u64)?;
        for s in sends {
            o.v(s.msg.0)?;
            o.v(s.offset.as_ps())?;
            match s.dest {
                Destination::Object(x) => {
                    o.u8(0)?;
                    o.v(x.0 as u64)?;
                }
                Destination::Group(g) => {
                    o.u8(1)?;
                    o.v(g.0 as u64)?;
                }
                Destination::All => o.u8(2)?,
                Destination::AllExcept(x) => {
                    o.u8(3)?;
                    o.v(x.0 as u64)?;
                }
            }
            o.v(s.bytes)?;
            o.v(s.entry.0 as u64)?;
        }
    }
    o.bytes(TRAILER)?;
    o.w.flush()
}

/// Everything in a binary trace before the blocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Trace metadata.
    pub meta: TraceMeta,
    /// Entry methods.
    pub entries: Vec<EntryMethod>,
    /// Objects.
    pub objects: Vec<ObjectInfo>,
    /// Groups.
    pub groups: Vec<Group>,
    /// How many blocks follow.
    pub num_blocks: u64,
}

/// Streams a binary trace: [`BinaryReader::header`] first, then [`BinaryReader::next_block`]
/// until it returns `None`.
#[derive(Debug)]
pub struct BinaryReader<R: Read> {
    pub(crate) r: R,
    pub(crate) path: String,
    pub(crate) offset: u64,
    blocks_left: u64,
    next_block: u32,
    header_read: bool,
}

impl<R: Read> BinaryReader<R> {
    /// A reader over `r`; `path` names the source in errors.
    pub fn new(r: R, path: impl Into<String>) -> Self {
        BinaryReader {
            r,
            path: path.into(),
            offset: 0,
            blocks_left: 0,
            next_block: 0,
            header_read: false,
        }
    }

    pub(crate) fn fail<T>(
        &self,
        at: u64,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> Result<T, TraceError> {
        Err(TraceError::Binary {
            path: self.path.clone(),
            offset: at,
            expected: expected.into(),
            found: found.into(),
        })
    }

    pub(crate) fn fill(&mut self, buf: &mut [u8], what: &str) -> Result<(), TraceError> {
        let at = self.offset;
        let mut got = 0;
        while got < buf.len() {
            match self.r.read(&mut buf[got..]) {
                Ok(0) => {
                    return self.fail(
                        at,
                        what,
                        format!("found end of file after {got} of {} bytes", buf.len()),
                    );
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.fail(at, what, format!("read error: {e}")),
            }
        }
        self.offset += buf.len() as u64;
        Ok(())
    }

    pub(crate) fn u8(&mut self, what: &str) -> Result<u8, TraceError> {
        let mut b = [0u8; 1];
        self.fill(&mut b, what)?;
        Ok(b[0])
    }

    pub(crate) fn v(&mut self, what: &str) -> Result<u64, TraceError> {
        let at = self.offset;
        let mut v: u64 = 0;
        for i in 0..10 {
            let b = self.u8(what)?;
            let bits = (b & 0x7f) as u64;
            if i == 9 && (b & 0x7e) != 0 {
                return self.fail(at, what, "found a varint longer than 64 bits");
            }
            v |= bits << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        self.fail(at, what, "found a varint longer than 10 bytes")
    }

    fn v32(&mut self, what: &str) -> Result<u32, TraceError> {
        let at = self.offset;
        let v = self.v(what)?;
        match u32::try_from(v) {
            Ok(x) => Ok(x),
            Err(_) => self.fail(at, format!("{what} (32-bit)"), format!("found {v}")),
        }
    }

    fn z(&mut self, what: &str) -> Result<i64, TraceError> {
        let u = self.v(what)?;
        Ok(((u >> 1) as i64) ^ -((u & 1) as i64))
    }

    /// A list [`Out::id_list`] wrote: 1 to `limit` ascending ids below `limit`. `what` names
    /// one item ("pinned object"), `plural` the items ("pinned objects"), `kind` what an id
    /// numbers ("object").
    fn id_list(
        &mut self,
        [what, plural, kind]: [&str; 3],
        limit: usize,
    ) -> Result<Vec<usize>, TraceError> {
        let at = self.offset;
        let n = self.v(&format!("{what} count"))?;
        if n == 0 || n > limit as u64 {
            return self.fail(
                at,
                format!("{what} count 1 to {limit}"),
                format!("found {n}"),
            );
        }
        let mut ids = Vec::with_capacity(n as usize);
        let mut id = 0u64;
        for k in 0..n {
            let at = self.offset;
            let d = self.v(what)?;
            if k > 0 && d == 0 {
                return self.fail(at, format!("{plural} in ascending order"), "found a repeat");
            }
            id = id.saturating_add(d);
            if id >= limit as u64 {
                return self.fail(
                    at,
                    format!("{plural} below {limit}"),
                    format!("found {kind} {id}"),
                );
            }
            ids.push(id as usize);
        }
        Ok(ids)
    }

    fn str(&mut self, what: &str) -> Result<String, TraceError> {
        let at = self.offset;
        let len = self.v(what)?;
        if len > MAX_STRING {
            return self.fail(
                at,
                format!("{what} (string of at most {MAX_STRING} bytes)"),
                format!("found length {len}"),
            );
        }
        let mut buf = vec![0u8; len as usize];
        self.fill(&mut buf, what)?;
        match String::from_utf8(buf) {
            Ok(s) => Ok(s),
            Err(_) => self.fail(at, format!("{what} (UTF-8)"), "found invalid UTF-8"),
        }
    }

    pub(crate) fn flag(&mut self, what: &str) -> Result<bool, TraceError> {
        let at = self.offset;
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            x => self.fail(at, format!("{what} (0 or 1)"), format!("found {x}")),
        }
    }

    /// Reads the header. Must be called once, before any block.
    pub fn header(&mut self) -> Result<Header, TraceError> {
        let mut magic = [0u8; 8];
        self.fill(&mut magic, "the magic bytes \"WHATIFTR\"")?;
        if &magic != MAGIC {
            return self.fail(
                0,
                "the magic bytes \"WHATIFTR\" (a whatif binary trace)",
                format!("found {}", crate::describe_bytes(&magic)),
            );
        }
        let mut ver = [0u8; 2];
        self.fill(&mut ver, "format version")?;
        let version = u16::from_le_bytes(ver);
        if !(1..=VERSION).contains(&version) {
            return self.fail(
                8,
                format!("format version 1 to {VERSION}"),
                format!("found version {version} (this build reads versions 1 to {VERSION})"),
            );
        }
        let (meta, entries, objects, groups) = self.meta(version)?;
        let at = self.offset;
        let num_blocks = self.v("block count")?;
        if num_blocks > u32::MAX as u64 {
            return self.fail(
                at,
                "a block count below 2^32",
                format!("found {num_blocks}"),
            );
        }
        self.blocks_left = num_blocks;
        self.header_read = true;
        Ok(Header {
            meta,
            entries,
            objects,
            groups,
            num_blocks,
        })
    }

    /// The header fields after the version (as version `version` of this format has them).
    #[allow(clippy::type_complexity)]
    pub(crate) fn meta(
        &mut self,
        version: u16,
    ) -> Result<(TraceMeta, Vec<EntryMethod>, Vec<ObjectInfo>, Vec<Group>), TraceError> {
        let name = self.str("trace name")?;
        let generator = self.str("generator")?;
        let description = self.str("description")?;
        let recorded_pes = self.v32("recorded PE count")?;
        let net = if self.flag("network-spec presence flag")? {
            Some(self.str("network spec")?)
        } else {
            None
        };
        let seed = if self.flag("seed presence flag")? {
            Some(self.v("seed")?)
        } else {
            None
        };
        let cpu_scale = if version >= 2 && self.flag("cpu-scale presence flag")? {
            Some(self.str("cpu scale")?)
        } else {
            None
        };
        let object_flags = if version >= 3 {
            let at = self.offset;
            let f = self.u8("object flags")?;
            if f > 15 {
                return self.fail(
                    at,
                    "object flags 0 to 15 (bit 0 sequential objects, bit 1 recorded moves, bit 2 pinned objects, bit 3 entries outside object order)",
                    format!("found {f}"),
                );
            }
            f
        } else {
            0
        };
        let sequential_objects = object_flags & 1 != 0;
        let n = self.v("entry count")?;
        let mut entries = Vec::with_capacity(n.min(1 << 16) as usize);
        for _ in 0..n {
            entries.push(EntryMethod::new(self.str("entry name")?));
        }
        let n = self.v("object count")?;
        let mut objects = Vec::with_capacity(n.min(1 << 16) as usize);
        for _ in 0..n {
            let name = self.str("object name")?;
            let pe = self.v32("object recorded PE")?;
            objects.push(ObjectInfo {
                name,
                recorded_pe: PeId(pe),
                moves: Default::default(),
                pinned: false,
            });
        }
        if object_flags & 2 != 0 {
            for ob in objects.iter_mut() {
                let n = self.v("move count")?;
                for _ in 0..n {
                    let from = BlockId(self.v32("move block")?);
                    let pe = PeId(self.v32("move PE")?);
                    ob.moves.push(RecordedMove { from, pe });
                }
            }
        }
        if object_flags & 4 != 0 {
            let what = ["pinned object", "pinned objects", "object"];
            for id in self.id_list(what, objects.len())? {
                objects[id].pinned = true;
            }
        }
        if object_flags & 8 != 0 {
            let what = [
                "entry outside object order",
                "entries outside object order",
                "entry",
            ];
            for id in self.id_list(what, entries.len())? {
                entries[id].outside_object_order = true;
            }
        }
        let n = self.v("group count")?;
        let mut groups = Vec::with_capacity(n.min(1 << 16) as usize);
        for _ in 0..n {
            let m = self.v("group member count")?;
            let mut members = Vec::with_capacity(m.min(1 << 16) as usize);
            for _ in 0..m {
                members.push(ObjectId(self.v32("group member")?));
            }
            groups.push(Group { members });
        }
        Ok((
            TraceMeta {
                name,
                generator,
                description,
                recorded_pes,
                net,
                seed,
                cpu_scale,
                sequential_objects,
            },
            entries,
            objects,
            groups,
        ))
    }

    /// Reads the next block into `deps` and `sends` (cleared first); `None` after the last block
    /// (the trailer has then been checked).
    pub fn next_block(
        &mut self,
        deps: &mut Vec<BlockId>,
        sends: &mut Vec<Send>,
    ) -> Result<Option<Block>, TraceError> {
        assert!(
            self.header_read,
            "BinaryReader::header must be called first"
        );
        deps.clear();
        sends.clear();
        if self.blocks_left == 0 {
            let at = self.offset;
            let mut t = [0u8; 4];
            self.fill(&mut t, "the trailer \"WEND\"")?;
            if &t != TRAILER {
                return self.fail(
                    at,
                    "the trailer \"WEND\" after the last block",
                    format!("found {t:?}"),
                );
            }
            let mut extra = [0u8; 1];
            match self.r.read(&mut extra) {
                Ok(0) => {}
                Ok(_) => {
                    return self.fail(
                        self.offset,
                        "end of file after the trailer",
                        "found more bytes",
                    );
                }
                Err(e) => return self.fail(self.offset, "end of file", format!("read error: {e}")),
            }
            self.blocks_left = u64::MAX; // done; further calls return None
            return Ok(None);
        }
        if self.blocks_left == u64::MAX {
            return Ok(None);
        }
        let id = BlockId(self.next_block);
        let at = self.offset;
        let flags = self.u8("block flags")?;
        if flags & !F_ALL != 0 {
            return self.fail(
                at,
                format!("block flags for {id} (bits 0-6 only)"),
                format!("found {flags:#04x}"),
            );
        }
        let object = ObjectId(self.v32("block object")?);
        let entry = EntryId(self.v32("block entry")?);
        let duration = SimDuration::from_ps(self.v("block duration")?);
        let trigger = if flags & F_TRIGGER != 0 {
            Some(MsgId(self.v("trigger message")?))
        } else {
            None
        };
        let iteration = if flags & F_ITERATION != 0 {
            Some(self.v32("iteration")?)
        } else {
            None
        };
        let priority = if flags & F_PRIORITY != 0 {
            let at = self.offset;
            let p = self.z("priority")?;
            match i32::try_from(p) {
                Ok(p) => p,
                Err(_) => return self.fail(at, "a 32-bit priority", format!("found {p}")),
            }
        } else {
            0
        };
        let recorded_start = if flags & F_RECORDED_START != 0 {
            Some(SimTime::from_ps(self.v("recorded start")?))
        } else {
            None
        };
        let recorded_arrival = if flags & F_RECORDED_ARRIVAL != 0 {
            Some(SimTime::from_ps(self.v("recorded arrival")?))
        } else {
            None
        };
        let n = self.v("dependency count")?;
        for _ in 0..n {
            let at = self.offset;
            let back = self.v("dependency distance")?;
            if back == 0 || back > id.0 as u64 {
                return self.fail(
                    at,
                    format!("a dependency distance in 1..={} for {id}", id.0),
                    format!("found {back}"),
                );
            }
            deps.push(BlockId(id.0 - back as u32));
        }
        let n = self.v("send count")?;
        for _ in 0..n {
            let msg = MsgId(self.v("send message label")?);
            let offset = SimDuration::from_ps(self.v("send offset")?);
            let at = self.offset;
            let dest = match self.u8("destination kind")? {
                0 => Destination::Object(ObjectId(self.v32("destination object")?)),
                1 => Destination::Group(GroupId(self.v32("destination group")?)),
                2 => Destination::All,
                3 => Destination::AllExcept(ObjectId(self.v32("excluded object")?)),
                k => return self.fail(at, "a destination kind 0-3", format!("found {k}")),
            };
            let bytes = self.v("send size")?;
            let entry = EntryId(self.v32("send entry")?);
            sends.push(Send {
                msg,
                offset,
                dest,
                bytes,
                entry,
            });
        }
        self.blocks_left -= 1;
        self.next_block += 1;
        Ok(Some(Block {
            object,
            entry,
            duration,
            trigger,
            iteration,
            lb_sync: flags & F_LB_SYNC != 0,
            network: flags & F_NETWORK != 0,
            priority,
            recorded_start,
            recorded_arrival,
        }))
    }
}

/// Reads a whole binary trace and validates it. `path` names the source in errors.
pub fn read_binary<R: Read>(r: R, path: &str) -> Result<Trace, TraceError> {
    let mut reader = BinaryReader::new(r, path);
    let h = reader.header()?;
    let mut trace = Trace::new(h.meta);
    trace.entries = h.entries;
    trace.objects = h.objects;
    trace.groups = h.groups;
    let (mut deps, mut sends) = (Vec::new(), Vec::new());
    while let Some(b) = reader.next_block(&mut deps, &mut sends)? {
        trace.push_block(b, &deps, &sends);
    }
    trace.validate().map_err(|source| TraceError::Invalid {
        path: path.to_string(),
        source,
    })?;
    Ok(trace)
}
