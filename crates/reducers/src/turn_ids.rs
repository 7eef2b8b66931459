//! The producer turn id an action carries, for routing: dropping actions of a turn that is no
//! longer active, and remapping subagent actions onto the subagent chat's own turn.

use agenthost_protocol::StateAction;

macro_rules! turn_scoped {
    ($action:expr, $a:ident => $body:expr, _ => $none:expr) => {
        match $action {
            StateAction::ChatTurnStarted($a) => $body,
            StateAction::ChatDelta($a) => $body,
            StateAction::ChatResponsePart($a) => $body,
            StateAction::ChatToolCallStart($a) => $body,
            StateAction::ChatToolCallDelta($a) => $body,
            StateAction::ChatToolCallReady($a) => $body,
            StateAction::ChatToolCallConfirmed($a) => $body,
            StateAction::ChatToolCallComplete($a) => $body,
            StateAction::ChatToolCallResultConfirmed($a) => $body,
            StateAction::ChatToolCallContentChanged($a) => $body,
            StateAction::ChatToolCallAuthRequired($a) => $body,
            StateAction::ChatToolCallAuthResolved($a) => $body,
            StateAction::ChatTurnComplete($a) => $body,
            StateAction::ChatTurnCancelled($a) => $body,
            StateAction::ChatError($a) => $body,
            StateAction::ChatTurnResume($a) => $body,
            StateAction::ChatUsage($a) => $body,
            StateAction::ChatReasoning($a) => $body,
            _ => $none,
        }
    };
}

/// The turn id of a turn-scoped chat action; `None` for actions that are not bound to a turn.
pub fn turn_id(action: &StateAction) -> Option<&str> {
    turn_scoped!(action, a => Some(a.turn_id.as_str()), _ => None)
}

/// Rewrites the turn id of a turn-scoped chat action; returns whether the action had one.
pub fn set_turn_id(action: &mut StateAction, turn_id: &str) -> bool {
    turn_scoped!(action, a => { a.turn_id = turn_id.to_owned(); true }, _ => false)
}

/// Whether the action ends a turn (complete, cancelled, error).
pub fn is_turn_end(action: &StateAction) -> bool {
    matches!(
        action,
        StateAction::ChatTurnComplete(_)
            | StateAction::ChatTurnCancelled(_)
            | StateAction::ChatError(_)
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn action(value: serde_json::Value) -> StateAction {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn reads_and_rewrites_the_turn_of_turn_scoped_actions() {
        let mut delta = action(
            json!({ "type": "chat/delta", "turnId": "parent", "partId": "p", "content": "x" }),
        );
        assert_eq!(turn_id(&delta), Some("parent"));
        assert!(set_turn_id(&mut delta, "child"));
        assert_eq!(turn_id(&delta), Some("child"));

        let mut input = action(json!({ "type": "chat/inputRequested", "request": { "id": "r" } }));
        assert_eq!(turn_id(&input), None);
        assert!(!set_turn_id(&mut input, "child"));
        let before = input.clone();
        assert_eq!(input, before);
    }

    #[test]
    fn knows_the_three_turn_ends() {
        for end in [
            json!({ "type": "chat/turnComplete", "turnId": "t", "duration": 1 }),
            json!({ "type": "chat/turnCancelled", "turnId": "t", "duration": 1 }),
            json!({ "type": "chat/error", "turnId": "t", "duration": 1,
                    "part": { "kind": "error", "error": { "errorType": "x", "message": "m" } } }),
        ] {
            assert!(is_turn_end(&action(end)));
        }
        assert!(!is_turn_end(&action(
            json!({ "type": "chat/usage", "turnId": "t", "usage": {} })
        )));
    }
}
