//! The requests a client makes around a session rather than in it: `resolveSessionConfig`
//! (before `createSession`), `completions` (while a message is typed) and `authenticate`
//! (tokens for advertised protected resources). VS Code sends all three on its normal path.
//!
//! What each answers, and how much of it is deliberately minimal:
//!
//! - `resolveSessionConfig`: the host's session configuration schema (the properties every
//!   session gets, e.g. `unattended`) with the defaults and the client's values for the schema's
//!   properties over them — the values a `createSession` with that `config` would start with.
//!   Without a configured schema it is an empty object schema and no values. The schema does not
//!   depend on the provider or the working directory; an unknown provider is still an error.
//! - `completions`: the host completes nothing yet and advertises no
//!   `completionTriggerCharacters`, so the answer is an empty `items` list — for a channel that
//!   exists (a session URI means its default chat, see `agenthost_protocol::dialect`); an unknown one is
//!   `-32008`.
//! - `authenticate`: no agent of this host advertises `protectedResources` (the agents use
//!   their CLIs' own logins), so VS Code pushes no token; one sent anyway is refused with
//!   "invalid params" naming the resource, and never stored or logged. (AHP: a server MUST
//!   answer an unrecognized resource with an error; an empty `{}` answer is only for a resource
//!   the host did advertise.)

use agenthost_protocol::commands::{
    AuthenticateParams, CompletionsParams, CompletionsResult, ResolveSessionConfigParams,
    ResolveSessionConfigResult,
};
use agenthost_protocol::state::{AgentInfo, SessionConfigSchema, SessionConfigState};

use agenthost_protocol::RpcError;

/// `listSessions`'s paging parameters, `limit` and `cursor`, each optional (VS Code sends
/// neither, nor always a `channel`). A value of the wrong type is "invalid params".
pub(crate) fn list_sessions_page(
    raw: Option<&serde_json::Value>,
) -> Result<(Option<i64>, Option<String>), RpcError> {
    let field = |name: &str| {
        raw.and_then(|params| params.get(name))
            .filter(|v| !v.is_null())
    };
    let limit = match field("limit") {
        None => None,
        Some(value) => Some(value.as_i64().ok_or_else(|| {
            RpcError::invalid_params("invalid params: limit must be a whole number")
        })?),
    };
    let cursor = match field("cursor") {
        None => None,
        Some(value) => Some(
            value
                .as_str()
                .ok_or_else(|| RpcError::invalid_params("invalid params: cursor must be a string"))?
                .to_owned(),
        ),
    };
    Ok((limit, cursor))
}

/// `resolveSessionConfig` over the host's session configuration (`None`: none configured) and
/// the advertised agents.
pub(crate) fn resolve_session_config(
    params: ResolveSessionConfigParams,
    config: Option<&SessionConfigState>,
    agents: &[AgentInfo],
) -> Result<ResolveSessionConfigResult, RpcError> {
    if let Some(provider) = &params.provider
        && !agents.iter().any(|agent| &agent.provider == provider)
    {
        return Err(RpcError::provider_not_found(provider));
    }
    let Some(config) = config else {
        return Ok(ResolveSessionConfigResult {
            schema: SessionConfigSchema {
                r#type: "object".to_owned(),
                properties: Default::default(),
                required: None,
            },
            values: Default::default(),
        });
    };
    let resolved = agenthost_service::session_config_with(config, params.config.as_ref(), true);
    Ok(ResolveSessionConfigResult {
        schema: resolved.schema,
        values: resolved.values,
    })
}

/// `completions` on `chat` (already resolved), which `exists` says is a live or stored channel.
pub(crate) fn completions(
    params: &CompletionsParams,
    chat: &str,
    exists: bool,
) -> Result<CompletionsResult, RpcError> {
    if !exists {
        return Err(RpcError::not_found(format!(
            "completions: {chat} is neither a session nor a chat of this host"
        )));
    }
    let length = params.text.encode_utf16().count();
    if params.offset < 0 || usize::try_from(params.offset).is_ok_and(|offset| offset > length) {
        return Err(RpcError::invalid_params(format!(
            "completions: offset {} is outside the text (0..={length} UTF-16 code units)",
            params.offset
        )));
    }
    Ok(CompletionsResult { items: Vec::new() })
}

/// `authenticate`: refused — no agent of this host takes tokens, so none advertises a
/// protected resource a token could be for. The token is neither kept nor logged.
pub(crate) fn authenticate(params: &AuthenticateParams) -> RpcError {
    RpcError::invalid_params(format!(
        "authenticate: this host advertises no protected resources (its agents use their own \
         logins), so it takes no token for {:?}",
        params.resource
    ))
}

#[cfg(test)]
#[path = "requests_tests.rs"]
mod tests;
