//! Value types shared by every message: borrowed-or-owned strings and lists, UUIDs and
//! raw tagged fields.
//!
//! Message values (`ListOffsetsRequest<'a>` and friends) hold their strings as [`Str`] and
//! their arrays as [`List`]. Both are either borrowed (`&'a str`, `&'a [T]`), which works
//! without `alloc` (a `no_std` client can encode from slices on its stack), or owned
//! (`String`, `Vec<T>`, with the `alloc` feature), which is what the reference decoder
//! produces. Either way they dereference to `str` and `[T]`, compare by content and
//! encode the same.

#[cfg(feature = "alloc")]
use alloc::{string::String, vec::Vec};
use core::{fmt, ops::Deref};

/// A string that is either borrowed or (with `alloc`) owned.
///
/// `#[non_exhaustive]`: the `Owned` variant comes with the `alloc` feature, which any crate
/// in a build can turn on, so a `match` needs a `_` arm (or use `Deref` to `str`).
#[derive(Clone)]
#[non_exhaustive]
pub enum Str<'a> {
    /// A borrowed string.
    Borrowed(&'a str),
    /// An owned string.
    #[cfg(feature = "alloc")]
    Owned(String),
}

impl Str<'_> {
    /// The string as `&str`.
    pub fn as_str(&self) -> &str {
        match self {
            Str::Borrowed(s) => s,
            #[cfg(feature = "alloc")]
            Str::Owned(s) => s,
        }
    }

    /// An owned copy that borrows nothing.
    #[cfg(feature = "alloc")]
    pub fn into_static(self) -> Str<'static> {
        match self {
            Str::Borrowed(s) => Str::Owned(String::from(s)),
            Str::Owned(s) => Str::Owned(s),
        }
    }
}

impl Default for Str<'_> {
    fn default() -> Self {
        Str::Borrowed("")
    }
}

impl Deref for Str<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Str<'_> {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for Str<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Str<'_> {}

impl PartialEq<str> for Str<'_> {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Str<'_> {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl fmt::Debug for Str<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl<'a> From<&'a str> for Str<'a> {
    fn from(s: &'a str) -> Self {
        Str::Borrowed(s)
    }
}

#[cfg(feature = "alloc")]
impl From<String> for Str<'_> {
    fn from(s: String) -> Self {
        Str::Owned(s)
    }
}

/// A list that is either a borrowed slice or (with `alloc`) an owned vector.
///
/// Byte fields use `List<'a, u8>` (see [`Bytes`]).
///
/// `#[non_exhaustive]`: the `Owned` variant comes with the `alloc` feature, which any crate
/// in a build can turn on, so a `match` needs a `_` arm (or use `Deref` to `[T]`).
#[derive(Clone)]
#[non_exhaustive]
pub enum List<'a, T> {
    /// A borrowed slice.
    Borrowed(&'a [T]),
    /// An owned vector.
    #[cfg(feature = "alloc")]
    Owned(Vec<T>),
}

/// A byte field: borrowed or owned bytes.
pub type Bytes<'a> = List<'a, u8>;

impl<T> List<'_, T> {
    /// The elements as a slice.
    pub fn as_slice(&self) -> &[T] {
        match self {
            List::Borrowed(s) => s,
            #[cfg(feature = "alloc")]
            List::Owned(v) => v,
        }
    }
}

impl<T> Default for List<'_, T> {
    fn default() -> Self {
        List::Borrowed(&[])
    }
}

impl<T> Deref for List<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T> AsRef<[T]> for List<'_, T> {
    fn as_ref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: PartialEq> PartialEq for List<'_, T> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: Eq> Eq for List<'_, T> {}

impl<T: fmt::Debug> fmt::Debug for List<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_slice(), f)
    }
}

impl<'a, T> From<&'a [T]> for List<'a, T> {
    fn from(s: &'a [T]) -> Self {
        List::Borrowed(s)
    }
}

impl<'a, T, const N: usize> From<&'a [T; N]> for List<'a, T> {
    fn from(s: &'a [T; N]) -> Self {
        List::Borrowed(s)
    }
}

#[cfg(feature = "alloc")]
impl<T> From<Vec<T>> for List<'_, T> {
    fn from(v: Vec<T>) -> Self {
        List::Owned(v)
    }
}

#[cfg(feature = "alloc")]
impl<T> FromIterator<T> for List<'_, T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        List::Owned(iter.into_iter().collect())
    }
}

/// A 128-bit UUID as Kafka sends it: 16 bytes, most significant first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Uuid(pub [u8; 16]);

impl Uuid {
    /// The all-zero UUID, Kafka's default for UUID fields.
    pub const ZERO: Uuid = Uuid([0; 16]);
}

/// A tagged field that the schema does not know, kept as its tag and raw bytes.
///
/// Decoders keep these so that a value can be re-encoded without losing them; encoders
/// write them back in ascending tag order, merged with the known tagged fields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct RawTaggedField<'a> {
    /// The tag number.
    pub tag: u32,
    /// The field's bytes, without the tag and size prefix.
    pub data: Bytes<'a>,
}

/// A message version together with what the code below the message needs to know about
/// it, threaded through decoders and encoders of nested structures. Internal.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ver {
    /// The message version.
    pub version: i16,
    /// Whether this version uses the flexible (compact, tagged) encoding.
    pub flexible: bool,
    /// For views: no struct anywhere in the body but the body itself had a tagged field,
    /// so every array of fixed-layout elements has one stride (the fixed fields and an
    /// empty tagged section) and is skipped and indexed in O(1), and no struct's accessors
    /// read its tagged section again.
    pub uniform: bool,
}

impl Ver {
    /// A version, `flexible` or not.
    pub const fn new(version: i16, flexible: bool) -> Self {
        Ver { version, flexible, uniform: true }
    }
}

/// An inclusive range of versions, as Kafka's schemas give them (`"3+"` reaches
/// `i16::MAX`).
///
/// Two ranges are equal when they hold the same versions: every empty range equals
/// [`Versions::NONE`], whatever its bounds (`Versions::new(5, 2) == Versions::new(0, -1)`).
/// Hashing agrees with that.
#[derive(Clone, Copy, Debug)]
pub struct Versions {
    /// The lowest version in the range.
    pub min: i16,
    /// The highest version in the range.
    pub max: i16,
}

impl Versions {
    /// The empty range.
    pub const NONE: Versions = Versions { min: 0, max: -1 };

    /// The range `min..=max`.
    pub const fn new(min: i16, max: i16) -> Self {
        Versions { min, max }
    }

    /// Whether `version` is in the range.
    pub const fn contains(&self, version: i16) -> bool {
        self.min <= version && version <= self.max
    }

    /// Whether the range is empty.
    pub const fn is_empty(&self) -> bool {
        self.min > self.max
    }
}

impl PartialEq for Versions {
    fn eq(&self, other: &Self) -> bool {
        (self.is_empty() && other.is_empty()) || (self.min == other.min && self.max == other.max)
    }
}

impl Eq for Versions {}

impl core::hash::Hash for Versions {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        // Every empty range hashes as `NONE` does, as they compare equal.
        let v = if self.is_empty() { Versions::NONE } else { *self };
        (v.min, v.max).hash(state);
    }
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for Str<'a> {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        <&'a str>::arbitrary(u).map(Str::Borrowed)
    }
}

#[cfg(feature = "arbitrary")]
impl<'a, T: arbitrary::Arbitrary<'a>> arbitrary::Arbitrary<'a> for List<'a, T> {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        u.arbitrary_iter()?.collect::<arbitrary::Result<Vec<T>>>().map(List::Owned)
    }
}

impl fmt::Display for Versions {
    /// `"3-5"`, `"3+"` (up to `i16::MAX`), `"4"`, or `"none"`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            f.write_str("none")
        } else if self.max == i16::MAX {
            write!(f, "{}+", self.min)
        } else if self.min == self.max {
            write!(f, "{}", self.min)
        } else {
            write!(f, "{}-{}", self.min, self.max)
        }
    }
}
