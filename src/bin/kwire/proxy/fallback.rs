//! Response schemas of the two APIs that name brokers and that kwire does not decode yet,
//! FindCoordinator and DescribeCluster, written by hand from Apache Kafka 4.4's message
//! definitions, so that the proxy rewrites their broker addresses today (otherwise clients
//! would reach the group coordinator around the proxy).
//!
//! TODO(issue 9): delete this file once kwire generates these APIs: `decode.rs` prefers
//! kwire's own schema whenever `ApiKey::from_i16` knows the key, so these tables are then
//! never used.

use kwire::Versions;
use kwire::reflect::{FieldSchema, FieldType, StructSchema};

const ALL: Versions = Versions::new(0, i16::MAX);
const NONE: Versions = Versions::NONE;

const fn field(name: &'static str, ty: FieldType, versions: Versions, nullable: Versions) -> FieldSchema {
    FieldSchema {
        name,
        ty,
        versions,
        nullable_versions: nullable,
        tagged_versions: NONE,
        tag: None,
        default: None,
        ignorable: false,
        about: "",
    }
}

static COORDINATOR: StructSchema = StructSchema {
    name: "Coordinator",
    fields: &[
        field("Key", FieldType::String, Versions::new(4, i16::MAX), NONE),
        field("NodeId", FieldType::Int32, Versions::new(4, i16::MAX), NONE),
        field("Host", FieldType::String, Versions::new(4, i16::MAX), NONE),
        field("Port", FieldType::Int32, Versions::new(4, i16::MAX), NONE),
        field("ErrorCode", FieldType::Int16, Versions::new(4, i16::MAX), NONE),
        field("ErrorMessage", FieldType::String, Versions::new(4, i16::MAX), Versions::new(4, i16::MAX)),
    ],
};

/// FindCoordinatorResponse, versions 0-6, flexible from 3.
pub static FIND_COORDINATOR: StructSchema = StructSchema {
    name: "FindCoordinatorResponse",
    fields: &[
        field("ThrottleTimeMs", FieldType::Int32, Versions::new(1, i16::MAX), NONE),
        field("ErrorCode", FieldType::Int16, Versions::new(0, 3), NONE),
        field("ErrorMessage", FieldType::String, Versions::new(1, 3), Versions::new(1, 3)),
        field("NodeId", FieldType::Int32, Versions::new(0, 3), NONE),
        field("Host", FieldType::String, Versions::new(0, 3), NONE),
        field("Port", FieldType::Int32, Versions::new(0, 3), NONE),
        field(
            "Coordinators",
            FieldType::Array(&FieldType::Struct(&COORDINATOR)),
            Versions::new(4, i16::MAX),
            NONE,
        ),
    ],
};

static CLUSTER_BROKER: StructSchema = StructSchema {
    name: "DescribeClusterBroker",
    fields: &[
        field("BrokerId", FieldType::Int32, ALL, NONE),
        field("Host", FieldType::String, ALL, NONE),
        field("Port", FieldType::Int32, ALL, NONE),
        field("Rack", FieldType::String, ALL, ALL),
        field("IsFenced", FieldType::Bool, Versions::new(2, i16::MAX), NONE),
    ],
};

/// DescribeClusterResponse, versions 0-2, flexible in all.
pub static DESCRIBE_CLUSTER: StructSchema = StructSchema {
    name: "DescribeClusterResponse",
    fields: &[
        field("ThrottleTimeMs", FieldType::Int32, ALL, NONE),
        field("ErrorCode", FieldType::Int16, ALL, NONE),
        field("ErrorMessage", FieldType::String, ALL, ALL),
        field("EndpointType", FieldType::Int8, Versions::new(1, i16::MAX), NONE),
        field("ClusterId", FieldType::String, ALL, NONE),
        field("ControllerId", FieldType::Int32, ALL, NONE),
        field("Brokers", FieldType::Array(&FieldType::Struct(&CLUSTER_BROKER)), ALL, NONE),
        field("ClusterAuthorizedOperations", FieldType::Int32, ALL, NONE),
    ],
};

/// The hand-written response schema of API `key` at `version`, with whether that
/// version is flexible.
pub fn response_schema(key: i16, version: i16) -> Option<(&'static StructSchema, bool)> {
    match (key, version) {
        (10, 0..=6) => Some((&FIND_COORDINATOR, version >= 3)),
        (60, 0..=2) => Some((&DESCRIBE_CLUSTER, true)),
        _ => None,
    }
}
