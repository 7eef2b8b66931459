//! Client ids, bound: a client id belongs to the token that first used it, and to one live
//! connection at a time. Clients choose their ids, so without this a second connection could
//! act as another client (complete its tool calls, answer its confirmations).
//!
//! - Another token never gets a client id that is bound: its `initialize` or `reconnect` is
//!   refused (`-32009`).
//! - The same token connecting again with the id (a reconnect after a network change, a second
//!   window) takes it over: the older connection is closed (code 1008).
//!
//! Bindings are kept per token, at most [`BINDINGS_PER_TOKEN`] each (the oldest of that token
//! is forgotten past it), so one token's clients can never push out another token's bindings.

use std::collections::{HashMap, VecDeque};

use crate::connection::{Connection, ConnectionId};

/// Most client ids remembered per token.
pub const BINDINGS_PER_TOKEN: usize = 4096;

/// Why a client id cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakenClientId {
    /// The token that owns it.
    pub owner: String,
}

#[derive(Default)]
pub(crate) struct ClientBindings {
    owners: HashMap<String, String>,
    order: HashMap<String, VecDeque<String>>,
    live: HashMap<String, Connection>,
}

impl ClientBindings {
    /// Binds `client_id` to `conn` (whose token must own it or take a free id); returns the
    /// connection it replaces, if any, for the caller to close.
    pub(crate) fn bind(
        &mut self,
        client_id: &str,
        conn: &Connection,
    ) -> Result<Option<Connection>, TakenClientId> {
        let token = &conn.grant().name;
        match self.owners.get(client_id) {
            Some(owner) if owner != token => {
                return Err(TakenClientId {
                    owner: owner.clone(),
                });
            }
            Some(_) => {}
            None => {
                self.owners.insert(client_id.to_owned(), token.clone());
                let order = self.order.entry(token.clone()).or_default();
                order.push_back(client_id.to_owned());
                while order.len() > BINDINGS_PER_TOKEN {
                    let Some(oldest) = order.pop_front() else {
                        break;
                    };
                    // A connected client keeps its binding.
                    if self.live.contains_key(&oldest) {
                        order.push_back(oldest);
                        break;
                    }
                    self.owners.remove(&oldest);
                }
            }
        }
        let previous = self.live.insert(client_id.to_owned(), conn.clone());
        Ok(previous.filter(|previous| previous.id() != conn.id()))
    }

    /// Forgets `conn` as the live connection of its client id (its binding to the token stays).
    pub(crate) fn disconnected(&mut self, client_id: &str, conn: ConnectionId) {
        if self
            .live
            .get(client_id)
            .is_some_and(|live| live.id() == conn)
        {
            self.live.remove(client_id);
        }
    }
}

#[cfg(test)]
#[path = "clients_tests.rs"]
mod tests;
