use serde_json::json;

use super::*;

#[test]
fn messages_describe_the_call_from_its_input() {
    let bash = json!({ "command": "ls -la" });
    assert_eq!(invocation_message("Bash", &bash), "Run `ls -la`");
    assert_eq!(
        past_tense_message("Bash", Some(&bash), Outcome::Succeeded),
        "Ran `ls -la`"
    );
    assert_eq!(
        past_tense_message("Bash", Some(&bash), Outcome::Failed),
        "Bash failed"
    );
    assert_eq!(
        past_tense_message("Bash", Some(&bash), Outcome::Denied),
        "Bash was denied"
    );
    let edit = json!({ "file_path": "/w/a.rs" });
    assert_eq!(invocation_message("Edit", &edit), "Edit /w/a.rs");
    assert_eq!(
        past_tense_message("Write", Some(&edit), Outcome::Succeeded),
        "Wrote /w/a.rs"
    );
    // Without the expected field the display name stands in.
    assert_eq!(invocation_message("Bash", &json!({})), "Run Bash");
    assert_eq!(
        invocation_message("mcp__srv__lookup", &json!({})),
        "Run lookup"
    );
    assert_eq!(
        past_tense_message("Frobnicate", None, Outcome::Succeeded),
        "Ran Frobnicate"
    );
}

#[test]
fn permissions_are_classified_by_tool() {
    assert_eq!(permission_kind("Bash"), PermissionKind::Shell);
    assert_eq!(permission_kind("MultiEdit"), PermissionKind::Write);
    assert_eq!(permission_kind("Grep"), PermissionKind::Read);
    assert_eq!(permission_kind("WebFetch"), PermissionKind::Url);
    assert_eq!(permission_kind("mcp__a__b"), PermissionKind::Mcp);
    assert_eq!(
        permission_kind("Task"),
        PermissionKind::Other("Task".into())
    );
    assert_eq!(confirmation_title("Bash"), "Run command");
    assert_eq!(confirmation_title("ExitPlanMode"), "Approve the plan");
    assert_eq!(confirmation_title("Task"), "Allow Task");
}

#[test]
fn the_permission_path_prefers_the_blocked_path() {
    let input = json!({ "file_path": "/w/a", "path": "/w" });
    assert_eq!(permission_path(Some("/b"), &input).as_deref(), Some("/b"));
    assert_eq!(permission_path(None, &input).as_deref(), Some("/w/a"));
    assert_eq!(permission_path(None, &json!({ "command": "ls" })), None);
}

#[test]
fn display_names_drop_the_mcp_prefix_only() {
    assert_eq!(display_name("mcp__host__open_file"), "open_file");
    assert_eq!(display_name("mcp__broken"), "mcp__broken");
    assert_eq!(display_name("Bash"), "Bash");
}
