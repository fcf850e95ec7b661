//! The native module of the `whatif` Python package (`whatif._native`): whatif's workflow
//! (the `workflow` crate) for Python. The package's `whatif/__init__.py` wraps it: it turns
//! the CSV tables these functions write into pandas DataFrames and the JSON they return into
//! dicts.
//!
//! Every function releases the GIL while it works, takes the command line's option values
//! (as strings or numbers: `net="alphabeta:lat=1us,bw=10GB/s"`, `pes=125`, `max_time="10s"`)
//! and raises `InputError` for bad input and `RunError` for a run that could not finish, with
//! the message the command line prints after `error: `.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::path::PathBuf;
use trace::Repeated;
use workflow::{ImportSpec, MachineSpec, OutputSpec};

create_exception!(
    whatif,
    WhatifError,
    PyException,
    "An error of whatif: its message is the command line's."
);
create_exception!(
    whatif,
    InputError,
    WhatifError,
    "Bad input: a file, an option or a size whatif refuses (the command line exits with 2)."
);
create_exception!(
    whatif,
    RunError,
    WhatifError,
    "A run that could not finish: a stuck replay, a run limit, a full disk (the command line exits with 1)."
);

/// The Python exception for a workflow error, with the command line's message.
fn to_py(e: workflow::WorkflowError) -> PyErr {
    let msg = workflow::error::render(&e);
    if workflow::error::is_run_failure(&e) {
        RunError::new_err(msg)
    } else {
        InputError::new_err(msg)
    }
}

/// An option value the user got wrong.
fn bad(option: &str, why: impl std::fmt::Display) -> PyErr {
    InputError::new_err(format!("{option}: {why}"))
}

/// A trace in memory: a whatif trace (flat or repeated) or an imported one.
#[pyclass(frozen, name = "Trace", module = "whatif")]
struct PyTrace {
    inner: Repeated,
    source: String,
}

#[pymethods]
impl PyTrace {
    /// The trace's name.
    #[getter]
    fn name(&self) -> String {
        self.inner.body().meta.name.clone()
    }
    /// Execution blocks in the whole run (every iteration of a repeated trace).
    #[getter]
    fn num_blocks(&self) -> u64 {
        self.inner.num_blocks()
    }
    /// Objects (chares, ranks).
    #[getter]
    fn num_objects(&self) -> usize {
        self.inner.body().objects.len()
    }
    /// PEs of the recorded run.
    #[getter]
    fn recorded_pes(&self) -> u32 {
        self.inner.body().meta.recorded_pes
    }
    /// Times the stored iteration repeats (1 for a flat trace).
    #[getter]
    fn repetitions(&self) -> u64 {
        self.inner.reps() as u64
    }
    /// Where the trace came from (a path, or the built-in scenario).
    #[getter]
    fn source(&self) -> String {
        self.source.clone()
    }
    /// `whatif inspect --json`: the trace's summary as a JSON string.
    fn summary_json(&self) -> PyResult<String> {
        let s = trace::TraceSummary::of_repeated(&self.inner);
        serde_json::to_string(&s).map_err(|e| WhatifError::new_err(e.to_string()))
    }
    fn __repr__(&self) -> String {
        format!(
            "<whatif.Trace {:?}: {} blocks, {} objects, recorded on {} PEs>",
            self.inner.body().meta.name,
            self.inner.num_blocks(),
            self.inner.body().objects.len(),
            self.inner.body().meta.recorded_pes
        )
    }
}

/// `str(value)` of a keyword argument (numbers and strings alike).
fn text(v: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(v.str()?.to_cow()?.into_owned())
}

/// A list of strings, or one string as a list of one.
fn texts(v: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    if let Ok(l) = v.cast::<PyList>() {
        l.iter().map(|x| text(&x)).collect()
    } else {
        Ok(vec![text(v)?])
    }
}

/// The machine keyword arguments, with the command line's names (`-` as `_`).
const MACHINE_OPTIONS: &[&str] = &[
    "net",
    "machine",
    "net_file",
    "pes",
    "map",
    "cpu_scale",
    "block_overhead",
    "local_msg_cost",
    "noise",
    "priority",
    "critical_path_priority",
    "speedup",
    "recorded_order",
    "free_object_order",
    "queue",
    "max_events",
    "max_time",
    "seed",
    "max_memory",
    "force",
];

/// The import keyword arguments.
const IMPORT_OPTIONS: &[&str] = &["flops_per_s", "eager_limit", "collectives", "mpi_protocol"];

fn duration(option: &str, v: &Bound<'_, PyAny>) -> PyResult<sim_core::SimDuration> {
    sim_core::units::parse_duration(&text(v)?).map_err(|e| bad(option, e))
}

fn bytes(option: &str, v: &Bound<'_, PyAny>) -> PyResult<u64> {
    sim_core::units::parse_bytes(&text(v)?).map_err(|e| bad(option, e))
}

/// The machine, import options and anything else from `kwargs`; an unknown name is a
/// TypeError listing the known ones.
fn options(
    kwargs: Option<&Bound<'_, PyDict>>,
    extra: &[&str],
) -> PyResult<(MachineSpec, ImportSpec)> {
    let mut m = MachineSpec::default();
    let mut imp = ImportSpec::default();
    let Some(kw) = kwargs else {
        return Ok((m, imp));
    };
    for (k, v) in kw.iter() {
        let key: String = k.extract()?;
        if v.is_none() {
            continue;
        }
        let s = || text(&v);
        match key.as_str() {
            "net" => m.net = Some(s()?.parse().map_err(|e| bad("net", e))?),
            "machine" => {
                m.net =
                    Some(workflow::machine::parse_machine(&s()?).map_err(|e| bad("machine", e))?)
            }
            "net_file" => m.net_file = Some(PathBuf::from(s()?)),
            "pes" => m.pes = Some(s()?.parse().map_err(|e| bad("pes", e))?),
            "map" => m.map = s()?.parse().map_err(|e| bad("map", e))?,
            "cpu_scale" => {
                m.cpu_scale = Some(
                    workflow::machine::parse_cpu_scale(&s()?).map_err(|e| bad("cpu_scale", e))?,
                )
            }
            "block_overhead" => m.block_overhead = duration("block_overhead", &v)?,
            "local_msg_cost" => m.local_msg_cost = duration("local_msg_cost", &v)?,
            "noise" => {
                for n in texts(&v)? {
                    workflow::machine::parse_noise(&n).map_err(|e| bad("noise", e))?;
                    m.noise.push(n);
                }
            }
            "priority" => m.priority = v.extract()?,
            "critical_path_priority" => m.critical_path_priority = v.extract()?,
            "speedup" => {
                for x in texts(&v)? {
                    m.speedup.push(x.parse().map_err(|e| bad("speedup", e))?);
                }
            }
            "recorded_order" => m.recorded_order = v.extract()?,
            "free_object_order" => m.free_object_order = v.extract()?,
            "queue" => m.queue = s()?.parse().map_err(|e| bad("queue", e))?,
            "max_events" => m.max_events = Some(v.extract()?),
            "max_time" => m.max_time = Some(duration("max_time", &v)?),
            "seed" => m.seed = v.extract()?,
            "max_memory" => m.max_memory = Some(bytes("max_memory", &v)?),
            "force" => m.force = v.extract()?,
            "flops_per_s" => imp.flops_per_s = v.extract()?,
            "eager_limit" => imp.eager_limit = Some(bytes("eager_limit", &v)?),
            "collectives" => {
                imp.collectives = Some(s()?.parse().map_err(|e| bad("collectives", e))?)
            }
            "mpi_protocol" => {
                imp.mpi_protocol = Some(s()?.parse().map_err(|e| bad("mpi_protocol", e))?)
            }
            k if extra.contains(&k) => {}
            k => {
                let mut known: Vec<&str> = MACHINE_OPTIONS
                    .iter()
                    .chain(IMPORT_OPTIONS)
                    .chain(extra)
                    .copied()
                    .collect();
                known.sort_unstable();
                return Err(PyTypeError::new_err(format!(
                    "unknown option `{k}`; the options are: {}",
                    known.join(", ")
                )));
            }
        }
    }
    Ok((m, imp))
}

/// A foreign format's name (`bgtrace`, `projections`, `simgrid`, `goal`, `otf2`).
fn format_of(format: Option<&str>) -> PyResult<Option<importers::Format>> {
    format
        .map(|f| f.parse().map_err(|e| bad("format", e)))
        .transpose()
}

/// The trace a function was given: a `Trace`, or a path read (and with `format`, imported)
/// as the command line reads it.
fn trace_arg(
    py: Python<'_>,
    trace: &Bound<'_, PyAny>,
    format: Option<&str>,
    m: &MachineSpec,
    imp: &ImportSpec,
    quiet: bool,
) -> PyResult<Repeated> {
    if let Ok(t) = trace.cast::<PyTrace>() {
        return Ok(t.get().inner.clone());
    }
    let path: PathBuf = trace.extract().map_err(|_| {
        PyTypeError::new_err("trace: expected a whatif.Trace or a path (str or os.PathLike)")
    })?;
    let format = format_of(format)?;
    py.detach(|| workflow::load(&path, format, imp, m, quiet))
        .map_err(to_py)
}

/// The command line a call stands for (its trace and options, as `whatif replay` would take
/// them), from which an analysis builds the commands that reproduce its findings: the trace's
/// path (`TRACE` for one made in memory), `--format`, then each keyword argument as its flag.
fn command_args(
    trace: &Bound<'_, PyAny>,
    format: Option<&str>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<String>> {
    let source = match trace.cast::<PyTrace>() {
        Ok(t) => t.get().source.clone(),
        Err(_) => text(trace)?,
    };
    let mut args = vec![if source.contains(char::is_whitespace) {
        "TRACE".to_string()
    } else {
        source
    }];
    if let Some(f) = format {
        args.extend(["--format".to_string(), f.to_string()]);
    }
    for (k, v) in kwargs.into_iter().flat_map(|d| d.iter()) {
        let flag = format!("--{}", k.extract::<String>()?.replace('_', "-"));
        if v.is_none() {
            continue;
        }
        if let Ok(b) = v.extract::<bool>() {
            if b {
                args.push(flag);
            }
            continue;
        }
        for value in texts(&v)? {
            args.extend([flag.clone(), value]);
        }
    }
    Ok(args)
}

/// The files a trace argument stands for: its path (and, with `format`, the files the
/// importer reads), or for a `Trace` the path it was loaded from.
fn input_files(trace: &Bound<'_, PyAny>, format: Option<&str>) -> PyResult<Vec<PathBuf>> {
    let path = match trace.cast::<PyTrace>() {
        Ok(t) => PathBuf::from(&t.get().source),
        Err(_) => match trace.extract::<PathBuf>() {
            Ok(p) => p,
            Err(_) => return Ok(Vec::new()),
        },
    };
    Ok(match format_of(format)? {
        Some(f) => importers::input_files(f, &path).unwrap_or_else(|_| vec![path]),
        None => vec![path],
    })
}

/// Loads a trace: a whatif trace file, or with `format` a foreign one (bgtrace, projections,
/// simgrid, goal, otf2), with the import options (`flops_per_s`, `eager_limit`,
/// `collectives`, `mpi_protocol`) and `max_memory`.
#[pyfunction]
#[pyo3(signature = (path, format=None, quiet=true, **kwargs))]
fn load(
    py: Python<'_>,
    path: PathBuf,
    format: Option<&str>,
    quiet: bool,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<PyTrace> {
    let (m, imp) = options(kwargs, &[])?;
    let format = format_of(format)?;
    let inner = py
        .detach(|| workflow::load(&path, format, &imp, &m, quiet))
        .map_err(to_py)?;
    Ok(PyTrace {
        inner,
        source: path.display().to_string(),
    })
}

/// The built-in scenario of `whatif run`: a 3-D halo of 8x8x8 ranks, 20 iterations.
#[pyfunction]
fn default_scenario() -> PyResult<PyTrace> {
    Ok(PyTrace {
        inner: workflow::default_scenario().map_err(to_py)?,
        source: "built-in scenario (whatif run)".into(),
    })
}

/// Generates a synthetic trace as `whatif gen KIND` does: `pingpong`, `ring` (`ranks`),
/// `halo2d`/`halo3d` (`dims` as "XxY[xZ]", `periodic`), `pipeline` (`stages`), with
/// `iters`, `compute` (a duration), `bytes`, `jitter`, `seed` and the recorded `net`.
#[pyfunction]
#[pyo3(signature = (kind, ranks=8, dims="4x4x4", periodic=false, stages=8, iters=10, compute=None, bytes=None, jitter=None, seed=None, net=None, max_memory=None, quiet=true))]
#[allow(clippy::too_many_arguments)]
fn generate(
    py: Python<'_>,
    kind: &str,
    ranks: u32,
    dims: &str,
    periodic: bool,
    stages: u32,
    iters: u32,
    compute: Option<&Bound<'_, PyAny>>,
    bytes: Option<&Bound<'_, PyAny>>,
    jitter: Option<&Bound<'_, PyAny>>,
    seed: Option<u64>,
    net: Option<&str>,
    max_memory: Option<&Bound<'_, PyAny>>,
    quiet: bool,
) -> PyResult<PyTrace> {
    use workflow::generate::{GenSpec, generate};
    let d = GenSpec::default();
    let spec = GenSpec {
        kind: kind.parse().map_err(|e| bad("kind", e))?,
        ranks,
        dims: dims.to_string(),
        periodic,
        stages,
        iters,
        compute: compute.map_or(Ok(d.compute), |c| duration("compute", c))?,
        bytes: bytes.map_or(Ok(d.bytes), |b| self::bytes("bytes", b))?,
        jitter: match jitter {
            Some(j) => sim_core::Ratio::parse(&text(j)?).map_err(|e| bad("jitter", e))?,
            None => d.jitter,
        },
        seed: seed.unwrap_or(sim_core::SeedTree::DEFAULT_ROOT),
        net: net
            .map(|n| n.parse().map_err(|e| bad("net", e)))
            .transpose()?,
        max_memory: max_memory
            .map(|m| self::bytes("max_memory", m))
            .transpose()?,
        every_iteration: false,
        quiet,
    };
    let inner = py.detach(|| generate(&spec)).map_err(to_py)?;
    Ok(PyTrace {
        inner,
        source: workflow::generate::canonical_command(&spec),
    })
}

/// Emulates a built-in program as `whatif emulate` does and returns its trace: `program` on
/// `pes` virtual PEs with its parameters `sets` (a dict), the network `net` (or `machine`),
/// `timing` ("model" or "measured"), `map`, `cpu_scale`, `priority`, `max_memory`.
#[pyfunction]
#[pyo3(signature = (program, pes=4, sets=None, net=None, machine=None, timing="model", map="block", cpu_scale=None, priority=false, max_memory=None, quiet=true))]
#[allow(clippy::too_many_arguments)]
fn emulate(
    py: Python<'_>,
    program: String,
    pes: u32,
    sets: Option<&Bound<'_, PyDict>>,
    net: Option<&str>,
    machine: Option<&str>,
    timing: &str,
    map: &str,
    cpu_scale: Option<&Bound<'_, PyAny>>,
    priority: bool,
    max_memory: Option<&Bound<'_, PyAny>>,
    quiet: bool,
) -> PyResult<PyTrace> {
    let net = net_or_machine(net, machine)?;
    let mut spec = workflow::emulate::EmulateSpec::new(&program, pes, net);
    spec.sets = kv_of(sets)?;
    spec.timing = timing.parse().map_err(|e| bad("timing", e))?;
    spec.map = map.parse().map_err(|e| bad("map", e))?;
    if let Some(c) = cpu_scale {
        spec.cpu_scale = sim_core::Ratio::parse(&text(c)?).map_err(|e| bad("cpu_scale", e))?;
    }
    spec.priority = priority;
    spec.max_memory = max_memory
        .map(|m| self::bytes("max_memory", m))
        .transpose()?;
    spec.quiet = quiet;
    let inner = py
        .detach(|| -> workflow::Result<Repeated> {
            let e = workflow::emulate::emulate(&spec)?.emulation;
            Ok(match &e.periodic {
                Some(p) => Repeated::flat(p.expand()?),
                None => Repeated::flat(e.trace),
            })
        })
        .map_err(to_py)?;
    Ok(PyTrace {
        inner,
        source: format!("whatif emulate {program} --pes {pes}"),
    })
}

/// The network of `net` or `machine` (default `latency:lat=1us`).
fn net_or_machine(net: Option<&str>, machine: Option<&str>) -> PyResult<network_models::NetSpec> {
    match (net, machine) {
        (Some(_), Some(_)) => Err(bad("machine", "give net or machine, not both")),
        (Some(n), None) => n.parse().map_err(|e| bad("net", e)),
        (None, Some(m)) => workflow::machine::parse_machine(m).map_err(|e| bad("machine", e)),
        (None, None) => "latency:lat=1us".parse().map_err(|e| bad("net", e)),
    }
}

/// A program's parameters from a dict.
fn kv_of(sets: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<(String, String)>> {
    let mut kv = Vec::new();
    if let Some(d) = sets {
        for (k, v) in d.iter() {
            kv.push((k.extract::<String>()?, text(&v)?));
        }
    }
    Ok(kv)
}

/// Writes a trace to a file: `.jsonl` writes the JSON-lines text form, anything else the
/// binary form; a final `.zst` compresses either (as `whatif gen --out` does).
#[pyfunction]
fn save(py: Python<'_>, trace: &Bound<'_, PyTrace>, path: PathBuf) -> PyResult<()> {
    let t = &trace.get().inner;
    py.detach(|| {
        let format = trace::Format::from_path(&path);
        trace::write_repeated_file(t, &path, format)
            .map_err(|e| workflow::WorkflowError::Cause(Box::new(e)))
    })
    .map_err(to_py)
}

/// Replays a trace (a `Trace` or a path) on the machine the keyword arguments describe and
/// returns `whatif replay --json`'s summary as a JSON string. `timeline`, `per_pe`, `links`
/// and `entries` are CSV paths to write, `out` an output folder (with `report`, analysed and
/// with the HTML report), as on the command line.
#[pyfunction(name = "replay")]
#[pyo3(signature = (trace, format=None, out=None, report=false, compress=false, timeline=None, per_pe=None, links=None, entries=None, quiet=true, **kwargs))]
#[allow(clippy::too_many_arguments)]
fn replay_trace(
    py: Python<'_>,
    trace: &Bound<'_, PyAny>,
    format: Option<&str>,
    out: Option<PathBuf>,
    report: bool,
    compress: bool,
    timeline: Option<PathBuf>,
    per_pe: Option<PathBuf>,
    links: Option<PathBuf>,
    entries: Option<PathBuf>,
    quiet: bool,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<String> {
    let (m, imp) = options(kwargs, &[])?;
    if report && out.is_none() {
        return Err(bad(
            "report",
            "needs out= (the folder the report goes into)",
        ));
    }
    let command = command_args(trace, format, kwargs)?;
    let o = OutputSpec {
        out,
        report,
        compress,
        timeline,
        per_pe,
        links,
        entries,
        quiet,
        command_args: command,
        ..OutputSpec::default()
    };
    // Outputs are checked before the work, as on the command line: none may overwrite the
    // trace's files or the machine's, and each must be writable.
    o.refuse_overwrite(&input_files(trace, format)?, &m)
        .map_err(to_py)?;
    o.check_paths(m.force).map_err(to_py)?;
    let input = trace_arg(py, trace, format, &m, &imp, quiet)?;
    py.detach(|| {
        let mut json = String::new();
        workflow::replay(input, &m, &o, &mut |info, r| {
            json = ::report::summary::json(info, r)?;
            Ok(())
        })?;
        Ok(json)
    })
    .map_err(to_py)
}

/// Analyses a trace as `whatif analyze --out DIR` does: writes `analysis.json`,
/// `critical_path.csv` and the views' CSVs into `out` and returns the analysis as a JSON
/// string (`whatif analyze --json`).
#[pyfunction]
#[pyo3(signature = (trace, out, format=None, resimulate=true, factor=2, jobs=None, quiet=true, **kwargs))]
#[allow(clippy::too_many_arguments)]
fn analyze(
    py: Python<'_>,
    trace: &Bound<'_, PyAny>,
    out: PathBuf,
    format: Option<&str>,
    resimulate: bool,
    factor: u32,
    jobs: Option<usize>,
    quiet: bool,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<String> {
    let (m, imp) = options(kwargs, &[])?;
    if !(2..=1000).contains(&factor) {
        return Err(bad("factor", format!("{factor} is not in 2..=1000")));
    }
    if jobs == Some(0) {
        return Err(bad("jobs", "at least 1"));
    }
    let command = command_args(trace, format, kwargs)?;
    // The folder is checked before the work, as `whatif analyze --out` does.
    let inputs = [input_files(trace, format)?, m.files_read()].concat();
    workflow::limits::refuse_overwrite(&inputs, &[("out", out.as_path())]).map_err(to_py)?;
    workflow::files::check_outputs(&[], &[("out", out.as_path())], m.force).map_err(to_py)?;
    let input = trace_arg(py, trace, format, &m, &imp, quiet)?;
    py.detach(|| -> workflow::Result<String> {
        let input = workflow::whatif_trace(input, &m)?;
        let a = workflow::analyze::analyze(
            &input,
            &m,
            &workflow::analyze::AnalyzeSpec {
                resimulate,
                factor,
                jobs,
                bin: None,
                quiet,
            },
        )?;
        let body = input.body();
        let staged = workflow::files::begin_dir(&out, m.force)?;
        workflow::analyze::write_outputs(
            staged.path(),
            &a.analysis,
            body,
            &a.spec.to_string(),
            &command,
        )?;
        ::report::views::write(&a.views, staged.path(), body)?;
        workflow::files::finish_dir(staged)?;
        let mut v = workflow::analyze::to_json(&a.analysis, body, &a.spec.to_string(), &command)?;
        v["extrema"] = serde_json::to_value(&a.views.profiles.extrema)?;
        Ok(serde_json::to_string(&v)?)
    })
    .map_err(to_py)
}

/// Compares load balancers as `whatif lb --json` does and returns its rows as a JSON string:
/// `strategies` ("greedy,refine"; default all), `at` ("start" or an iteration), and
/// `migrate_bytes`; `db` and `maps` folders are written when given.
#[pyfunction]
#[pyo3(signature = (trace, strategies=None, at=None, migrate_bytes=None, db=None, maps=None, format=None, quiet=true, **kwargs))]
#[allow(clippy::too_many_arguments)]
fn lb(
    py: Python<'_>,
    trace: &Bound<'_, PyAny>,
    strategies: Option<String>,
    at: Option<&Bound<'_, PyAny>>,
    migrate_bytes: Option<&Bound<'_, PyAny>>,
    db: Option<PathBuf>,
    maps: Option<PathBuf>,
    format: Option<&str>,
    quiet: bool,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<String> {
    let (m, imp) = options(kwargs, &[])?;
    let at = at
        .map(|a| text(a)?.parse().map_err(|e| bad("at", e)))
        .transpose()?;
    let migrate_bytes = migrate_bytes
        .map(|b| self::bytes("migrate_bytes", b))
        .transpose()?
        .unwrap_or(0);
    if let Some(s) = &strategies {
        lb_strategies::parse_list(s).map_err(|e| bad("strategies", e))?;
    }
    let inputs = input_files(trace, format)?;
    let input = trace_arg(py, trace, format, &m, &imp, quiet)?;
    let spec = workflow::lb::LbSpec {
        strategies,
        at,
        migrate_bytes,
        db,
        maps,
        csv: None,
        inputs,
        quiet,
    };
    py.detach(|| -> workflow::Result<String> {
        let input = workflow::whatif_trace(input, &m)?;
        let rows = workflow::lb::compare(input, &m, &spec)?;
        Ok(serde_json::to_string(&rows)?)
    })
    .map_err(to_py)
}

/// Runs a study file as `whatif sweep` does into `out` (a shard or one point when given) and
/// returns the output folder; `results.csv` there has one row per point.
#[pyfunction]
#[pyo3(signature = (study, out, jobs=None, shard=None, point=None, report=false, force=false, quiet=true))]
#[allow(clippy::too_many_arguments)]
fn sweep(
    py: Python<'_>,
    study: PathBuf,
    out: PathBuf,
    jobs: Option<usize>,
    shard: Option<&str>,
    point: Option<usize>,
    report: bool,
    force: bool,
    quiet: bool,
) -> PyResult<String> {
    if jobs.is_some_and(|j| !(1..=1024).contains(&j)) {
        return Err(bad("jobs", "expected 1 to 1024 worker threads"));
    }
    let shard = shard
        .map(|s| s.parse().map_err(|e| bad("shard", e)))
        .transpose()?;
    if shard.is_some() && point.is_some() {
        return Err(bad("shard", "give a shard or a point, not both"));
    }
    let spec = workflow::sweep::SweepSpec {
        study,
        out: Some(out),
        jobs,
        shard,
        point,
        report,
        quiet,
        force,
    };
    py.detach(|| workflow::sweep::run(&spec, &mut |_| {}))
        .map(|done| done.out.display().to_string())
        .map_err(to_py)
}

/// Predicts a built-in program's scaling as `whatif predict --json` does and returns its JSON
/// string: emulated and replayed at the `small` PE counts, the model fitted, the `at` counts
/// predicted with a band (and emulated there too, unless `simulate=False`).
#[pyfunction]
#[pyo3(signature = (program, small, at, sets=None, net=None, machine=None, metric="makespan", simulate=true, max_memory=None, quiet=true))]
#[allow(clippy::too_many_arguments)]
fn predict(
    py: Python<'_>,
    program: String,
    small: Vec<u32>,
    at: Vec<u32>,
    sets: Option<&Bound<'_, PyDict>>,
    net: Option<&str>,
    machine: Option<&str>,
    metric: &str,
    simulate: bool,
    max_memory: Option<&Bound<'_, PyAny>>,
    quiet: bool,
) -> PyResult<String> {
    if !matches!(metric, "makespan" | "iteration") {
        return Err(bad(
            "metric",
            format!("`{metric}`: expected makespan or iteration"),
        ));
    }
    let net = net_or_machine(net, machine)?;
    let kv = kv_of(sets)?;
    let spec = workflow::predict::PredictSpec {
        program: program.clone(),
        sets: kv.clone(),
        net,
        small,
        at,
        metric: metric.to_string(),
        no_simulate: !simulate,
        max_memory: max_memory
            .map(|m| self::bytes("max_memory", m))
            .transpose()?,
        quiet,
    };
    py.detach(|| -> workflow::Result<String> {
        let p = workflow::predict::predict(&spec)?;
        let v = serde_json::json!({
            "program": program,
            "sets": kv.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(),
            "net": p.net.to_string(),
            "metric": spec.metric,
            "model": p.model,
            "model_text": p.model.show(),
            "rows": p.rows,
        });
        Ok(serde_json::to_string(&v)?)
    })
    .map_err(to_py)
}

/// whatif's workflow, natively (see the `whatif` package for the Python API).
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("WhatifError", m.py().get_type::<WhatifError>())?;
    m.add("InputError", m.py().get_type::<InputError>())?;
    m.add("RunError", m.py().get_type::<RunError>())?;
    m.add_class::<PyTrace>()?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(default_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(generate, m)?)?;
    m.add_function(wrap_pyfunction!(emulate, m)?)?;
    m.add_function(wrap_pyfunction!(save, m)?)?;
    m.add_function(wrap_pyfunction!(replay_trace, m)?)?;
    m.add_function(wrap_pyfunction!(analyze, m)?)?;
    m.add_function(wrap_pyfunction!(lb, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(predict, m)?)?;
    Ok(())
}
