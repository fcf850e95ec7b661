//! `atm2d`: MK's two-dimensional atmospheric simulation (Mehra et al., §5.2). A 2-D block
//! decomposition over a `px x py` grid of objects (one per PE by default), each holding a
//! `lambda x lambda` domain. Every step, each object exchanges boundaries with its four
//! neighbours in four synchronous phases, red/black ordered as in MK's code (red objects,
//! `(x + y)` even: north, south, east, west; black: south, north, west, east, so the two ends of
//! every exchange are in the same phase), `send_and_receive` of `2 lambda` values each; then it
//! computes `lambda^2 x cell_cost`. The region is not periodic: edge objects skip the phases
//! that have no neighbour.
//!
//! On a 2 x 2 grid every object has two neighbours and both its exchanges are paired with
//! objects that are ready at the same time, so a step takes exactly `2 (tau(m) + s + r) +
//! lambda^2 cell_cost` with `tau(m)` the wire time of `m = 2 lambda value_bytes` bytes (tested).

use super::params::{ParamSpec, Params};
use emulator::{Builder, Chare, Ctx, EmuError, Message, ObjRef, Program};
use sim_core::SimDuration;

/// What it models.
pub const ABOUT: &str = "MK's ATM2D: 2-D blocks of lambda x lambda, four red/black boundary exchanges of 2 lambda values, then lambda^2 work per step";

/// Parameters.
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        key: "lambda",
        default: "128",
        help: "side of each object's square domain (cells)",
    },
    ParamSpec {
        key: "steps",
        default: "10",
        help: "time steps",
    },
    ParamSpec {
        key: "cell_cost",
        default: "1us",
        help: "compute time per cell per step",
    },
    ParamSpec {
        key: "value_bytes",
        default: "8",
        help: "bytes per boundary value (a message carries 2 lambda values)",
    },
    ParamSpec {
        key: "grid",
        default: "0",
        help: "objects as PXxPY (0: one per PE, the most square factorisation of P)",
    },
];

/// Messages.
#[derive(Clone, Debug)]
pub enum Msg {
    /// Begin.
    Start,
    /// Boundary values of `step` arriving from direction `from` (0 N, 1 S, 2 E, 3 W).
    Halo {
        /// Time step.
        step: u32,
        /// The direction it comes from, as seen by the receiver.
        from: u8,
    },
}

impl Message for Msg {
    fn entry(&self) -> usize {
        match self {
            Msg::Start => 0,
            Msg::Halo { .. } => 1,
        }
    }
}

/// The program's configuration.
#[derive(Clone, Debug)]
pub struct Atm2d {
    /// Domain side.
    pub lambda: u32,
    /// Steps.
    pub steps: u32,
    /// Work per cell per step.
    pub cell_cost: SimDuration,
    /// Bytes per value.
    pub value_bytes: u64,
    /// Grid of objects (0 x 0: from P).
    pub grid: [u32; 2],
}

const NORTH: u8 = 0;
const SOUTH: u8 = 1;
const EAST: u8 = 2;
const WEST: u8 = 3;
const RED: [u8; 4] = [NORTH, SOUTH, EAST, WEST];
const BLACK: [u8; 4] = [SOUTH, NORTH, WEST, EAST];

fn opposite(d: u8) -> u8 {
    d ^ 1
}

/// The most square `px x py = p` with `px >= py`.
pub fn square_grid(p: u32) -> [u32; 2] {
    let mut py = (p as f64).sqrt().floor() as u32;
    while py > 1 && p % py != 0 {
        py -= 1;
    }
    let py = py.max(1);
    [p / py, py]
}

impl Atm2d {
    /// From `--set` parameters.
    pub fn new(p: &Params) -> Result<Self, EmuError> {
        let g = p.text("grid");
        let grid = if g == "0" {
            [0, 0]
        } else {
            let (a, b) = g.split_once('x').ok_or_else(|| {
                EmuError::Param(format!("grid: `{g}` is not PXxPY (e.g. 4x2) or 0"))
            })?;
            let n = |s: &str| {
                s.parse::<u32>()
                    .ok()
                    .filter(|v| *v >= 1 && *v <= 65536)
                    .ok_or_else(|| EmuError::Param(format!("grid: `{s}` is not 1..=65536")))
            };
            [n(a)?, n(b)?]
        };
        let lambda = p.u32_min("lambda", 1)?;
        let value_bytes = p.bytes("value_bytes")?;
        if lambda as u64 * value_bytes > 1 << 32 {
            return Err(EmuError::Param(format!(
                "2 x lambda x value_bytes = {} bytes per message is over 8 GiB",
                2 * lambda as u64 * value_bytes
            )));
        }
        Ok(Atm2d {
            lambda,
            steps: p.u32_min("steps", 1)?,
            cell_cost: p.duration("cell_cost")?,
            value_bytes,
            grid,
        })
    }
    fn dims(&self, pes: u32) -> [u32; 2] {
        if self.grid == [0, 0] {
            square_grid(pes)
        } else {
            self.grid
        }
    }
    /// Bytes per boundary message: `2 lambda value_bytes`.
    pub fn message_bytes(&self) -> u64 {
        2 * self.lambda as u64 * self.value_bytes
    }
    /// Compute per step: `lambda^2 cell_cost`.
    pub fn step_work(&self) -> SimDuration {
        SimDuration::from_ps(
            self.cell_cost
                .as_ps()
                .saturating_mul(self.lambda as u64 * self.lambda as u64),
        )
    }
}

/// One block of the domain.
#[derive(Debug)]
pub struct Obj {
    cfg: Atm2d,
    x: u32,
    y: u32,
    dims: [u32; 2],
    step: u32,
    phase: usize,
    sent: bool,
    /// Halos received per (step parity, direction).
    got: [[u32; 4]; 2],
}

impl Obj {
    fn neighbour(&self, d: u8, ctx: &Ctx<'_, Msg>) -> Option<ObjRef> {
        let (x, y) = (self.x as i64, self.y as i64);
        let (nx, ny) = match d {
            NORTH => (x, y - 1),
            SOUTH => (x, y + 1),
            EAST => (x + 1, y),
            _ => (x - 1, y),
        };
        (nx >= 0 && ny >= 0 && nx < self.dims[0] as i64 && ny < self.dims[1] as i64)
            .then(|| ctx.coll().get([nx, ny, 0]))
            .flatten()
    }
    /// Runs the phases as far as the halos received allow; computes and starts the next
    /// step when all four are done.
    fn advance(&mut self, ctx: &mut Ctx<'_, Msg>) {
        let order = if (self.x + self.y) % 2 == 0 {
            RED
        } else {
            BLACK
        };
        while self.step < self.cfg.steps {
            if self.phase == 4 {
                ctx.work(self.cfg.step_work());
                ctx.iteration(self.step);
                self.step += 1;
                self.phase = 0;
                continue;
            }
            let d = order[self.phase];
            let Some(nb) = self.neighbour(d, ctx) else {
                self.phase += 1;
                continue;
            };
            if !self.sent {
                ctx.send(
                    nb,
                    self.cfg.message_bytes(),
                    Msg::Halo {
                        step: self.step,
                        from: opposite(d),
                    },
                );
                self.sent = true;
            }
            let slot = &mut self.got[(self.step % 2) as usize][d as usize];
            if *slot == 0 {
                return;
            }
            *slot -= 1;
            self.sent = false;
            self.phase += 1;
        }
    }
}

impl Chare for Obj {
    type Msg = Msg;
    fn receive(&mut self, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        if let Msg::Halo { step, from } = msg {
            self.got[(step % 2) as usize][from as usize] += 1;
        }
        self.advance(ctx);
    }
}

impl Program for Atm2d {
    type Msg = Msg;
    type Obj = Obj;
    fn name(&self) -> String {
        format!("atm2d-l{}-s{}", self.lambda, self.steps)
    }
    fn entries(&self) -> &'static [&'static str] {
        &["start", "exchange"]
    }
    fn build(&self, b: &mut Builder<Obj, Msg>) -> Result<(), EmuError> {
        let dims = self.dims(b.pes());
        if dims[0] as u64 * dims[1] as u64 > u32::MAX as u64 {
            return Err(EmuError::Param(format!("grid {dims:?} is too large")));
        }
        let c = b.collection("block", [dims[0], dims[1], 1])?;
        b.fill(c, |i| Obj {
            cfg: self.clone(),
            x: i[0],
            y: i[1],
            dims,
            step: 0,
            phase: 0,
            sent: false,
            got: [[0; 4]; 2],
        });
        b.start_all(c, |_| Msg::Start);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_are_the_most_square_factorisation() {
        assert_eq!(square_grid(4), [2, 2]);
        assert_eq!(square_grid(8), [4, 2]);
        assert_eq!(square_grid(128), [16, 8]);
        assert_eq!(square_grid(7), [7, 1]);
        assert_eq!(square_grid(1), [1, 1]);
    }
}
