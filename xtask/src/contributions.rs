//! Rule 3 of ARCHITECTURE.md, "contribution shape": every contribution crate
//! (`crates/contributions/<feature>`, package `agenthost-contrib-<feature>`, all but `builtin`)
//!
//! - holds **exactly one** `impl Contribution for <Type>` in its `src/**/*.rs` (files named
//!   `*_tests.rs` and items under `#[cfg(test)]` are skipped);
//! - whose `const ID: &'static str = "…"` is **unique** across the contribution crates;
//! - which declares **`const ORDER`** with an integer literal (negative allowed);
//! - and whose type is **registered exactly once** by `register::<Type>()` in
//!   `crates/contributions/builtin/src/lib.rs`, which registers nothing else.
//!
//! Sources are parsed with `syn`; [`check_sources`] is the pure part the tests feed.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use syn::visit::Visit;

use crate::error::{Error, Result};

/// The directory of the contribution crates, relative to the workspace root.
pub const CONTRIBUTIONS_DIR: &str = "crates/contributions";

/// The one registration site, relative to the workspace root.
pub const BUILTIN_LIB: &str = "crates/contributions/builtin/src/lib.rs";

/// One contribution crate's sources: `(path relative to the workspace root, text)`.
#[derive(Debug, Clone)]
pub struct ContributionCrate {
    /// The crate directory, relative to the workspace root (`crates/contributions/<feature>`).
    pub dir: String,
    /// Its non-test `src/**/*.rs` files.
    pub files: Vec<(String, String)>,
}

/// One `impl Contribution for <Type>` found in a crate.
#[derive(Debug, Clone)]
struct Impl {
    file: String,
    ty: String,
    id: Option<String>,
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr.meta.require_list().is_ok_and(|list| {
                list.tokens
                    .to_string()
                    .split_whitespace()
                    .any(|t| t == "test")
            })
    })
}

fn last_ident(path: &syn::Path) -> Option<String> {
    path.segments
        .last()
        .map(|segment| segment.ident.to_string())
}

fn type_name(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(path) => last_ident(&path.path).unwrap_or_default(),
        syn::Type::Reference(reference) => type_name(&reference.elem),
        syn::Type::Paren(inner) => type_name(&inner.elem),
        syn::Type::Group(inner) => type_name(&inner.elem),
        _ => "<non-path type>".to_string(),
    }
}

/// Collects the non-test `impl Contribution for …` items of `items`, reporting shape violations.
fn collect_impls(
    file: &str,
    items: &[syn::Item],
    impls: &mut Vec<Impl>,
    violations: &mut Vec<String>,
) {
    for item in items {
        match item {
            syn::Item::Mod(module) if !is_cfg_test(&module.attrs) => {
                if let Some((_, inner)) = &module.content {
                    collect_impls(file, inner, impls, violations);
                }
            }
            syn::Item::Impl(block) if !is_cfg_test(&block.attrs) => {
                let Some((trait_path, _)) = &block.trait_ else {
                    continue;
                };
                if last_ident(trait_path).as_deref() != Some("Contribution") {
                    continue;
                }
                let ty = type_name(&block.self_ty);
                let mut id = None;
                let mut order_ok = false;
                for member in &block.items {
                    let syn::ImplItem::Const(constant) = member else {
                        continue;
                    };
                    if constant.ident == "ID" {
                        if let syn::Expr::Lit(syn::ExprLit {
                            lit: syn::Lit::Str(text),
                            ..
                        }) = &constant.expr
                        {
                            id = Some(text.value());
                        }
                    } else if constant.ident == "ORDER" {
                        order_ok = is_int_literal(&constant.expr);
                    }
                }
                if id.is_none() {
                    violations.push(format!(
                        "{file}: `impl Contribution for {ty}` has no `const ID: &'static str` \
                         string literal: declare `const ID: &'static str = \"<camelCaseId>\";`"
                    ));
                }
                if !order_ok {
                    violations.push(format!(
                        "{file}: `impl Contribution for {ty}` does not declare `const ORDER` with \
                         an integer literal: declare `const ORDER: i32 = <n>;` explicitly \
                         (ARCHITECTURE.md rule 3)"
                    ));
                }
                impls.push(Impl {
                    file: file.to_string(),
                    ty,
                    id,
                });
            }
            _ => {}
        }
    }
}

fn is_int_literal(expr: &syn::Expr) -> bool {
    match expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(_),
            ..
        }) => true,
        syn::Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            expr,
            ..
        }) => is_int_literal(expr),
        syn::Expr::Paren(inner) => is_int_literal(&inner.expr),
        syn::Expr::Group(inner) => is_int_literal(&inner.expr),
        _ => false,
    }
}

/// Collects the type of every `register::<Type>()` call (method or path call).
#[derive(Default)]
struct Registrations {
    types: Vec<String>,
}

impl Registrations {
    fn push_types<'a>(&mut self, args: impl IntoIterator<Item = &'a syn::GenericArgument>) {
        for arg in args {
            if let syn::GenericArgument::Type(ty) = arg {
                self.types.push(type_name(ty));
            }
        }
    }
}

impl<'ast> Visit<'ast> for Registrations {
    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        if call.method == "register"
            && let Some(turbofish) = &call.turbofish
        {
            self.push_types(&turbofish.args);
        }
        syn::visit::visit_expr_method_call(self, call);
    }

    fn visit_expr_path(&mut self, path: &'ast syn::ExprPath) {
        if let Some(segment) = path.path.segments.last()
            && segment.ident == "register"
            && let syn::PathArguments::AngleBracketed(args) = &segment.arguments
        {
            self.push_types(&args.args);
        }
        syn::visit::visit_expr_path(self, path);
    }

    fn visit_item_mod(&mut self, module: &'ast syn::ItemMod) {
        if !is_cfg_test(&module.attrs) {
            syn::visit::visit_item_mod(self, module);
        }
    }
}

/// Rule 3 over parsed inputs: the contribution crates and the text of [`BUILTIN_LIB`].
pub fn check_sources(crates: &[ContributionCrate], builtin_lib: &str) -> Vec<String> {
    let mut violations = Vec::new();
    // (type, crate dir, file) of every crate's single contribution.
    let mut contributions: Vec<(String, String)> = Vec::new();
    let mut ids: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for krate in crates {
        let mut impls = Vec::new();
        for (file, text) in &krate.files {
            match syn::parse_file(text) {
                Ok(parsed) => collect_impls(file, &parsed.items, &mut impls, &mut violations),
                Err(error) => violations.push(format!(
                    "{file}: does not parse as Rust ({error}): fix the syntax error"
                )),
            }
        }
        match impls.len() {
            1 => {}
            0 => violations.push(format!(
                "{}: contribution crate has no `impl Contribution for <Type>` in src/: each \
                 `agenthost-contrib-*` crate holds exactly one contribution (add it, or remove \
                 the crate)",
                krate.dir
            )),
            n => violations.push(format!(
                "{}: contribution crate has {n} `impl Contribution for` ({}): keep exactly one \
                 per crate, move the others to their own `agenthost-contrib-<feature>` crate",
                krate.dir,
                impls
                    .iter()
                    .map(|i| format!("`{}` in {}", i.ty, i.file))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
        for found in impls {
            if let Some(id) = &found.id {
                ids.entry(id.clone())
                    .or_default()
                    .push(format!("`{}` in {}", found.ty, found.file));
            }
            contributions.push((found.ty, found.file));
        }
    }
    for (id, owners) in &ids {
        if owners.len() > 1 {
            violations.push(format!(
                "contribution id \"{id}\" is declared by {} contributions ({}): give each a \
                 unique `const ID`",
                owners.len(),
                owners.join(", ")
            ));
        }
    }

    let file = match syn::parse_file(builtin_lib) {
        Ok(file) => file,
        Err(error) => {
            violations.push(format!(
                "{BUILTIN_LIB}: does not parse as Rust ({error}): fix the syntax error"
            ));
            return violations;
        }
    };
    let mut registrations = Registrations::default();
    registrations.visit_file(&file);
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for ty in &registrations.types {
        *counts.entry(ty.as_str()).or_default() += 1;
    }
    for (ty, file) in &contributions {
        match counts.get(ty.as_str()).copied().unwrap_or(0) {
            1 => {}
            0 => violations.push(format!(
                "{BUILTIN_LIB}: contribution `{ty}` ({file}) is not registered: add \
                 `|d| d.register::<{ty}>(),` to `BUILTINS` in its slot of the registration order"
            )),
            n => violations.push(format!(
                "{BUILTIN_LIB}: contribution `{ty}` ({file}) is registered {n} times: keep \
                 exactly one `register::<{ty}>()`"
            )),
        }
    }
    for ty in counts.keys() {
        if !contributions.iter().any(|(known, _)| known == ty) {
            violations.push(format!(
                "{BUILTIN_LIB}: registers `{ty}`, which is not the contribution of any \
                 `agenthost-contrib-*` crate: register only contribution crates' types (or add \
                 its crate under {CONTRIBUTIONS_DIR}/)"
            ));
        }
    }
    violations
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let mut entries: Vec<_> = fs::read_dir(dir)?.collect::<std::io::Result<_>>()?;
    entries.sort_by_key(fs::DirEntry::path);
    for entry in entries {
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            rust_files(&path, out)?;
        } else if path.extension().is_some_and(|ext| ext == "rs")
            && !path
                .file_stem()
                .is_some_and(|stem| stem.to_string_lossy().ends_with("_tests"))
        {
            out.push(path);
        }
    }
    Ok(())
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// Rule 3 over the workspace at `root`; passes while there is no contributions directory.
pub fn check(root: &Path) -> Result<Vec<String>> {
    let dir = root.join(CONTRIBUTIONS_DIR);
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut crate_dirs: Vec<PathBuf> = fs::read_dir(&dir)?
        .collect::<std::io::Result<Vec<_>>>()?
        .into_iter()
        .map(|entry| entry.path())
        .filter(|path| path.join("Cargo.toml").is_file() && !path.ends_with("builtin"))
        .collect();
    crate_dirs.sort();
    let mut crates = Vec::new();
    for crate_dir in crate_dirs {
        let mut paths = Vec::new();
        let src = crate_dir.join("src");
        if src.is_dir() {
            rust_files(&src, &mut paths)?;
        }
        let mut files = Vec::new();
        for path in paths {
            let text = fs::read_to_string(&path)
                .map_err(|error| Error::new(format!("{}: {error}", path.display())))?;
            files.push((relative(root, &path), text));
        }
        crates.push(ContributionCrate {
            dir: relative(root, &crate_dir),
            files,
        });
    }
    let builtin = root.join(BUILTIN_LIB);
    let builtin_lib = if builtin.is_file() {
        fs::read_to_string(&builtin)?
    } else if crates.is_empty() {
        return Ok(Vec::new());
    } else {
        return Ok(vec![format!(
            "{BUILTIN_LIB} is missing: the contribution crates must be registered there, once each"
        )]);
    };
    Ok(check_sources(&crates, &builtin_lib))
}

#[cfg(test)]
#[path = "contributions_tests.rs"]
mod tests;
