//! `sessionModes` (order 240; `onDidDispatchAction`, `onOutgoingTurn`): the session config
//! properties `mode` and `autoApprove`, and what the host does for them.
//!
//! VS Code draws its "Agent Mode" and "Approvals" pickers for exactly these two properties
//! ([`mode_property`], [`auto_approve_property`]: string enums holding `interactive` /
//! `default`, nothing dynamic, mutable during the session). Their values are the session's
//! config values; a change (`session/configChanged`) takes effect from the next confirmation,
//! question or turn — nothing is cached here.
//!
//! | Value | What the host does |
//! |---|---|
//! | `mode: interactive` | nothing |
//! | `mode: plan` | the provider starts the agent in its own plan mode (`TurnRequest::mode`); every turn carries [`PLAN_INSTRUCTION`]; every confirmation the agent asks for is denied ([`PLAN_DENIAL`]) |
//! | `mode: autopilot` | every question the agent asks (`chat/inputRequested`) is answered at once: text questions with [`AUTOPILOT_ANSWER`], others skipped; confirmations are left to the session's unattended policy |
//! | `autoApprove: autoApprove` (not in plan mode) | every confirmation is approved at once (`confirmed: "setting"`), whether or not a client watches — the user's explicit choice |
//! | `autoApprove: default` | nothing |
//!
//! Answers are submitted through the [`ClientActionIntake`] as client [`CLIENT_ID`], so they
//! reach the agent like any client's, are audited (`auditLog`) and are refused when the
//! obligation was answered first; submissions run on a spawned task, never in the hook.
#![deny(missing_docs)]

use std::collections::HashMap;
use std::sync::Arc;

use agenthost_dispatcher::{
    ChatContribution, Contribution, ContributionContext, DispatchedAction, Hook, HookFuture,
    HookResult, HookSet, MissingService, OutgoingTurn, SendContribution, ServiceRegistry,
};
use agenthost_protocol::actions::ChatInputCompletedAction;
use agenthost_protocol::state::{
    ChatInputAnswer, ChatInputAnswerValue, ChatInputAnswered, ChatInputQuestion,
    ChatInputResponseKind, ChatInputSkipped, ChatInputTextAnswerValue, SessionConfigPropertySchema,
    ToolCallConfirmationReason,
};
use agenthost_protocol::{StateAction, ToolCallKey};
use agenthost_provider_api::{AgentMode, MODE_KEY};
use agenthost_services::{ClientActionIntake, HostState};
use serde_json::Value;

/// The session config key of VS Code's "Approvals" picker.
pub const AUTO_APPROVE_KEY: &str = "autoApprove";

/// The client id the host's answers are submitted as.
pub const CLIENT_ID: &str = "agenthost:session-mode";

/// What a question gets in autopilot (VS Code's own autopilot answer).
pub const AUTOPILOT_ANSWER: &str = "The user is not available to answer your question. Choose a \
                                    pragmatic option best aligned with the context of the request.";

/// The instruction every turn in plan mode carries.
pub const PLAN_INSTRUCTION: &str = "This session is in plan mode. Investigate and write a plan \
     for the request: read what you need, then describe the steps you would take. Do not change \
     files, do not run commands that change anything, and do not start the work the plan \
     describes; the user switches the session out of plan mode to have it carried out.";

/// Why a confirmation is denied in plan mode.
pub const PLAN_DENIAL: &str = "Denied: the session is in plan mode, where nothing is changed. \
     Describe this step in the plan instead.";

/// The `mode` property: VS Code's "Agent Mode" picker.
pub fn mode_property() -> SessionConfigPropertySchema {
    agenthost_services::string_config_property(
        "Agent Mode",
        "How the agent works: `interactive` step by step; `plan` plans first and changes \
         nothing; `autopilot` works to the end on its own, its questions answered by the host.",
        "interactive",
        &[
            ("interactive", "Interactive"),
            ("plan", "Plan"),
            ("autopilot", "Autopilot"),
        ],
        true,
    )
}

/// The `autoApprove` property: VS Code's "Approvals" picker.
pub fn auto_approve_property() -> SessionConfigPropertySchema {
    agenthost_services::string_config_property(
        "Approvals",
        "`default`: confirmations wait for a user (or the session's unattended policy); \
         `autoApprove`: the host approves every tool call of the session at once.",
        "default",
        &[
            ("default", "Default Approvals"),
            ("autoApprove", "Bypass Approvals"),
        ],
        true,
    )
}

/// The initial values of both properties.
pub fn session_config_values() -> serde_json::Map<String, Value> {
    [
        (MODE_KEY.to_owned(), Value::from("interactive")),
        (AUTO_APPROVE_KEY.to_owned(), Value::from("default")),
    ]
    .into_iter()
    .collect()
}

/// The `sessionModes` contribution. It needs `dyn HostState` and `dyn ClientActionIntake` in
/// the registry.
pub struct SessionModes {
    state: Arc<dyn HostState>,
    intake: Arc<dyn ClientActionIntake>,
}

impl std::fmt::Debug for SessionModes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionModes").finish_non_exhaustive()
    }
}

/// A session's two values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Modes {
    mode: AgentMode,
    auto_approve: bool,
}

impl SessionModes {
    /// Reads session config from `state`; answers through `intake`.
    pub fn new(state: Arc<dyn HostState>, intake: Arc<dyn ClientActionIntake>) -> Self {
        Self { state, intake }
    }

    fn modes(&self, session: &str) -> Modes {
        let Some(state) = self.state.session(session) else {
            return Modes {
                mode: AgentMode::Interactive,
                auto_approve: false,
            };
        };
        let auto_approve = state
            .config
            .as_ref()
            .and_then(|config| config.values.get(AUTO_APPROVE_KEY))
            .and_then(Value::as_str)
            == Some("autoApprove");
        Modes {
            mode: AgentMode::of_session(&state),
            auto_approve,
        }
    }

    /// Submits `action` on `chat` on a spawned task.
    fn submit(&self, session: &str, chat: &str, action: StateAction, what: &'static str) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(session, chat, what, "sessionModes: no runtime to answer on");
            return;
        };
        let intake = Arc::clone(&self.intake);
        let (session, chat) = (session.to_owned(), chat.to_owned());
        handle.spawn(async move {
            match intake.submit(CLIENT_ID, &chat, action).await {
                Ok(seq) => tracing::info!(session, chat, seq, what, "sessionModes answered"),
                // Someone answered first, or the turn ended meanwhile.
                Err(error) => {
                    tracing::debug!(session, chat, what, %error, "sessionModes: answer refused")
                }
            }
        });
    }
}

/// The answer to `questions` in autopilot: text questions get [`AUTOPILOT_ANSWER`], the others
/// are skipped.
pub fn autopilot_answers(questions: &[ChatInputQuestion]) -> HashMap<String, ChatInputAnswer> {
    questions
        .iter()
        .filter_map(|question| {
            let id = agenthost_reducers::validation::question_id_of(question)?.to_owned();
            let answer = match question {
                ChatInputQuestion::Text(_) => ChatInputAnswer::Submitted(ChatInputAnswered {
                    value: ChatInputAnswerValue::Text(ChatInputTextAnswerValue {
                        value: AUTOPILOT_ANSWER.to_owned(),
                    }),
                }),
                _ => ChatInputAnswer::Skipped(ChatInputSkipped::default()),
            };
            Some((id, answer))
        })
        .collect()
}

impl Contribution for SessionModes {
    const ID: &'static str = "sessionModes";
    const ORDER: i32 = 240;
    const HOOKS: HookSet = HookSet::of(&[Hook::DidDispatchAction, Hook::OutgoingTurn]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Ok(Self::new(
            services.get::<dyn HostState>()?,
            services.get::<dyn ClientActionIntake>()?,
        ))
    }
}

impl ChatContribution for SessionModes {
    fn on_did_dispatch_action(&self, action: &DispatchedAction<'_>) -> HookResult {
        if action.rejection_reason.is_some() {
            return Ok(());
        }
        let (Some(session), Some(_)) = (action.session, action.chat) else {
            return Ok(());
        };
        let session = session.as_str();
        match action.action {
            // A confirmation the agent asks for: `toolCallReady` without `confirmed`.
            StateAction::ChatToolCallReady(ready) if ready.confirmed.is_none() => {
                let modes = self.modes(session);
                let key = ToolCallKey::new(
                    action.channel,
                    ready.turn_id.clone(),
                    ready.tool_call_id.clone(),
                );
                if modes.mode == AgentMode::Plan {
                    let deny = agenthost_tool_execution::answers::deny_parameters(
                        &key,
                        Some(PLAN_DENIAL.to_owned()),
                        None,
                    );
                    self.submit(session, action.channel, deny, "plan mode denial");
                } else if modes.auto_approve {
                    let approve = agenthost_tool_execution::answers::approve_parameters(
                        &key,
                        ToolCallConfirmationReason::Setting,
                        None,
                    );
                    self.submit(session, action.channel, approve, "auto-approval");
                }
            }
            StateAction::ChatInputRequested(requested)
                if self.modes(session).mode == AgentMode::Autopilot =>
            {
                let answer = StateAction::ChatInputCompleted(ChatInputCompletedAction {
                    request_id: requested.request.id.clone(),
                    response: ChatInputResponseKind::Accept,
                    answers: Some(autopilot_answers(
                        requested.request.questions.as_deref().unwrap_or_default(),
                    )),
                });
                self.submit(session, action.channel, answer, "autopilot answer");
            }
            _ => {}
        }
        Ok(())
    }

    fn on_outgoing_turn<'a>(
        &'a self,
        turn: &'a OutgoingTurn,
    ) -> HookFuture<'a, Option<SendContribution>> {
        Box::pin(async move {
            if self.modes(&turn.session).mode != AgentMode::Plan {
                return Ok(None);
            }
            Ok(Some(SendContribution {
                instructions: Some(vec![PLAN_INSTRUCTION.to_owned()]),
                text: None,
            }))
        })
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
