#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::testutil::TempRepo;

/// A repository with a bit of everything, committed.
fn seeded() -> TempRepo {
    let repo = TempRepo::init();
    repo.write("README.md", "hello\n");
    repo.write("src/lib.rs", "fn main() {}\n");
    repo.write("src/deep/nested/file.txt", "deep\n");
    repo.write("docs/guide.md", "guide\n");
    repo.write(".gitignore", "target/\n*.log\n");
    repo.write("keep.log", "tracked although ignored\n");
    repo.git(&["add", "-A"]);
    repo.git(&["add", "-f", "keep.log"]);
    repo.git(&["commit", "-q", "-m", "seed"]);
    repo
}

/// Captures with and without the watcher, checks both against the oracle and the index bytes.
fn check(repo: &TempRepo, what: &str) {
    let before = repo.index_snapshot();
    let oracle = repo.oracle_tree();
    for watch in [false, true] {
        let opened = repo.open(watch);
        let capture = opened.capture_tree().unwrap();
        assert_eq!(
            capture.tree, oracle,
            "{what} (watch: {watch}): first capture"
        );
    }
    assert_eq!(
        repo.index_snapshot(),
        before,
        "{what}: the user's index changed"
    );
}

#[test]
fn clean_repository_captures_head_tree() {
    let repo = seeded();
    check(&repo, "clean");
    assert_eq!(repo.oracle_tree(), repo.git(&["rev-parse", "HEAD^{tree}"]));
}

#[test]
fn modifications_deletions_renames_untracked_and_ignored() {
    let repo = seeded();
    repo.write("README.md", "changed\n");
    repo.remove("docs/guide.md");
    repo.git(&["mv", "src/lib.rs", "src/main.rs"]);
    repo.write("new/dir/a.txt", "a\n");
    repo.write("new/dir/b.txt", "b\n");
    repo.write("new/c.txt", "c\n");
    repo.write("target/debug/out.bin", "ignored\n");
    repo.write("debug.log", "ignored\n");
    repo.write("keep.log", "tracked-ignored changed\n");
    check(&repo, "mixed changes");
}

#[test]
fn staged_then_reverted_is_captured_as_in_the_work_tree() {
    let repo = seeded();
    repo.write("README.md", "staged\n");
    repo.git(&["add", "README.md"]);
    repo.write("README.md", "hello\n");
    repo.write("staged-new.txt", "x\n");
    repo.git(&["add", "staged-new.txt"]);
    repo.remove("staged-new.txt");
    check(&repo, "staged then reverted");
}

#[cfg(unix)]
#[test]
fn symlinks_and_executable_bits() {
    let repo = seeded();
    repo.write("run.sh", "#!/bin/sh\n");
    repo.chmod("run.sh", 0o755);
    repo.symlink("README.md", "link-to-readme");
    repo.symlink("src", "link-to-dir");
    repo.commit_all("links");
    check(&repo, "committed links");
    repo.chmod("run.sh", 0o644);
    repo.chmod("README.md", 0o755);
    std::fs::remove_file(repo.abs("link-to-readme")).unwrap();
    repo.symlink("docs/guide.md", "link-to-readme");
    repo.symlink("nowhere", "dangling");
    check(&repo, "changed links and modes");
}

#[test]
fn empty_repository_with_files() {
    let repo = TempRepo::init();
    check(&repo, "empty repository, empty work tree");
    repo.write("a.txt", "a\n");
    repo.write("sub/b.txt", "b\n");
    repo.write("ignored.tmp", "x\n");
    repo.write(".gitignore", "*.tmp\n");
    check(&repo, "unborn HEAD with files");
}

#[test]
fn empty_repository_empty_tree_per_format() {
    let repo = TempRepo::init();
    let opened = repo.open(false);
    let capture = opened.capture_tree().unwrap();
    assert_eq!(capture.tree, "4b825dc642cb6eb9a060e54bf8d69288fbee4904");
    assert_eq!(
        capture.tree,
        crate::repo::empty_tree(opened.object_format())
    );
}

#[test]
fn sha256_repository_is_supported() {
    let repo = TempRepo::init_with(&["--object-format=sha256"]);
    let opened = repo.open(false);
    assert_eq!(opened.object_format(), crate::repo::ObjectFormat::Sha256);
    assert_eq!(
        opened.capture_tree().unwrap().tree,
        "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"
    );
    repo.write("a.txt", "a\n");
    repo.commit_all("one");
    repo.write("a.txt", "b\n");
    repo.write("new.txt", "n\n");
    check(&repo, "sha256");
}

#[test]
fn repeated_captures_follow_changes_with_and_without_watcher() {
    let repo = seeded();
    for watch in [false, true] {
        let opened = repo.open(watch);
        let first = opened.capture_tree().unwrap();
        assert_eq!(first.tree, repo.oracle_tree());
        let again = opened.capture_tree().unwrap();
        assert_eq!(again.tree, first.tree);
        if watch {
            assert!(again.stats.full_scan.is_none(), "{:?}", again.stats);
            assert_eq!(again.stats.files_hashed, 0);
        }
        let steps: Vec<Box<dyn Fn()>> = vec![
            Box::new(|| repo.write("README.md", format!("v{watch}\n").as_str())),
            Box::new(|| repo.write("fresh/one.txt", "1\n")),
            Box::new(|| repo.write("fresh/deeper/two.txt", "2\n")),
            Box::new(|| std::fs::remove_dir_all(repo.abs("fresh")).unwrap()),
            Box::new(|| repo.remove("src/deep/nested/file.txt")),
            Box::new(|| repo.write("src/deep/nested/file.txt", "back\n")),
            Box::new(|| std::fs::rename(repo.abs("docs"), repo.abs("documentation")).unwrap()),
            Box::new(|| repo.write("more.log", "ignored\n")),
            Box::new(|| repo.write(".gitignore", "target/\n")),
            Box::new(|| repo.write(".gitignore", "target/\n*.log\n")),
            Box::new(|| repo.commit_all("moved HEAD")),
            Box::new(|| repo.write("target/x.txt", "ignored dir\n")),
        ];
        for (i, step) in steps.iter().enumerate() {
            step();
            let capture = opened.capture_tree().unwrap();
            assert_eq!(
                capture.tree,
                repo.oracle_tree(),
                "step {i} (watch: {watch}): {:?}",
                capture.stats
            );
            if watch {
                // .gitignore edits and the commit force full passes; the rest is watched.
                let expect_full = matches!(i, 8..=10);
                assert_eq!(
                    capture.stats.full_scan.is_some(),
                    expect_full,
                    "step {i}: {:?}",
                    capture.stats
                );
                if !expect_full {
                    assert!(
                        capture.stats.files_hashed <= 2,
                        "step {i}: {:?}",
                        capture.stats
                    );
                }
            }
        }
        repo.git(&["reset", "-q", "--hard", "HEAD~1"]);
        repo.git(&["clean", "-q", "-fdx", "-e", "keep.log"]);
    }
}

#[test]
fn large_untracked_files_are_skipped_and_reported() {
    let repo = seeded();
    let mut config = crate::testutil::config(false);
    config.max_untracked_file_bytes = 10;
    let opened = crate::repo::Repo::open(repo.path(), std::sync::Arc::new(config)).unwrap();
    repo.write("big.txt", "more than ten bytes\n");
    repo.write("small.txt", "tiny\n");
    repo.write(
        "README.md",
        "tracked files are never capped, whatever their size\n",
    );
    let capture = opened.capture_tree().unwrap();
    assert_eq!(
        capture.skipped,
        vec![crate::capture::SkippedFile {
            path: "big.txt".to_owned(),
            bytes: 20
        }]
    );
    repo.remove("big.txt");
    assert_eq!(capture.tree, repo.oracle_tree());
}

#[test]
fn nested_repository_becomes_a_gitlink() {
    let repo = seeded();
    let nested = repo.abs("vendor/lib");
    std::fs::create_dir_all(&nested).unwrap();
    let run = |args: &[&str]| {
        let status = repo
            .command()
            .current_dir(&nested)
            .args(args)
            .status()
            .unwrap();
        assert!(status.success());
    };
    run(&["init", "-q"]);
    std::fs::write(nested.join("x.txt"), "x\n").unwrap();
    run(&["add", "x.txt"]);
    run(&["commit", "-q", "-m", "nested"]);
    check(&repo, "untracked nested repository");
    let opened = repo.open(true);
    opened.capture_tree().unwrap();
    std::fs::write(nested.join("y.txt"), "y\n").unwrap();
    run(&["add", "y.txt"]);
    run(&["commit", "-q", "-m", "nested 2"]);
    assert_eq!(opened.capture_tree().unwrap().tree, repo.oracle_tree());
}

#[test]
fn core_filemode_false_keeps_recorded_modes() {
    let repo = seeded();
    repo.git(&["config", "core.fileMode", "false"]);
    #[cfg(unix)]
    {
        repo.chmod("README.md", 0o755);
        repo.write("new.sh", "x\n");
        repo.chmod("new.sh", 0o755);
    }
    check(&repo, "core.fileMode=false");
}

#[test]
fn index_lock_held_by_another_process_does_not_matter() {
    let repo = seeded();
    std::fs::write(repo.abs(".git/index.lock"), b"").unwrap();
    repo.write("README.md", "while locked\n");
    let opened = repo.open(false);
    let capture = opened.capture_tree().unwrap();
    std::fs::remove_file(repo.abs(".git/index.lock")).unwrap();
    assert_eq!(capture.tree, repo.oracle_tree());
}

/// Another writer rewrites a file while captures read it (two sessions sharing one folder):
/// a file that shrinks under the reader must not fail the capture.
#[test]
fn a_file_rewritten_during_the_capture_does_not_fail_it() {
    let repo = seeded();
    let path = repo.abs("churn.bin");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let stop = std::sync::Arc::clone(&stop);
        let path = path.clone();
        std::thread::spawn(move || {
            let mut n = 0usize;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                n += 1;
                // Alternately long and short: a read sized for the long one hits the end early.
                let len = if n.is_multiple_of(2) { 256 << 10 } else { 1 };
                let _ = std::fs::write(&path, vec![b'x'; len]);
            }
        })
    };
    let opened = repo.open(false);
    let mut failures = Vec::new();
    for _ in 0..200 {
        if let Err(error) = opened.capture_tree() {
            failures.push(error.to_string());
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    assert!(
        failures.is_empty(),
        "{} failures: {:?}",
        failures.len(),
        failures.first()
    );
}

/// What a capture retries on: a file that shrank under the reader, and nothing else.
#[test]
fn a_file_changed_while_read_is_recognised_and_other_failures_are_not() {
    let git = |kind: std::io::ErrorKind, message: &str| crate::CheckpointError::Git {
        context: "compare the work tree with the previous capture",
        source: Box::new(gix::Error::from_error(std::io::Error::new(
            kind,
            message.to_owned(),
        ))),
    };
    let shrank = git(
        std::io::ErrorKind::UnexpectedEof,
        "failed to fill whole buffer",
    );
    assert!(shrank.is_file_changed_while_read(), "{shrank}");
    let io = crate::CheckpointError::Io {
        action: "read",
        path: "a.txt".into(),
        source: std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "short read"),
    };
    assert!(io.is_file_changed_while_read());
    let denied = git(std::io::ErrorKind::PermissionDenied, "no");
    assert!(!denied.is_file_changed_while_read(), "{denied}");
    assert!(!crate::CheckpointError::EmptySessionId.is_file_changed_while_read());
}
