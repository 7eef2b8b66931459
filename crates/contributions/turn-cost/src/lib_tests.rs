use std::sync::Arc;

use agenthost_dispatcher::Dispatcher;
use agenthost_protocol::SafeId;
use agenthost_protocol::ahp_types::state::{ChatState, RootState, SessionState};
use agenthost_services::fakes::FakeSessionData;
use agenthost_services::prices::{ModelPrice, PriceEntry};
use agenthost_services::{StateHostState, StateServerDispatch};
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

fn session() -> SessionUri {
    SESSION.parse().unwrap()
}

fn chat_state(uri: &str, turn: &str) -> ChatState {
    from(json!({
        "resource": uri, "title": "Chat", "status": 1, "modifiedAt": T0, "turns": [],
        "activeTurn": { "id": turn, "startedAt": T0, "responseParts": [],
                        "message": { "text": "hi", "origin": { "kind": "user" } } }
    }))
}

struct World {
    state: Arc<StateManager>,
    data: Arc<FakeSessionData>,
    _registration: agenthost_dispatcher::Registration,
}

/// A price of $1 per million input tokens, $0.10 cached, $2 cache writes, $10 output.
fn prices() -> PriceTable {
    let mut table = PriceTable::empty();
    table.insert(
        "priced",
        PriceEntry {
            price: ModelPrice {
                input: 1.0,
                cached_input: 0.1,
                cache_write: Some(2.0),
                output: 10.0,
            },
            source: "test".into(),
            as_of: None,
        },
    );
    table
}

impl World {
    fn new() -> Self {
        let state = Arc::new(StateManager::new(
            from::<RootState>(json!({ "agents": [] })),
            StateConfig::default(),
        ));
        state
            .insert_session(
                &session(),
                from::<SessionState>(json!({
                    "provider": "scripted", "title": "S", "status": 1, "lifecycle": "ready",
                    "activeClients": [], "chats": [],
                    "_meta": { "git": "kept" }
                })),
            )
            .unwrap();
        state
            .insert_chat(&session(), &CHAT.parse().unwrap(), chat_state(CHAT, "t1"))
            .unwrap();
        let data = Arc::new(FakeSessionData::default());
        let mut services = ServiceRegistry::new();
        services
            .insert::<dyn HostState>(Arc::new(StateHostState::new(state.clone())))
            .insert::<dyn ServerDispatch>(Arc::new(StateServerDispatch::new(state.clone())))
            .insert::<dyn SessionDataStore>(data.clone())
            .insert::<PriceTable>(Arc::new(prices()));
        let dispatcher = Dispatcher::new(services);
        let registration = dispatcher.register::<TurnCost>().unwrap();
        state.add_observer(Arc::new(DispatchObserver::new(dispatcher)));
        Self {
            state,
            data,
            _registration: registration,
        }
    }

    /// The agent reports the turn's usage so far on `chat`.
    fn usage(&self, chat: &str, turn: &str, usage: Value) {
        let action: StateAction =
            from(json!({ "type": "chat/usage", "turnId": turn, "usage": usage }));
        self.state.dispatch_server(chat, action).unwrap();
    }

    fn turn_usage(&self, chat: &str) -> Value {
        let usage = self
            .state
            .read(|h| h.chat(chat).and_then(|c| c.active_turn.clone()))
            .and_then(|turn| turn.usage);
        serde_json::to_value(usage).unwrap()
    }

    fn session_meta(&self) -> Value {
        let meta = self
            .state
            .read(|h| h.session(SESSION).and_then(|s| s.meta.clone()));
        serde_json::to_value(meta).unwrap()
    }

    async fn spend(&self) -> Vec<TurnSpend> {
        // The writes are queued on tasks: let them run.
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        let mut spend = Vec::new();
        self.data
            .script(|answers| spend = answers.spend.values().cloned().collect());
        spend
    }
}

#[tokio::test]
async fn a_turns_cost_adds_up_its_calls_and_reaches_the_session_and_the_ledger() {
    let world = World::new();
    // Call 1: 1M input of which 200k cached and 100k written, 10k output.
    world.usage(
        CHAT,
        "t1",
        json!({ "inputTokens": 1_000_000, "outputTokens": 10_000, "cacheReadTokens": 200_000,
                "model": "priced", "_meta": { "agenthost.cacheWriteTokens": 100_000 } }),
    );
    let first = 0.7 + 0.02 + 0.2 + 0.1;
    assert_eq!(
        world.turn_usage(CHAT)["_meta"]["agenthost.costUsd"],
        json!(first)
    );
    // Call 2 adds 1M plain input; the report carries the running totals.
    world.usage(
        CHAT,
        "t1",
        json!({ "inputTokens": 2_000_000, "outputTokens": 10_000, "cacheReadTokens": 200_000,
                "model": "priced", "_meta": { "agenthost.cacheWriteTokens": 100_000 } }),
    );
    let usage = world.turn_usage(CHAT);
    assert_eq!(usage["_meta"]["agenthost.costUsd"], json!(first + 1.0));
    assert_eq!(usage["inputTokens"], 2_000_000, "the token counts are kept");
    assert_eq!(
        world.session_meta(),
        json!({ "git": "kept", "agenthost.costUsd": first + 1.0 })
    );
    let spend = world.spend().await;
    assert_eq!(spend.len(), 1);
    assert_eq!(spend[0].cost_usd, Some(first + 1.0));
    assert_eq!(spend[0].provider, "scripted");
    assert!(!spend[0].incomplete);
}

#[tokio::test]
async fn a_repeated_report_adds_nothing() {
    let world = World::new();
    let report = json!({ "inputTokens": 1_000_000, "outputTokens": 0, "model": "priced" });
    world.usage(CHAT, "t1", report.clone());
    world.usage(CHAT, "t1", report);
    assert_eq!(
        world.turn_usage(CHAT)["_meta"]["agenthost.costUsd"],
        json!(1.0)
    );
    assert_eq!(world.session_meta()["agenthost.costUsd"], json!(1.0));
}

#[tokio::test]
async fn a_model_without_a_price_costs_unknown_never_zero() {
    let world = World::new();
    world.usage(
        CHAT,
        "t1",
        json!({ "inputTokens": 10, "outputTokens": 1, "model": "mystery" }),
    );
    assert_eq!(
        world.turn_usage(CHAT)["_meta"],
        json!({ "agenthost.costUsd": null })
    );
    assert_eq!(world.session_meta()["agenthost.costUsd"], Value::Null);
    assert_eq!(world.spend().await[0].cost_usd, None);
    // A priced call later makes the figure a lower bound.
    world.usage(
        CHAT,
        "t1",
        json!({ "inputTokens": 1_000_010, "outputTokens": 1, "model": "priced" }),
    );
    assert_eq!(
        world.turn_usage(CHAT)["_meta"],
        json!({ "agenthost.costUsd": 1.0, "agenthost.costIncomplete": true })
    );
    let spend = world.spend().await;
    assert_eq!((spend[0].cost_usd, spend[0].incomplete), (Some(1.0), true));
}

#[tokio::test]
async fn a_subagents_calls_count_for_its_parents_turn_and_once_for_the_session() {
    let world = World::new();
    let sub = ChatUri::subagent(&session(), &SafeId::new("spawn").unwrap());
    let mut sub_state = chat_state(sub.as_str(), "s1");
    sub_state.origin = Some(ChatOrigin::Tool {
        chat: CHAT.into(),
        tool_call_id: "spawn".into(),
    });
    world
        .state
        .insert_chat(&session(), &sub, sub_state)
        .unwrap();
    world.usage(
        CHAT,
        "t1",
        json!({ "inputTokens": 1_000_000, "outputTokens": 0, "model": "priced" }),
    );
    world.usage(
        sub.as_str(),
        "s1",
        json!({ "inputTokens": 0, "outputTokens": 100_000, "model": "priced" }),
    );
    assert_eq!(
        world.turn_usage(sub.as_str())["_meta"]["agenthost.costUsd"],
        json!(1.0)
    );
    let parent = world.turn_usage(CHAT);
    assert_eq!(parent["_meta"]["agenthost.costUsd"], json!(2.0));
    assert_eq!(parent["inputTokens"], 1_000_000);
    assert_eq!(world.session_meta()["agenthost.costUsd"], json!(2.0));
    // The ledger keeps each chat's own calls.
    let mut own: Vec<_> = world
        .spend()
        .await
        .into_iter()
        .map(|s| s.cost_usd.unwrap())
        .collect();
    own.sort_by(f64::total_cmp);
    assert_eq!(own, vec![1.0, 1.0]);
}

#[tokio::test]
async fn a_turns_figures_go_when_it_ends() {
    let world = World::new();
    world.usage(
        CHAT,
        "t1",
        json!({ "inputTokens": 1_000_000, "outputTokens": 0, "model": "priced" }),
    );
    let complete: StateAction =
        from(json!({ "type": "chat/turnComplete", "turnId": "t1", "duration": 1 }));
    world.state.dispatch_server(CHAT, complete).unwrap();
    assert!(
        world
            .state
            .read(|h| h.chat(CHAT).map(|c| c.turns.len() == 1))
            .unwrap()
    );
    let turns = world
        .state
        .read(|h| h.chat(CHAT).map(|c| c.turns.clone()))
        .unwrap();
    assert_eq!(
        turns[0]
            .usage
            .as_ref()
            .and_then(|u| u.meta.clone())
            .map(Value::Object),
        Some(json!({ "agenthost.costUsd": 1.0 })),
        "the finished turn keeps its cost"
    );
}
