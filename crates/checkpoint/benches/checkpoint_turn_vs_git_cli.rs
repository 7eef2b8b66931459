//! `checkpoint_turn_vs_git_cli`: one full checkpointed turn on a generated 20 000-file
//! repository — turn-start capture, 10 tracked files modified and 5 untracked files created,
//! turn-end capture, two commits, one ref — through this crate (repository already open, file
//! watcher already running), against the git-CLI plumbing sequence of the reference
//! implementation for the same turn (per capture `status`, `read-tree`, `add`, `write-tree`;
//! then `commit-tree` ×2 and `update-ref`; process start-up included), in the same run, each on
//! its own identical repository. ratio = git-CLI time / our time (goal 10).
//!
//! Also printed: `checkpoint_capture_vs_git_status` (one capture after 15 changed files vs one
//! `git status --porcelain`; goal 0.67), the same for a capture that scans everything
//! (`checkpoint_capture_full_scan_vs_git_status`), and how many files a second capture with no
//! change rehashes (`checkpoint_rehashed_files_unchanged`, goal 0; `…_full_scan` for the scan).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use agenthost_checkpoint::{CheckpointConfig, Checkpointer, MemoryLedger};
use agenthost_protocol::{ChatUri, SafeId, SessionUri};

const DIRS: usize = 200;
const FILES_PER_DIR: usize = 100;
const MODIFIED: usize = 10;
const CREATED: usize = 5;
const WARMUP: usize = 3;
const ROUNDS: usize = 15;
const TURN_GOAL: f64 = 10.0;
const CAPTURE_GOAL: f64 = 0.67;

struct Fixture {
    dir: tempfile::TempDir,
    home: PathBuf,
}

impl Fixture {
    fn git(&self) -> Command {
        let mut command = Command::new("git");
        command
            .current_dir(self.dir.path())
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "Bench")
            .env("GIT_AUTHOR_EMAIL", "bench@example.com")
            .env("GIT_COMMITTER_NAME", "Bench")
            .env("GIT_COMMITTER_EMAIL", "bench@example.com");
        command
    }

    fn run(&self, command: &mut Command) -> String {
        let output = command.output().unwrap();
        assert!(
            output.status.success(),
            "{command:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// A committed repository of `DIRS × FILES_PER_DIR` small files with a fresh index.
fn generate(home: &Path) -> Fixture {
    let fixture = Fixture {
        dir: tempfile::tempdir().unwrap(),
        home: home.to_owned(),
    };
    fixture.run(fixture.git().args(["init", "-q", "-b", "main"]));
    for d in 0..DIRS {
        let dir = fixture.path().join(format!("pkg{:03}/src", d));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..FILES_PER_DIR {
            let content = format!("// file {d}/{f}\npub fn f{f}() -> usize {{ {d} + {f} }}\n");
            std::fs::write(dir.join(format!("m{f:03}.rs")), content).unwrap();
        }
    }
    std::fs::write(fixture.path().join(".gitignore"), "target/\n").unwrap();
    fixture.run(fixture.git().args(["add", "-A"]));
    fixture.run(fixture.git().args(["commit", "-q", "-m", "generated"]));
    // Let the racy window pass, then let git refresh and rewrite the index: a clean checkout.
    std::thread::sleep(Duration::from_millis(1100));
    fixture.run(fixture.git().args(["status", "--porcelain"]));
    fixture
}

/// The turn's edits: 10 tracked files modified, 5 untracked files created (names unique per turn).
fn edit(root: &Path, turn: usize) {
    for i in 0..MODIFIED {
        let d = (turn * MODIFIED + i) % DIRS;
        let path = root.join(format!(
            "pkg{d:03}/src/m{:03}.rs",
            (turn + i) % FILES_PER_DIR
        ));
        std::fs::write(path, format!("// edited in turn {turn}\npub fn g() {{}}\n")).unwrap();
    }
    for i in 0..CREATED {
        let path = root.join(format!("pkg{:03}/src/new_{turn}_{i}.rs", (turn + i) % DIRS));
        std::fs::write(path, format!("// created in turn {turn}\n")).unwrap();
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// Our turn through the blocking engine (what the async service runs on its blocking pool).
fn our_turn(
    core: &Checkpointer,
    session: &SessionUri,
    chat: &ChatUri,
    dirs: &[PathBuf],
    turn: usize,
) {
    let cancel = AtomicBool::new(false);
    let id = format!("turn-{turn}");
    core.capture_turn_start(session, chat, &id, dirs, &cancel);
    edit(&dirs[0], turn);
    let written = core.capture_turn_end(session, chat, &id, dirs, &cancel);
    assert!(
        matches!(written, Ok(Some(_))),
        "turn {turn} wrote no checkpoint: {written:?}"
    );
}

/// The reference implementation's capture: status, then a temporary index seeded from HEAD,
/// the changed paths added, the tree written.
fn git_capture(fixture: &Fixture, index: &Path) -> String {
    let status =
        fixture.run(
            fixture
                .git()
                .args(["status", "--porcelain", "-z", "--untracked-files=all"]),
        );
    let mut paths = Vec::new();
    let mut records = status.split('\0').filter(|record| !record.is_empty());
    while let Some(record) = records.next() {
        let (code, path) = record.split_at(3);
        paths.push(path.to_owned());
        if (code.starts_with('R') || code.starts_with('C'))
            && let Some(source) = records.next()
        {
            paths.push(source.to_owned());
        }
    }
    fixture.run(
        fixture
            .git()
            .env("GIT_INDEX_FILE", index)
            .args(["read-tree", "HEAD"]),
    );
    if !paths.is_empty() {
        fixture.run(
            fixture
                .git()
                .env("GIT_INDEX_FILE", index)
                .args(["add", "-A", "--"])
                .args(&paths),
        );
    }
    fixture
        .run(
            fixture
                .git()
                .env("GIT_INDEX_FILE", index)
                .args(["write-tree"]),
        )
        .trim()
        .to_owned()
}

fn git_turn(fixture: &Fixture, index: &Path, parent: &mut String, turn: usize) {
    let start_tree = git_capture(fixture, index);
    edit(fixture.path(), turn);
    let end_tree = git_capture(fixture, index);
    let start = fixture
        .run(
            fixture
                .git()
                .args(["commit-tree", &start_tree, "-p", parent, "-m", "turn start"]),
        )
        .trim()
        .to_owned();
    let end = fixture
        .run(
            fixture
                .git()
                .args(["commit-tree", &end_tree, "-p", &start, "-m", "turn"]),
        )
        .trim()
        .to_owned();
    fixture.run(fixture.git().args([
        "update-ref",
        &format!("refs/agents/bench/checkpoints/turn/{turn}"),
        &end,
    ]));
    *parent = end;
}

fn main() {
    let home = tempfile::tempdir().unwrap();
    let ours = generate(home.path());
    let theirs = generate(home.path());

    // Our side: the service's engine, repository opened and watcher running before timing.
    let config = CheckpointConfig::default();
    let core = Checkpointer::new(config.clone(), Arc::new(MemoryLedger::new()));
    let session = SessionUri::canonical(SafeId::new("bench-session").unwrap());
    let chat = ChatUri::default_for(&session);
    let dirs = vec![ours.path().to_owned()];
    core.capture_baseline(&session, &dirs, &AtomicBool::new(false));

    // Their side: a baseline commit to chain from.
    let scratch = tempfile::tempdir().unwrap();
    let index = scratch.path().join("index");
    let baseline_tree = git_capture(&theirs, &index);
    let mut parent = theirs
        .run(
            theirs
                .git()
                .args(["commit-tree", &baseline_tree, "-m", "baseline"]),
        )
        .trim()
        .to_owned();

    let mut our_samples = Vec::new();
    let mut git_samples = Vec::new();
    for turn in 1..=WARMUP + ROUNDS {
        let started = Instant::now();
        our_turn(&core, &session, &chat, &dirs, turn);
        let ours_took = started.elapsed();
        let started = Instant::now();
        git_turn(&theirs, &index, &mut parent, turn);
        let git_took = started.elapsed();
        if turn > WARMUP {
            our_samples.push(ours_took);
            git_samples.push(git_took);
        }
    }
    let (our_turn_ms, git_turn_ms) = (ms(median(our_samples)), ms(median(git_samples)));
    println!(
        "bench checkpoint_turn_vs_git_cli: value={our_turn_ms:.2}ms anchor={git_turn_ms:.2}ms ratio={:.2}x goal={TURN_GOAL}x",
        git_turn_ms / our_turn_ms
    );

    // One capture after 15 changed files, against one `git status --porcelain`.
    let repo = core.repo(ours.path()).unwrap();
    let mut status_samples = Vec::new();
    let mut capture_samples = Vec::new();
    let mut full_samples = Vec::new();
    for round in 0..ROUNDS {
        let turn = 1000 + round;
        let started = Instant::now();
        theirs.run(theirs.git().args(["status", "--porcelain"]));
        status_samples.push(started.elapsed());

        edit(ours.path(), turn);
        let started = Instant::now();
        repo.capture_tree().unwrap();
        capture_samples.push(started.elapsed());

        edit(ours.path(), turn + 500);
        let started = Instant::now();
        repo.capture_tree_full_scan().unwrap();
        full_samples.push(started.elapsed());
    }
    let status_ms = ms(median(status_samples));
    let capture_ms = ms(median(capture_samples));
    let full_ms = ms(median(full_samples));
    println!(
        "bench checkpoint_capture_vs_git_status: value={capture_ms:.2}ms anchor={status_ms:.2}ms ratio={:.2}x goal={CAPTURE_GOAL}x",
        status_ms / capture_ms
    );
    println!(
        "bench checkpoint_capture_full_scan_vs_git_status: value={full_ms:.2}ms anchor={status_ms:.2}ms ratio={:.2}x goal={CAPTURE_GOAL}x",
        status_ms / full_ms
    );

    // A capture with no change since the previous one: how many files are read and hashed.
    repo.capture_tree().unwrap();
    let unchanged = repo.capture_tree().unwrap();
    println!(
        "bench checkpoint_rehashed_files_unchanged: value={}",
        unchanged.stats.files_hashed
    );
    // The same without the watcher, once the racy window of the last edits (2 s, compared in whole seconds) has passed.
    std::thread::sleep(Duration::from_millis(3500));
    repo.capture_tree_full_scan().unwrap();
    let unchanged = repo.capture_tree_full_scan().unwrap();
    println!(
        "bench checkpoint_rehashed_files_unchanged_full_scan: value={}",
        unchanged.stats.files_hashed
    );
}
