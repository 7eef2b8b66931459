//! Property test for the worktree names sessions get (`config.isolation = worktree`): for any
//! session URI and every attempt the service makes, the name passes the checkpoint crate's
//! `validate_worktree_name` and is one plain path component, so a session id can never put a
//! worktree outside `<repo>.worktrees/` or its branch outside `agents/`.

#![allow(clippy::unwrap_used)]

use std::ffi::OsStr;
use std::path::{Component, Path};

use agenthost_checkpoint::validate_worktree_name;
use agenthost_protocol::{SafeId, SessionUri};
use agenthost_services_git::worktree_name;
use proptest::prelude::*;

/// Session ids that try to climb or split a path, mixed with arbitrary text.
fn raw_id() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        prop::sample::select(vec![
            "..", ".", "/", "\\", "%2F", "%2E%2E", "-", "_", ":", ".lock", "@{", " ", "~", "é",
        ])
        .prop_map(str::to_owned),
        "[A-Za-z0-9]{1,8}",
        any::<char>().prop_map(String::from),
    ];
    prop_oneof![
        any::<String>(),
        prop::collection::vec(fragment, 1..12).prop_map(|parts| parts.concat()),
        // Long ids: the name is bounded.
        "[a-z0-9-]{60,200}",
    ]
}

fn session_uri() -> impl Strategy<Value = SessionUri> {
    (
        raw_id(),
        prop::sample::select(vec!["claude", "copilotcli", "x.y-z", ""]),
    )
        .prop_filter_map("a valid session URI", |(raw, provider)| {
            let id = SafeId::new(raw).ok()?;
            if provider.is_empty() {
                Some(SessionUri::canonical(id))
            } else {
                SessionUri::with_provider(provider, id).ok()
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn worktree_names_are_valid_single_components(session in session_uri(), attempt in 0usize..5) {
        let name = worktree_name(&session, attempt);
        prop_assert!(validate_worktree_name(&name).is_ok(), "{session} → {name:?}");
        prop_assert!(!name.contains('/') && !name.contains('\\') && !name.contains(".."), "{name:?}");
        let base = Path::new("/repo.worktrees");
        let joined = base.join(&name);
        let tail: Vec<Component<'_>> = joined.strip_prefix(base).unwrap().components().collect();
        prop_assert_eq!(tail, vec![Component::Normal(OsStr::new(&name))]);
    }
}
