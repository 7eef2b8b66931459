//! `remoteSessionOrigin` (order 350, `onOutgoingTurn`): a session another agent delegated to
//! this host is told where it came from and how to report back.
//!
//! VS Code lets an agent delegate work to a remote agent host (its `create_remote_session`
//! tool; the host advertises itself as a target with the root `_meta` key
//! `vscode.remoteSessions`). The delegated session's creation metadata carries its origin,
//! `createSession._meta["vscode.remoteSession.origin"] = {session, chat, depth}`, and the
//! delegating client offers the session a client tool, `send_remote_message`, that delivers a
//! message back to the origin chat. The session service keeps the `createSession` `_meta` as
//! session metadata ([`CREATION_META_KEY`]); this contribution reads it on every outgoing turn.
//!
//! | Session | Effect on the send |
//! |---|---|
//! | no creation `_meta`, or no `vscode.remoteSession.origin` object in it | nothing |
//! | an origin, but no active client offers `send_remote_message` | nothing (the agent could not report back) |
//! | an origin and the tool | one instruction, [`instruction`]; the text unchanged |
//!
//! The hook never fails the turn: a metadata read that fails, or an origin that is not an object,
//! counts as "no origin" (logged at `debug`).
#![deny(missing_docs)]

use std::sync::Arc;

use agenthost_dispatcher::{
    ChatContribution, Contribution, ContributionContext, Hook, HookFuture, HookSet, MissingService,
    OutgoingTurn, SendContribution, ServiceRegistry,
};
use agenthost_protocol::SessionUri;
use agenthost_services::{CREATION_META_KEY, DataOwner, HostState, SessionDataStore};
use serde_json::Value;

/// The `createSession` `_meta` key of a delegated session's origin.
pub const ORIGIN_META_KEY: &str = "vscode.remoteSession.origin";

/// The client tool a delegated session reports back through.
pub const SEND_REMOTE_MESSAGE_TOOL: &str = "send_remote_message";

/// The `remoteSessionOrigin` contribution. Register it with
/// `dispatcher.register::<RemoteSessionOrigin>()`; it needs `dyn SessionDataStore` and
/// `dyn HostState` in the registry.
pub struct RemoteSessionOrigin {
    data: Arc<dyn SessionDataStore>,
    state: Arc<dyn HostState>,
}

impl std::fmt::Debug for RemoteSessionOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteSessionOrigin")
            .finish_non_exhaustive()
    }
}

impl RemoteSessionOrigin {
    /// Reads creation metadata from `data` and the session's clients from `state`.
    pub fn new(data: Arc<dyn SessionDataStore>, state: Arc<dyn HostState>) -> Self {
        Self { data, state }
    }

    /// The session's origin, if it was delegated: the `vscode.remoteSession.origin` object of
    /// its creation metadata.
    async fn origin(&self, session: &SessionUri) -> Option<serde_json::Map<String, Value>> {
        let stored = match self
            .data
            .meta(DataOwner::Session(session.clone()), CREATION_META_KEY)
            .await
        {
            Ok(stored) => stored?,
            Err(error) => {
                tracing::debug!(session = session.as_str(), %error, "remoteSessionOrigin: creation metadata unreadable");
                return None;
            }
        };
        match serde_json::from_str::<Value>(&stored) {
            Ok(Value::Object(mut meta)) => match meta.remove(ORIGIN_META_KEY) {
                Some(Value::Object(origin)) => Some(origin),
                Some(other) => {
                    tracing::debug!(session = session.as_str(), %other, "remoteSessionOrigin: the origin is not an object");
                    None
                }
                None => None,
            },
            _ => None,
        }
    }

    /// Whether an active client of the session offers [`SEND_REMOTE_MESSAGE_TOOL`].
    fn can_report_back(&self, session: &str) -> bool {
        self.state.session(session).is_some_and(|state| {
            state
                .active_clients
                .iter()
                .flat_map(|client| &client.tools)
                .any(|tool| tool.name == SEND_REMOTE_MESSAGE_TOOL)
        })
    }
}

/// The instruction for a session delegated from `origin` (`{session, chat, depth}`; fields
/// that are missing or not plain values are left out).
pub fn instruction(origin: &serde_json::Map<String, Value>) -> String {
    let field = |name: &str| match origin.get(name) {
        Some(Value::String(text)) => Some(text.clone()),
        Some(Value::Number(number)) => Some(number.to_string()),
        _ => None,
    };
    let mut from = Vec::new();
    if let Some(session) = field("session") {
        from.push(format!("session {session}"));
    }
    if let Some(chat) = field("chat") {
        from.push(format!("chat {chat}"));
    }
    if let Some(depth) = field("depth") {
        from.push(format!("delegation depth {depth}"));
    }
    let from = if from.is_empty() {
        String::new()
    } else {
        format!(" ({})", from.join(", "))
    };
    format!(
        "<remote_session_origin>\nThis session was delegated to you by another agent session{from}. \
         That agent is waiting for your results. When you finish the task, or need to tell it \
         something it must know to continue (a question, a blocker, an important finding), \
         send it a concise message with the `{SEND_REMOTE_MESSAGE_TOOL}` tool. Your final \
         report must go through that tool: the delegating agent does not see this chat.\n\
         </remote_session_origin>"
    )
}

impl Contribution for RemoteSessionOrigin {
    const ID: &'static str = "remoteSessionOrigin";
    const ORDER: i32 = 350;
    const HOOKS: HookSet = HookSet::of(&[Hook::OutgoingTurn]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Ok(Self::new(
            services.get::<dyn SessionDataStore>()?,
            services.get::<dyn HostState>()?,
        ))
    }
}

impl ChatContribution for RemoteSessionOrigin {
    fn on_outgoing_turn<'a>(
        &'a self,
        turn: &'a OutgoingTurn,
    ) -> HookFuture<'a, Option<SendContribution>> {
        Box::pin(async move {
            if !self.can_report_back(&turn.session) {
                return Ok(None);
            }
            let Some(origin) = self.origin(&turn.session).await else {
                return Ok(None);
            };
            Ok(Some(SendContribution {
                instructions: Some(vec![instruction(&origin)]),
                text: None,
            }))
        })
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
