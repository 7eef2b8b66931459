//! The Copilot backend: advertises itself and starts conversations.

use std::sync::Arc;

use agenthost_protocol::ahp_types::state::AgentInfo;
use agenthost_provider_api::{
    Provider, ProviderError, ProviderSession, RestoreSession, StartSession, model_info,
};
use futures::future::BoxFuture;

use crate::config::{CopilotConfig, DEFAULT_MODEL};
use crate::session::{CopilotConversation, CopilotSession, RESUME};

/// The provider id.
pub const PROVIDER_ID: &str = "copilot";

/// The GitHub Copilot provider: each chat gets its own `copilot --headless --stdio` and session.
#[derive(Debug, Clone)]
pub struct CopilotProvider {
    config: Arc<CopilotConfig>,
}

impl CopilotProvider {
    /// A provider launching Copilot as `config` says; fails on settings it would refuse.
    pub fn new(config: CopilotConfig) -> Result<Self, String> {
        config.validate()?;
        Ok(Self {
            config: Arc::new(config),
        })
    }

    /// The launch settings.
    pub fn config(&self) -> &CopilotConfig {
        &self.config
    }

    /// Starts a conversation and returns the concrete session.
    pub fn start(&self, request: StartSession) -> CopilotSession {
        CopilotConversation::start(Arc::clone(&self.config), request, None)
    }
}

impl Provider for CopilotProvider {
    fn id(&self) -> &str {
        PROVIDER_ID
    }

    fn agent_info(&self) -> AgentInfo {
        let models = if self.config.models.is_empty() {
            vec![model_info(PROVIDER_ID, DEFAULT_MODEL, "Default model")]
        } else {
            self.config
                .models
                .iter()
                .map(|id| model_info(PROVIDER_ID, id, id))
                .collect()
        };
        AgentInfo {
            provider: PROVIDER_ID.into(),
            display_name: "GitHub Copilot".into(),
            description: "The GitHub Copilot CLI, driven over its headless JSON-RPC protocol: \
                          streamed messages and reasoning, tools with host approvals, subagents."
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
                Arc::new(CopilotConversation::start(config, request.start, Some(id)));
            Ok(session)
        })
    }
}
