//! `whatif`: predict how a message-driven parallel program runs on a machine you don't have, by
//! replaying a trace of its execution blocks on a simulated one.

mod analyze_cmd;
mod bench;
mod calibrate_cmd;
mod demo;
mod emulate_cmd;
mod fuzz_cmd;
mod lb_cmd;
mod model_cmd;
mod opsim_cmd;
mod phases_cmd;
mod predict_cmd;
mod spelling;
mod sweep_cmd;

use workflow::{files, limits, memory, progress};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use anyhow::{Result, anyhow, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use network_models::{NET_HELP, NetSpec};
use replay::{Mapping, ReplayError};
use sim_core::units::{parse_bytes, parse_duration};
use sim_core::{QueueKind, Ratio, SeedTree, SimDuration, SimTime};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;
use trace::{Format, Repeated, TraceSummary};

#[derive(Parser)]
#[command(
    name = "whatif",
    version,
    about = "What-if performance prediction for message-driven parallel programs",
    long_about = "whatif replays a trace of execution blocks (one non-preemptive run of an entry method, \
with its duration, triggering message, dependencies and sends) on a simulated machine: \
any number of PEs, any object placement, CPU speed and network model.",
    after_help = TOP_HELP
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

/// The top-level help's closing text: the first steps, and where the words are defined.
const TOP_HELP: &str = "\
Quick start:
  whatif demo                                  # a study, a replay and an HTML report in whatif-demo/
  whatif run                                   # the built-in 3-D halo on 512 PEs

Examples:
  whatif gen ring --ranks 1000 --iters 100 --out r.trace
  whatif inspect r.trace
  whatif replay r.trace --net alphabeta:lat=1us,bw=10GB/s

`whatif COMMAND --help` explains a command with examples. Every command speaks the same words
(docs/CLI.md): --pes for the simulated machine's processors, --out FILE or DIR for what it
writes, -q for a quiet stderr, --json for results as JSON, durations with units (100us).";

#[derive(Subcommand)]
enum Cmd {
    /// Replay the built-in default scenario (3-D halo, 8x8x8 ranks, 20 iterations) and print the prediction.
    #[command(
        after_help = run_help(),
        mut_arg("net", |a| a.help("Network model, e.g. `latency:lat=5us` or `alphabeta:lat=1us,bw=10GB/s` [default: alphabeta:lat=1us,bw=10GB/s, the built-in trace's]. Models and parameters are listed below")),
        mut_arg("force", |a| a.help("Write the --out folder into a non-empty folder that is not a whatif output (its other files are kept)")),
        mut_arg("pes", |a| a.help("Simulated PEs, or `objects`: one PE per rank [default: 512, one per rank]"))
    )]
    Run(RunArgs),
    /// Generate a synthetic workload trace (pingpong, ring, halo2d, halo3d, pipeline).
    #[command(after_help = GEN_HELP)]
    Gen(GenArgs),
    /// Print a trace's counts, entry-method table and time range.
    #[command(after_help = INSPECT_HELP)]
    Inspect(InspectArgs),
    /// Replay a trace on a simulated machine and report predicted timings.
    #[command(after_help = replay_help())]
    Replay(ReplayArgs),
    /// Convert a trace from another tool (BigSim, Projections, SimGrid, GOAL, OTF2) into a whatif trace.
    #[command(after_help = IMPORT_HELP)]
    Import(ImportArgs),
    /// Write a whatif trace in another tool's format (GOAL, for LogGOPSim and its successors).
    #[command(after_help = EXPORT_HELP)]
    Export(ExportArgs),
    /// Write the machine of a `flow` network as a SimGrid platform (platform.xml, hostfile) and
    /// print the `smpirun -replay` command that runs a SimGrid trace on it, to check whatif's
    /// predictions against SimGrid's.
    #[command(after_help = PLATFORM_HELP)]
    Platform(PlatformArgs),
    /// Run a built-in message-driven program on V virtual PEs in simulated time and record its
    /// trace (BigSim-style emulation).
    #[command(after_help = emulate_cmd::programs_help())]
    Emulate(emulate_cmd::EmulateArgs),
    /// Run a built-in program for real on k threads and report wall time per iteration (to
    /// check predictions against this machine).
    #[command(after_help = emulate_cmd::NATIVE_HELP)]
    RunNative(emulate_cmd::NativeArgs),
    /// Compare load-balancing strategies on a trace: static metrics of each map and its
    /// replayed iteration time on the simulated network.
    #[command(after_help = lb_cmd::lb_help())]
    Lb(lb_cmd::LbArgs),
    /// Why is it slow? The critical path of a replay (compute per entry, network by
    /// component, idle) and diagnoses ranked by the time a re-simulation without
    /// each cause saves, with the command that reproduces each.
    #[command(after_help = analyze_cmd::analyze_help())]
    Analyze(analyze_cmd::AnalyzeArgs),
    /// Communication phases (MK): pipelines and synchronous exchanges found from the message
    /// graph, each with MK's analytic time beside its simulated time.
    #[command(after_help = phases_cmd::PHASES_HELP)]
    Phases(phases_cmd::PhasesArgs),
    /// From small runs to large predictions: emulate a program at a few small PE counts, fit
    /// Extra-P's normal form with a 95% band, and predict target PE counts analytically and by
    /// simulation at that scale, explaining disagreements with MK's phases.
    #[command(after_help = predict_cmd::PREDICT_HELP)]
    Predict(predict_cmd::PredictArgs),
    /// Fit scaling models (Extra-P's normal form, leave-one-out cross-validation) to
    /// measurements: an Extra-P text file or a sweep's results.csv; predict with 95% bands.
    #[command(after_help = model_cmd::MODEL_HELP)]
    Model(model_cmd::ModelArgs),
    /// Set cost or machine parameters of a study so that its predictions match
    /// measurements (MK's calibration); writes the calibrated study.
    #[command(after_help = calibrate_cmd::CALIBRATE_HELP)]
    Calibrate(calibrate_cmd::CalibrateArgs),
    /// Run a study: every point of a TOML study file (workload x machine x network x LB x
    /// sweep axes), in parallel, into CSV and JSON results.
    #[command(after_help = sweep_cmd::SWEEP_HELP)]
    Sweep(sweep_cmd::SweepArgs),
    /// Join the outputs of `whatif sweep --shard` runs into the single-run result.
    #[command(after_help = sweep_cmd::MERGE_HELP)]
    Merge(sweep_cmd::MergeArgs),
    /// Write a self-contained HTML report (SVG charts) for a sweep folder and/or a replay
    /// `--out` folder.
    #[command(after_help = REPORT_HELP)]
    Report(ReportArgs),
    /// Run a small built-in study end to end (sweep, a detailed replay, the HTML report) into
    /// one folder, in well under a minute.
    #[command(after_help = demo::DEMO_HELP)]
    Demo(demo::DemoArgs),
    /// Measure simulator speed (simulated messages per second) on 3-D halo workloads.
    #[command(after_help = bench::BENCH_HELP)]
    Bench(bench::BenchArgs),
    /// Developer tool: mutate a valid input again and again (any of the eight formats whatif
    /// reads), read and replay each, and check that none panics or goes over its time or
    /// memory budget (every input gives a result or a clear error).
    #[command(after_help = fuzz_cmd::FUZZ_HELP)]
    FuzzImport(fuzz_cmd::FuzzArgs),
}

fn run_help() -> String {
    format!(
        "Examples:
  whatif run                                   # the built-in 3-D halo on 512 PEs
  whatif run --net latency:lat=50us --json     # the same at 50 us latency, as JSON
  whatif run --pes 64 --map block --out run1   # 8 ranks per PE; every output in run1/

{NET_HELP}"
    )
}

fn replay_help() -> String {
    format!(
        "Examples:
  whatif gen halo3d --dims 4x4x4 --iters 20 --out h.trace
  whatif replay h.trace --net alphabeta:lat=1us,bw=10GB/s
  whatif replay h.trace --net latency:lat=5us --pes 8 --map block --json
  whatif replay h.trace --net contention:topo=torus:4x4x4,bw=10GB/s --out run1 --report

{NET_HELP}"
    )
}

const GEN_HELP: &str = "\
Examples:
  whatif gen ring --ranks 1000 --iters 100 --out r.trace
  whatif gen halo3d --dims 10x10x10 --iters 100 --compute 100us --bytes 64KiB --out h.trace
  whatif gen halo2d --dims 8x8 --periodic --jitter 0.1 --out h2.jsonl   # the JSON-lines text form
  whatif gen pipeline --stages 16 --iters 50 --net latency:lat=5us --out p.trace";

const INSPECT_HELP: &str = "\
Examples:
  whatif gen halo3d --dims 4x4x4 --out h.trace
  whatif inspect h.trace
  whatif inspect h.trace --json --objects placement.csv   # placement.csv: for --map file:PATH
  whatif inspect ../shared/data/charm-stencil3d/logs/p2/stencil3d.prj.sts --format projections  # notes on stderr";

const EXPORT_HELP: &str = "\
Examples:
  whatif gen halo3d --dims 4x4x4 --out h.trace
  whatif export goal h.trace --out h.goal
  whatif replay h.goal --format goal --net loggops   # LogGOPSim's semantics, exactly";

const REPORT_HELP: &str = "\
Examples:
  whatif sweep scenarios/studies/stencil-latency-small.toml --out study
  whatif report study                           # study/report.html
  whatif gen halo3d --dims 4x4x4 --out h.trace && whatif replay h.trace --out run1
  whatif report run1 --out run1.html";

#[derive(Args)]
struct ReportArgs {
    /// A folder from `whatif sweep` (results.json, manifest.json), from `whatif replay --out`
    /// (summary.json, timeline.csv, ...), or from `whatif demo` (both, in sweep/ and replay/).
    dir: PathBuf,
    /// Output file [default: DIR/report.html].
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// No summary on stderr.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum ExportFormat {
    /// A GOAL schedule: per rank (object) recv / calc / send operations with requires.
    Goal,
}

#[derive(Args)]
struct ExportArgs {
    /// Output format.
    format: ExportFormat,
    /// Trace file (binary or JSON lines).
    trace: PathBuf,
    /// Output file.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// No summary on stderr.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Args)]
struct PlatformArgs {
    /// A `flow` network spec, e.g. `flow:topo=torus:4x4x4,hop=1us,bw=10GB/s,sharing=cm02`.
    #[arg(long)]
    net: NetSpec,
    /// Number of ranks (PEs); at most 1024, as every pair gets a route.
    #[arg(long)]
    pes: u32,
    /// Host speed for SimGrid `compute` actions (pass the same to `whatif replay`).
    #[arg(long, default_value_t = 1e9, value_parser = parse_flops)]
    flops_per_s: f64,
    /// Output folder (platform.xml, hostfile).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Replace a non-empty folder that is not a previous whatif output.
    #[arg(long)]
    force: bool,
    /// No summary on stderr (the commands to run go to stdout).
    #[arg(long, short)]
    quiet: bool,
}

const PLATFORM_HELP: &str = "\
The platform mirrors the flow model: one host per rank, one SimGrid link per directed link of
the topology (latency hop, bandwidth bw), the start-up latency lat on a FATPIPE link per node,
and a Full routing zone with the model's route for every pair. With the printed --cfg options
(CM02, no cross-traffic, TCP-gamma 1e30 (no window), the spec's factors and weight-S) SimGrid shares links as
`flow` does with sharing=cm02 (or lv08). SimGrid traces replay with SimGrid 3.32's MPI
protocol and collectives by default (`--mpi-protocol simgrid --collectives smpi`), so the two
run the same messages at the same moments.

Examples (a 32-rank SimGrid trace; the smpirun line is printed whole by the first command):
  whatif platform --net flow:topo=torus:4x8,lat=1us,hop=1us,bw=100MB/s,sharing=cm02 --pes 32 --out plat
  smpirun -np 32 -platform plat/platform.xml -hostfile plat/hostfile -replay ../shared/data/simgrid-ti/smpi_replay.txt <cfg...>
  whatif replay ../shared/data/simgrid-ti/smpi_replay.txt --format simgrid \\
      --net flow:topo=torus:4x8,lat=1us,hop=1us,bw=100MB/s,sharing=cm02
  whatif platform --net flow:topo=fattree:k=4,levels=2,bw=10GB/s --pes 16 --out plat2 -q";

const IMPORT_HELP: &str = "\
Examples:
  whatif gen ring --ranks 4 --out r.trace && whatif replay r.trace --out run1   # run1/projections/
  whatif import projections run1/projections/predicted.sts --out p.trace   # .log or .log.gz
  whatif import bgtrace ../shared/data/bigsim-jacobi2d/traceJ0 --out j0.trace
  whatif replay j0.trace --net recorded --recorded-order   # the recorded run, exactly

Any replay reads a foreign trace directly with --format (`whatif replay traceJ0 --format bgtrace`),
and `whatif import otf2 traces.otf2 --out o.trace` reads Score-P archives in a build with
--features otf2. The crate docs of `importers` give the exact record-to-block mapping of each
format.";

#[derive(Args)]
struct ImportArgs {
    /// Input format.
    #[arg(value_parser = parse_format, help = format_help())]
    format: importers::Format,
    /// Input file or folder (see the format list).
    input: PathBuf,
    /// Output trace; `.jsonl` writes the JSON-lines text form, anything else the binary form;
    /// a final `.zst` compresses either (`run.trace.zst`: often 10-20x smaller, read as is).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    #[command(flatten)]
    opts: ImportOpts,
    /// Refuse an input whose converted trace is estimated to need more memory than this,
    /// e.g. `32GiB` [default: 3/4 of this computer's memory]. Checked before it is built.
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    max_memory: Option<u64>,
    /// No progress or notes on stderr.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Args, Clone)]
#[command(next_help_heading = "Foreign traces (with --format)")]
struct ImportOpts {
    /// Compute speed for converting flop counts into durations (SimGrid `compute` actions),
    /// e.g. 1e9 or 2.5e10.
    #[arg(long, default_value_t = 1e9, value_parser = parse_flops)]
    flops_per_s: f64,
    /// Largest eager message (GOAL): larger sends complete only when the receiver has matched
    /// them (rendezvous) [default: the S of a `loggops` --net, else 65535].
    #[arg(long, value_parser = parse_bytes)]
    eager_limit: Option<u64>,
    /// How MPI collectives become messages: `smpi` (SimGrid 3.32's default selector, what
    /// `smpirun -replay` runs: linear reduce/gather/scatter, binomial bcast, Open MPI's choice
    /// of all-to-all by size) or `classic` (whatif's: dissemination barrier, binomial reduce,
    /// pairwise all-to-all, ring allgather) [default: smpi for SimGrid traces, classic for
    /// OTF2].
    #[arg(long)]
    collectives: Option<importers::mpi::Collectives>,
    /// MPI point-to-point protocol (SimGrid and OTF2 traces): `simgrid` (SimGrid 3.32: every
    /// transfer starts when its receive is posted, sends of 64 KiB or more block until their
    /// transfer ends, 16 B of envelope), `openmpi` (eager up to 64 KiB, rendezvous above) or
    /// `eager` (transfers start at the send, sends never block); values can be changed, e.g.
    /// `simgrid:detached=1MiB`, `openmpi:eager=12KiB,detached=12KiB` [default: simgrid for
    /// SimGrid traces, eager for OTF2].
    #[arg(long, value_name = "PROTOCOL")]
    mpi_protocol: Option<importers::mpi::MpiProtocol>,
}

fn parse_flops(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!(
            "`{s}` is not a positive number of flops per second (e.g. 1e9)"
        )),
    }
}

/// A size in bytes with an optional unit (`256MiB`).
pub(crate) fn parse_bytes_arg(s: &str) -> Result<u64, String> {
    parse_bytes(s).map_err(|e| e.to_string())
}

/// A time window `T0..T1` (durations with units from the start of the run).
fn parse_window(s: &str) -> Result<(SimTime, SimTime), String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("`{s}`: expected a window T0..T1, e.g. 1ms..1.5ms"))?;
    let t = |x: &str| {
        parse_duration(x.trim())
            .map(|d| SimTime::from_ps(d.as_ps()))
            .map_err(|e| format!("`{s}`: {e}"))
    };
    let (a, b) = (t(a)?, t(b)?);
    if b <= a {
        return Err(format!("`{s}`: the window must end after it starts"));
    }
    Ok((a, b))
}

pub(crate) fn parse_format(s: &str) -> Result<importers::Format, String> {
    s.parse()
}

fn format_help() -> String {
    let mut h = String::from("Input format:");
    for f in importers::Format::ALL {
        h.push_str(&format!("\n  {:<12} {}", f.name(), f.describe()));
    }
    h
}

#[derive(Clone, Copy, ValueEnum)]
enum GenKind {
    /// Two ranks bounce a message K round trips.
    Pingpong,
    /// N ranks, each sends to its right neighbour every iteration.
    Ring,
    /// 2-D halo exchange on an X x Y grid of ranks.
    Halo2d,
    /// 3-D halo exchange on an X x Y x Z grid of ranks.
    Halo3d,
    /// MK's pipelined elimination: D stages in a chain, K items.
    Pipeline,
}

#[derive(Args)]
struct GenArgs {
    /// Workload shape.
    kind: GenKind,
    /// Ranks (ring).
    #[arg(long, default_value_t = 8)]
    ranks: u32,
    /// Grid of ranks (halo2d: XxY, halo3d: XxYxZ).
    #[arg(long, default_value = "4x4x4")]
    dims: String,
    /// Wrap the halo grid around (torus neighbours).
    #[arg(long)]
    periodic: bool,
    /// Stages (pipeline depth D = processors in the chain).
    #[arg(long, default_value_t = 8)]
    stages: u32,
    /// Iterations (round trips for pingpong, items for pipeline).
    #[arg(long, default_value_t = 10)]
    iters: u32,
    /// Compute time per block, e.g. 100us.
    #[arg(long, default_value = "100us", value_parser = parse_duration)]
    compute: SimDuration,
    /// Bytes per message, e.g. 65536 or 64KiB.
    #[arg(long, default_value = "65536", value_parser = parse_bytes)]
    bytes: u64,
    /// Relative compute jitter, e.g. 0.1 for +-10% (uniform, seeded).
    #[arg(long, default_value = "0", value_parser = Ratio::parse)]
    jitter: Ratio,
    /// Root random seed.
    #[arg(long, default_value_t = SeedTree::DEFAULT_ROOT)]
    seed: u64,
    /// Network model to record as the trace's default for replay (see `whatif replay --help`).
    #[arg(long)]
    net: Option<NetSpec>,
    /// Output file; `.jsonl` writes the JSON-lines text form, anything else the binary form;
    /// a final `.zst` compresses either (`run.trace.zst`: often 10-20x smaller, read as is).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Refuse a trace estimated to need more memory than this while it is generated, e.g.
    /// `4GiB` [default: 3/4 of this computer's memory].
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes_arg)]
    max_memory: Option<u64>,
    /// No progress or summary on stderr.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Args)]
struct InspectArgs {
    /// Trace file (binary or JSON lines), or with --format a foreign trace.
    trace: PathBuf,
    /// Read the input as this foreign format instead of a whatif trace (as `whatif import`
    /// does, with its notes on stderr): bgtrace, projections, simgrid, goal, otf2 (otf2 in
    /// builds with the `otf2` feature).
    #[arg(long, value_parser = parse_format)]
    format: Option<importers::Format>,
    #[command(flatten)]
    import: ImportOpts,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    /// Also write the recorded placement of the objects to this CSV (`object,name,pe`): a
    /// placement file for `--map file:PATH`.
    #[arg(long, value_name = "FILE")]
    objects: Option<PathBuf>,
    /// No notes on stderr (the summary goes to stdout).
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Args, Clone)]
#[command(next_help_heading = "Machine")]
struct MachineArgs {
    /// Network model, e.g. `latency:lat=5us` or `alphabeta:lat=1us,bw=10GB/s` [default: the
    /// trace's recorded model, else ideal]. Models and parameters are listed below.
    #[arg(long, conflicts_with_all = ["net_file", "machine"])]
    net: Option<NetSpec>,
    /// A named machine instead of --net: `paragon` (the Intel Paragon of MK's ATM2D study:
    /// 2-D mesh, 120 us latency, 30 MB/s).
    #[arg(long, value_name = "NAME", value_parser = workflow::machine::parse_machine, conflicts_with = "net_file")]
    machine: Option<NetSpec>,
    /// Network model from a TOML file: a `[net]` table (or top-level keys) with
    /// `model = "..."` and the model's parameters, e.g. `model = "hops"`, `topo = "torus:8x8x8"`,
    /// `lat = "1us"`, `bw = "10GB/s"`.
    #[arg(long, value_name = "FILE")]
    net_file: Option<PathBuf>,
    /// Simulated PEs, or `objects`: one PE per object, each object on its own PE (the
    /// "infinite processors" bound) [default: as recorded].
    #[arg(long)]
    pes: Option<workflow::PeCount>,
    /// Object placement: recorded (folded/spread when --pes differs), block, round-robin, or
    /// `file:PATH`: a CSV with `name` and `pe` (or `to_pe`) columns placing objects by name,
    /// as `whatif inspect --objects` and `whatif lb --maps` write them (objects it does not
    /// name stay as recorded), e.g. to place a 1-PE log's chares as a 2-PE run placed them.
    #[arg(long, default_value = "recorded")]
    map: workflow::MapSpec,
    /// Factor on recorded block durations and send offsets (0.5 = a CPU twice as fast)
    /// [default: the factor recorded in the trace, else 1].
    #[arg(long, value_parser = workflow::machine::parse_cpu_scale)]
    cpu_scale: Option<Ratio>,
    /// The runtime's scheduling cost: CPU time a PE spends before every block it starts,
    /// e.g. 500ns (Lee's per-block overhead; with it, more objects per PE cost time).
    #[arg(long, default_value = "0", value_parser = parse_duration)]
    block_overhead: SimDuration,
    /// CPU time a PE spends on each message between two of its own objects, paid at the start
    /// of the block it triggers, e.g. 200ns (remote messages pay the network model's costs).
    #[arg(long, default_value = "0", value_parser = parse_duration)]
    local_msg_cost: SimDuration,
    /// OS noise on the CPUs, repeatable: `detour:every=1ms,lose=25us[,phase=aligned|random]`
    /// (each PE loses `lose` of every `every`; random phase per PE by default),
    /// `trace:file=noise.txt[,phase=aligned|random]` (detours from a LogGOPSim noise trace:
    /// `<start-ns> <duration-ns>` lines, repeated, each PE from its own offset),
    /// `jitter:max=5us` (every working block takes an extra U[0, max] of CPU) and
    /// `jitter:cv=0.1` (every working block's duration times a log-normal factor of mean 1 and
    /// that coefficient of variation). Draws and phases come from --seed.
    #[arg(long, value_name = "SPEC", value_parser = workflow::machine::parse_noise)]
    noise: Vec<String>,
    /// Run ready blocks by their priority (smaller first) instead of FIFO.
    #[arg(long)]
    priority: bool,
    /// What-if: run ready blocks by critical-path priority (the block with the longest chain
    /// of compute ahead of it first; implies --priority). `whatif analyze` measures it.
    #[arg(long)]
    critical_path_priority: bool,
    /// What-if, repeatable: make an entry method or an object faster, `entry:NAME=F` (every
    /// block of entry NAME, and its send offsets, divided by F) or `object:ID=F`, e.g.
    /// `--speedup entry:compute=2`. `whatif analyze` measures the hottest ones.
    #[arg(long, value_name = "SPEC")]
    speedup: Vec<analysis::transform::Speedup>,
    /// Keep each recorded PE's blocks in their recorded order (a block also waits for the
    /// previous block its PE ran in the recording). With `--net recorded` this replays the
    /// recorded schedule itself: a check that the import is faithful.
    #[arg(long)]
    recorded_order: bool,
    /// Let an object's blocks run in any order their messages allow, instead of in trace order
    /// (traces from the emulator keep each object's blocks in order by default, because an
    /// object's state carries over between its entry methods).
    #[arg(long)]
    free_object_order: bool,
    /// Event queue (results are identical; radix is faster on large runs).
    #[arg(long, default_value = "radix")]
    queue: QueueKind,
    /// Stop with an error after this many events.
    #[arg(long)]
    max_events: Option<u64>,
    /// Stop with an error if simulated time passes this, e.g. 10s.
    #[arg(long, value_parser = parse_duration)]
    max_time: Option<SimDuration>,
    /// Root random seed: --noise draws its per-PE phases and jitter from sub-seeds of it, so a
    /// run is reproduced by its seed (recorded in the results).
    #[arg(long, default_value_t = SeedTree::DEFAULT_ROOT)]
    seed: u64,
    /// Refuse a replay estimated to need more memory than this, e.g. `32GiB` [default: 3/4
    /// of this computer's memory]. The estimate is made before anything is allocated.
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    max_memory: Option<u64>,
    /// Simulate more PEs than the trace has objects on machines of over a million PEs (the
    /// extra PEs stay idle; refused without this flag; the memory limit still applies);
    /// write output folders into a non-empty folder that is not a whatif output (its other
    /// files are kept); write projections/ above 65536 PEs.
    #[arg(long)]
    force: bool,
}

#[derive(Args)]
#[command(next_help_heading = "Outputs")]
struct OutputArgs {
    /// Print one JSON object with the simulated results instead of the human summary.
    #[arg(long)]
    json: bool,
    /// Write every output into this folder: trace.json (Chrome trace events, opens in
    /// Perfetto / chrome://tracing), projections/ (Projections 11.0 logs), otf2/ (an OTF2
    /// archive for Vampir, in builds with the `otf2` feature), summary.json, timeline.csv,
    /// pe.csv, entries.csv, iterations.csv, links.csv, and the analyses as CSV:
    /// time_profile, usage, communication, grain_sizes, extrema, metrics (Rover's
    /// utilisation, balance, grain and channel utilisation over time), snapshots, clusters
    /// (k-means of PEs; above 65,536 PEs projections/ holds only these representatives' logs
    /// unless --force), comm_matrix, message_sizes.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// With --out: also analyse the run (critical path and diagnoses re-simulated as `whatif
    /// analyze` does: DIR/analysis.json, DIR/critical_path.csv) and write the HTML report
    /// (DIR/report.html).
    #[arg(long, requires = "out")]
    report: bool,
    /// With --out: write trace.json and the Projections logs gzip-compressed, as
    /// trace.json.gz (Perfetto opens it) and predicted.<pe>.log.gz (Projections and
    /// `whatif import projections` read them); the CSV files stay plain.
    #[arg(long, requires = "out")]
    compress: bool,
    /// With --out: the PEs whose blocks trace.json and timeline.csv hold: `auto` (every PE
    /// while trace.json stays under 256 MiB, else the k-means representatives of
    /// clusters.csv, and a note in notes.txt), `all`, `representatives`, or a list such as
    /// `0,4,10-20`.
    #[arg(long, requires = "out", value_name = "PES", default_value = "auto")]
    trace_pes: analysis::select::PeChoice,
    /// With --out: only the blocks that overlap this window go into trace.json and
    /// timeline.csv, e.g. `1ms..1.5ms` (the analyses and CSV summaries still cover the run).
    #[arg(long, requires = "out", value_name = "T0..T1", value_parser = parse_window)]
    trace_window: Option<(SimTime, SimTime)>,
    /// With --out: time-bin width of the binned analyses (time_profile.csv,
    /// communication.csv, metrics.csv), e.g. 10us [default: the makespan over 100].
    #[arg(long, requires = "out", value_parser = parse_duration)]
    bin: Option<SimDuration>,
    /// With --out and `--trace-pes auto`: the size trace.json should stay under, e.g. 1GiB.
    #[arg(long, requires = "out", value_name = "BYTES", default_value = "256MiB", value_parser = parse_bytes_arg)]
    trace_budget: u64,
    /// Write the predicted timeline (one row per block) to this CSV file.
    #[arg(long)]
    timeline: Option<PathBuf>,
    /// Write per-PE busy/idle time to this CSV file.
    #[arg(long)]
    per_pe: Option<PathBuf>,
    /// Write per-link and per-NIC traffic (bytes, busy time, max queue) to this CSV file
    /// (`contention` model; other models write the header only).
    #[arg(long)]
    links: Option<PathBuf>,
    /// Write the network cost per entry method (messages, wire, queueing, overhead) to this CSV.
    #[arg(long)]
    entries: Option<PathBuf>,
    /// No progress, notes or simulator speed on stderr.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Args)]
struct ReplayArgs {
    /// Trace file (binary or JSON lines), or with --format a foreign trace.
    trace: PathBuf,
    /// Read the input as this foreign format instead of a whatif trace (as `whatif import`
    /// does): bgtrace, projections, simgrid, goal, otf2 (otf2 in builds with the `otf2`
    /// feature).
    #[arg(long, value_parser = parse_format)]
    format: Option<importers::Format>,
    #[command(flatten)]
    import: ImportOpts,
    /// GOAL with `--net loggops`: use the block replay instead of the operation-level
    /// simulator (which gives LogGOPSim's finishing time exactly, and is chosen by default
    /// when no option needs blocks).
    #[arg(long)]
    blocks: bool,
    #[command(flatten)]
    machine: MachineArgs,
    #[command(flatten)]
    out: OutputArgs,
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    machine: MachineArgs,
    #[command(flatten)]
    out: OutputArgs,
}

/// An error in what the user gave (a file, a flag, a size): exit status 2.
#[derive(Debug)]
pub struct BadInput(pub String);

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

/// A run that could not finish although its input was accepted (exit status 1).
#[derive(Debug)]
pub struct RunFailed(pub String);

impl std::fmt::Display for RunFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RunFailed {}

/// Exit status 1 for a run that failed (a replay that cannot finish, a run limit reached:
/// [`RunFailed`], or what `workflow::error::is_run_failure` counts: a stuck replay, a full or
/// read-only disk, an I/O error of the machine); 2 for everything else: whatever a command
/// refuses is bad input by default, so a new check needs no registration to exit 2.
fn exit_status(e: &anyhow::Error) -> u8 {
    let failed =
        e.chain().any(|c| c.is::<RunFailed>()) || workflow::error::is_run_failure(e.as_ref());
    if failed { 1 } else { 2 }
}

/// The error and its causes on one line (`workflow::error::render`).
fn render(e: &anyhow::Error) -> String {
    workflow::error::render(e.as_ref())
}

/// A reader that stops early (`whatif inspect t.trace | head`) closes the pipe: end quietly
/// with the shell's SIGPIPE status instead of a panic message (the standard library reports a
/// closed stdout from `println!` as a panic; this crate forbids the unsafe code that would
/// restore the default SIGPIPE action).
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.starts_with("failed printing to stdout") && msg.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}

/// On SIGINT or SIGTERM: remove the run's temporary files and staging folders (outputs
/// already in place, and the previous outputs, stay), say so, and exit with 130.
/// What an interrupt should add to its message (e.g. how to resume a sweep).
static INTERRUPT_NOTE: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Sets (or clears) the line an interrupt prints after its message.
pub(crate) fn set_interrupt_note(note: Option<String>) {
    if let Ok(mut g) = INTERRUPT_NOTE.lock() {
        *g = note;
    }
}

fn stop_cleanly_on_interrupt() {
    let _ = ctrlc::set_handler(|| {
        let n = safe_output::remove_temporaries();
        eprintln!(
            "\ninterrupted: stopped{}; outputs already written and earlier outputs are untouched",
            if n > 0 {
                format!(", {n} unfinished output(s) removed")
            } else {
                String::new()
            }
        );
        if let Ok(g) = INTERRUPT_NOTE.try_lock()
            && let Some(note) = g.as_ref()
        {
            eprintln!("{note}");
        }
        std::process::exit(130);
    });
}

fn main() -> ExitCode {
    quiet_on_closed_stdout();
    stop_cleanly_on_interrupt();
    let args: Vec<String> = std::env::args().collect();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return command_line_error(e),
    };
    spelling::argv_notes(&args);
    let result = dispatch(cli);
    memory::log_at_exit();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", render(&e));
            if e.chain()
                .any(|c| matches!(c.downcast_ref(), Some(ReplayError::TooLarge { .. })))
            {
                eprintln!(
                    "(the estimate is made before anything is allocated; raise the limit with --max-memory, e.g. --max-memory 64GiB)"
                );
            }
            ExitCode::from(exit_status(&e))
        }
    }
}

/// Most bytes of a command-line error shown: clap quotes the offending value whole, and a
/// value of a million characters would otherwise fill the terminal.
const COMMAND_LINE_ERROR_BYTES: usize = 4000;

/// A command line clap refused (or `--help`/`--version`, shown whole on stdout): the
/// message cut to [`COMMAND_LINE_ERROR_BYTES`], exit status 2.
fn command_line_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
    }
    let text = e.render().to_string();
    eprint!("{}", sim_core::inputs::cut(&text, COMMAND_LINE_ERROR_BYTES));
    if !text.ends_with('\n') || text.len() > COMMAND_LINE_ERROR_BYTES {
        eprintln!();
    }
    ExitCode::from(2)
}

fn dispatch(cli: Cli) -> Result<()> {
    match cli.cmd {
        Cmd::Run(a) => run_default(a),
        Cmd::Gen(a) => gen_cmd(a),
        Cmd::Inspect(a) => inspect(a),
        Cmd::Import(a) => import_cmd(a),
        Cmd::Export(a) => export_cmd(a),
        Cmd::Platform(a) => platform_cmd(a),
        Cmd::Replay(a) => {
            let inputs = input_files(a.format, &a.trace);
            let o = a.out.spec();
            o.refuse_overwrite(&inputs, &a.machine.spec())?;
            if a.format == Some(importers::Format::Goal)
                && let Some(spec @ NetSpec::LogGops(_)) = a.machine.net.as_ref()
            {
                let m = &a.machine;
                let why = opsim_cmd::needs_blocks(
                    !o.paths().is_empty(),
                    &[
                        ("--pes", m.pes.is_some()),
                        (
                            "--map",
                            m.map != workflow::MapSpec::Builtin(Mapping::Recorded),
                        ),
                        ("--cpu-scale", m.cpu_scale.is_some()),
                        ("--priority", m.priority),
                        ("--recorded-order", m.recorded_order),
                        ("--noise", !m.noise.is_empty()),
                        ("--block-overhead", m.block_overhead > SimDuration::ZERO),
                        ("--local-msg-cost", m.local_msg_cost > SimDuration::ZERO),
                    ],
                    a.blocks,
                );
                match why {
                    None => {
                        return opsim_cmd::run(&a.trace, spec, true, a.out.json, a.out.quiet);
                    }
                    Some(why) if !a.out.quiet && !a.blocks => eprintln!(
                        "note: {why} needs the block replay, whose LogGOPS differs from LogGOPSim's operation semantics (see `whatif replay --help`)"
                    ),
                    Some(_) => {}
                }
            }
            // Every output path is checked now, not after the replay.
            o.check_paths(a.machine.force)?;
            let trace = workflow::load(
                &a.trace,
                a.format,
                &a.import.spec(),
                &a.machine.spec(),
                a.out.quiet,
            )?;
            replay_and_report(trace, &a.machine, &a.out)
        }
        Cmd::Emulate(a) => emulate_cmd::emulate(a),
        Cmd::RunNative(a) => emulate_cmd::run_native(a),
        Cmd::Lb(a) => lb_cmd::lb(a),
        Cmd::Analyze(a) => analyze_cmd::analyze(a),
        Cmd::Phases(a) => phases_cmd::phases(a),
        Cmd::Predict(a) => predict_cmd::predict(a),
        Cmd::Model(a) => model_cmd::model(a),
        Cmd::Calibrate(a) => calibrate_cmd::calibrate(a),
        Cmd::Sweep(a) => sweep_cmd::sweep(a),
        Cmd::Merge(a) => sweep_cmd::merge(a),
        Cmd::Report(a) => {
            let p = report::html::write(&a.dir, a.out.as_deref())?;
            if !a.quiet {
                eprintln!("wrote {}", p.display());
            }
            Ok(())
        }
        Cmd::Demo(a) => demo::demo(a),
        Cmd::Bench(a) => bench::run(a),
        Cmd::FuzzImport(a) => fuzz_cmd::fuzz(a),
    }
}

fn import_cmd(a: ImportArgs) -> Result<()> {
    let inputs = input_files(Some(a.format), &a.input);
    limits::refuse_overwrite(&inputs, &[("--out", &a.out)])?;
    files::check_outputs(&[("--out", &a.out)], &[], false)?;
    let t0 = Instant::now();
    let mut progress = progress::Reporter::new(a.quiet);
    let imp = importers::import_with(
        a.format,
        &a.input,
        &workflow::input::import_options(&a.opts.spec(), None, a.max_memory),
        &mut progress,
    )?;
    progress.done();
    if !a.quiet {
        for n in &imp.notes {
            eprintln!("{n}");
        }
    }
    let t = &imp.trace;
    trace::write_trace_file(t, &a.out, Format::from_path(&a.out))?;
    if a.quiet {
        return Ok(());
    }
    eprintln!(
        "wrote {} ({} objects, {} blocks, {} sends) in {:.2} s",
        a.out.display(),
        t.objects.len(),
        t.num_blocks(),
        t.num_sends(),
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

fn export_cmd(a: ExportArgs) -> Result<()> {
    limits::refuse_overwrite(std::slice::from_ref(&a.trace), &[("--out", &a.out)])?;
    files::check_outputs(&[("--out", &a.out)], &[], false)?;
    // The GOAL text is built in memory: about 64 bytes per operation.
    let r = match trace::read_repeated_file(&a.trace) {
        Ok(r) => r,
        // `--format` is not an option here: a foreign trace is converted first.
        Err(e) => match workflow::input::guess_format(&a.trace) {
            Some(format) => bail!(
                "{}: `whatif export` reads whatif traces; if it is a {format} trace, convert it first: `whatif import {format} {} --out t.trace` ({e})",
                a.trace.display(),
                a.trace.display()
            ),
            None => return Err(workflow::WorkflowError::from(e).into()),
        },
    };
    let text_bytes = r
        .num_blocks()
        .saturating_add(r.num_sends())
        .saturating_mul(64);
    let t = memory::expand(r, None, vec![("the GOAL text".into(), text_bytes)], false)?;
    let text = match a.format {
        ExportFormat::Goal => importers::goal::export(&t)?,
    };
    files::write_text(&a.out, &text)?;
    if !a.quiet {
        eprintln!(
            "wrote {} ({} ranks from {} blocks)",
            a.out.display(),
            t.objects.len(),
            t.num_blocks()
        );
    }
    Ok(())
}

fn platform_cmd(a: PlatformArgs) -> Result<()> {
    let NetSpec::Flow(p) = &a.net else {
        bail!(
            "--net {}: a SimGrid platform is written for the `flow` model (SimGrid's own model), e.g. flow:topo=torus:4x4,hop=1us,bw=1GB/s,sharing=cm02",
            a.net
        );
    };
    let xml = network_models::simgrid::platform_xml(p, a.pes, a.flops_per_s)
        .map_err(|e| anyhow!("--pes {}: {e}", a.pes))?;
    files::check_outputs(&[], &[("--out", &a.out)], a.force)?;
    let dir = files::begin_dir(&a.out, a.force)?;
    files::write_text(&dir.path().join("platform.xml"), &xml)?;
    files::write_text(
        &dir.path().join("hostfile"),
        &network_models::simgrid::hostfile(a.pes),
    )?;
    files::finish_dir(dir)?;
    let out = a.out.display();
    if !a.quiet {
        eprintln!(
            "wrote {out}/platform.xml and {out}/hostfile ({} hosts)",
            a.pes
        );
    }
    println!(
        "replay a SimGrid trace (index file TI) on it with:\n  smpirun -np {} -platform {out}/platform.xml -hostfile {out}/hostfile -replay TI {}\nand compare with:\n  whatif replay TI --format simgrid --flops-per-s {} --net {}\nfor agreement to the nanosecond when links are shared, add to smpirun:\n  --cfg=network/optim:Full --cfg=surf/precision:1e-13\n(SimGrid 3.32's default lazy update can give two flows on one link its whole bandwidth each, and smpirun rounds times to 1 ns)",
        a.pes,
        network_models::simgrid::smpirun_cfg(p).join(" "),
        a.flops_per_s,
        a.net
    );
    Ok(())
}

/// ", one iteration of B blocks repeated K times" for a repeated trace, "" otherwise.
fn run_default(a: RunArgs) -> Result<()> {
    let trace = workflow::default_scenario()?;
    replay_and_report(trace, &a.machine, &a.out)?;
    if !a.out.json && !a.out.quiet {
        eprintln!(
            "\nTry a what-if: whatif run --net alphabeta:lat=50us,bw=10GB/s   or   whatif run --pes 64"
        );
    }
    Ok(())
}

fn gen_cmd(a: GenArgs) -> Result<()> {
    let t = workflow::generate::generate(&workflow::generate::GenSpec {
        kind: match a.kind {
            GenKind::Pingpong => workflow::generate::GenKind::Pingpong,
            GenKind::Ring => workflow::generate::GenKind::Ring,
            GenKind::Halo2d => workflow::generate::GenKind::Halo2d,
            GenKind::Halo3d => workflow::generate::GenKind::Halo3d,
            GenKind::Pipeline => workflow::generate::GenKind::Pipeline,
        },
        ranks: a.ranks,
        dims: a.dims.clone(),
        periodic: a.periodic,
        stages: a.stages,
        iters: a.iters,
        compute: a.compute,
        bytes: a.bytes,
        jitter: a.jitter,
        seed: a.seed,
        net: a.net.clone(),
        max_memory: a.max_memory,
        every_iteration: Format::from_path(&a.out) == Format::Text,
        quiet: a.quiet,
    })?;
    trace::write_repeated_file(&t, &a.out, Format::from_path(&a.out))?;
    memory::checkpoint("writing");
    if a.quiet {
        return Ok(());
    }
    eprintln!(
        "wrote {} ({} objects, {} blocks, {} sends{})",
        a.out.display(),
        t.body().objects.len(),
        t.num_blocks(),
        t.num_sends(),
        workflow::input::repeat_note(&t)
    );
    Ok(())
}

/// Every file a command reads for `path`: a foreign trace's files (a Projections `.sts` and
/// its logs, a SimGrid index and its per-rank files, ...), else `path` itself.
fn input_files(format: Option<importers::Format>, path: &Path) -> Vec<PathBuf> {
    format
        .and_then(|f| importers::input_files(f, path).ok())
        .unwrap_or_else(|| vec![path.to_path_buf()])
}

fn inspect(a: InspectArgs) -> Result<()> {
    if let Some(out) = &a.objects {
        limits::refuse_overwrite(
            &input_files(a.format, &a.trace),
            &[("--objects", out.as_path())],
        )?;
    }
    let t = match a.format {
        None => workflow::read_whatif_trace(&a.trace)?,
        Some(f) => workflow::load(
            &a.trace,
            Some(f),
            &a.import.spec(),
            &workflow::MachineSpec::default(),
            a.quiet,
        )?,
    };
    if let Some(out) = &a.objects {
        safe_output::write_atomic(out, &lb_strategies::mapfile::recorded_csv(t.body()))?;
    }
    let s = TraceSummary::of_repeated(&t);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        print!("{s}");
    }
    Ok(())
}

impl MachineArgs {
    /// The machine the flags describe (`--machine` is a network model like `--net`).
    pub(crate) fn spec(&self) -> workflow::MachineSpec {
        workflow::MachineSpec {
            net: self.net.clone().or_else(|| self.machine.clone()),
            net_file: self.net_file.clone(),
            pes: self.pes,
            map: self.map.clone(),
            cpu_scale: self.cpu_scale,
            block_overhead: self.block_overhead,
            local_msg_cost: self.local_msg_cost,
            noise: self.noise.clone(),
            priority: self.priority,
            critical_path_priority: self.critical_path_priority,
            speedup: self.speedup.clone(),
            recorded_order: self.recorded_order,
            free_object_order: self.free_object_order,
            queue: self.queue,
            max_events: self.max_events,
            max_time: self.max_time,
            seed: self.seed,
            max_memory: self.max_memory,
            force: self.force,
        }
    }
}

impl ImportOpts {
    /// The import options the flags describe.
    pub(crate) fn spec(&self) -> workflow::ImportSpec {
        workflow::ImportSpec {
            flops_per_s: self.flops_per_s,
            eager_limit: self.eager_limit,
            collectives: self.collectives,
            mpi_protocol: self.mpi_protocol,
        }
    }
}

impl OutputArgs {
    /// The outputs the flags ask for; the report's reproducing commands start from this
    /// command's arguments.
    pub(crate) fn spec(&self) -> workflow::OutputSpec {
        workflow::OutputSpec {
            out: self.out.clone(),
            report: self.report,
            compress: self.compress,
            trace_pes: self.trace_pes.clone(),
            trace_window: self.trace_window,
            bin: self.bin,
            trace_budget: self.trace_budget,
            timeline: self.timeline.clone(),
            per_pe: self.per_pe.clone(),
            links: self.links.clone(),
            entries: self.entries.clone(),
            quiet: self.quiet,
            command_args: std::env::args().skip(2).collect(),
        }
    }
}

/// Replays `input` on the machine of `m`, prints the summary (`--json` or human) on stdout
/// and writes the outputs of `o`. A replay that cannot finish prints its stuck blocks and the
/// command that reproduces it.
fn replay_and_report(input: Repeated, m: &MachineArgs, o: &OutputArgs) -> Result<()> {
    let json = o.json;
    let r = workflow::replay(input, &m.spec(), &o.spec(), &mut |info, r| {
        if json {
            println!("{}", report::summary::json(info, r)?);
        } else {
            print!("{}", report::summary::human(info, r));
        }
        Ok(())
    });
    match r {
        Ok(_) => Ok(()),
        Err(workflow::WorkflowError::NotFinished { trace, source }) => {
            eprint!("{source}");
            eprintln!();
            eprintln!(
                "reproduce with: whatif {}",
                std::env::args().skip(1).collect::<Vec<_>>().join(" ")
            );
            Err(RunFailed(format!("replay of `{trace}` did not complete")).into())
        }
        Err(e) => Err(e.into()),
    }
}
