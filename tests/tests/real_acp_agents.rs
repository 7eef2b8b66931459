//! Real agents through the ACP provider, end to end: GitHub Copilot CLI 1.0.102 as `copilot
//! --acp` (bring-your-own-key variables, offline) as `acp.copilot`, Claude Code 2.1.328 through
//! `@agentclientprotocol/claude-agent-acp` 0.101.0 as `acp.claude` and Codex through
//! `@agentclientprotocol/codex-acp` 2.6.0 (its own Codex 0.166) as `acp.codex` — the adapters
//! on Node 22 from the npm registry's `node` package; the testkit's mock model on 127.0.0.1, our host over the real WebSocket and
//! `agenthost-client` as the AHP client. The scenarios are the other real agents' (the shared
//! part is `real/common.rs`): an approved tool call runs, a denied one does not and the turn
//! completes, an API error is a chat error, cancelling stops the running tool and the
//! conversation goes on, and after a host restart the agent loads its own session
//! (`session/load`) so the model sees the first turn.
//!
//! Its own binary, run by `.ci/run` as a step of its own with two test threads (each test
//! starts Node agents: the 2-core machine cannot run many at once); `cargo test --workspace`
//! skips it unless `AGENTHOST_ACP_AGENTS=1`. The CLI comes from `AGENTHOST_COPILOT_BIN`, else
//! from the npm cache, as for `real_agents`; processes are matched by a per-test marker.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// The shared part serves the other real-agent binary too: what only that one uses is unused.
#![allow(dead_code)]

include!("real/common.rs");

/// Whether this binary's tests run (`.ci/run` sets `AGENTHOST_ACP_AGENTS=1`).
fn enabled() -> bool {
    let on = std::env::var_os("AGENTHOST_ACP_AGENTS").is_some_and(|v| v == "1");
    if !on {
        eprintln!("skipped: set AGENTHOST_ACP_AGENTS=1 to run the ACP agents end to end");
    }
    on
}

macro_rules! for_each_acp_agent {
    ($($scenario:ident),* $(,)?) => {
        for_each_acp_agent!(@agent acp_copilot, AcpCopilot, $($scenario),*);
        for_each_acp_agent!(@agent acp_claude, AcpClaude, $($scenario),*);
        for_each_acp_agent!(@agent acp_codex, AcpCodex, $($scenario),*);
    };
    (@agent $module:ident, $agent:ident, $($scenario:ident),*) => {
        mod $module {
            use super::*;
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $scenario() {
                if enabled() {
                    super::$scenario(Agent::$agent).await;
                }
            })*
        }
    };
}

for_each_acp_agent!(
    an_approved_tool_call_creates_the_file,
    a_denied_tool_call_does_not_run_and_the_turn_still_completes,
    an_api_error_surfaces_as_a_chat_error,
    cancelling_mid_turn_stops_the_running_tool_and_the_conversation_goes_on,
);

#[test]
fn acp_copilot_after_a_host_restart_the_next_turn_loads_the_agent_session() {
    if enabled() {
        after_a_host_restart_the_next_turn_resumes_the_agent_conversation(Agent::AcpCopilot);
    }
}

#[test]
fn acp_claude_after_a_host_restart_the_next_turn_loads_the_agent_session() {
    if enabled() {
        after_a_host_restart_the_next_turn_resumes_the_agent_conversation(Agent::AcpClaude);
    }
}

#[test]
fn acp_codex_after_a_host_restart_the_next_turn_loads_the_agent_session() {
    if enabled() {
        after_a_host_restart_the_next_turn_resumes_the_agent_conversation(Agent::AcpCodex);
    }
}
