//! The built-in contributions of agenthost, and the single place they are registered.
//!
//! The central decision: **there is exactly one registration site.**
//! [`register_builtin_contributions`] registers every built-in contribution, once, at host
//! start-up, in one fixed registration order (the table below). Within a hook contributions run
//! by `ORDER`; the registration index only breaks ties of equal `ORDER` (`markUnread` before
//! `sideChat`, both 500). The per-hook order is pinned by the ordering snapshot in this crate's
//! tests, and [`register_builtins_in_order`] lets tests show it does not depend on the
//! registration order otherwise.
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
//! | 5 | `worktreeAnnouncement` | `dyn WorktreeIsolation`, `dyn ServerDispatch` | registered |
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
//! | 25 | `turnCost` | `dyn HostState`, `dyn ServerDispatch`, `dyn SessionDataStore` (and the `PriceTable` when registered; the built-in one otherwise) | registered |
//! | 26 | `sessionLimits` | `dyn HostState`, `dyn ServerDispatch`, `dyn TurnStopper` (and the `PriceTable` when registered) | registered |
//! | 27 | `notifications` | `dyn HostState`, `dyn Notifier` (and the `NotificationSettings` when registered; the defaults otherwise) | registered |
//! | 28 | `chatCatalog` | `dyn HostState`, `dyn ServerDispatch` | registered |
#![deny(missing_docs)]

use agenthost_contrib_artifact_tools::ArtifactTools;
use agenthost_contrib_audit_log::AuditLogContribution;
use agenthost_contrib_chat_catalog::ChatCatalog;
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
use agenthost_contrib_notifications::Notifications;
use agenthost_contrib_persisted_turn_usage::PersistedTurnUsage;
use agenthost_contrib_queue_drain::QueueDrain;
use agenthost_contrib_remote_session_origin::RemoteSessionOrigin;
use agenthost_contrib_session_flags::SessionFlags;
use agenthost_contrib_session_input_needed::SessionInputNeeded;
use agenthost_contrib_session_limits::SessionLimits;
use agenthost_contrib_session_modes::SessionModes;
use agenthost_contrib_session_title::SessionTitle;
use agenthost_contrib_side_chat::SideChat;
use agenthost_contrib_turn_admission::TurnAdmission;
use agenthost_contrib_turn_cost::TurnCost;
use agenthost_contrib_turn_delegation::TurnDelegation;
use agenthost_contrib_unattended_policy::UnattendedPolicyContribution;
use agenthost_contrib_worktree_announcement::WorktreeAnnouncement;
use agenthost_dispatcher::{Dispatcher, Registration, RegistrationError, RegistrationSet};

/// Registers one built-in.
type Register = fn(&Dispatcher) -> Result<Registration, RegistrationError>;

/// The built-ins, one line each, in the registration order (between contributions of equal
/// `ORDER`, the one registered first runs first); a missing one keeps its slot.
const BUILTINS: [Register; 28] = [
    |d| d.register::<LocalCommandHandler>(),          // 1
    |d| d.register::<TurnAdmission>(),                // 2
    |d| d.register::<TurnDelegation>(),               // 3
    |d| d.register::<PersistedTurnUsage>(),           // 4
    |d| d.register::<WorktreeAnnouncement>(),         // 5
    |d| d.register::<CheckpointAndChangeset>(),       // 6
    |d| d.register::<QueueDrain>(),                   // 7
    |d| d.register::<SessionInputNeeded>(),           // 8
    |d| d.register::<GithubReferences>(),             // 9
    |d| d.register::<SessionTitle>(),                 // 10
    |d| d.register::<MarkUnread>(),                   // 11
    |d| d.register::<ChatDraft>(),                    // 12
    |d| d.register::<ChatConfig>(),                   // 13
    |d| d.register::<MarkdownPlanRichLinks>(),        // 14
    |d| d.register::<ArtifactTools>(),                // 15
    |d| d.register::<ChatSurface>(),                  // 16
    |d| d.register::<SideChat>(),                     // 17
    |d| d.register::<SessionFlags>(),                 // 18
    |d| d.register::<UnattendedPolicyContribution>(), // 19
    |d| d.register::<ClientDeparture>(),              // 20
    |d| d.register::<InterruptedTurn>(),              // 21
    |d| d.register::<AuditLogContribution>(),         // 22
    |d| d.register::<RemoteSessionOrigin>(),          // 23
    |d| d.register::<SessionModes>(),                 // 24
    |d| d.register::<TurnCost>(),                     // 25
    |d| d.register::<SessionLimits>(),                // 26
    |d| d.register::<Notifications>(),                // 27
    |d| d.register::<ChatCatalog>(),                  // 28
];

/// How many built-ins there are.
pub const BUILTIN_COUNT: usize = BUILTINS.len();

/// Registers every built-in contribution with `dispatcher`, in the registration order.
///
/// The returned set owns the registrations: keep it for the life of the host (dropping it
/// unregisters them all). On an error — a duplicate id or a service missing from the
/// dispatcher's registry, both named in the message — the contributions registered so far are
/// unregistered again, so a host never runs with part of the list.
pub fn register_builtin_contributions(
    dispatcher: &Dispatcher,
) -> Result<RegistrationSet, RegistrationError> {
    let mut set = RegistrationSet::new();
    for register in BUILTINS {
        set.push(register(dispatcher)?);
    }
    Ok(set)
}

/// [`register_builtin_contributions`] with the built-ins registered in another order:
/// `order` lists positions in the registration order ([`BUILTIN_COUNT`] of them); a position
/// out of range or given twice registers nothing and is `None`. For tests that show the hooks'
/// order depends on `ORDER` alone, whatever the registration order.
pub fn register_builtins_in_order(
    dispatcher: &Dispatcher,
    order: &[usize],
) -> Option<Result<RegistrationSet, RegistrationError>> {
    let mut seen = [false; BUILTIN_COUNT];
    for &position in order {
        if std::mem::replace(seen.get_mut(position)?, true) {
            return None;
        }
    }
    if order.len() != BUILTIN_COUNT {
        return None;
    }
    let mut set = RegistrationSet::new();
    for &position in order {
        match BUILTINS[position](dispatcher) {
            Ok(registration) => set.push(registration),
            Err(error) => return Some(Err(error)),
        }
    }
    Some(Ok(set))
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
