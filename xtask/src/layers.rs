//! The layer table of ARCHITECTURE.md, as data the checks read.
//!
//! A crate may depend only on crates in strictly lower layers. Adding a crate to the workspace
//! means adding its row here, in the same commit, with the layer ARCHITECTURE.md gives it.

use std::fmt;

/// Where a package sits in the architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    /// A numbered layer: normal dependencies must point to strictly lower numbers.
    Rank(u8),
    /// Build and test tooling above every layer: it may depend on anything, nothing may depend on it.
    Tooling,
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rank(rank) => write!(f, "layer {rank}"),
            Self::Tooling => f.write_str("tooling"),
        }
    }
}

/// Every package by exact name, with its layer (ARCHITECTURE.md, "Layers").
pub const LAYERS: &[(&str, Layer)] = &[
    ("agenthost-protocol", Layer::Rank(0)),
    ("agenthost-reducers", Layer::Rank(1)),
    ("agenthost-store", Layer::Rank(1)),
    ("agenthost-checkpoint-api", Layer::Rank(1)),
    ("agenthost-checkpoint", Layer::Rank(2)),
    ("agenthost-state", Layer::Rank(2)),
    ("agenthost-tool-execution", Layer::Rank(2)),
    ("agenthost-provider-api", Layer::Rank(2)),
    ("agenthost-testkit", Layer::Rank(2)),
    ("agenthost-provider-process", Layer::Rank(3)),
    ("agenthost-provider-acp", Layer::Rank(4)),
    ("agenthost-provider-claude", Layer::Rank(4)),
    ("agenthost-provider-codex", Layer::Rank(4)),
    ("agenthost-provider-copilot", Layer::Rank(4)),
    ("agenthost-provider-scripted", Layer::Rank(3)),
    ("agenthost-dispatcher", Layer::Rank(3)),
    ("agenthost-services", Layer::Rank(3)),
    ("agenthost-services-store", Layer::Rank(4)),
    ("agenthost-services-git", Layer::Rank(4)),
    ("agenthost-services-notify", Layer::Rank(4)),
    // Layer 4: every `agenthost-contrib-<feature>`, matched by CONTRIBUTION_PREFIX.
    ("agenthost-contributions", Layer::Rank(5)),
    ("agenthost-side-effects", Layer::Rank(6)),
    ("agenthost-service", Layer::Rank(7)),
    ("agenthost-server", Layer::Rank(8)),
    ("agenthost-client", Layer::Rank(8)),
    ("agenthost-acp-agent", Layer::Rank(9)),
    ("agenthost", Layer::Rank(10)),
    ("xtask", Layer::Tooling),
    ("agenthost-e2e", Layer::Tooling),
];

/// Package-name prefix of the contribution crates (one crate per contribution).
pub const CONTRIBUTION_PREFIX: &str = "agenthost-contrib-";

/// The layer of every contribution crate.
pub const CONTRIBUTION_LAYER: Layer = Layer::Rank(4);

/// Whether `package` is a contribution crate (`agenthost-contrib-<feature>`).
pub fn is_contribution(package: &str) -> bool {
    package
        .strip_prefix(CONTRIBUTION_PREFIX)
        .is_some_and(|feature| !feature.is_empty())
}

/// The layer of `package`, or `None` when the table does not know it.
pub fn layer_of(package: &str) -> Option<Layer> {
    let exact = LAYERS
        .iter()
        .find(|(name, _)| *name == package)
        .map(|(_, layer)| *layer);
    exact.or_else(|| is_contribution(package).then_some(CONTRIBUTION_LAYER))
}
