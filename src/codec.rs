//! The traits that generated message code implements, and their implementations for the
//! schema's scalar and string types, so that arrays of any element type share one
//! decoder, one encoder and one reference decoder.
//!
//! Users do not normally call these directly: each message has inherent `new`,
//! `encoded_len`, `encode` and `decode` methods built on them.

#[cfg(feature = "alloc")]
use alloc::{string::String, vec::Vec};

use crate::error::{DecodeError, DecodeErrorKind, EncodeError};
#[cfg(feature = "alloc")]
use crate::types::{Bytes, List, RawTaggedField};
use crate::types::{Str, Uuid, Ver, Versions};
use crate::wire::{self, Reader, Writer};

/// An element of an array view: how to decode one element from the input and how to
/// skip over one.
///
/// `skip` checks the structure (every length, count, varint and tagged section) without
/// checking UTF-8 or building anything; `read` does what a view of the element checks on
/// construction. `field` names the array, for errors in elements that have no struct of
/// their own (strings and scalars).
pub trait ViewElement<'a>: Sized {
    /// Decodes one element.
    fn read(r: &mut Reader<'a>, ver: Ver, field: &'static str) -> Result<Self, DecodeError>;

    /// Checks one element's structure and moves past it.
    fn skip(r: &mut Reader<'a>, ver: Ver, field: &'static str) -> Result<(), DecodeError>;

    /// The size of every element in this version, when it is fixed and needs no checks
    /// beyond its length; arrays of such elements are skipped with one multiplication.
    fn fixed_size(ver: Ver) -> Option<usize> {
        let _ = ver;
        None
    }
}

/// A value that can be encoded: its exact size, then its bytes.
///
/// `size` does every semantic check (versions, lengths, tagged fields) and `write` relies
/// on it having succeeded for the same version.
pub trait Encode {
    /// The exact number of bytes `write` will produce, or why the value cannot be encoded
    /// in this version.
    fn size(&self, ver: Ver, field: &'static str) -> Result<usize, EncodeError>;

    /// Writes the value; only called after `size` succeeded for the same version.
    fn write(&self, w: &mut Writer<'_>, ver: Ver);

    /// The size of every value of this type in this version, when it is fixed and the
    /// value needs no checks; arrays of such elements are sized with one multiplication.
    fn fixed_size(ver: Ver) -> Option<usize> {
        let _ = ver;
        None
    }
}

/// A type the reference decoder can build from the input, allocating as it goes.
#[cfg(feature = "alloc")]
pub trait ReadOwned: Sized {
    /// Decodes one value.
    fn read_owned(r: &mut Reader<'_>, ver: Ver, field: &'static str) -> Result<Self, DecodeError>;
}

macro_rules! scalar {
    ($t:ty, $read:ident, $write:ident, $n:expr) => {
        impl<'a> ViewElement<'a> for $t {
            #[inline]
            fn read(r: &mut Reader<'a>, _: Ver, field: &'static str) -> Result<Self, DecodeError> {
                r.$read(field)
            }
            #[inline]
            fn skip(r: &mut Reader<'a>, _: Ver, field: &'static str) -> Result<(), DecodeError> {
                r.take($n, field).map(|_| ())
            }
            fn fixed_size(_: Ver) -> Option<usize> {
                Some($n)
            }
        }

        impl Encode for $t {
            #[inline]
            fn size(&self, _: Ver, _: &'static str) -> Result<usize, EncodeError> {
                Ok($n)
            }
            #[inline]
            fn write(&self, w: &mut Writer<'_>, _: Ver) {
                w.$write(*self);
            }
            fn fixed_size(_: Ver) -> Option<usize> {
                Some($n)
            }
        }

        #[cfg(feature = "alloc")]
        impl ReadOwned for $t {
            fn read_owned(r: &mut Reader<'_>, _: Ver, field: &'static str) -> Result<Self, DecodeError> {
                r.$read(field)
            }
        }
    };
}

scalar!(i8, i8, i8, 1);
scalar!(i16, i16, i16, 2);
scalar!(i32, i32, i32, 4);
scalar!(i64, i64, i64, 8);
scalar!(u16, u16, u16, 2);
scalar!(u32, u32, u32, 4);
scalar!(f64, f64, f64, 8);
scalar!(bool, bool, bool, 1);
scalar!(Uuid, uuid, uuid, 16);

impl<'a> ViewElement<'a> for &'a str {
    #[inline]
    fn read(r: &mut Reader<'a>, ver: Ver, field: &'static str) -> Result<Self, DecodeError> {
        r.str(ver.flexible, field)
    }
    #[inline]
    fn skip(r: &mut Reader<'a>, ver: Ver, field: &'static str) -> Result<(), DecodeError> {
        r.str_bytes(ver.flexible, field).map(|_| ())
    }
}

impl Encode for Str<'_> {
    #[inline]
    fn size(&self, ver: Ver, field: &'static str) -> Result<usize, EncodeError> {
        wire::string_size(self.len(), ver.flexible, field)
    }
    #[inline]
    fn write(&self, w: &mut Writer<'_>, ver: Ver) {
        w.str(self, ver.flexible);
    }
}

#[cfg(feature = "alloc")]
impl ReadOwned for Str<'static> {
    fn read_owned(r: &mut Reader<'_>, ver: Ver, field: &'static str) -> Result<Self, DecodeError> {
        r.str(ver.flexible, field).map(owned_str)
    }
}

/// Size of an array with its count prefix (`None` = null).
#[inline]
pub fn array_size<T: Encode>(
    items: Option<&[T]>,
    ver: Ver,
    field: &'static str,
) -> Result<usize, EncodeError> {
    let Some(items) = items else {
        return Ok(wire::null_size(ver.flexible, true));
    };
    let prefix = wire::array_prefix_size(items.len(), ver.flexible, field)?;
    let body = match T::fixed_size(ver) {
        Some(each) => each.checked_mul(items.len()).ok_or(EncodeError::TooLong { field })?,
        None => {
            let mut total = 0usize;
            for item in items {
                total = wire::add(total, item.size(ver, field)?, field)?;
            }
            total
        }
    };
    wire::add(prefix, body, field)
}

/// Writes an array with its count prefix (`None` = null).
#[inline]
pub fn write_array<T: Encode>(w: &mut Writer<'_>, items: Option<&[T]>, ver: Ver) {
    w.array_len(items.map(<[T]>::len), ver.flexible);
    for item in items.unwrap_or_default() {
        item.write(w, ver);
    }
}

/// Reference decoder: a non-nullable array. The count was checked against the bytes
/// left before this allocates, so a hostile count cannot allocate more than the input.
#[cfg(feature = "alloc")]
pub fn read_list<T: ReadOwned>(
    r: &mut Reader<'_>,
    ver: Ver,
    field: &'static str,
) -> Result<Vec<T>, DecodeError> {
    let count = r.array_len_non_null(ver.flexible, field)?;
    read_elements(r, count, ver, field)
}

/// Reference decoder: a nullable array (`None` for null).
#[cfg(feature = "alloc")]
pub fn read_nullable_list<T: ReadOwned>(
    r: &mut Reader<'_>,
    ver: Ver,
    field: &'static str,
) -> Result<Option<Vec<T>>, DecodeError> {
    match r.array_len(ver.flexible, field)? {
        Some(count) => read_elements(r, count, ver, field).map(Some),
        None => Ok(None),
    }
}

/// The most the reference decoder reserves for an array before reading its elements.
/// A count only has to be no larger than the bytes left, and a decoded element can take
/// dozens of times the bytes of its encoding, so reserving `count` elements up front would
/// let a small input claim a large allocation (120 bytes per input byte for ListGroups
/// groups); beyond this the vector grows with the elements actually read.
#[cfg(feature = "alloc")]
const MAX_RESERVE_BYTES: usize = 64 * 1024;

#[cfg(feature = "alloc")]
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

/// Reference decoder: an owned copy of a string.
#[cfg(feature = "alloc")]
pub fn owned_str(s: &str) -> Str<'static> {
    Str::Owned(String::from(s))
}

/// Reference decoder: an owned copy of a byte array.
#[cfg(feature = "alloc")]
pub fn owned_bytes(b: &[u8]) -> Bytes<'static> {
    List::Owned(b.to_vec())
}

/// Reference decoder: an unknown tagged field, copied out of `value` (which holds exactly
/// the field's bytes).
#[cfg(feature = "alloc")]
pub fn raw_tagged_field(tag: u32, value: &mut Reader<'_>) -> RawTaggedField<'static> {
    let rest = value.remaining();
    let data = value.take(rest, "").unwrap_or_default().to_vec();
    RawTaggedField { tag, data: List::Owned(data) }
}

/// Reference decoder: a whole body of `B` at `version`.
#[cfg(feature = "alloc")]
pub fn read_owned_body<B: Body + ReadOwned>(bytes: &[u8], version: i16) -> Result<B, DecodeError> {
    let Some(ver) = B::ver(version) else {
        return Err(DecodeError::new(DecodeErrorKind::UnsupportedVersion(version), 0, B::NAME));
    };
    let mut r = Reader::new(bytes);
    let body = B::read_owned(&mut r, ver, B::NAME)?;
    r.finish(B::NAME)?;
    Ok(body)
}

/// A message body: a top-level request or response with its API key and version table.
pub trait Body: Encode {
    /// The message name, e.g. `"ListOffsetsRequest"`.
    const NAME: &'static str;
    /// The API key.
    const API_KEY: i16;
    /// Whether this is a request (else a response).
    const IS_REQUEST: bool;
    /// The versions that exist.
    const VERSIONS: Versions;
    /// The versions that use the flexible encoding.
    const FLEXIBLE_VERSIONS: Versions;

    /// The version with its flexibility, if it exists.
    fn ver(version: i16) -> Option<Ver> {
        Self::VERSIONS
            .contains(version)
            .then(|| Ver { version, flexible: Self::FLEXIBLE_VERSIONS.contains(version) })
    }
}

/// Any message body that can be encoded, whether its type is known statically (every
/// [`Body`]) or chosen at run time (`RequestBody`, `ResponseBody`). Frame encoders take
/// this.
pub trait AnyBody {
    /// The API key.
    fn api_key(&self) -> i16;
    /// The exact encoded size at `version`, or why it cannot be encoded.
    fn encoded_len(&self, version: i16) -> Result<usize, EncodeError>;
    /// Encodes at `version` into the front of `buf`; returns the bytes written.
    fn encode(&self, version: i16, buf: &mut [u8]) -> Result<usize, EncodeError>;
    /// Writes the body into `out` without sizing it again: only after
    /// [`AnyBody::encoded_len`] succeeded for the same version and returned `out.len()`.
    /// Frame encoders use it so that a body is sized once.
    fn write_sized(&self, version: i16, out: &mut [u8]);
}

impl<B: Body> AnyBody for B {
    fn api_key(&self) -> i16 {
        B::API_KEY
    }
    fn encoded_len(&self, version: i16) -> Result<usize, EncodeError> {
        body_len(self, version)
    }
    fn encode(&self, version: i16, buf: &mut [u8]) -> Result<usize, EncodeError> {
        encode_body(self, version, buf)
    }
    fn write_sized(&self, version: i16, out: &mut [u8]) {
        write_body(self, version, out);
    }
}

/// Writes a body already sized for `version` (see [`AnyBody::write_sized`]).
#[inline]
pub fn write_body<B: Body>(body: &B, version: i16, out: &mut [u8]) {
    if let Some(ver) = B::ver(version) {
        let mut w = Writer::new(out);
        body.write(&mut w, ver);
        debug_assert_eq!(w.pos(), out.len(), "{} size and write disagree", B::NAME);
    }
}

/// Checks `bytes` as a whole body of `B` at `version` and returns its view `V`: the
/// version must exist and every byte must belong to the body.
pub fn read_body<'a, B: Body, V: ViewElement<'a>>(bytes: &'a [u8], version: i16) -> Result<V, DecodeError> {
    let Some(ver) = B::ver(version) else {
        return Err(DecodeError::new(DecodeErrorKind::UnsupportedVersion(version), 0, B::NAME));
    };
    let mut r = Reader::new(bytes);
    // Returned as read, not unwrapped and wrapped again, which saves copying a large view.
    let view = V::read(&mut r, ver, B::NAME);
    match r.finish(B::NAME) {
        Err(e) if view.is_ok() => Err(e),
        _ => view,
    }
}

/// The exact encoded size of a body at `version`.
pub fn body_len<B: Body>(body: &B, version: i16) -> Result<usize, EncodeError> {
    let ver = B::ver(version).ok_or(EncodeError::UnsupportedVersion { message: B::NAME, version })?;
    body.size(ver, B::NAME)
}

/// Encodes a body at `version` into the front of `buf`, after sizing it.
pub fn encode_body<B: Body>(body: &B, version: i16, buf: &mut [u8]) -> Result<usize, EncodeError> {
    let ver = B::ver(version).ok_or(EncodeError::UnsupportedVersion { message: B::NAME, version })?;
    let needed = body.size(ver, B::NAME)?;
    let Some(out) = buf.get_mut(..needed) else {
        return Err(EncodeError::BufferTooSmall { needed, available: buf.len() });
    };
    let mut w = Writer::new(out);
    body.write(&mut w, ver);
    debug_assert_eq!(w.pos(), needed, "{} size and write disagree", B::NAME);
    Ok(needed)
}

/// Conversion from a view to a value that borrows the view's strings and bytes (arrays
/// become vectors).
#[cfg(feature = "alloc")]
pub trait FromView<V>: Sized {
    /// Converts, validating what the view had not validated yet.
    fn from_view(view: V) -> Result<Self, DecodeError>;
}

#[cfg(feature = "alloc")]
macro_rules! from_view_identity {
    ($($t:ty),*) => {$(
        impl FromView<$t> for $t {
            fn from_view(view: $t) -> Result<Self, DecodeError> {
                Ok(view)
            }
        }
    )*};
}

#[cfg(feature = "alloc")]
from_view_identity!(i8, i16, i32, i64, u16, u32, f64, bool, Uuid);

#[cfg(feature = "alloc")]
impl<'a> FromView<&'a str> for Str<'a> {
    fn from_view(view: &'a str) -> Result<Self, DecodeError> {
        Ok(Str::Borrowed(view))
    }
}

/// The value as it reads back after being encoded at a version: fields the version
/// cannot carry are back at their defaults, and unknown tagged fields are gone in
/// non-flexible versions. Fuzz targets and property tests compare decoded values with this.
#[cfg(feature = "alloc")]
pub trait AsVersion {
    /// The value as a decoder of `ver` would see it.
    fn as_version(&self, ver: Ver) -> Self;
}

#[cfg(feature = "alloc")]
macro_rules! as_version_clone {
    ($($t:ty),*) => {$(
        impl AsVersion for $t {
            fn as_version(&self, _: Ver) -> Self {
                self.clone()
            }
        }
    )*};
}

#[cfg(feature = "alloc")]
as_version_clone!(i8, i16, i32, i64, u16, u32, f64, bool, Uuid, Str<'_>, Bytes<'_>);

#[cfg(feature = "alloc")]
impl<T: AsVersion> AsVersion for Option<T> {
    fn as_version(&self, ver: Ver) -> Self {
        self.as_ref().map(|v| v.as_version(ver))
    }
}

// Byte fields (`List<'_, u8>`) are cloned whole above; other lists element by element.
#[cfg(feature = "alloc")]
impl<T: AsVersion> AsVersion for List<'_, T> {
    fn as_version(&self, ver: Ver) -> Self {
        List::Owned(self.iter().map(|v| v.as_version(ver)).collect())
    }
}

/// Converts every element of an array view.
#[cfg(feature = "alloc")]
pub fn list_from_view<'a, V: ViewElement<'a>, T: FromView<V>>(
    view: crate::view::ArrayView<'a, V>,
) -> Result<crate::types::List<'a, T>, DecodeError> {
    let mut items = Vec::with_capacity(view.len());
    for item in view {
        items.push(T::from_view(item?)?);
    }
    Ok(crate::types::List::Owned(items))
}
