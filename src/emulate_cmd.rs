//! `whatif emulate` and `whatif run-native`: run a built-in message-driven program on many
//! virtual PEs (recording a trace) or for real on k threads.

use anyhow::{Context, Result, bail};
use clap::Args;
use emulator::{EmulateConfig, InitialMap, NativeConfig, Timing};
use network_models::NetSpec;
use replay::footprint::human_bytes;
use sim_core::SimDuration;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use trace::Format;

pub(crate) fn programs_help() -> String {
    format!(
        "Programs and their --set parameters (key=default  meaning):\n{}\n\n\
Examples:\n  whatif emulate stencil3d --pes 48 --set grid=64x64x48 --set block=16x8x8 --set iters=25 --out s.trace\n  \
whatif emulate simple-imbalance --pes 100 --set objects_per_pe=2 --set iters=10 --set lb_at=5 --out si.trace\n  \
whatif replay s.trace                       # reproduces the emulated timeline\n  \
whatif replay s.trace --net latency:lat=100us   # what if the latency were 100 us?",
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

/// Bytes per block the recorder holds (the segments being compared, a run's body and the
/// blocks that did not repeat: 13 columns with recorded times, dependencies and sends, as
/// they grow, and the allocator's slack): 200-290 measured on stencil3d with 240,000 to
/// 840,000 blocks (release and debug builds).
const EMULATED_BLOCK_BYTES: u64 = 250;
/// Bytes per object: [`emulator::OBJECT_BYTES`] (the program's object, its runtime slot, its
/// name in the trace, its messages in flight; about 600 measured on stencil3d and
/// simple-imbalance), reserved for every object before the program's objects are made.
const EMULATED_OBJECT_BYTES: u64 = emulator::OBJECT_BYTES;
/// What an emulation needs whatever its size, beside the process.
const EMULATION_FIXED_BYTES: u64 = 8 << 20;

/// The memory of an emulation of `objects` objects whose recorder holds `blocks` blocks.
fn emulation_bytes(objects: u64, blocks: u64) -> u64 {
    replay::footprint::PROCESS_BYTES
        .saturating_add(EMULATION_FIXED_BYTES)
        .saturating_add(objects.saturating_mul(EMULATED_OBJECT_BYTES))
        .saturating_add(blocks.saturating_mul(EMULATED_BLOCK_BYTES))
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
    /// Output trace; `.jsonl` writes the JSON-lines text form, anything else the binary form.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// No progress or summary on stderr.
    #[arg(long, short)]
    quiet: bool,
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
    let generator = format!(
        "whatif emulate {} --pes {}{} --timing {} --net {}",
        a.program,
        a.pes,
        a.sets
            .iter()
            .map(|(k, v)| format!(" --set {k}={v}"))
            .collect::<String>(),
        match a.timing {
            Timing::Measured => "measured",
            Timing::Model => "model",
        },
        a.net
    );
    // The memory limit bounds the blocks the recorder holds (all of them when iterations do
    // not repeat, about two iterations when they do): the emulation stops with an error once
    // its estimate would pass it.
    let limit = a
        .max_memory
        .unwrap_or_else(crate::limits::default_memory_limit);
    let budget_blocks = limit.saturating_sub(emulation_bytes(0, 0)) / EMULATED_BLOCK_BYTES;
    // Repeating iterations are detected (and held once) when the output is the binary form
    // and nothing rewrites the blocks afterwards.
    let detect = !a.flat && a.costs.is_none() && Format::from_path(&a.out) == Format::Binary;
    let by_memory = true;
    let cfg = EmulateConfig {
        pes: a.pes,
        map: a.map,
        timing: a.timing,
        priority: a.priority,
        max_blocks: a.max_blocks,
        max_held_blocks: budget_blocks.max(1),
        max_memory_bytes: limit.saturating_sub(emulation_bytes(0, 0)).max(1),
        detect_repetition: detect,
        generator,
        net_spec: a.net.to_string(),
        cpu_scale: a.cpu_scale,
    };
    workflow::limits::check_emulated_pes(a.pes, a.max_memory, "--max-memory")?;
    let mut net = a.net.build();
    let t0 = Instant::now();
    let mut last = Instant::now();
    let show = !a.quiet && std::io::stderr().is_terminal();
    let quiet = a.quiet;
    let mut progress = |p: &emulator::Progress| {
        if !quiet && last.elapsed() >= Duration::from_secs(1) {
            last = Instant::now();
            let line = format!(
                "emulating: {} blocks, simulated time {}, {:.0} s",
                p.blocks,
                p.now,
                t0.elapsed().as_secs_f64()
            );
            if show {
                eprint!("\r{line}   ");
            } else {
                eprintln!("{line}");
            }
        }
    };
    let e = match scenarios::programs::emulate(
        &a.program,
        &a.sets,
        &cfg,
        net.as_mut(),
        &mut progress,
    ) {
        Err(emulator::EmuError::BlockLimit { blocks, .. }) if by_memory => {
            return Err(crate::BadInput(format!(
                "emulating {}: stopped holding {blocks} blocks that do not repeat, which need about {}, the memory limit of {} (raise it with --max-memory, or emulate fewer iterations or a smaller problem)",
                a.program,
                human_bytes(emulation_bytes(0, blocks)),
                human_bytes(limit)
            ))
            .into());
        }
        Err(emulator::EmuError::TooManyBlocks { expected, .. }) => {
            return Err(crate::BadInput(format!(
                "emulating {}: the program runs at least {expected} blocks; recording every one \
                 ({}) needs about {}, more than the memory limit of {} (raise it with \
                 --max-memory, emulate fewer iterations or a smaller problem{})",
                a.program,
                if detect {
                    "its iterations are not detected as repeating"
                } else if a.flat {
                    "--flat"
                } else if a.costs.is_some() {
                    "--costs rewrites them"
                } else {
                    "a text output"
                },
                human_bytes(emulation_bytes(
                    0,
                    match a.max_blocks {
                        0 => expected,
                        m => expected.min(m),
                    }
                )),
                human_bytes(limit),
                if detect {
                    ""
                } else {
                    ", or write the binary form without --flat or --costs, which records repeating iterations once"
                }
            ))
            .into());
        }
        Err(emulator::EmuError::Memory { what, bytes, .. }) => {
            return Err(memory_refusal(
                &format!("emulating {}", a.program),
                &what,
                bytes,
                limit,
            ));
        }
        r => r.with_context(|| format!("emulating {}", a.program))?,
    };
    crate::memory::note(emulation_bytes(
        e.trace.objects.len() as u64,
        e.peak_held_blocks,
    ));
    if show {
        eprint!("\r{:60}\r", "");
    }
    crate::memory::checkpoint(&format!(
        "emulating ({} objects, at most {} blocks held, {} B of trace on the heap)",
        e.trace.objects.len(),
        e.peak_held_blocks,
        e.periodic
            .as_ref()
            .map_or_else(|| e.trace.heap_bytes(), |p| p.heap_bytes())
    ));
    let wall = t0.elapsed();
    let mut e = e;
    let mut cost_notes = Vec::new();
    if let (Some(f), Some(x)) = (&a.costs, a.costs_at) {
        cost_notes = apply_costs(&mut e.trace, f, x)?;
    }
    let t = &e.trace;
    let stored = match &e.periodic {
        Some(p) => {
            trace::write_periodic_file(p, &a.out)
                .with_context(|| format!("writing {}", a.out.display()))?;
            let runs: Vec<String> = p
                .pieces
                .iter()
                .filter(|x| x.reps > 1)
                .map(|x| format!("{} x {}", x.reps, x.seg.len()))
                .collect();
            format!(
                "; iterations repeat: {} blocks stored ({} runs of copies x blocks: {})",
                p.stored_blocks(),
                runs.len(),
                runs.join(", ")
            )
        }
        None => {
            trace::write_trace_file(t, &a.out, Format::from_path(&a.out))
                .with_context(|| format!("writing {}", a.out.display()))?;
            String::new()
        }
    };
    crate::memory::checkpoint("writing the trace");
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

/// Objects x iterations of entry `e` (the divisor of `model_cmd::entry_costs`).
fn per_units(t: &trace::Trace, e: usize) -> u128 {
    let cols = t.columns();
    let objects: std::collections::HashSet<u32> = cols
        .entry
        .iter()
        .zip(&cols.object)
        .filter(|(x, _)| **x as usize == e)
        .map(|(_, o)| *o)
        .collect();
    (objects.len() * crate::model_cmd::iteration_count(t)) as u128
}

/// Sets the time per object per iteration of every entry method `file` models
/// (`model_cmd::entry_costs`) to the model's value at `x` (seconds, rounded to picoseconds,
/// at least 0) by scaling its blocks and their send offsets by one factor. Returns one line
/// per entry changed.
fn apply_costs(t: &mut trace::Trace, file: &std::path::Path, x: f64) -> Result<Vec<String>> {
    let (param, models) = crate::model_cmd::read_costs(file)?;
    let mut new_of: Vec<Option<u64>> = vec![None; t.entries.len()];
    let mut notes = Vec::new();
    for (name, m) in &models {
        if let Some(e) = t.entries.iter().position(|en| &en.name == name) {
            let v = m.eval(x);
            if !v.is_finite() {
                anyhow::bail!(
                    "{}: entry `{name}` at {param} = {x} is not a number",
                    file.display()
                );
            }
            let ps = (v.max(0.0) * 1e12).round().min(u64::MAX as f64 / 2.0) as u64;
            new_of[e] = Some(ps);
            notes.push(format!(
                "costs: {name} = {} per object per iteration ({} at {param} = {x}, from {})",
                SimDuration::from_ps(ps),
                m.show(),
                file.display()
            ));
        }
    }
    if notes.is_empty() {
        anyhow::bail!(
            "{}: models none of the trace's entry methods ({})",
            file.display(),
            t.entries
                .iter()
                .map(|e| e.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let entry: Vec<u32> = t.columns().entry.clone();
    let ranges: Vec<std::ops::Range<usize>> = (0..t.num_blocks() as u32)
        .map(|b| t.send_range(trace::BlockId(b)))
        .collect();
    // Each modelled entry's blocks are scaled by one factor so that its time per object per
    // iteration is the model's value: the program's own costs keep the spread across blocks
    // (a block that only receives stays 0); an entry whose blocks are all 0 gets the time
    // spread evenly over its blocks.
    let mut count = vec![0u128; t.entries.len()];
    let mut old_total = vec![0u128; t.entries.len()];
    for (&e, &d) in entry.iter().zip(&t.columns().duration_ps) {
        count[e as usize] += 1;
        old_total[e as usize] += d as u128;
    }
    // Target total of each modelled entry: its time per object per iteration x objects x
    // iterations.
    let target: Vec<Option<u128>> = (0..t.entries.len())
        .map(|e| new_of[e].map(|ps| ps as u128 * per_units(t, e)))
        .collect();
    let mut factor = vec![(1u128, 1u128); t.num_blocks()];
    for (b, d) in t.durations_mut().iter_mut().enumerate() {
        let e = entry[b] as usize;
        let Some(total) = target[e] else {
            continue;
        };
        if old_total[e] == 0 {
            let each = total / count[e].max(1);
            factor[b] = (each, 1);
            *d = each.min(u64::MAX as u128 / 2) as u64;
        } else {
            factor[b] = (total, old_total[e]);
            *d = (*d as u128 * total / old_total[e]).min(u64::MAX as u128 / 2) as u64;
        }
    }
    let mut send_block = vec![0usize; ranges.last().map_or(0, |r| r.end)];
    for (b, r) in ranges.iter().enumerate() {
        for i in r.clone() {
            send_block[i] = b;
        }
    }
    let durations: Vec<u64> = t.columns().duration_ps.clone();
    for (i, off) in t.send_offsets_mut().enumerate() {
        let b = send_block[i];
        let (num, den) = factor[b];
        if (num, den) != (1, 1) {
            let scaled = (off.as_ps() as u128 * num / den).min(durations[b] as u128);
            *off = SimDuration::from_ps(scaled as u64);
        }
    }
    Ok(notes)
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

/// The emulator's refusal of a program too large (its objects or data, `bytes` with what was
/// reserved before), in the run's figures: with the process, against the user's `limit`.
fn memory_refusal(doing: &str, what: &str, bytes: u64, limit: u64) -> anyhow::Error {
    crate::BadInput(format!(
        "{doing}: {what} need about {}, {} with the process, above the memory limit of {}; the estimate is made before they are allocated: raise the limit with --max-memory if this computer has the memory, or make the problem smaller",
        human_bytes(bytes),
        human_bytes(bytes.saturating_add(emulation_bytes(0, 0))),
        human_bytes(limit)
    ))
    .into()
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
        max_memory_bytes: limit.saturating_sub(emulation_bytes(0, 0)).max(1),
    };
    let mut walls = Vec::new();
    let mut iter_means = Vec::new();
    let mut runs = Vec::new();
    for i in 0..a.repeat {
        let r = match scenarios::programs::run_native(&a.program, &a.sets, &cfg) {
            Err(emulator::EmuError::Memory { what, bytes, .. }) => {
                return Err(memory_refusal(
                    &format!("running {} natively", a.program),
                    &what,
                    bytes,
                    limit,
                ));
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
