//! `x-spend`: the host's spend report — what each session and each provider cost over a
//! period, by the host's estimate (the spend ledger the `turnCost` contribution keeps).

use serde::{Deserialize, Serialize};

/// The params of `x-spend`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SpendParams {
    /// Only turns updated at or after this time count (RFC 3339, UTC); all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
}

/// A `since` that is not an RFC 3339 time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`since` must be an RFC 3339 time, not `{0}`")]
pub struct BadSince(pub String);

impl SpendParams {
    /// The `since` time, checked: RFC 3339 in UTC (`2026-12-01T00:00:00Z`), compared as text
    /// with the ledger's timestamps, so it is normalised to their millisecond form.
    pub fn since(&self) -> Result<Option<String>, BadSince> {
        let Some(since) = &self.since else {
            return Ok(None);
        };
        let at: jiff::Timestamp = since.parse().map_err(|_| BadSince(since.clone()))?;
        Ok(Some(format!("{at:.3}")))
    }
}

/// A sum of turns' costs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpendFigure {
    /// US dollars over the turns with a known cost.
    pub cost_usd: f64,
    /// Turns with a known cost.
    pub priced_turns: u64,
    /// Turns whose cost is unknown or incomplete (their model had no price).
    pub unpriced_turns: u64,
}

impl SpendFigure {
    /// Adds `other`.
    pub fn add(&mut self, other: &Self) {
        self.cost_usd += other.cost_usd;
        self.priced_turns += other.priced_turns;
        self.unpriced_turns += other.unpriced_turns;
    }
}

/// One session's spend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSpend {
    /// The session URI.
    pub session: String,
    /// Its title.
    pub title: String,
    /// Its provider.
    pub provider: String,
    /// What it cost.
    #[serde(flatten)]
    pub spend: SpendFigure,
}

/// One provider's spend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderSpend {
    /// The provider id.
    pub provider: String,
    /// What its sessions cost.
    #[serde(flatten)]
    pub spend: SpendFigure,
}

/// The result of `x-spend`: sessions most expensive first, providers likewise, and the total.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpendReport {
    /// The period's start, when one was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// Per session.
    pub sessions: Vec<SessionSpend>,
    /// Per provider.
    pub providers: Vec<ProviderSpend>,
    /// Everything.
    pub total: SpendFigure,
}

impl SpendReport {
    /// The report of `sessions` (in any order): sorted, with the per-provider sums and the
    /// total.
    pub fn of(since: Option<String>, mut sessions: Vec<SessionSpend>) -> Self {
        sessions.sort_by(|a, b| {
            b.spend
                .cost_usd
                .total_cmp(&a.spend.cost_usd)
                .then_with(|| a.session.cmp(&b.session))
        });
        let mut providers: Vec<ProviderSpend> = Vec::new();
        let mut total = SpendFigure::default();
        for session in &sessions {
            total.add(&session.spend);
            match providers
                .iter_mut()
                .find(|p| p.provider == session.provider)
            {
                Some(provider) => provider.spend.add(&session.spend),
                None => providers.push(ProviderSpend {
                    provider: session.provider.clone(),
                    spend: session.spend.clone(),
                }),
            }
        }
        providers.sort_by(|a, b| {
            b.spend
                .cost_usd
                .total_cmp(&a.spend.cost_usd)
                .then_with(|| a.provider.cmp(&b.provider))
        });
        Self {
            since,
            sessions,
            providers,
            total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(name: &str, provider: &str, cost: f64, unpriced: u64) -> SessionSpend {
        SessionSpend {
            session: name.into(),
            title: name.into(),
            provider: provider.into(),
            spend: SpendFigure {
                cost_usd: cost,
                priced_turns: 1,
                unpriced_turns: unpriced,
            },
        }
    }

    #[test]
    fn a_report_sorts_and_sums_per_provider() {
        let report = SpendReport::of(
            None,
            vec![
                session("a", "claude", 1.0, 0),
                session("b", "codex", 3.0, 1),
                session("c", "claude", 0.5, 0),
            ],
        );
        let names: Vec<_> = report.sessions.iter().map(|s| s.session.as_str()).collect();
        assert_eq!(names, ["b", "a", "c"]);
        let providers: Vec<_> = report
            .providers
            .iter()
            .map(|p| {
                (
                    p.provider.as_str(),
                    p.spend.cost_usd,
                    p.spend.unpriced_turns,
                )
            })
            .collect();
        assert_eq!(providers, [("codex", 3.0, 1), ("claude", 1.5, 0)]);
        assert_eq!(report.total.cost_usd, 4.5);
        assert_eq!(report.total.priced_turns, 3);
    }

    #[test]
    fn since_must_be_a_time() {
        let params = |since: &str| SpendParams {
            since: Some(since.into()),
        };
        assert_eq!(
            params("2026-12-01T00:00:00Z").since(),
            Ok(Some("2026-12-01T00:00:00.000Z".into()))
        );
        assert!(
            params("7d")
                .since()
                .unwrap_err()
                .to_string()
                .contains("RFC 3339")
        );
        assert_eq!(SpendParams::default().since(), Ok(None));
    }
}
