//! The worktree record of a session, read straight from the store.

use agenthost_protocol::SessionUri;
use agenthost_services::{IsolatedSession, WORKTREE_META_KEY};
use agenthost_store::{MetaOwner, Store};

/// The isolation record of `session` in `store`, when it has one that decodes (read
/// synchronously, for the path checks of a client's request).
pub fn stored_isolation(store: &Store, session: &SessionUri) -> Option<IsolatedSession> {
    let value = store
        .meta(MetaOwner::Session(session), WORKTREE_META_KEY)
        .ok()??;
    serde_json::from_str(&value).ok()
}
