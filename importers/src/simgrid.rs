//! SimGrid time-independent (TI) MPI traces to execution blocks.
//!
//! Input: an *index file* listing one trace file per line (paths relative to the index file's
//! folder), or a single trace file holding every rank. Each trace line is
//! `<rank> <action> <args...>` (SimGrid 3.32 `smpi_replay.cpp` syntax); blank lines are
//! skipped.
//!
//! **Sizes.** Counts are elements of an MPI datatype: SimGrid 3.32 ends every action with the
//! id of its datatype(s), decoded with SimGrid's own table ([`datatype_bytes`], from
//! `src/smpi/mpi/smpi_datatype.cpp`: 0 `MPI_DOUBLE` 8 B, 1 `MPI_INT` 4 B, 6 `MPI_BYTE` 1 B,
//! 23 `MPI_UINT32_T` 4 B, ...). An action without one uses the default type: `MPI_DOUBLE`
//! when the rank's `init` has an argument, else `MPI_BYTE`, as in SimGrid. A derived datatype
//! is written `-1`; SimGrid replays it as 0 bytes, and so does whatif (with a note). An id
//! outside the table is an error naming the file and line.
//!
//! **Mapping.** Each rank is one MPI program recorded through [`crate::mpi`], which turns it
//! into blocks under an MPI protocol ([`crate::mpi::MpiProtocol`], default SimGrid 3.32's:
//! every transfer starts when both its send and its receive are posted; sends of 64 KiB or
//! more hold the sender until their transfer ends; 16 bytes of envelope per message):
//!
//! | action | program |
//! |---|---|
//! | `compute f`, `sleep s` | `f / flops_per_s` or `s` of work |
//! | `send`/`isend dst tag n [dt]` | a blocking / non-blocking send of `n` elements |
//! | `Ssend`/`ISsend`, `bsend`/`ibsend` | synchronous sends (never complete at once), buffered sends (always do); SimGrid 3.32 writes them but its replay does not know them |
//! | `recv`/`irecv src tag n [dt]` | a blocking / non-blocking receive; source `-333` (how SimGrid writes `MPI_ANY_SOURCE`) or `-555`, tag `-444` (`MPI_ANY_TAG`) are wildcards |
//! | `wait src dst tag` | waits for the oldest open request with these fields as written (SimGrid's request store); none: a no-op, counted in the notes |
//! | `waitall` | waits for every open request of the rank, except those a later `wait` names (SimGrid traces a `wait` only for a request still open, so the program's `MPI_Waitall` did not include them; see `Taken`) |
//! | `testall` | waits for every open request of the rank (and those of the `testall` before it), unless a later `testall`, `waitall` or `wait` takes them back (see `Taken`); SimGrid 3.32's replay refuses it |
//! | `test ...` | no-op: the request stays open for a later wait |
//! | `sendRecv n dst m src [dt dt']` | a send (tag 0), a receive (tag 0), a wait for both |
//! | `ibarrier`, `ibcast`, `ireduce`, `iallreduce`, `ialltoall(v)`, `igather(v)`, `iscatter(v)`, `iallgather(v)`, `iscan`, `iexscan` (arguments as the blocking form's) | a non-blocking collective: every message posted at the call, as SimGrid runs it ([`crate::mpi`]'s `nbc`); its request is completed by a `wait` naming its tag (SimGrid writes `-333 -333 TAG` on rank 0, `0 0 TAG` elsewhere) or a `waitall`. `ireducescatter` is refused |
//! | `init`, `finalize`, `comm_size`, `location` | nothing (`init` sets the default type) |
//! | `comm_split`, `comm_dup` | nothing, as in SimGrid's replay: every collective runs on `MPI_COMM_WORLD` (noted) |
//!
//! Waits, wildcard matching and the protocol are described in [`crate::mpi`]. Requests
//! still open at a rank's end complete before the run ends (their receive blocks end it).
//!
//! **Collectives** are expanded into point-to-point messages ([`crate::mpi::Collectives`]);
//! the default is SimGrid 3.32's default selector (`smpi`), the algorithms `smpirun -replay`
//! runs; `classic` gives whatif's own. The k-th collective of every rank must be the same
//! operation with the same root. Sizes: `bcast n [root] [dt]`, `reduce n f [root] [dt]`,
//! `allreduce n f [dt]` (then `f` flops), `alltoall n m [dt dt']`, `alltoallv b c_0..c_{P-1}
//! b' d_0..d_{P-1} [dt dt']`, `gather n m [root] [dt dt']`, `gatherv n c_0..c_{P-1} [root]
//! [dt dt']`, `scatter n m [root] [dt dt']`, `scatterv c_0..c_{P-1} m [root] [dt dt']`,
//! `allgather n m [dt dt']`, `allgatherv n c_0..c_{P-1} [dt dt'] [displacements]`,
//! `reducescatter c_0..c_{P-1} f [dt]`, `scan`/`exscan n f [dt]`; each rank sends its own
//! count.
//!
//! **Sub-communicators.** SimGrid 3.32 records a collective without its communicator (and
//! does not always write `comm_split`), so a collective on a sub-communicator reads as one on
//! `MPI_COMM_WORLD`. A v-collective then has fewer counts than the world has ranks: refused,
//! with that hint (SimGrid's replay aborts on it too). Others (`allreduce`, `bcast`,
//! `barrier`, ...) replay on `MPI_COMM_WORLD`, as in SimGrid's replay.

use crate::error::read_text;
use crate::lines::{self, Lines};
use crate::mpi::{ANY_SOURCE, ANY_TAG, Coll, Ctx, Req, Seg};
pub use crate::mpi::{Collectives, MpiProtocol};
use crate::{ImportError, Imported};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use trace::{TraceBuilder, TraceMeta};

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
const ACTIONS: [&str; 50] = [
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
    "ssend",
    "issend",
    "bsend",
    "ibsend",
    "scan",
    "exscan",
    "ibarrier",
    "ibcast",
    "ireduce",
    "iallreduce",
    "ialltoall",
    "ialltoallv",
    "igather",
    "igatherv",
    "iscatter",
    "iscatterv",
    "iallgather",
    "iallgatherv",
    "iscan",
    "iexscan",
    "testall",
];

/// Request-completion actions SimGrid 3.32 writes but neither its replay nor whatif runs.
const UNSUPPORTED: [&str; 7] = [
    "waitany",
    "waitsome",
    "testany",
    "testsome",
    "start",
    "startall",
    "ireducescatter",
];

/// Why an [`UNSUPPORTED`] action cannot be replayed.
fn unsupported_why(action: &str) -> &'static str {
    match action {
        "ireducescatter" => {
            "a non-blocking reduce-scatter is not modelled (SimGrid 3.32's replay refuses it too; the other non-blocking collectives are)"
        }
        "start" | "startall" => {
            "persistent requests: the trace does not say which request is started (SimGrid 3.32's replay refuses it too)"
        }
        _ => {
            "completing one of several requests depends on which finishes first, which a time-independent trace cannot replay (SimGrid 3.32's replay refuses it too)"
        }
    }
}

/// Bytes per element of SimGrid 3.32's predefined datatype `id` (`CREATE_MPI_DATATYPE` in
/// `src/smpi/mpi/smpi_datatype.cpp`, sizes of the C types on x86-64), or `None` for an id
/// SimGrid does not define. `-1` is a derived datatype, whose id SimGrid 3.32 does not record
/// and replays as `MPI_DATATYPE_NULL`: 0 bytes.
pub fn datatype_bytes(id: i64) -> Option<u64> {
    const SIZES: [u64; 60] = [
        8, 4, 1, 2, 8, 4, 1, 8, 1, 1, // 0 DOUBLE .. 9 UNSIGNED_CHAR
        2, 4, 8, 8, 16, 4, 1, 1, 2, 4, // 10 UNSIGNED_SHORT .. 19 INT32_T
        8, 1, 2, 4, 8, 8, 16, 32, 8, 8, // 20 INT64_T .. 29 OFFSET
        8, 16, 16, 8, 8, 8, 16, 16, 4, 4, // 30 FLOAT_INT .. 39 REAL4
        8, 16, 8, 16, 16, 4, 2, 4, 8, 16, // 40 REAL8 .. 49 INTEGER16
        32, 1, 8, 16, 32, 0, 0, 1, 8, 8, // 50 LONG_DOUBLE_INT .. 59 COUNT
    ];
    match id {
        -1 => Some(0),
        0..=59 => Some(SIZES[id as usize]),
        _ => None,
    }
}

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
    // Each listed file must exist: the first that does not is reported with its line at once
    // (an index of a million missing files took 25 s to say so).
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let entry = line.trim();
        if entry.is_empty() {
            continue;
        }
        let path = dir.join(entry);
        if let Err(e) = std::fs::metadata(&path) {
            return Err(ImportError::Syntax {
                file: input.display().to_string(),
                line: i as u64 + 1,
                expected: format!(
                    "the path of a trace file (relative to {})",
                    if dir.as_os_str().is_empty() {
                        ".".into()
                    } else {
                        dir.display().to_string()
                    }
                ),
                found: format!(
                    "{}, which cannot be read: {e}",
                    sim_core::inputs::quote(entry)
                ),
            });
        }
        out.push(path);
    }
    Ok(out)
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
    // Messages per rank and waits; each message may take a receive block, a transfer block
    // and two cuts (its send and receive points), each wait a segment.
    let (msgs, waits) = match kind {
        "send" | "isend" | "ssend" | "issend" | "bsend" | "ibsend" => (1, 1),
        "recv" | "irecv" | "wait" | "waitall" => (0, 1),
        "sendrecv" => (1, 1),
        // Either algorithm set (classic or SimGrid's, whose roots handle every rank).
        "barrier" => (log + 2 * p, log + 3),
        "bcast" | "reduce" | "allreduce" | "reducescatter" => (2 * log + 2 * p, 2 * log + 3),
        "alltoall" | "alltoallv" | "allgather" | "allgatherv" | "scan" | "exscan" => (p, log + 2),
        "gather" | "gatherv" | "scatter" | "scatterv" => (p, 2),
        // Non-blocking: every message posted at the call, one wait.
        "ibarrier" | "iallreduce" | "iallgather" | "iallgatherv" | "ialltoall" | "ialltoallv"
        | "iscan" | "iexscan" => (2 * p, 1),
        "ibcast" | "ireduce" | "igather" | "igatherv" | "iscatter" | "iscatterv" => (p, 1),
        _ => (0, 0),
    };
    (4 * msgs + waits, msgs)
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

/// Things in a trace that the replay handles in a way worth saying.
#[derive(Default)]
struct Oddities {
    /// Receives from any source or with any tag.
    wildcards: u64,
    /// `wait`s when the rank had no open request (SimGrid 3.32's replay aborts on them).
    waits_on_nothing: u64,
    /// `wait`s naming no open request while others are open (SimGrid returns at once).
    waits_unmatched: u64,
    /// `wait`s taking back a request from the `waitall` or `testall` before them (see
    /// [`Taken`]).
    waits_after_waitall: u64,
    /// `test`s (kept open).
    tests: u64,
    /// `testall`s.
    testalls: u64,
    /// `testall`s whose requests a later `testall` or `waitall` took back (see [`Taken`]).
    testalls_taken_back: u64,
    /// Actions with a derived datatype (id -1: 0 bytes).
    derived: u64,
    /// `comm_split`/`comm_dup` lines.
    communicators: u64,
}

impl Oddities {
    fn notes(&self) -> Vec<String> {
        let mut v = Vec::new();
        if self.wildcards > 0 {
            v.push(format!(
                "{} receives from any source or with any tag, matched in posting order to the message sent after the least work (SimGrid 3.32's replay matches any tag, -444, but cannot run receives from any source: it takes -333 for a rank, files an irecv under another source than its wait names, and deadlocks on a blocking recv)",
                self.wildcards
            ));
        }
        if self.waits_on_nothing > 0 {
            v.push(format!(
                "{} waits with no open request on their rank: no-ops (SimGrid 3.32's replay aborts on them: \"action wait not preceded by any irecv or isend\")",
                self.waits_on_nothing
            ));
        }
        if self.waits_unmatched > 0 {
            v.push(format!(
                "{} waits name no open request (source, destination, tag): no-ops, as in SimGrid 3.32's replay",
                self.waits_unmatched
            ));
        }
        if self.waits_after_waitall > 0 {
            v.push(format!(
                "{} waits name a request open at the waitall or testall before them: SimGrid traces a wait only for a request still open, so that waitall did not wait for it, and the wait does (SimGrid 3.32's replay lets the waitall take it and then aborts: \"action wait not preceded by any irecv or isend\")",
                self.waits_after_waitall
            ));
        }
        if self.testalls > 0 {
            v.push(format!(
                "{} testalls: each waits for its requests unless a later testall, waitall or wait takes them back ({} were), as the program does when it fails (SimGrid 3.32's replay refuses testall)",
                self.testalls, self.testalls_taken_back
            ));
        }
        if self.tests > 0 {
            v.push(format!(
                "{} tests: each leaves its request open for a later wait (SimGrid 3.32's replay completes it if it is done and sleeps smpi/test, 0.1 ms, per test; whatif does neither)",
                self.tests
            ));
        }
        if self.derived > 0 {
            v.push(format!(
                "{} actions use a derived datatype (id -1), whose size SimGrid 3.32 does not record: 0 bytes, as its replay does; the program sent more, so its communication is understated (HPL's panel broadcasts: recorded with -DHPL_NO_MPI_DATATYPE, 8 ranks on a 100 MB/s fat-tree took 29% longer): record with contiguous types where the program allows",
                self.derived
            ));
        }
        if self.communicators > 0 {
            v.push(format!(
                "{} comm_split/comm_dup lines: ignored, every collective runs on MPI_COMM_WORLD (as in SimGrid 3.32's replay)",
                self.communicators
            ));
        }
        v
    }
}

/// Where a rank's open non-blocking collectives with SimGrid tag `tag` are kept.
fn nbc_key(tag: i64) -> (i64, i64, i64) {
    (i64::MIN, i64::MIN, tag)
}

/// An open request: one send or receive, or a non-blocking collective's messages.
enum Open {
    One(Req),
    Coll(Vec<Req>),
}

impl Open {
    fn reqs(&self) -> &[Req] {
        match self {
            Open::One(r) => std::slice::from_ref(r),
            Open::Coll(v) => v,
        }
    }
}

/// A rank's open requests, by (source, destination, tag) as the trace writes them, oldest
/// first (SimGrid's `RequestStorage`).
#[derive(Default)]
struct Requests {
    by_key: HashMap<(i64, i64, i64), std::collections::VecDeque<(u64, Open)>>,
    n: u64,
    open: usize,
}

impl Requests {
    fn add(&mut self, key: (i64, i64, i64), r: Open) {
        self.by_key.entry(key).or_default().push_back((self.n, r));
        self.n += 1;
        self.open += 1;
    }
    fn pop(&mut self, key: (i64, i64, i64)) -> Option<Open> {
        let q = self.by_key.get_mut(&key)?;
        let r = q.pop_front().map(|(_, r)| r);
        if q.is_empty() {
            self.by_key.remove(&key);
        }
        self.open -= r.is_some() as usize;
        r
    }
    fn is_empty(&self) -> bool {
        self.open == 0
    }
    /// Every open request, as a store of its own; none is left open here (the order numbers
    /// go on, so the two stores can be merged).
    fn take_all(&mut self) -> Requests {
        let taken = Requests {
            by_key: std::mem::take(&mut self.by_key),
            n: self.n,
            open: self.open,
        };
        self.open = 0;
        taken
    }
    /// Adds the requests of `older`, taken from this store before any of its own were
    /// posted, in front of each key's own: each key's requests stay oldest first.
    fn absorb(&mut self, older: Requests) {
        for (key, q) in older.by_key {
            let mine = self.by_key.entry(key).or_default();
            for r in q.into_iter().rev() {
                mine.push_front(r);
            }
        }
        self.open += older.open;
    }
    /// Every request, oldest first.
    fn all(&self) -> Vec<Req> {
        let mut all: Vec<(u64, &Open)> = self
            .by_key
            .values()
            .flat_map(|q| q.iter().map(|(n, o)| (*n, o)))
            .collect();
        all.sort_unstable_by_key(|&(n, _)| n);
        all.iter()
            .flat_map(|(_, o)| o.reqs().iter().copied())
            .collect()
    }
}

/// The requests the rank's last `waitall` took, any of which a later `wait` may take back:
/// SimGrid traces a `wait` only for a request still open (`PMPI_Wait` writes nothing for
/// `MPI_REQUEST_NULL`, which a completed request becomes), so a `wait` naming a request the
/// `waitall` took shows that the program's `MPI_Waitall` did not include it (LULESH waits
/// for its sends with `MPI_Waitall`, then for each receive with `MPI_Wait`; the trace's
/// `waitall` does not say which requests it had).
///
/// A `testall`'s requests are waited for at the `testall` unless a later `testall`,
/// `waitall` or `wait` takes them back: a program goes on after a `testall` that failed and
/// completes its requests later (TeaLeaf: `MPI_Testall` of its left-right exchange, then, if
/// it failed, an `MPI_Waitall` after posting the next exchange; a polling loop: `testall`
/// until one succeeds). Whether it failed depends on timing, which the trace does not
/// record, but waiting at the later completion is what the program does when it fails, and
/// costs nothing more when the requests are done by then; at the last `testall` of a loop,
/// or one that no completion follows, the program saw them complete.
struct Taken {
    /// The operation waiting for them, if it waited for anything.
    op: Option<usize>,
    reqs: Requests,
    /// Taken by a `testall`.
    by_testall: bool,
}

struct Args<'a> {
    a: &'a Action<'a>,
    file: &'a str,
}

impl Args<'_> {
    fn err(&self, expected: impl Into<String>, found: impl Into<String>) -> ImportError {
        ImportError::syntax(self.file, self.a.line, expected, found)
    }
    /// Argument `i`, or an error saying it is missing.
    fn arg(&self, i: usize, what: &str) -> Result<&str, ImportError> {
        self.a.arg(i).ok_or_else(|| {
            self.err(
                format!("{}: {what} (argument {})", self.a.name, i + 1),
                "end of line",
            )
        })
    }
    fn num(&self, i: usize, what: &str) -> Result<f64, ImportError> {
        let t = self.arg(i, what)?;
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
        let t = self.arg(i, what)?;
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
    /// Argument `i` as an integer (any sign).
    fn int(&self, i: usize, what: &str) -> Result<i64, ImportError> {
        let t = self.arg(i, what)?;
        t.parse::<i64>().map_err(|_| {
            self.err(
                format!("{}: {what} (an integer)", self.a.name),
                format!("`{t}`"),
            )
        })
    }
    /// Argument `i` as a finite number of any sign (SimGrid parses sizes as doubles).
    fn any_num(&self, i: usize, what: &str) -> Result<f64, ImportError> {
        let t = self.arg(i, what)?;
        match t.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(self.err(
                format!("{}: {what} (a number)", self.a.name),
                format!("`{t}`"),
            )),
        }
    }
    /// A receive's source: a rank or a wildcard (`-333`, as SimGrid writes
    /// `MPI_ANY_SOURCE`, or `-555`, its value), and the value as written (the request key).
    fn source(&self, i: usize, p: u32) -> Result<(u32, i64), ImportError> {
        match self.int(i, "source") {
            Ok(v @ (-333 | -555)) => Ok((crate::mpi::ANY_SOURCE, v)),
            Ok(v) if v >= 0 && v < p as i64 => Ok((v as u32, v)),
            _ => Err(self.err(
                format!(
                    "{}: source (a rank in 0..{p}, or -333 for any source)",
                    self.a.name
                ),
                format!("`{}`", self.a.arg(i).unwrap_or("")),
            )),
        }
    }
    /// A receive's tag: `>= 0` or `-444` (`MPI_ANY_TAG`), and the value as written.
    fn recv_tag(&self, i: usize) -> Result<(i64, i64), ImportError> {
        match self.int(i, "tag") {
            Ok(-444) => Ok((crate::mpi::ANY_TAG, -444)),
            Ok(v) if v >= 0 => Ok((v, v)),
            _ => Err(self.err(
                format!(
                    "{}: a tag (a number >= 0, or -444 for any tag)",
                    self.a.name
                ),
                format!("`{}`", self.a.arg(i).unwrap_or("")),
            )),
        }
    }
    /// Bytes per element of the datatype in argument `i`, or `default` when there is none.
    fn elem(&self, i: usize, default: u64, odd: &mut Oddities) -> Result<u64, ImportError> {
        let Some(t) = self.a.arg(i) else {
            return Ok(default);
        };
        match t.parse::<i64>().ok().and_then(datatype_bytes) {
            Some(b) => {
                odd.derived += (t == "-1") as u64;
                Ok(b)
            }
            None => Err(self.err(
                format!(
                    "{}: a SimGrid 3.32 datatype id (0 to 59, or -1 for a derived type) as argument {}",
                    self.a.name,
                    i + 1
                ),
                format!("`{t}`"),
            )),
        }
    }
    /// `n` elements of the datatype in argument `i` (or `default`), in bytes.
    fn bytes(
        &self,
        n: u64,
        i: usize,
        default: u64,
        odd: &mut Oddities,
    ) -> Result<u64, ImportError> {
        let e = self.elem(i, default, odd)?;
        n.checked_mul(e).filter(|&b| b <= 1 << 60).ok_or_else(|| {
            self.err(
                format!("{}: a message below 2^60 bytes", self.a.name),
                format!("{n} elements of {e} bytes"),
            )
        })
    }
    /// `p` counts from argument `from` on: one per rank of `MPI_COMM_WORLD`.
    fn counts(&self, from: usize, p: u32, what: &str) -> Result<Vec<u64>, ImportError> {
        let have = self.a.n_args().saturating_sub(from);
        if have < p as usize {
            // SimGrid 3.32 records a collective without its communicator: one on a
            // sub-communicator has fewer counts than the world has ranks.
            return Err(self.err(
                format!("{}: {what}, one per rank ({p})", self.a.name),
                format!(
                    "{have} values to the end of the line (a collective on a sub-communicator? SimGrid's time-independent traces record collectives without their communicator, so neither its replay nor whatif can run one)"
                ),
            ));
        }
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

/// Adds `secs` of work to the open segment (a `compute` or `sleep`, or a collective's flops).
fn compute(cx: &mut Ctx, s: &mut Seg, secs: f64, x: &Args) -> Result<(), ImportError> {
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
fn parse_coll(
    x: &Args,
    name: &str,
    p: u32,
    elem: u64,
    odd: &mut Oddities,
) -> Result<(Coll, f64), ImportError> {
    let pu = p as usize;
    // `counts` elements of the datatype in argument `dt`, in bytes.
    let mut sizes = |counts: Vec<u64>, dt: usize| -> Result<Vec<u64>, ImportError> {
        let e = x.elem(dt, elem, odd)?;
        Ok(counts.into_iter().map(|c| c.saturating_mul(e)).collect())
    };
    Ok(match name {
        "barrier" => (Coll::Barrier, 0.0),
        "bcast" => {
            let n = sizes(vec![x.count(0, "size")?], 2)?[0];
            let root = x.opt_rank(1, p)?;
            (Coll::Bcast { n, root }, 0.0)
        }
        "reduce" | "allreduce" => {
            let all = name == "allreduce";
            let n = sizes(vec![x.count(0, "size")?], if all { 2 } else { 3 })?[0];
            let f = x.num(1, "flops")?;
            let root = if all { 0 } else { x.opt_rank(2, p)? };
            (Coll::Reduce { n, root, all }, f)
        }
        "scan" | "exscan" => {
            let n = sizes(vec![x.count(0, "size")?], 2)?[0];
            let f = x.num(1, "flops")?;
            (
                Coll::Scan {
                    n,
                    ex: name == "exscan",
                },
                f,
            )
        }
        "alltoall" => {
            let n = sizes(vec![x.count(0, "send count")?], 2)?[0];
            x.count(1, "receive count")?;
            // Bruck packs blocks of the send count in the receive type.
            let block = sizes(vec![x.count(0, "send count")?], 3)?[0];
            (
                Coll::Alltoall {
                    sizes: vec![n; pu],
                    block,
                    v: false,
                },
                0.0,
            )
        }
        "alltoallv" => {
            x.count(0, "send buffer size")?;
            let sends = sizes(x.counts(1, p, "send counts")?, 2 * pu + 2)?;
            x.counts(pu + 2, p, "receive counts")?;
            sizes(Vec::new(), 2 * pu + 3)?;
            (
                Coll::Alltoall {
                    sizes: sends,
                    block: 0,
                    v: true,
                },
                0.0,
            )
        }
        "gather" | "scatter" => {
            let n = sizes(vec![x.count(0, "send count")?], 3)?[0];
            x.count(1, "receive count")?;
            sizes(Vec::new(), 4)?;
            let root = x.opt_rank(2, p)?;
            if name == "gather" {
                (Coll::Gather { n, root, v: false }, 0.0)
            } else {
                let sizes = vec![n; pu];
                (
                    Coll::Scatter {
                        sizes,
                        root,
                        v: false,
                    },
                    0.0,
                )
            }
        }
        "gatherv" => {
            let n = sizes(vec![x.count(0, "send count")?], pu + 2)?[0];
            x.counts(1, p, "receive counts")?;
            sizes(Vec::new(), pu + 3)?;
            let root = x.opt_rank(1 + pu, p)?;
            (Coll::Gather { n, root, v: true }, 0.0)
        }
        "scatterv" => {
            let root = x.opt_rank(1 + pu, p)?;
            let sends = sizes(x.counts(0, p, "send counts")?, pu + 2)?;
            x.count(pu, "receive count")?;
            sizes(Vec::new(), pu + 3)?;
            (
                Coll::Scatter {
                    sizes: sends,
                    root,
                    v: true,
                },
                0.0,
            )
        }
        "allgather" => {
            let own = sizes(vec![x.count(0, "send count")?], 2)?[0];
            let blk = sizes(vec![x.count(1, "receive count")?], 3)?[0];
            (
                Coll::Allgather {
                    sizes: vec![blk; pu],
                    own,
                    v: false,
                },
                0.0,
            )
        }
        "allgatherv" => {
            // As SimGrid's parser: datatypes right after the counts when the line also has
            // displacements after them, or when it has at most two more fields.
            let n_args = x.a.n_args();
            let (dt1, dt2) = if n_args > 1 + 2 * pu || n_args <= pu + 3 {
                (pu + 1, pu + 2)
            } else {
                (usize::MAX, usize::MAX)
            };
            let own = sizes(vec![x.count(0, "send count")?], dt1)?[0];
            let blocks = sizes(x.counts(1, p, "receive counts")?, dt2)?;
            (
                Coll::Allgather {
                    sizes: blocks,
                    own,
                    v: true,
                },
                0.0,
            )
        }
        "reducescatter" => {
            let elem = x.elem(pu + 1, elem, odd)?;
            let counts = x
                .counts(0, p, "receive counts")?
                .into_iter()
                .map(|c| c.saturating_mul(elem))
                .collect();
            let f = x.num(pu, "flops")?;
            (Coll::ReduceScatter { counts, elem }, f)
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
            "whatif import simgrid {} --flops-per-s {flops_per_s} --collectives {} --mpi-protocol {}",
            input.display(),
            limit.collectives.unwrap_or(Collectives::Smpi),
            limit.mpi_protocol.unwrap_or(MpiProtocol::SIMGRID),
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
    let collectives = limit.collectives.unwrap_or(Collectives::Smpi);
    let protocol = limit.mpi_protocol.unwrap_or(MpiProtocol::SIMGRID);
    let mut cx = Ctx::new(b, collectives, protocol, p);
    cx.reserve(cap(sc.blocks), cap(sc.sends));
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
    let mut odd = Oddities::default();
    progress.stage("import", p as u64, "ranks");
    for r in 0..p {
        if r & 63 == 0 {
            progress.advance_to(r as u64);
        }
        let init = cx.entry("init");
        let mut s = cx.begin(r, init, None);
        // MPI_DEFAULT_TYPE: MPI_BYTE, or MPI_DOUBLE when `init` has an argument.
        let mut elem = 1u64;
        let mut n_coll = 0u64;
        let mut coll_size = (0u64, 0u64);
        let mut first = true;
        let mut store = Requests::default();
        let mut taken: Option<Taken> = None;
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
                "finalize" | "comm_size" | "location" => {}
                "comm_split" | "comm_dup" => odd.communicators += 1,
                "test" => odd.tests += 1,
                "compute" => {
                    let f = x.num(0, "flops")?;
                    compute(&mut cx, &mut s, f / flops_per_s, &x)?;
                }
                "sleep" => {
                    let t = x.num(0, "seconds")?;
                    compute(&mut cx, &mut s, t, &x)?;
                }
                "send" | "isend" | "ssend" | "issend" | "bsend" | "ibsend" => {
                    let dst = x.rank(0, "destination", p)?;
                    let tag = x.tag(1)?;
                    let n = x.count(2, "size")?;
                    let bytes = x.bytes(n, 3, elem, &mut odd)?;
                    let req = cx.isend(&mut s, dst, tag, bytes);
                    match a.name {
                        "ssend" | "issend" => cx.set_synchronous(req),
                        "bsend" | "ibsend" => cx.set_buffered(req),
                        _ => {}
                    }
                    if a.name.starts_with('i') {
                        store.add((r as i64, dst as i64, tag), Open::One(req));
                    } else {
                        cx.wait(&mut s, &[req], "send");
                    }
                }
                "recv" | "irecv" => {
                    let (src, key_src) = x.source(0, p)?;
                    let (tag, key_tag) = x.recv_tag(1)?;
                    // The count may be negative (unknown size: SimGrid probes); the sender's
                    // size is what travels.
                    x.any_num(2, "size")?;
                    x.bytes(0, 3, elem, &mut odd)?;
                    odd.wildcards += (src == ANY_SOURCE || tag == ANY_TAG) as u64;
                    let req = cx.irecv(&s, src, tag);
                    if a.name == "recv" {
                        cx.wait(&mut s, &[req], "recv");
                    } else {
                        store.add((key_src, r as i64, key_tag), Open::One(req));
                    }
                }
                "wait" => {
                    let src = x.int(0, "source")?;
                    let dst = x.int(1, "destination")?;
                    let tag = x.int(2, "tag")?;
                    let key = if crate::mpi::is_simgrid_nbc_tag(tag) {
                        nbc_key(tag)
                    } else {
                        (src, dst, tag)
                    };
                    match store.pop(key) {
                        Some(open) => {
                            cx.wait(&mut s, open.reqs(), "wait");
                        }
                        None => match taken.as_mut().and_then(|t| Some((t.op, t.reqs.pop(key)?))) {
                            Some((op, open)) => {
                                if let Some(op) = op {
                                    cx.release_from_wait(op, open.reqs());
                                }
                                cx.wait(&mut s, open.reqs(), "wait");
                                odd.waits_after_waitall += 1;
                            }
                            None if store.is_empty() => odd.waits_on_nothing += 1,
                            None => odd.waits_unmatched += 1,
                        },
                    }
                }
                "waitall" | "testall" => {
                    odd.testalls += (a.name == "testall") as u64;
                    let mut open = store.take_all();
                    if let Some(t) = taken.take_if(|t| t.by_testall) {
                        if let Some(op) = t.op {
                            cx.release_from_wait(op, &t.reqs.all());
                        }
                        open.absorb(t.reqs);
                        odd.testalls_taken_back += 1;
                    }
                    let op = cx.next_op();
                    let waited = cx.wait(&mut s, &open.all(), a.name);
                    taken = Some(Taken {
                        op: waited.then_some(op),
                        reqs: open,
                        by_testall: a.name == "testall",
                    });
                }
                "sendrecv" => {
                    let n = x.count(0, "send count")?;
                    let dst = x.rank(1, "destination", p)?;
                    x.count(2, "receive count")?;
                    let src = x.rank(3, "source", p)?;
                    let bytes = x.bytes(n, 4, elem, &mut odd)?;
                    x.bytes(0, 5, elem, &mut odd)?;
                    cx.sendrecv(&mut s, dst, 0, bytes, src, 0, "sendrecv");
                }
                coll @ ("barrier" | "bcast" | "reduce" | "allreduce" | "alltoall" | "alltoallv"
                | "gather" | "gatherv" | "scatter" | "scatterv" | "allgather"
                | "allgatherv" | "reducescatter" | "scan" | "exscan" | "ibarrier" | "ibcast"
                | "ireduce" | "iallreduce" | "ialltoall" | "ialltoallv" | "igather"
                | "igatherv" | "iscatter" | "iscatterv" | "iallgather" | "iallgatherv"
                | "iscan" | "iexscan") => {
                    // No blocking collective's name starts with `i`.
                    let nonblocking = coll.starts_with('i');
                    let blocking = if nonblocking { &coll[1..] } else { coll };
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
                    let (cl, flops) = parse_coll(&x, blocking, p, elem, &mut odd)?;
                    if nonblocking {
                        let reqs = crate::mpi::post_nbc(&mut cx, &mut s, &cl, p);
                        // The trace's `wait` lines name the request by SimGrid's tag for
                        // the kind (source and destination as written vary by rank:
                        // `-333 -333` on rank 0, `0 0` on others), a tag no program
                        // message has.
                        let tag = crate::mpi::simgrid_nbc_tag(blocking).expect("listed above");
                        store.add(nbc_key(tag), Open::Coll(reqs));
                    } else {
                        crate::mpi::expand(&mut cx, &mut s, &cl, c, p, coll).map_err(|what| {
                            ImportError::Unsupported {
                                file: format!("{}:{}", names[a.file], a.line),
                                what,
                            }
                        })?;
                    }
                    compute(&mut cx, &mut s, flops / flops_per_s, &x)?;
                    let name = ACTIONS[kind.expect("a known action")];
                    colls[r as usize].push((name, a.line as usize, cl.root() as u64));
                }
                other if UNSUPPORTED.contains(&other) => {
                    return Err(ImportError::Unsupported {
                        file: format!("{}:{}", names[a.file], a.line),
                        what: format!("`{raw}`: {}", unsupported_why(other)),
                    });
                }
                other => {
                    return Err(x.err(
                        "a TI action (init, compute, sleep, send, isend, Ssend, ISsend, bsend, ibsend, recv, irecv, wait, waitall, test, testall, sendRecv, barrier, bcast, reduce, allreduce, alltoall, alltoallv, gather, gatherv, scatter, scatterv, allgather, allgatherv, reducescatter, scan, exscan, their non-blocking forms ibarrier, ibcast, ..., comm_size, comm_split, comm_dup, location, finalize)",
                        format!("`{other}`"),
                    ));
                }
            }
            Ok(())
        })?;
        if !laid_out {
            return Ok(None);
        }
        cx.close();
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
    let (b, protocol_notes) = cx.finish(&input.display().to_string())?;
    let trace = b.finish().map_err(|source| ImportError::Invalid {
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
        "{} blocks, {} messages (collectives expanded: {}); compute at {flops_per_s:e} flop/s",
        trace.num_blocks(),
        trace.num_sends(),
        match collectives {
            Collectives::Smpi => "SimGrid 3.32's default selector",
            Collectives::Classic => "whatif's classic algorithms",
        }
    ));
    notes.extend(protocol_notes);
    notes.extend(odd.notes());
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

    #[test]
    fn unsupported_completions_are_refused_with_their_own_reason_and_line() {
        let dir = std::env::temp_dir().join(format!("sg-unsupported-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (action, why) in [
            ("waitany", "which finishes first"),
            ("testany", "which finishes first"),
            ("testsome", "which finishes first"),
            ("startall", "persistent requests"),
        ] {
            let f = dir.join(format!("{action}.txt"));
            std::fs::write(
                &f,
                format!("0 init\n0 compute 10\n0 {action}\n0 finalize\n"),
            )
            .unwrap();
            let e = import(&f, 1e9).unwrap_err().to_string();
            assert!(e.contains(&format!("{action}.txt:3")), "{e}");
            assert!(e.contains(&format!("`{action}`")), "{e}");
            assert!(e.contains(why), "{action}: {e}");
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_collective_with_fewer_counts_than_ranks_suggests_a_sub_communicator() {
        let dir = std::env::temp_dir().join(format!("sg-subcomm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // Three ranks; rank 1's gatherv names one receive count and its root (a gatherv on a
        // one-rank communicator, as SimGrid 3.32 records it: no communicator).
        for r in 0..3 {
            let counts = if r == 1 { "100" } else { "100 100 100" };
            let text = format!("{r} init\n{r} gatherv 100 {counts} 0\n{r} finalize\n");
            std::fs::write(dir.join(format!("r{r}.txt")), text).unwrap();
        }
        std::fs::write(dir.join("index.txt"), "r0.txt\nr1.txt\nr2.txt\n").unwrap();
        let e = import(&dir.join("index.txt"), 1e9).unwrap_err().to_string();
        assert!(e.contains("r1.txt:2"), "{e}");
        assert!(e.contains("receive counts, one per rank (3)"), "{e}");
        assert!(e.contains("sub-communicator"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn an_index_naming_missing_files_is_refused_at_once_with_the_line() {
        let dir = std::env::temp_dir().join(format!("sg-index-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("r0.txt"), "0 init\n0 compute 1000\n0 finalize\n").unwrap();
        // A million entries, the second missing: reported at its line without touching the
        // others.
        let mut index = String::from("r0.txt\n\n");
        for i in 1..1_000_000 {
            index.push_str(&format!("missing-{i}.txt\n"));
        }
        let idx = dir.join("index.txt");
        std::fs::write(&idx, index).unwrap();
        let t0 = std::time::Instant::now();
        let e = import(&idx, 1e9).unwrap_err();
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            t0.elapsed()
        );
        match &e {
            ImportError::Syntax { line, found, .. } => {
                assert_eq!(*line, 3);
                assert!(
                    found.contains("`missing-1.txt`, which cannot be read"),
                    "{found}"
                );
            }
            other => panic!("{other}"),
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
