//! `pipeline_vs_serde`: the whole host pipeline against bare JSON work on the same frames.
//!
//! The host is composed exactly as `agent-host serve` composes it (`agenthost::host::bind`) with
//! a script whose one turn streams 100 000 one-character `chat/delta`s. Ten raw WebSocket
//! subscribers initialize, subscribe to the chat, and decode every text frame with `serde_json`
//! into a `serde_json::Value`: about 1 000 000 frames delivered in all. The timed region starts
//! when the turn is started and ends when every subscriber has decoded its turn-ending frame.
//!
//! The anchor, measured in the same run, is `serde_json` parse + serialize of the same
//! 1 000 000 frames in one thread (the frames one subscriber received, ten times over).
//! ratio = anchor / value; goal 0.3x (the pipeline within ~3.3× of bare parse + serialize).
//!
//! `pipeline_actions_per_second` is the number of actions the host sequenced for the turn, each
//! delivered to all ten subscribers, per second of the timed region.
//!
//! A subscriber the host drops as too slow (its outbound queue full: close code 1013) makes the
//! run invalid: the benchmark says so on stderr and fails instead of printing a number.

use std::hint::black_box;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use agenthost::host::{HostOptions, bind};
use agenthost_dispatcher::LaunchKind;
use agenthost_protocol::{ChatUri, ROOT_RESOURCE_URI, SafeId, SessionUri};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

const DELTAS: usize = 100_000;
const SUBSCRIBERS: usize = 10;
const GOAL: f64 = 0.3;
/// The longest the benchmark waits for the host between two frames.
const STALL: Duration = Duration::from_secs(60);

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

fn script() -> Value {
    let text: String = "The quick brown fox jumps over the lazy dog. "
        .chars()
        .cycle()
        .take(DELTAS)
        .collect();
    json!({ "turns": [{ "steps": [{ "kind": "say", "text": text, "chunk": 1 }] }] })
}

async fn connect(url: &str) -> Result<Socket, String> {
    let (socket, _) = tokio_tungstenite::connect_async(url)
        .await
        .map_err(|e| format!("cannot connect: {e}"))?;
    Ok(socket)
}

async fn next_frame(socket: &mut Socket) -> Result<Message, String> {
    match tokio::time::timeout(STALL, socket.next()).await {
        Err(_) => Err(format!("the host sent nothing for {STALL:?}")),
        Ok(None) => Err("the connection ended".into()),
        Ok(Some(Err(e))) => Err(format!("the connection failed: {e}")),
        Ok(Some(Ok(message))) => Ok(message),
    }
}

/// Sends a request and waits for its response (frames before it are ignored).
async fn request(
    socket: &mut Socket,
    id: u64,
    method: &str,
    params: Value,
) -> Result<Value, String> {
    let frame = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
    socket
        .send(Message::Text(frame.to_string().into()))
        .await
        .map_err(|e| format!("{method}: {e}"))?;
    loop {
        if let Message::Text(text) = next_frame(socket).await? {
            let message: Value =
                serde_json::from_str(text.as_str()).map_err(|e| format!("{method}: {e}"))?;
            if message["id"] == id {
                return match message.get("error") {
                    Some(error) => Err(format!("{method} failed: {error}")),
                    None => Ok(message["result"].clone()),
                };
            }
        }
    }
}

async fn initialize(socket: &mut Socket, client_id: &str) -> Result<(), String> {
    request(
        socket,
        1,
        "initialize",
        json!({ "channel": ROOT_RESOURCE_URI, "protocolVersions": ["1.0.0"], "clientId": client_id }),
    )
    .await
    .map(drop)
}

/// What one subscriber saw of the turn.
struct Received {
    frames: usize,
    ended: Instant,
    /// The frame texts, for the subscriber that captures them.
    captured: Vec<String>,
}

/// Reads until the turn-ending action; a close before it means the host dropped this
/// subscriber.
async fn follow(mut socket: Socket, capture: bool) -> Result<Received, String> {
    let mut frames = 0;
    let mut captured = Vec::new();
    loop {
        match next_frame(&mut socket).await? {
            Message::Text(text) => {
                let message: Value = serde_json::from_str(text.as_str())
                    .map_err(|e| format!("an undecodable frame: {e}"))?;
                frames += 1;
                if capture {
                    captured.push(text.as_str().to_owned());
                }
                let kind = &message["params"]["action"]["type"];
                if kind == "chat/turnComplete" || kind == "chat/error" {
                    return Ok(Received {
                        frames,
                        ended: Instant::now(),
                        captured,
                    });
                }
            }
            Message::Close(close) => {
                return Err(format!(
                    "the host closed the connection after {frames} frames: {close:?}"
                ));
            }
            _ => {}
        }
    }
}

struct Measured {
    elapsed: Duration,
    frames: usize,
    captured: Vec<String>,
}

async fn pipeline(url: &str) -> Result<Measured, String> {
    let session =
        SessionUri::with_provider("scripted", SafeId::new("bench").map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    let chat = ChatUri::default_for(&session);

    let mut driver = connect(url).await?;
    initialize(&mut driver, "bench-driver").await?;
    request(
        &mut driver,
        2,
        "createSession",
        json!({ "channel": session.as_str(), "provider": "scripted" }),
    )
    .await?;

    let mut followers = Vec::new();
    for index in 0..SUBSCRIBERS {
        let mut socket = connect(url).await?;
        initialize(&mut socket, &format!("bench-subscriber-{index}")).await?;
        request(
            &mut socket,
            2,
            "subscribe",
            json!({ "channel": chat.as_str() }),
        )
        .await?;
        followers.push(tokio::spawn(follow(socket, index == 0)));
    }

    let start = Instant::now();
    let turn = json!({
        "jsonrpc": "2.0", "method": "dispatchAction",
        "params": { "channel": chat.as_str(), "clientSeq": 1, "action": {
            "type": "chat/turnStarted", "turnId": "bench-turn",
            "startedAt": "2026-03-01T10:00:00.000Z",
            "message": { "text": "stream", "origin": { "kind": "user" } }
        }}
    });
    driver
        .send(Message::Text(turn.to_string().into()))
        .await
        .map_err(|e| format!("dispatchAction: {e}"))?;

    let mut ended = start;
    let mut frames = 0;
    let mut captured = Vec::new();
    let mut dropped = Vec::new();
    for (index, follower) in followers.into_iter().enumerate() {
        match follower.await.map_err(|e| e.to_string())? {
            Ok(received) => {
                ended = ended.max(received.ended);
                frames += received.frames;
                if index == 0 {
                    captured = received.captured;
                }
            }
            Err(problem) => dropped.push(format!("subscriber {index}: {problem}")),
        }
    }
    if !dropped.is_empty() {
        return Err(format!(
            "{} of {SUBSCRIBERS} subscribers did not receive the whole turn:\n  {}",
            dropped.len(),
            dropped.join("\n  ")
        ));
    }
    Ok(Measured {
        elapsed: ended - start,
        frames,
        captured,
    })
}

/// serde_json parse + serialize of every frame, `rounds` times, in this thread.
fn anchor(frames: &[String], rounds: usize) -> Duration {
    let start = Instant::now();
    for _ in 0..rounds {
        for frame in frames {
            let value: Value = serde_json::from_str(black_box(frame)).unwrap_or(Value::Null);
            black_box(serde_json::to_string(&value).unwrap_or_default());
        }
    }
    start.elapsed()
}

async fn run() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let script = dir.path().join("script.json");
    std::fs::write(&script, script_text()?).map_err(|e| e.to_string())?;
    let server = bind(HostOptions {
        script: Some(script),
        ..HostOptions::scripted(
            vec![dir.path().to_owned()],
            LaunchKind::Embedded("pipeline_vs_serde".into()),
        )
    })
    .await
    .map_err(|e| e.to_string())?;
    let url = server.url();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.serve(async {
        let _ = stopped.await;
    }));

    let measured = pipeline(&url).await;
    let _ = stop.send(());
    let _ = serving.await;
    let measured = measured?;

    let deltas = measured
        .captured
        .iter()
        .filter(|f| f.contains("\"chat/delta\""))
        .count();
    if deltas != DELTAS {
        return Err(format!(
            "a subscriber received {deltas} deltas, not {DELTAS}"
        ));
    }
    let actions = measured.captured.len();
    let anchor = anchor(&measured.captured, SUBSCRIBERS);
    let value_ms = measured.elapsed.as_secs_f64() * 1000.0;
    let anchor_ms = anchor.as_secs_f64() * 1000.0;
    eprintln!(
        "pipeline: {} frames to {SUBSCRIBERS} subscribers ({actions} actions each) in {value_ms:.1} ms; \
         anchor: {} frames parsed and serialized in {anchor_ms:.1} ms",
        measured.frames,
        actions * SUBSCRIBERS
    );
    println!(
        "bench pipeline_vs_serde: value={value_ms:.1}ms anchor={anchor_ms:.1}ms ratio={:.3}x goal={GOAL}x",
        anchor_ms / value_ms
    );
    println!(
        "bench pipeline_actions_per_second: value={:.0}",
        actions as f64 / measured.elapsed.as_secs_f64()
    );
    Ok(())
}

fn script_text() -> Result<String, String> {
    serde_json::to_string(&script()).map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("pipeline_vs_serde: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(problem) => {
            eprintln!("pipeline_vs_serde: {problem}");
            ExitCode::FAILURE
        }
    }
}
