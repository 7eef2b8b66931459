#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::Path;

use gix::bstr::BStr;

use super::*;

fn never(_: &BStr, _: &Path) -> bool {
    false
}

fn paths(changes: Changes) -> BTreeSet<String> {
    match changes {
        Changes::Paths(paths) => paths.iter().map(ToString::to_string).collect(),
        Changes::Everything(reason) => panic!("unexpected full pass: {reason}"),
    }
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|item| (*item).to_owned()).collect()
}

#[test]
fn reports_files_new_directories_and_deletions() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
    std::fs::write(dir.path().join("a/b/old.txt"), "x").unwrap();
    let mut watcher = Watcher::start(dir.path(), &mut never).unwrap();
    assert_eq!(watcher.watched_dirs(), 3);
    assert!(paths(watcher.drain(&mut never)).is_empty());

    std::fs::write(dir.path().join("a/b/old.txt"), "changed").unwrap();
    std::fs::write(dir.path().join("top.txt"), "new").unwrap();
    assert_eq!(
        paths(watcher.drain(&mut never)),
        set(&["a/b/old.txt", "top.txt"])
    );

    // A directory created with files inside before it could be watched: reported as a whole,
    // and watched from now on.
    std::fs::create_dir_all(dir.path().join("n/m")).unwrap();
    std::fs::write(dir.path().join("n/m/f.txt"), "f").unwrap();
    assert_eq!(paths(watcher.drain(&mut never)), set(&["n"]));
    std::fs::write(dir.path().join("n/m/g.txt"), "g").unwrap();
    assert_eq!(paths(watcher.drain(&mut never)), set(&["n/m/g.txt"]));

    std::fs::remove_dir_all(dir.path().join("a")).unwrap();
    let gone = paths(watcher.drain(&mut never));
    assert!(gone.contains("a"), "{gone:?}");
}

#[test]
fn moved_directories_are_rewatched_under_their_new_name() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("old/sub")).unwrap();
    let mut watcher = Watcher::start(dir.path(), &mut never).unwrap();
    std::fs::rename(dir.path().join("old"), dir.path().join("new")).unwrap();
    assert_eq!(paths(watcher.drain(&mut never)), set(&["new", "old"]));
    std::fs::write(dir.path().join("new/sub/file.txt"), "x").unwrap();
    assert_eq!(paths(watcher.drain(&mut never)), set(&["new/sub/file.txt"]));
}

#[test]
fn rule_files_force_a_full_pass_and_skipped_directories_are_silent() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("target/debug")).unwrap();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    let mut skip = |rela: &BStr, _: &Path| rela == "target" || rela == ".git";
    let mut watcher = Watcher::start(dir.path(), &mut skip).unwrap();
    std::fs::write(dir.path().join("target/debug/out"), "x").unwrap();
    std::fs::write(dir.path().join(".git/index"), "x").unwrap();
    assert!(paths(watcher.drain(&mut skip)).is_empty());
    std::fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
    assert!(matches!(watcher.drain(&mut skip), Changes::Everything(_)));
}
