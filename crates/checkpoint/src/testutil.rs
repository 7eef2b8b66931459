//! Test support: temporary repositories driven by the git CLI, and git's own answers (the
//! oracle) to compare with.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::SystemTime;

use crate::config::{CheckpointConfig, CommitTime};
use crate::repo::Repo;

/// A temporary git repository plus a temporary `HOME`, so no machine-wide configuration leaks in.
pub struct TempRepo {
    pub dir: tempfile::TempDir,
    pub home: tempfile::TempDir,
}

impl TempRepo {
    /// `git init` with the given extra arguments (e.g. `--object-format=sha256`).
    pub fn init_with(args: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let repo = Self { dir, home };
        let mut init = vec!["init", "-q", "-b", "main"];
        init.extend_from_slice(args);
        repo.git(&init);
        repo
    }

    pub fn init() -> Self {
        Self::init_with(&[])
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn abs(&self, rela: &str) -> PathBuf {
        self.dir.path().join(rela)
    }

    /// A `git` command in the repository with an isolated configuration and a fixed identity.
    pub fn command(&self) -> Command {
        git_command(self.dir.path(), self.home.path())
    }

    /// Runs git and returns its trimmed stdout; panics with stderr on failure.
    pub fn git(&self, args: &[&str]) -> String {
        let output = self.command().args(args).output().unwrap();
        assert!(
            output.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    }

    /// Runs git and reports success.
    pub fn git_ok(&self, args: &[&str]) -> bool {
        self.command().args(args).output().unwrap().status.success()
    }

    pub fn write(&self, rela: &str, content: &str) {
        let path = self.abs(rela);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    pub fn read(&self, rela: &str) -> Option<String> {
        std::fs::read_to_string(self.abs(rela)).ok()
    }

    pub fn remove(&self, rela: &str) {
        std::fs::remove_file(self.abs(rela)).unwrap();
    }

    #[cfg(unix)]
    pub fn chmod(&self, rela: &str, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(self.abs(rela), std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[cfg(unix)]
    pub fn symlink(&self, target: &str, rela: &str) {
        let path = self.abs(rela);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, path).unwrap();
    }

    /// `git add -A && git commit`.
    pub fn commit_all(&self, message: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
    }

    /// The oracle: the tree the reference implementation's temporary-index sequence produces
    /// (`read-tree HEAD` or `read-tree --empty`; `add -A`; `write-tree`).
    pub fn oracle_tree(&self) -> String {
        let scratch = tempfile::tempdir().unwrap();
        let index = scratch.path().join("index");
        let run = |args: &[&str]| {
            let output = self
                .command()
                .env("GIT_INDEX_FILE", &index)
                .args(args)
                .output()
                .unwrap();
            assert!(
                output.status.success(),
                "oracle git {args:?} failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            String::from_utf8(output.stdout).unwrap().trim().to_owned()
        };
        if self.git_ok(&["rev-parse", "--verify", "-q", "HEAD"]) {
            run(&["read-tree", "HEAD"]);
        } else {
            run(&["read-tree", "--empty"]);
        }
        run(&["add", "-A"]);
        run(&["write-tree"])
    }

    /// The bytes and modification time of `.git/index` (None when there is none).
    pub fn index_snapshot(&self) -> Option<(Vec<u8>, SystemTime)> {
        let path = self.abs(".git/index");
        let bytes = std::fs::read(&path).ok()?;
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        Some((bytes, mtime))
    }

    /// Opens the repository for capture.
    pub fn open(&self, watch: bool) -> Repo {
        Repo::open(self.path(), Arc::new(config(watch))).unwrap()
    }
}

/// A configuration with a fixed commit time (stable ids).
pub fn config(watch: bool) -> CheckpointConfig {
    CheckpointConfig {
        commit_time: CommitTime::Fixed(1_700_000_000),
        watch,
        ..CheckpointConfig::default()
    }
}

/// A `git` command in `dir` with the isolated configuration under `home` and a fixed identity.
pub fn git_command(dir: &std::path::Path, home: &std::path::Path) -> Command {
    let mut command = Command::new("git");
    command
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .env("GIT_AUTHOR_DATE", "1700000000 +0000")
        .env("GIT_COMMITTER_DATE", "1700000000 +0000");
    command
}
