//! Ref-name sanitizing of `agenthost_checkpoint`: session ids → `refs/agents/<sid>/checkpoints/
//! turn/<N>` (`sanitize_session_id`, `session_ref_component`, `SessionNamespace`) and worktree
//! names → `refs/heads/agents/<name>` (`validate_worktree_name`). Never panics, and every id
//! (any non-empty string) gives one valid ref component inside its own namespace: accepted by
//! the crate's `validate_ref_name` and, independently, by gix's validator.
#![no_main]

use agenthost_checkpoint::{
    REF_ROOT, SessionNamespace, WORKTREE_BRANCH_PREFIX, sanitize_session_id, session_ref_component,
    turn_number, validate_ref_name, validate_worktree_name,
};
use agenthost_protocol::{SafeId, SessionUri};
use gix::bstr::ByteSlice;
use libfuzzer_sys::fuzz_target;

fn gix_valid(name: &str) -> bool {
    gix::validate::reference::name(name.as_bytes().as_bstr()).is_ok()
}

fn is_ref_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')
}

fuzz_target!(|data: &[u8]| {
    let raw = String::from_utf8_lossy(data);
    let raw = raw.as_ref();
    // A turn number from the input too, so large ones are covered.
    let mut bytes = [0u8; 8];
    for (slot, byte) in bytes.iter_mut().zip(data.iter().rev()) {
        *slot = *byte;
    }
    let n = u64::from_le_bytes(bytes);

    let sanitized = sanitize_session_id(raw);
    assert_eq!(
        sanitized.chars().count(),
        raw.chars().count(),
        "one for one"
    );
    assert!(sanitized.chars().all(is_ref_char), "{sanitized:?}");

    let component = session_ref_component(raw);
    assert_eq!(component, session_ref_component(raw), "deterministic");
    assert!(component.chars().all(is_ref_char), "{component:?}");
    assert!(
        validate_ref_name(&component).is_ok(),
        "{raw:?} → {component:?}"
    );

    match SessionNamespace::from_raw_id(raw) {
        Err(error) => assert!(raw.is_empty(), "{raw:?} refused: {error}"),
        Ok(namespace) => {
            assert_eq!(namespace.raw_id(), raw);
            assert_eq!(namespace.sanitized_id(), component);
            let prefix = namespace.prefix();
            assert_eq!(prefix, format!("{REF_ROOT}{component}/checkpoints/"));
            // `from_raw_id` checked turn 0 and the prefix; a turn number from the input too.
            for turn in [0, n] {
                let name = namespace.turn_ref(turn).expect("every turn ref is valid");
                assert!(namespace.owns(&name), "{name}");
                assert_eq!(turn_number(&name), Some(turn), "{name}");
                assert_eq!(validate_ref_name(&name), Ok(()), "{name}");
                assert!(gix_valid(&name), "gix refuses {name}");
                let rest = name.strip_prefix(REF_ROOT).expect("under refs/agents/");
                assert_eq!(
                    rest.split('/').count(),
                    4,
                    "{name}: one component for the id"
                );
            }
            // Another id's namespace never overlaps this one.
            let other = format!("{raw}/");
            let other = SessionNamespace::from_raw_id(&other).expect("a non-empty id");
            if other.sanitized_id() != namespace.sanitized_id() {
                let theirs = other.turn_ref(n).expect("every turn ref is valid");
                assert!(!namespace.owns(&theirs), "{prefix} owns {theirs}");
            }
        }
    }

    // What the host calls: the namespace of a session URI (its id is a `SafeId`).
    if let Ok(id) = SafeId::new(raw) {
        let session = SessionUri::canonical(id);
        let namespace = SessionNamespace::for_session(&session).expect("a valid session id");
        assert_eq!(namespace.sanitized_id(), component);
    }

    if validate_worktree_name(raw).is_ok() {
        let branch = format!("refs/heads/{WORKTREE_BRANCH_PREFIX}{raw}");
        assert_eq!(validate_ref_name(&branch), Ok(()), "{branch}");
        assert!(gix_valid(&branch), "{branch}");
        assert!(!raw.contains('/') && raw != "." && raw != "..", "{raw:?}");
    }
});
