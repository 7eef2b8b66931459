//! Rule 2 of ARCHITECTURE.md, "thin orchestration": every function of the orchestration crates
//! ([`CRATES`]) is listed, with one reason, in the allowlist of `src/orchestration.rs`, and each
//! crate stays within its line budget.
//!
//! # Function paths
//!
//! Each `.rs` file under the crate's `src/` is parsed with `syn`; every `fn` with a body gets the
//! path `<package>::<module path>::<scope>::<fn>`, segments joined by `::`, empty ones left out:
//!
//! - **module path**: the file's path under `src/` without `.rs` (`src/session/registry.rs` →
//!   `session::registry`; `lib.rs` and `main.rs` directly in `src/` are the crate root, a
//!   `mod.rs` is its directory), then the inline `mod` blocks around the item (`#[path]` is not
//!   followed: the file decides);
//! - **scope**: for an inherent method, the Self type's last path segment without generic
//!   arguments (`impl<S> SessionService<S>` → `SessionService`; a reference stays one:
//!   `&Foo`); for a trait impl method, `<Type as Trait>` with the trait's last path segment and
//!   its generic arguments (`impl From<io::Error> for Error` → `<Error as From<io::Error>>`); for
//!   a default method of a trait, the trait's name; for a free function, nothing;
//! - a `fn` declared inside another function's body adds that function's name to the scope
//!   (`session::SessionService::create_session::validate`).
//!
//! Examples: `agenthost-service::start` (a free fn in `lib.rs`),
//! `agenthost-service::session::SessionService::create_session`,
//! `agenthost-service::session::<SessionService as Drop>::drop`,
//! `agenthost-side-effects::routing::Router::route` (a default method of trait `Router`).
//! Functions sharing a path (e.g. `#[cfg]` alternatives) share their entry.
//!
//! Not counted: trait methods without a body, `extern` block declarations, functions produced by
//! macros, and tests: files named `tests.rs` or `*_tests.rs`, any `tests/` directory, a file with
//! `#![cfg(test)]`, and every `mod`, `fn`, `impl` or `trait` marked `#[cfg(test)]` (also inside
//! `cfg(all(..))`) or `#[test]` (`#[tokio::test]` too). Code behind a crate's `test-support`
//! feature counts as test code (`cfg(feature = "test-support")`, `cfg(any(test, feature =
//! "test-support"))`): the architecture check refuses that feature in a normal dependency.
//!
//! # Line budget
//!
//! The production lines of a crate are the lines of those files holding a token other than a
//! comment — doc comments included among comments, test items excluded as above. Over its budget
//! (`LINE_BUDGETS`), a crate fails with both numbers. A budget may rise only together with new
//! allowlist entries for its crate: [`check_budget_rise`] compares the allowlist file with its
//! `HEAD` version (`git show`), read as text in the greppable format its header documents.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use proc_macro2::TokenStream;
use syn::visit::Visit;

use crate::error::{Error, Result};
use crate::metadata::Metadata;
use crate::orchestration::{ALLOWLIST, LINE_BUDGETS, Reason};

mod syntax;

use syntax::{Collector, code_lines, is_test_only};

/// The orchestration crates: package name and directory relative to the workspace root (used
/// when `cargo metadata` does not list the package).
pub const CRATES: &[(&str, &str)] = &[
    ("agenthost-side-effects", "crates/side-effects"),
    ("agenthost-service", "crates/service"),
];

/// The allowlist file, relative to the workspace root; messages name it.
pub const ALLOWLIST_FILE: &str = "xtask/src/orchestration.rs";

/// The allowlist and budgets a check runs against.
#[derive(Debug, Clone, Copy)]
pub struct Allowlist<'a> {
    /// `(function path, reason)`, one per allowed function.
    pub entries: &'a [(&'a str, Reason)],
    /// `(package, lines)`: the line budget of each crate; a crate missing here has budget 0.
    pub budgets: &'a [(&'a str, usize)],
}

impl Allowlist<'static> {
    /// No entries, every budget 0.
    pub const EMPTY: Self = Self {
        entries: &[],
        budgets: &[],
    };

    /// The allowlist of `src/orchestration.rs`.
    pub const WORKSPACE: Self = Self {
        entries: ALLOWLIST,
        budgets: LINE_BUDGETS,
    };
}

/// One source file of a crate.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Relative to the crate directory, `/`-separated: `src/session.rs`.
    pub path: String,
    /// The file's text.
    pub text: String,
}

/// The sources of one orchestration crate that exists.
#[derive(Debug, Clone)]
pub struct CrateSources {
    /// The package name, first segment of its function paths: `agenthost-service`.
    pub package: String,
    /// The crate directory relative to the workspace root, for messages: `crates/service`.
    pub dir: String,
    /// Every `.rs` file under `src/` (test files included: the check skips them itself).
    pub files: Vec<SourceFile>,
}

/// One counted function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// Its path in the scheme of the module documentation.
    pub path: String,
    /// The line of its name.
    pub line: usize,
    /// The statements of its body (a one-statement body is an accessor or a forwarder).
    pub statements: usize,
}

/// What one file contributes to its crate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileScan {
    /// The counted functions, in source order.
    pub functions: Vec<Function>,
    /// Its production lines (non-blank, non-comment, test items excluded).
    pub lines: usize,
}

/// The reasons, comma-separated, for messages.
fn reason_list() -> String {
    Reason::ALL.map(Reason::name).join(", ")
}

/// Whether `path` (relative to the crate directory) is a test file: a `tests/` directory on the
/// way, or a file named `tests.rs` or `*_tests.rs`.
pub fn is_test_file(path: &str) -> bool {
    let mut components = path.split('/').rev();
    let name = components.next().unwrap_or_default();
    name == "tests.rs" || name.ends_with("_tests.rs") || components.any(|dir| dir == "tests")
}

/// The module path of a file relative to the crate directory (`src/a/b.rs` → `["a", "b"]`).
pub fn module_path(path: &str) -> Vec<String> {
    let inner = path.strip_prefix("src/").unwrap_or(path);
    let mut segments: Vec<&str> = inner.split('/').collect();
    if let Some(last) = segments.pop() {
        let stem = last.strip_suffix(".rs").unwrap_or(last);
        let root_file = segments.is_empty() && (stem == "lib" || stem == "main");
        if !root_file && stem != "mod" {
            segments.push(stem);
        }
    }
    segments.into_iter().map(str::to_owned).collect()
}

/// The functions and production lines of one file of `package`; `display` is the file's path in
/// messages. A parse error is returned as its violation message.
pub fn scan_file(package: &str, path: &str, display: &str, text: &str) -> Result<FileScan, String> {
    let parse_error = |error: &syn::Error| {
        let start = error.span().start();
        format!(
            "cannot parse {display}:{}:{} for the thin-orchestration check: {error}",
            start.line,
            start.column + 1
        )
    };
    let file = syn::parse_file(text).map_err(|error| parse_error(&error))?;
    if is_test_only(&file.attrs) {
        return Ok(FileScan {
            functions: Vec::new(),
            lines: 0,
        });
    }
    let mut collector = Collector {
        package,
        scope: module_path(path),
        functions: Vec::new(),
        excluded: Vec::new(),
    };
    collector.visit_file(&file);
    let tokens: TokenStream = text
        .parse()
        .map_err(|error: proc_macro2::LexError| parse_error(&syn::Error::from(error)))?;
    let mut lines = BTreeSet::new();
    code_lines(tokens, &mut lines);
    let lines = lines
        .into_iter()
        .filter(|line| {
            !collector
                .excluded
                .iter()
                .any(|(start, end)| (start..=end).contains(&line))
        })
        .count();
    Ok(FileScan {
        functions: collector.functions,
        lines,
    })
}

/// The production lines of the crate in `dir` (every `.rs` file under its `src/`, test files
/// and test items excluded), as the line budget counts them.
pub fn crate_lines(dir: &Path) -> Result<usize> {
    let mut files = Vec::new();
    collect_sources(dir, &dir.join("src"), &mut files)?;
    let mut lines = 0;
    for file in files.iter().filter(|file| !is_test_file(&file.path)) {
        lines += scan_file("crate", &file.path, &file.path, &file.text)
            .map_err(Error::new)?
            .lines;
    }
    Ok(lines)
}

/// Every violation of the rule by `crates` (the orchestration crates that exist) against
/// `allowlist`: parse errors and unlisted functions (files in the given order, functions in
/// source order), crates over budget, then entries for an unknown package, duplicated or stale.
pub fn check_crates(crates: &[CrateSources], allowlist: &Allowlist<'_>) -> Vec<String> {
    let listed: BTreeSet<&str> = allowlist.entries.iter().map(|(path, _)| *path).collect();
    let mut violations = Vec::new();
    // The function paths of each crate whose every file parsed (only those can prove an entry
    // stale).
    let mut complete: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let mut present = BTreeSet::new();
    let mut shapes: BTreeMap<String, usize> = BTreeMap::new();
    for krate in crates {
        present.insert(krate.package.as_str());
        let mut paths = BTreeSet::new();
        let mut lines = 0;
        let mut parsed = true;
        for file in krate.files.iter().filter(|file| !is_test_file(&file.path)) {
            let display = format!("{}/{}", krate.dir, file.path);
            let scan = match scan_file(&krate.package, &file.path, &display, &file.text) {
                Ok(scan) => scan,
                Err(message) => {
                    violations.push(message);
                    parsed = false;
                    continue;
                }
            };
            lines += scan.lines;
            for function in scan.functions {
                if !listed.contains(function.path.as_str()) && !paths.contains(&function.path) {
                    violations.push(format!(
                        "`{}` ({display}:{}) is not in the orchestration allowlist \
                         ({ALLOWLIST_FILE}): add it with one reason from {} — or move the \
                         behaviour into a contribution",
                        function.path,
                        function.line,
                        reason_list()
                    ));
                }
                shapes.insert(function.path.clone(), function.statements);
                paths.insert(function.path);
            }
        }
        let budget = allowlist
            .budgets
            .iter()
            .find(|(package, _)| *package == krate.package)
            .map_or(0, |(_, budget)| *budget);
        if lines > budget {
            violations.push(format!(
                "{} has {lines} lines of production code (non-blank, non-comment, tests \
                 excluded), over its line budget of {budget} in {ALLOWLIST_FILE}: move \
                 behaviour into a contribution, or raise the budget in the commit that adds \
                 the allowlist entries",
                krate.package
            ));
        }
        if parsed {
            complete.insert(krate.package.as_str(), paths);
        }
    }
    violations.extend(check_entries(allowlist.entries, &present, &complete));
    violations.extend(check_reasons(allowlist.entries, &shapes));
    violations
}

/// The entries whose reason their function's place or shape contradicts: a `use-case` outside
/// the use-case type, a `wiring` that is neither a constructor, a setter, a formatting or
/// conversion impl nor a one-statement accessor.
fn check_reasons(entries: &[(&str, Reason)], statements: &BTreeMap<String, usize>) -> Vec<String> {
    let mut violations = Vec::new();
    for (path, reason) in entries {
        let Some(&count) = statements.get(*path) else {
            continue; // stale or unparsed: reported elsewhere
        };
        let name = path.rsplit("::").next().unwrap_or_default();
        let fits = match reason {
            Reason::UseCase => path.starts_with(USE_CASE_SCOPE),
            Reason::Wiring => {
                count <= 1
                    || WIRING_NAMES.contains(&name)
                    || name.starts_with("set_")
                    || WIRING_TRAITS
                        .iter()
                        .any(|t| path.contains(&format!(" as {t}")))
            }
            _ => true,
        };
        if !fits {
            violations.push(format!(
                "allowlist entry `{path}` gives the reason {}, which its function cannot have: {}",
                reason.name(),
                reason.rule()
            ));
        }
    }
    violations
}

/// Where every `use-case` function lives.
pub const USE_CASE_SCOPE: &str = "agenthost-service::agent::AgentService::";

/// Function names that are `wiring` whatever their body.
const WIRING_NAMES: &[&str] = &["new", "start"];

/// Traits whose impls are `wiring`.
const WIRING_TRAITS: &[&str] = &["Debug", "Display", "Default", "From"];

/// The violations of the entries themselves, in allowlist order.
fn check_entries(
    entries: &[(&str, Reason)],
    present: &BTreeSet<&str>,
    complete: &BTreeMap<&str, BTreeSet<String>>,
) -> Vec<String> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for (path, _) in entries {
        *counts.entry(path).or_default() += 1;
    }
    let mut violations = Vec::new();
    let mut seen = BTreeSet::new();
    for (path, reason) in entries {
        if !seen.insert(*path) {
            continue;
        }
        let count = counts.get(path).copied().unwrap_or_default();
        if count > 1 {
            violations.push(format!(
                "allowlist entry `{path}` is listed {count} times in {ALLOWLIST_FILE}: keep one \
                 entry, with one reason"
            ));
        }
        let package = CRATES.iter().map(|(package, _)| *package).find(|package| {
            path.strip_prefix(package)
                .is_some_and(|rest| rest.starts_with("::"))
        });
        let Some(package) = package else {
            violations.push(format!(
                "allowlist entry `{path}` names no orchestration crate: a path starts with {}, \
                 then `::` (fix or remove it in {ALLOWLIST_FILE})",
                CRATES
                    .iter()
                    .map(|(package, _)| *package)
                    .collect::<Vec<_>>()
                    .join(" or ")
            ));
            continue;
        };
        // A crate that is not there cannot be checked, and proves nothing stale: the check also
        // runs over partial trees (fixtures, a workspace before the crate lands).
        if present.contains(package)
            && let Some(paths) = complete.get(package)
            && !paths.contains(*path)
        {
            violations.push(format!(
                "allowlist entry `{path}` ({}) is stale: {package} has no such function; \
                 remove it from {ALLOWLIST_FILE} (or fix its path)",
                reason.name()
            ));
        }
    }
    violations
}

/// The allowlist file read as text (the format of its header): entries with the variant name of
/// their reason, and budgets, in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TextAllowlist {
    /// `(function path, reason variant)`: `("agenthost-service::x", "Protocol")`.
    pub entries: Vec<(String, String)>,
    /// `(package, lines)`.
    pub budgets: Vec<(String, usize)>,
}

impl TextAllowlist {
    /// The number of entries whose path belongs to `package`.
    pub fn entry_count(&self, package: &str) -> usize {
        self.entries
            .iter()
            .filter(|(path, _)| {
                path.strip_prefix(package)
                    .is_some_and(|rest| rest.starts_with("::"))
            })
            .count()
    }

    /// The budget of `package`, if the text has one.
    pub fn budget(&self, package: &str) -> Option<usize> {
        self.budgets
            .iter()
            .find(|(name, _)| name == package)
            .map(|(_, budget)| *budget)
    }
}

/// Reads the rows of an allowlist file: trimmed lines `("<text>", Reason::<Variant>),` are
/// entries, `("<text>", <digits>),` budgets (a trailing comment allowed); every other line is
/// ignored.
pub fn parse_allowlist_text(text: &str) -> TextAllowlist {
    let mut allowlist = TextAllowlist::default();
    for line in text.lines() {
        let Some(rest) = line.trim().strip_prefix("(\"") else {
            continue;
        };
        let Some((name, rest)) = rest.split_once('"') else {
            continue;
        };
        let Some((value, _)) = rest
            .strip_prefix(',')
            .and_then(|rest| rest.split_once("),"))
        else {
            continue;
        };
        let value = value.trim();
        if let Some(variant) = value.strip_prefix("Reason::") {
            allowlist
                .entries
                .push((name.to_owned(), variant.to_owned()));
        } else if let Ok(budget) = value.replace('_', "").parse() {
            allowlist.budgets.push((name.to_owned(), budget));
        }
    }
    allowlist
}

/// The budget-rise rule, given the allowlist file's text at `HEAD` and now: a budget higher than
/// at `HEAD` needs more entries for its crate than at `HEAD`. A budget missing from either side
/// is not compared.
pub fn check_budget_rise(head: &str, current: &str) -> Vec<String> {
    let head = parse_allowlist_text(head);
    let current = parse_allowlist_text(current);
    current
        .budgets
        .iter()
        .filter_map(|(package, now)| {
            let before = head.budget(package)?;
            let (entries_before, entries_now) =
                (head.entry_count(package), current.entry_count(package));
            (*now > before && entries_now <= entries_before).then(|| {
                format!(
                    "the line budget of {package} rose from {before} to {now} without new \
                     allowlist entries ({entries_before} at HEAD, {entries_now} now): raise it \
                     only in the commit that adds the entries, each with its reason"
                )
            })
        })
        .collect()
}

/// The check over the workspace at `root`: the orchestration crates that exist (a workspace
/// package of that name, or a `Cargo.toml` in its directory), then the budget-rise rule against
/// `git show HEAD:` of the allowlist file, skipped when git, `HEAD` or either file is missing.
pub fn check(root: &Path, metadata: &Metadata) -> Result<Vec<String>> {
    check_with(root, metadata, &Allowlist::WORKSPACE)
}

/// [`check`] against a given allowlist (tests use their own).
pub fn check_with(
    root: &Path,
    metadata: &Metadata,
    allowlist: &Allowlist<'_>,
) -> Result<Vec<String>> {
    let mut crates = Vec::new();
    for (package, default_dir) in CRATES {
        let Some(directory) = crate_directory(root, metadata, package, default_dir) else {
            continue;
        };
        let mut files = Vec::new();
        collect_sources(&directory, &directory.join("src"), &mut files)?;
        files.sort_by(|a, b| a.path.cmp(&b.path));
        let relative = directory.strip_prefix(root).unwrap_or(&directory);
        crates.push(CrateSources {
            package: (*package).to_owned(),
            dir: slash_path(relative),
            files,
        });
    }
    let mut violations = check_crates(&crates, allowlist);
    if let (Ok(current), Some(head)) = (
        fs::read_to_string(root.join(ALLOWLIST_FILE)),
        git_show_head(root, ALLOWLIST_FILE),
    ) {
        violations.extend(check_budget_rise(&head, &current));
    }
    Ok(violations)
}

/// The directory of `package`: that of its manifest when `cargo metadata` lists it, else
/// `root/default_dir` when it holds a `Cargo.toml`.
fn crate_directory(
    root: &Path,
    metadata: &Metadata,
    package: &str,
    default_dir: &str,
) -> Option<PathBuf> {
    let listed = metadata
        .workspace_packages()
        .find(|candidate| {
            candidate.name == package && !candidate.manifest_path.as_os_str().is_empty()
        })
        .and_then(|candidate| {
            root.join(&candidate.manifest_path)
                .parent()
                .map(Path::to_path_buf)
        });
    listed.or_else(|| {
        let directory = root.join(default_dir);
        directory.join("Cargo.toml").is_file().then_some(directory)
    })
}

/// Every `.rs` file under `directory` (recursively, symlinks not followed), with its path
/// relative to `crate_dir`. A missing directory has none.
pub(crate) fn collect_sources(
    crate_dir: &Path,
    directory: &Path,
    files: &mut Vec<SourceFile>,
) -> Result<()> {
    let entries = match fs::read_dir(directory) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => {
            return Err(Error::from(error).context(format!("reading {}", directory.display())));
        }
    };
    for entry in entries {
        let entry = entry?;
        let path = entry.path();
        let file_type = entry.file_type()?;
        if file_type.is_dir() {
            collect_sources(crate_dir, &path, files)?;
        } else if file_type.is_file() && path.extension().is_some_and(|ext| ext == "rs") {
            let text = fs::read_to_string(&path).map_err(|error| {
                Error::from(error).context(format!("reading {}", path.display()))
            })?;
            let relative = path.strip_prefix(crate_dir).unwrap_or(&path);
            files.push(SourceFile {
                path: slash_path(relative),
                text,
            });
        }
    }
    Ok(())
}

/// `path` with `/` between its components.
pub(crate) fn slash_path(path: &Path) -> String {
    path.components()
        .map(|component| component.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// The text of `path` (relative to the repository root at `root`) at `HEAD`, if git runs and has
/// it.
fn git_show_head(root: &Path, path: &str) -> Option<String> {
    let output = Command::new("git")
        .arg("show")
        .arg(format!("HEAD:./{path}"))
        .current_dir(root)
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    String::from_utf8(output.stdout).ok()
}

#[cfg(test)]
#[path = "thin_orchestration_tests.rs"]
mod tests;
