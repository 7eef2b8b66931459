use super::*;

const SOURCE: &str = r#"
pub fn free() -> Result<(), String> { Ok(()) }
pub fn typed() -> Result<(), std::io::Error> { Ok(()) }
pub(crate) fn internal() -> Result<(), String> { Ok(()) }
fn private() -> Result<(), String> { Ok(()) }
pub fn qualified() -> std::result::Result<u8, String> { Ok(1) }
pub struct Config;
impl Config {
    pub fn validate(&self) -> Result<(), String> { Ok(()) }
    fn helper(&self) -> Result<(), String> { Ok(()) }
}
impl std::str::FromStr for Config {
    type Err = String;
    fn from_str(_: &str) -> Result<Self, String> { Ok(Config) }
}
#[cfg(test)]
mod tests {
    pub fn in_tests() -> Result<(), String> { Ok(()) }
}
"#;

#[test]
fn public_functions_returning_a_string_error_are_found() {
    let found = string_errors("crates/a/src/lib.rs", SOURCE).unwrap();
    assert_eq!(
        found,
        [
            "crates/a/src/lib.rs::free",
            "crates/a/src/lib.rs::qualified",
            "crates/a/src/lib.rs::Config::validate",
        ]
    );
}

#[test]
fn a_pending_function_passes_until_it_is_typed_and_then_its_entry_is_stale() {
    let found = vec!["crates/a/src/lib.rs::free".to_owned()];
    let packages = ["crates/a".to_owned()];
    let pending = ["crates/a/src/lib.rs::free"];
    assert!(check_found(&found, &pending, &packages).is_empty());
    let violations = check_found(&found, &[], &packages);
    assert!(
        violations[0].contains("give it an error type"),
        "{violations:?}"
    );
    let violations = check_found(&[], &pending, &packages);
    assert!(violations[0].contains("remove the entry"), "{violations:?}");
    // Another workspace's entries are not checked.
    assert!(check_found(&[], &["crates/b/src/lib.rs::free"], &packages).is_empty());
}

#[test]
fn a_file_that_does_not_parse_is_reported_with_its_position() {
    let error = string_errors("crates/a/src/lib.rs", "pub fn (").unwrap_err();
    assert!(error.starts_with("crates/a/src/lib.rs:1:"), "{error}");
}
