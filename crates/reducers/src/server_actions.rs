//! Constructors of the server actions the host dispatches itself (the orchestrator, the session
//! service, contributions): one spelling of each.

use agenthost_protocol::StateAction;
use agenthost_protocol::actions::{
    ChatPendingMessageRemovedAction, ChatResponsePartAction, ChatTurnCompleteAction,
    ChatTurnStartedAction, SessionChatAddedAction,
};
use agenthost_protocol::ahp_types::state::{
    ChatState, Message, MessageKind, MessageOrigin, PendingMessageKind, ResponsePart,
    SystemNotificationResponsePart,
};

/// `chat/turnComplete`.
pub fn turn_complete(turn_id: &str, duration_ms: i64) -> StateAction {
    StateAction::ChatTurnComplete(ChatTurnCompleteAction {
        turn_id: turn_id.to_owned(),
        duration: duration_ms,
        meta: None,
    })
}

/// A system notice appended to a turn.
pub fn system_notice(turn_id: &str, text: String) -> StateAction {
    StateAction::ChatResponsePart(ChatResponsePartAction {
        turn_id: turn_id.to_owned(),
        part: ResponsePart::SystemNotification(SystemNotificationResponsePart {
            content: text.into(),
            meta: None,
        }),
        meta: None,
    })
}

/// `chat/pendingMessageRemoved` for a consumed steering message.
pub fn steering_consumed(id: &str) -> StateAction {
    StateAction::ChatPendingMessageRemoved(ChatPendingMessageRemovedAction {
        kind: PendingMessageKind::Steering,
        id: id.to_owned(),
    })
}

/// The first turn of a subagent chat, started by the host with the task prompt.
pub fn subagent_turn_started(turn_id: &str, started_at: &str, prompt: String) -> StateAction {
    StateAction::ChatTurnStarted(ChatTurnStartedAction {
        turn_id: turn_id.to_owned(),
        started_at: started_at.to_owned(),
        message: Message {
            text: prompt,
            origin: MessageOrigin {
                kind: MessageKind::Tool,
            },
            attachments: None,
            model: None,
            agent: None,
            meta: None,
        },
        queued_message_id: None,
        meta: None,
    })
}

/// `session/chatAdded` for a chat.
pub fn chat_added(chat: &ChatState) -> StateAction {
    StateAction::SessionChatAdded(SessionChatAddedAction {
        summary: crate::projection::chat_summary(chat),
    })
}
