//! Descriptors: the soft `RLIMIT_NOFILE` raised to the hard limit at start-up, and the
//! connections that limit serves (`kwire::proxy` closes its listeners past that bound).
//! A client connection costs two descriptors (its socket and the upstream socket).

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_from_the_limit() {
        let n = NoFile { before: 1024, now: 20_000, hard: 20_000 };
        assert_eq!(n.connections(), (20_000 - RESERVED_FDS as usize) / 2);
        assert_eq!(NoFile { before: 10, now: 10, hard: 10 }.connections(), 0);
    }
}
