//! `whatif lb`: compare load-balancing strategies on a trace, statically and by replay.

use crate::MachineArgs;
use anyhow::Result;
use clap::Args;
use lb_strategies::{LbPoint, STRATEGIES_HELP};
use serde::Serialize;
use sim_core::units::parse_bytes;
use std::path::PathBuf;

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
Examples (Lee's SimpleImbalance, LB at iteration 5 of 10):\n  \
whatif emulate simple-imbalance --pes 100 --set objects_per_pe=2 --out si.trace\n  \
whatif lb si.trace --strategies dummy,rotate,greedy,refine --at 5\n  \
whatif lb si.trace --strategies greedy,topo --at start --pes 64 --net hops:topo=mesh:8x8,lat=1us,bw=1GB/s --json\n\n{}",
        network_models::NET_HELP
    )
}

#[derive(Args)]
pub(crate) struct LbArgs {
    /// Trace file (binary or JSON lines), e.g. from `whatif emulate`, or with --format a
    /// foreign trace.
    trace: PathBuf,
    /// Read the input as this foreign format (as `whatif import` does), or `lbdump`: a
    /// Charm++ load-balancing database dump (`+LBDump`, one file `NAME.step`), whose loads and
    /// communication graph the strategies are compared on, as Charm++'s `+LBSim` does.
    #[arg(long, value_parser = parse_lb_format)]
    format: Option<LbFormat>,
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

/// What `whatif lb` reads.
#[derive(Clone, Copy, Debug)]
pub(crate) enum LbFormat {
    /// A trace (a foreign format, imported first).
    Trace(importers::Format),
    /// A Charm++ `+LBDump` file.
    LbDump,
}

fn parse_lb_format(s: &str) -> Result<LbFormat, String> {
    if s == "lbdump" {
        Ok(LbFormat::LbDump)
    } else {
        crate::parse_format(s)
            .map(LbFormat::Trace)
            .map_err(|e| format!("{e}, or lbdump (a Charm++ +LBDump file, `whatif lb` only)"))
    }
}

/// A time in seconds with 4 significant digits and a unit.
fn short(s: f64) -> String {
    analysis::fmt_ps((s * 1e12).round() as u64)
}

pub(crate) fn lb(a: LbArgs) -> Result<()> {
    let format = match a.format {
        Some(LbFormat::LbDump) => return lb_dump(&a),
        Some(LbFormat::Trace(f)) => Some(f),
        None => None,
    };
    let machine = a.machine.spec();
    let input = workflow::whatif_trace(
        workflow::load(&a.trace, format, &a.import.spec(), &machine, a.quiet)?,
        &machine,
    )?;
    let rows = workflow::lb::compare(input, &machine, &lb_spec(&a))?;
    let text = table(&rows, a.migrate_bytes == 0);
    emit(&a, None, &rows, &text)?;
    Ok(())
}

/// Commits the maps folder, writes `--csv`, and prints the rows as JSON (`--json`) or `text`.
fn emit<R: Serialize>(
    a: &LbArgs,
    maps_dir: Option<safe_output::OutputDir>,
    rows: &[R],
    text: &str,
) -> Result<()> {
    if let Some(dir) = maps_dir {
        crate::files::finish_dir(dir)?;
    }
    if let Some(p) = &a.csv {
        workflow::lb::write_csv(p, rows)?;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(rows)?);
    } else {
        print!("{text}");
    }
    Ok(())
}

fn mb(bytes: u64) -> String {
    sim_core::units::human_bytes(bytes)
}

/// Left-aligned first column, right-aligned others, two spaces apart.
fn render<const N: usize>(head: &[&str; N], body: &[[String; N]]) -> String {
    use std::fmt::Write;
    let mut width = head.map(str::len);
    for b in body {
        for (w, c) in width.iter_mut().zip(b) {
            *w = (*w).max(c.len());
        }
    }
    let mut out = String::new();
    let rows = std::iter::once(head.map(String::from)).chain(body.iter().cloned());
    for cells in rows {
        let mut line = String::new();
        for (j, (c, w)) in cells.iter().zip(width).enumerate() {
            if j == 0 {
                let _ = write!(line, "{c:<w$}");
            } else {
                let _ = write!(line, "  {c:>w$}");
            }
        }
        let _ = writeln!(out, "{line}");
    }
    out
}

/// The human table. `free_moves`: no --migrate-bytes, so moved bytes are not charged ("free").
fn table(rows: &[workflow::lb::Row], free_moves: bool) -> String {
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
    render(&head, &body)
}

/// What the flags ask `workflow::lb` to compare and write.
fn lb_spec(a: &LbArgs) -> workflow::lb::LbSpec {
    workflow::lb::LbSpec {
        strategies: a.strategies.clone(),
        at: a.at,
        migrate_bytes: a.migrate_bytes,
        db: a.db.clone(),
        maps: a.maps.clone(),
        csv: a.csv.clone(),
        inputs: vec![a.trace.clone()],
        quiet: a.quiet,
    }
}

/// `whatif lb --format lbdump`: strategies on a Charm++ LB database dump.
fn lb_dump(a: &LbArgs) -> Result<()> {
    let rows = workflow::lb::compare_dump(&a.trace, &a.machine.spec(), &lb_spec(a))?;
    let text = dump_table(&rows);
    emit(a, None, &rows, &text)?;
    Ok(())
}

fn dump_table(rows: &[workflow::lb::DumpRow]) -> String {
    let head = [
        "strategy",
        "max/avg",
        "moved",
        "moved bytes",
        "cut msgs",
        "cut bytes",
        "hop-bytes",
        "max load",
        "max comm",
        "predicted step",
    ];
    let body: Vec<[String; 10]> = rows
        .iter()
        .map(|r| {
            [
                r.strategy.clone(),
                format!("{:.3}", r.max_avg_load),
                r.migrations.to_string(),
                if r.migrated_bytes == 0 {
                    "free".into()
                } else {
                    mb(r.migrated_bytes)
                },
                r.cut_messages.to_string(),
                mb(r.cut_bytes),
                r.hop_bytes.map_or("-".into(), mb),
                short(r.max_load_s),
                short(r.max_comm_s),
                short(r.predicted_step_s),
            ]
        })
        .collect();
    render(&head, &body)
}
