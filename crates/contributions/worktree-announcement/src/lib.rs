//! `worktreeAnnouncement` (order 200, `onHydrateTurns`): for a session running in an isolated
//! worktree, puts the worktree announcement at the start of its restored **default** chat's
//! first turn.
//!
//! The announcement is a host-authored markdown part (id
//! [`agenthost_services::ANNOUNCEMENT_PART_ID`]) naming the worktree and its branch; agents do
//! not keep it in their own history, so a history rebuilt from them would lose it. The
//! worktree-isolation service ([`WorktreeIsolation`]) owns the record and the text; this
//! contribution only applies [`WorktreeIsolation::restore_announcement`], which is idempotent
//! (a history that already has the part — the host's own record of the live turn — is left as
//! it is). Other chats, sessions that are not isolated, and empty histories pass through
//! unchanged. The live announcement, at the default chat's first turn, belongs to the
//! worktree setup path, not here.
#![deny(missing_docs)]

use std::sync::Arc;

use agenthost_dispatcher::{
    ChatContribution, Contribution, ContributionContext, Hook, HookFuture, HookSet,
    HydrationContext, MissingService, ServiceRegistry,
};
use agenthost_protocol::ahp_types::state::Turn;
use agenthost_protocol::{ChatUri, SessionUri};
use agenthost_services::WorktreeIsolation;

/// The `worktreeAnnouncement` contribution. Register it with
/// `dispatcher.register::<WorktreeAnnouncement>()`; it needs `dyn WorktreeIsolation` in the
/// registry.
pub struct WorktreeAnnouncement {
    worktrees: Arc<dyn WorktreeIsolation>,
}

impl std::fmt::Debug for WorktreeAnnouncement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorktreeAnnouncement")
            .finish_non_exhaustive()
    }
}

impl WorktreeAnnouncement {
    /// Announces through `worktrees`.
    pub fn new(worktrees: Arc<dyn WorktreeIsolation>) -> Self {
        Self { worktrees }
    }
}

impl Contribution for WorktreeAnnouncement {
    const ID: &'static str = "worktreeAnnouncement";
    const ORDER: i32 = 200;
    const HOOKS: HookSet = HookSet::of(&[Hook::HydrateTurns]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Ok(Self::new(services.get::<dyn WorktreeIsolation>()?))
    }
}

impl ChatContribution for WorktreeAnnouncement {
    fn on_hydrate_turns<'a>(
        &'a self,
        context: &'a HydrationContext,
        turns: &'a [Turn],
    ) -> HookFuture<'a, Vec<Turn>> {
        Box::pin(async move {
            let (Ok(session), Ok(chat)) = (
                SessionUri::parse(&context.session),
                ChatUri::parse(&context.chat),
            ) else {
                return Ok(turns.to_vec());
            };
            if turns.is_empty() || chat != ChatUri::default_for(&session) {
                return Ok(turns.to_vec());
            }
            Ok(self
                .worktrees
                .restore_announcement(&session, &chat, turns.to_vec())
                .await)
        })
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
