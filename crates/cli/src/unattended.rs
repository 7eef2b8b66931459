//! The host side of the unattended policy: `--unattended` / `--unattended-grace` (and
//! `--client-grace`, read by the `clientDeparture` contribution over the same services), the
//! services the `unattendedPolicy` contribution reads, and their wiring into the host.
//!
//! The contribution (crate `agenthost-contrib-unattended-policy`) needs four services:
//! `dyn HostState` (registered anyway), `dyn Configuration` (seeded here with the policy under
//! the root key `unattended` and the grace window under `unattendedGraceMs`),
//! `dyn SubscriptionTracker` (the server reports subscriptions to it) and
//! `dyn ClientActionIntake` (bound here, once the server host exists, to the host's
//! client-action path).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use agenthost_dispatcher::{ClientContext, LaunchKind, ServiceRegistry};
use agenthost_protocol::{ActionOrigin, StateAction};
use agenthost_service::AgentService;
use agenthost_services::{
    ClientActionIntake, Configuration, DispatchError, ISOLATION_KEY, ISOLATION_NONE,
    InMemoryConfiguration, LateClientActionIntake, LiveSubscriptions, SubscriptionTracker,
    isolation_config_property,
};
use agenthost_state::ClientDispatch;
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
pub fn session_config(options: &UnattendedOptions) -> SessionConfigState {
    let property = agenthost_contrib_unattended_policy::session_config_property(&options.policy);
    let mut values = agenthost_contrib_unattended_policy::session_config_values(&options.policy);
    values.insert(
        ISOLATION_KEY.to_owned(),
        serde_json::Value::String(ISOLATION_NONE.to_owned()),
    );
    values.extend(agenthost_contrib_session_modes::session_config_values());
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
    pub fn parse(policy: &str, grace: Option<&str>) -> Result<Self, String> {
        Ok(Self {
            policy: parse_policy(policy)?,
            grace: grace.map(parse_grace).transpose()?.unwrap_or(DEFAULT_GRACE),
            client_grace: DEFAULT_CLIENT_GRACE,
        })
    }
}

/// Parses `off`, `deny` or `allow=tool1,tool2`.
pub fn parse_policy(text: &str) -> Result<UnattendedPolicy, String> {
    text.parse().map_err(|e| format!("{e}"))
}

/// Parses an interval such as `500ms` or `2s` as [`parse_grace`] does, refusing zero (a task
/// repeating every 0 ms would spin).
pub fn parse_interval(text: &str) -> Result<Duration, String> {
    let every = parse_grace(text)?;
    if every.is_zero() {
        return Err(format!(
            "invalid interval `{}`: it must be longer than 0",
            text.trim()
        ));
    }
    Ok(every)
}

/// Parses a duration such as `2s`, `500ms` or `1m` (a whole number and a unit).
pub fn parse_grace(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let bad = || {
        format!(
            "invalid duration `{text}`: expected a whole number and a unit, as in `2s`, `500ms` or `1m`"
        )
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
/// the configuration, the subscription tracker and the (late-bound) client-action intake.
pub fn register_services(services: &mut ServiceRegistry) {
    let configuration = Arc::new(InMemoryConfiguration::new());
    let subscriptions = Arc::new(LiveSubscriptions::new());
    let intake = Arc::new(LateClientActionIntake::new());
    services
        .insert::<dyn Configuration>(configuration.clone())
        .insert::<InMemoryConfiguration>(configuration)
        .insert::<dyn SubscriptionTracker>(subscriptions)
        .insert::<dyn ClientActionIntake>(intake.clone())
        .insert::<LateClientActionIntake>(intake);
}

/// What the host wires after its services are registered.
pub struct Wiring {
    intake: Option<Arc<LateClientActionIntake>>,
    subscriptions: Option<Arc<dyn SubscriptionTracker>>,
}

impl std::fmt::Debug for Wiring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wiring")
            .field("intake", &self.intake)
            .field("tracks_subscriptions", &self.subscriptions.is_some())
            .finish()
    }
}

impl Wiring {
    /// Seeds the configuration with `options` and picks up what is bound later.
    pub fn new(services: &ServiceRegistry, options: &UnattendedOptions) -> Self {
        if let Ok(configuration) = services.get::<InMemoryConfiguration>() {
            let grace = u64::try_from(options.grace.as_millis()).unwrap_or(u64::MAX);
            configuration.set_root(POLICY_KEY, Some(options.policy.to_string().into()));
            configuration.set_root(GRACE_KEY, Some(grace.into()));
            let client_grace = u64::try_from(options.client_grace.as_millis()).unwrap_or(u64::MAX);
            configuration.set_root(CLIENT_GRACE_KEY, Some(client_grace.into()));
        }
        Self {
            intake: services.get::<LateClientActionIntake>().ok(),
            subscriptions: services.get::<dyn SubscriptionTracker>().ok(),
        }
    }

    /// Binds the client-action intake to the host's client-action path
    /// ([`AgentService::client_action`]). The host is held weakly: it owns the contributions that
    /// hold the intake.
    pub fn bind_intake(&self, host: &Arc<AgentService>, launch_kind: LaunchKind) {
        if let Some(intake) = &self.intake {
            intake.bind(Arc::new(HostClientActions {
                host: Arc::downgrade(host),
                launch_kind,
                next_seq: AtomicI64::new(1),
            }));
        }
    }

    /// The tracker the host reports subscriptions to, when the policy's services have one.
    pub fn tracker(&self) -> Option<Arc<dyn SubscriptionTracker>> {
        self.subscriptions.clone()
    }
}

/// The host acting as a client of its own: its client-action path with its own origin
/// (client id as given, increasing `clientSeq`).
struct HostClientActions {
    host: Weak<AgentService>,
    launch_kind: LaunchKind,
    next_seq: AtomicI64,
}

impl ClientActionIntake for HostClientActions {
    fn submit(
        &self,
        client_id: &str,
        channel: &str,
        action: StateAction,
    ) -> Result<u64, DispatchError> {
        let refused = |reason: String| DispatchError {
            channel: channel.to_owned(),
            reason,
        };
        let Some(host) = self.host.upgrade() else {
            return Err(refused("the host is shutting down".to_owned()));
        };
        let origin = ActionOrigin {
            client_id: client_id.to_owned(),
            client_seq: self.next_seq.fetch_add(1, Ordering::Relaxed),
        };
        let context = ClientContext {
            client_id: Some(client_id.to_owned()),
            client_kind: None,
            launch_kind: self.launch_kind.clone(),
            token: None,
        };
        match host.client_action(channel, action, origin, &context) {
            ClientDispatch::Accepted(envelope) => Ok(envelope.server_seq),
            ClientDispatch::Rejected(echo) => Err(refused(
                echo.rejection_reason
                    .unwrap_or_else(|| "rejected".to_owned()),
            )),
            ClientDispatch::Ignored => Err(refused("unknown channel".to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_parse_with_clear_errors() {
        assert_eq!(
            UnattendedOptions::parse("deny", Some("200ms")),
            Ok(UnattendedOptions {
                policy: UnattendedPolicy::Deny,
                grace: Duration::from_millis(200),
                client_grace: DEFAULT_CLIENT_GRACE,
            })
        );
        assert_eq!(
            UnattendedOptions::parse("off", None),
            Ok(UnattendedOptions::default())
        );
        assert_eq!(parse_grace("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_grace("1m"), Ok(Duration::from_secs(60)));
        for bad in ["", "2", "ms", "2h", "-1s", "1.5s"] {
            let error = parse_grace(bad).unwrap_err();
            assert!(error.contains("500ms"), "{bad:?}: {error}");
        }
        let error = parse_policy("sometimes").unwrap_err();
        assert!(error.contains("allow=tool1,tool2"), "{error}");
        assert!(parse_policy("allow=").is_err());
    }
}
