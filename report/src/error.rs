//! The report's errors: what went wrong, with its cause kept as the error's source (so a
//! caller walking the chain finds the I/O or output error underneath, as the CLI does to
//! choose its exit status).

use std::error::Error as StdError;

/// A cause: any error, boxed.
pub type Cause = Box<dyn StdError + Send + Sync + 'static>;

/// Why a report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file of the folder is not what a whatif output holds: the file and what is wrong.
    #[error("{0}")]
    Invalid(String),
    /// A step failed (`what`: which file, which value), because of `source`.
    #[error("{what}")]
    Context {
        /// What was being done or read.
        what: String,
        /// Why it failed.
        #[source]
        source: Cause,
    },
    /// An error of a library underneath (I/O, CSV, JSON, an output that cannot be written),
    /// shown as it is and kept as the source.
    #[error("{0}")]
    Cause(#[source] Cause),
}

/// A result with a [`ReportError`].
pub type Result<T, E = ReportError> = std::result::Result<T, E>;

macro_rules! cause_from {
    ($($t:ty),* $(,)?) => {$(
        impl From<$t> for ReportError {
            fn from(e: $t) -> Self {
                ReportError::Cause(Box::new(e))
            }
        }
    )*};
}
cause_from!(
    std::io::Error,
    csv::Error,
    serde_json::Error,
    std::fmt::Error,
    safe_output::OutputError,
    sim_core::inputs::ReadError,
    std::string::FromUtf8Error,
    csv::IntoInnerError<csv::Writer<Vec<u8>>>,
);

/// Adds what was being done to an error, or turns a missing value into one.
pub(crate) trait Ctx<T> {
    /// The error with `what()` as its message and the original as its source; for an
    /// `Option`, `what()` alone.
    fn ctx<S: Into<String>>(self, what: impl FnOnce() -> S) -> Result<T>;
}

impl<T, E: StdError + Send + Sync + 'static> Ctx<T> for std::result::Result<T, E> {
    fn ctx<S: Into<String>>(self, what: impl FnOnce() -> S) -> Result<T> {
        self.map_err(|e| ReportError::Context {
            what: what().into(),
            source: Box::new(e),
        })
    }
}

impl<T> Ctx<T> for Option<T> {
    fn ctx<S: Into<String>>(self, what: impl FnOnce() -> S) -> Result<T> {
        self.ok_or_else(|| ReportError::Invalid(what().into()))
    }
}

/// Returns a [`ReportError::Invalid`] with a formatted message.
macro_rules! bail {
    ($($t:tt)*) => {
        return Err($crate::error::ReportError::Invalid(format!($($t)*)))
    };
}
pub(crate) use bail;
