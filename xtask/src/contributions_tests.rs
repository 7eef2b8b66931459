use std::fs;

use super::{ContributionCrate, check, check_sources};

fn contribution(ty: &str, id: &str, order: &str) -> String {
    format!(
        "pub struct {ty};\n\
         impl ChatContribution for {ty} {{}}\n\
         impl Contribution for {ty} {{\n\
             const ID: &'static str = \"{id}\";\n\
             const ORDER: i32 = {order};\n\
             fn create(context: ContributionContext) -> Self {{ {ty} }}\n\
         }}\n"
    )
}

fn krate(feature: &str, lib: String) -> ContributionCrate {
    ContributionCrate {
        dir: format!("crates/contributions/{feature}"),
        files: vec![(format!("crates/contributions/{feature}/src/lib.rs"), lib)],
    }
}

fn builtin(types: &[&str]) -> String {
    let lines: String = types
        .iter()
        .map(|ty| format!("    set.push(dispatcher.register::<{ty}>()?);\n"))
        .collect();
    format!(
        "pub fn register_builtin_contributions(dispatcher: &Dispatcher) -> Result<Set, Error> {{\n\
         let mut set = RegistrationSet::new();\n{lines}    Ok(set)\n}}\n"
    )
}

fn two_crates() -> Vec<ContributionCrate> {
    vec![
        krate("alpha", contribution("Alpha", "alpha", "100")),
        krate("beta", contribution("Beta", "beta", "-5")),
    ]
}

#[test]
fn a_compliant_set_of_contribution_crates_passes() {
    let mut crates = two_crates();
    // A test file and a `#[cfg(test)]` module may hold more contributions: they do not count.
    crates[0].files.push((
        "crates/contributions/alpha/src/inner.rs".into(),
        format!(
            "#[cfg(test)]\nmod tests {{\n{}}}\n",
            contribution("Helper", "alpha", "1")
        ),
    ));
    assert_eq!(
        check_sources(&crates, &builtin(&["Alpha", "Beta"])),
        Vec::<String>::new()
    );
}

#[test]
fn one_contribution_per_crate_passes_with_exactly_one() {
    let crates = vec![krate("alpha", contribution("Alpha", "alpha", "1"))];
    assert!(check_sources(&crates, &builtin(&["Alpha"])).is_empty());
}

#[test]
fn one_contribution_per_crate_fails_with_none_or_two() {
    let two = format!(
        "{}{}",
        contribution("Alpha", "alpha", "1"),
        contribution("Other", "other", "2")
    );
    let crates = vec![
        krate("alpha", two),
        krate("empty", "pub struct Nothing;\n".to_string()),
    ];
    let violations = check_sources(&crates, &builtin(&["Alpha", "Other"]));
    assert_eq!(violations.len(), 2, "{violations:#?}");
    assert!(violations[0].starts_with(
        "crates/contributions/alpha: contribution crate has 2 `impl Contribution for`"
    ));
    assert!(violations[0].contains("keep exactly one per crate"));
    assert!(violations[1].starts_with(
        "crates/contributions/empty: contribution crate has no `impl Contribution for <Type>`"
    ));
}

#[test]
fn unique_ids_pass_when_distinct() {
    assert!(check_sources(&two_crates(), &builtin(&["Alpha", "Beta"])).is_empty());
}

#[test]
fn unique_ids_fail_when_two_crates_share_one() {
    let crates = vec![
        krate("alpha", contribution("Alpha", "same", "1")),
        krate("beta", contribution("Beta", "same", "2")),
    ];
    assert_eq!(
        check_sources(&crates, &builtin(&["Alpha", "Beta"])),
        vec![
            "contribution id \"same\" is declared by 2 contributions (`Alpha` in \
             crates/contributions/alpha/src/lib.rs, `Beta` in crates/contributions/beta/src/lib.rs): \
             give each a unique `const ID`"
                .to_string()
        ]
    );
}

#[test]
fn explicit_order_passes_with_a_positive_or_negative_integer_literal() {
    let crates = vec![
        krate("alpha", contribution("Alpha", "alpha", "0")),
        krate("beta", contribution("Beta", "beta", "-100")),
    ];
    assert!(check_sources(&crates, &builtin(&["Alpha", "Beta"])).is_empty());
}

#[test]
fn explicit_order_fails_when_missing_or_not_a_literal() {
    let missing = "pub struct Alpha;\n\
                   impl Contribution for Alpha { const ID: &'static str = \"alpha\"; }\n"
        .to_string();
    let crates = vec![
        krate("alpha", missing),
        krate("beta", contribution("Beta", "beta", "BASE + 1")),
    ];
    let violations = check_sources(&crates, &builtin(&["Alpha", "Beta"]));
    assert_eq!(violations.len(), 2, "{violations:#?}");
    assert!(violations[0].starts_with(
        "crates/contributions/alpha/src/lib.rs: `impl Contribution for Alpha` does not declare `const ORDER`"
    ));
    assert!(violations[1].starts_with(
        "crates/contributions/beta/src/lib.rs: `impl Contribution for Beta` does not declare `const ORDER`"
    ));
}

#[test]
fn registration_passes_when_each_type_is_registered_once() {
    assert!(check_sources(&two_crates(), &builtin(&["Beta", "Alpha"])).is_empty());
}

#[test]
fn registration_fails_when_missing_repeated_or_foreign() {
    let violations = check_sources(&two_crates(), &builtin(&["Alpha", "Alpha", "Stranger"]));
    assert_eq!(
        violations,
        vec![
            "crates/contributions/builtin/src/lib.rs: contribution `Alpha` \
             (crates/contributions/alpha/src/lib.rs) is registered 2 times: keep exactly one \
             `register::<Alpha>()`"
                .to_string(),
            "crates/contributions/builtin/src/lib.rs: contribution `Beta` \
             (crates/contributions/beta/src/lib.rs) is not registered: add \
             `|d| d.register::<Beta>(),` to `BUILTINS` in its slot of the registration order"
                .to_string(),
            "crates/contributions/builtin/src/lib.rs: registers `Stranger`, which is not the \
             contribution of any `agenthost-contrib-*` crate: register only contribution crates' \
             types (or add its crate under crates/contributions/)"
                .to_string(),
        ]
    );
}

#[test]
fn the_workspace_check_reads_crates_and_skips_test_files_and_builtin() {
    let root = std::env::temp_dir().join(format!("xtask-contributions-{}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    for feature in ["alpha", "builtin"] {
        fs::create_dir_all(root.join(format!("crates/contributions/{feature}/src/nested")))
            .unwrap();
        fs::write(
            root.join(format!("crates/contributions/{feature}/Cargo.toml")),
            "",
        )
        .unwrap();
    }
    let alpha = root.join("crates/contributions/alpha/src");
    fs::write(alpha.join("lib.rs"), "mod nested;\n").unwrap();
    fs::write(
        alpha.join("nested/imp.rs"),
        contribution("Alpha", "alpha", "3"),
    )
    .unwrap();
    fs::write(
        alpha.join("lib_tests.rs"),
        contribution("Fake", "fake", "1"),
    )
    .unwrap();
    let builtin_lib = root.join("crates/contributions/builtin/src/lib.rs");
    fs::write(&builtin_lib, builtin(&["Alpha"])).unwrap();

    let clean = check(&root).unwrap();
    fs::write(&builtin_lib, builtin(&[])).unwrap();
    let unregistered = check(&root).unwrap();
    fs::remove_dir_all(&root).unwrap();

    assert_eq!(clean, Vec::<String>::new());
    assert_eq!(unregistered.len(), 1, "{unregistered:#?}");
    assert!(unregistered[0].contains(
        "contribution `Alpha` (crates/contributions/alpha/src/nested/imp.rs) is not registered"
    ));
}

#[test]
fn the_current_workspace_complies() {
    let violations = check(&crate::project_root()).unwrap();
    assert_eq!(violations, Vec::<String>::new());
}
