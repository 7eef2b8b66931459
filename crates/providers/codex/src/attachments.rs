//! The attachment serializer: a protocol message → the `input` of
//! `turn/start` (`UserInput[]`).
//!
//! The first item is always one text item: the prompt, then one paragraph per attachment that
//! reads as text (file references as `@<path>`, other URIs as themselves, textual embedded
//! resources as fenced code, simple attachments by their model representation), then the
//! host's instructions. Embedded images are written to files under the caller's directory and
//! sent as `localImage` items; the caller deletes the files after the turn. What cannot be sent
//! is reported back, one sentence per attachment — never dropped silently.

use std::path::{Path, PathBuf};

use agenthost_protocol::state::{
    MessageAttachment, MessageEmbeddedResourceAttachment, MessageResourceAttachment, TextSelection,
};
use agenthost_protocol::uri::file_uri_to_path;
use agenthost_provider_api::{decode_base64, media_type, simple_text, unsendable};
use serde_json::{Value, json};

/// How attachment notes name the agent.
const AGENT: &str = "Codex";

/// Why no input could be built at all.
#[derive(Debug, thiserror::Error)]
pub enum AttachmentError {
    /// The system's random source failed, so no image file name could be chosen.
    #[error("no random file name for an image attachment: {0}")]
    Random(String),
}

/// What [`user_input`] built: the `input` of `turn/start` (one text item, then one
/// `localImage` item per image), the image files written (the caller deletes them once the
/// turn is over) and the attachments not sent, one sentence each saying why.
pub type UserInput = (Vec<Value>, Vec<PathBuf>, Vec<String>);

/// The `turn/start` input for `text`, the host's `instructions` and `attachments`; embedded
/// images are written under `image_dir`.
pub fn user_input(
    text: &str,
    instructions: &[String],
    attachments: &[MessageAttachment],
    image_dir: &Path,
) -> Result<UserInput, AttachmentError> {
    let mut paragraphs: Vec<String> = Vec::new();
    let mut images = Vec::new();
    let mut skipped = Vec::new();
    if !text.is_empty() {
        paragraphs.push(text.to_owned());
    }
    for attachment in attachments {
        match attachment {
            MessageAttachment::Resource(resource) => paragraphs.push(reference(resource)),
            MessageAttachment::EmbeddedResource(embedded) => {
                match embedded_resource(embedded, image_dir)? {
                    Embedded::Paragraph(paragraph) => paragraphs.push(paragraph),
                    Embedded::Image(path) => images.push(path),
                    Embedded::Skipped(reason) => skipped.push(reason),
                }
            }
            MessageAttachment::Simple(simple) => match simple_text(simple) {
                Ok(representation) => {
                    paragraphs.push(representation.to_owned());
                }
                Err(reason) => skipped.push(reason.to_string()),
            },
            other => skipped.extend(unsendable(other, AGENT)),
        }
    }
    paragraphs.extend(
        instructions
            .iter()
            .filter(|instruction| !instruction.trim().is_empty())
            .cloned(),
    );
    let mut input = vec![json!({
        "type": "text",
        "text": paragraphs.join("\n\n"),
        "text_elements": [],
    })];
    input.extend(
        images
            .iter()
            .map(|path| json!({ "type": "localImage", "path": path.to_string_lossy() })),
    );
    Ok((input, images, skipped))
}

/// `@<absolute path>` for a `file:` URI (files, directories and selections alike), else the
/// URI itself.
fn reference(resource: &MessageResourceAttachment) -> String {
    match file_uri_to_path(&resource.uri) {
        Ok(path) => format!("@{}", path.to_string_lossy()),
        Err(_) => resource.uri.clone(),
    }
}

enum Embedded {
    Paragraph(String),
    Image(PathBuf),
    Skipped(String),
}

fn embedded_resource(
    embedded: &MessageEmbeddedResourceAttachment,
    image_dir: &Path,
) -> Result<Embedded, AttachmentError> {
    let label = &embedded.label;
    let content_type = media_type(&embedded.content_type);
    let skipped = |why: &str| Ok(Embedded::Skipped(format!("attachment {label} {why}")));
    let is_image = content_type.starts_with("image/");
    if !is_image && !is_textual(&content_type) {
        return skipped(&format!(
            "({content_type}) is not supported by Codex: only images and text can be sent"
        ));
    }
    let Some(data) = decode_base64(&embedded.data) else {
        return skipped("is not valid base64 data");
    };
    if is_image {
        let path = image_dir.join(image_file_name(&content_type)?);
        return match std::fs::write(&path, &data) {
            Ok(()) => Ok(Embedded::Image(path)),
            Err(error) => skipped(&format!(
                "could not be written to {}: {error}",
                image_dir.display()
            )),
        };
    }
    let Ok(text) = String::from_utf8(data) else {
        return skipped("is not UTF-8 text");
    };
    if text.trim().is_empty() {
        return skipped("is empty");
    }
    let lines = match &embedded.selection {
        Some(TextSelection { range }) => format!(
            " (lines {}-{})",
            range.start.line.saturating_add(1),
            range.end.line.saturating_add(1)
        ),
        None => String::new(),
    };
    Ok(Embedded::Paragraph(format!(
        "{label}{lines}:\n{}",
        fenced(&text)
    )))
}

fn is_textual(media_type: &str) -> bool {
    media_type.starts_with("text/")
        || matches!(
            media_type,
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/typescript"
        )
        || media_type.ends_with("+json")
        || media_type.ends_with("+xml")
}

/// `codex-img-<16 hex><ext>`.
fn image_file_name(media_type: &str) -> Result<String, AttachmentError> {
    let mut bytes = [0_u8; 8];
    getrandom::fill(&mut bytes).map_err(|error| AttachmentError::Random(error.to_string()))?;
    let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    let ext = match media_type.strip_prefix("image/").unwrap_or_default() {
        "jpeg" | "jpg" | "pjpeg" => ".jpg",
        "png" => ".png",
        "gif" => ".gif",
        "webp" => ".webp",
        "bmp" | "x-ms-bmp" => ".bmp",
        _ => "",
    };
    Ok(format!("codex-img-{hex}{ext}"))
}

/// `text` in a fenced code block whose fence no line of the text can close.
fn fenced(text: &str) -> String {
    let longest = text
        .lines()
        .map(|line| line.trim_start().chars().take_while(|c| *c == '`').count())
        .max()
        .unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}\n{}\n{fence}", text.trim_end_matches('\n'))
}

#[cfg(test)]
#[path = "attachments_tests.rs"]
mod tests;
