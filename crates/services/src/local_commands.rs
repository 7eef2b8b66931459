//! [`LocalCommands`]: host commands typed into a chat (`/rename`), answered without an agent.

use crate::title::is_hidden;

/// The longest title `/rename` accepts, in characters.
pub const MAX_RENAME_CHARS: usize = 200;

/// A command the host recognised in a message.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LocalCommand {
    /// `/rename <title>`: rename the chat. The title is trimmed, whitespace collapsed and
    /// invisible characters removed.
    Rename {
        /// The new title.
        title: String,
    },
    /// A recognised command that cannot run as typed. The turn is still handled by the host
    /// (the message must not reach the agent); the error is the response to show.
    Invalid {
        /// The command's name, without the slash (`rename`).
        command: &'static str,
        /// What is wrong.
        error: LocalCommandError,
    },
}

impl LocalCommand {
    /// The title the command suggests, for the title controller.
    pub fn suggested_title(&self) -> Option<&str> {
        match self {
            Self::Rename { title } => Some(title),
            Self::Invalid { .. } => None,
        }
    }
}

/// Why a recognised command cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LocalCommandError {
    /// `/rename` without a title.
    #[error("`/rename` needs a title: type `/rename <new title>`")]
    EmptyTitle,
    /// `/rename` with a title over [`MAX_RENAME_CHARS`].
    #[error("that title is {chars} characters long; `/rename` accepts at most {max}")]
    TitleTooLong {
        /// The title's length.
        chars: usize,
        /// The limit.
        max: usize,
    },
}

/// Host commands, offered every user-typed message before any guard (the `localCommand`
/// contribution, order 50). Synchronous: it runs inside the admission gate.
///
/// The default handles `/rename` only. To add commands, implement this trait on a type that
/// tries its own commands first and falls back to [`DefaultLocalCommands`], and register it
/// as `dyn LocalCommands` instead of the default.
pub trait LocalCommands: Send + Sync {
    /// The command `text` is, or `None` when it is not a host command (it goes to the agent).
    fn try_handle(&self, text: &str) -> Option<LocalCommand>;
}

/// `/rename <title>` and nothing else. The command word is exact and case-sensitive
/// (`/renamed`, `/Rename` are not commands) and must start the message (leading whitespace
/// aside); the title is the rest of the message.
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultLocalCommands;

impl LocalCommands for DefaultLocalCommands {
    fn try_handle(&self, text: &str) -> Option<LocalCommand> {
        let rest = text.trim_start().strip_prefix("/rename")?;
        if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
            return None;
        }
        Some(match parse_title(rest) {
            Ok(title) => LocalCommand::Rename { title },
            Err(error) => LocalCommand::Invalid {
                command: "rename",
                error,
            },
        })
    }
}

fn parse_title(rest: &str) -> Result<String, LocalCommandError> {
    let visible: String = rest
        .chars()
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .filter(|c| !is_hidden(*c))
        .collect();
    let title = visible.split_whitespace().collect::<Vec<_>>().join(" ");
    let chars = title.chars().count();
    if chars == 0 {
        Err(LocalCommandError::EmptyTitle)
    } else if chars > MAX_RENAME_CHARS {
        Err(LocalCommandError::TitleTooLong {
            chars,
            max: MAX_RENAME_CHARS,
        })
    } else {
        Ok(title)
    }
}

#[cfg(test)]
#[path = "local_commands_tests.rs"]
mod tests;
