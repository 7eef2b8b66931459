use std::fs;
use std::path::PathBuf;

use super::check;

/// A fresh, empty directory for one test.
fn scratch_directory(test: &str) -> PathBuf {
    let directory = std::env::temp_dir().join(format!("xtask-{test}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&directory);
    fs::create_dir_all(&directory).unwrap();
    directory
}

fn touch(root: &std::path::Path, relative: &str) {
    let path = root.join(relative);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, "").unwrap();
}

#[test]
fn pending_snapshots_outside_target_are_reported() {
    let root = scratch_directory("pending-snapshots");
    touch(
        &root,
        "crates/contributions/builtin/src/snapshots/order.snap",
    );
    touch(
        &root,
        "crates/contributions/builtin/src/snapshots/order.snap.new",
    );
    touch(&root, "crates/dispatcher/src/.registry.rs.pending-snap");
    touch(&root, "target/debug/stale.snap.new");
    touch(&root, "crates/x/target/nested.pending-snap");
    touch(&root, ".git/objects/stray.snap.new");

    let violations = check(&root).unwrap();
    fs::remove_dir_all(&root).unwrap();

    let pending = |path: &str| {
        format!(
            "pending insta snapshot `{path}`: review it with `cargo insta review` (or delete it and \
             fix the test)"
        )
    };
    assert_eq!(
        violations,
        vec![
            pending("crates/contributions/builtin/src/snapshots/order.snap.new"),
            pending("crates/dispatcher/src/.registry.rs.pending-snap"),
        ]
    );
}

#[test]
fn a_tree_without_pending_snapshots_passes() {
    let root = scratch_directory("no-pending-snapshots");
    touch(
        &root,
        "crates/contributions/builtin/src/snapshots/order.snap",
    );
    let violations = check(&root).unwrap();
    fs::remove_dir_all(&root).unwrap();
    assert_eq!(violations, Vec::<String>::new());
}
