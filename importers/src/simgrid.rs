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
//!
//! **`Collectives::Smpi`** (`--collectives smpi`) expands them as SimGrid 3.32's default
//! selector does when it replays the trace, so that whatif and `smpirun -replay` run the same
//! messages: `barrier` linear (every rank sends 0 bytes to rank 0 and waits for its reply; rank
//! 0 waits for all, then answers all), `reduce` linear (every rank sends to the root, which
//! waits for all), `allreduce` = that reduce to rank 0 + the binomial `bcast`, `alltoall`,
//! `alltoallv`, `allgather(v)` linear (every rank posts all its sends at once; `alltoall`
//! always linear, where Open MPI's size table would pick Bruck or pairwise for some sizes),
//! `bcast`, `gather(v)`, `scatter(v)` as above. Blocking sends above SimGrid's detached
//! threshold (64 KiB) do not block here (SimGrid holds the sender until the transfer ends).

use crate::error::read_text;
use crate::lines::{self, Lines};
use crate::{ImportError, Imported};
use sim_core::SimDuration;
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::path::{Path, PathBuf};
use trace::{
    Block, BlockId, Destination, EntryId, MsgId, ObjectId, PeId, Send, TraceBuilder, TraceMeta,
};

/// One action being processed: its tokens (as ranges of its line) and where it came from.
#[derive(Clone, Debug)]
struct Action<'a> {
    /// The action name, lower case.
    name: &'a str,
    line_text: &'a str,
    /// Argument tokens: `line_text[a..z]`.
    args: &'a [(u32, u32)],
    file: usize,
    line: u64,
}

impl<'a> Action<'a> {
    fn arg(&self, i: usize) -> Option<&'a str> {
        self.args
            .get(i)
            .map(|&(a, z)| &self.line_text[a as usize..z as usize])
    }
    fn n_args(&self) -> usize {
        self.args.len()
    }
    fn args_text(&self) -> String {
        (0..self.n_args())
            .filter_map(|i| self.arg(i))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Every action name this importer knows, lower case.
const ACTIONS: [&str; 29] = [
    "init",
    "finalize",
    "comm_size",
    "location",
    "test",
    "compute",
    "sleep",
    "send",
    "isend",
    "recv",
    "irecv",
    "wait",
    "waitall",
    "sendrecv",
    "comm_split",
    "comm_dup",
    "barrier",
    "bcast",
    "reduce",
    "allreduce",
    "alltoall",
    "alltoallv",
    "gather",
    "gatherv",
    "scatter",
    "scatterv",
    "allgather",
    "allgatherv",
    "reducescatter",
];

/// The index in [`ACTIONS`] of `t` (any case), if it is a known action.
fn known(t: &str) -> Option<usize> {
    // Most traces write names in lower case: a direct match first.
    let exact = match t {
        "compute" => 5,
        "send" => 7,
        "isend" => 8,
        "recv" => 9,
        "irecv" => 10,
        "wait" => 11,
        "waitall" => 12,
        _ => usize::MAX,
    };
    if exact != usize::MAX {
        return Some(exact);
    }
    ACTIONS.iter().position(|k| k.eq_ignore_ascii_case(t))
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

/// The start of a file (enough to tell an index from a trace).
fn head_text(path: &Path) -> Result<String, ImportError> {
    let mut l = Lines::open(path)?;
    let mut out = String::new();
    while let Some((_, line)) = l.next_line()? {
        let t = line;
        if t.trim().is_empty() {
            continue;
        }
        out.push_str(t);
        out.push('\n');
        break;
    }
    Ok(out)
}

/// Every file the input consists of: the input first, then the traces an index lists.
pub(crate) fn files(input: &Path) -> Result<Vec<PathBuf>, ImportError> {
    let mut v = vec![input.to_path_buf()];
    v.extend(trace_files(input)?.into_iter().filter(|p| p != input));
    Ok(v)
}

/// The trace files: those an index lists, or the input itself.
fn trace_files(input: &Path) -> Result<Vec<PathBuf>, ImportError> {
    if index_entries(&head_text(input)?).is_none() {
        return Ok(vec![input.to_path_buf()]);
    }
    let text = read_text(input)?;
    let dir = input.parent().unwrap_or(Path::new("."));
    Ok(index_entries(&text)
        .unwrap_or_default()
        .into_iter()
        .map(|l| dir.join(l))
        .collect())
}

/// What a first pass over the files learns: how many ranks, how many actions each has (and of
/// which kinds, for reserving room), and whether the actions come rank by rank.
struct Scan {
    ranks: u32,
    per_rank: Vec<u64>,
    /// Actions appear with non-decreasing ranks through the files in order.
    in_rank_order: bool,
    /// Upper bounds on blocks and sends of the expansion.
    blocks: u64,
    sends: u64,
}

/// Splits `line` at whitespace into token ranges.
fn split(line: &str, out: &mut Vec<(u32, u32)>) {
    out.clear();
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i == b.len() {
            break;
        }
        let a = i;
        while i < b.len() && !b[i].is_ascii_whitespace() {
            i += 1;
        }
        out.push((a as u32, i as u32));
    }
}

fn rank_of(tok: &str, name: &str, line: u64) -> Result<usize, ImportError> {
    match lines::parse_u64(tok.as_bytes()) {
        Some(v) if v < 1 << 24 => Ok(v as usize),
        _ => Err(ImportError::syntax(
            name,
            line,
            "`<rank> <action> ...` with a rank number",
            format!("`{tok}`"),
        )),
    }
}

/// At most how many blocks and sends one action of `kind` becomes on one of `p` ranks.
fn expansion(kind: &str, p: u64) -> (u64, u64) {
    let log = 64 - p.leading_zeros() as u64 + 1;
    match kind {
        "send" | "isend" => (0, 1),
        "recv" | "sendrecv" => (2, 1),
        "irecv" | "wait" | "waitall" => (1, 0),
        // Either algorithm (classic or SMPI's linear ones, whose root handles every rank).
        "barrier" => (2 * log + p + 1, log + p),
        "bcast" | "reduce" | "allreduce" | "reducescatter" => (4 * log + p + 3, 2 * log + p),
        "alltoall" | "alltoallv" | "allgather" | "allgatherv" => (2 * p, p),
        "gather" | "gatherv" | "scatter" | "scatterv" => (p + 1, p),
        _ => (0, 0),
    }
}

fn scan(files: &[PathBuf], input: &Path) -> Result<Scan, ImportError> {
    // Every rank has at least one action line of at least 4 bytes ("0 x\n"): a rank number
    // beyond that cannot be complete, and is refused before it sizes anything.
    let total_bytes: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).map_or(0, |m| m.len()))
        .sum();
    let max_rank = (total_bytes / 4).max(1);
    let mut per_rank: Vec<u64> = Vec::new();
    let mut in_rank_order = true;
    let mut last = 0usize;
    let (mut blocks, mut sends) = (0u64, 0u64);
    // Largest expansion per action, in (blocks, sends) per process count (filled below).
    let mut kinds: HashMap<&'static str, u64> = HashMap::new();
    let mut toks = Vec::new();
    for p in files {
        let name = p.display().to_string();
        let mut l = Lines::open(p)?;
        while let Some((line, raw)) = l.next_line()? {
            let text = raw;
            split(text, &mut toks);
            let Some(&(a, z)) = toks.first() else {
                continue;
            };
            let rank = rank_of(&text[a as usize..z as usize], &name, line)?;
            if rank as u64 >= max_rank {
                return Err(ImportError::syntax(
                    &name,
                    line,
                    format!(
                        "a rank below {max_rank} (the input's {total_bytes} bytes hold at most that many ranks' actions)"
                    ),
                    format!("rank {rank}"),
                ));
            }
            if toks.len() < 2 {
                return Err(ImportError::syntax(
                    &name,
                    line,
                    "an action after the rank",
                    "end of line",
                ));
            }
            if per_rank.len() <= rank {
                per_rank.resize(rank + 1, 0);
            }
            per_rank[rank] += 1;
            in_rank_order &= rank >= last;
            last = rank;
            let act = &text[toks[1].0 as usize..toks[1].1 as usize];
            if let Some(k) = known(act) {
                *kinds.entry(ACTIONS[k]).or_insert(0) += 1;
            }
        }
    }
    if per_rank.is_empty() {
        return Err(ImportError::syntax(
            &input.display().to_string(),
            1,
            "at least one action",
            "no actions",
        ));
    }
    if let Some(r) = per_rank.iter().position(|&n| n == 0) {
        return Err(ImportError::inconsistent(
            &input.display().to_string(),
            format!(
                "rank {r} has no actions, but rank {} does",
                per_rank.len() - 1
            ),
        ));
    }
    let p = per_rank.len() as u64;
    for (k, n) in kinds {
        let (b, s) = expansion(k, p);
        blocks = blocks.saturating_add(n.saturating_mul(b));
        sends = sends.saturating_add(n.saturating_mul(s));
    }
    Ok(Scan {
        ranks: per_rank.len() as u32,
        per_rank,
        in_rank_order,
        blocks: blocks + p,
        sends,
    })
}

/// Hands out each rank's lines, rank by rank: straight from the files when they come in rank
/// order, or from the whole text held in memory otherwise.
enum Source {
    Stream {
        files: Vec<PathBuf>,
        next_file: usize,
        lines: Option<Lines<std::fs::File>>,
        /// A line read ahead, which belongs to a later rank: (file, line, rank, text).
        peeked: Option<(usize, u64, usize)>,
        peeked_text: String,
    },
    Held {
        text: Vec<String>,
        /// Per rank: (file, line, byte range in `text[file]`) of each action, in order.
        lines: Vec<Vec<(u32, u32, u32, u32)>>,
    },
    /// File `r` holds rank `r`'s actions and nothing else (assumed, checked line by line).
    PerFile { files: Vec<PathBuf> },
}

/// What a line handler gets: file index, line number, text.
type LineFn<'f> = dyn FnMut(usize, u64, &str) -> Result<(), ImportError> + 'f;

impl Source {
    fn new(files: &[PathBuf], scan: &Scan) -> Result<Source, ImportError> {
        if scan.in_rank_order {
            return Ok(Source::Stream {
                files: files.to_vec(),
                next_file: 0,
                lines: None,
                peeked: None,
                peeked_text: String::new(),
            });
        }
        let mut text = Vec::new();
        let mut lines: Vec<Vec<(u32, u32, u32, u32)>> = scan
            .per_rank
            .iter()
            .map(|&n| Vec::with_capacity(n as usize))
            .collect();
        for (fi, p) in files.iter().enumerate() {
            let t = read_text(p)?;
            let mut at = 0usize;
            for (i, l) in t.split_inclusive('\n').enumerate() {
                let body = l.trim_end_matches(['\n', '\r']);
                if let Some(r) = body.split_whitespace().next() {
                    // Ranks were checked by the scan.
                    let r = r.parse::<usize>().unwrap_or(0);
                    lines[r].push((fi as u32, i as u32 + 1, at as u32, (at + body.len()) as u32));
                }
                at += l.len();
            }
            text.push(t);
        }
        Ok(Source::Held { text, lines })
    }

    /// Calls `f` on every action line of rank `r`, in order (ranks are asked for in order).
    /// `Ok(false)`: the files are not laid out as [`Source::PerFile`] assumes.
    fn each(&mut self, r: usize, f: &mut LineFn) -> Result<bool, ImportError> {
        match self {
            Source::PerFile { files } => {
                let mut lines = Lines::open(&files[r])?;
                let mut any = false;
                while let Some((l, t)) = lines.next_line()? {
                    let Some(first) = t.split_ascii_whitespace().next() else {
                        continue;
                    };
                    if lines::parse_u64(first.as_bytes()) != Some(r as u64)
                        || t.split_ascii_whitespace().nth(1).is_none()
                    {
                        return Ok(false);
                    }
                    any = true;
                    f(r, l, t)?;
                }
                Ok(any)
            }
            Source::Held { text, lines } => {
                for &(fi, l, a, z) in &lines[r] {
                    f(
                        fi as usize,
                        l as u64,
                        &text[fi as usize][a as usize..z as usize],
                    )?;
                }
                Ok(true)
            }
            Source::Stream {
                files,
                next_file,
                lines,
                peeked,
                peeked_text,
            } => {
                if let Some((fi, l, pr)) = *peeked {
                    if pr != r {
                        return Ok(true);
                    }
                    *peeked = None;
                    f(fi, l, peeked_text)?;
                }
                loop {
                    if lines.is_none() {
                        if *next_file == files.len() {
                            return Ok(true);
                        }
                        *lines = Some(Lines::open(&files[*next_file])?);
                        *next_file += 1;
                    }
                    let fi = *next_file - 1;
                    let src = lines.as_mut().expect("opened above");
                    let Some((l, raw)) = src.next_line()? else {
                        *lines = None;
                        continue;
                    };
                    // Ranks were checked by the scan.
                    let t = raw;
                    let Some(first) = t.split_ascii_whitespace().next() else {
                        continue;
                    };
                    let lr = lines::parse_u64(first.as_bytes()).unwrap_or(0) as usize;
                    if lr != r {
                        peeked_text.clear();
                        peeked_text.push_str(t);
                        *peeked = Some((fi, l, lr));
                        return Ok(true);
                    }
                    f(fi, l, t)?;
                }
            }
        }
    }
}

/// A fast, deterministic hasher for small integer keys (multiply and rotate, as rustc's
/// FxHash): the channel table is looked up twice per message.
#[derive(Default)]
struct FxHasher(u64);

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
struct Channel {
    id: u64,
    sent: u64,
    recvd: u64,
}

/// Message labels: the k-th message of a channel is labelled `channel id * 2^32 + k` by its
/// sender and its receiver alike.
#[derive(Default)]
struct Labels {
    channels: HashMap<(u32, u32, i64), Channel, BuildHasherDefault<FxHasher>>,
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
    fn send(&mut self, src: u32, dst: u32, tag: i64) -> MsgId {
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

struct Ctx<'a> {
    collectives: Collectives,
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
                format!("{} ({secs} s)", a.args_text()),
            ));
        }
        s.dur_ps = s.dur_ps.saturating_add(ps as u64);
        Ok(())
    }
}

struct Args<'a> {
    a: &'a Action<'a>,
    file: &'a str,
}

impl Args<'_> {
    fn err(&self, expected: impl Into<String>, found: impl Into<String>) -> ImportError {
        ImportError::syntax(self.file, self.a.line, expected, found)
    }
    fn num(&self, i: usize, what: &str) -> Result<f64, ImportError> {
        let t = self.a.arg(i).ok_or_else(|| {
            self.err(
                format!("{}: {what} (argument {})", self.a.name, i + 1),
                "end of line",
            )
        })?;
        // Integers below 2^53 are exact either way; the integer parser is faster.
        if let Some(v) = lines::parse_u64(t.as_bytes()).filter(|&v| v < 1 << 53) {
            return Ok(v as f64);
        }
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
        let t = self.a.arg(i).ok_or_else(|| {
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
            .arg(i)
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
        if self.a.n_args() > i {
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

/// Imports a SimGrid TI trace (index file or single trace file).
pub fn import(input: &Path, flops_per_s: f64) -> Result<Imported, ImportError> {
    let opts = crate::ImportOptions {
        flops_per_s,
        ..Default::default()
    };
    import_with_progress(input, &opts, &mut sim_core::NoProgress)
}

/// [`import`] with options (speed, collectives), reporting the ranks read to `progress`,
/// refusing (before building it) a trace estimated above `opts.max_memory_bytes`
/// ([`ImportError::TooLarge`]).
pub fn import_with_progress(
    input: &Path,
    opts: &crate::ImportOptions,
    progress: &mut dyn sim_core::Progress,
) -> Result<Imported, ImportError> {
    let files = trace_files(input)?;
    let flops_per_s = opts.flops_per_s;
    let limit = opts;
    // The usual layout, an index of one file per rank in rank order, is read in one pass; any
    // surprise (another layout, or an error to report) falls back to scanning first.
    if files.len() > 1 {
        match import_with(input, &files, flops_per_s, None, limit, progress) {
            Ok(Some(imp)) => return Ok(imp),
            Err(e @ ImportError::TooLarge { .. }) => return Err(e),
            _ => {}
        }
    }
    let sc = scan(&files, input)?;
    crate::check_size(&input.display().to_string(), sc.blocks, sc.sends, limit)?;
    import_with(input, &files, flops_per_s, Some(sc), limit, progress)?.ok_or_else(|| {
        ImportError::inconsistent(
            &input.display().to_string(),
            "internal error: the scanned trace changed while it was read",
        )
    })
}

/// Imports with the ranks and layout a scan found, or (`None`) assuming one file per rank in
/// rank order, in which case `Ok(None)` or an error means "scan and read again".
fn import_with(
    input: &Path,
    files: &[PathBuf],
    flops_per_s: f64,
    scanned: Option<Scan>,
    limit: &crate::ImportOptions,
    progress: &mut dyn sim_core::Progress,
) -> Result<Option<Imported>, ImportError> {
    let names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
    let optimistic = scanned.is_none();
    let sc = match scanned {
        Some(sc) => sc,
        None => {
            // Room for the blocks and sends: at most one of each per 7 bytes of input.
            let bytes: u64 = files
                .iter()
                .map(|f| std::fs::metadata(f).map_or(0, |m| m.len()))
                .sum();
            Scan {
                ranks: files.len() as u32,
                per_rank: vec![1; files.len()],
                in_rank_order: true,
                blocks: bytes / 7 + files.len() as u64,
                sends: bytes / 7,
            }
        }
    };
    let p = sc.ranks;
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
    let cap = |x: u64| x.min(u32::MAX as u64) as usize;
    b.reserve(cap(sc.blocks), cap(sc.blocks + sc.sends), cap(sc.sends));
    let e_msg = b.entry("msg");
    for r in 0..p {
        b.object(format!("rank{r}"), PeId(r));
    }
    let mut cx = Ctx {
        collectives: limit.collectives,
        b,
        labels: Labels::default(),
        e_msg,
        entries: HashMap::new(),
        names: &names,
        flops_per_s,
    };
    let mut src = if optimistic {
        Source::PerFile {
            files: files.to_vec(),
        }
    } else {
        Source::new(files, &sc)?
    };
    // Collective sequence per rank, checked against rank 0's; each rank's first file.
    let mut colls: Vec<Vec<(&'static str, usize, u64)>> = vec![Vec::new(); p as usize];
    let mut first_file = vec![0usize; p as usize];
    let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
    let mut counts = [0u64; ACTIONS.len()];
    let mut toks: Vec<(u32, u32)> = Vec::new();
    progress.stage("import", p as u64, "ranks");
    for r in 0..p {
        if r & 63 == 0 {
            progress.advance_to(r as u64);
        }
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
        let mut coll_size = (0u64, 0u64);
        let mut first = true;
        let laid_out = src.each(r as usize, &mut |fi, line, text| {
            if first {
                first_file[r as usize] = fi;
                first = false;
            }
            split(text, &mut toks);
            let (a0, z0) = toks[1];
            let raw = &text[a0 as usize..z0 as usize];
            let lower;
            let kind = known(raw);
            let name = match kind {
                Some(k) => ACTIONS[k],
                None => {
                    lower = raw.to_ascii_lowercase();
                    &lower
                }
            };
            let a = &Action {
                name,
                line_text: text,
                args: &toks[2..],
                file: fi,
                line,
            };
            match kind {
                Some(i) => counts[i] += 1,
                None => *kinds.entry(name.to_string()).or_insert(0) += 1,
            }
            let x = Args {
                a,
                file: &names[a.file],
            };
            match a.name {
                "init" => elem = if a.n_args() == 0 { 1 } else { 8 },
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
                    if optimistic && r == 0 {
                        // Every rank calls rank 0's collectives: their expansion on all
                        // ranks is known now, before any of it is built.
                        let (eb, es) = expansion(coll, p as u64);
                        coll_size.0 = coll_size.0.saturating_add(eb.saturating_mul(p as u64));
                        coll_size.1 = coll_size.1.saturating_add(es.saturating_mul(p as u64));
                        crate::check_size(
                            &input.display().to_string(),
                            sc.blocks.saturating_add(coll_size.0),
                            sc.sends.saturating_add(coll_size.1),
                            limit,
                        )?;
                    }
                    let root = collective(&mut cx, &mut s, &x, coll, c, p, elem)?;
                    let coll = known(coll).map_or("?", |k| ACTIONS[k]);
                    colls[r as usize].push((coll, a.line as usize, root as u64));
                }
                other => {
                    return Err(x.err(
                        "a TI action (init, compute, send, isend, recv, irecv, wait, waitall, test, sendrecv, sleep, barrier, bcast, reduce, allreduce, alltoall, alltoallv, gather, gatherv, scatter, scatterv, allgather, allgatherv, reducescatter, comm_size, finalize)",
                        format!("`{other}`"),
                    ));
                }
            }
            Ok(())
        })?;
        if !laid_out {
            return Ok(None);
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
                    &names[first_file[r]],
                    format!(
                        "collective #{k} is `{n}` (root {rt}) on rank {r} (line {l}) but `{n0}` (root {r0}) on rank 0 (line {l0})"
                    ),
                ));
            }
        }
        if colls[r].len() != colls[0].len() {
            return Err(ImportError::inconsistent(
                &names[first_file[r]],
                format!(
                    "rank {r} calls {} collectives but rank 0 calls {}",
                    colls[r].len(),
                    colls[0].len()
                ),
            ));
        }
    }
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
                &input.display().to_string(),
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
                &input.display().to_string(),
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
    let trace = cx.b.finish().map_err(|source| ImportError::Invalid {
        file: input.display().to_string(),
        source,
    })?;
    for (k, &n) in ACTIONS.iter().zip(&counts) {
        if n > 0 {
            kinds.insert(k.to_string(), n);
        }
    }
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
    Ok(Some(Imported {
        trace,
        notes,
        recorded_end: None,
    }))
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
        "barrier" if cx.collectives == Collectives::Smpi => {
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
            if cx.collectives == Collectives::Smpi {
                reduce_linear(cx, s, p, root, n, next_tag(), name);
            } else {
                reduce(cx, s, p, root, n, next_tag(), name);
            }
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
            if cx.collectives == Collectives::Smpi {
                let tag = next_tag();
                linear_exchange(cx, s, p, tag, name, |dst| sizes[dst as usize]);
                return Ok(root);
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
            // Linear: every rank sends to the root (as a linear reduce).
            reduce_linear(cx, s, p, root, n, next_tag(), name);
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
            if cx.collectives == Collectives::Smpi {
                let tag = next_tag();
                let mine = sizes[r as usize];
                linear_exchange(cx, s, p, tag, name, |_| mine);
                return Ok(root);
            }
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
            if cx.collectives == Collectives::Smpi {
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

/// Linear reduction or gather (SimGrid's `ireduce`, `igather`): every rank sends to `root`,
/// which waits for all.
fn reduce_linear(cx: &mut Ctx, s: &mut Seg, p: u32, root: u32, n: u64, tag: i64, name: &str) {
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
fn linear_exchange(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn action_names_are_found_in_any_case() {
        for (i, a) in ACTIONS.iter().enumerate() {
            assert_eq!(known(a), Some(i), "{a}");
            assert_eq!(known(&a.to_ascii_uppercase()), Some(i), "{a}");
        }
        assert_eq!(known("bogus"), None);
    }
}
