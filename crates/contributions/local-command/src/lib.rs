//! The `localCommand` contribution (order 50, `onIncomingRequest`).
//!
//! The central decision: **a host command is answered inside the admission gate, before any
//! guard, and the gate then says `handled`** — the turn starter stops and no provider ever sees
//! the message. Order 50 puts it ahead of `turnAdmission` (100), so `/rename` works in archived
//! and read-only chats.
//!
//! Only user-typed messages are offered to the [`LocalCommands`] service (agent-, tool- and
//! host-authored messages never trigger commands). For a recognised command this contribution
//! completes the already started turn itself with server actions, through [`ServerDispatch`]:
//!
//! - `/rename <title>`: the [`TitleController`] records the title as the user's
//!   ([`TitleKind::User`], marked renamed, so no generated title replaces it); then
//!   `session/chatUpdated` on the session (the chat's catalog entry) and, for the session's
//!   default chat, `session/titleChanged` on the session (marked renamed too) — actions every
//!   client's reducer applies (nothing is dispatched on the chat channel: the canonical chat
//!   reducer has no title action). Each title is persisted as the user's through the
//!   [`SessionDataStore`] (queued; [`LocalCommandHandler::flush`] waits), so it survives a
//!   restart;
//! - an invalid command (`/rename` without a title, or too long) changes nothing;
//!
//! and in both cases a markdown answer saying what happened and `chat/turnComplete`.
//! The turn's end reason is `localCommand`; reporting `onTurnEnd` is the orchestrator's call
//! site, not a contribution's.
#![deny(missing_docs)]

use std::sync::Arc;

use agenthost_dispatcher::{
    ChatContribution, Contribution, ContributionContext, Disposition, Hook, HookResult, HookSet,
    IncomingRequest, MissingService, ServiceRegistry,
};
use agenthost_protocol::StateAction;
use agenthost_protocol::actions::{
    ChatResponsePartAction, PartialChatSummary, SessionChatUpdatedAction, SessionTitleChangedAction,
};
use agenthost_protocol::ahp_types::state::{MarkdownResponsePart, MessageKind, ResponsePart};
use agenthost_services::{
    DataOwner, DispatchError, HostState, LocalCommand, LocalCommands, ServerDispatch,
    SessionDataStore, TelemetryReporter, TitleController, TitleKind, TitleSource, WriteQueue,
};

/// The id of the markdown part that carries a command's answer.
pub const ANSWER_PART_ID: &str = "localCommand";

/// The `localCommand` contribution. Register it with
/// `dispatcher.register::<LocalCommandHandler>()`; it needs `dyn LocalCommands`,
/// `dyn TitleController`, `dyn HostState`, `dyn ServerDispatch`, `dyn TelemetryReporter` and
/// `dyn SessionDataStore`, and a tokio runtime for the title writes.
pub struct LocalCommandHandler {
    commands: Arc<dyn LocalCommands>,
    titles: Arc<dyn TitleController>,
    host: Arc<dyn HostState>,
    dispatch: Arc<dyn ServerDispatch>,
    telemetry: Arc<dyn TelemetryReporter>,
    data: Arc<dyn SessionDataStore>,
    writes: Arc<WriteQueue>,
}

impl std::fmt::Debug for LocalCommandHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalCommandHandler")
            .finish_non_exhaustive()
    }
}

/// The services [`LocalCommandHandler`] works with.
#[derive(Clone)]
pub struct LocalCommandServices {
    /// Recognises commands in a message.
    pub commands: Arc<dyn LocalCommands>,
    /// Records the user's titles.
    pub titles: Arc<dyn TitleController>,
    /// Reads the session's default chat.
    pub host: Arc<dyn HostState>,
    /// Dispatches the renames, the answer and the turn's completion.
    pub dispatch: Arc<dyn ServerDispatch>,
    /// Reports each command run.
    pub telemetry: Arc<dyn TelemetryReporter>,
    /// Persists the titles `/rename` sets.
    pub data: Arc<dyn SessionDataStore>,
}

impl std::fmt::Debug for LocalCommandServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalCommandServices")
            .finish_non_exhaustive()
    }
}

impl LocalCommandHandler {
    /// The contribution over `services`.
    pub fn new(services: LocalCommandServices) -> Self {
        let LocalCommandServices {
            commands,
            titles,
            host,
            dispatch,
            telemetry,
            data,
        } = services;
        Self {
            commands,
            titles,
            host,
            dispatch,
            telemetry,
            data,
            writes: Arc::new(WriteQueue::new(<Self as Contribution>::ID)),
        }
    }

    /// Resolves its services from `services`.
    pub fn from_services(services: &ServiceRegistry) -> Result<Self, MissingService> {
        Ok(Self::new(LocalCommandServices {
            commands: services.get::<dyn LocalCommands>()?,
            titles: services.get::<dyn TitleController>()?,
            host: services.get::<dyn HostState>()?,
            dispatch: services.get::<dyn ServerDispatch>()?,
            telemetry: services.get::<dyn TelemetryReporter>()?,
            data: services.get::<dyn SessionDataStore>()?,
        }))
    }

    /// Waits until every title write queued so far has finished (or failed and been logged).
    pub async fn flush(&self) {
        self.writes.flush().await;
    }

    /// Queues the write of the user's title for `owner`; a failure is logged.
    fn persist(&self, owner: DataOwner, title: &str) {
        let data = Arc::clone(&self.data);
        let title = title.to_owned();
        self.writes.push(Box::pin(async move {
            let named = match &owner {
                DataOwner::Session(uri) => uri.to_string(),
                DataOwner::Chat(uri) => uri.to_string(),
            };
            if let Err(error) = data.set_title(owner, &title, TitleSource::User).await {
                tracing::warn!(owner = named, %error, "`/rename` could not persist the title");
            }
        }));
    }

    /// Runs `/rename`; returns the answer to show.
    fn rename(&self, request: &IncomingRequest, title: &str) -> String {
        let session = request.session.as_str();
        let chat = request.chat.as_str();
        let title = self
            .titles
            .set_title(session, chat, title, TitleKind::User)
            .unwrap_or_else(|| title.to_owned());
        let catalog = StateAction::SessionChatUpdated(SessionChatUpdatedAction {
            chat: chat.to_owned(),
            changes: PartialChatSummary {
                title: Some(title.clone()),
                ..PartialChatSummary::default()
            },
        });
        if let Err(error) = self.dispatch.dispatch(session, catalog) {
            tracing::warn!(session, chat, %error, "`/rename` could not rename the chat");
            return format!("Could not rename this chat: {}.", error.reason);
        }
        self.titles
            .mark_renamed(session, Some(chat), TitleKind::User);
        self.persist(DataOwner::Chat(request.chat.clone()), &title);
        let is_default_chat = self
            .host
            .session(session)
            .and_then(|s| s.default_chat)
            .is_some_and(|default| default == chat);
        if is_default_chat {
            let renamed = self.dispatch.dispatch(session, title_changed(&title));
            if renamed.is_ok() {
                self.persist(DataOwner::Session(request.session.clone()), &title);
            }
            log_refusal(session, renamed);
            self.titles.mark_renamed(session, None, TitleKind::User);
        }
        format!("Renamed this chat to “{title}”.")
    }

    /// Ends the turn the command started: the answer, then `chat/turnComplete`.
    fn complete_turn(&self, request: &IncomingRequest, answer: String) {
        let channel = request.chat.as_str();
        let answer = StateAction::ChatResponsePart(ChatResponsePartAction {
            turn_id: request.turn_id.clone(),
            part: ResponsePart::Markdown(MarkdownResponsePart {
                id: ANSWER_PART_ID.to_owned(),
                content: answer,
            }),
            meta: None,
        });
        log_refusal(channel, self.dispatch.dispatch(channel, answer));
        // The host answered at once: no agent time to report.
        let complete = agenthost_reducers::server_actions::turn_complete(&request.turn_id, 0);
        log_refusal(channel, self.dispatch.dispatch(channel, complete));
    }
}

impl Contribution for LocalCommandHandler {
    const ID: &'static str = "localCommand";
    const ORDER: i32 = 50;
    const HOOKS: HookSet = HookSet::of(&[Hook::IncomingRequest]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Self::from_services(services)
    }
}

impl ChatContribution for LocalCommandHandler {
    fn on_incoming_request(&self, request: &IncomingRequest) -> HookResult<Option<Disposition>> {
        if request.message.origin.kind != MessageKind::User {
            return Ok(None);
        }
        let Some(command) = self.commands.try_handle(&request.message.text) else {
            return Ok(None);
        };
        let (name, answer) = match command {
            LocalCommand::Rename { title } => ("rename", self.rename(request, &title)),
            LocalCommand::Invalid { command, error } => {
                (command, format!("`/{command}` did nothing: {error}."))
            }
            // A command the service knows and this host does not run: still never the agent's.
            _ => (
                "unknown",
                "This host command is not supported here.".to_owned(),
            ),
        };
        self.telemetry
            .local_command(&request.session, &request.chat, name);
        self.complete_turn(request, answer);
        Ok(Some(Disposition::Handled))
    }
}

fn title_changed(title: &str) -> StateAction {
    StateAction::SessionTitleChanged(SessionTitleChangedAction {
        title: title.to_owned(),
    })
}

fn log_refusal(channel: &str, outcome: Result<u64, DispatchError>) {
    if let Err(error) = outcome {
        tracing::warn!(channel, %error, "a local command's action was refused");
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
