//! The request log: one [`RequestRecord`] per request, kept in memory and optionally appended
//! to a JSON-lines file in the reference mock's log format.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a request was, by its route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RequestKind {
    /// `POST …/messages`: Anthropic Messages.
    #[serde(rename = "anthropic.messages")]
    AnthropicMessages,
    /// `POST …/messages/count_tokens`.
    #[serde(rename = "anthropic.count_tokens")]
    AnthropicCountTokens,
    /// `POST …/responses`: OpenAI Responses.
    #[serde(rename = "openai.responses")]
    OpenAiResponses,
    /// `POST …/chat/completions`: OpenAI Chat Completions.
    #[serde(rename = "openai.chat")]
    OpenAiChat,
    /// `GET …/models`.
    #[serde(rename = "models")]
    Models,
    /// `HEAD` anything, or `GET /`: a reachability probe.
    #[serde(rename = "probe")]
    Probe,
    /// A model call answered with the configured failure status
    /// ([`MockModelConfig::fail_status`](crate::MockModelConfig::fail_status)).
    #[serde(rename = "scripted_error")]
    ScriptedError,
    /// No route: answered 404.
    #[serde(rename = "unhandled")]
    Unknown,
}

/// One request the mock answered (the readiness probe `GET /__mock_ready` is not recorded).
///
/// Serialises to one line of the reference mock's log (`seq`, `ts_ms`, `method`, `path`,
/// `query`, `headers`, `kind`, `summary`, `decision`, `sse_events`) plus `stream`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// 1 for the first request, counting in the order requests were answered.
    pub seq: u64,
    /// When the request arrived, in milliseconds since the Unix epoch.
    pub ts_ms: u64,
    /// The HTTP method (`POST`, `GET`, …).
    pub method: String,
    /// The path without the query (`/v1/messages`).
    pub path: String,
    /// The query string without `?` (Claude Code sends `beta=true`), when not empty.
    pub query: Option<String>,
    /// The request headers worth seeing (user agent, API versions and betas, session ids, …),
    /// names in lower case; `authorization`, `x-api-key` and `api-key` are replaced by
    /// `<redacted len=N>`.
    pub headers: BTreeMap<String, String>,
    /// What the request was.
    pub kind: RequestKind,
    /// What the mock answered: `tool_use:NAME` (Anthropic), `tool_call:NAME` (Responses, Chat),
    /// `final_text`, `side_text`, `http_N` (scripted failure), `invalid_json` (a model call
    /// whose body is not a JSON object, answered 400), or for other routes `count_tokens`,
    /// `models`, `probe`, `http_404`.
    pub decision: String,
    /// Whether the request asked for a streamed answer (`"stream": true`); it got one unless
    /// it was answered with an error.
    pub stream: bool,
    /// A compact view of the body: model, tool names, messages with their texts cut to 120
    /// characters (tool results to 200), other top-level keys. `null` for routes without one.
    pub summary: Value,
    /// How many server-sent events the answer has (0 for a JSON answer).
    pub sse_events: usize,
}

impl RequestRecord {
    /// Whether this is a model call of the agent's conversation: it offers tools and is not
    /// one of the requests agents make on their own (a session title, a summary), which offer
    /// none and are answered `side_text`.
    pub fn is_conversation_call(&self) -> bool {
        self.decision != "side_text"
            && self.summary["tools"]
                .as_array()
                .is_some_and(|tools| !tools.is_empty())
    }
}

/// The shared log of a running mock.
#[derive(Debug)]
pub(crate) struct Recorder {
    records: Mutex<Vec<RequestRecord>>,
    log_path: Option<PathBuf>,
}

impl Recorder {
    pub(crate) fn new(log_path: Option<PathBuf>) -> Recorder {
        Recorder {
            records: Mutex::new(Vec::new()),
            log_path,
        }
    }

    /// Numbers `record` and keeps it; appends it to the log file when there is one.
    pub(crate) fn record(&self, mut record: RequestRecord) {
        let mut records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        record.seq = records.len() as u64 + 1;
        if let Some(path) = &self.log_path {
            // Appended under the lock so the file's order is `seq` order; a line is a few
            // kilobytes, so the write is not worth a blocking-pool round trip.
            if let Err(error) = append_line(path, &record) {
                tracing::warn!(path = %path.display(), %error, "mock model: cannot append to the request log");
            }
        }
        records.push(record);
    }

    pub(crate) fn records(&self) -> Vec<RequestRecord> {
        self.records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

fn append_line(path: &PathBuf, record: &RequestRecord) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(record)?;
    line.push(b'\n');
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(&line)
}

/// Request headers kept in the record, besides every `x-stainless*` and `anthropic*` one.
const KEEP_HEADERS: &[&str] = &[
    "user-agent",
    "content-type",
    "content-encoding",
    "accept",
    "anthropic-version",
    "anthropic-beta",
    "x-app",
    "openai-beta",
    "originator",
    "version",
    "session_id",
    "session-id",
    "x-stainless-lang",
    "x-stainless-package-version",
    "x-stainless-runtime",
    "x-stainless-retry-count",
    "x-stainless-timeout",
    "x-client-request-id",
    "x-request-id",
    "conversation_id",
    "x-initiator",
    "x-interaction-type",
    "copilot-integration-id",
    "x-github-api-version",
    "openai-intent",
    "x-codex-turn-metadata",
    "chatgpt-account-id",
    "x-openai-subagent",
    "x-claude-code-session-id",
    "connection",
    "upgrade",
];

/// Headers that carry credentials: recorded as their length only.
const SECRET_HEADERS: &[&str] = &["authorization", "x-api-key", "api-key"];

/// The headers a record keeps, secrets redacted.
pub(crate) fn selected_headers(headers: &hyper::HeaderMap) -> BTreeMap<String, String> {
    let mut kept = BTreeMap::new();
    for (name, value) in headers {
        let name = name.as_str();
        let value = String::from_utf8_lossy(value.as_bytes());
        if SECRET_HEADERS.contains(&name) {
            kept.insert(
                name.to_owned(),
                format!("<redacted len={}>", value.chars().count()),
            );
        } else if KEEP_HEADERS.contains(&name)
            || name.starts_with("x-stainless")
            || name.starts_with("anthropic")
        {
            kept.insert(name.to_owned(), value.into_owned());
        }
    }
    kept
}
