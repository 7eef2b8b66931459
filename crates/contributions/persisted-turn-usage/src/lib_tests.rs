use std::sync::Arc;

use agenthost_dispatcher::{Dispatcher, RegistrationError};
use agenthost_protocol::SessionUri;
use agenthost_services::fakes::{DataCall, FakeSessionData};
use agenthost_services::{DataOwner, TitleSource};
use agenthost_services_store::StoreSessionData;
use agenthost_store::{ChatRecord, SessionRecord, Store};
use agenthost_testkit::CapturedLogs;
use serde_json::{Value, json};

use super::*;

const SESSION: &str = "ahp-session:/s1";
const CHAT: &str = "ahp-chat:/c1";
const T0: &str = "2026-01-01T00:00:00.000Z";

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

fn chat() -> ChatUri {
    ChatUri::parse(CHAT).unwrap()
}

fn subagent_chat() -> String {
    let session = SessionUri::parse(SESSION).unwrap();
    ChatUri::subagent(&session, &"call-1".try_into().unwrap()).into_string()
}

fn usage(value: Value) -> UsageInfo {
    from(value)
}

fn usage_action(turn: &str, usage: Value) -> StateAction {
    from(json!({ "type": "chat/usage", "turnId": turn, "usage": usage }))
}

fn turn(id: &str, usage: Option<Value>) -> Turn {
    let mut turn = json!({
        "id": id, "message": { "text": "hello", "origin": { "kind": "user" } },
        "responseParts": [], "state": "complete"
    });
    if let Some(usage) = usage {
        turn["usage"] = usage;
    }
    from(turn)
}

fn observe(contribution: &PersistedTurnUsage, channel: &str, action: &StateAction) {
    observe_with(contribution, channel, action, None);
}

fn observe_with(
    contribution: &PersistedTurnUsage,
    channel: &str,
    action: &StateAction,
    rejection_reason: Option<&str>,
) {
    contribution
        .on_did_dispatch_action(&DispatchedAction {
            channel,
            session: Some(&SESSION.parse().unwrap()),
            chat: (channel != SESSION)
                .then(|| channel.parse().unwrap())
                .as_ref(),
            action,
            origin: None,
            rejection_reason,
        })
        .unwrap();
}

fn context(chat: &str) -> HydrationContext {
    HydrationContext {
        session: SESSION.parse().unwrap(),
        chat: chat.parse().unwrap(),
    }
}

fn fakes() -> (Arc<FakeSessionData>, PersistedTurnUsage) {
    let data = Arc::new(FakeSessionData::default());
    let contribution = PersistedTurnUsage::new(data.clone());
    (data, contribution)
}

// Observing `chat/usage`.

#[tokio::test]
async fn usage_on_a_chat_is_persisted_keyed_by_turn_id() {
    let (data, contribution) = fakes();
    let reported = json!({ "inputTokens": 10, "outputTokens": 2, "model": "m" });
    observe(&contribution, CHAT, &usage_action("t1", reported.clone()));
    contribution.flush().await;
    assert_eq!(
        data.calls(),
        [DataCall::SetTurnUsage {
            chat: chat(),
            turn_id: "t1".into(),
            usage: Some(usage(reported)),
        }]
    );
}

#[tokio::test]
async fn the_latest_report_of_a_turn_wins() {
    let (data, contribution) = fakes();
    for tokens in [1, 2, 3] {
        observe(
            &contribution,
            CHAT,
            &usage_action("t1", json!({ "inputTokens": tokens })),
        );
    }
    contribution.flush().await;
    assert_eq!(data.calls().len(), 3);
    let mut stored = None;
    data.script(|a| stored = a.usage.get(&chat()).and_then(|m| m.get("t1")).cloned());
    assert_eq!(stored, Some(usage(json!({ "inputTokens": 3 }))));
}

#[tokio::test]
async fn subagent_chats_empty_turn_ids_rejections_and_other_actions_are_skipped() {
    let (data, contribution) = fakes();
    let reported = json!({ "inputTokens": 1 });
    observe(
        &contribution,
        &subagent_chat(),
        &usage_action("t1", reported.clone()),
    );
    observe(&contribution, CHAT, &usage_action("", reported.clone()));
    observe(
        &contribution,
        SESSION,
        &usage_action("t1", reported.clone()),
    );
    observe_with(
        &contribution,
        CHAT,
        &usage_action("t1", reported),
        Some("server-only action"),
    );
    observe(
        &contribution,
        CHAT,
        &from(json!({ "type": "chat/turnComplete", "turnId": "t1", "duration": 1 })),
    );
    contribution.flush().await;
    assert!(data.calls().is_empty(), "{:?}", data.calls());
}

#[tokio::test]
async fn a_failing_store_write_is_logged_and_later_writes_still_run() {
    let logs = CapturedLogs::default();
    let _guard = logs.capture();
    let (data, contribution) = fakes();
    data.script(|a| a.fail = Some("disk full".into()));
    observe(
        &contribution,
        CHAT,
        &usage_action("t1", json!({ "inputTokens": 1 })),
    );
    contribution.flush().await;
    let text = logs.text();
    assert!(
        text.contains("could not persist the turn's usage"),
        "{text}"
    );
    assert!(text.contains("disk full"), "{text}");

    data.script(|a| a.fail = None);
    observe(
        &contribution,
        CHAT,
        &usage_action("t2", json!({ "inputTokens": 2 })),
    );
    contribution.flush().await;
    assert_eq!(data.calls().len(), 2);
    let mut stored = None;
    data.script(|a| stored = a.usage.get(&chat()).map(|m| m.len()));
    assert_eq!(stored, Some(1));
}

#[test]
fn outside_a_runtime_a_write_is_dropped_without_panicking() {
    let (store, data) = store_data();
    let contribution = PersistedTurnUsage::new(data.clone());
    observe(
        &contribution,
        CHAT,
        &usage_action("t1", json!({ "inputTokens": 1 })),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        contribution.flush().await;
        assert!(data.turn_usages(chat()).await.unwrap().is_empty());
    });
    drop(store);
}

// Hydrating turns.

#[tokio::test]
async fn hydration_fills_missing_usage_and_merges_meta_with_stored_values_winning() {
    let (data, contribution) = fakes();
    data.script(|a| {
        let rows = a.usage.entry(chat()).or_default();
        rows.insert(
            "t1".into(),
            usage(json!({ "inputTokens": 10, "model": "m" })),
        );
        rows.insert(
            "t2".into(),
            usage(json!({
                "inputTokens": 99, "outputTokens": 5, "cacheReadTokens": 3,
                "_meta": { "a": "stored", "b": "stored" }
            })),
        );
    });
    let turns = [
        turn("t1", None),
        turn(
            "t2",
            Some(json!({ "inputTokens": 20, "_meta": { "a": "turn", "c": "turn" } })),
        ),
        turn("t3", None),
    ];
    let hydrated = contribution
        .on_hydrate_turns(&context(CHAT), &turns)
        .await
        .unwrap();
    assert_eq!(
        hydrated[0].usage,
        Some(usage(json!({ "inputTokens": 10, "model": "m" })))
    );
    assert_eq!(
        hydrated[1].usage,
        Some(usage(json!({
            "inputTokens": 20, "outputTokens": 5, "cacheReadTokens": 3,
            "_meta": { "a": "stored", "b": "stored", "c": "turn" }
        })))
    );
    assert_eq!(hydrated[2], turns[2]);
    assert_eq!(data.calls(), [DataCall::TurnUsages { chat: chat() }]);
}

#[tokio::test]
async fn hydrating_a_subagent_chat_or_no_turns_reads_nothing() {
    let (data, contribution) = fakes();
    let turns = [turn("t1", None)];
    let hydrated = contribution
        .on_hydrate_turns(&context(&subagent_chat()), &turns)
        .await
        .unwrap();
    assert_eq!(hydrated, turns);
    let hydrated = contribution
        .on_hydrate_turns(&context(CHAT), &[])
        .await
        .unwrap();
    assert!(hydrated.is_empty());
    assert!(data.calls().is_empty());
}

/// A hydration stage ahead of the contribution that renames every turn's text.
struct Earlier;

impl Contribution for Earlier {
    const ID: &'static str = "earlier";
    const ORDER: i32 = 50;
    const HOOKS: HookSet = HookSet::of(&[Hook::HydrateTurns]);

    fn create(_: ContributionContext, _: &ServiceRegistry) -> Result<Self, MissingService> {
        Ok(Self)
    }
}

impl ChatContribution for Earlier {
    fn on_hydrate_turns<'a>(
        &'a self,
        _context: &'a HydrationContext,
        turns: &'a [Turn],
    ) -> HookFuture<'a, Vec<Turn>> {
        Box::pin(async move {
            Ok(turns
                .iter()
                .cloned()
                .map(|mut t| {
                    t.message.text = format!("earlier: {}", t.message.text);
                    t
                })
                .collect())
        })
    }
}

fn dispatcher_over(data: Arc<dyn SessionDataStore>) -> Dispatcher {
    let mut services = ServiceRegistry::new();
    services.insert::<dyn SessionDataStore>(data);
    Dispatcher::new(services)
}

#[tokio::test]
async fn through_the_dispatcher_it_fills_the_previous_stages_output() {
    let (data, _) = fakes();
    data.script(|a| {
        a.usage
            .entry(chat())
            .or_default()
            .insert("t1".into(), usage(json!({ "inputTokens": 7 })));
    });
    let dispatcher = dispatcher_over(data.clone());
    let _usage = dispatcher.register::<PersistedTurnUsage>().unwrap();
    let _earlier = dispatcher.register::<Earlier>().unwrap();
    let hydrated = dispatcher
        .hydrate_turns(&context(CHAT), vec![turn("t1", None)])
        .await;
    assert_eq!(hydrated[0].message.text, "earlier: hello");
    assert_eq!(hydrated[0].usage, Some(usage(json!({ "inputTokens": 7 }))));
}

#[tokio::test]
async fn a_failed_read_passes_the_previous_stages_turns_on() {
    let (data, _) = fakes();
    data.script(|a| a.fail = Some("locked".into()));
    let dispatcher = dispatcher_over(data.clone());
    let _usage = dispatcher.register::<PersistedTurnUsage>().unwrap();
    let _earlier = dispatcher.register::<Earlier>().unwrap();
    let hydrated = dispatcher
        .hydrate_turns(&context(CHAT), vec![turn("t1", None)])
        .await;
    assert_eq!(hydrated[0].message.text, "earlier: hello");
    assert_eq!(hydrated[0].usage, None);
    assert_eq!(data.calls(), [DataCall::TurnUsages { chat: chat() }]);
}

#[test]
fn a_missing_service_fails_the_registration_naming_it() {
    let dispatcher = Dispatcher::new(ServiceRegistry::new());
    let error = dispatcher.register::<PersistedTurnUsage>().unwrap_err();
    let RegistrationError::MissingService { id, service } = error else {
        panic!("expected a missing service, got {error:?}");
    };
    assert_eq!(id, "persistedTurnUsage");
    assert!(service.contains("SessionDataStore"), "{service}");
}

// Over the host's store.

fn store_data() -> (Store, Arc<StoreSessionData>) {
    let store = Store::open_in_memory().unwrap();
    let session = SessionUri::parse(SESSION).unwrap();
    store
        .put_session(&SessionRecord {
            uri: session.clone(),
            provider: "scripted".into(),
            title: "S".into(),
            title_source: TitleSource::Default,
            created_at: T0.into(),
            modified_at: T0.into(),
            working_directories: vec![],
            read: true,
            archived: false,
            default_chat: None,
        })
        .unwrap();
    store
        .put_chat(&ChatRecord {
            uri: chat(),
            session,
            position: 0,
            title: "Chat".into(),
            title_source: TitleSource::Default,
            modified_at: T0.into(),
            origin: None,
            interactivity: None,
            read: true,
            archived: false,
            draft: None,
            config: None,
            resume_handle: None,
            subagent: false,
        })
        .unwrap();
    let data = Arc::new(StoreSessionData::new(store.clone()));
    (store, data)
}

#[tokio::test]
async fn over_the_store_usage_round_trips_into_restored_turns() {
    let (_store, data) = store_data();
    let dispatcher = dispatcher_over(data.clone());
    let _registration = dispatcher.register::<PersistedTurnUsage>().unwrap();
    let contribution = PersistedTurnUsage::new(data.clone());
    observe(
        &contribution,
        CHAT,
        &usage_action("t1", json!({ "inputTokens": 1, "model": "m" })),
    );
    observe(
        &contribution,
        CHAT,
        &usage_action("t1", json!({ "inputTokens": 4, "model": "m" })),
    );
    contribution.flush().await;
    // A malformed row is skipped, not fatal.
    data.set_meta(
        DataOwner::Chat(chat()),
        "turnUsage/t2",
        Some("{not json".into()),
    )
    .await
    .unwrap();

    let hydrated = dispatcher
        .hydrate_turns(&context(CHAT), vec![turn("t1", None), turn("t2", None)])
        .await;
    assert_eq!(
        hydrated[0].usage,
        Some(usage(json!({ "inputTokens": 4, "model": "m" })))
    );
    assert_eq!(hydrated[1].usage, None);
}

#[tokio::test]
async fn over_the_store_a_write_for_an_unknown_chat_fails_and_is_logged() {
    let logs = CapturedLogs::default();
    let _guard = logs.capture();
    let (_store, data) = store_data();
    let contribution = PersistedTurnUsage::new(data);
    observe(
        &contribution,
        "ahp-chat:/not-stored",
        &usage_action("t1", json!({ "inputTokens": 1 })),
    );
    contribution.flush().await;
    let text = logs.text();
    assert!(
        text.contains("could not persist the turn's usage"),
        "{text}"
    );
    assert!(text.contains("ahp-chat:/not-stored"), "{text}");
}
