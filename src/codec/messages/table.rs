//! The macro behind `messages/mod.rs`: from one row per API (its name, module, feature and
//! types) it writes the dispatch enums with their `match` over every API. Written by hand;
//! the generated `mod.rs` invokes it once, with the rows. `ApiKey` and its version tables
//! are generated below the messages, in `src/codec/api_key/table.rs`.
//!
//! An API whose feature is off keeps its `ApiKey` row (key, versions and header versions are
//! facts) but loses its re-exports, its variants and their arms; each `match api_key` then
//! ends with an arm that answers such an API as one this build does not support.

/// Writes the re-exports and dispatch from rows of the form
///
/// ```text
/// ListOffsets {
///     module: list_offsets, feature: "api-list-offsets",
///     request: ListOffsetsRequest, ListOffsetsRequestView,
///     response: ListOffsetsResponse, ListOffsetsResponseView,
/// }
/// ```
///
/// `feature` is left out for an API that is always compiled (ApiVersions).
macro_rules! api_table {
    ($(
        $name:ident {
            module: $module:ident, $(feature: $feature:literal,)?
            request: $req:ident, $req_view:ident,
            response: $resp:ident, $resp_view:ident $(,)?
        }
    )*) => {
        $(
            $(#[cfg(feature = $feature)])?
            pub use $module::{$req, $req_view, $resp, $resp_view};
        )*

        dispatch!(request, RequestBodyView, RequestBody, $($name $(($feature))? $req $req_view)*);
        dispatch!(response, ResponseBodyView, ResponseBody, $($name $(($feature))? $resp $resp_view)*);
    };
}

/// The dispatch enums of one direction (requests or responses): the view enum and the value
/// enum, with a `match` over every API compiled in.
macro_rules! dispatch {
    ($lower:ident, $view_enum:ident, $body_enum:ident,
        $($name:ident $(($feature:literal))? $body:ident $view:ident)*) => {
        #[doc = concat!("A view of any supported ", stringify!($lower), " body, chosen by API key.")]
        #[derive(Clone, Copy, Debug)]
        #[non_exhaustive]
        pub enum $view_enum<'a> {
            $(
                #[doc = concat!(stringify!($name), " ", stringify!($lower), ".")]
                $(#[cfg(feature = $feature)])?
                $name($view<'a>),
            )*
        }

        impl<'a> $view_enum<'a> {
            #[doc = concat!("Checks `bytes` as the ", stringify!($lower), " body of `api_key` at `version`.")]
            #[inline]
            pub fn new(bytes: &'a [u8], api_key: ApiKey, version: i16) -> Result<Self, $crate::codec::error::DecodeError> {
                // Each view's check writes the enum itself: no copy between the levels.
                match api_key {
                    $(
                        $(#[cfg(feature = $feature)])?
                        ApiKey::$name => $view::build(bytes, version, true, Self::$name),
                    )*
                    // An API this build leaves out.
                    #[allow(unreachable_patterns)]
                    _ => Err($crate::codec::messages::table::left_out(api_key, version)),
                }
            }

            /// Like [`Self::new`], ignoring bytes after the body (as Apache Kafka does).
            pub fn new_prefix(bytes: &'a [u8], api_key: ApiKey, version: i16) -> Result<Self, $crate::codec::error::DecodeError> {
                // Each view's check writes the enum itself: no copy between the levels.
                match api_key {
                    $(
                        $(#[cfg(feature = $feature)])?
                        ApiKey::$name => $view::build(bytes, version, false, Self::$name),
                    )*
                    // An API this build leaves out.
                    #[allow(unreachable_patterns)]
                    _ => Err($crate::codec::messages::table::left_out(api_key, version)),
                }
            }

            /// The API this body belongs to.
            pub const fn api_key(&self) -> ApiKey {
                match self {
                    $(
                        $(#[cfg(feature = $feature)])?
                        Self::$name(_) => ApiKey::$name,
                    )*
                }
            }

            /// The bytes of the body.
            pub const fn as_bytes(&self) -> &'a [u8] {
                match self {
                    $(
                        $(#[cfg(feature = $feature)])?
                        Self::$name(v) => v.as_bytes(),
                    )*
                }
            }
        }

        #[doc = concat!("Any supported ", stringify!($lower), " body as a value, chosen by API key.")]
        #[derive(Clone, Debug, PartialEq, Eq)]
        #[non_exhaustive]
        pub enum $body_enum<'a> {
            $(
                #[doc = concat!(stringify!($name), " ", stringify!($lower), ".")]
                $(#[cfg(feature = $feature)])?
                $name($body<'a>),
            )*
        }

        impl $body_enum<'_> {
            /// The API this body belongs to.
            pub const fn api_key(&self) -> ApiKey {
                match self {
                    $(
                        $(#[cfg(feature = $feature)])?
                        Self::$name(_) => ApiKey::$name,
                    )*
                }
            }
        }

        impl $crate::codec::encode::private::Sealed for $body_enum<'_> {}

        impl $crate::codec::encode::AnyBody for $body_enum<'_> {
            fn api_key(&self) -> $crate::ApiKey {
                self.api_key()
            }

            fn encoded_len(&self, version: i16) -> Result<usize, $crate::codec::error::EncodeError> {
                match self {
                    $(
                        $(#[cfg(feature = $feature)])?
                        Self::$name(b) => b.encoded_len(version),
                    )*
                }
            }

            fn encode(&self, version: i16, buf: &mut [u8]) -> Result<usize, $crate::codec::error::EncodeError> {
                match self {
                    $(
                        $(#[cfg(feature = $feature)])?
                        Self::$name(b) => b.encode(version, buf),
                    )*
                }
            }
        }

        #[cfg(feature = "reference")]
        impl $body_enum<'static> {
            #[doc = concat!(
                "Decodes the ", stringify!($lower), " body of `api_key` at `version` with the reference decoder."
            )]
            pub fn decode(bytes: &[u8], api_key: ApiKey, version: i16) -> Result<Self, $crate::codec::error::DecodeError> {
                Ok(match api_key {
                    $(
                        $(#[cfg(feature = $feature)])?
                        ApiKey::$name => Self::$name($body::decode(bytes, version)?),
                    )*
                    // An API this build leaves out.
                    #[allow(unreachable_patterns)]
                    _ => return Err($crate::codec::messages::table::left_out(api_key, version)),
                })
            }
        }

        #[cfg(feature = "arbitrary")]
        impl<'a> $body_enum<'a> {
            #[doc = concat!("An arbitrary ", stringify!($lower), " body of `api_key`, for fuzzing and property tests.")]
            pub fn arbitrary_for(api_key: ApiKey, u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
                use arbitrary::Arbitrary;
                Ok(match api_key {
                    $(
                        $(#[cfg(feature = $feature)])?
                        ApiKey::$name => Self::$name($body::arbitrary(u)?),
                    )*
                    // An API this build leaves out.
                    #[allow(unreachable_patterns)]
                    _ => return Err(arbitrary::Error::IncorrectFormat),
                })
            }
        }

        #[cfg(feature = "testing")]
        impl $crate::codec::testing::AsVersion for $body_enum<'_> {
            fn as_version(&self, ver: $crate::codec::types::Ver) -> Self {
                match self {
                    $(
                        $(#[cfg(feature = $feature)])?
                        Self::$name(b) => Self::$name(b.as_version(ver)),
                    )*
                }
            }
        }

        #[cfg(feature = "owned")]
        impl<'a> From<$view_enum<'a>> for $body_enum<'a> {
            fn from(view: $view_enum<'a>) -> Self {
                match view {
                    $(
                        $(#[cfg(feature = $feature)])?
                        $view_enum::$name(v) => Self::$name(v.into()),
                    )*
                }
            }
        }
    };
}

/// The error for an API this build leaves out (its feature is off): the version is not one
/// this build can read, as for an API it does not know.
#[cold]
pub(super) fn left_out(api_key: ApiKey, version: i16) -> DecodeError {
    DecodeError::new(DecodeErrorKind::UnsupportedVersion(version), 0, api_key.name())
}

pub(super) use {api_table, dispatch};

use crate::ApiKey;
use crate::codec::error::{DecodeError, DecodeErrorKind};
