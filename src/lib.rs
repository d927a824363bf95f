//! # kwire
//!
//! The Apache Kafka wire protocol: zero-copy views for decoding, exact-size encoders that
//! write into the caller's buffer, and a reference decoder, for every version of every
//! supported message, in a `#![no_std]` crate.
//!
//! - **Views** ([`messages::ListOffsetsRequestView`] and friends) borrow the input and are
//!   checked whole when built; after that accessors and iterators cannot fail. Strings come
//!   back as `&'a str`, arrays as [`ArrayView`]s whose iterators yield element views.
//!   Nothing on a view's path allocates.
//! - **Encoding** works on values ([`messages::ListOffsetsRequest`]) whose strings and
//!   lists may be borrowed ([`Str`], [`List`]), so it works without `alloc`:
//!   `encoded_len(version)` is exact and does every check; `encode(version, buf)` then
//!   fails only if `buf` is too short.
//! - **The reference decoder** (feature `alloc`): `Message::decode(bytes, version)` builds
//!   owned values by a separate, straightforward path; `From<View>` converts views.
//! - **Frames** ([`frame`]): size-prefixed framing and headers; [`dispatch`] puts frames,
//!   headers and typed body views together and encodes whole frames.
//! - **Secrets** ([`secrets`]): the fields that carry credentials, and masked copies of
//!   frames for logs and recordings; **filters** ([`filter`], feature `alloc`) that pass,
//!   rewrite, answer or refuse frames for a proxy.
//! - **Record batches** ([`records`]): zero-copy views of the batches in `records` fields,
//!   checked lazily, as they are iterated.
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
//! let first = view.states_filter().iter().next().unwrap();
//! assert_eq!(first, "Stable");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
// `unsafe` is denied everywhere but in `wire::utf8` (see there).
#![deny(unsafe_code)]
// With only some APIs compiled in, helpers that only the others use go unused.
#![cfg_attr(not(feature = "all-apis"), allow(dead_code))]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

// The layers, bottom up: the vocabulary and the wire primitives; views and encoders built
// on them; the generated messages; framing and dispatch; the reference decoder.
mod api_key;
mod direction;
pub mod error;
mod error_code;
pub mod types;
pub mod wire;

pub mod encode;
pub mod records;
pub mod view;

pub mod messages;

pub mod dispatch;
#[cfg(feature = "alloc")]
pub mod filter;
pub mod frame;
pub mod secrets;
pub mod vectored;

#[cfg(feature = "alloc")]
pub mod conn;

#[cfg(feature = "broker")]
pub mod broker;

#[cfg(feature = "client")]
pub mod client;

#[cfg(feature = "proxy")]
pub mod proxy;

#[cfg(feature = "capture")]
pub mod capture;
#[cfg(any(feature = "explain", feature = "capture", feature = "proxy"))]
mod civil;

#[cfg(feature = "alloc")]
mod reference;

#[cfg(feature = "reflect")]
pub mod reflect;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing;

/// Without the `testing` feature there is no `AsVersion` to implement: the generated
/// `as_version!` invocations expand to nothing.
#[cfg(all(feature = "alloc", not(feature = "testing")))]
macro_rules! as_version {
    ($($any:tt)*) => {};
}

pub use api_key::{ApiKey, UnknownApiKey};
pub use direction::Direction;
pub use encode::{AnyBody, Body};
pub use error::{DecodeError, DecodeErrorKind, EncodeError};
pub use error_code::{ErrorCode, UnknownErrorCode};
pub use types::{Bytes, List, RawTaggedField, Str, Uuid, Versions};
pub use view::{ArrayIter, ArrayView};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// What generated code imports.
#[allow(unused_imports)]
mod prelude {
    pub(crate) use crate::encode::{self, Body, Encode, impl_body};
    pub(crate) use crate::error::{DecodeError, DecodeErrorKind, EncodeError};
    pub(crate) use crate::records::RecordBatches;
    #[cfg(feature = "alloc")]
    pub(crate) use crate::reference::{
        ReadOwned, list_from_view, raw_tagged_field, read_bytes, read_list, read_nullable_bytes,
        read_nullable_list, read_nullable_str, read_owned_body, read_str, read_unknown_tagged_fields,
        reference_body, unknown_from_view,
    };
    #[cfg(feature = "testing")]
    pub(crate) use crate::testing::{AsVersion, as_version, tagged_as_version};
    pub(crate) use crate::types::{Bytes, List, RawTaggedField, Str, Uuid, Ver, Versions};
    pub(crate) use crate::vectored::{self, EncodeVectored, PartCount, RecordsOut, vectored_body};
    pub(crate) use crate::view::{
        self, ArrayView, Layout, Src, body_view, private::ElementImpl, view_common,
    };
    pub(crate) use crate::wire::{self, Reader, Size, TaggedIter, TaggedSize, Writer};
    #[cfg(feature = "alloc")]
    pub(crate) use alloc::vec::Vec;
    // The macro above, by path for the generated code (textual scope does not reach it).
    #[cfg(all(feature = "alloc", not(feature = "testing")))]
    #[allow(clippy::single_component_path_imports)]
    pub(crate) use as_version;
    pub(crate) use core::fmt;
}
