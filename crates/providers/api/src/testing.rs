//! Test support for provider crates (feature `testing`): a chat's start request wired to a
//! signal channel, and [`SignalLog`], which reads that channel until the signal a test waits
//! for, with a deadline, keeping everything it saw for the failure message.
//!
//! Panics are the point here: a wait that runs out fails the test that called it.

use std::time::Duration;

use agenthost_protocol::{AgentSignal, ChatUri, SafeId, SessionUri, StateAction};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::{RoutedSignal, SignalSink, StartSession, TurnRequest, signal_channel};

/// A start request for the default chat of session `ahp-session:/s1` working in
/// `working_directory`, and the receiving end of its signals.
pub fn start_request(
    working_directory: &std::path::Path,
) -> (StartSession, mpsc::Receiver<RoutedSignal>) {
    let (tx, rx) = signal_channel(256);
    let session = match SafeId::new("s1") {
        Ok(id) => SessionUri::canonical(id),
        Err(error) => panic!("`s1` is a valid id: {error}"),
    };
    let chat = ChatUri::default_for(&session);
    let start = StartSession {
        signals: SignalSink::new(chat.clone(), tx),
        session,
        chat,
        working_directory: working_directory.to_owned(),
        model: None,
    };
    (start, rx)
}

/// A turn `id` with `text` and nothing else.
pub fn turn_request(id: &str, text: &str) -> TurnRequest {
    TurnRequest {
        turn_id: id.into(),
        text: text.into(),
        instructions: Vec::new(),
        attachments: Vec::new(),
        model: None,
        mode: crate::AgentMode::Interactive,
    }
}

/// Polls `check` every 20 ms until it holds; panics naming `what` after `deadline` (for waits
/// across a process boundary, where no signal says when).
pub async fn poll(what: &str, deadline: Duration, mut check: impl FnMut() -> bool) {
    let until = Instant::now() + deadline;
    while !check() {
        assert!(Instant::now() < until, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The action a signal carries, if it is an action.
pub fn action(signal: &AgentSignal) -> Option<&StateAction> {
    match signal {
        AgentSignal::Action(action) => Some(&action.action),
        _ => None,
    }
}

/// The signals of one chat, read until what a test waits for.
#[derive(Debug)]
pub struct SignalLog {
    rx: mpsc::Receiver<RoutedSignal>,
    seen: Vec<AgentSignal>,
    deadline: Duration,
}

impl SignalLog {
    /// Reads `rx`; each wait fails after `deadline`.
    pub fn new(rx: mpsc::Receiver<RoutedSignal>, deadline: Duration) -> Self {
        Self {
            rx,
            seen: Vec::new(),
            deadline,
        }
    }

    /// Every signal read so far, in order.
    pub fn seen(&self) -> &[AgentSignal] {
        &self.seen
    }

    /// Reads signals until `stop` picks one and returns it; panics naming `what` (and every
    /// signal seen) when none comes within the deadline or the channel closes.
    pub async fn until(&mut self, what: &str, stop: impl Fn(&AgentSignal) -> bool) -> AgentSignal {
        let until = Instant::now() + self.deadline;
        loop {
            let next = match tokio::time::timeout_at(until, self.rx.recv()).await {
                Ok(Some(next)) => next,
                Ok(None) => panic!(
                    "the signal channel closed before {what}; seen {:#?}",
                    self.seen
                ),
                Err(_) => panic!(
                    "no {what} within {:?}; seen {:#?}",
                    self.deadline, self.seen
                ),
            };
            self.seen.push(next.signal.clone());
            if stop(&next.signal) {
                return next.signal;
            }
        }
    }

    /// Waits for `chat/error`; returns its error type and message.
    pub async fn chat_error(&mut self) -> (String, String) {
        let signal = self
            .until("chat/error", |s| {
                matches!(action(s), Some(StateAction::ChatError(_)))
            })
            .await;
        match action(&signal) {
            Some(StateAction::ChatError(error)) => (
                error.part.error.error_type.clone(),
                error.part.error.message.clone(),
            ),
            _ => panic!("until returned another signal: {signal:?}"),
        }
    }

    /// Waits for `chat/turnComplete` of `turn_id`.
    pub async fn turn_complete(&mut self, turn_id: &str) {
        self.until("chat/turnComplete", |s| {
            matches!(action(s), Some(StateAction::ChatTurnComplete(done)) if done.turn_id == turn_id)
        })
        .await;
    }

    /// Waits for `chat/turnCancelled` of `turn_id`.
    pub async fn turn_cancelled(&mut self, turn_id: &str) {
        self.until("chat/turnCancelled", |s| {
            matches!(action(s), Some(StateAction::ChatTurnCancelled(done)) if done.turn_id == turn_id)
        })
        .await;
    }

    /// Waits for a pending confirmation; returns its tool call id.
    pub async fn pending_confirmation(&mut self) -> String {
        let signal = self
            .until("a pending confirmation", |s| {
                matches!(s, AgentSignal::PendingConfirmation(_))
            })
            .await;
        match signal {
            AgentSignal::PendingConfirmation(pending) => pending.state.tool_call_id.clone(),
            other => panic!("until returned another signal: {other:?}"),
        }
    }
}
