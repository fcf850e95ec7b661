//! Inputs: a whatif trace (binary or JSON lines, flat or repeated) or a foreign trace read
//! through an importer, with progress and the importer's notes on stderr unless quiet, and a
//! hint naming `--format` when a file is not a whatif trace; the what-if transforms of a
//! [`MachineSpec`] (sped-up entries, critical-path priorities) applied to it.

use crate::error::{Result, WorkflowError};
use crate::machine::MachineSpec;
use crate::{limits, memory, progress};
use network_models::NetSpec;
use std::path::Path;
use std::time::Instant;
use trace::{Repeated, Trace};

/// How a foreign trace becomes blocks (the importers' options a user chooses).
#[derive(Clone, Debug)]
pub struct ImportSpec {
    /// Compute speed converting flop counts into durations (SimGrid `compute` actions).
    pub flops_per_s: f64,
    /// Largest eager message (GOAL) [default: the S of a `loggops` model, else 65535].
    pub eager_limit: Option<u64>,
    /// How MPI collectives become messages [default: per format].
    pub collectives: Option<importers::mpi::Collectives>,
    /// MPI point-to-point protocol [default: per format].
    pub mpi_protocol: Option<importers::mpi::MpiProtocol>,
}

impl Default for ImportSpec {
    fn default() -> Self {
        ImportSpec {
            flops_per_s: 1e9,
            eager_limit: None,
            collectives: None,
            mpi_protocol: None,
        }
    }
}

/// The importers' options for `spec`, on a machine with network model `net` and memory limit
/// `max_memory` (default: [`limits::default_memory_limit`]).
pub fn import_options(
    spec: &ImportSpec,
    net: Option<&NetSpec>,
    max_memory: Option<u64>,
) -> importers::ImportOptions {
    let d = importers::ImportOptions::default();
    importers::ImportOptions {
        max_memory_bytes: max_memory.unwrap_or_else(limits::default_memory_limit),
        parallel: true,
        flops_per_s: spec.flops_per_s,
        eager_limit: spec.eager_limit.unwrap_or(match net {
            Some(NetSpec::LogGops(p)) => p.eager_limit,
            _ => d.eager_limit,
        }),
        collectives: spec.collectives,
        mpi_protocol: spec.mpi_protocol,
    }
}

/// Reads a whatif trace (`format` `None`), or imports a foreign one, reporting progress and
/// the importer's notes on stderr unless `quiet`. The machine `m` gives the importer its
/// memory limit and, for GOAL, its eager limit.
pub fn load(
    path: &Path,
    format: Option<importers::Format>,
    import: &ImportSpec,
    m: &MachineSpec,
    quiet: bool,
) -> Result<Repeated> {
    let t0 = Instant::now();
    let mut progress = progress::Reporter::new(quiet);
    let trace = match format {
        None => trace::read_repeated_file_with(path, &mut progress).map_err(|e| hinted(e, path))?,
        Some(f) => {
            let imp = importers::import_with(
                f,
                path,
                &import_options(import, m.net.as_ref(), m.max_memory),
                &mut progress,
            )?;
            progress.done();
            if !quiet {
                for n in &imp.notes {
                    eprintln!("{n}");
                }
            }
            Repeated::flat(imp.trace)
        }
    };
    progress.done();
    memory::checkpoint(&format!(
        "loading the trace ({} B on the heap)",
        trace.heap_bytes()
    ));
    if !quiet {
        eprintln!(
            "loaded {} ({} blocks{}) in {:.3} s",
            path.display(),
            trace.num_blocks(),
            repeat_note(&trace),
            t0.elapsed().as_secs_f64()
        );
    }
    Ok(trace)
}

/// A whatif trace file, with the `--format` hint on the error when it is not one.
pub fn read_whatif_trace(path: &Path) -> Result<Repeated> {
    trace::read_repeated_file(path).map_err(|e| hinted(e, path))
}

/// `e` with the `--format` hint for `path`, if any.
fn hinted(e: trace::TraceError, path: &Path) -> WorkflowError {
    match format_hint(path) {
        Some(hint) => WorkflowError::Context {
            what: hint,
            source: Box::new(e),
        },
        None => e.into(),
    }
}

/// What to do when a path read as a whatif trace is not one: the `--format` its name or
/// kind suggests (`None` when nothing does).
pub fn format_hint(path: &Path) -> Option<String> {
    if path.is_dir() {
        return Some(format!(
            "{} is a folder: a BigSim log set is read with --format bgtrace (or `whatif import bgtrace`)",
            path.display()
        ));
    }
    let format = guess_format(path)?;
    Some(format!(
        "{} is not a whatif trace; if it is a {format} file, add --format {format}",
        path.display()
    ))
}

/// The foreign format a path's name or kind suggests (`bgtrace` for a folder), if any.
pub fn guess_format(path: &Path) -> Option<&'static str> {
    if path.is_dir() {
        return Some("bgtrace");
    }
    let name = path.file_name()?.to_string_lossy().to_lowercase();
    let is = |ext: &str| name.ends_with(ext);
    Some(if is(".goal") || is(".goal.gz") {
        "goal"
    } else if is(".sts") || is(".log") || is(".log.gz") {
        "projections"
    } else if is(".otf2") {
        "otf2"
    } else if is(".txt") || is(".ti") {
        "simgrid"
    } else {
        return None;
    })
}

/// `: one iteration of N blocks repeated K times` for a repeated trace, nothing for a flat one.
pub fn repeat_note(r: &Repeated) -> String {
    if r.is_flat() {
        String::new()
    } else {
        format!(
            ": one iteration of {} blocks repeated {} times",
            r.body().num_blocks(),
            r.reps()
        )
    }
}

/// [`load`] then [`whatif_trace`], as one flat trace (for work that needs every block: load
/// balancing, a flat analysis).
pub fn load_flat(
    path: &Path,
    format: Option<importers::Format>,
    import: &ImportSpec,
    m: &MachineSpec,
    quiet: bool,
) -> Result<Trace> {
    let input = whatif_trace(load(path, format, import, m, quiet)?, m)?;
    memory::expand(input, m.max_memory, Vec::new(), quiet)
}

/// The trace with the spec's `speedup` and `critical_path_priority` applied (expanded to
/// every block when one is given).
pub fn whatif_trace(input: Repeated, m: &MachineSpec) -> Result<Repeated> {
    if m.speedup.is_empty() && !m.critical_path_priority {
        return Ok(input);
    }
    let mut t = memory::expand(input, m.max_memory, Vec::new(), true)?;
    for s in &m.speedup {
        analysis::transform::speed_up(&mut t, s)?;
    }
    if m.critical_path_priority {
        analysis::transform::critical_path_priorities(&mut t)?;
    }
    Ok(Repeated::flat(t))
}
