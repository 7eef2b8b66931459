use std::sync::Arc;

use agenthost_dispatcher::Dispatcher;
use agenthost_protocol::SafeId;
use agenthost_protocol::ahp_types::state::{ChatState, RootState};
use agenthost_services::StateHostState;
use agenthost_side_effects::DispatchObserver;
use agenthost_state::{StateConfig, StateManager};
use serde_json::{Value, json};

use super::*;

const SESSION: &str = "ahp-session:/s1";
const CHAT: &str = "ahp-chat:/c1";
const T0: &str = "2026-01-01T00:00:00.000Z";

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

fn chat_state(uri: &str) -> ChatState {
    from(json!({
        "resource": uri, "title": "Chat", "status": 1, "modifiedAt": T0, "turns": [],
        "activeTurn": { "id": "t1", "startedAt": T0, "responseParts": [],
                        "message": { "text": "hi", "origin": { "kind": "user" } } }
    }))
}

/// Records what it is handed.
#[derive(Default)]
struct Inbox(std::sync::Mutex<Vec<Notification>>);

impl Notifier for Inbox {
    fn notify(&self, notification: Notification) {
        self.0.lock().unwrap().push(notification);
    }
}

struct World {
    state: Arc<StateManager>,
    inbox: Arc<Inbox>,
    _registration: agenthost_dispatcher::Registration,
}

impl World {
    fn new() -> Self {
        let state = Arc::new(StateManager::new(
            from::<RootState>(json!({ "agents": [] })),
            StateConfig::default(),
        ));
        let session: SessionUri = SESSION.parse().unwrap();
        state
            .insert_session(
                &session,
                from(json!({
                    "provider": "scripted", "title": "Fix the build", "status": 1,
                    "lifecycle": "ready", "activeClients": [], "chats": []
                })),
            )
            .unwrap();
        state
            .insert_chat(&session, &CHAT.parse().unwrap(), chat_state(CHAT))
            .unwrap();
        let inbox = Arc::new(Inbox::default());
        let mut services = ServiceRegistry::new();
        services
            .insert::<dyn HostState>(Arc::new(StateHostState::new(state.clone())))
            .insert::<dyn Notifier>(inbox.clone())
            .insert::<NotificationSettings>(Arc::new(NotificationSettings {
                input_after: Duration::from_secs(60),
                turn_after: Duration::from_secs(60),
                debounce: Duration::from_secs(30),
            }));
        let dispatcher = Dispatcher::new(services);
        let registration = dispatcher.register::<Notifications>().unwrap();
        state.add_observer(Arc::new(DispatchObserver::new(dispatcher)));
        Self {
            state,
            inbox,
            _registration: registration,
        }
    }

    fn server(&self, channel: &str, action: Value) {
        self.state.dispatch_server(channel, from(action)).unwrap();
    }

    fn waiting(&self, id: &str) {
        self.server(
            SESSION,
            json!({ "type": "session/inputNeededSet", "request": {
                "kind": "chatInput", "id": id, "chat": CHAT, "turnId": "t1",
                "request": { "id": id, "message": "Which one?" } } }),
        );
    }

    fn answered(&self, id: &str) {
        self.server(
            SESSION,
            json!({ "type": "session/inputNeededRemoved", "id": id }),
        );
    }

    fn events(&self) -> Vec<(String, String)> {
        self.inbox
            .0
            .lock()
            .unwrap()
            .iter()
            .map(|n| (n.event.as_str().to_owned(), n.summary.clone()))
            .collect()
    }
}

/// Lets timer tasks run after the paused clock moved.
async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test(start_paused = true)]
async fn input_still_waiting_after_the_delay_is_told_once_and_an_answered_one_never() {
    let world = World::new();
    world.waiting("q1");
    world.waiting("q2");
    tokio::time::sleep(Duration::from_secs(30)).await;
    world.answered("q2");
    settle().await;
    assert!(world.events().is_empty(), "not before the delay");
    tokio::time::sleep(Duration::from_secs(31)).await;
    settle().await;
    assert_eq!(
        world.events(),
        [(
            "needsInput".to_owned(),
            "A question has waited for an answer for 1m 0s".to_owned()
        )]
    );
    let sent = world.inbox.0.lock().unwrap()[0].clone();
    assert_eq!(sent.session, SESSION);
    assert_eq!(sent.chat.as_deref(), Some(CHAT));
    assert_eq!(sent.title, "Fix the build");
}

#[tokio::test(start_paused = true)]
async fn a_kind_is_debounced_per_session() {
    let world = World::new();
    world.waiting("q1");
    tokio::time::sleep(Duration::from_secs(61)).await;
    settle().await;
    world.waiting("q2");
    tokio::time::sleep(Duration::from_secs(61)).await;
    settle().await;
    assert_eq!(world.events().len(), 2, "61 s apart: past the 30 s window");
    world.waiting("q3");
    world.waiting("q4");
    tokio::time::sleep(Duration::from_secs(61)).await;
    settle().await;
    assert_eq!(world.events().len(), 3, "two at once: one told");
}

#[tokio::test(start_paused = true)]
async fn a_long_turns_end_is_told_and_a_short_ones_not() {
    let world = World::new();
    world.server(
        CHAT,
        json!({ "type": "chat/turnComplete", "turnId": "t1", "duration": 5_000 }),
    );
    assert!(world.events().is_empty());
    world
        .state
        .insert_chat(
            &SESSION.parse().unwrap(),
            &"ahp-chat:/c2".parse().unwrap(),
            chat_state("ahp-chat:/c2"),
        )
        .unwrap();
    world.server(
        "ahp-chat:/c2",
        json!({ "type": "chat/error", "turnId": "t1", "duration": 192_000,
                "part": { "kind": "error", "error": { "errorType": "x", "message": "API down\nmore" } } }),
    );
    assert_eq!(
        world.events(),
        [(
            "turnEnded".to_owned(),
            "The turn failed after 3m 12s: API down".to_owned()
        )]
    );
}

#[tokio::test(start_paused = true)]
async fn budget_stops_and_crashes_are_told_whatever_the_turns_length_but_not_for_subagents() {
    let world = World::new();
    world.server(
        CHAT,
        json!({ "type": "chat/error", "turnId": "t1", "duration": 10,
                "part": { "kind": "error", "error": { "errorType": "budgetSpent",
                          "message": "The session's budget of $1.00 is spent" } } }),
    );
    let sub = ChatUri::subagent(&SESSION.parse().unwrap(), &SafeId::new("spawn").unwrap());
    world
        .state
        .insert_chat(&SESSION.parse().unwrap(), &sub, chat_state(sub.as_str()))
        .unwrap();
    world.server(
        sub.as_str(),
        json!({ "type": "chat/error", "turnId": "t1", "duration": 10,
                "part": { "kind": "error", "error": { "errorType": "providerExited",
                          "message": "exit 1" } } }),
    );
    assert_eq!(
        world.events(),
        [(
            "budgetSpent".to_owned(),
            "The session's budget of $1.00 is spent".to_owned()
        )]
    );
}

#[tokio::test(start_paused = true)]
async fn eighty_percent_of_a_budget_is_warned_once() {
    let world = World::new();
    let spend = |amount: f64| {
        world.server(
            SESSION,
            json!({ "type": "session/metaChanged",
                    "_meta": { "agenthost.costUsd": amount, "agenthost.budgetUsd": 1.0 } }),
        );
    };
    spend(0.5);
    assert!(world.events().is_empty());
    spend(0.85);
    spend(0.9);
    assert_eq!(
        world.events(),
        [(
            "budgetWarning".to_owned(),
            "The session has spent $0.8500 of its $1.00 budget".to_owned()
        )]
    );
}

#[test]
fn durations_are_spoken_briefly() {
    assert_eq!(spoken(Duration::from_millis(250)), "250ms");
    assert_eq!(spoken(Duration::from_secs(45)), "45s");
    assert_eq!(spoken(Duration::from_secs(192)), "3m 12s");
    assert_eq!(spoken(Duration::from_secs(3720)), "1h 2m");
    assert_eq!(one_line(&"x".repeat(300)).chars().count(), 201);
}
