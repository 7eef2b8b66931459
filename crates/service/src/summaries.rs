//! `root/sessionSummaryChanged` (AHP §7, §8.2): when an action on a session channel changed a
//! field of the session's catalog entry — its title (a rename, also one VS Code dispatches on
//! the chat channel, which the `sessionTitle` contribution cascades to the session), status,
//! activity, chats, working directories, `modifiedAt` — root subscribers get the changed fields.
//! Clients that list sessions without subscribing to each (VS Code's session list) stay current.
//!
//! An envelope observer on the state manager: it runs after the envelope was sequenced, outside
//! the state lock, and compares the session's summary with the one it last announced. Only
//! session-channel actions are looked at (a chat's summary reaches its session as
//! `session/chatUpdated`), so streaming deltas cost nothing. The first change seen for a session
//! announces every mutable field; identity fields (`resource`, `provider`, `createdAt`) are never
//! sent. A field that becomes absent (an activity cleared) cannot be expressed by a partial
//! summary and is left to the next `listSessions`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use agenthost_protocol::ROOT_RESOURCE_URI;
use agenthost_protocol::notifications::{PartialSessionSummary, SessionSummaryChangedParams};
use agenthost_state::{EnvelopeObserver, ObservedEnvelope, StateManager, notification_frame};
use serde_json::{Map, Value};

use crate::SessionService;

/// Summary fields that identify a session and never change.
const IDENTITY_FIELDS: [&str; 3] = ["resource", "provider", "createdAt"];

/// Announces summary changes to root subscribers.
pub(crate) struct SummaryNotifier {
    state: Weak<StateManager>,
    service: Weak<SessionService>,
    /// The mutable fields last announced (or first seen), per session.
    announced: Mutex<HashMap<String, Map<String, Value>>>,
}

impl SummaryNotifier {
    /// Observes `state` for sessions of `service`; holds neither alive.
    pub(crate) fn install(state: &Arc<StateManager>, service: &Arc<SessionService>) {
        state.add_observer(Arc::new(Self {
            state: Arc::downgrade(state),
            service: Arc::downgrade(service),
            announced: Mutex::new(HashMap::new()),
        }));
    }
}

impl EnvelopeObserver for SummaryNotifier {
    fn on_envelope(&self, observed: &ObservedEnvelope<'_>) {
        let Some(session) = observed.session else {
            return;
        };
        if !observed.applied || *session != observed.envelope.channel.as_str() {
            return;
        }
        let (Some(state), Some(service)) = (self.state.upgrade(), self.service.upgrade()) else {
            return;
        };
        let mut announced = self.announced.lock().unwrap_or_else(|e| e.into_inner());
        let Some(summary) = service.summary(session) else {
            announced.remove(session.as_str());
            return;
        };
        let Ok(Value::Object(mut fields)) = serde_json::to_value(&summary) else {
            return;
        };
        for identity in IDENTITY_FIELDS {
            fields.remove(identity);
        }
        let previous = announced.get(session.as_str());
        let changed: Map<String, Value> = fields
            .iter()
            .filter(|(key, value)| previous.and_then(|p| p.get(*key)) != Some(*value))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        if changed.is_empty() {
            return;
        }
        announced.insert(session.to_string(), fields);
        drop(announced);
        let changes: PartialSessionSummary = match serde_json::from_value(Value::Object(changed)) {
            Ok(changes) => changes,
            Err(error) => {
                tracing::warn!(session = session.as_str(), %error, "a summary change could not be encoded");
                return;
            }
        };
        let params = SessionSummaryChangedParams {
            channel: ROOT_RESOURCE_URI.to_owned(),
            session: session.to_string(),
            changes,
        };
        state.notify(
            ROOT_RESOURCE_URI,
            &notification_frame("root/sessionSummaryChanged", &params),
        );
    }
}
