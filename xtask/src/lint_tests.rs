use std::fs;
use std::path::PathBuf;

use super::{CHECKS, Check, Workspace, run_checks};
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
        cargo: PathBuf::from(env!("CARGO")),
    };

    // Every check that reads files and metadata; the light-crates check runs `cargo tree`,
    // which needs a real workspace (its own tests build one).
    let checks: Vec<&Check> = CHECKS.iter().filter(|c| c.name != "light-crates").collect();
    assert_eq!(checks.len(), CHECKS.len() - 1);
    let report = run_checks(&workspace, checks).unwrap();
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
