//! Property tests for the namespaces session ids get in git: every ref built for a session (from
//! its URI or from any raw id, control characters included) is valid for gix and lies inside
//! `refs/agents/<sanitized>/checkpoints/`, no other namespace claims it, and a worktree name the
//! crate accepts is one plain path component with a valid `agents/<name>` branch.

use std::ffi::OsStr;
use std::path::{Component, Path};

use agenthost_checkpoint::{
    REF_ROOT, SessionNamespace, WORKTREE_BRANCH_PREFIX, turn_number, validate_ref_name,
    validate_worktree_name,
};
use agenthost_protocol::{SafeId, SessionUri};
use gix::bstr::ByteSlice;
use proptest::prelude::*;

/// Raw ids that try to break out of one ref component: separators, dots, ref-name syntax,
/// control characters, arbitrary Unicode.
fn raw_id() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        prop::sample::select(vec![
            "/", "//", ".", "..", ".lock", "@", "@{", "~", "^", ":", "?", "*", "[", "\\", " ",
            "\0", "\n", "\u{7f}", "refs/", "heads", "HEAD", "%2F", "-", "_",
        ])
        .prop_map(str::to_owned),
        "[A-Za-z0-9]{1,6}",
        any::<char>().prop_map(String::from),
    ];
    prop_oneof![
        any::<String>(),
        prop::collection::vec(fragment, 1..10).prop_map(|parts| parts.concat()),
    ]
    .prop_filter("ids are not empty", |raw| !raw.is_empty())
}

fn session_uri() -> impl Strategy<Value = SessionUri> {
    (
        raw_id(),
        prop::sample::select(vec!["claude", "copilotcli", "codex"]),
    )
        .prop_filter_map("a valid session URI", |(raw, provider)| {
            let id = SafeId::new(raw).ok()?;
            Some(if provider == "codex" {
                SessionUri::canonical(id)
            } else {
                SessionUri::with_provider(provider, id).ok()?
            })
        })
}

/// Fails unless `name` is a valid ref inside `namespace` and nowhere else.
fn assert_contained(namespace: &SessionNamespace, name: &str, n: u64) -> Result<(), TestCaseError> {
    let sanitized = namespace.sanitized_id();
    prop_assert!(!sanitized.is_empty());
    prop_assert!(!sanitized.contains('/'), "{sanitized:?}");
    prop_assert!(!sanitized.starts_with('.'), "{sanitized:?}");
    prop_assert!(validate_ref_name(name).is_ok(), "{name:?}");
    prop_assert!(
        gix::validate::reference::name(name.as_bytes().as_bstr()).is_ok(),
        "{name:?}"
    );
    let expected_prefix = format!("{REF_ROOT}{sanitized}/checkpoints/");
    prop_assert_eq!(namespace.prefix(), expected_prefix.clone());
    let tail = format!("turn/{n}");
    prop_assert_eq!(name.strip_prefix(&expected_prefix), Some(tail.as_str()));
    prop_assert!(namespace.owns(name));
    let number = n.to_string();
    prop_assert_eq!(
        name.split('/').collect::<Vec<_>>(),
        vec![
            "refs",
            "agents",
            sanitized,
            "checkpoints",
            "turn",
            number.as_str()
        ]
    );
    prop_assert_eq!(turn_number(name), Some(n));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any raw id (control characters and `/` included) and any turn number give a valid ref
    /// inside the id's own namespace.
    #[test]
    fn raw_ids_stay_in_their_namespace(raw in raw_id(), n in any::<u64>()) {
        let namespace = SessionNamespace::from_raw_id(&raw).unwrap();
        assert_contained(&namespace, &namespace.turn_ref(n).unwrap(), n)?;
        assert_contained(&namespace, &namespace.baseline_ref().unwrap(), 0)?;
    }

    /// The namespace of a session URI is that of its id, whatever the URI's spelling.
    #[test]
    fn session_uris_stay_in_their_namespace(session in session_uri(), n in any::<u64>()) {
        let namespace = SessionNamespace::for_session(&session).unwrap();
        prop_assert_eq!(namespace.raw_id(), session.id().as_str());
        assert_contained(&namespace, &namespace.turn_ref(n).unwrap(), n)?;
    }

    /// Two namespaces that differ never own each other's refs (no prefix confusion such as
    /// `a` owning `a-b`'s or `a/checkpoints`'s refs).
    #[test]
    fn distinct_namespaces_do_not_overlap(a in raw_id(), b in raw_id(), n in any::<u64>()) {
        let (a, b) = (
            SessionNamespace::from_raw_id(&a).unwrap(),
            SessionNamespace::from_raw_id(&b).unwrap(),
        );
        prop_assume!(a.sanitized_id() != b.sanitized_id());
        prop_assert!(!a.owns(&b.turn_ref(n).unwrap()));
        prop_assert!(!b.owns(&a.turn_ref(n).unwrap()));
    }

    /// A worktree name the crate accepts is one plain component below `<repo>.worktrees/` and
    /// its branch `agents/<name>` is a valid ref.
    #[test]
    fn accepted_worktree_names_are_one_component(name in raw_id()) {
        if validate_worktree_name(&name).is_ok() {
            let base = Path::new("/repo.worktrees");
            let joined = base.join(&name);
            let tail: Vec<Component<'_>> =
                joined.strip_prefix(base).unwrap().components().collect();
            prop_assert_eq!(tail, vec![Component::Normal(OsStr::new(&name))]);
            prop_assert!(!name.contains("..") && !name.starts_with('.'), "{name:?}");
            let branch = format!("refs/heads/{WORKTREE_BRANCH_PREFIX}{name}");
            prop_assert!(
                gix::validate::reference::name(branch.as_bytes().as_bstr()).is_ok(),
                "{branch:?}"
            );
        }
    }
}

#[test]
fn hostile_worktree_names_are_refused() {
    for name in [
        "", ".", "..", "../x", "a/b", "a\\b", ".hidden", "-flag", "x.lock", "a..b", "end.", "a b",
        "a\0b", "é",
    ] {
        assert!(validate_worktree_name(name).is_err(), "{name:?}");
    }
}
