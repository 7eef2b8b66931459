//! What the user types into `chat`: lines, Ctrl-C and the end of the input.
//!
//! Through a pipe, lines are read as `run` reads its answers (`run`'s stdin input: lines as they
//! come, Ctrl-C as SIGINT). On a terminal, [`Editor`] reads them with `rustyline-async`: a prompt stays at the bottom of the
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
use crate::run::Input;

/// The line editor's prompt.
const PROMPT: &str = "› ";

/// How many lines of history are kept in the file and offered by Up.
const HISTORY_LINES: usize = 1000;

/// The line editor on the terminal: the one task that reads what is typed and prints the
/// conversation above the prompt.
#[derive(Debug)]
pub struct Editor {
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
    /// The terminal's settings before the editor took it, put back by [`Self::close`] whatever
    /// happened to the editor.
    saved: Option<rustix::termios::Termios>,
}

impl Editor {
    /// Takes the terminal (raw mode) and shows the prompt. `history`: the file the lines typed
    /// are kept in (loaded now, appended to after each line; `None` keeps them for this run).
    /// Returns the editor, what the user types, and where the conversation is written.
    pub fn start(history: Option<PathBuf>) -> Result<(Self, Input, EditorWriter), CliError> {
        let saved = rustix::termios::tcgetattr(std::io::stdin()).ok();
        // Log lines are printed above the prompt too while the editor runs, when they would go
        // to this terminal (a redirected stderr keeps them) — from before the prompt is drawn,
        // so that none is written into it.
        let (logs, log_rows) = mpsc::unbounded_channel::<Vec<u8>>();
        let routed = std::io::IsTerminal::is_terminal(&std::io::stderr());
        if routed {
            crate::term::print_logs_above_the_prompt(Some(logs));
        }
        let (mut readline, shared) = Readline::new(PROMPT.to_owned()).map_err(|e| {
            if routed {
                crate::term::print_logs_above_the_prompt(None);
            }
            // It may have switched to raw mode before it failed.
            restore_terminal(saved.as_ref());
            CliError::Host(format!("the line editor did not start: {e}"))
        })?;
        // The line typed is printed by the task itself: after a line still streaming, it
        // starts a row of its own.
        readline.should_print_line_on(false, false);
        readline.set_max_history(HISTORY_LINES);
        if let Some(path) = &history {
            readline.set_history_entries(load_history(path));
        }
        let (items, lines) = mpsc::channel(64);
        let items = Some(items);
        let (interrupt, interrupts) = mpsc::channel(4);
        let (stop, stopped) = oneshot::channel();
        let (chunks, pending) = mpsc::unbounded_channel::<Vec<u8>>();
        let task = tokio::spawn(edit(
            Screen {
                readline,
                shared,
                layout: Layout::default(),
                partial: false,
            },
            Typed {
                items,
                interrupt,
                history,
            },
            Queues {
                pending,
                log_rows,
                stopped,
            },
        ));
        let editor = Self { stop, task, saved };
        let writer = EditorWriter {
            pending: Vec::new(),
            chunks,
        };
        Ok((editor, Input { lines, interrupts }, writer))
    }

    /// Prints what is left, removes the prompt and gives the terminal back. `writer` must be
    /// dropped first (what it held is printed then).
    pub async fn close(self) {
        let _ = self.stop.send(());
        if let Err(error) = self.task.await {
            tracing::debug!(%error, "the line editor's task failed");
        }
        restore_terminal(self.saved.as_ref());
        crate::term::print_logs_above_the_prompt(None);
    }
}

/// Puts the terminal's settings back (cooked mode, echo).
fn restore_terminal(saved: Option<&rustix::termios::Termios>) {
    if let Some(saved) = saved
        && let Err(error) = rustix::termios::tcsetattr(
            std::io::stdin(),
            rustix::termios::OptionalActions::Now,
            saved,
        )
    {
        tracing::debug!(%error, "the terminal's settings were not put back");
    }
}

/// The editor's side of the screen.
struct Screen {
    readline: Readline,
    shared: SharedWriter,
    /// What lines are laid out as on the screen: one more line break where a line would wrap,
    /// colour reset before the prompt.
    layout: Layout,
    /// The last thing printed ended inside a line (streamed text).
    partial: bool,
}

impl Screen {
    /// Prints `chunk` above the prompt. The editor continues a part of a line where it ended,
    /// but only one that holds no line break and did not wrap: so lines are broken before the
    /// terminal would wrap them, then whole lines and the start of the next go apart. The
    /// editor's queue is empty whenever this runs (the loop lets the editor print before it
    /// takes the next chunk), so the writes never wait.
    async fn print(&mut self, chunk: &[u8]) -> std::io::Result<()> {
        for piece in self.layout.pieces(chunk, terminal_width()) {
            self.partial = !piece.ends_with(b"\n");
            AsyncWriteExt::write_all(&mut self.shared, &piece).await?;
            if self.partial {
                AsyncWriteExt::flush(&mut self.shared).await?;
            }
        }
        Ok(())
    }

    /// Prints `row` (ending in a newline) on a row of its own: after a line still streaming,
    /// it starts a new one.
    async fn print_row(&mut self, row: &[u8]) -> std::io::Result<()> {
        if self.partial {
            let mut own = b"\n".to_vec();
            own.extend_from_slice(row);
            return self.print(&own).await;
        }
        self.print(row).await
    }
}

/// How what is printed is laid out in pieces the editor shows right.
#[derive(Debug, Default)]
struct Layout {
    /// The columns the line being printed takes so far.
    column: usize,
    /// The colour or emphasis the last piece left on (a heading, reasoning): it is reset at
    /// the end of that piece, so the prompt is drawn plain, and set again at the next.
    colour: Option<Vec<u8>>,
}

impl Layout {
    /// `chunk` in pieces to print one after the other: its whole lines, then the start of the
    /// next line (if any), each line at most `width` columns (when known).
    fn pieces(&mut self, chunk: &[u8], width: Option<usize>) -> Vec<Vec<u8>> {
        let mut text = match width {
            Some(width) => self.wrap(chunk, width),
            None => chunk.to_vec(),
        };
        let rest = match text.iter().rposition(|&b| b == b'\n') {
            Some(end) if end + 1 < text.len() => Some(text.split_off(end + 1)),
            _ => None,
        };
        std::iter::once(text)
            .chain(rest)
            .filter(|piece| !piece.is_empty())
            .map(|piece| self.coloured(piece))
            .collect()
    }

    /// `piece` with the colour left on before it set again at its start, and reset at its end
    /// (before a last line break: a piece of whole lines must still end with one).
    fn coloured(&mut self, piece: Vec<u8>) -> Vec<u8> {
        let before = self.colour.take();
        let left_on = match last_colour(&piece) {
            Some(code) if code == RESET => None,
            Some(code) => Some(code.to_vec()),
            None => before.clone(),
        };
        let mut out = before.unwrap_or_default();
        out.extend_from_slice(&piece);
        if left_on.is_some() {
            let at = out.len() - usize::from(out.ends_with(b"\n"));
            out.splice(at..at, RESET.iter().copied());
        }
        self.colour = left_on;
        out
    }

    /// `bytes` with a line break wherever a line would grow past `width` columns (escape
    /// sequences take none; the column is carried from one call to the next).
    fn wrap(&mut self, bytes: &[u8], width: usize) -> Vec<u8> {
        let text = String::from_utf8_lossy(bytes);
        let mut out = String::with_capacity(text.len() + 8);
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            match c {
                '\x1b' => {
                    out.push(c);
                    // A control sequence (`ESC [ … final`) is copied whole.
                    if let Some(next) = chars.next() {
                        out.push(next);
                        if next == '[' {
                            for part in chars.by_ref() {
                                out.push(part);
                                if ('@'..='~').contains(&part) {
                                    break;
                                }
                            }
                        }
                    }
                }
                '\n' | '\r' => {
                    out.push(c);
                    self.column = 0;
                }
                _ => {
                    let cells = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
                    if self.column > 0 && self.column + cells > width {
                        out.push('\n');
                        self.column = 0;
                    }
                    out.push(c);
                    self.column += cells;
                }
            }
        }
        out.into_bytes()
    }
}

/// What the editor's task takes in besides keys.
struct Queues {
    /// The conversation, as `chat` writes it ([`EditorWriter`]).
    pending: mpsc::UnboundedReceiver<Vec<u8>>,
    /// Log lines, each a row of its own.
    log_rows: mpsc::UnboundedReceiver<Vec<u8>>,
    /// `chat` is done.
    stopped: oneshot::Receiver<()>,
}

/// What the user typed, on its way to `chat`.
struct Typed {
    /// Where lines go; `None` once the input has ended (Ctrl-D): dropping it tells `chat`, and
    /// later lines are not read.
    items: Option<mpsc::Sender<String>>,
    interrupt: mpsc::Sender<()>,
    history: Option<PathBuf>,
}

/// The editor's task: reads keys, prints the conversation's chunks as they come, and at `stop`
/// prints what is left and gives the terminal back (dropping the editor ends raw mode).
async fn edit(mut screen: Screen, mut typed: Typed, queues: Queues) {
    let Queues {
        mut pending,
        mut log_rows,
        mut stopped,
    } = queues;
    loop {
        let printed = tokio::select! {
            // The editor first: polling it prints what was queued for it.
            biased;
            event = screen.readline.readline() => {
                if !typed.take(event, &mut screen).await {
                    break;
                }
                Ok(())
            }
            Some(chunk) = pending.recv() => screen.print(&chunk).await,
            Some(row) = log_rows.recv() => screen.print_row(&row).await,
            _ = &mut stopped => break,
        };
        if let Err(error) = printed {
            tracing::debug!(%error, "the line editor cannot print");
            break;
        }
    }
    // What `chat` wrote before it stopped the editor is all queued by now; each is printed at
    // once, so nothing is left waiting in the editor's own queue.
    while let Ok(chunk) = pending.try_recv() {
        if screen.print(&chunk).await.is_err() || screen.readline.flush().is_err() {
            break;
        }
    }
    while let Ok(row) = log_rows.try_recv() {
        if screen.print_row(&row).await.is_err() || screen.readline.flush().is_err() {
            break;
        }
    }
    if let Err(error) = screen.readline.flush() {
        tracing::debug!(%error, "the line editor's last lines were not printed");
    }
    // Raw mode ends before anything (a log line the editor no longer takes) goes to stderr.
    drop(screen);
    drop(log_rows);
}

impl Typed {
    /// Passes on what the editor read; `false` once the editor has failed.
    async fn take(
        &mut self,
        event: Result<ReadlineEvent, rustyline_async::ReadlineError>,
        screen: &mut Screen,
    ) -> bool {
        match event {
            Ok(ReadlineEvent::Line(line)) if self.items.is_some() => {
                // The line stays on the screen after the prompt it was typed at.
                let echo = format!("{PROMPT}{line}\n");
                if screen.print_row(echo.as_bytes()).await.is_err() {
                    return false;
                }
                if !line.trim().is_empty() {
                    screen.readline.add_history_entry(line.clone());
                    if let Some(path) = &self.history {
                        keep_in_history(path, &line);
                    }
                }
                // `chat` reads every line it is sent; a full queue (64 lines it has not taken
                // yet) says so rather than holding up the screen.
                if let Some(items) = &self.items
                    && let Err(mpsc::error::TrySendError::Full(_)) = items.try_send(line)
                {
                    let _ = screen
                        .print(b"(too many lines are waiting: this one was not sent)\n")
                        .await;
                }
            }
            Ok(ReadlineEvent::Line(_)) => {
                let said = format!("{}\n", super::INPUT_ENDED);
                let _ = screen.print(said.as_bytes()).await;
            }
            Ok(ReadlineEvent::Interrupted) => {
                // Ctrl-C is heard however many wait; more than a few unread say nothing new.
                let _ = self.interrupt.try_send(());
            }
            Ok(ReadlineEvent::Eof) => self.items = None,
            Err(error) => {
                tracing::debug!(%error, "the line editor stopped");
                self.items = None;
                return false;
            }
        }
        true
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

/// Appends `line` to the history file (created readable by its owner alone: it holds what was
/// typed). Appends are whole lines, so chats that run at once keep each other's lines; once the
/// file holds twice [`HISTORY_LINES`], it is cut to the last ones (written beside and renamed,
/// so a crash leaves the old file or the new).
fn keep_in_history(path: &Path, line: &str) {
    let kept = append_to_history(path, line).and_then(|count| {
        if count < 2 * HISTORY_LINES {
            return Ok(());
        }
        let lines = load_history(path);
        let mut text = lines.join("\n");
        text.push('\n');
        let temporary = path.with_extension(format!("{}.tmp", std::process::id()));
        private_file(&temporary, false)?.write_all(text.as_bytes())?;
        std::fs::rename(&temporary, path)
    });
    if let Err(error) = kept {
        tracing::debug!(%error, path = %path.display(), "the chat history was not saved");
    }
}

/// Appends `line` as one write; the number of lines the file holds then.
fn append_to_history(path: &Path, line: &str) -> std::io::Result<usize> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut entry = line.replace(['\n', '\r'], " ");
    entry.push('\n');
    private_file(path, true)?.write_all(entry.as_bytes())?;
    Ok(std::fs::read_to_string(path)?.lines().count())
}

/// Opens `path` for writing (appending, or from empty), created with mode 0600.
fn private_file(path: &Path, append: bool) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options.create(true).mode(0o600);
    if append {
        options.append(true);
    } else {
        options.write(true).truncate(true);
    }
    options.open(path)
}

/// Where the conversation is written while the editor runs: printed above its prompt, each
/// `flush` at once (a line still streaming included).
#[derive(Debug)]
pub struct EditorWriter {
    pending: Vec<u8>,
    chunks: mpsc::UnboundedSender<Vec<u8>>,
}

/// The columns lines may use on this terminal: one less than it has, so that a full line never
/// leaves the cursor waiting to wrap. `None` when stdout is not a terminal.
fn terminal_width() -> Option<usize> {
    let size = rustix::termios::tcgetwinsize(std::io::stdout()).ok()?;
    usize::from(size.ws_col)
        .checked_sub(1)
        .filter(|&width| width > 0)
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
        self.chunks
            .send(std::mem::take(&mut self.pending))
            .map_err(|_| std::io::Error::other("the line editor has stopped"))
    }
}

impl Drop for EditorWriter {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// Ends every colour and emphasis (SGR 0).
const RESET: &[u8] = b"\x1b[0m";

/// The last colour or emphasis code (`ESC [ … m`) in `bytes`.
fn last_colour(bytes: &[u8]) -> Option<&[u8]> {
    let start = bytes.windows(2).rposition(|pair| pair == b"\x1b[")?;
    let rest = &bytes[start + 2..];
    let end = rest
        .iter()
        .position(|b| !(b.is_ascii_digit() || *b == b';'))?;
    (rest[end] == b'm').then(|| &bytes[start..start + 2 + end + 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(layout: &mut Layout, chunk: &[u8], width: Option<usize>) -> Vec<String> {
        layout
            .pieces(chunk, width)
            .into_iter()
            .map(|piece| String::from_utf8_lossy(&piece).into_owned())
            .collect()
    }

    #[test]
    fn whole_lines_and_the_start_of_the_next_go_apart() {
        let mut layout = Layout::default();
        assert_eq!(
            pieces(&mut layout, b"one\ntwo\nthr", None),
            ["one\ntwo\n", "thr"]
        );
        assert_eq!(pieces(&mut layout, b"ee\n", None), ["ee\n"]);
        assert_eq!(pieces(&mut layout, b"tail", None), ["tail"]);
    }

    #[test]
    fn the_writer_sends_what_it_holds_at_each_flush_and_when_dropped() {
        let (chunks, mut received) = mpsc::unbounded_channel();
        let mut writer = EditorWriter {
            pending: Vec::new(),
            chunks,
        };
        writer.write_all(b"one\ntw").unwrap_or_default();
        assert!(received.try_recv().is_err(), "nothing goes before flush");
        writer.flush().unwrap_or_default();
        assert_eq!(received.try_recv().ok(), Some(b"one\ntw".to_vec()));
        writer.write_all(b"o").unwrap_or_default();
        drop(writer);
        assert_eq!(
            received.try_recv().ok(),
            Some(b"o".to_vec()),
            "dropping flushes"
        );
    }

    #[test]
    fn a_colour_left_on_is_reset_for_the_prompt_and_set_again_after_it() {
        let mut layout = Layout::default();
        // A heading streams in two parts; the prompt is drawn between them.
        let mut all = pieces(&mut layout, b"\x1b[1m# Pla", None);
        all.extend(pieces(&mut layout, b"n\x1b[0m\nplain\n", None));
        all.extend(pieces(&mut layout, b"more\n", None));
        // Reasoning left dim across whole lines: reset before the last line break.
        all.extend(pieces(&mut layout, b"\x1b[2mthinking\n", None));
        all.extend(pieces(&mut layout, b"on\x1b[0m\n", None));
        assert_eq!(
            all,
            [
                "\x1b[1m# Pla\x1b[0m",
                "\x1b[1mn\x1b[0m\nplain\n",
                "more\n",
                "\x1b[2mthinking\x1b[0m\n",
                "\x1b[2mon\x1b[0m\n"
            ]
        );
        assert_eq!(last_colour(b"a\x1b[2mb\x1b[33mc"), Some(&b"\x1b[33m"[..]));
        assert_eq!(last_colour(b"no code \x1b[2K"), None);
    }

    #[test]
    fn long_lines_are_broken_before_the_terminal_would_wrap_them() {
        let mut layout = Layout::default();
        let mut wrapped =
            |text: &str| String::from_utf8(layout.wrap(text.as_bytes(), 10)).unwrap_or_default();
        assert_eq!(wrapped("0123456789abc\n"), "0123456789\nabc\n");
        // The column carries over from one part of a line to the next; escapes take none.
        assert_eq!(wrapped("\x1b[1m01234"), "\x1b[1m01234");
        assert_eq!(wrapped("56789\x1b[0mx"), "56789\x1b[0m\nx");
        // Wide characters take two columns.
        assert_eq!(wrapped("\n日本語日本"), "\n日本語日本");
        assert_eq!(wrapped("語"), "\n語");
        // A wrapped part of a line goes as a whole line and the start of the next.
        let mut layout = Layout::default();
        assert_eq!(
            pieces(&mut layout, b"0123456789abc", Some(10)),
            ["0123456789\n", "abc"]
        );
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
        // What was typed is the owner's alone; the file never grows past twice what is kept.
        let metadata = std::fs::metadata(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&metadata.permissions()) & 0o777,
            0o600
        );
        for index in 0..2 * HISTORY_LINES {
            keep_in_history(&path, &format!("more {index}"));
        }
        let lines = std::fs::read_to_string(&path)
            .unwrap_or_default()
            .lines()
            .count();
        assert!(lines < 2 * HISTORY_LINES, "{lines} lines");
    }
}
