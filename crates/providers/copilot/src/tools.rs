//! What Copilot's tools look like to people: display names, invocation and past-tense messages,
//! permission titles and kinds, derived from the tool name and its arguments.
//!
//! Copilot's built-in tools (1.0.102): `bash` / `powershell` (and `read_`/`write_`/`stop_`/
//! `list_` variants for shell sessions), `view`, `create`, `edit`, `apply_patch`, `grep` / `rg`,
//! `glob`, `web_fetch`, `task` (starts a subagent), `skill`, `report_intent` (hidden: it only
//! says what the agent is doing), and MCP tools named by their server.

use agenthost_protocol::PermissionKind;
use serde_json::Value;

use crate::wire::PermissionRequest;

/// The tool that reports what the agent is doing: shown as activity, never as a tool call.
pub const REPORT_INTENT: &str = "report_intent";

/// The tool that starts a subagent (`arguments{description, prompt, agent_type}`).
pub const TASK: &str = "task";

/// The tool that loads a skill.
pub const SKILL: &str = "skill";

/// Tools that are not shown as tool calls.
pub fn is_hidden(tool: &str) -> bool {
    tool == REPORT_INTENT
}

fn is_shell(tool: &str) -> bool {
    matches!(tool, "bash" | "powershell" | "shell")
}

/// The name people see.
pub fn display_name(tool: &str, mcp_tool: Option<&str>) -> String {
    if let Some(name) = mcp_tool.filter(|name| !name.is_empty()) {
        return name.to_owned();
    }
    let name = match tool {
        "bash" => "Bash",
        "powershell" => "PowerShell",
        "read_bash" | "read_powershell" => "Read shell output",
        "write_bash" | "write_powershell" => "Write to shell",
        "stop_bash" | "stop_powershell" => "Stop shell",
        "list_bash" | "list_powershell" => "List shells",
        "view" => "View",
        "create" => "Create",
        "edit" => "Edit",
        "apply_patch" => "Apply patch",
        "grep" | "rg" => "Search",
        "glob" => "Find files",
        "web_fetch" => "Fetch",
        "web_search" => "Web search",
        TASK => "Task",
        SKILL => "Skill",
        "" => "Tool",
        other => other,
    };
    name.to_owned()
}

fn field<'a>(arguments: &'a Value, key: &str) -> Option<&'a str> {
    arguments
        .get(key)
        .and_then(Value::as_str)
        .filter(|text| !text.is_empty())
}

/// `command` without a leading `cd <cwd> &&` that only repeats the working directory.
pub fn strip_cd_prefix<'a>(command: &'a str, cwd: Option<&str>) -> &'a str {
    let Some(cwd) = cwd
        .map(|cwd| cwd.trim_end_matches('/'))
        .filter(|c| !c.is_empty())
    else {
        return command;
    };
    let Some(rest) = command.trim_start().strip_prefix("cd ") else {
        return command;
    };
    let rest = rest.trim_start();
    for quoted in [
        cwd.to_owned(),
        format!("{cwd}/"),
        format!("'{cwd}'"),
        format!("\"{cwd}\""),
    ] {
        if let Some(tail) = rest.strip_prefix(quoted.as_str())
            && let Some(tail) = tail.trim_start().strip_prefix("&&")
        {
            return tail.trim_start();
        }
    }
    command
}

/// The facts a message about a call is built from.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The tool.
    pub tool: &'a str,
    /// Its arguments (`Value::Null` when unknown).
    pub arguments: &'a Value,
    /// The session's working directory.
    pub cwd: Option<&'a str>,
    /// The MCP tool name, for MCP tools.
    pub mcp_tool: Option<&'a str>,
}

impl Call<'_> {
    fn display(&self) -> String {
        display_name(self.tool, self.mcp_tool)
    }

    fn command(&self) -> Option<&str> {
        field(self.arguments, "command").map(|command| strip_cd_prefix(command, self.cwd))
    }
}

/// What the call will do, for people (`Run \`ls\``, `Read src/main.rs`, …); `fallback` (the
/// CLI's intention summary or tool title) for tools without a rule.
pub fn invocation_message(call: Call<'_>, fallback: Option<&str>) -> String {
    let args = call.arguments;
    let text = |key: &str, make: fn(&str) -> String| field(args, key).map(make);
    let message = match call.tool {
        tool if is_shell(tool) => call.command().map(|c| format!("Run `{c}`")),
        "view" => text("path", |p| format!("Read {p}")),
        "create" => text("path", |p| format!("Create {p}")),
        "edit" => text("path", |p| format!("Edit {p}")),
        "grep" | "rg" => text("pattern", |p| format!("Search for {p}")),
        "glob" => text("pattern", |p| format!("Find files matching {p}")),
        "web_fetch" => text("url", |u| format!("Fetch {u}")),
        "web_search" => text("query", |q| format!("Search the web for {q}")),
        TASK => text("description", str::to_owned),
        SKILL => text("skill", |s| format!("Load skill {s}")),
        _ => None,
    };
    message
        .or_else(|| fallback.filter(|text| !text.is_empty()).map(str::to_owned))
        .unwrap_or_else(|| format!("Run {}", call.display()))
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
pub fn past_tense_message(call: Call<'_>, outcome: Outcome) -> String {
    let display = call.display();
    match outcome {
        Outcome::Failed => return format!("{display} failed"),
        Outcome::Denied => return format!("{display} was denied"),
        Outcome::Succeeded => {}
    }
    let args = call.arguments;
    let text = |key: &str, make: fn(&str) -> String| field(args, key).map(make);
    let message = match call.tool {
        tool if is_shell(tool) => call.command().map(|c| format!("Ran `{c}`")),
        "view" => text("path", |p| format!("Read {p}")),
        "create" => text("path", |p| format!("Created {p}")),
        "edit" => text("path", |p| format!("Edited {p}")),
        "grep" | "rg" => text("pattern", |p| format!("Searched for {p}")),
        "glob" => text("pattern", |p| format!("Found files matching {p}")),
        "web_fetch" => text("url", |u| format!("Fetched {u}")),
        "web_search" => text("query", |q| format!("Searched the web for {q}")),
        TASK => text("description", |d| format!("Finished: {d}")),
        SKILL => text("skill", |s| format!("Loaded skill {s}")),
        _ => None,
    };
    message.unwrap_or_else(|| format!("Ran {display}"))
}

/// The argument whose streamed value says what a call will do, for tools that have one.
fn streamed_key(tool: &str) -> Option<&'static str> {
    match tool {
        tool if is_shell(tool) => Some("command"),
        "view" | "create" | "edit" => Some("path"),
        "grep" | "rg" | "glob" => Some("pattern"),
        "web_fetch" => Some("url"),
        TASK => Some("description"),
        _ => None,
    }
}

/// What a call will do, recomputed from its partial JSON arguments; `None` while the argument
/// that tells has not started streaming.
pub fn streaming_invocation(tool: &str, partial: &str, cwd: Option<&str>) -> Option<String> {
    let key = streamed_key(tool)?;
    let value = partial_string_field(partial, key)?;
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    let arguments = serde_json::json!({ key: value });
    let call = Call {
        tool,
        arguments: &arguments,
        cwd,
        mcp_tool: None,
    };
    Some(invocation_message(call, None))
}

/// The (possibly unfinished) string value of `"key"` in a JSON text that may be cut anywhere.
fn partial_string_field(text: &str, key: &str) -> Option<String> {
    let pattern = format!("\"{key}\"");
    let mut search = text;
    loop {
        let at = search.find(&pattern)?;
        let rest = search[at + pattern.len()..].trim_start();
        search = &search[at + pattern.len()..];
        let Some(rest) = rest.strip_prefix(':') else {
            continue;
        };
        let rest = rest.trim_start();
        return Some(unescape_prefix(rest.strip_prefix('"')?));
    }
}

/// Decodes a JSON string body up to its closing quote or the end of the text (an escape cut
/// in half is dropped).
fn unescape_prefix(body: &str) -> String {
    let mut out = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => break,
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some('b') => out.push('\u{8}'),
                Some('f') => out.push('\u{c}'),
                Some('u') => {
                    let hex: String = chars.by_ref().take(4).collect();
                    match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                        Some(decoded) if hex.len() == 4 => out.push(decoded),
                        _ => break,
                    }
                }
                Some(other) => out.push(other),
                None => break,
            },
            c => out.push(c),
        }
    }
    out
}

/// What a permission request is about (auto-approve rules match on it).
pub fn permission_kind(kind: &str) -> PermissionKind {
    PermissionKind::from_name(kind)
}

/// The short title of the confirmation prompt.
pub fn confirmation_title(request: &PermissionRequest) -> String {
    let tool = request
        .tool_title
        .as_deref()
        .or(request.tool_name.as_deref())
        .unwrap_or("the tool");
    match request.kind.as_str() {
        "shell" => "Run command".to_owned(),
        "write" => "Edit file".to_owned(),
        "read" => "Read file".to_owned(),
        "url" => "Fetch web content".to_owned(),
        "mcp" => format!("Call {tool}"),
        "memory" => "Store a memory".to_owned(),
        "custom-tool" | "hook" => format!("Allow {tool}"),
        other => format!("Allow {other}"),
    }
}

/// What the call asking permission will do, for people.
pub fn permission_message(request: &PermissionRequest, cwd: Option<&str>) -> String {
    let or = |value: &Option<String>, make: &dyn Fn(&str) -> String| {
        value.as_deref().filter(|text| !text.is_empty()).map(make)
    };
    let message = match request.kind.as_str() {
        "shell" => or(&request.full_command_text, &|c| {
            format!("Run `{}`", strip_cd_prefix(c, cwd))
        }),
        "write" => or(&request.file_name, &|f| format!("Edit {f}")),
        "read" => or(&request.path, &|p| format!("Read {p}")),
        "url" => or(&request.url, &|u| format!("Fetch {u}")),
        "mcp" => {
            let tool = request
                .tool_title
                .as_deref()
                .or(request.tool_name.as_deref());
            match (tool, request.server_name.as_deref()) {
                (Some(tool), Some(server)) => Some(format!("Call {tool} ({server})")),
                (Some(tool), None) => Some(format!("Call {tool}")),
                _ => None,
            }
        }
        "memory" => or(&request.fact, &|f| format!("Remember: {f}")),
        "hook" => or(&request.hook_message, &str::to_owned),
        _ => None,
    };
    message
        .or_else(|| or(&request.intention, &str::to_owned))
        .or_else(|| or(&request.tool_name, &|t| format!("Run {t}")))
        .unwrap_or_else(|| format!("Allow {}", request.kind))
}

/// The file or directory a permission request concerns.
pub fn permission_path(request: &PermissionRequest) -> Option<String> {
    match request.kind.as_str() {
        "write" => request.file_name.clone(),
        "read" => request.path.clone(),
        _ => None,
    }
}

/// The input a permission request shows when the tool call's own input is not known.
pub fn permission_input(request: &PermissionRequest) -> Option<String> {
    let value = match request.kind.as_str() {
        "mcp" | "custom-tool" => request.args.clone(),
        "hook" => request.tool_args.clone(),
        _ => None,
    }?;
    Some(value.to_string())
}

/// The tool a permission request belongs to, by kind, when the call is not known.
pub fn permission_tool(request: &PermissionRequest) -> String {
    match request.kind.as_str() {
        "shell" => "bash".to_owned(),
        "write" => "edit".to_owned(),
        "read" => "view".to_owned(),
        "url" => "web_fetch".to_owned(),
        _ => request
            .tool_name
            .clone()
            .unwrap_or_else(|| request.kind.clone()),
    }
}

#[cfg(test)]
#[path = "tools_tests.rs"]
mod tests;
