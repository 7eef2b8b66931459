//! [`AcpProvider`]: one configured ACP agent as a host provider (`acp.NAME`), each chat with its
//! own process and ACP session; and [`discover_models`], the probe that learns what models an
//! agent offers.

use std::sync::Arc;

use agenthost_protocol::ahp_types::state::{AgentInfo, Turn};
use agenthost_protocol::{ChatUri, SafeId, SessionUri};
use agenthost_provider_api::{
    AgentConfig, InvalidConfig, Provider, ProviderError, ProviderSession, RestoreSession,
    ResumeKey, SignalSink, StartSession, listed_models, model_info, signal_channel,
};
use agenthost_provider_process::driver::{AgentCli, AgentConversation, Conversation};
use futures::future::BoxFuture;

use crate::config::AcpAgentConfig;
use crate::session::{
    AcpConversation, RESUME, ensure_process, ensure_session, offered_models, set_history,
};

/// The ACP protocol as the driver runs it (the marker of its [`Protocol`]
/// implementation); the provider id of each agent is its own ([`AcpProvider`]).
///
/// [`Protocol`]: agenthost_provider_process::driver::Protocol
#[derive(Debug, Clone, Copy)]
pub struct Acp;

impl AgentCli for Acp {
    type Conversation = AcpConversation;

    const ID: &'static str = "acp";
    const DISPLAY_NAME: &'static str = "ACP agent";
    const DESCRIPTION: &'static str = "An agent speaking the Agent Client Protocol on stdio.";
    const RESUME: ResumeKey = RESUME;
}

/// One ACP agent as a provider: `acp.NAME`, its models as the configuration lists them.
#[derive(Debug, Clone)]
pub struct AcpProvider {
    id: String,
    config: Arc<AcpAgentConfig>,
}

impl AcpProvider {
    /// The provider of the agent `config` describes; fails on settings it would refuse.
    pub fn new(config: AcpAgentConfig) -> Result<Self, InvalidConfig> {
        config.validate()?;
        Ok(Self {
            id: config.provider_id(),
            config: Arc::new(config),
        })
    }

    /// The agent's settings.
    pub fn config(&self) -> &AcpAgentConfig {
        &self.config
    }

    fn open(
        &self,
        start: StartSession,
        resume: Option<String>,
        history: Vec<Turn>,
    ) -> Arc<dyn ProviderSession> {
        let conversation = AcpConversation::open(Arc::clone(&self.config), start, resume);
        set_history(&conversation, history);
        Arc::new(Conversation::new(conversation))
    }
}

impl Provider for AcpProvider {
    fn id(&self) -> &str {
        &self.id
    }

    fn agent_info(&self) -> AgentInfo {
        let models = if self.config.models.is_empty() {
            listed_models(&self.id, agenthost_provider_api::DEFAULT_MODEL, &[])
        } else {
            self.config
                .models
                .iter()
                .map(|(value, name)| model_info(&self.id, value, name))
                .collect()
        };
        AgentInfo {
            provider: self.id.clone(),
            display_name: format!("{} (ACP)", self.config.name),
            description: format!(
                "`{}` over the Agent Client Protocol: streamed messages and reasoning, tools with \
                 host approvals, plans.",
                self.config.cli.binary.display()
            ),
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
        let session = self.open(request, None, Vec::new());
        Box::pin(async move { Ok(session) })
    }

    fn restore_session(
        &self,
        request: RestoreSession,
    ) -> BoxFuture<'_, Result<Arc<dyn ProviderSession>, ProviderError>> {
        Box::pin(async move {
            let id = RESUME.id(&request.resume_handle)?;
            Ok(self.open(request.start, Some(id), request.history))
        })
    }
}

/// Learns the models agent `config` offers: starts it in `scratch` (a directory of its own),
/// opens a session (`session/new`) and reads the values of its config option of category
/// `model` as `(value, display name)`; the process is stopped after. Empty when the agent
/// offers no choice of model. An error says why the agent could not be asked (it did not start,
/// or refused the session).
pub async fn discover_models(
    config: AcpAgentConfig,
    scratch: &std::path::Path,
) -> Result<Vec<(String, String)>, ProviderError> {
    config
        .validate()
        .map_err(|error| ProviderError::StartFailed {
            message: error.to_string(),
        })?;
    let (tx, _rx) = signal_channel(16);
    let session = SessionUri::canonical(SafeId::new("probe").map_err(|error| {
        ProviderError::StartFailed {
            message: format!("internal session id: {error}"),
        }
    })?);
    let chat = ChatUri::default_for(&session);
    let start = StartSession {
        signals: SignalSink::new(chat.clone(), tx),
        session,
        chat,
        working_directory: scratch.to_owned(),
        model: None,
    };
    let conversation = Arc::new(AcpConversation::open(Arc::new(config), start, None));
    let found = async {
        let process = ensure_process(&conversation).await?;
        ensure_session(&conversation, &process).await?;
        Ok(offered_models(conversation.translator().config_options()))
    }
    .await;
    conversation.dispose().await;
    found
}
