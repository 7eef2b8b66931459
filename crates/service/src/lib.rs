//! Session lifecycle (in progress).
