//! # lb-strategies: load-balancing strategies as pure functions
//!
//! **Status: not implemented yet** (tracked by the load-balancing issue). This crate is reserved
//! so the workspace layout is stable; it exports nothing.
//!
//! Contract it will fulfil: a strategy is a pure function from an LB database (per-object load
//! in a window before a sync point, background load, communication graph, PE speeds, and
//! optionally the topology) to a new object -> PE map, which `replay` applies through
//! `replay::Mapping::Explicit` at the start or at a sync point.
