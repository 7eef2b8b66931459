//! Property test for the session service's root check (`check_directory`, through
//! `createSession`): a working directory is accepted exactly when the path its URI names,
//! resolved by the operating system, is a directory inside the host's root — whatever mix of
//! `..`, `.`, percent-encoded segments, symbolic links pointing out (relative, absolute,
//! dangling) and look-alike sibling directories (`root-sibling` next to `root`) the URI uses.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agenthost_dispatcher::{Dispatcher, ServiceRegistry};
use agenthost_protocol::ahp_types::state::AgentInfo;
use agenthost_protocol::commands::CreateSessionParams;
use agenthost_protocol::uri::{file_uri_to_path, path_to_file_uri};
use agenthost_service::{ServiceConfig, ServiceError, SessionService, root_state, state_for};
use agenthost_state::StateManager;
use agenthost_store::Store;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::json;

/// The tree every case runs against:
///
/// ```text
/// <tmp>/root/                      the host's only root
///        sub/deep/
///        file.txt
///        link-in -> sub            stays inside
///        link-out -> ../outside    leaves (relative)
///        abs-out -> <tmp>/outside  leaves (absolute)
///        sub/link-up -> ../..      leaves (to <tmp>)
///        dangling -> missing
///        secret-link -> ../outside/secret.txt
/// <tmp>/root-sibling/              shares the root's name as a string prefix
/// <tmp>/outside/secret.txt
/// ```
struct Tree {
    _dir: tempfile::TempDir,
    tmp: PathBuf,
    root: PathBuf,
    /// Canonical directories a session may work in.
    inside_dirs: Vec<PathBuf>,
}

#[cfg(unix)]
fn symlink(target: &str, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

impl Tree {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().canonicalize().unwrap();
        let root = tmp.join("root");
        std::fs::create_dir_all(root.join("sub/deep")).unwrap();
        std::fs::create_dir_all(tmp.join("root-sibling")).unwrap();
        std::fs::create_dir_all(tmp.join("outside")).unwrap();
        std::fs::write(root.join("file.txt"), "inside").unwrap();
        std::fs::write(tmp.join("outside/secret.txt"), "secret").unwrap();
        #[cfg(unix)]
        {
            symlink("sub", &root.join("link-in"));
            symlink("../outside", &root.join("link-out"));
            symlink(tmp.join("outside").to_str().unwrap(), &root.join("abs-out"));
            symlink("../..", &root.join("sub/link-up"));
            symlink("missing", &root.join("dangling"));
            symlink("../outside/secret.txt", &root.join("secret-link"));
        }
        let inside_dirs = vec![root.clone(), root.join("sub"), root.join("sub/deep")];
        Self {
            _dir: dir,
            tmp,
            root,
            inside_dirs,
        }
    }
}

/// Where a generated URI starts: the root, its parent, the file system root, a look-alike.
#[derive(Debug, Clone, Copy)]
enum Anchor {
    Root,
    Parent,
    FsRoot,
    Sibling,
}

/// One path segment as it appears in the URI (so `%2E%2E` decodes to `..`, `%2F` to `/`).
fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(vec![
            "sub", "deep", "..", ".", "link-in", "root", "sub", "deep", "..", "link-up",
        ])
        .prop_map(str::to_owned),
        4 => prop::sample::select(vec![
            "", "link-out", "abs-out", "dangling", "secret-link", "file.txt", "missing",
            "root-sibling", "outside", "secret.txt", "%2E%2E", "%2e%2E", "%2E", "..%2F..", "%2F",
            "sub%2F..%2F..", "root%2Dsibling", "r%6F%6Ft", "%00", "%zz",
        ])
        .prop_map(str::to_owned),
        1 => "[a-z.%]{1,4}",
    ]
}

fn uri_strategy() -> impl Strategy<Value = (Anchor, bool, Vec<String>, bool)> {
    (
        prop::sample::select(vec![
            Anchor::Root,
            Anchor::Root,
            Anchor::Parent,
            Anchor::FsRoot,
            Anchor::Sibling,
        ]),
        any::<bool>(),
        prop_oneof![
            prop::collection::vec(segment(), 0..6),
            // Walks that mostly stay inside, to exercise acceptance as much as refusal.
            prop::collection::vec(
                prop::sample::select(vec!["sub", "deep", "..", ".", "link-in", "link-up", "root"])
                    .prop_map(str::to_owned),
                0..6,
            ),
        ],
        any::<bool>(),
    )
}

fn build_uri(
    tree: &Tree,
    (anchor, localhost, segments, trailing): &(Anchor, bool, Vec<String>, bool),
) -> String {
    let base = match anchor {
        Anchor::Root => path_to_file_uri(&tree.root).unwrap(),
        Anchor::Parent => path_to_file_uri(&tree.tmp).unwrap(),
        Anchor::FsRoot => "file://".to_owned(),
        Anchor::Sibling => path_to_file_uri(&tree.tmp.join("root-sibling")).unwrap(),
    };
    let mut uri = if *localhost {
        base.replacen("file://", "file://localhost", 1)
    } else {
        base
    };
    for segment in segments {
        uri.push('/');
        uri.push_str(segment);
    }
    if *trailing {
        uri.push('/');
    }
    if uri == "file://" || uri == "file://localhost" {
        uri.push('/');
    }
    uri
}

/// What the operating system says `uri` names: its canonical path, if it decodes and exists.
fn resolved(uri: &str) -> Option<PathBuf> {
    file_uri_to_path(uri).ok()?.canonicalize().ok()
}

fn agent() -> AgentInfo {
    serde_json::from_value(json!({
        "provider": "scripted", "displayName": "scripted", "description": "test",
        "models": [{ "id": "m1", "provider": "scripted", "name": "M1" }]
    }))
    .unwrap()
}

fn service(root: &Path) -> (Arc<StateManager>, SessionService) {
    let store = Store::open_in_memory().unwrap();
    let state = state_for(&store, root_state(vec![agent()])).unwrap();
    let service = SessionService::new(
        Arc::clone(&state),
        Dispatcher::new(ServiceRegistry::new()),
        store,
        ServiceConfig {
            roots: vec![root.to_path_buf()],
            ..ServiceConfig::default()
        },
    )
    .unwrap();
    (state, service)
}

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: 256,
        failure_persistence: None,
        ..Config::default()
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

#[test]
fn working_directories_are_accepted_exactly_inside_the_root() {
    let tree = Tree::new();
    let (state, service) = service(&tree.root);
    let runtime = runtime();
    let counter = AtomicUsize::new(0);
    runner()
        .run(&uri_strategy(), |spec| {
            let uri = build_uri(&tree, &spec);
            let session = format!("scripted:/s{}", counter.fetch_add(1, Ordering::Relaxed));
            let params: CreateSessionParams = serde_json::from_value(json!({
                "channel": session, "workingDirectories": [uri],
            }))
            .unwrap();
            let created = runtime.block_on(service.create_session(params, "client"));
            let expected = resolved(&uri).filter(|path| tree.inside_dirs.contains(path));
            match (&created, &expected) {
                (Ok(_), Some(path)) => {
                    let stored = state.read(|h| {
                        h.session(&session)
                            .and_then(|s| s.working_directories.clone())
                    });
                    prop_assert_eq!(stored, Some(vec![path_to_file_uri(path).unwrap()]));
                }
                (Err(ServiceError::OutsideRoots(_) | ServiceError::InvalidUri(_)), None) => {}
                _ => prop_assert!(false, "{uri}: got {created:?}, resolves to {expected:?}"),
            }
            Ok(())
        })
        .unwrap();
}
