//! Property tests for ids and URIs as file-system paths: an id (however it arrived) is one plain
//! path component once percent-encoded, and a `file://` URI decodes to an absolute, NUL-free path
//! that round-trips, so a URI never names a path other than the one it spells.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

use agenthost_protocol::uri::{file_uri_to_path, path_to_file_uri, percent_encode};
use agenthost_protocol::{ChatUri, SafeId, SessionUri};
use proptest::prelude::*;

/// Text fragments that try to climb, split or truncate a path, mixed with arbitrary characters.
fn hostile_text() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        prop::sample::select(vec![
            "..", ".", "/", "//", "../", "/..", "%2E%2E", "%2e%2e", "%2F", "%2f", "%5C", "\\",
            "%00", "\0", "%", "%%", "%2", "~", ":", "?", "#", " ", "%20", "é", "%C3%A9", "%FF",
            "\n",
        ])
        .prop_map(str::to_owned),
        "[A-Za-z0-9_-]{1,6}",
        any::<char>().prop_map(String::from),
    ];
    prop::collection::vec(fragment, 0..12).prop_map(|parts| parts.concat())
}

/// Ids that pass validation, from arbitrary and from path-hostile text.
fn safe_id() -> impl Strategy<Value = SafeId> {
    prop_oneof![any::<String>(), hostile_text()]
        .prop_filter_map("id must pass validation", |raw| SafeId::new(raw).ok())
}

/// One path segment: anything but `/` and NUL, never `.` or `..`.
fn segment() -> impl Strategy<Value = String> {
    prop_oneof![hostile_text(), any::<String>()].prop_filter_map("a normal segment", |raw| {
        let cleaned: String = raw.chars().filter(|c| *c != '/' && *c != '\0').collect();
        (!cleaned.is_empty() && cleaned != "." && cleaned != "..").then_some(cleaned)
    })
}

/// Fails unless `base.join(name)` is `base` plus exactly the one normal component `name`.
fn assert_one_component(base: &Path, name: &str) -> Result<(), TestCaseError> {
    let joined = base.join(name);
    let extra: Vec<Component<'_>> = joined
        .strip_prefix(base)
        .map_err(|_| TestCaseError::fail(format!("{joined:?} left {base:?}")))?
        .components()
        .collect();
    prop_assert_eq!(
        extra,
        vec![Component::Normal(OsStr::new(name))],
        "{:?} is not one plain component",
        name
    );
    Ok(())
}

/// The checks every id the host may turn into a path or ref segment must pass.
fn assert_safe_as_component(id: &SafeId) -> Result<(), TestCaseError> {
    let base = Path::new("/data/sessions");
    let encoded = percent_encode(id);
    prop_assert!(!encoded.contains('/'), "{encoded}");
    assert_one_component(base, &encoded)?;
    if !id.contains('/') {
        // Without a `/` the raw id is one component too: never `.`, `..` or NUL-truncated.
        assert_one_component(base, id)?;
        prop_assert!(!id.contains('\0'));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A validated id, percent-encoded, is one plain path component below any directory.
    #[test]
    fn encoded_ids_are_one_path_component(id in safe_id()) {
        assert_safe_as_component(&id)?;
    }

    /// Whatever URI text a client sends, an id the parsers hand out is safe as a component.
    #[test]
    fn ids_parsed_from_hostile_uris_are_safe_as_components(
        text in hostile_text(),
        prefix in prop::sample::select(vec![
            "ahp-session:/", "claude:/", "ahp-chat:/", "ahp-chat://default/",
            "ahp-chat://subagent/",
        ]),
    ) {
        let input = format!("{prefix}{text}");
        if let Ok(session) = SessionUri::parse(&input) {
            assert_safe_as_component(session.id())?;
        }
        if let Ok(chat) = ChatUri::parse(&input) {
            if let Ok(Some((session, call))) = chat.subagent_parent() {
                assert_safe_as_component(session.id())?;
                assert_safe_as_component(&call)?;
            }
            if let Ok(Some(session)) = chat.default_chat_session() {
                assert_safe_as_component(session.id())?;
            }
        }
    }

    /// An absolute path of arbitrary segments (`%2F`, `%2E%2E`, `?`, `#` included) becomes a
    /// URI that decodes to exactly that path: no segment splits, merges or turns into `..`.
    #[test]
    fn file_uris_round_trip_absolute_paths(segments in prop::collection::vec(segment(), 0..6)) {
        let path: PathBuf = std::iter::once("/".to_owned()).chain(segments.iter().cloned()).collect();
        let uri = path_to_file_uri(&path).unwrap();
        let decoded = file_uri_to_path(&uri).unwrap();
        prop_assert_eq!(&decoded, &path, "{}", uri);
        prop_assert_eq!(decoded.components().count(), segments.len() + 1);
        prop_assert!(!uri["file://".len()..].contains(['?', '#', ' ']), "{}", uri);
    }

    /// Any text that decodes as a `file://` URI gives an absolute path without NUL.
    #[test]
    fn decoded_file_uris_are_absolute_and_nul_free(
        text in prop_oneof![any::<String>(), hostile_text()],
        prefix in prop::sample::select(vec!["file://", "file:///", "file://localhost/", "file:", ""]),
    ) {
        let input = format!("{prefix}{text}");
        if let Ok(path) = file_uri_to_path(&input) {
            prop_assert!(path.is_absolute(), "{input:?} → {path:?}");
            prop_assert!(!path.as_os_str().as_encoded_bytes().contains(&0), "{input:?} → {path:?}");
        }
    }
}

#[test]
fn dot_segments_and_nul_never_become_ids_or_paths() {
    for dots in [".", "..", "%2E", "%2E%2E", "%2e%2e"] {
        assert!(
            SessionUri::parse(&format!("ahp-session:/{dots}")).is_err(),
            "{dots}"
        );
    }
    assert!(SafeId::new("a\0b").is_err());
    assert!(file_uri_to_path("file:///tmp/a%00b").is_err());
    assert!(file_uri_to_path("file://evil.example/etc/passwd").is_err());
}
