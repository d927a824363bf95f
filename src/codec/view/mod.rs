//! Views: checked once when built, then read without failing.
//!
//! A view (`ListOffsetsRequestView<'a>`) holds the bytes it covers, the version and, for
//! structs with variable-length fields, the offsets of the fields that follow them. Building
//! the view of a body checks every byte of it (see [`manual::design`](crate::manual::design)); after that nothing
//! here can fail, and accessors decode a field only when it is asked for. Reads of bytes
//! that were checked still go through bounds-checked slices; an impossible miss yields a
//! default instead of a panic.

//! The files: `bytes.rs` (the checked bytes and their reads), `array.rs` (elements and array
//! views); here, the body checks and the macros every generated view invokes.

use crate::codec::error::DecodeError;
use crate::codec::types::Ver;
use crate::codec::wire::Reader;

mod array;
mod bytes;

pub use array::{ArrayIter, ArrayView, Element, Layout};
pub(crate) use array::{check_array, fast_array, fixed_end, private};
// Only the messages of some APIs have a nullable array: builds without them do not use it.
#[allow(unused_imports)]
pub(crate) use array::check_nullable_array;
pub use bytes::{Fixed, Src};

/// Checks the front of `bytes` as a body at `ver` with `check`, which returns the offsets
/// the body's view keeps. Returns the body's bytes (every byte must be valid), its version,
/// the offsets and its length; bytes after it are the caller's to judge (see
/// [`no_trailing`]).
#[inline]
pub(crate) fn check_body<'a, A>(
    bytes: &'a [u8],
    ver: Ver,
    check: impl FnOnce(&mut Reader<'a>, Ver) -> Result<A, DecodeError>,
) -> Result<(Src<'a>, Ver, A), DecodeError> {
    let mut r = Reader::new(bytes);
    let at = check(&mut r, ver)?;
    // The reader never passes the end; `min` says so without a branch.
    let used = r.pos().min(bytes.len());
    Ok((Src(&bytes[..used]), Ver { uniform: r.uniform(), ..ver }, at))
}

/// The fast pass of a body (see `body_view!`): checks the front of `bytes` at `ver` with
/// `fast`, and returns the body's bytes and the offsets, or `None` when the bytes are not
/// for the fast path (or, when `whole`, do not end with the body): then the caller checks
/// them again with the general pass, which names the error if there is one.
#[inline(always)]
pub(crate) fn fast_body<'a, A>(
    bytes: &'a [u8],
    ver: Ver,
    whole: bool,
    fast: impl FnOnce(&mut Reader<'a>, Ver) -> Option<A>,
) -> Option<(Src<'a>, A)> {
    let mut r = Reader::new(bytes);
    let at = fast(&mut r, ver)?;
    let used = bytes.get(..r.pos())?;
    if whole && used.len() != bytes.len() {
        return None;
    }
    Some((Src(used), at))
}

/// [`crate::DecodeErrorKind::UnsupportedVersion`] for a body, out of the inlined path.
///
/// Built by the caller of [`check_body`], not inside it: an error written through a call
/// into the `Result` that also holds the offsets kept that `Result` (and the offsets) in
/// memory.
#[cold]
#[inline(never)]
pub(crate) fn unsupported_version(version: i16, name: &'static str) -> DecodeError {
    DecodeError::new(crate::codec::error::DecodeErrorKind::UnsupportedVersion(version), 0, name)
}

/// Fails with [`crate::DecodeErrorKind::TrailingBytes`] unless a body of `used` bytes
/// took all of `bytes`.
#[inline]
pub(crate) fn no_trailing(bytes: &[u8], used: usize, name: &'static str) -> Result<(), DecodeError> {
    match bytes.len() - used.min(bytes.len()) {
        0 => Ok(()),
        n => Err(trailing_bytes(n, used, name)),
    }
}

/// [`crate::DecodeErrorKind::TrailingBytes`]: `n` bytes after a body of `used`.
#[cold]
#[inline(never)]
fn trailing_bytes(n: usize, used: usize, name: &'static str) -> DecodeError {
    DecodeError::new(crate::codec::error::DecodeErrorKind::TrailingBytes(n as u32), used, name)
}

/// The constructors of a body's view: `new` and `new_prefix`, which check the body with the
/// view's `checked` pass. The generated messages invoke it once per body, e.g.
/// `body_view!(ListOffsetsRequestView, ListOffsetsRequest, at)`; the last argument, `at`,
/// says that the view keeps the offsets `checked` returns (views without it keep none).
///
/// Both go through `build`, which also serves the dispatch enums (`RequestBodyView::new`
/// calls `build(bytes, version, true, RequestBodyView::ListOffsets)`): it is generic over
/// what the view is wrapped in, so that the check writes its result straight into the
/// caller's `Result` instead of into one that each level copies to the next (the copies and
/// the calls were most of the cost of a small body; [`manual::design`](crate::manual::design), "Hot paths").
macro_rules! body_view {
    ($view:ident, $body:ident $(, $at:ident)?) => {
        $crate::codec::view::body_view!(@new $view, $body);
        impl<'a> $view<'a> {
            /// Checks the body (all of `bytes` when `whole`) and returns its view wrapped by `wrap`.
            #[inline(never)]
            pub(crate) fn build<T>(
                bytes: &'a [u8],
                version: i16,
                whole: bool,
                wrap: impl FnOnce(Self) -> T,
            ) -> Result<T, $crate::codec::error::DecodeError> {
                $crate::codec::view::body_view!(@general $body, bytes, version, whole, wrap, $($at)?)
            }
        }
    };
    // A body with a fast pass (`fast`, the check pass without errors: every field a string or
    // fixed-width, the tagged section empty). `build` tries it first and makes no call on
    // its way; anything it does not take (an error, a long or non-ASCII string, tagged
    // fields) goes to `build_checked`, the general pass, from the start.
    (fast $view:ident, $body:ident $(, $at:ident)?) => {
        $crate::codec::view::body_view!(@new $view, $body);
        impl<'a> $view<'a> {
            /// Checks the body (all of `bytes` when `whole`) and returns its view wrapped by `wrap`.
            #[inline(never)]
            pub(crate) fn build<T>(
                bytes: &'a [u8],
                version: i16,
                whole: bool,
                wrap: impl FnOnce(Self) -> T,
            ) -> Result<T, $crate::codec::error::DecodeError> {
                if let Some(ver) = <$body as $crate::codec::encode::Body>::ver(version)
                    && let Some((src, _offsets)) = $crate::codec::view::fast_body(bytes, ver, whole, Self::fast)
                {
                    return Ok(wrap(Self { src, ver $(, $at: _offsets)? }));
                }
                Self::build_checked(bytes, version, whole, wrap)
            }

            /// [`Self::build`] off the fast pass: the general check, which names any error.
            #[cold]
            #[inline(never)]
            fn build_checked<T>(
                bytes: &'a [u8],
                version: i16,
                whole: bool,
                wrap: impl FnOnce(Self) -> T,
            ) -> Result<T, $crate::codec::error::DecodeError> {
                $crate::codec::view::body_view!(@general $body, bytes, version, whole, wrap, $($at)?)
            }
        }
    };
    (@new $view:ident, $body:ident) => {
        impl<'a> $view<'a> {
            #[doc = concat!("Checks `bytes` as a ", stringify!($body), " body of `version` and returns a view of it.")]
            #[inline]
            pub fn new(bytes: &'a [u8], version: i16) -> Result<Self, $crate::codec::error::DecodeError> {
                Self::build(bytes, version, true, core::convert::identity)
            }

            /// Like [`Self::new`] for a body that is followed by bytes it does not own (Apache Kafka
            /// ignores them); the view covers the body only.
            #[inline]
            pub fn new_prefix(bytes: &'a [u8], version: i16) -> Result<Self, $crate::codec::error::DecodeError> {
                Self::build(bytes, version, false, core::convert::identity)
            }
        }
    };
    (@general $body:ident, $bytes:ident, $version:ident, $whole:ident, $wrap:ident, $($at:ident)?) => {{
        let Some(ver) = <$body as $crate::codec::encode::Body>::ver($version) else {
            return Err($crate::codec::view::unsupported_version($version, stringify!($body)));
        };
        let (src, ver, _offsets) = $crate::codec::view::check_body($bytes, ver, Self::checked)?;
        if $whole {
            $crate::codec::view::no_trailing($bytes, src.bytes().len(), stringify!($body))?;
        }
        Ok($wrap(Self { src, ver $(, $at: _offsets)? }))
    }};
}

/// What every struct view has besides its fields: `as_bytes`, `version`, and a `Debug`
/// that shows the fields (those listed, by their accessors). The generated messages invoke
/// it once per view, e.g. `view_common!(ListOffsetsTopicView { name, partitions })`.
macro_rules! view_common {
    ($view:ident { $($field:ident),* $(,)? }) => {
        impl<'a> $view<'a> {
            /// The bytes this view covers.
            pub const fn as_bytes(&self) -> &'a [u8] {
                self.src.bytes()
            }

            /// The version the bytes were decoded as.
            pub const fn version(&self) -> i16 {
                self.ver.version
            }
        }

        impl core::fmt::Debug for $view<'_> {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.debug_struct(stringify!($view))
                    // A raw identifier (`r#match`) shows as the field's name.
                    $(.field(stringify!($field).trim_start_matches("r#"), &self.$field()))*
                    .finish()
            }
        }
    };
}

pub(crate) use {body_view, view_common};
