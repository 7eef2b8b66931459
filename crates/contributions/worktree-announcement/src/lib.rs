//! `worktreeAnnouncement` (order 180, `onOutgoingTurn` and `onHydrateTurns`): for a session
//! running in an isolated worktree, puts the worktree announcement at the start of its
//! **default** chat's first turn — live, as the turn is sent (once per session, the record says
//! when it was shown), and again in a restored history that lacks it.
//!
//! The announcement is a host-authored markdown part (id
//! [`agenthost_services::ANNOUNCEMENT_PART_ID`]) naming the worktree and its branch; agents do
//! not keep it in their own history, so a history rebuilt from them would lose it. The
//! worktree-isolation service ([`WorktreeIsolation`]) owns the record and the text; this
//! contribution only applies [`WorktreeIsolation::restore_announcement`], which is idempotent
//! (a history that already has the part — the host's own record of the live turn — is left as
//! it is). Other chats, sessions that are not isolated, and empty histories pass through
//! unchanged. The live part is dispatched through `dyn ServerDispatch` before the agent is sent
//! the turn; a turn that ended meanwhile (cancelled) takes no part, logged at `debug`.
#![deny(missing_docs)]

use std::sync::Arc;

use agenthost_dispatcher::{
    ChatContribution, Contribution, ContributionContext, Hook, HookFuture, HookSet,
    HydrationContext, MissingService, OutgoingTurn, SendContribution, ServiceRegistry,
};
use agenthost_protocol::actions::ChatResponsePartAction;
use agenthost_protocol::ahp_types::state::Turn;
use agenthost_protocol::{ChatUri, StateAction};
use agenthost_services::{ServerDispatch, WorktreeIsolation, announcement_part};

/// The `worktreeAnnouncement` contribution. Register it with
/// `dispatcher.register::<WorktreeAnnouncement>()`; it needs `dyn WorktreeIsolation` in the
/// registry.
pub struct WorktreeAnnouncement {
    worktrees: Arc<dyn WorktreeIsolation>,
    dispatch: Arc<dyn ServerDispatch>,
}

impl std::fmt::Debug for WorktreeAnnouncement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorktreeAnnouncement")
            .finish_non_exhaustive()
    }
}

impl WorktreeAnnouncement {
    /// Announces what `worktrees` records, live through `dispatch`.
    pub fn new(worktrees: Arc<dyn WorktreeIsolation>, dispatch: Arc<dyn ServerDispatch>) -> Self {
        Self {
            worktrees,
            dispatch,
        }
    }
}

impl Contribution for WorktreeAnnouncement {
    const ID: &'static str = "worktreeAnnouncement";
    const ORDER: i32 = 180;
    const HOOKS: HookSet = HookSet::of(&[Hook::OutgoingTurn, Hook::HydrateTurns]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Ok(Self::new(
            services.get::<dyn WorktreeIsolation>()?,
            services.get::<dyn ServerDispatch>()?,
        ))
    }
}

impl ChatContribution for WorktreeAnnouncement {
    fn on_outgoing_turn<'a>(
        &'a self,
        turn: &'a OutgoingTurn,
    ) -> HookFuture<'a, Option<SendContribution>> {
        Box::pin(async move {
            let (session, chat) = (&turn.session, &turn.chat);
            if let Some(text) = self.worktrees.take_live_announcement(session, chat).await {
                let part = StateAction::ChatResponsePart(ChatResponsePartAction {
                    turn_id: turn.turn_id.clone(),
                    part: announcement_part(&text),
                    meta: None,
                });
                if let Err(error) = self.dispatch.dispatch(&turn.chat, part) {
                    tracing::debug!(chat = turn.chat.as_str(), %error, "worktree announcement not shown");
                }
            }
            Ok(None)
        })
    }

    fn on_hydrate_turns<'a>(
        &'a self,
        context: &'a HydrationContext,
        turns: &'a [Turn],
    ) -> HookFuture<'a, Vec<Turn>> {
        Box::pin(async move {
            let (session, chat) = (&context.session, &context.chat);
            if turns.is_empty() || *chat != ChatUri::default_for(session) {
                return Ok(turns.to_vec());
            }
            Ok(self
                .worktrees
                .restore_announcement(session, chat, turns.to_vec())
                .await)
        })
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
