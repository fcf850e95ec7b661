//! The simulated machine from a typed spec: the network model (given, from a TOML file, or as
//! the trace recorded it), the PE count, the placement of the objects, the CPU factor, the
//! scheduling policy, the runtime's costs, OS noise and the run's limits.
//!
//! [`MachineSpec`] is what the command line's machine flags and the Python package's keyword
//! arguments convert into; [`machine_for`] checks it against a trace and gives the
//! [`Machine`] a replay runs on.

use crate::error::{Ctx, Result, WorkflowError, bail};
use crate::{files, limits};
use network_models::NetSpec;
use replay::{CpuScale, Mapping, ReplayConfig, SchedPolicy};
use sim_core::{QueueKind, Ratio, RunLimits, SeedTree, SimDuration, SimTime};
use std::path::{Path, PathBuf};
use trace::Trace;

/// A PE count: a number, or one PE per object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeCount {
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

impl PeCount {
    /// The count on `trace`.
    pub fn resolve(self, trace: &Trace) -> u32 {
        match self {
            PeCount::N(n) => n,
            PeCount::PerObject => (trace.objects.len() as u32).max(1),
        }
    }
}

/// The placement of the objects: a built-in one or a placement file.
#[derive(Clone, Debug, PartialEq)]
pub enum MapSpec {
    /// `recorded`, `block`, `round-robin`, ...
    Builtin(Mapping),
    /// `file:PATH`: a CSV with `name` and `pe` (or `to_pe`) columns placing objects by name.
    File(PathBuf),
}

impl Default for MapSpec {
    fn default() -> Self {
        MapSpec::Builtin(Mapping::Recorded)
    }
}

impl std::str::FromStr for MapSpec {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.strip_prefix("file:") {
            Some("") => Err("`file:` needs a path, e.g. `file:map.csv`".into()),
            Some(p) => Ok(MapSpec::File(PathBuf::from(p))),
            None => s
                .parse()
                .map(MapSpec::Builtin)
                .map_err(|e: String| format!("{e}, or file:PATH (a CSV placing objects by name)")),
        }
    }
}

impl std::fmt::Display for MapSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MapSpec::Builtin(m) => write!(f, "{m}"),
            MapSpec::File(p) => write!(f, "file:{}", p.display()),
        }
    }
}

/// The machine a replay runs on, as the user describes it. [`Default`] is the command line's
/// defaults: the trace's recorded network model (else ideal) and PE count, the recorded
/// placement, its recorded CPU factor (else 1), FIFO scheduling, no runtime costs, no noise,
/// the radix event queue, the default seed and 3/4 of this computer's memory as the limit.
#[derive(Clone, Debug)]
pub struct MachineSpec {
    /// Network model [default: the trace's recorded one, else ideal].
    pub net: Option<NetSpec>,
    /// A TOML file with the network model (a `[net]` table or top-level keys); wins over
    /// `net`.
    pub net_file: Option<PathBuf>,
    /// Simulated PEs [default: as recorded].
    pub pes: Option<PeCount>,
    /// Object placement.
    pub map: MapSpec,
    /// Factor on recorded block durations and send offsets [default: the trace's, else 1].
    pub cpu_scale: Option<Ratio>,
    /// CPU time a PE spends before every block it starts.
    pub block_overhead: SimDuration,
    /// CPU time a PE spends on each message between two of its own objects.
    pub local_msg_cost: SimDuration,
    /// OS noise specs (`detour:...`, `trace:file=...`, `jitter:...`).
    pub noise: Vec<String>,
    /// Run ready blocks by priority instead of FIFO.
    pub priority: bool,
    /// Run ready blocks by critical-path priority (implies `priority`).
    pub critical_path_priority: bool,
    /// Entries or objects made faster.
    pub speedup: Vec<analysis::transform::Speedup>,
    /// Keep each recorded PE's blocks in their recorded order.
    pub recorded_order: bool,
    /// Let an object's blocks run in any order their messages allow.
    pub free_object_order: bool,
    /// Event queue (results are identical).
    pub queue: QueueKind,
    /// Stop with an error after this many events.
    pub max_events: Option<u64>,
    /// Stop with an error past this simulated time.
    pub max_time: Option<SimDuration>,
    /// Root random seed (noise draws).
    pub seed: u64,
    /// Memory limit in bytes [default: [`limits::default_memory_limit`]].
    pub max_memory: Option<u64>,
    /// Allow machines of over a million PEs with idle PEs, output folders over other files,
    /// projections/ above 65,536 PEs.
    pub force: bool,
}

impl Default for MachineSpec {
    fn default() -> Self {
        MachineSpec {
            net: None,
            net_file: None,
            pes: None,
            map: MapSpec::default(),
            cpu_scale: None,
            block_overhead: SimDuration::ZERO,
            local_msg_cost: SimDuration::ZERO,
            noise: Vec::new(),
            priority: false,
            critical_path_priority: false,
            speedup: Vec::new(),
            recorded_order: false,
            free_object_order: false,
            queue: QueueKind::Radix,
            max_events: None,
            max_time: None,
            seed: SeedTree::DEFAULT_ROOT,
            max_memory: None,
            force: false,
        }
    }
}

impl MachineSpec {
    /// Files the spec reads (`map` file, `net_file`, noise traces): outputs must not
    /// overwrite them.
    pub fn files_read(&self) -> Vec<PathBuf> {
        let map = match &self.map {
            MapSpec::File(p) => Some(p.clone()),
            MapSpec::Builtin(_) => None,
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

    /// The scheduling policy's name in summaries: `critical-path priority`, `priority` or
    /// `fifo`.
    pub fn policy_name(&self) -> &'static str {
        if self.critical_path_priority {
            "critical-path priority"
        } else if self.priority {
            "priority"
        } else {
            "fifo"
        }
    }

    /// The memory limit: the one given, else 3/4 of this computer's memory.
    pub fn memory_limit(&self) -> u64 {
        self.max_memory.unwrap_or_else(limits::default_memory_limit)
    }
}

/// The CPU-speed factor: the spec's, else the trace's recorded factor, else 1.
pub fn cpu_scale_for(trace: &Trace, m: &MachineSpec) -> Result<Ratio> {
    Ok(match (m.cpu_scale, &trace.meta.cpu_scale) {
        (Some(r), _) => r,
        (None, Some(rec)) => Ratio::parse(rec).ctx(|| {
            format!(
                "the CPU-speed factor recorded in trace `{}`",
                trace.meta.name
            )
        })?,
        (None, None) => Ratio::ONE,
    })
}

/// A CPU-speed factor: a positive ratio.
pub fn parse_cpu_scale(s: &str) -> std::result::Result<Ratio, String> {
    let r = Ratio::parse(s).map_err(|e| e.to_string())?;
    if r == Ratio::new(0, 1).expect("0/1") {
        return Err(format!(
            "`{s}`: a CPU-speed factor must be greater than 0 (0.5 = a CPU twice as fast, 2 = half as fast)"
        ));
    }
    Ok(r)
}

/// The placement the spec asks for, on `trace` with `pes` PEs (`None`: as recorded). A
/// placement file becomes an explicit map; what it leaves out or names in vain is said on
/// stderr.
pub fn mapping_for(m: &MachineSpec, trace: &Trace, pes: Option<u32>) -> Result<Mapping> {
    Ok(match (m.pes, &m.map) {
        // One PE per object means each object on its own PE.
        (Some(PeCount::PerObject), MapSpec::Builtin(Mapping::Recorded)) => Mapping::Block,
        (_, MapSpec::Builtin(map)) => map.clone(),
        (_, MapSpec::File(path)) => {
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

/// The replay configuration of `m` on `trace` (with the CPU factor `cpu_scale`, keeping a
/// timeline when `timeline`).
pub fn machine_config(
    m: &MachineSpec,
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
            max_memory_bytes: Some(m.memory_limit()),
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

/// The noise of `specs`, seeded from `seed`.
pub fn noise_of(specs: &[String], seed: u64) -> Result<replay::Noise> {
    let mut n = replay::Noise {
        seed: sim_core::rng::derive_seed(seed, "noise"),
        ..Default::default()
    };
    for s in specs {
        n.add(s)
            .map_err(|e| WorkflowError::Invalid(format!("--noise: {e}")))?;
    }
    Ok(n)
}

/// Checks a noise spec (for an argument parser): the spec itself, or why it is wrong.
pub fn parse_noise(s: &str) -> std::result::Result<String, String> {
    s.parse::<replay::Noise>().map(|_| s.to_string())
}

/// Reads a network model from a TOML file (`[net]` table or top-level keys).
pub fn net_from_file(path: &Path) -> Result<NetSpec> {
    let text = files::read_text(path, files::SMALL_TEXT_BYTES)
        .ctx(|| format!("network file {}", path.display()))?;
    let mut doc: toml::Table =
        toml::from_str(&text).ctx(|| format!("{}: not valid TOML", path.display()))?;
    let table = match doc.remove("net") {
        Some(toml::Value::Table(t)) => t,
        Some(_) => bail!("{}: `net` must be a table ([net])", path.display()),
        None => doc,
    };
    table
        .try_into()
        .ctx(|| format!("{}: network model", path.display()))
}

/// A named machine's network model (`paragon`).
pub fn parse_machine(name: &str) -> std::result::Result<NetSpec, String> {
    network_models::machine(name).map_err(|e| e.to_string())
}

/// The network model: the spec's file, else its model, else the trace's recorded one, else
/// ideal.
pub fn net_for(trace: &Trace, m: &MachineSpec) -> Result<NetSpec> {
    if let Some(p) = &m.net_file {
        return net_from_file(p);
    }
    Ok(match (m.net.as_ref(), &trace.meta.net) {
        (Some(n), _) => n.clone(),
        (None, Some(rec)) => rec
            .parse()
            .ctx(|| format!("the network model recorded in trace `{}`", trace.meta.name))?,
        (None, None) => NetSpec::Ideal,
    })
}

/// The machine a spec describes on a trace, for a replay without a timeline (the PE count
/// checked): the model, the CPU factor, the configuration and each object's PE.
#[derive(Debug)]
pub struct Machine {
    /// The network model.
    pub spec: NetSpec,
    /// The CPU-speed factor.
    pub cpu_scale: Ratio,
    /// The replay configuration.
    pub cfg: ReplayConfig,
    /// Simulated PEs.
    pub pes: u32,
    /// Each object's PE.
    pub map: Vec<u32>,
}

/// [`Machine`] of `m` on `body`.
pub fn machine_for(body: &Trace, m: &MachineSpec) -> Result<Machine> {
    let spec = net_for(body, m)?;
    let cpu_scale = cpu_scale_for(body, m)?;
    let cfg = machine_config(m, body, cpu_scale, false)?;
    let pes = cfg.pes.unwrap_or(body.meta.recorded_pes);
    limits::check_pes(pes as u64, body.objects.len() as u64, m.force)?;
    let map = cfg
        .mapping
        .resolve(body, pes)
        .ctx(|| format!("placing the objects of `{}`", body.meta.name))?;
    Ok(Machine {
        spec,
        cpu_scale,
        cfg,
        pes,
        map,
    })
}
