//! The workflow's errors: what went wrong, with its cause kept as the error's source, so a
//! caller walking the chain finds the replay, I/O or output error underneath (the command line
//! does, to choose its exit status; the Python package does, to choose its exception).

use std::error::Error as StdError;

/// A cause: any error, boxed.
pub type Cause = Box<dyn StdError + Send + Sync + 'static>;

/// Why a step of the workflow failed.
#[derive(Debug, thiserror::Error)]
pub enum WorkflowError {
    /// Something the user gave is wrong (a file, a value, a size above a limit): what and why.
    /// The command line exits with status 2.
    #[error("{0}")]
    Invalid(String),
    /// The input was accepted but the run could not finish (a replay that got stuck, a run
    /// limit reached). The command line exits with status 1.
    #[error("{0}")]
    Failed(String),
    /// A replay that could not finish (stuck blocks, a scheduling error, a run limit): the
    /// trace's name, and the replay's error with its details (the stuck blocks) as the source.
    #[error("replay of `{trace}` did not complete")]
    NotFinished {
        /// The trace's name.
        trace: String,
        /// The replay's error.
        #[source]
        source: replay::ReplayError,
    },
    /// A step failed (`what`: which file, which value), because of `source`.
    #[error("{what}")]
    Context {
        /// What was being done or read.
        what: String,
        /// Why it failed.
        #[source]
        source: Cause,
    },
    /// An error of a library underneath (trace, importer, replay, I/O, output), shown as it is
    /// and kept as the source.
    #[error("{0}")]
    Cause(#[source] Cause),
}

/// A result with a [`WorkflowError`].
pub type Result<T, E = WorkflowError> = std::result::Result<T, E>;

macro_rules! cause_from {
    ($($t:ty),* $(,)?) => {$(
        impl From<$t> for WorkflowError {
            fn from(e: $t) -> Self {
                WorkflowError::Cause(Box::new(e))
            }
        }
    )*};
}
cause_from!(
    std::io::Error,
    serde_json::Error,
    toml::de::Error,
    safe_output::OutputError,
    sim_core::inputs::ReadError,
    trace::TraceError,
    importers::ImportError,
    replay::ReplayError,
    report::ReportError,
    analysis::AnalysisError,
    lb_strategies::LbError,
    network_models::SpecError,
    trace::ValidationError,
    std::fmt::Error,
    csv::Error,
    csv::IntoInnerError<csv::Writer<Vec<u8>>>,
    std::string::FromUtf8Error,
    scenarios::study::StudyError,
    scenarios::GenError,
);

/// Adds what was being done to an error, or turns a missing value into one.
pub(crate) trait Ctx<T> {
    /// The error with `what()` as its message and the original as its source; for an
    /// `Option`, `what()` alone.
    fn ctx<S: Into<String>>(self, what: impl FnOnce() -> S) -> Result<T>;
}

impl<T, E: StdError + Send + Sync + 'static> Ctx<T> for std::result::Result<T, E> {
    fn ctx<S: Into<String>>(self, what: impl FnOnce() -> S) -> Result<T> {
        self.map_err(|e| WorkflowError::Context {
            what: what().into(),
            source: Box::new(e),
        })
    }
}

impl<T> Ctx<T> for Option<T> {
    fn ctx<S: Into<String>>(self, what: impl FnOnce() -> S) -> Result<T> {
        self.ok_or_else(|| WorkflowError::Invalid(what().into()))
    }
}

/// Returns a [`WorkflowError::Invalid`] with a formatted message.
macro_rules! bail {
    ($($t:tt)*) => {
        return Err($crate::error::WorkflowError::Invalid(format!($($t)*)))
    };
}
pub(crate) use bail;

/// Whether an error (walking its chain) is a run that failed rather than bad input: a
/// [`WorkflowError::Failed`] or [`WorkflowError::NotFinished`], a stuck replay or a scheduling
/// error, an output that could not be written for a reason of the machine's (not the path's),
/// or an I/O error of the machine ([`machine_failure`]). Everything else a command refuses is
/// bad input. The command line exits with 1 for the first kind and 2 for the second; the
/// Python package raises `RunError` or `InputError`.
pub fn is_run_failure(e: &(dyn StdError + 'static)) -> bool {
    let mut next: Option<&(dyn StdError + 'static)> = Some(e);
    while let Some(c) = next {
        if matches!(
            c.downcast_ref::<WorkflowError>(),
            Some(WorkflowError::Failed(_) | WorkflowError::NotFinished { .. })
        ) || matches!(
            c.downcast_ref::<replay::ReplayError>(),
            Some(replay::ReplayError::Stuck(_)) | Some(replay::ReplayError::Sched(_))
        ) || c
            .downcast_ref::<safe_output::OutputError>()
            .is_some_and(|o| !crate::files::is_bad_output(o))
            || c.downcast_ref::<std::io::Error>()
                .is_some_and(machine_failure)
        {
            return true;
        }
        next = c.source();
    }
    false
}

/// An I/O error that is the machine's, not the input's: no space, quota, read-only file
/// system, a device error, a write that wrote nothing.
pub fn machine_failure(e: &std::io::Error) -> bool {
    use std::io::ErrorKind as K;
    matches!(
        e.kind(),
        K::StorageFull | K::QuotaExceeded | K::ReadOnlyFilesystem | K::WriteZero | K::OutOfMemory
    ) || matches!(e.raw_os_error(), Some(5) | Some(28) | Some(30) | Some(122))
}

/// The most bytes of one cause a rendered error holds.
pub const MAX_CAUSE_BYTES: usize = 1000;

/// The error and its causes on one line, joined by `: `, each cause once: a cause whose text
/// the message already ends with (libraries that print their source inside their own
/// message) is not repeated, and a cause quoting its input (a parser's line, a JSON value) is
/// cut to [`MAX_CAUSE_BYTES`]. The command line prints this after `error: `; the Python
/// package's exceptions carry it.
pub fn render(e: &(dyn StdError + 'static)) -> String {
    let mut out = String::new();
    let mut next: Option<&(dyn StdError + 'static)> = Some(e);
    while let Some(c) = next {
        next = c.source();
        let t = sim_core::inputs::cut(&c.to_string(), MAX_CAUSE_BYTES);
        if out.ends_with(&t) || out.contains(&format!("{t}: ")) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&t);
    }
    out
}
