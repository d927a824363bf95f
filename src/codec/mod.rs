//! Layer 1, the codec: the Kafka wire protocol as bytes and types. It uses no other layer
//! of the crate; every other layer uses it.
//!
//! Bottom up:
//!
//! - the vocabulary: [`types`], [`error`], `error_code` ([`ErrorCode`](crate::ErrorCode)),
//!   `api_key` ([`ApiKey`](crate::ApiKey)), `direction`, and `civil` (calendar dates for
//!   printed timestamps);
//! - the wire primitives: [`wire`] (readers, writers, varints, tagged fields, UTF-8);
//! - views and encoders: [`view`], [`encode`], [`vectored`] (encoders around borrowed
//!   records);
//! - record batches: [`records`];
//! - the generated messages: [`messages`] (from the schema files in `src/codec/schema/`),
//!   owned values from views (feature `owned`) and the reference decoder (feature
//!   `reference`), both in `reference`, and the entity walkers (`entities`, feature `owned`:
//!   the names and ids that filters and schema tools find in a body);
//! - framing and dispatch: [`frame`], [`dispatch`];
//! - `splice` (feature `owned`): a body copied once with byte ranges replaced and the sizes
//!   of the tagged fields around them written again, for the filters and tools that rename
//!   strings in place.
//!
//! `testing` (feature `testing`) holds what the crate's tests share.

pub(crate) mod api_key;
#[cfg(any(feature = "explain", feature = "capture", feature = "proxy"))]
pub(crate) mod civil;
pub(crate) mod direction;
#[cfg(feature = "owned")]
pub(crate) mod entities;
pub mod error;
pub(crate) mod error_code;
pub mod types;
pub mod wire;

pub mod encode;
pub mod records;
pub mod vectored;
pub mod view;

pub mod messages;
#[cfg(feature = "owned")]
pub(crate) mod reference;

pub mod dispatch;
pub mod frame;
#[cfg(feature = "owned")]
pub(crate) mod splice;

#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing;

/// Without the `testing` feature there is no `AsVersion` to implement: the generated
/// `as_version!` invocations expand to nothing.
#[cfg(all(feature = "owned", not(feature = "testing")))]
macro_rules! as_version {
    ($($any:tt)*) => {};
}

/// What generated code imports.
#[allow(unused_imports)]
pub(crate) mod prelude {
    pub(crate) use crate::codec::encode::{self, Body, Encode, impl_body};
    #[cfg(feature = "owned")]
    pub(crate) use crate::codec::entities::{EntityKind, Walk};
    pub(crate) use crate::codec::error::{DecodeError, DecodeErrorKind, EncodeError};
    pub(crate) use crate::codec::records::RecordBatches;
    #[cfg(feature = "reference")]
    pub(crate) use crate::codec::reference::{
        ReadOwned, raw_tagged_field, read_bytes, read_list, read_nullable_bytes, read_nullable_list,
        read_nullable_str, read_owned_body, read_str, read_unknown_tagged_fields, reference_body,
    };
    #[cfg(feature = "owned")]
    pub(crate) use crate::codec::reference::{list_from_view, unknown_from_view};
    #[cfg(feature = "testing")]
    pub(crate) use crate::codec::testing::{AsVersion, as_version, tagged_as_version};
    pub(crate) use crate::codec::types::{Bytes, List, RawTaggedField, Str, Uuid, Ver, Versions};
    pub(crate) use crate::codec::vectored::{self, EncodeVectored, PartCount, RecordsOut, vectored_body};
    pub(crate) use crate::codec::view::{
        self, ArrayView, Layout, Src, body_view, private::ElementImpl, view_common,
    };
    pub(crate) use crate::codec::wire::{self, Reader, Size, TaggedIter, TaggedSize, Writer};
    #[cfg(feature = "alloc")]
    pub(crate) use alloc::vec::Vec;
    // The macro above, by path for the generated code (textual scope does not reach it).
    #[cfg(all(feature = "owned", not(feature = "testing")))]
    #[allow(clippy::single_component_path_imports)]
    pub(crate) use as_version;
    pub(crate) use core::fmt;
}
