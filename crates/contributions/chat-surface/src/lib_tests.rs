use std::io::Write;

use agenthost_dispatcher::{Dispatcher, RegistrationError};
use agenthost_protocol::uri::path_to_file_uri;
use agenthost_services::LocalFiles;
use agenthost_services::fakes::FakeHostState;
use agenthost_services::fakes::{FakeFileService, FileCall};
use serde_json::json;

use super::*;

const SESSION: &str = "ahp-session:/s1";
const CHAT: &str = "ahp-chat:/c1";
const T0: &str = "2026-01-01T00:00:00.000Z";
const MAIN_RS: &str = "file:///repo/src/main.rs";
const LIB_RS: &str = "file:///repo/src/lib.rs";

/// A small file whose excerpt is pinned literally below.
const SMALL: &str = "fn main() {\n    let x = 1;\n    let y = 2;\n    println!(\"{x}\");\n}\n";

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

fn chat_state(meta: Option<Value>) -> ChatState {
    let mut chat = json!({
        "resource": CHAT, "title": "Chat", "status": 1, "modifiedAt": T0, "turns": []
    });
    if let Some(meta) = meta {
        chat["_meta"] = meta;
    }
    from(chat)
}

/// A selection attachment on `uri`, `[start line, start char, end line, end char]` (0-based).
fn selection(uri: &str, label: &str, range: [i64; 4]) -> Value {
    json!({
        "type": "resource", "label": label, "uri": uri,
        "selection": { "range": {
            "start": { "line": range[0], "character": range[1] },
            "end": { "line": range[2], "character": range[3] }
        }}
    })
}

fn message(text: &str, meta: Option<Value>, attachments: Vec<Value>) -> Message {
    let mut message = json!({ "text": text, "origin": { "kind": "user" } });
    if let Some(meta) = meta {
        message["_meta"] = meta;
    }
    if !attachments.is_empty() {
        message["attachments"] = Value::Array(attachments);
    }
    from(message)
}

fn outgoing(message: Message) -> OutgoingTurn {
    OutgoingTurn {
        session: SESSION.parse().unwrap(),
        chat: CHAT.parse().unwrap(),
        message,
        turn_id: "t1".to_owned(),
    }
}

struct Fakes {
    host: Arc<FakeHostState>,
    files: Arc<FakeFileService>,
    contribution: ChatSurface,
}

/// The contribution over fakes; the chat's state carries `chat_meta` as `_meta`.
fn fakes(chat_meta: Option<Value>) -> Fakes {
    let host = Arc::new(FakeHostState::default());
    host.script(|a| {
        a.chats.insert(CHAT.into(), chat_state(chat_meta));
    });
    let files = Arc::new(FakeFileService::default());
    let contribution = ChatSurface::new(host.clone(), files.clone());
    Fakes {
        host,
        files,
        contribution,
    }
}

fn editor_inline() -> Option<Value> {
    Some(json!({ "surface": "editor-inline", "targetUri": MAIN_RS }))
}

async fn send(contribution: &ChatSurface, message: Message) -> Option<SendContribution> {
    contribution
        .on_outgoing_turn(&outgoing(message))
        .await
        .unwrap()
}

/// What an editor-inline send contributes: its instructions must be exactly the editor-inline
/// one; returns the replacement text.
async fn editor_text(contribution: &ChatSurface, message: Message) -> Option<String> {
    let contributed = send(contribution, message).await.unwrap();
    assert_eq!(
        contributed.instructions,
        Some(vec![EDITOR_INLINE_INSTRUCTION.to_owned()])
    );
    contributed.text
}

/// The `n` lines `line 1` … `line n`, each ended by `\n`.
fn numbered_lines(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

fn range(r: [i64; 4]) -> TextRange {
    from(json!({
        "start": { "line": r[0], "character": r[1] },
        "end": { "line": r[2], "character": r[3] }
    }))
}

/// The lines of a block between its header and its closing tag.
fn body_lines(block: &str) -> Vec<&str> {
    let lines: Vec<&str> = block.lines().collect();
    lines[3..lines.len() - 1].to_vec()
}

// The surface.

#[tokio::test]
async fn a_terminal_chat_gets_one_instruction_and_keeps_its_text() {
    let fakes = fakes(Some(json!({ "surface": "terminal" })));
    let contributed = send(
        &fakes.contribution,
        message(
            "list big files",
            None,
            vec![selection(MAIN_RS, "main.rs", [0, 0, 1, 0])],
        ),
    )
    .await;
    assert_eq!(
        contributed,
        Some(SendContribution {
            instructions: Some(vec![TERMINAL_INSTRUCTION.to_owned()]),
            text: None,
        })
    );
    assert_eq!(fakes.files.calls(), [], "a terminal chat reads no file");
    assert_eq!(
        fakes.host.calls(),
        [agenthost_services::fakes::HostStateCall::Chat(CHAT.into())]
    );
}

#[tokio::test]
async fn without_a_surface_nothing_is_contributed() {
    for chat_meta in [None, Some(json!({})), Some(json!({ "other": "terminal" }))] {
        let fakes = fakes(chat_meta.clone());
        fakes.files.put(MAIN_RS, SMALL);
        let attachments = vec![selection(MAIN_RS, "main.rs", [1, 0, 1, 3])];
        let contributed = send(&fakes.contribution, message("hi", None, attachments)).await;
        assert_eq!(contributed, None, "{chat_meta:?}");
        assert_eq!(fakes.files.calls(), [], "{chat_meta:?}");
    }
}

#[tokio::test]
async fn unknown_or_malformed_surfaces_are_no_surface() {
    for surface in [
        json!("panel"),
        json!("editorInline"),
        json!("Terminal"),
        json!(true),
        json!({ "surface": "terminal" }),
    ] {
        let fakes = fakes(Some(json!({ "surface": surface })));
        let contributed = send(&fakes.contribution, message("hi", None, vec![])).await;
        assert_eq!(contributed, None, "{surface}");
    }
}

#[tokio::test]
async fn the_message_meta_is_the_fallback_when_the_chat_has_no_surface() {
    // The chat is unknown to the host, or its `_meta` has no `surface` key.
    for host_chat in [None, Some(chat_state(Some(json!({ "unrelated": 1 }))))] {
        let fakes = fakes(None);
        fakes.host.script(|a| {
            a.chats.clear();
            if let Some(chat) = host_chat.clone() {
                a.chats.insert(CHAT.into(), chat);
            }
        });
        let contributed = send(
            &fakes.contribution,
            message("hi", Some(json!({ "surface": "terminal" })), vec![]),
        )
        .await;
        assert_eq!(
            contributed.and_then(|c| c.instructions),
            Some(vec![TERMINAL_INSTRUCTION.to_owned()])
        );
    }
}

#[tokio::test]
async fn the_chats_surface_key_wins_over_the_message() {
    // The host says "no known surface"; the message's claim is not consulted.
    let fakes = fakes(Some(json!({ "surface": "panel" })));
    let contributed = send(
        &fakes.contribution,
        message("hi", Some(json!({ "surface": "terminal" })), vec![]),
    )
    .await;
    assert_eq!(contributed, None);

    // And the target URI comes from the same bag as the surface.
    let meta = surface_meta(
        Some(&chat_state(Some(json!({ "surface": "editor-inline" })))),
        &message(
            "hi",
            Some(json!({ "surface": "terminal", "targetUri": LIB_RS })),
            vec![],
        ),
    );
    assert_eq!(
        meta,
        SurfaceMeta {
            surface: Some(Surface::EditorInline),
            target_uri: None,
        }
    );
}

// Editor-inline: the block.

#[tokio::test]
async fn an_editor_inline_selection_becomes_a_bounded_excerpt_before_the_text() {
    let fakes = fakes(editor_inline());
    fakes.files.put(MAIN_RS, SMALL);
    let text = editor_text(
        &fakes.contribution,
        message(
            "make it mutable",
            None,
            vec![selection(MAIN_RS, "main.rs", [1, 4, 3, 0])],
        ),
    )
    .await;
    let expected = "<editor_inline_context>
File: main.rs
Target 2:5-4:1; '>' marks target lines:
  1 | fn main() {
> 2 |     let x = 1;
> 3 |     let y = 2;
  4 |     println!(\"{x}\");
  5 | }
  6 | 
</editor_inline_context>

make it mutable";
    assert_eq!(text.as_deref(), Some(expected));
    assert_eq!(
        fakes.files.calls(),
        [FileCall {
            uri: MAIN_RS.into(),
            max_bytes: 1024 * 1024,
        }]
    );
}

#[test]
fn the_window_starts_four_lines_before_the_target_and_shows_at_most_sixteen() {
    let source = numbered_lines(40);
    // Target line 21 (1-based): the window is lines 17..=32.
    let block = editor_inline_context(&source, "f", &range([20, 0, 20, 4])).unwrap();
    let body = body_lines(&block);
    assert_eq!(body.len(), MAX_WINDOW_LINES);
    assert_eq!(body[0], "  17 | line 17");
    assert_eq!(body[4], "> 21 | line 21");
    assert_eq!(body[15], "  32 | line 32");

    // Near the top the window starts at line 1; near the end it stops at the last line.
    let block = editor_inline_context(&source, "f", &range([1, 0, 1, 1])).unwrap();
    assert_eq!(body_lines(&block)[0], "   1 | line 1");
    let block = editor_inline_context(&source, "f", &range([38, 0, 38, 1])).unwrap();
    let body = body_lines(&block);
    assert_eq!(body.first(), Some(&"  35 | line 35"));
    assert_eq!(body.last(), Some(&"  41 | "));
}

#[test]
fn target_lines_are_marked_and_an_end_at_column_zero_is_exclusive() {
    let source = numbered_lines(6);
    let marked = |r: [i64; 4]| -> Vec<usize> {
        let block = editor_inline_context(&source, "f", &range(r)).unwrap();
        body_lines(&block)
            .iter()
            .enumerate()
            .filter(|(_, line)| line.starts_with('>'))
            .map(|(index, _)| index + 1)
            .collect()
    };
    assert_eq!(marked([1, 2, 3, 1]), [2, 3, 4], "the end line is selected");
    assert_eq!(
        marked([1, 2, 3, 0]),
        [2, 3],
        "column 0 ends before the line"
    );
    assert_eq!(marked([2, 0, 2, 0]), [3], "a cursor marks its line");
    assert_eq!(
        marked([2, 5, 1, 0]),
        [3],
        "an end before the start marks the start"
    );
    assert_eq!(
        marked([4, 0, 99, 3]),
        [5, 6, 7],
        "an end past the file stops at its last line"
    );
    // The header keeps the selection as given.
    let block = editor_inline_context(&source, "f", &range([1, 2, 3, 0])).unwrap();
    assert!(block.contains("\nTarget 2:3-4:1; '>' marks target lines:\n"));
}

#[test]
fn long_lines_are_cut_to_220_characters() {
    let exact = "é".repeat(220);
    let long = "é".repeat(300);
    let source = format!("{exact}\n{long}\n");
    let block = editor_inline_context(&source, "f", &range([0, 0, 0, 1])).unwrap();
    let body = body_lines(&block);
    assert_eq!(body[0], format!("> 1 | {exact}"));
    assert_eq!(body[1], format!("  2 | {}...", "é".repeat(217)));
    assert_eq!(body[1].chars().count(), "  2 | ".len() + MAX_LINE_CHARS);
}

#[test]
fn the_whole_block_is_capped_at_4096_characters() {
    let source = format!("{}\n", "ü".repeat(300)).repeat(40);
    let label = "l".repeat(1000);
    let block = editor_inline_context(&source, &label, &range([10, 0, 12, 0])).unwrap();
    assert_eq!(block.chars().count(), MAX_BLOCK_CHARS);
    assert!(block.starts_with("<editor_inline_context>\nFile: lll"));
    assert!(block.ends_with("\n</editor_inline_context>"));

    // A block under the cap is not padded or cut.
    let block = editor_inline_context("a\nb", "f", &range([0, 0, 0, 1])).unwrap();
    assert!(block.ends_with("> 1 | a\n  2 | b\n</editor_inline_context>"));
}

#[test]
fn crlf_and_cr_line_breaks_split_lines_and_are_not_shown() {
    let block = editor_inline_context("a\r\nb\rc", "f", &range([1, 0, 1, 1])).unwrap();
    assert_eq!(body_lines(&block), ["  1 | a", "> 2 | b", "  3 | c"]);
}

#[tokio::test]
async fn a_selection_starting_outside_the_file_leaves_the_text_unchanged() {
    let fakes = fakes(editor_inline());
    fakes.files.put(MAIN_RS, SMALL);
    for start in [6, 50, -1] {
        let attachments = vec![selection(MAIN_RS, "main.rs", [start, 0, start, 1])];
        let text = editor_text(&fakes.contribution, message("hi", None, attachments)).await;
        assert_eq!(text, None, "start line {start}");
    }
}

#[tokio::test]
async fn the_source_read_is_capped_at_one_megabyte() {
    // Over the real file service: a target beyond the first megabyte is not in the excerpt.
    let mut file = tempfile::NamedTempFile::new().unwrap();
    let line = format!("{}\n", "x".repeat(1023));
    file.write_all(line.repeat(1536).as_bytes()).unwrap(); // 1.5 MB, 1536 lines
    let uri = path_to_file_uri(file.path()).unwrap();
    let host = Arc::new(FakeHostState::default());
    host.script(|a| {
        a.chats.insert(
            CHAT.into(),
            chat_state(Some(json!({ "surface": "editor-inline" }))),
        );
    });
    let contribution = ChatSurface::new(host, Arc::new(LocalFiles));

    let within = vec![selection(&uri, "big.txt", [1000, 0, 1000, 5])];
    let text = editor_text(&contribution, message("q", None, within))
        .await
        .unwrap();
    assert!(text.contains("\n> 1001 | xxx"), "{text}");

    // 1024 lines of 1024 bytes fill the megabyte exactly; line 1025 (index 1024) is the
    // empty line after the last break read, line 1026 is not read at all.
    let beyond = vec![selection(&uri, "big.txt", [1025, 0, 1025, 5])];
    let text = editor_text(&contribution, message("q", None, beyond)).await;
    assert_eq!(text, None);
}

// Editor-inline: picking the attachment.

#[tokio::test]
async fn the_attachment_matching_the_target_wins() {
    let fakes = fakes(editor_inline());
    fakes.files.put(MAIN_RS, SMALL);
    fakes.files.put(LIB_RS, "pub fn lib() {}\n");
    let attachments = vec![
        selection(LIB_RS, "lib.rs", [0, 0, 0, 3]),
        selection(MAIN_RS, "main.rs", [0, 0, 0, 3]),
    ];
    let text = editor_text(&fakes.contribution, message("hi", None, attachments))
        .await
        .unwrap();
    assert!(text.contains("File: main.rs\n"), "{text}");
    assert_eq!(
        fakes.files.calls(),
        [FileCall {
            uri: MAIN_RS.into(),
            max_bytes: MAX_SOURCE_BYTES,
        }]
    );
}

#[tokio::test]
async fn the_target_may_come_from_the_message_and_file_uris_match_by_path() {
    let fakes = fakes(None);
    fakes.files.put(LIB_RS, "pub fn lib() {}\n");
    fakes.files.put(MAIN_RS, SMALL);
    let attachments = vec![
        selection(MAIN_RS, "main.rs", [0, 0, 0, 3]),
        selection(LIB_RS, "lib.rs", [0, 0, 0, 3]),
    ];
    let meta =
        json!({ "surface": "editor-inline", "targetUri": "file://localhost/repo/src/lib.rs" });
    let text = editor_text(&fakes.contribution, message("hi", Some(meta), attachments))
        .await
        .unwrap();
    assert!(text.contains("File: lib.rs\n"), "{text}");
}

#[tokio::test]
async fn without_a_match_the_only_selection_attachment_is_used() {
    // No target at all, and a target naming another document.
    for meta in [
        json!({ "surface": "editor-inline" }),
        json!({ "surface": "editor-inline", "targetUri": "file:///elsewhere.rs" }),
    ] {
        let fakes = fakes(Some(meta));
        fakes.files.put(MAIN_RS, SMALL);
        let attachments = vec![
            json!({ "type": "resource", "label": "notes.md", "uri": "file:///notes.md" }),
            json!({ "type": "simple", "label": "x", "modelRepresentation": "x" }),
            selection(MAIN_RS, "main.rs", [0, 0, 0, 3]),
        ];
        let text = editor_text(&fakes.contribution, message("hi", None, attachments))
            .await
            .unwrap();
        assert!(text.contains("File: main.rs\n"), "{text}");
    }
}

#[tokio::test]
async fn several_selections_and_no_match_leave_the_text_unchanged() {
    let fakes = fakes(Some(
        json!({ "surface": "editor-inline", "targetUri": "file:///elsewhere.rs" }),
    ));
    fakes.files.put(MAIN_RS, SMALL);
    fakes.files.put(LIB_RS, SMALL);
    let attachments = vec![
        selection(MAIN_RS, "main.rs", [0, 0, 0, 3]),
        selection(LIB_RS, "lib.rs", [0, 0, 0, 3]),
    ];
    let text = editor_text(&fakes.contribution, message("hi", None, attachments)).await;
    assert_eq!(text, None);
    assert_eq!(fakes.files.calls(), [], "nothing is read");
}

#[tokio::test]
async fn without_a_selection_attachment_only_the_instruction_is_added() {
    let fakes = fakes(editor_inline());
    fakes.files.put(MAIN_RS, SMALL);
    for attachments in [
        vec![],
        // A resource without a selection, and an embedded resource (no URI to read).
        vec![
            json!({ "type": "resource", "label": "main.rs", "uri": MAIN_RS }),
            json!({
                "type": "embeddedResource", "label": "x", "data": "eA==", "contentType": "text/plain",
                "selection": { "range": {
                    "start": { "line": 0, "character": 0 }, "end": { "line": 0, "character": 1 }
                }}
            }),
        ],
    ] {
        let text = editor_text(&fakes.contribution, message("hi", None, attachments)).await;
        assert_eq!(text, None);
    }
    assert_eq!(fakes.files.calls(), []);
}

#[tokio::test]
async fn an_unreadable_file_leaves_the_text_unchanged() {
    // Missing (the fake answers NotFound).
    let fakes = fakes(editor_inline());
    let attachments = vec![selection(MAIN_RS, "main.rs", [0, 0, 0, 3])];
    let text = editor_text(&fakes.contribution, message("hi", None, attachments)).await;
    assert_eq!(text, None);
    assert_eq!(fakes.files.calls().len(), 1);

    // Not a file URI, and a missing file, over the real file service.
    let dir = tempfile::tempdir().unwrap();
    let missing = path_to_file_uri(&dir.path().join("gone.rs")).unwrap();
    let host = Arc::new(FakeHostState::default());
    host.script(|a| {
        a.chats.insert(
            CHAT.into(),
            chat_state(Some(json!({ "surface": "editor-inline" }))),
        );
    });
    let contribution = ChatSurface::new(host, Arc::new(LocalFiles));
    for uri in [
        "untitled:Untitled-1",
        "https://example.com/a.rs",
        missing.as_str(),
    ] {
        let attachments = vec![selection(uri, "a.rs", [0, 0, 0, 3])];
        let text = editor_text(&contribution, message("hi", None, attachments)).await;
        assert_eq!(text, None, "{uri}");
    }
}

// Registration and the dispatcher.

#[tokio::test]
async fn through_the_dispatcher_the_excerpt_replaces_the_text() {
    let host = Arc::new(FakeHostState::default());
    host.script(|a| {
        a.chats.insert(CHAT.into(), chat_state(editor_inline()));
    });
    let files = Arc::new(FakeFileService::default());
    files.put(MAIN_RS, SMALL);
    let mut services = ServiceRegistry::new();
    services.insert::<dyn HostState>(host);
    services.insert::<dyn FileService>(files);
    let dispatcher = Dispatcher::new(services);
    let _registration = dispatcher.register::<ChatSurface>().unwrap();
    assert_eq!(
        dispatcher.order_of(Hook::OutgoingTurn),
        [(300, "chatSurface")]
    );
    let original = message(
        "rename x",
        None,
        vec![selection(MAIN_RS, "main.rs", [1, 8, 1, 9])],
    );
    let result = dispatcher.outgoing_turn(&outgoing(original.clone())).await;
    assert_eq!(
        result.instructions,
        Some(vec![EDITOR_INLINE_INSTRUCTION.to_owned()])
    );
    assert!(
        result
            .message
            .text
            .starts_with("<editor_inline_context>\nFile: main.rs\nTarget 2:9-2:10;"),
        "{}",
        result.message.text
    );
    assert!(
        result
            .message
            .text
            .ends_with("</editor_inline_context>\n\nrename x")
    );
    assert_eq!(result.message.attachments, original.attachments);
}

#[test]
fn a_missing_service_fails_the_registration_naming_it() {
    let mut services = ServiceRegistry::new();
    services.insert::<dyn HostState>(Arc::new(FakeHostState::default()));
    let dispatcher = Dispatcher::new(services);
    let error = dispatcher.register::<ChatSurface>().unwrap_err();
    let RegistrationError::MissingService { id, service } = error else {
        panic!("expected a missing service, got {error:?}");
    };
    assert_eq!(id, "chatSurface");
    assert!(service.contains("FileService"), "{service}");
    assert!(ChatSurface::from_services(&ServiceRegistry::new()).is_err());
}
