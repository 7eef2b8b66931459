use std::fs;
use std::path::PathBuf;

use super::{check, packages_with_snapshots};
use crate::metadata::Metadata;

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

/// Metadata of workspace packages `(name, manifest path relative to the root)`, plus a
/// non-member package.
fn metadata(packages: &[(&str, &str)]) -> Metadata {
    let mut json_packages: Vec<serde_json::Value> = packages
        .iter()
        .map(|(name, manifest)| {
            serde_json::json!({"name": name, "id": name, "manifest_path": manifest})
        })
        .collect();
    json_packages.push(serde_json::json!({
        "name": "not-a-member", "id": "not-a-member", "manifest_path": "vendor/x/Cargo.toml"
    }));
    let members: Vec<&str> = packages.iter().map(|(name, _)| *name).collect();
    let json = serde_json::json!({"packages": json_packages, "workspace_members": members});
    Metadata::parse(&json.to_string()).unwrap()
}

#[test]
fn packages_with_snapshot_files_are_found() {
    let root = scratch_directory("packages-with-snapshots");
    // Found: `*.snap` under `src/snapshots/`, `tests/snapshots/`, or deeper below one.
    touch(&root, "crates/dispatcher/src/snapshots/order.snap");
    touch(
        &root,
        "crates/contrib/tests/snapshots/nested/deeper/hooks.snap",
    );
    // Not found: pending files only, a `.snap` outside `snapshots/`, snapshots in `target/`, a
    // package without snapshots, a non-member package.
    touch(&root, "crates/pending/src/snapshots/order.snap.new");
    touch(&root, "crates/pending/src/snapshots/.lib.rs.pending-snap");
    touch(&root, "crates/loose/src/order.snap");
    touch(&root, "crates/built/target/snapshots/order.snap");
    touch(&root, "crates/plain/src/lib.rs");
    touch(&root, "vendor/x/src/snapshots/order.snap");
    // A package nested in another: its snapshots are its own, not the outer package's.
    touch(&root, "crates/outer/inner/src/snapshots/order.snap");

    let metadata = metadata(&[
        ("dispatcher", "crates/dispatcher/Cargo.toml"),
        ("contrib", "crates/contrib/Cargo.toml"),
        ("pending", "crates/pending/Cargo.toml"),
        ("loose", "crates/loose/Cargo.toml"),
        ("built", "crates/built/Cargo.toml"),
        ("plain", "crates/plain/Cargo.toml"),
        ("outer", "crates/outer/Cargo.toml"),
        ("inner", "crates/outer/inner/Cargo.toml"),
        ("absent", "crates/absent/Cargo.toml"),
    ]);
    let packages = packages_with_snapshots(&metadata, &root).unwrap();
    fs::remove_dir_all(&root).unwrap();

    assert_eq!(packages, vec!["contrib", "dispatcher", "inner"]);
}

#[test]
fn a_workspace_without_snapshot_files_has_no_packages_to_verify() {
    let root = scratch_directory("no-packages-with-snapshots");
    touch(&root, "crates/protocol/src/lib.rs");
    // A workspace-level `snapshots/` outside every package belongs to none.
    touch(&root, "snapshots/stray.snap");
    let metadata = metadata(&[("protocol", "crates/protocol/Cargo.toml")]);
    let packages = packages_with_snapshots(&metadata, &root).unwrap();
    fs::remove_dir_all(&root).unwrap();
    assert_eq!(packages, Vec::<String>::new());
}
