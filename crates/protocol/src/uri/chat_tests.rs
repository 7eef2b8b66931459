use proptest::prelude::*;

use super::*;
use crate::uri::encoding::percent_decode;

fn session(uri: &str) -> SessionUri {
    SessionUri::parse(uri).unwrap()
}

fn id(id: &str) -> SafeId {
    SafeId::new(id).unwrap()
}

#[test]
fn parse_is_opaque() {
    for input in [
        "ahp-chat:/anything/with/segments?and=query#fragment",
        "ahp-chat:",
        "ahp-chat:/%zz",
        "custom+chat:opaque",
    ] {
        assert_eq!(ChatUri::parse(input).unwrap().as_str(), input);
    }
    assert_eq!(
        ChatUri::parse("custom+chat:opaque").unwrap().scheme(),
        "custom+chat"
    );
}

#[test]
fn parse_requires_a_scheme() {
    for input in ["", "chat", ":/x", "-x:/y"] {
        assert_eq!(
            ChatUri::parse(input),
            Err(UriError::MissingScheme {
                input: input.to_owned()
            })
        );
    }
}

#[test]
fn parse_rejects_whitespace_and_control_characters() {
    for (input, position) in [
        ("ahp-chat:/a b", 11),
        ("ahp-chat:/\tb", 10),
        ("ahp-chat:/a\0", 11),
        ("ahp-chat:/\u{85}", 10),
        ("ahp-chat:/\u{2028}", 10),
    ] {
        assert_eq!(
            ChatUri::parse(input),
            Err(UriError::InvalidCharacter {
                position,
                input: input.to_owned()
            }),
            "{input:?}"
        );
    }
}

#[test]
fn parse_rejects_more_than_8_kib() {
    let at_limit = format!("ahp-chat:/{}", "a".repeat(8192 - 10));
    assert!(ChatUri::parse(&at_limit).is_ok());
    let over = format!("{at_limit}a");
    assert!(matches!(
        ChatUri::parse(&over),
        Err(UriError::UriTooLong { len: 8193, .. })
    ));
}

#[test]
fn canonical_percent_encodes_the_id() {
    assert_eq!(
        ChatUri::canonical(&id("c 1/é")).as_str(),
        "ahp-chat:/c%201%2F%C3%A9"
    );
}

#[test]
fn default_chat_is_vscodes_derived_uri() {
    let chat = ChatUri::default_for(&session("copilotcli:/abc"));
    assert_eq!(chat.as_str(), "ahp-chat://default/Y29waWxvdGNsaTovYWJj");
    assert_eq!(
        chat.default_chat_session(),
        Ok(Some(session("copilotcli:/abc")))
    );
    assert_eq!(chat.subagent_parent(), Ok(None));
}

#[test]
fn default_chat_accepts_padding_in_either_spelling() {
    for payload in [
        "YWhwLXNlc3Npb246L3M",
        "YWhwLXNlc3Npb246L3M=",
        "YWhwLXNlc3Npb246L3M%3D",
    ] {
        let chat = ChatUri::parse(&format!("ahp-chat://default/{payload}")).unwrap();
        assert_eq!(
            chat.default_chat_session(),
            Ok(Some(session("ahp-session:/s"))),
            "{payload}"
        );
    }
}

#[test]
fn other_chats_have_no_default_session() {
    for input in [
        "ahp-chat:/c1",
        "ahp-chat://default",
        "ahp-chat://defaults/x",
        "x-chat:/y",
    ] {
        assert_eq!(
            ChatUri::parse(input).unwrap().default_chat_session(),
            Ok(None)
        );
    }
}

#[test]
fn default_chat_with_a_bad_payload_is_an_error() {
    let decode = |payload: &str| {
        ChatUri::parse(&format!("ahp-chat://default/{payload}"))
            .unwrap()
            .default_chat_session()
    };
    assert!(matches!(decode("!!"), Err(UriError::InvalidBase64 { .. })));
    assert!(matches!(
        decode("YWhw/LXN"),
        Err(UriError::InvalidBase64 { .. })
    ));
    assert!(matches!(
        decode("YQ==="),
        Err(UriError::InvalidBase64 { .. })
    ));
    assert!(matches!(decode("__4"), Err(UriError::InvalidUtf8 { .. })));
    let Err(UriError::InvalidEmbeddedSession { reason, .. }) = decode("bm90IGEgdXJp") else {
        panic!("expected InvalidEmbeddedSession");
    };
    assert_eq!(
        *reason,
        UriError::MissingScheme {
            input: "not a uri".to_owned()
        }
    );
    assert!(matches!(
        decode(""),
        Err(UriError::InvalidEmbeddedSession { .. })
    ));
}

#[test]
fn subagent_chat_derives_from_session_and_tool_call() {
    let parent = session("ahp-session:/s1");
    let chat = ChatUri::subagent(&parent, &id("toolu/01"));
    assert_eq!(
        chat.as_str(),
        "ahp-chat://subagent/YWhwLXNlc3Npb246L3Mx/toolu%2F01"
    );
    assert_eq!(chat.subagent_parent(), Ok(Some((parent, id("toolu/01")))));
    assert_eq!(chat.default_chat_session(), Ok(None));
}

#[test]
fn malformed_subagent_chats_are_errors() {
    let decode = |rest: &str| {
        ChatUri::parse(&format!("ahp-chat://subagent/{rest}"))
            .unwrap()
            .subagent_parent()
    };
    for rest in ["YWhwLXNlc3Npb246L3Mx", "YWhwLXNlc3Npb246L3Mx/a/b"] {
        assert!(
            matches!(decode(rest), Err(UriError::MalformedSubagentChat { .. })),
            "{rest}"
        );
    }
    assert!(matches!(
        decode("!!/call"),
        Err(UriError::InvalidBase64 { .. })
    ));
    assert_eq!(decode("YWhwLXNlc3Npb246L3Mx/"), Err(UriError::EmptyId));
    assert!(matches!(
        decode("YWhwLXNlc3Npb246L3Mx/%2e%2E"),
        Err(UriError::DotSegment { .. })
    ));
    assert!(matches!(
        decode("YWhwLXNlc3Npb246L3Mx/%00"),
        Err(UriError::ControlCharacter { .. })
    ));
    assert_eq!(
        decode("YWhwLXNlc3Npb246L3Mx/a@b"),
        Err(UriError::NonCanonicalEncoding {
            input: "ahp-chat://subagent/YWhwLXNlc3Npb246L3Mx/a@b".to_owned(),
            canonical: "ahp-chat://subagent/YWhwLXNlc3Npb246L3Mx/a%40b".to_owned(),
        })
    );
    assert!(matches!(
        decode("YWhwLXNlc3Npb246L2ElMkZi/%FF"),
        Err(UriError::InvalidUtf8 { .. })
    ));
}

#[test]
fn derived_chats_from_maximal_ids_still_parse() {
    let long_scheme = "a".repeat(64);
    let worst_id = id(&"\u{10FFFF}".repeat(256));
    let session = SessionUri::with_provider(&long_scheme, worst_id.clone()).unwrap();
    let chat = ChatUri::subagent(&session, &worst_id);
    assert_eq!(ChatUri::parse(chat.as_str()), Ok(chat.clone()));
    assert_eq!(chat.subagent_parent(), Ok(Some((session, worst_id))));
}

#[test]
fn serde_is_a_validated_string() {
    let chat = ChatUri::parse("ahp-chat:/c1").unwrap();
    assert_eq!(serde_json::to_string(&chat).unwrap(), r#""ahp-chat:/c1""#);
    assert_eq!(
        serde_json::from_str::<ChatUri>(r#""ahp-chat:/c1""#).unwrap(),
        chat
    );
    assert!(serde_json::from_str::<ChatUri>(r#""no scheme""#).is_err());
}

proptest! {
    #[test]
    fn canonical_chat_decodes_back_to_its_id(raw in any::<String>()) {
        if let Ok(id) = SafeId::new(raw) {
            let chat = ChatUri::canonical(&id);
            prop_assert_eq!(ChatUri::parse(chat.as_str()), Ok(chat.clone()));
            let encoded = chat.as_str().strip_prefix("ahp-chat:/").unwrap();
            prop_assert!(!encoded.contains('/'));
            prop_assert_eq!(percent_decode(encoded).ok(), Some(id.into_string()));
        }
    }
}

#[test]
fn client_named_chats_are_plain_ids_or_peer_chats_of_their_own_session() {
    let own = session("ahp-session:/s1");
    let other = session("ahp-session:/s2");
    let peer = |chat: &str, of: &SessionUri| {
        format!(
            "ahp-chat://{chat}/{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(of.as_str())
        )
    };
    for good in [
        "ahp-chat:/peer".to_owned(),
        "ahp-chat:/a%2Fb".to_owned(),
        peer("c7", &own),
    ] {
        assert_eq!(
            ChatUri::parse_client_named(&good, &own).unwrap().as_str(),
            good
        );
    }
    for (bad, reserved) in [
        ("file:///etc/passwd".to_owned(), false),
        ("ahp-chat:/../x".to_owned(), false),
        ("ahp-chat:/..".to_owned(), false),
        ("ahp-chat:/".to_owned(), false),
        ("ahp-session:/X".to_owned(), false),
        ("ahp-chat://c7".to_owned(), false),
        (ChatUri::default_for(&other).into_string(), true),
        (ChatUri::default_for(&own).into_string(), true),
        (ChatUri::subagent(&own, &id("call-1")).into_string(), true),
        (peer("c7", &other), true),
        (peer("default", &own), true),
        (peer("SubAgent", &own), true),
    ] {
        let error = ChatUri::parse_client_named(&bad, &own).unwrap_err();
        assert_eq!(
            matches!(error, UriError::ReservedChat { .. }),
            reserved,
            "{bad}: {error}"
        );
    }
}

#[test]
fn every_derived_form_names_its_session() {
    let session = SessionUri::parse("claude:/s1").unwrap();
    let b64 = ChatUri::default_for(&session)
        .as_str()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    for uri in [
        ChatUri::default_for(&session).into_string(),
        ChatUri::subagent(&session, &SafeId::new("tc").unwrap()).into_string(),
        format!("ahp-chat://side-1/{b64}"),
    ] {
        assert_eq!(
            ChatUri::parse(&uri).unwrap().derived_session(),
            Some(session.clone()),
            "{uri}"
        );
    }
    assert_eq!(
        ChatUri::parse("ahp-chat:/c1").unwrap().derived_session(),
        None
    );
}
