//! One ACP session: a host session's default chat, followed for the editor.
//!
//! [`Follower`] owns the chat's mirror (`ChatView`, seeded from the subscription's snapshot and
//! advanced by its envelopes). After every action it sends the editor what changed
//! ([`TurnProgress`]), asks the editor about every confirmation the chat waits for
//! (`session/request_permission`) and withdraws the question when the confirmation is settled
//! some other way (another client answered, the turn ended), and answers the pending
//! `session/prompt` when its turn ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use agenthost_client::ahp::SessionSubscription;
use agenthost_client::ahp::client::SubscriptionEvent;
use agenthost_client::{ChatView, HostConnection};
use agenthost_protocol::ahp_types::state::{
    ChatInputRequest, ResponsePart, SessionConfigState, SessionState, ToolCallState, Turn,
    TurnState,
};
use agenthost_protocol::{ActionEnvelope, ChatUri, StateAction};
use serde_json::{Value, json};

use crate::rpc::{Peer, RpcError};
use crate::updates::{self, TurnProgress};
use crate::{config, input};

/// The `session/prompt` waiting for its turn.
#[derive(Debug)]
pub struct PendingPrompt {
    /// The turn it started.
    pub turn_id: String,
    /// The editor's request id.
    pub request_id: Value,
}

/// What the request handlers and the follower share.
#[derive(Debug, Default)]
pub struct Shared {
    /// The prompt waiting for its turn to end.
    pub prompt: Option<PendingPrompt>,
    /// The running turn and when it started (for `chat/turnCancelled`'s duration).
    pub running: Option<(String, std::time::Instant)>,
    /// Permission questions the editor has not answered: tool call id → request id.
    pub asked: HashMap<String, u64>,
    /// Input requests put to the editor and not answered: AHP request id → ACP request id.
    pub elicited: HashMap<String, u64>,
    /// Input requests declined because the editor cannot answer them.
    pub declined: std::collections::HashSet<String>,
    /// The session's configuration, as the host last published it.
    pub config: Option<SessionConfigState>,
}

/// An open session.
#[derive(Debug)]
pub struct OpenSession {
    /// The default chat.
    pub chat: ChatUri,
    /// Shared with the follower.
    pub shared: Arc<Mutex<Shared>>,
    /// The follower task.
    pub task: tokio::task::JoinHandle<()>,
}

impl OpenSession {
    /// Locks the shared state.
    pub fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        lock(&self.shared)
    }
}

impl Drop for OpenSession {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock(shared: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    shared
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Follows one chat for the editor.
pub struct Follower {
    /// The ACP session id.
    pub session_id: String,
    /// The chat.
    pub chat: ChatUri,
    /// The mirror.
    pub view: ChatView,
    /// The host.
    pub host: HostConnection,
    /// The editor.
    pub peer: Arc<Peer>,
    /// Shared with the request handlers.
    pub shared: Arc<Mutex<Shared>>,
    /// The turn being followed and what the editor was sent of it.
    pub progress: Option<(String, TurnProgress)>,
    /// Whether the editor answers form elicitations (`elicitation/create`).
    pub elicitation: bool,
    /// The session (its configuration and title), as of `session_seen`.
    pub session: SessionState,
    /// The last session envelope applied.
    pub session_seen: i64,
}

impl Follower {
    fn update(&self, update: Value) {
        self.peer.notify(
            "session/update",
            json!({ "sessionId": self.session_id, "update": update }),
        );
    }

    /// Sends the chat's history: each finished turn as its user message and everything it
    /// showed, then the running turn so far (which is followed from then on).
    pub fn replay(&mut self) {
        let turns = self.view.state().turns.clone();
        for turn in &turns {
            self.update(updates::user_message(&turn.message.text));
            for update in TurnProgress::default().advance(&turn.response_parts) {
                self.update(update);
            }
        }
        self.sync();
    }

    /// Takes the running turn as already shown (`session/resume`: the editor has the history).
    pub fn skip_history(&mut self) {
        if let Some(turn) = &self.view.state().active_turn {
            let mut progress = TurnProgress::default();
            progress.advance(&turn.response_parts);
            self.progress = Some((turn.id.clone(), progress));
            lock(&self.shared).running = Some((turn.id.clone(), std::time::Instant::now()));
        }
        self.sync();
    }

    /// Follows the subscription until the host goes away; a prompt still waiting then gets
    /// an error.
    pub async fn run(mut self, mut chat: SessionSubscription, mut session: SessionSubscription) {
        loop {
            tokio::select! {
                event = chat.recv() => match event {
                    Some(SubscriptionEvent::Action(envelope)) => self.apply(&envelope),
                    Some(_) => {}
                    None => break,
                },
                event = session.recv() => match event {
                    Some(SubscriptionEvent::Action(envelope)) => self.apply_session(&envelope),
                    Some(_) => {}
                    None => break,
                },
            }
        }
        let pending = lock(&self.shared).prompt.take();
        if let Some(prompt) = pending {
            self.peer.respond_error(
                &prompt.request_id,
                &RpcError::internal("the connection to the agent host was lost during the turn"),
            );
        }
    }

    /// One envelope of the chat.
    pub fn apply(&mut self, envelope: &ActionEnvelope) {
        if let Some(reason) = &envelope.rejection_reason {
            self.rejected(&envelope.action, reason);
            return;
        }
        self.view.apply(envelope);
        self.sync();
    }

    /// One envelope of the session: a config change becomes `config_option_update` (and
    /// `current_mode_update` for the mode), a new title `session_info_update`.
    pub fn apply_session(&mut self, envelope: &ActionEnvelope) {
        let seq = i64::try_from(envelope.server_seq).unwrap_or(i64::MAX);
        if envelope.rejection_reason.is_some() || seq <= self.session_seen {
            return;
        }
        self.session_seen = seq;
        let options = config::options(self.session.config.as_ref());
        let modes = config::modes(self.session.config.as_ref());
        let title = self.session.title.clone();
        agenthost_client::ahp::reducers::apply_action_to_session(
            &mut self.session,
            &envelope.action,
        );
        let now = config::options(self.session.config.as_ref());
        if now != options {
            self.update(json!({ "sessionUpdate": "config_option_update", "configOptions": now }));
        }
        let now_modes = config::modes(self.session.config.as_ref());
        if let Some(current) = now_modes.as_ref().map(|m| m["currentModeId"].clone())
            && modes.map(|m| m["currentModeId"].clone()) != Some(current.clone())
        {
            self.update(
                json!({ "sessionUpdate": "current_mode_update", "currentModeId": current }),
            );
        }
        if self.session.title != title {
            self.update(
                json!({ "sessionUpdate": "session_info_update", "title": self.session.title }),
            );
        }
        lock(&self.shared).config = self.session.config.clone();
    }

    /// The host refused an action; when it was the pending prompt's turn, the prompt fails
    /// with the host's reason.
    fn rejected(&self, action: &StateAction, reason: &str) {
        let StateAction::ChatTurnStarted(started) = action else {
            return;
        };
        let mut shared = lock(&self.shared);
        if shared
            .prompt
            .as_ref()
            .is_some_and(|p| p.turn_id == started.turn_id)
            && let Some(prompt) = shared.prompt.take()
        {
            shared.running = None;
            self.peer.respond_error(
                &prompt.request_id,
                &RpcError::internal(format!("the host refused the turn: {reason}")),
            );
        }
    }

    /// Brings the editor up to date with the mirror.
    fn sync(&mut self) {
        // A turn that was followed and is no longer running has ended: its last updates, then
        // the prompt's answer.
        let active_id = self.view.state().active_turn.as_ref().map(|t| t.id.clone());
        if let Some((followed, _)) = &self.progress
            && active_id.as_deref() != Some(followed.as_str())
        {
            let followed = followed.clone();
            self.finish(&followed);
        }
        let Some(turn) = self.view.state().active_turn.clone() else {
            return;
        };
        if self.progress.is_none() {
            let ours = lock(&self.shared)
                .prompt
                .as_ref()
                .is_some_and(|p| p.turn_id == turn.id);
            if !ours {
                // A turn another client started: the editor sees its message too.
                self.update(updates::user_message(&turn.message.text));
                lock(&self.shared).running = Some((turn.id.clone(), std::time::Instant::now()));
            }
            self.progress = Some((turn.id.clone(), TurnProgress::default()));
        }
        if let Some((_, progress)) = &mut self.progress {
            let sent = progress.advance(&turn.response_parts);
            for update in sent {
                self.update(update);
            }
        }
        self.confirmations(&turn.id, &turn.response_parts);
        self.inputs(&turn.id, &turn.response_parts);
    }

    /// Puts each waiting input request to the editor once (`elicitation/create`), or, when it
    /// cannot answer and the turn is its own, declines it saying why; withdraws questions
    /// answered elsewhere.
    fn inputs(&self, turn_id: &str, parts: &[ResponsePart]) {
        let waiting: Vec<&ChatInputRequest> = parts
            .iter()
            .filter_map(|part| match part {
                ResponsePart::InputRequest(r) if r.response.is_none() => Some(&r.request),
                _ => None,
            })
            .collect();
        let mut shared = lock(&self.shared);
        shared.elicited.retain(|request_id, asked| {
            let keep = waiting.iter().any(|r| r.id == *request_id);
            if !keep {
                self.peer.withdraw(*asked);
            }
            keep
        });
        let ours = shared.prompt.as_ref().is_some_and(|p| p.turn_id == turn_id);
        for request in waiting {
            if shared.elicited.contains_key(&request.id) || shared.declined.contains(&request.id) {
                continue;
            }
            let answer = if self.elicitation {
                let (asked, answer) = self.peer.request(
                    "elicitation/create",
                    input::elicitation(&self.session_id, request),
                );
                shared.elicited.insert(request.id.clone(), asked);
                Some((asked, answer))
            } else if ours {
                shared.declined.insert(request.id.clone());
                self.update(updates::notice(&format!(
                    "The agent asked: \"{}\". This editor cannot answer questions (it offers no \
                     elicitation), so the request was declined.",
                    request.message.as_deref().unwrap_or("for input")
                )));
                None
            } else {
                continue;
            };
            let host = self.host.clone();
            let chat = self.chat.clone();
            let shared_state = Arc::clone(&self.shared);
            let request = request.clone();
            tokio::spawn(async move {
                let action = match answer {
                    Some((asked, answer)) => {
                        // A withdrawn question never gets its answer: the sender is gone.
                        let Ok(answer) = answer.await else { return };
                        let mut shared = lock(&shared_state);
                        if shared.elicited.get(&request.id) != Some(&asked) {
                            return;
                        }
                        shared.elicited.remove(&request.id);
                        drop(shared);
                        input::completed(&request, &answer.unwrap_or_default())
                    }
                    None => input::completed(&request, &json!({ "action": "decline" })),
                };
                let dispatched = match serde_json::from_value::<StateAction>(action) {
                    Ok(action) => host
                        .client()
                        .dispatch(chat.to_string(), action)
                        .await
                        .map(|_| ())
                        .map_err(|e| e.to_string()),
                    Err(error) => Err(error.to_string()),
                };
                if let Err(error) = dispatched {
                    tracing::warn!(%error, request = request.id, "cannot send the answer to the host");
                }
            });
        }
    }

    /// Asks about each waiting confirmation once, and withdraws questions whose confirmation
    /// is settled.
    fn confirmations(&self, turn_id: &str, parts: &[ResponsePart]) {
        let waiting: HashMap<&str, &ToolCallState> = parts
            .iter()
            .filter_map(|part| match part {
                ResponsePart::ToolCall(call) => match &call.tool_call {
                    state @ ToolCallState::PendingConfirmation(s) => {
                        Some((s.tool_call_id.as_str(), state))
                    }
                    _ => None,
                },
                _ => None,
            })
            .collect();
        let mut shared = lock(&self.shared);
        shared.asked.retain(|tool_call_id, request_id| {
            let keep = waiting.contains_key(tool_call_id.as_str());
            if !keep {
                self.peer.withdraw(*request_id);
            }
            keep
        });
        for (tool_call_id, state) in waiting {
            if shared.asked.contains_key(tool_call_id) {
                continue;
            }
            let Some(tool_call) = updates::permission_tool_call(state) else {
                continue;
            };
            let (request_id, answer) = self.peer.request(
                "session/request_permission",
                json!({
                    "sessionId": self.session_id,
                    "toolCall": tool_call,
                    "options": [
                        { "optionId": "allow_once", "name": "Allow once", "kind": "allow_once" },
                        { "optionId": "reject_once", "name": "Reject", "kind": "reject_once" },
                    ],
                }),
            );
            shared.asked.insert(tool_call_id.to_owned(), request_id);
            let host = self.host.clone();
            let chat = self.chat.clone();
            let shared_state = Arc::clone(&self.shared);
            let turn_id = turn_id.to_owned();
            let tool_call_id = tool_call_id.to_owned();
            tokio::spawn(async move {
                // A withdrawn question never gets its answer: the sender is gone.
                let Ok(answer) = answer.await else { return };
                let still_ours = lock(&shared_state).asked.get(&tool_call_id) == Some(&request_id);
                if !still_ours {
                    return;
                }
                lock(&shared_state).asked.remove(&tool_call_id);
                let approved = approved(&answer);
                if let Err(error) = host
                    .confirm_tool(&chat, &turn_id, &tool_call_id, approved)
                    .await
                {
                    tracing::warn!(%error, tool_call_id, "cannot send the editor's answer to the host");
                }
            });
        }
    }

    /// The followed turn ended: send what it showed last, withdraw its questions, answer its
    /// prompt.
    fn finish(&mut self, turn_id: &str) {
        let Some((_, mut progress)) = self.progress.take() else {
            return;
        };
        let turn = self
            .view
            .state()
            .turns
            .iter()
            .rev()
            .find(|t| t.id == turn_id)
            .cloned();
        if let Some(turn) = &turn {
            for update in progress.advance(&turn.response_parts) {
                self.update(update);
            }
        }
        self.confirmations(turn_id, &[]);
        self.inputs(turn_id, &[]);
        let mut shared = lock(&self.shared);
        if shared
            .running
            .as_ref()
            .is_some_and(|(running, _)| running == turn_id)
        {
            shared.running = None;
        }
        let ours = shared.prompt.as_ref().is_some_and(|p| p.turn_id == turn_id);
        if !ours {
            return;
        }
        let Some(prompt) = shared.prompt.take() else {
            return;
        };
        drop(shared);
        match turn.as_ref().map(outcome) {
            Some(Ok(result)) => self.peer.respond(&prompt.request_id, result),
            Some(Err(error)) => self.peer.respond_error(&prompt.request_id, &error),
            None => self.peer.respond_error(
                &prompt.request_id,
                &RpcError::internal("the turn ended but the host did not keep it"),
            ),
        }
    }
}

/// Whether the editor's answer to a permission question approves.
fn approved(answer: &Result<Value, RpcError>) -> bool {
    let Ok(result) = answer else { return false };
    let outcome = &result["outcome"];
    outcome["outcome"] == "selected"
        && outcome["optionId"]
            .as_str()
            .is_some_and(|id| id.starts_with("allow"))
}

/// A finished turn as the answer to its `session/prompt`.
fn outcome(turn: &Turn) -> Result<Value, RpcError> {
    let stop_reason = match turn.state {
        TurnState::Complete => "end_turn",
        TurnState::Cancelled => "cancelled",
        TurnState::Error => {
            let error = turn
                .response_parts
                .iter()
                .rev()
                .find_map(|part| match part {
                    ResponsePart::Error(e) => Some(e.error.clone()),
                    _ => None,
                });
            let (message, error_type) = error.map_or_else(
                || ("the turn failed".to_owned(), "unknown".to_owned()),
                |e| (e.message, e.error_type),
            );
            if error_type == "refusal" {
                "refusal"
            } else {
                return Err(RpcError::internal(message)
                    .with_data(json!({ "errorType": error_type, "turnId": turn.id })));
            }
        }
    };
    let mut result = json!({ "stopReason": stop_reason });
    if let Some(usage) = turn.usage.as_ref().and_then(updates::usage) {
        result["usage"] = usage;
    }
    Ok(result)
}
