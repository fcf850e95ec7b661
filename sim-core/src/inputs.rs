//! What this process reads: a registry of its input files, so that no output ever overwrites
//! or deletes one, and reads with a size bound, so that no input (a `/dev/zero`, a file of
//! one endless line) can exhaust memory.
//!
//! Every reader of a user's file calls [`register`] (the bounded readers here do it), and
//! every writer checks its destination with [`overwritten_by`] and, before replacing a
//! folder, [`inside`] (the `safe-output` crate does both): the guard holds for any command,
//! whichever flags named the files. Paths are compared resolved ([`resolve`]: absolute,
//! symbolic links followed where they exist), so `./a/../b.trace` and a link to `b.trace`
//! are `b.trace`.
//!
//! [`quote`] is how an error message shows a piece of input: at most [`QUOTE_BYTES`] bytes,
//! escaped, with the length of what was left out.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

static INPUTS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// `p` made absolute, with symbolic links followed where the path (or its folder) exists.
pub fn resolve(p: &Path) -> PathBuf {
    if let Ok(c) = p.canonicalize() {
        return c;
    }
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    };
    match (abs.parent(), abs.file_name()) {
        (Some(dir), Some(name)) => dir
            .canonicalize()
            .map(|d| d.join(name))
            .unwrap_or(abs.clone()),
        _ => abs,
    }
}

/// Registers `path` as one of this process's inputs.
pub fn register(path: &Path) {
    let r = resolve(path);
    let mut v = INPUTS.lock().unwrap_or_else(|e| e.into_inner());
    if !v.contains(&r) {
        v.push(r);
    }
}

/// The registered inputs, resolved, in registration order.
pub fn registered() -> Vec<PathBuf> {
    INPUTS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The registered input that writing the file `out` would overwrite, if any.
pub fn overwritten_by(out: &Path) -> Option<PathBuf> {
    let o = resolve(out);
    registered().into_iter().find(|i| *i == o)
}

/// A registered input inside the folder `dir` (which replacing the folder would delete), if
/// any.
pub fn inside(dir: &Path) -> Option<PathBuf> {
    let d = resolve(dir);
    registered().into_iter().find(|i| i.starts_with(&d))
}

/// Why a bounded read failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum ReadError {
    /// The operating system's error.
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The file is larger than the bound.
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The bound, bytes.
        max_bytes: u64,
    },
    /// The file is not UTF-8 text.
    NotText {
        /// The file.
        path: PathBuf,
        /// Byte offset of the first invalid byte.
        offset: usize,
    },
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Io { path, source } => write!(f, "cannot read {}: {source}", path.display()),
            ReadError::TooLarge { path, max_bytes } => write!(
                f,
                "{} is larger than {} bytes, more than such a file can need",
                path.display(),
                max_bytes
            ),
            ReadError::NotText { path, offset } => write!(
                f,
                "{} is not UTF-8 text (byte offset {offset})",
                path.display()
            ),
        }
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReadError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Reads at most `max_bytes` of `path` (an error beyond: the file is not what it claims), and
/// registers it as an input.
pub fn read(path: &Path, max_bytes: u64) -> Result<Vec<u8>, ReadError> {
    register(path);
    let io = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    if path.is_dir() {
        return Err(io(std::io::Error::other("it is a folder")));
    }
    let f = std::fs::File::open(path).map_err(io)?;
    // A regular file says its size: one over the bound is refused unread, one within it read
    // into a buffer of its size. A device or pipe (`/dev/zero`) is read into a buffer sized
    // once to the bound (up to 64 MiB; pages touched only as they fill), not grown by
    // doubling past it.
    let len = f.metadata().map_err(io)?;
    let mut buf = if len.is_file() {
        if len.len() > max_bytes {
            return Err(ReadError::TooLarge {
                path: path.to_path_buf(),
                max_bytes,
            });
        }
        Vec::with_capacity(len.len() as usize + 1)
    } else {
        Vec::with_capacity(max_bytes.saturating_add(1).min(UPFRONT_BYTES) as usize)
    };
    f.take(max_bytes.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(io)?;
    if buf.len() as u64 > max_bytes {
        return Err(ReadError::TooLarge {
            path: path.to_path_buf(),
            max_bytes,
        });
    }
    Ok(buf)
}

/// The most [`read`] reserves up front for a device or pipe.
const UPFRONT_BYTES: u64 = (64 << 20) + 1;

/// [`read`], as UTF-8 text.
pub fn read_to_string(path: &Path, max_bytes: u64) -> Result<String, ReadError> {
    String::from_utf8(read(path, max_bytes)?).map_err(|e| ReadError::NotText {
        path: path.to_path_buf(),
        offset: e.utf8_error().valid_up_to(),
    })
}

/// The most bytes of input an error message quotes.
pub const QUOTE_BYTES: usize = 80;

/// `s` cut to at most `max` bytes (on a character boundary), saying how much was left out.
pub fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} more bytes)", &s[..end], s.len() - end)
}

/// `s` as an error message shows it: backquoted, escaped, at most [`QUOTE_BYTES`] bytes of it,
/// with the size of the rest when it is cut.
pub fn quote(s: &str) -> String {
    if s.len() <= QUOTE_BYTES {
        return format!("`{}`", s.escape_debug());
    }
    let mut end = QUOTE_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "`{}`... ({} more bytes)",
        s[..end].escape_debug(),
        s.len() - end
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_are_short_and_escaped() {
        assert_eq!(quote("abc"), "`abc`");
        assert_eq!(quote("a\nb"), "`a\\nb`");
        let long = "x".repeat(1000);
        let q = quote(&long);
        assert!(q.len() < 120, "{q}");
        assert!(q.ends_with("... (920 more bytes)"), "{q}");
        // Cut on a character boundary.
        let wide = "é".repeat(100);
        assert!(quote(&wide).contains("more bytes"));
    }

    #[test]
    fn reads_are_bounded_and_registered() {
        let dir = std::env::temp_dir().join(format!("simcore-inputs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("a.txt");
        std::fs::write(&p, "hello").unwrap();
        assert_eq!(read_to_string(&p, 5).unwrap(), "hello");
        assert!(matches!(
            read_to_string(&p, 4),
            Err(ReadError::TooLarge { max_bytes: 4, .. })
        ));
        assert_eq!(overwritten_by(&dir.join("./a.txt")), Some(resolve(&p)));
        assert_eq!(inside(&dir), Some(resolve(&p)));
        assert_eq!(overwritten_by(&dir.join("b.txt")), None);
        assert!(read_to_string(&dir, 10).is_err(), "a folder is not a file");
        // An endless device stops at the bound.
        use std::os::unix::fs::FileTypeExt;
        if std::fs::metadata("/dev/zero").is_ok_and(|m| m.file_type().is_char_device()) {
            assert!(matches!(
                read(Path::new("/dev/zero"), 1 << 20),
                Err(ReadError::TooLarge { .. })
            ));
        } else {
            eprintln!("skipping the /dev/zero check: no such device here");
        }
        std::fs::write(&p, [0xff, 0xfe]).unwrap();
        assert!(matches!(
            read_to_string(&p, 10),
            Err(ReadError::NotText { offset: 0, .. })
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
