//! Splicing: a body copied once with some byte ranges replaced, and the sizes of the
//! tagged fields that hold them written again. In Kafka's encoding arrays carry counts, not
//! byte lengths, so when a range changes length nothing else in the body changes but the
//! sizes of the tagged fields around it (and a string's own length prefix, which is part of
//! the range). No value tree is built, and nothing is allocated but the copy (and a vector
//! for a body with more than a few tagged fields that change).
//!
//! The callers find what to replace: `filter::splice` renames entity strings (from the
//! generated entity walkers), `filter::rewrite` and `reflect::addresses` rewrite broker
//! addresses. A splice is two passes over the same edits, in wire order:
//!
//! 1. [`Plan::edit`] for each: the range, the length of what replaces it, and where the size
//!    varints of the tagged fields that hold it start; [`Plan::finish`] then settles the sizes
//!    (inner ones first: a size whose varint changes width grows the sizes around it) and
//!    says how long the new body is;
//! 2. [`Writer::replace`] for each, after which the caller writes the new bytes, and
//!    [`Writer::finish`], which copies the rest and checks that it all adds up.

use alloc::vec::Vec;

use crate::codec::error::DecodeError;
use crate::codec::wire::Reader;
use crate::codec::wire::varint::{push_uvarint, uvarint_len};

/// Why a splice could not be made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Error {
    /// A tagged field's size does not decode where the edit says it is.
    Size(DecodeError),
    /// A tagged field's new size does not fit its `u32` (the size it would have).
    TooLong(usize),
    /// The edits do not add up: out of order, overlapping, or written other than planned.
    Inconsistent,
}

/// The bytes of a string's new length prefix: an unsigned varint of the length + 1 when
/// `compact`, else an `int16`.
pub(crate) fn prefix_len(compact: bool, len: usize) -> usize {
    if compact { uvarint_len(len as u32 + 1) } else { 2 }
}

/// Appends a string's length prefix (see [`prefix_len`]); the caller checks the length
/// against `MAX_STRING_LEN` first.
pub(crate) fn push_prefix(out: &mut Vec<u8>, compact: bool, len: usize) {
    if compact {
        push_uvarint(out, len as u32 + 1);
    } else {
        out.extend_from_slice(&(len as i16).to_be_bytes());
    }
}

/// Appends a string with its length prefix (see [`push_prefix`]).
pub(crate) fn push_str(out: &mut Vec<u8>, compact: bool, s: &str) {
    push_prefix(out, compact, s.len());
    out.extend_from_slice(s.as_bytes());
}

/// One tagged field's size: where its varint starts, the old size, the varint's width,
/// what its content grows by, and the size that holds it (if any).
#[derive(Clone, Copy, Default)]
struct Size {
    at: usize,
    old: u32,
    width: usize,
    grows: i64,
    outer: Option<usize>,
}

impl Size {
    /// The size written: settled once [`Plan::finish`] has run.
    fn settled(&self) -> u32 {
        (i64::from(self.old) + self.grows) as u32
    }
}

/// The tagged-field sizes a splice changes, in wire order: the first few in place, the
/// rest (a body with many edits in tagged fields) in a vector.
struct Sizes {
    few: [Size; 8],
    n: usize,
    more: Vec<Size>,
}

impl Sizes {
    fn len(&self) -> usize {
        self.n + self.more.len()
    }

    fn get(&mut self, i: usize) -> Option<&mut Size> {
        match i.checked_sub(self.few.len()) {
            None => self.few[..self.n].get_mut(i),
            Some(j) => self.more.get_mut(j),
        }
    }

    /// The index of the size at `at`, added if new (edits in wire order bring new sizes
    /// in ascending order).
    fn index(&mut self, at: usize, outer: Option<usize>, body: &[u8]) -> Result<usize, Error> {
        let len = self.len();
        if let Some(i) = len.checked_sub(1)
            && self.get(i).is_some_and(|s| s.at == at)
        {
            return Ok(i);
        }
        for i in 0..len {
            if self.get(i).is_some_and(|s| s.at == at) {
                return Ok(i);
            }
        }
        let mut r = Reader::new(body.get(at..).unwrap_or_default());
        let old = r.uvarint("tagged field size").map_err(Error::Size)?;
        let size = Size { at, old, width: r.pos(), grows: 0, outer };
        match self.few.get_mut(self.n) {
            Some(slot) if self.more.is_empty() => {
                *slot = size;
                self.n += 1;
            }
            _ => self.more.push(size),
        }
        Ok(len)
    }
}

/// The first pass of a splice of `body` (see the module doc).
pub(crate) struct Plan<'b> {
    body: &'b [u8],
    grows: i64,
    edits: usize,
    sizes: Sizes,
}

impl<'b> Plan<'b> {
    /// A splice of `body` with no edits yet.
    pub(crate) fn new(body: &'b [u8]) -> Self {
        Plan { body, grows: 0, edits: 0, sizes: Sizes { few: [Size::default(); 8], n: 0, more: Vec::new() } }
    }

    /// Bytes `span.0..span.1` of the body become `len` bytes; `tagged` are where the size
    /// varints of the tagged fields that hold them start, outermost first. Edits come in
    /// wire order.
    pub(crate) fn edit(&mut self, span: (usize, usize), len: usize, tagged: &[usize]) -> Result<(), Error> {
        let delta = len as i64 - span.1.saturating_sub(span.0) as i64;
        self.grows += delta;
        self.edits += 1;
        let mut outer = None;
        for &at in tagged {
            let i = self.sizes.index(at, outer, self.body)?;
            if let Some(s) = self.sizes.get(i) {
                s.grows += delta;
            }
            outer = Some(i);
        }
        Ok(())
    }

    /// Settles the sizes of the tagged fields: `None` when no edit was planned, else the
    /// second pass, which knows the new body's length ([`Writer::len`]).
    pub(crate) fn finish(mut self) -> Result<Option<Writer<'b>>, Error> {
        if self.edits == 0 {
            return Ok(None);
        }
        // Inner sizes last in wire order, so settled first: a size whose varint changes
        // width grows the sizes around it.
        let sizes = &mut self.sizes;
        for i in (0..sizes.len()).rev() {
            let Some(s) = sizes.get(i).map(|s| *s) else { continue };
            let new = i64::from(s.old) + s.grows;
            let new = u32::try_from(new).map_err(|_| Error::TooLong(new.max(0) as usize))?;
            let widen = uvarint_len(new) as i64 - s.width as i64;
            self.grows += widen;
            let mut outer = s.outer;
            while let Some(o) = outer {
                let Some(os) = sizes.get(o) else { break };
                os.grows += widen;
                outer = os.outer;
            }
        }
        let len = usize::try_from(self.body.len() as i64 + self.grows).map_err(|_| Error::Inconsistent)?;
        Ok(Some(Writer { body: self.body, sizes: self.sizes, len, copied: 0, next: 0, start: None }))
    }
}

/// The second pass of a splice (see the module doc).
pub(crate) struct Writer<'b> {
    body: &'b [u8],
    sizes: Sizes,
    len: usize,
    /// The body's bytes before this are in the copy.
    copied: usize,
    /// The next size to write.
    next: usize,
    /// Where the body starts in the copy.
    start: Option<usize>,
}

impl Writer<'_> {
    /// The new body's length.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Appends to `out` the body up to `span.0`, with the new sizes of the tagged fields
    /// before it, and skips `span`: the caller appends the new bytes next, the `len` it
    /// planned for the span. The first call says where the body starts in `out`.
    pub(crate) fn replace(&mut self, out: &mut Vec<u8>, span: (usize, usize)) {
        self.start.get_or_insert(out.len());
        while let Some(s) = self.sizes.get(self.next).copied().filter(|s| s.at < span.0) {
            out.extend_from_slice(self.body.get(self.copied..s.at).unwrap_or_default());
            push_uvarint(out, s.settled());
            self.copied = s.at + s.width;
            self.next += 1;
        }
        out.extend_from_slice(self.body.get(self.copied..span.0).unwrap_or_default());
        self.copied = span.1;
    }

    /// Appends the rest of the body to `out`, and checks that the new body is as long as
    /// planned with every size written.
    pub(crate) fn finish(self, out: &mut Vec<u8>) -> Result<(), Error> {
        let start = self.start.unwrap_or(out.len());
        out.extend_from_slice(self.body.get(self.copied..).unwrap_or_default());
        if self.next != self.sizes.len() || out.len() - start != self.len {
            return Err(Error::Inconsistent);
        }
        Ok(())
    }

    /// [`Writer::finish`] without copying the rest: checks that the new body is as long as
    /// planned with the rest of the body as it is, and returns where that rest starts in
    /// the body (everything after the last edit, which no size around it changes).
    pub(crate) fn finish_head(self, out: &[u8]) -> Result<usize, Error> {
        let start = self.start.unwrap_or(out.len());
        let rest = self.body.len().saturating_sub(self.copied);
        if self.next != self.sizes.len() || out.len() - start + rest != self.len {
            return Err(Error::Inconsistent);
        }
        Ok(self.copied.min(self.body.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An edit: the range, its new bytes, the tagged sizes around it.
    type E<'a> = ((usize, usize), &'a [u8], &'a [usize]);

    /// Writes the edits through both passes, after a byte that stands for a header.
    fn splice(body: &[u8], edits: &[E<'_>]) -> Result<Option<Vec<u8>>, Error> {
        let mut plan = Plan::new(body);
        for &(span, new, tagged) in edits {
            plan.edit(span, new.len(), tagged)?;
        }
        let Some(mut writer) = plan.finish()? else { return Ok(None) };
        let mut out = alloc::vec![0xee];
        for &(span, new, _) in edits {
            writer.replace(&mut out, span);
            out.extend_from_slice(new);
        }
        writer.finish(&mut out)?;
        Ok(Some(out))
    }

    #[test]
    fn ranges_are_replaced_and_sizes_written_again() {
        // A string "ab" (int16 prefix), then a tagged field of size 3 holding a compact "xy".
        let body = [0, 2, b'a', b'b', 0, 3, 3, b'x', b'y', 9];
        let (mut host, mut inner) = (Vec::new(), Vec::new());
        push_str(&mut host, false, "abc");
        push_str(&mut inner, true, "wxyz");
        assert_eq!(prefix_len(true, 4) + 4, inner.len());
        let edits: [E<'_>; 2] = [((0, 4), &host, &[]), ((6, 9), &inner, &[5])];
        let got = splice(&body, &edits).unwrap().unwrap();
        assert_eq!(got, [0xee, 0, 3, b'a', b'b', b'c', 0, 5, 5, b'w', b'x', b'y', b'z', 9]);
        assert_eq!(splice(&body, &[]), Ok(None));
    }

    #[test]
    fn a_head_ends_at_the_last_edit_and_the_rest_is_left_where_it_is() {
        let body = [0, 2, b'a', b'b', 0, 3, 3, b'x', b'y', 9, 8, 7];
        let mut inner = Vec::new();
        push_str(&mut inner, true, "wxyz");
        let mut plan = Plan::new(&body);
        plan.edit((6, 9), inner.len(), &[5]).unwrap();
        let mut writer = plan.finish().unwrap().unwrap();
        let mut head = alloc::vec![0xee];
        writer.replace(&mut head, (6, 9));
        head.extend_from_slice(&inner);
        let tail = writer.finish_head(&head).unwrap();
        assert_eq!(tail, 9);
        let whole = splice(&body, &[((6, 9), &inner, &[5])]).unwrap().unwrap();
        assert_eq!([&head[..], &body[tail..]].concat(), whole);
    }

    #[test]
    fn edits_that_do_not_add_up_are_refused() {
        let body = [1, 2, 3, 4, 5, 6];
        let overlapping: [E<'_>; 2] = [((0, 3), b"a", &[]), ((2, 4), b"b", &[])];
        assert_eq!(splice(&body, &overlapping), Err(Error::Inconsistent));
        let out_of_order: [E<'_>; 2] = [((3, 4), b"a", &[]), ((0, 2), b"b", &[])];
        assert_eq!(splice(&body, &out_of_order), Err(Error::Inconsistent));
        // A tagged size that is not a varint.
        let bad_size: [E<'_>; 1] = [((0, 0), b"", &[0])];
        assert!(matches!(splice(&[0x80], &bad_size), Err(Error::Size(_))));
    }
}
