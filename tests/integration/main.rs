//! Workspace-level integration tests: one binary, one module per topic.

mod analysis;
mod charm_real;
mod cli;
mod cli_fuzz;
mod closed_forms;
mod determinism;
mod emulator;
mod engine;
mod hardening;
mod hardening33;
mod help_examples;
mod importers;
mod lb;
mod loggopsim;
mod memory;
mod models;
mod mpi_protocol;
mod mpi_suite;
mod network;
mod noise;
mod otf2;
mod outputs;
mod phases;
mod repeated;
mod report;
mod runtime_costs;
mod simgrid;
mod sweep;
mod text_import;

use network_models::NetSpec;
use replay::{ReplayConfig, ReplayReport};
use sim_core::SimDuration;
use trace::Trace;

/// Replays `trace` on the network given by a `--net` spec with default settings.
pub fn run(trace: &Trace, net: &str) -> ReplayReport {
    run_with(trace, net, &ReplayConfig::default())
}

/// Replays with a given config; panics with the replay error otherwise.
pub fn run_with(trace: &Trace, net: &str, cfg: &ReplayConfig) -> ReplayReport {
    let spec: NetSpec = net.parse().expect("valid net spec");
    let mut model = spec.build();
    replay::replay(trace, model.as_mut(), cfg).unwrap_or_else(|e| panic!("replay failed: {e}"))
}

/// `x` microseconds.
pub fn us(x: u64) -> SimDuration {
    SimDuration::from_us(x)
}

/// The shared real-trace folder (`../shared/data` next to the repository, or
/// `$WHATIF_SHARED_DATA`), or `None` with a printed message: tests that read real traces skip
/// when it is absent.
pub fn shared_data(sub: &str) -> Option<std::path::PathBuf> {
    let candidates = [
        std::env::var_os("WHATIF_SHARED_DATA").map(std::path::PathBuf::from),
        Some(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data")),
        Some(std::path::PathBuf::from("/work/shared/data")),
    ];
    for c in candidates.into_iter().flatten() {
        let p = c.join(sub);
        if p.exists() {
            return Some(p);
        }
    }
    eprintln!("skipped: shared data `{sub}` not found (set WHATIF_SHARED_DATA)");
    None
}
