#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::testutil::TempRepo;

#[test]
fn branch_and_origin_from_a_subdirectory() {
    let repo = TempRepo::init();
    repo.write("src/a.txt", "a\n");
    repo.commit_all("one");
    repo.git(&["remote", "add", "fork", "git@github.com:me/project.git"]);
    repo.git(&[
        "remote",
        "add",
        "origin",
        "https://github.com/org/project.git",
    ]);

    let state = repository_state(&repo.abs("src")).unwrap();
    assert_eq!(
        state,
        RepositoryState {
            root: std::fs::canonicalize(repo.path()).unwrap(),
            branch: Some("main".into()),
            remote_url: Some("https://github.com/org/project.git".into()),
        }
    );
}

#[test]
fn without_origin_the_first_remote_by_name_is_used() {
    let repo = TempRepo::init();
    repo.git(&["remote", "add", "zeta", "https://example.com/z.git"]);
    repo.git(&["remote", "add", "alpha", "https://example.com/a.git"]);

    let state = repository_state(repo.path()).unwrap();
    assert_eq!(
        state.remote_url.as_deref(),
        Some("https://example.com/a.git")
    );
    // An unborn branch is still the current branch.
    assert_eq!(state.branch.as_deref(), Some("main"));
}

#[test]
fn no_remote_and_a_detached_head() {
    let repo = TempRepo::init();
    repo.write("a.txt", "a\n");
    repo.commit_all("one");
    let head = repo.git(&["rev-parse", "HEAD"]);
    repo.git(&["checkout", "-q", "--detach", &head]);

    let state = repository_state(repo.path()).unwrap();
    assert_eq!(state.branch, None);
    assert_eq!(state.remote_url, None);
}

#[test]
fn a_folder_outside_any_repository_is_not_a_work_tree() {
    let dir = tempfile::tempdir().unwrap();
    let error = repository_state(dir.path()).unwrap_err();
    assert!(
        matches!(error, CheckpointError::NotAWorkTree { .. }),
        "{error:?}"
    );
}
