use super::*;
use crate::script::{AppendFile, ReadFile, WriteFile};

fn write(path: &str, content: &str) -> Effect {
    Effect::WriteFile(WriteFile {
        path: path.into(),
        content: content.into(),
    })
}

fn read(path: &str) -> Effect {
    Effect::ReadFile(ReadFile { path: path.into() })
}

#[test]
fn relative_paths_are_normalised_and_escapes_refused() {
    assert_eq!(
        relative_inside("a/./b/../c.txt"),
        Ok(PathBuf::from("a/c.txt"))
    );
    for escaping in ["../x", "a/../../x", "/etc/x", "", ".", "a/.."] {
        let error = relative_inside(escaping).unwrap_err();
        assert_eq!(error.code, OUTSIDE_WORKING_DIRECTORY, "{escaping}");
        assert!(error.message.starts_with(&format!("refused `{escaping}`")));
    }
    assert_eq!(
        relative_inside("/etc/x").unwrap_err().message,
        "refused `/etc/x`: absolute paths are not allowed; use a path relative to the working directory"
    );
}

#[tokio::test]
async fn writes_create_parents_and_reads_return_the_text() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        perform(dir.path(), &write("notes/today/a.txt", "hi")).await,
        Ok(EffectOutput::Wrote { bytes: 2 })
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes/today/a.txt")).unwrap(),
        "hi"
    );
    assert_eq!(
        perform(dir.path(), &read("notes/./today/a.txt")).await,
        Ok(EffectOutput::Read { text: "hi".into() })
    );
    assert_eq!(
        perform(dir.path(), &Effect::None).await,
        Ok(EffectOutput::Nothing)
    );
}

#[tokio::test]
async fn a_missing_file_is_an_io_error_and_reading_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let error = perform(dir.path(), &read("sub/missing.txt"))
        .await
        .unwrap_err();
    assert_eq!(error.code, IO_ERROR);
    assert!(
        error.message.starts_with("`sub/missing.txt`: "),
        "{}",
        error.message
    );
    assert!(!dir.path().join("sub").exists());
}

#[tokio::test]
async fn escapes_never_touch_the_disk() {
    let outer = tempfile::tempdir().unwrap();
    let work = outer.path().join("work");
    std::fs::create_dir(&work).unwrap();
    for path in ["../x", "/etc/x", "a/../../x"] {
        let error = perform(&work, &write(path, "no")).await.unwrap_err();
        assert_eq!(error.code, OUTSIDE_WORKING_DIRECTORY);
    }
    assert!(!outer.path().join("x").exists());
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0);
}

#[cfg(unix)]
#[tokio::test]
async fn symbolic_links_leading_outside_are_refused() {
    let outer = tempfile::tempdir().unwrap();
    let work = outer.path().join("work");
    let elsewhere = outer.path().join("elsewhere");
    std::fs::create_dir(&work).unwrap();
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(&elsewhere, work.join("link")).unwrap();
    std::os::unix::fs::symlink(elsewhere.join("secret.txt"), work.join("secret.txt")).unwrap();

    let error = perform(&work, &write("link/new.txt", "x"))
        .await
        .unwrap_err();
    assert_eq!(error.code, OUTSIDE_WORKING_DIRECTORY);
    assert!(!elsewhere.join("new.txt").exists());
    let error = perform(&work, &write("secret.txt", "x")).await.unwrap_err();
    assert_eq!(error.code, OUTSIDE_WORKING_DIRECTORY);
    let error = perform(&work, &read("link/secret.txt")).await.unwrap_err();
    assert_eq!(error.code, OUTSIDE_WORKING_DIRECTORY);
    assert_eq!(
        std::fs::read_to_string(elsewhere.join("secret.txt")).unwrap(),
        "secret"
    );

    // A link that stays inside is followed.
    std::fs::create_dir(work.join("real")).unwrap();
    std::os::unix::fs::symlink(work.join("real"), work.join("alias")).unwrap();
    assert!(perform(&work, &write("alias/ok.txt", "ok")).await.is_ok());
    assert_eq!(
        std::fs::read_to_string(work.join("real/ok.txt")).unwrap(),
        "ok"
    );
}

#[tokio::test]
async fn appends_add_to_the_file_and_concurrent_appends_share_new_parents() {
    let dir = tempfile::tempdir().unwrap();
    let append = |content: String| {
        Effect::AppendFile(AppendFile {
            path: "log/deep/effects.log".into(),
            content,
        })
    };
    let runs = (0..16).map(|n| {
        let effect = append(format!("line {n:02}\n"));
        let dir = dir.path().to_owned();
        tokio::spawn(async move { perform(&dir, &effect).await })
    });
    for run in futures::future::join_all(runs).await {
        assert_eq!(run.unwrap(), Ok(EffectOutput::Appended { bytes: 8 }));
    }
    let text = std::fs::read_to_string(dir.path().join("log/deep/effects.log")).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    let mut expected: Vec<String> = (0..16).map(|n| format!("line {n:02}")).collect();
    expected.sort_unstable();
    assert_eq!(lines, expected);
    assert_eq!(
        perform(
            dir.path(),
            &Effect::AppendFile(AppendFile {
                path: "../out.log".into(),
                content: "x".into(),
            })
        )
        .await
        .unwrap_err()
        .code,
        OUTSIDE_WORKING_DIRECTORY
    );
}

#[test]
fn tool_input_json_is_canonical_whatever_order_the_build_keeps() {
    let value = serde_json::json!({ "path": "a", "content": "c", "nested": { "z": 1, "b": [ { "y": 2, "x": 1 } ] } });
    assert_eq!(
        canonical(&value),
        r#"{"content":"c","nested":{"b":[{"x":1,"y":2}],"z":1},"path":"a"}"#
    );
}
