//! `--out DIR`: every output of a replay in one folder, in formats other tools open. Every
//! time in every CSV file is in seconds with 12 decimals (exact picoseconds); the JSON files
//! carry integer picoseconds (`_ps`) next to seconds (`_s`).
//!
//! | file | what |
//! |---|---|
//! | `summary.json` | the `--json` object, without the per-link rows (`network.links`: `links.csv` holds them) |
//! | `trace.json` | Chrome trace-event JSON (Perfetto, `chrome://tracing`): one track per PE, one complete (`X`) event per block named by its entry method, one flow (`s`/`f`) per delivered message |
//! | `projections/predicted.sts`, `predicted.<pe>.log` | Projections 11.0 logs of the predicted run (times in whole microseconds); above 65,536 PEs only the representative PEs' logs (k-means exemplars and outliers, see `clusters.csv`) unless `--force` |
//! | `timeline.csv` | one row per block: block, object, entry, pe, start, end |
//! | `notes.txt` | what the outputs left out and how to get it (only when something was) |
//! | `overview.csv` | the report's whole-run overview: busy time and dominant entry per (row of PEs, time column) |
//!
//! `trace.json` and `timeline.csv` hold the blocks [`analysis::select::select`] keeps: every
//! block while `trace.json` fits `--trace-budget`, else the representative PEs (and the
//! critical path's), else also only the start of the run; `--trace-pes` and `--trace-window`
//! choose explicitly. Every other file covers the whole run.
//! | `pe.csv` | per PE: blocks, busy and idle time, utilisation |
//! | `entries.csv` | per entry method: blocks, total / mean / max time, share of busy time, remote messages and their network cost |
//! | `iterations.csv` | per iteration label: end time and duration |
//! | `links.csv` | per link and NIC traffic (topology models; header only otherwise) |
//! | analyses | `time_profile.csv`, `usage.csv`, `communication.csv`, `grain_sizes.csv`, `extrema.csv`, `metrics.csv`, `snapshots.csv`, `clusters.csv`, `comm_matrix.csv`, `message_sizes.csv` (see `report::views`) |
//!
//! | `otf2/traces.otf2` (+ `traces.def`, `traces/`) | with the `otf2` feature: the predicted run as an OTF2 archive (Vampir, otf2-print): one location per PE, an Enter/Leave of its entry method's region per block, an MPI send and receive per delivered message (tag = the send's index), times in picoseconds |
//!
//! With `--compress`, `trace.json` and the Projections logs are written gzip-compressed as
//! `trace.json.gz` (Perfetto opens it as is) and `predicted.<pe>.log.gz` (as Charm++ writes
//! them with zlib; Projections and `whatif import projections` read them).

use crate::error::{Ctx, Result};
use crate::summary::RunInfo;
use replay::{ReplayReport, TimelineRecord};
use sim_core::Ratio;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use trace::{BlockId, Trace};

/// Above this many PEs `projections/` (one log file per PE) is written only when forced.
pub const MAX_PROJECTIONS_PES: u32 = 1 << 16;

/// How [`write_all`] writes.
#[derive(Debug)]
pub struct Options<'a> {
    /// The factor on send offsets (flows start at the send's time inside its block).
    pub cpu_scale: Ratio,
    /// Write every PE's Projections log and OTF2 file above [`MAX_PROJECTIONS_PES`].
    pub force: bool,
    /// gzip trace.json and the Projections logs.
    pub compress: bool,
    /// The k-means representatives (exemplars, then outliers).
    pub representatives: &'a [u32],
    /// The PEs trace.json and timeline.csv hold when they cannot hold all: the
    /// representatives and any PE the report zooms on (sorted).
    pub shown_pes: &'a [u32],
    /// The PEs trace.json and timeline.csv hold.
    pub trace_pes: &'a analysis::select::PeChoice,
    /// The window trace.json and timeline.csv hold.
    pub trace_window_ps: Option<(u64, u64)>,
    /// The size trace.json should stay under (with `PeChoice::Auto`).
    pub trace_budget_bytes: u64,
    /// Runs of some PEs only (a run too large to keep them all): the estimate of
    /// trace.json with every PE ([`analysis::select::all_bytes`]), each block's id in the
    /// whole run (the trace holds the kept blocks only, renumbered in order), and per entry
    /// method the whole run's blocks, busy time and longest block (for `entries.csv`).
    pub partial: Option<Partial<'a>>,
}

/// See [`Options::partial`].
#[derive(Debug)]
pub struct Partial<'a> {
    /// The estimated size of trace.json with every PE.
    pub all_bytes: u64,
    /// Each kept block's id in the whole run.
    pub block_ids: &'a [u32],
    /// Per entry method, the whole run's blocks.
    pub entry_blocks: &'a [u64],
    /// Per entry method, the whole run's busy time (ps).
    pub entry_busy_ps: &'a [u64],
    /// Per entry method, the whole run's longest block (ps).
    pub entry_max_ps: &'a [u64],
    /// Messages into the kept blocks from blocks left out: `(consumer's id in the whole run,
    /// sending PE, the send's event number on it, bytes)`, sorted by consumer.
    pub senders: &'a [Sender],
}

/// Writes every output into `dir` (a staging folder, see `safe_output::OutputDir`). `r` must carry
/// the timeline. Returns notes for the user (outputs left out, and why), also written to
/// `notes.txt` when there are any.
pub fn write_all(dir: &Path, info: &RunInfo, r: &ReplayReport, o: Options) -> Result<Vec<String>> {
    let mut notes = Vec::new();
    let t = info.trace;
    let tl = r
        .timeline
        .as_ref()
        .ctx(|| "the timeline was not recorded")?;
    std::fs::create_dir_all(dir).ctx(|| format!("cannot create {}", dir.display()))?;
    std::fs::write(
        dir.join("summary.json"),
        crate::summary::json_summary(info, r)? + "\n",
    )
    .ctx(|| format!("cannot write {}", dir.join("summary.json").display()))?;
    let sel = analysis::select::select(
        t,
        tl,
        r.pes,
        o.trace_pes,
        o.shown_pes,
        o.trace_window_ps,
        o.trace_budget_bytes,
        o.partial.as_ref().map(|p| p.all_bytes),
    );
    notes.extend(sel.notes.iter().map(|n| format!("note: {n}")));
    sim_core::memory::checkpoint("outputs: the selection");
    let ids = o.partial.as_ref().map(|p| p.block_ids);
    write_timeline(&dir.join("timeline.csv"), t, tl, &sel, ids)?;
    crate::summary::write_links(&dir.join("links.csv"), r)?;
    write_pe_csv(&dir.join("pe.csv"), r)?;
    let stats = match &o.partial {
        Some(p) => EntryStats {
            count: p.entry_blocks.to_vec(),
            total: p.entry_busy_ps.to_vec(),
            max: p.entry_max_ps.to_vec(),
        },
        None => EntryStats::of(t, tl),
    };
    write_entries_csv(&dir.join("entries.csv"), t, r, &stats)?;
    write_iterations_csv(&dir.join("iterations.csv"), r)?;
    sim_core::memory::checkpoint("outputs: the CSVs");
    let deliveries = Deliveries::of(t);
    write_chrome(
        &dir.join("trace.json"),
        t,
        tl,
        o.cpu_scale,
        &deliveries,
        o.compress,
        (&sel, ids),
    )?;
    sim_core::memory::checkpoint("outputs: trace.json");
    // Above the limit, Lee's data reduction: the logs of the representative PEs only
    // (clusters.csv says which cluster each stands for).
    let all = r.pes <= MAX_PROJECTIONS_PES || o.force;
    let mut keep = vec![all; r.pes as usize];
    for &p in o.representatives {
        if let Some(k) = keep.get_mut(p as usize) {
            *k = true;
        }
    }
    write_projections(
        &dir.join("projections"),
        info,
        tl,
        &deliveries,
        r,
        o.cpu_scale,
        LogFiles {
            compress: o.compress,
            only: (!all).then_some(&keep[..]),
            outside: o.partial.as_ref().map(|p| (p.block_ids, p.senders)),
        },
    )?;
    sim_core::memory::checkpoint("outputs: projections/");
    if !all {
        notes.push(format!(
            "note: projections/ holds the logs of the representative PEs only ({}, see clusters.csv): all {} PEs would make {} log files (limit {MAX_PROJECTIONS_PES}; --force writes them)",
            o.representatives.len(),
            r.pes,
            r.pes
        ));
    }
    #[cfg(feature = "otf2")]
    if r.pes <= MAX_PROJECTIONS_PES || o.force {
        write_otf2(&dir.join("otf2"), t, tl, o.cpu_scale, &deliveries, r.pes)?;
    } else {
        notes.push(format!(
            "note: otf2/ not written: {} PEs would make {} event files (limit {MAX_PROJECTIONS_PES}; --force writes them)",
            r.pes, r.pes
        ));
    }
    if !notes.is_empty() {
        let text: String = notes.iter().map(|n| format!("{n}\n")).collect();
        crate::write_text(&dir.join("notes.txt"), &text)?;
    }
    Ok(notes)
}

/// `timeline.csv`: one row per kept block (see [`crate::summary::write_timeline`]).
fn write_timeline(
    path: &Path,
    t: &Trace,
    tl: &[TimelineRecord],
    sel: &analysis::select::Selection,
    ids: Option<&[u32]>,
) -> Result<()> {
    crate::summary::write_timeline_records(
        path,
        t,
        tl.iter()
            .filter(|r| sel.keeps(r.pe, r.start.as_ps(), r.end.as_ps())),
        ids,
    )
}

fn create(path: &Path) -> Result<BufWriter<File>> {
    Ok(BufWriter::new(
        File::create(path).ctx(|| format!("cannot write {}", path.display()))?,
    ))
}

/// An output file, plain or gzip-compressed (then named `<path>.gz`).
enum Out {
    Plain(BufWriter<File>),
    Gz(flate2::write::GzEncoder<BufWriter<File>>),
}

impl Out {
    fn create(path: &Path, compress: bool) -> Result<Out> {
        if !compress {
            return Ok(Out::Plain(create(path)?));
        }
        let mut name = path.as_os_str().to_owned();
        name.push(".gz");
        Ok(Out::Gz(flate2::write::GzEncoder::new(
            create(Path::new(&name))?,
            flate2::Compression::default(),
        )))
    }

    /// Completes the file (the gzip trailer) and flushes it.
    fn finish(self) -> Result<()> {
        match self {
            Out::Plain(mut w) => w.flush()?,
            Out::Gz(g) => g.finish()?.flush()?,
        }
        Ok(())
    }
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Out::Plain(w) => w.write(buf),
            Out::Gz(g) => g.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Out::Plain(w) => w.flush(),
            Out::Gz(g) => g.flush(),
        }
    }
}

fn csv_writer(path: &Path) -> Result<csv::Writer<File>> {
    csv::Writer::from_path(path).ctx(|| format!("cannot write {}", path.display()))
}

use crate::summary::secs as s;

/// Picoseconds as microseconds, exactly (6 decimals): Chrome trace timestamps.
fn us(ps: u64) -> String {
    format!("{}.{:06}", ps / 1_000_000, ps % 1_000_000)
}

fn write_pe_csv(path: &Path, r: &ReplayReport) -> Result<()> {
    let mut w = csv_writer(path)?;
    w.write_record(["pe", "blocks", "busy_s", "idle_s", "utilization"])?;
    let span = r.makespan.as_ps();
    for (pe, (busy, blocks)) in r.pe_busy_ps.iter().zip(&r.pe_blocks).enumerate() {
        w.write_record([
            pe.to_string(),
            blocks.to_string(),
            s(*busy),
            s(span.saturating_sub(*busy)),
            format!("{:.6}", *busy as f64 / span.max(1) as f64),
        ])?;
    }
    w.flush()?;
    Ok(())
}

/// Per entry method: blocks, busy time and the longest block.
struct EntryStats {
    count: Vec<u64>,
    total: Vec<u64>,
    max: Vec<u64>,
}

impl EntryStats {
    fn of(t: &Trace, tl: &[TimelineRecord]) -> EntryStats {
        let n = t.entries.len();
        let (mut count, mut total, mut max) = (vec![0u64; n], vec![0u64; n], vec![0u64; n]);
        for rec in tl {
            let e = t.block(BlockId(rec.block)).entry.index();
            let d = rec.end.saturating_since(rec.start).as_ps();
            count[e] += 1;
            total[e] = total[e].saturating_add(d);
            max[e] = max[e].max(d);
        }
        EntryStats { count, total, max }
    }
}

fn write_entries_csv(path: &Path, t: &Trace, r: &ReplayReport, st: &EntryStats) -> Result<()> {
    let n = t.entries.len();
    let (count, total, max) = (&st.count, &st.total, &st.max);
    let busy: u64 = total.iter().fold(0u64, |a, b| a.saturating_add(*b));
    let mut w = csv_writer(path)?;
    w.write_record([
        "entry",
        "name",
        "blocks",
        "total_s",
        "mean_s",
        "max_s",
        "busy_share",
        "remote_messages",
        "remote_bytes",
        "wire_s",
        "queueing_s",
        "overhead_s",
    ])?;
    for e in 0..n {
        let net = r.entry_net.get(e).copied().unwrap_or_default();
        w.write_record([
            e.to_string(),
            t.entries[e].name.clone(),
            count[e].to_string(),
            s(total[e]),
            s(total[e].checked_div(count[e]).unwrap_or(0)),
            s(max[e]),
            format!("{:.6}", total[e] as f64 / busy.max(1) as f64),
            net.messages.to_string(),
            net.bytes.to_string(),
            s(net.wire_ps),
            s(net.queueing_ps),
            s(net.overhead_ps),
        ])?;
    }
    w.flush()?;
    Ok(())
}

fn write_iterations_csv(path: &Path, r: &ReplayReport) -> Result<()> {
    let mut w = csv_writer(path)?;
    w.write_record(["iteration", "end_s", "time_s"])?;
    for ((label, end), d) in r.iterations.iter().zip(r.iteration_times()) {
        w.write_record([label.to_string(), s(end.as_ps()), s(d.as_ps())])?;
    }
    w.flush()?;
    Ok(())
}

/// Who consumes each send ([`Trace::consumers`]) and who sends it.
struct Deliveries<'t> {
    start: &'t [u32],
    consumers: &'t [u32],
    sender: Vec<u32>,
    /// Per block, the send that triggers it (`u32::MAX`: none).
    trigger_send: &'t [u32],
}

impl<'t> Deliveries<'t> {
    fn of(t: &'t Trace) -> Deliveries<'t> {
        let c = t.consumers();
        Deliveries {
            start: &c.start,
            consumers: &c.blocks,
            sender: t.send_blocks(),
            trigger_send: &c.trigger_send,
        }
    }
}

/// Where each block ran: index into the timeline by block id.
fn by_block(t: &Trace, tl: &[TimelineRecord]) -> Vec<u32> {
    let mut v = vec![u32::MAX; t.num_blocks()];
    for (i, rec) in tl.iter().enumerate() {
        v[rec.block as usize] = i as u32;
    }
    v
}

fn write_chrome(
    path: &Path,
    t: &Trace,
    tl: &[TimelineRecord],
    cpu_scale: Ratio,
    d: &Deliveries,
    compress: bool,
    (sel, ids): (&analysis::select::Selection, Option<&[u32]>),
) -> Result<()> {
    let mut w = Out::create(path, compress)?;
    let pes = tl.iter().map(|r| r.pe + 1).max().unwrap_or(0);
    let kept = |r: &TimelineRecord| sel.keeps(r.pe, r.start.as_ps(), r.end.as_ps());
    let q = |x: &str| serde_json::to_string(x).expect("strings serialise");
    writeln!(w, "{{\"displayTimeUnit\":\"ns\",\"traceEvents\":[")?;
    writeln!(
        w,
        "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"tid\":0,\"args\":{{\"name\":{}}}}}",
        q(&format!("whatif: {}", t.meta.name))
    )?;
    for p in (0..pes).filter(|&p| sel.keeps_pe(p)) {
        writeln!(
            w,
            ",{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":{p},\"args\":{{\"name\":\"PE {p}\"}}}}"
        )?;
        writeln!(
            w,
            ",{{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":0,\"tid\":{p},\"args\":{{\"sort_index\":{p}}}}}"
        )?;
    }
    let names: Vec<String> = t.entries.iter().map(|e| q(&e.name)).collect();
    for rec in tl.iter().filter(|r| kept(r)) {
        let b = t.block(BlockId(rec.block));
        let obj = q(&t.objects[b.object.index()].name);
        write!(
            w,
            ",{{\"name\":{},\"cat\":\"block\",\"ph\":\"X\",\"pid\":0,\"tid\":{},\"ts\":{},\"dur\":{},\"args\":{{\"block\":{},\"object\":{obj}",
            names[b.entry.index()],
            rec.pe,
            us(rec.start.as_ps()),
            us(rec.end.saturating_since(rec.start).as_ps()),
            ids.and_then(|v| v.get(rec.block as usize).copied())
                .unwrap_or(rec.block)
        )?;
        if let Some(k) = b.iteration {
            write!(w, ",\"iteration\":{k}")?;
        }
        writeln!(w, "}}}}")?;
    }
    // Flows: from the send's time inside the sending block to the start of each consumer.
    let at = by_block(t, tl);
    let mut flow = 0u64;
    for (s, send) in t.all_sends().iter().enumerate() {
        let (c0, c1) = (d.start[s] as usize, d.start[s + 1] as usize);
        if c0 == c1 {
            continue;
        }
        let Some(src) = tl
            .get(at[d.sender[s] as usize] as usize)
            .filter(|r| kept(r))
        else {
            continue;
        };
        let sent = src
            .start
            .as_ps()
            .saturating_add(cpu_scale.scale(send.offset).as_ps())
            .min(src.end.as_ps().saturating_sub(1).max(src.start.as_ps()));
        for &c in &d.consumers[c0..c1] {
            let Some(dst) = tl.get(at[c as usize] as usize).filter(|r| kept(r)) else {
                continue;
            };
            writeln!(
                w,
                ",{{\"name\":\"msg\",\"cat\":\"msg\",\"ph\":\"s\",\"id\":{flow},\"pid\":0,\"tid\":{},\"ts\":{}}}",
                src.pe,
                us(sent)
            )?;
            writeln!(
                w,
                ",{{\"name\":\"msg\",\"cat\":\"msg\",\"ph\":\"f\",\"bp\":\"e\",\"id\":{flow},\"pid\":0,\"tid\":{},\"ts\":{},\"args\":{{\"bytes\":{}}}}}",
                dst.pe,
                us(dst.start.as_ps()),
                send.bytes
            )?;
            flow += 1;
        }
    }
    writeln!(w, "]}}")?;
    w.finish()
}

/// The predicted run as an OTF2 archive `dir/traces.otf2` (see the module docs).
#[cfg(feature = "otf2")]
fn write_otf2(
    dir: &Path,
    t: &Trace,
    tl: &[TimelineRecord],
    cpu_scale: Ratio,
    d: &Deliveries,
    pes: u32,
) -> Result<()> {
    use otf2_sys::Event;
    let at = by_block(t, tl);
    let sends = t.all_sends();
    // The sends of each block, by sender.
    let mut by_sender: Vec<Vec<u32>> = vec![Vec::new(); t.num_blocks()];
    for s in 0..sends.len() {
        by_sender[d.sender[s] as usize].push(s as u32);
    }
    let mut per_pe: Vec<Vec<&TimelineRecord>> = vec![Vec::new(); pes as usize];
    for rec in tl {
        if let Some(v) = per_pe.get_mut(rec.pe as usize) {
            v.push(rec);
        }
    }
    let mut events = Vec::with_capacity(pes as usize);
    let mut msgs: Vec<(u64, Event)> = Vec::new();
    for recs in &mut per_pe {
        recs.sort_by_key(|r| (r.start, r.end, r.block));
        let mut ev = Vec::with_capacity(recs.len() * 2);
        for rec in recs.iter() {
            let (start, end) = (rec.start.as_ps(), rec.end.as_ps());
            let region = t.block(BlockId(rec.block)).entry.index() as u32;
            ev.push(Event::Enter {
                time: start,
                region,
            });
            let ts = d.trigger_send[rec.block as usize];
            if ts != u32::MAX
                && let Some(src) = tl.get(at[d.sender[ts as usize] as usize] as usize)
            {
                ev.push(Event::Recv {
                    time: start,
                    peer: src.pe,
                    comm: 0,
                    tag: ts,
                    bytes: sends[ts as usize].bytes,
                    request: None,
                });
            }
            msgs.clear();
            for &s in &by_sender[rec.block as usize] {
                let sent = start
                    .saturating_add(cpu_scale.scale(sends[s as usize].offset).as_ps())
                    .min(end);
                let (c0, c1) = (
                    d.start[s as usize] as usize,
                    d.start[s as usize + 1] as usize,
                );
                for &c in &d.consumers[c0..c1] {
                    if let Some(dst) = tl.get(at[c as usize] as usize) {
                        msgs.push((
                            sent,
                            Event::Send {
                                time: sent,
                                peer: dst.pe,
                                comm: 0,
                                tag: s,
                                bytes: sends[s as usize].bytes,
                                request: None,
                            },
                        ));
                    }
                }
            }
            msgs.sort_by_key(|m| m.0);
            ev.extend(msgs.iter().map(|m| m.1));
            ev.push(Event::Leave { time: end, region });
        }
        events.push(ev);
    }
    let out = otf2_sys::Output {
        regions: t.entries.iter().map(|e| e.name.clone()).collect(),
        events,
        machine: format!("whatif: {}", t.meta.name),
    };
    otf2_sys::write(dir, "traces", &out)
        .ctx(|| format!("cannot write the OTF2 archive {}", dir.display()))
}

/// Whole microseconds (Projections' time unit), rounded down.
fn whole_us(ps: u64) -> u64 {
    ps / 1_000_000
}

/// Which Projections log files to write, and how.
#[derive(Clone, Copy)]
struct LogFiles<'a> {
    /// gzip them.
    compress: bool,
    /// Only the PEs marked here (all when `None`).
    only: Option<&'a [bool]>,
    /// The runs of some PEs only: each block's id in the whole run and the senders of
    /// messages from PEs left out (see [`Partial`]).
    outside: Option<(&'a [u32], &'a [Sender])>,
}

/// A message into a kept block from a PE left out: `(consumer's id in the whole run, sending
/// PE, the send's event number on it, bytes)`.
pub type Sender = (u32, u32, u64, u64);

fn write_projections(
    dir: &Path,
    info: &RunInfo,
    tl: &[TimelineRecord],
    d: &Deliveries,
    r: &ReplayReport,
    scale: Ratio,
    files: LogFiles,
) -> Result<()> {
    let LogFiles {
        compress,
        only,
        outside,
    } = files;
    let t = info.trace;
    std::fs::create_dir_all(dir).ctx(|| format!("cannot create {}", dir.display()))?;
    let pes = r.pes;
    // Names inside double quotes on one line: quotes and control characters (a newline
    // would end the record) become harmless.
    let q = |x: &str| -> String {
        x.chars()
            .map(|c| match c {
                '"' => '\'',
                c if c.is_control() => ' ',
                c => c,
            })
            .collect()
    };
    let mut sts = create(&dir.join("predicted.sts"))?;
    writeln!(sts, "PROJECTIONS_ID")?;
    writeln!(sts, "VERSION 11.0")?;
    writeln!(sts, "MACHINE \"whatif\"")?;
    writeln!(sts, "PROCESSORS {pes}")?;
    writeln!(sts, "SMPMODE 1 {pes}")?;
    writeln!(
        sts,
        "COMMANDLINE \"whatif replay {} --net {}\"",
        q(&t.meta.name),
        q(&info.net)
    )?;
    writeln!(sts, "TOTAL_CHARES 1")?;
    writeln!(sts, "TOTAL_EPS {}", t.entries.len())?;
    writeln!(sts, "TOTAL_MSGS 1")?;
    writeln!(sts, "TOTAL_PSEUDOS 0")?;
    writeln!(sts, "TOTAL_EVENTS 0")?;
    writeln!(sts, "CHARE 0 \"{}\" 1", q(&t.meta.name))?;
    for (i, e) in t.entries.iter().enumerate() {
        writeln!(sts, "ENTRY CHARE {i} \"{}()\" 0 0", q(&e.name))?;
    }
    writeln!(sts, "MESSAGE 0 0")?;
    writeln!(sts, "TOTAL_PHASES 0")?;
    writeln!(sts, "TOTAL_STATS 0")?;
    writeln!(sts, "END")?;
    sts.flush()?;

    // Event numbers: per sending PE, in send order (blocks in start order, sends in order).
    let mut next_event = vec![0u64; pes as usize];
    let mut send_event = vec![(0u32, 0u64); t.num_sends()];
    for rec in tl {
        for s in t.send_range(BlockId(rec.block)) {
            send_event[s] = (rec.pe, next_event[rec.pe as usize]);
            next_event[rec.pe as usize] += 1;
        }
    }
    let mut per_pe: Vec<Vec<&TimelineRecord>> = vec![Vec::new(); pes as usize];
    for rec in tl {
        per_pe[rec.pe as usize].push(rec);
    }
    let sends = t.all_sends();
    let end_us = whole_us(r.makespan.as_ps());
    for (pe, recs) in per_pe.iter().enumerate() {
        if only.is_some_and(|k| !k[pe]) {
            continue;
        }
        let mut lines: Vec<String> = Vec::with_capacity(recs.len() * 3 + 2);
        lines.push("6 0".into());
        let mut prev_end = 0u64;
        for rec in recs {
            let b = t.block(BlockId(rec.block));
            let (start, end) = (whole_us(rec.start.as_ps()), whole_us(rec.end.as_ps()));
            if start > prev_end {
                lines.push(format!("14 {prev_end} {pe}"));
                lines.push(format!("15 {start} {pe}"));
            }
            let ts = d.trigger_send[rec.block as usize];
            let from_outside = outside.and_then(|(ids, senders)| {
                let g = *ids.get(rec.block as usize)?;
                let i = senders.binary_search_by_key(&g, |x| x.0).ok()?;
                Some(senders[i])
            });
            let (src, event, bytes) = if ts == u32::MAX {
                from_outside.map_or((-1i64, 0u64, 0u64), |(_, p, e, b)| (p as i64, e, b))
            } else {
                let (p, e) = send_event[ts as usize];
                (p as i64, e, sends[ts as usize].bytes)
            };
            let ep = b.entry.0;
            lines.push(format!(
                "2 0 {ep} {start} {event} {src} {bytes} {} {} 0 0 0 0",
                whole_us(rec.ready.as_ps()).min(start),
                b.object.0
            ));
            for s in t.send_range(BlockId(rec.block)) {
                let snd = &sends[s];
                let at = rec
                    .start
                    .as_ps()
                    .saturating_add(scale.scale(snd.offset).as_ps())
                    .min(rec.end.as_ps());
                lines.push(format!(
                    "1 0 {} {} {} {pe} {} {}",
                    snd.entry.0,
                    whole_us(at),
                    send_event[s].1,
                    snd.bytes,
                    whole_us(at)
                ));
            }
            lines.push(format!("3 0 {ep} {end} {event} {pe} {bytes} 0"));
            prev_end = prev_end.max(end);
        }
        lines.push(format!("7 {end_us}"));
        let path = dir.join(format!("predicted.{pe}.log"));
        let mut w = Out::create(&path, compress)?;
        writeln!(w, "PROJECTIONS-RECORD {}", lines.len())?;
        for l in &lines {
            writeln!(w, "{l}")?;
        }
        w.finish()?;
    }
    Ok(())
}
