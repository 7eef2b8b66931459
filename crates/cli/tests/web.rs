//! `serve --web`: the host's page, through the real binary.
//!
//! Always: the flag prints the page's URL on stderr; the page needs the token (403 without it),
//! carries its Content-Security-Policy, and its script and style need none; without the flag a
//! plain GET gets 426.
//!
//! With `AGENTHOST_BROWSER=1` (`.ci/run` installs Debian's Chromium and sets it): a headless
//! Chromium driven over the DevTools protocol uses the page as a person would, mostly from the
//! keyboard — a scripted session appears, streams, runs a subagent, asks twice (approved: the
//! tool runs exactly once, by its append-only log; denied: it never runs), a second message is
//! sent, one is queued during a turn and runs after it, a turn is cancelled, a turn's changed
//! files and diff are shown — and at each step the page shows the same turn, tool-call and
//! confirmation ids as a fresh AHP snapshot. Agent text with `<script>` is shown as text. No
//! console error, no request beyond the host. Screenshots at desktop and phone widths are kept
//! in `target/tmp/web/`.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/browser.rs"]
mod browser;
mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use browser::{Browser, chromium_available};
use serde_json::{Value, json};
use support::{Peer, Place, Spawned, runtime, serve_command};

const WAIT: Duration = Duration::from_secs(20);

/// `serve --web` (and more `args`); its WebSocket URL and its page URL.
fn serve_web(place: &Place, script: Option<&Path>, args: &[&str]) -> (Spawned, String, String) {
    let mut command = serve_command(place, &place.data, script);
    command.args(args);
    let process = Spawned::spawn(command);
    let url = process.line();
    let deadline = std::time::Instant::now() + WAIT;
    let page = loop {
        // Whole lines only: the last one may still be on its way.
        let stderr = process.stderr();
        let written = &stderr[..stderr.rfind('\n').map_or(0, |end| end + 1)];
        if let Some(line) = written
            .lines()
            .find_map(|line| line.strip_prefix("web page: ").map(str::to_owned))
        {
            break line;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no page URL on stderr:\n{}",
            process.stderr()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    (process, url, page)
}

/// A plain HTTP/1.1 GET of `target` from the host at `url`; status line, head and body.
fn http_get(url: &str, target: &str) -> (String, String, String) {
    let authority = url
        .split("://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap();
    let mut stream = TcpStream::connect(authority).unwrap();
    stream.set_read_timeout(Some(WAIT)).unwrap();
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    let status = head.lines().next().unwrap().to_owned();
    (status, head.to_owned(), body.to_owned())
}

fn token_of(url: &str) -> String {
    url.split("tkn=").nth(1).unwrap().to_owned()
}

#[test]
fn serve_web_prints_the_page_url_and_the_page_needs_the_token() {
    let place = Place::new();
    let (mut server, url, page) = serve_web(&place, None, &["--web"]);
    let token = token_of(&url);
    let port = url.split(':').nth(2).unwrap().split('/').next().unwrap();
    assert_eq!(page, format!("http://127.0.0.1:{port}/?tkn={token}"));

    let (status, head, body) = http_get(&url, &format!("/?tkn={token}"));
    assert_eq!(status, "HTTP/1.1 200 OK", "{head}");
    assert!(
        head.contains("Content-Security-Policy: default-src 'none'; script-src 'self';"),
        "{head}"
    );
    assert!(
        body.contains("<script type=\"module\" src=\"/app.js\"></script>"),
        "{body}"
    );
    for target in ["/", "/?tkn=wrong", "/index.html"] {
        let (status, _, body) = http_get(&url, target);
        assert_eq!(status, "HTTP/1.1 403 Forbidden", "{target}");
        assert!(!body.contains("<html"), "{target}: {body}");
    }
    let (status, head, body) = http_get(&url, "/app.js");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(head.contains("Content-Type: text/javascript"), "{head}");
    assert!(body.contains("new WebSocket"), "the page's own script");
    assert!(!body.contains(&token));
    server.terminate();
    let (exit, _, stderr) = server.wait();
    assert!(exit.success(), "{stderr}");
    assert!(!stderr.contains("ERROR"), "{stderr}");
    // The two refusals without a token are the only warnings, and the token is never logged.
    assert_eq!(stderr.matches(" WARN ").count(), 3, "{stderr}");
    assert_eq!(
        stderr.matches(&token).count(),
        1,
        "only the printed page URL: {stderr}"
    );

    // Without --web, a plain GET is told to upgrade, and no page URL is printed.
    let server = support::Server::start(&place, None);
    let (status, _, _) = http_get(&server.url, &format!("/?tkn={}", token_of(&server.url)));
    assert_eq!(status, "HTTP/1.1 426 Upgrade Required");
    assert!(!server.process.stderr().contains("web page:"));
    server.kill();
}

/// The scripted agent's turns, in order (the page's test).
fn script() -> Value {
    let streamed = "Hello from the scripted agent, **streamed** in small pieces so that the page \
        shows it growing: one, two, three, four, five, six, seven, eight, nine, ten. END.";
    json!({
        "turns": [
            { "steps": [
                { "kind": "say", "text": streamed, "chunk": 8, "delayMs": 60 },
                { "kind": "subagent", "agent": "helper", "description": "helps", "prompt": "help",
                  "steps": [ { "kind": "say", "text": "sub work" } ] },
                { "kind": "tool", "name": "shell", "displayName": "Run command", "confirm": true,
                  "input": "echo ran >> approved.log",
                  "effect": { "kind": "appendFile", "path": "approved.log", "content": "ran\n" } },
                { "kind": "say", "text": "approved part done" }
            ] },
            { "steps": [
                { "kind": "tool", "name": "shell", "displayName": "Run command", "confirm": true,
                  "input": "echo ran >> denied.log",
                  "effect": { "kind": "appendFile", "path": "denied.log", "content": "ran\n" } },
                { "kind": "say", "text": "after the denial" }
            ] },
            { "steps": [
                { "kind": "say",
                  "text": "<script>window.pwned = 1</script> <img src=x onerror=\"window.pwned = 2\"> plain words" },
                { "kind": "pause", "ms": 2500 }
            ] },
            { "steps": [ { "kind": "echo" } ] },
            { "steps": [ { "kind": "say", "text": "a long one" }, { "kind": "pause", "ms": 60000 } ] },
            { "steps": [
                { "kind": "tool", "name": "shell", "displayName": "Run command", "confirm": true,
                  "input": "echo ran >> elsewhere.log",
                  "effect": { "kind": "appendFile", "path": "elsewhere.log", "content": "ran\n" } },
                { "kind": "usage", "input": 1200, "output": 80, "model": "claude-sonnet-4-5" }
            ] },
            { "steps": [
                { "kind": "ask", "message": "Which **colour**?",
                  "questions": [ { "kind": "text", "id": "colour", "message": "Colour" } ] }
            ] }
        ],
        "default": { "steps": [ { "kind": "echo" } ] }
    })
}

/// What the page shows: turn ids of the default chat, tool-call ids of the default chat, and
/// pending confirmation ids.
const SHOWN: &str = r#"(() => ({
    turns: [...document.querySelectorAll('#transcript > article.turn')].map(a => a.dataset.turnId),
    tools: [...document.querySelectorAll('#transcript > article.turn > .answer > .tool')].map(t => t.dataset.toolCallId),
    confirmations: [...document.querySelectorAll('#confirmations .confirmation')].map(c => c.dataset.entry).sort(),
}))()"#;

/// The same, from fresh snapshots.
async fn snapshot_ids(peer: &Peer, session: &str, chat: &str) -> Value {
    let session_state = peer
        .request("subscribe", json!({ "channel": session }))
        .await
        .unwrap()["snapshot"]["state"]
        .clone();
    let chat_state = peer
        .request("subscribe", json!({ "channel": chat }))
        .await
        .unwrap()["snapshot"]["state"]
        .clone();
    let mut turns: Vec<Value> = chat_state["turns"].as_array().cloned().unwrap_or_default();
    if !chat_state["activeTurn"].is_null() {
        turns.push(chat_state["activeTurn"].clone());
    }
    let tools: Vec<Value> = turns
        .iter()
        .flat_map(|turn| {
            turn["responseParts"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|part| part["kind"] == "toolCall")
        .map(|part| part["toolCall"]["toolCallId"].clone())
        .collect();
    let mut confirmations: Vec<String> = session_state["inputNeeded"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter(|entry| {
            ["toolConfirmation", "chatInput", "toolAuthentication"]
                .contains(&entry["kind"].as_str().unwrap_or_default())
        })
        .map(|entry| entry["id"].as_str().unwrap().to_owned())
        .collect();
    confirmations.sort();
    json!({
        "turns": turns.iter().map(|turn| turn["id"].clone()).collect::<Vec<_>>(),
        "tools": tools,
        "confirmations": confirmations,
    })
}

async fn assert_same_as_snapshot(browser: &mut Browser, peer: &Peer, session: &str, chat: &str) {
    let expected = snapshot_ids(peer, session, chat).await;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let shown = browser.eval(SHOWN).await.unwrap();
        if shown == expected {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the page shows {shown}, a fresh snapshot says {expected}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn artifacts() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("web")
}

async fn wait(browser: &mut Browser, expression: &str) -> Value {
    match browser.wait_for(expression, WAIT).await {
        Ok(value) => value,
        Err(error) => {
            let _ = browser.screenshot(&artifacts().join("failure.png")).await;
            let text = browser
                .eval("document.body.innerText")
                .await
                .unwrap_or_default();
            panic!(
                "{error}\nthe page says:\n{}\nconsole errors: {:?}\nchromium's log:\n{}",
                text.as_str().unwrap_or_default(),
                browser.console_errors(),
                browser.log()
            );
        }
    }
}

/// Focuses the first element matching `selector` and presses Enter on it (a keyboard user's
/// click).
async fn activate(browser: &mut Browser, selector: &str) {
    let focused = browser
        .eval(&format!(
            "(() => {{ const e = document.querySelector({selector:?}); if (!e) return false; e.focus(); return document.activeElement === e; }})()"
        ))
        .await
        .unwrap();
    assert_eq!(focused, json!(true), "{selector} could not take the focus");
    browser.press("Enter", false).await.unwrap();
}

/// Presses Tab until the focus is on an element matching `selector`: the keyboard's way there.
async fn tab_to(browser: &mut Browser, selector: &str) {
    for _ in 0..40 {
        browser.press("Tab", false).await.unwrap();
        let there = browser
            .eval(&format!(
                "document.activeElement?.matches({selector:?}) === true"
            ))
            .await
            .unwrap();
        if there == json!(true) {
            return;
        }
    }
    panic!("40 presses of Tab never reached {selector}");
}

/// Types a message into the composer and presses Enter.
async fn send(browser: &mut Browser, text: &str) {
    browser
        .eval("document.getElementById('message').focus()")
        .await
        .unwrap();
    browser.type_text(text).await.unwrap();
    browser.press("Enter", false).await.unwrap();
}

fn count_turns(state: &str) -> String {
    format!("document.querySelectorAll('#transcript > article.turn[data-state={state}]').length")
}

/// Whether the browser tests run: `AGENTHOST_BROWSER=1`, and then Chromium must be there.
fn browser_wanted() -> bool {
    if std::env::var_os("AGENTHOST_BROWSER").is_none() {
        eprintln!("skipped: set AGENTHOST_BROWSER=1 to drive a headless Chromium (.ci/run does)");
        return false;
    }
    assert!(
        chromium_available(),
        "AGENTHOST_BROWSER=1 but no Chromium: install Debian's `chromium` or set AGENTHOST_CHROMIUM"
    );
    true
}

#[test]
fn a_long_session_is_drawn_a_window_of_turns_at_a_time() {
    if !browser_wanted() {
        return;
    }
    let place = Place::new();
    let script = place.script(&json!({ "default": { "steps": [ { "kind": "echo" } ] } }));
    let (mut server, url, page) = serve_web(&place, Some(&script), &["--web"]);
    runtime().block_on(async {
        let mut peer = Peer::connect(&url, "long-session-peer").await;
        let (_session, chat) = peer.create_session("long").await;
        let mut view = peer.open_chat(&chat).await;
        for n in 1..=35 {
            peer.run_turn(&mut view, &format!("t{n}"), &format!("message {n}"))
                .await;
        }
        let mut browser = Browser::launch(1280, 860, false).await.unwrap();
        browser.navigate(&page).await.unwrap();
        wait(
            &mut browser,
            "document.querySelectorAll('#sessions li').length === 1",
        )
        .await;
        activate(&mut browser, "#sessions a").await;
        wait(
            &mut browser,
            "document.querySelectorAll('#transcript > article.turn').length === 30",
        )
        .await;
        let first = browser
            .eval("document.querySelector('#transcript > article.turn').dataset.turnId")
            .await
            .unwrap();
        assert_eq!(first, json!("t6"), "the latest 30 turns come first");
        let label = browser
            .eval("document.querySelector('#transcript button.earlier').textContent")
            .await
            .unwrap();
        assert_eq!(label, json!("Show 5 earlier turns (5 not shown)"));
        activate(&mut browser, "#transcript button.earlier").await;
        wait(
            &mut browser,
            "document.querySelectorAll('#transcript > article.turn').length === 35",
        )
        .await;
        wait(
            &mut browser,
            "document.querySelector('#transcript button.earlier') === null",
        )
        .await;
        assert_eq!(browser.console_errors(), &[] as &[String], "console errors");
        peer.close().await;
    });
    server.terminate();
    let (exit, _, stderr) = server.wait();
    assert!(exit.success(), "{stderr}");
    assert!(
        !stderr.contains("ERROR") && !stderr.contains(" WARN "),
        "{stderr}"
    );
}

#[test]
fn the_page_in_a_real_browser() {
    if !browser_wanted() {
        return;
    }
    let place = Place::with_repository();
    let script = place.script(&script());
    let (server, url, page) = serve_web(&place, Some(&script), &["--web"]);
    let mut server = server;
    let host = page.split("/?").next().unwrap().to_owned();
    let ws_host = host.replacen("http://", "ws://", 1);
    let rt = runtime();
    rt.block_on(async {
        let mut browser = Browser::launch(1280, 860, false).await.unwrap();
        browser.navigate(&page).await.unwrap();
        // The token left the address bar.
        let address = browser.eval("location.href").await.unwrap();
        assert_eq!(address, json!(format!("{host}/")));
        wait(&mut browser, "document.getElementById('connection').textContent.startsWith('connected')").await;

        // Another client creates a session and starts its first turn: it appears, live.
        let peer = Peer::connect(&url, "web-test-peer").await;
        let (session, chat) = peer.create_session("web-1").await;
        let (session, chat) = (session.to_string(), chat.to_string());
        wait(&mut browser, "document.querySelectorAll('#sessions li').length === 1").await;
        peer.conn
            .start_turn(&agenthost_protocol::ChatUri::parse(&chat).unwrap(), "turn-1", "first")
            .await
            .unwrap();
        activate(&mut browser, "#sessions a").await;
        // Streamed: seen part-way, then whole, as markdown.
        wait(&mut browser, "(() => { const t = document.getElementById('transcript').textContent; return t.includes('Hello from the scripted agent') && !t.includes('END.'); })()").await;
        wait(&mut browser, "document.getElementById('transcript').textContent.includes('END.')").await;
        let strong = browser.eval("document.querySelector('#transcript .markdown strong')?.textContent").await.unwrap();
        assert_eq!(strong, json!("streamed"));
        // The subagent's chat, nested under its tool call; then the confirmation.
        wait(&mut browser, "document.querySelector('#transcript .tool .subagent')?.textContent.includes('sub work')").await;
        wait(&mut browser, "document.querySelector('#confirmations .confirmation pre')?.textContent === 'echo ran >> approved.log'").await;
        assert_same_as_snapshot(&mut browser, &peer, &session, &chat).await;
        browser.screenshot(&artifacts().join("desktop-confirmation.png")).await.unwrap();
        activate(&mut browser, "#confirmations button.approve").await;
        wait(&mut browser, &format!("{} === 1", count_turns("complete"))).await;
        wait(&mut browser, "document.getElementById('confirmations').children.length === 0").await;
        // The keyboard's focus went on to the message box, not back to the top of the page.
        let focused = browser.eval("document.activeElement.id").await.unwrap();
        assert_eq!(focused, json!("message"));
        assert_eq!(std::fs::read_to_string(place.work.join("approved.log")).unwrap(), "ran\n");
        assert_same_as_snapshot(&mut browser, &peer, &session, &chat).await;

        // A second message from the page; its confirmation is denied: the tool never runs.
        send(&mut browser, "second").await;
        wait(&mut browser, "document.querySelector('#confirmations .confirmation pre')?.textContent === 'echo ran >> denied.log'").await;
        assert_same_as_snapshot(&mut browser, &peer, &session, &chat).await;
        activate(&mut browser, "#confirmations button.deny").await;
        wait(&mut browser, &format!("{} === 2", count_turns("complete"))).await;
        wait(&mut browser, "document.getElementById('transcript').textContent.includes('after the denial')").await;
        assert!(!place.work.join("denied.log").exists(), "a denied tool ran");
        let denied = browser.eval("document.querySelectorAll('#transcript .tool[data-status=cancelled]').length").await.unwrap();
        assert_eq!(denied, json!(1));

        // Agent text with markup is text; a message sent during a turn is queued and runs after.
        send(&mut browser, "third").await;
        wait(&mut browser, "document.getElementById('transcript').textContent.includes('<script>window.pwned = 1</script>')").await;
        wait(&mut browser, "document.getElementById('send').textContent === 'Queue'").await;
        send(&mut browser, "fourth, queued").await;
        wait(&mut browser, "document.getElementById('queued').textContent.includes('fourth, queued')").await;
        wait(&mut browser, &format!("{} === 4", count_turns("complete"))).await;
        wait(&mut browser, "document.getElementById('queued').textContent === ''").await;
        let markup = browser.eval("[typeof window.pwned, document.querySelectorAll('#transcript script, #transcript img').length]").await.unwrap();
        assert_eq!(markup, json!(["undefined", 0]));
        let fourth = browser.eval("document.querySelectorAll('#transcript > article.turn')[3].querySelector('.user').textContent").await.unwrap();
        assert_eq!(fourth, json!("fourth, queued"));

        // A long turn, cancelled from the page.
        send(&mut browser, "fifth").await;
        wait(&mut browser, "document.getElementById('transcript').textContent.includes('a long one')").await;
        wait(&mut browser, "!document.getElementById('cancel').disabled").await;
        activate(&mut browser, "#cancel").await;
        wait(&mut browser, &format!("{} === 1", count_turns("cancelled"))).await;
        assert_same_as_snapshot(&mut browser, &peer, &session, &chat).await;

        // A confirmation answered by another client leaves the page without asking.
        send(&mut browser, "sixth").await;
        wait(&mut browser, "document.querySelector('#confirmations .confirmation pre')?.textContent === 'echo ran >> elsewhere.log'").await;
        let asked = browser.eval("(() => { const c = document.querySelector('#confirmations .confirmation'); return [c.dataset.turnId, c.dataset.toolCallId]; })()").await.unwrap();
        let chat_uri = agenthost_protocol::ChatUri::parse(&chat).unwrap();
        peer.conn
            .confirm_tool(&chat_uri, asked[0].as_str().unwrap(), asked[1].as_str().unwrap(), true)
            .await
            .unwrap();
        wait(&mut browser, "document.getElementById('confirmations').children.length === 0").await;
        wait(&mut browser, &format!("{} === 5", count_turns("complete"))).await;
        assert_eq!(std::fs::read_to_string(place.work.join("elsewhere.log")).unwrap(), "ran\n");
        // Its usage, priced by the host's built-in table.
        let usage = browser.eval("document.querySelector('#transcript > article.turn:last-child .usage')?.textContent").await.unwrap();
        assert!(usage.as_str().unwrap().starts_with("1,200 tokens in · 80 out · $0.0"), "{usage}");

        // The agent asks a question; the page answers it.
        send(&mut browser, "seventh").await;
        wait(&mut browser, "document.querySelector('#confirmations .confirmation input')").await;
        browser.eval("document.querySelector('#confirmations .confirmation input').focus()").await.unwrap();
        browser.type_text("blue").await.unwrap();
        activate(&mut browser, "#confirmations button:not(.deny)").await;
        wait(&mut browser, "document.getElementById('transcript').textContent.includes('Answered: blue')").await;
        wait(&mut browser, &format!("{} === 6", count_turns("complete"))).await;

        // The first turn's changed files, from its changeset, with the diff.
        activate(&mut browser, "#transcript > article.turn:first-child details.changes > summary").await;
        wait(&mut browser, "document.querySelector('.changes ul')?.textContent.startsWith('approved.log +1')").await;
        wait(&mut browser, "document.querySelector('.changes pre.diff')?.textContent.includes('+ran')").await;
        browser.screenshot(&artifacts().join("desktop.png")).await.unwrap();
        // The session list agrees with `listSessions`: the last turn's end reached it.
        let listed = peer.request("listSessions", json!({})).await.unwrap()["items"][0].clone();
        let shown = wait(&mut browser, &format!(
            "(() => {{ const s = window.agenthost.sessions.get({:?}); return s.status === {} && s.modifiedAt === {:?} && s; }})()",
            session, listed["status"], listed["modifiedAt"].as_str().unwrap()
        )).await;
        assert_eq!(listed["status"], 1, "{listed}");
        assert_eq!(shown["chats"], listed["chats"]);
        let badge = browser.eval("document.querySelector('#sessions .badge').textContent").await.unwrap();
        assert_eq!(badge, json!("idle"));
        assert_same_as_snapshot(&mut browser, &peer, &session, &chat).await;
        peer.close().await;

        // The host restarts on the same address: the page reconnects by itself and shows the
        // restored session, as a fresh snapshot does.
        server.terminate();
        let (exit, _, stderr) = server.wait();
        assert!(exit.success(), "{stderr}");
        assert!(!stderr.contains("ERROR") && !stderr.contains(" WARN "), "{stderr}");
        wait(&mut browser, "document.getElementById('connection').textContent.startsWith('disconnected')").await;
        let address = host.trim_start_matches("http://").to_owned();
        let mut command = support::agent_host();
        command
            .args(["serve", "--web", "--listen", &address, "--token", &token_of(&url), "--root"])
            .arg(&place.work)
            .arg("--data-dir")
            .arg(&place.data)
            .arg("--script")
            .arg(&script);
        server = Spawned::spawn(command);
        assert_eq!(server.line(), url);
        wait(&mut browser, "document.getElementById('connection').textContent.startsWith('connected')").await;
        let peer = Peer::connect(&url, "web-test-peer-2").await;
        assert_same_as_snapshot(&mut browser, &peer, &session, &chat).await;

        // A phone's width: the list, then the session, without sideways scrolling.
        browser.set_viewport(390, 844, true).await.unwrap();
        browser.navigate(&page).await.unwrap();
        wait(&mut browser, "document.querySelectorAll('#sessions li').length === 1").await;
        browser.screenshot(&artifacts().join("phone-list.png")).await.unwrap();
        tab_to(&mut browser, "#sessions a").await;
        browser.press("Enter", false).await.unwrap();
        wait(&mut browser, &format!("{} === 1", count_turns("cancelled"))).await;
        wait(&mut browser, "getComputedStyle(document.getElementById('list')).display === 'none'").await;
        let width = browser.eval("document.documentElement.scrollWidth").await.unwrap();
        assert!(width.as_u64().unwrap() <= 390, "the page is {width} px wide on a 390 px phone");
        browser.screenshot(&artifacts().join("phone-session.png")).await.unwrap();
        assert_same_as_snapshot(&mut browser, &peer, &session, &chat).await;

        assert_eq!(browser.console_errors(), &[] as &[String], "console errors");
        for requested in browser.requested_urls() {
            assert!(
                requested.starts_with(&format!("{host}/")) || requested.starts_with(&format!("{ws_host}/")),
                "the page requested {requested}"
            );
        }

        // A wrong token or none: no page.
        for target in [format!("{host}/?tkn=wrong"), format!("{host}/")] {
            browser.navigate(&target).await.unwrap();
            let body = browser.eval("document.body.innerText").await.unwrap();
            assert!(body.as_str().unwrap().starts_with("forbidden"), "{target}: {body}");
            let app = browser.eval("document.getElementById('sessions') === null").await.unwrap();
            assert_eq!(app, json!(true));
        }
        peer.close().await;
        eprintln!("screenshots: {}", artifacts().display());
    });
    server.terminate();
    let (exit, _, stderr) = server.wait();
    assert!(exit.success(), "{stderr}");
    assert!(!stderr.contains("ERROR"), "{stderr}");
    // The two refused page loads are the only warnings.
    assert_eq!(stderr.matches(" WARN ").count(), 2, "{stderr}");
}
