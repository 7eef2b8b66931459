//! How the provider launches `claude`.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use agenthost_provider_api::InvalidConfig;

/// The permission modes `claude --permission-mode` accepts.
pub const PERMISSION_MODES: &[&str] = &["default", "acceptEdits", "plan", "bypassPermissions"];

/// Launch settings of the Claude Code provider.
///
/// Environment values are passed to the child and never logged: [`fmt::Debug`] shows variable
/// names only.
#[derive(Clone)]
pub struct ClaudeConfig {
    /// The `claude` executable.
    pub binary: PathBuf,
    /// `--model`, when the client selects none.
    pub model: Option<String>,
    /// The models advertised to clients (ids `claude` accepts for `--model`). Empty: one entry
    /// named `default`, which launches without `--model`.
    pub models: Vec<String>,
    /// `--permission-mode` (one of [`PERMISSION_MODES`]).
    pub permission_mode: Option<String>,
    /// `--allowedTools`: tools the CLI runs without asking.
    pub allowed_tools: Vec<String>,
    /// `--include-partial-messages`: live text and tool-argument deltas.
    pub partial_messages: bool,
    /// Extra arguments appended to the command line.
    pub extra_args: Vec<String>,
    /// Variables set on the child (`ANTHROPIC_BASE_URL`, keys, …); the host's own environment is
    /// inherited otherwise.
    pub env: Vec<(String, OsString)>,
    /// Variables removed from the child's environment.
    pub env_remove: Vec<String>,
    /// How long the CLI may take to answer the `initialize` request.
    pub start_timeout: Duration,
    /// How long a cancelled turn may take to wind down after the interrupt request before the
    /// process group is terminated.
    pub interrupt_grace: Duration,
    /// How long the process may take to exit after `SIGTERM` (or after closing its output)
    /// before it is killed.
    pub kill_grace: Duration,
}

impl ClaudeConfig {
    /// Defaults for the executable at `binary`: partial messages on, 30 s to start, 5 s for an
    /// interrupt, 3 s to exit.
    pub fn new(binary: impl Into<PathBuf>) -> Self {
        Self {
            binary: binary.into(),
            model: None,
            models: Vec::new(),
            permission_mode: None,
            allowed_tools: Vec::new(),
            partial_messages: true,
            extra_args: Vec::new(),
            env: Vec::new(),
            env_remove: Vec::new(),
            start_timeout: Duration::from_secs(30),
            interrupt_grace: Duration::from_secs(5),
            kill_grace: Duration::from_secs(3),
        }
    }

    /// Sets one environment variable of the child.
    pub fn with_env(mut self, name: impl Into<String>, value: impl Into<OsString>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Checks the settings a user can get wrong before any process starts.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        self.check().map_err(InvalidConfig)
    }

    fn check(&self) -> Result<(), String> {
        if let Some(mode) = &self.permission_mode
            && !PERMISSION_MODES.contains(&mode.as_str())
        {
            return Err(format!(
                "unknown Claude permission mode `{mode}` (expected one of {})",
                PERMISSION_MODES.join(", ")
            ));
        }
        if self.binary.as_os_str().is_empty() {
            return Err("the path of the `claude` executable is empty".to_owned());
        }
        Ok(())
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
        if let Some(model) = model.or(self.model.as_deref())
            && model != DEFAULT_MODEL
        {
            args.extend(["--model".to_owned(), model.to_owned()]);
        }
        if let Some(session) = resume {
            args.extend(["--resume".to_owned(), session.to_owned()]);
        }
        args.extend(self.extra_args.iter().cloned());
        args
    }
}

/// The model id meaning "whatever `claude` uses by default".
pub const DEFAULT_MODEL: &str = "default";

impl fmt::Debug for ClaudeConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env_names: Vec<&str> = self.env.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("ClaudeConfig")
            .field("binary", &self.binary)
            .field("model", &self.model)
            .field("models", &self.models)
            .field("permission_mode", &self.permission_mode)
            .field("allowed_tools", &self.allowed_tools)
            .field("partial_messages", &self.partial_messages)
            .field("extra_args", &self.extra_args)
            .field("env", &env_names)
            .field("env_remove", &self.env_remove)
            .field("start_timeout", &self.start_timeout)
            .field("interrupt_grace", &self.interrupt_grace)
            .field("kill_grace", &self.kill_grace)
            .finish()
    }
}
