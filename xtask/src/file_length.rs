//! Rule 6 of ARCHITECTURE.md, "short files": no production source file of the workspace is over
//! [`MAX_LINES`] lines, so every file can be read in one sitting and a long one is split along
//! its seams.
//!
//! A production source file is a `.rs` file under the `src/` directory of a workspace package
//! (the xtask included) that is not a test file (`tests.rs`, `*_tests.rs`, anything under a
//! `tests/` directory). Its length is its number of lines, as an editor shows them.
//!
//! [`PENDING`] lists files over the cap that wait for a change already planned; it is empty (no
//! production file is over the cap) and may only hold a file while its split is under way. An
//! entry in a package of the workspace must name a file that exists and is still over the cap —
//! a stale entry fails — so the list only shrinks; a file not listed fails once it is over.

use std::path::Path;

use crate::error::Result;
use crate::metadata::Metadata;
use crate::thin_orchestration::{SourceFile, collect_sources, is_test_file, slash_path};

/// The most lines a production source file may have.
pub const MAX_LINES: usize = 800;

/// Files over [`MAX_LINES`] that wait for a planned change, workspace-relative, `/`-separated.
pub const PENDING: &[&str] = &[];

/// The production source files of a workspace: `(workspace-relative path, lines)` of each, and
/// the directories of its packages (workspace-relative, `/`-separated; `""` for the root).
#[derive(Debug, Default)]
pub struct Sources {
    /// Every production source file with its line count, by path.
    pub files: Vec<(String, usize)>,
    /// The package directories.
    pub packages: Vec<String>,
}

/// The violations of the rule in `sources`, with `pending` as the list of files waiting for a
/// planned change (entries outside the workspace's packages are not checked).
pub fn check_files(sources: &Sources, pending: &[&str]) -> Vec<String> {
    let files = &sources.files;
    let mut violations = Vec::new();
    for (path, lines) in files {
        if *lines > MAX_LINES && !pending.contains(&path.as_str()) {
            violations.push(format!(
                "{path} has {lines} lines, over the cap of {MAX_LINES}: split it along its seams \
                 (xtask/src/file_length.rs)"
            ));
        }
    }
    let in_workspace = |entry: &str| {
        sources
            .packages
            .iter()
            .any(|dir| dir.is_empty() || entry.starts_with(&format!("{dir}/")))
    };
    for entry in pending.iter().filter(|entry| in_workspace(entry)) {
        match files.iter().find(|(path, _)| path == entry) {
            None => violations.push(format!(
                "{entry} is listed in PENDING (xtask/src/file_length.rs) but is not a production \
                 source file of the workspace: remove the entry"
            )),
            Some((_, lines)) if *lines <= MAX_LINES => violations.push(format!(
                "{entry} has {lines} lines, within the cap of {MAX_LINES}: remove its PENDING \
                 entry (xtask/src/file_length.rs)"
            )),
            Some(_) => {}
        }
    }
    violations
}

/// Every production source file of the workspace at `root` with its line count.
pub fn production_files(root: &Path, metadata: &Metadata) -> Result<Sources> {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let mut sources_found = Sources::default();
    let files = &mut sources_found.files;
    for package in metadata.workspace_packages() {
        let manifest = root.join(&package.manifest_path);
        let Some(crate_dir) = manifest.parent().map(Path::to_path_buf) else {
            continue;
        };
        let crate_dir = crate_dir.canonicalize().unwrap_or(crate_dir);
        let mut sources: Vec<SourceFile> = Vec::new();
        collect_sources(&crate_dir, &crate_dir.join("src"), &mut sources)?;
        let relative_dir = crate_dir.strip_prefix(&root).unwrap_or(&crate_dir);
        let prefix = slash_path(relative_dir);
        sources_found.packages.push(prefix.clone());
        for source in sources.into_iter().filter(|s| !is_test_file(&s.path)) {
            let path = if prefix.is_empty() {
                source.path
            } else {
                format!("{prefix}/{}", source.path)
            };
            files.push((path, source.text.lines().count()));
        }
    }
    files.sort();
    Ok(sources_found)
}

/// Rule 6 over the workspace at `root`.
pub fn check(root: &Path, metadata: &Metadata) -> Result<Vec<String>> {
    Ok(check_files(&production_files(root, metadata)?, PENDING))
}

#[cfg(test)]
#[path = "file_length_tests.rs"]
mod tests;
