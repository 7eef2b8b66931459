//! [`HostConnection`]: one initialized connection to a host.

use agenthost_protocol::ahp_types::ROOT_RESOURCE_URI;
use agenthost_protocol::ahp_types::state::{MessageAttachment, Snapshot, SnapshotState};
use agenthost_protocol::commands::{CreateSessionParams, InitializeResult, ListSessionsResult};
use agenthost_protocol::{ChatUri, SessionUri, StateAction};
use ahp::{Client, ClientConfig, SessionSubscription};
use serde_json::json;

use crate::view::ChatView;

/// What can go wrong talking to a host.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The WebSocket could not be opened (wrong URL, host not running, wrong token → HTTP 403).
    #[error("cannot connect to {url}: {message}")]
    Connect {
        /// The URL tried (its token elided).
        url: String,
        /// What the transport said.
        message: String,
    },
    /// The host answered a request with an error, or the connection broke.
    #[error("{0}")]
    Protocol(#[from] ahp::ClientError),
    /// The host sent something this client does not understand.
    #[error("unexpected answer from the host: {0}")]
    Unexpected(String),
    /// A URI given to the client is invalid.
    #[error(transparent)]
    Uri(#[from] agenthost_protocol::UriError),
    /// The host refused a dispatched action (its `rejectionReason`).
    #[error("the host refused {action}: {reason}")]
    Refused {
        /// The action's type.
        action: String,
        /// The host's reason.
        reason: String,
    },
    /// No echo of a dispatched action came back in time.
    #[error("the host did not confirm {action} within {seconds}s")]
    Unconfirmed {
        /// The action's type.
        action: String,
        /// How long was waited.
        seconds: u64,
    },
}

/// An initialized connection.
#[derive(Clone)]
pub struct HostConnection {
    client: Client,
    client_id: String,
    initialized: InitializeResult,
}

impl std::fmt::Debug for HostConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostConnection")
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

fn without_token(url: &str) -> String {
    match url.split_once("tkn=") {
        Some((head, _)) => format!("{head}tkn=…"),
        None => url.to_owned(),
    }
}

impl HostConnection {
    /// Connects to the URL `agent-host serve` printed (token included) and initializes with
    /// protocol 1.0.0 as `client_id`.
    pub async fn connect(url: &str, client_id: &str) -> Result<Self, ClientError> {
        let transport = ahp_ws::WebSocketTransport::connect(url)
            .await
            .map_err(|e| ClientError::Connect {
                url: without_token(url),
                message: e.to_string(),
            })?;
        let config = ClientConfig {
            subscription_buffer: 65_536,
            ..ClientConfig::default()
        };
        let client = Client::connect(transport, config).await?;
        let initialized = client
            .initialize(
                client_id.to_owned(),
                vec!["1.0.0".to_owned()],
                vec![ROOT_RESOURCE_URI.to_owned()],
            )
            .await?;
        Ok(Self {
            client,
            client_id: client_id.to_owned(),
            initialized,
        })
    }

    /// The underlying `ahp` client, for everything this crate does not wrap.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// What `initialize` returned (agents in the root snapshot, default directory, …).
    pub fn initialized(&self) -> &InitializeResult {
        &self.initialized
    }

    /// This connection's client id.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// Creates a session (`<provider>:/<id>`, VS Code's form) in `working_directory` (a
    /// `file://` URI; the host's default when `None`) and returns its default chat's URI.
    pub async fn create_session(
        &self,
        provider: &str,
        id: &str,
        working_directory: Option<String>,
    ) -> Result<(SessionUri, ChatUri), ClientError> {
        let session = SessionUri::with_provider(provider, agenthost_protocol::SafeId::new(id)?)?;
        let params = CreateSessionParams {
            channel: session.to_string(),
            meta: None,
            provider: Some(provider.to_owned()),
            working_directories: working_directory.map(|d| vec![d]),
            config: None,
            active_client: None,
            progress_token: None,
        };
        let _: serde_json::Value = self.client.request("createSession", params).await?;
        let chat = ChatUri::default_for(&session);
        Ok((session, chat))
    }

    /// Subscribes to a chat and returns a view seeded from its snapshot, plus the live stream.
    pub async fn open_chat(
        &self,
        chat: &ChatUri,
    ) -> Result<(ChatView, SessionSubscription), ClientError> {
        let (result, subscription) = self.client.subscribe(chat.to_string()).await?;
        match result.snapshot {
            Some(Snapshot {
                state: SnapshotState::Chat(state),
                from_seq,
                ..
            }) => Ok((ChatView::new(*state, from_seq), subscription)),
            other => Err(ClientError::Unexpected(format!(
                "subscribing to {chat} returned {other:?}"
            ))),
        }
    }

    /// Starts a turn with a user message.
    pub async fn start_turn(
        &self,
        chat: &ChatUri,
        turn_id: &str,
        text: &str,
    ) -> Result<(), ClientError> {
        self.start_turn_with_model(chat, turn_id, text, None).await
    }

    /// Starts a turn with a user message for the model `model` (`None`: the session's).
    pub async fn start_turn_with_model(
        &self,
        chat: &ChatUri,
        turn_id: &str,
        text: &str,
        model: Option<&str>,
    ) -> Result<(), ClientError> {
        let mut message = json!({ "text": text, "origin": { "kind": "user" } });
        if let Some(model) = model {
            message["model"] = json!({ "id": model });
        }
        self.start_turn_message(chat, turn_id, message).await
    }

    /// Starts a turn with a user message and attachments for the agent (images, files).
    pub async fn start_turn_with_attachments(
        &self,
        chat: &ChatUri,
        turn_id: &str,
        text: &str,
        attachments: &[MessageAttachment],
    ) -> Result<(), ClientError> {
        let mut message = json!({ "text": text, "origin": { "kind": "user" } });
        if !attachments.is_empty() {
            message["attachments"] = serde_json::to_value(attachments)
                .map_err(|e| ClientError::Unexpected(e.to_string()))?;
        }
        self.start_turn_message(chat, turn_id, message).await
    }

    async fn start_turn_message(
        &self,
        chat: &ChatUri,
        turn_id: &str,
        message: serde_json::Value,
    ) -> Result<(), ClientError> {
        let action: StateAction = serde_json::from_value(json!({
            "type": "chat/turnStarted",
            "turnId": turn_id,
            "startedAt": format!("{:.3}", jiff::Timestamp::now()),
            "message": message
        }))
        .map_err(|e| ClientError::Unexpected(e.to_string()))?;
        self.client.dispatch(chat.to_string(), action).await?;
        Ok(())
    }

    /// Answers a tool call waiting for confirmation.
    pub async fn confirm_tool(
        &self,
        chat: &ChatUri,
        turn_id: &str,
        tool_call_id: &str,
        approved: bool,
    ) -> Result<(), ClientError> {
        let answer = if approved {
            json!({ "approved": true, "confirmed": "user-action" })
        } else {
            json!({ "approved": false, "reason": "denied" })
        };
        let mut action = json!({
            "type": "chat/toolCallConfirmed", "turnId": turn_id, "toolCallId": tool_call_id
        });
        if let (Some(target), Some(fields)) = (action.as_object_mut(), answer.as_object()) {
            target.extend(fields.clone());
        }
        let action: StateAction =
            serde_json::from_value(action).map_err(|e| ClientError::Unexpected(e.to_string()))?;
        self.client.dispatch(chat.to_string(), action).await?;
        Ok(())
    }

    /// Queues a user message `text` under `id` in the chat's queue (`chat/pendingMessageSet`,
    /// kind `queued`): the host starts it as a turn once the chat is free.
    pub async fn queue_message(
        &self,
        chat: &ChatUri,
        id: &str,
        text: &str,
    ) -> Result<(), ClientError> {
        let action: StateAction = serde_json::from_value(json!({
            "type": "chat/pendingMessageSet", "kind": "queued", "id": id,
            "message": { "text": text, "origin": { "kind": "user" } }
        }))
        .map_err(|e| ClientError::Unexpected(e.to_string()))?;
        self.client.dispatch(chat.to_string(), action).await?;
        Ok(())
    }

    /// Cancels a running turn (`chat/turnCancelled`, with the time since `started`).
    pub async fn cancel_turn(
        &self,
        chat: &ChatUri,
        turn_id: &str,
        duration_ms: i64,
    ) -> Result<(), ClientError> {
        let action: StateAction = serde_json::from_value(json!({
            "type": "chat/turnCancelled", "turnId": turn_id, "duration": duration_ms
        }))
        .map_err(|e| ClientError::Unexpected(e.to_string()))?;
        self.client.dispatch(chat.to_string(), action).await?;
        Ok(())
    }

    /// Dispatches `action` on `channel` and waits for the host's verdict, its echo of the action:
    /// `Ok` when it applied it, [`ClientError::Refused`] with its `rejectionReason`, or
    /// [`ClientError::Unconfirmed`] when no echo came within `wait`. This connection must be
    /// subscribed to `channel` (an echo goes to the channel's subscribers).
    pub async fn dispatch_confirmed(
        &self,
        channel: &str,
        action: StateAction,
        wait: std::time::Duration,
    ) -> Result<(), ClientError> {
        let kind = serde_json::to_value(&action)
            .ok()
            .and_then(|value| value["type"].as_str().map(str::to_owned))
            .unwrap_or_else(|| "the action".to_owned());
        let mut events = self.client.events();
        let handle = self.client.dispatch(channel.to_owned(), action).await?;
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let event = match tokio::time::timeout_at(deadline, events.recv()).await {
                Ok(Some(event)) => event,
                Ok(None) => {
                    return Err(ClientError::Unexpected(
                        "the connection closed before the host confirmed".to_owned(),
                    ));
                }
                Err(_) => {
                    return Err(ClientError::Unconfirmed {
                        action: kind,
                        seconds: wait.as_secs(),
                    });
                }
            };
            let ahp::SubscriptionEvent::Action(envelope) = event.event else {
                continue;
            };
            let ours = envelope.origin.as_ref().is_some_and(|origin| {
                origin.client_id == self.client_id && origin.client_seq == handle.client_seq
            });
            if !ours {
                continue;
            }
            return match envelope.rejection_reason {
                Some(reason) => Err(ClientError::Refused {
                    action: kind,
                    reason,
                }),
                None => Ok(()),
            };
        }
    }

    /// Every session of the host.
    pub async fn list_sessions(&self) -> Result<ListSessionsResult, ClientError> {
        Ok(self
            .client
            .request("listSessions", json!({ "channel": ROOT_RESOURCE_URI }))
            .await?)
    }

    /// Closes the connection.
    pub async fn close(&self) {
        self.client.shutdown().await;
    }
}
