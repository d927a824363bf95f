//! What the group and transaction coordinators (`groups`, `kip848`, `txn`) ask of the
//! broker they run in: its config, log, coordinator placement, ids, and the writes a
//! transaction's end makes in the logs and the group offsets. The broker's shared state
//! implements it, so the coordinators do not import it (no import circle).

use std::string::String;
use std::vec::Vec;

use super::Config;
use super::cluster::CoordinatorKind;
use crate::codec::types::Uuid;

/// The broker as the coordinators see it (implemented by the shared state).
pub(crate) trait Host {
    /// The broker's config.
    fn config(&self) -> &Config;
    /// Writes a line to the broker's log.
    fn log(&self, line: core::fmt::Arguments<'_>);
    /// The node that coordinates a group or transactional id.
    fn coordinator(&self, kind: CoordinatorKind, key: &str) -> usize;
    /// A new id, derived from the broker's seed, `salt` and `n`.
    fn new_uuid(&self, salt: &str, n: i64) -> Uuid;
    /// A new producer id.
    fn new_producer_id(&self) -> i64;
    /// Whether the broker is stopping.
    fn stopping(&self) -> bool;
    /// Every topic: (name, id, partition count).
    fn topics(&self) -> Vec<(String, Uuid, usize)>;
    /// A transaction marker in a partition (if it exists).
    fn write_marker(&self, topic: &str, partition: i32, producer_id: i64, epoch: i16, commit: bool, now: i64);
    /// A committed offset stored in a group: (offset, leader epoch, metadata).
    fn store_offset(&self, group: &str, topic: &str, partition: i32, offset: (i64, i32, Option<String>));
    /// Wakes the fetches waiting for new data.
    fn appended(&self);
}
