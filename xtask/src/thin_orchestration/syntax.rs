//! The `syn` side of the thin-orchestration check: walking a file's items for function paths
//! and test items, and rendering types and signatures the way the allowlist spells them.

use std::collections::BTreeSet;

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use syn::punctuated::Punctuated;
use syn::visit::{self, Visit};

use super::Function;

/// Walks a file's items, recording function paths and the line ranges of test items.
pub(super) struct Collector<'a> {
    pub(super) package: &'a str,
    /// The segments between the package and a function's name.
    pub(super) scope: Vec<String>,
    pub(super) functions: Vec<Function>,
    /// Inclusive line ranges of skipped test items.
    pub(super) excluded: Vec<(usize, usize)>,
}

impl Collector<'_> {
    /// Whether the item is a test item; if so its lines, from its first attribute to `end`, are
    /// excluded from the count.
    fn skip(&mut self, attrs: &[syn::Attribute], end: proc_macro2::Span) -> bool {
        if !is_test_only(attrs) {
            return false;
        }
        if let Some(first) = attrs.first() {
            self.excluded
                .push((first.pound_token.spans[0].start().line, end.end().line));
        }
        true
    }

    fn record(&mut self, name: &syn::Ident, statements: usize) {
        let path = std::iter::once(self.package.to_owned())
            .chain(self.scope.iter().cloned())
            .chain(std::iter::once(name.to_string()))
            .collect::<Vec<_>>()
            .join("::");
        self.functions.push(Function {
            path,
            line: name.span().start().line,
            statements,
        });
    }

    /// Records the function `name` (when it has a body) and visits its body within its scope.
    fn function(
        &mut self,
        name: &syn::Ident,
        body: Option<&syn::Block>,
        visit_body: impl FnOnce(&mut Self),
    ) {
        if let Some(body) = body {
            self.record(name, body.stmts.len());
        }
        self.scope.push(name.to_string());
        visit_body(self);
        self.scope.pop();
    }

    fn scoped(&mut self, segment: String, visit_inner: impl FnOnce(&mut Self)) {
        self.scope.push(segment);
        visit_inner(self);
        self.scope.pop();
    }
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        let end = match (&item.content, &item.semi) {
            (Some((brace, _)), _) => brace.span.close(),
            (None, Some(semi)) => semi.spans[0],
            (None, None) => item.ident.span(),
        };
        if self.skip(&item.attrs, end) {
            return;
        }
        self.scoped(item.ident.to_string(), |this| {
            visit::visit_item_mod(this, item)
        });
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        if self.skip(&item.attrs, item.brace_token.span.close()) {
            return;
        }
        self.scoped(impl_scope(item), |this| visit::visit_item_impl(this, item));
    }

    fn visit_item_trait(&mut self, item: &'ast syn::ItemTrait) {
        if self.skip(&item.attrs, item.brace_token.span.close()) {
            return;
        }
        self.scoped(item.ident.to_string(), |this| {
            visit::visit_item_trait(this, item)
        });
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if self.skip(&item.attrs, item.block.brace_token.span.close()) {
            return;
        }
        self.function(&item.sig.ident, Some(&item.block), |this| {
            visit::visit_item_fn(this, item)
        });
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if self.skip(&item.attrs, item.block.brace_token.span.close()) {
            return;
        }
        self.function(&item.sig.ident, Some(&item.block), |this| {
            visit::visit_impl_item_fn(this, item);
        });
    }

    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        let end = match (&item.default, &item.semi_token) {
            (Some(block), _) => block.brace_token.span.close(),
            (None, Some(semi)) => semi.spans[0],
            (None, None) => item.sig.ident.span(),
        };
        if self.skip(&item.attrs, end) {
            return;
        }
        self.function(&item.sig.ident, item.default.as_ref(), |this| {
            visit::visit_trait_item_fn(this, item);
        });
    }
}

/// Whether the attributes make an item test-only: `#[cfg(test)]` (also within `all(..)`) or a
/// `#[test]` attribute (any path ending in `test`, like `#[tokio::test]`).
pub(super) fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        let path = attr.path();
        if path.is_ident("cfg") {
            attr.parse_args::<syn::Meta>()
                .is_ok_and(|meta| cfg_is_test_only(&meta))
        } else {
            path.segments
                .last()
                .is_some_and(|segment| segment.ident == "test")
        }
    })
}

/// Whether a `cfg` predicate holds only in test builds: `test`, the
/// [`TEST_SUPPORT_FEATURE`](crate::architecture::TEST_SUPPORT_FEATURE) (which only
/// dev-dependencies may enable), `all(..)` with one of them, `any(..)` of nothing else.
pub(super) fn cfg_is_test_only(meta: &syn::Meta) -> bool {
    let nested = |list: &syn::MetaList| {
        list.parse_args_with(Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated)
            .ok()
    };
    match meta {
        syn::Meta::Path(path) => path.is_ident("test"),
        syn::Meta::NameValue(pair) => {
            pair.path.is_ident("feature")
                && matches!(&pair.value, syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(name), .. })
                    if name.value() == crate::architecture::TEST_SUPPORT_FEATURE)
        }
        syn::Meta::List(list) if list.path.is_ident("all") => {
            nested(list).is_some_and(|metas| metas.iter().any(cfg_is_test_only))
        }
        syn::Meta::List(list) if list.path.is_ident("any") => nested(list)
            .is_some_and(|metas| !metas.is_empty() && metas.iter().all(cfg_is_test_only)),
        _ => false,
    }
}

/// The scope segment of an `impl` block: `Type` or `<Type as Trait<Args>>`.
pub(super) fn impl_scope(item: &syn::ItemImpl) -> String {
    let self_type = self_type_name(&item.self_ty);
    match &item.trait_ {
        None => self_type,
        Some((path, _)) => {
            let polarity = if item.modifiers.polarity.is_some() {
                "!"
            } else {
                ""
            };
            let trait_name = path
                .segments
                .last()
                .map_or_else(String::new, render_segment);
            format!("<{self_type} as {polarity}{trait_name}>")
        }
    }
}

/// A Self type: a path type is its last segment's name, without generic arguments.
pub(super) fn self_type_name(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(path) if path.qself.is_none() => path
            .path
            .segments
            .last()
            .map_or_else(String::new, |segment| segment.ident.to_string()),
        syn::Type::Reference(reference) => {
            let mutability = if reference.mutability.is_some() {
                "mut "
            } else {
                ""
            };
            format!("&{mutability}{}", self_type_name(&reference.elem))
        }
        syn::Type::Paren(paren) => self_type_name(&paren.elem),
        syn::Type::Group(group) => self_type_name(&group.elem),
        other => render_type(other),
    }
}

/// A type as written, in rustfmt's spacing; what cannot be rendered (macros, verbatim tokens,
/// complex const expressions) is `_`.
pub(super) fn render_type(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Array(array) => {
            format!(
                "[{}; {}]",
                render_type(&array.elem),
                render_expr(&array.len)
            )
        }
        syn::Type::FnPtr(function) => {
            let inputs = function
                .inputs
                .iter()
                .map(|input| render_type(&input.ty))
                .collect::<Vec<_>>()
                .join(", ");
            format!("fn({inputs}){}", render_return(&function.output))
        }
        syn::Type::Group(group) => render_type(&group.elem),
        syn::Type::ImplTrait(bounds) => format!("impl {}", render_bounds(&bounds.bounds)),
        syn::Type::Never(_) => "!".to_owned(),
        syn::Type::Paren(paren) => format!("({})", render_type(&paren.elem)),
        syn::Type::Path(path) => match &path.qself {
            None => render_path(&path.path),
            Some(qself) => {
                let segments: Vec<String> = path.path.segments.iter().map(render_segment).collect();
                let (trait_part, rest) = segments.split_at(qself.position.min(segments.len()));
                let as_trait = if trait_part.is_empty() {
                    String::new()
                } else {
                    format!(" as {}", trait_part.join("::"))
                };
                format!(
                    "<{}{as_trait}>::{}",
                    render_type(&qself.ty),
                    rest.join("::")
                )
            }
        },
        syn::Type::Ptr(pointer) => {
            let mutability = match pointer.mutability {
                syn::PointerMutability::Const(_) => "const",
                syn::PointerMutability::Mut(_) => "mut",
            };
            format!("*{mutability} {}", render_type(&pointer.elem))
        }
        syn::Type::Reference(reference) => {
            let lifetime = reference
                .lifetime
                .as_ref()
                .map_or_else(String::new, |lifetime| format!("{lifetime} "));
            let mutability = if reference.mutability.is_some() {
                "mut "
            } else {
                ""
            };
            format!("&{lifetime}{mutability}{}", render_type(&reference.elem))
        }
        syn::Type::Slice(slice) => format!("[{}]", render_type(&slice.elem)),
        syn::Type::TraitObject(object) => format!("dyn {}", render_bounds(&object.bounds)),
        syn::Type::Tuple(tuple) => {
            let elements: Vec<String> = tuple.elems.iter().map(render_type).collect();
            match elements.as_slice() {
                [single] => format!("({single},)"),
                _ => format!("({})", elements.join(", ")),
            }
        }
        _ => "_".to_owned(),
    }
}

pub(super) fn render_path(path: &syn::Path) -> String {
    let leading = if path.leading_colon.is_some() {
        "::"
    } else {
        ""
    };
    let segments: Vec<String> = path.segments.iter().map(render_segment).collect();
    format!("{leading}{}", segments.join("::"))
}

/// A path segment with its generic arguments: `From<io::Error>`, `Fn(u8) -> bool`.
pub(super) fn render_segment(segment: &syn::PathSegment) -> String {
    let ident = &segment.ident;
    match &segment.arguments {
        syn::PathArguments::None => ident.to_string(),
        syn::PathArguments::AngleBracketed(arguments) => {
            let arguments: Vec<String> = arguments.args.iter().map(render_argument).collect();
            format!("{ident}<{}>", arguments.join(", "))
        }
        syn::PathArguments::Parenthesized(arguments) => {
            let inputs: Vec<String> = arguments
                .inputs
                .iter()
                .map(|input| render_type(&input.ty))
                .collect();
            format!(
                "{ident}({}){}",
                inputs.join(", "),
                render_return(&arguments.output)
            )
        }
    }
}

pub(super) fn render_argument(argument: &syn::GenericArgument) -> String {
    match argument {
        syn::GenericArgument::Lifetime(lifetime) => lifetime.to_string(),
        syn::GenericArgument::Type(ty) => render_type(ty),
        syn::GenericArgument::Const(expr) => render_expr(expr),
        syn::GenericArgument::AssocType(assoc) => {
            format!("{} = {}", assoc.ident, render_type(&assoc.ty))
        }
        syn::GenericArgument::AssocConst(assoc) => {
            format!("{} = {}", assoc.ident, render_expr(&assoc.value))
        }
        syn::GenericArgument::Constraint(constraint) => {
            format!(
                "{}: {}",
                constraint.ident,
                render_bounds(&constraint.bounds)
            )
        }
        _ => "_".to_owned(),
    }
}

pub(super) fn render_bounds(bounds: &Punctuated<syn::TypeParamBound, syn::Token![+]>) -> String {
    bounds
        .iter()
        .map(|bound| match bound {
            syn::TypeParamBound::Trait(bound) => {
                let maybe = if bound.maybe.is_some() { "?" } else { "" };
                format!("{maybe}{}", render_path(&bound.path))
            }
            syn::TypeParamBound::Lifetime(lifetime) => lifetime.to_string(),
            _ => "_".to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" + ")
}

pub(super) fn render_return(output: &syn::ReturnType) -> String {
    match output {
        syn::ReturnType::Default => String::new(),
        syn::ReturnType::Type(_, ty) => format!(" -> {}", render_type(ty)),
    }
}

/// A const expression: an integer literal or a path; anything else is `_`.
pub(super) fn render_expr(expr: &syn::Expr) -> String {
    match expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(int),
            ..
        }) => int.base10_digits().to_owned(),
        syn::Expr::Path(path) if path.qself.is_none() => render_path(&path.path),
        _ => "_".to_owned(),
    }
}

/// Adds to `lines` every line holding a token of `tokens`, doc comments (`#[doc]` attributes)
/// left out; a multi-line token covers all its lines.
pub(super) fn code_lines(tokens: TokenStream, lines: &mut BTreeSet<usize>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut index = 0;
    while index < tokens.len() {
        if let Some(length) = doc_attribute_length(&tokens[index..]) {
            index += length;
            continue;
        }
        if let Some(token) = tokens.get(index) {
            if let TokenTree::Group(group) = token {
                lines.insert(group.span_open().start().line);
                lines.insert(group.span_close().end().line);
                code_lines(group.stream(), lines);
            } else {
                let span = token.span();
                lines.extend(span.start().line..=span.end().line);
            }
        }
        index += 1;
    }
}

/// The number of tokens of a doc attribute (`#[doc …]` or `#![doc …]`) at the start of
/// `tokens`, if there is one.
pub(super) fn doc_attribute_length(tokens: &[TokenTree]) -> Option<usize> {
    let Some(TokenTree::Punct(pound)) = tokens.first() else {
        return None;
    };
    if pound.as_char() != '#' {
        return None;
    }
    let bracket = match tokens.get(1) {
        Some(TokenTree::Punct(bang)) if bang.as_char() == '!' => 2,
        _ => 1,
    };
    let Some(TokenTree::Group(group)) = tokens.get(bracket) else {
        return None;
    };
    let is_doc = group.delimiter() == Delimiter::Bracket
        && matches!(group.stream().into_iter().next(), Some(TokenTree::Ident(ident)) if ident == "doc");
    is_doc.then_some(bracket + 1)
}
