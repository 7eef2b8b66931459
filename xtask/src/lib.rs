//! Build tooling for the agenthost workspace (rust-analyzer's xtask pattern).
//!
//! `cargo xtask lint` enforces the architecture rules of ARCHITECTURE.md (static checks — layering,
//! pending snapshots, contribution shape, contract pins, thin orchestration — then snapshot
//! verification), `cargo xtask ci` is the gate CI runs, `cargo xtask bench` runs the
//! benchmarks and checks their report lines. Every static check is a pure function over parsed
//! inputs, so tests can feed it fixtures; the static checks also run as a test over the real
//! workspace, so `cargo test --workspace` enforces them.

pub mod architecture;
pub mod bench;
pub mod ci;
pub mod contributions;
pub mod error;
pub mod file_length;
pub mod layers;
pub mod light_crates;
pub mod lint;
pub mod metadata;
pub mod orchestration;
pub mod pins;
pub mod snapshots;
pub mod thin_orchestration;
pub mod typed_errors;

use std::path::{Path, PathBuf};

/// The workspace root: the parent of the xtask package directory.
///
/// Read at run time first (`cargo run` and `cargo test` set `CARGO_MANIFEST_DIR`): a binary
/// reused from a shared target directory may have been compiled in another checkout.
pub fn project_root() -> PathBuf {
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    manifest_dir
        .parent()
        .map_or_else(|| manifest_dir.clone(), Path::to_path_buf)
}

/// The cargo that runs us (`$CARGO`, set by `cargo run`), or `cargo` from `PATH`.
pub fn cargo() -> PathBuf {
    std::env::var_os("CARGO").map_or_else(|| PathBuf::from("cargo"), PathBuf::from)
}
