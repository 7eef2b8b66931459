use super::*;
use crate::uri::SafeId;

fn parse(input: &str) -> Channel {
    Channel::parse(input).unwrap()
}

fn session(uri: &str) -> SessionUri {
    SessionUri::parse(uri).unwrap()
}

#[test]
fn classifies_every_ahp_channel() {
    assert_eq!(parse("ahp-root://"), Channel::Root);
    assert_eq!(
        parse("ahp-session:/s1"),
        Channel::Session(session("ahp-session:/s1"))
    );
    assert_eq!(
        parse("ahp-session:/s1/annotations"),
        Channel::Annotations(session("ahp-session:/s1"))
    );
    assert_eq!(
        parse("ahp-chat:/c/1"),
        Channel::Chat(ChatUri::parse("ahp-chat:/c/1").unwrap())
    );
    assert_eq!(
        parse("ahp-terminal:/t1"),
        Channel::Terminal("ahp-terminal:/t1".into())
    );
    assert_eq!(
        parse("ahp-changeset:/c1"),
        Channel::Changeset("ahp-changeset:/c1".into())
    );
    assert_eq!(
        parse("ahp-resource-watch:/w1"),
        Channel::ResourceWatch("ahp-resource-watch:/w1".into())
    );
}

#[test]
fn provider_shaped_uris_are_sessions() {
    assert_eq!(
        parse("copilotcli:/s1"),
        Channel::Session(session("copilotcli:/s1"))
    );
    assert_eq!(
        parse("copilotcli:/s1/annotations"),
        Channel::Annotations(session("copilotcli:/s1"))
    );
    assert_eq!(
        parse("copilotcli:/annotations"),
        Channel::Session(session("copilotcli:/annotations"))
    );
    let derived = SessionUri::canonical(SafeId::new("annotations").unwrap());
    assert_eq!(
        parse(&derived.annotations_uri()),
        Channel::Annotations(derived)
    );
}

#[test]
fn everything_else_is_other() {
    for input in [
        "ahp-otlp:traces",
        "mcp://server-1",
        "mcp:/server-1",
        "x-canvas:/c1",
        "ahp-canvas:/c1",
        "ahp-automations://",
        "ahp-automation:/a1",
        "https://example.com/a",
        "copilotcli:/a/b",
        "copilotcli://host",
        "copilotcli:opaque",
        "Upper:/s1",
    ] {
        assert_eq!(parse(input), Channel::Other(input.to_owned()), "{input}");
    }
}

#[test]
fn round_trips_through_display() {
    for input in [
        "ahp-root://",
        "ahp-session:/s%2F1",
        "copilotcli:/s1/annotations",
        "ahp-chat://default/YWhwLXNlc3Npb246L3Mx",
        "ahp-terminal:/t1",
        "mcp://server",
    ] {
        assert_eq!(parse(input).to_string(), input);
    }
}

#[test]
fn rejects_a_root_uri_with_anything_extra() {
    for input in ["ahp-root:", "ahp-root:/", "ahp-root://x"] {
        assert_eq!(
            Channel::parse(input),
            Err(UriError::InvalidRootUri {
                input: input.to_owned()
            })
        );
    }
}

#[test]
fn session_shaped_uris_with_bad_ids_are_errors() {
    assert!(matches!(
        Channel::parse("ahp-session:/a/b"),
        Err(UriError::NotASessionUri { .. })
    ));
    assert!(matches!(
        Channel::parse("copilotcli:/.."),
        Err(UriError::DotSegment { .. })
    ));
    assert!(matches!(
        Channel::parse("copilotcli:/%00/annotations"),
        Err(UriError::ControlCharacter { .. })
    ));
    assert!(matches!(
        Channel::parse("copilotcli:/a@b"),
        Err(UriError::NonCanonicalEncoding { .. })
    ));
}

#[test]
fn rejects_what_no_channel_may_contain() {
    assert!(matches!(
        Channel::parse("mcp://a b"),
        Err(UriError::InvalidCharacter { position: 7, .. })
    ));
    assert!(matches!(
        Channel::parse("noscheme"),
        Err(UriError::MissingScheme { .. })
    ));
    assert!(matches!(
        Channel::parse(&"x".repeat(10_000)),
        Err(UriError::UriTooLong { len: 10_000, .. })
    ));
}
