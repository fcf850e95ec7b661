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
pub use crate::mpi::Collectives;
use crate::mpi::{Coll, Ctx, Seg};
use crate::{ImportError, Imported};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use trace::{BlockId, TraceBuilder, TraceMeta};

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

/// Imports a SimGrid TI trace (index file or single trace file).
/// Adds `secs` of work to the open segment (a `compute` or `sleep`, or a collective's flops).
fn compute(cx: &Ctx, s: &mut Seg, secs: f64, x: &Args) -> Result<(), ImportError> {
    let ps = (secs * 1e12).round();
    if !ps.is_finite() || !(0.0..1.8e19).contains(&ps) {
        return Err(x.err(
            "a non-negative amount of work",
            format!("{} ({secs} s)", x.a.args_text()),
        ));
    }
    cx.work(s, ps as u64);
    Ok(())
}

/// A collective action as this rank's [`Coll`] (sizes in bytes: counts times `elem`) and the
/// flops it computes after the messages.
fn parse_coll(x: &Args, name: &str, p: u32, elem: u64) -> Result<(Coll, f64), ImportError> {
    let bytes = |v: Vec<u64>| v.into_iter().map(|c| c * elem).collect::<Vec<u64>>();
    Ok(match name {
        "barrier" => (Coll::Barrier, 0.0),
        "bcast" => (
            Coll::Bcast {
                n: x.count(0, "size")? * elem,
                root: x.opt_rank(1, p)?,
            },
            0.0,
        ),
        "reduce" | "allreduce" => {
            let n = x.count(0, "size")? * elem;
            let f = x.num(1, "flops")?;
            let all = name == "allreduce";
            let root = if all { 0 } else { x.opt_rank(2, p)? };
            (Coll::Reduce { n, root, all }, f)
        }
        "alltoall" => (
            Coll::Alltoall {
                sizes: vec![x.count(0, "send count")? * elem; p as usize],
                v: false,
            },
            0.0,
        ),
        "alltoallv" => {
            let sizes = bytes(x.counts(1, p, "send counts")?);
            x.counts(p as usize + 2, p, "receive counts")?;
            (Coll::Alltoall { sizes, v: true }, 0.0)
        }
        "gather" => (
            Coll::Gather {
                n: x.count(0, "send count")? * elem,
                root: x.opt_rank(2, p)?,
                v: false,
            },
            0.0,
        ),
        "gatherv" => {
            let n = x.count(0, "send count")? * elem;
            x.counts(1, p, "receive counts")?;
            let root = x.opt_rank(1 + p as usize, p)?;
            (Coll::Gather { n, root, v: true }, 0.0)
        }
        "scatter" => {
            let root = x.opt_rank(2, p)?;
            let sizes = vec![x.count(0, "send count")? * elem; p as usize];
            (
                Coll::Scatter {
                    sizes,
                    root,
                    v: false,
                },
                0.0,
            )
        }
        "scatterv" => {
            let root = x.opt_rank(1 + p as usize, p)?;
            let sizes = bytes(x.counts(0, p, "send counts")?);
            (
                Coll::Scatter {
                    sizes,
                    root,
                    v: true,
                },
                0.0,
            )
        }
        "allgather" => (
            Coll::Allgather {
                sizes: vec![x.count(0, "send count")? * elem; p as usize],
                v: false,
            },
            0.0,
        ),
        "allgatherv" => {
            x.count(0, "send count")?;
            let sizes = bytes(x.counts(1, p, "receive counts")?);
            (Coll::Allgather { sizes, v: true }, 0.0)
        }
        "reducescatter" => {
            let counts = bytes(x.counts(0, p, "receive counts")?);
            let f = x.num(p as usize, "flops")?;
            (Coll::ReduceScatter { counts }, f)
        }
        _ => unreachable!("collective names are matched by the caller"),
    })
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
    let mut cx = Ctx::new(b, limit.collectives, p);
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
        let mut s = Seg::new(r, init);
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
                    compute(&cx, &mut s, f / flops_per_s, &x)?;
                }
                "sleep" => {
                    let t = x.num(0, "seconds")?;
                    compute(&cx, &mut s, t, &x)?;
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
                    let (cl, flops) = parse_coll(&x, coll, p, elem)?;
                    crate::mpi::expand(&mut cx, &mut s, &cl, c, p, coll);
                    compute(&cx, &mut s, flops / flops_per_s, &x)?;
                    let root = cl.root();
                    let coll = cl.name();
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
        cx.close(&s);
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
    crate::mpi::match_messages(&mut cx, &input.display().to_string())?;
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
