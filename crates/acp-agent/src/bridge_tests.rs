// Test code: a panic is a test failure.
#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn a_prompt_is_text_with_links_inlined_resources_and_images_attached() {
    let (text, attachments) = prompt_message(&json!([
        { "type": "text", "text": "Look at" },
        { "type": "resource_link", "uri": "file:///p/a.rs", "name": "a.rs" },
        { "type": "resource", "resource": { "uri": "file:///p/b.txt", "text": "bee" } },
        { "type": "image", "data": "aGk=", "mimeType": "image/png", "uri": "file:///p/shot.png" },
    ]))
    .unwrap();
    assert_eq!(
        text,
        "Look at\n\n[a.rs](file:///p/a.rs)\n\nfile:///p/b.txt:\n```\nbee\n```"
    );
    let attachments = serde_json::to_value(&attachments).unwrap();
    assert_eq!(
        attachments,
        json!([{ "type": "embeddedResource", "label": "shot.png", "data": "aGk=",
                 "contentType": "image/png" }])
    );
    let (_, only_image) =
        prompt_message(&json!([{ "type": "image", "data": "aGk=", "mimeType": "image/jpeg" }]))
            .unwrap();
    assert_eq!(only_image.len(), 1, "an image alone is a prompt");
}

#[test]
fn what_a_prompt_cannot_carry_is_refused_saying_why() {
    for (blocks, says) in [
        (json!("hi"), "array"),
        (json!([]), "empty"),
        (
            json!([{ "type": "audio", "data": "aGk=", "mimeType": "audio/wav" }]),
            "`audio`",
        ),
        (
            json!([{ "type": "image", "data": "not base64!", "mimeType": "image/png" }]),
            "base64",
        ),
        (
            json!([{ "type": "image", "data": "aGk=", "mimeType": "text/plain" }]),
            "image/",
        ),
        (json!([{ "type": "image", "data": "aGk=" }]), "mimeType"),
        (
            json!([{ "type": "resource", "resource": { "uri": "x", "blob": "aGk=" } }]),
            "binary",
        ),
        (json!([{ "text": "untyped" }]), "without a type"),
    ] {
        let error = prompt_message(&blocks).unwrap_err();
        assert_eq!(error.code, -32602, "{blocks}");
        assert!(error.message.contains(says), "{blocks}: {}", error.message);
    }
}
