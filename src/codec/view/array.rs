//! Arrays in views: the sealed [`Element`] trait, each element type's layout and checks, and
//! [`ArrayView`] with its iterator.

use core::{fmt, iter::FusedIterator, marker::PhantomData};

use super::Src;
use crate::codec::error::DecodeError;
use crate::codec::types::{Uuid, Ver};
use crate::codec::wire::Reader;

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

/// The part of an array's check that depends only on the elements' layout, not on their
/// type, so that it is compiled once rather than once per element type: for
/// [`Layout::Fixed`] the run of `count` elements; for [`Layout::Tagged`] the run when every
/// element's tagged section is empty. `Ok(true)` when the elements are checked, `Ok(false)`
/// when each is left to its own check (variable-length elements, or a tagged section that is
/// not empty, which also clears [`Ver::uniform`] for the body).
#[inline]
fn check_shaped(
    r: &mut Reader<'_>,
    count: usize,
    layout: Layout,
    field: &'static str,
) -> Result<bool, DecodeError> {
    match layout {
        // The count is at most the bytes left, so this cannot overflow.
        Layout::Fixed(n) => r.take(n * count, field).map(|_| true),
        Layout::Tagged(n) => match uniform_run(r, count, n) {
            Some(run) => {
                r.advance(run);
                Ok(true)
            }
            None => {
                // An element has a tagged field, or the run is short: every element's own
                // check then finds which (a short run fails there, at the field that does
                // not fit).
                r.not_uniform();
                Ok(false)
            }
        },
        Layout::Var => Ok(false),
    }
}

/// The length of the run of `count` elements of `n` fixed bytes each followed by an empty
/// tagged section (one zero byte) at the reader's position, if the bytes left hold it.
#[inline]
fn uniform_run(r: &Reader<'_>, count: usize, n: usize) -> Option<usize> {
    let stride = n + 1;
    let run = count.checked_mul(stride)?;
    if run > r.remaining() {
        return None;
    }
    r.rest(run).chunks_exact(stride).all(|e| e.last() == Some(&0)).then_some(run)
}

/// Checks `count` elements of `T`.
#[inline(always)]
pub(crate) fn check_elements<'a, T: Element<'a>>(
    r: &mut Reader<'a>,
    count: usize,
    ver: Ver,
    field: &'static str,
) -> Result<(), DecodeError> {
    if !check_shaped(r, count, T::layout(ver), field)? {
        for _ in 0..count {
            T::check(r, ver, field)?;
        }
    }
    Ok(())
}

/// The part of [`fast_array`] that depends only on the elements' layout: the count (refused
/// when larger than the bytes left, as the general pass refuses it: an element may take no
/// byte), then the run of elements of fixed shape with every tagged section empty. The
/// number of elements left to check one by one (0 for fixed shapes); `None` for anything
/// left to the general pass.
#[inline]
fn fast_shaped(r: &mut Reader<'_>, flexible: bool, nullable: bool, layout: Layout) -> Option<usize> {
    let count = r.fast_count(flexible, nullable)?;
    if count > r.remaining() {
        return None;
    }
    match layout {
        // The count is at most the bytes left, so this cannot overflow.
        Layout::Fixed(n) => r.fast_take(n * count).map(|()| 0),
        Layout::Tagged(n) => {
            let run = uniform_run(r, count, n)?;
            r.advance(run);
            Some(0)
        }
        Layout::Var => Some(count),
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
    let count = fast_shaped(r, flexible, nullable, T::layout(ver))?;
    for _ in 0..count {
        T::fast(r, ver)?;
    }
    Some(())
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
        // `entry` takes `&dyn Debug`: no instance of `DebugList::entries` per element type.
        let mut list = f.debug_list();
        for item in self.iter() {
            list.entry(&item);
        }
        list.finish()
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
