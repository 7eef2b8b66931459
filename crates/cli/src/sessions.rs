//! `agent-host sessions`: the session database, offline.

use std::path::Path;

use agenthost_checkpoint::{CheckpointConfig, Checkpointer, MemoryLedger};
use agenthost_protocol::SessionUri;

use crate::host::{DATABASE_FILE, open_store};

/// Prints every stored session, newest first: URI, provider, title, last modification.
pub fn list(data_dir: &Path) -> Result<(), String> {
    let store = existing_store(data_dir)?;
    let sessions = store.sessions().map_err(|e| e.to_string())?;
    if sessions.is_empty() {
        println!("no sessions in {}", data_dir.display());
    }
    for session in sessions {
        println!(
            "{}\t{}\t{}\t{}",
            session.uri, session.provider, session.modified_at, session.title
        );
    }
    Ok(())
}

/// Deletes a session and its history for good. A running host keeps what it has in memory until
/// it restarts: to delete from a running host, send it `x-deleteSession`.
pub fn delete(data_dir: &Path, session: &str) -> Result<(), String> {
    let uri = SessionUri::parse(session).map_err(|e| e.to_string())?;
    let store = existing_store(data_dir)?;
    let directories: Vec<std::path::PathBuf> = store
        .session(&uri)
        .map_err(|e| e.to_string())?
        .map(|record| record.working_directories)
        .unwrap_or_default()
        .iter()
        .filter_map(|d| agenthost_protocol::uri::file_uri_to_path(d).ok())
        .collect();
    if store.delete_session(&uri).map_err(|e| e.to_string())? {
        // The session's checkpoint refs go too (a missing repository or ref is fine).
        let checkpoints = Checkpointer::new(
            CheckpointConfig::default(),
            std::sync::Arc::new(MemoryLedger::new()),
        );
        let refs = checkpoints.delete_all(&uri, &directories);
        println!("deleted {uri} ({refs} checkpoint refs)");
        Ok(())
    } else {
        Err(format!("no session {uri} in {}", data_dir.display()))
    }
}

fn existing_store(data_dir: &Path) -> Result<agenthost_store::Store, String> {
    if !data_dir.join(DATABASE_FILE).exists() {
        return Err(format!(
            "no session database in {} (expected {DATABASE_FILE})",
            data_dir.display()
        ));
    }
    open_store(Some(data_dir))
}
