//! `unattendedPolicy` (order 250, `onDidDispatchAction`): runs the tool-execution engine for the
//! host, so that no obligation in a session's `inputNeeded` list is stranded when no client
//! claims it. **Off by default.**
//!
//! The central decision: **the host is one more engine over the session's queue, and a live
//! subscription is its claim.** The contribution does not decide anything about an obligation
//! itself: per session it keeps one [`SessionEngine`] configured by the
//! [`UnattendedPolicy`] (no client id, every user-facing kind auto-answered after the grace
//! window), feeds it what the session channel says, and tells it about subscriptions through
//! [`SubscriptionClaims`] — a connection subscribed to a chat claims that chat's obligations
//! and, through the engine's subagent ancestry, the tool calls of its subagent chats. The
//! engine's grace timers do the rest: an obligation that stays unclaimed for a whole window is
//! answered (denied, or approved for an `allow=` tool); a claim that goes away re-arms a full
//! window.
//!
//! | Input | Effect |
//! |---|---|
//! | `session/inputNeededSet` / `inputNeededRemoved`, no engine yet, policy not `off` | engine created from the session's current state (list, subagent ancestry, live subscriptions) |
//! | the same, policy `off` | nothing at all: no engine, no timer |
//! | a session or chat action the engine reads (queue, chat catalog, remote denials) | fed to the session's engine, if it has one |
//! | the session's list becomes empty, or the session is gone | engine disposed and forgotten |
//! | `session/configChanged` on the session channel (not rejected), the resolved [`Settings`] changed | engine disposed; a new one created at once when the list is not empty and the new policy is not `off` |
//! | the same, settings unchanged | nothing: the engine and its grace deadlines stay |
//! | subscribe / unsubscribe / disconnect ([`SubscriptionTracker`]) | claim taken or released |
//!
//! **Policy source.** The host configuration ([`Configuration`] root key [`POLICY_KEY`],
//! `agent-host serve --unattended off|deny|allow=tool1,tool2`) unless the session's own
//! configuration (`SessionState.config.values`, read through [`HostState`]) has a string value
//! under the same key, which then wins for that session. The grace window is the root key
//! [`GRACE_KEY`] in milliseconds (`--unattended-grace`), else
//! [`DEFAULT_GRACE`]. Both are read when a session's
//! engine is created, and again on every accepted `session/configChanged` of the session (from
//! the host state, after reduction): when the resolved [`Settings`] differ from those the engine
//! was created with, the engine is disposed (its pending grace deadlines with it) and, if the
//! session still has obligations listed and the new policy is not `off`, replaced at once by an
//! engine created exactly as above — from the session's current state, claimed by the live
//! subscriptions — so the new policy's grace window starts at the change. Switching to `off`
//! only disposes: nothing answers any more. An unchanged value keeps the engine as it is. A host
//! configuration change on its own applies from the session's next engine on. An unparsable
//! value is logged and treated as `off` (a bad session override falls back to the host policy).
//!
//! **Session config property.** A client changes a session's policy by setting the session
//! config property [`POLICY_KEY`] (`unattended`), a `sessionMutable` string in the CLI spelling,
//! with `session/configChanged`. The session service publishes it in each session's
//! `config.schema` as [`session_config_property`] (its default: the host policy) and seeds
//! `config.values` with [`session_config_values`].
//!
//! **Answers.** They are submitted through the [`ClientActionIntake`] as client
//! [`CLIENT_ID`], not dispatched as server actions: only an accepted *client*
//! `chat/toolCallConfirmed` reaches the agent as a permission answer, and the other
//! contributions see it in `onDidApplyClientAction` like any user's. Submission happens on a
//! spawned task, never inside this hook or inside the engine's lock (it re-enters the
//! dispatcher). A refused answer is logged; the hook never fails and never panics.
//!
//! **Bounds.** Engines exist only for sessions with outstanding obligations under a policy
//! that is not `off`. There is no eviction hook: an engine is disposed when its session's list
//! becomes empty, and engines whose session disappeared (evicted or deleted with obligations
//! still listed) are swept whenever another session's engine is created, and all of them when
//! the contribution is dropped.
#![deny(missing_docs)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use agenthost_dispatcher::{
    ChatContribution, Contribution, ContributionContext, DispatchedAction, Hook, HookResult,
    HookSet, MissingService, ServiceRegistry,
};
use agenthost_protocol::ahp_types::state::{SessionConfigPropertySchema, SessionState};
use agenthost_protocol::common::JsonObject;
use agenthost_protocol::{ActionEnvelope, StateAction, Uri};
use agenthost_services::{
    ClientActionIntake, Configuration, HostState, ListenerId, SubscriptionChange,
    SubscriptionListener, SubscriptionTracker,
};
use agenthost_tool_execution::{
    AnswerSink, DEFAULT_GRACE, NoLocalTools, SessionEngine, SubscriptionClaims, UnattendedPolicy,
};
use serde_json::Value;
use tokio::runtime::Handle;

/// The client id the policy's answers are attributed to.
pub const CLIENT_ID: &str = "agenthost:unattended";
/// The configuration key of the policy (root: the host's; session: an override), a string in
/// the CLI spelling (`off`, `deny`, `allow=tool1,tool2`).
pub const POLICY_KEY: &str = "unattended";
/// The root configuration key of the grace window, in milliseconds.
pub const GRACE_KEY: &str = "unattendedGraceMs";

/// The session config property [`POLICY_KEY`] as published in a session's `config.schema`: a
/// `sessionMutable` string in the CLI spelling (`off`, `deny`, `allow=tool1,tool2`), whose
/// `default` is `host_default` (the host's own policy) spelled the same way. There is no `enum`:
/// `allow=` lists are free-form. A value that does not parse is logged and the host policy
/// applies.
pub fn session_config_property(host_default: &UnattendedPolicy) -> SessionConfigPropertySchema {
    let description = format!(
        "What the host does with this session's confirmations, input requests and \
         authentications that no connected client is subscribed to. `off`: nothing, they wait \
         for a user. `deny`: once an obligation has gone unclaimed for a whole grace window \
         (the host's `--unattended-grace`, {DEFAULT_GRACE:?} unless set), it is denied with a \
         reason (inputs are cancelled). `allow=tool1,tool2`: like `deny`, except that \
         confirmations of the listed tools are approved. A client subscribing to the chat claims \
         its obligations; when the claim goes away a full window starts again. Changing the \
         value takes effect at once, with a fresh grace window."
    );
    agenthost_services::string_config_property(
        "Unattended policy",
        &description,
        &host_default.to_string(),
        &[],
        true,
    )
}

/// The initial session config values for [`session_config_property`]:
/// `{ "unattended": "<host_default in the CLI spelling>" }`.
pub fn session_config_values(host_default: &UnattendedPolicy) -> JsonObject {
    let mut values = JsonObject::new();
    values.insert(
        POLICY_KEY.to_owned(),
        Value::String(host_default.to_string()),
    );
    values
}

/// The `unattendedPolicy` contribution. It needs `dyn HostState`, `dyn Configuration`,
/// `dyn SubscriptionTracker` and `dyn ClientActionIntake` in the registry.
pub struct UnattendedPolicyContribution {
    shared: Arc<Shared>,
    listener: ListenerId,
}

/// The policy a session's engine is created with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The policy.
    pub policy: UnattendedPolicy,
    /// The grace window.
    pub grace: Duration,
}

struct Shared {
    host: Arc<dyn HostState>,
    config: Arc<dyn Configuration>,
    subscriptions: Arc<dyn SubscriptionTracker>,
    intake: Arc<dyn ClientActionIntake>,
    /// The runtime the contribution was created on, for engines created off it.
    handle: Option<Handle>,
    engines: Mutex<HashMap<String, Slot>>,
}

/// One session's engine, the settings it was created with and the subscriptions claiming on it.
struct Slot {
    engine: SessionEngine,
    claims: SubscriptionClaims,
    settings: Settings,
}

impl std::fmt::Debug for UnattendedPolicyContribution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnattendedPolicyContribution")
            .field("engines", &self.engine_count())
            .finish_non_exhaustive()
    }
}

impl UnattendedPolicyContribution {
    /// The contribution over its services; it starts listening to `subscriptions` at once.
    pub fn new(
        host: Arc<dyn HostState>,
        config: Arc<dyn Configuration>,
        subscriptions: Arc<dyn SubscriptionTracker>,
        intake: Arc<dyn ClientActionIntake>,
    ) -> Self {
        let shared = Arc::new(Shared {
            host,
            config,
            subscriptions: Arc::clone(&subscriptions),
            intake,
            handle: Handle::try_current().ok(),
            engines: Mutex::new(HashMap::new()),
        });
        let listener = subscriptions.listen(Arc::new(ClaimListener(Arc::downgrade(&shared))));
        Self { shared, listener }
    }

    /// Resolves its four services from `services`.
    pub fn from_services(services: &ServiceRegistry) -> Result<Self, MissingService> {
        Ok(Self::new(
            services.get::<dyn HostState>()?,
            services.get::<dyn Configuration>()?,
            services.get::<dyn SubscriptionTracker>()?,
            services.get::<dyn ClientActionIntake>()?,
        ))
    }

    /// The number of live session engines (diagnostics, tests).
    pub fn engine_count(&self) -> usize {
        self.shared.engines().len()
    }

    /// The live engine of `session`, if any (diagnostics, tests).
    pub fn engine(&self, session: &str) -> Option<SessionEngine> {
        self.shared
            .engines()
            .get(session)
            .map(|slot| slot.engine.clone())
    }

    /// The settings a new engine of `session` would get, from the host configuration and the
    /// session's own configuration.
    pub fn settings(&self, session: &str) -> Settings {
        let state = self.shared.host.session(session);
        self.shared.settings(session, state.as_ref())
    }
}

impl Drop for UnattendedPolicyContribution {
    fn drop(&mut self) {
        self.shared.subscriptions.unlisten(self.listener);
        for (_, slot) in self.shared.engines().drain() {
            slot.engine.dispose();
        }
    }
}

impl Shared {
    fn engines(&self) -> MutexGuard<'_, HashMap<String, Slot>> {
        // Every mutation completes before the guard drops: a poisoned map is still valid.
        self.engines.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn settings(&self, session: &str, state: Option<&SessionState>) -> Settings {
        let host_policy = || match self.config.root_value(POLICY_KEY) {
            None => UnattendedPolicy::Off,
            Some(value) => parse_policy(&value).unwrap_or_else(|error| {
                tracing::warn!(%error, "unattendedPolicy: bad host policy, treated as off");
                UnattendedPolicy::Off
            }),
        };
        let own = state
            .and_then(|s| s.config.as_ref())
            .and_then(|c| c.values.get(POLICY_KEY));
        let policy = match own {
            None => host_policy(),
            Some(value) => parse_policy(value).unwrap_or_else(|error| {
                tracing::warn!(session, %error, "unattendedPolicy: bad session policy ignored");
                host_policy()
            }),
        };
        let grace = self
            .config
            .root_value(GRACE_KEY)
            .and_then(|value| value.as_u64())
            .map_or(DEFAULT_GRACE, Duration::from_millis);
        Settings { policy, grace }
    }

    /// Feeds one dispatched action to its session's engine, creating the engine on a queue
    /// change when the policy asks for one.
    fn observe(&self, action: &DispatchedAction<'_>, queue_change: bool) {
        let Some(session) = action.session else {
            return;
        };
        let session = session.as_str();
        let mut engines = self.engines();
        if let Some(slot) = engines.get(session) {
            slot.engine.apply_envelope(&envelope_of(action));
            if matches!(action.action, StateAction::SessionInputNeededRemoved(_))
                && self
                    .host
                    .session_input_needed(session)
                    .is_none_or(|list| list.is_empty())
                && let Some(slot) = engines.remove(session)
            {
                slot.engine.dispose();
                tracing::debug!(
                    session,
                    "unattendedPolicy: nothing outstanding, engine gone"
                );
            }
            return;
        }
        if !queue_change {
            return;
        }
        let state = self.host.session(session);
        let settings = self.settings(session, state.as_ref());
        self.start(&mut engines, session, state, settings);
    }

    /// An accepted `session/configChanged` of `session`: when the settings resolved from the
    /// session's current state differ from its engine's, the engine is replaced (or only
    /// disposed, under `off`).
    fn config_changed(&self, session: &str) {
        let mut engines = self.engines();
        let state = self.host.session(session);
        let settings = self.settings(session, state.as_ref());
        match engines.get(session) {
            Some(slot) if slot.settings == settings => return,
            Some(_) => {
                if let Some(slot) = engines.remove(session) {
                    slot.engine.dispose();
                    tracing::debug!(
                        session,
                        from = %slot.settings.policy,
                        to = %settings.policy,
                        "unattendedPolicy: settings changed, engine gone"
                    );
                }
            }
            None => {}
        }
        self.start(&mut engines, session, state, settings);
    }

    /// Creates and records `session`'s engine when `settings` ask for one and the session has
    /// obligations listed.
    fn start(
        &self,
        engines: &mut HashMap<String, Slot>,
        session: &str,
        state: Option<SessionState>,
        settings: Settings,
    ) {
        if settings.policy.is_off() {
            return;
        }
        let Some(state) = state else {
            return;
        };
        if state.input_needed.as_ref().is_none_or(Vec::is_empty) {
            return;
        }
        // Sessions that went away with obligations listed leave their engines behind.
        engines.retain(|other, slot| {
            let live = self.host.session_input_needed(other).is_some();
            if !live {
                slot.engine.dispose();
            }
            live
        });
        if let Some(slot) = self.create(session, &state, settings) {
            engines.insert(session.to_owned(), slot);
        }
    }

    /// A session's engine over its current state, claimed by the live chat subscriptions.
    fn create(&self, session: &str, state: &SessionState, settings: Settings) -> Option<Slot> {
        let Some(handle) = Handle::try_current().ok().or_else(|| self.handle.clone()) else {
            tracing::warn!(
                session,
                "unattendedPolicy: no Tokio runtime, session left alone"
            );
            return None;
        };
        let _entered = handle.enter();
        let sink = Arc::new(IntakeSink {
            intake: Arc::clone(&self.intake),
            handle: handle.clone(),
            session: session.to_owned(),
        });
        let config = settings.policy.engine_config(settings.grace);
        let engine = match SessionEngine::new(config, sink, Arc::new(NoLocalTools)) {
            Ok(engine) => engine,
            Err(error) => {
                tracing::warn!(session, %error, "unattendedPolicy: no engine");
                return None;
            }
        };
        engine.apply_session_state(state);
        let mut claims = SubscriptionClaims::new(engine.clone());
        for chat in &state.chats {
            for connection in self.subscriptions.subscribers(&chat.resource) {
                claims.subscribed(&connection, &chat.resource);
            }
        }
        tracing::debug!(session, policy = %settings.policy, "unattendedPolicy: engine created");
        Some(Slot {
            engine,
            claims,
            settings,
        })
    }

    fn subscription_changed(&self, change: &SubscriptionChange) {
        match change {
            SubscriptionChange::Subscribed {
                connection,
                channel,
            } => {
                let Some(session) = self.host.chat_session(channel) else {
                    return;
                };
                if let Some(slot) = self.engines().get_mut(session.as_str()) {
                    slot.claims.subscribed(connection, channel);
                }
            }
            SubscriptionChange::Unsubscribed {
                connection,
                channel,
            } => {
                for slot in self.engines().values_mut() {
                    slot.claims.unsubscribed(connection, channel);
                }
            }
            SubscriptionChange::Disconnected { connection, .. } => {
                for slot in self.engines().values_mut() {
                    slot.claims.disconnected(connection);
                }
            }
        }
    }
}

/// Parses a configuration value in the CLI spelling.
fn parse_policy(value: &Value) -> Result<UnattendedPolicy, String> {
    match value {
        Value::String(text) => text.parse().map_err(|e| format!("{e}")),
        other => Err(format!("expected a string, got {other}")),
    }
}

/// The envelope the engine reads, rebuilt from the hook's payload (the sequence number is not
/// part of what the engine looks at).
fn envelope_of(action: &DispatchedAction<'_>) -> ActionEnvelope {
    ActionEnvelope {
        channel: action.channel.to_owned(),
        action: action.action.clone(),
        server_seq: 0,
        origin: action.origin.cloned(),
        rejection_reason: None,
    }
}

/// Whether an existing engine needs `action`: queue changes, the chat catalog (subagent
/// ancestry) and the outcomes that end a tool call remotely.
fn feeds_engine(action: &StateAction) -> bool {
    matches!(
        action,
        StateAction::SessionInputNeededSet(_)
            | StateAction::SessionInputNeededRemoved(_)
            | StateAction::SessionChatAdded(_)
            | StateAction::SessionChatUpdated(_)
            | StateAction::SessionChatRemoved(_)
            | StateAction::ChatToolCallConfirmed(_)
            | StateAction::ChatToolCallComplete(_)
    )
}

/// Submits the engine's answers through the client-action intake, on a spawned task.
struct IntakeSink {
    intake: Arc<dyn ClientActionIntake>,
    handle: Handle,
    session: String,
}

impl AnswerSink for IntakeSink {
    fn dispatch(&self, chat: &Uri, action: StateAction) {
        let intake = Arc::clone(&self.intake);
        let session = self.session.clone();
        let chat = chat.clone();
        self.handle.spawn(async move {
            match intake.submit(CLIENT_ID, &chat, action).await {
                Ok(seq) => tracing::info!(
                    session,
                    chat,
                    seq,
                    "unattendedPolicy answered an unclaimed obligation"
                ),
                Err(error) => tracing::warn!(
                    session,
                    chat,
                    %error,
                    "unattendedPolicy: the answer was refused"
                ),
            }
        });
    }
}

/// Turns subscription changes into claims; holds the contribution weakly (the tracker
/// outlives it).
struct ClaimListener(Weak<Shared>);

impl SubscriptionListener for ClaimListener {
    fn changed(&self, change: &SubscriptionChange) {
        if let Some(shared) = self.0.upgrade() {
            shared.subscription_changed(change);
        }
    }
}

impl Contribution for UnattendedPolicyContribution {
    const ID: &'static str = "unattendedPolicy";
    const ORDER: i32 = 250;
    const HOOKS: HookSet = HookSet::of(&[Hook::DidDispatchAction]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Self::from_services(services)
    }
}

impl ChatContribution for UnattendedPolicyContribution {
    fn on_did_dispatch_action(&self, action: &DispatchedAction<'_>) -> HookResult {
        // A rejected envelope never reduced; anything else the engine does not read is skipped
        // before any lock or state read.
        if action.rejection_reason.is_some() {
            return Ok(());
        }
        if matches!(action.action, StateAction::SessionConfigChanged(_)) {
            if let Some(session) = action.session_channel() {
                self.shared.config_changed(session);
            }
            return Ok(());
        }
        if !feeds_engine(action.action) {
            return Ok(());
        }
        let queue_change = matches!(
            action.action,
            StateAction::SessionInputNeededSet(_) | StateAction::SessionInputNeededRemoved(_)
        );
        self.shared.observe(action, queue_change);
        Ok(())
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
