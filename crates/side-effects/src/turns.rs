//! The turn starter (shared by direct and queued turns) and the send tail.

use std::path::PathBuf;
use std::sync::Arc;

use agenthost_dispatcher::{
    ClientContext, IncomingRequest, OutgoingTurn, RequestSource, SendTurnMessageOptions,
    TurnEndReason, TurnStarterPorts,
};
use agenthost_protocol::ChatUri;
use agenthost_protocol::ahp_types::state::{ErrorInfo, Message};
use agenthost_protocol::uri::file_uri_to_path;
use agenthost_provider_api::{
    AgentMode, ProviderError, RestoreSession, SignalSink, StartSession, TurnRequest,
};

use crate::orchestrator::{ChatRuntime, Shared};
use agenthost_protocol::error_info::chat_error;

/// A turn about to be admitted.
pub(crate) struct TurnStart {
    pub(crate) chat: ChatUri,
    pub(crate) turn_id: String,
    pub(crate) message: Message,
    pub(crate) source: RequestSource,
    pub(crate) client_id: Option<String>,
    pub(crate) client_context: ClientContext,
}

/// The turn starter (the dispatcher's shared sequence: the `onIncomingRequest` gate, then the
/// agent lookup) with the orchestrator's effects, run in the caller's call — for a client's
/// turn, the same call that dispatched it, after `onDidDispatchAction` and before
/// `onDidApplyClientAction` — then the send tail on a task of its own. Refusals end the started
/// turn with `chat/error` and report `onTurnEnd(rejected)`.
pub(crate) fn start_turn(shared: Arc<Shared>, start: TurnStart) {
    let Some(session) = shared.session_of(&start.chat) else {
        return;
    };
    let request = IncomingRequest {
        session,
        chat: start.chat,
        message: start.message,
        turn_id: start.turn_id,
        source: start.source,
        client_id: start.client_id,
        client_context: start.client_context,
    };
    let Some(agent) = shared.dispatcher.start_turn(&request, shared.as_ref()) else {
        return;
    };
    tokio::spawn(send_tail(
        shared,
        SendTurnMessageOptions {
            agent,
            session: request.session,
            chat: request.chat,
            message: request.message,
            turn_id: request.turn_id,
            sender_client_id: request.client_id,
            client_context: request.client_context,
            turn_stopwatch: std::time::Instant::now(),
        },
    ));
}

/// The orchestrator's effects of the turn starter.
impl TurnStarterPorts for Shared {
    fn refuse(&self, request: &IncomingRequest, error: &ErrorInfo) {
        let chat = &request.chat;
        let duration = self.elapsed_ms(chat);
        self.dispatch(
            chat,
            chat_error(&request.turn_id, duration, error.clone(), false),
        );
    }

    fn agent_of(&self, session: &agenthost_protocol::SessionUri) -> Option<String> {
        self.state
            .read(|h| h.session(session).map(|s| s.provider.clone()))
            .filter(|id| self.providers.contains_key(id))
    }

    fn turn_end(&self, request: &IncomingRequest, reason: TurnEndReason) {
        Shared::turn_end(self, &request.chat, Some(&request.turn_id), reason);
    }

    fn accepted(&self, request: &IncomingRequest, agent: &str) {
        if let Some((turns, _)) = &self.trackers {
            turns.turn_started(&request.chat, &request.turn_id);
        }
        tracing::debug!(
            chat = %request.chat, turn_id = %request.turn_id, agent,
            source = ?request.source, "turn admitted"
        );
    }
}

/// A started turn failed outside the agent: end it with `chat/error` — only if it is still the
/// active turn (it may have been cancelled meanwhile) — and report `onTurnEnd(error)`.
pub(crate) fn fail_started_turn(shared: &Shared, chat: &ChatUri, turn_id: &str, error: ErrorInfo) {
    if shared.active_turn_id(chat).as_deref() != Some(turn_id) {
        return;
    }
    let duration = shared.elapsed_ms(chat);
    if shared.dispatch(chat, chat_error(turn_id, duration, error.clone(), false)) {
        shared.turn_end(
            chat,
            Some(turn_id),
            TurnEndReason::Error {
                error,
                resumable: false,
            },
        );
    }
}

/// The send tail: the chat's provider conversation (started on first use), the outgoing-turn
/// contributions, a cancellation check, the provider call with the final text.
pub(crate) async fn send_tail(shared: Arc<Shared>, options: SendTurnMessageOptions) {
    let chat = options.chat.clone();
    let turn_id = options.turn_id.clone();
    let runtime = match provider_session(&shared, &options).await {
        Ok(runtime) => runtime,
        Err(error) => {
            fail_started_turn(&shared, &chat, &turn_id, error.to_error_info());
            return;
        }
    };
    let outgoing = shared
        .dispatcher
        .outgoing_turn(&OutgoingTurn {
            session: options.session.clone(),
            chat: chat.clone(),
            message: options.message.clone(),
            turn_id: turn_id.clone(),
        })
        .await;
    if shared.active_turn_id(&chat).as_deref() != Some(turn_id.as_str()) {
        // Cancelled (or replaced) while the contributions ran: nothing to send.
        return;
    }
    if !capture_turn_start(&shared, &options).await {
        return;
    }
    let request = TurnRequest {
        turn_id: turn_id.clone(),
        text: outgoing.message.text,
        instructions: outgoing.instructions.unwrap_or_default(),
        attachments: options.message.attachments.unwrap_or_default(),
        model: options.message.model,
        mode: (shared
            .state
            .read(|h| h.session(&options.session).map(AgentMode::of_session)))
        .unwrap_or_default(),
    };
    shared.cancel_settled(&chat).await;
    if let Err(error) = runtime.provider.send_turn(request).await {
        fail_started_turn(&shared, &chat, &turn_id, error.to_error_info());
    }
}

/// The turn-start checkpoint, right before the send, in the chat's
/// working directories (its own subset, else the session's). `false` when the turn was
/// cancelled or replaced while it ran: the capture is discarded and nothing is sent.
async fn capture_turn_start(shared: &Arc<Shared>, options: &SendTurnMessageOptions) -> bool {
    let Some(checkpoints) = shared.checkpoints.clone() else {
        return true;
    };
    let (session, chat) = (&options.session, &options.chat);
    let directories: Vec<PathBuf> = shared
        .state
        .read(|h| {
            h.chat(&options.chat)
                .and_then(|c| c.working_directories.clone())
                .filter(|dirs| !dirs.is_empty())
                .or_else(|| {
                    h.session(session)
                        .and_then(|s| s.working_directories.clone())
                })
        })
        .unwrap_or_default()
        .iter()
        .filter_map(|uri| file_uri_to_path(uri).ok())
        .collect();
    checkpoints
        .capture_turn_start(session, chat, &options.turn_id, &directories)
        .await;
    if shared.active_turn_id(&options.chat).as_deref() == Some(options.turn_id.as_str()) {
        return true;
    }
    checkpoints
        .discard_turn_start(session, chat, &options.turn_id)
        .await;
    false
}

/// The chat's provider conversation, started on first use in the session's first working
/// directory (or the configured default).
async fn provider_session(
    shared: &Arc<Shared>,
    options: &SendTurnMessageOptions,
) -> Result<ChatRuntime, ProviderError> {
    if let Some(runtime) = shared.runtime().chats.get(options.chat.as_str()).cloned() {
        return Ok(runtime);
    }
    let invalid = |what: &str, error: &dyn std::fmt::Display| ProviderError::StartFailed {
        message: format!("{what}: {error}"),
    };
    let provider = shared
        .providers
        .get(&options.agent)
        .cloned()
        .ok_or_else(|| ProviderError::StartFailed {
            message: format!("no provider named {:?}", options.agent),
        })?;
    let (session, chat) = (options.session.clone(), options.chat.clone());
    let first_directory = shared.state.read(|h| {
        h.session(&session)
            .and_then(|s| s.working_directories.as_ref())
            .and_then(|dirs| dirs.first().cloned())
    });
    let working_directory = match first_directory {
        Some(uri) => file_uri_to_path(&uri)
            .map_err(|e| invalid("the session's working directory is not a local path", &e))?,
        None => shared.config.default_directory.clone(),
    };
    let start = StartSession {
        session,
        chat: chat.clone(),
        working_directory,
        model: options.message.model.clone(),
        signals: SignalSink::new(options.chat.clone(), shared.signals.clone()),
    };
    // A conversation the agent can resume (the host restarted since) continues; otherwise a new
    // one starts. The agent is asked for nothing else: the host owns the history.
    let stored = shared.store.chat(&chat).ok().flatten();
    let conversation = match stored.and_then(|record| record.resume_handle) {
        Some(resume_handle) => {
            // What an agent that cannot resume gives the new conversation as text.
            let history = shared
                .state
                .read(|h| h.chat(&chat).map(|c| c.turns.clone()));
            let restore = RestoreSession::new(start, resume_handle, history.unwrap_or_default());
            provider.restore_session(restore).await?
        }
        None => provider.start_session(start).await?,
    };
    let runtime = ChatRuntime {
        provider: conversation,
    };
    let existing = {
        let mut chats = shared.runtime();
        match chats.chats.get(options.chat.as_str()) {
            Some(existing) => Some(existing.clone()),
            None => {
                chats
                    .chats
                    .insert(options.chat.to_string(), runtime.clone());
                None
            }
        }
    };
    match existing {
        // Another turn started the conversation first: keep that one.
        Some(existing) => {
            runtime.provider.dispose().await;
            Ok(existing)
        }
        None => Ok(runtime),
    }
}
