//! Typed, validated URIs for the channels the host serves.
//!
//! | Form | Type |
//! |---|---|
//! | `ahp-session:/<id>`, VS Code's `<provider>:/<id>` | [`SessionUri`] |
//! | `ahp-chat:/<id>`, `ahp-chat://default/<b64>`, `ahp-chat://subagent/<b64>/<call>` | [`ChatUri`] |
//! | anything a client may subscribe to | [`Channel`] |
//!
//! Ids inside URIs are percent-encoded (every byte outside RFC 3986 "unreserved") and each id has
//! exactly one spelling, so equal ids always give equal URI strings.
//!
//! ```
//! use agenthost_protocol::uri::{Channel, ChatUri, SafeId, SessionUri};
//!
//! let id = SafeId::new("build/fix 1")?;
//! let session = SessionUri::with_provider("copilotcli", id)?;
//! assert_eq!(session.as_str(), "copilotcli:/build%2Ffix%201");
//! assert_eq!(SessionUri::parse(session.as_str())?.id().as_str(), "build/fix 1");
//!
//! let default_chat = ChatUri::default_for(&session);
//! assert_eq!(default_chat.default_chat_session()?, Some(session.clone()));
//!
//! let subagent = ChatUri::subagent(&session, &SafeId::new("toolu_01")?);
//! assert_eq!(subagent.subagent_parent()?.map(|(s, _)| s), Some(session.clone()));
//!
//! assert_eq!(Channel::parse(&session.annotations_uri())?, Channel::Annotations(session));
//! assert!(SessionUri::parse("ahp-session:/..").is_err());
//! # Ok::<(), agenthost_protocol::UriError>(())
//! ```

mod changeset;
mod channel;
mod chat;
mod encoding;
mod error;
mod file;
mod id;
mod session;

pub use changeset::{ChangesetScope, ChangesetUri};
pub use channel::Channel;
pub use chat::{CHAT_SCHEME, ChatUri};
pub use encoding::percent_encode;
pub use error::{UriError, snippet};
pub use file::{file_uri_to_path, path_to_file_uri};
pub use id::SafeId;
pub use session::{MAX_PROVIDER_SCHEME_LEN, SESSION_SCHEME, SessionUri};

/// Longest URI, in bytes, that any parser in this module accepts.
///
/// Generous for every form the host produces (the longest, a subagent chat URI built from
/// maximal ids, stays below 7.3 KB) while bounding the work done on hostile input.
pub const MAX_URI_LEN: usize = 8192;
