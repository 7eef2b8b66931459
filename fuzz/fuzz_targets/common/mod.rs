//! The little driver language the provider line targets share.
//!
//! An input is split on `\n` (lossy UTF-8, blank lines skipped, as the drivers read stdout).
//! A line starting with `!` is a driver action instead of agent output — `!begin` (start the
//! next protocol turn), `!abort`, `!fail`, `!replaced`, `!session <id>`, `!thread <id>`,
//! `!sent <json id>`, `!approve <id>` / `!deny <id>`, `!exec` (Codex: the `codex exec --json` translator); any other line goes
//! to the translator. Agent output never starts with `!` (it is JSON), so seeds are real
//! transcripts with a few actions between their lines.

#![allow(dead_code)]

use agenthost_protocol::error_info::error_info;
use agenthost_protocol::state::ErrorInfo;
use agenthost_protocol::{SafeId, SessionUri};

/// One step of an input.
pub enum Step<'a> {
    /// A line of agent output.
    Line(&'a str),
    /// `!name argument`.
    Action(&'a str, &'a str),
}

/// The steps of `text`.
pub fn steps(text: &str) -> impl Iterator<Item = Step<'_>> {
    text.split('\n')
        .filter(|line| !line.trim().is_empty())
        .map(|line| match line.strip_prefix('!') {
            Some(action) => {
                let (name, argument) = action.split_once(' ').unwrap_or((action, ""));
                Step::Action(name.trim(), argument.trim())
            }
            None => Step::Line(line),
        })
}

/// The session every translator serves.
pub fn session() -> SessionUri {
    SessionUri::canonical(SafeId::new("s1").expect("a valid id"))
}

/// What `!fail` reports.
pub fn failure() -> ErrorInfo {
    error_info("fuzz", "the agent process exited")
}

/// Protocol turns and their ends: one `TurnEnded` per turn at most.
#[derive(Default)]
pub struct Turns {
    number: u32,
    ended: u32,
    decisions: u32,
}

impl Turns {
    /// Starts the next turn; its id.
    pub fn begin(&mut self) -> String {
        self.number += 1;
        self.ended = 0;
        format!("turn-{}", self.number)
    }

    /// The translator said the turn ended.
    pub fn ended(&mut self) {
        self.ended += 1;
        assert!(
            self.ended <= 1,
            "turn-{} ended {} times",
            self.number,
            self.ended
        );
    }

    /// The host's answer to the next permission request: approve, deny, approve, …
    pub fn decide(&mut self) -> bool {
        self.decisions += 1;
        self.decisions % 2 == 1
    }
}
