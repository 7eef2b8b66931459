#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;

use super::*;

#[test]
fn sanitization_replaces_one_for_one() {
    assert_eq!(
        sanitize_session_id("1f0c9a2e-0b1c-4d2e-8f3a-1234567890ab"),
        "1f0c9a2e-0b1c-4d2e-8f3a-1234567890ab"
    );
    assert_eq!(sanitize_session_id("a:b/c"), "a-b-c");
    assert_eq!(sanitize_session_id("x y"), "x-y");
    assert_eq!(sanitize_session_id("a::b"), "a--b");
    assert_eq!(sanitize_session_id("é~^"), "---");
    assert_eq!(sanitize_session_id("ok_.-9"), "ok_.-9");
}

#[test]
fn repaired_components_get_a_hash_suffix() {
    let hash = |raw: &str| sha256_hex8(raw.as_bytes());
    // SHA-256("..") starts with these digits (checked with `printf .. | sha256sum`).
    assert_eq!(hash(".."), "5ec1f7e7");
    assert_eq!(session_ref_component(".."), format!("---{}", hash("..")));
    assert_eq!(
        session_ref_component(".hidden"),
        format!("-hidden-{}", hash(".hidden"))
    );
    assert_eq!(
        session_ref_component("x.lock"),
        format!("x-lock-{}", hash("x.lock"))
    );
    assert_eq!(
        session_ref_component("end."),
        format!("end--{}", hash("end."))
    );
    assert_eq!(
        session_ref_component("a..b"),
        format!("a--b-{}", hash("a..b"))
    );
    // Valid ids are kept as they are (dots included).
    assert_eq!(session_ref_component("v1.2-final"), "v1.2-final");
}

#[test]
fn namespace_layout() {
    let namespace = SessionNamespace::from_raw_id("a:b").unwrap();
    assert_eq!(namespace.sanitized_id(), "a-b");
    assert_eq!(namespace.prefix(), "refs/agents/a-b/checkpoints/");
    assert_eq!(
        namespace.baseline_ref().unwrap(),
        "refs/agents/a-b/checkpoints/turn/0"
    );
    assert_eq!(
        namespace.turn_ref(12).unwrap(),
        "refs/agents/a-b/checkpoints/turn/12"
    );
    assert!(namespace.owns("refs/agents/a-b/checkpoints/turn/3"));
    assert!(!namespace.owns("refs/agents/a-bc/checkpoints/turn/3"));
}

#[test]
fn empty_ids_are_refused() {
    assert!(matches!(
        SessionNamespace::from_raw_id(""),
        Err(CheckpointError::EmptySessionId)
    ));
}

#[test]
fn session_uris_use_their_path_as_raw_id() {
    let session = SessionUri::parse("copilot:/1f0c9a2e-aaaa").unwrap();
    let namespace = SessionNamespace::for_session(&session).unwrap();
    assert_eq!(namespace.raw_id(), "1f0c9a2e-aaaa");
    assert_eq!(namespace.sanitized_id(), "1f0c9a2e-aaaa");
}

#[test]
fn turn_numbers_come_from_the_last_component() {
    assert_eq!(turn_number("refs/agents/x/checkpoints/turn/10"), Some(10));
    assert_eq!(turn_number("refs/agents/x/checkpoints/turn/0"), Some(0));
    assert_eq!(turn_number("refs/agents/x/checkpoints/turn/"), None);
    assert_eq!(turn_number("refs/agents/x/checkpoints/turn/1a"), None);
    assert_eq!(turn_number("turn"), None);
}

#[test]
fn validation_table() {
    let cases: &[(&str, Option<RefNameRule>)] = &[
        ("refs/agents/a/checkpoints/turn/1", None),
        ("", Some(RefNameRule::EmptyComponent)),
        ("/refs/x", Some(RefNameRule::EmptyComponent)),
        ("refs/x/", Some(RefNameRule::EmptyComponent)),
        ("refs//x", Some(RefNameRule::EmptyComponent)),
        ("refs/.x", Some(RefNameRule::ComponentStartsWithDot)),
        ("refs/x.lock/y", Some(RefNameRule::ComponentEndsWithLock)),
        ("refs/x.lock", Some(RefNameRule::ComponentEndsWithLock)),
        ("refs/a..b", Some(RefNameRule::DoubleDot)),
        ("refs/a.", Some(RefNameRule::EndsWithDot)),
        ("refs/a b", Some(RefNameRule::ForbiddenCharacter)),
        ("refs/a\tb", Some(RefNameRule::ForbiddenCharacter)),
        ("refs/a\u{7f}b", Some(RefNameRule::ForbiddenCharacter)),
        ("refs/a~b", Some(RefNameRule::ForbiddenCharacter)),
        ("refs/a^b", Some(RefNameRule::ForbiddenCharacter)),
        ("refs/a:b", Some(RefNameRule::ForbiddenCharacter)),
        ("refs/a?b", Some(RefNameRule::ForbiddenCharacter)),
        ("refs/a*b", Some(RefNameRule::ForbiddenCharacter)),
        ("refs/a[b", Some(RefNameRule::ForbiddenCharacter)),
        ("refs/a\\b", Some(RefNameRule::ForbiddenCharacter)),
        ("refs/a@{b", Some(RefNameRule::AtBrace)),
        ("@", Some(RefNameRule::AtBrace)),
        ("refs/a@b", None),
    ];
    for (name, expected) in cases {
        assert_eq!(validate_ref_name(name).err(), *expected, "{name:?}");
    }
}

/// git's own verdict on a ref name.
fn git_accepts(name: &str) -> bool {
    std::process::Command::new("git")
        .args(["check-ref-format", name])
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status()
        .unwrap()
        .success()
}

#[test]
fn repaired_names_pass_git_check_ref_format() {
    for raw in [
        "..", ".hidden", "x.lock", "end.", "a..b", "a:b/c", "x y", "@", "a@{b",
    ] {
        let namespace = SessionNamespace::from_raw_id(raw).unwrap();
        let name = namespace.turn_ref(1).unwrap();
        assert!(git_accepts(&name), "{raw:?} → {name:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Arbitrary ids never yield an invalid ref name, nor one outside the session's namespace.
    #[test]
    fn arbitrary_ids_yield_valid_contained_names(raw in "\\PC{0,40}|[.a-z:/ @{}~^]{0,12}", n in 0u64..10_000) {
        prop_assume!(!raw.is_empty());
        let namespace = SessionNamespace::from_raw_id(&raw).unwrap();
        let component = namespace.sanitized_id();
        prop_assert!(!component.is_empty());
        prop_assert!(!component.contains('/'));
        let name = namespace.turn_ref(n).unwrap();
        prop_assert!(validate_ref_name(&name).is_ok(), "{name}");
        prop_assert!(gix::validate::reference::name(name.as_bytes().as_bstr()).is_ok(), "{name}");
        prop_assert!(name.starts_with(REF_ROOT));
        let tail = format!("turn/{n}");
        prop_assert_eq!(name.strip_prefix(&namespace.prefix()), Some(tail.as_str()));
        // The namespace is exactly one component below refs/agents/.
        prop_assert_eq!(name.split('/').count(), 6);
        prop_assert_eq!(turn_number(&name), Some(n));
    }

    /// Sanitization is one for one, per character.
    #[test]
    fn sanitization_keeps_length_in_chars(raw in "\\PC{0,40}") {
        prop_assert_eq!(sanitize_session_id(&raw).chars().count(), raw.chars().count());
    }
}

#[test]
fn sampled_names_pass_git_check_ref_format() {
    // A deterministic sample of awkward ids checked by git itself (the property test above uses
    // our validator and gix's; this ties both to git).
    let ids = [
        "a",
        "A-Z_0.9",
        "...",
        ".",
        "a/b",
        "a//b",
        "x.lock.lock",
        "trailing.",
        " lead",
        "ü",
        "a\u{1}b",
        "a*?[",
        "HEAD",
        "@{u}",
        "-",
        "--",
        "_.",
        ".lock",
    ];
    for raw in ids {
        let name = SessionNamespace::from_raw_id(raw)
            .unwrap()
            .turn_ref(7)
            .unwrap();
        assert!(git_accepts(&name), "{raw:?} → {name:?}");
    }
}
