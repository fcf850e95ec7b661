//! This process's memory as Linux reports it (`/proc/self/status`), for peak measurements
//! and for finding where a command's peak is.
//!
//! With the environment variable `WHATIF_MEMORY_TRACE` set, [`checkpoint`] prints the
//! resident memory now and the peak since the previous checkpoint (it restarts the peak
//! measurement), so the stages of a command can be told apart. Without it, a checkpoint
//! costs one environment lookup. Never call it per event.

/// A field of `/proc/self/status` in bytes (e.g. `VmHWM:`, `VmRSS:`), where Linux reports it.
fn status_bytes(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Peak resident memory of this process (`VmHWM`), in bytes, where Linux reports it.
pub fn peak_rss() -> Option<u64> {
    status_bytes("VmHWM:")
}

/// Resident memory of this process now (`VmRSS`), in bytes, where Linux reports it.
pub fn rss() -> Option<u64> {
    status_bytes("VmRSS:")
}

/// Restarts the peak measurement (Linux: `echo 5 > /proc/self/clear_refs`); false if the
/// system does not allow it.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// With `WHATIF_MEMORY_TRACE` set, prints the resident memory now and its peak since the
/// previous checkpoint, after `stage` (see the [module docs](self)).
pub fn checkpoint(stage: &str) {
    if std::env::var_os("WHATIF_MEMORY_TRACE").is_some() {
        let mb = |b: Option<u64>| b.map_or(f64::NAN, |b| b as f64 / 1e6);
        eprintln!(
            "memory: {stage}: peak {:.1} MB, now {:.1} MB",
            mb(peak_rss()),
            mb(rss())
        );
        reset_peak_rss();
    }
}
