//! What the host tells clients about the machine it runs on: the root state's delegation
//! metadata and the answers to VS Code's diagnostics requests.
//!
//! The facts come from the composition (`agent-host serve` reads them from the operating system
//! and the environment); this module only shapes them. Nothing here is a secret: proxy
//! variables are reported without the user name and password a proxy URL may carry.
//!
//! - Root `_meta` (see [`root_meta`]): `vscode.remoteSessions: true` makes the host a target of
//!   another agent's "create a remote session" delegation in VS Code; `vscode.agentHost.resources`
//!   (`platform` ∈ `linux`/`macos`/`windows`, `architecture`, `cpuCount`, `memoryBytes`, each
//!   left out when unknown) lets VS Code match a delegation's platform, CPU and memory needs.
//! - `getNetworkDiagnosticsInfo` → `{version, os, arch, proxySettings, proxyEnv, endpoints}`;
//!   the host has no proxy settings of its own (`{}`) and no endpoints it checks (`[]`).
//! - `getManagedSettingsDiagnostics` → `[]`: the host applies no managed settings.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

/// The machine the host runs on, as the composition read it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MachineFacts {
    /// The operating system as Rust names it (`std::env::consts::OS`: `linux`, `macos`,
    /// `windows`, …).
    pub os: String,
    /// The architecture as Rust names it (`std::env::consts::ARCH`: `x86_64`, `aarch64`, …).
    pub arch: String,
    /// Logical CPUs available to the host, when known.
    pub cpu_count: Option<u64>,
    /// Physical memory in bytes, when known.
    pub memory_bytes: Option<u64>,
    /// The proxy variables of the host's environment (`HTTP_PROXY`, `https_proxy`, `NO_PROXY`,
    /// …) as set; [`network_diagnostics`] strips credentials from their values.
    pub proxy_env: BTreeMap<String, String>,
}

/// The proxy variables [`MachineFacts::proxy_env`] is meant to hold, in either case.
pub const PROXY_VARIABLES: [&str; 4] = ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"];

impl MachineFacts {
    /// VS Code's name of the platform (`linux`, `macos`, `windows`); `None` for another.
    pub fn platform(&self) -> Option<&'static str> {
        match self.os.as_str() {
            "linux" => Some("linux"),
            "macos" => Some("macos"),
            "windows" => Some("windows"),
            _ => None,
        }
    }

    /// Node's name of the architecture (`x64`, `arm64`, `ia32`, `arm`), else Rust's.
    pub fn architecture(&self) -> String {
        match self.arch.as_str() {
            "x86_64" => "x64".to_owned(),
            "aarch64" => "arm64".to_owned(),
            "x86" => "ia32".to_owned(),
            other => other.to_owned(),
        }
    }
}

/// The root state's `_meta`: this host takes delegated sessions, and what it runs on.
pub fn root_meta(machine: &MachineFacts) -> Map<String, Value> {
    let mut resources = Map::new();
    if let Some(platform) = machine.platform() {
        resources.insert("platform".into(), platform.into());
    }
    if !machine.arch.is_empty() {
        resources.insert("architecture".into(), machine.architecture().into());
    }
    if let Some(cpus) = machine.cpu_count.filter(|n| *n > 0) {
        resources.insert("cpuCount".into(), cpus.into());
    }
    if let Some(bytes) = machine.memory_bytes.filter(|n| *n > 0) {
        resources.insert("memoryBytes".into(), bytes.into());
    }
    let mut meta = Map::new();
    meta.insert("vscode.remoteSessions".into(), true.into());
    meta.insert(
        "vscode.agentHost.resources".into(),
        Value::Object(resources),
    );
    meta
}

/// The answer to `getNetworkDiagnosticsInfo`.
pub fn network_diagnostics(machine: &MachineFacts) -> Value {
    let proxy_env: Map<String, Value> = machine
        .proxy_env
        .iter()
        .map(|(name, value)| (name.clone(), Value::from(without_credentials(value))))
        .collect();
    json!({
        "version": env!("CARGO_PKG_VERSION"),
        "os": machine.os,
        "arch": machine.architecture(),
        "proxySettings": {},
        "proxyEnv": proxy_env,
        "endpoints": [],
    })
}

/// The answer to `getManagedSettingsDiagnostics`: no managed settings.
pub fn managed_settings_diagnostics() -> Value {
    Value::Array(Vec::new())
}

/// A proxy URL without the `user:password@` it may carry (each comma-separated entry, for
/// `NO_PROXY`-style lists).
fn without_credentials(value: &str) -> String {
    value
        .split(',')
        .map(|entry| {
            let (scheme, rest) = match entry.split_once("://") {
                Some((scheme, rest)) => (Some(scheme), rest),
                None => (None, entry),
            };
            let authority_end = rest.find('/').unwrap_or(rest.len());
            let rest = match rest[..authority_end].rfind('@') {
                Some(at) => rest[at + 1..].to_owned(),
                None => rest.to_owned(),
            };
            match scheme {
                Some(scheme) => format!("{scheme}://{rest}"),
                None => rest,
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
#[path = "machine_tests.rs"]
mod tests;
