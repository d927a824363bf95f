//! The APIs the broker answers: a leaf, read by the handlers and by the state that
//! builds ApiVersions' answer.

use crate::ApiKey;

/// The APIs the broker serves (each at every version kwire reads, less
/// [`super::Config::max_versions`]); with the feature `broker-scram`, DescribeUserScramCredentials
/// and AlterUserScramCredentials too. SaslHandshake and SaslAuthenticate are served besides
/// when it has users.
pub const SERVED: &[ApiKey] = &[
    ApiKey::Produce,
    ApiKey::Fetch,
    ApiKey::ListOffsets,
    ApiKey::Metadata,
    ApiKey::OffsetForLeaderEpoch,
    ApiKey::OffsetCommit,
    ApiKey::OffsetFetch,
    ApiKey::FindCoordinator,
    ApiKey::JoinGroup,
    ApiKey::Heartbeat,
    ApiKey::LeaveGroup,
    ApiKey::SyncGroup,
    ApiKey::DescribeGroups,
    ApiKey::ListGroups,
    ApiKey::CreateTopics,
    ApiKey::DeleteTopics,
    ApiKey::InitProducerId,
    ApiKey::DescribeConfigs,
    ApiKey::CreatePartitions,
    ApiKey::ApiVersions,
    ApiKey::DescribeCluster,
    ApiKey::AddPartitionsToTxn,
    ApiKey::AddOffsetsToTxn,
    ApiKey::EndTxn,
    ApiKey::TxnOffsetCommit,
    ApiKey::DescribeTransactions,
    ApiKey::ListTransactions,
    ApiKey::DescribeLogDirs,
    ApiKey::AlterConfigs,
    ApiKey::IncrementalAlterConfigs,
    ApiKey::DeleteRecords,
    ApiKey::DeleteGroups,
    ApiKey::OffsetDelete,
    ApiKey::DescribeProducers,
    ApiKey::ElectLeaders,
    ApiKey::DescribeAcls,
    ApiKey::CreateAcls,
    ApiKey::DeleteAcls,
    ApiKey::ConsumerGroupHeartbeat,
    ApiKey::ConsumerGroupDescribe,
    ApiKey::ShareGroupHeartbeat,
    ApiKey::ShareGroupDescribe,
    ApiKey::ShareFetch,
    ApiKey::ShareAcknowledge,
    ApiKey::DescribeShareGroupOffsets,
    ApiKey::AlterShareGroupOffsets,
    ApiKey::DeleteShareGroupOffsets,
    #[cfg(feature = "broker-scram")]
    ApiKey::DescribeUserScramCredentials,
    #[cfg(feature = "broker-scram")]
    ApiKey::AlterUserScramCredentials,
];
