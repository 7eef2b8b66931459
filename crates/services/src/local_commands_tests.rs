use super::*;

fn handle(text: &str) -> Option<LocalCommand> {
    DefaultLocalCommands.try_handle(text)
}

fn rename(title: &str) -> Option<LocalCommand> {
    Some(LocalCommand::Rename {
        title: title.to_owned(),
    })
}

#[test]
fn rename_takes_the_trimmed_title() {
    assert_eq!(handle("/rename My chat"), rename("My chat"));
    assert_eq!(handle("  /rename   My   chat  \n"), rename("My chat"));
    assert_eq!(handle("/rename\tTabbed"), rename("Tabbed"));
    assert_eq!(handle("/rename first\nsecond"), rename("first second"));
    assert_eq!(handle("/rename 日本語"), rename("日本語"));
    assert_eq!(
        handle("/rename My chat").unwrap().suggested_title(),
        Some("My chat")
    );
}

#[test]
fn an_empty_title_is_an_error_value() {
    let empty = Some(LocalCommand::Invalid {
        command: "rename",
        error: LocalCommandError::EmptyTitle,
    });
    assert_eq!(handle("/rename"), empty);
    assert_eq!(handle("/rename    "), empty);
    assert_eq!(handle("/rename \u{200B}\u{202E}\u{0000}"), empty);
    let invalid = handle("/rename").unwrap();
    assert_eq!(invalid.suggested_title(), None);
    assert!(
        LocalCommandError::EmptyTitle
            .to_string()
            .contains("/rename <new title>")
    );
}

#[test]
fn hostile_titles_are_cleaned_or_refused() {
    // Bidirectional overrides, zero-width and control characters never reach a title.
    assert_eq!(handle("/rename safe\u{202E}txt.exe"), rename("safetxt.exe"));
    assert_eq!(handle("/rename a\u{0007}b\u{001B}[31mc"), rename("ab[31mc"));
    assert_eq!(handle("/rename \u{FEFF}x\u{200D}y"), rename("xy"));
    // Too long: a clear error naming both lengths, no truncation guesswork.
    let long = format!("/rename {}", "x".repeat(MAX_RENAME_CHARS + 1));
    assert_eq!(
        handle(&long),
        Some(LocalCommand::Invalid {
            command: "rename",
            error: LocalCommandError::TitleTooLong {
                chars: MAX_RENAME_CHARS + 1,
                max: MAX_RENAME_CHARS
            },
        })
    );
    let exact = format!("/rename {}", "x".repeat(MAX_RENAME_CHARS));
    assert_eq!(handle(&exact), rename(&"x".repeat(MAX_RENAME_CHARS)));
    // Huge input does not panic.
    let _ = handle(&format!("/rename {}", "\u{200B} ".repeat(100_000)));
}

#[test]
fn other_text_is_not_a_command() {
    for text in [
        "",
        "rename this",
        "please /rename x",
        "/renamed x",
        "/Rename x",
        "/RENAME x",
        "/rename-x",
        "/help",
        "/",
        "//rename x",
        "\u{200B}/rename x",
    ] {
        assert_eq!(handle(text), None, "{text:?}");
    }
}
