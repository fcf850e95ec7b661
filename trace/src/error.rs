//! Errors of the trace crate.

use std::path::PathBuf;

/// A structural problem in a trace (bad reference, duplicate message label, ...).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid trace: {0}")]
pub struct ValidationError(pub String);

/// A problem decoding a trace file or stream.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The bytes at `offset` are not what the binary format requires there.
    #[error("{path}: byte offset {offset}: expected {expected}, {found}")]
    Binary {
        /// File name (or `<stream>`).
        path: String,
        /// Byte offset from the start of the file.
        offset: u64,
        /// What the format requires at that point.
        expected: String,
        /// What was found instead.
        found: String,
    },
    /// A line of the JSON-lines form is malformed.
    #[error("{path}: line {line}: {message}")]
    Text {
        /// File name (or `<stream>`).
        path: String,
        /// 1-based line number.
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// The file decoded but describes an inconsistent trace.
    #[error("{path}: {source}")]
    Invalid {
        /// File name (or `<stream>`).
        path: String,
        /// The structural problem.
        source: ValidationError,
    },
    /// The file could not be opened, read or written.
    #[error("{path}: {source}")]
    Io {
        /// File name.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}
