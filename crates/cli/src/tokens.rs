//! `agent-host tokens add|list|revoke`: named connection tokens with scopes, kept in the data
//! directory's session database as a SHA-256 each (the token itself is printed once, at `add`,
//! and never stored); and the serving side: a running `serve` reads them at start and again
//! every [`TOKEN_POLL`], so a token added is usable and a token revoked closes its connections
//! within a second.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agenthost_server::Token;
use agenthost_server::access::{
    Credentials, Grant, NamedToken, PRIMARY_TOKEN_NAME, Scope, token_hash,
};
use agenthost_store::{Store, TokenRecord};

use crate::sessions::existing_store;

use crate::CliError;

/// How often a running host reads the named tokens again.
pub const TOKEN_POLL: Duration = Duration::from_millis(500);

/// The named tokens of `store` as the server keeps them. A record whose scope this build cannot
/// read is left out (it grants nothing) and reported.
pub fn named_tokens(store: &Store) -> Result<Vec<NamedToken>, CliError> {
    let records = store.tokens()?;
    Ok(records
        .into_iter()
        .filter_map(|record| match record.scope.parse::<Scope>() {
            Ok(scope) => Some(NamedToken {
                hash: record.hash,
                grant: Grant {
                    name: record.name,
                    scope,
                },
            }),
            Err(error) => {
                tracing::warn!(token = record.name, %error, "a stored token has an unknown scope; it grants nothing");
                None
            }
        })
        .collect())
}

/// Gives `credentials` the named tokens of `store` now and every [`TOKEN_POLL`] after, until
/// the server is gone. A failed read keeps the tokens as they were.
pub fn keep_current(store: Store, credentials: &Arc<Credentials>) -> Result<(), CliError> {
    credentials.replace_named(named_tokens(&store)?);
    agenthost_services::periodic::every(
        Arc::downgrade(credentials),
        TOKEN_POLL,
        move |credentials: Arc<Credentials>| {
            let store = store.clone();
            async move {
                match tokio::task::spawn_blocking(move || named_tokens(&store)).await {
                    Ok(Ok(tokens)) => credentials.replace_named(tokens),
                    Ok(Err(error)) => tracing::debug!(%error, "cannot read the named tokens"),
                    Err(error) => tracing::debug!(%error, "the token read failed"),
                }
            }
        },
    );
    Ok(())
}

/// A token name: 1 to 64 of `A-Z a-z 0-9 . _ -`, not the primary token's.
fn check_name(name: &str) -> Result<(), CliError> {
    let valid = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if !valid {
        return Err(CliError::Usage(format!(
            "token name {:?}: use 1 to 64 letters, digits, `.`, `_` or `-`",
            agenthost_protocol::uri::snippet(name)
        )));
    }
    if name == PRIMARY_TOKEN_NAME {
        return Err(CliError::Usage(format!(
            "token name {name:?} is the name of `serve`'s own token; choose another"
        )));
    }
    Ok(())
}

fn open(data_dir: &Path) -> Result<Store, CliError> {
    std::fs::create_dir_all(data_dir).map_err(|e| {
        CliError::Io(format!(
            "cannot create the data directory {}: {e}",
            data_dir.display()
        ))
    })?;
    crate::host::open_store(Some(data_dir))
}

/// `tokens add NAME --scope S`: stores a new token's hash; returns the token (shown once).
pub fn add(data_dir: &Path, name: &str, scope: &str) -> Result<String, CliError> {
    check_name(name)?;
    let scope: Scope = scope.parse().map_err(CliError::Usage)?;
    let token = Token::generate()?;
    let record = TokenRecord {
        name: name.to_owned(),
        hash: token_hash(token.as_str().as_bytes()),
        scope: scope.to_string(),
        created_at: agenthost_services::now_iso(),
    };
    open(data_dir)?.add_token(&record)?;
    Ok(token.as_str().to_owned())
}

/// `tokens list`: a table of the named tokens (never the tokens themselves).
pub fn list(data_dir: &Path) -> Result<String, CliError> {
    let tokens = existing_store(data_dir)?.tokens()?;
    let mut out = String::from("NAME  SCOPE  CREATED\n");
    for token in tokens {
        out.push_str(&format!(
            "{}  {}  {}\n",
            token.name, token.scope, token.created_at
        ));
    }
    Ok(out)
}

/// `tokens revoke NAME`: removes it; a running host closes its connections within a second.
pub fn revoke(data_dir: &Path, name: &str) -> Result<(), CliError> {
    if open(data_dir)?.revoke_token(name)? {
        Ok(())
    } else {
        Err(CliError::Usage(format!(
            "no token named {:?}",
            agenthost_protocol::uri::snippet(name)
        )))
    }
}

/// `audit`: the last `limit` entries of the audit log, oldest first, one line each — when,
/// token, client id, what, channel, details.
pub fn audit(data_dir: &Path, limit: usize) -> Result<String, CliError> {
    let entries = existing_store(data_dir)?.audit(limit)?;
    let mut out = String::from("AT  TOKEN  CLIENT  ACTION  CHANNEL  DETAIL\n");
    for entry in entries {
        out.push_str(&format!(
            "{}  {}  {}  {}  {}  {}\n",
            entry.at, entry.token, entry.client_id, entry.action, entry.channel, entry.detail
        ));
    }
    Ok(out)
}
