//! A headless Chromium driven over the DevTools protocol, for the tests of the host's page
//! (`web.rs`; a module of its own, not part of `support`, so only that test binary builds it).
//!
//! [`Browser::launch`] starts `chromium` (or `$AGENTHOST_CHROMIUM`) headless with a fresh profile,
//! no sandbox (the CI machines run tests as root), no background networking, no component
//! updates and no sync, so it makes no request of its own; it attaches to one page target.
//! [`Browser::eval`] runs JavaScript in the page, [`Browser::wait_for`] polls an expression until
//! it is true or a deadline passes, the input methods type and press keys as a keyboard does,
//! and [`Browser::screenshot`] writes a PNG. Every console error, uncaught exception and
//! browser log error is kept ([`Browser::console_errors`]) and so is every URL the page
//! requested or opened a WebSocket to ([`Browser::requested_urls`]).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::Engine as _;
use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// How long a DevTools call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The Chromium program: `$AGENTHOST_CHROMIUM`, else `chromium` on the `PATH`.
pub fn chromium_program() -> PathBuf {
    std::env::var_os("AGENTHOST_CHROMIUM").map_or_else(|| PathBuf::from("chromium"), PathBuf::from)
}

/// Whether the Chromium program runs (`--version`).
pub fn chromium_available() -> bool {
    Command::new(chromium_program())
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// A page in a headless Chromium.
pub struct Browser {
    child: Child,
    profile: tempfile::TempDir,
    socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
    session: String,
    next_id: u64,
    errors: Vec<String>,
    requests: Vec<String>,
}

impl Browser {
    /// Starts Chromium and opens a blank page `width` × `height` CSS pixels wide (`mobile`:
    /// emulates a phone's viewport and touch).
    pub async fn launch(width: u32, height: u32, mobile: bool) -> Result<Self, String> {
        let profile = tempfile::tempdir().map_err(|e| format!("no profile directory: {e}"))?;
        let log = std::fs::File::create(profile.path().join("chromium.log"))
            .map_err(|e| format!("no log file: {e}"))?;
        let child = Command::new(chromium_program())
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--disable-default-apps",
                "--disable-dev-shm-usage",
                "--metrics-recording-only",
                "--remote-debugging-port=0",
                "--hide-scrollbars",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", chromium_program().display()))?;
        let mut child = child;
        let socket = match devtools_endpoint(profile.path(), &mut child).await {
            Ok(endpoint) => tokio_tungstenite::connect_async(endpoint.as_str())
                .await
                .map(|(socket, _)| socket)
                .map_err(|e| format!("cannot reach DevTools at {endpoint}: {e}")),
            Err(error) => Err(error),
        };
        let socket = match socket {
            Ok(socket) => socket,
            Err(error) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(error);
            }
        };
        let mut browser = Self {
            child,
            profile,
            socket,
            session: String::new(),
            next_id: 1,
            errors: Vec::new(),
            requests: Vec::new(),
        };
        let target = browser
            .browser_call("Target.createTarget", json!({ "url": "about:blank" }))
            .await?;
        let target_id = target["targetId"].as_str().unwrap_or_default().to_owned();
        let attached = browser
            .browser_call(
                "Target.attachToTarget",
                json!({ "targetId": target_id, "flatten": true }),
            )
            .await?;
        browser.session = attached["sessionId"]
            .as_str()
            .ok_or("Target.attachToTarget returned no session")?
            .to_owned();
        for domain in [
            "Page.enable",
            "Runtime.enable",
            "Log.enable",
            "Network.enable",
        ] {
            browser.call(domain, json!({})).await?;
        }
        browser.set_viewport(width, height, mobile).await?;
        Ok(browser)
    }

    /// Resizes the viewport (`mobile`: a phone's).
    pub async fn set_viewport(
        &mut self,
        width: u32,
        height: u32,
        mobile: bool,
    ) -> Result<(), String> {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile }),
        )
        .await?;
        self.call(
            "Emulation.setTouchEmulationEnabled",
            json!({ "enabled": mobile }),
        )
        .await
        .map(drop)
    }

    /// Loads `url` and waits until its document is complete.
    pub async fn navigate(&mut self, url: &str) -> Result<(), String> {
        let answer = self.call("Page.navigate", json!({ "url": url })).await?;
        if let Some(error) = answer["errorText"].as_str() {
            return Err(format!("navigating to the page failed: {error}"));
        }
        self.wait_for(
            "document.readyState === 'complete'",
            Duration::from_secs(20),
        )
        .await
        .map(drop)
    }

    /// Evaluates `expression` in the page (promises awaited) and returns its value as JSON.
    pub async fn eval(&mut self, expression: &str) -> Result<Value, String> {
        let answer = self
            .call(
                "Runtime.evaluate",
                json!({ "expression": expression, "awaitPromise": true, "returnByValue": true }),
            )
            .await?;
        if let Some(exception) = answer.get("exceptionDetails") {
            return Err(format!("`{expression}` threw: {exception}"));
        }
        Ok(answer["result"]["value"].clone())
    }

    /// Evaluates `expression` until it is truthy, for at most `timeout`; returns its value.
    pub async fn wait_for(&mut self, expression: &str, timeout: Duration) -> Result<Value, String> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let last = match self.eval(expression).await {
                Ok(value) if truthy(&value) => return Ok(value),
                Ok(value) => value,
                Err(error) => Value::String(error),
            };
            if tokio::time::Instant::now() >= deadline {
                return Err(format!(
                    "`{expression}` did not become true in {timeout:?} (last: {last})"
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Types `text` into the focused element, as an input method would.
    pub async fn type_text(&mut self, text: &str) -> Result<(), String> {
        self.call("Input.insertText", json!({ "text": text }))
            .await
            .map(drop)
    }

    /// Presses and releases a key (`Enter`, `Tab`, `Escape`, `Space`), optionally with Shift.
    pub async fn press(&mut self, key: &str, shift: bool) -> Result<(), String> {
        let (code, key_code, text) = match key {
            "Enter" => ("Enter", 13, Some("\r")),
            "Tab" => ("Tab", 9, None),
            "Escape" => ("Escape", 27, None),
            "Space" => ("Space", 32, Some(" ")),
            other => return Err(format!("no key {other}")),
        };
        let key_name = if key == "Space" { " " } else { key };
        let modifiers = if shift { 8 } else { 0 };
        let mut down = json!({
            "type": if text.is_some() { "keyDown" } else { "rawKeyDown" },
            "key": key_name, "code": code,
            "windowsVirtualKeyCode": key_code, "nativeVirtualKeyCode": key_code,
            "modifiers": modifiers,
        });
        if let Some(text) = text {
            down["text"] = json!(text);
            down["unmodifiedText"] = json!(text);
        }
        self.call("Input.dispatchKeyEvent", down).await?;
        self.call(
            "Input.dispatchKeyEvent",
            json!({ "type": "keyUp", "key": key_name, "code": code,
                    "windowsVirtualKeyCode": key_code, "nativeVirtualKeyCode": key_code,
                    "modifiers": modifiers }),
        )
        .await
        .map(drop)
    }

    /// Writes a PNG of the viewport to `path`.
    pub async fn screenshot(&mut self, path: &Path) -> Result<(), String> {
        let answer = self
            .call("Page.captureScreenshot", json!({ "format": "png" }))
            .await?;
        let data = answer["data"].as_str().ok_or("no screenshot data")?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| format!("the screenshot is not base64: {e}"))?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The console errors, uncaught exceptions and browser log errors so far.
    pub fn console_errors(&self) -> &[String] {
        &self.errors
    }

    /// Every URL the page requested or opened a WebSocket to, in order.
    pub fn requested_urls(&self) -> &[String] {
        &self.requests
    }

    /// What Chromium wrote on stderr (for a failure's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.profile.path().join("chromium.log")).unwrap_or_default()
    }

    /// A command to the page.
    async fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let session = self.session.clone();
        self.send(method, params, Some(&session)).await
    }

    /// A command to the browser itself.
    async fn browser_call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.send(method, params, None).await
    }

    async fn send(
        &mut self,
        method: &str,
        params: Value,
        session: Option<&str>,
    ) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        self.socket
            .send(Message::text(message.to_string()))
            .await
            .map_err(|e| format!("{method}: DevTools is gone: {e}"))?;
        let deadline = tokio::time::Instant::now() + CALL_TIMEOUT;
        loop {
            let next = tokio::time::timeout_at(deadline, self.socket.next())
                .await
                .map_err(|_| format!("{method}: no answer in {CALL_TIMEOUT:?}"))?;
            let text = match next {
                Some(Ok(Message::Text(text))) => text,
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(format!("{method}: DevTools failed: {e}")),
                None => return Err(format!("{method}: DevTools closed")),
            };
            let Ok(frame) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            if frame["id"].as_u64() == Some(id) {
                if let Some(error) = frame.get("error") {
                    return Err(format!("{method}: {error}"));
                }
                return Ok(frame["result"].clone());
            }
            self.observe(&frame);
        }
    }

    /// Keeps what an event says about errors and requests.
    fn observe(&mut self, event: &Value) {
        let params = &event["params"];
        match event["method"].as_str().unwrap_or_default() {
            "Runtime.consoleAPICalled" if params["type"] == "error" => {
                let args: Vec<String> = params["args"]
                    .as_array()
                    .map(|args| {
                        args.iter()
                            .map(|arg| {
                                arg["value"]
                                    .as_str()
                                    .map_or_else(|| arg["description"].to_string(), str::to_owned)
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                self.errors
                    .push(format!("console.error: {}", args.join(" ")));
            }
            "Runtime.exceptionThrown" => {
                let details = &params["exceptionDetails"];
                self.errors.push(format!(
                    "uncaught: {} {}",
                    details["text"].as_str().unwrap_or_default(),
                    details["exception"]["description"]
                        .as_str()
                        .unwrap_or_default()
                ));
            }
            "Log.entryAdded" if params["entry"]["level"] == "error" => {
                self.errors.push(format!(
                    "log ({}): {} {}",
                    params["entry"]["source"].as_str().unwrap_or_default(),
                    params["entry"]["text"].as_str().unwrap_or_default(),
                    params["entry"]["url"].as_str().unwrap_or_default()
                ));
            }
            "Network.requestWillBeSent" => {
                if let Some(url) = params["request"]["url"].as_str() {
                    self.requests.push(url.to_owned());
                }
            }
            "Network.webSocketCreated" => {
                if let Some(url) = params["url"].as_str() {
                    self.requests.push(url.to_owned());
                }
            }
            _ => {}
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The browser's DevTools WebSocket, from the `DevToolsActivePort` file Chromium writes in its
/// profile (the port on the first line, the path on the second).
async fn devtools_endpoint(profile: &Path, child: &mut Child) -> Result<String, String> {
    let file = profile.join("DevToolsActivePort");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(text) = std::fs::read_to_string(&file) {
            let mut lines = text.lines();
            if let (Some(port), Some(path)) = (lines.next(), lines.next()) {
                return Ok(format!("ws://127.0.0.1:{}{}", port.trim(), path.trim()));
            }
        }
        if let Ok(Some(status)) = child.try_wait() {
            let log = std::fs::read_to_string(profile.join("chromium.log")).unwrap_or_default();
            return Err(format!(
                "chromium exited ({status}) before DevTools was up:\n{log}"
            ));
        }
        if tokio::time::Instant::now() >= deadline {
            return Err("chromium's DevTools did not come up in 30 s".to_owned());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|n| n != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}
