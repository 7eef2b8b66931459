//! The app-server's requests: approvals, user input and elicitations, answered by the host or declined.

use super::*;

impl Translator {
    pub(super) fn request(&mut self, request: ServerRequest, out: &mut Vec<Output>) {
        let request_id = request.id;
        match request.request {
            Request::CommandApproval(params) => self.command_approval(request_id, params, out),
            Request::FileChangeApproval(params) => {
                self.file_change_approval(request_id, params, out);
            }
            Request::ExecCommandApproval(params) => {
                self.legacy_exec_approval(request_id, params, out);
            }
            Request::ApplyPatchApproval(params) => {
                self.legacy_patch_approval(request_id, params, out);
            }
            Request::PermissionsApproval(params) => {
                self.permissions_approval(request_id, params, out);
            }
            Request::RequestUserInput(params) => self.user_input(request_id, &params, out),
            Request::McpElicitation(params) => self.elicitation(request_id, &params, out),
            Request::Other { method } => {
                out.push(Output::UnsupportedRequest { request_id, method });
            }
        }
    }

    /// `item/tool/requestUserInput`: asked in the turn it names, else answered at once with
    /// empty answers.
    pub(super) fn user_input(
        &mut self,
        request_id: Value,
        params: &UserInputParams,
        out: &mut Vec<Output>,
    ) {
        let id = input_id(&request_id);
        let (request, kind) = user_input_request(id.clone(), params);
        if params.questions.is_empty() {
            return Self::refuse_input(request_id, kind, "a request without questions", out);
        }
        let thread_id = params.thread_id.as_deref();
        self.ask_input(
            request_id,
            thread_id,
            params.turn_id.as_deref(),
            request,
            kind,
            out,
        );
    }

    /// `mcpServer/elicitation/request`: asked in the turn it names (or the current one when it
    /// names none), else declined at once.
    pub(super) fn elicitation(
        &mut self,
        request_id: Value,
        params: &ElicitationParams,
        out: &mut Vec<Output>,
    ) {
        let id = input_id(&request_id);
        let (request, kind) = elicitation_request(id, params);
        let thread_id = params.thread_id.as_deref();
        self.ask_input(
            request_id,
            thread_id,
            params.turn_id.as_deref(),
            request,
            kind,
            out,
        );
    }

    /// Maps an input request in the protocol turn and parks it; declines it when there is no
    /// turn of that thread to ask in.
    pub(super) fn ask_input(
        &mut self,
        request_id: Value,
        thread_id: Option<&str>,
        app_turn: Option<&str>,
        request: ChatInputRequest,
        kind: InputKind,
        out: &mut Vec<Output>,
    ) {
        if !self.ours(thread_id) {
            return Self::refuse_input(request_id, kind, "another thread", out);
        }
        if self.turn.is_none() {
            return Self::refuse_input(request_id, kind, "no turn is running", out);
        }
        if !self.route(app_turn) {
            return Self::refuse_input(request_id, kind, "another turn", out);
        }
        let Some(turn) = &mut self.turn else {
            return Self::refuse_input(request_id, kind, "no turn is running", out);
        };
        let input_id = request.id.clone();
        if !turn.inputs.insert(input_id.clone()) {
            return Self::refuse_input(request_id, kind, "an input request seen before", out);
        }
        let signals = self.mapper.map(NormEvent::InputAsked {
            scope: Scope::Root,
            request,
        });
        let asked = signals.iter().any(|signal| {
            matches!(signal, AgentSignal::Action(action)
                if matches!(action.action, StateAction::ChatInputRequested(_)))
        });
        out.extend(signals.into_iter().map(Output::Signal));
        if asked {
            out.push(Output::InputRequest {
                request_id,
                input_id,
                kind,
            });
        } else {
            Self::refuse_input(request_id, kind, "the request cannot be shown", out);
        }
    }

    pub(super) fn refuse_input(
        request_id: Value,
        kind: InputKind,
        why: &str,
        out: &mut Vec<Output>,
    ) {
        tracing::warn!(why, "declining an input request nobody can answer");
        out.push(Output::Reply {
            request_id,
            result: input_unanswered(&kind, ChatInputResponseKind::Decline),
        });
    }

    pub(super) fn decline(request_id: Value, kind: ApprovalKind, why: &str, out: &mut Vec<Output>) {
        tracing::warn!(why, "declining an approval request nobody can answer");
        out.push(Output::Reply {
            request_id,
            result: approval_answer(kind, false),
        });
    }

    /// The open tool call of item `item_id` in app-server turn `app_turn` of thread
    /// `thread_id`, when the request is about one.
    pub(super) fn requested_tool(
        &mut self,
        thread_id: Option<&str>,
        app_turn: Option<&str>,
        item_id: &str,
    ) -> Option<ToolCall> {
        if !self.ours(thread_id) || !self.route(app_turn) {
            return None;
        }
        let turn = self.turn.as_mut()?;
        turn.open_tool(item_id).map(|(call, _)| call.clone())
    }

    pub(super) fn command_approval(
        &mut self,
        request_id: Value,
        params: CommandApprovalParams,
        out: &mut Vec<Output>,
    ) {
        let kind = ApprovalKind::CommandExecution;
        let call = self.requested_tool(
            params.thread_id.as_deref(),
            params.turn_id.as_deref(),
            &params.item_id,
        );
        let Some(mut call) = call.filter(|call| matches!(call, ToolCall::Command { .. })) else {
            return Self::decline(request_id, kind, "an unknown command item", out);
        };
        if let (ToolCall::Command { command, .. }, Some(asked)) = (&mut call, &params.command) {
            *command = shell::unwrap_command(asked);
        }
        let event = call.permission(&Scope::Root, &params.item_id, params.reason.as_deref());
        self.ask(request_id, params.item_id, kind, event, out);
    }

    pub(super) fn file_change_approval(
        &mut self,
        request_id: Value,
        params: FileChangeApprovalParams,
        out: &mut Vec<Output>,
    ) {
        let kind = ApprovalKind::FileChange;
        let call = self.requested_tool(
            params.thread_id.as_deref(),
            params.turn_id.as_deref(),
            &params.item_id,
        );
        let Some(call) = call.filter(|call| matches!(call, ToolCall::FileChange { .. })) else {
            return Self::decline(request_id, kind, "an unknown file change item", out);
        };
        let event = call.permission(&Scope::Root, &params.item_id, params.reason.as_deref());
        self.ask(request_id, params.item_id, kind, event, out);
    }

    pub(super) fn legacy_exec_approval(
        &mut self,
        request_id: Value,
        params: ExecCommandApprovalParams,
        out: &mut Vec<Output>,
    ) {
        let call = ToolCall::Command {
            command: shell::unwrap_argv(&params.command),
            status: ItemStatus::InProgress,
            exit_code: None,
            output: None,
        };
        self.legacy_approval(
            request_id,
            params.conversation_id.as_deref(),
            params.call_id,
            call,
            params.reason.as_deref(),
            ApprovalKind::ExecCommand,
            out,
        );
    }

    pub(super) fn legacy_patch_approval(
        &mut self,
        request_id: Value,
        params: ApplyPatchApprovalParams,
        out: &mut Vec<Output>,
    ) {
        let changes = params
            .file_changes
            .iter()
            .map(|(path, change)| legacy_change(path, change))
            .collect();
        let call = ToolCall::FileChange {
            changes,
            status: ItemStatus::InProgress,
        };
        self.legacy_approval(
            request_id,
            params.conversation_id.as_deref(),
            params.call_id,
            call,
            params.reason.as_deref(),
            ApprovalKind::ApplyPatch,
            out,
        );
    }

    /// `item/permissions/requestApproval`: asked on the open tool call it names, else on a
    /// synthetic call started for it (`permissions-<request id>`, tracked like a legacy call so
    /// the turn's end closes it when nobody answered).
    pub(super) fn permissions_approval(
        &mut self,
        request_id: Value,
        params: PermissionsApprovalParams,
        out: &mut Vec<Output>,
    ) {
        let PermissionsApprovalParams {
            thread_id,
            turn_id,
            item_id,
            reason,
            permissions,
        } = params;
        let kind = ApprovalKind::Permissions {
            requested: permissions.clone(),
        };
        if !self.ours(thread_id.as_deref()) {
            return Self::decline(request_id, kind, "another thread", out);
        }
        if self.turn.is_none() {
            return Self::decline(request_id, kind, "no turn is running", out);
        }
        if !self.route(turn_id.as_deref()) {
            return Self::decline(request_id, kind, "another turn", out);
        }
        let Some(turn) = &mut self.turn else {
            return Self::decline(request_id, kind, "no turn is running", out);
        };
        let open = item_id.as_deref().and_then(|item_id| {
            let (call, _) = turn.open_tool(item_id)?;
            Some((item_id.to_owned(), call.clone()))
        });
        let (tool_call_id, call) = match open {
            Some(open) => open,
            None => {
                let id = synthetic_id(&request_id);
                if turn.items.contains_key(&id) {
                    return Self::decline(
                        request_id,
                        kind,
                        "a permissions request seen before",
                        out,
                    );
                }
                let call = ToolCall::Permissions {
                    requested: permissions.clone(),
                };
                turn.tool_order.push(id.clone());
                turn.items.insert(
                    id.clone(),
                    ItemTrack::Tool {
                        call: Box::new(call.clone()),
                        output: String::new(),
                        done: false,
                    },
                );
                (id, call)
            }
        };
        let event =
            call.permissions_asked(&Scope::Root, &tool_call_id, &permissions, reason.as_deref());
        self.ask(request_id, tool_call_id, kind, event, out);
    }

    /// Legacy approvals name a call that has no item: it is tracked from the request on, so it
    /// is completed (as abandoned) when the turn ends.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn legacy_approval(
        &mut self,
        request_id: Value,
        thread_id: Option<&str>,
        call_id: String,
        call: ToolCall,
        reason: Option<&str>,
        kind: ApprovalKind,
        out: &mut Vec<Output>,
    ) {
        if !self.ours(thread_id) {
            return Self::decline(request_id, kind, "another thread", out);
        }
        let Some(turn) = &mut self.turn else {
            return Self::decline(request_id, kind, "no turn is running", out);
        };
        if !turn.items.contains_key(&call_id) {
            turn.tool_order.push(call_id.clone());
            turn.items.insert(
                call_id.clone(),
                ItemTrack::Tool {
                    call: Box::new(call.clone()),
                    output: String::new(),
                    done: false,
                },
            );
        }
        let event = call.permission(&Scope::Root, &call_id, reason);
        self.ask(request_id, call_id, kind, event, out);
    }

    /// Maps a permission request; parks it when the host can be asked, else declines it.
    pub(super) fn ask(
        &mut self,
        request_id: Value,
        tool_call_id: String,
        kind: ApprovalKind,
        event: NormEvent,
        out: &mut Vec<Output>,
    ) {
        let signals = self.mapper.map(event);
        let asked = signals
            .iter()
            .any(|signal| matches!(signal, AgentSignal::PendingConfirmation(_)));
        out.extend(signals.into_iter().map(Output::Signal));
        if asked {
            out.push(Output::ApprovalRequest {
                request_id,
                tool_call_id,
                kind,
            });
        } else {
            Self::decline(request_id, kind, "the tool call cannot be shown", out);
        }
    }
}
