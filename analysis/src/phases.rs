//! Communication phases (Mehra et al.'s Communication Phase Graph, §A1.4–A1.5 of the MK
//! notes): which groups of messages act together, whether each is a **pipeline** or a
//! **loosely synchronous** exchange, each phase's analytic time from MK's closed forms, and
//! its simulated time in a replay, side by side.
//!
//! How MK's algorithm maps onto a message-driven trace:
//!
//! * **Call points.** MK's send and receive points are APT constructs; a trace has entry
//!   methods. A message from a block of entry `A` to entry `B` joins MK's send point `(A ->
//!   B)` with the receive point `B`, so the CPG's connected components (Step 2) are the
//!   *receiving entry methods*: one static phase per entry that receives messages between
//!   different objects (an object's messages to itself are not communication and are
//!   skipped). Objects play MK's processors.
//! * **Disjoint domains.** A static phase whose objects fall into disjoint groups (PGE2's two
//!   pipelines, MK's footnote) is split into one phase per group, up to
//!   [`MAX_SPLIT`] groups (more are kept as one phase).
//! * **Instances.** A phase runs once per iteration: a message belongs to the instance of the
//!   sender's *epoch*, the number of iteration-labelled blocks its object has run up to and
//!   including the sending block. Without iteration labels a phase has one instance (a
//!   pipeline then spans its whole loop, as in MK).
//! * **Classification (Step 3).** A phase is a pipeline if some object receives in it before
//!   it first sends in it (in the object's order of the replay); otherwise it is loosely
//!   synchronous. A pipeline's depth `D` is the number of objects on the longest chain of its
//!   sender -> receiver pairs (MK's convention fixed as the notes advise: Fill is `D - 1`
//!   hops); its width `B` is the most messages one object receives in an instance.
//!
//! Analytic time of an instance (MK §A1.5, with `tau(m)` the wire time of the phase's
//! largest message alone on the network, `s` and `r` the model's CPU overheads):
//!
//! * synchronous: `R (tau(m) + s + r)`, with `R` the most send-then-receive rounds one
//!   object makes in the instance (MK's formula per round; ATM2D's four exchanges are four
//!   rounds of one phase here, since they share an entry method). Computation between a send
//!   and its receive is not counted (MK's `max(tau, W)` needs compute markers a trace lacks).
//! * pipeline: `Fill + Remain = (D - 1)(tau(m) + s + r + W) + B (s + r + W)` (`o = 0`), with
//!   `W` the mean stage work: the time from the start of a block that receives in the phase
//!   to the phase message it forwards.
//!
//! Simulated time of an instance, from the replay's timeline:
//!
//! * synchronous: from its first send (the moment the sending block reaches it, before `s`)
//!   to the end of the last receive overhead (`r` after the receiving block starts).
//! * pipeline: from the start of the first stage (its send less the stage work `W_max`, not
//!   before its block starts) to the end of the last stage (the receiving block's start plus
//!   `r + W_max` and its phase sends' `s`, not after the block ends), with `W_max` the largest
//!   stage work. A block that goes on to other work (PGE1's turn starts the backward loop in
//!   its last forward block) is thereby cut at the stage.
//!
//! The whole run's analytic time is MK's `T_s + T_p`: `T_p` adds up the instances in the
//! order they begin, taking the maximum over each run of consecutive instances that are
//! independent (no object that receives in one sends in a later one of the run: MK's
//! dependence rule, generalised to runs as the notes suggest); `T_s` is the busiest PE's
//! time outside phases (its blocks' time less what the phases account for: `r` per receive
//! and `s` per send of synchronous phases; for pipelines, each stage up to `r + W_max` plus
//! its sends' `s`).
//!
//! Where an instance's simulated time exceeds the analytic one, [`Why`] says by how much the
//! senders were skewed, messages took longer than alone (contention), or receivers were busy
//! when their message arrived.

use crate::AnalysisError;
use network_models::{MessageInfo, NetSpec, NetworkModel, lone_wire_time};
use replay::ReplayReport;
use std::collections::HashMap;
use trace::{BlockId, NO_ITERATION, Trace};

/// At most this many disjoint object groups split one static phase.
pub const MAX_SPLIT: usize = 64;
/// At most this many phase instances (phases x iterations).
pub const MAX_INSTANCES: usize = 1 << 22;
/// At most this many (receiving entry, object) pairs in the phase union-find.
const MAX_NODES: u64 = 1 << 26;
/// Wire times are measured alone for at most this many distinct PE pairs per phase.
const TAU_SAMPLES: usize = 16;

/// A phase's class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Loosely synchronous: every object sends before it receives.
    Synchronous,
    /// Asynchronous: some object receives before it sends (pipelines, trees).
    Pipeline,
}

impl Kind {
    /// `synchronous` or `pipeline`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Synchronous => "synchronous",
            Kind::Pipeline => "pipeline",
        }
    }
}

/// Why simulated time exceeds the analytic time (the largest values over a phase's instances).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Why {
    /// Spread of the instance's first sends over its objects (synchronous phases).
    pub skew_ps: u64,
    /// Most time a message took beyond `tau(m)` from its departure to its arrival.
    pub excess_wire_ps: u64,
    /// Most time a receiving block waited between its message's arrival and its start.
    pub receiver_busy_ps: u64,
}

/// One instance of a phase (one iteration of it).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Instance {
    /// The sender's epoch (iteration-labelled blocks run so far; 0 without labels).
    pub epoch: u32,
    /// When it begins in the replay (ps).
    pub begin_ps: u64,
    /// Its simulated time (ps).
    pub simulated_ps: u64,
    /// MK's analytic time (ps).
    pub analytic_ps: u64,
    /// Messages.
    pub messages: u64,
    /// Rounds (synchronous) or width `B` (pipeline).
    pub rounds_or_width: u32,
    /// What made it longer.
    pub why: Why,
}

/// One communication phase.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Phase {
    /// `entry` or `entry#k` when split into disjoint groups.
    pub name: String,
    /// The receiving entry method.
    pub entry: String,
    /// Pipeline or synchronous.
    pub kind: Kind,
    /// Objects that send in it.
    pub senders: u32,
    /// Objects that receive in it.
    pub receivers: u32,
    /// Objects on the longest sender -> receiver chain (pipelines; 2 for exchanges).
    pub depth: u32,
    /// The chain graph has a cycle (depth is then the number of objects).
    pub cyclic: bool,
    /// Largest message (bytes).
    pub max_bytes: u64,
    /// Its wire time alone on the network (the largest over sampled PE pairs).
    pub tau_ps: u64,
    /// Send overhead per message.
    pub s_ps: u64,
    /// Receive overhead per message.
    pub r_ps: u64,
    /// Mean stage work (pipelines).
    pub w_ps: u64,
    /// Largest stage work (pipelines).
    pub w_max_ps: u64,
    /// Its instances in order of epoch.
    pub instances: Vec<Instance>,
}

impl Phase {
    /// Mean simulated and analytic time per instance.
    pub fn means(&self) -> (f64, f64) {
        let n = self.instances.len().max(1) as f64;
        let s: f64 = self.instances.iter().map(|i| i.simulated_ps as f64).sum();
        let a: f64 = self.instances.iter().map(|i| i.analytic_ps as f64).sum();
        (s / n, a / n)
    }
    /// The largest of each cause over the instances.
    pub fn why(&self) -> Why {
        self.instances.iter().fold(Why::default(), |w, i| Why {
            skew_ps: w.skew_ps.max(i.why.skew_ps),
            excess_wire_ps: w.excess_wire_ps.max(i.why.excess_wire_ps),
            receiver_busy_ps: w.receiver_busy_ps.max(i.why.receiver_busy_ps),
        })
    }
    /// Why it differs, in words, when the mean simulated time is off the analytic one by
    /// more than 5% (and 1 ns); `None` when they agree.
    pub fn explain(&self) -> Option<String> {
        let (sim, an) = self.means();
        if (sim - an).abs() <= (0.05 * an).max(1000.0) {
            return None;
        }
        if sim < an {
            return Some(match self.kind {
                Kind::Pipeline => "faster than MK's form: stages overlap overheads or the \
                                   first and last stages do less work"
                    .into(),
                Kind::Synchronous => "faster than MK's form: rounds overlap".into(),
            });
        }
        let w = self.why();
        let mut causes = [
            (w.skew_ps, "skew: first sends spread over"),
            (
                w.excess_wire_ps,
                "contention: a message took longer than alone by",
            ),
            (
                w.receiver_busy_ps,
                "busy receivers: a message waited for its receiver",
            ),
        ];
        causes.sort_by_key(|c| std::cmp::Reverse(c.0));
        let named: Vec<String> = causes
            .iter()
            .filter(|c| c.0 > 0)
            .map(|c| format!("{} {}", c.1, crate::fmt_ps(c.0)))
            .collect();
        if named.is_empty() {
            let extra = if self.kind == Kind::Pipeline && self.w_max_ps > self.w_ps {
                "uneven stage work"
            } else {
                "work between the phase's messages"
            };
            return Some(extra.into());
        }
        Some(named.join("; "))
    }
}

/// The phases of a replayed trace and MK's aggregate.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Phases {
    /// Phases in order of first instance's begin time.
    pub phases: Vec<Phase>,
    /// MK's `T_p`: instances in begin order, runs of independent ones maximised.
    pub t_p_ps: u64,
    /// MK's `T_s`: the busiest PE's time outside phases.
    pub t_s_ps: u64,
    /// The PE with that time.
    pub t_s_pe: u32,
    /// The replay's makespan.
    pub makespan_ps: u64,
}

impl Phases {
    /// MK's analytic whole-run time `T_s + T_p`.
    pub fn analytic_ps(&self) -> u64 {
        self.t_s_ps + self.t_p_ps
    }
}

/// A message delivery between two different objects.
#[derive(Clone, Copy)]
struct Dlv {
    send: u32,
    sender: u32,
    consumer: u32,
    phase: u32,
    instance: u32,
}

/// Union-find with path halving.
fn find(p: &mut [u32], mut x: u32) -> u32 {
    while p[x as usize] != x {
        p[x as usize] = p[p[x as usize] as usize];
        x = p[x as usize];
    }
    x
}

/// Finds the phases of `trace` in its replay `report` (which needs the timeline) under the
/// network `net` (for `tau`, `s` and `r`).
pub fn phases(
    trace: &Trace,
    report: &ReplayReport,
    net: &NetSpec,
) -> Result<Phases, AnalysisError> {
    let tl = crate::views::timeline_of(trace, report)?;
    let n = trace.num_blocks();
    let cols = trace.columns();
    let mut start = vec![0u64; n];
    let mut end = vec![0u64; n];
    let mut ready = vec![0u64; n];
    let mut pe = vec![0u32; n];
    for r in tl {
        let b = r.block as usize;
        start[b] = r.start.as_ps();
        end[b] = r.end.as_ps();
        ready[b] = r.ready.as_ps();
        pe[b] = r.pe;
    }
    // Epoch of every block: iteration-labelled blocks of its object so far, this one included.
    let n_obj = trace.objects.len();
    let mut epoch = vec![0u32; n];
    if !cols.iteration.is_empty() {
        let mut seen = vec![0u32; n_obj];
        for r in tl {
            let b = r.block as usize;
            let o = cols.object[b] as usize;
            if cols.iteration[b] != NO_ITERATION {
                seen[o] += 1;
            }
            epoch[b] = seen[o];
        }
    }
    let model = net.build();
    let consumers = trace.consumers();
    let sends = trace.all_sends();
    let send_block = trace.send_blocks();
    // Static phases: receiving entries of messages between different objects.
    let mut entry_phase = vec![u32::MAX; trace.entries.len()];
    let mut static_entries: Vec<u32> = Vec::new();
    let mut dl: Vec<Dlv> = Vec::new();
    for (si, &b) in send_block.iter().enumerate() {
        let (c0, c1) = (
            consumers.start[si] as usize,
            consumers.start[si + 1] as usize,
        );
        for &c in &consumers.blocks[c0..c1] {
            if cols.object[c as usize] == cols.object[b as usize] {
                continue;
            }
            let e = cols.entry[c as usize] as usize;
            if entry_phase[e] == u32::MAX {
                entry_phase[e] = static_entries.len() as u32;
                static_entries.push(e as u32);
            }
            dl.push(Dlv {
                send: si as u32,
                sender: b,
                consumer: c,
                phase: entry_phase[e],
                instance: 0,
            });
        }
    }
    // Split each static phase into its disjoint object groups.
    let nodes = static_entries.len() as u64 * n_obj as u64;
    if nodes > MAX_NODES {
        return Err(AnalysisError::Options(format!(
            "phase analysis: {} receiving entries x {} objects is over {MAX_NODES}",
            static_entries.len(),
            n_obj
        )));
    }
    let mut uf: Vec<u32> = (0..nodes as u32).collect();
    for d in &dl {
        let base = d.phase as u64 * n_obj as u64;
        let a = (base + cols.object[d.sender as usize] as u64) as u32;
        let c = (base + cols.object[d.consumer as usize] as u64) as u32;
        let (ra, rc) = (find(&mut uf, a), find(&mut uf, c));
        if ra != rc {
            uf[ra.max(rc) as usize] = ra.min(rc);
        }
    }
    // Roots per static phase, in order of first appearance.
    let mut groups: Vec<Vec<u32>> = vec![Vec::new(); static_entries.len()];
    let mut root_group: HashMap<u32, u32> = HashMap::new();
    for d in &dl {
        let base = d.phase as u64 * n_obj as u64;
        let r = find(
            &mut uf,
            (base + cols.object[d.sender as usize] as u64) as u32,
        );
        if let std::collections::hash_map::Entry::Vacant(v) = root_group.entry(r) {
            let g = &mut groups[d.phase as usize];
            v.insert(g.len() as u32);
            g.push(r);
        }
    }
    // Final phases: (static phase, group) or the whole static phase.
    let mut phase_of: Vec<(u32, Option<u32>)> = Vec::new();
    let mut first_final = vec![0u32; static_entries.len()];
    for (sp, g) in groups.iter().enumerate() {
        first_final[sp] = phase_of.len() as u32;
        if g.len() > 1 && g.len() <= MAX_SPLIT {
            for k in 0..g.len() {
                phase_of.push((sp as u32, Some(k as u32)));
            }
        } else {
            phase_of.push((sp as u32, None));
        }
    }
    {
        for d in dl.iter_mut() {
            let sp = d.phase as usize;
            let split = groups[sp].len() > 1 && groups[sp].len() <= MAX_SPLIT;
            d.phase = if split {
                let base = sp as u64 * n_obj as u64;
                let r = find(
                    &mut uf,
                    (base + cols.object[d.sender as usize] as u64) as u32,
                );
                first_final[sp] + root_group[&r]
            } else {
                first_final[sp]
            };
        }
    }
    let np = phase_of.len();
    // Per block: its phase receive (delivery index) and its phase sends.
    let mut recv_of = vec![u32::MAX; n];
    let mut sends_of: HashMap<u32, Vec<u32>> = HashMap::new();
    for (i, d) in dl.iter().enumerate() {
        recv_of[d.consumer as usize] = i as u32;
        sends_of.entry(d.sender).or_default().push(i as u32);
    }
    // Overheads of a delivery (0 between objects on one PE: those never reach the model).
    let info = |d: &Dlv| MessageInfo {
        src_pe: pe[d.sender as usize],
        dst_pe: pe[d.consumer as usize],
        bytes: sends[d.send as usize].bytes,
    };
    let remote = |d: &Dlv| pe[d.sender as usize] != pe[d.consumer as usize];
    let s_of = |d: &Dlv, m: &dyn NetworkModel| {
        if remote(d) {
            m.send_overhead(&info(d)).as_ps()
        } else {
            0
        }
    };
    let r_of = |d: &Dlv, m: &dyn NetworkModel| {
        if remote(d) {
            m.recv_overhead(&info(d)).as_ps()
        } else {
            0
        }
    };
    // When a send is reached in its block: start, the trigger's receive overhead, the offset
    // and the send overheads of the block's earlier remote sends.
    let trig_r = |b: usize, m: &dyn NetworkModel| -> u64 {
        let ts = consumers.trigger_send[b];
        if ts == u32::MAX {
            return 0;
        }
        let sb = send_block[ts as usize] as usize;
        if pe[sb] == pe[b] {
            return 0;
        }
        m.recv_overhead(&MessageInfo {
            src_pe: pe[sb],
            dst_pe: pe[b],
            bytes: sends[ts as usize].bytes,
        })
        .as_ps()
    };
    let mut send_ready = vec![0u64; dl.len()];
    {
        let mut by_send = vec![0u64; sends.len()];
        for b in 0..n {
            let range = trace.send_range(BlockId(b as u32));
            if range.is_empty() || !sends_of.contains_key(&(b as u32)) {
                continue;
            }
            let acc = start[b] + trig_r(b, model.as_ref());
            let mut oh = 0u64;
            for si in range {
                let s = &sends[si];
                by_send[si] = acc + s.offset.as_ps() + oh;
                let (c0, c1) = (
                    consumers.start[si] as usize,
                    consumers.start[si + 1] as usize,
                );
                for &c in &consumers.blocks[c0..c1] {
                    if pe[c as usize] != pe[b] {
                        oh += model
                            .send_overhead(&MessageInfo {
                                src_pe: pe[b],
                                dst_pe: pe[c as usize],
                                bytes: s.bytes,
                            })
                            .as_ps();
                    }
                }
            }
        }
        for (i, d) in dl.iter().enumerate() {
            send_ready[i] = by_send[d.send as usize];
        }
    }
    // Classification (MK's Step 3): an object that receives in a phase before it first sends
    // in it makes the phase a pipeline.
    let mut is_async = vec![false; np];
    {
        let mut state: HashMap<(u32, u32), (bool, bool)> = HashMap::new(); // (received, sent)
        for r in tl {
            let b = r.block as usize;
            let o = cols.object[b];
            if recv_of[b] != u32::MAX {
                let d = &dl[recv_of[b] as usize];
                state.entry((d.phase, o)).or_default().0 = true;
            }
            if let Some(list) = sends_of.get(&(b as u32)) {
                for &i in list {
                    let d = &dl[i as usize];
                    let st = state.entry((d.phase, o)).or_default();
                    if !st.1 && st.0 {
                        is_async[d.phase as usize] = true;
                    }
                    st.1 = true;
                }
            }
        }
    }
    // Instances. A synchronous phase whose sender -> receiver pairs all carry the same number
    // of messages runs once per message on each pair (the j-th message of every pair is
    // instance j: robust where one block ends an iteration and starts the next); otherwise,
    // and for pipelines, a message belongs to its sender's epoch.
    let mut ordinal = vec![u32::MAX; dl.len()];
    {
        let mut by_pair: Vec<(u32, u32, u32, u64, u32)> = dl
            .iter()
            .enumerate()
            .filter(|(_, d)| !is_async[d.phase as usize])
            .map(|(i, d)| {
                (
                    d.phase,
                    cols.object[d.sender as usize],
                    cols.object[d.consumer as usize],
                    send_ready[i],
                    i as u32,
                )
            })
            .collect();
        by_pair.sort_unstable();
        // Messages per pair must be equal within a phase.
        let mut uniform = vec![true; np];
        let mut count_of = vec![u32::MAX; np];
        let mut j = 0;
        while j < by_pair.len() {
            let (p, a, c) = (by_pair[j].0, by_pair[j].1, by_pair[j].2);
            let mut k = j;
            while k < by_pair.len() && (by_pair[k].0, by_pair[k].1, by_pair[k].2) == (p, a, c) {
                ordinal[by_pair[k].4 as usize] = (k - j) as u32;
                k += 1;
            }
            let cnt = (k - j) as u32;
            if count_of[p as usize] == u32::MAX {
                count_of[p as usize] = cnt;
            } else if count_of[p as usize] != cnt {
                uniform[p as usize] = false;
            }
            j = k;
        }
        for (i, d) in dl.iter().enumerate() {
            if !uniform[d.phase as usize] {
                ordinal[i] = u32::MAX;
            }
        }
    }
    let mut inst_key: HashMap<(u32, u32), u32> = HashMap::new();
    let mut inst_list: Vec<(u32, u32)> = Vec::new();
    for (i, d) in dl.iter_mut().enumerate() {
        let key = (
            d.phase,
            if ordinal[i] != u32::MAX {
                ordinal[i]
            } else {
                epoch[d.sender as usize]
            },
        );
        let next = inst_list.len() as u32;
        let id = *inst_key.entry(key).or_insert(next);
        if id == next {
            if inst_list.len() >= MAX_INSTANCES {
                return Err(AnalysisError::Options(format!(
                    "phase analysis: more than {MAX_INSTANCES} phase instances"
                )));
            }
            inst_list.push(key);
        }
        d.instance = id;
    }
    drop(inst_key);
    let ni = inst_list.len();
    // Rounds (send-then-receive cycles) and receives per object in each instance.
    let mut rounds: HashMap<(u32, u32), (u32, bool, u32)> = HashMap::new();
    for r in tl {
        let b = r.block as usize;
        let o = cols.object[b];
        if recv_of[b] != u32::MAX {
            let d = &dl[recv_of[b] as usize];
            let e = rounds.entry((d.instance, o)).or_default();
            e.1 = true;
            e.2 += 1;
        }
        if let Some(list) = sends_of.get(&(b as u32)) {
            for &i in list {
                let d = &dl[i as usize];
                let e = rounds.entry((d.instance, o)).or_default();
                if e.0 == 0 || e.1 {
                    e.0 += 1;
                }
                e.1 = false;
            }
        }
    }
    let mut inst_rounds = vec![0u32; ni];
    let mut inst_width = vec![0u32; ni];
    for (&(i, _), &(rd, _, rc)) in &rounds {
        inst_rounds[i as usize] = inst_rounds[i as usize].max(rd);
        inst_width[i as usize] = inst_width[i as usize].max(rc);
    }
    drop(rounds);
    // Per phase: senders, receivers, pairs, sizes, stage work.
    let mut by_phase: Vec<Vec<u32>> = vec![Vec::new(); np];
    for (i, d) in dl.iter().enumerate() {
        by_phase[d.phase as usize].push(i as u32);
    }
    let mut out: Vec<Phase> = Vec::with_capacity(np);
    let mut inst_of_phase: Vec<Vec<u32>> = vec![Vec::new(); np];
    for (i, &(p, _)) in inst_list.iter().enumerate() {
        inst_of_phase[p as usize].push(i as u32);
    }
    // Per instance accumulators.
    let mut i_begin = vec![u64::MAX; ni];
    let mut i_end = vec![0u64; ni];
    let mut i_first_send = vec![u64::MAX; ni];
    let mut i_last_first_send: Vec<HashMap<u32, u64>> = Vec::new();
    i_last_first_send.resize_with(ni, HashMap::new);
    let mut i_msgs = vec![0u64; ni];
    let mut i_why = vec![Why::default(); ni];
    // Objects sending / receiving per phase (sorted, deduplicated) for the dependence rule.
    let mut sl: Vec<Vec<u32>> = vec![Vec::new(); np];
    let mut rl: Vec<Vec<u32>> = vec![Vec::new(); np];
    let mut attributed = vec![0u64; n];
    for (p, list) in by_phase.iter().enumerate() {
        let (sp, grp) = phase_of[p];
        let entry = trace.entries[static_entries[sp as usize] as usize]
            .name
            .clone();
        let name = match grp {
            Some(k) => format!("{entry}#{}", k + 1),
            None => entry.clone(),
        };
        let kind = if is_async[p] {
            Kind::Pipeline
        } else {
            Kind::Synchronous
        };
        let mut pairs: Vec<(u32, u32)> = Vec::with_capacity(list.len());
        let mut max_bytes = 0u64;
        for &i in list {
            let d = &dl[i as usize];
            let (a, c) = (
                cols.object[d.sender as usize],
                cols.object[d.consumer as usize],
            );
            pairs.push((a, c));
            sl[p].push(a);
            rl[p].push(c);
            max_bytes = max_bytes.max(sends[d.send as usize].bytes);
        }
        pairs.sort_unstable();
        pairs.dedup();
        sl[p].sort_unstable();
        sl[p].dedup();
        rl[p].sort_unstable();
        rl[p].dedup();
        let (depth, cyclic) = longest_chain(&pairs);
        // tau: the largest message alone, over a few distinct remote PE pairs.
        let mut tau = 0u64;
        let mut tried: Vec<(u32, u32)> = Vec::new();
        let (mut s_ps, mut r_ps) = (0u64, 0u64);
        for &i in list {
            let d = &dl[i as usize];
            if sends[d.send as usize].bytes != max_bytes || !remote(d) {
                continue;
            }
            let key = (pe[d.sender as usize], pe[d.consumer as usize]);
            if tried.contains(&key) {
                continue;
            }
            tried.push(key);
            let t = lone_wire_time(net, &info(d)).ok_or_else(|| {
                AnalysisError::Internal(format!(
                    "the network model never delivered a lone message {} -> {}",
                    key.0, key.1
                ))
            })?;
            tau = tau.max(t.as_ps());
            s_ps = s_ps.max(s_of(d, model.as_ref()));
            r_ps = r_ps.max(r_of(d, model.as_ref()));
            if tried.len() >= TAU_SAMPLES {
                break;
            }
        }
        // Stage work: offsets of phase sends in blocks that receive in this phase (or, for a
        // two-object pipeline, in the sending blocks).
        let (mut w_sum, mut w_n, mut w_max) = (0u128, 0u64, 0u64);
        let mut src_w = (0u128, 0u64, 0u64);
        for &i in list {
            let d = &dl[i as usize];
            let off = sends[d.send as usize].offset.as_ps();
            let rv = recv_of[d.sender as usize];
            if rv != u32::MAX && dl[rv as usize].phase == p as u32 {
                w_sum += off as u128;
                w_n += 1;
                w_max = w_max.max(off);
            } else {
                src_w.0 += off as u128;
                src_w.1 += 1;
                src_w.2 = src_w.2.max(off);
            }
        }
        if w_n == 0 {
            (w_sum, w_n, w_max) = src_w;
        }
        let w_mean = if w_n > 0 {
            (w_sum / w_n as u128) as u64
        } else {
            0
        };
        // Simulated spans, causes and attribution.
        for &i in list {
            let d = &dl[i as usize];
            let k = d.instance as usize;
            let (sb, cb) = (d.sender as usize, d.consumer as usize);
            let rdy = send_ready[i as usize];
            let (s, r) = (s_of(d, model.as_ref()), r_of(d, model.as_ref()));
            i_msgs[k] += 1;
            let (b, e) = match kind {
                Kind::Synchronous => (rdy, start[cb] + r),
                Kind::Pipeline => {
                    let sends_here = sends_of.get(&d.consumer).map_or(0, |v| {
                        v.iter()
                            .filter(|&&j| dl[j as usize].phase == p as u32)
                            .count()
                    }) as u64;
                    (
                        start[sb].max(rdy.saturating_sub(w_max)),
                        end[cb].min(start[cb] + r + w_max + s * sends_here),
                    )
                }
            };
            i_begin[k] = i_begin[k].min(b);
            i_end[k] = i_end[k].max(e);
            i_first_send[k] = i_first_send[k].min(rdy);
            let o = cols.object[sb];
            let f = i_last_first_send[k].entry(o).or_insert(rdy);
            *f = (*f).min(rdy);
            let w = &mut i_why[k];
            let arrival = ready[cb];
            let wire = arrival.saturating_sub(rdy + s);
            if remote(d) {
                w.excess_wire_ps = w.excess_wire_ps.max(wire.saturating_sub(tau));
            }
            w.receiver_busy_ps = w.receiver_busy_ps.max(start[cb].saturating_sub(arrival));
            // Attribution to phases, for T_s.
            match kind {
                Kind::Synchronous => {
                    attributed[sb] += s;
                    attributed[cb] += r;
                }
                Kind::Pipeline => {
                    attributed[sb] += s;
                    attributed[cb] += r + w_max;
                    if recv_of[sb] == u32::MAX || dl[recv_of[sb] as usize].phase != p as u32 {
                        // A source stage: its work before the send.
                        attributed[sb] += rdy.saturating_sub(start[sb]).min(w_max);
                    }
                }
            }
        }
        let mut instances = Vec::with_capacity(inst_of_phase[p].len());
        for &k in &inst_of_phase[p] {
            let k = k as usize;
            let (ro, width) = (inst_rounds[k] as u64, inst_width[k] as u64);
            let analytic = match kind {
                Kind::Synchronous => ro * (tau + s_ps + r_ps),
                Kind::Pipeline => {
                    (depth as u64).saturating_sub(1) * (tau + s_ps + r_ps + w_mean)
                        + width * (s_ps + r_ps + w_mean)
                }
            };
            let skew = i_last_first_send[k]
                .values()
                .max()
                .map_or(0, |m| m - i_first_send[k]);
            let mut why = i_why[k];
            if kind == Kind::Synchronous {
                why.skew_ps = skew;
            }
            instances.push(Instance {
                epoch: inst_list[k].1,
                begin_ps: i_begin[k],
                simulated_ps: i_end[k].saturating_sub(i_begin[k]),
                analytic_ps: analytic,
                messages: i_msgs[k],
                rounds_or_width: match kind {
                    Kind::Synchronous => ro as u32,
                    Kind::Pipeline => width as u32,
                },
                why,
            });
        }
        instances.sort_by_key(|i| (i.epoch, i.begin_ps));
        out.push(Phase {
            name,
            entry,
            kind,
            senders: sl[p].len() as u32,
            receivers: rl[p].len() as u32,
            depth,
            cyclic,
            max_bytes,
            tau_ps: tau,
            s_ps,
            r_ps,
            w_ps: if kind == Kind::Pipeline { w_mean } else { 0 },
            w_max_ps: if kind == Kind::Pipeline { w_max } else { 0 },
            instances,
        });
    }
    // T_p: instances in begin order; runs of mutually independent ones are maximised.
    let mut order: Vec<(u64, u32, usize)> = Vec::new();
    for (p, ph) in out.iter().enumerate() {
        for (j, i) in ph.instances.iter().enumerate() {
            order.push((i.begin_ps, p as u32, j));
        }
    }
    order.sort_unstable();
    let dep = dependence(&sl, &rl);
    let mut t_p = 0u64;
    let mut run: Vec<u32> = Vec::new();
    let mut run_max = 0u64;
    for &(_, p, j) in &order {
        let t = out[p as usize].instances[j].analytic_ps;
        let independent = !run.is_empty() && run.iter().all(|&q| q != p && !dep(q, p));
        if independent {
            run.push(p);
            run_max = run_max.max(t);
        } else {
            t_p += run_max;
            run.clear();
            run.push(p);
            run_max = t;
        }
    }
    t_p += run_max;
    // T_s: the busiest PE's time outside phases (MK's processors run one object each; here a
    // PE's objects share it).
    let mut outside = vec![0u64; report.pes as usize];
    for b in 0..n {
        let len = end[b] - start[b];
        if let Some(v) = outside.get_mut(pe[b] as usize) {
            *v += len - attributed[b].min(len);
        }
    }
    let (t_s_pe, t_s) = outside
        .iter()
        .enumerate()
        .max_by_key(|&(o, &v)| (v, std::cmp::Reverse(o)))
        .map_or((0, 0), |(o, &v)| (o as u32, v));
    let mut idx: Vec<usize> = (0..out.len()).collect();
    idx.sort_by_key(|&p| (out[p].instances.first().map_or(0, |i| i.begin_ps), p));
    let phases = idx.into_iter().map(|p| out[p].clone()).collect();
    Ok(Phases {
        phases,
        t_p_ps: t_p,
        t_s_ps: t_s,
        t_s_pe,
        makespan_ps: report.makespan.as_ps(),
    })
}

/// MK's dependence: `dep(a, b)` when an object that receives in phase `a` sends in `b`.
fn dependence<'a>(sl: &'a [Vec<u32>], rl: &'a [Vec<u32>]) -> impl Fn(u32, u32) -> bool + 'a {
    move |a, b| {
        let (x, y) = (&rl[a as usize], &sl[b as usize]);
        let (mut i, mut j) = (0, 0);
        while i < x.len() && j < y.len() {
            match x[i].cmp(&y[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => return true,
            }
        }
        false
    }
}

/// Objects on the longest chain of `pairs` (sorted, distinct); a cycle gives the number of
/// objects involved and `true`.
fn longest_chain(pairs: &[(u32, u32)]) -> (u32, bool) {
    let mut ids: Vec<u32> = pairs.iter().flat_map(|&(a, b)| [a, b]).collect();
    ids.sort_unstable();
    ids.dedup();
    let at = |o: u32| ids.binary_search(&o).expect("listed") as u32;
    let nn = ids.len();
    let mut indeg = vec![0u32; nn];
    let mut adj_start = vec![0u32; nn + 1];
    for &(a, b) in pairs {
        adj_start[at(a) as usize + 1] += 1;
        indeg[at(b) as usize] += 1;
    }
    for i in 0..nn {
        adj_start[i + 1] += adj_start[i];
    }
    let mut adj = vec![0u32; pairs.len()];
    let mut fill = adj_start.clone();
    for &(a, b) in pairs {
        let i = at(a) as usize;
        adj[fill[i] as usize] = at(b);
        fill[i] += 1;
    }
    let mut len = vec![1u32; nn];
    let mut queue: Vec<u32> = (0..nn as u32).filter(|&i| indeg[i as usize] == 0).collect();
    let mut done = 0usize;
    while let Some(i) = queue.pop() {
        done += 1;
        for &j in &adj[adj_start[i as usize] as usize..adj_start[i as usize + 1] as usize] {
            len[j as usize] = len[j as usize].max(len[i as usize] + 1);
            indeg[j as usize] -= 1;
            if indeg[j as usize] == 0 {
                queue.push(j);
            }
        }
    }
    if done < nn {
        return (nn as u32, true);
    }
    (len.into_iter().max().unwrap_or(0), false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_count_objects() {
        assert_eq!(longest_chain(&[(0, 1), (1, 2), (2, 3)]), (4, false));
        assert_eq!(longest_chain(&[(0, 1), (1, 0)]), (2, true));
        // A tree: depth 3 objects.
        assert_eq!(longest_chain(&[(0, 1), (0, 2), (1, 3), (1, 4)]), (3, false));
        assert_eq!(longest_chain(&[]), (0, false));
    }
}
