//! Engine configuration: timeouts, per-kind policies, the client id it executes for.

use std::collections::BTreeSet;
use std::time::Duration;

/// The default grace window: how long an unclaimed obligation may still be claimed before the
/// policy answers it.
pub const DEFAULT_GRACE: Duration = Duration::from_millis(5000);

/// What the engine does with an unclaimed user-facing obligation of one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AutoAnswer {
    /// Answer it (deny, cancel, give up — whatever matches its gate) once it has stayed
    /// unclaimed for a whole grace window.
    #[default]
    AfterGrace,
    /// Never answer it: the entry stays outstanding until a user answers or the host removes
    /// it. Every engine that is not the session's designated responder uses this.
    Wait,
}

/// How a `toolConfirmation` in `pending-confirmation` for one of this engine's own client tools
/// is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientConfirmationMode {
    /// The entry is driven as an execution: the local tool decides whether to ask, and its
    /// outcome is reflected as `chat/toolCallConfirmed`. An unclaimed tool that may not request
    /// confirmation runs headless (an explicit trust decision, P12).
    #[default]
    LocalDecides,
    /// The host's gate is binding: the call always asks the claimant's user, and an unclaimed
    /// call is never run headless — it is denied after the grace window like a confirmable
    /// call.
    HostGateBinding,
}

/// Everything an engine needs to know besides its sink and its tools. Every timeout is here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineConfig {
    /// The client id whose `toolClientExecution` entries (and client-owned confirmations) this
    /// engine executes; `None` for an engine that executes nothing (the host's policy engine).
    pub client_id: Option<String>,
    /// Grace window (default 5 s).
    pub grace: Duration,
    /// How long a run that was approved locally and is executing keeps its cancellation token
    /// after its confirmation entry vanished without an execution entry appearing (default: the
    /// grace window).
    pub handover_window: Duration,
    /// Policy for `chatInput` entries (answer: `chat/inputCompleted { response: cancel }`).
    pub chat_input: AutoAnswer,
    /// Policy for `toolConfirmation` entries that are not this engine's own client executions
    /// (answer: deny the parameter gate or the result gate).
    pub tool_confirmation: AutoAnswer,
    /// Policy for `toolAuthentication` entries (answer: give up with a `cancelled` completion).
    pub tool_authentication: AutoAnswer,
    /// How own client-owned confirmations are treated.
    pub client_confirmation: ClientConfirmationMode,
    /// Tool names whose unclaimed confirmations are *approved* when the grace window ends
    /// (parameter gate: `confirmed: "setting"`; result gate: `approved: true`) instead of denied.
    pub approve_tools: BTreeSet<String>,
    /// Whether a chat-scope claim on a parent chat also claims the `chatInput` entries of its
    /// subagent chats. Off by default: a parent view renders the subagent's tool calls inside its
    /// group, not the subagent's elicitations (P13).
    pub parent_claims_subagent_inputs: bool,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            client_id: None,
            grace: DEFAULT_GRACE,
            handover_window: DEFAULT_GRACE,
            chat_input: AutoAnswer::AfterGrace,
            tool_confirmation: AutoAnswer::AfterGrace,
            tool_authentication: AutoAnswer::AfterGrace,
            client_confirmation: ClientConfirmationMode::LocalDecides,
            approve_tools: BTreeSet::new(),
            parent_claims_subagent_inputs: false,
        }
    }
}

impl EngineConfig {
    /// The configuration of an engine inside a client: it executes `client_id`'s tools and is not
    /// the designated responder, so every user-facing kind waits.
    pub fn client(client_id: impl Into<String>) -> Self {
        Self {
            client_id: Some(client_id.into()),
            chat_input: AutoAnswer::Wait,
            tool_confirmation: AutoAnswer::Wait,
            tool_authentication: AutoAnswer::Wait,
            ..Self::default()
        }
    }

    /// The configuration of the session's designated responder that also executes
    /// `client_id`'s tools (every kind auto-answers after the grace window).
    pub fn responder(client_id: impl Into<String>) -> Self {
        Self {
            client_id: Some(client_id.into()),
            ..Self::default()
        }
    }

    /// Sets the grace window; the hand-over window follows it.
    pub fn with_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self.handover_window = grace;
        self
    }

    /// Whether this engine never dispatches anything on its own (no client id and every
    /// user-facing kind waits).
    pub fn is_inert(&self) -> bool {
        self.client_id.is_none()
            && self.chat_input == AutoAnswer::Wait
            && self.tool_confirmation == AutoAnswer::Wait
            && self.tool_authentication == AutoAnswer::Wait
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
