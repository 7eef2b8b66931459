//! `sessionFlags` (order 700, `onDidDispatchAction`): persists what a client changes on a session
//! channel that the session service does not — its configuration values and its read and
//! archived flags — through the session data store.
//!
//! | Action (session channel) | Rejected too? | Persisted |
//! |---|---|---|
//! | `session/configChanged` | **yes** | the session's *current* `config.values` minus the transient keys, as JSON under the session metadata key [`CONFIG_KEY`] |
//! | `session/isReadChanged` | no | [`Flags`] of the session (the store's `sessions.read` / `archived` columns) |
//! | `session/isArchivedChanged` | no | the same [`Flags`]; on unarchive also deletes the session metadata key [`AUTO_ARCHIVE_KEY`] when it holds a value |
//!
//! The rejection rule differs by design: a config write records current state, which a rejected
//! envelope left unchanged, so writing it is harmless (and mirrors the behaviour this was
//! extracted from); a flag write records the action's value, which a rejection never applied.
//!
//! The flags go to the same columns the session service writes when it creates a session and
//! reads when it restores one (`SessionDataStore::set_flags` → `Store::set_session_flags`), so
//! both agree. The flag the action changes is taken from the action, the other one from current
//! host state (from the stored flags when the session is not in state).
//!
//! The central decision: **the observer never waits for the store.** `onDidDispatchAction` is
//! synchronous; each write is queued and run by a task on the current tokio runtime, one at a
//! time in queue order, so the last change always lands last. A failing write is logged
//! (`warn`) and dropped. [`SessionFlags::flush`] waits for the queue.
#![deny(missing_docs)]

use std::sync::Arc;

use agenthost_dispatcher::{
    ChatContribution, Contribution, ContributionContext, DispatchedAction, Hook, HookResult,
    HookSet, MissingService, ServiceRegistry,
};
use agenthost_protocol::ahp_types::state::SessionStatus;
use agenthost_protocol::{SessionUri, StateAction};
use agenthost_services::{DataOwner, Flags, HostState, SessionDataStore};

use agenthost_services::{Write, WriteQueue};

/// Session metadata key of the persisted configuration values (a JSON object); the session
/// service restores them from there.
pub const CONFIG_KEY: &str = agenthost_services::SESSION_CONFIG_KEY;

/// Session metadata key of the automatic-archive time, deleted when the session is unarchived.
pub const AUTO_ARCHIVE_KEY: &str = "autoArchiveAt";

/// The `sessionFlags` contribution. Register it with `dispatcher.register::<SessionFlags>()`;
/// it needs `dyn SessionDataStore` and `dyn HostState` in the registry.
pub struct SessionFlags {
    data: Arc<dyn SessionDataStore>,
    state: Arc<dyn HostState>,
    transient_keys: Vec<String>,
    writes: Arc<WriteQueue>,
}

impl std::fmt::Debug for SessionFlags {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionFlags")
            .field("transient_keys", &self.transient_keys)
            .finish_non_exhaustive()
    }
}

impl SessionFlags {
    /// Persists through `data`, reading current values from `state`. No config key is
    /// transient.
    pub fn new(data: Arc<dyn SessionDataStore>, state: Arc<dyn HostState>) -> Self {
        Self {
            data,
            state,
            transient_keys: Vec::new(),
            writes: Arc::new(WriteQueue::new(<Self as Contribution>::ID)),
        }
    }

    /// Resolves `dyn SessionDataStore` and `dyn HostState` from `services`.
    pub fn from_services(services: &ServiceRegistry) -> Result<Self, MissingService> {
        Ok(Self::new(
            services.get::<dyn SessionDataStore>()?,
            services.get::<dyn HostState>()?,
        ))
    }

    /// Config keys that are never persisted (values that only make sense while the session is
    /// live).
    pub fn with_transient_keys(
        mut self,
        keys: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.transient_keys = keys.into_iter().map(Into::into).collect();
        self
    }

    /// Waits until every write queued so far has finished (or failed and been logged).
    pub async fn flush(&self) {
        self.writes.flush().await;
    }

    /// The write of `session`'s current config values, if it has any.
    fn config_write(&self, session: SessionUri) -> Option<Write> {
        let Some(config) = self
            .state
            .session(session.as_str())
            .and_then(|state| state.config)
        else {
            tracing::debug!(session = %session, "sessionFlags: no config in state, nothing persisted");
            return None;
        };
        let mut values = config.values;
        for key in &self.transient_keys {
            values.remove(key);
        }
        let encoded = match serde_json::to_string(&values) {
            Ok(encoded) => encoded,
            Err(error) => {
                tracing::warn!(session = %session, %error, "sessionFlags: could not encode the config values");
                return None;
            }
        };
        let write = self.data.set_meta(
            DataOwner::Session(session.clone()),
            CONFIG_KEY,
            Some(encoded),
        );
        Some(Box::pin(async move {
            if let Err(error) = write.await {
                tracing::warn!(session = %session, %error, "sessionFlags: could not persist the config values");
            }
        }))
    }

    /// The write of `session`'s flags with `change` applied.
    fn flags_write(&self, session: SessionUri, change: FlagChange) -> Write {
        let current = self.state.session(session.as_str()).map(|state| {
            let status = SessionStatus::from_bits(state.status);
            Flags {
                read: status.contains(SessionStatus::IsRead),
                archived: status.contains(SessionStatus::IsArchived),
            }
        });
        let data = Arc::clone(&self.data);
        Box::pin(async move {
            let owner = DataOwner::Session(session.clone());
            if let Err(error) = write_flags(data.as_ref(), owner, current, change).await {
                tracing::warn!(session = %session, ?change, %error, "sessionFlags: could not persist the session's flags");
            }
        })
    }
}

/// Which flag an accepted action set.
#[derive(Debug, Clone, Copy)]
enum FlagChange {
    Read(bool),
    Archived(bool),
}

async fn write_flags(
    data: &dyn SessionDataStore,
    owner: DataOwner,
    current: Option<Flags>,
    change: FlagChange,
) -> Result<(), agenthost_services::DataError> {
    let mut flags = match current {
        Some(flags) => flags,
        // Not in state: keep the other stored flag.
        None => data.flags(owner.clone()).await?.unwrap_or_default(),
    };
    match change {
        FlagChange::Read(read) => flags.read = read,
        FlagChange::Archived(archived) => flags.archived = archived,
    }
    data.set_flags(owner.clone(), flags).await?;
    if let FlagChange::Archived(false) = change
        && data.meta(owner.clone(), AUTO_ARCHIVE_KEY).await?.is_some()
    {
        data.set_meta(owner, AUTO_ARCHIVE_KEY, None).await?;
    }
    Ok(())
}

impl Contribution for SessionFlags {
    const ID: &'static str = "sessionFlags";
    const ORDER: i32 = 700;
    const HOOKS: HookSet = HookSet::of(&[Hook::DidDispatchAction]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Self::from_services(services)
    }
}

impl ChatContribution for SessionFlags {
    fn on_did_dispatch_action(&self, action: &DispatchedAction<'_>) -> HookResult {
        let accepted = action.rejection_reason.is_none();
        let change = match action.action {
            StateAction::SessionConfigChanged(_) => None,
            StateAction::SessionIsReadChanged(a) if accepted => Some(FlagChange::Read(a.is_read)),
            StateAction::SessionIsArchivedChanged(a) if accepted => {
                Some(FlagChange::Archived(a.is_archived))
            }
            _ => return Ok(()),
        };
        // Session actions on the session's own channel only.
        let Some(session) = action.session_channel().cloned() else {
            return Ok(());
        };
        let write = match change {
            None => self.config_write(session),
            Some(change) => Some(self.flags_write(session, change)),
        };
        if let Some(write) = write {
            self.writes.push(write);
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
