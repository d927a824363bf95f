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
//! ## Layers
//!
//! The source tree is the architecture; each layer uses only the layers below it
//! (`.ci/layers` checks this, and that no files import each other in a circle):
//!
//! | Layer | Module | What it holds |
//! |---|---|---|
//! | 1 | [`codec`] | the vocabulary, wire primitives, views, encoders, the generated messages, the reference decoder, frames, dispatch, vectored encoding, record batches |
//! | 2 | [`session`] | sans-IO connection state (`conn`, feature `alloc`) and the fields that carry secrets |
//! | 3 | `tools` | schema reflection (`reflect`: decode, JSON, explain; feature `reflect`) |
//! | 4 | [`filter`] | proxy filters (feature `alloc`) |
//! | 5 | `apps` | the broker, the proxy, the capture reader and the test client (features `broker`, `proxy`, `capture`, `client`) |
//!
//! The `kwire` command (`src/bin/kwire`, feature `cli`) sits on top. Every module keeps its
//! short path at the crate root: [`messages`] is [`codec::messages`], `conn` is
//! `session::conn`, and so on.
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
// `unsafe` is denied everywhere but in `codec::wire::utf8` (see there).
#![deny(unsafe_code)]
// With only some APIs compiled in, helpers that only the others use go unused.
#![cfg_attr(not(feature = "all-apis"), allow(dead_code))]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

// The layers, bottom up (see the table above and `.ci/layers`).
#[cfg(any(feature = "broker", feature = "proxy", feature = "capture", feature = "client"))]
pub mod apps;
pub mod codec;
#[cfg(feature = "alloc")]
pub mod filter;
pub mod session;
#[cfg(feature = "reflect")]
pub mod tools;

// The short paths, kept for every module.
#[cfg(feature = "broker")]
pub use apps::broker;
#[cfg(feature = "capture")]
pub use apps::capture;
#[cfg(feature = "client")]
pub use apps::client;
#[cfg(feature = "proxy")]
pub use apps::proxy;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub use codec::testing;
pub use codec::{dispatch, encode, error, frame, messages, records, types, vectored, view, wire};
#[cfg(feature = "alloc")]
pub use session::conn;
pub use session::secrets;
#[cfg(feature = "reflect")]
pub use tools::reflect;

pub use codec::api_key::{ApiKey, UnknownApiKey};
pub use codec::direction::Direction;
pub use codec::encode::{AnyBody, Body};
pub use codec::error::{DecodeError, DecodeErrorKind, EncodeError};
pub use codec::error_code::{ErrorCode, UnknownErrorCode};
pub use codec::types::{Bytes, List, RawTaggedField, Str, Uuid, Versions};
pub use codec::view::{ArrayIter, ArrayView};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
