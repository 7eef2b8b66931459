//! How the provider launches `claude`.

use std::ffi::OsString;
use std::path::PathBuf;

pub use agenthost_provider_api::DEFAULT_MODEL;
use agenthost_provider_api::{AgentConfig, CliSettings, InvalidConfig};

/// The permission modes `claude --permission-mode` accepts.
pub const PERMISSION_MODES: &[&str] = &["default", "acceptEdits", "plan", "bypassPermissions"];

/// Launch settings of the Claude Code provider: the shared [`CliSettings`] and Claude's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaudeConfig {
    /// The executable, models, command line, environment and time limits
    /// ([`CliSettings::start_timeout`] bounds the `initialize` request,
    /// [`CliSettings::cancel_grace`] the wind-down after an interrupt request).
    pub cli: CliSettings,
    /// `--permission-mode` (one of [`PERMISSION_MODES`]).
    pub permission_mode: Option<String>,
    /// `--allowedTools`: tools the CLI runs without asking.
    pub allowed_tools: Vec<String>,
    /// `--include-partial-messages`: live text and tool-argument deltas.
    pub partial_messages: bool,
}

impl ClaudeConfig {
    /// Defaults for the executable at `binary`: partial messages on, and the [`CliSettings`]
    /// defaults (30 s to start, 5 s for an interrupt, 3 s to exit).
    pub fn new(binary: impl Into<PathBuf>) -> Self {
        Self {
            cli: CliSettings::new(binary),
            permission_mode: None,
            allowed_tools: Vec::new(),
            partial_messages: true,
        }
    }

    /// Sets one environment variable of the child.
    pub fn with_env(mut self, name: impl Into<String>, value: impl Into<OsString>) -> Self {
        self.cli.set_env(name, value);
        self
    }

    /// The command line for a conversation, resuming CLI session `resume` when given.
    pub fn args(&self, model: Option<&str>, resume: Option<&str>) -> Vec<String> {
        self.args_in_mode(model, resume, false)
    }

    /// [`Self::args`] for a conversation in plan mode (`plan`: `--permission-mode plan`, in
    /// place of the configured permission mode) or not.
    pub fn args_in_mode(
        &self,
        model: Option<&str>,
        resume: Option<&str>,
        plan: bool,
    ) -> Vec<String> {
        let mut args: Vec<String> = [
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-prompt-tool",
            "stdio",
        ]
        .iter()
        .map(|arg| (*arg).to_owned())
        .collect();
        if self.partial_messages {
            args.push("--include-partial-messages".to_owned());
        }
        if plan {
            args.extend(["--permission-mode".to_owned(), "plan".to_owned()]);
        } else if let Some(mode) = &self.permission_mode {
            args.extend(["--permission-mode".to_owned(), mode.clone()]);
        }
        if !self.allowed_tools.is_empty() {
            args.extend(["--allowedTools".to_owned(), self.allowed_tools.join(",")]);
        }
        if let Some(model) = model.or(self.cli.model.as_deref())
            && model != DEFAULT_MODEL
        {
            args.extend(["--model".to_owned(), model.to_owned()]);
        }
        if let Some(session) = resume {
            args.extend(["--resume".to_owned(), session.to_owned()]);
        }
        args.extend(self.cli.extra_args.iter().cloned());
        args
    }
}

impl AgentConfig for ClaudeConfig {
    fn cli(&self) -> &CliSettings {
        &self.cli
    }

    fn validate(&self) -> Result<(), InvalidConfig> {
        if let Some(mode) = &self.permission_mode
            && !PERMISSION_MODES.contains(&mode.as_str())
        {
            return Err(InvalidConfig(format!(
                "unknown Claude permission mode `{mode}` (expected one of {})",
                PERMISSION_MODES.join(", ")
            )));
        }
        self.cli.validate("claude")
    }
}
