//! BigSim `bgTrace` (log version 6) to execution blocks.
//!
//! Mapping (one BigSim log = one block; see [`crate::bgtrace_raw`] for the byte layout):
//!
//! | BigSim | whatif |
//! |---|---|
//! | target processor (VP) `p` | recorded PE `p`; `recorded_pes` = `totalWorkerProcs` |
//! | distinct non-null `objId` on VP `p` | one object `vp<p>:obj(a,b,c,d)`; logs with a null `objId` (all -1) run on the VP's first object (a `vp<p>` object if it has none) |
//! | `BgTimeLog` | a block: entry = the log's `name`, duration = `execTime`, `recorded_start` = `startTime`, `recorded_arrival` = `recvTime` (when it has a trigger) |
//! | `msgId (pe, msgID)` | trigger label `pe << 32 \| msgID` |
//! | `backwardDeps` | dependencies (same VP) |
//! | `BgMsgEntry` | a send at offset `sendTime - startTime` (clamped into the block), `msgsize` bytes, label `sender VP << 32 \| msgID`; `dstNode >= 0` goes to the object of the block that consumes it on that VP, `-1` to all objects, `<= -100` to all but VP `-100-dstNode`'s first object |
//!
//! Times are seconds in the file and are rounded to the nearest picosecond. A trigger that no
//! log sends is dropped (the block then needs only its dependencies) and counted in the
//! import notes.

use crate::bgtrace_raw::{BgSummary, BgTimeline, parse_pe_file, parse_summary};
use crate::error::read_file;
use crate::{ImportError, Imported};
use sim_core::{SimDuration, SimTime};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use trace::{
    Block, BlockId, Destination, EntryId, MsgId, ObjectId, PeId, Send, TraceBuilder, TraceMeta,
};

/// Per-file counts, as the importer found them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BgFileCounts {
    /// File name.
    pub file: String,
    /// Timelines (target processors) in the file.
    pub timelines: usize,
    /// Logs (execution blocks).
    pub blocks: usize,
    /// Message entries.
    pub messages: usize,
    /// Point-to-point entries (`dstNode >= 0`).
    pub p2p: usize,
    /// Broadcast-to-all entries (`dstNode == -1`).
    pub broadcast: usize,
    /// Broadcast-except entries (`dstNode <= -100`).
    pub broadcast_except: usize,
}

/// The summary file of a log set given as the folder or the `bgTrace` file itself.
fn summary_path(input: &Path) -> PathBuf {
    if input.is_dir() {
        input.join("bgTrace")
    } else {
        input.to_path_buf()
    }
}

/// The per-emulating-PE files `<summary name>0..N-1` next to the summary.
/// Produced one at a time: a summary may claim millions of emulating PEs, and the first
/// missing file stops the import before the claim costs memory.
fn pe_file_paths(sum_path: &Path, s: &BgSummary) -> impl Iterator<Item = PathBuf> {
    let dir = sum_path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let stem = sum_path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "bgTrace".into());
    (0..s.emulating_pes).map(move |k| dir.join(format!("{stem}{k}")))
}

/// Every file a log set consists of, summary first.
pub(crate) fn files(input: &Path) -> Result<Vec<PathBuf>, ImportError> {
    let sum_path = summary_path(input);
    let s = parse_summary(&read_file(&sum_path)?, &sum_path.display().to_string())?;
    let mut v = vec![sum_path.clone()];
    let name = sum_path.display().to_string();
    for (k, path) in pe_file_paths(&sum_path, &s).enumerate() {
        crate::error::must_exist(&path).map_err(|e| missing_pe_file(e, &name, &s, k))?;
        v.push(path);
    }
    Ok(v)
}

/// A missing per-PE file, said in terms of the summary that asks for it.
fn missing_pe_file(e: ImportError, summary: &str, s: &BgSummary, k: usize) -> ImportError {
    match e {
        ImportError::Io { path, source } if source.kind() == std::io::ErrorKind::NotFound => {
            ImportError::inconsistent(
                summary,
                format!(
                    "the summary names {} emulating PEs, one file each, but the file of PE {k} ({}) does not exist",
                    s.emulating_pes,
                    path.display()
                ),
            )
        }
        other => other,
    }
}

fn secs_to_ps(x: f64, what: &str, file: &str, offset: u64) -> Result<u64, ImportError> {
    let ps = (x * 1e12).round();
    if !ps.is_finite() || !(0.0..=1.8e19).contains(&ps) {
        return Err(ImportError::Binary {
            file: file.to_string(),
            offset,
            expected: format!("{what}: a time in seconds between 0 and 1.8e7"),
            found: format!("{x}"),
        });
    }
    Ok(ps as u64)
}

/// Reads a whole log set: the summary and every per-emulating-PE file, with their counts.
pub fn read_set(
    input: &Path,
) -> Result<(BgSummary, Vec<BgTimeline>, Vec<BgFileCounts>), ImportError> {
    read_set_limited(input, u64::MAX)
}

/// [`read_set`], refusing a log set whose files (read whole, parsed into timelines of about
/// twice their size) would need more than `max_memory_bytes`.
pub fn read_set_limited(
    input: &Path,
    max_memory_bytes: u64,
) -> Result<(BgSummary, Vec<BgTimeline>, Vec<BgFileCounts>), ImportError> {
    let mut budget = crate::error::ReadBudget::new(max_memory_bytes, 3);
    let sum_path = summary_path(input);
    let sum_name = sum_path.display().to_string();
    let s = parse_summary(&budget.read(&sum_path)?, &sum_name)?;
    let mut found: Vec<BgTimeline> = Vec::new();
    let mut counts = Vec::new();
    for (k, path) in pe_file_paths(&sum_path, &s).enumerate() {
        let k = k as u32;
        let name = path.display().to_string();
        let bytes = budget
            .read(&path)
            .map_err(|e| missing_pe_file(e, &sum_path.display().to_string(), &s, k as usize))?;
        let tls = parse_pe_file(&bytes, &name, k, &s)?;
        let mut c = BgFileCounts {
            file: name,
            timelines: tls.len(),
            ..Default::default()
        };
        for t in tls {
            c.blocks += t.logs.len();
            for m in t.logs.iter().flat_map(|l| &l.msgs) {
                c.messages += 1;
                match m.dst_node {
                    d if d >= 0 => c.p2p += 1,
                    -1 => c.broadcast += 1,
                    _ => c.broadcast_except += 1,
                }
            }
            found.push(t);
        }
        counts.push(c);
    }
    // Each file holds its cyclic share exactly (checked per file), so sorting by processor
    // gives every processor once.
    found.sort_by_key(|t| t.pe);
    if let Some((p, _)) = found.iter().enumerate().find(|(p, t)| t.pe != *p as u32) {
        return Err(ImportError::inconsistent(
            &sum_name,
            format!("no file holds target processor {p}"),
        ));
    }
    let timelines = found;
    Ok((s, timelines, counts))
}

/// Imports a BigSim log set (the folder, or its summary file `bgTrace`).
pub fn import(input: &Path) -> Result<Imported, ImportError> {
    import_limited(input, u64::MAX)
}

/// [`import`] within `max_memory_bytes` for the files read whole ([`read_set_limited`]).
pub fn import_limited(input: &Path, max_memory_bytes: u64) -> Result<Imported, ImportError> {
    let (s, tls, counts) = read_set_limited(input, max_memory_bytes)?;
    let name = summary_path(input).display().to_string();
    let file_of = |pe: u32| counts[(pe % s.emulating_pes) as usize].file.clone();
    let mut b = TraceBuilder::new(TraceMeta {
        name: input
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "bgtrace".into()),
        generator: format!("whatif import bgtrace {}", input.display()),
        description: format!(
            "BigSim log v{} of {} target processors on a {}x{}x{} machine, emulated on {} PEs",
            s.version, s.total_procs, s.shape[0], s.shape[1], s.shape[2], s.emulating_pes
        ),
        recorded_pes: s.total_procs,
        net: Some("recorded".into()),
        seed: None,
        cpu_scale: None,
        sequential_objects: false,
    });

    // Objects: distinct non-null objIds per VP; the first is the VP's home object.
    let mut obj_of: HashMap<(u32, [i32; 4]), ObjectId> = HashMap::new();
    let mut home: Vec<ObjectId> = Vec::with_capacity(tls.len());
    for t in &tls {
        let mut first = None;
        for l in &t.logs {
            if l.obj_id == [-1; 4] || obj_of.contains_key(&(t.pe, l.obj_id)) {
                continue;
            }
            let [a, c, d, e] = l.obj_id;
            let o = b.object(format!("vp{}:obj({a},{c},{d},{e})", t.pe), PeId(t.pe));
            obj_of.insert((t.pe, l.obj_id), o);
            first.get_or_insert(o);
        }
        home.push(first.unwrap_or_else(|| b.object(format!("vp{}", t.pe), PeId(t.pe))));
    }
    let object = |pe: u32, id: [i32; 4]| -> ObjectId {
        if id == [-1; 4] {
            home[pe as usize]
        } else {
            obj_of[&(pe, id)]
        }
    };

    let mut entries: HashMap<String, EntryId> = HashMap::new();
    let mut entry_ids = Vec::new();
    let mut block_obj = Vec::new();
    for t in &tls {
        for l in &t.logs {
            block_obj.push(object(t.pe, l.obj_id));
            let e = match entries.get(&l.name) {
                Some(&e) => e,
                None => {
                    let e = b.entry(if l.name.is_empty() {
                        "(unnamed)"
                    } else {
                        &l.name
                    });
                    entries.insert(l.name.clone(), e);
                    e
                }
            };
            entry_ids.push(e);
        }
    }
    let label = |pe: i32, id: i32| MsgId(((pe as u32 as u64) << 32) | id as u32 as u64);

    // Consumers of each label: (VP, block index).
    let mut base = Vec::with_capacity(tls.len());
    let mut consumers: HashMap<MsgId, Vec<(u32, usize)>> = HashMap::new();
    let mut n = 0usize;
    for t in &tls {
        base.push(n);
        for (i, l) in t.logs.iter().enumerate() {
            if l.src_pe >= 0 || l.msg_id >= 0 {
                consumers
                    .entry(label(l.src_pe, l.msg_id))
                    .or_default()
                    .push((t.pe, n + i));
            }
        }
        n += t.logs.len();
    }
    let mut sent: HashSet<MsgId> = HashSet::with_capacity(consumers.len());
    for t in &tls {
        for l in t.logs.iter() {
            for m in &l.msgs {
                sent.insert(label(t.pe as i32, m.msg_id));
            }
        }
    }
    let unknown_entry = b.entry("(unconsumed)");
    let total = s.total_procs as i64;
    let mut dropped = 0usize;
    let mut clamped = 0usize;
    let mut recorded_end = 0u64;
    let mut sends = Vec::new();
    let mut deps = Vec::new();
    for t in &tls {
        let file = file_of(t.pe);
        for (i, l) in t.logs.iter().enumerate() {
            let start = secs_to_ps(l.start_time, "BgTimeLog.startTime", &file, l.offset)?;
            let dur = secs_to_ps(l.exec_time, "BgTimeLog.execTime", &file, l.offset)?;
            recorded_end = recorded_end.max(start.saturating_add(dur));
            sends.clear();
            for m in &l.msgs {
                let lab = label(t.pe as i32, m.msg_id);
                let at = secs_to_ps(m.send_time, "BgMsgEntry.sendTime", &file, l.offset)?;
                let mut off = at.saturating_sub(start);
                if at < start || off > dur {
                    clamped += 1;
                    off = off.min(dur);
                }
                let cons = consumers.get(&lab).map(Vec::as_slice).unwrap_or(&[]);
                let dest = match m.dst_node as i64 {
                    d if d >= 0 && d < total => match cons.first() {
                        Some(&(vp, c)) => {
                            if vp as i64 != d {
                                return Err(ImportError::inconsistent(
                                    &file,
                                    format!(
                                        "message {} of VP {} goes to node {d} but is consumed on VP {vp} (log at offset {})",
                                        m.msg_id, t.pe, l.offset
                                    ),
                                ));
                            }
                            Destination::Object(block_obj[c])
                        }
                        None => Destination::Object(home[d as usize]),
                    },
                    -1 => Destination::All,
                    d if d <= -100 && -100 - d < total => {
                        Destination::AllExcept(home[(-100 - d) as usize])
                    }
                    d => {
                        return Err(ImportError::Binary {
                            file,
                            offset: l.offset,
                            expected: format!(
                                "dstNode in 0..{total}, -1 (broadcast) or -100-node (broadcast except)"
                            ),
                            found: format!("{d}"),
                        });
                    }
                };
                let entry = cons.first().map_or(unknown_entry, |&(_, c)| entry_ids[c]);
                sends.push(Send {
                    msg: lab,
                    offset: SimDuration::from_ps(off),
                    dest,
                    bytes: m.size.max(0) as u64,
                    entry,
                });
            }
            deps.clear();
            deps.extend(
                l.backward
                    .iter()
                    .map(|&d| BlockId((base[t.pe as usize] + d as usize) as u32)),
            );
            let mut trigger = None;
            let mut arrival = None;
            if l.src_pe >= 0 || l.msg_id >= 0 {
                let lab = label(l.src_pe, l.msg_id);
                if sent.contains(&lab) {
                    trigger = Some(lab);
                    if l.recv_time >= 0.0 {
                        arrival = Some(SimTime::from_ps(secs_to_ps(
                            l.recv_time,
                            "BgTimeLog.recvTime",
                            &file,
                            l.offset,
                        )?));
                    }
                } else {
                    dropped += 1;
                }
            }
            b.block(
                Block {
                    object: block_obj[base[t.pe as usize] + i],
                    entry: entry_ids[base[t.pe as usize] + i],
                    duration: SimDuration::from_ps(dur),
                    trigger,
                    iteration: None,
                    lb_sync: false,
                    network: false,
                    priority: 0,
                    recorded_start: Some(SimTime::from_ps(start)),
                    recorded_arrival: arrival,
                },
                &deps,
                &sends,
            );
        }
    }
    let trace = b.finish().map_err(|source| ImportError::Invalid {
        file: name.clone(),
        source,
    })?;
    let mut notes: Vec<String> = counts
        .iter()
        .map(|c| {
            format!(
                "{}: {} timelines, {} blocks, {} message entries ({} point-to-point, {} broadcast-except, {} broadcast)",
                c.file, c.timelines, c.blocks, c.messages, c.p2p, c.broadcast_except, c.broadcast
            )
        })
        .collect();
    notes.push(format!(
        "recorded end of the last block: {}",
        SimTime::from_ps(recorded_end)
    ));
    if dropped > 0 {
        notes.push(format!(
            "{dropped} triggers name a message no log sends; they were dropped"
        ));
    }
    if clamped > 0 {
        notes.push(format!(
            "{clamped} send times fell outside their block and were clamped into it"
        ));
    }
    Ok(Imported {
        trace,
        notes,
        recorded_end: Some(SimTime::from_ps(recorded_end)),
    })
}
