//! Studies (`whatif sweep`): run a study's points in parallel; join shard outputs (`whatif
//! merge`).
//!
//! Output folder: `results.csv` (one row per point), `results.json` (a list with one row object
//! per line) and `manifest.json` (study, fingerprint, points total, points covered), plus the
//! scaling files the study's axes call for. Rows hold simulated figures only, in point order,
//! so the files are byte-identical whatever the thread count, and merging shards gives exactly
//! the single-run files (all but the finished-run marker, which names its command).
//!
//! # Example
//!
//! ```
//! use workflow::sweep::{SweepSpec, run};
//! let dir = std::env::temp_dir().join(format!("whatif-doc-sweep-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let study = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
//!     .join("../scenarios/studies/stencil-latency-small.toml");
//! // Shard 0 of 27 of the study's 108 points: points 0, 27, 54 and 81.
//! let spec = SweepSpec {
//!     shard: Some("0/27".parse()?),
//!     ..SweepSpec::new(&study, &dir.join("out"))
//! };
//! let done = run(&spec, &mut |_| {})?;
//! assert_eq!(done.json_rows.len(), 4);
//! assert!(done.json_rows[1].starts_with("{\"point\":27,"));
//! let csv = std::fs::read_to_string(dir.join("out/results.csv"))?;
//! assert_eq!(csv.lines().count(), 5);
//! std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::error::{Ctx, Result, WorkflowError, bail};
use crate::lb::{database, default_point, replay_run, replay_with_map};
use crate::{files, limits, memory, sweep_journal};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use lb_strategies::{LbPoint, Strategy};
use network_models::NetSpec;
use rayon::prelude::*;
use replay::{CpuScale, Mapping, ReplayConfig, SchedPolicy};
use scenarios::study::{Point, Study, Workload};
use sim_core::Ratio;
use std::collections::{BTreeMap, BTreeSet};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use trace::Trace;

/// A study run: which points, where, how.
#[derive(Clone, Debug)]
pub struct SweepSpec {
    /// The study file (TOML).
    pub study: PathBuf,
    /// The output folder (default: `<study name>-results`).
    pub out: Option<PathBuf>,
    /// Worker threads [default: all cores]. Results do not depend on it.
    pub jobs: Option<usize>,
    /// Only this shard's points.
    pub shard: Option<Shard>,
    /// Only this point.
    pub point: Option<usize>,
    /// Also write the HTML report.
    pub report: bool,
    /// No progress or notes on stderr.
    pub quiet: bool,
    /// Write into a non-empty folder that is not a whatif output.
    pub force: bool,
}

impl SweepSpec {
    /// A whole study into `out` (`whatif sweep STUDY --out OUT`).
    pub fn new(study: &Path, out: &Path) -> SweepSpec {
        SweepSpec {
            study: study.to_path_buf(),
            out: Some(out.to_path_buf()),
            jobs: None,
            shard: None,
            point: None,
            report: false,
            quiet: true,
            force: false,
        }
    }
}

/// Shard folders to join.
#[derive(Clone, Debug)]
pub struct MergeSpec {
    /// The shard folders (each from a sharded run).
    pub shards: Vec<PathBuf>,
    /// The output folder.
    pub out: PathBuf,
    /// Write into a non-empty folder that is not a whatif output.
    pub force: bool,
}

/// `i/n`: shard `i` of `n` (0-based).
#[derive(Clone, Copy, Debug)]
pub struct Shard {
    /// This shard (0-based).
    pub i: usize,
    /// Of this many.
    pub n: usize,
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("`{s}`: expected i/n with 0 <= i < n, e.g. 0/4");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (i, n): (usize, usize) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if n == 0 || i >= n {
            return Err(bad());
        }
        Ok(Shard { i, n })
    }
}

/// One result cell: exact text for CSV and its JSON form.
#[derive(Debug)]
enum Cell {
    Text(String),
    /// Exact decimal text; JSON prints it as a number.
    Num(String),
    Null,
}

/// One point's result row: its cells in column order (exact text).
#[derive(Debug)]
pub struct Row {
    index: usize,
    cells: Vec<(String, Cell)>,
}

impl Row {
    /// The number in column `name`, if the row has one there.
    pub fn number(&self, name: &str) -> Option<f64> {
        self.cells
            .iter()
            .find(|(k, _)| k == name)
            .and_then(|(_, c)| match c {
                Cell::Num(s) => s.parse().ok(),
                _ => None,
            })
    }
}

use report::secs;

impl Row {
    fn csv_line(&self) -> Result<String> {
        let mut w = csv::WriterBuilder::new().from_writer(Vec::new());
        w.write_record(self.cells.iter().map(|(_, c)| match c {
            Cell::Text(s) | Cell::Num(s) => s.as_str(),
            Cell::Null => "",
        }))?;
        Ok(String::from_utf8(w.into_inner()?)?.trim_end().to_string())
    }
    fn header(&self) -> Result<String> {
        let mut w = csv::WriterBuilder::new().from_writer(Vec::new());
        w.write_record(self.cells.iter().map(|(k, _)| k.as_str()))?;
        Ok(String::from_utf8(w.into_inner()?)?.trim_end().to_string())
    }
    fn json_line(&self) -> String {
        let mut parts = Vec::with_capacity(self.cells.len());
        for (k, c) in &self.cells {
            let v = match c {
                Cell::Text(s) => serde_json::Value::String(s.clone()).to_string(),
                Cell::Num(s) => s.clone(),
                Cell::Null => "null".into(),
            };
            parts.push(format!("{}:{v}", serde_json::Value::String(k.clone())));
        }
        format!("{{{}}}", parts.join(","))
    }
}

/// The trace of a point's workload: read, or emulated.
pub fn load_workload(study: &Study, p: &Point) -> Result<Trace> {
    match &p.workload {
        Workload::Trace(path) => trace::read_trace_file(path)
            .ctx(|| format!("study {}: trace {}", study.name, path.display())),
        Workload::Program {
            name,
            pes,
            params,
            measured,
            net,
        } => {
            // The emulated machine's state, before anything is allocated for it.
            limits::check_emulated_pes(*pes, None, "a smaller [workload] pes")
                .ctx(|| format!("study {}", study.name))?;
            let cfg = emulator::EmulateConfig {
                pes: *pes,
                timing: if *measured {
                    emulator::Timing::Measured
                } else {
                    emulator::Timing::Model
                },
                generator: format!(
                    "whatif sweep (study {}): emulate {name} --pes {pes}{}",
                    study.name,
                    params
                        .iter()
                        .map(|(k, v)| format!(" --set {k}={v}"))
                        .collect::<String>()
                ),
                net_spec: net.to_string(),
                max_memory_bytes: limits::default_memory_limit(),
                ..Default::default()
            };
            let mut model = net.build();
            let e = scenarios::programs::emulate(name, params, &cfg, model.as_mut(), &mut |_| {})
                .ctx(|| format!("study {}: emulating {name}", study.name))?;
            Ok(e.trace)
        }
    }
}

fn machine(p: &Point, trace: &Trace) -> Result<(ReplayConfig, Ratio)> {
    let cpu = match (&p.machine.cpu_scale, &trace.meta.cpu_scale) {
        (Some(s), _) | (None, Some(s)) => Ratio::parse(s).ctx(|| "cpu_scale")?,
        (None, None) => Ratio::ONE,
    };
    let per_object = p.machine.pes == Some(0);
    let mut mapping: Mapping = p.machine.map.parse().map_err(WorkflowError::Invalid)?;
    if per_object && mapping == Mapping::Recorded {
        mapping = Mapping::Block;
    }
    Ok((
        ReplayConfig {
            pes: p.machine.pes.map(|n| {
                if n == 0 {
                    (trace.objects.len() as u32).max(1)
                } else {
                    n
                }
            }),
            mapping,
            cpu_scale: CpuScale::Uniform(cpu),
            policy: if p.machine.priority {
                SchedPolicy::Priority
            } else {
                SchedPolicy::Fifo
            },
            block_overhead: p.machine.block_overhead,
            local_msg_cost: p.machine.local_msg_cost,
            noise: {
                let mut n: replay::Noise =
                    p.machine.noise.parse().map_err(|e: String| {
                        WorkflowError::Invalid(format!("[machine] noise: {e}"))
                    })?;
                n.seed = sim_core::rng::derive_seed(p.seed, "noise");
                n
            },
            ..Default::default()
        },
        cpu,
    ))
}

/// What a sweep needs beside its workloads and replays (worker threads and their allocator
/// heaps, the study's points and results): 20 MiB measured on a two-point study of a
/// 2,000-rank halo.
const RUNNER_BYTES: u64 = 20 << 20;

/// The network a point replays on: its own, else its trace's recorded one, else ideal.
fn point_net(p: &Point, trace: &Trace) -> Result<NetSpec> {
    Ok(match (&p.net, &trace.meta.net) {
        (Some(n), _) => n.clone(),
        (None, Some(rec)) => rec
            .parse::<NetSpec>()
            .ctx(|| "the trace's recorded network")?,
        (None, None) => NetSpec::Ideal,
    })
}

/// A sweep's memory: its loaded workloads, then `jobs` of its largest point's replay at
/// once (each point replays its workload once; an LB point also builds the database).
fn estimate(
    traces: &[Arc<Trace>],
    keys: &[String],
    points: &[Point],
    jobs: usize,
) -> Result<replay::footprint::Estimate> {
    let mut largest: Option<(u64, replay::footprint::Footprint)> = None;
    for p in points {
        let Some(k) = keys.iter().position(|k| *k == p.workload_key) else {
            continue;
        };
        let t = &traces[k];
        let (cfg, _) = machine(p, t)?;
        let net = point_net(p, t)?.build();
        let f = replay::footprint::Footprint::of(t.as_ref(), net.as_ref(), &cfg)?;
        let lb = if p.lb.is_some() {
            memory::lb_database_bytes(t.objects.len() as u64, t.num_sends() as u64)
        } else {
            0
        };
        let b = f.bytes().saturating_add(lb);
        if largest.as_ref().is_none_or(|(x, _)| b > *x) {
            largest = Some((b, f));
        }
    }
    // After the footprints: they compute each trace's consumer index, part of its memory.
    let mut est = replay::footprint::Estimate::new()
        .keep(
            format!("{} workload(s)", traces.len()),
            traces.iter().map(|t| t.heap_bytes()).sum(),
        )
        .keep("the study runner", RUNNER_BYTES);
    if let Some((b, f)) = largest {
        let one = f.bytes();
        est = est.stage(
            format!("{} point(s) at once", jobs.min(points.len())),
            vec![(
                "their replays".into(),
                b.max(one)
                    .saturating_mul(jobs.min(points.len()).max(1) as u64),
            )],
        );
    }
    Ok(est)
}

/// Runs one point (its replay, with its load balancer if any) into its row.
pub fn run_point(p: &Point, trace: &Trace) -> Result<Row> {
    let spec = point_net(p, trace)?;
    let (cfg, cpu) = machine(p, trace)?;
    let pes = cfg.pes.unwrap_or(trace.meta.recorded_pes);
    let mut lb_cells: Vec<(String, Cell)> = Vec::new();
    let r = match &p.lb {
        None => replay_run(trace, &spec, &cfg)?,
        Some(lb) => {
            let strategy: Strategy = lb.strategy.parse()?;
            let point = match lb.at {
                None => default_point(trace),
                Some(None) => LbPoint::Start,
                Some(Some(k)) => LbPoint::Iteration(k),
            };
            let current = cfg.mapping.resolve(trace, pes)?;
            let (plan, db) = database(trace, point, &current, pes, cpu, lb.migrate_bytes)?;
            let topo = spec.topology().map(|(t, ppn)| lb_strategies::PeTopology {
                topology: t.clone(),
                pes_per_node: ppn,
            });
            let map = strategy.map(&db, topo.as_ref(), p.seed)?;
            let m = lb_strategies::metrics(&db, &map, topo.as_ref());
            lb_cells.push(("lb_migrations".into(), Cell::Num(m.migrations.to_string())));
            lb_cells.push((
                "lb_max_avg_load".into(),
                Cell::Num(format!("{:.6}", m.max_avg_load)),
            ));
            replay_with_map(trace, &spec, &cfg, &plan, &current, map, lb.migrate_bytes)?
        }
    };
    let window = p.iterations;
    let (mean, counted) = r
        .mean_iteration_ps(|l| window.is_none_or(|(a, b)| l >= a && l <= b))
        .map_or((None, 0), |(m, n)| (Some(m), n));
    let mut cells: Vec<(String, Cell)> = vec![
        ("point".into(), Cell::Num(p.index.to_string())),
        ("fingerprint".into(), Cell::Text(p.fingerprint.clone())),
    ];
    for (k, v) in &p.values {
        cells.push((k.clone(), Cell::Text(v.clone())));
    }
    cells.extend([
        ("pes".into(), Cell::Num(r.pes.to_string())),
        ("makespan_s".into(), Cell::Num(secs(r.makespan.as_ps()))),
        (
            "mean_iteration_s".into(),
            mean.map_or(Cell::Null, |m| Cell::Num(secs(m))),
        ),
        ("iterations".into(), Cell::Num(counted.to_string())),
        (
            "utilization".into(),
            Cell::Num(format!("{:.6}", r.utilization())),
        ),
        ("blocks".into(), Cell::Num(r.blocks.to_string())),
        (
            "remote_messages".into(),
            Cell::Num(r.messages.remote.to_string()),
        ),
        (
            "remote_bytes".into(),
            Cell::Num(r.messages.remote_bytes.to_string()),
        ),
    ]);
    cells.extend(lb_cells);
    Ok(Row {
        index: p.index,
        cells,
    })
}

fn manifest(study: &Study, points: &[usize]) -> String {
    let total = study.num_points();
    let covered = if points.len() == total && points.iter().enumerate().all(|(i, p)| i == *p) {
        None
    } else {
        Some(points)
    };
    manifest_text(
        &Manifest {
            study: study.name.clone(),
            fingerprint: study.fingerprint.clone(),
            total,
            x: study.x.clone(),
            series: study.series.clone(),
            optimum: study.optimum.clone(),
            constant_time: study.constant_time.as_ref().map(|c| c.0.clone()),
            constant_time_s: study.constant_time.as_ref().map_or(Vec::new(), |c| {
                c.1.iter().map(|v| format!("{v:e}")).collect()
            }),
        },
        covered,
    )
}

/// What a results folder is: the study and its plot axes.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Manifest {
    study: String,
    fingerprint: String,
    total: usize,
    x: Option<String>,
    series: Option<String>,
    optimum: Option<String>,
    constant_time: Option<String>,
    /// Target times, as written (`{:e}`).
    constant_time_s: Vec<String>,
}

/// The manifest text: `points` is `"all"` when `covered` is `None`.
fn manifest_text(m: &Manifest, covered: Option<&[usize]>) -> String {
    let covered = match covered {
        None => "\"all\"".to_string(),
        Some(p) => format!(
            "[{}]",
            p.iter().map(usize::to_string).collect::<Vec<_>>().join(",")
        ),
    };
    let opt = |v: &Option<String>| {
        v.as_ref().map_or("null".to_string(), |s| {
            serde_json::Value::String(s.clone()).to_string()
        })
    };
    format!(
        "{{\n  \"study\": {},\n  \"fingerprint\": \"{}\",\n  \"points_total\": {},\n  \"x\": {},\n  \"series\": {},\n  \"optimum\": {},\n  \"constant_time\": {},\n  \"constant_time_s\": [{}],\n  \"points\": {covered}\n}}\n",
        serde_json::Value::String(m.study.clone()),
        m.fingerprint,
        m.total,
        opt(&m.x),
        opt(&m.series),
        opt(&m.optimum),
        opt(&m.constant_time),
        m.constant_time_s.join(",")
    )
}

/// Writes the result files into `dir` (staged and put in place with the finished-run marker),
/// and the HTML report when `report`.
fn write_outputs(
    dir: &Path,
    header: &str,
    csv_rows: &[String],
    json_rows: &[String],
    manifest: &str,
    report: bool,
    force: bool,
) -> Result<()> {
    let staged = files::begin_dir(dir, force)?;
    let mut csv = String::with_capacity(64 * (csv_rows.len() + 1));
    csv.push_str(header);
    csv.push('\n');
    for r in csv_rows {
        csv.push_str(r);
        csv.push('\n');
    }
    let json = format!("[\n{}\n]\n", json_rows.join(",\n"));
    for (name, text) in [
        ("results.csv", csv.as_str()),
        ("results.json", json.as_str()),
        ("manifest.json", manifest),
    ] {
        files::write_text(&staged.path().join(name), text)?;
    }
    // Speedup, efficiency and the best grain, from the study's axes.
    let m: serde_json::Value = serde_json::from_str(manifest).ctx(|| "manifest")?;
    let targets: Vec<f64> = m["constant_time_s"].as_array().map_or(Vec::new(), |a| {
        a.iter().filter_map(|v| v.as_f64()).collect()
    });
    let constant_time = m["constant_time"].as_str().map(|k| (k, targets.as_slice()));
    for (name, text) in
        report::scaling::files(&csv, m["x"].as_str(), m["optimum"].as_str(), constant_time)?
    {
        files::write_text(&staged.path().join(name), &text)?;
    }
    if report {
        report::html::write_titled(staged.path(), None, dir)?;
    }
    files::finish_dir(staged)
}

/// The study at `path` and the points a run of it covers: shard `shard`, else point `point`,
/// else every point (`--list` shows them).
pub fn points(
    path: &Path,
    shard: Option<Shard>,
    point: Option<usize>,
) -> Result<(Study, Vec<usize>, Vec<Point>)> {
    let study = Study::from_file(path)?;
    let total = study.num_points();
    let indices: Vec<usize> = match (shard, point) {
        (Some(s), _) => (s.i..total).step_by(s.n).collect(),
        (None, Some(i)) => {
            study.point(i)?;
            vec![i]
        }
        (None, None) => (0..total).collect(),
    };
    let points: Vec<Point> = indices
        .iter()
        .map(|&i| study.point(i))
        .collect::<Result<_, _>>()?;
    Ok((study, indices, points))
}

/// What a study run leaves: its folder, its rows (results.json's lines), the time it took.
#[derive(Debug)]
pub struct SweepDone {
    /// The output folder.
    pub out: PathBuf,
    /// The rows, one JSON object per point, in point order.
    pub json_rows: Vec<String>,
}

/// Runs the points of a study `a` asks for, on `a.jobs` threads, into its output folder
/// (`results.csv`, `results.json`, `manifest.json`, the scaling files, with `report` the HTML
/// report), byte-identical whatever the thread count. Finished points are journaled beside
/// the folder, so an interrupted run resumes; `interrupt_note` gets the line an interrupt
/// should print while the journal exists (and `None` when it is gone).
pub fn run(a: &SweepSpec, interrupt_note: &mut dyn FnMut(Option<String>)) -> Result<SweepDone> {
    let (study, indices, points) = self::points(&a.study, a.shard, a.point)?;
    let total = study.num_points();
    let t0 = Instant::now();
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}-results", study.name)));
    limits::refuse_overwrite(std::slice::from_ref(&a.study), &[("--out", &out)])?;
    files::check_outputs(&[], &[("--out", &out)], a.force)?;
    let jobs = a
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .ctx(|| "cannot start worker threads")?;
    // Distinct workloads, in order of first use.
    let mut keys: Vec<String> = Vec::new();
    let mut first: Vec<usize> = Vec::new();
    for (i, p) in points.iter().enumerate() {
        if !keys.contains(&p.workload_key) {
            keys.push(p.workload_key.clone());
            first.push(i);
        }
    }
    if !a.quiet {
        eprintln!(
            "study {}: {} of {total} points, {} workload{}, {jobs} worker thread{}",
            study.name,
            points.len(),
            keys.len(),
            if keys.len() == 1 { "" } else { "s" },
            if jobs == 1 { "" } else { "s" }
        );
    }
    let traces: Vec<Arc<Trace>> = pool.install(|| {
        first
            .par_iter()
            .map(|&i| load_workload(&study, &points[i]).map(Arc::new))
            .collect::<Result<Vec<_>>>()
    })?;
    memory::checkpoint("loading the workloads");
    memory::settle(
        &estimate(&traces, &keys, &points, jobs)?,
        Some(limits::default_memory_limit()),
        a.quiet,
    )?;
    // Finished points are journaled beside the output, so an interrupted sweep resumes.
    let fingerprints: Vec<&str> = points.iter().map(|p| p.fingerprint.as_str()).collect();
    let quiet = a.quiet;
    let (done, journal) = sweep_journal::open(
        &sweep_journal::path_for(&out),
        &study.fingerprint,
        &indices,
        &fingerprints,
        &mut |n| {
            if !quiet {
                eprintln!("note: {n}")
            }
        },
    )?;
    if !done.is_empty() && !a.quiet {
        eprintln!(
            "resuming: {} of {} points finished earlier, from {} (delete it to start afresh)",
            done.len(),
            points.len(),
            journal.path().display()
        );
    }
    interrupt_note(Some(format!(
        "the finished points are kept in {}; the same command resumes from them",
        journal.path().display()
    )));
    let todo: Vec<&Point> = points
        .iter()
        .filter(|p| !done.contains_key(&p.index))
        .collect();
    let bar = if a.quiet || !std::io::stderr().is_terminal() {
        ProgressBar::with_draw_target(Some(todo.len() as u64), ProgressDrawTarget::hidden())
    } else {
        let b = ProgressBar::new(todo.len() as u64);
        b.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} points  {elapsed} (eta {eta})")
                .expect("valid template"),
        );
        b
    };
    let plain = !a.quiet && !std::io::stderr().is_terminal();
    let last = Mutex::new(Instant::now());
    let new_rows: Vec<(usize, sweep_journal::DoneRow)> = pool.install(|| {
        todo.par_iter()
            .map(|p| {
                let k = keys
                    .iter()
                    .position(|k| *k == p.workload_key)
                    .expect("loaded");
                let row = run_point(p, &traces[k]).map_err(|e| WorkflowError::Context {
                    what: {
                        let vals: Vec<String> =
                            p.values.iter().map(|(k, v)| format!("{k}={v}")).collect();
                        format!(
                            "point {} ({}); reproduce with: whatif sweep {} --point {}",
                            p.index,
                            vals.join(", "),
                            a.study.display(),
                            p.index
                        )
                    },
                    source: Box::new(e),
                });
                let row = row.and_then(|r| {
                    let d = sweep_journal::DoneRow {
                        header: r.header()?,
                        csv: r.csv_line()?,
                        json: r.json_line(),
                    };
                    journal.record(p.index, &p.fingerprint, &d)?;
                    Ok((r.index, d))
                });
                bar.inc(1);
                if plain
                    && let Ok(mut l) = last.lock()
                    && l.elapsed().as_secs_f64() >= 2.0
                {
                    *l = Instant::now();
                    eprintln!("  {}/{} points", bar.position(), todo.len());
                }
                row
            })
            .collect::<Result<Vec<_>>>()
    })?;
    bar.finish_and_clear();
    // Earlier runs' rows and this run's, in point order.
    let mut rows: BTreeMap<usize, sweep_journal::DoneRow> = done;
    rows.extend(new_rows);
    let header = rows
        .values()
        .next()
        .map(|r| r.header.clone())
        .unwrap_or_default();
    let csv_rows: Vec<String> = rows.values().map(|r| r.csv.clone()).collect();
    let json_rows: Vec<String> = rows.values().map(|r| r.json.clone()).collect();
    write_outputs(
        &out,
        &header,
        &csv_rows,
        &json_rows,
        &manifest(&study, &indices),
        a.report,
        a.force,
    )?;
    interrupt_note(None);
    journal.finish()?;
    if a.report && !a.quiet {
        eprintln!("wrote {}", out.join("report.html").display());
    }
    if !a.quiet {
        eprintln!(
            "wrote {} ({} rows: results.csv, results.json, manifest.json) in {:.2} s",
            out.display(),
            rows.len(),
            t0.elapsed().as_secs_f64()
        );
    }
    Ok(SweepDone { out, json_rows })
}
/// The row lines of a JSON results file (one object per line between `[` and `]`).
fn json_lines(text: &str, file: &Path) -> Result<Vec<String>> {
    let lines: Vec<&str> = text.lines().collect();
    if lines.first() != Some(&"[") || lines.last() != Some(&"]") {
        bail!(
            "{}: not a whatif results.json (expected `[` ... `]`)",
            file.display()
        );
    }
    Ok(lines[1..lines.len() - 1]
        .iter()
        .map(|l| l.trim_end_matches(',').to_string())
        .filter(|l| !l.is_empty())
        .collect())
}

/// Joins shard folders into the files a single run would write (see `docs/slurm.md`):
/// refuses shards of another study, overlapping shards and an incomplete set. Returns the
/// number of points.
pub fn merge(a: &MergeSpec) -> Result<usize> {
    limits::refuse_overwrite(&a.shards, &[("--out", &a.out)])?;
    files::check_outputs(&[], &[("--out", &a.out)], a.force)?;
    let mut study: Option<Manifest> = None;
    let mut header: Option<String> = None;
    let mut rows: Vec<(usize, String, String)> = Vec::new();
    let mut seen = BTreeSet::new();
    for dir in &a.shards {
        let mpath = dir.join("manifest.json");
        let m: serde_json::Value =
            serde_json::from_str(&files::read_text(&mpath, files::REPORT_FILE_BYTES)?)
                .ctx(|| format!("{}: not JSON", mpath.display()))?;
        let text = |k: &str| m[k].as_str().map(String::from);
        let id = Manifest {
            study: text("study").unwrap_or_default(),
            fingerprint: text("fingerprint").unwrap_or_default(),
            total: m["points_total"].as_u64().unwrap_or(0) as usize,
            x: text("x"),
            series: text("series"),
            optimum: text("optimum"),
            constant_time: text("constant_time"),
            constant_time_s: m["constant_time_s"].as_array().map_or(Vec::new(), |a| {
                a.iter()
                    .filter_map(|v| v.as_f64())
                    .map(|v| format!("{v:e}"))
                    .collect()
            }),
        };
        match &study {
            None => study = Some(id.clone()),
            Some(s) if *s != id => bail!(
                "{} is from study `{}` (fingerprint {}, {} points), but {} is from `{}` ({}, {} points)",
                dir.display(),
                id.study,
                id.fingerprint,
                id.total,
                a.shards[0].display(),
                s.study,
                s.fingerprint,
                s.total
            ),
            _ => {}
        }
        let cpath = dir.join("results.csv");
        let csv = files::read_text(&cpath, files::REPORT_FILE_BYTES)?;
        let mut lines = csv.lines();
        let h = lines.next().unwrap_or_default().to_string();
        match &header {
            None => header = Some(h),
            Some(x) if *x != h && !h.is_empty() => {
                bail!("{}: columns differ from the other shards", cpath.display())
            }
            _ => {}
        }
        let jpath = dir.join("results.json");
        let json = json_lines(&files::read_text(&jpath, files::REPORT_FILE_BYTES)?, &jpath)?;
        let csv_rows: Vec<&str> = lines.collect();
        if csv_rows.len() != json.len() {
            bail!(
                "{}: results.csv and results.json have different row counts",
                dir.display()
            );
        }
        for (c, j) in csv_rows.into_iter().zip(json) {
            let idx: usize = c
                .split(',')
                .next()
                .and_then(|v| v.parse().ok())
                .ctx(|| format!("{}: a row without a point index", cpath.display()))?;
            if !seen.insert(idx) {
                bail!(
                    "point {idx} appears in more than one shard (again in {})",
                    dir.display()
                );
            }
            rows.push((idx, c.to_string(), j));
        }
    }
    let manifest = study.ctx(|| "no shards given")?;
    let total = manifest.total;
    let missing: Vec<usize> = (0..total).filter(|i| !seen.contains(i)).collect();
    if !missing.is_empty() {
        bail!(
            "the shards cover {} of {total} points; missing: {}{}",
            seen.len(),
            missing
                .iter()
                .take(20)
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            if missing.len() > 20 { ", ..." } else { "" }
        );
    }
    rows.sort_by_key(|r| r.0);
    let csv_rows: Vec<String> = rows.iter().map(|r| r.1.clone()).collect();
    let json_rows: Vec<String> = rows.iter().map(|r| r.2.clone()).collect();
    let manifest = manifest_text(&manifest, None);
    write_outputs(
        &a.out,
        &header.unwrap_or_default(),
        &csv_rows,
        &json_rows,
        &manifest,
        false,
        a.force,
    )?;
    Ok(total)
}
