//! Property tests for the URI vocabulary: every id round-trips through every URI form, and no
//! hostile input panics or decodes to an id other than the one its string spells.

use agenthost_protocol::{Channel, ChatUri, SafeId, SessionUri, UriError};
use proptest::prelude::*;

/// Characters URIs must encode or that are easy to mishandle, mixed with arbitrary ones.
fn tricky_char() -> impl Strategy<Value = char> {
    prop_oneof![
        any::<char>(),
        prop::sample::select(vec![
            '/',
            '%',
            ':',
            '?',
            '#',
            '@',
            '+',
            ' ',
            '.',
            '~',
            '-',
            '_',
            'A',
            'z',
            '0',
            'é',
            '日',
            '\u{10FFFF}',
            '\u{A0}',
            '\u{2028}',
            '\u{FEFF}',
        ]),
    ]
}

/// Arbitrary Unicode ids that pass validation.
fn safe_id() -> impl Strategy<Value = SafeId> {
    prop_oneof![
        any::<String>(),
        prop::collection::vec(tricky_char(), 1..40).prop_map(String::from_iter),
    ]
    .prop_filter_map("id must pass validation", |raw| SafeId::new(raw).ok())
}

fn provider_scheme() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9+.-]{0,20}".prop_filter("reserved scheme", |scheme| {
        !(scheme.starts_with("ahp-") || scheme.starts_with("x-") || scheme == "mcp")
    })
}

fn session_uri() -> impl Strategy<Value = SessionUri> {
    prop_oneof![
        safe_id().prop_map(SessionUri::canonical),
        (provider_scheme(), safe_id()).prop_filter_map("valid provider", |(scheme, id)| {
            SessionUri::with_provider(&scheme, id).ok()
        }),
    ]
}

/// Fragments of hostile URI text: broken escapes, encoded NUL / slash / dots, raw controls.
fn hostile_text() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        prop::sample::select(vec![
            "%",
            "%%",
            "%2",
            "%2F",
            "%2f",
            "%00",
            "%0A",
            "%7F",
            "%C2%85",
            "%FF",
            "%C3%A9",
            "%E2%82",
            "%G1",
            "%3D",
            "=",
            "..",
            ".",
            "/",
            "../../etc",
            "\0",
            "\n",
            "\u{7F}",
            "\u{9F}",
            " ",
            "a",
            "é",
            "annotations",
        ])
        .prop_map(str::to_owned),
        "[0-9A-Fa-f]{1,2}",
        "[A-Za-z0-9_-]{1,8}",
        any::<char>().prop_map(String::from),
    ];
    prop::collection::vec(fragment, 0..16).prop_map(|parts| parts.concat())
}

/// The base64url payload of a valid session's default chat, to pair with hostile suffixes.
fn valid_payload() -> impl Strategy<Value = String> {
    session_uri().prop_map(|session| {
        let chat = ChatUri::default_for(&session);
        chat.as_str()
            .strip_prefix("ahp-chat://default/")
            .unwrap_or_default()
            .to_owned()
    })
}

/// When `input` parses as a session URI, it is the one canonical spelling of its id.
fn assert_unique_spelling(input: &str, uri: &SessionUri) -> Result<(), TestCaseError> {
    prop_assert_eq!(uri.as_str(), input);
    let rebuilt = match uri.provider_scheme() {
        None => SessionUri::canonical(uri.id().clone()),
        Some(provider) => SessionUri::with_provider(provider, uri.id().clone())
            .map_err(|error| TestCaseError::fail(error.to_string()))?,
    };
    prop_assert_eq!(&rebuilt, uri);
    Ok(())
}

proptest! {
    #[test]
    fn session_uris_round_trip(uri in session_uri()) {
        let parsed = SessionUri::parse(uri.as_str());
        prop_assert_eq!(parsed.as_ref(), Ok(&uri));
        let json = serde_json::to_string(&uri).unwrap();
        prop_assert_eq!(serde_json::from_str::<SessionUri>(&json).unwrap(), uri.clone());
        prop_assert_eq!(Channel::parse(uri.as_str()), Ok(Channel::Session(uri.clone())));
        prop_assert_eq!(
            Channel::parse(&uri.annotations_uri()),
            Ok(Channel::Annotations(uri.clone()))
        );
    }

    #[test]
    fn session_ids_survive_formatting(id in safe_id(), provider in provider_scheme()) {
        let canonical = SessionUri::canonical(id.clone());
        prop_assert_eq!(SessionUri::parse(canonical.as_str()).unwrap().id().clone(), id.clone());
        let vscode = SessionUri::with_provider(&provider, id.clone()).unwrap();
        let parsed = SessionUri::parse(vscode.as_str()).unwrap();
        prop_assert_eq!(parsed.id(), &id);
        prop_assert_eq!(parsed.provider_scheme(), Some(provider.as_str()));
    }

    #[test]
    fn canonical_chat_uris_parse(id in safe_id()) {
        let chat = ChatUri::canonical(&id);
        prop_assert_eq!(ChatUri::parse(chat.as_str()), Ok(chat.clone()));
        prop_assert_eq!(Channel::parse(chat.as_str()), Ok(Channel::Chat(chat.clone())));
        prop_assert_eq!(chat.default_chat_session(), Ok(None));
        prop_assert_eq!(chat.subagent_parent(), Ok(None));
    }

    #[test]
    fn default_chat_round_trips(session in session_uri()) {
        let chat = ChatUri::default_for(&session);
        let reparsed = ChatUri::parse(chat.as_str()).unwrap();
        prop_assert_eq!(&reparsed, &chat);
        prop_assert_eq!(reparsed.default_chat_session(), Ok(Some(session.clone())));
        prop_assert_eq!(reparsed.subagent_parent(), Ok(None));
        prop_assert_eq!(Channel::parse(chat.as_str()), Ok(Channel::Chat(chat.clone())));
        for padding in ["=", "==", "%3D", "%3D%3D"] {
            let padded = ChatUri::parse(&format!("{chat}{padding}")).unwrap();
            // A pad the payload length does not call for is tolerated, never misread.
            let decoded = padded.default_chat_session();
            prop_assert!(
                decoded == Ok(Some(session.clone())) || decoded.is_err(),
                "{padded} gave {decoded:?}"
            );
        }
    }

    #[test]
    fn subagent_chat_round_trips(session in session_uri(), call in safe_id()) {
        let chat = ChatUri::subagent(&session, &call);
        let reparsed = ChatUri::parse(chat.as_str()).unwrap();
        prop_assert_eq!(&reparsed, &chat);
        prop_assert_eq!(reparsed.subagent_parent(), Ok(Some((session.clone(), call.clone()))));
        prop_assert_eq!(reparsed.default_chat_session(), Ok(None));
    }

    #[test]
    fn arbitrary_ids_validate_or_round_trip_exactly(raw in any::<String>()) {
        if let Ok(id) = SafeId::new(raw.clone()) {
            prop_assert_eq!(id.as_str(), raw.as_str());
            let uri = SessionUri::canonical(id);
            let parsed = SessionUri::parse(uri.as_str()).unwrap();
            prop_assert_eq!(parsed.id().as_str(), raw.as_str());
        }
    }

    #[test]
    fn hostile_session_paths_error_or_keep_their_only_spelling(
        path in hostile_text(),
        scheme in prop::sample::select(vec!["ahp-session", "copilotcli"]),
    ) {
        let input = format!("{scheme}:/{path}");
        if let Ok(uri) = SessionUri::parse(&input) {
            assert_unique_spelling(&input, &uri)?;
            prop_assert_eq!(Channel::parse(&input), Ok(Channel::Session(uri)));
        }
        if let Ok(Channel::Annotations(uri)) = Channel::parse(&input) {
            prop_assert_eq!(uri.annotations_uri(), input);
        }
    }

    #[test]
    fn arbitrary_strings_never_panic(input in prop_oneof![any::<String>(), hostile_text()]) {
        if let Ok(uri) = SessionUri::parse(&input) {
            assert_unique_spelling(&input, &uri)?;
        }
        if let Ok(chat) = ChatUri::parse(&input) {
            prop_assert_eq!(chat.as_str(), input.as_str());
            let _ = chat.default_chat_session();
            let _ = chat.subagent_parent();
        }
        if let Ok(channel) = Channel::parse(&input) {
            prop_assert_eq!(channel.to_string(), input);
        }
    }

    #[test]
    fn hostile_derived_chat_payloads_error_or_decode_validly(
        payload in prop_oneof![hostile_text(), valid_payload()],
        call in hostile_text(),
    ) {
        if let Ok(chat) = ChatUri::parse(&format!("ahp-chat://default/{payload}")) {
            match chat.default_chat_session() {
                Ok(Some(session)) => {
                    // Base64 has one spelling per byte string, up to padding: no other session
                    // could have produced this chat URI.
                    let unpadded = chat.as_str().replace("%3D", "").replace("%3d", "");
                    let unpadded = unpadded.trim_end_matches('=');
                    let derived = ChatUri::default_for(&session);
                    prop_assert_eq!(derived.as_str(), unpadded);
                }
                Ok(None) => prop_assert!(false, "a default-chat URI decoded to None"),
                Err(_) => {}
            }
        }
        if let Ok(chat) = ChatUri::parse(&format!("ahp-chat://subagent/{payload}/{call}")) {
            match chat.subagent_parent() {
                Ok(Some((session, id))) => {
                    prop_assert_eq!(ChatUri::subagent(&session, &id), chat);
                }
                Ok(None) => prop_assert!(false, "a subagent URI decoded to None"),
                Err(_) => {}
            }
        }
    }
}

#[test]
fn named_hostile_ids_are_rejected_or_round_trip() {
    let ten_kb = "a".repeat(10 * 1024);
    for raw in [
        "..",
        ".",
        "/",
        "../../etc",
        "\0",
        "a\u{1}b",
        "\u{7f}",
        "\u{9f}",
        &ten_kb,
        "%2F",
        "%00",
        "%",
        "%zz",
        "é/..",
    ] {
        match SafeId::new(raw) {
            Ok(id) => {
                for uri in [
                    SessionUri::canonical(id.clone()),
                    SessionUri::with_provider("copilotcli", id.clone()).unwrap(),
                ] {
                    assert_eq!(SessionUri::parse(uri.as_str()).unwrap().id().as_str(), raw);
                }
                let chat = ChatUri::subagent(&SessionUri::canonical(id.clone()), &id);
                let (_, call) = chat.subagent_parent().unwrap().unwrap();
                assert_eq!(call.as_str(), raw);
            }
            Err(error) => assert!(error.to_string().len() < 300, "{error}"),
        }
    }
}

/// Whether an error is the variant a case expects.
type IsExpected = fn(&UriError) -> bool;

#[test]
fn named_hostile_uris_give_the_expected_error() {
    let ten_kb = format!("ahp-session:/{}", "a".repeat(10 * 1024));
    let cases: [(&str, IsExpected); 8] = [
        ("ahp-session:/..", |e| {
            matches!(e, UriError::DotSegment { .. })
        }),
        ("ahp-session:/%2E", |e| {
            matches!(e, UriError::DotSegment { .. })
        }),
        ("ahp-session:/../../etc", |e| {
            matches!(e, UriError::NotASessionUri { .. })
        }),
        ("ahp-session:/%00", |e| {
            matches!(e, UriError::ControlCharacter { .. })
        }),
        ("ahp-session:/%2", |e| {
            matches!(e, UriError::InvalidPercentEncoding { .. })
        }),
        ("ahp-session:/%FF", |e| {
            matches!(e, UriError::InvalidUtf8 { .. })
        }),
        ("ahp-session:/a%2fb", |e| {
            matches!(e, UriError::NonCanonicalEncoding { .. })
        }),
        (&ten_kb, |e| matches!(e, UriError::UriTooLong { .. })),
    ];
    for (input, expected) in cases {
        let error = SessionUri::parse(input).unwrap_err();
        assert!(expected(&error), "{input:.40}: {error:?}");
    }
}
