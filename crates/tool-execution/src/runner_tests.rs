#![allow(clippy::unwrap_used, clippy::expect_used)]

use agenthost_protocol::ahp_types::state::ContentRef;

use super::*;
use crate::invocation::Presentation;

fn call() -> LocalCall {
    let key = ToolCallKey::new("ahp-chat:/c", "t", "c1");
    LocalCall {
        key: key.clone(),
        tool_name: "tool".to_owned(),
        display_name: "Tool".to_owned(),
        parameters: Map::new(),
        context: None,
        pre_approval: None,
        cancel: CancelToken::new(),
        invocation: SharedInvocation::new(key, Presentation::default()),
        reporter: None,
    }
}

#[tokio::test]
async fn no_local_tools_knows_nothing_and_defaults_are_safe() {
    let tools = NoLocalTools;
    assert_eq!(tools.lookup("anything"), ToolLookup::Unknown);
    assert_eq!(tools.confirmation(&call()).await, LocalGate::NotNeeded);
    let read = tools
        .read_input(&ContentRef {
            uri: "ahp-content:/x".to_owned(),
            size_hint: None,
            content_type: None,
            nonce: None,
        })
        .await;
    assert!(read.unwrap_err().contains("ahp-content:/x"));
    let result = tools.execute(call()).await;
    assert!(!result.success);
    assert_eq!(crate::answers::error_code(&result), Some("toolUnavailable"));
}

#[test]
fn local_calls_report_content_only_with_a_reporter_and_debug_print() {
    let call = call();
    call.report_content(vec![]);
    let text = format!("{call:?}");
    assert!(text.contains("tool_name: \"tool\""), "{text}");
    assert!(text.contains("cancelled: false"), "{text}");
}
