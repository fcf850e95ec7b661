//! Resource checks a command makes before large work: the default memory limit and
//! the sanity of a machine size for a trace.

use crate::error::{Result, WorkflowError};
use replay::footprint::human_bytes;
use std::path::{Path, PathBuf};

/// Machines above this many PEs must not have more PEs than objects (without `--force`):
/// the extra PEs stay idle, cost memory and output, and change no prediction.
pub const IDLE_PES_CHECK_ABOVE: u64 = 1 << 20;

/// Three quarters of the memory this process may use: the least of this computer's
/// (`MemTotal` in `/proc/meminfo`), its control group's (`/sys/fs/cgroup/memory.max`) and its
/// address-space limit (`ulimit -v`, from `/proc/self/limits`); 8 GiB where none can be read.
pub fn default_memory_limit() -> u64 {
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok());
    let address_space = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("Max address space"))
                .and_then(|l| l.split_whitespace().nth(3))
                .and_then(|soft| soft.parse::<u64>().ok())
        });
    [
        machine_memory_limit(),
        cgroup.map(|b| b / 4 * 3),
        address_space.map(|b| b / 4 * 3),
    ]
    .into_iter()
    .flatten()
    .min()
    .unwrap_or(8 << 30)
}

/// Three quarters of this computer's memory (`MemTotal`), if it can be read.
fn machine_memory_limit() -> Option<u64> {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().strip_suffix("kB"))
                .and_then(|v| v.trim().parse::<u64>().ok())
        })
        .map(|kib| kib.saturating_mul(1024));
    total.filter(|&b| b > 0).map(|b| b / 4 * 3)
}

/// Refuses a machine of more than [`IDLE_PES_CHECK_ABOVE`] PEs with more PEs than the trace
/// has objects, unless forced.
pub fn check_pes(pes: u64, objects: u64, force: bool) -> Result<()> {
    if force || pes <= IDLE_PES_CHECK_ABOVE || pes <= objects {
        return Ok(());
    }
    Err(WorkflowError::Invalid(format!(
        "{pes} PEs for a trace of {objects} objects: at most {objects} PEs can run anything, \
         the other {} would stay idle and still cost about {} of memory; use --pes {objects} \
         (or --pes objects), or --force to simulate them anyway",
        pes - objects,
        human_bytes((pes - objects).saturating_mul(replay::footprint::PER_PE_BYTES))
    )))
}

/// A warning when some PEs get no object under the mapping (they stay idle), or `None`.
pub fn idle_warning(pes: u32, busy_pes: usize, objects: usize, map: &str) -> Option<String> {
    let idle = (pes as usize).saturating_sub(busy_pes);
    if idle == 0 {
        return None;
    }
    let hint = if objects < pes as usize {
        format!(
            "; the trace has {objects} objects, and a replay moves objects but never splits them, \
             so no PE count beyond {objects} can be faster: to predict a larger run, emulate the \
             program at that scale with a larger problem or finer decomposition (`whatif emulate \
             PROGRAM --pes P`, or `whatif predict` to fit small runs and check at the target)"
        )
    } else if map == "recorded" {
        "; the recorded mapping keeps objects on the recorded PEs (spread out): try --map block or --map round-robin to use them all".to_string()
    } else {
        String::new()
    };
    Some(format!(
        "warning: {idle} of {pes} PEs get no object and stay idle{hint}"
    ))
}

/// A warning when `--priority` is asked of a trace none of whose blocks has a priority (the
/// replay is then FIFO), or `None`.
pub fn priority_warning(trace: &trace::Trace, priority: bool) -> Option<String> {
    if !priority || trace.block_ids().any(|id| trace.block(id).priority != 0) {
        return None;
    }
    Some(
        "warning: --priority has no effect: no block of this trace has a priority (Projections          logs, for one, do not record them; the order each object's blocks ran in, which the          replay keeps, reflects them)"
            .to_string(),
    )
}

/// Refuses outputs that would overwrite one of the command's inputs: an output file equal to
/// an input, or an output folder that contains one. `outputs` pairs each path with the flag
/// that named it, for the message.
pub fn refuse_overwrite(inputs: &[PathBuf], outputs: &[(&str, &Path)]) -> Result<()> {
    let ins: Vec<PathBuf> = inputs
        .iter()
        .map(|p| sim_core::inputs::resolve(p))
        .collect();
    for (flag, out) in outputs {
        let o = sim_core::inputs::resolve(out);
        for (i, orig) in ins.iter().zip(inputs) {
            if *i == o || (o.is_dir() && i.starts_with(&o)) {
                return Err(WorkflowError::Invalid(format!(
                    "{flag} {}: that would overwrite the input {}; choose another output path",
                    out.display(),
                    orig.display()
                )));
            }
        }
    }
    Ok(())
}

/// Bytes of emulator state per virtual PE that holds no object: none (PEs without objects
/// have no state; `emulate --pes 100000000` of a 48-object stencil3d peaks at 14.3 MB, as for
/// 4 PEs). Kept as a guard for network models with per-PE tables.
pub const EMULATED_PE_BYTES: u64 = 8;

/// Refuses an emulation of `pes` virtual PEs whose state alone is above the memory limit
/// (`max_memory`, default 3/4 of this computer's memory); `flag` says how to raise it.
pub fn check_emulated_pes(pes: u32, max_memory: Option<u64>, flag: &str) -> Result<()> {
    let limit = max_memory.unwrap_or_else(default_memory_limit);
    let need = (pes as u64).saturating_mul(EMULATED_PE_BYTES);
    if need > limit {
        return Err(WorkflowError::Invalid(format!(
            "--pes {pes}: {pes} virtual PEs need about {} before the program even starts, above \
             the memory limit of {} (raise it with {flag})",
            human_bytes(need),
            human_bytes(limit)
        )));
    }
    Ok(())
}
