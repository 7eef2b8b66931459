//! How a gix error becomes a [`CheckpointError`] (the error type itself lives in
//! `agenthost-checkpoint-api`).

pub use agenthost_checkpoint_api::CheckpointError;

/// Attaches a short description of the step to a gix error.
pub(crate) trait GitContext<T> {
    /// Maps the error into [`CheckpointError::Git`] with `context`.
    fn git(self, context: &'static str) -> Result<T, CheckpointError>;
}

impl<T, E: Into<gix::Error>> GitContext<T> for Result<T, E> {
    fn git(self, context: &'static str) -> Result<T, CheckpointError> {
        self.map_err(|error| CheckpointError::Git {
            context,
            source: Box::new(error.into()),
        })
    }
}
