//! Which ACP agents the host runs and how: [`AcpAgentConfig`] per agent, read from an agents file
//! ([`AgentsFile`], TOML) or the short form `NAME=PROGRAM` ([`AcpAgentConfig::short`]).
//!
//! ```toml
//! [[agent]]
//! name = "copilot"                      # advertised as agent `acp.copilot`
//! command = "copilot"                   # on the PATH, or a path
//! args = ["--acp", "--no-auto-update"]
//! env_remove = ["GITHUB_TOKEN"]
//! working_directory = "session"         # the default; or an absolute path
//! start_timeout_secs = 60
//! cancel_grace_secs = 5
//!
//! [agent.env]
//! COPILOT_OFFLINE = "true"
//! COPILOT_PROVIDER_API_KEY = { from_env = "MY_PROVIDER_KEY" }   # the host's variable
//! ```
//!
//! A name is lowercase `[a-z0-9]+` (it becomes part of a URI scheme, `acp.NAME`), unique in the
//! file. An environment value is a string, or `{ from_env = "VAR" }` naming a variable of the
//! host's environment so the file holds no secret; [`AgentsFile::resolve`] reads those and
//! refuses a variable that is not set.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use agenthost_provider_api::{AgentConfig, CliSettings, InvalidConfig};
use serde::Deserialize;

/// The provider id of ACP agent `name`: `acp.NAME`.
pub fn provider_id(name: &str) -> String {
    format!("{PROVIDER_PREFIX}{name}")
}

/// What every ACP agent's provider id starts with.
pub const PROVIDER_PREFIX: &str = "acp.";

/// Whether `name` can name an ACP agent: lowercase ASCII letters and digits, 1 to 32 of them.
pub fn is_valid_agent_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// Where an ACP agent works.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum WorkingDirectory {
    /// The session's working directory (the default): the agent's tools act on the project.
    #[default]
    Session,
    /// Always this absolute directory (the session's directory is still the ACP `cwd`).
    Fixed(PathBuf),
}

/// How the host runs one ACP agent.
#[derive(Debug, Clone)]
pub struct AcpAgentConfig {
    /// The agent's name (`acp.NAME` is its provider id).
    pub name: String,
    /// The command (`binary`), its arguments (`extra_args`), environment and timeouts.
    pub cli: CliSettings,
    /// Where the process starts.
    pub working_directory: WorkingDirectory,
    /// How long the agent may take to answer a request other than a prompt (`session/new`,
    /// `session/load`, `session/set_config_option`).
    pub request_timeout: Duration,
    /// The models the agent offers, as `(value, display name)`: learned by a probe
    /// (`agent-host` discovers them on first use) or set by the embedder. Empty: the agent's
    /// default model only.
    pub models: Vec<(String, String)>,
}

impl AcpAgentConfig {
    /// Agent `name` run as `command` with no arguments and default settings.
    pub fn new(name: &str, command: impl Into<PathBuf>) -> Self {
        Self {
            name: name.to_owned(),
            cli: CliSettings::new(command),
            working_directory: WorkingDirectory::Session,
            request_timeout: Duration::from_secs(60),
            models: Vec::new(),
        }
    }

    /// The short form `NAME=PROGRAM` (`--acp-agent`): an agent that needs no arguments.
    pub fn short(spec: &str) -> Result<Self, InvalidConfig> {
        let (name, program) = spec.split_once('=').ok_or_else(|| {
            InvalidConfig(format!(
                "`{spec}` is not NAME=PROGRAM (for example `gemini=gemini --acp` needs the agents \
                 file; `mine=/usr/local/bin/my-agent` does not)"
            ))
        })?;
        let config = Self::new(name.trim(), program.trim());
        config.validate()?;
        Ok(config)
    }

    /// The provider id, `acp.NAME`.
    pub fn provider_id(&self) -> String {
        provider_id(&self.name)
    }

    /// What identifies the agent's launch for the discovered-models cache: a change of
    /// command, arguments or environment names probes again.
    pub fn fingerprint(&self) -> String {
        let env: Vec<&str> = self.cli.env.iter().map(|(name, _)| name.as_str()).collect();
        serde_json::json!({
            "command": self.cli.binary.to_string_lossy(),
            "args": self.cli.extra_args,
            "env": env,
        })
        .to_string()
    }
}

impl AgentConfig for AcpAgentConfig {
    fn cli(&self) -> &CliSettings {
        &self.cli
    }

    fn validate(&self) -> Result<(), InvalidConfig> {
        if !is_valid_agent_name(&self.name) {
            return Err(InvalidConfig(format!(
                "ACP agent name `{}` must be 1 to 32 lowercase letters and digits ([a-z0-9]+): it \
                 becomes the provider id `acp.NAME`",
                self.name
            )));
        }
        self.cli.validate(&self.provider_id())?;
        if let WorkingDirectory::Fixed(dir) = &self.working_directory
            && !dir.is_absolute()
        {
            return Err(InvalidConfig(format!(
                "ACP agent `{}`: working_directory `{}` must be `session` or an absolute path",
                self.name,
                dir.display()
            )));
        }
        Ok(())
    }
}

/// An environment value in the agents file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum EnvValue {
    /// The value itself.
    Literal(String),
    /// The value of the host's variable `from_env`.
    FromHost {
        /// The host's variable.
        from_env: String,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileAgent {
    name: String,
    command: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, EnvValue>,
    #[serde(default)]
    env_remove: Vec<String>,
    #[serde(default)]
    working_directory: Option<String>,
    #[serde(default)]
    start_timeout_secs: Option<f64>,
    #[serde(default)]
    cancel_grace_secs: Option<f64>,
    #[serde(default)]
    request_timeout_secs: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileBody {
    #[serde(default)]
    agent: Vec<FileAgent>,
}

/// An agents file, read but with host variables not yet looked up.
#[derive(Debug)]
pub struct AgentsFile {
    agents: Vec<(AcpAgentConfig, Vec<(String, EnvValue)>)>,
}

fn seconds(name: &str, what: &str, value: Option<f64>) -> Result<Option<Duration>, InvalidConfig> {
    value
        .map(|secs| {
            Duration::try_from_secs_f64(secs)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    InvalidConfig(format!(
                        "ACP agent `{name}`: {what} must be a positive number of seconds, not {secs}"
                    ))
                })
        })
        .transpose()
}

impl AgentsFile {
    /// Reads an agents file's text (see the module docs); errors name the agent and the field.
    pub fn parse(text: &str) -> Result<Self, InvalidConfig> {
        let body: FileBody =
            toml::from_str(text).map_err(|error| InvalidConfig(format!("{error}")))?;
        if body.agent.is_empty() {
            return Err(InvalidConfig(
                "no agent: add one `[[agent]]` table with a name and a command".to_owned(),
            ));
        }
        let mut agents: Vec<(AcpAgentConfig, Vec<(String, EnvValue)>)> = Vec::new();
        for agent in body.agent {
            if agents.iter().any(|(known, _)| known.name == agent.name) {
                return Err(InvalidConfig(format!(
                    "ACP agent `{}` is defined twice",
                    agent.name
                )));
            }
            if agent.command.trim().is_empty() {
                return Err(InvalidConfig(format!(
                    "ACP agent `{}`: the command is empty",
                    agent.name
                )));
            }
            let mut config = AcpAgentConfig::new(&agent.name, agent.command);
            config.cli.extra_args = agent.args;
            config.cli.env_remove = agent.env_remove;
            config.working_directory = match agent.working_directory.as_deref() {
                None | Some("session") => WorkingDirectory::Session,
                Some(dir) => WorkingDirectory::Fixed(PathBuf::from(dir)),
            };
            let name = agent.name.as_str();
            if let Some(timeout) = seconds(name, "start_timeout_secs", agent.start_timeout_secs)? {
                config.cli.start_timeout = timeout;
            }
            if let Some(grace) = seconds(name, "cancel_grace_secs", agent.cancel_grace_secs)? {
                config.cli.cancel_grace = grace;
            }
            if let Some(timeout) =
                seconds(name, "request_timeout_secs", agent.request_timeout_secs)?
            {
                config.request_timeout = timeout;
            }
            config.validate()?;
            agents.push((config, agent.env.into_iter().collect()));
        }
        Ok(Self { agents })
    }

    /// The agents, with each `{ from_env = "VAR" }` read through `lookup` (the host's
    /// environment); a variable that is not set is an error naming the agent and both variables.
    pub fn resolve(
        self,
        lookup: impl Fn(&str) -> Option<OsString>,
    ) -> Result<Vec<AcpAgentConfig>, InvalidConfig> {
        self.agents
            .into_iter()
            .map(|(mut config, env)| {
                for (name, value) in env {
                    let value = match value {
                        EnvValue::Literal(value) => OsString::from(value),
                        EnvValue::FromHost { from_env } => lookup(&from_env).ok_or_else(|| {
                            InvalidConfig(format!(
                                "ACP agent `{}`: {name} is to come from the host's variable \
                                     {from_env}, which is not set",
                                config.name
                            ))
                        })?,
                    };
                    config.cli.set_env(name, value);
                }
                Ok(config)
            })
            .collect()
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
