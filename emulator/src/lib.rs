//! # emulator: run message-driven Rust programs on many virtual PEs and record traces
//!
//! **Status: not implemented yet** (tracked by the emulator issue). This crate is reserved so the
//! workspace layout is stable; it exports nothing.
//!
//! Contract it will fulfil: a Charm++-like programming model (object collections, entry methods
//! invoked by sized messages, broadcasts, reductions, priorities, iteration markers, `at_sync`)
//! whose runs on V virtual PEs produce a `trace::Trace` in which every entry execution
//! is one execution block with its measured (or modelled) duration, its triggering message and
//! its sends at offsets; plus a native k-thread run of the same program for validation.
