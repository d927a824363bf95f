//! Owned batches and records.
