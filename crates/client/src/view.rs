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

    /// What the snapshot already holds, as the events a person would have seen had they
    /// followed the chat from its start: the text, reasoning, notices and tool calls of its
    /// turns and of the running turn, in order, and the confirmations still waiting (so a
    /// client that opens a chat late — a subagent's, created and busy before the client knew of
    /// it — shows its work and can answer what it asks).
    pub fn backlog(&self) -> Vec<Event> {
        let finished = self
            .state
            .turns
            .iter()
            .map(|turn| (turn.id.as_str(), &turn.response_parts));
        let running = self
            .state
            .active_turn
            .iter()
            .map(|turn| (turn.id.as_str(), &turn.response_parts));
        finished
            .chain(running)
            .flat_map(|(turn_id, parts)| parts.iter().filter_map(|part| part_event(turn_id, part)))
            .collect()
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

/// What a response part already in a turn (`turn_id`) shows a person, if anything.
fn part_event(turn_id: &str, part: &ResponsePart) -> Option<Event> {
    use agenthost_protocol::ahp_types::state::ToolCallState;
    match part {
        ResponsePart::ToolCall(call) => match &call.tool_call {
            ToolCallState::PendingConfirmation(s) => Some(Event::ConfirmationNeeded {
                turn_id: turn_id.to_owned(),
                tool_call_id: s.tool_call_id.clone(),
                invocation: s.invocation_message.as_text().to_owned(),
                tool_name: s.tool_name.clone(),
                input: inline(s.tool_input.as_ref()),
            }),
            ToolCallState::Running(s) => Some(Event::ToolStarted {
                tool_call_id: s.tool_call_id.clone(),
                display_name: s.display_name.clone(),
            }),
            ToolCallState::Completed(s) => Some(Event::ToolFinished {
                tool_call_id: s.tool_call_id.clone(),
                success: s.success,
                summary: s.past_tense_message.as_text().to_owned(),
            }),
            _ => None,
        },
        text => text_event(text),
    }
}

/// A tool input given inline, as text (`None` for one given by reference).
fn inline(input: Option<&agenthost_protocol::ahp_types::state::ToolInput>) -> Option<String> {
    match input {
        Some(agenthost_protocol::ahp_types::state::ToolInput::Inline(text)) => Some(text.clone()),
        _ => None,
    }
}

/// What a text part (markdown, reasoning, a notice) shows a person, if anything.
fn text_event(part: &ResponsePart) -> Option<Event> {
    match part {
        ResponsePart::Markdown(m) if !m.content.is_empty() => Some(Event::Text(m.content.clone())),
        ResponsePart::Reasoning(r) if !r.content.is_empty() => {
            Some(Event::Reasoning(r.content.clone()))
        }
        ResponsePart::SystemNotification(n) => Some(Event::Notice(n.content.as_text().to_owned())),
        _ => None,
    }
}

fn describe(action: &StateAction) -> Vec<Event> {
    let event = match action {
        StateAction::ChatDelta(a) => Event::Text(a.content.clone()),
        StateAction::ChatReasoning(a) => Event::Reasoning(a.content.clone()),
        StateAction::ChatResponsePart(a) => match text_event(&a.part) {
            Some(event) => event,
            None => return Vec::new(),
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
            input: inline(a.tool_input.as_ref()),
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

    #[test]
    fn the_backlog_is_what_the_snapshot_holds_in_order_with_its_waiting_confirmation() {
        let mut view = ChatView::new(
            serde_json::from_value(json!({
                "resource": "ahp-chat:/c", "title": "C", "status": 1,
                "modifiedAt": "2026-01-01T00:00:00.000Z", "turns": []
            }))
            .unwrap(),
            0,
        );
        let steps = [
            json!({ "type": "chat/turnStarted", "turnId": "t", "startedAt": "2026-01-01T00:00:00.000Z",
                "message": { "text": "hi", "origin": { "kind": "user" } } }),
            json!({ "type": "chat/responsePart", "turnId": "t", "part": { "kind": "markdown", "id": "m", "content": "Hello" } }),
            json!({ "type": "chat/toolCallStart", "turnId": "t", "toolCallId": "c1", "toolName": "write_file", "displayName": "Write file" }),
            json!({ "type": "chat/toolCallReady", "turnId": "t", "toolCallId": "c1", "invocationMessage": "Write `a.txt`", "toolInput": "a" }),
        ];
        for (seq, step) in steps.into_iter().enumerate() {
            view.apply(&envelope(u64::try_from(seq).unwrap() + 1, step));
        }
        assert_eq!(
            view.backlog(),
            [
                Event::Text("Hello".into()),
                Event::ConfirmationNeeded {
                    turn_id: "t".into(),
                    tool_call_id: "c1".into(),
                    invocation: "Write `a.txt`".into(),
                    tool_name: "write_file".into(),
                    input: Some("a".into()),
                },
            ]
        );
        // A view seeded from that state (as a client opening the chat now gets it) shows the
        // same, and nothing of it again when the envelopes up to its snapshot arrive.
        let late = ChatView::new(view.state().clone(), 4);
        assert_eq!(late.backlog(), view.backlog());
    }
}
