use std::sync::Arc;

use agenthost_dispatcher::{Dispatcher, RegistrationError};
use agenthost_protocol::ActionOrigin;
use agenthost_protocol::ahp_types::state::{RootState, SessionState};
use agenthost_services::fakes::{DataCall, FakeHostState, FakeSessionData};
use agenthost_services::{StateHostState, TitleSource};
use agenthost_services_store::StoreSessionData;
use agenthost_state::{
    ClientDispatch, EnvelopeObserver, ObservedEnvelope, StateConfig, StateManager,
};
use agenthost_store::{SessionRecord, Store};
use agenthost_testkit::CapturedLogs;
use serde_json::{Value, json};

use super::*;

const SESSION: &str = "ahp-session:/s1";
const CHAT: &str = "ahp-chat:/c1";
const T0: &str = "2026-01-01T00:00:00.000Z";
const READ: u32 = SessionStatus::IsRead.0;
const ARCHIVED: u32 = SessionStatus::IsArchived.0;

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

fn session_uri() -> SessionUri {
    SessionUri::parse(SESSION).unwrap()
}

fn owner() -> DataOwner {
    DataOwner::Session(session_uri())
}

/// A session with status `1 | flags` and, when given, config `values` over a schema where
/// `mode` and `live` are session-mutable and `fixed` is not.
fn session_state(flags: u32, values: Option<Value>) -> SessionState {
    let mut session = json!({
        "provider": "scripted", "title": "S", "status": 1 | flags, "lifecycle": "ready",
        "activeClients": [], "chats": []
    });
    if let Some(values) = values {
        let property =
            |mutable: bool| json!({ "type": "string", "title": "P", "sessionMutable": mutable });
        session["config"] = json!({
            "schema": { "type": "object", "properties": {
                "mode": property(true), "live": property(true), "fixed": property(false)
            } },
            "values": values
        });
    }
    from(session)
}

fn config_changed(config: Value) -> StateAction {
    from(json!({ "type": "session/configChanged", "config": config }))
}

fn read_changed(is_read: bool) -> StateAction {
    from(json!({ "type": "session/isReadChanged", "isRead": is_read }))
}

fn archived_changed(is_archived: bool) -> StateAction {
    from(json!({ "type": "session/isArchivedChanged", "isArchived": is_archived }))
}

fn fakes(
    session: Option<SessionState>,
) -> (Arc<FakeSessionData>, Arc<FakeHostState>, SessionFlags) {
    let data = Arc::new(FakeSessionData::default());
    let state = Arc::new(FakeHostState::default());
    if let Some(session) = session {
        state.script(|a| {
            a.sessions.insert(SESSION.into(), session);
        });
    }
    let contribution = SessionFlags::new(data.clone(), state.clone());
    (data, state, contribution)
}

fn observe(contribution: &SessionFlags, channel: &str, action: &StateAction, rejected: bool) {
    contribution
        .on_did_dispatch_action(&DispatchedAction {
            channel,
            session: Some(&SESSION.parse().unwrap()),
            chat: (channel != SESSION)
                .then(|| channel.parse().unwrap())
                .as_ref(),
            action,
            origin: None,
            rejection_reason: rejected.then_some("refused"),
        })
        .unwrap();
}

fn set_config(values: Value) -> DataCall {
    DataCall::SetMeta {
        owner: owner(),
        key: CONFIG_KEY.into(),
        value: Some(values.to_string()),
    }
}

fn set_flags(read: bool, archived: bool) -> DataCall {
    DataCall::SetFlags {
        owner: owner(),
        flags: Flags { read, archived },
    }
}

// With the services' fakes.

#[tokio::test]
async fn a_config_change_persists_the_current_values_minus_transient_keys() {
    let values = json!({ "mode": "fast", "live": "tmp", "fixed": "x" });
    let (data, _, contribution) = fakes(Some(session_state(0, Some(values))));
    let contribution = contribution.with_transient_keys(["live"]);
    observe(
        &contribution,
        SESSION,
        &config_changed(json!({ "mode": "fast" })),
        false,
    );
    contribution.flush().await;
    assert_eq!(
        data.calls(),
        [set_config(json!({ "mode": "fast", "fixed": "x" }))]
    );
}

#[tokio::test]
async fn a_rejected_config_change_still_persists_the_current_values() {
    let values = json!({ "mode": "slow" });
    let (data, _, contribution) = fakes(Some(session_state(0, Some(values.clone()))));
    observe(
        &contribution,
        SESSION,
        &config_changed(json!({ "fixed": "y" })),
        true,
    );
    contribution.flush().await;
    assert_eq!(data.calls(), [set_config(values)]);
}

#[tokio::test]
async fn a_session_without_config_or_not_in_state_persists_no_config() {
    let (data, _, contribution) = fakes(Some(session_state(0, None)));
    observe(
        &contribution,
        SESSION,
        &config_changed(json!({ "mode": "a" })),
        false,
    );
    let (other_data, _, other) = fakes(None);
    observe(
        &other,
        SESSION,
        &config_changed(json!({ "mode": "a" })),
        false,
    );
    contribution.flush().await;
    other.flush().await;
    assert!(data.calls().is_empty());
    assert!(other_data.calls().is_empty());
}

#[tokio::test]
async fn a_read_change_persists_it_with_the_archived_flag_from_state() {
    let (data, _, contribution) = fakes(Some(session_state(ARCHIVED, None)));
    observe(&contribution, SESSION, &read_changed(true), false);
    contribution.flush().await;
    assert_eq!(data.calls(), [set_flags(true, true)]);
}

#[tokio::test]
async fn archiving_persists_the_flag_and_leaves_the_auto_archive_time() {
    let (data, _, contribution) = fakes(Some(session_state(READ | ARCHIVED, None)));
    data.script(|a| {
        a.meta
            .entry(owner())
            .or_default()
            .insert(AUTO_ARCHIVE_KEY.into(), T0.into());
    });
    observe(&contribution, SESSION, &archived_changed(true), false);
    contribution.flush().await;
    assert_eq!(data.calls(), [set_flags(true, true)]);
}

#[tokio::test]
async fn unarchiving_clears_a_stored_auto_archive_time() {
    let (data, _, contribution) = fakes(Some(session_state(0, None)));
    data.script(|a| {
        a.meta
            .entry(owner())
            .or_default()
            .insert(AUTO_ARCHIVE_KEY.into(), T0.into());
    });
    observe(&contribution, SESSION, &archived_changed(false), false);
    contribution.flush().await;
    assert_eq!(
        data.calls(),
        [
            set_flags(false, false),
            DataCall::Meta {
                owner: owner(),
                key: AUTO_ARCHIVE_KEY.into()
            },
            DataCall::SetMeta {
                owner: owner(),
                key: AUTO_ARCHIVE_KEY.into(),
                value: None
            },
        ]
    );
}

#[tokio::test]
async fn unarchiving_without_an_auto_archive_time_deletes_nothing() {
    let (data, _, contribution) = fakes(Some(session_state(READ, None)));
    observe(&contribution, SESSION, &archived_changed(false), false);
    contribution.flush().await;
    assert_eq!(
        data.calls(),
        [
            set_flags(true, false),
            DataCall::Meta {
                owner: owner(),
                key: AUTO_ARCHIVE_KEY.into()
            },
        ]
    );
}

#[tokio::test]
async fn a_session_not_in_state_keeps_its_other_stored_flag() {
    let (data, _, contribution) = fakes(None);
    data.script(|a| {
        a.flags.insert(
            owner(),
            Flags {
                read: false,
                archived: true,
            },
        );
    });
    observe(&contribution, SESSION, &read_changed(true), false);
    contribution.flush().await;
    assert_eq!(
        data.calls(),
        [DataCall::Flags { owner: owner() }, set_flags(true, true)]
    );
}

#[tokio::test]
async fn rejected_flag_changes_other_channels_and_other_actions_persist_nothing() {
    let (data, state, contribution) = fakes(Some(session_state(0, Some(json!({})))));
    observe(&contribution, SESSION, &read_changed(true), true);
    observe(&contribution, SESSION, &archived_changed(true), true);
    observe(&contribution, CHAT, &read_changed(true), false);
    observe(&contribution, CHAT, &config_changed(json!({})), false);
    observe(
        &contribution,
        CHAT,
        &from(json!({ "type": "chat/isReadChanged", "isRead": true })),
        false,
    );
    observe(
        &contribution,
        SESSION,
        &from(json!({ "type": "session/titleChanged", "title": "T" })),
        false,
    );
    contribution.flush().await;
    assert!(data.calls().is_empty(), "{:?}", data.calls());
    assert!(state.calls().is_empty(), "{:?}", state.calls());
}

#[tokio::test]
async fn a_failing_store_is_logged_and_the_next_write_still_runs() {
    let logs = CapturedLogs::default();
    let _guard = logs.capture();
    let (data, _, contribution) = fakes(Some(session_state(0, Some(json!({ "mode": "a" })))));
    data.script(|a| a.fail = Some("disk full".into()));
    observe(&contribution, SESSION, &read_changed(true), false);
    observe(&contribution, SESSION, &config_changed(json!({})), false);
    contribution.flush().await;
    let text = logs.text();
    assert!(
        text.contains("could not persist the session's flags"),
        "{text}"
    );
    assert!(
        text.contains("could not persist the config values"),
        "{text}"
    );
    assert!(text.contains("disk full"), "{text}");
    assert_eq!(data.calls().len(), 2);

    data.script(|a| a.fail = None);
    observe(&contribution, SESSION, &read_changed(false), false);
    contribution.flush().await;
    let mut stored = None;
    data.script(|a| stored = a.flags.get(&owner()).copied());
    assert_eq!(
        stored,
        Some(Flags {
            read: false,
            archived: false
        })
    );
}

#[test]
fn a_missing_service_fails_the_registration_naming_it() {
    let dispatcher = Dispatcher::new(ServiceRegistry::new());
    let error = dispatcher.register::<SessionFlags>().unwrap_err();
    let RegistrationError::MissingService { id, service } = error else {
        panic!("expected a missing service, got {error:?}");
    };
    assert_eq!(id, "sessionFlags");
    assert!(service.contains("SessionDataStore"), "{service}");
}

// Over a real state manager and the host's store.

struct World {
    state: Arc<StateManager>,
    store: Store,
    contribution: Arc<SessionFlags>,
}

impl World {
    /// A stored session (read, not archived), live with config `{mode: "a", fixed: "x"}`.
    fn new() -> Self {
        let store = Store::open_in_memory().unwrap();
        store
            .put_session(&SessionRecord {
                uri: session_uri(),
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
        let state = Arc::new(StateManager::new(
            from::<RootState>(json!({ "agents": [] })),
            StateConfig::default(),
        ));
        state
            .insert_session(
                &SESSION.parse().unwrap(),
                session_state(READ, Some(json!({ "mode": "a", "fixed": "x" }))),
            )
            .unwrap();
        let contribution = Arc::new(SessionFlags::new(
            Arc::new(StoreSessionData::new(store.clone())),
            Arc::new(StateHostState::new(state.clone())),
        ));
        state.add_observer(Arc::new(Direct(contribution.clone())));
        Self {
            state,
            store,
            contribution,
        }
    }

    fn client(&self, action: StateAction) -> bool {
        let origin = ActionOrigin {
            client_id: "client-1".into(),
            client_seq: 1,
        };
        match self.state.dispatch_client(SESSION, action, origin) {
            ClientDispatch::Accepted(_) => true,
            ClientDispatch::Rejected(_) => false,
            ClientDispatch::Ignored => panic!("the session is in state"),
        }
    }

    fn stored_flags(&self) -> (bool, bool) {
        let record = self.store.session(&session_uri()).unwrap().unwrap();
        (record.read, record.archived)
    }

    fn stored_config(&self) -> Option<Value> {
        self.store
            .meta(
                agenthost_store::MetaOwner::Session(&session_uri()),
                CONFIG_KEY,
            )
            .unwrap()
            .map(|v| serde_json::from_str(&v).unwrap())
    }
}

/// Feeds every envelope to the contribution, as the orchestrator's bridge to the dispatcher
/// does (the test keeps the instance so it can flush its queue).
struct Direct(Arc<SessionFlags>);

impl EnvelopeObserver for Direct {
    fn on_envelope(&self, observed: &ObservedEnvelope<'_>) {
        let envelope = observed.envelope;
        self.0
            .on_did_dispatch_action(&DispatchedAction {
                channel: &envelope.channel,
                session: observed.session,
                chat: observed.chat,
                action: &envelope.action,
                origin: envelope.origin.as_ref(),
                rejection_reason: envelope.rejection_reason.as_deref(),
            })
            .unwrap();
    }
}

#[tokio::test]
async fn over_the_store_flags_land_in_the_columns_the_service_restores_from() {
    let world = World::new();
    assert!(world.client(read_changed(false)));
    world.contribution.flush().await;
    assert_eq!(world.stored_flags(), (false, false));

    assert!(world.client(archived_changed(true)));
    world.contribution.flush().await;
    assert_eq!(world.stored_flags(), (false, true));

    world
        .store
        .set_meta(
            agenthost_store::MetaOwner::Session(&session_uri()),
            AUTO_ARCHIVE_KEY,
            Some(T0),
        )
        .unwrap();
    assert!(world.client(archived_changed(false)));
    world.contribution.flush().await;
    assert_eq!(world.stored_flags(), (false, false));
    assert_eq!(
        world
            .store
            .meta(
                agenthost_store::MetaOwner::Session(&session_uri()),
                AUTO_ARCHIVE_KEY
            )
            .unwrap(),
        None
    );
}

#[tokio::test]
async fn over_the_store_config_values_are_persisted_even_for_a_rejected_change() {
    let world = World::new();
    assert!(world.client(config_changed(json!({ "mode": "b" }))));
    world.contribution.flush().await;
    assert_eq!(
        world.stored_config(),
        Some(json!({ "mode": "b", "fixed": "x" }))
    );

    // `fixed` is not session-mutable: rejected, and the current values are written again.
    world
        .store
        .set_meta(
            agenthost_store::MetaOwner::Session(&session_uri()),
            CONFIG_KEY,
            None,
        )
        .unwrap();
    assert!(!world.client(config_changed(json!({ "fixed": "y" }))));
    world.contribution.flush().await;
    assert_eq!(
        world.stored_config(),
        Some(json!({ "mode": "b", "fixed": "x" }))
    );
}

#[tokio::test]
async fn over_the_store_a_rejected_read_change_is_not_persisted() {
    let world = World::new();
    world
        .contribution
        .on_did_dispatch_action(&DispatchedAction {
            channel: SESSION,
            session: Some(&SESSION.parse().unwrap()),
            chat: None,
            action: &read_changed(false),
            origin: None,
            rejection_reason: Some("refused"),
        })
        .unwrap();
    world.contribution.flush().await;
    assert_eq!(world.stored_flags(), (true, false));
}
