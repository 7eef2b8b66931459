#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::changeset::BlobRef;
use crate::testutil::TempRepo;

fn change(kind: ChangeKind, path: &str, old_path: Option<&str>) -> FileChange {
    FileChange {
        kind,
        path: path.to_owned(),
        old_path: old_path.map(str::to_owned),
        lines_added: 0,
        lines_removed: 0,
        binary: false,
        before: None,
        after: None,
    }
}

#[test]
fn a_modified_file_gets_git_headers_and_hunks_with_context() {
    let before = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
    let after = "1\n2\n3\n4\nfive\n6\n7\n8\n9\nten\n";
    let text = unified_diff(
        &change(ChangeKind::Modified, "src/a.txt", None),
        Some(before.as_bytes()),
        Some(after.as_bytes()),
    );
    assert_eq!(
        text,
        "diff --git a/src/a.txt b/src/a.txt\n--- a/src/a.txt\n+++ b/src/a.txt\n\
         @@ -2,8 +2,9 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n 9\n+ten\n"
    );
}

#[test]
fn added_deleted_renamed_binary_and_unchanged_files() {
    let added = unified_diff(
        &change(ChangeKind::Added, "new.txt", None),
        None,
        Some(b"x\n"),
    );
    assert_eq!(
        added,
        "diff --git a/new.txt b/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new.txt\n\
         @@ -0,0 +1,1 @@\n+x\n"
    );
    let deleted = unified_diff(
        &change(ChangeKind::Deleted, "old.txt", None),
        Some(b"y"),
        None,
    );
    assert_eq!(
        deleted,
        "diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n--- a/old.txt\n+++ /dev/null\n\
         @@ -1,1 +0,0 @@\n-y\n\\ No newline at end of file\n"
    );
    let renamed = unified_diff(
        &change(ChangeKind::Renamed, "b.txt", Some("a.txt")),
        Some(b"same\n"),
        Some(b"same\n"),
    );
    assert_eq!(
        renamed,
        "diff --git a/a.txt b/b.txt\nrename from a.txt\nrename to b.txt\n"
    );
    let binary = unified_diff(
        &change(ChangeKind::Modified, "img.bin", None),
        Some(b"\x00a"),
        Some(b"\x00b"),
    );
    assert_eq!(
        binary,
        "diff --git a/img.bin b/img.bin\nBinary files a/img.bin and b/img.bin differ\n"
    );
    assert_eq!(
        unified_diff(
            &change(ChangeKind::Modified, "s.txt", None),
            Some(b"s"),
            Some(b"s")
        ),
        ""
    );
}

/// The text of a whole changeset applies with `git apply` onto the `from` tree and gives the
/// `to` tree (git is the oracle).
#[test]
fn a_changeset_diff_applies_with_git_apply() {
    let repo = TempRepo::init();
    repo.write("edit.txt", "one\ntwo\nthree\n");
    repo.write("gone.txt", "bye\n");
    repo.write(
        "moved/old.txt",
        "a long enough file\nwith several lines\nso that a rename\nis detected\n",
    );
    repo.write("tail.txt", "no newline");
    repo.commit_all("from");
    let from = repo.git(&["rev-parse", "HEAD"]);
    repo.write("edit.txt", "one\n2\nthree\nfour\n");
    repo.remove("gone.txt");
    std::fs::rename(repo.abs("moved/old.txt"), repo.abs("moved/new.txt")).unwrap();
    repo.write(
        "moved/new.txt",
        "a long enough file\nwith several lines\nso that a rename\nis detected\nplus one\n",
    );
    repo.write("added/deep.txt", "x\ny\n");
    repo.write("tail.txt", "no newline, changed");
    repo.commit_all("to");
    let to = repo.git(&["rev-parse", "HEAD"]);

    let opened = repo.open(false);
    let changes = opened.changeset(&from, &to).unwrap();
    let mut text = String::new();
    for change in &changes {
        let read = |blob: &Option<BlobRef>| {
            blob.as_ref()
                .and_then(|blob| opened.read_blob(blob).unwrap())
        };
        text.push_str(&unified_diff(
            change,
            read(&change.before).as_deref(),
            read(&change.after).as_deref(),
        ));
    }
    assert!(text.contains("rename from moved/old.txt"), "{text}");

    repo.git(&["checkout", "--quiet", &from]);
    std::fs::write(repo.abs("patch.diff"), &text).unwrap();
    repo.git(&["apply", "--index", "patch.diff"]);
    std::fs::remove_file(repo.abs("patch.diff")).unwrap();
    assert_eq!(
        repo.git(&["diff", "--cached", "--stat", &to]),
        "",
        "applying the diff to `from` gives `to`:\n{text}"
    );
}
