//! The host's unattended policy: what happens to an obligation nobody claims.
//!
//! On the host a claim is a live subscription (see [`SubscriptionClaims`]). When no connection
//! is subscribed to the chat of a confirmation (or, for a subagent chat, to an ancestor chat),
//! the policy answers it after the grace window instead of leaving the agent blocked.
//!
//! [`SubscriptionClaims`]: crate::SubscriptionClaims

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::config::{AutoAnswer, EngineConfig};

/// The host-side unattended policy, as spelled on the command line: `off`, `deny` or
/// `allow=tool1,tool2`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum UnattendedPolicy {
    /// Does nothing: unclaimed obligations wait for a user (the default).
    #[default]
    Off,
    /// Every unclaimed confirmation is denied after the grace window with a `reasonMessage`
    /// saying why (a result gate is rejected), chat inputs are cancelled and authentications
    /// given up.
    Deny,
    /// Like [`Deny`](Self::Deny), except that confirmations of the listed tools are approved
    /// (`confirmed: "setting"`; a result gate is accepted).
    Allow {
        /// Tool names (`toolCall.toolName`) approved when unattended.
        tools: BTreeSet<String>,
    },
}

/// A policy spelling that is not `off`, `deny` or `allow=tool1,tool2`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyParseError {
    /// Not one of the three spellings.
    #[error("unknown unattended policy `{0}`: expected `off`, `deny` or `allow=tool1,tool2`")]
    Unknown(String),
    /// `allow=` without any tool name.
    #[error("`allow=` needs at least one tool name, as in `allow=read_file,list_dir`")]
    EmptyAllowList,
    /// `allow=a,,b` or a name with surrounding spaces removed to nothing.
    #[error("empty tool name in `{0}`: separate tool names with single commas")]
    EmptyToolName(String),
}

impl FromStr for UnattendedPolicy {
    type Err = PolicyParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "off" => return Ok(Self::Off),
            "deny" => return Ok(Self::Deny),
            _ => {}
        }
        let Some(list) = text.trim().strip_prefix("allow=") else {
            return Err(PolicyParseError::Unknown(text.to_owned()));
        };
        if list.trim().is_empty() {
            return Err(PolicyParseError::EmptyAllowList);
        }
        let mut tools = BTreeSet::new();
        for name in list.split(',') {
            let name = name.trim();
            if name.is_empty() {
                return Err(PolicyParseError::EmptyToolName(text.to_owned()));
            }
            tools.insert(name.to_owned());
        }
        Ok(Self::Allow { tools })
    }
}

/// Formats in the CLI spelling, so `to_string` and `parse` round-trip.
impl fmt::Display for UnattendedPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Off => f.write_str("off"),
            Self::Deny => f.write_str("deny"),
            Self::Allow { tools } => {
                f.write_str("allow=")?;
                for (index, tool) in tools.iter().enumerate() {
                    if index > 0 {
                        f.write_str(",")?;
                    }
                    f.write_str(tool)?;
                }
                Ok(())
            }
        }
    }
}

impl UnattendedPolicy {
    /// Whether the policy never answers anything.
    pub fn is_off(&self) -> bool {
        matches!(self, Self::Off)
    }

    /// Whether an unclaimed confirmation of `tool_name` is approved rather than denied.
    pub fn approves(&self, tool_name: &str) -> bool {
        match self {
            Self::Allow { tools } => tools.contains(tool_name),
            Self::Off | Self::Deny => false,
        }
    }

    /// The configuration of the host's policy engine for one session: no client id (the host
    /// executes no client tool), grace window `grace`, every user-facing kind auto-answered
    /// unless the policy is [`Off`](Self::Off), in which case the engine is inert.
    pub fn engine_config(&self, grace: Duration) -> EngineConfig {
        let answer = if self.is_off() {
            AutoAnswer::Wait
        } else {
            AutoAnswer::AfterGrace
        };
        let approve_tools = match self {
            Self::Allow { tools } => tools.clone(),
            Self::Off | Self::Deny => BTreeSet::new(),
        };
        EngineConfig {
            client_id: None,
            chat_input: answer,
            tool_confirmation: answer,
            tool_authentication: answer,
            approve_tools,
            ..EngineConfig::default().with_grace(grace)
        }
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
