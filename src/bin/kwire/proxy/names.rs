//! Apache Kafka 4.4's API names, for logging APIs that kwire does not decode yet.

const NAMES: &[&str] = &[
    "Produce",
    "Fetch",
    "ListOffsets",
    "Metadata",
    "LeaderAndIsr",
    "StopReplica",
    "UpdateMetadata",
    "ControlledShutdown",
    "OffsetCommit",
    "OffsetFetch",
    "FindCoordinator",
    "JoinGroup",
    "Heartbeat",
    "LeaveGroup",
    "SyncGroup",
    "DescribeGroups",
    "ListGroups",
    "SaslHandshake",
    "ApiVersions",
    "CreateTopics",
    "DeleteTopics",
    "DeleteRecords",
    "InitProducerId",
    "OffsetForLeaderEpoch",
    "AddPartitionsToTxn",
    "AddOffsetsToTxn",
    "EndTxn",
    "WriteTxnMarkers",
    "TxnOffsetCommit",
    "DescribeAcls",
    "CreateAcls",
    "DeleteAcls",
    "DescribeConfigs",
    "AlterConfigs",
    "AlterReplicaLogDirs",
    "DescribeLogDirs",
    "SaslAuthenticate",
    "CreatePartitions",
    "CreateDelegationToken",
    "RenewDelegationToken",
    "ExpireDelegationToken",
    "DescribeDelegationToken",
    "DeleteGroups",
    "ElectLeaders",
    "IncrementalAlterConfigs",
    "AlterPartitionReassignments",
    "ListPartitionReassignments",
    "OffsetDelete",
    "DescribeClientQuotas",
    "AlterClientQuotas",
    "DescribeUserScramCredentials",
    "AlterUserScramCredentials",
    "Vote",
    "BeginQuorumEpoch",
    "EndQuorumEpoch",
    "DescribeQuorum",
    "AlterPartition",
    "UpdateFeatures",
    "Envelope",
    "FetchSnapshot",
    "DescribeCluster",
    "DescribeProducers",
    "BrokerRegistration",
    "BrokerHeartbeat",
    "UnregisterBroker",
    "DescribeTransactions",
    "ListTransactions",
    "AllocateProducerIds",
    "ConsumerGroupHeartbeat",
    "ConsumerGroupDescribe",
    "ControllerRegistration",
    "GetTelemetrySubscriptions",
    "PushTelemetry",
    "AssignReplicasToDirs",
    "ListConfigResources",
    "DescribeTopicPartitions",
    "ShareGroupHeartbeat",
    "ShareGroupDescribe",
    "ShareFetch",
    "ShareAcknowledge",
    "AddRaftVoter",
    "RemoveRaftVoter",
    "UpdateRaftVoter",
    "InitializeShareGroupState",
    "ReadShareGroupState",
    "WriteShareGroupState",
    "DeleteShareGroupState",
    "ReadShareGroupStateSummary",
    "StreamsGroupHeartbeat",
    "StreamsGroupDescribe",
    "DescribeShareGroupOffsets",
    "AlterShareGroupOffsets",
    "DeleteShareGroupOffsets",
];

/// The name Apache Kafka gives API key `key`, if it has one.
pub fn kafka_api_name(key: i16) -> Option<&'static str> {
    usize::try_from(key).ok().and_then(|i| NAMES.get(i)).copied()
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_line_up_with_keys() {
        assert_eq!(super::kafka_api_name(0), Some("Produce"));
        assert_eq!(super::kafka_api_name(18), Some("ApiVersions"));
        assert_eq!(super::kafka_api_name(32), Some("DescribeConfigs"));
        assert_eq!(super::kafka_api_name(60), Some("DescribeCluster"));
        assert_eq!(super::kafka_api_name(75), Some("DescribeTopicPartitions"));
        assert_eq!(super::kafka_api_name(92), Some("DeleteShareGroupOffsets"));
        assert_eq!(super::kafka_api_name(93), None);
        assert_eq!(super::kafka_api_name(-1), None);
    }
}
