//! [`Notifier`]: telling the user, outside any client, that a session needs them — it waits for
//! input, a long turn ended, its budget is nearly or wholly spent, its agent crashed.
//!
//! The contract is plain data and a fire-and-forget call: an implementation (a command, a
//! webhook — `agenthost-services-notify`) runs on its own tasks and never blocks a turn. What
//! to notify and when (delays, debouncing) is the `notifications` contribution's business.

use serde::{Deserialize, Serialize};

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum NotificationKind {
    /// A confirmation, input request or client tool has waited longer than the set delay.
    NeedsInput,
    /// A turn that ran longer than the set duration ended (completed, failed or cancelled).
    TurnEnded,
    /// The session has spent 80 % of its budget.
    BudgetWarning,
    /// The session's budget is spent: its turn was stopped.
    BudgetSpent,
    /// The agent's process died during a turn.
    AgentCrashed,
}

impl NotificationKind {
    /// The wire spelling (`needsInput`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NeedsInput => "needsInput",
            Self::TurnEnded => "turnEnded",
            Self::BudgetWarning => "budgetWarning",
            Self::BudgetSpent => "budgetSpent",
            Self::AgentCrashed => "agentCrashed",
        }
    }
}

/// One notification, as a notifier receives it (and a command reads it on stdin, a webhook gets
/// it as its body): it names the session, chat and title and says what happened in one line.
/// It carries no token, no prompt and no tool input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Notification {
    /// What happened.
    pub event: NotificationKind,
    /// The session URI.
    pub session: String,
    /// The chat it happened in, when it was one chat's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat: Option<String>,
    /// The session's title.
    pub title: String,
    /// One line saying what happened.
    pub summary: String,
    /// When (RFC 3339, UTC).
    pub at: String,
}

/// Delivers notifications.
pub trait Notifier: Send + Sync {
    /// Hands `notification` over for delivery; never waits, never fails (a delivery that fails
    /// is logged by the implementation).
    fn notify(&self, notification: Notification);
}

/// When the `notifications` contribution notifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotificationSettings {
    /// How long an obligation must wait unanswered before "needs input" (default 60 s).
    pub input_after: std::time::Duration,
    /// How long a turn must have run for its end to be told (default 60 s).
    pub turn_after: std::time::Duration,
    /// The least time between two notifications of one kind for one session (default 60 s).
    pub debounce: std::time::Duration,
}

impl Default for NotificationSettings {
    fn default() -> Self {
        let minute = std::time::Duration::from_secs(60);
        Self {
            input_after: minute,
            turn_after: minute,
            debounce: minute,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notification_is_plain_json() {
        let notification = Notification {
            event: NotificationKind::NeedsInput,
            session: "claude:/s1".into(),
            chat: None,
            title: "Fix the build".into(),
            summary: "Run `make` waits for a confirmation".into(),
            at: "2026-12-06T10:00:00.000Z".into(),
        };
        assert_eq!(
            serde_json::to_value(&notification).unwrap(),
            serde_json::json!({ "event": "needsInput", "session": "claude:/s1",
                "title": "Fix the build", "summary": "Run `make` waits for a confirmation",
                "at": "2026-12-06T10:00:00.000Z" })
        );
        for kind in [
            NotificationKind::NeedsInput,
            NotificationKind::TurnEnded,
            NotificationKind::BudgetWarning,
            NotificationKind::BudgetSpent,
            NotificationKind::AgentCrashed,
        ] {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
    }
}
