//! [`SubscriptionTracker`]: which connections are subscribed to which channels, right now.
//!
//! The server reports every subscribe, unsubscribe and disconnect; contributions query the
//! live set and listen to its changes (the host's unattended policy treats a live subscription
//! to a chat as a claim on that chat's obligations). Listeners are called after the change is
//! recorded and outside any lock, so a listener may query the tracker.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

/// One change of the live subscriptions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubscriptionChange {
    /// `connection` subscribed to `channel` (reported once, not on a repeated subscribe).
    Subscribed {
        /// The connection's id.
        connection: String,
        /// The channel URI.
        channel: String,
    },
    /// `connection` unsubscribed from `channel`.
    Unsubscribed {
        /// The connection's id.
        connection: String,
        /// The channel URI.
        channel: String,
    },
    /// `connection` went away with these subscriptions (never empty).
    Disconnected {
        /// The connection's id.
        connection: String,
        /// The client id it had [identified](SubscriptionTracker::identified) as, if any.
        client: Option<String>,
        /// The channels it was subscribed to.
        channels: Vec<String>,
    },
}

/// Something told about every [`SubscriptionChange`].
pub trait SubscriptionListener: Send + Sync {
    /// Called once per change, after the tracker recorded it.
    fn changed(&self, change: &SubscriptionChange);
}

/// The id of a registered listener, for [`SubscriptionTracker::unlisten`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ListenerId(pub u64);

/// The live subscriptions of the host's connections: reported by the server, queried and
/// observed by contributions.
pub trait SubscriptionTracker: Send + Sync {
    /// `connection` subscribed to `channel` (idempotent).
    fn subscribed(&self, connection: &str, channel: &str);
    /// `connection` unsubscribed from `channel` (a no-op when it was not subscribed).
    fn unsubscribed(&self, connection: &str, channel: &str);
    /// `connection` went away: every subscription it held ends.
    fn disconnected(&self, connection: &str);
    /// `connection` speaks for client `client_id` (its `initialize` or `reconnect`); kept
    /// until it disconnects. Trackers that do not care about client ids ignore it.
    fn identified(&self, connection: &str, client_id: &str) {
        let _ = (connection, client_id);
    }
    /// The client id `connection` [identified](Self::identified) as, while it is connected.
    fn client_of(&self, connection: &str) -> Option<String> {
        let _ = connection;
        None
    }
    /// The connections subscribed to `channel`, in id order.
    fn subscribers(&self, channel: &str) -> Vec<String>;
    /// Registers a listener told about every later change.
    fn listen(&self, listener: Arc<dyn SubscriptionListener>) -> ListenerId;
    /// Removes a listener (a no-op for an unknown id).
    fn unlisten(&self, id: ListenerId);
}

#[derive(Default)]
struct Tracked {
    /// Channel → subscribed connections.
    channels: BTreeMap<String, BTreeSet<String>>,
    /// Connection → its channels.
    connections: BTreeMap<String, BTreeSet<String>>,
    /// Connection → the client id it identified as.
    clients: BTreeMap<String, String>,
    listeners: BTreeMap<ListenerId, Arc<dyn SubscriptionListener>>,
    next_listener: u64,
}

/// The default [`SubscriptionTracker`]: the live set in memory, bounded by the live
/// connections (a disconnect forgets everything of the connection).
#[derive(Default)]
pub struct LiveSubscriptions {
    tracked: Mutex<Tracked>,
}

impl std::fmt::Debug for LiveSubscriptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tracked = self.lock();
        f.debug_struct("LiveSubscriptions")
            .field("channels", &tracked.channels)
            .field("listeners", &tracked.listeners.len())
            .finish()
    }
}

impl LiveSubscriptions {
    /// No subscriptions, no listeners.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Tracked> {
        // Every mutation completes before the guard drops: a poisoned set is still valid.
        self.tracked.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Tells every listener, outside the lock.
    fn notify(&self, listeners: Vec<Arc<dyn SubscriptionListener>>, change: &SubscriptionChange) {
        for listener in listeners {
            listener.changed(change);
        }
    }
}

fn listeners(tracked: &Tracked) -> Vec<Arc<dyn SubscriptionListener>> {
    tracked.listeners.values().cloned().collect()
}

impl SubscriptionTracker for LiveSubscriptions {
    fn subscribed(&self, connection: &str, channel: &str) {
        let listeners = {
            let mut tracked = self.lock();
            let added = tracked
                .channels
                .entry(channel.to_owned())
                .or_default()
                .insert(connection.to_owned());
            if !added {
                return;
            }
            tracked
                .connections
                .entry(connection.to_owned())
                .or_default()
                .insert(channel.to_owned());
            listeners(&tracked)
        };
        let change = SubscriptionChange::Subscribed {
            connection: connection.to_owned(),
            channel: channel.to_owned(),
        };
        self.notify(listeners, &change);
    }

    fn unsubscribed(&self, connection: &str, channel: &str) {
        let listeners = {
            let mut tracked = self.lock();
            let Some(subscribers) = tracked.channels.get_mut(channel) else {
                return;
            };
            if !subscribers.remove(connection) {
                return;
            }
            if subscribers.is_empty() {
                tracked.channels.remove(channel);
            }
            if let Some(channels) = tracked.connections.get_mut(connection) {
                channels.remove(channel);
                if channels.is_empty() {
                    tracked.connections.remove(connection);
                }
            }
            listeners(&tracked)
        };
        let change = SubscriptionChange::Unsubscribed {
            connection: connection.to_owned(),
            channel: channel.to_owned(),
        };
        self.notify(listeners, &change);
    }

    fn disconnected(&self, connection: &str) {
        let (listeners, channels, client) = {
            let mut tracked = self.lock();
            let client = tracked.clients.remove(connection);
            let Some(channels) = tracked.connections.remove(connection) else {
                return;
            };
            for channel in &channels {
                if let Some(subscribers) = tracked.channels.get_mut(channel) {
                    subscribers.remove(connection);
                    if subscribers.is_empty() {
                        tracked.channels.remove(channel);
                    }
                }
            }
            (listeners(&tracked), channels.into_iter().collect(), client)
        };
        let change = SubscriptionChange::Disconnected {
            connection: connection.to_owned(),
            client,
            channels,
        };
        self.notify(listeners, &change);
    }

    fn identified(&self, connection: &str, client_id: &str) {
        self.lock()
            .clients
            .insert(connection.to_owned(), client_id.to_owned());
    }

    fn client_of(&self, connection: &str) -> Option<String> {
        self.lock().clients.get(connection).cloned()
    }

    fn subscribers(&self, channel: &str) -> Vec<String> {
        self.lock()
            .channels
            .get(channel)
            .map(|subscribers| subscribers.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn listen(&self, listener: Arc<dyn SubscriptionListener>) -> ListenerId {
        let mut tracked = self.lock();
        tracked.next_listener += 1;
        let id = ListenerId(tracked.next_listener);
        tracked.listeners.insert(id, listener);
        id
    }

    fn unlisten(&self, id: ListenerId) {
        self.lock().listeners.remove(&id);
    }
}

#[cfg(test)]
#[path = "subscriptions_tests.rs"]
mod tests;
