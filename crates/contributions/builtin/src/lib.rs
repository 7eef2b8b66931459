//! The built-in contributions of agenthost, and the single place they are registered.
//!
//! The central decision: **there is exactly one registration site.**
//! [`register_builtin_contributions`] registers every built-in contribution, once, at host
//! start-up, in the registration order of the contribution reference (§10.1). The registration
//! index only breaks ties of equal `ORDER` within a hook, but keeping the list in that order keeps
//! the per-hook tables of §11 true (pinned by the ordering snapshot in this crate's tests).
//!
//! Each contribution lives in its own crate (`agenthost-contrib-<feature>`); this crate only
//! lists them. Services are resolved from the dispatcher's `ServiceRegistry`: fill it with the
//! services below before calling, or the registration fails naming the missing one.
//!
//! | # | id | Services it needs | Status |
//! |---|---|---|---|
//! | 1 | `localCommand` | `dyn LocalCommands`, `dyn TitleController`, `dyn HostState`, `dyn ServerDispatch`, `dyn TelemetryReporter`, `dyn SessionDataStore` | registered |
//! | 2 | `turnAdmission` | `dyn HostState`, `dyn Configuration` | registered |
//! | 3 | `turnDelegation` | `dyn SessionDataStore` | registered |
//! | 4 | `persistedTurnUsage` | `dyn SessionDataStore` | registered |
//! | 5 | `worktreeAnnouncement` | `dyn WorktreeIsolation` | registered |
//! | 6 | `checkpointAndChangeset` | `dyn CheckpointService`, `dyn ChangesetService`, `dyn Configuration` | registered |
//! | 7 | `queueDrain` | `dyn HostState`, `dyn ServerDispatch`, `dyn ProviderLocator`, `dyn TelemetryReporter`, `dyn TurnTracker` (and the dispatcher's own `HostAccess`) | registered |
//! | 8 | `sessionInputNeeded` | `dyn HostState`, `dyn ServerDispatch`, `dyn TurnTracker`, `dyn ToolCallTracker` | registered |
//! | 9 | `githubReferences` | `dyn HostState`, `dyn GitState`, `dyn SessionDataStore` | registered |
//! | 10 | `sessionTitle` | `dyn TitleController`, `dyn HostState`, `dyn ServerDispatch`, `dyn SessionDataStore` | registered |
//! | 11 | `markUnread` | `dyn HostState`, `dyn ServerDispatch` | registered |
//! | 12 | `chatDraft` | `dyn SessionDataStore` | registered |
//! | 13 | `chatConfig` | `dyn SessionDataStore`, `dyn HostState` | registered |
//! | 14 | `markdownPlanRichLinks` | `dyn Configuration` | registered |
//! | 15 | `artifactTools` | `dyn Configuration` | registered |
//! | 16 | `chatSurface` | `dyn HostState`, `dyn FileService` | registered |
//! | 17 | `sideChat` | `dyn HostState` | registered |
//! | 18 | `sessionFlags` | `dyn SessionDataStore`, `dyn HostState` | registered |
//! | 19 | `unattendedPolicy` | `dyn HostState`, `dyn Configuration`, `dyn SubscriptionTracker`, `dyn ClientActionIntake` | registered |
//! | 20 | `clientDeparture` | `dyn HostState`, `dyn Configuration`, `dyn SubscriptionTracker`, `dyn ClientActionIntake` | registered |
//! | 21 | `interruptedTurn` | `dyn SessionDataStore` | registered |
//! | 22 | `auditLog` | `dyn AuditLog` | registered |
//! | 23 | `remoteSessionOrigin` | `dyn SessionDataStore`, `dyn HostState` | registered |
//! | 24 | `sessionModes` | `dyn HostState`, `dyn ClientActionIntake` | registered |
#![deny(missing_docs)]

use agenthost_contrib_artifact_tools::ArtifactTools;
use agenthost_contrib_audit_log::AuditLogContribution;
use agenthost_contrib_chat_config::ChatConfig;
use agenthost_contrib_chat_draft::ChatDraft;
use agenthost_contrib_chat_surface::ChatSurface;
use agenthost_contrib_checkpoint_and_changeset::CheckpointAndChangeset;
use agenthost_contrib_client_departure::ClientDeparture;
use agenthost_contrib_github_references::GithubReferences;
use agenthost_contrib_interrupted_turn::InterruptedTurn;
use agenthost_contrib_local_command::LocalCommandHandler;
use agenthost_contrib_mark_unread::MarkUnread;
use agenthost_contrib_markdown_plan_rich_links::MarkdownPlanRichLinks;
use agenthost_contrib_persisted_turn_usage::PersistedTurnUsage;
use agenthost_contrib_queue_drain::QueueDrain;
use agenthost_contrib_remote_session_origin::RemoteSessionOrigin;
use agenthost_contrib_session_flags::SessionFlags;
use agenthost_contrib_session_input_needed::SessionInputNeeded;
use agenthost_contrib_session_modes::SessionModes;
use agenthost_contrib_session_title::SessionTitle;
use agenthost_contrib_side_chat::SideChat;
use agenthost_contrib_turn_admission::TurnAdmission;
use agenthost_contrib_turn_delegation::TurnDelegation;
use agenthost_contrib_unattended_policy::UnattendedPolicyContribution;
use agenthost_contrib_worktree_announcement::WorktreeAnnouncement;
use agenthost_dispatcher::{Dispatcher, RegistrationError, RegistrationSet};

/// Registers every built-in contribution with `dispatcher`, in the order of §10.1.
///
/// The returned set owns the registrations: keep it for the life of the host (dropping it
/// unregisters them all). On an error — a duplicate id or a service missing from the
/// dispatcher's registry, both named in the message — the contributions registered so far are
/// unregistered again, so a host never runs with part of the list.
pub fn register_builtin_contributions(
    dispatcher: &Dispatcher,
) -> Result<RegistrationSet, RegistrationError> {
    let mut set = RegistrationSet::new();
    // One line per contribution, in registration order (§10.1 `#`); a missing one keeps its slot.
    set.push(dispatcher.register::<LocalCommandHandler>()?); // 1
    set.push(dispatcher.register::<TurnAdmission>()?); // 2
    set.push(dispatcher.register::<TurnDelegation>()?); // 3
    set.push(dispatcher.register::<PersistedTurnUsage>()?); // 4
    set.push(dispatcher.register::<WorktreeAnnouncement>()?); // 5
    set.push(dispatcher.register::<CheckpointAndChangeset>()?); // 6
    set.push(dispatcher.register::<QueueDrain>()?); // 7
    set.push(dispatcher.register::<SessionInputNeeded>()?); // 8
    set.push(dispatcher.register::<GithubReferences>()?); // 9
    set.push(dispatcher.register::<SessionTitle>()?); // 10
    set.push(dispatcher.register::<MarkUnread>()?); // 11
    set.push(dispatcher.register::<ChatDraft>()?); // 12
    set.push(dispatcher.register::<ChatConfig>()?); // 13
    set.push(dispatcher.register::<MarkdownPlanRichLinks>()?); // 14
    set.push(dispatcher.register::<ArtifactTools>()?); // 15
    set.push(dispatcher.register::<ChatSurface>()?); // 16
    set.push(dispatcher.register::<SideChat>()?); // 17
    set.push(dispatcher.register::<SessionFlags>()?); // 18
    set.push(dispatcher.register::<UnattendedPolicyContribution>()?); // 19
    set.push(dispatcher.register::<ClientDeparture>()?); // 20
    set.push(dispatcher.register::<InterruptedTurn>()?); // 21
    set.push(dispatcher.register::<AuditLogContribution>()?); // 22
    set.push(dispatcher.register::<RemoteSessionOrigin>()?); // 23
    set.push(dispatcher.register::<SessionModes>()?); // 24
    Ok(set)
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
