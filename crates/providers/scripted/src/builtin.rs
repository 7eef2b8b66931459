//! The built-in demo script (`agent-host demo`). The README shows the same script as JSON and a
//! test keeps the two in sync.

use crate::script::{
    Effect, ReadFile, Say, Script, Step, Subagent, Think, Tool, TurnScript, Usage, WriteFile,
};

/// Milliseconds between two streamed chunks: slow enough to watch, fast enough for a demo.
const STREAM_DELAY_MS: u64 = 15;

fn say(text: &str) -> Step {
    Step::Say(Say {
        text: text.into(),
        delay_ms: STREAM_DELAY_MS,
        ..Say::default()
    })
}

fn think(text: &str) -> Step {
    Step::Think(Think {
        text: text.into(),
        delay_ms: STREAM_DELAY_MS,
        ..Think::default()
    })
}

fn usage(input: i64, output: i64) -> Step {
    Step::Usage(Usage {
        input,
        output,
        model: Some(crate::MODEL_ID.into()),
        cache_read: None,
        cache_write: None,
        limits: None,
    })
}

pub(crate) fn script() -> Script {
    let write_hello = Step::Tool(Tool {
        name: "write_file".into(),
        display_name: Some("Write file".into()),
        invocation: Some("Create `hello.txt` with a one-line greeting".into()),
        input: None,
        confirm: true,
        permission: None,
        client: None,
        effect: Effect::WriteFile(WriteFile {
            path: "hello.txt".into(),
            content: "Hello from the scripted agent!\n".into(),
        }),
        result: None,
        past_tense: Some("Created `hello.txt`".into()),
    });
    let read_hello = Step::Tool(Tool {
        name: "read_file".into(),
        display_name: Some("Read file".into()),
        invocation: None,
        input: None,
        confirm: false,
        permission: None,
        client: None,
        effect: Effect::ReadFile(ReadFile {
            path: "hello.txt".into(),
        }),
        result: None,
        past_tense: None,
    });
    let reviewer = Step::Subagent(Subagent {
        agent: "reviewer".into(),
        display_name: Some("Reviewer".into()),
        description: "Check what hello.txt says".into(),
        prompt: Some("Read hello.txt in the working directory and report its contents.".into()),
        result: Some("hello.txt holds one line: a greeting from the scripted agent.".into()),
        steps: vec![
            think("One file to check. Reading it is enough; no need to change anything."),
            read_hello,
            say("`hello.txt` holds one line: *Hello from the scripted agent!*"),
            usage(310, 42),
        ],
        background: false,
    });
    Script {
        turns: vec![
            TurnScript {
                steps: vec![
                    think(
                        "The user wants to see what I can do. I will greet them, write a small \
                         file, and explain each step as I go.",
                    ),
                    say(
                        "Hello! I am the **scripted agent**. Everything I say comes from a \
                         script, so this demo plays out the same way every time.\n\nFirst I will \
                         create `hello.txt` in the working directory. Writing files needs your \
                         permission, so you will be asked to approve it.",
                    ),
                    write_hello,
                    say(
                        "\n\nIf you approved, `hello.txt` now holds a one-line greeting; if you \
                         declined, nothing was written. Send another message and a reviewer \
                         subagent will check the file.",
                    ),
                    usage(1200, 180),
                ],
            },
            TurnScript {
                steps: vec![
                    say("Let me hand this to a reviewer subagent."),
                    reviewer,
                    say(
                        "The reviewer read `hello.txt` and confirmed the greeting is there.\n\n\
                         That is the whole demo: reasoning, streamed text, a file write you \
                         approved, a subagent with its own tool call, and token usage. From \
                         now on I just repeat what you say.",
                    ),
                    usage(1650, 95),
                ],
            },
        ],
        default: None,
    }
}
