//! `turnCost` (order 110, `onDidDispatchAction`): each turn's API-equivalent cost estimate,
//! from its model calls' token usage and the host's [`PriceTable`].
//!
//! The central decision: **cost is counted from token deltas, call by call.** A `chat/usage`
//! carries the turn's running totals (the providers' mapper makes it so); the contribution keeps
//! the totals it last saw per chat and turn, prices the difference on the report's model and
//! adds it up. So a turn that switches models mid-way is priced per call, a repeated report
//! adds nothing, and the running cost is known mid-turn (what a budget needs).
//!
//! What it writes, all with ordinary server actions and the session data store:
//!
//! - **The turn's usage** gets `agenthost.costUsd` (see `agenthost_protocol::usage`): the
//!   turn's own calls plus those of the subagents it started (a subagent chat's turn carries
//!   its own calls' cost as well). `null` when no call had a known price ("unknown", never 0);
//!   with `agenthost.costIncomplete: true` when some calls had none (a lower bound). It is a
//!   second `chat/usage` with the same token counts, so the reducers keep the figure with the
//!   turn, and the turn's stored usage (`persistedTurnUsage`, the stored turn) carries it
//!   across restarts.
//! - **The session's total**, `agenthost.costUsd` on the session's `_meta`
//!   (`session/metaChanged`, merged with the keys already there): the host restores it from
//!   the spend ledger, and each priced delta of any chat of the session adds to it. The
//!   session summary carries it.
//! - **The spend ledger** ([`SessionDataStore::set_turn_spend`]): each chat's turn with its own
//!   calls' cost and the time, for `agent-host sessions` (a cost column, `--since 7d`).
//!
//! An agent's own cost figure (Claude Code's `total_cost_usd`, kept as `agenthost.agentCostUsd`;
//! an ACP agent's `usage_update.cost`) is not used: it arrives only at a turn's end or counts a
//! whole session, in whichever currency, so it cannot drive a mid-turn budget, and one method
//! for every agent keeps totals comparable.
//!
//! It runs after `persistedTurnUsage` (order 100): that one stores the agent's report first and
//! this contribution's costed copy after it, so the stored usage is the costed one. The
//! observer never waits: ledger writes are queued ([`WriteQueue`]). Per-turn figures are
//! dropped when the turn ends.
#![deny(missing_docs)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use agenthost_dispatcher::{
    ChatContribution, Contribution, ContributionContext, DispatchedAction, Hook, HookResult,
    HookSet, MissingService, ServiceRegistry,
};
use agenthost_protocol::actions::{ChatUsageAction, SessionMetaChangedAction};
use agenthost_protocol::ahp_types::state::{ChatOrigin, SessionState, UsageInfo};
use agenthost_protocol::usage::{self, Cost};
use agenthost_protocol::{ChatUri, SessionUri, StateAction};
use agenthost_services::prices::{PriceTable, TokenCounts};
use agenthost_services::{
    HostState, ServerDispatch, SessionDataStore, TurnSpend, WriteQueue, now_iso,
};

/// The `turnCost` contribution. Register it with `dispatcher.register::<TurnCost>()`; it needs
/// `dyn HostState`, `dyn ServerDispatch` and `dyn SessionDataStore` in the registry, and uses
/// the [`PriceTable`] there (the built-in one when none is registered).
pub struct TurnCost {
    host: Arc<dyn HostState>,
    dispatch: Arc<dyn ServerDispatch>,
    data: Arc<dyn SessionDataStore>,
    prices: Arc<PriceTable>,
    turns: Mutex<HashMap<(String, String), TurnFigures>>,
    writes: Arc<WriteQueue>,
}

impl std::fmt::Debug for TurnCost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnCost").finish_non_exhaustive()
    }
}

/// Money added by a report: priced calls in dollars, and whether some calls had no price.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Spent {
    usd: f64,
    priced: bool,
    unpriced: bool,
}

impl Spent {
    fn add(&mut self, other: Spent) {
        self.usd += other.usd;
        self.priced |= other.priced;
        self.unpriced |= other.unpriced;
    }

    fn is_empty(&self) -> bool {
        !self.priced && !self.unpriced
    }

    /// What a cost recorded in `_meta` stands for.
    fn recorded(cost: Cost) -> Self {
        match cost {
            Cost::Absent => Self::default(),
            Cost::Unknown => Self {
                unpriced: true,
                ..Self::default()
            },
            Cost::Usd { amount, complete } => Self {
                usd: amount,
                priced: true,
                unpriced: !complete,
            },
        }
    }

    /// The cost as `_meta` holds it.
    fn cost(&self) -> Cost {
        match (self.priced, self.unpriced) {
            (false, false) => Cost::Absent,
            (false, true) => Cost::Unknown,
            (true, unpriced) => Cost::Usd {
                amount: self.usd,
                complete: !unpriced,
            },
        }
    }
}

/// What the contribution knows of one turn of one chat.
#[derive(Debug, Clone, Default)]
struct TurnFigures {
    /// The token totals last seen.
    tokens: TokenCounts,
    /// The turn's own calls.
    own: Spent,
    /// Its subagents' calls.
    subagents: Spent,
}

impl TurnFigures {
    fn total(&self) -> Spent {
        let mut total = self.own;
        total.add(self.subagents);
        total
    }
}

/// The token counts of `usage`, in the host's meanings.
fn counts(usage: &UsageInfo) -> TokenCounts {
    let count = |value: Option<i64>| value.and_then(|v| u64::try_from(v).ok()).unwrap_or(0);
    TokenCounts {
        input: count(usage.input_tokens),
        output: count(usage.output_tokens),
        cache_read: count(usage.cache_read_tokens),
        cache_write: usage::cache_write_tokens(usage).unwrap_or(0),
    }
}

impl TurnCost {
    /// Prices with `prices`; reads and writes host state through `host` / `dispatch`, the
    /// ledger through `data`.
    pub fn new(
        host: Arc<dyn HostState>,
        dispatch: Arc<dyn ServerDispatch>,
        data: Arc<dyn SessionDataStore>,
        prices: Arc<PriceTable>,
    ) -> Self {
        Self {
            host,
            dispatch,
            data,
            prices,
            turns: Mutex::new(HashMap::new()),
            writes: Arc::new(WriteQueue::new(<Self as Contribution>::ID)),
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
            services.get::<dyn SessionDataStore>()?,
            prices,
        ))
    }

    /// Waits until every ledger write queued so far has finished (or failed and been logged).
    pub async fn flush(&self) {
        self.writes.flush().await;
    }

    fn turns(&self) -> MutexGuard<'_, HashMap<(String, String), TurnFigures>> {
        // Entries are replaced whole: a poisoned lock still holds consistent figures.
        self.turns.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What the calls between `before` and `after` cost on `model`.
    fn price(&self, model: Option<&str>, before: &TokenCounts, after: &TokenCounts) -> Spent {
        let delta = after.since(before);
        if delta.is_empty() {
            return Spent::default();
        }
        match model.and_then(|model| self.prices.cost(model, &delta)) {
            Some(usd) => Spent {
                usd,
                priced: true,
                unpriced: false,
            },
            None => Spent {
                usd: 0.0,
                priced: false,
                unpriced: true,
            },
        }
    }

    /// A usage report on `chat`'s turn `turn_id`.
    fn on_usage(&self, session: &SessionUri, chat: &ChatUri, report: &ChatUsageAction) {
        let tokens = counts(&report.usage);
        let key = (chat.to_string(), report.turn_id.clone());
        let (added, total) = {
            let mut turns = self.turns();
            let figures = turns.entry(key).or_default();
            let added = self.price(report.usage.model.as_deref(), &figures.tokens, &tokens);
            figures.tokens = tokens;
            figures.own.add(added);
            (added, figures.clone())
        };
        self.show_turn_cost(chat, &report.turn_id, &report.usage, total.total());
        if added.is_empty() {
            return;
        }
        let Some(state) = self.host.session(session.as_str()) else {
            return;
        };
        self.record_spend(&state.provider, chat, &report.turn_id, total.own);
        self.add_to_session(session, state, added);
        if let Some(parent) = self.parent_turn(chat) {
            self.add_to_parent(&parent.0, &parent.1, added);
        }
    }

    /// Puts `spent` on the turn's usage unless it is there already (a report of this
    /// contribution's own, or one whose figure did not change).
    fn show_turn_cost(&self, chat: &ChatUri, turn_id: &str, usage: &UsageInfo, spent: Spent) {
        let cost = spent.cost();
        if cost == Cost::Absent || usage::cost(usage.meta.as_ref()) == rounded(cost) {
            return;
        }
        let mut usage = usage.clone();
        usage::set_cost(usage.meta.get_or_insert_with(Default::default), cost);
        let action = StateAction::ChatUsage(ChatUsageAction {
            turn_id: turn_id.to_owned(),
            usage,
            meta: None,
        });
        if let Err(error) = self.dispatch.dispatch(chat.as_str(), action) {
            tracing::debug!(chat = %chat, %error, "turnCost: the turn's cost not shown");
        }
    }

    /// The chat and active turn of the chat whose tool call started subagent chat `chat`.
    fn parent_turn(&self, chat: &ChatUri) -> Option<(ChatUri, String)> {
        if !matches!(chat.subagent_parent(), Ok(Some(_))) {
            return None;
        }
        let Some(ChatOrigin::Tool { chat: parent, .. }) = self.host.chat(chat.as_str())?.origin
        else {
            return None;
        };
        let parent = ChatUri::parse(&parent).ok()?;
        let turn = self.host.chat(parent.as_str())?.active_turn?.id;
        Some((parent, turn))
    }

    /// Adds a subagent's `added` cost to its parent's turn and shows the new figure there.
    fn add_to_parent(&self, parent: &ChatUri, turn_id: &str, added: Spent) {
        let total = {
            let mut turns = self.turns();
            let figures = turns
                .entry((parent.to_string(), turn_id.to_owned()))
                .or_default();
            figures.subagents.add(added);
            figures.total()
        };
        let usage = self
            .host
            .chat(parent.as_str())
            .and_then(|chat| chat.active_turn)
            .filter(|turn| turn.id == turn_id)
            .and_then(|turn| turn.usage)
            .unwrap_or_default();
        self.show_turn_cost(parent, turn_id, &usage, total);
    }

    /// Adds `added` to the session's total in its `_meta` (`state`: the session's).
    fn add_to_session(&self, session: &SessionUri, state: SessionState, added: Spent) {
        let mut meta = state.meta.unwrap_or_default();
        let mut total = Spent::recorded(usage::cost(Some(&meta)));
        total.add(added);
        usage::set_cost(&mut meta, total.cost());
        let action = StateAction::SessionMetaChanged(SessionMetaChangedAction { meta: Some(meta) });
        if let Err(error) = self.dispatch.dispatch(session.as_str(), action) {
            tracing::debug!(session = %session, %error, "turnCost: the session's total not updated");
        }
    }

    /// Queues the ledger row of `chat`'s turn.
    fn record_spend(&self, provider: &str, chat: &ChatUri, turn_id: &str, own: Spent) {
        let spend = TurnSpend {
            chat: chat.clone(),
            turn_id: turn_id.to_owned(),
            provider: provider.to_owned(),
            cost_usd: own.priced.then_some(usage::round_usd(own.usd)),
            incomplete: own.priced && own.unpriced,
            at: now_iso(),
        };
        let write = self.data.set_turn_spend(spend);
        let chat = chat.clone();
        self.writes.push(Box::pin(async move {
            if let Err(error) = write.await {
                tracing::warn!(chat = %chat, %error, "turnCost: could not record the turn's spend");
            }
        }));
    }
}

/// `cost` as it reads back from `_meta` (amounts are stored rounded).
fn rounded(cost: Cost) -> Cost {
    match cost {
        Cost::Usd { amount, complete } => Cost::Usd {
            amount: usage::round_usd(amount),
            complete,
        },
        other => other,
    }
}

/// The turn a terminal action on a chat ends.
fn ended_turn(action: &StateAction) -> Option<&str> {
    match action {
        StateAction::ChatTurnComplete(a) => Some(&a.turn_id),
        StateAction::ChatTurnCancelled(a) => Some(&a.turn_id),
        StateAction::ChatError(a) => Some(&a.turn_id),
        _ => None,
    }
}

impl Contribution for TurnCost {
    const ID: &'static str = "turnCost";
    const ORDER: i32 = 110;
    const HOOKS: HookSet = HookSet::of(&[Hook::DidDispatchAction]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Self::from_services(services)
    }
}

impl ChatContribution for TurnCost {
    fn on_did_dispatch_action(&self, action: &DispatchedAction<'_>) -> HookResult {
        if action.rejection_reason.is_some() {
            return Ok(());
        }
        let (Some(chat), Some(session)) = (action.chat, action.session) else {
            return Ok(());
        };
        match action.action {
            StateAction::ChatUsage(report) if !report.turn_id.is_empty() => {
                self.on_usage(session, chat, report);
            }
            other => {
                if let Some(turn_id) = ended_turn(other) {
                    self.turns().remove(&(chat.to_string(), turn_id.to_owned()));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
