//! The Agent Client Protocol (ACP) provider: any agent that speaks ACP on stdio — Gemini CLI,
//! `copilot --acp`, Claude Code and Codex through their ACP adapters — driven by command.
//!
//! This increment is the wire layer: [`wire`] reads the agent's newline-delimited JSON-RPC and
//! decodes the protocol's bodies into the official schema types (`agent-client-protocol`,
//! pinned exactly, re-exported as [`wire::schema`]), skipping `session/update` kinds this build
//! does not know instead of failing on them. The translator and the driver follow.
#![deny(missing_docs)]

pub mod wire;
