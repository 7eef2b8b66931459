#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::testutil::TempRepo;

#[test]
fn branch_remotes_and_worktrees() {
    let repo = TempRepo::init();
    repo.write("a.txt", "a\n");
    repo.commit_all("one");
    repo.git(&[
        "remote",
        "add",
        "origin",
        "https://example.com/org/project.git",
    ]);
    repo.git(&["remote", "add", "fork", "git@example.com:me/project.git"]);
    repo.git(&[
        "config",
        "remote.fork.pushurl",
        "git@example.com:me/push.git",
    ]);
    let linked = tempfile::tempdir().unwrap();
    let linked_path = linked.path().join("feature-wt");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "feature",
        linked_path.to_str().unwrap(),
    ]);

    let info = repo.open(false).info().unwrap();
    assert_eq!(info.branch.as_deref(), Some("main"));
    assert_eq!(info.head, Some(repo.git(&["rev-parse", "HEAD"])));
    assert!(!info.is_linked_worktree);
    let remotes: Vec<_> = info
        .remotes
        .iter()
        .map(|r| {
            (
                r.name.as_str(),
                r.fetch_url.as_deref(),
                r.push_url.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        remotes,
        [
            (
                "fork",
                Some("git@example.com:me/project.git"),
                Some("git@example.com:me/push.git")
            ),
            (
                "origin",
                Some("https://example.com/org/project.git"),
                Some("https://example.com/org/project.git")
            ),
        ]
    );
    assert_eq!(info.worktrees.len(), 1);
    assert_eq!(info.worktrees[0].id, "feature-wt");
    assert_eq!(info.worktrees[0].branch.as_deref(), Some("feature"));
    assert_eq!(
        std::fs::canonicalize(&info.worktrees[0].path).unwrap(),
        std::fs::canonicalize(&linked_path).unwrap()
    );
}

#[test]
fn detached_and_unborn_heads() {
    let repo = TempRepo::init();
    let info = repo.open(false).info().unwrap();
    assert_eq!(
        info.branch.as_deref(),
        Some("main"),
        "unborn branch still has a name"
    );
    assert_eq!(info.head, None);
    repo.write("a.txt", "a\n");
    repo.commit_all("one");
    repo.git(&["checkout", "-q", "--detach"]);
    let info = repo.open(false).info().unwrap();
    assert_eq!(info.branch, None);
    assert!(info.head.is_some());
}

#[test]
fn not_a_work_tree() {
    let plain = tempfile::tempdir().unwrap();
    let error = crate::repo::Repo::open(
        plain.path(),
        std::sync::Arc::new(crate::testutil::config(false)),
    )
    .unwrap_err();
    assert!(
        matches!(error, crate::error::CheckpointError::NotAWorkTree { .. }),
        "{error}"
    );
}
