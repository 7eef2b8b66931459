use super::*;

/// A `cargo tree --prefix depth -e normal,features` answer with a SQLite path two crates deep
/// and tokio's `net` turned on by a dependency.
const TREE: &str = r#"0probe v0.1.0 (/w/probe)
1serde feature "default"
2serde v1.0.0
1agenthost-store feature "default"
2agenthost-store v0.1.0 (/w/crates/store)
3rusqlite feature "bundled"
4rusqlite v0.40.0
5libsqlite3-sys v0.30.0
3rusqlite v0.40.0 (*)
1hyper-util feature "tokio"
2hyper-util v0.1.0
3tokio feature "net"
4tokio v1.0.0
3tokio feature "rt"
"#;

#[test]
fn every_forbidden_node_is_reported_once_with_the_packages_that_pull_it_in() {
    let paths = forbidden_paths(TREE);
    assert_eq!(
        paths,
        [
            vec!["probe", "agenthost-store", "rusqlite"],
            vec!["probe", "hyper-util", "tokio feature \"net\""],
        ]
    );
}

#[test]
fn allowed_features_and_other_lines_are_not_reported() {
    let tree = "0probe v0.1.0\n1tokio feature \"rt\"\n2tokio v1.0.0\n\nnot a tree line\n";
    assert!(forbidden_paths(tree).is_empty());
}

#[test]
fn the_table_names_workspace_packages_and_every_contribution_is_checked() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let metadata = Metadata::load(Path::new(env!("CARGO")), &root).unwrap();
    let (crates, violations) = light_crates(&metadata);
    assert!(violations.is_empty(), "{violations:?}");
    let names: Vec<&str> = crates.iter().map(|c| c.name.as_str()).collect();
    assert!(names.contains(&"agenthost-services"), "{names:?}");
    assert!(
        names.contains(&"agenthost-contrib-session-title"),
        "{names:?}"
    );
    let claude = crates
        .iter()
        .find(|c| c.name == "agenthost-provider-claude")
        .unwrap();
    assert!(claude.no_default_features);
}
