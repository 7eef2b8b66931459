//! The `turnAdmission` contribution (order 100, `onIncomingRequest`).
//!
//! The central decision: **admission is one synchronous read of current host state, and what
//! cannot be read is refused.** A turn is rejected at the `validation` stage when its session is
//! archived, its chat is archived, or its chat is read-only; a request whose chat or session is
//! not in host state fails the gate (the dispatcher turns that into an `internalError` reject —
//! the gate fails closed). Nothing is written: the turn starter dispatches the `chat/error` and
//! reports `onTurnEnd(rejected)`.
//!
//! Where AHP 1.0 keeps the flags it reads:
//!
//! | Refusal | State |
//! |---|---|
//! | session archived → [`ARCHIVED`] | `SessionState.status` has `SessionStatus::IsArchived` |
//! | chat archived → [`ARCHIVED`] | `ChatState.status` has `SessionStatus::IsArchived` |
//! | chat read-only → [`READ_ONLY`] | `ChatState.interactivity` is `ChatInteractivity::ReadOnly` |
//!
//! A turn whose message attaches a `file:` resource outside the host's roots
//! ([`Configuration::roots`]) is refused with [`OUTSIDE_ROOTS`] — the path resolved through
//! symlinks (for a file that does not exist yet, through its parent), so a link inside a root
//! that points out of it is refused too. Agents read attached files (a selection's text goes to
//! the model), so this is the gate that keeps a client from reading any file the host can. Other
//! schemes pass: nothing on the host reads them.
//!
//! A session's **default** chat is admitted despite a stale chat-archive flag once the session
//! is no longer archived (archiving a session may have marked its default chat too); an archived
//! peer chat stays refused. `localCommand` (order 50) runs first, so `/rename` still works here.
#![deny(missing_docs)]

use std::path::PathBuf;
use std::sync::Arc;

use agenthost_dispatcher::{
    ChatContribution, Contribution, ContributionContext, Disposition, Hook, HookResult, HookSet,
    IncomingRequest, MissingService, RejectStage, ServiceRegistry,
};
use agenthost_protocol::ahp_types::state::{
    ChatInteractivity, ChatState, ErrorInfo, SessionState, SessionStatus,
};
use agenthost_protocol::error_info::error_info;
use agenthost_services::sandbox::{Sandbox, message_paths};
use agenthost_services::{Configuration, HostState};

/// Error type of a turn refused because its session or chat is archived.
pub const ARCHIVED: &str = "archived";
/// Error type of a turn refused because its chat is read-only.
pub const READ_ONLY: &str = "readOnly";
/// Error type of a turn refused because it attaches a file outside the host's roots.
pub const OUTSIDE_ROOTS: &str = "attachmentOutsideRoots";

/// The gate could not read what it must check. The dispatcher logs it and rejects the turn with
/// `internalError` at the `validation` stage.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdmissionError {
    /// The chat is not in host state (it was disposed while the request was on its way).
    #[error("chat {0} is not in host state: cannot check whether it accepts turns")]
    UnknownChat(String),
    /// The owning session is not in host state.
    #[error("session {0} is not in host state: cannot check whether it accepts turns")]
    UnknownSession(String),
}

/// The `turnAdmission` contribution. Register it with
/// `dispatcher.register::<TurnAdmission>()`; it needs `dyn HostState` and `dyn Configuration`
/// in the registry.
pub struct TurnAdmission {
    host: Arc<dyn HostState>,
    config: Arc<dyn Configuration>,
}

impl std::fmt::Debug for TurnAdmission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnAdmission").finish_non_exhaustive()
    }
}

impl TurnAdmission {
    /// Reads host state through `host` and the roots through `config`.
    pub fn new(host: Arc<dyn HostState>, config: Arc<dyn Configuration>) -> Self {
        Self { host, config }
    }

    /// Resolves `dyn HostState` and `dyn Configuration` from `services`.
    pub fn from_services(services: &ServiceRegistry) -> Result<Self, MissingService> {
        Ok(Self::new(
            services.get::<dyn HostState>()?,
            services.get::<dyn Configuration>()?,
        ))
    }
}

impl Contribution for TurnAdmission {
    const ID: &'static str = "turnAdmission";
    const ORDER: i32 = 100;
    const HOOKS: HookSet = HookSet::of(&[Hook::IncomingRequest]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Self::from_services(services)
    }
}

impl ChatContribution for TurnAdmission {
    fn on_incoming_request(&self, request: &IncomingRequest) -> HookResult<Option<Disposition>> {
        let chat = self
            .host
            .chat(&request.chat)
            .ok_or_else(|| AdmissionError::UnknownChat(request.chat.to_string()))?;
        let session = self
            .host
            .session(&request.session)
            .ok_or_else(|| AdmissionError::UnknownSession(request.session.to_string()))?;
        let error = refusal(&session, &request.chat, &chat).or_else(|| {
            self.config
                .roots()
                .and_then(|roots| attachment_outside(&request.message, &roots))
        });
        Ok(error.map(|error| Disposition::Reject {
            error,
            stage: RejectStage::Validation,
        }))
    }
}

/// The refusal of the first `file:` resource attachment of `message` that lies outside `roots`
/// (the sandbox's check, the one every client-supplied path goes through).
fn attachment_outside(
    message: &agenthost_protocol::ahp_types::state::Message,
    roots: &[PathBuf],
) -> Option<ErrorInfo> {
    let sandbox = Sandbox::new(roots.iter().cloned()).unwrap_or_default();
    message_paths(message).into_iter().find_map(|path| {
        sandbox
            .check(path.uri, path.used_as, &[])
            .err()
            .map(|refusal| {
                error_info(
                    OUTSIDE_ROOTS,
                    format!(
                        "The attachment {:?} is refused: {refusal}.",
                        path.label.unwrap_or_default()
                    ),
                )
            })
    })
}

/// Why `chat` (of `session`) refuses turns, if it does.
fn refusal(session: &SessionState, chat_uri: &str, chat: &ChatState) -> Option<ErrorInfo> {
    if is_archived(session.status) {
        return Some(error_info(
            ARCHIVED,
            "This session is archived. Unarchive it to send messages.",
        ));
    }
    let is_default = session.default_chat.as_deref() == Some(chat_uri);
    if is_archived(chat.status) && !is_default {
        return Some(error_info(
            ARCHIVED,
            "This chat is archived. Unarchive it to send messages.",
        ));
    }
    if chat.interactivity == Some(ChatInteractivity::ReadOnly) {
        return Some(error_info(READ_ONLY, "This chat is read-only."));
    }
    None
}

fn is_archived(status: u32) -> bool {
    SessionStatus::from_bits(status).contains(SessionStatus::IsArchived)
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
