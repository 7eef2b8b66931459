//! The outgoing-turn guidance, end to end: a host started as `serve --enable
//! markdownPlanRichLinks --enable artifactTools` adds both instructions to every turn, in the
//! built-in order (rich links at 100, artifact tools at 200), and the agent receives them with
//! the user's text unchanged. The scripted agent's `echo` step repeats the instructions it got.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use agenthost_protocol::StateAction;
use agenthost_protocol::ahp_types::state::{ResponsePart, SnapshotState};
use serde_json::{Value, json};
use support::{ScriptedHost, connect, create_session, dispatch, until};

fn script() -> Value {
    json!({ "turns": [], "default": { "steps": [
        { "kind": "echo", "prefix": "Got: ", "chunk": 64, "instructions": true }
    ]}})
}

async fn answer(enable: &[&str]) -> String {
    let host = ScriptedHost::start_with(script(), Default::default(), enable).await;
    let (client, mut events) = connect(&host.url, "client-a").await;
    let (_session, chat) = create_session(&client, "guidance").await;
    let (_, _chat_subscription) = client.subscribe(chat.to_string()).await.unwrap();
    dispatch(
        &client,
        chat.as_str(),
        json!({
            "type": "chat/turnStarted", "turnId": "t1", "startedAt": "2026-03-01T10:00:00.000Z",
            "message": { "text": "plan the refactor", "origin": { "kind": "user" } }
        }),
    )
    .await;
    until(&mut events, |e| {
        e.channel == chat.as_str() && matches!(e.action, StateAction::ChatTurnComplete(_))
    })
    .await;
    let (result, _) = client.subscribe(chat.to_string()).await.unwrap();
    let Some(SnapshotState::Chat(state)) = result.snapshot.map(|s| s.state) else {
        panic!("not a chat snapshot");
    };
    assert_eq!(state.turns[0].message.text, "plan the refactor");
    let text = state.turns[0]
        .response_parts
        .iter()
        .filter_map(|p| match p {
            ResponsePart::Markdown(m) => Some(m.content.clone()),
            _ => None,
        })
        .collect();
    client.shutdown().await;
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enabled_guidance_reaches_the_agent_in_order_and_is_absent_otherwise() {
    let chat_link = "ahp-chat://default/";
    let on = answer(&["markdownPlanRichLinks", "artifactTools"]).await;
    let rich = agenthost_contrib_markdown_plan_rich_links::instruction("");
    let rich_head: String = rich.chars().take(40).collect();
    let artifacts = agenthost_contrib_artifact_tools::ARTIFACT_TOOLS_INSTRUCTION;
    assert!(
        on.starts_with("Got: plan the refactor\n\nInstructions:\n- "),
        "{on}"
    );
    let rich_at = on.find(&rich_head).expect("the rich-links instruction");
    let artifacts_at = on.find(artifacts).expect("the artifact-tools instruction");
    assert!(rich_at < artifacts_at, "rich links (100) come first: {on}");
    assert!(on.contains(chat_link), "the current chat is linked: {on}");

    let off = answer(&[]).await;
    assert_eq!(off, "Got: plan the refactor", "no flag, no guidance");
}
