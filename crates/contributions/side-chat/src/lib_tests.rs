use std::sync::Mutex;

use agenthost_dispatcher::{Descriptor, Dispatcher, RegistrationError};
use agenthost_protocol::ahp_types::state::{Message, MessageKind};
use agenthost_services::fakes::FakeHostState;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

const SESSION: &str = "ahp-session:/s1";
const SOURCE: &str = "ahp-chat:/default";
const SIDE: &str = "ahp-chat:/side";
const OTHER: &str = "ahp-chat:/other";
const T0: &str = "2026-01-01T00:00:00.000Z";

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

fn message(text: &str) -> Message {
    from(json!({ "text": text, "origin": { "kind": "user" } }))
}

fn markdown(id: &str, content: &str) -> Value {
    json!({ "kind": "markdown", "id": id, "content": content })
}

/// A turn with `parts` ending in `state` (`complete`, `cancelled`, `error`).
fn turn_with(id: &str, text: &str, parts: Vec<Value>, state: &str) -> Turn {
    from(json!({ "id": id, "message": message(text), "responseParts": parts, "state": state }))
}

/// A completed user turn answered with `response`.
fn turn(id: &str, text: &str, response: &str) -> Turn {
    turn_with(id, text, vec![markdown("p1", response)], "complete")
}

/// A `/rename` turn answered by the host itself.
fn local_turn(id: &str) -> Turn {
    turn(id, "/rename T", "Renamed.")
        .tap(|t| t.response_parts = vec![from(markdown(LOCAL_COMMAND_PART_ID, "Renamed."))])
}

trait Tap: Sized {
    fn tap(mut self, f: impl FnOnce(&mut Self)) -> Self {
        f(&mut self);
        self
    }
}
impl<T> Tap for T {}

fn active(id: &str, text: &str, partial: &str) -> ActiveTurn {
    from(json!({
        "id": id, "startedAt": T0, "message": message(text), "responseParts": [markdown("p1", partial)]
    }))
}

fn chat_state(uri: &str, origin: Option<Value>, turns: Vec<Turn>) -> ChatState {
    let mut chat = json!({
        "resource": uri, "title": "Chat", "status": 1, "modifiedAt": T0, "turns": turns
    });
    if let Some(origin) = origin {
        chat["origin"] = origin;
    }
    from(chat)
}

fn side_origin(turn_id: &str) -> Value {
    json!({ "kind": "sideChat", "chat": SOURCE, "turnId": turn_id })
}

/// The block [`transcript`] renders for one turn.
fn block(request: &str, response: &str) -> String {
    format!("User request:\n{request}\n\nAgent response:\n{response}")
}

/// A dispatcher with `sideChat` registered over a fake host holding `chats`.
fn setup(chats: Vec<ChatState>) -> (Arc<FakeHostState>, Dispatcher) {
    let host = Arc::new(FakeHostState::default());
    host.script(|a| {
        for chat in chats {
            a.chat_sessions
                .insert(chat.resource.clone(), SESSION.into());
            a.chats.insert(chat.resource.clone(), chat);
        }
    });
    let mut services = ServiceRegistry::new();
    services.insert::<dyn HostState>(host.clone());
    let dispatcher = Dispatcher::new(services);
    // Kept registered for the whole test (dropping the handle unregisters).
    std::mem::forget(dispatcher.register::<SideChat>().unwrap());
    (host, dispatcher)
}

/// The common case: a default chat with two completed user turns; the side chat was taken at
/// the first.
fn side_chat_at_completed_turn() -> (Arc<FakeHostState>, Dispatcher) {
    setup(vec![
        chat_state(
            SOURCE,
            None,
            vec![
                turn("t1", "fix the bug", "Fixed."),
                turn("t2", "and tests", "Added."),
            ],
        ),
        chat_state(SIDE, Some(side_origin("t1")), vec![]),
    ])
}

/// The envelope body of [`side_chat_at_completed_turn`]'s side chat: the guidance and the
/// source's turns up to the origin turn `t1` (not `t2`, which came after it).
fn body_at_t1() -> String {
    format!(
        "{GUIDANCE}\n\nSource chat transcript:\n{}",
        block("fix the bug", "Fixed.")
    )
}

async fn send_to(dispatcher: &Dispatcher, chat: &str, text: &str) -> Message {
    let outgoing = OutgoingTurn {
        session: SESSION.parse().unwrap(),
        chat: chat.parse().unwrap(),
        message: message(text),
        turn_id: "s1".to_owned(),
    };
    dispatcher.outgoing_turn(&outgoing).await.message
}

async fn send(dispatcher: &Dispatcher, text: &str) -> String {
    send_to(dispatcher, SIDE, text).await.text
}

fn end(dispatcher: &Dispatcher, chat: &str, reason: TurnEndReason) {
    dispatcher.turn_end(&TurnEnd {
        session: SESSION.parse().unwrap(),
        chat: chat.parse().unwrap(),
        turn_id: Some("s1".to_owned()),
        reason,
        client_context: None,
    });
}

async fn hydrate(dispatcher: &Dispatcher, chat: &str, turns: Vec<Turn>) -> Vec<[String; 2]> {
    let context = HydrationContext {
        session: SESSION.parse().unwrap(),
        chat: chat.parse().unwrap(),
    };
    ids_and_texts(&dispatcher.hydrate_turns(&context, turns).await)
}

fn ids_and_texts(turns: &[Turn]) -> Vec<[String; 2]> {
    turns
        .iter()
        .map(|t| [t.id.clone(), t.message.text.clone()])
        .collect()
}

fn pair(id: &str, text: &str) -> [String; 2] {
    [id.to_owned(), text.to_owned()]
}

fn failure() -> TurnEndReason {
    TurnEndReason::Error {
        error: agenthost_protocol::error_info::error_info("sendFailed", "boom"),
        resumable: false,
    }
}

// ---------------------------------------------------------------------------------------------
// The envelope.

#[test]
fn the_envelope_has_the_documented_shape_and_counts_characters() {
    assert_eq!(
        build_envelope("why?", "ctx é"),
        "<side-chat-context>\nlength=5\nctx é\n</side-chat-context>\n\nwhy?"
    );
    assert_eq!(
        parse_envelope("<side-chat-context>\nlength=5\nctx é\n</side-chat-context>\n\nwhy?"),
        Some(Envelope {
            body: "ctx é",
            prompt: "why?"
        })
    );
}

#[test]
fn tags_inside_the_body_or_the_prompt_do_not_confuse_the_parser() {
    let body = format!("a\n{CLOSE_TAG}\n\nfake prompt\n{OPEN_TAG}\nlength=1\n");
    let prompt = format!("{CLOSE_TAG}\n\n{OPEN_TAG}\nlength=0\n\n{CLOSE_TAG}\n\n");
    let envelope = build_envelope(&prompt, &body);
    assert_eq!(
        parse_envelope(&envelope),
        Some(Envelope {
            body: &body,
            prompt: &prompt
        })
    );
}

#[test]
fn malformed_envelopes_are_not_parsed() {
    let malformed = [
        "",
        "plain text",
        "<side-chat-context>",
        "<side-chat-context>\n",
        "<side-chat-context>length=1\nx\n</side-chat-context>\n\nq",
        "<side-chat-context>\nlength=\nx\n</side-chat-context>\n\nq",
        "<side-chat-context>\nlength=x\nx\n</side-chat-context>\n\nq",
        "<side-chat-context>\nlength=+1\nx\n</side-chat-context>\n\nq",
        "<side-chat-context>\nlength=-1\nx\n</side-chat-context>\n\nq",
        "<side-chat-context>\nsize=1\nx\n</side-chat-context>\n\nq",
        // The length runs past the closing tag, or stops short of it.
        "<side-chat-context>\nlength=2\nx\n</side-chat-context>\n\nq",
        "<side-chat-context>\nlength=0\nx\n</side-chat-context>\n\nq",
        "<side-chat-context>\nlength=99999999999999999999999\nx\n</side-chat-context>\n\nq",
        "<side-chat-context>\nlength=1\nx\n</side-chat-context>\nq",
        "<side-chat-context>\nlength=1\nx\n</side-chat-context>",
        "<side-chat-context>\nlength=1\nx",
        " <side-chat-context>\nlength=1\nx\n</side-chat-context>\n\nq",
    ];
    for text in malformed {
        assert_eq!(parse_envelope(text), None, "{text:?}");
    }
}

proptest! {
    #[test]
    fn parse_inverts_build(prompt in any::<String>(), body in any::<String>()) {
        let envelope = build_envelope(&prompt, &body);
        prop_assert_eq!(parse_envelope(&envelope), Some(Envelope { body: &body, prompt: &prompt }));
    }

    #[test]
    fn parse_inverts_build_with_tags_anywhere(
        parts in proptest::collection::vec(
            prop_oneof![
                Just(OPEN_TAG.to_owned()), Just(CLOSE_TAG.to_owned()), Just("\n".to_owned()),
                Just("length=3".to_owned()), "[a-zé]{0,4}",
            ],
            0..12,
        ),
        split in 0usize..12,
    ) {
        let (body, prompt) = parts.split_at(split.min(parts.len()));
        let (body, prompt) = (body.concat(), prompt.concat());
        let envelope = build_envelope(&prompt, &body);
        prop_assert_eq!(parse_envelope(&envelope).map(|e| e.prompt), Some(prompt.as_str()));
    }

    #[test]
    fn parsing_any_text_never_panics(tail in any::<String>(), length in any::<u64>()) {
        let _ = parse_envelope(&tail);
        let _ = parse_envelope(&format!("{OPEN_TAG}\nlength={length}\n{tail}"));
    }
}

// ---------------------------------------------------------------------------------------------
// Transcript and truncation.

#[test]
fn the_transcript_joins_request_and_markdown_response_blocks() {
    let with_other_parts = turn_with(
        "t2",
        "second",
        vec![
            markdown("a", "Part one, "),
            json!({ "kind": "reasoning", "id": "r", "content": "thinking" }),
            markdown("b", "part two."),
        ],
        "complete",
    );
    assert_eq!(
        transcript(&[turn("t1", "first", "One."), with_other_parts]),
        format!(
            "{}\n---\n{}",
            block("first", "One."),
            block("second", "Part one, part two.")
        )
    );
}

#[test]
fn long_text_is_cut_in_the_middle_to_the_bound() {
    assert_eq!(truncate_middle("short", 10), "short");
    let text = format!(
        "{}{}{}",
        "h".repeat(15_000),
        "x".repeat(10_000),
        "t".repeat(15_000)
    );
    let cut = truncate_middle(&text, MAX_TRANSCRIPT_CHARS);
    assert!(cut.chars().count() <= MAX_TRANSCRIPT_CHARS, "{}", cut.len());
    assert!(cut.chars().count() > MAX_TRANSCRIPT_CHARS - 100);
    assert!(cut.starts_with(&"h".repeat(9_000)));
    assert!(cut.ends_with(&"t".repeat(9_000)));
    assert!(!cut.contains('x'));
    assert!(cut.contains(" characters omitted "));

    let turns: Vec<Turn> = (0..30)
        .map(|i| {
            turn(
                &format!("t{i}"),
                &format!("request {i}"),
                &"é".repeat(1_000),
            )
        })
        .collect();
    let transcript = transcript(&turns);
    assert!(transcript.chars().count() <= MAX_TRANSCRIPT_CHARS);
    assert!(transcript.starts_with("User request:\nrequest 0\n"));
    assert!(transcript.ends_with(&"é".repeat(500)));
}

proptest! {
    #[test]
    fn truncation_never_exceeds_the_bound(text in ".{0,300}", max in 0usize..200) {
        let cut = truncate_middle(&text, max);
        prop_assert!(cut.chars().count() <= max);
        if text.chars().count() <= max {
            prop_assert_eq!(cut, text);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Which source turns: every one up to the origin (no agent of this host forks; see the crate
// docs).

#[test]
fn a_completed_user_turn_gives_every_turn_up_to_and_including_it() {
    let source = chat_state(
        SOURCE,
        None,
        vec![
            turn("t1", "a", "A"),
            turn("t2", "b", "B"),
            turn("t3", "c", "C"),
        ],
    );
    let (turns, current) = transcript_turns(&source, "t2");
    assert_eq!(ids_and_texts(turns), [pair("t1", "a"), pair("t2", "b")]);
    assert!(current.is_none());
    let (turns, current) = transcript_turns(&source, "t1");
    assert_eq!(ids_and_texts(turns), [pair("t1", "a")]);
    assert!(current.is_none());
    let (turns, _) = transcript_turns(&source, "t3");
    assert_eq!(
        ids_and_texts(turns),
        [pair("t1", "a"), pair("t2", "b"), pair("t3", "c")]
    );
}

#[test]
fn an_origin_turn_that_is_no_longer_in_the_source_gives_every_completed_turn() {
    // `createChat` checked the turn; a source whose history lost it still gives all it has.
    let source = chat_state(
        SOURCE,
        None,
        vec![turn("t1", "a", "A"), turn("t2", "b", "B")],
    );
    let (turns, current) = transcript_turns(&source, "missing");
    assert_eq!(ids_and_texts(turns), [pair("t1", "a"), pair("t2", "b")]);
    assert!(current.is_none());
    let empty = chat_state(SOURCE, None, vec![]);
    assert_eq!(transcript_turns(&empty, "t1"), (&[][..], None));
}

#[test]
fn an_active_origin_turn_gives_every_completed_turn_and_itself() {
    let mut source = chat_state(
        SOURCE,
        None,
        vec![turn("t1", "a", "A"), local_turn("l1"), turn("t2", "b", "B")],
    );
    source.active_turn = Some(active("t3", "c", "partial"));
    let (turns, current) = transcript_turns(&source, "t3");
    assert_eq!(
        ids_and_texts(turns),
        [pair("t1", "a"), pair("l1", "/rename T"), pair("t2", "b")]
    );
    assert_eq!(current, source.active_turn.as_ref());
    // Another turn being active does not make the origin turn active, nor does it count: the
    // transcript still ends at the origin turn.
    let (turns, current) = transcript_turns(&source, "t1");
    assert_eq!(ids_and_texts(turns), [pair("t1", "a")]);
    assert!(current.is_none());
}

#[test]
fn host_local_turns_count_like_any_other() {
    let source = chat_state(
        SOURCE,
        None,
        vec![
            turn("t1", "a", "A"),
            local_turn("l1"),
            local_turn("l2"),
            turn("t2", "b", "B"),
        ],
    );
    let (turns, current) = transcript_turns(&source, "l2");
    assert_eq!(
        ids_and_texts(turns),
        [
            pair("t1", "a"),
            pair("l1", "/rename T"),
            pair("l2", "/rename T")
        ]
    );
    assert!(current.is_none());
    let (turns, _) = transcript_turns(&source, "t2");
    assert_eq!(turns.len(), 4);
}

#[test]
fn a_tool_origin_source_gives_the_same_turns_as_any_other() {
    let mut source = chat_state(
        SOURCE,
        Some(json!({ "kind": "tool", "chat": OTHER, "toolCallId": "tc1" })),
        vec![
            turn("t1", "a", "A"),
            turn("t2", "b", "B"),
            turn("t3", "c", "C"),
        ],
    );
    let (turns, current) = transcript_turns(&source, "t2");
    assert_eq!(ids_and_texts(turns), [pair("t1", "a"), pair("t2", "b")]);
    assert!(current.is_none());
    source.active_turn = Some(active("t4", "d", "partial"));
    let (turns, current) = transcript_turns(&source, "t4");
    assert_eq!(turns.len(), 3);
    assert_eq!(current, source.active_turn.as_ref());
    let user_origin = ChatState {
        origin: None,
        ..source.clone()
    };
    for turn_id in ["t1", "t2", "t3", "t4", "missing"] {
        assert_eq!(
            transcript_turns(&source, turn_id),
            transcript_turns(&user_origin, turn_id),
            "{turn_id}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// onOutgoingTurn and onTurnEnd.

#[tokio::test]
async fn the_first_send_carries_the_source_turns_up_to_the_origin_and_the_origin_stays_user() {
    let (_, dispatcher) = side_chat_at_completed_turn();
    let sent = send_to(&dispatcher, SIDE, "built-in-send-order").await;
    assert_eq!(
        sent.text,
        build_envelope("built-in-send-order", &body_at_t1())
    );
    assert_eq!(sent.origin.kind, MessageKind::User);
}

#[tokio::test]
async fn the_envelope_carries_selection_transcript_and_partial_response() {
    let mut source = chat_state(SOURCE, None, vec![turn("t1", "a", "A"), local_turn("l1")]);
    source.active_turn = Some(active("t2", "refactor it", "Working on"));
    let origin = json!({
        "kind": "sideChat", "chat": SOURCE, "turnId": "t2", "selection": { "text": "fn main()" }
    });
    let (_, dispatcher) = setup(vec![source, chat_state(SIDE, Some(origin), vec![])]);
    let body = format!(
        "{GUIDANCE}\n\nSelected text:\nfn main()\n\nSource chat transcript:\n{}\n---\n{}\n\n\
         The source chat's turn is still in progress.\nUser request:\nrefactor it\n\n\
         Partial agent response:\nWorking on",
        block("a", "A"),
        block("/rename T", "Renamed.")
    );
    assert_eq!(
        send(&dispatcher, "what does it do?").await,
        build_envelope("what does it do?", &body)
    );
}

/// The completion race: the origin turn completes between `createChat` and the first send; it moves
/// from the partial response into the transcript, and a turn started after it is left out.
#[tokio::test]
async fn an_origin_turn_completed_before_the_first_send_moves_into_the_transcript() {
    let mut source = chat_state(SOURCE, None, vec![turn("t1", "a", "A")]);
    source.active_turn = Some(active("t2", "refactor it", "Working on"));
    let (host, dispatcher) = setup(vec![
        source,
        chat_state(SIDE, Some(side_origin("t2")), vec![]),
    ]);
    host.script(|a| {
        let source = a.chats.get_mut(SOURCE).unwrap();
        source
            .turns
            .push(turn("t2", "refactor it", "Working on it. Done."));
        source.active_turn = Some(active("t3", "next", "Later"));
    });
    let body = format!(
        "{GUIDANCE}\n\nSource chat transcript:\n{}\n---\n{}",
        block("a", "A"),
        block("refactor it", "Working on it. Done.")
    );
    assert_eq!(send(&dispatcher, "q").await, build_envelope("q", &body));
}

#[tokio::test]
async fn a_missing_source_chat_still_gets_the_guidance() {
    let (_, dispatcher) = setup(vec![chat_state(SIDE, Some(side_origin("t1")), vec![])]);
    assert_eq!(send(&dispatcher, "q").await, build_envelope("q", GUIDANCE));
}

#[tokio::test]
async fn chats_that_are_not_side_chats_pass_through_untouched() {
    let fork = json!({ "kind": "fork", "chat": SOURCE, "turnId": "t1" });
    let (_, dispatcher) = setup(vec![
        chat_state(SOURCE, None, vec![turn("t1", "a", "A")]),
        chat_state(SIDE, Some(json!({ "kind": "user" })), vec![]),
        chat_state(OTHER, Some(fork), vec![]),
    ]);
    for chat in [SOURCE, SIDE, OTHER, "ahp-chat:/unknown"] {
        assert_eq!(send_to(&dispatcher, chat, "hello").await, message("hello"));
    }
}

#[tokio::test]
async fn a_successful_turn_seeds_the_side_chat() {
    let (_, dispatcher) = side_chat_at_completed_turn();
    assert!(send(&dispatcher, "first").await.starts_with(OPEN_TAG));
    end(&dispatcher, SIDE, TurnEndReason::Success);
    assert_eq!(send(&dispatcher, "second").await, "second");
}

#[tokio::test]
async fn a_failed_or_cancelled_first_attempt_is_retried_with_the_context() {
    let reasons = [
        TurnEndReason::Cancelled,
        failure(),
        TurnEndReason::Rejected {
            error: agenthost_protocol::error_info::error_info("archived", "no"),
        },
        TurnEndReason::LocalCommand,
    ];
    let (_, dispatcher) = side_chat_at_completed_turn();
    for reason in reasons {
        assert!(send(&dispatcher, "try").await.starts_with(OPEN_TAG));
        end(&dispatcher, SIDE, reason.clone());
        assert_eq!(
            send(&dispatcher, "retry").await,
            build_envelope("retry", &body_at_t1()),
            "{reason:?}"
        );
    }
}

#[tokio::test]
async fn the_seeded_mark_is_per_chat_and_forgotten_when_the_chat_is_evicted() {
    let (_, dispatcher) = setup(vec![
        chat_state(SIDE, Some(side_origin("t1")), vec![]),
        chat_state(OTHER, Some(side_origin("t1")), vec![]),
    ]);
    end(&dispatcher, SIDE, TurnEndReason::Success);
    assert_eq!(send(&dispatcher, "q").await, "q");
    assert!(
        send_to(&dispatcher, OTHER, "q")
            .await
            .text
            .starts_with(OPEN_TAG)
    );
    dispatcher.evict_chat(SIDE);
    assert!(send(&dispatcher, "q").await.starts_with(OPEN_TAG));
}

// ---------------------------------------------------------------------------------------------
// onHydrateTurns.

fn enveloped(id: &str, prompt: &str, state: &str) -> Turn {
    turn_with(
        id,
        &build_envelope(prompt, "ctx"),
        vec![markdown("p", "ok")],
        state,
    )
}

#[tokio::test]
async fn restore_drops_inherited_turns_and_the_envelope() {
    // The built-ins' hydration sequence.
    let (_, dispatcher) = side_chat_at_completed_turn();
    let restored = vec![
        turn("t1", "fix the bug", "Fixed."),
        enveloped("X", "side question", "complete"),
    ];
    assert_eq!(
        hydrate(&dispatcher, SIDE, restored).await,
        [pair("X", "side question")]
    );
}

#[tokio::test]
async fn without_the_inherited_turn_the_last_seed_marker_is_the_boundary() {
    let (_, dispatcher) = side_chat_at_completed_turn();
    let restored = vec![
        turn("p1", "provider copy", "A"),
        enveloped("X", "first", "complete"),
        turn("Y", "plain", "B"),
    ];
    assert_eq!(
        hydrate(&dispatcher, SIDE, restored).await,
        [pair("X", "first"), pair("Y", "plain")]
    );
}

#[tokio::test]
async fn without_any_boundary_the_history_is_kept() {
    let (_, dispatcher) = side_chat_at_completed_turn();
    let restored = vec![turn("a", "one", "A"), turn("b", "two", "B")];
    assert_eq!(
        hydrate(&dispatcher, SIDE, restored).await,
        [pair("a", "one"), pair("b", "two")]
    );
}

#[tokio::test]
async fn every_seeding_attempt_loses_its_envelope_but_later_turns_are_left_alone() {
    let (_, dispatcher) = side_chat_at_completed_turn();
    let later = build_envelope("typed by the user", "x");
    let restored = vec![
        turn("t1", "fix the bug", "Fixed."),
        enveloped("X1", "question", "error"),
        enveloped("X2", "question", "complete"),
        turn("X3", &later, "C"),
    ];
    assert_eq!(
        hydrate(&dispatcher, SIDE, restored).await,
        [
            pair("X1", "question"),
            pair("X2", "question"),
            pair("X3", &later)
        ]
    );
}

#[tokio::test]
async fn a_malformed_envelope_is_left_as_it_is() {
    let (_, dispatcher) = side_chat_at_completed_turn();
    let broken = "<side-chat-context>\nlength=999\nctx\n</side-chat-context>\n\nq";
    let restored = vec![turn("t1", "fix the bug", "Fixed."), turn("X", broken, "ok")];
    assert_eq!(
        hydrate(&dispatcher, SIDE, restored).await,
        [pair("X", broken)]
    );
}

#[tokio::test]
async fn a_completed_kept_turn_marks_the_restored_chat_seeded() {
    let (_, dispatcher) = side_chat_at_completed_turn();
    let restored = vec![
        turn("t1", "fix the bug", "Fixed."),
        enveloped("X", "q", "complete"),
    ];
    hydrate(&dispatcher, SIDE, restored).await;
    assert_eq!(send(&dispatcher, "next").await, "next");
}

#[tokio::test]
async fn only_failed_kept_turns_leave_the_restored_chat_unseeded() {
    let (_, dispatcher) = side_chat_at_completed_turn();
    let restored = vec![
        turn("t1", "fix the bug", "Fixed."),
        enveloped("X", "q", "error"),
        enveloped("Y", "q", "cancelled"),
    ];
    assert_eq!(
        hydrate(&dispatcher, SIDE, restored).await,
        [pair("X", "q"), pair("Y", "q")]
    );
    assert!(send(&dispatcher, "next").await.starts_with(OPEN_TAG));
}

#[tokio::test]
async fn a_chat_that_is_not_a_side_chat_is_restored_untouched() {
    let (_, dispatcher) = setup(vec![chat_state(OTHER, None, vec![])]);
    let restored = vec![turn("t1", "a", "A"), enveloped("X", "q", "complete")];
    assert_eq!(
        hydrate(&dispatcher, OTHER, restored.clone()).await,
        ids_and_texts(&restored)
    );
    assert_eq!(send_to(&dispatcher, OTHER, "q").await.text, "q");
}

#[tokio::test]
async fn a_chat_not_yet_in_host_state_is_found_in_its_sessions_catalog() {
    let (host, dispatcher) = setup(vec![]);
    let summary = json!({
        "resource": SIDE, "title": "Side", "status": 1, "modifiedAt": T0,
        "origin": side_origin("t1")
    });
    host.script(|a| {
        a.sessions.insert(
            SESSION.into(),
            from(json!({
                "provider": "scripted", "title": "S", "status": 1, "lifecycle": "ready",
                "activeClients": [], "chats": [summary]
            })),
        );
    });
    let restored = vec![
        turn("t1", "fix the bug", "Fixed."),
        enveloped("X", "q", "complete"),
    ];
    assert_eq!(hydrate(&dispatcher, SIDE, restored).await, [pair("X", "q")]);
}

/// Records the texts a hydration stage receives.
struct Probe(Arc<Mutex<Vec<Vec<String>>>>);

impl ChatContribution for Probe {
    fn on_hydrate_turns<'a>(
        &'a self,
        _context: &'a HydrationContext,
        turns: &'a [Turn],
    ) -> HookFuture<'a, Vec<Turn>> {
        let texts = turns.iter().map(|t| t.message.text.clone()).collect();
        self.0.lock().unwrap().push(texts);
        Box::pin(async move { Ok(turns.to_vec()) })
    }
}

#[tokio::test]
async fn stages_before_500_see_the_envelope_and_stages_after_see_the_plain_text() {
    let (_, dispatcher) = side_chat_at_completed_turn();
    let seen = Arc::new(Mutex::new(Vec::new()));
    for (id, order) in [("probe450", 450), ("probe550", 550)] {
        let descriptor = Descriptor {
            id,
            order,
            hooks: HookSet::of(&[Hook::HydrateTurns]),
        };
        let probe = Probe(seen.clone());
        let registration = dispatcher
            .register_with(descriptor, move |_, _| Ok(Arc::new(probe)))
            .unwrap();
        std::mem::forget(registration);
    }
    let envelope = build_envelope("side question", "ctx");
    let restored = vec![
        turn("t1", "fix the bug", "Fixed."),
        turn("X", &envelope, "ok"),
    ];
    assert_eq!(
        hydrate(&dispatcher, SIDE, restored).await,
        [pair("X", "side question")]
    );
    assert_eq!(
        *seen.lock().unwrap(),
        [
            vec!["fix the bug".to_owned(), envelope],
            vec!["side question".to_owned()]
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Registration.

#[test]
fn it_registers_at_500_on_its_three_hooks_and_needs_host_state() {
    let (_, dispatcher) = side_chat_at_completed_turn();
    for hook in [Hook::OutgoingTurn, Hook::TurnEnd, Hook::HydrateTurns] {
        assert_eq!(dispatcher.order_of(hook), [(500, "sideChat")], "{hook:?}");
    }
    assert_eq!(dispatcher.order_of(Hook::IncomingRequest), []);

    let dispatcher = Dispatcher::new(ServiceRegistry::new());
    let error = dispatcher.register::<SideChat>().unwrap_err();
    let RegistrationError::MissingService { id, service } = error else {
        panic!("expected a missing service, got {error:?}");
    };
    assert_eq!(id, "sideChat");
    assert!(service.contains("HostState"), "{service}");
}
