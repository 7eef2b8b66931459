//! `agent-host diff` and `agent-host rollback`: a session's checkpoints from a terminal, through
//! the host's `x-checkpoint/diff` and `x-checkpoint/rollback` commands (see the server crate).

use std::io::Write;

use agenthost_client::HostConnection;
use serde_json::{Value, json};

use crate::term::Style;

use crate::CliError;

pub use agenthost_service::checkpoint_commands::{DiffResult as Diff, RollbackResult as Rollback};

async fn connect(url: &str) -> Result<HostConnection, CliError> {
    crate::run::connect_host(url, "agent-host-checkpoints").await
}

async fn request_diff(
    client: &HostConnection,
    session: &str,
    turn: Option<&str>,
    since: Option<&str>,
) -> Result<Diff, CliError> {
    let mut params = json!({ "session": session });
    if let Some(turn) = turn {
        params["turnId"] = json!(turn);
    }
    if let Some(since) = since {
        params["since"] = json!(since);
    }
    client
        .client()
        .request::<Value, Diff>("x-checkpoint/diff", params)
        .await
        .map_err(CliError::from)
}

/// The diff of a turn (`turn`), of everything since a turn started (`since`), or of the whole
/// session, from the host at `url`.
pub async fn diff(
    url: &str,
    session: &str,
    turn: Option<&str>,
    since: Option<&str>,
) -> Result<Diff, CliError> {
    let client = connect(url).await?;
    let diff = request_diff(&client, session, turn, since).await;
    client.close().await;
    diff
}

/// Writes diff text, `+` lines green and `-` lines red with colour.
pub fn print_diff(out: &mut impl Write, text: &str, style: Style) -> std::io::Result<()> {
    for line in text.lines() {
        let code = match line.as_bytes().first() {
            _ if !style.color => None,
            Some(b'+') if !line.starts_with("+++") => Some("\x1b[32m"),
            Some(b'-') if !line.starts_with("---") => Some("\x1b[31m"),
            Some(b'@') => Some("\x1b[36m"),
            Some(b'd') if line.starts_with("diff --git") => Some("\x1b[1m"),
            _ => None,
        };
        match code {
            Some(code) => writeln!(out, "{code}{line}\x1b[0m")?,
            None => writeln!(out, "{line}")?,
        }
    }
    Ok(())
}

/// Puts the working tree back to the start of `turn`: shows what will change (everything since
/// that turn started), asks through `confirm` unless `yes`, then rolls back. `Ok(None)` when the
/// user said no or nothing would change.
pub async fn rollback(
    url: &str,
    session: &str,
    turn: &str,
    yes: bool,
    out: &mut impl Write,
    confirm: impl FnOnce(&mut dyn Write) -> bool,
) -> Result<Option<Rollback>, CliError> {
    let client = connect(url).await?;
    let result = async {
        let preview = request_diff(&client, session, None, Some(turn)).await?;
        let io = |e: std::io::Error| CliError::io("cannot write the output", e);
        if preview.files.is_empty() {
            writeln!(
                out,
                "Nothing to roll back: no file changed since turn {turn} started."
            )
            .map_err(io)?;
            return Ok(None);
        }
        writeln!(
            out,
            "Rolling back to the start of turn {turn} changes {} file(s):",
            preview.files.len()
        )
        .map_err(io)?;
        for file in &preview.files {
            writeln!(out, "  {file}").map_err(io)?;
        }
        if !yes && !confirm(out) {
            writeln!(out, "Nothing was changed.").map_err(io)?;
            return Ok(None);
        }
        let done: Rollback = client
            .client()
            .request(
                "x-checkpoint/rollback",
                json!({ "session": session, "turnId": turn }),
            )
            .await?;
        for (label, paths) in [
            ("restored", &done.restored),
            ("removed", &done.removed),
            ("overwritten (changed after the turn)", &done.changed_since),
            ("left alone", &done.skipped),
        ] {
            if !paths.is_empty() {
                writeln!(out, "{label}: {}", paths.join(", ")).map_err(io)?;
            }
        }
        Ok(Some(done))
    }
    .await;
    client.close().await;
    result
}

/// Asks `question` on `out` and reads one line from stdin: `y` or `yes` is a yes.
pub fn ask_stdin(out: &mut dyn Write, question: &str) -> bool {
    let _ = write!(out, "{question} [y/N] ");
    let _ = out.flush();
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).is_ok() && matches!(line.trim(), "y" | "Y" | "yes")
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str =
        "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-old\n+new\n context\n";

    fn printed(color: bool) -> String {
        let mut out = Vec::new();
        let style = Style {
            color,
            show_reasoning: false,
        };
        print_diff(&mut out, DIFF, style).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_diff_is_printed_as_is_without_colour() {
        assert_eq!(printed(false), DIFF);
    }

    #[test]
    fn a_diff_in_colour_marks_added_removed_hunk_and_file_lines_only() {
        assert_eq!(
            printed(true),
            "\x1b[1mdiff --git a/a.txt b/a.txt\x1b[0m\n--- a/a.txt\n+++ b/a.txt\n\
             \x1b[36m@@ -1 +1 @@\x1b[0m\n\x1b[31m-old\x1b[0m\n\x1b[32m+new\x1b[0m\n context\n"
        );
    }
}
