//! [`ChatView`]: a local mirror of one chat, and the events a person watching it cares about.

use agenthost_protocol::ahp_types::state::{ChatState, ResponsePart};
use agenthost_protocol::{ActionEnvelope, StateAction};

/// Something that happened in a chat, as a person following it would describe it.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The agent wrote text (a new markdown part or more of one).
    Text(String),
    /// The agent reasoned.
    Reasoning(String),
    /// A tool call started.
    ToolStarted {
        /// The call id.
        tool_call_id: String,
        /// The tool's display name.
        display_name: String,
    },
    /// A tool call waits for a confirmation.
    ConfirmationNeeded {
        /// The turn.
        turn_id: String,
        /// The call id.
        tool_call_id: String,
        /// What the tool will do.
        invocation: String,
        /// The tool's internal name (empty when the chat does not know the call).
        tool_name: String,
        /// The tool's input as the agent gave it (a command, a diff, JSON), when inline.
        input: Option<String>,
    },
    /// A tool call finished.
    ToolFinished {
        /// The call id.
        tool_call_id: String,
        /// Whether it succeeded.
        success: bool,
        /// Its past-tense summary.
        summary: String,
    },
    /// A system notice.
    Notice(String),
    /// The turn ended; `error` is set when it failed.
    TurnEnded {
        /// The turn.
        turn_id: String,
        /// The failure message, if the turn failed.
        error: Option<String>,
        /// Whether it was cancelled.
        cancelled: bool,
    },
}

/// One chat, seeded from its snapshot and advanced by the envelopes of its subscription with the
/// canonical reducer — the same state the host holds.
#[derive(Debug, Clone)]
pub struct ChatView {
    state: ChatState,
    seen: i64,
}

impl ChatView {
    /// A view of `state` as of `from_seq`.
    pub fn new(state: ChatState, from_seq: i64) -> Self {
        Self {
            state,
            seen: from_seq,
        }
    }

    /// The mirrored state.
    pub fn state(&self) -> &ChatState {
        &self.state
    }

    /// Applies an envelope of this chat (older ones, at or below the snapshot, are ignored) and
    /// describes what it did.
    pub fn apply(&mut self, envelope: &ActionEnvelope) -> Vec<Event> {
        let seq = i64::try_from(envelope.server_seq).unwrap_or(i64::MAX);
        if seq <= self.seen
            || envelope.channel != self.state.resource
            || envelope.rejection_reason.is_some()
        {
            return Vec::new();
        }
        self.seen = seq;
        ahp::reducers::apply_action_to_chat(&mut self.state, &envelope.action);
        let mut events = describe(&envelope.action);
        for event in &mut events {
            if let Event::ConfirmationNeeded {
                tool_call_id,
                tool_name,
                ..
            } = event
            {
                tool_name.clone_from(&self.tool_name(tool_call_id).unwrap_or_default());
            }
        }
        events
    }

    /// The tool name of call `tool_call_id` in the running turn.
    fn tool_name(&self, tool_call_id: &str) -> Option<String> {
        use agenthost_protocol::ahp_types::state::ToolCallState;
        let turn = self.state.active_turn.as_ref()?;
        turn.response_parts.iter().find_map(|part| match part {
            ResponsePart::ToolCall(call) => match &call.tool_call {
                ToolCallState::PendingConfirmation(s) if s.tool_call_id == tool_call_id => {
                    Some(s.tool_name.clone())
                }
                ToolCallState::Running(s) if s.tool_call_id == tool_call_id => {
                    Some(s.tool_name.clone())
                }
                _ => None,
            },
            _ => None,
        })
    }
}

fn describe(action: &StateAction) -> Vec<Event> {
    let event = match action {
        StateAction::ChatDelta(a) => Event::Text(a.content.clone()),
        StateAction::ChatReasoning(a) => Event::Reasoning(a.content.clone()),
        StateAction::ChatResponsePart(a) => match &a.part {
            ResponsePart::Markdown(m) if !m.content.is_empty() => Event::Text(m.content.clone()),
            ResponsePart::Reasoning(r) if !r.content.is_empty() => {
                Event::Reasoning(r.content.clone())
            }
            ResponsePart::SystemNotification(n) => Event::Notice(n.content.as_text().to_owned()),
            _ => return Vec::new(),
        },
        StateAction::ChatToolCallStart(a) => Event::ToolStarted {
            tool_call_id: a.tool_call_id.clone(),
            display_name: a.display_name.clone(),
        },
        StateAction::ChatToolCallReady(a) if a.confirmed.is_none() => Event::ConfirmationNeeded {
            turn_id: a.turn_id.clone(),
            tool_call_id: a.tool_call_id.clone(),
            invocation: a.invocation_message.as_text().to_owned(),
            tool_name: String::new(),
            input: match &a.tool_input {
                Some(agenthost_protocol::ahp_types::state::ToolInput::Inline(text)) => {
                    Some(text.clone())
                }
                _ => None,
            },
        },
        StateAction::ChatToolCallComplete(a) => Event::ToolFinished {
            tool_call_id: a.tool_call_id.clone(),
            success: a.result.success,
            summary: a.result.past_tense_message.as_text().to_owned(),
        },
        StateAction::ChatTurnComplete(a) => Event::TurnEnded {
            turn_id: a.turn_id.clone(),
            error: None,
            cancelled: false,
        },
        StateAction::ChatTurnCancelled(a) => Event::TurnEnded {
            turn_id: a.turn_id.clone(),
            error: None,
            cancelled: true,
        },
        StateAction::ChatError(a) => Event::TurnEnded {
            turn_id: a.turn_id.clone(),
            error: Some(a.part.error.message.clone()),
            cancelled: false,
        },
        _ => return Vec::new(),
    };
    vec![event]
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn envelope(seq: u64, action: serde_json::Value) -> ActionEnvelope {
        ActionEnvelope {
            channel: "ahp-chat:/c".into(),
            action: serde_json::from_value(action).unwrap(),
            server_seq: seq,
            origin: None,
            rejection_reason: None,
        }
    }

    #[test]
    fn follows_a_turn_and_ignores_what_the_snapshot_already_has() {
        let chat: ChatState = serde_json::from_value(json!({
            "resource": "ahp-chat:/c", "title": "C", "status": 1,
            "modifiedAt": "2026-01-01T00:00:00.000Z", "turns": []
        }))
        .unwrap();
        let mut view = ChatView::new(chat, 3);
        let started = json!({ "type": "chat/turnStarted", "turnId": "t", "startedAt": "2026-01-01T00:00:00.000Z",
            "message": { "text": "hi", "origin": { "kind": "user" } } });
        assert!(
            view.apply(&envelope(3, started.clone())).is_empty(),
            "at the snapshot: ignored"
        );
        assert!(view.state().active_turn.is_none());
        view.apply(&envelope(4, started));
        let part = json!({ "type": "chat/responsePart", "turnId": "t", "part": { "kind": "markdown", "id": "m", "content": "Hel" } });
        assert_eq!(view.apply(&envelope(5, part)), [Event::Text("Hel".into())]);
        let delta = json!({ "type": "chat/delta", "turnId": "t", "partId": "m", "content": "lo" });
        assert_eq!(view.apply(&envelope(6, delta)), [Event::Text("lo".into())]);
        let done = json!({ "type": "chat/turnComplete", "turnId": "t", "duration": 1 });
        assert_eq!(
            view.apply(&envelope(7, done)),
            [Event::TurnEnded {
                turn_id: "t".into(),
                error: None,
                cancelled: false
            }]
        );
        assert_eq!(view.state().turns.len(), 1);
    }
}
