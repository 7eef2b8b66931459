#![allow(clippy::unwrap_used)]

use std::sync::Mutex;

use agenthost_dispatcher::{ClientContext, LaunchKind};
use agenthost_store::AuditRecord;

use super::*;

#[derive(Default)]
struct Recorded(Mutex<Vec<AuditRecord>>);

impl AuditLog for Recorded {
    fn record(&self, entry: AuditRecord) {
        self.0.lock().unwrap().push(entry);
    }
}

fn action(value: Value) -> StateAction {
    serde_json::from_value(value).unwrap()
}

#[test]
fn decisions_are_recorded_with_token_and_client_and_nothing_else_is() {
    let log = Arc::new(Recorded::default());
    let contribution = AuditLogContribution::new(log.clone());
    let mut context = ClientContext::unknown(LaunchKind::Serve);
    context.token = Some("laptop".to_owned());
    let actions = [
        action(
            json!({ "type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": "c1",
                       "approved": true }),
        ),
        action(json!({ "type": "chat/turnCancelled", "turnId": "t1", "duration": 5 })),
        action(json!({ "type": "chat/draftChanged", "draft": null })),
        action(json!({ "type": "session/titleChanged", "title": "x" })),
    ];
    for action in &actions {
        contribution
            .on_did_apply_client_action(&AppliedClientAction {
                channel: "ahp-chat:/c",
                session: Some(&"ahp-session:/s".parse().unwrap()),
                chat: Some(&"ahp-chat:/c".parse().unwrap()),
                action,
                client_id: Some("vscode-1"),
                client_context: &context,
            })
            .unwrap();
    }
    let recorded = log.0.lock().unwrap().clone();
    assert_eq!(recorded.len(), 2, "{recorded:?}");
    assert_eq!(recorded[0].token, "laptop");
    assert_eq!(recorded[0].client_id, "vscode-1");
    assert_eq!(recorded[0].action, "chat/toolCallConfirmed");
    let detail: Value = serde_json::from_str(&recorded[0].detail).unwrap();
    assert_eq!(detail["toolCallId"], "c1");
    assert_eq!(detail["approved"], true);
    assert_eq!(recorded[1].action, "chat/turnCancelled");
    // The host's own answers carry the token name `host`.
    context.token = None;
    contribution
        .on_did_apply_client_action(&AppliedClientAction {
            channel: "ahp-chat:/c",
            session: Some(&"ahp-session:/s".parse().unwrap()),
            chat: Some(&"ahp-chat:/c".parse().unwrap()),
            action: &actions[1],
            client_id: Some("agenthost"),
            client_context: &context,
        })
        .unwrap();
    assert_eq!(log.0.lock().unwrap()[2].token, "host");
}
