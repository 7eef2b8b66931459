//! `clientDeparture` (order 260, `onDidDispatchAction`): when a client leaves a session, the
//! host fails each of that client's running tool calls, so no agent waits forever for a tool
//! whose only runner is gone (AHP: an active client that leaves is removed with
//! `session/activeClientRemoved`, and each of its running tool calls fails). **Always on**: it
//! answers nothing a user could still answer.
//!
//! The central decision: **presence is a live subscription, and the queue says what is
//! running.** A client is *present* in a session while one of its connections (the
//! [`SubscriptionTracker`] knows which client each connection
//! [identified](SubscriptionTracker::identified) as) is subscribed to the session channel or
//! to one of its chats. A client's running tool calls are exactly the session's
//! `toolClientExecution` entries addressed to its id — the aggregated queue covers subagent
//! chats too — so the contribution never walks chat state.
//!
//! | Input | Effect |
//! |---|---|
//! | a connection of client C disconnects while subscribed to session S (or its chats), C an active client of S | after the grace window, unless C is present in S again (it reconnected and resubscribed): C *departs* S |
//! | a connection of C unsubscribes from S or one of its chats and C is no longer present in S | C departs S at once (it chose to leave) |
//! | `session/inputNeededSet` of a `toolClientExecution` for C, and C is not an active client of S | that call is failed at once |
//! | the same, C is active but not present | the grace window starts for C in S (the host restarted, or C never subscribed) |
//! | C departs S | `session/activeClientRemoved {clientId: C}`, then every `toolClientExecution` entry of S for C is failed |
//!
//! A failed call is `chat/toolCallComplete { result: { success: false, pastTenseMessage:
//! "Couldn't run <display name>", error: { message, code: "clientUnavailable" } } }`
//! ([`UNAVAILABLE`]), valid from `running` and `pending-confirmation` alike. Both actions are
//! submitted through the [`ClientActionIntake`] **as client C**: only the owning client may
//! complete its call (validation), and the accepted completion then reaches the agent through
//! the host's client-action path like the client's own would have. Submission happens on a
//! spawned task, never inside the hook or a listener (it re-enters the dispatcher); a refusal
//! (the call finished meanwhile) is logged at debug level.
//!
//! **Grace window.** The root configuration key [`GRACE_KEY`] in milliseconds
//! (`agent-host serve --client-grace`), else [`DEFAULT_GRACE`]; read when a window starts. A
//! window already running for (S, C) is not restarted: the first departure's deadline holds.
//!
//! **Bounds.** One timer per (session, client) at most, forgotten when it fires; nothing is
//! kept per tool call.
#![deny(missing_docs)]

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use agenthost_dispatcher::{
    ChatContribution, Contribution, ContributionContext, DispatchedAction, Hook, HookResult,
    HookSet, MissingService, ServiceRegistry,
};
use agenthost_protocol::ahp_types::actions::{
    ChatToolCallCompleteAction, SessionActiveClientRemovedAction,
};
use agenthost_protocol::state::{
    SessionInputRequest, SessionToolClientExecutionRequest, ToolCallResult,
};
use agenthost_protocol::{ChatUri, SessionUri, StateAction, StringOrMarkdown};
use agenthost_services::{
    ClientActionIntake, Configuration, HostState, ListenerId, SubscriptionChange,
    SubscriptionListener, SubscriptionTracker,
};
use serde_json::json;
use tokio::runtime::Handle;

/// The root configuration key of the grace window, in milliseconds.
pub const GRACE_KEY: &str = "clientGraceMs";
/// How long a disconnected client has to come back before it departs.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(5);
/// The `error.code` of a call failed because its client is gone.
pub const UNAVAILABLE: &str = "clientUnavailable";

/// The `clientDeparture` contribution. It needs `dyn HostState`, `dyn Configuration`,
/// `dyn SubscriptionTracker` and `dyn ClientActionIntake` in the registry.
pub struct ClientDeparture {
    shared: Arc<Shared>,
    listener: ListenerId,
}

impl std::fmt::Debug for ClientDeparture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientDeparture")
            .field("windows", &self.shared.windows().len())
            .finish_non_exhaustive()
    }
}

struct Shared {
    host: Arc<dyn HostState>,
    config: Arc<dyn Configuration>,
    subscriptions: Arc<dyn SubscriptionTracker>,
    intake: Arc<dyn ClientActionIntake>,
    /// The runtime the contribution was created on, for work started off it.
    handle: Option<Handle>,
    /// Running grace windows: (session, client) → the window's generation.
    windows: Mutex<HashMap<(String, String), u64>>,
    next_window: AtomicU64,
}

impl ClientDeparture {
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
            windows: Mutex::new(HashMap::new()),
            next_window: AtomicU64::new(0),
        });
        let listener = subscriptions.listen(Arc::new(Listener(Arc::downgrade(&shared))));
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

    /// Whether a grace window runs for `client` in `session` (diagnostics, tests).
    pub fn waiting_for(&self, session: &str, client: &str) -> bool {
        self.shared
            .windows()
            .contains_key(&(session.to_owned(), client.to_owned()))
    }
}

impl Drop for ClientDeparture {
    fn drop(&mut self) {
        self.shared.subscriptions.unlisten(self.listener);
    }
}

/// The failed result of a client tool call whose client is gone.
pub fn unavailable_result(display_name: &str, client: &str) -> ToolCallResult {
    let message = format!(
        "{display_name} was to run on client {client:?}, which left the session before it \
         finished."
    );
    ToolCallResult {
        success: false,
        past_tense_message: StringOrMarkdown::from(format!("Couldn't run {display_name}")),
        content: None,
        structured_content: None,
        error: Some(json!({ "message": message, "code": UNAVAILABLE })),
    }
}

impl Shared {
    fn windows(&self) -> MutexGuard<'_, HashMap<(String, String), u64>> {
        // Every mutation completes before the guard drops: a poisoned map is still valid.
        self.windows.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn grace(&self) -> Duration {
        self.config
            .root_value(GRACE_KEY)
            .and_then(|value| value.as_u64())
            .map_or(DEFAULT_GRACE, Duration::from_millis)
    }

    fn runtime(&self) -> Option<Handle> {
        Handle::try_current().ok().or_else(|| self.handle.clone())
    }

    /// The session a channel belongs to (the session itself, or a chat's owner).
    fn session_of(&self, channel: &str) -> Option<String> {
        if self.host.session(channel).is_some() {
            return Some(channel.to_owned());
        }
        self.host.chat_session(channel).map(SessionUri::into_string)
    }

    fn is_active(&self, session: &str, client: &str) -> bool {
        self.host.session(session).is_some_and(|state| {
            state
                .active_clients
                .iter()
                .any(|active| active.client_id == client)
        })
    }

    /// Whether a live connection of `client` is subscribed to `session` or one of its chats.
    fn is_present(&self, session: &str, client: &str) -> bool {
        std::iter::once(session.to_owned())
            .chain(
                self.host
                    .session_chats(session)
                    .into_iter()
                    .map(ChatUri::into_string),
            )
            .flat_map(|channel| self.subscriptions.subscribers(&channel))
            .any(|connection| self.subscriptions.client_of(&connection).as_deref() == Some(client))
    }

    /// Starts the grace window of `client` in `session`, unless one runs already.
    fn start_window(self: &Arc<Self>, session: &str, client: &str) {
        let Some(handle) = self.runtime() else {
            tracing::warn!(session, client, "clientDeparture: no Tokio runtime");
            return;
        };
        let generation = {
            let mut windows = self.windows();
            let key = (session.to_owned(), client.to_owned());
            if windows.contains_key(&key) {
                return;
            }
            let generation = self.next_window.fetch_add(1, Ordering::Relaxed) + 1;
            windows.insert(key, generation);
            generation
        };
        let grace = self.grace();
        tracing::debug!(
            session,
            client,
            ?grace,
            "clientDeparture: grace window started"
        );
        let weak = Arc::downgrade(self);
        let (session, client) = (session.to_owned(), client.to_owned());
        handle.spawn(async move {
            tokio::time::sleep(grace).await;
            if let Some(shared) = weak.upgrade() {
                shared.window_ended(&session, &client, generation);
            }
        });
    }

    fn window_ended(&self, session: &str, client: &str, generation: u64) {
        {
            let mut windows = self.windows();
            let key = (session.to_owned(), client.to_owned());
            if windows.get(&key) != Some(&generation) {
                return;
            }
            windows.remove(&key);
        }
        if self.is_active(session, client) && !self.is_present(session, client) {
            self.depart(session, client);
        } else {
            tracing::debug!(session, client, "clientDeparture: the client came back");
        }
    }

    /// `client` left `session`: it is no longer an active client, and each of its running
    /// tool calls is failed.
    fn depart(&self, session: &str, client: &str) {
        self.windows()
            .remove(&(session.to_owned(), client.to_owned()));
        let running: Vec<SessionToolClientExecutionRequest> = self
            .host
            .session_input_needed(session)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|entry| match entry {
                SessionInputRequest::ToolClientExecution(e) if e.client_id == client => Some(e),
                _ => None,
            })
            .collect();
        tracing::info!(
            session,
            client,
            running = running.len(),
            "clientDeparture: the client left the session"
        );
        let removal = SessionActiveClientRemovedAction {
            client_id: client.to_owned(),
        };
        let mut actions = vec![(
            session.to_owned(),
            StateAction::SessionActiveClientRemoved(removal),
        )];
        actions.extend(running.iter().map(failure));
        self.submit(client, actions);
    }

    /// Submits `actions` as `client`, in order, on one spawned task.
    fn submit(&self, client: &str, actions: Vec<(String, StateAction)>) {
        let Some(handle) = self.runtime() else {
            tracing::warn!(client, "clientDeparture: no Tokio runtime");
            return;
        };
        let intake = Arc::clone(&self.intake);
        let client = client.to_owned();
        handle.spawn(async move {
            for (channel, action) in actions {
                match intake.submit(&client, &channel, action).await {
                    Ok(seq) => {
                        tracing::debug!(channel, client, seq, "clientDeparture: submitted");
                    }
                    Err(error) => {
                        tracing::debug!(channel, client, %error, "clientDeparture: refused");
                    }
                }
            }
        });
    }

    fn subscription_changed(self: &Arc<Self>, change: &SubscriptionChange) {
        match change {
            SubscriptionChange::Subscribed { .. } => {}
            SubscriptionChange::Unsubscribed {
                connection,
                channel,
            } => {
                let Some(client) = self.subscriptions.client_of(connection) else {
                    return;
                };
                let Some(session) = self.session_of(channel) else {
                    return;
                };
                if self.is_active(&session, &client) && !self.is_present(&session, &client) {
                    self.depart(&session, &client);
                }
            }
            SubscriptionChange::Disconnected {
                client: Some(client),
                channels,
                ..
            } => {
                let sessions: BTreeSet<String> = channels
                    .iter()
                    .filter_map(|channel| self.session_of(channel))
                    .collect();
                for session in sessions {
                    if self.is_active(&session, client) && !self.is_present(&session, client) {
                        self.start_window(&session, client);
                    }
                }
            }
            SubscriptionChange::Disconnected { client: None, .. } => {}
        }
    }

    /// A client execution entry was listed: its client must be able to run it.
    fn execution_listed(
        self: &Arc<Self>,
        session: &str,
        entry: &SessionToolClientExecutionRequest,
    ) {
        let client = entry.client_id.as_str();
        if !self.is_active(session, client) {
            tracing::info!(
                session,
                client,
                tool_call = entry.tool_call.tool_call_id,
                "clientDeparture: a tool call for a client that is not in the session"
            );
            self.submit(client, vec![failure(entry)]);
        } else if !self.is_present(session, client) {
            self.start_window(session, client);
        }
    }
}

/// The failing completion of one running call of a client that is gone, on its chat.
fn failure(entry: &SessionToolClientExecutionRequest) -> (String, StateAction) {
    let action = ChatToolCallCompleteAction {
        turn_id: entry.turn_id.clone(),
        tool_call_id: entry.tool_call.tool_call_id.clone(),
        meta: None,
        result: unavailable_result(&entry.tool_call.display_name, &entry.client_id),
        requires_result_confirmation: None,
    };
    (
        entry.chat.clone(),
        StateAction::ChatToolCallComplete(action),
    )
}

/// Subscription changes, holding the contribution weakly (the tracker outlives it).
struct Listener(Weak<Shared>);

impl SubscriptionListener for Listener {
    fn changed(&self, change: &SubscriptionChange) {
        if let Some(shared) = self.0.upgrade() {
            shared.subscription_changed(change);
        }
    }
}

impl Contribution for ClientDeparture {
    const ID: &'static str = "clientDeparture";
    const ORDER: i32 = 260;
    const HOOKS: HookSet = HookSet::of(&[Hook::DidDispatchAction]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Self::from_services(services)
    }
}

impl ChatContribution for ClientDeparture {
    fn on_did_dispatch_action(&self, action: &DispatchedAction<'_>) -> HookResult {
        if action.rejection_reason.is_some() {
            return Ok(());
        }
        if let StateAction::SessionInputNeededSet(set) = action.action
            && let SessionInputRequest::ToolClientExecution(entry) = &set.request
            && let Some(session) = action.session
        {
            self.shared.execution_listed(session, entry);
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
