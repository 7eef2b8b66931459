//! What the session lifecycle keeps in the store: the catalog, completed turns, and restoring
//! both into live state on demand.

use std::sync::{Arc, OnceLock};

use agenthost_protocol::ahp_types::state::{
    ChatState, ChatSummary, SessionLifecycle, SessionState, SessionStatus, Turn,
};
use agenthost_protocol::{ActionEnvelope, StateAction};
use agenthost_protocol::{ChatUri, SessionUri};
use agenthost_reducers::HostState;
use agenthost_reducers::projection::chat_summary;
use agenthost_reducers::states::empty_chat;
use agenthost_state::{CommitHook, SeqReservation};
use agenthost_store::{ChatRecord, SessionRecord, Store, TitleSource, TurnRecord};
use serde_json::Value;

/// Persists `serverSeq` reservations as the store's high-water mark.
pub(crate) struct StoreReservation(pub(crate) Store);

impl SeqReservation for StoreReservation {
    fn reserve(&self, up_to: u64) -> bool {
        self.0.raise_server_seq_high_water(up_to).is_ok()
    }
}

/// Where the recorder reads an agent's current resume handle: the orchestrator, which owns the
/// provider conversations (wired at composition, since the two crates share a layer).
pub trait ResumeHandles: Send + Sync {
    /// The handle to resume `chat`'s conversation, or `None` to leave the stored one as it is
    /// (no live conversation, or an agent that cannot resume).
    fn resume_handle(&self, chat: &str) -> Option<Value>;
}

/// Writes every completed turn (and truncations) to the store inside the state's commit, before
/// any client sees the turn end: a turn a client saw complete survives any crash. The agent's
/// resume handle goes in the same transaction, so history and conversation never disagree.
///
/// A write the store refuses (a full disk, a read-only data directory) is kept, in order, and
/// tried again before the next commit's writes — so history is not lost while the host runs
/// once the store takes writes again (a write still pending when the process dies is lost; the
/// failure is logged as an error each time).
pub(crate) struct TurnRecorder {
    pub(crate) store: Store,
    pub(crate) handles: OnceLock<Arc<dyn ResumeHandles>>,
    pub(crate) pending: std::sync::Mutex<std::collections::VecDeque<PendingTurn>>,
}

/// A completed turn the store has not taken yet.
pub(crate) struct PendingTurn {
    chat: ChatUri,
    record: TurnRecord,
    modified_at: String,
    handle: Option<Value>,
}

impl CommitHook for TurnRecorder {
    fn before_broadcast(&self, host: &HostState, envelope: &ActionEnvelope) {
        let Ok(chat) = ChatUri::parse(&envelope.channel) else {
            self.flush();
            return;
        };
        let result = match &envelope.action {
            StateAction::ChatTurnComplete(a) => self.record(host, &chat, &a.turn_id),
            StateAction::ChatTurnCancelled(a) => self.record(host, &chat, &a.turn_id),
            StateAction::ChatError(a) => self.record(host, &chat, &a.turn_id),
            StateAction::ChatTruncated(a) => self
                .store
                .truncate_turns(&chat, a.turn_id.as_deref())
                .map(|_| ()),
            _ => Ok(()),
        };
        if let Err(error) = result {
            tracing::error!(chat = %chat, %error, "could not persist the chat's history");
        }
        self.flush();
    }
}

impl TurnRecorder {
    /// Queues the turn's record behind any earlier one the store refused.
    fn record(
        &self,
        host: &HostState,
        chat: &ChatUri,
        turn_id: &str,
    ) -> agenthost_store::Result<()> {
        let Some(state) = host.chat(chat.as_str()) else {
            return Ok(());
        };
        let Some(turn) = state.turns.iter().rev().find(|t| t.id == turn_id) else {
            return Ok(());
        };
        let mut record = TurnRecord::new(turn.clone());
        record.usage = record.turn.usage.clone();
        let handle = self
            .handles
            .get()
            .and_then(|h| h.resume_handle(chat.as_str()));
        self.queue().push_back(PendingTurn {
            chat: chat.clone(),
            record,
            modified_at: state.modified_at.clone(),
            handle,
        });
        Ok(())
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, std::collections::VecDeque<PendingTurn>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes the queued records in order, stopping at the first the store refuses.
    fn flush(&self) {
        let mut queue = self.queue();
        while let Some(next) = queue.front() {
            let written = match &next.handle {
                Some(handle) => self.store.append_turn_with_resume_handle(
                    &next.chat,
                    &next.record,
                    &next.modified_at,
                    Some(handle),
                ),
                None => self
                    .store
                    .append_turn(&next.chat, &next.record, &next.modified_at),
            };
            match written {
                Ok(()) => {
                    queue.pop_front();
                }
                Err(error) => {
                    tracing::error!(chat = %next.chat, %error, queued = queue.len(),
                        "could not persist a completed turn; it is kept and tried again");
                    return;
                }
            }
        }
    }
}

/// The store record of a live session.
pub(crate) fn session_record(
    uri: &SessionUri,
    state: &SessionState,
    created_at: &str,
) -> SessionRecord {
    let flags = SessionStatus::from_bits(state.status);
    SessionRecord {
        uri: uri.clone(),
        provider: state.provider.clone(),
        title: state.title.clone(),
        title_source: TitleSource::Default,
        created_at: created_at.to_owned(),
        modified_at: created_at.to_owned(),
        working_directories: state.working_directories.clone().unwrap_or_default(),
        read: flags.contains(SessionStatus::IsRead),
        archived: flags.contains(SessionStatus::IsArchived),
        default_chat: state
            .default_chat
            .as_deref()
            .and_then(|c| ChatUri::parse(c).ok()),
    }
}

/// The store record of a live chat at `position` in its session's catalog.
pub(crate) fn chat_record(
    session: &SessionUri,
    chat: &ChatState,
    position: i64,
) -> Option<ChatRecord> {
    Some(ChatRecord {
        uri: ChatUri::parse(&chat.resource).ok()?,
        session: session.clone(),
        position,
        title: chat.title.clone(),
        title_source: TitleSource::Default,
        modified_at: chat.modified_at.clone(),
        origin: chat.origin.clone(),
        interactivity: chat.interactivity,
        read: SessionStatus::from_bits(chat.status).contains(SessionStatus::IsRead),
        archived: SessionStatus::from_bits(chat.status).contains(SessionStatus::IsArchived),
        draft: chat.draft.clone(),
        config: None,
        resume_handle: None,
        subagent: chat.origin.as_ref().is_some_and(|o| {
            matches!(
                o,
                agenthost_protocol::ahp_types::state::ChatOrigin::Tool { .. }
            )
        }),
    })
}

fn flag_bits(read: bool, archived: bool) -> u32 {
    let mut bits = 0;
    if read {
        bits |= SessionStatus::IsRead.bits();
    }
    if archived {
        bits |= SessionStatus::IsArchived.bits();
    }
    bits
}

/// The catalog entry of a stored chat (its turns are not loaded).
pub(crate) fn stored_chat_summary(record: &ChatRecord) -> ChatSummary {
    let mut chat = empty_chat(
        record.uri.as_str(),
        &record.title,
        &record.modified_at,
        record.origin.clone(),
    );
    chat.interactivity = record.interactivity;
    chat.status |= flag_bits(record.read, record.archived);
    chat_summary(&chat)
}

/// A stored session as live state: ready, with its chat catalog.
pub(crate) fn restored_session(record: &SessionRecord, chats: &[ChatRecord]) -> SessionState {
    SessionState {
        provider: record.provider.clone(),
        title: record.title.clone(),
        status: SessionStatus::Idle.bits() | flag_bits(record.read, record.archived),
        activity: None,
        origin: None,
        project: None,
        working_directories: Some(record.working_directories.clone()),
        annotations: None,
        lifecycle: SessionLifecycle::Ready,
        creation_error: None,
        server_tools: None,
        active_clients: Vec::new(),
        chats: chats.iter().map(stored_chat_summary).collect(),
        default_chat: record.default_chat.as_ref().map(ChatUri::to_string),
        config: None,
        customizations: None,
        changesets: None,
        input_needed: None,
        meta: None,
    }
}

/// A stored chat as live state, with the turns the hydration stages returned.
pub(crate) fn restored_chat(
    record: &ChatRecord,
    turns: Vec<Turn>,
    title: Option<String>,
) -> ChatState {
    let mut chat = empty_chat(
        record.uri.as_str(),
        title.as_deref().unwrap_or(&record.title),
        &record.modified_at,
        record.origin.clone(),
    );
    chat.interactivity = record.interactivity;
    chat.status |= flag_bits(record.read, record.archived);
    chat.draft = record.draft.clone();
    chat.turns = turns;
    chat
}
