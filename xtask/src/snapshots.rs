//! Rule 5 of ARCHITECTURE.md: no pending insta snapshot may sit in the tree.
//!
//! insta writes `*.snap.new` (and `*.pending-snap` for inline snapshots) when a snapshot changed;
//! they must be reviewed (`cargo insta review`) or deleted, never committed or ignored.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

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

#[cfg(test)]
#[path = "snapshots_tests.rs"]
mod tests;
