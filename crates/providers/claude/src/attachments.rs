//! The attachment serializer: a protocol message → the content of a
//! Claude Code user message.
//!
//! Claude Code's stream-json input takes text blocks only, so attachments become text: simple
//! attachments by their model representation, resources as a list of paths inside a
//! `<system-reminder>`. What cannot be sent (embedded data such as images, annotations, chats)
//! is reported back to the caller, never dropped silently.

use agenthost_protocol::state::{MessageAttachment, MessageResourceAttachment, TextSelection};
use agenthost_protocol::uri::file_uri_to_path;
use agenthost_provider_api::{simple_text, unsendable, unsupported_attachment};
use serde_json::{Value, json};

/// How attachment notes name the agent.
const AGENT: &str = "Claude Code";

const REFERENCES_INTRO: &str = "The user provided the following references:";
const REFERENCES_OUTRO: &str =
    "This context may or may not be relevant to the task. Use it only if it is.";

/// The `content` of the user message for `text`, the host's `instructions` and `attachments`:
/// a plain string when there is only text, else an array of text blocks (the prompt, the
/// simple attachments, the resource references, the instructions). The second value lists what
/// was not sent and why, one sentence per attachment.
pub fn user_content(
    text: &str,
    instructions: &[String],
    attachments: &[MessageAttachment],
) -> (Value, Vec<String>) {
    let mut blocks: Vec<String> = Vec::new();
    let mut skipped = Vec::new();
    if !text.is_empty() {
        blocks.push(text.to_owned());
    }
    let mut simple = Vec::new();
    let mut references = Vec::new();
    for attachment in attachments {
        match attachment {
            MessageAttachment::Simple(simple_attachment) => match simple_text(simple_attachment) {
                Ok(representation) => simple.push(representation.to_owned()),
                Err(reason) => skipped.push(reason.to_string()),
            },
            MessageAttachment::Resource(resource) => references.push(reference(resource)),
            MessageAttachment::EmbeddedResource(embedded) => skipped.push(unsupported(
                embedded.display_kind.as_deref().unwrap_or("embedded"),
                &embedded.label,
            )),
            other => skipped.extend(unsendable(other, AGENT)),
        }
    }
    if !simple.is_empty() {
        blocks.push(simple.join("\n\n"));
    }
    if !references.is_empty() {
        let mut block = format!("<system-reminder>\n{REFERENCES_INTRO}\n");
        for path in &references {
            block.push_str("- ");
            block.push_str(path);
            block.push('\n');
        }
        block.push('\n');
        block.push_str(REFERENCES_OUTRO);
        block.push_str("\n</system-reminder>");
        blocks.push(block);
    }
    let instructions: Vec<&str> = instructions
        .iter()
        .map(String::as_str)
        .filter(|instruction| !instruction.trim().is_empty())
        .collect();
    if !instructions.is_empty() {
        blocks.push(instructions.join("\n\n"));
    }
    let content = match blocks.as_slice() {
        [] => Value::String(String::new()),
        [only] if only == text => Value::String(only.clone()),
        _ => Value::Array(
            blocks
                .into_iter()
                .map(|text| json!({ "type": "text", "text": text }))
                .collect(),
        ),
    };
    (content, skipped)
}

fn unsupported(kind: &str, label: &str) -> String {
    unsupported_attachment(kind, label, AGENT)
}

/// A resource as the model sees it: the OS path of a `file:` URI (else the URI itself), with
/// `:<line>` (one-based) for a selection.
fn reference(resource: &MessageResourceAttachment) -> String {
    let mut path = match file_uri_to_path(&resource.uri) {
        Ok(path) => path.to_string_lossy().into_owned(),
        Err(_) => resource.uri.clone(),
    };
    if let Some(TextSelection { range }) = &resource.selection {
        path.push_str(&format!(":{}", range.start.line.saturating_add(1)));
    }
    path
}

#[cfg(test)]
#[path = "attachments_tests.rs"]
mod tests;
