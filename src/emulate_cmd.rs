//! `whatif emulate` and `whatif run-native`: run a built-in message-driven program on many
//! virtual PEs (recording a trace) or for real on k threads.

use anyhow::{Context, Result, bail};
use clap::Args;
use emulator::{InitialMap, NativeConfig, Timing};
use network_models::NetSpec;
use std::path::PathBuf;
use std::time::Duration;
use trace::Format;

pub(crate) fn programs_help() -> String {
    format!(
        "Programs and their --set parameters (key=default  meaning):\n{}\n\n\
Examples:\n  whatif emulate stencil3d --pes 48 --set grid=64x64x48 --set block=16x8x8 --set iters=25 --out s.trace\n  \
whatif emulate simple-imbalance --pes 100 --set objects_per_pe=2 --set iters=10 --set lb_at=5 --out si.trace\n  \
whatif replay s.trace                       # reproduces the emulated timeline\n  \
whatif replay s.trace --net latency:lat=100us   # what if the latency were 100 us?\n  \
whatif emulate stencil3d --pes 64 --set grid=64x64x64 --set block=8x8x8 --set iters=10 --out big.trace.zst\n\n\
Large runs: blocks that do not repeat are written beside the output as they are recorded (a \
hidden folder .NAME.whatif-blocks.PID, removed at the end), so memory stays near the program's \
objects; the disk needs the trace's uncompressed size there, or with a name ending in .zst \
(which compresses the trace, often 10-20x) about its compressed size, compressed on a second \
thread as the run goes.",
        scenarios::programs::help()
    )
}

pub(crate) const NATIVE_HELP: &str = "\
Examples:
  whatif run-native stencil3d --pes 2 --set block=32x32x24 --repeat 3
  whatif run-native kneighbor --pes 4 --json
  whatif emulate stencil3d --pes 2 --timing measured --set block=32x32x24 --out m.trace   # its emulated twin";

pub(crate) fn parse_kv(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(format!("`{s}` is not key=value")),
    }
}

#[derive(Args)]
pub(crate) struct EmulateArgs {
    /// Program to run (listed below).
    program: String,
    /// Virtual PEs (the target machine's processor count).
    #[arg(long, default_value_t = 4)]
    pes: u32,
    /// Program parameter, repeatable: --set key=value.
    #[arg(long = "set", value_parser = parse_kv, value_name = "KEY=VALUE")]
    sets: Vec<(String, String)>,
    /// Block durations: `model` (declared by the program; deterministic) or `measured`
    /// (wall-clock time of the real work on this host).
    #[arg(long, default_value = "model")]
    timing: Timing,
    /// Network model the emulated timeline uses (recorded as the trace's default for replay).
    #[arg(long, default_value = "latency:lat=1us")]
    net: NetSpec,
    /// A named machine instead of --net: `paragon` (the Intel Paragon of MK's ATM2D study:
    /// 2-D mesh, 120 us latency, 30 MB/s).
    #[arg(long, value_name = "NAME", value_parser = workflow::machine::parse_machine, conflicts_with = "net")]
    machine: Option<NetSpec>,
    /// Block-cost models (from `whatif model --trace ... --costs-out`): the blocks of every
    /// entry method the file models are scaled by one factor so that its time per object per
    /// iteration is the model's value at --costs-at (the program's own costs keep the spread
    /// across blocks; sends keep their place in the block). Replay the written trace for the
    /// prediction.
    #[arg(long, value_name = "FILE", requires = "costs_at")]
    costs: Option<PathBuf>,
    /// The parameter value the cost models are evaluated at (e.g. the target block's points).
    #[arg(long, value_name = "VALUE", requires = "costs")]
    costs_at: Option<f64>,
    /// Initial placement of each collection: block or round-robin.
    #[arg(long, default_value = "block")]
    map: InitialMap,
    /// CPU-speed factor of the target relative to this host (0.5: target twice as fast),
    /// recorded in the trace; the replay applies it by default.
    #[arg(long, default_value = "1", value_parser = sim_core::Ratio::parse)]
    cpu_scale: sim_core::Ratio,
    /// Honour message priorities (replay with --priority to reproduce the timeline).
    #[arg(long)]
    priority: bool,
    /// Write every block (with its emulated start and arrival times) even when iterations
    /// repeat. By default repeating iterations are stored once (a periodic trace, magic
    /// `WHATIFTP`, which expands to the same blocks; the repeated blocks carry no recorded
    /// times, which only `--recorded-order` and `--net recorded` use).
    #[arg(long)]
    flat: bool,
    /// Stop with an error after this many blocks.
    #[arg(long, default_value_t = 500_000_000)]
    max_blocks: u64,
    /// Refuse to emulate on so many virtual PEs that their state alone would exceed this, e.g.
    /// `32GiB` [default: 3/4 of this computer's memory].
    #[arg(long, value_name = "BYTES", value_parser = sim_core::units::parse_bytes)]
    max_memory: Option<u64>,
    /// Output trace; `.jsonl` writes the JSON-lines text form, anything else the binary form;
    /// a final `.zst` compresses either (`run.trace.zst`: often 10-20x smaller, read as is).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// No progress or summary on stderr.
    #[arg(long, short)]
    quiet: bool,
    /// Blocks written to disk at a time when they do not repeat (tests use small batches).
    #[arg(long, hide = true, default_value_t = 0)]
    spill_blocks: u64,
}

/// Peak resident memory of this process (Linux), for the summary line.
fn peak_rss() -> Option<String> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: u64 = s
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(format!("{:.1} MiB", kb as f64 / 1024.0))
}

/// Refuses `pes` virtual PEs whose state alone would exceed `max_memory` (default: 3/4 of this
/// computer's memory), before anything is allocated.
pub(crate) fn emulate(mut a: EmulateArgs) -> Result<()> {
    crate::files::check_outputs(&[("--out", &a.out)], &[], false)?;
    if let Some(m) = a.machine.take() {
        a.net = m;
    }
    let workflow::emulate::Emulated {
        emulation: mut e,
        cost_notes,
        wall,
    } = workflow::emulate::emulate(&workflow::emulate::EmulateSpec {
        program: a.program.clone(),
        sets: a.sets.clone(),
        pes: a.pes,
        timing: a.timing,
        net: a.net.clone(),
        costs: a.costs.clone().zip(a.costs_at),
        map: a.map,
        cpu_scale: a.cpu_scale,
        priority: a.priority,
        flat: a.flat,
        max_blocks: a.max_blocks,
        max_memory: a.max_memory,
        binary_output: Format::from_path(&a.out) == Format::Binary,
        quiet: a.quiet,
        spill_beside: Some(a.out.clone()),
        spill_blocks: a.spill_blocks,
    })?;
    let stored = workflow::emulate::write(&mut e, &a.out)?;
    let t = &e.trace;
    if !a.quiet {
        eprintln!(
            "emulated {} on {} virtual PEs ({} timing, net {}): {} objects, {} blocks, {} messages ({} remote){stored}",
            t.meta.name,
            a.pes,
            if a.timing == Timing::Model {
                "model"
            } else {
                "measured"
            },
            a.net,
            t.objects.len(),
            e.blocks,
            e.remote_messages + e.local_messages,
            e.remote_messages
        );
        eprintln!(
            "emulated makespan {}; wall {:.3} s on 1 host thread; peak memory {}",
            e.makespan,
            wall.as_secs_f64(),
            peak_rss().unwrap_or_else(|| "unknown".into())
        );
        for n in &cost_notes {
            eprintln!("{n}");
        }
        eprintln!("wrote {}", a.out.display());
    }
    Ok(())
}

#[derive(Args)]
pub(crate) struct NativeArgs {
    /// Program to run (see `whatif emulate --help` for the list).
    program: String,
    /// PEs of the native run, 1 to 1024, each a real thread of this computer [default: 2].
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    pes: Option<u32>,
    /// Old spelling of --pes.
    #[arg(long = "threads", hide = true, value_parser = parse_threads, conflicts_with = "pes")]
    threads_old: Option<u32>,
    /// Program parameter, repeatable: --set key=value.
    #[arg(long = "set", value_parser = parse_kv, value_name = "KEY=VALUE")]
    sets: Vec<(String, String)>,
    /// Initial placement of each collection: block or round-robin.
    #[arg(long, default_value = "block")]
    map: InitialMap,
    /// Run higher-priority messages first.
    #[arg(long)]
    priority: bool,
    /// Runs; the summary gives each and the median.
    #[arg(long, default_value_t = 1)]
    repeat: u32,
    /// Print one JSON object instead of the human summary.
    #[arg(long)]
    json: bool,
    /// Refuse a program whose objects and data are estimated to need more memory than
    /// this, e.g. `4GiB` [default: 3/4 of this computer's memory].
    #[arg(long, value_name = "BYTES", value_parser = crate::parse_bytes_arg)]
    max_memory: Option<u64>,
    /// No per-run lines or notes on stderr.
    #[arg(long, short)]
    quiet: bool,
}

/// `run-native --pes`: 1 to 1024 OS threads.
fn parse_threads(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n @ 1..=1024) => Ok(n),
        _ => Err(format!(
            "expected a number of PEs (OS threads) from 1 to 1024, got {}",
            sim_core::inputs::quote(s)
        )),
    }
}

fn mean(d: &[Duration]) -> Option<f64> {
    (!d.is_empty()).then(|| d.iter().map(|x| x.as_secs_f64()).sum::<f64>() / d.len() as f64)
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

pub(crate) fn run_native(a: NativeArgs) -> Result<()> {
    if a.repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    let limit = a
        .max_memory
        .unwrap_or_else(crate::limits::default_memory_limit);
    let pes =
        crate::spelling::either(a.pes, a.threads_old, ("--threads", "--pes"), a.quiet).unwrap_or(2);
    let cfg = NativeConfig {
        threads: pes,
        map: a.map,
        priority: a.priority,
        max_memory_bytes: limit
            .saturating_sub(workflow::emulate::emulation_bytes(0, 0))
            .max(1),
    };
    let mut walls = Vec::new();
    let mut iter_means = Vec::new();
    let mut runs = Vec::new();
    for i in 0..a.repeat {
        let r = match scenarios::programs::run_native(&a.program, &a.sets, &cfg) {
            Err(emulator::EmuError::Memory { what, bytes, .. }) => {
                return Err(workflow::emulate::memory_refusal(
                    &format!("running {} natively", a.program),
                    &what,
                    bytes,
                    limit,
                )
                .into());
            }
            r => r.with_context(|| format!("running {} natively", a.program))?,
        };
        let its = r.iteration_times();
        let m = mean(&its);
        if !a.json && !a.quiet {
            eprintln!(
                "run {}: wall {:.6} s, {} blocks, {} cross-thread messages, {} iterations{}",
                i + 1,
                r.wall.as_secs_f64(),
                r.blocks,
                r.remote_messages,
                its.len(),
                m.map(|m| format!(", mean iteration {:.6} s", m))
                    .unwrap_or_default()
            );
        }
        walls.push(r.wall.as_secs_f64());
        if let Some(m) = m {
            iter_means.push(m);
        }
        runs.push(serde_json::json!({
            "wall_s": r.wall.as_secs_f64(),
            "blocks": r.blocks,
            "remote_messages": r.remote_messages,
            "iterations_s": its.iter().map(|d| d.as_secs_f64()).collect::<Vec<_>>(),
            "mean_iteration_s": m,
        }));
    }
    let med_wall = median(walls);
    let med_iter = median(iter_means);
    if a.json {
        println!(
            "{}",
            serde_json::json!({
                "program": a.program,
                "pes": pes,
                "threads": pes,
                "sets": a.sets.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(),
                "runs": runs,
                "median_wall_s": med_wall,
                "median_mean_iteration_s": med_iter,
            })
        );
    } else {
        println!(
            "{} on {} PEs (threads), {} run(s): median wall {:.6} s{}",
            a.program,
            pes,
            a.repeat,
            med_wall.unwrap_or(0.0),
            med_iter
                .map(|m| format!(", median of mean iteration times {m:.6} s"))
                .unwrap_or_default()
        );
    }
    Ok(())
}
