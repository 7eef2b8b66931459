//! `sessionInputNeeded` (order 200, `onDidDispatchAction`): mirrors each chat's blockers — open
//! input requests, tool calls waiting for confirmation or authentication, client-run tools —
//! into the owning session's `inputNeeded` list.
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
//! Each sync also tells the trackers what it changed — from the diff steps the host accepted,
//! never from the desired list alone, so a refused dispatch tells nothing:
//!
//! | Service | Told |
//! |---|---|
//! | [`HostState`] | read: the session's current entries, the chat's desired entries (and the chat, to find the turn of an input request) |
//! | [`ServerDispatch`] | the `session/inputNeededRemoved` / `session/inputNeededSet` steps, on the owning session |
//! | [`ToolCallTracker`] | `blocked(call, Confirmation / ClientExecution / Authentication)` for each tool entry added, `unblocked(call)` for each one removed |
//! | [`TurnTracker`] | `turn_blocked(chat, turn, block)` when the chat goes from no entries to some (the kind of its first entry; a `chatInput` is `UserInput`), `turn_unblocked(chat, turn)` when it goes from some to none |
//!
//! The turn stays blocked while a call trades its confirmation entry for its execution entry
//! (the removal comes first, but the turn is told only what the whole sync changed). The turn of
//! the entries is the one their tool entries name, else the turn holding their input request
//! (the active turn, or an ended one when the sync clears it); should one sync find the entries
//! moved from one turn to another, the old turn is unblocked and the new one blocked. A subagent
//! chat reports under its own chat URI, turn and calls; only its entries go to the owning
//! session's list.
#![deny(missing_docs)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use agenthost_dispatcher::{
    ChatContribution, Contribution, ContributionContext, DispatchedAction, Hook, HookResult,
    HookSet, MissingService, ServiceRegistry,
};
use agenthost_protocol::StateAction;
use agenthost_protocol::ahp_types::state::{
    ResponsePart, SessionInputRequest, ToolCallConfirmationState,
};
use agenthost_protocol::ids::ToolCallKey;
use agenthost_reducers::projection::{diff_input_needed, entry_chat, entry_id};
use agenthost_services::{
    HostState, ServerDispatch, ToolCallBlock, ToolCallTracker, TurnBlock, TurnTracker,
};

/// The `sessionInputNeeded` contribution. Register it with
/// `dispatcher.register::<SessionInputNeeded>()`; it needs `dyn HostState`,
/// `dyn ServerDispatch`, `dyn TurnTracker` and `dyn ToolCallTracker` in the registry.
pub struct SessionInputNeeded {
    state: Arc<dyn HostState>,
    dispatch: Arc<dyn ServerDispatch>,
    turns: Arc<dyn TurnTracker>,
    tool_calls: Arc<dyn ToolCallTracker>,
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
    /// The contribution over the host's state and its server dispatch, telling `turns` and
    /// `tool_calls` what becomes blocked or unblocked.
    pub fn new(
        state: Arc<dyn HostState>,
        dispatch: Arc<dyn ServerDispatch>,
        turns: Arc<dyn TurnTracker>,
        tool_calls: Arc<dyn ToolCallTracker>,
    ) -> Self {
        Self {
            state,
            dispatch,
            turns,
            tool_calls,
            queue: Mutex::new(SyncQueue::default()),
        }
    }

    /// Resolves `dyn HostState`, `dyn ServerDispatch`, `dyn TurnTracker` and
    /// `dyn ToolCallTracker` from `services`.
    pub fn from_services(services: &ServiceRegistry) -> Result<Self, MissingService> {
        Ok(Self::new(
            services.get::<dyn HostState>()?,
            services.get::<dyn ServerDispatch>()?,
            services.get::<dyn TurnTracker>()?,
            services.get::<dyn ToolCallTracker>()?,
        ))
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
        // The chat's entries as the session holds them after each accepted step.
        let mut applied = current.clone();
        for action in diff_input_needed(&current, &desired) {
            let step = action.clone();
            if let Err(error) = self.dispatch.dispatch(session, action) {
                // The rest of the diff assumed this step; the next observation recomputes.
                tracing::warn!(session, chat, %error, "sessionInputNeeded: sync stopped");
                break;
            }
            self.record_step(&mut applied, &step);
        }
        self.tell_turn(chat, &current, &applied);
    }

    /// Records an accepted diff step in `entries` and tells the tool-call tracker about the call
    /// of a tool entry it added or removed. An upsert of an entry already there (same id, so
    /// the same call and kind) changes its content only.
    fn record_step(&self, entries: &mut Vec<SessionInputRequest>, step: &StateAction) {
        match step {
            StateAction::SessionInputNeededRemoved(removed) => {
                let position = entries
                    .iter()
                    .position(|e| entry_id(e) == Some(removed.id.as_str()));
                if let Some(entry) = position.map(|index| entries.remove(index))
                    && let Some((key, _)) = tool_block(&entry)
                {
                    self.tool_calls.unblocked(&key);
                }
            }
            StateAction::SessionInputNeededSet(set) => {
                let id = entry_id(&set.request);
                match entries
                    .iter_mut()
                    .find(|e| id.is_some() && entry_id(e) == id)
                {
                    Some(existing) => *existing = set.request.clone(),
                    None => {
                        if let Some((key, block)) = tool_block(&set.request) {
                            self.tool_calls.blocked(&key, block);
                        }
                        entries.push(set.request.clone());
                    }
                }
            }
            _ => {}
        }
    }

    /// Tells the turn tracker when `chat`'s turn went from unblocked to blocked or back,
    /// comparing the chat's entries before the sync with those it left.
    fn tell_turn(&self, chat: &str, before: &[SessionInputRequest], after: &[SessionInputRequest]) {
        let was_blocked = before.iter().any(|e| turn_block(e).is_some());
        match (was_blocked, after.iter().find_map(turn_block)) {
            (false, None) => {}
            (false, Some(block)) => {
                if let Some(turn) = self.turn_of(chat, after) {
                    self.turns.turn_blocked(chat, &turn, block);
                }
            }
            (true, None) => {
                if let Some(turn) = self.turn_of(chat, before) {
                    self.turns.turn_unblocked(chat, &turn);
                }
            }
            (true, Some(block)) => {
                // An entry on both sides belongs to one turn: the turn stays blocked.
                let shared = before
                    .iter()
                    .filter_map(entry_id)
                    .any(|id| after.iter().any(|e| entry_id(e) == Some(id)));
                if shared {
                    return;
                }
                // Blocked before and after: only a change of turn is news.
                if let (Some(old), Some(new)) =
                    (self.turn_of(chat, before), self.turn_of(chat, after))
                    && old != new
                {
                    self.turns.turn_unblocked(chat, &old);
                    self.turns.turn_blocked(chat, &new, block);
                }
            }
        }
    }

    /// The turn `entries` of `chat` block: the turn their tool entries name, else the turn
    /// holding one of their input requests (the active turn first, then the ended ones, latest
    /// first).
    fn turn_of(&self, chat: &str, entries: &[SessionInputRequest]) -> Option<String> {
        if let Some(turn) = entries.iter().find_map(tool_turn) {
            return Some(turn.to_owned());
        }
        let requests: Vec<&str> = entries
            .iter()
            .filter_map(|e| match e {
                SessionInputRequest::ChatInput(input) => Some(input.request.id.as_str()),
                _ => None,
            })
            .collect();
        let Some(state) = self.state.chat(chat) else {
            tracing::debug!(chat, "sessionInputNeeded: chat gone, its turn is not told");
            return None;
        };
        let holds = |parts: &[ResponsePart]| {
            parts.iter().any(|part| {
                matches!(part, ResponsePart::InputRequest(input)
                    if requests.contains(&input.request.id.as_str()))
            })
        };
        let active = state
            .active_turn
            .as_ref()
            .filter(|turn| holds(&turn.response_parts))
            .map(|turn| turn.id.clone());
        let turn = active.or_else(|| {
            state
                .turns
                .iter()
                .rev()
                .find(|turn| holds(&turn.response_parts))
                .map(|turn| turn.id.clone())
        });
        if turn.is_none() {
            tracing::debug!(chat, "sessionInputNeeded: no turn holds the input request");
        }
        turn
    }
}

/// The tool call a tool entry waits on, and how; `None` for a `chatInput` or unknown entry.
fn tool_block(entry: &SessionInputRequest) -> Option<(ToolCallKey, ToolCallBlock)> {
    let (chat, turn, call, block) = match entry {
        SessionInputRequest::ToolConfirmation(e) => {
            let call = match &e.tool_call {
                ToolCallConfirmationState::PendingConfirmation(s) => &s.tool_call_id,
                ToolCallConfirmationState::PendingResultConfirmation(s) => &s.tool_call_id,
                ToolCallConfirmationState::Unknown(_) => return None,
            };
            (&e.chat, &e.turn_id, call, ToolCallBlock::Confirmation)
        }
        SessionInputRequest::ToolClientExecution(e) => (
            &e.chat,
            &e.turn_id,
            &e.tool_call.tool_call_id,
            ToolCallBlock::ClientExecution,
        ),
        SessionInputRequest::ToolAuthentication(e) => (
            &e.chat,
            &e.turn_id,
            &e.tool_call.tool_call_id,
            ToolCallBlock::Authentication,
        ),
        SessionInputRequest::ChatInput(_) | SessionInputRequest::Unknown(_) => return None,
    };
    Some((ToolCallKey::new(chat.clone(), turn, call), block))
}

/// The turn a tool entry names.
fn tool_turn(entry: &SessionInputRequest) -> Option<&str> {
    match entry {
        SessionInputRequest::ToolConfirmation(e) => Some(&e.turn_id),
        SessionInputRequest::ToolClientExecution(e) => Some(&e.turn_id),
        SessionInputRequest::ToolAuthentication(e) => Some(&e.turn_id),
        SessionInputRequest::ChatInput(_) | SessionInputRequest::Unknown(_) => None,
    }
}

/// How an entry blocks its turn; `None` for an unknown kind (which blocks nothing known).
fn turn_block(entry: &SessionInputRequest) -> Option<TurnBlock> {
    match entry {
        SessionInputRequest::ChatInput(_) => Some(TurnBlock::UserInput),
        SessionInputRequest::ToolConfirmation(_) => Some(TurnBlock::ToolConfirmation),
        SessionInputRequest::ToolClientExecution(_) => Some(TurnBlock::ClientExecution),
        SessionInputRequest::ToolAuthentication(_) => Some(TurnBlock::ToolAuthentication),
        SessionInputRequest::Unknown(_) => None,
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
        Self::from_services(services)
    }
}

impl ChatContribution for SessionInputNeeded {
    fn on_did_dispatch_action(&self, action: &DispatchedAction<'_>) -> HookResult {
        // A rejected envelope never reduced: current state is what the last sync saw.
        if action.rejection_reason.is_some() || !affects_blockers(action.action) {
            return Ok(());
        }
        let (Some(session), Some(chat)) = (action.session, action.chat) else {
            return Ok(());
        };
        self.schedule(session, chat);
        Ok(())
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
