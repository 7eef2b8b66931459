//! The script shared by the three APIs: which tool to call, with which arguments, and what to
//! say after a tool result. Every function reads the request alone (the mock is stateless).

use serde_json::Value;

use crate::MockModelConfig;
use crate::pyjson::Json;

/// The final answer after a tool result that looks successful.
pub(crate) const FINAL_TEXT: &str =
    "Done. I ran the command and the file out.txt now contains \"hi\".";
/// The final answer after a tool result that looks denied or failed.
pub(crate) const FINAL_TEXT_ERR: &str =
    "The command did not run (it was denied or failed), so out.txt was not created.";
/// The text that precedes the tool call.
pub(crate) const PREAMBLE: &str = "I'll run a shell command to create the file.";
/// The answer to side requests (titles, summaries, …): no shell tool was offered.
pub(crate) const SIDE_TEXT: &str = "Mock reply";

/// Lower-case substrings of a tool result that mean "denied or failed".
const ERR_MARKERS: &[&str] = &[
    "denied",
    "rejected",
    "not permitted",
    "needs approval",
    "declined",
    "aborted",
    "permission",
    "not allowed",
    "read-only file system",
    "exited with code 1",
    "exit code: 1",
];

/// Shell-like tool names, most preferred first.
const SHELL_TOOL_PREFERENCE: &[&str] = &[
    // Claude Code
    "Bash",
    // Codex (depends on model family / features)
    "shell_command",
    "shell",
    "exec_command",
    "local_shell",
    // Copilot CLI and others
    "bash",
    "powershell",
    "run_in_terminal",
    "run_command",
    "execute_command",
];

/// Python's truthiness of an optional JSON value (`None`, `0`, `""`, `[]`, `{}` are false).
pub(crate) fn truthy(value: Option<&Json>) -> bool {
    value.is_some_and(Json::is_truthy)
}

/// Python's `x or …` for a JSON value: the value when truthy.
pub(crate) fn or_none(value: Option<&Json>) -> Option<&Json> {
    value.filter(|v| v.is_truthy())
}

/// `body.get("model") or "mock-model"`.
pub(crate) fn model_of(body: &Json) -> Json {
    or_none(body.get("model")).map_or_else(|| Json::from("mock-model"), Json::clone)
}

/// A request value for a log summary (`null` when absent).
pub(crate) fn value(json: Option<&Json>) -> Value {
    json.map_or(Value::Null, Value::from)
}

/// The items of an array field (none when absent or not an array).
pub(crate) fn items<'a>(body: &'a Json, key: &str) -> &'a [Json] {
    body.get(key).and_then(Json::as_array).unwrap_or(&[])
}

/// A string as is, anything else as `json.dumps` writes it (`None` is `null`).
pub(crate) fn text_of(value: Option<&Json>) -> String {
    match value {
        Some(Json::Str(s)) => s.clone(),
        Some(other) => other.dumps(),
        None => "null".to_owned(),
    }
}

/// The log's `short`: at most `n` characters, then a note of the full length.
pub(crate) fn short(value: Option<&Json>, n: usize) -> String {
    short_text(&text_of(value), n)
}

/// [`short`] of a string.
pub(crate) fn short_text(text: &str, n: usize) -> String {
    let len = text.chars().count();
    if len <= n {
        return text.to_owned();
    }
    let head: String = text.chars().take(n).collect();
    format!("{head}...({len} chars)")
}

/// `prefix_` and 24 random hex digits, like the reference's `uuid4().hex[:24]`.
pub(crate) fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", random_hex(24))
}

/// `len` random lower-case hex digits.
pub(crate) fn random_hex(len: usize) -> String {
    let mut bytes = vec![0u8; len.div_ceil(2)];
    if getrandom::fill(&mut bytes).is_err() {
        // Ids only need to differ; a clock-and-counter mix is enough when the OS has no entropy.
        fallback_bytes(&mut bytes);
    }
    let mut hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    hex.truncate(len);
    hex
}

fn fallback_bytes(bytes: &mut [u8]) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut state = now_ms() ^ COUNTER.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
    for byte in bytes {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        *byte = (state >> 56) as u8;
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Whole seconds since the Unix epoch (`int(time.time())`).
pub(crate) fn now_secs() -> i64 {
    i64::try_from(now_ms() / 1000).unwrap_or(i64::MAX)
}

/// The name the log shows for a tool: Chat's `function.name`, else `name`, else `type`.
pub(crate) fn tool_name_of(tool: &Json) -> Option<&Json> {
    if !tool.is_object() {
        return None;
    }
    if let Some(function) = tool.get("function").filter(|f| f.is_object()) {
        return function.get("name");
    }
    or_none(tool.get("name")).or_else(|| tool.get("type"))
}

/// The tool names of `body["tools"]`, for the log summaries.
pub(crate) fn tool_names(body: &Json) -> Value {
    let names = items(body, "tools")
        .iter()
        .map(|tool| value(tool_name_of(tool)))
        .collect();
    Value::Array(names)
}

/// The request's keys the summary does not show, sorted.
pub(crate) fn other_keys(body: &Json, known: &[&str]) -> Value {
    let mut keys: Vec<&str> = body.keys().filter(|k| !known.contains(k)).collect();
    keys.sort_unstable();
    Value::from(keys)
}

/// A shell tool offered by the request: its preferred name and its definition.
pub(crate) fn pick_shell_tool(body: &Json) -> Option<(&'static str, &Json)> {
    let tools = items(body, "tools");
    SHELL_TOOL_PREFERENCE.iter().find_map(|&name| {
        // The last definition of a name wins, as in a dict built from the list.
        let tool = tools
            .iter()
            .rev()
            .find(|tool| tool_name_of(tool).and_then(Json::as_str) == Some(name))?;
        Some((name, tool))
    })
}

/// The JSON schema of a tool's parameters, when it has one.
fn tool_schema_of(tool: &Json) -> Option<&Json> {
    let schema = match tool.get("function").filter(|f| f.is_object()) {
        Some(function) => or_none(function.get("parameters")),
        None => or_none(tool.get("input_schema")).or_else(|| or_none(tool.get("parameters"))),
    };
    schema.filter(|s| s.is_object())
}

/// The arguments of the one tool call: the configured command under the name the schema uses,
/// the optional fields the fixtures rely on, then every other required field with a stand-in.
pub(crate) fn shell_args(name: &str, tool: &Json, config: &MockModelConfig) -> Json {
    let schema = tool_schema_of(tool);
    let props = schema
        .and_then(|s| s.get("properties"))
        .filter(|p| p.is_object());
    let prop = |field: &str| props.and_then(|p| p.get(field));
    let required = schema
        .and_then(|s| s.get("required"))
        .and_then(Json::as_array)
        .unwrap_or(&[]);
    let command = config.command.as_str();
    let argv = || Json::from(vec!["bash".into(), "-lc".into(), command.into()]);
    let command_is_array = prop("command")
        .and_then(|p| p.get("type"))
        .and_then(Json::as_str)
        == Some("array");

    let mut args = Json::Obj(Vec::new());
    args = if (name == "shell" && command_is_array) || name == "local_shell" {
        args.with("command", argv())
    } else if prop("cmd").is_some() {
        args.with("cmd", command)
    } else {
        args.with("command", command)
    };
    if prop("description").is_some() {
        args = args.with("description", "Write hi to out.txt");
    }
    if let Some(workdir) = config.workdir.as_deref().filter(|w| !w.is_empty())
        && prop("workdir").is_some()
    {
        args = args.with("workdir", workdir);
    }
    if config.escalate && prop("sandbox_permissions").is_some() {
        args = args.with("sandbox_permissions", "require_escalated");
        if prop("justification").is_some() {
            args = args.with("justification", "Need to write out.txt");
        }
    }
    for field in required.iter().filter_map(Json::as_str) {
        if args.has(field) {
            continue;
        }
        if let Some(value) = prop(field).and_then(|p| stand_in(field, p)) {
            args = args.with(field, value);
        }
    }
    args
}

/// A value for a required field the script has no meaning for: the first enum value, else a
/// neutral value of the schema's type; nothing for a type it cannot name.
fn stand_in(field: &str, property: &Json) -> Option<Json> {
    match property.get("enum") {
        Some(Json::Arr(values)) if !values.is_empty() => return values.first().cloned(),
        Some(Json::Str(s)) if !s.is_empty() => {
            return s.chars().next().map(|c| c.to_string().into());
        }
        _ => {}
    }
    let lower = field.to_lowercase();
    match property.get("type").and_then(Json::as_str)? {
        "string" => Some("mock".into()),
        "integer" | "number" if lower.contains("timeout") || lower.contains("wait") => {
            Some(Json::Int(30))
        }
        "integer" | "number" => Some(Json::Int(1)),
        "boolean" => Some(false.into()),
        "array" => Some(Json::Arr(Vec::new())),
        "object" => Some(Json::Obj(Vec::new())),
        _ => None,
    }
}

/// The final text after a tool result: the error-aware variant when the result is flagged as
/// an error or reads like a denial or a non-zero exit.
pub(crate) fn final_text_for(is_error: bool, output: Option<&Json>) -> &'static str {
    let text = text_of(output).to_lowercase();
    if is_error || ERR_MARKERS.iter().any(|m| text.contains(m)) || mentions_failed_exit(&text) {
        FINAL_TEXT_ERR
    } else {
        FINAL_TEXT
    }
}

/// The reference's regex `exit(ed with)? code:? *[1-9]` on lower-case text.
fn mentions_failed_exit(text: &str) -> bool {
    text.match_indices("exit").any(|(at, _)| {
        let rest = &text[at + "exit".len()..];
        let after_code = |s: &str| {
            let s = s.strip_prefix(" code")?;
            let s = s.strip_prefix(':').unwrap_or(s);
            Some(
                s.trim_start_matches(' ')
                    .starts_with(|c: char| ('1'..='9').contains(&c)),
            )
        };
        let with_ed = rest.strip_prefix("ed with").and_then(after_code);
        with_ed == Some(true) || after_code(rest) == Some(true)
    })
}

/// A text cut into about three deltas at spaces; joined they give the text back.
pub(crate) fn split_text(text: &str) -> Vec<String> {
    let words: Vec<&str> = text.split(' ').collect();
    let per_part = (words.len() / 3).max(1);
    let parts: Vec<String> = words.chunks(per_part).map(|w| w.join(" ")).collect();
    let last = parts.len().saturating_sub(1);
    parts
        .into_iter()
        .enumerate()
        .map(|(i, part)| if i < last { part + " " } else { part })
        .collect()
}

/// A JSON text cut into about three fragments of equal length (none for an empty text).
pub(crate) fn split_json(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let per_part = (chars.len() / 3).max(1);
    chars.chunks(per_part).map(|c| c.iter().collect()).collect()
}

#[cfg(test)]
#[path = "script_tests.rs"]
mod tests;
