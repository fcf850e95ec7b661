//! Errors of this crate.

/// Why an LB database could not be built or a strategy could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LbError {
    /// A strategy name that is not known.
    #[error("unknown load-balancing strategy `{name}`; known strategies: {known}")]
    UnknownStrategy {
        /// What was asked for.
        name: String,
        /// The known names, comma separated.
        known: String,
    },
    /// A strategy parameter that is unknown or malformed.
    #[error("strategy `{spec}`: {msg}")]
    BadParam {
        /// The strategy spec as given.
        spec: String,
        /// What is wrong.
        msg: String,
    },
    /// The requested LB point does not exist in the trace.
    #[error("{0}")]
    NoSyncPoint(String),
    /// Inputs that do not fit together (sizes, PE counts, a missing topology).
    #[error("{0}")]
    Config(String),
    /// A Charm++ LB database dump that does not parse.
    #[error("{file}: byte offset {offset}: expected {expected}")]
    Dump {
        /// The dump.
        file: String,
        /// Where.
        offset: u64,
        /// What was expected (and found).
        expected: String,
    },
    /// A placement file (`--map file:PATH`) that does not parse.
    #[error("{file}: line {line}: expected {expected}")]
    MapFile {
        /// The file.
        file: String,
        /// The line (1 = the header).
        line: u64,
        /// What was expected (and found).
        expected: String,
    },
    /// Reading an input failed.
    #[error("cannot read {what}: {source}")]
    Read {
        /// Which file.
        what: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Writing an export failed.
    #[error("cannot write {what}: {source}")]
    Io {
        /// Which file.
        what: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}
