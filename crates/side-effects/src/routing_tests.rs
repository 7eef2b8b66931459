use std::sync::{Arc, Mutex};
use std::time::Duration;

use agenthost_dispatcher::{
    ChatContribution, ClientContext, Descriptor, Dispatcher, Hook, HookResult, HookSet, LaunchKind,
    ServiceRegistry, TurnEnd, TurnEndReason,
};
use agenthost_protocol::ahp_types::state::{AgentInfo, ChatState, RootState, SessionState};
use agenthost_protocol::{
    ActionOrigin, ActionSignal, AgentSignal, ChatUri, PendingConfirmation, PermissionKind, SafeId,
    SessionUri, StateAction, SubagentCompleted, SubagentStarted,
};
use agenthost_provider_api::{
    InputResponse, PermissionDecision, Provider, ProviderError, ProviderSession, RestoreSession,
    SignalSink, StartSession, TurnRequest,
};
use agenthost_state::{ClientDispatch, StateConfig, StateManager};
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::SubagentBuffer;
use crate::{Orchestrator, OrchestratorConfig};

const SESSION: &str = "ahp-session:/s1";
const CHAT: &str = "ahp-chat:/c1";

#[derive(Default)]
struct Recorded {
    sink: Option<SignalSink>,
    turns: Vec<TurnRequest>,
    permissions: Vec<(String, PermissionDecision)>,
    inputs: Vec<(String, InputResponse)>,
    client_results: Vec<(String, agenthost_protocol::ahp_types::state::ToolCallResult)>,
    cancels: Vec<String>,
    /// When set, a cancel returns only once this is notified.
    cancel_held: Option<Arc<tokio::sync::Notify>>,
    /// What each restore was given: the resume handle and the history's turn ids.
    restores: Vec<(Value, Vec<String>)>,
}

#[derive(Clone, Default)]
struct FakeProvider(Arc<Mutex<Recorded>>);

struct FakeSession(Arc<Mutex<Recorded>>);

impl ProviderSession for FakeSession {
    fn send_turn(&self, turn: TurnRequest) -> BoxFuture<'_, Result<(), ProviderError>> {
        self.0.lock().unwrap().turns.push(turn);
        Box::pin(async { Ok(()) })
    }
    fn respond_to_permission<'a>(
        &'a self,
        id: &'a str,
        decision: PermissionDecision,
    ) -> BoxFuture<'a, Result<(), ProviderError>> {
        self.0
            .lock()
            .unwrap()
            .permissions
            .push((id.to_owned(), decision));
        Box::pin(async { Ok(()) })
    }
    fn respond_to_input<'a>(
        &'a self,
        id: &'a str,
        response: InputResponse,
    ) -> BoxFuture<'a, Result<(), ProviderError>> {
        self.0
            .lock()
            .unwrap()
            .inputs
            .push((id.to_owned(), response));
        Box::pin(async { Ok(()) })
    }
    fn complete_client_tool<'a>(
        &'a self,
        id: &'a str,
        result: agenthost_protocol::ahp_types::state::ToolCallResult,
    ) -> BoxFuture<'a, Result<(), ProviderError>> {
        self.0
            .lock()
            .unwrap()
            .client_results
            .push((id.to_owned(), result));
        Box::pin(async { Ok(()) })
    }
    fn cancel<'a>(&'a self, turn_id: &'a str) -> BoxFuture<'a, Result<(), ProviderError>> {
        let held = {
            let mut recorded = self.0.lock().unwrap();
            recorded.cancels.push(turn_id.to_owned());
            recorded.cancel_held.clone()
        };
        if let Some(held) = held {
            return Box::pin(async move {
                held.notified().await;
                Ok(())
            });
        }
        Box::pin(async { Ok(()) })
    }
    fn resume_handle(&self) -> Option<Value> {
        None
    }
    fn dispose(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

impl Provider for FakeProvider {
    fn id(&self) -> &str {
        "fake"
    }
    fn agent_info(&self) -> AgentInfo {
        serde_json::from_value(
            json!({ "provider": "fake", "displayName": "Fake", "description": "", "models": [] }),
        )
        .unwrap()
    }
    fn start_session(
        &self,
        request: StartSession,
    ) -> BoxFuture<'_, Result<Arc<dyn ProviderSession>, ProviderError>> {
        self.0.lock().unwrap().sink = Some(request.signals);
        let session: Arc<dyn ProviderSession> = Arc::new(FakeSession(Arc::clone(&self.0)));
        Box::pin(async move { Ok(session) })
    }
    fn restore_session(
        &self,
        request: RestoreSession,
    ) -> BoxFuture<'_, Result<Arc<dyn ProviderSession>, ProviderError>> {
        let turns = request.history.iter().map(|turn| turn.id.clone()).collect();
        self.0
            .lock()
            .unwrap()
            .restores
            .push((request.resume_handle.clone(), turns));
        self.start_session(request.start)
    }
}

type Ended = Arc<Mutex<Vec<(String, Option<String>, String)>>>;

struct TurnEnds(Ended);
impl ChatContribution for TurnEnds {
    fn on_turn_end(&self, turn: &TurnEnd) -> HookResult {
        let reason = match &turn.reason {
            TurnEndReason::Success => "success".to_owned(),
            TurnEndReason::Cancelled => "cancelled".to_owned(),
            TurnEndReason::Error { resumable, .. } => format!("error resumable={resumable}"),
            TurnEndReason::Rejected { error } => format!("rejected {}", error.error_type),
            TurnEndReason::LocalCommand => "localCommand".to_owned(),
        };
        self.0
            .lock()
            .unwrap()
            .push((turn.chat.to_string(), turn.turn_id.clone(), reason));
        Ok(())
    }
}

struct Harness {
    state: Arc<StateManager>,
    dispatcher: Dispatcher,
    orchestrator: Orchestrator,
    provider: FakeProvider,
    turn_ends: Ended,
    _registration: agenthost_dispatcher::Registration,
}

fn action(value: Value) -> StateAction {
    serde_json::from_value(value).unwrap()
}

fn session_uri() -> SessionUri {
    SessionUri::parse(SESSION).unwrap()
}

fn harness(provider_name: &str, config: OrchestratorConfig) -> Harness {
    harness_with(provider_name, config, json!([]), None)
}

/// A harness whose chat holds `turns` and whose store has the chat with `resume_handle` (the
/// host restarted after an agent conversation it can resume).
fn harness_with(
    provider_name: &str,
    config: OrchestratorConfig,
    turns: Value,
    resume_handle: Option<Value>,
) -> Harness {
    let root: RootState = serde_json::from_value(json!({ "agents": [] })).unwrap();
    let state = Arc::new(StateManager::new(root, StateConfig::default()));
    let session: SessionState = serde_json::from_value(json!({
        "provider": provider_name, "title": "S", "status": 1, "lifecycle": "ready",
        "activeClients": [], "chats": []
    }))
    .unwrap();
    let chat: ChatState = serde_json::from_value(json!({
        "resource": CHAT, "title": "C", "status": 1, "modifiedAt": "2026-01-01T00:00:00.000Z",
        "turns": turns
    }))
    .unwrap();
    state
        .insert_session(&SESSION.parse().unwrap(), session)
        .unwrap();
    state
        .insert_chat(
            &SESSION.parse().unwrap(),
            &chat.resource.parse().unwrap(),
            chat,
        )
        .unwrap();
    let dispatcher = Dispatcher::new(ServiceRegistry::new());
    let turn_ends = Arc::new(Mutex::new(Vec::new()));
    let recorder = Arc::clone(&turn_ends);
    let registration = dispatcher
        .register_with(
            Descriptor {
                id: "turnEnds",
                order: 0,
                hooks: HookSet::of(&[Hook::TurnEnd]),
            },
            move |_, _| Ok(Arc::new(TurnEnds(recorder))),
        )
        .unwrap();
    let provider = FakeProvider::default();
    let store = agenthost_store::Store::open_in_memory().unwrap();
    if let Some(handle) = resume_handle {
        let (session, chat) = (session_uri(), ChatUri::parse(CHAT).unwrap());
        store
            .put_session(&agenthost_store::SessionRecord {
                uri: session.clone(),
                provider: provider_name.to_owned(),
                title: "S".into(),
                title_source: agenthost_store::TitleSource::default(),
                created_at: "2026-01-01T00:00:00.000Z".into(),
                modified_at: "2026-01-01T00:00:00.000Z".into(),
                working_directories: Vec::new(),
                read: true,
                archived: false,
                default_chat: None,
            })
            .unwrap();
        store
            .put_chat(&agenthost_store::ChatRecord {
                uri: chat,
                session,
                position: 0,
                title: "C".into(),
                title_source: agenthost_store::TitleSource::default(),
                modified_at: "2026-01-01T00:00:00.000Z".into(),
                origin: None,
                interactivity: None,
                read: true,
                archived: false,
                draft: None,
                config: None,
                resume_handle: Some(handle),
                subagent: false,
            })
            .unwrap();
    }
    let orchestrator = Orchestrator::start(
        Arc::clone(&state),
        dispatcher.clone(),
        vec![Arc::new(provider.clone())],
        store,
        config,
    )
    .unwrap();
    Harness {
        state,
        dispatcher,
        orchestrator,
        provider,
        turn_ends,
        _registration: registration,
    }
}

impl Harness {
    fn client(&self, channel: &str, value: Value) -> ClientDispatch {
        let origin = ActionOrigin {
            client_id: "client-a".into(),
            client_seq: 1,
        };
        let outcome = self.state.dispatch_client(channel, action(value), origin);
        if let ClientDispatch::Accepted(envelope) = &outcome {
            self.orchestrator
                .after_client_action(envelope, &ClientContext::unknown(LaunchKind::Serve));
        }
        outcome
    }

    async fn start_turn(&self, turn: &str) {
        self.client(
            CHAT,
            json!({
                "type": "chat/turnStarted", "turnId": turn, "startedAt": "2026-01-01T00:00:00.000Z",
                "message": { "text": "hello", "origin": { "kind": "user" } }
            }),
        );
        settle().await;
    }

    fn sink(&self) -> SignalSink {
        self.provider
            .0
            .lock()
            .unwrap()
            .sink
            .clone()
            .expect("the provider session started")
    }

    async fn signal(&self, signal: AgentSignal) {
        self.sink().send(signal).await.unwrap();
        settle().await;
    }

    async fn act(&self, value: Value, parent: Option<&str>) {
        self.signal(AgentSignal::Action(ActionSignal {
            session: session_uri(),
            action: action(value),
            parent_tool_call_id: parent.map(|p| SafeId::new(p).unwrap()),
        }))
        .await;
    }

    fn chat(&self, uri: &str) -> Option<ChatState> {
        self.state.read(|h| h.chat(uri).cloned())
    }

    fn turn_ends(&self) -> Vec<(String, Option<String>, String)> {
        self.turn_ends.lock().unwrap().clone()
    }
}

/// Lets spawned tasks run (the clock is paused, so this never sleeps for real).
async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

fn subagent_chat(parent: &str) -> String {
    ChatUri::subagent(&session_uri(), &SafeId::new(parent).unwrap()).into_string()
}

fn pending(turn: &str, call: &str, parent: Option<&str>) -> AgentSignal {
    AgentSignal::PendingConfirmation(PendingConfirmation {
        session: session_uri(),
        turn_id: turn.into(),
        state: serde_json::from_value(json!({
            "toolCallId": call, "toolName": "bash", "displayName": "Bash", "invocationMessage": "ls"
        }))
        .unwrap(),
        permission_kind: PermissionKind::Shell,
        permission_path: None,
        parent_tool_call_id: parent.map(|p| SafeId::new(p).unwrap()),
    })
}

#[tokio::test(start_paused = true)]
async fn a_client_turn_reaches_the_provider_and_its_signals_reach_the_chat() {
    let h = harness("fake", OrchestratorConfig::default());
    h.start_turn("t1").await;
    assert_eq!(h.provider.0.lock().unwrap().turns[0].text, "hello");
    h.act(json!({ "type": "chat/responsePart", "turnId": "t1", "part": { "kind": "markdown", "id": "m", "content": "Hi" } }), None).await;
    h.act(
        json!({ "type": "chat/turnComplete", "turnId": "t1", "duration": 5 }),
        None,
    )
    .await;
    let chat = h.chat(CHAT).unwrap();
    assert_eq!(chat.turns.len(), 1);
    assert_eq!(
        h.turn_ends(),
        [(CHAT.to_owned(), Some("t1".to_owned()), "success".to_owned())]
    );
}

/// A local command: answers every request itself.
struct HandlesEverything;
impl ChatContribution for HandlesEverything {
    fn on_incoming_request(
        &self,
        _: &agenthost_dispatcher::IncomingRequest,
    ) -> HookResult<Option<agenthost_dispatcher::Disposition>> {
        Ok(Some(agenthost_dispatcher::Disposition::Handled))
    }
}

#[tokio::test(start_paused = true)]
async fn a_handled_request_never_reaches_the_provider_and_ends_as_a_local_command() {
    let h = harness("fake", OrchestratorConfig::default());
    let _handler = h
        .dispatcher
        .register_with(
            Descriptor {
                id: "handlesEverything",
                order: 50,
                hooks: HookSet::of(&[Hook::IncomingRequest]),
            },
            |_, _| Ok(Arc::new(HandlesEverything)),
        )
        .unwrap();
    h.start_turn("t1").await;
    assert!(h.provider.0.lock().unwrap().turns.is_empty());
    assert_eq!(
        h.turn_ends(),
        [(
            CHAT.to_owned(),
            Some("t1".to_owned()),
            "localCommand".to_owned()
        )]
    );
}

#[tokio::test(start_paused = true)]
async fn stale_producer_output_is_dropped() {
    let h = harness("fake", OrchestratorConfig::default());
    h.start_turn("t1").await;
    let seq = h.state.server_seq();
    h.act(
        json!({ "type": "chat/delta", "turnId": "old", "partId": "m", "content": "x" }),
        None,
    )
    .await;
    assert_eq!(
        h.state.server_seq(),
        seq,
        "nothing dispatched for a stale turn"
    );
    // A turn-complete with no active turn still reports success without a turn id.
    h.act(
        json!({ "type": "chat/turnComplete", "turnId": "t1", "duration": 5 }),
        None,
    )
    .await;
    h.act(
        json!({ "type": "chat/turnComplete", "turnId": "t1", "duration": 5 }),
        None,
    )
    .await;
    assert_eq!(
        h.turn_ends(),
        [
            (CHAT.to_owned(), Some("t1".to_owned()), "success".to_owned()),
            (CHAT.to_owned(), None, "success".to_owned()),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_session_without_a_known_provider_ends_the_turn_with_no_agent() {
    let h = harness("missing", OrchestratorConfig::default());
    h.start_turn("t1").await;
    let chat = h.chat(CHAT).unwrap();
    assert!(chat.active_turn.is_none());
    assert_eq!(
        chat.turns[0].state,
        agenthost_protocol::ahp_types::state::TurnState::Error
    );
    assert_eq!(
        h.turn_ends(),
        [(
            CHAT.to_owned(),
            Some("t1".to_owned()),
            "rejected noAgent".to_owned()
        )]
    );
}

#[tokio::test(start_paused = true)]
async fn confirmations_and_cancellation_reach_the_provider() {
    let h = harness("fake", OrchestratorConfig::default());
    h.start_turn("t1").await;
    h.act(json!({ "type": "chat/toolCallStart", "turnId": "t1", "toolCallId": "c1", "toolName": "bash", "displayName": "Bash" }), None).await;
    h.signal(pending("t1", "c1", None)).await;
    h.client(CHAT, json!({ "type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": "c1", "approved": true, "confirmed": "user-action" }));
    settle().await;
    assert_eq!(
        h.provider.0.lock().unwrap().permissions,
        [("c1".to_owned(), PermissionDecision::Approve)]
    );
    h.client(
        CHAT,
        json!({ "type": "chat/turnCancelled", "turnId": "t1", "duration": 9 }),
    );
    settle().await;
    assert_eq!(h.provider.0.lock().unwrap().cancels, ["t1"]);
    // The provider's own cancellation afterwards reports no second turn end.
    h.act(
        json!({ "type": "chat/turnCancelled", "turnId": "t1", "duration": 9 }),
        None,
    )
    .await;
    assert_eq!(
        h.turn_ends(),
        [(
            CHAT.to_owned(),
            Some("t1".to_owned()),
            "cancelled".to_owned()
        )]
    );
}

/// An input request the agent asked is answered from the client's `chat/inputCompleted`, with
/// the drafts the request collected merged with the completion's own answers.
#[tokio::test(start_paused = true)]
async fn input_answers_reach_the_provider_with_the_merged_answers() {
    let h = harness("fake", OrchestratorConfig::default());
    h.start_turn("t1").await;
    h.act(
        json!({ "type": "chat/inputRequested", "request": {
            "id": "ask-1", "message": "Which?",
            "questions": [
                { "kind": "text", "id": "q0", "message": "Name?" },
                { "kind": "single-select", "id": "q1", "message": "Pick",
                  "options": [{ "id": "o0", "label": "A" }, { "id": "o1", "label": "B" }] }
            ]
        }}),
        None,
    )
    .await;
    h.client(
        CHAT,
        json!({ "type": "chat/inputAnswerChanged", "requestId": "ask-1", "questionId": "q0",
                "answer": { "state": "submitted", "value": { "kind": "text", "value": "Ada" } } }),
    );
    h.client(
        CHAT,
        json!({ "type": "chat/inputCompleted", "requestId": "ask-1", "response": "accept",
                "answers": { "q1": { "state": "submitted", "value": { "kind": "selected", "value": "o1" } } } }),
    );
    settle().await;
    let inputs = h.provider.0.lock().unwrap().inputs.clone();
    assert_eq!(inputs.len(), 1, "{inputs:?}");
    let (id, response) = &inputs[0];
    assert_eq!(id, "ask-1");
    assert_eq!(
        response.response,
        agenthost_protocol::ahp_types::state::ChatInputResponseKind::Accept
    );
    assert_eq!(response.answer_texts("q0"), ["Ada"]);
    assert_eq!(response.answer_texts("q1"), ["o1"]);
    assert!(h.provider.0.lock().unwrap().permissions.is_empty());
}

/// A client tool's completion by its owning client reaches the agent; a client completing a
/// call it does not own is rejected and the agent hears nothing.
#[tokio::test(start_paused = true)]
async fn client_tool_results_reach_the_provider_from_the_owning_client_only() {
    let h = harness("fake", OrchestratorConfig::default());
    h.start_turn("t1").await;
    for (call, contributor) in [
        ("own", json!({ "kind": "client", "clientId": "client-a" })),
        (
            "theirs",
            json!({ "kind": "client", "clientId": "client-b" }),
        ),
    ] {
        h.act(
            json!({ "type": "chat/toolCallStart", "turnId": "t1", "toolCallId": call,
                    "toolName": "probe", "displayName": "Probe", "contributor": contributor }),
            None,
        )
        .await;
        h.act(
            json!({ "type": "chat/toolCallReady", "turnId": "t1", "toolCallId": call,
                    "invocationMessage": "Run Probe", "confirmed": "not-needed" }),
            None,
        )
        .await;
    }
    let complete = |call: &str| {
        json!({ "type": "chat/toolCallComplete", "turnId": "t1", "toolCallId": call,
                "result": { "success": true, "pastTenseMessage": "Probed",
                            "content": [{ "type": "text", "text": "42" }] } })
    };
    assert!(matches!(
        h.client(CHAT, complete("theirs")),
        ClientDispatch::Rejected(_)
    ));
    assert!(matches!(
        h.client(CHAT, complete("own")),
        ClientDispatch::Accepted(_)
    ));
    settle().await;
    let results = h.provider.0.lock().unwrap().client_results.clone();
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0].0, "own");
    assert!(results[0].1.success);
}

#[tokio::test(start_paused = true)]
async fn subagent_actions_go_to_their_own_chat_with_its_turn_id() {
    let h = harness("fake", OrchestratorConfig::default());
    h.start_turn("t1").await;
    h.signal(AgentSignal::SubagentStarted(SubagentStarted {
        session: session_uri(),
        tool_call_id: SafeId::new("task-1").unwrap(),
        agent_name: "explore".into(),
        agent_display_name: "Explorer".into(),
        agent_description: None,
        task_description: Some("Look around".into()),
        task_prompt: Some("List the files".into()),
        parent_tool_call_id: None,
    }))
    .await;
    let sub = subagent_chat("task-1");
    let chat = h.chat(&sub).expect("the subagent chat exists");
    assert_eq!(
        chat.interactivity,
        Some(agenthost_protocol::ahp_types::state::ChatInteractivity::ReadOnly)
    );
    let turn = chat.active_turn.as_ref().unwrap();
    assert_eq!(turn.message.text, "List the files");
    assert!(h.state.read(|hs| {
        hs.session(SESSION)
            .unwrap()
            .chats
            .iter()
            .any(|c| c.resource == sub)
    }));
    // Actions carry the parent's turn id and are remapped.
    h.act(json!({ "type": "chat/responsePart", "turnId": "t1", "part": { "kind": "markdown", "id": "m", "content": "found" } }), Some("task-1")).await;
    assert_eq!(
        h.chat(&sub)
            .unwrap()
            .active_turn
            .unwrap()
            .response_parts
            .len(),
        1
    );
    assert!(
        h.chat(CHAT)
            .unwrap()
            .active_turn
            .unwrap()
            .response_parts
            .is_empty()
    );
    h.signal(AgentSignal::SubagentCompleted(SubagentCompleted {
        session: session_uri(),
        tool_call_id: SafeId::new("task-1").unwrap(),
    }))
    .await;
    assert_eq!(h.chat(&sub).unwrap().turns.len(), 1);
    assert!(
        h.turn_ends()
            .iter()
            .any(|(c, _, r)| c == &sub && r == "success")
    );
}

#[tokio::test(start_paused = true)]
async fn early_subagent_signals_are_buffered_until_it_starts() {
    let h = harness("fake", OrchestratorConfig::default());
    h.start_turn("t1").await;
    h.act(json!({ "type": "chat/responsePart", "turnId": "t1", "part": { "kind": "markdown", "id": "m", "content": "early" } }), Some("task-2")).await;
    let sub = subagent_chat("task-2");
    assert!(h.chat(&sub).is_none());
    h.signal(AgentSignal::SubagentStarted(SubagentStarted {
        session: session_uri(),
        tool_call_id: SafeId::new("task-2").unwrap(),
        agent_name: "a".into(),
        agent_display_name: "A".into(),
        agent_description: None,
        task_description: None,
        task_prompt: None,
        parent_tool_call_id: None,
    }))
    .await;
    let parts = h.chat(&sub).unwrap().active_turn.unwrap().response_parts;
    assert_eq!(
        parts.len(),
        1,
        "the buffered action was drained into the subagent chat"
    );
}

#[tokio::test(start_paused = true)]
async fn a_subagent_that_never_starts_gets_its_confirmations_denied_and_a_notice() {
    let config = OrchestratorConfig {
        subagent_start_timeout: Duration::from_secs(5),
        ..OrchestratorConfig::default()
    };
    let h = harness("fake", config);
    h.start_turn("t1").await;
    h.signal(pending("t1", "inner-call", Some("task-3"))).await;
    assert!(h.provider.0.lock().unwrap().permissions.is_empty());
    tokio::time::sleep(Duration::from_secs(4)).await;
    settle().await;
    assert!(
        h.provider.0.lock().unwrap().permissions.is_empty(),
        "not before the timeout"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    settle().await;
    let permissions = h.provider.0.lock().unwrap().permissions.clone();
    assert_eq!(permissions.len(), 1);
    assert_eq!(permissions[0].0, "inner-call");
    assert!(matches!(permissions[0].1, PermissionDecision::Deny { .. }));
    let parts = h.chat(CHAT).unwrap().active_turn.unwrap().response_parts;
    assert!(matches!(
        parts.last(),
        Some(agenthost_protocol::ahp_types::state::ResponsePart::SystemNotification(_))
    ));
    // Late signals for the failed subagent are dropped.
    let seq = h.state.server_seq();
    h.act(
        json!({ "type": "chat/delta", "turnId": "t1", "partId": "m", "content": "late" }),
        Some("task-3"),
    )
    .await;
    assert_eq!(h.state.server_seq(), seq);
}

#[test]
fn the_buffer_is_bounded_and_remembers_failures() {
    let mut buffer = SubagentBuffer::new(2, 1);
    let key = |k: &str| (ChatUri::parse("ahp-chat:/c").unwrap(), k.to_owned());
    let signal = || {
        AgentSignal::SteeringConsumed(agenthost_protocol::SteeringConsumed {
            session: session_uri(),
            id: "s".into(),
        })
    };
    assert_eq!(buffer.push(key("a"), signal()), super::Buffered::First);
    assert_eq!(buffer.push(key("a"), signal()), super::Buffered::Queued);
    assert_eq!(buffer.push(key("b"), signal()), super::Buffered::Full);
    assert_eq!(buffer.take(&key("a")).len(), 2);
    assert_eq!(buffer.push(key("b"), signal()), super::Buffered::First);
    assert_eq!(buffer.fail(&key("b")).map(|s| s.len()), Some(1));
    assert_eq!(buffer.push(key("b"), signal()), super::Buffered::Failed);
    assert_eq!(buffer.fail(&key("nothing")), None);
    // The failure memory is bounded too.
    buffer.push(key("c"), signal());
    buffer.fail(&key("c"));
    assert_eq!(buffer.push(key("b"), signal()), super::Buffered::First);
}

#[tokio::test(start_paused = true)]
async fn the_next_turn_reaches_the_agent_once_it_stopped_the_cancelled_one() {
    let h = harness("fake", OrchestratorConfig::default());
    h.start_turn("t1").await;
    let release = Arc::new(tokio::sync::Notify::new());
    h.provider.0.lock().unwrap().cancel_held = Some(Arc::clone(&release));
    h.client(
        CHAT,
        json!({ "type": "chat/turnCancelled", "turnId": "t1", "duration": 9 }),
    );
    // The client sees the turn cancelled at once and sends the next one.
    h.start_turn("t2").await;
    let sent = |h: &Harness| -> Vec<String> {
        let recorded = h.provider.0.lock().unwrap();
        recorded.turns.iter().map(|t| t.turn_id.clone()).collect()
    };
    assert_eq!(
        sent(&h),
        ["t1"],
        "t2 was sent while the agent was still stopping t1"
    );
    release.notify_one();
    settle().await;
    assert_eq!(sent(&h), ["t1", "t2"]);
}

#[tokio::test(start_paused = true)]
async fn a_cancel_that_never_returns_holds_the_next_turn_only_until_the_settle_timeout() {
    let config = OrchestratorConfig {
        cancel_settle_timeout: std::time::Duration::from_secs(3),
        ..OrchestratorConfig::default()
    };
    let h = harness("fake", config);
    h.start_turn("t1").await;
    // Never notified: the agent's cancel never returns.
    h.provider.0.lock().unwrap().cancel_held = Some(Arc::new(tokio::sync::Notify::new()));
    h.client(
        CHAT,
        json!({ "type": "chat/turnCancelled", "turnId": "t1", "duration": 9 }),
    );
    h.start_turn("t2").await;
    let sent = |h: &Harness| h.provider.0.lock().unwrap().turns.len();
    tokio::time::sleep(std::time::Duration::from_millis(2900)).await;
    settle().await;
    assert_eq!(sent(&h), 1, "still waiting for the cancel");
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    settle().await;
    assert_eq!(sent(&h), 2, "sent once the settle timeout passed");
}

#[tokio::test]
async fn a_restored_conversation_is_given_the_chats_earlier_turns() {
    let earlier = json!([{
        "id": "t0", "message": { "text": "before the restart", "origin": { "kind": "user" } },
        "responseParts": [{ "kind": "markdown", "id": "t0#m", "content": "noted" }],
        "state": "complete"
    }]);
    let handle = json!({ "sessionId": "agent-s1" });
    let h = harness_with(
        "fake",
        OrchestratorConfig::default(),
        earlier,
        Some(handle.clone()),
    );
    h.start_turn("t1").await;
    let restores = h.provider.0.lock().unwrap().restores.clone();
    assert_eq!(restores, vec![(handle, vec!["t0".to_owned()])]);
}
