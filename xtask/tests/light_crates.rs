//! Mutation tests of the light-crates check: probe crates in a workspace of their own, one that
//! depends on a crate reaching SQLite, one that turns on tokio's `net`, one that does neither.
//! `cargo tree` resolves them offline against the workspace's lock file.

#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::{Path, PathBuf};

use xtask::light_crates::{LightCrate, check_crate};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A workspace with the three probes, next to the test's temporary files.
fn probe_workspace() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("light-crates-probes");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let store = repo_root().join("crates/store").canonicalize().unwrap();
    let probes = [
        (
            "probe-store",
            format!(
                "agenthost-store = {{ path = {:?} }}",
                store.display().to_string()
            ),
        ),
        (
            "probe-net",
            r#"tokio = { version = "1", default-features = false, features = ["net"] }"#.to_owned(),
        ),
        (
            "probe-clean",
            r#"tokio = { version = "1", default-features = false, features = ["sync"] }"#
                .to_owned(),
        ),
    ];
    let members: Vec<String> = probes.iter().map(|(name, _)| format!("{name:?}")).collect();
    fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[workspace]\nresolver = \"3\"\nmembers = [{}]\n",
            members.join(", ")
        ),
    )
    .unwrap();
    fs::copy(repo_root().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    for (name, dependency) in probes {
        let crate_dir = dir.join(name);
        fs::create_dir_all(crate_dir.join("src")).unwrap();
        fs::write(
            crate_dir.join("Cargo.toml"),
            format!(
                "[package]\nname = {name:?}\nversion = \"0.1.0\"\nedition = \"2024\"\n\n\
                 [dependencies]\n{dependency}\n"
            ),
        )
        .unwrap();
        fs::write(crate_dir.join("src/lib.rs"), "").unwrap();
    }
    dir
}

fn violations(dir: &Path, name: &str) -> Vec<String> {
    let light = LightCrate {
        name: name.to_owned(),
        no_default_features: false,
    };
    check_crate(Path::new(env!("CARGO")), dir, &light, &["--offline"]).unwrap()
}

#[test]
fn a_dependency_reaching_sqlite_and_a_socket_feature_fail_and_a_clean_crate_passes() {
    let dir = probe_workspace();

    let store = violations(&dir, "probe-store");
    assert_eq!(store.len(), 1, "{store:?}");
    assert!(
        store[0]
            .contains("probe-store reaches rusqlite: probe-store -> agenthost-store -> rusqlite"),
        "{store:?}"
    );

    let net = violations(&dir, "probe-net");
    assert_eq!(net.len(), 1, "{net:?}");
    assert!(
        net[0].contains(
            "probe-net reaches tokio feature \"net\": probe-net -> tokio feature \"net\""
        ),
        "{net:?}"
    );

    assert_eq!(violations(&dir, "probe-clean"), Vec::<String>::new());
}
