use std::fs;

use super::{
    Allowlist, CRATES, CrateSources, SourceFile, check, check_budget_rise, check_crates,
    check_with, module_path, parse_allowlist_text, scan_file,
};
use crate::metadata::Metadata;
use crate::orchestration::{ALLOWLIST, LINE_BUDGETS, Reason};

const SERVICE: &str = "agenthost-service";

fn service(files: &[(&str, &str)]) -> CrateSources {
    CrateSources {
        package: SERVICE.to_owned(),
        dir: "crates/service".to_owned(),
        files: files
            .iter()
            .map(|(path, text)| SourceFile {
                path: (*path).to_owned(),
                text: (*text).to_owned(),
            })
            .collect(),
    }
}

/// The function paths of one file of `agenthost-service`.
fn paths(path: &str, text: &str) -> Vec<String> {
    scan_file(SERVICE, path, path, text)
        .unwrap()
        .functions
        .into_iter()
        .map(|function| function.path)
        .collect()
}

const BUDGETS: &[(&str, usize)] = &[(SERVICE, 1000)];

const SESSION_RS: &str = r"
//! Sessions.

/// The session service.
pub struct SessionService;

impl SessionService {
    /// Creates a session.
    pub fn create_session(&self) {
        self.helper();
    }

    fn helper(&self) {}
}
";

#[test]
fn an_unlisted_function_fails_naming_it() {
    let allowlist = Allowlist {
        entries: &[(
            "agenthost-service::session::SessionService::create_session",
            Reason::Protocol,
        )],
        budgets: BUDGETS,
    };
    assert_eq!(
        check_crates(&[service(&[("src/session.rs", SESSION_RS)])], &allowlist),
        vec![
            "`agenthost-service::session::SessionService::helper` \
             (crates/service/src/session.rs:13) is not in the orchestration allowlist \
             (xtask/src/orchestration.rs): add it with one reason from routing, invariant, \
             provider, dispatch-call-site, use-case, protocol, wiring — or move the behaviour into a contribution"
                .to_owned()
        ]
    );
}

#[test]
fn listed_functions_pass() {
    let allowlist = Allowlist {
        entries: &[
            (
                "agenthost-service::session::SessionService::create_session",
                Reason::Protocol,
            ),
            (
                "agenthost-service::session::SessionService::helper",
                Reason::DispatchCallSite,
            ),
        ],
        budgets: BUDGETS,
    };
    assert_eq!(
        check_crates(&[service(&[("src/session.rs", SESSION_RS)])], &allowlist),
        Vec::<String>::new()
    );
}

#[test]
fn a_stale_entry_fails() {
    let allowlist = Allowlist {
        entries: &[
            (
                "agenthost-service::session::SessionService::create_session",
                Reason::Protocol,
            ),
            (
                "agenthost-service::session::SessionService::helper",
                Reason::Routing,
            ),
            (
                "agenthost-service::session::SessionService::restore_session",
                Reason::Protocol,
            ),
        ],
        budgets: BUDGETS,
    };
    assert_eq!(
        check_crates(&[service(&[("src/session.rs", SESSION_RS)])], &allowlist),
        vec![
            "allowlist entry `agenthost-service::session::SessionService::restore_session` \
             (protocol) is stale: agenthost-service has no such function; remove it from \
             xtask/src/orchestration.rs (or fix its path)"
                .to_owned()
        ]
    );
}

#[test]
fn entries_of_an_absent_crate_are_not_judged() {
    let allowlist = Allowlist {
        entries: &[("agenthost-side-effects::route", Reason::Routing)],
        budgets: &[],
    };
    assert_eq!(check_crates(&[], &allowlist), Vec::<String>::new());
}

#[test]
fn duplicate_entries_and_entries_of_other_crates_fail() {
    let allowlist = Allowlist {
        entries: &[
            (
                "agenthost-service::session::SessionService::create_session",
                Reason::Protocol,
            ),
            (
                "agenthost-service::session::SessionService::helper",
                Reason::Routing,
            ),
            (
                "agenthost-service::session::SessionService::create_session",
                Reason::Invariant,
            ),
            ("agenthost-dispatcher::Registry::new", Reason::Protocol),
            ("agenthost-service-extra::x", Reason::Protocol),
        ],
        budgets: BUDGETS,
    };
    assert_eq!(
        check_crates(&[service(&[("src/session.rs", SESSION_RS)])], &allowlist),
        vec![
            "allowlist entry `agenthost-service::session::SessionService::create_session` is \
             listed 2 times in xtask/src/orchestration.rs: keep one entry, with one reason"
                .to_owned(),
            "allowlist entry `agenthost-dispatcher::Registry::new` names no orchestration crate: \
             a path starts with agenthost-side-effects or agenthost-service, then `::` (fix or \
             remove it in xtask/src/orchestration.rs)"
                .to_owned(),
            "allowlist entry `agenthost-service-extra::x` names no orchestration crate: a path \
             starts with agenthost-side-effects or agenthost-service, then `::` (fix or remove \
             it in xtask/src/orchestration.rs)"
                .to_owned(),
        ]
    );
}

#[test]
fn file_paths_give_module_paths() {
    assert_eq!(module_path("src/lib.rs"), Vec::<String>::new());
    assert_eq!(module_path("src/main.rs"), Vec::<String>::new());
    assert_eq!(module_path("src/session.rs"), ["session"]);
    assert_eq!(module_path("src/session/mod.rs"), ["session"]);
    assert_eq!(
        module_path("src/session/registry.rs"),
        ["session", "registry"]
    );
    assert_eq!(module_path("src/session/lib.rs"), ["session", "lib"]);
}

#[test]
fn trait_impl_and_nested_module_paths_follow_the_scheme() {
    let source = r"
        pub fn start() {
            fn validate() {}
        }

        pub struct SessionService<S>(S);

        impl<S: Store> SessionService<S> {
            pub async fn create_session(&self) {}
            pub(crate) const fn id() -> u8 { 0 }
        }

        impl<S> Drop for SessionService<S> {
            fn drop(&mut self) {}
        }

        impl From<std::io::Error> for Error {
            fn from(error: std::io::Error) -> Self { Self }
        }

        impl<'a> fmt::Display for &'a mut Wrapper<'a> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { Ok(()) }
        }

        impl<F: Fn(u8) -> bool> Extend<(u8, [u8; 4])> for Sink<F> {
            fn extend<I>(&mut self, items: I) {}
        }

        pub trait Router {
            fn route(&self);
            fn fallback(&self) {}
        }

        mod registry {
            pub mod eviction {
                pub struct Registry;
                impl Registry {
                    pub fn evict(&self) {
                        struct Local;
                        impl Local { fn step() {} }
                    }
                }
            }
        }

        extern {
            fn foreign();
        }
    ";
    assert_eq!(
        paths("src/session/mod.rs", source),
        [
            "agenthost-service::session::start",
            "agenthost-service::session::start::validate",
            "agenthost-service::session::SessionService::create_session",
            "agenthost-service::session::SessionService::id",
            "agenthost-service::session::<SessionService as Drop>::drop",
            "agenthost-service::session::<Error as From<std::io::Error>>::from",
            "agenthost-service::session::<&mut Wrapper as Display>::fmt",
            "agenthost-service::session::<Sink as Extend<(u8, [u8; 4])>>::extend",
            "agenthost-service::session::Router::fallback",
            "agenthost-service::session::registry::eviction::Registry::evict",
            "agenthost-service::session::registry::eviction::Registry::evict::Local::step",
        ]
    );
    assert_eq!(
        paths("src/lib.rs", "fn run() {}"),
        ["agenthost-service::run"]
    );
}

#[test]
fn test_modules_items_and_files_are_ignored() {
    let lib_rs = r#"
        pub fn run() {}

        #[cfg(test)]
        mod tests {
            fn helper() {}
        }

        #[cfg(test)]
        #[path = "lib_tests.rs"]
        mod more_tests;

        #[cfg(all(test, feature = "slow"))]
        impl Service {
            fn fixture() {}
        }

        #[cfg(any(test, feature = "debug"))]
        fn debug_dump() {}

        #[cfg(feature = "test-support")]
        fn support() {}

        #[cfg(any(test, feature = "test-support"))]
        fn more_support() {}

        #[test]
        fn unit() {}

        #[tokio::test]
        async fn async_unit() {}
    "#;
    let files = [
        ("src/lib.rs", lib_rs),
        ("src/lib_tests.rs", "fn in_tests_file() {}"),
        ("src/tests.rs", "fn in_tests_rs() {}"),
        ("src/tests/fixtures.rs", "fn in_tests_dir() {}"),
        (
            "src/only_tests.rs",
            "#![cfg(test)]\nfn in_cfg_test_file() {}",
        ),
        (
            "src/test_support.rs",
            "#![cfg(any(test, feature = \"test-support\"))]\nfn in_test_support_file() {}",
        ),
    ];
    let allowlist = Allowlist {
        entries: &[
            ("agenthost-service::run", Reason::Protocol),
            ("agenthost-service::debug_dump", Reason::Invariant),
        ],
        budgets: BUDGETS,
    };
    assert_eq!(
        check_crates(&[service(&files)], &allowlist),
        Vec::<String>::new()
    );
}

#[test]
fn production_lines_leave_out_blank_lines_comments_and_tests() {
    let source = r#"//! Crate docs: a comment.

/// Doc comment.
#[doc = "an attribute doc"]
pub fn run() {
    // a comment
    let text = "two
lines"; // trailing comment counts as code
    /* a block
       comment */
}

#[cfg(test)]
mod tests {
    #[test]
    fn t() {}
}
"#;
    let scan = scan_file(SERVICE, "src/lib.rs", "src/lib.rs", source).unwrap();
    // `pub fn run() {`, `let text = "two`, `lines";`, `}`.
    assert_eq!(scan.lines, 4);
}

#[test]
fn a_crate_over_its_budget_fails_with_count_and_budget() {
    let allowlist = Allowlist {
        entries: &[
            (
                "agenthost-service::session::SessionService::create_session",
                Reason::Protocol,
            ),
            (
                "agenthost-service::session::SessionService::helper",
                Reason::Routing,
            ),
        ],
        budgets: &[("agenthost-side-effects", 100), (SERVICE, 6)],
    };
    assert_eq!(
        check_crates(&[service(&[("src/session.rs", SESSION_RS)])], &allowlist),
        vec![
            "agenthost-service has 7 lines of production code (non-blank, non-comment, tests \
             excluded), over its line budget of 6 in xtask/src/orchestration.rs: move behaviour \
             into a contribution, or raise the budget in the commit that adds the allowlist \
             entries"
                .to_owned()
        ]
    );
    let at_budget = Allowlist {
        budgets: &[(SERVICE, 7)],
        ..allowlist
    };
    assert_eq!(
        check_crates(&[service(&[("src/session.rs", SESSION_RS)])], &at_budget),
        Vec::<String>::new()
    );
}

#[test]
fn a_file_that_does_not_parse_fails_with_its_position_and_proves_nothing_stale() {
    let allowlist = Allowlist {
        entries: &[("agenthost-service::gone", Reason::Protocol)],
        budgets: BUDGETS,
    };
    assert_eq!(
        check_crates(
            &[service(&[("src/lib.rs", "pub fn run() {}\nfn 1() {}\n")])],
            &allowlist
        ),
        vec![
            "cannot parse crates/service/src/lib.rs:2:4 for the thin-orchestration check: \
             expected identifier"
                .to_owned()
        ]
    );
}

#[test]
fn without_the_crates_there_is_nothing_to_check() {
    assert_eq!(
        check_crates(&[], &Allowlist::WORKSPACE),
        Vec::<String>::new()
    );
    let root = std::env::temp_dir().join(format!("xtask-thin-empty-{}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    fs::create_dir_all(&root).unwrap();
    let metadata = Metadata::parse(include_str!("../tests/fixtures/passing.json")).unwrap();
    let violations = check(&root, &metadata).unwrap();
    fs::remove_dir_all(&root).unwrap();
    assert_eq!(violations, Vec::<String>::new());
}

#[test]
fn only_the_crate_that_exists_is_checked() {
    let root = std::env::temp_dir().join(format!("xtask-thin-one-{}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    fs::create_dir_all(root.join("crates/service/src")).unwrap();
    fs::write(root.join("crates/service/Cargo.toml"), "").unwrap();
    fs::write(root.join("crates/service/src/lib.rs"), "pub fn run() {}\n").unwrap();
    fs::write(
        root.join("crates/service/src/lib_tests.rs"),
        "fn test() {}\n",
    )
    .unwrap();
    // Not a crate: no Cargo.toml.
    fs::create_dir_all(root.join("crates/side-effects/src")).unwrap();
    fs::write(root.join("crates/side-effects/src/lib.rs"), "fn x() {}\n").unwrap();
    let metadata = Metadata::parse(include_str!("../tests/fixtures/passing.json")).unwrap();

    let violations = check_with(&root, &metadata, &Allowlist::EMPTY).unwrap();
    fs::remove_dir_all(&root).unwrap();

    assert_eq!(
        violations,
        vec![
            "`agenthost-service::run` (crates/service/src/lib.rs:1) is not in the orchestration \
             allowlist (xtask/src/orchestration.rs): add it with one reason from routing, \
             invariant, provider, dispatch-call-site, use-case, protocol, wiring — or move the behaviour into a \
             contribution"
                .to_owned(),
            "agenthost-service has 1 lines of production code (non-blank, non-comment, tests \
             excluded), over its line budget of 0 in xtask/src/orchestration.rs: move behaviour \
             into a contribution, or raise the budget in the commit that adds the allowlist \
             entries"
                .to_owned(),
        ]
    );
}

/// An allowlist file in the format of `src/orchestration.rs`.
fn allowlist_text(entries: &[&str], service_budget: &str) -> String {
    let entries: String = entries
        .iter()
        .map(|path| format!("    (\"{path}\", Reason::Protocol), // why\n"))
        .collect();
    format!(
        "//! Header: `(\"agenthost-service::not_an_entry\", Reason::Routing),`\n\
         #[rustfmt::skip]\n\
         pub const ALLOWLIST: &[(&str, Reason)] = &[\n\
         {entries}\
         \x20   // (\"agenthost-service::commented_out\", Reason::Routing),\n\
         ];\n\
         #[rustfmt::skip]\n\
         pub const LINE_BUDGETS: &[(&str, usize)] = &[\n\
         \x20   (\"agenthost-side-effects\", 0),\n\
         \x20   (\"agenthost-service\", {service_budget}),\n\
         ];\n"
    )
}

#[test]
fn the_allowlist_text_is_read_line_by_line() {
    let text = allowlist_text(&["agenthost-service::a", "agenthost-service::b"], "1_200");
    let parsed = parse_allowlist_text(&text);
    assert_eq!(
        parsed.entries,
        [
            ("agenthost-service::a".to_owned(), "Protocol".to_owned()),
            ("agenthost-service::b".to_owned(), "Protocol".to_owned()),
        ]
    );
    assert_eq!(
        parsed.budgets,
        [
            ("agenthost-side-effects".to_owned(), 0),
            ("agenthost-service".to_owned(), 1200),
        ]
    );
    assert_eq!(parsed.entry_count(SERVICE), 2);
    assert_eq!(parsed.entry_count("agenthost-side-effects"), 0);
}

#[test]
fn a_budget_rise_without_new_entries_fails() {
    let head = allowlist_text(&["agenthost-service::a"], "100");
    let current = allowlist_text(&["agenthost-service::b"], "150");
    assert_eq!(
        check_budget_rise(&head, &current),
        vec![
            "the line budget of agenthost-service rose from 100 to 150 without new allowlist \
             entries (1 at HEAD, 1 now): raise it only in the commit that adds the entries, \
             each with its reason"
                .to_owned()
        ]
    );
}

#[test]
fn a_budget_rise_with_new_entries_passes_and_a_fall_always_does() {
    let head = allowlist_text(&["agenthost-service::a"], "100");
    let more = allowlist_text(&["agenthost-service::a", "agenthost-service::b"], "150");
    assert_eq!(check_budget_rise(&head, &more), Vec::<String>::new());
    let lower = allowlist_text(&[], "90");
    assert_eq!(check_budget_rise(&head, &lower), Vec::<String>::new());
    assert_eq!(check_budget_rise(&head, &head), Vec::<String>::new());
    // No budget at HEAD (the file predates it): nothing to compare.
    assert_eq!(check_budget_rise("", &more), Vec::<String>::new());
}

#[test]
fn the_allowlist_file_keeps_its_greppable_format() {
    let parsed = parse_allowlist_text(include_str!("orchestration.rs"));
    let entries: Vec<(String, String)> = ALLOWLIST
        .iter()
        .map(|(path, reason)| ((*path).to_owned(), reason.variant().to_owned()))
        .collect();
    let budgets: Vec<(String, usize)> = LINE_BUDGETS
        .iter()
        .map(|(package, budget)| ((*package).to_owned(), *budget))
        .collect();
    assert_eq!(
        parsed.entries, entries,
        "one `(\"path\", Reason::X),` per line"
    );
    assert_eq!(
        parsed.budgets, budgets,
        "one `(\"package\", lines),` per line"
    );
}

#[test]
fn every_orchestration_crate_has_one_budget() {
    let mut budgeted: Vec<&str> = LINE_BUDGETS.iter().map(|(package, _)| *package).collect();
    budgeted.sort_unstable();
    let mut crates: Vec<&str> = CRATES.iter().map(|(package, _)| *package).collect();
    crates.sort_unstable();
    assert_eq!(budgeted, crates);
}

#[test]
fn reasons_have_their_architecture_names() {
    assert_eq!(
        Reason::ALL.map(Reason::name),
        [
            "routing",
            "invariant",
            "provider",
            "dispatch-call-site",
            "use-case",
            "protocol",
            "wiring"
        ]
    );
}

/// Runs git in `root` with a throwaway identity; `None` when git cannot run.
fn git(root: &std::path::Path, args: &[&str]) -> Option<()> {
    let status = std::process::Command::new("git")
        .args(["-c", "user.name=xtask", "-c", "user.email=xtask@invalid"])
        .args(["-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(root)
        .output()
        .ok()?
        .status;
    assert!(status.success(), "git {args:?} failed");
    Some(())
}

#[test]
fn the_workspace_check_compares_the_allowlist_with_head() {
    let root = std::env::temp_dir().join(format!("xtask-thin-git-{}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    fs::create_dir_all(root.join("xtask/src")).unwrap();
    let file = root.join(super::ALLOWLIST_FILE);
    let metadata = Metadata::parse(include_str!("../tests/fixtures/passing.json")).unwrap();

    // Not a repository (or no git): skipped.
    fs::write(&file, allowlist_text(&[], "5")).unwrap();
    assert_eq!(check(&root, &metadata).unwrap(), Vec::<String>::new());
    if git(&root, &["init", "--quiet"]).is_none() {
        fs::remove_dir_all(&root).unwrap();
        return;
    }
    // No HEAD yet: skipped.
    assert_eq!(check(&root, &metadata).unwrap(), Vec::<String>::new());
    fs::write(&file, allowlist_text(&[], "0")).unwrap();
    git(&root, &["add", "."]);
    git(&root, &["commit", "--quiet", "-m", "allowlist"]);
    fs::write(&file, allowlist_text(&[], "5")).unwrap();

    let violations = check(&root, &metadata).unwrap();
    fs::remove_dir_all(&root).unwrap();

    assert_eq!(
        violations,
        vec![
            "the line budget of agenthost-service rose from 0 to 5 without new allowlist \
             entries (0 at HEAD, 0 now): raise it only in the commit that adds the entries, \
             each with its reason"
                .to_owned()
        ]
    );
}

#[test]
fn a_reason_its_function_cannot_have_fails_naming_the_rule() {
    let text = r"
pub struct AgentService;
pub struct Other;
impl AgentService {
    pub fn create(&self) { self.a(); self.b(); }
}
impl Other {
    pub fn new() -> Self { let x = Self; x.a(); x }
    pub fn big(&self) { self.a(); self.b(); }
    pub fn accessor(&self) -> u8 { 1 }
    pub fn case(&self) { self.a(); }
}
";
    let allowlist = Allowlist {
        entries: &[
            (
                "agenthost-service::agent::AgentService::create",
                Reason::UseCase,
            ),
            ("agenthost-service::agent::Other::new", Reason::Wiring),
            ("agenthost-service::agent::Other::big", Reason::Wiring),
            ("agenthost-service::agent::Other::accessor", Reason::Wiring),
            ("agenthost-service::agent::Other::case", Reason::UseCase),
        ],
        budgets: BUDGETS,
    };
    let violations = check_crates(&[service(&[("src/agent.rs", text)])], &allowlist);
    assert_eq!(
        violations,
        vec![
            format!(
                "allowlist entry `agenthost-service::agent::Other::big` gives the reason wiring, \
                 which its function cannot have: {}",
                Reason::Wiring.rule()
            ),
            format!(
                "allowlist entry `agenthost-service::agent::Other::case` gives the reason \
                 use-case, which its function cannot have: {}",
                Reason::UseCase.rule()
            ),
        ]
    );
}
