//! Provider signal routing: chats, subagent chats, buffering, turn-id remapping.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Weak};

use agenthost_dispatcher::TurnEndReason;
use agenthost_protocol::ahp_types::state::{ChatInteractivity, ChatOrigin};
use agenthost_protocol::{
    AgentSignal, ChatUri, PendingConfirmation, SafeId, SessionUri, StateAction, SubagentCompleted,
    SubagentStarted,
};
use agenthost_provider_api::{PermissionDecision, RoutedSignal};
use agenthost_reducers::states::empty_chat;
use agenthost_reducers::turn_ids::{set_turn_id, turn_id};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::orchestrator::{Shared, TrackedTurn};
use agenthost_reducers::server_actions::{
    chat_added, steering_consumed, subagent_turn_started, system_notice, turn_complete,
};

/// Identifies a subagent by its parent chat and the tool call that spawned it.
type SubagentKey = (ChatUri, String);

/// Signals of subagents that have not started yet. Bounded in total; a subagent that never
/// starts within the timeout fails, and later signals for it are dropped.
pub(crate) struct SubagentBuffer {
    limit: usize,
    buffered: usize,
    pending: HashMap<SubagentKey, Vec<AgentSignal>>,
    failed: VecDeque<SubagentKey>,
    failed_limit: usize,
}

impl Default for SubagentBuffer {
    fn default() -> Self {
        Self::new(1000, 256)
    }
}

/// What happened to a signal offered to the buffer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Buffered {
    /// The first signal of this subagent: start its timeout.
    First,
    /// Added behind earlier ones.
    Queued,
    /// The buffer is full: the signal was dropped.
    Full,
    /// The subagent already failed: the signal was dropped.
    Failed,
}

impl SubagentBuffer {
    pub(crate) fn new(limit: usize, failed_limit: usize) -> Self {
        Self {
            limit,
            buffered: 0,
            pending: HashMap::new(),
            failed: VecDeque::new(),
            failed_limit,
        }
    }

    pub(crate) fn push(&mut self, key: SubagentKey, signal: AgentSignal) -> Buffered {
        if self.failed.contains(&key) {
            return Buffered::Failed;
        }
        if self.buffered >= self.limit {
            return Buffered::Full;
        }
        self.buffered += 1;
        let entry = self.pending.entry(key).or_default();
        entry.push(signal);
        if entry.len() == 1 {
            Buffered::First
        } else {
            Buffered::Queued
        }
    }

    /// Takes the signals of a subagent that started.
    pub(crate) fn take(&mut self, key: &SubagentKey) -> Vec<AgentSignal> {
        let signals = self.pending.remove(key).unwrap_or_default();
        self.buffered -= signals.len();
        signals
    }

    /// Gives up on a subagent: its signals are returned (to deny their confirmations) and it is
    /// remembered as failed. Returns nothing when it started meanwhile.
    pub(crate) fn fail(&mut self, key: &SubagentKey) -> Option<Vec<AgentSignal>> {
        let signals = self.pending.remove(key)?;
        self.buffered -= signals.len();
        if self.failed.len() == self.failed_limit {
            self.failed.pop_front();
        }
        if self.failed_limit > 0 {
            self.failed.push_back(key.clone());
        }
        Some(signals)
    }
}

/// The router task: applies signals in arrival order until the orchestrator is gone.
pub(crate) async fn route_signals(shared: Weak<Shared>, mut signals: mpsc::Receiver<RoutedSignal>) {
    while let Some(routed) = signals.recv().await {
        let Some(shared) = shared.upgrade() else {
            break;
        };
        route(&shared, &routed.chat, routed.signal);
    }
}

/// Routes one signal from the provider conversation of `chat`.
pub(crate) fn route(shared: &Arc<Shared>, chat: &ChatUri, signal: AgentSignal) {
    match signal {
        AgentSignal::Action(signal) => {
            let session = signal.session.clone();
            let parent = signal.parent_tool_call_id.clone();
            let action = signal.action.clone();
            route_action(
                shared,
                chat,
                &session,
                parent.as_ref(),
                action,
                AgentSignal::Action(signal),
            );
        }
        AgentSignal::PendingConfirmation(pending) => {
            let action = agenthost_provider_api::pending_ready_action(&pending);
            let parent = pending.parent_tool_call_id.clone();
            let session = pending.session.clone();
            route_action(
                shared,
                chat,
                &session,
                parent.as_ref(),
                action,
                AgentSignal::PendingConfirmation(pending),
            );
        }
        AgentSignal::SubagentStarted(started) => start_subagent(shared, chat, &started),
        AgentSignal::SubagentCompleted(completed) => complete_subagent(shared, &completed),
        AgentSignal::SteeringConsumed(consumed) => {
            shared.dispatch(chat, steering_consumed(&consumed.id));
        }
        AgentSignal::ModelCallCompleted(call) => {
            tracing::trace!(
                turn = call.turn_id,
                model_call = call.model_call_id,
                "model call completed"
            );
        }
        AgentSignal::ModelLimits(reported) => model_limits(shared, &reported),
    }
}

/// The host-value key under which the model limits agents reported are kept across restarts.
pub const MODEL_LIMITS_KEY: &str = "modelLimits";

/// An agent reported the limits of a session's model: the root's entry for that model gets
/// them (`root/agentsChanged`, only when they changed) and the store keeps them for the next
/// start.
fn model_limits(shared: &Arc<Shared>, reported: &agenthost_protocol::ModelLimitsReported) {
    let Some((provider, mut agents)) = shared.state.read(|h| {
        let provider = h.session(reported.session.as_str())?.provider.clone();
        Some((provider, h.root().agents.clone()))
    }) else {
        return;
    };
    let limits = &reported.limits;
    if !agenthost_provider_api::apply_model_limits(&mut agents, &provider, &reported.model, limits)
    {
        return;
    }
    let stored = agenthost_provider_api::model_limits_json(&agents).to_string();
    shared.dispatch(
        agenthost_protocol::ROOT_RESOURCE_URI,
        StateAction::RootAgentsChanged(
            agenthost_protocol::ahp_types::actions::RootAgentsChangedAction { agents },
        ),
    );
    if let Err(error) = shared.store.set_host_value(MODEL_LIMITS_KEY, Some(&stored)) {
        tracing::warn!(%error, "the model limits the agent reported were not stored");
    }
}

/// An action for `chat`, or for the subagent chat of `parent` — buffered while that chat does
/// not exist, remapped onto its turn once it does.
fn route_action(
    shared: &Arc<Shared>,
    chat: &ChatUri,
    session: &SessionUri,
    parent: Option<&SafeId>,
    mut action: StateAction,
    original: AgentSignal,
) {
    let Some(parent) = parent else {
        apply_turn_action(shared, chat, action);
        return;
    };
    let subagent = ChatUri::subagent(session, parent);
    let exists = shared.state.read(|h| h.chat(&subagent).is_some());
    if exists {
        if turn_id(&action).is_some() {
            let Some(active) = shared.active_turn_id(&subagent) else {
                tracing::debug!(
                    chat = subagent.as_str(),
                    "dropping a subagent action after its turn ended"
                );
                return;
            };
            set_turn_id(&mut action, &active);
        }
        apply_turn_action(shared, &subagent, action);
        return;
    }
    let key = (chat.clone(), parent.as_str().to_owned());
    let outcome = shared.runtime().subagents.push(key.clone(), original);
    match outcome {
        Buffered::First => {
            let weak = Arc::downgrade(shared);
            let timeout = shared.config.subagent_start_timeout;
            tokio::spawn(async move {
                tokio::time::sleep(timeout).await;
                if let Some(shared) = weak.upgrade() {
                    fail_subagent(&shared, &key);
                }
            });
        }
        Buffered::Queued => {}
        Buffered::Full => {
            tracing::warn!(
                chat = chat.as_str(),
                "subagent buffer full: dropping a signal"
            );
        }
        Buffered::Failed => {
            tracing::debug!(
                chat = chat.as_str(),
                "dropping a signal of a failed subagent"
            );
        }
    }
}

/// Applies a turn-scoped action if its turn is the chat's active turn (stale producer output is
/// dropped), and reports the turn end a terminal action causes.
fn apply_turn_action(shared: &Shared, chat: &ChatUri, action: StateAction) {
    let producer_turn = turn_id(&action).map(str::to_owned);
    if let Some(producer) = &producer_turn {
        let active = shared.active_turn_id(chat);
        if active.as_deref() != Some(producer.as_str()) {
            let already_cancelled = shared
                .runtime()
                .cancelled
                .remove(&(chat.to_string(), producer.clone()));
            if active.is_none()
                && matches!(action, StateAction::ChatTurnComplete(_))
                && !already_cancelled
            {
                // A provider turn-complete with no active turn still reports, without a turn id.
                shared.turn_end(chat, None, TurnEndReason::Success);
            }
            return;
        }
    }
    let reason = match &action {
        StateAction::ChatTurnComplete(_) => Some(TurnEndReason::Success),
        StateAction::ChatTurnCancelled(_) => Some(TurnEndReason::Cancelled),
        StateAction::ChatError(a) => Some(TurnEndReason::Error {
            error: a.part.error.clone(),
            resumable: a.part.resumable == Some(true),
        }),
        _ => None,
    };
    if shared.dispatch(chat, action)
        && let Some(reason) = reason
    {
        shared.turn_end(chat, producer_turn.as_deref(), reason);
    }
}

/// Creates the subagent chat (before any of its actions), starts its turn, drains its buffer.
fn start_subagent(shared: &Arc<Shared>, parent_chat: &ChatUri, started: &SubagentStarted) {
    let Some(session) = shared.session_of(parent_chat) else {
        return;
    };
    let subagent = started.chat();
    let now = agenthost_services::now_iso();
    let exists = shared.state.read(|h| h.chat(&subagent).is_some());
    if !exists {
        let title = started
            .task_description
            .clone()
            .unwrap_or_else(|| started.agent_display_name.clone());
        let origin = ChatOrigin::Tool {
            chat: parent_chat.to_string(),
            tool_call_id: started.tool_call_id.as_str().to_owned(),
        };
        let mut state = empty_chat(&subagent, &title, &now, Some(origin));
        // The subagent's conversation belongs to its parent: people watch it, they do not type
        // into it.
        state.interactivity = Some(ChatInteractivity::ReadOnly);
        let added = chat_added(&state);
        if let Err(error) = shared.state.insert_chat(&session, &subagent, state) {
            tracing::warn!(%error, "the subagent chat could not be created");
            return;
        }
        shared.dispatch(&session, added);
    }
    let turn = format!("{}-turn", started.tool_call_id.as_str());
    let prompt = started
        .task_prompt
        .clone()
        .or_else(|| started.task_description.clone())
        .unwrap_or_else(|| started.agent_display_name.clone());
    shared.dispatch(&subagent, subagent_turn_started(&turn, &now, prompt));
    let signals = {
        let mut runtime = shared.runtime();
        if let Some(parent) = runtime.chats.get(parent_chat.as_str()).cloned() {
            runtime.chats.insert(subagent.to_string(), parent);
        }
        runtime.turns.insert(
            subagent.to_string(),
            TrackedTurn {
                turn_id: turn,
                started: Instant::now(),
                client_context: None,
            },
        );
        runtime.subagents.take(&(
            parent_chat.clone(),
            started.tool_call_id.as_str().to_owned(),
        ))
    };
    for signal in signals {
        route(shared, parent_chat, signal);
    }
}

/// Completes the subagent chat's turn.
fn complete_subagent(shared: &Shared, completed: &SubagentCompleted) {
    let subagent = completed.chat();
    if let Some(turn) = shared.active_turn_id(&subagent) {
        let duration = shared.elapsed_ms(&subagent);
        apply_turn_action(shared, &subagent, turn_complete(&turn, duration));
    }
}

/// A subagent that never started: deny the confirmations its signals were waiting for and post
/// a notice on the parent chat.
fn fail_subagent(shared: &Arc<Shared>, key: &SubagentKey) {
    let Some(signals) = shared.runtime().subagents.fail(key) else {
        return;
    };
    let (parent_chat, tool_call_id) = key;
    let pending: Vec<PendingConfirmation> = signals
        .into_iter()
        .filter_map(|s| match s {
            AgentSignal::PendingConfirmation(p) => Some(p),
            _ => None,
        })
        .collect();
    tracing::warn!(
        chat = parent_chat.as_str(),
        tool_call_id,
        denied = pending.len(),
        "subagent never started"
    );
    if let Some(runtime) = shared.runtime().chats.get(parent_chat.as_str()).cloned() {
        tokio::spawn(async move {
            for confirmation in pending {
                let call = confirmation.state.tool_call_id.clone();
                let decision = PermissionDecision::Deny {
                    reason: Some(
                        "the subagent never started, so nobody can confirm this call".into(),
                    ),
                };
                if let Err(error) = runtime
                    .provider
                    .respond_to_permission(&call, decision)
                    .await
                {
                    tracing::warn!(%error, call, "denying a stranded confirmation failed");
                }
            }
        });
    }
    if let Some(turn) = shared.active_turn_id(parent_chat) {
        let text = format!(
            "A subagent (tool call {tool_call_id}) did not start in time; its pending requests were denied."
        );
        shared.dispatch(parent_chat, system_notice(&turn, text));
    }
}

#[cfg(test)]
#[path = "routing_tests.rs"]
mod tests;
