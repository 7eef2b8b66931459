//! `cargo xtask ci`: the gate a change must pass, in order, stopping at the first failure.
//!
//! Tests are not run here: `.ci/run` runs `cargo test --workspace` first (which also runs the
//! lint as a test), then this.

use std::path::Path;
use std::process::Command;

use crate::error::{Error, Result};
use crate::lint;

/// How a step runs.
enum Action {
    /// `cargo` with these arguments.
    Cargo(&'static [&'static str]),
    /// The static checks of the architecture lint, in-process (the snapshot verification of
    /// `cargo xtask lint` is left to `cargo test --workspace`, which `.ci/run` runs before).
    Lint,
}

/// One step of the gate.
struct Step {
    name: &'static str,
    action: Action,
}

const STEPS: &[Step] = &[
    Step {
        name: "fmt",
        action: Action::Cargo(&["fmt", "--all", "--check"]),
    },
    Step {
        name: "clippy",
        action: Action::Cargo(&[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]),
    },
    Step {
        name: "lint",
        action: Action::Lint,
    },
    Step {
        // No `advisories`: the advisory database needs the network.
        name: "deny",
        action: Action::Cargo(&["deny", "check", "bans", "licenses", "sources"]),
    },
];

/// Runs every step in order; the first failure stops the gate with an error naming the step.
pub fn ci(cargo: &Path, root: &Path) -> Result<()> {
    for (index, step) in STEPS.iter().enumerate() {
        let description = match step.action {
            Action::Cargo(args) => format!("cargo {}", args.join(" ")),
            Action::Lint => "static checks of cargo xtask lint".to_owned(),
        };
        eprintln!(
            "==> ci [{}/{}] {}: {description}",
            index + 1,
            STEPS.len(),
            step.name
        );
        let outcome = match step.action {
            Action::Cargo(args) => run_cargo(cargo, root, args),
            Action::Lint => lint::lint_workspace(cargo, root),
        };
        outcome.map_err(|error| {
            error.context(format!("ci step `{}` ({description}) failed", step.name))
        })?;
    }
    eprintln!("==> ci: all {} steps passed", STEPS.len());
    Ok(())
}

fn run_cargo(cargo: &Path, root: &Path, args: &[&str]) -> Result<()> {
    let status = Command::new(cargo)
        .args(args)
        .current_dir(root)
        .status()
        .map_err(|error| Error::new(format!("cannot run `{}`: {error}", cargo.display())))?;
    if status.success() {
        Ok(())
    } else {
        Err(Error::new(status.to_string()))
    }
}
