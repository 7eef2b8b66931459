//! The Codex backend: advertises itself and starts conversations, as an [`AgentCli`] of the
//! shared driver.

use agenthost_provider_api::ResumeKey;
use agenthost_provider_process::driver::{AgentCli, CliProvider};

use crate::session::{CodexConversation, RESUME};

/// The provider id.
pub const PROVIDER_ID: &str = "codex";

/// Codex as the driver runs it: each chat gets its own `codex app-server` and thread.
#[derive(Debug, Clone, Copy)]
pub struct Codex;

/// The Codex provider.
pub type CodexProvider = CliProvider<Codex>;

impl AgentCli for Codex {
    type Conversation = CodexConversation;

    const ID: &'static str = PROVIDER_ID;
    const DISPLAY_NAME: &'static str = "Codex";
    const DESCRIPTION: &'static str = "OpenAI's Codex CLI, driven over `codex app-server`: \
        streamed messages and reasoning, shell commands and file changes with host approvals.";
    const RESUME: ResumeKey = RESUME;
}
