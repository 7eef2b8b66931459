use std::sync::Arc;

use agenthost_dispatcher::{ServiceRegistry, render_order};
use agenthost_services::fakes::{
    FakeClientActionIntake, FakeConfiguration, FakeHostState, FakeLocalCommands,
    FakeProviderLocator, FakeServerDispatch, FakeSessionData, FakeSubscriptionTracker,
    FakeTelemetry, FakeTitleController,
};
use agenthost_services::fakes::{FakeToolCallTracker, FakeTurnTracker};
use agenthost_services::{
    ClientActionIntake, Configuration, HostState, LocalCommands, ProviderLocator, ServerDispatch,
    SessionDataStore, SubscriptionTracker, TelemetryReporter, TitleController,
};
use agenthost_services::{ToolCallTracker, TurnTracker};

use super::*;

/// A registry holding every service the built-in contributions need, as fakes.
fn services() -> ServiceRegistry {
    let mut services = ServiceRegistry::new();
    services
        .insert::<dyn HostState>(Arc::new(FakeHostState::default()))
        .insert::<dyn ServerDispatch>(Arc::new(FakeServerDispatch::default()))
        .insert::<dyn LocalCommands>(Arc::new(FakeLocalCommands::default()))
        .insert::<dyn TitleController>(Arc::new(FakeTitleController::default()))
        .insert::<dyn TelemetryReporter>(Arc::new(FakeTelemetry::default()))
        .insert::<dyn SessionDataStore>(Arc::new(FakeSessionData::default()))
        .insert::<dyn ProviderLocator>(Arc::new(FakeProviderLocator::default()))
        .insert::<dyn agenthost_services::FileService>(Arc::new(
            agenthost_services::fakes::FakeFileService::default(),
        ))
        .insert::<dyn agenthost_services::GitState>(Arc::new(
            agenthost_services::fakes::FakeGitState::default(),
        ))
        .insert::<dyn Configuration>(Arc::new(FakeConfiguration::default()))
        .insert::<dyn SubscriptionTracker>(Arc::new(FakeSubscriptionTracker::default()))
        .insert::<dyn ClientActionIntake>(Arc::new(FakeClientActionIntake::default()))
        .insert::<dyn agenthost_services::CheckpointService>(Arc::new(
            agenthost_services::fakes::FakeCheckpoints::default(),
        ))
        .insert::<dyn agenthost_services::ChangesetService>(Arc::new(
            agenthost_services::fakes::FakeChangesets::default(),
        ))
        .insert::<dyn agenthost_services::WorktreeIsolation>(Arc::new(
            agenthost_services::fakes::FakeWorktrees::default(),
        ));
    services
        .insert::<dyn agenthost_services::TurnStopper>(Arc::new(
            agenthost_services::turn_stop_queue().0,
        ))
        .insert::<dyn agenthost_services::Notifier>(Arc::new(NoNotifier))
        .insert::<dyn TurnTracker>(Arc::new(FakeTurnTracker::default()))
        .insert::<dyn ToolCallTracker>(Arc::new(FakeToolCallTracker::default()))
        .insert::<dyn agenthost_services::AuditLog>(Arc::new(
            agenthost_services::fakes::FakeAuditLog::default(),
        ));
    services
}

#[test]
fn the_builtin_order_per_hook() {
    let dispatcher = Dispatcher::new(services());
    let set = register_builtin_contributions(&dispatcher).unwrap();
    assert_eq!(
        set.ids().collect::<Vec<_>>(),
        [
            "localCommand",
            "turnAdmission",
            "turnDelegation",
            "persistedTurnUsage",
            "worktreeAnnouncement",
            "checkpointAndChangeset",
            "queueDrain",
            "sessionInputNeeded",
            "githubReferences",
            "sessionTitle",
            "markUnread",
            "chatDraft",
            "chatConfig",
            "markdownPlanRichLinks",
            "artifactTools",
            "chatSurface",
            "sideChat",
            "sessionFlags",
            "unattendedPolicy",
            "clientDeparture",
            "interruptedTurn",
            "auditLog",
            "remoteSessionOrigin",
            "sessionModes",
            "turnCost",
            "sessionLimits",
            "notifications",
            "chatCatalog"
        ]
    );
    insta::assert_snapshot!(render_order(&dispatcher));
}

#[test]
fn dropping_the_set_unregisters_every_contribution() {
    let dispatcher = Dispatcher::new(services());
    let set = register_builtin_contributions(&dispatcher).unwrap();
    assert!(dispatcher.is_registered("sessionInputNeeded"));
    assert!(dispatcher.is_registered("turnAdmission"));
    drop(set);
    assert!(!dispatcher.is_registered("sessionInputNeeded"));
    assert!(!dispatcher.is_registered("turnAdmission"));
}

#[test]
fn a_missing_service_is_an_error_naming_it_and_registers_nothing() {
    let dispatcher = Dispatcher::new(ServiceRegistry::new());
    let error = register_builtin_contributions(&dispatcher).unwrap_err();
    let message = error.to_string();
    // The first contribution in the list names the first service it misses.
    assert!(message.contains("localCommand"), "{message}");
    assert!(message.contains("LocalCommands"), "{message}");
    for id in ["localCommand", "turnAdmission", "sessionInputNeeded"] {
        assert!(!dispatcher.is_registered(id), "{id}");
    }
}

#[test]
fn registering_the_list_twice_is_refused() {
    let dispatcher = Dispatcher::new(services());
    let _set = register_builtin_contributions(&dispatcher).unwrap();
    assert_eq!(
        register_builtin_contributions(&dispatcher).unwrap_err(),
        RegistrationError::Duplicate { id: "localCommand" }
    );
}

/// The built-ins' outgoing sequence: a side chat whose source is the default
/// chat, rich-link and artifact flags on, a terminal surface, a stub rename instruction, text
/// `built-in-send-order` — every built-in registered, over real host state. The instructions
/// come as [markdownPlanRichLinks, artifactTools, chatSurface, sessionTitle]; the final text is
/// the side-chat envelope around the prompt (sideChat runs last); the origin stays user.
#[tokio::test]
async fn the_outgoing_sequence_of_the_built_ins() {
    use agenthost_dispatcher::OutgoingTurn;
    use agenthost_protocol::ahp_types::state::{ChatState, MessageKind, RootState, SessionState};
    use agenthost_services::fakes::{FakeTitleController, TitleAnswers};
    use agenthost_services::{InMemoryConfiguration, StateHostState, StateServerDispatch};
    use agenthost_state::{StateConfig, StateManager};
    use serde_json::json;

    const SESSION: &str = "ahp-session:/s";
    const DEFAULT: &str = "ahp-chat:/default";
    const SIDE: &str = "ahp-chat:/side";
    let state = Arc::new(StateManager::new(
        serde_json::from_value::<RootState>(json!({ "agents": [] })).unwrap(),
        StateConfig::default(),
    ));
    let session: SessionState = serde_json::from_value(json!({
        "provider": "scripted", "title": "S", "status": 1, "lifecycle": "ready",
        "activeClients": [], "chats": [], "defaultChat": DEFAULT
    }))
    .unwrap();
    state
        .insert_session(&SESSION.parse().unwrap(), session)
        .unwrap();
    let default: ChatState = serde_json::from_value(json!({
        "resource": DEFAULT, "title": "Default", "status": 1,
        "modifiedAt": "2026-01-01T00:00:00.000Z",
        "turns": [{ "id": "t1", "message": { "text": "fix the bug", "origin": { "kind": "user" } },
                    "responseParts": [{ "kind": "markdown", "id": "m", "content": "Fixed." }],
                    "state": "complete" }]
    }))
    .unwrap();
    state
        .insert_chat(
            &SESSION.parse().unwrap(),
            &default.resource.parse().unwrap(),
            default,
        )
        .unwrap();
    let side: ChatState = serde_json::from_value(json!({
        "resource": SIDE, "title": "Side", "status": 1, "modifiedAt": "2026-01-01T00:00:00.000Z",
        "origin": { "kind": "sideChat", "chat": DEFAULT, "turnId": "t1" },
        "_meta": { "surface": "terminal" },
        "turns": []
    }))
    .unwrap();
    state
        .insert_chat(
            &SESSION.parse().unwrap(),
            &side.resource.parse().unwrap(),
            side,
        )
        .unwrap();

    let configuration = Arc::new(InMemoryConfiguration::new());
    configuration.set_root("markdownPlanRichLinks", Some(true.into()));
    configuration.set_root("artifactTools", Some(true.into()));
    let titles = Arc::new(FakeTitleController::default());
    titles.script(|a: &mut TitleAnswers| a.rename_instruction = Some("Rename stub.".into()));
    let mut services = services();
    services
        .insert::<dyn HostState>(Arc::new(StateHostState::new(Arc::clone(&state))))
        .insert::<dyn ServerDispatch>(Arc::new(StateServerDispatch::new(Arc::clone(&state))))
        .insert::<dyn Configuration>(configuration)
        .insert::<dyn TitleController>(titles);
    let dispatcher = Dispatcher::new(services);
    let _set = register_builtin_contributions(&dispatcher).unwrap();

    let message = serde_json::from_value(json!({
        "text": "built-in-send-order", "origin": { "kind": "user" }
    }))
    .unwrap();
    let result = dispatcher
        .outgoing_turn(&OutgoingTurn {
            session: SESSION.parse().unwrap(),
            chat: SIDE.parse().unwrap(),
            message,
            turn_id: "s1".into(),
        })
        .await;

    let instructions = result.instructions.unwrap_or_default();
    let classified: Vec<&str> = instructions
        .iter()
        .map(|instruction| {
            if *instruction == agenthost_contrib_markdown_plan_rich_links::instruction(SIDE) {
                "markdownPlanRichLinks"
            } else if instruction == agenthost_contrib_artifact_tools::ARTIFACT_TOOLS_INSTRUCTION {
                "artifactTools"
            } else if instruction == agenthost_contrib_chat_surface::TERMINAL_INSTRUCTION {
                "chatSurface"
            } else if instruction == "Rename stub." {
                "sessionTitle"
            } else {
                "unknown"
            }
        })
        .collect();
    assert_eq!(
        classified,
        [
            "markdownPlanRichLinks",
            "artifactTools",
            "chatSurface",
            "sessionTitle"
        ]
    );
    let source = state.read(|h| h.chat(DEFAULT).cloned()).unwrap();
    let body = agenthost_contrib_side_chat::envelope_body(None, &source.turns, None);
    assert_eq!(
        result.message.text,
        agenthost_contrib_side_chat::build_envelope("built-in-send-order", &body)
    );
    assert_eq!(result.message.origin.kind, MessageKind::User);
}

/// A notifier that drops everything (the registry needs one).
struct NoNotifier;

impl agenthost_services::Notifier for NoNotifier {
    fn notify(&self, _notification: agenthost_services::Notification) {}
}
