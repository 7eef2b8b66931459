//! Rule 5 of ARCHITECTURE.md: no pending insta snapshot may sit in the tree.
//!
//! insta writes `*.snap.new` (and `*.pending-snap` for inline snapshots) when a snapshot changed;
//! they must be reviewed (`cargo insta review`) or deleted, never committed or ignored.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};
use crate::metadata::Metadata;

/// File-name suffixes of pending insta snapshots.
const PENDING_SUFFIXES: &[&str] = &[".snap.new", ".pending-snap"];

/// Directories never searched: build output and git's own data.
const SKIPPED_DIRECTORIES: &[&str] = &["target", ".git"];

/// One violation per pending snapshot file under `root`, paths relative to `root`, sorted.
pub fn check(root: &Path) -> Result<Vec<String>> {
    let mut pending = Vec::new();
    collect_pending(root, &mut pending)?;
    let mut violations: Vec<String> = pending
        .iter()
        .map(|path| {
            let relative = path.strip_prefix(root).unwrap_or(path);
            format!(
                "pending insta snapshot `{}`: review it with `cargo insta review` (or delete it \
                 and fix the test)",
                relative.display()
            )
        })
        .collect();
    violations.sort();
    Ok(violations)
}

fn collect_pending(directory: &Path, pending: &mut Vec<PathBuf>) -> Result<()> {
    let entries = fs::read_dir(directory)
        .map_err(|error| Error::from(error).context(format!("reading {}", directory.display())))?;
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        // `file_type` does not follow symlinks, so a link cannot lead the walk out of the tree.
        let file_type = entry.file_type()?;
        if file_type.is_dir() {
            if !SKIPPED_DIRECTORIES.contains(&name.as_ref()) {
                collect_pending(&entry.path(), pending)?;
            }
        } else if PENDING_SUFFIXES.iter().any(|suffix| name.ends_with(suffix)) {
            pending.push(entry.path());
        }
    }
    Ok(())
}

/// The environment of the snapshot verification run: insta compares and fails, never writes a
/// `.snap.new` and never passes a mismatch.
pub const VERIFY_ENV: &[(&str, &str)] = &[
    ("INSTA_UPDATE", "no"),
    ("INSTA_FORCE_PASS", "0"),
    ("CI", "true"),
];

/// The names of the workspace packages with insta snapshot files (`*.snap` anywhere under a
/// `snapshots/` directory of the package directory, `target/` and `.git/` skipped), sorted.
///
/// A package's directory is that of its `manifest_path`, taken relative to `root` when it is
/// relative (test fixtures); a package directory nested in another belongs to its own package
/// only. Packages without a `manifest_path` or without a directory are skipped.
pub fn packages_with_snapshots(metadata: &Metadata, root: &Path) -> Result<Vec<String>> {
    let directories: Vec<(&str, PathBuf)> = metadata
        .workspace_packages()
        .filter(|package| !package.manifest_path.as_os_str().is_empty())
        .filter_map(|package| {
            let manifest = root.join(&package.manifest_path);
            let directory = manifest.parent()?.to_path_buf();
            Some((package.name.as_str(), directory))
        })
        .collect();
    let package_directories: BTreeSet<&Path> = directories
        .iter()
        .map(|(_, directory)| directory.as_path())
        .collect();
    let mut names = BTreeSet::new();
    for (name, directory) in &directories {
        if directory.is_dir() && has_snapshots(directory, false, &package_directories)? {
            names.insert((*name).to_owned());
        }
    }
    Ok(names.into_iter().collect())
}

/// Whether `directory` holds a `*.snap` under a `snapshots/` directory (`in_snapshots`: it is
/// itself inside one), not descending into build output or other packages.
fn has_snapshots(
    directory: &Path,
    in_snapshots: bool,
    package_directories: &BTreeSet<&Path>,
) -> Result<bool> {
    let entries = fs::read_dir(directory)
        .map_err(|error| Error::from(error).context(format!("reading {}", directory.display())))?;
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let path = entry.path();
        let file_type = entry.file_type()?;
        if file_type.is_dir() {
            let descend = !SKIPPED_DIRECTORIES.contains(&name.as_ref())
                && !package_directories.contains(path.as_path());
            if descend
                && has_snapshots(
                    &path,
                    in_snapshots || name == "snapshots",
                    package_directories,
                )?
            {
                return Ok(true);
            }
        } else if in_snapshots && name.ends_with(".snap") {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Runs the tests of every package with snapshots under [`VERIFY_ENV`], so a snapshot that no
/// longer matches fails, then looks for pending snapshots the run left behind. Returns one
/// violation per failed package and per new pending snapshot; the tests' output goes to the
/// terminal. Not part of the `#[test]` lint: `cargo test` inside `cargo test` would wait forever
/// on the build directory lock.
pub fn verify(cargo: &Path, root: &Path, metadata: &Metadata) -> Result<Vec<String>> {
    let packages = packages_with_snapshots(metadata, root)?;
    if packages.is_empty() {
        eprintln!(
            "lint: snapshot verification: no workspace package has insta snapshots (`*.snap` \
             under a `snapshots/` directory), nothing to run"
        );
        return Ok(Vec::new());
    }
    let environment: Vec<String> = VERIFY_ENV
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    let environment = environment.join(" ");
    eprintln!(
        "lint: snapshot verification of {} package(s): {}",
        packages.len(),
        packages.join(", ")
    );
    let pending_before = check(root)?;
    let mut violations = Vec::new();
    for package in &packages {
        let command = format!("cargo test -p {package} --quiet");
        eprintln!("==> lint: {environment} {command}");
        let status = Command::new(cargo)
            .args(["test", "-p", package, "--quiet"])
            .envs(VERIFY_ENV.iter().copied())
            .current_dir(root)
            .status()
            .map_err(|error| Error::new(format!("cannot run `{}`: {error}", cargo.display())))?;
        if !status.success() {
            violations.push(format!(
                "snapshot changed (or a test failed) in `{package}`: `{environment} {command}` \
                 exited with {status}; see its output above, and accept a deliberate change with \
                 `cargo insta test -p {package} --review`"
            ));
        }
    }
    // Pending files that were there before are the `pending-snapshots` check's to report.
    violations.extend(
        check(root)?
            .into_iter()
            .filter(|violation| !pending_before.contains(violation))
            .map(|violation| format!("written by the snapshot verification run: {violation}")),
    );
    Ok(violations)
}

#[cfg(test)]
#[path = "snapshots_tests.rs"]
mod tests;
