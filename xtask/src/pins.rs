//! Rule 4 of ARCHITECTURE.md, "the contract stays small": the contribution contract of
//! `agenthost-dispatcher` is pinned here, member by member.
//!
//! The three items a contribution sees — the hook trait [`CHAT_CONTRIBUTION_HOOKS`], its context
//! [`CONTRIBUTION_CONTEXT_FIELDS`] and the host bridge [`HOST_BRIDGE_METHODS`] — are parsed with
//! `syn` from `crates/dispatcher/src/` and their member names compared with the pins below, in
//! any order. Only names are pinned: signatures, default bodies, generics and lifetimes may
//! change freely; adding, removing or renaming a member may not, without changing the pin.

use std::fmt::Write as _;
use std::fs;
use std::io::ErrorKind;
use std::path::Path;

use crate::error::{Error, Result};
use crate::metadata::Metadata;

// The pinned contract. Changing the contract means changing the pin in the same commit
// (ARCHITECTURE.md rule 4), so that growing it is always a reviewed, deliberate decision.

/// The hooks of the trait `ChatContribution`: exactly these seven methods.
pub const CHAT_CONTRIBUTION_HOOKS: &[&str] = &[
    "on_incoming_request",
    "on_turn_end",
    "on_did_apply_client_action",
    "on_did_dispatch_action",
    "on_outgoing_turn",
    "on_hydrate_turns",
    "on_hydrate_chat",
];

/// The fields of the struct `ContributionContext`: identity and mementos, never services.
pub const CONTRIBUTION_CONTEXT_FIELDS: &[&str] = &["id", "mementos"];

/// The methods of the trait `HostBridge`: the two members a contribution may use.
pub const HOST_BRIDGE_METHODS: &[&str] = &["launch_kind", "send_turn_message"];

/// The package that holds the contract; the check runs only once it exists.
pub const DISPATCHER_PACKAGE: &str = "agenthost-dispatcher";

/// Its manifest, relative to the workspace root.
pub const DISPATCHER_MANIFEST: &str = "crates/dispatcher/Cargo.toml";

/// Where violation messages send the reader.
const PIN_FILE: &str = "xtask/src/pins.rs";

/// The kind of a pinned item, and so of its members.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    /// A trait, whose members are its methods (`TraitItem::Fn` only).
    Trait,
    /// A struct with named fields, whose members are its fields.
    Struct,
}

impl ItemKind {
    fn keyword(self) -> &'static str {
        match self {
            Self::Trait => "trait",
            Self::Struct => "struct",
        }
    }

    fn member(self) -> &'static str {
        match self {
            Self::Trait => "method",
            Self::Struct => "field",
        }
    }
}

/// One pinned item: where it lives, what it is, and the names of its members.
#[derive(Debug, Clone, Copy)]
pub struct Pin {
    /// The source file defining it at top level, relative to the workspace root.
    pub path: &'static str,
    /// Trait or struct.
    pub kind: ItemKind,
    /// The item's name.
    pub name: &'static str,
    /// The exact set of its member names.
    pub members: &'static [&'static str],
}

/// The pinned items, in the order [`check_contract`] takes their sources.
pub const PINS: [Pin; 3] = [
    Pin {
        path: "crates/dispatcher/src/contribution.rs",
        kind: ItemKind::Trait,
        name: "ChatContribution",
        members: CHAT_CONTRIBUTION_HOOKS,
    },
    Pin {
        path: "crates/dispatcher/src/context.rs",
        kind: ItemKind::Struct,
        name: "ContributionContext",
        members: CONTRIBUTION_CONTEXT_FIELDS,
    },
    Pin {
        path: "crates/dispatcher/src/host.rs",
        kind: ItemKind::Trait,
        name: "HostBridge",
        members: HOST_BRIDGE_METHODS,
    },
];

/// Every violation of the pinned contract, given the text of the three contract files
/// (`contribution.rs`, `context.rs`, `host.rs` of `crates/dispatcher/src/`).
pub fn check_contract(contribution_rs: &str, context_rs: &str, host_rs: &str) -> Vec<String> {
    let [contribution, context, host] = &PINS;
    [
        (contribution, contribution_rs),
        (context, context_rs),
        (host, host_rs),
    ]
    .into_iter()
    .flat_map(|(pin, source)| check_pin(pin, source))
    .collect()
}

/// Every violation of one pin by `source`, the text of the file at `pin.path`: a parse error,
/// a missing item, then unpinned members in source order, then missing members in pin order.
pub fn check_pin(pin: &Pin, source: &str) -> Vec<String> {
    let file = match syn::parse_file(source) {
        Ok(file) => file,
        Err(error) => {
            let start = error.span().start();
            return vec![format!(
                "cannot parse {}:{}:{} for the contract check: {error}",
                pin.path,
                start.line,
                start.column + 1
            )];
        }
    };
    let Some(members) = find_members(pin, &file.items) else {
        return vec![format!(
            "{} defines no {} `{}` at its top level; the contract pinned in {PIN_FILE} puts it \
             there with {}s {}",
            pin.path,
            pin.kind.keyword(),
            pin.name,
            pin.kind.member(),
            quoted_list(pin.members)
        )];
    };
    let members = match members {
        Members::Named(names) => names,
        Members::Unnamed => {
            return vec![format!(
                "{} has unnamed (tuple) fields ({}); the contract pinned in {PIN_FILE} gives it \
                 the named fields {}",
                pin.name,
                pin.path,
                quoted_list(pin.members)
            )];
        }
    };
    let unpinned = members
        .iter()
        .filter(|name| !pin.members.contains(&name.as_str()))
        .map(|name| {
            format!(
                "{} has an unpinned {} `{name}`",
                pin.name,
                pin.kind.member()
            )
        });
    let missing = pin
        .members
        .iter()
        .filter(|pinned| !members.iter().any(|name| name == *pinned))
        .map(|pinned| {
            format!(
                "{} is missing pinned {} `{pinned}`",
                pin.name,
                pin.kind.member()
            )
        });
    unpinned
        .chain(missing)
        .map(|difference| {
            format!(
                "{difference} ({}); the contract is pinned in {PIN_FILE} — change the pin in the \
                 same commit if this is deliberate",
                pin.path
            )
        })
        .collect()
}

/// The members found for a pinned item.
enum Members {
    /// Method or field names, in source order.
    Named(Vec<String>),
    /// A tuple struct: its fields have no names to compare.
    Unnamed,
}

/// The members of the first top-level item of the pin's kind and name, if there is one.
fn find_members(pin: &Pin, items: &[syn::Item]) -> Option<Members> {
    items.iter().find_map(|item| match (pin.kind, item) {
        (ItemKind::Trait, syn::Item::Trait(item)) if item.ident == pin.name => {
            let methods = item.items.iter().filter_map(|member| match member {
                syn::TraitItem::Fn(method) => Some(method.sig.ident.to_string()),
                _ => None,
            });
            Some(Members::Named(methods.collect()))
        }
        (ItemKind::Struct, syn::Item::Struct(item)) if item.ident == pin.name => {
            Some(match &item.fields {
                syn::Fields::Named(fields) => Members::Named(
                    fields
                        .named
                        .iter()
                        .filter_map(|field| field.ident.as_ref().map(ToString::to_string))
                        .collect(),
                ),
                syn::Fields::Unnamed(_) => Members::Unnamed,
                syn::Fields::Unit => Members::Named(Vec::new()),
            })
        }
        _ => None,
    })
}

/// `` `a`, `b` `` for messages.
fn quoted_list(names: &[&str]) -> String {
    let mut text = String::new();
    for (index, name) in names.iter().enumerate() {
        let separator = if index == 0 { "" } else { ", " };
        let _ = write!(text, "{separator}`{name}`");
    }
    text
}

/// The check over the workspace at `root`: skipped (no violations) until the dispatcher package
/// exists — neither `crates/dispatcher/Cargo.toml` nor a workspace package
/// `agenthost-dispatcher` — then a missing contract file is a violation too.
pub fn check(root: &Path, metadata: &Metadata) -> Result<Vec<String>> {
    let in_workspace = metadata
        .workspace_packages()
        .any(|package| package.name == DISPATCHER_PACKAGE);
    if !in_workspace && !root.join(DISPATCHER_MANIFEST).is_file() {
        return Ok(Vec::new());
    }
    let mut violations = Vec::new();
    for pin in &PINS {
        match fs::read_to_string(root.join(pin.path)) {
            Ok(source) => violations.extend(check_pin(pin, &source)),
            Err(error) if error.kind() == ErrorKind::NotFound => violations.push(format!(
                "{} does not exist; the contract pinned in {PIN_FILE} defines {} `{}` there \
                 with {}s {}",
                pin.path,
                pin.kind.keyword(),
                pin.name,
                pin.kind.member(),
                quoted_list(pin.members)
            )),
            Err(error) => {
                return Err(Error::from(error).context(format!("reading {}", pin.path)));
            }
        }
    }
    Ok(violations)
}

#[cfg(test)]
#[path = "pins_tests.rs"]
mod tests;
