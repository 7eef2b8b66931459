//! The script format: what the scripted agent does, turn by turn.
//!
//! A script is JSON (documented with a full example in the crate's `README.md`). Steps are
//! internally tagged by `kind` and every object rejects unknown fields, so a typo is an error
//! naming the step (`turns[0].steps[2] (say): unknown field `txt`…`) instead of a silently
//! ignored field.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The default number of characters per streamed delta.
pub const DEFAULT_CHUNK: usize = 16;

/// What the scripted agent does in every turn of a chat.
///
/// Turn `N` (counted from 0) of a chat runs `turns[N]`; once the list is exhausted every turn
/// runs `default`, or, without one, [`TurnScript::echo_reply`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Script {
    /// The turns, in order.
    #[serde(default)]
    pub turns: Vec<TurnScript>,
    /// What every turn after the last scripted one runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<TurnScript>,
}

/// The steps of one turn. The turn ends with `chat/turnComplete` after the last step, unless an
/// `error` step ended it first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TurnScript {
    /// The steps, run one after the other.
    pub steps: Vec<Step>,
}

/// One thing the agent does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Step {
    /// Streams a markdown part.
    Say(Say),
    /// Streams a reasoning part.
    Think(Think),
    /// Calls a tool, optionally asking for permission first.
    Tool(Tool),
    /// Reports token usage for the turn.
    Usage(Usage),
    /// Starts a subagent (a `Task` tool call in this chat) that runs its own steps.
    Subagent(Subagent),
    /// Ends the turn with `chat/error`.
    Error(Fail),
    /// Waits (on tokio's clock).
    Pause(Pause),
    /// Streams a markdown part repeating the user's message.
    Echo(Echo),
    /// Waits for the background subagents this scope started.
    Join(Join),
    /// Asks the user (`chat/inputRequested`) and waits for the answer.
    Ask(Ask),
}

/// `ask`: an input request; the turn waits for the client's `chat/inputCompleted`, then says
/// what came back (`Answered: …`, `Declined`, `Cancelled`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Ask {
    /// The request's message.
    pub message: String,
    /// The questions, as AHP's `ChatInputQuestion`s (none: a plain confirmation of the
    /// message).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub questions: Vec<agenthost_protocol::ahp_types::state::ChatInputQuestion>,
}

impl Step {
    /// The step's `kind` as written in a script.
    pub fn kind(&self) -> &'static str {
        match self {
            Step::Say(_) => "say",
            Step::Think(_) => "think",
            Step::Tool(_) => "tool",
            Step::Usage(_) => "usage",
            Step::Subagent(_) => "subagent",
            Step::Error(_) => "error",
            Step::Pause(_) => "pause",
            Step::Echo(_) => "echo",
            Step::Join(_) => "join",
            Step::Ask(_) => "ask",
        }
    }
}

/// `say`: streamed markdown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Say {
    /// The markdown text.
    pub text: String,
    /// Characters per `chat/delta` (at least 1).
    #[serde(default = "default_chunk", skip_serializing_if = "is_default_chunk")]
    pub chunk: usize,
    /// Milliseconds to wait between two deltas (0: no wait).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
}

/// `think`: streamed reasoning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Think {
    /// The reasoning text.
    pub text: String,
    /// Characters per `chat/reasoning` (at least 1).
    #[serde(default = "default_chunk", skip_serializing_if = "is_default_chunk")]
    pub chunk: usize,
    /// Milliseconds to wait between two deltas (0: no wait).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
}

/// `echo`: streamed markdown repeating the turn's message text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Echo {
    /// Text put before the message text.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prefix: String,
    /// Characters per `chat/delta` (at least 1).
    #[serde(default = "default_chunk", skip_serializing_if = "is_default_chunk")]
    pub chunk: usize,
    /// Milliseconds to wait between two deltas (0: no wait).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
    /// Also repeat the host's instructions for the turn, after the text: a blank line, then
    /// `Instructions:` and one `- <instruction>` line each (nothing when there are none).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub instructions: bool,
}

/// `tool`: a tool call with an optional effect on the working directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Tool {
    /// The internal tool name (`toolName`).
    pub name: String,
    /// The human-readable name (`displayName`); defaults to `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// What the call will do (`invocationMessage`); defaults from the effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invocation: Option<String>,
    /// The tool input (`toolInput`: a string as is, anything else as JSON text); defaults from
    /// the effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// Whether the call waits for permission (a pending confirmation) before running.
    #[serde(default, skip_serializing_if = "is_false")]
    pub confirm: bool,
    /// The permission kind auto-approve rules see (`shell`, `write`, `read`, `url`, `mcp` or any
    /// other name); defaults from the effect (`write`, `read`, or the tool name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission: Option<String>,
    /// The call is to a tool of the client with this id (contributor `{kind: client}`): the
    /// client runs it and completes it (`chat/toolCallComplete`), and the script waits for
    /// that result (or the host's failure for a client that went away). Has no `effect`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// What the call does when it runs.
    #[serde(default, skip_serializing_if = "Effect::is_none")]
    pub effect: Effect,
    /// The result text (`content`); defaults from the effect (a `readFile` returns the file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// The completed call's summary (`pastTenseMessage`); defaults from the effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub past_tense: Option<String>,
}

/// What a tool call does to the working directory.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Effect {
    /// Nothing.
    #[default]
    None,
    /// Writes `content` to `path`, creating parent directories.
    WriteFile(WriteFile),
    /// Reads `path`; its text becomes the result.
    ReadFile(ReadFile),
    /// Appends `content` to `path`, creating the file and its parent directories.
    AppendFile(AppendFile),
}

impl Effect {
    /// Whether this is [`Effect::None`].
    pub fn is_none(&self) -> bool {
        matches!(self, Effect::None)
    }

    /// The path the effect touches, as written in the script.
    pub fn path(&self) -> Option<&str> {
        match self {
            Effect::None => None,
            Effect::WriteFile(write) => Some(&write.path),
            Effect::ReadFile(read) => Some(&read.path),
            Effect::AppendFile(append) => Some(&append.path),
        }
    }
}

/// The `writeFile` effect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WriteFile {
    /// Relative to the working directory; absolute paths and `..` escapes fail the call.
    pub path: String,
    /// The file's new text.
    pub content: String,
}

/// The `readFile` effect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadFile {
    /// Relative to the working directory; absolute paths and `..` escapes fail the call.
    pub path: String,
}

/// The `appendFile` effect: an append-only log, so a test can count how often a call ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AppendFile {
    /// Relative to the working directory; absolute paths and `..` escapes fail the call.
    pub path: String,
    /// The text appended.
    pub content: String,
}

/// `usage`: a `chat/usage` report of the turn's usage so far (each one replaces the turn's
/// usage, so a later step carries the running totals), in the host's token meanings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Usage {
    /// Input tokens, cached ones included.
    pub input: i64,
    /// Output tokens.
    pub output: i64,
    /// The part of `input` read from the prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<i64>,
    /// The part of `input` written to the prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<i64>,
    /// The model name reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The limits of the agent's model, reported along (as the real agents report theirs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<Limits>,
}

/// A model's token limits, as a `usage` step reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Limits {
    /// The most tokens a prompt may have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_prompt_tokens: Option<u64>,
    /// The context window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_context_window: Option<u64>,
    /// The most tokens of one response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
}

/// `subagent`: a `Task` tool call whose subagent runs `steps` in its own chat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Subagent {
    /// The agent's internal name.
    pub agent: String,
    /// The agent's human-readable name; defaults to `agent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// What the subagent was asked to do, in short.
    pub description: String,
    /// The full prompt it received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The text the spawning tool call returns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// What the subagent does (any steps, including nested subagents).
    pub steps: Vec<Step>,
    /// Whether the subagent runs in the background: the scope that started it goes on at once
    /// (several background subagents run at the same time), its turn waits for it before
    /// `chat/turnComplete`, and an `error` step of the turn leaves it running.
    #[serde(default, skip_serializing_if = "is_false")]
    pub background: bool,
}

/// `join`: waits for the background subagents the scope started so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Join {
    /// What to wait for.
    #[serde(default, skip_serializing_if = "JoinUntil::is_done")]
    pub until: JoinUntil,
}

/// What a [`Join`] waits for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum JoinUntil {
    /// Every one has finished.
    #[default]
    Done,
    /// Every one is waiting for a permission answer (its confirmation was sent) or has finished.
    Waiting,
}

impl JoinUntil {
    fn is_done(&self) -> bool {
        matches!(self, JoinUntil::Done)
    }
}

/// `error`: ends the turn with `chat/error`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Fail {
    /// The message shown in the chat.
    pub message: String,
    /// The error type; defaults to [`SCRIPTED_ERROR`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// Whether the turn can be resumed; defaults to `false`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub resumable: bool,
}

/// The error type of an `error` step that names none.
pub const SCRIPTED_ERROR: &str = "scriptedError";

/// `pause`: waits on tokio's clock (so paused-clock tests do not really wait).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Pause {
    /// Milliseconds.
    pub ms: u64,
}

fn default_chunk() -> usize {
    DEFAULT_CHUNK
}

fn is_default_chunk(chunk: &usize) -> bool {
    *chunk == DEFAULT_CHUNK
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// Why a script could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScriptError {
    /// The file could not be read.
    #[error("cannot read the script {}: {message}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        message: String,
    },
    /// The text is not JSON.
    #[error("the script is not valid JSON (line {line}, column {column}): {message}")]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser expected.
        message: String,
    },
    /// The JSON does not describe a script.
    #[error("invalid script at {location}: {message}")]
    Invalid {
        /// Where: `script`, `turns[1]`, `turns[0].steps[2] (say)`, `default.steps[0].steps[1] (tool)`.
        location: String,
        /// What is wrong.
        message: String,
    },
}

fn invalid(location: impl Into<String>, message: impl Into<String>) -> ScriptError {
    ScriptError::Invalid {
        location: location.into(),
        message: message.into(),
    }
}

impl Script {
    /// Parses a script from JSON text.
    pub fn from_json(text: &str) -> Result<Self, ScriptError> {
        let value: Value = serde_json::from_str(text).map_err(|error| ScriptError::Syntax {
            line: error.line(),
            column: error.column(),
            message: error.to_string(),
        })?;
        Self::from_value(value)
    }

    /// Builds a script from an already parsed JSON value.
    pub fn from_value(value: Value) -> Result<Self, ScriptError> {
        let Value::Object(mut fields) = value else {
            return Err(invalid(
                "script",
                "expected an object with `turns` and optionally `default`",
            ));
        };
        if let Some(unknown) = fields
            .keys()
            .find(|key| *key != "turns" && *key != "default")
        {
            return Err(invalid(
                "script",
                format!("unknown field `{unknown}`, expected `turns` or `default`"),
            ));
        }
        let turns = match fields.remove("turns") {
            None => Vec::new(),
            Some(Value::Array(turns)) => turns
                .into_iter()
                .enumerate()
                .map(|(index, turn)| parse_turn(turn, &format!("turns[{index}]")))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(invalid("turns", "expected an array of turns")),
        };
        let default = match fields.remove("default") {
            None | Some(Value::Null) => None,
            Some(turn) => Some(parse_turn(turn, "default")?),
        };
        Ok(Self { turns, default })
    }

    /// Reads and parses a script file.
    ///
    /// Blocking: meant for start-up (the CLI reading `--script`), not for a running host.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ScriptError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|error| ScriptError::Read {
            path: path.to_owned(),
            message: error.to_string(),
        })?;
        Self::from_json(&text)
    }

    /// The script as JSON (the format [`Script::from_json`] reads).
    pub fn to_json_pretty(&self) -> String {
        // Serializing plain data with string keys cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// What turn `index` (counted from 0) of a chat runs.
    pub fn turn(&self, index: u64) -> Cow<'_, TurnScript> {
        let scripted = usize::try_from(index)
            .ok()
            .and_then(|index| self.turns.get(index));
        match scripted.or(self.default.as_ref()) {
            Some(turn) => Cow::Borrowed(turn),
            None => Cow::Owned(TurnScript::echo_reply()),
        }
    }

    /// The built-in demo script used by `agent-host demo` (see the README).
    pub fn builtin() -> Self {
        crate::builtin::script()
    }
}

impl TurnScript {
    /// What a turn runs when the script has nothing for it: a reply repeating the message.
    pub fn echo_reply() -> Self {
        Self {
            steps: vec![Step::Echo(Echo {
                prefix: "You said: ".into(),
                ..Echo::default()
            })],
        }
    }
}

impl Default for Say {
    fn default() -> Self {
        Self {
            text: String::new(),
            chunk: DEFAULT_CHUNK,
            delay_ms: 0,
        }
    }
}

impl Default for Echo {
    fn default() -> Self {
        Self {
            prefix: String::new(),
            chunk: DEFAULT_CHUNK,
            delay_ms: 0,
            instructions: false,
        }
    }
}

impl Default for Think {
    fn default() -> Self {
        Self {
            text: String::new(),
            chunk: DEFAULT_CHUNK,
            delay_ms: 0,
        }
    }
}

fn parse_turn(value: Value, location: &str) -> Result<TurnScript, ScriptError> {
    let Value::Object(mut fields) = value else {
        return Err(invalid(location, "expected an object with `steps`"));
    };
    if let Some(unknown) = fields.keys().find(|key| *key != "steps") {
        return Err(invalid(
            location,
            format!("unknown field `{unknown}`, expected `steps`"),
        ));
    }
    match fields.remove("steps") {
        Some(Value::Array(steps)) => Ok(TurnScript {
            steps: parse_steps(steps, location)?,
        }),
        Some(_) => Err(invalid(location, "`steps` must be an array of steps")),
        None => Err(invalid(location, "missing field `steps`")),
    }
}

fn parse_steps(values: Vec<Value>, location: &str) -> Result<Vec<Step>, ScriptError> {
    values
        .into_iter()
        .enumerate()
        .map(|(index, value)| parse_step(value, &format!("{location}.steps[{index}]")))
        .collect()
}

/// Parses one step; a subagent's steps are parsed one by one so an error names the inner step.
fn parse_step(mut value: Value, location: &str) -> Result<Step, ScriptError> {
    let kind = value.get("kind").and_then(Value::as_str).map(str::to_owned);
    let here = match &kind {
        Some(kind) => format!("{location} ({kind})"),
        None => location.to_owned(),
    };
    if !value.is_object() {
        return Err(invalid(here, "expected an object with a `kind`"));
    }
    if kind.as_deref() == Some("subagent") {
        let inner = match value.get_mut("steps").map(Value::take) {
            Some(Value::Array(inner)) => parse_steps(inner, location)?,
            Some(_) => return Err(invalid(here, "`steps` must be an array of steps")),
            None => return Err(invalid(here, "missing field `steps`")),
        };
        if let Some(fields) = value.as_object_mut() {
            fields.insert("steps".into(), Value::Array(Vec::new()));
        }
        let mut step = decode_step(value, &here)?;
        if let Step::Subagent(subagent) = &mut step {
            subagent.steps = inner;
        }
        return Ok(step);
    }
    decode_step(value, &here)
}

fn decode_step(value: Value, here: &str) -> Result<Step, ScriptError> {
    let step: Step =
        serde_json::from_value(value).map_err(|error| invalid(here, error.to_string()))?;
    check(&step).map_err(|message| invalid(here, message))?;
    Ok(step)
}

/// The rules serde cannot express.
fn check(step: &Step) -> Result<(), String> {
    let chunk = match step {
        Step::Say(say) => Some(say.chunk),
        Step::Think(think) => Some(think.chunk),
        Step::Echo(echo) => Some(echo.chunk),
        _ => None,
    };
    if chunk == Some(0) {
        return Err("`chunk` must be at least 1".into());
    }
    match step {
        Step::Tool(tool) if tool.name.trim().is_empty() => Err("`name` must not be empty".into()),
        Step::Tool(tool)
            if tool
                .effect
                .path()
                .is_some_and(|path| path.trim().is_empty()) =>
        {
            Err("the effect's `path` must not be empty".into())
        }
        Step::Tool(tool) if tool.client.as_ref().is_some_and(|c| c.trim().is_empty()) => {
            Err("`client` must not be empty".into())
        }
        Step::Tool(tool) if tool.client.is_some() && !tool.effect.is_none() => {
            Err("a client tool (`client`) has no `effect`: the client runs it".into())
        }
        Step::Subagent(subagent) if subagent.agent.trim().is_empty() => {
            Err("`agent` must not be empty".into())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
#[path = "script_tests.rs"]
mod tests;
