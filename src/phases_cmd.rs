//! `whatif phases`: MK's communication phases of a trace (pipelines, loosely synchronous
//! exchanges), each with its analytic time from MK's closed forms beside its simulated time
//! (`analysis::phases`).

use crate::{ImportOpts, MachineArgs};
use analysis::fmt_ps;
use analysis::phases::{Kind, Phases};
use anyhow::{Context, Result};
use clap::Args;
use std::fmt::Write as _;
use std::path::PathBuf;

/// Help after the options.
pub(crate) const PHASES_HELP: &str = "\
What it prints, per phase (one per receiving entry method, split when its objects form
disjoint groups, e.g. PGE2's two pipelines):
  kind        pipeline (some object receives before it sends: MK's test) or synchronous
  objects     senders / receivers
  D, B / R    pipeline depth (objects on the longest chain) and width (most messages one
              object receives), or a synchronous phase's rounds (send-then-receive cycles)
  m, tau      the largest message and its wire time alone on the network
  W           a pipeline's mean stage work (receive to forwarded send)
  analytic    MK: synchronous R (tau + s + r); pipeline (D-1)(tau + s + r + W) + B (s + r + W)
  simulated   the same span in the replay (mean over the phase's instances, one per iteration)
  why         when they differ by more than 5%: skew, contention, busy receivers
and the whole run: MK's T_s (the busiest object's time outside phases) + T_p (instances in
order, consecutive independent ones overlapped) against the replay's makespan.

Examples:
  whatif emulate pge --pes 8 --set ways=2 --machine paragon --out pge2.trace
  whatif phases pge2.trace --machine paragon
  whatif emulate atm2d --pes 16 --machine paragon --out atm.trace
  whatif phases atm.trace --machine paragon --csv atm-phases.csv";

#[derive(Args)]
pub(crate) struct PhasesArgs {
    /// Trace file (binary or JSON lines), or with --format a foreign trace.
    trace: PathBuf,
    /// Read the input as this foreign format (as `whatif import` does).
    #[arg(long, value_parser = crate::parse_format)]
    format: Option<importers::Format>,
    #[command(flatten)]
    import: ImportOpts,
    #[command(flatten)]
    machine: MachineArgs,
    /// Print the phases as one JSON object (every instance included).
    #[arg(long)]
    json: bool,
    /// Also write one CSV row per phase instance (phase, kind, epoch, begin, simulated,
    /// analytic, causes; times in ps) to this file.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// No progress or notes on stderr.
    #[arg(long, short)]
    quiet: bool,
}

pub(crate) fn phases(a: PhasesArgs) -> Result<()> {
    if let Some(p) = &a.csv {
        crate::limits::refuse_overwrite(std::slice::from_ref(&a.trace), &[("--csv", p)])?;
        crate::files::check_outputs(&[("--csv", p)], &[], a.machine.force)?;
    }
    let machine = a.machine.spec();
    let trace = workflow::load_flat(&a.trace, a.format, &a.import.spec(), &machine, a.quiet)?;
    let workflow::analyze::Baseline { spec, report, .. } =
        workflow::analyze::baseline(&trace, &machine)?;
    let pes = report.pes;
    let ph = analysis::phases::phases(&trace, &report, &spec)
        .with_context(|| format!("phase analysis of `{}`", trace.meta.name))?;
    if let Some(p) = &a.csv {
        write_csv(p, &ph)?;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&ph)?);
    } else {
        print!("{}", render(&trace.meta.name, pes, &spec.to_string(), &ph));
    }
    Ok(())
}

fn write_csv(path: &std::path::Path, ph: &Phases) -> Result<()> {
    let mut w = crate::files::csv_file(path)?;
    w.write_record([
        "phase",
        "kind",
        "epoch",
        "begin_ps",
        "simulated_ps",
        "analytic_ps",
        "messages",
        "rounds_or_width",
        "skew_ps",
        "excess_wire_ps",
        "receiver_busy_ps",
    ])?;
    for p in &ph.phases {
        for i in &p.instances {
            w.write_record([
                p.name.clone(),
                p.kind.name().to_string(),
                i.epoch.to_string(),
                i.begin_ps.to_string(),
                i.simulated_ps.to_string(),
                i.analytic_ps.to_string(),
                i.messages.to_string(),
                i.rounds_or_width.to_string(),
                i.why.skew_ps.to_string(),
                i.why.excess_wire_ps.to_string(),
                i.why.receiver_busy_ps.to_string(),
            ])?;
        }
    }
    Ok(crate::files::commit_csv(w)?)
}

/// The human-readable table.
pub(crate) fn render(name: &str, pes: u32, net: &str, ph: &Phases) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{name} on {pes} PEs, {net}");
    if ph.phases.is_empty() {
        let _ = writeln!(
            s,
            "no communication phases: no message goes from one object to another"
        );
    }
    let _ = writeln!(
        s,
        "{:<16} {:<11} {:>13} {:>7} {:>9} {:>10} {:>10} {:>5} {:>10} {:>10} {:>7}",
        "phase",
        "kind",
        "objects",
        "D B/R",
        "m",
        "tau",
        "W",
        "inst",
        "analytic",
        "simulated",
        "diff"
    );
    let mut notes = Vec::new();
    for p in &ph.phases {
        let (sim, an) = p.means();
        let widest = p
            .instances
            .iter()
            .map(|i| i.rounds_or_width)
            .max()
            .unwrap_or(0);
        let shape = match p.kind {
            Kind::Pipeline => format!("{} {}", p.depth, widest),
            Kind::Synchronous => format!("- {widest}"),
        };
        let diff = if an > 0.0 {
            format!("{:+.1}%", (sim - an) / an * 100.0)
        } else {
            "-".into()
        };
        let _ = writeln!(
            s,
            "{:<16} {:<11} {:>13} {:>7} {:>9} {:>10} {:>10} {:>5} {:>10} {:>10} {:>7}",
            report::svg::truncate(&p.name, 16),
            p.kind.name(),
            format!("{}/{}", p.senders, p.receivers),
            shape,
            fmt_bytes(p.max_bytes),
            fmt_ps(p.tau_ps),
            if p.kind == Kind::Pipeline {
                fmt_ps(p.w_ps)
            } else {
                "-".into()
            },
            p.instances.len(),
            fmt_ps(an.round() as u64),
            fmt_ps(sim.round() as u64),
            diff
        );
        if let Some(w) = p.explain() {
            notes.push(format!("{}: {w}", p.name));
        }
        if p.cyclic && p.kind == Kind::Pipeline {
            notes.push(format!(
                "{}: its chain graph has a cycle; D is the number of objects",
                p.name
            ));
        }
    }
    if let Some(p) = ph.phases.first() {
        let _ = writeln!(
            s,
            "(overheads s = {}, r = {} per message; analytic and simulated are means per instance)",
            fmt_ps(p.s_ps),
            fmt_ps(p.r_ps)
        );
    }
    if !notes.is_empty() {
        let _ = writeln!(s, "why they differ:");
        for n in notes {
            let _ = writeln!(s, "  {n}");
        }
    }
    let total = ph.analytic_ps();
    let err = if ph.makespan_ps > 0 {
        (total as f64 - ph.makespan_ps as f64) / ph.makespan_ps as f64 * 100.0
    } else {
        0.0
    };
    let _ = writeln!(
        s,
        "whole run: MK's T_s + T_p = {} + {} = {} against the simulated makespan {} ({:+.1}%)",
        fmt_ps(ph.t_s_ps),
        fmt_ps(ph.t_p_ps),
        fmt_ps(total),
        fmt_ps(ph.makespan_ps),
        err
    );
    let _ = writeln!(
        s,
        "  (T_s: PE {}'s time outside phases, the most of any PE)",
        ph.t_s_pe
    );
    s
}

fn fmt_bytes(b: u64) -> String {
    if b >= 1 << 20 {
        format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
    } else if b >= 1 << 10 {
        format!("{:.1} KiB", b as f64 / 1024.0)
    } else {
        format!("{b} B")
    }
}
