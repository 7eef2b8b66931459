//! [`CheckpointConfig`]: the commit identity, the untracked-file size cap, the time budget and
//! the file watcher switch.

use std::time::Duration;

/// The fixed identity written as author and committer of every checkpoint commit.
///
/// The user's configured identity is never read: a machine without `user.name` still gets
/// checkpoints (VS Code's agent host fails there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The name, e.g. `Agent Host`.
    pub name: String,
    /// The e-mail address, e.g. `agent-host@localhost`.
    pub email: String,
}

impl Default for Identity {
    fn default() -> Self {
        Self {
            name: "Agent Host".to_owned(),
            email: "agent-host@localhost".to_owned(),
        }
    }
}

/// Where commit timestamps come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CommitTime {
    /// The current time, UTC offset `+0000`.
    #[default]
    Now,
    /// A fixed number of seconds since the Unix epoch (tests: stable commit ids).
    Fixed(i64),
}

/// Configuration of the checkpoint service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointConfig {
    /// Author and committer of checkpoint commits.
    pub identity: Identity,
    /// Commit timestamps.
    pub commit_time: CommitTime,
    /// Untracked files larger than this many bytes are left out of captures and reported.
    /// Tracked files are always captured.
    pub max_untracked_file_bytes: u64,
    /// Time budget of one operation (one capture of all repositories, one changeset, …). Work
    /// that exceeds it is abandoned and counts as "no checkpoint".
    pub budget: Duration,
    /// Watch work trees for changes (inotify, Linux only) so a capture examines only the paths
    /// that changed. Off, or when watching fails, every capture runs a full status pass.
    pub watch: bool,
}

impl CheckpointConfig {
    /// 10 MiB: larger untracked files (build outputs, archives) are skipped by default.
    pub const DEFAULT_MAX_UNTRACKED_FILE_BYTES: u64 = 10 * 1024 * 1024;
    /// 30 s per operation: generous for large repositories, short enough to bound a stuck call.
    pub const DEFAULT_BUDGET: Duration = Duration::from_secs(30);
}

impl Default for CheckpointConfig {
    fn default() -> Self {
        Self {
            identity: Identity::default(),
            commit_time: CommitTime::Now,
            max_untracked_file_bytes: Self::DEFAULT_MAX_UNTRACKED_FILE_BYTES,
            budget: Self::DEFAULT_BUDGET,
            watch: true,
        }
    }
}
