//! Random sequences of writes against a model: every call succeeds or fails as the model says,
//! and after closing and reopening the file the store reads back exactly the model's data.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::json;

use crate::fixtures::*;
use crate::{
    ChatRecord, DelegationRecord, FailedTurnRecord, MetaOwner, SessionRecord, Store, TitleSource,
    TurnRecord,
};

const SESSIONS: usize = 3;
const CHATS: usize = 4;
const TURNS: usize = 4;

fn s_name(i: usize) -> String {
    format!("s{i}")
}
fn c_name(i: usize) -> String {
    format!("c{i}")
}
fn t_name(i: usize) -> String {
    format!("t{i}")
}
/// Delegations hang on completed and failed turns alike.
fn d_name(i: usize) -> String {
    if i < TURNS {
        t_name(i)
    } else {
        format!("f{}", i - TURNS)
    }
}
fn time(minute: u8) -> String {
    format!("2026-01-01T00:{:02}:00.000Z", minute % 60)
}

#[derive(Debug, Clone)]
enum Owner {
    Session(usize),
    Chat(usize),
}

#[derive(Debug, Clone)]
enum Op {
    PutSession {
        s: usize,
        title: u8,
        modified: u8,
        read: bool,
        default_chat: Option<usize>,
    },
    DeleteSession(usize),
    TouchSession(usize, u8),
    PutChat {
        s: usize,
        c: usize,
        position: i64,
        draft: Option<u8>,
    },
    DeleteChat(usize),
    SetDraft(usize, Option<u8>),
    AppendTurn {
        c: usize,
        t: usize,
        body: u8,
        modified: u8,
    },
    Truncate(usize, Option<usize>),
    RecordFailed {
        c: usize,
        f: usize,
        anchor: Option<usize>,
        message: u8,
    },
    SetMeta(Owner, u8, Option<u8>),
    SetDelegation(usize, usize, Option<u8>),
    Raise(u32),
}

fn op() -> impl Strategy<Value = Op> {
    let s = 0..SESSIONS;
    let c = 0..CHATS;
    let t = 0..TURNS;
    prop_oneof![
        3 => (s.clone(), any::<u8>(), 0..60_u8, any::<bool>(), proptest::option::of(c.clone()))
            .prop_map(|(s, title, modified, read, default_chat)| Op::PutSession {
                s, title, modified, read, default_chat
            }),
        1 => s.clone().prop_map(Op::DeleteSession),
        1 => (s.clone(), 0..60_u8).prop_map(|(s, m)| Op::TouchSession(s, m)),
        3 => (s.clone(), c.clone(), 0..3_i64, proptest::option::of(any::<u8>()))
            .prop_map(|(s, c, position, draft)| Op::PutChat { s, c, position, draft }),
        1 => c.clone().prop_map(Op::DeleteChat),
        1 => (c.clone(), proptest::option::of(any::<u8>())).prop_map(|(c, d)| Op::SetDraft(c, d)),
        6 => (c.clone(), t.clone(), any::<u8>(), 0..60_u8)
            .prop_map(|(c, t, body, modified)| Op::AppendTurn { c, t, body, modified }),
        1 => (c.clone(), proptest::option::of(t.clone())).prop_map(|(c, k)| Op::Truncate(c, k)),
        2 => (c.clone(), 0..2_usize, proptest::option::of(t.clone()), any::<u8>())
            .prop_map(|(c, f, anchor, message)| Op::RecordFailed { c, f, anchor, message }),
        2 => (
            prop_oneof![s.clone().prop_map(Owner::Session), c.clone().prop_map(Owner::Chat)],
            0..3_u8,
            proptest::option::of(any::<u8>()),
        )
            .prop_map(|(owner, key, value)| Op::SetMeta(owner, key, value)),
        2 => (c.clone(), 0..TURNS + 2, proptest::option::of(any::<u8>()))
            .prop_map(|(c, d, value)| Op::SetDelegation(c, d, value)),
        1 => any::<u32>().prop_map(Op::Raise),
    ]
}

/// What the store should hold.
#[derive(Debug, Default)]
struct Model {
    sessions: BTreeMap<String, SessionRecord>,
    chats: BTreeMap<String, ChatRecord>,
    turns: BTreeMap<String, Vec<TurnRecord>>,
    failed: BTreeMap<String, Vec<FailedTurnRecord>>,
    delegations: BTreeMap<String, Vec<DelegationRecord>>,
    /// (scope, uri, key) → value.
    meta: BTreeMap<(&'static str, String, String), String>,
    high_water: u64,
}

/// Replaces the entry with the same key in place, or appends.
fn upsert<T>(list: &mut Vec<T>, item: T, same: impl Fn(&T) -> bool) {
    match list.iter_mut().find(|existing| same(existing)) {
        Some(existing) => *existing = item,
        None => list.push(item),
    }
}

impl Model {
    fn remove_chat(&mut self, uri: &str) -> bool {
        let existed = self.chats.remove(uri).is_some();
        if !existed {
            return false;
        }
        self.turns.remove(uri);
        self.failed.remove(uri);
        self.delegations.remove(uri);
        self.meta
            .retain(|(scope, owner, _), _| !(*scope == "chat" && owner == uri));
        for session in self.sessions.values_mut() {
            if session.default_chat.as_ref().map(|c| c.as_str()) == Some(uri) {
                session.default_chat = None;
            }
        }
        true
    }

    /// Applies `op`; `Ok` when the store must succeed.
    fn apply(&mut self, op: &Op) -> Result<(), ()> {
        match op {
            Op::PutSession {
                s,
                title,
                modified,
                read,
                default_chat,
            } => {
                let record = SessionRecord {
                    title: format!("title {title}"),
                    title_source: TitleSource::Generated,
                    modified_at: time(*modified),
                    read: *read,
                    default_chat: default_chat.map(|c| chat_uri(&c_name(c))),
                    ..session(&s_name(*s))
                };
                self.sessions.insert(record.uri.to_string(), record);
            }
            Op::DeleteSession(s) => {
                let uri = session_uri(&s_name(*s)).to_string();
                self.sessions.remove(&uri);
                let owned: Vec<String> = self
                    .chats
                    .values()
                    .filter(|chat| chat.session.as_str() == uri)
                    .map(|chat| chat.uri.to_string())
                    .collect();
                for chat in owned {
                    self.remove_chat(&chat);
                }
                self.meta
                    .retain(|(scope, owner, _), _| !(*scope == "session" && *owner == uri));
            }
            Op::TouchSession(s, modified) => {
                let uri = session_uri(&s_name(*s)).to_string();
                self.sessions.get_mut(&uri).ok_or(())?.modified_at = time(*modified);
            }
            Op::PutChat {
                s,
                c,
                position,
                draft,
            } => {
                let record = ChatRecord {
                    draft: draft.map(|d| message(&format!("draft {d}"))),
                    ..chat(&s_name(*s), &c_name(*c), *position)
                };
                if !self.sessions.contains_key(record.session.as_str()) {
                    return Err(());
                }
                self.chats.insert(record.uri.to_string(), record);
            }
            Op::DeleteChat(c) => {
                self.remove_chat(chat_uri(&c_name(*c)).as_str());
            }
            Op::SetDraft(c, draft) => {
                let chat = self
                    .chats
                    .get_mut(chat_uri(&c_name(*c)).as_str())
                    .ok_or(())?;
                chat.draft = draft.map(|d| message(&format!("draft {d}")));
            }
            Op::AppendTurn {
                c,
                t,
                body,
                modified,
            } => {
                let uri = chat_uri(&c_name(*c)).to_string();
                let chat = self.chats.get_mut(&uri).ok_or(())?;
                let modified = time(*modified);
                chat.modified_at = chat.modified_at.clone().max(modified.clone());
                let session = self.sessions.get_mut(chat.session.as_str()).ok_or(())?;
                session.modified_at = session.modified_at.clone().max(modified);
                let record = TurnRecord::new(turn_with(&t_name(*t), &format!("body {body}")));
                let id = record.turn.id.clone();
                upsert(self.turns.entry(uri).or_default(), record, |r| {
                    r.turn.id == id
                });
            }
            Op::Truncate(c, keep) => {
                let uri = chat_uri(&c_name(*c)).to_string();
                if !self.chats.contains_key(&uri) {
                    return Err(());
                }
                let turns = self.turns.entry(uri.clone()).or_default();
                let kept = match keep {
                    None => 0,
                    Some(t) => {
                        let id = t_name(*t);
                        turns.iter().position(|r| r.turn.id == id).ok_or(())? + 1
                    }
                };
                // Failed turns anchored at the kept turn or later go (all of them for `None`).
                let anchors: Vec<String> = turns[kept.saturating_sub(1)..]
                    .iter()
                    .map(|r| r.turn.id.clone())
                    .collect();
                let mut gone: Vec<String> = turns.drain(kept..).map(|r| r.turn.id).collect();
                let failed = self.failed.entry(uri.clone()).or_default();
                failed.retain(|f| {
                    let goes = keep.is_none()
                        || f.anchor_turn_id
                            .as_ref()
                            .is_some_and(|a| anchors.contains(a));
                    if goes {
                        gone.push(f.turn_id.clone());
                    }
                    !goes
                });
                self.delegations
                    .entry(uri)
                    .or_default()
                    .retain(|d| !gone.contains(&d.turn_id));
            }
            Op::RecordFailed {
                c,
                f,
                anchor,
                message,
            } => {
                let uri = chat_uri(&c_name(*c)).to_string();
                if !self.chats.contains_key(&uri) {
                    return Err(());
                }
                let anchor = anchor.map(t_name);
                if let Some(anchor) = &anchor {
                    let turns = self.turns.get(&uri).map(Vec::as_slice).unwrap_or_default();
                    if !turns.iter().any(|r| &r.turn.id == anchor) {
                        return Err(());
                    }
                }
                let record = FailedTurnRecord {
                    turn_id: format!("f{f}"),
                    anchor_turn_id: anchor,
                    error: error_info(&format!("error {message}")),
                    recorded_at: T1.to_owned(),
                };
                let id = record.turn_id.clone();
                upsert(self.failed.entry(uri).or_default(), record, |r| {
                    r.turn_id == id
                });
            }
            Op::SetMeta(owner, key, value) => {
                let (scope, uri, exists) = match owner {
                    Owner::Session(s) => {
                        let uri = session_uri(&s_name(*s)).to_string();
                        let exists = self.sessions.contains_key(&uri);
                        ("session", uri, exists)
                    }
                    Owner::Chat(c) => {
                        let uri = chat_uri(&c_name(*c)).to_string();
                        let exists = self.chats.contains_key(&uri);
                        ("chat", uri, exists)
                    }
                };
                let key = (scope, uri, format!("k{key}"));
                match value {
                    None => {
                        self.meta.remove(&key);
                    }
                    Some(_) if !exists => return Err(()),
                    Some(value) => {
                        self.meta.insert(key, format!("v{value}"));
                    }
                }
            }
            Op::SetDelegation(c, d, value) => {
                let uri = chat_uri(&c_name(*c)).to_string();
                let id = d_name(*d);
                match value {
                    None => {
                        if let Some(list) = self.delegations.get_mut(&uri) {
                            list.retain(|r| r.turn_id != id);
                        }
                    }
                    Some(_) if !self.chats.contains_key(&uri) => return Err(()),
                    Some(value) => {
                        let record = DelegationRecord {
                            turn_id: id.clone(),
                            value: json!({ "v": value }),
                        };
                        upsert(self.delegations.entry(uri).or_default(), record, |r| {
                            r.turn_id == id
                        });
                    }
                }
            }
            Op::Raise(seq) => self.high_water = self.high_water.max(u64::from(*seq)),
        }
        Ok(())
    }
}

/// Runs `op` on the store; `Ok` when it succeeded.
fn run(store: &Store, op: &Op) -> Result<(), crate::StoreError> {
    let owner_uris = |owner: &Owner| match owner {
        Owner::Session(s) => (Some(session_uri(&s_name(*s))), None),
        Owner::Chat(c) => (None, Some(chat_uri(&c_name(*c)))),
    };
    match op {
        Op::PutSession {
            s,
            title,
            modified,
            read,
            default_chat,
        } => store.put_session(&SessionRecord {
            title: format!("title {title}"),
            title_source: TitleSource::Generated,
            modified_at: time(*modified),
            read: *read,
            default_chat: default_chat.map(|c| chat_uri(&c_name(c))),
            ..session(&s_name(*s))
        }),
        Op::DeleteSession(s) => store.delete_session(&session_uri(&s_name(*s))).map(drop),
        Op::TouchSession(s, modified) => {
            store.touch_session(&session_uri(&s_name(*s)), &time(*modified))
        }
        Op::PutChat {
            s,
            c,
            position,
            draft,
        } => store.put_chat(&ChatRecord {
            draft: draft.map(|d| message(&format!("draft {d}"))),
            ..chat(&s_name(*s), &c_name(*c), *position)
        }),
        Op::DeleteChat(c) => store.delete_chat(&chat_uri(&c_name(*c))).map(drop),
        Op::SetDraft(c, draft) => store.set_draft(
            &chat_uri(&c_name(*c)),
            draft.map(|d| message(&format!("draft {d}"))).as_ref(),
        ),
        Op::AppendTurn {
            c,
            t,
            body,
            modified,
        } => store.append_turn(
            &chat_uri(&c_name(*c)),
            &TurnRecord::new(turn_with(&t_name(*t), &format!("body {body}"))),
            &time(*modified),
        ),
        Op::Truncate(c, keep) => store
            .truncate_turns(&chat_uri(&c_name(*c)), keep.map(t_name).as_deref())
            .map(drop),
        Op::RecordFailed {
            c,
            f,
            anchor,
            message,
        } => store.record_failed_turn(
            &chat_uri(&c_name(*c)),
            &FailedTurnRecord {
                turn_id: format!("f{f}"),
                anchor_turn_id: anchor.map(t_name),
                error: error_info(&format!("error {message}")),
                recorded_at: T1.to_owned(),
            },
        ),
        Op::SetMeta(owner, key, value) => {
            let (session, chat) = owner_uris(owner);
            let owner = match (&session, &chat) {
                (Some(session), _) => MetaOwner::Session(session),
                (_, Some(chat)) => MetaOwner::Chat(chat),
                (None, None) => unreachable!(),
            };
            let value = value.map(|v| format!("v{v}"));
            store.set_meta(owner, &format!("k{key}"), value.as_deref())
        }
        Op::SetDelegation(c, d, value) => store.set_delegation(
            &chat_uri(&c_name(*c)),
            &d_name(*d),
            value.map(|v| json!({ "v": v })).as_ref(),
        ),
        Op::Raise(seq) => store.raise_server_seq_high_water(u64::from(*seq)).map(drop),
    }
}

/// Asserts that `store` holds exactly the model's data.
fn assert_matches(store: &Store, model: &Model) -> Result<(), TestCaseError> {
    let mut sessions: Vec<SessionRecord> = model.sessions.values().cloned().collect();
    sessions.sort_by(|a, b| {
        b.modified_at
            .cmp(&a.modified_at)
            .then_with(|| a.uri.cmp(&b.uri))
    });
    prop_assert_eq!(store.sessions().unwrap(), sessions);
    for s in 0..SESSIONS {
        let uri = session_uri(&s_name(s));
        let mut chats: Vec<ChatRecord> = model
            .chats
            .values()
            .filter(|chat| chat.session == uri)
            .cloned()
            .collect();
        chats.sort_by(|a, b| a.position.cmp(&b.position).then_with(|| a.uri.cmp(&b.uri)));
        prop_assert_eq!(store.chats(&uri).unwrap(), chats);
        let entries: Vec<(String, String)> = model
            .meta
            .iter()
            .filter(|((scope, owner, _), _)| *scope == "session" && *owner == uri.as_str())
            .map(|((_, _, key), value)| (key.clone(), value.clone()))
            .collect();
        prop_assert_eq!(
            store.meta_entries(MetaOwner::Session(&uri)).unwrap(),
            entries
        );
    }
    for c in 0..CHATS {
        let uri = chat_uri(&c_name(c));
        let key = uri.to_string();
        let turns = model.turns.get(&key).cloned().unwrap_or_default();
        prop_assert_eq!(store.turn_count(&uri).unwrap(), turns.len() as u64);
        prop_assert_eq!(store.turns(&uri).unwrap(), turns);
        let failed = model.failed.get(&key).cloned().unwrap_or_default();
        prop_assert_eq!(store.failed_turns(&uri).unwrap(), failed);
        let delegations = model.delegations.get(&key).cloned().unwrap_or_default();
        prop_assert_eq!(store.delegations(&uri).unwrap(), delegations);
        let entries: Vec<(String, String)> = model
            .meta
            .iter()
            .filter(|((scope, owner, _), _)| *scope == "chat" && *owner == key)
            .map(|((_, _, key), value)| (key.clone(), value.clone()))
            .collect();
        prop_assert_eq!(store.meta_entries(MetaOwner::Chat(&uri)).unwrap(), entries);
    }
    prop_assert_eq!(store.server_seq_high_water().unwrap(), model.high_water);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_writes_read_back_the_same_after_a_reopen(
        ops in proptest::collection::vec(op(), 1..60)
    ) {
        let (_dir, path) = temp_db();
        let mut model = Model::default();
        {
            let store = Store::open(&path).unwrap();
            for op in &ops {
                let expected = model.apply(op);
                let actual = run(&store, op);
                prop_assert_eq!(
                    actual.is_ok(),
                    expected.is_ok(),
                    "{:?}: store said {:?}",
                    op,
                    actual
                );
            }
            assert_matches(&store, &model)?;
        }
        let store = Store::open(&path).unwrap();
        assert_matches(&store, &model)?;
        store.integrity_check().unwrap();
    }
}
