//! The Claude Code backend: advertises itself and starts conversations, as an [`AgentCli`] of
//! the shared driver.

use agenthost_provider_api::ResumeKey;
use agenthost_provider_process::driver::{AgentCli, CliProvider};

use crate::session::ClaudeConversation;

/// The provider id.
pub const PROVIDER_ID: &str = "claude";

/// Claude Code as the driver runs it: each chat gets its own `claude` process.
#[derive(Debug, Clone, Copy)]
pub struct Claude;

/// The Claude Code provider.
pub type ClaudeProvider = CliProvider<Claude>;

/// Whether `id` can be a Claude Code session id: `--resume` gets it as an argument, so it must
/// not look like a flag or carry anything but id characters.
pub fn is_valid_cli_session_id(id: &str) -> bool {
    agenthost_provider_api::is_valid_resume_id(id)
}

/// Where a Claude Code resume handle keeps the session id.
pub(crate) const RESUME: ResumeKey = ResumeKey {
    key: "sessionId",
    agent: "Claude Code",
    what: "session id",
};

impl AgentCli for Claude {
    type Conversation = ClaudeConversation;

    const ID: &'static str = PROVIDER_ID;
    const DISPLAY_NAME: &'static str = "Claude Code";
    const DESCRIPTION: &'static str = "Anthropic's Claude Code CLI, driven over stream-json: \
        streamed text and thinking, tool calls with host confirmations, subagents.";
    const RESUME: ResumeKey = RESUME;
}
