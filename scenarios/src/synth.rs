//! The generators. See the crate docs for the structures they build.

use sim_core::rng::below;
use sim_core::{NoProgress, Progress, Ratio, SeedTree, SimDuration, SimRng};
use trace::{
    Block, BlockId, Carried, Destination, EntryId, MsgId, ObjectId, PeId, Repeated, Send, Trace,
    TraceBuilder, TraceMeta, Varying,
};

/// A bad generator parameter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct GenError(pub String);

/// Parameters shared by all generators.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SynthParams {
    /// Iterations (round trips for ping-pong, items for the pipeline).
    pub iters: u32,
    /// Compute time per compute block.
    pub compute: SimDuration,
    /// Bytes per message.
    pub bytes: u64,
    /// Relative compute jitter `j`: each compute block takes `C * (1 + x)`, `x` uniform in
    /// `[-j, j]` at a resolution of 10^-6. Zero (the default) means none.
    pub jitter: Ratio,
    /// Root seed (only the jitter uses it).
    pub seed: u64,
    /// Free text recorded as the trace's generator (e.g. the command line).
    pub generator: String,
}

impl Default for SynthParams {
    fn default() -> Self {
        SynthParams {
            iters: 10,
            compute: SimDuration::from_us(100),
            bytes: 65536,
            jitter: Ratio::new(0, 1).expect("0/1"),
            seed: SeedTree::DEFAULT_ROOT,
            generator: String::new(),
        }
    }
}

/// Draws compute durations with the configured jitter.
struct Compute {
    base: SimDuration,
    jitter_ppm: u64,
    rng: SimRng,
}

impl Compute {
    fn new(p: &SynthParams) -> Result<Self, GenError> {
        let j = p.jitter;
        if j.num() > j.den() {
            return Err(GenError(format!("jitter {j} is above 1 (100%)")));
        }
        let jitter_ppm = (j.num() as u128 * 1_000_000 / j.den() as u128) as u64;
        Ok(Compute {
            base: p.compute,
            jitter_ppm,
            rng: SeedTree::new(p.seed).stream("gen/compute-jitter"),
        })
    }
    fn next(&mut self) -> SimDuration {
        if self.jitter_ppm == 0 {
            return self.base;
        }
        let x = below(&mut self.rng, 2 * self.jitter_ppm + 1) as i128 - self.jitter_ppm as i128;
        let c = self.base.as_ps() as i128;
        // Clamped, not wrapped, near 2^64 ps.
        SimDuration::from_ps((c + c * x / 1_000_000).clamp(0, u64::MAX as i128) as u64)
    }
}

fn meta(name: String, pes: u32, p: &SynthParams) -> TraceMeta {
    TraceMeta {
        name,
        generator: p.generator.clone(),
        description: String::new(),
        recorded_pes: pes,
        net: None,
        seed: (p.jitter.num() != 0).then_some(p.seed),
        cpu_scale: None,
        sequential_objects: false,
    }
}

fn need(cond: bool, msg: impl FnOnce() -> String) -> Result<(), GenError> {
    if cond { Ok(()) } else { Err(GenError(msg())) }
}

fn send(msg: MsgId, offset: SimDuration, to: ObjectId, bytes: u64, entry: EntryId) -> Send {
    Send {
        msg,
        offset,
        dest: Destination::Object(to),
        bytes,
        entry,
    }
}

fn finish(b: TraceBuilder) -> Result<Trace, GenError> {
    b.finish().map_err(|e| {
        GenError(format!(
            "internal error: generator built an invalid trace: {e}"
        ))
    })
}

/// Two ranks bouncing one message `iters` round trips. See the crate docs.
pub fn pingpong(p: &SynthParams) -> Result<Trace, GenError> {
    need(p.iters >= 1, || {
        "pingpong needs at least 1 iteration".into()
    })?;
    let mut b = TraceBuilder::new(meta(format!("pingpong-{}", p.iters), 2, p));
    let (ping, pong) = (b.entry("ping"), b.entry("pong"));
    let r = [b.object("rank[0]", PeId(0)), b.object("rank[1]", PeId(1))];
    let mut compute = Compute::new(p)?;
    let c = compute.next();
    let mut msg = b.new_msg();
    b.block(
        Block {
            iteration: Some(0),
            ..Block::new(r[0], ping, c)
        },
        &[],
        &[send(msg, c, r[1], p.bytes, pong)],
    );
    for k in 0..p.iters {
        let c = compute.next();
        let reply = b.new_msg();
        let blk = Block {
            trigger: Some(msg),
            iteration: Some(k),
            ..Block::new(r[1], pong, c)
        };
        b.block(blk, &[], &[send(reply, c, r[0], p.bytes, ping)]);
        msg = reply;
        if k + 1 < p.iters {
            let c = compute.next();
            let next = b.new_msg();
            let blk = Block {
                trigger: Some(msg),
                iteration: Some(k + 1),
                ..Block::new(r[0], ping, c)
            };
            b.block(blk, &[], &[send(next, c, r[1], p.bytes, pong)]);
            msg = next;
        } else {
            let blk = Block {
                trigger: Some(msg),
                iteration: Some(k),
                ..Block::new(r[0], ping, SimDuration::ZERO)
            };
            b.block(blk, &[], &[]);
        }
    }
    finish(b)
}

/// Iterated neighbour exchange, the shared shape of [`ring`] and [`halo`], as one iteration
/// repeated `p.iters` times (see [`trace::Repeated`]): the body holds every rank's compute
/// block (sending to each neighbour at its end) and then, rank by rank, one zero-time `recv`
/// block per incoming message; the compute block of iteration `k + 1` depends on its rank's
/// compute block and `recv` blocks of iteration `k` (carried dependencies). With jitter, the
/// compute durations are drawn per iteration in `(iteration, rank)` order and the sends stay
/// at the end of their block.
fn exchange_repeated(
    name: String,
    n: u32,
    neighbours: &dyn Fn(u32, &mut Vec<u32>),
    p: &SynthParams,
    progress: &mut dyn Progress,
) -> Result<Repeated, GenError> {
    progress.stage("generate: sends", n as u64, "ranks");
    need(n >= 1, || "at least one rank is needed".into())?;
    need(p.iters >= 1, || "at least 1 iteration is needed".into())?;
    need(p.iters <= trace::MAX_REPS, || {
        format!("at most {} iterations", trace::MAX_REPS)
    })?;
    let mut b = TraceBuilder::new(meta(name, n, p));
    let (compute_e, recv_e) = (b.entry("compute"), b.entry("recv"));
    for r in 0..n {
        b.object(format!("rank[{r}]"), PeId(r));
    }
    let mut compute = Compute::new(p)?;
    let nu = n as usize;
    let mut table = Vec::with_capacity(if compute.jitter_ppm > 0 {
        nu * p.iters as usize
    } else {
        nu
    });
    for _ in 0..if compute.jitter_ppm > 0 { p.iters } else { 1 } {
        for _ in 0..n {
            table.push(compute.next().as_ps());
        }
    }
    // Compute blocks, sending to each neighbour at their end; incoming counts per rank.
    let mut nb = Vec::new();
    let mut sends = Vec::new();
    let mut dest_of_send: Vec<u32> = Vec::new();
    let mut incoming = vec![0u32; nu + 1];
    for r in 0..n {
        if r & 0xffff == 0 {
            progress.advance_to(r as u64);
        }
        let c = SimDuration::from_ps(table[r as usize]);
        nb.clear();
        neighbours(r, &mut nb);
        sends.clear();
        for &d in &nb {
            sends.push(send(b.new_msg(), c, ObjectId(d), p.bytes, recv_e));
            dest_of_send.push(d);
            incoming[d as usize + 1] += 1;
        }
        let blk = Block {
            iteration: Some(0),
            ..Block::new(ObjectId(r), compute_e, c)
        };
        b.block(blk, &[], &sends);
    }
    // Receive blocks, rank by rank, in send order.
    for r in 0..nu {
        incoming[r + 1] += incoming[r];
    }
    let total = incoming[nu] as usize;
    let mut fill = incoming.clone();
    let mut labels = vec![0u64; total];
    for (m, &d) in dest_of_send.iter().enumerate() {
        labels[fill[d as usize] as usize] = m as u64;
        fill[d as usize] += 1;
    }
    drop(dest_of_send);
    progress.stage("generate: receives", n as u64, "ranks");
    for r in 0..n {
        if r & 0xffff == 0 {
            progress.advance_to(r as u64);
        }
        for &m in &labels[incoming[r as usize] as usize..incoming[r as usize + 1] as usize] {
            let blk = Block {
                trigger: Some(MsgId(m)),
                iteration: Some(0),
                ..Block::new(ObjectId(r), recv_e, SimDuration::ZERO)
            };
            b.block(blk, &[], &[]);
        }
    }
    drop(labels);
    let body = finish(b)?;
    // Compute block r of iteration k+1 waits for compute r and r's receives of iteration k.
    let mut carried_end = Vec::with_capacity(nu + total);
    let mut carried = Vec::with_capacity(nu + total);
    for r in 0..n {
        carried.push(Carried {
            block: BlockId(r),
            lag: 1,
        });
        let (a, z) = (incoming[r as usize], incoming[r as usize + 1]);
        carried.extend((a..z).map(|j| Carried {
            block: BlockId(n + j),
            lag: 1,
        }));
        carried_end.push(carried.len() as u32);
    }
    carried_end.resize(nu + total, carried.len() as u32);
    let varying = if compute.jitter_ppm > 0 {
        Varying {
            blocks: (0..n).collect(),
            durations_ps: table,
            end_anchored: vec![1; total],
        }
    } else {
        Varying::default()
    };
    Repeated::new(
        body,
        p.iters,
        carried_end,
        carried,
        total as u64,
        1,
        varying,
    )
    .map_err(|e| {
        GenError(format!(
            "internal error: generator built an invalid repeated trace: {e}"
        ))
    })
}

/// `ranks` ranks in a ring, each sending to its right neighbour every iteration.
pub fn ring(ranks: u32, p: &SynthParams) -> Result<Trace, GenError> {
    Ok(ring_repeated(ranks, p)?.expand())
}

/// [`ring`] in its compact form: one iteration repeated.
pub fn ring_repeated(ranks: u32, p: &SynthParams) -> Result<Repeated, GenError> {
    ring_repeated_with(ranks, p, &mut NoProgress)
}

/// [`ring_repeated`], reporting the ranks built to `progress`.
pub fn ring_repeated_with(
    ranks: u32,
    p: &SynthParams,
    progress: &mut dyn Progress,
) -> Result<Repeated, GenError> {
    need(ranks >= 1, || "ring needs at least 1 rank".into())?;
    exchange_repeated(
        format!("ring-{ranks}"),
        ranks,
        &|r, out| out.push((r + 1) % ranks),
        p,
        progress,
    )
}

/// A 2-D or 3-D halo exchange on a grid of ranks of extent `dims` (x fastest).
pub fn halo(dims: &[u32], periodic: bool, p: &SynthParams) -> Result<Trace, GenError> {
    Ok(halo_repeated(dims, periodic, p)?.expand())
}

/// [`halo`] in its compact form: one iteration repeated.
pub fn halo_repeated(dims: &[u32], periodic: bool, p: &SynthParams) -> Result<Repeated, GenError> {
    halo_repeated_with(dims, periodic, p, &mut NoProgress)
}

/// [`halo_repeated`], reporting the ranks built to `progress`.
pub fn halo_repeated_with(
    dims: &[u32],
    periodic: bool,
    p: &SynthParams,
    progress: &mut dyn Progress,
) -> Result<Repeated, GenError> {
    need(matches!(dims.len(), 2 | 3), || {
        format!("halo needs 2 or 3 dimensions, got {}", dims.len())
    })?;
    need(dims.iter().all(|&d| d >= 1), || {
        "every dimension must be at least 1".into()
    })?;
    let n = dims.iter().try_fold(1u32, |a, &d| a.checked_mul(d));
    let n = n.ok_or_else(|| GenError("too many ranks (more than 2^32)".into()))?;
    let shape: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
    let name = format!(
        "halo{}d-{}{}",
        dims.len(),
        shape.join("x"),
        if periodic { "-periodic" } else { "" }
    );
    let dims = dims.to_vec();
    let coords = {
        let dims = dims.clone();
        move |mut r: u32| -> Vec<u32> {
            dims.iter()
                .map(|&d| {
                    let c = r % d;
                    r /= d;
                    c
                })
                .collect()
        }
    };
    let index = {
        let dims = dims.clone();
        move |c: &[u32]| -> u32 {
            c.iter()
                .zip(&dims)
                .rev()
                .fold(0, |acc, (&x, &d)| acc * d + x)
        }
    };
    let nbrs = move |r: u32, out: &mut Vec<u32>| {
        let c = coords(r);
        for axis in 0..dims.len() {
            let d = dims[axis];
            if d == 1 {
                continue;
            }
            for dir in [-1i64, 1] {
                let x = c[axis] as i64 + dir;
                let x = if (0..d as i64).contains(&x) {
                    x as u32
                } else if periodic {
                    x.rem_euclid(d as i64) as u32
                } else {
                    continue;
                };
                let mut cc = c.clone();
                cc[axis] = x;
                out.push(index(&cc));
            }
        }
    };
    exchange_repeated(name, n, &nbrs, p, progress)
}

/// MK's pipeline: `stages` processors in a chain, `p.iters` items flowing through it.
pub fn pipeline(stages: u32, p: &SynthParams) -> Result<Trace, GenError> {
    need(stages >= 1, || "pipeline needs at least 1 stage".into())?;
    need(p.iters >= 1, || "pipeline needs at least 1 item".into())?;
    let mut b = TraceBuilder::new(meta(format!("pipeline-{stages}x{}", p.iters), stages, p));
    let step = b.entry("step");
    let procs: Vec<ObjectId> = (0..stages)
        .map(|i| b.object(format!("stage[{i}]"), PeId(i)))
        .collect();
    let mut compute = Compute::new(p)?;
    // Messages into the current stage, by item.
    let mut inbound: Vec<MsgId> = Vec::new();
    let mut outbound: Vec<MsgId> = Vec::with_capacity(p.iters as usize);
    for i in 0..stages {
        outbound.clear();
        let mut prev: Option<BlockId> = None;
        for item in 0..p.iters {
            let w = compute.next();
            let mut sends = Vec::new();
            if i + 1 < stages {
                let m = b.new_msg();
                sends.push(send(m, w, procs[i as usize + 1], p.bytes, step));
                outbound.push(m);
            }
            let trigger = (i > 0).then(|| inbound[item as usize]);
            let blk = Block {
                trigger,
                iteration: Some(item),
                ..Block::new(procs[i as usize], step, w)
            };
            let deps: Vec<BlockId> = prev.into_iter().collect();
            prev = Some(b.block(blk, &deps, &sends));
        }
        std::mem::swap(&mut inbound, &mut outbound);
    }
    finish(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flat construction the repeated generators replaced, kept as the reference their
    /// expansion must equal block for block.
    /// Iterated neighbour exchange: the shared shape of [`ring`] and [`halo`].
    pub(super) fn exchange(
        name: String,
        n: u32,
        neighbours: &dyn Fn(u32, &mut Vec<u32>),
        p: &SynthParams,
    ) -> Result<Trace, GenError> {
        need(n >= 1, || "at least one rank is needed".into())?;
        need(p.iters >= 1, || "at least 1 iteration is needed".into())?;
        let mut b = TraceBuilder::new(meta(name, n, p));
        let (compute_e, recv_e) = (b.entry("compute"), b.entry("recv"));
        let ranks: Vec<ObjectId> = (0..n)
            .map(|r| b.object(format!("rank[{r}]"), PeId(r)))
            .collect();
        let mut compute = Compute::new(p)?;
        let mut nb = Vec::new();
        let mut sends = Vec::new();
        // Per rank: messages arriving this iteration, and the blocks the next compute waits on.
        let mut incoming: Vec<Vec<MsgId>> = vec![Vec::new(); n as usize];
        let mut waits: Vec<Vec<BlockId>> = vec![Vec::new(); n as usize];
        for k in 0..p.iters {
            for r in 0..n {
                let c = compute.next();
                nb.clear();
                neighbours(r, &mut nb);
                sends.clear();
                for &d in &nb {
                    let m = b.new_msg();
                    sends.push(send(m, c, ranks[d as usize], p.bytes, recv_e));
                    incoming[d as usize].push(m);
                }
                let blk = Block {
                    iteration: Some(k),
                    ..Block::new(ranks[r as usize], compute_e, c)
                };
                let id = b.block(blk, &waits[r as usize], &sends);
                waits[r as usize].clear();
                waits[r as usize].push(id);
            }
            for r in 0..n {
                for m in incoming[r as usize].drain(..) {
                    let blk = Block {
                        trigger: Some(m),
                        iteration: Some(k),
                        ..Block::new(ranks[r as usize], recv_e, SimDuration::ZERO)
                    };
                    let id = b.block(blk, &[], &[]);
                    waits[r as usize].push(id);
                }
            }
        }
        finish(b)
    }

    #[test]
    fn repeated_exchange_expands_to_the_flat_construction() {
        let grid = |dims: Vec<u32>, periodic: bool| {
            move |r: u32, out: &mut Vec<u32>| {
                let (x, y) = (dims[0], dims[1]);
                let c = [r % x, (r / x) % y, r / (x * y)];
                for axis in 0..3 {
                    let d = dims[axis];
                    if d == 1 {
                        continue;
                    }
                    for dir in [-1i64, 1] {
                        let v = c[axis] as i64 + dir;
                        let v = if (0..d as i64).contains(&v) {
                            v as u32
                        } else if periodic {
                            v.rem_euclid(d as i64) as u32
                        } else {
                            continue;
                        };
                        let mut cc = c;
                        cc[axis] = v;
                        out.push(cc[0] + x * (cc[1] + y * cc[2]));
                    }
                }
            }
        };
        for (dims, periodic, iters, jitter) in [
            (vec![4, 3, 2], false, 5, "0"),
            (vec![3, 3, 3], true, 4, "0.25"),
            (vec![1, 1, 1], false, 3, "0"),
            (vec![5, 1, 2], true, 1, "0.5"),
        ] {
            let p = SynthParams {
                iters,
                jitter: Ratio::parse(jitter).unwrap(),
                seed: 11,
                ..SynthParams::default()
            };
            let n = dims.iter().product();
            let f = grid(dims.clone(), periodic);
            let flat = exchange("x".into(), n, &f, &p).unwrap();
            let rep = exchange_repeated("x".into(), n, &f, &p, &mut NoProgress).unwrap();
            assert_eq!(
                rep.expand(),
                flat,
                "{dims:?} periodic={periodic} jitter={jitter}"
            );
            assert_eq!(rep.num_blocks(), flat.num_blocks() as u64);
        }
        let p = SynthParams {
            iters: 6,
            ..SynthParams::default()
        };
        let ring = |r: u32, out: &mut Vec<u32>| out.push((r + 1) % 7);
        assert_eq!(
            exchange_repeated("r".into(), 7, &ring, &p, &mut NoProgress)
                .unwrap()
                .expand(),
            exchange("r".into(), 7, &ring, &p).unwrap()
        );
    }
}
