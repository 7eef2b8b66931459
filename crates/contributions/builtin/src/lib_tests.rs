use std::sync::Arc;

use agenthost_dispatcher::{ServiceRegistry, render_order};
use agenthost_services::fakes::{
    FakeHostState, FakeLocalCommands, FakeServerDispatch, FakeSessionData, FakeTelemetry,
    FakeTitleController,
};
use agenthost_services::{
    HostState, LocalCommands, ServerDispatch, SessionDataStore, TelemetryReporter, TitleController,
};

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
        .insert::<dyn SessionDataStore>(Arc::new(FakeSessionData::default()));
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
            "sessionInputNeeded",
            "markUnread",
            "chatDraft",
            "chatConfig",
            "sessionFlags"
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
