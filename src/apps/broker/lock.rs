//! The one way the broker takes its locks: a leaf every store uses.

use std::sync::{Mutex, MutexGuard};

/// Locks a mutex, carrying on after a panic elsewhere (the state stays usable: every
/// update is complete before its guard drops).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
