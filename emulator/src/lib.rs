//! # emulator: run message-driven Rust programs on many virtual PEs and record traces
//!
//! Contract of this crate:
//!
//! * **Programming model** (Charm++-like, [`model`]): a [`Program`] declares *collections* of
//!   objects indexed in 1-3 dimensions ([`Builder::collection`]) and posts start messages.
//!   Objects ([`Chare`]) receive messages ([`Message`]), each naming an entry method; an entry
//!   method runs to completion and, through its [`Ctx`], sends sized messages (optionally with
//!   a priority), broadcasts to a collection, contributes to reductions over its collection
//!   with a [`Callback`], marks its iteration ([`Ctx::iteration`]) and reaches load-balancing
//!   sync points ([`Ctx::at_sync`], answered by [`Chare::resume_from_sync`] once every element
//!   has arrived).
//! * **Emulation** ([`emulate()`]): the program runs on V virtual PEs inside a discrete-event
//!   simulation that follows the replay's rules exactly (scheduling order, overheads, network
//!   model). Every entry execution becomes one execution block of the recorded
//!   [`trace::Trace`] with its duration, triggering message, sends at their offsets, iteration
//!   and sync markers, and its emulated start and trigger arrival (`recorded_start`,
//!   `recorded_arrival`). Durations are measured on the host's monotonic clock
//!   ([`Timing::Measured`]) or declared by the program ([`Timing::Model`], deterministic).
//!   Hence replaying the trace with the same network model, PE count and mapping reproduces
//!   every block's start time. All V PEs are multiplexed on the calling thread.
//! * **Runtime blocks**: a reduction travels up a tree (elements of a PE to the PE's first
//!   element, then a 4-ary tree over PEs). Each child's partial result is a message consumed by
//!   a `reduction` block; when an element has every contribution, a zero-message
//!   `reduction_complete` block (depending on the contributing blocks) forwards the partial
//!   result or, at the root, sends the callback. `at_sync` is a barrier on the same tree
//!   followed by `resume_from_sync` messages. Broadcasts are recorded as one message per
//!   element.
//! * **Native run** ([`run_native`]): the same program on k OS threads (one per PE), wall
//!   times per iteration, for checking predictions on this machine.
//! * Errors are [`EmuError`]; a program that goes quiet with unfinished reductions is an
//!   error naming them, and a block limit stops programs that never go quiet.

mod chunked;
pub mod ctx;
pub mod emulate;
mod error;
pub mod model;
pub mod native;
mod ready;
mod record;
mod runtime;

pub use ctx::{Ctx, Timing};
pub use emulate::{EmulateConfig, Emulation, Progress, emulate};
pub use error::EmuError;
pub use model::{
    Builder, Callback, Chare, Coll, Index, InitialMap, Message, OBJECT_BYTES, ObjRef, Program,
    ReduceOp, Target,
};
pub use native::{NativeConfig, NativeReport, run_native};
pub use record::SpillPlan;
pub use runtime::RUNTIME_ENTRIES;

#[cfg(test)]
mod tests;
