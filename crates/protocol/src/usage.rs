//! The host's own keys in a turn's usage `_meta` and a session's `_meta`, and their readers.
//!
//! AHP's `UsageInfo` has input, output and cache-read token counts. What it lacks the host puts
//! under `_meta`, always under the `agenthost.` prefix: VS Code reads some un-prefixed keys
//! (`cost` is shown as credits, a model's `inputCost` / `outputCost` as credit prices), so a
//! money figure must never sit under one of them.
//!
//! Token meanings are the same for every provider (the providers normalise what their agent
//! reports): `inputTokens` counts every input token of the turn's model calls, cached or not
//! (the OpenAI convention); `cacheReadTokens` is the part of them read from the prompt cache and
//! [`CACHE_WRITE_TOKENS`] the part written to it.

use ahp_types::common::JsonObject;
use ahp_types::state::UsageInfo;
use serde_json::Value;

/// Input tokens written to the prompt cache (a part of `inputTokens`).
pub const CACHE_WRITE_TOKENS: &str = "agenthost.cacheWriteTokens";

/// The tokens in the model's context at the turn's latest model call (that call's input).
pub const CONTEXT_TOKENS: &str = "agenthost.contextTokens";

/// The context window of the turn's model, when the agent reported it: with
/// [`CONTEXT_TOKENS`], how full the context is.
pub const CONTEXT_WINDOW: &str = "agenthost.contextWindow";

/// The turn's API-equivalent cost estimate in US dollars, from the host's price table: a
/// number, or `null` when no model call of the turn has a known price ("unknown", never 0).
/// On a session's `_meta`: the session's total so far.
pub const COST_USD: &str = "agenthost.costUsd";

/// `true` when [`COST_USD`] leaves out model calls whose model has no known price (the figure
/// is then a lower bound).
pub const COST_INCOMPLETE: &str = "agenthost.costIncomplete";

/// What the agent itself said the turn cost, in US dollars (Claude Code's `total_cost_usd`),
/// kept for reference; [`COST_USD`] is the host's figure.
pub const AGENT_COST_USD: &str = "agenthost.agentCostUsd";

/// A session's budget in US dollars (on the session's `_meta`, from its `budgetUsd` config).
pub const BUDGET_USD: &str = "agenthost.budgetUsd";

/// A number `_meta` key of `meta` as a non-negative count.
fn count(meta: Option<&JsonObject>, key: &str) -> Option<u64> {
    meta?.get(key)?.as_u64()
}

/// The cache-write tokens of `usage`.
pub fn cache_write_tokens(usage: &UsageInfo) -> Option<u64> {
    count(usage.meta.as_ref(), CACHE_WRITE_TOKENS)
}

/// A cost as `_meta` holds it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cost {
    /// No figure was recorded.
    Absent,
    /// Recorded as unknown (no price for the model).
    Unknown,
    /// Dollars; `complete` is false when some model calls had no price (a lower bound).
    Usd {
        /// The amount.
        amount: f64,
        /// Whether every model call was priced.
        complete: bool,
    },
}

/// The cost recorded in `meta` (a usage's or a session's `_meta`).
pub fn cost(meta: Option<&JsonObject>) -> Cost {
    let Some(meta) = meta else {
        return Cost::Absent;
    };
    match meta.get(COST_USD) {
        None => Cost::Absent,
        Some(Value::Number(amount)) => match amount.as_f64() {
            Some(amount) if amount.is_finite() && amount >= 0.0 => Cost::Usd {
                amount,
                complete: meta.get(COST_INCOMPLETE) != Some(&Value::Bool(true)),
            },
            _ => Cost::Unknown,
        },
        Some(_) => Cost::Unknown,
    }
}

/// Writes `cost` into `meta` ([`Cost::Absent`] removes the keys).
pub fn set_cost(meta: &mut JsonObject, cost: Cost) {
    meta.remove(COST_INCOMPLETE);
    match cost {
        Cost::Absent => {
            meta.remove(COST_USD);
        }
        Cost::Unknown => {
            meta.insert(COST_USD.into(), Value::Null);
        }
        Cost::Usd { amount, complete } => {
            meta.insert(COST_USD.into(), round_usd(amount).into());
            if !complete {
                meta.insert(COST_INCOMPLETE.into(), true.into());
            }
        }
    }
}

/// The cost keys of `meta` alone (for a session summary, which carries the session's total
/// and nothing else of its `_meta`); `None` when it has none.
pub fn cost_keys(meta: Option<&JsonObject>) -> Option<JsonObject> {
    let meta = meta?;
    let kept: JsonObject = [COST_USD, COST_INCOMPLETE, BUDGET_USD]
        .iter()
        .filter_map(|key| {
            meta.get(*key)
                .map(|value| ((*key).to_owned(), value.clone()))
        })
        .collect();
    (!kept.is_empty()).then_some(kept)
}

/// `amount` rounded to a millionth of a dollar, so sums printed from JSON stay readable.
pub fn round_usd(amount: f64) -> f64 {
    (amount * 1e6).round() / 1e6
}

impl std::fmt::Display for Cost {
    /// `$0.0123`, `≥ $0.0123` (incomplete), `unknown`, or `-` (absent).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Absent => f.write_str("-"),
            Self::Unknown => f.write_str("unknown"),
            Self::Usd { amount, complete } => {
                let prefix = if *complete { "" } else { "≥ " };
                if *amount >= 1.0 {
                    write!(f, "{prefix}${amount:.2}")
                } else {
                    write!(f, "{prefix}${amount:.4}")
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(value: Value) -> JsonObject {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_cost_reads_back_as_written() {
        for cost in [
            Cost::Unknown,
            Cost::Usd {
                amount: 0.5,
                complete: true,
            },
            Cost::Usd {
                amount: 0.25,
                complete: false,
            },
        ] {
            let mut object = JsonObject::new();
            set_cost(&mut object, cost);
            assert_eq!(super::cost(Some(&object)), cost);
        }
        let mut object = meta(json!({ COST_USD: 1.0, "other": 1 }));
        set_cost(&mut object, Cost::Absent);
        assert_eq!(object, meta(json!({ "other": 1 })));
    }

    #[test]
    fn a_cost_that_is_not_a_non_negative_number_is_unknown() {
        assert_eq!(cost(None), Cost::Absent);
        assert_eq!(cost(Some(&meta(json!({})))), Cost::Absent);
        assert_eq!(cost(Some(&meta(json!({ COST_USD: "1" })))), Cost::Unknown);
        assert_eq!(cost(Some(&meta(json!({ COST_USD: -1 })))), Cost::Unknown);
    }

    #[test]
    fn costs_print_for_people() {
        let usd = |amount, complete| Cost::Usd { amount, complete }.to_string();
        assert_eq!(usd(0.01234, true), "$0.0123");
        assert_eq!(usd(12.5, true), "$12.50");
        assert_eq!(usd(0.5, false), "≥ $0.5000");
        assert_eq!(Cost::Unknown.to_string(), "unknown");
        assert_eq!(Cost::Absent.to_string(), "-");
    }

    #[test]
    fn cache_writes_are_read_from_meta() {
        let usage = UsageInfo {
            meta: Some(meta(json!({ CACHE_WRITE_TOKENS: 7 }))),
            ..UsageInfo::default()
        };
        assert_eq!(cache_write_tokens(&usage), Some(7));
        assert_eq!(cache_write_tokens(&UsageInfo::default()), None);
    }
}
