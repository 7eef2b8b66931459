//! What the user types into `chat`: lines, Ctrl-C and the end of the input. Lines are read as
//! the terminal's line discipline hands them over (on a terminal: with its own editing —
//! backspace, Ctrl-U, Ctrl-W), or as a pipe delivers them.

use tokio::sync::mpsc;

/// One thing the user did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A line (without its newline).
    Line(String),
    /// Ctrl-C.
    Interrupt,
    /// The input ended (Ctrl-D, or the pipe closed).
    End,
}

/// Lines from stdin, and Ctrl-C (SIGINT).
pub fn lines() -> mpsc::Receiver<Item> {
    let (items, receiver) = mpsc::channel(64);
    let lines = items.clone();
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            let Ok(line) = line else { break };
            if lines.blocking_send(Item::Line(line)).is_err() {
                return;
            }
        }
        let _ = lines.blocking_send(Item::End);
    });
    forward_interrupts(items);
    receiver
}

/// Ctrl-C arrives as SIGINT: it becomes an [`Item::Interrupt`].
fn forward_interrupts(items: mpsc::Sender<Item>) {
    tokio::spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            if items.send(Item::Interrupt).await.is_err() {
                break;
            }
        }
    });
}
