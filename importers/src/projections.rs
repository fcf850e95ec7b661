//! Charm++ Projections event logs (`<prog>.sts` + `<prog>.<pe>.log`) to execution blocks.
//!
//! Accepted versions: **3.0** (the `VERSION 3.0` logs of older Charm++, fields below) and
//! **11.0** (today's layout); any other `VERSION` is refused. Input: the `.sts` file; the logs
//! are `<stem>.<pe>.log` next to it, one per `PROCESSORS`, or `<stem>.<pe>.log.gz` as Charm++
//! writes them when built with zlib (read transparently; a plain `.log` is preferred when both
//! exist; at most [`crate::error::MAX_GZIP_TEXT_BYTES`] of text per log).
//!
//! Records used (type code, then fields; times in microseconds):
//!
//! | record | 3.0 fields | 11.0 fields |
//! |---|---|---|
//! | 1 `CREATION` | `mIdx eIdx time event pe msglen` | `... msglen recvTime` |
//! | 20 `CREATION_BCAST`, 21 `CREATION_MULTICAST` | - | `... recvTime numPEs [pes...]` |
//! | 2 `BEGIN_PROCESSING` | `mIdx eIdx time event srcPe msglen` | `... msglen recvTime objId... cpuTime` |
//! | 3 `END_PROCESSING` | `mIdx eIdx time event pe msglen` | `... msglen cpuTime` |
//!
//! Every other record (idle, pack/unpack, computation begin/end, user events) is checked for
//! its type code and otherwise skipped: idleness is implied by the replay.
//!
//! Mapping:
//!
//! | Projections | whatif |
//! |---|---|
//! | PE `p` | one object `pe<p>` recorded on PE `p` (the logs do not identify migratable objects in 3.0; 11.0 object ids are not used yet) |
//! | `BEGIN_PROCESSING` .. `END_PROCESSING` | a block of entry `Chare::entry` (from the `.sts`), duration end - begin, `recorded_start` = begin |
//! | `CREATION` inside a block | a send at offset `time - begin` of `msglen` bytes, label (pe, event) |
//! | `CREATION` outside any block | a send of a `(runtime)` block spanning each run of such records |
//! | `BEGIN_PROCESSING` `(srcPe, event)` | trigger = the creation with that pe and event number; `recorded_arrival` = `recvTime` (11.0, when above 0) or the begin time |
//!
//! A message consumed by several blocks (broadcasts) is addressed to a group of their objects.
//! When one PE consumes the same message more than once (a `[threaded]` entry whose thread
//! suspends and resumes: Charm++ logs each resumption as a new `BEGIN_PROCESSING` of the same
//! message), only the first consumption keeps it as trigger and each later piece depends on the
//! previous one; unmatched `END_PROCESSING` records and triggers whose creation is not in the
//! logs are dropped. All such adjustments are counted in the import notes.

use crate::error::read_text;
use crate::{ImportError, Imported};
use sim_core::{SimDuration, SimTime};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use trace::{Block, Destination, EntryId, MsgId, ObjectId, PeId, Send, TraceBuilder, TraceMeta};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Version {
    V3,
    V11,
}

struct Sts {
    version: Version,
    pes: u32,
    /// ep -> display name.
    entries: BTreeMap<i64, String>,
}

fn parse_sts(text: &str, file: &str) -> Result<Sts, ImportError> {
    let mut version = None;
    let mut pes = None;
    let mut chares: HashMap<i64, String> = HashMap::new();
    let mut eps: Vec<(i64, String, i64)> = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let line = i as u64 + 1;
        let t: Vec<&str> = l.split_whitespace().collect();
        let err = |exp: &str| ImportError::syntax(file, line, exp, format!("`{l}`"));
        match t.first().copied() {
            Some("VERSION") => {
                version = Some(match t.get(1).copied() {
                    Some("3.0") => Version::V3,
                    Some("11.0") => Version::V11,
                    other => {
                        return Err(ImportError::Unsupported {
                            file: format!("{file}:{line}"),
                            what: format!(
                                "Projections log version {}; accepted versions are 3.0 and 11.0",
                                other.unwrap_or("(none)")
                            ),
                        });
                    }
                })
            }
            Some("PROCESSORS") => {
                pes = Some(
                    t.get(1)
                        .and_then(|v| v.parse::<u32>().ok())
                        .filter(|&n| n > 0 && n < 1 << 24)
                        .ok_or_else(|| err("`PROCESSORS <n>` with n >= 1"))?,
                )
            }
            Some("CHARE") => {
                let id = t
                    .get(1)
                    .and_then(|v| v.parse::<i64>().ok())
                    .ok_or_else(|| err("`CHARE <id> <name>`"))?;
                // 11.0: `CHARE <id> "<name>" <ndims>`; 3.0: `CHARE <id> <name>`.
                let mut rest = &t[2.min(t.len())..];
                if version == Some(Version::V11) && rest.len() > 1 {
                    rest = &rest[..rest.len() - 1];
                }
                let name = unquote(rest);
                chares.insert(id, name);
            }
            Some("ENTRY") => {
                if t.len() < 6 || t[1] != "CHARE" {
                    return Err(err("`ENTRY CHARE <ep> <name> <chare> <msg>`"));
                }
                let ep = t[2]
                    .parse::<i64>()
                    .map_err(|_| err("`ENTRY CHARE <ep> ...` with a numeric ep"))?;
                let chare = t[t.len() - 2].parse::<i64>().map_err(|_| {
                    err("`ENTRY CHARE <ep> <name> <chare> <msg>` with a numeric chare")
                })?;
                let name = unquote(&t[3..t.len() - 2]);
                eps.push((ep, name, chare));
            }
            _ => {}
        }
    }
    let version = version
        .ok_or_else(|| ImportError::syntax(file, 1, "a `VERSION` line", "none in the file"))?;
    let pes = pes.ok_or_else(|| {
        ImportError::syntax(file, 1, "a `PROCESSORS <n>` line", "none in the file")
    })?;
    let entries = eps
        .into_iter()
        .map(|(ep, name, chare)| {
            let short = name.split('(').next().unwrap_or(&name).trim().to_string();
            let full = match chares.get(&chare) {
                Some(c) => format!("{c}::{short}"),
                None => short,
            };
            (ep, full)
        })
        .collect();
    Ok(Sts {
        version,
        pes,
        entries,
    })
}

/// Joins a name's tokens and drops surrounding quotes (11.0 quotes names, 3.0 does not).
fn unquote(t: &[&str]) -> String {
    t.join(" ").trim_matches('"').to_string()
}

struct Creation {
    block: usize,
    offset_ps: u64,
    bytes: u64,
}

struct Blk {
    pe: u32,
    ep: i64,
    begin_ps: u64,
    end_ps: u64,
    trigger: Option<(u32, i64)>,
    arrival_ps: Option<u64>,
    sends: Vec<(u32, i64)>,
}

/// The per-PE logs `<stem>.<pe>.log` (or `.log.gz` when only that exists) next to the `.sts`
/// file. Produced one at a time: a `.sts` may claim millions of PEs, and the first missing log
/// stops the import before the claim costs memory.
fn log_paths(sts_path: &Path, pes: u32) -> impl Iterator<Item = PathBuf> {
    let name = sts_path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".sts").unwrap_or(&name).to_string();
    let dir = sts_path.parent().unwrap_or(Path::new(".")).to_path_buf();
    (0..pes).map(move |pe| {
        let plain = dir.join(format!("{stem}.{pe}.log"));
        let gz = dir.join(format!("{stem}.{pe}.log.gz"));
        if plain.exists() || !gz.exists() {
            plain
        } else {
            gz
        }
    })
}

/// A log's text, decompressed when it is a `.gz`.
fn read_log(path: &Path) -> Result<String, ImportError> {
    if path.extension().is_some_and(|e| e == "gz") {
        crate::error::read_gzip_text(path)
    } else {
        read_text(path)
    }
}

/// Every file a log set consists of, the `.sts` first.
pub(crate) fn files(sts_path: &Path) -> Result<Vec<PathBuf>, ImportError> {
    let sts = parse_sts(&read_text(sts_path)?, &sts_path.display().to_string())?;
    let mut v = vec![sts_path.to_path_buf()];
    let name = sts_path.display().to_string();
    for (pe, path) in log_paths(sts_path, sts.pes).enumerate() {
        crate::error::must_exist(&path).map_err(|e| missing_log(e, &name, sts.pes, pe as u32))?;
        v.push(path);
    }
    Ok(v)
}

/// A missing per-PE log, said in terms of the `.sts` that asks for it.
fn missing_log(e: ImportError, sts: &str, pes: u32, pe: u32) -> ImportError {
    match e {
        ImportError::Io { path, source } if source.kind() == std::io::ErrorKind::NotFound => {
            ImportError::inconsistent(
                sts,
                format!(
                    "PROCESSORS {pes} asks for one log per PE, but the log of PE {pe} ({} or .gz) does not exist",
                    path.display()
                ),
            )
        }
        other => other,
    }
}

/// Imports a Projections log set given its `.sts` file.
pub fn import(sts_path: &Path) -> Result<Imported, ImportError> {
    let sts_name = sts_path.display().to_string();
    let sts = parse_sts(&read_text(sts_path)?, &sts_name)?;
    let stem = sts_path
        .file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let us = |v: f64| (v * 1e6).round() as u64;

    let mut blocks: Vec<Blk> = Vec::new();
    let mut creations: HashMap<(u32, i64), Creation> = HashMap::new();
    let mut files = Vec::new();
    let (mut stray_ends, mut unterminated, mut dup_events) = (0usize, 0usize, 0usize);
    let (mut bad_src, mut worst_src) = (0usize, 0i64);
    for (pe, path) in log_paths(sts_path, sts.pes).enumerate() {
        let pe = pe as u32;
        let file = path.display().to_string();
        let text = read_log(&path).map_err(|e| missing_log(e, &sts_name, sts.pes, pe))?;
        let mut open: Option<usize> = None;
        let mut runtime: Option<usize> = None;
        let mut records = 0usize;
        for (i, l) in text.lines().enumerate() {
            let line = i as u64 + 1;
            let t: Vec<&str> = l.split_whitespace().collect();
            if t.is_empty() {
                continue;
            }
            if t[0] == "PROJECTIONS-RECORD" {
                continue;
            }
            records += 1;
            let num = |k: usize, what: &str| -> Result<f64, ImportError> {
                let v = t.get(k).ok_or_else(|| {
                    ImportError::syntax(
                        &file,
                        line,
                        format!("{what} (field {})", k + 1),
                        format!("end of line in `{l}`"),
                    )
                })?;
                v.parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && *x > -1e12 && *x < 1.8e13)
                    .ok_or_else(|| {
                        ImportError::syntax(
                            &file,
                            line,
                            format!("{what} (a number)"),
                            format!("`{v}`"),
                        )
                    })
            };
            let code = num(0, "a record type")? as i64;
            match code {
                1 | 20 | 21 => {
                    let time = num(3, "time")?;
                    let event = num(4, "event number")? as i64;
                    let bytes = num(6, "message length")?.max(0.0) as u64;
                    if sts.version == Version::V11 {
                        num(7, "receive time")?;
                    }
                    let at = us(time.max(0.0));
                    let b = match open {
                        Some(b) => {
                            runtime = None;
                            b
                        }
                        None => match runtime {
                            Some(b) => {
                                blocks[b].end_ps = blocks[b].end_ps.max(at);
                                b
                            }
                            None => {
                                blocks.push(Blk {
                                    pe,
                                    ep: i64::MIN,
                                    begin_ps: at,
                                    end_ps: at,
                                    trigger: None,
                                    arrival_ps: None,
                                    sends: Vec::new(),
                                });
                                runtime = Some(blocks.len() - 1);
                                blocks.len() - 1
                            }
                        },
                    };
                    let offset_ps = at.saturating_sub(blocks[b].begin_ps);
                    match creations.entry((pe, event)) {
                        std::collections::hash_map::Entry::Occupied(_) => dup_events += 1,
                        std::collections::hash_map::Entry::Vacant(slot) => {
                            slot.insert(Creation {
                                block: b,
                                offset_ps,
                                bytes,
                            });
                            blocks[b].sends.push((pe, event));
                        }
                    }
                }
                2 => {
                    let ep = num(2, "entry point")? as i64;
                    let time = num(3, "time")?;
                    let event = num(4, "event number")? as i64;
                    let src = num(5, "source PE")? as i64;
                    num(6, "message length")?;
                    // 11.0 logs write 0 when the receive time was not recorded (Charm++ 7
                    // does so for every message): the begin time stands in, as in 3.0.
                    let arrival = match sts.version {
                        Version::V11 => Some(num(7, "receive time")?).filter(|r| *r > 0.0),
                        Version::V3 => None,
                    }
                    .unwrap_or(time);
                    if let Some(b) = open.take() {
                        unterminated += 1;
                        blocks[b].end_ps = us(time.max(0.0)).max(blocks[b].begin_ps);
                    }
                    runtime = None;
                    let begin = us(time.max(0.0));
                    // -1: no sender (the runtime); a PE beyond PROCESSORS cannot have sent it.
                    if src >= sts.pes as i64 {
                        bad_src += 1;
                        worst_src = worst_src.max(src);
                    }
                    let trigger = (src >= 0 && src < sts.pes as i64).then_some((src as u32, event));
                    blocks.push(Blk {
                        pe,
                        ep,
                        begin_ps: begin,
                        end_ps: begin,
                        trigger,
                        arrival_ps: Some(us(arrival.max(0.0)).min(begin)),
                        sends: Vec::new(),
                    });
                    open = Some(blocks.len() - 1);
                }
                3 => {
                    let time = num(3, "time")?;
                    match open.take() {
                        Some(b) => blocks[b].end_ps = us(time.max(0.0)).max(blocks[b].begin_ps),
                        None => stray_ends += 1,
                    }
                }
                4..=19 | 22..=32 | 98..=100 => {}
                other => {
                    return Err(ImportError::syntax(
                        &file,
                        line,
                        "a Projections record type (1-32, 98-100)",
                        format!("{other}"),
                    ));
                }
            }
        }
        if open.is_some() {
            unterminated += 1;
        }
        files.push((file, records));
    }

    // Creation offsets may exceed a block's end when END was missing; stretch the block.
    for c in creations.values() {
        let b = &mut blocks[c.block];
        b.end_ps = b.end_ps.max(b.begin_ps + c.offset_ps);
    }
    // Consumers of each message; a repeated consumption on one PE is the same entry resumed
    // (a [threaded] entry's thread suspends and resumes under the same message): it loses the
    // trigger and continues the previous piece instead.
    let mut consumers: HashMap<(u32, i64), Vec<usize>> = HashMap::new();
    let mut dropped = 0usize;
    let mut dup_consumed = 0usize;
    for (i, b) in blocks.iter_mut().enumerate() {
        if let Some(key) = b.trigger {
            if !creations.contains_key(&key) {
                b.trigger = None;
                dropped += 1;
                continue;
            }
            consumers.entry(key).or_default().push(i);
        }
    }
    for list in consumers.values_mut() {
        let mut seen: Vec<u32> = Vec::new();
        list.retain(|&i| {
            let pe = blocks[i].pe;
            if seen.contains(&pe) {
                false
            } else {
                seen.push(pe);
                true
            }
        });
    }
    // Block index -> the earlier piece of the same message on the same PE it continues.
    let mut continues: HashMap<usize, usize> = HashMap::new();
    let mut last_piece: HashMap<(u32, (u32, i64)), usize> = HashMap::new();
    for (i, b) in blocks.iter_mut().enumerate() {
        if let Some(key) = b.trigger {
            if let Some(prev) = last_piece.insert((b.pe, key), i) {
                continues.insert(i, prev);
            }
            if !consumers[&key].contains(&i) {
                b.trigger = None;
                dup_consumed += 1;
            }
        }
    }

    let mut tb = TraceBuilder::new(TraceMeta {
        name: stem.clone(),
        generator: format!("whatif import projections {}", sts_path.display()),
        description: format!(
            "Projections logs (version {}) of {} PEs",
            if sts.version == Version::V3 {
                "3.0"
            } else {
                "11.0"
            },
            sts.pes
        ),
        recorded_pes: sts.pes,
        net: None,
        seed: None,
        cpu_scale: None,
        sequential_objects: false,
    });
    for pe in 0..sts.pes {
        tb.object(format!("pe{pe}"), PeId(pe));
    }
    let mut entry_ids: HashMap<i64, EntryId> = HashMap::new();
    let label = |key: (u32, i64)| MsgId(((key.0 as u64) << 32) | (key.1 as u32 as u64));
    let mut recorded_end = 0u64;
    for b in &blocks {
        if let std::collections::hash_map::Entry::Vacant(slot) = entry_ids.entry(b.ep) {
            let name = if b.ep == i64::MIN {
                "(runtime)".to_string()
            } else {
                sts.entries
                    .get(&b.ep)
                    .cloned()
                    .unwrap_or_else(|| format!("ep{}", b.ep))
            };
            slot.insert(tb.entry(name));
        }
    }
    let mut sends = Vec::new();
    let mut ids: Vec<trace::BlockId> = Vec::with_capacity(blocks.len());
    for (i, b) in blocks.iter().enumerate() {
        sends.clear();
        for key in &b.sends {
            let c = &creations[key];
            let cons = consumers.get(key).map(Vec::as_slice).unwrap_or(&[]);
            let dest = match cons {
                [] => Destination::Object(ObjectId(key.0)),
                [one] => Destination::Object(ObjectId(blocks[*one].pe)),
                many => {
                    let g = tb.group(many.iter().map(|&j| ObjectId(blocks[j].pe)).collect());
                    Destination::Group(g)
                }
            };
            let entry = cons
                .first()
                .map_or(entry_ids[&b.ep], |&j| entry_ids[&blocks[j].ep]);
            sends.push(Send {
                msg: label(*key),
                offset: SimDuration::from_ps(c.offset_ps),
                dest,
                bytes: c.bytes,
                entry,
            });
        }
        recorded_end = recorded_end.max(b.end_ps);
        let mut blk = Block::new(
            ObjectId(b.pe),
            entry_ids[&b.ep],
            SimDuration::from_ps(b.end_ps - b.begin_ps),
        );
        blk.trigger = b.trigger.map(label);
        blk.recorded_start = Some(SimTime::from_ps(b.begin_ps));
        blk.recorded_arrival = b.trigger.and(b.arrival_ps).map(SimTime::from_ps);
        let deps: &[trace::BlockId] = match continues.get(&i) {
            Some(&prev) => std::slice::from_ref(&ids[prev]),
            None => &[],
        };
        let id = tb.block(blk, deps, &sends);
        ids.push(id);
    }
    // Clock skew: messages that arrive before they were created.
    let (mut skewed, mut worst) = (0usize, 0u64);
    for b in &blocks {
        if let (Some(key), Some(arr)) = (b.trigger, b.arrival_ps) {
            let c = &creations[&key];
            let sent = blocks[c.block].begin_ps + c.offset_ps;
            if arr < sent {
                skewed += 1;
                worst = worst.max(sent - arr);
            }
        }
    }
    let trace = tb.finish().map_err(|source| ImportError::Invalid {
        file: sts_name.clone(),
        source,
    })?;
    let mut notes: Vec<String> = files
        .iter()
        .map(|(f, n)| format!("{f}: {n} records"))
        .collect();
    notes.push(format!(
        "{} blocks, {} messages; version {}",
        trace.num_blocks(),
        trace.num_sends(),
        if sts.version == Version::V3 {
            "3.0"
        } else {
            "11.0"
        }
    ));
    if skewed > 0 {
        notes.push(format!(
            "{skewed} messages begin processing before their creation time (clock skew between PEs, up to {}); recorded delays floor them at 0",
            SimDuration::from_ps(worst)
        ));
    }
    if bad_src > 0 {
        notes.push(format!(
            "{bad_src} blocks name a source PE beyond the {} PEs of the .sts (up to PE {worst_src}); their triggers are dropped and they start when their PE reaches them",
            sts.pes
        ));
    }
    for (n, what) in [
        (dropped, "triggers name a creation not in the logs; dropped"),
        (
            dup_consumed,
            "repeated consumptions of one message on one PE (a threaded entry resumed); each continues the previous piece",
        ),
        (
            dup_events,
            "creations reuse an event number already seen on their PE; the later ones are ignored",
        ),
        (
            stray_ends,
            "END_PROCESSING records without a BEGIN_PROCESSING; ignored",
        ),
        (
            unterminated,
            "blocks without END_PROCESSING; closed at the next BEGIN_PROCESSING or their last send",
        ),
    ] {
        if n > 0 {
            notes.push(format!("{n} {what}"));
        }
    }
    Ok(Imported {
        trace,
        notes,
        recorded_end: Some(SimTime::from_ps(recorded_end)),
    })
}
