//! The importers' error type: every variant names the file and where in it.

use std::path::PathBuf;

/// A problem reading a foreign trace.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// A binary file holds something other than what the format requires at `offset`.
    #[error("{file}: byte offset {offset}: expected {expected}; found {found}")]
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
    #[error("{file}:{line}: expected {expected}; found {found}")]
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
    #[error("{file}: not supported: {what}")]
    Unsupported {
        /// The file.
        file: String,
        /// What is not supported, and what is.
        what: String,
    },
    /// The records parse but do not fit together (a receive with no matching send, a
    /// dependency on a missing record, ...).
    #[error("{file}: {what}")]
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

/// Reads a whole file, mapping the OS error.
pub(crate) fn read_file(path: &std::path::Path) -> Result<Vec<u8>, ImportError> {
    std::fs::read(path).map_err(|source| ImportError::Io {
        path: path.to_path_buf(),
        source,
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

/// Reads a gzip-compressed text file (all members, as `zcat` does), at most
/// [`MAX_GZIP_TEXT_BYTES`] once expanded. Corrupt data is reported with the offset in the
/// compressed file where decoding stopped.
pub(crate) fn read_gzip_text(path: &std::path::Path) -> Result<String, ImportError> {
    read_gzip_text_limited(path, MAX_GZIP_TEXT_BYTES)
}

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
    let res = {
        let dec = flate2::read::MultiGzDecoder::new(&mut counted);
        dec.take(limit + 1).read_to_end(&mut out)
    };
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
