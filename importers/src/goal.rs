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
use crate::lines::{self, Lines, show};
use sim_core::SimDuration;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use trace::{
    BlockColumns, BlockId, Destination, EntryId, MsgId, NONE_U64, ObjectId, PeId, Send, Trace,
    TraceMeta, TraceParts,
};

const NIL: u32 = u32::MAX;
/// The largest number of operations (operation ids keep a flag bit free).
const MAX_OPS: usize = 1 << 31;
/// Labels `l<N>` with `N` below this are looked up in a vector, not a map.
const FAST_LABELS: u64 = 1 << 24;

const CALC: u8 = 0;
const SEND: u8 = 1;
const RECV: u8 = 2;

/// One operation (24 bytes): calc (`size` = ns), send (`size` = bytes, `peer` = destination)
/// or recv (`peer` = source).
#[derive(Clone, Copy, Debug)]
struct Op {
    size: u64,
    tag: u64,
    /// Kind in the top 8 bits, peer rank below.
    kind_peer: u32,
    line: u32,
}

impl Op {
    fn kind(&self) -> u8 {
        (self.kind_peer >> 24) as u8
    }
    fn peer(&self) -> u32 {
        self.kind_peer & 0xff_ffff
    }
}

/// A label in a `requires` line, before the rank's labels are all known.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Label {
    /// `l<N>` in canonical decimal form.
    Num(u64),
    /// Anything else.
    Name(Box<[u8]>),
}

impl Label {
    fn of(t: &[u8]) -> Label {
        if let [b'l', digits @ ..] = t
            && !digits.is_empty()
            && (digits[0] != b'0' || digits.len() == 1)
            && digits.iter().all(u8::is_ascii_digit)
            && let Some(n) = lines::parse_u64(digits)
            && n < FAST_LABELS
        {
            return Label::Num(n);
        }
        Label::Name(t.into())
    }
}

/// A rank's labels: `l<N>` in a vector (reset by generation), others in a map.
#[derive(Default)]
struct Labels {
    fast: Vec<(u32, u32)>,
    names: HashMap<Label, u32>,
    generation: u32,
}

impl Labels {
    fn clear(&mut self) {
        self.generation += 1;
        self.names.clear();
    }
    fn get(&self, l: &Label) -> Option<u32> {
        match l {
            Label::Num(n) => match self.fast.get(*n as usize) {
                Some(&(g, v)) if g == self.generation => Some(v),
                _ => None,
            },
            name => self.names.get(name).copied(),
        }
    }
    /// Defines `l` as operation `v`; false if it was already defined.
    fn insert(&mut self, l: Label, v: u32) -> bool {
        match l {
            Label::Num(n) => {
                let n = n as usize;
                if n >= self.fast.len() {
                    self.fast.resize(n + 1, (0, 0));
                }
                if self.fast[n].0 == self.generation {
                    return false;
                }
                self.fast[n] = (self.generation, v);
                true
            }
            name => self.names.insert(name, v).is_none(),
        }
    }
}

/// The longest `calc` (ns): 2^62 ps, so that sums of calcs stay countable in picoseconds.
const MAX_CALC_NS: u64 = (1 << 62) / 1000;

/// The kind of a GOAL operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// `calc N` (nanoseconds).
    Calc,
    /// `send Sb to r tag t`.
    Send,
    /// `recv Sb from r tag t`.
    Recv,
}

/// One operation of an [`OpSchedule`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GoalOp {
    /// What it does.
    pub kind: OpKind,
    /// Bytes (send, recv) or nanoseconds (calc).
    pub size: u64,
    /// Destination (send) or source (recv) rank; 0 for calc.
    pub peer: u32,
    /// Message tag (0 for calc).
    pub tag: u64,
}

/// A GOAL schedule as written, for simulators that run operations themselves (LogGOPSim's
/// semantics): operations in rank order and file order within a rank, and the `requires` /
/// `irequires` edges in file order.
#[derive(Clone, Debug, Default)]
pub struct OpSchedule {
    /// Every operation.
    pub ops: Vec<GoalOp>,
    /// Rank `r` owns `ops[base[r]..base[r + 1]]`.
    pub base: Vec<u32>,
    /// `(op, dependency, immediate)`: `op requires dependency` (`immediate`: `irequires`).
    pub edges: Vec<(u32, u32, bool)>,
}

/// Parses a GOAL schedule into operations and edges, without turning it into blocks.
pub fn parse_schedule(path: &Path, parallel: bool) -> Result<OpSchedule, ImportError> {
    let file = path.display().to_string();
    let s = parse(path, &file, parallel, &mut sim_core::NoProgress)?;
    Ok(OpSchedule {
        ops: s
            .ops
            .iter()
            .map(|o| GoalOp {
                kind: match o.kind() {
                    CALC => OpKind::Calc,
                    SEND => OpKind::Send,
                    _ => OpKind::Recv,
                },
                size: o.size,
                peer: if o.kind() == CALC { 0 } else { o.peer() },
                tag: o.tag,
            })
            .collect(),
        base: s.base,
        edges: s
            .edges
            .iter()
            .map(|&(op, d)| (op, d & !IMMEDIATE, d & IMMEDIATE != 0))
            .collect(),
    })
}

/// A parsed schedule: operations in rank order and their `requires` / `irequires` edges.
struct Schedule {
    ops: Vec<Op>,
    /// Per rank, the first operation (plus a closing entry): rank `r` owns
    /// `ops[base[r]..base[r + 1]]`.
    base: Vec<u32>,
    /// `(op, dep | IMMEDIATE)`.
    edges: Vec<(u32, u32)>,
    cpu_nic_ignored: usize,
}

const IMMEDIATE: u32 = 1 << 31;

struct P<'a> {
    file: &'a str,
    line: u64,
}

impl P<'_> {
    fn err(&self, expected: impl Into<String>, found: impl Into<String>) -> ImportError {
        ImportError::syntax(self.file, self.line, expected, found)
    }
    fn unsupported(&self, what: &str) -> ImportError {
        ImportError::Unsupported {
            file: format!("{}:{}", self.file, self.line),
            what: what.into(),
        }
    }
    fn num(&self, tok: Option<&[u8]>, what: &str) -> Result<u64, ImportError> {
        match tok {
            None => Err(self.err(what, "end of line")),
            Some(t) => lines::parse_u64(t).ok_or_else(|| self.err(what, format!("`{}`", show(t)))),
        }
    }
    fn bytes(&self, tok: Option<&[u8]>) -> Result<u64, ImportError> {
        let t = tok.ok_or_else(|| self.err("a size such as 1024b", "end of line"))?;
        let digits = t.strip_suffix(b"b").unwrap_or(t);
        lines::parse_u64(digits)
            .ok_or_else(|| self.err("a size such as 1024b", format!("`{}`", show(t))))
    }
    fn peer(&self, tok: Option<&[u8]>, ranks: u32, what: &str) -> Result<u32, ImportError> {
        let t = tok.ok_or_else(|| self.err(what, "end of line"))?;
        match lines::parse_i64(t) {
            Some(r) if r >= 0 && r < ranks as i64 => Ok(r as u32),
            Some(-1) => {
                Err(self.unsupported("ANY_SOURCE (-1): receives must name their source rank"))
            }
            _ => Err(self.err(format!("{what} (0..{ranks})"), format!("`{}`", show(t)))),
        }
    }
}

/// `None` as `None`, a token as `Some("tok")` (how errors show a token that may be missing).
fn opt_show(t: Option<&[u8]>) -> String {
    format!("{:?}", t.map(show))
}

/// The code part of a line: comments (`//`, `#`) removed, whitespace trimmed.
fn code(line: &[u8]) -> &[u8] {
    let mut end = line.len();
    for (i, &c) in line.iter().enumerate() {
        if c == b'#' || (c == b'/' && line.get(i + 1) == Some(&b'/')) {
            end = i;
            break;
        }
    }
    line[..end].trim_ascii()
}

/// Files smaller than this (after the header) are parsed on one thread.
const PARALLEL_BYTES: u64 = 8 << 20;

/// Parses the schedule: the `num_ranks` header, then the rank blocks, in two halves on two
/// threads when the file is large (split at a `rank N {` line; the result is the same).
fn parse(
    path: &Path,
    file: &str,
    parallel: bool,
    progress: &mut dyn sim_core::Progress,
) -> Result<Schedule, ImportError> {
    let (n_ranks, header_end, header_line) = parse_header(path, file)?;
    let size = std::fs::metadata(path)
        .map_err(|source| ImportError::Io {
            path: path.to_path_buf(),
            source,
        })?
        .len();
    progress.stage("parse", size, "bytes");
    let done = AtomicU64::new(header_end);
    let done = &done;
    let split = if parallel && size - header_end >= PARALLEL_BYTES {
        find_split(path, header_end + (size - header_end) / 2, size)?
    } else {
        None
    };
    let Some(split) = split else {
        let (part, err) = parse_part(
            path,
            file,
            n_ranks,
            (header_end, size),
            header_line + 1,
            done,
            Some(progress),
        );
        if let Some((_, e)) = err {
            return Err(e);
        }
        return finish_parts(path, file, n_ranks, part, None);
    };
    let (a, b) = std::thread::scope(|sc| {
        let a = sc.spawn(|| {
            parse_part(
                path,
                file,
                n_ranks,
                (header_end, split),
                header_line + 1,
                done,
                None,
            )
        });
        let b = lines::count_lines(path, split).map(|before| {
            parse_part(
                path,
                file,
                n_ranks,
                (split, size),
                before + 1,
                done,
                Some(progress),
            )
        });
        (a.join(), b)
    });
    let (a, a_err) = a.unwrap_or_else(|e| std::panic::resume_unwind(e));
    if let Some((_, e)) = a_err {
        return Err(e);
    }
    finish_parts(path, file, n_ranks, a, Some(b?))
}

/// Reads up to the `num_ranks N` line; returns N, the byte offset after that line and its
/// number.
/// Ranks a GOAL file may declare without naming them in `rank N {` sections.
const MAX_SILENT_RANKS: u64 = 4096;

fn parse_header(path: &Path, file: &str) -> Result<(u32, u64, u64), ImportError> {
    let mut lines = Lines::open(path)?;
    let mut p = P { file, line: 0 };
    while let Some((line_no, raw)) = lines.next_line()? {
        p.line = line_no;
        let line = code(raw.as_bytes());
        if line.is_empty() {
            continue;
        }
        let mut toks = [&b""[..]; 4];
        let nt = lines::tokens(line, &mut toks);
        if toks[0] != b"num_ranks" || nt != 2 {
            return Err(p.err("`num_ranks N` first", format!("`{}`", show(line))));
        }
        let n = p.num(Some(toks[1]), "a rank count")?;
        if n == 0 || n > 1 << 24 {
            return Err(p.err("a rank count from 1 to 16777216", format!("{n}")));
        }
        // Ranks without a section are allowed (they do nothing), but a schedule of many ranks
        // names them: beyond a few thousand, each rank needs its `rank N {` (8+ bytes).
        let size = std::fs::metadata(path).map_or(u64::MAX, |m| m.len());
        if n > MAX_SILENT_RANKS && n > size / 8 {
            return Err(p.err(
                format!(
                    "a rank count this {size}-byte file can describe (at most {} rank sections of 8+ bytes each, or up to {MAX_SILENT_RANKS} ranks in all)",
                    size / 8
                ),
                format!("num_ranks {n}"),
            ));
        }
        return Ok((n as u32, lines.offset(), line_no));
    }
    Err(p.err("`num_ranks N`", "end of file"))
}

/// The start of the first `rank N {` line at or after byte `from` (after the line `from` falls
/// in), if any.
fn find_split(path: &Path, from: u64, size: u64) -> Result<Option<u64>, ImportError> {
    let mut lines = Lines::range(path, from, size, 1)?;
    // The first (partial) line is skipped.
    if lines.next_line()?.is_none() {
        return Ok(None);
    }
    loop {
        let at = lines.offset();
        let Some((_, raw)) = lines.next_line()? else {
            return Ok(None);
        };
        let mut toks = [&b""[..]; 4];
        let nt = lines::tokens(code(raw.as_bytes()), &mut toks);
        if nt == 3 && toks[0] == b"rank" && toks[2] == b"{" && lines::parse_u64(toks[1]).is_some() {
            return Ok(Some(at));
        }
    }
}

/// The rank blocks of one stretch of the file.
struct Part {
    ops: Vec<Op>,
    /// `(op, dep | IMMEDIATE)`, operations numbered within the part.
    edges: Vec<(u32, u32)>,
    /// `(rank, first op, operations, line of its header)`, in file order.
    ranks: Vec<(u32, u32, u32, u64)>,
    /// The stretch ended inside a rank block.
    open: bool,
    /// Number of the stretch's last line.
    last_line: u64,
    cpu_nic_ignored: usize,
}

/// Parses the rank blocks in bytes `start..end` (line `first_line` starts at `start`): what
/// was read, and the first error with its line, if any.
fn parse_part(
    path: &Path,
    file: &str,
    n_ranks: u32,
    (start, end): (u64, u64),
    first_line: u64,
    done: &AtomicU64,
    progress: Option<&mut dyn sim_core::Progress>,
) -> (Part, Option<(u64, ImportError)>) {
    let mut part = Part {
        ops: Vec::new(),
        edges: Vec::new(),
        ranks: Vec::new(),
        open: false,
        last_line: first_line - 1,
        cpu_nic_ignored: 0,
    };
    let mut line = first_line;
    let mut report = Report {
        done,
        progress,
        at: start,
    };
    let err = parse_into(
        path,
        file,
        n_ranks,
        (start, end),
        first_line,
        &mut part,
        &mut line,
        &mut report,
    )
    .err();
    (part, err.map(|e| (line, e)))
}

/// Bytes parsed: counted by every part, shown by the one with the progress.
struct Report<'a, 'p> {
    done: &'a AtomicU64,
    progress: Option<&'p mut dyn sim_core::Progress>,
    at: u64,
}

impl Report<'_, '_> {
    fn to(&mut self, offset: u64) {
        if offset - self.at >= 4 << 20 {
            let all = self.done.fetch_add(offset - self.at, Ordering::Relaxed) + offset - self.at;
            self.at = offset;
            if let Some(p) = self.progress.as_mut() {
                p.advance_to(all);
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn parse_into(
    path: &Path,
    file: &str,
    n_ranks: u32,
    (start, end): (u64, u64),
    first_line: u64,
    part: &mut Part,
    at_line: &mut u64,
    report: &mut Report,
) -> Result<(), ImportError> {
    let mut lines = Lines::range(path, start, end, first_line)?;
    let mut p = P { file, line: 0 };
    let Part {
        ops,
        edges,
        ranks,
        cpu_nic_ignored,
        ..
    } = part;
    let mut seen = vec![false; n_ranks as usize];
    let mut current: Option<(u32, usize)> = None; // (rank, first op)
    let mut labels = Labels::default();
    // `x requires y` lines of the current rank: (op, label of y, immediate, line).
    let mut pending: Vec<(u32, Label, bool, u64)> = Vec::new();
    p.line = first_line - 1;
    loop {
        *at_line = p.line + 1;
        report.to(lines.offset());
        let Some((line_no, raw)) = lines.next_line()? else {
            break;
        };
        p.line = line_no;
        *at_line = line_no;
        let line = code(raw.as_bytes());
        if line.is_empty() {
            continue;
        }
        let mut toks = [&b""[..]; 32];
        let nt = lines::tokens(line, &mut toks);
        let t = &toks[..nt.min(toks.len())];
        let tok = |i: usize| t.get(i).copied();
        let Some((r, first)) = current else {
            if t[0] != b"rank" || nt != 3 || t[2] != b"{" {
                return Err(p.err("`rank N {`", format!("`{}`", show(line))));
            }
            let r = p.peer(tok(1), n_ranks, "a rank number")?;
            if seen[r as usize] {
                return Err(p.err(
                    format!("a rank not defined before (rank {r} is)"),
                    format!("`{}`", show(line)),
                ));
            }
            seen[r as usize] = true;
            ranks.push((r, ops.len() as u32, 0, line_no));
            current = Some((r, ops.len()));
            labels.clear();
            continue;
        };
        if nt == 1 && t[0] == b"}" {
            for (op, dep, immediate, at) in pending.drain(..) {
                let Some(d) = labels.get(&dep) else {
                    let dep = match &dep {
                        Label::Num(n) => format!("l{n}"),
                        Label::Name(b) => show(b),
                    };
                    return Err(ImportError::syntax(
                        file,
                        at,
                        format!("a label defined in rank {r}"),
                        format!(
                            "`{dep}` (used by `{}`)",
                            label_text(&ops[op as usize], path)
                        ),
                    ));
                };
                edges.push((
                    op,
                    (first as u32 + d) | if immediate { IMMEDIATE } else { 0 },
                ));
            }
            if let Some(last) = ranks.last_mut() {
                last.2 = (ops.len() - first) as u32;
            }
            current = None;
            continue;
        }
        if let Some(label) = t[0].strip_suffix(b":") {
            let kind = op_kind(&p, &t[1..], nt - 1, n_ranks, cpu_nic_ignored)?;
            let local = (ops.len() - first) as u32;
            if !labels.insert(Label::of(label), local) {
                return Err(p.err(
                    format!(
                        "a new label (`{}` is already defined in rank {r})",
                        show(label)
                    ),
                    format!("`{}`", show(line)),
                ));
            }
            if ops.len() + 1 >= MAX_OPS {
                return Err(p.err(format!("at most {MAX_OPS} operations"), "more".to_string()));
            }
            let line_no =
                u32::try_from(p.line).map_err(|_| p.err("at most 2^32 - 1 lines", "more"))?;
            ops.push(Op {
                line: line_no,
                ..kind
            });
        } else if nt == 3 && (t[1] == b"requires" || t[1] == b"irequires") {
            let Some(op) = labels.get(&Label::of(t[0])) else {
                return Err(p.err(
                    "a label defined above in this rank",
                    format!("`{}`", show(t[0])),
                ));
            };
            pending.push((
                first as u32 + op,
                Label::of(t[2]),
                t[1] == b"irequires",
                p.line,
            ));
        } else {
            return Err(p.err(
                "`label: send|recv|calc ...`, `label requires|irequires label` or `}`",
                format!("`{}`", show(line)),
            ));
        }
    }
    part.open = current.is_some();
    part.last_line = p.line;
    Ok(())
}

/// Joins the first part (from the header on) and the second (if the file was split), with
/// the errors a single pass over the file would have reported first.
fn finish_parts(
    path: &Path,
    file: &str,
    n_ranks: u32,
    mut a: Part,
    b: Option<(Part, Option<(u64, ImportError)>)>,
) -> Result<Schedule, ImportError> {
    let Some((b, b_err)) = b else {
        if a.open {
            let p = P {
                file,
                line: a.last_line,
            };
            return Err(p.err("`}` closing the last rank", "end of file"));
        }
        return Ok(assemble(a, n_ranks));
    };
    if a.open {
        // The second part's first line, `rank N {`, came inside a rank block.
        let line = a.last_line + 1;
        let p = P { file, line };
        return Err(p.err(
            "`label: send|recv|calc ...`, `label requires|irequires label` or `}`",
            format!("`{}`", line_text(path, line)),
        ));
    }
    // A rank the first part defined, defined again in the second: the earliest such line,
    // unless the second part failed before it.
    let mut seen = vec![false; n_ranks as usize];
    for r in &a.ranks {
        seen[r.0 as usize] = true;
    }
    let b_err_line = b_err.as_ref().map_or(u64::MAX, |e| e.0);
    if let Some(&(r, _, _, line)) = b
        .ranks
        .iter()
        .find(|r| seen[r.0 as usize])
        .filter(|d| d.3 < b_err_line)
    {
        let p = P { file, line };
        return Err(p.err(
            format!("a rank not defined before (rank {r} is)"),
            format!("`{}`", line_text(path, line)),
        ));
    }
    if let Some((_, e)) = b_err {
        return Err(e);
    }
    if b.open {
        let p = P {
            file,
            line: b.last_line,
        };
        return Err(p.err("`}` closing the last rank", "end of file"));
    }
    let base = a.ops.len() as u32;
    a.ops.extend_from_slice(&b.ops);
    drop(b.ops);
    a.edges.extend(
        b.edges
            .iter()
            .map(|&(op, d)| (op + base, ((d & !IMMEDIATE) + base) | (d & IMMEDIATE))),
    );
    a.ranks.extend(
        b.ranks
            .iter()
            .map(|&(r, first, n, l)| (r, first + base, n, l)),
    );
    a.cpu_nic_ignored += b.cpu_nic_ignored;
    Ok(assemble(a, n_ranks))
}

/// The code part of line `line` of `path` (errors only).
fn line_text(path: &Path, line: u64) -> String {
    let Ok(mut l) = Lines::open(path) else {
        return String::new();
    };
    while let Ok(Some((n, raw))) = l.next_line() {
        if n == line {
            return show(code(raw.as_bytes()));
        }
    }
    String::new()
}

/// A part's operations, in file order, as a schedule in rank order.
fn assemble(part: Part, n_ranks: u32) -> Schedule {
    let mut blocks = vec![(NIL, 0u32); n_ranks as usize];
    for &(r, first, n, _) in &part.ranks {
        blocks[r as usize] = (first, n);
    }
    in_rank_order(part.ops, part.edges, &blocks, part.cpu_nic_ignored)
}

/// Reorders operations (and edge endpoints) from file order into rank order.
fn in_rank_order(
    ops: Vec<Op>,
    mut edges: Vec<(u32, u32)>,
    blocks: &[(u32, u32)],
    cpu_nic_ignored: usize,
) -> Schedule {
    let mut base = Vec::with_capacity(blocks.len() + 1);
    let mut total = 0u32;
    let mut in_order = true;
    for &(first, count) in blocks {
        base.push(total);
        if first != NIL && first != total {
            in_order = false;
        }
        total += count;
    }
    base.push(total);
    if in_order {
        return Schedule {
            ops,
            base,
            edges,
            cpu_nic_ignored,
        };
    }
    let mut gid = vec![0u32; ops.len()];
    for (r, &(first, count)) in blocks.iter().enumerate() {
        for i in 0..count {
            gid[(first + i) as usize] = base[r] + i;
        }
    }
    let mut sorted = ops.clone();
    for (i, op) in ops.iter().enumerate() {
        sorted[gid[i] as usize] = *op;
    }
    for e in &mut edges {
        e.0 = gid[e.0 as usize];
        e.1 = gid[(e.1 & !IMMEDIATE) as usize] | (e.1 & IMMEDIATE);
    }
    Schedule {
        ops: sorted,
        base,
        edges,
        cpu_nic_ignored,
    }
}

/// The label of `op`, read back from its line (errors only: labels are not kept).
fn label_text(op: &Op, path: &Path) -> String {
    let Ok(mut l) = Lines::open(path) else {
        return format!("(line {})", op.line);
    };
    while let Ok(Some((line_no, raw))) = l.next_line() {
        if line_no == op.line as u64 {
            let c = code(raw.as_bytes());
            let first = c.split(|b| b.is_ascii_whitespace()).next().unwrap_or(c);
            return show(first.strip_suffix(b":").unwrap_or(first));
        }
    }
    format!("(line {})", op.line)
}

fn op_kind(
    p: &P,
    t: &[&[u8]],
    nt: usize,
    ranks: u32,
    ignored: &mut usize,
) -> Result<Op, ImportError> {
    if nt > t.len() {
        return Err(p.err(
            "`tag T`, `cpu N` or `nic N`",
            format!("{} more tokens", nt - t.len()),
        ));
    }
    let opt = |from: usize, ignored: &mut usize| -> Result<u64, ImportError> {
        let mut tag = 0u64;
        let mut i = from;
        while i < t.len() {
            let v = t.get(i + 1).copied();
            match t[i] {
                b"tag" => {
                    let s = v.ok_or_else(|| p.err("a tag number", "end of line"))?;
                    let x = lines::parse_i64(s)
                        .ok_or_else(|| p.err("a tag number", format!("`{}`", show(s))))?;
                    if x < 0 {
                        return Err(p.unsupported(
                            "ANY_TAG (negative tags): operations must name their tag",
                        ));
                    }
                    tag = x as u64;
                }
                b"cpu" | b"nic" => {
                    if p.num(v, "a cpu or nic number")? != 0 {
                        *ignored += 1;
                    }
                }
                other => {
                    return Err(p.err("`tag T`, `cpu N` or `nic N`", format!("`{}`", show(other))));
                }
            }
            i += 2;
        }
        Ok(tag)
    };
    let op = |kind: u8, peer: u32, size: u64, tag: u64| Op {
        size,
        tag,
        kind_peer: ((kind as u32) << 24) | peer,
        line: 0,
    };
    match t.first().copied() {
        Some(b"calc") => {
            let ns = p.num(t.get(1).copied(), "a calc duration (ns)")?;
            if ns > MAX_CALC_NS {
                return Err(p.err(
                    format!("a calc duration of at most {MAX_CALC_NS} ns (53 days: simulated time is counted in picoseconds)"),
                    format!("{ns}"),
                ));
            }
            opt(2, ignored)?;
            Ok(op(CALC, 0, ns, 0))
        }
        Some(word @ (b"send" | b"recv")) => {
            let bytes = p.bytes(t.get(1).copied())?;
            let (dir, what): (&[u8], _) = if word == b"send" {
                (b"to", "a destination rank")
            } else {
                (b"from", "a source rank")
            };
            if t.get(2).copied() != Some(dir) {
                return Err(p.err(format!("`{}`", show(dir)), opt_show(t.get(2).copied())));
            }
            let peer = p.peer(t.get(3).copied(), ranks, what)?;
            let tag = opt(4, ignored)?;
            Ok(op(
                if word == b"send" { SEND } else { RECV },
                peer,
                bytes,
                tag,
            ))
        }
        other => Err(p.err("send, recv or calc", opt_show(other))),
    }
}

/// Imports a GOAL schedule. `eager_limit`: sends larger than this are rendezvous;
/// `parallel`: a large file is parsed in two halves on two threads.
pub fn import(path: &Path, eager_limit: u64, parallel: bool) -> Result<Imported, ImportError> {
    import_with(path, eager_limit, parallel, &mut sim_core::NoProgress)
}

/// [`import`], reporting the bytes parsed to `progress`.
pub fn import_with(
    path: &Path,
    eager_limit: u64,
    parallel: bool,
    progress: &mut dyn sim_core::Progress,
) -> Result<Imported, ImportError> {
    import_limited(path, eager_limit, parallel, u64::MAX, progress)
}

/// [`import_with`], refusing (after parsing, before building) a schedule whose trace would
/// need more than `max_memory_bytes` ([`crate::BUILD_BYTES_PER_BLOCK`] per operation).
pub fn import_limited(
    path: &Path,
    eager_limit: u64,
    parallel: bool,
    max_memory_bytes: u64,
    progress: &mut dyn sim_core::Progress,
) -> Result<Imported, ImportError> {
    let file = path.display().to_string();
    let Schedule {
        ops,
        base,
        edges: raw_edges,
        cpu_nic_ignored,
    } = parse(path, &file, parallel, progress)?;
    crate::check_size(
        &file,
        ops.len() as u64,
        ops.len() as u64,
        &crate::ImportOptions {
            max_memory_bytes,
            ..Default::default()
        },
    )?;
    let n = base.len() - 1;
    let total = ops.len();
    let rank_of = |g: usize| -> usize { base.partition_point(|&b| b as usize <= g) - 1 };
    let at = |g: usize| format!("{file}:{}", ops[g].line);

    let mut matched = match_messages(&ops, &base, &file, path)?;

    // Effective dependencies per op: `requires`, plus the resolved dependencies of
    // `irequires` targets, plus the matched receive of every rendezvous send required.
    // Edges grouped by operation (a stable counting sort: file order within an operation).
    let edge_start = csr_starts(total, raw_edges.iter().map(|e| e.0 as usize));
    let edges = {
        let mut fill = edge_start.clone();
        let mut v = vec![(0u32, 0u32); raw_edges.len()];
        for &e in &raw_edges {
            v[fill[e.0 as usize] as usize] = e;
            fill[e.0 as usize] += 1;
        }
        v
    };
    drop(raw_edges);
    let mut deps: Vec<Vec<u32>> = Vec::new();
    let mut dep_start = vec![0u32; total + 1];
    let mut dep_list: Vec<u32> = Vec::with_capacity(edges.len() + edges.len() / 2);
    let has_immediate = edges.iter().any(|e| e.1 & IMMEDIATE != 0);
    if has_immediate {
        deps = vec![Vec::new(); total];
        let mut state = vec![0u8; total];
        for g in 0..total {
            resolve(g, &edges, &edge_start, &mut state, &mut deps, &|g| {
                ImportError::inconsistent(
                    &at(g),
                    format!(
                        "rank {}: `irequires` chain through `{}` loops back on itself",
                        rank_of(g),
                        label_text(&ops[g], path)
                    ),
                )
            })?;
        }
    }
    let mut ds: Vec<u32> = Vec::new();
    for g in 0..total {
        ds.clear();
        if has_immediate {
            ds.append(&mut deps[g]);
        } else {
            ds.extend(
                edges[edge_start[g] as usize..edge_start[g + 1] as usize]
                    .iter()
                    .map(|e| e.1),
            );
        }
        let n0 = ds.len();
        for i in 0..n0 {
            let d = ds[i] as usize;
            if ops[d].kind() == SEND && ops[d].size > eager_limit {
                ds.push(matched[d]);
            }
        }
        ds.sort_unstable();
        ds.dedup();
        dep_list.extend_from_slice(&ds);
        dep_start[g + 1] = dep_list.len() as u32;
    }
    drop((deps, edges, edge_start));
    dep_list.shrink_to_fit();

    let order = topological_order(&dep_start, &dep_list, total).map_err(|stuck| {
        let shown: Vec<String> = stuck
            .iter()
            .take(5)
            .map(|&g| {
                format!(
                    "rank {} `{}` (line {})",
                    rank_of(g as usize),
                    label_text(&ops[g as usize], path),
                    ops[g as usize].line
                )
            })
            .collect();
        ImportError::inconsistent(
            &file,
            format!(
                "the dependencies form a cycle (the schedule deadlocks); {} operations are on or behind it, e.g. {}",
                stuck.len(),
                shown.join(", ")
            ),
        )
    })?;
    let mut block_of = vec![0u32; total];
    for (k, &g) in order.iter().enumerate() {
        block_of[g as usize] = k as u32;
    }

    // What building blocks needs of each operation, in 12 bytes instead of 24.
    let size: Vec<u64> = ops.iter().map(|o| o.size).collect();
    let kind_peer: Vec<u32> = ops.iter().map(|o| o.kind_peer).collect();
    drop(ops);
    let kind = |g: usize| (kind_peer[g] >> 24) as u8;
    // Labels: sends are numbered densely in block order; a receive's trigger is its send's.
    // `matched` becomes the label: of the send itself, or of a receive's send.
    let mut n_send = 0u32;
    for &g in &order {
        if kind(g as usize) == SEND {
            matched[g as usize] = n_send;
            n_send += 1;
        }
    }
    for &g in &order {
        if kind(g as usize) == RECV {
            matched[g as usize] = matched[matched[g as usize] as usize];
        }
    }
    let label = matched;
    let n_send = n_send as usize;
    let meta = TraceMeta {
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
    };
    let (e_calc, e_send, e_recv) = (0u32, 1u32, 2u32);
    let mut cols = BlockColumns {
        object: Vec::with_capacity(total),
        entry: Vec::with_capacity(total),
        duration_ps: Vec::with_capacity(total),
        trigger: Vec::with_capacity(total),
        ..BlockColumns::default()
    };
    let mut deps_end = Vec::with_capacity(total);
    let mut sends_end = Vec::with_capacity(total);
    let mut bdeps: Vec<BlockId> = Vec::with_capacity(dep_list.len());
    let mut sends: Vec<Send> = Vec::with_capacity(n_send);
    let mut rdv = 0usize;
    let mut rank = 0usize;
    for &g in &order {
        let g = g as usize;
        // Blocks come mostly in rank order: advance the rank cursor, search otherwise.
        if !(base[rank] as usize <= g && g < base[rank + 1] as usize) {
            rank = rank_of(g);
        }
        bdeps.extend(
            dep_list[dep_start[g] as usize..dep_start[g + 1] as usize]
                .iter()
                .map(|&d| BlockId(block_of[d as usize])),
        );
        deps_end.push(bdeps.len() as u32);
        cols.object.push(rank as u32);
        let (entry, dur, trigger) = match kind(g) {
            CALC => (e_calc, SimDuration::from_ns(size[g]).as_ps(), NONE_U64),
            SEND => {
                rdv += (size[g] > eager_limit) as usize;
                sends.push(Send {
                    msg: MsgId(label[g] as u64),
                    offset: SimDuration::ZERO,
                    dest: Destination::Object(ObjectId(kind_peer[g] & 0xff_ffff)),
                    bytes: size[g],
                    entry: EntryId(e_recv),
                });
                (e_send, 0, NONE_U64)
            }
            _ => (e_recv, 0, label[g] as u64),
        };
        cols.entry.push(entry);
        cols.duration_ps.push(dur);
        cols.trigger.push(trigger);
        sends_end.push(sends.len() as u32);
    }
    drop((block_of, order, label, dep_list, dep_start, size, kind_peer));
    let trace = Trace::from_parts(TraceParts {
        meta,
        entries: ["calc", "send", "recv"]
            .iter()
            .map(|&name| trace::EntryMethod::new(name))
            .collect(),
        objects: (0..n)
            .map(|r| trace::ObjectInfo {
                name: format!("rank{r}"),
                recorded_pe: PeId(r as u32),
                moves: Default::default(),
                pinned: false,
            })
            .collect(),
        groups: Vec::new(),
        cols,
        deps_end,
        deps: bdeps,
        sends_end,
        sends,
    })
    .map_err(|source| ImportError::Invalid {
        file: file.clone(),
        source,
    })?;
    let mut notes = vec![format!(
        "{file}: {n} ranks, {total} operations ({n_send} sends, {n_send} recvs, {} calcs); {rdv} rendezvous sends (> {eager_limit} B)",
        total - 2 * n_send
    )];
    if cpu_nic_ignored > 0 {
        notes.push(format!(
            "{cpu_nic_ignored} operations name a cpu or nic other than 0; each rank is one PE, so they run there"
        ));
    }
    Ok(Imported {
        trace,
        notes,
        recorded_end: None,
    })
}

/// CSR starts for items with keys `keys` below `n`.
fn csr_starts(n: usize, keys: impl Iterator<Item = usize>) -> Vec<u32> {
    let mut start = vec![0u32; n + 1];
    for k in keys {
        start[k + 1] += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    start
}

/// Pairs the k-th send from `a` to `b` with tag `t` with the k-th such receive; returns each
/// operation's partner (`NIL` for calcs).
fn match_messages(
    ops: &[Op],
    base: &[u32],
    file: &str,
    path: &Path,
) -> Result<Vec<u32>, ImportError> {
    let n = base.len() - 1;
    // Sends and receives grouped by source rank (a counting sort), then each group sorted by
    // (destination, tag, op): keys in (source, destination, tag) order, operations in op order
    // within a key.
    let mut n_send = vec![0u32; n + 1];
    let mut n_recv = vec![0u32; n + 1];
    for r in 0..n {
        for op in &ops[base[r] as usize..base[r + 1] as usize] {
            match op.kind() {
                SEND => n_send[r + 1] += 1,
                RECV => n_recv[op.peer() as usize + 1] += 1,
                _ => {}
            }
        }
    }
    for r in 0..n {
        n_send[r + 1] += n_send[r];
        n_recv[r + 1] += n_recv[r];
    }
    // (peer, tag, op): the destination for sends, the receiving rank for receives.
    let mut sends = vec![(0u32, 0u64, 0u32); n_send[n] as usize];
    let mut recvs = vec![(0u32, 0u64, 0u32); n_recv[n] as usize];
    let mut fill_recv = n_recv.clone();
    for r in 0..n {
        let mut at = n_send[r] as usize;
        for g in base[r]..base[r + 1] {
            let op = &ops[g as usize];
            match op.kind() {
                SEND => {
                    sends[at] = (op.peer(), op.tag, g);
                    at += 1;
                }
                RECV => {
                    let src = op.peer() as usize;
                    recvs[fill_recv[src] as usize] = (r as u32, op.tag, g);
                    fill_recv[src] += 1;
                }
                _ => {}
            }
        }
    }
    drop(fill_recv);
    for r in 0..n {
        sends[n_send[r] as usize..n_send[r + 1] as usize].sort_unstable();
        recvs[n_recv[r] as usize..n_recv[r + 1] as usize].sort_unstable();
    }
    let mut matched = vec![NIL; ops.len()];
    let at = |g: u32| format!("{file}:{}", ops[g as usize].line);
    for src in 0..n {
        let ss = &sends[n_send[src] as usize..n_send[src + 1] as usize];
        let rs = &recvs[n_recv[src] as usize..n_recv[src + 1] as usize];
        let key = |e: &(u32, u64, u32)| (e.0, e.1);
        let (mut i, mut j) = (0usize, 0usize);
        while i < ss.len() {
            let k = key(&ss[i]);
            let i_end = i + ss[i..].partition_point(|e| key(e) == k);
            while j < rs.len() && key(&rs[j]) < k {
                j += 1;
            }
            let j_end = j + rs[j..].partition_point(|e| key(e) == k);
            for (c, s) in ss[i..i_end].iter().enumerate() {
                let Some(rv) = rs.get(j + c).filter(|_| j + c < j_end) else {
                    return Err(ImportError::inconsistent(
                        &at(s.2),
                        format!(
                            "send `{}` from rank {src} to rank {} tag {} has no matching recv ({} sends, {} recvs with this source, destination and tag)",
                            label_text(&ops[s.2 as usize], path),
                            k.0,
                            k.1,
                            i_end - i,
                            j_end - j
                        ),
                    ));
                };
                let (sb, rb) = (ops[s.2 as usize].size, ops[rv.2 as usize].size);
                if sb != rb {
                    return Err(ImportError::inconsistent(
                        &at(rv.2),
                        format!(
                            "recv `{}` expects {rb} bytes but its matching send (line {}) sends {sb}",
                            label_text(&ops[rv.2 as usize], path),
                            ops[s.2 as usize].line
                        ),
                    ));
                }
                matched[s.2 as usize] = rv.2;
                matched[rv.2 as usize] = s.2;
            }
            i = i_end;
        }
    }
    // Receives left over: in key order, the first beyond its key's send count.
    for src in 0..n {
        if let Some(r) = recvs[n_recv[src] as usize..n_recv[src + 1] as usize]
            .iter()
            .find(|r| matched[r.2 as usize] == NIL)
        {
            return Err(ImportError::inconsistent(
                &at(r.2),
                format!(
                    "recv `{}` at rank {} from rank {src} tag {} has no matching send",
                    label_text(&ops[r.2 as usize], path),
                    r.0,
                    r.1
                ),
            ));
        }
    }
    Ok(matched)
}

/// Fills `deps[g]`: `requires` targets, plus the resolved deps of `irequires` targets.
fn resolve(
    g: usize,
    edges: &[(u32, u32)],
    edge_start: &[u32],
    state: &mut [u8],
    deps: &mut [Vec<u32>],
    cycle: &dyn Fn(usize) -> ImportError,
) -> Result<(), ImportError> {
    match state[g] {
        2 => return Ok(()),
        1 => return Err(cycle(g)),
        _ => {}
    }
    state[g] = 1;
    let mine = &edges[edge_start[g] as usize..edge_start[g + 1] as usize];
    let mut d: Vec<u32> = mine
        .iter()
        .filter(|e| e.1 & IMMEDIATE == 0)
        .map(|e| e.1)
        .collect();
    for e in mine.iter().filter(|e| e.1 & IMMEDIATE != 0) {
        let j = (e.1 & !IMMEDIATE) as usize;
        resolve(j, edges, edge_start, state, deps, cycle)?;
        d.extend_from_slice(&deps[j]);
    }
    deps[g] = d;
    state[g] = 2;
    Ok(())
}

/// A set of integers below `n` with O(log64 n) insert and remove-minimum: a bitmap with one
/// summary bitmap per level (a bit per non-empty word of the level below).
struct MinSet {
    levels: Vec<Vec<u64>>,
}

impl MinSet {
    fn new(n: usize) -> MinSet {
        let mut levels = Vec::new();
        let mut len = n.max(1);
        loop {
            let words = len.div_ceil(64);
            levels.push(vec![0u64; words]);
            if words == 1 {
                break;
            }
            len = words;
        }
        MinSet { levels }
    }
    fn insert(&mut self, x: u32) {
        let mut i = x as usize;
        for level in &mut self.levels {
            level[i / 64] |= 1 << (i % 64);
            i /= 64;
        }
    }
    fn pop_min(&mut self) -> Option<u32> {
        let top = self.levels.len() - 1;
        if self.levels[top][0] == 0 {
            return None;
        }
        let mut i = 0usize;
        for l in (0..=top).rev() {
            i = i * 64 + self.levels[l][i].trailing_zeros() as usize;
        }
        let x = i;
        // Clear the bit, and each summary bit whose word became empty.
        for level in &mut self.levels {
            level[i / 64] &= !(1 << (i % 64));
            if level[i / 64] != 0 {
                break;
            }
            i /= 64;
        }
        Some(x as u32)
    }
}

/// Kahn's algorithm, smallest op id first; `Err` lists the operations on or behind a cycle.
fn topological_order(start: &[u32], deps: &[u32], n: usize) -> Result<Vec<u32>, Vec<u32>> {
    let mut indeg = vec![0u32; n];
    let mut out_start = vec![0u32; n + 1];
    for g in 0..n {
        indeg[g] = start[g + 1] - start[g];
        for &d in &deps[start[g] as usize..start[g + 1] as usize] {
            out_start[d as usize + 1] += 1;
        }
    }
    for i in 0..n {
        out_start[i + 1] += out_start[i];
    }
    let mut fill = out_start.clone();
    let mut out = vec![0u32; deps.len()];
    for g in 0..n {
        for &d in &deps[start[g] as usize..start[g + 1] as usize] {
            out[fill[d as usize] as usize] = g as u32;
            fill[d as usize] += 1;
        }
    }
    drop(fill);
    // Ready operations, smallest first.
    let mut ready = MinSet::new(n);
    let mut order = Vec::with_capacity(n);
    for (g, &d) in indeg.iter().enumerate() {
        if d == 0 {
            ready.insert(g as u32);
        }
    }
    while let Some(g) = ready.pop_min() {
        order.push(g);
        for &x in &out[out_start[g as usize] as usize..out_start[g as usize + 1] as usize] {
            indeg[x as usize] -= 1;
            if indeg[x as usize] == 0 {
                ready.insert(x);
            }
        }
    }
    if order.len() < n {
        return Err((0..n as u32).filter(|&g| indeg[g as usize] > 0).collect());
    }
    Ok(order)
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
