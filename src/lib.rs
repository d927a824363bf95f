//! # kwire
//!
//! The Apache Kafka wire protocol: zero-copy views for decoding, exact-size encoders that
//! write into the caller's buffer, and a reference decoder, for every version of every
//! supported message, in a `#![no_std]` crate.
//!
//! - **Views** ([`messages::ListOffsetsRequestView`] and friends) borrow the input:
//!   strings come back as `&'a str`, arrays as [`ArrayView`]s that decode their elements as
//!   they are iterated. Nothing on a view's path allocates.
//! - **Encoding** works on values ([`messages::ListOffsetsRequest`]) whose strings and
//!   lists may be borrowed ([`Str`], [`List`]), so it works without `alloc`:
//!   `encoded_len(version)` is exact and does every check; `encode(version, buf)` then
//!   fails only if `buf` is too short.
//! - **The reference decoder** (feature `alloc`): `Message::decode(bytes, version)` builds
//!   owned values by a separate, straightforward path; `TryFrom<View>` converts views.
//! - **Frames** ([`frame`]): size-prefixed framing, request and response headers whose
//!   versions the crate works out, and dispatch of a request frame to a typed body view.
//!
//! ```
//! use kwire::messages::{ListGroupsRequest, ListGroupsRequestView};
//! use kwire::Str;
//!
//! // Encode a ListGroups v5 request body into a buffer on the stack.
//! let states = [Str::Borrowed("Stable")];
//! let request = ListGroupsRequest { states_filter: (&states).into(), ..Default::default() };
//! let mut buf = [0u8; 64];
//! let n = request.encode(5, &mut buf)?;
//! assert_eq!(n, request.encoded_len(5)?);
//!
//! // Decode it again without allocating.
//! let view = ListGroupsRequestView::new(&buf[..n], 5)?;
//! let first = view.states_filter().iter().next().unwrap()?;
//! assert_eq!(first, "Stable");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![no_std]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

pub mod codec;
pub mod error;
pub mod error_code;
pub mod frame;
pub mod messages;
pub mod records;
#[cfg(feature = "alloc")]
mod reference;
pub mod reflect;
pub mod types;
pub mod view;
pub mod wire;

pub use error::{DecodeError, DecodeErrorKind, EncodeError};
pub use error_code::ErrorCode;
pub use messages::ApiKey;
pub use types::{Bytes, List, RawTaggedField, Str, Uuid, Ver, Versions};
pub use view::{ArrayIter, ArrayView};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// What generated code imports.
#[allow(unused_imports)]
mod prelude {
    pub(crate) use crate::codec::{self, Body, Encode, ViewElement};
    #[cfg(feature = "alloc")]
    pub(crate) use crate::codec::{
        AsVersion, FromView, ReadOwned, list_from_view, owned_bytes, owned_str, raw_tagged_field, read_list,
        read_nullable_list, read_owned_body,
    };
    pub(crate) use crate::error::{DecodeError, DecodeErrorKind, EncodeError};
    pub(crate) use crate::reflect::{FieldSchema, FieldType, MessageSchema, StructSchema};
    pub(crate) use crate::types::{Bytes, List, RawTaggedField, Str, Uuid, Ver, Versions};
    pub(crate) use crate::view::ArrayView;
    pub(crate) use crate::wire::{self, Reader, TaggedIter, TaggedSection, TaggedSize, Writer};
    #[cfg(feature = "alloc")]
    pub(crate) use alloc::vec::Vec;
}
