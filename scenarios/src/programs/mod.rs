//! Message-driven programs for the emulator (`whatif emulate`, `whatif run-native`).
//!
//! | program | shape | trace property (tested) |
//! |---|---|---|
//! | `stencil3d` | 7-point Jacobi, one object per block, ghost faces each iteration | per iteration, one message per (block, face neighbour) pair |
//! | `simple-imbalance` | half the PEs' objects do twice the work; barrier per iteration; `at_sync` | heavy / light work ratio 2; `lb_sync` blocks at `lb_at` |
//! | `pingpong` | two objects bounce a message | `2 x iters` messages, alternating objects |
//! | `ring` | one token around a ring | `laps x N - 1` messages, each to the next object |
//! | `kneighbor` | exchange with `k` ring neighbours per side each iteration | `2k x N` messages per iteration |
//! | `pipeline` | MK's pipelined elimination: items through a chain of stages | makespan `(D-1)(L+W) + B W` |
//! | `broadcast-tree` | binomial broadcast on a hypercube | each round `2^d - 1` messages along hypercube edges |
//! | `collect-tree` | binomial collection on a hypercube | each round `2^d - 1` messages, root receives `d` |
//! | `divide-conquer` | binary task tree, split down and combine up | `2 (2^(depth+1) - 2)` messages per problem |
//! | `chain` | Sinha's sequential chain | each token visits every object once |
//! | `cycle` | Sinha's cycle: every object's token goes around the ring | each object receives `N` tokens per cycle |
//! | `atm2d` | MK's ATM2D: 2-D blocks, four red/black synchronous boundary exchanges of 2 lambda values, lambda^2 work per step | on 2 x 2: a step is 2 (tau(m) + s + r) + lambda^2 cell_cost |
//! | `pge` | MK's pipelined Gaussian elimination of tridiagonal systems, one-way (PGE1) or two-way (PGE2), k systems per message | PGE2: 2 [(P/2-1)(tau(m2)+W) + B W] + tau(m1) |
//! | `leanmd` | cells + pairwise computes + energy reduction per step | 27 positions and 27 forces per cell per step |

pub mod atm2d;
pub mod basic;
pub mod leanmd;
pub mod params;
pub mod pge;
pub mod simple_imbalance;
pub mod stencil3d;
pub mod trees;

use basic::{Basic, Pattern};
use emulator::{EmuError, EmulateConfig, Emulation, NativeConfig, NativeReport, Program, Progress};
use network_models::NetworkModel;
pub use params::{ParamSpec, Params};
use trees::{Kind, Tree};

/// A program's name, one-line description and parameters.
#[derive(Clone, Copy, Debug)]
pub struct ProgramInfo {
    /// Name on the command line.
    pub name: &'static str,
    /// One line.
    pub about: &'static str,
    /// Parameters with defaults.
    pub params: &'static [ParamSpec],
}

/// Every program.
pub const PROGRAMS: &[ProgramInfo] = &[
    ProgramInfo {
        name: "stencil3d",
        about: stencil3d::ABOUT,
        params: stencil3d::PARAMS,
    },
    ProgramInfo {
        name: "simple-imbalance",
        about: simple_imbalance::ABOUT,
        params: simple_imbalance::PARAMS,
    },
    ProgramInfo {
        name: "pingpong",
        about: "two objects bounce a message iters times",
        params: basic::PINGPONG,
    },
    ProgramInfo {
        name: "ring",
        about: "one token goes laps times around a ring of objects",
        params: basic::RING,
    },
    ProgramInfo {
        name: "kneighbor",
        about: "each iteration every object exchanges with k ring neighbours per side",
        params: basic::KNEIGHBOR,
    },
    ProgramInfo {
        name: "pipeline",
        about: "MK's pipelined elimination: items flow through a chain of stages",
        params: basic::PIPELINE,
    },
    ProgramInfo {
        name: "broadcast-tree",
        about: "binomial-tree broadcasts on a hypercube (Rover)",
        params: trees::TREE,
    },
    ProgramInfo {
        name: "collect-tree",
        about: "binomial-tree collections on a hypercube (Rover)",
        params: trees::TREE,
    },
    ProgramInfo {
        name: "divide-conquer",
        about: "binary task tree: split down, combine up (Sinha A)",
        params: trees::DIVIDE,
    },
    ProgramInfo {
        name: "chain",
        about: "sequential chains of visits across all objects (Sinha)",
        params: basic::CHAIN,
    },
    ProgramInfo {
        name: "cycle",
        about: "every object's token travels around the ring back to it (Sinha)",
        params: basic::CYCLE,
    },
    ProgramInfo {
        name: "atm2d",
        about: atm2d::ABOUT,
        params: atm2d::PARAMS,
    },
    ProgramInfo {
        name: "pge",
        about: pge::ABOUT,
        params: pge::PARAMS,
    },
    ProgramInfo {
        name: "leanmd",
        about: leanmd::ABOUT,
        params: leanmd::PARAMS,
    },
];

/// The program called `name`, or an error listing the known ones.
pub fn find(name: &str) -> Result<&'static ProgramInfo, EmuError> {
    PROGRAMS.iter().find(|p| p.name == name).ok_or_else(|| {
        let names: Vec<&str> = PROGRAMS.iter().map(|p| p.name).collect();
        EmuError::Param(format!(
            "unknown program `{name}`; known programs: {}",
            names.join(", ")
        ))
    })
}

/// Text for `--help`: every program, its description and parameters with defaults.
pub fn help() -> String {
    PROGRAMS
        .iter()
        .map(|p| format!("  {}: {}\n{}", p.name, p.about, params::describe(p.params)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Something to do with a built program, whatever its type.
pub trait WithProgram {
    /// The result.
    type Out;
    /// Does it.
    fn run<P: Program>(self, p: &P) -> Result<Self::Out, EmuError>;
}

/// Builds program `name` from `sets` and hands it to `f`.
pub fn with_program<W: WithProgram>(
    name: &str,
    sets: &[(String, String)],
    f: W,
) -> Result<W::Out, EmuError> {
    let info = find(name)?;
    let p = Params::parse(info.name, info.params, sets)?;
    match info.name {
        "stencil3d" => f.run(&stencil3d::Stencil3d::new(&p)?),
        "simple-imbalance" => f.run(&simple_imbalance::SimpleImbalance::new(&p)?),
        "pingpong" => f.run(&Basic::new(Pattern::PingPong, &p)?),
        "ring" => f.run(&Basic::new(Pattern::Ring, &p)?),
        "kneighbor" => f.run(&Basic::new(Pattern::KNeighbor, &p)?),
        "pipeline" => f.run(&Basic::new(Pattern::Pipeline, &p)?),
        "chain" => f.run(&Basic::new(Pattern::Chain, &p)?),
        "cycle" => f.run(&Basic::new(Pattern::Cycle, &p)?),
        "broadcast-tree" => f.run(&Tree::new(Kind::Broadcast, &p)?),
        "collect-tree" => f.run(&Tree::new(Kind::Collect, &p)?),
        "divide-conquer" => f.run(&Tree::new(Kind::DivideConquer, &p)?),
        "leanmd" => f.run(&leanmd::LeanMd::new(&p)?),
        "atm2d" => f.run(&atm2d::Atm2d::new(&p)?),
        "pge" => f.run(&pge::Pge::new(&p)?),
        other => unreachable!("program table and dispatch disagree on {other}"),
    }
}

struct Emulate<'a> {
    cfg: &'a EmulateConfig,
    net: &'a mut dyn NetworkModel,
    progress: &'a mut dyn FnMut(&Progress),
}

impl WithProgram for Emulate<'_> {
    type Out = Emulation;
    fn run<P: Program>(self, p: &P) -> Result<Emulation, EmuError> {
        emulator::emulate(p, self.cfg, self.net, self.progress)
    }
}

struct Native<'a>(&'a NativeConfig);

impl WithProgram for Native<'_> {
    type Out = NativeReport;
    fn run<P: Program>(self, p: &P) -> Result<NativeReport, EmuError> {
        emulator::run_native(p, self.0)
    }
}

/// Emulates program `name` with parameters `sets`.
pub fn emulate(
    name: &str,
    sets: &[(String, String)],
    cfg: &EmulateConfig,
    net: &mut dyn NetworkModel,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Emulation, EmuError> {
    with_program(name, sets, Emulate { cfg, net, progress })
}

/// Runs program `name` natively with parameters `sets`.
pub fn run_native(
    name: &str,
    sets: &[(String, String)],
    cfg: &NativeConfig,
) -> Result<NativeReport, EmuError> {
    with_program(name, sets, Native(cfg))
}
