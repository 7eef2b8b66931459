#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::testutil::TempRepo;

/// Commits the work tree as it is and returns the commit id.
fn snapshot(repo: &TempRepo, message: &str) -> String {
    repo.commit_all(message);
    repo.git(&["rev-parse", "HEAD"])
}

#[test]
fn kinds_line_counts_binary_and_blob_refs() {
    let repo = TempRepo::init();
    repo.write("keep.txt", "same\n");
    repo.write("edit.txt", "one\ntwo\nthree\n");
    repo.write("gone.txt", "bye\n");
    repo.write(
        "moved/old.txt",
        "a long enough file\nwith several lines\nso that a rename\nis detected\n",
    );
    std::fs::write(repo.abs("image.bin"), b"\x00\x01\x02binary").unwrap();
    let from = snapshot(&repo, "from");
    repo.write("edit.txt", "one\n2\nthree\nfour\n");
    repo.remove("gone.txt");
    std::fs::create_dir_all(repo.abs("moved")).unwrap();
    std::fs::rename(repo.abs("moved/old.txt"), repo.abs("moved/new.txt")).unwrap();
    repo.write(
        "moved/new.txt",
        "a long enough file\nwith several lines\nso that a rename\nis detected\nplus one\n",
    );
    repo.write("added/deep.txt", "x\ny\n");
    std::fs::write(repo.abs("image.bin"), b"\x00\x01\x02changed").unwrap();
    let to = snapshot(&repo, "to");

    let opened = repo.open(false);
    let changes = opened.changeset(&from, &to).unwrap();
    let summary: Vec<_> = changes
        .iter()
        .map(|c| {
            (
                c.kind,
                c.path.as_str(),
                c.old_path.as_deref(),
                c.lines_added,
                c.lines_removed,
                c.binary,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (ChangeKind::Added, "added/deep.txt", None, 2, 0, false),
            (ChangeKind::Modified, "edit.txt", None, 2, 1, false),
            (ChangeKind::Deleted, "gone.txt", None, 0, 1, false),
            (ChangeKind::Modified, "image.bin", None, 0, 0, true),
            (
                ChangeKind::Renamed,
                "moved/new.txt",
                Some("moved/old.txt"),
                1,
                0,
                false
            ),
        ]
    );
    let edit = &changes[1];
    assert_eq!(
        edit.before,
        Some(BlobRef {
            rev: from.clone(),
            path: "edit.txt".to_owned()
        })
    );
    assert_eq!(
        opened
            .read_blob(edit.before.as_ref().unwrap())
            .unwrap()
            .as_deref(),
        Some(&b"one\ntwo\nthree\n"[..])
    );
    assert_eq!(
        opened
            .read_blob(edit.after.as_ref().unwrap())
            .unwrap()
            .as_deref(),
        Some(&b"one\n2\nthree\nfour\n"[..])
    );
    assert!(changes[0].before.is_none());
    assert!(changes[2].after.is_none());
    // git agrees on the line counts.
    let numstat = repo.git(&["diff", "--numstat", "-M50%", &from, &to]);
    assert!(numstat.contains("2\t1\tedit.txt"), "{numstat}");
    assert!(numstat.contains("-\t-\timage.bin"), "{numstat}");
}

#[test]
fn equal_revisions_and_equal_trees_are_empty() {
    let repo = TempRepo::init();
    repo.write("a.txt", "a\n");
    let first = snapshot(&repo, "one");
    repo.git(&["commit", "-q", "--allow-empty", "-m", "same tree"]);
    let second = repo.git(&["rev-parse", "HEAD"]);
    let opened = repo.open(false);
    assert!(opened.changeset(&first, &first).unwrap().is_empty());
    assert!(opened.changeset(&first, &second).unwrap().is_empty());
    assert!(
        opened
            .changeset("refs/heads/main", &first)
            .unwrap()
            .is_empty()
    );
}

#[cfg(unix)]
#[test]
fn type_changes_are_modifications() {
    let repo = TempRepo::init();
    repo.write("thing", "a file\n");
    let from = snapshot(&repo, "file");
    repo.remove("thing");
    repo.symlink("elsewhere", "thing");
    let to = snapshot(&repo, "link");
    let changes = repo.open(false).changeset(&from, &to).unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].kind, ChangeKind::Modified);
}

#[test]
fn unknown_revisions_are_typed_errors() {
    let repo = TempRepo::init();
    repo.write("a.txt", "a\n");
    let first = snapshot(&repo, "one");
    let opened = repo.open(false);
    assert!(matches!(
        opened.changeset(&first, "refs/agents/none/checkpoints/turn/1"),
        Err(CheckpointError::UnknownRevision { .. })
    ));
    assert!(matches!(
        opened.changeset("0000000000000000000000000000000000000000", &first),
        Err(CheckpointError::UnknownRevision { .. })
    ));
}

#[test]
fn binary_detection_and_line_counts() {
    assert!(is_binary(b"a\0b"));
    assert!(!is_binary(b"plain text\n"));
    let mut late_nul = vec![b'x'; 9000];
    late_nul.push(0);
    assert!(
        !is_binary(&late_nul),
        "only the first 8000 bytes are probed"
    );
    assert_eq!(line_counts(b"", b"a\nb\n"), (2, 0));
    assert_eq!(line_counts(b"a\nb\n", b"a\nc\n"), (1, 1));
    assert_eq!(line_counts(b"a", b"a\n"), (1, 1));
}
