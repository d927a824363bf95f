//! The bytes a view reads: [`Src`] (a body's checked bytes) and [`Fixed`] (an element of
//! fixed-width fields), with their typed, never-failing reads.

use crate::codec::types::Uuid;
use crate::codec::wire::{TaggedIter, varint};

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
pub struct Src<'a>(pub(super) &'a [u8]);

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
        // Checked bytes always hold a varint here; anything else ends the view's bytes.
        let b = self.bytes();
        varint::long_uvarint(b, at).unwrap_or((0, b.len()))
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
