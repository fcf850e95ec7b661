//! `pge`: MK's pipelined Gaussian elimination for tridiagonal systems (Mehra et al., §4.2 and
//! §A2.1). `arrays` independent systems of `n` unknowns; object `i` of a chain of `P` (one per
//! PE) owns `n / P` rows of every system. Pivots of `k` systems travel together, so `B =
//! ceil(arrays / k)` blocks flow through each pipeline, each message carrying `2 k
//! value_bytes` bytes, and each stage of a block costs `k x rows x row_cost`.
//!
//! * `ways=1` (PGE1): forward elimination is one pipeline from object 0 to `P-1`, then
//!   backward substitution one pipeline back from `P-1` to 0.
//! * `ways=2` (PGE2): two forward pipelines from both ends meet in the middle (objects
//!   `P/2-1` and `P/2`), which exchange one synchronous message of `2 arrays value_bytes`
//!   bytes each way; then two backward pipelines run outward.
//!
//! Each object runs its forward loop over all blocks before its backward loop, as the program
//! does (MK: the two phases "cannot proceed in parallel due to processor dependencies").
//! With no CPU overheads, PGE2 takes exactly
//! `2 [(P/2 - 1)(tau(m2) + W) + B W] + tau(m1)` with `W = k rows row_cost`: the forward stage
//! and, after it, MK's backward-stage formula `tau(m1) + (P/2 - 1)(tau(m2) + T(C3)) + B T(C3)`
//! under his convention (no overhead in the fill, o = 0). Tested.

use super::params::{ParamSpec, Params};
use emulator::{Builder, Chare, Ctx, EmuError, Message, ObjRef, Program};
use sim_core::SimDuration;

/// What it models.
pub const ABOUT: &str = "MK's pipelined Gaussian elimination (PGE1 one-way, PGE2 two-way) of tridiagonal systems, k systems' pivots per message";

/// Parameters.
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        key: "n",
        default: "1024",
        help: "unknowns per system (rows, split over the P objects)",
    },
    ParamSpec {
        key: "arrays",
        default: "256",
        help: "independent systems",
    },
    ParamSpec {
        key: "k",
        default: "8",
        help: "block size: systems whose pivots travel in one message",
    },
    ParamSpec {
        key: "ways",
        default: "1",
        help: "1: one-way pipelines (PGE1), 2: two-way (PGE2, needs an even P)",
    },
    ParamSpec {
        key: "row_cost",
        default: "1us",
        help: "compute time per row per system per stage",
    },
    ParamSpec {
        key: "value_bytes",
        default: "8",
        help: "bytes per value (a pivot message carries 2 values per system)",
    },
];

/// Messages.
#[derive(Clone, Debug)]
pub enum Msg {
    /// Begin.
    Start,
    /// A forward block arrives from upstream.
    Fwd(u32),
    /// A backward block arrives from downstream.
    Bwd(u32),
    /// The middle exchange (PGE2).
    Mid,
    /// Continue a loop that needs no message (the source's forward loop, the turn's backward
    /// loop).
    Tick,
}

impl Message for Msg {
    fn entry(&self) -> usize {
        match self {
            Msg::Start => 0,
            Msg::Fwd(_) => 1,
            Msg::Bwd(_) => 2,
            Msg::Mid => 3,
            Msg::Tick => 4,
        }
    }
}

/// The program's configuration.
#[derive(Clone, Debug)]
pub struct Pge {
    /// Unknowns per system.
    pub n: u32,
    /// Systems.
    pub arrays: u32,
    /// Block size.
    pub k: u32,
    /// 1 or 2.
    pub ways: u32,
    /// Per row per system per stage.
    pub row_cost: SimDuration,
    /// Bytes per value.
    pub value_bytes: u64,
}

impl Pge {
    /// From `--set` parameters.
    pub fn new(p: &Params) -> Result<Self, EmuError> {
        let ways = p.u32_min("ways", 1)?;
        if ways > 2 {
            return Err(EmuError::Param(format!(
                "pge ways={ways}: expected 1 (PGE1) or 2 (PGE2)"
            )));
        }
        let value_bytes = p.bytes("value_bytes")?;
        let arrays = p.u32_min("arrays", 1)?;
        if arrays as u64 * value_bytes > 1 << 32 {
            return Err(EmuError::Param(
                "arrays x value_bytes is over 4 GiB per message".into(),
            ));
        }
        Ok(Pge {
            n: p.u32_min("n", 1)?,
            arrays,
            k: p.u32_min("k", 1)?,
            ways,
            row_cost: p.duration("row_cost")?,
            value_bytes,
        })
    }
    /// Blocks through each pipeline: `ceil(arrays / k)`.
    pub fn blocks(&self) -> u32 {
        self.arrays.div_ceil(self.k)
    }
    /// Bytes of a pivot message: `2 k value_bytes`.
    pub fn block_bytes(&self) -> u64 {
        2 * self.k.min(self.arrays) as u64 * self.value_bytes
    }
    /// Bytes of the middle exchange: `2 arrays value_bytes`.
    pub fn middle_bytes(&self) -> u64 {
        2 * self.arrays as u64 * self.value_bytes
    }
    /// Rows of object `i` of `p`: `n / p`, the first `n % p` objects one more.
    pub fn rows(&self, i: u32, p: u32) -> u64 {
        (self.n / p + u32::from(i < self.n % p)) as u64
    }
    /// Systems in block `b` (the last may hold fewer).
    fn systems(&self, b: u32) -> u64 {
        (self.arrays - b * self.k).min(self.k) as u64
    }
}

/// One object of the chain.
#[derive(Debug)]
pub struct Obj {
    cfg: Pge,
    rows: u64,
    /// Where forward blocks come from and go to; backward blocks go the other way.
    up: Option<u32>,
    down: Option<u32>,
    /// The other turn object (PGE2).
    partner: Option<u32>,
    fwd_in: u32,
    fwd_done: u32,
    bwd_in: u32,
    bwd_done: u32,
    mid_sent: bool,
    mid_in: bool,
}

impl Obj {
    fn at(&self, ctx: &Ctx<'_, Msg>, i: u32) -> ObjRef {
        ctx.coll().nth(i)
    }
    fn stage(&self, b: u32) -> SimDuration {
        SimDuration::from_ps(
            self.cfg
                .row_cost
                .as_ps()
                .saturating_mul(self.rows * self.cfg.systems(b)),
        )
    }
    /// One forward block: its stage's work, then the pivots downstream.
    fn forward_unit(&mut self, ctx: &mut Ctx<'_, Msg>) {
        let b = self.fwd_done;
        ctx.work(self.stage(b));
        if let Some(d) = self.down {
            ctx.send(self.at(ctx, d), self.cfg.block_bytes(), Msg::Fwd(b));
        }
        self.fwd_done += 1;
    }
    /// One backward block: its stage's work, then the values upstream.
    fn backward_unit(&mut self, ctx: &mut Ctx<'_, Msg>) {
        let b = self.bwd_done;
        ctx.work(self.stage(b));
        if let Some(u) = self.up {
            ctx.send(self.at(ctx, u), self.cfg.block_bytes(), Msg::Bwd(b));
        }
        self.bwd_done += 1;
    }
    /// Does the work its messages allow; self-driven loops go one block per `Tick`.
    fn advance(&mut self, ctx: &mut Ctx<'_, Msg>) {
        let blocks = self.cfg.blocks();
        // Forward loop: the source drives itself, the others follow their messages.
        if self.fwd_done < blocks {
            if self.up.is_none() {
                self.forward_unit(ctx);
                if self.fwd_done < blocks || self.down.is_none() {
                    ctx.send(ctx.me(), 0, Msg::Tick);
                }
                return;
            }
            while self.fwd_done < self.fwd_in {
                self.forward_unit(ctx);
            }
            if self.fwd_done < blocks {
                return;
            }
        }
        // The turn: the middle exchange (PGE2), then the backward loop drives itself.
        if self.down.is_none() {
            if let Some(p) = self.partner {
                if !self.mid_sent {
                    ctx.send(self.at(ctx, p), self.cfg.middle_bytes(), Msg::Mid);
                    self.mid_sent = true;
                }
                if !self.mid_in {
                    return;
                }
            }
            if self.bwd_done < blocks {
                self.backward_unit(ctx);
                if self.bwd_done < blocks {
                    ctx.send(ctx.me(), 0, Msg::Tick);
                }
            }
            return;
        }
        while self.bwd_done < self.bwd_in {
            self.backward_unit(ctx);
        }
    }
}

impl Chare for Obj {
    type Msg = Msg;
    fn receive(&mut self, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        match msg {
            Msg::Fwd(_) => self.fwd_in += 1,
            Msg::Bwd(_) => self.bwd_in += 1,
            Msg::Mid => self.mid_in = true,
            Msg::Start | Msg::Tick => {}
        }
        self.advance(ctx);
    }
}

impl Program for Pge {
    type Msg = Msg;
    type Obj = Obj;
    fn name(&self) -> String {
        format!("pge{}-n{}-a{}-k{}", self.ways, self.n, self.arrays, self.k)
    }
    fn entries(&self) -> &'static [&'static str] {
        &["start", "forward", "backward", "exchange", "continue"]
    }
    fn build(&self, b: &mut Builder<Obj, Msg>) -> Result<(), EmuError> {
        let p = b.pes();
        if self.ways == 2 && p % 2 != 0 {
            return Err(EmuError::Param(format!(
                "pge ways=2 needs an even number of PEs (got {p})"
            )));
        }
        if self.n < p {
            return Err(EmuError::Param(format!(
                "pge: n={} unknowns over {p} objects leaves some without rows",
                self.n
            )));
        }
        let c = b.collection("row-block", [p, 1, 1])?;
        let h = p / 2;
        b.fill(c, |idx| {
            let i = idx[0];
            let (up, down, partner) = if self.ways == 1 {
                (i.checked_sub(1), (i + 1 < p).then_some(i + 1), None)
            } else if i < h {
                (
                    i.checked_sub(1),
                    (i + 1 < h).then_some(i + 1),
                    (i + 1 == h).then_some(h),
                )
            } else {
                (
                    (i + 1 < p).then_some(i + 1),
                    (i > h).then(|| i - 1),
                    (i == h).then(|| h - 1),
                )
            };
            Obj {
                cfg: self.clone(),
                rows: self.rows(i, p),
                up,
                down,
                partner,
                fwd_in: 0,
                fwd_done: 0,
                bwd_in: 0,
                bwd_done: 0,
                mid_sent: false,
                mid_in: false,
            }
        });
        b.start_all(c, |_| Msg::Start);
        Ok(())
    }
}
