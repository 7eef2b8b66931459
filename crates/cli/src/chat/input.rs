//! What the user types into `chat`: lines, Ctrl-C and the end of the input. Lines are read as
//! the terminal's line discipline hands them over (on a terminal: with its own editing —
//! backspace, Ctrl-U, Ctrl-W), or as a pipe delivers them.

use tokio::sync::mpsc;

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
    /// Ctrl-C (SIGINT).
    pub interrupts: mpsc::Receiver<()>,
}

/// Lines from stdin, and Ctrl-C (SIGINT).
pub fn input() -> Input {
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
