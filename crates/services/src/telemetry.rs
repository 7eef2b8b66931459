//! [`TelemetryReporter`]: host telemetry events.

/// How a user message reached the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageSource {
    /// A client started the turn.
    Direct,
    /// The host started it from the chat's queue.
    Queued,
}

/// A user message was sent to an agent (or handled by a host command).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserMessageSent {
    /// The session URI.
    pub session: String,
    /// The chat URI.
    pub chat: String,
    /// The turn id.
    pub turn_id: String,
    /// Direct or queued.
    pub source: MessageSource,
    /// The provider that received it; `None` for a host command.
    pub provider: Option<String>,
}

/// Emits host telemetry. Fire-and-forget: reporting never fails a turn.
pub trait TelemetryReporter: Send + Sync {
    /// A user message was sent.
    fn user_message_sent(&self, event: &UserMessageSent);
    /// A host command ran (`rename`).
    fn local_command(&self, session: &str, chat: &str, command: &str);
}

/// Telemetry as `tracing` events at `info` (target `agenthost_services::telemetry`). Message
/// text is never logged.
#[derive(Debug, Clone, Copy, Default)]
pub struct TracingTelemetry;

impl TelemetryReporter for TracingTelemetry {
    fn user_message_sent(&self, event: &UserMessageSent) {
        tracing::info!(
            session = %event.session, chat = %event.chat, turn_id = %event.turn_id,
            source = ?event.source, provider = event.provider.as_deref(),
            "userMessageSent"
        );
    }

    fn local_command(&self, session: &str, chat: &str, command: &str) {
        tracing::info!(session, chat, command, "localCommand");
    }
}
