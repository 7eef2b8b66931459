//! The local discovery entry of VS Code (optional, off by default): one JSON file
//! announcing this host in `<VS Code user data>/agent-host/local-endpoint/entries/`, so VS Code's
//! SSH/WSL discovery (and other readers of that registry) can find a host on the machine without
//! the user typing its URL. `agent-host serve --vscode-discovery` writes it; it is removed when
//! the [`DiscoveryEntry`] is dropped (at shutdown).
//!
//! The entry (registry schema 2) is
//! `{"version": 2, "type": "standalone", "pid", "instanceId", "protocolVersion",
//! "connectionToken", "endpoint": {"type": "tcp", "host", "port"}}`, written with mode 0600 (it
//! holds the token; clients must still present it as `?tkn=`) under the name
//! `<hex SHA-256 of type NUL pid NUL instanceId>.json`. *Unverified against a VS Code build:* the
//! name of the schema field, the hex encoding of the file name and how readers compare
//! `protocolVersion` have not been checked against VS Code's own reader yet.

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde_json::json;
use sha2::{Digest as _, Sha256};

use agenthost_server::Token;

/// The registry's schema version.
pub const REGISTRY_SCHEMA: u32 = 2;

/// The entry type of a host that is not VS Code's editor-embedded one.
pub const ENTRY_TYPE: &str = "standalone";

/// The protocol version announced: VS Code's label of the wire format this host speaks.
pub const ANNOUNCED_PROTOCOL_VERSION: &str = "0.10.0";

/// The registry directory below a VS Code user-data directory.
pub fn entries_dir(user_data_dir: &Path) -> PathBuf {
    user_data_dir
        .join("agent-host")
        .join("local-endpoint")
        .join("entries")
}

/// VS Code's default user-data directory on this platform (`~/.config/Code` on Linux,
/// `~/Library/Application Support/Code` on macOS, `%APPDATA%\Code` on Windows); `None` when the
/// home directory is unknown.
pub fn default_vscode_user_data_dir() -> Option<PathBuf> {
    let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if cfg!(windows) {
        return non_empty("APPDATA").map(|base| PathBuf::from(base).join("Code"));
    }
    let home = non_empty("HOME").map(PathBuf::from)?;
    if cfg!(target_os = "macos") {
        return Some(home.join("Library/Application Support/Code"));
    }
    let config = non_empty("XDG_CONFIG_HOME").map_or_else(|| home.join(".config"), PathBuf::from);
    Some(config.join("Code"))
}

/// A published entry; dropping it removes the file.
#[derive(Debug)]
pub struct DiscoveryEntry {
    path: PathBuf,
}

impl DiscoveryEntry {
    /// Writes the entry for a host listening on `endpoint` with `token` into `entries_dir`
    /// (created when missing).
    pub fn publish(
        entries_dir: &Path,
        endpoint: SocketAddr,
        token: &Token,
    ) -> std::io::Result<Self> {
        let pid = std::process::id();
        let instance_id = instance_id()?;
        let name = file_name(ENTRY_TYPE, pid, &instance_id);
        let entry = json!({
            "version": REGISTRY_SCHEMA,
            "type": ENTRY_TYPE,
            "pid": pid,
            "instanceId": instance_id,
            "protocolVersion": ANNOUNCED_PROTOCOL_VERSION,
            "connectionToken": token.as_str(),
            "endpoint": { "type": "tcp", "host": endpoint.ip().to_string(),
                          "port": endpoint.port() },
        });
        std::fs::create_dir_all(entries_dir)?;
        let path = entries_dir.join(name);
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&path)?;
        let written = file
            .write_all(entry.to_string().as_bytes())
            .and_then(|()| file.sync_all());
        if let Err(error) = written {
            let _ = std::fs::remove_file(&path);
            return Err(error);
        }
        Ok(Self { path })
    }

    /// Where the entry was written.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for DiscoveryEntry {
    fn drop(&mut self) {
        if let Err(error) = std::fs::remove_file(&self.path) {
            tracing::warn!(path = %self.path.display(), %error, "could not remove the discovery entry");
        }
    }
}

/// `<hex SHA-256 of "<type>\0<pid>\0<instanceId>">.json`.
fn file_name(entry_type: &str, pid: u32, instance_id: &str) -> String {
    let digest = Sha256::digest(format!("{entry_type}\0{pid}\0{instance_id}").as_bytes());
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("{hex}.json")
}

/// A fresh random instance id (UUID v4 text).
fn instance_id() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    ))
}

#[cfg(test)]
#[path = "discovery_tests.rs"]
mod tests;
