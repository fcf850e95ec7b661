//! Turning a replay report into the outputs users read and plot.

use anyhow::{Context, Result};
use replay::ReplayReport;
use serde::Serialize;
use sim_core::SimDuration;
use std::path::Path;
use trace::Trace;

/// What was replayed, for the report header.
pub struct RunInfo<'a> {
    pub trace: &'a Trace,
    pub net: String,
    pub mapping: String,
    pub cpu_scale: String,
    pub policy: &'static str,
    pub seed: u64,
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
}

pub fn json(info: &RunInfo, r: &ReplayReport) -> Result<String> {
    let its = r.iteration_times();
    let j = JsonReport {
        trace: &info.trace.meta.name,
        net: &info.net,
        pes: r.pes,
        mapping: &info.mapping,
        cpu_scale: &info.cpu_scale,
        scheduling: info.policy,
        seed: info.seed,
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
    };
    Ok(serde_json::to_string_pretty(&j)?)
}

fn mb(bytes: u64) -> String {
    format!("{:.3} MB", bytes as f64 / 1e6)
}

pub fn human(info: &RunInfo, r: &ReplayReport) -> String {
    use std::fmt::Write;
    let t = info.trace;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "trace        {} ({} objects, {} blocks)",
        t.meta.name,
        t.objects.len(),
        t.num_blocks()
    );
    let _ = writeln!(
        s,
        "machine      {} PEs, mapping {}, cpu scale {}, scheduling {}",
        r.pes, info.mapping, info.cpu_scale, info.policy
    );
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

/// Writes the timeline as CSV: one row per block, in start order.
pub fn write_timeline(path: &Path, t: &Trace, r: &ReplayReport) -> Result<()> {
    let tl = r.timeline.as_ref().context("timeline was not recorded")?;
    let mut w =
        csv::Writer::from_path(path).with_context(|| format!("cannot write {}", path.display()))?;
    w.write_record(["block", "object", "entry", "pe", "start_ps", "end_ps"])?;
    for rec in tl {
        let b = t.block(trace::BlockId(rec.block));
        w.write_record([
            rec.block.to_string(),
            b.object.0.to_string(),
            t.entries[b.entry.index()].name.clone(),
            rec.pe.to_string(),
            rec.start.as_ps().to_string(),
            rec.end.as_ps().to_string(),
        ])?;
    }
    w.flush()?;
    Ok(())
}

/// Writes per-PE busy/idle as CSV.
pub fn write_per_pe(path: &Path, r: &ReplayReport) -> Result<()> {
    let mut w =
        csv::Writer::from_path(path).with_context(|| format!("cannot write {}", path.display()))?;
    w.write_record(["pe", "blocks", "busy_ps", "idle_ps"])?;
    for (pe, (busy, blocks)) in r.pe_busy_ps.iter().zip(&r.pe_blocks).enumerate() {
        let idle = r.makespan.as_ps().saturating_sub(*busy);
        w.write_record([
            pe.to_string(),
            blocks.to_string(),
            busy.to_string(),
            idle.to_string(),
        ])?;
    }
    w.flush()?;
    Ok(())
}
