//! What every CLI provider says about attachments it cannot send: one sentence per attachment,
//! never dropped silently.

use agenthost_protocol::ahp_types::state::{MessageAttachment, SimpleMessageAttachment};
use serde_json::Value;

/// `image/png; charset=…` → `image/png`, lowercased: the media type of an attachment's content
/// type.
pub fn media_type(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// The bytes of an embedded attachment's base64 `data` (padded or not, white space ignored);
/// `None` when it is not base64.
pub fn decode_base64(data: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let compact: String = data.chars().filter(|c| !c.is_whitespace()).collect();
    let engine = base64::engine::general_purpose::STANDARD;
    engine.decode(&compact).ok().or_else(|| {
        base64::engine::general_purpose::STANDARD_NO_PAD
            .decode(&compact)
            .ok()
    })
}

/// The sentence for an attachment of `kind` (`annotations`, `chat`, …) labelled `label` that
/// `agent` cannot take.
pub fn unsupported_attachment(kind: &str, label: &str, agent: &str) -> String {
    format!("{kind} attachment {label} is not supported by {agent}")
}

/// A simple attachment with no text for the model: it cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("attachment {label} has no text for the model")]
pub struct NoModelText {
    /// The attachment's label.
    pub label: String,
}

/// The text a simple attachment gives the model, or why it cannot be sent (it has none).
pub fn simple_text(simple: &SimpleMessageAttachment) -> Result<&str, NoModelText> {
    match &simple.model_representation {
        Some(text) if !text.is_empty() => Ok(text),
        _ => Err(NoModelText {
            label: simple.label.clone(),
        }),
    }
}

/// Why `agent` cannot take `attachment`, for the kinds no agent CLI takes (annotations, a chat,
/// a kind this host does not know); `None` for the kinds each provider sends its own way
/// (resources, embedded resources, simple attachments).
pub fn unsendable(attachment: &MessageAttachment, agent: &str) -> Option<String> {
    match attachment {
        MessageAttachment::Annotations(annotations) => Some(unsupported_attachment(
            "annotations",
            &annotations.label,
            agent,
        )),
        MessageAttachment::Chat(chat) => Some(unsupported_attachment("chat", &chat.label, agent)),
        MessageAttachment::Unknown(value) => {
            let text = |key: &str, default: &'static str| {
                value
                    .get(key)
                    .and_then(Value::as_str)
                    .unwrap_or(default)
                    .to_owned()
            };
            Some(unsupported_attachment(
                &text("type", "unknown"),
                &text("label", "(unlabelled)"),
                agent,
            ))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn attachments_no_agent_takes_are_explained_and_the_others_are_left_to_the_provider() {
        let unknown = MessageAttachment::Unknown(json!({ "type": "hologram", "label": "h1" }));
        assert_eq!(
            unsendable(&unknown, "Codex").unwrap(),
            "hologram attachment h1 is not supported by Codex"
        );
        let unlabelled = MessageAttachment::Unknown(json!({}));
        assert_eq!(
            unsendable(&unlabelled, "Codex").unwrap(),
            "unknown attachment (unlabelled) is not supported by Codex"
        );
        let simple: SimpleMessageAttachment = serde_json::from_value(
            json!({ "type": "simple", "label": "note", "modelRepresentation": "" }),
        )
        .unwrap();
        assert_eq!(
            simple_text(&simple).unwrap_err().to_string(),
            "attachment note has no text for the model"
        );
        assert!(unsendable(&MessageAttachment::Simple(simple), "Codex").is_none());
    }
}
