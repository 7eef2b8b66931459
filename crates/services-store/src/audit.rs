//! [`StoreAuditLog`]: the audit log in the session database's `audit` table.

use std::sync::Arc;

use agenthost_services::{AuditLog, WriteQueue};
use agenthost_store::{AuditRecord, Store};

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
