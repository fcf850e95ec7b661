//! Charm++ Projections event logs (`<prog>.sts` + `<prog>.<pe>.log`) to execution blocks.
//!
//! Accepted versions: **3.0** (the `VERSION 3.0` logs of older Charm++, fields below) and
//! **11.0** (today's layout, Charm++ 6.x to 8.x); any other `VERSION` is refused. Input: the
//! `.sts` file; the logs are `<stem>.<pe>.log` next to it, one per `PROCESSORS`, or
//! `<stem>.<pe>.log.gz` as Charm++ writes them when built with zlib (read transparently; a
//! plain `.log` is preferred when both exist; at most [`crate::error::MAX_GZIP_TEXT_BYTES`]
//! of text per log).
//!
//! Records used (type code, then fields; times in microseconds; Charm++ 8.0.1
//! `src/ck-perf/trace-projections.C`, `LogEntry::pup`):
//!
//! | record | 3.0 fields | 11.0 fields |
//! |---|---|---|
//! | 1 `CREATION` | `mIdx eIdx time event pe msglen` | `... msglen recvTime` |
//! | 20 `CREATION_BCAST`, 21 `CREATION_MULTICAST` | - | `... recvTime numPEs [pes...]` |
//! | 2 `BEGIN_PROCESSING` | `mIdx eIdx time event srcPe msglen` | `... msglen recvTime id[ndims or 4] cpuTime` |
//! | 3 `END_PROCESSING` | `mIdx eIdx time event pe msglen` | `... msglen cpuTime` |
//! | 30 `END_PHASE` | - | `phase time` |
//! | 16 `BEGIN_PACK`, 18 `BEGIN_UNPACK` | `time pe` | `time pe` |
//!
//! `ndims` is the dimension count of the entry's chare in the `.sts` (`CHARE <id> "<name>"
//! <ndims>`, -1 for anything but a chare array). Every other record (idle,
//! computation begin/end, user events) is checked for its type code and otherwise skipped:
//! idleness is implied by the replay.
//!
//! Mapping (the rules and their sources: [`link`]):
//!
//! | Projections | whatif |
//! |---|---|
//! | chare array element (11.0: the index on its records) | one object `Chare[i,j,k]`, recorded on the PE it first ran on (in time), with its later moves; migratable |
//! | `BEGIN_PROCESSING` of an array entry with message type 24 (`ArrayBcastMsg`: the PE's array manager taking a broadcast; its index fields are zeros) | the PE's object `pe<p>` |
//! | groups, singleton chares, the runtime, every 3.0 piece | the PE's object `pe<p>`, pinned (a load balancer never moves it; another PE count places it as recorded, scaled) |
//! | a thread's resume (`dummy_thread_ep`, AMPI's `AMPI::rank`) woken by an array element's block | that element's object; AMPI's bound arrays `ampi`, `ampiParent`, `TCharm` share one object per index, `ampi[r]` (MPI rank r) |
//! | AMPI's point-to-point message handlers (`ampi::generic`, `genericSync`, `genericRdma`) | entries outside object order: a handler that does not wake its rank is a dependency of the later piece of the rank that used the message ([`link`]) |
//! | `BEGIN_PROCESSING` .. `END_PROCESSING` | a block of entry `Chare::entry` (from the `.sts`), starting at begin - lead (the runtime's work before it, [`runtime`]; 0 when no log has idle records on several PEs), duration end - start, `recorded_start` = start |
//! | every time on PE p's log | plus PE p's clock offset ([`clock`]), when messages between PEs seem to arrive before their creation |
//! | `CREATION` inside a block | a send at offset `time - begin` of `msglen` bytes, label (pe, event) |
//! | `CREATION` outside any block | a send of a `(runtime)` block spanning each run of such records |
//! | `BEGIN_UNPACK` outside any block and not followed by a `BEGIN_PROCESSING` | a `(runtime)` block: the handler of a message to an untraced (`[notrace]`) entry, up to the next record not its own; triggered by a send inferred from a `BEGIN_PACK` on another PE, or after the piece on its PE that sent it ([`untraced`]) |
//! | `BEGIN_PROCESSING` `(srcPe, event)` | trigger = its creation ([`link`]: same PE and entry, else an array broadcast's creation on another PE, else the runtime's forwarding); `recorded_arrival` = `recvTime` (11.0, when above 0) or the begin time |
//! | SDAG `serial` / `SDAG_RTS` (event -1) | depends on the piece before it on its PE (the invocation it runs in) and, for a `when` that found its message buffered, on that message's delivery |
//! | `END_PHASE` (each load-balancing step) | iterations = phases; each element's last block of a phase is its `lb_sync` point; the piece it falls in is split there (`link::Tail`) |
//!
//! A message consumed by several objects (broadcasts) is addressed to a group of them. When
//! one object consumes the same message more than once (a `[threaded]` entry resumed, or an
//! entry resumed after a nested one), only the first consumption keeps it as trigger and each
//! later piece depends on the previous one. Every adjustment is counted in the import notes.

mod clock;
mod link;
mod log;
mod runtime;
mod sts;
mod untraced;

use crate::error::read_text;
use crate::{ImportError, Imported};
use link::Obj;
use sim_core::{SimDuration, SimTime};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use sts::parse_sts;
use trace::{Block, Destination, EntryId, MsgId, ObjectId, PeId, Send, TraceBuilder, TraceMeta};

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

/// A log's text, decompressed when it is a `.gz`, counted against the import's budget.
fn read_log(path: &Path, budget: &mut crate::error::ReadBudget) -> Result<String, ImportError> {
    if path.extension().is_some_and(|e| e == "gz") {
        budget.read_gzip_text(path)
    } else {
        budget.read_text(path)
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
    import_limited(sts_path, u64::MAX)
}

/// [`import`], refusing a log set whose text (each log read whole, then parsed into records
/// of about its size) would need more than `max_memory_bytes`.
pub fn import_limited(sts_path: &Path, max_memory_bytes: u64) -> Result<Imported, ImportError> {
    let mut budget = crate::error::ReadBudget::new(max_memory_bytes, 2);
    let sts_name = sts_path.display().to_string();
    let sts = parse_sts(&budget.read_text(sts_path)?, &sts_name)?;
    let stem = sts_path
        .file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut logs = log::Logs::default();
    for (pe, path) in log_paths(sts_path, sts.pes).enumerate() {
        let pe = pe as u32;
        let text =
            read_log(&path, &mut budget).map_err(|e| missing_log(e, &sts_name, sts.pes, pe))?;
        logs.read(&sts, pe, path.display().to_string(), &text)?;
    }
    // The PEs' clocks, brought to PE 0's.
    let mut clock_offsets = clock::offsets(&logs, sts.pes, &[]);
    if let Some(by) = &clock_offsets {
        clock::shift(&mut logs, by);
    }
    // Creation offsets may exceed a block's end when END was missing; stretch the block.
    for c in &logs.creations {
        let p = &mut logs.pieces[c.piece];
        p.end_ps = p.end_ps.max(c.time_ps);
    }
    // Messages to untraced entries: a creation for each one received from another PE.
    let reduction_result = |ep| sts.entries.get(&ep).is_some_and(|e| e.takes_reduction);
    let mut pairs = untraced::pair(&logs, sts.pes == 1, true, reduction_result);
    // Multicast copies that seem to arrive before they were sent: their PEs' clocks differ
    // by more than the traced messages showed (or none went between them). Estimate again
    // with the copies' delays, and pair on the corrected times, each receipt with a send
    // not later than it.
    if pairs.later_copies > 0 {
        let copies = untraced::copy_delays(&logs, &pairs);
        if let Some(by) = clock::offsets(&logs, sts.pes, &copies) {
            clock::shift(&mut logs, &by);
            let before = clock_offsets.unwrap_or_else(|| vec![0; by.len()]);
            clock_offsets = Some(before.iter().zip(&by).map(|(a, b)| a + b).collect());
        }
        pairs = untraced::pair(&logs, sts.pes == 1, false, reduction_result);
    }
    for &(r, from) in &pairs.local {
        logs.pieces[r].after = Some(from);
    }
    for &(r, c) in &pairs.fanout {
        logs.pieces[r].cause = Some(c);
    }
    // A receipt with no send found gets a message from the latest traced piece before it
    // on its PE, sent at that piece's end: `--net recorded` keeps the recorded gap as the
    // message's delay, any other model delivers it locally.
    let followed = pairs
        .unpaired
        .iter()
        .map(|&(r, j)| (r, j, logs.pieces[j].end_ps))
        .collect::<Vec<_>>();
    for (k, (r, from, at)) in pairs.remote.iter().copied().chain(followed).enumerate() {
        let bytes = logs.pieces[r]
            .sends
            .first()
            .map_or(0, |&c| logs.creations[c].bytes);
        let c = logs.creations.len();
        logs.creations.push(log::Creation {
            pe: logs.pieces[from].pe,
            event: -2 - k as i64,
            ep: i64::MIN,
            time_ps: at,
            bytes,
            fanout: false,
            piece: from,
        });
        logs.pieces[from].sends.push(c);
        logs.pieces[r].cause = Some(c);
    }
    let mut linked = link::link(&sts, &logs);
    linked.stats.untraced_unpaired = logs
        .pieces
        .iter()
        .filter(|p| p.received && p.cause.is_none() && p.after.is_none())
        .count();
    linked.stats.received = logs.pieces.iter().filter(|p| p.received).count();
    linked.stats.untraced_followed = pairs.unpaired.len();
    // The runtime's work before each piece, taken into it.
    let leads = runtime::leads(&logs, &linked);
    let lead_of = |i: usize| leads.as_ref().map_or(0, |l| l.lead_ps[i]);
    let pieces = &logs.pieces;
    let creations = &logs.creations;

    let mut tb = TraceBuilder::new(TraceMeta {
        name: stem.clone(),
        generator: format!("whatif import projections {}", sts_path.display()),
        description: format!(
            "Projections logs (version {}) of {} PEs",
            sts.version.name(),
            sts.pes
        ),
        recorded_pes: sts.pes,
        net: None,
        seed: None,
        cpu_scale: None,
        // A chare runs one entry method at a time and its state carries over between them:
        // a block that acts on the last of several messages (kNeighbor's second reply starts
        // the next step) must not run before the blocks that consumed the others.
        sequential_objects: true,
    });
    // Blocks in recorded time order (PE, then log order, on ties): an object's blocks are
    // then in execution order even when it migrated, and every dependency comes earlier.
    let mut order: Vec<usize> = (0..pieces.len()).collect();
    order.sort_by_key(|&i| (pieces[i].begin_ps, pieces[i].pe, i));
    // Objects: the PEs' own objects, then array elements by array and index; an element is
    // recorded on the PE of its first piece in time (not in log order: the logs are read PE
    // by PE, and an element that migrated from PE 1 to PE 0 is in PE 0's log first).
    let mut first_pe: BTreeMap<Obj, (u32, bool)> = BTreeMap::new();
    for &i in &order {
        if let Obj::Elem(..) = linked.obj[i] {
            let e = first_pe
                .entry(linked.obj[i])
                .or_insert((pieces[i].pe, false));
            if e.0 != pieces[i].pe {
                e.1 = true;
            }
        }
    }
    let mut object_id: HashMap<Obj, ObjectId> = HashMap::new();
    for pe in 0..sts.pes {
        // What runs there (groups, the main chare, the runtime) cannot migrate.
        let o = tb.object(format!("pe{pe}"), PeId(pe));
        tb.pin_object(o);
        object_id.insert(Obj::Pe(pe), o);
    }
    let mut moved = 0usize;
    let mut arrays: BTreeMap<i64, usize> = BTreeMap::new();
    for (o, &(pe, migrated)) in &first_pe {
        let Obj::Elem(chare, ix) = o else { continue };
        moved += migrated as usize;
        *arrays.entry(*chare).or_default() += 1;
        let name = sts.chares.get(chare).map_or("array", |c| c.name.as_str());
        let idx: Vec<String> = ix.as_slice().iter().map(i32::to_string).collect();
        object_id.insert(
            *o,
            tb.object(format!("{name}[{}]", idx.join(",")), PeId(pe)),
        );
    }

    let mut entry_ids: HashMap<i64, EntryId> = HashMap::new();
    for p in pieces {
        if let std::collections::hash_map::Entry::Vacant(slot) = entry_ids.entry(p.ep) {
            let name = if p.runtime {
                "(runtime)".to_string()
            } else {
                sts.entry_name(p.ep)
            };
            let e = tb.entry(name);
            if link::is_ampi_point_to_point(&sts, p.ep) {
                tb.entry_outside_object_order(e);
            }
            slot.insert(e);
        }
    }
    // Consumers of each creation.
    let mut consumers: HashMap<usize, Vec<usize>> = HashMap::new();
    for (i, t) in linked.trigger.iter().enumerate() {
        if let Some(c) = t {
            consumers.entry(*c).or_default().push(i);
        }
    }
    let label = |c: usize| {
        let cr = &creations[c];
        MsgId(((cr.pe as u64) << 32) | (cr.event as u32 as u64))
    };
    let mut block_of = vec![trace::BlockId(u32::MAX); pieces.len()];
    let mut recorded_moves = 0usize;
    let mut sends = Vec::new();
    let mut deps = Vec::new();
    let mut recorded_end = 0u64;
    let mut tail_sends = Vec::new();
    for &i in &order {
        let p = &pieces[i];
        let start_ps = p.begin_ps - lead_of(i);
        // A piece split at its contribution ends there; its tail follows as a block.
        let tail = linked.tails.get(&i);
        let body_end_ps = tail.map_or(p.end_ps, |t| t.at_ps);
        sends.clear();
        tail_sends.clear();
        for &c in &p.sends {
            let cr = &creations[c];
            let cons = consumers.get(&c).map(Vec::as_slice).unwrap_or(&[]);
            let mut objs: Vec<ObjectId> = cons.iter().map(|&j| object_id[&linked.obj[j]]).collect();
            objs.sort_unstable();
            objs.dedup();
            let dest = match objs.as_slice() {
                [] => Destination::Object(object_id[&Obj::Pe(cr.pe)]),
                [one] => Destination::Object(*one),
                _ => Destination::Group(tb.group(objs)),
            };
            let entry = cons
                .first()
                .map_or(entry_ids[&p.ep], |&j| entry_ids[&pieces[j].ep]);
            let (list, from_ps, to_ps) = match tail {
                Some(t) if cr.time_ps >= t.at_ps => (&mut tail_sends, t.at_ps, p.end_ps),
                _ => (&mut sends, start_ps, body_end_ps),
            };
            list.push(Send {
                msg: label(c),
                offset: SimDuration::from_ps(cr.time_ps.min(to_ps).saturating_sub(from_ps)),
                dest,
                bytes: cr.bytes,
                entry,
            });
        }
        recorded_end = recorded_end.max(p.end_ps);
        let object = object_id[&linked.obj[i]];
        let mut blk = Block::new(
            object,
            entry_ids[&p.ep],
            SimDuration::from_ps(body_end_ps - start_ps),
        );
        blk.trigger = linked.trigger[i].map(label);
        blk.recorded_start = Some(SimTime::from_ps(start_ps));
        blk.recorded_arrival =
            linked.trigger[i].map(|_| SimTime::from_ps(p.arrival_ps.min(start_ps)));
        blk.iteration = linked.phased.then_some(p.phase);
        blk.lb_sync = linked.lb_sync[i] && tail.is_none();
        deps.clear();
        deps.extend(linked.deps[i].iter().map(|&j| block_of[j]));
        block_of[i] = tb.block(blk, &deps, &sends);
        // A migrated element: where each stay on a PE begins.
        if let Some(at) = first_pe.get_mut(&linked.obj[i]) {
            if at.0 != p.pe {
                at.0 = p.pe;
                tb.object_moved(object, block_of[i], PeId(p.pe));
                recorded_moves += 1;
            }
        }
        // The tail: from the contribution on, after the other local elements' latest
        // pieces. Whatever depends on the piece depends on its tail, which ends it.
        if let Some(t) = tail {
            let mut blk = Block::new(
                object,
                entry_ids[&p.ep],
                SimDuration::from_ps(p.end_ps - t.at_ps),
            );
            blk.recorded_start = Some(SimTime::from_ps(t.at_ps));
            blk.iteration = linked.phased.then_some(p.phase);
            blk.lb_sync = linked.lb_sync[i];
            deps.clear();
            deps.push(block_of[i]);
            deps.extend(t.deps.iter().map(|&j| block_of[j]));
            block_of[i] = tb.block(blk, &deps, &tail_sends);
        }
    }
    let trace = tb.finish().map_err(|source| ImportError::Invalid {
        file: sts_name.clone(),
        source,
    })?;
    let notes = notes(
        &sts,
        &logs,
        &linked.stats,
        &trace,
        &arrays,
        (moved, recorded_moves),
        (clock_offsets.as_deref(), leads.as_ref()),
    );
    Ok(Imported {
        trace,
        notes,
        recorded_end: Some(SimTime::from_ps(recorded_end)),
    })
}

/// What the import found and adjusted, in words.
fn notes(
    sts: &sts::Sts,
    logs: &log::Logs,
    st: &link::Stats,
    trace: &trace::Trace,
    arrays: &BTreeMap<i64, usize>,
    (moved, recorded_moves): (usize, usize),
    (clock_offsets, leads): (Option<&[u64]>, Option<&runtime::Leads>),
) -> Vec<String> {
    // One line per log up to this many; beyond, one line for all (no per-PE flood).
    const LISTED: usize = 8;
    let mut notes: Vec<String> = if logs.files.len() <= LISTED {
        logs.files
            .iter()
            .map(|(f, n)| format!("{f}: {n} records"))
            .collect()
    } else {
        let total: usize = logs.files.iter().map(|(_, n)| n).sum();
        let min = logs.files.iter().min_by_key(|(_, n)| *n).unwrap();
        let max = logs.files.iter().max_by_key(|(_, n)| *n).unwrap();
        vec![format!(
            "{} logs: {total} records, {} to {} per log ({} to {})",
            logs.files.len(),
            min.1,
            max.1,
            min.0,
            max.0
        )]
    };
    notes.push(format!(
        "{} blocks, {} messages; version {}",
        trace.num_blocks(),
        trace.num_sends(),
        sts.version.name()
    ));
    if !arrays.is_empty() {
        let list: Vec<String> = arrays
            .iter()
            .map(|(c, n)| {
                let name = sts.chares.get(c).map_or("?", |c| c.name.as_str());
                format!("{name} ({n})")
            })
            .collect();
        notes.push(format!(
            "objects: {} chare array elements ({}) and one object per PE for groups, singleton chares and the runtime (pinned: load balancers leave it where it is)",
            arrays.values().sum::<usize>(),
            list.join(", ")
        ));
    }
    if moved > 0 {
        notes.push(format!(
            "{moved} array elements ran on more than one PE (migrated by the load balancer): {recorded_moves} moves recorded in the trace; a replay with the recorded mapping runs each block on the PE it ran on (another mapping or --lb places each element once)"
        ));
    }
    if st.broadcast > 0 {
        notes.push(format!(
            "{} deliveries name their own PE as source but were created on another PE (array broadcasts and reductions' results, delivered by each PE's array manager): matched by event number and entry",
            st.broadcast
        ));
    }
    if st.forwarded > 0 {
        notes.push(format!(
            "{} deliveries run another entry than the one their message was created for (the runtime forwarding it, e.g. an array's creation to its elements' constructors)",
            st.forwarded
        ));
    }
    if st.sdag > 0 {
        notes.push(format!(
            "{} SDAG serial/SDAG_RTS blocks (event -1) continue the entry invocation before them on their PE; {} of them consume a message that waited in a `when` buffer and depend on its delivery",
            st.sdag, st.sdag_buffered
        ));
    }
    if st.collective > 0 {
        notes.push(format!(
            "{} blocks send for a reduction or a load-balancing step (or end a phase): each waits for the latest block of every array element on its PE (contributions and AtSync are local calls, not messages); {} of them reach that point (the send, or the phase's end) after they began and are split there: only the part from that point on waits, the element's own work before it does not",
            st.collective, st.collective_split
        ));
    }
    if st.received > 0 {
        notes.push(format!(
            "{} blocks handle a message to an untraced entry (`[notrace]`, e.g. CkMulticast's multicast and section reduction: an UNPACK outside any processing); their senders are inferred from the packs and the scheduler's order: {} sent on their own PE, {} from another PE (a broadcast's traced creation; a multicast's copy, the latest unpaired pack before it of a block that delivers the same entry; else the latest unpaired send from another PE before it), {} with no send found are sent by the latest traced block before them on their PE (on one PE, or a reduction's result: a section reduction's contribution on its own PE is not packed), {} not found (they start when their PE reaches them); {} did nothing visible (e.g. a reduction's partial kept in the runtime) and the next handler on their PE that acts waits for them",
            st.received,
            st.untraced_local,
            st.untraced_remote.saturating_sub(st.untraced_followed),
            st.untraced_followed,
            st.untraced_unpaired,
            st.absorbed
        ));
    }
    if logs.chare_creations > 0 {
        notes.push(format!(
            "{} singleton chares were created as the program ran (`ckNew` of a plain chare, which Charm++'s seed balancer places; message types NewChareMsg/NewVChareMsg): Projections writes no identity for a plain chare, so each PE's are folded into its object `pe<p>` with the runtime and kept on that PE in the order they ran; a replay on another PE count cannot spread them (seed balancing is not modelled) and `lb` cannot move them one by one",
            logs.chare_creations
        ));
    }
    if let Some(by) = clock_offsets {
        notes.push(clock::describe(by));
    }
    if let Some(l) = leads {
        notes.push(l.describe());
    }
    if st.skewed > 0 {
        notes.push(format!(
            "{} messages begin processing before their creation time (clock skew between PEs not taken out, up to {}); recorded delays floor them at 0",
            st.skewed,
            SimDuration::from_ps(st.worst_skew_ps)
        ));
    }
    if st.garbage_src > 0 {
        let beyond = st.garbage_src - st.negative_src;
        notes.push(format!(
            "{} blocks name a source PE beyond the {} PEs of the .sts ({beyond} above, up to PE {}; {} negative other than -1): garbage in the log (e.g. resumed threads' envelopes); their triggers are dropped and they start when their PE reaches them",
            st.garbage_src, sts.pes, st.worst_src, st.negative_src
        ));
    }
    let phases = logs.phases.iter().copied().max().unwrap_or(0);
    if phases > 0 {
        notes.push(format!(
            "{phases} END_PHASE records (load-balancing steps): iterations are the {} phases; {} lb_sync blocks (each array element's last block of a phase)",
            phases + 1,
            st.sync_blocks
        ));
    }
    if logs.flushes_in_blocks > 0 {
        notes.push(format!(
            "{} log-buffer flushes (BEGIN_INTERRUPT..END_INTERRUPT: Charm++ writing its full trace buffer to disk, {} in all) happened inside entry methods: taken out of those blocks' durations and later send offsets (`--net recorded` still sees it in the delays of messages that arrived during it; a larger `+logsize` avoids flushes)",
            logs.flushes_in_blocks,
            SimDuration::from_ps(logs.flush_ps)
        ));
    }
    for (n, what) in [
        (
            st.unmatched,
            "triggers name a creation not in the logs; dropped",
        ),
        (
            st.repeated,
            "repeated consumptions of one message on one PE (a threaded entry resumed), or by one object after a nested entry; each continues the previous piece",
        ),
        (
            st.stale_resumes,
            "thread resumes (`dummy_thread_ep`) name no awaken record (a yield's stale or uninitialised envelope): each follows the piece before it on its PE",
        ),
        (
            st.resumed_after_wake,
            "resumed threaded entries wait for the thread's resume just before them (and through it for what woke the thread, e.g. a future's `SetFuture`)",
        ),
        (
            st.thread_of_element,
            "thread resumes were woken by an array element's block (an AMPI rank's message handler, reduction or barrier result): each runs in that element's thread, and belongs to its object",
        ),
        (
            st.inline_element,
            "pieces of an array manager run an element's entry (its index on the record, e.g. a `[threaded]` entry reached by a broadcast, started in `CkArray::recvBroadcast`): each belongs to that element",
        ),
        (
            st.ampi_buffered,
            "AMPI messages reached their rank before it waited for them (its handler ran first, outside the rank's order): the piece that ends the rank's next wait for such a message depends on each",
        ),
        (
            st.ampi_found,
            "AMPI messages reached their rank before it waited for them and the rank's next piece, woken by another kind of message (a reduction's result), did not wait for their kind afterwards: that piece depends on each (it found them in, as an `MPI_Wait` after an `MPI_Allreduce` does)",
        ),
        (
            st.ampi_polled,
            "AMPI messages reached their rank before it waited for them and a piece resumed by the rank's own yield (polling: `MPI_Test`, `MPI_Iprobe`) came next: that piece depends on each",
        ),
        (
            st.ampi_left,
            "AMPI messages reached their rank before it waited for them and no later wait took them: the rank's next piece after each depends on it",
        ),
        (
            st.thread_continued,
            "pieces run in a thread (the thread's id on the record) and continue that thread's previous piece",
        ),
        (
            logs.dup_events,
            "creations reuse an event number already seen on their PE; the later ones are ignored",
        ),
        (
            logs.flushes_between,
            "log-buffer flushes between entry methods: idle time of the traced run, left as it is",
        ),
        (
            logs.stray_ends,
            "END_PROCESSING records without a BEGIN_PROCESSING; ignored",
        ),
        (
            logs.unterminated,
            "blocks without END_PROCESSING; closed at the next BEGIN_PROCESSING or their last send",
        ),
    ] {
        if n > 0 {
            notes.push(format!("{n} {what}"));
        }
    }
    notes
}
