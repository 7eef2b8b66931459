//! The flags of each agent CLI provider (`--claude-*`, `--codex-*`, `--copilot-*`), shared by
//! `serve` and `run`, and the provider configuration each builds.

use std::path::PathBuf;

use agenthost::CliError;

/// How `--provider copilot` launches `copilot --headless --stdio`. Without
/// `--copilot-byok-url` the CLI uses its own GitHub sign-in.
#[derive(Debug, clap::Args)]
pub(crate) struct CopilotArgs {
    /// The `copilot` executable.
    #[arg(
        long,
        env = "AGENT_HOST_COPILOT_BIN",
        default_value = "copilot",
        value_name = "PATH"
    )]
    pub(crate) copilot_bin: PathBuf,
    /// A model to advertise and create sessions with (repeatable; the first is the default).
    #[arg(long = "copilot-model", value_name = "MODEL")]
    copilot_models: Vec<String>,
    /// The Copilot CLI's state directory (`COPILOT_HOME`).
    #[arg(long, value_name = "DIR")]
    copilot_home: Option<PathBuf>,
    /// Bring your own key: send model calls to this base URL, offline, with no GitHub account.
    #[arg(long, value_name = "URL")]
    copilot_byok_url: Option<String>,
    /// The provider type behind `--copilot-byok-url` (openai, anthropic, azure).
    #[arg(long, default_value = "openai", value_name = "TYPE")]
    copilot_byok_type: String,
    /// The variable holding the API key for `--copilot-byok-url` (read at startup).
    #[arg(long, default_value = "COPILOT_PROVIDER_API_KEY", value_name = "VAR")]
    copilot_byok_key_env: String,
    /// Seconds the Copilot CLI may take to start (answer `ping`).
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    copilot_start_timeout_secs: u64,
}

impl CopilotArgs {
    pub(crate) fn config(self) -> Result<agenthost_provider_copilot::CopilotConfig, CliError> {
        let mut config = agenthost_provider_copilot::CopilotConfig::new(self.copilot_bin);
        config.cli.model = self.copilot_models.first().cloned();
        config.cli.models = self.copilot_models;
        config.copilot_home = self.copilot_home;
        if let Some(base_url) = self.copilot_byok_url {
            let api_key = std::env::var(&self.copilot_byok_key_env).map_err(|_| {
                CliError::Usage(format!(
                    "--copilot-byok-url needs the API key in ${} (set it, or name another \
                     variable with --copilot-byok-key-env)",
                    self.copilot_byok_key_env
                ))
            })?;
            config.byok = Some(agenthost_provider_copilot::ByokProvider {
                kind: self.copilot_byok_type,
                base_url,
                api_key,
            });
        }
        config.cli.start_timeout = std::time::Duration::from_secs(self.copilot_start_timeout_secs);
        Ok(config)
    }
}

/// How `--provider codex` launches `codex app-server`. The child inherits this process's
/// environment (the API key variable, `CODEX_HOME`, …).
#[derive(Debug, clap::Args)]
pub(crate) struct CodexArgs {
    /// The `codex` executable.
    #[arg(
        long,
        env = "AGENT_HOST_CODEX_BIN",
        default_value = "codex",
        value_name = "PATH"
    )]
    pub(crate) codex_bin: PathBuf,
    /// A model to advertise and start threads with (repeatable; the first is the default).
    #[arg(long = "codex-model", value_name = "MODEL")]
    codex_models: Vec<String>,
    /// The approval policy of new threads (on-request, never).
    #[arg(long, default_value = "on-request", value_name = "POLICY")]
    codex_approval_policy: String,
    /// The sandbox of new threads (read-only, workspace-write, danger-full-access).
    #[arg(long, default_value = "workspace-write", value_name = "MODE")]
    codex_sandbox: String,
    /// Codex's config and state directory (`CODEX_HOME`).
    #[arg(long, value_name = "DIR")]
    codex_home: Option<PathBuf>,
    /// Send model calls to this Responses API base URL (configures a model provider).
    #[arg(long, value_name = "URL")]
    codex_base_url: Option<String>,
    /// The variable holding the API key for `--codex-base-url`.
    #[arg(long, default_value = "OPENAI_API_KEY", value_name = "VAR")]
    codex_key_env: String,
    /// Seconds Codex may take to start (answer `initialize`).
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    codex_start_timeout_secs: u64,
}

impl CodexArgs {
    pub(crate) fn config(self) -> agenthost_provider_codex::CodexConfig {
        let mut config = agenthost_provider_codex::CodexConfig::new(self.codex_bin);
        config.cli.model = self.codex_models.first().cloned();
        config.cli.models = self.codex_models;
        config.approval_policy = self.codex_approval_policy;
        config.sandbox = self.codex_sandbox;
        config.codex_home = self.codex_home;
        config.model_provider =
            self.codex_base_url
                .map(|base_url| agenthost_provider_codex::ModelProvider {
                    id: "agenthost".to_owned(),
                    base_url,
                    wire_api: "responses".to_owned(),
                    env_key: self.codex_key_env,
                });
        config.cli.start_timeout = std::time::Duration::from_secs(self.codex_start_timeout_secs);
        config
    }
}

/// How `--provider claude` launches Claude Code. The child inherits this process's environment
/// (`ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`, …).
#[derive(Debug, clap::Args)]
pub(crate) struct ClaudeArgs {
    /// The `claude` executable.
    #[arg(
        long,
        env = "AGENT_HOST_CLAUDE_BIN",
        default_value = "claude",
        value_name = "PATH"
    )]
    pub(crate) claude_bin: PathBuf,
    /// A model to advertise and pass as `--model` (repeatable; the first is the default).
    #[arg(long = "claude-model", value_name = "MODEL")]
    claude_models: Vec<String>,
    /// `--permission-mode` for Claude Code (default, acceptEdits, plan, bypassPermissions).
    #[arg(long, value_name = "MODE")]
    claude_permission_mode: Option<String>,
    /// A tool Claude Code may run without asking (repeatable; `--allowedTools`).
    #[arg(long = "claude-allowed-tool", value_name = "TOOL")]
    claude_allowed_tools: Vec<String>,
    /// Seconds Claude Code may take to start (answer the initialize request).
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    claude_start_timeout_secs: u64,
}

impl ClaudeArgs {
    pub(crate) fn config(self) -> agenthost_provider_claude::ClaudeConfig {
        let mut config = agenthost_provider_claude::ClaudeConfig::new(self.claude_bin);
        config.cli.model = self.claude_models.first().cloned();
        config.cli.models = self.claude_models;
        config.permission_mode = self.claude_permission_mode;
        config.allowed_tools = self.claude_allowed_tools;
        config.cli.start_timeout = std::time::Duration::from_secs(self.claude_start_timeout_secs);
        config
    }
}

/// The ACP agents to offer, each as provider `acp.NAME`.
#[derive(Debug, clap::Args)]
pub(crate) struct AcpArgs {
    /// A TOML file of ACP agents (`[[agent]]` tables: name, command, args, env, env_remove,
    /// working_directory, start_timeout_secs, cancel_grace_secs); each is offered as `acp.NAME`.
    #[arg(long = "acp-agents", value_name = "FILE")]
    acp_agents: Option<PathBuf>,
    /// An ACP agent that needs no arguments, as NAME=PROGRAM (repeatable): offered as
    /// `acp.NAME`.
    #[arg(long = "acp-agent", value_name = "NAME=PROGRAM")]
    acp_agent: Vec<String>,
}

impl AcpArgs {
    pub(crate) fn agents(&self) -> Result<Vec<agenthost_provider_acp::AcpAgentConfig>, CliError> {
        agenthost::acp::agents(self.acp_agents.as_deref(), &self.acp_agent, |name| {
            std::env::var_os(name)
        })
    }
}

/// Every agent's launch flags, as `serve`, `run` and `acp` take them.
#[derive(Debug, clap::Args)]
pub(crate) struct AgentFlags {
    #[command(flatten)]
    pub(crate) claude: ClaudeArgs,
    #[command(flatten)]
    pub(crate) codex: CodexArgs,
    #[command(flatten)]
    pub(crate) copilot: CopilotArgs,
    #[command(flatten)]
    pub(crate) acp: AcpArgs,
    /// A TOML price file for the cost estimates: models added to, or overriding, the built-in
    /// prices (see the README's "Cost" section).
    #[arg(long, value_name = "FILE")]
    pub(crate) prices: Option<PathBuf>,
}

impl AgentFlags {
    /// The price table `--prices` names, read and checked; `None` without the flag.
    pub(crate) fn prices(
        &self,
    ) -> Result<Option<agenthost_services::prices::PriceTable>, CliError> {
        let Some(path) = &self.prices else {
            return Ok(None);
        };
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| CliError::Usage(format!("cannot read the price file {shown}: {e}")))?;
        agenthost_services::prices::PriceTable::parse_file(&shown, &text)
            .map(Some)
            .map_err(|e| CliError::Usage(e.to_string()))
    }
}
