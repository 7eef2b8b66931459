use super::*;

#[test]
fn tool_call_key_displays_chat_turn_and_call() {
    let key = ToolCallKey::new("ahp-chat:/c1", "turn-1", "call-1");
    assert_eq!(key.to_string(), "ahp-chat:/c1#turn-1/call-1");
}

#[test]
fn tool_call_key_serializes_camel_case() {
    let key = ToolCallKey::new("ahp-chat:/c1", "t", "c");
    let json = serde_json::to_value(&key).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"chat": "ahp-chat:/c1", "turnId": "t", "toolCallId": "c"})
    );
    assert_eq!(serde_json::from_value::<ToolCallKey>(json).unwrap(), key);
}

#[test]
fn tool_call_keys_order_by_chat_then_turn_then_call() {
    let mut keys = vec![
        ToolCallKey::new("b", "1", "1"),
        ToolCallKey::new("a", "2", "1"),
        ToolCallKey::new("a", "1", "2"),
        ToolCallKey::new("a", "1", "1"),
    ];
    keys.sort();
    assert_eq!(
        keys,
        vec![
            ToolCallKey::new("a", "1", "1"),
            ToolCallKey::new("a", "1", "2"),
            ToolCallKey::new("a", "2", "1"),
            ToolCallKey::new("b", "1", "1"),
        ]
    );
}

#[test]
fn input_key_displays_and_serializes() {
    let key = InputKey::new("ahp-chat:/c1", "req-1");
    assert_eq!(key.to_string(), "ahp-chat:/c1#req-1");
    assert_eq!(
        serde_json::to_value(&key).unwrap(),
        serde_json::json!({"chat": "ahp-chat:/c1", "requestId": "req-1"})
    );
}
