//! What the session lifecycle keeps in the store: the catalog, completed turns, and restoring
//! both into live state on demand.

use std::sync::Arc;

use agenthost_protocol::ahp_types::common::JsonObject;
use agenthost_protocol::ahp_types::state::{
    ChatState, ChatSummary, SessionLifecycle, SessionState, SessionStatus, Turn,
};
use agenthost_protocol::usage::{Cost, set_cost};
use agenthost_protocol::{ActionEnvelope, StateAction};
use agenthost_protocol::{ChatUri, SessionUri};
use agenthost_reducers::HostState;
use agenthost_reducers::projection::chat_summary;
use agenthost_reducers::states::empty_chat;
use agenthost_services::ResumeHandles;
use agenthost_state::{CommitHook, SeqReservation, StateManager};
use agenthost_store::{
    ChatRecord, HistoryWrite, HistoryWriter, SessionRecord, SpendTotal, Store, TitleSource,
    TurnRecord,
};

/// Persists `serverSeq` reservations as the store's high-water mark.
pub struct StoreReservation(
    /// The store whose high-water mark is raised.
    pub Store,
);

impl SeqReservation for StoreReservation {
    fn reserve(&self, up_to: u64) -> bool {
        self.0.raise_server_seq_high_water(up_to).is_ok()
    }
}

/// Makes every chat's history durable inside the state's commit, before any client sees the
/// action: a chat's record when it is added (subagent and side chats included — whoever adds
/// them), an open-turn marker with the user's message when a turn starts (written again at each
/// tool call's start, with what the turn holds by then), the finished turn
/// (with the agent's resume handle, in the same transaction, which also deletes the marker)
/// when it ends, and truncations. A turn a client saw complete survives any crash; a turn the
/// host died during is found again by its marker.
///
/// The writes go through a [`HistoryWriter`]: in order per chat, a missing chat record is
/// rebuilt from live state, and what the store refuses (a full disk, a read-only directory) is
/// kept — bounded: at the limit the session service's intake refuses new turns with
/// `HistoryWriter::refusal` — and tried again by [`Self::retry`] outside the state lock.
pub struct TurnRecorder {
    /// The writer every record goes through (its backlog is the intake's refusal signal).
    pub writer: HistoryWriter,
    handles: Option<Arc<dyn ResumeHandles>>,
}

impl CommitHook for TurnRecorder {
    fn before_broadcast(&self, host: &HostState, envelope: &ActionEnvelope) {
        let repair = |chat: &ChatUri| live_chat_record(host, chat);
        if let Some((chat, write)) = self.write_for(host, envelope) {
            self.writer.submit(&chat, write, &repair);
        }
    }
}

impl TurnRecorder {
    /// A recorder writing to `store`, refusing new turns once `limit` writes are kept, storing
    /// each finished turn with the resume handle `handles` give.
    pub fn new(store: Store, limit: usize, handles: Option<Arc<dyn ResumeHandles>>) -> Self {
        Self {
            writer: HistoryWriter::new(store, limit),
            handles,
        }
    }

    /// The history write an accepted envelope calls for, if any.
    fn write_for(
        &self,
        host: &HostState,
        envelope: &ActionEnvelope,
    ) -> Option<(ChatUri, HistoryWrite)> {
        if let StateAction::SessionChatAdded(added) = &envelope.action {
            let chat = host.chat_uri(&added.summary.resource)?.clone();
            let record = live_chat_record(host, &chat)?;
            return Some((chat, HistoryWrite::Chat(Box::new(record))));
        }
        let chat = host.chat_uri(&envelope.channel)?.clone();
        let write = match &envelope.action {
            // The marker again at each tool call's start: a turn the host dies during keeps
            // what it had done up to there (one write per tool call, never per delta).
            StateAction::ChatTurnStarted(_)
            | StateAction::ChatTurnResume(_)
            | StateAction::ChatToolCallStart(_) => {
                let active = host.chat(chat.as_str())?.active_turn.clone()?;
                HistoryWrite::Opened(Box::new(active))
            }
            StateAction::ChatTurnComplete(a) => self.finished(host, &chat, &a.turn_id)?,
            StateAction::ChatTurnCancelled(a) => self.finished(host, &chat, &a.turn_id)?,
            StateAction::ChatError(a) => self.finished(host, &chat, &a.turn_id)?,
            StateAction::ChatTruncated(a) => HistoryWrite::Truncate {
                keep_through: a.turn_id.clone(),
            },
            _ => return None,
        };
        Some((chat, write))
    }

    /// The record of a finished turn, with the agent's current resume handle.
    fn finished(&self, host: &HostState, chat: &ChatUri, turn_id: &str) -> Option<HistoryWrite> {
        let state = host.chat(chat.as_str())?;
        let turn = state.turns.iter().rev().find(|t| t.id == turn_id)?;
        let mut record = TurnRecord::new(turn.clone());
        record.usage = record.turn.usage.clone();
        let resume_handle = self
            .handles
            .as_ref()
            .and_then(|h| h.resume_handle(chat.as_str()));
        Some(HistoryWrite::Turn {
            record: Box::new(record),
            modified_at: state.modified_at.clone(),
            resume_handle,
        })
    }

    /// Tries the kept writes again, outside the state lock: the records a repair may need are
    /// read from `state` first. Returns how many writes are still kept.
    pub fn retry(&self, state: &StateManager) -> usize {
        if self.writer.pending() == 0 {
            return 0;
        }
        let records: std::collections::HashMap<String, ChatRecord> = state.read(|host| {
            self.writer
                .kept_chats()
                .iter()
                .filter_map(|chat| Some((chat.to_string(), live_chat_record(host, chat)?)))
                .collect()
        });
        self.writer
            .flush(&|chat: &ChatUri| records.get(chat.as_str()).cloned())
    }
}

/// The store record of a chat in live state (its position in the session's catalog).
fn live_chat_record(host: &HostState, chat: &ChatUri) -> Option<ChatRecord> {
    let session = host.chat_session(chat.as_str())?;
    let state = host.chat(chat.as_str())?;
    let position = host
        .session(session)?
        .chats
        .iter()
        .position(|c| c.resource == chat.as_str())
        .unwrap_or(usize::MAX);
    Some(chat_record(
        session,
        chat,
        state,
        i64::try_from(position).unwrap_or(i64::MAX),
    ))
}

/// The store record of a live session.
pub fn session_record(uri: &SessionUri, state: &SessionState, created_at: &str) -> SessionRecord {
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

/// The store record of the live chat `uri` at `position` in its session's catalog.
pub fn chat_record(
    session: &SessionUri,
    uri: &ChatUri,
    chat: &ChatState,
    position: i64,
) -> ChatRecord {
    ChatRecord {
        uri: uri.clone(),
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
        config: agenthost_reducers::chat_config::chat_config(chat),
        resume_handle: None,
        subagent: chat.origin.as_ref().is_some_and(|o| {
            matches!(
                o,
                agenthost_protocol::ahp_types::state::ChatOrigin::Tool { .. }
            )
        }),
    }
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
pub fn stored_chat_summary(record: &ChatRecord) -> ChatSummary {
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
pub fn restored_session(record: &SessionRecord, chats: &[ChatRecord]) -> SessionState {
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

/// A session's `_meta` holding its total spend from the ledger (`agenthost.costUsd`), `None`
/// when no turn of it was ever costed.
pub fn spend_meta(total: &SpendTotal) -> Option<JsonObject> {
    let cost = match (total.priced_turns, total.unpriced_turns) {
        (0, 0) => return None,
        (0, _) => Cost::Unknown,
        (_, unpriced) => Cost::Usd {
            amount: total.cost_usd,
            complete: unpriced == 0,
        },
    };
    let mut meta = JsonObject::new();
    set_cost(&mut meta, cost);
    Some(meta)
}

/// A stored chat as live state, with the turns the hydration stages returned.
pub fn restored_chat(record: &ChatRecord, turns: Vec<Turn>, title: Option<String>) -> ChatState {
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

/// The `x-spend` report from the spend ledger: each session with a turn updated at or after
/// `since` (every session with spend when `None`), with its title, counting those turns only.
pub fn spend_report(
    store: &Store,
    since: Option<String>,
) -> Result<agenthost_services::spend::SpendReport, agenthost_store::StoreError> {
    use agenthost_services::spend::{SessionSpend, SpendFigure, SpendReport};
    let mut sessions = Vec::new();
    for row in store.spend_since(since.as_deref())? {
        let title = store
            .session(&row.session)?
            .map(|record| record.title)
            .unwrap_or_default();
        sessions.push(SessionSpend {
            session: row.session.to_string(),
            title,
            provider: row.provider,
            spend: SpendFigure {
                cost_usd: agenthost_protocol::usage::round_usd(row.total.cost_usd),
                priced_turns: row.total.priced_turns,
                unpriced_turns: row.total.unpriced_turns,
            },
        });
    }
    Ok(SpendReport::of(since, sessions))
}
