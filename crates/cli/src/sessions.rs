//! `agent-host sessions`: the sessions of a host as a table ([`table`], over AHP), and the
//! session database offline ([`list`], [`delete`]).

use std::path::Path;

use agenthost_checkpoint::{CheckpointConfig, Checkpointer, MemoryLedger};
use agenthost_protocol::ahp_types::state::{SessionStatus, SessionSummary};
use agenthost_protocol::usage;
use agenthost_protocol::{ChatUri, SessionUri};
use agenthost_service::spend::{SpendFigure, SpendParams, SpendReport};

use crate::host::{DATABASE_FILE, open_store};

use crate::CliError;

/// Prints every stored session, newest first: URI, provider, title, last modification.
pub fn list(data_dir: &Path) -> Result<(), CliError> {
    let store = existing_store(data_dir)?;
    let sessions = store.sessions()?;
    if sessions.is_empty() {
        println!("no sessions in {}", data_dir.display());
    }
    for session in sessions {
        println!(
            "{}\t{}\t{}\t{}",
            session.uri, session.provider, session.modified_at, session.title
        );
    }
    Ok(())
}

/// Deletes a session and its history for good. A running host keeps what it has in memory until
/// it restarts: to delete from a running host, send it `x-deleteSession`.
pub fn delete(data_dir: &Path, session: &str) -> Result<(), CliError> {
    let uri = SessionUri::parse(session)?;
    let store = existing_store(data_dir)?;
    let directories: Vec<std::path::PathBuf> = store
        .session(&uri)?
        .map(|record| record.working_directories)
        .unwrap_or_default()
        .iter()
        .filter_map(|d| agenthost_protocol::uri::file_uri_to_path(d).ok())
        .collect();
    if store.delete_session(&uri)? {
        // The session's checkpoint refs go too (a missing repository or ref is fine).
        let checkpoints = Checkpointer::new(
            CheckpointConfig::default(),
            std::sync::Arc::new(MemoryLedger::new()),
        );
        let refs = checkpoints.delete_all(&uri, &directories);
        println!("deleted {uri} ({refs} checkpoint refs)");
        Ok(())
    } else {
        Err(CliError::Usage(format!(
            "no session {uri} in {}",
            data_dir.display()
        )))
    }
}

/// One session's row: title, provider, status, last activity, turns, cost, URI.
fn row(summary: &SessionSummary, turns: Option<usize>) -> [String; 7] {
    let status = SessionStatus::from_bits(summary.status);
    let state = if status.contains(SessionStatus::InputNeeded) {
        "needs input"
    } else if status.contains(SessionStatus::InProgress) {
        "running"
    } else if status.contains(SessionStatus::Error) {
        "error"
    } else {
        "idle"
    };
    let mut state = state.to_owned();
    if status.contains(SessionStatus::IsArchived) {
        state.push_str(", archived");
    }
    // `2026-03-10T18:42:03.123Z` → `2026-03-10 18:42`.
    let when = summary
        .modified_at
        .get(..16)
        .map_or_else(|| summary.modified_at.clone(), |t| t.replacen('T', " ", 1));
    [
        summary.title.clone(),
        summary.provider.clone(),
        state,
        when,
        turns.map_or_else(|| "?".to_owned(), |n| n.to_string()),
        usage::cost(summary.meta.as_ref()).to_string(),
        summary.resource.clone(),
    ]
}

/// The sessions table (newest first) of the host at `url`: archived sessions only with `all`.
/// Each session's turns are counted from its default chat (restored for the purpose, as a
/// client subscribing would).
pub async fn table(url: &str, all: bool) -> Result<String, CliError> {
    let client = crate::run::connect_host(url, "agent-host-sessions").await?;
    let mut sessions = client.list_sessions().await?.items;
    sessions
        .retain(|s| all || !SessionStatus::from_bits(s.status).contains(SessionStatus::IsArchived));
    sessions.sort_by(|a, b| b.modified_at.cmp(&a.modified_at));
    let mut rows = vec![[
        "TITLE".to_owned(),
        "PROVIDER".to_owned(),
        "STATUS".to_owned(),
        "LAST ACTIVITY".to_owned(),
        "TURNS".to_owned(),
        "COST".to_owned(),
        "SESSION".to_owned(),
    ]];
    for summary in &sessions {
        let turns = match SessionUri::parse(&summary.resource) {
            Ok(session) => client
                .open_chat(&ChatUri::default_for(&session))
                .await
                .ok()
                .map(|(view, _subscription)| {
                    view.state().turns.len() + usize::from(view.state().active_turn.is_some())
                }),
            Err(_) => None,
        };
        rows.push(row(summary, turns));
    }
    client.close().await;
    if sessions.is_empty() {
        return Ok("no sessions\n".to_owned());
    }
    Ok(layout(&rows))
}

/// `rows` as aligned columns (the last one unpadded).
fn layout<const N: usize>(rows: &[[String; N]]) -> String {
    let mut widths = [0usize; N];
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (index, (cell, width)) in row.iter().zip(widths).enumerate() {
            if index + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<width$}  "));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// A figure of the spend report: dollars, marked `≥` when some turns had no price, or
/// `unknown` when none had one.
fn figure(spend: &SpendFigure) -> String {
    let cost = match (spend.priced_turns, spend.unpriced_turns) {
        (0, 0) => usage::Cost::Absent,
        (0, _) => usage::Cost::Unknown,
        (_, unpriced) => usage::Cost::Usd {
            amount: spend.cost_usd,
            complete: unpriced == 0,
        },
    };
    cost.to_string()
}

/// `since` (`7d`, `24h`, `30m`) before now, as the RFC 3339 time `x-spend` takes.
pub fn since(text: &str) -> Result<String, CliError> {
    let bad = || {
        CliError::Usage(format!(
            "invalid --since `{text}`: expected a whole number and a unit, as in `7d`, `24h` or `30m`"
        ))
    };
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let number: i64 = number.parse().map_err(|_| bad())?;
    let seconds = match unit {
        "d" => number.checked_mul(86_400),
        "h" => number.checked_mul(3_600),
        "m" => number.checked_mul(60),
        _ => None,
    }
    .ok_or_else(bad)?;
    let now = jiff::Timestamp::now();
    let start = now
        .checked_sub(jiff::SignedDuration::from_secs(seconds))
        .map_err(|_| bad())?;
    Ok(format!("{start:.3}"))
}

/// The spend report of the host at `url` since `since` (RFC 3339): per session, per provider
/// and the total, labelled an API-equivalent estimate.
pub async fn spend(url: &str, since: &str, label: &str) -> Result<String, CliError> {
    let client = crate::run::connect_host(url, "agent-host-sessions").await?;
    let report = client
        .client()
        .request::<SpendParams, SpendReport>(
            "x-spend",
            SpendParams {
                since: Some(since.to_owned()),
            },
        )
        .await;
    client.close().await;
    let report = report?;
    let mut out = format!(
        "Spend since {label} ({}), an API-equivalent estimate at list prices:\n\n",
        &since[..16.min(since.len())].replacen('T', " ", 1)
    );
    if report.sessions.is_empty() {
        out.push_str("no turns in this period\n");
        return Ok(out);
    }
    let mut rows = vec![[
        "TITLE".to_owned(),
        "PROVIDER".to_owned(),
        "COST".to_owned(),
        "CHAT TURNS".to_owned(),
        "SESSION".to_owned(),
    ]];
    for session in &report.sessions {
        rows.push([
            session.title.clone(),
            session.provider.clone(),
            figure(&session.spend),
            (session.spend.priced_turns + session.spend.unpriced_turns).to_string(),
            session.session.clone(),
        ]);
    }
    out.push_str(&layout(&rows));
    out.push('\n');
    let mut rows = vec![[
        "PROVIDER".to_owned(),
        "COST".to_owned(),
        "CHAT TURNS".to_owned(),
    ]];
    for provider in &report.providers {
        rows.push([
            provider.provider.clone(),
            figure(&provider.spend),
            (provider.spend.priced_turns + provider.spend.unpriced_turns).to_string(),
        ]);
    }
    rows.push([
        "total".to_owned(),
        figure(&report.total),
        (report.total.priced_turns + report.total.unpriced_turns).to_string(),
    ]);
    out.push_str(&layout(&rows));
    Ok(out)
}

pub(crate) fn existing_store(data_dir: &Path) -> Result<agenthost_store::Store, CliError> {
    if !data_dir.join(DATABASE_FILE).exists() {
        return Err(CliError::Usage(format!(
            "no session database in {} (expected {DATABASE_FILE})",
            data_dir.display()
        )));
    }
    open_store(Some(data_dir))
}

/// The session summaries of the host at `url` as a JSON array, newest first (archived sessions
/// only with `all`): the `SessionSummary` objects of AHP's `listSessions`, for scripts.
pub async fn json(url: &str, all: bool) -> Result<String, CliError> {
    let client = crate::run::connect_host(url, "agent-host-sessions").await?;
    let mut sessions = client.list_sessions().await?.items;
    client.close().await;
    sessions
        .retain(|s| all || !SessionStatus::from_bits(s.status).contains(SessionStatus::IsArchived));
    sessions.sort_by(|a, b| b.modified_at.cmp(&a.modified_at));
    let mut text = serde_json::to_string_pretty(&sessions)
        .map_err(|e| CliError::Host(format!("cannot encode the sessions: {e}")))?;
    text.push('\n');
    Ok(text)
}

/// What `sessions archive|unarchive|rename` changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Archive the session (`session/isArchivedChanged`).
    Archive,
    /// Take it out of the archive.
    Unarchive,
    /// Give it this title (`session/titleChanged`; the host keeps it as the user's title).
    Rename(String),
}

/// How long a change waits for the host's confirmation.
const CHANGE_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Applies `change` to `session` on the host at `url`, through the protocol's own session
/// actions, and waits for the host to confirm it; returns what to print.
pub async fn change(url: &str, session: &str, change: Change) -> Result<String, CliError> {
    use agenthost_protocol::StateAction;
    use agenthost_protocol::actions::{SessionIsArchivedChangedAction, SessionTitleChangedAction};
    let uri = SessionUri::parse(session)
        .map_err(|e| CliError::Usage(format!("{session} is not a session URI: {e}")))?;
    let (action, done) = match &change {
        Change::Archive => (
            StateAction::SessionIsArchivedChanged(SessionIsArchivedChangedAction {
                is_archived: true,
            }),
            format!("archived {uri}"),
        ),
        Change::Unarchive => (
            StateAction::SessionIsArchivedChanged(SessionIsArchivedChangedAction {
                is_archived: false,
            }),
            format!("unarchived {uri}"),
        ),
        Change::Rename(title) => {
            let title = title.trim();
            if title.is_empty() {
                return Err(CliError::usage("a session's title cannot be empty"));
            }
            (
                StateAction::SessionTitleChanged(SessionTitleChangedAction {
                    title: title.to_owned(),
                }),
                format!("renamed {uri} to {title:?}"),
            )
        }
    };
    let client = crate::run::connect_host(url, "agent-host-sessions").await?;
    // Subscribing restores a stored session, and the echo of the change comes back on it.
    let subscribed = client.client().subscribe(uri.to_string()).await;
    let result = match subscribed {
        Err(error) => Err(CliError::Host(format!(
            "no session {uri} on this host: {error}"
        ))),
        Ok((_snapshot, _subscription)) => client
            .dispatch_confirmed(uri.as_str(), action, CHANGE_WAIT)
            .await
            .map(|()| format!("{done}\n"))
            .map_err(CliError::from),
    };
    client.close().await;
    result
}
