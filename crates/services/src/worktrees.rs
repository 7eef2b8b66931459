//! [`WorktreeIsolation`]: host-owned isolated worktrees — creation for a session that asks for
//! one, the announcement of where the agent works, and removal with the session.
//!
//! A session asks for isolation with the session configuration value
//! [`ISOLATION_KEY`]` = "worktree"` at `createSession` (the property is
//! [`isolation_config_property`]; `"none"` is the default). For each git repository among the
//! requested working directories the host creates a linked worktree next to it
//! (`<repo-root>.worktrees/<name>`, on branch `agents/<name>` from `HEAD`; see
//! `agenthost_checkpoint_api::create_worktree`) and the session works there instead: its working
//! directories are the same paths inside the worktree. The user's checkout is never written.
//!
//! The record ([`IsolatedSession`]) is session metadata ([`WORKTREE_META_KEY`]), so it survives a
//! restart and goes away with the session. Its announcement — a markdown part with the id
//! [`ANNOUNCEMENT_PART_ID`] — is shown once live, at the start of the default chat's first turn
//! ([`WorktreeIsolation::take_live_announcement`]), and re-inserted there when that chat's
//! history is restored ([`WorktreeIsolation::restore_announcement`], the `worktreeAnnouncement`
//! contribution), because agents do not keep host-authored notes in their own history.

use std::path::PathBuf;

use agenthost_checkpoint_api::Worktree;
use agenthost_protocol::ahp_types::state::{
    MarkdownResponsePart, ResponsePart, SessionConfigPropertySchema, SessionConfigState, Turn,
};
use agenthost_protocol::{ChatUri, SessionUri};
use futures::future::BoxFuture;
use serde_json::Value;

use crate::session_data::DataError;

/// The session configuration key that asks for isolation: `"none"` (default) or `"worktree"`.
pub const ISOLATION_KEY: &str = "isolation";

/// [`ISOLATION_KEY`]'s value for a session that works in the folders it was given.
pub const ISOLATION_NONE: &str = "none";

/// [`ISOLATION_KEY`]'s value for a session that works in isolated worktrees.
pub const ISOLATION_WORKTREE: &str = "worktree";

/// Session metadata key of a session's [`IsolatedSession`] record (JSON).
pub const WORKTREE_META_KEY: &str = "worktree";

/// The id of the announcement's markdown response part (one per chat history, so re-inserting
/// it is idempotent).
pub const ANNOUNCEMENT_PART_ID: &str = "worktree-announcement";

/// The `isolation` property of the session configuration schema: chosen at `createSession`,
/// fixed for the session's life (not session-mutable).
pub fn isolation_config_property() -> SessionConfigPropertySchema {
    crate::string_config_property(
        "Isolation",
        "Where the agent works. `none`: in the working directories the session was created \
         with. `worktree`: in a new linked git worktree of each repository \
         (`<repo>.worktrees/<name>` on branch `agents/<name>`, from HEAD), so the user's \
         checkout is never touched; chosen at createSession, removed with the session \
         (a branch with commits of its own is kept).",
        ISOLATION_NONE,
        &[
            (ISOLATION_NONE, "None"),
            (ISOLATION_WORKTREE, "Git worktree"),
        ],
        false,
    )
}

/// Whether a `createSession` configuration value asks for a worktree. `None` and `"none"` do
/// not; anything but the two known strings is an error naming the value.
pub fn wants_worktree(value: Option<&Value>) -> Result<bool, IsolationError> {
    match value {
        None => Ok(false),
        Some(Value::String(s)) if s == ISOLATION_NONE => Ok(false),
        Some(Value::String(s)) if s == ISOLATION_WORKTREE => Ok(true),
        Some(other) => Err(IsolationError::UnknownMode(other.to_string())),
    }
}

/// Why a session could not be isolated.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IsolationError {
    /// The configuration value is neither `"none"` nor `"worktree"`.
    #[error("unknown isolation {0}: expected \"none\" or \"worktree\"")]
    UnknownMode(String),
    /// Isolation was asked for without a working directory to isolate.
    #[error("isolation \"worktree\" needs a working directory inside a git repository")]
    NoDirectory,
    /// A working directory is not a local path.
    #[error("the working directory {0} is not a local path")]
    NotLocal(String),
    /// A working directory is not inside a git work tree (or the repository has no commit).
    #[error("cannot isolate {directory} in a worktree: {reason}")]
    Refused {
        /// The working directory.
        directory: String,
        /// Why (from the checkpoint crate).
        reason: String,
    },
    /// Recording the isolation failed.
    #[error("cannot record the session's worktree: {0}")]
    Record(#[from] DataError),
}

/// A session's isolation record.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct IsolatedSession {
    /// One worktree per repository, in the order of the working directories.
    pub worktrees: Vec<Worktree>,
    /// The working directories the session was created with (`file:` URIs).
    pub requested: Vec<String>,
    /// The working directories it works in (`file:` URIs inside the worktrees), same order.
    pub directories: Vec<String>,
    /// Whether the live announcement was shown (at the default chat's first turn).
    #[serde(default)]
    pub announced: bool,
}

impl IsolatedSession {
    /// The worktrees' folders that exist, canonical.
    pub fn existing_folders(&self) -> Vec<PathBuf> {
        self.worktrees
            .iter()
            .filter_map(|worktree| worktree.path.canonicalize().ok())
            .collect()
    }

    /// The announcement: which worktree and branch the agent works in, and that the user's
    /// checkout is untouched. Markdown.
    pub fn announcement(&self) -> String {
        let mut text = String::from("This session works in an isolated git worktree");
        if self.worktrees.len() > 1 {
            text.push('s');
        }
        text.push_str(":\n");
        for worktree in &self.worktrees {
            let base: String = worktree.base.chars().take(12).collect();
            text.push_str(&format!(
                "\n- `{}` on branch `{}` (from `{base}`), isolated from `{}`",
                worktree.path.display(),
                worktree.branch,
                worktree.repo_root.display()
            ));
        }
        text.push_str(
            "\n\nChanges stay on the branch; your checkout is not touched. The worktree is \
             removed when the session is deleted (a branch with commits is kept).",
        );
        text
    }
}

/// Why a session could not be isolated as its `config.isolation` asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IsolationRequestError {
    /// The request cannot be met: a value that is not `none` or `worktree`, a host without
    /// isolation, a folder that cannot be isolated. The message names `config.isolation`.
    #[error("{0}")]
    Refused(String),
    /// The worktrees were made but their record could not be stored.
    #[error("{0}")]
    Record(String),
}

/// The worktrees of a session being created that asked for them with
/// `config.isolation = "worktree"` (its working directories are the worktree paths from then
/// on); `None` when it did not ask. `worktrees` is the host's isolation service, if it has one.
pub async fn isolate_as_requested(
    worktrees: Option<&dyn WorktreeIsolation>,
    session: &SessionUri,
    config: Option<&serde_json::Map<String, Value>>,
    directories: &[String],
) -> Result<Option<IsolatedSession>, IsolationRequestError> {
    let refused =
        |why: String| IsolationRequestError::Refused(format!("config.{ISOLATION_KEY}: {why}"));
    let requested = wants_worktree(config.and_then(|c| c.get(ISOLATION_KEY)))
        .map_err(|e| refused(e.to_string()))?;
    if !requested {
        return Ok(None);
    }
    let worktrees = worktrees
        .ok_or_else(|| refused("this host cannot isolate sessions in worktrees".into()))?;
    match worktrees.isolate(session, directories).await {
        Ok(record) => Ok(Some(record)),
        Err(error @ IsolationError::Record(_)) => {
            Err(IsolationRequestError::Record(error.to_string()))
        }
        Err(error) => Err(refused(error.to_string())),
    }
}

/// A restored session's configuration shows the isolation it was created with (it is fixed at
/// creation; `isolated` says whether a worktree record exists), when the schema has the
/// property.
pub fn show_isolation(config: &mut SessionConfigState, isolated: bool) {
    if config.schema.properties.contains_key(ISOLATION_KEY) {
        let mode = if isolated {
            ISOLATION_WORKTREE
        } else {
            ISOLATION_NONE
        };
        config
            .values
            .insert(ISOLATION_KEY.to_owned(), mode.to_owned().into());
    }
}

/// Host-owned isolated worktrees: creation, the announcement, removal with the session.
pub trait WorktreeIsolation: Send + Sync {
    /// Creates the worktrees of a session being created in `directories` (`file:` URIs) and
    /// returns its record (not yet stored: the session is not in the store yet). Nothing is
    /// left behind on an error.
    fn isolate<'a>(
        &'a self,
        session: &'a SessionUri,
        directories: &'a [String],
    ) -> BoxFuture<'a, Result<IsolatedSession, IsolationError>>;

    /// Stores `record` for `session` (after the session itself was stored).
    fn record<'a>(
        &'a self,
        session: &'a SessionUri,
        record: &'a IsolatedSession,
    ) -> BoxFuture<'a, Result<(), IsolationError>>;

    /// The session's record, if it is isolated (`None` too when the record cannot be read; the
    /// failure is logged).
    fn isolation<'a>(&'a self, session: &'a SessionUri) -> BoxFuture<'a, Option<IsolatedSession>>;

    /// The live announcement of `chat`'s turn about to be sent: `Some` once per isolated
    /// session, for its default chat, marked shown in the record.
    fn take_live_announcement<'a>(
        &'a self,
        session: &'a SessionUri,
        chat: &'a ChatUri,
    ) -> BoxFuture<'a, Option<String>>;

    /// `turns` of a restored chat with the announcement at the start of the first turn — for
    /// the default chat of an isolated session whose first turn does not have it yet; other
    /// chats and sessions pass through unchanged.
    fn restore_announcement<'a>(
        &'a self,
        session: &'a SessionUri,
        chat: &'a ChatUri,
        turns: Vec<Turn>,
    ) -> BoxFuture<'a, Vec<Turn>>;

    /// Removes the worktrees of `record` (a session being deleted). Branches with commits of
    /// their own are kept; failures are logged.
    fn release<'a>(&'a self, record: &'a IsolatedSession) -> BoxFuture<'a, ()>;
}

/// `turns` with the announcement `text` at the start of the first turn, unless it is there.
pub fn with_announcement(mut turns: Vec<Turn>, text: &str) -> Vec<Turn> {
    let Some(first) = turns.first_mut() else {
        return turns;
    };
    let present = first.response_parts.iter().any(|part| {
        matches!(part, ResponsePart::Markdown(markdown) if markdown.id == ANNOUNCEMENT_PART_ID)
    });
    if !present {
        first.response_parts.insert(0, announcement_part(text));
    }
    turns
}

/// The announcement as a response part.
pub fn announcement_part(text: &str) -> ResponsePart {
    ResponsePart::Markdown(MarkdownResponsePart {
        id: ANNOUNCEMENT_PART_ID.to_owned(),
        content: text.to_owned(),
    })
}

#[cfg(feature = "fakes")]
pub(crate) mod fake {
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use super::*;

    /// A call to [`FakeWorktrees`].
    #[derive(Debug, Clone, PartialEq)]
    pub enum WorktreeCall {
        /// `isolate(session, directories)`.
        Isolate(SessionUri, Vec<String>),
        /// `record(session, record)`.
        Record(SessionUri, IsolatedSession),
        /// `isolation(session)`.
        Isolation(SessionUri),
        /// `take_live_announcement(session, chat)`.
        TakeLiveAnnouncement(SessionUri, ChatUri),
        /// `restore_announcement(session, chat, turns.len())`.
        RestoreAnnouncement(SessionUri, ChatUri, usize),
        /// `release(record)`.
        Release(IsolatedSession),
    }

    /// A recording [`WorktreeIsolation`] (feature `fakes`) that creates nothing: `isolate`
    /// answers the scripted record (or refuses), records live in memory, and the announcement
    /// logic is the real one ([`with_announcement`], shown once for the default chat).
    #[derive(Debug, Default)]
    pub struct FakeWorktrees {
        calls: Mutex<Vec<WorktreeCall>>,
        isolate_answer: Mutex<Option<IsolatedSession>>,
        records: Mutex<BTreeMap<String, IsolatedSession>>,
    }

    fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        mutex.lock().unwrap_or_else(|e| e.into_inner())
    }

    impl FakeWorktrees {
        /// Every call so far, in order.
        pub fn calls(&self) -> Vec<WorktreeCall> {
            lock(&self.calls).clone()
        }

        /// What `isolate` answers from now on (`None`: a refusal).
        pub fn answer_isolate(&self, record: Option<IsolatedSession>) {
            *lock(&self.isolate_answer) = record;
        }

        /// Stores `record` for `session` as if it had been recorded.
        pub fn insert(&self, session: &SessionUri, record: IsolatedSession) {
            lock(&self.records).insert(session.to_string(), record);
        }

        fn call(&self, call: WorktreeCall) {
            lock(&self.calls).push(call);
        }
    }

    impl WorktreeIsolation for FakeWorktrees {
        fn isolate<'a>(
            &'a self,
            session: &'a SessionUri,
            directories: &'a [String],
        ) -> BoxFuture<'a, Result<IsolatedSession, IsolationError>> {
            self.call(WorktreeCall::Isolate(session.clone(), directories.to_vec()));
            let answer = lock(&self.isolate_answer).clone();
            Box::pin(async move {
                answer.ok_or_else(|| IsolationError::Refused {
                    directory: directories.first().cloned().unwrap_or_default(),
                    reason: "scripted refusal".to_owned(),
                })
            })
        }

        fn record<'a>(
            &'a self,
            session: &'a SessionUri,
            record: &'a IsolatedSession,
        ) -> BoxFuture<'a, Result<(), IsolationError>> {
            self.call(WorktreeCall::Record(session.clone(), record.clone()));
            self.insert(session, record.clone());
            Box::pin(async { Ok(()) })
        }

        fn isolation<'a>(
            &'a self,
            session: &'a SessionUri,
        ) -> BoxFuture<'a, Option<IsolatedSession>> {
            self.call(WorktreeCall::Isolation(session.clone()));
            let record = lock(&self.records).get(session.as_str()).cloned();
            Box::pin(async move { record })
        }

        fn take_live_announcement<'a>(
            &'a self,
            session: &'a SessionUri,
            chat: &'a ChatUri,
        ) -> BoxFuture<'a, Option<String>> {
            self.call(WorktreeCall::TakeLiveAnnouncement(
                session.clone(),
                chat.clone(),
            ));
            let text = if *chat == ChatUri::default_for(session) {
                lock(&self.records)
                    .get_mut(session.as_str())
                    .filter(|record| !record.announced)
                    .map(|record| {
                        record.announced = true;
                        record.announcement()
                    })
            } else {
                None
            };
            Box::pin(async move { text })
        }

        fn restore_announcement<'a>(
            &'a self,
            session: &'a SessionUri,
            chat: &'a ChatUri,
            turns: Vec<Turn>,
        ) -> BoxFuture<'a, Vec<Turn>> {
            self.call(WorktreeCall::RestoreAnnouncement(
                session.clone(),
                chat.clone(),
                turns.len(),
            ));
            let text = lock(&self.records)
                .get(session.as_str())
                .map(IsolatedSession::announcement);
            Box::pin(async move {
                match text {
                    Some(text) if *chat == ChatUri::default_for(session) => {
                        with_announcement(turns, &text)
                    }
                    _ => turns,
                }
            })
        }

        fn release<'a>(&'a self, record: &'a IsolatedSession) -> BoxFuture<'a, ()> {
            self.call(WorktreeCall::Release(record.clone()));
            Box::pin(async {})
        }
    }
}
