//! A client mirror (the official `ahp` crate's `MultiHostStateMirror`, as a client would run it)
//! seeded from snapshots and fed every accepted envelope over the wire (JSON text) converges with
//! the host's state byte for byte; rejected envelopes reach the dispatching client only as echoes
//! with a `rejectionReason` and never change either side.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agenthost_protocol::ahp_types::state::{
    ChatState, RootState, SessionState, Snapshot, SnapshotState,
};
use agenthost_protocol::{ActionEnvelope, ActionOrigin, StateAction};
use agenthost_reducers::projection::sync_session_input_needed;
use agenthost_reducers::{ApplyError, HostState};
use ahp::hosts::HostId;
use ahp::{HostedResourceKey, MultiHostStateMirror};
use serde_json::{Value, json};

const SESSION: &str = "claude:/7f1c";
const CHAT: &str = "ahp-chat:/main";
const CLIENT: &str = "vscode-1";
const T0: &str = "2026-03-01T10:00:00.000Z";

struct Wire {
    host: HostState,
    mirror: MultiHostStateMirror,
    host_id: HostId,
    server_seq: u64,
    client_seq: i64,
    rejections: Vec<String>,
}

impl Wire {
    fn new() -> Self {
        let root: RootState = serde_json::from_value(json!({ "agents": [] })).unwrap();
        let mut session: SessionState = serde_json::from_value(json!({
            "provider": "claude", "title": "Fix the build", "status": 1, "lifecycle": "ready",
            "activeClients": [], "chats": [], "workingDirectories": ["file:///repo"]
        }))
        .unwrap();
        let chat: ChatState = serde_json::from_value(json!({
            "resource": CHAT, "title": "Fix the build", "status": 1, "modifiedAt": T0, "turns": []
        }))
        .unwrap();
        session
            .chats
            .push(agenthost_reducers::projection::chat_summary(&chat));

        let mut host = HostState::new(root);
        host.insert_session(&SESSION.parse().unwrap(), session.clone())
            .unwrap();
        host.insert_chat(
            &SESSION.parse().unwrap(),
            &chat.clone().resource.parse().unwrap(),
            chat.clone(),
        )
        .unwrap();

        let host_id = HostId::new("local");
        let mut mirror = MultiHostStateMirror::new();
        for (resource, state) in [
            (SESSION, SnapshotState::Session(Box::new(session))),
            (CHAT, SnapshotState::Chat(Box::new(chat))),
        ] {
            mirror.apply_snapshot(
                &host_id,
                &Snapshot {
                    resource: resource.into(),
                    state,
                    from_seq: 0,
                },
            );
        }
        Self {
            host,
            mirror,
            host_id,
            server_seq: 0,
            client_seq: 0,
            rejections: Vec::new(),
        }
    }

    /// Sends an envelope over the "wire": JSON text out, decoded on the client side.
    fn broadcast(&mut self, envelope: ActionEnvelope) {
        let text = serde_json::to_string(&envelope).unwrap();
        let received: ActionEnvelope = serde_json::from_str(&text).unwrap();
        assert_eq!(received, envelope, "envelopes round-trip");
        self.mirror.apply_envelope(&self.host_id, &received);
    }

    fn next_seq(&mut self) -> u64 {
        self.server_seq += 1;
        self.server_seq
    }

    fn server(&mut self, channel: &str, action: Value) {
        let action: StateAction = serde_json::from_value(action).unwrap();
        self.host.apply_server_action(channel, &action).unwrap();
        let server_seq = self.next_seq();
        self.broadcast(ActionEnvelope {
            channel: channel.into(),
            action,
            server_seq,
            origin: None,
            rejection_reason: None,
        });
        self.project();
    }

    fn client(&mut self, channel: &str, action: Value) {
        let action: StateAction = serde_json::from_value(action).unwrap();
        self.client_seq += 1;
        let origin = Some(ActionOrigin {
            client_id: CLIENT.into(),
            client_seq: self.client_seq,
        });
        match self.host.apply_client_action(channel, &action, CLIENT) {
            Ok(_) => {
                let server_seq = self.next_seq();
                self.broadcast(ActionEnvelope {
                    channel: channel.into(),
                    action,
                    server_seq,
                    origin,
                    rejection_reason: None,
                });
                self.project();
            }
            Err(ApplyError::Rejected(rejection)) => {
                // The echo goes to the dispatcher only; its client drops the optimistic copy.
                let echo = ActionEnvelope {
                    channel: channel.into(),
                    action,
                    server_seq: self.next_seq(),
                    origin,
                    rejection_reason: Some(rejection.to_string()),
                };
                let text = serde_json::to_string(&echo).unwrap();
                assert!(text.contains("\"rejectionReason\""));
                self.rejections.push(rejection.to_string());
            }
            Err(ApplyError::UnknownChannel(channel)) => panic!("unknown channel {channel}"),
        }
    }

    /// The host keeps the session's `inputNeeded` in sync after every chat change.
    fn project(&mut self) {
        for action in sync_session_input_needed(&self.host, SESSION) {
            let action = serde_json::to_value(action).unwrap();
            self.server(SESSION, action);
        }
    }

    fn assert_converged(&self) {
        let key = |uri: &str| HostedResourceKey::new(self.host_id.clone(), uri);
        let mirrored_chat = &self.mirror.chats()[&key(CHAT)];
        let mirrored_session = &self.mirror.sessions()[&key(SESSION)];
        assert_eq!(
            serde_json::to_string(mirrored_chat).unwrap(),
            serde_json::to_string(self.host.chat(CHAT).unwrap()).unwrap()
        );
        assert_eq!(
            serde_json::to_string(mirrored_session).unwrap(),
            serde_json::to_string(self.host.session(SESSION).unwrap()).unwrap()
        );
    }
}

#[test]
fn a_client_mirror_converges_with_the_host_through_a_turn_with_tools_and_rejections() {
    let mut wire = Wire::new();
    wire.client(
        SESSION,
        json!({
            "type": "session/activeClientSet",
            "activeClient": { "clientId": CLIENT, "displayName": "VS Code", "tools": [] }
        }),
    );
    wire.client(
        CHAT,
        json!({
            "type": "chat/turnStarted", "turnId": "t1", "startedAt": T0,
            "message": { "text": "make the tests pass", "origin": { "kind": "user" } }
        }),
    );
    // A second turn while one is active is refused.
    wire.client(
        CHAT,
        json!({
            "type": "chat/turnStarted", "turnId": "t2", "startedAt": T0,
            "message": { "text": "and lint", "origin": { "kind": "user" } }
        }),
    );
    wire.server(
        CHAT,
        json!({
            "type": "chat/responsePart", "turnId": "t1",
            "part": { "kind": "markdown", "id": "m1", "content": "Running " }
        }),
    );
    wire.server(
        CHAT,
        json!({ "type": "chat/delta", "turnId": "t1", "partId": "m1", "content": "the tests." }),
    );
    // A host tool that needs confirmation.
    wire.server(
        CHAT,
        json!({
            "type": "chat/toolCallStart", "turnId": "t1", "toolCallId": "bash-1",
            "toolName": "bash", "displayName": "Bash"
        }),
    );
    wire.server(
        CHAT,
        json!({
            "type": "chat/toolCallReady", "turnId": "t1", "toolCallId": "bash-1",
            "invocationMessage": "cargo test", "toolInput": "cargo test"
        }),
    );
    assert_eq!(
        wire.host
            .session(SESSION)
            .unwrap()
            .input_needed
            .as_ref()
            .map(Vec::len),
        Some(1)
    );
    wire.client(
        CHAT,
        json!({
            "type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": "bash-1",
            "approved": true, "confirmed": "user-action"
        }),
    );
    // Confirming twice is refused: it is no longer pending.
    wire.client(
        CHAT,
        json!({
            "type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": "bash-1",
            "approved": true, "confirmed": "user-action"
        }),
    );
    wire.server(
        CHAT,
        json!({
            "type": "chat/toolCallComplete", "turnId": "t1", "toolCallId": "bash-1",
            "result": { "success": true, "pastTenseMessage": "Ran cargo test" }
        }),
    );
    // A client tool, auto-approved, run by the client.
    wire.server(
        CHAT,
        json!({
            "type": "chat/toolCallStart", "turnId": "t1", "toolCallId": "open-1",
            "toolName": "openFile", "displayName": "Open file",
            "contributor": { "kind": "client", "clientId": CLIENT }
        }),
    );
    wire.server(
        CHAT,
        json!({
            "type": "chat/toolCallReady", "turnId": "t1", "toolCallId": "open-1",
            "invocationMessage": "open lib.rs", "confirmed": "not-needed"
        }),
    );
    wire.client(
        CHAT,
        json!({
            "type": "chat/toolCallComplete", "turnId": "t1", "toolCallId": "open-1",
            "result": { "success": true, "pastTenseMessage": "Opened lib.rs" }
        }),
    );
    wire.server(CHAT, json!({
        "type": "chat/inputRequested",
        "request": { "id": "ask-1", "questions": [
            { "kind": "single-select", "id": "fix", "message": "Apply the fix?", "required": true,
              "options": [{ "id": "yes", "label": "Yes" }, { "id": "no", "label": "No" }] }
        ] }
    }));
    // Accepting without the required answer is refused; with it, accepted.
    wire.client(
        CHAT,
        json!({ "type": "chat/inputCompleted", "requestId": "ask-1", "response": "accept" }),
    );
    wire.client(CHAT, json!({
        "type": "chat/inputCompleted", "requestId": "ask-1", "response": "accept",
        "answers": { "fix": { "state": "submitted", "value": { "kind": "selected", "value": "yes" } } }
    }));
    wire.server(CHAT, json!({ "type": "chat/usage", "turnId": "t1", "usage": { "inputTokens": 900, "outputTokens": 120 } }));
    wire.server(
        CHAT,
        json!({ "type": "chat/turnComplete", "turnId": "t1", "duration": 4200 }),
    );
    wire.client(
        CHAT,
        json!({ "type": "chat/turnCancelled", "turnId": "t1", "duration": 1 }),
    );

    assert_eq!(
        wire.rejections,
        [
            "a turn is already in progress; queue the message with chat/pendingMessageSet",
            "tool call is not awaiting confirmation",
            "required question \"fix\" has no submitted answer",
            "no active turn to cancel",
        ]
    );
    let chat = wire.host.chat(CHAT).unwrap();
    assert_eq!(chat.turns.len(), 1);
    assert!(chat.active_turn.is_none());
    assert!(wire.host.session(SESSION).unwrap().input_needed.is_none());
    wire.assert_converged();
}
