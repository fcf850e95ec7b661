//! whatif's workflow as a typed API: what the command line does, callable from Rust (and from
//! Python, through the `whatif` Python package built on this crate).
//!
//! The steps of a prediction, each a function of typed values (no argument parser here: the
//! command line converts its flags into these types, the Python package its keyword
//! arguments):
//!
//! 1. **Input** ([`input`]): [`load`] reads a whatif trace, flat or repeated, or imports a
//!    foreign one ([`importers::Format`]: BigSim, Projections, SimGrid TI, GOAL, OTF2) with an
//!    [`ImportSpec`]; a file that is not a whatif trace gets an error naming the `--format`
//!    its name suggests.
//! 2. **Machine** ([`machine`]): a [`MachineSpec`] (network model or model file, PE count,
//!    placement, CPU factor, scheduling, runtime costs, noise, limits) becomes a
//!    [`replay::ReplayConfig`] on a trace; [`machine_for`] checks the PE count and places the
//!    objects.
//! 3. **Replay and outputs** ([`run`]): [`replay()`] checks the memory estimate before it
//!    allocates, replays, hands the result to a callback, and writes what an [`OutputSpec`]
//!    asks for (an output folder with the views, the analysis and the HTML report; CSVs).
//! 4. **The studies around a replay**: [`analyze`] (critical path and re-simulated
//!    diagnoses), [`lb`] (load balancers compared by replay, or on a Charm++ LB dump),
//!    [`sweep`] (a study's points in parallel, shards and their merge), [`predict`] (small
//!    runs, a fitted scaling model, checked targets), [`calibrate`] (study parameters fitted to
//!    measurements), [`model`] (Extra-P experiments and block-cost models), [`emulate`] (a
//!    built-in program run on virtual PEs) and [`generate`] (synthetic workloads).
//!
//! # Contract
//!
//! - Results are those of the command line for the same options, byte for byte: the command
//!   line is a client of these functions.
//! - Every size that comes from input is checked against the machine's memory limit
//!   ([`MachineSpec::max_memory`], default 3/4 of this computer's memory) before it is
//!   allocated; a refusal is a [`WorkflowError::Invalid`] saying what it needed.
//! - Outputs are written atomically ([`safe_output`]): a file is complete or absent, an
//!   output folder is staged and put in place whole; an output that would overwrite an input
//!   is refused.
//! - Errors are [`WorkflowError`]: `Invalid` (the user's input: exit status 2 on the command
//!   line), `Failed`/`NotFinished` (a run that could not finish: exit status 1), or the
//!   underlying library's error kept as the source.
//! - With `quiet`, nothing is written to stderr except the notes of a placement file; the
//!   library never writes to stdout.
//!
//! # Example
//!
//! ```
//! use workflow::{MachineSpec, OutputSpec, PeCount};
//!
//! // The built-in scenario (`whatif run`): a 512-rank 3-D halo, 20 iterations.
//! let trace = workflow::default_scenario()?;
//! let machine = MachineSpec {
//!     net: Some("alphabeta:lat=1us,bw=10GB/s".parse()?),
//!     pes: Some(PeCount::N(64)),
//!     map: "block".parse()?,
//!     ..MachineSpec::default()
//! };
//! let mut json = String::new();
//! let r = workflow::replay(trace, &machine, &OutputSpec::default(), &mut |info, r| {
//!     json = report::summary::json(info, r)?;
//!     Ok(())
//! })?;
//! // 8 ranks per PE: the makespan is at least 20 iterations x 8 x 100 us of compute.
//! assert!(r.makespan.as_ps() >= 20 * 8 * 100_000_000);
//! assert!(json.contains(&format!("\"makespan_ps\": {}", r.makespan.as_ps())));
//!
//! // Bad input is an error that says what is wrong, never a panic.
//! let e = workflow::load(
//!     std::path::Path::new("no-such.trace"),
//!     None,
//!     &Default::default(),
//!     &machine,
//!     true,
//! )
//! .unwrap_err();
//! assert!(e.to_string().contains("no-such.trace"), "{e}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod analyze;
pub mod calibrate;
pub mod emulate;
pub mod error;
pub mod files;
pub mod generate;
pub mod input;
pub mod lb;
pub mod limits;
pub mod machine;
pub mod memory;
pub mod model;
pub mod predict;
pub mod progress;
pub mod run;
pub mod sweep;
pub mod sweep_journal;

pub use error::{Result, WorkflowError};
pub use input::{ImportSpec, load, load_flat, read_whatif_trace, whatif_trace};
pub use machine::{
    Machine, MachineSpec, MapSpec, PeCount, cpu_scale_for, machine_config, machine_for, net_for,
};
pub use run::{OutputSpec, replay};

use sim_core::SimDuration;
use trace::Repeated;

/// The built-in scenario of `whatif run`: a 3-D halo of 8x8x8 ranks, 20 iterations of 100 us
/// compute, 64 KiB messages, recorded with the network `alphabeta:lat=1us,bw=10GB/s`.
pub fn default_scenario() -> Result<Repeated> {
    let p = scenarios::SynthParams {
        iters: 20,
        compute: SimDuration::from_us(100),
        bytes: 65536,
        generator:
            "whatif run (built-in: halo3d 8x8x8, 20 iterations, 100us compute, 64KiB messages)"
                .into(),
        ..scenarios::SynthParams::default()
    };
    let t = scenarios::halo_repeated(&[8, 8, 8], false, &p)
        .map_err(|e| WorkflowError::Cause(Box::new(e)))?;
    Ok(t.with_meta(|m| m.net = Some("alphabeta:lat=1us,bw=10GB/s".into())))
}
