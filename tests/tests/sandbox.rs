//! The sandbox, as a property of the whole host (issue 23): whatever sequence of
//! path-carrying client actions a token holder sends — `session/workingDirectorySet`,
//! `session/workingDirectoryReplaced`, `chat/workingDirectorySet`, with URIs spelled plainly,
//! through `..`, percent-encoded dots, symbolic links pointing out, a look-alike sibling, another
//! session's worktree or not a local path at all — the session's state, its stored record and
//! the directory its agent actually works in stay inside the allowed set: the host's root plus
//! the session's own linked worktree. Each action is accepted exactly when the path it names
//! resolves, on disk, to a folder inside that set; after the sequence the agent's `writeFile`
//! lands there and nowhere else.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};

use agenthost_protocol::uri::{file_uri_to_path, path_to_file_uri};
use agenthost_protocol::{ChatUri, SafeId, SessionUri};
use ahp::Client;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};
use support::{ScriptedHost, connect, dispatch, git};

/// Every turn writes `marker.txt` in the agent's working directory.
fn script() -> Value {
    json!({ "default": { "steps": [
        { "kind": "tool", "name": "write_file", "displayName": "Write file",
          "effect": { "kind": "writeFile", "path": "marker.txt", "content": "agent\n" } },
        { "kind": "say", "text": "Done." }
    ]}})
}

/// The folders a case names, by how they are spelled.
#[derive(Debug, Clone, Copy)]
enum Target {
    Root,
    Sub,
    Deep,
    DotDotInside,
    LinkIn,
    OwnWorktree,
    OwnWorktreeSub,
    Outside,
    DotDotOut,
    EncodedDotDotOut,
    LinkOut,
    Sibling,
    OtherWorktree,
    Missing,
    RemoteHost,
    NotAUri,
    Filesystem,
}

const TARGETS: [Target; 17] = [
    Target::Root,
    Target::Sub,
    Target::Deep,
    Target::DotDotInside,
    Target::LinkIn,
    Target::OwnWorktree,
    Target::OwnWorktreeSub,
    Target::Outside,
    Target::DotDotOut,
    Target::EncodedDotDotOut,
    Target::LinkOut,
    Target::Sibling,
    Target::OtherWorktree,
    Target::Missing,
    Target::RemoteHost,
    Target::NotAUri,
    Target::Filesystem,
];

/// `<base>/repo` (the root, a git repository), `<base>/outside`, `<base>/repo-sibling`, and
/// the worktrees isolated sessions get at `<base>/repo.worktrees/session-<id>`.
struct Tree {
    base: PathBuf,
    root: PathBuf,
}

impl Tree {
    fn uri(&self, target: Target, own: Option<&Path>) -> String {
        let root = path_to_file_uri(&self.root).unwrap();
        let own = own.map_or_else(
            || self.base.join("repo.worktrees/not-isolated"),
            Path::to_path_buf,
        );
        match target {
            Target::Root => root,
            Target::Sub => format!("{root}/sub"),
            Target::Deep => format!("{root}/sub/deep"),
            Target::DotDotInside => format!("{root}/sub/deep/.."),
            Target::LinkIn => format!("{root}/link-in"),
            Target::OwnWorktree => path_to_file_uri(&own).unwrap(),
            Target::OwnWorktreeSub => format!("{}/sub", path_to_file_uri(&own).unwrap()),
            Target::Outside => path_to_file_uri(&self.base.join("outside")).unwrap(),
            Target::DotDotOut => format!("{root}/../outside"),
            Target::EncodedDotDotOut => format!("{root}/%2E%2E/outside"),
            Target::LinkOut => format!("{root}/link-out"),
            Target::Sibling => path_to_file_uri(&self.base.join("repo-sibling")).unwrap(),
            Target::OtherWorktree => {
                path_to_file_uri(&self.base.join("repo.worktrees/session-other")).unwrap()
            }
            Target::Missing => format!("{root}/missing"),
            Target::RemoteHost => "file://elsewhere/tmp".to_owned(),
            Target::NotAUri => self.base.join("outside").display().to_string(),
            Target::Filesystem => "file:///".to_owned(),
        }
    }

    /// The canonical URI of the folder `uri` names when the host must accept it as a working
    /// directory of a session whose own worktree is `own`: it resolves, on disk, to a folder
    /// inside the root or that worktree.
    fn allowed(&self, uri: &str, own: Option<&Path>) -> Option<String> {
        let resolved = file_uri_to_path(uri).ok()?.canonicalize().ok()?;
        let inside =
            resolved.starts_with(&self.root) || own.is_some_and(|own| resolved.starts_with(own));
        (resolved.is_dir() && inside).then(|| path_to_file_uri(&resolved).unwrap())
    }
}

#[derive(Debug, Clone)]
enum Step {
    SessionSet(Target),
    SessionReplaced(Target),
    ChatSet(Target),
}

fn step() -> impl Strategy<Value = Step> {
    let target = (0..TARGETS.len()).prop_map(|i| TARGETS[i]);
    prop_oneof![
        target.clone().prop_map(Step::SessionSet),
        target.clone().prop_map(Step::SessionReplaced),
        target.prop_map(Step::ChatSet),
    ]
}

async fn session_state(client: &Client, session: &str) -> Value {
    let answer: Value = client
        .request("subscribe", json!({ "channel": session }))
        .await
        .unwrap();
    answer["snapshot"]["state"].clone()
}

async fn chat_state(client: &Client, chat: &str) -> Value {
    let answer: Value = client
        .request("subscribe", json!({ "channel": chat }))
        .await
        .unwrap();
    answer["snapshot"]["state"].clone()
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Every `marker.txt` under `dir`, not following links.
fn markers(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            found.extend(markers(&path));
        } else if entry.file_name() == "marker.txt" {
            found.push(path);
        }
    }
    found
}

/// One case: a session (isolated or not), `steps` applied in order, each checked against the
/// model, then a turn whose `writeFile` must land in the session's first working directory.
async fn run_case(
    client: &Client,
    events: &mut ahp::ClientEventStream,
    tree: &Tree,
    data: &Path,
    case: usize,
    isolated: bool,
    steps: &[Step],
) -> Result<(), TestCaseError> {
    let id = format!("case-{case}");
    let session = SessionUri::with_provider("scripted", SafeId::new(&id).unwrap()).unwrap();
    let chat = ChatUri::default_for(&session);
    let mut params = json!({
        "channel": session.as_str(), "provider": "scripted",
        "workingDirectories": [path_to_file_uri(&tree.root).unwrap()],
    });
    if isolated {
        params["config"] = json!({ "isolation": "worktree" });
    }
    let _: Value = client.request("createSession", params).await.unwrap();
    let own = isolated.then(|| tree.base.join(format!("repo.worktrees/session-{id}")));
    let own = own.as_deref();
    for step in steps {
        let before = strings(&session_state(client, session.as_str()).await["workingDirectories"]);
        let (channel, action, uri) = match step {
            Step::SessionSet(target) => {
                let uri = tree.uri(*target, own);
                let action = json!({ "type": "session/workingDirectorySet", "directory": uri });
                (session.as_str(), action, uri)
            }
            Step::SessionReplaced(target) => {
                let uri = tree.uri(*target, own);
                let action = json!({
                    "type": "session/workingDirectoryReplaced",
                    "directory": before.first().cloned().unwrap_or_default(), "replacement": uri,
                });
                (session.as_str(), action, uri)
            }
            Step::ChatSet(target) => {
                let uri = tree.uri(*target, own);
                let action = json!({ "type": "chat/workingDirectorySet", "directory": uri });
                (chat.as_str(), action, uri)
            }
        };
        dispatch(client, channel, action).await;
        let after = session_state(client, session.as_str()).await;
        let directories = strings(&after["workingDirectories"]);
        let chat_directories =
            strings(&chat_state(client, chat.as_str()).await["workingDirectories"]);
        for directory in directories.iter().chain(&chat_directories) {
            // What the state holds is the canonical folder that was checked.
            let canonical = tree.allowed(directory, own);
            prop_assert_eq!(
                canonical.as_deref(),
                Some(directory.as_str()),
                "{:?}: {} entered the state",
                step,
                directory
            );
        }
        match (tree.allowed(&uri, own), step) {
            (None, Step::ChatSet(_)) => {
                prop_assert!(
                    !chat_directories.contains(&uri),
                    "{step:?}: {uri} was applied"
                );
            }
            (None, _) => prop_assert_eq!(&directories, &before, "{:?}: {} was applied", step, uri),
            (Some(canonical), Step::SessionSet(_) | Step::SessionReplaced(_))
                if !before.contains(&canonical) && !before.is_empty() =>
            {
                prop_assert!(
                    directories.contains(&canonical),
                    "{step:?}: {uri} was refused: {directories:?}"
                );
            }
            _ => {}
        }
    }
    // The stored record agrees.
    let store = agenthost_store::Store::open(data.join("agenthost.db")).unwrap();
    if let Some(record) = store.session(&session).unwrap() {
        for directory in &record.working_directories {
            prop_assert!(
                tree.allowed(directory, own).is_some(),
                "{directory} was stored"
            );
        }
    }
    // The agent works where the state says, inside the allowed set.
    let first = strings(&session_state(client, session.as_str()).await["workingDirectories"])
        .first()
        .cloned();
    let turn = format!("t-{case}");
    dispatch(
        client,
        chat.as_str(),
        json!({
            "type": "chat/turnStarted", "turnId": turn, "startedAt": "2026-03-01T10:00:00.000Z",
            "message": { "text": "write", "origin": { "kind": "user" } }
        }),
    )
    .await;
    support::until(events, |e| {
        e.channel == chat.as_str()
            && matches!(
                e.action,
                agenthost_protocol::StateAction::ChatTurnComplete(_)
                    | agenthost_protocol::StateAction::ChatError(_)
            )
    })
    .await;
    let landed = markers(&tree.base);
    prop_assert_eq!(landed.len(), 1, "{:?}", landed);
    let marker = landed[0].canonicalize().unwrap();
    prop_assert!(
        marker.starts_with(&tree.root) || own.is_some_and(|own| marker.starts_with(own)),
        "the agent wrote {}",
        marker.display()
    );
    if let Some(first) = first {
        let expected = file_uri_to_path(&first).unwrap().canonicalize().unwrap();
        prop_assert_eq!(marker.parent().unwrap(), expected.as_path());
    }
    std::fs::remove_file(&landed[0]).unwrap();
    Ok(())
}

#[test]
fn path_carrying_actions_never_leave_the_allowed_set() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("repo");
    std::fs::create_dir_all(root.join("sub/deep")).unwrap();
    std::fs::write(root.join("sub/deep/keep.txt"), "tracked\n").unwrap();
    std::fs::create_dir_all(base.join("outside")).unwrap();
    std::fs::create_dir_all(base.join("repo-sibling")).unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("sub", root.join("link-in")).unwrap();
        std::os::unix::fs::symlink("../outside", root.join("link-out")).unwrap();
    }
    let _ = git(&root, &["init", "--quiet", "-b", "main"]);
    let _ = git(&root, &["add", "."]);
    let _ = git(&root, &["commit", "--quiet", "-m", "seed"]);
    let tree = Tree {
        base: base.clone(),
        root: root.clone(),
    };
    let (host, client, events) = runtime.block_on(async {
        let host = ScriptedHost::start_rooted(script(), root.clone()).await;
        let (client, events) = connect(&host.url, "prober").await;
        // Another session's worktree: a folder no case may name.
        let other = SessionUri::with_provider("scripted", SafeId::new("other").unwrap()).unwrap();
        let _: Value = client
            .request(
                "createSession",
                json!({
                    "channel": other.as_str(), "provider": "scripted",
                    "workingDirectories": [path_to_file_uri(&root).unwrap()],
                    "config": { "isolation": "worktree" },
                }),
            )
            .await
            .unwrap();
        (host, client, events)
    });
    assert!(base.join("repo.worktrees/session-other").is_dir());
    let events = std::sync::Mutex::new(events);
    let case = std::sync::atomic::AtomicUsize::new(0);
    let cases = if std::env::var_os("CI").is_some() {
        24
    } else {
        12
    };
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(
            &(any::<bool>(), proptest::collection::vec(step(), 1..5)),
            |(isolated, steps)| {
                let n = case.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let mut events = events.lock().unwrap();
                runtime.block_on(run_case(
                    &client,
                    &mut events,
                    &tree,
                    &host.dir.path().join("data"),
                    n,
                    isolated,
                    &steps,
                ))
            },
        )
        .unwrap();
}
