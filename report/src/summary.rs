//! A replay's summary for people and scripts: the human summary, the `--json` object and
//! `summary.json`, and the CSV tables a replay writes (timeline, per PE, links, entries).
//! Times in CSV files are seconds with 12 decimals ([`secs`]): exact picoseconds.

use crate::error::{Ctx, Result};
use replay::ReplayReport;
use serde::Serialize;
use sim_core::SimDuration;
use std::path::Path;
use trace::Trace;

/// What was replayed, for the summary's header and the JSON object's settings.
#[derive(Clone, Debug)]
pub struct RunInfo<'a> {
    /// The trace replayed (its name, counts and entry methods).
    pub trace: &'a Trace,
    /// The network model, as its canonical spec.
    pub net: String,
    /// The object placement, as given (`recorded`, `block`, `file:PATH`, ...).
    pub mapping: String,
    /// The CPU-speed factor applied, as text.
    pub cpu_scale: String,
    /// The scheduling policy (`fifo`, `priority`, ...).
    pub policy: &'static str,
    /// The root seed of the run.
    pub seed: u64,
    /// The runtime's costs and the noise (`ReplayConfig::block_overhead`, `local_msg_cost`,
    /// `noise`), as `(block_overhead_ps, local_msg_cost_ps, noise spec)`.
    pub cpu_costs: (u64, u64, String),
}

/// The `--json` object: simulated results only (no wall-clock figures).
#[derive(Serialize)]
struct JsonReport<'a> {
    trace: &'a str,
    net: &'a str,
    pes: u32,
    mapping: &'a str,
    cpu_scale: &'a str,
    scheduling: &'a str,
    seed: u64,
    block_overhead_ps: u64,
    local_msg_cost_ps: u64,
    noise: &'a str,
    makespan_ps: u64,
    makespan_s: f64,
    iterations: usize,
    iterations_s: Vec<f64>,
    iteration_ends_ps: Vec<u64>,
    blocks: u64,
    messages: u64,
    remote_messages: u64,
    local_messages: u64,
    remote_bytes: u64,
    local_bytes: u64,
    unconsumed_sends: u64,
    busy_ps_total: u64,
    utilization: f64,
    /// Network cost of remote messages per entry method they invoke.
    entries: Vec<EntryNetRow<'a>>,
    /// Traffic statistics of topology models (`null` otherwise).
    network: Option<NetJson<'a>>,
}

/// The `network` object: with every link's row (`--json`), or, in `--out`'s `summary.json`,
/// the totals and where the rows are (`links.csv`: a row per link grows with the machine).
#[derive(Serialize)]
#[serde(untagged)]
enum NetJson<'a> {
    Full(&'a network_models::NetStats),
    Totals {
        messages: u64,
        hop_bytes: u64,
        packets: u64,
        packet_hops: u64,
        link_rows: usize,
        links_file: &'static str,
    },
}

/// One row of the per-entry network table (JSON and CSV).
#[derive(Serialize)]
struct EntryNetRow<'a> {
    entry: &'a str,
    messages: u64,
    bytes: u64,
    wire_ps: u64,
    queueing_ps: u64,
    overhead_ps: u64,
    mean_wire_ps: u64,
}

fn entry_rows<'a>(t: &'a Trace, r: &ReplayReport) -> Vec<EntryNetRow<'a>> {
    r.entry_net
        .iter()
        .enumerate()
        .filter(|(_, e)| e.messages > 0 || e.overhead_ps > 0)
        .map(|(i, e)| EntryNetRow {
            entry: &t.entries[i].name,
            messages: e.messages,
            bytes: e.bytes,
            wire_ps: e.wire_ps,
            queueing_ps: e.queueing_ps,
            overhead_ps: e.overhead_ps,
            mean_wire_ps: e.wire_ps.checked_div(e.messages).unwrap_or(0),
        })
        .collect()
}

/// The `--json` object.
pub fn json(info: &RunInfo, r: &ReplayReport) -> Result<String> {
    json_with(info, r, true)
}

/// The `--json` object without the per-link rows (`network.links`), which `links.csv` holds:
/// `summary.json` of `--out`, whose size then no longer grows with the machine.
pub fn json_summary(info: &RunInfo, r: &ReplayReport) -> Result<String> {
    json_with(info, r, false)
}

fn json_with(info: &RunInfo, r: &ReplayReport, links: bool) -> Result<String> {
    let its = r.iteration_times();
    let j = JsonReport {
        trace: &info.trace.meta.name,
        net: &info.net,
        pes: r.pes,
        mapping: &info.mapping,
        cpu_scale: &info.cpu_scale,
        scheduling: info.policy,
        seed: info.seed,
        block_overhead_ps: info.cpu_costs.0,
        local_msg_cost_ps: info.cpu_costs.1,
        noise: &info.cpu_costs.2,
        makespan_ps: r.makespan.as_ps(),
        makespan_s: r.makespan.as_secs_f64(),
        iterations: its.len(),
        iterations_s: its.iter().map(|d| d.as_secs_f64()).collect(),
        iteration_ends_ps: r.iterations.iter().map(|(_, t)| t.as_ps()).collect(),
        blocks: r.blocks,
        messages: r.messages.total(),
        remote_messages: r.messages.remote,
        local_messages: r.messages.local,
        remote_bytes: r.messages.remote_bytes,
        local_bytes: r.messages.local_bytes,
        unconsumed_sends: r.messages.unconsumed_sends,
        busy_ps_total: r.busy_total().as_ps(),
        utilization: r.utilization(),
        entries: entry_rows(info.trace, r),
        network: r.net.as_ref().map(|n| {
            if links {
                NetJson::Full(n)
            } else {
                NetJson::Totals {
                    messages: n.messages,
                    hop_bytes: n.hop_bytes,
                    packets: n.packets,
                    packet_hops: n.packet_hops,
                    link_rows: n.links.len(),
                    links_file: "links.csv",
                }
            }
        }),
    };
    Ok(serde_json::to_string_pretty(&j)?)
}

fn mb(bytes: u64) -> String {
    sim_core::units::human_bytes(bytes)
}

/// The human summary a replay prints: the trace, the machine, the makespan and iterations,
/// utilisation, messages and the network model's statistics.
pub fn human(info: &RunInfo, r: &ReplayReport) -> String {
    use std::fmt::Write;
    let t = info.trace;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "trace        {} ({} objects, {} blocks)",
        t.meta.name,
        t.objects.len(),
        r.blocks
    );
    let _ = writeln!(
        s,
        "machine      {} PEs, mapping {}, cpu scale {}, scheduling {}",
        r.pes, info.mapping, info.cpu_scale, info.policy
    );
    let (bo, lc, noise) = &info.cpu_costs;
    if *bo > 0 || *lc > 0 || noise != "none" {
        let _ = writeln!(
            s,
            "cpu costs    block overhead {}, local message {}, noise {noise}",
            SimDuration::from_ps(*bo),
            SimDuration::from_ps(*lc)
        );
    }
    let _ = writeln!(s, "network      {}", info.net);
    let _ = writeln!(s, "makespan     {}", r.makespan);
    let its = r.iteration_times();
    if its.is_empty() {
        let _ = writeln!(s, "iterations   none marked in the trace");
    } else {
        let sum: u128 = its.iter().map(|d| d.as_ps() as u128).sum();
        let mean = SimDuration::from_ps((sum / its.len() as u128) as u64);
        let min = its.iter().min().copied().unwrap_or_default();
        let max = its.iter().max().copied().unwrap_or_default();
        let _ = writeln!(
            s,
            "iterations   {}: mean {mean}, min {min}, max {max}",
            its.len()
        );
        if its.len() <= 12 {
            let list: Vec<String> = its.iter().map(|d| d.to_string()).collect();
            let _ = writeln!(s, "             [{}]", list.join(", "));
        }
    }
    let m = &r.messages;
    let _ = writeln!(
        s,
        "messages     {} delivered: {} remote ({}), {} local ({}); {} sends unconsumed",
        m.total(),
        m.remote,
        mb(m.remote_bytes),
        m.local,
        mb(m.local_bytes),
        m.unconsumed_sends
    );
    for e in entry_rows(t, r).iter().filter(|e| e.messages > 0) {
        let _ = writeln!(
            s,
            "  to {:<9} {} msgs, mean wire {}, queueing {:.1}% of wire, total CPU overhead {}",
            e.entry,
            e.messages,
            SimDuration::from_ps(e.mean_wire_ps),
            100.0 * e.queueing_ps as f64 / (e.wire_ps.max(1)) as f64,
            SimDuration::from_ps(e.overhead_ps)
        );
    }
    if let Some(n) = &r.net {
        let _ = write!(
            s,
            "network      {} inter-node messages, {} hop-bytes",
            n.messages, n.hop_bytes
        );
        if n.packets > 0 {
            let _ = write!(s, ", {} packets, {} packet-hops", n.packets, n.packet_hops);
        }
        let _ = writeln!(s);
        if let Some(l) = n
            .links
            .iter()
            .max_by_key(|l| (l.busy_ps, std::cmp::Reverse(l.node)))
        {
            let what = match l.kind {
                "link" => format!("link {}->{}", l.node, l.to_node),
                nic => format!("{nic} NIC of node {}", l.node),
            };
            let _ = writeln!(
                s,
                "busiest      {what} busy {} ({:.1}% of makespan), max queue {} packets, max wait {}",
                SimDuration::from_ps(l.busy_ps),
                100.0 * l.busy_ps as f64 / r.makespan.as_ps().max(1) as f64,
                l.max_queue,
                SimDuration::from_ps(l.max_wait_ps)
            );
        }
    }
    let busiest = r.pe_busy_ps.iter().copied().max().unwrap_or(0);
    let _ = writeln!(
        s,
        "utilization  {:.1}% mean PE busy; busiest PE busy {} of {}",
        100.0 * r.utilization(),
        SimDuration::from_ps(busiest),
        r.makespan
    );
    s
}

pub use crate::secs;

/// Writes the timeline as CSV: one row per block, in start order.
pub fn write_timeline(path: &Path, t: &Trace, r: &ReplayReport) -> Result<()> {
    let tl = r.timeline.as_ref().ctx(|| "timeline was not recorded")?;
    write_timeline_records(path, t, tl.iter(), None)
}

/// Writes these timeline records (in their order) as `write_timeline` does; `ids` gives each
/// block's id in the whole run when `t` holds some of its blocks only.
pub fn write_timeline_records<'a>(
    path: &Path,
    t: &Trace,
    tl: impl Iterator<Item = &'a replay::TimelineRecord>,
    ids: Option<&[u32]>,
) -> Result<()> {
    let mut w = crate::csv_file(path)?;
    w.write_record(["block", "object", "entry", "pe", "start_s", "end_s"])?;
    for rec in tl {
        let b = t.block(trace::BlockId(rec.block));
        w.write_record([
            ids.and_then(|v| v.get(rec.block as usize).copied())
                .unwrap_or(rec.block)
                .to_string(),
            b.object.0.to_string(),
            t.entries[b.entry.index()].name.clone(),
            rec.pe.to_string(),
            secs(rec.start.as_ps()),
            secs(rec.end.as_ps()),
        ])?;
    }
    crate::commit_csv(w)
}

/// Writes per-PE busy/idle as CSV.
pub fn write_per_pe(path: &Path, r: &ReplayReport) -> Result<()> {
    let mut w = crate::csv_file(path)?;
    w.write_record(["pe", "blocks", "busy_s", "idle_s", "utilization"])?;
    let span = r.makespan.as_ps();
    for (pe, (busy, blocks)) in r.pe_busy_ps.iter().zip(&r.pe_blocks).enumerate() {
        w.write_record([
            pe.to_string(),
            blocks.to_string(),
            secs(*busy),
            secs(span.saturating_sub(*busy)),
            format!("{:.6}", *busy as f64 / span.max(1) as f64),
        ])?;
    }
    crate::commit_csv(w)
}

pub use crate::LINK_COLUMNS;

/// Writes per-link (and per-NIC) traffic as CSV; models without links write only the header.
pub fn write_links(path: &Path, r: &ReplayReport) -> Result<()> {
    let mut w = crate::csv_file(path)?;
    w.write_record(LINK_COLUMNS)?;
    let span = r.makespan.as_ps().max(1) as f64;
    for l in r.net.iter().flat_map(|n| &n.links) {
        w.write_record([
            l.kind.to_string(),
            l.node.to_string(),
            l.port.to_string(),
            l.to_node.to_string(),
            l.bytes.to_string(),
            l.packets.to_string(),
            secs(l.busy_ps),
            format!("{:.6}", l.busy_ps as f64 / span),
            l.max_queue.to_string(),
            secs(l.max_wait_ps),
        ])?;
    }
    crate::commit_csv(w)
}

/// Writes the per-entry network cost table as CSV.
pub fn write_entries(path: &Path, t: &Trace, r: &ReplayReport) -> Result<()> {
    let mut w = crate::csv_file(path)?;
    w.write_record([
        "entry",
        "messages",
        "bytes",
        "wire_s",
        "queueing_s",
        "overhead_s",
        "mean_wire_s",
    ])?;
    for e in entry_rows(t, r) {
        w.write_record([
            e.entry.to_string(),
            e.messages.to_string(),
            e.bytes.to_string(),
            secs(e.wire_ps),
            secs(e.queueing_ps),
            secs(e.overhead_ps),
            secs(e.mean_wire_ps),
        ])?;
    }
    crate::commit_csv(w)
}
