//! SimGrid time-independent (TI) MPI traces to execution blocks.
//!
//! Input: an *index file* listing one trace file per line (paths relative to the index file's
//! folder), or a single trace file holding every rank. Each trace line is
//! `<rank> <action> <args...>` (SimGrid 3.32 `smpi_replay.cpp` syntax); blank lines are
//! skipped. Message and collective sizes count elements of the default datatype: 1 byte, or 8
//! bytes (`MPI_DOUBLE`) when the rank's `init` has an argument, as in SimGrid. Explicit
//! datatype ids are accepted and read as the default type (their numbering is SimGrid-build
//! specific).
//!
//! **Mapping.** Each rank is one object (`rank<r>`, recorded on PE `r`) running its actions
//! in order, like an MPI process. Its execution is cut into *segment* blocks at every point
//! where it waits for a message: a segment's duration is the sum of its `compute`s
//! (`flops / --flops-per-s`) and `sleep`s; its sends leave at the offset reached when they are
//! issued. Every incoming message has its own zero-duration *receive* block (entry `msg`)
//! triggered by it; the segment after a wait depends on the previous segment and on the
//! receive blocks it waits for. Segments are named after the call that started them
//! (`init`, `recv`, `wait`, `bcast`, ...).
//!
//! | action | blocks |
//! |---|---|
//! | `compute f`, `sleep s` | adds `f / flops_per_s` or `s` to the current segment |
//! | `send`/`isend dst tag n` | a send of `n` elements at the current offset; sends never block (SimGrid blocks sends above its detached threshold until matched; not modelled) |
//! | `recv src tag n` | receive block; new segment waiting for it |
//! | `irecv src tag n` | receive block, remembered as a request |
//! | `wait src dst tag` | new segment waiting for that irecv (a wait on an isend is a no-op) |
//! | `waitall` | new segment waiting for every open irecv |
//! | `test ...` | no-op (the later wait decides) |
//! | `sendrecv n dst m src` | send, then receive from `src` |
//! | `init`, `finalize`, `comm_size`, `location` | no-op (`init` sets the datatype) |
//! | `comm_split`, `comm_dup` | refused: only `MPI_COMM_WORLD` is supported |
//!
//! Point-to-point matching: the k-th send from `a` to `b` with tag `t` is received by the
//! k-th receive at `b` from `a` with tag `t`.
//!
//! **Collectives** are expanded into point-to-point messages (P ranks, `vr = (r - root) mod P`);
//! the k-th collective of every rank must be the same operation:
//!
//! | collective | algorithm |
//! |---|---|
//! | `barrier` | dissemination: round k sends 0 bytes to `r + 2^k` and waits for `r - 2^k` (mod P) |
//! | `bcast n [root]` | binomial tree (MPICH): receive from `vr - lowbit(vr)`, then send to `vr + 2^k`, largest k first |
//! | `reduce n f [root]` | binomial tree toward the root (receive from `vr + 2^k` while bit k is clear, then send to `vr - 2^k`); then `f` flops on every rank |
//! | `allreduce n f` | `reduce` to rank 0, then `bcast` from rank 0; then `f` flops |
//! | `alltoall n m` | pairwise exchange: step s = 1..P-1 sends `n` to `r + s`, waits for `r - s` |
//! | `alltoallv b c_0..c_{P-1} b' d_0..d_{P-1}` | pairwise exchange with `c_dst` elements |
//! | `gather n m [root]`, `gatherv n c_0..c_{P-1} [root]` | linear: every rank sends to the root |
//! | `scatter n m [root]`, `scatterv c_0..c_{P-1} m [root]` | linear: the root sends to every rank |
//! | `allgather n m` | ring: P-1 steps, each sends `n` to `r + 1` and waits for `r - 1` |
//! | `allgatherv n c_0..c_{P-1}` | ring; step s forwards block `r - s` (`c_{r-s}` elements) |
//! | `reducescatter c_0..c_{P-1} f` | `reduce` of `sum c` to rank 0, linear `scatterv` of `c_i`; then `f` flops |

use crate::error::read_text;
use crate::{ImportError, Imported};
use sim_core::SimDuration;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use trace::{
    Block, BlockId, Destination, EntryId, MsgId, ObjectId, PeId, Send, TraceBuilder, TraceMeta,
};

/// One parsed action with where it came from.
#[derive(Clone, Debug)]
struct Action {
    name: String,
    args: Vec<String>,
    file: usize,
    line: u64,
}

/// The lines of an index file, or `None` when `text` is a trace itself (an index's first
/// non-empty line is a single token that is not a number).
fn index_entries(text: &str) -> Option<Vec<&str>> {
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let mut t = first.split_whitespace();
    match (t.next(), t.next()) {
        (Some(a), None) if a.parse::<i64>().is_err() => Some(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect(),
        ),
        _ => None,
    }
}

/// Every file the input consists of: the input first, then the traces an index lists.
pub(crate) fn files(input: &Path) -> Result<Vec<PathBuf>, ImportError> {
    let text = read_text(input)?;
    let dir = input.parent().unwrap_or(Path::new("."));
    let mut v = vec![input.to_path_buf()];
    v.extend(
        index_entries(&text)
            .unwrap_or_default()
            .into_iter()
            .map(|l| dir.join(l)),
    );
    Ok(v)
}

/// Reads the input: index file or single trace; returns actions per rank and file names.
fn read_actions(input: &Path) -> Result<(Vec<Vec<Action>>, Vec<String>), ImportError> {
    let text = read_text(input)?;
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    if let Some(entries) = index_entries(&text) {
        let dir = input.parent().unwrap_or(Path::new("."));
        for l in entries {
            let p = dir.join(l);
            let body = read_text(&p)?;
            files.push((p, body));
        }
    } else {
        files.push((input.to_path_buf(), text));
    }
    let mut ranks: Vec<Vec<Action>> = Vec::new();
    let mut names = Vec::new();
    for (fi, (p, body)) in files.into_iter().enumerate() {
        let name = p.display().to_string();
        for (i, l) in body.lines().enumerate() {
            let mut toks = l.split_whitespace();
            let Some(r) = toks.next() else { continue };
            let line = i as u64 + 1;
            let rank: usize = match r.parse::<u32>() {
                Ok(v) if v < 1 << 24 => v as usize,
                _ => {
                    return Err(ImportError::syntax(
                        &name,
                        line,
                        "`<rank> <action> ...` with a rank number",
                        format!("`{r}`"),
                    ));
                }
            };
            let Some(a) = toks.next() else {
                return Err(ImportError::syntax(
                    &name,
                    line,
                    "an action after the rank",
                    "end of line",
                ));
            };
            if ranks.len() <= rank {
                ranks.resize_with(rank + 1, Vec::new);
            }
            ranks[rank].push(Action {
                name: a.to_ascii_lowercase(),
                args: toks.map(str::to_string).collect(),
                file: fi,
                line,
            });
        }
        names.push(name);
    }
    if ranks.is_empty() {
        return Err(ImportError::syntax(
            &input.display().to_string(),
            1,
            "at least one action",
            "no actions",
        ));
    }
    if let Some(r) = ranks.iter().position(Vec::is_empty) {
        return Err(ImportError::inconsistent(
            &input.display().to_string(),
            format!("rank {r} has no actions, but rank {} does", ranks.len() - 1),
        ));
    }
    Ok((ranks, names))
}

/// Message labels by matching key; both sides of a message get the same label.
#[derive(Default)]
struct Labels {
    next: u64,
    map: HashMap<(u32, u32, i64, u64), MsgId>,
    sent: HashMap<(u32, u32, i64), u64>,
    recvd: HashMap<(u32, u32, i64), u64>,
}

impl Labels {
    fn get(&mut self, key: (u32, u32, i64, u64)) -> MsgId {
        let next = &mut self.next;
        *self.map.entry(key).or_insert_with(|| {
            *next += 1;
            MsgId(*next - 1)
        })
    }
    fn send(&mut self, src: u32, dst: u32, tag: i64) -> MsgId {
        let k = self.sent.entry((src, dst, tag)).or_insert(0);
        *k += 1;
        let k = *k - 1;
        self.get((src, dst, tag, k))
    }
    fn recv(&mut self, src: u32, dst: u32, tag: i64) -> MsgId {
        let k = self.recvd.entry((src, dst, tag)).or_insert(0);
        *k += 1;
        let k = *k - 1;
        self.get((src, dst, tag, k))
    }
}

struct Ctx<'a> {
    b: TraceBuilder,
    labels: Labels,
    e_msg: EntryId,
    entries: HashMap<String, EntryId>,
    names: &'a [String],
    flops_per_s: f64,
}

/// The open segment of one rank.
struct Seg {
    obj: ObjectId,
    rank: u32,
    entry: EntryId,
    dur_ps: u64,
    deps: Vec<BlockId>,
    sends: Vec<Send>,
    irecvs: Vec<((u32, u32, i64), BlockId)>,
}

impl Ctx<'_> {
    fn entry(&mut self, name: &str) -> EntryId {
        if let Some(&e) = self.entries.get(name) {
            return e;
        }
        let e = self.b.entry(name);
        self.entries.insert(name.to_string(), e);
        e
    }
    fn send(&mut self, s: &mut Seg, dst: u32, tag: i64, bytes: u64) {
        let msg = self.labels.send(s.rank, dst, tag);
        s.sends.push(Send {
            msg,
            offset: SimDuration::from_ps(s.dur_ps),
            dest: Destination::Object(ObjectId(dst)),
            bytes,
            entry: self.e_msg,
        });
    }
    fn post_recv(&mut self, s: &Seg, src: u32, tag: i64) -> BlockId {
        let msg = self.labels.recv(src, s.rank, tag);
        let mut blk = Block::new(s.obj, self.e_msg, SimDuration::ZERO);
        blk.trigger = Some(msg);
        self.b.block(blk, &[], &[])
    }
    /// Closes the segment; the next one (entry `name`) waits for it and for `wait`.
    fn wait_for(&mut self, s: &mut Seg, wait: &[BlockId], name: &str) {
        let blk = Block::new(s.obj, s.entry, SimDuration::from_ps(s.dur_ps));
        let id = self.b.block(blk, &s.deps, &s.sends);
        s.sends.clear();
        s.deps.clear();
        s.deps.push(id);
        s.deps.extend_from_slice(wait);
        s.dur_ps = 0;
        s.entry = self.entry(name);
    }
    fn compute(&self, s: &mut Seg, secs: f64, a: &Action) -> Result<(), ImportError> {
        let ps = (secs * 1e12).round();
        if !ps.is_finite() || !(0.0..1.8e19).contains(&ps) {
            return Err(ImportError::syntax(
                &self.names[a.file],
                a.line,
                "a non-negative amount of work",
                format!("{} ({secs} s)", a.args.join(" ")),
            ));
        }
        s.dur_ps = s.dur_ps.saturating_add(ps as u64);
        Ok(())
    }
}

struct Args<'a> {
    a: &'a Action,
    file: &'a str,
}

impl Args<'_> {
    fn err(&self, expected: impl Into<String>, found: impl Into<String>) -> ImportError {
        ImportError::syntax(self.file, self.a.line, expected, found)
    }
    fn num(&self, i: usize, what: &str) -> Result<f64, ImportError> {
        let t = self.a.args.get(i).ok_or_else(|| {
            self.err(
                format!("{}: {what} (argument {})", self.a.name, i + 1),
                "end of line",
            )
        })?;
        match t.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
            _ => Err(self.err(
                format!("{}: {what} (a non-negative number)", self.a.name),
                format!("`{t}`"),
            )),
        }
    }
    fn count(&self, i: usize, what: &str) -> Result<u64, ImportError> {
        let v = self.num(i, what)?;
        if v > 1e18 {
            return Err(self.err(
                format!("{}: {what} below 1e18", self.a.name),
                format!("{v}"),
            ));
        }
        Ok(v.round() as u64)
    }
    fn rank(&self, i: usize, what: &str, p: u32) -> Result<u32, ImportError> {
        let t = self.a.args.get(i).ok_or_else(|| {
            self.err(
                format!("{}: {what} (argument {})", self.a.name, i + 1),
                "end of line",
            )
        })?;
        match t.parse::<i64>() {
            Ok(v) if v >= 0 && v < p as i64 => Ok(v as u32),
            _ => Err(self.err(
                format!("{}: {what} (a rank in 0..{p})", self.a.name),
                format!("`{t}`"),
            )),
        }
    }
    fn tag(&self, i: usize) -> Result<i64, ImportError> {
        let t = self
            .a
            .args
            .get(i)
            .ok_or_else(|| self.err(format!("{}: a tag", self.a.name), "end of line"))?;
        match t.parse::<i64>() {
            Ok(v) if v >= 0 => Ok(v),
            _ => Err(self.err(
                format!("{}: a tag (a number >= 0)", self.a.name),
                format!("`{t}`"),
            )),
        }
    }
    fn counts(&self, from: usize, p: u32, what: &str) -> Result<Vec<u64>, ImportError> {
        (0..p as usize)
            .map(|i| self.count(from + i, what))
            .collect()
    }
    fn opt_rank(&self, i: usize, p: u32) -> Result<u32, ImportError> {
        if self.a.args.len() > i {
            self.rank(i, "root", p)
        } else {
            Ok(0)
        }
    }
}

/// A collective's identity, to check that all ranks call the same one.
fn coll_tag(c: u64, step: u64) -> i64 {
    -1 - ((c << 20) | step) as i64
}

/// Imports a SimGrid TI trace (index file or single trace file).
pub fn import(input: &Path, flops_per_s: f64) -> Result<Imported, ImportError> {
    let (ranks, names) = read_actions(input)?;
    let p = ranks.len() as u32;
    let mut b = TraceBuilder::new(TraceMeta {
        name: input
            .file_stem()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "simgrid".into()),
        generator: format!(
            "whatif import simgrid {} --flops-per-s {flops_per_s}",
            input.display()
        ),
        description: format!(
            "SimGrid time-independent trace of {p} ranks ({} files)",
            names.len()
        ),
        recorded_pes: p,
        net: None,
        seed: None,
        cpu_scale: None,
        sequential_objects: false,
    });
    let e_msg = b.entry("msg");
    for r in 0..p {
        b.object(format!("rank{r}"), PeId(r));
    }
    let mut cx = Ctx {
        b,
        labels: Labels::default(),
        e_msg,
        entries: HashMap::new(),
        names: &names,
        flops_per_s,
    };
    // Collective sequence per rank, checked against rank 0's.
    let mut colls: Vec<Vec<(String, usize, u64)>> = vec![Vec::new(); p as usize];
    let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
    for (r, acts) in ranks.iter().enumerate() {
        let r = r as u32;
        let init = cx.entry("init");
        let mut s = Seg {
            obj: ObjectId(r),
            rank: r,
            entry: init,
            dur_ps: 0,
            deps: Vec::new(),
            sends: Vec::new(),
            irecvs: Vec::new(),
        };
        let mut elem = 1u64;
        let mut n_coll = 0u64;
        for a in acts {
            *kinds.entry(a.name.clone()).or_insert(0) += 1;
            let x = Args {
                a,
                file: &names[a.file],
            };
            match a.name.as_str() {
                "init" => elem = if a.args.is_empty() { 1 } else { 8 },
                "finalize" | "comm_size" | "location" | "test" => {}
                "compute" => {
                    let f = x.num(0, "flops")?;
                    cx.compute(&mut s, f / cx.flops_per_s, a)?;
                }
                "sleep" => {
                    let t = x.num(0, "seconds")?;
                    cx.compute(&mut s, t, a)?;
                }
                "send" | "isend" => {
                    let dst = x.rank(0, "destination", p)?;
                    let tag = x.tag(1)?;
                    let n = x.count(2, "size")?;
                    cx.send(&mut s, dst, tag, n * elem);
                }
                "recv" | "irecv" => {
                    let src = x.rank(0, "source", p)?;
                    let tag = x.tag(1)?;
                    x.count(2, "size")?;
                    let id = cx.post_recv(&s, src, tag);
                    if a.name == "recv" {
                        cx.wait_for(&mut s, &[id], "recv");
                    } else {
                        s.irecvs.push(((src, r, tag), id));
                    }
                }
                "wait" => {
                    let src = x.rank(0, "source", p)?;
                    let dst = x.rank(1, "destination", p)?;
                    let tag = x.tag(2)?;
                    if let Some(i) = s.irecvs.iter().position(|(k, _)| *k == (src, dst, tag)) {
                        let (_, id) = s.irecvs.remove(i);
                        cx.wait_for(&mut s, &[id], "wait");
                    }
                }
                "waitall" => {
                    let ids: Vec<BlockId> = s.irecvs.drain(..).map(|(_, id)| id).collect();
                    if !ids.is_empty() {
                        cx.wait_for(&mut s, &ids, "waitall");
                    }
                }
                "sendrecv" => {
                    let n = x.count(0, "send count")?;
                    let dst = x.rank(1, "destination", p)?;
                    x.count(2, "receive count")?;
                    let src = x.rank(3, "source", p)?;
                    cx.send(&mut s, dst, 0, n * elem);
                    let id = cx.post_recv(&s, src, 0);
                    cx.wait_for(&mut s, &[id], "sendrecv");
                }
                "comm_split" | "comm_dup" => {
                    return Err(ImportError::Unsupported {
                        file: format!("{}:{}", names[a.file], a.line),
                        what: format!("`{}`: only MPI_COMM_WORLD is supported", a.name),
                    });
                }
                coll @ ("barrier" | "bcast" | "reduce" | "allreduce" | "alltoall" | "alltoallv"
                | "gather" | "gatherv" | "scatter" | "scatterv" | "allgather"
                | "allgatherv" | "reducescatter") => {
                    let c = n_coll;
                    n_coll += 1;
                    let root = collective(&mut cx, &mut s, &x, coll, c, p, elem)?;
                    colls[r as usize].push((coll.to_string(), a.line as usize, root as u64));
                }
                other => {
                    return Err(x.err(
                        "a TI action (init, compute, send, isend, recv, irecv, wait, waitall, test, sendrecv, sleep, barrier, bcast, reduce, allreduce, alltoall, alltoallv, gather, gatherv, scatter, scatterv, allgather, allgatherv, reducescatter, comm_size, finalize)",
                        format!("`{other}`"),
                    ));
                }
            }
        }
        // Close the last segment.
        let blk = Block::new(s.obj, s.entry, SimDuration::from_ps(s.dur_ps));
        cx.b.block(blk, &s.deps, &s.sends);
    }
    // Every rank must call the same collectives in the same order, with the same root.
    for r in 1..p as usize {
        for (k, ((n0, l0, r0), (n, l, rt))) in colls[0].iter().zip(&colls[r]).enumerate() {
            if n0 != n || r0 != rt {
                return Err(ImportError::inconsistent(
                    &names[ranks[r][0].file],
                    format!(
                        "collective #{k} is `{n}` (root {rt}) on rank {r} (line {l}) but `{n0}` (root {r0}) on rank 0 (line {l0})"
                    ),
                ));
            }
        }
        if colls[r].len() != colls[0].len() {
            return Err(ImportError::inconsistent(
                &names[ranks[r][0].file],
                format!(
                    "rank {r} calls {} collectives but rank 0 calls {}",
                    colls[r].len(),
                    colls[0].len()
                ),
            ));
        }
    }
    // Point-to-point: every send matched by a receive and vice versa.
    for (key, n) in &cx.labels.sent {
        let m = cx.labels.recvd.get(key).copied().unwrap_or(0);
        if m != *n {
            let (src, dst, tag) = *key;
            let tagtxt = if tag >= 0 {
                format!("tag {tag}")
            } else {
                "a collective".into()
            };
            return Err(ImportError::inconsistent(
                &input.display().to_string(),
                format!(
                    "rank {src} sends {n} messages to rank {dst} with {tagtxt}, but rank {dst} receives {m}"
                ),
            ));
        }
    }
    for (key, m) in &cx.labels.recvd {
        if !cx.labels.sent.contains_key(key) {
            let (src, dst, tag) = *key;
            return Err(ImportError::inconsistent(
                &input.display().to_string(),
                format!(
                    "rank {dst} receives {m} messages from rank {src} with tag {tag}, but rank {src} sends none"
                ),
            ));
        }
    }
    let trace = cx.b.finish().map_err(|source| ImportError::Invalid {
        file: input.display().to_string(),
        source,
    })?;
    let mut notes = vec![format!(
        "{}: {p} ranks in {} files; actions: {}",
        input.display(),
        names.len(),
        kinds
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    )];
    notes.push(format!(
        "{} blocks, {} messages (collectives expanded); compute at {flops_per_s:e} flop/s",
        trace.num_blocks(),
        trace.num_sends()
    ));
    Ok(Imported {
        trace,
        notes,
        recorded_end: None,
    })
}

/// Expands one collective call for this rank. Returns its root (0 when it has none).
fn collective(
    cx: &mut Ctx,
    s: &mut Seg,
    x: &Args,
    name: &str,
    c: u64,
    p: u32,
    elem: u64,
) -> Result<u32, ImportError> {
    let r = s.rank;
    let mut step = 0u64;
    let mut next_tag = || {
        step += 1;
        coll_tag(c, step - 1)
    };
    let mut root = 0;
    match name {
        "barrier" => {
            let mut k = 1u32;
            while k < p {
                let tag = next_tag();
                cx.send(s, (r + k) % p, tag, 0);
                let id = cx.post_recv(s, (r + p - k) % p, tag);
                cx.wait_for(s, &[id], name);
                k = k.saturating_mul(2);
            }
        }
        "bcast" => {
            let n = x.count(0, "size")? * elem;
            root = x.opt_rank(1, p)?;
            bcast(cx, s, p, root, n, next_tag(), name);
        }
        "reduce" | "allreduce" => {
            let n = x.count(0, "size")? * elem;
            let f = x.num(1, "flops")?;
            if name == "reduce" {
                root = x.opt_rank(2, p)?;
            }
            reduce(cx, s, p, root, n, next_tag(), name);
            if name == "allreduce" {
                bcast(cx, s, p, 0, n, next_tag(), name);
            }
            cx.compute(s, f / cx.flops_per_s, x.a)?;
        }
        "alltoall" | "alltoallv" => {
            let sizes: Vec<u64> = if name == "alltoall" {
                vec![x.count(0, "send count")? * elem; p as usize]
            } else {
                x.counts(1, p, "send counts")?
                    .into_iter()
                    .map(|v| v * elem)
                    .collect()
            };
            if name == "alltoallv" {
                x.counts(p as usize + 2, p, "receive counts")?;
            }
            for k in 1..p {
                let tag = next_tag();
                let dst = (r + k) % p;
                cx.send(s, dst, tag, sizes[dst as usize]);
                let id = cx.post_recv(s, (r + p - k) % p, tag);
                cx.wait_for(s, &[id], name);
            }
        }
        "gather" | "gatherv" => {
            let n = x.count(0, "send count")? * elem;
            root = if name == "gather" {
                x.opt_rank(2, p)?
            } else {
                x.counts(1, p, "receive counts")?;
                x.opt_rank(1 + p as usize, p)?
            };
            let tag = next_tag();
            if r == root {
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
        "scatter" | "scatterv" => {
            let sizes: Vec<u64> = if name == "scatter" {
                root = x.opt_rank(2, p)?;
                vec![x.count(0, "send count")? * elem; p as usize]
            } else {
                root = x.opt_rank(1 + p as usize, p)?;
                x.counts(0, p, "send counts")?
                    .into_iter()
                    .map(|v| v * elem)
                    .collect()
            };
            let tag = next_tag();
            if r == root {
                for q in (0..p).filter(|&q| q != root) {
                    cx.send(s, q, tag, sizes[q as usize]);
                }
            } else {
                let id = cx.post_recv(s, root, tag);
                cx.wait_for(s, &[id], name);
            }
        }
        "allgather" | "allgatherv" => {
            let sizes: Vec<u64> = if name == "allgather" {
                vec![x.count(0, "send count")? * elem; p as usize]
            } else {
                x.count(0, "send count")?;
                x.counts(1, p, "receive counts")?
                    .into_iter()
                    .map(|v| v * elem)
                    .collect()
            };
            for k in 0..p.saturating_sub(1) {
                let tag = next_tag();
                let block = ((r + p - k) % p) as usize;
                cx.send(s, (r + 1) % p, tag, sizes[block]);
                let id = cx.post_recv(s, (r + p - 1) % p, tag);
                cx.wait_for(s, &[id], name);
            }
        }
        "reducescatter" => {
            let counts: Vec<u64> = x
                .counts(0, p, "receive counts")?
                .into_iter()
                .map(|v| v * elem)
                .collect();
            let f = x.num(p as usize, "flops")?;
            let total: u64 = counts.iter().sum();
            reduce(cx, s, p, 0, total, next_tag(), name);
            let tag = next_tag();
            if r == 0 {
                for q in 1..p {
                    cx.send(s, q, tag, counts[q as usize]);
                }
            } else {
                let id = cx.post_recv(s, 0, tag);
                cx.wait_for(s, &[id], name);
            }
            cx.compute(s, f / cx.flops_per_s, x.a)?;
        }
        _ => unreachable!("collective names are matched by the caller"),
    }
    Ok(root)
}

/// Binomial broadcast (MPICH): receive from the parent, then send to children.
fn bcast(cx: &mut Ctx, s: &mut Seg, p: u32, root: u32, n: u64, tag: i64, name: &str) {
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

/// Binomial reduction toward `root`.
fn reduce(cx: &mut Ctx, s: &mut Seg, p: u32, root: u32, n: u64, tag: i64, name: &str) {
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
