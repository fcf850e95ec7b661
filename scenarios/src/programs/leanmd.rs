//! `leanmd`: a LeanMD-style molecular-dynamics skeleton. A periodic 3-D grid of *cells*
//! (each holding `atoms` atoms) and, per cell, 14 *compute* objects: one for the cell itself
//! and one for each of its 13 "upper" neighbours (half shell), so every pair of neighbouring
//! cells has exactly one compute. Each step:
//!
//! 1. every cell sends its positions (`24 x atoms` bytes) to its 27 computes (14 own, 13 where
//!    it is the partner);
//! 2. a compute that has both cells' positions (one for the self compute) does the pairwise
//!    work (`pair_cost x atoms^2`, half that for self) and sends forces back to each cell;
//! 3. a cell with all 27 forces integrates (`integrate_cost x atoms`), marks the step and
//!    contributes its energy to a sum reduction whose callback broadcasts the next step to
//!    every cell.
//!
//! Cells need at least 3 per dimension (so the 27 neighbours are distinct).

use super::params::{ParamSpec, Params};
use emulator::{Builder, Callback, Chare, Coll, Ctx, EmuError, Message, Program, ReduceOp, Target};
use sim_core::SimDuration;

/// Parameters.
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        key: "cells",
        default: "3x3x3",
        help: "cells per dimension (each >= 3)",
    },
    ParamSpec {
        key: "atoms",
        default: "100",
        help: "atoms per cell",
    },
    ParamSpec {
        key: "steps",
        default: "4",
        help: "time steps",
    },
    ParamSpec {
        key: "pair_cost",
        default: "2ns",
        help: "work per atom pair in a compute",
    },
    ParamSpec {
        key: "integrate_cost",
        default: "20ns",
        help: "work per atom in a cell's integration",
    },
];

/// One line for `--help`.
pub const ABOUT: &str =
    "MD skeleton: cells + pairwise computes (half shell) + per-step energy reduction";

/// Offsets of a cell's computes: itself, then the 13 neighbours after it in lexicographic order.
pub fn half_shell() -> [[i64; 3]; 14] {
    let mut out = [[0i64; 3]; 14];
    let mut k = 1;
    for dx in -1..=1i64 {
        for dy in -1..=1i64 {
            for dz in -1..=1i64 {
                if (dx, dy, dz) > (0, 0, 0) {
                    out[k] = [dx, dy, dz];
                    k += 1;
                }
            }
        }
    }
    out
}

/// The program.
#[derive(Clone, Debug)]
pub struct LeanMd {
    /// Cells per dimension.
    pub cells: [u32; 3],
    /// Atoms per cell.
    pub atoms: u64,
    /// Steps.
    pub steps: u32,
    /// Work per pair.
    pub pair_cost: SimDuration,
    /// Work per atom integrated.
    pub integrate_cost: SimDuration,
}

impl LeanMd {
    /// From `--set` parameters.
    pub fn new(p: &Params) -> Result<Self, EmuError> {
        let cells = p.dims3("cells")?;
        if cells.iter().any(|c| *c < 3) {
            return Err(EmuError::Param(format!(
                "leanmd cells={}x{}x{}: every dimension needs at least 3 cells",
                cells[0], cells[1], cells[2]
            )));
        }
        Ok(LeanMd {
            cells,
            atoms: p.u32_min("atoms", 1)? as u64,
            steps: p.u32_min("steps", 1)?,
            pair_cost: p.duration("pair_cost")?,
            integrate_cost: p.duration("integrate_cost")?,
        })
    }
}

/// Messages.
#[derive(Clone, Debug)]
pub enum Msg {
    /// Begin (cells).
    Start,
    /// Positions of a cell for a step (computes).
    Positions(u32),
    /// Forces for a step (cells).
    Forces(u32),
    /// The step's energy reduction completed (cells).
    NextStep(f64),
}

impl Message for Msg {
    fn entry(&self) -> usize {
        match self {
            Msg::Start => 0,
            Msg::Positions(_) => 1,
            Msg::Forces(_) => 2,
            Msg::NextStep(_) => 3,
        }
    }
}

/// Cells and computes.
#[derive(Debug)]
pub enum Obj {
    /// A cell.
    Cell {
        /// Step in progress.
        step: u32,
        /// Forces received this step.
        got: u32,
    },
    /// A compute for the pair (`a`, `b`) of cell numbers (`a == b` for a self compute).
    Compute {
        /// First cell.
        a: u32,
        /// Second cell.
        b: u32,
        /// Positions received per step parity.
        got: [u32; 2],
    },
}

fn wrap(c: Coll, idx: [u32; 3], off: [i64; 3]) -> u32 {
    let d = c.dims();
    let w = [0, 1, 2].map(|k| (idx[k] as i64 + off[k]).rem_euclid(d[k] as i64));
    c.position(c.get(w).expect("wrapped")).expect("own")
}

impl LeanMd {
    fn send_positions(
        &self,
        cells: Coll,
        computes: Coll,
        me: u32,
        step: u32,
        ctx: &mut Ctx<'_, Msg>,
    ) {
        let bytes = 24 * self.atoms;
        let idx = cells.index_of(me);
        let hs = half_shell();
        for j in 0..14u32 {
            ctx.send(computes.nth(me * 14 + j), bytes, Msg::Positions(step));
        }
        for (j, off) in hs.iter().enumerate().skip(1) {
            let other = wrap(cells, idx, [-off[0], -off[1], -off[2]]);
            ctx.send(
                computes.nth(other * 14 + j as u32),
                bytes,
                Msg::Positions(step),
            );
        }
    }
}

/// An object of the program with the shared parameters and collection handles.
#[derive(Debug)]
pub struct Md {
    obj: Obj,
    md: std::sync::Arc<LeanMd>,
    cells: Coll,
    computes: Coll,
}

impl Chare for Md {
    type Msg = Msg;
    fn receive(&mut self, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        let (cells, computes) = (self.cells, self.computes);
        let md = &*self.md;
        match (&mut self.obj, msg) {
            (Obj::Cell { step, .. }, Msg::Start) => {
                let me = cells.position(ctx.me()).expect("cell");
                md.send_positions(cells, computes, me, *step, ctx);
            }
            (Obj::Cell { step, got }, Msg::Forces(_)) => {
                *got += 1;
                if *got == 27 {
                    *got = 0;
                    ctx.work(SimDuration::from_ps(
                        md.integrate_cost.as_ps().saturating_mul(md.atoms),
                    ));
                    ctx.iteration(*step);
                    ctx.contribute(
                        1.0,
                        ReduceOp::Sum,
                        8,
                        Callback {
                            target: Target::Broadcast(cells),
                            bytes: 8,
                            make: Msg::NextStep,
                        },
                    );
                }
            }
            (Obj::Cell { step, .. }, Msg::NextStep(_)) => {
                *step += 1;
                if *step < md.steps {
                    let me = cells.position(ctx.me()).expect("cell");
                    md.send_positions(cells, computes, me, *step, ctx);
                }
            }
            (Obj::Compute { a, b, got }, Msg::Positions(s)) => {
                let p = (s % 2) as usize;
                got[p] += 1;
                let need = if a == b { 1 } else { 2 };
                if got[p] == need {
                    got[p] = 0;
                    let pairs = if a == b {
                        md.atoms * (md.atoms - 1) / 2
                    } else {
                        md.atoms * md.atoms
                    };
                    ctx.work(SimDuration::from_ps(
                        md.pair_cost.as_ps().saturating_mul(pairs),
                    ));
                    let bytes = 24 * md.atoms;
                    ctx.send(cells.nth(*a), bytes, Msg::Forces(s));
                    if a != b {
                        ctx.send(cells.nth(*b), bytes, Msg::Forces(s));
                    }
                }
            }
            (o, m) => panic!("leanmd: {o:?} got unexpected {m:?}"),
        }
    }
}

impl Program for LeanMd {
    type Msg = Msg;
    type Obj = Md;
    fn name(&self) -> String {
        format!(
            "leanmd-{}x{}x{}",
            self.cells[0], self.cells[1], self.cells[2]
        )
    }
    fn entries(&self) -> &'static [&'static str] {
        &["start", "calculateForces", "receiveForces", "nextStep"]
    }
    fn build(&self, b: &mut Builder<Md, Msg>) -> Result<(), EmuError> {
        let cells = b.collection("cell", self.cells)?;
        let pairs = cells.len().checked_mul(14).ok_or_else(|| {
            EmuError::Param(format!(
                "{} cells have {} compute objects (14 each), more than 2^32",
                cells.len(),
                cells.len() as u64 * 14
            ))
        })?;
        let computes = b.collection("compute", [pairs, 1, 1])?;
        let md = std::sync::Arc::new(self.clone());
        b.fill(cells, |_| Md {
            obj: Obj::Cell { step: 0, got: 0 },
            md: md.clone(),
            cells,
            computes,
        });
        let hs = half_shell();
        let mut k = 0u32;
        b.fill(computes, |_| {
            let a = k / 14;
            let off = hs[(k % 14) as usize];
            k += 1;
            Md {
                obj: Obj::Compute {
                    a,
                    b: wrap(cells, cells.index_of(a), off),
                    got: [0; 2],
                },
                md: md.clone(),
                cells,
                computes,
            }
        });
        b.start_all(cells, |_| Msg::Start);
        Ok(())
    }
}
