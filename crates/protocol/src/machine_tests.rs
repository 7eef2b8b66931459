#![allow(clippy::unwrap_used)]

use super::*;

fn linux() -> MachineFacts {
    MachineFacts {
        os: "linux".into(),
        arch: "x86_64".into(),
        cpu_count: Some(2),
        memory_bytes: Some(25_769_803_776),
        proxy_env: BTreeMap::from([
            (
                "HTTPS_PROXY".to_owned(),
                "http://alice:s3cret@proxy.example:3128/".to_owned(),
            ),
            ("no_proxy".to_owned(), "localhost,127.0.0.1".to_owned()),
            ("ALL_PROXY".to_owned(), "bob@socks:1080".to_owned()),
        ]),
    }
}

#[test]
fn the_root_meta_offers_delegation_and_the_machines_resources() {
    let meta = Value::Object(root_meta(&linux()));
    assert_eq!(
        meta,
        json!({ "vscode.remoteSessions": true,
                "vscode.agentHost.resources": { "platform": "linux", "architecture": "x64",
                                                "cpuCount": 2, "memoryBytes": 25_769_803_776u64 } })
    );
    assert!(meta.get("vscode.agentHost").is_none() && meta.get("hostBuild").is_none());
    let unknown = MachineFacts {
        os: "freebsd".into(),
        ..MachineFacts::default()
    };
    assert_eq!(
        Value::Object(root_meta(&unknown))["vscode.agentHost.resources"],
        json!({}),
        "what is unknown is left out, never guessed"
    );
}

#[test]
fn network_diagnostics_carry_no_credentials() {
    let info = network_diagnostics(&linux());
    assert_eq!(info["os"], "linux");
    assert_eq!(info["arch"], "x64");
    assert_eq!(info["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(info["proxySettings"], json!({}));
    assert_eq!(info["endpoints"], json!([]));
    assert_eq!(
        info["proxyEnv"]["HTTPS_PROXY"],
        "http://proxy.example:3128/"
    );
    assert_eq!(info["proxyEnv"]["no_proxy"], "localhost,127.0.0.1");
    assert_eq!(info["proxyEnv"]["ALL_PROXY"], "socks:1080");
    assert!(!info.to_string().contains("s3cret") && !info.to_string().contains("alice"));
    assert_eq!(managed_settings_diagnostics(), json!([]));
}
