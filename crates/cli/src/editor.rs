//! `agent-host acp`: the host as an Agent Client Protocol agent on stdin and stdout, for
//! editors (Zed, JetBrains IDEs) that start their agent as a child process.
//!
//! Like `run`, it is a client of a host: one started in this process over the data directory
//! (and holding it, so a `serve` on the same directory is refused and vice versa), or a running
//! `serve` given with `--connect`, whose sessions it then shares with VS Code and the CLI. Its
//! stdout carries ACP alone; logs go to stderr. A host that cannot start or refuses the token is
//! not a silent exit: the editor's requests are answered with that message, so the editor shows
//! it.

use crate::CliError;
use crate::host::LocalHost;
use crate::run::Target;

/// `agent-host acp`: serves ACP on stdin/stdout until the editor closes stdin. `target` is where
/// the host is, or why there is none (a bad flag, say).
/// `provider` is the agent new sessions use (`None`: the host's first).
pub async fn command(
    target: Result<Target, CliError>,
    provider: Option<String>,
) -> Result<(), CliError> {
    let (host, local) = match target {
        Err(error) => (Err(error), None),
        Ok(Target::Connect(url)) => (crate::run::connect_host(&url, "agent-host-acp").await, None),
        Ok(Target::Start(options)) => match LocalHost::start(*options).await {
            Ok(local) => (
                crate::run::connect_host(local.url(), "agent-host-acp").await,
                Some(local),
            ),
            Err(error) => (Err(error), None),
        },
    };
    let host = host.map_err(|error| {
        tracing::error!(%error, "no agent host: every session request is answered with this");
        error.to_string()
    });
    let connection = host.as_ref().ok().cloned();
    let options = agenthost_acp_agent::AgentOptions {
        provider,
        agent_version: env!("CARGO_PKG_VERSION").to_owned(),
    };
    agenthost_acp_agent::serve(host, options, tokio::io::stdin(), tokio::io::stdout()).await;
    if let Some(connection) = connection {
        connection.close().await;
    }
    if let Some(local) = local {
        local.stop().await;
    }
    Ok(())
}
