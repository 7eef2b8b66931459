//! [`AuditLog`]: the record of what clients decided — every confirmation answer, cancel and
//! rollback — with the token and client id that did it (`agent-host audit` prints it).

use agenthost_protocol::AuditRecord;

/// Where audit entries go. Recording never blocks and never fails the caller: a write the
/// store refuses is logged.
pub trait AuditLog: Send + Sync {
    /// Records one entry (written in order, off the calling thread).
    fn record(&self, entry: AuditRecord);
}

/// An entry at the current time. `token` `None` is the host itself acting as a client (the
/// unattended policy's answers).
pub fn audit_entry(
    token: Option<&str>,
    client_id: Option<&str>,
    channel: &str,
    action: &str,
    detail: serde_json::Value,
) -> AuditRecord {
    AuditRecord {
        at: crate::now_iso(),
        token: token.unwrap_or("host").to_owned(),
        client_id: client_id.unwrap_or_default().to_owned(),
        channel: channel.to_owned(),
        action: action.to_owned(),
        detail: detail.to_string(),
    }
}
