//! [`CliProvider`]: the `Provider` of an agent CLI, written once over [`AgentCli`].

use std::sync::Arc;

use agenthost_protocol::ahp_types::state::{AgentInfo, SessionModelInfo};
use agenthost_provider_api::{
    InvalidConfig, Provider, ProviderError, ProviderSession, RestoreSession, ResumeKey,
    StartSession,
};
use futures::future::BoxFuture;

use crate::driver::{AgentConversation, Conversation};

/// What distinguishes one agent CLI's provider from another: its id and description, its
/// configuration, where its resume handle keeps the conversation id, and how a conversation
/// starts.
pub trait AgentCli: Send + Sync + 'static {
    /// The launch settings.
    type Config: std::fmt::Debug + Send + Sync + 'static;
    /// A conversation of one chat.
    type Conversation: AgentConversation;

    /// The provider id (never contains `-`).
    const ID: &'static str;
    /// The agent's display name.
    const DISPLAY_NAME: &'static str;
    /// One sentence on what the provider drives and how.
    const DESCRIPTION: &'static str;
    /// Where the resume handle keeps the agent's conversation id.
    const RESUME: ResumeKey;

    /// Refuses settings the CLI would refuse.
    fn validate(config: &Self::Config) -> Result<(), InvalidConfig>;

    /// The models the provider lists.
    fn models(config: &Self::Config) -> Vec<SessionModelInfo>;

    /// A conversation for `start`; `resume` is the agent's id of an earlier conversation to
    /// continue (validated by [`AgentCli::RESUME`]).
    fn start(
        config: Arc<Self::Config>,
        start: StartSession,
        resume: Option<String>,
    ) -> Conversation<Self::Conversation>;
}

/// The provider of the agent CLI `A`: each chat gets its own process and conversation.
pub struct CliProvider<A: AgentCli> {
    config: Arc<A::Config>,
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
    pub fn new(config: A::Config) -> Result<Self, InvalidConfig> {
        A::validate(&config)?;
        Ok(Self {
            config: Arc::new(config),
        })
    }

    /// The launch settings.
    pub fn config(&self) -> &A::Config {
        &self.config
    }

    /// Starts a conversation and returns the concrete session.
    pub fn start(&self, request: StartSession) -> Conversation<A::Conversation> {
        A::start(Arc::clone(&self.config), request, None)
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
            models: A::models(&self.config),
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
            let session: Arc<dyn ProviderSession> =
                Arc::new(A::start(config, request.start, Some(id)));
            Ok(session)
        })
    }
}
