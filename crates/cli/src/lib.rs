//! `agent-host` as a library: the host composition behind `agent-host serve` and the demo, so
//! tests and embedders run exactly what the binary runs.
//!
//! This is the only crate that reads flags, environment variables and files given on the command
//! line; everything below it is configured through plain structs.
#![deny(missing_docs)]

pub mod checkpoints;
pub mod demo;
pub mod host;
pub mod map;
pub mod mock_model;
pub mod run;
pub mod serve;
pub mod sessions;
pub mod term;
pub mod tokens;
pub mod unattended;
