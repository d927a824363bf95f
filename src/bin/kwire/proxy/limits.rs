//! Descriptors: the soft `RLIMIT_NOFILE` raised to the hard limit at start-up, and the
//! gate that keeps the open connections within what that limit serves.
//!
//! A client connection costs two descriptors (its socket and the upstream socket). When
//! the gate is full, every listener is closed, so that a new client is refused by the
//! kernel (connection refused) instead of being accepted and dropped; a listener opens
//! again on the same address as soon as a connection ends.

use std::sync::Mutex;

/// Descriptors per client connection: the client's socket and the broker's.
pub const FDS_PER_CONNECTION: u64 = 2;
/// Descriptors kept aside for everything else: standard streams, listeners (one per
/// broker), the metrics endpoint and its scrapes, recorded files, the runtime.
pub const RESERVED_FDS: u64 = 128;

/// What start-up did to the descriptor limit.
pub struct NoFile {
    /// The soft limit found.
    pub before: u64,
    /// The soft limit now.
    pub now: u64,
    /// The hard limit.
    pub hard: u64,
}

impl NoFile {
    /// The connections this limit serves.
    pub fn connections(&self) -> usize {
        usize::try_from(self.now.saturating_sub(RESERVED_FDS) / FDS_PER_CONNECTION).unwrap_or(usize::MAX)
    }
}

/// Raises the soft descriptor limit to the hard limit.
pub fn raise_nofile() -> Result<NoFile, String> {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).map_err(|e| format!("getrlimit: {e}"))?;
    let mut now = soft;
    if soft < hard {
        match setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
            Ok(()) => now = hard,
            Err(e) => eprintln!("kwire proxy: cannot raise the descriptor limit from {soft} to {hard}: {e}"),
        }
    }
    Ok(NoFile { before: soft, now, hard })
}

/// The count of open client connections, bounded.
pub struct Gate {
    max: usize,
    open: Mutex<usize>,
    /// Woken when a place is given back.
    notify: tokio::sync::Notify,
}

impl Gate {
    /// A gate of at most `max` connections.
    pub fn new(max: usize) -> Gate {
        Gate { max, open: Mutex::new(0), notify: tokio::sync::Notify::new() }
    }

    /// The bound.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        *self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes a place if there is one: the caller then accepts at most one connection, and
    /// gives the place back with [`Gate::release`] if it accepted none.
    pub fn try_take(&self) -> bool {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if *open >= self.max {
            return false;
        }
        *open += 1;
        true
    }

    /// Gives a place back (a connection ended, or none was accepted).
    pub fn release(&self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        *open = open.saturating_sub(1);
        self.notify.notify_waiters();
    }

    /// Waits until a place is free.
    pub async fn room(&self) {
        loop {
            let notified = self.notify.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if self.open() < self.max {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gate_bounds_and_releases() {
        let gate = Gate::new(2);
        assert!(gate.try_take() && gate.try_take());
        assert!(!gate.try_take());
        gate.release();
        assert_eq!(gate.open(), 1);
        assert!(gate.try_take());
        assert_eq!(gate.open(), 2);
    }

    #[test]
    fn connections_from_the_limit() {
        let n = NoFile { before: 1024, now: 20_000, hard: 20_000 };
        assert_eq!(n.connections(), (20_000 - RESERVED_FDS as usize) / 2);
        assert_eq!(NoFile { before: 10, now: 10, hard: 10 }.connections(), 0);
    }
}
