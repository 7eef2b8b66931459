#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use super::*;

struct Place {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    root: PathBuf,
}

/// `<tmp>/root/{a.txt, bin.dat, src/lib.rs, inner-link -> src, out-link -> ../secret.txt}` and
/// `<tmp>/secret.txt`, `<tmp>/rootsibling/x.txt`.
fn place() -> Place {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let root = base.join("root");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("a.txt"), "hello\n").unwrap();
    std::fs::write(root.join("bin.dat"), [0u8, 159, 146, 150]).unwrap();
    std::fs::write(root.join("src/lib.rs"), "fn f() {}\n").unwrap();
    std::fs::write(base.join("secret.txt"), "secret\n").unwrap();
    std::fs::create_dir(base.join("rootsibling")).unwrap();
    std::fs::write(base.join("rootsibling/x.txt"), "x\n").unwrap();
    std::os::unix::fs::symlink(root.join("src"), root.join("inner-link")).unwrap();
    std::os::unix::fs::symlink(base.join("secret.txt"), root.join("out-link")).unwrap();
    Place {
        _tmp: tmp,
        base,
        root,
    }
}

fn sandbox(p: &Place) -> Sandbox {
    Sandbox::new([p.root.clone()]).unwrap()
}

fn uri(path: &Path) -> String {
    path_to_file_uri(path).unwrap()
}

#[tokio::test]
async fn a_folder_lists_its_entries_without_links_that_leave_the_roots() {
    let p = place();
    let listed = list(uri(&p.root), sandbox(&p)).await.unwrap();
    let names: Vec<(String, String)> = listed
        .entries
        .into_iter()
        .map(|e| (e.name, e.r#type))
        .collect();
    assert_eq!(
        names,
        [
            ("a.txt".to_owned(), "file".to_owned()),
            ("bin.dat".to_owned(), "file".to_owned()),
            ("inner-link".to_owned(), "directory".to_owned()),
            ("src".to_owned(), "directory".to_owned()),
        ]
    );
}

#[tokio::test]
async fn reads_give_text_as_utf8_and_bytes_as_base64() {
    let p = place();
    let roots = sandbox(&p);
    let text = read(uri(&p.root.join("a.txt")), None, roots.clone())
        .await
        .unwrap();
    assert_eq!(
        (text.data.as_str(), text.encoding),
        ("hello\n", ContentEncoding::Utf8)
    );
    let bytes = read(uri(&p.root.join("bin.dat")), None, roots.clone())
        .await
        .unwrap();
    assert_eq!(bytes.encoding, ContentEncoding::Base64);
    assert_eq!(bytes.data, "AJ+Slg==");
    let through_link = read(uri(&p.root.join("inner-link/lib.rs")), None, roots.clone())
        .await
        .unwrap();
    assert_eq!(through_link.data, "fn f() {}\n");
    let resolved = resolve(uri(&p.root.join("inner-link")), None, roots.clone())
        .await
        .unwrap();
    assert_eq!(resolved.r#type, ResourceType::Directory);
    assert_eq!(resolved.uri, uri(&p.root.join("src")));
    let link = resolve(uri(&p.root.join("inner-link")), Some(false), roots)
        .await
        .unwrap();
    assert_eq!(link.r#type, ResourceType::Symlink);
}

/// Outside the roots — directly, by `..`, by a link, by a look-alike sibling — is always
/// "permission denied", whether or not the path exists; inside, a missing path is "not found".
#[tokio::test]
async fn nothing_outside_the_roots_is_read_resolved_or_listed() {
    let p = place();
    let roots = sandbox(&p);
    for outside in [
        uri(&p.base.join("secret.txt")),
        uri(&p.root.join("out-link")),
        format!("{}/../secret.txt", uri(&p.root)),
        uri(&p.base.join("rootsibling/x.txt")),
        uri(&p.base.join("no-such-file")),
        uri(&p.base),
        "file:///etc/passwd".to_owned(),
    ] {
        let error = read(outside.clone(), None, roots.clone())
            .await
            .unwrap_err();
        assert_eq!(error.code, -32009, "{outside}: {error:?}");
        assert!(!error.message.contains("secret\n"));
        let error = resolve(outside.clone(), None, roots.clone())
            .await
            .unwrap_err();
        assert_eq!(error.code, -32009, "{outside}");
        let error = list(outside.clone(), roots.clone()).await.unwrap_err();
        assert_eq!(error.code, -32009, "{outside}");
    }
    let missing = read(uri(&p.root.join("missing.txt")), None, roots.clone())
        .await
        .unwrap_err();
    assert_eq!(missing.code, -32008);
    let other = read("https://example.com/a".to_owned(), None, roots)
        .await
        .unwrap_err();
    assert_eq!(other.code, -32602);
}

#[tokio::test]
async fn a_named_pipe_is_listed_as_one_and_never_read() {
    let p = place();
    let fifo = p.root.join("pipe");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let listed = list(uri(&p.root), sandbox(&p)).await.unwrap();
    let pipe = listed.entries.iter().find(|e| e.name == "pipe").unwrap();
    assert_eq!(pipe.r#type, "fifo");
    // No writer ever comes: a blocking open would never return. The paused clock is not used,
    // the read returns at once or the test hangs (the suite's own timeout catches that).
    let error = read(uri(&fifo), None, sandbox(&p)).await.unwrap_err();
    assert!(
        error.message.contains("not a regular file"),
        "{}",
        error.message
    );
    let resolved = resolve(uri(&fifo), None, sandbox(&p)).await.unwrap();
    assert_eq!(resolved.r#type, ResourceType::Unknown("fifo".to_owned()));
}

#[tokio::test]
async fn errors_quote_a_huge_uri_briefly() {
    let p = place();
    let huge = format!("{}/{}", uri(&p.root), "x".repeat(100_000));
    for answer in [
        read(huge.clone(), None, sandbox(&p)).await.err(),
        list(huge.clone(), sandbox(&p)).await.err(),
        resolve(huge.clone(), Some(false), sandbox(&p)).await.err(),
        read(format!("http://{}", "y".repeat(100_000)), None, sandbox(&p))
            .await
            .err(),
    ] {
        let error = answer.unwrap();
        assert!(error.message.len() < 400, "{} bytes", error.message.len());
    }
}
