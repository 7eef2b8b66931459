//! The Codex backend: advertises itself and starts conversations, as an [`AgentCli`] of the
//! shared driver.

use std::sync::Arc;

use agenthost_protocol::ahp_types::state::SessionModelInfo;
use agenthost_provider_api::{InvalidConfig, ResumeKey, StartSession, listed_models};
use agenthost_provider_process::driver::{AgentCli, CliProvider, Conversation};

use crate::config::{CodexConfig, DEFAULT_MODEL};
use crate::session::{CodexConversation, RESUME};

/// The provider id.
pub const PROVIDER_ID: &str = "codex";

/// Codex as the driver runs it: each chat gets its own `codex app-server` and thread.
#[derive(Debug, Clone, Copy)]
pub struct Codex;

/// The Codex provider.
pub type CodexProvider = CliProvider<Codex>;

impl AgentCli for Codex {
    type Config = CodexConfig;
    type Conversation = CodexConversation;

    const ID: &'static str = PROVIDER_ID;
    const DISPLAY_NAME: &'static str = "Codex";
    const DESCRIPTION: &'static str = "OpenAI's Codex CLI, driven over `codex app-server`: \
        streamed messages and reasoning, shell commands and file changes with host approvals.";
    const RESUME: ResumeKey = RESUME;

    fn validate(config: &CodexConfig) -> Result<(), InvalidConfig> {
        config.validate()
    }

    fn models(config: &CodexConfig) -> Vec<SessionModelInfo> {
        listed_models(PROVIDER_ID, DEFAULT_MODEL, &config.cli.models)
    }

    fn start(
        config: Arc<CodexConfig>,
        start: StartSession,
        thread_id: Option<String>,
    ) -> Conversation<CodexConversation> {
        CodexConversation::start(config, start, thread_id)
    }
}
