//! Emulation: run a program on V virtual PEs in simulated time and record its trace.
//!
//! The emulator is a discrete-event simulation with exactly the replay's rules (see the
//! `replay` crate docs): per-PE non-preemptive schedulers picking the smallest
//! `(priority, effective receive time, order)`, decisions taken after every arrival and
//! completion at an instant, zero-time blocks completing inline, sends leaving at their offset
//! plus receive and send overheads, and the same network model driven the same way
//! (stateless, departure-ordered or event-driven). The difference: an entry method runs —
//! for real — when its block starts, and what it sends becomes the block's sends. So replaying
//! the recorded trace with the same network model, PE count and mapping reproduces every
//! block's start time (recorded as `recorded_start`).

use crate::chunked::Chunked;
use crate::ctx::{Clock, Payload, Timing};
use crate::error::EmuError;
use crate::model::{InitialMap, Message, ObjRef, Program};
use crate::record::{Recorded, Recorder, SpillPlan};
use crate::runtime::{Instance, RUNTIME_ENTRIES, Scratch, instantiate};
use network_models::{Driving, MessageInfo, NetIo, NetworkModel};
use sim_core::{EventClass, RadixQueue, Ratio, RunLimits, Scheduler, SimDuration, SimTime};
use trace::spill::ColumnSpill;
use trace::{
    Block, BlockId, Destination, EntryId, MsgId, ObjectId, PeId, Periodic, Send, Trace, TraceMeta,
};

/// How to emulate.
#[derive(Clone, Debug)]
pub struct EmulateConfig {
    /// Virtual PEs (the target machine's processors).
    pub pes: u32,
    /// Initial placement of each collection's elements.
    pub map: InitialMap,
    /// Where block durations come from.
    pub timing: Timing,
    /// Honour message priorities (replay with `--priority` to reproduce the schedule).
    pub priority: bool,
    /// Stop with an error after this many blocks (0: no limit).
    pub max_blocks: u64,
    /// Recorded in the trace as its generator (e.g. the command line).
    pub generator: String,
    /// Canonical network spec recorded in the trace (replay's default `--net`).
    pub net_spec: String,
    /// CPU-speed factor of the target relative to the recorded durations (`0.5`: the target
    /// CPU is twice as fast as the host that measured them). Recorded in the trace, where the
    /// replay applies it by default; the emulated timeline applies it the same way (durations
    /// and send offsets scaled, rounded down to the picosecond).
    pub cpu_scale: Ratio,
    /// Look for repeating iterations and record them once ([`Emulation::periodic`]; see the
    /// `record` module of this crate).
    pub detect_repetition: bool,
    /// Stop with an error once the recorder holds this many blocks in memory (0: no limit).
    pub max_held_blocks: u64,
    /// Refuse, before allocating them, objects ([`crate::OBJECT_BYTES`] each) and the data
    /// programs [`reserve`](crate::Builder::reserve) beyond this many bytes (0: no limit).
    pub max_memory_bytes: u64,
    /// Write blocks that do not repeat to disk instead of holding them ([`SpillPlan`]); the
    /// flat trace is then [`Emulation::spilled`]. `None`: every block stays in memory.
    pub spill: Option<SpillPlan>,
}

impl Default for EmulateConfig {
    fn default() -> Self {
        EmulateConfig {
            pes: 1,
            map: InitialMap::Block,
            timing: Timing::Model,
            priority: false,
            max_blocks: 0,
            generator: String::new(),
            net_spec: "ideal".into(),
            cpu_scale: Ratio::ONE,
            detect_repetition: false,
            max_held_blocks: 0,
            max_memory_bytes: 0,
            spill: None,
        }
    }
}

/// Progress of a running emulation.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Blocks executed so far.
    pub blocks: u64,
    /// Simulated time reached.
    pub now: SimTime,
    /// Blocks the recorder holds in memory.
    pub held: u64,
}

/// A finished emulation.
#[derive(Debug)]
pub struct Emulation {
    /// The recorded trace (validated). Every block carries its emulated start and its
    /// trigger's arrival as `recorded_start` / `recorded_arrival`. When [`Emulation::periodic`]
    /// or [`Emulation::spilled`] is set, only the header (metadata, entries, objects): the
    /// blocks are there.
    pub trace: Trace,
    /// With [`EmulateConfig::spill`], when blocks were spilled and nothing repeated: the flat
    /// trace's blocks on disk (not validated: every reader validates the file it is written
    /// to with [`ColumnSpill::finish`]).
    pub spilled: Option<ColumnSpill>,
    /// With [`EmulateConfig::detect_repetition`], when some iteration repeated: the recorded
    /// blocks, repeated segments stored once. Its expansion is the flat trace the emulation
    /// would have recorded, without recorded times in the repeated parts.
    pub periodic: Option<Periodic>,
    /// Blocks recorded.
    pub blocks: u64,
    /// The most blocks the recorder held in memory at once.
    pub peak_held_blocks: u64,
    /// End of the last block in the emulated timeline.
    pub makespan: SimTime,
    /// Messages between different PEs.
    pub remote_messages: u64,
    /// Messages within a PE.
    pub local_messages: u64,
    /// Simulator events processed.
    pub events: u64,
}

const KIND_SHIFT: u32 = 61;
const ARRIVE: u64 = 0;
const END: u64 = 1;
const DISPATCH: u64 = 2;
const DEPART: u64 = 3;
const NET: u64 = 4;
const INDEX_MASK: u64 = (1 << KIND_SHIFT) - 1;
/// An arrival event carries its item (the low 32 bits) and its PE's index in `vps` here.
const ARRIVE_VP_SHIFT: u32 = 32;
/// The arrival's PE index when it does not fit (`2^29 - 1` or more PEs hold objects): the
/// arrival looks it up.
const VP_UNKNOWN: u32 = (1 << (KIND_SHIFT - ARRIVE_VP_SHIFT)) - 1;

fn ev(kind: u64, index: u32) -> u64 {
    (kind << KIND_SHIFT) | index as u64
}

/// Ready items (and their objects) read ahead of their start by `Emu::warm` (measured at a
/// million objects: 8 items saved about 5 s of 59; 16 was slower, most of a PE's ready items
/// not starting before it is busy again).
const WARM: usize = 8;

/// Sends of a block whose destination PE is read ahead of their handling (a stencil's six
/// ghosts; sends beyond these look theirs up when handled).
const OUTS_AHEAD: usize = 8;

/// The arrival of item `slot` at `vps[vp]`: the PE rides in the event, so an arrival reads
/// neither the item nor the object's PE (a cache miss each, at a million objects), unless
/// there are too many PEs to encode ([`VP_UNKNOWN`]).
fn arrive_ev(vp: u32, slot: u32) -> u64 {
    ev(ARRIVE, slot) | (u64::from(vp.min(VP_UNKNOWN)) << ARRIVE_VP_SHIFT)
}

/// The PE index an arrival event carries, or [`VP_UNKNOWN`].
fn arrive_vp(e: u64) -> u32 {
    ((e & INDEX_MASK) >> ARRIVE_VP_SHIFT) as u32
}

/// A message in flight or waiting, or a continuation waiting for its block to end: what its
/// block's start needs (a continuation's dependencies are in its [`Payload::Done`]). Kept to
/// one cache line: a million-object run has millions of items in flight, and a block's start
/// reads its item once, long after it was written (one of a stencil-like message is at most
/// 64 bytes, a unit test checks; 120 when the trigger was an `Option`, dependencies a `Vec`
/// here and reduction fields inline, and 56 plus a 16-byte head in a second table, two cache
/// misses per start, until stop 49).
///
/// An item's arrival time is not kept: a message (an item with a trigger) becomes ready only
/// on its arrival, with the arrival as its effective receive time, so its ready key has it.
#[derive(Debug)]
struct Item<M> {
    /// The triggering message's label, or [`NO_TRIGGER`].
    trigger: u64,
    bytes: u64,
    src_pe: u32,
    /// The object that runs it.
    obj: u32,
    /// Its priority (used in the ready order under [`EmulateConfig::priority`], recorded in
    /// any case).
    prio: i32,
    payload: Payload<M>,
}

/// `Item::trigger` of a block no message triggers (a start, a continuation).
const NO_TRIGGER: u64 = u64::MAX;

/// A PE that holds objects (PEs without objects never run anything and have no state).
#[derive(Debug, Default)]
struct Vp {
    busy: bool,
    dispatch_pending: bool,
    /// Continuations released when the running block ends.
    release: Vec<u32>,
    ready: crate::ready::Ready,
}

struct Emu<'a, P: Program> {
    inst: Instance<P::Obj, P::Msg>,
    /// Per object, the index of its PE in `vps`.
    vp_of: Vec<u32>,
    /// Per entry of `vps`, its PE.
    vp_pe: Vec<u32>,
    net: &'a mut dyn NetworkModel,
    cfg: &'a EmulateConfig,
    sched: Scheduler<u64, RadixQueue<u64>>,
    vps: Vec<Vp>,
    items: Chunked<Option<Item<P::Msg>>>,
    free: Vec<u32>,
    seq: u64,
    overheads: bool,
    driving: Driving,
    io: NetIo,
    scratch: Scratch<P::Msg>,
    sends: Vec<Send>,
    deps: Vec<BlockId>,
    rec: Recorder,
    peak_held: u64,
    makespan: SimTime,
    remote: u64,
    local: u64,
    clock: Clock,
}

/// Emulates `program` on `cfg.pes` virtual PEs with network model `net`, calling `progress`
/// every 65,536 blocks.
pub fn emulate<P: Program>(
    program: &P,
    cfg: &EmulateConfig,
    net: &mut dyn NetworkModel,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Emulation, EmuError> {
    net.check_pes(cfg.pes)
        .map_err(|e| EmuError::Config(format!("network model: {e}")))?;
    if net.uses_recorded_delays() {
        return Err(EmuError::Config(
            "the `recorded` network model replays recorded delays; emulation needs a model \
             that computes them (e.g. latency, alphabeta, loggops)"
                .into(),
        ));
    }
    // The network model's state (links, switches, messages in flight; one message per PE
    // assumed in flight) is reserved first: a topology larger than the limit is refused
    // before it is allocated.
    let mut budget =
        crate::model::Budget::new(cfg.timing == Timing::Measured, cfg.max_memory_bytes);
    let net_bytes = net.state_bytes(cfg.pes, cfg.pes as u64, 0);
    if net_bytes > budget.limit_bytes {
        return Err(EmuError::Memory {
            what: format!(
                "the network model's links, switches and messages for {} PEs",
                cfg.pes
            ),
            bytes: net_bytes,
            limit: budget.limit_bytes,
        });
    }
    budget.reserved_bytes = net_bytes;
    let inst = instantiate(program, cfg.pes, cfg.map, budget)?;
    // Without repetition detection every block is held: refuse a run the program says is
    // larger than the recorder may hold, before running it.
    let will_hold = match cfg.max_blocks {
        0 => inst.expected_blocks,
        m => inst.expected_blocks.min(m),
    };
    if !cfg.detect_repetition
        && cfg.spill.is_none()
        && cfg.max_held_blocks > 0
        && will_hold >= cfg.max_held_blocks
    {
        return Err(EmuError::TooManyBlocks {
            expected: inst.expected_blocks,
            limit: cfg.max_held_blocks,
        });
    }
    // A run the program says is longer than the block limit would only stop at it (after
    // the memory refusal above, which says more when it applies).
    if cfg.max_blocks > 0 && inst.expected_blocks > cfg.max_blocks {
        return Err(EmuError::OverBlockLimit {
            expected: inst.expected_blocks,
            limit: cfg.max_blocks,
        });
    }
    let mut trace = Trace::new(TraceMeta {
        name: program.name(),
        generator: cfg.generator.clone(),
        description: format!(
            "emulated on {} virtual PEs, {} timing, {} initial map",
            cfg.pes,
            match cfg.timing {
                Timing::Measured => "measured",
                Timing::Model => "model",
            },
            match cfg.map {
                InitialMap::Block => "block",
                InitialMap::RoundRobin => "round-robin",
            }
        ),
        recorded_pes: cfg.pes,
        net: Some(cfg.net_spec.clone()),
        seed: None,
        cpu_scale: (cfg.cpu_scale != Ratio::ONE).then(|| cfg.cpu_scale.to_string()),
        // Chares are sequential: their state carries over between entry methods.
        sequential_objects: true,
    });
    for e in program.entries().iter().chain(RUNTIME_ENTRIES.iter()) {
        trace.entries.push(trace::EntryMethod::new(e.to_string()));
    }
    for o in 0..inst.slots.len() as u32 {
        trace.objects.push(trace::ObjectInfo {
            name: inst.world.object_name(o),
            recorded_pe: PeId(inst.world.pe_of[o as usize]),
            moves: Default::default(),
            pinned: false,
        });
    }
    // State only for the PEs that hold objects.
    let mut vp_pe: Vec<u32> = inst.world.pe_of.clone();
    vp_pe.sort_unstable();
    vp_pe.dedup();
    let vp_of = inst
        .world
        .pe_of
        .iter()
        .map(|pe| vp_pe.binary_search(pe).expect("the PE of an object") as u32)
        .collect();
    let emu = Emu::<P> {
        vps: (0..vp_pe.len()).map(|_| Vp::default()).collect(),
        vp_of,
        vp_pe,
        overheads: net.has_overheads(),
        driving: net.driving(),
        net,
        cfg,
        sched: Scheduler::new(RadixQueue::new(), RunLimits::default()),
        items: Chunked::default(),
        free: Vec::new(),
        seq: 0,
        io: NetIo::default(),
        scratch: Scratch::default(),
        sends: Vec::new(),
        deps: Vec::new(),
        rec: Recorder::new(trace, cfg.detect_repetition, cfg.spill.clone()),
        peak_held: 0,
        makespan: SimTime::ZERO,
        remote: 0,
        local: 0,
        clock: match cfg.timing {
            Timing::Measured => Clock::Wall,
            Timing::Model => Clock::Model,
        },
        inst,
    };
    emu.run(progress)
}

impl<P: Program> Emu<'_, P> {
    /// A recorded duration or offset on the target CPU.
    fn scale(&self, ps: u64) -> u64 {
        if self.cfg.cpu_scale == Ratio::ONE {
            ps
        } else {
            self.cfg.cpu_scale.scale(SimDuration::from_ps(ps)).as_ps()
        }
    }

    fn alloc(&mut self, item: Item<P::Msg>) -> u32 {
        match self.free.pop() {
            Some(i) => {
                // A freed slot holds `None`: writing over it without reading it first (an
                // assignment would read it to drop it, a cache miss on a slot freed long ago)
                // leaks nothing. `mem::forget` of the replaced value makes its read dead.
                debug_assert!(self.items[i as usize].is_none());
                std::mem::forget(self.items[i as usize].replace(item));
                i
            }
            None => {
                self.items.push(Some(item));
                (self.items.len() - 1) as u32
            }
        }
    }

    /// [`arrive_ev`] for item `slot`, its PE looked up.
    fn arrive_ev_of(&self, slot: u32) -> u64 {
        let obj = self.items[slot as usize].as_ref().expect("live item").obj;
        arrive_ev(self.vp_of[obj as usize], slot)
    }

    fn run(mut self, progress: &mut dyn FnMut(&Progress)) -> Result<Emulation, EmuError> {
        let starts = std::mem::take(&mut self.inst.starts);
        for (o, m) in starts {
            let it = self.alloc(Item {
                trigger: NO_TRIGGER,
                src_pe: u32::MAX,
                bytes: 0,
                obj: o.0,
                prio: 0,
                payload: Payload::User(m),
            });
            let v = self.vp_of[o.0 as usize];
            self.make_ready(it, v, 0, SimTime::ZERO)?;
        }
        let mut next_report = 1u64 << 16;
        while let Some((t, e)) = self.sched.next_event()? {
            let index = e as u32;
            match e >> KIND_SHIFT {
                ARRIVE => {
                    let vp = arrive_vp(e);
                    let vp = if vp == VP_UNKNOWN {
                        let obj = self.items[index as usize].as_ref().expect("live item").obj;
                        self.vp_of[obj as usize]
                    } else {
                        vp
                    };
                    self.make_ready(index, vp, t.as_ps(), t)?;
                }
                END => {
                    let vp = &mut self.vps[index as usize];
                    vp.busy = false;
                    self.finish(index, t)?;
                    let vp = &mut self.vps[index as usize];
                    if !vp.ready.is_empty() && !vp.dispatch_pending {
                        vp.dispatch_pending = true;
                        self.sched
                            .schedule(t, EventClass::Late, ev(DISPATCH, index))?;
                    }
                }
                DISPATCH => self.dispatch(index, t)?,
                DEPART => self.depart(index, t)?,
                _ => {
                    self.net.handle_event(t, index, &mut self.io);
                    self.drain_net()?;
                }
            }
            let blocks = self.rec.nb;
            if blocks >= next_report {
                next_report = blocks + (1 << 16);
                let held = self.rec.held_blocks();
                self.peak_held = self.peak_held.max(held);
                progress(&Progress {
                    blocks,
                    now: t,
                    held,
                });
                if self.cfg.max_held_blocks > 0 && held >= self.cfg.max_held_blocks {
                    return Err(EmuError::BlockLimit {
                        blocks: held,
                        at: t,
                    });
                }
            }
            if self.cfg.max_blocks > 0 && blocks >= self.cfg.max_blocks {
                return Err(EmuError::BlockLimit { blocks, at: t });
            }
        }
        let mut unfinished = Vec::new();
        for (o, slot) in self.inst.slots.iter().enumerate() {
            let need = self.inst.world.need[o];
            for (stream, seq, got) in slot.unfinished() {
                unfinished.push(format!(
                    "{} holds {} {seq} with {got} of {need} contributions",
                    self.inst.world.object_name(o as u32),
                    if stream == 0 {
                        "reduction"
                    } else {
                        "at_sync barrier"
                    }
                ));
            }
        }
        if !unfinished.is_empty() {
            let n = unfinished.len();
            unfinished.truncate(5);
            return Err(EmuError::Incomplete(format!(
                "{n} waiting, e.g. {} (every element of a collection must contribute to each reduction)",
                unfinished.join("; ")
            )));
        }
        let blocks = self.rec.nb;
        let peak_held_blocks = self
            .peak_held
            .max(self.rec.held_blocks())
            .max(self.rec.peak_held);
        let (trace, periodic, spilled) = match self.rec.finish()? {
            Recorded::Flat(t) => (t, None, None),
            Recorded::Periodic(p) => (p.header.clone(), Some(p), None),
            Recorded::Spilled { header, spill } => (header, None, Some(*spill)),
        };
        Ok(Emulation {
            makespan: self.makespan,
            remote_messages: self.remote,
            local_messages: self.local,
            events: self.sched.events(),
            trace,
            periodic,
            spilled,
            blocks,
            peak_held_blocks,
        })
    }

    /// Item `it`, whose object is on `vps[v]` and whose effective receive time is `key_ps`,
    /// is ready at `t`.
    fn make_ready(&mut self, it: u32, v: u32, key_ps: u64, t: SimTime) -> Result<(), EmuError> {
        let prio = if self.cfg.priority {
            self.items[it as usize].as_ref().expect("live item").prio
        } else {
            0
        };
        self.seq += 1;
        let vp = &mut self.vps[v as usize];
        vp.ready.push(crate::ready::Key {
            prio,
            key_ps,
            seq: self.seq,
            item: it,
        });
        if !vp.busy && !vp.dispatch_pending {
            vp.dispatch_pending = true;
            self.sched.schedule(t, EventClass::Late, ev(DISPATCH, v))?;
        }
        Ok(())
    }

    /// PE `vps[v]` picks its next blocks.
    fn dispatch(&mut self, v: u32, t: SimTime) -> Result<(), EmuError> {
        let pe = v;
        // Ready items whose item was read ahead (see `warm`).
        let mut warmed = 0u32;
        loop {
            if warmed == 0 {
                warmed = self.warm(pe);
            }
            warmed = warmed.saturating_sub(1);
            let vp = &mut self.vps[pe as usize];
            if vp.busy {
                break;
            }
            let Some(crate::ready::Key {
                key_ps, item: it, ..
            }) = vp.ready.pop()
            else {
                break;
            };
            let dur = self.start(it, key_ps, pe, t)?;
            let end = t
                .checked_add(dur)
                .ok_or(EmuError::Sched(sim_core::SchedError::Overflow))?;
            if dur == SimDuration::ZERO {
                self.finish(pe, t)?;
            } else {
                self.vps[pe as usize].busy = true;
                self.sched.schedule(end, EventClass::Normal, ev(END, pe))?;
                break;
            }
        }
        self.vps[pe as usize].dispatch_pending = false;
        Ok(())
    }

    /// Reads the next [`WARM`] ready items of `vps[v]` at once (independent loads, which
    /// the CPU overlaps), then their objects' slots the same way, before they start one by
    /// one: at a million objects each is a cache miss, and a block's start otherwise waits
    /// for its own item and then for its object. A dispatch usually runs several blocks
    /// (a stencil's zero-time ghost receives, then its computation), so most of what this
    /// reads is used at once. A hint only: what starts, and in what order, is
    /// `Ready::pop`'s. Returns how many items it read.
    fn warm(&self, v: u32) -> u32 {
        let mut objs = [u32::MAX; WARM];
        let mut n = 0;
        for (o, it) in objs.iter_mut().zip(self.vps[v as usize].ready.upcoming()) {
            if let Some(item) = &self.items[it as usize] {
                *o = item.obj;
            }
            n += 1;
        }
        let mut acc = 0u32;
        for &o in &objs[..n] {
            if let Some(slot) = self.inst.slots.get(o as usize) {
                acc ^= slot.coll.id;
            }
        }
        std::hint::black_box(acc);
        n as u32
    }

    /// The running block of `vps[pe]` ends at `t`: release the continuations it completed.
    fn finish(&mut self, pe: u32, t: SimTime) -> Result<(), EmuError> {
        if t > self.makespan {
            self.makespan = t;
        }
        let mut release = std::mem::take(&mut self.vps[pe as usize].release);
        for &it in &release {
            let item = self.items[it as usize].as_ref().expect("live item");
            let key_ps = item.payload.deps().iter().map(|d| d.1).max().unwrap_or(0);
            self.make_ready(it, pe, key_ps, t)?;
        }
        release.clear();
        self.vps[pe as usize].release = release;
        Ok(())
    }

    /// Runs item `it` (effective receive time `key_ps`) as a new block on `vps[v]` starting at
    /// `t`; returns the block's duration including overheads.
    fn start(&mut self, it: u32, key_ps: u64, v: u32, t: SimTime) -> Result<SimDuration, EmuError> {
        let pe = self.vp_pe[v as usize];
        let item = self.items[it as usize].take().expect("live item");
        self.free.push(it);
        let overflow = || EmuError::Sched(sim_core::SchedError::Overflow);
        let mut recv_oh = 0u64;
        if self.overheads && item.trigger != NO_TRIGGER && item.src_pe != pe {
            recv_oh = self
                .net
                .recv_overhead(&MessageInfo {
                    src_pe: item.src_pe,
                    dst_pe: pe,
                    bytes: item.bytes,
                })
                .as_ps();
        }
        let base = t.as_ps().checked_add(recv_oh).ok_or_else(overflow)?;
        let block_id = u32::try_from(self.rec.nb).map_err(|_| EmuError::BlockLimit {
            blocks: self.rec.nb,
            at: t,
        })?;
        let me = ObjRef(item.obj);
        self.deps.clear();
        self.deps
            .extend(item.payload.deps().iter().map(|d| BlockId(d.0)));
        let exec = self.inst.slots[item.obj as usize].execute(
            &self.inst.world,
            (me, pe),
            item.payload,
            self.clock,
            (block_id, key_ps),
            &mut self.scratch,
        );
        let u = self.inst.world.user_entries;
        let mut send_oh = 0u64;
        self.sends.clear();
        let mut outs = std::mem::take(&mut self.scratch.outs);
        // The destinations' PE indices, read together before the sends are handled one by
        // one: at a million objects each is a cache miss, and independent loads overlap.
        let mut dst_vps = [0u32; OUTS_AHEAD];
        for (d, out) in dst_vps.iter_mut().zip(&outs) {
            *d = self.vp_of[out.to.0 as usize];
        }
        for (o, out) in outs.drain(..).enumerate() {
            let msg = MsgId(self.rec.ns + self.sends.len() as u64);
            let entry = match &out.payload {
                Payload::User(m) => m.entry() as u32,
                Payload::Contrib(_) => u,
                Payload::Done(_) => u + 1,
                Payload::Resume => u + 2,
            };
            self.sends.push(Send {
                msg,
                offset: SimDuration::from_ps(out.offset_ps),
                dest: Destination::Object(ObjectId(out.to.0)),
                bytes: out.bytes,
                entry: EntryId(entry),
            });
            // The destination's PE through its index in `vps` (which the arrival event
            // carries): one lookup in a table the size of the objects, not two.
            let dst_vp = match dst_vps.get(o) {
                Some(&v) => v,
                None => self.vp_of[out.to.0 as usize],
            };
            let dst = self.vp_pe[dst_vp as usize];
            let bytes = out.bytes;
            let slot = self.alloc(Item {
                trigger: msg.0,
                src_pe: pe,
                bytes,
                obj: out.to.0,
                prio: out.prio,
                payload: out.payload,
            });
            let ready = base
                .checked_add(self.scale(out.offset_ps))
                .and_then(|x| x.checked_add(send_oh))
                .ok_or_else(overflow)?;
            if dst == pe {
                self.local += 1;
                self.sched.schedule(
                    SimTime::from_ps(ready),
                    EventClass::Normal,
                    arrive_ev(dst_vp, slot),
                )?;
                continue;
            }
            self.remote += 1;
            let info = MessageInfo {
                src_pe: pe,
                dst_pe: dst,
                bytes,
            };
            let (depart, cpu) = if self.overheads {
                let st = self.net.sender(&info, SimTime::from_ps(ready));
                (st.depart, st.cpu.as_ps())
            } else {
                (SimTime::from_ps(ready), 0)
            };
            send_oh = send_oh.checked_add(cpu).ok_or_else(overflow)?;
            if self.driving == Driving::Stateless {
                let wire = self.net.wire_time(&info, depart);
                let at = depart.checked_add(wire).ok_or_else(overflow)?;
                self.sched
                    .schedule(at, EventClass::Normal, arrive_ev(dst_vp, slot))?;
            } else {
                self.sched
                    .schedule(depart, EventClass::Normal, ev(DEPART, slot))?;
            }
        }
        self.scratch.outs = outs;
        for payload in exec.completions {
            let c = self.alloc(Item {
                trigger: NO_TRIGGER,
                src_pe: u32::MAX,
                bytes: 0,
                obj: item.obj,
                prio: 0,
                payload,
            });
            self.vps[v as usize].release.push(c);
        }
        let mut block = Block::new(
            ObjectId(item.obj),
            EntryId(exec.entry),
            SimDuration::from_ps(exec.dur_ps),
        );
        block.trigger = (item.trigger != NO_TRIGGER).then_some(MsgId(item.trigger));
        block.iteration = exec.iteration;
        block.lb_sync = exec.lb_sync;
        block.priority = item.prio;
        block.recorded_start = Some(t);
        // A message became ready at its arrival, which is its effective receive time.
        block.recorded_arrival = (item.trigger != NO_TRIGGER).then(|| SimTime::from_ps(key_ps));
        self.rec.push(&block, &self.deps, &self.sends)?;
        let total = recv_oh
            .checked_add(self.scale(exec.dur_ps))
            .and_then(|d| d.checked_add(send_oh))
            .ok_or_else(overflow)?;
        Ok(SimDuration::from_ps(total))
    }

    fn depart(&mut self, it: u32, t: SimTime) -> Result<(), EmuError> {
        let item = self.items[it as usize].as_ref().expect("live item");
        let info = MessageInfo {
            src_pe: item.src_pe,
            dst_pe: self.vp_pe[self.vp_of[item.obj as usize] as usize],
            bytes: item.bytes,
        };
        if self.driving == Driving::EventDriven {
            self.net.start_message(t, &info, it, &mut self.io);
            return self.drain_net();
        }
        let wire = self.net.wire_time(&info, t);
        let at = t
            .checked_add(wire)
            .ok_or(EmuError::Sched(sim_core::SchedError::Overflow))?;
        let arrive = self.arrive_ev_of(it);
        self.sched.schedule(at, EventClass::Normal, arrive)?;
        Ok(())
    }

    fn drain_net(&mut self) -> Result<(), EmuError> {
        for i in 0..self.io.events.len() {
            let (at, e) = self.io.events[i];
            self.sched.schedule(at, EventClass::Normal, ev(NET, e))?;
        }
        self.io.events.clear();
        for i in 0..self.io.deliveries.len() {
            let d = self.io.deliveries[i];
            let arrive = self.arrive_ev_of(d.token);
            self.sched.schedule(d.at, EventClass::Normal, arrive)?;
        }
        self.io.deliveries.clear();
        Ok(())
    }
}

#[cfg(test)]
mod size_tests {
    /// A million-object run holds millions of items: their size is memory and cache misses.
    #[test]
    fn an_item_of_a_ghost_message_is_small() {
        #[derive(Debug)]
        #[allow(dead_code)]
        enum Ghostly {
            Start,
            Ghost { iter: u32, dir: u8, data: Vec<f64> },
            Done(f64),
        }
        let item = std::mem::size_of::<Option<super::Item<Ghostly>>>();
        assert!(
            item <= 64,
            "an item of a stencil-like message is {item} bytes"
        );
        let payload = std::mem::size_of::<crate::ctx::Payload<Ghostly>>();
        assert!(payload <= 32, "its payload is {payload} bytes");
    }

    /// An arrival carries its item and its PE's index, or says the index must be looked up.
    #[test]
    fn an_arrival_event_carries_its_pe_when_it_fits() {
        use super::*;
        for (vp, slot) in [(0, 0), (5, 7), (VP_UNKNOWN - 1, u32::MAX), (4095, 1 << 31)] {
            let e = arrive_ev(vp, slot);
            assert_eq!(e >> KIND_SHIFT, ARRIVE);
            assert_eq!(e as u32, slot);
            assert_eq!(arrive_vp(e), vp);
        }
        for vp in [VP_UNKNOWN, VP_UNKNOWN + 1, u32::MAX] {
            let e = arrive_ev(vp, 9);
            assert_eq!((e >> KIND_SHIFT, e as u32), (ARRIVE, 9));
            assert_eq!(arrive_vp(e), VP_UNKNOWN);
        }
    }
}
