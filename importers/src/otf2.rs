//! OTF2 archives (Score-P traces) to execution blocks, through the OTF2 C library (cargo
//! feature `otf2`; the reading itself is in the `otf2-sys` crate).
//!
//! Input: the archive's anchor file (`traces.otf2`, next to `traces.def` and `traces/`). The
//! library reads it in a child process, given 10 s + 1 s per 10 MB of archive: fuzzing found
//! malformed archives on which the library loops forever or corrupts its heap, and the import
//! then ends with an error naming the cause.
//!
//! **Ranks.** Each location of the MPI locations group (`COMM_LOCATIONS`, paradigm MPI) is a
//! rank, in the group's order (an archive without MPI: every location, in definition order).
//! Rank `r` is object `rank<r>` on PE `r`, as in the SimGrid importer. Locations that are not
//! ranks (OpenMP threads, GPU streams) are left out, with a note. Ranks inside a
//! communicator are turned into world ranks through the communicator's group.
//!
//! **Time.** Timestamps become picoseconds after the clock's global offset,
//! `(t - offset) * 10^12 / ticks_per_s` rounded, so durations add up exactly. Every block
//! carries its recorded start; receive blocks their recorded arrival, so that
//! `--net recorded --recorded-order` replays the recorded run.
//!
//! **Blocks.** A rank's execution is cut into segments as SimGrid traces are (see the
//! `simgrid` module): at every MPI call that completes a receive (`MPI_Recv`, a wait or test
//! that completes an `MPI_Irecv`, `MPI_Sendrecv`) or a collective. Such a call ends the
//! segment where it is entered; one zero-time receive block (entry `msg`) per completed
//! receive, stamped with the call's exit; the next segment starts at the call's exit and
//! depends on them. All other time is CPU time of the current segment: time outside MPI,
//! and time inside MPI calls that complete nothing (sends, `MPI_Init`, `MPI_Finalize`,
//! `MPI_Comm_rank`, waits on send requests...). A blocking send therefore keeps its recorded
//! duration (copies, protocol, a rendezvous partner's lateness) whatever the network
//! model; the notes give the share of time this is. A send (`MPI_SEND`, `MPI_ISEND`) leaves
//! at its record's time, with its size and tag; the k-th send on a channel (source,
//! destination, tag) is received by the k-th completed receive on it.
//!
//! **Regions.** Entering or leaving a region that is not MPI (a function, a loop, a phase)
//! starts a new segment named after the innermost open region: reports show user functions
//! as entry methods. The segments of a rank form a chain.
//!
//! **Collectives** (`MPI_COLLECTIVE_END` records) are expanded with the SimGrid importer's
//! algorithms (`--collectives classic|smpi`), from the sizes Score-P records (its 2022+
//! convention): bcast `n` = bytes received; scatter(v) `n_q` = bytes rank `q` received;
//! gather(v), reduce `n_r` = bytes rank `r` sent; allgather(v), alltoall(v/w) and allreduce
//! `n_r` = bytes rank `r` sent / P (alltoallv and alltoallw: spread evenly over the
//! destinations); reduce-scatter(block) `counts_q` = bytes rank `q` received / P. Every rank
//! must record the same collectives with the same root. Collectives on `MPI_COMM_SELF` are
//! skipped; on other communicators than the world they are refused, as are scans.
//!
//! **Clock offsets** between locations are reported, as the Projections importer reports clock
//! skew: point-to-point messages whose receive completes before their send (count and
//! largest gap); the recorded network model floors their delay at 0.

use crate::mpi::{Coll, Collectives, Ctx, MpiProtocol, Seg};
use crate::{ImportError, ImportOptions, Imported};
use otf2_sys::{Archive, Event};
use sim_core::SimTime;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use trace::{TraceBuilder, TraceMeta};

/// Latest time accepted, in ps after the clock's offset (53 days; leaves room for stamps).
const MAX_PS: u64 = 1 << 62;

/// Bytes of memory an archive's event costs while it is read and converted (the record,
/// its share of blocks and sends): bounds the events read to `max_memory_bytes / this`.
pub const BYTES_PER_EVENT: u64 = 160;

/// Files an import reads: the anchor file, the global definitions next to it and the files
/// of the folder named after it (per-location definitions and events), sorted.
pub(crate) fn files(anchor: &Path) -> Vec<PathBuf> {
    let mut v = vec![anchor.to_path_buf()];
    let def = anchor.with_extension("def");
    if def.exists() {
        v.push(def);
    }
    if let Ok(rd) = std::fs::read_dir(anchor.with_extension("")) {
        let mut inner: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .collect();
        inner.sort();
        v.extend(inner);
    }
    v
}

fn err(anchor: &Path, what: impl Into<String>) -> ImportError {
    ImportError::inconsistent(&anchor.display().to_string(), what)
}

/// Imports an OTF2 archive given its anchor file.
pub fn import(anchor: &Path, opts: &ImportOptions) -> Result<Imported, ImportError> {
    crate::error::must_exist(anchor)?;
    let max_events = (opts.max_memory_bytes / BYTES_PER_EVENT).max(1 << 16);
    let archive = read_archive(anchor, max_events).map_err(|e| match e {
        otf2_sys::Error::TooManyEvents { events, limit } => ImportError::TooLarge {
            file: anchor.display().to_string(),
            blocks: events,
            sends: 0,
            need_bytes: events.saturating_mul(BYTES_PER_EVENT),
            limit_bytes: limit.saturating_mul(BYTES_PER_EVENT),
        },
        other => err(anchor, format!("the OTF2 library cannot read it: {other}")),
    })?;
    let protocol = opts.mpi_protocol.unwrap_or(MpiProtocol::EAGER);
    if !protocol.is_plain_eager() {
        return Err(ImportError::Unsupported {
            file: anchor.display().to_string(),
            what: format!(
                "--mpi-protocol {protocol}: OTF2 traces are imported with the eager protocol only (the importer places receives at their completion, not where they were posted)"
            ),
        });
    }
    convert(
        anchor,
        &archive,
        opts.collectives.unwrap_or(Collectives::Classic),
    )
}

/// Reads the archive in a child process (`otf2_sys::read_isolated`) given 3 s + 1 s per
/// 10 MB of archive: the OTF2 library can loop forever or corrupt its heap on some malformed
/// archives (found by the fuzzer), and an import must end with an error, not a hang or an
/// abort. (The base was 10 s, the cost of every bad anchor; the test archives, a few
/// kilobytes to a megabyte, are read in milliseconds.)
fn read_archive(anchor: &Path, max_events: u64) -> Result<otf2_sys::Archive, otf2_sys::Error> {
    let bytes: u64 = files(anchor)
        .iter()
        .map(|f| std::fs::metadata(f).map_or(0, |m| m.len()))
        .sum();
    let deadline = std::time::Duration::from_secs(3 + bytes / 10_000_000);
    let max_bytes = max_events.saturating_mul(80).saturating_add(64 << 20);
    otf2_sys::read_isolated(anchor, max_events, deadline, max_bytes)
}

/// Per communicator: its members as world ranks (`None` for `MPI_COMM_SELF`).
type CommRanks = HashMap<u32, Option<Vec<u32>>>;

/// The ranks (indices into `archive.locations`, in rank order) and the communicators.
fn ranks(anchor: &Path, a: &Archive) -> Result<(Vec<usize>, CommRanks, bool), ImportError> {
    let loc_index: HashMap<u64, usize> = a
        .locations
        .iter()
        .enumerate()
        .map(|(i, l)| (l.id, i))
        .collect();
    let mut mpi_groups: Vec<(&u32, &otf2_sys::Group)> = a
        .groups
        .iter()
        .filter(|(_, g)| {
            g.kind == otf2_sys::GROUP_COMM_LOCATIONS && g.paradigm == otf2_sys::PARADIGM_MPI
        })
        .collect();
    mpi_groups.sort_by_key(|(id, _)| **id);
    let (rank_locs, mpi) = match mpi_groups.first() {
        Some((_, g)) => {
            let mut v = Vec::with_capacity(g.members.len());
            for m in &g.members {
                let i = loc_index.get(m).ok_or_else(|| {
                    err(
                        anchor,
                        format!("the MPI locations group names location {m}, which is not defined"),
                    )
                })?;
                v.push(*i);
            }
            (v, true)
        }
        None => ((0..a.locations.len()).collect(), false),
    };
    if rank_locs.is_empty() {
        return Err(err(anchor, "the archive defines no location"));
    }
    let p = rank_locs.len() as u64;
    let mut comms = CommRanks::new();
    for (&id, c) in &a.comms {
        let Some(g) = a.groups.get(&c.group) else {
            continue;
        };
        let members = match g.kind {
            otf2_sys::GROUP_COMM_SELF => None,
            otf2_sys::GROUP_COMM_GROUP => Some(
                g.members
                    .iter()
                    .map(|&m| {
                        if m < p {
                            Ok(m as u32)
                        } else {
                            Err(err(
                                anchor,
                                format!("communicator {:?} names rank {m} of {p}", c.name),
                            ))
                        }
                    })
                    .collect::<Result<Vec<u32>, _>>()?,
            ),
            _ => continue,
        };
        comms.insert(id, members);
    }
    Ok((rank_locs, comms, mpi))
}

/// One rank's record of a collective.
#[derive(Clone, Copy, Debug)]
struct CollRec {
    op: u8,
    comm: u32,
    root: u32,
    sent: u64,
    received: u64,
}

const COLL_NAMES: [&str; 17] = [
    "barrier",
    "bcast",
    "gather",
    "gatherv",
    "scatter",
    "scatterv",
    "allgather",
    "allgatherv",
    "alltoall",
    "alltoallv",
    "alltoallw",
    "allreduce",
    "reduce",
    "reduce_scatter",
    "scan",
    "exscan",
    "reduce_scatter_block",
];

fn coll_name(op: u8) -> String {
    COLL_NAMES
        .get(op as usize)
        .map_or_else(|| format!("collective operation {op}"), |n| n.to_string())
}

/// The `k`-th world collective as each rank's [`Coll`], from every rank's record of it.
fn coll_of(recs: &[CollRec], r: usize, root: u32, p: u32) -> Option<Coll> {
    let pu = p as u64;
    let me = recs[r];
    let max_recv = recs.iter().map(|c| c.received).max().unwrap_or(0);
    let max_sent = recs.iter().map(|c| c.sent).max().unwrap_or(0);
    Some(match me.op {
        0 => Coll::Barrier,
        1 => Coll::Bcast { n: max_recv, root },
        2 | 3 => Coll::Gather {
            n: me.sent,
            root,
            v: me.op == 3,
        },
        4 | 5 => Coll::Scatter {
            sizes: recs.iter().map(|c| c.received).collect(),
            root,
            v: me.op == 5,
        },
        6 | 7 => Coll::Allgather {
            sizes: recs.iter().map(|c| c.sent / pu).collect(),
            own: me.sent / pu,
            v: me.op == 7,
        },
        8..=10 => Coll::Alltoall {
            sizes: vec![me.sent / pu; p as usize],
            block: me.sent / pu,
            v: me.op != 8,
        },
        11 => Coll::Reduce {
            n: max_sent / pu,
            root: 0,
            all: true,
        },
        12 => Coll::Reduce {
            n: max_sent,
            root,
            all: false,
        },
        13 | 16 => Coll::ReduceScatter {
            counts: recs.iter().map(|c| c.received / pu).collect(),
            elem: 1,
        },
        _ => return None,
    })
}

fn convert(anchor: &Path, a: &Archive, collectives: Collectives) -> Result<Imported, ImportError> {
    let name = anchor.display().to_string();
    let clock = a
        .clock
        .filter(|c| c.ticks_per_s > 0)
        .ok_or_else(|| err(anchor, "the archive defines no clock (ClockProperties)"))?;
    let ps = |t: u64| -> u64 {
        let d = t.saturating_sub(clock.global_offset) as u128;
        let v = (d * 1_000_000_000_000 + clock.ticks_per_s as u128 / 2) / clock.ticks_per_s as u128;
        u64::try_from(v).unwrap_or(u64::MAX)
    };
    let (rank_locs, comms, mpi) = ranks(anchor, a)?;
    let p = rank_locs.len() as u32;
    let is_mpi = |region: u32| {
        a.regions
            .get(&region)
            .is_some_and(|r| r.paradigm == otf2_sys::PARADIGM_MPI)
    };
    let region_name = |region: u32| {
        a.regions
            .get(&region)
            .map_or_else(|| format!("region{region}"), |r| r.name.clone())
    };
    let world = |comm: u32, peer: u32, what: &str| -> Result<u32, ImportError> {
        match comms.get(&comm) {
            Some(Some(m)) => m.get(peer as usize).copied().ok_or_else(|| {
                err(
                    anchor,
                    format!("{what}: rank {peer} is not in communicator {comm}"),
                )
            }),
            Some(None) => Err(err(
                anchor,
                format!("{what}: a message on MPI_COMM_SELF is not supported"),
            )),
            None => Err(err(
                anchor,
                format!("{what}: communicator {comm} is not defined"),
            )),
        }
    };

    // Pass 1: every rank's collectives on communicators with more than one rank.
    let mut colls: Vec<Vec<CollRec>> = vec![Vec::new(); p as usize];
    for (r, &li) in rank_locs.iter().enumerate() {
        for e in &a.events[li] {
            if let Event::CollectiveEnd {
                op,
                comm,
                root,
                sent,
                received,
                ..
            } = *e
            {
                match comms.get(&comm) {
                    Some(None) => continue,
                    Some(Some(m)) if m.len() == 1 => continue,
                    _ => {}
                }
                if op >= 17 {
                    // Handle and window management (RMA): no data moves here.
                    continue;
                }
                colls[r].push(CollRec {
                    op,
                    comm,
                    root,
                    sent,
                    received,
                });
            }
        }
    }
    let n_colls = colls[0].len();
    for (r, c) in colls.iter().enumerate() {
        if c.len() != n_colls {
            return Err(err(
                anchor,
                format!(
                    "rank {r} records {} collectives but rank 0 records {n_colls}",
                    c.len()
                ),
            ));
        }
    }
    let mut per_coll: Vec<Vec<Coll>> = Vec::with_capacity(n_colls);
    for k in 0..n_colls {
        let recs: Vec<CollRec> = colls.iter().map(|c| c[k]).collect();
        let c0 = recs[0];
        for (r, c) in recs.iter().enumerate() {
            if c.op != c0.op || c.root != c0.root || c.comm != c0.comm {
                return Err(err(
                    anchor,
                    format!(
                        "collective #{k} is {} (root {}) on rank {r} but {} (root {}) on rank 0",
                        coll_name(c.op),
                        c.root,
                        coll_name(c0.op),
                        c0.root
                    ),
                ));
            }
        }
        match comms.get(&c0.comm) {
            Some(Some(m))
                if m.len() == p as usize && m.iter().enumerate().all(|(i, &w)| w == i as u32) => {}
            _ => {
                return Err(ImportError::Unsupported {
                    file: name.clone(),
                    what: format!(
                        "collective #{k} ({}) on communicator {}: only collectives on the world communicator are expanded",
                        coll_name(c0.op),
                        c0.comm
                    ),
                });
            }
        }
        let root = if c0.root == otf2_sys::UNDEFINED_U32 {
            0
        } else {
            world(c0.comm, c0.root, "collective root")?
        };
        let mut v = Vec::with_capacity(p as usize);
        for r in 0..p as usize {
            v.push(
                coll_of(&recs, r, root, p).ok_or_else(|| ImportError::Unsupported {
                    file: name.clone(),
                    what: format!(
                        "collective #{k}: {} is not expanded into messages",
                        coll_name(c0.op)
                    ),
                })?,
            );
        }
        per_coll.push(v);
    }

    // Pass 2: blocks.
    let stem = anchor
        .parent()
        .and_then(|d| d.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "otf2".into());
    let b = TraceBuilder::new(TraceMeta {
        name: stem,
        generator: format!("whatif import otf2 {}", anchor.display()),
        description: format!("OTF2 archive of {p} ranks"),
        recorded_pes: p,
        net: None,
        seed: None,
        cpu_scale: None,
        sequential_objects: false,
    });
    let mut cx = Ctx::new(b, collectives, MpiProtocol::EAGER, p);
    let (mut first_ps, mut last_ps) = (u64::MAX, 0u64);
    let (mut send_call_ps, mut cpu_ps, mut wait_ps) = (0u64, 0u64, 0u64);
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    // Point-to-point send and completion times per channel, to report clock offsets.
    type Times = HashMap<(u32, u32, i64), Vec<u64>>;
    let (mut sent_at, mut done_at): (Times, Times) = (HashMap::new(), HashMap::new());
    for (r, &li) in rank_locs.iter().enumerate() {
        let r = r as u32;
        let events = &a.events[li];
        let t0 = events.first().map_or(0, |e| ps(otf2_sys::event_time(e)));
        first_ps = first_ps.min(t0);
        let top = "(rank)".to_string();
        let mut user: Vec<String> = Vec::new();
        let first = cx.entry(&top);
        let mut s = cx.begin(r, first, Some(t0));
        let mut last = t0;
        // The MPI call being run: depth, entry time, whether it sent, what it completed.
        let mut depth = 0u32;
        let mut call_enter = 0u64;
        let mut call_sent = false;
        let mut recvs: Vec<(u32, i64)> = Vec::new();
        let mut coll: Option<usize> = None;
        let mut n_coll = 0usize;
        for (i, e) in events.iter().enumerate() {
            let t = ps(otf2_sys::event_time(e));
            if t > MAX_PS {
                return Err(err(
                    anchor,
                    format!(
                        "rank {r}, event {i}: timestamp {} is {} s after the clock's offset (more than 2^62 ps)",
                        otf2_sys::event_time(e),
                        t / 1_000_000_000_000
                    ),
                ));
            }
            if t < last {
                return Err(err(
                    anchor,
                    format!("rank {r}: events go back in time ({t} ps after {last} ps)"),
                ));
            }
            match *e {
                Event::Enter { region, .. } if is_mpi(region) => {
                    if depth == 0 {
                        cx.work(&mut s, t - last);
                        cpu_ps = cpu_ps.saturating_add(t - last);
                        last = t;
                        call_enter = t;
                        call_sent = false;
                    }
                    depth += 1;
                    *counts.entry("MPI calls").or_insert(0) += (depth == 1) as u64;
                }
                Event::Leave { region, .. } if is_mpi(region) => {
                    depth = depth.saturating_sub(1);
                    if depth > 0 {
                        continue;
                    }
                    let seg = user.last().unwrap_or(&top).clone();
                    if coll.is_some() || !recvs.is_empty() {
                        // A completing call: its time is the wait's. Receive blocks and the
                        // segments its waits open are stamped with its exit.
                        cx.stamp = Some(t);
                        let waits = cx.waits;
                        if let Some(k) = coll.take() {
                            let c = &per_coll[k][r as usize];
                            crate::mpi::expand(&mut cx, &mut s, c, k as u64, p, &seg)
                                .map_err(|what| err(anchor, what))?;
                        }
                        if !recvs.is_empty() {
                            let ids: Vec<crate::mpi::Req> = recvs
                                .drain(..)
                                .map(|(src, tag)| {
                                    done_at.entry((src, r, tag)).or_default().push(t);
                                    cx.irecv(&s, src, tag)
                                })
                                .collect();
                            cx.wait(&mut s, &ids, &seg);
                        }
                        cx.stamp = None;
                        if cx.waits > waits {
                            wait_ps = wait_ps.saturating_add(t - last);
                        } else {
                            // A collective that waited for nothing on this rank (the root
                            // of a bcast): its time stays CPU time, as a send's.
                            cx.work(&mut s, t - last);
                            cpu_ps = cpu_ps.saturating_add(t - last);
                        }
                        last = t;
                    } else {
                        cx.work(&mut s, t - last);
                        if call_sent {
                            send_call_ps = send_call_ps.saturating_add(t - call_enter);
                        }
                        cpu_ps = cpu_ps.saturating_add(t - last);
                        last = t;
                    }
                }
                Event::Enter { region, .. } | Event::Leave { region, .. } => {
                    if depth > 0 {
                        continue;
                    }
                    cx.work(&mut s, t - last);
                    cpu_ps = cpu_ps.saturating_add(t - last);
                    last = t;
                    if matches!(e, Event::Enter { .. }) {
                        user.push(region_name(region));
                    } else {
                        user.pop();
                    }
                    let seg = user.last().unwrap_or(&top).clone();
                    switch(&mut cx, &mut s, &seg, t);
                }
                Event::Send {
                    peer,
                    comm,
                    tag,
                    bytes,
                    ..
                } => {
                    let dst = world(comm, peer, "MPI send")?;
                    cx.work(&mut s, t - last);
                    cpu_ps = cpu_ps.saturating_add(t - last);
                    last = t;
                    cx.isend(&mut s, dst, tag as i64, bytes);
                    sent_at.entry((r, dst, tag as i64)).or_default().push(t);
                    call_sent = true;
                    *counts.entry("sends").or_insert(0) += 1;
                }
                Event::Recv {
                    peer, comm, tag, ..
                } => {
                    let src = world(comm, peer, "MPI receive")?;
                    *counts.entry("receives").or_insert(0) += 1;
                    if depth == 0 {
                        // A receive record outside any MPI call: completed now.
                        cx.work(&mut s, t - last);
                        cpu_ps = cpu_ps.saturating_add(t - last);
                        last = t;
                        cx.stamp = Some(t);
                        done_at.entry((src, r, tag as i64)).or_default().push(t);
                        let id = cx.irecv(&s, src, tag as i64);
                        let seg = user.last().unwrap_or(&top).clone();
                        cx.wait(&mut s, &[id], &seg);
                        cx.stamp = None;
                    } else {
                        recvs.push((src, tag as i64));
                    }
                }
                Event::CollectiveEnd { comm, op, .. } => {
                    let skipped = match comms.get(&comm) {
                        Some(None) => true,
                        Some(Some(m)) => m.len() == 1,
                        None => false,
                    } || op >= 17;
                    if skipped {
                        continue;
                    }
                    *counts.entry("collectives").or_insert(0) += 1;
                    if depth == 0 {
                        return Err(err(
                            anchor,
                            format!("rank {r}: a collective record outside any MPI call"),
                        ));
                    }
                    coll = Some(n_coll);
                    n_coll += 1;
                }
                Event::CollectiveBegin { .. }
                | Event::IsendComplete { .. }
                | Event::IrecvRequest { .. } => {}
            }
        }
        last_ps = last_ps.max(last);
        // The segment after the last region closed is empty unless it waits or sends.
        if s.dur_ps > 0 || s.sent || s.waited {
            cx.close();
        }
    }
    let (b, _) = cx.finish(&name)?;
    let trace = b.finish().map_err(|source| ImportError::Invalid {
        file: name.clone(),
        source,
    })?;
    let span = last_ps.saturating_sub(first_ps);
    let mut notes = vec![format!(
        "{name}: {p} ranks ({}), {} events; clock {} ticks/s (resolution {} ps); recorded span {}",
        if mpi {
            "the MPI locations"
        } else {
            "every location: no MPI locations group"
        },
        a.events.iter().map(Vec::len).sum::<usize>(),
        clock.ticks_per_s,
        (1_000_000_000_000u64 / clock.ticks_per_s).max(1),
        sim_core::SimDuration::from_ps(span),
    )];
    notes.push(format!(
        "{} blocks, {} messages; {}",
        trace.num_blocks(),
        trace.num_sends(),
        counts
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let total = cpu_ps.saturating_add(wait_ps).max(1);
    notes.push(format!(
        "time kept as CPU: {:.1}% (of which calls that send: {:.1}%, kept as recorded whatever the network); waits in receives and collectives: {:.1}%",
        100.0 * cpu_ps as f64 / total as f64,
        100.0 * send_call_ps as f64 / total as f64,
        100.0 * wait_ps as f64 / total as f64
    ));
    // Clock offsets between locations: a message whose receive completed before it was sent.
    let (mut skewed, mut worst) = (0u64, 0u64);
    for (ch, done) in &done_at {
        if let Some(sent) = sent_at.get(ch) {
            for (&d, &s0) in done.iter().zip(sent) {
                if d < s0 {
                    skewed += 1;
                    worst = worst.max(s0 - d);
                }
            }
        }
    }
    if skewed > 0 {
        notes.push(format!(
            "{skewed} messages complete their receive before they were sent (clock offsets between locations, up to {}); recorded delays floor them at 0",
            sim_core::SimDuration::from_ps(worst)
        ));
    } else {
        notes.push(
            "no message completes before it was sent: no clock offset between locations shows"
                .to_string(),
        );
    }
    let left_out = a.locations.len() - rank_locs.len();
    if left_out > 0 {
        notes.push(format!(
            "{left_out} locations are not MPI ranks (threads, devices); their events are left out"
        ));
    }
    if a.other_events > 0 {
        notes.push(format!(
            "{} event records of kinds the library does not know, or of undefined locations, skipped",
            a.other_events
        ));
    }
    Ok(Imported {
        trace,
        notes,
        recorded_end: Some(SimTime::from_ps(last_ps)),
    })
}

/// Starts a segment named `name` at `t`: renames the open one if it has done nothing yet.
fn switch(cx: &mut Ctx, s: &mut Seg, name: &str, t: u64) {
    if s.dur_ps == 0 && !s.sent {
        cx.rename(s, name, Some(t));
        return;
    }
    cx.stamp = Some(t);
    cx.cut(s, name);
    cx.stamp = None;
}
