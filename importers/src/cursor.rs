//! A bounds-checked little-endian reader over a byte slice that reports offsets in errors.

use crate::ImportError;

/// Reads fixed-size little-endian values; every read names what it expected.
#[derive(Debug)]
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    file: &'a str,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(buf: &'a [u8], file: &'a str) -> Self {
        Cursor { buf, pos: 0, file }
    }
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }
    pub(crate) fn seek(&mut self, pos: usize, what: &str) -> Result<(), ImportError> {
        if pos > self.buf.len() {
            return Err(self.error_at(
                self.pos,
                format!("{what} at offset {pos} inside the file"),
                format!("the file has only {} bytes", self.buf.len()),
            ));
        }
        self.pos = pos;
        Ok(())
    }
    pub(crate) fn error_at(
        &self,
        offset: usize,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> ImportError {
        ImportError::Binary {
            file: self.file.to_string(),
            offset: offset as u64,
            expected: expected.into(),
            found: found.into(),
        }
    }
    pub(crate) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], ImportError> {
        match self.pos.checked_add(n).filter(|&e| e <= self.buf.len()) {
            Some(end) => {
                let s = &self.buf[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(self.error_at(
                self.pos,
                format!("{what} ({n} bytes)"),
                format!("end of file after {} bytes", self.buf.len() - self.pos),
            )),
        }
    }
    pub(crate) fn u8(&mut self, what: &str) -> Result<u8, ImportError> {
        Ok(self.take(1, what)?[0])
    }
    pub(crate) fn u16(&mut self, what: &str) -> Result<u16, ImportError> {
        let b = self.take(2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    pub(crate) fn i16(&mut self, what: &str) -> Result<i16, ImportError> {
        Ok(self.u16(what)? as i16)
    }
    pub(crate) fn i32(&mut self, what: &str) -> Result<i32, ImportError> {
        let b = self.take(4, what)?;
        Ok(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub(crate) fn u32(&mut self, what: &str) -> Result<u32, ImportError> {
        Ok(self.i32(what)? as u32)
    }
    pub(crate) fn f64(&mut self, what: &str) -> Result<f64, ImportError> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(f64::from_le_bytes(a))
    }
    /// A count that must be in `0..=max` (guards allocation against garbage).
    pub(crate) fn count(&mut self, what: &str, max: usize) -> Result<usize, ImportError> {
        let at = self.pos;
        let n = self.i32(what)?;
        if n < 0 || n as usize > max {
            return Err(self.error_at(
                at,
                format!("{what} (a count from 0 to {max})"),
                format!("{n}"),
            ));
        }
        Ok(n as usize)
    }
}
