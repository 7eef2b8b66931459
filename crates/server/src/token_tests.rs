use super::*;

#[test]
fn empty_token_is_rejected() {
    assert!(matches!(Token::new(String::new()), Err(TokenError::Empty)));
}

#[test]
fn user_token_is_kept_verbatim() {
    let token = Token::new("abc-123".to_owned()).unwrap();
    assert_eq!(token.as_str(), "abc-123");
}

#[test]
fn generated_tokens_are_url_safe_long_and_distinct() {
    let a = Token::generate().unwrap();
    let b = Token::generate().unwrap();
    assert_ne!(a, b);
    // 256 bits in base64 = 43 characters of 6 bits each (≥ 128 bits required).
    assert_eq!(a.as_str().len(), 43);
    assert!(
        a.as_str()
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    );
    assert_eq!(a.percent_encoded(), a.as_str());
}

#[test]
fn debug_output_is_redacted() {
    let token = Token::new("secret-value".to_owned()).unwrap();
    let debug = format!("{token:?}");
    assert!(!debug.contains("secret"), "{debug}");
}

#[test]
fn percent_encoding_escapes_reserved_and_non_ascii_bytes() {
    let token = Token::new("a b+c/é~".to_owned()).unwrap();
    assert_eq!(token.percent_encoded(), "a%20b%2Bc%2F%C3%A9~");
}

#[test]
fn matches_is_exact() {
    let token = Token::new("abc".to_owned()).unwrap();
    assert!(token.matches(b"abc"));
    assert!(!token.matches(b"abd"));
    assert!(!token.matches(b"ab"));
    assert!(!token.matches(b"abcd"));
    assert!(!token.matches(b""));
}
