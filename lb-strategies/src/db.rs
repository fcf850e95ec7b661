//! The LB database: what a strategy knows about the run (Charm++'s `LDStats`).
//!
//! Built from a trace and a [`SyncPlan`]: per object, its load (sum of its block durations in
//! the load window, in recorded time), its PE before balancing, whether it may move, and its
//! migration size; per PE, its background (non-migratable) load and CPU-speed factor; and the
//! object communication graph of the window (undirected edges with message and byte counts).
//!
//! A PE's **effective load** is `cpu_scale * (background + sum of its objects' loads)`: the
//! time it would be busy on the simulated machine (ignoring messaging overheads).

use crate::{LbError, SyncPlan};
use sim_core::{Ratio, SimDuration};
use std::io::Write;
use std::path::Path;
use trace::{BlockId, Trace};

/// One object.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ObjectRecord {
    /// Its name in the trace.
    pub name: String,
    /// Load in the window, in recorded picoseconds.
    pub load_ps: u64,
    /// Its PE before balancing (on the target machine).
    pub from_pe: u32,
    /// May the balancer move it?
    pub migratable: bool,
    /// Bytes its state takes to move.
    pub migrate_bytes: u64,
}

/// One PE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeRecord {
    /// Load that cannot move (Charm++'s `bg_walltime`): the non-migratable objects on it, in
    /// recorded picoseconds. Migratable objects' loads are not included.
    pub background_ps: u64,
    /// Its CPU-speed factor (time on it = factor x recorded time).
    pub cpu_scale: Ratio,
}

/// Traffic between two objects in the window (both directions together).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CommEdge {
    /// The object with the smaller id.
    pub a: u32,
    /// The other object (`a < b`).
    pub b: u32,
    /// Messages delivered between them.
    pub messages: u64,
    /// Bytes delivered between them.
    pub bytes: u64,
}

impl CommEdge {
    /// The weight partitioners cut: bytes plus one per message (so empty messages count).
    pub fn weight(&self) -> u64 {
        self.bytes.saturating_add(self.messages)
    }
}

/// What a strategy decides from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LbDatabase {
    /// Where the balancer runs.
    pub point: crate::LbPoint,
    /// Objects, indexed by object id.
    pub objects: Vec<ObjectRecord>,
    /// PEs of the target machine.
    pub pes: Vec<PeRecord>,
    /// Communication graph, sorted by `(a, b)`.
    pub edges: Vec<CommEdge>,
}

/// Inputs of [`LbDatabase::from_trace`] besides the trace.
#[derive(Clone, Debug)]
pub struct DbOptions<'a> {
    /// Each object's PE before balancing, on the target machine (one per object).
    pub current: &'a [u32],
    /// PEs of the target machine (may differ from the recorded count).
    pub pes: u32,
    /// CPU-speed factor per PE (empty: 1 everywhere; one value: every PE).
    pub cpu_scale: &'a [Ratio],
    /// Migration size of every object.
    pub migrate_bytes: u64,
}

impl LbDatabase {
    /// Builds the database for the point `plan` chose.
    pub fn from_trace(
        trace: &Trace,
        plan: &SyncPlan,
        opts: &DbOptions<'_>,
    ) -> Result<LbDatabase, LbError> {
        let n_obj = trace.objects.len();
        if opts.current.len() != n_obj {
            return Err(LbError::Config(format!(
                "the current map names {} objects but the trace has {n_obj}",
                opts.current.len()
            )));
        }
        if opts.pes == 0 {
            return Err(LbError::Config("the machine needs at least one PE".into()));
        }
        if let Some((o, pe)) = opts
            .current
            .iter()
            .enumerate()
            .find(|(_, p)| **p >= opts.pes)
        {
            return Err(LbError::Config(format!(
                "the current map puts object {o} on PE {pe}, but there are {} PEs",
                opts.pes
            )));
        }
        if plan.in_window.len() != trace.num_blocks() || plan.migratable.len() != n_obj {
            return Err(LbError::Config(
                "the sync plan was made for another trace".into(),
            ));
        }
        let scale_of = |p: usize| match opts.cpu_scale.len() {
            0 => Ok(Ratio::ONE),
            1 => Ok(opts.cpu_scale[0]),
            n if n == opts.pes as usize => Ok(opts.cpu_scale[p]),
            n => Err(LbError::Config(format!(
                "{n} CPU-speed factors given for {} PEs",
                opts.pes
            ))),
        };
        let mut load = vec![0u64; n_obj];
        for id in trace.block_ids() {
            if plan.in_window[id.index()] {
                let b = trace.block(id);
                let l = &mut load[b.object.index()];
                *l = l.saturating_add(b.duration.as_ps());
            }
        }
        let objects: Vec<ObjectRecord> = (0..n_obj)
            .map(|o| ObjectRecord {
                name: trace.objects[o].name.clone(),
                load_ps: load[o],
                from_pe: opts.current[o],
                migratable: plan.migratable[o],
                migrate_bytes: opts.migrate_bytes,
            })
            .collect();
        let mut pes = Vec::with_capacity(opts.pes as usize);
        for p in 0..opts.pes as usize {
            pes.push(PeRecord {
                background_ps: 0,
                cpu_scale: scale_of(p)?,
            });
        }
        for o in objects.iter().filter(|o| !o.migratable) {
            let bg = &mut pes[o.from_pe as usize].background_ps;
            *bg = bg.saturating_add(o.load_ps);
        }
        Ok(LbDatabase {
            point: plan.point,
            objects,
            pes,
            edges: comm_edges(trace, &plan.in_window),
        })
    }

    /// Number of PEs of the target machine.
    pub fn num_pes(&self) -> u32 {
        self.pes.len() as u32
    }

    /// The map before balancing.
    pub fn current_map(&self) -> Vec<u32> {
        self.objects.iter().map(|o| o.from_pe).collect()
    }

    /// Effective load of PE `p` carrying `raw_ps` of recorded work.
    pub fn effective_ps(&self, p: u32, raw_ps: u64) -> u64 {
        self.pes[p as usize]
            .cpu_scale
            .scale(SimDuration::from_ps(raw_ps))
            .as_ps()
    }

    /// Per PE, recorded work under `map`: background (which includes the non-migratable
    /// objects) plus the migratable objects placed there.
    pub fn raw_loads(&self, map: &[u32]) -> Vec<u64> {
        let mut v: Vec<u64> = self.pes.iter().map(|p| p.background_ps).collect();
        for (o, &p) in self.objects.iter().zip(map) {
            if o.migratable {
                v[p as usize] = v[p as usize].saturating_add(o.load_ps);
            }
        }
        v
    }

    /// Writes `objects.csv`, `pes.csv` and `edges.csv` into `dir` (created if needed).
    pub fn write_csv(&self, dir: &Path) -> Result<(), LbError> {
        let io = |what: &Path| {
            let what = what.display().to_string();
            move |e: std::io::Error| LbError::Io { what, source: e }
        };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let csv_err = |what: &Path| {
            let what = what.display().to_string();
            move |e: csv::Error| LbError::Io {
                what,
                source: std::io::Error::other(e),
            }
        };
        let p = dir.join("objects.csv");
        let mut w = csv::Writer::from_path(&p).map_err(csv_err(&p))?;
        w.write_record([
            "object",
            "name",
            "load_s",
            "from_pe",
            "migratable",
            "migrate_bytes",
        ])
        .map_err(csv_err(&p))?;
        for (i, o) in self.objects.iter().enumerate() {
            w.write_record([
                i.to_string(),
                o.name.clone(),
                secs(o.load_ps),
                o.from_pe.to_string(),
                o.migratable.to_string(),
                o.migrate_bytes.to_string(),
            ])
            .map_err(csv_err(&p))?;
        }
        w.flush().map_err(io(&p))?;
        let p = dir.join("pes.csv");
        let mut w = csv::Writer::from_path(&p).map_err(csv_err(&p))?;
        w.write_record(["pe", "background_s", "cpu_scale", "objects", "load_s"])
            .map_err(csv_err(&p))?;
        let cur = self.current_map();
        let raw = self.raw_loads(&cur);
        let mut count = vec![0u32; self.pes.len()];
        for &p in &cur {
            count[p as usize] += 1;
        }
        for (i, pe) in self.pes.iter().enumerate() {
            w.write_record([
                i.to_string(),
                secs(pe.background_ps),
                pe.cpu_scale.to_string(),
                count[i].to_string(),
                secs(self.effective_ps(i as u32, raw[i])),
            ])
            .map_err(csv_err(&p))?;
        }
        w.flush().map_err(io(&p))?;
        let p = dir.join("edges.csv");
        let mut w = csv::Writer::from_path(&p).map_err(csv_err(&p))?;
        w.write_record(["a", "b", "messages", "bytes"])
            .map_err(csv_err(&p))?;
        for e in &self.edges {
            w.write_record([
                e.a.to_string(),
                e.b.to_string(),
                e.messages.to_string(),
                e.bytes.to_string(),
            ])
            .map_err(csv_err(&p))?;
        }
        w.flush().map_err(io(&p))?;
        Ok(())
    }

    /// The database as one JSON document (loads in seconds and picoseconds).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "point": self.point.to_string(),
            "pes": self.pes.iter().map(|p| serde_json::json!({
                "background_ps": p.background_ps,
                "cpu_scale": p.cpu_scale.to_string(),
            })).collect::<Vec<_>>(),
            "objects": self.objects,
            "edges": self.edges,
        })
    }

    /// Writes [`LbDatabase::to_json`] to `path`.
    pub fn write_json(&self, path: &Path) -> Result<(), LbError> {
        let err = |e: std::io::Error| LbError::Io {
            what: path.display().to_string(),
            source: e,
        };
        let mut f = std::fs::File::create(path).map_err(err)?;
        serde_json::to_writer_pretty(&mut f, &self.to_json()).map_err(|e| LbError::Io {
            what: path.display().to_string(),
            source: std::io::Error::other(e),
        })?;
        writeln!(f).map_err(err)
    }
}

/// Picoseconds as seconds with 12 decimals (exact).
fn secs(ps: u64) -> String {
    SimDuration::from_ps(ps).secs_exact()
}

/// The communication graph of the blocks in the window: every message a window block is
/// triggered by, between its sender's object and its own, merged per unordered object pair.
/// Messages an object sends to itself are left out.
fn comm_edges(trace: &Trace, in_window: &[bool]) -> Vec<CommEdge> {
    let index = trace.message_index();
    let sender_object: Vec<u32> = trace
        .send_blocks()
        .iter()
        .map(|&b| trace.block(BlockId(b)).object.0)
        .collect();
    let sends = trace.all_sends();
    let mut pairs: Vec<(u32, u32, u64)> = Vec::new();
    for id in trace.block_ids() {
        if !in_window[id.index()] {
            continue;
        }
        let b = trace.block(BlockId(id.0));
        let Some(si) = b.trigger.and_then(|m| index.lookup(m)) else {
            continue;
        };
        let (x, y) = (sender_object[si], b.object.0);
        if x != y {
            pairs.push((x.min(y), x.max(y), sends[si].bytes));
        }
    }
    pairs.sort_unstable();
    let mut edges: Vec<CommEdge> = Vec::new();
    for (a, b, bytes) in pairs {
        match edges.last_mut() {
            Some(e) if e.a == a && e.b == b => {
                e.messages += 1;
                e.bytes = e.bytes.saturating_add(bytes);
            }
            _ => edges.push(CommEdge {
                a,
                b,
                messages: 1,
                bytes,
            }),
        }
    }
    edges
}
