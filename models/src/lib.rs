//! # models: fitted scaling models
//!
//! Contract of this crate: given measurements of a metric at several values of one
//! parameter (small runs, sweep points, Extra-P files), it fits a model in Extra-P's
//! performance-model normal form, chosen by leave-one-out cross-validation the way Extra-P's
//! basic modeller chooses ([`pmnf`]), and gives predictions with a 95% band. [`extrap`]
//! reads and writes Extra-P's text format, so Extra-P can check whatif's choices and open its
//! data. [`scaling`] turns a table of predictions into speedup, efficiency, the optimal
//! grain and constant-time curves. Everything is deterministic; no randomness is involved.

pub mod extrap;
pub mod pmnf;
pub mod scaling;

pub use pmnf::{EXTRAP_TERMS, Model, Point, Term, fit};

/// Why a model could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// Fewer than two points.
    #[error("{0} point(s): a model needs at least 2 (Extra-P asks for 5)")]
    TooFewPoints(usize),
    /// A point without values or with a value that is not a number.
    #[error("{0}")]
    BadPoint(String),
    /// An Extra-P text file that does not parse.
    #[error("line {line}: {what}")]
    Parse {
        /// 1-based line (0: the file as a whole).
        line: usize,
        /// What was expected.
        what: String,
    },
}
