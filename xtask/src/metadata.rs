//! The subset of `cargo metadata --format-version 1 --no-deps` the checks read.
//!
//! Parsed with serde rather than the `cargo_metadata` crate to keep the xtask's dependencies few.
//! Fields the checks do not need are ignored; optional fields default so test fixtures stay small.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

use crate::error::{Error, Result};

/// The workspace as `cargo metadata` describes it.
#[derive(Debug, Clone, Deserialize)]
pub struct Metadata {
    /// Every package in the output; with `--no-deps` these are the workspace members.
    pub packages: Vec<Package>,
    /// Ids of the workspace members.
    pub workspace_members: Vec<String>,
    /// The directory holding the workspace's root `Cargo.toml`.
    #[serde(default)]
    pub workspace_root: PathBuf,
}

/// One package.
#[derive(Debug, Clone, Deserialize)]
pub struct Package {
    /// The package name (`agenthost-reducers`).
    pub name: String,
    /// The opaque package id, matched against [`Metadata::workspace_members`].
    pub id: String,
    /// Declared dependencies, all kinds.
    #[serde(default)]
    pub dependencies: Vec<Dependency>,
    /// Build targets (lib, bin, test, bench, …).
    #[serde(default)]
    pub targets: Vec<Target>,
    /// The package's `Cargo.toml` (absolute in real output; fixtures may give it relative to the
    /// workspace root, or leave it out).
    #[serde(default)]
    pub manifest_path: PathBuf,
}

/// One declared dependency of a package.
#[derive(Debug, Clone, Deserialize)]
pub struct Dependency {
    /// The real package name of the dependency (not its `rename`).
    pub name: String,
    /// `None` for a normal dependency, `"dev"` or `"build"` otherwise.
    #[serde(default)]
    pub kind: Option<String>,
    /// Where the dependency comes from; `None` for path dependencies.
    #[serde(default)]
    pub source: Option<String>,
    /// The features this dependency edge enables.
    #[serde(default)]
    pub features: Vec<String>,
}

/// The kind of a dependency edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DependencyKind {
    /// `[dependencies]`.
    Normal,
    /// `[build-dependencies]`.
    Build,
    /// `[dev-dependencies]`.
    Dev,
}

impl Dependency {
    /// The kind of this dependency edge.
    pub fn kind(&self) -> DependencyKind {
        match self.kind.as_deref() {
            Some("dev") => DependencyKind::Dev,
            Some("build") => DependencyKind::Build,
            _ => DependencyKind::Normal,
        }
    }
}

/// One build target of a package.
#[derive(Debug, Clone, Deserialize)]
pub struct Target {
    /// The target name (`reducers_apply_vs_ahp`).
    pub name: String,
    /// Target kinds (`lib`, `bin`, `bench`, …).
    #[serde(default)]
    pub kind: Vec<String>,
}

impl Metadata {
    /// Parses the JSON printed by `cargo metadata --format-version 1`.
    pub fn parse(json: &str) -> Result<Self> {
        serde_json::from_str(json)
            .map_err(|error| Error::new(format!("cannot parse cargo metadata JSON: {error}")))
    }

    /// Runs `cargo metadata --format-version 1 --no-deps` on the workspace at `root`.
    pub fn load(cargo: &Path, root: &Path) -> Result<Self> {
        let output = Command::new(cargo)
            .args(["metadata", "--format-version", "1", "--no-deps"])
            .current_dir(root)
            .output()
            .map_err(|error| {
                Error::new(format!(
                    "cannot run `{} metadata`: {error}",
                    cargo.display()
                ))
            })?;
        if !output.status.success() {
            return Err(Error::new(format!(
                "`cargo metadata` failed ({}):\n{}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim_end()
            )));
        }
        let json = String::from_utf8(output.stdout)
            .map_err(|_| Error::new("`cargo metadata` printed invalid UTF-8"))?;
        Self::parse(&json)
    }

    /// The workspace member packages, in the order cargo lists them.
    pub fn workspace_packages(&self) -> impl Iterator<Item = &Package> {
        let members: BTreeSet<&str> = self.workspace_members.iter().map(String::as_str).collect();
        self.packages
            .iter()
            .filter(move |package| members.contains(package.id.as_str()))
    }
}
