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
        .insert::<dyn Configuration>(Arc::new(FakeConfiguration::default()))
        .insert::<dyn SubscriptionTracker>(Arc::new(FakeSubscriptionTracker::default()))
        .insert::<dyn ClientActionIntake>(Arc::new(FakeClientActionIntake::default()));
    services
        .insert::<dyn TurnTracker>(Arc::new(FakeTurnTracker::default()))
        .insert::<dyn ToolCallTracker>(Arc::new(FakeToolCallTracker::default()));
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
            "queueDrain",
            "sessionInputNeeded",
            "sessionTitle",
            "markUnread",
            "chatDraft",
            "chatConfig",
            "sideChat",
            "sessionFlags",
            "unattendedPolicy"
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
