use std::net::{IpAddr, Ipv4Addr};

use super::*;

fn loopback() -> OriginPolicy {
    OriginPolicy::new(IpAddr::V4(Ipv4Addr::LOCALHOST), &[])
}

#[test]
fn clients_without_an_origin_on_a_local_host_name_pass() {
    let policy = loopback();
    for host in [
        "127.0.0.1:4000",
        "localhost:4000",
        "LOCALHOST.:1",
        "[::1]:4000",
        "127.0.0.1:1",
        "localhost",
        "127.0.0.1",
    ] {
        assert_eq!(policy.check(None, Some(host)), Ok(()), "{host}");
    }
}

#[test]
fn a_rebinding_host_name_or_a_missing_host_is_refused() {
    let policy = loopback();
    for host in [
        Some("attacker.example:4000"),
        Some("localhost.attacker.example"),
        Some("192.168.1.10:4000"),
        Some(""),
        None,
    ] {
        assert_eq!(
            policy.check(None, host),
            Err(OriginRefusal::Host),
            "{host:?}"
        );
    }
}

#[test]
fn the_listen_address_is_a_host_and_every_ip_when_listening_everywhere() {
    let lan: IpAddr = "192.168.1.10".parse().unwrap();
    assert_eq!(
        OriginPolicy::new(lan, &[]).check(None, Some("192.168.1.10:4000")),
        Ok(())
    );
    let everywhere = OriginPolicy::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), &[]);
    assert_eq!(everywhere.check(None, Some("10.0.0.7:4000")), Ok(()));
    assert_eq!(
        everywhere.check(None, Some("rebound.example:4000")),
        Err(OriginRefusal::Host)
    );
}

#[test]
fn only_allowed_browser_origins_pass() {
    let policy = loopback();
    let host = Some("127.0.0.1:4000");
    assert_eq!(policy.check(Some("vscode-file://vscode-app"), host), Ok(()));
    for origin in ["https://attacker.example", "null", "http://localhost:3000"] {
        assert_eq!(
            policy.check(Some(origin), host),
            Err(OriginRefusal::Origin),
            "{origin}"
        );
    }
    let allowing = OriginPolicy::new(
        IpAddr::V4(Ipv4Addr::LOCALHOST),
        &["http://localhost:3000/".to_owned()],
    );
    assert_eq!(allowing.check(Some("HTTP://localhost:3000"), host), Ok(()));
}

#[test]
fn the_page_s_own_origin_is_allowed_and_a_rebinding_one_is_not() {
    let policy = loopback();
    for (origin, host) in [
        ("http://127.0.0.1:4000", "127.0.0.1:4000"),
        ("http://localhost:8123", "localhost:8123"),
        ("HTTP://LocalHost:8123/", "localhost:8123"),
        ("https://[::1]:4000", "[::1]:4000"),
    ] {
        assert_eq!(policy.check(Some(origin), Some(host)), Ok(()), "{origin}");
    }
    // Another port, another scheme, another host: not the page's own.
    for (origin, host) in [
        ("http://127.0.0.1:4001", "127.0.0.1:4000"),
        ("ftp://127.0.0.1:4000", "127.0.0.1:4000"),
        ("http://localhost:4000", "127.0.0.1:4000"),
        ("http://127.0.0.1:4000.evil", "127.0.0.1:4000"),
        ("null", "127.0.0.1:4000"),
    ] {
        assert_eq!(
            policy.check(Some(origin), Some(host)),
            Err(OriginRefusal::Origin),
            "{origin}"
        );
    }
    // A rebinding page's origin equals its Host, which the Host check refuses.
    assert_eq!(
        policy.check(
            Some("http://attacker.example:4000"),
            Some("attacker.example:4000")
        ),
        Err(OriginRefusal::Host)
    );
}
