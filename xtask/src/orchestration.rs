//! The thin-orchestration allowlist and line budgets (ARCHITECTURE.md rule 2; checked by
//! `src/thin_orchestration.rs`).
//!
//! Every function and method of `agenthost-side-effects` (`crates/side-effects`) and
//! `agenthost-service` (`crates/service`) must have exactly one entry in [`ALLOWLIST`], with one
//! [`Reason`] from the closed set below (what legitimately stays in the orchestration crates). "It was convenient
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
//!     ("agenthost-service::agent::AgentService::create_session", Reason::UseCase),
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

/// Why a function may stay in the orchestrator or the session service (what legitimately stays
/// there). The set is closed: an unknown reason does not compile.
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
    /// `dispatch-call-site`: a call site of the contribution dispatcher (a hook dispatch or the turn starter),
    /// the only coupling to contributions.
    DispatchCallSite,
    /// `use-case`: one use case of the application layer — a method of `AgentService`
    /// (`crates/service/src/agent.rs`) answering one client or host command by composing the
    /// components one call per step. Checked: the function is a method of `AgentService`.
    UseCase,
    /// `protocol`: what AHP obliges every host to do whatever contributions are registered —
    /// a session with its default chat and `session/ready`, a stored channel restored before it
    /// is served, listing and paging, URI spellings, the intake's validation, error codes,
    /// `root/sessionSummaryChanged`.
    Protocol,
    /// `wiring`: construction without behaviour — constructors, composition-time setters,
    /// `Debug`/`Display`/`Default`/`From` impls, one-statement accessors and forwarders.
    /// Checked: the name is `new`/`start`/`set_*`, the impl one of those traits, or the body one
    /// statement.
    Wiring,
}

impl Reason {
    /// Every reason, in the order messages list them.
    pub const ALL: [Self; 7] = [
        Self::Routing,
        Self::Invariant,
        Self::Provider,
        Self::DispatchCallSite,
        Self::UseCase,
        Self::Protocol,
        Self::Wiring,
    ];

    /// The reason's name in ARCHITECTURE.md and in messages (`dispatch-call-site`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Routing => "routing",
            Self::Invariant => "invariant",
            Self::Provider => "provider",
            Self::DispatchCallSite => "dispatch-call-site",
            Self::UseCase => "use-case",
            Self::Protocol => "protocol",
            Self::Wiring => "wiring",
        }
    }

    /// The variant's identifier as written in [`ALLOWLIST`] (`DispatchCallSite`).
    pub fn variant(self) -> &'static str {
        match self {
            Self::Routing => "Routing",
            Self::Invariant => "Invariant",
            Self::Provider => "Provider",
            Self::DispatchCallSite => "DispatchCallSite",
            Self::UseCase => "UseCase",
            Self::Protocol => "Protocol",
            Self::Wiring => "Wiring",
        }
    }

    /// What a function must be to have this reason, for messages.
    pub fn rule(self) -> &'static str {
        match self {
            Self::UseCase => "a use case is a method of AgentService (crates/service/src/agent.rs)",
            Self::Wiring => {
                "wiring is a constructor (`new`, `start`), a `set_*` setter, a Debug, Display, \
                 Default or From impl, or a one-statement accessor"
            }
            _ => "",
        }
    }
}

/// Every function the orchestration crates may contain: `(function path, reason)`, one per line.
#[rustfmt::skip]
pub const ALLOWLIST: &[(&str, Reason)] = &[
    ("agenthost-service::agent::<HostParts as Debug>::fmt", Reason::Wiring),
    ("agenthost-service::agent::Activity::lock", Reason::Wiring),
    ("agenthost-service::agent::<Activity as EnvelopeObserver>::on_envelope", Reason::Invariant),
    ("agenthost-service::agent::<AgentService as Debug>::fmt", Reason::Wiring),
    ("agenthost-service::agent::AgentService::new", Reason::Wiring),
    ("agenthost-service::agent::AgentService::sessions", Reason::UseCase),
    ("agenthost-service::agent::AgentService::launch_kind", Reason::UseCase),
    ("agenthost-service::agent::AgentService::agents", Reason::UseCase),
    ("agenthost-service::agent::AgentService::session_config", Reason::UseCase),
    ("agenthost-service::agent::AgentService::server_seq", Reason::UseCase),
    ("agenthost-service::agent::AgentService::notify_root", Reason::UseCase),
    ("agenthost-service::agent::AgentService::register_subscriber", Reason::UseCase),
    ("agenthost-service::agent::AgentService::subscribe", Reason::UseCase),
    ("agenthost-service::agent::AgentService::reconnect", Reason::UseCase),
    ("agenthost-service::agent::AgentService::unsubscribe", Reason::UseCase),
    ("agenthost-service::agent::AgentService::disconnected", Reason::UseCase),
    ("agenthost-service::agent::AgentService::retain_live", Reason::UseCase),
    ("agenthost-service::agent::AgentService::refuse", Reason::UseCase),
    ("agenthost-service::agent::AgentService::client_action", Reason::UseCase),
    ("agenthost-service::agent::AgentService::dispatch_action", Reason::UseCase),
    ("agenthost-service::agent::AgentService::create_session", Reason::UseCase),
    ("agenthost-service::agent::AgentService::dispose_session", Reason::UseCase),
    ("agenthost-service::agent::AgentService::delete_session", Reason::UseCase),
    ("agenthost-service::agent::AgentService::spend", Reason::UseCase),
    ("agenthost-service::agent::AgentService::stop_turn", Reason::UseCase),
    ("agenthost-service::agent::AgentService::create_chat", Reason::UseCase),
    ("agenthost-service::agent::AgentService::dispose_chat", Reason::UseCase),
    ("agenthost-service::agent::AgentService::completion_chat", Reason::UseCase),
    ("agenthost-service::agent::AgentService::checkpoint_target", Reason::UseCase),
    ("agenthost-service::agent::AgentService::checkpoint_diff", Reason::UseCase),
    ("agenthost-service::agent::AgentService::checkpoint_rollback", Reason::UseCase),
    ("agenthost-service::agent::AgentService::spawn_idle_eviction", Reason::UseCase),
    ("agenthost-service::agent::AgentService::evict_idle_once", Reason::UseCase),
    ("agenthost-service::agent::AgentService::shutdown", Reason::UseCase),
    ("agenthost-service::agent::<ServiceError as From<CommandError>>::from", Reason::Wiring),
    ("agenthost-service::sessions::SessionService::session_config", Reason::Wiring),
    ("agenthost-service::sessions::restore::SessionService::hydrated_chats", Reason::Wiring),
    ("agenthost-service::sessions::restore::SessionService::hydrate_chats", Reason::DispatchCallSite),
    ("agenthost-service::summaries::SummaryNotifier::install", Reason::Wiring),
    ("agenthost-service::summaries::<SummaryNotifier as EnvelopeObserver>::on_envelope", Reason::Protocol),
    ("agenthost-side-effects::orchestrator::<OrchestratorConfig as Default>::default", Reason::Wiring),
    ("agenthost-side-effects::orchestrator::Shared::runtime", Reason::Routing),
    ("agenthost-side-effects::orchestrator::Shared::dispatch", Reason::Routing),
    ("agenthost-side-effects::orchestrator::Shared::elapsed_ms", Reason::Invariant),
    ("agenthost-side-effects::orchestrator::Shared::session_of", Reason::Routing),
    ("agenthost-side-effects::orchestrator::Shared::chat_of", Reason::Routing),
    ("agenthost-side-effects::orchestrator::Shared::active_turn_id", Reason::Routing),
    ("agenthost-side-effects::orchestrator::Shared::track_turn", Reason::Invariant),
    ("agenthost-side-effects::orchestrator::Shared::cancel_settled", Reason::Invariant),
    ("agenthost-side-effects::orchestrator::Shared::turn_end", Reason::DispatchCallSite),
    ("agenthost-side-effects::orchestrator::Shared::stop_agent", Reason::Invariant),
    ("agenthost-side-effects::orchestrator::Orchestrator::stop_turn", Reason::Invariant),
    ("agenthost-side-effects::orchestrator::Shared::discard_turn_start", Reason::Invariant),
    ("agenthost-side-effects::orchestrator::completion_of", Reason::DispatchCallSite),
    ("agenthost-side-effects::orchestrator::<Orchestrator as Debug>::fmt", Reason::Wiring),
    ("agenthost-side-effects::orchestrator::<Bridge as HostBridge>::launch_kind", Reason::DispatchCallSite),
    ("agenthost-side-effects::orchestrator::<Bridge as HostBridge>::send_turn_message", Reason::DispatchCallSite),
    ("agenthost-side-effects::orchestrator::<DispatchObserver as EnvelopeObserver>::on_envelope", Reason::DispatchCallSite),
    ("agenthost-side-effects::orchestrator::DispatchObserver::new", Reason::Wiring),
    ("agenthost-side-effects::orchestrator::Orchestrator::start", Reason::Wiring),
    ("agenthost-side-effects::orchestrator::<Orchestrator as ResumeHandles>::resume_handle", Reason::Provider),
    ("agenthost-side-effects::orchestrator::Orchestrator::start_turn", Reason::DispatchCallSite),
    ("agenthost-side-effects::orchestrator::Orchestrator::after_client_action", Reason::DispatchCallSite),
    ("agenthost-side-effects::orchestrator::Orchestrator::take_chat_action", Reason::Invariant),
    ("agenthost-side-effects::orchestrator::Orchestrator::answer_agent", Reason::Invariant),
    ("agenthost-side-effects::orchestrator::Orchestrator::dispose_chat", Reason::Invariant),
    ("agenthost-side-effects::orchestrator::Orchestrator::dispose_session", Reason::Invariant),
    ("agenthost-side-effects::orchestrator::Orchestrator::stop_all_agents", Reason::Invariant),
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
    // The orchestrator's effects of the dispatcher's shared turn starter (`Dispatcher::start_turn`).
    ("agenthost-side-effects::turns::<Shared as TurnStarterPorts>::refuse", Reason::Invariant),
    ("agenthost-side-effects::turns::<Shared as TurnStarterPorts>::agent_of", Reason::Provider),
    ("agenthost-side-effects::turns::<Shared as TurnStarterPorts>::turn_end", Reason::DispatchCallSite),
    ("agenthost-side-effects::turns::<Shared as TurnStarterPorts>::accepted", Reason::DispatchCallSite),
    ("agenthost-side-effects::turns::fail_started_turn", Reason::Invariant),
    ("agenthost-side-effects::turns::send_tail", Reason::Invariant),
    ("agenthost-side-effects::turns::capture_turn_start", Reason::Invariant),
    ("agenthost-side-effects::turns::provider_session", Reason::Invariant),
    ("agenthost-service::error::ServiceError::code", Reason::Protocol),
    ("agenthost-service::sessions::root_state", Reason::Protocol),
    ("agenthost-service::error::<ServiceError as From<agenthost_store::StoreError>>::from", Reason::Wiring),
    ("agenthost-service::sessions::<SessionService as Debug>::fmt", Reason::Wiring),
    ("agenthost-service::sessions::restore::SessionService::ensure_changeset", Reason::Protocol),
    ("agenthost-service::sessions::SessionService::session_config_with", Reason::Protocol),
    ("agenthost-service::sessions::SessionService::start_initial_turn", Reason::Protocol),
    ("agenthost-service::sessions::SessionService::flush_history", Reason::Invariant),
    ("agenthost-service::sessions::SessionService::history_backlog", Reason::Wiring),
    ("agenthost-service::sessions::SessionService::spawn_history_retries", Reason::Invariant),
    ("agenthost-service::sessions::state_for", Reason::Invariant),
    ("agenthost-service::sessions::SessionService::delete_session", Reason::Invariant),
    ("agenthost-service::sessions::SessionService::idle_sessions", Reason::Invariant),
    ("agenthost-service::sessions::restore::SessionService::ensure_channel", Reason::Protocol),
    ("agenthost-service::sessions::restore::SessionService::ensure_session", Reason::Protocol),
    ("agenthost-service::sessions::restore::SessionService::ensure_chat", Reason::DispatchCallSite),
    ("agenthost-service::sessions::listing::SessionService::stored_summary", Reason::Protocol),
    ("agenthost-service::sessions::listing::SessionService::spend", Reason::Protocol),
    ("agenthost-service::sessions::SessionService::new", Reason::Wiring),
    ("agenthost-service::sessions::SessionService::default_directory", Reason::Protocol),
    ("agenthost-service::sessions::SessionService::session_worktrees", Reason::Invariant),
    ("agenthost-service::sessions::SessionService::chat_directories", Reason::Invariant),
    ("agenthost-service::sessions::SessionService::sandbox", Reason::Invariant),
    ("agenthost-service::sessions::listing::SessionService::list_sessions_page", Reason::Protocol),
    ("agenthost-service::sessions::listing::SessionService::all_sessions", Reason::Protocol),
    ("agenthost-service::sessions::listing::SessionService::chat_session", Reason::Protocol),
    ("agenthost-service::sessions::listing::SessionService::session_spelling", Reason::Protocol),
    ("agenthost-service::sessions::listing::SessionService::session_provider", Reason::Protocol),
    ("agenthost-service::sessions::listing::SessionService::spellings_of", Reason::Protocol),
    ("agenthost-service::sessions::SessionService::keep_creation_meta", Reason::Protocol),
    ("agenthost-service::sessions::SessionService::check_directory", Reason::Invariant),
    ("agenthost-service::sessions::SessionService::create_session", Reason::Protocol),
    ("agenthost-service::sessions::SessionService::create_reserved", Reason::Protocol),
    ("agenthost-service::sessions::SessionService::store_new_session", Reason::Protocol),
    ("agenthost-service::sessions::SessionService::checkpoints", Reason::Wiring),
    ("agenthost-service::sessions::SessionService::roots", Reason::Wiring),
    ("agenthost-service::sessions::SessionService::creating", Reason::Protocol),
    ("agenthost-service::sessions::SessionService::add_chat", Reason::Protocol),
    ("agenthost-service::sessions::SessionService::dispatch", Reason::Protocol),
    ("agenthost-service::sessions::SessionService::create_chat", Reason::Protocol),
    ("agenthost-service::sessions::SessionService::side_chat_origin", Reason::Protocol),
    ("agenthost-service::sessions::SessionService::dispose_chat", Reason::Protocol),
    ("agenthost-service::sessions::SessionService::dispose_session", Reason::Protocol),
    ("agenthost-service::sessions::listing::SessionService::summary", Reason::Protocol),
    ("agenthost-service::sessions::listing::SessionService::list_sessions", Reason::Protocol),
    ("agenthost-service::sessions::listing::SessionService::resolve_chat", Reason::Routing),
    ("agenthost-service::sessions::listing::SessionService::resolve_chat_uri", Reason::Routing),
    ("agenthost-service::sessions::SessionService::fetch_turns", Reason::Protocol),
    ("agenthost-service::sessions::SessionService::intake", Reason::Protocol),
    ("agenthost-service::sessions::SessionService::is_watched", Reason::Invariant),
];

/// The line budget of each orchestration crate: `(package, lines)`, one per line.
#[rustfmt::skip]
pub const LINE_BUDGETS: &[(&str, usize)] = &[
    ("agenthost-side-effects", 1108),
    ("agenthost-service", 1531),
];
