//! Tool calls: start, arguments, readiness, permissions, output and completion.

use super::*;

impl TurnMap {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn tool_started(
        &mut self,
        scope: &Scope,
        tool_call_id: String,
        tool_name: String,
        display_name: String,
        contributor: Option<ToolCallContributor>,
        meta: Option<JsonObject>,
        out: &mut Emitter<'_>,
    ) {
        let Some(id) = valid_id(&tool_call_id, "tool call") else {
            return;
        };
        if self.tools.contains_key(id.as_str()) {
            tracing::debug!(tool_call_id, "ignoring a second start of a tool call");
            return;
        }
        let Some(parent) = self.enter_scope(scope, out) else {
            return;
        };
        let parts = self
            .scopes
            .entry(parent.as_ref().map(|p| p.as_str().to_owned()))
            .or_default();
        parts.markdown = None;
        parts.reasoning = None;
        self.tools.insert(
            id.into_string(),
            ToolTrack {
                scope: parent.clone(),
                display_name: display_name.clone(),
                status: ToolStatus::Streaming,
                invocation_message: None,
                tool_input: None,
                meta: None,
            },
        );
        out.action(
            parent.as_ref(),
            StateAction::ChatToolCallStart(ChatToolCallStartAction {
                turn_id: self.id.clone(),
                tool_call_id,
                meta,
                tool_name,
                display_name,
                intention: None,
                contributor,
            }),
        );
    }

    /// The tracked tool call, or `None` (with a warning) when the mapper never saw it start.
    pub(super) fn known_tool(&mut self, tool_call_id: &str, event: &str) -> Option<&mut ToolTrack> {
        let tool = self.tools.get_mut(tool_call_id);
        if tool.is_none() {
            tracing::warn!(
                tool_call_id,
                event,
                "dropping an event of an unknown tool call"
            );
        }
        tool
    }

    pub(super) fn tool_args(
        &mut self,
        tool_call_id: &str,
        partial_json: Option<String>,
        invocation_message: Option<String>,
        out: &mut Emitter<'_>,
    ) {
        let turn_id = self.id.clone();
        let Some(tool) = self.known_tool(tool_call_id, "toolArgsDelta") else {
            return;
        };
        if tool.status != ToolStatus::Streaming {
            tracing::debug!(tool_call_id, "ignoring arguments of a tool that is ready");
            return;
        }
        if partial_json.is_none() && invocation_message.is_none() {
            return;
        }
        if let Some(message) = &invocation_message {
            tool.invocation_message = Some(message.clone());
        }
        let parent = tool.scope.clone();
        out.action(
            parent.as_ref(),
            StateAction::ChatToolCallDelta(ChatToolCallDeltaAction {
                turn_id,
                tool_call_id: tool_call_id.to_owned(),
                meta: None,
                content: partial_json,
                invocation_message: invocation_message.map(StringOrMarkdown::Plain),
            }),
        );
    }

    pub(super) fn tool_ready(
        &mut self,
        tool_call_id: &str,
        invocation_message: String,
        tool_input: Option<String>,
        auto_approved: bool,
        meta: Option<JsonObject>,
        out: &mut Emitter<'_>,
    ) {
        let turn_id = self.id.clone();
        let Some(tool) = self.known_tool(tool_call_id, "toolReady") else {
            return;
        };
        if tool.status != ToolStatus::Streaming {
            // A second ready would override a pending answer or repeat a running one.
            tracing::debug!(
                tool_call_id,
                "ignoring a ready for a tool that is not streaming"
            );
            return;
        }
        tool.invocation_message = Some(invocation_message);
        tool.tool_input = tool_input;
        tool.meta = meta;
        if !auto_approved {
            // The permission request that follows moves it on.
            return;
        }
        tool.status = ToolStatus::Running;
        let action = ready_not_needed(turn_id, tool_call_id, tool);
        let parent = tool.scope.clone();
        out.action(parent.as_ref(), action);
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn permission(
        &mut self,
        scope: &Scope,
        tool_call_id: String,
        tool_name: String,
        display_name: String,
        kind: PermissionKind,
        path: Option<String>,
        title: String,
        invocation_message: String,
        input: Option<String>,
        out: &mut Emitter<'_>,
    ) {
        if !self.tools.contains_key(&tool_call_id) {
            // Invariant 2: the start precedes the (pending) ready.
            self.tool_started(
                scope,
                tool_call_id.clone(),
                tool_name.clone(),
                display_name.clone(),
                None,
                None,
                out,
            );
        }
        let turn_id = self.id.clone();
        let Some(tool) = self.tools.get_mut(&tool_call_id) else {
            return;
        };
        if tool.status == ToolStatus::Completed {
            tracing::warn!(
                tool_call_id,
                "dropping a permission request for a completed tool call"
            );
            return;
        }
        tool.status = ToolStatus::Pending;
        let input = input.or_else(|| tool.tool_input.clone());
        let state = ToolCallPendingConfirmationState {
            tool_call_id,
            tool_name,
            display_name,
            intention: None,
            contributor: None,
            meta: tool.meta.clone(),
            invocation_message: StringOrMarkdown::Plain(invocation_message),
            tool_input: input.map(ToolInput::Inline),
            confirmation_title: (!title.is_empty()).then_some(StringOrMarkdown::Plain(title)),
            risk_assessment: None,
            edits: None,
            editable: None,
            options: None,
        };
        out.signals
            .push(AgentSignal::PendingConfirmation(PendingConfirmation {
                session: out.session.clone(),
                turn_id,
                state,
                permission_kind: kind,
                permission_path: path,
                parent_tool_call_id: tool.scope.clone(),
            }));
    }

    pub(super) fn permission_resolved(&mut self, tool_call_id: &str, approved: bool) {
        let Some(tool) = self.known_tool(tool_call_id, "permissionResolved") else {
            return;
        };
        if approved && tool.status == ToolStatus::Pending {
            tool.status = ToolStatus::Running;
        }
    }

    pub(super) fn tool_output(
        &mut self,
        tool_call_id: &str,
        content: Vec<ToolResultContent>,
        meta: Option<JsonObject>,
        out: &mut Emitter<'_>,
    ) {
        let turn_id = self.id.clone();
        let Some(tool) = self.known_tool(tool_call_id, "toolOutput") else {
            return;
        };
        if tool.status != ToolStatus::Running {
            tracing::debug!(
                tool_call_id,
                "ignoring output of a tool that is not running"
            );
            return;
        }
        let parent = tool.scope.clone();
        out.action(
            parent.as_ref(),
            StateAction::ChatToolCallContentChanged(ChatToolCallContentChangedAction {
                turn_id,
                tool_call_id: tool_call_id.to_owned(),
                meta,
                content,
            }),
        );
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn tool_completed(
        &mut self,
        tool_call_id: &str,
        success: bool,
        past_tense_message: Option<String>,
        content: Vec<ToolResultContent>,
        structured_content: Option<JsonObject>,
        error: Option<ToolError>,
        out: &mut Emitter<'_>,
    ) {
        let turn_id = self.id.clone();
        let Some(tool) = self.known_tool(tool_call_id, "toolCompleted") else {
            return;
        };
        if tool.status == ToolStatus::Completed {
            tracing::debug!(tool_call_id, "ignoring a second completion of a tool call");
            return;
        }
        let parent = tool.scope.clone();
        if tool.status == ToolStatus::Streaming {
            // Invariant 3: the reducer drops a completion of a streaming tool.
            out.action(
                parent.as_ref(),
                ready_not_needed(turn_id.clone(), tool_call_id, tool),
            );
        }
        tool.status = ToolStatus::Completed;
        let past_tense_message = past_tense_message.unwrap_or_else(|| {
            if success {
                format!("Ran {}", tool.display_name)
            } else {
                format!("{} failed", tool.display_name)
            }
        });
        let error = error.map(|error| match error.code {
            Some(code) => json!({ "message": error.message, "code": code }),
            None => json!({ "message": error.message }),
        });
        let result = ToolCallResult {
            success,
            past_tense_message: StringOrMarkdown::Plain(past_tense_message),
            content: (!content.is_empty()).then_some(content),
            structured_content,
            error,
        };
        out.action(
            parent.as_ref(),
            StateAction::ChatToolCallComplete(ChatToolCallCompleteAction {
                turn_id,
                tool_call_id: tool_call_id.to_owned(),
                meta: None,
                result,
                requires_result_confirmation: None,
            }),
        );
    }
}
