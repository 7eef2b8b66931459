use super::*;
use serde_json::json;

fn invalid_at(text: &str) -> (String, String) {
    match Script::from_json(text) {
        Err(ScriptError::Invalid { location, message }) => (location, message),
        other => panic!("expected an invalid-script error, got {other:?}"),
    }
}

#[test]
fn every_step_kind_parses_with_its_defaults() {
    let script = Script::from_json(
        r#"{
          "turns": [{ "steps": [
            { "kind": "think", "text": "hmm" },
            { "kind": "say", "text": "hello", "chunk": 2, "delayMs": 5 },
            { "kind": "tool", "name": "write_file", "confirm": true,
              "effect": { "kind": "writeFile", "path": "a.txt", "content": "A" } },
            { "kind": "tool", "name": "read_file", "displayName": "Read file",
              "invocation": "Read a.txt", "input": { "path": "a.txt" }, "permission": "read",
              "effect": { "kind": "readFile", "path": "a.txt" }, "result": "A", "pastTense": "Read it" },
            { "kind": "tool", "name": "noop" },
            { "kind": "usage", "input": 10, "output": 2, "model": "m" },
            { "kind": "subagent", "agent": "explore", "description": "look around",
              "steps": [{ "kind": "pause", "ms": 3 }] },
            { "kind": "echo", "prefix": "> " },
            { "kind": "error", "message": "boom", "errorType": "rateLimited", "resumable": true }
          ]}],
          "default": { "steps": [{ "kind": "echo" }] }
        }"#,
    )
    .unwrap();
    let expected = Script {
        turns: vec![TurnScript {
            steps: vec![
                Step::Think(Think {
                    text: "hmm".into(),
                    ..Think::default()
                }),
                Step::Say(Say {
                    text: "hello".into(),
                    chunk: 2,
                    delay_ms: 5,
                }),
                Step::Tool(Tool {
                    name: "write_file".into(),
                    display_name: None,
                    invocation: None,
                    input: None,
                    confirm: true,
                    permission: None,
                    client: None,
                    effect: Effect::WriteFile(WriteFile {
                        path: "a.txt".into(),
                        content: "A".into(),
                    }),
                    result: None,
                    past_tense: None,
                }),
                Step::Tool(Tool {
                    name: "read_file".into(),
                    display_name: Some("Read file".into()),
                    invocation: Some("Read a.txt".into()),
                    input: Some(json!({ "path": "a.txt" })),
                    confirm: false,
                    permission: Some("read".into()),
                    client: None,
                    effect: Effect::ReadFile(ReadFile {
                        path: "a.txt".into(),
                    }),
                    result: Some("A".into()),
                    past_tense: Some("Read it".into()),
                }),
                Step::Tool(Tool {
                    name: "noop".into(),
                    display_name: None,
                    invocation: None,
                    input: None,
                    confirm: false,
                    permission: None,
                    client: None,
                    effect: Effect::None,
                    result: None,
                    past_tense: None,
                }),
                Step::Usage(Usage {
                    input: 10,
                    output: 2,
                    model: Some("m".into()),
                    cache_read: None,
                    cache_write: None,
                    limits: None,
                }),
                Step::Subagent(Subagent {
                    agent: "explore".into(),
                    display_name: None,
                    description: "look around".into(),
                    prompt: None,
                    result: None,
                    steps: vec![Step::Pause(Pause { ms: 3 })],
                    background: false,
                }),
                Step::Echo(Echo {
                    prefix: "> ".into(),
                    ..Echo::default()
                }),
                Step::Error(Fail {
                    message: "boom".into(),
                    error_type: Some("rateLimited".into()),
                    resumable: true,
                }),
            ],
        }],
        default: Some(TurnScript {
            steps: vec![Step::Echo(Echo::default())],
        }),
    };
    assert_eq!(script, expected);
    assert_eq!(Echo::default().chunk, DEFAULT_CHUNK);
}

#[test]
fn a_script_survives_a_json_round_trip() {
    let builtin = Script::builtin();
    assert_eq!(Script::from_json(&builtin.to_json_pretty()), Ok(builtin));
}

#[test]
fn an_unknown_field_names_the_step_and_the_field() {
    let (location, message) = invalid_at(
        r#"{ "turns": [{ "steps": [{ "kind": "say", "text": "hi" }, { "kind": "say", "txt": "x" }] }] }"#,
    );
    assert_eq!(location, "turns[0].steps[1] (say)");
    assert_eq!(
        message,
        "unknown field `txt`, expected one of `text`, `chunk`, `delayMs`"
    );
}

#[test]
fn the_error_message_reads_as_one_sentence() {
    let error =
        Script::from_json(r#"{ "turns": [{ "steps": [{ "kind": "pause" }] }] }"#).unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid script at turns[0].steps[0] (pause): missing field `ms`"
    );
}

#[test]
fn an_unknown_kind_is_named() {
    let (location, message) = invalid_at(r#"{ "turns": [{ "steps": [{ "kind": "sya" }] }] }"#);
    assert_eq!(location, "turns[0].steps[0] (sya)");
    assert!(
        message.starts_with("unknown variant `sya`, expected one of `say`"),
        "{message}"
    );
}

#[test]
fn a_step_without_kind_is_named_by_index() {
    assert_eq!(
        invalid_at(r#"{ "turns": [{ "steps": [{ "text": "hi" }] }] }"#),
        (
            "turns[0].steps[0]".to_owned(),
            "missing field `kind`".to_owned()
        )
    );
    assert_eq!(
        invalid_at(r#"{ "turns": [{ "steps": ["say"] }] }"#),
        (
            "turns[0].steps[0]".to_owned(),
            "expected an object with a `kind`".to_owned()
        )
    );
}

#[test]
fn an_error_inside_a_subagent_names_the_inner_step() {
    let (location, message) = invalid_at(
        r#"{ "turns": [
          { "steps": [] },
          { "steps": [{ "kind": "subagent", "agent": "a", "description": "d", "steps": [
              { "kind": "say", "text": "ok" },
              { "kind": "subagent", "agent": "b", "description": "d", "steps": [
                  { "kind": "tool", "name": "t", "effect": { "kind": "writeFile", "path": "x" } }
              ]}
          ]}]}
        ]}"#,
    );
    assert_eq!(location, "turns[1].steps[0].steps[1].steps[0] (tool)");
    assert_eq!(message, "missing field `content`");
}

#[test]
fn a_bad_subagent_field_names_the_subagent() {
    let (location, message) = invalid_at(
        r#"{ "turns": [{ "steps": [{ "kind": "subagent", "agent": "a", "steps": [] }] }] }"#,
    );
    assert_eq!(location, "turns[0].steps[0] (subagent)");
    assert_eq!(message, "missing field `description`");
    let (location, message) = invalid_at(
        r#"{ "turns": [{ "steps": [{ "kind": "subagent", "agent": "a", "description": "d" }] }] }"#,
    );
    assert_eq!(location, "turns[0].steps[0] (subagent)");
    assert_eq!(message, "missing field `steps`");
}

#[test]
fn rules_beyond_the_shape_are_checked() {
    assert_eq!(
        invalid_at(r#"{ "turns": [{ "steps": [{ "kind": "say", "text": "x", "chunk": 0 }] }] }"#),
        (
            "turns[0].steps[0] (say)".to_owned(),
            "`chunk` must be at least 1".to_owned()
        )
    );
    assert_eq!(
        invalid_at(r#"{ "default": { "steps": [{ "kind": "tool", "name": " " }] } }"#),
        (
            "default.steps[0] (tool)".to_owned(),
            "`name` must not be empty".to_owned()
        )
    );
    assert_eq!(
        invalid_at(
            r#"{ "turns": [{ "steps": [{ "kind": "tool", "name": "r", "effect": { "kind": "readFile", "path": "" } }] }] }"#
        ),
        (
            "turns[0].steps[0] (tool)".to_owned(),
            "the effect's `path` must not be empty".to_owned()
        )
    );
}

#[test]
fn the_script_and_turn_shapes_are_checked() {
    assert_eq!(
        invalid_at(r#"{ "turns": [], "turn": [] }"#),
        (
            "script".to_owned(),
            "unknown field `turn`, expected `turns` or `default`".to_owned()
        )
    );
    assert_eq!(invalid_at("[]").0, "script");
    assert_eq!(
        invalid_at(r#"{ "turns": {} }"#),
        ("turns".to_owned(), "expected an array of turns".to_owned())
    );
    assert_eq!(
        invalid_at(r#"{ "turns": [{ "steps": [], "extra": 1 }] }"#),
        (
            "turns[0]".to_owned(),
            "unknown field `extra`, expected `steps`".to_owned()
        )
    );
    assert_eq!(
        invalid_at(r#"{ "turns": [{}] }"#),
        ("turns[0]".to_owned(), "missing field `steps`".to_owned())
    );
}

#[test]
fn malformed_json_reports_line_and_column() {
    let error = Script::from_json("{\n  \"turns\": [,]\n}").unwrap_err();
    assert_eq!(
        error.to_string(),
        "the script is not valid JSON (line 2, column 13): expected value at line 2 column 13"
    );
}

#[test]
fn load_reads_a_file_and_names_a_missing_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.json");
    std::fs::write(&path, r#"{ "turns": [{ "steps": [{ "kind": "echo" }] }] }"#).unwrap();
    assert_eq!(Script::load(&path).unwrap().turns.len(), 1);
    let missing = dir.path().join("missing.json");
    let error = Script::load(&missing).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with(&format!("cannot read the script {}", missing.display())),
        "{error}"
    );
}

#[test]
fn turns_run_in_order_then_the_default_then_an_echo() {
    let first = TurnScript {
        steps: vec![Step::Pause(Pause { ms: 1 })],
    };
    let fallback = TurnScript {
        steps: vec![Step::Pause(Pause { ms: 2 })],
    };
    let mut script = Script {
        turns: vec![first.clone()],
        default: Some(fallback.clone()),
    };
    assert_eq!(*script.turn(0), first);
    assert_eq!(*script.turn(1), fallback);
    assert_eq!(*script.turn(u64::MAX), fallback);
    script.default = None;
    assert_eq!(*script.turn(1), TurnScript::echo_reply());
}

/// The README's example is the built-in script, verbatim.
#[test]
fn the_readme_example_is_the_builtin_script() {
    let readme = include_str!("../README.md");
    let heading = "## Example: the built-in script";
    let section = &readme[readme
        .find(heading)
        .expect("the README has the example heading")..];
    let start = section
        .find("```json\n")
        .expect("a json block follows the heading")
        + 8;
    let end = start
        + section[start..]
            .find("\n```")
            .expect("the json block is closed");
    let documented = Script::from_json(&section[start..end]).expect("the README example parses");
    assert!(
        documented == Script::builtin(),
        "the README example differs from Script::builtin(); paste this into the README:\n{}",
        Script::builtin().to_json_pretty()
    );
}

#[test]
fn background_subagents_joins_and_appends_parse_and_round_trip() {
    let text = r#"{ "turns": [{ "steps": [
        { "kind": "subagent", "agent": "w", "description": "d", "background": true, "steps": [
            { "kind": "tool", "name": "log", "confirm": true,
              "effect": { "kind": "appendFile", "path": "effects.log", "content": "w\n" } }
        ] },
        { "kind": "join", "until": "waiting" },
        { "kind": "join" }
    ] }] }"#;
    let script = Script::from_json(text).unwrap();
    let steps = &script.turns[0].steps;
    let Step::Subagent(subagent) = &steps[0] else {
        panic!("not a subagent: {:?}", steps[0]);
    };
    assert!(subagent.background);
    assert_eq!(
        subagent.steps[0],
        Step::Tool(Tool {
            name: "log".into(),
            display_name: None,
            invocation: None,
            input: None,
            confirm: true,
            permission: None,
            client: None,
            effect: Effect::AppendFile(AppendFile {
                path: "effects.log".into(),
                content: "w\n".into(),
            }),
            result: None,
            past_tense: None,
        })
    );
    assert_eq!(
        steps[1],
        Step::Join(Join {
            until: JoinUntil::Waiting
        })
    );
    assert_eq!(steps[2], Step::Join(Join::default()));
    assert_eq!(Script::from_json(&script.to_json_pretty()).unwrap(), script);
    assert_eq!(
        invalid_at(r#"{ "turns": [{ "steps": [{ "kind": "join", "until": "soon" }] }] }"#),
        (
            "turns[0].steps[0] (join)".to_owned(),
            "unknown variant `soon`, expected `done` or `waiting`".to_owned()
        )
    );
}

#[test]
fn a_client_tool_names_its_client_and_has_no_effect() {
    let script = Script::from_json(
        r#"{ "turns": [{ "steps": [{ "kind": "tool", "name": "probe", "client": "vscode-1" }] }] }"#,
    )
    .unwrap();
    let Step::Tool(tool) = &script.turns[0].steps[0] else {
        panic!("a tool step");
    };
    assert_eq!(tool.client.as_deref(), Some("vscode-1"));
    let (location, message) = invalid_at(
        r#"{ "turns": [{ "steps": [{ "kind": "tool", "name": "probe", "client": "c",
            "effect": { "kind": "readFile", "path": "a.txt" } }] }] }"#,
    );
    assert_eq!(location, "turns[0].steps[0] (tool)");
    assert_eq!(
        message,
        "a client tool (`client`) has no `effect`: the client runs it"
    );
    let (_, message) = invalid_at(
        r#"{ "turns": [{ "steps": [{ "kind": "tool", "name": "probe", "client": " " }] }] }"#,
    );
    assert_eq!(message, "`client` must not be empty");
}
