//! The critical path of a replay: the chain of block runs, message deliveries and waits that
//! ends with the last block, walked back from the end through the timeline.
//!
//! # How a block's start is explained
//!
//! The replay records, per block, when its last condition was met (`released`) and when it
//! started. A block that started later than it was released waited for its PE: the path
//! continues through the block its PE ran before it (which ended when it started), whose
//! whole run is on the path: the PE's work is what the block waited for. Otherwise
//! the path continues through the condition met last: a dependency (or the previous block of
//! its object or recorded PE) that ended at that instant, else its trigger message, which
//! leads to the block that sent it, at the send's point inside that block. A block with
//! neither starts the path.
//!
//! # The breakdown, exact by construction
//!
//! The path's segments tile `[0, makespan]` without gap or overlap, so their lengths sum to
//! the makespan:
//!
//! * **compute**: the part of a path block's run that is its scaled duration, by entry method
//!   (a block the path's next block waited behind on its PE included: its run is the time the
//!   PE needed before it could start the next one);
//! * **CPU overheads**: the rest of that run (receive and send overheads, the runtime's
//!   per-block and local-message costs, OS noise);
//! * **network**: from a trigger's send point to its arrival, split into the model's send and
//!   receive CPU costs before departure (`overhead`), the zero-byte time of a lone message on
//!   an idle network (`latency`), the extra time its bytes take alone (`serialization`), and
//!   what remains (`queueing`: links, NICs, contention with other messages);
//! * **idle**: gaps the above do not explain (a recorded release time, time 0 to the first
//!   block).
//!
//! Besides the tiling, **queued** (`queued_ps`) is the part of the path's compute and
//! overheads during which the path's next block was already ready and waited behind the
//! running block on its PE: what another order of ready blocks could at best move (the
//! critical-path-priority what-if measures whether it does). It is part of compute and
//! overheads, not a cause beside them.

use crate::AnalysisError;
use network_models::{MessageInfo, NetSpec, lone_wire_time};
use replay::{Binding, Bindings, CpuScale, ReplayConfig, ReplayReport, TimelineRecord};
use serde::Serialize;
use sim_core::{Ratio, SimDuration};
use std::collections::HashMap;
use trace::{Repeated, Trace};

const NONE: u32 = u32::MAX;

/// How a path block's start was bound: the edge from the path's previous block.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Edge {
    /// The path starts here.
    Start,
    /// The block waited for its trigger message, sent by `from`.
    Message {
        /// Sending block.
        from: u32,
        /// Payload size.
        bytes: u64,
        /// Between two PEs.
        remote: bool,
        /// The send's point inside the sending block.
        send_ps: u64,
        /// Arrival (the block's release).
        arrive_ps: u64,
        /// CPU costs before departure (sender's and the sending block's receive overheads).
        overhead_ps: u64,
        /// Zero-byte time of a lone message on an idle network.
        latency_ps: u64,
        /// Extra time of its bytes, alone.
        serialization_ps: u64,
        /// The rest: waits for links, NICs and other messages.
        queueing_ps: u64,
    },
    /// The block waited for a dependency `from` to end.
    Dependency {
        /// The dependency.
        from: u32,
    },
    /// The block waited for the previous block of its object (object order).
    ObjectOrder {
        /// That block.
        from: u32,
    },
    /// The block waited for the previous block of its recorded PE (recorded order).
    RecordedOrder {
        /// That block.
        from: u32,
    },
    /// The block was ready at `released_ps` but its PE ran `from` until it started.
    Pe {
        /// The block its PE ran before it.
        from: u32,
        /// When it was ready.
        released_ps: u64,
    },
}

/// One block on the critical path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Step {
    /// Block id.
    pub block: u32,
    /// Entry method id.
    pub entry: u32,
    /// Object id.
    pub object: u32,
    /// PE it ran on.
    pub pe: u32,
    /// Start of its run.
    pub start_ps: u64,
    /// End of its run.
    pub end_ps: u64,
    /// Part of its run on the path that is its scaled duration.
    pub compute_ps: u64,
    /// Part of its run on the path that is CPU overhead.
    pub overhead_ps: u64,
    /// Of its compute and overhead on the path, the part after the path's next block was
    /// ready: that block waited behind it on their PE (0 unless the next step's edge is
    /// [`Edge::Pe`]).
    pub queued_ps: u64,
    /// Unexplained gap between its binding and its start (counted as idle).
    pub idle_before_ps: u64,
    /// How its start was bound.
    pub edge: Edge,
}

/// Network time on the path, by component.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct NetworkParts {
    /// CPU costs between a send's point and its departure.
    pub overhead_ps: u64,
    /// Lone zero-byte message time.
    pub latency_ps: u64,
    /// Lone message time of the bytes.
    pub serialization_ps: u64,
    /// Waiting for links, NICs and other messages.
    pub queueing_ps: u64,
    /// Messages between PEs on the path.
    pub remote_messages: u64,
    /// Messages within a PE on the path.
    pub local_messages: u64,
    /// Bytes of the path's messages.
    pub bytes: u64,
}

impl NetworkParts {
    /// All network time.
    pub fn total_ps(&self) -> u64 {
        self.overhead_ps + self.latency_ps + self.serialization_ps + self.queueing_ps
    }
}

/// Compute on the path attributed to one entry method, object or PE.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Share {
    /// Its id.
    pub id: u32,
    /// Its name.
    pub name: String,
    /// Compute on the path.
    pub compute_ps: u64,
    /// Path blocks.
    pub blocks: u64,
}

/// The critical path and its length split by cause; the parts sum to the makespan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CriticalPath {
    /// The replay's makespan (the path's length).
    pub makespan_ps: u64,
    /// Compute of path blocks.
    pub compute_ps: u64,
    /// CPU overheads of path blocks.
    pub overhead_ps: u64,
    /// Message time on the path.
    pub network: NetworkParts,
    /// Of `compute_ps + overhead_ps`: runs during which the path's next block was ready and
    /// waited behind them on its PE (not a separate part of the makespan).
    pub queued_ps: u64,
    /// Unexplained gaps.
    pub idle_ps: u64,
    /// Compute per entry method, largest first.
    pub by_entry: Vec<Share>,
    /// Compute per object, largest first.
    pub by_object: Vec<Share>,
    /// Compute per PE, largest first.
    pub by_pe: Vec<Share>,
    /// Objects on the path.
    pub objects_on_path: u64,
    /// The path's blocks, first to last.
    pub steps: Vec<Step>,
}

impl CriticalPath {
    /// Sum of all parts (equals [`CriticalPath::makespan_ps`]).
    pub fn total_ps(&self) -> u64 {
        self.compute_ps + self.overhead_ps + self.network.total_ps() + self.idle_ps
    }
}

fn scale_of(cfg: &ReplayConfig, pe: u32) -> Ratio {
    match &cfg.cpu_scale {
        CpuScale::Uniform(r) => *r,
        CpuScale::PerPe(v) => v.get(pe as usize).copied().unwrap_or(Ratio::ONE),
    }
}

/// The blocks a walk reads: a flat trace, or a repeated one whose block `k * B + i` is body
/// block `i` in iteration `k` (messages stay within an iteration).
#[derive(Clone, Copy, Debug)]
pub enum Blocks<'a> {
    /// Every block stored.
    Flat(&'a Trace),
    /// One iteration stored.
    Repeated(&'a Repeated),
}

impl<'a> Blocks<'a> {
    /// The stored blocks: the trace, or the repeated trace's iteration.
    pub fn body(self) -> &'a Trace {
        match self {
            Blocks::Flat(t) => t,
            Blocks::Repeated(r) => r.body(),
        }
    }
    /// `(k, i)` of global block `b`.
    fn split(self, b: u32) -> (u32, u32) {
        match self {
            Blocks::Flat(_) => (0, b),
            Blocks::Repeated(r) => {
                let n = r.body().num_blocks().max(1) as u32;
                (b / n, b % n)
            }
        }
    }
    /// Blocks in the run.
    pub fn len(self) -> u64 {
        match self {
            Blocks::Flat(t) => t.num_blocks() as u64,
            Blocks::Repeated(r) => r.num_blocks(),
        }
    }
    /// No block.
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }
    /// Sum of every block's duration (unscaled).
    pub fn work_ps(self) -> u64 {
        let body: u64 = self.body().columns().duration_ps.iter().sum();
        match self {
            Blocks::Flat(_) => body,
            Blocks::Repeated(r) => {
                let v = r.varying();
                let cols = self.body().columns();
                let steady: u64 = body
                    - v.blocks
                        .iter()
                        .map(|&b| cols.duration_ps[b as usize])
                        .sum::<u64>();
                steady.saturating_mul(r.reps() as u64)
                    + v.durations_ps
                        .iter()
                        .fold(0u64, |a, &d| a.saturating_add(d))
            }
        }
    }
    fn duration(self, b: u32) -> SimDuration {
        match self {
            Blocks::Flat(t) => SimDuration::from_ps(t.columns().duration_ps[b as usize]),
            Blocks::Repeated(r) => {
                let (k, i) = self.split(b);
                r.duration(k, i)
            }
        }
    }
    /// The send that triggers `b`: its block, offset and size.
    fn trigger(self, b: u32) -> Option<(u32, SimDuration, u64)> {
        let body = self.body();
        let (k, i) = self.split(b);
        let si = *body.consumers().trigger_send.get(i as usize)?;
        if si == NONE {
            return None;
        }
        let si = si as usize;
        let from_i = body.send_blocks()[si];
        let send = &body.all_sends()[si];
        let off = match self {
            Blocks::Flat(_) => send.offset,
            Blocks::Repeated(r) => r.send_offset(k, from_i, si),
        };
        let n = body.num_blocks() as u32;
        Some((k * n + from_i, off, send.bytes))
    }
}

/// The block a path block's start leads back to, by its binding: the PE's previous block,
/// a dependency, the previous block of its object or recorded PE, else the sender of its
/// trigger; `None` where the path starts.
fn predecessor(g: Blocks<'_>, b: u32, bind: Binding) -> Option<u32> {
    match bind {
        Binding::Pe(p)
        | Binding::Dependency(p)
        | Binding::ObjectOrder(p)
        | Binding::RecordedOrder(p) => Some(p),
        Binding::Trigger | Binding::Start | Binding::Release => g.trigger(b).map(|t| t.0),
    }
}

/// The blocks of the critical path, last first, from the bindings alone (no run needed):
/// what [`critical_path_of`] needs the runs of.
pub fn path_blocks(g: Blocks<'_>, bindings: &Bindings) -> Result<Vec<u32>, AnalysisError> {
    let mut out = Vec::new();
    let Some(mut cur) = bindings.last() else {
        return Ok(out);
    };
    loop {
        if out.len() as u64 > g.len() {
            return Err(AnalysisError::Internal(
                "the critical path's bindings form a cycle".into(),
            ));
        }
        out.push(cur);
        match predecessor(g, cur, bindings.get(cur)) {
            Some(p) => cur = p,
            None => return Ok(out),
        }
    }
}

/// The runs of a set of blocks, kept from a replay's stream ([`replay::TimelineSink`]): what
/// the critical path reads in a replay that keeps no timeline. One bit per block of the run,
/// plus the kept records.
#[derive(Debug, Default)]
pub struct PathRuns {
    want: Vec<u64>,
    /// (block, position in the stream, record), sorted by block once the run is over.
    runs: Vec<(u32, u64, TimelineRecord)>,
    seen: u64,
}

impl PathRuns {
    /// Keeps the runs of `blocks` (ids below `total`).
    pub fn new(total: u64, blocks: &[u32]) -> PathRuns {
        let mut want = vec![0u64; total.div_ceil(64) as usize];
        for &b in blocks {
            if let Some(w) = want.get_mut(b as usize / 64) {
                *w |= 1 << (b % 64);
            }
        }
        PathRuns {
            want,
            runs: Vec::with_capacity(blocks.len()),
            seen: 0,
        }
    }
    fn finish(&mut self) {
        self.runs.sort_unstable_by_key(|r| r.0);
    }
    fn get(&self, b: u32) -> Option<(u64, TimelineRecord)> {
        let i = self.runs.binary_search_by_key(&b, |r| r.0).ok()?;
        Some((self.runs[i].1, self.runs[i].2))
    }
}

impl replay::TimelineSink for PathRuns {
    fn record(&mut self, r: &TimelineRecord) {
        let b = r.block as usize;
        if self
            .want
            .get(b / 64)
            .is_some_and(|w| w >> (b % 64) & 1 != 0)
        {
            self.runs.push((r.block, self.seen, *r));
        }
        self.seen += 1;
    }
}

/// The critical path of `report`, a replay of `trace` (flat) on `spec` with `cfg`, which must
/// have recorded the timeline ([`ReplayConfig::timeline`], which also records the bindings).
pub fn critical_path(
    trace: &Trace,
    report: &ReplayReport,
    spec: &NetSpec,
    cfg: &ReplayConfig,
) -> Result<CriticalPath, AnalysisError> {
    let n = trace.num_blocks();
    let tl = report.timeline.as_ref().ok_or(AnalysisError::NoTimeline)?;
    let bindings = report.bindings.as_ref().ok_or(AnalysisError::NoTimeline)?;
    if tl.len() != n || bindings.len() != n {
        return Err(AnalysisError::TimelineMismatch {
            records: tl.len() as u64,
            blocks: n as u64,
        });
    }
    let mut pos = vec![NONE; n];
    for (i, r) in tl.iter().enumerate() {
        let b = r.block as usize;
        if b >= n || pos[b] != NONE {
            return Err(AnalysisError::TimelineMismatch {
                records: tl.len() as u64,
                blocks: n as u64,
            });
        }
        pos[b] = i as u32;
    }
    let rec = |b: u32| -> Option<(u64, TimelineRecord)> {
        let p = *pos.get(b as usize)?;
        Some((p as u64, *tl.get(p as usize)?))
    };
    walk(
        Blocks::Flat(trace),
        &rec,
        &|b| bindings.get(b),
        bindings.last(),
        report.makespan.as_ps(),
        spec,
        cfg,
    )
}

/// The critical path from the bindings of a replay and the runs of its path's blocks
/// ([`path_blocks`], kept by a [`PathRuns`] during a second replay): the same result as
/// [`critical_path`] without a timeline. `bind` gives the binding of each path block.
pub fn critical_path_of(
    g: Blocks<'_>,
    runs: &mut PathRuns,
    bind: &dyn Fn(u32) -> Binding,
    last: Option<u32>,
    makespan_ps: u64,
    spec: &NetSpec,
    cfg: &ReplayConfig,
) -> Result<CriticalPath, AnalysisError> {
    runs.finish();
    let runs = &*runs;
    walk(g, &|b| runs.get(b), bind, last, makespan_ps, spec, cfg)
}

/// Walks the path back from `last` through the bindings, splitting its length by cause.
fn walk(
    g: Blocks<'_>,
    rec: &dyn Fn(u32) -> Option<(u64, TimelineRecord)>,
    bind: &dyn Fn(u32) -> Binding,
    last: Option<u32>,
    makespan: u64,
    spec: &NetSpec,
    cfg: &ReplayConfig,
) -> Result<CriticalPath, AnalysisError> {
    let trace = g.body();
    let cols = trace.columns();
    let run = |b: u32| {
        rec(b).ok_or_else(|| {
            AnalysisError::Internal(format!("the critical path needs block {b}'s run"))
        })
    };
    let recorded = matches!(spec, NetSpec::Recorded) || cfg.recorded_delays;
    // A lone message's parts: the sender's CPU before it leaves (on a fresh model: its send
    // overhead, LogGOPS's o + (s-1)O, without waiting for a busy NIC), its zero-byte wire
    // time, and what its bytes add.
    let mut lone: HashMap<(u32, u32, u64), (u64, u64, u64)> = HashMap::new();
    let mut lone_parts = |src: u32, dst: u32, bytes: u64| -> (u64, u64, u64) {
        *lone.entry((src, dst, bytes)).or_insert_with(|| {
            let info = |bytes| MessageInfo {
                src_pe: src,
                dst_pe: dst,
                bytes,
            };
            let at = |bytes| lone_wire_time(spec, &info(bytes)).map_or(0, |d| d.as_ps());
            let lat = at(0);
            let cpu = spec
                .build()
                .sender(&info(bytes), sim_core::SimTime::ZERO)
                .cpu
                .as_ps();
            (cpu, lat, at(bytes).saturating_sub(lat))
        })
    };
    let Some(last) = last else {
        return Ok(CriticalPath {
            makespan_ps: 0,
            compute_ps: 0,
            overhead_ps: 0,
            network: NetworkParts::default(),
            queued_ps: 0,
            idle_ps: 0,
            by_entry: Vec::new(),
            by_object: Vec::new(),
            by_pe: Vec::new(),
            objects_on_path: 0,
            steps: Vec::new(),
        });
    };
    let mut steps = Vec::new();
    let mut net = NetworkParts::default();
    // The current block, the end of its part on the path, and when the path's next block
    // became ready if it waited behind the current one on their PE.
    let (mut cur, mut own_end, mut behind_from) = (last, run(last)?.1.end.as_ps(), None::<u64>);
    let mut guard = g.len() + 1;
    loop {
        if guard == 0 {
            return Err(AnalysisError::Internal(
                "the critical-path walk did not move back in time".into(),
            ));
        }
        guard -= 1;
        let (cur_pos, r) = run(cur)?;
        let (start, released) = (r.start.as_ps(), r.released.as_ps());
        let (_, i) = g.split(cur);
        let own = own_end.saturating_sub(start);
        let scaled = scale_of(cfg, r.pe).scale(g.duration(cur)).as_ps();
        let compute = own.min(scaled);
        let mut step = Step {
            block: cur,
            entry: cols.entry[i as usize],
            object: cols.object[i as usize],
            pe: r.pe,
            start_ps: start,
            end_ps: r.end.as_ps(),
            compute_ps: compute,
            overhead_ps: own - compute,
            queued_ps: behind_from.map_or(0, |ready| own_end.saturating_sub(ready.max(start))),
            idle_before_ps: 0,
            edge: Edge::Start,
        };
        let b = bind(cur);
        if let Binding::Pe(p) = b {
            // It waited for its PE, which ran `p` until it started.
            let p_end = run(p)?.1.end.as_ps();
            step.idle_before_ps = start.saturating_sub(p_end);
            step.edge = Edge::Pe {
                from: p,
                released_ps: released,
            };
            steps.push(step);
            own_end = p_end;
            behind_from = Some(released);
            cur = p;
            continue;
        }
        // Bound by its last condition, met at `released`.
        step.idle_before_ps = start - released.min(start);
        let (edge, next) = match b {
            Binding::Dependency(d) => (
                Edge::Dependency { from: d },
                Some((d, run(d)?.1.end.as_ps())),
            ),
            Binding::ObjectOrder(o) => (Edge::ObjectOrder { from: o }, Some((o, released))),
            Binding::RecordedOrder(o) => (Edge::RecordedOrder { from: o }, Some((o, released))),
            _ => match g.trigger(cur) {
                Some((s, offset, bytes)) => {
                    let sr = run(s)?.1;
                    let s_start = sr.start.as_ps();
                    let off = scale_of(cfg, sr.pe).scale(offset).as_ps();
                    // A send leaves inside its block; under jitter the scaled offset can
                    // overshoot.
                    let send_ps = s_start
                        .saturating_add(off)
                        .min(sr.end.as_ps())
                        .min(released);
                    let remote = sr.pe != r.pe;
                    let mut left = released - send_ps;
                    let mut take = |x: u64| {
                        let t = x.min(left);
                        left -= t;
                        t
                    };
                    let (overhead, latency, serialization) = if recorded {
                        (0, take(u64::MAX), 0)
                    } else if remote {
                        let (oh, lat, ser) = lone_parts(sr.pe, r.pe, bytes);
                        (take(oh), take(lat), take(ser))
                    } else {
                        (take(u64::MAX), 0, 0)
                    };
                    let queueing = take(u64::MAX);
                    net.overhead_ps += overhead;
                    net.latency_ps += latency;
                    net.serialization_ps += serialization;
                    net.queueing_ps += queueing;
                    net.bytes += bytes;
                    if remote {
                        net.remote_messages += 1;
                    } else {
                        net.local_messages += 1;
                    }
                    (
                        Edge::Message {
                            from: s,
                            bytes,
                            remote,
                            send_ps,
                            arrive_ps: released,
                            overhead_ps: overhead,
                            latency_ps: latency,
                            serialization_ps: serialization,
                            queueing_ps: queueing,
                        },
                        Some((s, send_ps)),
                    )
                }
                None => (Edge::Start, None),
            },
        };
        if next.is_none() {
            // Nothing before it: the time from 0 to its start is idle.
            step.idle_before_ps = start;
        }
        step.edge = edge;
        steps.push(step);
        match next {
            Some((x, end)) => {
                if run(x)?.0 >= cur_pos {
                    return Err(AnalysisError::Internal(format!(
                        "block {x} explains the start of block {cur} but ran after it"
                    )));
                }
                own_end = end;
                behind_from = None;
                cur = x;
            }
            None => break,
        }
    }
    steps.reverse();
    let mut by_entry: HashMap<u32, (u64, u64)> = HashMap::new();
    let mut by_object: HashMap<u32, (u64, u64)> = HashMap::new();
    let mut by_pe: HashMap<u32, (u64, u64)> = HashMap::new();
    let (mut compute, mut overhead, mut queued, mut idle) = (0u64, 0u64, 0u64, 0u64);
    for s in &steps {
        compute += s.compute_ps;
        overhead += s.overhead_ps;
        queued += s.queued_ps;
        idle += s.idle_before_ps;
        for (m, k) in [
            (&mut by_entry, s.entry),
            (&mut by_object, s.object),
            (&mut by_pe, s.pe),
        ] {
            let e = m.entry(k).or_default();
            e.0 += s.compute_ps;
            e.1 += 1;
        }
    }
    let shares = |m: HashMap<u32, (u64, u64)>, name: &dyn Fn(u32) -> String| {
        let mut v: Vec<Share> = m
            .into_iter()
            .map(|(id, (c, b))| Share {
                id,
                name: name(id),
                compute_ps: c,
                blocks: b,
            })
            .collect();
        v.sort_by(|a, b| b.compute_ps.cmp(&a.compute_ps).then(a.id.cmp(&b.id)));
        v
    };
    let objects_on_path = by_object.len() as u64;
    let cp = CriticalPath {
        makespan_ps: makespan,
        compute_ps: compute,
        overhead_ps: overhead,
        network: net,
        queued_ps: queued,
        idle_ps: idle,
        by_entry: shares(by_entry, &|e| {
            trace
                .entries
                .get(e as usize)
                .map_or_else(|| format!("entry {e}"), |x| x.name.clone())
        }),
        by_object: shares(by_object, &|o| {
            trace
                .objects
                .get(o as usize)
                .map_or_else(|| format!("object {o}"), |x| x.name.clone())
        }),
        by_pe: shares(by_pe, &|p| format!("PE {p}")),
        objects_on_path,
        steps,
    };
    if cp.total_ps() != makespan {
        return Err(AnalysisError::Internal(format!(
            "the critical path's parts sum to {} ps, the makespan is {makespan} ps",
            cp.total_ps()
        )));
    }
    Ok(cp)
}
