//! The local side: the client-contributed tools an engine executes.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use agenthost_protocol::ahp_types::state::{
    ContentRef, ToolCallConfirmationReason, ToolCallResult, ToolResultContent,
};
use agenthost_protocol::ids::ToolCallKey;
use serde_json::{Map, Value};

use crate::cancel::CancelToken;
use crate::invocation::SharedInvocation;
use crate::keys::Claimant;

/// A boxed, sendable future (the runner trait stays object-safe).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What the engine knows about a tool before running it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolDescriptor {
    /// Whether the tool *may* request a confirmation (a "might", not a "will"). An unclaimed
    /// call of such a tool waits for a claim and is denied after the grace window.
    pub may_request_confirmation: bool,
}

/// The result of looking a tool up by its protocol name (aliases included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolLookup {
    /// Known locally.
    Found(ToolDescriptor),
    /// Known, but gated by data that has not arrived yet (for example a tool-search call whose
    /// candidate list is still missing): the engine waits and re-decides when the entry changes.
    NotReady,
    /// Not known: a run fails at once with `toolUnavailable`.
    Unknown,
}

/// The local tool's own confirmation decision for one call (asked only when the call carries
/// no trusted pre-approval).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalGate {
    /// No confirmation needed: reflected as `confirmed: "not-needed"`.
    NotNeeded,
    /// Approved by a local setting: reflected as `confirmed: "setting"`.
    ApprovedBySetting,
    /// Show the confirmation in the claimant's view and wait for
    /// [`SharedInvocation::decide`](crate::SharedInvocation::decide).
    Ask,
}

/// Streams partial content of a running body back to the engine.
pub(crate) type ContentReporter = Arc<dyn Fn(Vec<ToolResultContent>) + Send + Sync>;

/// One local invocation of a tool.
#[derive(Clone)]
pub struct LocalCall {
    /// The tool call.
    pub key: ToolCallKey,
    /// The protocol tool name.
    pub tool_name: String,
    /// The display name.
    pub display_name: String,
    /// The parsed input (always a JSON object).
    pub parameters: Map<String, Value>,
    /// The claimant the call runs for; `None` when headless.
    pub context: Option<Claimant>,
    /// Trusted pre-approval from the protocol state (`None` while the protocol call is still
    /// `pending-confirmation`: the local tool decides).
    pub pre_approval: Option<ToolCallConfirmationReason>,
    /// Cancelled when the engine no longer wants the result.
    pub cancel: CancelToken,
    /// The shared invocation being executed.
    pub invocation: SharedInvocation,
    pub(crate) reporter: Option<ContentReporter>,
}

impl LocalCall {
    /// Streams partial content while the body runs: the shared invocation shows it and the
    /// engine dispatches `chat/toolCallContentChanged` (ignored once the run is no longer
    /// current).
    pub fn report_content(&self, content: Vec<ToolResultContent>) {
        if let Some(reporter) = &self.reporter {
            reporter(content);
        }
    }
}

impl fmt::Debug for LocalCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalCall")
            .field("key", &self.key)
            .field("tool_name", &self.tool_name)
            .field("parameters", &self.parameters)
            .field("context", &self.context)
            .field("pre_approval", &self.pre_approval)
            .field("cancelled", &self.cancel.is_cancelled())
            .finish_non_exhaustive()
    }
}

/// The client-contributed tools of one client, as the engine runs them.
///
/// The engine is the only caller. It calls [`confirmation`](Self::confirmation) at most once
/// per attempt and [`execute`](Self::execute) at most once per tool call.
pub trait ToolRunner: Send + Sync + 'static {
    /// Looks a tool up by protocol name (runtime aliases included).
    fn lookup(&self, tool_name: &str) -> ToolLookup;

    /// Reads a content-referenced tool input (a resource read; decode base64 here if needed).
    fn read_input(&self, reference: &ContentRef) -> BoxFuture<'static, Result<String, String>> {
        let uri = reference.uri.clone();
        Box::pin(async move { Err(format!("cannot read tool input {uri}: no resource reader")) })
    }

    /// Whether this call needs the user's confirmation. Asked only when the call has no
    /// trusted pre-approval. The default needs none.
    fn confirmation(&self, call: &LocalCall) -> BoxFuture<'static, LocalGate> {
        let _ = call;
        Box::pin(async { LocalGate::NotNeeded })
    }

    /// Runs the tool body. The engine drops the future when `call.cancel` is cancelled.
    fn execute(&self, call: LocalCall) -> BoxFuture<'static, ToolCallResult>;
}

/// A runner without tools, for engines that execute nothing (the host's policy engine).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoLocalTools;

impl ToolRunner for NoLocalTools {
    fn lookup(&self, _tool_name: &str) -> ToolLookup {
        ToolLookup::Unknown
    }

    fn execute(&self, call: LocalCall) -> BoxFuture<'static, ToolCallResult> {
        let name = call.display_name;
        Box::pin(async move {
            crate::answers::local_failure_result(
                &name,
                "no local tools",
                crate::answers::TOOL_UNAVAILABLE,
            )
        })
    }
}

#[cfg(test)]
#[path = "runner_tests.rs"]
mod tests;
