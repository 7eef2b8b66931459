use std::io;
use std::path::PathBuf;

use agenthost_protocol::state::TextPosition;
use serde_json::json;
use tempfile::TempDir;

use super::*;

fn attachment(value: Value) -> MessageAttachment {
    serde_json::from_value(value).unwrap()
}

fn no_files(path: &Path) -> io::Result<String> {
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        path.display().to_string(),
    ))
}

fn range(start: (i64, i64), end: (i64, i64)) -> TextRange {
    TextRange {
        start: TextPosition {
            line: start.0,
            character: start.1,
        },
        end: TextPosition {
            line: end.0,
            character: end.1,
        },
    }
}

#[test]
fn simple_attachments_become_text_blobs_naming_their_display_kind() {
    let (sent, skipped) = attachments(
        &[
            attachment(json!({ "type": "simple", "label": "Problems",
                               "modelRepresentation": "2 errors" })),
            attachment(
                json!({ "type": "simple", "label": "Symbol", "displayKind": "symbol kind",
                               "modelRepresentation": "fn main" }),
            ),
            attachment(json!({ "type": "simple", "label": "Empty" })),
        ],
        no_files,
    );
    assert_eq!(
        sent,
        [
            json!({ "type": "blob", "data": "MiBlcnJvcnM=", "mimeType": "text/plain",
                    "displayName": "Problems" }),
            json!({ "type": "blob", "data": "Zm4gbWFpbg==",
                    "mimeType": "text/x-vscode-simple-attachment; x-vscode-display-kind=symbol%20kind",
                    "displayName": "Symbol" }),
        ]
    );
    assert_eq!(skipped, ["attachment Empty has no text for the model"]);
}

#[test]
fn embedded_resources_are_sent_as_they_are() {
    let (sent, skipped) = attachments(
        &[attachment(
            json!({ "type": "embeddedResource", "label": "shot.png",
                             "data": "iVBORw0K", "contentType": "image/png" }),
        )],
        no_files,
    );
    assert_eq!(
        sent,
        [
            json!({ "type": "blob", "data": "iVBORw0K", "mimeType": "image/png",
                 "displayName": "shot.png" })
        ]
    );
    assert!(skipped.is_empty());
}

#[test]
fn resources_become_files_directories_or_selections() {
    let dir = TempDir::new().unwrap();
    let file = dir.path().join("main.rs");
    std::fs::write(&file, "fn main() {\n    println!(\"hi\");\n}\n").unwrap();
    let uri = path_to_uri(&file);
    let path = file.to_string_lossy().into_owned();
    let dir_uri = path_to_uri(dir.path());
    let read = |path: &Path| std::fs::read_to_string(path);
    let (sent, skipped) = attachments(
        &[
            attachment(json!({ "type": "resource", "label": "main.rs", "uri": uri })),
            attachment(json!({ "type": "resource", "label": "", "uri": dir_uri,
                               "displayKind": "directory" })),
            attachment(json!({ "type": "resource", "label": "sel", "uri": uri,
                               "displayKind": "selection" })),
            attachment(json!({ "type": "resource", "label": "sel", "uri": uri,
                               "displayKind": "document",
                               "selection": { "range": {
                                   "start": { "line": 1, "character": 4 },
                                   "end": { "line": 1, "character": 99 } } } })),
            attachment(json!({ "type": "resource", "label": "web",
                               "uri": "https://example.com/a" })),
        ],
        read,
    );
    assert_eq!(
        sent,
        [
            json!({ "type": "file", "path": path, "displayName": "main.rs" }),
            json!({ "type": "directory", "path": dir.path().to_string_lossy(),
                    "displayName": dir.path().to_string_lossy() }),
            json!({ "type": "file", "path": path, "displayName": "sel" }),
            json!({ "type": "selection", "filePath": path, "displayName": "sel",
                    "text": "println!(\"hi\");",
                    "selection": { "start": { "line": 1, "character": 4 },
                                   "end": { "line": 1, "character": 99 } } }),
            json!({ "type": "file", "path": "https://example.com/a", "displayName": "web" }),
        ]
    );
    assert!(skipped.is_empty());
}

#[test]
fn a_selection_whose_file_cannot_be_read_is_sent_as_the_file() {
    let (sent, _) = attachments(
        &[attachment(
            json!({ "type": "resource", "label": "gone", "uri": "file:///gone.rs",
                             "selection": { "range": {
                                 "start": { "line": 0, "character": 0 },
                                 "end": { "line": 0, "character": 1 } } } }),
        )],
        no_files,
    );
    assert_eq!(
        sent,
        [json!({ "type": "file", "path": "/gone.rs", "displayName": "gone" })]
    );
}

#[test]
fn unsupported_kinds_are_reported_not_dropped() {
    let (sent, skipped) = attachments(
        &[
            attachment(json!({ "type": "annotations", "label": "Notes",
                               "resource": "ahp-session:/s/annotations" })),
            attachment(json!({ "type": "chat", "label": "Earlier", "resource": "ahp-chat:/c" })),
            attachment(json!({ "type": "hologram", "label": "3D" })),
        ],
        no_files,
    );
    assert!(sent.is_empty());
    assert_eq!(
        skipped,
        [
            "annotations attachment Notes is not supported by Copilot",
            "chat attachment Earlier is not supported by Copilot",
            "hologram attachment 3D is not supported by Copilot",
        ]
    );
}

#[test]
fn selections_are_sliced_by_line_and_character_and_clamped() {
    let text = "ab\ncdé\r\nfg";
    assert_eq!(slice(text, &range((0, 1), (1, 2))), "b\ncd");
    assert_eq!(slice(text, &range((1, 2), (1, 3))), "é");
    assert_eq!(slice(text, &range((1, 0), (1, 99))), "cdé");
    assert_eq!(slice(text, &range((-5, -1), (0, 1))), "a");
    assert_eq!(slice(text, &range((2, 0), (99, 0))), "fg");
    assert_eq!(slice(text, &range((1, 1), (0, 0))), "");
    assert_eq!(slice("", &range((0, 0), (3, 3))), "");
}

fn path_to_uri(path: &Path) -> String {
    agenthost_protocol::uri::path_to_file_uri(&PathBuf::from(path)).unwrap()
}
