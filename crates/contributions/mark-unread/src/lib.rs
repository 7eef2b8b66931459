//! The `markUnread` contribution (order 500, `onTurnEnd`).
//!
//! The central decision: **only a turn that really started and really ended marks anything
//! unread, and it does so with ordinary server actions** — `chat/isReadChanged {isRead: false}`
//! on the chat and `session/isReadChanged {isRead: false}` on the session — which the reducers
//! apply like any client's and every client reduces (no wire extension, no side channel).
//!
//! | Turn-end reason | Effect |
//! |---|---|
//! | `success`, `cancelled`, `error` (resumable or not) | chat unread; session unread when it was read and the chat counts |
//! | `rejected` | nothing: no turn started, and a read (or archived) session must not resurface |
//! | `localCommand` | nothing: a host command keeps the read state |
//!
//! Details, all read from current host state through [`HostState`]:
//!
//! - The chat is marked only when it carries `SessionStatus::IsRead` (the reducers already clear
//!   the flag when a turn starts; a client that watched the turn may have set it again). Marking
//!   an unread chat again would only broadcast a no-op.
//! - The session is marked only when its own `IsRead` flag is set (the session was read)
//!   and the chat *counts toward the session's read aggregate*: every chat of the session
//!   except a `hidden` one (an internal worker the UI never shows must not resurface its
//!   session). Subagent chats count: a background subagent can finish after its parent turn.
//! - A chat or session missing from host state (disposed meanwhile) and a refused dispatch are
//!   logged; the hook never fails and never panics.
#![deny(missing_docs)]

use std::sync::Arc;

use agenthost_dispatcher::{
    ChatContribution, Contribution, ContributionContext, Hook, HookResult, HookSet, MissingService,
    ServiceRegistry, TurnEnd, TurnEndReason,
};
use agenthost_protocol::StateAction;
use agenthost_protocol::actions::{ChatIsReadChangedAction, SessionIsReadChangedAction};
use agenthost_protocol::ahp_types::state::{ChatInteractivity, SessionStatus};
use agenthost_services::{HostState, ServerDispatch};

/// The `markUnread` contribution. Register it with `dispatcher.register::<MarkUnread>()`; it
/// needs `dyn HostState` and `dyn ServerDispatch` in the registry.
pub struct MarkUnread {
    host: Arc<dyn HostState>,
    dispatch: Arc<dyn ServerDispatch>,
}

impl std::fmt::Debug for MarkUnread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MarkUnread").finish_non_exhaustive()
    }
}

impl MarkUnread {
    /// Reads host state through `host` and marks through `dispatch`.
    pub fn new(host: Arc<dyn HostState>, dispatch: Arc<dyn ServerDispatch>) -> Self {
        Self { host, dispatch }
    }

    /// Resolves `dyn HostState` and `dyn ServerDispatch` from `services`.
    pub fn from_services(services: &ServiceRegistry) -> Result<Self, MissingService> {
        Ok(Self::new(
            services.get::<dyn HostState>()?,
            services.get::<dyn ServerDispatch>()?,
        ))
    }

    /// Marks the turn's chat unread; returns whether the chat counts toward the session's read
    /// aggregate (`false` also when the chat is gone).
    fn mark_chat(&self, session: &str, chat: &str) -> bool {
        let Some(state) = self.host.chat(chat) else {
            tracing::debug!(
                session,
                chat,
                "markUnread: the chat is gone, nothing marked"
            );
            return false;
        };
        if is_read(state.status) {
            let action = StateAction::ChatIsReadChanged(ChatIsReadChangedAction { is_read: false });
            self.dispatch_logged(chat, action);
        }
        state.interactivity != Some(ChatInteractivity::Hidden)
    }

    /// Marks `session` unread when it was read.
    fn mark_session(&self, session: &str) {
        let Some(state) = self.host.session(session) else {
            tracing::debug!(session, "markUnread: the session is gone, nothing marked");
            return;
        };
        if is_read(state.status) {
            let action =
                StateAction::SessionIsReadChanged(SessionIsReadChangedAction { is_read: false });
            self.dispatch_logged(session, action);
        }
    }

    fn dispatch_logged(&self, channel: &str, action: StateAction) {
        if let Err(error) = self.dispatch.dispatch(channel, action) {
            tracing::warn!(channel, %error, "markUnread: could not mark unread");
        }
    }
}

impl Contribution for MarkUnread {
    const ID: &'static str = "markUnread";
    const ORDER: i32 = 500;
    const HOOKS: HookSet = HookSet::of(&[Hook::TurnEnd]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Self::from_services(services)
    }
}

impl ChatContribution for MarkUnread {
    fn on_turn_end(&self, turn: &TurnEnd) -> HookResult {
        if !marks_unread(&turn.reason) {
            return Ok(());
        }
        let counts = self.mark_chat(&turn.session, &turn.chat);
        if counts {
            self.mark_session(&turn.session);
        }
        Ok(())
    }
}

/// Whether a turn that ended for `reason` marks anything unread: every started outcome;
/// neither a refused request nor a host command.
pub fn marks_unread(reason: &TurnEndReason) -> bool {
    match reason {
        TurnEndReason::Success | TurnEndReason::Cancelled | TurnEndReason::Error { .. } => true,
        TurnEndReason::Rejected { .. } | TurnEndReason::LocalCommand => false,
    }
}

fn is_read(status: u32) -> bool {
    SessionStatus::from_bits(status).contains(SessionStatus::IsRead)
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
