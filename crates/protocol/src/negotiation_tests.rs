use super::*;

fn offer(versions: &[&str]) -> Vec<String> {
    versions.iter().map(|v| (*v).to_owned()).collect()
}

fn chosen(versions: &[&str]) -> Option<(String, WireSurface)> {
    negotiate(&offer(versions))
        .unwrap()
        .map(|n| (n.as_str().to_owned(), n.surface()))
}

#[test]
fn spec_client_gets_1_0_0() {
    assert_eq!(
        chosen(&["1.0.0", "0.9.0"]),
        Some(("1.0.0".into(), WireSurface::V1_0))
    );
}

#[test]
fn vs_code_main_offer_gets_0_10_0() {
    assert_eq!(
        chosen(&["0.10.0", "0.9.0", "0.7.0", "0.6.0", "0.5.2", "0.5.1"]),
        Some(("0.10.0".into(), WireSurface::V0_9))
    );
}

#[test]
fn vs_code_1_140_offer_gets_0_9_0() {
    assert_eq!(
        chosen(&["0.9.0", "0.7.0", "0.6.0", "0.5.2", "0.5.1"]),
        Some(("0.9.0".into(), WireSurface::V0_9))
    );
}

#[test]
fn newer_minor_is_echoed() {
    assert_eq!(
        chosen(&["1.1.0"]),
        Some(("1.1.0".into(), WireSurface::V1_0))
    );
    assert_eq!(
        chosen(&["0.9.0", "1.3.2"]),
        Some(("1.3.2".into(), WireSurface::V1_0))
    );
}

#[test]
fn real_1_0_beats_nothing_and_ties_follow_client_order() {
    assert_eq!(chosen(&["0.10.0", "1.0.0"]).unwrap().0, "0.10.0");
    assert_eq!(chosen(&["1.0.0", "0.10.0"]).unwrap().0, "1.0.0");
}

#[test]
fn no_overlap_is_none() {
    assert_eq!(chosen(&["2.0.0"]), None);
    assert_eq!(chosen(&["0.8.0", "0.7.0"]), None);
    assert_eq!(chosen(&[]), None);
}

#[test]
fn malformed_version_is_an_error() {
    assert!(negotiate(&offer(&["1.0"])).is_err());
    assert!(negotiate(&offer(&["1.0.0", "latest"])).is_err());
    assert!(negotiate(&offer(&["01.0.0"])).is_err());
}

#[test]
fn from_version_accepts_what_negotiation_accepts() {
    assert_eq!(
        NegotiatedVersion::from_version("0.10.0").map(|v| v.surface()),
        Some(WireSurface::V0_9)
    );
    assert_eq!(NegotiatedVersion::from_version("2.0.0"), None);
    assert_eq!(NegotiatedVersion::from_version("junk"), None);
}

#[test]
fn advertised_versions_all_negotiate() {
    for version in SUPPORTED_VERSIONS {
        assert_eq!(chosen(&[version]).unwrap().0, version);
    }
}
