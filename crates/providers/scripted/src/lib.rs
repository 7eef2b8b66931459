//! The scripted provider: a deterministic, in-process agent that plays a JSON script.
//!
//! **Central design decision: the script is the agent.** There is no model, process or history
//! behind it: turn `N` of a chat runs `turns[N]` of a [`Script`], step by step, and emits exactly
//! the signals a real adapter's mapper would (the AHP ordering rules of the shared mapper: parts
//! before their deltas, tool start → ready or pending confirmation → complete, subagents
//! announced before their first action and closed after their last, one terminal action per
//! turn). Ids are derived from the turn number and a counter, and time comes from tokio's
//! clock, so a run is reproducible and tests drive it with a paused clock. That makes it the
//! provider behind `agent-host demo` ([`Script::builtin`]) and the host's end-to-end tests.
//!
//! The only side effects are the `writeFile` / `appendFile` / `readFile` tool effects, confined to
//! the session's working directory (absolute paths, `..` escapes and outbound symlinks fail the
//! tool call).
//!
//! Background subagents (`"background": true`) run at the same time as the rest of their turn,
//! each in its own task with its own id numbering; a `join` step waits for them, the turn's end
//! waits for them, and an `error` step of the turn leaves them running (as a real agent's
//! subagents outlive their parent's failed model call), still answerable through
//! `respond_to_permission`. `cancel` and `dispose` stop them.
//!
//! The script format is documented in this crate's `README.md`.
#![deny(missing_docs)]

mod builtin;
mod effects;
mod run;
mod script;
mod session;
#[cfg(test)]
mod test_support;

use std::sync::Arc;

use agenthost_protocol::ahp_types::state::AgentInfo;
use agenthost_provider_api::{
    Provider, ProviderError, ProviderSession, RestoreSession, StartSession,
};
use futures::future::BoxFuture;

pub use effects::{IO_ERROR, OUTSIDE_WORKING_DIRECTORY};
pub use run::SUBAGENT_TOOL_NAME;
pub use script::{
    AppendFile, DEFAULT_CHUNK, Echo, Effect, Fail, Join, JoinUntil, Pause, ReadFile,
    SCRIPTED_ERROR, Say, Script, ScriptError, Step, Subagent, Think, Tool, TurnScript, Usage,
    WriteFile,
};
pub use session::ScriptedSession;

/// The provider id.
pub const PROVIDER_ID: &str = "scripted";
/// The one model the scripted agent advertises.
pub const MODEL_ID: &str = "scripted-1";

/// The scripted agent backend: every chat it serves plays the same [`Script`].
#[derive(Debug, Clone)]
pub struct ScriptedProvider {
    script: Arc<Script>,
}

impl ScriptedProvider {
    /// A provider playing `script`.
    pub fn new(script: Script) -> Self {
        Self {
            script: Arc::new(script),
        }
    }

    /// A provider playing the built-in demo script.
    pub fn builtin() -> Self {
        Self::new(Script::builtin())
    }

    /// The script every session plays.
    pub fn script(&self) -> &Script {
        &self.script
    }

    /// A session starting at turn `turns_run` of the script, as a concrete type.
    pub fn session(&self, request: StartSession, turns_run: u64) -> ScriptedSession {
        ScriptedSession::new(Arc::clone(&self.script), request, turns_run)
    }
}

impl Default for ScriptedProvider {
    fn default() -> Self {
        Self::builtin()
    }
}

/// The `turnsRun` count of a resume handle.
fn turns_run(handle: &serde_json::Value) -> Result<u64, ProviderError> {
    handle
        .get("turnsRun")
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| ProviderError::StartFailed {
            message: format!(
                "the scripted agent cannot resume from {handle}: expected {{\"turnsRun\": <count>}}"
            ),
        })
}

impl Provider for ScriptedProvider {
    fn id(&self) -> &str {
        PROVIDER_ID
    }

    fn agent_info(&self) -> AgentInfo {
        AgentInfo {
            provider: PROVIDER_ID.into(),
            display_name: "Scripted agent".into(),
            description: "A deterministic built-in agent that plays a script: streamed text, \
                          reasoning, tool calls with confirmations, subagents and usage, the \
                          same way every time. For demos and tests."
                .into(),
            models: vec![agenthost_provider_api::model_info(
                PROVIDER_ID,
                MODEL_ID,
                "Scripted 1",
            )],
            protected_resources: Some(Vec::new()),
            customizations: None,
            capabilities: None,
        }
    }

    fn start_session(
        &self,
        request: StartSession,
    ) -> BoxFuture<'_, Result<Arc<dyn ProviderSession>, ProviderError>> {
        Box::pin(async move {
            let session: Arc<dyn ProviderSession> = Arc::new(self.session(request, 0));
            Ok(session)
        })
    }

    fn restore_session(
        &self,
        request: RestoreSession,
    ) -> BoxFuture<'_, Result<Arc<dyn ProviderSession>, ProviderError>> {
        Box::pin(async move {
            let turns_run = turns_run(&request.resume_handle)?;
            let session: Arc<dyn ProviderSession> =
                Arc::new(self.session(request.start, turns_run));
            Ok(session)
        })
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
