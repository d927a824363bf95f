//! # kwire
//!
//! The Apache Kafka wire protocol for Rust: zero-copy views for decoding, exact-size
//! encoders that write into the caller's buffer, and a separate reference decoder, for every
//! version of every API of Apache Kafka 4.4; and, built on them, what programs that speak
//! Kafka need: connection state, record batches, secrets masking, schema reflection,
//! filters, an in-memory broker, a proxy and a packet-capture reader. The core is
//! `#![no_std]`, has no dependencies and allocates nothing on any decode or encode path.
//!
//! ## Where to start
//!
//! - **Decoding or encoding one message**: [`messages`] (each request and response body as
//!   a value type and a view, for example [`messages::ListGroupsRequest`] and
//!   [`messages::ListGroupsRequestView`]); the example at the end of this page.
//! - **Whole frames** (size prefix, header, body): [`dispatch`] reads a request frame into
//!   its typed view and encodes whole frames; [`frame`] has the pieces.
//! - **A client's, broker's or proxy's connection**: [`conn`] ([`conn::ClientConn`],
//!   [`conn::ServerConn`]), sans-IO, with `tokio_util` codecs in `conn::tokio` (feature
//!   `tokio`).
//! - **Record batches** (Produce and Fetch payloads): [`records`]; bodies written around
//!   borrowed record bytes for `writev`: [`vectored`].
//! - **A broker in a test**: [`broker::Broker::start`] (feature `broker`), dropped to stop;
//!   a small blocking client to talk to it: [`client`] (feature `client`).
//! - **A proxy with your own rules**: [`proxy::Proxy::builder`] with [`filter::Filter`]s
//!   (feature `proxy`).
//! - **Any message as data** (names, Kafka's JSON, an annotated tree): [`reflect`] (feature
//!   `reflect`). **Kafka traffic in a pcap**: [`capture`] (feature `capture`).
//! - **The long form**: [`manual`], the guides: the design, each application, the tests
//!   against Apache Kafka and real clients, the benchmarks.
//!
//! ## Modules
//!
//! The source tree is the architecture: each layer uses only the layers below it (a check
//! in the repository keeps it so, and keeps files out of import circles). Every module has
//! a short path at the crate root: [`messages`] is [`codec::messages`], [`conn`] is
//! [`session::conn`], and so on.
//!
//! | layer | module | short path | what it is for | feature |
//! |---|---|---|---|---|
//! | 1 | [`codec`] | | the protocol as bytes and types | |
//! | | [`codec::wire`] | [`wire`] | primitives: a bounds-checked reader, a writer, varints, sizes | |
//! | | [`codec::types`] | [`types`] | [`Str`], [`List`], [`Bytes`], [`Uuid`], tagged fields, [`Versions`] | |
//! | | [`codec::view`] | [`view`] | views, checked once when built, then read without failing; [`ArrayView`] | |
//! | | [`codec::encode`] | [`encode`] | the encoding traits ([`Body`], [`AnyBody`]) and their exact sizes | |
//! | | [`codec::messages`] | [`messages`] | every request and response, generated from Kafka's schemas | `all-apis`, or `api-*` each |
//! | | [`codec::frame`] | [`frame`] | the size prefix, request and response headers | |
//! | | [`codec::dispatch`] | [`dispatch`] | frames, headers and typed bodies together | |
//! | | [`codec::records`] | [`records`] | record batches: views, compression, validation, a builder | `gzip`, `snappy`, `lz4`, `zstd` |
//! | | [`codec::vectored`] | [`vectored`] | bodies written around borrowed record bytes, for `writev` | |
//! | | [`codec::error`] | [`error`] | [`DecodeError`], [`EncodeError`] | |
//! | 2 | [`session`] | | what a connection keeps between frames, without I/O | |
//! | | [`session::conn`] | [`conn`] | frame buffers, request/response pairing, acks=0, the ApiVersions fallback | `alloc` (`tokio` for codecs) |
//! | | [`session::secrets`] | [`secrets`] | the fields that carry credentials, masked in copies of frames | |
//! | 3 | [`tools`] | | generic work over any message, from the schemas as data | `reflect` |
//! | | [`tools::reflect`] | [`reflect`] | schemas, a dynamic [`reflect::Value`], Kafka's JSON form, an annotated tree | `reflect`, `json`, `explain` |
//! | 4 | [`filter`] | | filters that pass, rewrite, answer or refuse a connection's frames | `owned` |
//! | 5 | [`apps`] | | applications as libraries, with I/O | |
//! | | [`apps::broker`] | [`broker`] | an in-memory broker, one node or a cluster, for tests and demos | `broker`, `broker-scram`, `broker-tls` |
//! | | [`apps::proxy`] | [`proxy`] | a Kafka proxy on tokio: TLS, SNI, a filter chain per connection, tenants | `proxy` |
//! | | [`apps::capture`] | [`capture`] | Kafka traffic from pcap and pcapng captures, frames paired | `capture` |
//! | | [`apps::client`] | [`client`] | a small blocking client over `std`'s `TcpStream` and [`conn`], for tests | `client` |
//! | | [`manual`] | | the guides | |
//!
//! At the root: [`ApiKey`], [`ErrorCode`], [`Direction`] and the types above. The `kwire`
//! command (feature `cli`: `decode`, `encode`, `versions`, `serve`, `proxy`) is built on
//! the applications; [`manual::cli`] describes it.
//!
//! ## Features
//!
//! | feature | default | what |
//! |---|---|---|
//! | (none) | | views, encoders, frames, headers, error codes: `no_std`, no allocator needed |
//! | `alloc` | via `std` | owned values (`String`/`Vec`) to encode, [`conn`] |
//! | `owned` | | owned values converted from views (`From<View>`), [`filter`], the schema tools' rewriting |
//! | `reference` | | the reference decoder (`Message::decode`), a separate path for tests and fuzzing; `owned` |
//! | `std` | yes | `alloc`, and the hardware CRC-32C of record batches |
//! | `all-apis` | yes | every API; or only those you name: `api-produce`, `api-fetch`, ... (ApiVersions is always in) |
//! | `gzip`, `snappy`, `lz4`, `zstd` | | record-batch compression (`lz4` works without `std`) |
//! | `reflect`, `json`, `explain` | | every message's schema as data, dynamic values in Kafka's JSON form, a frame's annotated tree and hex dump |
//! | `tokio` | | `tokio_util` codecs over [`conn`] |
//! | `broker`, `broker-scram`, `broker-tls` | | [`broker`], its SASL/SCRAM and its TLS listener |
//! | `proxy` | | [`proxy`] |
//! | `encrypt`, `encrypt-aws` | | record encryption in the proxy ([`proxy::encrypt`]), and its AWS KMS client |
//! | `capture` | | [`capture`] |
//! | `client` | | [`client`] |
//! | `arbitrary` | | `arbitrary::Arbitrary` for every value, for fuzzing |
//! | `cli` | | the `kwire` command |
//! | `interop` | | nothing in the library: the test suites that need real brokers and clients |
//!
//! ## The codec in short
//!
//! - **Views** ([`messages::ListOffsetsRequestView`] and friends) borrow the input and are
//!   checked whole when built; after that accessors and iterators cannot fail. Strings come
//!   back as `&'a str`, arrays as [`ArrayView`]s whose iterators yield element views.
//!   Nothing on a view's path allocates.
//! - **Encoding** works on values ([`messages::ListOffsetsRequest`]) whose strings and
//!   lists may be borrowed ([`Str`], [`List`]), so it works without `alloc`:
//!   `encoded_len(version)` is exact and does every check; `encode(version, buf)` then
//!   fails only if `buf` is too short.
//! - **Owned values** (feature `owned`): `From<View>` converts a view. **The reference
//!   decoder** (feature `reference`): `Message::decode(bytes, version)` builds owned values
//!   by a separate, straightforward path, which the tests and fuzz targets hold the views against.
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
// `unsafe` is denied everywhere but in `codec::wire::utf8` and `codec::records::crc::sse42`
// (see there).
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
#[cfg(feature = "owned")]
pub mod filter;
pub mod session;
#[cfg(feature = "reflect")]
pub mod tools;

// The guides of `docs/`, for docs.rs; documentation only (and no doctests).
#[cfg(all(doc, not(doctest)))]
pub mod manual;

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
