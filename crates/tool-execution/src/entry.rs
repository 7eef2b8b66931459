//! Classifying `inputNeeded` entries for one engine.

use agenthost_protocol::Uri;
use agenthost_protocol::ahp_types::state::{
    SessionInputRequest, ToolCallConfirmationReason, ToolCallConfirmationState,
    ToolCallContributor, ToolInput,
};
use agenthost_protocol::ids::{InputKey, ToolCallKey};
use agenthost_reducers::projection::entry_id;

use crate::keys::ClaimKey;

/// Which gate a `toolConfirmation` entry is at (chosen from the tool call's status, P10).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gate {
    /// `pending-confirmation`.
    Parameters,
    /// `pending-result-confirmation`.
    Result,
}

/// Which phase entry of an own client tool call this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// The `toolConfirmation` entry of an own client tool (driven as an execution).
    Confirmation,
    /// The `toolClientExecution` entry.
    Execution,
}

/// An entry as this engine sees it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Class {
    /// `chatInput`.
    Input { key: InputKey },
    /// A `toolConfirmation` the policy answers (server and MCP tools, other clients' tools,
    /// result gates).
    Confirmation {
        key: ToolCallKey,
        gate: Gate,
        tool_name: String,
        display_name: String,
        input: Option<ToolInput>,
    },
    /// An execution for this engine's client id.
    Execution {
        key: ToolCallKey,
        phase: Phase,
        tool_name: String,
        display_name: String,
        input: Option<ToolInput>,
        pre_approval: Option<ToolCallConfirmationReason>,
    },
    /// `toolAuthentication`.
    Authentication {
        key: ToolCallKey,
        display_name: String,
        tool_name: String,
    },
    /// Not this engine's business: another client's execution, an unknown kind or gate.
    Ignored,
}

/// `autoApproveBySetting` in a tool call's `_meta` counts as `setting`.
const AUTO_APPROVE_BY_SETTING_META: &str =
    agenthost_reducers::projection::AUTO_APPROVE_BY_SETTING_META;

impl Class {
    /// Classifies `entry` for an engine executing for `own_client`. Returns its id and chat
    /// (`None` for an unknown kind without a string id, which the engine ignores entirely).
    pub(crate) fn of(
        entry: &SessionInputRequest,
        own_client: Option<&str>,
    ) -> Option<(String, Uri, Class)> {
        let id = entry_id(entry)?.to_owned();
        let (chat, class) = match entry {
            SessionInputRequest::ChatInput(e) => (
                e.chat.clone(),
                Class::Input {
                    key: InputKey::new(e.chat.clone(), e.request.id.clone()),
                },
            ),
            SessionInputRequest::ToolConfirmation(e) => {
                let class = match &e.tool_call {
                    ToolCallConfirmationState::PendingConfirmation(s) => {
                        let key = ToolCallKey::new(e.chat.clone(), &e.turn_id, &s.tool_call_id);
                        let own = matches!(
                            (&s.contributor, own_client),
                            (Some(ToolCallContributor::Client(c)), Some(own)) if c.client_id == own
                        );
                        if own {
                            Class::Execution {
                                key,
                                phase: Phase::Confirmation,
                                tool_name: s.tool_name.clone(),
                                display_name: s.display_name.clone(),
                                input: s.tool_input.clone(),
                                pre_approval: None,
                            }
                        } else {
                            Class::Confirmation {
                                key,
                                gate: Gate::Parameters,
                                tool_name: s.tool_name.clone(),
                                display_name: s.display_name.clone(),
                                input: s.tool_input.clone(),
                            }
                        }
                    }
                    ToolCallConfirmationState::PendingResultConfirmation(s) => {
                        Class::Confirmation {
                            key: ToolCallKey::new(e.chat.clone(), &e.turn_id, &s.tool_call_id),
                            gate: Gate::Result,
                            tool_name: s.tool_name.clone(),
                            display_name: s.display_name.clone(),
                            input: s.tool_input.clone(),
                        }
                    }
                    ToolCallConfirmationState::Unknown(_) => Class::Ignored,
                };
                (e.chat.clone(), class)
            }
            SessionInputRequest::ToolClientExecution(e) => {
                let class = if own_client == Some(e.client_id.as_str()) {
                    let s = &e.tool_call;
                    let by_setting = s
                        .meta
                        .as_ref()
                        .and_then(|m| m.get(AUTO_APPROVE_BY_SETTING_META))
                        .and_then(serde_json::Value::as_bool)
                        == Some(true);
                    let pre_approval = match &s.confirmed {
                        ToolCallConfirmationReason::Unknown(_) if by_setting => {
                            Some(ToolCallConfirmationReason::Setting)
                        }
                        ToolCallConfirmationReason::Unknown(_) => None,
                        trusted => Some(trusted.clone()),
                    };
                    Class::Execution {
                        key: ToolCallKey::new(e.chat.clone(), &e.turn_id, &s.tool_call_id),
                        phase: Phase::Execution,
                        tool_name: s.tool_name.clone(),
                        display_name: s.display_name.clone(),
                        input: s.tool_input.clone(),
                        pre_approval,
                    }
                } else {
                    Class::Ignored
                };
                (e.chat.clone(), class)
            }
            SessionInputRequest::ToolAuthentication(e) => (
                e.chat.clone(),
                Class::Authentication {
                    key: ToolCallKey::new(e.chat.clone(), &e.turn_id, &e.tool_call.tool_call_id),
                    display_name: e.tool_call.display_name.clone(),
                    tool_name: e.tool_call.tool_name.clone(),
                },
            ),
            SessionInputRequest::Unknown(v) => (
                v.get("chat")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                Class::Ignored,
            ),
        };
        Some((id, chat, class))
    }

    /// The claim key of the obligation.
    pub(crate) fn claim_key(&self) -> Option<ClaimKey> {
        match self {
            Self::Input { key } => Some(ClaimKey::Input(key.clone())),
            _ => self.tool_call().map(|k| ClaimKey::ToolCall(k.clone())),
        }
    }

    /// The tool call the entry refers to.
    pub(crate) fn tool_call(&self) -> Option<&ToolCallKey> {
        match self {
            Self::Confirmation { key, .. }
            | Self::Execution { key, .. }
            | Self::Authentication { key, .. } => Some(key),
            Self::Input { .. } | Self::Ignored => None,
        }
    }

    /// Whether `other` is the same obligation: equal in every identity-relevant field
    /// (kind, key, tool name, tool input, gate or phase). Pre-approval, options, `_meta` and
    /// drafts are not identity.
    pub(crate) fn same_obligation(&self, other: &Class) -> bool {
        match (self, other) {
            (Self::Input { key: a }, Self::Input { key: b }) => a == b,
            (
                Self::Confirmation {
                    key: ka,
                    gate: ga,
                    tool_name: na,
                    input: ia,
                    ..
                },
                Self::Confirmation {
                    key: kb,
                    gate: gb,
                    tool_name: nb,
                    input: ib,
                    ..
                },
            ) => ka == kb && ga == gb && na == nb && ia == ib,
            (
                Self::Execution {
                    key: ka,
                    phase: pa,
                    tool_name: na,
                    input: ia,
                    ..
                },
                Self::Execution {
                    key: kb,
                    phase: pb,
                    tool_name: nb,
                    input: ib,
                    ..
                },
            ) => ka == kb && pa == pb && na == nb && ia == ib,
            (
                Self::Authentication {
                    key: ka,
                    tool_name: na,
                    ..
                },
                Self::Authentication {
                    key: kb,
                    tool_name: nb,
                    ..
                },
            ) => ka == kb && na == nb,
            (Self::Ignored, Self::Ignored) => true,
            _ => false,
        }
    }
}

#[cfg(test)]
#[path = "entry_tests.rs"]
mod tests;
