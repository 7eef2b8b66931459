//! Conversions between records and columns: wire JSON as text, URIs, enums.

use agenthost_protocol::ahp_types::state::ChatInteractivity;
use agenthost_protocol::{ChatUri, SessionUri};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::StoreError;
use crate::records::TitleSource;
use crate::store::Failure;

/// Where a stored value came from, for decode errors.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cell<'a> {
    /// The table.
    pub table: &'static str,
    /// The row's key.
    pub key: &'a str,
    /// The column.
    pub column: &'static str,
}

impl Cell<'_> {
    /// A decode failure of this cell.
    pub fn fail(self, reason: impl ToString) -> Failure {
        Failure::Decode {
            table: self.table,
            key: self.key.to_owned(),
            column: self.column,
            reason: reason.to_string(),
        }
    }

    /// Parses the cell's JSON text as `T`.
    pub fn json<T: DeserializeOwned>(self, text: &str) -> Result<T, Failure> {
        serde_json::from_str(text).map_err(|error| self.fail(error))
    }

    /// Parses the cell's nullable JSON text as `T`.
    pub fn opt_json<T: DeserializeOwned>(self, text: Option<&str>) -> Result<Option<T>, Failure> {
        text.map(|text| self.json(text)).transpose()
    }

    /// Parses the cell as a session URI.
    pub fn session_uri(self, text: &str) -> Result<SessionUri, Failure> {
        SessionUri::parse(text).map_err(|error| self.fail(error))
    }

    /// Parses the cell as a chat URI.
    pub fn chat_uri(self, text: &str) -> Result<ChatUri, Failure> {
        ChatUri::parse(text).map_err(|error| self.fail(error))
    }

    /// Parses the cell as a title source.
    pub fn title_source(self, text: &str) -> Result<TitleSource, Failure> {
        text.parse()
            .map_err(|error: agenthost_protocol::UnknownTitleSource| self.fail(error.to_string()))
    }

    /// Parses the cell as a chat interactivity (its wire spelling, without quotes).
    pub fn interactivity(self, text: Option<&str>) -> Result<Option<ChatInteractivity>, Failure> {
        text.map(|text| {
            serde_json::from_value(Value::String(text.to_owned())).map_err(|error| self.fail(error))
        })
        .transpose()
    }
}

/// `value` as JSON text.
pub(crate) fn to_json<T: Serialize + ?Sized>(
    what: &'static str,
    value: &T,
) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|error| StoreError::encode(what, error))
}

/// `value`, when present, as JSON text.
pub(crate) fn opt_json<T: Serialize>(
    what: &'static str,
    value: Option<&T>,
) -> Result<Option<String>, StoreError> {
    value.map(|value| to_json(what, value)).transpose()
}

/// The wire spelling of an interactivity (`full`, `read-only`, `hidden`).
pub(crate) fn interactivity(
    value: Option<ChatInteractivity>,
) -> Result<Option<String>, StoreError> {
    value
        .map(|value| match serde_json::to_value(value) {
            Ok(Value::String(text)) => Ok(text),
            Ok(other) => Ok(other.to_string()),
            Err(error) => Err(StoreError::encode("chat interactivity", error)),
        })
        .transpose()
}
