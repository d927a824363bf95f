//! What the generated reference decoder is built from: a trait for reading owned values
//! and helpers for arrays, strings, bytes and tagged fields. It shares only the primitives
//! of [`crate::codec::wire`] with the views.

use alloc::{string::String, vec::Vec};

use crate::codec::encode::Body;
use crate::codec::error::{DecodeError, DecodeErrorKind};
use crate::codec::types::{Bytes, List, RawTaggedField, Str, Uuid, Ver};
use crate::codec::wire::Reader;

/// A type the reference decoder can build from the input, allocating as it goes.
pub(crate) trait ReadOwned: Sized {
    /// Decodes one value.
    fn read_owned(r: &mut Reader<'_>, ver: Ver, field: &'static str) -> Result<Self, DecodeError>;
}

macro_rules! scalar {
    ($($t:ty => $read:ident),*) => {$(
        impl ReadOwned for $t {
            fn read_owned(r: &mut Reader<'_>, _: Ver, field: &'static str) -> Result<Self, DecodeError> {
                r.$read(field)
            }
        }
    )*};
}

scalar!(i8 => i8, i16 => i16, i32 => i32, i64 => i64, u16 => u16, u32 => u32, f64 => f64, bool => bool, Uuid => uuid);

impl ReadOwned for Str<'static> {
    fn read_owned(r: &mut Reader<'_>, ver: Ver, field: &'static str) -> Result<Self, DecodeError> {
        read_str(r, ver.flexible, field)
    }
}

/// A non-nullable array. The count was checked against the bytes left before this
/// allocates, so a hostile count cannot allocate more than the input.
pub(crate) fn read_list<T: ReadOwned>(
    r: &mut Reader<'_>,
    ver: Ver,
    field: &'static str,
) -> Result<Vec<T>, DecodeError> {
    let count = array_count(r, ver.flexible, field)?;
    read_elements(r, count, ver, field)
}

/// A nullable array (`None` for null).
pub(crate) fn read_nullable_list<T: ReadOwned>(
    r: &mut Reader<'_>,
    ver: Ver,
    field: &'static str,
) -> Result<Option<Vec<T>>, DecodeError> {
    match nullable_array_count(r, ver.flexible, field)? {
        Some(count) => read_elements(r, count, ver, field).map(Some),
        None => Ok(None),
    }
}

// The reads below are out of line, and the array counts' are not generic: the reader's
// methods are inlined for the views, and inlined into each of the 484 structs' `read_owned`
// and 282 element types' `read_list` they made most of the reference decoder's machine code
// (docs/benchmarks.md, "Build cost"). The reference decoder is the tests' oracle, not a hot path.

/// The count of a non-nullable array.
#[inline(never)]
fn array_count(r: &mut Reader<'_>, flexible: bool, field: &'static str) -> Result<usize, DecodeError> {
    r.array_len_non_null(flexible, field)
}

/// The count of a nullable array (`None` for null).
#[inline(never)]
fn nullable_array_count(
    r: &mut Reader<'_>,
    flexible: bool,
    field: &'static str,
) -> Result<Option<usize>, DecodeError> {
    r.array_len(flexible, field)
}

/// The most the reference decoder reserves for an array before reading its elements.
/// A count only has to be no larger than the bytes left, and a decoded element can take
/// dozens of times the bytes of its encoding, so reserving `count` elements up front would
/// let a small input claim a large allocation (120 bytes per input byte for ListGroups
/// groups); beyond this the vector grows with the elements actually read.
const MAX_RESERVE_BYTES: usize = 64 * 1024;

fn read_elements<T: ReadOwned>(
    r: &mut Reader<'_>,
    count: usize,
    ver: Ver,
    field: &'static str,
) -> Result<Vec<T>, DecodeError> {
    let mut items = Vec::with_capacity(count.min(MAX_RESERVE_BYTES / core::mem::size_of::<T>().max(1)));
    for _ in 0..count {
        items.push(T::read_owned(r, ver, field)?);
    }
    Ok(items)
}

/// A non-nullable string, copied.
#[inline(never)]
pub(crate) fn read_str(
    r: &mut Reader<'_>,
    flexible: bool,
    field: &'static str,
) -> Result<Str<'static>, DecodeError> {
    r.str(flexible, field).map(owned_str)
}

/// A nullable string, copied (`None` for null).
#[inline(never)]
pub(crate) fn read_nullable_str(
    r: &mut Reader<'_>,
    flexible: bool,
    field: &'static str,
) -> Result<Option<Str<'static>>, DecodeError> {
    Ok(r.nullable_str(flexible, field)?.map(owned_str))
}

/// A non-nullable byte array (`bytes` or `records`), copied.
#[allow(dead_code)]
#[inline(never)]
pub(crate) fn read_bytes(
    r: &mut Reader<'_>,
    flexible: bool,
    field: &'static str,
) -> Result<Bytes<'static>, DecodeError> {
    r.bytes(flexible, field).map(owned_bytes)
}

/// A nullable byte array (`bytes` or `records`), copied (`None` for null).
#[allow(dead_code)]
#[inline(never)]
pub(crate) fn read_nullable_bytes(
    r: &mut Reader<'_>,
    flexible: bool,
    field: &'static str,
) -> Result<Option<Bytes<'static>>, DecodeError> {
    Ok(r.nullable_bytes(flexible, field)?.map(owned_bytes))
}

/// An owned copy of a string.
fn owned_str(s: &str) -> Str<'static> {
    Str::Owned(String::from(s))
}

/// An owned copy of a byte array (for messages with `bytes` fields).
#[allow(dead_code)]
fn owned_bytes(b: &[u8]) -> Bytes<'static> {
    List::Owned(b.to_vec())
}

/// An unknown tagged field, copied out of `value` (which holds exactly the field's bytes).
pub(crate) fn raw_tagged_field(tag: u32, value: &mut Reader<'_>) -> RawTaggedField<'static> {
    let rest = value.remaining();
    let data = value.take(rest, "").unwrap_or_default().to_vec();
    RawTaggedField { tag, data: List::Owned(data) }
}

/// A whole body of `B` at `version`.
pub(crate) fn read_owned_body<B: Body + ReadOwned>(bytes: &[u8], version: i16) -> Result<B, DecodeError> {
    let Some(ver) = B::ver(version) else {
        return Err(DecodeError::new(DecodeErrorKind::UnsupportedVersion(version), 0, B::NAME));
    };
    let mut r = Reader::new(bytes);
    let body = B::read_owned(&mut r, ver, B::NAME)?;
    r.finish(B::NAME)?;
    Ok(body)
}

/// Reads the tagged section of a struct that knows no tagged fields into
/// `$this.unknown_tagged_fields`, every field kept raw; versions that are not flexible have
/// no section.
macro_rules! read_unknown_tagged_fields {
    ($this:ident, $r:ident, $ver:ident, $field:expr) => {
        if $ver.flexible {
            $this.unknown_tagged_fields = $crate::codec::reference::unknown_tagged_fields($r, $field)?;
        }
    };
}

/// What [`read_unknown_tagged_fields!`] reads: one function for every struct, rather than a
/// closure of each struct's own and so an instance of `Reader::tagged_fields` per struct.
/// (It costs the reference decoder a call per section: 2-19% more instructions; reading an
/// empty section in the macro instead measured the same as before there, but changed how
/// LLVM inlined the views' array checks in `benches/instructions.rs`, ListGroups v5 request
/// view +22%; see [`manual::design`](crate::manual::design), "Hot paths".)
#[inline]
pub(crate) fn unknown_tagged_fields(
    r: &mut Reader<'_>,
    field: &'static str,
) -> Result<List<'static, RawTaggedField<'static>>, DecodeError> {
    let mut unknown = Vec::new();
    r.tagged_fields(field, |tag, value| {
        unknown.push(raw_tagged_field(tag, value));
        Ok(false)
    })?;
    Ok(List::Owned(unknown))
}

pub(crate) use read_unknown_tagged_fields;

/// What every body has in the reference decoder beyond what every struct has (`From` its
/// view): `decode`. The generated code invokes it once per body, e.g.
/// `reference_body!(ListOffsetsRequest)`.
macro_rules! reference_body {
    ($body:ident) => {
        impl $body<'static> {
            #[doc = concat!("Decodes a ", stringify!($body), " body of `version` with the reference decoder, which")]
            /// allocates owned strings and vectors.
            pub fn decode(bytes: &[u8], version: i16) -> Result<Self, DecodeError> {
                read_owned_body(bytes, version)
            }
        }
    };
}

pub(crate) use reference_body;
