//! Views: checked once when built, then read without failing.
//!
//! A view (`ListOffsetsRequestView<'a>`) holds the bytes it covers, the version and, for
//! structs with variable-length fields, the offsets of the fields that follow them. Building
//! the view of a body checks every byte of it (see [`manual::design`](crate::manual::design)); after that nothing
//! here can fail, and accessors decode a field only when it is asked for. Reads of bytes
//! that were checked still go through bounds-checked slices; an impossible miss yields a
//! default instead of a panic.

use core::{fmt, iter::FusedIterator, marker::PhantomData};

use crate::codec::error::DecodeError;
use crate::codec::types::{Uuid, Ver};
use crate::codec::wire::{Reader, TaggedIter};

/// The typed reads of [`Src`] and [`Fixed`], each through the type's own `fixed`.
macro_rules! scalar_reads {
    () => {
        /// The `int8` at `at`.
        #[inline]
        pub fn i8(self, at: usize) -> i8 {
            i8::from_be_bytes(self.fixed(at))
        }
        /// The `int16` at `at`.
        #[inline]
        pub fn i16(self, at: usize) -> i16 {
            i16::from_be_bytes(self.fixed(at))
        }
        /// The `int32` at `at`.
        #[inline]
        pub fn i32(self, at: usize) -> i32 {
            i32::from_be_bytes(self.fixed(at))
        }
        /// The `int64` at `at`.
        #[inline]
        pub fn i64(self, at: usize) -> i64 {
            i64::from_be_bytes(self.fixed(at))
        }
        /// The `uint16` at `at`.
        #[inline]
        pub fn u16(self, at: usize) -> u16 {
            u16::from_be_bytes(self.fixed(at))
        }
        /// The `uint32` at `at`.
        #[inline]
        pub fn u32(self, at: usize) -> u32 {
            u32::from_be_bytes(self.fixed(at))
        }
        /// The `float64` at `at`.
        #[inline]
        pub fn f64(self, at: usize) -> f64 {
            f64::from_be_bytes(self.fixed(at))
        }
        /// The `bool` at `at` (any non-zero byte is `true`, as in Kafka).
        #[inline]
        pub fn bool(self, at: usize) -> bool {
            self.fixed::<1>(at)[0] != 0
        }
        /// The `uuid` at `at`.
        #[inline]
        pub fn uuid(self, at: usize) -> Uuid {
            Uuid(self.fixed(at))
        }
    };
}

/// Bytes that a view checked when it was built.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct Src<'a>(&'a [u8]);

impl<'a> Src<'a> {
    /// The bytes.
    #[inline]
    pub const fn bytes(self) -> &'a [u8] {
        self.0
    }

    /// `self[from..to]`.
    #[inline]
    pub fn sub(self, from: usize, to: usize) -> Src<'a> {
        Src(self.0.get(from..to).unwrap_or_default())
    }

    /// `self[from..]`.
    #[inline]
    pub fn tail(self, from: usize) -> Src<'a> {
        Src(self.0.get(from..).unwrap_or_default())
    }

    /// `N` bytes at `at`.
    #[inline]
    pub fn fixed<const N: usize>(self, at: usize) -> [u8; N] {
        match self.bytes().get(at..).and_then(<[u8]>::first_chunk::<N>) {
            Some(b) => *b,
            None => [0; N],
        }
    }

    scalar_reads!();

    /// The unsigned varint at `at` and the offset after it.
    #[inline]
    pub fn uvarint(self, at: usize) -> (u32, usize) {
        match self.bytes().get(at) {
            Some(&v) if v < 0x80 => (u32::from(v), at + 1),
            _ => self.long_uvarint(at),
        }
    }

    /// [`Self::uvarint`] for a varint of more than one byte, out of the inlined path.
    #[cold]
    #[inline(never)]
    fn long_uvarint(self, at: usize) -> (u32, usize) {
        let b = self.bytes();
        let mut value = 0u32;
        for i in 0..5 {
            let Some(&v) = b.get(at + i) else { break };
            value |= u32::from(v & 0x7f) << (7 * i);
            if v & 0x80 == 0 {
                return (value, at + i + 1);
            }
        }
        (value, b.len())
    }

    /// The length prefix at `at` (`None` for null) and the offset after it: compact when
    /// `flexible`, else an int32 when `wide` (bytes, arrays) or an int16 (strings).
    #[inline]
    pub fn len_prefix(self, at: usize, flexible: bool, wide: bool) -> (Option<usize>, usize) {
        if flexible {
            let (n, next) = self.uvarint(at);
            (n.checked_sub(1).map(|n| n as usize), next)
        } else if wide {
            (usize::try_from(self.i32(at)).ok(), at + 4)
        } else {
            (usize::try_from(self.i16(at)).ok(), at + 2)
        }
    }

    /// The text of `self[from..to]`, checked as UTF-8 when the view was built.
    #[inline(always)]
    pub fn text(self, from: usize, to: usize) -> &'a str {
        self.0.get(from..to).and_then(crate::codec::wire::str_from).unwrap_or_default()
    }

    /// For the string (or null) at `at` of the element that starts at `elem`: where its
    /// bytes start, from `elem`, and the offset after it. An element's `at` keeps the first
    /// while it finds the element's end, so that the string's accessor does not read its
    /// length again.
    #[inline]
    pub fn str_start(self, elem: usize, at: usize, flexible: bool) -> (u32, usize) {
        let (len, from) = self.len_prefix(at, flexible, false);
        ((from - elem) as u32, from + len.unwrap_or(0))
    }

    /// The nullable string at `at`.
    #[inline]
    pub fn nullable_str(self, at: usize, flexible: bool) -> Option<&'a str> {
        let (len, from) = self.len_prefix(at, flexible, false);
        len.map(|n| self.text(from, from + n))
    }

    /// The string at `at`.
    #[inline]
    pub fn str(self, at: usize, flexible: bool) -> &'a str {
        self.nullable_str(at, flexible).unwrap_or_default()
    }

    /// The nullable byte array at `at`.
    #[inline]
    pub fn nullable_bytes(self, at: usize, flexible: bool) -> Option<&'a [u8]> {
        let (len, from) = self.len_prefix(at, flexible, true);
        len.map(|n| self.bytes().get(from..from + n).unwrap_or_default())
    }

    /// The byte array at `at`.
    #[inline]
    pub fn bytes_at(self, at: usize, flexible: bool) -> &'a [u8] {
        self.nullable_bytes(at, flexible).unwrap_or_default()
    }

    /// The offset after the string (or null) at `at`.
    #[inline]
    pub fn skip_str(self, at: usize, flexible: bool) -> usize {
        let (len, from) = self.len_prefix(at, flexible, false);
        from + len.unwrap_or(0)
    }

    /// The offset after the byte array (or null) at `at`.
    #[inline]
    pub fn skip_bytes(self, at: usize, flexible: bool) -> usize {
        let (len, from) = self.len_prefix(at, flexible, true);
        from + len.unwrap_or(0)
    }

    /// The offset after the tagged-field section at `at`.
    #[inline]
    pub fn skip_tagged(self, at: usize) -> usize {
        match self.bytes().get(at) {
            Some(0) => at + 1,
            _ => self.skip_tagged_fields(at),
        }
    }

    /// [`Self::skip_tagged`] for a section that has fields, out of the inlined path.
    #[inline(never)]
    fn skip_tagged_fields(self, at: usize) -> usize {
        let (count, mut p) = self.uvarint(at);
        for _ in 0..count {
            let (_, next) = self.uvarint(p);
            let (size, next) = self.uvarint(next);
            p = next + size as usize;
        }
        p
    }

    /// The fields of the tagged-field section at `at` whose tags are not in `known`.
    #[inline]
    pub fn tagged(self, at: usize, known: &'static [u32]) -> TaggedIter<'a> {
        let (count, from) = self.uvarint(at);
        TaggedIter::new(self.bytes().get(from..).unwrap_or_default(), count, known)
    }

    /// The value of tagged field `tag` in the section at `at`, if it is there.
    #[inline]
    pub fn tag(self, at: usize, tag: u32) -> Option<Src<'a>> {
        let (count, mut p) = self.uvarint(at);
        for _ in 0..count {
            let (t, next) = self.uvarint(p);
            let (size, next) = self.uvarint(next);
            p = next + size as usize;
            if t == tag {
                return Some(self.sub(next, p));
            }
        }
        None
    }
}

/// The checked bytes of an element of fixed-width fields (and perhaps a tagged section),
/// with its first `N` bytes (`N`: the most its fixed-width fields take in any version) cut
/// once, when the element was found.
///
/// Accessors read at offsets known to be below `N` minus their width, so a read from the
/// head needs no bounds check of its own; every read of an element tests the same `Option`,
/// which LLVM folds into the one test that cut it (through [`Src`], each read tested the
/// element's length against its own end, tests LLVM did not merge). The head may run past
/// the element into the bytes after it, which no read of the element's version reaches;
/// when fewer than `N` bytes are left (an element of an older, shorter version at the end
/// of the body), reads go through the bytes the element is in, at its offset. The element's
/// own bytes are cut only when asked for (`as_bytes`, a tagged section that is not empty).
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct Fixed<'a, const N: usize> {
    /// The bytes the element is in, and where in them it starts and ends.
    src: Src<'a>,
    pos: usize,
    end: usize,
    head: Option<&'a [u8; N]>,
}

impl<'a, const N: usize> Fixed<'a, N> {
    /// The element `src[pos..end]`.
    #[inline]
    pub fn new(src: Src<'a>, pos: usize, end: usize) -> Self {
        let head = src.bytes().get(pos..).and_then(<[u8]>::first_chunk::<N>);
        Fixed { src, pos, end, head }
    }

    /// The element that is exactly `src`.
    #[inline]
    pub fn whole(src: Src<'a>) -> Self {
        Fixed { src, pos: 0, end: src.bytes().len(), head: src.bytes().first_chunk::<N>() }
    }

    /// The element's bytes.
    #[inline]
    pub const fn bytes(self) -> &'a [u8] {
        match self.src.bytes().split_at_checked(self.end) {
            Some((front, _)) => match front.split_at_checked(self.pos) {
                Some((_, element)) => element,
                None => &[],
            },
            None => &[],
        }
    }

    /// The element's bytes, as [`Src`].
    #[inline]
    fn own(self) -> Src<'a> {
        Src(self.bytes())
    }

    /// `M` bytes at `at`.
    #[inline]
    fn fixed<const M: usize>(self, at: usize) -> [u8; M] {
        match self.head {
            Some(head) => match head.get(at..).and_then(<[u8]>::first_chunk::<M>) {
                Some(b) => *b,
                None => [0; M],
            },
            // Never past the element's end: no read of its version goes there.
            None => self.src.fixed(self.pos + at),
        }
    }

    scalar_reads!();

    /// The fields of the tagged-field section at `at` whose tags are not in `known`.
    #[inline]
    pub fn tagged(self, at: usize, known: &'static [u32]) -> TaggedIter<'a> {
        self.own().tagged(at, known)
    }

    /// The value of tagged field `tag` in the section at `at`, if it is there.
    #[inline]
    pub fn tag(self, at: usize, tag: u32) -> Option<Src<'a>> {
        self.own().tag(at, tag)
    }
}

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

/// How the elements of an array are laid out in one version.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Every element takes this many bytes.
    Fixed(usize),
    /// Every element is this many bytes of fixed-width fields, then a tagged-field section.
    Tagged(usize),
    /// Elements have variable-length fields.
    Var,
}

pub(crate) mod private {
    use super::{Layout, Src};
    use crate::codec::error::DecodeError;
    use crate::codec::types::Ver;
    use crate::codec::wire::Reader;

    /// What the crate knows about an element type; not for implementing outside it.
    pub trait ElementImpl<'a>: Sized {
        /// The layout of elements in `ver`; variable-length unless the type says otherwise.
        #[inline]
        fn layout(ver: Ver) -> Layout {
            let _ = ver;
            Layout::Var
        }
        /// Checks one element and moves past it.
        fn check(r: &mut Reader<'a>, ver: Ver, field: &'static str) -> Result<(), DecodeError>;
        /// [`Self::check`] on a body's fast pass (see `body_view!`): `None` only says that the
        /// element is not for the fast path (an error, or a form left to the general pass).
        /// Elements that the fast pass never reaches keep this default.
        #[inline(always)]
        fn fast(r: &mut Reader<'a>, ver: Ver) -> Option<()> {
            let _ = (r, ver);
            None
        }
        /// The element at `pos` of checked bytes, and the offset after it.
        fn at(src: Src<'a>, pos: usize, ver: Ver) -> (Self, usize);
        /// The element that is exactly `src`, for elements of one stride ([`super::stride`]).
        #[inline]
        fn whole(src: Src<'a>, ver: Ver) -> Self {
            Self::at(src, 0, ver).0
        }
    }
}

/// A type that can be the element of an [`ArrayView`]: a scalar, `&str`, or a struct view.
/// It is sealed: only this crate implements it.
pub trait Element<'a>: Copy + private::ElementImpl<'a> {}

impl<'a, T: Copy + private::ElementImpl<'a>> Element<'a> for T {}

/// The size of every element of `T` in `ver`, when elements have one stride: always for
/// [`Layout::Fixed`], and for [`Layout::Tagged`] when no element of the body had a tagged
/// field ([`Ver::uniform`]).
#[inline]
pub(crate) fn stride<'a, T: Element<'a>>(ver: Ver) -> Option<usize> {
    match T::layout(ver) {
        Layout::Fixed(n) => Some(n),
        Layout::Tagged(n) if ver.uniform => Some(n + 1),
        _ => None,
    }
}

/// The end of a struct element of fixed-width fields (`fixed` bytes of them) at `pos`.
#[inline]
pub(crate) fn fixed_end(src: Src<'_>, pos: usize, fixed: usize, ver: Ver) -> usize {
    // One test for the common cases, and a stride (`fixed`, and the empty tagged section's
    // byte when flexible) that LLVM computes once per array.
    if ver.flexible && !ver.uniform {
        src.skip_tagged(pos + fixed)
    } else {
        pos + fixed + usize::from(ver.flexible)
    }
}

/// Checks `count` elements of `T`.
#[inline(always)]
pub(crate) fn check_elements<'a, T: Element<'a>>(
    r: &mut Reader<'a>,
    count: usize,
    ver: Ver,
    field: &'static str,
) -> Result<(), DecodeError> {
    match T::layout(ver) {
        // The count is at most the bytes left, so this cannot overflow.
        Layout::Fixed(n) => r.take(n * count, field).map(drop),
        Layout::Tagged(n) => {
            // The common case, every element's tagged section empty, in one pass over the
            // run of elements; anything else is checked element by element.
            let stride = n + 1;
            if let Some(run) = count.checked_mul(stride).filter(|&run| run <= r.remaining())
                && r.rest(run).chunks_exact(stride).all(|e| e.last() == Some(&0))
            {
                r.advance(run);
                return Ok(());
            }
            for _ in 0..count {
                if r.peek(n) == Some(0) {
                    r.advance(n + 1);
                } else {
                    r.not_uniform();
                    T::check(r, ver, field)?;
                }
            }
            Ok(())
        }
        Layout::Var => {
            for _ in 0..count {
                T::check(r, ver, field)?;
            }
            Ok(())
        }
    }
}

/// An array of `T` on a body's fast pass (see `body_view!` and [`Reader::fast_str`]): the
/// count, then the elements as [`check_elements`] takes them when every tagged section is
/// empty, each element of variable length by its own fast check. `None` for anything else,
/// which the general pass then checks.
#[inline(always)]
pub(crate) fn fast_array<'a, T: Element<'a>>(
    r: &mut Reader<'a>,
    flexible: bool,
    nullable: bool,
    ver: Ver,
) -> Option<()> {
    let count = r.fast_count(flexible, nullable)?;
    // As the general pass: a count larger than the bytes left is refused first (an element
    // may take no byte).
    if count > r.remaining() {
        return None;
    }
    match T::layout(ver) {
        // The count is at most the bytes left, so this cannot overflow.
        Layout::Fixed(n) => r.fast_take(n * count),
        Layout::Tagged(n) => {
            let stride = n + 1;
            let run = count.checked_mul(stride).filter(|&run| run <= r.remaining())?;
            if !r.rest(run).chunks_exact(stride).all(|e| e.last() == Some(&0)) {
                return None;
            }
            r.advance(run);
            Some(())
        }
        Layout::Var => {
            for _ in 0..count {
                T::fast(r, ver)?;
            }
            Some(())
        }
    }
}

/// Checks a non-nullable array of `T`: its count, then its elements.
#[inline(always)]
pub(crate) fn check_array<'a, T: Element<'a>>(
    r: &mut Reader<'a>,
    ver: Ver,
    field: &'static str,
) -> Result<(), DecodeError> {
    let count = r.array_len_non_null(ver.flexible, field)?;
    check_elements::<T>(r, count, ver, field)
}

/// Checks a nullable array of `T`.
#[inline(always)]
pub(crate) fn check_nullable_array<'a, T: Element<'a>>(
    r: &mut Reader<'a>,
    ver: Ver,
    field: &'static str,
) -> Result<(), DecodeError> {
    match r.array_len(ver.flexible, field)? {
        Some(count) => check_elements::<T>(r, count, ver, field),
        None => Ok(()),
    }
}

/// A view of an array: its element count and its elements, checked when the view that
/// holds it was built.
///
/// [`ArrayView::iter`] yields element views; it cannot fail. Arrays whose elements have
/// one stride (scalars, and structs of fixed-width fields) are also indexed in O(1) by
/// [`ArrayView::get`].
pub struct ArrayView<'a, T> {
    /// From the first element to the end of the enclosing struct.
    src: Src<'a>,
    len: u32,
    ver: Ver,
    _element: PhantomData<fn() -> T>,
}

impl<T> Clone for ArrayView<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for ArrayView<'_, T> {}

impl<'a, T: Element<'a>> ArrayView<'a, T> {
    /// An empty array, the default for array fields absent in a version.
    #[inline]
    pub(crate) const fn empty(ver: Ver) -> Self {
        ArrayView { src: Src(&[]), len: 0, ver, _element: PhantomData }
    }

    /// The nullable array at `at` of checked bytes.
    #[inline]
    pub(crate) fn nullable_at(src: Src<'a>, at: usize, ver: Ver) -> Option<Self> {
        let (len, from) = src.len_prefix(at, ver.flexible, true);
        len.map(|n| ArrayView { src: src.tail(from), len: n as u32, ver, _element: PhantomData })
    }

    /// The array at `at` of checked bytes.
    #[inline]
    pub(crate) fn at(src: Src<'a>, at: usize, ver: Ver) -> Self {
        Self::nullable_at(src, at, ver).unwrap_or(Self::empty(ver))
    }

    /// The offset after the array (or null) at `at` of checked bytes.
    #[inline]
    pub(crate) fn skip(src: Src<'a>, at: usize, ver: Ver) -> usize {
        let (len, from) = src.len_prefix(at, ver.flexible, true);
        let len = len.unwrap_or(0);
        match stride::<T>(ver) {
            Some(each) => from + each * len,
            None => {
                let mut p = from;
                for _ in 0..len {
                    p = T::at(src, p, ver).1;
                }
                p
            }
        }
    }

    /// The number of elements.
    #[inline]
    pub const fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether there are no elements.
    #[inline]
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The elements, in order.
    #[inline]
    pub fn iter(&self) -> ArrayIter<'a, T> {
        ArrayIter { src: self.src, pos: 0, left: self.len, ver: self.ver, _element: PhantomData }
    }

    /// The element at `index`: O(1) when elements have one stride, otherwise a walk over
    /// the elements before it.
    #[inline]
    pub fn get(&self, index: usize) -> Option<T> {
        if index >= self.len() {
            return None;
        }
        match stride::<T>(self.ver) {
            Some(each) => Some(T::whole(self.src.sub(index * each, (index + 1) * each), self.ver)),
            None => self.iter().nth(index),
        }
    }
}

impl<'a, T: Element<'a>> IntoIterator for ArrayView<'a, T> {
    type Item = T;
    type IntoIter = ArrayIter<'a, T>;
    fn into_iter(self) -> ArrayIter<'a, T> {
        self.iter()
    }
}

impl<'a, T: Element<'a>> IntoIterator for &ArrayView<'a, T> {
    type Item = T;
    type IntoIter = ArrayIter<'a, T>;
    fn into_iter(self) -> ArrayIter<'a, T> {
        self.iter()
    }
}

impl<'a, T: Element<'a> + fmt::Debug> fmt::Debug for ArrayView<'a, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a, T: Element<'a> + PartialEq> PartialEq for ArrayView<'a, T> {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

/// An iterator over the elements of an [`ArrayView`].
pub struct ArrayIter<'a, T> {
    src: Src<'a>,
    pos: usize,
    left: u32,
    ver: Ver,
    _element: PhantomData<fn() -> T>,
}

impl<T> Clone for ArrayIter<'_, T> {
    fn clone(&self) -> Self {
        ArrayIter { src: self.src, pos: self.pos, left: self.left, ver: self.ver, _element: PhantomData }
    }
}

impl<T> fmt::Debug for ArrayIter<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArrayIter").field("left", &self.left).finish()
    }
}

impl<'a, T: Element<'a>> Iterator for ArrayIter<'a, T> {
    type Item = T;

    #[inline]
    fn next(&mut self) -> Option<T> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let (item, end) = T::at(self.src, self.pos, self.ver);
        self.pos = end;
        Some(item)
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left as usize, Some(self.left as usize))
    }
}

impl<'a, T: Element<'a>> ExactSizeIterator for ArrayIter<'a, T> {}

impl<'a, T: Element<'a>> FusedIterator for ArrayIter<'a, T> {}

macro_rules! scalar_element {
    ($t:ty, $read:ident, $n:expr) => {
        impl<'a> private::ElementImpl<'a> for $t {
            #[inline]
            fn layout(_: Ver) -> Layout {
                Layout::Fixed($n)
            }
            #[inline]
            fn check(r: &mut Reader<'a>, _: Ver, field: &'static str) -> Result<(), DecodeError> {
                r.take($n, field).map(drop)
            }
            #[inline(always)]
            fn fast(r: &mut Reader<'a>, _: Ver) -> Option<()> {
                r.fast_take($n)
            }
            #[inline]
            fn at(src: Src<'a>, pos: usize, _: Ver) -> (Self, usize) {
                (src.$read(pos), pos + $n)
            }
            #[inline]
            fn whole(src: Src<'a>, _: Ver) -> Self {
                src.$read(0)
            }
        }
    };
}

scalar_element!(i8, i8, 1);
scalar_element!(i16, i16, 2);
scalar_element!(i32, i32, 4);
scalar_element!(i64, i64, 8);
scalar_element!(u16, u16, 2);
scalar_element!(u32, u32, 4);
scalar_element!(f64, f64, 8);
scalar_element!(bool, bool, 1);
scalar_element!(Uuid, uuid, 16);

impl<'a> private::ElementImpl<'a> for &'a str {
    #[inline]
    fn layout(_: Ver) -> Layout {
        Layout::Var
    }
    // Always: out of line, its `&mut Reader` kept the array's reader in memory.
    #[inline(always)]
    fn check(r: &mut Reader<'a>, ver: Ver, field: &'static str) -> Result<(), DecodeError> {
        r.check_str(ver.flexible, field)
    }
    #[inline(always)]
    fn fast(r: &mut Reader<'a>, ver: Ver) -> Option<()> {
        r.fast_str(ver.flexible)
    }
    #[inline]
    fn at(src: Src<'a>, pos: usize, ver: Ver) -> (Self, usize) {
        let (len, from) = src.len_prefix(pos, ver.flexible, false);
        let end = from + len.unwrap_or(0);
        (src.text(from, end), end)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_reads_through_the_element_when_its_head_does_not_fit() {
        // Two 12-byte elements of a version whose widest layout takes 16: the first's head
        // runs into the second element, the second's does not fit in what is left.
        let bytes: [u8; 24] = core::array::from_fn(|i| i as u8);
        let src = Src(&bytes);
        let (first, last) = (Fixed::<16>::new(src, 0, 12), Fixed::<16>::new(src, 12, 24));
        assert!(first.head.is_some() && last.head.is_none());
        assert_eq!(first.i32(8), i32::from_be_bytes([8, 9, 10, 11]));
        assert_eq!(last.i32(8), i32::from_be_bytes([20, 21, 22, 23]));
        assert_eq!(last.i64(4), i64::from_be_bytes([16, 17, 18, 19, 20, 21, 22, 23]));
        assert_eq!((first.bytes(), last.bytes()), (&bytes[..12], &bytes[12..]));
        // A read past the end of the bytes, which checked bytes never ask for, is a default.
        assert_eq!(last.i64(8), 0);
        assert_eq!(Fixed::<16>::whole(Src(&bytes[..12])).u16(10), u16::from_be_bytes([10, 11]));
    }
}
