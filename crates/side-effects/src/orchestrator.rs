//! The orchestrator: shared state, lifecycle of provider sessions, and client-action handling.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use agenthost_dispatcher::{
    AppliedClientAction, ClientContext, DispatchedAction, Dispatcher, HostBridge, HostRegistration,
    LaunchKind, RequestSource, SendTurnMessageOptions, TurnEnd, TurnEndReason,
};
use agenthost_protocol::error_info::chat_error;
use agenthost_protocol::state::{ErrorInfo, ResponsePart, ToolCallResult};
use agenthost_protocol::{ActionEnvelope, StateAction};
use agenthost_protocol::{ChatUri, SessionUri};
use agenthost_provider_api::{
    InputResponse, PermissionDecision, Provider, ProviderSession, RoutedSignal, signal_channel,
};
use agenthost_services::{CheckpointService, ToolCallTracker, TurnCompletion, TurnTracker};
use agenthost_state::{EnvelopeObserver, ObservedEnvelope, StateManager};
use agenthost_store::Store;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::routing::SubagentBuffer;

/// A client's answer the agent is waiting for.
enum AgentAnswer {
    /// `chat/toolCallConfirmed`.
    Permission(PermissionDecision),
    /// `chat/inputCompleted`, with the request's final answers.
    Input(InputResponse),
    /// `chat/toolCallComplete` of a client tool.
    ClientTool(ToolCallResult),
}

/// Tunables; every timeout is configurable so tests can make it short.
#[derive(Debug, Clone)]
pub struct OrchestratorConfig {
    /// How the host process was launched (fallback client context).
    pub launch_kind: LaunchKind,
    /// Where agents work when a session names no working directory.
    pub default_directory: PathBuf,
    /// Capacity of the provider signal queue (providers wait when it is full).
    pub signal_queue: usize,
    /// Most signals buffered for subagents that have not started yet, over all of them.
    pub subagent_buffer_limit: usize,
    /// How long buffered subagent signals wait for their subagent to start.
    pub subagent_start_timeout: Duration,
    /// How many failed subagent routes are remembered (their late signals are dropped).
    pub failed_route_memory: usize,
    /// How long a chat's next turn waits for the agent to finish cancelling the previous one;
    /// past it the turn is sent anyway (logged), so a wedged agent cannot hold the chat.
    pub cancel_settle_timeout: Duration,
}

impl Default for OrchestratorConfig {
    fn default() -> Self {
        Self {
            launch_kind: LaunchKind::Serve,
            default_directory: PathBuf::from("."),
            signal_queue: 1024,
            subagent_buffer_limit: 1000,
            subagent_start_timeout: Duration::from_secs(30),
            failed_route_memory: 256,
            cancel_settle_timeout: Duration::from_secs(10),
        }
    }
}

/// Errors of the orchestrator's set-up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OrchestratorError {
    /// Another host bridge is registered with the dispatcher.
    #[error("another orchestrator is registered with the contribution dispatcher")]
    HostAlreadyRegistered,
}

/// The provider conversation serving a chat (subagent chats share their parent's).
#[derive(Clone)]
pub(crate) struct ChatRuntime {
    pub(crate) provider: Arc<dyn ProviderSession>,
}

/// A turn the orchestrator tracks: when it started and who started it.
#[derive(Clone)]
pub(crate) struct TrackedTurn {
    pub(crate) turn_id: String,
    pub(crate) started: Instant,
    pub(crate) client_context: Option<ClientContext>,
}

#[derive(Default)]
pub(crate) struct Runtime {
    pub(crate) chats: HashMap<String, ChatRuntime>,
    pub(crate) turns: HashMap<String, TrackedTurn>,
    /// Turns a client cancelled: a provider terminal signal for them reports no second turn end.
    pub(crate) cancelled: HashSet<(String, String)>,
    /// Per chat, the agent's cancel still running (`true` once it returned): the chat's next
    /// turn is sent after it, so the agent never gets a turn while it is still stopping one.
    pub(crate) cancelling: HashMap<String, tokio::sync::watch::Receiver<bool>>,
    pub(crate) subagents: SubagentBuffer,
}

pub(crate) struct Shared {
    pub(crate) state: Arc<StateManager>,
    pub(crate) dispatcher: Dispatcher,
    pub(crate) providers: HashMap<String, Arc<dyn Provider>>,
    pub(crate) config: OrchestratorConfig,
    pub(crate) signals: mpsc::Sender<RoutedSignal>,
    pub(crate) runtime: Mutex<Runtime>,
    /// Where each chat's provider resume handle is kept across restarts.
    pub(crate) store: Store,
    /// The turn and tool-call trackers, when the dispatcher's registry has them: told when a
    /// turn is admitted and when it ends (with its end reason).
    pub(crate) trackers: Option<(Arc<dyn TurnTracker>, Arc<dyn ToolCallTracker>)>,
    /// The checkpoint service, when the dispatcher's registry has one: the turn-start capture
    /// right before the send, and its discard when the turn is cancelled.
    pub(crate) checkpoints: Option<Arc<dyn CheckpointService>>,
}

impl Shared {
    /// Waits until the agent's cancel of `chat`'s previous turn returned, when one runs.
    pub(crate) async fn cancel_settled(&self, chat: &str) {
        let pending = self.runtime().cancelling.remove(chat);
        if let Some(mut cancelling) = pending {
            // A cancel task that died without saying so counts as done.
            let limit = self.config.cancel_settle_timeout;
            let settled = tokio::time::timeout(limit, cancelling.wait_for(|done| *done)).await;
            if settled.is_err() {
                tracing::warn!(
                    chat,
                    ?limit,
                    "still cancelling: the next turn is sent anyway"
                );
            }
        }
    }

    pub(crate) fn runtime(&self) -> MutexGuard<'_, Runtime> {
        // Runtime updates are single insertions/removals; a poisoned lock holds consistent maps.
        self.runtime.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Dispatches a server action, logging (not propagating) a refusal: the host's own actions
    /// are refused only when their chat vanished meanwhile.
    pub(crate) fn dispatch(&self, channel: &str, action: StateAction) -> bool {
        match self.state.dispatch_server(channel, action) {
            Ok(_) => true,
            Err(error) => {
                tracing::debug!(channel, %error, "host action not applied");
                false
            }
        }
    }

    /// Stops the agent's turn `turn_id` of `chat`, as a cancel does: its later output is
    /// dropped, the agent is asked to cancel on a task, and the chat's next turn waits for that.
    pub(crate) fn stop_agent(&self, chat: &ChatUri, turn_id: &str) {
        let mut runtime = self.runtime();
        runtime
            .cancelled
            .insert((chat.to_string(), turn_id.to_owned()));
        let Some(agent) = runtime.chats.get(chat.as_str()).cloned() else {
            return;
        };
        let (done, cancelling) = tokio::sync::watch::channel(false);
        runtime.cancelling.insert(chat.to_string(), cancelling);
        drop(runtime);
        let turn_id = turn_id.to_owned();
        tokio::spawn(async move {
            if let Err(error) = agent.provider.cancel(&turn_id).await {
                tracing::warn!(%error, "the agent could not cancel the turn");
            }
            let _ = done.send(true);
        });
    }

    pub(crate) fn elapsed_ms(&self, chat: &str) -> i64 {
        self.runtime().turns.get(chat).map_or(0, |t| {
            i64::try_from(t.started.elapsed().as_millis()).unwrap_or(i64::MAX)
        })
    }

    /// The session owning `chat`.
    pub(crate) fn session_of(&self, chat: &str) -> Option<SessionUri> {
        self.state.read(|h| h.chat_session(chat).cloned())
    }

    /// The typed URI of the existing chat `channel` and its session's; `None` for any other
    /// channel.
    pub(crate) fn chat_of(&self, channel: &str) -> Option<(SessionUri, ChatUri)> {
        self.state.read(|h| {
            let chat = h.chat_uri(channel)?;
            Some((h.chat_session(channel)?.clone(), chat.clone()))
        })
    }

    pub(crate) fn active_turn_id(&self, chat: &str) -> Option<String> {
        self.state.read(|h| {
            h.chat(chat)
                .and_then(|c| c.active_turn.as_ref().map(|t| t.id.clone()))
        })
    }

    /// Tracks `chat`'s turn `turn_id` (its start and sender), for its duration and the
    /// turn-end hooks.
    pub(crate) fn track_turn(
        &self,
        chat: &str,
        turn_id: &str,
        started: Instant,
        client_context: &ClientContext,
    ) {
        self.runtime().turns.insert(
            chat.to_owned(),
            TrackedTurn {
                turn_id: turn_id.to_owned(),
                started,
                client_context: Some(client_context.clone()),
            },
        );
    }

    /// Forgets the turn-start checkpoint of a turn that will get no turn-end capture (it was
    /// cancelled), in the background.
    pub(crate) fn discard_turn_start(&self, session: &SessionUri, chat: &ChatUri, turn_id: &str) {
        let (Some(checkpoints), Ok(runtime)) = (
            self.checkpoints.clone(),
            tokio::runtime::Handle::try_current(),
        ) else {
            return;
        };
        let (session, chat, turn_id) = (session.clone(), chat.clone(), turn_id.to_owned());
        runtime.spawn(async move {
            checkpoints
                .discard_turn_start(&session, &chat, &turn_id)
                .await;
        });
    }

    /// `onTurnEnd` with the reason of the call-site table.
    pub(crate) fn turn_end(&self, chat: &ChatUri, turn_id: Option<&str>, reason: TurnEndReason) {
        let Some(session) = self.session_of(chat) else {
            return;
        };
        if let (Some((turns, tool_calls)), Some(turn_id)) = (&self.trackers, turn_id) {
            turns.turn_completed(chat, turn_id, completion_of(&reason));
            tool_calls.clear(chat, Some(turn_id));
        }
        if let (TurnEndReason::Cancelled, Some(turn_id)) = (&reason, turn_id) {
            self.discard_turn_start(&session, chat, turn_id);
        }
        let client_context = {
            let mut runtime = self.runtime();
            let tracked = runtime
                .turns
                .get(chat.as_str())
                .filter(|t| Some(t.turn_id.as_str()) == turn_id);
            let context = tracked.and_then(|t| t.client_context.clone());
            if tracked.is_some() {
                runtime.turns.remove(chat.as_str());
            }
            context
        };
        self.dispatcher.turn_end(&TurnEnd {
            session,
            chat: chat.clone(),
            turn_id: turn_id.map(str::to_owned),
            reason,
            client_context,
        });
    }
}

/// The tracker's word for why a turn ended.
fn completion_of(reason: &TurnEndReason) -> TurnCompletion {
    match reason {
        TurnEndReason::Success => TurnCompletion::Success,
        TurnEndReason::Cancelled => TurnCompletion::Cancelled,
        TurnEndReason::Error { resumable, .. } => TurnCompletion::Error {
            resumable: *resumable,
        },
        TurnEndReason::Rejected { .. } => TurnCompletion::Rejected,
        TurnEndReason::LocalCommand => TurnCompletion::LocalCommand,
    }
}

/// The orchestrator. Create it with [`Orchestrator::start`] inside a tokio runtime.
#[derive(Clone)]
pub struct Orchestrator {
    shared: Arc<Shared>,
    _host: Arc<HostRegistration>,
}

impl fmt::Debug for Orchestrator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Orchestrator").finish_non_exhaustive()
    }
}

/// The host bridge handed to contributions: a weak link back to the orchestrator.
struct Bridge {
    shared: Weak<Shared>,
    launch_kind: LaunchKind,
}

impl HostBridge for Bridge {
    fn launch_kind(&self) -> LaunchKind {
        self.launch_kind.clone()
    }

    fn send_turn_message(&self, options: SendTurnMessageOptions) {
        if let Some(shared) = self.shared.upgrade() {
            // A turn admitted by a contribution (a queued message): tracked like a client's, so
            // its duration and sender reach the turn-end hooks.
            let started = Instant::now()
                .checked_sub(options.turn_stopwatch.elapsed())
                .unwrap_or_else(Instant::now);
            shared.track_turn(
                &options.chat,
                &options.turn_id,
                started,
                &options.client_context,
            );
            tokio::spawn(crate::turns::send_tail(shared, options));
        }
    }
}

/// Bridges every envelope of a state manager to the dispatcher's `onDidDispatchAction` — the
/// orchestrator installs one; a contribution's tests install one to see their own actions come
/// back as the host does.
pub struct DispatchObserver {
    dispatcher: Dispatcher,
}

impl DispatchObserver {
    /// Bridges to `dispatcher`.
    pub fn new(dispatcher: Dispatcher) -> Self {
        Self { dispatcher }
    }
}

impl EnvelopeObserver for DispatchObserver {
    fn on_envelope(&self, observed: &ObservedEnvelope<'_>) {
        let envelope = observed.envelope;
        self.dispatcher.did_dispatch_action(&DispatchedAction {
            channel: &envelope.channel,
            session: observed.session,
            chat: observed.chat,
            action: &envelope.action,
            origin: envelope.origin.as_ref(),
            rejection_reason: envelope.rejection_reason.as_deref(),
        });
    }
}

impl Orchestrator {
    /// Wires the orchestrator: registers it as the dispatcher's host bridge, observes every
    /// envelope for `onDidDispatchAction`, and spawns the signal router.
    pub fn start(
        state: Arc<StateManager>,
        dispatcher: Dispatcher,
        providers: Vec<Arc<dyn Provider>>,
        store: Store,
        config: OrchestratorConfig,
    ) -> Result<Self, OrchestratorError> {
        let (signals, receiver) = signal_channel(config.signal_queue);
        let providers = providers
            .into_iter()
            .map(|p| (p.id().to_owned(), p))
            .collect();
        let subagents =
            SubagentBuffer::new(config.subagent_buffer_limit, config.failed_route_memory);
        let shared = Arc::new(Shared {
            state: Arc::clone(&state),
            dispatcher: dispatcher.clone(),
            providers,
            config,
            signals,
            runtime: Mutex::new(Runtime {
                subagents,
                ..Runtime::default()
            }),
            store,
            trackers: dispatcher
                .services()
                .get::<dyn TurnTracker>()
                .ok()
                .zip(dispatcher.services().get::<dyn ToolCallTracker>().ok()),
            checkpoints: dispatcher.services().get::<dyn CheckpointService>().ok(),
        });
        let bridge = Arc::new(Bridge {
            shared: Arc::downgrade(&shared),
            launch_kind: shared.config.launch_kind.clone(),
        });
        let host = dispatcher
            .register_host(bridge)
            .map_err(|_| OrchestratorError::HostAlreadyRegistered)?;
        state.add_observer(Arc::new(DispatchObserver::new(dispatcher)));
        tokio::spawn(crate::routing::route_signals(
            Arc::downgrade(&shared),
            receiver,
        ));
        Ok(Self {
            shared,
            _host: Arc::new(host),
        })
    }

    /// Starts a turn the host dispatched itself (a `chat/turnStarted` already applied, such as a
    /// chat's `initialMessage`) through the same turn starter as a client's turn: the admission
    /// gate decides in this call, the agent is sent the turn on a task.
    pub fn start_turn(
        &self,
        chat: &ChatUri,
        turn_id: &str,
        message: agenthost_protocol::ahp_types::state::Message,
        client_context: ClientContext,
    ) {
        self.shared
            .track_turn(chat, turn_id, Instant::now(), &client_context);
        let request = crate::turns::TurnStart {
            chat: chat.clone(),
            turn_id: turn_id.to_owned(),
            message,
            source: RequestSource::Direct,
            client_id: client_context.client_id.clone(),
            client_context,
        };
        crate::turns::start_turn(Arc::clone(&self.shared), request);
    }

    /// The host's side of an accepted client action (AHP §7): start the provider turn, answer a
    /// permission, abort a cancelled turn — then `onDidApplyClientAction`, always.
    pub fn after_client_action(&self, envelope: &ActionEnvelope, client_context: &ClientContext) {
        let shared = &self.shared;
        let channel = envelope.channel.as_str();
        let chat = shared.chat_of(channel);
        if let Some((_, chat)) = &chat {
            self.take_chat_action(chat, &envelope.action, client_context);
        }
        let (session, chat) = match chat {
            Some((session, chat)) => (Some(session), Some(chat)),
            None => (shared.state.read(|h| h.session_uri(channel).cloned()), None),
        };
        shared
            .dispatcher
            .did_apply_client_action(&AppliedClientAction {
                channel,
                session: session.as_ref(),
                chat: chat.as_ref(),
                action: &envelope.action,
                client_id: envelope.origin.as_ref().map(|o| o.client_id.as_str()),
                client_context,
            });
    }

    /// What the host does for a client's accepted action on a chat: start the provider turn,
    /// answer a permission or an input request, abort a cancelled turn.
    fn take_chat_action(
        &self,
        chat: &ChatUri,
        action: &StateAction,
        client_context: &ClientContext,
    ) {
        let shared = &self.shared;
        match action {
            StateAction::ChatTurnStarted(a) => {
                self.start_turn(chat, &a.turn_id, a.message.clone(), client_context.clone());
            }
            // The reducer reopened the errored turn: the agent is asked again, with the turn's
            // message, under the same turn id (a retry of what failed).
            StateAction::ChatTurnResume(a) => {
                let message = shared.state.read(|h| {
                    h.chat(chat)
                        .and_then(|c| c.active_turn.as_ref())
                        .filter(|turn| turn.id == a.turn_id)
                        .map(|turn| turn.message.clone())
                });
                if let Some(message) = message {
                    self.start_turn(chat, &a.turn_id, message, client_context.clone());
                }
            }
            StateAction::ChatToolCallConfirmed(a) => {
                let decision =
                    if a.approved {
                        PermissionDecision::Approve
                    } else {
                        PermissionDecision::Deny {
                            reason: a.user_suggestion.as_ref().map(|m| m.text.clone()).or_else(
                                || a.reason_message.as_ref().map(|r| r.as_text().to_owned()),
                            ),
                        }
                    };
                self.answer_agent(
                    chat,
                    a.tool_call_id.clone(),
                    AgentAnswer::Permission(decision),
                );
            }
            StateAction::ChatInputCompleted(a) => {
                // The reducer merged the completion's answers into the part's drafts: the part
                // holds the final answers.
                let answers = shared
                    .state
                    .read(|h| {
                        h.chat(chat)
                            .and_then(|c| c.active_turn.as_ref())
                            .and_then(|turn| {
                                turn.response_parts.iter().find_map(|part| match part {
                                    ResponsePart::InputRequest(input)
                                        if input.request.id == a.request_id =>
                                    {
                                        input.request.answers.clone()
                                    }
                                    _ => None,
                                })
                            })
                    })
                    .unwrap_or_default();
                let response = InputResponse {
                    response: a.response,
                    answers,
                };
                self.answer_agent(chat, a.request_id.clone(), AgentAnswer::Input(response));
            }
            // Validation let only the owning client complete the call: the agent learns the
            // result of its client tool.
            StateAction::ChatToolCallComplete(a) => {
                self.answer_agent(
                    chat,
                    a.tool_call_id.clone(),
                    AgentAnswer::ClientTool(a.result.clone()),
                );
            }
            StateAction::ChatTurnCancelled(a) => {
                shared.stop_agent(chat, &a.turn_id);
                shared.turn_end(chat, Some(&a.turn_id), TurnEndReason::Cancelled);
            }
            _ => {}
        }
    }

    /// Ends `chat`'s running turn `turn_id` with `error` (`chat/error`, not resumable) and
    /// stops its agent the way a cancel does — for a limit the host enforces (a budget).
    /// Returns whether that turn was running.
    pub fn stop_turn(&self, chat: &ChatUri, turn_id: &str, error: ErrorInfo) -> bool {
        let shared = &self.shared;
        if shared.active_turn_id(chat).as_deref() != Some(turn_id) {
            return false;
        }
        shared.stop_agent(chat, turn_id);
        let duration = shared.elapsed_ms(chat);
        if !shared.dispatch(chat, chat_error(turn_id, duration, error.clone(), false)) {
            return false;
        }
        let reason = TurnEndReason::Error {
            error,
            resumable: false,
        };
        shared.turn_end(chat, Some(turn_id), reason);
        true
    }

    /// Hands the chat's agent a client's answer (`id`: the tool call or input request), on a
    /// spawned task; a refusal is logged.
    fn answer_agent(&self, chat: &str, id: String, answer: AgentAnswer) {
        let Some(runtime) = self.shared.runtime().chats.get(chat).cloned() else {
            tracing::warn!(chat, id, "an answer for a chat without an agent");
            return;
        };
        tokio::spawn(async move {
            let provider = &runtime.provider;
            let taken = match answer {
                AgentAnswer::Permission(decision) => {
                    provider.respond_to_permission(&id, decision).await
                }
                AgentAnswer::Input(response) => provider.respond_to_input(&id, response).await,
                AgentAnswer::ClientTool(result) => provider.complete_client_tool(&id, result).await,
            };
            if let Err(error) = taken {
                tracing::warn!(%error, id, "the agent did not take the answer");
            }
        });
    }

    /// Disposes a chat's provider conversation and evicts its mementos. Subagent chats share
    /// their parent's conversation and only drop their link to it.
    pub async fn dispose_chat(&self, chat: &str) {
        let runtime = {
            let mut runtime = self.shared.runtime();
            runtime.turns.remove(chat);
            runtime.cancelling.remove(chat);
            runtime.chats.remove(chat)
        };
        if let Some(runtime) = runtime
            && !ChatUri::names_subagent(chat)
        {
            runtime.provider.dispose().await;
        }
        self.shared.dispatcher.evict_chat(chat);
    }

    /// Stops every agent conversation (host shutdown): each provider session is disposed, so no
    /// agent process outlives the host. History is untouched; conversations resume on use.
    pub async fn stop_all_agents(&self) {
        let chats: Vec<String> = self.shared.runtime().chats.keys().cloned().collect();
        for chat in chats {
            self.dispose_chat(&chat).await;
        }
    }

    /// Disposes every chat of a session (the caller lists them from the chat → session index)
    /// and evicts the session's mementos.
    pub async fn dispose_session(&self, session: &str, chats: &[String]) {
        for chat in chats {
            self.dispose_chat(chat).await;
        }
        self.shared.dispatcher.evict_session(session);
    }
}

impl agenthost_services::ResumeHandles for Orchestrator {
    /// The handle to resume `chat`'s agent conversation now, for storing it with the chat's
    /// history; `None` for a chat without a live conversation of its own (subagent chats share
    /// their parent's).
    fn resume_handle(&self, chat: &str) -> Option<serde_json::Value> {
        if ChatUri::names_subagent(chat) {
            return None;
        }
        let runtime = self.shared.runtime().chats.get(chat).cloned()?;
        runtime.provider.resume_handle()
    }
}
