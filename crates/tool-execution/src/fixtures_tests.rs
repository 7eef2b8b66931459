//! Shared fixtures of the unit tests: `inputNeeded` entries built from their wire JSON with the
//! ids the host derives (`agenthost_reducers::projection`), so a test reads like the protocol.

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use agenthost_protocol::ahp_types::state::SessionInputRequest;
use agenthost_protocol::ids::ToolCallKey;
use agenthost_reducers::projection::{
    chat_input_id, tool_authentication_id, tool_client_execution_id, tool_confirmation_id,
};
use serde_json::{Value, json};

pub const CHAT: &str = "ahp-chat:/main";
pub const PEER_CHAT: &str = "ahp-chat:/peer";
pub const CLIENT: &str = "client-a";
pub const OTHER_CLIENT: &str = "client-b";
pub const TURN: &str = "turn-1";

pub fn entry(value: Value) -> SessionInputRequest {
    serde_json::from_value(value).expect("fixture entry decodes")
}

pub fn key(chat: &str, call: &str) -> ToolCallKey {
    ToolCallKey::new(chat, TURN, call)
}

fn client_contributor(client: &str) -> Value {
    json!({ "kind": "client", "clientId": client })
}

/// `toolConfirmation` at the parameter gate for a host tool.
pub fn server_confirmation(chat: &str, call: &str, tool: &str) -> SessionInputRequest {
    entry(json!({
        "kind": "toolConfirmation", "id": tool_confirmation_id(&key(chat, call)), "chat": chat,
        "turnId": TURN,
        "toolCall": {
            "status": "pending-confirmation", "toolCallId": call, "toolName": tool,
            "displayName": display(tool), "invocationMessage": format!("Run {tool}"),
            "toolInput": "{}"
        }
    }))
}

/// `toolConfirmation` at the result gate.
pub fn result_confirmation(chat: &str, call: &str, tool: &str) -> SessionInputRequest {
    entry(json!({
        "kind": "toolConfirmation", "id": tool_confirmation_id(&key(chat, call)), "chat": chat,
        "turnId": TURN,
        "toolCall": {
            "status": "pending-result-confirmation", "toolCallId": call, "toolName": tool,
            "displayName": display(tool), "invocationMessage": format!("Run {tool}"),
            "toolInput": "{}", "success": true, "pastTenseMessage": format!("Ran {tool}"),
            "confirmed": "user-action"
        }
    }))
}

/// `toolConfirmation` at the parameter gate for a client-owned tool.
pub fn client_confirmation(
    chat: &str,
    call: &str,
    tool: &str,
    client: &str,
    input: &str,
) -> SessionInputRequest {
    entry(json!({
        "kind": "toolConfirmation", "id": tool_confirmation_id(&key(chat, call)), "chat": chat,
        "turnId": TURN,
        "toolCall": {
            "status": "pending-confirmation", "toolCallId": call, "toolName": tool,
            "displayName": display(tool), "invocationMessage": format!("Run {tool}"),
            "contributor": client_contributor(client), "toolInput": input
        }
    }))
}

/// `toolClientExecution` for a running client tool.
pub fn client_execution(
    chat: &str,
    call: &str,
    tool: &str,
    client: &str,
    confirmed: &str,
    input: &str,
) -> SessionInputRequest {
    entry(json!({
        "kind": "toolClientExecution", "id": tool_client_execution_id(&key(chat, call)),
        "chat": chat, "turnId": TURN, "clientId": client,
        "toolCall": {
            "status": "running", "toolCallId": call, "toolName": tool,
            "displayName": display(tool), "invocationMessage": format!("Run {tool}"),
            "contributor": client_contributor(client), "toolInput": input,
            "confirmed": confirmed
        }
    }))
}

/// `chatInput` for an open input request.
pub fn chat_input(chat: &str, request: &str) -> SessionInputRequest {
    entry(json!({
        "kind": "chatInput", "id": chat_input_id(chat, request), "chat": chat,
        "request": { "id": request, "message": "Which branch?" }
    }))
}

/// `toolAuthentication` for an MCP tool.
pub fn authentication(chat: &str, call: &str, tool: &str) -> SessionInputRequest {
    entry(json!({
        "kind": "toolAuthentication", "id": tool_authentication_id(&key(chat, call)),
        "chat": chat, "turnId": TURN,
        "toolCall": {
            "status": "auth-required", "toolCallId": call, "toolName": tool,
            "displayName": display(tool), "invocationMessage": format!("Run {tool}"),
            "contributor": { "kind": "mcp", "customizationId": "github" },
            "confirmed": "not-needed",
            "auth": { "reason": "required", "resource": { "resource": "https://mcp.example" } }
        }
    }))
}

/// The display name the fixtures give a tool: its name, capitalised.
pub fn display(tool: &str) -> String {
    let mut chars = tool.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
