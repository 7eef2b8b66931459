//! Usage per model call: Claude Code reports a turn's usage only in its `result`, but every
//! model call's usage arrives as it runs — at `message_start`, on each `assistant` line, and
//! (the output count) on `message_delta`. The translator keeps each call's figures by API
//! message id, so a turn's running usage (and so its cost) is known mid-turn.
//!
//! The Anthropic API's `input_tokens` leaves out the tokens read from and written to the prompt
//! cache; the host counts them in (see `agenthost_protocol::usage`), so a call's input is the
//! sum of the three.

use super::*;

use agenthost_protocol::usage::{AGENT_COST_USD, CONTEXT_TOKENS};

use crate::wire::ApiUsage;

/// The model calls of a turn, in the order they started.
#[derive(Debug, Default)]
pub(super) struct Calls {
    calls: Vec<Call>,
    /// The totals last reported, per scope: an unchanged total is not reported again.
    reported: HashMap<Scope, Totals>,
}

#[derive(Debug)]
struct Call {
    message: String,
    scope: Scope,
    model: Option<String>,
    usage: ApiUsage,
}

/// A scope's normalised totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Totals {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
}

impl Totals {
    fn of(usage: &ApiUsage) -> Self {
        let read = usage.cache_read_input_tokens.unwrap_or(0);
        let written = usage.cache_creation_input_tokens.unwrap_or(0);
        Self {
            input: usage
                .input_tokens
                .unwrap_or(0)
                .saturating_add(read)
                .saturating_add(written),
            output: usage.output_tokens.unwrap_or(0),
            cache_read: read,
            cache_write: written,
        }
    }

    fn add(self, other: Self) -> Self {
        Self {
            input: self.input.saturating_add(other.input),
            output: self.output.saturating_add(other.output),
            cache_read: self.cache_read.saturating_add(other.cache_read),
            cache_write: self.cache_write.saturating_add(other.cache_write),
        }
    }

    fn event(self, scope: Scope, model: Option<String>, meta: Option<JsonObject>) -> NormEvent {
        NormEvent::Usage {
            scope,
            kind: agenthost_provider_api::UsageKind::Total,
            input: self.input,
            output: self.output,
            cache_read: Some(self.cache_read),
            cache_write: Some(self.cache_write),
            model,
            meta,
        }
    }
}

/// Counts only grow within a call: a later line's partial count never lowers an earlier one.
fn merge(into: &mut ApiUsage, update: &ApiUsage) {
    let max = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    into.input_tokens = max(into.input_tokens, update.input_tokens);
    into.output_tokens = max(into.output_tokens, update.output_tokens);
    into.cache_read_input_tokens =
        max(into.cache_read_input_tokens, update.cache_read_input_tokens);
    into.cache_creation_input_tokens = max(
        into.cache_creation_input_tokens,
        update.cache_creation_input_tokens,
    );
}

impl Calls {
    /// Records what a line said of `message`'s usage.
    fn record(&mut self, message: &str, scope: &Scope, model: Option<&str>, usage: &ApiUsage) {
        let model = model.filter(|model| !model.is_empty() && *model != "<synthetic>");
        match self.calls.iter_mut().find(|call| call.message == message) {
            Some(call) => {
                merge(&mut call.usage, usage);
                if call.model.is_none() {
                    call.model = model.map(str::to_owned);
                }
            }
            None => self.calls.push(Call {
                message: message.to_owned(),
                scope: scope.clone(),
                model: model.map(str::to_owned),
                usage: *usage,
            }),
        }
    }

    /// The totals of `scope` and the model of its latest call.
    fn totals(&self, scope: &Scope) -> (Totals, Option<String>) {
        let mut totals = Totals::default();
        let mut model = None;
        for call in self.calls.iter().filter(|call| &call.scope == scope) {
            totals = totals.add(Totals::of(&call.usage));
            if call.model.is_some() {
                model.clone_from(&call.model);
            }
        }
        (totals, model)
    }

    /// `_meta` with the context's fill: the input of `scope`'s latest call.
    fn context(&self, scope: &Scope) -> Option<JsonObject> {
        let last = self.calls.iter().rev().find(|call| &call.scope == scope)?;
        let mut meta = JsonObject::new();
        meta.insert(CONTEXT_TOKENS.into(), Totals::of(&last.usage).input.into());
        Some(meta)
    }

    fn any_subagent(&self) -> bool {
        self.calls.iter().any(|call| call.scope != Scope::Root)
    }
}

impl Translator {
    /// A line told `message`'s usage: the scope's running total is reported when it changed.
    pub(super) fn call_usage(
        &mut self,
        message: &str,
        scope: &Scope,
        model: Option<&str>,
        usage: &ApiUsage,
        out: &mut Vec<Output>,
    ) {
        let Some(turn) = &mut self.turn else {
            return;
        };
        turn.calls.record(message, scope, model, usage);
        let (totals, model) = turn.calls.totals(scope);
        if turn.calls.reported.get(scope) == Some(&totals) {
            return;
        }
        turn.calls.reported.insert(scope.clone(), totals);
        let context = turn.calls.context(scope);
        self.emit(totals.event(scope.clone(), model, context), out);
    }

    /// The turn's final usage at its `result`. The result's usage replaces the calls' sum when
    /// the turn ran no subagent (it also covers calls the stream did not show); with subagents
    /// the calls' sums stand, since whether the result counts a subagent's calls is not
    /// documented and each subagent chat already reports its own. Claude Code's own cost
    /// estimate is kept under `agenthost.agentCostUsd`.
    pub(super) fn result_usage(
        &mut self,
        turn: &TurnTrack,
        usage: Option<&ApiUsage>,
        result_model: Option<String>,
        cost: Option<f64>,
        out: &mut Vec<Output>,
    ) {
        let (summed, model) = turn.calls.totals(&Scope::Root);
        let totals = match usage {
            Some(usage) if !turn.calls.any_subagent() => Totals::of(usage),
            _ => summed,
        };
        if usage.is_none() && turn.calls.calls.is_empty() {
            return;
        }
        let mut meta = turn.calls.context(&Scope::Root).unwrap_or_default();
        if let Some(cost) = cost {
            meta.insert(AGENT_COST_USD.into(), cost.into());
        }
        let meta = (!meta.is_empty()).then_some(meta);
        let model = model.or(result_model);
        self.emit(totals.event(Scope::Root, model, meta), out);
    }
}
