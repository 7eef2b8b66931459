#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;

/// A repository at `<tempdir>/proj`, so its worktrees (`<tempdir>/proj.worktrees/…`) are removed
/// with the temporary directory, plus a temporary `HOME`.
struct Fixture {
    parent: tempfile::TempDir,
    home: tempfile::TempDir,
}

impl Fixture {
    /// `git init` without a commit.
    fn unborn() -> Self {
        let fixture = Self {
            parent: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir(fixture.root()).unwrap();
        fixture.git(&["init", "-q", "-b", "main"]);
        fixture
    }

    /// A repository with two commits, a file in a subdirectory, and uncommitted work of every
    /// kind: a modified file, a staged file, an untracked file.
    fn new() -> Self {
        let fixture = Self::unborn();
        fixture.write("a.txt", "one\n");
        fixture.write("src/b.txt", "b\n");
        fixture.commit_all("one");
        fixture.write("a.txt", "two\n");
        fixture.write(".gitignore", "*.log\n");
        fixture.commit_all("two");
        fixture.write("a.txt", "modified, not committed\n");
        fixture.write("staged.txt", "staged\n");
        fixture.git(&["add", "staged.txt"]);
        fixture.write("untracked.txt", "untracked\n");
        fixture
    }

    fn root(&self) -> PathBuf {
        self.parent.path().join("proj")
    }

    /// `<canonical parent>/proj.worktrees/<name>`.
    fn expected_path(&self, name: &str) -> PathBuf {
        std::fs::canonicalize(self.parent.path())
            .unwrap()
            .join("proj.worktrees")
            .join(name)
    }

    fn container(&self) -> PathBuf {
        self.parent.path().join("proj.worktrees")
    }

    fn command_in(&self, dir: &Path) -> Command {
        crate::testutil::git_command(dir, self.home.path())
    }

    /// Runs git in `dir` and returns its trimmed stdout; panics with stderr on failure.
    fn git_in(&self, dir: &Path, args: &[&str]) -> String {
        let output = self.command_in(dir).args(args).output().unwrap();
        assert!(
            output.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    }

    fn git(&self, args: &[&str]) -> String {
        self.git_in(&self.root(), args)
    }

    fn git_ok(&self, args: &[&str]) -> bool {
        self.command_in(&self.root())
            .args(args)
            .output()
            .unwrap()
            .status
            .success()
    }

    fn write(&self, rela: &str, content: &str) {
        let path = self.root().join(rela);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    fn commit_all(&self, message: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", message]);
    }

    fn branch_exists(&self, branch: &str) -> bool {
        self.git_ok(&[
            "rev-parse",
            "--verify",
            "-q",
            &format!("refs/heads/{branch}"),
        ])
    }

    /// Everything of the user's side a worktree operation must not touch.
    fn user_state(&self) -> UserState {
        UserState {
            status: self.git(&["status", "--porcelain", "--untracked-files=all"]),
            head: self.git(&["rev-parse", "HEAD"]),
            head_ref: self.git(&["symbolic-ref", "HEAD"]),
            index: std::fs::read(self.root().join(".git/index")).unwrap(),
            a_txt: std::fs::read_to_string(self.root().join("a.txt")).unwrap(),
            branches: self.git(&[
                "for-each-ref",
                "--format=%(refname) %(objectname)",
                "refs/heads",
            ]),
        }
    }

    /// The registered worktree paths, as `git worktree list` reports them.
    fn registered(&self) -> Vec<PathBuf> {
        self.git(&["worktree", "list", "--porcelain"])
            .lines()
            .filter_map(|line| line.strip_prefix("worktree "))
            .map(PathBuf::from)
            .collect()
    }
}

#[derive(Debug, PartialEq, Eq)]
struct UserState {
    status: String,
    head: String,
    head_ref: String,
    index: Vec<u8>,
    a_txt: String,
    branches: String,
}

/// Asserts that `result` is a refusal of the given kind.
fn assert_refused(result: Result<Worktree, CheckpointError>, expected: &WorktreeRefusal) {
    match result {
        Err(CheckpointError::WorktreeRefused { refusal, .. }) => assert_eq!(&refusal, expected),
        other => panic!("expected a refusal ({expected}), got {other:?}"),
    }
}

#[test]
fn create_puts_a_linked_worktree_at_the_sibling_path_on_a_new_branch_at_head() {
    let fixture = Fixture::new();
    let before = fixture.user_state();

    // From a subdirectory of the work tree.
    let worktree = create_worktree(&fixture.root().join("src"), "s1").unwrap();

    assert_eq!(
        worktree,
        Worktree {
            repo_root: std::fs::canonicalize(fixture.root()).unwrap(),
            path: fixture.expected_path("s1"),
            branch: "agents/s1".into(),
            base: before.head.clone(),
        }
    );
    // HEAD's files are there — the committed content, not the user's uncommitted changes.
    let path = &worktree.path;
    assert_eq!(
        std::fs::read_to_string(path.join("a.txt")).unwrap(),
        "two\n"
    );
    assert_eq!(
        std::fs::read_to_string(path.join("src/b.txt")).unwrap(),
        "b\n"
    );
    assert_eq!(
        std::fs::read_to_string(path.join(".gitignore")).unwrap(),
        "*.log\n"
    );
    assert!(!path.join("staged.txt").exists());
    assert!(!path.join("untracked.txt").exists());

    // git agrees: a linked worktree on agents/s1 at HEAD, clean (its index matches the files).
    assert_eq!(
        fixture.git_in(path, &["symbolic-ref", "HEAD"]),
        "refs/heads/agents/s1"
    );
    assert_eq!(fixture.git_in(path, &["rev-parse", "HEAD"]), before.head);
    assert_eq!(
        fixture.git_in(path, &["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
    assert_eq!(
        fixture.git_in(
            path,
            &["rev-parse", "--path-format=absolute", "--git-common-dir"]
        ),
        std::fs::canonicalize(fixture.root().join(".git"))
            .unwrap()
            .to_string_lossy()
    );
    assert!(fixture.registered().contains(path));
    assert_eq!(fixture.git(&["rev-parse", "agents/s1"]), before.head);
    assert!(worktree_exists(&worktree));

    // The user's side is untouched (except for the new branch).
    let after = fixture.user_state();
    assert_eq!(after.status, before.status);
    assert_eq!(after.head, before.head);
    assert_eq!(after.head_ref, "refs/heads/main");
    assert_eq!(after.head_ref, before.head_ref);
    assert_eq!(after.index, before.index);
    assert_eq!(after.a_txt, before.a_txt);
    assert_eq!(
        after.branches,
        format!(
            "refs/heads/agents/s1 {head}\nrefs/heads/main {head}",
            head = before.head
        )
    );
}

#[test]
fn two_worktrees_of_one_repository_live_side_by_side() {
    let fixture = Fixture::new();
    let first = create_worktree(&fixture.root(), "first").unwrap();
    let second = create_worktree(&fixture.root(), "second.one_2-b").unwrap();
    assert_eq!(first.path, fixture.expected_path("first"));
    assert_eq!(second.path, fixture.expected_path("second.one_2-b"));
    assert!(worktree_exists(&first));
    assert!(worktree_exists(&second));
    assert_eq!(fixture.registered().len(), 3);
}

#[test]
fn invalid_names_are_refused_and_create_nothing() {
    let fixture = Fixture::new();
    let before = fixture.user_state();
    let long = "a".repeat(MAX_WORKTREE_NAME_LEN + 1);
    for name in [
        "",
        ".",
        "..",
        ".hidden",
        "-rf",
        "a/b",
        "../x",
        "..\\x",
        "/abs",
        "a b",
        "tab\t",
        "new\nline",
        "é",
        "a..b",
        "x.lock",
        "trailing.",
        "star*",
        "at@{1}",
        long.as_str(),
    ] {
        match create_worktree(&fixture.root(), name) {
            Err(CheckpointError::InvalidWorktreeName {
                name: rejected,
                reason,
            }) => {
                assert_eq!(rejected, name);
                assert!(!reason.is_empty());
            }
            other => panic!("{name:?} was not refused: {other:?}"),
        }
        assert!(validate_worktree_name(name).is_err(), "{name:?}");
    }
    assert!(!fixture.container().exists());
    assert!(!fixture.parent.path().join("x").exists());
    assert_eq!(fixture.user_state(), before);
    assert_eq!(fixture.registered().len(), 1);

    for name in ["a", "A-b_c.d", "0", "v1.2", "a-", "a_"] {
        validate_worktree_name(name).unwrap();
    }
    validate_worktree_name(&"a".repeat(MAX_WORKTREE_NAME_LEN)).unwrap();
}

#[test]
fn an_existing_path_is_refused() {
    let fixture = Fixture::new();
    std::fs::create_dir_all(fixture.container().join("taken")).unwrap();
    std::fs::write(fixture.container().join("file"), "x").unwrap();
    let before = fixture.user_state();

    for name in ["taken", "file"] {
        assert_refused(
            create_worktree(&fixture.root(), name),
            &WorktreeRefusal::PathExists(fixture.expected_path(name)),
        );
        assert!(!fixture.branch_exists(&format!("agents/{name}")));
    }
    // Also a path already holding a worktree of ours.
    let first = create_worktree(&fixture.root(), "s1").unwrap();
    fixture.git(&["branch", "-q", "-m", "agents/s1", "agents/renamed"]);
    assert_refused(
        create_worktree(&fixture.root(), "s1"),
        &WorktreeRefusal::PathExists(first.path.clone()),
    );
    assert!(!fixture.branch_exists("agents/s1"));
    assert_eq!(fixture.user_state().index, before.index);
    assert_eq!(fixture.user_state().status, before.status);
}

#[test]
fn an_existing_branch_is_refused() {
    let fixture = Fixture::new();
    fixture.git(&["branch", "agents/s1", "HEAD~1"]);
    let before = fixture.user_state();

    assert_refused(
        create_worktree(&fixture.root(), "s1"),
        &WorktreeRefusal::BranchExists("agents/s1".into()),
    );
    assert!(!fixture.container().exists());
    assert_eq!(fixture.user_state(), before);
    assert_eq!(fixture.registered().len(), 1);
}

#[test]
fn a_repository_without_commits_is_refused() {
    let fixture = Fixture::unborn();
    fixture.write("a.txt", "a\n");

    assert_refused(
        create_worktree(&fixture.root(), "s1"),
        &WorktreeRefusal::UnbornHead,
    );
    assert!(!fixture.container().exists());
    assert!(!fixture.branch_exists("agents/s1"));
    assert_eq!(fixture.registered().len(), 1);
}

#[test]
fn a_folder_outside_any_repository_is_not_a_work_tree() {
    let dir = tempfile::tempdir().unwrap();
    let inner = dir.path().join("proj");
    std::fs::create_dir(&inner).unwrap();

    match create_worktree(&inner, "s1") {
        Err(CheckpointError::NotAWorkTree { path }) => assert_eq!(path, inner),
        other => panic!("expected NotAWorkTree, got {other:?}"),
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn a_bare_repository_is_not_a_work_tree() {
    let fixture = Fixture::new();
    let bare = fixture.parent.path().join("bare.git");
    fixture.git(&["clone", "-q", "--bare", ".", bare.to_str().unwrap()]);

    assert!(matches!(
        create_worktree(&bare, "s1"),
        Err(CheckpointError::NotAWorkTree { .. })
    ));
    assert!(!fixture.parent.path().join("bare.git.worktrees").exists());
}

#[test]
fn remove_deletes_the_directory_and_the_unchanged_branch() {
    let fixture = Fixture::new();
    let worktree = create_worktree(&fixture.root(), "s1").unwrap();
    // Uncommitted work in the worktree does not prevent removal (`--force`).
    std::fs::write(worktree.path.join("a.txt"), "edited by the agent\n").unwrap();
    std::fs::write(worktree.path.join("new.txt"), "new\n").unwrap();
    let before = fixture.user_state();

    let removal = remove_worktree(&worktree).unwrap();

    assert_eq!(
        removal,
        WorktreeRemoval {
            removed_dir: true,
            unregistered: true,
            branch_deleted: true,
            branch_kept: false,
        }
    );
    assert!(!worktree.path.exists());
    assert!(!fixture.branch_exists("agents/s1"));
    assert_eq!(fixture.registered().len(), 1);
    assert!(!fixture.root().join(".git/worktrees/s1").exists());
    assert!(!worktree_exists(&worktree));
    // Nothing left for git to prune.
    assert_eq!(fixture.git(&["worktree", "prune", "-n", "-v"]), "");

    let after = fixture.user_state();
    assert_eq!(after.status, before.status);
    assert_eq!(after.head, before.head);
    assert_eq!(after.index, before.index);
    assert_eq!(after.a_txt, before.a_txt);

    // A second removal finds nothing to do.
    assert_eq!(
        remove_worktree(&worktree).unwrap(),
        WorktreeRemoval::default()
    );
}

#[test]
fn remove_keeps_the_branch_when_a_commit_was_made_in_the_worktree() {
    let fixture = Fixture::new();
    let worktree = create_worktree(&fixture.root(), "s1").unwrap();
    std::fs::write(worktree.path.join("agent.txt"), "work\n").unwrap();
    fixture.git_in(&worktree.path, &["add", "agent.txt"]);
    fixture.git_in(&worktree.path, &["commit", "-q", "-m", "agent work"]);
    let tip = fixture.git_in(&worktree.path, &["rev-parse", "HEAD"]);
    assert_ne!(tip, worktree.base);

    let removal = remove_worktree(&worktree).unwrap();

    assert_eq!(
        removal,
        WorktreeRemoval {
            removed_dir: true,
            unregistered: true,
            branch_deleted: false,
            branch_kept: true,
        }
    );
    assert!(!worktree.path.exists());
    assert_eq!(fixture.git(&["rev-parse", "refs/heads/agents/s1"]), tip);
    assert_eq!(fixture.git(&["show", "agents/s1:agent.txt"]), "work");
    assert_eq!(fixture.registered().len(), 1);
}

#[test]
fn remove_tolerates_a_directory_deleted_by_hand() {
    let fixture = Fixture::new();
    let worktree = create_worktree(&fixture.root(), "s1").unwrap();
    std::fs::remove_dir_all(&worktree.path).unwrap();
    assert!(!worktree_exists(&worktree));

    let removal = remove_worktree(&worktree).unwrap();

    assert_eq!(
        removal,
        WorktreeRemoval {
            removed_dir: false,
            unregistered: true,
            branch_deleted: true,
            branch_kept: false,
        }
    );
    // The registration is pruned.
    assert_eq!(fixture.registered().len(), 1);
    assert!(!fixture.root().join(".git/worktrees/s1").exists());
    assert_eq!(fixture.git(&["worktree", "prune", "-n", "-v"]), "");
    assert!(!fixture.branch_exists("agents/s1"));
    // And the name is free again.
    let again = create_worktree(&fixture.root(), "s1").unwrap();
    assert!(worktree_exists(&again));
}

#[test]
fn remove_keeps_a_branch_checked_out_elsewhere() {
    let fixture = Fixture::new();
    let worktree = create_worktree(&fixture.root(), "s1").unwrap();
    // The user removes the worktree and checks its branch out in another one.
    fixture.git(&[
        "worktree",
        "remove",
        "--force",
        worktree.path.to_str().unwrap(),
    ]);
    let elsewhere = fixture.parent.path().join("elsewhere");
    fixture.git(&[
        "worktree",
        "add",
        "-q",
        elsewhere.to_str().unwrap(),
        "agents/s1",
    ]);

    let removal = remove_worktree(&worktree).unwrap();

    assert_eq!(
        removal,
        WorktreeRemoval {
            removed_dir: false,
            unregistered: false,
            branch_deleted: false,
            branch_kept: true,
        }
    );
    assert!(fixture.branch_exists("agents/s1"));
    assert!(elsewhere.join("a.txt").exists());
}

#[test]
fn remove_never_deletes_a_branch_outside_agents() {
    let fixture = Fixture::new();
    let mut worktree = create_worktree(&fixture.root(), "s1").unwrap();
    // A tampered record naming the user's branch, which points at the same commit.
    worktree.branch = "main".into();

    let removal = remove_worktree(&worktree).unwrap();

    assert!(removal.removed_dir);
    assert!(!removal.branch_deleted);
    assert!(removal.branch_kept);
    assert!(fixture.branch_exists("main"));
}

#[test]
fn remove_leaves_an_unregistered_directory_alone() {
    let fixture = Fixture::new();
    let worktree = Worktree {
        repo_root: std::fs::canonicalize(fixture.root()).unwrap(),
        path: std::fs::canonicalize(fixture.root().join("src")).unwrap(),
        branch: "agents/none".into(),
        base: fixture.git(&["rev-parse", "HEAD"]),
    };
    assert!(!worktree_exists(&worktree));

    assert_eq!(
        remove_worktree(&worktree).unwrap(),
        WorktreeRemoval::default()
    );
    assert!(fixture.root().join("src/b.txt").exists());

    // Nor the main work tree.
    let main = Worktree {
        path: worktree.repo_root.clone(),
        ..worktree
    };
    assert!(!worktree_exists(&main));
    assert_eq!(remove_worktree(&main).unwrap(), WorktreeRemoval::default());
    assert!(fixture.root().join("a.txt").exists());
}

#[test]
fn worktree_exists_is_false_for_a_worktree_of_another_repository() {
    let fixture = Fixture::new();
    let other = Fixture::new();
    let worktree = create_worktree(&other.root(), "s1").unwrap();
    assert!(worktree_exists(&worktree));

    let foreign = Worktree {
        repo_root: std::fs::canonicalize(fixture.root()).unwrap(),
        ..worktree
    };
    assert!(!worktree_exists(&foreign));
}

#[test]
fn removal_failures_name_the_repository() {
    let fixture = Fixture::new();
    let worktree = create_worktree(&fixture.root(), "s1").unwrap();
    let gone = Worktree {
        repo_root: fixture.parent.path().join("missing"),
        ..worktree
    };
    assert!(matches!(
        remove_worktree(&gone),
        Err(CheckpointError::NotAWorkTree { .. })
    ));
}

#[test]
fn a_worktree_is_serializable() {
    // serde_json is not a dependency of this crate: only the derive is checked.
    fn assert_serde<T: serde::Serialize + for<'de> serde::Deserialize<'de>>() {}
    assert_serde::<Worktree>();
}

#[test]
fn a_failed_creation_leaves_no_branch_behind() {
    let fixture = Fixture::new();
    // The container cannot be created: a file is in its way.
    std::fs::write(fixture.container(), "in the way").unwrap();

    assert!(matches!(
        create_worktree(&fixture.root(), "s1"),
        Err(CheckpointError::Io { .. })
    ));
    assert!(!fixture.branch_exists("agents/s1"));
    assert_eq!(fixture.registered().len(), 1);
}

#[test]
fn a_failed_checkout_deletes_the_new_branch() {
    let fixture = Fixture::new();
    // A stale registration of the same path (its directory deleted by hand, never pruned): gix
    // refuses the destination after the branch was created.
    let path = fixture.expected_path("s1");
    fixture.git(&["worktree", "add", "-q", "--detach", path.to_str().unwrap()]);
    std::fs::remove_dir_all(&path).unwrap();

    let error = create_worktree(&fixture.root(), "s1").unwrap_err();

    assert!(matches!(error, CheckpointError::Git { .. }), "{error}");
    assert!(!fixture.branch_exists("agents/s1"));
    assert!(!path.exists());
    assert_eq!(fixture.registered().len(), 2);
}
