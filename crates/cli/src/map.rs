//! `agent-host map --provider NAME FILE`: the AHP actions an agent transcript maps to.
//!
//! The transcript is what the agent CLI printed on stdout. It is mapped as one protocol turn
//! (`turn-1`) of a session `ahp-session:/map`; each resulting signal is printed as one JSON
//! object per line (actions as their wire JSON, see `agenthost_provider_api::signal_json`).

use std::io::{Read, Write};
use std::path::Path;

use agenthost_protocol::{SafeId, SessionUri};
use agenthost_provider_api::signal_json;

/// The providers whose transcripts can be mapped.
pub const MAPPABLE: &[&str] = &["claude", "codex", "copilot"];

/// The turn id the transcript is mapped as.
pub const TURN_ID: &str = "turn-1";

/// Maps `text` (a `provider` transcript) to one JSON line per signal.
pub fn map_text(provider: &str, text: &str) -> Result<Vec<String>, String> {
    let session =
        SessionUri::canonical(SafeId::new("map").map_err(|e| format!("internal session id: {e}"))?);
    let signals = match provider {
        "claude" => agenthost_provider_claude::map_transcript(session, TURN_ID, text)
            .map_err(|e| e.to_string())?,
        // `codex app-server` output and `codex exec --json` output are told apart by their lines.
        "codex" => agenthost_provider_codex::map_transcript(session, TURN_ID, text)
            .map_err(|e| e.to_string())?,
        // Decoded headless frames and `copilot -p --output-format json` lines alike.
        "copilot" => agenthost_provider_copilot::map_transcript(session, TURN_ID, text)
            .map_err(|e| e.to_string())?,
        other => {
            return Err(format!(
                "cannot map transcripts of provider {other:?} (mappable: {})",
                MAPPABLE.join(", ")
            ));
        }
    };
    signals
        .iter()
        .map(|signal| serde_json::to_string(&signal_json(signal)).map_err(|e| e.to_string()))
        .collect()
}

/// Reads `file` (`-`: stdin) and prints its mapping to stdout.
pub fn run(provider: &str, file: &Path) -> Result<(), String> {
    let text = if file == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| format!("cannot read stdin: {e}"))?;
        text
    } else {
        std::fs::read_to_string(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?
    };
    let lines = map_text(provider, &text)?;
    let mut stdout = std::io::stdout().lock();
    for line in lines {
        writeln!(stdout, "{line}").map_err(|e| format!("cannot write to stdout: {e}"))?;
    }
    Ok(())
}
