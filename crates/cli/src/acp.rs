//! The host's ACP agents (`--acp-agents FILE`, `--acp-agent NAME=PROGRAM`): reading their
//! configuration, and learning the models each offers.
//!
//! An agent's models are what its session config option of category `model` lists. They are
//! learned once by a probe — the agent started in a scratch directory of its own, one
//! `session/new`, the process stopped — and kept in the session database under
//! [`ACP_MODELS_KEY`] with the agent's launch fingerprint, so later starts ask again only when
//! the command, its arguments or its environment names change. A probe that fails is logged
//! with its reason and the agent is advertised with its default model only; nothing is kept,
//! so the next start tries again.

use std::ffi::OsString;
use std::path::Path;

use agenthost_provider_acp::{AcpAgentConfig, AgentsFile, discover_models};
use agenthost_store::Store;
use serde_json::{Map, Value, json};

use crate::CliError;

/// The host-value key of the discovered models: `{NAME: {fingerprint, models: [[value, name]]}}`.
pub const ACP_MODELS_KEY: &str = "acpModels";

/// The agents of `file` (if any) and of each `NAME=PROGRAM` in `short`, with the host's
/// variables read through `lookup`; a name given twice is an error.
pub fn agents(
    file: Option<&Path>,
    short: &[String],
    lookup: impl Fn(&str) -> Option<OsString>,
) -> Result<Vec<AcpAgentConfig>, CliError> {
    let mut agents = match file {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|error| {
                CliError::Usage(format!(
                    "cannot read the ACP agents file {}: {error}",
                    path.display()
                ))
            })?;
            AgentsFile::parse(&text)
                .and_then(|parsed| parsed.resolve(&lookup))
                .map_err(|error| CliError::Usage(format!("{}: {error}", path.display())))?
        }
        None => Vec::new(),
    };
    for spec in short {
        let agent = AcpAgentConfig::short(spec)
            .map_err(|error| CliError::Usage(format!("--acp-agent {error}")))?;
        if agents.iter().any(|known| known.name == agent.name) {
            return Err(CliError::Usage(format!(
                "ACP agent `{}` is configured twice",
                agent.name
            )));
        }
        agents.push(agent);
    }
    Ok(agents)
}

/// `agents` with the models each offers: kept from an earlier probe of the same launch, else
/// probed now (all at once). Agents whose models are set already are left as they are.
pub async fn with_models(mut agents: Vec<AcpAgentConfig>, store: &Store) -> Vec<AcpAgentConfig> {
    let mut kept = match store.host_value(ACP_MODELS_KEY) {
        Ok(Some(text)) => match serde_json::from_str::<Map<String, Value>>(&text) {
            Ok(kept) => kept,
            Err(error) => {
                tracing::info!(%error, "the kept ACP agent models are not JSON: probing again");
                Map::new()
            }
        },
        Ok(None) => Map::new(),
        Err(error) => {
            tracing::warn!(%error, "the kept ACP agent models could not be read");
            Map::new()
        }
    };
    let mut probes = Vec::new();
    for (index, agent) in agents.iter_mut().enumerate() {
        if !agent.models.is_empty() {
            continue;
        }
        match kept_models(&kept, agent) {
            Some(models) => agent.models = models,
            None => probes.push((index, agent.clone())),
        }
    }
    if probes.is_empty() {
        return agents;
    }
    let found = futures::future::join_all(probes.into_iter().map(|(index, agent)| async move {
        let found = probe(agent.clone()).await;
        (index, agent, found)
    }))
    .await;
    let mut changed = false;
    for (index, agent, found) in found {
        match found {
            Ok(models) => {
                tracing::info!(
                    agent = agent.provider_id(),
                    models = models.len(),
                    "learned the models of the ACP agent"
                );
                kept.insert(
                    agent.name.clone(),
                    json!({ "fingerprint": agent.fingerprint(), "models": models }),
                );
                changed = true;
                if let Some(slot) = agents.get_mut(index) {
                    slot.models = models;
                }
            }
            Err(error) => tracing::warn!(
                agent = agent.provider_id(),
                %error,
                "could not learn the models of the ACP agent: it is offered with its default \
                 model only"
            ),
        }
    }
    if changed {
        let text = Value::Object(kept).to_string();
        if let Err(error) = store.set_host_value(ACP_MODELS_KEY, Some(&text)) {
            tracing::warn!(%error, "the models of the ACP agents were not kept");
        }
    }
    agents
}

/// The models kept for `agent`, if they were learned from the same launch.
fn kept_models(kept: &Map<String, Value>, agent: &AcpAgentConfig) -> Option<Vec<(String, String)>> {
    let entry = kept.get(&agent.name)?;
    if entry.get("fingerprint")?.as_str()? != agent.fingerprint() {
        return None;
    }
    serde_json::from_value(entry.get("models")?.clone()).ok()
}

/// Probes `agent` in a scratch directory of its own, removed after.
async fn probe(agent: AcpAgentConfig) -> Result<Vec<(String, String)>, String> {
    let scratch = tempfile::Builder::new()
        .prefix("agenthost-acp-probe-")
        .tempdir()
        .map_err(|error| format!("no scratch directory: {error}"))?;
    discover_models(agent, scratch.path())
        .await
        .map_err(|error| error.to_string())
}
