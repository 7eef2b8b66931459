//! The thin-orchestration allowlist and line budgets (ARCHITECTURE.md rule 2; checked by
//! `src/thin_orchestration.rs`).
//!
//! Every function and method of `agenthost-side-effects` (`crates/side-effects`) and
//! `agenthost-service` (`crates/service`) must have exactly one entry in [`ALLOWLIST`], with one
//! [`Reason`] from the closed set of `shared/reference/contributions.md` §1. "It was convenient
//! here" is not a reason: new cross-cutting behaviour goes into a contribution.
//!
//! # Format (kept greppable on purpose)
//!
//! The budget-rise rule reads the `HEAD` version of this file (`git show HEAD:<this file>`) as
//! plain text, line by line, so both tables keep **one row per line**, in exactly these shapes
//! (`#[rustfmt::skip]` keeps a long row on its line; a trailing `// comment` is allowed; lines
//! starting with `//` are ignored):
//!
//! ```text
//!     ("<function path>", Reason::<Variant>),     in ALLOWLIST
//!     ("<package>", <lines>),                     in LINE_BUDGETS (digits, `_` allowed)
//! ```
//!
//! For example:
//!
//! ```text
//!     ("agenthost-service::session::SessionService::create_session", Reason::Lifecycle),
//!     ("agenthost-service", 1_200),
//! ```
//!
//! A function path is `<package>::<module path>::<Type, Trait or <Type as Trait>>::<fn>` (the
//! scheme is documented in `src/thin_orchestration.rs` and `xtask/README.md`); the violation
//! message of an unlisted function prints it ready to paste.
//!
//! # Line budgets
//!
//! [`LINE_BUDGETS`] caps each crate's non-blank, non-comment lines of production code (tests
//! excluded). A budget may rise only in a commit that also adds allowlist entries for that crate:
//! the lint compares this file with its `HEAD` version and fails when a budget is higher while
//! the crate's entry count is not.

/// Why a function may stay in the orchestrator or the session service (contributions.md §1,
/// "What legitimately stays"). The set is closed: an unknown reason does not compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    /// `routing`: every signal must reach the right chat before state changes — resolving
    /// provider signals to their chat or subagent chat, active-turn lookup, dropping actions of
    /// a stale producer turn, subagent signal buffering, turn-id remapping.
    Routing,
    /// `invariant`: a correctness invariant that must hold whatever contributions are registered
    /// — permission/auto-approval flow, tool-ready flow, input-request tracking, checkpoint
    /// discard on cancel, client-tool completion, active-client fan-out; the shared send tail.
    Invariant,
    /// `provider`: provider-shaped code that differs per SDK — event mappers, attachment
    /// serializers, provider-specific overlays during restore.
    Provider,
    /// `dispatch-call-site`: a call site of the contribution dispatcher (contributions.md §8),
    /// the only coupling to contributions.
    DispatchCallSite,
    /// `lifecycle`: session lifecycle — create, restore, registry and tombstones, residency and
    /// idle eviction, peer-chat catalog, client dispatch queues.
    Lifecycle,
}

impl Reason {
    /// Every reason, in the order messages list them.
    pub const ALL: [Self; 5] = [
        Self::Routing,
        Self::Invariant,
        Self::Provider,
        Self::DispatchCallSite,
        Self::Lifecycle,
    ];

    /// The reason's name in ARCHITECTURE.md and in messages (`dispatch-call-site`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Routing => "routing",
            Self::Invariant => "invariant",
            Self::Provider => "provider",
            Self::DispatchCallSite => "dispatch-call-site",
            Self::Lifecycle => "lifecycle",
        }
    }

    /// The variant's identifier as written in [`ALLOWLIST`] (`DispatchCallSite`).
    pub fn variant(self) -> &'static str {
        match self {
            Self::Routing => "Routing",
            Self::Invariant => "Invariant",
            Self::Provider => "Provider",
            Self::DispatchCallSite => "DispatchCallSite",
            Self::Lifecycle => "Lifecycle",
        }
    }
}

/// Every function the orchestration crates may contain: `(function path, reason)`, one per line.
#[rustfmt::skip]
pub const ALLOWLIST: &[(&str, Reason)] = &[
    ("agenthost-side-effects::actions::turn_complete", Reason::Routing),
    ("agenthost-side-effects::actions::system_notice", Reason::Routing),
    ("agenthost-side-effects::actions::steering_consumed", Reason::Routing),
    ("agenthost-side-effects::actions::subagent_turn_started", Reason::Routing),
    ("agenthost-side-effects::actions::chat_added", Reason::Routing),
    ("agenthost-side-effects::actions::now_iso", Reason::Routing),
    ("agenthost-side-effects::orchestrator::<OrchestratorConfig as Default>::default", Reason::Lifecycle),
    ("agenthost-side-effects::orchestrator::<OrchestratorError as Display>::fmt", Reason::Lifecycle),
    ("agenthost-side-effects::orchestrator::Shared::runtime", Reason::Routing),
    ("agenthost-side-effects::orchestrator::Shared::dispatch", Reason::Routing),
    ("agenthost-side-effects::orchestrator::Shared::elapsed_ms", Reason::Invariant),
    ("agenthost-side-effects::orchestrator::Shared::session_of", Reason::Routing),
    ("agenthost-side-effects::orchestrator::Shared::active_turn_id", Reason::Routing),
    ("agenthost-side-effects::orchestrator::Shared::track_turn", Reason::Invariant),
    ("agenthost-side-effects::orchestrator::Shared::turn_end", Reason::DispatchCallSite),
    ("agenthost-side-effects::orchestrator::Shared::discard_turn_start", Reason::Invariant),
    ("agenthost-side-effects::orchestrator::completion_of", Reason::DispatchCallSite),
    ("agenthost-side-effects::orchestrator::<Orchestrator as Debug>::fmt", Reason::Lifecycle),
    ("agenthost-side-effects::orchestrator::<Bridge as HostBridge>::launch_kind", Reason::DispatchCallSite),
    ("agenthost-side-effects::orchestrator::<Bridge as HostBridge>::send_turn_message", Reason::DispatchCallSite),
    ("agenthost-side-effects::orchestrator::<DispatchObserver as EnvelopeObserver>::on_envelope", Reason::DispatchCallSite),
    ("agenthost-side-effects::orchestrator::Orchestrator::start", Reason::Lifecycle),
    ("agenthost-side-effects::orchestrator::Orchestrator::provider_ids", Reason::Lifecycle),
    ("agenthost-side-effects::orchestrator::Orchestrator::resume_handle", Reason::Provider),
    ("agenthost-side-effects::orchestrator::Orchestrator::start_turn", Reason::DispatchCallSite),
    ("agenthost-side-effects::orchestrator::Orchestrator::after_client_action", Reason::DispatchCallSite),
    ("agenthost-side-effects::orchestrator::Orchestrator::answer_agent", Reason::Invariant),
    ("agenthost-side-effects::orchestrator::Orchestrator::dispose_chat", Reason::Lifecycle),
    ("agenthost-side-effects::orchestrator::Orchestrator::dispose_session", Reason::Lifecycle),
    ("agenthost-side-effects::orchestrator::Orchestrator::stop_all_agents", Reason::Lifecycle),
    ("agenthost-side-effects::routing::<SubagentBuffer as Default>::default", Reason::Routing),
    ("agenthost-side-effects::routing::SubagentBuffer::new", Reason::Routing),
    ("agenthost-side-effects::routing::model_limits", Reason::Routing),
    ("agenthost-side-effects::routing::SubagentBuffer::push", Reason::Routing),
    ("agenthost-side-effects::routing::SubagentBuffer::take", Reason::Routing),
    ("agenthost-side-effects::routing::SubagentBuffer::fail", Reason::Routing),
    ("agenthost-side-effects::routing::route_signals", Reason::Routing),
    ("agenthost-side-effects::routing::route", Reason::Routing),
    ("agenthost-side-effects::routing::route_action", Reason::Routing),
    ("agenthost-side-effects::routing::apply_turn_action", Reason::Routing),
    ("agenthost-side-effects::routing::start_subagent", Reason::Routing),
    ("agenthost-side-effects::routing::complete_subagent", Reason::Routing),
    ("agenthost-side-effects::routing::fail_subagent", Reason::Routing),
    ("agenthost-side-effects::turns::start_turn", Reason::DispatchCallSite),
    // The orchestrator's effects of the dispatcher's shared turn starter (§8.3).
    ("agenthost-side-effects::turns::<Shared as TurnStarterPorts>::refuse", Reason::Invariant),
    ("agenthost-side-effects::turns::<Shared as TurnStarterPorts>::agent_of", Reason::Provider),
    ("agenthost-side-effects::turns::<Shared as TurnStarterPorts>::turn_end", Reason::DispatchCallSite),
    ("agenthost-side-effects::turns::<Shared as TurnStarterPorts>::accepted", Reason::DispatchCallSite),
    ("agenthost-side-effects::turns::fail_started_turn", Reason::Invariant),
    ("agenthost-side-effects::turns::send_tail", Reason::Invariant),
    ("agenthost-side-effects::turns::announce_worktree", Reason::Lifecycle),
    ("agenthost-side-effects::turns::capture_turn_start", Reason::Invariant),
    ("agenthost-side-effects::turns::provider_session", Reason::Invariant),
    ("agenthost-service::error::ServiceError::code", Reason::Lifecycle),
    ("agenthost-service::sessions::root_state", Reason::Lifecycle),
    ("agenthost-service::error::<ServiceError as From<agenthost_store::StoreError>>::from", Reason::Lifecycle),
    ("agenthost-service::persistence::<StoreReservation as SeqReservation>::reserve", Reason::Invariant),
    ("agenthost-service::persistence::<TurnRecorder as CommitHook>::before_broadcast", Reason::Invariant),
    ("agenthost-service::sessions::<SessionService as Debug>::fmt", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::set_checkpoints", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::set_changesets", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::capture_baseline", Reason::Invariant),
    ("agenthost-service::sessions::SessionService::ensure_changeset", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::set_session_config", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::session_config_with", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::start_initial_turn", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::set_resume_handles", Reason::Provider),
    ("agenthost-service::persistence::TurnRecorder::new", Reason::Invariant),
    ("agenthost-service::persistence::TurnRecorder::write_for", Reason::Invariant),
    ("agenthost-service::persistence::TurnRecorder::finished", Reason::Invariant),
    ("agenthost-service::persistence::TurnRecorder::retry", Reason::Invariant),
    ("agenthost-service::persistence::live_chat_record", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::flush_history", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::history_backlog", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::set_history_limit", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::spawn_history_retries", Reason::Lifecycle),
    ("agenthost-service::persistence::session_record", Reason::Lifecycle),
    ("agenthost-service::persistence::chat_record", Reason::Lifecycle),
    ("agenthost-service::persistence::flag_bits", Reason::Lifecycle),
    ("agenthost-service::persistence::stored_chat_summary", Reason::Lifecycle),
    ("agenthost-service::persistence::restored_session", Reason::Lifecycle),
    ("agenthost-service::persistence::restored_chat", Reason::Lifecycle),
    ("agenthost-service::sessions::state_for", Reason::Invariant),
    ("agenthost-service::sessions::SessionService::delete_session", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::idle_sessions", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::ensure_channel", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::ensure_session", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::ensure_chat", Reason::DispatchCallSite),
    ("agenthost-service::sessions::SessionService::stored_summary", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::new", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::default_directory", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::session_worktrees", Reason::Invariant),
    ("agenthost-service::sessions::SessionService::chat_directories", Reason::Invariant),
    ("agenthost-service::sessions::SessionService::sandbox", Reason::Invariant),
    ("agenthost-service::sessions::SessionService::list_sessions_page", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::all_sessions", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::chat_session", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::session_spelling", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::session_provider", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::spellings_of", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::keep_creation_meta", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::check_directory", Reason::Invariant),
    ("agenthost-service::sessions::SessionService::create_session", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::create_reserved", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::store_new_session", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::isolate", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::set_worktrees", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::checkpoints", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::roots", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::creating", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::add_chat", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::dispatch", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::create_chat", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::side_chat_origin", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::dispose_chat", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::dispose_session", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::summary", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::list_sessions", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::resolve_chat", Reason::Routing),
    ("agenthost-service::sessions::SessionService::fetch_turns", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::intake", Reason::Lifecycle),
    ("agenthost-service::sessions::SessionService::is_watched", Reason::Lifecycle),
    ("agenthost-service::sessions::now_iso", Reason::Lifecycle),
];

/// The line budget of each orchestration crate: `(package, lines)`, one per line.
#[rustfmt::skip]
pub const LINE_BUDGETS: &[(&str, usize)] = &[
    ("agenthost-side-effects", 1145),
    ("agenthost-service", 1255),
];
