use std::net::SocketAddr;

use serde_json::Value;

use super::*;

fn scratch() -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    std::env::temp_dir().join(format!(
        "agenthost-discovery-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    ))
}

#[test]
fn an_entry_announces_the_endpoint_and_token_and_goes_when_dropped() {
    let user_data = scratch();
    let dir = entries_dir(&user_data);
    let token = Token::new("t0k-en_1".to_owned()).unwrap();
    let endpoint = SocketAddr::from(([127, 0, 0, 1], 8765));
    let entry = DiscoveryEntry::publish(&dir, endpoint, &token).unwrap();
    let path = entry.path().to_owned();
    assert!(path.starts_with(user_data.join("agent-host/local-endpoint/entries")));
    let text = std::fs::read_to_string(&path).unwrap();
    let value: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["version"], 2);
    assert_eq!(value["type"], "standalone");
    assert_eq!(value["pid"], std::process::id());
    assert_eq!(value["connectionToken"], "t0k-en_1");
    assert_eq!(value["protocolVersion"], ANNOUNCED_PROTOCOL_VERSION);
    assert_eq!(
        value["endpoint"],
        serde_json::json!({ "type": "tcp", "host": "127.0.0.1", "port": 8765 })
    );
    let instance = value["instanceId"].as_str().unwrap();
    assert_eq!(instance.len(), 36);
    let expected = file_name("standalone", std::process::id(), instance);
    assert_eq!(path.file_name().unwrap().to_str().unwrap(), expected);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the entry holds the token");
    }
    // A second host process's entry does not collide (fresh instance id).
    let other = DiscoveryEntry::publish(&dir, endpoint, &token).unwrap();
    assert_ne!(other.path(), path);
    drop(entry);
    assert!(!path.exists(), "removed on drop");
    drop(other);
    let _ = std::fs::remove_dir_all(&user_data);
}

#[test]
fn the_file_name_is_the_hex_sha256_of_type_pid_and_instance_joined_by_nul() {
    // printf 'standalone\042\0abc' | sha256sum
    assert_eq!(
        file_name("standalone", 42, "abc"),
        format!("{}.json", sha256_hex(b"standalone\x0042\x00abc"))
    );
    assert_eq!(
        sha256_hex(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}
