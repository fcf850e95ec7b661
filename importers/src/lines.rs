//! Streaming line reader for the text importers: lines as byte slices out of one reusable
//! buffer (no `String` per line), with line numbers and UTF-8 checked per line, and a
//! whitespace tokenizer that fills a fixed array (no allocation per line).

use crate::ImportError;
use std::io::Read;
use std::path::Path;

/// Bytes read from the file at a time.
const BUF: usize = 1 << 20;
/// The longest line accepted (a longer one is an error, not an unbounded buffer).
pub(crate) const MAX_LINE: usize = 1 << 20;

/// Reads a file line by line.
pub(crate) struct Lines<R: Read> {
    r: R,
    file: String,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    /// 1-based number of the line last returned.
    pub(crate) line: u64,
    /// Bytes of the file consumed up to the start of the buffer.
    consumed: u64,
}

impl Lines<std::fs::File> {
    /// Opens `path`.
    pub(crate) fn open(path: &Path) -> Result<Self, ImportError> {
        sim_core::inputs::register(path);
        let f = std::fs::File::open(path).map_err(|source| ImportError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Lines::new(f, path.display().to_string()))
    }
}

impl Lines<std::io::Take<std::fs::File>> {
    /// The bytes `start..end` of `path`, whose first line is line `first_line`.
    pub(crate) fn range(
        path: &Path,
        start: u64,
        end: u64,
        first_line: u64,
    ) -> Result<Self, ImportError> {
        use std::io::{Seek, SeekFrom};
        let io = |source| ImportError::Io {
            path: path.to_path_buf(),
            source,
        };
        sim_core::inputs::register(path);
        let mut f = std::fs::File::open(path).map_err(io)?;
        f.seek(SeekFrom::Start(start)).map_err(io)?;
        let mut l = Lines::new(f.take(end - start), path.display().to_string());
        l.line = first_line - 1;
        l.consumed = start;
        Ok(l)
    }
}

/// The number of line ends in the first `end` bytes of `path`.
pub(crate) fn count_lines(path: &Path, end: u64) -> Result<u64, ImportError> {
    let io = |source| ImportError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut f = std::fs::File::open(path).map_err(io)?;
    let mut buf = vec![0u8; BUF];
    let mut left = end;
    let mut n = 0u64;
    while left > 0 {
        let want = (left as usize).min(buf.len());
        let got = f.read(&mut buf[..want]).map_err(io)?;
        if got == 0 {
            break;
        }
        n += buf[..got].iter().filter(|&&b| b == b'\n').count() as u64;
        left -= got as u64;
    }
    Ok(n)
}

impl<R: Read> Lines<R> {
    pub(crate) fn new(r: R, file: String) -> Self {
        Lines {
            r,
            file,
            buf: vec![0; BUF],
            start: 0,
            end: 0,
            eof: false,
            line: 0,
            consumed: 0,
        }
    }

    /// Byte offset in the file of the next unread byte.
    pub(crate) fn offset(&self) -> u64 {
        self.consumed + self.start as u64
    }

    /// The next line without its end-of-line bytes (`\n`, `\r\n`) and its 1-based number, or
    /// `None` at the end.
    pub(crate) fn next_line(&mut self) -> Result<Option<(u64, &str)>, ImportError> {
        loop {
            if let Some(p) = self.buf[self.start..self.end]
                .iter()
                .position(|&b| b == b'\n')
            {
                let (a, z) = (self.start, self.start + p);
                self.start = z + 1;
                return self.finish(a, z).map(Some);
            }
            if self.eof {
                if self.start == self.end {
                    return Ok(None);
                }
                let (a, z) = (self.start, self.end);
                self.start = self.end;
                return self.finish(a, z).map(Some);
            }
            self.refill()?;
        }
    }

    fn finish(&mut self, a: usize, mut z: usize) -> Result<(u64, &str), ImportError> {
        self.line += 1;
        if z > a && self.buf[z - 1] == b'\r' {
            z -= 1;
        }
        match std::str::from_utf8(&self.buf[a..z]) {
            Ok(line) => Ok((self.line, line)),
            Err(e) => Err(ImportError::Binary {
                file: self.file.clone(),
                offset: self.consumed + (a + e.valid_up_to()) as u64,
                expected: "UTF-8 text".into(),
                found: format!("a byte sequence that is not UTF-8 (line {})", self.line),
            }),
        }
    }

    /// Moves the unread bytes to the front and reads more.
    fn refill(&mut self) -> Result<(), ImportError> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.consumed += self.start as u64;
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            if self.buf.len() >= MAX_LINE + BUF {
                return Err(ImportError::syntax(
                    &self.file,
                    self.line + 1,
                    format!("a line of at most {MAX_LINE} bytes"),
                    "a longer line",
                ));
            }
            self.buf.resize(self.buf.len() + BUF, 0);
        }
        loop {
            match self.r.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(ImportError::Io {
                        path: self.file.clone().into(),
                        source,
                    });
                }
            }
        }
    }
}

/// Splits `line` at ASCII whitespace into `out`; returns how many tokens there are (tokens
/// beyond `out.len()` are counted but not stored).
pub(crate) fn tokens<'a>(line: &'a [u8], out: &mut [&'a [u8]]) -> usize {
    let mut n = 0;
    let mut i = 0;
    let len = line.len();
    while i < len {
        while i < len && line[i].is_ascii_whitespace() {
            i += 1;
        }
        if i == len {
            break;
        }
        let a = i;
        while i < len && !line[i].is_ascii_whitespace() {
            i += 1;
        }
        if n < out.len() {
            out[n] = &line[a..i];
        }
        n += 1;
    }
    n
}

/// A decimal `u64` with an optional leading `+` (what `str::parse::<u64>` accepts).
#[inline]
pub(crate) fn parse_u64(t: &[u8]) -> Option<u64> {
    let t = t.strip_prefix(b"+").unwrap_or(t);
    if t.is_empty() || t.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in t {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(d as u64)?;
    }
    Some(v)
}

/// A decimal `i64` with an optional leading `-` or `+`.
#[inline]
pub(crate) fn parse_i64(t: &[u8]) -> Option<i64> {
    match t.first() {
        Some(b'-') => {
            let rest = &t[1..];
            if rest.first() == Some(&b'+') {
                return None;
            }
            let v = parse_u64(rest)?;
            if v == 1 << 63 {
                Some(i64::MIN)
            } else {
                i64::try_from(v).ok().map(|v| -v)
            }
        }
        _ => i64::try_from(parse_u64(t)?).ok(),
    }
}

/// The token as text for an error message (control characters escaped: never echoed raw).
pub(crate) fn show(t: &[u8]) -> String {
    String::from_utf8_lossy(t)
        .chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_across_buffer_refills_and_carriage_returns() {
        let mut text = Vec::new();
        for i in 0..100_000 {
            text.extend_from_slice(format!("line {i}\r\n").as_bytes());
        }
        text.extend_from_slice(b"last without newline");
        let mut l = Lines::new(&text[..], "t".into());
        let mut n = 0;
        while let Some((_, line)) = l.next_line().unwrap() {
            if n < 100_000 {
                assert_eq!(line, format!("line {n}"));
            } else {
                assert_eq!(line, "last without newline");
            }
            n += 1;
        }
        assert_eq!(n, 100_001);
        assert_eq!(l.line, 100_001);
        let bad = b"ok\nbad \xff\xfe\n";
        let mut l = Lines::new(&bad[..], "b".into());
        l.next_line().unwrap();
        let e = l.next_line().unwrap_err().to_string();
        assert!(e.contains("byte offset 7") && e.contains("line 2"), "{e}");
    }

    #[test]
    fn tokens_and_numbers() {
        let mut t = [&b""[..]; 4];
        assert_eq!(tokens(b"  a bb\tccc  ", &mut t), 3);
        assert_eq!((t[0], t[1], t[2]), (&b"a"[..], &b"bb"[..], &b"ccc"[..]));
        assert_eq!(tokens(b"1 2 3 4 5 6", &mut t), 6);
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"12a"), None);
        assert_eq!(parse_u64(b""), None);
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"-1"), Some(-1));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
    }
}
