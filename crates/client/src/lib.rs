//! A small client of an agent host, over AHP on WebSocket.
//!
//! The central decision: **built on Microsoft's `ahp` client and `ahp-ws` transport**, so what
//! this crate speaks is exactly what other AHP clients speak. It adds the few steps every
//! program driving a host repeats — connect with the URL `agent-host serve` prints, create a
//! session, start a turn, answer a confirmation — and [`ChatView`], a local mirror of one chat
//! reduced with the canonical reducers, for following a conversation as it streams.
#![deny(missing_docs)]

mod connection;
mod view;

pub use ahp;
pub use connection::{ClientError, HostConnection};
pub use view::{ChatView, Event};
