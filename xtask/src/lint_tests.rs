use std::fs;

use super::{CHECKS, Workspace, run};
use crate::metadata::Metadata;

#[test]
fn check_names_are_unique() {
    let mut names: Vec<&str> = CHECKS.iter().map(|check| check.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), CHECKS.len());
}

#[test]
fn the_report_groups_every_violation_by_check() {
    let root = std::env::temp_dir().join(format!("xtask-lint-report-{}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    fs::create_dir_all(root.join("src/snapshots")).unwrap();
    fs::write(root.join("src/snapshots/a.snap.new"), "").unwrap();
    let workspace = Workspace {
        root: root.clone(),
        metadata: Metadata::parse(include_str!("../tests/fixtures/missing_package.json")).unwrap(),
    };

    let report = run(&workspace).unwrap();
    fs::remove_dir_all(&root).unwrap();

    assert_eq!(report.violation_count(), 3);
    assert_eq!(
        report.render(),
        "[layering] 2 violation(s):\n\
         \x20 - workspace package `agenthost-contrib-` is missing from the layer table: add it to \
         LAYERS in xtask/src/layers.rs with its layer from ARCHITECTURE.md\n\
         \x20 - workspace package `agenthost-mystery` is missing from the layer table: add it to \
         LAYERS in xtask/src/layers.rs with its layer from ARCHITECTURE.md\n\
         [pending-snapshots] 1 violation(s):\n\
         \x20 - pending insta snapshot `src/snapshots/a.snap.new`: review it with `cargo insta \
         review` (or delete it and fix the test)\n"
    );
}
