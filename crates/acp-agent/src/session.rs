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
use agenthost_client::ahp::{ClientEvent, ClientEventStream};
use agenthost_client::{ChatView, HostConnection};
use agenthost_protocol::ahp_types::state::{
    ChatOrigin, ResponsePart, SessionConfigState, SessionState, Turn, TurnState,
};
use agenthost_protocol::{ActionEnvelope, ChatUri, StateAction};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::config;
use crate::rpc::{Peer, RpcError};
use crate::updates::{self, TurnProgress};

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
    /// Permission questions the editor has not answered: (chat, tool call id) → request id.
    pub asked: HashMap<Key, u64>,
    /// Input requests put to the editor and not answered: (chat, AHP request id) → ACP
    /// request id.
    pub elicited: HashMap<Key, u64>,
    /// Input requests declined because the editor cannot answer them.
    pub declined: std::collections::HashSet<Key>,
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
    /// The subagents' chats being followed: their mirror and the turn shown of each.
    pub subagents: HashMap<String, Subagent>,
    /// Subagent chats being opened, with the envelopes that came meanwhile.
    pub opening: HashMap<String, Vec<ActionEnvelope>>,
    /// Where an opened subagent chat is handed over.
    pub subagent_events: mpsc::UnboundedSender<SubagentEvent>,
    /// The tasks opening subagents' chats (aborted with the follower).
    pub subagent_tasks: JoinSet<()>,
}

/// A subagent's chat: its mirror and what the editor was shown of its running turn.
pub struct Subagent {
    view: ChatView,
    progress: Option<(String, TurnProgress)>,
    /// Kept open while the chat is followed.
    _subscription: SessionSubscription,
}

/// What a subagent's chat reports to the follower.
pub enum SubagentEvent {
    /// The chat was opened: its mirror and its subscription.
    Opened(ChatUri, Box<ChatView>, SessionSubscription),
    /// An envelope of the chat.
    Action(Box<ActionEnvelope>),
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
    pub async fn run(
        mut self,
        mut events: ClientEventStream,
        subscriptions: [SessionSubscription; 2],
        mut opened: mpsc::UnboundedReceiver<SubagentEvent>,
    ) {
        // The subscriptions stay open while the session is followed; every envelope of the
        // connection comes through `events`, in the order the host sent them (a subagent's
        // last tool update before its parent's turn end).
        let _subscriptions = subscriptions;
        loop {
            tokio::select! {
                Some(event) = opened.recv() => self.subagent_event(event),
                event = events.recv() => match event {
                    Some(ClientEvent { channel, event: SubscriptionEvent::Action(envelope) }) => {
                        self.route(&channel.to_string(), envelope);
                    }
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

    /// One envelope of the connection: this session's, its default chat's or a subagent
    /// chat's (one still opening is kept until its snapshot is in); others are not this
    /// follower's.
    fn route(&mut self, channel: &str, envelope: ActionEnvelope) {
        if channel == self.chat.as_str() {
            self.apply(&envelope);
        } else if channel == self.session_id {
            self.apply_session(&envelope);
        } else if self.subagents.contains_key(channel) {
            self.subagent_event(SubagentEvent::Action(Box::new(envelope)));
        } else if let Some(early) = self.opening.get_mut(channel) {
            early.push(envelope);
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
        if let StateAction::SessionChatAdded(added) = &envelope.action
            && spawned_by_a_tool(added.summary.origin.as_ref())
            && let Ok(chat) = ChatUri::parse(&added.summary.resource.to_string())
        {
            self.follow_subagent(chat);
        }
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
        let chat = self.chat.clone();
        let ours = lock(&self.shared)
            .prompt
            .as_ref()
            .is_some_and(|p| p.turn_id == turn.id);
        self.confirmations(&chat, &turn.id, &turn.response_parts);
        self.inputs(&chat, ours, &turn.response_parts);
    }

    /// Follows the subagent chats the session has (`session/load`, `session/resume` of a busy
    /// session), each spawned by a tool call of this session's chats.
    pub fn follow_existing_subagents(&mut self) {
        let chats: Vec<ChatUri> = self
            .session
            .chats
            .iter()
            .filter(|summary| spawned_by_a_tool(summary.origin.as_ref()))
            .filter_map(|summary| ChatUri::parse(&summary.resource.to_string()).ok())
            .collect();
        for chat in chats {
            self.follow_subagent(chat);
        }
    }

    /// Opens a subagent's chat; its envelopes are kept until its snapshot is in.
    fn follow_subagent(&mut self, chat: ChatUri) {
        if chat == self.chat
            || self.subagents.contains_key(chat.as_str())
            || self.opening.contains_key(chat.as_str())
        {
            return;
        }
        self.opening.insert(chat.to_string(), Vec::new());
        let host = self.host.clone();
        let events = self.subagent_events.clone();
        self.subagent_tasks.spawn(async move {
            match host.open_chat(&chat).await {
                Ok((view, subscription)) => {
                    let _ = events.send(SubagentEvent::Opened(chat, Box::new(view), subscription));
                }
                Err(error) => {
                    tracing::info!(%error, chat = chat.as_str(), "cannot follow a subagent's chat");
                }
            }
        });
    }

    /// A subagent chat's snapshot or envelope: its tool calls are shown, its confirmations
    /// and input requests asked like the default chat's.
    fn subagent_event(&mut self, event: SubagentEvent) {
        let uri = match event {
            SubagentEvent::Opened(chat, view, subscription) => {
                let uri = chat.to_string();
                let mut view = *view;
                // What arrived while it opened; what the snapshot already holds is skipped.
                for envelope in self.opening.remove(&uri).unwrap_or_default() {
                    if envelope.rejection_reason.is_none() {
                        view.apply(&envelope);
                    }
                }
                self.subagents.insert(
                    uri.clone(),
                    Subagent {
                        view,
                        progress: None,
                        _subscription: subscription,
                    },
                );
                uri
            }
            SubagentEvent::Action(envelope) => {
                let Some(subagent) = self.subagents.get_mut(envelope.channel.as_str()) else {
                    return;
                };
                if envelope.rejection_reason.is_some() {
                    return;
                }
                subagent.view.apply(&envelope);
                envelope.channel.to_string()
            }
        };
        let Ok(chat) = ChatUri::parse(&uri) else {
            return;
        };
        let Some(subagent) = self.subagents.get_mut(&uri) else {
            return;
        };
        let turn = subagent.view.state().active_turn.clone();
        let (turn_id, parts) = turn.map(|t| (t.id, t.response_parts)).unwrap_or_default();
        if subagent.progress.as_ref().map(|(id, _)| id) != Some(&turn_id) {
            subagent.progress = Some((turn_id.clone(), TurnProgress::default()));
        }
        let shown: Vec<Value> = subagent
            .progress
            .as_mut()
            .map(|(_, progress)| progress.advance(&parts))
            .unwrap_or_default()
            .into_iter()
            .filter(|update| {
                matches!(
                    update["sessionUpdate"].as_str(),
                    Some("tool_call" | "tool_call_update" | "plan")
                )
            })
            .collect();
        for update in shown {
            self.update(update);
        }
        let ours = lock(&self.shared).prompt.is_some();
        self.confirmations(&chat, &turn_id, &parts);
        self.inputs(&chat, ours, &parts);
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
        let chat = self.chat.clone();
        self.confirmations(&chat, turn_id, &[]);
        self.inputs(&chat, false, &[]);
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

/// Whether a chat was spawned by a tool call (a subagent's).
fn spawned_by_a_tool(origin: Option<&ChatOrigin>) -> bool {
    matches!(origin, Some(ChatOrigin::Tool { .. }))
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

#[path = "questions.rs"]
mod questions;

use questions::Key;
