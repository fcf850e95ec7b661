//! `whatif fuzz-import`: the mutation fuzzer (`importers::fuzz`) on every format whatif reads,
//! with a replay of every accepted input and per-input time and memory budgets.

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use importers::fuzz::{FileSet, FuzzConfig, Outcome};
use replay::ReplayConfig;
use sim_core::units::{human_bytes, parse_bytes, parse_duration};
use sim_core::{RunLimits, SeedTree, SimDuration};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const FUZZ_HELP: &str = "\
Formats: bgtrace, projections, simgrid, goal (foreign, as `whatif import` reads them), and the
native trace encodings: trace (columnar binary, WHATIFTC), trace-v3 (the older varint binary,
WHATIFTR, still read) and jsonl (the JSON-lines text form). For the native ones, INPUT is any
whatif trace; the fuzzer writes it in the chosen encoding as the starting input.
Every input the reader accepts is replayed (alphabeta:lat=1us,bw=10GB/s, at most 10^7 events).
Findings (panics, inputs over budget) are saved next to the scratch folder; the exit status is
1 when there is any.

Examples (--max-execs keeps these short; a real campaign runs for --time 5min or hours):
  whatif gen ring --ranks 8 --iters 3 --out r.trace
  whatif fuzz-import trace r.trace --max-execs 50
  whatif fuzz-import jsonl r.trace --max-execs 50
  whatif export goal r.trace --out r.goal && whatif fuzz-import goal r.goal --max-execs 50";

/// What to fuzz.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FuzzFormat {
    /// BigSim bgTrace logs (a folder or its summary file).
    Bgtrace,
    /// Projections logs (the .sts file).
    Projections,
    /// OTF2 archive (its traces.otf2; needs a build with the `otf2` feature).
    Otf2,
    /// SimGrid time-independent trace (index or single file).
    Simgrid,
    /// GOAL schedule.
    Goal,
    /// whatif columnar binary trace.
    Trace,
    /// whatif varint binary trace (version 3).
    TraceV3,
    /// whatif JSON-lines trace.
    Jsonl,
}

impl FuzzFormat {
    fn foreign(self) -> Option<importers::Format> {
        Some(match self {
            FuzzFormat::Bgtrace => importers::Format::BgTrace,
            FuzzFormat::Projections => importers::Format::Projections,
            FuzzFormat::Otf2 => importers::Format::Otf2,
            FuzzFormat::Simgrid => importers::Format::SimGrid,
            FuzzFormat::Goal => importers::Format::Goal,
            _ => return None,
        })
    }
    fn name(self) -> &'static str {
        match self {
            FuzzFormat::Bgtrace => "bgtrace",
            FuzzFormat::Projections => "projections",
            FuzzFormat::Otf2 => "otf2",
            FuzzFormat::Simgrid => "simgrid",
            FuzzFormat::Goal => "goal",
            FuzzFormat::Trace => "trace",
            FuzzFormat::TraceV3 => "trace-v3",
            FuzzFormat::Jsonl => "jsonl",
        }
    }
}

#[derive(Args)]
pub struct FuzzArgs {
    /// Input format (see below).
    format: FuzzFormat,
    /// A valid input to start from.
    input: PathBuf,
    /// How long to run, e.g. 90s, 5min or 1h.
    #[arg(long, default_value = "10s", value_parser = parse_time)]
    time: SimDuration,
    /// Stop after this many inputs [default: no limit, only --time].
    #[arg(long)]
    max_execs: Option<u64>,
    /// Seed of the mutation stream (the run is reproducible from it).
    #[arg(long, default_value_t = SeedTree::DEFAULT_ROOT)]
    seed: u64,
    /// Most wall time one input (read + replay) may take.
    #[arg(long, default_value = "2s", value_parser = parse_time)]
    time_per_input: SimDuration,
    /// Most one input may raise the process's peak memory (read + replay); also the memory
    /// limit given to the importers and the replay.
    #[arg(long, default_value = "256MiB", value_parser = parse_bytes)]
    memory_per_input: u64,
    /// Scratch folder [default: a new folder under the system temp dir].
    #[arg(long)]
    work: Option<PathBuf>,
    /// No running count on stderr (the summary goes to stdout).
    #[arg(long, short)]
    quiet: bool,
}

/// A duration for people: `90s`, `5min`, `2h`, or the simulator's units.
fn parse_time(s: &str) -> Result<SimDuration, String> {
    let t = s.trim();
    for (suffix, secs) in [("min", 60u64), ("h", 3600)] {
        if let Some(n) = t.strip_suffix(suffix)
            && let Ok(n) = n.trim().parse::<u64>()
        {
            return Ok(SimDuration::from_ps(
                n.saturating_mul(secs).saturating_mul(1_000_000_000_000),
            ));
        }
    }
    parse_duration(t).map_err(|e| e.to_string())
}

fn secs(d: SimDuration) -> Duration {
    Duration::from_nanos(d.as_ps() / 1000)
}

/// Replays an accepted trace within the budget; an error (stuck, over a limit) is an answer.
fn replay_within<'a>(t: impl Into<replay::Input<'a>>, memory: u64) {
    let spec: network_models::NetSpec =
        "alphabeta:lat=1us,bw=10GB/s".parse().expect("a valid spec");
    let mut net = spec.build();
    let cfg = ReplayConfig {
        limits: RunLimits {
            max_events: Some(10_000_000),
            max_sim_time: None,
            max_memory_bytes: Some(memory),
        },
        ..ReplayConfig::default()
    };
    let _ = replay::replay(t, net.as_mut(), &cfg);
}

/// The starting input set and the path (relative to the scratch folder) given to the target.
fn seed_set(f: FuzzFormat, input: &Path) -> Result<(FileSet, PathBuf)> {
    if let Some(fmt) = f.foreign() {
        return Ok(importers::fuzz::input_set(fmt, input)?);
    }
    let t = trace::read_trace_file(input)?;
    let mut bytes = Vec::new();
    let name = match f {
        FuzzFormat::Trace => {
            trace::columnar::write_columnar_flat(&t, &mut bytes)?;
            "seed.trace"
        }
        FuzzFormat::TraceV3 => {
            trace::binary::write_binary(&t, &mut bytes)?;
            "seed-v3.trace"
        }
        _ => {
            trace::text::write_text(&t, &mut bytes)?;
            "seed.jsonl"
        }
    };
    Ok((vec![(PathBuf::from(name), bytes)], PathBuf::from(name)))
}

pub fn fuzz(a: FuzzArgs) -> Result<()> {
    let work = a.work.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!(
            "whatif-fuzz-{}-{}-{}",
            a.format.name(),
            a.seed,
            std::process::id()
        ))
    });
    std::fs::create_dir_all(&work)
        .with_context(|| format!("cannot create scratch folder {}", work.display()))?;
    let (files, entry) = seed_set(a.format, &a.input)?;
    let memory = a.memory_per_input;
    let cfg = FuzzConfig {
        seed: a.seed,
        duration: secs(a.time),
        max_execs: a.max_execs.unwrap_or(u64::MAX),
        opts: importers::ImportOptions {
            max_memory_bytes: memory,
            ..importers::ImportOptions::default()
        },
        time_per_input: secs(a.time_per_input),
        memory_per_input_bytes: memory,
    };
    let opts = cfg.opts.clone();
    let target = |p: &Path| -> Outcome {
        match a.format.foreign() {
            Some(fmt) => match importers::import(fmt, p, &opts) {
                Ok(imp) => {
                    replay_within(&imp.trace, memory);
                    Outcome::Accepted
                }
                Err(_) => Outcome::Rejected,
            },
            None => match trace::read_repeated_file(p) {
                Ok(r) => {
                    replay_within(&r, memory);
                    Outcome::Accepted
                }
                Err(_) => Outcome::Rejected,
            },
        }
    };
    let r = importers::fuzz::fuzz_files(
        a.format.name(),
        &files,
        &entry,
        &work,
        &cfg,
        target,
        |r, t| {
            if a.quiet {
                return;
            }
            eprint!(
                "\r{:>6.0} s  {} execs ({:.0}/s), {} accepted, {} rejected, {} panics, {} over budget   ",
                t.as_secs_f64(),
                r.execs,
                r.execs as f64 / t.as_secs_f64(),
                r.accepted,
                r.rejected,
                r.panics.len(),
                r.over_budget.len()
            )
        },
    )?;
    if !a.quiet {
        eprintln!();
    }
    println!(
        "fuzz-import {} {}: {} execs, {} accepted and replayed, {} rejected with an error, {} panics, {} over budget; slowest input {:.3} s, most peak memory {} (seed {})",
        a.format.name(),
        a.input.display(),
        r.execs,
        r.accepted,
        r.rejected,
        r.panics.len(),
        r.over_budget.len(),
        r.slowest.as_secs_f64(),
        human_bytes(r.most_memory_bytes),
        a.seed
    );
    for p in &r.panics {
        println!("  panic input saved: {}", p.display());
    }
    for (p, what) in &r.over_budget {
        println!("  over budget ({what}): {}", p.display());
    }
    if !r.panics.is_empty() || !r.over_budget.is_empty() {
        bail!(
            "findings; reproduce with: whatif fuzz-import {} {} --seed {}",
            a.format.name(),
            a.input.display(),
            a.seed
        );
    }
    Ok(())
}
