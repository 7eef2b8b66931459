//! LSP-style framing of the headless wire: every message is
//! `Content-Length: <bytes>\r\n\r\n<json>`.
//!
//! [`FrameDecoder`] is fed whatever the pipe delivered ([`FrameDecoder::push`]) and hands out
//! whole frame bodies ([`FrameDecoder::next_frame`]): a frame may arrive in pieces and one read
//! may hold several frames. Header names are case-insensitive and headers other than
//! `Content-Length` (such as `Content-Type`) are tolerated. Both the header section and the
//! body are bounded, so a misbehaving CLI cannot make the host buffer without limit.
//!
//! **After an error the stream is not trusted again.** Once the framing is lost there is no
//! reliable way to find the start of the next frame, so every later call returns the same
//! error; the driver treats it as a broken process.

use std::fmt;

/// The header separator.
const SEPARATOR: &[u8] = b"\r\n\r\n";

/// Why the byte stream is not a valid sequence of frames.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// No `\r\n\r\n` within the allowed header size.
    #[error("a frame header is longer than {max} bytes (no blank line ends it)")]
    HeaderTooLarge {
        /// The limit.
        max: usize,
    },
    /// The header section is not UTF-8 text.
    #[error("a frame header is not text")]
    HeaderNotText,
    /// A header line without `name: value`.
    #[error("malformed frame header line {line:?}")]
    MalformedHeader {
        /// The line (shortened).
        line: String,
    },
    /// The header section has no `Content-Length`.
    #[error("a frame header has no Content-Length")]
    MissingContentLength,
    /// `Content-Length` is not a non-negative number (or two different ones were given).
    #[error("a frame's Content-Length is not a byte count: {value:?}")]
    InvalidContentLength {
        /// The value (shortened).
        value: String,
    },
    /// The announced body is larger than allowed.
    #[error("a frame body of {length} bytes exceeds the limit of {max} bytes")]
    BodyTooLarge {
        /// The announced length.
        length: usize,
        /// The limit.
        max: usize,
    },
}

/// Decodes `Content-Length` frames from a byte stream.
pub struct FrameDecoder {
    max_header_bytes: usize,
    max_body_bytes: usize,
    buffer: Vec<u8>,
    /// Where the unconsumed bytes of `buffer` start.
    start: usize,
    /// The body length of the frame whose header was read, while its body is incomplete.
    pending_body: Option<usize>,
    /// The first error: the stream is broken for good.
    failed: Option<FrameError>,
}

impl fmt::Debug for FrameDecoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameDecoder")
            .field("buffered", &(self.buffer.len() - self.start))
            .field("pending_body", &self.pending_body)
            .field("failed", &self.failed)
            .finish()
    }
}

impl FrameDecoder {
    /// A decoder refusing header sections longer than `max_header_bytes` (separator included)
    /// and bodies longer than `max_body_bytes`.
    pub fn new(max_header_bytes: usize, max_body_bytes: usize) -> Self {
        Self {
            max_header_bytes,
            max_body_bytes,
            buffer: Vec::new(),
            start: 0,
            pending_body: None,
            failed: None,
        }
    }

    /// Appends bytes read from the stream.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.failed.is_some() {
            return;
        }
        // Drop consumed bytes before growing, so the buffer holds at most one partial frame
        // plus what was just read.
        if self.start > 0 && self.start >= self.buffer.len() / 2 {
            self.buffer.drain(..self.start);
            self.start = 0;
        }
        self.buffer.extend_from_slice(bytes);
    }

    /// The next complete frame body, `Ok(None)` when more bytes are needed. An `Err` is final:
    /// every later call returns it again.
    pub fn next_frame(&mut self) -> Result<Option<Vec<u8>>, FrameError> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        match self.decode() {
            Ok(frame) => Ok(frame),
            Err(error) => {
                self.failed = Some(error.clone());
                self.buffer = Vec::new();
                self.start = 0;
                Err(error)
            }
        }
    }

    fn decode(&mut self) -> Result<Option<Vec<u8>>, FrameError> {
        let length = match self.pending_body {
            Some(length) => length,
            None => {
                let Some(length) = self.header()? else {
                    return Ok(None);
                };
                self.pending_body = Some(length);
                length
            }
        };
        let available = &self.buffer[self.start..];
        if available.len() < length {
            return Ok(None);
        }
        let body = available[..length].to_vec();
        self.start += length;
        self.pending_body = None;
        Ok(Some(body))
    }

    /// Reads one header section: the body length, or `None` while it is incomplete.
    fn header(&mut self) -> Result<Option<usize>, FrameError> {
        let available = &self.buffer[self.start..];
        let window = available.len().min(self.max_header_bytes);
        let Some(end) = find(&available[..window], SEPARATOR) else {
            if available.len() >= self.max_header_bytes {
                return Err(FrameError::HeaderTooLarge {
                    max: self.max_header_bytes,
                });
            }
            return Ok(None);
        };
        let text = std::str::from_utf8(&available[..end]).map_err(|_| FrameError::HeaderNotText)?;
        let length = content_length(text)?;
        if length > self.max_body_bytes {
            return Err(FrameError::BodyTooLarge {
                length,
                max: self.max_body_bytes,
            });
        }
        self.start += end + SEPARATOR.len();
        Ok(Some(length))
    }
}

/// The `Content-Length` of a header section (lines separated by `\r\n`).
fn content_length(header: &str) -> Result<usize, FrameError> {
    let mut length: Option<usize> = None;
    for line in header.split("\r\n") {
        let Some((name, value)) = line.split_once(':') else {
            return Err(FrameError::MalformedHeader {
                line: shorten(line),
            });
        };
        if !name.trim().eq_ignore_ascii_case("content-length") {
            continue;
        }
        let value = value.trim();
        let invalid = || FrameError::InvalidContentLength {
            value: shorten(value),
        };
        if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid());
        }
        let parsed: usize = value.parse().map_err(|_| invalid())?;
        match length {
            Some(previous) if previous != parsed => return Err(invalid()),
            _ => length = Some(parsed),
        }
    }
    length.ok_or(FrameError::MissingContentLength)
}

fn shorten(text: &str) -> String {
    const MAX: usize = 80;
    let mut short: String = text.chars().take(MAX).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// One frame: `Content-Length: <len>\r\n\r\n` followed by `body`.
pub fn encode(body: &[u8]) -> Vec<u8> {
    let header = format!("Content-Length: {}\r\n\r\n", body.len());
    let mut frame = Vec::with_capacity(header.len() + body.len());
    frame.extend_from_slice(header.as_bytes());
    frame.extend_from_slice(body);
    frame
}

#[cfg(test)]
#[path = "framing_tests.rs"]
mod tests;
