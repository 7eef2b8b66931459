//! What a tool call item becomes: its start, permission, live output and completion as normalized events.

use super::*;

impl ToolCall {
    /// `ToolStarted`, the arguments as one delta, and `ToolReady` (the agent runs it on its own).
    pub fn started(&self, scope: &Scope, id: &str) -> Vec<NormEvent> {
        let mut events = vec![NormEvent::ToolStarted {
            scope: scope.clone(),
            tool_call_id: id.to_owned(),
            tool_name: self.tool_name(),
            display_name: self.display_name(),
            contributor: None,
            meta: self.meta(),
        }];
        let input = self.input();
        if let Some(input) = input.clone().filter(|input| !input.is_empty()) {
            events.push(NormEvent::ToolArgsDelta {
                scope: scope.clone(),
                tool_call_id: id.to_owned(),
                partial_json: input,
            });
        }
        events.push(NormEvent::ToolReady {
            scope: scope.clone(),
            tool_call_id: id.to_owned(),
            invocation_message: self.invocation_message(),
            tool_input: input,
            auto_approved: true,
            meta: None,
        });
        events
    }

    /// The permission request of a command or a file change; `reason` is the agent's.
    pub fn permission(&self, scope: &Scope, id: &str, reason: Option<&str>) -> NormEvent {
        if let Self::Permissions { requested } = self {
            return self.permissions_asked(scope, id, requested, reason);
        }
        let (kind, path) = match self {
            Self::Command { .. } => (PermissionKind::Shell, None),
            Self::FileChange { changes, .. } => (
                PermissionKind::Write,
                changes.first().map(|change| change.path.clone()),
            ),
            Self::Mcp { .. } => (PermissionKind::Mcp, None),
            _ => (PermissionKind::Other(self.tool_name()), None),
        };
        let title = reason
            .filter(|reason| !reason.trim().is_empty())
            .map_or_else(|| self.display_name(), str::to_owned);
        NormEvent::PermissionAsked {
            scope: scope.clone(),
            tool_call_id: id.to_owned(),
            tool_name: self.tool_name(),
            display_name: self.display_name(),
            kind,
            path,
            title,
            invocation_message: self.invocation_message(),
            input: self.input(),
        }
    }

    /// The request for extra sandbox permissions (`item/permissions/requestApproval`) for this
    /// call: kind `permissions`, titled with `reason` (or "Allow extra permissions"), the
    /// requested permissions described for people and as the input (JSON).
    pub fn permissions_asked(
        &self,
        scope: &Scope,
        id: &str,
        requested: &Value,
        reason: Option<&str>,
    ) -> NormEvent {
        let title = reason
            .filter(|reason| !reason.trim().is_empty())
            .unwrap_or(PERMISSIONS_TITLE)
            .to_owned();
        NormEvent::PermissionAsked {
            scope: scope.clone(),
            tool_call_id: id.to_owned(),
            tool_name: self.tool_name(),
            display_name: self.display_name(),
            kind: PermissionKind::Other(PERMISSIONS_KIND.to_owned()),
            path: None,
            title,
            invocation_message: permissions_message(requested, "Allow"),
            input: Some(requested.to_string()),
        }
    }

    /// The live content of a running call: `streamed` output, or the changes of a file change.
    pub fn live_output(&self, scope: &Scope, id: &str, streamed: &str) -> NormEvent {
        let text = match self {
            Self::FileChange { changes, .. } => join_nonempty(&[&rendered(changes), streamed]),
            _ => streamed.to_owned(),
        };
        NormEvent::ToolOutput {
            scope: scope.clone(),
            tool_call_id: id.to_owned(),
            content: text_content(text),
            meta: None,
        }
    }

    /// The completion of a finished call; `streamed` is the output seen live.
    pub fn completed(&self, scope: &Scope, id: &str, streamed: &str, ending: Ending) -> NormEvent {
        let declined = ending == Ending::Declined || self.status() == Some(&ItemStatus::Declined);
        let outcome = if declined {
            self.declined()
        } else {
            self.finished(streamed)
        };
        NormEvent::ToolCompleted {
            scope: scope.clone(),
            tool_call_id: id.to_owned(),
            success: outcome.error.is_none(),
            past_tense_message: Some(outcome.past_tense),
            content: outcome.content,
            structured_content: outcome.structured,
            error: outcome.error,
        }
    }

    /// The completion of a call still open when its turn ended.
    pub fn abandoned(&self, scope: &Scope, id: &str, reason: &str, streamed: &str) -> NormEvent {
        NormEvent::ToolCompleted {
            scope: scope.clone(),
            tool_call_id: id.to_owned(),
            success: false,
            past_tense_message: Some(format!("{} did not finish", self.display_name())),
            content: text_content(streamed.to_owned()),
            structured_content: None,
            error: Some(ToolError::new(reason)),
        }
    }

    pub(super) fn status(&self) -> Option<&ItemStatus> {
        match self {
            Self::Command { status, .. }
            | Self::FileChange { status, .. }
            | Self::Mcp { status, .. }
            | Self::Dynamic { status, .. }
            | Self::Collab { status, .. } => Some(status),
            _ => None,
        }
    }

    pub(super) fn declined(&self) -> Outcome {
        let (past_tense, message) = match self {
            Self::Command { command, .. } => (
                format!("Did not run {} (declined)", code(command)),
                "The user declined to run this command.".to_owned(),
            ),
            Self::FileChange { .. } => (
                "File changes were declined".to_owned(),
                "The user declined these file changes.".to_owned(),
            ),
            Self::Permissions { .. } => (
                "Extra permissions were declined".to_owned(),
                "The user declined the extra permissions.".to_owned(),
            ),
            _ => (
                format!("{} was declined", self.display_name()),
                "The user declined this tool call.".to_owned(),
            ),
        };
        Outcome {
            past_tense,
            content: Vec::new(),
            structured: None,
            error: Some(ToolError::denied(message)),
        }
    }

    pub(super) fn finished(&self, streamed: &str) -> Outcome {
        match self {
            Self::Command {
                command,
                status,
                exit_code,
                output,
            } => {
                let output = output
                    .as_deref()
                    .filter(|output| !output.is_empty())
                    .unwrap_or(streamed);
                let ran = format!("Ran {}", code(command));
                let (past_tense, error) = match (status, exit_code) {
                    (_, Some(code)) if *code != 0 => (
                        format!("{ran} (exit {code})"),
                        Some(format!("The command exited with code {code}.")),
                    ),
                    (ItemStatus::Failed, _) => (
                        format!("{ran} (failed)"),
                        Some("The command failed.".to_owned()),
                    ),
                    _ => (ran, None),
                };
                Outcome {
                    past_tense,
                    content: text_content(output.to_owned()),
                    structured: None,
                    error: error.map(ToolError::new),
                }
            }
            Self::FileChange { changes, status } => {
                let content = text_content(join_nonempty(&[&rendered(changes), streamed]));
                if *status == ItemStatus::Failed {
                    return Outcome {
                        past_tense: "Could not apply the file changes".to_owned(),
                        content,
                        structured: None,
                        error: Some(ToolError::new("The file changes could not be applied.")),
                    };
                }
                let past_tense = match changes.as_slice() {
                    [change] => format!("{} {}", verb(&change.kind, true), code(&change.path)),
                    changes => format!("Edited {} files", changes.len()),
                };
                Outcome {
                    past_tense,
                    content,
                    structured: None,
                    error: None,
                }
            }
            Self::Mcp {
                status,
                result,
                error,
                ..
            } => {
                let name = code(&self.tool_name());
                let mut content = Vec::new();
                let mut structured = None;
                if let Some(result) = result {
                    if let Some(items) = result.get("content").and_then(Value::as_array) {
                        content.extend(items.iter().map(mcp_content));
                    }
                    structured = result
                        .get("structuredContent")
                        .or_else(|| result.get("structured_content"))
                        .and_then(Value::as_object)
                        .cloned();
                }
                let error = match (error, status) {
                    (Some(message), _) => Some(message.clone()),
                    (None, ItemStatus::Failed) => Some("The tool call failed.".to_owned()),
                    _ => None,
                };
                Outcome {
                    past_tense: if error.is_some() {
                        format!("{name} failed")
                    } else {
                        format!("Called {name}")
                    },
                    content,
                    structured,
                    error: error.map(ToolError::new),
                }
            }
            Self::Dynamic {
                status,
                content_items,
                success,
                ..
            } => {
                let name = code(&self.tool_name());
                let succeeded = success.unwrap_or(*status != ItemStatus::Failed);
                Outcome {
                    past_tense: if succeeded {
                        format!("Called {name}")
                    } else {
                        format!("{name} failed")
                    },
                    content: content_items.iter().map(dynamic_content).collect(),
                    structured: None,
                    error: (!succeeded).then(|| ToolError::new("The tool call failed.")),
                }
            }
            Self::Collab {
                status,
                agents_states,
                ..
            } => {
                let states = agents_states
                    .iter()
                    .map(|(thread, state)| {
                        let status = state.get("status").and_then(Value::as_str).unwrap_or("?");
                        match state.get("message").and_then(Value::as_str) {
                            Some(message) => format!("{thread}: {status} — {message}"),
                            None => format!("{thread}: {status}"),
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                let failed = *status == ItemStatus::Failed;
                Outcome {
                    past_tense: format!(
                        "{}{}",
                        self.display_name(),
                        if failed { " failed" } else { "" }
                    ),
                    content: text_content(states),
                    structured: None,
                    error: failed.then(|| ToolError::new("The agent tool call failed.")),
                }
            }
            Self::WebSearch { query } => Outcome {
                past_tense: if query.is_empty() {
                    "Searched the web".to_owned()
                } else {
                    format!("Searched the web for {}", code(query))
                },
                content: Vec::new(),
                structured: None,
                error: None,
            },
            Self::ImageGeneration { status, result, .. } => {
                let failed = status == "failed";
                let content = if result.is_empty() {
                    Vec::new()
                } else {
                    vec![ToolResultContent::EmbeddedResource(
                        ToolResultEmbeddedResourceContent {
                            data: result.clone(),
                            content_type: "image/png".to_owned(),
                        },
                    )]
                };
                Outcome {
                    past_tense: if failed {
                        "Could not generate the image".to_owned()
                    } else {
                        "Generated an image".to_owned()
                    },
                    content,
                    structured: None,
                    error: failed.then(|| ToolError::new("Image generation failed.")),
                }
            }
            Self::ContextCompaction => Outcome {
                past_tense: "Compacted the conversation".to_owned(),
                content: Vec::new(),
                structured: None,
                error: None,
            },
            Self::Permissions { requested } => Outcome {
                past_tense: permissions_message(requested, "Allowed"),
                content: Vec::new(),
                structured: None,
                error: None,
            },
        }
    }
}
