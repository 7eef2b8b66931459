use std::sync::{Arc, Mutex};

use agenthost_dispatcher::{Dispatcher, RegistrationError};
use agenthost_protocol::ActionOrigin;
use agenthost_protocol::ahp_types::state::{ChatState, ErrorInfo, RootState, SessionState};
use agenthost_protocol::error_info::error_info;
use agenthost_services::fakes::{DispatchCall, FakeHostState, FakeServerDispatch, HostStateCall};
use agenthost_services::{StateHostState, StateServerDispatch};
use agenthost_state::{
    ClientDispatch, EnvelopeObserver, ObservedEnvelope, StateConfig, StateManager,
};
use serde_json::{Value, json};

use super::*;

const SESSION: &str = "ahp-session:/s1";
const CHAT: &str = "ahp-chat:/c1";
const HIDDEN: &str = "ahp-chat:/worker";
const T0: &str = "2026-01-01T00:00:00.000Z";
const IDLE: u32 = SessionStatus::Idle.0;
const READ: u32 = SessionStatus::Idle.0 | SessionStatus::IsRead.0;

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

fn chat_state(uri: &str, status: u32, extra: Value) -> ChatState {
    let mut chat = json!({
        "resource": uri, "title": "Chat", "status": status, "modifiedAt": T0, "turns": []
    });
    chat.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    from(chat)
}

fn session_state(status: u32) -> SessionState {
    from(json!({
        "provider": "scripted", "title": "S", "status": status, "lifecycle": "ready",
        "activeClients": [], "chats": []
    }))
}

fn failure() -> ErrorInfo {
    error_info("sendFailed", "boom")
}

fn turn_end(channel: &str, reason: TurnEndReason) -> TurnEnd {
    TurnEnd {
        session: SESSION.parse().unwrap(),
        chat: channel.parse().unwrap(),
        turn_id: Some("t1".to_owned()),
        reason,
        client_context: None,
    }
}

fn started_outcomes() -> Vec<TurnEndReason> {
    vec![
        TurnEndReason::Success,
        TurnEndReason::Cancelled,
        TurnEndReason::Error {
            error: failure(),
            resumable: false,
        },
        TurnEndReason::Error {
            error: failure(),
            resumable: true,
        },
    ]
}

fn chat_unread(channel: &str) -> DispatchCall {
    DispatchCall {
        channel: channel.to_owned(),
        action: StateAction::ChatIsReadChanged(ChatIsReadChangedAction { is_read: false }),
    }
}

fn session_unread() -> DispatchCall {
    DispatchCall {
        channel: SESSION.to_owned(),
        action: StateAction::SessionIsReadChanged(SessionIsReadChangedAction { is_read: false }),
    }
}

// ---------------------------------------------------------------------------------------------
// With the services' fakes: what the contribution reads and dispatches.

/// A fake host with the session and two chats (`CHAT`, and the hidden `HIDDEN`) at the given
/// statuses.
fn fakes(session: u32, chat: u32) -> (Arc<FakeHostState>, Arc<FakeServerDispatch>, MarkUnread) {
    let host = Arc::new(FakeHostState::default());
    host.script(|a| {
        a.sessions.insert(SESSION.into(), session_state(session));
        a.chats
            .insert(CHAT.into(), chat_state(CHAT, chat, json!({})));
        a.chats.insert(
            HIDDEN.into(),
            chat_state(HIDDEN, chat, json!({ "interactivity": "hidden" })),
        );
    });
    let dispatch = Arc::new(FakeServerDispatch::default());
    let contribution = MarkUnread::new(host.clone(), dispatch.clone());
    (host, dispatch, contribution)
}

#[test]
fn every_started_outcome_marks_the_read_chat_and_the_read_session_unread() {
    for reason in started_outcomes() {
        let (_, dispatch, contribution) = fakes(READ, READ);
        contribution
            .on_turn_end(&turn_end(CHAT, reason.clone()))
            .unwrap();
        assert_eq!(
            dispatch.calls(),
            [chat_unread(CHAT), session_unread()],
            "{reason:?}"
        );
    }
}

#[test]
fn rejected_and_local_command_ends_read_and_mark_nothing() {
    let rejected = TurnEndReason::Rejected { error: failure() };
    for reason in [rejected, TurnEndReason::LocalCommand] {
        let (host, dispatch, contribution) = fakes(READ, READ);
        contribution
            .on_turn_end(&turn_end(CHAT, reason.clone()))
            .unwrap();
        assert!(host.calls().is_empty(), "{reason:?}");
        assert!(dispatch.calls().is_empty(), "{reason:?}");
    }
}

#[test]
fn what_is_already_unread_is_not_marked_again() {
    let (_, dispatch, contribution) = fakes(IDLE, IDLE);
    contribution
        .on_turn_end(&turn_end(CHAT, TurnEndReason::Success))
        .unwrap();
    assert!(dispatch.calls().is_empty());

    let (_, dispatch, contribution) = fakes(READ, IDLE);
    contribution
        .on_turn_end(&turn_end(CHAT, TurnEndReason::Success))
        .unwrap();
    assert_eq!(dispatch.calls(), [session_unread()]);

    let (_, dispatch, contribution) = fakes(IDLE, READ);
    contribution
        .on_turn_end(&turn_end(CHAT, TurnEndReason::Cancelled))
        .unwrap();
    assert_eq!(dispatch.calls(), [chat_unread(CHAT)]);
}

#[test]
fn a_hidden_chat_is_marked_but_does_not_resurface_its_session() {
    let (_, dispatch, contribution) = fakes(READ, READ);
    contribution
        .on_turn_end(&turn_end(HIDDEN, TurnEndReason::Success))
        .unwrap();
    assert_eq!(dispatch.calls(), [chat_unread(HIDDEN)]);
}

#[test]
fn a_missing_chat_marks_nothing_and_does_not_fail() {
    let (host, dispatch, contribution) = fakes(READ, READ);
    let gone = "ahp-chat:/gone";
    contribution
        .on_turn_end(&turn_end(gone, TurnEndReason::Success))
        .unwrap();
    assert_eq!(host.calls(), [HostStateCall::Chat(gone.into())]);
    assert!(dispatch.calls().is_empty());
}

#[test]
fn a_missing_session_still_marks_the_chat() {
    let (host, dispatch, contribution) = fakes(READ, READ);
    host.script(|a| a.sessions.clear());
    contribution
        .on_turn_end(&turn_end(CHAT, TurnEndReason::Success))
        .unwrap();
    assert_eq!(dispatch.calls(), [chat_unread(CHAT)]);
}

#[test]
fn a_refused_dispatch_is_logged_and_the_session_is_still_tried() {
    let (_, dispatch, contribution) = fakes(READ, READ);
    dispatch.script(|a| a.refuse = Some("gone".into()));
    contribution
        .on_turn_end(&turn_end(CHAT, TurnEndReason::Success))
        .unwrap();
    assert_eq!(dispatch.calls(), [chat_unread(CHAT), session_unread()]);
}

#[test]
fn marks_unread_follows_the_reason_table() {
    let marked: Vec<bool> = started_outcomes().iter().map(marks_unread).collect();
    assert_eq!(marked, [true; 4]);
    assert!(!marks_unread(&TurnEndReason::LocalCommand));
    assert!(!marks_unread(&TurnEndReason::Rejected { error: failure() }));
}

#[test]
fn it_registers_at_500_on_turn_end_and_needs_its_services() {
    let (host, dispatch, _) = fakes(READ, READ);
    let mut services = ServiceRegistry::new();
    services
        .insert::<dyn HostState>(host)
        .insert::<dyn ServerDispatch>(dispatch.clone());
    let dispatcher = Dispatcher::new(services);
    let _registration = dispatcher.register::<MarkUnread>().unwrap();
    assert_eq!(dispatcher.order_of(Hook::TurnEnd), [(500, "markUnread")]);
    dispatcher.turn_end(&turn_end(CHAT, TurnEndReason::Success));
    assert_eq!(dispatch.calls(), [chat_unread(CHAT), session_unread()]);

    let dispatcher = Dispatcher::new(ServiceRegistry::new());
    let error = dispatcher.register::<MarkUnread>().unwrap_err();
    let RegistrationError::MissingService { id, service } = error else {
        panic!("expected a missing service, got {error:?}");
    };
    assert_eq!(id, "markUnread");
    assert!(service.contains("HostState"), "{service}");
}

// ---------------------------------------------------------------------------------------------
// Over a real state manager: the flags as the reducers set them, the actions as clients see them.

/// Records the channel and type of every envelope, as a subscriber would see them.
#[derive(Default)]
struct Recorder(Mutex<Vec<(String, StateAction)>>);

impl EnvelopeObserver for Recorder {
    fn on_envelope(&self, observed: &ObservedEnvelope<'_>) {
        let envelope = observed.envelope;
        self.0
            .lock()
            .unwrap()
            .push((envelope.channel.clone(), envelope.action.clone()));
    }
}

struct World {
    state: Arc<StateManager>,
    dispatcher: Dispatcher,
    recorder: Arc<Recorder>,
    _registration: agenthost_dispatcher::Registration,
}

impl World {
    fn new() -> Self {
        let state = Arc::new(StateManager::new(
            from::<RootState>(json!({ "agents": [] })),
            StateConfig::default(),
        ));
        state
            .insert_session(&SESSION.parse().unwrap(), session_state(IDLE))
            .unwrap();
        state
            .insert_chat(
                &SESSION.parse().unwrap(),
                &agenthost_protocol::ChatUri::parse(&(chat_state(CHAT, IDLE, json!({}))).resource)
                    .unwrap(),
                chat_state(CHAT, IDLE, json!({})),
            )
            .unwrap();
        let mut services = ServiceRegistry::new();
        services
            .insert::<dyn HostState>(Arc::new(StateHostState::new(state.clone())))
            .insert::<dyn ServerDispatch>(Arc::new(StateServerDispatch::new(state.clone())));
        let dispatcher = Dispatcher::new(services);
        let registration = dispatcher.register::<MarkUnread>().unwrap();
        let recorder = Arc::new(Recorder::default());
        state.add_observer(recorder.clone());
        Self {
            state,
            dispatcher,
            recorder,
            _registration: registration,
        }
    }

    /// A client marks `channel` read, as a client viewing it does.
    fn read(&self, channel: &str) {
        let action = if channel == SESSION {
            json!({ "type": "session/isReadChanged", "isRead": true })
        } else {
            json!({ "type": "chat/isReadChanged", "isRead": true })
        };
        let origin = ActionOrigin {
            client_id: "client-1".into(),
            client_seq: 1,
        };
        let outcome = self.state.dispatch_client(channel, from(action), origin);
        assert!(matches!(outcome, ClientDispatch::Accepted(_)));
    }

    fn server(&self, channel: &str, action: Value) {
        self.state.dispatch_server(channel, from(action)).unwrap();
    }

    /// (chat read, session read).
    fn flags(&self) -> (bool, bool) {
        self.state.read(|h| {
            (
                is_read(h.chat(CHAT).unwrap().status),
                is_read(h.session(SESSION).unwrap().status),
            )
        })
    }

    /// The envelopes since the last call.
    fn take(&self) -> Vec<(String, StateAction)> {
        std::mem::take(&mut *self.recorder.0.lock().unwrap())
    }
}

#[test]
fn over_the_state_manager_a_finished_turn_watched_by_a_client_leaves_chat_and_session_unread() {
    let world = World::new();
    world.server(
        CHAT,
        json!({
            "type": "chat/turnStarted", "turnId": "t1", "startedAt": T0,
            "message": { "text": "hello", "origin": { "kind": "user" } }
        }),
    );
    // The client watching the turn keeps both read.
    world.read(CHAT);
    world.read(SESSION);
    world.server(
        CHAT,
        json!({ "type": "chat/turnComplete", "turnId": "t1", "duration": 10 }),
    );
    assert_eq!(world.flags(), (true, true));
    world.take();

    world
        .dispatcher
        .turn_end(&turn_end(CHAT, TurnEndReason::Success));
    assert_eq!(world.flags(), (false, false));
    assert_eq!(
        world.take(),
        [
            (CHAT.to_owned(), chat_unread(CHAT).action),
            (SESSION.to_owned(), session_unread().action),
        ]
    );
}

#[test]
fn over_the_state_manager_a_rejected_turn_leaves_a_read_session_read() {
    let world = World::new();
    world.read(CHAT);
    world.read(SESSION);
    world.take();
    world.dispatcher.turn_end(&turn_end(
        CHAT,
        TurnEndReason::Rejected {
            error: error_info("archived", "This session is archived."),
        },
    ));
    world
        .dispatcher
        .turn_end(&turn_end(CHAT, TurnEndReason::LocalCommand));
    assert_eq!(world.flags(), (true, true));
    assert!(world.take().is_empty());
}

#[test]
fn over_the_state_manager_a_resumable_error_still_marks_unread() {
    let world = World::new();
    world.read(CHAT);
    world.read(SESSION);
    world.dispatcher.turn_end(&turn_end(
        CHAT,
        TurnEndReason::Error {
            error: failure(),
            resumable: true,
        },
    ));
    assert_eq!(world.flags(), (false, false));
}
