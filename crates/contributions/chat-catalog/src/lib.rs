//! `chatCatalog` (order 205, `onDidDispatchAction`): keeps each session's chat catalog — the
//! `chats` entries of `SessionState`, which the session summary's `chats` mirror — in step with
//! the chats themselves, with `session/chatUpdated`.
//!
//! AHP leaves this to the host: a chat's `status`, `activity` and `modifiedAt` change through
//! actions on the chat channel (a turn starts or ends, a tool call waits for confirmation), and
//! a client subscribed only to the session — a session list, a phone — sees the chat's activity
//! only through its catalog entry. The host's `root/sessionSummaryChanged` announcements run on
//! session-channel actions, so this also keeps every session list current when a turn ends.
//!
//! The central decision: **the catalog entry is recomputed from the chat's current
//! post-reduction state, never from the action that triggered it.** The action only says which
//! chat to look at; the changes are what
//! [`chat_summary_changes`](agenthost_reducers::projection::chat_summary_changes) finds between
//! the published entry and the chat, so a rejected envelope changes nothing, a repeated or late
//! observation dispatches nothing, and a missed one is repaired by the next. The title is never
//! touched: the chat reducer has no title, the catalog holds it and the `sessionTitle`
//! contribution decides it. Streaming actions
//! (text, reasoning, tool-call arguments and output, usage) cannot change a summary and are not
//! looked at. A chat not (yet) in its session's catalog is left alone: `session/chatAdded` puts
//! it there with its state of the moment.
#![deny(missing_docs)]

use std::sync::Arc;

use agenthost_dispatcher::{
    ChatContribution, Contribution, ContributionContext, DispatchedAction, Hook, HookResult,
    HookSet, MissingService, ServiceRegistry,
};
use agenthost_protocol::StateAction;
use agenthost_protocol::actions::SessionChatUpdatedAction;
use agenthost_reducers::projection::chat_summary_changes;
use agenthost_services::{HostState, ServerDispatch};

/// The `chatCatalog` contribution. Register it with `dispatcher.register::<ChatCatalog>()`; it
/// needs `dyn HostState` and `dyn ServerDispatch` in the registry.
pub struct ChatCatalog {
    state: Arc<dyn HostState>,
    dispatch: Arc<dyn ServerDispatch>,
}

impl std::fmt::Debug for ChatCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatCatalog").finish_non_exhaustive()
    }
}

impl ChatCatalog {
    /// The contribution over the host's state and its server dispatch.
    pub fn new(state: Arc<dyn HostState>, dispatch: Arc<dyn ServerDispatch>) -> Self {
        Self { state, dispatch }
    }

    /// Resolves `dyn HostState` and `dyn ServerDispatch` from `services`.
    pub fn from_services(services: &ServiceRegistry) -> Result<Self, MissingService> {
        Ok(Self::new(
            services.get::<dyn HostState>()?,
            services.get::<dyn ServerDispatch>()?,
        ))
    }

    /// Brings `chat`'s entry in `session`'s catalog up to the chat's state.
    fn sync(&self, session: &str, chat: &str) {
        let (Some(state), Some(session_state)) =
            (self.state.chat(chat), self.state.session(session))
        else {
            return;
        };
        let Some(published) = session_state.chats.iter().find(|c| c.resource == chat) else {
            tracing::debug!(
                session,
                chat,
                "chatCatalog: the chat is not in the catalog yet"
            );
            return;
        };
        let Some(mut changes) = chat_summary_changes(published, &state) else {
            return;
        };
        // The catalog holds the chat's title (the chat reducer has none): the `sessionTitle`
        // contribution owns it.
        changes.title = None;
        let nothing = changes.status.is_none()
            && changes.activity.is_none()
            && changes.modified_at.is_none()
            && changes.changes.is_none()
            && changes.origin.is_none()
            && changes.movable.is_none()
            && changes.interactivity.is_none()
            && changes.working_directories.is_none();
        if nothing {
            return;
        }
        let update = StateAction::SessionChatUpdated(SessionChatUpdatedAction {
            chat: chat.to_owned(),
            changes,
        });
        if let Err(error) = self.dispatch.dispatch(session, update) {
            tracing::debug!(session, chat, %error, "chatCatalog: the catalog update was refused");
        }
    }
}

/// Whether `action` can change a chat's summary: its status (turns, confirmations, inputs),
/// activity, `modifiedAt`, flags or working directories. Streaming and queue actions cannot.
fn affects_summary(action: &StateAction) -> bool {
    matches!(
        action,
        StateAction::ChatTurnStarted(_)
            | StateAction::ChatTurnComplete(_)
            | StateAction::ChatTurnCancelled(_)
            | StateAction::ChatError(_)
            | StateAction::ChatTurnResume(_)
            | StateAction::ChatTruncated(_)
            | StateAction::ChatTurnsLoaded(_)
            | StateAction::ChatToolCallReady(_)
            | StateAction::ChatToolCallConfirmed(_)
            | StateAction::ChatToolCallComplete(_)
            | StateAction::ChatToolCallResultConfirmed(_)
            | StateAction::ChatToolCallAuthRequired(_)
            | StateAction::ChatToolCallAuthResolved(_)
            | StateAction::ChatInputRequested(_)
            | StateAction::ChatInputCompleted(_)
            | StateAction::ChatActivityChanged(_)
            | StateAction::ChatIsReadChanged(_)
            | StateAction::ChatIsArchivedChanged(_)
            | StateAction::ChatWorkingDirectorySet(_)
            | StateAction::ChatWorkingDirectoryRemoved(_)
            | StateAction::ChatMovableChanged(_)
    )
}

impl Contribution for ChatCatalog {
    const ID: &'static str = "chatCatalog";
    const ORDER: i32 = 205;
    const HOOKS: HookSet = HookSet::of(&[Hook::DidDispatchAction]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Self::from_services(services)
    }
}

impl ChatContribution for ChatCatalog {
    fn on_did_dispatch_action(&self, action: &DispatchedAction<'_>) -> HookResult {
        // A rejected envelope never reduced: the chat is as the last sync saw it.
        if action.rejection_reason.is_some() || !affects_summary(action.action) {
            return Ok(());
        }
        let (Some(session), Some(chat)) = (action.session, action.chat) else {
            return Ok(());
        };
        // Only a chat channel's own actions: a session-channel action names no chat.
        if action.channel != chat {
            return Ok(());
        }
        self.sync(session, chat);
        Ok(())
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
