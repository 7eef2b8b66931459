//! Rule 8 of ARCHITECTURE.md, "light crates": the crates someone picks to embed — the
//! contributions, the dispatcher, the reducers, the protocol crate, the services contract, a
//! provider's wire types and translator — never compile an HTTP or TLS stack, git, SQLite, or
//! tokio's sockets and child processes.
//!
//! Each crate of [`light_crates`] is resolved **on its own**, as `cargo tree -p CRATE -e
//! normal,features` does: its normal dependencies and the features they enable, with nothing
//! unified from the rest of the workspace (`cargo metadata` over the workspace unifies features,
//! and would always show tokio's `net` and `process`, which the server and the CLI use). A
//! provider is resolved with `--no-default-features`: its default `driver` feature is the process
//! driver; without it the crate is its wire types and translator.
//!
//! The check fails for every [`FORBIDDEN_PACKAGES`] package and every [`FORBIDDEN_FEATURES`]
//! feature reached, naming the path of packages that pulls it in.

use std::path::Path;
use std::process::Command;

use crate::error::{Error, Result};
use crate::layers::is_contribution;
use crate::metadata::Metadata;

/// Packages a light crate must not reach: HTTP, TLS, git and SQLite.
pub const FORBIDDEN_PACKAGES: &[&str] = &["hyper", "rustls", "gix", "rusqlite"];

/// `(package, feature)` pairs a light crate must not turn on: tokio's sockets and child
/// processes.
pub const FORBIDDEN_FEATURES: &[(&str, &str)] = &[("tokio", "net"), ("tokio", "process")];

/// The light crates by exact name, besides every contribution crate. `true`: resolved without
/// default features (a provider without its driver).
pub const LIGHT: &[(&str, bool)] = &[
    ("agenthost-protocol", false),
    ("agenthost-reducers", false),
    ("agenthost-checkpoint-api", false),
    ("agenthost-state", false),
    ("agenthost-tool-execution", false),
    ("agenthost-dispatcher", false),
    ("agenthost-services", false),
    ("agenthost-provider-api", false),
    ("agenthost-provider-scripted", false),
    ("agenthost-provider-acp", true),
    ("agenthost-provider-claude", true),
    ("agenthost-provider-codex", true),
    ("agenthost-provider-copilot", true),
    ("agenthost-contributions", false),
];

/// One crate to resolve: its name and whether default features are off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LightCrate {
    /// The package name.
    pub name: String,
    /// Resolve with `--no-default-features`.
    pub no_default_features: bool,
}

/// The light crates of the workspace: every [`LIGHT`] entry (each must be a workspace package,
/// or the check fails naming it) and every contribution crate.
pub fn light_crates(metadata: &Metadata) -> (Vec<LightCrate>, Vec<String>) {
    let names: Vec<&str> = metadata
        .workspace_packages()
        .map(|package| package.name.as_str())
        .collect();
    let mut crates = Vec::new();
    let mut violations = Vec::new();
    for (name, no_default_features) in LIGHT {
        if names.contains(name) {
            crates.push(LightCrate {
                name: (*name).to_owned(),
                no_default_features: *no_default_features,
            });
        } else {
            violations.push(format!(
                "{name} is listed in xtask/src/light_crates.rs but is not a workspace package"
            ));
        }
    }
    crates.extend(
        names
            .iter()
            .filter(|name| is_contribution(name))
            .map(|name| LightCrate {
                name: (*name).to_owned(),
                no_default_features: false,
            }),
    );
    (crates, violations)
}

/// Runs `cargo tree` for each light crate of the workspace at `root` and returns every
/// violation.
pub fn check(cargo: &Path, root: &Path, metadata: &Metadata) -> Result<Vec<String>> {
    let (crates, mut violations) = light_crates(metadata);
    for light in &crates {
        violations.extend(check_crate(cargo, root, light, &[])?);
    }
    Ok(violations)
}

/// The violations of one crate of the workspace at `root`; `extra` is passed to `cargo tree`
/// (the tests pass `--offline`).
pub fn check_crate(
    cargo: &Path,
    root: &Path,
    light: &LightCrate,
    extra: &[&str],
) -> Result<Vec<String>> {
    let mut command = Command::new(cargo);
    command
        .current_dir(root)
        .args(["tree", "-p", &light.name, "-e", "normal,features"])
        .args(["--prefix", "depth", "--charset", "ascii"])
        .args(extra);
    if light.no_default_features {
        command.arg("--no-default-features");
    }
    let output = command
        .output()
        .map_err(|error| Error::new(format!("cannot run `{} tree`: {error}", cargo.display())))?;
    if !output.status.success() {
        return Err(Error::new(format!(
            "`cargo tree -p {}` failed ({}):\n{}",
            light.name,
            output.status,
            String::from_utf8_lossy(&output.stderr).trim_end()
        )));
    }
    let tree = String::from_utf8_lossy(&output.stdout);
    Ok(forbidden_paths(&tree)
        .into_iter()
        .map(|path| {
            let how = if light.no_default_features {
                " (without default features)"
            } else {
                ""
            };
            format!(
                "{}{how} reaches {}: {} — a light crate compiles no HTTP, TLS, git, SQLite or \
                 tokio net/process (xtask/src/light_crates.rs)",
                light.name,
                path.last().map_or("", String::as_str),
                path.join(" -> ")
            )
        })
        .collect())
}

/// One node of `cargo tree --prefix depth -e features` output.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    /// `name vX.Y.Z …`.
    Package(String),
    /// `name feature "f"`.
    Feature(String, String),
}

/// Parses one line: `<depth><node>`, `None` for anything else.
fn parse_line(line: &str) -> Option<(usize, Node)> {
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    let depth = line.get(..digits)?.parse().ok()?;
    let rest = line.get(digits..)?;
    let (name, tail) = rest.split_once(' ')?;
    if let Some(feature) = tail.strip_prefix("feature \"") {
        let feature = feature.split('"').next()?;
        return Some((depth, Node::Feature(name.to_owned(), feature.to_owned())));
    }
    tail.starts_with('v')
        .then(|| (depth, Node::Package(name.to_owned())))
}

fn is_forbidden(node: &Node) -> bool {
    match node {
        Node::Package(name) => FORBIDDEN_PACKAGES.contains(&name.as_str()),
        Node::Feature(name, feature) => FORBIDDEN_FEATURES
            .iter()
            .any(|(package, forbidden)| package == name && forbidden == feature),
    }
}

fn describe(node: &Node) -> String {
    match node {
        Node::Package(name) => name.clone(),
        Node::Feature(name, feature) => format!("{name} feature \"{feature}\""),
    }
}

/// Every forbidden package or feature in `tree` (`cargo tree --prefix depth -e
/// normal,features` output), once each, as the path of packages from the root to it (feature
/// nodes on the way are left out; the last element is the forbidden node itself).
fn forbidden_paths(tree: &str) -> Vec<Vec<String>> {
    let mut stack: Vec<Node> = Vec::new();
    let mut found: Vec<Vec<String>> = Vec::new();
    let mut seen: Vec<Node> = Vec::new();
    for (depth, node) in tree.lines().filter_map(parse_line) {
        stack.truncate(depth);
        if is_forbidden(&node) && !seen.contains(&node) {
            seen.push(node.clone());
            let mut path: Vec<String> = stack
                .iter()
                .filter_map(|step| match step {
                    Node::Package(name) => Some(name.clone()),
                    Node::Feature(..) => None,
                })
                .collect();
            path.dedup();
            path.push(describe(&node));
            found.push(path);
        }
        stack.push(node);
    }
    found
}

#[cfg(test)]
#[path = "light_crates_tests.rs"]
mod tests;
