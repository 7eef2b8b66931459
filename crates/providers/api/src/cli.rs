//! [`CliSettings`]: the launch settings every agent-CLI provider shares.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use agenthost_protocol::ahp_types::state::SessionModelInfo;

use crate::{InvalidConfig, listed_models};

/// The model id meaning "whatever the CLI uses by default": listed as "Default model" and never
/// passed to the CLI.
pub const DEFAULT_MODEL: &str = "default";

/// How an agent CLI is launched, whichever agent it is: the executable, the models it is offered,
/// its command line and environment additions, and how long it may take to start, to wind a
/// cancelled turn down and to exit.
///
/// Environment values are passed to the child and never logged: [`fmt::Debug`] shows variable
/// names only.
#[derive(Clone, PartialEq, Eq)]
pub struct CliSettings {
    /// The executable.
    pub binary: PathBuf,
    /// The model of a conversation whose client selects none (`None`: the CLI's default).
    pub model: Option<String>,
    /// The models advertised to clients. Empty: one entry, [`DEFAULT_MODEL`].
    pub models: Vec<String>,
    /// Extra arguments appended to the command line.
    pub extra_args: Vec<String>,
    /// Variables set on the child (base URLs, keys, …); the host's own environment is inherited
    /// otherwise.
    pub env: Vec<(String, OsString)>,
    /// Variables removed from the child's environment.
    pub env_remove: Vec<String>,
    /// How long the CLI may take to answer its first request after it starts.
    pub start_timeout: Duration,
    /// How long a cancelled turn may take to wind down after the agent is asked to stop before
    /// the process is terminated.
    pub cancel_grace: Duration,
    /// How long the process may take to exit after `SIGTERM` (or after its input closes) before
    /// it is killed.
    pub kill_grace: Duration,
}

impl CliSettings {
    /// Defaults for the executable at `binary`: no extra arguments or variables, 30 s to start,
    /// 5 s to wind a cancelled turn down, 3 s to exit.
    pub fn new(binary: impl Into<PathBuf>) -> Self {
        Self {
            binary: binary.into(),
            model: None,
            models: Vec::new(),
            extra_args: Vec::new(),
            env: Vec::new(),
            env_remove: Vec::new(),
            start_timeout: Duration::from_secs(30),
            cancel_grace: Duration::from_secs(5),
            kill_grace: Duration::from_secs(3),
        }
    }

    /// Adds one environment variable of the child.
    pub fn set_env(&mut self, name: impl Into<String>, value: impl Into<OsString>) {
        self.env.push((name.into(), value.into()));
    }

    /// Refuses what no CLI could run with: an empty executable path (`command` names the CLI in
    /// the message).
    pub fn validate(&self, command: &str) -> Result<(), InvalidConfig> {
        if self.binary.as_os_str().is_empty() {
            return Err(InvalidConfig(format!(
                "the path of the `{command}` executable is empty"
            )));
        }
        Ok(())
    }

    /// The models provider `provider` lists (see [`listed_models`]).
    pub fn listed_models(&self, provider: &str) -> Vec<SessionModelInfo> {
        listed_models(provider, DEFAULT_MODEL, &self.models)
    }

    /// The model a turn runs with: the turn's choice, else the chat's (`chat_default`), else
    /// [`Self::model`]; `None` when that is [`DEFAULT_MODEL`] or nothing (the CLI's default).
    pub fn model_for(&self, turn: Option<&str>, chat_default: Option<&str>) -> Option<String> {
        turn.or(chat_default)
            .or(self.model.as_deref())
            .filter(|model| *model != DEFAULT_MODEL)
            .map(str::to_owned)
    }
}

/// The settings of an agent-CLI provider: the shared [`CliSettings`] and the agent's own, which
/// it checks before any process starts.
pub trait AgentConfig: fmt::Debug + Send + Sync + 'static {
    /// The shared launch settings.
    fn cli(&self) -> &CliSettings;

    /// Refuses settings the agent would refuse; the message names the bad one.
    fn validate(&self) -> Result<(), InvalidConfig>;
}

impl fmt::Debug for CliSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env_names: Vec<&str> = self.env.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("CliSettings")
            .field("binary", &self.binary)
            .field("model", &self.model)
            .field("models", &self.models)
            .field("extra_args", &self.extra_args)
            .field("env", &env_names)
            .field("env_remove", &self.env_remove)
            .field("start_timeout", &self.start_timeout)
            .field("cancel_grace", &self.cancel_grace)
            .field("kill_grace", &self.kill_grace)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_names_variables_but_never_shows_their_values() {
        let mut settings = CliSettings::new("agent");
        settings.set_env("API_KEY", "sk-secret");
        let shown = format!("{settings:?}");
        assert!(shown.contains("API_KEY"), "{shown}");
        assert!(!shown.contains("sk-secret"), "{shown}");
    }

    #[test]
    fn an_empty_executable_path_is_refused_by_name() {
        let error = CliSettings::new("").validate("agent").unwrap_err();
        assert_eq!(error.0, "the path of the `agent` executable is empty");
        assert_eq!(CliSettings::new("agent").validate("agent"), Ok(()));
    }

    #[test]
    fn a_turn_model_wins_over_the_chat_and_the_configured_default() {
        let mut settings = CliSettings::new("agent");
        settings.model = Some("configured".into());
        assert_eq!(
            settings.model_for(Some("turn"), Some("chat")).as_deref(),
            Some("turn")
        );
        assert_eq!(
            settings.model_for(None, Some("chat")).as_deref(),
            Some("chat")
        );
        assert_eq!(
            settings.model_for(None, None).as_deref(),
            Some("configured")
        );
        assert_eq!(settings.model_for(Some(DEFAULT_MODEL), None), None);
        assert_eq!(CliSettings::new("agent").model_for(None, None), None);
    }
}
