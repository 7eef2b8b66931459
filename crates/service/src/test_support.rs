//! An in-memory host for tests of this crate and the crates above it (enable the
//! `test-support` feature in `[dev-dependencies]`; the architecture lint refuses it in a normal
//! dependency).
#![cfg(any(test, feature = "test-support"))]

use std::path::Path;
use std::sync::Arc;

use agenthost_dispatcher::{Dispatcher, LaunchKind, RegistrationSet, ServiceRegistry};
use agenthost_protocol::commands::CreateSessionParams;
use agenthost_side_effects::{Orchestrator, OrchestratorConfig};
use agenthost_state::StateManager;
use agenthost_store::Store;
use serde_json::json;

use crate::{
    AgentService, DEFAULT_SHUTDOWN_WRITE_TIMEOUT, HostParts, ServiceConfig, SessionService,
    root_state, state_for,
};

/// A host over an in-memory store serving `root`, advertising one agent (`scripted`) with no
/// provider behind it and no contributions: its service, state manager and session service.
///
/// # Panics
///
/// When the in-memory store or the orchestrator cannot be made (a bug, not an input).
#[allow(clippy::expect_used)]
pub fn in_memory_host(root: &Path) -> (Arc<AgentService>, Arc<StateManager>, Arc<SessionService>) {
    let store = Store::open_in_memory().expect("an in-memory store");
    let agents = vec![
        serde_json::from_value(json!({
            "provider": "scripted", "displayName": "S", "description": "",
            "models": [{ "id": "m", "provider": "scripted", "name": "M" }]
        }))
        .expect("a valid agent"),
    ];
    let state = state_for(&store, root_state(agents)).expect("the host state");
    let dispatcher = Dispatcher::new(ServiceRegistry::new());
    let config = ServiceConfig {
        roots: vec![root.to_path_buf()],
        ..ServiceConfig::default()
    };
    let sessions = SessionService::new(
        Arc::clone(&state),
        dispatcher.clone(),
        store.clone(),
        config,
    )
    .expect("the session service");
    let sessions = Arc::new(sessions);
    let orchestrator = Orchestrator::start(
        Arc::clone(&state),
        dispatcher,
        Vec::new(),
        store,
        OrchestratorConfig::default(),
    )
    .expect("the orchestrator");
    let host = AgentService::new(HostParts {
        state: Arc::clone(&state),
        sessions: Arc::clone(&sessions),
        orchestrator,
        launch_kind: LaunchKind::Serve,
        contributions: RegistrationSet::new(),
        audit: None,
        subscriptions: None,
        shutdown_write_timeout: DEFAULT_SHUTDOWN_WRITE_TIMEOUT,
    });
    (host, state, sessions)
}

/// Creates the session `uri` as client `c`.
///
/// # Panics
///
/// When the session cannot be created.
#[allow(clippy::expect_used)]
pub async fn create_session(service: &SessionService, uri: &str) {
    let params: CreateSessionParams =
        serde_json::from_value(json!({ "channel": uri })).expect("createSession params");
    service
        .create_session(params, "c")
        .await
        .expect("the session is created");
}
