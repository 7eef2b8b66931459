//! The notifiers against real receivers: a program that appends what it reads to a file, and a
//! loopback HTTP server. Waits poll with a deadline.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use agenthost_services::{Notification, NotificationKind, Notifier};
use agenthost_services_notify::{CommandNotifier, NotifyConfig, Retries, WebhookNotifier};
use agenthost_testkit::WebhookReceiver;

const DEADLINE: Duration = Duration::from_secs(20);

fn notification(summary: &str) -> Notification {
    Notification {
        event: NotificationKind::TurnEnded,
        session: "scripted:/s1".into(),
        chat: Some("ahp-chat://default/x".into()),
        title: "Fix the build".into(),
        summary: summary.into(),
        at: "2026-12-06T10:00:00.000Z".into(),
    }
}

/// Polls `check` until it holds or the deadline passes.
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while !check() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what} within {DEADLINE:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn lines(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[tokio::test]
async fn a_command_gets_each_notification_on_stdin_in_order_and_survives_a_failing_one() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.jsonl");
    // Appends its stdin to the log; fails (after reading) when told to.
    let script = format!(
        "line=$(cat); echo \"$line\" >> '{}'; case \"$line\" in *fail*) echo broken >&2; exit 3;; esac",
        log.display()
    );
    let notifier = CommandNotifier::start(
        "/bin/sh".into(),
        vec!["-c".into(), script],
        Duration::from_secs(10),
    );
    notifier.notify(notification("first"));
    notifier.notify(notification("please fail"));
    notifier.notify(notification("third"));
    eventually("three lines", || lines(&log).len() == 3).await;
    let summaries: Vec<_> = lines(&log)
        .iter()
        .map(|l| l["summary"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(summaries, ["first", "please fail", "third"]);
    let first = &lines(&log)[0];
    assert_eq!(first["event"], "turnEnded");
    assert_eq!(first["title"], "Fix the build");
}

#[tokio::test]
async fn a_command_that_hangs_is_killed_after_its_timeout_and_the_next_one_runs() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.jsonl");
    let script = format!(
        "line=$(cat); case \"$line\" in *hang*) sleep 600;; esac; echo \"$line\" >> '{}'",
        log.display()
    );
    let notifier = CommandNotifier::start(
        "/bin/sh".into(),
        vec!["-c".into(), script],
        Duration::from_millis(300),
    );
    notifier.notify(notification("hang"));
    notifier.notify(notification("after"));
    eventually("the next notification", || lines(&log).len() == 1).await;
    assert_eq!(lines(&log)[0]["summary"], "after");
}

fn quick() -> Retries {
    Retries {
        attempts: 3,
        timeout: Duration::from_secs(5),
        pause: Duration::from_millis(10),
    }
}

#[tokio::test]
async fn a_webhook_gets_the_json_and_a_failed_attempt_is_retried() {
    let receiver = WebhookReceiver::start(vec![500]).await.unwrap();
    let notifier = WebhookNotifier::start(receiver.url(), quick()).unwrap();
    notifier.notify(notification("hello"));
    eventually("two attempts", || receiver.bodies().len() == 2).await;
    let body = &receiver.bodies()[1];
    assert_eq!(body["summary"], "hello");
    assert_eq!(body["session"], "scripted:/s1");
    // Retries are bounded: a receiver that always fails gets `attempts` tries, no more.
    let receiver = WebhookReceiver::start(vec![503; 10]).await.unwrap();
    let notifier = WebhookNotifier::start(receiver.url(), quick()).unwrap();
    notifier.notify(notification("never taken"));
    eventually("three attempts", || receiver.bodies().len() == 3).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(receiver.bodies().len(), 3);
}

#[tokio::test]
async fn notify_never_waits_even_when_the_receiver_hangs() {
    // A listener that accepts and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let notifier = WebhookNotifier::start(&url, quick()).unwrap();
    let started = std::time::Instant::now();
    for n in 0..200 {
        notifier.notify(notification(&format!("n{n}")));
    }
    // 200 notifications into a queue of 64 ahead of a receiver that never answers: every call
    // returned (the extra ones were dropped with a warning).
    assert!(started.elapsed() < Duration::from_secs(5));
    drop(listener);
}

#[tokio::test]
async fn a_webhook_url_must_be_http() {
    for url in ["ftp://example.invalid/x", "not a url", "http://"] {
        let error = WebhookNotifier::start(url, quick()).unwrap_err();
        assert!(
            error.to_string().starts_with("--notify-webhook "),
            "{error}"
        );
    }
    let config = NotifyConfig {
        command: None,
        args: Vec::new(),
        webhook: Some("mailto:me".into()),
    };
    assert!(config.notifiers().is_err());
    assert!(NotifyConfig::default().notifiers().unwrap().is_empty());
}
