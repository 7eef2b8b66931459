//! The prompt of a turn as ACP content blocks: the text and the host's instructions first, then
//! one block per attachment in the forms the agent's `promptCapabilities` allow. What cannot be
//! sent is reported back, one sentence per attachment — never dropped silently.
//!
//! - a file or URI reference → `resource_link` (every ACP agent takes it);
//! - an embedded image → `image` when the agent takes images;
//! - embedded text → `resource` (with its text) when the agent takes embedded context, else a
//!   fenced text block;
//! - a simple attachment → a text block of what it gives the model.

use agenthost_protocol::state::{MessageAttachment, MessageEmbeddedResourceAttachment};
use agenthost_provider_api::{decode_base64, media_type, simple_text, unsendable};
use serde_json::{Value, json};

/// How attachment notes name the agent.
const AGENT: &str = "the ACP agent";

/// What the agent's `promptCapabilities` allow besides text and resource links.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PromptCapabilities {
    /// `image` blocks.
    pub image: bool,
    /// `resource` blocks (embedded context).
    pub embedded_context: bool,
}

/// The `prompt` of `session/prompt` for `text`, the host's `instructions` and `attachments`,
/// and the attachments not sent, one sentence each saying why.
pub fn prompt_blocks(
    text: &str,
    instructions: &[String],
    attachments: &[MessageAttachment],
    capabilities: PromptCapabilities,
) -> (Vec<Value>, Vec<String>) {
    let mut paragraphs: Vec<&str> = Vec::new();
    if !text.is_empty() {
        paragraphs.push(text);
    }
    paragraphs.extend(instructions.iter().map(String::as_str));
    let mut blocks = vec![json!({ "type": "text", "text": paragraphs.join("\n\n") })];
    let mut skipped = Vec::new();
    for attachment in attachments {
        if let Some(why) = unsendable(attachment, AGENT) {
            skipped.push(why);
            continue;
        }
        match attachment {
            MessageAttachment::Resource(resource) => {
                let mut link = json!({
                    "type": "resource_link",
                    "uri": resource.uri,
                    "name": resource.label,
                });
                if let Some(content_type) = &resource.content_type {
                    link["mimeType"] = Value::from(content_type.as_str());
                }
                blocks.push(link);
            }
            MessageAttachment::EmbeddedResource(embedded) => {
                match embedded_block(embedded, capabilities) {
                    Ok(block) => blocks.push(block),
                    Err(why) => skipped.push(format!("attachment {} {why}", embedded.label)),
                }
            }
            MessageAttachment::Simple(simple) => match simple_text(simple) {
                Ok(text) => blocks.push(json!({ "type": "text", "text": text })),
                Err(error) => skipped.push(error.to_string()),
            },
            _ => {}
        }
    }
    (blocks, skipped)
}

fn embedded_block(
    embedded: &MessageEmbeddedResourceAttachment,
    capabilities: PromptCapabilities,
) -> Result<Value, String> {
    let content_type = media_type(&embedded.content_type);
    if content_type.starts_with("image/") {
        if !capabilities.image {
            return Err(format!(
                "({content_type}) is an image, and the agent does not take images"
            ));
        }
        if decode_base64(&embedded.data).is_none() {
            return Err("is not valid base64 data".to_owned());
        }
        return Ok(json!({ "type": "image", "data": embedded.data, "mimeType": content_type }));
    }
    let data =
        decode_base64(&embedded.data).ok_or_else(|| "is not valid base64 data".to_owned())?;
    let text = String::from_utf8(data)
        .map_err(|_| format!("({content_type}) is neither text nor an image"))?;
    if capabilities.embedded_context {
        return Ok(json!({
            "type": "resource",
            "resource": {
                "uri": format!("attachment:{}", embedded.label),
                "mimeType": content_type,
                "text": text,
            },
        }));
    }
    Ok(json!({
        "type": "text",
        "text": format!("{}:\n```\n{text}\n```", embedded.label),
    }))
}

#[cfg(test)]
mod tests {
    use agenthost_protocol::state::{MessageResourceAttachment, SimpleMessageAttachment};
    use base64::Engine as _;

    use super::*;

    fn embedded(label: &str, content_type: &str, data: &[u8]) -> MessageAttachment {
        MessageAttachment::EmbeddedResource(MessageEmbeddedResourceAttachment {
            label: label.to_owned(),
            range: None,
            display_kind: None,
            meta: None,
            data: base64::engine::general_purpose::STANDARD.encode(data),
            content_type: content_type.to_owned(),
            selection: None,
        })
    }

    #[test]
    fn text_and_instructions_come_first_then_one_block_per_attachment() {
        let attachments = vec![
            MessageAttachment::Resource(MessageResourceAttachment {
                label: "main.rs".to_owned(),
                range: None,
                display_kind: None,
                meta: None,
                uri: "file:///p/main.rs".to_owned(),
                size_hint: None,
                content_type: Some("text/x-rust".to_owned()),
                nonce: None,
                selection: None,
            }),
            embedded("notes", "text/plain; charset=utf-8", b"remember"),
            embedded("shot", "image/png", &[137, 80, 78, 71]),
        ];
        let (blocks, skipped) = prompt_blocks(
            "fix it",
            &["be brief".to_owned()],
            &attachments,
            PromptCapabilities {
                image: true,
                embedded_context: true,
            },
        );
        assert!(skipped.is_empty(), "{skipped:?}");
        assert_eq!(
            blocks[0],
            json!({ "type": "text", "text": "fix it\n\nbe brief" })
        );
        assert_eq!(blocks[1]["type"], "resource_link");
        assert_eq!(blocks[1]["uri"], "file:///p/main.rs");
        assert_eq!(blocks[1]["mimeType"], "text/x-rust");
        assert_eq!(blocks[2]["resource"]["text"], "remember");
        assert_eq!(blocks[3]["type"], "image");
        assert_eq!(blocks[3]["mimeType"], "image/png");
    }

    #[test]
    fn what_the_agent_cannot_take_is_said_not_dropped() {
        let attachments = vec![
            embedded("notes", "text/plain", b"remember"),
            embedded("shot", "image/png", &[137, 80]),
            embedded("blob", "application/octet-stream", &[0xff, 0xfe]),
            MessageAttachment::Simple(SimpleMessageAttachment {
                label: "empty".to_owned(),
                range: None,
                display_kind: None,
                meta: None,
                model_representation: None,
            }),
        ];
        let (blocks, skipped) =
            prompt_blocks("go", &[], &attachments, PromptCapabilities::default());
        assert_eq!(blocks.len(), 2, "{blocks:?}");
        assert_eq!(blocks[1]["text"], "notes:\n```\nremember\n```");
        assert_eq!(skipped.len(), 3, "{skipped:?}");
        assert!(skipped[0].contains("does not take images"), "{skipped:?}");
        assert!(
            skipped[1].contains("neither text nor an image"),
            "{skipped:?}"
        );
        assert!(skipped[2].contains("empty"), "{skipped:?}");
    }
}
