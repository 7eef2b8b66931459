//! `cargo xtask lint`: every architecture rule, run over the workspace, all violations reported.
//!
//! A rule is a [`Check`] in [`CHECKS`]: a name and a function from the [`Workspace`] to the
//! list of its violations. To add a rule, write the function in its own module and append it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::metadata::Metadata;
use crate::{architecture, snapshots};

/// What the checks look at: the workspace root and its `cargo metadata`.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// The directory of the workspace's root `Cargo.toml`.
    pub root: PathBuf,
    /// `cargo metadata --no-deps` of the workspace.
    pub metadata: Metadata,
}

impl Workspace {
    /// Reads the workspace at `root`, running `cargo metadata` with `cargo`.
    pub fn load(cargo: &Path, root: &Path) -> Result<Self> {
        Ok(Self {
            root: root.to_path_buf(),
            metadata: Metadata::load(cargo, root)?,
        })
    }
}

/// One rule of the lint.
pub struct Check {
    /// Short name shown in reports.
    pub name: &'static str,
    /// Returns every violation of the rule (empty when the workspace complies).
    pub run: fn(&Workspace) -> Result<Vec<String>>,
}

/// Every rule `cargo xtask lint` enforces, in report order.
pub const CHECKS: &[Check] = &[
    Check {
        name: "layering",
        run: |workspace| Ok(architecture::check(&workspace.metadata)),
    },
    Check {
        name: "pending-snapshots",
        run: |workspace| snapshots::check(&workspace.root),
    },
];

/// The violations found by each check that failed, in [`CHECKS`] order.
#[derive(Debug, Default)]
pub struct Report {
    /// `(check name, violations)` for every check with at least one violation.
    pub failures: Vec<(&'static str, Vec<String>)>,
}

impl Report {
    /// Whether no check reported a violation.
    pub fn is_clean(&self) -> bool {
        self.failures.is_empty()
    }

    /// The total number of violations.
    pub fn violation_count(&self) -> usize {
        self.failures.iter().map(|(_, v)| v.len()).sum()
    }

    /// A readable listing of every violation, grouped by check.
    pub fn render(&self) -> String {
        let mut text = String::new();
        for (name, violations) in &self.failures {
            let _ = writeln!(text, "[{name}] {} violation(s):", violations.len());
            for violation in violations {
                let _ = writeln!(text, "  - {violation}");
            }
        }
        text
    }
}

/// Runs every check of [`CHECKS`] on `workspace`; a check that cannot run is an error.
pub fn run(workspace: &Workspace) -> Result<Report> {
    let mut report = Report::default();
    for check in CHECKS {
        let violations = (check.run)(workspace)
            .map_err(|error| error.context(format!("lint check `{}` could not run", check.name)))?;
        if !violations.is_empty() {
            report.failures.push((check.name, violations));
        }
    }
    Ok(report)
}

/// Loads the workspace at `root` and runs the lint; any violation is an error listing them all.
pub fn lint_workspace(cargo: &Path, root: &Path) -> Result<()> {
    let workspace = Workspace::load(cargo, root)?;
    let report = run(&workspace)?;
    if report.is_clean() {
        return Ok(());
    }
    Err(Error::new(format!(
        "architecture lint failed with {} violation(s) (rules: ARCHITECTURE.md, \"Rules the xtask \
         enforces\"):\n{}",
        report.violation_count(),
        report.render().trim_end()
    )))
}

#[cfg(test)]
#[path = "lint_tests.rs"]
mod tests;
