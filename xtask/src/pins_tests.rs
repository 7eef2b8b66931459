use std::fs;
use std::path::{Path, PathBuf};

use super::{
    CHAT_CONTRIBUTION_HOOKS, CONTRIBUTION_CONTEXT_FIELDS, HOST_BRIDGE_METHODS, check,
    check_contract,
};
use crate::metadata::Metadata;

/// The pinned `ChatContribution`: default bodies, generics, lifetimes, an associated type and
/// a macro member, none of which count; only the seven `fn`s do.
const CONTRIBUTION_RS: &str = r#"
//! The contribution contract.
use crate::payload::*;

/// The seven hooks.
pub trait ChatContribution: Send + Sync + 'static {
    /// Not a method: does not count.
    type Error: std::error::Error;
    /// Not a method either.
    const NAME: &'static str = "x";

    fn on_incoming_request(&self, request: &IncomingRequest<'_>) -> Disposition {
        Disposition::Accept
    }
    fn on_turn_end<'a>(&'a self, end: &'a TurnEnd) -> HookFuture<'a, ()> {
        Box::pin(async {})
    }
    fn on_did_apply_client_action(&self, action: &AppliedClientAction);
    fn on_did_dispatch_action<A: AsRef<str>>(&self, action: A) where A: Send {}
    async fn on_outgoing_turn(&self, turn: &mut OutgoingTurn) -> HookResult<OutgoingTurnResult> {
        Ok(OutgoingTurnResult::default())
    }
    fn on_hydrate_turns(&self, turns: Vec<Turn>) -> HookResult<Vec<Turn>> { Ok(turns) }
    fn on_hydrate_chat(&self, chat: RestoredChat) -> HookResult<RestoredChat> { Ok(chat) }
    some_macro!();
}

/// Another trait in the same file is not pinned.
pub trait Contribution: ChatContribution {
    fn create(context: ContributionContext) -> Self;
}
"#;

const CONTEXT_RS: &str = r"
/// Identity plus mementos.
#[derive(Debug, Clone)]
pub struct ContributionContext {
    /// The contribution's id.
    pub id: &'static str,
    pub(crate) mementos: Arc<Mementos>,
}

impl ContributionContext {
    pub fn services(&self) {}
}
";

const HOST_RS: &str = r"
pub trait HostBridge: Send + Sync {
    fn launch_kind(&self) -> LaunchKind;
    fn send_turn_message<'a>(&'a self, options: SendTurnMessageOptions) -> BridgeFuture<'a>;
}
";

const PIN_NOTE: &str = "the contract is pinned in xtask/src/pins.rs — change the pin in the \
                        same commit if this is deliberate";

#[test]
fn the_pins_have_the_sizes_of_the_architecture() {
    assert_eq!(CHAT_CONTRIBUTION_HOOKS.len(), 7);
    assert_eq!(CONTRIBUTION_CONTEXT_FIELDS.len(), 2);
    assert_eq!(HOST_BRIDGE_METHODS.len(), 2);
}

#[test]
fn the_pinned_contract_passes() {
    assert_eq!(
        check_contract(CONTRIBUTION_RS, CONTEXT_RS, HOST_RS),
        Vec::<String>::new()
    );
}

#[test]
fn an_extra_hook_method_fails_naming_it() {
    let contribution = CONTRIBUTION_RS.replace(
        "    some_macro!();",
        "    fn on_agent_signal(&self) {}\n    some_macro!();",
    );
    assert_eq!(
        check_contract(&contribution, CONTEXT_RS, HOST_RS),
        vec![format!(
            "ChatContribution has an unpinned method `on_agent_signal` \
             (crates/dispatcher/src/contribution.rs); {PIN_NOTE}"
        )]
    );
}

#[test]
fn a_missing_hook_fails_naming_it() {
    let contribution = CONTRIBUTION_RS.replace(
        "fn on_turn_end<'a>(&'a self, end: &'a TurnEnd) -> HookFuture<'a, ()> {\n        \
         Box::pin(async {})\n    }",
        "",
    );
    assert_ne!(contribution, CONTRIBUTION_RS);
    assert_eq!(
        check_contract(&contribution, CONTEXT_RS, HOST_RS),
        vec![format!(
            "ChatContribution is missing pinned method `on_turn_end` \
             (crates/dispatcher/src/contribution.rs); {PIN_NOTE}"
        )]
    );
}

#[test]
fn a_renamed_hook_fails_as_unpinned_and_missing() {
    let contribution = CONTRIBUTION_RS.replace("fn on_hydrate_chat(", "fn on_restore_chat(");
    assert_eq!(
        check_contract(&contribution, CONTEXT_RS, HOST_RS),
        vec![
            format!(
                "ChatContribution has an unpinned method `on_restore_chat` \
                 (crates/dispatcher/src/contribution.rs); {PIN_NOTE}"
            ),
            format!(
                "ChatContribution is missing pinned method `on_hydrate_chat` \
                 (crates/dispatcher/src/contribution.rs); {PIN_NOTE}"
            ),
        ]
    );
}

#[test]
fn an_extra_context_field_fails_naming_it() {
    let context = CONTEXT_RS.replace(
        "    pub(crate) mementos: Arc<Mementos>,",
        "    pub(crate) mementos: Arc<Mementos>,\n    pub services: ServiceRegistry,",
    );
    assert_eq!(
        check_contract(CONTRIBUTION_RS, &context, HOST_RS),
        vec![format!(
            "ContributionContext has an unpinned field `services` \
             (crates/dispatcher/src/context.rs); {PIN_NOTE}"
        )]
    );
}

#[test]
fn a_tuple_context_fails() {
    let context = "pub struct ContributionContext(&'static str, Mementos);";
    assert_eq!(
        check_contract(CONTRIBUTION_RS, context, HOST_RS),
        vec![
            "ContributionContext has unnamed (tuple) fields (crates/dispatcher/src/context.rs); \
             the contract pinned in xtask/src/pins.rs gives it the named fields `id`, `mementos`"
                .to_owned()
        ]
    );
}

#[test]
fn a_third_host_bridge_member_fails() {
    let host = HOST_RS.replace(
        "    fn launch_kind(&self) -> LaunchKind;",
        "    fn launch_kind(&self) -> LaunchKind;\n    fn services(&self) -> &ServiceRegistry \
         { todo!() }",
    );
    assert_eq!(
        check_contract(CONTRIBUTION_RS, CONTEXT_RS, &host),
        vec![format!(
            "HostBridge has an unpinned method `services` (crates/dispatcher/src/host.rs); \
             {PIN_NOTE}"
        )]
    );
}

#[test]
fn a_missing_trait_fails() {
    // The name alone is not enough: a struct `ChatContribution` is not the trait.
    let contribution = "pub struct ChatContribution;\npub trait Contribution {}\n";
    assert_eq!(
        check_contract(contribution, CONTEXT_RS, HOST_RS),
        vec![
            "crates/dispatcher/src/contribution.rs defines no trait `ChatContribution` at its \
             top level; the contract pinned in xtask/src/pins.rs puts it there with methods \
             `on_incoming_request`, `on_turn_end`, `on_did_apply_client_action`, \
             `on_did_dispatch_action`, `on_outgoing_turn`, `on_hydrate_turns`, `on_hydrate_chat`"
                .to_owned()
        ]
    );
}

#[test]
fn a_parse_error_names_the_file_and_position() {
    let host = "pub trait HostBridge {\n    fn launch_kind(&self) -> ;\n}\n";
    let violations = check_contract(CONTRIBUTION_RS, CONTEXT_RS, host);
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(
        violations[0].starts_with(
            "cannot parse crates/dispatcher/src/host.rs:2:30 for the contract check: "
        ),
        "{violations:?}"
    );
}

/// A fresh, empty directory for one test.
fn scratch_directory(test: &str) -> PathBuf {
    let directory = std::env::temp_dir().join(format!("xtask-{test}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&directory);
    fs::create_dir_all(&directory).unwrap();
    directory
}

fn write(root: &Path, relative: &str, contents: &str) {
    let path = root.join(relative);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, contents).unwrap();
}

fn metadata_without_the_dispatcher() -> Metadata {
    Metadata::parse(
        r#"{"packages": [{"name": "agenthost-protocol", "id": "p"}], "workspace_members": ["p"]}"#,
    )
    .unwrap()
}

#[test]
fn the_check_is_skipped_until_the_dispatcher_exists() {
    let root = scratch_directory("pins-no-dispatcher");
    let violations = check(&root, &metadata_without_the_dispatcher()).unwrap();
    fs::remove_dir_all(&root).unwrap();
    assert_eq!(violations, Vec::<String>::new());
}

#[test]
fn missing_contract_files_fail_once_the_dispatcher_exists() {
    let root = scratch_directory("pins-missing-files");
    write(&root, "crates/dispatcher/Cargo.toml", "");
    write(
        &root,
        "crates/dispatcher/src/contribution.rs",
        CONTRIBUTION_RS,
    );
    let violations = check(&root, &metadata_without_the_dispatcher()).unwrap();
    fs::remove_dir_all(&root).unwrap();
    assert_eq!(
        violations,
        vec![
            "crates/dispatcher/src/context.rs does not exist; the contract pinned in \
             xtask/src/pins.rs defines struct `ContributionContext` there with fields `id`, \
             `mementos`"
                .to_owned(),
            "crates/dispatcher/src/host.rs does not exist; the contract pinned in \
             xtask/src/pins.rs defines trait `HostBridge` there with methods `launch_kind`, \
             `send_turn_message`"
                .to_owned(),
        ]
    );
}

#[test]
fn the_package_in_the_workspace_activates_the_check_too() {
    let root = scratch_directory("pins-package-only");
    let metadata = Metadata::parse(
        r#"{"packages": [{"name": "agenthost-dispatcher", "id": "d"}], "workspace_members": ["d"]}"#,
    )
    .unwrap();
    let violations = check(&root, &metadata).unwrap();
    fs::remove_dir_all(&root).unwrap();
    assert_eq!(violations.len(), 3, "{violations:?}");
}

#[test]
fn the_contract_files_on_disk_are_checked() {
    let root = scratch_directory("pins-on-disk");
    write(&root, "crates/dispatcher/Cargo.toml", "");
    write(
        &root,
        "crates/dispatcher/src/contribution.rs",
        CONTRIBUTION_RS,
    );
    write(&root, "crates/dispatcher/src/context.rs", CONTEXT_RS);
    write(
        &root,
        "crates/dispatcher/src/host.rs",
        &HOST_RS.replace("fn launch_kind(", "fn kind("),
    );
    let violations = check(&root, &metadata_without_the_dispatcher()).unwrap();
    fs::remove_dir_all(&root).unwrap();
    assert_eq!(
        violations,
        vec![
            format!(
                "HostBridge has an unpinned method `kind` (crates/dispatcher/src/host.rs); \
                 {PIN_NOTE}"
            ),
            format!(
                "HostBridge is missing pinned method `launch_kind` \
                 (crates/dispatcher/src/host.rs); {PIN_NOTE}"
            ),
        ]
    );
}
