//! Load balancing, compared (`whatif lb`): the LB database at a sync point, each strategy's
//! map with its static metrics, and a replay with the map applied there; the rows a table, a
//! CSV or a sweep point is made from.
//!
//! # Example
//!
//! ```
//! use workflow::emulate::{EmulateSpec, emulate};
//! use workflow::lb::{LbSpec, compare};
//! // Lee's SimpleImbalance on 10 PEs, load balanced at iteration 5 of 10.
//! let mut e = EmulateSpec::new("simple-imbalance", 10, "latency:lat=1us".parse()?);
//! e.sets = vec![
//!     ("objects_per_pe".into(), "2".into()),
//!     ("iters".into(), "10".into()),
//!     ("lb_at".into(), "5".into()),
//! ];
//! e.flat = true;
//! let trace = trace::Repeated::flat(emulate(&e)?.emulation.trace);
//! let spec = LbSpec {
//!     strategies: Some("dummy,greedy".into()),
//!     at: Some(lb_strategies::LbPoint::Iteration(5)),
//!     quiet: true,
//!     ..LbSpec::default()
//! };
//! let rows = compare(trace, &Default::default(), &spec)?;
//! assert_eq!(rows.len(), 2);
//! // Doing nothing moves nothing; greedy balances the load, and the iterations after the
//! // LB step are no slower than with no balancing.
//! assert_eq!(rows[0].migrations, 0);
//! assert!(rows[1].max_avg_load <= rows[0].max_avg_load);
//! assert!(rows[1].post_lb_iteration_s <= rows[0].post_lb_iteration_s);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::error::{Ctx, Result, bail};
use crate::machine::{MachineSpec, cpu_scale_for, machine_config, machine_for, net_for};
use crate::{files, limits, memory};
use lb_strategies::{
    DbOptions, LbDatabase, LbPoint, Metrics, PeTopology, Strategy, SyncPlan, metrics, parse_list,
    sync_iterations,
};
use replay::{Mapping, Remap, ReplayConfig, ReplayReport};
use serde::Serialize;
use std::path::PathBuf;
use std::time::Instant;
use trace::{Repeated, Trace};

/// What to compare and what to write besides the rows.
#[derive(Clone, Debug, Default)]
pub struct LbSpec {
    /// The strategies (`greedy,refine`) [default: all; `topo` too with a topology].
    pub strategies: Option<String>,
    /// The LB point [default: the first sync point, else the start].
    pub at: Option<LbPoint>,
    /// Bytes each migrated object costs as a message (0: free moves).
    pub migrate_bytes: u64,
    /// Write the LB database (CSV and JSON) into this folder.
    pub db: Option<PathBuf>,
    /// Write each strategy's map into this folder.
    pub maps: Option<PathBuf>,
    /// A CSV file the rows will be written to (checked before the work).
    pub csv: Option<PathBuf>,
    /// The files the command read (outputs must not overwrite them).
    pub inputs: Vec<PathBuf>,
    /// No notes on stderr.
    pub quiet: bool,
}

/// One strategy's results. Simulated and static figures only (no wall-clock times), so equal
/// inputs give identical rows.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// The strategy.
    pub strategy: String,
    /// The LB point (`start` or an iteration).
    pub at: String,
    /// Simulated PEs.
    pub pes: u32,
    /// Mean iteration time before the LB point (s; at the start: without balancing).
    pub pre_lb_iteration_s: f64,
    /// Mean iteration time after it (s).
    pub post_lb_iteration_s: f64,
    /// post / pre.
    pub post_over_pre: f64,
    /// The run's makespan (s).
    pub makespan_s: f64,
    /// Share of PE time idle.
    pub idle_fraction: f64,
    /// Max over mean PE load of the map.
    pub max_avg_load: f64,
    /// The most loaded PE's load (s).
    pub max_load_s: f64,
    /// The mean PE load (s).
    pub avg_load_s: f64,
    /// Objects moved.
    pub migrations: u64,
    /// Bytes moved.
    pub migrated_bytes: u64,
    /// Bytes between PEs.
    pub cut_bytes: u64,
    /// Messages between PEs.
    pub cut_messages: u64,
    /// Bytes x hops (with a topology).
    pub hop_bytes: Option<u64>,
    /// Messages between PEs in the replay.
    pub remote_messages: u64,
}

/// Picoseconds as seconds.
pub fn secs(ps: u64) -> f64 {
    sim_core::SimDuration::from_ps(ps).as_secs_f64()
}

/// Mean duration (ps) of the iterations whose label passes `keep`.
fn mean_iteration(r: &ReplayReport, keep: impl Fn(u32) -> bool) -> Option<u64> {
    r.mean_iteration_ps(keep).map(|(m, _)| m)
}

/// Replays `trace` (the error names the trace).
pub fn replay_run(
    trace: &Trace,
    spec: &network_models::NetSpec,
    cfg: &ReplayConfig,
) -> Result<ReplayReport> {
    let mut net = spec.build();
    replay::replay(trace, net.as_mut(), cfg)
        .ctx(|| format!("replay of `{}` failed", trace.meta.name))
}

/// Compares the strategies of `l` on `input` on the machine `m` describes: the memory estimate
/// and the outputs are checked first; the database and maps are written as asked; one row per
/// strategy, in the order given.
pub fn compare(input: Repeated, m: &MachineSpec, l: &LbSpec) -> Result<Vec<Row>> {
    {
        let crate::Machine { spec, cfg, .. } = machine_for(input.body(), m)?;
        memory::settle(
            &memory::lb_estimate(&input, &spec, &cfg)?,
            cfg.limits.max_memory_bytes,
            l.quiet,
        )?;
    }
    let trace = memory::expand(input, m.max_memory, Vec::new(), l.quiet)?;
    let spec = net_for(&trace, m)?;
    let cpu = cpu_scale_for(&trace, m)?;
    let base_cfg = machine_config(m, &trace, cpu, false)?;
    let pes = base_cfg.pes.unwrap_or(trace.meta.recorded_pes);
    limits::check_pes(pes as u64, trace.objects.len() as u64, m.force)?;
    check_outputs(m, l)?;
    let current = base_cfg
        .mapping
        .resolve(&trace, pes)
        .ctx(|| "the initial placement")?;
    let topo = spec.topology().map(|(t, ppn)| PeTopology {
        topology: t.clone(),
        pes_per_node: ppn,
    });
    let strategies = strategies(l.strategies.as_deref(), topo.is_some())?;
    let point = l.at.unwrap_or_else(|| default_point(&trace));
    let (plan, db) = database(&trace, point, &current, pes, cpu, l.migrate_bytes)?;
    let movable = plan.migratable.iter().filter(|m| **m).count();
    if !l.quiet {
        eprintln!(
            "{}: {} objects ({movable} migratable), {} blocks; LB at {point} onto {pes} PEs; \
             network {spec}; {} communicating pairs",
            trace.meta.name,
            trace.objects.len(),
            trace.num_blocks(),
            db.edges.len()
        );
    }
    if movable == 0 {
        let pinned = trace.objects.iter().filter(|o| o.pinned).count();
        let why = if pinned > 0 {
            format!(
                " ({pinned} of {} objects are pinned: a Charm++ log's per-PE objects hold \
                 groups, the main chare and singleton chares, which never migrate)",
                trace.objects.len()
            )
        } else {
            String::new()
        };
        eprintln!(
            "warning: no object of `{}` can move at {point}{why}, so every strategy keeps the \
             current placement",
            trace.meta.name
        );
    }
    if let Some(dir) = &l.db {
        let staged = files::begin_dir(dir, m.force)?;
        db.write_csv(staged.path())?;
        db.write_json(&staged.path().join("db.json"))?;
        files::finish_dir(staged)?;
        if !l.quiet {
            eprintln!("wrote the LB database to {}", dir.display());
        }
    }
    let maps_dir = match &l.maps {
        Some(dir) => Some(files::begin_dir(dir, m.force)?),
        None => None,
    };

    // Without balancing, for the pre-LB figure at the start.
    let baseline = if point == LbPoint::Start {
        Some(replay_run(&trace, &spec, &base_cfg)?)
    } else {
        None
    };
    let mut rows = Vec::with_capacity(strategies.len());
    for s in &strategies {
        let t0 = Instant::now();
        let map = s.map(&db, topo.as_ref(), m.seed)?;
        let decided = t0.elapsed();
        let m: Metrics = metrics(&db, &map, topo.as_ref());
        if let Some(dir) = &maps_dir {
            write_map(dir.path(), s, &trace, &current, &map)?;
        }
        let t1 = Instant::now();
        let r = replay_with_map(
            &trace,
            &spec,
            &base_cfg,
            &plan,
            &current,
            map,
            l.migrate_bytes,
        )?;
        let (pre, post) = match (point, &baseline) {
            (LbPoint::Iteration(k), _) => (
                mean_iteration(&r, |l| l < k),
                mean_iteration(&r, |l| l > k).or_else(|| mean_iteration(&r, |l| l == k)),
            ),
            (LbPoint::Start, Some(b)) => {
                (mean_iteration(b, |_| true), mean_iteration(&r, |_| true))
            }
            (LbPoint::Start, None) => unreachable!("the baseline runs at the start"),
        };
        let (pre, post) = match (pre, post) {
            (Some(x), Some(y)) => (x, y),
            // No iteration markers (or none on one side): whole runs.
            _ => (
                baseline
                    .as_ref()
                    .map_or(r.makespan.as_ps(), |b| b.makespan.as_ps()),
                r.makespan.as_ps(),
            ),
        };
        if !l.quiet {
            eprintln!(
                "  {s}: decided in {:.1} ms, replayed in {:.1} ms",
                decided.as_secs_f64() * 1e3,
                t1.elapsed().as_secs_f64() * 1e3
            );
        }
        rows.push(Row {
            strategy: s.to_string(),
            at: point.to_string(),
            pes,
            pre_lb_iteration_s: secs(pre),
            post_lb_iteration_s: secs(post),
            post_over_pre: if pre == 0 {
                0.0
            } else {
                post as f64 / pre as f64
            },
            makespan_s: secs(r.makespan.as_ps()),
            idle_fraction: 1.0 - r.utilization(),
            max_avg_load: m.max_avg_load,
            max_load_s: secs(m.max_load_ps),
            avg_load_s: secs(m.avg_load_ps),
            migrations: m.migrations,
            migrated_bytes: m.migrated_bytes,
            cut_bytes: m.cut_bytes,
            cut_messages: m.cut_messages,
            hop_bytes: m.hop_bytes,
            remote_messages: r.messages.remote,
        });
    }
    if let Some(dir) = maps_dir {
        files::finish_dir(dir)?;
    }
    Ok(rows)
}

/// Refuses outputs that would overwrite an input or an existing file (unless forced).
pub fn check_outputs(m: &MachineSpec, l: &LbSpec) -> Result<()> {
    let files: Vec<(&str, &std::path::Path)> =
        l.csv.iter().map(|p| ("--csv", p.as_path())).collect();
    let dirs: Vec<(&str, &std::path::Path)> = [("--db", &l.db), ("--maps", &l.maps)]
        .into_iter()
        .filter_map(|(f, p)| p.as_deref().map(|p| (f, p)))
        .collect();
    limits::refuse_overwrite(
        &[l.inputs.clone(), m.files_read()].concat(),
        &[files.clone(), dirs.clone()].concat(),
    )?;
    files::check_outputs(&files, &dirs, m.force)
}

/// Writes rows (of [`compare`], or of an LB dump's comparison) as CSV, one per strategy.
pub fn write_csv<R: Serialize>(path: &std::path::Path, rows: &[R]) -> Result<()> {
    let mut w = files::csv_file(path)?;
    for r in rows {
        w.serialize(r)?;
    }
    Ok(files::commit_csv(w)?)
}

/// `--strategies`, else every strategy (and `topo` when the network has a topology).
pub fn strategies(list: Option<&str>, has_topology: bool) -> Result<Vec<Strategy>> {
    Ok(match list {
        Some(s) => parse_list(s)?,
        None => {
            let mut s = "dummy,rotate,random,greedy,greedy-refine,refine,rec-bipart".to_string();
            if has_topology {
                s.push_str(",topo");
            }
            parse_list(&s)?
        }
    })
}

/// The first sync point of the trace, else the start.
pub fn default_point(trace: &Trace) -> LbPoint {
    sync_iterations(trace)
        .first()
        .map_or(LbPoint::Start, |&k| LbPoint::Iteration(k))
}

/// The sync plan and LB database at `point`, with `current` as the map before balancing.
pub fn database(
    trace: &Trace,
    point: LbPoint,
    current: &[u32],
    pes: u32,
    cpu: sim_core::Ratio,
    migrate_bytes: u64,
) -> Result<(SyncPlan, LbDatabase)> {
    let plan = SyncPlan::find(trace, point)?;
    let db = LbDatabase::from_trace(
        trace,
        &plan,
        &DbOptions {
            current,
            pes,
            cpu_scale: &[cpu],
            migrate_bytes,
        },
    )?;
    Ok((plan, db))
}

/// Replays `trace` with `map` applied at the plan's point: as the whole run's mapping at the
/// start, else as a remap after each object's sync block (charging migrations when
/// `migrate_bytes > 0`).
pub fn replay_with_map(
    trace: &Trace,
    spec: &network_models::NetSpec,
    base_cfg: &ReplayConfig,
    plan: &SyncPlan,
    current: &[u32],
    map: Vec<u32>,
    migrate_bytes: u64,
) -> Result<ReplayReport> {
    let pes = base_cfg.pes.unwrap_or(trace.meta.recorded_pes);
    match plan.point {
        LbPoint::Start => {
            let cfg = ReplayConfig {
                mapping: Mapping::Explicit(map),
                pes: Some(pes),
                ..base_cfg.clone()
            };
            replay_run(trace, spec, &cfg)
        }
        LbPoint::Iteration(_) => {
            let remap = Remap {
                map,
                switch_after: plan.switch_after.clone(),
            };
            if migrate_bytes > 0 {
                let bytes = vec![migrate_bytes; trace.objects.len()];
                let (t2, r2, _) = replay::with_migration_cost(trace, &remap, current, &bytes)?;
                let cfg = ReplayConfig {
                    remap: Some(r2),
                    ..base_cfg.clone()
                };
                replay_run(&t2, spec, &cfg)
            } else {
                let cfg = ReplayConfig {
                    remap: Some(remap),
                    ..base_cfg.clone()
                };
                replay_run(trace, spec, &cfg)
            }
        }
    }
}

/// Writes a strategy's map of `t`'s objects (see [`write_named_map`]).
pub fn write_map(
    dir: &std::path::Path,
    s: &Strategy,
    t: &Trace,
    from: &[u32],
    to: &[u32],
) -> Result<()> {
    let names: Vec<String> = t.objects.iter().map(|o| o.name.clone()).collect();
    write_named_map(dir, s, &names, from, to)
}

/// Writes a strategy's map as `DIR/<strategy>.csv` (`object,name,from_pe,to_pe`).
pub fn write_named_map(
    dir: &std::path::Path,
    s: &Strategy,
    names: &[String],
    from: &[u32],
    to: &[u32],
) -> Result<()> {
    let name: String = s
        .to_string()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let p = dir.join(format!("{name}.csv"));
    let mut w = csv::Writer::from_path(&p).ctx(|| format!("cannot write {}", p.display()))?;
    w.write_record(["object", "name", "from_pe", "to_pe"])?;
    for (o, n) in names.iter().enumerate() {
        w.write_record([
            o.to_string(),
            n.clone(),
            from[o].to_string(),
            to[o].to_string(),
        ])?;
    }
    w.flush()?;
    Ok(())
}

/// One strategy on an LB dump: static figures only (there is no trace to replay).
#[derive(Clone, Debug, Serialize)]
pub struct DumpRow {
    /// The strategy.
    pub strategy: String,
    /// PEs.
    pub pes: u32,
    /// Max over mean PE load.
    pub max_avg_load: f64,
    /// The most loaded PE's load (s).
    pub max_load_s: f64,
    /// The mean PE load (s).
    pub avg_load_s: f64,
    /// Objects moved.
    pub migrations: u64,
    /// Bytes moved.
    pub migrated_bytes: u64,
    /// Messages between PEs.
    pub cut_messages: u64,
    /// Bytes between PEs.
    pub cut_bytes: u64,
    /// Bytes x hops (with a topology).
    pub hop_bytes: Option<u64>,
    /// Network time of the busiest PE's remote messages and migrations (each message's send
    /// overhead, wire time and receive overhead under the network model; a moved object is
    /// one message of `--migrate-bytes` for its old and its new PE; not overlapped with
    /// computation).
    pub max_comm_s: f64,
    /// Predicted LB period: the largest PE load plus its remote messages' network time.
    pub predicted_step_s: f64,
}

/// `whatif lb --format lbdump`: strategies on a Charm++ LB database dump.
/// `whatif lb --format lbdump`: the strategies of `l` on the Charm++ LB database dump at
/// `path` (one LB step's database; no trace to replay): static figures and the predicted LB
/// period under the network model of `m`.
pub fn compare_dump(path: &std::path::Path, m: &MachineSpec, l: &LbSpec) -> Result<Vec<DumpRow>> {
    if l.at.is_some() {
        bail!(
            "--at does not apply to an LB dump: the dump is one LB step's database (choose the step by the file, NAME.<step>)"
        );
    }
    let bytes = sim_core::inputs::read(path, 1 << 30)?;
    let name = path.display().to_string();
    let dump = lb_strategies::parse_lbdump(&bytes, &name)?;
    let pes = match m.pes {
        None => None,
        Some(crate::PeCount::N(n)) => Some(n),
        Some(crate::PeCount::PerObject) => Some(dump.objects.len().max(1) as u32),
    };
    let empty = trace::TraceBuilder::new(trace::TraceMeta {
        name: name.clone(),
        generator: String::new(),
        description: String::new(),
        recorded_pes: dump.pes.len() as u32,
        net: None,
        seed: None,
        cpu_scale: None,
        sequential_objects: false,
    })
    .finish()?;
    let spec = net_for(&empty, m)?;
    let cpu = cpu_scale_for(&empty, m)?;
    let (db, used) = dump.database(pes, cpu, l.migrate_bytes)?;
    let pes = db.num_pes();
    limits::check_pes(pes as u64, db.objects.len() as u64, m.force)?;
    check_outputs(m, l)?;
    let topo = spec.topology().map(|(t, ppn)| PeTopology {
        topology: t.clone(),
        pes_per_node: ppn,
    });
    let strategies = strategies(l.strategies.as_deref(), topo.is_some())?;
    if !l.quiet {
        let movable = db.objects.iter().filter(|o| o.migratable).count();
        let load: f64 = dump.objects.iter().map(|o| o.wall_s).sum();
        eprintln!(
            "{name}: Charm++ LB database (format version {}), {} PEs reported, {} objects ({movable} migratable, {load:.6} s of load), {} communication records ({} communicating pairs); onto {pes} PEs; network {spec}",
            dump.lbversion,
            dump.pes.len(),
            db.objects.len(),
            dump.comm.len(),
            db.edges.len()
        );
        if used.pe_records + used.unknown_objects + used.negative > 0 {
            eprintln!(
                "  not in the graph: {} records from or to a PE, {} naming an object not in the dump, {} with negative counts",
                used.pe_records, used.unknown_objects, used.negative
            );
        }
    }
    if let Some(dir) = &l.db {
        let staged = files::begin_dir(dir, m.force)?;
        db.write_csv(staged.path())?;
        db.write_json(&staged.path().join("db.json"))?;
        files::finish_dir(staged)?;
    }
    let maps_dir = match &l.maps {
        Some(dir) => Some(files::begin_dir(dir, m.force)?),
        None => None,
    };
    let names: Vec<String> = db.objects.iter().map(|o| o.name.clone()).collect();
    let current = db.current_map();
    let mut net = spec.build();
    let mut rows = Vec::with_capacity(strategies.len());
    for s in &strategies {
        let map = s.map(&db, topo.as_ref(), m.seed)?;
        let mt: Metrics = metrics(&db, &map, topo.as_ref());
        if let Some(dir) = &maps_dir {
            write_named_map(dir.path(), s, &names, &current, &map)?;
        }
        // Network time of each PE's remote messages.
        let mut comm = vec![0u64; pes as usize];
        for e in &db.edges {
            let (pa, pb) = (map[e.a as usize], map[e.b as usize]);
            if pa == pb || e.messages == 0 {
                continue;
            }
            let msg = network_models::MessageInfo {
                src_pe: pa,
                dst_pe: pb,
                bytes: e.bytes / e.messages,
            };
            let t = net_time(net.as_mut(), &msg).saturating_mul(e.messages);
            for p in [pa, pb] {
                comm[p as usize] = comm[p as usize].saturating_add(t);
            }
        }
        // Moving an object costs its old and its new PE one message of its size.
        for (o, r) in db.objects.iter().enumerate() {
            let (from, to) = (r.from_pe, map[o]);
            if from == to || r.migrate_bytes == 0 {
                continue;
            }
            let msg = network_models::MessageInfo {
                src_pe: from,
                dst_pe: to,
                bytes: r.migrate_bytes,
            };
            let t = net_time(net.as_mut(), &msg);
            for p in [from, to] {
                comm[p as usize] = comm[p as usize].saturating_add(t);
            }
        }
        let raw = db.raw_loads(&map);
        let step = raw
            .iter()
            .enumerate()
            .map(|(p, &r)| db.effective_ps(p as u32, r).saturating_add(comm[p]))
            .max()
            .unwrap_or(0);
        rows.push(DumpRow {
            strategy: s.to_string(),
            pes,
            max_avg_load: mt.max_avg_load,
            max_load_s: secs(mt.max_load_ps),
            avg_load_s: secs(mt.avg_load_ps),
            migrations: mt.migrations,
            migrated_bytes: mt.migrated_bytes,
            cut_messages: mt.cut_messages,
            cut_bytes: mt.cut_bytes,
            hop_bytes: mt.hop_bytes,
            max_comm_s: secs(comm.iter().copied().max().unwrap_or(0)),
            predicted_step_s: secs(step),
        });
    }
    if let Some(dir) = maps_dir {
        files::finish_dir(dir)?;
    }
    Ok(rows)
}

fn net_time(net: &mut dyn network_models::NetworkModel, msg: &network_models::MessageInfo) -> u64 {
    net.wire_time(msg, sim_core::SimTime::ZERO)
        .as_ps()
        .saturating_add(net.send_overhead(msg).as_ps())
        .saturating_add(net.recv_overhead(msg).as_ps())
}
