use tokio_tungstenite::tungstenite::http::Request;

use super::*;

fn token() -> Credentials {
    Credentials::new(crate::token::Token::new("s3cr3t_T0ken-x".to_owned()).unwrap())
}

fn is_authorized(request: &Request<()>, credentials: &Credentials) -> bool {
    request_grant(request, credentials).is_some()
}

fn request(target: &str, authorization: Option<&str>) -> Request<()> {
    let mut builder = Request::builder().uri(target);
    if let Some(value) = authorization {
        builder = builder.header("Authorization", value);
    }
    builder.body(()).unwrap()
}

#[test]
fn constant_time_eq_compares_exactly() {
    assert!(constant_time_eq(b"", b""));
    assert!(constant_time_eq(b"abc", b"abc"));
    assert!(!constant_time_eq(b"abc", b"abx"));
    assert!(!constant_time_eq(b"abc", b"xbc"));
    assert!(!constant_time_eq(b"abc", b"ab"));
    assert!(!constant_time_eq(b"abc", b"abcd"));
    assert!(!constant_time_eq(b"abc", b""));
    // A prefix padded with NULs must not match (the loop pads with 0).
    assert!(!constant_time_eq(b"ab\0", b"ab"));
}

#[test]
fn percent_decode_handles_escapes_and_rejects_broken_ones() {
    assert_eq!(percent_decode("abc").unwrap(), b"abc");
    assert_eq!(percent_decode("a%20b%2Bc%2f").unwrap(), b"a b+c/");
    assert_eq!(percent_decode("a+b").unwrap(), b"a+b");
    assert_eq!(percent_decode("%C3%A9").unwrap(), "é".as_bytes());
    assert_eq!(percent_decode("%4"), None);
    assert_eq!(percent_decode("%zz"), None);
    assert_eq!(percent_decode("abc%"), None);
}

#[test]
fn query_tokens_picks_the_exact_name_among_other_parameters() {
    assert!(query_tokens(None).is_empty());
    assert_eq!(query_tokens(Some("tkn=abc")), vec![b"abc".to_vec()]);
    assert_eq!(
        query_tokens(Some("folder=x&tkn=a%2Db&y")),
        vec![b"a-b".to_vec()]
    );
    assert!(query_tokens(Some("TKN=abc")).is_empty());
    assert!(query_tokens(Some("tkn")).is_empty());
    assert!(query_tokens(Some("xtkn=abc&tkn_=abc")).is_empty());
    assert_eq!(query_tokens(Some("tkn=")), vec![Vec::<u8>::new()]);
}

#[test]
fn bearer_token_parses_the_scheme_case_insensitively() {
    assert_eq!(bearer_token("Bearer abc"), Some("abc"));
    assert_eq!(bearer_token("bearer   abc "), Some("abc"));
    assert_eq!(bearer_token("BEARER abc"), Some("abc"));
    assert_eq!(bearer_token("Basic abc"), None);
    assert_eq!(bearer_token("Bearer"), None);
    assert_eq!(bearer_token("Bearer "), None);
    assert_eq!(bearer_token(""), None);
}

#[test]
fn authorization_by_query_or_header() {
    let token = token();
    assert!(is_authorized(
        &request("/?tkn=s3cr3t_T0ken-x", None),
        &token
    ));
    assert!(is_authorized(
        &request("/some/path?a=1&tkn=s3cr3t_T0ken-x&b=2", None),
        &token
    ));
    assert!(is_authorized(
        &request("/", Some("Bearer s3cr3t_T0ken-x")),
        &token
    ));
    // Percent-encoded token in the query.
    assert!(is_authorized(
        &request("/?tkn=s3cr3t%5FT0ken%2Dx", None),
        &token
    ));
}

#[test]
fn missing_wrong_empty_or_misnamed_tokens_are_refused() {
    let token = token();
    assert!(!is_authorized(&request("/", None), &token));
    assert!(!is_authorized(&request("/?tkn=", None), &token));
    assert!(!is_authorized(&request("/?tkn=wrong", None), &token));
    assert!(!is_authorized(
        &request("/?TKN=s3cr3t_T0ken-x", None),
        &token
    ));
    assert!(!is_authorized(&request("/", Some("Bearer wrong")), &token));
    assert!(!is_authorized(
        &request("/", Some("Basic s3cr3t_T0ken-x")),
        &token
    ));
    // The token as the path is not the token as a query parameter.
    assert!(!is_authorized(&request("/s3cr3t_T0ken-x", None), &token));
}
