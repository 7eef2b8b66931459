//! Workspace-level end-to-end tests of agenthost. The tests live in `tests/`; this library is
//! empty on purpose.
