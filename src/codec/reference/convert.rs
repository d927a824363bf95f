//! What the generated conversions from views (`From<…View>` for every struct) are built
//! from: arrays collected element by element, and unknown tagged fields that borrow their
//! bytes. Owned values come from views this way; the reference decoder (`read`) is the
//! separate path the tests hold against it.

use alloc::vec::Vec;

use crate::codec::types::{List, RawTaggedField};
use crate::codec::view::{ArrayView, Element};
use crate::codec::wire::TaggedIter;

/// Converts every element of an array view (the generated `From` of each struct's view,
/// or the identity for scalars, or `Str::from` for strings).
/// (A loop rather than `collect`, which reads the first element apart from the others and so
/// inlines the array's iteration twice. The element's `From` is `#[inline(never)]`: it is
/// public, so it is compiled on its own anyway, and inlined here it was compiled again into
/// every struct that holds an array of it.)
pub(crate) fn list_from_view<'a, V: Element<'a>, T: From<V>>(view: ArrayView<'a, V>) -> List<'a, T> {
    let mut items = Vec::with_capacity(view.len());
    for item in view.iter() {
        items.push(T::from(item));
    }
    List::Owned(items)
}

/// A view's unknown tagged fields as values that borrow their bytes.
pub(crate) fn unknown_from_view(fields: TaggedIter<'_>) -> List<'_, RawTaggedField<'_>> {
    fields.map(|(tag, data)| RawTaggedField { tag, data: List::Borrowed(data) }).collect()
}
