//! `stencil3d`: 7-point Jacobi on an X x Y x Z grid split into blocks, one object per block
//! (Lee 2009 §6.5). Each iteration every block sends its (up to six) faces to its neighbours
//! (non-periodic), and computes once all its neighbours' faces of that iteration have arrived:
//! `new = (c + 6 neighbours) / 7` on each point. There are no barriers; after the last
//! iteration a max-reduction of the last update's change goes to block 0.
//!
//! Blocks: one `start` per object, then one `recvGhost` block per received face; the block
//! that receives the last face of iteration k computes it and carries iteration marker k.
//! Face messages carry `8 x face points` bytes. Model timing: `cell_cost` per point per
//! iteration.

use super::params::{ParamSpec, Params};
use emulator::{
    Builder, Callback, Chare, Ctx, EmuError, Message, ObjRef, Program, ReduceOp, Target,
};
use sim_core::SimDuration;

/// Parameters.
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        key: "grid",
        default: "64x64x48",
        help: "grid points X x Y x Z",
    },
    ParamSpec {
        key: "block",
        default: "16x16x16",
        help: "points per object; must divide the grid (Lee Table 6.1: 16x16x16, 16x8x16, 16x8x8, 8x8x8, 8x8x4 for VF 1-16 on 48 PEs)",
    },
    ParamSpec {
        key: "iters",
        default: "25",
        help: "iterations",
    },
    ParamSpec {
        key: "cell_cost",
        default: "17ns",
        help: "modelled cost of one point update (model timing)",
    },
    ParamSpec {
        key: "prioritize",
        default: "0",
        help: "1: ghost messages carry their iteration as priority (earlier first under --priority)",
    },
];

/// One line for `--help`.
pub const ABOUT: &str =
    "7-point Jacobi, one object per block, ghost faces each iteration (Lee 6.5)";

/// The program.
#[derive(Clone, Debug)]
pub struct Stencil3d {
    /// Grid points per dimension.
    pub grid: [u32; 3],
    /// Points per object per dimension.
    pub block: [u32; 3],
    /// Iterations.
    pub iters: u32,
    /// Modelled cost per point update.
    pub cell_cost: SimDuration,
    /// Ghost messages carry their iteration as priority.
    pub prioritize: bool,
}

impl Stencil3d {
    /// From `--set` parameters.
    pub fn new(p: &Params) -> Result<Self, EmuError> {
        let s = Stencil3d {
            grid: p.dims3("grid")?,
            block: p.dims3("block")?,
            iters: p.u32_min("iters", 1)?,
            cell_cost: p.duration("cell_cost")?,
            prioritize: p.u32_min("prioritize", 0)? > 0,
        };
        for d in 0..3 {
            if s.grid[d] % s.block[d] != 0 {
                return Err(EmuError::Param(format!(
                    "stencil3d block={} does not divide grid={} in dimension {d}",
                    fmt3(s.block),
                    fmt3(s.grid)
                )));
            }
        }
        Ok(s)
    }
    /// Objects per dimension.
    pub fn objects(&self) -> [u32; 3] {
        [0, 1, 2].map(|d| self.grid[d] / self.block[d])
    }
}

fn fmt3(d: [u32; 3]) -> String {
    format!("{}x{}x{}", d[0], d[1], d[2])
}

/// Messages.
#[derive(Clone, Debug)]
pub enum Msg {
    /// Begin.
    Start,
    /// A neighbour's face for iteration `iter`, arriving from direction `dir` (0..6 as -x,+x,-y,+y,-z,+z; 255 for the self-message of a block without neighbours).
    Ghost {
        /// Iteration.
        iter: u32,
        /// Side of the receiver it belongs to.
        dir: u8,
        /// Face values (empty in model timing).
        data: Vec<f64>,
    },
    /// Final reduction result (max change of the last iteration).
    Done(f64),
}

impl Message for Msg {
    fn entry(&self) -> usize {
        match self {
            Msg::Start => 0,
            Msg::Ghost { .. } => 1,
            Msg::Done(_) => 2,
        }
    }
}

/// One block of the grid. Laid out in declaration order: what a face's receive reads (the
/// counts) first, then what computing reads, so that at a million objects a receive touches
/// one cache line of its object and a computation two or three.
#[derive(Debug)]
#[repr(C)]
pub struct Block {
    got: [u32; 2],
    need: u32,
    iter: u32,
    iters: u32,
    prioritize: bool,
    cell_cost: SimDuration,
    nb: [Option<ObjRef>; 6],
    pending: [Vec<(u8, Vec<f64>)>; 2],
    ext: [usize; 3],
    origin: [u32; 3],
    cur: Vec<f64>,
    next: Vec<f64>,
    /// Reduction result (block 0 only).
    pub result: Option<f64>,
}

/// Calls `f` with the padded index of every point of the plane `layer` of `axis` of a block
/// of interior extent `ext` (interior extent in the other two axes).
fn plane(ext: [usize; 3], axis: usize, layer: usize, mut f: impl FnMut(usize)) {
    let p = [ext[0] + 2, ext[1] + 2, ext[2] + 2];
    let (a1, a2) = match axis {
        0 => (1, 2),
        1 => (0, 2),
        _ => (0, 1),
    };
    for u in 1..=ext[a1] {
        for v in 1..=ext[a2] {
            let mut c = [0usize; 3];
            c[axis] = layer;
            c[a1] = u;
            c[a2] = v;
            f((c[0] * p[1] + c[1]) * p[2] + c[2]);
        }
    }
}

impl Block {
    fn pad(&self) -> [usize; 3] {
        [self.ext[0] + 2, self.ext[1] + 2, self.ext[2] + 2]
    }
    fn face_points(&self, dir: usize) -> usize {
        let axis = dir / 2;
        self.ext
            .iter()
            .enumerate()
            .filter(|(a, _)| *a != axis)
            .map(|(_, e)| e)
            .product()
    }
    fn send_ghosts(&mut self, ctx: &mut Ctx<'_, Msg>) {
        let iter = self.iter;
        if self.need == 0 {
            ctx.send(
                ctx.me(),
                0,
                Msg::Ghost {
                    iter,
                    dir: 255,
                    data: Vec::new(),
                },
            );
            return;
        }
        for dir in 0..6 {
            let Some(to) = self.nb[dir] else { continue };
            let points = self.face_points(dir);
            let mut data = Vec::new();
            if ctx.real_work() {
                data.reserve_exact(points);
                let axis = dir / 2;
                let layer = if dir % 2 == 0 { 1 } else { self.ext[axis] };
                let cur = &self.cur;
                plane(self.ext, axis, layer, |i| data.push(cur[i]));
            }
            // The receiver sees it on its opposite side.
            let side = (dir ^ 1) as u8;
            let prio = if self.prioritize { iter as i32 } else { 0 };
            ctx.send_prio(
                to,
                8 * points as u64,
                prio,
                Msg::Ghost {
                    iter,
                    dir: side,
                    data,
                },
            );
        }
    }
    fn compute(&mut self, ctx: &mut Ctx<'_, Msg>) {
        let parity = (self.iter % 2) as usize;
        let faces = std::mem::take(&mut self.pending[parity]);
        self.got[parity] = 0;
        let mut change = 0.0f64;
        if ctx.real_work() {
            for (side, data) in &faces {
                if *side == 255 {
                    continue;
                }
                let axis = (*side / 2) as usize;
                let layer = if side % 2 == 0 { 0 } else { self.ext[axis] + 1 };
                let mut k = 0;
                let cur = &mut self.cur;
                plane(self.ext, axis, layer, |i| {
                    cur[i] = data[k];
                    k += 1;
                });
            }
            let p = self.pad();
            let (sy, sz) = (p[2] * p[1], p[2]);
            for x in 1..=self.ext[0] {
                for y in 1..=self.ext[1] {
                    let row = (x * p[1] + y) * p[2];
                    for z in 1..=self.ext[2] {
                        let i = row + z;
                        let c = &self.cur;
                        let v = (c[i]
                            + c[i - 1]
                            + c[i + 1]
                            + c[i - sz]
                            + c[i + sz]
                            + c[i - sy]
                            + c[i + sy])
                            / 7.0;
                        change = change.max((v - c[i]).abs());
                        self.next[i] = v;
                    }
                }
            }
            std::mem::swap(&mut self.cur, &mut self.next);
        }
        let points = (self.ext[0] * self.ext[1] * self.ext[2]) as u64;
        ctx.cost(SimDuration::from_ps(
            self.cell_cost.as_ps().saturating_mul(points),
        ));
        ctx.iteration(self.iter);
        self.iter += 1;
        if self.iter < self.iters {
            self.send_ghosts(ctx);
        } else {
            ctx.contribute(
                change,
                ReduceOp::Max,
                8,
                Callback {
                    target: Target::Object(ctx.coll().nth(0)),
                    bytes: 8,
                    make: Msg::Done,
                },
            );
        }
    }
}

impl Chare for Block {
    type Msg = Msg;
    fn receive(&mut self, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        match msg {
            Msg::Start => {
                let idx = ctx.index();
                let c = ctx.coll();
                for dir in 0..6 {
                    let mut n = [idx[0] as i64, idx[1] as i64, idx[2] as i64];
                    n[dir / 2] += if dir % 2 == 0 { -1 } else { 1 };
                    self.nb[dir] = c.get(n);
                }
                self.need = self.nb.iter().flatten().count() as u32;
                if ctx.real_work() {
                    let p = self.pad();
                    let len = p[0] * p[1] * p[2];
                    self.cur = vec![0.0; len];
                    self.next = vec![0.0; len];
                    for x in 1..=self.ext[0] {
                        for y in 1..=self.ext[1] {
                            for z in 1..=self.ext[2] {
                                let g = [
                                    self.origin[0] as usize + x,
                                    self.origin[1] as usize + y,
                                    self.origin[2] as usize + z,
                                ];
                                self.cur[(x * p[1] + y) * p[2] + z] =
                                    ((g[0] * 7 + g[1] * 13 + g[2] * 17) % 10) as f64;
                            }
                        }
                    }
                }
                self.send_ghosts(ctx);
            }
            Msg::Ghost { iter, dir, data } => {
                let parity = (iter % 2) as usize;
                // Only faces with values are kept (computing for real): model timing sends
                // empty faces, and keeping them cost an allocation per object and iteration
                // and ~500 bytes per object at a million objects.
                if !data.is_empty() {
                    self.pending[parity].push((dir, data));
                }
                self.got[parity] += 1;
                let need = self.need.max(1);
                while self.iter < self.iters && self.got[(self.iter % 2) as usize] == need {
                    self.compute(ctx);
                }
            }
            Msg::Done(v) => self.result = Some(v),
        }
    }
}

impl Program for Stencil3d {
    type Msg = Msg;
    type Obj = Block;
    fn name(&self) -> String {
        format!("stencil3d-{}-b{}", fmt3(self.grid), fmt3(self.block))
    }
    fn entries(&self) -> &'static [&'static str] {
        &["start", "recvGhost", "done"]
    }
    fn build(&self, b: &mut Builder<Block, Msg>) -> Result<(), EmuError> {
        let c = b.collection("block", self.objects())?;
        if b.real_work() {
            // Each block's two padded grids of f64, and its faces in flight (six, for two
            // iterations at most), for the whole grid.
            let [x, y, z] = self.block.map(|e| e as u64);
            let pad = (x + 2) * (y + 2) * (z + 2);
            let face = (x * y).max(y * z).max(x * z);
            let per_block = pad
                .saturating_mul(16)
                .saturating_add(face.saturating_mul(96));
            let n = c.len() as u64;
            b.reserve(
                &format!(
                    "the data of {n} blocks of {x}x{y}x{z} cells (measured timing computes on them)"
                ),
                per_block.saturating_mul(n),
            )?;
        }
        let (blk, iters, cell_cost, prioritize) =
            (self.block, self.iters, self.cell_cost, self.prioritize);
        // At least one block per element and iteration.
        b.expect_blocks((c.len() as u64).saturating_mul(iters as u64));
        b.fill(c, |idx| Block {
            ext: blk.map(|e| e as usize),
            origin: [0, 1, 2].map(|d| idx[d] * blk[d]),
            iters,
            cell_cost,
            prioritize,
            nb: [None; 6],
            need: 0,
            iter: 0,
            got: [0; 2],
            pending: [Vec::new(), Vec::new()],
            cur: Vec::new(),
            next: Vec::new(),
            result: None,
        });
        b.start_all(c, |_| Msg::Start);
        Ok(())
    }
}
