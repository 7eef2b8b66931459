use std::sync::{Arc, Mutex};
use std::time::Duration;

use agenthost_dispatcher::{ClientContext, Dispatcher, LaunchKind, RegistrationError};
use agenthost_protocol::ActionOrigin;
use agenthost_protocol::ahp_types::state::{
    ChatState, ErrorInfo, Message, RootState, SessionState,
};
use agenthost_services::fakes::{
    DataCall, DispatchCall, FakeHostState, FakeServerDispatch, FakeSessionData,
    FakeTitleController, TitleCall,
};
use agenthost_services::{
    DefaultTitleController, StateHostState, StateServerDispatch, TitleConfig, TitleGenerator,
    TitleState,
};
use agenthost_services_store::StoreSessionData;
use agenthost_state::{ClientDispatch, StateConfig, StateManager};
use agenthost_store::{ChatRecord, MetaOwner, SessionRecord, Store};
use agenthost_testkit::CapturedLogs;
use serde_json::{Value, json};

use super::*;

const SESSION: &str = "ahp-session:/s1";
const CHAT: &str = "ahp-chat:/default";
const PEER: &str = "ahp-chat:/peer";
const T0: &str = "2026-01-01T00:00:00.000Z";

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

fn chat_uri(uri: &str) -> ChatUri {
    ChatUri::parse(uri).unwrap()
}

fn session_uri() -> SessionUri {
    SessionUri::parse(SESSION).unwrap()
}

fn message(text: &str) -> Message {
    from(json!({ "text": text, "origin": { "kind": "user" } }))
}

fn summary(uri: &str) -> Value {
    json!({ "resource": uri, "title": "Chat", "status": 1, "modifiedAt": T0 })
}

fn session_state() -> SessionState {
    from(json!({
        "provider": "scripted", "title": "Session", "status": 1, "lifecycle": "ready",
        "activeClients": [], "chats": [summary(CHAT), summary(PEER)], "defaultChat": CHAT
    }))
}

fn chat_state(uri: &str, extra: Value) -> ChatState {
    let mut chat = summary(uri);
    chat["turns"] = json!([]);
    chat.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    from(chat)
}

fn outgoing(chat: &str, text: &str) -> OutgoingTurn {
    OutgoingTurn {
        session: SESSION.parse().unwrap(),
        chat: chat.parse().unwrap(),
        message: message(text),
        turn_id: "t1".to_owned(),
    }
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

fn error(resumable: bool) -> TurnEndReason {
    TurnEndReason::Error {
        error: from(json!({ "errorType": "provider", "message": "boom" })),
        resumable,
    }
}

fn rejected() -> TurnEndReason {
    TurnEndReason::Rejected {
        error: from::<ErrorInfo>(json!({ "errorType": "archived", "message": "archived" })),
    }
}

fn renamed(title: &str) -> StateAction {
    title_changed(title)
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

fn hydration(chat: &str) -> HydrationContext {
    HydrationContext {
        session: SESSION.parse().unwrap(),
        chat: chat.parse().unwrap(),
    }
}

fn dispatched(channel: &str, action: StateAction) -> DispatchCall {
    DispatchCall {
        channel: channel.to_owned(),
        action,
    }
}

/// The actions that apply a host-decided `title` to `chat`: its catalog entry on the session
/// and, when `session_too` (the default chat, the user not having renamed the session), the
/// session title. Nothing on the chat channel.
fn retitled(chat: &str, title: &str, session_too: bool) -> Vec<DispatchCall> {
    let mut calls = vec![dispatched(SESSION, catalog(chat, title))];
    if session_too {
        calls.push(dispatched(SESSION, title_changed(title)));
    }
    calls
}

fn set_generated_title(owner: DataOwner, title: &str) -> DataCall {
    DataCall::SetTitle {
        owner,
        title: title.into(),
        source: TitleSource::Generated,
    }
}

/// The writes that persist a host-decided `title` of `chat` (and, when `session_too`, of the
/// session), in order.
fn persisted(chat: &str, title: &str, session_too: bool) -> Vec<DataCall> {
    let mut calls = vec![set_generated_title(DataOwner::Chat(chat_uri(chat)), title)];
    if session_too {
        calls.push(set_generated_title(
            DataOwner::Session(session_uri()),
            title,
        ));
    }
    calls
}

fn set_user_title(owner: DataOwner, title: &str) -> DataCall {
    DataCall::SetTitle {
        owner,
        title: title.into(),
        source: TitleSource::User,
    }
}

fn set_mirror(chat: &str, title: &str) -> DataCall {
    DataCall::SetMeta {
        owner: DataOwner::Session(session_uri()),
        key: mirror_key(chat),
        value: Some(title.into()),
    }
}

fn refine_call(chat: &str, successful: bool) -> TitleCall {
    TitleCall::RefineAfterFirstTurn {
        session: SESSION.into(),
        chat: chat.into(),
        successful,
    }
}

struct Fakes {
    titles: Arc<FakeTitleController>,
    host: Arc<FakeHostState>,
    dispatch: Arc<FakeServerDispatch>,
    data: Arc<FakeSessionData>,
}

impl Fakes {
    /// A session with a default chat and a peer chat, neither with a completed turn.
    fn new() -> Self {
        let host = Arc::new(FakeHostState::default());
        host.script(|a| {
            a.sessions.insert(SESSION.to_owned(), session_state());
            for chat in [CHAT, PEER] {
                a.chats.insert(chat.to_owned(), chat_state(chat, json!({})));
                a.chat_sessions.insert(chat.to_owned(), SESSION.to_owned());
            }
        });
        Self {
            titles: Arc::default(),
            host,
            dispatch: Arc::default(),
            data: Arc::default(),
        }
    }

    fn services(&self) -> SessionTitleServices {
        SessionTitleServices {
            titles: self.titles.clone(),
            host: self.host.clone(),
            dispatch: self.dispatch.clone(),
            data: self.data.clone(),
        }
    }

    fn contribution(&self) -> SessionTitle {
        SessionTitle::new(self.services())
    }

    fn title_calls_except_reads(&self) -> Vec<TitleCall> {
        self.titles
            .calls()
            .into_iter()
            .filter(|call| {
                !matches!(
                    call,
                    TitleCall::TitleState { .. } | TitleCall::RenamedByUser { .. }
                )
            })
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// onOutgoingTurn

#[tokio::test]
async fn the_first_outgoing_turn_of_the_default_chat_seeds_its_catalog_entry_and_the_session() {
    let fakes = Fakes::new();
    fakes
        .titles
        .script(|a| a.seed = Some("Fix the build".into()));
    let turn = outgoing(CHAT, "fix the build please");
    let contribution = fakes.contribution();
    let added = contribution.on_outgoing_turn(&turn).await.unwrap();
    assert_eq!(added, None, "no instruction and never a text replacement");
    assert_eq!(
        fakes.title_calls_except_reads(),
        [
            TitleCall::SeedFromMessage {
                session: SESSION.into(),
                chat: CHAT.into(),
                text: "fix the build please".into(),
            },
            TitleCall::RenameInstruction {
                session: SESSION.into(),
                chat: CHAT.into(),
            },
        ]
    );
    assert_eq!(
        fakes.dispatch.calls(),
        retitled(CHAT, "Fix the build", true)
    );
    contribution.flush().await;
    assert_eq!(
        data_writes(&fakes.data),
        persisted(CHAT, "Fix the build", true)
    );
}

#[tokio::test]
async fn a_peer_chat_seed_titles_its_catalog_entry_and_leaves_the_session_title() {
    let fakes = Fakes::new();
    fakes.titles.script(|a| a.seed = Some("Side".into()));
    let contribution = fakes.contribution();
    contribution
        .on_outgoing_turn(&outgoing(PEER, "side"))
        .await
        .unwrap();
    assert_eq!(fakes.dispatch.calls(), retitled(PEER, "Side", false));
    contribution.flush().await;
    assert_eq!(data_writes(&fakes.data), persisted(PEER, "Side", false));
}

#[tokio::test]
async fn a_user_renamed_session_keeps_its_title_when_the_default_chat_is_seeded() {
    let fakes = Fakes::new();
    fakes.titles.script(|a| {
        a.seed = Some("Seed".into());
        a.renamed_by_user = true;
    });
    let contribution = fakes.contribution();
    contribution
        .on_outgoing_turn(&outgoing(CHAT, "seed"))
        .await
        .unwrap();
    assert_eq!(fakes.dispatch.calls(), retitled(CHAT, "Seed", false));
    contribution.flush().await;
    // Only the chat's title is persisted: the session's stays the user's.
    assert_eq!(data_writes(&fakes.data), persisted(CHAT, "Seed", false));
}

#[tokio::test]
async fn a_chat_with_history_or_a_known_title_is_not_seeded() {
    let fakes = Fakes::new();
    fakes.titles.script(|a| a.seed = Some("Seed".into()));
    // Older turns exist (the state holds only a tail window).
    fakes.host.script(|a| {
        a.chats.insert(
            PEER.to_owned(),
            chat_state(PEER, json!({ "turnsNextCursor": "older" })),
        );
    });
    let contribution = fakes.contribution();
    contribution
        .on_outgoing_turn(&outgoing(PEER, "again"))
        .await
        .unwrap();
    // The controller already titled the chat.
    fakes.titles.script(|a| {
        a.state = Some(TitleState {
            title: Some("Known".into()),
            kind: TitleKind::Provisional,
            refined: false,
        })
    });
    contribution
        .on_outgoing_turn(&outgoing(CHAT, "again"))
        .await
        .unwrap();
    // A chat that is gone.
    contribution
        .on_outgoing_turn(&outgoing("ahp-chat:/gone", "again"))
        .await
        .unwrap();
    assert!(
        !fakes
            .titles
            .calls()
            .iter()
            .any(|c| matches!(c, TitleCall::SeedFromMessage { .. })),
        "{:?}",
        fakes.titles.calls()
    );
    assert!(fakes.dispatch.calls().is_empty());
    contribution.flush().await;
    assert!(
        data_writes(&fakes.data).is_empty(),
        "{:?}",
        data_writes(&fakes.data)
    );
}

#[tokio::test]
async fn the_rename_instruction_is_added_when_the_controller_has_one() {
    let fakes = Fakes::new();
    fakes
        .titles
        .script(|a| a.rename_instruction = Some("Call the chat by its topic.".into()));
    let turn = outgoing(PEER, "hello");
    let added = fakes.contribution().on_outgoing_turn(&turn).await.unwrap();
    assert_eq!(
        added,
        Some(SendContribution {
            instructions: Some(vec!["Call the chat by its topic.".into()]),
            text: None,
        })
    );
}

// ---------------------------------------------------------------------------------------------
// onTurnEnd

#[tokio::test]
async fn turn_end_refines_by_reason() {
    let cases = [
        ("success", TurnEndReason::Success, Some(true)),
        ("cancelled", TurnEndReason::Cancelled, Some(false)),
        ("error, not resumable", error(false), Some(false)),
        ("error, resumable", error(true), None),
        ("rejected", rejected(), None),
        ("localCommand", TurnEndReason::LocalCommand, Some(false)),
    ];
    for (name, reason, expected) in cases {
        let fakes = Fakes::new();
        fakes
            .contribution()
            .on_turn_end(&turn_end(PEER, reason))
            .unwrap();
        let expected: Vec<TitleCall> = expected
            .map(|successful| refine_call(PEER, successful))
            .into_iter()
            .collect();
        assert_eq!(fakes.title_calls_except_reads(), expected, "{name}");
        assert!(fakes.dispatch.calls().is_empty(), "{name}");
    }
}

#[tokio::test]
async fn a_refined_title_is_applied_with_the_default_chat_identity_and_cascade() {
    let fakes = Fakes::new();
    fakes.titles.script(|a| a.refined = Some("Better".into()));
    let contribution = fakes.contribution();
    contribution
        .on_turn_end(&turn_end(CHAT, TurnEndReason::Success))
        .unwrap();
    assert_eq!(fakes.title_calls_except_reads(), [refine_call(CHAT, true)]);
    assert_eq!(fakes.dispatch.calls(), retitled(CHAT, "Better", true));
    contribution.flush().await;
    assert_eq!(data_writes(&fakes.data), persisted(CHAT, "Better", true));
}

#[tokio::test]
async fn a_refused_catalog_title_is_logged_and_nothing_else_is_dispatched_or_persisted() {
    let logs = CapturedLogs::default();
    let _guard = logs.capture();
    let fakes = Fakes::new();
    fakes.titles.script(|a| a.refined = Some("Better".into()));
    fakes.dispatch.script(|a| a.refuse = Some("gone".into()));
    let contribution = fakes.contribution();
    contribution
        .on_turn_end(&turn_end(CHAT, TurnEndReason::Success))
        .unwrap();
    // The default chat's catalog entry was refused: no session cascade.
    assert_eq!(
        fakes.dispatch.calls(),
        [dispatched(SESSION, catalog(CHAT, "Better"))]
    );
    contribution.flush().await;
    assert!(
        data_writes(&fakes.data).is_empty(),
        "{:?}",
        data_writes(&fakes.data)
    );
    let text = logs.text();
    assert!(text.contains("could not title the chat"), "{text}");
    assert!(text.contains(CHAT), "{text}");
}

/// Records every dispatch in the fake and refuses `session/titleChanged`.
struct RefusesSessionTitles(Arc<FakeServerDispatch>);

impl ServerDispatch for RefusesSessionTitles {
    fn dispatch(&self, channel: &str, action: StateAction) -> Result<u64, DispatchError> {
        let refused = matches!(action, StateAction::SessionTitleChanged(_));
        let seq = self.0.dispatch(channel, action)?;
        if refused {
            return Err(DispatchError {
                channel: channel.into(),
                reason: "locked".into(),
            });
        }
        Ok(seq)
    }
}

#[tokio::test]
async fn a_refused_session_cascade_is_logged_and_only_the_chat_title_is_persisted() {
    let logs = CapturedLogs::default();
    let _guard = logs.capture();
    let fakes = Fakes::new();
    fakes.titles.script(|a| a.refined = Some("Better".into()));
    let contribution = SessionTitle::new(SessionTitleServices {
        dispatch: Arc::new(RefusesSessionTitles(fakes.dispatch.clone())),
        ..fakes.services()
    });
    contribution
        .on_turn_end(&turn_end(CHAT, TurnEndReason::Success))
        .unwrap();
    assert_eq!(fakes.dispatch.calls(), retitled(CHAT, "Better", true));
    contribution.flush().await;
    assert_eq!(data_writes(&fakes.data), persisted(CHAT, "Better", false));
    let text = logs.text();
    assert!(text.contains("a title action was refused"), "{text}");
    assert!(text.contains("locked"), "{text}");
}

#[tokio::test]
async fn no_host_decided_title_is_ever_dispatched_on_a_chat_channel() {
    let fakes = Fakes::new();
    fakes.titles.script(|a| {
        a.seed = Some("Seed".into());
        a.refined = Some("Refined".into());
    });
    let contribution = fakes.contribution();
    // Seeded and refined: the default chat and a peer chat.
    for channel in [CHAT, PEER] {
        contribution
            .on_outgoing_turn(&outgoing(channel, "seed"))
            .await
            .unwrap();
        contribution
            .on_turn_end(&turn_end(channel, TurnEndReason::Success))
            .unwrap();
    }
    // Once more with the session renamed by the user.
    fakes.titles.script(|a| a.renamed_by_user = true);
    for channel in [CHAT, PEER] {
        contribution
            .on_outgoing_turn(&outgoing(channel, "seed"))
            .await
            .unwrap();
        contribution
            .on_turn_end(&turn_end(channel, TurnEndReason::Success))
            .unwrap();
    }

    let calls = fakes.dispatch.calls();
    let expected: Vec<DispatchCall> = [
        retitled(CHAT, "Seed", true),
        retitled(CHAT, "Refined", true),
        retitled(PEER, "Seed", false),
        retitled(PEER, "Refined", false),
        retitled(CHAT, "Seed", false),
        retitled(CHAT, "Refined", false),
        retitled(PEER, "Seed", false),
        retitled(PEER, "Refined", false),
    ]
    .concat();
    assert_eq!(calls, expected);
    assert!(
        calls.iter().all(|call| call.channel == SESSION),
        "{calls:?}"
    );
}

/// A generator that answers after `delay` on the tokio clock, or never.
struct SlowGenerator {
    delay: Option<Duration>,
}

impl TitleGenerator for SlowGenerator {
    fn generate(&self, first_message: &str) -> BoxFuture<'static, Option<String>> {
        let title = format!("About {first_message}");
        match self.delay {
            Some(delay) => Box::pin(async move {
                tokio::time::sleep(delay).await;
                Some(title)
            }),
            None => Box::pin(futures::future::pending()),
        }
    }
}

fn with_controller(fakes: &Fakes, titles: Arc<DefaultTitleController>) -> SessionTitle {
    SessionTitle::new(SessionTitleServices {
        titles,
        ..fakes.services()
    })
}

#[tokio::test(start_paused = true)]
async fn a_slow_refinement_runs_in_the_background_and_is_applied_when_ready() {
    let fakes = Fakes::new();
    let generator = Arc::new(SlowGenerator {
        delay: Some(Duration::from_secs(30)),
    });
    let titles = Arc::new(DefaultTitleController::with_generator(
        TitleConfig::default(),
        generator,
    ));
    let contribution = with_controller(&fakes, titles.clone());
    contribution
        .on_outgoing_turn(&outgoing(CHAT, "rust"))
        .await
        .unwrap();
    assert_eq!(fakes.dispatch.calls(), retitled(CHAT, "rust", true));

    contribution
        .on_turn_end(&turn_end(CHAT, TurnEndReason::Success))
        .unwrap();
    // The hook returned before the generator answered.
    assert_eq!(fakes.dispatch.calls(), retitled(CHAT, "rust", true));
    tokio::time::sleep(Duration::from_secs(29)).await;
    contribution.flush().await;
    assert_eq!(fakes.dispatch.calls(), retitled(CHAT, "rust", true));
    assert_eq!(data_writes(&fakes.data), persisted(CHAT, "rust", true));
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        fakes.dispatch.calls(),
        [
            retitled(CHAT, "rust", true),
            retitled(CHAT, "About rust", true)
        ]
        .concat()
    );
    contribution.flush().await;
    assert_eq!(
        data_writes(&fakes.data),
        [
            persisted(CHAT, "rust", true),
            persisted(CHAT, "About rust", true)
        ]
        .concat()
    );
    assert_eq!(
        titles.title_state(CHAT).map(|s| s.kind),
        Some(TitleKind::Generated)
    );
}

#[tokio::test(start_paused = true)]
async fn a_user_rename_during_a_slow_refinement_wins() {
    let fakes = Fakes::new();
    let titles = Arc::new(DefaultTitleController::with_generator(
        TitleConfig::default(),
        Arc::new(SlowGenerator {
            delay: Some(Duration::from_secs(30)),
        }),
    ));
    let contribution = with_controller(&fakes, titles.clone());
    contribution
        .on_outgoing_turn(&outgoing(PEER, "rust"))
        .await
        .unwrap();
    contribution
        .on_turn_end(&turn_end(PEER, TurnEndReason::Success))
        .unwrap();
    apply(&contribution, PEER, &renamed("Mine"));
    tokio::time::sleep(Duration::from_secs(31)).await;
    contribution.flush().await;
    // The seed, then the user's rename; the refinement is neither dispatched nor persisted.
    assert_eq!(
        fakes.dispatch.calls(),
        [
            retitled(PEER, "rust", false),
            vec![dispatched(SESSION, catalog(PEER, "Mine"))]
        ]
        .concat()
    );
    assert_eq!(
        data_writes(&fakes.data),
        [
            persisted(PEER, "rust", false),
            vec![
                set_user_title(DataOwner::Chat(chat_uri(PEER)), "Mine"),
                set_mirror(PEER, "Mine"),
            ]
        ]
        .concat()
    );
    assert_eq!(
        titles.title_state(PEER).map(|s| (s.title, s.kind)),
        Some((Some("Mine".into()), TitleKind::User))
    );
}

#[test]
fn without_a_runtime_a_pending_refinement_is_dropped_not_a_panic() {
    let fakes = Fakes::new();
    let titles = Arc::new(DefaultTitleController::with_generator(
        TitleConfig::default(),
        Arc::new(SlowGenerator { delay: None }),
    ));
    titles.seed_from_message(SESSION, PEER, "never");
    let contribution = with_controller(&fakes, titles);
    contribution
        .on_turn_end(&turn_end(PEER, TurnEndReason::Success))
        .unwrap();
    assert!(fakes.dispatch.calls().is_empty());
    assert!(data_writes(&fakes.data).is_empty());
}

// ---------------------------------------------------------------------------------------------
// onDidApplyClientAction

#[tokio::test]
async fn a_peer_chat_renamed_by_the_user_is_persisted_with_its_mirror() {
    let fakes = Fakes::new();
    let contribution = fakes.contribution();
    apply(&contribution, PEER, &renamed("Mine"));
    contribution.flush().await;
    assert_eq!(
        fakes.title_calls_except_reads(),
        [
            TitleCall::SetTitle {
                session: SESSION.into(),
                chat: PEER.into(),
                title: "Mine".into(),
                kind: TitleKind::User,
            },
            TitleCall::MarkRenamed {
                session: SESSION.into(),
                chat: Some(PEER.into()),
                by: TitleKind::User,
            },
        ]
    );
    // The chat's own title was set by the client's action: only the catalog follows.
    assert_eq!(
        fakes.dispatch.calls(),
        [dispatched(SESSION, catalog(PEER, "Mine"))]
    );
    assert_eq!(
        fakes.data.calls(),
        [
            set_user_title(DataOwner::Chat(chat_uri(PEER)), "Mine"),
            set_mirror(PEER, "Mine"),
        ]
    );
}

#[tokio::test]
async fn a_default_chat_renamed_by_the_user_cascades_to_the_session() {
    let fakes = Fakes::new();
    let contribution = fakes.contribution();
    apply(&contribution, CHAT, &renamed("Mine"));
    contribution.flush().await;
    assert_eq!(
        fakes.dispatch.calls(),
        [
            dispatched(SESSION, catalog(CHAT, "Mine")),
            dispatched(SESSION, title_changed("Mine")),
        ]
    );
    assert_eq!(
        fakes.data.calls(),
        [
            set_user_title(DataOwner::Chat(chat_uri(CHAT)), "Mine"),
            set_mirror(CHAT, "Mine"),
            set_user_title(DataOwner::Session(session_uri()), "Mine"),
        ]
    );
    assert!(fakes.titles.calls().contains(&TitleCall::MarkRenamed {
        session: SESSION.into(),
        chat: None,
        by: TitleKind::User,
    }));
}

#[tokio::test]
async fn a_session_renamed_by_the_user_is_persisted_and_marked() {
    let fakes = Fakes::new();
    let contribution = fakes.contribution();
    apply(&contribution, SESSION, &renamed("Project"));
    contribution.flush().await;
    assert_eq!(
        fakes.title_calls_except_reads(),
        [TitleCall::MarkRenamed {
            session: SESSION.into(),
            chat: None,
            by: TitleKind::User,
        }]
    );
    assert!(fakes.dispatch.calls().is_empty());
    assert_eq!(
        fakes.data.calls(),
        [set_user_title(DataOwner::Session(session_uri()), "Project")]
    );
}

#[tokio::test]
async fn other_client_actions_are_ignored() {
    let fakes = Fakes::new();
    let contribution = fakes.contribution();
    let draft: StateAction = from(json!({ "type": "chat/draftChanged" }));
    apply(&contribution, CHAT, &draft);
    contribution.flush().await;
    assert!(fakes.titles.calls().is_empty());
    assert!(fakes.dispatch.calls().is_empty());
    assert!(fakes.data.calls().is_empty());
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
    const ORDER: i32 = 600;
    const HOOKS: HookSet = HookSet::of(&[Hook::DidApplyClientAction]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Ok(Self(services.get::<Mutex<Vec<String>>>()?))
    }
}

fn registry(fakes: &Fakes) -> ServiceRegistry {
    let mut services = ServiceRegistry::new();
    services
        .insert::<dyn TitleController>(fakes.titles.clone())
        .insert::<dyn HostState>(fakes.host.clone())
        .insert::<dyn ServerDispatch>(fakes.dispatch.clone())
        .insert::<dyn SessionDataStore>(fakes.data.clone());
    services
}

#[tokio::test]
async fn a_failing_write_is_logged_and_later_contributions_still_run() {
    let logs = CapturedLogs::default();
    let _guard = logs.capture();
    let fakes = Fakes::new();
    fakes.data.script(|a| a.fail = Some("disk full".into()));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut services = registry(&fakes);
    services.insert::<Mutex<Vec<String>>>(seen.clone());
    let dispatcher = Dispatcher::new(services);
    let _titles = dispatcher.register::<SessionTitle>().unwrap();
    let _follower = dispatcher.register::<Follower>().unwrap();

    let action = renamed("Mine");
    dispatcher.did_apply_client_action(&AppliedClientAction {
        channel: PEER,
        session: Some(&SESSION.parse().unwrap()),
        chat: Some(&PEER.parse().unwrap()),
        action: &action,
        client_id: None,
        client_context: &client_context(),
    });
    assert_eq!(*seen.lock().unwrap(), [PEER]);
    // The current-thread runtime runs the writer at this yield; the fake fails at once.
    tokio::task::yield_now().await;
    assert_eq!(fakes.data.calls().len(), 2, "{:?}", fakes.data.calls());
    let text = logs.text();
    assert!(text.contains("could not persist the title"), "{text}");
    assert!(
        text.contains("could not persist the session-side mirror"),
        "{text}"
    );
    assert!(text.contains("disk full"), "{text}");
    assert!(text.contains(PEER), "{text}");
    assert!(
        !text.contains("failed"),
        "the hook itself succeeded: {text}"
    );
}

// ---------------------------------------------------------------------------------------------
// onHydrateChat

fn stored(title: &str, source: TitleSource) -> StoredTitle {
    StoredTitle {
        title: title.into(),
        source,
    }
}

#[tokio::test]
async fn a_restored_title_is_kept_without_reading_storage() {
    let fakes = Fakes::new();
    fakes.data.script(|a| {
        a.titles.insert(
            DataOwner::Chat(chat_uri(PEER)),
            stored("Stored", TitleSource::User),
        );
    });
    let restored = RestoredChat {
        title: Some("Restored".into()),
        ..RestoredChat::default()
    };
    let out = fakes
        .contribution()
        .on_hydrate_chat(&hydration(PEER), &restored)
        .await
        .unwrap();
    assert_eq!(out, restored);
    assert_eq!(fakes.data.calls(), [], "no storage read");
}

#[tokio::test]
async fn hydration_prefers_the_chat_local_title_then_the_mirror() {
    let fakes = Fakes::new();
    fakes.data.script(|a| {
        a.titles.insert(
            DataOwner::Chat(chat_uri(PEER)),
            stored("Local", TitleSource::Generated),
        );
        let mirror = a.meta.entry(DataOwner::Session(session_uri())).or_default();
        mirror.insert(mirror_key(PEER), "Mirror".into());
        mirror.insert(mirror_key(CHAT), "Default mirror".into());
    });
    let contribution = fakes.contribution();
    let peer = contribution
        .on_hydrate_chat(&hydration(PEER), &RestoredChat::default())
        .await
        .unwrap();
    assert_eq!(peer.title.as_deref(), Some("Local"));
    assert_eq!(
        fakes.data.calls(),
        [DataCall::Title {
            owner: DataOwner::Chat(chat_uri(PEER))
        }]
    );

    // No chat-local title: the mirror, which is the user's.
    let chat = contribution
        .on_hydrate_chat(&hydration(CHAT), &RestoredChat::default())
        .await
        .unwrap();
    assert_eq!(chat.title.as_deref(), Some("Default mirror"));
    assert!(fakes.titles.calls().contains(&TitleCall::MarkRenamed {
        session: SESSION.into(),
        chat: Some(CHAT.into()),
        by: TitleKind::User,
    }));
}

#[tokio::test]
async fn a_stored_placeholder_yields_to_the_mirror_and_nothing_stored_restores_nothing() {
    let fakes = Fakes::new();
    fakes.data.script(|a| {
        a.titles.insert(
            DataOwner::Chat(chat_uri(PEER)),
            stored("Chat", TitleSource::Default),
        );
        a.titles.insert(
            DataOwner::Chat(chat_uri(CHAT)),
            stored("Chat", TitleSource::Default),
        );
        a.meta
            .entry(DataOwner::Session(session_uri()))
            .or_default()
            .insert(mirror_key(PEER), "Mirror".into());
    });
    let contribution = fakes.contribution();
    let peer = contribution
        .on_hydrate_chat(&hydration(PEER), &RestoredChat::default())
        .await
        .unwrap();
    assert_eq!(peer.title.as_deref(), Some("Mirror"));
    let chat = contribution
        .on_hydrate_chat(&hydration(CHAT), &RestoredChat::default())
        .await
        .unwrap();
    assert_eq!(chat.title.as_deref(), Some("Chat"), "the placeholder stays");
    let gone = contribution
        .on_hydrate_chat(&hydration("ahp-chat:/new"), &RestoredChat::default())
        .await
        .unwrap();
    assert_eq!(gone, RestoredChat::default());
}

#[tokio::test]
async fn a_failing_read_keeps_the_previous_value() {
    let fakes = Fakes::new();
    fakes.data.script(|a| a.fail = Some("disk gone".into()));
    let dispatcher = Dispatcher::new(registry(&fakes));
    let _titles = dispatcher.register::<SessionTitle>().unwrap();
    let previous = RestoredChat {
        config: Some(from(json!({ "mode": "plan" }))),
        ..RestoredChat::default()
    };
    let out = dispatcher
        .hydrate_chat(&hydration(PEER), previous.clone())
        .await;
    assert_eq!(out, previous);
    assert_eq!(fakes.data.calls().len(), 1);
}

// ---------------------------------------------------------------------------------------------
// Registration

#[test]
fn it_runs_at_400_on_its_four_hooks_and_needs_its_services() {
    let fakes = Fakes::new();
    let dispatcher = Dispatcher::new(registry(&fakes));
    let _titles = dispatcher.register::<SessionTitle>().unwrap();
    for hook in [
        Hook::TurnEnd,
        Hook::OutgoingTurn,
        Hook::DidApplyClientAction,
        Hook::HydrateChat,
    ] {
        assert_eq!(
            dispatcher.order_of(hook),
            [(400, "sessionTitle")],
            "{hook:?}"
        );
    }
    assert_eq!(dispatcher.order_of(Hook::IncomingRequest), []);
    assert_eq!(dispatcher.order_of(Hook::DidDispatchAction), []);

    let mut services = registry(&fakes);
    services = {
        let mut without = ServiceRegistry::new();
        without
            .insert::<dyn TitleController>(fakes.titles.clone())
            .insert::<dyn HostState>(fakes.host.clone())
            .insert::<dyn ServerDispatch>(fakes.dispatch.clone());
        drop(services);
        without
    };
    let error = Dispatcher::new(services)
        .register::<SessionTitle>()
        .unwrap_err();
    let RegistrationError::MissingService { id, service } = error else {
        panic!("expected a missing service, got {error:?}");
    };
    assert_eq!(id, "sessionTitle");
    assert!(service.contains("SessionDataStore"), "{service}");
}

// ---------------------------------------------------------------------------------------------
// Over a real state manager, the default controller and the real store: what clients see and
// what a restart reads.

struct World {
    state: Arc<StateManager>,
    store: Store,
    titles: Arc<DefaultTitleController>,
    contribution: SessionTitle,
}

fn store_with_records() -> Store {
    let store = Store::open_in_memory().unwrap();
    store
        .put_session(&SessionRecord {
            uri: session_uri(),
            provider: "scripted".into(),
            title: "Session".into(),
            title_source: TitleSource::Default,
            created_at: T0.into(),
            modified_at: T0.into(),
            working_directories: vec![],
            read: true,
            archived: false,
            default_chat: None,
        })
        .unwrap();
    for (position, chat) in [CHAT, PEER].into_iter().enumerate() {
        store
            .put_chat(&ChatRecord {
                uri: chat_uri(chat),
                session: session_uri(),
                position: position as i64,
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
    store
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
        for chat in [CHAT, PEER] {
            state
                .insert_chat(
                    &SESSION.parse().unwrap(),
                    &agenthost_protocol::ChatUri::parse(&(chat_state(chat, json!({}))).resource)
                        .unwrap(),
                    chat_state(chat, json!({})),
                )
                .unwrap();
        }
        let state = Arc::new(state);
        let store = store_with_records();
        let titles = Arc::new(DefaultTitleController::default());
        let contribution = SessionTitle::new(SessionTitleServices {
            titles: titles.clone(),
            host: Arc::new(StateHostState::new(state.clone())),
            dispatch: Arc::new(StateServerDispatch::new(state.clone())),
            data: Arc::new(StoreSessionData::new(store.clone())),
        });
        Self {
            state,
            store,
            titles,
            contribution,
        }
    }

    /// A client dispatches `action` on `channel`; when accepted, the hook runs.
    fn client(&self, channel: &str, action: StateAction) -> bool {
        let origin = ActionOrigin {
            client_id: "client-1".into(),
            client_seq: 1,
        };
        let ClientDispatch::Accepted(envelope) =
            self.state.dispatch_client(channel, action, origin)
        else {
            return false;
        };
        apply(&self.contribution, channel, &envelope.action);
        true
    }

    /// Runs turn `id` of `chat` through the outgoing hook and completes it.
    async fn turn(&self, chat: &str, id: &str, text: &str) {
        self.state
            .dispatch_server(
                chat,
                from(
                    json!({ "type": "chat/turnStarted", "turnId": id, "startedAt": T0,
                             "message": { "text": text, "origin": { "kind": "user" } } }),
                ),
            )
            .unwrap();
        let mut turn = outgoing(chat, text);
        turn.turn_id = id.to_owned();
        self.contribution.on_outgoing_turn(&turn).await.unwrap();
        self.state
            .dispatch_server(
                chat,
                from(json!({ "type": "chat/turnComplete", "turnId": id, "duration": 1 })),
            )
            .unwrap();
        let mut end = turn_end(chat, TurnEndReason::Success);
        end.turn_id = Some(id.to_owned());
        self.contribution.on_turn_end(&end).unwrap();
    }

    /// The stored title of `owner` and its source.
    fn stored_title(&self, owner: DataOwner) -> (String, TitleSource) {
        match owner {
            DataOwner::Session(uri) => {
                let session = self.store.session(&uri).unwrap().unwrap();
                (session.title, session.title_source)
            }
            DataOwner::Chat(uri) => {
                let chat = self.store.chat(&uri).unwrap().unwrap();
                (chat.title, chat.title_source)
            }
        }
    }

    /// The chat's title, the session's title and the catalog's titles.
    fn titles_in_state(&self, chat: &str) -> (String, String, Vec<String>) {
        self.state.read(|h| {
            let session = h.session(SESSION).unwrap();
            (
                h.chat(chat).unwrap().title.clone(),
                session.title.clone(),
                session.chats.iter().map(|c| c.title.clone()).collect(),
            )
        })
    }
}

#[tokio::test]
async fn over_the_state_manager_the_first_turn_titles_the_catalog_and_the_session_and_persists_them()
 {
    let world = World::new();
    world
        .turn(CHAT, "t1", "## Explain the borrow checker")
        .await;
    // The chat's own state keeps its title: clients' chat reducers have no title action.
    assert_eq!(
        world.titles_in_state(CHAT),
        (
            "Chat".into(),
            "Explain the borrow checker".into(),
            vec!["Explain the borrow checker".into(), "Chat".into()]
        )
    );
    world.contribution.flush().await;
    let generated = (
        "Explain the borrow checker".to_owned(),
        TitleSource::Generated,
    );
    assert_eq!(
        world.stored_title(DataOwner::Chat(chat_uri(CHAT))),
        generated
    );
    assert_eq!(
        world.stored_title(DataOwner::Session(session_uri())),
        generated
    );

    // The second turn seeds nothing: the chat has history.
    world.turn(CHAT, "t2", "and lifetimes").await;
    world.contribution.flush().await;
    assert_eq!(
        world.titles_in_state(CHAT),
        (
            "Chat".into(),
            "Explain the borrow checker".into(),
            vec!["Explain the borrow checker".into(), "Chat".into()]
        )
    );
    assert_eq!(
        world.stored_title(DataOwner::Chat(chat_uri(CHAT))),
        generated
    );

    world.turn(PEER, "p1", "Side question").await;
    assert_eq!(
        world.titles_in_state(PEER),
        (
            "Chat".into(),
            "Explain the borrow checker".into(),
            vec!["Explain the borrow checker".into(), "Side question".into()]
        )
    );
    world.contribution.flush().await;
    assert_eq!(
        world.stored_title(DataOwner::Chat(chat_uri(PEER))),
        ("Side question".to_owned(), TitleSource::Generated)
    );
    assert_eq!(
        world.stored_title(DataOwner::Session(session_uri())),
        generated,
        "a peer chat's title does not reach the session"
    );

    // A restarted host restores the generated titles; its controller does not take them for
    // the user's.
    let restarted_titles = Arc::new(DefaultTitleController::default());
    let restarted = SessionTitle::new(SessionTitleServices {
        titles: restarted_titles.clone(),
        host: Arc::new(StateHostState::new(world.state.clone())),
        dispatch: Arc::new(StateServerDispatch::new(world.state.clone())),
        data: Arc::new(StoreSessionData::new(world.store.clone())),
    });
    for (chat, title) in [
        (CHAT, "Explain the borrow checker"),
        (PEER, "Side question"),
    ] {
        let restored = restarted
            .on_hydrate_chat(&hydration(chat), &RestoredChat::default())
            .await
            .unwrap();
        assert_eq!(restored.title.as_deref(), Some(title), "{chat}");
        assert!(
            !restarted_titles.renamed_by_user(SESSION, Some(chat)),
            "{chat}"
        );
    }
}

#[tokio::test]
async fn over_the_state_manager_a_user_rename_is_persisted_restored_and_never_reseeded() {
    let world = World::new();
    assert!(world.client(CHAT, renamed("My project")));
    world.contribution.flush().await;
    assert_eq!(
        world.titles_in_state(CHAT),
        (
            "My project".into(),
            "My project".into(),
            vec!["My project".into(), "Chat".into()]
        )
    );
    let chat = world.store.chat(&chat_uri(CHAT)).unwrap().unwrap();
    assert_eq!(
        (chat.title.as_str(), chat.title_source),
        ("My project", TitleSource::User)
    );
    let session = world.store.session(&session_uri()).unwrap().unwrap();
    assert_eq!(
        (session.title.as_str(), session.title_source),
        ("My project", TitleSource::User)
    );
    let mirror = world
        .store
        .meta(MetaOwner::Session(&session_uri()), &mirror_key(CHAT))
        .unwrap();
    assert_eq!(mirror.as_deref(), Some("My project"));
    assert!(world.titles.renamed_by_user(SESSION, None));

    // The first turn after the rename keeps the user's title, in state and in the store.
    world.turn(CHAT, "t1", "something else entirely").await;
    world.contribution.flush().await;
    assert_eq!(
        world.titles_in_state(CHAT),
        (
            "My project".into(),
            "My project".into(),
            vec!["My project".into(), "Chat".into()]
        )
    );
    let user = ("My project".to_owned(), TitleSource::User);
    assert_eq!(world.stored_title(DataOwner::Chat(chat_uri(CHAT))), user);
    assert_eq!(world.stored_title(DataOwner::Session(session_uri())), user);

    // A restarted host restores it, and its controller knows it is the user's.
    let restarted_titles = Arc::new(DefaultTitleController::default());
    let restarted = SessionTitle::new(SessionTitleServices {
        titles: restarted_titles.clone(),
        host: Arc::new(StateHostState::new(world.state.clone())),
        dispatch: Arc::new(StateServerDispatch::new(world.state.clone())),
        data: Arc::new(StoreSessionData::new(world.store.clone())),
    });
    let restored = restarted
        .on_hydrate_chat(&hydration(CHAT), &RestoredChat::default())
        .await
        .unwrap();
    assert_eq!(restored.title.as_deref(), Some("My project"));
    assert!(restarted_titles.renamed_by_user(SESSION, Some(CHAT)));
}

#[tokio::test]
async fn over_the_state_manager_a_session_rename_is_persisted_and_survives_the_default_chat_seed() {
    let world = World::new();
    assert!(world.client(SESSION, renamed("Named session")));
    world.contribution.flush().await;
    let session = world.store.session(&session_uri()).unwrap().unwrap();
    assert_eq!(
        (session.title.as_str(), session.title_source),
        ("Named session", TitleSource::User)
    );
    world.turn(CHAT, "t1", "First message").await;
    assert_eq!(
        world.titles_in_state(CHAT),
        (
            "Chat".into(),
            "Named session".into(),
            vec!["First message".into(), "Chat".into()]
        )
    );
    world.contribution.flush().await;
    assert_eq!(
        world.stored_title(DataOwner::Chat(chat_uri(CHAT))),
        ("First message".to_owned(), TitleSource::Generated)
    );
    assert_eq!(
        world.stored_title(DataOwner::Session(session_uri())),
        ("Named session".to_owned(), TitleSource::User)
    );
}

/// The user renamed the session, then the host restarted (a fresh controller knows nothing):
/// the default chat's first turn seeds its own title but leaves the user's session title — the
/// stored session title's `user` source is recalled before the seed would cascade.
#[tokio::test]
async fn a_user_session_title_survives_a_restart_and_the_default_chats_first_seed() {
    let mut world = World::new();
    assert!(world.client(SESSION, renamed("Named session")));
    world.contribution.flush().await;
    let restarted = Arc::new(DefaultTitleController::default());
    world.contribution = SessionTitle::new(SessionTitleServices {
        titles: restarted.clone(),
        host: Arc::new(StateHostState::new(world.state.clone())),
        dispatch: Arc::new(StateServerDispatch::new(world.state.clone())),
        data: Arc::new(StoreSessionData::new(world.store.clone())),
    });
    world.titles = restarted;
    assert!(!world.titles.renamed_by_user(SESSION, None));

    world.turn(CHAT, "t1", "First message").await;
    world.contribution.flush().await;
    assert!(world.titles.renamed_by_user(SESSION, None), "recalled");
    let (_, session_title, catalog) = world.titles_in_state(CHAT);
    assert_eq!(session_title, "Named session");
    assert_eq!(catalog[0], "First message");
    assert_eq!(
        world.stored_title(DataOwner::Session(session_uri())),
        ("Named session".to_owned(), TitleSource::User)
    );
}

/// What was written through the data fake: its calls without the title reads (the default
/// chat's first turn reads the stored session title to recall a user's rename).
fn data_writes(data: &FakeSessionData) -> Vec<DataCall> {
    data.calls()
        .into_iter()
        .filter(|call| !matches!(call, DataCall::Title { .. }))
        .collect()
}
