//! What `whatif inspect` prints: counts, the entry table and time ranges.

use crate::model::{Destination, Trace};
use crate::repeat::Repeated;
use serde::Serialize;
use sim_core::{SimDuration, SimTime};
use std::fmt;

/// Per-entry-method totals.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EntrySummary {
    /// Entry id.
    pub id: u32,
    /// Entry name.
    pub name: String,
    /// Blocks that ran it.
    pub blocks: u64,
    /// Sum of their recorded durations in picoseconds.
    pub total_ps: u64,
    /// Messages sent to it (a multicast or broadcast counts once).
    pub messages_in: u64,
    /// Its blocks started by a message (a multicast or broadcast counts once per object
    /// that consumed it).
    pub deliveries: u64,
}

/// Counts and ranges describing a trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TraceSummary {
    /// Trace name.
    pub name: String,
    /// Producer.
    pub generator: String,
    /// PEs at recording.
    pub recorded_pes: u32,
    /// Network spec assumed at recording.
    pub net: Option<String>,
    /// Objects.
    pub objects: u64,
    /// Of them, those that never migrate ([`crate::ObjectInfo::pinned`]).
    pub pinned_objects: u64,
    /// Entry methods.
    pub entries: u64,
    /// Of them, those whose blocks are outside their objects' order
    /// ([`crate::EntryMethod::outside_object_order`]).
    pub entries_outside_object_order: u64,
    /// Groups.
    pub groups: u64,
    /// Execution blocks.
    pub blocks: u64,
    /// Blocks started by a message.
    pub triggered_blocks: u64,
    /// Dependency edges.
    pub dependencies: u64,
    /// Message entries (sends).
    pub sends: u64,
    /// Sends to a single object.
    pub point_to_point: u64,
    /// Sends to a group.
    pub multicast: u64,
    /// Sends to all objects.
    pub broadcast: u64,
    /// Sends to all objects but one.
    pub broadcast_except: u64,
    /// Bytes over all sends (each send counted once).
    pub bytes: u64,
    /// Number of iterations marked (highest iteration + 1), if any block is marked.
    pub iterations: Option<u32>,
    /// Blocks marked as load-balancing sync points.
    pub lb_sync_blocks: u64,
    /// Sum of all block durations in picoseconds.
    pub total_block_ps: u64,
    /// Earliest recorded start, if the trace records start times.
    pub recorded_start_ps: Option<u64>,
    /// Latest recorded end (start + duration), if the trace records start times.
    pub recorded_end_ps: Option<u64>,
    /// Entry table with per-entry totals.
    pub entry_table: Vec<EntrySummary>,
    /// For a repeated trace: blocks in its one stored iteration, and repetitions.
    pub repeats: Option<(u64, u32)>,
}

impl TraceSummary {
    /// Summarises `trace`.
    pub fn of(trace: &Trace) -> Self {
        let mut entry_table: Vec<EntrySummary> = trace
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| EntrySummary {
                id: i as u32,
                name: e.name.clone(),
                blocks: 0,
                total_ps: 0,
                messages_in: 0,
                deliveries: 0,
            })
            .collect();
        let (mut triggered, mut iterations, mut lb, mut total) = (0u64, None::<u32>, 0u64, 0u64);
        let (mut start, mut end) = (None::<u64>, None::<u64>);
        for b in trace.iter_blocks() {
            let e = &mut entry_table[b.entry.index()];
            e.blocks += 1;
            e.total_ps = e.total_ps.saturating_add(b.duration.as_ps());
            e.deliveries += b.trigger.is_some() as u64;
            total = total.saturating_add(b.duration.as_ps());
            triggered += b.trigger.is_some() as u64;
            lb += b.lb_sync as u64;
            if let Some(i) = b.iteration {
                iterations = Some(iterations.map_or(i + 1, |m| m.max(i + 1)));
            }
            if let Some(s) = b.recorded_start {
                let s = s.as_ps();
                let e = s.saturating_add(b.duration.as_ps());
                start = Some(start.map_or(s, |x| x.min(s)));
                end = Some(end.map_or(e, |x| x.max(e)));
            }
        }
        let (mut p2p, mut mc, mut bc, mut bce, mut bytes) = (0, 0, 0, 0, 0u64);
        for s in trace.all_sends() {
            match s.dest {
                Destination::Object(_) => p2p += 1,
                Destination::Group(_) => mc += 1,
                Destination::All => bc += 1,
                Destination::AllExcept(_) => bce += 1,
            }
            bytes = bytes.saturating_add(s.bytes);
            entry_table[s.entry.index()].messages_in += 1;
        }
        TraceSummary {
            name: trace.meta.name.clone(),
            generator: trace.meta.generator.clone(),
            recorded_pes: trace.meta.recorded_pes,
            net: trace.meta.net.clone(),
            objects: trace.objects.len() as u64,
            pinned_objects: trace.objects.iter().filter(|o| o.pinned).count() as u64,
            entries: trace.entries.len() as u64,
            entries_outside_object_order: trace
                .entries
                .iter()
                .filter(|e| e.outside_object_order)
                .count() as u64,
            groups: trace.groups.len() as u64,
            blocks: trace.num_blocks() as u64,
            triggered_blocks: triggered,
            dependencies: trace.all_deps().len() as u64,
            sends: trace.num_sends() as u64,
            point_to_point: p2p,
            multicast: mc,
            broadcast: bc,
            broadcast_except: bce,
            bytes,
            iterations,
            lb_sync_blocks: lb,
            total_block_ps: total,
            recorded_start_ps: start,
            recorded_end_ps: end,
            entry_table,
            repeats: None,
        }
    }
}

impl TraceSummary {
    /// Summarises a repeated trace (what its expansion would give, without expanding it).
    pub fn of_repeated(rep: &Repeated) -> Self {
        let body = rep.body();
        let mut s = TraceSummary::of(body);
        if rep.is_flat() {
            return s;
        }
        let k = rep.reps() as u64;
        let n = body.num_blocks() as u64;
        s.blocks = k * n;
        s.triggered_blocks *= k;
        s.dependencies = k * body.all_deps().len() as u64
            + rep
                .all_carried()
                .iter()
                .map(|c| k.saturating_sub(c.lag as u64))
                .sum::<u64>();
        s.sends *= k;
        s.point_to_point *= k;
        s.multicast *= k;
        s.broadcast *= k;
        s.broadcast_except *= k;
        s.bytes = s.bytes.saturating_mul(k);
        s.lb_sync_blocks *= k;
        s.iterations = s
            .iterations
            .map(|m| m.saturating_add((rep.reps() - 1).saturating_mul(rep.iter_stride())));
        for e in &mut s.entry_table {
            e.blocks *= k;
            e.messages_in *= k;
            e.deliveries *= k;
            e.total_ps = e.total_ps.saturating_mul(k);
        }
        s.total_block_ps = s.total_block_ps.saturating_mul(k);
        // Varying blocks: replace k copies of the body duration by the table's values.
        let v = rep.varying();
        let cols = body.columns();
        for (p, &b) in v.blocks.iter().enumerate() {
            let body_ps = cols.duration_ps[b as usize];
            let all: u64 = (0..rep.reps() as usize)
                .map(|it| v.durations_ps[it * v.blocks.len() + p])
                .fold(0u64, |a, d| a.saturating_add(d));
            let e = &mut s.entry_table[cols.entry[b as usize] as usize];
            e.total_ps = e
                .total_ps
                .saturating_sub(body_ps.saturating_mul(k))
                .saturating_add(all);
            s.total_block_ps = s
                .total_block_ps
                .saturating_sub(body_ps.saturating_mul(k))
                .saturating_add(all);
        }
        s.repeats = Some((n, rep.reps()));
        s
    }
}

impl fmt::Display for TraceSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "trace         {}", self.name)?;
        if !self.generator.is_empty() {
            writeln!(f, "generator     {}", self.generator)?;
        }
        writeln!(f, "recorded PEs  {}", self.recorded_pes)?;
        writeln!(
            f,
            "network       {}",
            self.net
                .as_deref()
                .unwrap_or("(none recorded; replay defaults to ideal)")
        )?;
        if self.pinned_objects > 0 {
            writeln!(
                f,
                "objects       {} ({} pinned: never migrate)",
                self.objects, self.pinned_objects
            )?;
        } else {
            writeln!(f, "objects       {}", self.objects)?;
        }
        writeln!(
            f,
            "blocks        {} ({} triggered by a message, {} dependency edges)",
            self.blocks, self.triggered_blocks, self.dependencies
        )?;
        if let Some((b, k)) = self.repeats {
            writeln!(
                f,
                "repeats       one iteration of {b} blocks, {k} times (stored once)"
            )?;
        }
        writeln!(
            f,
            "messages      {} sends: {} point-to-point, {} multicast, {} broadcast, {} broadcast-except; {} ({} bytes)",
            self.sends,
            self.point_to_point,
            self.multicast,
            self.broadcast,
            self.broadcast_except,
            sim_core::units::human_bytes(self.bytes),
            self.bytes
        )?;
        match self.iterations {
            Some(n) => writeln!(f, "iterations    {n} marked")?,
            None => writeln!(f, "iterations    none marked")?,
        }
        writeln!(f, "lb sync       {} blocks", self.lb_sync_blocks)?;
        writeln!(
            f,
            "block time    {} total",
            SimDuration::from_ps(self.total_block_ps)
        )?;
        match (self.recorded_start_ps, self.recorded_end_ps) {
            (Some(s), Some(e)) => writeln!(
                f,
                "time range    {} .. {} (recorded)",
                SimTime::from_ps(s),
                SimTime::from_ps(e)
            )?,
            _ => writeln!(
                f,
                "time range    not recorded (synthetic trace; replay it to get times)"
            )?,
        }
        if self.entries_outside_object_order > 0 {
            writeln!(
                f,
                "entry methods {} ({} outside object order: message handlers that run when their message arrives)",
                self.entries, self.entries_outside_object_order
            )?;
        } else {
            writeln!(f, "entry methods {}", self.entries)?;
        }
        // Names longer than the column are cut (an entry name can be any length).
        let w = self
            .entry_table
            .iter()
            .map(|e| e.name.chars().count())
            .max()
            .unwrap_or(4)
            .clamp(4, MAX_NAME_COLUMN);
        writeln!(
            f,
            "  {:>4}  {:<w$}  {:>10}  {:>10}  {:>10}  {:>14}",
            "id", "name", "blocks", "msgs in", "delivered", "total time"
        )?;
        for e in &self.entry_table {
            writeln!(
                f,
                "  {:>4}  {:<w$}  {:>10}  {:>10}  {:>10}  {:>14}",
                e.id,
                shorten(&e.name, MAX_NAME_COLUMN),
                e.blocks,
                e.messages_in,
                e.deliveries,
                SimDuration::from_ps(e.total_ps).to_string()
            )?;
        }
        Ok(())
    }
}

/// The widest entry-name column `inspect` prints.
const MAX_NAME_COLUMN: usize = 60;

/// `s` cut to at most `max` characters, ending in `...` when cut.
fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max.saturating_sub(3)).collect();
    t.push_str("...");
    t
}
