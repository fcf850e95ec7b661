//! `whatif lb`: compare load-balancing strategies on a trace, statically and by replay.

use crate::{MachineArgs, cpu_scale_for, machine_config, net_for};
use anyhow::{Context, Result};
use clap::Args;
use lb_strategies::{
    DbOptions, LbDatabase, LbPoint, Metrics, PeTopology, STRATEGIES_HELP, Strategy, SyncPlan,
    metrics, parse_list, sync_iterations,
};
use replay::{Mapping, Remap, ReplayConfig, ReplayReport};
use serde::Serialize;
use sim_core::units::parse_bytes;
use std::path::PathBuf;
use std::time::Instant;
use trace::Trace;

/// Help shown after the options.
pub(crate) fn lb_help() -> String {
    format!(
        "{STRATEGIES_HELP}\n\n\
How it works: the LB database is built from the trace (object loads in the window before the \
LB point, non-migratable load as background, the communication graph); each strategy maps the \
objects onto the PEs; the static metrics score the map; then the trace is replayed with the \
map applied at the LB point (`--at start`: for the whole run) on the simulated network.\n\
pre_lb / post_lb iteration: mean iteration time before the sync point K (iterations < K) and \
after it (iterations > K; iteration K contains the LB step). At the start, pre_lb is the run \
without balancing and post_lb the run with the map. Without iteration markers: the makespans.\n\n\
Example (Lee's SimpleImbalance, LB at iteration 5 of 10):\n  \
whatif emulate simple-imbalance --pes 100 --set objects_per_pe=2 --out si.trace\n  \
whatif lb si.trace --strategies dummy,rotate,greedy,refine --at 5\n\n{}",
        network_models::NET_HELP
    )
}

#[derive(Args)]
pub(crate) struct LbArgs {
    /// Trace file (binary or JSON lines), e.g. from `whatif emulate`, or with --format a
    /// foreign trace.
    trace: PathBuf,
    /// Read the input as this foreign format (as `whatif import` does).
    #[arg(long, value_parser = crate::parse_format)]
    format: Option<importers::Format>,
    #[command(flatten)]
    import: crate::ImportOpts,
    /// Strategies to compare, comma separated, each `name[:key=value,...]` (listed below)
    /// [default: dummy,rotate,random,greedy,greedy-refine,refine,rec-bipart, plus topo when
    /// the network model has a topology].
    #[arg(long)]
    strategies: Option<String>,
    /// Where the balancer runs: `start` (the map applies to the whole run) or the iteration K
    /// of a sync point (`at_sync`) in the trace [default: the first sync point, else start].
    #[arg(long)]
    at: Option<LbPoint>,
    /// Charge every moved object as a message of this many bytes from its old PE to its new
    /// one at the sync point (e.g. 64KiB); its later blocks wait for it. 0: moves are free.
    #[arg(long, default_value = "0", value_parser = parse_bytes)]
    migrate_bytes: u64,
    #[command(flatten)]
    machine: MachineArgs,
    /// Print the rows as one JSON list instead of the table.
    #[arg(long)]
    json: bool,
    /// Also write the rows to this CSV file.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Write the LB database into this folder: objects.csv, pes.csv, edges.csv, db.json.
    #[arg(long)]
    db: Option<PathBuf>,
    /// Write each strategy's map into this folder (one CSV per strategy:
    /// object,name,from_pe,to_pe).
    #[arg(long)]
    maps: Option<PathBuf>,
    /// No progress on stderr.
    #[arg(long, short)]
    quiet: bool,
}

/// One strategy's results. Simulated and static figures only (no wall-clock times), so equal
/// inputs give identical rows.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Row {
    strategy: String,
    at: String,
    pes: u32,
    pre_lb_iteration_s: f64,
    post_lb_iteration_s: f64,
    post_over_pre: f64,
    makespan_s: f64,
    idle_fraction: f64,
    max_avg_load: f64,
    max_load_s: f64,
    avg_load_s: f64,
    migrations: u64,
    migrated_bytes: u64,
    cut_bytes: u64,
    cut_messages: u64,
    hop_bytes: Option<u64>,
    remote_messages: u64,
}

fn secs(ps: u64) -> f64 {
    sim_core::SimDuration::from_ps(ps).as_secs_f64()
}

/// A time in seconds with 4 significant digits and a unit.
fn short(s: f64) -> String {
    analysis::fmt_ps((s * 1e12).round() as u64)
}

/// Mean duration (ps) of the iterations whose label passes `keep`.
fn mean_iteration(r: &ReplayReport, keep: impl Fn(u32) -> bool) -> Option<u64> {
    r.mean_iteration_ps(keep).map(|(m, _)| m)
}

pub(crate) fn replay_run(
    trace: &Trace,
    spec: &network_models::NetSpec,
    cfg: &ReplayConfig,
) -> Result<ReplayReport> {
    let mut net = spec.build();
    match replay::replay(trace, net.as_mut(), cfg) {
        Ok(r) => Ok(r),
        Err(e) => {
            Err(anyhow::Error::new(e).context(format!("replay of `{}` failed", trace.meta.name)))
        }
    }
}

pub(crate) fn lb(a: LbArgs) -> Result<()> {
    let trace = crate::load_flat(&a.trace, a.format, &a.import, &a.machine, a.quiet)?;
    let spec = net_for(&trace, &a.machine)?;
    let cpu = cpu_scale_for(&trace, &a.machine)?;
    let base_cfg = machine_config(&a.machine, &trace, cpu, false)?;
    let pes = base_cfg.pes.unwrap_or(trace.meta.recorded_pes);
    crate::limits::check_pes(pes as u64, trace.objects.len() as u64, a.machine.force)?;
    {
        let files: Vec<(&str, &std::path::Path)> =
            a.csv.iter().map(|p| ("--csv", p.as_path())).collect();
        let dirs: Vec<(&str, &std::path::Path)> = [("--db", &a.db), ("--maps", &a.maps)]
            .into_iter()
            .filter_map(|(f, p)| p.as_deref().map(|p| (f, p)))
            .collect();
        crate::limits::refuse_overwrite(
            std::slice::from_ref(&a.trace),
            &[files.clone(), dirs.clone()].concat(),
        )?;
        crate::files::check_outputs(&files, &dirs, a.machine.force)?;
    }
    let current = base_cfg
        .mapping
        .resolve(&trace, pes)
        .context("the initial placement")?;
    let topo = spec.topology().map(|(t, ppn)| PeTopology {
        topology: t.clone(),
        pes_per_node: ppn,
    });
    let strategies: Vec<Strategy> = match &a.strategies {
        Some(s) => parse_list(s)?,
        None => {
            let mut s = "dummy,rotate,random,greedy,greedy-refine,refine,rec-bipart".to_string();
            if topo.is_some() {
                s.push_str(",topo");
            }
            parse_list(&s)?
        }
    };
    let point = a.at.unwrap_or_else(|| default_point(&trace));
    let (plan, db) = database(&trace, point, &current, pes, cpu, a.migrate_bytes)?;
    let movable = plan.migratable.iter().filter(|m| **m).count();
    if !a.quiet {
        eprintln!(
            "{}: {} objects ({movable} migratable), {} blocks; LB at {point} onto {pes} PEs; \
             network {spec}; {} communicating pairs",
            trace.meta.name,
            trace.objects.len(),
            trace.num_blocks(),
            db.edges.len()
        );
    }
    if let Some(dir) = &a.db {
        let staged = crate::files::begin_dir(dir, a.machine.force)?;
        db.write_csv(staged.path())?;
        db.write_json(&staged.path().join("db.json"))?;
        crate::files::finish_dir(staged)?;
        if !a.quiet {
            eprintln!("wrote the LB database to {}", dir.display());
        }
    }
    let maps_dir = match &a.maps {
        Some(dir) => Some(crate::files::begin_dir(dir, a.machine.force)?),
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
        let map = s.map(&db, topo.as_ref(), a.machine.seed)?;
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
            a.migrate_bytes,
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
        if !a.quiet {
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
        crate::files::finish_dir(dir)?;
    }
    if let Some(p) = &a.csv {
        let mut w = crate::files::csv_file(p)?;
        for r in &rows {
            w.serialize(r)?;
        }
        crate::files::commit_csv(w)?;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        print!("{}", table(&rows, a.migrate_bytes == 0));
    }
    Ok(())
}

/// The first sync point of the trace, else the start.
pub(crate) fn default_point(trace: &Trace) -> LbPoint {
    sync_iterations(trace)
        .first()
        .map_or(LbPoint::Start, |&k| LbPoint::Iteration(k))
}

/// The sync plan and LB database at `point`, with `current` as the map before balancing.
pub(crate) fn database(
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
pub(crate) fn replay_with_map(
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

fn write_map(
    dir: &std::path::Path,
    s: &Strategy,
    t: &Trace,
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
    let mut w =
        csv::Writer::from_path(&p).with_context(|| format!("cannot write {}", p.display()))?;
    w.write_record(["object", "name", "from_pe", "to_pe"])?;
    for (o, info) in t.objects.iter().enumerate() {
        w.write_record([
            o.to_string(),
            info.name.clone(),
            from[o].to_string(),
            to[o].to_string(),
        ])?;
    }
    w.flush()?;
    Ok(())
}

fn mb(bytes: u64) -> String {
    sim_core::units::human_bytes(bytes)
}

/// The human table. `free_moves`: no --migrate-bytes, so moved bytes are not charged ("free").
fn table(rows: &[Row], free_moves: bool) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let head = [
        "strategy",
        "max/avg",
        "moved",
        "moved bytes",
        "cut bytes",
        "hop-bytes",
        "pre-LB iter",
        "post-LB iter",
        "post/pre",
        "makespan",
        "idle",
    ];
    let body: Vec<[String; 11]> = rows
        .iter()
        .map(|r| {
            [
                r.strategy.clone(),
                format!("{:.3}", r.max_avg_load),
                r.migrations.to_string(),
                if free_moves {
                    "free".into()
                } else {
                    mb(r.migrated_bytes)
                },
                mb(r.cut_bytes),
                r.hop_bytes.map_or("-".into(), mb),
                short(r.pre_lb_iteration_s),
                short(r.post_lb_iteration_s),
                format!("{:.4}", r.post_over_pre),
                short(r.makespan_s),
                format!("{:.1}%", r.idle_fraction * 100.0),
            ]
        })
        .collect();
    let mut width = head.map(str::len);
    for b in &body {
        for (w, c) in width.iter_mut().zip(b) {
            *w = (*w).max(c.len());
        }
    }
    let line = |cells: &[&str]| {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(width).enumerate() {
            if i == 0 {
                let _ = write!(s, "{c:<w$}");
            } else {
                let _ = write!(s, "  {c:>w$}");
            }
        }
        s
    };
    let _ = writeln!(out, "{}", line(&head));
    for b in &body {
        let cells: Vec<&str> = b.iter().map(String::as_str).collect();
        let _ = writeln!(out, "{}", line(&cells));
    }
    out
}
