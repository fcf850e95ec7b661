//! # scenarios: workloads — trace generators and the emulator's programs
//!
//! Two kinds of workload live here:
//!
//! * [`programs`]: message-driven Rust programs for the `emulator` crate (`whatif emulate`,
//!   `whatif run-native`), each with named `--set` parameters and a documented trace shape.
//! * Generators (below) that build a trace directly, with closed-form replay times.
//!
//! Contract of the generators: each returns a valid [`Trace`] whose structure is
//! documented below precisely enough to derive its replay time by hand. All generators place
//! rank `r` on recorded PE `r`, label messages densely in send order, and are deterministic:
//! the only randomness is the optional compute jitter, drawn from the `gen/compute-jitter`
//! stream of the root seed.
//!
//! Writing `C` for the compute time per block, `S` for the message size and
//! `L(S) = lat + S/bw` for the uncontended transfer time on `alphabeta`:
//!
//! | generator | structure | makespan (no jitter, no overheads) |
//! |---|---|---|
//! | [`pingpong`] | rank 0 and 1 bounce one message `K` times each way; every bounce is a block of `C` that sends at its end; a final zero-time block receives the last reply | `2K(C + L(S))` |
//! | [`ring`] | every rank computes `C` then sends `S` to rank `r+1 mod N`, `K` iterations | `K(C + L(S))` |
//! | [`halo`] | 2-D or 3-D grid of ranks; every rank computes `C` then sends `S` to each face neighbour (non-periodic by default) | `K(C + L(S))` |
//! | [`pipeline`] | MK's pipelined elimination: `D` stages in a chain, `B` items; stage `i` receives item `b` from `i-1`, computes `W`, sends it to `i+1` | `(D-1)(L(S) + W) + B*W` |
//!
//! In [`ring`] and [`halo`], each incoming message triggers a zero-time `recv` block, and the
//! compute block of iteration `k+1` depends on the rank's compute block `k` and on its `recv`
//! blocks of iteration `k` (the BigSim shape of a message-driven iteration). Compute and
//! `recv` blocks of iteration `k` carry iteration marker `k`, so each iteration's time is
//! `C + L(S)`. In [`pipeline`] the block of item `b` carries marker `b`; the pipeline uses
//! MK's depth convention D = number of processors in the chain (so fill is D-1 hops),
//! with s = r = o = 0.
//!
//! [`ring`] and [`halo`] are built as one iteration repeated ([`ring_repeated`],
//! [`halo_repeated`]: a [`trace::Repeated`] whose expansion is the flat trace, block for
//! block); `whatif gen` writes that compact form, so a 1M-rank halo is generated in seconds.
//! Jittered durations become per-iteration duration rows.

pub mod programs;
pub mod study;
mod synth;

pub use synth::{
    GenError, SynthParams, halo, halo_repeated, halo_repeated_with, pingpong, pipeline, ring,
    ring_repeated, ring_repeated_with,
};
pub use trace::Trace;
