//! Tagged-field sections.

use super::varint::uvarint;

/// The raw fields of a tagged-field section, after the framing was checked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaggedSection<'a> {
    bytes: &'a [u8],
    count: u32,
}

impl<'a> TaggedSection<'a> {
    /// The section whose fields (after the count) are `bytes`.
    pub(crate) const fn new(bytes: &'a [u8], count: u32) -> Self {
        TaggedSection { bytes, count }
    }

    /// An empty section (non-flexible versions, or no tagged fields).
    pub const EMPTY: TaggedSection<'static> = TaggedSection { bytes: &[], count: 0 };

    /// The number of tagged fields, known and unknown.
    pub const fn count(&self) -> u32 {
        self.count
    }

    /// The section's bytes after its count.
    pub const fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Every field in the section as `(tag, bytes)`, in wire order.
    #[inline]
    pub fn iter(&self) -> TaggedIter<'a> {
        TaggedIter { rest: self.bytes, left: self.count, known: &[] }
    }

    /// The fields whose tags are not in `known`, as `(tag, bytes)`.
    #[inline]
    pub fn unknown(&self, known: &'static [u32]) -> TaggedIter<'a> {
        TaggedIter { known, ..self.iter() }
    }
}

/// An iterator over `(tag, bytes)` of a checked tagged-field section.
#[derive(Clone, Debug)]
pub struct TaggedIter<'a> {
    /// The fields not yet yielded.
    rest: &'a [u8],
    left: u32,
    known: &'static [u32],
}

impl<'a> Iterator for TaggedIter<'a> {
    type Item = (u32, &'a [u8]);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.next_field()
    }
}

impl<'a> TaggedIter<'a> {
    /// No fields.
    pub const EMPTY: TaggedIter<'static> = TaggedIter { rest: &[], left: 0, known: &[] };

    /// The `count` fields at the start of `rest`, skipping the tags in `known`.
    pub(crate) const fn new(rest: &'a [u8], count: u32, known: &'static [u32]) -> Self {
        TaggedIter { rest, left: count, known }
    }

    fn next_field(&mut self) -> Option<(u32, &'a [u8])> {
        while self.left > 0 {
            self.left -= 1;
            // The section was checked when it was read, so this cannot fail; stop if it does.
            let field = uvarint(self.rest, 0).ok().and_then(|(tag, p)| {
                let (size, p) = uvarint(self.rest, p).ok()?;
                let end = p.checked_add(size as usize)?;
                Some((tag, self.rest.get(p..end)?, end))
            });
            match field {
                Some((tag, bytes, end)) => {
                    self.rest = self.rest.get(end..).unwrap_or_default();
                    if !self.known.contains(&tag) {
                        return Some((tag, bytes));
                    }
                }
                None => self.left = 0,
            }
        }
        None
    }
}
