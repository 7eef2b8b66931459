//! The Copilot `Content-Length` framer (`agenthost_provider_copilot::FrameDecoder`), fed
//! arbitrary byte chunks. Input: `[header limit][body limit: 2 bytes][mode]` then chunks, each
//! `[len][len bytes]`.
//!
//! Invariants: never panics; no body is longer than the configured bound; an error is final
//! (every later call returns the same error, whatever is pushed); the frames and the final
//! state do not depend on how the stream was split into reads; in the encode mode every chunk,
//! framed with `encode`, comes back byte for byte.
#![no_main]

use agenthost_provider_copilot::{FrameDecoder, FrameError, encode};
use libfuzzer_sys::fuzz_target;

/// Drains every complete frame; the final state is `None` (waiting) or the error.
fn drain(
    decoder: &mut FrameDecoder,
    max_body: usize,
    frames: &mut Vec<Vec<u8>>,
) -> Option<FrameError> {
    loop {
        match decoder.next_frame() {
            Ok(Some(body)) => {
                assert!(body.len() <= max_body, "{} > {max_body}", body.len());
                frames.push(body);
            }
            Ok(None) => return None,
            Err(error) => {
                // Final: the same error again, even after more bytes.
                decoder.push(b"Content-Length: 0\r\n\r\n");
                assert_eq!(decoder.next_frame(), Err(error.clone()));
                return Some(error);
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let [header, body_hi, body_lo, mode, rest @ ..] = data else {
        return;
    };
    // Small limits reach the bounds; the driver's are 8 KiB / several MiB.
    let max_header = usize::from(*header) + 1;
    let max_body = usize::from(u16::from_be_bytes([*body_hi, *body_lo]));
    let mut chunks = Vec::new();
    let mut rest = rest;
    while let [len, tail @ ..] = rest {
        let len = usize::from(*len).min(tail.len());
        chunks.push(&tail[..len]);
        rest = &tail[len..];
    }

    let encode_mode = mode & 1 == 1;
    let stream: Vec<Vec<u8>> = if encode_mode {
        chunks.iter().map(|chunk| encode(chunk)).collect()
    } else {
        chunks.iter().map(|chunk| chunk.to_vec()).collect()
    };

    // Chunk by chunk, draining after each read as the driver does.
    let mut chunked = FrameDecoder::new(max_header, max_body);
    let mut frames = Vec::new();
    let mut state = None;
    for piece in &stream {
        chunked.push(piece);
        state = drain(&mut chunked, max_body, &mut frames);
        if state.is_some() {
            break;
        }
    }
    if stream.is_empty() {
        state = drain(&mut chunked, max_body, &mut frames);
    }

    // The same bytes in one read.
    let whole: Vec<u8> = stream.concat();
    let mut at_once = FrameDecoder::new(max_header, max_body);
    at_once.push(&whole);
    let mut frames_at_once = Vec::new();
    let state_at_once = drain(&mut at_once, max_body, &mut frames_at_once);
    assert_eq!(
        frames, frames_at_once,
        "frames depend on the read boundaries"
    );
    assert_eq!(
        state, state_at_once,
        "the outcome depends on the read boundaries"
    );

    if encode_mode {
        // Encoded chunks come back intact up to the first that breaks a limit, which is refused.
        let fitting = chunks
            .iter()
            .take_while(|chunk| {
                let header_len = encode(chunk).len() - chunk.len();
                chunk.len() <= max_body && header_len <= max_header
            })
            .count();
        assert_eq!(frames, &chunks[..fitting]);
        assert_eq!(state.is_some(), fitting < chunks.len(), "{state:?}");
    }
});
