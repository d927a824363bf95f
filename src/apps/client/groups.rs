//! Group offsets: the [`Client`] calls that commit and fetch a group's offsets, through
//! the group's coordinator.

use std::time::{Duration, Instant};

use crate::ApiKey;
use crate::codec::error_code::ErrorCode;
use crate::codec::messages::ResponseBodyView;

use super::Client;
use super::error::{Error, check, missing, unexpected};

impl Client {
    /// Commits `offset` (the next offset to read) for a group's partition, as a simple
    /// commit without a generation (generation -1, no member id), as Kafka's admin tools
    /// commit. A group with members refuses it (UNKNOWN_MEMBER_ID from Kafka).
    pub fn commit_offset(
        &mut self,
        group: &str,
        topic: &str,
        partition: i32,
        offset: i64,
    ) -> Result<(), Error> {
        use crate::codec::messages::offset_commit::{
            OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
        };
        let key = ApiKey::OffsetCommit;
        let v = self.version_of(key)?;
        let parts = [OffsetCommitRequestPartition {
            partition_index: partition,
            committed_offset: offset,
            committed_leader_epoch: -1,
            committed_metadata: Some("".into()),
            ..Default::default()
        }];
        let topics = [OffsetCommitRequestTopic {
            name: topic.into(),
            partitions: (&parts).into(),
            ..Default::default()
        }];
        let request = OffsetCommitRequest {
            group_id: group.into(),
            generation_id_or_member_epoch: -1,
            member_id: "".into(),
            topics: (&topics).into(),
            ..Default::default()
        };
        self.group_call(group, |c| {
            c.call(&request, v, |r| {
                let ResponseBodyView::OffsetCommit(body) = r else { return Err(unexpected(key)) };
                let p = body
                    .topics()
                    .iter()
                    .filter(|t| t.name() == topic)
                    .flat_map(|t| t.partitions().iter())
                    .find(|p| p.partition_index() == partition)
                    .ok_or_else(|| missing(key, topic, Some(partition)))?;
                check(key, p.error_code(), Some(topic), Some(partition), Some(group), None)
            })
        })
    }

    /// The offset a group committed for a partition (OffsetFetch), or `None` when it
    /// committed none.
    pub fn committed_offset(
        &mut self,
        group: &str,
        topic: &str,
        partition: i32,
    ) -> Result<Option<i64>, Error> {
        use crate::codec::messages::offset_fetch::{
            OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
        };
        let key = ApiKey::OffsetFetch;
        let v = self.version_of(key)?;
        let indexes = [partition];
        let old_topics = [OffsetFetchRequestTopic {
            name: topic.into(),
            partition_indexes: (&indexes).into(),
            ..Default::default()
        }];
        let new_topics = [OffsetFetchRequestTopics {
            name: topic.into(),
            partition_indexes: (&indexes).into(),
            ..Default::default()
        }];
        let groups = [OffsetFetchRequestGroup {
            group_id: group.into(),
            topics: Some((&new_topics).into()),
            ..Default::default()
        }];
        let request = if v >= 8 {
            OffsetFetchRequest { groups: (&groups).into(), ..Default::default() }
        } else {
            OffsetFetchRequest {
                group_id: group.into(),
                topics: Some((&old_topics).into()),
                ..Default::default()
            }
        };
        // A partition the answer leaves out has no committed offset (Kafka leaves out
        // those of a group it does not know).
        let found = |group_code: i16, p: Option<(i16, i64)>| -> Result<Option<i64>, Error> {
            check(key, group_code, None, None, Some(group), None)?;
            let Some((code, offset)) = p else { return Ok(None) };
            check(key, code, Some(topic), Some(partition), Some(group), None)?;
            Ok((offset >= 0).then_some(offset))
        };
        self.group_call(group, |c| {
            c.call(&request, v, |r| {
                let ResponseBodyView::OffsetFetch(body) = r else { return Err(unexpected(key)) };
                if v >= 8 {
                    let g = body
                        .groups()
                        .iter()
                        .find(|g| g.group_id() == group)
                        .ok_or_else(|| missing(key, group, None))?;
                    let p = g
                        .topics()
                        .iter()
                        .filter(|t| t.name() == topic)
                        .flat_map(|t| t.partitions().iter())
                        .find(|p| p.partition_index() == partition);
                    found(g.error_code(), p.map(|p| (p.error_code(), p.committed_offset())))
                } else {
                    let p = body
                        .topics()
                        .iter()
                        .filter(|t| t.name() == topic)
                        .flat_map(|t| t.partitions().iter())
                        .find(|p| p.partition_index() == partition);
                    found(body.error_code(), p.map(|p| (p.error_code(), p.committed_offset())))
                }
            })
        })
    }

    /// Runs a group request, and while the broker answers that its group coordinator is not
    /// ready (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, as
    /// a fresh Kafka broker does before its offsets topic exists), asks FindCoordinator
    /// (which makes Kafka create that topic) and runs it again, until [`Config::timeout`].
    fn group_call<R>(
        &mut self,
        group: &str,
        mut f: impl FnMut(&mut Self) -> Result<R, Error>,
    ) -> Result<R, Error> {
        let deadline = Instant::now() + self.config.timeout;
        loop {
            match f(self) {
                Err(e)
                    if matches!(
                        e.error_code(),
                        Some(
                            ErrorCode::NotCoordinator
                                | ErrorCode::CoordinatorNotAvailable
                                | ErrorCode::CoordinatorLoadInProgress
                        )
                    ) && Instant::now() < deadline =>
                {
                    self.find_coordinator(group)?;
                    std::thread::sleep(Duration::from_millis(50));
                }
                other => return other,
            }
        }
    }

    /// FindCoordinator of a group; its answer is not needed (this client talks to the
    /// broker it connected to), only its side effect.
    fn find_coordinator(&mut self, group: &str) -> Result<(), Error> {
        use crate::codec::messages::find_coordinator::FindCoordinatorRequest;
        let key = ApiKey::FindCoordinator;
        let v = self.version_of(key)?;
        let keys = [group.into()];
        let request = if v >= 4 {
            FindCoordinatorRequest { coordinator_keys: (&keys).into(), ..Default::default() }
        } else {
            FindCoordinatorRequest { key: group.into(), ..Default::default() }
        };
        self.call(&request, v, |r| match r {
            ResponseBodyView::FindCoordinator(_) => Ok(()),
            _ => Err(unexpected(key)),
        })
    }
}
