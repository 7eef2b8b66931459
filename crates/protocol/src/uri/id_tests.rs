use super::*;

#[test]
fn accepts_uuids_unicode_and_characters_uris_must_encode() {
    for id in [
        "3f2c8a4e-1b7d-4c9a-9e0f-2a6b8c4d1e7f",
        "a/b",
        "100% done?",
        "日本語 ✓",
        "...",
        "./x",
        "%2F",
    ] {
        assert_eq!(SafeId::new(id).map(SafeId::into_string), Ok(id.to_owned()));
    }
}

#[test]
fn rejects_empty() {
    assert_eq!(SafeId::new(""), Err(UriError::EmptyId));
}

#[test]
fn length_limit_is_1024_bytes_not_chars() {
    assert!(SafeId::new("a".repeat(1024)).is_ok());
    assert!(SafeId::new("é".repeat(512)).is_ok());
    let Err(UriError::IdTooLong { len, input }) = SafeId::new("é".repeat(513)) else {
        panic!("expected IdTooLong");
    };
    assert_eq!(len, 1026);
    assert_eq!(input, format!("{}…", "é".repeat(80)));
}

#[test]
fn rejects_every_control_character_with_its_position() {
    for control in ['\0', '\u{1}', '\n', '\u{1f}', '\u{7f}', '\u{80}', '\u{9f}'] {
        assert_eq!(
            SafeId::new(format!("ab{control}")),
            Err(UriError::ControlCharacter {
                position: 2,
                input: format!("ab{control}"),
            }),
            "{control:?}"
        );
    }
    assert!(
        SafeId::new("\u{a0}").is_ok(),
        "U+00A0 is not a control character"
    );
}

#[test]
fn rejects_dot_segments() {
    for id in [".", ".."] {
        assert_eq!(
            SafeId::new(id),
            Err(UriError::DotSegment {
                input: id.to_owned()
            })
        );
    }
}

#[test]
fn error_messages_quote_a_truncated_escaped_input() {
    let message = SafeId::new(format!("\0{}", "x".repeat(10_000)))
        .unwrap_err()
        .to_string();
    assert!(message.len() < 250, "{message}");
    assert!(message.contains(r#""\0xxx"#), "{message}");
}

#[test]
fn serde_is_a_validated_string() {
    let id = SafeId::new("a b").unwrap();
    assert_eq!(serde_json::to_string(&id).unwrap(), r#""a b""#);
    assert_eq!(serde_json::from_str::<SafeId>(r#""a b""#).unwrap(), id);
    assert!(serde_json::from_str::<SafeId>(r#"".."""#).is_err());
    assert!(serde_json::from_str::<SafeId>(r#""""#).is_err());
}

#[test]
fn compares_and_prints_as_the_plain_string() {
    let id: SafeId = "call-1".parse().unwrap();
    assert_eq!(id, "call-1");
    assert_eq!(id.to_string(), "call-1");
    assert_eq!(format!("{id:?}"), r#""call-1""#);
    assert_eq!(id.len(), 6);
}
