//! A mutation fuzzer: proves (by running) that no input makes a reader panic, run away with
//! memory or time.
//!
//! [`fuzz_files`] copies a valid input set (every file the format reads) into a scratch
//! folder, then repeatedly mutates one of its files (bit flips, special bytes, deletions,
//! duplications, truncations, inserted digits and signs, swapped lines), runs a target on
//! the set (an import, or a load, each followed by a replay in the CLI), and restores the file.
//! The target may accept or reject the input; a panic is a bug, and so is an input that takes
//! more than the per-input time budget or raises the process's peak memory by more than the
//! per-input memory budget (measured on Linux through `VmHWM`, reset before every input).
//! Such inputs are saved next to the scratch folder and reported. Mutations come from one
//! seeded stream, so a run is reproducible from its seed. [`fuzz`] is the importer-only
//! target.

use crate::{Format, ImportError, ImportOptions, import};
use sim_core::SeedTree;
use sim_core::rng::{SimRng, below};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The files of one input set: (path relative to the scratch root, contents).
pub type FileSet = Vec<(PathBuf, Vec<u8>)>;

/// How long and from which seed to fuzz, and each input's budget.
#[derive(Clone, Debug)]
pub struct FuzzConfig {
    /// Seed of the mutation stream.
    pub seed: u64,
    /// Wall-clock budget.
    pub duration: Duration,
    /// Import budget.
    pub max_execs: u64,
    /// Options passed to every import ([`fuzz`]).
    pub opts: ImportOptions,
    /// Most wall time one input may take.
    pub time_per_input: Duration,
    /// Most the process's peak resident memory may grow while one input runs.
    pub memory_per_input_bytes: u64,
}

impl Default for FuzzConfig {
    fn default() -> Self {
        FuzzConfig {
            seed: 1,
            duration: Duration::from_secs(10),
            max_execs: u64::MAX,
            opts: ImportOptions {
                max_memory_bytes: 256 << 20,
                ..ImportOptions::default()
            },
            time_per_input: Duration::from_secs(2),
            memory_per_input_bytes: 256 << 20,
        }
    }
}

/// What a target made of one input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Read (and, where the target replays, replayed or refused by the replay).
    Accepted,
    /// Refused with an error.
    Rejected,
}

/// What a fuzzing run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FuzzReport {
    /// Inputs run.
    pub execs: u64,
    /// Inputs the target accepted.
    pub accepted: u64,
    /// Inputs the target refused with an error.
    pub rejected: u64,
    /// Inputs that made the target panic (saved copies).
    pub panics: Vec<PathBuf>,
    /// Inputs over the time or memory budget (saved copies, with what they took).
    pub over_budget: Vec<(PathBuf, String)>,
    /// The longest time one input took.
    pub slowest: Duration,
    /// The largest growth of peak memory one input caused (0 where not measurable).
    pub most_memory_bytes: u64,
}

/// Peak resident memory of this process (`VmHWM`), where Linux reports it.
fn peak_rss() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Current resident memory (`VmRSS`).
fn rss() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Resets `VmHWM` to the current RSS (Linux `clear_refs` 5); false where not allowed.
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The files `format` reads for `input`, as (path relative to the input's folder, bytes),
/// and the input's own relative path. Files outside that folder (absolute index entries) are
/// left in place and not mutated.
pub fn input_set(format: Format, input: &Path) -> Result<(FileSet, PathBuf), ImportError> {
    let paths = match format {
        Format::Goal => vec![input.to_path_buf()],
        Format::BgTrace => crate::bgtrace::files(input)?,
        Format::Projections => crate::projections::files(input)?,
        Format::SimGrid => crate::simgrid::files(input)?,
        Format::Otf2 => crate::input_files(Format::Otf2, input)?,
    };
    let base = paths[0].parent().unwrap_or(Path::new(".")).to_path_buf();
    let mut set = Vec::new();
    for p in &paths {
        if let Ok(rel) = p.strip_prefix(&base) {
            set.push((rel.to_path_buf(), crate::error::read_file(p)?));
        }
    }
    let entry = if input.is_dir() {
        PathBuf::from(".")
    } else {
        set[0].0.clone()
    };
    Ok((set, entry))
}

fn mutate(rng: &mut SimRng, data: &mut Vec<u8>) {
    let n = data.len() as u64;
    let pick = |rng: &mut SimRng, n: u64| if n == 0 { 0 } else { below(rng, n) as usize };
    match below(rng, 10) {
        0 if n > 0 => {
            let i = pick(rng, n);
            data[i] ^= 1 << below(rng, 8);
        }
        1 if n > 0 => {
            let i = pick(rng, n);
            data[i] = [0, 0xff, 0x7f, 0x80, b'-', b'9', b' ', b'\n'][below(rng, 8) as usize];
        }
        2 if n > 0 => {
            let i = pick(rng, n);
            let len = (1 + below(rng, 16) as usize).min(data.len() - i);
            data.drain(i..i + len);
        }
        3 if n > 0 => {
            let i = pick(rng, n);
            let len = (1 + below(rng, 64) as usize).min(data.len() - i);
            let chunk: Vec<u8> = data[i..i + len].to_vec();
            let j = pick(rng, n);
            data.splice(j..j, chunk);
        }
        4 => {
            let keep = pick(rng, n + 1);
            data.truncate(keep);
        }
        5 => {
            let i = pick(rng, n + 1);
            let s: &[u8] = [
                &b"-1"[..],
                b"0",
                b"99999999999",
                b"4294967295",
                b"1e308",
                b"nan",
                b"-0.5",
                b"2147483648",
            ][below(rng, 8) as usize];
            data.splice(i..i, s.iter().copied());
        }
        6 if n >= 4 => {
            // Overwrite an aligned 4-byte word with an extreme integer (binary counts, offsets).
            let i = pick(rng, n - 3) & !3;
            let v: i32 = [0, -1, i32::MAX, i32::MIN, 1 << 20, 7][below(rng, 6) as usize];
            if i + 4 <= data.len() {
                data[i..i + 4].copy_from_slice(&v.to_le_bytes());
            }
        }
        7 if n >= 8 => {
            // Overwrite 8 bytes with an extreme double (binary times).
            let i = pick(rng, n - 7);
            let v: f64 = [f64::NAN, f64::INFINITY, -1.0, 1e300, 0.0][below(rng, 5) as usize];
            data[i..i + 8].copy_from_slice(&v.to_le_bytes());
        }
        8 => {
            // Swap two lines (text formats).
            let lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
            if lines.len() > 2 {
                let (a, b) = (pick(rng, lines.len() as u64), pick(rng, lines.len() as u64));
                let mut v: Vec<Vec<u8>> = lines.iter().map(|l| l.to_vec()).collect();
                v.swap(a, b);
                *data = v.join(&b'\n');
            }
        }
        _ => {
            let i = pick(rng, n + 1);
            let b = below(rng, 256) as u8;
            data.insert(i, b);
        }
    }
}

/// Fuzzes the importer of `format` starting from the valid input `input` for `cfg.duration`
/// (or `cfg.max_execs` imports, whichever comes first), in scratch folder `work`. `progress` is
/// called about once a second with the report so far.
pub fn fuzz(
    format: Format,
    input: &Path,
    work: &Path,
    cfg: &FuzzConfig,
    progress: impl FnMut(&FuzzReport, Duration),
) -> Result<FuzzReport, ImportError> {
    let (files, entry) = input_set(format, input)?;
    let opts = cfg.opts.clone();
    fuzz_files(
        format.name(),
        &files,
        &entry,
        work,
        cfg,
        |p| match import(format, p, &opts) {
            Ok(_) => Outcome::Accepted,
            Err(_) => Outcome::Rejected,
        },
        progress,
    )
}

/// Fuzzes `target` on mutations of `files` (`entry`: the path, relative to `work`, the
/// target is given); see the module docs. `name` prefixes saved findings.
pub fn fuzz_files(
    name: &str,
    files: &FileSet,
    entry: &Path,
    work: &Path,
    cfg: &FuzzConfig,
    mut target: impl FnMut(&Path) -> Outcome,
    mut progress: impl FnMut(&FuzzReport, Duration),
) -> Result<FuzzReport, ImportError> {
    let (seed, duration, max_execs) = (cfg.seed, cfg.duration, cfg.max_execs);
    let io = |p: &Path, e: std::io::Error| ImportError::Io {
        path: p.to_path_buf(),
        source: e,
    };
    for (rel, bytes) in files {
        let p = work.join(rel);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).map_err(|e| io(d, e))?;
        }
        std::fs::write(&p, bytes).map_err(|e| io(&p, e))?;
    }
    let target_path = work.join(entry);
    let mut rng = SeedTree::new(seed).stream("fuzz");
    let mut report = FuzzReport::default();
    let start = Instant::now();
    let mut last = start;
    let measure_memory = reset_peak_rss() && peak_rss().is_some();
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let save = |what: &str, k: usize, data: &[u8], n: usize| -> Result<PathBuf, ImportError> {
        let keep = work.with_file_name(format!(
            "{name}-{what}-{n}-{}",
            files[k].0.display().to_string().replace('/', "_")
        ));
        std::fs::write(&keep, data).map_err(|e| io(&keep, e))?;
        Ok(keep)
    };
    while report.execs < max_execs && start.elapsed() < duration {
        let k = below(&mut rng, files.len() as u64) as usize;
        let mut data = files[k].1.clone();
        for _ in 0..1 + below(&mut rng, 4) {
            mutate(&mut rng, &mut data);
        }
        let path = work.join(&files[k].0);
        std::fs::write(&path, &data).map_err(|e| io(&path, e))?;
        let base = if measure_memory && reset_peak_rss() {
            rss()
        } else {
            None
        };
        let t0 = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(|| target(&target_path)));
        let took = t0.elapsed();
        let grew = match (base, peak_rss()) {
            (Some(b), Some(p)) => p.saturating_sub(b),
            _ => 0,
        };
        report.slowest = report.slowest.max(took);
        report.most_memory_bytes = report.most_memory_bytes.max(grew);
        match outcome {
            Ok(Outcome::Accepted) => report.accepted += 1,
            Ok(Outcome::Rejected) => report.rejected += 1,
            Err(_) => {
                let keep = save("panic", k, &data, report.panics.len())?;
                report.panics.push(keep);
            }
        }
        if took > cfg.time_per_input || grew > cfg.memory_per_input_bytes {
            let keep = save("over-budget", k, &data, report.over_budget.len())?;
            report.over_budget.push((
                keep,
                format!(
                    "{:.2} s, {} of peak memory",
                    took.as_secs_f64(),
                    sim_core::units::human_bytes(grew)
                ),
            ));
        }
        std::fs::write(&path, &files[k].1).map_err(|e| io(&path, e))?;
        report.execs += 1;
        if last.elapsed() >= Duration::from_secs(1) {
            last = Instant::now();
            progress(&report, start.elapsed());
        }
    }
    std::panic::set_hook(hook);
    Ok(report)
}
