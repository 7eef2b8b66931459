//! One engine per session, and the host's claims: live subscriptions.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};

use agenthost_protocol::Uri;

use crate::engine::{ClaimGuard, EngineError, SessionEngine};
use crate::keys::Claimant;

type Factory = Box<dyn Fn(&Uri) -> Result<SessionEngine, EngineError> + Send + Sync>;

/// The engines of a process, one per session, reference-counted by attachments (P4): the
/// first attachment of a session creates its engine, the last detachment disposes it.
pub struct EngineRegistry {
    factory: Factory,
    engines: Mutex<HashMap<Uri, SessionEngine>>,
}

impl std::fmt::Debug for EngineRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineRegistry")
            .field("sessions", &self.engines().len())
            .finish_non_exhaustive()
    }
}

impl EngineRegistry {
    /// A registry creating each session's engine with `factory`.
    pub fn new(
        factory: impl Fn(&Uri) -> Result<SessionEngine, EngineError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            factory: Box::new(factory),
            engines: Mutex::new(HashMap::new()),
        }
    }

    fn engines(&self) -> MutexGuard<'_, HashMap<Uri, SessionEngine>> {
        self.engines.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Attaches `who` to the session's engine, creating it on the first attachment.
    pub fn attach(&self, session: &Uri, who: &str) -> Result<SessionEngine, EngineError> {
        let mut engines = self.engines();
        let engine = match engines.get(session) {
            Some(engine) => engine.clone(),
            None => {
                let engine = (self.factory)(session)?;
                engines.insert(session.clone(), engine.clone());
                engine
            }
        };
        engine.attach(who);
        Ok(engine)
    }

    /// Detaches `who`; the last detachment disposes the engine and forgets it. Returns whether
    /// the engine was disposed.
    pub fn detach(&self, session: &Uri, who: &str) -> bool {
        let mut engines = self.engines();
        let Some(engine) = engines.get(session) else {
            return false;
        };
        let disposed = engine.detach(who);
        if disposed {
            engines.remove(session);
        }
        disposed
    }

    /// The session's engine, if attached.
    pub fn get(&self, session: &Uri) -> Option<SessionEngine> {
        self.engines().get(session).cloned()
    }

    /// Number of live engines.
    pub fn len(&self) -> usize {
        self.engines().len()
    }

    /// Whether no engine is live.
    pub fn is_empty(&self) -> bool {
        self.engines().is_empty()
    }
}

/// The host's claims for one session engine: a connection subscribed to a chat claims that
/// chat's obligations (and the tool-call obligations of its subagent chats); unsubscribing or
/// disconnecting releases the claim. AHP has no claim message: the subscription is the claim.
#[derive(Debug)]
pub struct SubscriptionClaims {
    engine: SessionEngine,
    guards: BTreeMap<(String, Uri), ClaimGuard>,
}

impl SubscriptionClaims {
    /// Claims tracked against `engine`.
    pub fn new(engine: SessionEngine) -> Self {
        Self {
            engine,
            guards: BTreeMap::new(),
        }
    }

    /// `connection` subscribed to `chat`: it claims the chat (idempotent).
    pub fn subscribed(&mut self, connection: &str, chat: &Uri) {
        let key = (connection.to_owned(), chat.clone());
        if self.guards.contains_key(&key) {
            return;
        }
        let guard = self
            .engine
            .claim_chat(chat.clone(), Claimant::new(connection));
        self.guards.insert(key, guard);
    }

    /// `connection` unsubscribed from `chat`: its claim goes.
    pub fn unsubscribed(&mut self, connection: &str, chat: &Uri) {
        self.guards.remove(&(connection.to_owned(), chat.clone()));
    }

    /// `connection` went away: every claim it held goes.
    pub fn disconnected(&mut self, connection: &str) {
        self.guards.retain(|(owner, _), _| owner != connection);
    }

    /// Number of live subscription claims.
    pub fn len(&self) -> usize {
        self.guards.len()
    }

    /// Whether no subscription claims anything.
    pub fn is_empty(&self) -> bool {
        self.guards.is_empty()
    }
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
