//! # report: whatif's HTML report
//!
//! Contract of this crate:
//!
//! * [`html::write`] turns a folder that `whatif sweep`, `whatif replay --out` or `whatif demo`
//!   wrote into one self-contained HTML page (inline SVG, no scripts, no network access): sweep
//!   curves with a knee table, scaling and constant-time tables, a replay's overview and zoomed
//!   timelines, time profile, usage per PE, Rover's metrics, clusters, the communication
//!   matrix, message-size and grain-size histograms, the critical path and the diagnoses, and
//!   a machine plot laid out on the topology. The page depends only on the folder's files: the
//!   same folder gives the same bytes.
//! * It reads only what whatif wrote (each file bounded by [`REPORT_FILE_BYTES`]) and writes
//!   one file, atomically (`safe_output`), never over one of the files it read.
//! * [`svg`] holds the dependency-free charts (line, bar, stacked area, timeline, heat grid),
//!   deterministic to the byte.
//! * Errors are a [`ReportError`]: the file and what is wrong with it, or the failed step with
//!   the underlying error (I/O, CSV, JSON, output) kept as its source.
//!
//! ```
//! // Write a one-line sweep folder by hand and make its report.
//! let dir = std::env::temp_dir().join(format!("report-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! std::fs::write(
//!     dir.join("manifest.json"),
//!     r#"{"study": "doc", "points_total": 1, "points": [0]}"#,
//! )
//! .unwrap();
//! std::fs::write(
//!     dir.join("results.json"),
//!     "[\n{\"point\":0,\"fingerprint\":\"f\",\"net.lat\":\"1us\",\"makespan_s\":0.001}\n]\n",
//! )
//! .unwrap();
//! std::fs::write(dir.join("results.csv"), "point,fingerprint,net.lat,makespan_s\n0,f,1us,0.001\n")
//!     .unwrap();
//! let page = report::html::write(&dir, None).unwrap();
//! let html = std::fs::read_to_string(&page).unwrap();
//! assert!(html.starts_with("<!DOCTYPE html>"));
//! // A folder that is neither a sweep's nor a replay's is refused, naming what is missing.
//! let empty = dir.join("empty");
//! std::fs::create_dir_all(&empty).unwrap();
//! assert!(report::html::write(&empty, None).is_err());
//! std::fs::remove_dir_all(&dir).unwrap();
//! ```

mod error;
pub mod html;
pub mod outputs;
pub mod scaling;
pub mod summary;
pub mod svg;
pub mod views;

pub use error::{ReportError, Result};

/// The bound for each file a report reads back (results, summaries, analyses, timelines).
pub const REPORT_FILE_BYTES: u64 = 1 << 30;

/// Picoseconds as seconds, exactly (12 decimals): the time unit of every CSV file whatif
/// writes.
pub fn secs(ps: u64) -> String {
    sim_core::SimDuration::from_ps(ps).secs_exact()
}

/// Seconds with up to 12 decimals (as [`secs`] writes them) back to picoseconds, exactly.
pub fn parse_secs(s: &str) -> Option<u64> {
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    if frac.len() > 12 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let w: u64 = whole.parse().ok()?;
    let f: u64 = if frac.is_empty() {
        0
    } else {
        format!("{frac:0<12}").parse().ok()?
    };
    w.checked_mul(1_000_000_000_000)?.checked_add(f)
}

/// The columns of a replay's `links.csv` (and `--links`).
pub const LINK_COLUMNS: [&str; 10] = [
    "kind",
    "node",
    "port",
    "to_node",
    "bytes",
    "packets",
    "busy_s",
    "utilization",
    "max_queue",
    "max_wait_s",
];

/// Reads a whole text file a report needs (bounded, registered as an input so that no
/// output overwrites it).
fn read_text(path: &std::path::Path) -> Result<String> {
    Ok(sim_core::inputs::read_to_string(path, REPORT_FILE_BYTES)?)
}

/// Writes a text file atomically (`safe_output`): the whole file or none of it.
pub fn write_text(path: &std::path::Path, text: &str) -> Result<()> {
    use std::io::Write;
    let mut f = safe_output::AtomicFile::create(path)?;
    f.write_all(text.as_bytes())
        .map_err(|e| error::ReportError::Context {
            what: format!("cannot write {}", path.display()),
            source: Box::new(e),
        })?;
    f.commit()?;
    Ok(())
}

/// A CSV writer on an atomic file; finish it with [`commit_csv`].
pub fn csv_file(path: &std::path::Path) -> Result<csv::Writer<safe_output::AtomicFile>> {
    Ok(csv::Writer::from_writer(safe_output::AtomicFile::create(
        path,
    )?))
}

/// Flushes a CSV writer from [`csv_file`] and puts the file in place.
pub fn commit_csv(w: csv::Writer<safe_output::AtomicFile>) -> Result<()> {
    let f = w.into_inner().map_err(|e| {
        error::ReportError::Invalid(format!("cannot write a CSV file: {}", e.error()))
    })?;
    let p = f.path().display().to_string();
    f.commit().map_err(|e| error::ReportError::Context {
        what: format!("cannot write {p}"),
        source: Box::new(e),
    })?;
    Ok(())
}
