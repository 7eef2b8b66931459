//! The checkpoint ledger contract lives in `agenthost-checkpoint-api`.

pub use agenthost_checkpoint_api::{CheckpointLedger, LedgerError, MemoryLedger};
