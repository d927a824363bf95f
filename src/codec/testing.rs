//! Helpers for tests and fuzz targets, not part of the supported API: compiled only with the
//! `testing` feature, which the crate's own tests and fuzz targets turn on.

use crate::codec::types::{Bytes, List, RawTaggedField, Str, Uuid, Ver};

/// The value as it reads back after being encoded at a version: fields the version
/// cannot carry are back at their defaults, and unknown tagged fields are gone in
/// non-flexible versions. Fuzz targets and property tests compare decoded values with this.
pub trait AsVersion {
    /// The value as a decoder of `ver` would see it.
    fn as_version(&self, ver: Ver) -> Self;
}

macro_rules! as_version_clone {
    ($($t:ty),*) => {$(
        impl AsVersion for $t {
            fn as_version(&self, _: Ver) -> Self {
                self.clone()
            }
        }
    )*};
}

as_version_clone!(i8, i16, i32, i64, u16, u32, f64, bool, Uuid, Str<'_>, Bytes<'_>);

impl<T: AsVersion> AsVersion for Option<T> {
    fn as_version(&self, ver: Ver) -> Self {
        self.as_ref().map(|v| v.as_version(ver))
    }
}

// Byte fields (`List<'_, u8>`) are cloned whole above; other lists element by element.
impl<T: AsVersion> AsVersion for List<'_, T> {
    fn as_version(&self, ver: Ver) -> Self {
        List::Owned(self.iter().map(|v| v.as_version(ver)).collect())
    }
}

/// Unknown tagged fields as they read back in `ver`: only flexible versions carry them.
pub(crate) fn tagged_as_version<'a>(
    fields: &List<'a, RawTaggedField<'a>>,
    ver: Ver,
) -> List<'a, RawTaggedField<'a>> {
    if ver.flexible { fields.clone() } else { List::Borrowed(&[]) }
}

/// Implements [`AsVersion`] for a generated struct: a clone, then `|v, ver| { ... }` (when
/// given) resets in `v` what `ver` cannot carry, e.g.
/// `as_version!(ListOffsetsPartition<'_>, |v, ver| { if ver.version <= 3 { v.current_leader_epoch = -1; } })`.
macro_rules! as_version {
    ($t:ty) => {
        impl AsVersion for $t {
            fn as_version(&self, _: Ver) -> Self {
                self.clone()
            }
        }
    };
    ($t:ty, |$v:ident, $ver:pat_param| $changes:block) => {
        impl AsVersion for $t {
            fn as_version(&self, $ver: Ver) -> Self {
                let mut $v = self.clone();
                $changes
                $v
            }
        }
    };
}

pub(crate) use as_version;
