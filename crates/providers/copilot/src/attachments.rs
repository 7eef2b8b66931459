//! The attachment serializer: protocol message attachments → the
//! `attachments` of `session.send`.
//!
//! | Protocol attachment | Copilot attachment |
//! |---|---|
//! | `simple` with a model representation | `blob` of that text (`text/plain`, or a VS Code mime type naming the display kind) |
//! | `embeddedResource` | `blob` of its data |
//! | `resource` with a selection | `selection` with the selected text, read from the file; `file` when it cannot be read |
//! | `resource` shown as a directory | `directory` |
//! | any other `resource` | `file` |
//!
//! Paths are the OS path of `file:` URIs and the URI itself otherwise; a display name defaults
//! to the path. Files are read through the injected reader, so the serializer stays pure. What
//! cannot be sent (a simple attachment without text, annotations, chats, unknown kinds) is
//! reported back, one sentence per attachment — never dropped silently. The host's instructions
//! are not attachments: the driver appends them to the prompt.

use std::path::Path;

use agenthost_protocol::state::{MessageAttachment, MessageResourceAttachment, TextRange};
use agenthost_protocol::uri::file_uri_to_path;
use agenthost_provider_api::{simple_text, unsendable};
use base64::Engine as _;
use serde_json::{Value, json};

/// How attachment notes name the agent.
const AGENT: &str = "Copilot";

/// The `attachments` of `session.send` for `attachments`, and the attachments not sent, one
/// sentence each saying why. `read_file` reads a file's text (for selections).
pub fn attachments(
    attachments: &[MessageAttachment],
    read_file: impl Fn(&Path) -> std::io::Result<String>,
) -> (Vec<Value>, Vec<String>) {
    let mut sent = Vec::new();
    let mut skipped = Vec::new();
    for attachment in attachments {
        match attachment {
            MessageAttachment::Simple(simple) => match simple_text(simple) {
                Ok(text) => sent.push(json!({
                    "type": "blob",
                    "data": base64::engine::general_purpose::STANDARD.encode(text),
                    "mimeType": simple_mime_type(simple.display_kind.as_deref()),
                    "displayName": simple.label,
                })),
                Err(reason) => skipped.push(reason.to_string()),
            },
            MessageAttachment::EmbeddedResource(embedded) => sent.push(json!({
                "type": "blob",
                "data": embedded.data,
                "mimeType": embedded.content_type,
                "displayName": embedded.label,
            })),
            MessageAttachment::Resource(resource) => {
                sent.push(resource_attachment(resource, &read_file))
            }
            other => skipped.extend(unsendable(other, AGENT)),
        }
    }
    (sent, skipped)
}

/// `text/plain`, or VS Code's mime type that lets history replay recover the display kind.
fn simple_mime_type(display_kind: Option<&str>) -> String {
    match display_kind.filter(|kind| !kind.is_empty()) {
        None => "text/plain".to_owned(),
        Some(kind) => format!(
            "text/x-vscode-simple-attachment; x-vscode-display-kind={}",
            agenthost_protocol::uri::percent_encode(kind)
        ),
    }
}

fn resource_attachment(
    resource: &MessageResourceAttachment,
    read_file: &impl Fn(&Path) -> std::io::Result<String>,
) -> Value {
    let os_path = file_uri_to_path(&resource.uri).ok();
    let path = os_path.as_ref().map_or_else(
        || resource.uri.clone(),
        |path| path.to_string_lossy().into_owned(),
    );
    let display_name = if resource.label.is_empty() {
        path.clone()
    } else {
        resource.label.clone()
    };
    let file = || json!({ "type": "file", "path": path, "displayName": display_name });
    if let Some(selection) = &resource.selection {
        let Some(os_path) = &os_path else {
            return file();
        };
        return match read_file(os_path) {
            Ok(text) => json!({
                "type": "selection",
                "filePath": path,
                "displayName": display_name,
                "text": slice(&text, &selection.range),
                "selection": {
                    "start": {
                        "line": selection.range.start.line,
                        "character": selection.range.start.character,
                    },
                    "end": {
                        "line": selection.range.end.line,
                        "character": selection.range.end.character,
                    },
                },
            }),
            Err(error) => {
                tracing::debug!(%error, path, "a selection's file cannot be read; sending the file");
                file()
            }
        };
    }
    match resource.display_kind.as_deref() {
        Some("directory") => {
            json!({ "type": "directory", "path": path, "displayName": display_name })
        }
        _ => file(),
    }
}

/// The text of `range` (0-based lines and characters, clamped to the text; an end before the
/// start selects nothing).
pub(crate) fn slice(text: &str, range: &TextRange) -> String {
    let start = offset(text, range.start.line, range.start.character);
    let end = offset(text, range.end.line, range.end.character);
    if end <= start {
        return String::new();
    }
    text[start..end].to_owned()
}

/// The byte offset of (`line`, `character`), clamped: a line past the end is the end of the
/// text, a character past the end of its line is the end of that line (before its `\r\n`).
fn offset(text: &str, line: i64, character: i64) -> usize {
    let line = usize::try_from(line).unwrap_or(0);
    let character = usize::try_from(character).unwrap_or(0);
    let mut line_start = 0;
    for _ in 0..line {
        match text[line_start..].find('\n') {
            Some(newline) => line_start += newline + 1,
            None => return text.len(),
        }
    }
    let line_text = match text[line_start..].find('\n') {
        Some(newline) => &text[line_start..line_start + newline],
        None => &text[line_start..],
    };
    let line_text = line_text.strip_suffix('\r').unwrap_or(line_text);
    let within = line_text
        .char_indices()
        .nth(character)
        .map_or(line_text.len(), |(index, _)| index);
    line_start + within
}

#[cfg(test)]
#[path = "attachments_tests.rs"]
mod tests;
