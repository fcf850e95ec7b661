//! Errors of the emulator and the native run.

/// Why an emulation or a native run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmuError {
    /// The program is inconsistent (e.g. a collection declared but not filled).
    #[error("program: {0}")]
    Program(String),
    /// The configuration does not fit (zero PEs, a network model for fewer PEs, ...).
    #[error("configuration: {0}")]
    Config(String),
    /// A program parameter is missing, unknown or malformed.
    #[error("parameter: {0}")]
    Param(String),
    /// Simulated time overflowed or an event limit was hit.
    #[error(transparent)]
    Sched(#[from] sim_core::SchedError),
    /// The block limit was reached (a program that never goes quiet?).
    #[error(
        "stopped after {blocks} blocks (the limit) at simulated time {at}; does the program ever \
         stop sending? Raise the limit with --max-blocks"
    )]
    BlockLimit {
        /// Blocks executed.
        blocks: u64,
        /// Simulated time reached.
        at: sim_core::SimTime,
    },
    /// The program declared ([`crate::Builder::expect_blocks`]) more blocks than the
    /// recorder may hold ([`crate::EmulateConfig::max_held_blocks`]; with
    /// [`crate::EmulateConfig::max_blocks`], at least that limit); nothing was run.
    #[error(
        "the program will run at least {expected} blocks, more than the {limit} this emulation \
         may hold"
    )]
    TooManyBlocks {
        /// Blocks the program declared.
        expected: u64,
        /// The recorder's limit.
        limit: u64,
    },
    /// The program declared ([`crate::Builder::expect_blocks`]) more blocks than
    /// [`crate::EmulateConfig::max_blocks`] allows; nothing was run.
    #[error(
        "the program will run at least {expected} blocks, more than the limit of {limit} \
         (raise it with --max-blocks, or emulate fewer iterations or a smaller problem)"
    )]
    OverBlockLimit {
        /// Blocks the program declared.
        expected: u64,
        /// The limit.
        limit: u64,
    },
    /// The program went quiet with reductions still waiting for contributions (a real run
    /// would hang).
    #[error("the program went quiet with unfinished reductions: {0}")]
    Incomplete(String),
    /// The recorded trace failed validation (a bug in the emulator).
    #[error("recorded trace is invalid: {0}")]
    Trace(#[from] trace::ValidationError),
    /// The program's objects (or, computing for real, their data) would need more memory
    /// than the run allows: refused before they are allocated.
    #[error(
        "{what} need about {}, beyond the memory limit of {} (raise it with --max-memory, or make the problem smaller)",
        sim_core::units::human_bytes(*bytes),
        sim_core::units::human_bytes(*limit)
    )]
    Memory {
        /// What would be allocated.
        what: String,
        /// Bytes it needs with what was reserved before it.
        bytes: u64,
        /// The run's limit.
        limit: u64,
    },
    /// Writing or reading the blocks spilled to disk failed
    /// ([`crate::EmulateConfig::spill`]).
    #[error("writing the trace's blocks to the folder {}: {source}", path.display())]
    Spill {
        /// The spill folder.
        path: std::path::PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A native worker thread panicked.
    #[error("native run: {0}")]
    Native(String),
}
