//! What Claude Code's tools look like to people: display names, invocation and past-tense
//! messages, permission kinds and paths, derived from the tool name and its input.

use agenthost_protocol::PermissionKind;
use serde_json::Value;

/// The tools that start a subagent (`input{description, subagent_type, prompt}`).
pub const SPAWNING_TOOLS: &[&str] = &["Task", "Agent"];

/// The tool Claude Code uses to ask the user questions: its `can_use_tool` becomes
/// `chat/inputRequested` (see `questions`).
pub const ASK_USER_QUESTION: &str = "AskUserQuestion";

/// Whether `tool` starts a subagent.
pub fn is_spawning(tool: &str) -> bool {
    SPAWNING_TOOLS.contains(&tool)
}

/// The name people see: MCP tools (`mcp__<server>__<tool>`) lose their prefix.
pub fn display_name(tool: &str) -> String {
    tool.strip_prefix("mcp__")
        .and_then(|rest| rest.split_once("__"))
        .map_or(tool, |(_, name)| name)
        .to_owned()
}

fn field<'a>(input: &'a Value, key: &str) -> Option<&'a str> {
    input.get(key).and_then(Value::as_str)
}

/// What the call will do, for people (`Run \`ls\``, `Edit src/main.rs`, …).
pub fn invocation_message(tool: &str, input: &Value) -> String {
    let text = |key: &str, make: fn(&str) -> String| field(input, key).map(make);
    let message = match tool {
        "Bash" => text("command", |c| format!("Run `{c}`")),
        "Read" => text("file_path", |p| format!("Read {p}")),
        "Write" => text("file_path", |p| format!("Write {p}")),
        "Edit" | "MultiEdit" => text("file_path", |p| format!("Edit {p}")),
        "NotebookEdit" => text("notebook_path", |p| format!("Edit {p}")),
        "Glob" | "Grep" => text("pattern", |p| format!("Search for {p}")),
        "WebFetch" => text("url", |u| format!("Fetch {u}")),
        "WebSearch" => text("query", |q| format!("Search the web for {q}")),
        "ExitPlanMode" => text("plan", str::to_owned),
        tool if is_spawning(tool) => text("description", str::to_owned),
        _ => None,
    };
    message.unwrap_or_else(|| format!("Run {}", display_name(tool)))
}

/// How a finished call is described.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It ran and succeeded.
    Succeeded,
    /// It ran and failed.
    Failed,
    /// It did not run: the user or a rule declined it.
    Denied,
}

/// What the call did, in the past tense.
pub fn past_tense_message(tool: &str, input: Option<&Value>, outcome: Outcome) -> String {
    let display = display_name(tool);
    match outcome {
        Outcome::Failed => return format!("{display} failed"),
        Outcome::Denied => return format!("{display} was denied"),
        Outcome::Succeeded => {}
    }
    let input = input.unwrap_or(&Value::Null);
    let text = |key: &str, make: fn(&str) -> String| field(input, key).map(make);
    let message = match tool {
        "Bash" => text("command", |c| format!("Ran `{c}`")),
        "Read" => text("file_path", |p| format!("Read {p}")),
        "Write" => text("file_path", |p| format!("Wrote {p}")),
        "Edit" | "MultiEdit" => text("file_path", |p| format!("Edited {p}")),
        "NotebookEdit" => text("notebook_path", |p| format!("Edited {p}")),
        "Glob" | "Grep" => text("pattern", |p| format!("Searched for {p}")),
        "WebFetch" => text("url", |u| format!("Fetched {u}")),
        "WebSearch" => text("query", |q| format!("Searched the web for {q}")),
        tool if is_spawning(tool) => text("description", |d| format!("Finished: {d}")),
        _ => None,
    };
    message.unwrap_or_else(|| format!("Ran {display}"))
}

/// What a permission for `tool` is about (auto-approve rules match on it).
pub fn permission_kind(tool: &str) -> PermissionKind {
    match tool {
        "Bash" | "BashOutput" | "KillShell" | "KillBash" => PermissionKind::Shell,
        "Write" | "Edit" | "MultiEdit" | "NotebookEdit" => PermissionKind::Write,
        "Read" | "Glob" | "Grep" | "LS" | "NotebookRead" => PermissionKind::Read,
        "WebFetch" | "WebSearch" => PermissionKind::Url,
        tool if tool.starts_with("mcp__") => PermissionKind::Mcp,
        tool => PermissionKind::Other(tool.to_owned()),
    }
}

/// The short title of the confirmation prompt.
pub fn confirmation_title(tool: &str) -> String {
    if tool == "ExitPlanMode" {
        return "Approve the plan".to_owned();
    }
    match permission_kind(tool) {
        PermissionKind::Shell => "Run command".to_owned(),
        PermissionKind::Write => "Edit file".to_owned(),
        PermissionKind::Read => "Read files".to_owned(),
        PermissionKind::Url => "Fetch web content".to_owned(),
        PermissionKind::Mcp => format!("Call {}", display_name(tool)),
        PermissionKind::Other(_) => format!("Allow {}", display_name(tool)),
    }
}

/// The path a permission concerns: the CLI's `blocked_path`, else the file the input names.
pub fn permission_path(blocked_path: Option<&str>, input: &Value) -> Option<String> {
    blocked_path
        .or_else(|| field(input, "file_path"))
        .or_else(|| field(input, "notebook_path"))
        .or_else(|| field(input, "path"))
        .map(str::to_owned)
}

#[cfg(test)]
#[path = "tools_tests.rs"]
mod tests;
