//! A trace file read line by line, whole or gzip-compressed (told by its
//! first two bytes), in bounded memory: a line longer than
//! [`MAX_LINE`] bytes is skipped as not an event line, and bytes that are
//! not UTF-8 are replaced, never refused.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::TraceError;

/// The longest line read as a possible event [bytes].
pub const MAX_LINE: usize = 64 * 1024;

/// The lines of one trace file.
pub struct Lines {
    reader: Box<dyn BufRead>,
    buf: Vec<u8>,
    /// Lines read so far.
    pub number: u64,
    /// Whether the last line read ended without a newline (a file cut
    /// short while it was written).
    pub unterminated: bool,
    path: String,
}

impl Lines {
    /// Opens `path`: a regular file, since the trace is read twice (a pipe
    /// would give its lines once; a FIFO blocks in the open, a device
    /// never ends).
    pub fn open(path: &Path) -> Result<Lines, TraceError> {
        let name = path.display().to_string();
        let io = |e: std::io::Error| TraceError::Read {
            path: name.clone(),
            why: e.to_string(),
        };
        if !std::fs::metadata(path).map_err(io)?.is_file() {
            return Err(TraceError::Read {
                path: name,
                why: "not a regular file: kicklab trace reads the file twice, so save the trace \
                      to a file first (perf script --ns > FILE)"
                    .into(),
            });
        }
        let mut file = BufReader::with_capacity(1 << 20, File::open(path).map_err(io)?);
        let gzip = file.fill_buf().map_err(io)?.starts_with(&[0x1f, 0x8b]);
        let reader: Box<dyn BufRead> = if gzip {
            Box::new(BufReader::with_capacity(
                1 << 20,
                flate2::bufread::MultiGzDecoder::new(file),
            ))
        } else {
            Box::new(file)
        };
        Ok(Lines {
            reader,
            buf: Vec::with_capacity(256),
            number: 0,
            unterminated: false,
            path: name,
        })
    }

    /// The next line (`None` at the end); a line too long to be an event
    /// comes back empty.
    pub fn next_line(&mut self) -> Result<Option<std::borrow::Cow<'_, str>>, TraceError> {
        self.buf.clear();
        let limit = u64::try_from(MAX_LINE).unwrap_or(u64::MAX) + 1;
        let n = (&mut self.reader)
            .take(limit)
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| self.error(&e))?;
        if n == 0 {
            return Ok(None);
        }
        self.number += 1;
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
        } else if self.buf.len() > MAX_LINE {
            self.skip_rest()?;
            self.buf.clear();
        } else {
            self.unterminated = true;
        }
        Ok(Some(String::from_utf8_lossy(&self.buf)))
    }

    fn skip_rest(&mut self) -> Result<(), TraceError> {
        loop {
            let chunk = match self.reader.fill_buf() {
                Ok(chunk) => chunk,
                Err(e) => {
                    return Err(TraceError::Read {
                        path: self.path.clone(),
                        why: format!("line {}: {e}", self.number),
                    })
                }
            };
            if chunk.is_empty() {
                return Ok(());
            }
            match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    self.reader.consume(i + 1);
                    return Ok(());
                }
                None => {
                    let n = chunk.len();
                    self.reader.consume(n);
                }
            }
        }
    }

    fn error(&self, e: &std::io::Error) -> TraceError {
        TraceError::Read {
            path: self.path.clone(),
            why: format!("line {}: {e}", self.number + 1),
        }
    }
}
