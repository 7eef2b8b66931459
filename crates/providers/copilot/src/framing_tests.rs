use proptest::prelude::*;

use super::*;

fn decoder() -> FrameDecoder {
    FrameDecoder::new(1024, 1 << 20)
}

/// Every frame the decoder hands out until it needs more bytes.
fn drain(decoder: &mut FrameDecoder) -> Result<Vec<Vec<u8>>, FrameError> {
    let mut frames = Vec::new();
    while let Some(frame) = decoder.next_frame()? {
        frames.push(frame);
    }
    Ok(frames)
}

#[test]
fn encode_writes_the_length_header_then_the_body() {
    assert_eq!(encode(b"{}"), b"Content-Length: 2\r\n\r\n{}".to_vec());
    assert_eq!(encode(b""), b"Content-Length: 0\r\n\r\n".to_vec());
    // The length counts bytes, not characters.
    assert_eq!(
        encode("é".as_bytes()),
        b"Content-Length: 2\r\n\r\n\xc3\xa9".to_vec()
    );
}

#[test]
fn several_frames_in_one_push_come_out_in_order() {
    let mut decoder = decoder();
    let mut bytes = encode(br#"{"a":1}"#);
    bytes.extend(encode(b""));
    bytes.extend(encode(br#"{"b":2}"#));
    decoder.push(&bytes);
    assert_eq!(
        drain(&mut decoder).unwrap(),
        vec![br#"{"a":1}"#.to_vec(), Vec::new(), br#"{"b":2}"#.to_vec()]
    );
    assert_eq!(decoder.next_frame(), Ok(None));
}

#[test]
fn a_frame_split_across_pushes_waits_for_its_last_byte() {
    let mut decoder = decoder();
    let bytes = encode(br#"{"jsonrpc":"2.0"}"#);
    for byte in &bytes[..bytes.len() - 1] {
        decoder.push(std::slice::from_ref(byte));
        assert_eq!(decoder.next_frame(), Ok(None));
    }
    decoder.push(&bytes[bytes.len() - 1..]);
    assert_eq!(
        decoder.next_frame(),
        Ok(Some(br#"{"jsonrpc":"2.0"}"#.to_vec()))
    );
}

#[test]
fn other_headers_and_any_header_case_are_tolerated() {
    let mut decoder = decoder();
    decoder.push(
        b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\ncontent-LENGTH:  3 \r\n\r\nabc",
    );
    assert_eq!(decoder.next_frame(), Ok(Some(b"abc".to_vec())));
}

#[test]
fn a_missing_or_non_numeric_length_is_an_error() {
    let cases: [(&[u8], FrameError); 5] = [
        (
            b"Content-Type: x\r\n\r\n{}",
            FrameError::MissingContentLength,
        ),
        (
            b"Content-Length: two\r\n\r\n{}",
            FrameError::InvalidContentLength {
                value: "two".into(),
            },
        ),
        (
            b"Content-Length: -2\r\n\r\n{}",
            FrameError::InvalidContentLength { value: "-2".into() },
        ),
        (
            b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
            FrameError::InvalidContentLength { value: "3".into() },
        ),
        (
            b"garbage\r\n\r\n{}",
            FrameError::MalformedHeader {
                line: "garbage".into(),
            },
        ),
    ];
    for (bytes, expected) in cases {
        let mut decoder = decoder();
        decoder.push(bytes);
        assert_eq!(decoder.next_frame(), Err(expected.clone()));
        // Not trusted again, whatever comes next.
        decoder.push(&encode(b"{}"));
        assert_eq!(decoder.next_frame(), Err(expected));
    }
}

#[test]
fn a_header_that_is_not_text_is_an_error() {
    let mut decoder = decoder();
    decoder.push(b"Content-Length: 2\xff\r\n\r\n{}");
    assert_eq!(decoder.next_frame(), Err(FrameError::HeaderNotText));
}

#[test]
fn oversized_headers_and_bodies_are_refused_before_they_are_buffered() {
    let mut decoder = FrameDecoder::new(32, 8);
    decoder.push(&[b'x'; 31]);
    assert_eq!(decoder.next_frame(), Ok(None));
    decoder.push(b"x");
    assert_eq!(
        decoder.next_frame(),
        Err(FrameError::HeaderTooLarge { max: 32 })
    );

    let mut decoder = FrameDecoder::new(32, 8);
    decoder.push(b"Content-Length: 9\r\n\r\n");
    assert_eq!(
        decoder.next_frame(),
        Err(FrameError::BodyTooLarge { length: 9, max: 8 })
    );
    let error = FrameError::BodyTooLarge { length: 9, max: 8 };
    assert_eq!(
        error.to_string(),
        "a frame body of 9 bytes exceeds the limit of 8 bytes"
    );

    // Exactly at the limits is fine.
    let mut decoder = FrameDecoder::new(21, 8);
    decoder.push(&encode(b"12345678"));
    assert_eq!(decoder.next_frame(), Ok(Some(b"12345678".to_vec())));
}

#[test]
fn the_buffer_does_not_keep_consumed_frames() {
    let mut decoder = decoder();
    for _ in 0..1000 {
        decoder.push(&encode(&[b'a'; 100]));
        assert_eq!(decoder.next_frame().unwrap().unwrap().len(), 100);
    }
    assert!(decoder.buffer.len() < 1000, "{}", decoder.buffer.len());
}

proptest! {
    #[test]
    fn any_split_of_a_valid_stream_decodes_to_the_same_frames(
        bodies in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 0..8),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let stream: Vec<u8> = bodies.iter().flat_map(|body| encode(body)).collect();
        let mut points: Vec<usize> = cuts.iter().map(|cut| cut.index(stream.len() + 1)).collect();
        points.push(0);
        points.push(stream.len());
        points.sort_unstable();
        let mut decoder = FrameDecoder::new(64, 64);
        let mut frames = Vec::new();
        for pair in points.windows(2) {
            decoder.push(&stream[pair[0]..pair[1]]);
            frames.extend(drain(&mut decoder).unwrap());
        }
        prop_assert_eq!(frames, bodies);
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        chunks in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 0..8),
        prefix in prop::option::of("Content-Length: [0-9]{0,3}\r\n(\r\n)?"),
    ) {
        let mut decoder = FrameDecoder::new(48, 32);
        if let Some(prefix) = prefix {
            decoder.push(prefix.as_bytes());
        }
        for chunk in chunks {
            decoder.push(&chunk);
            let _ = drain(&mut decoder);
        }
    }
}
