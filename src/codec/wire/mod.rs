//! Wire primitives: a bounds-checked [`Reader`], a [`Writer`] into a caller's buffer, and
//! the size arithmetic both sides share.
//!
//! Every Kafka schema type has its reader, writer and size function here: fixed-width
//! integers (big-endian), `float64`, `bool`, `uuid`, unsigned varints, zig-zag varints and
//! varlongs, classic (int16/int32 length) and compact (unsigned varint length + 1) strings
//! and bytes, nullable forms, array counts (int32, -1 = null; compact count + 1, 0 = null)
//! and tagged-field sections. Generated message code is built only from these.
//!
//! The reader never panics and never reads past its slice: every short read is a
//! [`crate::DecodeErrorKind::Truncated`] error at the offset where it happened. The writer
//! never panics and never writes past its slice: a write that does not fit, or a value the
//! encoder rejects, stops it, and the encoder asks the size step for the error.
//!
//! # What is public
//!
//! The documented surface is what the views hand out: [`TaggedSection`] and
//! [`TaggedIter`] (unknown tagged fields), and [`MAX_STRING_LEN`]. Generic code that
//! walks or builds any message uses [`crate::tools::reflect`] (its walker and `Value`), which is
//! built on these primitives, not a copy of them.
//!
//! The reader, the writer and the size functions stay reachable as `kwire::wire::*` only
//! for kwire's own tests, fuzz checks and benches, and are `#[doc(hidden)]`: they are not
//! part of the stable API and may change in any release.

/// Kafka's limit on the length of any string, classic or compact.
pub const MAX_STRING_LEN: usize = 0x7fff;

mod read;
mod tagged;
mod utf8;
pub(crate) mod varint;
mod write;

#[doc(hidden)]
pub use read::{Reader, utf8};
pub use tagged::{TaggedIter, TaggedSection};
pub(crate) use utf8::str_from;
#[doc(hidden)]
pub use varint::{uvarint_len, uvarlong_len, varint_len, varlong_len};
#[doc(hidden)]
pub use write::*;
