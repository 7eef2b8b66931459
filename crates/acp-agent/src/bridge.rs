//! The editor's requests, answered with the host's sessions.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agenthost_client::HostConnection;
use agenthost_protocol::ahp_types::state::{
    MessageAttachment, SessionSummary, Snapshot, SnapshotState,
};
use agenthost_protocol::uri::{file_uri_to_path, path_to_file_uri};
use agenthost_protocol::{ChatUri, SessionUri};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use agenthost_provider_acp::wire::Message;

use crate::rpc::{Peer, RpcError, parse_line};
use crate::session::{Follower, OpenSession, PendingPrompt, Shared};

/// The ACP protocol version this agent speaks.
pub const PROTOCOL_VERSION: u64 = 1;

/// How the agent behaves.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// The host provider new sessions use (`claude`, `scripted`, `acp.NAME`, …); `None`: the
    /// first one the host offers.
    pub provider: Option<String>,
    /// The name and version the agent gives in `initialize`.
    pub agent_version: String,
}

/// Where the host is: connected, or why not (every session request is then answered with
/// this message, so the editor shows it).
pub type Host = Result<HostConnection, String>;

/// Serves ACP on `input`/`output` until the editor closes `input`.
pub async fn serve<R, W>(host: Host, options: AgentOptions, input: R, output: W)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(async move {
        let mut output = output;
        while let Some(mut line) = rx.recv().await {
            line.push('\n');
            if output.write_all(line.as_bytes()).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
    });
    let agent = Arc::new(Agent {
        host,
        elicitation: std::sync::atomic::AtomicBool::new(false),
        options,
        peer: Arc::new(Peer::new(tx)),
        sessions: Mutex::new(HashMap::new()),
    });
    let mut lines = BufReader::new(input).split(b'\n');
    loop {
        let bytes = match lines.next_segment().await {
            Ok(Some(bytes)) => bytes,
            Ok(None) => break,
            Err(error) => {
                tracing::warn!(%error, "cannot read from the editor: stopping");
                break;
            }
        };
        // A line that is not UTF-8 is refused like one that is not JSON; the next one is read.
        let parsed = match std::str::from_utf8(&bytes) {
            Ok(line) if line.trim().is_empty() => continue,
            Ok(line) => parse_line(line),
            Err(error) => Err(RpcError::parse_error(format!(
                "the line is not UTF-8: {error}"
            ))),
        };
        match parsed {
            Ok(Message::Request { id, method, params }) => {
                // Requests run on their own task: a running turn never holds up a cancel.
                let agent = Arc::clone(&agent);
                tokio::spawn(async move {
                    match agent.request(&id, &method, params).await {
                        Ok(Some(result)) => agent.peer.respond(&id, result),
                        Ok(None) => {}
                        Err(error) => {
                            tracing::info!(method, %error, "answered the editor with an error");
                            agent.peer.respond_error(&id, &error);
                        }
                    }
                });
            }
            Ok(Message::Notification { method, params }) => {
                let agent = Arc::clone(&agent);
                tokio::spawn(async move { agent.notification(&method, &params).await });
            }
            Ok(Message::Response { id, result }) => agent.peer.answer(&id, result),
            Err(error) => {
                tracing::info!(%error, "a message from the editor was refused");
                agent.peer.respond_error(&Value::Null, &error);
            }
        }
    }
    agent.peer.fail_pending();
    agent.sessions_map().clear();
    drop(agent);
    let _ = writer.await;
}

struct Agent {
    host: Host,
    /// Whether the editor advertised form elicitation in `initialize`.
    elicitation: std::sync::atomic::AtomicBool,
    options: AgentOptions,
    peer: Arc<Peer>,
    sessions: Mutex<HashMap<String, Arc<OpenSession>>>,
}

/// The parameters of `method`, as `T`.
fn params<T: serde::de::DeserializeOwned>(method: &str, params: Value) -> Result<T, RpcError> {
    serde_json::from_value(params)
        .map_err(|e| RpcError::invalid_params(format!("invalid parameters for `{method}`: {e}")))
}

/// A host error as the editor gets it: the host's own message, as invalid parameters when the
/// host said so (a cwd outside its roots), else as an internal error.
fn host_error(error: &agenthost_client::ClientError) -> RpcError {
    use agenthost_client::ClientError;
    use agenthost_client::ahp::ClientError as Ahp;
    match error {
        ClientError::Protocol(Ahp::Rpc(rpc)) if rpc.code == -32602 => {
            RpcError::invalid_params(rpc.message.clone())
        }
        ClientError::Protocol(Ahp::Rpc(rpc)) => {
            RpcError::internal(format!("the agent host refused: {}", rpc.message))
        }
        other => RpcError::internal(format!("the agent host failed: {other}")),
    }
}

impl Agent {
    fn sessions_map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<OpenSession>>> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn host(&self) -> Result<&HostConnection, RpcError> {
        self.host
            .as_ref()
            .map_err(|message| RpcError::internal(message.clone()))
    }

    fn open(&self, session_id: &str) -> Result<Arc<OpenSession>, RpcError> {
        self.sessions_map().get(session_id).cloned().ok_or_else(|| {
            RpcError::not_found(format!(
                "session {session_id} is not open here: load or resume it first"
            ))
        })
    }

    /// Answers one request; `Ok(None)` when the answer comes later (a prompt's, at its turn's
    /// end).
    async fn request(
        &self,
        id: &Value,
        method: &str,
        params_value: Value,
    ) -> Result<Option<Value>, RpcError> {
        use agent_client_protocol::v1::schema;
        match method {
            "initialize" => {
                let _: schema::InitializeRequest = params(method, params_value.clone())?;
                let form = &params_value["clientCapabilities"]["elicitation"]["form"];
                self.elicitation
                    .store(form.is_object(), std::sync::atomic::Ordering::Relaxed);
                Ok(Some(self.initialize()))
            }
            "authenticate" => Ok(Some(json!({}))),
            "session/new" => {
                let request: schema::NewSessionRequest = params(method, params_value)?;
                self.new_session(&request.cwd, &request.mcp_servers)
                    .await
                    .map(Some)
            }
            "session/load" => {
                let request: schema::LoadSessionRequest = params(method, params_value)?;
                ignore_mcp_servers(&request.mcp_servers);
                self.attach(&request.session_id.0, true).await.map(Some)
            }
            "session/resume" => {
                let request: schema::ResumeSessionRequest = params(method, params_value)?;
                self.attach(&request.session_id.0, false).await.map(Some)
            }
            "session/close" => {
                let request: schema::CloseSessionRequest = params(method, params_value)?;
                self.close(&request.session_id.0).await?;
                Ok(Some(json!({})))
            }
            "session/list" => {
                let request: schema::ListSessionsRequest = params(method, params_value)?;
                self.list(request.cwd.as_deref()).await.map(Some)
            }
            "session/prompt" => {
                let request: schema::PromptRequest = params(method, params_value.clone())?;
                self.prompt(id, &request.session_id.0, &params_value["prompt"])
                    .await?;
                Ok(None)
            }
            "session/set_config_option" => {
                let request: schema::SetSessionConfigOptionRequest =
                    params(method, params_value.clone())?;
                let value = &params_value["value"];
                self.set_config(&request.session_id.0, &request.config_id.0, value)
                    .await
                    .map(|fields| Some(json!({ "configOptions": fields["configOptions"] })))
            }
            "session/set_mode" => {
                let request: schema::SetSessionModeRequest = params(method, params_value)?;
                self.set_config(&request.session_id.0, "mode", &json!(request.mode_id.0))
                    .await
                    .map(|_| Some(json!({})))
            }
            other => Err(RpcError::method_not_found(format!(
                "agent-host does not offer the method `{other}`"
            ))),
        }
    }

    async fn notification(&self, method: &str, params_value: &Value) {
        match method {
            "session/cancel" => {
                let Some(session_id) = params_value["sessionId"].as_str() else {
                    tracing::info!("session/cancel without a sessionId: ignored");
                    return;
                };
                if let Err(error) = self.cancel(session_id).await {
                    tracing::info!(%error, session_id, "cannot cancel");
                }
            }
            // The editor withdrawing one of its requests: every request here is answered
            // promptly or is a prompt, which the editor stops with session/cancel.
            "$/cancel_request" => {}
            other => tracing::debug!(method = other, "an unknown notification: ignored"),
        }
    }

    fn initialize(&self) -> Value {
        json!({
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": true,
                "promptCapabilities": { "image": true, "audio": false, "embeddedContext": true },
                "mcpCapabilities": { "http": false, "sse": false },
                "sessionCapabilities": { "list": {}, "resume": {}, "close": {} },
            },
            "agentInfo": {
                "name": "agent-host",
                "title": "agenthost",
                "version": self.options.agent_version,
            },
            "authMethods": [],
        })
    }

    async fn new_session(
        &self,
        cwd: &Path,
        mcp_servers: &[agent_client_protocol::v1::schema::McpServer],
    ) -> Result<Value, RpcError> {
        let host = self.host()?;
        if !cwd.is_absolute() {
            return Err(RpcError::invalid_params(format!(
                "cwd must be an absolute path, not {}",
                cwd.display()
            )));
        }
        ignore_mcp_servers(mcp_servers);
        let directory = path_to_file_uri(cwd)
            .map_err(|e| RpcError::invalid_params(format!("cwd {}: {e}", cwd.display())))?;
        let provider = match &self.options.provider {
            Some(provider) => provider.clone(),
            None => first_provider(host).ok_or_else(|| {
                RpcError::internal("the agent host offers no agent to start a session with")
            })?,
        };
        let (session, chat) = host
            .create_session(&provider, &new_id(), Some(directory))
            .await
            .map_err(|e| match host_error(&e) {
                refused if refused.code == -32602 => RpcError::invalid_params(format!(
                    "{}: open a folder inside them, or add the folder with --root (of `agent-host \
                     acp`, or of the `agent-host serve` it connects to)",
                    refused.message
                )),
                other => other,
            })?;
        let session_id = session.to_string();
        let mut fields = self.follow(host, &session_id, chat, false).await?;
        fields["sessionId"] = json!(session_id);
        Ok(fields)
    }

    /// Opens a stored session (`replay`: its history is sent first); its config options.
    async fn attach(&self, session_id: &str, replay: bool) -> Result<Value, RpcError> {
        let host = self.host()?;
        let session = SessionUri::parse(session_id)
            .map_err(|e| RpcError::invalid_params(format!("sessionId {session_id}: {e}")))?;
        let summary = self
            .summaries()
            .await?
            .into_iter()
            .find(|s| s.resource == session_id)
            .ok_or_else(|| RpcError::not_found(format!("the host has no session {session_id}")))?;
        let chat = match &summary.default_chat {
            Some(chat) => ChatUri::parse(&chat.to_string())
                .map_err(|e| RpcError::internal(format!("the host's chat {chat}: {e}")))?,
            None => ChatUri::default_for(&session),
        };
        self.follow(host, session_id, chat, replay).await
    }

    /// Subscribes to `chat` and starts following it for the editor.
    async fn follow(
        &self,
        host: &HostConnection,
        session_id: &str,
        chat: ChatUri,
        replay: bool,
    ) -> Result<Value, RpcError> {
        // A session opened twice is followed once, by the newest follower.
        let previous = self.sessions_map().remove(session_id);
        drop(previous);
        let cannot = |e: &dyn std::fmt::Display| {
            RpcError::not_found(format!("cannot open session {session_id}: {e}"))
        };
        // Every envelope from now on, across the chats, in the host's order.
        let events = host.client().events();
        let (opened, session_subscription) = host
            .client()
            .subscribe(session_id.to_owned())
            .await
            .map_err(|e| cannot(&e))?;
        let (session, session_seen) = match opened.snapshot {
            Some(Snapshot {
                state: SnapshotState::Session(state),
                from_seq,
                ..
            }) => (*state, from_seq),
            _ => return Err(cannot(&"the host sent no session state")),
        };
        let (view, subscription) = host.open_chat(&chat).await.map_err(|e| cannot(&e))?;
        let fields = crate::config::response_fields(session.config.as_ref());
        let shared = Arc::new(Mutex::new(Shared {
            config: session.config.clone(),
            ..Shared::default()
        }));
        let (subagent_events, subagent_rx) = mpsc::unbounded_channel();
        let mut follower = Follower {
            session_id: session_id.to_owned(),
            chat: chat.clone(),
            view,
            host: host.clone(),
            peer: Arc::clone(&self.peer),
            shared: Arc::clone(&shared),
            progress: None,
            elicitation: self.elicitation.load(std::sync::atomic::Ordering::Relaxed),
            session,
            session_seen,
            subagents: HashMap::new(),
            opening: HashMap::new(),
            subagent_events,
            subagent_tasks: tokio::task::JoinSet::new(),
        };
        if replay {
            follower.replay();
        } else {
            follower.skip_history();
        }
        follower.follow_existing_subagents();
        let task =
            tokio::spawn(follower.run(events, [subscription, session_subscription], subagent_rx));
        self.sessions_map().insert(
            session_id.to_owned(),
            Arc::new(OpenSession { chat, shared, task }),
        );
        Ok(fields)
    }

    /// `session/set_config_option` (and `session/set_mode`, the same for `mode`): checked
    /// against what the session offers, sent as `session/configChanged`; answers with the
    /// options as they now are.
    async fn set_config(
        &self,
        session_id: &str,
        id: &str,
        value: &Value,
    ) -> Result<Value, RpcError> {
        let host = self.host()?;
        let open = self.open(session_id)?;
        let mut config = open.lock().config.clone();
        let value = crate::config::value_for(config.as_ref(), id, value)?;
        let mut changed = serde_json::Map::new();
        changed.insert(id.to_owned(), value.clone());
        let action: agenthost_protocol::StateAction =
            serde_json::from_value(json!({ "type": "session/configChanged", "config": changed }))
                .map_err(|e| RpcError::internal(format!("cannot build the config change: {e}")))?;
        host.client()
            .dispatch(session_id.to_owned(), action)
            .await
            .map_err(|e| host_error(&agenthost_client::ClientError::from(e)))?;
        if let Some(config) = config.as_mut() {
            config.values.insert(id.to_owned(), value);
        }
        Ok(crate::config::response_fields(config.as_ref()))
    }

    async fn close(&self, session_id: &str) -> Result<(), RpcError> {
        let open = self.sessions_map().remove(session_id);
        let Some(open) = open else {
            return Err(RpcError::not_found(format!(
                "session {session_id} is not open here"
            )));
        };
        let ours = open.lock().prompt.is_some();
        if ours {
            self.cancel_open(&open).await?;
        }
        let prompt = open.lock().prompt.take();
        if let Some(prompt) = prompt {
            self.peer
                .respond(&prompt.request_id, json!({ "stopReason": "cancelled" }));
        }
        if let Ok(host) = self.host() {
            let _ = host.client().unsubscribe(open.chat.to_string()).await;
        }
        Ok(())
    }

    async fn summaries(&self) -> Result<Vec<SessionSummary>, RpcError> {
        let host = self.host()?;
        Ok(host
            .list_sessions()
            .await
            .map_err(|e| host_error(&e))?
            .items)
    }

    async fn list(&self, cwd: Option<&Path>) -> Result<Value, RpcError> {
        let mut summaries = self.summaries().await?;
        summaries.sort_by(|a, b| b.modified_at.cmp(&a.modified_at));
        let sessions: Vec<Value> = summaries
            .iter()
            .filter_map(|summary| {
                let directory = summary_cwd(summary)?;
                if cwd.is_some_and(|cwd| cwd != directory) {
                    return None;
                }
                Some(json!({
                    "sessionId": summary.resource.to_string(),
                    "cwd": directory,
                    "title": summary.title,
                    "updatedAt": summary.modified_at,
                }))
            })
            .collect();
        Ok(json!({ "sessions": sessions }))
    }

    async fn prompt(&self, id: &Value, session_id: &str, blocks: &Value) -> Result<(), RpcError> {
        let host = self.host()?;
        let open = self.open(session_id)?;
        let (text, attachments) = prompt_message(blocks)?;
        let turn_id = format!("turn-{}", new_id());
        {
            let mut shared = open.lock();
            if shared.prompt.is_some() || shared.running.is_some() {
                return Err(RpcError::invalid_request(
                    "a turn is already running in this session: wait for it or cancel it",
                ));
            }
            shared.prompt = Some(PendingPrompt {
                turn_id: turn_id.clone(),
                request_id: id.clone(),
            });
            shared.running = Some((turn_id.clone(), std::time::Instant::now()));
        }
        if let Err(error) = host
            .start_turn_with_attachments(&open.chat, &turn_id, &text, &attachments)
            .await
        {
            let mut shared = open.lock();
            shared.prompt = None;
            shared.running = None;
            return Err(host_error(&error));
        }
        Ok(())
    }

    async fn cancel(&self, session_id: &str) -> Result<(), RpcError> {
        let open = self.open(session_id)?;
        self.cancel_open(&open).await
    }

    async fn cancel_open(&self, open: &OpenSession) -> Result<(), RpcError> {
        let host = self.host()?;
        let running = open.lock().running.clone();
        let Some((turn_id, started)) = running else {
            return Ok(());
        };
        let duration = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
        host.cancel_turn(&open.chat, &turn_id, duration)
            .await
            .map_err(|e| host_error(&e))
    }
}

/// The first agent the host offers (in the root state `initialize` returned).
fn first_provider(host: &HostConnection) -> Option<String> {
    host.initialized()
        .snapshots
        .iter()
        .find_map(|snapshot| match &snapshot.state {
            SnapshotState::Root(root) => root.agents.first().map(|a| a.provider.clone()),
            _ => None,
        })
}

/// The session's working directory as a path.
fn summary_cwd(summary: &SessionSummary) -> Option<PathBuf> {
    let first = summary.working_directories.as_ref()?.first()?;
    file_uri_to_path(&first.to_string()).ok()
}

/// MCP servers the editor offers: the host's providers take theirs from their own
/// configuration, so these are logged and left.
fn ignore_mcp_servers(servers: &[agent_client_protocol::v1::schema::McpServer]) {
    for server in servers {
        let name = serde_json::to_value(server)
            .ok()
            .and_then(|v| v["name"].as_str().map(str::to_owned))
            .unwrap_or_default();
        tracing::info!(
            server = name,
            "ignoring the editor's MCP server: agent-host's agents use the MCP servers of their own configuration"
        );
    }
}

/// A prompt's content blocks as the turn's message: its text (resource links as Markdown links,
/// embedded text resources inlined) and its images as attachments.
fn prompt_message(blocks: &Value) -> Result<(String, Vec<MessageAttachment>), RpcError> {
    let Some(blocks) = blocks.as_array() else {
        return Err(RpcError::invalid_params(
            "prompt must be an array of content blocks",
        ));
    };
    let mut text = String::new();
    let mut attachments = Vec::new();
    for block in blocks {
        let piece = match block["type"].as_str() {
            Some("text") => block["text"].as_str().unwrap_or_default().to_owned(),
            Some("resource_link") => {
                let uri = block["uri"].as_str().unwrap_or_default();
                let name = block["name"].as_str().unwrap_or(uri);
                format!("[{name}]({uri})")
            }
            Some("resource") => {
                let resource = &block["resource"];
                let uri = resource["uri"].as_str().unwrap_or_default();
                let Some(body) = resource["text"].as_str() else {
                    return Err(RpcError::invalid_params(format!(
                        "the embedded resource {uri} is binary: agent-host takes text resources only"
                    )));
                };
                format!("{uri}:\n```\n{body}\n```")
            }
            Some("image") => {
                attachments.push(image(block)?);
                continue;
            }
            Some(other) => {
                return Err(RpcError::invalid_params(format!(
                    "agent-host does not take `{other}` content in a prompt (see promptCapabilities)"
                )));
            }
            None => return Err(RpcError::invalid_params("a content block without a type")),
        };
        if !text.is_empty() && !piece.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&piece);
    }
    if text.trim().is_empty() && attachments.is_empty() {
        return Err(RpcError::invalid_params("the prompt is empty"));
    }
    Ok((text, attachments))
}

/// An `image` block as an embedded attachment (base64 data and its MIME type), checked.
fn image(block: &Value) -> Result<MessageAttachment, RpcError> {
    use base64::Engine as _;
    let (Some(data), Some(mime_type)) = (block["data"].as_str(), block["mimeType"].as_str()) else {
        return Err(RpcError::invalid_params(
            "an image block needs `data` (base64) and `mimeType`",
        ));
    };
    if !mime_type.starts_with("image/") {
        return Err(RpcError::invalid_params(format!(
            "an image block's mimeType must be image/…, not {mime_type}"
        )));
    }
    if base64::engine::general_purpose::STANDARD
        .decode(data)
        .is_err()
    {
        return Err(RpcError::invalid_params(
            "an image block's data is not base64",
        ));
    }
    let label = block["uri"]
        .as_str()
        .and_then(|uri| uri.rsplit('/').next())
        .filter(|name| !name.is_empty())
        .unwrap_or("image");
    serde_json::from_value(json!({
        "type": "embeddedResource",
        "label": label,
        "data": data,
        "contentType": mime_type,
    }))
    .map_err(|e| RpcError::internal(format!("cannot attach the image: {e}")))
}

#[cfg(test)]
#[path = "bridge_tests.rs"]
mod tests;

/// A fresh id: time-based, unique enough per machine.
fn new_id() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!("acp-{:x}-{:x}", now.as_secs(), now.subsec_nanos())
}
