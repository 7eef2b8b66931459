//! The host's gates: which client a connection speaks for, which channels and methods its
//! token lets it reach, and the intake of its `dispatchAction` (rate limit, restore, echo).

use agenthost_protocol::ActionOrigin;
use agenthost_protocol::ahp_types::ROOT_RESOURCE_URI;
use agenthost_protocol::commands::DispatchActionParams;
use agenthost_service::{ClientDispatch, action_frame};

use super::*;
use crate::access::{READ_METHODS, Scope};

impl Host {
    /// Binds `client_id` to `conn` (see [`crate::clients`]): refused when another token owns
    /// it; a connection of the same client it replaces is closed.
    pub(super) fn bind_client(&self, conn: &Connection, client_id: &str) -> Result<(), RpcError> {
        let replaced = self
            .peers()
            .clients
            .bind(client_id, conn)
            .map_err(|taken| {
                tracing::warn!(
                    conn = %conn.id(),
                    token = conn.grant().name,
                    owner = taken.owner,
                    "refused a client id that belongs to another token"
                );
                RpcError::permission_denied(format!(
                    "client id {:?} belongs to another token; choose another client id",
                    agenthost_protocol::uri::snippet(client_id)
                ))
            })?;
        if let Some(old) = replaced {
            tracing::info!(conn = %old.id(), by = %conn.id(), "a newer connection took over its client id");
            old.close_with(
                crate::connection::CLOSE_POLICY,
                "another connection of this client took over its client id",
                false,
            );
        }
        Ok(())
    }

    /// The session `channel` belongs to (`None` for the root and channels of no session).
    pub(super) fn channel_session(&self, channel: &str) -> Option<String> {
        match agenthost_protocol::Channel::parse(channel).ok()? {
            agenthost_protocol::Channel::Session(session)
            | agenthost_protocol::Channel::Annotations(session) => Some(session.into_string()),
            agenthost_protocol::Channel::Chat(chat) => {
                let sessions = self.service.sessions();
                sessions
                    .chat_session(&sessions.resolve_chat_uri(&chat))
                    .map(agenthost_protocol::SessionUri::into_string)
            }
            agenthost_protocol::Channel::Changeset(uri) => {
                agenthost_protocol::uri::ChangesetUri::parse(&uri)
                    .ok()
                    .map(|changeset| changeset.session_uri().to_string())
            }
            _ => None,
        }
    }

    /// Whether `conn`'s token may see `channel`: a `session:` token only the root and its own
    /// session's channels.
    pub(super) fn channel_allowed(&self, conn: &Connection, channel: &str) -> Result<(), RpcError> {
        let grant = conn.grant();
        let Scope::Session(own) = &grant.scope else {
            return Ok(());
        };
        if channel == ROOT_RESOURCE_URI
            || self
                .channel_session(channel)
                .is_some_and(|session| grant.scope.sees_session(&session))
        {
            return Ok(());
        }
        Err(RpcError::permission_denied(format!(
            "the token {:?} this connection presented is limited to {own}",
            grant.name
        )))
    }

    /// Whether `conn`'s token may make the request `method`: `observe` only the reading ones
    /// ([`READ_METHODS`]); `session:` only about its own session, and no resource methods
    /// (they would show the rest of the roots).
    pub(super) fn request_allowed(
        &self,
        conn: &Connection,
        method: &str,
        raw: Option<&Value>,
    ) -> Result<(), RpcError> {
        let grant = conn.grant();
        match &grant.scope {
            Scope::Full => Ok(()),
            Scope::Observe if READ_METHODS.contains(&method) => Ok(()),
            Scope::Observe => Err(RpcError::permission_denied(format!(
                "{}: the token {:?} this connection presented may only observe",
                agenthost_protocol::uri::snippet(method),
                grant.name
            ))),
            Scope::Session(own) => {
                if matches!(
                    method,
                    "listSessions"
                        | "resolveSessionConfig"
                        | "unsubscribe"
                        | "getNetworkDiagnosticsInfo"
                        | "getManagedSettingsDiagnostics"
                ) {
                    return Ok(());
                }
                let field = |name: &str| raw.and_then(|p| p.get(name)).and_then(Value::as_str);
                let channel = field("channel").or_else(|| field("session"));
                let limited = || {
                    RpcError::permission_denied(format!(
                        "{}: the token {:?} this connection presented is limited to {own}",
                        agenthost_protocol::uri::snippet(method),
                        grant.name
                    ))
                };
                match (method, channel) {
                    (m, _) if m.starts_with("resource") => Err(limited()),
                    ("createSession", Some(channel)) if grant.scope.sees_session(channel) => Ok(()),
                    ("createSession", _) => Err(limited()),
                    (_, Some(channel)) => self.channel_allowed(conn, channel),
                    (_, None) => Err(limited()),
                }
            }
        }
    }

    /// A `dispatchAction` over the connection's rate limit: echoed back to it alone with a
    /// `rejectionReason` and a fresh `serverSeq`, applied nowhere (AHP §6.1: problems with a
    /// dispatched action are reported through `rejectionReason`). An unknown channel is
    /// ignored as always; an evicted session is not restored for it.
    pub(super) fn refuse_rate_limited(&self, conn: &Connection, raw: Option<Value>) {
        let Ok(p) = params::<DispatchActionParams>(raw) else {
            tracing::debug!(conn = %conn.id(), "dropped a malformed dispatchAction over the rate limit");
            return;
        };
        let channel = self.resolve_chat(&p.channel);
        self.refuse(conn, &channel, p, RATE_LIMITED_REASON);
    }

    /// Echoes a dispatched action back to `conn` alone, rejected with `reason` (an action on an
    /// unknown channel is ignored, as the specification says).
    pub(super) fn refuse(
        &self,
        conn: &Connection,
        channel: &str,
        p: DispatchActionParams,
        reason: &str,
    ) {
        let origin = ActionOrigin {
            client_id: conn.client_id().unwrap_or_default(),
            client_seq: p.client_seq,
        };
        match self.service.refuse(channel, p.action, origin, reason) {
            Some(echo) => {
                let _ = conn.send_frame(action_frame(&echo));
            }
            None => tracing::debug!(channel, "ignoring an action on an unknown channel"),
        }
    }

    pub(super) async fn dispatch_action(&self, conn: &Connection, p: DispatchActionParams) {
        let channel = self.resolve_chat(&p.channel);
        let grant = conn.grant();
        let refusal = if grant.scope.may_write() {
            self.channel_allowed(conn, &channel)
                .err()
                .map(|error| error.message)
        } else {
            Some(format!(
                "the token {:?} this connection presented may only observe",
                grant.name
            ))
        };
        if let Some(reason) = refusal {
            self.refuse(conn, &channel, p, &reason);
            return;
        }
        let origin = ActionOrigin {
            client_id: conn.client_id().unwrap_or_default(),
            client_seq: p.client_seq,
        };
        let context = self.client_context(conn);
        match self
            .service
            .dispatch_action(&channel, p.action, origin, &context)
            .await
        {
            ClientDispatch::Accepted(_) => {}
            ClientDispatch::Rejected(echo) => {
                // The rejection goes to the dispatching connection only.
                let _ = conn.send_frame(action_frame(&echo));
            }
            ClientDispatch::Ignored => {
                tracing::debug!(channel, "ignoring an action on an unknown channel");
            }
        }
    }
}
