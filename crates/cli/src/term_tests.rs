#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn render(style: Style, events: &[(&str, Event)]) -> String {
    let mut renderer = Renderer::new(Vec::new(), style);
    for (indent, event) in events {
        renderer.event(indent, event).unwrap();
    }
    String::from_utf8(renderer.into_inner()).unwrap()
}

fn conversation() -> Vec<(&'static str, Event)> {
    vec![
        ("", Event::Reasoning("Let me ".into())),
        ("", Event::Reasoning("look.".into())),
        ("", Event::Text("# Plan\nI will".into())),
        ("", Event::Text(" write it.".into())),
        (
            "",
            Event::ToolStarted {
                tool_call_id: "c1".into(),
                display_name: "Write file".into(),
            },
        ),
        (
            "",
            Event::ConfirmationNeeded {
                turn_id: "t1".into(),
                tool_call_id: "c1".into(),
                invocation: "Write notes.txt".into(),
                tool_name: "write_file".into(),
                input: None,
            },
        ),
        (
            "",
            Event::ToolFinished {
                tool_call_id: "c1".into(),
                success: true,
                summary: "Wrote notes.txt".into(),
            },
        ),
        ("    ", Event::Text("sub\nagent".into())),
        ("", Event::Notice("A subagent finished".into())),
        (
            "",
            Event::ToolFinished {
                tool_call_id: "c2".into(),
                success: false,
                summary: "Denied".into(),
            },
        ),
        (
            "",
            Event::TurnEnded {
                turn_id: "t1".into(),
                error: Some("the model failed".into()),
                cancelled: false,
            },
        ),
    ]
}

#[test]
fn plain_output_has_no_escapes_and_a_word_on_every_line_of_its_own() {
    let text = render(Style::plain(), &conversation());
    assert!(!text.contains('\x1b'), "{text:?}");
    assert_eq!(
        text,
        "thinking…\n# Plan\nI will write it.\ntool: Write file\nconfirm: Write notes.txt\n\
         done: Wrote notes.txt\n    sub\n    agent\nnotice: A subagent finished\n\
         failed: Denied\nerror: the model failed\n"
    );
}

#[test]
fn a_terminal_gets_bold_headings_dim_reasoning_and_coloured_marks() {
    let style = Style {
        color: true,
        show_reasoning: true,
    };
    let text = render(style, &conversation());
    assert!(text.starts_with("\x1b[2mLet me look.\x1b[0m\n"), "{text:?}");
    assert!(
        text.contains("\x1b[1m# Plan\x1b[0m\nI will write it.\n"),
        "{text:?}"
    );
    assert!(text.contains("\x1b[36m⚙\x1b[0m Write file\n"), "{text:?}");
    assert!(
        text.contains("\x1b[32m✓\x1b[0m Wrote notes.txt\n"),
        "{text:?}"
    );
    assert!(
        text.contains("\x1b[31m✗ the model failed\x1b[0m\n"),
        "{text:?}"
    );
}

#[test]
fn a_cancelled_turn_and_a_plain_end_close_the_text() {
    let events = [
        ("", Event::Text("partial".into())),
        (
            "",
            Event::TurnEnded {
                turn_id: "t1".into(),
                error: None,
                cancelled: true,
            },
        ),
        ("", Event::Text("done".into())),
        (
            "",
            Event::TurnEnded {
                turn_id: "t2".into(),
                error: None,
                cancelled: false,
            },
        ),
    ];
    assert_eq!(
        render(Style::plain(), &events),
        "partial\ncancelled\ndone\n"
    );
}

#[test]
fn shown_reasoning_without_colour_is_plain_text() {
    let style = Style {
        color: false,
        show_reasoning: true,
    };
    let text = render(style, &[("", Event::Reasoning("hmm\nyes".into()))]);
    assert_eq!(text, "hmm\nyes");
}

#[test]
fn no_color_or_a_pipe_turns_colour_off() {
    assert!(!Style::detect(false).color);
    let set = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    assert_eq!(Style::detect(true).color, !set);
}

#[test]
fn a_status_line_is_transient_and_only_on_a_terminal() {
    let style = Style {
        color: true,
        show_reasoning: true,
    };
    let mut renderer = Renderer::new(Vec::new(), style);
    renderer.status("waiting 1s").unwrap();
    renderer.status("waiting 2s").unwrap();
    renderer.event("", &Event::Text("hi".into())).unwrap();
    renderer.status("not while text is open").unwrap();
    let text = String::from_utf8(renderer.into_inner()).unwrap();
    assert_eq!(
        text,
        "\r\x1b[2K\x1b[2mwaiting 1s\x1b[0m\r\x1b[2K\x1b[2mwaiting 2s\x1b[0m\r\x1b[2Khi"
    );

    let mut plain = Renderer::new(Vec::new(), Style::plain());
    plain.status("waiting").unwrap();
    assert!(plain.into_inner().is_empty());

    // Under a line editor, whose prompt holds the last line, there are none at all.
    let mut edited = Renderer::new(Vec::new(), style).without_status_lines();
    edited.status("waiting").unwrap();
    edited.event("", &Event::Text("hi".into())).unwrap();
    assert_eq!(String::from_utf8(edited.into_inner()).unwrap(), "hi");
}

#[test]
fn log_lines_go_above_the_prompt_while_an_editor_runs() {
    use tracing_subscriber::fmt::MakeWriter;
    let (printer, mut printed) = tokio::sync::mpsc::unbounded_channel();
    print_logs_above_the_prompt(Some(printer));
    let mut line = LogOutput.make_writer();
    line.write_all(b" WARN agenthost: one event\n").unwrap();
    assert!(
        printed.try_recv().is_err(),
        "an event goes whole, when written"
    );
    drop(line);
    assert_eq!(printed.try_recv().unwrap(), b" WARN agenthost: one event\n");
    print_logs_above_the_prompt(None);
    let mut line = LogOutput.make_writer();
    line.write_all(b"to stderr\n").unwrap();
    drop(line);
    assert!(printed.try_recv().is_err(), "without an editor, stderr");
}
