use agenthost_protocol::state::MessageAttachment;
use base64::Engine as _;
use serde_json::{Value, json};

use super::*;

fn attachments(values: Value) -> Vec<MessageAttachment> {
    serde_json::from_value(values).unwrap()
}

fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The text of the first input item (always the text item).
fn text_of(input: &[Value]) -> &str {
    assert_eq!(input[0]["type"], "text");
    assert_eq!(input[0]["text_elements"], json!([]));
    input[0]["text"].as_str().unwrap()
}

#[test]
fn the_first_item_is_always_the_text_even_when_empty() {
    let dir = tempfile::tempdir().unwrap();
    let (input, images, skipped) = user_input("hi", &[], &[], dir.path()).unwrap();
    assert_eq!(
        input,
        [json!({ "type": "text", "text": "hi", "text_elements": [] })]
    );
    assert!(images.is_empty() && skipped.is_empty());
    let (input, _, _) = user_input("", &[], &[], dir.path()).unwrap();
    assert_eq!(text_of(&input), "");
}

#[test]
fn file_and_directory_mentions_become_at_paths_and_other_uris_stay() {
    let dir = tempfile::tempdir().unwrap();
    let list = attachments(json!([
        { "type": "resource", "label": "main.rs", "uri": "file:///w/src/main.rs" },
        { "type": "resource", "label": "src", "uri": "file:///w/src", "displayKind": "directory" },
        { "type": "resource", "label": "sel", "uri": "file:///w/My%20File.rs",
          "selection": { "range": { "start": { "line": 9, "character": 0 },
                                    "end": { "line": 12, "character": 3 } } } },
        { "type": "resource", "label": "web", "uri": "https://example.com/a" },
        { "type": "simple", "label": "s", "modelRepresentation": "context" },
    ]));
    let instructions = vec!["Be brief.".to_owned(), " ".to_owned()];
    let (input, images, skipped) = user_input("look", &instructions, &list, dir.path()).unwrap();
    assert_eq!(
        text_of(&input),
        "look\n\n@/w/src/main.rs\n\n@/w/src\n\n@/w/My File.rs\n\nhttps://example.com/a\n\n\
         context\n\nBe brief."
    );
    assert_eq!(input.len(), 1);
    assert!(images.is_empty() && skipped.is_empty());
}

#[test]
fn textual_embedded_resources_become_fenced_code_with_their_lines() {
    let dir = tempfile::tempdir().unwrap();
    let list = attachments(json!([
        { "type": "embeddedResource", "label": "config.json", "contentType": "application/json",
          "data": base64(b"{\"a\": 1}\n"),
          "selection": { "range": { "start": { "line": 0, "character": 0 },
                                    "end": { "line": 2, "character": 0 } } } },
        { "type": "embeddedResource", "label": "README.md", "contentType": "text/markdown; charset=utf-8",
          "data": base64(b"```sh\nls\n```") },
        { "type": "embeddedResource", "label": "feed", "contentType": "application/atom+xml",
          "data": base64(b"<feed/>") },
        { "type": "embeddedResource", "label": "blank.txt", "contentType": "text/plain",
          "data": base64(b"  \n") },
    ]));
    let (input, _, skipped) = user_input("", &[], &list, dir.path()).unwrap();
    assert_eq!(
        text_of(&input),
        "config.json (lines 1-3):\n```\n{\"a\": 1}\n```\n\n\
         README.md:\n````\n```sh\nls\n```\n````\n\n\
         feed:\n```\n<feed/>\n```"
    );
    assert_eq!(skipped, ["attachment blank.txt is empty"]);
}

#[test]
fn images_are_written_and_sent_as_local_images() {
    let dir = tempfile::tempdir().unwrap();
    let list = attachments(json!([
        { "type": "embeddedResource", "label": "shot.png", "displayKind": "image",
          "data": base64(b"\x89PNG fake"), "contentType": "image/png" },
        { "type": "embeddedResource", "label": "photo", "data": base64(b"jpeg"),
          "contentType": "image/jpeg" },
        { "type": "embeddedResource", "label": "icon", "data": base64(b"icon"),
          "contentType": "image/x-icon" },
    ]));
    let (input, images, skipped) = user_input("see", &[], &list, dir.path()).unwrap();
    assert!(skipped.is_empty());
    assert_eq!(text_of(&input), "see");
    assert_eq!(images.len(), 3);
    let names: Vec<String> = images
        .iter()
        .map(|path| path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for (name, ext) in names.iter().zip([".png", ".jpg", ""]) {
        let hex = name
            .strip_prefix("codex-img-")
            .and_then(|rest| rest.strip_suffix(ext))
            .unwrap_or_else(|| panic!("{name}"));
        assert_eq!(hex.len(), 16, "{name}");
        assert!(hex.chars().all(|c| c.is_ascii_hexdigit()), "{name}");
    }
    for (item, path) in input[1..].iter().zip(&images) {
        assert_eq!(
            *item,
            json!({ "type": "localImage", "path": path.to_string_lossy() })
        );
        assert_eq!(path.parent(), Some(dir.path()));
    }
    assert_eq!(std::fs::read(&images[0]).unwrap(), b"\x89PNG fake");
    assert_ne!(images[0], images[1], "every image gets its own name");
}

#[test]
fn an_image_that_cannot_be_written_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let list = attachments(json!([
        { "type": "embeddedResource", "label": "shot.png", "data": base64(b"png"),
          "contentType": "image/png" },
    ]));
    let (input, images, skipped) = user_input("see", &[], &list, &missing).unwrap();
    assert_eq!(input.len(), 1);
    assert!(images.is_empty());
    assert_eq!(skipped.len(), 1);
    assert!(
        skipped[0].starts_with("attachment shot.png could not be written to "),
        "{}",
        skipped[0]
    );
}

#[test]
fn unsupported_attachments_are_reported_not_dropped_silently() {
    let dir = tempfile::tempdir().unwrap();
    let list = attachments(json!([
        { "type": "embeddedResource", "label": "doc.pdf", "data": "AAAA",
          "contentType": "application/pdf" },
        { "type": "embeddedResource", "label": "broken", "data": "!!!",
          "contentType": "text/plain" },
        { "type": "embeddedResource", "label": "latin1", "data": base64(&[0xff, 0xfe]),
          "contentType": "text/plain" },
        { "type": "simple", "label": "bare" },
        { "type": "annotations", "label": "notes", "resource": "ahp-annotations:/s1" },
        { "type": "chat", "label": "other chat", "resource": "ahp-chat:/c2" },
        { "type": "hologram", "label": "future" },
    ]));
    let (input, images, skipped) = user_input("hi", &[], &list, dir.path()).unwrap();
    assert_eq!(text_of(&input), "hi");
    assert!(images.is_empty());
    assert_eq!(
        skipped,
        [
            "attachment doc.pdf (application/pdf) is not supported by Codex: only images and \
             text can be sent",
            "attachment broken is not valid base64 data",
            "attachment latin1 is not UTF-8 text",
            "attachment bare has no text for the model",
            "annotations attachment notes is not supported by Codex",
            "chat attachment other chat is not supported by Codex",
            "hologram attachment future is not supported by Codex",
        ]
    );
}
