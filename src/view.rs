//! Array views: a checked region of the input holding `len` elements, iterated without
//! allocating.

use core::{fmt, iter::FusedIterator, marker::PhantomData};

use crate::codec::ViewElement;
use crate::error::DecodeError;
use crate::types::Ver;
use crate::wire::Reader;

/// A view of an array: its element count, from the prefix, and the bytes of its elements,
/// whose structure was checked when the enclosing view was built.
///
/// [`ArrayView::iter`] decodes elements as it goes and yields a `Result` for each: an
/// element is validated (its strings' UTF-8, for example) when it is yielded, and the
/// iterator stops after the first error. Elements of a fixed size (arrays of scalars, and
/// of structs of scalars in non-flexible versions) can also be fetched by index in O(1).
pub struct ArrayView<'a, T> {
    bytes: &'a [u8],
    base: u32,
    len: u32,
    ver: Ver,
    field: &'static str,
    _element: PhantomData<fn() -> T>,
}

impl<T> Clone for ArrayView<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for ArrayView<'_, T> {}

impl<'a, T: ViewElement<'a>> ArrayView<'a, T> {
    /// An empty array, the default for array fields absent in a version.
    pub const fn empty(ver: Ver, field: &'static str) -> Self {
        ArrayView { bytes: &[], base: 0, len: 0, ver, field, _element: PhantomData }
    }

    /// Checks the structure of `count` elements at the reader's position and moves past
    /// them.
    #[inline]
    pub fn skip_elements(
        r: &mut Reader<'a>,
        count: usize,
        ver: Ver,
        field: &'static str,
    ) -> Result<Self, DecodeError> {
        let start = r.pos();
        let base = r.offset() as u32;
        match T::fixed_size(ver) {
            // The count is at most the bytes left, so this cannot overflow.
            Some(each) => {
                r.take(each * count, field)?;
            }
            None => {
                for _ in 0..count {
                    T::skip(r, ver, field)?;
                }
            }
        }
        Ok(ArrayView { bytes: r.since(start), base, len: count as u32, ver, field, _element: PhantomData })
    }

    /// Reads a non-nullable array: its count, then its elements' structure.
    #[inline]
    pub fn read(r: &mut Reader<'a>, ver: Ver, field: &'static str) -> Result<Self, DecodeError> {
        let count = r.array_len_non_null(ver.flexible, field)?;
        Self::skip_elements(r, count, ver, field)
    }

    /// Reads a nullable array: `None` for null.
    #[inline]
    pub fn read_nullable(
        r: &mut Reader<'a>,
        ver: Ver,
        field: &'static str,
    ) -> Result<Option<Self>, DecodeError> {
        match r.array_len(ver.flexible, field)? {
            Some(count) => Self::skip_elements(r, count, ver, field).map(Some),
            None => Ok(None),
        }
    }

    /// The number of elements.
    pub const fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether there are no elements.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes of the elements, without the count prefix.
    pub const fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Decodes the elements one by one.
    pub fn iter(&self) -> ArrayIter<'a, T> {
        ArrayIter {
            // Checking the region as UTF-8 in one pass pays off only over several elements.
            r: if self.len > 1 {
                Reader::for_strings(self.bytes, self.base as usize)
            } else {
                Reader::with_base(self.bytes, self.base as usize)
            },
            left: self.len,
            ver: self.ver,
            field: self.field,
            _element: PhantomData,
        }
    }

    /// The element at `index`: O(1) when elements have a fixed size in this version,
    /// otherwise a walk over the elements before it.
    pub fn get(&self, index: usize) -> Option<Result<T, DecodeError>> {
        if index >= self.len() {
            return None;
        }
        match T::fixed_size(self.ver) {
            Some(each) => {
                let at = index * each;
                let bytes = self.bytes.get(at..at + each)?;
                let mut r = Reader::with_base(bytes, self.base as usize + at);
                Some(T::read(&mut r, self.ver, self.field))
            }
            None => self.iter().nth(index),
        }
    }

    /// Decodes every element, stopping at the first error.
    pub fn validate(&self) -> Result<(), DecodeError> {
        self.iter().try_for_each(|item| item.map(drop))
    }
}

impl<'a, T: ViewElement<'a>> IntoIterator for ArrayView<'a, T> {
    type Item = Result<T, DecodeError>;
    type IntoIter = ArrayIter<'a, T>;
    fn into_iter(self) -> ArrayIter<'a, T> {
        self.iter()
    }
}

impl<'a, T: ViewElement<'a>> IntoIterator for &ArrayView<'a, T> {
    type Item = Result<T, DecodeError>;
    type IntoIter = ArrayIter<'a, T>;
    fn into_iter(self) -> ArrayIter<'a, T> {
        self.iter()
    }
}

impl<'a, T: ViewElement<'a> + fmt::Debug> fmt::Debug for ArrayView<'a, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a, T: ViewElement<'a> + PartialEq> PartialEq for ArrayView<'a, T> {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

/// An iterator over the elements of an [`ArrayView`]; it yields a `Result` for each
/// element and nothing after the first error.
pub struct ArrayIter<'a, T> {
    r: Reader<'a>,
    left: u32,
    ver: Ver,
    field: &'static str,
    _element: PhantomData<fn() -> T>,
}

impl<T> Clone for ArrayIter<'_, T> {
    fn clone(&self) -> Self {
        ArrayIter { r: self.r, left: self.left, ver: self.ver, field: self.field, _element: PhantomData }
    }
}

impl<T> fmt::Debug for ArrayIter<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArrayIter").field("left", &self.left).field("offset", &self.r.offset()).finish()
    }
}

impl<'a, T: ViewElement<'a>> Iterator for ArrayIter<'a, T> {
    type Item = Result<T, DecodeError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let item = T::read(&mut self.r, self.ver, self.field);
        if item.is_err() {
            self.left = 0;
        }
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left as usize, Some(self.left as usize))
    }
}

impl<'a, T: ViewElement<'a>> ExactSizeIterator for ArrayIter<'a, T> {}

impl<'a, T: ViewElement<'a>> FusedIterator for ArrayIter<'a, T> {}
