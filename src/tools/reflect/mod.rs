//! Message schemas as data, for tools that walk any message generically (the `kwire`
//! command's tree and JSON output, for example).
//!
//! Every supported message has a static [`MessageSchema`], generated from the same schema
//! file as its code: [`request_schema`] and [`response_schema`] find them. The typed views
//! and encoders do not use these tables; they are here, behind the `reflect` feature, so
//! that generic code need not be generated.

use crate::codec::types::Versions;

#[cfg(feature = "owned")]
pub mod addresses;
mod build;
#[cfg(feature = "owned")]
pub mod entities;
#[cfg(feature = "explain")]
pub mod explain;
#[cfg(feature = "owned")]
pub mod inspect;
#[cfg(feature = "json")]
pub mod json;
mod schemas;
#[cfg(feature = "alloc")]
pub mod value;
pub mod walk;

pub use schemas::{request_schema, response_schema};
#[cfg(feature = "alloc")]
pub use value::{Builder, Encoding, StructValue, Value, ValueError};
pub use walk::{
    Field, Path, Scalar, Visitor, WalkError, walk_body, walk_body_prefix, walk_request_header,
    walk_response_header,
};

/// Why rewriting a body through its schema ([`addresses::rewrite`], [`entities::rewrite`])
/// failed.
#[cfg(feature = "owned")]
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum RewriteError {
    /// The body does not decode (or has bytes after it).
    Walk(WalkError),
    /// The rewritten body cannot be encoded (a string longer than a string can be).
    Encode(ValueError),
}

#[cfg(feature = "owned")]
impl core::fmt::Display for RewriteError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RewriteError::Walk(_) => f.write_str("the body does not decode"),
            RewriteError::Encode(_) => f.write_str("the rewritten body cannot be encoded"),
        }
    }
}

#[cfg(feature = "owned")]
impl core::error::Error for RewriteError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            RewriteError::Walk(e) => Some(e),
            RewriteError::Encode(e) => Some(e),
        }
    }
}

/// The schema of a request or response body.
#[derive(Debug)]
pub struct MessageSchema {
    /// The message name, e.g. `"ListOffsetsRequest"`.
    pub name: &'static str,
    /// The API key.
    pub api_key: i16,
    /// Whether it is a request (else a response).
    pub is_request: bool,
    /// The versions that exist.
    pub versions: Versions,
    /// The versions that use the flexible encoding.
    pub flexible_versions: Versions,
    /// A short description.
    pub about: &'static str,
    /// The top-level struct.
    pub body: &'static StructSchema,
}

impl MessageSchema {
    /// Whether `version` uses the flexible encoding.
    pub const fn is_flexible(&self, version: i16) -> bool {
        self.flexible_versions.contains(version)
    }
}

/// A struct: the body, or the element of an array of structs.
#[derive(Debug)]
pub struct StructSchema {
    /// The struct name, e.g. `"ListOffsetsTopic"`.
    pub name: &'static str,
    /// The fields in wire order (tagged fields included, at their schema position).
    pub fields: &'static [FieldSchema],
}

/// A field of a struct.
#[derive(Debug)]
pub struct FieldSchema {
    /// The schema name, e.g. `"ReplicaId"`.
    pub name: &'static str,
    /// The type.
    pub ty: FieldType,
    /// The versions that have the field.
    pub versions: Versions,
    /// The versions in which it may be null.
    pub nullable_versions: Versions,
    /// The versions in which it is a tagged field.
    pub tagged_versions: Versions,
    /// Its tag, if it is ever tagged.
    pub tag: Option<u32>,
    /// The schema's default as written there (`None` for the type's default).
    pub default: Option<&'static str>,
    /// Whether a non-default value is dropped, rather than refused, in versions without
    /// the field.
    pub ignorable: bool,
    /// What the field identifies, as Apache Kafka's schema marks it (`entityType`): a topic
    /// name, a group id, ... (`None` for a field that names no entity).
    pub entity: Option<Entity>,
    /// A short description.
    pub about: &'static str,
}

/// What a field identifies, as Apache Kafka's schemas mark it (`"entityType"`): a tenant
/// or authorization filter finds every topic name, group id or transactional id of any
/// message by this mark, in every API and version, without code per API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Entity {
    /// A topic's name (`topicName`).
    TopicName,
    /// A group's id (`groupId`): classic, consumer and share groups.
    GroupId,
    /// A transactional producer's id (`transactionalId`).
    TransactionalId,
    /// A producer id (`producerId`).
    ProducerId,
    /// A broker's node id (`brokerId`).
    BrokerId,
}

impl Entity {
    /// The schema's name for it, e.g. `"topicName"`.
    pub const fn schema_name(self) -> &'static str {
        match self {
            Entity::TopicName => "topicName",
            Entity::GroupId => "groupId",
            Entity::TransactionalId => "transactionalId",
            Entity::ProducerId => "producerId",
            Entity::BrokerId => "brokerId",
        }
    }
}

impl StructSchema {
    /// The indexes of the fields that are tagged in `version`, in tag order (the order
    /// they are written in, after the inline fields).
    #[cfg(feature = "owned")]
    pub(crate) fn tagged_in_order(&self, version: i16) -> alloc::vec::Vec<usize> {
        let mut tagged: alloc::vec::Vec<(u32, usize)> = (self.fields.iter().enumerate())
            .filter(|(_, f)| f.is_tagged(version))
            .filter_map(|(i, f)| Some((f.tag?, i)))
            .collect();
        tagged.sort_unstable();
        tagged.into_iter().map(|(_, i)| i).collect()
    }
}

impl FieldSchema {
    /// Whether the field is written in place (not as a tagged field) in `version`.
    pub const fn is_inline(&self, version: i16) -> bool {
        self.versions.contains(version) && !self.tagged_versions.contains(version)
    }

    /// Whether the field is a tagged field in `version`.
    pub const fn is_tagged(&self, version: i16) -> bool {
        self.versions.contains(version) && self.tagged_versions.contains(version)
    }

    /// Whether the field may be null in `version`.
    pub const fn is_nullable(&self, version: i16) -> bool {
        self.nullable_versions.contains(version)
    }
}

/// A field's type.
#[derive(Debug)]
pub enum FieldType {
    /// `bool`.
    Bool,
    /// `int8`.
    Int8,
    /// `int16`.
    Int16,
    /// `int32`.
    Int32,
    /// `int64`.
    Int64,
    /// `uint16`.
    Uint16,
    /// `uint32`.
    Uint32,
    /// `float64`.
    Float64,
    /// `uuid`.
    Uuid,
    /// `string`.
    String,
    /// `bytes`.
    Bytes,
    /// `records` (raw bytes for now).
    Records,
    /// A nested struct.
    Struct(&'static StructSchema),
    /// An array of the given element type.
    Array(&'static FieldType),
}

impl FieldType {
    /// The name the schema language uses, e.g. `"int32"`, `"[]ListOffsetsTopic"`.
    pub fn write_name(&self, out: &mut impl core::fmt::Write) -> core::fmt::Result {
        match self {
            FieldType::Bool => out.write_str("bool"),
            FieldType::Int8 => out.write_str("int8"),
            FieldType::Int16 => out.write_str("int16"),
            FieldType::Int32 => out.write_str("int32"),
            FieldType::Int64 => out.write_str("int64"),
            FieldType::Uint16 => out.write_str("uint16"),
            FieldType::Uint32 => out.write_str("uint32"),
            FieldType::Float64 => out.write_str("float64"),
            FieldType::Uuid => out.write_str("uuid"),
            FieldType::String => out.write_str("string"),
            FieldType::Bytes => out.write_str("bytes"),
            FieldType::Records => out.write_str("records"),
            FieldType::Struct(s) => out.write_str(s.name),
            FieldType::Array(t) => {
                out.write_str("[]")?;
                t.write_name(out)
            }
        }
    }

    /// The width of fixed-width types.
    pub const fn fixed_width(&self) -> Option<usize> {
        match self {
            FieldType::Bool | FieldType::Int8 => Some(1),
            FieldType::Int16 | FieldType::Uint16 => Some(2),
            FieldType::Int32 | FieldType::Uint32 => Some(4),
            FieldType::Int64 | FieldType::Float64 => Some(8),
            FieldType::Uuid => Some(16),
            _ => None,
        }
    }
}
