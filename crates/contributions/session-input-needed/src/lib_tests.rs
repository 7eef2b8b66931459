use std::sync::{Arc, Mutex};

use agenthost_dispatcher::{Dispatcher, RegistrationError};
use agenthost_protocol::ActionOrigin;
use agenthost_protocol::ahp_types::state::{ChatState, RootState, SessionState};
use agenthost_reducers::projection::entry_id;
use agenthost_services::fakes::{FakeHostState, FakeServerDispatch, HostStateCall};
use agenthost_services::{StateHostState, StateServerDispatch};
use agenthost_state::{EnvelopeObserver, ObservedEnvelope, StateConfig, StateManager};
use serde_json::{Value, json};

use super::*;

const SESSION: &str = "ahp-session:/s1";
const CHAT: &str = "ahp-chat:/c1";
const PEER: &str = "ahp-chat:/c2";
const CLIENT: &str = "client-1";
const T0: &str = "2026-01-01T00:00:00.000Z";

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

fn action(value: Value) -> StateAction {
    from(value)
}

fn chat_state(uri: &str) -> ChatState {
    from(json!({
        "resource": uri, "title": "Chat", "status": 1, "modifiedAt": T0, "turns": []
    }))
}

fn session_state() -> SessionState {
    from(json!({
        "provider": "scripted", "title": "S", "status": 1, "lifecycle": "ready",
        "activeClients": [], "chats": []
    }))
}

fn turn_started(turn: &str) -> StateAction {
    action(json!({
        "type": "chat/turnStarted", "turnId": turn, "startedAt": T0,
        "message": { "text": "hello", "origin": { "kind": "user" } }
    }))
}

fn tool_start(turn: &str, call: &str, client: Option<&str>) -> StateAction {
    let mut value = json!({
        "type": "chat/toolCallStart", "turnId": turn, "toolCallId": call,
        "toolName": "shell", "displayName": "Shell"
    });
    if let Some(client) = client {
        value["contributor"] = json!({ "kind": "client", "clientId": client });
    }
    action(value)
}

fn tool_ready(turn: &str, call: &str) -> StateAction {
    action(json!({
        "type": "chat/toolCallReady", "turnId": turn, "toolCallId": call,
        "invocationMessage": "run it"
    }))
}

fn tool_confirmed(turn: &str, call: &str) -> StateAction {
    action(json!({
        "type": "chat/toolCallConfirmed", "turnId": turn, "toolCallId": call,
        "approved": true, "confirmed": "user-action"
    }))
}

fn turn_complete(turn: &str) -> StateAction {
    action(json!({ "type": "chat/turnComplete", "turnId": turn, "duration": 10 }))
}

fn confirmation(chat: &str, turn: &str, call: &str) -> String {
    format!("toolConfirmation:{chat}:{turn}:{call}")
}

fn execution(chat: &str, turn: &str, call: &str) -> String {
    format!("toolClientExecution:{chat}:{turn}:{call}")
}

/// `set <id>` / `remove <id>` for the inputNeeded actions among `actions`.
fn summary<'a>(actions: impl IntoIterator<Item = &'a StateAction>) -> Vec<String> {
    actions
        .into_iter()
        .filter_map(|a| match a {
            StateAction::SessionInputNeededSet(set) => {
                Some(format!("set {}", entry_id(&set.request).unwrap_or("?")))
            }
            StateAction::SessionInputNeededRemoved(removed) => {
                Some(format!("remove {}", removed.id))
            }
            _ => None,
        })
        .collect()
}

/// Forwards every envelope to the dispatcher, as the orchestrator does, and records the
/// session's actions.
struct Bridge {
    dispatcher: Dispatcher,
    session_actions: Mutex<Vec<StateAction>>,
}

impl EnvelopeObserver for Bridge {
    fn on_envelope(&self, observed: &ObservedEnvelope<'_>) {
        let envelope = observed.envelope;
        if envelope.channel == SESSION {
            self.session_actions
                .lock()
                .unwrap()
                .push(envelope.action.clone());
        }
        self.dispatcher.did_dispatch_action(&DispatchedAction {
            channel: &envelope.channel,
            session: observed.session.unwrap_or(&envelope.channel),
            action: &envelope.action,
            origin: envelope.origin.as_ref(),
            rejection_reason: envelope.rejection_reason.as_deref(),
        });
    }
}

/// A real state manager with one session of two chats and the contribution registered through
/// the dispatcher over the default services.
struct World {
    state: Arc<StateManager>,
    bridge: Arc<Bridge>,
    _registration: agenthost_dispatcher::Registration,
}

impl World {
    fn new() -> Self {
        let state = Arc::new(StateManager::new(
            from::<RootState>(json!({ "agents": [] })),
            StateConfig::default(),
        ));
        state.insert_session(SESSION, session_state()).unwrap();
        state.insert_chat(SESSION, chat_state(CHAT)).unwrap();
        state.insert_chat(SESSION, chat_state(PEER)).unwrap();
        let mut services = ServiceRegistry::new();
        services
            .insert::<dyn HostState>(Arc::new(StateHostState::new(state.clone())))
            .insert::<dyn ServerDispatch>(Arc::new(StateServerDispatch::new(state.clone())));
        let dispatcher = Dispatcher::new(services);
        let registration = dispatcher.register::<SessionInputNeeded>().unwrap();
        let bridge = Arc::new(Bridge {
            dispatcher,
            session_actions: Mutex::new(Vec::new()),
        });
        state.add_observer(bridge.clone());
        Self {
            state,
            bridge,
            _registration: registration,
        }
    }

    fn server(&self, chat: &str, actions: impl IntoIterator<Item = StateAction>) {
        for action in actions {
            self.state.dispatch_server(chat, action).unwrap();
        }
    }

    fn client(&self, chat: &str, action: StateAction) -> bool {
        let origin = ActionOrigin {
            client_id: CLIENT.into(),
            client_seq: 1,
        };
        matches!(
            self.state.dispatch_client(chat, action, origin),
            agenthost_state::ClientDispatch::Accepted(_)
        )
    }

    /// The session's inputNeeded actions since the last call.
    fn take(&self) -> Vec<String> {
        summary(&std::mem::take(
            &mut *self.bridge.session_actions.lock().unwrap(),
        ))
    }

    fn ids(&self) -> Vec<String> {
        self.state.read(|h| {
            h.session(SESSION)
                .unwrap()
                .input_needed
                .iter()
                .flatten()
                .filter_map(|e| entry_id(e).map(str::to_owned))
                .collect()
        })
    }

    /// A turn `turn` in `chat` whose tool call `call` waits for confirmation.
    fn pending(&self, chat: &str, turn: &str, call: &str, client: Option<&str>) {
        self.server(
            chat,
            [
                turn_started(turn),
                tool_start(turn, call, client),
                tool_ready(turn, call),
            ],
        );
    }
}

#[test]
fn a_pending_confirmation_adds_its_entry() {
    let world = World::new();
    world.pending(CHAT, "t1", "c1", None);
    let entry = confirmation(CHAT, "t1", "c1");
    assert_eq!(world.take(), [format!("set {entry}")]);
    assert_eq!(world.ids(), [entry]);
}

#[test]
fn confirming_removes_the_entry() {
    let world = World::new();
    world.pending(CHAT, "t1", "c1", None);
    world.take();
    assert!(world.client(CHAT, tool_confirmed("t1", "c1")));
    assert_eq!(
        world.take(),
        [format!("remove {}", confirmation(CHAT, "t1", "c1"))]
    );
    assert!(world.ids().is_empty());
}

#[test]
fn a_client_tool_trades_its_confirmation_for_the_execution_entry() {
    let world = World::new();
    world.pending(CHAT, "t1", "c1", Some(CLIENT));
    world.take();
    assert!(world.client(CHAT, tool_confirmed("t1", "c1")));
    assert_eq!(
        world.take(),
        [
            format!("remove {}", confirmation(CHAT, "t1", "c1")),
            format!("set {}", execution(CHAT, "t1", "c1")),
        ]
    );
    assert_eq!(world.ids(), [execution(CHAT, "t1", "c1")]);
}

#[test]
fn turn_end_clears_the_chats_entries() {
    let world = World::new();
    world.pending(CHAT, "t1", "c1", None);
    world.server(
        CHAT,
        [tool_start("t1", "c2", Some(CLIENT)), tool_ready("t1", "c2")],
    );
    assert_eq!(world.ids().len(), 2);
    world.take();
    world.server(CHAT, [turn_complete("t1")]);
    assert_eq!(
        world.take(),
        [
            format!("remove {}", confirmation(CHAT, "t1", "c1")),
            format!("remove {}", confirmation(CHAT, "t1", "c2")),
        ]
    );
    assert!(world.ids().is_empty());
}

#[test]
fn entries_of_two_chats_coexist_and_each_chat_only_touches_its_own() {
    let world = World::new();
    world.pending(CHAT, "t1", "c1", None);
    world.pending(PEER, "p1", "x", None);
    assert_eq!(
        world.ids(),
        [
            confirmation(CHAT, "t1", "c1"),
            confirmation(PEER, "p1", "x")
        ]
    );
    world.take();

    // Actions of the peer leave the first chat's entry alone.
    world.server(PEER, [tool_start("p1", "y", None)]);
    assert!(world.take().is_empty());
    world.server(PEER, [turn_complete("p1")]);
    assert_eq!(
        world.take(),
        [format!("remove {}", confirmation(PEER, "p1", "x"))]
    );
    assert_eq!(world.ids(), [confirmation(CHAT, "t1", "c1")]);
}

#[test]
fn a_rejected_envelope_changes_nothing() {
    let world = World::new();
    world.pending(CHAT, "t1", "c1", None);
    world.take();
    assert!(!world.client(CHAT, tool_confirmed("t1", "unknown-call")));
    assert!(world.take().is_empty());
    assert_eq!(world.ids(), [confirmation(CHAT, "t1", "c1")]);
}

#[test]
fn observing_the_same_state_again_dispatches_nothing() {
    let world = World::new();
    world.pending(CHAT, "t1", "c1", None);
    world.take();
    let ready = tool_ready("t1", "c1");
    world
        .bridge
        .dispatcher
        .did_dispatch_action(&DispatchedAction {
            channel: CHAT,
            session: SESSION,
            action: &ready,
            origin: None,
            rejection_reason: None,
        });
    assert!(world.take().is_empty());
}

// With the services' fakes: what the contribution reads and dispatches.

fn fakes() -> (
    Arc<FakeHostState>,
    Arc<FakeServerDispatch>,
    SessionInputNeeded,
) {
    let state = Arc::new(FakeHostState::default());
    let dispatch = Arc::new(FakeServerDispatch::default());
    let contribution = SessionInputNeeded::new(state.clone(), dispatch.clone());
    (state, dispatch, contribution)
}

fn observe(contribution: &SessionInputNeeded, channel: &str, action: &StateAction) {
    contribution
        .on_did_dispatch_action(&DispatchedAction {
            channel,
            session: SESSION,
            action,
            origin: None,
            rejection_reason: None,
        })
        .unwrap();
}

/// A chat in turn `t1` whose call `c1` waits for confirmation, as the fake host state holds it.
fn pending_chat(uri: &str) -> ChatState {
    let mut chat = chat_state(uri);
    chat.active_turn = Some(from(json!({
        "id": "t1", "startedAt": T0,
        "message": { "text": "hello", "origin": { "kind": "user" } },
        "responseParts": [{
            "kind": "toolCall",
            "toolCall": {
                "status": "pending-confirmation", "toolCallId": "c1", "toolName": "shell",
                "displayName": "Shell", "invocationMessage": "run it"
            }
        }],
        "usage": null
    })));
    chat
}

#[test]
fn with_fakes_the_entry_is_set_on_the_owning_session_and_not_again() {
    let (state, dispatch, contribution) = fakes();
    state.script(|a| {
        a.chats.insert(CHAT.into(), pending_chat(CHAT));
        a.sessions.insert(SESSION.into(), session_state());
    });
    observe(&contribution, CHAT, &tool_ready("t1", "c1"));
    let calls = dispatch.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].channel, SESSION);
    assert_eq!(
        summary([&calls[0].action]),
        [format!("set {}", confirmation(CHAT, "t1", "c1"))]
    );

    // The session now holds the entry: the same observation dispatches nothing.
    let StateAction::SessionInputNeededSet(set) = &calls[0].action else {
        panic!("expected a set, got {:?}", calls[0].action);
    };
    let request = set.request.clone();
    state.script(|a| {
        a.sessions.get_mut(SESSION).unwrap().input_needed = Some(vec![request]);
    });
    observe(&contribution, CHAT, &tool_ready("t1", "c1"));
    assert_eq!(dispatch.calls().len(), 1);
}

#[test]
fn with_fakes_another_chats_entries_are_left_alone() {
    let (state, dispatch, contribution) = fakes();
    let peer_entry = from(json!({
        "kind": "chatInput", "id": format!("chatInput:{PEER}:r1"), "chat": PEER,
        "request": { "id": "r1" }
    }));
    state.script(|a| {
        a.chats.insert(CHAT.into(), chat_state(CHAT));
        let mut session = session_state();
        session.input_needed = Some(vec![peer_entry]);
        a.sessions.insert(SESSION.into(), session);
    });
    observe(&contribution, CHAT, &turn_complete("t1"));
    assert!(dispatch.calls().is_empty());
}

#[test]
fn unrelated_and_rejected_actions_are_not_even_read() {
    let (state, dispatch, contribution) = fakes();
    let delta =
        action(json!({ "type": "chat/delta", "turnId": "t1", "partId": "p", "content": "x" }));
    observe(&contribution, CHAT, &delta);
    observe(
        &contribution,
        CHAT,
        &action(json!({
            "type": "chat/toolCallDelta", "turnId": "t1", "toolCallId": "c1", "content": "{"
        })),
    );
    // A blocker action on a channel that is not a chat.
    observe(&contribution, SESSION, &turn_complete("t1"));
    contribution
        .on_did_dispatch_action(&DispatchedAction {
            channel: CHAT,
            session: SESSION,
            action: &tool_confirmed("t1", "c1"),
            origin: None,
            rejection_reason: Some("no such tool call"),
        })
        .unwrap();
    assert!(state.calls().is_empty());
    assert!(dispatch.calls().is_empty());
}

#[test]
fn a_refused_dispatch_is_logged_not_raised() {
    let (state, dispatch, contribution) = fakes();
    state.script(|a| {
        a.chats.insert(CHAT.into(), pending_chat(CHAT));
        a.sessions.insert(SESSION.into(), session_state());
    });
    dispatch.script(|a| a.refuse = Some("gone".into()));
    observe(&contribution, CHAT, &tool_ready("t1", "c1"));
    assert_eq!(dispatch.calls().len(), 1);
    // The queue is free again: the next observation syncs.
    dispatch.script(|a| a.refuse = None);
    observe(&contribution, CHAT, &tool_ready("t1", "c1"));
    assert_eq!(dispatch.calls().len(), 2);
}

#[test]
fn an_unknown_session_is_skipped_before_reading_the_chat() {
    let (state, dispatch, contribution) = fakes();
    observe(&contribution, CHAT, &tool_ready("t1", "c1"));
    assert_eq!(state.calls(), [HostStateCall::Session(SESSION.into())]);
    assert!(dispatch.calls().is_empty());
}

#[test]
fn a_missing_service_fails_the_registration_naming_it() {
    let dispatcher = Dispatcher::new(ServiceRegistry::new());
    let error = dispatcher.register::<SessionInputNeeded>().unwrap_err();
    let RegistrationError::MissingService { id, service } = error else {
        panic!("expected a missing service, got {error:?}");
    };
    assert_eq!(id, "sessionInputNeeded");
    assert!(service.contains("HostState"), "{service}");
}
