//! How a chat looks in a terminal: [`Renderer`] turns the [`Event`]s of a chat (from
//! `agenthost_client::ChatView`) into text for a person — `agent-host run`, `attach` and `demo`
//! print through it.
//!
//! Two looks, chosen by [`Style::detect`]: on a terminal (and with `NO_COLOR` unset) headings
//! are bold, reasoning is dimmed, tool calls are one line with a coloured mark; otherwise every
//! line the renderer writes itself starts with a plain word (`tool:`, `done:`, `failed:`,
//! `confirm:`, `notice:`, `error:`, `cancelled`) so scripts can read it, reasoning is folded to
//! one `thinking…` line, and no escape sequence is written. The agent's own text streams as it
//! arrives in both.

use std::io::{self, Write};

use agenthost_client::Event;

const BOLD: &str = "\x1b[1m";
const DIM: &str = "\x1b[2m";
const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const CYAN: &str = "\x1b[36m";
const RESET: &str = "\x1b[0m";

/// How to render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    /// Escape sequences for colour and emphasis.
    pub color: bool,
    /// Print reasoning in full (dimmed) instead of folding it.
    pub show_reasoning: bool,
}

impl Style {
    /// Colour only on a terminal and when `NO_COLOR` is unset or empty (no-color.org);
    /// reasoning shown (dimmed) only with colour.
    pub fn detect(is_terminal: bool) -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let color = is_terminal && !no_color;
        Self {
            color,
            show_reasoning: color,
        }
    }

    /// No colour, reasoning folded: what a pipe gets.
    pub fn plain() -> Self {
        Self {
            color: false,
            show_reasoning: false,
        }
    }
}

/// What the renderer is in the middle of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Nothing,
    Text,
    Reasoning,
}

/// Renders chat events into `out`.
#[derive(Debug)]
pub struct Renderer<W: Write> {
    out: W,
    style: Style,
    open: Open,
    at_line_start: bool,
    heading: bool,
    /// A transient status line is on screen (colour mode only).
    status: bool,
    /// Questions end their line (a line editor shows the answer being typed at its prompt).
    questions_on_their_own_line: bool,
    /// Transient status lines are drawn (not under a line editor, which owns the last line).
    status_lines: bool,
}

impl<W: Write> Renderer<W> {
    /// A renderer writing to `out`.
    pub fn new(out: W, style: Style) -> Self {
        Self {
            out,
            style,
            open: Open::Nothing,
            at_line_start: true,
            heading: false,
            status: false,
            questions_on_their_own_line: false,
            status_lines: true,
        }
    }

    /// Questions end their line: for a line editor, where the answer is typed at its prompt.
    pub fn with_questions_on_their_own_line(mut self) -> Self {
        self.questions_on_their_own_line = true;
        self
    }

    /// No transient status lines: for a line editor, whose prompt holds the last line.
    pub fn without_status_lines(mut self) -> Self {
        self.status_lines = false;
        self
    }

    /// Shows a transient status (`⠋ waiting for claude… 3s`) on its own line, replaced by the
    /// next one and erased before anything else is written. Only on a terminal: plain output
    /// gets no status lines.
    pub fn status(&mut self, text: &str) -> io::Result<()> {
        if !self.style.color || !self.status_lines || !self.at_line_start {
            return Ok(());
        }
        write!(self.out, "\r\x1b[2K{DIM}{text}{RESET}")?;
        self.status = true;
        self.out.flush()
    }

    /// Erases the status line, if one is shown.
    fn clear_status(&mut self) -> io::Result<()> {
        if self.status {
            self.out.write_all(b"\r\x1b[2K")?;
            self.status = false;
        }
        Ok(())
    }

    /// The style in use.
    pub fn style(&self) -> Style {
        self.style
    }

    /// The writer (tests read what was rendered).
    pub fn into_inner(self) -> W {
        self.out
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.style.color {
            format!("{code}{text}{RESET}")
        } else {
            text.to_owned()
        }
    }

    /// Ends streamed text or reasoning, so the next output starts on its own line.
    fn close(&mut self) -> io::Result<()> {
        self.clear_status()?;
        if self.open == Open::Reasoning && self.style.color && self.style.show_reasoning {
            self.out.write_all(RESET.as_bytes())?;
        }
        if !self.at_line_start {
            self.out.write_all(b"\n")?;
            self.at_line_start = true;
        }
        if self.heading && self.style.color {
            self.out.write_all(RESET.as_bytes())?;
        }
        self.heading = false;
        self.open = Open::Nothing;
        Ok(())
    }

    /// Writes a line of the renderer's own (a prompt echo, a summary), on its own line.
    pub fn line(&mut self, text: &str) -> io::Result<()> {
        self.close()?;
        writeln!(self.out, "{text}")?;
        self.out.flush()
    }

    /// Writes `text` without a newline (a question waiting for an answer).
    pub fn ask(&mut self, text: &str) -> io::Result<()> {
        self.close()?;
        let question = self.paint(YELLOW, text);
        if self.questions_on_their_own_line {
            writeln!(self.out, "{}", question.trim_end())?;
        } else {
            write!(self.out, "{question}")?;
        }
        self.out.flush()
    }

    /// Streams the agent's text: indented after every newline, heading lines bold with colour.
    fn text(&mut self, indent: &str, text: &str) -> io::Result<()> {
        self.clear_status()?;
        if self.open != Open::Text {
            self.close()?;
            self.open = Open::Text;
        }
        for (index, piece) in text.split('\n').enumerate() {
            if index > 0 {
                if self.heading && self.style.color {
                    self.out.write_all(RESET.as_bytes())?;
                }
                self.heading = false;
                self.out.write_all(b"\n")?;
                self.at_line_start = true;
            }
            if piece.is_empty() {
                continue;
            }
            if self.at_line_start {
                self.out.write_all(indent.as_bytes())?;
                if piece.starts_with('#') && self.style.color {
                    self.out.write_all(BOLD.as_bytes())?;
                    self.heading = true;
                }
                self.at_line_start = false;
            }
            self.out.write_all(piece.as_bytes())?;
        }
        self.out.flush()
    }

    fn reasoning(&mut self, indent: &str, text: &str) -> io::Result<()> {
        self.clear_status()?;
        if self.open == Open::Reasoning && !self.style.show_reasoning {
            return Ok(());
        }
        if self.open != Open::Reasoning {
            self.close()?;
            self.open = Open::Reasoning;
            if !self.style.show_reasoning {
                let folded = self.paint(DIM, "thinking…");
                writeln!(self.out, "{indent}{folded}")?;
                return self.out.flush();
            }
            let dim = if self.style.color { DIM } else { "" };
            write!(self.out, "{indent}{dim}")?;
            self.at_line_start = false;
        }
        let text = text.replace('\n', &format!("\n{indent}"));
        self.out.write_all(text.as_bytes())?;
        self.at_line_start = text.ends_with('\n');
        self.out.flush()
    }

    /// Renders one event; `indent` prefixes every line (subagents are indented).
    pub fn event(&mut self, indent: &str, event: &Event) -> io::Result<()> {
        match event {
            Event::Text(text) => self.text(indent, text),
            Event::Reasoning(text) => self.reasoning(indent, text),
            Event::ToolStarted { display_name, .. } => {
                let line = if self.style.color {
                    format!("{indent}{} {display_name}", self.paint(CYAN, "⚙"))
                } else {
                    format!("{indent}tool: {display_name}")
                };
                self.line(&line)
            }
            Event::ConfirmationNeeded { invocation, .. } => {
                let line = if self.style.color {
                    format!("{indent}  {} {invocation}", self.paint(YELLOW, "?"))
                } else {
                    format!("{indent}confirm: {invocation}")
                };
                self.line(&line)
            }
            Event::ToolFinished {
                success, summary, ..
            } => {
                let line = match (self.style.color, success) {
                    (true, true) => format!("{indent}  {} {summary}", self.paint(GREEN, "✓")),
                    (true, false) => format!("{indent}  {} {summary}", self.paint(RED, "✗")),
                    (false, true) => format!("{indent}done: {summary}"),
                    (false, false) => format!("{indent}failed: {summary}"),
                };
                self.line(&line)
            }
            Event::Notice(text) => {
                let line = if self.style.color {
                    format!("{indent}{}", self.paint(DIM, &format!("[{text}]")))
                } else {
                    format!("{indent}notice: {text}")
                };
                self.line(&line)
            }
            Event::TurnEnded {
                error, cancelled, ..
            } => {
                if let Some(error) = error {
                    let line = if self.style.color {
                        format!("{indent}{}", self.paint(RED, &format!("✗ {error}")))
                    } else {
                        format!("{indent}error: {error}")
                    };
                    self.line(&line)
                } else if *cancelled {
                    let line = self.paint(DIM, "cancelled");
                    self.line(&format!("{indent}{line}"))
                } else {
                    self.close()?;
                    self.out.flush()
                }
            }
        }
    }
}

/// Where the command's log lines go ([`tracing_subscriber::fmt::MakeWriter`]): stderr, or,
/// while a line editor holds the terminal in raw mode, above its prompt in the order of the
/// conversation (a raw terminal would neither start a line where stderr's newline leaves it nor
/// keep the prompt on the last row). One log event is one write.
#[derive(Debug, Clone, Copy, Default)]
pub struct LogOutput;

/// The line editor's printer while one runs ([`print_logs_above_the_prompt`]).
static ABOVE_THE_PROMPT: std::sync::Mutex<Option<tokio::sync::mpsc::UnboundedSender<Vec<u8>>>> =
    std::sync::Mutex::new(None);

/// Sends log lines to a line editor's printer (`Some`) or back to stderr (`None`).
pub(crate) fn print_logs_above_the_prompt(
    printer: Option<tokio::sync::mpsc::UnboundedSender<Vec<u8>>>,
) {
    *ABOVE_THE_PROMPT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = printer;
}

/// One log event, written where [`LogOutput`] sends logs when it is dropped.
#[derive(Debug, Default)]
pub struct LogLine(Vec<u8>);

impl Write for LogLine {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for LogLine {
    fn drop(&mut self) {
        if self.0.is_empty() {
            return;
        }
        let line = std::mem::take(&mut self.0);
        let printer = ABOVE_THE_PROMPT
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        // An editor that has stopped takes nothing: the line goes to stderr after all.
        let line = match printer {
            Some(printer) => match printer.send(line) {
                Ok(()) => return,
                Err(unsent) => unsent.0,
            },
            None => line,
        };
        let _ = io::stderr().write_all(&line);
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogOutput {
    type Writer = LogLine;

    fn make_writer(&'a self) -> LogLine {
        LogLine::default()
    }
}

#[cfg(test)]
#[path = "term_tests.rs"]
mod tests;
