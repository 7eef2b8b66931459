//! [`CliError`]: why an `agent-host` command failed.

/// Why an `agent-host` command failed, by what the person at the terminal can do about it.
/// Every message is written for them; `main` prints it after `agent-host: `.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// A flag, an argument or a file named on the command line is not valid (or names what does
    /// not exist: a session, a token, a provider).
    #[error("{0}")]
    Usage(String),
    /// The data directory's database failed.
    #[error(transparent)]
    Store(#[from] agenthost_store::StoreError),
    /// A local file or directory, or the terminal, could not be read or written.
    #[error("{0}")]
    Io(String),
    /// The host could not be started, listened on or reached, or it refused a request.
    #[error("{0}")]
    Host(String),
    /// An agent could not be used: its CLI is missing or failed, or its output is unreadable.
    #[error("{0}")]
    Agent(String),
    /// The command was interrupted (a second Ctrl-C, or the terminal closed).
    #[error("interrupted")]
    Interrupted,
    /// A session, chat or turn id given on the command line is not valid.
    #[error(transparent)]
    Uri(#[from] agenthost_protocol::UriError),
    /// The connection to the host failed or the host refused a request.
    #[error(transparent)]
    Client(#[from] agenthost_client::ClientError),
    /// The AHP client failed (connecting, a request, the host's answer).
    #[error(transparent)]
    Ahp(#[from] agenthost_client::ahp::ClientError),
    /// The host could not be composed (its providers, contributions or store).
    #[error(transparent)]
    Service(#[from] agenthost_service::ServiceError),
    /// The host's side effects could not start.
    #[error(transparent)]
    Orchestrator(#[from] agenthost_side_effects::OrchestratorError),
    /// The server could not listen or serve.
    #[error(transparent)]
    Server(#[from] agenthost_server::ServerError),
    /// The connection token could not be made or is not valid.
    #[error(transparent)]
    Token(#[from] agenthost_server::TokenError),
    /// The scripted provider's script is not valid.
    #[error(transparent)]
    Script(#[from] agenthost_provider_scripted::ScriptError),
}

impl CliError {
    /// A [`CliError::Usage`] with `message`.
    pub fn usage(message: impl Into<String>) -> Self {
        Self::Usage(message.into())
    }

    /// A [`CliError::Io`]: `what` failed with `error`.
    pub fn io(what: impl std::fmt::Display, error: impl std::fmt::Display) -> Self {
        Self::Io(format!("{what}: {error}"))
    }

    /// A [`CliError::Host`] with `message`.
    pub fn host(message: impl Into<String>) -> Self {
        Self::Host(message.into())
    }
}
