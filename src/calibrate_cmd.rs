//! `whatif calibrate`: the command line of `workflow::calibrate`.

use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

pub(crate) const CALIBRATE_HELP: &str = "\
How it works: every measurement is one point of the study (its sweep axes dropped, the
measurement's KEY=VALUE settings applied); the parameter is searched in [--lo, --hi] (--hi
doubles from the study's value until the prediction passes the measurement). The parameter
must make the metric grow (or stay): costs, latencies, per-cell times. The calibrated study
keeps its sweep axes, so `whatif sweep` on it predicts the whole grid. Several --param flags
fit several parameters by least squares (coordinate descent, each in 0 .. 4 x its study
value; at least as many measurements as parameters, with different mixes of the costs).

Examples (MK's ATM2D, calibrated on one Paragon run of P = 4, lambda = 128: 0.817 s):
  whatif calibrate scenarios/studies/atm2d-paragon.toml --param params.cell_cost \\
      --measured workload.pes=4,params.lambda=128:0.817s --out atm2d-calibrated.toml
  whatif sweep atm2d-calibrated.toml --out atm/
  whatif calibrate scenarios/studies/atm2d-paragon.toml --param params.cell_cost \\
      --measured workload.pes=4,params.lambda=128:0.817s \\
      --measured workload.pes=16,params.lambda=256:3.2s --out atm2d-fit.toml   # least squares
Several --param flags fit several parameters at once, e.g. --param params.cell_cost --param
net.lat on a study whose network has a latency, with at least as many measurements.";

#[derive(Args)]
pub(crate) struct CalibrateArgs {
    /// The study file to calibrate.
    study: PathBuf,
    /// The dotted key of the parameter to set, e.g. params.cell_cost, net.lat,
    /// machine.block_overhead. Durations (e.g. `1us`) are searched to the picosecond.
    /// Repeat it to set several at once (least squares by coordinate descent; give at least
    /// as many measurements as parameters).
    #[arg(long, required = true)]
    param: Vec<String>,
    /// A measurement, repeatable: KEY=VALUE[,KEY=VALUE...]:TIME, the time with its unit as
    /// every duration (e.g. workload.pes=4,params.lambda=128:0.817s or ...:82.94ms).
    #[arg(long = "measured", required = true, value_name = "SETTINGS:TIME")]
    measured: Vec<String>,
    /// The predicted column to match: makespan_s or mean_iteration_s.
    #[arg(long, default_value = "makespan_s")]
    metric: String,
    /// Lower end of the search [default: 0]. One parameter only.
    #[arg(long)]
    lo: Option<String>,
    /// Upper end of the search [default: found by doubling; with several parameters each is
    /// searched in 0 .. 4 x its value in the study]. One parameter only.
    #[arg(long)]
    hi: Option<String>,
    /// Where to write the calibrated study.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// No progress on stderr.
    #[arg(short, long)]
    quiet: bool,
}

pub(crate) fn calibrate(a: CalibrateArgs) -> Result<()> {
    crate::files::check_outputs(&[("--out", &a.out)], &[], false)?;
    let quiet = a.quiet;
    let c = workflow::calibrate::calibrate(
        &workflow::calibrate::CalibrateSpec {
            study: a.study.clone(),
            param: a.param.clone(),
            measured: a.measured.clone(),
            metric: a.metric.clone(),
            lo: a.lo.clone(),
            hi: a.hi.clone(),
            out: a.out.clone(),
        },
        &mut |old, new| crate::spelling::note_old(old, new, quiet),
    )?;
    for s in &c.set {
        println!("{s}");
    }
    for line in &c.fits {
        println!("  {line}");
    }
    if !a.quiet {
        eprintln!("wrote {}", a.out.display());
    }
    Ok(())
}
