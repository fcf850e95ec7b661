//! Tree patterns: `broadcast-tree` and `collect-tree` (binomial trees on a hypercube of
//! `2^dim` objects, Rover 1989), and `divide-conquer` (a binary task tree, Sinha 1994).
//!
//! Binomial tree: the parent of node `i > 0` is `i` without its highest set bit; the children
//! of `i` are `i + 2^j` for every `j` above `i`'s highest set bit (all `j < dim` for the root),
//! so every edge joins hypercube neighbours and the depth is `dim`.

use super::params::{ParamSpec, Params};
use emulator::{Builder, Chare, Ctx, EmuError, Message, Program};
use sim_core::SimDuration;

/// Parameters of `broadcast-tree` and `collect-tree`.
pub const TREE: &[ParamSpec] = &[
    ParamSpec {
        key: "dim",
        default: "0",
        help: "hypercube dimension: 2^dim objects (0: the largest 2^d <= P)",
    },
    ParamSpec {
        key: "rounds",
        default: "4",
        help: "broadcasts / collections",
    },
    ParamSpec {
        key: "bytes",
        default: "1KiB",
        help: "message size",
    },
    ParamSpec {
        key: "work",
        default: "1us",
        help: "work per node per round",
    },
];
/// Parameters of `divide-conquer`.
pub const DIVIDE: &[ParamSpec] = &[
    ParamSpec {
        key: "depth",
        default: "6",
        help: "tree depth: 2^depth leaves, 2^(depth+1)-1 objects (0: log2 P)",
    },
    ParamSpec {
        key: "iters",
        default: "1",
        help: "problems solved one after the other",
    },
    ParamSpec {
        key: "bytes",
        default: "256",
        help: "task and result size",
    },
    ParamSpec {
        key: "leaf_work",
        default: "10us",
        help: "work of a leaf task",
    },
    ParamSpec {
        key: "split_work",
        default: "1us",
        help: "work to split a task",
    },
    ParamSpec {
        key: "combine_work",
        default: "1us",
        help: "work to combine two results",
    },
];

/// Which tree program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Root broadcasts `rounds` times down the binomial tree.
    Broadcast,
    /// Every node sends a value up the binomial tree each round (combining its children's).
    Collect,
    /// Tasks split down a binary tree and results combine back up.
    DivideConquer,
}

/// A tree program with its parameters.
#[derive(Clone, Debug)]
pub struct Tree {
    /// Which.
    pub kind: Kind,
    /// Hypercube dimension (0: derived from P) or divide-conquer depth.
    pub dim: u32,
    /// Rounds or iterations.
    pub rounds: u32,
    /// Message size.
    pub bytes: u64,
    /// Work per node per round (leaf work for divide-conquer).
    pub work: SimDuration,
    /// Split and combine work (divide-conquer).
    pub split: SimDuration,
    /// Combine work (divide-conquer).
    pub combine: SimDuration,
}

impl Tree {
    /// From `--set` parameters.
    pub fn new(kind: Kind, p: &Params) -> Result<Self, EmuError> {
        Ok(match kind {
            Kind::DivideConquer => Tree {
                kind,
                dim: p.u32_min("depth", 0)?,
                rounds: p.u32_min("iters", 1)?,
                bytes: p.bytes("bytes")?,
                work: p.duration("leaf_work")?,
                split: p.duration("split_work")?,
                combine: p.duration("combine_work")?,
            },
            _ => Tree {
                kind,
                dim: p.u32_min("dim", 0)?,
                rounds: p.u32_min("rounds", 1)?,
                bytes: p.bytes("bytes")?,
                work: p.duration("work")?,
                split: SimDuration::ZERO,
                combine: SimDuration::ZERO,
            },
        })
    }
    fn dim_for(&self, pes: u32) -> u32 {
        if self.dim > 0 {
            self.dim
        } else {
            31 - pes.leading_zeros()
        }
    }
}

/// Highest set bit of `i` (`i > 0`).
fn high_bit(i: u32) -> u32 {
    31 - i.leading_zeros()
}

/// Binomial-tree children of `i` in a tree of dimension `dim`, smallest subtree last.
pub fn binomial_children(i: u32, dim: u32) -> impl Iterator<Item = u32> {
    let first = if i == 0 { 0 } else { high_bit(i) + 1 };
    (first..dim).map(move |j| i + (1 << j))
}

/// Binomial-tree parent of `i > 0`.
pub fn binomial_parent(i: u32) -> u32 {
    i & !(1 << high_bit(i))
}

/// Messages.
#[derive(Clone, Debug)]
pub enum Msg {
    /// Begin.
    Start,
    /// Down the tree (broadcast round / task of iteration).
    Down(u32),
    /// Up the tree (collected value / result of iteration).
    Up(u32),
    /// A node's own contribution is ready (collect-tree) / the root starts the next round.
    Tick(u32),
}

impl Message for Msg {
    fn entry(&self) -> usize {
        match self {
            Msg::Start => 0,
            Msg::Down(_) => 1,
            Msg::Up(_) => 2,
            Msg::Tick(_) => 3,
        }
    }
}

/// A tree node.
#[derive(Debug)]
pub struct Node {
    cfg: Tree,
    dim: u32,
    n: u32,
    round: u32,
    own_done: bool,
    got: Vec<u32>,
}

impl Node {
    fn children(&self, i: u32) -> Vec<u32> {
        match self.cfg.kind {
            Kind::DivideConquer => [2 * i + 1, 2 * i + 2]
                .into_iter()
                .filter(|c| *c < self.n)
                .collect(),
            _ => binomial_children(i, self.dim).collect(),
        }
    }
    fn parent(&self, i: u32) -> u32 {
        match self.cfg.kind {
            Kind::DivideConquer => (i - 1) / 2,
            _ => binomial_parent(i),
        }
    }
    /// collect-tree: forward round `self.round` if everything is in.
    fn try_collect(&mut self, me: u32, ctx: &mut Ctx<'_, Msg>) {
        let r = self.round;
        let kids = self.children(me).len() as u32;
        if r >= self.cfg.rounds || !self.own_done || self.got[r as usize] < kids {
            return;
        }
        let c = ctx.coll();
        if me == 0 {
            ctx.iteration(r);
        } else {
            ctx.send(c.nth(self.parent(me)), self.cfg.bytes, Msg::Up(r));
        }
        self.round += 1;
        self.own_done = false;
        if self.round < self.cfg.rounds {
            ctx.send(ctx.me(), 0, Msg::Tick(self.round));
        }
    }
    /// divide-conquer: handle a task of iteration `it`.
    fn task(&mut self, me: u32, it: u32, ctx: &mut Ctx<'_, Msg>) {
        let kids = self.children(me);
        if kids.is_empty() {
            ctx.work(self.cfg.work);
            self.result(me, it, ctx);
            return;
        }
        ctx.work(self.cfg.split);
        for k in kids {
            ctx.send(ctx.coll().nth(k), self.cfg.bytes, Msg::Down(it));
        }
    }
    fn result(&mut self, me: u32, it: u32, ctx: &mut Ctx<'_, Msg>) {
        if me == 0 {
            ctx.iteration(it);
            if it + 1 < self.cfg.rounds {
                self.task(me, it + 1, ctx);
            }
        } else {
            ctx.send(ctx.coll().nth(self.parent(me)), self.cfg.bytes, Msg::Up(it));
        }
    }
}

impl Chare for Node {
    type Msg = Msg;
    fn receive(&mut self, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        let me = ctx.coll().position(ctx.me()).expect("own collection");
        let c = ctx.coll();
        match (self.cfg.kind, msg) {
            (Kind::Broadcast, Msg::Start) => ctx.send(ctx.me(), 0, Msg::Tick(0)),
            (Kind::Broadcast, Msg::Tick(r)) | (Kind::Broadcast, Msg::Down(r)) => {
                ctx.work(self.cfg.work);
                ctx.iteration(r);
                for k in self.children(me) {
                    ctx.send(c.nth(k), self.cfg.bytes, Msg::Down(r));
                }
                if me == 0 && r + 1 < self.cfg.rounds {
                    ctx.send(ctx.me(), 0, Msg::Tick(r + 1));
                }
            }
            (Kind::Collect, Msg::Start) => ctx.send(ctx.me(), 0, Msg::Tick(0)),
            (Kind::Collect, Msg::Tick(_)) => {
                ctx.work(self.cfg.work);
                self.own_done = true;
                self.try_collect(me, ctx);
            }
            (Kind::Collect, Msg::Up(r)) => {
                self.got[r as usize] += 1;
                self.try_collect(me, ctx);
            }
            (Kind::DivideConquer, Msg::Start) => self.task(me, 0, ctx),
            (Kind::DivideConquer, Msg::Down(it)) => self.task(me, it, ctx),
            (Kind::DivideConquer, Msg::Up(it)) => {
                self.got[(it % 2) as usize] += 1;
                if self.got[(it % 2) as usize] == self.children(me).len() as u32 {
                    self.got[(it % 2) as usize] = 0;
                    ctx.work(self.cfg.combine);
                    self.result(me, it, ctx);
                }
            }
            (k, m) => panic!("{k:?} got unexpected {m:?}"),
        }
    }
}

impl Program for Tree {
    type Msg = Msg;
    type Obj = Node;
    fn name(&self) -> String {
        match self.kind {
            Kind::Broadcast => "broadcast-tree".into(),
            Kind::Collect => "collect-tree".into(),
            Kind::DivideConquer => format!("divide-conquer-d{}", self.dim),
        }
    }
    fn entries(&self) -> &'static [&'static str] {
        match self.kind {
            Kind::DivideConquer => &["start", "task", "result", "unused"],
            _ => &["start", "down", "up", "tick"],
        }
    }
    fn build(&self, b: &mut Builder<Node, Msg>) -> Result<(), EmuError> {
        let dim = self.dim_for(b.pes());
        let n: u64 = match self.kind {
            Kind::DivideConquer => (1u64 << (dim.min(40) + 1)) - 1,
            _ => 1u64 << dim.min(40),
        };
        if dim > 24 {
            return Err(EmuError::Param(format!(
                "{} with 2^{dim} nodes is too large (at most 2^24)",
                self.name()
            )));
        }
        let c = b.collection("node", [n as u32, 1, 1])?;
        let rounds = self.rounds as usize;
        b.fill(c, |_| Node {
            cfg: self.clone(),
            dim,
            n: n as u32,
            round: 0,
            own_done: false,
            got: vec![0; rounds.max(2)],
        });
        match self.kind {
            Kind::Collect => b.start_all(c, |_| Msg::Start),
            _ => b.start(c.nth(0), Msg::Start),
        }
        Ok(())
    }
}
