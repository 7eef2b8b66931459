//! Copilot's stdout as messages for the driver's reader: `Content-Length` framed JSON-RPC bodies, decoded with the wire crate's `FrameDecoder`.

use super::*;

/// Copilot's stdout as messages: `Content-Length` framed JSON-RPC bodies.
pub(super) struct Frames {
    stdout: ChildStdout,
    decoder: FrameDecoder,
    chunk: Vec<u8>,
    ready: VecDeque<String>,
    /// A framing error met after the frames in `ready`: reported once they are read.
    broken: Option<String>,
}

impl Frames {
    pub(super) fn new(stdout: ChildStdout) -> Self {
        Self {
            stdout,
            decoder: FrameDecoder::new(MAX_HEADER_BYTES, MAX_BODY_BYTES),
            chunk: vec![0u8; 64 * 1024],
            ready: VecDeque::new(),
            broken: None,
        }
    }
}

impl MessageSource for Frames {
    async fn next_message(&mut self) -> Result<Option<String>, SourceError> {
        loop {
            if let Some(body) = self.ready.pop_front() {
                return Ok(Some(body));
            }
            if let Some(error) = self.broken.take() {
                return Err(SourceError::Framing(error));
            }
            let n = self.stdout.read(&mut self.chunk).await?;
            if n == 0 {
                return Ok(None);
            }
            self.decoder.push(&self.chunk[..n]);
            loop {
                match self.decoder.next_frame() {
                    Ok(Some(body)) => self.ready.push_back(String::from_utf8_lossy(&body).into()),
                    Ok(None) => break,
                    Err(error) => {
                        self.broken = Some(error.to_string());
                        break;
                    }
                }
            }
        }
    }
}
