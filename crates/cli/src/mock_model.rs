//! `agent-host mock-model`: the testkit's loopback mock model as a command, for trying the real
//! agent CLIs against `agent-host serve` without a vendor account (point `ANTHROPIC_BASE_URL` at
//! the printed URL).

use std::io::Write;
use std::net::SocketAddr;

use agenthost_testkit::{MockModel, MockModelConfig};

use crate::CliError;

/// Serves until Ctrl-C, after printing the base URL as the first line on stdout.
pub async fn run(listen: SocketAddr, config: MockModelConfig) -> Result<(), CliError> {
    let mock = MockModel::start_on(listen, config)
        .await
        .map_err(|e| CliError::Host(format!("cannot start the mock model on {listen}: {e}")))?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "{}", mock.base_url())
        .map_err(|e| CliError::Host(format!("cannot write to stdout: {e}")))?;
    stdout
        .flush()
        .map_err(|e| CliError::Host(format!("cannot write to stdout: {e}")))?;
    tracing::info!(address = %mock.addr(), "mock model serving");
    let _ = tokio::signal::ctrl_c().await;
    tracing::info!(requests = mock.requests().len(), "mock model shutting down");
    mock.shutdown().await;
    Ok(())
}
