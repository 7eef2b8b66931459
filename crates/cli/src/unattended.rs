//! The host side of the unattended policy: `--unattended` / `--unattended-grace` (and
//! `--client-grace`, read by the `clientDeparture` contribution over the same services), the
//! services the `unattendedPolicy` contribution reads, and their wiring into the host.
//!
//! The contribution (crate `agenthost-contrib-unattended-policy`) needs four services:
//! `dyn HostState` (registered anyway), `dyn Configuration` (seeded here with the policy under
//! the root key `unattended` and the grace window under `unattendedGraceMs`),
//! `dyn SubscriptionTracker` (the server reports subscriptions to it) and
//! `dyn ClientActionIntake` (a queue the host serves through its client-action path once it
//! exists).

use std::sync::Arc;
use std::time::Duration;

use agenthost_dispatcher::{ClientContext, LaunchKind, ServiceRegistry};
use agenthost_protocol::ActionOrigin;
use agenthost_service::AgentService;
use agenthost_services::{
    ClientActionIntake, ClientActionRequest, ClientActionRequests, Configuration, DispatchError,
    ISOLATION_KEY, ISOLATION_NONE, InMemoryConfiguration, LiveSubscriptions, SubscriptionTracker,
    client_action_queue, isolation_config_property,
};
use agenthost_state::ClientDispatch;

use crate::CliError;
pub use agenthost_tool_execution::{DEFAULT_GRACE, UnattendedPolicy};

pub use agenthost_contrib_client_departure::{
    DEFAULT_GRACE as DEFAULT_CLIENT_GRACE, GRACE_KEY as CLIENT_GRACE_KEY,
};
pub use agenthost_contrib_unattended_policy::{GRACE_KEY, POLICY_KEY};
use agenthost_protocol::ahp_types::state::{SessionConfigSchema, SessionConfigState};

/// The session configuration every session of the host gets: the session-mutable property
/// `unattended`, defaulting to the host's policy — so a client can change one session's policy
/// with `session/configChanged` (persisted and restored with the session) — and `isolation`
/// (`none` | `worktree`), chosen at `createSession` and fixed afterwards.
pub fn session_config(
    options: &UnattendedOptions,
    default_budget_usd: Option<f64>,
) -> SessionConfigState {
    let property = agenthost_contrib_unattended_policy::session_config_property(&options.policy);
    let mut values = agenthost_contrib_unattended_policy::session_config_values(&options.policy);
    values.insert(
        ISOLATION_KEY.to_owned(),
        serde_json::Value::String(ISOLATION_NONE.to_owned()),
    );
    values.extend(agenthost_contrib_session_modes::session_config_values());
    values.extend(agenthost_contrib_session_limits::session_config_values(
        default_budget_usd,
    ));
    SessionConfigState {
        schema: SessionConfigSchema {
            r#type: "object".to_owned(),
            properties: [
                (POLICY_KEY.to_owned(), property),
                (ISOLATION_KEY.to_owned(), isolation_config_property()),
                (
                    agenthost_provider_api::MODE_KEY.to_owned(),
                    agenthost_contrib_session_modes::mode_property(),
                ),
                (
                    agenthost_contrib_session_modes::AUTO_APPROVE_KEY.to_owned(),
                    agenthost_contrib_session_modes::auto_approve_property(),
                ),
                (
                    agenthost_contrib_session_limits::BUDGET_KEY.to_owned(),
                    agenthost_contrib_session_limits::budget_property(),
                ),
                (
                    agenthost_contrib_session_limits::MAX_TOOL_CALLS_KEY.to_owned(),
                    agenthost_contrib_session_limits::max_tool_calls_property(),
                ),
            ]
            .into_iter()
            .collect(),
            required: None,
        },
        values,
    }
}

/// What `--unattended` and `--unattended-grace` say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnattendedOptions {
    /// The policy (default `off`).
    pub policy: UnattendedPolicy,
    /// How long an obligation stays unclaimed before the policy answers it.
    pub grace: Duration,
    /// How long a client that disconnected has to come back before its running client tools
    /// are failed (`--client-grace`; the `clientDeparture` contribution, always on).
    pub client_grace: Duration,
}

impl Default for UnattendedOptions {
    fn default() -> Self {
        Self {
            policy: UnattendedPolicy::Off,
            grace: DEFAULT_GRACE,
            client_grace: DEFAULT_CLIENT_GRACE,
        }
    }
}

impl UnattendedOptions {
    /// Parses the two flags' values (`grace`: the engine's default when `None`).
    pub fn parse(policy: &str, grace: Option<&str>) -> Result<Self, CliError> {
        Ok(Self {
            policy: parse_policy(policy)?,
            grace: grace.map(parse_grace).transpose()?.unwrap_or(DEFAULT_GRACE),
            client_grace: DEFAULT_CLIENT_GRACE,
        })
    }
}

/// Parses `off`, `deny` or `allow=tool1,tool2`.
pub fn parse_policy(text: &str) -> Result<UnattendedPolicy, CliError> {
    text.parse()
        .map_err(|e: agenthost_tool_execution::PolicyParseError| CliError::usage(e.to_string()))
}

/// Parses an interval such as `500ms` or `2s` as [`parse_grace`] does, refusing zero (a task
/// repeating every 0 ms would spin).
pub fn parse_interval(text: &str) -> Result<Duration, CliError> {
    let every = parse_grace(text)?;
    if every.is_zero() {
        return Err(CliError::usage(format!(
            "invalid interval `{}`: it must be longer than 0",
            text.trim()
        )));
    }
    Ok(every)
}

/// Parses a duration such as `2s`, `500ms` or `1m` (a whole number and a unit).
pub fn parse_grace(text: &str) -> Result<Duration, CliError> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let bad = || {
        CliError::usage(format!(
            "invalid duration `{text}`: expected a whole number and a unit, as in `2s`, `500ms` or `1m`"
        ))
    };
    let number: u64 = number.parse().map_err(|_| bad())?;
    match unit {
        "ms" => Ok(Duration::from_millis(number)),
        "s" => Ok(Duration::from_secs(number)),
        "m" => number
            .checked_mul(60)
            .map(Duration::from_secs)
            .ok_or_else(bad),
        _ => Err(bad()),
    }
}

/// Registers the services of the unattended policy that the host does not register otherwise:
/// the configuration, the subscription tracker and the client-action intake — a queue whose
/// other end, returned here, the host serves once it exists ([`Wiring::serve_intake`]).
pub fn register_services(services: &mut ServiceRegistry) -> ClientActionRequests {
    let configuration = Arc::new(InMemoryConfiguration::new());
    let subscriptions = Arc::new(LiveSubscriptions::new());
    let (intake, requests) = client_action_queue();
    services
        .insert::<dyn Configuration>(configuration.clone())
        .insert::<InMemoryConfiguration>(configuration)
        .insert::<dyn SubscriptionTracker>(subscriptions)
        .insert::<dyn ClientActionIntake>(Arc::new(intake));
    requests
}

/// What the host wires after its services are registered.
pub struct Wiring {
    requests: ClientActionRequests,
    subscriptions: Option<Arc<dyn SubscriptionTracker>>,
}

impl std::fmt::Debug for Wiring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wiring")
            .field("tracks_subscriptions", &self.subscriptions.is_some())
            .finish_non_exhaustive()
    }
}

impl Wiring {
    /// Seeds the configuration with `options`; keeps the intake's `requests` for the host.
    pub fn new(
        services: &ServiceRegistry,
        options: &UnattendedOptions,
        requests: ClientActionRequests,
    ) -> Self {
        if let Ok(configuration) = services.get::<InMemoryConfiguration>() {
            let grace = u64::try_from(options.grace.as_millis()).unwrap_or(u64::MAX);
            configuration.set_root(POLICY_KEY, Some(options.policy.to_string().into()));
            configuration.set_root(GRACE_KEY, Some(grace.into()));
            let client_grace = u64::try_from(options.client_grace.as_millis()).unwrap_or(u64::MAX);
            configuration.set_root(CLIENT_GRACE_KEY, Some(client_grace.into()));
        }
        Self {
            requests,
            subscriptions: services.get::<dyn SubscriptionTracker>().ok(),
        }
    }

    /// The tracker the host reports subscriptions to, when the policy's services have one.
    pub fn tracker(&self) -> Option<Arc<dyn SubscriptionTracker>> {
        self.subscriptions.clone()
    }

    /// Serves the client-action intake, in order, on a task: each submission goes through the
    /// host's client-action path ([`AgentService::client_action`]) as the client it names, with
    /// an increasing `clientSeq`. The host is held weakly (it owns the contributions that submit);
    /// the task ends with it.
    pub fn serve_intake(self, host: &Arc<AgentService>, launch_kind: LaunchKind) {
        let mut requests = self.requests;
        let host = Arc::downgrade(host);
        tokio::spawn(async move {
            let mut client_seq = 0;
            while let Some(request) = requests.recv().await {
                let Some(host) = host.upgrade() else {
                    break;
                };
                client_seq += 1;
                let outcome = submit_as_client(&host, &request, client_seq, &launch_kind);
                request.answer(outcome);
            }
        });
    }
}

/// The host acting as a client of its own: `request` through its client-action path.
fn submit_as_client(
    host: &AgentService,
    request: &ClientActionRequest,
    client_seq: i64,
    launch_kind: &LaunchKind,
) -> Result<u64, DispatchError> {
    let refused = |reason: String| DispatchError {
        channel: request.channel.clone(),
        reason,
    };
    let origin = ActionOrigin {
        client_id: request.client_id.clone(),
        client_seq,
    };
    let context = ClientContext {
        client_id: Some(request.client_id.clone()),
        client_kind: None,
        launch_kind: launch_kind.clone(),
        token: None,
    };
    match host.client_action(&request.channel, request.action.clone(), origin, &context) {
        ClientDispatch::Accepted(envelope) => Ok(envelope.server_seq),
        ClientDispatch::Rejected(echo) => Err(refused(
            echo.rejection_reason
                .unwrap_or_else(|| "rejected".to_owned()),
        )),
        ClientDispatch::Ignored => Err(refused("unknown channel".to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_parse_with_clear_errors() {
        assert_eq!(
            UnattendedOptions::parse("deny", Some("200ms")).ok(),
            Some(UnattendedOptions {
                policy: UnattendedPolicy::Deny,
                grace: Duration::from_millis(200),
                client_grace: DEFAULT_CLIENT_GRACE,
            })
        );
        assert_eq!(
            UnattendedOptions::parse("off", None).ok(),
            Some(UnattendedOptions::default())
        );
        assert_eq!(parse_grace("2s").ok(), Some(Duration::from_secs(2)));
        assert_eq!(parse_grace("1m").ok(), Some(Duration::from_secs(60)));
        for bad in ["", "2", "ms", "2h", "-1s", "1.5s"] {
            let error = parse_grace(bad).unwrap_err();
            assert!(matches!(error, CliError::Usage(_)), "{bad:?}: {error:?}");
            assert!(error.to_string().contains("500ms"), "{bad:?}: {error}");
        }
        let error = parse_policy("sometimes").unwrap_err();
        assert!(error.to_string().contains("allow=tool1,tool2"), "{error}");
        assert!(parse_policy("allow=").is_err());
    }
}
