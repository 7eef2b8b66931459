//! `cargo xtask bench [NAME…]`: runs the workspace's `[[bench]]` targets and checks their output.
//!
//! A benchmark reports against an anchor measured in the same run, one line per measurement:
//! `bench <name>: value=<number><unit> anchor=<number><unit> ratio=<number>x goal=<number>x`,
//! or `bench <name>: value=<number>` for a pure count. Speed is reported, never gated: a ratio
//! below its goal is marked in the summary, while a malformed line or a silent benchmark fails.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use crate::error::{Error, Result};
use crate::metadata::Metadata;

/// The expected shapes, quoted in error messages.
const FORMAT: &str = "`bench <name>: value=<number><unit> anchor=<number><unit> \
                      ratio=<number>x goal=<number>x` or `bench <name>: value=<number>`";

/// A `[[bench]]` target of a workspace package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchTarget {
    /// The package defining the target.
    pub package: String,
    /// The target name, which is also the benchmark's name.
    pub name: String,
}

/// Every bench target of the workspace packages, sorted by name.
pub fn discover(metadata: &Metadata) -> Result<Vec<BenchTarget>> {
    let mut targets: BTreeMap<String, String> = BTreeMap::new();
    for package in metadata.workspace_packages() {
        for target in &package.targets {
            if !target.kind.iter().any(|kind| kind == "bench") {
                continue;
            }
            if let Some(other) = targets.insert(target.name.clone(), package.name.clone()) {
                return Err(Error::new(format!(
                    "bench target `{}` is defined by both `{other}` and `{}`; bench names must be \
                     unique in the workspace",
                    target.name, package.name
                )));
            }
        }
    }
    Ok(targets
        .into_iter()
        .map(|(name, package)| BenchTarget { package, name })
        .collect())
}

/// The targets named in `requested` (all of them when empty); an unknown name is an error.
pub fn select(targets: &[BenchTarget], requested: &[String]) -> Result<Vec<BenchTarget>> {
    if requested.is_empty() {
        return Ok(targets.to_vec());
    }
    let known = || {
        let names: Vec<&str> = targets.iter().map(|t| t.name.as_str()).collect();
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        }
    };
    requested
        .iter()
        .map(|name| {
            targets
                .iter()
                .find(|target| &target.name == name)
                .cloned()
                .ok_or_else(|| {
                    Error::new(format!(
                        "unknown benchmark `{name}`; known benchmarks: {}",
                        known()
                    ))
                })
        })
        .collect()
}

/// A number with its unit (`12.5µs`; the unit may be empty).
#[derive(Debug, Clone, PartialEq)]
pub struct Measure {
    /// The number.
    pub number: f64,
    /// The unit as printed (`ns`, `ms`, `MiB/s`, …), possibly empty.
    pub unit: String,
}

impl fmt::Display for Measure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.number, self.unit)
    }
}

/// The anchor part of a bench line: what the value is compared with.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The anchor, measured in the same run.
    pub anchor: Measure,
    /// How many times better than the anchor the value is.
    pub ratio: f64,
    /// The ratio the project aims for.
    pub goal: f64,
}

/// One parsed `bench …` line.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchLine {
    /// The measurement name.
    pub name: String,
    /// The measured value.
    pub value: Measure,
    /// The comparison with the anchor; `None` for a pure count.
    pub comparison: Option<Comparison>,
}

impl BenchLine {
    /// Whether the ratio is below its goal.
    pub fn below_goal(&self) -> bool {
        self.comparison.as_ref().is_some_and(|c| c.ratio < c.goal)
    }
}

/// Parses a line that starts with `bench `; the error says what is wrong with it.
pub fn parse_line(line: &str) -> Result<BenchLine> {
    parse_fields(line.trim_end()).map_err(|problem| {
        Error::new(format!(
            "malformed bench line `{line}`: {problem}; expected {FORMAT}"
        ))
    })
}

fn parse_fields(line: &str) -> Result<BenchLine, String> {
    let rest = line
        .strip_prefix("bench ")
        .ok_or("it does not start with `bench `")?;
    let (name, fields) = rest.split_once(": ").ok_or("no `: ` after the name")?;
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(format!("the name `{name}` is empty or contains whitespace"));
    }
    let fields: Vec<&str> = fields.split(' ').collect();
    match fields.as_slice() {
        [value] => {
            let value = parse_measure(field(value, "value")?)?;
            if !value.unit.is_empty() {
                return Err(format!(
                    "a value without anchor must be a pure count, found unit `{}`",
                    value.unit
                ));
            }
            Ok(BenchLine {
                name: name.to_owned(),
                value,
                comparison: None,
            })
        }
        [value, anchor, ratio, goal] => Ok(BenchLine {
            name: name.to_owned(),
            value: parse_measure(field(value, "value")?)?,
            comparison: Some(Comparison {
                anchor: parse_measure(field(anchor, "anchor")?)?,
                ratio: parse_factor(field(ratio, "ratio")?)?,
                goal: parse_factor(field(goal, "goal")?)?,
            }),
        }),
        _ => Err(format!(
            "expected 1 or 4 space-separated fields after the name, found {}",
            fields.len()
        )),
    }
}

fn field<'a>(token: &'a str, key: &str) -> Result<&'a str, String> {
    token
        .strip_prefix(key)
        .and_then(|rest| rest.strip_prefix('='))
        .ok_or_else(|| format!("expected `{key}=…`, found `{token}`"))
}

/// `<digits>[.<digits>]` followed by a unit without digits or whitespace.
fn parse_measure(text: &str) -> Result<Measure, String> {
    let number_end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(number_end);
    if number.is_empty() {
        return Err(format!("`{text}` does not start with a number"));
    }
    let number = parse_number(number).map_err(|problem| format!("`{text}`: {problem}"))?;
    if unit.contains(|c: char| c.is_ascii_digit() || c.is_whitespace() || c == '=') {
        return Err(format!(
            "`{text}`: the unit `{unit}` must not contain digits, `=` or spaces"
        ));
    }
    Ok(Measure {
        number,
        unit: unit.to_owned(),
    })
}

/// `<number>x`.
fn parse_factor(text: &str) -> Result<f64, String> {
    let number = text
        .strip_suffix('x')
        .ok_or_else(|| format!("`{text}` must end with `x`"))?;
    parse_number(number).map_err(|problem| format!("`{text}`: {problem}"))
}

fn parse_number(text: &str) -> Result<f64, String> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, "0"));
    let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !digits(fraction) {
        return Err(format!("`{text}` is not a number like `12` or `3.5`"));
    }
    text.parse()
        .map_err(|_| format!("`{text}` is not a number like `12` or `3.5`"))
}

/// What one benchmark target produced.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The well-formed bench lines, in order.
    pub lines: Vec<BenchLine>,
    /// Malformed lines and run failures.
    pub errors: Vec<String>,
}

/// Runs one bench target with `cargo bench`, streaming its `bench ` lines to stdout.
///
/// Other stdout lines go to stderr so stdout carries only bench lines and the summary.
pub fn run_target(cargo: &Path, root: &Path, target: &BenchTarget) -> Result<Outcome> {
    let mut child = Command::new(cargo)
        .args(["bench", "-p", &target.package, "--bench", &target.name])
        .current_dir(root)
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|error| Error::new(format!("cannot run `cargo bench`: {error}")))?;
    let mut outcome = Outcome::default();
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines() {
            let line = line?;
            if line.starts_with("bench ") {
                println!("{line}");
                match parse_line(&line) {
                    Ok(parsed) => outcome.lines.push(parsed),
                    Err(error) => outcome.errors.push(error.to_string()),
                }
            } else {
                eprintln!("{line}");
            }
        }
    }
    let status = child.wait()?;
    if !status.success() {
        outcome.errors.push(format!(
            "`cargo bench -p {} --bench {}` failed ({status})",
            target.package, target.name
        ));
    } else if outcome.lines.is_empty() && outcome.errors.is_empty() {
        outcome.errors.push(format!(
            "benchmark `{}` printed no `bench ` line",
            target.name
        ));
    }
    Ok(outcome)
}

/// The end-of-run summary: every line per target, below-goal lines marked, errors listed.
pub fn summary(results: &[(BenchTarget, Outcome)]) -> String {
    let mut text = String::from("\nbench summary:\n");
    for (target, outcome) in results {
        let status = if outcome.errors.is_empty() {
            "ok"
        } else {
            "FAILED"
        };
        let _ = writeln!(text, "  {} ({}): {status}", target.name, target.package);
        for line in &outcome.lines {
            let _ = writeln!(text, "    {}", render_line(line));
        }
        for error in &outcome.errors {
            let _ = writeln!(text, "    error: {error}");
        }
    }
    let below_goal = results
        .iter()
        .flat_map(|(_, outcome)| &outcome.lines)
        .filter(|line| line.below_goal())
        .count();
    if below_goal > 0 {
        let _ = writeln!(
            text,
            "  {below_goal} measurement(s) below goal (speed is reported, not gated)"
        );
    }
    text
}

fn render_line(line: &BenchLine) -> String {
    match &line.comparison {
        None => format!("{}: value={}", line.name, line.value),
        Some(c) => {
            let note = if line.below_goal() {
                format!("  <- below goal ({}x < {}x)", c.ratio, c.goal)
            } else {
                String::new()
            };
            format!(
                "{}: value={} anchor={} ratio={}x goal={}x{note}",
                line.name, line.value, c.anchor, c.ratio, c.goal
            )
        }
    }
}

/// `cargo xtask bench [NAME…]`: runs the requested benchmarks (all without names).
pub fn bench(cargo: &Path, root: &Path, requested: &[String]) -> Result<()> {
    let metadata = Metadata::load(cargo, root)?;
    let targets = select(&discover(&metadata)?, requested)?;
    if targets.is_empty() {
        println!("no [[bench]] targets in the workspace");
        return Ok(());
    }
    let mut results = Vec::new();
    for target in targets {
        eprintln!(
            "==> cargo bench -p {} --bench {}",
            target.package, target.name
        );
        let outcome = run_target(cargo, root, &target)?;
        results.push((target, outcome));
    }
    print!("{}", summary(&results));
    let failed: Vec<&str> = results
        .iter()
        .filter(|(_, outcome)| !outcome.errors.is_empty())
        .map(|(target, _)| target.name.as_str())
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::new(format!(
            "{} benchmark(s) failed: {}",
            failed.len(),
            failed.join(", ")
        )))
    }
}

#[cfg(test)]
#[path = "bench_tests.rs"]
mod tests;
