//! Rule 1 of ARCHITECTURE.md: layering and dependency ownership, read from `cargo metadata`.
//!
//! [`check`] is a pure function of the parsed metadata so fixtures can exercise every rule.
//! It returns every violation, sorted, each message naming the offending edge.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::layers::{self, Layer};
use crate::metadata::{DependencyKind, Metadata};

/// External crates only some packages may depend on (direct dependencies, any kind).
struct ExternalRule {
    /// How the crates are named in messages.
    family: &'static str,
    /// Whether an external package belongs to the family.
    matches: fn(&str) -> bool,
    /// The only workspace packages allowed to depend on the family.
    owners: &'static [&'static str],
}

const EXTERNAL_RULES: &[ExternalRule] = &[
    ExternalRule {
        family: "gix (`gix`, `gix-*`)",
        matches: |name| name == "gix" || name.starts_with("gix-"),
        owners: &["agenthost-checkpoint"],
    },
    ExternalRule {
        family: "rusqlite",
        matches: |name| name == "rusqlite",
        owners: &["agenthost-store"],
    },
    ExternalRule {
        family: "WebSocket crates (`tokio-tungstenite`, `tungstenite`, `ahp-ws`)",
        matches: |name| matches!(name, "tokio-tungstenite" | "tungstenite" | "ahp-ws"),
        owners: &[
            "agenthost-server",
            "agenthost-client",
            "agenthost",
            "agenthost-e2e",
        ],
    },
];

/// Workspace packages whose normal dependencies on other workspace packages are pinned: the
/// package, the only workspace packages it may depend on, and why.
pub const PINNED: &[(&str, &[&str], &str)] = &[(
    "agenthost-server",
    &["agenthost-protocol", "agenthost-service"],
    "the server is only the transport: every use case goes through agenthost-service",
)];

/// A dependency edge between two workspace packages.
struct Edge<'a> {
    from: &'a str,
    to: &'a str,
    kind: DependencyKind,
}

/// The feature under which a workspace crate offers helpers for other crates' tests. Its code
/// counts as test code (the line budgets leave it out), so only a dev-dependency may enable it.
pub const TEST_SUPPORT_FEATURE: &str = "test-support";

/// Every violation of the layering rules in `metadata`, sorted and deduplicated.
pub fn check(metadata: &Metadata) -> Vec<String> {
    let packages: Vec<_> = metadata.workspace_packages().collect();
    let workspace: BTreeSet<&str> = packages.iter().map(|p| p.name.as_str()).collect();
    let mut violations = BTreeSet::new();
    let mut edges = Vec::new();

    for package in &packages {
        let from = package.name.as_str();
        if layers::layer_of(from).is_none() {
            violations.insert(format!(
                "workspace package `{from}` is missing from the layer table: add it to LAYERS in \
                 xtask/src/layers.rs with its layer from ARCHITECTURE.md"
            ));
        }
        for dependency in &package.dependencies {
            let to = dependency.name.as_str();
            let kind = dependency.kind();
            if kind != DependencyKind::Dev
                && dependency
                    .features
                    .iter()
                    .any(|f| f == TEST_SUPPORT_FEATURE)
            {
                violations.insert(format!(
                    "{from} -> {to}{}: the `{TEST_SUPPORT_FEATURE}` feature is test code; \
                     enable it in [dev-dependencies] only",
                    kind_note(kind)
                ));
            }
            if dependency.source.is_none() && workspace.contains(to) {
                edges.push(Edge { from, to, kind });
            } else {
                check_external(from, to, kind, &mut violations);
            }
        }
    }
    for edge in &edges {
        check_edge(edge, &mut violations);
    }
    for cycle in cycles(&edges) {
        violations.insert(format!(
            "dependency cycle among workspace packages: {cycle}; dev-dependencies may point \
             anywhere but must not close a cycle (the crate would be built twice and its types \
             would not match)"
        ));
    }
    violations.into_iter().collect()
}

fn kind_note(kind: DependencyKind) -> &'static str {
    match kind {
        DependencyKind::Normal => "",
        DependencyKind::Build => " [build-dependency]",
        DependencyKind::Dev => " [dev-dependency]",
    }
}

fn check_edge(edge: &Edge<'_>, violations: &mut BTreeSet<String>) {
    let Edge { from, to, kind } = *edge;
    let note = kind_note(kind);
    let (Some(from_layer), Some(to_layer)) = (layers::layer_of(from), layers::layer_of(to)) else {
        return; // the missing package is reported on its own
    };
    if to_layer == Layer::Tooling {
        violations.insert(format!(
            "{from} -> {to}{note}: nothing may depend on the tooling package `{to}`"
        ));
        return;
    }
    if from_layer == Layer::Tooling {
        return;
    }
    if layers::is_contribution(from) && layers::is_contribution(to) {
        violations.insert(format!(
            "{from} -> {to}{note}: a contribution must never depend on another contribution; \
             move the shared code into dispatcher, services or a lower layer"
        ));
        return;
    }
    if kind == DependencyKind::Dev {
        return;
    }
    if let Some((_, allowed, why)) = PINNED.iter().find(|(package, ..)| *package == from)
        && !allowed.contains(&to)
    {
        violations.insert(format!(
            "{from} -> {to}{note}: of the workspace, {from} may depend only on {} ({why})",
            allowed.join(", ")
        ));
    }
    if let (Layer::Rank(from_rank), Layer::Rank(to_rank)) = (from_layer, to_layer)
        && to_rank >= from_rank
    {
        violations.insert(format!(
            "{from} ({from_layer}) -> {to} ({to_layer}){note}: a crate may depend only on \
             strictly lower layers"
        ));
    }
}

fn check_external(from: &str, to: &str, kind: DependencyKind, violations: &mut BTreeSet<String>) {
    if layers::layer_of(from) == Some(Layer::Tooling) {
        return;
    }
    for rule in EXTERNAL_RULES {
        if (rule.matches)(to) && !rule.owners.contains(&from) {
            violations.insert(format!(
                "{from} -> {to}{}: only {} may depend on {}",
                kind_note(kind),
                rule.owners.join(", "),
                rule.family
            ));
        }
    }
}

/// One rendered cycle per strongly connected component of the workspace graph (all edge kinds).
fn cycles(edges: &[Edge<'_>]) -> Vec<String> {
    // One arc per package pair, labelled with its strongest kind (normal before build before dev).
    let mut graph: BTreeMap<&str, BTreeMap<&str, DependencyKind>> = BTreeMap::new();
    for edge in edges {
        let kind = graph
            .entry(edge.from)
            .or_default()
            .entry(edge.to)
            .or_insert(edge.kind);
        *kind = (*kind).min(edge.kind);
    }
    let reachable: BTreeMap<&str, BTreeSet<&str>> = graph
        .keys()
        .map(|&node| (node, reachable_from(&graph, node)))
        .collect();

    let mut seen = BTreeSet::new();
    let mut rendered = Vec::new();
    for (&start, from_start) in &reachable {
        if seen.contains(start) || !from_start.contains(start) {
            continue;
        }
        // The component of `start`: everything it reaches that reaches it back.
        let component: BTreeSet<&str> = from_start
            .iter()
            .copied()
            .filter(|node| reachable.get(node).is_some_and(|r| r.contains(start)))
            .collect();
        seen.extend(component.iter().copied());
        if let Some(path) = shortest_cycle(&graph, start, &component) {
            let mut cycle = render_cycle(&graph, &path);
            let others: Vec<&str> = component
                .iter()
                .copied()
                .filter(|node| !path.contains(node))
                .collect();
            if !others.is_empty() {
                cycle.push_str(&format!(
                    " (the cycle also runs through {})",
                    others.join(", ")
                ));
            }
            rendered.push(cycle);
        }
    }
    rendered
}

/// Nodes reachable from `start` by one or more arcs.
fn reachable_from<'a>(
    graph: &BTreeMap<&'a str, BTreeMap<&'a str, DependencyKind>>,
    start: &'a str,
) -> BTreeSet<&'a str> {
    let mut reached = BTreeSet::new();
    let mut queue = VecDeque::from([start]);
    while let Some(node) = queue.pop_front() {
        for &next in graph.get(node).into_iter().flat_map(BTreeMap::keys) {
            if reached.insert(next) {
                queue.push_back(next);
            }
        }
    }
    reached
}

/// The shortest path `start -> … -> start` inside `component` (breadth-first).
fn shortest_cycle<'a>(
    graph: &BTreeMap<&'a str, BTreeMap<&'a str, DependencyKind>>,
    start: &'a str,
    component: &BTreeSet<&'a str>,
) -> Option<Vec<&'a str>> {
    let mut parent: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(node) = queue.pop_front() {
        for &next in graph.get(node).into_iter().flat_map(BTreeMap::keys) {
            if next == start {
                // Walk the parents back to `start`, then reverse: start -> ... -> node -> start.
                let mut path = vec![start];
                let mut current = node;
                loop {
                    path.push(current);
                    match parent.get(current) {
                        Some(&previous) if current != start => current = previous,
                        _ => break,
                    }
                }
                path.reverse();
                return Some(path);
            }
            if component.contains(next) && next != start && !parent.contains_key(next) {
                parent.insert(next, node);
                queue.push_back(next);
            }
        }
    }
    None
}

fn render_cycle(graph: &BTreeMap<&str, BTreeMap<&str, DependencyKind>>, path: &[&str]) -> String {
    let mut rendered = String::from(path.first().copied().unwrap_or_default());
    for pair in path.windows(2) {
        let kind = graph.get(pair[0]).and_then(|arcs| arcs.get(pair[1]));
        let label = match kind {
            Some(DependencyKind::Dev) => "dev",
            Some(DependencyKind::Build) => "build",
            _ => "normal",
        };
        rendered.push_str(&format!(" --{label}--> {}", pair[1]));
    }
    rendered
}

#[cfg(test)]
#[path = "architecture_tests.rs"]
mod tests;
