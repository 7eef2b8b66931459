//! Control requests (`can_use_tool`, `AskUserQuestion`), control responses and the turn's result.

use super::*;

impl Translator {
    pub(super) fn control_request(
        &mut self,
        request_id: String,
        request: ControlRequest,
        out: &mut Vec<Output>,
    ) {
        match request {
            ControlRequest::CanUseTool(request) => {
                self.cli_requests
                    .insert(request_id.clone(), request.tool_use_id.clone());
                self.can_use_tool(request_id, request, out);
            }
            ControlRequest::Other { subtype } => {
                out.push(Output::UnsupportedControlRequest {
                    request_id,
                    subtype,
                });
            }
        }
    }

    pub(super) fn can_use_tool(
        &mut self,
        request_id: String,
        request: CanUseTool,
        out: &mut Vec<Output>,
    ) {
        let deny = |message: &str| Output::DenyPermission {
            request_id: request_id.clone(),
            message: message.to_owned(),
        };
        let Some(turn) = &self.turn else {
            out.push(deny(
                "No turn is running, so nobody can approve this tool call.",
            ));
            return;
        };
        let Some(tool_use_id) = request.tool_use_id else {
            out.push(deny(
                "The request names no tool call, so it cannot be shown for approval.",
            ));
            return;
        };
        let scope = turn
            .tools
            .get(&tool_use_id)
            .map_or(Scope::Root, |tool| tool.scope.clone());
        if request.tool_name == tools::ASK_USER_QUESTION {
            self.ask_user_question(request_id, &tool_use_id, scope, request.input, out);
            return;
        }
        self.enter_scope(&scope, out);
        let display_name = request
            .display_name
            .unwrap_or_else(|| tools::display_name(&request.tool_name));
        let event = NormEvent::PermissionAsked {
            scope,
            tool_call_id: tool_use_id.clone(),
            kind: tools::permission_kind(&request.tool_name),
            path: tools::permission_path(request.blocked_path.as_deref(), &request.input),
            title: tools::confirmation_title(&request.tool_name),
            invocation_message: tools::invocation_message(&request.tool_name, &request.input),
            input: Some(input_text(&request.input)),
            tool_name: request.tool_name,
            display_name,
        };
        let signals = self.mapper.map(event);
        let asked = signals
            .iter()
            .any(|signal| matches!(signal, AgentSignal::PendingConfirmation(_)));
        out.extend(signals.into_iter().map(Output::Signal));
        if asked {
            out.push(Output::PermissionRequest {
                request_id,
                tool_use_id,
                input: request.input,
            });
        } else {
            out.push(deny("This tool call cannot be shown for approval."));
        }
    }

    /// `AskUserQuestion`: its questions as `chat/inputRequested`, then the request
    /// for the driver to park. Its tool call stays as it is (running after the synthetic ready)
    /// and completes from the `tool_result` that follows the answer.
    pub(super) fn ask_user_question(
        &mut self,
        request_id: String,
        tool_use_id: &str,
        scope: Scope,
        input: Value,
        out: &mut Vec<Output>,
    ) {
        let deny = |request_id: String| Output::DenyPermission {
            request_id,
            message: "These questions cannot be shown to the user; continue without the answers."
                .to_owned(),
        };
        let Some(request) =
            questions::request_id(tool_use_id).and_then(|id| questions::input_request(id, &input))
        else {
            out.push(deny(request_id));
            return;
        };
        let input_request_id = request.id.clone();
        self.enter_scope(&scope, out);
        let signals = self.mapper.map(NormEvent::InputAsked { scope, request });
        let asked = signals.iter().any(|signal| {
            matches!(signal, AgentSignal::Action(action)
                if matches!(action.action, StateAction::ChatInputRequested(_)))
        });
        out.extend(signals.into_iter().map(Output::Signal));
        if asked {
            out.push(Output::InputRequest {
                request_id,
                input_request_id,
                input,
            });
        } else {
            out.push(deny(request_id));
        }
    }

    pub(super) fn control_response(&mut self, line: ControlResponseLine, out: &mut Vec<Output>) {
        let response = line.response;
        if self.cli_requests.remove(&response.request_id).is_some() {
            // The echo of the host's own answer (`--replay-user-messages`).
            return;
        }
        out.push(Output::ControlResponse {
            success: response.subtype == "success",
            request_id: response.request_id,
            error: response.error,
        });
    }

    pub(super) fn result(&mut self, result: ResultLine, out: &mut Vec<Output>) {
        if let Some(id) = &result.session_id {
            self.session_id_seen(id, out);
        }
        let Some(turn) = self.turn.take() else {
            tracing::debug!("a result outside a turn");
            return;
        };
        self.report_limits(&result, out);
        let model = result
            .model_usage
            .as_ref()
            .and_then(|models| models.keys().next().cloned());
        self.result_usage(
            &turn,
            result.usage.as_ref(),
            model,
            result.total_cost_usd,
            out,
        );
        let terminal = match terminal_error(&result, turn.api_error.as_ref()) {
            Some(error) => NormEvent::Failed {
                error,
                duration_ms: result.duration_ms,
            },
            None => NormEvent::Idle {
                aborted: false,
                duration_ms: result.duration_ms,
            },
        };
        self.emit(terminal, out);
        out.push(Output::TurnEnded);
    }
}
