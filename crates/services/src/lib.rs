//! The services contributions depend on: injectable traits and their default implementations.
//!
//! The central decision: **a contribution reaches the host only through a trait object of this
//! crate** (`Arc<dyn TitleController>`, `Arc<dyn SessionDataStore>`, …), resolved from the
//! dispatcher's typed `ServiceRegistry` when the contribution is constructed. The contribution
//! context never carries services and the host bridge has two members; collaborators that
//! would otherwise grow them are services here. Every trait is object-safe and `Send + Sync`;
//! methods that do I/O return a [`BoxFuture`](futures::future::BoxFuture), the others are
//! synchronous (the incoming-request gate is synchronous, so what it reads must be too).
//!
//! This crate is the contract: traits, plain data and the defaults that need no I/O crate. It
//! never reaches hyper, rustls, gix, rusqlite or tokio's `net`/`process` (`cargo xtask lint`
//! checks it); the implementations over the session database live in
//! `agenthost-services-store`, those over git and GitHub in `agenthost-services-git`.
//!
//! This crate knows nothing of the dispatcher (both are layer 3): the registry is a type map of
//! `Arc<dyn Trait>`, so registering a service is `registry.insert::<dyn Trait>(arc)` in the
//! composition root. The crate README shows the code.
//!
//! | Service | Default | Used by |
//! |---|---|---|
//! | [`TitleController`] | [`DefaultTitleController`] (seed from the first message, keep it unless renamed; [`TitleGenerator`] is the refinement hook) | `localCommand`, `sessionTitle` |
//! | [`LocalCommands`] | [`DefaultLocalCommands`] (`/rename <title>` only) | `localCommand` |
//! | [`TurnTracker`] | [`DefaultTurnTracker`] (bounded, `tracing`) | `queueDrain`, `sessionInputNeeded` |
//! | [`ToolCallTracker`] | [`DefaultToolCallTracker`] (bounded, `tracing`) | `sessionInputNeeded` |
//! | [`ProviderLocator`] | [`DefaultProviderLocator`] (host-filled map, then the URI scheme); [`StateProviderLocator`] (the provider a session's state names, if the host runs it) | `queueDrain` |
//! | [`TelemetryReporter`] | [`TracingTelemetry`] | `queueDrain`, `localCommand` |
//! | [`Configuration`] | [`InMemoryConfiguration`] (seeded by the host); [`HostConfiguration`] (its values, working directories from host state) | `markdownPlanRichLinks`, `artifactTools`, `unattendedPolicy` |
//! | [`HostState`] | [`StateHostState`] over `agenthost_state::StateManager` | `turnAdmission`, `queueDrain`, `sessionInputNeeded`, `markUnread`, … |
//! | [`ServerDispatch`] | [`StateServerDispatch`] over `agenthost_state::StateManager` | every contribution that changes state |
//! | [`SubscriptionTracker`] | [`LiveSubscriptions`] (reported by the server) | `unattendedPolicy` |
//! | [`ClientActionIntake`] | [`ClientActionQueue`] (served by the host's client-action path) | `unattendedPolicy` |
//! | [`SessionDataStore`] | `agenthost_services_store::StoreSessionData` over `agenthost_store::Store` | `turnDelegation`, `persistedTurnUsage`, `sessionTitle`, `chatDraft`, `chatConfig`, `sessionFlags`, `githubReferences`, `localCommand` |
//! | [`FileService`] | [`LocalFiles`] (bounded `file:` reads) | `chatSurface` |
//! | [`GitState`] | `agenthost_services_git::GitHubGitState` (remote and branch via `agenthost-checkpoint`, the pull request via GitHub's REST API; degrades to remote + branch) | `githubReferences` |
//! | [`CheckpointLedger`](agenthost_checkpoint_api::CheckpointLedger) | `agenthost_services_store::StoreLedger` over `agenthost_store::Store` (the refs survive a restart; `agenthost_checkpoint_api::MemoryLedger` without a database) | the host's `GitCheckpointService` |
//! | [`ChangesetService`] | [`CheckpointChangesets`] (changeset channels computed from the checkpoints, published into the state manager) | `checkpointAndChangeset`, the session service |
//! | [`CheckpointService`] | `agenthost_checkpoint_api::GitCheckpointService` (re-exported trait) | `checkpointAndChangeset` |
//! | [`AuditLog`] | `agenthost_services_store::StoreAuditLog` (the session database's `audit` table, written in order off the calling thread) | `auditLog`, the server's rollback command |
//! | [`WorktreeIsolation`] | `agenthost_services_git::GitWorktrees` (linked worktrees through `agenthost-checkpoint`, recorded as session metadata) | `worktreeAnnouncement` (the live announcement and its restore), the session service (creation, deletion) |
//!
//! # Bounded state
//!
//! Default implementations that keep state in memory keep it bounded: a tracker entry is removed
//! when its turn or tool call completes or its chat is cleared, and each tracker holds at most a
//! configured number of entries (the oldest is dropped, with a warning, past it).
//!
//! # The `fakes` feature
//!
//! `fakes` adds the [`fakes`] module (off by default): one recording fake per trait. Each
//! records every call, in order, as a value of its `…Call` enum, and lets a test script the
//! answers. Contribution crates enable it from their dev-dependencies:
//!
//! ```toml
//! [dev-dependencies]
//! agenthost-services = { workspace = true, features = ["fakes"] }
//! ```
#![deny(missing_docs)]

mod audit;
pub mod bounded;
mod changesets;
pub mod checkpoint_commands;
#[cfg(feature = "fakes")]
mod checkpoint_fake;
mod config;
mod files;
mod git_state;
mod host;
mod intake;
mod local_commands;
mod notify;
pub mod paging;
pub mod periodic;
pub mod prices;
mod provider;
pub mod resources;
mod resume;
pub mod sandbox;
mod session_data;
pub mod spend;
mod subscriptions;
mod telemetry;
mod title;
mod tool_calls;
mod turn_stop;
mod turns;
mod worktrees;
mod write_queue;

#[cfg(feature = "fakes")]
pub mod fakes;

/// The checkpoint service contributions capture through (re-exported from `agenthost-checkpoint-api`).
pub use agenthost_checkpoint_api::{CheckpointError, CheckpointService, Worktree};
pub use audit::{AuditLog, audit_entry};
pub use changesets::{
    ChangesetError, ChangesetService, CheckpointChangesets, blob_uri,
    capture_baseline_in_background, changeset_catalog, changeset_file,
};
pub use config::{
    Configuration, HostConfiguration, InMemoryConfiguration, session_config_with,
    string_config_property,
};
pub use files::{BoundedRead, FileError, FileService, LocalFiles};
pub use git_state::{GitState, GitStateError, PullRequest, RepositoryReference};
pub use host::{DispatchError, HostState, ServerDispatch, StateHostState, StateServerDispatch};
pub use intake::{
    ClientActionIntake, ClientActionQueue, ClientActionRequest, ClientActionRequests,
    client_action_queue,
};
pub use local_commands::{
    DefaultLocalCommands, LocalCommand, LocalCommandError, LocalCommands, MAX_RENAME_CHARS,
};
pub use notify::{Notification, NotificationKind, NotificationSettings, Notifier};
pub use provider::{
    DefaultProviderLocator, ProviderLocator, StateProviderLocator, advertise_side_chats,
};
pub use resume::ResumeHandles;
pub use session_data::{
    CREATION_META_KEY, DataError, DataFuture, DataOwner, Flags, MAX_CREATION_META_BYTES,
    SESSION_CONFIG_KEY, SessionDataStore, StoredTitle, TitleSource, TurnSpend,
};
pub use subscriptions::{
    ListenerId, LiveSubscriptions, SubscriptionChange, SubscriptionListener, SubscriptionTracker,
};
pub use telemetry::{MessageSource, TelemetryReporter, TracingTelemetry, UserMessageSent};
pub use title::{
    DefaultTitleController, NoTitleGenerator, TitleConfig, TitleController, TitleGenerator,
    TitleKind, TitleState, seed_title,
};
pub use tool_calls::{
    DefaultToolCallTracker, ToolCallBlock, ToolCallOutcome, ToolCallPhase, ToolCallSnapshot,
    ToolCallTracker,
};
pub use turn_stop::{
    TurnStopQueue, TurnStopRequest, TurnStopRequests, TurnStopper, turn_stop_queue,
};
pub use turns::{
    DefaultTurnTracker, TrackerConfig, TurnBlock, TurnCompletion, TurnSnapshot, TurnStage,
    TurnTracker,
};
pub use worktrees::{
    ANNOUNCEMENT_PART_ID, ISOLATION_KEY, ISOLATION_NONE, ISOLATION_WORKTREE, IsolatedSession,
    IsolationError, IsolationRequestError, WORKTREE_META_KEY, WorktreeIsolation, announcement_part,
    isolate_as_requested, isolation_config_property, show_isolation, wants_worktree,
    with_announcement,
};
pub use write_queue::{PendingWork, Write, WriteQueue, flush_pending_writes};

/// Now, as the ISO 8601 UTC timestamp with milliseconds AHP state carries
/// (`2026-03-01T10:00:00.000Z`).
pub fn now_iso() -> String {
    format!("{:.3}", jiff::Timestamp::now())
}
