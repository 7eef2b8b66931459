use std::sync::Arc;

use agenthost_dispatcher::{ClientContext, Dispatcher, LaunchKind, RequestSource};
use agenthost_protocol::SafeId;
use agenthost_protocol::ahp_types::state::{ChatState, Message, RootState};
use agenthost_services::prices::{ModelPrice, PriceEntry};
use agenthost_services::{StateHostState, StateServerDispatch};
use agenthost_side_effects::DispatchObserver;
use agenthost_state::{StateConfig, StateManager};
use serde_json::json;

use super::*;

const SESSION: &str = "ahp-session:/s1";
const CHAT: &str = "ahp-chat:/c1";
const T0: &str = "2026-01-01T00:00:00.000Z";

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

fn session() -> SessionUri {
    SESSION.parse().unwrap()
}

fn chat() -> ChatUri {
    CHAT.parse().unwrap()
}

fn chat_state(uri: &str, turn: Option<&str>) -> ChatState {
    let mut chat = json!({
        "resource": uri, "title": "Chat", "status": 1, "modifiedAt": T0, "turns": []
    });
    if let Some(turn) = turn {
        chat["activeTurn"] = json!({ "id": turn, "startedAt": T0, "responseParts": [],
            "message": { "text": "hi", "origin": { "kind": "user" } } });
    }
    from(chat)
}

/// Records what it is asked to stop.
#[derive(Default)]
struct Stops(std::sync::Mutex<Vec<(String, String, ErrorInfo)>>);

impl TurnStopper for Stops {
    fn stop_turn(&self, chat: &ChatUri, turn_id: &str, error: ErrorInfo) {
        self.0
            .lock()
            .unwrap()
            .push((chat.to_string(), turn_id.to_owned(), error));
    }
}

struct World {
    state: Arc<StateManager>,
    stops: Arc<Stops>,
    dispatcher: Dispatcher,
    _registration: agenthost_dispatcher::Registration,
}

impl World {
    fn new(config: Value) -> Self {
        let state = Arc::new(StateManager::new(
            from::<RootState>(json!({ "agents": [] })),
            StateConfig::default(),
        ));
        state
            .insert_session(
                &session(),
                from(json!({
                    "provider": "scripted", "title": "S", "status": 1, "lifecycle": "ready",
                    "activeClients": [], "chats": [],
                    "config": { "schema": { "type": "object", "properties": {
                        "budgetUsd": budget_property(),
                        "maxToolCallsPerTurn": max_tool_calls_property() } },
                      "values": config }
                })),
            )
            .unwrap();
        state
            .insert_chat(&session(), &chat(), chat_state(CHAT, Some("t1")))
            .unwrap();
        let stops = Arc::new(Stops::default());
        let mut prices = PriceTable::empty();
        prices.insert(
            "priced",
            PriceEntry {
                price: ModelPrice {
                    input: 1.0,
                    cached_input: 1.0,
                    cache_write: None,
                    output: 1.0,
                },
                source: "test".into(),
                as_of: None,
            },
        );
        let mut services = ServiceRegistry::new();
        services
            .insert::<dyn HostState>(Arc::new(StateHostState::new(state.clone())))
            .insert::<dyn ServerDispatch>(Arc::new(StateServerDispatch::new(state.clone())))
            .insert::<dyn TurnStopper>(stops.clone())
            .insert::<PriceTable>(Arc::new(prices));
        let dispatcher = Dispatcher::new(services);
        let registration = dispatcher.register::<SessionLimits>().unwrap();
        state.add_observer(Arc::new(DispatchObserver::new(dispatcher.clone())));
        Self {
            state,
            stops,
            dispatcher,
            _registration: registration,
        }
    }

    /// The session's spend so far, as `turnCost` writes it.
    fn spent(&self, amount: f64) {
        let mut meta = self
            .state
            .read(|h| h.session(SESSION).and_then(|s| s.meta.clone()))
            .unwrap_or_default();
        meta.insert(usage::COST_USD.into(), amount.into());
        let action = StateAction::SessionMetaChanged(SessionMetaChangedAction { meta: Some(meta) });
        self.state.dispatch_server(SESSION, action).unwrap();
    }

    fn set(&self, key: &str, value: Value) {
        let action: StateAction = from(json!({ "type": "session/configChanged",
                                              "config": { key: value } }));
        self.state.dispatch_server(SESSION, action).unwrap();
    }

    fn server(&self, channel: &str, action: Value) {
        self.state.dispatch_server(channel, from(action)).unwrap();
    }

    fn stops(&self) -> Vec<(String, String, String)> {
        self.stops
            .0
            .lock()
            .unwrap()
            .iter()
            .map(|(chat, turn, error)| (chat.clone(), turn.clone(), error.error_type.clone()))
            .collect()
    }

    fn stop_message(&self) -> String {
        self.stops.0.lock().unwrap()[0].2.message.clone()
    }

    /// What the gate says of a new turn asking for `model`.
    fn admit(&self, model: Option<&str>) -> Option<ErrorInfo> {
        let message: Message = from(json!({ "text": "go", "origin": { "kind": "user" } }));
        let message = Message {
            model: model.map(|id| from(json!({ "id": id }))),
            ..message
        };
        let request = IncomingRequest {
            session: session(),
            chat: chat(),
            message,
            turn_id: "t9".into(),
            source: RequestSource::Direct,
            client_id: None,
            client_context: ClientContext {
                client_id: None,
                client_kind: None,
                launch_kind: LaunchKind::Serve,
                token: None,
            },
        };
        match self.dispatcher.incoming_request(&request) {
            Disposition::Accept => None,
            Disposition::Reject { error, .. } => Some(error),
            other => panic!("{other:?}"),
        }
    }

    fn session_meta(&self) -> Value {
        let meta = self
            .state
            .read(|h| h.session(SESSION).and_then(|s| s.meta.clone()));
        serde_json::to_value(meta).unwrap()
    }
}

#[test]
fn a_spent_budget_stops_the_running_turn_once_and_refuses_new_ones_until_raised() {
    let world = World::new(json!({ "budgetUsd": 0.5 }));
    world.spent(0.2);
    assert!(world.stops().is_empty());
    assert_eq!(world.session_meta()["agenthost.budgetUsd"], json!(0.5));
    world.spent(0.6);
    world.spent(0.7);
    assert_eq!(
        world.stops(),
        [(CHAT.to_owned(), "t1".to_owned(), BUDGET_SPENT.to_owned())],
        "asked once"
    );
    assert_eq!(
        world.stop_message(),
        "The session's budget of $0.5000 is spent: $0.6000 so far (an API-equivalent \
         estimate). Raise budgetUsd to continue."
    );
    let refused = world.admit(Some("priced")).unwrap();
    assert_eq!(refused.error_type, BUDGET_SPENT);
    assert!(refused.message.contains("budget of $0.5000"), "{refused:?}");
    // Raised, the session takes turns again.
    world.set("budgetUsd", json!(2.0));
    assert_eq!(world.admit(Some("priced")), None);
    assert_eq!(world.session_meta()["agenthost.budgetUsd"], json!(2.0));
    // Removed, there is no limit (and none shown).
    world.set("budgetUsd", Value::Null);
    world.spent(5.0);
    assert_eq!(world.stops().len(), 1);
    assert!(world.session_meta().get("agenthost.budgetUsd").is_none());
}

#[test]
fn lowering_the_budget_below_the_spend_stops_the_turn() {
    let world = World::new(json!({ "budgetUsd": 10 }));
    world.spent(1.0);
    world.set("budgetUsd", json!(0.5));
    assert_eq!(world.stops().len(), 1);
}

#[test]
fn a_model_without_a_price_cannot_run_under_a_budget() {
    let world = World::new(json!({ "budgetUsd": 1 }));
    let refused = world.admit(Some("mystery")).unwrap();
    assert_eq!(refused.error_type, BUDGET_UNPRICED);
    assert!(refused.message.contains("model mystery has no known price"));
    assert_eq!(world.admit(Some("priced")), None);
    // A turn whose usage turns out unpriced is stopped.
    world.server(
        CHAT,
        json!({ "type": "chat/usage", "turnId": "t1",
                "usage": { "inputTokens": 1, "model": "mystery",
                           "_meta": { "agenthost.costUsd": null } } }),
    );
    assert_eq!(
        world.stops(),
        [(CHAT.to_owned(), "t1".to_owned(), BUDGET_UNPRICED.to_owned())]
    );
    // Without a budget, unknown prices are fine.
    let world = World::new(json!({}));
    assert_eq!(world.admit(Some("mystery")), None);
}

#[test]
fn the_call_over_the_cap_stops_its_turn_and_subagent_calls_count_for_it() {
    let world = World::new(json!({ "maxToolCallsPerTurn": 2 }));
    let sub = ChatUri::subagent(&session(), &SafeId::new("spawn").unwrap());
    let mut sub_state = chat_state(sub.as_str(), Some("s1"));
    sub_state.origin = Some(ChatOrigin::Tool {
        chat: CHAT.into(),
        tool_call_id: "spawn".into(),
    });
    world
        .state
        .insert_chat(&session(), &sub, sub_state)
        .unwrap();
    let start = |channel: &str, turn: &str, id: &str| {
        world.server(
            channel,
            json!({ "type": "chat/toolCallStart", "turnId": turn, "toolCallId": id,
                    "toolName": "bash", "displayName": "Bash" }),
        );
    };
    start(CHAT, "t1", "spawn");
    start(sub.as_str(), "s1", "a");
    assert!(world.stops().is_empty());
    start(sub.as_str(), "s1", "b");
    assert_eq!(
        world.stops(),
        [(
            CHAT.to_owned(),
            "t1".to_owned(),
            TOO_MANY_TOOL_CALLS.to_owned()
        )]
    );
    assert!(world.stop_message().contains("started 3 tool calls"));
    // The next turn starts from nothing.
    world.server(
        CHAT,
        json!({ "type": "chat/turnComplete", "turnId": "t1", "duration": 1 }),
    );
    assert_eq!(world.admit(None), None, "later turns are not blocked");
}

#[test]
fn a_value_that_is_not_a_limit_refuses_turns_naming_it() {
    for (key, value) in [
        ("budgetUsd", json!("lots")),
        ("budgetUsd", json!(-1)),
        ("maxToolCallsPerTurn", json!(2.5)),
    ] {
        let world = World::new(json!({ key: value.clone() }));
        let refused = world.admit(None).unwrap();
        assert_eq!(refused.error_type, INVALID_LIMIT);
        assert!(
            refused.message.contains(&format!("{key} must be")),
            "{refused:?}"
        );
        assert!(refused.message.contains(&value.to_string()));
    }
}
