use std::sync::{Arc, Mutex};

use agenthost_dispatcher::Dispatcher;
use agenthost_protocol::ahp_types::state::{ChatState, RootState, SessionState};
use agenthost_services::{StateHostState, StateServerDispatch};
use agenthost_side_effects::DispatchObserver;
use agenthost_state::{EnvelopeObserver, ObservedEnvelope, StateConfig, StateManager};
use serde_json::{Value, json};

use super::*;

const SESSION: &str = "ahp-session:/s1";
const CHAT: &str = "ahp-chat:/c1";
const LOOSE: &str = "ahp-chat:/c2";
const T0: &str = "2026-01-01T00:00:00.000Z";

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

fn chat_state(uri: &str) -> ChatState {
    from(json!({ "resource": uri, "title": "Chat", "status": 1, "modifiedAt": T0, "turns": [] }))
}

/// Records the session channel's actions.
#[derive(Default)]
struct Recorder(Mutex<Vec<Value>>);

impl EnvelopeObserver for Recorder {
    fn on_envelope(&self, observed: &ObservedEnvelope<'_>) {
        if observed.envelope.channel == SESSION {
            let action = serde_json::to_value(&observed.envelope.action).unwrap();
            self.0.lock().unwrap().push(action);
        }
    }
}

/// A real state manager with one session, its chat in the catalog and a second chat not in
/// it, and the contribution registered through the dispatcher.
struct World {
    state: Arc<StateManager>,
    recorder: Arc<Recorder>,
    _registration: agenthost_dispatcher::Registration,
}

impl World {
    fn new() -> Self {
        let state = Arc::new(StateManager::new(
            from::<RootState>(json!({ "agents": [] })),
            StateConfig::default(),
        ));
        let session: SessionState = from(json!({
            "provider": "scripted", "title": "S", "status": 1, "lifecycle": "ready",
            "activeClients": [], "chats": []
        }));
        state
            .insert_session(&SESSION.parse().unwrap(), session)
            .unwrap();
        for chat in [CHAT, LOOSE] {
            state
                .insert_chat(
                    &SESSION.parse().unwrap(),
                    &chat.parse().unwrap(),
                    chat_state(chat),
                )
                .unwrap();
        }
        let summary = agenthost_reducers::projection::chat_summary(&chat_state(CHAT));
        state
            .dispatch_server(
                SESSION,
                StateAction::SessionChatAdded(
                    agenthost_protocol::actions::SessionChatAddedAction { summary },
                ),
            )
            .unwrap();
        let mut services = ServiceRegistry::new();
        services
            .insert::<dyn HostState>(Arc::new(StateHostState::new(state.clone())))
            .insert::<dyn ServerDispatch>(Arc::new(StateServerDispatch::new(state.clone())));
        let dispatcher = Dispatcher::new(services);
        let registration = dispatcher.register::<ChatCatalog>().unwrap();
        let recorder = Arc::new(Recorder::default());
        state.add_observer(recorder.clone());
        // As the host: every envelope reaches the contributions' onDidDispatchAction.
        state.add_observer(Arc::new(DispatchObserver::new(dispatcher)));
        Self {
            state,
            recorder,
            _registration: registration,
        }
    }

    fn server(&self, chat: &str, action: Value) {
        self.state.dispatch_server(chat, from(action)).unwrap();
    }

    /// The session's actions since the last call.
    fn take(&self) -> Vec<Value> {
        std::mem::take(&mut *self.recorder.0.lock().unwrap())
    }

    /// The catalog entry of `CHAT`: status and modifiedAt.
    fn entry(&self) -> (u32, String) {
        self.state.read(|h| {
            let session = h.session(SESSION).unwrap();
            let entry = session.chats.iter().find(|c| c.resource == CHAT).unwrap();
            (entry.status, entry.modified_at.clone())
        })
    }
}

fn started(turn: &str) -> Value {
    json!({ "type": "chat/turnStarted", "turnId": turn, "startedAt": "2026-01-01T00:00:01.000Z",
            "message": { "text": "hi", "origin": { "kind": "user" } } })
}

#[test]
fn a_turn_s_start_confirmation_and_end_reach_the_catalog() {
    let world = World::new();
    world.server(CHAT, started("t1"));
    assert_eq!(world.entry(), (8, "2026-01-01T00:00:01.000Z".to_owned()));
    let updates = world.take();
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert_eq!(updates[0]["type"], "session/chatUpdated");
    assert_eq!(updates[0]["chat"], CHAT);
    assert_eq!(updates[0]["changes"]["status"], 8);

    // Streaming changes no summary: nothing is dispatched.
    world.server(
        CHAT,
        json!({ "type": "chat/responsePart", "turnId": "t1",
                "part": { "kind": "markdown", "id": "p", "content": "" } }),
    );
    world.server(
        CHAT,
        json!({ "type": "chat/delta", "turnId": "t1", "partId": "p", "content": "x" }),
    );
    world.server(
        CHAT,
        json!({ "type": "chat/toolCallStart", "turnId": "t1", "toolCallId": "c",
                "toolName": "shell", "displayName": "Shell" }),
    );
    assert_eq!(world.take(), Vec::<Value>::new());

    // Waiting for a confirmation: InputNeeded; confirmed: back to InProgress.
    world.server(
        CHAT,
        json!({ "type": "chat/toolCallReady", "turnId": "t1", "toolCallId": "c",
                "invocationMessage": "run" }),
    );
    assert_eq!(world.entry().0, 24);
    world.server(
        CHAT,
        json!({ "type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": "c",
                "approved": true, "confirmed": "user-action" }),
    );
    assert_eq!(world.entry().0, 8);
    world.server(
        CHAT,
        json!({ "type": "chat/turnComplete", "turnId": "t1", "duration": 1500 }),
    );
    assert_eq!(world.entry(), (1, "2026-01-01T00:00:02.500Z".to_owned()));
    assert_eq!(world.take().len(), 3);

    // A turn end for a turn that is not running reduces to nothing: nothing is dispatched.
    world.server(
        CHAT,
        json!({ "type": "chat/turnComplete", "turnId": "t1", "duration": 9 }),
    );
    assert_eq!(world.take(), Vec::<Value>::new());
}

#[test]
fn the_catalog_s_title_is_kept() {
    let world = World::new();
    world
        .state
        .dispatch_server(
            SESSION,
            from(json!({ "type": "session/chatUpdated", "chat": CHAT,
                         "changes": { "title": "Renamed" } })),
        )
        .unwrap();
    world.take();
    world.server(CHAT, started("t1"));
    let updates = world.take();
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert_eq!(updates[0]["changes"].get("title"), None, "{updates:?}");
    let title = world
        .state
        .read(|h| h.session(SESSION).unwrap().chats[0].title.clone());
    assert_eq!(title, "Renamed");
}

#[test]
fn a_chat_outside_the_catalog_is_left_alone() {
    let world = World::new();
    world.server(LOOSE, started("t1"));
    assert_eq!(world.take(), Vec::<Value>::new());
    let catalog = world
        .state
        .read(|h| h.session(SESSION).unwrap().chats.len());
    assert_eq!(catalog, 1);
}

#[test]
fn it_needs_the_host_state_and_a_server_dispatch() {
    let dispatcher = Dispatcher::new(ServiceRegistry::new());
    let error = dispatcher.register::<ChatCatalog>().unwrap_err();
    assert!(error.to_string().contains("HostState"), "{error}");
}
