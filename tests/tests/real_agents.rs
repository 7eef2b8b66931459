//! The real agent CLIs end to end — Claude Code 2.1.328 (`claude`), Codex 0.169.0 (`codex
//! app-server`) and GitHub Copilot CLI 1.0.102 (`copilot --headless --stdio`, bring-your-own-key): the testkit's mock model on 127.0.0.1, our host (`agenthost::host::bind`) over
//! the real WebSocket, and `agenthost-client` as the AHP client. Every scenario runs for each
//! agent: an approved tool call runs, a denied one does not and the turn completes, an API error
//! is a chat error, cancelling stops the running tool and the conversation goes on, a budget
//! stops a turn after the model call that spent it, and after a host restart the agent resumes
//! its own conversation.
//!
//! A CLI comes from `AGENTHOST_CLAUDE_BIN` / `AGENTHOST_CODEX_BIN` / `AGENTHOST_COPILOT_BIN`, else from the npm cache
//! directory (`$AGENTHOST_CLI_CACHE`, default `~/.cache/agenthost/clis`, where `.ci/run`
//! installs them). Without it a test prints why and passes, unless `AGENTHOST_REQUIRE_CLIS=1`
//! (set by `.ci/run`), which turns a missing CLI into a failure. Every wait polls with a
//! deadline.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// The shared part serves the ACP binary too: what only that one uses is unused here.
#![allow(dead_code)]

include!("real/common.rs");

// ─── Each scenario for each agent ────────────────────────────────────────────────────────────

macro_rules! for_each_agent {
    ($($scenario:ident),* $(,)?) => {
        mod claude {
            use super::*;
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $scenario() {
                super::$scenario(Agent::Claude).await;
            })*
        }
        mod codex {
            use super::*;
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $scenario() {
                super::$scenario(Agent::Codex).await;
            })*
        }
        mod copilot {
            use super::*;
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $scenario() {
                super::$scenario(Agent::Copilot).await;
            })*
        }
    };
}

for_each_agent!(
    an_approved_tool_call_creates_the_file,
    in_plan_mode_the_agent_changes_nothing,
    a_denied_tool_call_does_not_run_and_the_turn_still_completes,
    an_api_error_surfaces_as_a_chat_error,
    cancelling_mid_turn_stops_the_running_tool_and_the_conversation_goes_on,
    a_budget_stops_the_turn_after_the_call_that_spent_it,
);

#[test]
fn claude_after_a_host_restart_the_next_turn_resumes_the_agent_conversation() {
    after_a_host_restart_the_next_turn_resumes_the_agent_conversation(Agent::Claude);
}

#[test]
fn codex_after_a_host_restart_the_next_turn_resumes_the_agent_conversation() {
    after_a_host_restart_the_next_turn_resumes_the_agent_conversation(Agent::Codex);
}

#[test]
fn copilot_after_a_host_restart_the_next_turn_resumes_the_agent_conversation() {
    after_a_host_restart_the_next_turn_resumes_the_agent_conversation(Agent::Copilot);
}
