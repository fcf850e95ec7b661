//! Study files: one TOML file describing a what-if study, and its expansion into points.
//!
//! ```toml
//! name = "stencil-latency"          # required
//! description = "..."               # optional
//! seed = 1                          # root seed (default 1); point i uses stream `point/<i>`
//!
//! [workload]                        # exactly one of `trace` or `program`
//! program = "stencil3d"             # a built-in program (`whatif emulate --help`)
//! pes = 48                          # virtual PEs of the emulation
//! timing = "model"                  # model (default) | measured
//! net = "latency:lat=1us"           # network during emulation (default latency:lat=1us)
//! params = { grid = "64x64x48", block = "16x8x8", iters = 25 }
//! # trace = "run.trace"             # or a trace file, relative to this file
//!
//! [machine]                         # the simulated machine (all optional)
//! pes = 48                          # a number or "objects" [default: as recorded]
//! map = "recorded"                  # recorded | block | round-robin
//! cpu_scale = "1"                   # factor on durations [default: the trace's, else 1]
//! priority = false
//!
//! [net]                             # the replay's network: a table, or net = "spec"
//! model = "latency"
//! lat = "1us"
//!
//! [lb]                              # optional: a load balancer
//! strategy = "greedy"               # as in `whatif lb`
//! at = "start"                      # "start" or an iteration with a sync point
//! migrate_bytes = "0"
//!
//! [report]
//! iterations = [10, 20]             # mean iteration time over these labels (inclusive)
//! x = "net.lat"                     # plot axis [default: the first sweep key]
//! series = "workload.params.block"  # one line per value [default: the second sweep key]
//!
//! [[sweep]]                         # axes; the study is their cartesian product
//! key = "net.lat"                   # any key above, by its dotted path
//! log = ["1us", "10ms"]             # log-spaced from..to, `steps` values
//! steps = 13
//! [[sweep]]
//! key = "workload.params.block"     # `params.X` is short for `workload.params.X`
//! values = ["16x8x8", "8x8x8"]      # a list; or linear = [from, to] with `steps`
//! ```
//!
//! Points are numbered in row-major order of the axes as declared (the first axis varies
//! slowest). Each point's fingerprint is FNV-1a 64 of its fully resolved TOML, so a result row
//! names exactly the configuration it came from. Range values with units (`1us`, `64KiB`,
//! `10GB/s`) are spaced in their base unit (ps, bytes, B/s), rounded to 4 significant digits
//! and to whole units; a log range uses `from * (to/from)^(i/(steps-1))`.

use crate::programs;
use network_models::NetSpec;
use serde::Deserialize;
use sim_core::units::{parse_bytes, parse_duration};
use sim_core::{Bandwidth, SimDuration, rng::derive_seed};
use std::collections::BTreeMap;

/// The most values a `linear`/`log` range may have.
pub const MAX_STEPS: u32 = 100_000;
/// The most points a study may have (each is validated when the study is read: about 25 us
/// and 1 KB per point).
pub const MAX_POINTS: usize = 100_000;
use std::path::{Path, PathBuf};

/// Why a study file is not usable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StudyError {
    /// The file could not be read.
    #[error("cannot read study file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Not valid TOML, or a key or value the schema does not allow.
    #[error("{path}: {msg}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong (with line and column when TOML knows them).
        msg: String,
    },
    /// A sweep axis is malformed.
    #[error("{path}: sweep axis `{key}`: {msg}")]
    Axis {
        /// The file.
        path: String,
        /// The axis key.
        key: String,
        /// What is wrong.
        msg: String,
    },
    /// A point's configuration is invalid (names the values that make it so).
    #[error("{path}: point {index} ({values}): {msg}")]
    Point {
        /// The file.
        path: String,
        /// Point index.
        index: usize,
        /// The point's swept values.
        values: String,
        /// What is wrong.
        msg: String,
    },
}

/// Where the trace comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum Workload {
    /// A trace file.
    Trace(PathBuf),
    /// A built-in program, emulated.
    Program {
        /// Its name.
        name: String,
        /// Virtual PEs.
        pes: u32,
        /// `--set` parameters.
        params: Vec<(String, String)>,
        /// Measured (true) or model timing.
        measured: bool,
        /// Network model during emulation.
        net: NetSpec,
    },
}

/// The simulated machine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Machine {
    /// PEs: `None` as recorded, `Some(0)` one per object, else a count.
    pub pes: Option<u32>,
    /// Mapping name (`recorded`, `block`, `round-robin`).
    pub map: String,
    /// CPU factor as text, if given.
    pub cpu_scale: Option<String>,
    /// Priority scheduling.
    pub priority: bool,
    /// Scheduling cost per block (`ReplayConfig::block_overhead`).
    pub block_overhead: SimDuration,
    /// CPU cost per local message (`ReplayConfig::local_msg_cost`).
    pub local_msg_cost: SimDuration,
    /// OS noise specs joined by `;` (`replay::Noise`), empty for none.
    pub noise: String,
}

/// A load balancer to apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lb {
    /// Strategy spec, e.g. `greedy-refine:tolerance=1.05`.
    pub strategy: String,
    /// `None`: the first sync point, else start; `Some(None)`: start; `Some(Some(k))`: iteration k.
    pub at: Option<Option<u32>>,
    /// Bytes per moved object.
    pub migrate_bytes: u64,
}

/// One configuration of the study, fully resolved.
#[derive(Clone, Debug)]
pub struct Point {
    /// Position in the study (row-major over the axes).
    pub index: usize,
    /// FNV-1a 64 of the resolved TOML, as 16 hex digits.
    pub fingerprint: String,
    /// `(axis key, value as text)` per axis.
    pub values: Vec<(String, String)>,
    /// Seed for this point: `derive_seed(root, "point/<index>")`.
    pub seed: u64,
    /// Where the trace comes from.
    pub workload: Workload,
    /// Key identifying the workload (points with equal keys share one trace).
    pub workload_key: String,
    /// The machine.
    pub machine: Machine,
    /// Network model of the replay (`None`: the trace's recorded model, else ideal).
    pub net: Option<NetSpec>,
    /// Optional load balancer.
    pub lb: Option<Lb>,
    /// Iteration window `[from, to]` of the mean iteration time.
    pub iterations: Option<(u32, u32)>,
}

/// A parsed study.
#[derive(Clone, Debug)]
pub struct Study {
    /// Its name.
    pub name: String,
    /// Free text.
    pub description: String,
    /// Root seed.
    pub seed: u64,
    /// Sweep axes in declared order.
    pub axes: Vec<Axis>,
    /// Plot axis key.
    pub x: Option<String>,
    /// Series key.
    pub series: Option<String>,
    /// A grain axis whose best value (least time) the sweep reports per combination of the
    /// other axes (`[report] optimum`).
    pub optimum: Option<String>,
    /// A problem-size axis and target times (seconds) for constant-time curves: the size that
    /// takes each target time, per value of the plot axis (`[report] constant_time` and
    /// `constant_time_s`).
    pub constant_time: Option<(String, Vec<f64>)>,
    /// FNV-1a 64 of the file's canonical TOML (16 hex digits).
    pub fingerprint: String,
    path: String,
    dir: PathBuf,
    base: toml::Table,
}

/// One sweep axis: a key and its values.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// Dotted path.
    pub key: String,
    /// Values in order.
    pub values: Vec<toml::Value>,
    /// The line of the study file that names this axis's key (1-based; 0 if unknown).
    pub line: usize,
}

/// The 1-based line of `text` holding `key = "<key>"` (a sweep axis), or 0.
fn key_line(text: &str, key: &str) -> usize {
    text.lines()
        .position(|l| {
            l.split_once('=').is_some_and(|(k, v)| {
                k.trim() == "key" && v.trim().trim_matches(|c| c == '"' || c == '\'') == key
            })
        })
        .map_or(0, |i| i + 1)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Doc {
    #[allow(dead_code)]
    name: String,
    #[allow(dead_code)]
    #[serde(default)]
    description: String,
    #[allow(dead_code)]
    seed: Option<u64>,
    workload: WorkloadDoc,
    #[serde(default)]
    machine: MachineDoc,
    net: Option<NetSpec>,
    lb: Option<LbDoc>,
    #[serde(default)]
    report: ReportDoc,
    #[allow(dead_code)]
    #[serde(default)]
    sweep: Vec<AxisDoc>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkloadDoc {
    trace: Option<String>,
    program: Option<String>,
    pes: Option<u32>,
    timing: Option<String>,
    net: Option<NetSpec>,
    #[serde(default)]
    params: BTreeMap<String, toml::Value>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct MachineDoc {
    pes: Option<toml::Value>,
    map: Option<String>,
    cpu_scale: Option<toml::Value>,
    #[serde(default)]
    priority: bool,
    block_overhead: Option<toml::Value>,
    local_msg_cost: Option<toml::Value>,
    noise: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LbDoc {
    strategy: String,
    at: Option<toml::Value>,
    migrate_bytes: Option<toml::Value>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ReportDoc {
    iterations: Option<[u32; 2]>,
    x: Option<String>,
    series: Option<String>,
    optimum: Option<String>,
    constant_time: Option<String>,
    constant_time_s: Option<Vec<f64>>,
}

/// At most this many constant-time targets.
pub const MAX_CONSTANT_TIME_TARGETS: usize = 16;

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct AxisDoc {
    key: String,
    values: Option<Vec<toml::Value>>,
    linear: Option<[toml::Value; 2]>,
    log: Option<[toml::Value; 2]>,
    steps: Option<u32>,
}

/// FNV-1a 64 as 16 hex digits.
pub fn fnv64(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.as_bytes() {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn scalar_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A network spec string as a table (`model` + parameters), so sweeps can set parameters.
fn net_table(spec: &str) -> toml::Table {
    let mut t = toml::Table::new();
    let (model, rest) = spec.split_once(':').unwrap_or((spec, ""));
    t.insert("model".into(), toml::Value::String(model.trim().into()));
    for kv in rest.split(',').filter(|s| !s.trim().is_empty()) {
        if let Some((k, v)) = kv.split_once('=') {
            // `topo=fattree:k=4,levels=3`: the topology's keys stay in its value.
            if let Some(toml::Value::String(topo)) = t.get_mut("topo")
                && (topo.starts_with("fattree:") || topo.starts_with("dragonfly:"))
                && network_models::TOPOLOGY_KEYS.contains(&k.trim())
            {
                topo.push(',');
                topo.push_str(kv.trim());
                continue;
            }
            t.insert(k.trim().into(), toml::Value::String(v.trim().into()));
        }
    }
    t
}

/// The unit kind of a range endpoint.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Unit {
    Int,
    Float,
    Duration,
    Bytes,
    Bandwidth,
}

fn endpoint(v: &toml::Value) -> Result<(Unit, f64), String> {
    match v {
        toml::Value::Integer(i) => Ok((Unit::Int, *i as f64)),
        toml::Value::Float(f) => Ok((Unit::Float, *f)),
        toml::Value::String(s) => {
            if let Ok(d) = parse_duration(s) {
                Ok((Unit::Duration, d.as_ps() as f64))
            } else if let Ok(b) = Bandwidth::parse(s) {
                Ok((Unit::Bandwidth, b.bytes_per_s() as f64))
            } else if let Ok(b) = parse_bytes(s) {
                Ok((Unit::Bytes, b as f64))
            } else {
                Err(format!(
                    "`{s}` is not a number, a duration (1us), a size (64KiB) or a bandwidth (10GB/s)"
                ))
            }
        }
        other => Err(format!("`{other}` is not a number or a value with a unit")),
    }
}

fn unit_value(unit: Unit, x: f64) -> toml::Value {
    match unit {
        Unit::Int => toml::Value::Integer(x.round() as i64),
        Unit::Float => toml::Value::Float(x),
        Unit::Duration => toml::Value::String(
            SimDuration::from_ps(x.round() as u64)
                .to_string()
                .replace(' ', ""),
        ),
        Unit::Bytes => toml::Value::String(format!("{}B", x.round() as u64)),
        Unit::Bandwidth => toml::Value::String(
            Bandwidth::from_bytes_per_s(x.round() as u64)
                .map_or_else(|| format!("{}B/s", x.round() as u64), |b| b.to_string()),
        ),
    }
}

/// `x` rounded to 4 significant digits (range values read well in tables and plots).
fn four_digits(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let mag = 10f64.powi(x.abs().log10().floor() as i32 - 3);
    (x / mag).round() * mag
}

impl AxisDoc {
    fn expand(&self, path: &str) -> Result<Axis, StudyError> {
        let err = |msg: String| StudyError::Axis {
            path: path.into(),
            key: self.key.clone(),
            msg,
        };
        let forms =
            self.values.is_some() as u8 + self.linear.is_some() as u8 + self.log.is_some() as u8;
        if forms != 1 {
            return Err(err(
                "give exactly one of `values = [...]`, `linear = [from, to]` or `log = [from, to]`"
                    .into(),
            ));
        }
        if let Some(v) = &self.values {
            if v.is_empty() {
                return Err(err("`values` is empty".into()));
            }
            if self.steps.is_some() {
                return Err(err(
                    "`steps` goes with `linear` or `log`, not `values`".into()
                ));
            }
            return Ok(Axis {
                line: 0,
                key: self.key.clone(),
                values: v.clone(),
            });
        }
        let (range, log) = match (&self.linear, &self.log) {
            (Some(r), None) => (r, false),
            (None, Some(r)) => (r, true),
            _ => unreachable!("exactly one form"),
        };
        let steps = self
            .steps
            .ok_or_else(|| err("a range needs `steps` (the number of values, >= 2)".into()))?;
        if steps < 2 {
            return Err(err(format!("steps = {steps}; a range needs at least 2")));
        }
        if steps > MAX_STEPS {
            return Err(err(format!(
                "steps = {steps}, above the limit of {MAX_STEPS} values per axis"
            )));
        }
        let (ua, a) = endpoint(&range[0]).map_err(&err)?;
        let (ub, b) = endpoint(&range[1]).map_err(&err)?;
        let unit = match (ua, ub) {
            (x, y) if x == y => x,
            (Unit::Int, Unit::Float) | (Unit::Float, Unit::Int) => Unit::Float,
            _ => {
                return Err(err(format!(
                    "`{}` and `{}` have different units",
                    range[0], range[1]
                )));
            }
        };
        if log && (a <= 0.0 || b <= 0.0) {
            return Err(err("a log range needs positive endpoints".into()));
        }
        let n = steps as f64 - 1.0;
        let mut values: Vec<toml::Value> = (0..steps)
            .map(|i| {
                let f = i as f64 / n;
                let x = if log {
                    a * (b / a).powf(f)
                } else {
                    a + (b - a) * f
                };
                let x = if unit == Unit::Int { x } else { four_digits(x) };
                unit_value(unit, x)
            })
            .collect();
        values.dedup();
        Ok(Axis {
            line: 0,
            key: self.key.clone(),
            values,
        })
    }
}

/// Sets `key` (dotted path) in `t` to `v`, creating tables on the way.
/// Sets the dotted `key` of `t` to `v`, creating tables on the way; an error names a part
/// that is not a table.
pub fn set_path(t: &mut toml::Table, key: &str, v: toml::Value) -> Result<(), String> {
    let parts: Vec<&str> = key.split('.').collect();
    let mut cur = t;
    for (i, p) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            cur.insert((*p).into(), v);
            return Ok(());
        }
        let next = cur
            .entry(p.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        cur = match next {
            toml::Value::Table(tt) => tt,
            _ => {
                return Err(format!(
                    "`{}` is not a table, so `{key}` cannot be set",
                    parts[..=i].join(".")
                ));
            }
        };
    }
    Ok(())
}

/// The canonical key of an axis: `params.X` means `workload.params.X`; `net` values become a
/// table first.
pub fn canonical_key(k: &str) -> String {
    match k.strip_prefix("params.") {
        Some(rest) => format!("workload.params.{rest}"),
        None => k.to_string(),
    }
}

/// The largest study file read (a study is a page of TOML).
pub const MAX_STUDY_BYTES: u64 = 16 << 20;

const TOP_KEYS: &[&str] = &["workload", "machine", "net", "lb", "report", "seed"];

impl Study {
    /// Reads and validates a study file.
    pub fn from_file(path: &Path) -> Result<Study, StudyError> {
        let text = sim_core::inputs::read_to_string(path, MAX_STUDY_BYTES).map_err(|e| {
            StudyError::Read {
                path: path.display().to_string(),
                source: match e {
                    sim_core::inputs::ReadError::Io { source, .. } => source,
                    other => std::io::Error::other(other.to_string()),
                },
            }
        })?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Study::from_text(&text, &path.display().to_string(), &dir)
    }

    /// Parses a study from text; `origin` names it in errors, `dir` resolves relative trace
    /// paths.
    pub fn from_text(text: &str, origin: &str, dir: &Path) -> Result<Study, StudyError> {
        let invalid = |msg: String| StudyError::Invalid {
            path: origin.into(),
            msg,
        };
        // Typed pass on the text itself: unknown keys and wrong types with line and column.
        toml::from_str::<Doc>(text).map_err(|e| invalid(e.to_string()))?;
        let mut base: toml::Table = toml::from_str(text).map_err(|e| invalid(e.to_string()))?;
        let name = base
            .get("name")
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string();
        if name.trim().is_empty() {
            return Err(invalid("`name` must not be empty".into()));
        }
        let fingerprint = fnv64(&toml::to_string(&base).unwrap_or_default());
        let description = base
            .get("description")
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string();
        let seed = match base.get("seed") {
            Some(toml::Value::Integer(i)) if *i >= 0 => *i as u64,
            Some(_) => return Err(invalid("`seed` must be a non-negative integer".into())),
            None => sim_core::SeedTree::DEFAULT_ROOT,
        };
        let sweep: Vec<AxisDoc> = match base.remove("sweep") {
            Some(v) => v
                .try_into()
                .map_err(|e: toml::de::Error| invalid(format!("[[sweep]]: {e}")))?,
            None => Vec::new(),
        };
        if let Some(toml::Value::String(s)) = base.get("net").cloned() {
            base.insert("net".into(), toml::Value::Table(net_table(&s)));
        }
        if let Some(toml::Value::Table(w)) = base.get_mut("workload")
            && let Some(toml::Value::String(s)) = w.get("net").cloned()
        {
            w.insert("net".into(), toml::Value::Table(net_table(&s)));
        }
        let mut axes = Vec::new();
        for a in &sweep {
            let mut ax = a.expand(origin)?;
            ax.line = key_line(text, &a.key);
            ax.key = canonical_key(&ax.key);
            let top = ax.key.split('.').next().unwrap_or_default();
            if !TOP_KEYS.contains(&top) {
                return Err(StudyError::Axis {
                    path: origin.into(),
                    key: a.key.clone(),
                    msg: format!(
                        "`{top}` is not a section; sweep keys start with one of {}",
                        TOP_KEYS.join(", ")
                    ),
                });
            }
            if axes.iter().any(|x: &Axis| x.key == ax.key) {
                return Err(StudyError::Axis {
                    path: origin.into(),
                    key: a.key.clone(),
                    msg: "swept twice".into(),
                });
            }
            axes.push(ax);
        }
        let points = axes
            .iter()
            .try_fold(1usize, |n, a: &Axis| n.checked_mul(a.values.len()));
        if points.is_none_or(|n| n > MAX_POINTS) {
            let sizes: Vec<String> = axes
                .iter()
                .map(|a| format!("{} ({})", a.key, a.values.len()))
                .collect();
            return Err(invalid(format!(
                "the study has {} points ({}), above the limit of {MAX_POINTS}; narrow an axis or split the study",
                points.map_or_else(|| "more than 2^64".to_string(), |n| n.to_string()),
                sizes.join(" x ")
            )));
        }
        let report: ReportDoc = base
            .get("report")
            .cloned()
            .map(|v| v.try_into())
            .transpose()
            .map_err(|e: toml::de::Error| invalid(format!("[report]: {e}")))?
            .unwrap_or_default();
        let key_known = |k: &Option<String>, what: &str| -> Result<Option<String>, StudyError> {
            match k {
                None => Ok(None),
                Some(k) => {
                    let c = canonical_key(k);
                    if axes.iter().any(|a| a.key == c) {
                        Ok(Some(c))
                    } else {
                        Err(invalid(format!(
                            "[report] {what} = \"{k}\" is not a sweep key (sweep keys: {})",
                            axes.iter()
                                .map(|a| a.key.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )))
                    }
                }
            }
        };
        let x = key_known(&report.x, "x")?.or_else(|| axes.first().map(|a| a.key.clone()));
        let series =
            key_known(&report.series, "series")?.or_else(|| axes.get(1).map(|a| a.key.clone()));
        let optimum = key_known(&report.optimum, "optimum")?;
        let constant_time = match (
            key_known(&report.constant_time, "constant_time")?,
            report.constant_time_s,
        ) {
            (None, None) => None,
            (Some(k), Some(t)) => {
                if t.is_empty()
                    || t.len() > MAX_CONSTANT_TIME_TARGETS
                    || t.iter().any(|v| !v.is_finite() || *v <= 0.0)
                {
                    return Err(invalid(format!(
                        "[report] constant_time_s must list 1 to {MAX_CONSTANT_TIME_TARGETS} \
                         positive times in seconds (got {t:?})"
                    )));
                }
                Some((k, t))
            }
            (Some(_), None) => {
                return Err(invalid(
                    "[report] constant_time needs constant_time_s, the target times in seconds \
                     (e.g. constant_time_s = [0.1, 1.0])"
                        .to_string(),
                ));
            }
            (None, Some(_)) => {
                return Err(invalid(
                    "[report] constant_time_s needs constant_time, the problem-size axis \
                     (e.g. constant_time = \"params.lambda\")"
                        .to_string(),
                ));
            }
        };
        let study = Study {
            name,
            description,
            seed,
            axes,
            x,
            series,
            optimum,
            constant_time,
            fingerprint,
            path: origin.into(),
            dir: dir.to_path_buf(),
            base,
        };
        // Validate every point now, before anything runs.
        for i in 0..study.num_points() {
            study.point(i)?;
        }
        Ok(study)
    }

    /// Number of points (the product of the axes' lengths; 1 without axes).
    pub fn num_points(&self) -> usize {
        self.axes.iter().map(|a| a.values.len()).product()
    }

    /// The `index`-th point, resolved and validated.
    pub fn point(&self, index: usize) -> Result<Point, StudyError> {
        let n = self.num_points();
        if index >= n {
            return Err(StudyError::Invalid {
                path: self.path.clone(),
                msg: format!("point {index} does not exist; the study has {n} points (0..{n})"),
            });
        }
        // Row-major: the last axis varies fastest.
        let mut rem = index;
        let mut picks = vec![0usize; self.axes.len()];
        for (i, a) in self.axes.iter().enumerate().rev() {
            picks[i] = rem % a.values.len();
            rem /= a.values.len();
        }
        let mut t = self.base.clone();
        let mut values = Vec::new();
        for (a, &k) in self.axes.iter().zip(&picks) {
            let v = a.values[k].clone();
            values.push((a.key.clone(), scalar_text(&v)));
            set_path(&mut t, &a.key, v).map_err(|msg| StudyError::Axis {
                path: self.path.clone(),
                key: a.key.clone(),
                msg,
            })?;
        }
        let shown = values
            .iter()
            .zip(&self.axes)
            .map(|((k, v), a)| {
                if a.line > 0 {
                    format!("{k}={v}, swept at line {}", a.line)
                } else {
                    format!("{k}={v}")
                }
            })
            .collect::<Vec<_>>()
            .join("; ");
        let perr = |msg: String| StudyError::Point {
            path: self.path.clone(),
            index,
            values: shown.clone(),
            msg,
        };
        // The point's document is internal: its errors are reported without its lines (the
        // swept values above name the lines of the user's file).
        let text = toml::to_string(&t).map_err(|e| perr(e.to_string()))?;
        let doc: Doc = toml::from_str(&text).map_err(|e| perr(e.message().trim().to_string()))?;
        let workload = match (&doc.workload.trace, &doc.workload.program) {
            (Some(_), Some(_)) | (None, None) => {
                return Err(perr(
                    "[workload] needs exactly one of `trace = \"file\"` or `program = \"name\"`"
                        .into(),
                ));
            }
            (Some(tr), None) => {
                if doc.workload.pes.is_some()
                    || !doc.workload.params.is_empty()
                    || doc.workload.timing.is_some()
                    || doc.workload.net.is_some()
                {
                    return Err(perr(
                        "[workload] pes, params, timing and net apply to `program`, not to `trace`"
                            .into(),
                    ));
                }
                Workload::Trace(self.dir.join(tr))
            }
            (None, Some(p)) => {
                let info = programs::find(p).map_err(|e| perr(e.to_string()))?;
                let mut params = Vec::new();
                for (k, v) in &doc.workload.params {
                    if !info.params.iter().any(|s| s.key == k) {
                        return Err(perr(format!(
                            "program `{p}` has no parameter `{k}`; it takes {}",
                            info.params
                                .iter()
                                .map(|s| s.key)
                                .collect::<Vec<_>>()
                                .join(", ")
                        )));
                    }
                    params.push((k.clone(), scalar_text(v)));
                }
                let measured = match doc.workload.timing.as_deref() {
                    None | Some("model") => false,
                    Some("measured") => true,
                    Some(o) => {
                        return Err(perr(format!(
                            "timing = \"{o}\": expected \"model\" or \"measured\""
                        )));
                    }
                };
                let pes = doc.workload.pes.unwrap_or(1);
                if pes == 0 {
                    return Err(perr("[workload] pes must be at least 1".into()));
                }
                Workload::Program {
                    name: p.clone(),
                    pes,
                    params,
                    measured,
                    net: doc.workload.net.clone().unwrap_or(NetSpec::Latency {
                        lat: SimDuration::from_us(1),
                    }),
                }
            }
        };
        let workload_key = fnv64(
            &t.get("workload")
                .map(|w| toml::to_string(w).unwrap_or_default())
                .unwrap_or_default(),
        );
        let m = &doc.machine;
        let pes = match &m.pes {
            None => None,
            Some(toml::Value::Integer(n)) if *n >= 1 && *n <= u32::MAX as i64 => Some(*n as u32),
            Some(toml::Value::String(s)) if s == "objects" => Some(0),
            Some(v) => {
                return Err(perr(format!(
                    "[machine] pes = {v}: expected a PE count >= 1 or \"objects\""
                )));
            }
        };
        let map = m.map.clone().unwrap_or_else(|| "recorded".into());
        if !["recorded", "block", "round-robin", "rr"].contains(&map.as_str()) {
            return Err(perr(format!(
                "[machine] map = \"{map}\": expected recorded, block or round-robin"
            )));
        }
        let cpu_scale = match &m.cpu_scale {
            None => None,
            Some(v) => {
                let s = scalar_text(v);
                let r = sim_core::Ratio::parse(&s)
                    .map_err(|e| perr(format!("[machine] cpu_scale: {e}")))?;
                if r.scale(sim_core::SimDuration::from_ps(1_000_000)).as_ps() == 0 {
                    return Err(perr(format!(
                        "[machine] cpu_scale = {s}: must be greater than 0"
                    )));
                }
                Some(s)
            }
        };
        let cost = |v: &Option<toml::Value>, key: &str| -> Result<SimDuration, StudyError> {
            match v {
                None => Ok(SimDuration::ZERO),
                Some(toml::Value::String(s)) => {
                    parse_duration(s).map_err(|e| perr(format!("[machine] {key}: {e}")))
                }
                Some(toml::Value::Integer(0)) => Ok(SimDuration::ZERO),
                Some(v) => Err(perr(format!(
                    "[machine] {key} = {v}: expected a duration such as \"500ns\""
                ))),
            }
        };
        let block_overhead = cost(&m.block_overhead, "block_overhead")?;
        let local_msg_cost = cost(&m.local_msg_cost, "local_msg_cost")?;
        // Checked by the replay (`replay::Noise`; this crate does not depend on it).
        let noise = m.noise.clone().unwrap_or_default();
        let lb = match &doc.lb {
            None => None,
            Some(l) => {
                let at = match &l.at {
                    None => None,
                    Some(toml::Value::String(s)) if s == "start" => Some(None),
                    Some(toml::Value::Integer(k)) if *k >= 0 && *k <= u32::MAX as i64 => {
                        Some(Some(*k as u32))
                    }
                    Some(v) => {
                        return Err(perr(format!(
                            "[lb] at = {v}: expected \"start\" or an iteration number"
                        )));
                    }
                };
                let migrate_bytes = match &l.migrate_bytes {
                    None => 0,
                    Some(toml::Value::Integer(b)) if *b >= 0 => *b as u64,
                    Some(toml::Value::String(s)) => {
                        parse_bytes(s).map_err(|e| perr(format!("[lb] migrate_bytes: {e}")))?
                    }
                    Some(v) => {
                        return Err(perr(format!(
                            "[lb] migrate_bytes = {v}: expected a size such as \"64KiB\""
                        )));
                    }
                };
                Some(Lb {
                    strategy: l.strategy.clone(),
                    at,
                    migrate_bytes,
                })
            }
        };
        if let Some([a, b]) = doc.report.iterations
            && a > b
        {
            return Err(perr(format!(
                "[report] iterations = [{a}, {b}]: the first must not exceed the second"
            )));
        }
        Ok(Point {
            index,
            fingerprint: fnv64(&text),
            values,
            seed: derive_seed(self.seed, &format!("point/{index}")),
            workload,
            workload_key,
            machine: Machine {
                pes,
                map,
                cpu_scale,
                priority: m.priority,
                block_overhead,
                local_msg_cost,
                noise,
            },
            net: doc.net,
            lb,
            iterations: doc.report.iterations.map(|[a, b]| (a, b)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"
name = "t"
[workload]
program = "pingpong"
pes = 2
params = { iters = 5 }
[net]
model = "latency"
lat = "1us"
"#;

    fn study(extra: &str) -> Result<Study, StudyError> {
        Study::from_text(&format!("{BASE}{extra}"), "t.toml", Path::new("."))
    }

    #[test]
    fn huge_axes_and_point_counts_are_refused_before_expanding() {
        let e = study(
            "[[sweep]]\nkey = \"net.lat\"\nlinear = [\"1us\", \"2us\"]\nsteps = 2147483648\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("2147483648") || e.contains("steps"), "{e}");
        let e =
            study("[[sweep]]\nkey = \"net.lat\"\nlinear = [\"1us\", \"2us\"]\nsteps = 100001\n")
                .unwrap_err()
                .to_string();
        assert!(e.contains("above the limit of 100000"), "{e}");
        // 10^5 x 10^5 = 10^10 points: refused, with each axis's size.
        let axis =
            |k: &str| format!("[[sweep]]\nkey = \"{k}\"\nlinear = [1, 100000]\nsteps = 100000\n");
        let e = study(&format!(
            "{}{}",
            axis("machine.pes"),
            axis("workload.params.iters")
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("10000000000 points"), "{e}");
        assert!(e.contains("machine.pes (100000) x"), "{e}");
        assert!(e.contains("limit of 100000;"), "{e}");
    }

    #[test]
    fn axes_expand_row_major_with_units() {
        let s = study(
            r#"
[[sweep]]
key = "net.lat"
log = ["1us", "1ms"]
steps = 4
[[sweep]]
key = "params.bytes"
values = ["8B", "1KiB"]
"#,
        )
        .unwrap();
        assert_eq!(s.num_points(), 8);
        let lats: Vec<String> = s.axes[0].values.iter().map(scalar_text).collect();
        assert_eq!(lats, ["1us", "10us", "100us", "1ms"]);
        let p = s.point(3).unwrap();
        assert_eq!(
            p.values,
            [
                ("net.lat".to_string(), "10us".to_string()),
                ("workload.params.bytes".to_string(), "1KiB".to_string())
            ]
        );
        assert_eq!(p.net.unwrap().to_string(), "latency:lat=10us");
        assert_eq!(s.x.as_deref(), Some("net.lat"));
        assert_eq!(s.series.as_deref(), Some("workload.params.bytes"));
        // Points differ in fingerprint and seed; the workload key ignores the network.
        let q = s.point(1).unwrap();
        assert_ne!(p.fingerprint, q.fingerprint);
        assert_ne!(p.seed, q.seed);
        assert_eq!(
            s.point(0).unwrap().workload_key,
            s.point(2).unwrap().workload_key
        );
        assert_eq!(
            p.workload_key, q.workload_key,
            "same bytes, another latency"
        );
        assert_ne!(p.workload_key, s.point(2).unwrap().workload_key);
        let lin = study("[[sweep]]\nkey = \"machine.pes\"\nlinear = [1, 4]\nsteps = 4\n").unwrap();
        assert_eq!(lin.point(2).unwrap().machine.pes, Some(3));
    }

    #[test]
    fn errors_name_the_problem() {
        let e = study("[machine]\nspeed = 2\n").unwrap_err().to_string();
        assert!(
            e.contains("unknown field `speed`") && e.contains("t.toml"),
            "{e}"
        );
        let e = study("[[sweep]]\nkey = \"net.lat\"\nlog = [\"1us\", \"1GB/s\"]\nsteps = 3\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("different units"), "{e}");
        let e = study("[[sweep]]\nkey = \"params.nope\"\nvalues = [1]\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("has no parameter `nope`") && e.contains("point 0"),
            "{e}"
        );
        let e = study("[[sweep]]\nkey = \"net.lat\"\nvalues = [\"fast\"]\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("point 0 (net.lat=fast, swept at line 11)"),
            "{e}"
        );
        // A mistyped section under a sweep key: the user's line, not the internal document's.
        let e = study("[[sweep]]\nkey = \"workload.parms.iters\"\nvalues = [1]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("swept at line 11"), "{e}");
        assert!(e.contains("unknown field `parms`"), "{e}");
        assert!(!e.contains("TOML parse error") && !e.contains(" | "), "{e}");
        let e = study("[[sweep]]\nkey = \"cpu.x\"\nvalues = [1]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a section"), "{e}");
        let e = study("[report]\nx = \"net.bw\"\n").unwrap_err().to_string();
        assert!(e.contains("not a sweep key"), "{e}");
        let e = Study::from_text(
            "name = \"x\"\n[workload]\ntrace = \"a\"\nprogram = \"ring\"\n",
            "u.toml",
            Path::new("."),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("exactly one of"), "{e}");
        let e = study("[[sweep]]\nkey = \"net.lat\"\nlinear = [\"1us\", \"2us\"]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs `steps`"), "{e}");
    }
}
