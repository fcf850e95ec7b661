//! # importers: foreign traces in, execution blocks out
//!
//! Contract of this crate:
//!
//! * [`import`] reads a trace written by another tool and converts it into a validated
//!   [`trace::Trace`]; [`Imported::notes`] says what was found (per-file counts) and anything
//!   the conversion had to adjust. The same inputs always give the same trace.
//! * Each format's module documents the exact mapping from its records to blocks, sends and
//!   dependencies.
//! * Bad input never panics: errors ([`ImportError`]) name the file and the byte offset
//!   (binary formats) or line (text formats) and say what was expected there.
//!
//! * The text formats GOAL and SimGrid TI are parsed byte-level and streamed (no `String` per
//!   line; GOAL files over 8 MiB on two threads with the same result and the same first
//!   error); [`import_with`] reports progress through [`sim_core::Progress`].
//!
//! * MPI traces (SimGrid TI, OTF2) share [`mpi`]: each rank's program is recorded, its
//!   receives matched (wildcards too), and it is lowered to blocks under an MPI point-to-point
//!   protocol ([`mpi::MpiProtocol`]: eager or rendezvous transfers, sends that hold their
//!   sender) with collectives expanded as SimGrid 3.32's default selector or whatif's own
//!   algorithms ([`mpi::Collectives`]).
//!
//! Formats: [`bgtrace`] (BigSim logs, version 6), [`goal`] (LogGOPSim schedules; also
//! written by [`goal::export`]), [`simgrid`] (SimGrid time-independent MPI traces), [`projections`] (Charm++
//! Projections logs, versions 3.0 and 11.0, plain or gzip-compressed), `otf2` (OTF2 archives of
//! Score-P, through the OTF2 C library; cargo feature `otf2`).

pub mod bgtrace;
pub mod bgtrace_raw;
mod cursor;
mod error;
pub mod fuzz;
pub mod goal;
mod lines;
pub mod mpi;
#[cfg(feature = "otf2")]
pub mod otf2;
pub mod projections;
pub mod simgrid;

pub use error::ImportError;

use sim_core::SimTime;
use std::path::Path;
use std::str::FromStr;
use trace::Trace;

/// A foreign trace format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// BigSim `bgTrace` logs (the folder or its summary file `bgTrace`).
    BgTrace,
    /// A GOAL schedule (LogGOPSim).
    Goal,
    /// SimGrid time-independent traces (an index file or one trace file).
    SimGrid,
    /// Charm++ Projections logs (the `.sts` file; logs next to it).
    Projections,
    /// An OTF2 archive (Score-P): its anchor file `traces.otf2` (needs the `otf2` feature).
    Otf2,
}

impl Format {
    /// Every format, in the order `--help` lists them.
    pub const ALL: [Format; 5] = [
        Format::BgTrace,
        Format::Projections,
        Format::Otf2,
        Format::SimGrid,
        Format::Goal,
    ];
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::BgTrace => "bgtrace",
            Format::Goal => "goal",
            Format::SimGrid => "simgrid",
            Format::Projections => "projections",
            Format::Otf2 => "otf2",
        }
    }
    /// One line on what the input is.
    pub fn describe(self) -> &'static str {
        match self {
            Format::BgTrace => {
                "BigSim bgTrace logs, version 6: the folder (or its summary file bgTrace) with bgTrace0..N-1"
            }
            Format::Goal => {
                "a GOAL schedule (LogGOPSim): send/recv/calc with requires/irequires; calc in ns"
            }
            Format::SimGrid => {
                "SimGrid time-independent MPI trace: an index file listing per-rank files (relative to the index), or one file; compute in flops (--flops-per-s); SimGrid 3.32's datatypes, MPI protocol and collectives (--mpi-protocol, --collectives)"
            }
            Format::Projections => {
                "Charm++ Projections logs, VERSION 3.0 or 11.0: the .sts file, with <stem>.<pe>.log (or .log.gz, as Charm++ with zlib writes them) next to it"
            }
            Format::Otf2 => {
                if cfg!(feature = "otf2") {
                    "an OTF2 archive (Score-P, read through the OTF2 library): its anchor file traces.otf2, with traces.def and traces/ next to it"
                } else {
                    "an OTF2 archive (Score-P): its anchor file traces.otf2 [this build cannot read it: rebuild with --features otf2, which needs Debian's libopen-trace-format2-dev]"
                }
            }
        }
    }
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        // BigSim's logs are named after their files (`bgTrace`), and users say "bigsim".
        let s = if s.eq_ignore_ascii_case("bigsim") {
            "bgtrace"
        } else {
            s
        };
        Format::ALL
            .iter()
            .copied()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
                format!("unknown format `{s}`; known formats: {}", names.join(", "))
            })
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Options some formats need.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportOptions {
    /// Compute speed used to turn flop counts into durations (SimGrid traces).
    pub flops_per_s: f64,
    /// Largest eager message in bytes; larger sends are rendezvous (GOAL schedules). The
    /// default is LogGOPSim's `S`.
    pub eager_limit: u64,
    /// Parse large text inputs (GOAL) on two threads; the result is the same either way.
    pub parallel: bool,
    /// Refuse an input whose converted trace is estimated (before it is built) to need more
    /// memory than this ([`ImportError::TooLarge`]); collectives expanded into messages can
    /// turn a small file into a huge trace.
    pub max_memory_bytes: u64,
    /// How MPI collectives are expanded (whatif's algorithms or SimGrid 3.32's default
    /// selector); `None`: the format's own (SimGrid TI: SimGrid's; OTF2: whatif's).
    pub collectives: Option<mpi::Collectives>,
    /// The MPI point-to-point protocol ([`mpi::MpiProtocol`]); `None`: the format's own
    /// (SimGrid TI: SimGrid 3.32's; OTF2: eager, since its receives are not posted in the
    /// trace).
    pub mpi_protocol: Option<mpi::MpiProtocol>,
}

/// Estimated bytes of the converted trace per block while it is built (block record,
/// dependency and consumer entries, builder scratch).
pub const BUILD_BYTES_PER_BLOCK: u64 = 96;
/// Estimated bytes per send while the trace is built.
pub const BUILD_BYTES_PER_SEND: u64 = 64;

/// Checks an estimate of the trace an input expands into against `opts.max_memory_bytes`.
pub(crate) fn check_size(
    file: &str,
    blocks: u64,
    sends: u64,
    opts: &ImportOptions,
) -> Result<(), ImportError> {
    let need = blocks
        .saturating_mul(BUILD_BYTES_PER_BLOCK)
        .saturating_add(sends.saturating_mul(BUILD_BYTES_PER_SEND));
    if need > opts.max_memory_bytes {
        return Err(ImportError::TooLarge {
            file: file.to_string(),
            blocks,
            sends,
            need_bytes: need,
            limit_bytes: opts.max_memory_bytes,
        });
    }
    Ok(())
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            flops_per_s: 1e9,
            eager_limit: 65535,
            parallel: true,
            max_memory_bytes: u64::MAX,
            collectives: None,
            mpi_protocol: None,
        }
    }
}

/// A converted trace and what the importer has to say about it.
#[derive(Clone, Debug)]
pub struct Imported {
    /// The trace.
    pub trace: Trace,
    /// Human-readable facts: per-file counts, adjustments made.
    pub notes: Vec<String>,
    /// The end of the last block in the recorded run, when the format records it.
    pub recorded_end: Option<SimTime>,
}

/// The files an import of `input` as `format` reads (the input itself, and for the formats
/// that name other files, those): commands use it to refuse writing over an input.
pub fn input_files(format: Format, input: &Path) -> Result<Vec<std::path::PathBuf>, ImportError> {
    let mut files = match format {
        Format::BgTrace => bgtrace::files(input)?,
        Format::Goal => Vec::new(),
        Format::SimGrid => simgrid::files(input)?,
        Format::Projections => projections::files(input)?,
        #[cfg(feature = "otf2")]
        Format::Otf2 => otf2::files(input),
        #[cfg(not(feature = "otf2"))]
        Format::Otf2 => Vec::new(),
    };
    if !files.iter().any(|f| f == input) {
        files.push(input.to_path_buf());
    }
    Ok(files)
}

/// Reads `input` as `format`.
pub fn import(format: Format, input: &Path, opts: &ImportOptions) -> Result<Imported, ImportError> {
    import_with(format, input, opts, &mut sim_core::NoProgress)
}

/// [`import`], reporting progress (text formats: bytes or ranks read) to `progress`.
pub fn import_with(
    format: Format,
    input: &Path,
    opts: &ImportOptions,
    progress: &mut dyn sim_core::Progress,
) -> Result<Imported, ImportError> {
    match format {
        Format::BgTrace => bgtrace::import_limited(input, opts.max_memory_bytes),
        Format::Goal => goal::import_limited(
            input,
            opts.eager_limit,
            opts.parallel,
            opts.max_memory_bytes,
            progress,
        ),
        Format::SimGrid => simgrid::import_with_progress(input, opts, progress),
        Format::Projections => projections::import_limited(input, opts.max_memory_bytes),
        #[cfg(feature = "otf2")]
        Format::Otf2 => otf2::import(input, opts),
        #[cfg(not(feature = "otf2"))]
        Format::Otf2 => Err(ImportError::Unsupported {
            file: input.display().to_string(),
            what: "OTF2: this whatif was built without the `otf2` feature; install Debian's libopen-trace-format2-dev and build with `cargo build --release --features otf2`".into(),
        }),
    }
}
