#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use agenthost_protocol::actions::{
    ChatWorkingDirectorySetAction, SessionWorkingDirectoryRemovedAction,
    SessionWorkingDirectoryReplacedAction, SessionWorkingDirectorySetAction,
};
use agenthost_protocol::uri::path_to_file_uri;
use serde_json::json;

struct Place {
    _dir: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    worktree: PathBuf,
}

fn place() -> Place {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("repo");
    let outside = base.join("outside");
    let worktree = base.join("repo.worktrees/session-1");
    for d in [&root, &outside, &worktree] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::create_dir_all(root.join("sub")).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&outside, root.join("link-out")).unwrap();
    Place {
        _dir: dir,
        root,
        outside,
        worktree,
    }
}

fn uri(path: &Path) -> String {
    path_to_file_uri(path).unwrap()
}

#[test]
fn folders_inside_a_root_pass_and_come_back_resolved() {
    let p = place();
    let sandbox = Sandbox::new([p.root.clone()]).unwrap();
    let sub = format!("{}/sub/../sub", uri(&p.root));
    assert_eq!(
        sandbox.check(&sub, PathUse::Directory, &[]).unwrap(),
        p.root.join("sub")
    );
}

#[test]
fn escapes_are_refused_whatever_their_spelling() {
    let p = place();
    let sandbox = Sandbox::new([p.root.clone()]).unwrap();
    let root = uri(&p.root);
    let mut escapes = vec![
        uri(&p.outside),
        format!("{root}/../outside"),
        format!("{root}/%2E%2E/outside"),
        format!("{root}/sub/..%2F..%2Foutside"),
        "file://elsewhere/etc".to_owned(),
        "/etc".to_owned(),
        "https://example.invalid/x".to_owned(),
        "FILE:///etc".to_owned(),
        format!("{root}/../outside/new-file"),
    ];
    #[cfg(unix)]
    escapes.push(format!("{root}/link-out"));
    for escape in &escapes {
        for used_as in [PathUse::Directory, PathUse::Reference] {
            let refusal = sandbox.check(escape, used_as, &[]).unwrap_err();
            assert!(
                matches!(
                    refusal,
                    PathRefusal::Outside { .. } | PathRefusal::NotLocal { .. }
                ),
                "{escape}: {refusal}"
            );
        }
    }
}

#[test]
fn a_sessions_worktree_is_allowed_only_when_named() {
    let p = place();
    let sandbox = Sandbox::new([p.root.clone()]).unwrap();
    let worktree = uri(&p.worktree);
    assert!(sandbox.check(&worktree, PathUse::Directory, &[]).is_err());
    assert_eq!(
        sandbox
            .check(
                &worktree,
                PathUse::Directory,
                std::slice::from_ref(&p.worktree)
            )
            .unwrap(),
        p.worktree
    );
}

#[test]
fn a_directory_must_exist_and_a_reference_need_not() {
    let p = place();
    let sandbox = Sandbox::new([p.root.clone()]).unwrap();
    let missing = format!("{}/not-yet", uri(&p.root));
    assert!(matches!(
        sandbox.check(&missing, PathUse::Directory, &[]),
        Err(PathRefusal::NotDirectory { .. })
    ));
    assert_eq!(
        sandbox.check(&missing, PathUse::Reference, &[]).unwrap(),
        p.root.join("not-yet")
    );
}

#[test]
fn refusals_quote_a_bounded_copy_of_the_uri() {
    let p = place();
    let sandbox = Sandbox::new([p.root.clone()]).unwrap();
    let huge = format!("file:///{}", "a".repeat(100_000));
    let refusal = sandbox.check(&huge, PathUse::Directory, &[]).unwrap_err();
    assert!(
        refusal.to_string().len() < 400,
        "{}",
        refusal.to_string().len()
    );
}

#[test]
fn every_path_carrying_action_is_checked() {
    let p = place();
    let sandbox = Sandbox::new([p.root.clone()]).unwrap();
    let outside = uri(&p.outside);
    let inside = uri(&p.root);
    let carrying = |dir: &str| -> Vec<StateAction> {
        let message = serde_json::from_value::<Message>(json!({
            "text": "look",
            "origin": { "kind": "user" },
            "attachments": [{ "type": "resource", "label": "f", "uri": format!("{dir}/f.txt") }]
        }))
        .unwrap();
        vec![
            StateAction::SessionWorkingDirectorySet(SessionWorkingDirectorySetAction {
                directory: dir.to_owned(),
            }),
            StateAction::SessionWorkingDirectoryReplaced(SessionWorkingDirectoryReplacedAction {
                directory: inside.clone(),
                replacement: dir.to_owned(),
            }),
            StateAction::ChatWorkingDirectorySet(ChatWorkingDirectorySetAction {
                directory: dir.to_owned(),
            }),
            serde_json::from_value(json!({
                "type": "chat/turnStarted", "turnId": "t", "startedAt": "2026-01-01T00:00:00Z",
                "message": message
            }))
            .unwrap(),
            serde_json::from_value(json!({
                "type": "chat/pendingMessageSet", "kind": "queued", "id": "q", "message": message
            }))
            .unwrap(),
            serde_json::from_value(json!({ "type": "chat/draftChanged", "draft": message }))
                .unwrap(),
        ]
    };
    for action in carrying(&outside) {
        assert_eq!(client_paths(&action).len(), 1, "{action:?}");
        assert!(sandbox.check_action(&action, &[]).is_err(), "{action:?}");
    }
    for action in carrying(&inside) {
        assert!(sandbox.check_action(&action, &[]).is_ok(), "{action:?}");
    }
    // Removing names a directory already in state: nothing to check.
    let removed =
        StateAction::SessionWorkingDirectoryRemoved(SessionWorkingDirectoryRemovedAction {
            directory: outside,
        });
    assert!(client_paths(&removed).is_empty());
}
