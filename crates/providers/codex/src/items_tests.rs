use serde_json::json;

use super::*;

#[test]
fn code_spans_survive_backticks() {
    assert_eq!(code("ls"), "`ls`");
    assert_eq!(code("echo `date`"), "`` echo `date` ``");
    assert_eq!(code("a ``b``"), "``` a ``b`` ```");
}

#[test]
fn file_change_summaries_name_each_file() {
    let changes = [
        Change {
            path: "a".into(),
            kind: "add".into(),
            move_path: None,
            diff: String::new(),
        },
        Change {
            path: "b".into(),
            kind: String::new(),
            move_path: Some("c".into()),
            diff: String::new(),
        },
    ];
    assert_eq!(summary(&changes), "add a\nupdate b → c");
    let call = ToolCall::FileChange {
        changes: changes.to_vec(),
        status: ItemStatus::Failed,
    };
    assert_eq!(call.invocation_message(), "Edit 2 files");
    let NormEvent::ToolCompleted { success, error, .. } =
        call.completed(&Scope::Root, "fc", "", Ending::Reported)
    else {
        panic!("a completion");
    };
    assert!(!success);
    assert_eq!(
        error,
        Some(ToolError::new("The file changes could not be applied."))
    );
}

#[test]
fn dynamic_tool_output_embeds_data_url_images() {
    let call = ToolCall::Dynamic {
        namespace: Some("client".into()),
        tool: "screenshot".into(),
        arguments: json!({}),
        status: ItemStatus::Completed,
        content_items: vec![
            json!({ "type": "inputText", "text": "taken" }),
            json!({ "type": "inputImage", "imageUrl": "data:image/png;base64,aGk=" }),
            json!({ "type": "inputImage", "imageUrl": "https://example.com/a.png" }),
        ],
        success: Some(true),
    };
    assert_eq!(call.tool_name(), "client.screenshot");
    let NormEvent::ToolCompleted { content, .. } =
        call.completed(&Scope::Root, "d", "", Ending::Reported)
    else {
        panic!("a completion");
    };
    assert_eq!(
        serde_json::to_value(&content).unwrap(),
        json!([
            { "type": "text", "text": "taken" },
            { "type": "embeddedResource", "data": "aGk=", "contentType": "image/png" },
            { "type": "text", "text": "https://example.com/a.png" },
        ])
    );
}

#[test]
fn a_failed_mcp_call_reports_its_error() {
    let call = ToolCall::Mcp {
        server: "s".into(),
        tool: "t".into(),
        arguments: json!(null),
        status: ItemStatus::Failed,
        result: None,
        error: Some("boom".into()),
    };
    let NormEvent::ToolCompleted {
        success,
        past_tense_message,
        error,
        ..
    } = call.completed(&Scope::Root, "m", "", Ending::Reported)
    else {
        panic!("a completion");
    };
    assert!(!success);
    assert_eq!(past_tense_message.as_deref(), Some("`s.t` failed"));
    assert_eq!(error, Some(ToolError::new("boom")));
}

#[test]
fn collab_calls_summarize_their_agents() {
    let mut states = serde_json::Map::new();
    states.insert(
        "th-2".into(),
        json!({ "status": "completed", "message": "done" }),
    );
    let call = ToolCall::Collab {
        tool: "spawnAgent".into(),
        status: ItemStatus::Completed,
        prompt: Some("Look around".into()),
        agents_states: states,
    };
    assert_eq!(call.tool_name(), "codex.spawnAgent");
    assert_eq!(call.invocation_message(), "Look around");
    let NormEvent::ToolCompleted {
        content, success, ..
    } = call.completed(&Scope::Root, "c", "", Ending::Reported)
    else {
        panic!("a completion");
    };
    assert!(success);
    assert_eq!(
        serde_json::to_value(&content).unwrap(),
        json!([{ "type": "text", "text": "th-2: completed — done" }])
    );
}

#[test]
fn permissions_are_described_compactly() {
    let cases = [
        (json!({}), "Allow extra permissions"),
        (json!(null), "Allow extra permissions"),
        (
            json!({ "network": { "enabled": true } }),
            "Allow network access",
        ),
        (
            json!({ "network": { "enabled": false }, "fileSystem": { "read": [], "write": null } }),
            "Allow extra permissions",
        ),
        (
            json!({ "network": true,
                    "fileSystem": { "write": ["/a", "/b", "/c", "/d", "/e"], "read": "/r" } }),
            "Allow network access; read access to `/r`; write access to `/a`, `/b`, `/c`, 2 more",
        ),
        (
            json!({ "macos": { "accessibility": true } }),
            r#"Allow macos: `{"accessibility":true}`"#,
        ),
    ];
    for (requested, expected) in cases {
        assert_eq!(
            permissions_message(&requested, "Allow"),
            expected,
            "{requested}"
        );
    }
}

#[test]
fn the_synthetic_permissions_call_asks_and_completes_with_the_decision() {
    let requested = json!({ "network": { "enabled": true } });
    let call = ToolCall::Permissions {
        requested: requested.clone(),
    };
    assert_eq!(call.tool_name(), PERMISSIONS_TOOL);
    assert_eq!(call.display_name(), "Permissions");
    let NormEvent::PermissionAsked {
        kind, title, input, ..
    } = call.permission(&Scope::Root, "permissions-1", Some("  "))
    else {
        panic!("a permission request");
    };
    assert_eq!(kind, PermissionKind::Other("permissions".into()));
    assert_eq!(title, "Allow extra permissions");
    assert_eq!(input, Some(requested.to_string()));
    let NormEvent::ToolCompleted {
        success,
        past_tense_message,
        error,
        ..
    } = call.completed(&Scope::Root, "permissions-1", "", Ending::Reported)
    else {
        panic!("a completion");
    };
    assert!(success);
    assert_eq!(
        past_tense_message.as_deref(),
        Some("Allowed network access")
    );
    assert_eq!(error, None);
    let NormEvent::ToolCompleted { success, error, .. } =
        call.completed(&Scope::Root, "permissions-1", "", Ending::Declined)
    else {
        panic!("a completion");
    };
    assert!(!success);
    assert_eq!(
        error.and_then(|error| error.code),
        Some("denied".to_owned())
    );
}
