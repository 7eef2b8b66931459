//! [`GitHubGitState`]: the default [`GitState`](agenthost_services::GitState) — git through
//! `agenthost-checkpoint`, pull requests through the GitHub REST API.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agenthost_services::{GitState, GitStateError, PullRequest, RepositoryReference};
use futures::future::BoxFuture;
use http_body_util::{BodyExt, Empty, Limited};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use serde_json::Value;

/// Settings of [`GitHubGitState`].
#[derive(Clone)]
pub struct GitHubConfig {
    /// The REST API root, without a trailing slash needed (`https://api.github.com`; GitHub
    /// Enterprise: `https://HOST/api/v3`). `http://` is accepted (tests, proxies).
    pub base_url: String,
    /// The host name of remotes served by that API (`github.com`).
    pub host: String,
    /// A token sent as `Authorization: Bearer …`; without one, public repositories still answer
    /// (rate-limited) and private ones degrade.
    pub token: Option<String>,
    /// Budget of one lookup, connection included.
    pub timeout: Duration,
    /// The `User-Agent` header (GitHub rejects requests without one).
    pub user_agent: String,
}

impl std::fmt::Debug for GitHubConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitHubConfig")
            .field("base_url", &self.base_url)
            .field("host", &self.host)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("user_agent", &self.user_agent)
            .finish()
    }
}

/// The public GitHub API.
pub const DEFAULT_GITHUB_API: &str = "https://api.github.com";

impl Default for GitHubConfig {
    fn default() -> Self {
        Self {
            base_url: DEFAULT_GITHUB_API.to_owned(),
            host: "github.com".to_owned(),
            token: None,
            timeout: Duration::from_secs(5),
            user_agent: concat!("agenthost/", env!("CARGO_PKG_VERSION")).to_owned(),
        }
    }
}

impl GitHubConfig {
    /// The defaults with the token of `GH_TOKEN` or else `GITHUB_TOKEN` (the variables the
    /// GitHub CLI reads), when set and not empty.
    pub fn from_env() -> Self {
        let token = ["GH_TOKEN", "GITHUB_TOKEN"]
            .into_iter()
            .filter_map(|name| std::env::var(name).ok())
            .find(|value| !value.trim().is_empty());
        Self {
            token,
            ..Self::default()
        }
    }
}

/// Largest answer read from GitHub; a pull-request list page is far below it.
const MAX_BODY: usize = 1 << 20;

type HttpsClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Empty<Bytes>>;
type PlainClient = Client<HttpConnector, Empty<Bytes>>;

/// The HTTP client: TLS when the platform's root certificates could be loaded, plain HTTP
/// otherwise (an `https://` API is then unreachable and every lookup degrades).
#[derive(Clone)]
enum Transport {
    Tls(HttpsClient),
    Plain(PlainClient),
}

/// The default [`GitState`]: git through `agenthost-checkpoint`, pull requests through the
/// GitHub REST API (`GET /repos/{owner}/{repo}/pulls?head={owner}:{branch}&state=all`).
#[derive(Clone)]
pub struct GitHubGitState {
    config: Arc<GitHubConfig>,
    transport: Transport,
}

impl std::fmt::Debug for GitHubGitState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitHubGitState")
            .field("config", &self.config)
            .field("tls", &matches!(self.transport, Transport::Tls(_)))
            .finish()
    }
}

impl GitHubGitState {
    /// A client for `config`. Loads the platform's root certificates now; without any, HTTPS
    /// lookups degrade (logged at `warn` once, here). Needs no runtime until used.
    pub fn new(config: GitHubConfig) -> Self {
        let transport = match hyper_rustls::HttpsConnectorBuilder::new().with_native_roots() {
            Ok(builder) => {
                let connector = builder.https_or_http().enable_http1().build();
                Transport::Tls(
                    Client::builder(TokioExecutor::new())
                        .pool_timer(TokioTimer::new())
                        .build(connector),
                )
            }
            Err(error) => {
                tracing::warn!(%error, "githubReferences: no root certificates; GitHub lookups over HTTPS are off");
                Transport::Plain(
                    Client::builder(TokioExecutor::new())
                        .pool_timer(TokioTimer::new())
                        .build_http(),
                )
            }
        };
        Self {
            config: Arc::new(config),
            transport,
        }
    }

    /// The settings.
    pub fn config(&self) -> &GitHubConfig {
        &self.config
    }

    /// The branch's pull request, or why it could not be looked up.
    async fn pull_request(
        &self,
        slug: &GitHubSlug,
        branch: &str,
    ) -> Result<Option<PullRequest>, String> {
        let url = format!(
            "{}/repos/{}/{}/pulls?head={}:{}&state=all&per_page=1",
            self.config.base_url.trim_end_matches('/'),
            slug.owner,
            slug.repo,
            slug.owner,
            encode_query(branch),
        );
        let mut request = hyper::Request::get(url.as_str())
            .header(hyper::header::ACCEPT, "application/vnd.github+json")
            .header(hyper::header::USER_AGENT, self.config.user_agent.as_str())
            .header("X-GitHub-Api-Version", "2022-11-28");
        if let Some(token) = &self.config.token {
            request = request.header(hyper::header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let request = request
            .body(Empty::new())
            .map_err(|error| format!("bad request to {url}: {error}"))?;
        let exchange = async {
            let response = match &self.transport {
                Transport::Tls(client) => client.request(request).await,
                Transport::Plain(client) => client.request(request).await,
            }
            .map_err(|error| format!("request failed: {error}"))?;
            let status = response.status();
            let body = Limited::new(response.into_body(), MAX_BODY)
                .collect()
                .await
                .map_err(|error| format!("reading the answer failed: {error}"))?
                .to_bytes();
            Ok::<_, String>((status, body))
        };
        let (status, body) = tokio::time::timeout(self.config.timeout, exchange)
            .await
            .map_err(|_| format!("no answer within {:?}", self.config.timeout))??;
        if !status.is_success() {
            return Err(format!("GitHub answered {status}"));
        }
        let pulls: Value =
            serde_json::from_slice(&body).map_err(|error| format!("unreadable answer: {error}"))?;
        let Some(pulls) = pulls.as_array() else {
            return Err("unreadable answer: not a list".to_owned());
        };
        match pulls.first() {
            None => Ok(None),
            Some(pull) => parse_pull_request(pull)
                .map(Some)
                .ok_or_else(|| "unreadable answer: incomplete pull request".to_owned()),
        }
    }
}

impl GitState for GitHubGitState {
    fn reference(
        &self,
        folder: &Path,
    ) -> BoxFuture<'static, Result<RepositoryReference, GitStateError>> {
        let this = self.clone();
        let folder = folder.to_owned();
        Box::pin(async move {
            let read = {
                let folder = folder.clone();
                tokio::task::spawn_blocking(move || agenthost_checkpoint::repository_state(&folder))
            };
            let state = match read.await {
                Ok(Ok(state)) => state,
                Ok(Err(agenthost_checkpoint::CheckpointError::NotAWorkTree { .. })) => {
                    return Err(GitStateError::NotARepository { folder });
                }
                Ok(Err(error)) => {
                    return Err(GitStateError::Unreadable {
                        folder,
                        reason: error.to_string(),
                    });
                }
                Err(error) => {
                    return Err(GitStateError::Unreadable {
                        folder,
                        reason: error.to_string(),
                    });
                }
            };
            let mut reference = RepositoryReference {
                root: state.root,
                remote: state.remote_url.map(|url| without_credentials(&url)),
                branch: state.branch,
                pull_request: None,
                pull_request_unknown: false,
            };
            let slug = reference
                .remote
                .as_deref()
                .and_then(|remote| github_slug(remote, &this.config.host));
            match (slug, reference.branch.as_deref()) {
                (Some(slug), Some(branch)) => match this.pull_request(&slug, branch).await {
                    Ok(pull_request) => reference.pull_request = pull_request,
                    Err(reason) => {
                        reference.pull_request_unknown = true;
                        tracing::debug!(
                        folder = %folder.display(),
                        owner = slug.owner,
                        repo = slug.repo,
                        branch,
                        reason,
                        "no pull request lookup; reporting remote and branch only"
                        );
                    }
                },
                (None, _) => tracing::debug!(
                    folder = %folder.display(),
                    remote = reference.remote.as_deref(),
                    "not a GitHub remote; no pull request lookup"
                ),
                (Some(_), None) => tracing::debug!(
                    folder = %folder.display(),
                    "detached HEAD; no pull request lookup"
                ),
            }
            Ok(reference)
        })
    }
}

/// `owner/repo` of a GitHub remote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitHubSlug {
    /// The owner (user or organization).
    pub owner: String,
    /// The repository name, without `.git`.
    pub repo: String,
}

/// The `owner/repo` of `remote` when it is on `host`: `https://host/o/r(.git)`, `http://…`,
/// `git://…`, `ssh://[user@]host[:port]/o/r(.git)` and the scp form `[user@]host:o/r(.git)`.
/// Host names compare case-insensitively; anything else is `None`.
pub fn github_slug(remote: &str, host: &str) -> Option<GitHubSlug> {
    let remote = remote.trim();
    let (authority, path) = if let Some((scheme, rest)) = remote.split_once("://") {
        if !["https", "http", "ssh", "git", "git+ssh", "ssh+git"]
            .iter()
            .any(|known| scheme.eq_ignore_ascii_case(known))
        {
            return None;
        }
        rest.split_once('/')?
    } else {
        // scp-like: [user@]host:path (a path with `/` before the `:` is a local path).
        let (authority, path) = remote.split_once(':')?;
        if authority.contains('/') {
            return None;
        }
        (authority, path)
    };
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let found_host = match host_port.rsplit_once(':') {
        Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
        _ => host_port,
    };
    if !found_host.eq_ignore_ascii_case(host)
        && !found_host.eq_ignore_ascii_case(&format!("www.{host}"))
    {
        return None;
    }
    let path = path.trim_start_matches('/').trim_end_matches('/');
    let (owner, repo) = path.split_once('/')?;
    let repo = repo.strip_suffix(".git").unwrap_or(repo);
    let valid = |part: &str| {
        !part.is_empty()
            && part != "."
            && part != ".."
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    (valid(owner) && valid(repo)).then(|| GitHubSlug {
        owner: owner.to_owned(),
        repo: repo.to_owned(),
    })
}

/// `remote` without the user information of an `http(s)://` URL, so a token embedded in a
/// clone URL is never passed on (`git@host:…` and `ssh://user@…` are kept: no secret there).
pub fn without_credentials(remote: &str) -> String {
    let Some((scheme, rest)) = remote.split_once("://") else {
        return remote.to_owned();
    };
    if !scheme.eq_ignore_ascii_case("https") && !scheme.eq_ignore_ascii_case("http") {
        return remote.to_owned();
    }
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => remote.to_owned(),
    }
}

/// `value` percent-encoded for a query string (everything but RFC 3986's unreserved set).
fn encode_query(value: &str) -> String {
    let mut encoded = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// A pull request of GitHub's list answer; `None` when a field is missing.
fn parse_pull_request(pull: &Value) -> Option<PullRequest> {
    let merged = pull.get("merged_at").is_some_and(|at| !at.is_null());
    let state = pull.get("state")?.as_str()?;
    Some(PullRequest {
        number: pull.get("number")?.as_u64()?,
        url: pull.get("html_url")?.as_str()?.to_owned(),
        state: if merged { "merged" } else { state }.to_owned(),
        title: pull.get("title")?.as_str()?.to_owned(),
    })
}

#[cfg(test)]
#[path = "github_tests.rs"]
mod tests;
