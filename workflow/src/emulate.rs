//! Emulation (`whatif emulate`): a built-in message-driven program run on many virtual PEs in
//! simulated time, recording a trace (repeating iterations stored once when the output allows),
//! with its memory bounded before it is allocated and, optionally, block costs from fitted
//! per-entry models.

use crate::error::{Ctx, Result, WorkflowError, bail};
use crate::{limits, memory};
use emulator::{EmulateConfig, InitialMap, Timing};
use network_models::NetSpec;
use replay::footprint::human_bytes;
use sim_core::SimDuration;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What to emulate and how.
#[derive(Clone, Debug)]
pub struct EmulateSpec {
    /// The built-in program.
    pub program: String,
    /// Its parameters (`--set key=value`).
    pub sets: Vec<(String, String)>,
    /// Virtual PEs.
    pub pes: u32,
    /// Block durations: declared by the program, or measured on this host.
    pub timing: Timing,
    /// The network the emulated timeline uses (recorded as the trace's default).
    pub net: NetSpec,
    /// Block-cost models and the parameter value they are evaluated at.
    pub costs: Option<(PathBuf, f64)>,
    /// Initial placement of each collection.
    pub map: InitialMap,
    /// CPU-speed factor of the target relative to this host, recorded in the trace.
    pub cpu_scale: sim_core::Ratio,
    /// Honour message priorities.
    pub priority: bool,
    /// Record every block even when iterations repeat.
    pub flat: bool,
    /// Stop with an error after this many blocks.
    pub max_blocks: u64,
    /// Memory limit [default: 3/4 of this computer's memory].
    pub max_memory: Option<u64>,
    /// The trace will be written in the binary form (which can hold repeating iterations
    /// once); `false` records every block.
    pub binary_output: bool,
    /// No progress on stderr.
    pub quiet: bool,
    /// The output file, when blocks that do not repeat may be written to disk beside it as
    /// the emulation runs (binary output without `costs` only; [`write`] then assembles the
    /// trace from them). `None`: every block stays in memory until [`write`].
    pub spill_beside: Option<PathBuf>,
    /// Blocks spilled at a time (0: [`SPILL_BATCH_BLOCKS`], and detection stops at
    /// [`SPILL_DETECT_BLOCKS`]; else detection stops at four batches).
    pub spill_blocks: u64,
}

/// Blocks that do not repeat are written to disk this many at a time (about 30 MB held).
pub const SPILL_BATCH_BLOCKS: u64 = 1 << 17;
/// Repetition detection stops once the recorder holds this many blocks (about 1 GB) without
/// a repeat (or half the memory limit's worth, if less); the rest is written flat.
pub const SPILL_DETECT_BLOCKS: u64 = 1 << 22;

impl EmulateSpec {
    /// `program` on `pes` virtual PEs over `net`, with `whatif emulate`'s other defaults.
    pub fn new(program: &str, pes: u32, net: NetSpec) -> EmulateSpec {
        EmulateSpec {
            program: program.to_string(),
            sets: Vec::new(),
            pes,
            timing: Timing::Model,
            net,
            costs: None,
            map: InitialMap::Block,
            cpu_scale: sim_core::Ratio::ONE,
            priority: false,
            flat: false,
            max_blocks: 500_000_000,
            max_memory: None,
            binary_output: true,
            quiet: true,
            spill_beside: None,
            spill_blocks: 0,
        }
    }
}

/// An emulation's result: the recording, the notes of the block costs applied, the wall time.
#[derive(Debug)]
pub struct Emulated {
    /// The emulator's output (the trace, or its periodic form, and the run's counts).
    pub emulation: emulator::Emulation,
    /// One line per entry method whose costs were set from a model.
    pub cost_notes: Vec<String>,
    /// Wall time of the emulation.
    pub wall: Duration,
}

/// Bytes per block the recorder holds (the segments being compared, a run's body and the
/// blocks that did not repeat: 13 columns with recorded times, dependencies and sends, as
/// they grow, and the allocator's slack): 200-290 measured on stencil3d with 240,000 to
/// 840,000 blocks (release and debug builds).
pub const EMULATED_BLOCK_BYTES: u64 = 250;
/// Bytes per object: [`emulator::OBJECT_BYTES`] (the program's object, its runtime slot, its
/// name in the trace, its messages in flight; about 600 measured on stencil3d and
/// simple-imbalance), reserved for every object before the program's objects are made.
pub const EMULATED_OBJECT_BYTES: u64 = emulator::OBJECT_BYTES;
/// What an emulation needs whatever its size, beside the process.
pub const EMULATION_FIXED_BYTES: u64 = 8 << 20;

/// The memory of an emulation of `objects` objects whose recorder holds `blocks` blocks.
pub fn emulation_bytes(objects: u64, blocks: u64) -> u64 {
    replay::footprint::PROCESS_BYTES
        .saturating_add(EMULATION_FIXED_BYTES)
        .saturating_add(objects.saturating_mul(EMULATED_OBJECT_BYTES))
        .saturating_add(blocks.saturating_mul(EMULATED_BLOCK_BYTES))
}

/// Emulates `a.program` as `a` describes.
pub fn emulate(a: &EmulateSpec) -> Result<Emulated> {
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
    let limit = a.max_memory.unwrap_or_else(limits::default_memory_limit);
    let budget_blocks = limit.saturating_sub(emulation_bytes(0, 0)) / EMULATED_BLOCK_BYTES;
    // Repeating iterations are detected (and held once) when the output is the binary form
    // and nothing rewrites the blocks afterwards.
    let detect = !a.flat && a.costs.is_none() && a.binary_output;
    let by_memory = true;
    // Blocks that do not repeat go to disk a batch at a time (about 30 MB); detection holds
    // up to SPILL_DETECT_BLOCKS (about 1 GB: two iterations of 2M blocks) without a repeat
    // before it stops. `spill_blocks` (tests) sets the batch and four batches for detection.
    let (batch, detect_blocks) = match a.spill_blocks {
        0 => (
            SPILL_BATCH_BLOCKS,
            SPILL_DETECT_BLOCKS.min(budget_blocks / 2).max(1),
        ),
        n => (n, n.saturating_mul(4)),
    };
    let spill = match &a.spill_beside {
        Some(out) if a.costs.is_none() && a.binary_output => Some(emulator::SpillPlan {
            dir: safe_output::scratch_beside(out, "blocks"),
            batch_blocks: batch,
            detect_blocks,
            // A compressed output's columns are compressed as they are spilled, on a
            // second thread, and copied into the file at the end.
            compress: trace::compress::is_compressed_name(out),
        }),
        _ => None,
    };
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
        spill,
    };
    limits::check_emulated_pes(a.pes, a.max_memory, "--max-memory")?;
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
            return Err(WorkflowError::Invalid(format!(
                "emulating {}: stopped holding {blocks} blocks that do not repeat, which need about {}, the memory limit of {} (raise it with --max-memory, or emulate fewer iterations or a smaller problem)",
                a.program,
                human_bytes(emulation_bytes(0, blocks)),
                human_bytes(limit)
            )));
        }
        Err(emulator::EmuError::TooManyBlocks { expected, .. }) => {
            return Err(WorkflowError::Invalid(format!(
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
            )));
        }
        Err(emulator::EmuError::Memory { what, bytes, .. }) => {
            return Err(memory_refusal(
                &format!("emulating {}", a.program),
                &what,
                bytes,
                limit,
            ));
        }
        r => r.ctx(|| format!("emulating {}", a.program))?,
    };
    memory::note(emulation_bytes(
        e.trace.objects.len() as u64,
        e.peak_held_blocks,
    ));
    if show {
        eprint!("\r{:60}\r", "");
    }
    memory::checkpoint(&format!(
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
    if let Some((f, x)) = &a.costs {
        cost_notes = apply_costs(&mut e.trace, f, *x)?;
    }
    Ok(Emulated {
        emulation: e,
        cost_notes,
        wall,
    })
}

/// Writes an emulation's trace to `out` (its periodic form when iterations repeat, else the
/// format `out`'s name says) and returns what was stored, for the summary (empty when flat).
pub fn write(e: &mut emulator::Emulation, out: &Path) -> Result<String> {
    let t = &e.trace;
    if let Some(sp) = &mut e.spilled {
        trace::write_spill_file(sp, t, out).ctx(|| format!("writing {}", out.display()))?;
        e.spilled = None;
        memory::checkpoint("writing the trace");
        return Ok(String::new());
    }
    let stored = match &e.periodic {
        Some(p) => {
            trace::write_periodic_file(p, out).ctx(|| format!("writing {}", out.display()))?;
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
            trace::write_trace_file(t, out, trace::Format::from_path(out))
                .ctx(|| format!("writing {}", out.display()))?;
            String::new()
        }
    };
    memory::checkpoint("writing the trace");
    Ok(stored)
}

/// The emulator's refusal of a program too large (its objects or data, `bytes` with what was
/// reserved before), in the run's figures: with the process, against the user's `limit`.
pub fn memory_refusal(doing: &str, what: &str, bytes: u64, limit: u64) -> WorkflowError {
    WorkflowError::Invalid(format!(
        "{doing}: {what} need about {}, {} with the process, above the memory limit of {}; the estimate is made before they are allocated: raise the limit with --max-memory if this computer has the memory, or make the problem smaller",
        human_bytes(bytes),
        human_bytes(bytes.saturating_add(emulation_bytes(0, 0))),
        human_bytes(limit)
    ))
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
    (objects.len() * crate::model::iteration_count(t)) as u128
}

/// Sets the time per object per iteration of every entry method `file` models
/// (`model_cmd::entry_costs`) to the model's value at `x` (seconds, rounded to picoseconds,
/// at least 0) by scaling its blocks and their send offsets by one factor. Returns one line
/// per entry changed.
pub fn apply_costs(t: &mut trace::Trace, file: &std::path::Path, x: f64) -> Result<Vec<String>> {
    let (param, models) = crate::model::read_costs(file)?;
    let mut new_of: Vec<Option<u64>> = vec![None; t.entries.len()];
    let mut notes = Vec::new();
    for (name, m) in &models {
        if let Some(e) = t.entries.iter().position(|en| &en.name == name) {
            let v = m.eval(x);
            if !v.is_finite() {
                bail!(
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
        bail!(
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
