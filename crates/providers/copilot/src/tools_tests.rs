use serde_json::json;

use super::*;

fn call<'a>(tool: &'a str, arguments: &'a Value) -> Call<'a> {
    Call {
        tool,
        arguments,
        cwd: Some("/w"),
        mcp_tool: None,
    }
}

#[test]
fn display_names() {
    assert_eq!(display_name("bash", None), "Bash");
    assert_eq!(display_name("rg", None), "Search");
    assert_eq!(
        display_name("github-get_issue", Some("get_issue")),
        "get_issue"
    );
    assert_eq!(display_name("my_tool", None), "my_tool");
    assert_eq!(display_name("", None), "Tool");
}

#[test]
fn invocation_and_past_tense_messages_follow_the_arguments() {
    let cases = [
        (
            "bash",
            json!({ "command": "cd /w && ls" }),
            "Run `ls`",
            "Ran `ls`",
        ),
        ("view", json!({ "path": "a.rs" }), "Read a.rs", "Read a.rs"),
        (
            "create",
            json!({ "path": "b.rs" }),
            "Create b.rs",
            "Created b.rs",
        ),
        (
            "edit",
            json!({ "path": "c.rs" }),
            "Edit c.rs",
            "Edited c.rs",
        ),
        (
            "grep",
            json!({ "pattern": "fn" }),
            "Search for fn",
            "Searched for fn",
        ),
        (
            "glob",
            json!({ "pattern": "*.rs" }),
            "Find files matching *.rs",
            "Found files matching *.rs",
        ),
        (
            "web_fetch",
            json!({ "url": "https://x" }),
            "Fetch https://x",
            "Fetched https://x",
        ),
        (
            "task",
            json!({ "description": "Explore" }),
            "Explore",
            "Finished: Explore",
        ),
        (
            "skill",
            json!({ "skill": "release" }),
            "Load skill release",
            "Loaded skill release",
        ),
        ("sql", json!({ "query": "select" }), "Run sql", "Ran sql"),
        ("bash", json!({}), "Run Bash", "Ran Bash"),
    ];
    for (tool, arguments, invocation, past) in cases {
        assert_eq!(invocation_message(call(tool, &arguments), None), invocation);
        assert_eq!(
            past_tense_message(call(tool, &arguments), Outcome::Succeeded),
            past
        );
    }
    let none = Value::Null;
    assert_eq!(
        invocation_message(call("sql", &none), Some("Query todos")),
        "Query todos"
    );
    assert_eq!(
        past_tense_message(call("bash", &none), Outcome::Failed),
        "Bash failed"
    );
    assert_eq!(
        past_tense_message(call("bash", &none), Outcome::Denied),
        "Bash was denied"
    );
}

#[test]
fn only_a_cd_into_the_working_directory_is_stripped() {
    let cases = [
        ("cd /w && ls", "ls"),
        ("cd /w/ && ls", "ls"),
        ("cd '/w' &&ls", "ls"),
        ("cd \"/w\" && ls -a", "ls -a"),
        ("cd /work && ls", "cd /work && ls"),
        ("cd /w; ls", "cd /w; ls"),
        ("ls", "ls"),
    ];
    for (command, expected) in cases {
        assert_eq!(strip_cd_prefix(command, Some("/w/")), expected, "{command}");
    }
    assert_eq!(strip_cd_prefix("cd /w && ls", None), "cd /w && ls");
}

#[test]
fn streaming_invocations_read_unfinished_arguments() {
    assert_eq!(streaming_invocation("bash", "{\"comm", None), None);
    assert_eq!(streaming_invocation("bash", "{\"command\": \"", None), None);
    assert_eq!(
        streaming_invocation("bash", "{\"command\": \"echo \\\"hi\\\" \\u00e9\\u00", None),
        Some("Run `echo \"hi\" é`".into())
    );
    assert_eq!(
        streaming_invocation(
            "bash",
            "{\"description\": \"x\", \"command\" : \"ls\\n\"}",
            None
        ),
        Some("Run `ls`".into())
    );
    assert_eq!(
        streaming_invocation("view", "{\"path\": \"src/ma", None),
        Some("Read src/ma".into())
    );
    // A key inside a string value is not the key.
    assert_eq!(
        streaming_invocation(
            "bash",
            "{\"description\": \"the \\\"command\\\": \\\"x",
            None
        ),
        None
    );
    assert_eq!(
        streaming_invocation("sql", "{\"query\": \"x\"}", None),
        None
    );
    assert_eq!(streaming_invocation("bash", "{\"command\": 5}", None), None);
}

#[test]
fn permission_requests_read_for_people() {
    let request = |value: Value| -> PermissionRequest { serde_json::from_value(value).unwrap() };
    let shell = request(json!({ "kind": "shell", "fullCommandText": "cd /w && rm x" }));
    assert_eq!(confirmation_title(&shell), "Run command");
    assert_eq!(permission_message(&shell, Some("/w")), "Run `rm x`");
    assert_eq!(permission_kind(&shell.kind), PermissionKind::Shell);
    assert_eq!(permission_path(&shell), None);
    assert_eq!(permission_tool(&shell), "bash");

    let read = request(json!({ "kind": "read", "path": "/etc/hosts", "intention": "Check" }));
    assert_eq!(confirmation_title(&read), "Read file");
    assert_eq!(permission_message(&read, None), "Read /etc/hosts");
    assert_eq!(permission_path(&read).as_deref(), Some("/etc/hosts"));

    let mcp = request(
        json!({ "kind": "mcp", "serverName": "github", "toolName": "get_issue",
                              "toolTitle": "Get issue", "args": { "n": 1 } }),
    );
    assert_eq!(confirmation_title(&mcp), "Call Get issue");
    assert_eq!(permission_message(&mcp, None), "Call Get issue (github)");
    assert_eq!(permission_kind(&mcp.kind), PermissionKind::Mcp);
    assert_eq!(permission_input(&mcp).as_deref(), Some("{\"n\":1}"));
    assert_eq!(permission_tool(&mcp), "get_issue");

    let memory = request(json!({ "kind": "memory", "fact": "Uses tabs" }));
    assert_eq!(confirmation_title(&memory), "Store a memory");
    assert_eq!(permission_message(&memory, None), "Remember: Uses tabs");
    assert_eq!(
        permission_kind(&memory.kind),
        PermissionKind::Other("memory".into())
    );

    let custom = request(json!({ "kind": "custom-tool", "toolName": "deploy" }));
    assert_eq!(confirmation_title(&custom), "Allow deploy");
    assert_eq!(permission_message(&custom, None), "Run deploy");

    let url = request(json!({ "kind": "url", "url": "https://x", "intention": "Docs" }));
    assert_eq!(confirmation_title(&url), "Fetch web content");
    assert_eq!(permission_message(&url, None), "Fetch https://x");

    let odd = request(json!({ "kind": "teleport", "intention": "Go" }));
    assert_eq!(confirmation_title(&odd), "Allow teleport");
    assert_eq!(permission_message(&odd, None), "Go");
    let bare = request(json!({ "kind": "teleport" }));
    assert_eq!(permission_message(&bare, None), "Allow teleport");
}

#[test]
fn only_intent_reports_are_hidden() {
    assert!(is_hidden(REPORT_INTENT));
    assert!(!is_hidden("bash"));
}
