//! The `auditLog` contribution (order 800, `onDidApplyClientAction`).
//!
//! The central decision: **the audit log records decisions, not traffic.** Every accepted client
//! action that answers the agent or stops it — `chat/toolCallConfirmed`,
//! `chat/toolCallResultConfirmed`, `chat/inputCompleted`, `chat/turnCancelled` — becomes one
//! entry through [`AuditLog`], with the token the client connected with (`host` for the host's
//! own answers, such as the unattended policy's), the client id, the channel and what was
//! decided (the tool call and whether it was approved, the request and its answer, the turn).
//! Rejected actions change nothing and are not recorded; rollbacks are recorded by the host's
//! rollback command through the same service.
#![deny(missing_docs)]

use std::sync::Arc;

use agenthost_dispatcher::{
    AppliedClientAction, ChatContribution, Contribution, ContributionContext, Hook, HookResult,
    HookSet, MissingService, ServiceRegistry,
};
use agenthost_protocol::StateAction;
use agenthost_services::{AuditLog, audit_entry};
use serde_json::{Value, json};

/// The `auditLog` contribution. Register it with `dispatcher.register::<AuditLogContribution>()`;
/// it needs `dyn AuditLog` in the registry.
pub struct AuditLogContribution {
    log: Arc<dyn AuditLog>,
}

impl std::fmt::Debug for AuditLogContribution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLogContribution")
            .finish_non_exhaustive()
    }
}

impl AuditLogContribution {
    /// Records through `log`.
    pub fn new(log: Arc<dyn AuditLog>) -> Self {
        Self { log }
    }
}

impl Contribution for AuditLogContribution {
    const ID: &'static str = "auditLog";
    const ORDER: i32 = 800;
    const HOOKS: HookSet = HookSet::of(&[Hook::DidApplyClientAction]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Ok(Self::new(services.get::<dyn AuditLog>()?))
    }
}

impl ChatContribution for AuditLogContribution {
    fn on_did_apply_client_action(&self, applied: &AppliedClientAction<'_>) -> HookResult {
        let Some((action, detail)) = decision(applied.action) else {
            return Ok(());
        };
        self.log.record(audit_entry(
            applied.client_context.token.as_deref(),
            applied.client_id,
            applied.channel,
            action,
            detail,
        ));
        Ok(())
    }
}

/// The audited decision an action is, as its type and details; `None` for every other action.
pub fn decision(action: &StateAction) -> Option<(&'static str, Value)> {
    let as_json = |action: &StateAction| serde_json::to_value(action).unwrap_or(Value::Null);
    let keep = |value: Value, keys: &[&str]| -> Value {
        let mut out = serde_json::Map::new();
        for key in keys {
            if let Some(v) = value.get(*key) {
                out.insert((*key).to_owned(), v.clone());
            }
        }
        Value::Object(out)
    };
    match action {
        StateAction::ChatToolCallConfirmed(_) => Some((
            "chat/toolCallConfirmed",
            keep(
                as_json(action),
                &[
                    "turnId",
                    "toolCallId",
                    "approved",
                    "reason",
                    "selectedOptionId",
                ],
            ),
        )),
        StateAction::ChatToolCallResultConfirmed(_) => Some((
            "chat/toolCallResultConfirmed",
            keep(as_json(action), &["turnId", "toolCallId", "approved"]),
        )),
        StateAction::ChatInputCompleted(_) => Some((
            "chat/inputCompleted",
            keep(as_json(action), &["requestId", "response", "answers"]),
        )),
        StateAction::ChatTurnCancelled(a) => {
            Some(("chat/turnCancelled", json!({ "turnId": a.turn_id })))
        }
        _ => None,
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
