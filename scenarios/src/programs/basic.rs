//! Small communication patterns: `pingpong`, `ring`, `kneighbor`, `pipeline`, `chain`,
//! `cycle`. Each object is an element of a 1-D collection `obj`; `N = objects_per_pe x P`
//! unless stated. `work` is spent (model timing: declared) before the sends of a block.

use super::params::{ParamSpec, Params};
use emulator::{Builder, Chare, Ctx, EmuError, Message, ObjRef, Program};
use sim_core::SimDuration;

/// Messages of every program in this module (each program uses some).
#[derive(Clone, Debug)]
pub enum Msg {
    /// Begin (runs with no triggering message).
    Start,
    /// A message carrying a round / hop / item number.
    Hop(u32),
    /// A second kind of hop (pingpong's reply, cycle's origin-tagged token).
    Back(u32, u32),
}

impl Message for Msg {
    fn entry(&self) -> usize {
        match self {
            Msg::Start => 0,
            Msg::Hop(_) => 1,
            Msg::Back(..) => 2,
        }
    }
}

/// Which pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Two objects bounce a message `iters` times each way.
    PingPong,
    /// One token goes `laps` times around a ring of N objects.
    Ring,
    /// Every object exchanges with its `k` nearest ring neighbours on each side, each iteration.
    KNeighbor,
    /// MK's pipeline: `stages` objects in a chain, `items` items flow through.
    Pipeline,
    /// Sinha's sequential chain: object 0 launches `chains` tokens `gap` apart; each visits
    /// objects 1..N-1 once and stops.
    Chain,
    /// Sinha's cycle: every object sends a token around the ring back to itself, `cycles`
    /// times; in every step each object receives exactly one message.
    Cycle,
}

/// Parameters of `pingpong`.
pub const PINGPONG: &[ParamSpec] = &[
    ParamSpec {
        key: "iters",
        default: "100",
        help: "round trips",
    },
    ParamSpec {
        key: "bytes",
        default: "1KiB",
        help: "message size",
    },
    ParamSpec {
        key: "work",
        default: "0ns",
        help: "work per bounce",
    },
];
/// Parameters of `ring`.
pub const RING: &[ParamSpec] = &[
    ParamSpec {
        key: "objects_per_pe",
        default: "1",
        help: "ring members per PE",
    },
    ParamSpec {
        key: "laps",
        default: "10",
        help: "times the token goes around",
    },
    ParamSpec {
        key: "bytes",
        default: "1KiB",
        help: "token size",
    },
    ParamSpec {
        key: "work",
        default: "1us",
        help: "work per hop",
    },
];
/// Parameters of `kneighbor`.
pub const KNEIGHBOR: &[ParamSpec] = &[
    ParamSpec {
        key: "objects_per_pe",
        default: "1",
        help: "objects per PE",
    },
    ParamSpec {
        key: "k",
        default: "1",
        help: "neighbours on each side",
    },
    ParamSpec {
        key: "iters",
        default: "10",
        help: "iterations",
    },
    ParamSpec {
        key: "bytes",
        default: "4KiB",
        help: "message size",
    },
    ParamSpec {
        key: "work",
        default: "10us",
        help: "work per iteration",
    },
];
/// Parameters of `pipeline`.
pub const PIPELINE: &[ParamSpec] = &[
    ParamSpec {
        key: "stages",
        default: "0",
        help: "stages (0: one per PE)",
    },
    ParamSpec {
        key: "items",
        default: "16",
        help: "items through the pipeline",
    },
    ParamSpec {
        key: "bytes",
        default: "1KiB",
        help: "item size",
    },
    ParamSpec {
        key: "work",
        default: "10us",
        help: "work per item per stage",
    },
];
/// Parameters of `chain`.
pub const CHAIN: &[ParamSpec] = &[
    ParamSpec {
        key: "objects_per_pe",
        default: "1",
        help: "chain members per PE",
    },
    ParamSpec {
        key: "chains",
        default: "4",
        help: "tokens launched",
    },
    ParamSpec {
        key: "gap",
        default: "10us",
        help: "object 0's work between launches",
    },
    ParamSpec {
        key: "bytes",
        default: "1KiB",
        help: "token size",
    },
    ParamSpec {
        key: "work",
        default: "1us",
        help: "work per visit",
    },
];
/// Parameters of `cycle`.
pub const CYCLE: &[ParamSpec] = &[
    ParamSpec {
        key: "objects_per_pe",
        default: "1",
        help: "ring members per PE",
    },
    ParamSpec {
        key: "cycles",
        default: "1",
        help: "times each token goes around",
    },
    ParamSpec {
        key: "bytes",
        default: "1KiB",
        help: "token size",
    },
    ParamSpec {
        key: "work",
        default: "1us",
        help: "work per hop",
    },
];

/// One of the patterns with its parameters.
#[derive(Clone, Debug)]
pub struct Basic {
    /// Pattern.
    pub pattern: Pattern,
    /// Objects per PE (ring-like patterns).
    pub objects_per_pe: u32,
    /// Iterations / laps / items / chains / cycles.
    pub count: u32,
    /// `k` (kneighbor) or `stages` (pipeline; 0 = P).
    pub k: u32,
    /// Message size.
    pub bytes: u64,
    /// Work per block.
    pub work: SimDuration,
    /// Launch gap (chain).
    pub gap: SimDuration,
}

impl Basic {
    /// From `--set` parameters.
    pub fn new(pattern: Pattern, p: &Params) -> Result<Self, EmuError> {
        let opp = |p: &Params| p.u32_min("objects_per_pe", 1);
        let b = Basic {
            pattern,
            bytes: p.bytes("bytes")?,
            work: p.duration("work")?,
            objects_per_pe: match pattern {
                Pattern::PingPong | Pattern::Pipeline => 1,
                _ => opp(p)?,
            },
            count: match pattern {
                Pattern::PingPong | Pattern::KNeighbor => p.u32_min("iters", 1)?,
                Pattern::Ring => p.u32_min("laps", 1)?,
                Pattern::Pipeline => p.u32_min("items", 1)?,
                Pattern::Chain => p.u32_min("chains", 1)?,
                Pattern::Cycle => p.u32_min("cycles", 1)?,
            },
            k: match pattern {
                Pattern::KNeighbor => p.u32_min("k", 1)?,
                Pattern::Pipeline => p.u32_min("stages", 0)?,
                _ => 0,
            },
            gap: match pattern {
                Pattern::Chain => p.duration("gap")?,
                _ => SimDuration::ZERO,
            },
        };
        Ok(b)
    }
    fn objects(&self, pes: u32) -> Result<u32, EmuError> {
        let n = match self.pattern {
            Pattern::PingPong => 2,
            Pattern::Pipeline if self.k > 0 => self.k as u64,
            _ => pes as u64 * self.objects_per_pe as u64,
        };
        u32::try_from(n).map_err(|_| EmuError::Param(format!("{n} objects are too many")))
    }
}

/// kneighbor: the largest useful distance, `min(k, n/2)` (beyond it neighbours repeat).
fn kneighbor_reach(k: u32, n: u32) -> u32 {
    k.min(n / 2)
}

/// kneighbor: distinct neighbours of each object (both sides up to the reach, one object at
/// distance n/2 when n is even).
fn kneighbor_degree(k: u32, n: u32) -> u32 {
    let r = kneighbor_reach(k, n);
    if n % 2 == 0 && r == n / 2 && r > 0 {
        2 * r - 1
    } else {
        2 * r
    }
}

/// One object of a basic pattern.
#[derive(Debug)]
pub struct Obj {
    cfg: Basic,
    n: u32,
    /// kneighbor: current iteration, messages received per parity, distinct neighbours.
    iter: u32,
    got: [u32; 2],
    nbs: Vec<u32>,
}

impl Obj {
    fn at(&self, ctx: &Ctx<'_, Msg>, i: u32) -> ObjRef {
        ctx.coll().nth(i % self.n)
    }
    fn me(&self, ctx: &Ctx<'_, Msg>) -> u32 {
        ctx.coll().position(ctx.me()).expect("own collection")
    }
    fn kn_send(&mut self, ctx: &mut Ctx<'_, Msg>) {
        let it = self.iter;
        if self.nbs.is_empty() {
            ctx.send(ctx.me(), 0, Msg::Hop(it));
        }
        for i in 0..self.nbs.len() {
            let to = ctx.coll().nth(self.nbs[i]);
            ctx.send(to, self.cfg.bytes, Msg::Hop(it));
        }
    }
}

impl Chare for Obj {
    type Msg = Msg;
    fn receive(&mut self, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        let me = self.me(ctx);
        let (bytes, work, count) = (self.cfg.bytes, self.cfg.work, self.cfg.count);
        match (self.cfg.pattern, msg) {
            (Pattern::PingPong, Msg::Start) => ctx.send(self.at(ctx, 1), bytes, Msg::Hop(0)),
            (Pattern::PingPong, Msg::Hop(k)) => {
                ctx.work(work);
                ctx.iteration(k);
                ctx.send(self.at(ctx, 0), bytes, Msg::Back(k, 0));
            }
            (Pattern::PingPong, Msg::Back(k, _)) => {
                ctx.work(work);
                if k + 1 < count {
                    ctx.send(self.at(ctx, 1), bytes, Msg::Hop(k + 1));
                }
            }
            (Pattern::Ring, Msg::Start) => {
                ctx.work(work);
                ctx.iteration(0);
                if count * self.n > 1 {
                    ctx.send(self.at(ctx, 1), bytes, Msg::Hop(1));
                }
            }
            (Pattern::Ring, Msg::Hop(h)) => {
                ctx.work(work);
                ctx.iteration(h / self.n);
                if h + 1 < count * self.n {
                    ctx.send(self.at(ctx, me + 1), bytes, Msg::Hop(h + 1));
                }
            }
            (Pattern::KNeighbor, Msg::Start) => {
                // Distances beyond n/2 name neighbours already listed; at n/2 both sides are
                // the same object.
                let n = self.n as i64;
                let reach = kneighbor_reach(self.cfg.k, self.n) as i64;
                self.nbs
                    .reserve(kneighbor_degree(self.cfg.k, self.n) as usize);
                for d in 1..=reach {
                    for s in [-d, d] {
                        if s == d && 2 * d == n {
                            continue;
                        }
                        self.nbs.push((me as i64 + s).rem_euclid(n) as u32);
                    }
                }
                self.kn_send(ctx);
            }
            (Pattern::KNeighbor, Msg::Hop(it)) => {
                self.got[(it % 2) as usize] += 1;
                let need = self.nbs.len().max(1) as u32;
                while self.iter < count && self.got[(self.iter % 2) as usize] == need {
                    self.got[(self.iter % 2) as usize] = 0;
                    ctx.work(work);
                    ctx.iteration(self.iter);
                    self.iter += 1;
                    if self.iter < count {
                        self.kn_send(ctx);
                    }
                }
            }
            (Pattern::Pipeline, Msg::Start) => ctx.send(ctx.me(), 0, Msg::Back(0, 0)),
            (Pattern::Pipeline, Msg::Back(b, _)) => {
                // Stage 0 produces item b.
                ctx.work(work);
                ctx.iteration(b);
                if self.n > 1 {
                    ctx.send(self.at(ctx, 1), bytes, Msg::Hop(b));
                }
                if b + 1 < count {
                    ctx.send(ctx.me(), 0, Msg::Back(b + 1, 0));
                }
            }
            (Pattern::Pipeline, Msg::Hop(b)) => {
                ctx.work(work);
                ctx.iteration(b);
                if me + 1 < self.n {
                    ctx.send(self.at(ctx, me + 1), bytes, Msg::Hop(b));
                }
            }
            (Pattern::Chain, Msg::Start) => ctx.send(ctx.me(), 0, Msg::Back(0, 0)),
            (Pattern::Chain, Msg::Back(c, _)) => {
                if self.n > 1 {
                    ctx.send(self.at(ctx, 1), bytes, Msg::Hop(c));
                } else {
                    ctx.iteration(c);
                }
                if c + 1 < count {
                    ctx.work(self.cfg.gap);
                    ctx.send(ctx.me(), 0, Msg::Back(c + 1, 0));
                }
            }
            (Pattern::Chain, Msg::Hop(c)) => {
                ctx.work(work);
                if me + 1 < self.n {
                    ctx.send(self.at(ctx, me + 1), bytes, Msg::Hop(c));
                } else {
                    ctx.iteration(c);
                }
            }
            (Pattern::Cycle, Msg::Start) => {
                ctx.work(work);
                ctx.send(self.at(ctx, me + 1), bytes, Msg::Back(me, 1));
            }
            (Pattern::Cycle, Msg::Back(origin, hops)) => {
                ctx.work(work);
                // `hops` counts hops made since the token left its origin, over all cycles.
                ctx.iteration((hops - 1) / self.n);
                if hops < count * self.n {
                    ctx.send(self.at(ctx, me + 1), bytes, Msg::Back(origin, hops + 1));
                }
            }
            (p, m) => panic!("{p:?} got unexpected {m:?}"),
        }
    }
}

impl Program for Basic {
    type Msg = Msg;
    type Obj = Obj;
    fn name(&self) -> String {
        format!("{:?}", self.pattern).to_lowercase()
    }
    fn entries(&self) -> &'static [&'static str] {
        match self.pattern {
            Pattern::PingPong => &["start", "ping", "pong"],
            Pattern::Ring => &["start", "token", "unused"],
            Pattern::KNeighbor => &["start", "exchange", "unused"],
            Pattern::Pipeline => &["start", "stage", "produce"],
            Pattern::Chain => &["start", "visit", "launch"],
            Pattern::Cycle => &["start", "unused", "token"],
        }
    }
    fn build(&self, b: &mut Builder<Obj, Msg>) -> Result<(), EmuError> {
        let n = self.objects(b.pes())?;
        let c = b.collection("obj", [n, 1, 1])?;
        if self.pattern == Pattern::KNeighbor {
            // Each object's neighbour list and one iteration's messages to them (about 100
            // bytes each in flight).
            let links = n as u64 * kneighbor_degree(self.k, n) as u64;
            b.reserve(
                &format!(
                    "{links} neighbour links (k={} on {n} objects) and their messages",
                    self.k
                ),
                links.saturating_mul(104),
            )?;
        }
        // Lower bounds of the blocks each pattern runs (the emulator refuses a flat run that
        // could not hold them before starting it).
        let (n64, count) = (n as u64, self.count as u64);
        b.expect_blocks(match self.pattern {
            Pattern::PingPong => 2 * count,
            Pattern::Ring | Pattern::KNeighbor => count.saturating_mul(n64),
            Pattern::Pipeline | Pattern::Chain | Pattern::Cycle => count,
        });
        b.fill(c, |_| Obj {
            cfg: self.clone(),
            n,
            iter: 0,
            got: [0; 2],
            nbs: Vec::new(),
        });
        match self.pattern {
            Pattern::KNeighbor | Pattern::Cycle => b.start_all(c, |_| Msg::Start),
            _ => b.start(c.nth(0), Msg::Start),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kneighbor_degree_counts_the_distinct_neighbours() {
        // Brute force: every distance 1..=k on both sides, distinct, not itself.
        for n in 1..=12u32 {
            for k in [1, 2, 3, 5, 6, 7, 13, u32::MAX] {
                let mut nbs: Vec<u32> = Vec::new();
                for d in 1..=k.min(3 * n) as i64 {
                    for s in [-d, d] {
                        let j = s.rem_euclid(n as i64) as u32;
                        if j != 0 && !nbs.contains(&j) {
                            nbs.push(j);
                        }
                    }
                }
                assert_eq!(kneighbor_degree(k, n) as usize, nbs.len(), "n={n} k={k}");
                assert!(kneighbor_reach(k, n) <= n / 2);
            }
        }
    }
}
