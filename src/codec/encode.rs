//! Encoding: the traits every message value implements, and the helpers they share.
//!
//! Every encoder has two walks over the value. The size step (`encoded_len`) does every
//! check (versions, nulls, lengths, tagged fields) and returns the exact size or the error.
//! The write step (`encode`) writes in one pass, bounds-checked, and does the same checks
//! without naming them: when a write does not fit or a check fails, the writer stops and
//! the size step is run to say why (the error it returns, else
//! [`EncodeError::BufferTooSmall`] with the exact size). A successful write is not sized
//! again; debug builds check it against the size step.

use crate::ApiKey;
use crate::codec::error::EncodeError;
use crate::codec::types::{Str, Uuid, Ver, Versions};
use crate::codec::wire::{self, Writer};

pub(crate) mod private {
    use crate::codec::error::EncodeError;
    use crate::codec::types::Ver;
    use crate::codec::wire::Writer;

    /// Marks the crate's encodable bodies.
    pub trait Sealed {}

    impl<B: super::Body> Sealed for B {}

    /// A value that can be encoded: its exact size, then its bytes. Sealed.
    pub trait Encode {
        /// The exact number of bytes `write` will produce, or why the value cannot be
        /// encoded in this version. `field` names the field holding the value, for errors.
        fn size(&self, ver: Ver, field: &'static str) -> Result<usize, EncodeError>;

        /// Writes the value, checking what `size` checks: a value `size` refuses is
        /// rejected ([`Writer::reject`]), without saying why.
        fn write(&self, w: &mut Writer<'_>, ver: Ver);

        /// The size of every value of this type in this version, when it is fixed and the
        /// value needs no checks; arrays of such elements are sized with one multiplication.
        #[inline]
        fn fixed_size(ver: Ver) -> Option<usize> {
            let _ = ver;
            None
        }

        /// Writes the elements of an array, after its count.
        #[inline]
        fn write_items(items: &[Self], w: &mut Writer<'_>, ver: Ver)
        where
            Self: Sized,
        {
            for item in items {
                item.write(w, ver);
            }
        }
    }
}

pub(crate) use private::Encode;

/// A message body: a top-level request or response with its API key and version table.
/// Sealed: implemented by the crate's message types only.
pub trait Body: private::Encode {
    /// The message name, e.g. `"ListOffsetsRequest"`.
    const NAME: &'static str;
    /// The API key.
    const API_KEY: ApiKey;
    /// Whether this is a request (else a response).
    const IS_REQUEST: bool;
    /// The versions that exist.
    const VERSIONS: Versions;
    /// The versions that use the flexible encoding.
    const FLEXIBLE_VERSIONS: Versions;

    /// [`AnyBody::encoded_len`], out of line: what `encode` calls to say why a write did not
    /// finish. (Through the body's own `encoded_len` rather than its `size`, so that each
    /// body's size step is compiled once, not again in each body's error path.)
    #[doc(hidden)]
    fn encoded_len_out_of_line(&self, version: i16) -> Result<usize, EncodeError>;

    /// The version with its flexibility, if it exists.
    #[doc(hidden)]
    #[inline]
    fn ver(version: i16) -> Option<Ver> {
        Self::VERSIONS.contains(version).then(|| Ver::new(version, Self::FLEXIBLE_VERSIONS.contains(version)))
    }
}

/// Any message body that can be encoded, whether its type is known statically (every
/// [`Body`]) or chosen at run time (`RequestBody`, `ResponseBody`). Frame encoders take
/// this. Sealed.
pub trait AnyBody: private::Sealed {
    /// The API key.
    fn api_key(&self) -> ApiKey;
    /// The exact encoded size at `version`, or why it cannot be encoded.
    fn encoded_len(&self, version: i16) -> Result<usize, EncodeError>;
    /// Encodes at `version` into the front of `buf`; returns the bytes written. On an error
    /// the contents of `buf` are unspecified.
    fn encode(&self, version: i16, buf: &mut [u8]) -> Result<usize, EncodeError>;
}

impl<B: Body> AnyBody for B {
    #[inline]
    fn api_key(&self) -> ApiKey {
        B::API_KEY
    }
    #[inline]
    fn encoded_len(&self, version: i16) -> Result<usize, EncodeError> {
        body_len(self, version)
    }
    #[inline]
    fn encode(&self, version: i16, buf: &mut [u8]) -> Result<usize, EncodeError> {
        encode_body(self, version, buf)
    }
}

/// The exact encoded size of a body at `version`.
#[inline]
pub(crate) fn body_len<B: Body>(body: &B, version: i16) -> Result<usize, EncodeError> {
    let ver = B::ver(version).ok_or(EncodeError::UnsupportedVersion { message: B::NAME, version })?;
    body.size(ver, B::NAME)
}

/// Encodes a body at `version` into the front of `buf`: one pass that writes and checks.
/// When it does not finish, the size step says why ([`refused`]).
#[inline]
pub(crate) fn encode_body<B: Body>(body: &B, version: i16, buf: &mut [u8]) -> Result<usize, EncodeError> {
    let ver = B::ver(version).ok_or(EncodeError::UnsupportedVersion { message: B::NAME, version })?;
    let available = buf.len();
    let mut w = Writer::new(buf);
    body.write(&mut w, ver);
    match w.finish() {
        Some(written) => {
            debug_assert_eq!(body.size(ver, B::NAME), Ok(written), "{}: write and size disagree", B::NAME);
            Ok(written)
        }
        None => Err(refused(body, ver, available, w.pos())),
    }
}

/// The error of an encoding that did not finish: the size step's own, or a buffer of
/// `available` bytes shorter than the size. A write that stopped although the size step
/// accepts the value and the buffer holds it would be a bug, reported as
/// [`EncodeError::SizeMismatch`].
#[cold]
#[inline(never)]
fn refused<B: Body>(body: &B, ver: Ver, available: usize, written: usize) -> EncodeError {
    match body.encoded_len_out_of_line(ver.version) {
        Err(e) => e,
        Ok(needed) if needed > available => EncodeError::BufferTooSmall { needed, available },
        Ok(sized) => EncodeError::SizeMismatch { message: B::NAME, sized, written },
    }
}

/// Size of a null or non-null array with its count prefix.
#[inline]
pub(crate) fn nullable_array_size<T: Encode>(
    items: Option<&[T]>,
    ver: Ver,
    field: &'static str,
) -> Result<usize, EncodeError> {
    match items {
        Some(items) => array_size(items, ver, field),
        None => Ok(wire::null_size(ver.flexible, true)),
    }
}

/// Size of an array with its count prefix.
#[inline]
pub(crate) fn array_size<T: Encode>(
    items: &[T],
    ver: Ver,
    field: &'static str,
) -> Result<usize, EncodeError> {
    // Arrays of fixed-size elements are sized by `fixed_array_size`, compiled once rather
    // than once per element type.
    if let Some(each) = T::fixed_size(ver) {
        return fixed_array_size(items.len(), each, ver, field);
    }
    let mut total = wire::Size::new(wire::array_prefix_size(items.len(), ver.flexible, field)?);
    for item in items {
        total += item.size(ver, field)?;
    }
    total.total(field)
}

/// The size of `count` elements of `each` bytes, with the count prefix.
#[inline]
fn fixed_array_size(count: usize, each: usize, ver: Ver, field: &'static str) -> Result<usize, EncodeError> {
    let prefix = wire::array_prefix_size(count, ver.flexible, field)?;
    let body = each.checked_mul(count).ok_or(EncodeError::TooLong { field })?;
    wire::add(prefix, body, field)
}

/// Writes a null or non-null array with its count prefix.
#[inline]
pub(crate) fn write_nullable_array<T: Encode>(w: &mut Writer<'_>, items: Option<&[T]>, ver: Ver) {
    match items {
        Some(items) => write_array(w, items, ver),
        None => w.array_len(None, ver.flexible),
    }
}

/// Writes an array with its count prefix.
#[inline]
pub(crate) fn write_array<T: Encode>(w: &mut Writer<'_>, items: &[T], ver: Ver) {
    w.array_len(Some(items.len()), ver.flexible);
    T::write_items(items, w, ver);
}

macro_rules! scalar {
    ($t:ty, $write:ident, $n:expr) => {
        impl Encode for $t {
            #[inline]
            fn size(&self, _: Ver, _: &'static str) -> Result<usize, EncodeError> {
                Ok($n)
            }
            #[inline]
            fn write(&self, w: &mut Writer<'_>, _: Ver) {
                w.$write(*self);
            }
            #[inline]
            fn fixed_size(_: Ver) -> Option<usize> {
                Some($n)
            }
        }
    };
}

scalar!(i8, i8, 1);
scalar!(i16, i16, 2);
scalar!(i32, i32, 4);
scalar!(i64, i64, 8);
scalar!(u16, u16, 2);
scalar!(u32, u32, 4);
scalar!(f64, f64, 8);
scalar!(bool, bool, 1);
scalar!(Uuid, uuid, 16);

impl Encode for Str<'_> {
    #[inline]
    fn size(&self, ver: Ver, field: &'static str) -> Result<usize, EncodeError> {
        wire::string_size(self.len(), ver.flexible, field)
    }
    #[inline]
    fn write(&self, w: &mut Writer<'_>, ver: Ver) {
        w.str(self, ver.flexible);
    }
    /// Each element out of line, by value: `Writer::str` is always inlined (for the
    /// strings of structs), and its loop inlined in every array of strings made those
    /// encoders' fixed cost larger ([`manual::design`](crate::manual::design), "Hot paths").
    #[inline]
    fn write_items(items: &[Self], w: &mut Writer<'_>, ver: Ver) {
        for s in items {
            w.str_item(s, ver.flexible);
        }
    }
}

/// The error for a field that holds a value `ver` cannot carry (a non-default value in a
/// non-ignorable field the version does not have).
#[cold]
pub(crate) fn not_in_version(field: &'static str, ver: Ver) -> EncodeError {
    EncodeError::FieldNotInVersion { field, version: ver.version }
}

/// Declares a message body: its [`Body`] facts and the `encoded_len` and `encode` methods
/// every body has. `versions` and `flexible` are `(lowest, highest)`; the generated
/// messages invoke it once per body, e.g.
/// `impl_body!(ListOffsetsRequest { key: 2, request: true, versions: (1, 11), flexible: (6, i16::MAX) })`.
macro_rules! impl_body {
    ($name:ident {
        key: $key:expr,
        request: $request:expr,
        versions: ($lo:expr, $hi:expr),
        flexible: ($flo:expr, $fhi:expr) $(,)?
    }) => {
        impl $crate::codec::encode::Body for $name<'_> {
            const NAME: &'static str = stringify!($name);
            const API_KEY: $crate::ApiKey = match $crate::ApiKey::from_i16($key) {
                Some(key) => key,
                None => panic!("impl_body!: an API key the table does not have"),
            };
            const IS_REQUEST: bool = $request;
            const VERSIONS: $crate::codec::types::Versions = $crate::codec::types::Versions::new($lo, $hi);
            const FLEXIBLE_VERSIONS: $crate::codec::types::Versions =
                $crate::codec::types::Versions::new($flo, $fhi);

            fn encoded_len_out_of_line(
                &self,
                version: i16,
            ) -> Result<usize, $crate::codec::error::EncodeError> {
                self.encoded_len(version)
            }
        }

        impl $name<'_> {
            /// The exact size of this body encoded as `version`, or why it cannot be encoded.
            pub fn encoded_len(&self, version: i16) -> Result<usize, $crate::codec::error::EncodeError> {
                $crate::codec::encode::body_len(self, version)
            }

            /// Encodes this body as `version` into the front of `buf` and returns the bytes
            /// written. On an error the contents of `buf` are unspecified.
            pub fn encode(
                &self,
                version: i16,
                buf: &mut [u8],
            ) -> Result<usize, $crate::codec::error::EncodeError> {
                $crate::codec::encode::encode_body(self, version, buf)
            }
        }
    };
}

pub(crate) use impl_body;
