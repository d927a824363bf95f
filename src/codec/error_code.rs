//! Kafka protocol error codes.
//!
//! Every response in the Kafka protocol reports failure as a signed 16-bit error code, with
//! `0` meaning success. [`ErrorCode`] gives each code Kafka defines a name, its wire value,
//! Kafka's own constant name and whether a client may retry the request that failed.
//!
//! The table follows the `Errors` enum of Apache Kafka's Java client
//! (`org.apache.kafka.common.protocol.Errors`) from `-1` (`UNKNOWN_SERVER_ERROR`) through
//! `133` (`SHARE_SESSION_LIMIT_REACHED`), with Kafka's constant names. Codes above 133 were
//! still being assigned upstream when this table was written and are left out. A code counts
//! as retriable when the Java exception Kafka maps it to is a `RetriableException` (directly
//! or through `InvalidMetadataException` and the like).
//!
//! For a code outside the table (for example one a newer broker added),
//! [`ErrorCode::from_i16`] returns `None` and the caller keeps the raw `i16`. The Java client
//! treats such codes as `UNKNOWN_SERVER_ERROR`, which is not retriable.

use core::fmt;

/// Declares [`ErrorCode`] and its lookup functions from one table.
///
/// Each row is the variant's doc comment followed by
/// `(Variant, wire code, "KAFKA_NAME", retriable)`. Rows must be in ascending code order,
/// since `ALL` is built from them in the order given.
macro_rules! error_codes {
    ($(
        $(#[$attr:meta])*
        ($variant:ident, $code:literal, $name:literal, $retriable:literal),
    )*) => {
        /// A Kafka protocol error code.
        ///
        /// The enum holds only the codes this crate knows; it is `#[non_exhaustive]` so that
        /// codes Kafka adds later can join it. Use [`ErrorCode::from_i16`] (or `TryFrom<i16>`) to
        /// read a wire value and [`ErrorCode::to_i16`] (or `From<ErrorCode> for i16`) to write one.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $(
                $(#[$attr])*
                $variant,
            )*
        }

        impl ErrorCode {
            /// All known codes in numeric order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)*];

            /// The wire value.
            #[must_use]
            pub const fn to_i16(self) -> i16 {
                match self {
                    $(ErrorCode::$variant => $code,)*
                }
            }

            /// Looks up a wire value; `None` for codes this table does not know.
            #[must_use]
            pub const fn from_i16(code: i16) -> Option<ErrorCode> {
                match code {
                    $($code => Some(ErrorCode::$variant),)*
                    _ => Option::None,
                }
            }

            /// Kafka's constant name, e.g. `"UNSUPPORTED_VERSION"`.
            #[must_use]
            pub const fn name(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $name,)*
                }
            }

            /// The code of a name as [`ErrorCode::name`] spells it, in any case
            /// (`NOT_COORDINATOR`, `not_coordinator`).
            #[must_use]
            pub fn from_name(name: &str) -> Option<ErrorCode> {
                ErrorCode::ALL.iter().copied().find(|e| e.name().eq_ignore_ascii_case(name))
            }

            /// Whether a client may retry the request that failed with this code.
            ///
            /// This is `true` exactly when Kafka's Java client maps the code to a
            /// `RetriableException`. [`ErrorCode::None`] (success) is not retriable.
            #[must_use]
            pub const fn is_retriable(self) -> bool {
                match self {
                    $(ErrorCode::$variant => $retriable,)*
                }
            }
        }
    };
}

error_codes! {
    /// The server hit an unexpected error while handling the request.
    (UnknownServerError, -1, "UNKNOWN_SERVER_ERROR", false),
    /// No error: the request succeeded.
    (None, 0, "NONE", false),
    /// The requested offset lies outside the range of offsets the broker holds for the
    /// partition.
    (OffsetOutOfRange, 1, "OFFSET_OUT_OF_RANGE", false),
    /// A record or batch failed its CRC check, was oversized or was otherwise malformed.
    (CorruptMessage, 2, "CORRUPT_MESSAGE", true),
    /// The broker does not host the requested topic or partition.
    (UnknownTopicOrPartition, 3, "UNKNOWN_TOPIC_OR_PARTITION", true),
    /// The requested fetch size is not valid.
    (InvalidFetchSize, 4, "INVALID_FETCH_SIZE", false),
    /// The partition has no leader at the moment, usually because an election is under way.
    (LeaderNotAvailable, 5, "LEADER_NOT_AVAILABLE", true),
    /// The broker is not the partition's leader or, for requests any replica may serve, not
    /// one of its replicas.
    (NotLeaderOrFollower, 6, "NOT_LEADER_OR_FOLLOWER", true),
    /// The request did not finish before its timeout.
    (RequestTimedOut, 7, "REQUEST_TIMED_OUT", true),
    /// The broker is unavailable.
    (BrokerNotAvailable, 8, "BROKER_NOT_AVAILABLE", false),
    /// A replica of the partition is unavailable on this broker.
    (ReplicaNotAvailable, 9, "REPLICA_NOT_AVAILABLE", true),
    /// A record is bigger than the largest message the broker accepts.
    (MessageTooLarge, 10, "MESSAGE_TOO_LARGE", false),
    /// The request came from a controller that has since been replaced.
    (StaleControllerEpoch, 11, "STALE_CONTROLLER_EPOCH", false),
    /// The metadata string attached to a committed offset is too long.
    (OffsetMetadataTooLarge, 12, "OFFSET_METADATA_TOO_LARGE", false),
    /// The connection closed before the response arrived.
    (NetworkException, 13, "NETWORK_EXCEPTION", true),
    /// The coordinator is still loading its state and cannot serve requests yet.
    (CoordinatorLoadInProgress, 14, "COORDINATOR_LOAD_IN_PROGRESS", true),
    /// The group or transaction coordinator is unavailable.
    (CoordinatorNotAvailable, 15, "COORDINATOR_NOT_AVAILABLE", true),
    /// The broker is not the coordinator for this group or transactional id.
    (NotCoordinator, 16, "NOT_COORDINATOR", true),
    /// The topic is invalid for the requested operation (for example a bad name).
    (InvalidTopicException, 17, "INVALID_TOPIC_EXCEPTION", false),
    /// A record batch is bigger than the log segment size configured on the broker.
    (RecordListTooLarge, 18, "RECORD_LIST_TOO_LARGE", false),
    /// Too few in-sync replicas are available, so the write was refused.
    (NotEnoughReplicas, 19, "NOT_ENOUGH_REPLICAS", true),
    /// The write reached the log, but fewer in-sync replicas than required confirmed it.
    (NotEnoughReplicasAfterAppend, 20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", true),
    /// The produce request carried an invalid `acks` value.
    (InvalidRequiredAcks, 21, "INVALID_REQUIRED_ACKS", false),
    /// The group generation id in the request is not the current one.
    (IllegalGeneration, 22, "ILLEGAL_GENERATION", false),
    /// The member's protocols do not fit the group's, or its protocol type or list is empty.
    (InconsistentGroupProtocol, 23, "INCONSISTENT_GROUP_PROTOCOL", false),
    /// The group id is not valid.
    (InvalidGroupId, 24, "INVALID_GROUP_ID", false),
    /// The coordinator does not know this group member.
    (UnknownMemberId, 25, "UNKNOWN_MEMBER_ID", false),
    /// The session timeout is outside the range the broker allows.
    (InvalidSessionTimeout, 26, "INVALID_SESSION_TIMEOUT", false),
    /// The group is rebalancing; the member has to join again.
    (RebalanceInProgress, 27, "REBALANCE_IN_PROGRESS", false),
    /// The offset commit data has an invalid size.
    (InvalidCommitOffsetSize, 28, "INVALID_COMMIT_OFFSET_SIZE", false),
    /// The client may not access the topic.
    (TopicAuthorizationFailed, 29, "TOPIC_AUTHORIZATION_FAILED", false),
    /// The client may not access the group.
    (GroupAuthorizationFailed, 30, "GROUP_AUTHORIZATION_FAILED", false),
    /// The client may not perform this cluster-level operation.
    (ClusterAuthorizationFailed, 31, "CLUSTER_AUTHORIZATION_FAILED", false),
    /// A record's timestamp is outside the accepted range.
    (InvalidTimestamp, 32, "INVALID_TIMESTAMP", false),
    /// The broker does not offer the requested SASL mechanism.
    (UnsupportedSaslMechanism, 33, "UNSUPPORTED_SASL_MECHANISM", false),
    /// The request does not fit the current state of the SASL exchange.
    (IllegalSaslState, 34, "ILLEGAL_SASL_STATE", false),
    /// The broker does not support this version of the API.
    (UnsupportedVersion, 35, "UNSUPPORTED_VERSION", false),
    /// The topic name is already taken.
    (TopicAlreadyExists, 36, "TOPIC_ALREADY_EXISTS", false),
    /// The requested partition count is not valid.
    (InvalidPartitions, 37, "INVALID_PARTITIONS", false),
    /// The requested replication factor is not valid.
    (InvalidReplicationFactor, 38, "INVALID_REPLICATION_FACTOR", false),
    /// The requested replica assignment is not valid.
    (InvalidReplicaAssignment, 39, "INVALID_REPLICA_ASSIGNMENT", false),
    /// A configuration entry in the request is not valid.
    (InvalidConfig, 40, "INVALID_CONFIG", false),
    /// The broker is not the active controller.
    (NotController, 41, "NOT_CONTROLLER", true),
    /// The request is malformed or went to a broker that cannot understand it.
    (InvalidRequest, 42, "INVALID_REQUEST", false),
    /// The broker's message format version cannot serve this request.
    (UnsupportedForMessageFormat, 43, "UNSUPPORTED_FOR_MESSAGE_FORMAT", false),
    /// The request breaks a policy configured on the broker.
    (PolicyViolation, 44, "POLICY_VIOLATION", false),
    /// A producer sequence number arrived out of order.
    (OutOfOrderSequenceNumber, 45, "OUT_OF_ORDER_SEQUENCE_NUMBER", false),
    /// A producer sequence number arrived that the broker has already seen.
    (DuplicateSequenceNumber, 46, "DUPLICATE_SEQUENCE_NUMBER", false),
    /// The producer used an epoch older than the current one.
    (InvalidProducerEpoch, 47, "INVALID_PRODUCER_EPOCH", false),
    /// The transactional operation does not fit the transaction's current state.
    (InvalidTxnState, 48, "INVALID_TXN_STATE", false),
    /// The producer id is not the one currently assigned to the transactional id.
    (InvalidProducerIdMapping, 49, "INVALID_PRODUCER_ID_MAPPING", false),
    /// The transaction timeout exceeds the maximum the broker allows.
    (InvalidTransactionTimeout, 50, "INVALID_TRANSACTION_TIMEOUT", false),
    /// Another operation on the same transaction is still in progress.
    (ConcurrentTransactions, 51, "CONCURRENT_TRANSACTIONS", true),
    /// The transaction coordinator that sent the request is no longer the producer's
    /// coordinator.
    (TransactionCoordinatorFenced, 52, "TRANSACTION_COORDINATOR_FENCED", false),
    /// The client may not use the transactional id.
    (TransactionalIdAuthorizationFailed, 53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", false),
    /// The broker has its security features turned off.
    (SecurityDisabled, 54, "SECURITY_DISABLED", false),
    /// The broker skipped this operation, typically because another part of a batched
    /// request failed.
    (OperationNotAttempted, 55, "OPERATION_NOT_ATTEMPTED", false),
    /// The broker hit a disk error while accessing a log file.
    (KafkaStorageError, 56, "KAFKA_STORAGE_ERROR", true),
    /// The requested log directory is not part of the broker's configuration.
    (LogDirNotFound, 57, "LOG_DIR_NOT_FOUND", false),
    /// Authentication over SASL did not succeed.
    (SaslAuthenticationFailed, 58, "SASL_AUTHENTICATION_FAILED", false),
    /// The broker holds no state for the producer id, for example because retention removed
    /// all of that producer's records.
    (UnknownProducerId, 59, "UNKNOWN_PRODUCER_ID", false),
    /// A partition reassignment is already under way.
    (ReassignmentInProgress, 60, "REASSIGNMENT_IN_PROGRESS", false),
    /// Delegation token support is turned off.
    (DelegationTokenAuthDisabled, 61, "DELEGATION_TOKEN_AUTH_DISABLED", false),
    /// The broker has no such delegation token.
    (DelegationTokenNotFound, 62, "DELEGATION_TOKEN_NOT_FOUND", false),
    /// The principal is not a valid owner or renewer of the delegation token.
    (DelegationTokenOwnerMismatch, 63, "DELEGATION_TOKEN_OWNER_MISMATCH", false),
    /// Delegation token requests are refused on plaintext, one-way TLS and token-authenticated
    /// connections.
    (DelegationTokenRequestNotAllowed, 64, "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", false),
    /// The client may not perform this delegation token operation.
    (DelegationTokenAuthorizationFailed, 65, "DELEGATION_TOKEN_AUTHORIZATION_FAILED", false),
    /// The delegation token is past its expiry time.
    (DelegationTokenExpired, 66, "DELEGATION_TOKEN_EXPIRED", false),
    /// The broker does not support this principal type.
    (InvalidPrincipalType, 67, "INVALID_PRINCIPAL_TYPE", false),
    /// The group still has members, so the operation cannot proceed.
    (NonEmptyGroup, 68, "NON_EMPTY_GROUP", false),
    /// No group with this id exists.
    (GroupIdNotFound, 69, "GROUP_ID_NOT_FOUND", false),
    /// The broker does not know the fetch session id.
    (FetchSessionIdNotFound, 70, "FETCH_SESSION_ID_NOT_FOUND", true),
    /// The fetch session epoch does not match what the broker expects.
    (InvalidFetchSessionEpoch, 71, "INVALID_FETCH_SESSION_EPOCH", true),
    /// The leader has no listener matching the one the metadata request arrived on.
    (ListenerNotFound, 72, "LISTENER_NOT_FOUND", true),
    /// The cluster does not allow topics to be deleted.
    (TopicDeletionDisabled, 73, "TOPIC_DELETION_DISABLED", false),
    /// The leader epoch in the request is older than the broker's.
    (FencedLeaderEpoch, 74, "FENCED_LEADER_EPOCH", true),
    /// The leader epoch in the request is newer than the broker's.
    (UnknownLeaderEpoch, 75, "UNKNOWN_LEADER_EPOCH", true),
    /// The client cannot handle the compression type the partition uses.
    (UnsupportedCompressionType, 76, "UNSUPPORTED_COMPRESSION_TYPE", false),
    /// The broker epoch in the request is out of date.
    (StaleBrokerEpoch, 77, "STALE_BROKER_EPOCH", false),
    /// Offsets are not available yet because a newly elected leader's high watermark has
    /// not caught up.
    (OffsetNotAvailable, 78, "OFFSET_NOT_AVAILABLE", true),
    /// The member must get a member id before it can join the group.
    (MemberIdRequired, 79, "MEMBER_ID_REQUIRED", false),
    /// The preferred replica cannot become leader right now.
    (PreferredLeaderNotAvailable, 80, "PREFERRED_LEADER_NOT_AVAILABLE", true),
    /// The group already has the maximum number of members.
    (GroupMaxSizeReached, 81, "GROUP_MAX_SIZE_REACHED", false),
    /// Another member registered with the same static `group.instance.id` has fenced this
    /// one.
    (FencedInstanceId, 82, "FENCED_INSTANCE_ID", false),
    /// None of the eligible replicas can become leader.
    (EligibleLeadersNotAvailable, 83, "ELIGIBLE_LEADERS_NOT_AVAILABLE", true),
    /// The partition needs no leader election.
    (ElectionNotNeeded, 84, "ELECTION_NOT_NEEDED", true),
    /// There is no partition reassignment under way.
    (NoReassignmentInProgress, 85, "NO_REASSIGNMENT_IN_PROGRESS", false),
    /// A group's offsets for a topic cannot be deleted while the group subscribes to it.
    (GroupSubscribedToTopic, 86, "GROUP_SUBSCRIBED_TO_TOPIC", false),
    /// The broker rejected a record that failed its validation.
    (InvalidRecord, 87, "INVALID_RECORD", false),
    /// Pending transactional offsets must be settled before offsets can be fetched.
    (UnstableOffsetCommit, 88, "UNSTABLE_OFFSET_COMMIT", true),
    /// The request went over a throttling quota.
    (ThrottlingQuotaExceeded, 89, "THROTTLING_QUOTA_EXCEEDED", true),
    /// A newer producer with the same transactional id has fenced this one.
    (ProducerFenced, 90, "PRODUCER_FENCED", false),
    /// The request refers to a resource that does not exist.
    (ResourceNotFound, 91, "RESOURCE_NOT_FOUND", false),
    /// The request refers to the same resource more than once.
    (DuplicateResource, 92, "DUPLICATE_RESOURCE", false),
    /// The requested credential does not meet the acceptance criteria.
    (UnacceptableCredential, 93, "UNACCEPTABLE_CREDENTIAL", false),
    /// The sender or receiver of a voter-only request is not one of the expected voters.
    (InconsistentVoterSet, 94, "INCONSISTENT_VOTER_SET", false),
    /// The feature update version is not valid.
    (InvalidUpdateVersion, 95, "INVALID_UPDATE_VERSION", false),
    /// Finalized features could not be updated because of an unexpected server error.
    (FeatureUpdateFailed, 96, "FEATURE_UPDATE_FAILED", false),
    /// The principal of a forwarded request could not be deserialized.
    (PrincipalDeserializationFailure, 97, "PRINCIPAL_DESERIALIZATION_FAILURE", false),
    /// No snapshot matches the request.
    (SnapshotNotFound, 98, "SNAPSHOT_NOT_FOUND", false),
    /// The requested position is negative or lies beyond the end of the snapshot.
    (PositionOutOfRange, 99, "POSITION_OUT_OF_RANGE", false),
    /// The broker does not host a topic with this topic id.
    (UnknownTopicId, 100, "UNKNOWN_TOPIC_ID", true),
    /// Another broker has already registered this broker id.
    (DuplicateBrokerRegistration, 101, "DUPLICATE_BROKER_REGISTRATION", false),
    /// The broker id has no registration.
    (BrokerIdNotRegistered, 102, "BROKER_ID_NOT_REGISTERED", false),
    /// The topic id in the request differs from the topic id of the log.
    (InconsistentTopicId, 103, "INCONSISTENT_TOPIC_ID", true),
    /// The cluster id in the request differs from the server's.
    (InconsistentClusterId, 104, "INCONSISTENT_CLUSTER_ID", false),
    /// No transaction state exists for the transactional id.
    (TransactionalIdNotFound, 105, "TRANSACTIONAL_ID_NOT_FOUND", false),
    /// The fetch session used topic ids inconsistently.
    (FetchSessionTopicIdError, 106, "FETCH_SESSION_TOPIC_ID_ERROR", true),
    /// The proposed in-sync replica set includes a replica that is not eligible.
    (IneligibleReplica, 107, "INELIGIBLE_REPLICA", false),
    /// The partition state was updated, but the leader has changed since.
    (NewLeaderElected, 108, "NEW_LEADER_ELECTED", false),
    /// The requested offset is now held only in tiered storage.
    (OffsetMovedToTieredStorage, 109, "OFFSET_MOVED_TO_TIERED_STORAGE", false),
    /// The coordinator fenced the member's epoch; it must give up its partitions and join
    /// again.
    (FencedMemberEpoch, 110, "FENCED_MEMBER_EPOCH", false),
    /// Another member still holds the instance id and has to leave first.
    (UnreleasedInstanceId, 111, "UNRELEASED_INSTANCE_ID", false),
    /// The group does not support the assignor or its version range.
    (UnsupportedAssignor, 112, "UNSUPPORTED_ASSIGNOR", false),
    /// The member epoch is stale; the member should retry with the epoch from its latest
    /// heartbeat response.
    (StaleMemberEpoch, 113, "STALE_MEMBER_EPOCH", false),
    /// The request reached an endpoint of the wrong type (broker versus controller).
    (MismatchedEndpointType, 114, "MISMATCHED_ENDPOINT_TYPE", false),
    /// The broker does not support this endpoint type yet.
    (UnsupportedEndpointType, 115, "UNSUPPORTED_ENDPOINT_TYPE", false),
    /// No controller with this id is known.
    (UnknownControllerId, 116, "UNKNOWN_CONTROLLER_ID", false),
    /// The client telemetry subscription id is invalid or outdated.
    (UnknownSubscriptionId, 117, "UNKNOWN_SUBSCRIPTION_ID", false),
    /// The client telemetry push is bigger than the broker accepts.
    (TelemetryTooLarge, 118, "TELEMETRY_TOO_LARGE", false),
    /// The controller rejected the broker's registration as invalid.
    (InvalidRegistration, 119, "INVALID_REGISTRATION", false),
    /// The transaction hit an error; aborting it lets the producer keep its transactional id.
    (TransactionAbortable, 120, "TRANSACTION_ABORTABLE", false),
    /// The record's state does not allow the delivery acknowledgement.
    (InvalidRecordState, 121, "INVALID_RECORD_STATE", false),
    /// The broker has no share session matching the request.
    (ShareSessionNotFound, 122, "SHARE_SESSION_NOT_FOUND", true),
    /// The share session epoch does not match what the broker expects.
    (InvalidShareSessionEpoch, 123, "INVALID_SHARE_SESSION_EPOCH", true),
    /// The share coordinator rejected the request because the share-group state epoch does
    /// not match.
    (FencedStateEpoch, 124, "FENCED_STATE_EPOCH", false),
    /// The voter key does not match the receiving replica's key.
    (InvalidVoterKey, 125, "INVALID_VOTER_KEY", false),
    /// The voter is already a member of the voter set.
    (DuplicateVoter, 126, "DUPLICATE_VOTER", false),
    /// The voter is not a member of the voter set.
    (VoterNotFound, 127, "VOTER_NOT_FOUND", false),
    /// The supplied regular expression is malformed.
    (InvalidRegularExpression, 128, "INVALID_REGULAR_EXPRESSION", false),
    /// The client's metadata is stale and it should bootstrap again.
    (RebootstrapRequired, 129, "REBOOTSTRAP_REQUIRED", false),
    /// The Kafka Streams topology in the request is not valid.
    (StreamsInvalidTopology, 130, "STREAMS_INVALID_TOPOLOGY", false),
    /// The Kafka Streams topology epoch in the request is not valid.
    (StreamsInvalidTopologyEpoch, 131, "STREAMS_INVALID_TOPOLOGY_EPOCH", false),
    /// The Kafka Streams topology epoch in the request has been superseded.
    (StreamsTopologyFenced, 132, "STREAMS_TOPOLOGY_FENCED", false),
    /// The broker has reached its limit of share sessions.
    (ShareSessionLimitReached, 133, "SHARE_SESSION_LIMIT_REACHED", true),
}

impl fmt::Display for ErrorCode {
    /// Writes Kafka's name and the wire value, e.g. `UNSUPPORTED_VERSION (35)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.to_i16())
    }
}

/// An `i16` that is no error code this crate knows (the error of `ErrorCode::try_from`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UnknownErrorCode(pub i16);

impl fmt::Display for UnknownErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown error code {}", self.0)
    }
}

impl core::error::Error for UnknownErrorCode {}

impl TryFrom<i16> for ErrorCode {
    type Error = UnknownErrorCode;

    fn try_from(code: i16) -> Result<ErrorCode, UnknownErrorCode> {
        ErrorCode::from_i16(code).ok_or(UnknownErrorCode(code))
    }
}

impl From<ErrorCode> for i16 {
    fn from(code: ErrorCode) -> i16 {
        code.to_i16()
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;
    use core::fmt::{self, Write};

    /// Wire values whose Java exception is a `RetriableException`.
    const RETRIABLE: &[i16] = &[
        2, 3, 5, 6, 7, 9, 13, 14, 15, 16, 19, 20, 41, 51, 56, 70, 71, 72, 74, 75, 78, 80, 83, 84, 88, 89,
        100, 103, 106, 122, 123, 133,
    ];

    #[test]
    fn all_is_strictly_ascending_and_unique() {
        for pair in ErrorCode::ALL.windows(2) {
            assert!(
                pair[0].to_i16() < pair[1].to_i16(),
                "{:?} ({}) is not below {:?} ({})",
                pair[0],
                pair[0].to_i16(),
                pair[1],
                pair[1].to_i16()
            );
        }
    }

    #[test]
    fn all_covers_minus_one_to_133_without_gaps() {
        assert_eq!(ErrorCode::ALL.len(), 135);
        assert_eq!(ErrorCode::ALL.first(), Some(&ErrorCode::UnknownServerError));
        assert_eq!(ErrorCode::ALL.last(), Some(&ErrorCode::ShareSessionLimitReached));
        for (index, error) in ErrorCode::ALL.iter().enumerate() {
            let expected = i16::try_from(index).unwrap() - 1;
            assert_eq!(error.to_i16(), expected, "{error:?}");
        }
    }

    #[test]
    fn from_i16_inverts_code() {
        for &error in ErrorCode::ALL {
            assert_eq!(ErrorCode::from_i16(error.to_i16()), Some(error));
        }
    }

    #[test]
    fn from_i16_rejects_unknown_values() {
        for code in [i16::MIN, -1000, -3, -2, 134, 135, 1000, i16::MAX] {
            assert_eq!(ErrorCode::from_i16(code), None, "{code}");
        }
    }

    #[test]
    fn from_i16_agrees_with_all_for_every_i16() {
        for code in i16::MIN..=i16::MAX {
            let listed = ErrorCode::ALL.iter().any(|error| error.to_i16() == code);
            match ErrorCode::from_i16(code) {
                Some(error) => assert_eq!(error.to_i16(), code),
                None => assert!(!listed, "{code} is in ALL but from_i16 missed it"),
            }
        }
    }

    #[test]
    fn names_are_unique_constant_style() {
        for (index, error) in ErrorCode::ALL.iter().enumerate() {
            let name = error.name();
            assert!(!name.is_empty());
            assert!(
                name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'),
                "{name}"
            );
            for other in &ErrorCode::ALL[index + 1..] {
                assert_ne!(name, other.name());
            }
        }
    }

    #[test]
    fn retriable_flags_match_the_java_exceptions() {
        for &error in ErrorCode::ALL {
            assert_eq!(error.is_retriable(), RETRIABLE.contains(&error.to_i16()), "{error:?}");
        }
    }

    #[test]
    fn spot_checks() {
        let cases: &[(i16, &str, bool)] = &[
            (-1, "UNKNOWN_SERVER_ERROR", false),
            (0, "NONE", false),
            (1, "OFFSET_OUT_OF_RANGE", false),
            (3, "UNKNOWN_TOPIC_OR_PARTITION", true),
            (6, "NOT_LEADER_OR_FOLLOWER", true),
            (7, "REQUEST_TIMED_OUT", true),
            (15, "COORDINATOR_NOT_AVAILABLE", true),
            (35, "UNSUPPORTED_VERSION", false),
            (133, "SHARE_SESSION_LIMIT_REACHED", true),
        ];
        for &(code, name, retriable) in cases {
            let error = ErrorCode::from_i16(code).unwrap();
            assert_eq!(error.name(), name, "{code}");
            assert_eq!(error.is_retriable(), retriable, "{name}");
        }
        let pairs = [
            (ErrorCode::UnknownServerError, -1),
            (ErrorCode::None, 0),
            (ErrorCode::UnknownTopicOrPartition, 3),
            (ErrorCode::NotLeaderOrFollower, 6),
            (ErrorCode::RequestTimedOut, 7),
            (ErrorCode::CoordinatorNotAvailable, 15),
            (ErrorCode::UnsupportedVersion, 35),
        ];
        for (error, code) in pairs {
            assert_eq!(error.to_i16(), code, "{error:?}");
        }
    }

    /// A fixed-size `fmt::Write` sink, so the tests need no allocator.
    struct Buf {
        bytes: [u8; 64],
        len: usize,
    }

    impl Write for Buf {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            let end = self.len + s.len();
            let dst = self.bytes.get_mut(self.len..end).ok_or(fmt::Error)?;
            dst.copy_from_slice(s.as_bytes());
            self.len = end;
            Ok(())
        }
    }

    fn render(error: ErrorCode) -> Buf {
        let mut buf = Buf { bytes: [0; 64], len: 0 };
        write!(buf, "{error}").unwrap();
        buf
    }

    fn text(buf: &Buf) -> &str {
        core::str::from_utf8(&buf.bytes[..buf.len]).unwrap()
    }

    #[test]
    fn display_writes_name_and_code() {
        assert_eq!(text(&render(ErrorCode::UnsupportedVersion)), "UNSUPPORTED_VERSION (35)");
        assert_eq!(text(&render(ErrorCode::UnknownServerError)), "UNKNOWN_SERVER_ERROR (-1)");
        assert_eq!(text(&render(ErrorCode::None)), "NONE (0)");
        for &error in ErrorCode::ALL {
            let buf = render(error);
            let shown = text(&buf);
            assert!(shown.starts_with(error.name()), "{shown}");
            assert!(shown.ends_with(')'), "{shown}");
        }
    }
}
