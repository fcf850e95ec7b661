//! Synthetic traces (`whatif gen`): ping-pong, ring, 2-D and 3-D halos and MK's pipeline,
//! with the memory they need checked before they are built, and the generator recorded in
//! the trace as a canonical command (every parameter that shapes it, nothing else, so equal
//! inputs give byte-identical traces).

use crate::error::{Result, WorkflowError, bail};
use crate::{limits, memory, progress};
use network_models::NetSpec;
use scenarios::SynthParams;
use sim_core::{Ratio, SeedTree, SimDuration};
use trace::Repeated;

/// A workload shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GenKind {
    /// Two ranks bounce a message K round trips.
    Pingpong,
    /// N ranks, each sends to its right neighbour every iteration.
    Ring,
    /// 2-D halo exchange on an X x Y grid of ranks.
    Halo2d,
    /// 3-D halo exchange on an X x Y x Z grid of ranks.
    Halo3d,
    /// MK's pipelined elimination: D stages in a chain, K items.
    Pipeline,
}

impl GenKind {
    /// Every shape, by its name.
    pub const ALL: [(&'static str, GenKind); 5] = [
        ("pingpong", GenKind::Pingpong),
        ("ring", GenKind::Ring),
        ("halo2d", GenKind::Halo2d),
        ("halo3d", GenKind::Halo3d),
        ("pipeline", GenKind::Pipeline),
    ];
}

impl std::str::FromStr for GenKind {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        GenKind::ALL
            .iter()
            .find(|(n, _)| *n == s)
            .map(|(_, k)| *k)
            .ok_or_else(|| {
                format!(
                    "unknown workload `{s}`; the workloads are {}",
                    GenKind::ALL.map(|(n, _)| n).join(", ")
                )
            })
    }
}

/// What to generate; [`Default`] is `whatif gen`'s defaults.
#[derive(Clone, Debug)]
pub struct GenSpec {
    /// The shape.
    pub kind: GenKind,
    /// Ranks (ring).
    pub ranks: u32,
    /// Grid of ranks (halo2d: `XxY`, halo3d: `XxYxZ`).
    pub dims: String,
    /// Wrap the halo grid around.
    pub periodic: bool,
    /// Stages (pipeline).
    pub stages: u32,
    /// Iterations (round trips for pingpong, items for pipeline).
    pub iters: u32,
    /// Compute time per block.
    pub compute: SimDuration,
    /// Bytes per message.
    pub bytes: u64,
    /// Relative compute jitter (uniform, seeded).
    pub jitter: Ratio,
    /// Root random seed.
    pub seed: u64,
    /// Network model recorded as the trace's default.
    pub net: Option<NetSpec>,
    /// Memory limit [default: 3/4 of this computer's memory].
    pub max_memory: Option<u64>,
    /// Every iteration is stored (the text form), not one iteration repeated.
    pub every_iteration: bool,
    /// No progress on stderr.
    pub quiet: bool,
}

impl Default for GenSpec {
    fn default() -> Self {
        GenSpec {
            kind: GenKind::Halo3d,
            ranks: 8,
            dims: "4x4x4".into(),
            periodic: false,
            stages: 8,
            iters: 10,
            compute: SimDuration::from_us(100),
            bytes: 65536,
            jitter: Ratio::new(0, 1).expect("0/1"),
            seed: SeedTree::DEFAULT_ROOT,
            net: None,
            max_memory: None,
            every_iteration: false,
            quiet: true,
        }
    }
}

/// `XxYxZ` as sizes.
pub fn parse_dims(s: &str) -> Result<Vec<u32>> {
    s.split('x')
        .map(|d| {
            d.trim().parse::<u32>().map_err(|e| WorkflowError::Context {
                what: format!("--dims `{s}`: expected sizes separated by `x`, e.g. 10x10x10"),
                source: Box::new(e),
            })
        })
        .collect()
}

/// The generator recorded in the trace.
pub fn canonical_command(a: &GenSpec) -> String {
    let shape = match a.kind {
        GenKind::Pingpong => "pingpong".to_string(),
        GenKind::Ring => format!("ring --ranks {}", a.ranks),
        GenKind::Halo2d | GenKind::Halo3d => {
            let k = if matches!(a.kind, GenKind::Halo2d) {
                "halo2d"
            } else {
                "halo3d"
            };
            format!(
                "{k} --dims {}{}",
                a.dims,
                if a.periodic { " --periodic" } else { "" }
            )
        }
        GenKind::Pipeline => format!("pipeline --stages {}", a.stages),
    };
    format!(
        "whatif gen {shape} --iters {} --compute {} --bytes {} --jitter {} --seed {}",
        a.iters,
        a.compute.to_string().replace(' ', ""),
        a.bytes,
        a.jitter,
        a.seed
    )
}

/// Generates the trace `a` describes, once its memory estimate is within the limit.
pub fn generate(a: &GenSpec) -> Result<Repeated> {
    let p = SynthParams {
        iters: a.iters,
        compute: a.compute,
        bytes: a.bytes,
        jitter: a.jitter,
        seed: a.seed,
        generator: canonical_command(a),
    };
    // Blocks the trace stores (one iteration of a repeated trace; every block in the text
    // form): about 110 bytes each on the heap, 136 while the generator builds it, plus its
    // indexes (up to 14 MiB): measured on halos of 2,000 to 100,000 ranks.
    let dims: u64 = match a.kind {
        GenKind::Halo2d | GenKind::Halo3d => parse_dims(&a.dims)?
            .iter()
            .fold(1u64, |x, &d| x.saturating_mul(d as u64)),
        _ => 0,
    };
    let stored: u64 = match a.kind {
        GenKind::Pingpong => 2 * a.iters as u64,
        GenKind::Ring => 2 * a.ranks as u64,
        GenKind::Halo2d => 5 * dims,
        GenKind::Halo3d => 7 * dims,
        GenKind::Pipeline => (a.stages as u64).saturating_mul(a.iters as u64),
    };
    let stored = if a.every_iteration
        && matches!(a.kind, GenKind::Ring | GenKind::Halo2d | GenKind::Halo3d)
    {
        stored.saturating_mul(a.iters as u64)
    } else {
        stored
    };
    memory::settle(
        &memory::gen_estimate(stored),
        Some(a.max_memory.unwrap_or_else(limits::default_memory_limit)),
        a.quiet,
    )?;
    let mut progress = progress::Reporter::new(a.quiet);
    let gen_err = |e: scenarios::GenError| WorkflowError::Cause(Box::new(e));
    let t = match a.kind {
        GenKind::Pingpong => Repeated::flat(scenarios::pingpong(&p).map_err(gen_err)?),
        GenKind::Ring => {
            scenarios::ring_repeated_with(a.ranks, &p, &mut progress).map_err(gen_err)?
        }
        GenKind::Halo2d | GenKind::Halo3d => {
            let want = if matches!(a.kind, GenKind::Halo2d) {
                2
            } else {
                3
            };
            let dims = parse_dims(&a.dims)?;
            if dims.len() != want {
                bail!(
                    "--dims `{}` has {} dimensions; {} needs {want} (e.g. {})",
                    a.dims,
                    dims.len(),
                    if want == 2 { "halo2d" } else { "halo3d" },
                    if want == 2 { "32x32" } else { "10x10x10" }
                );
            }
            scenarios::halo_repeated_with(&dims, a.periodic, &p, &mut progress).map_err(gen_err)?
        }
        GenKind::Pipeline => Repeated::flat(scenarios::pipeline(a.stages, &p).map_err(gen_err)?),
    };
    progress.done();
    memory::checkpoint(&format!("generating ({} B on the heap)", t.heap_bytes()));
    Ok(t.with_meta(|m| m.net = a.net.as_ref().map(|n| n.to_string())))
}
