//! The Copilot backend: advertises itself and starts conversations, as an [`AgentCli`] of the
//! shared driver.

use agenthost_provider_api::ResumeKey;
use agenthost_provider_process::driver::{AgentCli, CliProvider};

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
    type Conversation = CopilotConversation;

    const ID: &'static str = PROVIDER_ID;
    const DISPLAY_NAME: &'static str = "GitHub Copilot";
    const DESCRIPTION: &'static str = "The GitHub Copilot CLI, driven over its headless JSON-RPC \
        protocol: streamed messages and reasoning, tools with host approvals, subagents.";
    const RESUME: ResumeKey = RESUME;
}
