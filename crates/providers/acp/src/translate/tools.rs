//! Tool calls: their start, updates, permission requests, completion and content, and the
//! plan as a synthetic tool call.

use std::path::Path;

use agenthost_protocol::PermissionKind;
use agenthost_protocol::state::{
    ContentRef, FileEditDiffStats, FileEditSide, ToolResultFileEditContent, ToolResultTextContent,
};
use agenthost_protocol::uri::path_to_file_uri;
use base64::Engine as _;

use super::*;

impl Translator {
    pub(super) fn request(
        &mut self,
        id: Value,
        method: &str,
        params: Value,
        out: &mut Vec<Output>,
        line: &str,
    ) -> Result<(), LineError> {
        if method != "session/request_permission" {
            out.push(Output::Write(error_reply(
                &id,
                METHOD_NOT_FOUND,
                &format!("agenthost does not offer `{method}`"),
            )));
            return Ok(());
        }
        let request = wire::permission_request(params).map_err(|e| LineError::new(e.0, line))?;
        if !self.follows(request.session_id.0.as_ref()) || !self.live() || self.replaying {
            tracing::debug!("withdrawing a permission request outside the running turn");
            out.push(Output::Write(permission_answer(
                &id,
                &request.options,
                None,
            )));
            return Ok(());
        }
        let call = &request.tool_call;
        let tool_call_id = call.tool_call_id.0.to_string();
        if !self.known_tool(&tool_call_id) {
            self.start_tool(&tool_call_id, &call.fields, out);
        }
        let tool = self.track(&tool_call_id);
        if let Some(title) = &call.fields.title {
            tool.title.clone_from(title);
        }
        if let Some(kind) = call.fields.kind {
            tool.kind = Some(kind);
        }
        tool.ready = true;
        let (title, kind) = (tool.title.clone(), tool.kind);
        let path = call
            .fields
            .locations
            .as_ref()
            .and_then(|locations| locations.first())
            .map(|location| location.path.to_string_lossy().into_owned());
        self.emit(
            NormEvent::PermissionAsked {
                scope: Scope::Root,
                tool_call_id: tool_call_id.clone(),
                tool_name: tool_name(call.fields.name.as_deref(), kind),
                display_name: title.clone(),
                kind: permission_kind(kind),
                path,
                title: title.clone(),
                invocation_message: title,
                input: call.fields.raw_input.as_ref().map(Value::to_string),
            },
            out,
        );
        out.push(Output::PermissionRequest {
            request_id: id,
            tool_call_id,
            options: request.options,
        });
        Ok(())
    }

    pub(super) fn known_tool(&self, id: &str) -> bool {
        self.turn
            .as_ref()
            .is_some_and(|turn| turn.tools.contains_key(id))
    }

    pub(super) fn track(&mut self, id: &str) -> &mut ToolTrack {
        let turn = self.turn.get_or_insert_with(TurnTrack::default);
        turn.tools.entry(id.to_owned()).or_default()
    }

    pub(super) fn start_tool(
        &mut self,
        id: &str,
        fields: &schema::ToolCallUpdateFields,
        out: &mut Vec<Output>,
    ) {
        let title = fields
            .title
            .clone()
            .filter(|title| !title.trim().is_empty())
            .unwrap_or_else(|| kind_name(fields.kind).to_owned());
        if let Some(turn) = self.turn.as_mut() {
            turn.text = None;
            turn.order.push(id.to_owned());
            turn.tools.insert(
                id.to_owned(),
                ToolTrack {
                    title: title.clone(),
                    kind: fields.kind,
                    ready: false,
                    denied: false,
                },
            );
        }
        let mut meta = JsonObject::new();
        meta.insert("acpKind".into(), kind_name(fields.kind).into());
        if let Some(locations) = fields.locations.as_ref().filter(|l| !l.is_empty()) {
            let locations: Vec<Value> = locations
                .iter()
                .map(|location| {
                    json!({ "path": location.path.to_string_lossy(), "line": location.line })
                })
                .collect();
            meta.insert("locations".into(), Value::Array(locations));
        }
        self.emit(
            NormEvent::ToolStarted {
                scope: Scope::Root,
                tool_call_id: id.to_owned(),
                tool_name: tool_name(fields.name.as_deref(), fields.kind),
                display_name: title.clone(),
                contributor: None,
                meta: Some(meta),
            },
            out,
        );
        self.emit(
            NormEvent::ToolDelta {
                scope: Scope::Root,
                tool_call_id: id.to_owned(),
                partial_json: None,
                invocation_message: Some(title),
            },
            out,
        );
    }

    pub(super) fn tool_call(&mut self, call: schema::ToolCall, out: &mut Vec<Output>) {
        let update = schema::ToolCallUpdate::new(
            call.tool_call_id,
            schema::ToolCallUpdateFields::new()
                .kind(call.kind)
                .status(call.status)
                .title(call.title)
                .name(call.name)
                .content(call.content)
                .locations(call.locations)
                .raw_input(call.raw_input)
                .raw_output(call.raw_output),
        );
        self.tool_call_update(update, out);
    }

    pub(super) fn tool_call_update(
        &mut self,
        update: schema::ToolCallUpdate,
        out: &mut Vec<Output>,
    ) {
        use schema::ToolCallStatus as Status;
        let id = update.tool_call_id.0.to_string();
        let fields = update.fields;
        if !self.known_tool(&id) {
            // A finished call that was never seen (the agent skipped `tool_call`) still shows.
            self.start_tool(&id, &fields, out);
        } else if let Some(title) = fields.title.as_ref().filter(|t| !t.trim().is_empty()) {
            let tool = self.track(&id);
            if tool.title != *title {
                tool.title.clone_from(title);
                let title = title.clone();
                self.emit(
                    NormEvent::ToolDelta {
                        scope: Scope::Root,
                        tool_call_id: id.clone(),
                        partial_json: None,
                        invocation_message: Some(title),
                    },
                    out,
                );
            }
        }
        if let Some(kind) = fields.kind {
            self.track(&id).kind = Some(kind);
        }
        let content = fields.content.as_deref().map(tool_content);
        match fields.status {
            Some(Status::InProgress) => {
                self.ready(&id, fields.raw_input.as_ref(), out);
                self.output(&id, content, out);
            }
            Some(Status::Completed) => self.complete(&id, true, content, fields.raw_output, out),
            Some(Status::Failed) => self.complete(&id, false, content, fields.raw_output, out),
            Some(Status::Pending) | None => {
                if self.track(&id).ready {
                    self.output(&id, content, out);
                }
            }
            Some(_) => {}
        }
    }

    /// The call runs without having asked: ready, `not-needed`.
    pub(super) fn ready(&mut self, id: &str, raw_input: Option<&Value>, out: &mut Vec<Output>) {
        let tool = self.track(id);
        if tool.ready {
            return;
        }
        tool.ready = true;
        let title = tool.title.clone();
        self.emit(
            NormEvent::ToolReady {
                scope: Scope::Root,
                tool_call_id: id.to_owned(),
                invocation_message: title,
                tool_input: raw_input.map(Value::to_string),
                auto_approved: true,
                meta: None,
            },
            out,
        );
    }

    pub(super) fn output(
        &mut self,
        id: &str,
        content: Option<Vec<ToolResultContent>>,
        out: &mut Vec<Output>,
    ) {
        let Some(content) = content.filter(|content| !content.is_empty()) else {
            return;
        };
        self.emit(
            NormEvent::ToolOutput {
                scope: Scope::Root,
                tool_call_id: id.to_owned(),
                content,
                meta: None,
            },
            out,
        );
    }

    pub(super) fn complete(
        &mut self,
        id: &str,
        success: bool,
        content: Option<Vec<ToolResultContent>>,
        raw_output: Option<Value>,
        out: &mut Vec<Output>,
    ) {
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        turn.order.retain(|open| open != id);
        let tool = turn.tools.remove(id).unwrap_or_default();
        let mut content = content.unwrap_or_default();
        let raw_message = raw_output
            .as_ref()
            .and_then(|raw| raw.get("message"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let rejected = raw_output
            .as_ref()
            .and_then(|raw| raw.get("code"))
            .and_then(Value::as_str)
            .is_some_and(|code| code == "rejected" || code == "denied");
        if content.is_empty()
            && success
            && let Some(raw) = raw_output.as_ref().filter(|raw| !raw.is_null())
        {
            let text = match raw {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            content.push(text_content(text));
        }
        let error = (!success).then(|| {
            let message = raw_message
                .or_else(|| first_text(&content))
                .unwrap_or_else(|| "The tool call failed.".to_owned());
            if tool.denied || rejected {
                ToolError::denied(message)
            } else {
                ToolError::new(message)
            }
        });
        self.emit(
            NormEvent::ToolCompleted {
                scope: Scope::Root,
                tool_call_id: id.to_owned(),
                success,
                past_tense_message: None,
                content,
                structured_content: None,
                error,
            },
            out,
        );
    }

    pub(super) fn plan(&mut self, plan: &schema::Plan, out: &mut Vec<Output>) {
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        let id = match &turn.plan {
            Some(id) => id.clone(),
            None => {
                let id = format!("plan-{}", turn.segment + 1);
                turn.plan = Some(id.clone());
                turn.text = None;
                self.emit(
                    NormEvent::ToolStarted {
                        scope: Scope::Root,
                        tool_call_id: id.clone(),
                        tool_name: "plan".to_owned(),
                        display_name: "Plan".to_owned(),
                        contributor: None,
                        meta: None,
                    },
                    out,
                );
                self.emit(
                    NormEvent::ToolReady {
                        scope: Scope::Root,
                        tool_call_id: id.clone(),
                        invocation_message: "Planning".to_owned(),
                        tool_input: None,
                        auto_approved: true,
                        meta: None,
                    },
                    out,
                );
                id
            }
        };
        let checklist = plan
            .entries
            .iter()
            .map(|entry| {
                let mark = match entry.status {
                    schema::PlanEntryStatus::Completed => "[x]",
                    schema::PlanEntryStatus::InProgress => "[~]",
                    _ => "[ ]",
                };
                format!("- {mark} {}", entry.content)
            })
            .collect::<Vec<_>>()
            .join("\n");
        self.emit(
            NormEvent::ToolOutput {
                scope: Scope::Root,
                tool_call_id: id,
                content: vec![text_content(checklist)],
                meta: None,
            },
            out,
        );
    }
}

/// The tool's internal name: the agent's, else its kind.
pub(super) fn tool_name(name: Option<&str>, kind: Option<schema::ToolKind>) -> String {
    name.filter(|name| !name.trim().is_empty())
        .map_or_else(|| kind_name(kind).to_owned(), str::to_owned)
}

/// The wire name of a tool kind (`other` when unknown).
pub fn kind_name(kind: Option<schema::ToolKind>) -> &'static str {
    use schema::ToolKind as K;
    match kind {
        Some(K::Read) => "read",
        Some(K::Edit) => "edit",
        Some(K::Delete) => "delete",
        Some(K::Move) => "move",
        Some(K::Search) => "search",
        Some(K::Execute) => "execute",
        Some(K::Think) => "think",
        Some(K::Fetch) => "fetch",
        Some(K::SwitchMode) => "switch_mode",
        _ => "other",
    }
}

/// What a permission for a call of `kind` is about.
pub(super) fn permission_kind(kind: Option<schema::ToolKind>) -> PermissionKind {
    use schema::ToolKind as K;
    match kind {
        Some(K::Execute) => PermissionKind::Shell,
        Some(K::Edit | K::Delete | K::Move) => PermissionKind::Write,
        Some(K::Read | K::Search) => PermissionKind::Read,
        Some(K::Fetch) => PermissionKind::Url,
        other => PermissionKind::Other(kind_name(other).to_owned()),
    }
}

pub(super) fn text_content(text: String) -> ToolResultContent {
    ToolResultContent::Text(ToolResultTextContent { text })
}

pub(super) fn first_text(content: &[ToolResultContent]) -> Option<String> {
    content.iter().find_map(|item| match item {
        ToolResultContent::Text(text) if !text.text.trim().is_empty() => Some(text.text.clone()),
        _ => None,
    })
}

/// The AHP form of a tool call's content: text as text, a diff as a file edit, terminals
/// (never offered by the host) and other blocks skipped.
pub(super) fn tool_content(content: &[schema::ToolCallContent]) -> Vec<ToolResultContent> {
    content
        .iter()
        .filter_map(|item| match item {
            schema::ToolCallContent::Content(block) => match &block.content {
                schema::ContentBlock::Text(text) => Some(text_content(text.text.clone())),
                schema::ContentBlock::ResourceLink(link) => Some(text_content(link.uri.clone())),
                _ => None,
            },
            schema::ToolCallContent::Diff(diff) => file_edit(diff),
            _ => None,
        })
        .collect()
}

/// A `diff` as a file edit: both sides inline, with line counts added and removed.
pub(super) fn file_edit(diff: &schema::Diff) -> Option<ToolResultContent> {
    let uri = path_to_file_uri(Path::new(&diff.path)).ok()?;
    let side = |text: &str| FileEditSide {
        uri: uri.clone(),
        content: ContentRef {
            uri: format!(
                "data:text/plain;charset=utf-8;base64,{}",
                base64::engine::general_purpose::STANDARD.encode(text)
            ),
            size_hint: i64::try_from(text.len()).ok(),
            content_type: Some("text/plain".to_owned()),
            nonce: None,
        },
    };
    let old = diff.old_text.as_deref();
    let (added, removed) = line_changes(old.unwrap_or_default(), &diff.new_text);
    Some(ToolResultContent::FileEdit(ToolResultFileEditContent {
        before: old.map(side),
        after: Some(side(&diff.new_text)),
        diff: Some(FileEditDiffStats {
            added: i64::try_from(added).ok(),
            removed: i64::try_from(removed).ok(),
        }),
    }))
}

/// Lines only in `new` and lines only in `old`, counted as multisets (exact for insertions and
/// deletions; a moved line counts as unchanged).
pub(super) fn line_changes(old: &str, new: &str) -> (usize, usize) {
    let mut counts: HashMap<&str, isize> = HashMap::new();
    for line in old.lines() {
        *counts.entry(line).or_default() -= 1;
    }
    for line in new.lines() {
        *counts.entry(line).or_default() += 1;
    }
    counts.values().fold((0, 0), |(added, removed), &count| {
        if count > 0 {
            (added + count.unsigned_abs(), removed)
        } else {
            (added, removed + count.unsigned_abs())
        }
    })
}
