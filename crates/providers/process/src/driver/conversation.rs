//! [`Conversation`]: the `ProviderSession` of an agent-CLI provider, written once.

use std::future::Future;
use std::sync::Arc;

use agenthost_provider_api::{
    AgentConfig, InputResponse, PermissionDecision, ProviderError, ProviderSession, StartSession,
    TurnRequest,
};
use futures::future::BoxFuture;

/// A conversation of one chat with an agent CLI, as its provider implements it: async methods
/// on the shared state (`Arc<Self>`, so a started process's reader can hold a weak reference).
pub trait AgentConversation: Send + Sync + Sized + 'static {
    /// The provider's settings.
    type Config: AgentConfig;

    /// A conversation for `start` launching the agent as `config` says; `resume` is the agent's
    /// id of an earlier conversation to continue (validated by the provider's resume key).
    fn open(config: Arc<Self::Config>, start: StartSession, resume: Option<String>) -> Self;

    /// Starts a turn (see `ProviderSession::send_turn`).
    fn send_turn(
        self: &Arc<Self>,
        turn: TurnRequest,
    ) -> impl Future<Output = Result<(), ProviderError>> + Send;

    /// Answers the pending confirmation of `tool_call_id`.
    fn respond_to_permission(
        &self,
        tool_call_id: &str,
        decision: PermissionDecision,
    ) -> impl Future<Output = Result<(), ProviderError>> + Send;

    /// Answers the input request `request_id`; `None` when the agent never asks for input
    /// (the host is told the operation is unsupported).
    fn respond_to_input(
        &self,
        request_id: &str,
        response: InputResponse,
    ) -> Option<impl Future<Output = Result<(), ProviderError>> + Send> {
        let _ = (request_id, response);
        None::<std::future::Ready<Result<(), ProviderError>>>
    }

    /// Cancels the running turn `turn_id`.
    fn cancel(&self, turn_id: &str) -> impl Future<Output = Result<(), ProviderError>> + Send;

    /// What the host persists to resume the conversation (`None`: nothing to resume yet).
    fn resume_handle(&self) -> Option<serde_json::Value>;

    /// Stops the conversation: pending requests are answered, the process is terminated.
    fn dispose(&self) -> impl Future<Output = ()> + Send;
}

/// The `ProviderSession` over an [`AgentConversation`]: what a provider's `start_session`
/// returns.
pub struct Conversation<C>(Arc<C>);

impl<C> Conversation<C> {
    /// Wraps `inner`.
    pub fn new(inner: C) -> Self {
        Self(Arc::new(inner))
    }
}

impl<C> std::ops::Deref for Conversation<C> {
    type Target = C;

    fn deref(&self) -> &C {
        &self.0
    }
}

impl<C> std::fmt::Debug for Conversation<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conversation").finish_non_exhaustive()
    }
}

impl<C: AgentConversation> ProviderSession for Conversation<C> {
    fn send_turn(&self, turn: TurnRequest) -> BoxFuture<'_, Result<(), ProviderError>> {
        Box::pin(self.0.send_turn(turn))
    }

    fn respond_to_permission<'a>(
        &'a self,
        tool_call_id: &'a str,
        decision: PermissionDecision,
    ) -> BoxFuture<'a, Result<(), ProviderError>> {
        Box::pin(self.0.respond_to_permission(tool_call_id, decision))
    }

    fn respond_to_input<'a>(
        &'a self,
        request_id: &'a str,
        response: InputResponse,
    ) -> BoxFuture<'a, Result<(), ProviderError>> {
        match self.0.respond_to_input(request_id, response) {
            Some(answer) => Box::pin(answer),
            None => Box::pin(async {
                Err(ProviderError::Unsupported {
                    operation: "input requests",
                })
            }),
        }
    }

    fn cancel<'a>(&'a self, turn_id: &'a str) -> BoxFuture<'a, Result<(), ProviderError>> {
        Box::pin(self.0.cancel(turn_id))
    }

    fn resume_handle(&self) -> Option<serde_json::Value> {
        self.0.resume_handle()
    }

    fn dispose(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.0.dispose())
    }
}
