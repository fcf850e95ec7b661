//! # sim-core: the kernel every whatif simulation is built on
//!
//! Contract of this crate:
//!
//! * **Time is an integer.** [`SimTime`] (an instant) and [`SimDuration`] (a span) count
//!   picoseconds in a `u64` (the scheduler accepts up to 2^63 ps, about 106 days), so per-byte costs such as
//!   0.1 ns/B are exact and no floating point ever enters the event queue.
//! * **Units are parsed exactly** ([`units`]): `"1.5us"`, `"64KiB"`, `"10GB/s"`, `"0.5"`; a
//!   value that cannot be represented exactly is an error, never a silent rounding.
//! * **Event order is total and documented** ([`queue`]): events pop by
//!   `(time, class, insertion order)`. [`EventClass::Normal`] events at a time pop before
//!   [`EventClass::Late`] events at that time; within a class, first scheduled pops first.
//!   Every [`EventQueue`] implementation pops in exactly that order (tested against each other).
//! * **Randomness is seeded and derived** ([`rng`]): one root seed, one named ChaCha8 stream per
//!   component, stable across releases (pinned by golden tests).
//! * **Runs are bounded** ([`Scheduler`] with [`RunLimits`]): a runaway simulation stops with a
//!   [`SchedError`] instead of running forever, and scheduling into the past is an error.
//!
//! The crate has no knowledge of traces, networks or processors; `replay` drives it.

pub mod inputs;
pub mod memory;
pub mod progress;
pub mod queue;
pub mod rng;
mod sched;
pub mod time;
pub mod units;

pub use progress::{NoProgress, Progress};
pub use queue::{BinaryHeapQueue, EventClass, EventKey, EventQueue, QueueKind, RadixQueue};
pub use rng::{SeedTree, SimRng};
pub use sched::{RunLimits, SchedError, Scheduler};
pub use time::{SimDuration, SimTime};
pub use units::{Bandwidth, Ratio, UnitError};
