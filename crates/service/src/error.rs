//! Errors of the lifecycle commands, with their AHP error codes.

use agenthost_protocol::UriError;
use agenthost_protocol::errors::ahp_error_codes;
use agenthost_protocol::errors::json_rpc_error_codes;

/// Why a lifecycle command failed. [`code`](Self::code) is the JSON-RPC error code to answer with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServiceError {
    /// No such session.
    #[error("session {0:?} does not exist")]
    SessionNotFound(String),
    /// No such chat.
    #[error("chat {0:?} does not exist")]
    ChatNotFound(String),
    /// The session URI is taken.
    #[error("session {0:?} already exists")]
    SessionAlreadyExists(String),
    /// The chat URI is taken.
    #[error("chat {0:?} already exists")]
    ChatAlreadyExists(String),
    /// The provider is not one this host advertises.
    #[error("no provider {provider:?}; this host offers: {offered}")]
    ProviderNotFound {
        /// The provider asked for.
        provider: String,
        /// The advertised providers, comma-separated.
        offered: String,
    },
    /// A URI in the request is malformed.
    #[error("{0}")]
    InvalidUri(#[from] UriError),
    /// A client-supplied path is refused: not local, outside every folder the host serves, or
    /// not an existing folder where one is needed.
    #[error("{0}")]
    OutsideRoots(#[from] agenthost_services::sandbox::PathRefusal),
    /// Other invalid parameters.
    #[error("{0}")]
    InvalidParams(String),
    /// No such channel (a `subscribe` to a channel that is neither live nor stored).
    #[error("{0}")]
    NotFound(String),
    /// Something the host could not do for a reason of its own (a diff that cannot be
    /// rendered); the message says what.
    #[error("{0}")]
    Internal(String),
    /// The session store failed (its message names the file and what to do).
    #[error("the session store failed: {0}")]
    Store(String),
}

impl From<agenthost_store::StoreError> for ServiceError {
    fn from(error: agenthost_store::StoreError) -> Self {
        ServiceError::Store(error.to_string())
    }
}

impl ServiceError {
    /// The JSON-RPC error code (AHP §8.7).
    pub fn code(&self) -> i64 {
        match self {
            ServiceError::SessionNotFound(_) => i64::from(ahp_error_codes::SESSION_NOT_FOUND),
            ServiceError::ChatNotFound(_) | ServiceError::NotFound(_) => {
                i64::from(ahp_error_codes::NOT_FOUND)
            }
            ServiceError::SessionAlreadyExists(_) => {
                i64::from(ahp_error_codes::SESSION_ALREADY_EXISTS)
            }
            ServiceError::ChatAlreadyExists(_) => i64::from(ahp_error_codes::ALREADY_EXISTS),
            ServiceError::ProviderNotFound { .. } => i64::from(ahp_error_codes::PROVIDER_NOT_FOUND),
            ServiceError::InvalidUri(_)
            | ServiceError::OutsideRoots(_)
            | ServiceError::InvalidParams(_) => i64::from(json_rpc_error_codes::INVALID_PARAMS),
            ServiceError::Store(_) | ServiceError::Internal(_) => {
                i64::from(json_rpc_error_codes::INTERNAL_ERROR)
            }
        }
    }
}
