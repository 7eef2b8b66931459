//! The static checks of the architecture lint over the real workspace, so
//! `cargo test --workspace` enforces them (rust-analyzer's tidy pattern).
//!
//! Static checks only: the snapshot verification of `cargo xtask lint` runs `cargo test`, which
//! inside this `cargo test` would wait forever on the build directory lock. `cargo xtask lint`
//! prints the same report, then verifies the snapshots.

use std::path::Path;

#[test]
fn the_workspace_follows_the_architecture_rules() {
    let xtask_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = xtask_dir.parent().unwrap();
    if let Err(error) = xtask::lint::lint_workspace(Path::new(env!("CARGO")), root) {
        panic!("{error}\n\n(`cargo xtask lint` prints the same report)");
    }
}
