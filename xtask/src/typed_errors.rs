//! Rule 7 of ARCHITECTURE.md, "typed errors": no public function of a library crate returns
//! `Result<_, String>`. A caller can match on an error enum (`thiserror`), not on a message.
//!
//! Every production source file of the workspace (as [`crate::file_length`] lists them, less the
//! binaries' `main.rs` and `src/bin/`, and less the tooling packages `xtask` and `tests`, whose
//! checks speak in messages) is parsed with `syn`. Every `pub fn` — a free function or a
//! method of an inherent `impl` — whose return type is `Result<T, String>` is a violation, named
//! `<file>::<fn>` or `<file>::<Type>::<fn>`. Items under `#[cfg(test)]` are skipped.
//!
//! [`PENDING`] lists the functions that still return one, until their crate gets its error
//! types; an entry that no longer matches a function fails, so the list only shrinks.

use std::fs;
use std::path::Path;

use syn::visit::{self, Visit};

use crate::error::{Error, Result};
use crate::metadata::Metadata;

/// Public functions that still return `Result<_, String>`, as `<file>::[<Type>::]<fn>`.
pub const PENDING: &[&str] = &[];

/// The public functions returning `Result<_, String>` in one file's `text`, named after `file`.
pub fn string_errors(file: &str, text: &str) -> std::result::Result<Vec<String>, String> {
    let syntax = syn::parse_file(text).map_err(|error| {
        let start = error.span().start();
        format!("{file}:{}:{}: {error}", start.line, start.column + 1)
    })?;
    let mut finder = Finder {
        file,
        found: Vec::new(),
    };
    finder.visit_file(&syntax);
    Ok(finder.found)
}

/// The violations among `found` (every public function returning `Result<_, String>`) with
/// `pending` as the functions allowed to, for now; entries outside `packages` (the workspace's
/// package directories) are not checked.
pub fn check_found(found: &[String], pending: &[&str], packages: &[String]) -> Vec<String> {
    let mut violations: Vec<String> = found
        .iter()
        .filter(|name| !pending.contains(&name.as_str()))
        .map(|name| {
            format!(
                "{name} is public and returns `Result<_, String>`: give it an error type a caller \
                 can match on (a `thiserror` enum)"
            )
        })
        .collect();
    let in_workspace = |entry: &str| {
        packages
            .iter()
            .any(|dir| dir.is_empty() || entry.starts_with(&format!("{dir}/")))
    };
    for entry in pending.iter().filter(|entry| in_workspace(entry)) {
        if !found.iter().any(|name| name == entry) {
            violations.push(format!(
                "{entry} is listed in PENDING (xtask/src/typed_errors.rs) but no public function \
                 of that name returns `Result<_, String>` any more: remove the entry"
            ));
        }
    }
    violations
}

/// Rule 7 over the workspace at `root`.
pub fn check(root: &Path, metadata: &Metadata) -> Result<Vec<String>> {
    let sources = crate::file_length::production_files(root, metadata)?;
    let mut found = Vec::new();
    let mut violations = Vec::new();
    for (path, _) in &sources.files {
        let tooling = path.starts_with("xtask/") || path.starts_with("tests/");
        if tooling || path.ends_with("src/main.rs") || path.contains("/src/bin/") {
            continue;
        }
        let text = fs::read_to_string(root.join(path))
            .map_err(|error| Error::from(error).context(format!("reading {path}")))?;
        match string_errors(path, &text) {
            Ok(names) => found.extend(names),
            Err(parse_error) => violations.push(parse_error),
        }
    }
    violations.extend(check_found(&found, PENDING, &sources.packages));
    Ok(violations)
}

/// Collects the public functions returning `Result<_, String>`.
struct Finder<'a> {
    file: &'a str,
    found: Vec<String>,
}

impl<'ast> Visit<'ast> for Finder<'_> {
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if !is_test_only(&item.attrs) {
            visit::visit_item_mod(self, item);
        }
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if is_public(&item.vis) && returns_string_error(&item.sig.output) {
            self.found
                .push(format!("{}::{}", self.file, item.sig.ident));
        }
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        if item.trait_.is_some() || is_test_only(&item.attrs) {
            return;
        }
        let syn::Type::Path(self_ty) = item.self_ty.as_ref() else {
            return;
        };
        let Some(ty) = self_ty.path.segments.last() else {
            return;
        };
        for member in &item.items {
            if let syn::ImplItem::Fn(method) = member
                && is_public(&method.vis)
                && !is_test_only(&method.attrs)
                && returns_string_error(&method.sig.output)
            {
                self.found
                    .push(format!("{}::{}::{}", self.file, ty.ident, method.sig.ident));
            }
        }
    }
}

fn is_public(visibility: &syn::Visibility) -> bool {
    matches!(visibility, syn::Visibility::Public(_))
}

/// `#[cfg(test)]` on the item.
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Ident>()
                .is_ok_and(|ident| ident == "test")
    })
}

/// Whether `output` is `Result<T, String>` (any path ending in `Result`).
fn returns_string_error(output: &syn::ReturnType) -> bool {
    let syn::ReturnType::Type(_, ty) = output else {
        return false;
    };
    let syn::Type::Path(path) = ty.as_ref() else {
        return false;
    };
    let Some(last) = path.path.segments.last() else {
        return false;
    };
    let syn::PathArguments::AngleBracketed(arguments) = &last.arguments else {
        return false;
    };
    if last.ident != "Result" || arguments.args.len() != 2 {
        return false;
    }
    matches!(
        arguments.args.last(),
        Some(syn::GenericArgument::Type(syn::Type::Path(error)))
            if error.qself.is_none() && error.path.is_ident("String")
    )
}

#[cfg(test)]
#[path = "typed_errors_tests.rs"]
mod tests;
