//! Assistant messages, tool calls and permission requests (with auto-approval of Copilot's own state).

use super::*;

impl Translator {
    pub(super) fn assistant_message(
        &mut self,
        agent: Option<&str>,
        data: AssistantMessageData,
        out: &mut Vec<Output>,
    ) {
        let Some(scope) = self.scope(agent, data.parent_tool_call_id.as_deref()) else {
            return;
        };
        if let Some(turn) = &mut self.turn {
            for request in data.tool_requests {
                turn.requests.insert(
                    request.tool_call_id,
                    RequestInfo {
                        name: request.name,
                        arguments: request.arguments,
                        intention: request.intention_summary,
                        title: request.tool_title,
                    },
                );
            }
        }
        self.emit(
            NormEvent::TextFull {
                scope,
                stream_id: data.message_id,
                text: data.content,
            },
            out,
        );
    }

    /// Starts tool call `id` unless it is known; returns whether it is (now) tracked.
    pub(super) fn ensure_started(
        &mut self,
        scope: &Scope,
        id: &str,
        name: &str,
        mcp: Option<(&str, &str)>,
        out: &mut Vec<Output>,
    ) -> bool {
        let Some(turn) = &mut self.turn else {
            return false;
        };
        if turn.tools.contains_key(id) {
            return true;
        }
        let mcp_tool = mcp.map(|(_, tool)| tool.to_owned());
        turn.tools.insert(
            id.to_owned(),
            ToolTrack::new(name, scope.clone(), mcp_tool.clone()),
        );
        let meta = mcp.map(|(server, tool)| {
            let mut meta = JsonObject::new();
            meta.insert("mcpServerName".into(), server.into());
            meta.insert("mcpToolName".into(), tool.into());
            meta
        });
        self.emit(
            NormEvent::ToolStarted {
                scope: scope.clone(),
                tool_call_id: id.to_owned(),
                tool_name: name.to_owned(),
                display_name: tools::display_name(name, mcp_tool.as_deref()),
                contributor: None,
                meta,
            },
            out,
        );
        true
    }

    pub(super) fn tool_call_delta(
        &mut self,
        agent: Option<&str>,
        data: ToolCallDeltaData,
        out: &mut Vec<Output>,
    ) {
        let id = data.tool_call_id;
        let Some(turn) = &mut self.turn else {
            return;
        };
        if tools::is_hidden(&data.tool_name) {
            turn.hidden.insert(id);
            return;
        }
        if turn.hidden.contains(&id) {
            return;
        }
        let Some(scope) = self.scope(agent, None) else {
            return;
        };
        if !self.ensure_started(&scope, &id, &data.tool_name, None, out) {
            return;
        }
        let cwd = self.cwd.clone();
        let Some(tool) = self.turn.as_mut().and_then(|turn| turn.tools.get_mut(&id)) else {
            return;
        };
        tool.streamed.push_str(&data.input_delta);
        let is_json = data.tool_type.as_deref() != Some("custom");
        let message = is_json
            .then(|| tools::streaming_invocation(&tool.name, &tool.streamed, cwd.as_deref()))
            .flatten()
            .filter(|message| tool.streamed_message.as_ref() != Some(message));
        if let Some(message) = &message {
            tool.streamed_message = Some(message.clone());
        }
        let partial_json = (!data.input_delta.is_empty()).then_some(data.input_delta);
        self.emit(
            NormEvent::ToolDelta {
                scope,
                tool_call_id: id,
                partial_json,
                invocation_message: message,
            },
            out,
        );
    }

    pub(super) fn tool_started(
        &mut self,
        agent: Option<&str>,
        data: ToolExecutionStartData,
        out: &mut Vec<Output>,
    ) {
        let id = data.tool_call_id;
        let arguments = data.arguments.unwrap_or(Value::Null);
        if tools::is_hidden(&data.tool_name) {
            let Some(turn) = &mut self.turn else {
                return;
            };
            turn.hidden.insert(id);
            let intent = arguments.get("intent").and_then(Value::as_str);
            if let (None, Some(intent)) = (agent, intent.filter(|i| !i.trim().is_empty())) {
                turn.activity = true;
                self.emit(
                    NormEvent::Activity {
                        text: Some(intent.to_owned()),
                    },
                    out,
                );
            }
            return;
        }
        let Some(scope) = self.scope(agent, data.parent_tool_call_id.as_deref()) else {
            return;
        };
        let mcp = data.mcp_server_name.as_deref().map(|server| {
            (
                server,
                data.mcp_tool_name.as_deref().unwrap_or(&data.tool_name),
            )
        });
        if !self.ensure_started(&scope, &id, &data.tool_name, mcp, out) {
            return;
        }
        let cwd = self.cwd.clone();
        let Some(turn) = &mut self.turn else {
            return;
        };
        let request = turn.requests.get(&id);
        let fallback = request
            .and_then(|request| request.intention.clone())
            .or(data.tool_title)
            .or_else(|| request.and_then(|request| request.title.clone()));
        let Some(tool) = turn.tools.get_mut(&id) else {
            return;
        };
        tool.arguments = arguments.clone();
        let call = Call {
            tool: &tool.name,
            arguments: &arguments,
            cwd: cwd.as_deref(),
            mcp_tool: tool.mcp_tool.as_deref(),
        };
        let invocation_message = tools::invocation_message(call, fallback.as_deref());
        let tool_input = (!arguments.is_null()).then(|| arguments.to_string());
        self.emit(
            NormEvent::ToolReady {
                scope,
                tool_call_id: id,
                invocation_message,
                tool_input,
                auto_approved: true,
                meta: None,
            },
            out,
        );
    }

    /// Live output: `chunk` is appended to the output so far; a progress message is shown
    /// while there is no output.
    pub(super) fn tool_output(
        &mut self,
        id: &str,
        chunk: &str,
        progress: Option<&str>,
        out: &mut Vec<Output>,
    ) {
        let Some(turn) = &mut self.turn else {
            return;
        };
        if turn.hidden.contains(id) {
            return;
        }
        let Some(tool) = turn.tools.get_mut(id).filter(|tool| !tool.completed) else {
            tracing::debug!(tool_call_id = id, "dropping output of an unknown tool call");
            return;
        };
        tool.output.push_str(chunk);
        if chunk.is_empty() && progress.is_none() {
            return;
        }
        let text = if tool.output.is_empty() {
            progress.unwrap_or_default().to_owned()
        } else {
            tool.output.clone()
        };
        if text.is_empty() {
            return;
        }
        let meta = progress.map(|message| {
            let mut meta = JsonObject::new();
            meta.insert("progressMessage".into(), message.into());
            meta
        });
        let scope = tool.scope.clone();
        self.emit(
            NormEvent::ToolOutput {
                scope,
                tool_call_id: id.to_owned(),
                content: vec![text_content(text)],
                meta,
            },
            out,
        );
    }

    pub(super) fn tool_completed(
        &mut self,
        agent: Option<&str>,
        data: ToolExecutionCompleteData,
        out: &mut Vec<Output>,
    ) {
        let id = data.tool_call_id;
        let Some(turn) = &mut self.turn else {
            return;
        };
        if turn.hidden.remove(&id) {
            return;
        }
        if !turn.tools.contains_key(&id) {
            // Never announced: start it from what the message said about it, if anything.
            let Some(name) = turn.requests.get(&id).map(|request| request.name.clone()) else {
                tracing::warn!(
                    tool_call_id = id,
                    "dropping the completion of an unknown tool call"
                );
                return;
            };
            let Some(scope) = self.scope(agent, data.parent_tool_call_id.as_deref()) else {
                return;
            };
            self.ensure_started(&scope, &id, &name, None, out);
        }
        let cwd = self.cwd.clone();
        let Some(turn) = &mut self.turn else {
            return;
        };
        let declined = turn.declined.contains(&id);
        let request_arguments = turn
            .requests
            .get(&id)
            .and_then(|request| request.arguments.clone());
        let Some(tool) = turn.tools.get_mut(&id) else {
            return;
        };
        tool.completed = true;
        let arguments = if tool.arguments.is_null() {
            request_arguments.unwrap_or(Value::Null)
        } else {
            tool.arguments.clone()
        };
        let error = data.error.unwrap_or_default();
        let denied = !data.success && (declined || error.code.as_deref() == Some("denied"));
        let outcome = match (data.success, denied) {
            (true, _) => Outcome::Succeeded,
            (false, true) => Outcome::Denied,
            (false, false) => Outcome::Failed,
        };
        let call = Call {
            tool: &tool.name,
            arguments: &arguments,
            cwd: cwd.as_deref(),
            mcp_tool: tool.mcp_tool.as_deref(),
        };
        let past_tense_message = tools::past_tense_message(call, outcome);
        let text = if data.success {
            let result = data.result.unwrap_or_default();
            result
                .detailed_content
                .filter(|text| !text.trim().is_empty())
                .unwrap_or(result.content)
        } else {
            error.message.clone()
        };
        let content = if text.trim().is_empty() {
            Vec::new()
        } else {
            vec![text_content(text)]
        };
        let error = (!data.success).then(|| {
            let message = if error.message.is_empty() {
                past_tense_message.clone()
            } else {
                error.message
            };
            match (denied, error.code) {
                (true, _) => ToolError::denied(message),
                (false, code) => ToolError {
                    message,
                    code: code.filter(|code| !code.is_empty()),
                },
            }
        });
        let structured_content =
            data.shell_execution
                .and_then(|shell| shell.exit_code)
                .map(|code| {
                    let mut structured = JsonObject::new();
                    structured.insert("exitCode".into(), code.into());
                    structured
                });
        let scope = tool.scope.clone();
        self.emit(
            NormEvent::ToolCompleted {
                scope,
                tool_call_id: id,
                success: data.success,
                past_tense_message: Some(past_tense_message),
                content,
                structured_content,
                error,
            },
            out,
        );
    }

    pub(super) fn permission(
        &mut self,
        agent: Option<&str>,
        data: PermissionRequestedData,
        out: &mut Vec<Output>,
    ) {
        if data.resolved_by_hook {
            tracing::debug!(
                request = data.request_id,
                "a hook already answered a permission"
            );
            return;
        }
        let request = data.permission_request;
        let Some(tool_call_id) = request.tool_call_id.clone().filter(|id| !id.is_empty()) else {
            return reject(out, &data.request_id, NO_TOOL_CALL);
        };
        if self.auto_approved(&request) {
            tracing::debug!(kind = request.kind, "approving the agent's own bookkeeping");
            out.push(Output::AnswerPermission {
                request_id: data.request_id,
                approved: true,
                feedback: None,
            });
            return;
        }
        let Some(turn) = &self.turn else {
            return reject(out, &data.request_id, NO_TURN);
        };
        let known = turn.tools.get(&tool_call_id);
        let scope = match known {
            Some(tool) => Some(tool.scope.clone()),
            None => self.scope(agent, None),
        };
        let Some(scope) = scope else {
            return reject(out, &data.request_id, NOT_SHOWN);
        };
        let Some(turn) = &mut self.turn else {
            return;
        };
        let (tool_name, mcp_tool) = match turn.tools.get(&tool_call_id) {
            Some(tool) => (tool.name.clone(), tool.mcp_tool.clone()),
            None => {
                let name = match turn.requests.get(&tool_call_id) {
                    Some(info) => info.name.clone(),
                    None => tools::permission_tool(&request),
                };
                // The mapper starts the call with the request; its later events find it here.
                turn.tools.insert(
                    tool_call_id.clone(),
                    ToolTrack::new(&name, scope.clone(), None),
                );
                (name, None)
            }
        };
        let event = NormEvent::PermissionAsked {
            scope,
            tool_call_id: tool_call_id.clone(),
            display_name: tools::display_name(&tool_name, mcp_tool.as_deref()),
            tool_name,
            kind: tools::permission_kind(&request.kind),
            path: tools::permission_path(&request),
            title: tools::confirmation_title(&request),
            invocation_message: tools::permission_message(&request, self.cwd.as_deref()),
            input: tools::permission_input(&request),
        };
        let mut signals = self.mapper.map(event);
        let mut asked = false;
        for signal in &mut signals {
            if let AgentSignal::PendingConfirmation(pending) = signal {
                asked = true;
                pending.state.edits = self.edits_preview(&request);
            }
        }
        out.extend(signals.into_iter().map(Output::Signal));
        if !asked {
            return reject(out, &data.request_id, NOT_SHOWN);
        }
        if let Some(turn) = &mut self.turn {
            turn.permissions
                .insert(data.request_id.clone(), tool_call_id.clone());
        }
        out.push(Output::PermissionRequest {
            request_id: data.request_id,
            tool_call_id,
        });
    }

    pub(super) fn permission_completed(&mut self, data: PermissionCompletedData) {
        let Some(turn) = &mut self.turn else {
            return;
        };
        let parked = turn.permissions.remove(&data.request_id);
        let Some(tool_call_id) = data.tool_call_id.or(parked) else {
            return;
        };
        let approved = data.result.kind.starts_with("approve");
        self.record_decision(&tool_call_id, approved);
    }

    /// Auto-approved: the agent reading or writing its own session state, or reading a tool
    /// output it spilled to the temporary directory, is not the user's business.
    pub(super) fn auto_approved(&self, request: &PermissionRequest) -> bool {
        let in_session_state = |path: &str| {
            self.session_state_dir
                .as_deref()
                .is_some_and(|dir| is_within(path, dir))
        };
        let spilled = |path: &str| {
            let Some(temp) = self.temp_dir.as_deref() else {
                return false;
            };
            let path = Path::new(path);
            let name = path.file_name().and_then(|name| name.to_str());
            is_within(&path.to_string_lossy(), temp)
                && path.parent() == Some(Path::new(temp))
                && name.is_some_and(|name| {
                    name.contains("copilot-tool-output-") && name.ends_with(".txt")
                })
        };
        match request.kind.as_str() {
            "read" => request
                .path
                .as_deref()
                .is_some_and(|path| in_session_state(path) || spilled(path)),
            "write" => request.file_name.as_deref().is_some_and(in_session_state),
            _ => false,
        }
    }

    /// A preview of the file a `write` request creates.
    pub(super) fn edits_preview(&self, request: &PermissionRequest) -> Option<FileEditCollection> {
        if request.kind != "write" {
            return None;
        }
        let contents = request.new_file_contents.as_deref()?;
        let file = request.file_name.as_deref()?;
        let path = match (Path::new(file).is_absolute(), self.cwd.as_deref()) {
            (true, _) => Path::new(file).to_path_buf(),
            (false, Some(cwd)) => Path::new(cwd).join(file),
            (false, None) => return None,
        };
        let uri = path_to_file_uri(&path).ok()?;
        let data = base64::engine::general_purpose::STANDARD.encode(contents);
        let added = i64::try_from(contents.lines().count()).unwrap_or(i64::MAX);
        Some(FileEditCollection {
            items: vec![FileEdit {
                before: None,
                after: Some(FileEditSide {
                    uri,
                    content: ContentRef {
                        uri: format!("data:text/plain;charset=utf-8;base64,{data}"),
                        size_hint: i64::try_from(contents.len()).ok(),
                        content_type: Some("text/plain".to_owned()),
                        nonce: None,
                    },
                }),
                diff: Some(FileEditDiffStats {
                    added: Some(added),
                    removed: Some(0),
                }),
            }],
        })
    }
}
