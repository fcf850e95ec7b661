//! The importers' error type: every variant names the file and where in it.

use std::path::PathBuf;

/// The most bytes of input an error quotes (the rest is counted, not printed).
const MAX_QUOTED_BYTES: usize = 200;

/// `s` cut to at most [`MAX_QUOTED_BYTES`] (a line of a foreign file can be megabytes long).
fn cut(s: &str) -> String {
    sim_core::inputs::cut(s, MAX_QUOTED_BYTES)
}

/// A problem reading a foreign trace.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// A binary file holds something other than what the format requires at `offset`.
    #[error(
        "{file}: byte offset {offset}: expected {expected}; found {}",
        cut(found)
    )]
    Binary {
        /// The file.
        file: String,
        /// Byte offset from the start of the file.
        offset: u64,
        /// What the format requires there.
        expected: String,
        /// What is there instead.
        found: String,
    },
    /// A line of a text format does not parse.
    #[error("{file}:{line}: expected {expected}; found {}", cut(found))]
    Syntax {
        /// The file.
        file: String,
        /// 1-based line number.
        line: u64,
        /// What the format requires there.
        expected: String,
        /// What is there instead.
        found: String,
    },
    /// The file is well formed but uses something this importer does not support.
    #[error("{file}: not supported: {}", cut(what))]
    Unsupported {
        /// The file.
        file: String,
        /// What is not supported, and what is.
        what: String,
    },
    /// The records parse but do not fit together (a receive with no matching send, a
    /// dependency on a missing record, ...).
    #[error("{file}: {}", cut(what))]
    Inconsistent {
        /// The file (and line, when one record is to blame).
        file: String,
        /// What does not fit.
        what: String,
    },
    /// The converted trace breaks an invariant of the trace IR (a bug in the importer, or a
    /// foreign trace that cannot be expressed).
    #[error("{file}: {source}")]
    Invalid {
        /// The input.
        file: String,
        /// The broken invariant.
        source: trace::ValidationError,
    },
    /// The input would expand into a trace larger than the memory limit (checked before the
    /// trace is built).
    #[error(
        "{file}: the converted trace would have {blocks} blocks and {sends} messages, about {} of memory, above the limit of {} (raise it with --max-memory)",
        sim_core::units::human_bytes(*need_bytes),
        sim_core::units::human_bytes(*limit_bytes)
    )]
    TooLarge {
        /// The input.
        file: String,
        /// Blocks of the converted trace.
        blocks: u64,
        /// Messages of the converted trace.
        sends: u64,
        /// Estimated bytes.
        need_bytes: u64,
        /// The limit.
        limit_bytes: u64,
    },
    /// The files an import reads whole would pass the memory limit
    /// ([`crate::ImportOptions::max_memory_bytes`]).
    #[error(
        "{file}: reading it with the files before it would need more than the memory limit of {limit_bytes} bytes (--max-memory)"
    )]
    MemoryLimit {
        /// The file that would pass the limit.
        file: String,
        /// The limit.
        limit_bytes: u64,
    },
    /// A file could not be opened or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

impl ImportError {
    pub(crate) fn syntax(
        file: &str,
        line: u64,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> Self {
        ImportError::Syntax {
            file: file.to_string(),
            line,
            expected: expected.into(),
            found: found.into(),
        }
    }
    pub(crate) fn inconsistent(file: &str, what: impl Into<String>) -> Self {
        ImportError::Inconsistent {
            file: file.to_string(),
            what: what.into(),
        }
    }
}

/// Largest file an importer reads whole (a per-PE log, a summary, a compressed input).
pub const MAX_WHOLE_FILE_BYTES: u64 = 8 << 30;

/// Reads a whole file (at most [`MAX_WHOLE_FILE_BYTES`]), mapping the OS error.
pub(crate) fn read_file(path: &std::path::Path) -> Result<Vec<u8>, ImportError> {
    read_file_limited(path, MAX_WHOLE_FILE_BYTES)
}

/// Reads a whole file of at most `limit` bytes (registered as an input).
pub(crate) fn read_file_limited(
    path: &std::path::Path,
    limit: u64,
) -> Result<Vec<u8>, ImportError> {
    use sim_core::inputs::ReadError;
    sim_core::inputs::read(path, limit).map_err(|e| match e {
        ReadError::Io { path, source } => ImportError::Io { path, source },
        ReadError::TooLarge { max_bytes, .. } => ImportError::inconsistent(
            &path.display().to_string(),
            format!("larger than {max_bytes} bytes, the most this input may hold here"),
        ),
        other => ImportError::inconsistent(&path.display().to_string(), other.to_string()),
    })
}

/// An error unless `path` exists (the error a read would give).
pub(crate) fn must_exist(path: &std::path::Path) -> Result<(), ImportError> {
    std::fs::metadata(path)
        .map(|_| ())
        .map_err(|source| ImportError::Io {
            path: path.to_path_buf(),
            source,
        })
}

/// Reads a whole file as UTF-8 text (invalid UTF-8 is reported with its byte offset).
pub(crate) fn read_text(path: &std::path::Path) -> Result<String, ImportError> {
    let bytes = read_file(path)?;
    String::from_utf8(bytes).map_err(|e| ImportError::Binary {
        file: path.display().to_string(),
        offset: e.utf8_error().valid_up_to() as u64,
        expected: "UTF-8 text".into(),
        found: "a byte sequence that is not UTF-8".into(),
    })
}

/// Largest text a gzip-compressed input may expand to (a bound against decompression bombs).
pub const MAX_GZIP_TEXT_BYTES: u64 = 8 << 30;
/// Longest line a gzip-compressed text log may hold (log records are short lines).
pub const MAX_GZIP_LINE_BYTES: u64 = 16 << 20;

/// Reads a gzip-compressed text file (all members, as `zcat` does), at most `limit` bytes
/// once expanded. Corrupt data is reported with the offset in the compressed file where
/// decoding stopped.
pub(crate) fn read_gzip_text_limited(
    path: &std::path::Path,
    limit: u64,
) -> Result<String, ImportError> {
    use std::io::Read;
    let file = path.display().to_string();
    let compressed = read_file(path)?;
    let mut counted = Counted {
        inner: &compressed[..],
        read: 0,
    };
    let mut out = Vec::new();
    // Decompressed a chunk at a time, watching the longest line: a bomb of one enormous line
    // (3 MB of gzip holding a 3 GiB line) stops after MAX_GZIP_LINE_BYTES, not at the limit.
    let res = (|| -> std::io::Result<Option<u64>> {
        let mut dec = flate2::read::MultiGzDecoder::new(&mut counted).take(limit + 1);
        let mut chunk = vec![0u8; 1 << 20];
        let (mut line_bytes, mut lines) = (0u64, 1u64);
        loop {
            let n = dec.read(&mut chunk)?;
            if n == 0 {
                return Ok(None);
            }
            for &b in &chunk[..n] {
                if b == b'\n' {
                    lines += 1;
                    line_bytes = 0;
                } else {
                    line_bytes += 1;
                    if line_bytes > MAX_GZIP_LINE_BYTES {
                        return Ok(Some(lines));
                    }
                }
            }
            out.extend_from_slice(&chunk[..n]);
        }
    })();
    if let Ok(Some(line)) = res {
        return Err(ImportError::inconsistent(
            &file,
            format!(
                "line {line} of the decompressed text is longer than {MAX_GZIP_LINE_BYTES} bytes: not a text log (a decompression bomb?)"
            ),
        ));
    }
    if let Err(e) = res {
        return Err(ImportError::Binary {
            file,
            offset: counted.read,
            expected: "gzip-compressed data".into(),
            found: format!("data that does not decompress ({e})"),
        });
    }
    if out.len() as u64 > limit {
        return Err(ImportError::inconsistent(
            &file,
            format!(
                "expands to more than {} bytes of text, the limit for a compressed input",
                limit
            ),
        ));
    }
    String::from_utf8(out).map_err(|e| ImportError::Binary {
        file: format!("{file} (decompressed)"),
        offset: e.utf8_error().valid_up_to() as u64,
        expected: "UTF-8 text".into(),
        found: "a byte sequence that is not UTF-8".into(),
    })
}

/// A reader that counts the bytes taken from it.
struct Counted<'a> {
    inner: &'a [u8],
    read: u64,
}

impl std::io::Read for Counted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

/// What an import may read whole, from [`crate::ImportOptions::max_memory_bytes`]: each
/// file's bytes count `factor` times (what is kept of it while the trace is built: its text,
/// its parsed records), and the total stays within the limit.
#[derive(Debug)]
pub(crate) struct ReadBudget {
    left: u64,
    limit: u64,
    factor: u64,
}

impl ReadBudget {
    pub(crate) fn new(limit: u64, factor: u64) -> ReadBudget {
        ReadBudget {
            left: limit,
            limit,
            factor: factor.max(1),
        }
    }

    fn cap(&self) -> u64 {
        (self.left / self.factor).min(MAX_WHOLE_FILE_BYTES)
    }

    fn over(&self, path: &std::path::Path) -> ImportError {
        ImportError::MemoryLimit {
            file: path.display().to_string(),
            limit_bytes: self.limit,
        }
    }

    fn spend(&mut self, bytes: usize) {
        self.left = self
            .left
            .saturating_sub((bytes as u64).saturating_mul(self.factor));
    }

    /// A whole file, counted against the budget.
    pub(crate) fn read(&mut self, path: &std::path::Path) -> Result<Vec<u8>, ImportError> {
        let cap = self.cap();
        let b = match read_file_limited(path, cap) {
            Err(ImportError::Inconsistent { .. }) if cap < MAX_WHOLE_FILE_BYTES => {
                return Err(self.over(path));
            }
            r => r?,
        };
        self.spend(b.len());
        Ok(b)
    }

    /// A whole text file (UTF-8), counted against the budget.
    pub(crate) fn read_text(&mut self, path: &std::path::Path) -> Result<String, ImportError> {
        let bytes = self.read(path)?;
        String::from_utf8(bytes).map_err(|e| ImportError::Binary {
            file: path.display().to_string(),
            offset: e.utf8_error().valid_up_to() as u64,
            expected: "UTF-8 text".into(),
            found: "a byte sequence that is not UTF-8".into(),
        })
    }

    /// A gzip-compressed text file, its expansion counted against the budget (a
    /// decompression bomb stops at the budget, not at [`MAX_GZIP_TEXT_BYTES`]).
    pub(crate) fn read_gzip_text(&mut self, path: &std::path::Path) -> Result<String, ImportError> {
        let cap = self.cap().min(MAX_GZIP_TEXT_BYTES);
        match read_gzip_text_limited(path, cap) {
            Err(ImportError::Inconsistent { .. }) if cap < MAX_GZIP_TEXT_BYTES => {
                Err(self.over(path))
            }
            Ok(t) => {
                self.spend(t.len());
                Ok(t)
            }
            Err(e) => Err(e),
        }
    }
}
