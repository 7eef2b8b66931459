use agenthost_dispatcher::{Dispatcher, RegistrationError};
use agenthost_protocol::{ChatUri, SessionUri};
use agenthost_services::TitleSource;
use agenthost_services::fakes::{DataCall, FakeSessionData};
use agenthost_services_store::StoreSessionData;
use agenthost_store::{ChatRecord, SessionRecord, Store};
use agenthost_testkit::CapturedLogs;
use serde_json::json;

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

fn session_delegation() -> Value {
    json!({ "sourceSession": "ahp-session:/s0", "sourceChat": "ahp-chat:/c0", "sourceTurnId": "t0" })
}

/// A message with `text` and, when given, `_meta`.
fn message(text: &str, meta: Option<Value>) -> Message {
    let mut message = json!({ "text": text, "origin": { "kind": "user" } });
    if let Some(meta) = meta {
        message["_meta"] = meta;
    }
    from(message)
}

fn delegated(text: &str, delegation: Value) -> Message {
    message(text, Some(json!({ DELEGATION_META_KEY: delegation })))
}

fn outgoing(chat: &str, turn_id: &str, message: Message) -> OutgoingTurn {
    OutgoingTurn {
        session: SESSION.parse().unwrap(),
        chat: chat.parse().unwrap(),
        message,
        turn_id: turn_id.to_owned(),
    }
}

fn turn(id: &str, message: Message) -> Turn {
    from(json!({
        "id": id, "message": message, "responseParts": [], "state": "complete"
    }))
}

fn plain_turn(id: &str) -> Turn {
    turn(id, message("hello", None))
}

async fn send(contribution: &TurnDelegation, turn: &OutgoingTurn) {
    let contributed = contribution.on_outgoing_turn(turn).await.unwrap();
    assert_eq!(
        contributed, None,
        "turnDelegation never contributes to the send"
    );
}

fn context(chat: &str) -> HydrationContext {
    HydrationContext {
        session: SESSION.parse().unwrap(),
        chat: chat.parse().unwrap(),
    }
}

fn fakes() -> (Arc<FakeSessionData>, TurnDelegation) {
    let data = Arc::new(FakeSessionData::default());
    let contribution = TurnDelegation::new(data.clone());
    (data, contribution)
}

fn stored(data: &FakeSessionData) -> Vec<(String, Value)> {
    let mut stored = Vec::new();
    data.script(|a| stored = a.delegations.get(&chat()).cloned().unwrap_or_default());
    stored
}

// Reading the delegation metadata.

#[test]
fn delegation_metadata_is_validated_and_reduced_to_its_recognised_fields() {
    let thread = json!({ "sourceThreadId": "th-1", "sourceSession": "ignored" });
    assert_eq!(
        parse_delegation(&thread),
        Some(json!({ "sourceThreadId": "th-1" }))
    );
    let full = json!({
        "sourceSession": "ahp-session:/s0", "sourceChat": "ahp-chat:/c0", "sourceTurnId": "t0",
        "messageId": "m1", "revision": 2, "extra": true
    });
    assert_eq!(
        parse_delegation(&full),
        Some(json!({
            "sourceSession": "ahp-session:/s0", "sourceChat": "ahp-chat:/c0",
            "sourceTurnId": "t0", "messageId": "m1", "revision": 2
        }))
    );
    let odd = json!({ "sourceSession": "s", "messageId": "", "revision": 0, "sourceChat": 3 });
    assert_eq!(
        parse_delegation(&odd),
        Some(json!({ "sourceSession": "s" }))
    );
    for invalid in [
        json!(null),
        json!("ahp-session:/s0"),
        json!([session_delegation()]),
        json!({}),
        json!({ "sourceThreadId": "" }),
        json!({ "sourceSession": "" , "sourceChat": "ahp-chat:/c0" }),
        json!({ "sourceSession": 1 }),
    ] {
        assert_eq!(parse_delegation(&invalid), None, "{invalid}");
    }
    assert_eq!(delegation_of(&message("hi", None)), None);
    assert_eq!(
        delegation_of(&message("hi", Some(json!({ "other": 1 })))),
        None
    );
    assert_eq!(
        delegation_of(&delegated("hi", session_delegation())),
        Some(session_delegation())
    );
}

// The outgoing turn.

#[tokio::test]
async fn a_delegated_message_is_persisted_keyed_by_turn_id() {
    let (data, contribution) = fakes();
    let delegation = json!({ "sourceThreadId": "th-1", "unknown": "dropped" });
    send(
        &contribution,
        &outgoing(CHAT, "t1", delegated("do it", delegation)),
    )
    .await;
    contribution.flush().await;
    assert_eq!(
        data.calls(),
        [DataCall::SetDelegation {
            chat: chat(),
            turn_id: "t1".into(),
            value: Some(json!({ "sourceThreadId": "th-1" })),
        }]
    );
}

#[tokio::test]
async fn messages_without_delegation_and_empty_turn_ids_write_nothing() {
    let (data, contribution) = fakes();
    for message in [
        message("typed", None),
        message("typed", Some(json!({ "other": "meta" }))),
        message("typed", Some(json!({ DELEGATION_META_KEY: {} }))),
        message(
            "typed",
            Some(json!({ DELEGATION_META_KEY: "not an object" })),
        ),
    ] {
        send(&contribution, &outgoing(CHAT, "t1", message)).await;
    }
    send(
        &contribution,
        &outgoing(CHAT, "", delegated("x", session_delegation())),
    )
    .await;
    contribution.flush().await;
    assert!(data.calls().is_empty(), "{:?}", data.calls());
}

#[tokio::test]
async fn through_the_dispatcher_the_send_is_unchanged() {
    let (data, _) = fakes();
    let dispatcher = dispatcher_over(data.clone());
    let _registration = dispatcher.register::<TurnDelegation>().unwrap();
    let message = delegated("do it", session_delegation());
    let result = dispatcher
        .outgoing_turn(&outgoing(CHAT, "t1", message.clone()))
        .await;
    assert_eq!(result.instructions, None);
    assert_eq!(result.message, message);
    // The write was queued, not awaited by the send; hydration waits for it.
    let hydrated = dispatcher
        .hydrate_turns(&context(CHAT), vec![plain_turn("t1")])
        .await;
    assert_eq!(stored(&data), [("t1".to_owned(), session_delegation())]);
    assert_eq!(hydrated[0].message.origin.kind, MessageKind::Agent);
}

#[tokio::test]
async fn hydration_waits_for_a_queued_write() {
    let (data, contribution) = fakes();
    send(
        &contribution,
        &outgoing(CHAT, "t1", delegated("x", session_delegation())),
    )
    .await;
    // No flush: the read must still see the queued write.
    let hydrated = contribution
        .on_hydrate_turns(&context(CHAT), &[plain_turn("t1")])
        .await
        .unwrap();
    assert_eq!(
        delegation_of(&hydrated[0].message),
        Some(session_delegation())
    );
    assert_eq!(
        data.calls(),
        [
            DataCall::SetDelegation {
                chat: chat(),
                turn_id: "t1".into(),
                value: Some(session_delegation()),
            },
            DataCall::Delegations { chat: chat() },
        ]
    );
}

#[tokio::test]
async fn a_later_delegation_of_the_same_turn_replaces_the_stored_one() {
    let (data, contribution) = fakes();
    for thread in ["th-1", "th-2"] {
        send(
            &contribution,
            &outgoing(
                CHAT,
                "t1",
                delegated("x", json!({ "sourceThreadId": thread })),
            ),
        )
        .await;
    }
    contribution.flush().await;
    assert_eq!(
        stored(&data),
        [("t1".to_owned(), json!({ "sourceThreadId": "th-2" }))]
    );
}

#[tokio::test]
async fn a_failing_store_write_is_logged_and_later_writes_still_run() {
    let logs = CapturedLogs::default();
    let _guard = logs.capture();
    let (data, contribution) = fakes();
    data.script(|a| a.fail = Some("disk full".into()));
    send(
        &contribution,
        &outgoing(CHAT, "t1", delegated("x", session_delegation())),
    )
    .await;
    contribution.flush().await;
    let text = logs.text();
    assert!(
        text.contains("could not persist the turn's delegation"),
        "{text}"
    );
    assert!(text.contains("disk full"), "{text}");

    data.script(|a| a.fail = None);
    send(
        &contribution,
        &outgoing(CHAT, "t2", delegated("x", session_delegation())),
    )
    .await;
    contribution.flush().await;
    assert_eq!(data.calls().len(), 2);
    assert_eq!(stored(&data), [("t2".to_owned(), session_delegation())]);
}

// Hydrating turns.

#[tokio::test]
async fn hydration_marks_stored_turns_as_delegated_by_an_agent_keeping_other_meta() {
    let (data, contribution) = fakes();
    data.script(|a| {
        a.delegations
            .entry(chat())
            .or_default()
            .push(("t2".into(), session_delegation()));
    });
    let turns = [
        plain_turn("t1"),
        turn("t2", message("seeded", Some(json!({ "keep": "me" })))),
    ];
    let hydrated = contribution
        .on_hydrate_turns(&context(CHAT), &turns)
        .await
        .unwrap();
    assert_eq!(hydrated[0], turns[0]);
    assert_eq!(hydrated[1].message.origin.kind, MessageKind::Agent);
    assert_eq!(hydrated[1].message.text, "seeded");
    assert_eq!(
        hydrated[1].message.meta,
        Some(from(
            json!({ "keep": "me", DELEGATION_META_KEY: session_delegation() })
        ))
    );
    assert_eq!(data.calls(), [DataCall::Delegations { chat: chat() }]);
}

#[tokio::test]
async fn a_restored_turn_that_already_has_a_delegation_is_left_as_it_is() {
    let (data, contribution) = fakes();
    data.script(|a| {
        a.delegations
            .entry(chat())
            .or_default()
            .push(("t1".into(), json!({ "sourceThreadId": "stored" })));
    });
    let mut own = turn("t1", delegated("x", json!({ "sourceThreadId": "own" })));
    own.message.origin.kind = MessageKind::Agent;
    let hydrated = contribution
        .on_hydrate_turns(&context(CHAT), std::slice::from_ref(&own))
        .await
        .unwrap();
    assert_eq!(hydrated, [own]);
}

#[tokio::test]
async fn malformed_stored_values_and_turns_without_a_row_pass_through() {
    let (data, contribution) = fakes();
    data.script(|a| {
        let rows = a.delegations.entry(chat()).or_default();
        rows.push(("t1".into(), json!({ "sourceSession": "" })));
        rows.push(("t2".into(), json!("ahp-session:/s0")));
        rows.push(("other".into(), session_delegation()));
    });
    let turns = [plain_turn("t1"), plain_turn("t2"), plain_turn("t3")];
    let hydrated = contribution
        .on_hydrate_turns(&context(CHAT), &turns)
        .await
        .unwrap();
    assert_eq!(hydrated, turns);
}

#[tokio::test]
async fn hydrating_no_turns_reads_nothing() {
    let (data, contribution) = fakes();
    let hydrated = contribution
        .on_hydrate_turns(&context(CHAT), &[])
        .await
        .unwrap();
    assert!(hydrated.is_empty());
    assert!(data.calls().is_empty(), "{:?}", data.calls());
}

/// A hydration stage ahead of the contribution that renames every turn's text.
struct Earlier;

impl Contribution for Earlier {
    const ID: &'static str = "earlier";
    const ORDER: i32 = 10;
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
async fn through_the_dispatcher_it_marks_the_previous_stages_output() {
    let (data, _) = fakes();
    data.script(|a| {
        a.delegations
            .entry(chat())
            .or_default()
            .push(("t1".into(), session_delegation()));
    });
    let dispatcher = dispatcher_over(data.clone());
    let _delegation = dispatcher.register::<TurnDelegation>().unwrap();
    let _earlier = dispatcher.register::<Earlier>().unwrap();
    let hydrated = dispatcher
        .hydrate_turns(&context(CHAT), vec![plain_turn("t1")])
        .await;
    assert_eq!(hydrated[0].message.text, "earlier: hello");
    assert_eq!(
        delegation_of(&hydrated[0].message),
        Some(session_delegation())
    );
}

#[tokio::test]
async fn a_failed_read_passes_the_previous_stages_turns_on() {
    let (data, _) = fakes();
    data.script(|a| a.fail = Some("locked".into()));
    let dispatcher = dispatcher_over(data.clone());
    let _delegation = dispatcher.register::<TurnDelegation>().unwrap();
    let _earlier = dispatcher.register::<Earlier>().unwrap();
    let hydrated = dispatcher
        .hydrate_turns(&context(CHAT), vec![plain_turn("t1")])
        .await;
    assert_eq!(hydrated[0].message.text, "earlier: hello");
    assert_eq!(hydrated[0].message.origin.kind, MessageKind::User);
    assert_eq!(data.calls(), [DataCall::Delegations { chat: chat() }]);
}

#[test]
fn a_missing_service_fails_the_registration_naming_it() {
    let dispatcher = Dispatcher::new(ServiceRegistry::new());
    let error = dispatcher.register::<TurnDelegation>().unwrap_err();
    let RegistrationError::MissingService { id, service } = error else {
        panic!("expected a missing service, got {error:?}");
    };
    assert_eq!(id, "turnDelegation");
    assert!(service.contains("SessionDataStore"), "{service}");
}

#[test]
fn from_services_resolves_the_session_data_store() {
    let mut services = ServiceRegistry::new();
    services.insert::<dyn SessionDataStore>(Arc::new(FakeSessionData::default()));
    assert!(TurnDelegation::from_services(&services).is_ok());
    assert!(TurnDelegation::from_services(&ServiceRegistry::new()).is_err());
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
async fn over_the_store_a_delegation_round_trips_into_restored_turns() {
    let (_store, data) = store_data();
    let dispatcher = dispatcher_over(data.clone());
    let _registration = dispatcher.register::<TurnDelegation>().unwrap();
    let delegation = json!({ "sourceThreadId": "th-1" });
    let result = dispatcher
        .outgoing_turn(&outgoing(
            CHAT,
            "t1",
            delegated("do it", delegation.clone()),
        ))
        .await;
    assert_eq!(result.instructions, None);
    dispatcher
        .outgoing_turn(&outgoing(CHAT, "t2", message("typed", None)))
        .await;

    // Restored as the provider replays them: without the mark.
    let hydrated = dispatcher
        .hydrate_turns(
            &context(CHAT),
            vec![turn("t1", message("do it", None)), plain_turn("t2")],
        )
        .await;
    assert_eq!(hydrated[0].message.origin.kind, MessageKind::Agent);
    assert_eq!(
        delegation_of(&hydrated[0].message),
        Some(delegation.clone())
    );
    assert_eq!(hydrated[1], plain_turn("t2"));
    assert_eq!(
        data.delegations(chat()).await.unwrap(),
        [("t1".to_owned(), delegation)]
    );
}

#[tokio::test]
async fn over_the_store_a_write_for_an_unknown_chat_fails_and_is_logged() {
    let logs = CapturedLogs::default();
    let _guard = logs.capture();
    let (_store, data) = store_data();
    let contribution = TurnDelegation::new(data);
    send(
        &contribution,
        &outgoing(
            "ahp-chat:/not-stored",
            "t1",
            delegated("x", session_delegation()),
        ),
    )
    .await;
    contribution.flush().await;
    let text = logs.text();
    assert!(
        text.contains("could not persist the turn's delegation"),
        "{text}"
    );
    assert!(text.contains("ahp-chat:/not-stored"), "{text}");
}
