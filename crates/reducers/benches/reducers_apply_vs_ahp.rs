//! `reducers_apply_vs_ahp`: the host's `apply` (routing + validation + canonical reducer) against
//! calling `ahp::reducers::apply_action_to_chat` directly, on the same 100 000-action stream of a
//! 1 000-turn chat with tool calls. ratio = direct time / host time (higher is better); the goal
//! 0.8 means routing and validation cost under 25 %.

use std::hint::black_box;
use std::time::{Duration, Instant};

use agenthost_protocol::ahp_types::state::{ChatState, RootState, SessionState};
use agenthost_protocol::{ActionEnvelope, ActionOrigin, StateAction};
use agenthost_reducers::HostState;
use serde_json::{Value, json};

const SESSION: &str = "ahp-session:/bench";
const CHAT: &str = "ahp-chat:/bench";
const TURNS: usize = 1_000;
const ACTIONS_PER_TURN: usize = 100;
const TOOL_CALLS_PER_TURN: usize = 10;
const ROUNDS: usize = 7;
const GOAL: f64 = 0.8;

fn decode<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, serde_json::Error> {
    serde_json::from_value(value)
}

/// One turn: started (from a client), markdown and reasoning streamed, tool calls started,
/// readied and completed, usage, complete — exactly `ACTIONS_PER_TURN` actions.
fn turn(index: usize) -> Result<Vec<(Value, bool)>, serde_json::Error> {
    let turn = format!("turn-{index}");
    let mut out = vec![(
        json!({
            "type": "chat/turnStarted", "turnId": turn, "startedAt": "2026-01-01T00:00:00.000Z",
            "message": { "text": "do the thing", "origin": { "kind": "user" } }
        }),
        true,
    )];
    out.push((
        json!({
            "type": "chat/responsePart", "turnId": turn,
            "part": { "kind": "markdown", "id": "md", "content": "" }
        }),
        false,
    ));
    out.push((
        json!({
            "type": "chat/responsePart", "turnId": turn,
            "part": { "kind": "reasoning", "id": "rs", "content": "" }
        }),
        false,
    ));
    for _ in 0..10 {
        out.push((
            json!({ "type": "chat/reasoning", "turnId": turn, "partId": "rs", "content": "hmm " }),
            false,
        ));
    }
    for call in 0..TOOL_CALLS_PER_TURN {
        let id = format!("call-{call}");
        out.push((
            json!({
                "type": "chat/toolCallStart", "turnId": turn, "toolCallId": id,
                "toolName": "shell", "displayName": "Shell"
            }),
            false,
        ));
        out.push((
            json!({
                "type": "chat/toolCallReady", "turnId": turn, "toolCallId": id,
                "invocationMessage": "ls", "toolInput": "ls", "confirmed": "not-needed"
            }),
            false,
        ));
        out.push((
            json!({
                "type": "chat/toolCallComplete", "turnId": turn, "toolCallId": id,
                "result": { "success": true, "pastTenseMessage": "ran ls" }
            }),
            false,
        ));
    }
    out.push((json!({
        "type": "chat/usage", "turnId": turn, "usage": { "inputTokens": 100, "outputTokens": 20 }
    }), false));
    while out.len() < ACTIONS_PER_TURN - 1 {
        out.push((
            json!({ "type": "chat/delta", "turnId": turn, "partId": "md", "content": "word " }),
            false,
        ));
    }
    out.push((
        json!({ "type": "chat/turnComplete", "turnId": turn, "duration": 1200 }),
        false,
    ));
    Ok(out)
}

fn stream() -> Result<Vec<ActionEnvelope>, serde_json::Error> {
    let mut envelopes = Vec::with_capacity(TURNS * ACTIONS_PER_TURN);
    for index in 0..TURNS {
        for (action, from_client) in turn(index)? {
            let seq = envelopes.len() as u64 + 1;
            envelopes.push(ActionEnvelope {
                channel: CHAT.to_owned(),
                action: decode::<StateAction>(action)?,
                server_seq: seq,
                origin: from_client.then(|| ActionOrigin {
                    client_id: "bench-client".to_owned(),
                    client_seq: seq as i64,
                }),
                rejection_reason: None,
            });
        }
    }
    Ok(envelopes)
}

fn chat() -> Result<ChatState, serde_json::Error> {
    decode(json!({
        "resource": CHAT, "title": "bench", "status": 1,
        "modifiedAt": "2026-01-01T00:00:00.000Z", "turns": []
    }))
}

fn host() -> Result<HostState, Box<dyn std::error::Error>> {
    let root: RootState = decode(json!({ "agents": [] }))?;
    let session: SessionState = decode(json!({
        "provider": "scripted", "title": "bench", "status": 1, "lifecycle": "ready",
        "activeClients": [], "chats": []
    }))?;
    let mut host = HostState::new(root);
    let session_uri = agenthost_protocol::SessionUri::parse(SESSION)?;
    host.insert_session(&session_uri, session)?;
    let chat = chat()?;
    let chat_uri = agenthost_protocol::ChatUri::parse(&chat.resource)?;
    host.insert_chat(&session_uri, &chat_uri, chat)?;
    Ok(host)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let envelopes = stream()?;
    assert_eq!(envelopes.len(), TURNS * ACTIONS_PER_TURN);
    let fresh_chat = chat()?;
    let fresh_host = host()?;

    let mut direct = Vec::with_capacity(ROUNDS);
    let mut ours = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let mut state = fresh_chat.clone();
        let start = Instant::now();
        // The same envelopes as the host path, so both walk the same memory.
        for envelope in &envelopes {
            black_box(ahp::reducers::apply_action_to_chat(
                &mut state,
                &envelope.action,
            ));
        }
        direct.push(start.elapsed());
        black_box(&state);

        let mut host = fresh_host.clone();
        let start = Instant::now();
        for envelope in &envelopes {
            // Every action of the stream is valid: a rejection would make the comparison unfair.
            if let Err(error) = black_box(host.apply_envelope(envelope)) {
                return Err(format!("action {} rejected: {error}", envelope.server_seq).into());
            }
        }
        ours.push(start.elapsed());
        // Both paths must end in the same chat state.
        if host.chat(CHAT) != Some(&state) {
            return Err("host and direct reduction diverged".into());
        }
    }
    let anchor = median(direct).as_secs_f64() * 1e3;
    let value = median(ours).as_secs_f64() * 1e3;
    println!(
        "bench reducers_apply_vs_ahp: value={value:.2}ms anchor={anchor:.2}ms ratio={:.2}x goal={GOAL}x",
        anchor / value
    );
    Ok(())
}
