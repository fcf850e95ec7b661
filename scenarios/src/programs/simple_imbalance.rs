//! `simple-imbalance`: Lee's SimpleImbalance (2009 §6.6). `objects_per_pe x P` objects;
//! objects placed (initially) on the upper half of the PEs do two work units per iteration,
//! the others one. Every iteration ends in a barrier (a reduction whose callback broadcasts
//! `next`); at iteration `lb_at` every object calls `at_sync` and continues in
//! `resume_from_sync`, where a load balancer may have moved it.
//!
//! Blocks per object and iteration: one `iterate` block (the work, iteration marker k, and the
//! contribution), one `next` block; at `lb_at` the `next` block is the sync point (marked
//! `lb_sync`) and the iteration starts in `resume_from_sync` instead.

use super::params::{ParamSpec, Params};
use emulator::{Builder, Callback, Chare, Ctx, EmuError, Message, Program, ReduceOp, Target};
use sim_core::SimDuration;

/// Parameters.
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        key: "objects_per_pe",
        default: "2",
        help: "objects per PE (at least 1)",
    },
    ParamSpec {
        key: "iters",
        default: "10",
        help: "iterations",
    },
    ParamSpec {
        key: "lb_at",
        default: "5",
        help: "iteration before which every object calls at_sync (0: never)",
    },
    ParamSpec {
        key: "work",
        default: "1ms",
        help: "one work unit (light objects do 1, heavy ones 2 per iteration)",
    },
];

/// One line for `--help`.
pub const ABOUT: &str =
    "half the PEs' objects do twice the work; barrier per iteration; at_sync at lb_at (Lee 6.6)";

/// The program.
#[derive(Clone, Debug)]
pub struct SimpleImbalance {
    /// Objects per PE.
    pub objects_per_pe: u32,
    /// Iterations.
    pub iters: u32,
    /// Sync point (0: none).
    pub lb_at: u32,
    /// One work unit.
    pub work: SimDuration,
}

impl SimpleImbalance {
    /// From `--set` parameters.
    pub fn new(p: &Params) -> Result<Self, EmuError> {
        let s = SimpleImbalance {
            objects_per_pe: p.u32_min("objects_per_pe", 1)?,
            iters: p.u32_min("iters", 1)?,
            lb_at: p.u32_min("lb_at", 0)?,
            work: p.duration("work")?,
        };
        if s.lb_at >= s.iters {
            return Err(EmuError::Param(format!(
                "simple-imbalance lb_at={} must be below iters={} (0 disables it)",
                s.lb_at, s.iters
            )));
        }
        Ok(s)
    }
}

/// Messages.
#[derive(Clone, Debug)]
pub enum Msg {
    /// Begin.
    Start,
    /// The barrier after an iteration completed.
    Next(f64),
}

impl Message for Msg {
    fn entry(&self) -> usize {
        match self {
            Msg::Start => 0,
            Msg::Next(_) => 1,
        }
    }
}

/// One object.
#[derive(Debug)]
pub struct Obj {
    units: u64,
    iter: u32,
    cfg: SimpleImbalance,
}

impl Obj {
    fn iterate(&mut self, ctx: &mut Ctx<'_, Msg>) {
        ctx.work(SimDuration::from_ps(
            self.cfg.work.as_ps().saturating_mul(self.units),
        ));
        ctx.iteration(self.iter);
        ctx.contribute(
            0.0,
            ReduceOp::Sum,
            8,
            Callback {
                target: Target::Broadcast(ctx.coll()),
                bytes: 8,
                make: Msg::Next,
            },
        );
    }
}

impl Chare for Obj {
    type Msg = Msg;
    fn receive(&mut self, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        match msg {
            Msg::Start => {
                self.units = if ctx.pe() >= ctx.num_pes() / 2 { 2 } else { 1 };
                self.iterate(ctx);
            }
            Msg::Next(_) => {
                self.iter += 1;
                if self.iter == self.cfg.lb_at {
                    ctx.at_sync();
                } else if self.iter < self.cfg.iters {
                    self.iterate(ctx);
                }
            }
        }
    }
    fn resume_from_sync(&mut self, ctx: &mut Ctx<'_, Msg>) {
        self.iterate(ctx);
    }
}

impl Program for SimpleImbalance {
    type Msg = Msg;
    type Obj = Obj;
    fn name(&self) -> String {
        format!("simple-imbalance-{}opp", self.objects_per_pe)
    }
    fn entries(&self) -> &'static [&'static str] {
        &["iterate", "next"]
    }
    fn build(&self, b: &mut Builder<Obj, Msg>) -> Result<(), EmuError> {
        let n = b.pes() as u64 * self.objects_per_pe as u64;
        let n = u32::try_from(n).map_err(|_| EmuError::Param("too many objects".into()))?;
        let c = b.collection("obj", [n, 1, 1])?;
        b.fill(c, |_| Obj {
            units: 1,
            iter: 0,
            cfg: self.clone(),
        });
        b.start_all(c, |_| Msg::Start);
        Ok(())
    }
}
