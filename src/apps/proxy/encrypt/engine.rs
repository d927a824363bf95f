//! What a proxy's connections share for encryption: the rules, the data keys, and the
//! Produce refusals the waiting filter leaves for the chain filter.

#[allow(unused_imports)]
use std::vec::Vec;

use std::collections::VecDeque;
use std::sync::Mutex;

use super::dek::Keys;
use super::rules::EncryptRule;
use crate::filter::Refusals;

/// The most Produce refusals awaiting the chain at once (past it the oldest go: their
/// partitions' records were already taken out).
const MAX_PENDING: usize = 1024;

/// What a proxy's connections share for encryption.
pub(crate) struct Engine {
    rules: Vec<EncryptRule>,
    pub(super) keys: Keys,
    /// Refusals the waiting filter made, for the chain filter to carry out: by connection
    /// and correlation id.
    refusals: Mutex<VecDeque<((u64, i32), Refusals)>>,
}

impl core::fmt::Debug for Engine {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Engine").field("rules", &self.rules).finish_non_exhaustive()
    }
}

impl Engine {
    pub(super) fn new(keys: Keys, rules: Vec<EncryptRule>) -> Engine {
        Engine { rules, keys, refusals: Mutex::default() }
    }

    /// The rule of `topic`: the first that matches it.
    pub(super) fn rule_for(&self, topic: &str) -> Option<&EncryptRule> {
        self.rules.iter().find(|r| r.matches(topic))
    }

    /// Leaves the refusals of a Produce request for the chain filter.
    pub(super) fn stash(&self, conn: u64, correlation_id: i32, refusals: Refusals) {
        let mut pending = self.refusals.lock().unwrap_or_else(|e| e.into_inner());
        if pending.len() == MAX_PENDING {
            pending.pop_front();
        }
        pending.push_back(((conn, correlation_id), refusals));
    }

    /// The refusals left for a Produce request, if any.
    pub(super) fn take(&self, conn: u64, correlation_id: i32) -> Option<Refusals> {
        let mut pending = self.refusals.lock().unwrap_or_else(|e| e.into_inner());
        let at = pending.iter().position(|(k, _)| *k == (conn, correlation_id))?;
        pending.remove(at).map(|(_, r)| r)
    }
}
