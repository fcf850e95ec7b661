//! The event loop. See the crate docs for the semantics it implements.

use crate::plan::{NO_ITER, Plan};
use crate::{EntryNetStats, MessageStats, ReplayError, ReplayReport, TimelineRecord};
use network_models::{Driving, MessageInfo, NetIo, NetworkModel};
use sim_core::{EventClass, EventQueue, RunLimits, Scheduler, SimDuration, SimTime};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

// Event payload: kind in the top 3 bits, index below.
const KIND_SHIFT: u32 = 61;
const ARRIVE: u64 = 0; // index = block whose trigger arrives
const END: u64 = 1; // index = PE whose running block ends
const DISPATCH: u64 = 2; // index = PE that should pick its next ready block
const DEPART: u64 = 3; // index = consumer slot whose message leaves (ordered/event models)
const NET: u64 = 4; // index = the network model's own event id (event-driven models)
const INDEX_MASK: u64 = (1 << KIND_SHIFT) - 1;

#[inline]
fn ev(kind: u64, index: u32) -> u64 {
    (kind << KIND_SHIFT) | index as u64
}

/// Ready blocks of one PE, smallest `(priority, ready time, block id)` first.
type ReadySet = BinaryHeap<Reverse<(i32, u64, u32)>>;

#[derive(Debug, Default)]
struct Pe {
    busy: bool,
    dispatch_pending: bool,
    running: u32,
    busy_ps: u64,
    blocks: u64,
    ready: ReadySet,
}

pub(crate) struct Engine<'a, Q: EventQueue<u64>> {
    plan: &'a mut Plan,
    net: &'a mut dyn NetworkModel,
    sched: Scheduler<u64, Q>,
    pes: Vec<Pe>,
    overheads: bool,
    driving: Driving,
    /// For ordered and event-driven models: the send of each consumer slot.
    slot_send: Vec<u32>,
    io: NetIo,
    entry_net: Vec<EntryNetStats>,
    completed: u64,
    makespan: SimTime,
    iter_end: Vec<SimTime>,
    msgs: MessageStats,
    timeline: Option<Vec<TimelineRecord>>,
}

impl<'a, Q: EventQueue<u64>> Engine<'a, Q> {
    pub(crate) fn new(
        plan: &'a mut Plan,
        net: &'a mut dyn NetworkModel,
        queue: Q,
        limits: RunLimits,
        timeline: bool,
    ) -> Self {
        let driving = net.driving();
        let mut slot_send = Vec::new();
        if driving != Driving::Stateless {
            slot_send = vec![0u32; plan.consumers.len()];
            for (si, s) in plan.sends.iter().enumerate() {
                for slot in s.cons_start..s.cons_end {
                    slot_send[slot as usize] = si as u32;
                }
            }
        }
        Engine {
            pes: (0..plan.pes).map(|_| Pe::default()).collect(),
            iter_end: vec![SimTime::ZERO; plan.iter_labels.len()],
            timeline: timeline.then(|| Vec::with_capacity(plan.blocks.len())),
            overheads: net.has_overheads(),
            driving,
            slot_send,
            io: NetIo::default(),
            entry_net: vec![EntryNetStats::default(); plan.entries],
            plan,
            net,
            sched: Scheduler::new(queue, limits),
            completed: 0,
            makespan: SimTime::ZERO,
            msgs: MessageStats::default(),
        }
    }

    pub(crate) fn run(mut self) -> Result<ReplayReport, ReplayError> {
        for i in 0..self.plan.releases.len() {
            let (b, t) = self.plan.releases[i];
            self.plan.wait[b as usize].pending += 1;
            self.sched
                .schedule(SimTime::from_ps(t), EventClass::Normal, ev(ARRIVE, b))?;
        }
        for b in 0..self.plan.blocks.len() {
            if self.plan.wait[b].pending == 0 {
                self.make_ready(b as u32, SimTime::ZERO)?;
            }
        }
        while let Some((t, e)) = self.sched.next_event()? {
            let index = (e & INDEX_MASK) as u32;
            match e >> KIND_SHIFT {
                ARRIVE => {
                    let w = &mut self.plan.wait[index as usize];
                    w.key_ps = w.key_ps.max(t.as_ps());
                    w.pending -= 1;
                    if w.pending == 0 {
                        self.make_ready(index, t)?;
                    }
                }
                END => {
                    let pe = &mut self.pes[index as usize];
                    pe.busy = false;
                    let b = pe.running;
                    self.finish(b, t)?;
                    let pe = &mut self.pes[index as usize];
                    if !pe.ready.is_empty() && !pe.dispatch_pending {
                        pe.dispatch_pending = true;
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
        }
        let total = self.plan.blocks.len() as u64;
        if self.completed < total {
            return Err(ReplayError::Stuck(crate::stuck::diagnose(
                self.plan,
                self.completed,
            )));
        }
        Ok(ReplayReport {
            makespan: self.makespan,
            pes: self.plan.pes,
            blocks: total,
            iterations: self
                .plan
                .iter_labels
                .iter()
                .copied()
                .zip(self.iter_end.iter().copied())
                .collect(),
            messages: self.msgs,
            pe_busy_ps: self.pes.iter().map(|p| p.busy_ps).collect(),
            pe_blocks: self.pes.iter().map(|p| p.blocks).collect(),
            events: self.sched.events(),
            timeline: self.timeline,
            entry_net: self.entry_net,
            net: self.net.stats(),
        })
    }

    #[inline]
    fn make_ready(&mut self, b: u32, t: SimTime) -> Result<(), ReplayError> {
        let cb = self.plan.blocks[b as usize];
        let pe = &mut self.pes[cb.pe as usize];
        pe.ready
            .push(Reverse((cb.prio, self.plan.wait[b as usize].key_ps, b)));
        if !pe.busy && !pe.dispatch_pending {
            pe.dispatch_pending = true;
            self.sched
                .schedule(t, EventClass::Late, ev(DISPATCH, cb.pe))?;
        }
        Ok(())
    }

    /// Runs ready blocks on `pe` at `t`: zero-time blocks complete inline, the first block that
    /// takes time makes the PE busy until its END event.
    fn dispatch(&mut self, pe_idx: u32, t: SimTime) -> Result<(), ReplayError> {
        // `dispatch_pending` stays set while we loop so blocks made ready inline don't schedule
        // another DISPATCH for this PE.
        loop {
            let pe = &mut self.pes[pe_idx as usize];
            if pe.busy {
                break;
            }
            let Some(Reverse((_, _, b))) = pe.ready.pop() else {
                break;
            };
            let dur = self.start(b, pe_idx, t)?;
            let end = t
                .checked_add(dur)
                .ok_or(ReplayError::Sched(sim_core::SchedError::Overflow))?;
            let pe = &mut self.pes[pe_idx as usize];
            pe.busy_ps += dur.as_ps();
            pe.blocks += 1;
            if let Some(tl) = self.timeline.as_mut() {
                tl.push(TimelineRecord {
                    block: b,
                    pe: pe_idx,
                    ready: SimTime::from_ps(self.plan.wait[b as usize].key_ps),
                    start: t,
                    end,
                });
            }
            if dur == SimDuration::ZERO {
                self.finish(b, t)?;
            } else {
                pe.busy = true;
                pe.running = b;
                self.sched
                    .schedule(end, EventClass::Normal, ev(END, pe_idx))?;
                break;
            }
        }
        self.pes[pe_idx as usize].dispatch_pending = false;
        Ok(())
    }

    /// Starts block `b` on `pe` at `t`: schedules its messages; returns its effective duration
    /// (receive overhead + scaled duration + send overheads).
    #[inline]
    fn start(&mut self, b: u32, pe: u32, t: SimTime) -> Result<SimDuration, ReplayError> {
        let cb = self.plan.blocks[b as usize];
        let mut recv_oh = 0u64;
        if self.overheads && cb.trigger_src_pe != u32::MAX && cb.trigger_src_pe != pe {
            let x = self.plan.extra[b as usize];
            let info = MessageInfo {
                src_pe: cb.trigger_src_pe,
                dst_pe: pe,
                bytes: self.plan.sends[x.trigger_send as usize].bytes,
            };
            recv_oh = self.net.recv_overhead(&info).as_ps();
            self.entry_net[x.entry as usize].overhead_ps += recv_oh;
        }
        let base = t
            .as_ps()
            .checked_add(recv_oh)
            .ok_or(sim_core::SchedError::Overflow)?;
        let mut send_oh = 0u64;
        let (s0, s1) = (
            self.plan.send_start[b as usize],
            self.plan.send_start[b as usize + 1],
        );
        for si in s0..s1 {
            let s = self.plan.sends[si as usize];
            if s.cons_start == s.cons_end {
                self.msgs.unconsumed_sends += 1;
                continue;
            }
            for slot in s.cons_start..s.cons_end {
                let c = self.plan.consumers[slot as usize];
                let dst = self.plan.consumer_pe[slot as usize];
                if let Some(rw) = &self.plan.recorded_wire {
                    let wire = rw[slot as usize];
                    if dst == pe {
                        self.msgs.local += 1;
                        self.msgs.local_bytes += s.bytes;
                    } else {
                        self.msgs.remote += 1;
                        self.msgs.remote_bytes += s.bytes;
                        let es =
                            &mut self.entry_net[self.plan.consumer_entry[slot as usize] as usize];
                        es.messages += 1;
                        es.bytes += s.bytes;
                        es.wire_ps += wire;
                    }
                    let at = (base + s.off_ps + send_oh)
                        .checked_add(wire)
                        .ok_or(sim_core::SchedError::Overflow)?;
                    self.sched
                        .schedule(SimTime::from_ps(at), EventClass::Normal, ev(ARRIVE, c))?;
                    continue;
                }
                if dst == pe {
                    self.msgs.local += 1;
                    self.msgs.local_bytes += s.bytes;
                    let at = SimTime::from_ps(base + s.off_ps + send_oh);
                    self.sched.schedule(at, EventClass::Normal, ev(ARRIVE, c))?;
                    continue;
                }
                self.msgs.remote += 1;
                self.msgs.remote_bytes += s.bytes;
                let info = MessageInfo {
                    src_pe: pe,
                    dst_pe: dst,
                    bytes: s.bytes,
                };
                let ready = base
                    .checked_add(s.off_ps + send_oh)
                    .ok_or(sim_core::SchedError::Overflow)?;
                let (depart, cpu) = if self.overheads {
                    let st = self.net.sender(&info, SimTime::from_ps(ready));
                    (st.depart, st.cpu.as_ps())
                } else {
                    (SimTime::from_ps(ready), 0)
                };
                send_oh = send_oh
                    .checked_add(cpu)
                    .ok_or(sim_core::SchedError::Overflow)?;
                let es = &mut self.entry_net[self.plan.consumer_entry[slot as usize] as usize];
                es.messages += 1;
                es.bytes += s.bytes;
                es.overhead_ps += cpu;
                if self.driving == Driving::Stateless {
                    let wire = self.net.wire_time(&info, depart);
                    es.wire_ps += wire.as_ps();
                    let at = depart
                        .checked_add(wire)
                        .ok_or(sim_core::SchedError::Overflow)?;
                    self.sched.schedule(at, EventClass::Normal, ev(ARRIVE, c))?;
                } else {
                    self.sched
                        .schedule(depart, EventClass::Normal, ev(DEPART, slot))?;
                }
            }
        }
        let total = recv_oh
            .checked_add(cb.dur_ps)
            .and_then(|d| d.checked_add(send_oh))
            .ok_or(sim_core::SchedError::Overflow)?;
        Ok(SimDuration::from_ps(total))
    }

    /// A message of an ordered or event-driven model leaves now.
    fn depart(&mut self, slot: u32, t: SimTime) -> Result<(), ReplayError> {
        let send = self.slot_send[slot as usize] as usize;
        let s = self.plan.sends[send];
        let c = self.plan.consumers[slot as usize];
        let src_block = self.plan.send_block[send];
        let info = MessageInfo {
            src_pe: self.plan.blocks[src_block as usize].pe,
            dst_pe: self.plan.consumer_pe[slot as usize],
            bytes: s.bytes,
        };
        if self.driving == Driving::EventDriven {
            self.net.start_message(t, &info, slot, &mut self.io);
            return self.drain_net();
        }
        let wire = self.net.wire_time(&info, t);
        self.entry_net[self.plan.consumer_entry[slot as usize] as usize].wire_ps += wire.as_ps();
        let at = t.checked_add(wire).ok_or(sim_core::SchedError::Overflow)?;
        self.sched.schedule(at, EventClass::Normal, ev(ARRIVE, c))?;
        Ok(())
    }

    /// Moves an event-driven model's new events and deliveries into the event queue.
    fn drain_net(&mut self) -> Result<(), ReplayError> {
        for i in 0..self.io.events.len() {
            let (at, e) = self.io.events[i];
            self.sched.schedule(at, EventClass::Normal, ev(NET, e))?;
        }
        self.io.events.clear();
        for i in 0..self.io.deliveries.len() {
            let d = self.io.deliveries[i];
            let c = self.plan.consumers[d.token as usize];
            let es = &mut self.entry_net[self.plan.consumer_entry[d.token as usize] as usize];
            es.wire_ps += d.wire.as_ps();
            es.queueing_ps += d.queueing.as_ps();
            self.sched
                .schedule(d.at, EventClass::Normal, ev(ARRIVE, c))?;
        }
        self.io.deliveries.clear();
        Ok(())
    }

    #[inline]
    fn finish(&mut self, b: u32, t: SimTime) -> Result<(), ReplayError> {
        self.completed += 1;
        if t > self.makespan {
            self.makespan = t;
        }
        let slot = self.plan.blocks[b as usize].iter_slot;
        if slot != NO_ITER && self.iter_end[slot as usize] < t {
            self.iter_end[slot as usize] = t;
        }
        let (d0, d1) = (
            self.plan.dep_start[b as usize],
            self.plan.dep_start[b as usize + 1],
        );
        let key = self.plan.wait[b as usize].key_ps;
        if let Some(&next) = self.plan.chain_next.get(b as usize)
            && next != u32::MAX
        {
            let w = &mut self.plan.wait[next as usize];
            w.key_ps = w.key_ps.max(key);
            w.pending -= 1;
            if w.pending == 0 {
                self.make_ready(next, t)?;
            }
        }
        if let Some(&next) = self.plan.obj_next.get(b as usize)
            && next != u32::MAX
        {
            let w = &mut self.plan.wait[next as usize];
            w.pending -= 1;
            if w.pending == 0 {
                self.make_ready(next, t)?;
            }
        }
        for i in d0..d1 {
            let d = self.plan.dependents[i as usize];
            let w = &mut self.plan.wait[d as usize];
            w.key_ps = w.key_ps.max(key);
            w.pending -= 1;
            if w.pending == 0 {
                self.make_ready(d, t)?;
            }
        }
        Ok(())
    }
}
