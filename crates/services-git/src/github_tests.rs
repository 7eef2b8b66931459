#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::sync::Mutex;
use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;

/// A temporary repository on `branch` with `origin` at `remote`, made by the git CLI with an
/// isolated configuration.
struct TempRepo {
    dir: tempfile::TempDir,
    home: tempfile::TempDir,
}

impl TempRepo {
    fn new(branch: &str, remote: Option<&str>) -> Self {
        let repo = Self {
            dir: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        };
        repo.git(&["init", "-q", "-b", branch]);
        if let Some(remote) = remote {
            repo.git(&["remote", "add", "origin", remote]);
        }
        repo
    }

    fn git(&self, args: &[&str]) {
        let output = Command::new("git")
            .current_dir(self.dir.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .args(args)
            .output()
            .unwrap();
        assert!(output.status.success(), "git {args:?}: {output:?}");
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

#[derive(Clone)]
enum Reply {
    Respond(u16, String),
    /// Accept the connection and never answer.
    Hang,
}

/// A loopback HTTP server that records each request's head and answers every one the same.
struct MockGitHub {
    base_url: String,
    requests: Arc<Mutex<Vec<String>>>,
}

impl MockGitHub {
    async fn start(reply: Reply) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = requests.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                let recorded = recorded.clone();
                let reply = reply.clone();
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    recorded
                        .lock()
                        .unwrap()
                        .push(String::from_utf8_lossy(&head).into_owned());
                    match reply {
                        Reply::Respond(status, body) => {
                            let response = format!(
                                "HTTP/1.1 {status} Mock\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                                body.len()
                            );
                            let _ = stream.write_all(response.as_bytes()).await;
                            let _ = stream.shutdown().await;
                        }
                        Reply::Hang => {
                            std::future::pending::<()>().await;
                        }
                    }
                });
            }
        });
        Self { base_url, requests }
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }

    fn state(&self, token: Option<&str>) -> GitHubGitState {
        GitHubGitState::new(GitHubConfig {
            base_url: format!("{}/", self.base_url),
            token: token.map(str::to_owned),
            timeout: Duration::from_millis(500),
            user_agent: "agenthost-test".into(),
            ..GitHubConfig::default()
        })
    }
}

const REMOTE: &str = "git@github.com:org/project.git";

fn pulls_json() -> String {
    serde_json::json!([
        {
            "number": 42,
            "html_url": "https://github.com/org/project/pull/42",
            "state": "open",
            "title": "Add the thing",
            "merged_at": null
        },
        {
            "number": 7,
            "html_url": "https://github.com/org/project/pull/7",
            "state": "closed",
            "title": "Older",
            "merged_at": null
        }
    ])
    .to_string()
}

fn header_lines(request: &str) -> Vec<String> {
    request.lines().map(str::to_ascii_lowercase).collect()
}

#[tokio::test]
async fn the_branch_pull_request_is_found() {
    let repo = TempRepo::new("feature/x", Some(REMOTE));
    let server = MockGitHub::start(Reply::Respond(200, pulls_json())).await;

    let reference = server.state(None).reference(repo.path()).await.unwrap();

    assert_eq!(
        reference,
        RepositoryReference {
            root: std::fs::canonicalize(repo.path()).unwrap(),
            remote: Some(REMOTE.into()),
            branch: Some("feature/x".into()),
            pull_request: Some(PullRequest {
                number: 42,
                url: "https://github.com/org/project/pull/42".into(),
                state: "open".into(),
                title: "Add the thing".into(),
            }),
            pull_request_unknown: false,
        }
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let lines = header_lines(&requests[0]);
    assert_eq!(
        lines[0],
        "get /repos/org/project/pulls?head=org:feature%2fx&state=all&per_page=1 http/1.1"
    );
    assert!(lines.contains(&"accept: application/vnd.github+json".to_owned()));
    assert!(lines.contains(&"user-agent: agenthost-test".to_owned()));
    assert!(!lines.iter().any(|l| l.starts_with("authorization:")));
}

#[tokio::test]
async fn the_token_is_sent_when_configured() {
    let repo = TempRepo::new("main", Some("https://github.com/org/project"));
    let server = MockGitHub::start(Reply::Respond(200, "[]".into())).await;

    let reference = server
        .state(Some("s3cret"))
        .reference(repo.path())
        .await
        .unwrap();

    assert_eq!(reference.pull_request, None);
    assert!(
        !reference.pull_request_unknown,
        "GitHub answered: no pull request"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert!(
        requests[0].contains("\r\nauthorization: Bearer s3cret\r\n"),
        "{}",
        requests[0]
    );
}

#[tokio::test]
async fn a_merged_pull_request_reports_merged() {
    let repo = TempRepo::new("main", Some(REMOTE));
    let body = serde_json::json!([{
        "number": 3, "html_url": "u", "state": "closed", "title": "t",
        "merged_at": "2026-01-01T00:00:00Z"
    }]);
    let server = MockGitHub::start(Reply::Respond(200, body.to_string())).await;

    let reference = server.state(None).reference(repo.path()).await.unwrap();

    assert_eq!(
        reference.pull_request.map(|p| p.state),
        Some("merged".into())
    );
}

#[tokio::test]
async fn error_statuses_and_bad_answers_degrade_to_remote_and_branch() {
    let repo = TempRepo::new("main", Some(REMOTE));
    for reply in [
        Reply::Respond(500, "{}".into()),
        Reply::Respond(403, r#"{"message":"rate limited"}"#.into()),
        Reply::Respond(200, "not json".into()),
        Reply::Respond(200, r#"{"message":"an object"}"#.into()),
        Reply::Respond(200, r#"[{"number":1}]"#.into()),
    ] {
        let server = MockGitHub::start(reply).await;
        let reference = server.state(None).reference(repo.path()).await.unwrap();
        assert_eq!(reference.remote.as_deref(), Some(REMOTE));
        assert_eq!(reference.branch.as_deref(), Some("main"));
        assert_eq!(reference.pull_request, None);
        assert!(reference.pull_request_unknown, "no answer is not \"none\"");
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_and_degrades() {
    let repo = TempRepo::new("main", Some(REMOTE));
    let server = MockGitHub::start(Reply::Hang).await;
    let mut config = server.state(None).config().clone();
    config.timeout = Duration::from_millis(200);
    let state = GitHubGitState::new(config);

    let started = Instant::now();
    let reference = state.reference(repo.path()).await.unwrap();

    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(reference.branch.as_deref(), Some("main"));
    assert_eq!(reference.pull_request, None);
    assert!(reference.pull_request_unknown);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn an_unreachable_or_tls_mismatched_server_degrades() {
    let repo = TempRepo::new("main", Some(REMOTE));
    // A plain-HTTP server addressed as https: the TLS handshake fails.
    let server = MockGitHub::start(Reply::Respond(200, pulls_json())).await;
    let https = server.base_url.replacen("http://", "https://", 1);
    let mut config = server.state(None).config().clone();
    config.base_url = https;
    let reference = GitHubGitState::new(config)
        .reference(repo.path())
        .await
        .unwrap();
    assert_eq!(reference.pull_request, None);

    // A closed port: port 1, below the ephemeral range (a port freed here could be taken by a
    // server of a test running in parallel).
    let mut config = server.state(None).config().clone();
    config.base_url = "http://127.0.0.1:1".to_owned();
    let reference = GitHubGitState::new(config)
        .reference(repo.path())
        .await
        .unwrap();
    assert_eq!(reference.pull_request, None);
    assert!(reference.pull_request_unknown);
    assert_eq!(reference.branch.as_deref(), Some("main"));
}

#[tokio::test]
async fn non_github_remotes_and_repositories_without_remotes_make_no_request() {
    let server = MockGitHub::start(Reply::Respond(200, pulls_json())).await;

    let gitlab = TempRepo::new("main", Some("git@gitlab.com:org/project.git"));
    let reference = server.state(None).reference(gitlab.path()).await.unwrap();
    assert_eq!(
        reference.remote.as_deref(),
        Some("git@gitlab.com:org/project.git")
    );
    assert_eq!(reference.pull_request, None);
    assert!(
        !reference.pull_request_unknown,
        "nothing to ask GitHub about"
    );

    let no_remote = TempRepo::new("main", None);
    let reference = server
        .state(None)
        .reference(no_remote.path())
        .await
        .unwrap();
    assert_eq!(reference.remote, None);
    assert_eq!(reference.branch.as_deref(), Some("main"));

    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn a_folder_outside_any_repository_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let error = GitHubGitState::new(GitHubConfig::default())
        .reference(dir.path())
        .await
        .unwrap_err();
    assert_eq!(
        error,
        GitStateError::NotARepository {
            folder: dir.path().to_owned()
        }
    );
}

#[test]
fn github_remote_forms() {
    let slug = |owner: &str, repo: &str| {
        Some(GitHubSlug {
            owner: owner.into(),
            repo: repo.into(),
        })
    };
    for remote in [
        "https://github.com/org/project.git",
        "https://github.com/org/project",
        "https://github.com/org/project/",
        "https://user:token@github.com/org/project.git",
        "http://www.github.com/org/project",
        "ssh://git@github.com/org/project.git",
        "ssh://git@github.com:22/org/project.git",
        "git://github.com/org/project.git",
        "git@github.com:org/project.git",
        "git@GitHub.com:org/project",
        "github.com:org/project.git",
    ] {
        assert_eq!(
            github_slug(remote, "github.com"),
            slug("org", "project"),
            "{remote}"
        );
    }
    for remote in [
        "https://gitlab.com/org/project.git",
        "git@gitlab.com:org/project.git",
        "https://github.com/org",
        "https://github.com/org/pro ject",
        "https://github.com.evil.example/org/project",
        "/srv/git/project.git",
        "./github.com:org/project",
        "file:///github.com/org/project",
    ] {
        assert_eq!(github_slug(remote, "github.com"), None, "{remote}");
    }
    assert_eq!(
        github_slug("git@ghe.example:team/tool.git", "ghe.example"),
        slug("team", "tool")
    );
}

#[test]
fn credentials_are_stripped_from_http_remotes() {
    assert_eq!(
        without_credentials("https://user:ghp_x@github.com/org/project.git"),
        "https://github.com/org/project.git"
    );
    assert_eq!(
        without_credentials("http://token@example.com/a@b"),
        "http://example.com/a@b"
    );
    for kept in [
        "git@github.com:org/project.git",
        "ssh://git@github.com/org/project.git",
        "https://github.com/org/project",
    ] {
        assert_eq!(without_credentials(kept), kept);
    }
}

#[tokio::test]
async fn a_token_in_the_remote_url_is_not_reported() {
    let repo = TempRepo::new(
        "main",
        Some("https://x:ghp_secret@github.com/org/project.git"),
    );
    let server = MockGitHub::start(Reply::Respond(200, "[]".into())).await;
    let reference = server.state(None).reference(repo.path()).await.unwrap();
    assert_eq!(
        reference.remote.as_deref(),
        Some("https://github.com/org/project.git")
    );
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn query_values_are_percent_encoded() {
    assert_eq!(encode_query("feature/a b#c+d"), "feature%2Fa%20b%23c%2Bd");
    assert_eq!(encode_query("v1.2_x-y~z"), "v1.2_x-y~z");
}

#[test]
fn the_token_is_not_in_debug_output() {
    let config = GitHubConfig {
        token: Some("s3cret".into()),
        ..GitHubConfig::default()
    };
    assert!(!format!("{config:?}").contains("s3cret"));
}
