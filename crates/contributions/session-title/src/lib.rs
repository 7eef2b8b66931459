//! The `sessionTitle` contribution (order 400; `onTurnEnd`, `onOutgoingTurn`,
//! `onDidApplyClientAction`, `onHydrateChat`).
//!
//! The central decision: **this is the only place titles are decided, and a title changes only
//! through actions clients reduce.** The [`TitleController`] decides *what* a title is (seed,
//! refinement, the user's rename wins); this contribution turns each decision into server
//! actions every client's reducer applies — `session/chatUpdated` on the session (the chat's
//! catalog entry) and, for the session's default chat, `session/titleChanged` on the session —
//! and persists every title it applies (source `generated`) and every title the user chose
//! (source `user`), so titles survive a restart. It never dispatches a title on a chat channel:
//! the canonical chat reducer has no title action, so a subscriber's chat state would diverge
//! from the host's (a client's own `session/titleChanged` on a chat — VS Code's rename — is the
//! client's action and handled below). The turn starter does not seed.
//!
//! | Hook | Stimulus | Effect |
//! |---|---|---|
//! | OT | the chat's first outgoing turn (no completed turns, no title in the controller) | seed a provisional title from the message and apply it; the text is never changed |
//! | OT | every turn | the controller's rename instruction, when it has one, as an instruction |
//! | TE | `success` | refine after the first turn (`successful`), apply the refined title |
//! | TE | `cancelled`, `error` not resumable, `localCommand` | refine (unsuccessful): the controller refines nothing, but records the outcome |
//! | TE | `rejected`, `error` resumable | nothing: no turn ended (or the logical turn is not over) |
//! | AC | `session/titleChanged` on a chat | persist the chat-local title and the session-side mirror (source `user`), mark the chat renamed, update the catalog; the default chat cascades to the session (dispatched, persisted, marked) |
//! | AC | `session/titleChanged` on the session | persist the session title (source `user`), mark the session renamed |
//! | HC | a title was already restored | returned unchanged, **storage is not read** |
//! | HC | no title restored | the chat-local stored title, else the session-side mirror, else the stored placeholder |
//!
//! Details:
//!
//! - A turn that ran on the session channel belongs to the session's default chat: the default
//!   chat's URI is what the controller sees (default-chat identity is preserved).
//! - A provisional or generated title never replaces a user's: the controller refuses to seed
//!   or refine over one, and the session title is cascaded only while the user has not renamed
//!   the session.
//! - Refinement may be asynchronous (a generator asking a model). A refinement that is ready at
//!   once is applied inside the hook; otherwise it runs as a task on the current tokio runtime
//!   and the hook returns at once. Without a runtime a pending refinement is dropped (logged).
//! - There is no session-side mirror column in the store: the mirror is the session metadata
//!   entry [`mirror_key`]`(chat)`.
//! - Writes from the synchronous applied-client-action hook go through a [`WriteQueue`], in
//!   order; a failing write is logged (`warn`, naming the session or chat) and dropped, the hook
//!   has already returned `Ok`. [`SessionTitle::flush`] waits for the queue.
//! - A failing hydration read fails the hook, so the dispatcher keeps the previous value.
//! - A user title restored from storage is also told to the controller, so the chat's first
//!   turn after a restart does not seed over it.
#![deny(missing_docs)]

use std::sync::Arc;

use agenthost_dispatcher::{
    AppliedClientAction, ChatContribution, Contribution, ContributionContext, Hook, HookFuture,
    HookResult, HookSet, HydrationContext, MissingService, OutgoingTurn, RestoredChat,
    SendContribution, ServiceRegistry, TurnEnd, TurnEndReason,
};
use agenthost_protocol::actions::{
    PartialChatSummary, SessionChatUpdatedAction, SessionTitleChangedAction,
};
use agenthost_protocol::{ChatUri, SessionUri, StateAction};
use agenthost_services::{
    DataOwner, DispatchError, HostState, ServerDispatch, SessionDataStore, StoredTitle,
    TitleController, TitleKind, TitleSource, WriteQueue,
};
use futures::FutureExt as _;
use futures::future::BoxFuture;

/// The prefix of the session metadata key that mirrors a chat's user title.
pub const MIRROR_KEY_PREFIX: &str = "chatTitle:";

/// The session metadata key under which the session mirrors `chat`'s user title.
pub fn mirror_key(chat: &str) -> String {
    format!("{MIRROR_KEY_PREFIX}{chat}")
}

/// The services [`SessionTitle`] works with.
#[derive(Clone)]
pub struct SessionTitleServices {
    /// Decides titles.
    pub titles: Arc<dyn TitleController>,
    /// Reads a chat's completed turns and the session's default chat.
    pub host: Arc<dyn HostState>,
    /// Dispatches the title actions.
    pub dispatch: Arc<dyn ServerDispatch>,
    /// Persists and restores titles.
    pub data: Arc<dyn SessionDataStore>,
}

impl std::fmt::Debug for SessionTitleServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionTitleServices")
            .finish_non_exhaustive()
    }
}

/// The `sessionTitle` contribution. Register it with `dispatcher.register::<SessionTitle>()`;
/// it needs `dyn TitleController`, `dyn HostState`, `dyn ServerDispatch` and
/// `dyn SessionDataStore` in the registry, and a tokio runtime for writes and slow refinements.
pub struct SessionTitle {
    titler: Arc<Titler>,
}

impl std::fmt::Debug for SessionTitle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionTitle").finish_non_exhaustive()
    }
}

/// What applies titles: shared with the tasks that finish slow refinements.
struct Titler {
    titles: Arc<dyn TitleController>,
    host: Arc<dyn HostState>,
    dispatch: Arc<dyn ServerDispatch>,
    data: Arc<dyn SessionDataStore>,
    writes: Arc<WriteQueue>,
}

impl Titler {
    fn is_default_chat(&self, session: &SessionUri, chat: &ChatUri) -> bool {
        self.host
            .session(session)
            .and_then(|s| s.default_chat)
            .is_some_and(|default| *chat == default.as_str())
    }

    /// Applies a title the host decided (seeded or refined) to `chat` through actions clients
    /// reduce — the session's catalog entry and, for the default chat, the session title (unless
    /// the user renamed the session) — and persists it (source `generated`) so it survives a
    /// restart.
    fn apply(&self, session: &SessionUri, chat: &ChatUri, title: &str, why: &'static str) {
        let cascades = self.is_default_chat(session, chat);
        if let Err(error) = self.dispatch.dispatch(session, catalog(chat, title)) {
            tracing::warn!(session = session.as_str(), chat = chat.as_str(), why, %error, "sessionTitle: could not title the chat");
            return;
        }
        self.persist(
            DataOwner::Chat(chat.clone()),
            title,
            TitleSource::Generated,
            None,
        );
        if cascades && !self.titles.renamed_by_user(session, None) {
            let applied = self.dispatch.dispatch(session, title_changed(title));
            let succeeded = applied.is_ok();
            log_refusal(session, chat, applied);
            if succeeded {
                self.persist(
                    DataOwner::Session(session.clone()),
                    title,
                    TitleSource::Generated,
                    None,
                );
            }
        }
        tracing::debug!(session = session.as_str(), chat = chat.as_str(), why, %title, "sessionTitle: title applied");
    }

    /// Queues the write of `owner`'s title, then of the session-side mirror, if any.
    fn persist(
        &self,
        owner: DataOwner,
        title: &str,
        source: TitleSource,
        mirror: Option<(SessionUri, String)>,
    ) {
        let data = Arc::clone(&self.data);
        let title = title.to_owned();
        self.writes.push(Box::pin(async move {
            let named = owner_name(&owner);
            if let Err(error) = data.set_title(owner, &title, source).await {
                tracing::warn!(owner = named, %error, "sessionTitle: could not persist the title");
            }
            if let Some((session, key)) = mirror
                && let Err(error) = data
                    .set_meta(DataOwner::Session(session.clone()), &key, Some(title))
                    .await
            {
                tracing::warn!(session = session.as_str(), chat = named, %error, "sessionTitle: could not persist the session-side mirror of the chat's title");
            }
        }));
    }

    /// Applies `refined` once it resolves: at once when it is ready, else on a task.
    fn apply_refined(
        self: &Arc<Self>,
        session: SessionUri,
        chat: ChatUri,
        mut refined: BoxFuture<'static, Option<String>>,
    ) {
        if let Some(ready) = (&mut refined).now_or_never() {
            if let Some(title) = ready {
                self.apply(&session, &chat, &title, "refined");
            }
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(
                session = session.as_str(),
                chat = chat.as_str(),
                "sessionTitle: no tokio runtime to refine on, the title stays"
            );
            return;
        };
        let titler = Arc::clone(self);
        runtime.spawn(async move {
            if let Some(title) = refined.await {
                titler.apply(&session, &chat, &title, "refined");
            }
        });
    }

    /// Whether `chat` has never completed a turn; `None` when the chat is not in host state.
    fn is_first_turn(&self, chat: &str) -> Option<bool> {
        self.host
            .chat(chat)
            .map(|state| state.turns.is_empty() && state.turns_next_cursor.is_none())
    }

    /// Whether the controller already has a title for `chat`, or the user named it.
    fn has_title(&self, chat: &str) -> bool {
        self.titles
            .title_state(chat)
            .is_some_and(|state| state.title.is_some() || state.kind == TitleKind::User)
    }
}

impl SessionTitle {
    /// The contribution over `services`.
    pub fn new(services: SessionTitleServices) -> Self {
        let SessionTitleServices {
            titles,
            host,
            dispatch,
            data,
        } = services;
        Self {
            titler: Arc::new(Titler {
                titles,
                host,
                dispatch,
                data,
                writes: Arc::new(WriteQueue::new(<Self as Contribution>::ID)),
            }),
        }
    }

    /// Resolves its services from `services`.
    pub fn from_services(services: &ServiceRegistry) -> Result<Self, MissingService> {
        Ok(Self::new(SessionTitleServices {
            titles: services.get::<dyn TitleController>()?,
            host: services.get::<dyn HostState>()?,
            dispatch: services.get::<dyn ServerDispatch>()?,
            data: services.get::<dyn SessionDataStore>()?,
        }))
    }

    /// Waits until every title write queued so far has finished (or failed and been logged).
    pub async fn flush(&self) {
        self.titler.writes.flush().await;
    }

    /// Seeds and applies a provisional title on `chat`'s first outgoing turn.
    fn seed_on_first_turn(&self, session: &SessionUri, chat: &ChatUri, text: &str) {
        let titler = &self.titler;
        match titler.is_first_turn(chat) {
            Some(true) => {}
            Some(false) => return,
            None => {
                tracing::debug!(
                    session = session.as_str(),
                    chat = chat.as_str(),
                    "sessionTitle: the chat is gone, nothing seeded"
                );
                return;
            }
        }
        if titler.has_title(chat) {
            return;
        }
        if let Some(title) = titler.titles.seed_from_message(session, chat, text) {
            titler.apply(session, chat, &title, "seeded");
        }
    }

    /// Before the default chat's first turn seeds a title that would cascade to the session:
    /// a session the user renamed before a restart keeps that title. The controller's renamed
    /// mark does not survive a restart; the stored session title's source does. Reads storage
    /// only for a first turn of the default chat whose session the controller does not know
    /// as renamed; a failed read is logged and changes nothing.
    async fn recall_user_session_title(&self, session: &SessionUri, chat: &ChatUri) {
        let titler = &self.titler;
        if titler.is_first_turn(chat) != Some(true)
            || !titler.is_default_chat(session, chat)
            || titler.titles.renamed_by_user(session, None)
        {
            return;
        }
        match titler.data.title(DataOwner::Session(session.clone())).await {
            Ok(Some(stored)) if stored.source == TitleSource::User => {
                titler.titles.mark_renamed(session, None, TitleKind::User);
            }
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(session = session.as_str(), %error, "sessionTitle: could not read the session's stored title");
            }
        }
    }

    /// A client renamed `chat` (already reduced into its state).
    fn chat_renamed_by_user(&self, session: &SessionUri, chat: &ChatUri, title: &str) {
        let titles = &self.titler.titles;
        titles.set_title(session, chat, title, TitleKind::User);
        titles.mark_renamed(session, Some(chat), TitleKind::User);
        log_refusal(
            session,
            chat,
            self.titler.dispatch.dispatch(session, catalog(chat, title)),
        );
        self.persist(
            DataOwner::Chat(chat.clone()),
            title,
            Some((session.clone(), mirror_key(chat))),
        );
        if !self.titler.is_default_chat(session, chat) {
            return;
        }
        if let Err(error) = self.titler.dispatch.dispatch(session, title_changed(title)) {
            tracing::warn!(session = session.as_str(), chat = chat.as_str(), %error, "sessionTitle: could not cascade the default chat's title to the session");
            return;
        }
        self.session_renamed_by_user(session, title);
    }

    /// The session `session` was renamed by the user (directly or through its default chat).
    fn session_renamed_by_user(&self, session: &SessionUri, title: &str) {
        self.titler
            .titles
            .mark_renamed(session, None, TitleKind::User);
        self.persist(DataOwner::Session(session.clone()), title, None);
    }

    /// Queues the write of `owner`'s user title, then of the session-side mirror, if any.
    fn persist(&self, owner: DataOwner, title: &str, mirror: Option<(SessionUri, String)>) {
        self.titler.persist(owner, title, TitleSource::User, mirror);
    }

    /// The title to restore for a chat none was restored for.
    async fn stored_title(&self, context: &HydrationContext) -> HookResult<Option<StoredTitle>> {
        let chat = context.chat.clone();
        let local = self.titler.data.title(DataOwner::Chat(chat)).await?;
        if let Some(local) = local.as_ref().filter(|t| t.source != TitleSource::Default) {
            return Ok(Some(local.clone()));
        }
        let session = context.session.clone();
        let mirror = self
            .titler
            .data
            .meta(DataOwner::Session(session), &mirror_key(&context.chat))
            .await?;
        Ok(mirror
            .map(|title| StoredTitle {
                title,
                source: TitleSource::User,
            })
            .or(local))
    }
}

impl Contribution for SessionTitle {
    const ID: &'static str = "sessionTitle";
    const ORDER: i32 = 400;
    const HOOKS: HookSet = HookSet::of(&[
        Hook::TurnEnd,
        Hook::OutgoingTurn,
        Hook::DidApplyClientAction,
        Hook::HydrateChat,
    ]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Self::from_services(services)
    }
}

impl ChatContribution for SessionTitle {
    fn on_turn_end(&self, turn: &TurnEnd) -> HookResult {
        let Some(successful) = refines(&turn.reason) else {
            return Ok(());
        };
        let refined =
            self.titler
                .titles
                .refine_after_first_turn(&turn.session, &turn.chat, successful);
        self.titler
            .apply_refined(turn.session.clone(), turn.chat.clone(), refined);
        Ok(())
    }

    fn on_outgoing_turn<'a>(
        &'a self,
        turn: &'a OutgoingTurn,
    ) -> HookFuture<'a, Option<SendContribution>> {
        Box::pin(async move {
            let (session, chat) = (&turn.session, &turn.chat);
            self.recall_user_session_title(session, chat).await;
            self.seed_on_first_turn(session, chat, &turn.message.text);
            let instruction = self.titler.titles.rename_instruction(session, chat);
            Ok(instruction.map(|instruction| SendContribution {
                instructions: Some(vec![instruction]),
                text: None,
            }))
        })
    }

    fn on_did_apply_client_action(&self, action: &AppliedClientAction<'_>) -> HookResult {
        let StateAction::SessionTitleChanged(change) = action.action else {
            return Ok(());
        };
        if let (Some(session), Some(chat)) = (action.session, action.chat) {
            self.chat_renamed_by_user(session, chat, &change.title);
        } else if let Some(session) = action.session_channel() {
            self.session_renamed_by_user(session, &change.title);
        }
        Ok(())
    }

    fn on_hydrate_chat<'a>(
        &'a self,
        context: &'a HydrationContext,
        chat: &'a RestoredChat,
    ) -> HookFuture<'a, RestoredChat> {
        Box::pin(async move {
            if chat.title.is_some() {
                return Ok(chat.clone());
            }
            let stored = match self.stored_title(context).await {
                Ok(stored) => stored,
                Err(error) => {
                    tracing::warn!(session = context.session.as_str(), chat = context.chat.as_str(), %error, "sessionTitle: could not read the stored title");
                    return Err(error);
                }
            };
            if let Some(StoredTitle {
                title,
                source: TitleSource::User,
            }) = &stored
            {
                let titles = &self.titler.titles;
                titles.set_title(&context.session, &context.chat, title, TitleKind::User);
                titles.mark_renamed(&context.session, Some(&context.chat), TitleKind::User);
            }
            Ok(RestoredChat {
                title: stored.map(|stored| stored.title),
                ..chat.clone()
            })
        })
    }
}

/// Whether a turn that ended for `reason` is refined, and as `successful` or not; `None` when
/// nothing ended (`rejected`) or the logical turn is not over (a resumable error).
pub fn refines(reason: &TurnEndReason) -> Option<bool> {
    match reason {
        TurnEndReason::Success => Some(true),
        TurnEndReason::Rejected { .. }
        | TurnEndReason::Error {
            resumable: true, ..
        } => None,
        TurnEndReason::Cancelled | TurnEndReason::Error { .. } | TurnEndReason::LocalCommand => {
            Some(false)
        }
    }
}

fn title_changed(title: &str) -> StateAction {
    StateAction::SessionTitleChanged(SessionTitleChangedAction {
        title: title.to_owned(),
    })
}

/// The session's catalog entry of `chat`, retitled.
fn catalog(chat: &str, title: &str) -> StateAction {
    StateAction::SessionChatUpdated(SessionChatUpdatedAction {
        chat: chat.to_owned(),
        changes: PartialChatSummary {
            title: Some(title.to_owned()),
            ..PartialChatSummary::default()
        },
    })
}

fn owner_name(owner: &DataOwner) -> String {
    match owner {
        DataOwner::Session(uri) => uri.as_str().to_owned(),
        DataOwner::Chat(uri) => uri.as_str().to_owned(),
    }
}

fn log_refusal(session: &SessionUri, chat: &ChatUri, outcome: Result<u64, DispatchError>) {
    if let Err(error) = outcome {
        tracing::warn!(session = session.as_str(), chat = chat.as_str(), %error, "sessionTitle: a title action was refused");
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
