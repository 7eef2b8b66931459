use std::sync::{Arc, Mutex};

use agenthost_dispatcher::{ClientContext, Dispatcher, LaunchKind, RegistrationError};
use agenthost_protocol::ActionOrigin;
use agenthost_protocol::ahp_types::state::{ChatState, RootState, SessionState};
use agenthost_services::fakes::{DataCall, FakeSessionData};
use agenthost_services_store::StoreSessionData;
use agenthost_state::{ClientDispatch, StateConfig, StateManager};
use agenthost_store::{ChatRecord, SessionRecord, Store, TitleSource};
use serde_json::{Value, json};

use super::*;

const SESSION: &str = "ahp-session:/s1";
const CHAT: &str = "ahp-chat:/c1";
const PEER: &str = "ahp-chat:/c2";
const T0: &str = "2026-01-01T00:00:00.000Z";

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

fn chat_uri(uri: &str) -> ChatUri {
    ChatUri::parse(uri).unwrap()
}

fn message(text: &str) -> Message {
    from(json!({ "text": text, "origin": { "kind": "user" } }))
}

fn draft_changed(draft: Option<Message>) -> StateAction {
    StateAction::ChatDraftChanged(agenthost_protocol::actions::ChatDraftChangedAction { draft })
}

fn client_context() -> ClientContext {
    ClientContext::unknown(LaunchKind::Serve)
}

/// Calls the hook as the orchestrator does for an accepted client action.
fn apply(hook: &dyn ChatContribution, channel: &str, action: &StateAction) {
    hook.on_did_apply_client_action(&AppliedClientAction {
        channel,
        session: Some(&SESSION.parse().unwrap()),
        chat: (channel != SESSION)
            .then(|| channel.parse().unwrap())
            .as_ref(),
        action,
        client_id: Some("client-1"),
        client_context: &client_context(),
    })
    .unwrap();
}

fn context(chat: &str) -> HydrationContext {
    HydrationContext {
        session: SESSION.parse().unwrap(),
        chat: chat.parse().unwrap(),
    }
}

fn set_draft(chat: &str, draft: Option<Message>) -> DataCall {
    DataCall::SetDraft {
        chat: chat_uri(chat),
        draft,
    }
}

fn fakes() -> (Arc<FakeSessionData>, ChatDraft) {
    let data = Arc::new(FakeSessionData::default());
    let contribution = ChatDraft::new(data.clone());
    (data, contribution)
}

// ---------------------------------------------------------------------------------------------
// With the services' fakes.

#[tokio::test]
async fn a_draft_change_is_persisted_and_a_cleared_draft_deleted() {
    let (data, contribution) = fakes();
    apply(
        &contribution,
        CHAT,
        &draft_changed(Some(message("half a thought"))),
    );
    contribution.flushed().await;
    apply(&contribution, CHAT, &draft_changed(None));
    contribution.flushed().await;
    assert_eq!(
        data.calls(),
        [
            set_draft(CHAT, Some(message("half a thought"))),
            set_draft(CHAT, None)
        ]
    );
}

#[tokio::test]
async fn changes_waiting_to_be_written_collapse_to_the_latest_per_chat_in_order() {
    let (data, contribution) = fakes();
    // On the current-thread runtime the writer runs only once the test awaits.
    apply(&contribution, CHAT, &draft_changed(Some(message("a"))));
    apply(&contribution, PEER, &draft_changed(Some(message("p"))));
    apply(&contribution, CHAT, &draft_changed(Some(message("ab"))));
    apply(&contribution, CHAT, &draft_changed(None));
    contribution.flushed().await;
    assert_eq!(
        data.calls(),
        [set_draft(CHAT, None), set_draft(PEER, Some(message("p")))]
    );
}

#[tokio::test]
async fn other_actions_and_non_chat_channels_are_ignored() {
    let (data, contribution) = fakes();
    let rename: StateAction = from(json!({ "type": "session/titleChanged", "title": "T" }));
    apply(&contribution, CHAT, &rename);
    apply(&contribution, SESSION, &draft_changed(Some(message("x"))));
    contribution.flushed().await;
    assert!(data.calls().is_empty());
}

#[test]
fn without_a_runtime_the_change_is_dropped_not_a_panic() {
    let (data, contribution) = fakes();
    apply(&contribution, CHAT, &draft_changed(Some(message("x"))));
    assert!(data.calls().is_empty());
}

/// Records that the applied-client-action hook reached it.
struct Follower(Arc<Mutex<Vec<String>>>);

impl ChatContribution for Follower {
    fn on_did_apply_client_action(&self, action: &AppliedClientAction<'_>) -> HookResult {
        self.0.lock().unwrap().push(action.channel.to_owned());
        Ok(())
    }
}

impl Contribution for Follower {
    const ID: &'static str = "follower";
    const ORDER: i32 = 700;
    const HOOKS: HookSet = HookSet::of(&[Hook::DidApplyClientAction]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Ok(Self(services.get::<Mutex<Vec<String>>>()?))
    }
}

#[tokio::test]
async fn a_failing_store_is_logged_and_later_contributions_still_run() {
    let data = Arc::new(FakeSessionData::default());
    data.script(|a| a.fail = Some("disk full".into()));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut services = ServiceRegistry::new();
    services
        .insert::<dyn SessionDataStore>(data.clone())
        .insert::<Mutex<Vec<String>>>(seen.clone());
    let dispatcher = Dispatcher::new(services);
    let _draft = dispatcher.register::<ChatDraft>().unwrap();
    let _follower = dispatcher.register::<Follower>().unwrap();
    assert_eq!(
        dispatcher.order_of(Hook::DidApplyClientAction),
        [(600, "chatDraft"), (700, "follower")]
    );
    assert_eq!(dispatcher.order_of(Hook::HydrateChat), [(600, "chatDraft")]);

    let action = draft_changed(Some(message("x")));
    dispatcher.did_apply_client_action(&AppliedClientAction {
        channel: CHAT,
        session: Some(&SESSION.parse().unwrap()),
        chat: Some(&CHAT.parse().unwrap()),
        action: &action,
        client_id: None,
        client_context: &client_context(),
    });
    assert_eq!(*seen.lock().unwrap(), [CHAT]);
    // The current-thread runtime runs the writer at this yield; the fake fails at once.
    tokio::task::yield_now().await;
    assert_eq!(data.calls(), [set_draft(CHAT, Some(message("x")))]);

    // A failing read keeps the previous value.
    let restored = dispatcher
        .hydrate_chat(&context(PEER), RestoredChat::default())
        .await;
    assert_eq!(restored, RestoredChat::default());
}

#[tokio::test]
async fn hydration_keeps_a_restored_draft_without_reading_storage() {
    let (data, contribution) = fakes();
    let restored = RestoredChat {
        title: Some("T".into()),
        draft: Some(message("restored")),
        config: None,
    };
    let out = contribution
        .on_hydrate_chat(&context(CHAT), &restored)
        .await
        .unwrap();
    assert_eq!(out, restored);
    assert!(data.calls().is_empty());
}

#[tokio::test]
async fn hydration_reads_the_stored_draft_when_none_was_restored() {
    let (data, contribution) = fakes();
    data.script(|a| {
        a.drafts.insert(chat_uri(CHAT), message("stored"));
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
            draft: Some(message("stored")),
            config: None
        }
    );
    assert_eq!(
        data.calls(),
        [DataCall::Draft {
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
    let (data, contribution) = fakes();
    data.script(|a| {
        a.drafts.insert(chat_uri(CHAT), message("old"));
        a.drafts.insert(chat_uri(PEER), message("old"));
    });
    apply(&contribution, CHAT, &draft_changed(Some(message("new"))));
    apply(&contribution, PEER, &draft_changed(None));
    let chat = contribution
        .on_hydrate_chat(&context(CHAT), &RestoredChat::default())
        .await
        .unwrap();
    let peer = contribution
        .on_hydrate_chat(&context(PEER), &RestoredChat::default())
        .await
        .unwrap();
    assert_eq!(chat.draft, Some(message("new")));
    assert_eq!(peer.draft, None);
    assert!(
        !data
            .calls()
            .iter()
            .any(|call| matches!(call, DataCall::Draft { .. }))
    );
    contribution.flushed().await;
}

#[test]
fn registration_needs_session_data() {
    let dispatcher = Dispatcher::new(ServiceRegistry::new());
    let error = dispatcher.register::<ChatDraft>().unwrap_err();
    let RegistrationError::MissingService { id, service } = error else {
        panic!("expected a missing service, got {error:?}");
    };
    assert_eq!(id, "chatDraft");
    assert!(service.contains("SessionDataStore"), "{service}");
}

// ---------------------------------------------------------------------------------------------
// Over the real store and a real state manager: what a client dispatches, what a restart reads.

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

fn stored(store: &Store) {
    let session: agenthost_protocol::SessionUri = SESSION.parse().unwrap();
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
            uri: chat_uri(CHAT),
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
}

/// A state manager and a store holding the session and `CHAT`; the contribution over the
/// store-backed session data, called as the orchestrator calls it.
struct World {
    state: StateManager,
    store: Store,
    contribution: ChatDraft,
}

impl World {
    fn new() -> Self {
        let state = StateManager::new(
            from::<RootState>(json!({ "agents": [] })),
            StateConfig::default(),
        );
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
        let store = Store::open_in_memory().unwrap();
        stored(&store);
        let mut services = ServiceRegistry::new();
        services.insert::<dyn SessionDataStore>(Arc::new(StoreSessionData::new(store.clone())));
        let contribution = ChatDraft::from_services(&services).unwrap();
        Self {
            state,
            store,
            contribution,
        }
    }

    /// A client dispatches `action` on `chat`; when accepted, the applied-client-action hook
    /// runs. Returns whether it was accepted.
    fn client(&self, chat: &str, action: StateAction) -> bool {
        let origin = ActionOrigin {
            client_id: "client-1".into(),
            client_seq: 1,
        };
        let ClientDispatch::Accepted(envelope) = self.state.dispatch_client(chat, action, origin)
        else {
            return false;
        };
        apply(&self.contribution, chat, &envelope.action);
        true
    }

    fn stored_draft(&self) -> Option<Message> {
        self.store.chat(&chat_uri(CHAT)).unwrap().unwrap().draft
    }

    async fn hydrated(&self) -> RestoredChat {
        self.contribution
            .on_hydrate_chat(&context(CHAT), &RestoredChat::default())
            .await
            .unwrap()
    }
}

#[tokio::test]
async fn over_the_store_a_client_draft_survives_a_restart_and_a_clear_deletes_it() {
    let world = World::new();
    assert!(world.client(CHAT, draft_changed(Some(message("keep me")))));
    world.contribution.flushed().await;
    assert_eq!(world.stored_draft(), Some(message("keep me")));

    // A fresh contribution (a restarted host) restores it from the store.
    let restarted = ChatDraft::new(Arc::new(StoreSessionData::new(world.store.clone())));
    let restored = restarted
        .on_hydrate_chat(&context(CHAT), &RestoredChat::default())
        .await
        .unwrap();
    assert_eq!(restored.draft, Some(message("keep me")));

    assert!(world.client(CHAT, draft_changed(None)));
    world.contribution.flushed().await;
    assert_eq!(world.stored_draft(), None);
    assert_eq!(world.hydrated().await.draft, None);
}

#[tokio::test]
async fn over_the_store_a_rejected_draft_is_never_written() {
    let world = World::new();
    assert!(world.client(CHAT, draft_changed(Some(message("mine")))));
    world.contribution.flushed().await;
    let agent_draft: Message = from(json!({ "text": "not yours", "origin": { "kind": "agent" } }));
    assert!(!world.client(CHAT, draft_changed(Some(agent_draft))));
    world.contribution.flushed().await;
    assert_eq!(world.stored_draft(), Some(message("mine")));
}

#[tokio::test]
async fn over_the_store_a_chat_the_store_does_not_hold_is_logged_not_raised() {
    let world = World::new();
    world
        .state
        .insert_chat(
            &SESSION.parse().unwrap(),
            &chat_state(PEER).resource.parse().unwrap(),
            chat_state(PEER),
        )
        .unwrap();
    assert!(world.client(PEER, draft_changed(Some(message("x")))));
    world.contribution.flushed().await;
    // The queue is free again: the next change is written.
    assert!(world.client(CHAT, draft_changed(Some(message("y")))));
    world.contribution.flushed().await;
    assert_eq!(world.stored_draft(), Some(message("y")));
}
