//! `whatif sweep`: run a study's points in parallel; `whatif merge`: join shard outputs.
//!
//! Output folder: `results.csv` (one row per point), `results.json` (a list with one row object
//! per line) and `manifest.json` (study, fingerprint, points total, points covered). Rows hold
//! simulated figures only, in point order, so the files are byte-identical whatever the
//! thread count, and merging shards gives exactly the single-run files.

use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

/// Help shown after the options.
pub(crate) const SWEEP_HELP: &str = "\
A study file describes the workload (a trace, or a built-in program to emulate), the machine,
the network, an optional load balancer and sweep axes; see docs/STUDIES.md and the files in
scenarios/ for complete examples. Every point gets a fingerprint of its resolved configuration
and a seed derived from the study's seed and the point index.

Examples:
  whatif sweep scenarios/studies/stencil-latency-small.toml --out study
  whatif sweep scenarios/studies/stencil-latency-small.toml --list   # the points, nothing run
  whatif sweep scenarios/studies/atm2d-paragon.toml --out atm --report --jobs 2 --json

Beyond one machine: run shards anywhere (e.g. a Slurm job array, docs/slurm.md) and join them
with `whatif merge` (see its help); the merged files are byte-identical to a single run's.";

pub(crate) const MERGE_HELP: &str = "\
Examples (shard i of n runs points i, i+n, i+2n, ...):
  whatif sweep scenarios/studies/stencil-latency-small.toml --shard 0/2 --out shard0
  whatif sweep scenarios/studies/stencil-latency-small.toml --shard 1/2 --out shard1
  whatif merge shard0 shard1 --out results      # byte-identical to a single sweep's folder";

#[derive(Args)]
pub(crate) struct SweepArgs {
    /// Study file (TOML).
    study: PathBuf,
    /// Output folder [default: `<study name>-results` in the current folder].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Worker threads, 1 to 1024 [default: all cores]. Results do not depend on it.
    #[arg(long, value_parser = parse_jobs)]
    jobs: Option<usize>,
    /// Run only shard i of n (points i, i+n, i+2n, ...), for running on several machines.
    #[arg(long, conflicts_with = "point")]
    shard: Option<workflow::sweep::Shard>,
    /// Run only this point (0-based).
    #[arg(long)]
    point: Option<usize>,
    /// Print the points (index, fingerprint, swept values) and exit.
    #[arg(long)]
    list: bool,
    /// Also write the HTML report (OUT/report.html).
    #[arg(long)]
    report: bool,
    /// No progress or notes on stderr.
    #[arg(long, short)]
    quiet: bool,
    /// Also print the results on stdout as one JSON array (the rows of results.json; with
    /// --list, the points).
    #[arg(long)]
    json: bool,
    /// Write into --out even if it is a non-empty folder that is not a whatif output (its
    /// other files are kept). A previous whatif output is always replaced as a whole.
    #[arg(long)]
    force: bool,
}

#[derive(Args)]
pub(crate) struct MergeArgs {
    /// Shard output folders (each from `whatif sweep --shard`).
    #[arg(required = true)]
    shards: Vec<PathBuf>,
    /// Output folder.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Write into --out even if it is a non-empty folder that is not a whatif output.
    #[arg(long)]
    force: bool,
    /// No summary on stderr.
    #[arg(long, short)]
    quiet: bool,
}

pub(crate) fn sweep(a: SweepArgs) -> Result<()> {
    run(&a)
}

/// `--jobs`: 1 to 1024 worker threads.
pub(crate) fn parse_jobs(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n @ 1..=1024) => Ok(n),
        _ => Err(format!(
            "expected a number of worker threads from 1 to 1024, got {}",
            sim_core::inputs::quote(s)
        )),
    }
}

fn run(a: &SweepArgs) -> Result<()> {
    if a.list {
        let (_, _, points) = workflow::sweep::points(&a.study, a.shard, a.point)?;
        if a.json {
            let v: Vec<serde_json::Value> = points
                .iter()
                .map(|p| {
                    let vals: serde_json::Map<String, serde_json::Value> = p
                        .values
                        .iter()
                        .map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string())))
                        .collect();
                    serde_json::json!({"index": p.index, "fingerprint": p.fingerprint, "values": vals})
                })
                .collect();
            println!("{}", serde_json::to_string_pretty(&v)?);
            return Ok(());
        }
        for p in &points {
            let vals: Vec<String> = p.values.iter().map(|(k, v)| format!("{k}={v}")).collect();
            println!("{:>5}  {}  {}", p.index, p.fingerprint, vals.join("  "));
        }
        return Ok(());
    }
    let done = workflow::sweep::run(
        &workflow::sweep::SweepSpec {
            study: a.study.clone(),
            out: a.out.clone(),
            jobs: a.jobs,
            shard: a.shard,
            point: a.point,
            report: a.report,
            quiet: a.quiet,
            force: a.force,
        },
        &mut crate::set_interrupt_note,
    )?;
    if a.json {
        println!("[\n{}\n]", done.json_rows.join(",\n"));
    }
    Ok(())
}

pub(crate) fn merge(a: MergeArgs) -> Result<()> {
    let total = workflow::sweep::merge(&workflow::sweep::MergeSpec {
        shards: a.shards.clone(),
        out: a.out.clone(),
        force: a.force,
    })?;
    if !a.quiet {
        eprintln!(
            "merged {} shards: {total} points into {}",
            a.shards.len(),
            a.out.display()
        );
    }
    Ok(())
}
