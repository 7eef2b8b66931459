//! `sessionLimits` (order 120, `onIncomingRequest` + `onDidDispatchAction`): a session's budget
//! and a turn's tool-call cap, kept whether or not anybody is connected.
//!
//! Two session config properties, both session-mutable (`session/configChanged`) and kept
//! across restarts with the session's other values:
//!
//! - **`budgetUsd`** — US dollars the session may spend, by the host's API-equivalent estimate
//!   (the `agenthost.costUsd` total the `turnCost` contribution keeps on the session's `_meta`);
//!   `null` (the default, or `serve --default-budget-usd`) for none. When the total reaches it,
//!   every running turn of the session is stopped the way a cancel stops it and ends with a
//!   `chat/error` (type [`BUDGET_SPENT`]) saying the budget and what was spent; new turns are
//!   refused, naming the budget, until it is raised. A model without a known price cannot be
//!   kept within a budget: a turn asking for one is refused, and a turn whose usage turns out
//!   unpriced is stopped ([`BUDGET_UNPRICED`]). The session's `_meta` carries the limit as
//!   `agenthost.budgetUsd` beside the spend, so clients can show both.
//! - **`maxToolCallsPerTurn`** — the most tool calls one turn may start (its subagents' calls
//!   count for it); `null` for no cap. The call over the cap stops that turn with a `chat/error`
//!   ([`TOO_MANY_TOOL_CALLS`]); later turns are not affected.
//!
//! A value that is neither `null` nor a number ≥ 0 (a whole number for the cap) refuses the
//! session's turns with [`INVALID_LIMIT`], naming the property and the value.
//!
//! The central decision: **limits act on what host state says, never on a contribution's own
//! bookkeeping of money.** The spend is read from the session's `_meta` after each change of it
//! (`session/metaChanged`), so this contribution and `turnCost` stay independent; stopping goes
//! through [`TurnStopper`] (the host's own cancel path), asked once per turn.
#![deny(missing_docs)]

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use agenthost_dispatcher::{
    ChatContribution, Contribution, ContributionContext, DispatchedAction, Disposition, Hook,
    HookResult, HookSet, IncomingRequest, MissingService, RejectStage, ServiceRegistry,
};
use agenthost_protocol::actions::SessionMetaChangedAction;
use agenthost_protocol::ahp_types::state::{
    ChatOrigin, ErrorInfo, SessionConfigPropertySchema, SessionState,
};
use agenthost_protocol::error_info::error_info;
use agenthost_protocol::usage::{self, BUDGET_USD, Cost};
use agenthost_protocol::{ChatUri, SessionUri, StateAction};
use agenthost_services::prices::PriceTable;
use agenthost_services::{HostState, ServerDispatch, TurnStopper};
use serde_json::Value;

/// The session config property of the budget.
pub const BUDGET_KEY: &str = "budgetUsd";
/// The session config property of the tool-call cap.
pub const MAX_TOOL_CALLS_KEY: &str = "maxToolCallsPerTurn";

/// Error type of a turn stopped or refused because the session's budget is spent.
pub use agenthost_protocol::error_info::BUDGET_SPENT;
/// Error type of a turn stopped or refused because its model has no known price.
pub const BUDGET_UNPRICED: &str = "budgetUnpriced";
/// Error type of a turn stopped for starting more tool calls than its cap.
pub const TOO_MANY_TOOL_CALLS: &str = "tooManyToolCalls";
/// Error type of a turn refused because a limit's value is not valid.
pub const INVALID_LIMIT: &str = "invalidLimit";

/// The `budgetUsd` property of the session configuration schema.
pub fn budget_property() -> SessionConfigPropertySchema {
    number_property(
        "Budget (USD)",
        "US dollars this session may spend, by the host's API-equivalent estimate at list \
         prices. When the session's total reaches it, its running turns are stopped and new \
         turns are refused until it is raised. Empty: no budget. A model without a known price \
         cannot be used under a budget.",
    )
}

/// The `maxToolCallsPerTurn` property of the session configuration schema.
pub fn max_tool_calls_property() -> SessionConfigPropertySchema {
    number_property(
        "Tool calls per turn",
        "The most tool calls one turn may start (its subagents' calls included); the call over \
         it stops the turn. Empty: no cap.",
    )
}

fn number_property(title: &str, description: &str) -> SessionConfigPropertySchema {
    let mut property =
        agenthost_services::string_config_property(title, description, "", &[], true);
    property.r#type = "number".to_owned();
    property.default = Some(Value::Null);
    property
}

/// The initial values of the two properties: the host's default budget (none: `null`) and no
/// cap.
pub fn session_config_values(default_budget: Option<f64>) -> serde_json::Map<String, Value> {
    let mut values = serde_json::Map::new();
    values.insert(
        BUDGET_KEY.to_owned(),
        default_budget.map_or(Value::Null, Value::from),
    );
    values.insert(MAX_TOOL_CALLS_KEY.to_owned(), Value::Null);
    values
}

/// A session's limits, as its config says.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Limits {
    budget: Option<f64>,
    max_tool_calls: Option<u64>,
}

/// The limits of `session`, or the refusal of a value that is not one.
fn limits(session: &SessionState) -> Result<Limits, Box<ErrorInfo>> {
    let value = |key: &str| {
        session
            .config
            .as_ref()
            .and_then(|config| config.values.get(key))
            .filter(|value| !value.is_null())
    };
    let invalid = |key: &str, value: &Value, what: &str| {
        Box::new(error_info(
            INVALID_LIMIT,
            format!(
                "the session's {key} must be {what} or empty, not {value}: change it \
                 (session/configChanged) to send turns"
            ),
        ))
    };
    let budget = match value(BUDGET_KEY) {
        None => None,
        Some(value) => match value.as_f64() {
            Some(budget) if budget.is_finite() && budget >= 0.0 => Some(budget),
            _ => return Err(invalid(BUDGET_KEY, value, "a number of US dollars ≥ 0")),
        },
    };
    let max_tool_calls = match value(MAX_TOOL_CALLS_KEY) {
        None => None,
        Some(value) => match value.as_u64() {
            Some(cap) => Some(cap),
            None => return Err(invalid(MAX_TOOL_CALLS_KEY, value, "a whole number ≥ 0")),
        },
    };
    Ok(Limits {
        budget,
        max_tool_calls,
    })
}

/// `$1.50` / `$0.0123`.
fn dollars(amount: f64) -> String {
    Cost::Usd {
        amount,
        complete: true,
    }
    .to_string()
}

fn budget_spent(budget: f64, spent: f64) -> ErrorInfo {
    error_info(
        BUDGET_SPENT,
        format!(
            "The session's budget of {} is spent: {} so far (an API-equivalent estimate). \
             Raise budgetUsd to continue.",
            dollars(budget),
            dollars(spent)
        ),
    )
}

fn unpriced(budget: f64, model: &str) -> ErrorInfo {
    error_info(
        BUDGET_UNPRICED,
        format!(
            "The session has a budget of {}, but model {model} has no known price, so its \
             spend cannot be counted. Add its price (serve --prices) or remove budgetUsd.",
            dollars(budget)
        ),
    )
}

/// The `sessionLimits` contribution. Register it with `dispatcher.register::<SessionLimits>()`;
/// it needs `dyn HostState`, `dyn ServerDispatch` and `dyn TurnStopper` in the registry, and
/// uses the [`PriceTable`] there (the built-in one when none is registered).
pub struct SessionLimits {
    host: Arc<dyn HostState>,
    dispatch: Arc<dyn ServerDispatch>,
    stopper: Arc<dyn TurnStopper>,
    prices: Arc<PriceTable>,
    turns: Mutex<Turns>,
}

/// What is counted per running turn.
#[derive(Debug, Default)]
struct Turns {
    /// Tool calls started, per root chat and turn.
    tool_calls: HashMap<(String, String), u64>,
    /// Turns already asked to stop.
    stopping: HashSet<(String, String)>,
}

impl std::fmt::Debug for SessionLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionLimits").finish_non_exhaustive()
    }
}

impl SessionLimits {
    /// Reads host state through `host`, writes the limit into the session's `_meta` through
    /// `dispatch`, stops turns through `stopper`, checks models against `prices`.
    pub fn new(
        host: Arc<dyn HostState>,
        dispatch: Arc<dyn ServerDispatch>,
        stopper: Arc<dyn TurnStopper>,
        prices: Arc<PriceTable>,
    ) -> Self {
        Self {
            host,
            dispatch,
            stopper,
            prices,
            turns: Mutex::new(Turns::default()),
        }
    }

    /// Resolves its services from `services`.
    pub fn from_services(services: &ServiceRegistry) -> Result<Self, MissingService> {
        let prices = services
            .get::<PriceTable>()
            .unwrap_or_else(|_| Arc::new(PriceTable::builtin()));
        Ok(Self::new(
            services.get::<dyn HostState>()?,
            services.get::<dyn ServerDispatch>()?,
            services.get::<dyn TurnStopper>()?,
            prices,
        ))
    }

    fn turns(&self) -> MutexGuard<'_, Turns> {
        // Single insertions and removals: a poisoned lock holds consistent sets.
        self.turns.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `session`'s limits; none when it is gone or a value is not valid (the gate refuses its
    /// turns then).
    fn valid_limits(&self, session: &SessionUri) -> Limits {
        self.host
            .session(session.as_str())
            .and_then(|state| limits(&state).ok())
            .unwrap_or_default()
    }

    /// The chat and running turn `chat`'s work counts for: its own, or for a subagent's chat
    /// the parent chat's.
    fn root_turn(&self, chat: &ChatUri) -> Option<(ChatUri, String)> {
        let state = self.host.chat(chat.as_str())?;
        if let Some(ChatOrigin::Tool { chat: parent, .. }) = &state.origin {
            let parent = ChatUri::parse(parent).ok()?;
            let turn = self.host.chat(parent.as_str())?.active_turn?.id;
            return Some((parent, turn));
        }
        Some((chat.clone(), state.active_turn?.id))
    }

    /// Stops `chat`'s turn `turn_id` with `error`, once.
    fn stop(&self, chat: &ChatUri, turn_id: &str, error: ErrorInfo) {
        let first = self
            .turns()
            .stopping
            .insert((chat.to_string(), turn_id.to_owned()));
        if first {
            tracing::info!(chat = %chat, turn_id, reason = error.message, "sessionLimits: stopping the turn");
            self.stopper.stop_turn(chat, turn_id, error);
        }
    }

    /// After the session's spend or limits changed: its running turns are stopped when the
    /// budget is spent, and the limit is shown on its `_meta`.
    fn check_budget(&self, session: &SessionUri) {
        let Some(state) = self.host.session(session.as_str()) else {
            return;
        };
        let Ok(limits) = limits(&state) else {
            return;
        };
        self.show_budget(session, &state, limits.budget);
        let (Some(budget), Cost::Usd { amount: spent, .. }) =
            (limits.budget, usage::cost(state.meta.as_ref()))
        else {
            return;
        };
        if spent < budget {
            return;
        }
        for chat in self.host.session_chats(session.as_str()) {
            let Some(turn) = self.host.chat(chat.as_str()).and_then(|c| c.active_turn) else {
                continue;
            };
            if matches!(chat.subagent_parent(), Ok(Some(_))) {
                continue;
            }
            self.stop(&chat, &turn.id, budget_spent(budget, spent));
        }
    }

    /// Puts the budget on the session's `_meta` (`agenthost.budgetUsd`) when it differs.
    fn show_budget(&self, session: &SessionUri, state: &SessionState, budget: Option<f64>) {
        let shown = state.meta.as_ref().and_then(|m| m.get(BUDGET_USD)).cloned();
        let wanted = budget.map(Value::from);
        if shown == wanted {
            return;
        }
        let mut meta = state.meta.clone().unwrap_or_default();
        match wanted {
            Some(budget) => meta.insert(BUDGET_USD.to_owned(), budget),
            None => meta.remove(BUDGET_USD),
        };
        let action = StateAction::SessionMetaChanged(SessionMetaChangedAction { meta: Some(meta) });
        if let Err(error) = self.dispatch.dispatch(session.as_str(), action) {
            tracing::debug!(session = %session, %error, "sessionLimits: the budget not shown");
        }
    }

    /// A costed usage report that some call had no price: under a budget, its turn stops.
    fn check_priced(&self, session: &SessionUri, chat: &ChatUri, report: &StateAction) {
        let StateAction::ChatUsage(report) = report else {
            return;
        };
        if !matches!(
            usage::cost(report.usage.meta.as_ref()),
            Cost::Unknown
                | Cost::Usd {
                    complete: false,
                    ..
                }
        ) {
            return;
        }
        let budget = self.valid_limits(session).budget;
        if let (Some(budget), Some((root, turn))) = (budget, self.root_turn(chat)) {
            let model = report.usage.model.as_deref().unwrap_or("(not reported)");
            self.stop(&root, &turn, unpriced(budget, model));
        }
    }

    /// A tool call started in `chat`: counted for its root turn, which stops past the cap.
    fn count_tool_call(&self, session: &SessionUri, chat: &ChatUri) {
        let Some((root, turn)) = self.root_turn(chat) else {
            return;
        };
        let count = {
            let mut turns = self.turns();
            let count = turns
                .tool_calls
                .entry((root.to_string(), turn.clone()))
                .or_default();
            *count += 1;
            *count
        };
        let cap = self.valid_limits(session).max_tool_calls;
        if let Some(cap) = cap.filter(|cap| count > *cap) {
            let error = error_info(
                TOO_MANY_TOOL_CALLS,
                format!(
                    "The turn started {count} tool calls, over the session's \
                     maxToolCallsPerTurn of {cap}: it was stopped. The next turn may start \
                     {cap} again."
                ),
            );
            self.stop(&root, &turn, error);
        }
    }

    /// A turn ended: what was counted for it goes.
    fn forget(&self, chat: &ChatUri, turn_id: &str) {
        let key = (chat.to_string(), turn_id.to_owned());
        let mut turns = self.turns();
        turns.tool_calls.remove(&key);
        turns.stopping.remove(&key);
    }
}

impl Contribution for SessionLimits {
    const ID: &'static str = "sessionLimits";
    const ORDER: i32 = 120;
    const HOOKS: HookSet = HookSet::of(&[Hook::IncomingRequest, Hook::DidDispatchAction]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Self::from_services(services)
    }
}

impl ChatContribution for SessionLimits {
    fn on_incoming_request(&self, request: &IncomingRequest) -> HookResult<Option<Disposition>> {
        let Some(session) = self.host.session(request.session.as_str()) else {
            // `turnAdmission` refuses a turn of an unknown session.
            return Ok(None);
        };
        let reject = |error| {
            Ok(Some(Disposition::Reject {
                error,
                stage: RejectStage::Validation,
            }))
        };
        let limits = match limits(&session) {
            Ok(limits) => limits,
            Err(error) => return reject(*error),
        };
        let Some(budget) = limits.budget else {
            return Ok(None);
        };
        if let Cost::Usd { amount, .. } = usage::cost(session.meta.as_ref())
            && amount >= budget
        {
            return reject(budget_spent(budget, amount));
        }
        if let Some(model) = &request.message.model
            && self.prices.get(&model.id).is_none()
        {
            return reject(unpriced(budget, &model.id));
        }
        Ok(None)
    }

    fn on_did_dispatch_action(&self, action: &DispatchedAction<'_>) -> HookResult {
        if action.rejection_reason.is_some() {
            return Ok(());
        }
        let Some(session) = action.session else {
            return Ok(());
        };
        match (action.action, action.chat) {
            (
                StateAction::SessionMetaChanged(_)
                | StateAction::SessionConfigChanged(_)
                | StateAction::SessionReady(_),
                None,
            ) => {
                self.check_budget(session);
            }
            (report @ StateAction::ChatUsage(_), Some(chat)) => {
                self.check_priced(session, chat, report);
            }
            (StateAction::ChatToolCallStart(_), Some(chat)) => {
                self.count_tool_call(session, chat);
            }
            (StateAction::ChatTurnComplete(a), Some(chat)) => self.forget(chat, &a.turn_id),
            (StateAction::ChatTurnCancelled(a), Some(chat)) => self.forget(chat, &a.turn_id),
            (StateAction::ChatError(a), Some(chat)) => self.forget(chat, &a.turn_id),
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
