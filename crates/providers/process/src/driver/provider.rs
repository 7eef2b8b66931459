//! [`CliProvider`]: the `Provider` of an agent CLI, written once over [`AgentCli`].

use std::sync::Arc;

use agenthost_protocol::ahp_types::state::AgentInfo;
use agenthost_provider_api::{
    AgentConfig, InvalidConfig, Provider, ProviderError, ProviderSession, RestoreSession,
    ResumeKey, StartSession,
};
use futures::future::BoxFuture;

use crate::driver::{AgentConversation, Conversation};

/// What distinguishes one agent CLI's provider from another besides its conversation: its id
/// and description, and where its resume handle keeps the conversation id.
pub trait AgentCli: Send + Sync + 'static {
    /// A conversation of one chat (its [`AgentConversation::Config`] is the provider's
    /// settings).
    type Conversation: AgentConversation;

    /// The provider id (never contains `-`).
    const ID: &'static str;
    /// The agent's display name.
    const DISPLAY_NAME: &'static str;
    /// One sentence on what the provider drives and how.
    const DESCRIPTION: &'static str;
    /// Where the resume handle keeps the agent's conversation id.
    const RESUME: ResumeKey;
}

/// The settings of agent CLI `A`'s provider.
pub type ConfigOf<A> = <<A as AgentCli>::Conversation as AgentConversation>::Config;

/// The provider of the agent CLI `A`: each chat gets its own process and conversation.
pub struct CliProvider<A: AgentCli> {
    config: Arc<ConfigOf<A>>,
}

impl<A: AgentCli> std::fmt::Debug for CliProvider<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CliProvider")
            .field("id", &A::ID)
            .field("config", &self.config)
            .finish()
    }
}

impl<A: AgentCli> Clone for CliProvider<A> {
    fn clone(&self) -> Self {
        Self {
            config: Arc::clone(&self.config),
        }
    }
}

impl<A: AgentCli> CliProvider<A> {
    /// A provider launching the CLI as `config` says; fails on settings it would refuse.
    pub fn new(config: ConfigOf<A>) -> Result<Self, InvalidConfig> {
        config.validate()?;
        Ok(Self {
            config: Arc::new(config),
        })
    }

    /// The launch settings.
    pub fn config(&self) -> &ConfigOf<A> {
        &self.config
    }

    /// Starts a conversation and returns the concrete session.
    pub fn start(&self, request: StartSession) -> Conversation<A::Conversation> {
        Conversation::new(A::Conversation::open(
            Arc::clone(&self.config),
            request,
            None,
        ))
    }
}

impl<A: AgentCli> Provider for CliProvider<A> {
    fn id(&self) -> &str {
        A::ID
    }

    fn agent_info(&self) -> AgentInfo {
        AgentInfo {
            provider: A::ID.into(),
            display_name: A::DISPLAY_NAME.into(),
            description: A::DESCRIPTION.into(),
            models: self.config.cli().listed_models(A::ID),
            protected_resources: Some(Vec::new()),
            customizations: None,
            capabilities: None,
        }
    }

    fn start_session(
        &self,
        request: StartSession,
    ) -> BoxFuture<'_, Result<Arc<dyn ProviderSession>, ProviderError>> {
        let session: Arc<dyn ProviderSession> = Arc::new(self.start(request));
        Box::pin(async move { Ok(session) })
    }

    fn restore_session(
        &self,
        request: RestoreSession,
    ) -> BoxFuture<'_, Result<Arc<dyn ProviderSession>, ProviderError>> {
        let config = Arc::clone(&self.config);
        Box::pin(async move {
            let id = A::RESUME.id(&request.resume_handle)?;
            let conversation = A::Conversation::open(config, request.start, Some(id));
            let session: Arc<dyn ProviderSession> = Arc::new(Conversation::new(conversation));
            Ok(session)
        })
    }
}
