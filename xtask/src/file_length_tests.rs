use super::*;

fn files(entries: &[(&str, usize)]) -> Sources {
    Sources {
        files: entries
            .iter()
            .map(|(path, lines)| ((*path).to_owned(), *lines))
            .collect(),
        packages: vec!["crates/a".to_owned()],
    }
}

#[test]
fn files_within_the_cap_pass() {
    let files = files(&[
        ("crates/a/src/lib.rs", MAX_LINES),
        ("crates/a/src/b.rs", 10),
    ]);
    assert!(check_files(&files, &[]).is_empty());
}

#[test]
fn a_file_over_the_cap_fails_naming_it_and_its_length() {
    let files = files(&[("crates/a/src/lib.rs", MAX_LINES + 1)]);
    let violations = check_files(&files, &[]);
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(violations[0].starts_with("crates/a/src/lib.rs has 801 lines"));
}

#[test]
fn a_pending_file_may_stay_over_the_cap_until_it_is_split() {
    let long = files(&[("crates/a/src/wire.rs", 1200)]);
    assert!(check_files(&long, &["crates/a/src/wire.rs"]).is_empty());
    // Split meanwhile, or gone: the entry is stale.
    let split = files(&[("crates/a/src/wire.rs", 300)]);
    let violations = check_files(&split, &["crates/a/src/wire.rs"]);
    assert!(
        violations[0].contains("remove its PENDING entry"),
        "{violations:?}"
    );
    let violations = check_files(&files(&[]), &["crates/a/src/wire.rs"]);
    assert!(
        violations[0].contains("is not a production source file"),
        "{violations:?}"
    );
    // An entry outside the workspace's packages is not this workspace's business.
    assert!(check_files(&files(&[]), &["crates/b/src/wire.rs"]).is_empty());
}

#[test]
fn the_workspace_lists_its_production_files_without_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let metadata = Metadata::load(Path::new(env!("CARGO")), &root).unwrap();
    let sources = production_files(&root, &metadata).unwrap();
    let paths: Vec<&str> = sources
        .files
        .iter()
        .map(|(path, _)| path.as_str())
        .collect();
    assert!(
        sources.packages.contains(&"xtask".to_owned()),
        "{:?}",
        sources.packages
    );
    assert!(paths.contains(&"xtask/src/file_length.rs"), "{paths:?}");
    assert!(paths.contains(&"crates/dispatcher/src/lib.rs"), "{paths:?}");
    assert!(
        !paths.iter().any(|path| path.ends_with("_tests.rs")),
        "{paths:?}"
    );
}
