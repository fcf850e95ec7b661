//! A sweep's journal of finished points, so an interrupted sweep resumes instead of starting
//! over (issue 33, item 13).
//!
//! `<out>.partial.jsonl`, beside the output folder: a first line naming the study (its
//! fingerprint) and the points the run covers, then one line per finished point, appended and
//! flushed as each point ends (in completion order): its index, its fingerprint, and its row
//! exactly as the outputs write it (CSV header and line, JSON object). A run that stops (Ctrl-C,
//! a failed point, `kill -9`) leaves it; the same command reads it back, runs only the points
//! it lacks, and writes outputs byte-identical to an uninterrupted run's (the rows are kept as
//! text), then deletes it. A journal of another study or other points, or an unreadable one,
//! is set aside (replaced) with a message; a torn last line (a kill mid-write) is ignored. Not
//! detected: a workload trace file changed on disk between the runs (the study file's
//! fingerprint covers its path, not its content); delete the journal to start afresh.

use crate::error::{Ctx, Result, WorkflowError};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Largest journal read back (a row is a few hundred bytes; 10^6 points fit).
const MAX_JOURNAL_BYTES: u64 = 1 << 30;

/// A finished point's row, as the outputs write it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DoneRow {
    /// The CSV header line.
    pub header: String,
    /// The row's CSV line.
    pub csv: String,
    /// The row's JSON object, on one line.
    pub json: String,
}

/// The journal being written.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: Mutex<std::fs::File>,
}

/// `<out>.partial.jsonl`.
pub fn path_for(out: &Path) -> PathBuf {
    let name = out
        .file_name()
        .map_or_else(|| "sweep".into(), |n| n.to_string_lossy().into_owned());
    out.with_file_name(format!("{name}.partial.jsonl"))
}

fn head_line(study_fingerprint: &str, indices: &[usize]) -> String {
    serde_json::json!({
        "whatif_sweep_journal": 1,
        "study": study_fingerprint,
        "points": indices,
    })
    .to_string()
}

/// Opens the journal at `path` for a run of `indices` of the study `study_fingerprint` whose
/// points have `fingerprints` (by position in `indices`): the rows it already holds for them
/// (resumed), and the journal to append to. `note` receives what happened to a journal that
/// did not fit.
pub fn open(
    path: &Path,
    study_fingerprint: &str,
    indices: &[usize],
    fingerprints: &[&str],
    note: &mut dyn FnMut(String),
) -> Result<(BTreeMap<usize, DoneRow>, Journal)> {
    safe_output::check_file(path)
        .ctx(|| format!("cannot keep the sweep's journal at {}", path.display()))?;
    let head = head_line(study_fingerprint, indices);
    let mut done = BTreeMap::new();
    let mut keep = false;
    if path.exists() {
        match read_own(path) {
            Ok(text) => {
                let mut lines = text.split_inclusive('\n');
                if lines.next().map(str::trim_end) == Some(head.as_str()) {
                    keep = true;
                    let fp: BTreeMap<usize, &str> = indices
                        .iter()
                        .copied()
                        .zip(fingerprints.iter().copied())
                        .collect();
                    for line in lines {
                        // A line without its newline was cut by a kill: ignored.
                        let Some(line) = line.strip_suffix('\n') else {
                            break;
                        };
                        let Some((i, row)) = parse_row(line, &fp) else {
                            note(format!(
                                "{}: a line that is not a finished point of this study; the points after it are run again",
                                path.display()
                            ));
                            break;
                        };
                        done.insert(i, row);
                    }
                } else {
                    note(format!(
                        "{} was left by another study or other points; starting afresh (it is replaced)",
                        path.display()
                    ));
                }
            }
            Err(e) => note(format!(
                "{}: {e}; starting afresh (it is replaced)",
                path.display()
            )),
        }
    }
    // Rewritten with what is kept, so a torn or foreign tail does not stay.
    let mut text = format!("{head}\n");
    for (i, r) in &done {
        text.push_str(&row_line(*i, fingerprint_of(*i, indices, fingerprints), r));
        text.push('\n');
    }
    if !keep && path.exists() {
        std::fs::remove_file(path).ctx(|| format!("cannot replace {}", path.display()))?;
    }
    let mut f = std::fs::File::create(path)
        .ctx(|| format!("cannot write the sweep journal {}", path.display()))?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.flush())
        .ctx(|| format!("cannot write the sweep journal {}", path.display()))?;
    Ok((
        done,
        Journal {
            path: path.to_path_buf(),
            file: Mutex::new(f),
        },
    ))
}

/// The journal's text, read with a bound (it is the sweep's own file, not an input: it is
/// not registered, so the run may rewrite it).
fn read_own(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(MAX_JOURNAL_BYTES + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > MAX_JOURNAL_BYTES {
        return Err(std::io::Error::other(format!(
            "larger than {MAX_JOURNAL_BYTES} bytes"
        )));
    }
    Ok(text)
}

fn fingerprint_of<'a>(i: usize, indices: &[usize], fingerprints: &[&'a str]) -> &'a str {
    indices
        .iter()
        .position(|&x| x == i)
        .map_or("", |k| fingerprints[k])
}

fn row_line(index: usize, fingerprint: &str, r: &DoneRow) -> String {
    serde_json::json!({
        "index": index,
        "fingerprint": fingerprint,
        "header": r.header,
        "csv": r.csv,
        "json": r.json,
    })
    .to_string()
}

fn parse_row(line: &str, fingerprints: &BTreeMap<usize, &str>) -> Option<(usize, DoneRow)> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    let i = usize::try_from(v.get("index")?.as_u64()?).ok()?;
    let fp = v.get("fingerprint")?.as_str()?;
    if fingerprints.get(&i) != Some(&fp) {
        return None;
    }
    let s = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
    Some((
        i,
        DoneRow {
            header: s("header")?,
            csv: s("csv")?,
            json: s("json")?,
        },
    ))
}

impl Journal {
    /// The journal's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends point `index` (fingerprint `fingerprint`) and flushes it.
    pub fn record(&self, index: usize, fingerprint: &str, row: &DoneRow) -> Result<()> {
        let line = row_line(index, fingerprint, row) + "\n";
        let mut f = self
            .file
            .lock()
            .map_err(|_| WorkflowError::Failed("the sweep journal's lock is poisoned".into()))?;
        f.write_all(line.as_bytes())
            .and_then(|()| f.flush())
            .ctx(|| format!("cannot write the sweep journal {}", self.path.display()))
    }

    /// Deletes the journal (the outputs are complete).
    pub fn finish(self) -> Result<()> {
        drop(self.file);
        std::fs::remove_file(&self.path)
            .ctx(|| format!("cannot remove the sweep journal {}", self.path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(k: &str) -> DoneRow {
        DoneRow {
            header: "a,b".into(),
            csv: format!("{k},\"x,y\""),
            json: format!("{{\"a\":{k}}}"),
        }
    }

    #[test]
    fn finished_points_come_back_and_foreign_or_torn_lines_do_not() {
        let dir = std::env::temp_dir().join(format!("sweep-journal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = path_for(&dir.join("out"));
        assert!(p.ends_with("out.partial.jsonl"));
        let idx = [0, 1, 2];
        let fps = ["f0", "f1", "f2"];
        let mut notes = Vec::new();
        let (done, j) = open(&p, "S", &idx, &fps, &mut |n| notes.push(n)).unwrap();
        assert!(done.is_empty() && notes.is_empty());
        j.record(2, "f2", &row("2")).unwrap();
        j.record(0, "f0", &row("0")).unwrap();
        drop(j);
        // A torn line at the end (a kill mid-write) is ignored.
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"index\":1,\"fingerp").unwrap();
        drop(f);
        let (done, j) = open(&p, "S", &idx, &fps, &mut |n| notes.push(n)).unwrap();
        assert_eq!(done.keys().copied().collect::<Vec<_>>(), vec![0, 2]);
        assert_eq!(done[&2], row("2"));
        assert!(notes.is_empty(), "{notes:?}");
        drop(j);
        // Rewritten without the torn tail.
        assert!(std::fs::read_to_string(&p).unwrap().ends_with("}\n"));
        // A point whose fingerprint changed is run again, and so are those after it.
        let (done, j) = open(&p, "S", &idx, &["f0", "f1", "CHANGED"], &mut |n| {
            notes.push(n)
        })
        .unwrap();
        assert!(done.is_empty() || done.keys().all(|&k| k < 2));
        assert_eq!(notes.len(), 1);
        drop(j);
        // Another study: set aside.
        notes.clear();
        let (done, j) = open(&p, "OTHER", &idx, &fps, &mut |n| notes.push(n)).unwrap();
        assert!(done.is_empty());
        assert!(notes[0].contains("another study"), "{notes:?}");
        j.finish().unwrap();
        assert!(!p.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
