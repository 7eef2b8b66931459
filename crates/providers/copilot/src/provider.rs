//! The Copilot backend: advertises itself and starts conversations, as an [`AgentCli`] of the
//! shared driver.

use std::sync::Arc;

use agenthost_protocol::ahp_types::state::SessionModelInfo;
use agenthost_provider_api::{InvalidConfig, ResumeKey, StartSession, listed_models};
use agenthost_provider_process::driver::{AgentCli, CliProvider, Conversation};

use crate::config::{CopilotConfig, DEFAULT_MODEL};
use crate::session::{CopilotConversation, RESUME};

/// The provider id.
pub const PROVIDER_ID: &str = "copilot";

/// GitHub Copilot as the driver runs it: each chat gets its own `copilot --headless --stdio`
/// and session.
#[derive(Debug, Clone, Copy)]
pub struct Copilot;

/// The GitHub Copilot provider.
pub type CopilotProvider = CliProvider<Copilot>;

impl AgentCli for Copilot {
    type Config = CopilotConfig;
    type Conversation = CopilotConversation;

    const ID: &'static str = PROVIDER_ID;
    const DISPLAY_NAME: &'static str = "GitHub Copilot";
    const DESCRIPTION: &'static str = "The GitHub Copilot CLI, driven over its headless JSON-RPC \
        protocol: streamed messages and reasoning, tools with host approvals, subagents.";
    const RESUME: ResumeKey = RESUME;

    fn validate(config: &CopilotConfig) -> Result<(), InvalidConfig> {
        config.validate()
    }

    fn models(config: &CopilotConfig) -> Vec<SessionModelInfo> {
        listed_models(PROVIDER_ID, DEFAULT_MODEL, &config.cli.models)
    }

    fn start(
        config: Arc<CopilotConfig>,
        start: StartSession,
        session_id: Option<String>,
    ) -> Conversation<CopilotConversation> {
        CopilotConversation::start(config, start, session_id)
    }
}
