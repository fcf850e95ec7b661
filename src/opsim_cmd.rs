//! `replay x.goal --format goal --net loggops`: the operation-level simulator (`opsim`), which
//! follows LogGOPSim's event semantics exactly, when no option needs execution blocks.

use anyhow::Result;
use network_models::NetSpec;
use std::path::Path;

/// Why the block replay is needed instead (an option that only blocks can honour), or `None`.
pub fn needs_blocks(
    per_block_outputs: bool,
    machine_options: &[(&str, bool)],
    force_blocks: bool,
) -> Option<String> {
    if force_blocks {
        return Some("--blocks".into());
    }
    if per_block_outputs {
        return Some("per-block outputs (--out, --timeline, --per-pe, --links, --entries)".into());
    }
    machine_options
        .iter()
        .find(|(_, set)| *set)
        .map(|(flag, _)| flag.to_string())
}

/// Runs the schedule and prints the result (human or JSON).
pub fn run(path: &Path, spec: &NetSpec, parallel: bool, json: bool, quiet: bool) -> Result<()> {
    let NetSpec::LogGops(p) = spec else {
        anyhow::bail!("the operation-level simulator runs LogGOPS only");
    };
    let t0 = std::time::Instant::now();
    let sched = importers::goal::parse_schedule(path, parallel)?;
    let r = opsim::simulate(&sched, p);
    if !quiet {
        eprintln!(
            "simulated {} operations of {} ranks as LogGOPSim does (operation level; --blocks for the block replay) in {:.3} s",
            sched.ops.len(),
            sched.base.len().saturating_sub(1),
            t0.elapsed().as_secs_f64()
        );
    }
    let secs = sim_core::SimDuration::from_ps(r.finish_ps);
    if json {
        let v = serde_json::json!({
            "trace": path.display().to_string(),
            "net": spec.to_string(),
            "engine": "operations (LogGOPSim semantics)",
            "ranks": sched.base.len().saturating_sub(1),
            "operations": sched.ops.len(),
            "makespan_ps": r.finish_ps,
            "makespan_s": secs.as_secs_f64(),
            "finish_rank": r.finish_rank,
            "events": r.events,
            "unfinished_operations": r.unfinished,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("trace        {}", path.display());
        println!(
            "machine      {} ranks, one CPU and NIC each (operation-level LogGOPS, LogGOPSim semantics)",
            sched.base.len().saturating_sub(1)
        );
        println!("network      {spec}");
        println!(
            "makespan     {secs} (largest CPU-free time, rank {})",
            r.finish_rank
        );
        println!("events       {}", r.events);
    }
    if r.unfinished > 0 {
        anyhow::bail!(
            "{} operations never completed (receives without matching sends, or rendezvous sends never received)",
            r.unfinished
        );
    }
    Ok(())
}
