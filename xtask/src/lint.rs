//! `cargo xtask lint`: every architecture rule, run over the workspace, all violations reported.
//!
//! Two parts:
//!
//! - the **static checks**, [`CHECKS`]: each a [`Check`], a name and a function from the
//!   [`Workspace`] to the list of its violations, reading files, `cargo metadata` and `cargo tree` only. To add
//!   a rule, write the function in its own module and append it. [`lint_workspace`] runs them;
//!   so does the `#[test]` in `tests/tidy.rs`, and `cargo xtask ci`.
//! - the **snapshot verification** ([`snapshots::verify`]): `cargo test` of every package with
//!   insta snapshots, failing on a changed snapshot. It runs cargo, so only the command
//!   `cargo xtask lint` ([`lint_command`]) runs it: `cargo test` inside the `#[test]` would
//!   deadlock on the build directory lock.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::metadata::Metadata;
use crate::{
    architecture, contributions, file_length, light_crates, pins, snapshots, thin_orchestration,
    typed_errors,
};

/// What the checks look at: the workspace root and its `cargo metadata`.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// The directory of the workspace's root `Cargo.toml`.
    pub root: PathBuf,
    /// `cargo metadata --no-deps` of the workspace.
    pub metadata: Metadata,
    /// The cargo that read it (the light-crates check runs `cargo tree` with it).
    pub cargo: PathBuf,
}

impl Workspace {
    /// Reads the workspace at `root`, running `cargo metadata` with `cargo`.
    pub fn load(cargo: &Path, root: &Path) -> Result<Self> {
        Ok(Self {
            root: root.to_path_buf(),
            metadata: Metadata::load(cargo, root)?,
            cargo: cargo.to_path_buf(),
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

/// Every static check, in report order.
pub const CHECKS: &[Check] = &[
    Check {
        name: "layering",
        run: |workspace| Ok(architecture::check(&workspace.metadata)),
    },
    Check {
        name: "pending-snapshots",
        run: |workspace| snapshots::check(&workspace.root),
    },
    Check {
        name: "contribution-shape",
        run: |workspace| contributions::check(&workspace.root),
    },
    Check {
        name: "contract-pins",
        run: |workspace| pins::check(&workspace.root, &workspace.metadata),
    },
    Check {
        name: "thin-orchestration",
        run: |workspace| thin_orchestration::check(&workspace.root, &workspace.metadata),
    },
    Check {
        name: "file-length",
        run: |workspace| file_length::check(&workspace.root, &workspace.metadata),
    },
    Check {
        name: "typed-errors",
        run: |workspace| typed_errors::check(&workspace.root, &workspace.metadata),
    },
    Check {
        name: "light-crates",
        run: |workspace| {
            light_crates::check(&workspace.cargo, &workspace.root, &workspace.metadata)
        },
    },
];

/// The report name of the snapshot verification step of [`lint_command`].
pub const SNAPSHOT_STEP: &str = "snapshots";

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

    /// `Ok` when clean, otherwise an error listing every violation.
    pub fn into_result(self) -> Result<()> {
        if self.is_clean() {
            return Ok(());
        }
        Err(Error::new(format!(
            "architecture lint failed with {} violation(s) (rules: ARCHITECTURE.md, \"Rules the \
             xtask enforces\"):\n{}",
            self.violation_count(),
            self.render().trim_end()
        )))
    }
}

/// Runs every check of [`CHECKS`] on `workspace`; a check that cannot run is an error.
pub fn run(workspace: &Workspace) -> Result<Report> {
    run_checks(workspace, CHECKS)
}

/// Runs `checks` over `workspace`, in order; an error when a check could not run.
pub fn run_checks<'a>(
    workspace: &Workspace,
    checks: impl IntoIterator<Item = &'a Check>,
) -> Result<Report> {
    let mut report = Report::default();
    for check in checks {
        let violations = (check.run)(workspace)
            .map_err(|error| error.context(format!("lint check `{}` could not run", check.name)))?;
        if !violations.is_empty() {
            report.failures.push((check.name, violations));
        }
    }
    Ok(report)
}

/// Loads the workspace at `root` and runs the static checks ([`CHECKS`]); any violation is an
/// error listing them all. The `#[test]` lint and `cargo xtask ci` use this.
pub fn lint_workspace(cargo: &Path, root: &Path) -> Result<()> {
    let workspace = Workspace::load(cargo, root)?;
    run(&workspace)?.into_result()
}

/// `cargo xtask lint`: the static checks, then the snapshot verification (which runs
/// `cargo test` for every package with insta snapshots); every violation of both is reported
/// in one error.
pub fn lint_command(cargo: &Path, root: &Path) -> Result<()> {
    let workspace = Workspace::load(cargo, root)?;
    let mut report = run(&workspace)?;
    if report.is_clean() {
        eprintln!("lint: static checks: all {} passed", CHECKS.len());
    } else {
        eprintln!(
            "lint: static checks: {} of {} failed (listed at the end)",
            report.failures.len(),
            CHECKS.len()
        );
    }
    let violations = snapshots::verify(cargo, &workspace.root, &workspace.metadata)
        .map_err(|error| error.context("lint step `snapshots` could not run"))?;
    if !violations.is_empty() {
        report.failures.push((SNAPSHOT_STEP, violations));
    }
    report.into_result()
}

#[cfg(test)]
#[path = "lint_tests.rs"]
mod tests;
