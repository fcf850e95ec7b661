//! Outputs that are never half-written.
//!
//! Contract:
//! - [`AtomicFile`] writes to a hidden temporary file next to its destination and renames it
//!   into place on [`AtomicFile::commit`]. A process killed at any moment leaves either the
//!   previous file or the complete new one at the destination (never a prefix); a temporary
//!   file dropped without a commit is removed.
//! - [`OutputDir`] builds a whole output folder in a hidden staging folder next to the
//!   destination, writes the finished-run marker [`MARKER`] last, and swaps the staging folder
//!   into place. A process killed at any moment leaves either the previous complete output or
//!   a destination without the marker. Stale files of an earlier run never survive.
//! - [`check_dir`] decides, before any long work, whether a folder may receive an output: an
//!   absent or empty folder, or a previous whatif output (it holds [`MARKER`]), may; a
//!   non-empty folder of other files needs `force`, and then receives the files in place
//!   (nothing of it is deleted; the marker is still written last).
//!
//! - No output overwrites or deletes an input the process registered
//!   (`sim_core::inputs::register`): [`check_file`], [`AtomicFile::create`] and [`check_dir`]
//!   refuse with [`OutputError::OverwritesInput`].
//!
//! Temporary names start with `.` and contain `.whatif-tmp.` or `.whatif-staging.` and the
//! process id, so they never collide with outputs and are easy to clean up.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// The finished-run marker: written last into every output folder.
pub const MARKER: &str = "whatif-complete.json";

/// Why an output cannot be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutputError {
    /// An operating-system error on `path`.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The path being written, created or renamed.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// The output folder holds other files and is not a previous whatif output.
    #[error(
        "{path} is not empty and is not a whatif output (it has no {MARKER}); choose a new or empty folder, or pass --force to write into it (its other files are kept)"
    )]
    Foreign {
        /// The folder.
        path: PathBuf,
    },
    /// The output path exists and is not a folder.
    #[error("{path} exists and is not a folder; choose a folder for the outputs")]
    NotADir {
        /// The path.
        path: PathBuf,
    },
    /// The output would overwrite, or (replacing a folder) delete, one of the run's inputs
    /// (`sim_core::inputs`).
    #[error(
        "{path}: writing there would overwrite or delete the input {input}; choose another output path"
    )]
    OverwritesInput {
        /// The output path.
        path: PathBuf,
        /// The input.
        input: PathBuf,
    },
    /// The output path is a block device or a socket: neither is written to, and a file
    /// renamed into place would replace it. (Character devices and pipes, `/dev/null`,
    /// `/dev/stdout`, are written to directly.)
    #[error(
        "{path} is a block device or a socket, not a file: choose a file path (a character device such as /dev/null or a pipe is written to directly)"
    )]
    NotAFile {
        /// The path.
        path: PathBuf,
    },
    /// The output folder is the current folder or holds it, which cannot be replaced.
    #[error(
        "{path} is the current folder or holds it: an output folder is replaced as a whole when it is finished, which the current folder cannot be; choose another folder (e.g. {path}/out)"
    )]
    HoldsCurrentDir {
        /// The folder.
        path: PathBuf,
    },
    /// The folder an output file would go into does not exist.
    #[error("cannot write {path}: its folder {parent} does not exist")]
    NoParent {
        /// The output file.
        path: PathBuf,
        /// Its missing folder.
        parent: PathBuf,
    },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> OutputError + '_ {
    move |source| OutputError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The temporary files and staging folders this process has open, for
/// [`remove_temporaries`] (an interrupted run removes them before it exits).
static LIVE: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

fn live(p: &Path, open: bool) {
    let mut v = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    if open {
        v.push(p.to_path_buf());
    } else if let Some(i) = v.iter().position(|x| x == p) {
        v.swap_remove(i);
    }
}

/// Removes every temporary file and staging folder this process has open (what an
/// interrupted run calls before it exits: destructors do not run on `exit`); returns how many
/// it removed. Outputs already in place and the previous outputs are untouched.
pub fn remove_temporaries() -> usize {
    let v = std::mem::take(&mut *LIVE.lock().unwrap_or_else(|e| e.into_inner()));
    v.iter()
        .filter(|p| {
            if p.is_dir() {
                fs::remove_dir_all(p).is_ok()
            } else {
                fs::remove_file(p).is_ok()
            }
        })
        .count()
}

/// A scratch path beside `dest` (`dir/.name.whatif-<kind>.<pid>`: on the output's file
/// system, hidden, named after this process), for work files a long run writes before its
/// output exists.
pub fn scratch_beside(dest: &Path, kind: &str) -> PathBuf {
    sibling(dest, kind)
}

/// Registers a scratch file or folder this process made (`open`), or forgets it once removed,
/// so that [`remove_temporaries`] removes it if the run is interrupted.
pub fn track_temporary(path: &Path, open: bool) {
    live(path, open)
}

/// `dir/.name.whatif-<kind>.<pid>` for `dest = dir/name`.
fn sibling(dest: &Path, kind: &str) -> PathBuf {
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let tmp = format!(".{name}.whatif-{kind}.{}", std::process::id());
    match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.join(tmp),
        _ => PathBuf::from(tmp),
    }
}

/// The folder `dest` goes into must exist.
fn check_parent(dest: &Path) -> Result<(), OutputError> {
    if let Some(parent) = dest.parent()
        && !parent.as_os_str().is_empty()
        && !parent.is_dir()
    {
        return Err(OutputError::NoParent {
            path: dest.to_path_buf(),
            parent: parent.to_path_buf(),
        });
    }
    Ok(())
}

/// Checks that an output file can be created: its folder exists (checked before long work,
/// so a typo in a path does not cost a whole run).
pub fn check_file(dest: &Path) -> Result<(), OutputError> {
    check_parent(dest)?;
    if let Some(input) = sim_core::inputs::overwritten_by(dest) {
        return Err(OutputError::OverwritesInput {
            path: dest.to_path_buf(),
            input,
        });
    }
    if dest.is_dir() {
        return Err(OutputError::Io {
            path: dest.to_path_buf(),
            source: io::Error::other("it is a folder"),
        });
    }
    // Followed through symlinks (`/dev/stdout`); a dangling link is a new file.
    if let Ok(m) = std::fs::metadata(dest)
        && !m.is_file()
        && !is_stream(&m)
    {
        return Err(OutputError::NotAFile {
            path: dest.to_path_buf(),
        });
    }
    Ok(())
}

/// A character device or a pipe (`/dev/null`, `/dev/stdout` on a terminal or a pipe): written
/// to in place, never replaced by a rename (which, run as root, would replace the device).
fn is_stream(m: &fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    t.is_char_device() || t.is_fifo()
}

/// A file written under a temporary name and renamed into place by [`commit`](Self::commit);
/// a character device or a pipe (`/dev/null`, `/dev/stdout`) is written to directly.
#[derive(Debug)]
pub struct AtomicFile {
    dest: PathBuf,
    /// The temporary file; `None` when writing to a device or pipe directly.
    tmp: Option<PathBuf>,
    w: Option<BufWriter<File>>,
}

impl AtomicFile {
    /// Starts writing `dest` (its folder must exist).
    pub fn create(dest: &Path) -> Result<AtomicFile, OutputError> {
        check_file(dest)?;
        if fs::metadata(dest).is_ok_and(|m| is_stream(&m)) {
            let f = fs::OpenOptions::new()
                .write(true)
                .open(dest)
                .map_err(io_err(dest))?;
            return Ok(AtomicFile {
                dest: dest.to_path_buf(),
                tmp: None,
                w: Some(BufWriter::with_capacity(1 << 16, f)),
            });
        }
        clean_stale(dest);
        let tmp = sibling(dest, "tmp");
        let f = File::create(&tmp).map_err(io_err(dest))?;
        live(&tmp, true);
        Ok(AtomicFile {
            dest: dest.to_path_buf(),
            tmp: Some(tmp),
            w: Some(BufWriter::with_capacity(1 << 16, f)),
        })
    }

    /// The destination path.
    pub fn path(&self) -> &Path {
        &self.dest
    }

    /// Flushes, syncs and renames the file into place.
    pub fn commit(mut self) -> Result<(), OutputError> {
        let w = self.w.take().expect("an uncommitted file has its writer");
        let f = w.into_inner().map_err(|e| OutputError::Io {
            path: self.dest.clone(),
            source: e.into_error(),
        })?;
        let Some(tmp) = self.tmp.take() else {
            return Ok(()); // a device or pipe: flushed above
        };
        f.sync_all().map_err(io_err(&self.dest))?;
        drop(f);
        fs::rename(&tmp, &self.dest).map_err(io_err(&self.dest))?;
        live(&tmp, false);
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.w.as_mut().expect("open").write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.w.as_mut().expect("open").write_all(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.w.as_mut().expect("open").flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.w.take().is_some()
            && let Some(tmp) = self.tmp.take()
        {
            let _ = fs::remove_file(&tmp);
            live(&tmp, false);
        }
    }
}

/// Writes `bytes` to `dest` atomically.
pub fn write_atomic(dest: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let mut f = AtomicFile::create(dest)?;
    f.write_all(bytes).map_err(io_err(dest))?;
    f.commit()
}

/// What an output folder holds now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirState {
    /// It does not exist.
    Absent,
    /// It exists and is empty.
    Empty,
    /// It holds a previous whatif output (the marker).
    Previous,
    /// It holds other files; writing needs `force`.
    Foreign,
}

/// Whether `dest` may receive an output folder; refuses a foreign folder unless `force`.
pub fn check_dir(dest: &Path, force: bool) -> Result<DirState, OutputError> {
    let state = dir_state(dest)?;
    if state == DirState::Foreign && !force {
        return Err(OutputError::Foreign {
            path: dest.to_path_buf(),
        });
    }
    if state != DirState::Foreign
        && let Ok(cwd) = std::env::current_dir()
        && sim_core::inputs::resolve(&cwd).starts_with(sim_core::inputs::resolve(dest))
    {
        return Err(OutputError::HoldsCurrentDir {
            path: dest.to_path_buf(),
        });
    }
    // A previous output is replaced, its files deleted (a forced foreign folder keeps its
    // files; the outputs written into it are checked one by one).
    if state == DirState::Previous
        && let Some(input) = sim_core::inputs::inside(dest)
    {
        return Err(OutputError::OverwritesInput {
            path: dest.to_path_buf(),
            input,
        });
    }
    check_parent(dest)?;
    Ok(state)
}

fn dir_state(dest: &Path) -> Result<DirState, OutputError> {
    match fs::metadata(dest) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(DirState::Absent),
        Err(e) => return Err(io_err(dest)(e)),
        Ok(m) if !m.is_dir() => {
            return Err(OutputError::NotADir {
                path: dest.to_path_buf(),
            });
        }
        Ok(_) => {}
    }
    if dest.join(MARKER).is_file() {
        return Ok(DirState::Previous);
    }
    let mut entries = fs::read_dir(dest).map_err(io_err(dest))?;
    Ok(if entries.next().is_none() {
        DirState::Empty
    } else {
        DirState::Foreign
    })
}

/// Removes what killed runs left next to `dest`: staging folders, replaced folders and
/// temporary files whose process no longer runs (checked in `/proc`; nothing is removed
/// where `/proc` is absent).
fn clean_stale(dest: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Some(name) = dest.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return;
    };
    let parent = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let Ok(entries) = fs::read_dir(&parent) else {
        return;
    };
    let prefix = format!(".{name}.whatif-");
    for e in entries.flatten() {
        let f = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = f.strip_prefix(&prefix) else {
            continue;
        };
        let Some((kind, pid)) = rest.split_once('.') else {
            continue;
        };
        if !matches!(kind, "staging" | "old" | "tmp") || pid.parse::<u32>().is_err() {
            continue;
        }
        if Path::new("/proc").join(pid).exists() {
            continue;
        }
        let p = e.path();
        // A run killed between its two final renames left the previous output aside and no
        // output in place: put the previous one back.
        if kind == "old" && !dest.exists() && fs::rename(&p, dest).is_ok() {
            continue;
        }
        let _ = if p.is_dir() {
            fs::remove_dir_all(&p)
        } else {
            fs::remove_file(&p)
        };
    }
}

/// An output folder being built; see the crate docs.
#[derive(Debug)]
pub struct OutputDir {
    dest: PathBuf,
    /// Where the files go now: the staging folder, or `dest` itself for a forced foreign one.
    work: PathBuf,
    staged: bool,
    finished: bool,
}

impl OutputDir {
    /// Starts an output into `dest` (see [`check_dir`] for what is allowed).
    pub fn begin(dest: &Path, force: bool) -> Result<OutputDir, OutputError> {
        let state = check_dir(dest, force)?;
        if state == DirState::Foreign {
            // Written in place: the marker goes first out, last in.
            let marker = dest.join(MARKER);
            if marker.exists() {
                fs::remove_file(&marker).map_err(io_err(&marker))?;
            }
            return Ok(OutputDir {
                dest: dest.to_path_buf(),
                work: dest.to_path_buf(),
                staged: false,
                finished: false,
            });
        }
        clean_stale(dest);
        let work = sibling(dest, "staging");
        if work.exists() {
            fs::remove_dir_all(&work).map_err(io_err(&work))?;
        }
        fs::create_dir_all(&work).map_err(io_err(&work))?;
        live(&work, true);
        Ok(OutputDir {
            dest: dest.to_path_buf(),
            work,
            staged: true,
            finished: false,
        })
    }

    /// The folder to write the files into now.
    pub fn path(&self) -> &Path {
        &self.work
    }

    /// The final folder.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Writes the marker (`marker_json`: what the run was) last and puts the folder in place.
    pub fn finish(mut self, marker_json: &str) -> Result<(), OutputError> {
        let marker = self.work.join(MARKER);
        write_atomic(&marker, marker_json.as_bytes())?;
        if self.staged {
            let old = sibling(&self.dest, "old");
            let had_old = match dir_state(&self.dest)? {
                DirState::Absent => false,
                DirState::Empty => {
                    fs::remove_dir(&self.dest).map_err(io_err(&self.dest))?;
                    false
                }
                DirState::Previous | DirState::Foreign => {
                    if old.exists() {
                        fs::remove_dir_all(&old).map_err(io_err(&old))?;
                    }
                    fs::rename(&self.dest, &old).map_err(io_err(&self.dest))?;
                    true
                }
            };
            fs::rename(&self.work, &self.dest).map_err(io_err(&self.dest))?;
            live(&self.work, false);
            if had_old {
                fs::remove_dir_all(&old).map_err(io_err(&old))?;
            }
        }
        self.finished = true;
        Ok(())
    }
}

impl Drop for OutputDir {
    fn drop(&mut self) {
        if self.staged && !self.finished {
            let _ = fs::remove_dir_all(&self.work);
            live(&self.work, false);
        }
    }
}

#[cfg(test)]
mod tests;
