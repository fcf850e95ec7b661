//! GOAL (LogGOPSim's Group Operation Assembly Language) schedules to execution blocks, and
//! back ([`export`]).
//!
//! Accepted text (`//` and `#` start comments):
//!
//! ```text
//! num_ranks 2
//! rank 0 {
//! l1: calc 100000            # time units are nanoseconds
//! l2: send 65536b to 1 tag 0 # optional: cpu N nic M (only cpu 0 / nic 0: one PE per rank)
//! l2 requires l1             # start after l1 completes; irequires: after l1 starts
//! }
//! rank 1 {
//! l1: recv 65536b from 0 tag 0
//! }
//! ```
//!
//! Mapping (one GOAL operation = one block on object `rank<r>`, recorded on PE `r`):
//!
//! | GOAL | whatif |
//! |---|---|
//! | `calc N` | a block of `N` ns (entry `calc`) |
//! | `send Sb to r tag t` | a block of 0 ns (entry `send`) that sends `S` bytes to `rank<r>` at offset 0; the network model charges the CPU and NIC costs (use `loggops`) |
//! | `recv Sb from r tag t` | a block of 0 ns (entry `recv`) triggered by the matching send; the model charges the receive overhead |
//! | matching | the k-th send from `a` to `b` with tag `t` (in file order) matches the k-th such receive at `b` (MPI's non-overtaking order); `ANY_SOURCE`/`ANY_TAG` are refused |
//! | `x requires y` | `x` depends on `y` |
//! | `x irequires y` | `x` may start once `y` could start: `x` inherits `y`'s dependencies (not `y`'s message) |
//! | rendezvous: a send larger than the eager limit `S` ([`crate::ImportOptions::eager_limit`]) | what requires the send also waits for the matched receive (LogGOPSim completes a rendezvous send at the match; here at the end of the receive block, one receive overhead later) |
//!
//! Blocks are numbered in a topological order of the dependencies (smallest rank, then
//! operation, first); a cycle (a schedule that deadlocks) is an error naming the operations.

use crate::ImportError;
use crate::Imported;
use crate::error::read_text;
use sim_core::SimDuration;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::fmt::Write as _;
use std::path::Path;
use trace::{
    Block, BlockId, Destination, MsgId, ObjectId, PeId, Send, Trace, TraceBuilder, TraceMeta,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Calc { ns: u64 },
    Send { bytes: u64, to: u32, tag: i64 },
    Recv { bytes: u64, from: u32, tag: i64 },
}

#[derive(Clone, Debug)]
struct Op {
    kind: Kind,
    line: u64,
    label: String,
    requires: Vec<usize>,
    irequires: Vec<usize>,
}

/// A parsed schedule: ops per rank.
#[derive(Debug)]
struct Schedule {
    ranks: Vec<Vec<Op>>,
    cpu_nic_ignored: usize,
}

struct P<'a> {
    file: &'a str,
    line: u64,
}

impl P<'_> {
    fn err(&self, expected: impl Into<String>, found: impl Into<String>) -> ImportError {
        ImportError::syntax(self.file, self.line, expected, found)
    }
    fn num(&self, tok: Option<&str>, what: &str) -> Result<u64, ImportError> {
        match tok {
            None => Err(self.err(what, "end of line")),
            Some(t) => t
                .parse::<u64>()
                .map_err(|_| self.err(what, format!("`{t}`"))),
        }
    }
    fn bytes(&self, tok: Option<&str>) -> Result<u64, ImportError> {
        let t = tok.ok_or_else(|| self.err("a size such as 1024b", "end of line"))?;
        let digits = t.strip_suffix('b').unwrap_or(t);
        digits
            .parse::<u64>()
            .map_err(|_| self.err("a size such as 1024b", format!("`{t}`")))
    }
    fn peer(&self, tok: Option<&str>, ranks: u32, what: &str) -> Result<u32, ImportError> {
        let t = tok.ok_or_else(|| self.err(what, "end of line"))?;
        match t.parse::<i64>() {
            Ok(r) if r >= 0 && r < ranks as i64 => Ok(r as u32),
            Ok(-1) => Err(ImportError::Unsupported {
                file: format!("{}:{}", self.file, self.line),
                what: "ANY_SOURCE (-1): receives must name their source rank".into(),
            }),
            _ => Err(self.err(format!("{what} (0..{ranks})"), format!("`{t}`"))),
        }
    }
}

fn parse(text: &str, file: &str) -> Result<Schedule, ImportError> {
    let mut p = P { file, line: 0 };
    let mut ranks: Option<Vec<Vec<Op>>> = None;
    let mut current: Option<(usize, HashMap<String, usize>)> = None;
    let mut pending_deps: Vec<(usize, String, String, bool, u64)> = Vec::new();
    let mut cpu_nic_ignored = 0;
    let mut seen_rank: Vec<bool> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        p.line = i as u64 + 1;
        let line = raw
            .split("//")
            .next()
            .unwrap_or("")
            .split('#')
            .next()
            .unwrap_or("")
            .trim();
        if line.is_empty() {
            continue;
        }
        let toks: Vec<&str> = line.split_whitespace().collect();
        let Some(all) = ranks.as_mut() else {
            if toks[0] != "num_ranks" || toks.len() != 2 {
                return Err(p.err("`num_ranks N` first", format!("`{line}`")));
            }
            let n = p.num(toks.get(1).copied(), "a rank count")?;
            if n == 0 || n > 1 << 24 {
                return Err(p.err("a rank count from 1 to 16777216", format!("{n}")));
            }
            ranks = Some((0..n).map(|_| Vec::new()).collect());
            seen_rank = vec![false; n as usize];
            continue;
        };
        let n_ranks = all.len() as u32;
        match &mut current {
            None => {
                if toks[0] != "rank" || toks.len() != 3 || toks[2] != "{" {
                    return Err(p.err("`rank N {`", format!("`{line}`")));
                }
                let r = p.peer(toks.get(1).copied(), n_ranks, "a rank number")? as usize;
                if seen_rank[r] {
                    return Err(p.err(
                        format!("a rank not defined before (rank {r} is)"),
                        format!("`{line}`"),
                    ));
                }
                seen_rank[r] = true;
                current = Some((r, HashMap::new()));
            }
            Some((r, labels)) => {
                let r = *r;
                if toks == ["}"] {
                    for (op, label, dep, immediate, line) in pending_deps.drain(..) {
                        let Some(&d) = labels.get(&dep) else {
                            return Err(ImportError::syntax(
                                file,
                                line,
                                format!("a label defined in rank {r}"),
                                format!("`{dep}` (used by `{label}`)"),
                            ));
                        };
                        let o = &mut all[r][op];
                        if immediate {
                            o.irequires.push(d);
                        } else {
                            o.requires.push(d);
                        }
                    }
                    current = None;
                    continue;
                }
                if let Some(label) = toks[0].strip_suffix(':') {
                    let kind = op_kind(&p, &toks[1..], n_ranks, &mut cpu_nic_ignored)?;
                    if labels.contains_key(label) {
                        return Err(p.err(
                            format!("a new label (`{label}` is already defined in rank {r})"),
                            format!("`{line}`"),
                        ));
                    }
                    labels.insert(label.to_string(), all[r].len());
                    all[r].push(Op {
                        kind,
                        line: p.line,
                        label: label.to_string(),
                        requires: Vec::new(),
                        irequires: Vec::new(),
                    });
                } else if toks.len() == 3 && (toks[1] == "requires" || toks[1] == "irequires") {
                    let Some(&op) = labels.get(toks[0]) else {
                        return Err(p.err(
                            "a label defined above in this rank",
                            format!("`{}`", toks[0]),
                        ));
                    };
                    pending_deps.push((
                        op,
                        toks[0].to_string(),
                        toks[2].to_string(),
                        toks[1] == "irequires",
                        p.line,
                    ));
                } else {
                    return Err(p.err(
                        "`label: send|recv|calc ...`, `label requires|irequires label` or `}`",
                        format!("`{line}`"),
                    ));
                }
            }
        }
    }
    if current.is_some() {
        return Err(p.err("`}` closing the last rank", "end of file"));
    }
    let ranks = ranks.ok_or_else(|| p.err("`num_ranks N`", "end of file"))?;
    Ok(Schedule {
        ranks,
        cpu_nic_ignored,
    })
}

fn op_kind(p: &P, t: &[&str], ranks: u32, ignored: &mut usize) -> Result<Kind, ImportError> {
    let opt = |t: &[&str], from: usize, ignored: &mut usize| -> Result<i64, ImportError> {
        let mut tag = 0i64;
        let mut i = from;
        while i < t.len() {
            let v = t.get(i + 1).copied();
            match t[i] {
                "tag" => {
                    let s = v.ok_or_else(|| p.err("a tag number", "end of line"))?;
                    tag = s
                        .parse::<i64>()
                        .map_err(|_| p.err("a tag number", format!("`{s}`")))?;
                    if tag < 0 {
                        return Err(ImportError::Unsupported {
                            file: format!("{}:{}", p.file, p.line),
                            what: "ANY_TAG (negative tags): operations must name their tag".into(),
                        });
                    }
                }
                "cpu" | "nic" => {
                    if p.num(v, "a cpu or nic number")? != 0 {
                        *ignored += 1;
                    }
                }
                other => {
                    return Err(p.err("`tag T`, `cpu N` or `nic N`", format!("`{other}`")));
                }
            }
            i += 2;
        }
        Ok(tag)
    };
    match t.first().copied() {
        Some("calc") => {
            let ns = p.num(t.get(1).copied(), "a calc duration (ns)")?;
            opt(t, 2, ignored)?;
            Ok(Kind::Calc { ns })
        }
        Some(word @ ("send" | "recv")) => {
            let bytes = p.bytes(t.get(1).copied())?;
            let (dir, what) = if word == "send" {
                ("to", "a destination rank")
            } else {
                ("from", "a source rank")
            };
            if t.get(2) != Some(&dir) {
                return Err(p.err(format!("`{dir}`"), format!("{:?}", t.get(2))));
            }
            let peer = p.peer(t.get(3).copied(), ranks, what)?;
            let tag = opt(t, 4, ignored)?;
            Ok(if word == "send" {
                Kind::Send {
                    bytes,
                    to: peer,
                    tag,
                }
            } else {
                Kind::Recv {
                    bytes,
                    from: peer,
                    tag,
                }
            })
        }
        other => Err(p.err("send, recv or calc", format!("{other:?}"))),
    }
}

/// Imports a GOAL schedule. `eager_limit`: sends larger than this are rendezvous.
pub fn import(path: &Path, eager_limit: u64) -> Result<Imported, ImportError> {
    let file = path.display().to_string();
    let text = read_text(path)?;
    let s = parse(&text, &file)?;
    let n = s.ranks.len();
    // Global op ids.
    let mut base = Vec::with_capacity(n);
    let mut total = 0usize;
    for ops in &s.ranks {
        base.push(total);
        total += ops.len();
    }
    let gid = |r: usize, i: usize| base[r] + i;

    // Matching: (src, dst, tag) -> FIFO of sends / recvs.
    let mut sends: BTreeMap<(u32, u32, i64), Vec<usize>> = BTreeMap::new();
    let mut recvs: BTreeMap<(u32, u32, i64), Vec<usize>> = BTreeMap::new();
    for (r, ops) in s.ranks.iter().enumerate() {
        for (i, op) in ops.iter().enumerate() {
            match op.kind {
                Kind::Send { to, tag, .. } => sends
                    .entry((r as u32, to, tag))
                    .or_default()
                    .push(gid(r, i)),
                Kind::Recv { from, tag, .. } => recvs
                    .entry((from, r as u32, tag))
                    .or_default()
                    .push(gid(r, i)),
                Kind::Calc { .. } => {}
            }
        }
    }
    let op_at = |g: usize| -> (usize, &Op) {
        let r = base.partition_point(|&b| b <= g) - 1;
        (r, &s.ranks[r][g - base[r]])
    };
    let mut matched: Vec<usize> = vec![usize::MAX; total]; // send <-> recv
    for (key, ss) in &sends {
        let rs = recvs.get(key).map(Vec::as_slice).unwrap_or(&[]);
        for (k, &sg) in ss.iter().enumerate() {
            let Some(&rg) = rs.get(k) else {
                let (_, op) = op_at(sg);
                return Err(ImportError::inconsistent(
                    &format!("{file}:{}", op.line),
                    format!(
                        "send `{}` from rank {} to rank {} tag {} has no matching recv ({} sends, {} recvs with this source, destination and tag)",
                        op.label,
                        key.0,
                        key.1,
                        key.2,
                        ss.len(),
                        rs.len()
                    ),
                ));
            };
            let (Kind::Send { bytes: sb, .. }, Kind::Recv { bytes: rb, .. }) =
                (op_at(sg).1.kind, op_at(rg).1.kind)
            else {
                unreachable!("matching pairs a send with a recv")
            };
            if sb != rb {
                return Err(ImportError::inconsistent(
                    &format!("{file}:{}", op_at(rg).1.line),
                    format!(
                        "recv `{}` expects {rb} bytes but its matching send (line {}) sends {sb}",
                        op_at(rg).1.label,
                        op_at(sg).1.line
                    ),
                ));
            }
            matched[sg] = rg;
            matched[rg] = sg;
        }
    }
    for (key, rs) in &recvs {
        let ns = sends.get(key).map_or(0, Vec::len);
        if rs.len() > ns {
            let (_, op) = op_at(rs[ns]);
            return Err(ImportError::inconsistent(
                &format!("{file}:{}", op.line),
                format!(
                    "recv `{}` at rank {} from rank {} tag {} has no matching send",
                    op.label, key.1, key.0, key.2
                ),
            ));
        }
    }

    // Effective dependencies per op (irequires expanded), cross-rank edges for rendezvous.
    let mut deps: Vec<Vec<usize>> = vec![Vec::new(); total];
    for (r, ops) in s.ranks.iter().enumerate() {
        // Resolve in an order where irequires targets come first (intra-rank DFS).
        let mut state = vec![0u8; ops.len()];
        for i in 0..ops.len() {
            resolve(r, i, ops, &base, &mut state, &mut deps, &file)?;
        }
    }
    for ds in deps.iter_mut() {
        let mut extra = Vec::new();
        for &d in ds.iter() {
            if let Kind::Send { bytes, .. } = op_at(d).1.kind
                && bytes > eager_limit
            {
                extra.push(matched[d]);
            }
        }
        ds.extend(extra);
        ds.sort_unstable();
        ds.dedup();
    }

    // Topological order: Kahn's algorithm, smallest global op id first.
    let mut indeg = vec![0u32; total];
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); total];
    for g in 0..total {
        indeg[g] = deps[g].len() as u32;
        for &d in &deps[g] {
            out[d].push(g);
        }
    }
    let mut heap: BinaryHeap<Reverse<usize>> =
        (0..total).filter(|&g| indeg[g] == 0).map(Reverse).collect();
    let mut order = Vec::with_capacity(total);
    while let Some(Reverse(g)) = heap.pop() {
        order.push(g);
        for &x in &out[g] {
            indeg[x] -= 1;
            if indeg[x] == 0 {
                heap.push(Reverse(x));
            }
        }
    }
    if order.len() < total {
        let stuck: Vec<String> = (0..total)
            .filter(|&g| indeg[g] > 0)
            .take(5)
            .map(|g| {
                let (r, op) = op_at(g);
                format!("rank {r} `{}` (line {})", op.label, op.line)
            })
            .collect();
        return Err(ImportError::inconsistent(
            &file,
            format!(
                "the dependencies form a cycle (the schedule deadlocks); {} operations are on or behind it, e.g. {}",
                total - order.len(),
                stuck.join(", ")
            ),
        ));
    }
    let mut block_of = vec![0u32; total];
    for (k, &g) in order.iter().enumerate() {
        block_of[g] = k as u32;
    }

    let mut b = TraceBuilder::new(TraceMeta {
        name: path
            .file_stem()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "goal".into()),
        generator: format!("whatif import goal {}", path.display()),
        description: format!(
            "GOAL schedule of {n} ranks, {total} operations (eager limit {eager_limit} B)"
        ),
        recorded_pes: n as u32,
        net: Some("loggops".into()),
        seed: None,
        cpu_scale: None,
        sequential_objects: false,
    });
    let e_calc = b.entry("calc");
    let e_send = b.entry("send");
    let e_recv = b.entry("recv");
    for r in 0..n {
        b.object(format!("rank{r}"), PeId(r as u32));
    }
    let mut ds = Vec::new();
    for &g in &order {
        let (r, op) = op_at(g);
        ds.clear();
        ds.extend(deps[g].iter().map(|&d| BlockId(block_of[d])));
        let object = ObjectId(r as u32);
        let (entry, dur, trigger, send) = match op.kind {
            Kind::Calc { ns } => (e_calc, SimDuration::from_ns(ns), None, None),
            Kind::Send { bytes, to, .. } => (
                e_send,
                SimDuration::ZERO,
                None,
                Some(Send {
                    msg: MsgId(g as u64),
                    offset: SimDuration::ZERO,
                    dest: Destination::Object(ObjectId(to)),
                    bytes,
                    entry: e_recv,
                }),
            ),
            Kind::Recv { .. } => (
                e_recv,
                SimDuration::ZERO,
                Some(MsgId(matched[g] as u64)),
                None,
            ),
        };
        let mut blk = Block::new(object, entry, dur);
        blk.trigger = trigger;
        b.block(blk, &ds, send.as_slice());
    }
    let trace = b.finish().map_err(|source| ImportError::Invalid {
        file: file.clone(),
        source,
    })?;
    let n_send = order
        .iter()
        .filter(|&&g| matches!(op_at(g).1.kind, Kind::Send { .. }))
        .count();
    let rdv = order
        .iter()
        .filter(|&&g| matches!(op_at(g).1.kind, Kind::Send { bytes, .. } if bytes > eager_limit))
        .count();
    let mut notes = vec![format!(
        "{file}: {n} ranks, {total} operations ({n_send} sends, {n_send} recvs, {} calcs); {rdv} rendezvous sends (> {eager_limit} B)",
        total - 2 * n_send
    )];
    if s.cpu_nic_ignored > 0 {
        notes.push(format!(
            "{} operations name a cpu or nic other than 0; each rank is one PE, so they run there",
            s.cpu_nic_ignored
        ));
    }
    Ok(Imported {
        trace,
        notes,
        recorded_end: None,
    })
}

/// Fills `deps[gid(r, i)]`: `requires` targets, plus the resolved deps of `irequires` targets.
fn resolve(
    r: usize,
    i: usize,
    ops: &[Op],
    base: &[usize],
    state: &mut [u8],
    deps: &mut [Vec<usize>],
    file: &str,
) -> Result<(), ImportError> {
    match state[i] {
        2 => return Ok(()),
        1 => {
            return Err(ImportError::inconsistent(
                &format!("{file}:{}", ops[i].line),
                format!(
                    "rank {r}: `irequires` chain through `{}` loops back on itself",
                    ops[i].label
                ),
            ));
        }
        _ => {}
    }
    state[i] = 1;
    let mut d: Vec<usize> = ops[i].requires.iter().map(|&j| base[r] + j).collect();
    for &j in &ops[i].irequires {
        resolve(r, j, ops, base, state, deps, file)?;
        d.extend_from_slice(&deps[base[r] + j]);
    }
    deps[base[r] + i] = d;
    state[i] = 2;
    Ok(())
}

/// Why a trace cannot be written as GOAL.
#[derive(Debug, thiserror::Error)]
#[error("cannot export as GOAL: {0}")]
pub struct ExportError(pub String);

/// Writes `trace` as a GOAL schedule, one rank per object. Each block becomes: a `recv` for
/// its trigger (if any), then `calc` pieces separated by its `send`s at their offsets; every
/// delivery of a broadcast or group send is a separate `send`. Each message gets its own tag
/// (its index among the sends), so GOAL's matching pairs exactly the trace's messages.
/// Dependencies must stay within one object (GOAL has no cross-rank dependencies).
pub fn export(trace: &Trace) -> Result<String, ExportError> {
    let n_obj = trace.objects.len();
    let index = trace.message_index();
    let sends = trace.all_sends();
    let send_block = trace.send_blocks();
    // Consumers of each send.
    let mut consumers: Vec<Vec<BlockId>> = vec![Vec::new(); sends.len()];
    for id in trace.block_ids() {
        if let Some(m) = trace.block(id).trigger {
            match index.lookup(m) {
                Some(s) => consumers[s].push(id),
                None => {
                    return Err(ExportError(format!(
                        "{id} is triggered by {m}, which no block sends"
                    )));
                }
            }
        }
    }
    let mut per_rank: Vec<String> = vec![String::new(); n_obj];
    let mut counter = vec![0u64; n_obj];
    // Label of the first and last op of each block.
    let mut first_last = vec![(0u64, 0u64); trace.num_blocks()];
    for id in trace.block_ids() {
        let b = trace.block(id);
        let r = b.object.index();
        let out = &mut per_rank[r];
        let next = |c: &mut Vec<u64>| {
            c[r] += 1;
            c[r]
        };
        let mut prev: Option<u64> = None;
        let mut first = None;
        let emit = |out: &mut String,
                    text: String,
                    prev: &mut Option<u64>,
                    counter: &mut Vec<u64>|
         -> u64 {
            let l = next(counter);
            let _ = writeln!(out, "l{l}: {text}");
            if let Some(p) = *prev {
                let _ = writeln!(out, "l{l} requires l{p}");
            }
            *prev = Some(l);
            l
        };
        if let Some(m) = b.trigger {
            let s = index.lookup(m).expect("checked above");
            let src = trace.block(BlockId(send_block[s])).object;
            let l = emit(
                out,
                format!("recv {}b from {} tag {s}", sends[s].bytes, src.0),
                &mut prev,
                &mut counter,
            );
            first.get_or_insert(l);
        }
        let mut at = SimDuration::ZERO;
        for si in trace.send_range(id) {
            let s = &sends[si];
            if s.offset > at {
                let l = emit(
                    out,
                    format!("calc {}", (s.offset.as_ps() - at.as_ps()).div_ceil(1000)),
                    &mut prev,
                    &mut counter,
                );
                first.get_or_insert(l);
                at = s.offset;
            }
            for c in &consumers[si] {
                let to = trace.block(*c).object;
                let l = emit(
                    out,
                    format!("send {}b to {} tag {si}", s.bytes, to.0),
                    &mut prev,
                    &mut counter,
                );
                first.get_or_insert(l);
            }
        }
        if b.duration > at || first.is_none() {
            let l = emit(
                out,
                format!("calc {}", (b.duration.as_ps() - at.as_ps()).div_ceil(1000)),
                &mut prev,
                &mut counter,
            );
            first.get_or_insert(l);
        }
        let first = first.expect("every block emits an operation");
        first_last[id.index()] = (first, prev.expect("every block emits an operation"));
        for d in trace.deps(id) {
            if trace.block(*d).object != b.object {
                return Err(ExportError(format!(
                    "{id} on {} depends on {d} on {}; GOAL dependencies stay within one rank",
                    b.object,
                    trace.block(*d).object
                )));
            }
            let _ = writeln!(out, "l{first} requires l{}", first_last[d.index()].1);
        }
    }
    let mut text = format!(
        "// {} exported by whatif ({} blocks); calc in ns\nnum_ranks {n_obj}\n",
        trace.meta.name,
        trace.num_blocks()
    );
    for (r, body) in per_rank.iter().enumerate() {
        let _ = write!(text, "\nrank {r} {{\n{body}}}\n");
    }
    Ok(text)
}
