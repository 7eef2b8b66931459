use std::sync::{Arc, Mutex};

use agenthost_dispatcher::{Dispatcher, RegistrationError};
use agenthost_protocol::ActionOrigin;
use agenthost_protocol::ahp_types::state::{RootState, SessionState};
use agenthost_services::StateHostState;
use agenthost_services::fakes::{DataCall, FakeHostState, FakeSessionData, HostStateCall};
use agenthost_services_store::StoreSessionData;
use agenthost_state::{
    ClientDispatch, EnvelopeObserver, ObservedEnvelope, StateConfig, StateManager,
};
use agenthost_store::{ChatRecord, SessionRecord, Store, TitleSource};
use agenthost_testkit::CapturedLogs;
use serde_json::{Value, json};

use super::*;

const SESSION: &str = "ahp-session:/s1";
const CHAT: &str = "ahp-chat:/c1";
const PEER: &str = "ahp-chat:/c2";
const T0: &str = "2026-01-01T00:00:00.000Z";
const REPO: &str = "file:///work/repo";
const DOCS: &str = "file:///work/docs";

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

fn chat_uri(uri: &str) -> ChatUri {
    ChatUri::parse(uri).unwrap()
}

/// A chat whose working-directory subset is `directories` (absent when `None`).
fn chat_state(uri: &str, directories: Option<&[&str]>) -> ChatState {
    let mut chat = json!({
        "resource": uri, "title": "Chat", "status": 1, "modifiedAt": T0, "turns": []
    });
    if let Some(directories) = directories {
        chat["workingDirectories"] = json!(directories);
    }
    from(chat)
}

fn config(directories: &[&str]) -> JsonObject {
    from(json!({ "workingDirectories": directories }))
}

fn directory_set(directory: &str) -> StateAction {
    from(json!({ "type": "chat/workingDirectorySet", "directory": directory }))
}

fn directory_removed(directory: &str) -> StateAction {
    from(json!({ "type": "chat/workingDirectoryRemoved", "directory": directory }))
}

fn observe(contribution: &ChatConfig, channel: &str, action: &StateAction, rejected: bool) {
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

fn context(chat: &str) -> HydrationContext {
    HydrationContext {
        session: SESSION.parse().unwrap(),
        chat: chat.parse().unwrap(),
    }
}

fn set_config(chat: &str, config: Option<JsonObject>) -> DataCall {
    DataCall::SetChatConfig {
        chat: chat_uri(chat),
        config,
    }
}

/// The fakes, with `chats` (URI, subset) in host state.
fn fakes(
    chats: &[(&str, Option<&[&str]>)],
) -> (Arc<FakeSessionData>, Arc<FakeHostState>, ChatConfig) {
    let data = Arc::new(FakeSessionData::default());
    let state = Arc::new(FakeHostState::default());
    state.script(|a| {
        for (uri, directories) in chats {
            a.chats.insert((*uri).into(), chat_state(uri, *directories));
            a.chat_sessions.insert((*uri).into(), SESSION.into());
        }
    });
    let contribution = ChatConfig::new(data.clone(), state.clone());
    (data, state, contribution)
}

// ---------------------------------------------------------------------------------------------
// The stored form.

#[test]
fn the_stored_form_round_trips_and_an_inherited_set_stores_nothing() {
    let chat = chat_state(CHAT, Some(&[REPO, DOCS]));
    let stored = config_of(&chat).unwrap();
    assert_eq!(stored, config(&[REPO, DOCS]));
    let mut restored = chat_state(CHAT, None);
    assert!(apply_config(&stored, &mut restored));
    assert_eq!(restored, chat);

    assert_eq!(config_of(&chat_state(CHAT, None)), None);
    // An empty subset (no working-directory access) is a configuration too.
    assert_eq!(config_of(&chat_state(CHAT, Some(&[]))), Some(config(&[])));
}

#[test]
fn a_malformed_stored_config_leaves_the_chat_unchanged() {
    let mut chat = chat_state(CHAT, None);
    assert!(!apply_config(
        &from(json!({ "workingDirectories": [1] })),
        &mut chat
    ));
    assert!(!apply_config(&JsonObject::new(), &mut chat));
    assert_eq!(chat, chat_state(CHAT, None));
}

// ---------------------------------------------------------------------------------------------
// With the services' fakes.

#[tokio::test]
async fn an_accepted_change_persists_the_chats_whole_current_config() {
    let (data, state, contribution) = fakes(&[(CHAT, Some(&[REPO, DOCS]))]);
    observe(&contribution, CHAT, &directory_set(DOCS), false);
    contribution.flush().await;
    assert_eq!(
        data.calls(),
        [set_config(CHAT, Some(config(&[REPO, DOCS])))]
    );
    assert_eq!(state.calls(), [HostStateCall::Chat(CHAT.into())]);

    // After a removal, the post-reduction state is written again, whole.
    state.script(|a| {
        a.chats.insert(CHAT.into(), chat_state(CHAT, Some(&[REPO])));
    });
    observe(&contribution, CHAT, &directory_removed(DOCS), false);
    contribution.flush().await;
    assert_eq!(
        data.calls(),
        [
            set_config(CHAT, Some(config(&[REPO, DOCS]))),
            set_config(CHAT, Some(config(&[REPO])))
        ]
    );
}

#[tokio::test]
async fn a_chat_without_a_subset_clears_the_stored_config() {
    // `chat/workingDirectoryRemoved` on a chat with no subset is a no-op of the reducer.
    let (data, _, contribution) = fakes(&[(CHAT, None)]);
    observe(&contribution, CHAT, &directory_removed(DOCS), false);
    contribution.flush().await;
    assert_eq!(data.calls(), [set_config(CHAT, None)]);
}

#[tokio::test]
async fn a_rejected_action_persists_nothing_and_reads_no_state() {
    let (data, state, contribution) = fakes(&[(CHAT, Some(&[REPO]))]);
    observe(
        &contribution,
        CHAT,
        &directory_set("file:///elsewhere"),
        true,
    );
    observe(&contribution, CHAT, &directory_removed(REPO), true);
    contribution.flush().await;
    assert!(data.calls().is_empty(), "{:?}", data.calls());
    assert!(state.calls().is_empty(), "{:?}", state.calls());
}

#[tokio::test]
async fn other_actions_channels_and_chats_not_in_state_persist_nothing() {
    let (data, _, contribution) = fakes(&[(CHAT, Some(&[REPO]))]);
    observe(
        &contribution,
        CHAT,
        &from(json!({ "type": "chat/isReadChanged", "isRead": true })),
        false,
    );
    observe(
        &contribution,
        SESSION,
        &from(json!({ "type": "session/workingDirectorySet", "directory": DOCS })),
        false,
    );
    observe(&contribution, SESSION, &directory_set(REPO), false);
    // A chat the host state does not hold.
    observe(&contribution, PEER, &directory_set(REPO), false);
    contribution.flush().await;
    assert!(data.calls().is_empty(), "{:?}", data.calls());
}

#[tokio::test]
async fn a_change_touches_only_its_own_chat() {
    let (data, _, contribution) = fakes(&[(CHAT, Some(&[REPO])), (PEER, Some(&[DOCS]))]);
    data.script(|a| {
        a.configs.insert(chat_uri(PEER), config(&[DOCS]));
    });
    observe(&contribution, CHAT, &directory_set(REPO), false);
    contribution.flush().await;
    assert_eq!(data.calls(), [set_config(CHAT, Some(config(&[REPO])))]);
    let mut peer = None;
    data.script(|a| peer = a.configs.get(&chat_uri(PEER)).cloned());
    assert_eq!(peer, Some(config(&[DOCS])));
}

#[test]
fn without_a_runtime_the_change_is_dropped_not_a_panic() {
    let (data, _, contribution) = fakes(&[(CHAT, Some(&[REPO]))]);
    observe(&contribution, CHAT, &directory_set(REPO), false);
    assert!(data.calls().is_empty(), "{:?}", data.calls());
    // The dropped write is not taken for an unwritten value.
    assert_eq!(contribution.unwritten.get(&chat_uri(CHAT)), None);
}

/// Records that the dispatched-action hook reached it.
struct Follower(Arc<Mutex<Vec<String>>>);

impl ChatContribution for Follower {
    fn on_did_dispatch_action(&self, action: &DispatchedAction<'_>) -> HookResult {
        self.0.lock().unwrap().push(action.channel.to_owned());
        Ok(())
    }
}

impl Contribution for Follower {
    const ID: &'static str = "follower";
    const ORDER: i32 = 700;
    const HOOKS: HookSet = HookSet::of(&[Hook::DidDispatchAction]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Ok(Self(services.get::<Mutex<Vec<String>>>()?))
    }
}

#[tokio::test]
async fn a_failing_store_is_logged_and_later_contributions_still_run() {
    let logs = CapturedLogs::default();
    let _guard = logs.capture();
    let data = Arc::new(FakeSessionData::default());
    data.script(|a| a.fail = Some("disk full".into()));
    let state = Arc::new(FakeHostState::default());
    state.script(|a| {
        a.chats.insert(CHAT.into(), chat_state(CHAT, Some(&[REPO])));
    });
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut services = ServiceRegistry::new();
    services
        .insert::<dyn SessionDataStore>(data.clone())
        .insert::<dyn HostState>(state.clone())
        .insert::<Mutex<Vec<String>>>(seen.clone());
    let dispatcher = Dispatcher::new(services);
    let _config = dispatcher.register::<ChatConfig>().unwrap();
    let _follower = dispatcher.register::<Follower>().unwrap();
    assert_eq!(
        dispatcher.order_of(Hook::DidDispatchAction),
        [(650, "chatConfig"), (700, "follower")]
    );
    assert_eq!(
        dispatcher.order_of(Hook::HydrateChat),
        [(650, "chatConfig")]
    );

    let action = directory_set(REPO);
    dispatcher.did_dispatch_action(&DispatchedAction {
        channel: CHAT,
        session: Some(&SESSION.parse().unwrap()),
        chat: Some(&CHAT.parse().unwrap()),
        action: &action,
        origin: None,
        rejection_reason: None,
    });
    assert_eq!(*seen.lock().unwrap(), [CHAT]);
    // The current-thread runtime runs the writer at these yields; the fake fails at once.
    for _ in 0..4 {
        tokio::task::yield_now().await;
    }
    assert_eq!(data.calls(), [set_config(CHAT, Some(config(&[REPO])))]);
    let text = logs.text();
    assert!(text.contains("was not persisted"), "{text}");
    assert!(text.contains("disk full"), "{text}");

    // A failing read keeps the previous value.
    let restored = dispatcher
        .hydrate_chat(&context(PEER), RestoredChat::default())
        .await;
    assert_eq!(restored, RestoredChat::default());

    // The failed write is forgotten: the next hydration reads storage again (and fails again).
    data.script(|a| a.fail = None);
    let restored = dispatcher
        .hydrate_chat(&context(CHAT), RestoredChat::default())
        .await;
    assert_eq!(restored, RestoredChat::default());
    assert_eq!(
        data.calls().last(),
        Some(&DataCall::ChatConfig {
            chat: chat_uri(CHAT)
        })
    );
}

#[tokio::test]
async fn hydration_keeps_a_restored_config_without_reading_storage() {
    let (data, _, contribution) = fakes(&[]);
    let restored = RestoredChat {
        title: Some("T".into()),
        draft: None,
        config: Some(config(&[REPO])),
    };
    let out = contribution
        .on_hydrate_chat(&context(CHAT), &restored)
        .await
        .unwrap();
    assert_eq!(out, restored);
    assert!(data.calls().is_empty());
}

#[tokio::test]
async fn hydration_reads_the_stored_config_when_none_was_restored() {
    let (data, _, contribution) = fakes(&[]);
    data.script(|a| {
        a.configs.insert(chat_uri(CHAT), config(&[DOCS]));
    });
    let restored = RestoredChat {
        title: Some("T".into()),
        ..RestoredChat::default()
    };
    let out = contribution
        .on_hydrate_chat(&context(CHAT), &restored)
        .await
        .unwrap();
    assert_eq!(
        out,
        RestoredChat {
            title: Some("T".into()),
            draft: None,
            config: Some(config(&[DOCS]))
        }
    );
    assert_eq!(
        data.calls(),
        [DataCall::ChatConfig {
            chat: chat_uri(CHAT)
        }]
    );

    // Nothing stored: nothing restored.
    let out = contribution
        .on_hydrate_chat(&context(PEER), &RestoredChat::default())
        .await
        .unwrap();
    assert_eq!(out, RestoredChat::default());
}

#[tokio::test]
async fn hydration_prefers_an_unwritten_change_over_storage() {
    let (data, state, contribution) = fakes(&[(CHAT, Some(&[REPO])), (PEER, None)]);
    data.script(|a| {
        a.configs.insert(chat_uri(CHAT), config(&[DOCS]));
        a.configs.insert(chat_uri(PEER), config(&[DOCS]));
    });
    // On the current-thread runtime the writer runs only once the test awaits the store.
    observe(&contribution, CHAT, &directory_set(REPO), false);
    observe(&contribution, PEER, &directory_removed(DOCS), false);
    let chat = contribution
        .on_hydrate_chat(&context(CHAT), &RestoredChat::default())
        .await
        .unwrap();
    let peer = contribution
        .on_hydrate_chat(&context(PEER), &RestoredChat::default())
        .await
        .unwrap();
    assert_eq!(chat.config, Some(config(&[REPO])));
    assert_eq!(peer.config, None);
    assert!(
        !data
            .calls()
            .iter()
            .any(|call| matches!(call, DataCall::ChatConfig { .. }))
    );

    // Once written, storage answers again.
    contribution.flush().await;
    state.script(|a| a.chats.clear());
    let chat = contribution
        .on_hydrate_chat(&context(CHAT), &RestoredChat::default())
        .await
        .unwrap();
    assert_eq!(chat.config, Some(config(&[REPO])));
    assert_eq!(
        data.calls().last(),
        Some(&DataCall::ChatConfig {
            chat: chat_uri(CHAT)
        })
    );
}

#[test]
fn registration_needs_session_data_and_host_state() {
    let dispatcher = Dispatcher::new(ServiceRegistry::new());
    let error = dispatcher.register::<ChatConfig>().unwrap_err();
    let RegistrationError::MissingService { id, service } = error else {
        panic!("expected a missing service, got {error:?}");
    };
    assert_eq!(id, "chatConfig");
    assert!(service.contains("SessionDataStore"), "{service}");

    let mut services = ServiceRegistry::new();
    services.insert::<dyn SessionDataStore>(Arc::new(FakeSessionData::default()));
    let error = Dispatcher::new(services)
        .register::<ChatConfig>()
        .unwrap_err();
    let RegistrationError::MissingService { service, .. } = error else {
        panic!("expected a missing service, got {error:?}");
    };
    assert!(service.contains("HostState"), "{service}");
}

// ---------------------------------------------------------------------------------------------
// Over a real state manager and the host's store: what a client dispatches, what a restart
// reads.

fn session_state() -> SessionState {
    from(json!({
        "provider": "scripted", "title": "S", "status": 1, "lifecycle": "ready",
        "activeClients": [], "chats": [], "workingDirectories": [REPO, DOCS]
    }))
}

fn chat_record(uri: &str, position: i64) -> ChatRecord {
    ChatRecord {
        uri: chat_uri(uri),
        session: SESSION.parse().unwrap(),
        position,
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
    }
}

fn stored(store: &Store) {
    store
        .put_session(&SessionRecord {
            uri: SESSION.parse().unwrap(),
            provider: "scripted".into(),
            title: "S".into(),
            title_source: TitleSource::Default,
            created_at: T0.into(),
            modified_at: T0.into(),
            working_directories: vec![REPO.into(), DOCS.into()],
            read: true,
            archived: false,
            default_chat: None,
        })
        .unwrap();
    store.put_chat(&chat_record(CHAT, 0)).unwrap();
    store.put_chat(&chat_record(PEER, 1)).unwrap();
}

/// Feeds every envelope to the contribution, as the orchestrator's bridge to the dispatcher
/// does (the test keeps the instance so it can flush its queue).
struct Direct(Arc<ChatConfig>);

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

/// A state manager and a store holding the session (working directories `REPO`, `DOCS`),
/// `CHAT` and `PEER`; the contribution over the store-backed session data and the state
/// manager, fed every envelope.
struct World {
    store: Store,
    state: Arc<StateManager>,
    contribution: Arc<ChatConfig>,
}

impl World {
    fn new() -> Self {
        let store = Store::open_in_memory().unwrap();
        stored(&store);
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
                &chat_state(CHAT, None).resource.parse().unwrap(),
                chat_state(CHAT, None),
            )
            .unwrap();
        state
            .insert_chat(
                &SESSION.parse().unwrap(),
                &chat_state(PEER, None).resource.parse().unwrap(),
                chat_state(PEER, None),
            )
            .unwrap();
        let mut services = ServiceRegistry::new();
        services
            .insert::<dyn SessionDataStore>(Arc::new(StoreSessionData::new(store.clone())))
            .insert::<dyn HostState>(Arc::new(StateHostState::new(state.clone())));
        let contribution = Arc::new(ChatConfig::from_services(&services).unwrap());
        state.add_observer(Arc::new(Direct(contribution.clone())));
        Self {
            store,
            state,
            contribution,
        }
    }

    /// A client dispatches `action` on `chat`; returns whether it was accepted.
    fn client(&self, chat: &str, action: StateAction) -> bool {
        let origin = ActionOrigin {
            client_id: "client-1".into(),
            client_seq: 1,
        };
        match self.state.dispatch_client(chat, action, origin) {
            ClientDispatch::Accepted(_) => true,
            ClientDispatch::Rejected(_) => false,
            ClientDispatch::Ignored => panic!("the chat is in state"),
        }
    }

    fn stored_config(&self, chat: &str) -> Option<JsonObject> {
        self.store.chat(&chat_uri(chat)).unwrap().unwrap().config
    }
}

#[tokio::test]
async fn over_the_store_a_chats_config_survives_a_restart() {
    let world = World::new();
    assert!(world.client(CHAT, directory_set(REPO)));
    assert!(world.client(CHAT, directory_set(DOCS)));
    assert!(world.client(CHAT, directory_removed(REPO)));
    world.contribution.flush().await;
    assert_eq!(world.stored_config(CHAT), Some(config(&[DOCS])));
    assert_eq!(world.stored_config(PEER), None);

    // A restarted host: the session service restores what the record holds (the same column),
    // so the hook passes it through; without it, the hook reads the store itself.
    let record = world.store.chat(&chat_uri(CHAT)).unwrap().unwrap();
    let restarted = ChatConfig::new(
        Arc::new(StoreSessionData::new(world.store.clone())),
        Arc::new(FakeHostState::default()),
    );
    let prefilled = RestoredChat {
        title: Some(record.title.clone()),
        draft: record.draft.clone(),
        config: record.config.clone(),
    };
    let restored = restarted
        .on_hydrate_chat(&context(CHAT), &prefilled)
        .await
        .unwrap();
    assert_eq!(restored, prefilled);
    let restored = restarted
        .on_hydrate_chat(&context(CHAT), &RestoredChat::default())
        .await
        .unwrap();
    assert_eq!(restored.config, Some(config(&[DOCS])));

    // Applied to a fresh chat state, it is the subset the chat had.
    let mut chat = chat_state(CHAT, None);
    assert!(apply_config(&restored.config.unwrap(), &mut chat));
    let live = world.state.read(|h| h.chat(CHAT).cloned()).unwrap();
    assert_eq!(chat.working_directories, live.working_directories);
    assert_eq!(chat.working_directories, Some(vec![DOCS.to_owned()]));
}

#[tokio::test]
async fn over_the_store_a_rejected_directory_is_never_written() {
    let world = World::new();
    assert!(world.client(CHAT, directory_set(REPO)));
    world.contribution.flush().await;
    assert_eq!(world.stored_config(CHAT), Some(config(&[REPO])));
    world.store.set_chat_config(&chat_uri(CHAT), None).unwrap();
    // Not one of the session's working directories: the reducers reject it.
    assert!(!world.client(CHAT, directory_set("file:///elsewhere")));
    world.contribution.flush().await;
    assert_eq!(world.stored_config(CHAT), None);
    assert_eq!(world.stored_config(PEER), None);
}

#[tokio::test]
async fn over_the_store_a_chat_the_store_does_not_hold_is_logged_not_raised() {
    let logs = CapturedLogs::default();
    let _guard = logs.capture();
    let world = World::new();
    const LOST: &str = "ahp-chat:/c3";
    world
        .state
        .insert_chat(
            &SESSION.parse().unwrap(),
            &chat_state(LOST, None).resource.parse().unwrap(),
            chat_state(LOST, None),
        )
        .unwrap();
    assert!(world.client(LOST, directory_set(REPO)));
    world.contribution.flush().await;
    assert!(logs.text().contains("was not persisted"), "{}", logs.text());
    // The queue keeps working: the next change is written.
    assert!(world.client(PEER, directory_set(DOCS)));
    world.contribution.flush().await;
    assert_eq!(world.stored_config(PEER), Some(config(&[DOCS])));
    assert_eq!(world.stored_config(CHAT), None);
}
