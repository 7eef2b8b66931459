//! A host shutting down (what `agent-host serve` does on Ctrl-C) stops its agents: the process
//! group of every agent CLI it started is gone once `serve` returns, tools included. Checked
//! with a stand-in CLI (`agenthost_testkit::FakeCli`) behind the Claude provider, so it runs
//! everywhere; waits poll with a deadline.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::time::Duration;

use agenthost::host::{HostOptions, bind};
use agenthost_client::HostConnection;
use agenthost_dispatcher::LaunchKind;
use agenthost_provider_claude::ClaudeConfig;
use agenthost_testkit::{FakeCli, Step};
use rustix::process::{Pid, test_kill_process_group};
use tokio::time::Instant;

async fn poll(what: &str, mut check: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(20);
    while !check() {
        assert!(Instant::now() < until, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutting_the_server_down_stops_every_agent_process_group() {
    let cli = FakeCli::new().unwrap();
    // Initialize, take the user message, then run a "tool" for a minute.
    cli.plan(0, &[Step::Ack, Step::In, Step::Sleep(60)])
        .unwrap();
    let mut claude = ClaudeConfig::new(cli.binary());
    claude.cli.env = cli.env();
    claude.cli.kill_grace = Duration::from_millis(500);
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().canonicalize().unwrap();
    let server = bind(HostOptions {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        providers: vec!["claude".into()],
        script: None,
        token: None,
        roots: vec![work.clone()],
        launch_kind: LaunchKind::Embedded("agenthost-e2e".into()),
        data_dir: Some(work.join(".data")),
        idle_eviction: None,
        history_retry: None,
        history_backlog: None,
        claude: Some(claude),
        codex: None,
        copilot: None,
        acp_agents: Vec::new(),
        unattended: Default::default(),
        enable: Vec::new(),
        prices: None,
        default_budget_usd: None,
        notify: Default::default(),
    })
    .await
    .unwrap();
    let url = server.url();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.serve(async {
        let _ = stopped.await;
    }));

    let client = HostConnection::connect(&url, "shutdown-test")
        .await
        .unwrap();
    let (_, chat) = client
        .create_session("claude", "s1", Some(format!("file://{}", work.display())))
        .await
        .unwrap();
    client
        .start_turn(&chat, "t1", "work for a while")
        .await
        .unwrap();
    poll("the agent took the message", || cli.written().len() >= 2).await;
    let pid = Pid::from_raw(cli.pid().unwrap()).unwrap();
    assert!(test_kill_process_group(pid).is_ok(), "the agent runs");

    client.close().await;
    let _ = stop.send(());
    serving.await.unwrap();
    poll("the agent's process group is gone", || {
        test_kill_process_group(pid).is_err()
    })
    .await;
}
