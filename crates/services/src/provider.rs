//! [`ProviderLocator`]: which provider runs a session.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, RwLock};

use agenthost_protocol::SessionUri;
use agenthost_state::StateManager;

/// Resolves the provider id of a session (`claude`, `codex`, `scripted`, …).
pub trait ProviderLocator: Send + Sync {
    /// The provider of `session`, or `None` when it cannot be told.
    fn provider_of(&self, session: &SessionUri) -> Option<String>;
}

/// The host fills a map when it creates or restores a session; a session not in it falls back
/// to the provider scheme of its URI (`claude:/<id>` → `claude`). A canonical
/// `ahp-session:/<id>` not in the map has no provider. Entries are removed with
/// [`forget`](Self::forget) when a session is disposed.
#[derive(Debug, Default)]
pub struct DefaultProviderLocator {
    sessions: RwLock<HashMap<String, String>>,
}

impl DefaultProviderLocator {
    /// An empty locator (URI schemes only).
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that `provider` runs `session`.
    pub fn set(&self, session: &str, provider: &str) {
        self.sessions
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(session.to_owned(), provider.to_owned());
    }

    /// Forgets `session`.
    pub fn forget(&self, session: &str) {
        self.sessions
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(session);
    }
}

impl ProviderLocator for DefaultProviderLocator {
    fn provider_of(&self, session: &SessionUri) -> Option<String> {
        let mapped = self
            .sessions
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(session.as_str())
            .cloned();
        mapped.or_else(|| session.provider_scheme().map(str::to_owned))
    }
}

/// The host's locator: the provider a session's state names (`SessionSummary.provider`, set
/// when the session was created or restored), when the host runs that provider. A session of a
/// provider the host was not started with has none — its turns are refused with `noAgent`,
/// exactly as the orchestrator refuses a direct turn.
#[derive(Debug, Clone)]
pub struct StateProviderLocator {
    state: Arc<StateManager>,
    known: BTreeSet<String>,
}

impl StateProviderLocator {
    /// Resolves through `state`, admitting only the provider ids in `known`.
    pub fn new(state: Arc<StateManager>, known: impl IntoIterator<Item = String>) -> Self {
        Self {
            state,
            known: known.into_iter().collect(),
        }
    }
}

impl ProviderLocator for StateProviderLocator {
    fn provider_of(&self, session: &SessionUri) -> Option<String> {
        self.state
            .read(|h| h.session(session).map(|s| s.provider.clone()))
            .filter(|id| self.known.contains(id))
    }
}

/// Every agent in `agents` advertises side chats: the host makes them (the session service
/// records a side chat's source, the `sideChat` contribution frames its first message),
/// whatever the agent itself can do.
pub fn advertise_side_chats(agents: &mut [agenthost_protocol::state::AgentInfo]) {
    for agent in agents {
        let chats = agent.capabilities.get_or_insert_default();
        chats.multiple_chats.get_or_insert_default().side_chat = Some(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_map_wins_then_the_scheme() {
        let locator = DefaultProviderLocator::new();
        let provider_of = |session: &str| locator.provider_of(&session.parse().unwrap());
        assert_eq!(provider_of("claude:/s1").as_deref(), Some("claude"));
        assert_eq!(provider_of("ahp-session:/s1"), None);
        locator.set("ahp-session:/s1", "scripted");
        locator.set("copilotcli:/s2", "copilot");
        assert_eq!(provider_of("ahp-session:/s1").as_deref(), Some("scripted"));
        assert_eq!(provider_of("copilotcli:/s2").as_deref(), Some("copilot"));
        locator.forget("copilotcli:/s2");
        assert_eq!(provider_of("copilotcli:/s2").as_deref(), Some("copilotcli"));
    }
}
