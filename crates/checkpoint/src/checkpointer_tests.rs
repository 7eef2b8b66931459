#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use agenthost_protocol::{ChatUri, SafeId, SessionUri};

use super::*;
use crate::changeset::ChangeKind;
use crate::ledger::{CheckpointLedger, LedgerError, MemoryLedger};
use crate::testutil::{TempRepo, config};

struct Harness {
    core: Checkpointer,
    ledger: Arc<MemoryLedger>,
    session: SessionUri,
    chat: ChatUri,
    repo: TempRepo,
}

fn no_cancel() -> AtomicBool {
    AtomicBool::new(false)
}

impl Harness {
    fn new() -> Self {
        let repo = TempRepo::init();
        repo.write("a.txt", "a\n");
        repo.write("b.txt", "b\n");
        repo.write("dir/c.txt", "c\n");
        repo.write(".gitignore", "*.tmp\n");
        repo.commit_all("seed");
        let ledger = Arc::new(MemoryLedger::new());
        let session = SessionUri::with_provider("copilot", SafeId::new("sess-1").unwrap()).unwrap();
        Self {
            core: Checkpointer::new(config(true), ledger.clone()),
            ledger,
            chat: ChatUri::default_for(&session),
            session,
            repo,
        }
    }

    fn dirs(&self) -> Vec<PathBuf> {
        vec![self.repo.path().to_owned()]
    }

    fn baseline(&self) {
        self.core
            .capture_baseline(&self.session, &self.dirs(), &no_cancel());
    }

    fn start(&self, turn: &str) {
        self.core
            .capture_turn_start(&self.session, &self.chat, turn, &self.dirs(), &no_cancel());
    }

    fn end(&self, turn: &str) -> Option<String> {
        self.core
            .capture_turn_end(&self.session, &self.chat, turn, &self.dirs(), &no_cancel())
            .unwrap()
    }

    fn turn(&self, turn: &str, edit: impl FnOnce(&TempRepo)) -> Option<String> {
        self.start(turn);
        edit(&self.repo);
        self.end(turn)
    }

    fn refs(&self) -> Vec<String> {
        let out = self
            .repo
            .git(&["for-each-ref", "--format=%(refname)", "refs/agents/"]);
        out.lines().map(str::to_owned).collect()
    }

    fn changes(&self, turn: &str) -> Vec<(ChangeKind, String)> {
        self.core
            .turn_changeset(&self.session, turn, None)
            .unwrap()
            .unwrap()
            .into_iter()
            .map(|change| (change.kind, change.path))
            .collect()
    }
}

const BASE: &str = "refs/agents/sess-1/checkpoints/turn/0";
const T1: &str = "refs/agents/sess-1/checkpoints/turn/1";
const T2: &str = "refs/agents/sess-1/checkpoints/turn/2";

#[test]
fn baseline_is_parentless_and_idempotent() {
    let h = Harness::new();
    let index = h.repo.index_snapshot();
    h.baseline();
    let first = h.repo.git(&["rev-parse", BASE]);
    assert_eq!(h.repo.git(&["rev-list", "--count", BASE]), "1");
    assert_eq!(
        h.repo.git(&["rev-parse", &format!("{BASE}^{{tree}}")]),
        h.repo.git(&["rev-parse", "HEAD^{tree}"])
    );
    h.repo.write("a.txt", "changed before the second call\n");
    h.baseline();
    assert_eq!(
        h.repo.git(&["rev-parse", BASE]),
        first,
        "a baseline is never replaced"
    );
    assert_eq!(h.repo.index_snapshot(), index);
    assert_eq!(
        h.core.baseline(&h.session, None).unwrap().as_deref(),
        Some(BASE)
    );
}

#[test]
fn chain_shape_and_user_edits_between_turns_are_excluded() {
    let h = Harness::new();
    h.baseline();
    assert_eq!(
        h.turn("t1", |r| r.write("a.txt", "turn one\n")).as_deref(),
        Some(T1)
    );
    // The user edits between turns: lands in start2, not in turn 2's diff.
    h.repo.write("b.txt", "user edit\n");
    assert_eq!(
        h.turn("t2", |r| r.write("new.txt", "turn two\n"))
            .as_deref(),
        Some(T2)
    );

    // turn/0 ← start1 ← turn/1 ← start2 ← turn/2
    let log = h.repo.git(&["log", "--format=%s", T2]);
    assert_eq!(
        log.lines().collect::<Vec<_>>(),
        [
            "Agent host session sess-1 - turn 2",
            "Agent host session sess-1 - turn 2 start",
            "Agent host session sess-1 - turn 1",
            "Agent host session sess-1 - turn 1 start",
            "Agent host session sess-1 - baseline checkpoint",
        ]
    );
    assert_eq!(
        h.repo.git(&["rev-parse", &format!("{T2}~2")]),
        h.repo.git(&["rev-parse", T1])
    );
    assert_eq!(
        h.repo.git(&["rev-parse", &format!("{T1}~2")]),
        h.repo.git(&["rev-parse", BASE])
    );
    assert_eq!(
        h.changes("t1"),
        [(ChangeKind::Modified, "a.txt".to_owned())]
    );
    assert_eq!(h.changes("t2"), [(ChangeKind::Added, "new.txt".to_owned())]);

    let pair = h.core.turn_pair(&h.session, "t2", None).unwrap().unwrap();
    assert_eq!(pair.current, T2);
    assert_eq!(pair.parent, h.repo.git(&["rev-parse", &format!("{T2}^")]));
    assert_eq!(h.ledger.all_checkpoint_refs(&h.session).unwrap(), [T1, T2]);
}

#[test]
fn fixed_identity_no_reflog_no_user_config_needed() {
    let h = Harness::new();
    h.repo.git(&["config", "user.name", "Somebody Else"]);
    h.repo.git(&["config", "user.useConfigOnly", "true"]);
    h.repo.git(&["config", "core.logAllRefUpdates", "always"]);
    h.repo.git(&["config", "commit.gpgSign", "true"]);
    h.baseline();
    h.turn("t1", |r| r.write("a.txt", "x\n"));
    let commit = h.repo.git(&["cat-file", "-p", T1]);
    assert!(
        commit.contains("author Agent Host <agent-host@localhost> 1700000000 +0000"),
        "{commit}"
    );
    assert!(commit.contains("committer Agent Host <agent-host@localhost> 1700000000 +0000"));
    assert!(!commit.contains("gpgsig"));
    assert!(
        !h.repo.abs(".git/logs/refs/agents").exists(),
        "no reflog for checkpoint refs"
    );
    assert_eq!(
        h.repo.git(&["branch", "--list"]),
        "* main",
        "no branch appears"
    );
    assert_eq!(h.repo.git(&["tag", "--list"]), "");
}

#[test]
fn no_op_turn_writes_both_commits_and_an_empty_changeset() {
    let h = Harness::new();
    h.baseline();
    assert_eq!(h.turn("t1", |_| {}).as_deref(), Some(T1));
    assert_eq!(
        h.repo.git(&["rev-parse", &format!("{T1}^{{tree}}")]),
        h.repo.git(&["rev-parse", &format!("{T1}^^{{tree}}")])
    );
    assert!(h.changes("t1").is_empty());
}

#[test]
fn legacy_pair_with_equal_refs_is_empty_without_git() {
    let h = Harness::new();
    h.baseline();
    h.turn("t1", |r| r.write("a.txt", "1\n"));
    // The single-commit design recorded the parent's ref for a no-op turn.
    h.ledger
        .set_turn_checkpoint_ref(&h.session, "t2", T1)
        .unwrap();
    let pair = h.core.turn_pair(&h.session, "t2", None).unwrap().unwrap();
    assert!(pair.is_empty());
    assert_eq!(
        h.core.turn_changeset(&h.session, "t2", None).unwrap(),
        Some(Vec::new())
    );
}

#[test]
fn turn_start_creates_a_missing_baseline_from_the_pre_turn_tree() {
    let h = Harness::new();
    h.repo.write("a.txt", "dirty before the first turn\n");
    h.turn("t1", |r| r.write("b.txt", "turn\n"));
    assert_eq!(
        h.repo.git(&["rev-parse", &format!("{BASE}^{{tree}}")]),
        h.repo.git(&["rev-parse", &format!("{T1}^^{{tree}}")]),
        "baseline = the start tree"
    );
    assert_eq!(
        h.changes("t1"),
        [(ChangeKind::Modified, "b.txt".to_owned())]
    );
}

#[test]
fn overlapping_turns_get_no_ref() {
    let h = Harness::new();
    h.baseline();
    // Two chats of the session run a turn at once.
    let side = ChatUri::canonical(&SafeId::new("side").unwrap());
    h.start("t1");
    h.core
        .capture_turn_start(&h.session, &side, "t2", &h.dirs(), &no_cancel());
    h.repo.write("a.txt", "who did this?\n");
    assert_eq!(h.end("t1"), None);
    let t2 = h
        .core
        .capture_turn_end(&h.session, &side, "t2", &h.dirs(), &no_cancel())
        .unwrap();
    assert_eq!(t2, None);
    assert_eq!(h.refs(), [BASE]);
    // A later, non-overlapping turn works again.
    assert!(h.turn("t3", |r| r.write("b.txt", "3\n")).is_some());
}

/// The turn-end capture runs queued behind the turn end, so the chat's next turn (a queued
/// message, a quick user) can start before it: that turn has ended, it does not overlap, and
/// both turns get their refs. A turn of another chat still overlaps only the one running.
#[test]
fn the_next_turn_of_a_chat_starting_before_the_end_capture_overlaps_nothing() {
    let h = Harness::new();
    h.baseline();
    h.start("t1");
    h.repo.write("a.txt", "1\n");
    h.start("t2");
    assert_eq!(h.end("t1").as_deref(), Some(T1));
    h.repo.write("b.txt", "2\n");
    assert_eq!(h.end("t2").as_deref(), Some(T2));

    h.start("t3");
    h.start("t4");
    let side = ChatUri::canonical(&SafeId::new("side").unwrap());
    h.core
        .capture_turn_start(&h.session, &side, "s1", &h.dirs(), &no_cancel());
    let end_side = h
        .core
        .capture_turn_end(&h.session, &side, "s1", &h.dirs(), &no_cancel())
        .unwrap();
    assert_eq!(end_side, None, "overlapped t4");
    assert_eq!(h.end("t4"), None, "overlapped s1");
    assert!(h.end("t3").is_some(), "t3 had ended before s1 started");
}

/// Dates `lock` an hour back: a lock file a process that is gone left behind.
fn left_an_hour_ago(lock: &std::path::Path) {
    let an_hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(lock)
        .unwrap()
        .set_modified(an_hour_ago)
        .unwrap();
}

/// A host killed while it updated a checkpoint ref leaves the ref's lock file behind, and every
/// later capture of the session computes the same ref name: the restarted host removes a lock
/// older than itself instead of failing them all. A lock taken since it started is respected.
#[test]
fn a_ref_lock_left_by_a_killed_host_does_not_block_the_next_checkpoints() {
    let h = Harness::new();
    h.baseline();
    let lock = h.repo.path().join(".git").join(format!("{T1}.lock"));
    std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
    std::fs::write(&lock, "").unwrap();
    h.start("t1");
    let held = h
        .core
        .capture_turn_end(&h.session, &h.chat, "t1", &h.dirs(), &no_cancel());
    assert!(held.is_err(), "a live lock is not taken over: {held:?}");
    assert!(lock.exists());

    left_an_hour_ago(&lock);
    assert_eq!(
        h.turn("t2", |r| r.write("a.txt", "2\n")).as_deref(),
        Some(T1)
    );
    assert!(!lock.exists());
    assert_eq!(h.refs(), [BASE, T1]);
}

/// The same for `packed-refs.lock`, which every checkpoint ref update takes (refs are packed):
/// one left by a killed host is removed; without that no checkpoint of the repository would
/// ever be recorded again.
#[test]
fn a_packed_refs_lock_left_by_a_killed_host_does_not_block_the_next_checkpoints() {
    let h = Harness::new();
    h.baseline();
    let lock = h.repo.path().join(".git").join("packed-refs.lock");
    std::fs::write(&lock, "").unwrap();
    left_an_hour_ago(&lock);
    assert_eq!(
        h.turn("t1", |r| r.write("a.txt", "2\n")).as_deref(),
        Some(T1)
    );
    assert!(!lock.exists());
    assert_eq!(h.refs(), [BASE, T1]);
}

#[test]
fn discarded_and_idempotent_turns() {
    let h = Harness::new();
    h.baseline();
    h.start("t1");
    h.core.discard_turn_start(&h.session, &h.chat, "t1");
    assert_eq!(h.end("t1"), None, "a discarded start has nothing to end");
    h.start("t2");
    h.core.discard_chat_turn_starts(&h.session, &h.chat);
    assert_eq!(h.end("t2"), None);
    assert_eq!(
        h.turn("t3", |r| r.write("a.txt", "3\n")).as_deref(),
        Some(T1)
    );
    // Ending the same turn again changes nothing.
    h.start("t3");
    assert_eq!(h.end("t3"), None);
    assert_eq!(h.refs(), [BASE, T1]);
}

#[test]
fn truncation_recomputes_n_and_overwrites_the_ref() {
    let h = Harness::new();
    h.baseline();
    h.turn("t1", |r| r.write("a.txt", "1\n"));
    h.turn("t2", |r| r.write("a.txt", "2\n"));
    let old_t2 = h.repo.git(&["rev-parse", T2]);
    h.ledger.truncate_from(&h.session, "t2");
    assert_eq!(
        h.turn("t2b", |r| r.write("b.txt", "2b\n")).as_deref(),
        Some(T2)
    );
    assert_ne!(
        h.repo.git(&["rev-parse", T2]),
        old_t2,
        "the stale ref was overwritten"
    );
    assert_eq!(
        h.changes("t2b"),
        [(ChangeKind::Modified, "b.txt".to_owned())]
    );
    assert_eq!(
        h.repo.git(&["rev-parse", &format!("{T2}~2")]),
        h.repo.git(&["rev-parse", T1])
    );
}

#[test]
fn non_git_directories_are_skipped_and_two_repositories_share_n() {
    let h = Harness::new();
    let other = TempRepo::init();
    other.write("x.txt", "x\n");
    other.commit_all("other");
    let plain = tempfile::tempdir().unwrap();
    let dirs = vec![
        plain.path().to_owned(),
        h.repo.path().to_owned(),
        h.repo.abs("dir"),
        other.path().to_owned(),
    ];
    h.core.capture_baseline(&h.session, &dirs, &no_cancel());
    h.core
        .capture_turn_start(&h.session, &h.chat, "t1", &dirs, &no_cancel());
    h.repo.write("a.txt", "in one\n");
    other.write("x.txt", "in two\n");
    let name = h
        .core
        .capture_turn_end(&h.session, &h.chat, "t1", &dirs, &no_cancel())
        .unwrap();
    assert_eq!(name.as_deref(), Some(T1));
    for repo in [&h.repo, &other] {
        assert_eq!(repo.git(&["rev-list", "--count", T1]), "3");
    }
    let in_other = h
        .core
        .turn_changeset(&h.session, "t1", Some(other.path()))
        .unwrap()
        .unwrap();
    assert_eq!(in_other.len(), 1);
    assert_eq!(in_other[0].path, "x.txt");
    assert_eq!(
        h.core
            .baseline(&h.session, Some(plain.path()))
            .ok()
            .flatten(),
        None
    );
}

#[test]
fn compare_turns_and_baseline() {
    let h = Harness::new();
    h.baseline();
    h.turn("t1", |r| r.write("a.txt", "1\n"));
    h.turn("t2", |r| {
        r.write("b.txt", "2\n");
        r.remove("dir/c.txt");
    });
    let compare = |original, modified| -> Vec<(ChangeKind, String)> {
        h.core
            .compare_turns(&h.session, original, modified, None)
            .unwrap()
            .into_iter()
            .map(|change| (change.kind, change.path))
            .collect()
    };
    assert_eq!(
        compare(None, "t2"),
        [
            (ChangeKind::Modified, "a.txt".to_owned()),
            (ChangeKind::Modified, "b.txt".to_owned()),
            (ChangeKind::Deleted, "dir/c.txt".to_owned()),
        ]
    );
    assert_eq!(compare(Some("t1"), "t2").len(), 2);
    assert!(compare(Some("t2"), "t2").is_empty());
    assert!(matches!(
        h.core.compare_turns(&h.session, Some("nope"), "t2", None),
        Err(CheckpointError::NotGitBacked { .. })
    ));
}

#[test]
fn rollback_reverts_exactly_the_turns_paths() {
    let h = Harness::new();
    h.repo.write("untouched-untracked.txt", "keep\n");
    h.repo.write("scratch.tmp", "ignored, keep\n");
    h.baseline();
    h.turn("t1", |r| {
        r.write("a.txt", "modified by the turn\n");
        r.remove("b.txt");
        r.write("added/by/turn.txt", "new\n");
        std::fs::rename(r.abs("dir/c.txt"), r.abs("dir/renamed.txt")).unwrap();
        r.write("ignored-by-turn.tmp", "ignored, keep\n");
    });
    // After the turn, the user changes something else: it must survive the rollback.
    h.repo
        .write("untouched-untracked.txt", "user edit after the turn\n");
    let index = h.repo.index_snapshot();
    let head = h.repo.git(&["rev-parse", "HEAD"]);
    let report = h
        .core
        .rollback_turn(&h.session, "t1", h.repo.path())
        .unwrap();
    assert_eq!(h.repo.read("a.txt").as_deref(), Some("a\n"));
    assert_eq!(h.repo.read("b.txt").as_deref(), Some("b\n"));
    assert_eq!(h.repo.read("dir/c.txt").as_deref(), Some("c\n"));
    assert_eq!(h.repo.read("dir/renamed.txt"), None);
    assert_eq!(h.repo.read("added/by/turn.txt"), None);
    assert_eq!(
        h.repo.read("ignored-by-turn.tmp").as_deref(),
        Some("ignored, keep\n")
    );
    assert_eq!(
        h.repo.read("scratch.tmp").as_deref(),
        Some("ignored, keep\n")
    );
    assert_eq!(
        h.repo.read("untouched-untracked.txt").as_deref(),
        Some("user edit after the turn\n")
    );
    assert_eq!(report.restored, ["a.txt", "b.txt", "dir/c.txt"]);
    assert_eq!(report.removed, ["added/by/turn.txt", "dir/renamed.txt"]);
    assert!(report.changed_since.is_empty());
    assert_eq!(h.repo.index_snapshot(), index);
    assert_eq!(h.repo.git(&["rev-parse", "HEAD"]), head);
    // The work tree equals the turn's start tree again, apart from the user's later edit.
    h.repo.write("untouched-untracked.txt", "keep\n");
    assert_eq!(
        h.repo.oracle_tree(),
        h.repo.git(&["rev-parse", &format!("{T1}^^{{tree}}")])
    );
}

#[cfg(unix)]
#[test]
fn rollback_restores_modes_and_symlinks_and_reports_later_changes() {
    let h = Harness::new();
    h.repo.chmod("a.txt", 0o755);
    h.repo.symlink("a.txt", "link");
    h.repo.commit_all("modes");
    h.baseline();
    h.turn("t1", |r| {
        r.chmod("a.txt", 0o644);
        std::fs::remove_file(r.abs("link")).unwrap();
        r.write("link", "now a file\n");
        r.write("b.txt", "turn\n");
    });
    h.repo.write("b.txt", "changed again after the turn\n");
    let report = h
        .core
        .rollback_turn(&h.session, "t1", h.repo.path())
        .unwrap();
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(h.repo.abs("a.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111);
    assert_eq!(
        std::fs::read_link(h.repo.abs("link")).unwrap(),
        PathBuf::from("a.txt")
    );
    assert_eq!(h.repo.read("b.txt").as_deref(), Some("b\n"));
    assert_eq!(report.changed_since, ["b.txt"]);
}

#[test]
fn deletion_sweeps_recorded_missing_packed_and_leaked_refs() {
    let h = Harness::new();
    h.baseline();
    h.turn("t1", |r| r.write("a.txt", "1\n"));
    h.turn("t2", |r| r.write("a.txt", "2\n"));
    h.turn("t3", |r| r.write("a.txt", "3\n"));
    // A leaked ref of a truncated turn, no longer recorded.
    h.ledger.truncate_from(&h.session, "t3");
    // Some refs packed, one already gone.
    h.repo.git(&["pack-refs", "--all"]);
    h.repo.git(&["update-ref", "-d", T1]);
    // Another session's refs stay.
    let other = SessionUri::canonical(SafeId::new("sess-10").unwrap());
    h.core.capture_baseline(&other, &h.dirs(), &no_cancel());
    let deleted = h.core.delete_all(&h.session, &h.dirs());
    assert_eq!(deleted, 3, "baseline, turn 2 and the leaked turn 3");
    assert_eq!(h.refs(), ["refs/agents/sess-10/checkpoints/turn/0"]);
    // Deleting again is a no-op.
    assert_eq!(h.core.delete_all(&h.session, &h.dirs()), 0);
}

#[test]
fn linked_worktrees_share_the_refs() {
    let h = Harness::new();
    let linked = tempfile::tempdir().unwrap();
    let linked_path = linked.path().join("wt");
    h.repo.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "feature",
        linked_path.to_str().unwrap(),
    ]);
    let dirs = vec![linked_path.clone()];
    h.core.capture_baseline(&h.session, &dirs, &no_cancel());
    assert!(
        h.repo.git_ok(&["rev-parse", "--verify", BASE]),
        "visible from the main work tree"
    );
    let info = h.core.repo_info(&linked_path).unwrap();
    assert_eq!(info.branch.as_deref(), Some("feature"));
    assert!(info.is_linked_worktree);
}

#[test]
fn empty_session_id_is_refused_quietly() {
    // SessionUri forbids empty ids, so the namespace check is exercised directly.
    assert!(crate::refname::SessionNamespace::from_raw_id("").is_err());
}

#[test]
fn sha256_repositories_get_checkpoints() {
    let repo = TempRepo::init_with(&["--object-format=sha256"]);
    repo.write("a.txt", "a\n");
    repo.commit_all("seed");
    let ledger = Arc::new(MemoryLedger::new());
    let core = Checkpointer::new(config(true), ledger);
    let session = SessionUri::canonical(SafeId::new("s256").unwrap());
    let chat = ChatUri::default_for(&session);
    let dirs = vec![repo.path().to_owned()];
    core.capture_baseline(&session, &dirs, &no_cancel());
    core.capture_turn_start(&session, &chat, "t1", &dirs, &no_cancel());
    repo.write("a.txt", "b\n");
    let name = core
        .capture_turn_end(&session, &chat, "t1", &dirs, &no_cancel())
        .unwrap();
    assert_eq!(name.as_deref(), Some("refs/agents/s256/checkpoints/turn/1"));
    assert_eq!(
        repo.git(&["rev-parse", "refs/agents/s256/checkpoints/turn/1"])
            .len(),
        64
    );
    let changes = core.turn_changeset(&session, "t1", None).unwrap().unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!((changes[0].lines_added, changes[0].lines_removed), (1, 1));
}

/// A ledger that answers until told to fail (the session database went away mid-turn).
struct FlakyLedger {
    inner: MemoryLedger,
    failing: std::sync::atomic::AtomicBool,
}

impl FlakyLedger {
    fn check(&self) -> Result<(), LedgerError> {
        if self.failing.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(LedgerError::new("the session database is gone"));
        }
        Ok(())
    }
}

impl CheckpointLedger for FlakyLedger {
    fn ensure_turn(&self, session: &SessionUri, turn: &str) -> Result<(), LedgerError> {
        self.check()?;
        self.inner.ensure_turn(session, turn)
    }

    fn set_turn_checkpoint_ref(
        &self,
        session: &SessionUri,
        turn: &str,
        ref_name: &str,
    ) -> Result<(), LedgerError> {
        self.check()?;
        self.inner.set_turn_checkpoint_ref(session, turn, ref_name)
    }

    fn turn_checkpoint_ref(
        &self,
        session: &SessionUri,
        turn: &str,
    ) -> Result<Option<String>, LedgerError> {
        self.check()?;
        self.inner.turn_checkpoint_ref(session, turn)
    }

    fn previous_checkpoint_ref(
        &self,
        session: &SessionUri,
        turn: &str,
    ) -> Result<Option<String>, LedgerError> {
        self.check()?;
        self.inner.previous_checkpoint_ref(session, turn)
    }

    fn all_checkpoint_refs(&self, session: &SessionUri) -> Result<Vec<String>, LedgerError> {
        self.check()?;
        self.inner.all_checkpoint_refs(session)
    }
}

#[test]
fn a_failed_turn_end_capture_is_reported_to_the_caller() {
    let repo = TempRepo::init();
    repo.write("a.txt", "a\n");
    repo.commit_all("seed");
    let ledger = Arc::new(FlakyLedger {
        inner: MemoryLedger::new(),
        failing: AtomicBool::new(false),
    });
    let core = Checkpointer::new(config(true), ledger.clone());
    let session = SessionUri::with_provider("copilot", SafeId::new("flaky").unwrap()).unwrap();
    let chat = ChatUri::default_for(&session);
    let dirs = vec![repo.path().to_owned()];
    core.capture_baseline(&session, &dirs, &no_cancel());
    core.capture_turn_start(&session, &chat, "t1", &dirs, &no_cancel());
    repo.write("a.txt", "edited\n");
    ledger
        .failing
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let error = core
        .capture_turn_end(&session, &chat, "t1", &dirs, &no_cancel())
        .unwrap_err();
    assert!(
        error.to_string().contains("the session database is gone"),
        "{error}"
    );
    // Nothing to capture is not a failure: no remembered start for this turn.
    ledger
        .failing
        .store(false, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(
        core.capture_turn_end(&session, &chat, "t2", &dirs, &no_cancel())
            .unwrap(),
        None
    );
}

#[test]
fn checkpoint_refs_are_packed_not_loose() {
    let h = Harness::new();
    h.baseline();
    h.turn("t1", |repo| repo.write("a.txt", "edited\n"));
    h.turn("t2", |repo| repo.write("b.txt", "edited\n"));
    let loose = h.repo.dir.path().join(".git/refs/agents");
    let files = walk(&loose);
    assert!(files.is_empty(), "loose checkpoint refs: {files:?}");
    let packed = std::fs::read_to_string(h.repo.dir.path().join(".git/packed-refs")).unwrap();
    let refs = h.refs();
    assert!(refs.len() >= 3, "{refs:?}");
    for name in &refs {
        assert!(
            packed.contains(name.as_str()),
            "{name} is not in packed-refs:\n{packed}"
        );
    }
    // git itself reads them.
    assert_eq!(h.repo.git(&["rev-list", "--count", BASE]), "1");
}

/// Every file under `dir` (none when it does not exist).
fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
