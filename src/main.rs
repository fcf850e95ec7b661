//! `whatif`: predict how a message-driven parallel program runs on a machine you don't have, by
//! replaying a trace of its execution blocks on a simulated one.

mod analyze_cmd;
mod bench;
mod calibrate_cmd;
mod demo;
mod emulate_cmd;
mod files;
mod fuzz_cmd;
mod lb_cmd;
mod limits;
mod memory;
mod model_cmd;
mod opsim_cmd;
mod phases_cmd;
mod predict_cmd;
mod progress;
mod spelling;
mod sweep_cmd;
mod sweep_journal;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use network_models::{NET_HELP, NetSpec};
use replay::{CpuScale, Mapping, ReplayConfig, ReplayError, SchedPolicy};
use scenarios::SynthParams;
use sim_core::units::{parse_bytes, parse_duration};
use sim_core::{QueueKind, Ratio, RunLimits, SeedTree, SimDuration, SimTime};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;
use trace::{Format, Repeated, Trace, TraceSummary};

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
  whatif inspect h.trace --json --objects placement.csv   # placement.csv: for --map file:PATH";

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
    /// Output trace; `.jsonl` writes the JSON-lines text form, anything else the binary form.
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
    /// Output file; `.jsonl` writes the JSON-lines text form, anything else the binary form.
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
    /// Trace file (binary or JSON lines).
    trace: PathBuf,
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
    #[arg(long, value_name = "NAME", value_parser = parse_machine, conflicts_with = "net_file")]
    machine: Option<NetSpec>,
    /// Network model from a TOML file: a `[net]` table (or top-level keys) with
    /// `model = "..."` and the model's parameters, e.g. `model = "hops"`, `topo = "torus:8x8x8"`,
    /// `lat = "1us"`, `bw = "10GB/s"`.
    #[arg(long, value_name = "FILE")]
    net_file: Option<PathBuf>,
    /// Simulated PEs, or `objects`: one PE per object, each object on its own PE (the
    /// "infinite processors" bound) [default: as recorded].
    #[arg(long)]
    pes: Option<PeCount>,
    /// Object placement: recorded (folded/spread when --pes differs), block, round-robin, or
    /// `file:PATH`: a CSV with `name` and `pe` (or `to_pe`) columns placing objects by name,
    /// as `whatif inspect --objects` and `whatif lb --maps` write them (objects it does not
    /// name stay as recorded), e.g. to place a 1-PE log's chares as a 2-PE run placed them.
    #[arg(long, default_value = "recorded")]
    map: MapArg,
    /// Factor on recorded block durations and send offsets (0.5 = a CPU twice as fast)
    /// [default: the factor recorded in the trace, else 1].
    #[arg(long, value_parser = parse_cpu_scale)]
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
    #[arg(long, value_name = "SPEC", value_parser = parse_noise)]
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
/// [`RunFailed`], `ReplayError::Stuck`/`Sched`) or a failure of the machine (a full or
/// read-only disk, an I/O error: [`machine_failure`]); 2 for everything else: whatever a
/// command refuses is bad input by default, so a new check needs no registration to exit 2.
fn exit_status(e: &anyhow::Error) -> u8 {
    let failed = e.chain().any(|c| {
        c.is::<RunFailed>()
            || matches!(
                c.downcast_ref::<ReplayError>(),
                Some(ReplayError::Stuck(_)) | Some(ReplayError::Sched(_))
            )
            || c.downcast_ref::<safe_output::OutputError>()
                .is_some_and(|o| !files::is_bad_output(o))
            || c.downcast_ref::<std::io::Error>()
                .is_some_and(machine_failure)
    });
    if failed { 1 } else { 2 }
}

/// An I/O error that is the machine's, not the input's: no space, quota, read-only file
/// system, a device error, a write that wrote nothing.
fn machine_failure(e: &std::io::Error) -> bool {
    use std::io::ErrorKind as K;
    matches!(
        e.kind(),
        K::StorageFull | K::QuotaExceeded | K::ReadOnlyFilesystem | K::WriteZero | K::OutOfMemory
    ) || matches!(e.raw_os_error(), Some(5) | Some(28) | Some(30) | Some(122))
}

/// The error and its causes on one line, each cause once: a cause whose text the message
/// already ends with (libraries that print their source inside their own message) is not
/// repeated.
fn render(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for c in e.chain() {
        // A cause quoting its input (a TOML parser's line, a JSON value) is cut: an error
        // never floods the terminal with a megabyte line.
        let t = sim_core::inputs::cut(&c.to_string(), MAX_CAUSE_BYTES);
        if out.ends_with(&t) || out.contains(&format!("{t}: ")) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&t);
    }
    out
}

/// The most bytes of one cause an error message prints.
const MAX_CAUSE_BYTES: usize = 1000;

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
            let mut inputs = match a.format {
                Some(f) => {
                    importers::input_files(f, &a.trace).unwrap_or_else(|_| vec![a.trace.clone()])
                }
                None => vec![a.trace.clone()],
            };
            inputs.extend(a.machine.files_read());
            let o = &a.out;
            let outputs: Vec<(&str, &std::path::Path)> = [
                ("--timeline", &o.timeline),
                ("--per-pe", &o.per_pe),
                ("--links", &o.links),
                ("--entries", &o.entries),
                ("--out", &o.out),
            ]
            .into_iter()
            .filter_map(|(f, p)| p.as_deref().map(|p| (f, p)))
            .collect();
            limits::refuse_overwrite(&inputs, &outputs)?;
            if a.format == Some(importers::Format::Goal)
                && let Some(spec @ NetSpec::LogGops(_)) = a.machine.net.as_ref()
            {
                let m = &a.machine;
                let why = opsim_cmd::needs_blocks(
                    !outputs.is_empty(),
                    &[
                        ("--pes", m.pes.is_some()),
                        ("--map", m.map != MapArg::Builtin(Mapping::Recorded)),
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
            let (dirs, file_outs): (Vec<_>, Vec<_>) =
                outputs.iter().partition(|(f, _)| *f == "--out");
            files::check_outputs(&file_outs, &dirs, a.machine.force)?;
            let trace = load_input(&a.trace, a.format, &a.import, &a.machine, a.out.quiet)?;
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

/// Reads a whatif trace, or imports a foreign one (`--format`), reporting progress and the
/// importer's notes unless `quiet`.
pub(crate) fn load_input(
    path: &std::path::Path,
    format: Option<importers::Format>,
    import: &ImportOpts,
    m: &MachineArgs,
    quiet: bool,
) -> Result<Repeated> {
    let t0 = Instant::now();
    let mut progress = progress::Reporter::new(quiet);
    let trace = match format {
        None => trace::read_repeated_file_with(path, &mut progress).map_err(|e| hinted(e, path))?,
        Some(f) => {
            let imp = importers::import_with(
                f,
                path,
                &import_options(import, m.net.as_ref(), m.max_memory),
                &mut progress,
            )?;
            progress.done();
            if !quiet {
                for n in &imp.notes {
                    eprintln!("{n}");
                }
            }
            Repeated::flat(imp.trace)
        }
    };
    progress.done();
    memory::checkpoint(&format!(
        "loading the trace ({} B on the heap)",
        trace.heap_bytes()
    ));
    if !quiet {
        eprintln!(
            "loaded {} ({} blocks{}) in {:.3} s",
            path.display(),
            trace.num_blocks(),
            repeat_note(&trace),
            t0.elapsed().as_secs_f64()
        );
    }
    Ok(trace)
}

/// A whatif trace file, with [`format_hint`] on the error when it is not one.
pub(crate) fn read_whatif_trace(path: &std::path::Path) -> Result<Repeated> {
    trace::read_repeated_file(path).map_err(|e| hinted(e, path))
}

/// `e` with the `--format` hint for `path`, if any.
fn hinted(e: trace::TraceError, path: &std::path::Path) -> anyhow::Error {
    match format_hint(path) {
        Some(hint) => anyhow::Error::new(e).context(hint),
        None => e.into(),
    }
}

/// What to do when a path read as a whatif trace is not one: the `--format` its name or
/// kind suggests (`None` when nothing does).
fn format_hint(path: &std::path::Path) -> Option<String> {
    let name = path.file_name()?.to_string_lossy().to_lowercase();
    let is = |ext: &str| name.ends_with(ext);
    let format = if path.is_dir() {
        return Some(format!(
            "{} is a folder: a BigSim log set is read with --format bgtrace (or `whatif import bgtrace`)",
            path.display()
        ));
    } else if is(".goal") || is(".goal.gz") {
        "goal"
    } else if is(".sts") || is(".log") || is(".log.gz") {
        "projections"
    } else if is(".otf2") {
        "otf2"
    } else if is(".txt") || is(".ti") {
        "simgrid"
    } else {
        return None;
    };
    Some(format!(
        "{} is not a whatif trace; if it is a {format} file, add --format {format}",
        path.display()
    ))
}

/// [`load_input`] then [`whatif_trace`], as one flat trace (for commands that need every
/// block: `lb`, `analyze`).
fn load_flat(
    path: &std::path::Path,
    format: Option<importers::Format>,
    import: &ImportOpts,
    m: &MachineArgs,
    quiet: bool,
) -> Result<Trace> {
    let input = whatif_trace(load_input(path, format, import, m, quiet)?, m)?;
    memory::expand(input, m.max_memory, Vec::new(), quiet)
}

/// The trace with `--speedup` and `--critical-path-priority` applied (expanded to every block
/// when one is given).
pub(crate) fn whatif_trace(input: Repeated, m: &MachineArgs) -> Result<Repeated> {
    if m.speedup.is_empty() && !m.critical_path_priority {
        return Ok(input);
    }
    let mut t = memory::expand(input, m.max_memory, Vec::new(), true)?;
    for s in &m.speedup {
        analysis::transform::speed_up(&mut t, s)?;
    }
    if m.critical_path_priority {
        analysis::transform::critical_path_priorities(&mut t)?;
    }
    Ok(Repeated::flat(t))
}

fn import_options(
    o: &ImportOpts,
    net: Option<&NetSpec>,
    max_memory: Option<u64>,
) -> importers::ImportOptions {
    let d = importers::ImportOptions::default();
    importers::ImportOptions {
        max_memory_bytes: max_memory.unwrap_or_else(limits::default_memory_limit),
        parallel: true,
        flops_per_s: o.flops_per_s,
        eager_limit: o.eager_limit.unwrap_or(match net {
            Some(NetSpec::LogGops(p)) => p.eager_limit,
            _ => d.eager_limit,
        }),
        collectives: o.collectives,
        mpi_protocol: o.mpi_protocol,
    }
}

fn import_cmd(a: ImportArgs) -> Result<()> {
    let inputs =
        importers::input_files(a.format, &a.input).unwrap_or_else(|_| vec![a.input.clone()]);
    limits::refuse_overwrite(&inputs, &[("--out", &a.out)])?;
    files::check_outputs(&[("--out", &a.out)], &[], false)?;
    let t0 = Instant::now();
    let mut progress = progress::Reporter::new(a.quiet);
    let imp = importers::import_with(
        a.format,
        &a.input,
        &import_options(&a.opts, None, a.max_memory),
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
    let r = read_whatif_trace(&a.trace)?;
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
        "replay a SimGrid trace (index file TI) on it with:\n  smpirun -np {} -platform {out}/platform.xml -hostfile {out}/hostfile -replay TI {}\nand compare with:\n  whatif replay TI --format simgrid --flops-per-s {} --net {}",
        a.pes,
        network_models::simgrid::smpirun_cfg(p).join(" "),
        a.flops_per_s,
        a.net
    );
    Ok(())
}

/// ", one iteration of B blocks repeated K times" for a repeated trace, "" otherwise.
fn repeat_note(r: &Repeated) -> String {
    if r.is_flat() {
        String::new()
    } else {
        format!(
            ": one iteration of {} blocks repeated {} times",
            r.body().num_blocks(),
            r.reps()
        )
    }
}

/// The default scenario of `whatif run`.
fn default_scenario() -> Result<Repeated> {
    let p = SynthParams {
        iters: 20,
        compute: SimDuration::from_us(100),
        bytes: 65536,
        generator:
            "whatif run (built-in: halo3d 8x8x8, 20 iterations, 100us compute, 64KiB messages)"
                .into(),
        ..SynthParams::default()
    };
    let t = scenarios::halo_repeated(&[8, 8, 8], false, &p)?;
    Ok(t.with_meta(|m| m.net = Some("alphabeta:lat=1us,bw=10GB/s".into())))
}

fn run_default(a: RunArgs) -> Result<()> {
    let trace = default_scenario()?;
    replay_and_report(trace, &a.machine, &a.out)?;
    if !a.out.json && !a.out.quiet {
        eprintln!(
            "\nTry a what-if: whatif run --net alphabeta:lat=50us,bw=10GB/s   or   whatif run --pes 64"
        );
    }
    Ok(())
}

fn gen_cmd(a: GenArgs) -> Result<()> {
    let generator = canonical_gen_command(&a);
    let p = SynthParams {
        iters: a.iters,
        compute: a.compute,
        bytes: a.bytes,
        jitter: a.jitter,
        seed: a.seed,
        generator,
    };
    // Blocks the trace stores (one iteration of a repeated trace; every block in the text
    // form): about 110 bytes each on the heap, 136 while the generator builds it, plus its
    // indexes (up to 14 MiB): measured on halos of 2,000 to 100,000 ranks.
    let dims: u64 = match a.kind {
        GenKind::Halo2d | GenKind::Halo3d => parse_dims(&a.dims)?
            .iter()
            .fold(1u64, |x, &d| x.saturating_mul(d as u64)),
        _ => 0,
    };
    let stored: u64 = match a.kind {
        GenKind::Pingpong => 2 * a.iters as u64,
        GenKind::Ring => 2 * a.ranks as u64,
        GenKind::Halo2d => 5 * dims,
        GenKind::Halo3d => 7 * dims,
        GenKind::Pipeline => (a.stages as u64).saturating_mul(a.iters as u64),
    };
    let stored = if Format::from_path(&a.out) == Format::Text
        && matches!(a.kind, GenKind::Ring | GenKind::Halo2d | GenKind::Halo3d)
    {
        stored.saturating_mul(a.iters as u64)
    } else {
        stored
    };
    memory::settle(
        &memory::gen_estimate(stored),
        Some(a.max_memory.unwrap_or_else(limits::default_memory_limit)),
        a.quiet,
    )?;
    let mut progress = progress::Reporter::new(a.quiet);
    let t = match a.kind {
        GenKind::Pingpong => Repeated::flat(scenarios::pingpong(&p)?),
        GenKind::Ring => scenarios::ring_repeated_with(a.ranks, &p, &mut progress)?,
        GenKind::Halo2d | GenKind::Halo3d => {
            let want = if matches!(a.kind, GenKind::Halo2d) {
                2
            } else {
                3
            };
            let dims = parse_dims(&a.dims)?;
            if dims.len() != want {
                bail!(
                    "--dims `{}` has {} dimensions; {} needs {want} (e.g. {})",
                    a.dims,
                    dims.len(),
                    if want == 2 { "halo2d" } else { "halo3d" },
                    if want == 2 { "32x32" } else { "10x10x10" }
                );
            }
            scenarios::halo_repeated_with(&dims, a.periodic, &p, &mut progress)?
        }
        GenKind::Pipeline => Repeated::flat(scenarios::pipeline(a.stages, &p)?),
    };
    progress.done();
    memory::checkpoint(&format!("generating ({} B on the heap)", t.heap_bytes()));
    let t = t.with_meta(|m| m.net = a.net.map(|n| n.to_string()));
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
        repeat_note(&t)
    );
    Ok(())
}

/// The generator recorded in the trace: every parameter that shapes it, in a fixed form, and
/// nothing else (not the output path), so equal inputs give byte-identical traces.
fn canonical_gen_command(a: &GenArgs) -> String {
    let shape = match a.kind {
        GenKind::Pingpong => "pingpong".to_string(),
        GenKind::Ring => format!("ring --ranks {}", a.ranks),
        GenKind::Halo2d | GenKind::Halo3d => {
            let k = if matches!(a.kind, GenKind::Halo2d) {
                "halo2d"
            } else {
                "halo3d"
            };
            format!(
                "{k} --dims {}{}",
                a.dims,
                if a.periodic { " --periodic" } else { "" }
            )
        }
        GenKind::Pipeline => format!("pipeline --stages {}", a.stages),
    };
    format!(
        "whatif gen {shape} --iters {} --compute {} --bytes {} --jitter {} --seed {}",
        a.iters,
        a.compute.to_string().replace(' ', ""),
        a.bytes,
        a.jitter,
        a.seed
    )
}

fn parse_dims(s: &str) -> Result<Vec<u32>> {
    s.split('x')
        .map(|d| {
            d.trim().parse::<u32>().with_context(|| {
                format!("--dims `{s}`: expected sizes separated by `x`, e.g. 10x10x10")
            })
        })
        .collect()
}

fn inspect(a: InspectArgs) -> Result<()> {
    if let Some(out) = &a.objects {
        limits::refuse_overwrite(
            std::slice::from_ref(&a.trace),
            &[("--objects", out.as_path())],
        )?;
    }
    let t = read_whatif_trace(&a.trace)?;
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

/// The CPU-speed factor: `--cpu-scale`, else the trace's recorded factor, else 1.
pub(crate) fn cpu_scale_for(trace: &Trace, m: &MachineArgs) -> Result<Ratio> {
    Ok(match (m.cpu_scale, &trace.meta.cpu_scale) {
        (Some(r), _) => r,
        (None, Some(rec)) => Ratio::parse(rec).with_context(|| {
            format!(
                "the CPU-speed factor recorded in trace `{}`",
                trace.meta.name
            )
        })?,
        (None, None) => Ratio::ONE,
    })
}

/// A CPU-speed factor: a positive ratio.
fn parse_cpu_scale(s: &str) -> Result<Ratio, String> {
    let r = Ratio::parse(s).map_err(|e| e.to_string())?;
    if r == Ratio::new(0, 1).expect("0/1") {
        return Err(format!(
            "`{s}`: a CPU-speed factor must be greater than 0 (0.5 = a CPU twice as fast, 2 = half as fast)"
        ));
    }
    Ok(r)
}

/// A PE count on the command line: a number, or `objects` (one PE per object).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PeCount {
    /// This many.
    N(u32),
    /// As many as the trace has objects.
    PerObject,
}

impl std::str::FromStr for PeCount {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "objects" | "per-object" => Ok(PeCount::PerObject),
            t => match t.parse::<u32>() {
                Ok(0) => Err("the machine needs at least one PE".into()),
                Ok(n) => Ok(PeCount::N(n)),
                Err(_) if t.bytes().all(|b| b.is_ascii_digit()) && !t.is_empty() => {
                    Err(format!("`{s}`: at most {} PEs (a 32-bit count)", u32::MAX))
                }
                Err(_) => Err(format!(
                    "`{s}`: expected a PE count (e.g. 64) or `objects` (one PE per object)"
                )),
            },
        }
    }
}

/// `--map`: a built-in placement or a placement file.
#[derive(Clone, Debug, PartialEq)]
enum MapArg {
    Builtin(Mapping),
    File(PathBuf),
}

impl std::str::FromStr for MapArg {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.strip_prefix("file:") {
            Some("") => Err("`file:` needs a path, e.g. `file:map.csv`".into()),
            Some(p) => Ok(MapArg::File(PathBuf::from(p))),
            None => s
                .parse()
                .map(MapArg::Builtin)
                .map_err(|e: String| format!("{e}, or file:PATH (a CSV placing objects by name)")),
        }
    }
}

impl std::fmt::Display for MapArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MapArg::Builtin(m) => write!(f, "{m}"),
            MapArg::File(p) => write!(f, "file:{}", p.display()),
        }
    }
}

/// The placement `--map` asks for, on `trace` with `pes` PEs (`None`: as recorded). A
/// placement file becomes an explicit map; what it leaves out or names in vain is said on
/// stderr.
fn mapping_for(m: &MachineArgs, trace: &Trace, pes: Option<u32>) -> Result<Mapping> {
    Ok(match (m.pes, &m.map) {
        // One PE per object means each object on its own PE.
        (Some(PeCount::PerObject), MapArg::Builtin(Mapping::Recorded)) => Mapping::Block,
        (_, MapArg::Builtin(map)) => map.clone(),
        (_, MapArg::File(path)) => {
            let file = lb_strategies::mapfile::read_map(path)?;
            let pes = pes.unwrap_or(trace.meta.recorded_pes).max(1);
            let fallback = Mapping::Recorded.resolve(trace, pes)?;
            let r = file.resolve(trace, pes, &fallback)?;
            if r.unnamed > 0 {
                eprintln!(
                    "note: {}: {} of {} objects not named (e.g. `{}`) keep the recorded placement",
                    path.display(),
                    r.unnamed,
                    trace.objects.len(),
                    r.first_unnamed.as_deref().unwrap_or("")
                );
            }
            if r.unknown > 0 {
                eprintln!(
                    "note: {}: {} names are not objects of the trace; ignored",
                    path.display(),
                    r.unknown
                );
            }
            Mapping::Explicit(r.pes)
        }
    })
}

impl MachineArgs {
    /// Files the machine options read (`--map file:`, `--net-file`): outputs must not
    /// overwrite them.
    pub(crate) fn files_read(&self) -> Vec<PathBuf> {
        let map = match &self.map {
            MapArg::File(p) => Some(p.clone()),
            MapArg::Builtin(_) => None,
        };
        // Noise traces: `trace:file=PATH[,...]`.
        let noise = self.noise.iter().filter_map(|spec| {
            spec.strip_prefix("trace:")?
                .split(',')
                .find_map(|kv| kv.strip_prefix("file="))
                .map(PathBuf::from)
        });
        map.into_iter()
            .chain(self.net_file.clone())
            .chain(noise)
            .collect()
    }
}

impl PeCount {
    fn resolve(self, trace: &Trace) -> u32 {
        match self {
            PeCount::N(n) => n,
            PeCount::PerObject => (trace.objects.len() as u32).max(1),
        }
    }
}

fn machine_config(
    m: &MachineArgs,
    trace: &Trace,
    cpu_scale: Ratio,
    timeline: bool,
) -> Result<ReplayConfig> {
    let pes = m.pes.map(|p| p.resolve(trace));
    Ok(ReplayConfig {
        block_scale: None,
        pes,
        mapping: mapping_for(m, trace, pes)?,
        cpu_scale: CpuScale::Uniform(cpu_scale),
        policy: if m.priority || m.critical_path_priority {
            SchedPolicy::Priority
        } else {
            SchedPolicy::Fifo
        },
        queue: m.queue,
        limits: RunLimits {
            max_events: m.max_events,
            max_sim_time: m
                .max_time
                .map(|d| SimTime::ZERO.checked_add(d).unwrap_or(SimTime::MAX)),
            max_memory_bytes: Some(m.max_memory.unwrap_or_else(limits::default_memory_limit)),
        },
        timeline,
        bindings: false,
        recorded_delays: false,
        recorded_order: m.recorded_order,
        remap: None,
        object_order: if m.free_object_order {
            Some(false)
        } else {
            None
        },
        block_overhead: m.block_overhead,
        local_msg_cost: m.local_msg_cost,
        noise: noise_of(&m.noise, m.seed)?,
    })
}

/// The noise of `--noise` specs (checked by clap's parser first), seeded from `--seed`.
fn noise_of(specs: &[String], seed: u64) -> Result<replay::Noise> {
    let mut n = replay::Noise {
        seed: sim_core::rng::derive_seed(seed, "noise"),
        ..Default::default()
    };
    for s in specs {
        // Checked at parse time (parse_noise), but a noise trace is read again here.
        n.add(s).map_err(|e| anyhow::anyhow!("--noise: {e}"))?;
    }
    Ok(n)
}

fn parse_noise(s: &str) -> Result<String, String> {
    s.parse::<replay::Noise>().map(|_| s.to_string())
}

/// Reads a network model from a TOML file (`[net]` table or top-level keys).
fn net_from_file(path: &std::path::Path) -> Result<NetSpec> {
    let text = files::read_text(path, files::SMALL_TEXT_BYTES)
        .with_context(|| format!("network file {}", path.display()))?;
    let mut doc: toml::Table =
        toml::from_str(&text).with_context(|| format!("{}: not valid TOML", path.display()))?;
    let table = match doc.remove("net") {
        Some(toml::Value::Table(t)) => t,
        Some(_) => bail!("{}: `net` must be a table ([net])", path.display()),
        None => doc,
    };
    table
        .try_into()
        .with_context(|| format!("{}: network model", path.display()))
}

/// `--machine NAME`: the machine's network model.
pub(crate) fn parse_machine(name: &str) -> Result<NetSpec, String> {
    network_models::machine(name).map_err(|e| e.to_string())
}

pub(crate) fn net_for(trace: &Trace, m: &MachineArgs) -> Result<NetSpec> {
    if let Some(p) = &m.net_file {
        return net_from_file(p);
    }
    Ok(
        match (m.net.as_ref().or(m.machine.as_ref()), &trace.meta.net) {
            (Some(n), _) => n.clone(),
            (None, Some(rec)) => rec.parse().with_context(|| {
                format!("the network model recorded in trace `{}`", trace.meta.name)
            })?,
            (None, None) => NetSpec::Ideal,
        },
    )
}

/// The machine the flags describe, for a replay without a timeline (the PE count checked):
/// the model, the CPU factor, the configuration and each object's PE.
pub(crate) struct Machine {
    pub spec: NetSpec,
    pub cpu_scale: Ratio,
    pub cfg: ReplayConfig,
    pub pes: u32,
    pub map: Vec<u32>,
}

pub(crate) fn machine_for(body: &Trace, m: &MachineArgs) -> Result<Machine> {
    let spec = net_for(body, m)?;
    let cpu_scale = cpu_scale_for(body, m)?;
    let cfg = machine_config(m, body, cpu_scale, false)?;
    let pes = cfg.pes.unwrap_or(body.meta.recorded_pes);
    limits::check_pes(pes as u64, body.objects.len() as u64, m.force)?;
    let map = cfg
        .mapping
        .resolve(body, pes)
        .with_context(|| format!("placing the objects of `{}`", body.meta.name))?;
    Ok(Machine {
        spec,
        cpu_scale,
        cfg,
        pes,
        map,
    })
}

/// `replay --out` of a repeated trace without its timeline or its expansion: two replays
/// (`analysis::streamed`): the first keeps the bindings and the totals the selection needs
/// (per entry; PE x entry for the representatives); the second feeds the views and keeps
/// the runs of the PEs the per-block files show (all PEs when trace.json fits its budget,
/// else the representatives and the critical path's PEs, and every PE's for projections/
/// up to its limit). The per-block files are written from the trace of those blocks only
/// (`Repeated::subset`), with each block's id in the whole run.
fn replay_out_streamed(input: &Repeated, m: &MachineArgs, o: &OutputArgs) -> Result<()> {
    let dir = o.out.as_ref().context("--out")?;
    let body = input.body();
    let Machine {
        spec,
        cpu_scale,
        cfg,
        pes,
        map,
    } = machine_for(body, m)?;
    let objects = body.objects.len();
    if !o.quiet {
        let mut on = map.clone();
        on.sort_unstable();
        on.dedup();
        if let Some(w) = limits::idle_warning(pes, on.len(), objects, &m.map.to_string()) {
            eprintln!("{w}");
        }
    }
    let g = analysis::Blocks::Repeated(input);
    let feed = analysis::feed::Feed::new(g, analysis::feed::PeOf::Object(map.clone()));
    let bin_ps = o.bin.map_or(0, |d| d.as_ps());
    let all_bytes = analysis::select::all_bytes(g);
    let all_projections = pes <= report::outputs::MAX_PROJECTIONS_PES || m.force;
    let every = match &o.trace_pes {
        analysis::select::PeChoice::All => true,
        analysis::select::PeChoice::Auto => all_bytes <= o.trace_budget,
        _ => false,
    };
    let jobs = {
        // The kept PEs: all, or the representatives, the path's and the listed ones.
        let kept_pes = if every || all_projections {
            pes as u64
        } else {
            let listed = match &o.trace_pes {
                analysis::select::PeChoice::List(v) => v.len(),
                _ => 0,
            };
            (report::views::REPRESENTATIVES + MAX_PATH_PES + listed).min(pes as usize) as u64
        };
        let shown_pes = if every {
            pes as u64
        } else {
            kept_pes.min((report::views::REPRESENTATIVES + MAX_PATH_PES) as u64)
        };
        let (jobs, est) = memory::what_if_jobs(None, cfg.limits.max_memory_bytes, |j| {
            memory::replay_out_estimate(input, &spec, &cfg, (pes, kept_pes, shown_pes), o.report, j)
        })?;
        if let Some(limit) = cfg.limits.max_memory_bytes
            && est.bytes() > limit
            && kept_pes == pes as u64
            && kept_pes > (report::views::REPRESENTATIVES + MAX_PATH_PES) as u64
        {
            return Err(BadInput(format!(
                "writing every PE's blocks (for {}) needs {}, above the memory limit of {}: --trace-pes representatives keeps the representative PEs' only{}, or raise the limit with --max-memory",
                if every {
                    "trace.json and timeline.csv"
                } else {
                    "projections/"
                },
                est.describe(),
                replay::footprint::human_bytes(limit),
                if all_projections && pes > report::outputs::MAX_PROJECTIONS_PES {
                    " (and without --force, projections/ too)"
                } else {
                    ""
                }
            ))
            .into());
        }
        memory::settle(&est, cfg.limits.max_memory_bytes, o.quiet)?;
        jobs
    };
    let t0 = Instant::now();
    let mut progress = progress::Reporter::new(o.quiet);
    let mut first = analysis::allviews::RunTotals::new(&feed, Some(pes))?;
    let mut reps = Vec::new();
    let mut shown = Vec::new();
    let sc = analysis::Scenario {
        trace: g,
        net: &spec,
        cfg: &cfg,
        seed: m.seed,
    };
    // With --report, the what-ifs that do not need the base run start on another core
    // meanwhile.
    let early = if o.report && jobs > 1 {
        analysis::early_what_ifs(&sc)
    } else {
        Vec::new()
    };
    let (walked, early) = analysis::with_early(&sc, early, || {
        analysis::streamed::replay_and_walk(
            g,
            &spec,
            &cfg,
            &mut progress,
            &mut first,
            |r, f, path| {
                reps = f
                    .clusters(report::views::CLUSTERS, report::views::REPRESENTATIVES)?
                    .representatives();
                // The critical path's PEs (from its end), as the flat path shows them.
                let mut path_pes: Vec<u32> = Vec::new();
                if o.report {
                    let mut by_end: Vec<u32> = path.to_vec();
                    by_end.sort_unstable_by(|a, b| b.cmp(a));
                    for b in by_end {
                        if path_pes.len() == MAX_PATH_PES {
                            break;
                        }
                        let obj =
                            body.columns().object[(b % body.num_blocks().max(1) as u32) as usize];
                        let pe = map[obj as usize];
                        if !path_pes.contains(&pe) {
                            path_pes.push(pe);
                        }
                    }
                }
                shown = reps.clone();
                shown.extend(path_pes);
                shown.sort_unstable();
                shown.dedup();
                let keep = if every {
                    None
                } else {
                    let mut k = vec![all_projections; pes as usize];
                    let listed: &[u32] = match &o.trace_pes {
                        analysis::select::PeChoice::List(v) => v,
                        _ => &[],
                    };
                    for &p in shown.iter().chain(listed) {
                        if let Some(x) = k.get_mut(p as usize) {
                            *x = true;
                        }
                    }
                    Some(k)
                };
                // The kept PEs' blocks: every iteration places its blocks the same way.
                let expected = match &keep {
                    None => input.num_blocks() as usize,
                    Some(k) => {
                        body.columns()
                            .object
                            .iter()
                            .filter(|&&o| k[map[o as usize] as usize])
                            .count()
                            * input.reps() as usize
                    }
                };
                // Messages into the kept PEs from the others (the logs name their senders).
                let senders = keep
                    .as_ref()
                    .filter(|k| k.contains(&false))
                    .map(|k| analysis::allviews::Senders::new(&feed, k.clone()));
                Ok(analysis::allviews::Both(
                    analysis::allviews::ViewsSink::new(
                        &feed,
                        r.pes,
                        r.makespan.as_ps(),
                        &f.totals,
                        &spec,
                        report::views::options(bin_ps),
                    )?,
                    analysis::allviews::Both(
                        analysis::allviews::KeepPes::new(keep, expected),
                        senders,
                    ),
                ))
            },
        )
    });
    let walked = walked.with_context(|| format!("replay of `{}`", body.meta.name))?;
    let (walked, analysis::allviews::Both(views_sink, analysis::allviews::Both(kept, senders))) =
        walked;
    let replay_s = t0.elapsed().as_secs_f64();
    memory::checkpoint("the two replays");
    let r = walked.report;
    let views = views_sink.finish(&r.pe_busy_ps)?;
    let info = report::summary::RunInfo {
        trace: body,
        net: spec.to_string(),
        mapping: m.map.to_string(),
        cpu_scale: cpu_scale.to_string(),
        policy: if m.priority { "priority" } else { "fifo" },
        seed: m.seed,
        cpu_costs: (
            m.block_overhead.as_ps(),
            m.local_msg_cost.as_ps(),
            cfg.noise.to_string(),
        ),
    };
    // The kept blocks as a trace of their own, the runs renumbered to it.
    let mut runs = kept.runs;
    let mut senders = senders.map(|s| s.into_kept).unwrap_or_default();
    senders.sort_unstable_by_key(|x| x.0);
    let mut ids: Vec<u32> = runs.iter().map(|x| x.block).collect();
    ids.sort_unstable();
    ids.dedup();
    let sub = input.subset(&ids);
    memory::checkpoint("the kept blocks' trace");
    for x in &mut runs {
        x.block = ids.binary_search(&x.block).map_or(u32::MAX, |i| i as u32);
    }
    let t2 = Instant::now();
    let staged = files::begin_dir(dir, m.force)?;
    let mut rs = r.clone();
    rs.timeline = Some(runs);
    let sub_info = report::summary::RunInfo {
        trace: &sub,
        ..info.clone()
    };
    // The per-block outputs and the views do not depend on the analysis: written on
    // another core while the re-simulations run.
    let (analysed, notes) = std::thread::scope(|s| {
        let writer = s.spawn(|| {
            report::outputs::write_all(
                staged.path(),
                &sub_info,
                &rs,
                report::outputs::Options {
                    cpu_scale,
                    force: m.force,
                    compress: o.compress,
                    representatives: &reps,
                    shown_pes: &shown,
                    trace_pes: &o.trace_pes,
                    trace_window_ps: o.trace_window.map(|(a, b)| (a.as_ps(), b.as_ps())),
                    trace_budget_bytes: o.trace_budget,
                    partial: Some(report::outputs::Partial {
                        all_bytes,
                        block_ids: &ids,
                        entry_blocks: &first.blocks,
                        entry_busy_ps: &first.totals,
                        entry_max_ps: &first.max_ps,
                        senders: &senders,
                    }),
                },
            )
            .and_then(|notes| {
                report::views::write(&views, staged.path(), body)?;
                memory::checkpoint("outputs: the views");
                Ok(notes)
            })
        });
        let analysed = (|| -> Result<Option<analysis::Analysis>> {
            Ok(if o.report {
                let t1 = Instant::now();
                let an = analysis::diagnose_with_early(
                    &sc,
                    &r,
                    walked.critical_path,
                    &analysis::Options {
                        jobs,
                        ..Default::default()
                    },
                    early,
                    &mut progress,
                )
                .context("analysis for the report")?;
                progress.done();
                memory::checkpoint("the analysis");
                if !o.quiet {
                    eprintln!(
                        "analysed (critical path, {} re-simulations) in {:.2} s",
                        an.findings.len() + an.skipped.len(),
                        t1.elapsed().as_secs_f64()
                    );
                }
                Some(an)
            } else {
                progress.done();
                None
            })
        })();
        let notes = writer
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (analysed, notes)
    });
    let analysed = analysed?;
    let notes = notes.with_context(|| format!("cannot write the outputs in {}", dir.display()))?;
    if !o.quiet {
        eprintln!(
            "replayed {} events, {} messages twice (the bindings, then the critical path's runs and the views) in {replay_s:.3} s: {}",
            r.events,
            r.messages.total(),
            progress::rate(2.0 * r.events as f64, replay_s, "events")
        );
    }
    if o.json {
        println!("{}", report::summary::json(&info, &r)?);
    } else {
        print!("{}", report::summary::human(&info, &r));
    }
    finish_out(
        staged,
        dir,
        None,
        analysed.as_ref(),
        body,
        &spec,
        notes,
        o,
        t2,
    )
    .with_context(|| format!("cannot write the outputs in {}", dir.display()))?;
    write_side_files(o, &r, body)
}

/// The end of `replay --out`: the views, the analysis and the report into the staged folder,
/// put in place; what was left out and where it went, on stderr.
#[allow(clippy::too_many_arguments)]
fn finish_out(
    staged: safe_output::OutputDir,
    dir: &std::path::Path,
    views: Option<&report::views::Views>,
    analysed: Option<&analysis::Analysis>,
    trace: &Trace,
    spec: &NetSpec,
    notes: Vec<String>,
    o: &OutputArgs,
    t0: Instant,
) -> Result<()> {
    if let Some(views) = views {
        report::views::write(views, staged.path(), trace)?;
        memory::checkpoint("outputs: the views");
    }
    if let Some(an) = analysed {
        let args: Vec<String> = std::env::args().skip(2).collect();
        let base = analyze_cmd::strip(&args, REPLAY_OUTPUT_FLAGS);
        analyze_cmd::write_outputs(staged.path(), an, trace, &spec.to_string(), &base)?;
        report::html::write_titled(staged.path(), None, dir)?;
        memory::checkpoint("outputs: the report");
    }
    files::finish_dir(staged)?;
    if !o.quiet {
        for n in notes {
            eprintln!("{n}");
        }
        if o.report {
            eprintln!("wrote {}", dir.join("report.html").display());
        }
        eprintln!(
            "wrote {} ({}, projections/, CSV summaries and analyses) in {:.2} s",
            dir.display(),
            if o.compress {
                "trace.json.gz"
            } else {
                "trace.json"
            },
            t0.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// `--per-pe`, `--links` and `--entries`.
fn write_side_files(o: &OutputArgs, r: &replay::ReplayReport, trace: &Trace) -> Result<()> {
    if let Some(p) = &o.per_pe {
        report::summary::write_per_pe(p, r)?;
    }
    if let Some(p) = &o.links {
        report::summary::write_links(p, r)?;
    }
    if let Some(p) = &o.entries {
        report::summary::write_entries(p, trace, r)?;
    }
    Ok(())
}

/// `whatif replay` flags that choose outputs, not the run: dropped from the reproduce
/// commands of the report's analysis.
const REPLAY_OUTPUT_FLAGS: &[(&str, bool)] = &[
    ("--out", true),
    ("--report", false),
    ("--compress", false),
    ("--trace-pes", true),
    ("--trace-window", true),
    ("--trace-budget", true),
    ("--bin", true),
    ("--json", false),
    ("--timeline", true),
    ("--per-pe", true),
    ("--links", true),
    ("--entries", true),
    ("--quiet", false),
    ("-q", false),
];

/// PEs of the critical path (from its end) added to the representatives in the per-block
/// files of `replay --out --report` when those hold only some PEs.
const MAX_PATH_PES: usize = 32;

fn replay_and_report(input: Repeated, m: &MachineArgs, o: &OutputArgs) -> Result<()> {
    let input = whatif_trace(input, m)?;
    if o.out.is_some() && o.timeline.is_none() && !input.is_flat() {
        return replay_out_streamed(&input, m, o);
    }
    // Outputs that describe every block need every block.
    let per_block = o.timeline.is_some() || o.out.is_some();
    let spec = net_for(input.body(), m)?;
    let cpu_scale = cpu_scale_for(input.body(), m)?;
    let cfg = machine_config(m, input.body(), cpu_scale, per_block)?;
    let pes = cfg.pes.unwrap_or(input.body().meta.recorded_pes);
    let objects = input.body().objects.len();
    limits::check_pes(pes as u64, objects as u64, m.force)?;
    let report = o.out.is_some() && o.report;
    let (jobs, est) = memory::what_if_jobs(None, cfg.limits.max_memory_bytes, |j| {
        memory::replay_estimate(&input, &spec, &cfg, per_block, report, j)
    })?;
    memory::settle(&est, cfg.limits.max_memory_bytes, o.quiet)?;
    let input = if per_block && !input.is_flat() {
        Repeated::flat(input.expand())
    } else {
        input
    };
    if !o.quiet
        && let Ok(mut on) = cfg.mapping.resolve(input.body(), pes)
    {
        on.sort_unstable();
        on.dedup();
        if let Some(w) = limits::idle_warning(pes, on.len(), objects, &m.map.to_string()) {
            eprintln!("{w}");
        }
    }
    let mut net = spec.build();
    let t0 = Instant::now();
    let mut progress = progress::Reporter::new(o.quiet);
    let prepared = replay::Prepared::new_with(&input, net.as_mut(), &cfg, &mut progress);
    let plan_s = t0.elapsed().as_secs_f64();
    // Once planned, the replay needs no block of the trace: keep its header for the report
    // (and its blocks for per-block outputs).
    let trace = if per_block {
        input.into_body()
    } else {
        input.into_body().without_blocks()
    };
    let trace = &trace;
    let result =
        prepared.and_then(|p| p.run_with(net.as_mut(), &mut progress).map(|r| (r, plan_s)));
    progress.done();
    memory::checkpoint("the replay");
    let wall = t0.elapsed().as_secs_f64();
    let (r, plan_s) = match result {
        Ok(r) => r,
        Err(e @ ReplayError::Stuck(_)) | Err(e @ ReplayError::Sched(_)) => {
            eprint!("{e}");
            eprintln!();
            eprintln!(
                "reproduce with: whatif {}",
                std::env::args().skip(1).collect::<Vec<_>>().join(" ")
            );
            return Err(
                RunFailed(format!("replay of `{}` did not complete", trace.meta.name)).into(),
            );
        }
        Err(e) => return Err(e.into()),
    };
    if !o.quiet {
        let loop_s = wall - plan_s;
        eprintln!(
            "replayed {} events, {} messages in {wall:.3} s (plan {plan_s:.3} s, event loop {loop_s:.3} s: {}, {})",
            r.events,
            r.messages.total(),
            progress::rate(r.events as f64, loop_s, "events"),
            progress::rate(r.messages.total() as f64, loop_s, "messages")
        );
    }
    let info = report::summary::RunInfo {
        trace,
        net: spec.to_string(),
        mapping: m.map.to_string(),
        cpu_scale: cpu_scale.to_string(),
        policy: if m.critical_path_priority {
            "critical-path priority"
        } else if m.priority {
            "priority"
        } else {
            "fifo"
        },
        seed: m.seed,
        cpu_costs: (
            m.block_overhead.as_ps(),
            m.local_msg_cost.as_ps(),
            cfg.noise.to_string(),
        ),
    };
    if o.json {
        println!("{}", report::summary::json(&info, &r)?);
    } else {
        print!("{}", report::summary::human(&info, &r));
    }
    if let Some(p) = &o.timeline {
        report::summary::write_timeline(p, trace, &r)?;
    }
    if let Some(dir) = &o.out {
        let t0 = Instant::now();
        let staged = files::begin_dir(dir, m.force)?;
        let views = report::views::of(trace, &r, &spec, o.bin.map_or(0, |d| d.as_ps()))?;
        memory::checkpoint("the views");
        let reps = views.clusters.representatives();
        // The analysis (critical path, re-simulated diagnoses) for the report's "why"; the
        // PEs of the critical path join the representatives in the per-block files, so the
        // report's windows around path blocks have their blocks.
        let analysed = if o.report {
            let t1 = Instant::now();
            let sc = analysis::Scenario {
                trace: analysis::Blocks::Flat(trace),
                net: &spec,
                cfg: &cfg,
                seed: m.seed,
            };
            let an = analysis::analyze_report(
                &sc,
                &r,
                &analysis::Options {
                    jobs,
                    ..Default::default()
                },
            )
            .context("analysis for the report")?;
            memory::checkpoint("the analysis");
            if !o.quiet {
                eprintln!(
                    "analysed (critical path, {} re-simulations) in {:.2} s",
                    an.findings.len() + an.skipped.len(),
                    t1.elapsed().as_secs_f64()
                );
            }
            Some(an)
        } else {
            None
        };
        let mut shown = reps.clone();
        if let Some(an) = &analysed {
            let mut path_pes: Vec<u32> = Vec::new();
            for st in an.critical_path.steps.iter().rev() {
                if path_pes.len() == MAX_PATH_PES {
                    break;
                }
                if !path_pes.contains(&st.pe) {
                    path_pes.push(st.pe);
                }
            }
            shown.extend(path_pes);
            shown.sort_unstable();
            shown.dedup();
        }
        let notes = report::outputs::write_all(
            staged.path(),
            &info,
            &r,
            report::outputs::Options {
                cpu_scale,
                force: m.force,
                compress: o.compress,
                representatives: &reps,
                shown_pes: &shown,
                trace_pes: &o.trace_pes,
                trace_window_ps: o.trace_window.map(|(a, b)| (a.as_ps(), b.as_ps())),
                trace_budget_bytes: o.trace_budget,
                partial: None,
            },
        )
        .with_context(|| format!("cannot write the outputs in {}", dir.display()))?;
        finish_out(
            staged,
            dir,
            Some(&views),
            analysed.as_ref(),
            trace,
            &spec,
            notes,
            o,
            t0,
        )
        .with_context(|| format!("cannot write the outputs in {}", dir.display()))?;
    }
    write_side_files(o, &r, trace)
}
