//! `notifications` (order 900, `onDidDispatchAction`): tells the user, through the
//! [`Notifier`] (a command, a webhook), when a session needs them.
//!
//! | Event | When |
//! |---|---|
//! | `needsInput` | a confirmation, input request, authentication or client tool of the session is still in its `inputNeeded` list [`NotificationSettings::input_after`] after it appeared — whether or not a client claims it (a window can be open with nobody at it); one the unattended policy answered in the meantime is gone from the list, so it is not told |
//! | `turnEnded` | a turn of a chat that is not a subagent's ended (completed, failed or cancelled) after running at least [`NotificationSettings::turn_after`] (the duration the turn's terminal action carries) |
//! | `budgetWarning` | the session's spend (`agenthost.costUsd` on its `_meta`) reached 80 % of its budget (`agenthost.budgetUsd`), once per budget value |
//! | `budgetSpent` | a turn ended with a `budgetSpent` error (the budget stopped it) |
//! | `agentCrashed` | a turn ended with a `providerExited` error (the agent's process died) |
//!
//! Each notification names the session, the chat, the session's title and the event, with a
//! one-line summary; no prompt, tool input or token. Notifications of one kind for one session
//! closer together than [`NotificationSettings::debounce`] are dropped (logged at debug).
//!
//! The central decision: **the observer never waits.** A needs-input check is a timer task on
//! the tokio clock (so the delay is tested with a paused clock) that looks at the session's
//! list again when it fires; delivery is the notifier's, which never blocks either.
#![deny(missing_docs)]

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use agenthost_dispatcher::{
    ChatContribution, Contribution, ContributionContext, DispatchedAction, Hook, HookResult,
    HookSet, MissingService, ServiceRegistry,
};
use agenthost_protocol::ahp_types::state::{ErrorInfo, SessionInputRequest};
use agenthost_protocol::error_info::{BUDGET_SPENT, PROVIDER_EXITED};
use agenthost_protocol::usage::{self, BUDGET_USD, Cost};
use agenthost_protocol::{ChatUri, SessionUri, StateAction};
use agenthost_reducers::projection::{entry_chat, entry_id};
use agenthost_services::{
    HostState, Notification, NotificationKind, NotificationSettings, Notifier, now_iso,
};

/// The share of a budget whose spend is warned of.
const WARN_AT: f64 = 0.8;

/// The `notifications` contribution. Register it with
/// `dispatcher.register::<Notifications>()`; it needs `dyn HostState` and `dyn Notifier` in the
/// registry, and takes its delays from the [`NotificationSettings`] there (the defaults when
/// none is registered).
pub struct Notifications {
    inner: Arc<Inner>,
}

struct Inner {
    host: Arc<dyn HostState>,
    notifier: Arc<dyn Notifier>,
    settings: NotificationSettings,
    state: Mutex<Book>,
}

/// What the contribution remembers.
#[derive(Default)]
struct Book {
    /// When each kind was last sent, per session.
    sent: HashMap<(String, NotificationKind), tokio::time::Instant>,
    /// Input entries with a timer running, per session.
    waiting: HashSet<(String, String)>,
    /// The budget each session was warned at.
    warned: HashMap<String, f64>,
}

impl std::fmt::Debug for Notifications {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifications")
            .field("settings", &self.inner.settings)
            .finish_non_exhaustive()
    }
}

impl Notifications {
    /// Reads host state through `host`, delivers through `notifier`, waits as `settings` say.
    pub fn new(
        host: Arc<dyn HostState>,
        notifier: Arc<dyn Notifier>,
        settings: NotificationSettings,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                host,
                notifier,
                settings,
                state: Mutex::new(Book::default()),
            }),
        }
    }

    /// Resolves its services from `services`.
    pub fn from_services(services: &ServiceRegistry) -> Result<Self, MissingService> {
        let settings = services
            .get::<NotificationSettings>()
            .map(|settings| *settings)
            .unwrap_or_default();
        Ok(Self::new(
            services.get::<dyn HostState>()?,
            services.get::<dyn Notifier>()?,
            settings,
        ))
    }
}

impl Inner {
    fn book(&self) -> MutexGuard<'_, Book> {
        // Single insertions and removals: a poisoned lock holds consistent maps.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends `kind` for `session` unless one was sent within the debounce window.
    fn send(&self, kind: NotificationKind, session: &str, chat: Option<&str>, summary: String) {
        let now = tokio::time::Instant::now();
        {
            let mut book = self.book();
            let key = (session.to_owned(), kind);
            if let Some(last) = book.sent.get(&key)
                && now.duration_since(*last) < self.settings.debounce
            {
                tracing::debug!(session, event = kind.as_str(), "notifications: debounced");
                return;
            }
            book.sent.insert(key, now);
        }
        let title = self
            .host
            .session(session)
            .map(|state| state.title)
            .unwrap_or_default();
        tracing::debug!(session, event = kind.as_str(), summary, "notifying");
        self.notifier.notify(Notification {
            event: kind,
            session: session.to_owned(),
            chat: chat.map(str::to_owned),
            title,
            summary,
            at: now_iso(),
        });
    }

    /// An entry joined `session`'s `inputNeeded` list: a timer checks it is still there later.
    fn input_needed(self: &Arc<Self>, session: &SessionUri, entry: &SessionInputRequest) {
        let Some(id) = entry_id(entry).map(str::to_owned) else {
            return;
        };
        let key = (session.to_string(), id.clone());
        if !self.book().waiting.insert(key.clone()) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.book().waiting.remove(&key);
            return;
        };
        let chat = entry_chat(entry).map(str::to_owned);
        let summary = waiting_summary(entry);
        let inner = Arc::clone(self);
        let delay = self.settings.input_after;
        runtime.spawn(async move {
            tokio::time::sleep(delay).await;
            inner.book().waiting.remove(&key);
            let (session, id) = key;
            let still = inner
                .host
                .session_input_needed(&session)
                .is_some_and(|list| list.iter().any(|e| entry_id(e) == Some(id.as_str())));
            if still {
                let summary = format!("{summary} for {}", spoken(delay));
                inner.send(
                    NotificationKind::NeedsInput,
                    &session,
                    chat.as_deref(),
                    summary,
                );
            }
        });
    }

    /// A turn of `chat` ended after `duration_ms`, with `error` when it failed.
    fn turn_ended(
        &self,
        session: &SessionUri,
        chat: &ChatUri,
        duration_ms: i64,
        outcome: Outcome<'_>,
    ) {
        if matches!(chat.subagent_parent(), Ok(Some(_))) {
            return;
        }
        let took = Duration::from_millis(u64::try_from(duration_ms).unwrap_or(0));
        let (kind, summary) = match outcome {
            Outcome::Failed(error) if error.error_type == BUDGET_SPENT => {
                (NotificationKind::BudgetSpent, one_line(&error.message))
            }
            Outcome::Failed(error) if error.error_type == PROVIDER_EXITED => (
                NotificationKind::AgentCrashed,
                format!("The agent crashed: {}", one_line(&error.message)),
            ),
            _ if took < self.settings.turn_after => return,
            Outcome::Completed => (
                NotificationKind::TurnEnded,
                format!("The turn finished after {}", spoken(took)),
            ),
            Outcome::Cancelled => (
                NotificationKind::TurnEnded,
                format!("The turn was cancelled after {}", spoken(took)),
            ),
            Outcome::Failed(error) => (
                NotificationKind::TurnEnded,
                format!(
                    "The turn failed after {}: {}",
                    spoken(took),
                    one_line(&error.message)
                ),
            ),
        };
        self.send(kind, session.as_str(), Some(chat.as_str()), summary);
    }

    /// The session's `_meta` changed: 80 % of its budget spent is told once per budget.
    fn spend_changed(&self, session: &SessionUri) {
        let Some(meta) = self.host.session(session.as_str()).and_then(|s| s.meta) else {
            return;
        };
        let budget = meta.get(BUDGET_USD).and_then(|b| b.as_f64());
        let (Some(budget), Cost::Usd { amount, .. }) = (budget, usage::cost(Some(&meta))) else {
            return;
        };
        if amount < budget * WARN_AT || amount >= budget {
            return;
        }
        let first = self.book().warned.insert(session.to_string(), budget) != Some(budget);
        if first {
            let summary = format!(
                "The session has spent {} of its {} budget",
                dollars(amount),
                dollars(budget)
            );
            self.send(
                NotificationKind::BudgetWarning,
                session.as_str(),
                None,
                summary,
            );
        }
    }
}

/// How a turn ended.
enum Outcome<'a> {
    Completed,
    Cancelled,
    Failed(&'a ErrorInfo),
}

/// What an `inputNeeded` entry waits for, in words (no tool input: it may hold anything).
fn waiting_summary(entry: &SessionInputRequest) -> String {
    match entry {
        SessionInputRequest::ToolConfirmation(_) => "A tool call has waited for a confirmation",
        SessionInputRequest::ChatInput(_) => "A question has waited for an answer",
        SessionInputRequest::ToolClientExecution(_) => "A client tool has waited to run",
        SessionInputRequest::ToolAuthentication(_) => "A tool has waited for a sign-in",
        SessionInputRequest::Unknown(_) => "The session has waited for input",
    }
    .to_owned()
}

/// The first line of `text`, at most 200 characters.
fn one_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

/// `45s`, `3m 12s`, `1h 2m`, `250ms`.
fn spoken(duration: Duration) -> String {
    let seconds = duration.as_secs();
    match seconds {
        0 => format!("{}ms", duration.as_millis()),
        1..60 => format!("{seconds}s"),
        60..3600 => format!("{}m {}s", seconds / 60, seconds % 60),
        _ => format!("{}h {}m", seconds / 3600, seconds % 3600 / 60),
    }
}

fn dollars(amount: f64) -> String {
    Cost::Usd {
        amount,
        complete: true,
    }
    .to_string()
}

impl Contribution for Notifications {
    const ID: &'static str = "notifications";
    const ORDER: i32 = 900;
    const HOOKS: HookSet = HookSet::of(&[Hook::DidDispatchAction]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Self::from_services(services)
    }
}

impl ChatContribution for Notifications {
    fn on_did_dispatch_action(&self, action: &DispatchedAction<'_>) -> HookResult {
        if action.rejection_reason.is_some() {
            return Ok(());
        }
        let Some(session) = action.session else {
            return Ok(());
        };
        let inner = &self.inner;
        match (action.action, action.chat) {
            (StateAction::SessionInputNeededSet(set), None) => {
                inner.input_needed(session, &set.request);
            }
            (StateAction::SessionMetaChanged(_), None) => inner.spend_changed(session),
            (StateAction::ChatTurnComplete(a), Some(chat)) => {
                inner.turn_ended(session, chat, a.duration, Outcome::Completed);
            }
            (StateAction::ChatTurnCancelled(a), Some(chat)) => {
                inner.turn_ended(session, chat, a.duration, Outcome::Cancelled);
            }
            (StateAction::ChatError(a), Some(chat)) => {
                inner.turn_ended(session, chat, a.duration, Outcome::Failed(&a.part.error));
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
