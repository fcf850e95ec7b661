//! Output files, never half-written (see the `safe-output` crate): CSV
//! and text files through a temporary name, output folders staged and swapped into place with
//! the finished-run marker written last, and every output path checked before long work.

use crate::error::{Ctx, Result};
use safe_output::OutputDir;
use std::path::Path;

pub use report::{REPORT_FILE_BYTES, commit_csv, csv_file, write_text};

/// Checks, before any long work, that every output can be written: files' folders exist,
/// folders are absent, empty, previous whatif outputs, or (with `force`) anything.
pub fn check_outputs(files: &[(&str, &Path)], dirs: &[(&str, &Path)], force: bool) -> Result<()> {
    for (flag, p) in files {
        safe_output::check_file(p).ctx(|| format!("{flag} {}", p.display()))?;
    }
    for (flag, p) in dirs {
        safe_output::check_dir(p, force).ctx(|| format!("{flag} {}", p.display()))?;
    }
    Ok(())
}

/// Starts an output folder (staged; see [`OutputDir`]).
pub fn begin_dir(dir: &Path, force: bool) -> Result<OutputDir> {
    Ok(OutputDir::begin(dir, force)?)
}

/// Puts a staged folder in place with the finished-run marker naming this command.
pub fn finish_dir(d: OutputDir) -> Result<()> {
    let marker = serde_json::json!({
        "complete": true,
        "whatif_version": env!("CARGO_PKG_VERSION"),
        "command": std::env::args().collect::<Vec<_>>(),
    });
    d.finish(&(serde_json::to_string_pretty(&marker)? + "\n"))?;
    Ok(())
}

/// Whether an error is about an output path the user chose (exit status 2).
pub fn is_bad_output(e: &safe_output::OutputError) -> bool {
    !matches!(e, safe_output::OutputError::Io { .. })
}

/// Reads a whole text file of at most `max_bytes` (registered as an input, so that no output
/// of this run can overwrite it): for study, network, cost, model and report files, which
/// are small, so a `/dev/zero` or a wrong path stops at once.
pub fn read_text(path: &std::path::Path, max_bytes: u64) -> Result<String> {
    Ok(sim_core::inputs::read_to_string(path, max_bytes)?)
}

/// The bound for small text inputs: studies, network files, cost models, report JSON.
pub const SMALL_TEXT_BYTES: u64 = 64 << 20;
