use agenthost_protocol::state::MessageAttachment;
use serde_json::{Value, json};

use super::*;

fn attachments(values: Value) -> Vec<MessageAttachment> {
    serde_json::from_value(values).unwrap()
}

fn blocks(content: &Value) -> Vec<&str> {
    content
        .as_array()
        .unwrap()
        .iter()
        .map(|block| {
            assert_eq!(block["type"], "text");
            block["text"].as_str().unwrap()
        })
        .collect()
}

#[test]
fn only_text_stays_a_plain_string() {
    assert_eq!(user_content("hi", &[], &[]), (json!("hi"), Vec::new()));
    assert_eq!(user_content("", &[], &[]), (json!(""), Vec::new()));
}

#[test]
fn simple_attachments_join_their_model_representations_in_one_block() {
    let list = attachments(json!([
        { "type": "simple", "label": "a", "modelRepresentation": "first" },
        { "type": "simple", "label": "b", "modelRepresentation": "second" },
        { "type": "simple", "label": "c" },
    ]));
    let (content, skipped) = user_content("hi", &[], &list);
    assert_eq!(blocks(&content), ["hi", "first\n\nsecond"]);
    assert_eq!(skipped, ["attachment c has no text for the model"]);
}

#[test]
fn resources_are_listed_as_paths_in_a_system_reminder() {
    let list = attachments(json!([
        { "type": "resource", "label": "main.rs", "uri": "file:///w/src/main.rs" },
        { "type": "resource", "label": "sel", "uri": "file:///w/My%20File.rs",
          "selection": { "range": { "start": { "line": 9, "character": 0 },
                                    "end": { "line": 12, "character": 3 } } } },
        { "type": "resource", "label": "src", "uri": "file:///w/src", "displayKind": "directory" },
        { "type": "resource", "label": "web", "uri": "https://example.com/a" },
    ]));
    let (content, skipped) = user_content("look", &[], &list);
    assert_eq!(
        blocks(&content),
        [
            "look",
            "<system-reminder>\nThe user provided the following references:\n\
             - /w/src/main.rs\n- /w/My File.rs:10\n- /w/src\n- https://example.com/a\n\n\
             This context may or may not be relevant to the task. Use it only if it is.\n\
             </system-reminder>"
        ]
    );
    assert!(skipped.is_empty());
}

#[test]
fn unsupported_attachments_are_reported_not_dropped_silently() {
    let list = attachments(json!([
        { "type": "embeddedResource", "label": "shot.png", "displayKind": "image",
          "data": "AAAA", "contentType": "image/png" },
        { "type": "embeddedResource", "label": "buffer", "data": "eA==",
          "contentType": "text/plain" },
        { "type": "annotations", "label": "notes", "resource": "ahp-annotations:/s1" },
        { "type": "chat", "label": "other chat", "resource": "ahp-chat:/c2" },
        { "type": "hologram", "label": "future" },
    ]));
    let (content, skipped) = user_content("hi", &[], &list);
    assert_eq!(content, json!("hi"));
    assert_eq!(
        skipped,
        [
            "image attachment shot.png is not supported by Claude Code",
            "embedded attachment buffer is not supported by Claude Code",
            "annotations attachment notes is not supported by Claude Code",
            "chat attachment other chat is not supported by Claude Code",
            "hologram attachment future is not supported by Claude Code",
        ]
    );
}

#[test]
fn instructions_are_their_own_last_block() {
    let list = attachments(json!([
        { "type": "simple", "label": "a", "modelRepresentation": "context" },
    ]));
    let instructions = vec![
        "Be brief.".to_owned(),
        " ".to_owned(),
        "Use tabs.".to_owned(),
    ];
    let (content, _) = user_content("hi", &instructions, &list);
    assert_eq!(
        blocks(&content),
        ["hi", "context", "Be brief.\n\nUse tabs."]
    );
    let (content, _) = user_content("hi", &instructions, &[]);
    assert_eq!(blocks(&content), ["hi", "Be brief.\n\nUse tabs."]);
}

#[test]
fn an_empty_prompt_sends_no_empty_block() {
    let list = attachments(json!([
        { "type": "simple", "label": "a", "modelRepresentation": "context" },
    ]));
    let (content, _) = user_content("", &[], &list);
    assert_eq!(blocks(&content), ["context"]);
}
