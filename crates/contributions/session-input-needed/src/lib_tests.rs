use std::sync::{Arc, Mutex};

use agenthost_dispatcher::{Dispatcher, RegistrationError};
use agenthost_protocol::ActionOrigin;
use agenthost_protocol::ahp_types::state::{ChatState, RootState, SessionState};
use agenthost_protocol::{ChatUri, SafeId, SessionUri};
use agenthost_reducers::projection::entry_id;
use agenthost_services::fakes::{
    FakeHostState, FakeServerDispatch, FakeToolCallTracker, FakeTurnTracker, HostStateCall,
    ToolCallCall, TurnCall,
};
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

fn input_requested(request: &str) -> StateAction {
    action(json!({
        "type": "chat/inputRequested", "request": { "id": request, "message": "Proceed?" }
    }))
}

fn key(chat: &str, turn: &str, call: &str) -> ToolCallKey {
    ToolCallKey::new(chat, turn, call)
}

fn call_blocked(chat: &str, turn: &str, call: &str, block: ToolCallBlock) -> ToolCallCall {
    ToolCallCall::Blocked {
        call: key(chat, turn, call),
        block,
    }
}

fn call_unblocked(chat: &str, turn: &str, call: &str) -> ToolCallCall {
    ToolCallCall::Unblocked {
        call: key(chat, turn, call),
    }
}

fn turn_blocked(chat: &str, turn: &str, block: TurnBlock) -> TurnCall {
    TurnCall::Blocked {
        chat: chat.into(),
        turn_id: turn.into(),
        block,
    }
}

fn turn_unblocked(chat: &str, turn: &str) -> TurnCall {
    TurnCall::Unblocked {
        chat: chat.into(),
        turn_id: turn.into(),
    }
}

/// The chat of the subagent started by tool call `c1` of the session.
fn subagent_chat() -> String {
    ChatUri::subagent(
        &SessionUri::parse(SESSION).unwrap(),
        &SafeId::new("c1").unwrap(),
    )
    .into_string()
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
            session: observed.session,
            chat: observed.chat,
            action: &envelope.action,
            origin: envelope.origin.as_ref(),
            rejection_reason: envelope.rejection_reason.as_deref(),
        });
    }
}

/// A real state manager with one session of two chats and the contribution registered through
/// the dispatcher over the default state services and recording trackers.
struct World {
    state: Arc<StateManager>,
    bridge: Arc<Bridge>,
    turns: Arc<FakeTurnTracker>,
    tool_calls: Arc<FakeToolCallTracker>,
    /// How many tracker calls [`World::told`] has returned already.
    seen: Mutex<(usize, usize)>,
    _registration: agenthost_dispatcher::Registration,
}

impl World {
    fn new() -> Self {
        let state = Arc::new(StateManager::new(
            from::<RootState>(json!({ "agents": [] })),
            StateConfig::default(),
        ));
        state
            .insert_session(&SESSION.parse().unwrap(), session_state())
            .unwrap();
        state
            .insert_chat(
                &SESSION.parse().unwrap(),
                &chat_state(CHAT).resource.parse().unwrap(),
                chat_state(CHAT),
            )
            .unwrap();
        state
            .insert_chat(
                &SESSION.parse().unwrap(),
                &chat_state(PEER).resource.parse().unwrap(),
                chat_state(PEER),
            )
            .unwrap();
        let turns = Arc::new(FakeTurnTracker::default());
        let tool_calls = Arc::new(FakeToolCallTracker::default());
        let mut services = ServiceRegistry::new();
        services
            .insert::<dyn HostState>(Arc::new(StateHostState::new(state.clone())))
            .insert::<dyn ServerDispatch>(Arc::new(StateServerDispatch::new(state.clone())))
            .insert::<dyn TurnTracker>(turns.clone())
            .insert::<dyn ToolCallTracker>(tool_calls.clone());
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
            turns,
            tool_calls,
            seen: Mutex::new((0, 0)),
            _registration: registration,
        }
    }

    /// What the trackers were told since the last call: tool-call calls, turn calls.
    fn told(&self) -> (Vec<ToolCallCall>, Vec<TurnCall>) {
        let told = (self.tool_calls.calls(), self.turns.calls());
        // The fakes only record: compare against the calls so far and keep a cursor.
        let mut seen = self.seen.lock().unwrap();
        let fresh = (told.0[seen.0..].to_vec(), told.1[seen.1..].to_vec());
        *seen = (told.0.len(), told.1.len());
        fresh
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
            session: Some(&SESSION.parse().unwrap()),
            chat: Some(&CHAT.parse().unwrap()),
            action: &ready,
            origin: None,
            rejection_reason: None,
        });
    assert!(world.take().is_empty());
}

// With the services' fakes: what the contribution reads and dispatches.

struct Fakes {
    state: Arc<FakeHostState>,
    dispatch: Arc<FakeServerDispatch>,
    turns: Arc<FakeTurnTracker>,
    tool_calls: Arc<FakeToolCallTracker>,
    contribution: SessionInputNeeded,
}

fn fakes() -> Fakes {
    let state = Arc::new(FakeHostState::default());
    let dispatch = Arc::new(FakeServerDispatch::default());
    let turns = Arc::new(FakeTurnTracker::default());
    let tool_calls = Arc::new(FakeToolCallTracker::default());
    let contribution = SessionInputNeeded::new(
        state.clone(),
        dispatch.clone(),
        turns.clone(),
        tool_calls.clone(),
    );
    Fakes {
        state,
        dispatch,
        turns,
        tool_calls,
        contribution,
    }
}

fn observe(contribution: &SessionInputNeeded, channel: &str, action: &StateAction) {
    contribution
        .on_did_dispatch_action(&DispatchedAction {
            channel,
            session: Some(&SESSION.parse().unwrap()),
            chat: (channel != SESSION)
                .then(|| channel.parse().unwrap())
                .as_ref(),
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
    let Fakes {
        state,
        dispatch,
        contribution,
        ..
    } = fakes();
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
    let Fakes {
        state,
        dispatch,
        contribution,
        ..
    } = fakes();
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
    let Fakes {
        state,
        dispatch,
        contribution,
        ..
    } = fakes();
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
            session: Some(&SESSION.parse().unwrap()),
            chat: Some(&CHAT.parse().unwrap()),
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
    let Fakes {
        state,
        dispatch,
        contribution,
        ..
    } = fakes();
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
    let Fakes {
        state,
        dispatch,
        contribution,
        ..
    } = fakes();
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

#[test]
fn without_the_trackers_the_registration_names_them() {
    let state = Arc::new(FakeHostState::default());
    let mut services = ServiceRegistry::new();
    services
        .insert::<dyn HostState>(state)
        .insert::<dyn ServerDispatch>(Arc::new(FakeServerDispatch::default()));
    let error = Dispatcher::new(services)
        .register::<SessionInputNeeded>()
        .unwrap_err();
    let RegistrationError::MissingService { service, .. } = error else {
        panic!("expected a missing service, got {error:?}");
    };
    assert!(service.contains("TurnTracker"), "{service}");

    let mut services = ServiceRegistry::new();
    services
        .insert::<dyn HostState>(Arc::new(FakeHostState::default()))
        .insert::<dyn ServerDispatch>(Arc::new(FakeServerDispatch::default()))
        .insert::<dyn TurnTracker>(Arc::new(FakeTurnTracker::default()));
    let error = SessionInputNeeded::from_services(&services).unwrap_err();
    assert!(error.to_string().contains("ToolCallTracker"), "{error}");
}

// The trackers: told from the diff the host accepted.

#[test]
fn a_pending_confirmation_blocks_the_call_and_the_turn() {
    let world = World::new();
    world.pending(CHAT, "t1", "c1", None);
    assert_eq!(
        world.told(),
        (
            vec![call_blocked(CHAT, "t1", "c1", ToolCallBlock::Confirmation)],
            vec![turn_blocked(CHAT, "t1", TurnBlock::ToolConfirmation)],
        )
    );
}

#[test]
fn confirming_unblocks_the_call_and_the_turn() {
    let world = World::new();
    world.pending(CHAT, "t1", "c1", None);
    world.told();
    assert!(world.client(CHAT, tool_confirmed("t1", "c1")));
    assert_eq!(
        world.told(),
        (
            vec![call_unblocked(CHAT, "t1", "c1")],
            vec![turn_unblocked(CHAT, "t1")],
        )
    );
}

#[test]
fn a_client_tool_trades_its_confirmation_block_for_execution_and_the_turn_stays_blocked() {
    let world = World::new();
    world.pending(CHAT, "t1", "c1", Some(CLIENT));
    world.told();
    assert!(world.client(CHAT, tool_confirmed("t1", "c1")));
    // The removal comes first; the turn goes from some entries to some: nothing to tell.
    assert_eq!(
        world.told(),
        (
            vec![
                call_unblocked(CHAT, "t1", "c1"),
                call_blocked(CHAT, "t1", "c1", ToolCallBlock::ClientExecution),
            ],
            vec![],
        )
    );
    // The execution entry goes when the turn ends; so does the turn's block.
    world.server(CHAT, [turn_complete("t1")]);
    assert_eq!(
        world.told(),
        (
            vec![call_unblocked(CHAT, "t1", "c1")],
            vec![turn_unblocked(CHAT, "t1")],
        )
    );
}

#[test]
fn a_second_blocked_call_blocks_only_the_call() {
    let world = World::new();
    world.pending(CHAT, "t1", "c1", None);
    world.told();
    world.server(CHAT, [tool_start("t1", "c2", None), tool_ready("t1", "c2")]);
    assert_eq!(
        world.told(),
        (
            vec![call_blocked(CHAT, "t1", "c2", ToolCallBlock::Confirmation)],
            vec![],
        )
    );
    // Confirming one of two leaves the turn blocked by the other.
    assert!(world.client(CHAT, tool_confirmed("t1", "c1")));
    assert_eq!(
        world.told(),
        (vec![call_unblocked(CHAT, "t1", "c1")], vec![])
    );
    world.server(CHAT, [turn_complete("t1")]);
    assert_eq!(
        world.told(),
        (
            vec![call_unblocked(CHAT, "t1", "c2")],
            vec![turn_unblocked(CHAT, "t1")],
        )
    );
}

#[test]
fn an_input_request_blocks_the_turn_on_user_input_until_the_turn_ends() {
    let world = World::new();
    world.server(CHAT, [turn_started("t1"), input_requested("r1")]);
    assert_eq!(world.ids(), [format!("chatInput:{CHAT}:r1")]);
    assert_eq!(
        world.told(),
        (vec![], vec![turn_blocked(CHAT, "t1", TurnBlock::UserInput)])
    );
    // The turn ends with the request open: the ended turn is the one unblocked.
    world.server(CHAT, [turn_complete("t1")]);
    assert!(world.ids().is_empty());
    assert_eq!(world.told(), (vec![], vec![turn_unblocked(CHAT, "t1")]));
}

#[test]
fn a_turn_blocked_by_input_then_a_call_keeps_the_first_kind() {
    let world = World::new();
    world.server(CHAT, [turn_started("t1"), input_requested("r1")]);
    world.told();
    world.server(CHAT, [tool_start("t1", "c1", None), tool_ready("t1", "c1")]);
    assert_eq!(
        world.told(),
        (
            vec![call_blocked(CHAT, "t1", "c1", ToolCallBlock::Confirmation)],
            vec![],
        )
    );
}

#[test]
fn a_subagent_chat_reports_under_its_own_turn_and_calls() {
    let world = World::new();
    let subagent = subagent_chat();
    world
        .state
        .insert_chat(
            &SESSION.parse().unwrap(),
            &chat_state(&subagent).resource.parse().unwrap(),
            chat_state(&subagent),
        )
        .unwrap();
    world.pending(&subagent, "s1", "x", None);
    // The owning session gets the entry, as before.
    let entry = confirmation(&subagent, "s1", "x");
    assert_eq!(world.take(), [format!("set {entry}")]);
    assert_eq!(world.ids(), [entry]);
    // The trackers hear of the subagent chat's own turn and call.
    assert_eq!(
        world.told(),
        (
            vec![call_blocked(
                &subagent,
                "s1",
                "x",
                ToolCallBlock::Confirmation
            )],
            vec![turn_blocked(&subagent, "s1", TurnBlock::ToolConfirmation)],
        )
    );
    assert!(world.client(&subagent, tool_confirmed("s1", "x")));
    assert_eq!(
        world.told(),
        (
            vec![call_unblocked(&subagent, "s1", "x")],
            vec![turn_unblocked(&subagent, "s1")],
        )
    );
}

#[test]
fn a_refused_dispatch_tells_the_trackers_nothing() {
    let Fakes {
        state,
        dispatch,
        turns,
        tool_calls,
        contribution,
    } = fakes();
    state.script(|a| {
        a.chats.insert(CHAT.into(), pending_chat(CHAT));
        a.sessions.insert(SESSION.into(), session_state());
    });
    dispatch.script(|a| a.refuse = Some("gone".into()));
    observe(&contribution, CHAT, &tool_ready("t1", "c1"));
    assert_eq!(dispatch.calls().len(), 1);
    assert!(tool_calls.calls().is_empty());
    assert!(turns.calls().is_empty());

    // Accepted, the same sync tells both.
    dispatch.script(|a| a.refuse = None);
    observe(&contribution, CHAT, &tool_ready("t1", "c1"));
    assert_eq!(
        tool_calls.calls(),
        [call_blocked(CHAT, "t1", "c1", ToolCallBlock::Confirmation)]
    );
    assert_eq!(
        turns.calls(),
        [turn_blocked(CHAT, "t1", TurnBlock::ToolConfirmation)]
    );
}

#[test]
fn a_refused_removal_leaves_the_call_and_the_turn_blocked() {
    let Fakes {
        state,
        dispatch,
        turns,
        tool_calls,
        contribution,
    } = fakes();
    let entry = from::<SessionInputRequest>(json!({
        "kind": "toolConfirmation", "id": confirmation(CHAT, "t1", "c1"), "chat": CHAT,
        "turnId": "t1",
        "toolCall": {
            "status": "pending-confirmation", "toolCallId": "c1", "toolName": "shell",
            "displayName": "Shell", "invocationMessage": "run it"
        }
    }));
    state.script(|a| {
        // The turn ended: the chat wants no entries, the session still holds one.
        a.chats.insert(CHAT.into(), chat_state(CHAT));
        let mut session = session_state();
        session.input_needed = Some(vec![entry]);
        a.sessions.insert(SESSION.into(), session);
    });
    dispatch.script(|a| a.refuse = Some("gone".into()));
    observe(&contribution, CHAT, &turn_complete("t1"));
    assert_eq!(
        summary(dispatch.calls().iter().map(|c| &c.action)),
        [format!("remove {}", confirmation(CHAT, "t1", "c1"))]
    );
    assert!(tool_calls.calls().is_empty());
    assert!(turns.calls().is_empty());

    dispatch.script(|a| a.refuse = None);
    observe(&contribution, CHAT, &turn_complete("t1"));
    assert_eq!(tool_calls.calls(), [call_unblocked(CHAT, "t1", "c1")]);
    assert_eq!(turns.calls(), [turn_unblocked(CHAT, "t1")]);
}
