//! The partitions' admin calls: DescribeLogDirs, DeleteRecords, DescribeProducers and
//! ElectLeaders, answered with the truth of the in-memory logs.

use super::*;

/// The one log directory this broker reports (its logs are in memory).
pub(crate) const LOG_DIR: &str = "/kwire/memory";

impl Handler<'_> {
    pub(super) fn describe_log_dirs(
        &mut self,
        reply: ReplyTo,
        d: crate::codec::messages::DescribeLogDirsRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::describe_log_dirs::{
            DescribeLogDirsPartition, DescribeLogDirsResponse, DescribeLogDirsResult, DescribeLogDirsTopic,
        };
        // (topic, [(partition, bytes)]): every partition, or those asked for that exist.
        let wanted: Option<Vec<(&str, Vec<i32>)>> =
            d.topics().map(|t| t.iter().map(|t| (t.topic(), t.partitions().iter().collect())).collect());
        // Without DESCRIBE on the cluster: no directories (v3+ refuse the request in `handle`).
        let authorized = self.allowed(op::DESCRIBE, resource::CLUSTER, CLUSTER_NAME);
        let mut found: Vec<(String, Vec<(i32, i64)>)> = Vec::new();
        self.shared.topics.with(|all| {
            let size = |t: &super::super::state::Topic, i: usize| -> Option<(i32, i64)> {
                let p = t.partitions.get(i)?;
                Some((i as i32, i64::try_from(p.lock().len_bytes()).unwrap_or(i64::MAX)))
            };
            match &wanted {
                None => {
                    for t in all.values() {
                        found.push((
                            t.name.clone(),
                            (0..t.partitions.len()).filter_map(|i| size(t, i)).collect(),
                        ));
                    }
                }
                Some(list) => {
                    for (name, parts) in list {
                        let Some(t) = all.get(*name) else { continue };
                        let sizes: Vec<(i32, i64)> = parts
                            .iter()
                            .filter_map(|&i| usize::try_from(i).ok().and_then(|i| size(t, i)))
                            .collect();
                        if !sizes.is_empty() {
                            found.push((t.name.clone(), sizes));
                        }
                    }
                }
            }
        });
        let topics: Vec<DescribeLogDirsTopic<'_>> = found
            .iter()
            .map(|(name, parts)| DescribeLogDirsTopic {
                name: name.as_str().into(),
                partitions: parts
                    .iter()
                    .map(|&(partition_index, partition_size)| DescribeLogDirsPartition {
                        partition_index,
                        partition_size,
                        offset_lag: 0,
                        is_future_key: false,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        let results = [DescribeLogDirsResult {
            error_code: 0,
            log_dir: LOG_DIR.into(),
            topics: topics.into(),
            ..Default::default()
        }];
        let results = if authorized { &results[..] } else { &[] };
        let body = DescribeLogDirsResponse { results: results.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    pub(super) fn delete_records(
        &mut self,
        reply: ReplyTo,
        d: crate::codec::messages::DeleteRecordsRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::delete_records::{
            DeleteRecordsPartitionResult, DeleteRecordsResponse, DeleteRecordsTopicResult,
        };
        let mut topics = Vec::new();
        for t in d.topics() {
            let authorized = self.allowed(op::DELETE, resource::TOPIC, t.name());
            let deletable = self.shared.topics.with(|all| {
                all.get(t.name()).map(|topic| {
                    topic
                        .configs
                        .iter()
                        .find(|(n, _)| n == "cleanup.policy")
                        .is_none_or(|(_, v)| v.split(',').any(|p| p.trim() == "delete"))
                })
            });
            let mut parts = Vec::new();
            for p in t.partitions() {
                let index = p.partition_index();
                let (code, low_watermark) = match self.shared.topics.partition(t.name(), index) {
                    _ if !authorized => (ErrorCode::TopicAuthorizationFailed, -1),
                    None => (ErrorCode::UnknownTopicOrPartition, -1),
                    Some(_) if deletable == Some(false) => (ErrorCode::PolicyViolation, -1),
                    Some(partition) => {
                        let mut log = partition.lock();
                        match self.leader_error(log.leader(), -1) {
                            Some(code) => (code, -1),
                            None => match log.delete_records(p.offset()) {
                                Ok(start) => (ErrorCode::None, start),
                                Err(()) => (ErrorCode::OffsetOutOfRange, -1),
                            },
                        }
                    }
                };
                parts.push(DeleteRecordsPartitionResult {
                    partition_index: index,
                    low_watermark,
                    error_code: code.to_i16(),
                    ..Default::default()
                });
            }
            topics.push(DeleteRecordsTopicResult {
                name: t.name().into(),
                partitions: parts.into(),
                ..Default::default()
            });
        }
        // Fetches waiting on these partitions look again.
        self.shared.appended();
        let body = DeleteRecordsResponse { topics: topics.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    pub(super) fn describe_producers(
        &mut self,
        reply: ReplyTo,
        d: crate::codec::messages::DescribeProducersRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::describe_producers::{
            DescribeProducersResponse, PartitionResponse, ProducerState, TopicResponse,
        };
        let mut topics = Vec::new();
        for t in d.topics() {
            let authorized = self.allowed(op::READ, resource::TOPIC, t.name());
            let mut parts = Vec::new();
            for index in t.partition_indexes() {
                let found = self.shared.topics.partition(t.name(), index).map(|p| p.lock().producers());
                parts.push(match found {
                    _ if !authorized => PartitionResponse {
                        partition_index: index,
                        error_code: ErrorCode::TopicAuthorizationFailed.to_i16(),
                        error_message: Some("Topic authorization failed.".into()),
                        ..Default::default()
                    },
                    None => PartitionResponse {
                        partition_index: index,
                        error_code: ErrorCode::UnknownTopicOrPartition.to_i16(),
                        error_message: Some("This server does not host this topic-partition.".into()),
                        ..Default::default()
                    },
                    Some(producers) => PartitionResponse {
                        partition_index: index,
                        active_producers: producers
                            .iter()
                            .map(|p| ProducerState {
                                producer_id: p.producer_id,
                                producer_epoch: i32::from(p.epoch),
                                last_sequence: p.last_sequence,
                                last_timestamp: p.last_timestamp,
                                coordinator_epoch: p.coordinator_epoch,
                                current_txn_start_offset: p.current_txn_start_offset,
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    },
                });
            }
            topics.push(TopicResponse {
                name: t.name().into(),
                partitions: parts.into(),
                ..Default::default()
            });
        }
        let body = DescribeProducersResponse { topics: topics.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    pub(super) fn elect_leaders(
        &mut self,
        reply: ReplyTo,
        e: crate::codec::messages::ElectLeadersRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::codec::messages::elect_leaders::{
            ElectLeadersResponse, PartitionResult, ReplicaElectionResult,
        };
        let v = reply.api_version;
        // 0 preferred, 1 unclean (v1+; v0 elects the preferred leader).
        let election_type = if v >= 1 { e.election_type() } else { 0 };
        if !self.allowed(op::ALTER, resource::CLUSTER, CLUSTER_NAME) {
            // Kafka's answer to a refused request: the error at the top and for each
            // partition named.
            let code = ErrorCode::ClusterAuthorizationFailed.to_i16();
            let results: Vec<ReplicaElectionResult<'_>> = e
                .topic_partitions()
                .into_iter()
                .flatten()
                .map(|t| ReplicaElectionResult {
                    topic: t.topic().into(),
                    partition_result: t
                        .partitions()
                        .iter()
                        .map(|p| PartitionResult {
                            partition_id: p,
                            error_code: code,
                            error_message: Some(CLUSTER_REFUSED.into()),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect();
            let body = ElectLeadersResponse {
                error_code: code,
                replica_election_results: results.into(),
                ..Default::default()
            };
            ServerConn::encode_response(reply, &body, out)?;
            return Ok(());
        }
        if !(0..=1).contains(&election_type) {
            let body =
                ElectLeadersResponse { error_code: ErrorCode::InvalidRequest.to_i16(), ..Default::default() };
            ServerConn::encode_response(reply, &body, out)?;
            return Ok(());
        }
        // Each partition's leader is its preferred leader and only replica (also in a
        // cluster, where leaders move): no election is ever needed. Asked for every partition (null), Kafka leaves out
        // those that need none, which here is all of them.
        // (topic, [(partition, error, message)])
        type Elected = (String, Vec<(i32, ErrorCode, String)>);
        let mut results: Vec<Elected> = Vec::new();
        if let Some(list) = e.topic_partitions() {
            for t in list {
                let count = self.shared.topics.with(|all| all.get(t.topic()).map(|t| t.partitions.len()));
                let parts = t
                    .partitions()
                    .iter()
                    .map(|p| match count {
                        None => (
                            p,
                            ErrorCode::UnknownTopicOrPartition,
                            std::format!("No such topic as {}", t.topic()),
                        ),
                        Some(n) if usize::try_from(p).map_or(true, |p| p >= n) => (
                            p,
                            ErrorCode::UnknownTopicOrPartition,
                            std::format!("No such partition as {}-{p}", t.topic()),
                        ),
                        Some(_) => (
                            p,
                            ErrorCode::ElectionNotNeeded,
                            "Leader election not needed for topic partition.".to_string(),
                        ),
                    })
                    .collect();
                results.push((t.topic().to_string(), parts));
            }
        }
        let results: Vec<ReplicaElectionResult<'_>> = results
            .iter()
            .map(|(topic, parts)| ReplicaElectionResult {
                topic: topic.as_str().into(),
                partition_result: parts
                    .iter()
                    .map(|(p, code, message)| PartitionResult {
                        partition_id: *p,
                        error_code: code.to_i16(),
                        error_message: Some(message.as_str().into()),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        let body = ElectLeadersResponse { replica_election_results: results.into(), ..Default::default() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }
}
