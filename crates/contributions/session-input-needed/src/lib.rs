//! `sessionInputNeeded` (order 200, `onDidDispatchAction`): mirrors each chat's blockers — open
//! input requests, tool calls waiting for confirmation or authentication, client-run tools —
//! into the owning session's `inputNeeded` list (contribution reference §10.2).
//!
//! The central decision: **the list is recomputed from current post-reduction state, never
//! from the action that triggered it.** The action only says *which* chat to look at; the
//! chat's desired entries come from the reducers' projection
//! ([`desired_input_needed`](agenthost_reducers::projection::desired_input_needed), read through
//! [`HostState::chat_input_needed`]), and the minimal remove-then-upsert actions from
//! [`diff_input_needed`], applied to that chat's entries only. So a rejected envelope changes
//! nothing, a missed or reordered observation is repaired by the next one, projecting twice
//! dispatches nothing, and the entries of other chats of the session are never touched.
//!
//! Syncs are serialized per contribution and coalesced: an observation that arrives while a sync
//! runs — from another thread, or re-entrantly from the observers of the sync's own server
//! actions — queues its chat and returns; the running sync drains the queue. Each sync reads
//! state afresh, so the last one always sees the last reduction.
//!
//! Not yet done (§10.2): telling the turn and tool-call trackers when a turn or call becomes
//! blocked or unblocked.
#![deny(missing_docs)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use agenthost_dispatcher::{
    ChatContribution, Contribution, ContributionContext, DispatchedAction, Hook, HookResult,
    HookSet, MissingService, ServiceRegistry,
};
use agenthost_protocol::ahp_types::state::ResponsePart;
use agenthost_protocol::{Channel, StateAction};
use agenthost_reducers::projection::{diff_input_needed, entry_chat};
use agenthost_services::{HostState, ServerDispatch};

/// The `sessionInputNeeded` contribution.
pub struct SessionInputNeeded {
    state: Arc<dyn HostState>,
    dispatch: Arc<dyn ServerDispatch>,
    queue: Mutex<SyncQueue>,
}

/// Chats waiting for a sync, and whether a thread is draining them.
#[derive(Default)]
struct SyncQueue {
    /// `(session, chat)`, each at most once.
    pending: VecDeque<(String, String)>,
    draining: bool,
}

impl std::fmt::Debug for SessionInputNeeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionInputNeeded").finish_non_exhaustive()
    }
}

impl SessionInputNeeded {
    /// The contribution over the host's state and its server dispatch.
    pub fn new(state: Arc<dyn HostState>, dispatch: Arc<dyn ServerDispatch>) -> Self {
        Self {
            state,
            dispatch,
            queue: Mutex::new(SyncQueue::default()),
        }
    }

    fn queue(&self) -> MutexGuard<'_, SyncQueue> {
        // Every mutation completes before the guard drops: a poisoned queue is still valid.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `chat` and, unless a sync is already running, drains the queue.
    fn schedule(&self, session: &str, chat: &str) {
        {
            let mut queue = self.queue();
            if !queue.pending.iter().any(|(s, c)| s == session && c == chat) {
                queue
                    .pending
                    .push_back((session.to_owned(), chat.to_owned()));
            }
            if queue.draining {
                return;
            }
            queue.draining = true;
        }
        let _reset = ResetOnPanic(self);
        loop {
            let next = {
                let mut queue = self.queue();
                match queue.pending.pop_front() {
                    Some(next) => next,
                    None => {
                        queue.draining = false;
                        return;
                    }
                }
            };
            self.sync_chat(&next.0, &next.1);
        }
    }

    /// Brings `chat`'s entries in `session`'s list to what the chat's current state says.
    fn sync_chat(&self, session: &str, chat: &str) {
        let Some(current) = self.state.session_input_needed(session) else {
            tracing::debug!(
                session,
                chat,
                "sessionInputNeeded: unknown session, skipped"
            );
            return;
        };
        let current: Vec<_> = current
            .into_iter()
            .filter(|entry| entry_chat(entry) == Some(chat))
            .collect();
        // A chat that is gone has no blockers: its entries are removed.
        let desired = self.state.chat_input_needed(chat).unwrap_or_default();
        for action in diff_input_needed(&current, &desired) {
            if let Err(error) = self.dispatch.dispatch(session, action) {
                // The rest of the diff assumed this step; the next observation recomputes.
                tracing::warn!(session, chat, %error, "sessionInputNeeded: sync stopped");
                return;
            }
        }
    }
}

/// Clears the draining flag when a sync panics, so later observations are not queued forever.
struct ResetOnPanic<'a>(&'a SessionInputNeeded);

impl Drop for ResetOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut queue = self.0.queue();
            queue.pending.clear();
            queue.draining = false;
        }
    }
}

/// Whether `action` can change a chat's blockers: tool-call, input, turn-end and truncate
/// actions, and response parts that add a tool call or an input request. Tool-call deltas are
/// left out on purpose: they only stream arguments, and a streaming call never blocks.
fn affects_blockers(action: &StateAction) -> bool {
    match action {
        StateAction::ChatResponsePart(part) => matches!(
            part.part,
            ResponsePart::ToolCall(_) | ResponsePart::InputRequest(_)
        ),
        StateAction::ChatToolCallStart(_)
        | StateAction::ChatToolCallReady(_)
        | StateAction::ChatToolCallConfirmed(_)
        | StateAction::ChatToolCallComplete(_)
        | StateAction::ChatToolCallResultConfirmed(_)
        | StateAction::ChatToolCallContentChanged(_)
        | StateAction::ChatToolCallAuthRequired(_)
        | StateAction::ChatToolCallAuthResolved(_)
        | StateAction::ChatInputRequested(_)
        | StateAction::ChatInputAnswerChanged(_)
        | StateAction::ChatInputCompleted(_)
        | StateAction::ChatTurnComplete(_)
        | StateAction::ChatTurnCancelled(_)
        | StateAction::ChatError(_)
        | StateAction::ChatTurnResume(_)
        | StateAction::ChatTruncated(_) => true,
        _ => false,
    }
}

impl Contribution for SessionInputNeeded {
    const ID: &'static str = "sessionInputNeeded";
    const ORDER: i32 = 200;
    const HOOKS: HookSet = HookSet::of(&[Hook::DidDispatchAction]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Ok(Self::new(
            services.get::<dyn HostState>()?,
            services.get::<dyn ServerDispatch>()?,
        ))
    }
}

impl ChatContribution for SessionInputNeeded {
    fn on_did_dispatch_action(&self, action: &DispatchedAction<'_>) -> HookResult {
        // A rejected envelope never reduced: current state is what the last sync saw.
        if action.rejection_reason.is_some() || !affects_blockers(action.action) {
            return Ok(());
        }
        if !matches!(Channel::parse(action.channel), Ok(Channel::Chat(_))) {
            return Ok(());
        }
        self.schedule(action.session, action.channel);
        Ok(())
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
