//! What a session's chats ask: confirmations as `session/request_permission`, input requests
//! as `elicitation/create` — for the session's default chat and for its subagents' chats alike,
//! each question keyed by its chat, asked once, withdrawn when settled elsewhere.

use std::sync::Arc;

use agenthost_protocol::ahp_types::state::{ChatInputRequest, ResponsePart, ToolCallState};
use agenthost_protocol::{ChatUri, StateAction};
use serde_json::{Value, json};

use super::{Follower, lock};
use crate::rpc::RpcError;
use crate::{input, updates};

/// A question's key: its chat and its tool call or input request id.
pub type Key = (String, String);

impl Follower {
    /// Asks about each confirmation of `chat`'s turn `turn_id` once, and withdraws the questions
    /// of `chat` whose confirmation is settled (`parts` empty: the turn ended).
    pub(super) fn confirmations(&self, chat: &ChatUri, turn_id: &str, parts: &[ResponsePart]) {
        let waiting: Vec<(&str, &ToolCallState)> = parts
            .iter()
            .filter_map(|part| match part {
                ResponsePart::ToolCall(call) => match &call.tool_call {
                    state @ ToolCallState::PendingConfirmation(s) => {
                        Some((s.tool_call_id.as_str(), state))
                    }
                    _ => None,
                },
                _ => None,
            })
            .collect();
        let mut shared = lock(&self.shared);
        shared
            .asked
            .retain(|(asked_chat, tool_call_id), request_id| {
                let keep =
                    asked_chat != chat.as_str() || waiting.iter().any(|(id, _)| id == tool_call_id);
                if !keep {
                    self.peer.withdraw(*request_id);
                }
                keep
            });
        for (tool_call_id, state) in waiting {
            let key: Key = (chat.to_string(), tool_call_id.to_owned());
            if shared.asked.contains_key(&key) {
                continue;
            }
            let Some(tool_call) = updates::permission_tool_call(state) else {
                continue;
            };
            let (request_id, answer) = self.peer.request(
                "session/request_permission",
                json!({
                    "sessionId": self.session_id,
                    "toolCall": tool_call,
                    "options": [
                        { "optionId": "allow_once", "name": "Allow once", "kind": "allow_once" },
                        { "optionId": "reject_once", "name": "Reject", "kind": "reject_once" },
                    ],
                }),
            );
            shared.asked.insert(key.clone(), request_id);
            let host = self.host.clone();
            let chat = chat.clone();
            let shared_state = Arc::clone(&self.shared);
            let turn_id = turn_id.to_owned();
            tokio::spawn(async move {
                // A withdrawn question never gets its answer: the sender is gone.
                let Ok(answer) = answer.await else { return };
                {
                    let mut shared = lock(&shared_state);
                    if shared.asked.get(&key) != Some(&request_id) {
                        return;
                    }
                    shared.asked.remove(&key);
                }
                let approved = approved(&answer);
                if let Err(error) = host.confirm_tool(&chat, &turn_id, &key.1, approved).await {
                    tracing::warn!(%error, tool_call_id = key.1, "cannot send the editor's answer to the host");
                }
            });
        }
    }

    /// Puts each input request of `chat` to the editor once (`elicitation/create`), or, when it
    /// cannot answer and `ours` (the editor's own turn), declines it saying why; withdraws
    /// questions of `chat` answered elsewhere.
    pub(super) fn inputs(&self, chat: &ChatUri, ours: bool, parts: &[ResponsePart]) {
        let waiting: Vec<&ChatInputRequest> = parts
            .iter()
            .filter_map(|part| match part {
                ResponsePart::InputRequest(r) if r.response.is_none() => Some(&r.request),
                _ => None,
            })
            .collect();
        let mut shared = lock(&self.shared);
        shared.elicited.retain(|(asked_chat, request_id), asked| {
            let keep = asked_chat != chat.as_str() || waiting.iter().any(|r| r.id == *request_id);
            if !keep {
                self.peer.withdraw(*asked);
            }
            keep
        });
        for request in waiting {
            let key: Key = (chat.to_string(), request.id.clone());
            if shared.elicited.contains_key(&key) || shared.declined.contains(&key) {
                continue;
            }
            let answer = if self.elicitation {
                let (asked, answer) = self.peer.request(
                    "elicitation/create",
                    input::elicitation(&self.session_id, request),
                );
                shared.elicited.insert(key.clone(), asked);
                Some((asked, answer))
            } else if ours {
                shared.declined.insert(key.clone());
                self.update(updates::notice(&format!(
                    "The agent asked: \"{}\". This editor cannot answer questions (it offers no \
                     elicitation), so the request was declined.",
                    request.message.as_deref().unwrap_or("for input")
                )));
                None
            } else {
                continue;
            };
            let host = self.host.clone();
            let chat = chat.clone();
            let shared_state = Arc::clone(&self.shared);
            let request = request.clone();
            tokio::spawn(async move {
                let action = match answer {
                    Some((asked, answer)) => {
                        // A withdrawn question never gets its answer: the sender is gone.
                        let Ok(answer) = answer.await else { return };
                        {
                            let mut shared = lock(&shared_state);
                            if shared.elicited.get(&key) != Some(&asked) {
                                return;
                            }
                            shared.elicited.remove(&key);
                        }
                        input::completed(&request, &answer.unwrap_or_default())
                    }
                    None => input::completed(&request, &json!({ "action": "decline" })),
                };
                let dispatched = match serde_json::from_value::<StateAction>(action) {
                    Ok(action) => host
                        .client()
                        .dispatch(chat.to_string(), action)
                        .await
                        .map(|_| ())
                        .map_err(|e| e.to_string()),
                    Err(error) => Err(error.to_string()),
                };
                if let Err(error) = dispatched {
                    tracing::warn!(%error, request = request.id, "cannot send the answer to the host");
                }
            });
        }
    }
}

/// Whether the editor's answer to a permission question approves.
fn approved(answer: &Result<Value, RpcError>) -> bool {
    let Ok(result) = answer else { return false };
    let outcome = &result["outcome"];
    outcome["outcome"] == "selected"
        && outcome["optionId"]
            .as_str()
            .is_some_and(|id| id.starts_with("allow"))
}
