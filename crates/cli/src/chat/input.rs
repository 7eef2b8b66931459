//! What the user types into `chat`: lines, Ctrl-C and the end of the input.
//!
//! Through a pipe, lines are read as they come and Ctrl-C arrives as SIGINT ([`piped`]). On a
//! terminal, [`Editor`] reads them with `rustyline-async`: a prompt stays at the bottom of the
//! screen with line editing and history (Up/Down; kept in a file), while the conversation is
//! printed above it as it streams — the reader and the printer run in one task, so nothing
//! printed waits for a key and the order of the output is kept. The terminal is in raw mode
//! while the editor runs (Ctrl-C and Ctrl-D are keys then) and is given back by
//! [`Editor::close`].

use std::io::Write;
use std::path::{Path, PathBuf};

use futures::AsyncWriteExt;
use rustyline_async::{Readline, ReadlineEvent, SharedWriter};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::CliError;

/// The line editor's prompt.
const PROMPT: &str = "› ";

/// How many lines of history are kept in the file and offered by Up.
const HISTORY_LINES: usize = 1000;

/// One line, or the end of the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A line (without its newline).
    Line(String),
    /// The input ended (Ctrl-D, or the pipe closed).
    End,
}

/// What the user types: lines, and Ctrl-C apart (it is heard while lines wait).
#[derive(Debug)]
pub struct Input {
    /// Lines as they come, then [`Item::End`].
    pub lines: mpsc::Receiver<Item>,
    /// Ctrl-C.
    pub interrupts: mpsc::Receiver<()>,
}

/// Lines from stdin as a pipe delivers them, and Ctrl-C (SIGINT).
pub fn piped() -> Input {
    let (items, lines) = mpsc::channel(64);
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            let Ok(line) = line else { break };
            if items.blocking_send(Item::Line(line)).is_err() {
                return;
            }
        }
        let _ = items.blocking_send(Item::End);
    });
    let (interrupt, interrupts) = mpsc::channel(4);
    tokio::spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            if interrupt.send(()).await.is_err() {
                break;
            }
        }
    });
    Input { lines, interrupts }
}

/// The line editor on the terminal: its reading task, and the task printing above its prompt.
#[derive(Debug)]
pub struct Editor {
    stop: oneshot::Sender<()>,
    reader: JoinHandle<()>,
    printer: JoinHandle<()>,
}

impl Editor {
    /// Takes the terminal (raw mode) and shows the prompt. `history`: the file the lines typed
    /// are kept in (loaded now, appended to after each line; `None` keeps them for this run).
    /// Returns the editor, what the user types, and where the conversation is written.
    pub fn start(history: Option<PathBuf>) -> Result<(Self, Input, EditorWriter), CliError> {
        let (mut readline, shared) = Readline::new(PROMPT.to_owned())
            .map_err(|e| CliError::Host(format!("the line editor did not start: {e}")))?;
        readline.should_print_line_on(true, false);
        readline.set_max_history(HISTORY_LINES);
        if let Some(path) = &history {
            readline.set_history_entries(load_history(path));
        }
        let (items, lines) = mpsc::channel(64);
        let (interrupt, interrupts) = mpsc::channel(4);
        let (stop, mut stopped) = oneshot::channel();
        let (chunks, mut pending) = mpsc::unbounded_channel::<Vec<u8>>();
        let printer = tokio::spawn(async move {
            let mut shared: SharedWriter = shared;
            while let Some(chunk) = pending.recv().await {
                // A whole line goes at once; a part of one (streamed text) is flushed to show
                // now, and the editor goes on with it on the same line.
                let written = AsyncWriteExt::write_all(&mut shared, &chunk).await;
                let flushed = if chunk.ends_with(b"\n") {
                    Ok(())
                } else {
                    AsyncWriteExt::flush(&mut shared).await
                };
                if written.and(flushed).is_err() {
                    break;
                }
            }
        });
        let reader = tokio::spawn(async move {
            let mut ended = false;
            loop {
                let event = tokio::select! {
                    _ = &mut stopped => break,
                    event = readline.readline() => event,
                };
                match event {
                    Ok(ReadlineEvent::Line(line)) if !ended => {
                        if !line.trim().is_empty() {
                            readline.add_history_entry(line.clone());
                            if let Some(path) = &history {
                                keep_in_history(path, &line);
                            }
                        }
                        if items.send(Item::Line(line)).await.is_err() {
                            ended = true;
                        }
                    }
                    Ok(ReadlineEvent::Interrupted) => {
                        let _ = interrupt.send(()).await;
                    }
                    Ok(ReadlineEvent::Eof) if !ended => {
                        ended = true;
                        let _ = items.send(Item::End).await;
                    }
                    // After the end, keys are not lines; the editor still prints what comes.
                    Ok(_) => {}
                    Err(error) => {
                        tracing::debug!(%error, "the line editor stopped");
                        if !ended {
                            let _ = items.send(Item::End).await;
                        }
                        break;
                    }
                }
            }
            // Everything printed shows, the prompt goes; dropping the editor ends raw mode.
            if let Err(error) = readline.flush() {
                tracing::debug!(%error, "the line editor's last lines were not printed");
            }
        });
        let editor = Self {
            stop,
            reader,
            printer,
        };
        let writer = EditorWriter {
            pending: Vec::new(),
            chunks,
        };
        Ok((editor, Input { lines, interrupts }, writer))
    }

    /// Prints what is left, removes the prompt and gives the terminal back. `writer` must be
    /// dropped first (what it held is printed then).
    pub async fn close(self) {
        if let Err(error) = self.printer.await {
            tracing::debug!(%error, "the printer task failed");
        }
        let _ = self.stop.send(());
        if let Err(error) = self.reader.await {
            tracing::debug!(%error, "the line editor's task failed");
        }
    }
}

/// The history in `path`, oldest first: one entry per line (a missing file is a first run).
fn load_history(path: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let lines: Vec<String> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(str::to_owned)
        .collect();
    let skip = lines.len().saturating_sub(HISTORY_LINES);
    lines.into_iter().skip(skip).collect()
}

/// Appends `line` to the history file, keeping its last [`HISTORY_LINES`] lines.
fn keep_in_history(path: &Path, line: &str) {
    let mut lines = load_history(path);
    lines.push(line.replace(['\n', '\r'], " "));
    let skip = lines.len().saturating_sub(HISTORY_LINES);
    let mut text = lines[skip..].join("\n");
    text.push('\n');
    // Written beside and renamed: a crash leaves the old history or the new, never half.
    let temporary = path.with_extension("tmp");
    let written = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&temporary, text))
        .and_then(|()| std::fs::rename(&temporary, path));
    if let Err(error) = written {
        tracing::debug!(%error, path = %path.display(), "the chat history was not saved");
    }
}

/// Where the conversation is written while the editor runs: printed above its prompt. Whole
/// lines go as they are; on `flush`, the start of a line still streaming goes too.
#[derive(Debug)]
pub struct EditorWriter {
    pending: Vec<u8>,
    chunks: mpsc::UnboundedSender<Vec<u8>>,
}

impl EditorWriter {
    fn send(&self, chunk: Vec<u8>) -> std::io::Result<()> {
        self.chunks
            .send(chunk)
            .map_err(|_| std::io::Error::other("the line editor has stopped"))
    }
}

impl Write for EditorWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        // Whole lines and the start of the next one go apart: the editor continues a part of a
        // line where it ended, and only one that holds no line break.
        let mut pending = std::mem::take(&mut self.pending);
        match pending.iter().rposition(|&b| b == b'\n') {
            Some(end) if end + 1 < pending.len() => {
                let rest = pending.split_off(end + 1);
                self.send(pending)?;
                self.send(rest)
            }
            _ => self.send(pending),
        }
    }
}

impl Drop for EditorWriter {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer() -> (EditorWriter, mpsc::UnboundedReceiver<Vec<u8>>) {
        let (chunks, received) = mpsc::unbounded_channel();
        (
            EditorWriter {
                pending: Vec::new(),
                chunks,
            },
            received,
        )
    }

    fn drain(received: &mut mpsc::UnboundedReceiver<Vec<u8>>) -> Vec<String> {
        let mut out = Vec::new();
        while let Ok(chunk) = received.try_recv() {
            out.push(String::from_utf8_lossy(&chunk).into_owned());
        }
        out
    }

    #[test]
    fn whole_lines_and_the_start_of_the_next_go_apart() {
        let (mut writer, mut received) = writer();
        writer.write_all(b"one\ntwo\nthr").unwrap_or_default();
        assert!(drain(&mut received).is_empty(), "nothing goes before flush");
        writer.flush().unwrap_or_default();
        assert_eq!(drain(&mut received), ["one\ntwo\n", "thr"]);
        writer.write_all(b"ee\n").unwrap_or_default();
        writer.flush().unwrap_or_default();
        assert_eq!(drain(&mut received), ["ee\n"]);
        writer.write_all(b"tail").unwrap_or_default();
        drop(writer);
        assert_eq!(drain(&mut received), ["tail"], "dropping flushes");
    }

    #[test]
    fn the_history_file_keeps_the_last_lines_in_order() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("chat-history");
        assert!(
            load_history(&path).is_empty(),
            "a missing file is no history"
        );
        for index in 0..HISTORY_LINES + 5 {
            keep_in_history(&path, &format!("line {index}"));
        }
        let history = load_history(&path);
        assert_eq!(history.len(), HISTORY_LINES);
        assert_eq!(history.first().map(String::as_str), Some("line 5"));
        assert_eq!(
            history.last().map(String::as_str),
            Some(format!("line {}", HISTORY_LINES + 4).as_str())
        );
        keep_in_history(&path, "two\nlines");
        assert_eq!(
            load_history(&path).last().map(String::as_str),
            Some("two lines")
        );
    }
}
