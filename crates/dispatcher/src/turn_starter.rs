//! The turn starter, shared by direct and queued turns: one
//! sequence, two callers — the orchestrator for a client's (or the host's) turn, and the
//! `queueDrain` contribution for a queued message. Each supplies the effects through
//! [`TurnStarterPorts`]; the order of the steps lives here only.
//!
//! | Step | What happens |
//! |---|---|
//! | 1 | `onIncomingRequest` with every request field, synchronously |
//! | 2 | `handled` → `onTurnEnd(localCommand)`; stop |
//! | 3 | `reject` → `chat/error` with the disposition's error, `onTurnEnd(rejected)`; stop |
//! | 4 | accept → look up the session's agent |
//! | 5 | no agent → `chat/error noAgent` ("No agent found for session"), `onTurnEnd(rejected)`; stop |
//! | 6 | report the accepted turn (telemetry with its source, the turn tracker); return the agent |
//!
//! A refused request reports neither `userMessageSent` nor a turn completion — only
//! `onTurnEnd(rejected)`.

use agenthost_protocol::SessionUri;
use agenthost_protocol::ahp_types::state::ErrorInfo;
use agenthost_protocol::error_info::{NO_AGENT, error_info};

use crate::dispatcher::Dispatcher;
use crate::payload::{Disposition, IncomingRequest, TurnEndReason};

/// The effects of the turn starter, supplied by its caller.
pub trait TurnStarterPorts {
    /// Ends the refused request's turn: `chat/error` carrying `error` on the turn channel.
    fn refuse(&self, request: &IncomingRequest, error: &ErrorInfo);

    /// The agent (provider id) serving `session`, when one can.
    fn agent_of(&self, session: &SessionUri) -> Option<String>;

    /// `onTurnEnd` for the request's turn, with the caller's bookkeeping.
    fn turn_end(&self, request: &IncomingRequest, reason: TurnEndReason);

    /// The request was admitted and `agent` will serve it (telemetry, turn tracker).
    fn accepted(&self, request: &IncomingRequest, agent: &str);
}

impl Dispatcher {
    /// Runs the turn starter for `request`: the agent to send the turn to, or `None` when the
    /// request was handled or refused (its turn already ended, with the reason reported).
    pub fn start_turn(
        &self,
        request: &IncomingRequest,
        ports: &dyn TurnStarterPorts,
    ) -> Option<String> {
        match self.incoming_request(request) {
            Disposition::Accept => {}
            Disposition::Handled => {
                ports.turn_end(request, TurnEndReason::LocalCommand);
                return None;
            }
            Disposition::Reject { error, .. } => {
                ports.refuse(request, &error);
                ports.turn_end(request, TurnEndReason::Rejected { error });
                return None;
            }
        }
        let Some(agent) = ports.agent_of(&request.session) else {
            let error = error_info(NO_AGENT, "No agent found for session");
            ports.refuse(request, &error);
            ports.turn_end(request, TurnEndReason::Rejected { error });
            return None;
        };
        ports.accepted(request, &agent);
        Some(agent)
    }
}

#[cfg(test)]
#[path = "turn_starter_tests.rs"]
mod tests;
