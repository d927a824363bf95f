//! Share sessions, as Kafka's `ShareSessionCache` keeps them: one per (group, member),
//! holding the partitions the member fetches from. Epoch 0 opens a session (replacing
//! any), -1 closes it, and each other request must carry the session's next epoch.

use std::collections::{BTreeMap, BTreeSet};
use std::string::{String, ToString};
use std::vec::Vec;

use crate::codec::error_code::ErrorCode;
use crate::codec::types::Uuid;

/// Kafka's `group.share.max.share.sessions` default.
pub(crate) const MAX_SESSIONS: usize = 2000;

#[derive(Debug)]
struct Session {
    /// The epoch the next request must carry.
    epoch: i32,
    partitions: BTreeSet<(Uuid, i32)>,
}

/// Every share session.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    by_member: BTreeMap<(String, String), Session>,
}

/// What a ShareFetch's session epoch makes of the request.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Context {
    /// A new session (epoch 0): answer every partition.
    Full(Vec<(Uuid, i32)>),
    /// The session's next request: answer the partitions with something to say.
    Incremental(Vec<(Uuid, i32)>),
    /// Epoch -1: the session is closed; the acknowledgements are applied, nothing fetched.
    Final,
}

impl Sessions {
    /// The context of a ShareFetch, with the session updated by its partitions (`added`)
    /// and forgotten ones: SHARE_SESSION_NOT_FOUND without a session, INVALID_SHARE_SESSION_EPOCH
    /// for the wrong epoch, SHARE_SESSION_LIMIT_REACHED when a new one does not fit.
    pub fn fetch(
        &mut self,
        group: &str,
        member: &str,
        epoch: i32,
        added: &[(Uuid, i32)],
        forgotten: &[(Uuid, i32)],
    ) -> Result<Context, ErrorCode> {
        let key = (group.to_string(), member.to_string());
        match epoch {
            0 | -1 => {
                self.by_member.remove(&key);
                if epoch == -1 {
                    return Ok(Context::Final);
                }
                if self.by_member.len() >= MAX_SESSIONS {
                    return Err(ErrorCode::ShareSessionLimitReached);
                }
                let partitions: BTreeSet<_> = added.iter().copied().collect();
                let all = partitions.iter().copied().collect();
                self.by_member.insert(key, Session { epoch: 1, partitions });
                Ok(Context::Full(all))
            }
            _ => {
                let s = self.by_member.get_mut(&key).ok_or(ErrorCode::ShareSessionNotFound)?;
                if s.epoch != epoch {
                    return Err(ErrorCode::InvalidShareSessionEpoch);
                }
                s.partitions.extend(added.iter().copied());
                for f in forgotten {
                    s.partitions.remove(f);
                }
                s.epoch = if s.epoch == i32::MAX { 1 } else { s.epoch + 1 };
                Ok(Context::Incremental(s.partitions.iter().copied().collect()))
            }
        }
    }

    /// A ShareAcknowledge's epoch check: 0 is INVALID_SHARE_SESSION_EPOCH, no session
    /// SHARE_SESSION_NOT_FOUND, another epoch than the next INVALID_SHARE_SESSION_EPOCH;
    /// -1 closes the session (returns true).
    pub fn acknowledge(&mut self, group: &str, member: &str, epoch: i32) -> Result<bool, ErrorCode> {
        if epoch == 0 {
            return Err(ErrorCode::InvalidShareSessionEpoch);
        }
        let key = (group.to_string(), member.to_string());
        let s = self.by_member.get_mut(&key).ok_or(ErrorCode::ShareSessionNotFound)?;
        if epoch == -1 {
            self.by_member.remove(&key);
            return Ok(true);
        }
        if s.epoch != epoch {
            return Err(ErrorCode::InvalidShareSessionEpoch);
        }
        s.epoch = if s.epoch == i32::MAX { 1 } else { s.epoch + 1 };
        Ok(false)
    }

    /// Drops a member's session (it left the group or was expired).
    pub fn remove_member(&mut self, group: &str, member: &str) {
        self.by_member.remove(&(group.to_string(), member.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epochs_as_kafka_checks_them() {
        let mut s = Sessions::default();
        let p = (Uuid([1; 16]), 0);
        assert_eq!(s.fetch("g", "m", 1, &[], &[]), Err(ErrorCode::ShareSessionNotFound));
        assert_eq!(s.fetch("g", "m", 0, &[p], &[]), Ok(Context::Full(std::vec![p])));
        assert_eq!(s.fetch("g", "m", 2, &[], &[]), Err(ErrorCode::InvalidShareSessionEpoch));
        assert_eq!(s.fetch("g", "m", 1, &[], &[]), Ok(Context::Incremental(std::vec![p])));
        assert_eq!(s.acknowledge("g", "m", 0), Err(ErrorCode::InvalidShareSessionEpoch));
        assert_eq!(s.acknowledge("g", "m", 2), Ok(false));
        assert_eq!(s.fetch("g", "m", 3, &[], &[p]), Ok(Context::Incremental(std::vec![])));
        assert_eq!(s.acknowledge("g", "m", -1), Ok(true));
        assert_eq!(s.acknowledge("g", "m", 5), Err(ErrorCode::ShareSessionNotFound));
    }
}
