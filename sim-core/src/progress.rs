//! Progress of long operations (generating, importing, loading, planning, replaying), reported
//! to whoever runs them: the command-line tool draws a bar or prints periodic lines; libraries
//! and tests pass [`NoProgress`].
//!
//! Operations call [`Progress::advance_to`] at coarse intervals (every few thousand blocks or
//! every megabyte), never per event, so a report costs nothing measurable.

/// Receives progress reports.
pub trait Progress {
    /// A stage begins: `name` (e.g. `replay`), `total` units of `unit` (`blocks`, `bytes`,
    /// `ranks`; 0 when unknown).
    fn stage(&mut self, name: &str, total: u64, unit: &'static str);
    /// `done` units of the current stage are complete.
    fn advance_to(&mut self, done: u64);
}

/// Reports nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn stage(&mut self, _name: &str, _total: u64, _unit: &'static str) {}
    fn advance_to(&mut self, _done: u64) {}
}
