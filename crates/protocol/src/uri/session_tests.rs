use super::*;

fn id(id: &str) -> SafeId {
    SafeId::new(id).unwrap()
}

#[test]
fn parses_the_canonical_form() {
    let uri = SessionUri::parse("ahp-session:/3f2c8a4e-1b7d").unwrap();
    assert_eq!(uri.id(), "3f2c8a4e-1b7d");
    assert_eq!(uri.scheme(), "ahp-session");
    assert_eq!(uri.provider_scheme(), None);
    assert_eq!(uri.as_str(), "ahp-session:/3f2c8a4e-1b7d");
    assert_eq!(uri, SessionUri::canonical(id("3f2c8a4e-1b7d")));
}

#[test]
fn parses_the_vscode_provider_form() {
    let uri = SessionUri::parse("copilotcli:/3f2c8a4e-1b7d").unwrap();
    assert_eq!(uri.id(), "3f2c8a4e-1b7d");
    assert_eq!(uri.scheme(), "copilotcli");
    assert_eq!(uri.provider_scheme(), Some("copilotcli"));
    assert_eq!(
        uri,
        SessionUri::with_provider("copilotcli", id("3f2c8a4e-1b7d")).unwrap()
    );
    assert!(SessionUri::parse("claude-code.v2+x:/s").is_ok());
}

#[test]
fn formatting_encodes_everything_outside_unreserved() {
    let uri = SessionUri::canonical(id("a/b %:?#é~._-Z9"));
    assert_eq!(
        uri.as_str(),
        "ahp-session:/a%2Fb%20%25%3A%3F%23%C3%A9~._-Z9"
    );
    assert_eq!(SessionUri::parse(uri.as_str()).unwrap(), uri);
}

#[test]
fn annotations_uri_appends_a_segment() {
    let uri = SessionUri::with_provider("copilotcli", id("s/1")).unwrap();
    assert_eq!(uri.annotations_uri(), "copilotcli:/s%2F1/annotations");
}

#[test]
fn missing_or_malformed_scheme() {
    for input in [
        "",
        "no-scheme",
        ":/x",
        "1abc:/x",
        "a b:/x",
        "/ahp-session:/x",
    ] {
        assert_eq!(
            SessionUri::parse(input),
            Err(UriError::MissingScheme {
                input: input.to_owned()
            }),
            "{input:?}"
        );
    }
}

#[test]
fn provider_scheme_must_be_lowercase_and_short() {
    let long = format!("{}:/x", "a".repeat(65));
    for input in ["Copilot:/x", "AHP-SESSION:/x", long.as_str()] {
        assert!(
            matches!(
                SessionUri::parse(input),
                Err(UriError::InvalidProviderScheme { .. })
            ),
            "{input:?}"
        );
    }
    assert!(SessionUri::parse(&format!("{}:/x", "a".repeat(64))).is_ok());
    assert!(matches!(
        SessionUri::with_provider("Bad", id("x")),
        Err(UriError::InvalidProviderScheme { .. })
    ));
}

#[test]
fn reserved_schemes_are_not_providers() {
    for scheme in [
        "ahp-root",
        "ahp-chat",
        "ahp-terminal",
        "ahp-changeset",
        "ahp-resource-watch",
        "ahp-otlp",
        "ahp-future",
        "mcp",
        "x-canvas",
    ] {
        let expected = Err(UriError::ReservedScheme {
            scheme: scheme.to_owned(),
        });
        assert_eq!(SessionUri::parse(&format!("{scheme}:/x")), expected);
        assert_eq!(SessionUri::with_provider(scheme, id("x")), expected);
    }
    assert!(matches!(
        SessionUri::with_provider("ahp-session", id("x")),
        Err(UriError::ReservedScheme { .. })
    ));
}

#[test]
fn needs_exactly_one_path_segment() {
    for input in [
        "ahp-session:x",
        "ahp-session:",
        "ahp-session://x",
        "ahp-session:/a/b",
        "ahp-session:/a/annotations",
        "copilotcli:/a/",
    ] {
        assert_eq!(
            SessionUri::parse(input),
            Err(UriError::NotASessionUri {
                input: input.to_owned()
            }),
            "{input:?}"
        );
    }
}

#[test]
fn rejects_bad_percent_escapes() {
    for input in [
        "ahp-session:/%",
        "ahp-session:/a%2",
        "ahp-session:/%zz",
        "ahp-session:/%%41",
    ] {
        assert_eq!(
            SessionUri::parse(input),
            Err(UriError::InvalidPercentEncoding {
                input: input.to_owned()
            }),
            "{input:?}"
        );
    }
}

#[test]
fn rejects_ids_that_decode_to_invalid_utf8() {
    for input in [
        "ahp-session:/%FF",
        "ahp-session:/a%C3",
        "ahp-session:/%C0%AF",
    ] {
        assert_eq!(
            SessionUri::parse(input),
            Err(UriError::InvalidUtf8 {
                input: input.to_owned()
            }),
            "{input:?}"
        );
    }
}

#[test]
fn validates_the_decoded_id() {
    assert_eq!(SessionUri::parse("ahp-session:/"), Err(UriError::EmptyId));
    for input in ["ahp-session:/..", "ahp-session:/%2E%2E", "copilotcli:/."] {
        assert!(
            matches!(SessionUri::parse(input), Err(UriError::DotSegment { .. })),
            "{input:?}"
        );
    }
    assert_eq!(
        SessionUri::parse("ahp-session:/a%00"),
        Err(UriError::ControlCharacter {
            position: 1,
            input: "a\0".to_owned()
        })
    );
    assert!(matches!(
        SessionUri::parse("ahp-session:/a\nb"),
        Err(UriError::ControlCharacter { position: 1, .. })
    ));
    assert!(matches!(
        SessionUri::parse(&format!("ahp-session:/{}", "%41".repeat(1025))),
        Err(UriError::IdTooLong { len: 1025, .. })
    ));
}

#[test]
fn accepts_only_the_canonical_spelling() {
    for (input, canonical) in [
        ("ahp-session:/a@b", "ahp-session:/a%40b"),
        ("ahp-session:/a%2fb", "ahp-session:/a%2Fb"),
        ("ahp-session:/%41", "ahp-session:/A"),
        ("ahp-session:/é", "ahp-session:/%C3%A9"),
        ("copilotcli:/a b", "copilotcli:/a%20b"),
        ("copilotcli:/a?x", "copilotcli:/a%3Fx"),
    ] {
        assert_eq!(
            SessionUri::parse(input),
            Err(UriError::NonCanonicalEncoding {
                input: input.to_owned(),
                canonical: canonical.to_owned(),
            }),
            "{input:?}"
        );
        assert_eq!(SessionUri::parse(canonical).unwrap().as_str(), canonical);
    }
}

#[test]
fn rejects_huge_input_before_decoding_it() {
    let input = format!("ahp-session:/{}", "a".repeat(10_000));
    let Err(UriError::UriTooLong { len, input: quoted }) = SessionUri::parse(&input) else {
        panic!("expected UriTooLong");
    };
    assert_eq!(len, 10_013);
    assert_eq!(quoted.chars().count(), 81);
}

#[test]
fn serde_is_a_validated_string() {
    let uri = SessionUri::parse("copilotcli:/s1").unwrap();
    assert_eq!(serde_json::to_string(&uri).unwrap(), r#""copilotcli:/s1""#);
    assert_eq!(
        serde_json::from_str::<SessionUri>(r#""copilotcli:/s1""#).unwrap(),
        uri
    );
    let error = serde_json::from_str::<SessionUri>(r#""ahp-session:/a/b""#).unwrap_err();
    assert!(error.to_string().contains("not a session URI"), "{error}");
}

#[test]
fn display_from_str_and_debug() {
    let uri: SessionUri = "ahp-session:/s1".parse().unwrap();
    assert_eq!(uri.to_string(), "ahp-session:/s1");
    assert_eq!(format!("{uri:?}"), r#"SessionUri("ahp-session:/s1")"#);
    assert_eq!(String::from(uri), "ahp-session:/s1");
}

#[test]
fn the_two_spellings_of_one_session_are_the_same_session() {
    let canonical = SessionUri::parse("ahp-session:/abc").unwrap();
    let claude = SessionUri::parse("claude:/abc").unwrap();
    let codex = SessionUri::parse("codex:/abc").unwrap();
    let other = SessionUri::parse("claude:/abd").unwrap();
    assert!(canonical.same_session(&claude) && claude.same_session(&canonical));
    assert!(claude.same_session(&claude));
    assert!(
        !claude.same_session(&codex),
        "two providers never share a session"
    );
    assert!(!claude.same_session(&other));
    assert_eq!(canonical.respelled("claude").unwrap(), claude);
    assert_eq!(claude.respelled("ahp-session").unwrap(), canonical);
    assert!(claude.respelled("ahp-chat").is_err());
}
