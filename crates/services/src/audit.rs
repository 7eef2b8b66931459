//! [`AuditLog`]: the record of what clients decided — every confirmation answer, cancel and
//! rollback — with the token and client id that did it (`agent-host audit` prints it).

use std::sync::Arc;

use agenthost_store::{AuditRecord, Store};

use crate::write_queue::WriteQueue;

/// Where audit entries go. Recording never blocks and never fails the caller: a write the
/// store refuses is logged.
pub trait AuditLog: Send + Sync {
    /// Records one entry (written in order, off the calling thread).
    fn record(&self, entry: AuditRecord);
}

/// [`AuditLog`] over the session database's `audit` table.
pub struct StoreAuditLog {
    store: Store,
    queue: Arc<WriteQueue>,
}

impl std::fmt::Debug for StoreAuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreAuditLog").finish_non_exhaustive()
    }
}

impl StoreAuditLog {
    /// An audit log writing to `store`.
    pub fn new(store: Store) -> Self {
        Self {
            store,
            queue: Arc::new(WriteQueue::new("auditLog")),
        }
    }
}

impl AuditLog for StoreAuditLog {
    fn record(&self, entry: AuditRecord) {
        let store = self.store.clone();
        self.queue.push(Box::pin(async move {
            let written = store
                .blocking(move |store| store.append_audit(&entry))
                .await;
            if let Err(error) = written {
                tracing::error!(%error, "an audit entry was not written");
            }
        }));
    }
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
