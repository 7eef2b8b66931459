//! The Claude Code backend: advertises itself and starts conversations.

use std::sync::Arc;

use agenthost_protocol::ahp_types::state::{AgentInfo, SessionModelInfo};
use agenthost_provider_api::{
    Provider, ProviderError, ProviderSession, RestoreSession, StartSession,
};
use futures::future::BoxFuture;

use crate::config::{ClaudeConfig, DEFAULT_MODEL};
use crate::session::{ClaudeConversation, ClaudeSession};

/// The provider id.
pub const PROVIDER_ID: &str = "claude";

/// The Claude Code provider: each chat gets its own `claude` process.
#[derive(Debug, Clone)]
pub struct ClaudeProvider {
    config: Arc<ClaudeConfig>,
}

impl ClaudeProvider {
    /// A provider launching `claude` as `config` says; fails on settings `claude` would refuse.
    pub fn new(config: ClaudeConfig) -> Result<Self, String> {
        config.validate()?;
        Ok(Self {
            config: Arc::new(config),
        })
    }

    /// The launch settings.
    pub fn config(&self) -> &ClaudeConfig {
        &self.config
    }

    /// Starts a conversation and returns the concrete session (tests and tools that want its
    /// process id use this; the host goes through [`Provider::start_session`]).
    pub fn start(&self, request: StartSession) -> ClaudeSession {
        ClaudeConversation::start(Arc::clone(&self.config), request, None)
    }
}

/// Whether `id` can be a Claude Code session id: `--resume` gets it as an argument, so it must
/// not look like a flag or carry anything but id characters.
pub fn is_valid_cli_session_id(id: &str) -> bool {
    agenthost_provider_api::is_valid_resume_id(id)
}

/// Where a Claude Code resume handle keeps the session id.
pub(crate) const RESUME: agenthost_provider_api::ResumeKey = agenthost_provider_api::ResumeKey {
    key: "sessionId",
    agent: "Claude Code",
    what: "session id",
};

fn model_info(id: &str) -> SessionModelInfo {
    let name = if id == DEFAULT_MODEL {
        "Default model"
    } else {
        id
    };
    agenthost_provider_api::model_info(PROVIDER_ID, id, name)
}

impl Provider for ClaudeProvider {
    fn id(&self) -> &str {
        PROVIDER_ID
    }

    fn agent_info(&self) -> AgentInfo {
        let models = if self.config.models.is_empty() {
            vec![model_info(DEFAULT_MODEL)]
        } else {
            self.config.models.iter().map(|id| model_info(id)).collect()
        };
        AgentInfo {
            provider: PROVIDER_ID.into(),
            display_name: "Claude Code".into(),
            description: "Anthropic's Claude Code CLI, driven over stream-json: streamed text \
                          and thinking, tool calls with host confirmations, subagents."
                .into(),
            models,
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
            let id = RESUME.id(&request.resume_handle)?;
            let session: Arc<dyn ProviderSession> =
                Arc::new(ClaudeConversation::start(config, request.start, Some(id)));
            Ok(session)
        })
    }
}
