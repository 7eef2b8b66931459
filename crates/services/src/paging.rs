//! Pages of the session catalog (`listSessions` with `limit` and `cursor`): the order — most
//! recently modified first, ties by URI — the opaque cursor naming a position in it, and
//! cutting a page. Pure: the session service supplies the candidates (live sessions and one
//! indexed page of stored ones).

use agenthost_protocol::ahp_types::state::SessionSummary;
use agenthost_protocol::uri::snippet;

/// A page request a client got wrong; the message says what to send instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PageError {
    /// `limit` was zero or negative.
    #[error("limit must be at least 1, not {0}")]
    Limit(i64),
    /// The cursor is not one this host issued (the text, cut to a snippet).
    #[error("cursor {0:?} is not one this host issued; start again without a cursor")]
    ForeignCursor(String),
}

/// A position in the catalog: the `(modifiedAt, resource)` of the last session of a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogCursor {
    /// The last session's modification time.
    pub modified_at: String,
    /// The last session's URI.
    pub resource: String,
}

impl CatalogCursor {
    /// Reads a cursor this host issued; anything else is an error for the client.
    pub fn parse(text: &str) -> Result<Self, PageError> {
        let (modified_at, resource): (String, String) =
            serde_json::from_str(text).map_err(|_| PageError::ForeignCursor(snippet(text)))?;
        Ok(Self {
            modified_at,
            resource,
        })
    }

    /// The cursor's text (opaque to clients).
    pub fn encode(&self) -> String {
        serde_json::json!([self.modified_at, self.resource]).to_string()
    }

    /// Whether `summary` comes after this position in the catalog order.
    pub fn precedes(&self, summary: &SessionSummary) -> bool {
        summary.modified_at < self.modified_at
            || (summary.modified_at == self.modified_at && summary.resource > self.resource)
    }
}

/// A client's `limit`: `None` for every session; at least 1 otherwise.
pub fn page_limit(limit: Option<i64>) -> Result<Option<usize>, PageError> {
    match limit {
        None => Ok(None),
        Some(n) if n > 0 => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
        Some(n) => Err(PageError::Limit(n)),
    }
}

/// Sorts `items` in catalog order.
pub fn sort_catalog(items: &mut [SessionSummary]) {
    items.sort_by(|a, b| {
        b.modified_at
            .cmp(&a.modified_at)
            .then(a.resource.cmp(&b.resource))
    });
}

/// The page of `candidates` (every session after the cursor that can be on it, unordered):
/// the first `limit` in catalog order, and the cursor of the next page when more follow.
pub fn cut_page(
    mut candidates: Vec<SessionSummary>,
    limit: usize,
) -> (Vec<SessionSummary>, Option<String>) {
    sort_catalog(&mut candidates);
    let next = (candidates.len() > limit)
        .then(|| candidates.get(limit.saturating_sub(1)))
        .flatten()
        .map(|last| {
            CatalogCursor {
                modified_at: last.modified_at.clone(),
                resource: last.resource.clone(),
            }
            .encode()
        });
    candidates.truncate(limit);
    (candidates, next)
}
