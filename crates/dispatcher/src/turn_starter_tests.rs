use std::sync::{Arc, Mutex};

use agenthost_protocol::ahp_types::state::ErrorInfo;
use agenthost_protocol::error_info::{NO_AGENT, error_info};

use crate::test_support::{Act, dispatcher, entries, incoming, log, probe};
use crate::{
    Disposition, Hook, HostAccess, IncomingRequest, RejectStage, RequestSource, TurnEndReason,
    TurnStarterPorts,
};

/// Records every port call in order.
#[derive(Default)]
struct Ports {
    agent: Option<&'static str>,
    calls: Mutex<Vec<String>>,
}

impl Ports {
    fn with_agent(agent: &'static str) -> Self {
        Self {
            agent: Some(agent),
            ..Self::default()
        }
    }

    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }

    fn push(&self, line: String) {
        self.calls.lock().unwrap().push(line);
    }
}

impl TurnStarterPorts for Ports {
    fn refuse(&self, request: &IncomingRequest, error: &ErrorInfo) {
        self.push(format!("refuse {} {}", request.turn_id, error.error_type));
    }

    fn agent_of(&self, session: &agenthost_protocol::SessionUri) -> Option<String> {
        self.push(format!("agent_of {session}"));
        self.agent.map(str::to_owned)
    }

    fn turn_end(&self, request: &IncomingRequest, reason: TurnEndReason) {
        let reason = match reason {
            TurnEndReason::Rejected { error } => format!("rejected {}", error.error_type),
            other => format!("{other:?}"),
        };
        self.push(format!("turn_end {} {reason}", request.turn_id));
    }

    fn accepted(&self, request: &IncomingRequest, agent: &str) {
        self.push(format!(
            "accepted {} {agent} {:?}",
            request.turn_id, request.source
        ));
    }
}

#[test]
fn an_accepted_request_with_an_agent_returns_it_and_reports_acceptance() {
    let dispatcher = dispatcher();
    let ports = Ports::with_agent("scripted");
    let agent = dispatcher.start_turn(&incoming(RequestSource::Queued), &ports);
    assert_eq!(agent.as_deref(), Some("scripted"));
    assert_eq!(
        ports.calls(),
        ["agent_of ahp-session:/s", "accepted t1 scripted Queued"]
    );
}

#[test]
fn no_agent_refuses_with_no_agent_and_reports_a_rejected_end_only() {
    let dispatcher = dispatcher();
    let ports = Ports::default();
    assert_eq!(
        dispatcher.start_turn(&incoming(RequestSource::Direct), &ports),
        None
    );
    assert_eq!(
        ports.calls(),
        [
            "agent_of ahp-session:/s".to_owned(),
            format!("refuse t1 {NO_AGENT}"),
            format!("turn_end t1 rejected {NO_AGENT}"),
        ]
    );
}

#[test]
fn a_handled_request_ends_as_a_local_command_without_an_agent_lookup() {
    let dispatcher = dispatcher();
    let log = log();
    let _gate = probe(
        &dispatcher,
        "gate",
        10,
        &[Hook::IncomingRequest],
        &log,
        Act::Dispose(Disposition::Handled),
    );
    let ports = Ports::with_agent("scripted");
    assert_eq!(
        dispatcher.start_turn(&incoming(RequestSource::Direct), &ports),
        None
    );
    assert_eq!(ports.calls(), ["turn_end t1 LocalCommand"]);
    assert_eq!(entries(&log), ["gate onIncomingRequest Direct"]);
}

#[test]
fn a_rejected_request_carries_the_gate_error_to_chat_error_and_turn_end() {
    let dispatcher = dispatcher();
    let log = log();
    let _gate = probe(
        &dispatcher,
        "gate",
        10,
        &[Hook::IncomingRequest],
        &log,
        Act::Dispose(Disposition::Reject {
            error: error_info("archived", "This chat is archived."),
            stage: RejectStage::Validation,
        }),
    );
    let ports = Ports::with_agent("scripted");
    assert_eq!(
        dispatcher.start_turn(&incoming(RequestSource::Queued), &ports),
        None
    );
    assert_eq!(
        ports.calls(),
        ["refuse t1 archived", "turn_end t1 rejected archived"]
    );
}

#[test]
fn the_dispatcher_is_a_service_reachable_through_a_weak_host_access() {
    let dispatcher = dispatcher();
    let access: Arc<HostAccess> = dispatcher.services().get::<HostAccess>().unwrap();
    assert!(access.dispatcher().is_some());
    assert!(access.get().is_none(), "no host registered yet");
    drop(dispatcher);
    assert!(
        access.dispatcher().is_none(),
        "the service does not keep the dispatcher alive"
    );
}
