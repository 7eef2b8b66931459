//! `agent-host run`, `attach` and `chat` in a real terminal: the binary under a pseudo-terminal
//! (util-linux `script`), so it sees a TTY and draws colour, with keys typed into the terminal —
//! `y`, `n`, Ctrl-C, arrows — when the screen asks for them. `run`'s screen text is pinned with
//! insta (escape sequences shown as `␛[…`, the transient progress line removed: its seconds
//! vary); `chat`'s line editor moves the cursor, so its tests read the screen as a terminal
//! draws it (`vt100`).

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(60);

/// The terminal's size: tall enough that nothing a test prints scrolls away, so the screen
/// [`Terminal::screen`] reads holds all of it.
const ROWS: std::num::NonZeroU16 = std::num::NonZeroU16::new(500).unwrap();
const COLUMNS: std::num::NonZeroU16 = std::num::NonZeroU16::new(100).unwrap();

fn repository(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("readme.txt"), "hello\n").unwrap();
    for args in [
        &["init", "--quiet", "-b", "main"][..],
        &["add", "-A"],
        &["commit", "--quiet", "-m", "seed"],
    ] {
        let status = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@invalid"])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .unwrap();
        assert!(status.success());
    }
}

/// `agent-host run` running in a terminal, its screen collected as it is drawn.
struct Terminal {
    child: Child,
    keys: ChildStdin,
    screen: Arc<Mutex<Vec<u8>>>,
}

impl Terminal {
    fn start(tmp: &Path, script: &Value) -> Self {
        let work = tmp.join("work");
        repository(&work);
        let script_path = tmp.join("script.json");
        std::fs::write(&script_path, script.to_string()).unwrap();
        Self::command(&[
            "run".into(),
            "--provider".into(),
            "scripted".into(),
            "--script".into(),
            script_path.display().to_string(),
            "--cwd".into(),
            work.display().to_string(),
            "--data-dir".into(),
            tmp.join("data").display().to_string(),
            "edit the readme".into(),
        ])
    }

    /// `agent-host chat` with the scripted agent running `script`, in a fresh repository under
    /// `tmp`; also returns the repository.
    fn chat(tmp: &Path, script: &Value) -> (Self, std::path::PathBuf) {
        let work = tmp.join("work");
        repository(&work);
        std::fs::write(tmp.join("script.json"), script.to_string()).unwrap();
        (Self::chat_command(&chat_args(tmp), &[]), work)
    }

    /// `agent-host ARGS` in a terminal of its own.
    fn command(args: &[String]) -> Self {
        Self::command_with(args, &[])
    }

    /// [`command`](Self::command) with `env` set for it.
    fn command_with(args: &[String], env: &[(&str, &str)]) -> Self {
        let command = std::iter::once(env!("CARGO_BIN_EXE_agent-host").to_owned())
            .chain(args.iter().map(|a| format!("'{a}'")))
            .collect::<Vec<_>>()
            .join(" ");
        Self::shell(&format!("exec {command}"), env)
    }

    /// `agent-host chat ARGS` (with `env`) in a terminal of its own; once it exits, the
    /// terminal's settings are printed (`stty -a`): the line editor must have given it back.
    fn chat_command(args: &[String], env: &[(&str, &str)]) -> Self {
        let command = std::iter::once(env!("CARGO_BIN_EXE_agent-host").to_owned())
            .chain(std::iter::once("chat".to_owned()))
            .chain(args.iter().map(|a| format!("'{a}'")))
            .collect::<Vec<_>>()
            .join(" ");
        Self::shell(&format!("{command}; code=$?; stty -a; exit $code"), env)
    }

    /// A shell running `line` in a terminal of [`ROWS`] × [`COLUMNS`].
    fn shell(line: &str, env: &[(&str, &str)]) -> Self {
        let inner = format!("stty rows {ROWS} cols {COLUMNS}; {line}");
        let mut child = Command::new("script")
            .args(["--quiet", "--flush", "--return", "--command"])
            .arg(&inner)
            .arg("/dev/null")
            .env_remove("NO_COLOR")
            .env("TERM", "xterm-256color")
            .env("RUST_LOG", "warn")
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let keys = child.stdin.take().unwrap();
        let mut output = child.stdout.take().unwrap();
        let screen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&screen);
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n) = output.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buffer[..n]);
            }
        });
        Self {
            child,
            keys,
            screen,
        }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.screen.lock().unwrap()).into_owned()
    }

    /// What the terminal shows: the output as a terminal draws it (cursor moves, erased
    /// lines), one string per row, trailing blanks trimmed.
    fn screen(&self) -> String {
        let mut parser = vt100::Parser::new(ROWS, COLUMNS, 0);
        parser.process(&self.screen.lock().unwrap());
        let rows: Vec<String> = parser
            .screen()
            .rows(0, COLUMNS.get())
            .map(|row| row.trim_end().to_owned())
            .collect();
        let used = rows
            .iter()
            .rposition(|row| !row.is_empty())
            .map_or(0, |i| i + 1);
        rows[..used].join("\n")
    }

    /// Waits (polling, within [`DEADLINE`]) until the drawn screen shows `needle` (in one row,
    /// or across rows joined by `\n`).
    fn wait_for_screen(&self, needle: &str) {
        let deadline = Instant::now() + DEADLINE;
        while !self.screen().contains(needle) {
            assert!(
                Instant::now() < deadline,
                "the screen never showed {needle:?}:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits (polling, within [`DEADLINE`]) until the screen shows `needle`.
    fn wait_for(&self, needle: &str) {
        let deadline = Instant::now() + DEADLINE;
        while !self.text().contains(needle) {
            assert!(
                Instant::now() < deadline,
                "the screen never showed {needle:?}:\n{}",
                self.text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn press(&mut self, keys: &[u8]) {
        self.keys.write_all(keys).unwrap();
        self.keys.flush().unwrap();
    }

    /// Waits for the exit; returns the exit code and the drawn screen ([`Self::screen`]).
    fn finish_drawn(self) -> (Option<i32>, String) {
        let mut terminal = self;
        let code = terminal.exit_code();
        (code, terminal.screen())
    }

    /// Waits for the exit; returns the exit code and the normalised screen.
    fn finish(mut self) -> (Option<i32>, String) {
        let code = self.exit_code();
        (code, normalise(&self.text()))
    }

    /// Waits (within [`DEADLINE`]) for the exit and the last output; the exit code.
    fn exit_code(&mut self) -> Option<i32> {
        let deadline = Instant::now() + DEADLINE;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                self.child.kill().unwrap();
                panic!("agent-host run did not finish:\n{}", self.text());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        std::thread::sleep(Duration::from_millis(50));
        status.code()
    }
}

/// A test that fails leaves no terminal running: `script` is killed, and with the terminal
/// gone the program in it is hung up.
impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `chat`'s arguments: the scripted agent (`tmp/script.json`) in `tmp/work`, data in
/// `tmp/data`.
fn chat_args(tmp: &Path) -> Vec<String> {
    let path = |name: &str| tmp.join(name).display().to_string();
    [
        "--provider".to_owned(),
        "scripted".to_owned(),
        "--script".to_owned(),
        path("script.json"),
        "--cwd".to_owned(),
        path("work"),
        "--data-dir".to_owned(),
        path("data"),
    ]
    .to_vec()
}

/// The screen as text: CRLF → LF, progress lines removed, escapes made visible.
fn normalise(raw: &str) -> String {
    let mut text = raw.replace("\r\n", "\n");
    // Progress lines: `\r␛[2K␛[2m⠋ waiting for scripted… 1s␛[0m`, and the erase before output.
    while let Some(start) = text.find("\r\x1b[2K\x1b[2m") {
        let end = text[start..]
            .find("\x1b[0m")
            .map_or(text.len(), |i| start + i + "\x1b[0m".len());
        text.replace_range(start..end, "");
    }
    text = text.replace("\r\x1b[2K", "");
    // Session ids vary: `scripted:/run-<seconds>-<nanoseconds>`.
    let mut from = 0;
    while let Some(at) = text[from..].find("scripted:/run-").map(|i| from + i) {
        let id = at + "scripted:/run-".len();
        let end = text[id..]
            .find(|c: char| !(c.is_ascii_hexdigit() || c == '-'))
            .map_or(text.len(), |i| id + i);
        text.replace_range(id..end, "…");
        from = id;
    }
    text.replace('\x1b', "␛")
}

fn confirm_script() -> Value {
    json!({ "turns": [{ "steps": [
        { "kind": "think", "text": "The readme needs a second line.", "chunk": 64 },
        { "kind": "say", "text": "# Plan\nI will edit the readme.", "chunk": 64 },
        { "kind": "tool", "name": "write_file", "displayName": "Write file", "confirm": true,
          "effect": { "kind": "writeFile", "path": "readme.txt", "content": "hello\nagain\n" } },
        { "kind": "say", "text": "Done.", "chunk": 64 }
    ]}]})
}

#[test]
fn approving_with_y_runs_the_tool_and_lists_the_change() {
    let tmp = tempfile::tempdir().unwrap();
    let mut terminal = Terminal::start(tmp.path(), &confirm_script());
    terminal.wait_for("always write_file] ");
    terminal.press(b"y\r");
    let (code, screen) = terminal.finish();
    assert_eq!(code, Some(0), "{screen}");
    insta::assert_snapshot!(screen);
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("work/readme.txt")).unwrap(),
        "hello\nagain\n"
    );
}

#[test]
fn denying_with_n_leaves_the_file_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let mut terminal = Terminal::start(tmp.path(), &confirm_script());
    terminal.wait_for("always write_file] ");
    terminal.press(b"n\r");
    let (code, screen) = terminal.finish();
    assert_eq!(code, Some(0), "{screen}");
    insta::assert_snapshot!(screen);
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("work/readme.txt")).unwrap(),
        "hello\n"
    );
}

#[test]
fn ctrl_c_during_a_long_pause_cancels_the_turn() {
    let tmp = tempfile::tempdir().unwrap();
    let script = json!({ "turns": [{ "steps": [
        { "kind": "say", "text": "Thinking hard.", "chunk": 64 },
        { "kind": "pause", "ms": 60000 },
        { "kind": "say", "text": "Never said.", "chunk": 64 }
    ]}]});
    let mut terminal = Terminal::start(tmp.path(), &script);
    terminal.wait_for("Thinking hard.");
    terminal.press(b"\x03");
    let (code, screen) = terminal.finish();
    assert_eq!(code, Some(130), "{screen}");
    insta::assert_snapshot!(screen);
}

/// Two terminals on one `serve`: `run --connect` asks about a confirmation; `attach` in the
/// second terminal answers `y` first. The first view sees the tool finish (its question goes
/// unanswered), and the tool ran once.
#[test]
fn attach_in_a_second_terminal_answers_what_run_is_asking() {
    let place = support::Place::new();
    repository(&place.work);
    let script = place.script(&json!({ "turns": [{ "steps": [
        { "kind": "tool", "name": "append_file", "displayName": "Append", "confirm": true,
          "effect": { "kind": "appendFile", "path": "log.txt", "content": "ran\n" } },
        { "kind": "say", "text": "Done.", "chunk": 64 }
    ]}]}));
    let server = support::Server::start(&place, Some(&script));
    let run = Terminal::command(&[
        "run".into(),
        "--provider".into(),
        "scripted".into(),
        "--connect".into(),
        server.url.clone(),
        "--cwd".into(),
        place.work.display().to_string(),
        "append a line".into(),
    ]);
    run.wait_for("always append_file] ");

    let session = support::runtime().block_on(async {
        let client = agenthost_client::HostConnection::connect(&server.url, "watcher")
            .await
            .unwrap();
        let session = client.list_sessions().await.unwrap().items[0]
            .resource
            .clone();
        client.close().await;
        session
    });
    let mut attach = Terminal::command(&[
        "attach".into(),
        session,
        "--connect".into(),
        server.url.clone(),
        "--until-done".into(),
    ]);
    attach.wait_for("always append_file] ");
    attach.press(b"y\r");
    let (code, attached) = attach.finish();
    assert_eq!(code, Some(0), "{attached}");
    assert!(attached.contains("approved"), "{attached}");

    let (code, ran) = run.finish();
    assert_eq!(code, Some(0), "{ran}");
    assert!(
        !ran.contains("approved"),
        "the first view never answered: {ran}"
    );
    assert_eq!(ran.matches("Appended").count(), 1, "{ran}");
    assert_eq!(
        std::fs::read_to_string(place.work.join("log.txt")).unwrap(),
        "ran\n",
        "the tool ran exactly once"
    );
}

/// Log lines are coloured at a terminal, and plain there too once `NO_COLOR` is set (its level
/// names are then written without escape codes).
#[test]
fn logs_are_coloured_at_a_terminal_unless_no_color_is_set() {
    let args = ["demo".to_owned()];
    let coloured = Terminal::command_with(&args, &[("RUST_LOG", "info")]);
    let (code, screen) = coloured.finish();
    assert_eq!(code, Some(0), "{screen}");
    assert!(screen.contains("␛[32m INFO"), "{screen}");

    let plain = Terminal::command_with(&args, &[("RUST_LOG", "info"), ("NO_COLOR", "1")]);
    let (code, screen) = plain.finish();
    assert_eq!(code, Some(0), "{screen}");
    assert!(screen.contains(" INFO "), "{screen}");
    assert!(!screen.contains("␛[32m"), "{screen}");
}

/// The settings `stty -a` printed after `chat` exited ([`Terminal::chat_command`]) are the
/// terminal's own again: lines are read whole and echoed, Ctrl-C is a signal — and the prompt
/// is gone from the screen.
fn assert_terminal_given_back(screen: &str) {
    let settings = &screen[screen
        .rfind("speed ")
        .expect("stty -a printed its settings")..];
    let flags: Vec<&str> = settings.split_whitespace().collect();
    for flag in ["icanon", "echo", "isig"] {
        assert!(
            flags.contains(&flag) && !flags.contains(&format!("-{flag}").as_str()),
            "{flag} is not on again:\n{settings}"
        );
    }
    let before = &screen[..screen.rfind("speed ").unwrap_or_default()];
    assert!(
        !before.trim_end().ends_with('›'),
        "the prompt is left:\n{screen}"
    );
}

/// `needles` are all on `screen`, each first seen after the one before.
fn assert_in_order(screen: &str, needles: &[&str]) {
    let at: Vec<usize> = needles
        .iter()
        .map(|needle| {
            screen
                .find(needle)
                .unwrap_or_else(|| panic!("{needle:?} not in:\n{screen}"))
        })
        .collect();
    assert!(
        at.windows(2).all(|w| w[0] < w[1]),
        "not in order {needles:?}:\n{screen}"
    );
}

/// The last row drawn: the line editor's prompt, with what is typed at it.
fn prompt_row(terminal: &Terminal) -> String {
    terminal
        .screen()
        .lines()
        .last()
        .unwrap_or_default()
        .to_owned()
}

/// Waits until the prompt row shows `expected` (the editor redraws it as keys arrive).
fn wait_for_prompt(terminal: &Terminal, expected: &str) {
    let deadline = Instant::now() + DEADLINE;
    while prompt_row(terminal) != expected {
        assert!(
            Instant::now() < deadline,
            "the prompt never showed {expected:?}:\n{}",
            terminal.screen()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `agent-host chat` in a terminal: the conversation streams above the line editor's prompt, a
/// typo is mended with backspace before Enter, a confirmation is answered at the prompt, Ctrl-C
/// cancels the running turn, Up recalls an earlier line, and `/quit` leaves.
#[test]
fn chat_in_a_terminal_edits_lines_answers_inline_and_cancels_with_ctrl_c() {
    let tmp = tempfile::tempdir().unwrap();
    let script = json!({ "turns": [
        { "steps": [
            { "kind": "say", "text": "reply one" },
            { "kind": "tool", "name": "write_file", "displayName": "Write file", "confirm": true,
              "effect": { "kind": "writeFile", "path": "readme.txt", "content": "hello\nagain\n" } },
            { "kind": "say", "text": "after the tool" }
        ] },
        { "steps": [ { "kind": "say", "text": "a long one\n" }, { "kind": "pause", "ms": 60000 } ] },
        { "steps": [ { "kind": "echo", "prefix": "You said: " } ] },
        { "steps": [ { "kind": "echo", "prefix": "You said: " } ] }
    ]});
    let (mut terminal, work) = Terminal::chat(tmp.path(), &script);
    terminal.wait_for_screen("/help lists the commands");
    wait_for_prompt(&terminal, "›");
    terminal.press(b"first\r");
    terminal.wait_for_screen("reply one");
    terminal.wait_for_screen("approve");
    // What streams is drawn above the prompt, which stays on the last row.
    wait_for_prompt(&terminal, "›");
    // A command typed at the question runs, and the question is asked again.
    terminal.press(b"/model\r");
    terminal.wait_for_screen("model: the agent's default\n    {\"content\"");
    terminal.wait_for_screen("\"readme.txt\"}\napprove Write `readme.txt`?");
    wait_for_prompt(&terminal, "›");
    terminal.press(b"y\r");
    terminal.wait_for_screen("after the tool");
    assert_eq!(
        std::fs::read_to_string(work.join("readme.txt")).unwrap(),
        "hello\nagain\n"
    );
    terminal.press(b"second\r");
    terminal.wait_for_screen("a long one");
    terminal.press(b"\x03");
    terminal.wait_for_screen("cancelled");
    // A typo mended before Enter: the agent gets the mended line.
    terminal.press(b"thirf\x7fd");
    wait_for_prompt(&terminal, "› third");
    terminal.press(b"\r");
    terminal.wait_for_screen("You said: third");
    // Up goes back through the lines typed: twice is `second`, sent again.
    terminal.press(b"\x1b[A\x1b[A");
    wait_for_prompt(&terminal, "› second");
    terminal.press(b"\r");
    terminal.wait_for_screen("You said: second");
    terminal.press(b"/quit\r");
    let (code, screen) = terminal.finish_drawn();
    assert_eq!(code, Some(0), "{screen}");
    assert!(screen.contains("session: scripted:/run-"), "{screen}");
    // Each line typed stays on the screen after its prompt, in order, before its answer.
    assert_in_order(
        &screen,
        &[
            "› first",
            "reply one",
            "› y",
            "after the tool",
            "› second",
            "cancelled",
            "› third",
            "You said: third",
            "You said: second",
        ],
    );
    assert_terminal_given_back(&screen);
    let history = std::fs::read_to_string(tmp.path().join("data/chat-history")).unwrap();
    assert_eq!(history, "first\n/model\ny\nsecond\nthird\nsecond\n/quit\n");
}

/// A line typed in a terminal while a turn runs joins the host's queue and runs after it;
/// typed while the answer is in the middle of a line, it stays on a row of its own.
#[test]
fn chat_queues_a_line_typed_during_a_turn() {
    let tmp = tempfile::tempdir().unwrap();
    let script = json!({ "turns": [
        { "steps": [ { "kind": "say", "text": "one" }, { "kind": "pause", "ms": 1500 },
                     { "kind": "say", "text": " and done\n" } ] },
        { "steps": [ { "kind": "say", "text": "two done\n" } ] }
    ]});
    let (mut terminal, _work) = Terminal::chat(tmp.path(), &script);
    terminal.wait_for_screen("/help lists the commands");
    terminal.press(b"first\r");
    terminal.wait_for_screen("\none\n");
    terminal.press(b"second while it runs\r");
    terminal.wait_for_screen("queued: second while it runs");
    terminal.wait_for_screen("two done");
    terminal.press(b"/quit\r");
    let (code, screen) = terminal.finish_drawn();
    assert_eq!(code, Some(0), "{screen}");
    let rows: Vec<&str> = screen.lines().collect();
    assert!(rows.contains(&"› second while it runs"), "{screen}");
    assert_in_order(
        &screen,
        &[
            "› second while it runs",
            "queued: second while it runs",
            "and done",
            "two done",
        ],
    );
}

/// Output far longer than the editor's own queue (a diff of 20,000 lines, one line per write)
/// is all printed, and the prompt comes back.
#[test]
fn chat_prints_a_long_diff_and_gives_the_prompt_back() {
    let tmp = tempfile::tempdir().unwrap();
    let content: String = (0..20000).map(|i| format!("line {i}\n")).collect();
    let script = json!({ "turns": [ { "steps": [
        { "kind": "tool", "name": "write_file", "displayName": "Write file",
          "effect": { "kind": "writeFile", "path": "long.txt", "content": content } },
        { "kind": "say", "text": "written\n" }
    ] } ] });
    let (mut terminal, _work) = Terminal::chat(tmp.path(), &script);
    terminal.wait_for_screen("/help lists the commands");
    terminal.press(b"write it\r");
    terminal.wait_for_screen("written");
    wait_for_prompt(&terminal, "›");
    terminal.press(b"/diff\r");
    terminal.wait_for_screen("+line 19999\n");
    wait_for_prompt(&terminal, "›");
    terminal.press(b"/quit\r");
    let (code, screen) = terminal.finish_drawn();
    assert_eq!(code, Some(0), "{screen}");
    assert_terminal_given_back(&screen);
}

#[test]
fn chat_continue_after_a_restart_with_the_history_of_the_last_chat() {
    let tmp = tempfile::tempdir().unwrap();
    // A fresh session's agent says "first reply"; one that resumed its conversation echoes.
    let script = json!({
        "turns": [ { "steps": [ { "kind": "say", "text": "first reply" } ] } ],
        "default": { "steps": [ { "kind": "echo", "prefix": "You said: " } ] }
    });
    let (mut terminal, _work) = Terminal::chat(tmp.path(), &script);
    terminal.wait_for_screen("/help lists the commands");
    terminal.press(b"remember this line\r");
    terminal.wait_for_screen("first reply");
    wait_for_prompt(&terminal, "›");
    terminal.press(b"\x04");
    let (code, screen) = terminal.finish_drawn();
    assert_eq!(code, Some(0), "Ctrl-D leaves: {screen}");
    assert_terminal_given_back(&screen);
    let session = screen
        .lines()
        .find_map(|line| line.strip_prefix("session: "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .to_owned();

    let mut args = chat_args(tmp.path());
    args.push("--continue".to_owned());
    let mut again = Terminal::chat_command(&args, &[]);
    again.wait_for_screen(&format!("continuing remember this line ({session})"));
    again.press(b"\x1b[A");
    wait_for_prompt(&again, "› remember this line");
    again.press(b"\r");
    again.wait_for_screen("You said: remember this line");
    wait_for_prompt(&again, "›");
    again.press(b"\x03");
    again.wait_for_screen("(Ctrl-C again, or /quit, to leave)");
    again.press(b"\x03");
    let (code, screen) = again.finish_drawn();
    assert_eq!(code, Some(0), "Ctrl-C twice leaves: {screen}");
    assert_terminal_given_back(&screen);
    assert!(screen.contains(&format!("session: {session}")), "{screen}");
}

/// Two terminals on one session over `--connect`: what one types, the other sees as it happens,
/// with the answer; then the other types and the first sees that.
#[test]
fn two_terminals_on_one_session_see_each_other() {
    let place = support::Place::with_repository();
    let script = place.script(&json!({ "turns": [
        { "steps": [ { "kind": "say", "text": "reply one" } ] },
        { "steps": [ { "kind": "say", "text": "reply two" } ] }
    ]}));
    let server = support::Server::start(&place, Some(&script));
    let work = place.work.display().to_string();
    let connect = |more: &[&str]| -> Vec<String> {
        ["--connect", &server.url, "--cwd", &work]
            .iter()
            .chain(more)
            .map(|a| (*a).to_owned())
            .collect()
    };
    // The chats keep their history in a data directory of their own.
    let client = place.base.join("client").display().to_string();
    let env = [("AGENT_HOST_DATA_DIR", client.as_str())];
    let mut first = Terminal::chat_command(&connect(&["--provider", "scripted"]), &env);
    first.wait_for_screen("/help lists the commands");
    let screen = first.screen();
    let opening = screen
        .lines()
        .find(|line| line.starts_with("chat with scripted in"))
        .unwrap();
    let session = opening
        .rsplit_once('(')
        .unwrap()
        .1
        .trim_end_matches(')')
        .to_owned();
    let mut second = Terminal::chat_command(&connect(&["--session", &session]), &env);
    second.wait_for_screen("/help lists the commands");
    first.press(b"hello from the first\r");
    first.wait_for_screen("reply one");
    second.wait_for_screen("> hello from the first\nreply one");
    second.press(b"now from the second\r");
    second.wait_for_screen("reply two");
    first.wait_for_screen("> now from the second\nreply two");
    // Neither terminal's prompt was disturbed by the other's turn.
    wait_for_prompt(&first, "›");
    wait_for_prompt(&second, "›");
    first.press(b"/quit\r");
    second.press(b"/quit\r");
    for terminal in [first, second] {
        let (code, screen) = terminal.finish_drawn();
        assert_eq!(code, Some(0), "{screen}");
        assert_terminal_given_back(&screen);
    }
    let history = std::fs::read_to_string(place.base.join("client/chat-history")).unwrap();
    assert!(history.contains("hello from the first\n"), "{history}");
    server.stop_cleanly();
}

/// Log lines of the host in `chat`'s process are printed above the prompt while the editor
/// holds the terminal: each starts its own row (a raw terminal would not return the carriage
/// for a newline written straight to stderr) and the prompt stays on the last row.
#[test]
fn chat_prints_log_lines_above_its_prompt() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    repository(&work);
    let script = json!({ "turns": [ { "steps": [ { "kind": "say", "text": "reply one" } ] } ] });
    std::fs::write(tmp.path().join("script.json"), script.to_string()).unwrap();
    let mut terminal =
        Terminal::chat_command(&chat_args(tmp.path()), &[("RUST_LOG", "agenthost=info")]);
    terminal.wait_for_screen("/help lists the commands");
    terminal.press(b"hello\r");
    terminal.wait_for_screen("reply one");
    terminal.wait_for_screen("turn completed");
    wait_for_prompt(&terminal, "›");
    let screen = terminal.screen();
    let logs: Vec<&str> = screen
        .lines()
        .filter(|row| row.contains(" INFO "))
        .collect();
    assert!(logs.len() >= 2, "{screen}");
    for row in &logs {
        assert!(
            row.starts_with("20"),
            "a log row starts with its time: {row:?}\n{screen}"
        );
    }
    terminal.press(b"/quit\r");
    let (code, screen) = terminal.finish_drawn();
    assert_eq!(code, Some(0), "{screen}");
    assert_terminal_given_back(&screen);
}

/// A line streamed in parts, longer than the terminal is wide — dimmed reasoning, then the
/// answer — is broken before the terminal would wrap it, so each part goes on where the last
/// one ended and every row holds what it should.
#[test]
fn chat_breaks_long_streamed_lines_at_the_terminals_width() {
    let tmp = tempfile::tempdir().unwrap();
    let long: String = (0..40).map(|i| format!("word{i:02} ")).collect();
    let thought: String = (0..30).map(|i| format!("thought{i:02} ")).collect();
    let script = json!({ "turns": [ { "steps": [
        { "kind": "think", "text": thought.trim_end(), "chunk": 7 },
        { "kind": "say", "text": format!("{}\nreply one", long.trim_end()), "chunk": 7 }
    ] } ] });
    let (mut terminal, _work) = Terminal::chat(tmp.path(), &script);
    terminal.wait_for_screen("/help lists the commands");
    terminal.press(b"hello\r");
    terminal.wait_for_screen("reply one");
    wait_for_prompt(&terminal, "›");
    let screen = terminal.screen();
    for (text, from, to) in [
        (&thought, "thought00", "\nword00"),
        (&long, "word00", "\nreply one"),
    ] {
        let start = screen.find(from).unwrap();
        let end = start + screen[start..].find(to).unwrap();
        let rows: Vec<&str> = screen[start..end].lines().collect();
        assert!(rows.len() >= 3, "{screen}");
        assert!(rows.iter().all(|row| row.chars().count() < 100), "{screen}");
        assert_eq!(rows.concat().trim_end(), text.trim_end(), "{screen}");
    }
    terminal.press(b"/quit\r");
    let (code, screen) = terminal.finish_drawn();
    assert_eq!(code, Some(0), "{screen}");
}
