//! Rewriting entity strings by splicing: a frame copied once, with each renamed string
//! written in its place, its length prefix written again (a compact prefix may change
//! width), and the sizes of the tagged fields around it and the frame's size prefix
//! adjusted. No value tree is built: the generated entity walkers (from the schemas'
//! entity marks) find the fields, and everything between them is copied as it is.
//!
//! In Kafka's encoding arrays carry counts, not byte lengths, so nothing else in a body
//! changes when a string changes length. [`splice_request`] has an example.

use alloc::borrow::Cow;
use alloc::vec::Vec;
use core::fmt;

use crate::ApiKey;
use crate::codec::dispatch;
pub use crate::codec::entities::EntityKind;
use crate::codec::entities::{self, EntityField, Found, WalkFn};
use crate::codec::error::DecodeError;
use crate::codec::frame::{FrameError, size_prefix};
use crate::codec::messages::entity_walker;
use crate::codec::splice;
use crate::codec::wire::MAX_STRING_LEN;

/// What to write instead of an entity string (see [`splice_request`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Edit<'p> {
    /// This text, then the old one (a prefix put on).
    Prepend(&'p str),
    /// The old text without its first `n` bytes (a prefix taken off); `n` must be at most
    /// the text's length and at a character boundary.
    DropFront(usize),
    /// This text instead of the old one.
    Replace(Cow<'p, str>),
}

impl Edit<'_> {
    /// The new text's length, or `None` for a [`Edit::DropFront`] that does not fit `old`.
    fn len(&self, old: &str) -> Option<usize> {
        match self {
            Edit::Prepend(p) => Some(p.len() + old.len()),
            Edit::DropFront(n) => old.get(*n..).map(str::len),
            Edit::Replace(s) => Some(s.len()),
        }
    }

    fn write(&self, old: &str, out: &mut Vec<u8>) {
        match self {
            Edit::Prepend(p) => {
                out.extend_from_slice(p.as_bytes());
                out.extend_from_slice(old.as_bytes());
            }
            Edit::DropFront(n) => out.extend_from_slice(old.get(*n..).unwrap_or_default().as_bytes()),
            Edit::Replace(s) => out.extend_from_slice(s.as_bytes()),
        }
    }
}

/// Why a frame could not be spliced.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpliceError {
    /// The frame does not parse (header or body).
    Frame(FrameError),
    /// The size prefix is not the frame's length (or the frame is shorter than a prefix).
    Size {
        /// The size it gives (-1: no prefix).
        declared: i32,
        /// The bytes after it.
        actual: usize,
    },
    /// The body does not decode where the walk reads it.
    Body(DecodeError),
    /// A new string is longer than a string can be (32767 bytes).
    TooLong {
        /// The new string's length.
        len: usize,
    },
    /// A [`Edit::DropFront`] longer than the text, or not at a character boundary.
    BadEdit,
    /// The mapping answered differently the second time it was asked about a field.
    Inconsistent,
}

impl fmt::Display for SpliceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpliceError::Frame(e) => write!(f, "the frame does not parse: {e}"),
            SpliceError::Size { declared, actual } => {
                write!(f, "the size prefix says {declared} bytes, and {actual} follow it")
            }
            SpliceError::Body(e) => write!(f, "the body does not decode: {e}"),
            SpliceError::TooLong { len } => {
                write!(f, "a renamed string of {len} bytes is longer than a string can be ({MAX_STRING_LEN})")
            }
            SpliceError::BadEdit => f.write_str("an edit drops more than the text, or within a character"),
            SpliceError::Inconsistent => f.write_str("the mapping answered differently for the same field"),
        }
    }
}

impl core::error::Error for SpliceError {}

impl From<splice::Error> for SpliceError {
    fn from(e: splice::Error) -> Self {
        match e {
            splice::Error::Size(e) => SpliceError::Body(e),
            splice::Error::TooLong(len) => SpliceError::TooLong { len },
            splice::Error::Inconsistent => SpliceError::Inconsistent,
        }
    }
}

/// Splices the entity strings of a request frame: `map(kind, text)` says what to write
/// instead of each string entity field ([`EntityKind`]; nulls and topic ids are not asked
/// about), or `None` to keep it. `frame` starts with its 4-byte size prefix when `sized`,
/// and the result then has one too. Returns `Ok(None)` when nothing changed (nothing was
/// allocated), else the new frame, allocated once.
///
/// `map` is asked twice about each field, once to size the new frame and once to write
/// it, and must answer the same both times. The frame is checked as the views check it
/// first: a frame that does not parse is an error, never a panic.
///
/// ```
/// use kwire::filter::{Edit, EntityKind, splice_request};
/// use kwire::messages::{DeleteTopicsRequest, RequestBody};
/// use kwire::Str;
///
/// let names = [Str::from("orders")];
/// let request = DeleteTopicsRequest { topic_names: (&names[..]).into(), ..Default::default() };
/// let mut frame = [0u8; 64];
/// let n = kwire::dispatch::encode_request(&request, 3, 7, None, &mut frame)?;
/// // The frame with its size prefix; topic names get a tenant's prefix.
/// let new = splice_request(&frame[..n], true, |kind, _name| {
///     (kind == EntityKind::TopicName).then_some(Edit::Prepend("tenant-a."))
/// })?
/// .expect("a name changed");
/// assert_eq!(new.len(), n + 9);
/// assert_eq!(i32::from_be_bytes(new[..4].try_into()?) as usize, new.len() - 4);
/// let sent = kwire::dispatch::parse_request(&new[4..])?;
/// let RequestBody::DeleteTopics(body) = RequestBody::from(sent.body) else { unreachable!() };
/// assert_eq!(body.topic_names[0].as_ref(), "tenant-a.orders");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn splice_request<'p>(
    frame: &[u8],
    sized: bool,
    mut map: impl FnMut(EntityKind, &str) -> Option<Edit<'p>>,
) -> Result<Option<Vec<u8>>, SpliceError> {
    let bare = bare(frame, sized)?;
    let request = dispatch::parse_request(bare).map_err(SpliceError::Frame)?;
    let (api, version) = (request.body.api_key(), request.header.api_version());
    let header = request.header.as_bytes();
    let body = &bare[header.len()..];
    let Some(walker) = entity_walker(api, true) else { return Ok(None) };
    splice_parts(Parts { sized, header, body, walker, api, version }, &mut map)
}

/// [`splice_request`] for a response frame to a request of `api` at `version` (responses do
/// not say what they answer).
pub fn splice_response<'p>(
    frame: &[u8],
    sized: bool,
    api: ApiKey,
    version: i16,
    mut map: impl FnMut(EntityKind, &str) -> Option<Edit<'p>>,
) -> Result<Option<Vec<u8>>, SpliceError> {
    let bare = bare(frame, sized)?;
    let response = dispatch::parse_response(bare, api, version).map_err(SpliceError::Frame)?;
    let header = response.header.as_bytes();
    let body = &bare[header.len()..];
    let Some(walker) = entity_walker(api, false) else { return Ok(None) };
    splice_parts(Parts { sized, header, body, walker, api, version }, &mut map)
}

/// The frame without its size prefix, which must be its length.
fn bare(frame: &[u8], sized: bool) -> Result<&[u8], SpliceError> {
    if !sized {
        return Ok(frame);
    }
    match (size_prefix(frame), frame.get(4..)) {
        (Some(size), Some(rest)) if size as usize == rest.len() => Ok(rest),
        (Some(declared), Some(rest)) => Err(SpliceError::Size { declared, actual: rest.len() }),
        _ => Err(SpliceError::Size { declared: -1, actual: frame.len() }),
    }
}

/// What [`splice_parts`] splices: a checked body after a header that is copied as it is.
pub(crate) struct Parts<'f> {
    /// Whether the new frame starts with a size prefix.
    pub sized: bool,
    pub header: &'f [u8],
    pub body: &'f [u8],
    pub walker: WalkFn,
    pub api: ApiKey,
    pub version: i16,
}

type Map<'m, 'p> = &'m mut dyn FnMut(EntityKind, &str) -> Option<Edit<'p>>;

/// The edit of one field, with its new length, or `None` for a field kept.
fn edit_of<'p>(field: &EntityField<'_>, map: Map<'_, 'p>) -> Result<Option<(Edit<'p>, usize)>, SpliceError> {
    let Found::Text(old) = field.value else { return Ok(None) };
    let Some(edit) = map(field.kind, old) else { return Ok(None) };
    let len = edit.len(old).ok_or(SpliceError::BadEdit)?;
    if len > MAX_STRING_LEN {
        return Err(SpliceError::TooLong { len });
    }
    Ok(Some((edit, len)))
}

/// A frame renamed by splicing whose bytes after the last renamed string are not copied:
/// the new bytes up to there ([`Spliced::head`]), then the frame's own bytes from there on,
/// borrowed ([`Spliced::tail`]). For a Produce request or a Fetch answer that is most of
/// the frame, its records. A filter returns it as
/// [`RequestAction::RewriteSpliced`](super::RequestAction) or
/// [`ResponseAction::RewriteSpliced`](super::ResponseAction), and the chain's verdict for a
/// frame as it came is then [`Verdict::Splice`](super::Verdict),
/// which the proxy writes as the two parts; made by kwire's own filters ([`Tenant`] with
/// `borrowing_tails`).
///
/// [`Tenant`]: super::Tenant
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spliced<'f> {
    head: Vec<u8>,
    tail: &'f [u8],
}

impl<'f> Spliced<'f> {
    /// The new bytes: the frame up to the end of its last renamed string (with the new size
    /// prefix first if the frame had one).
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// The frame's bytes after its last renamed string, as they came.
    pub fn tail(&self) -> &'f [u8] {
        self.tail
    }

    /// The new frame's length.
    pub fn len(&self) -> usize {
        self.head.len() + self.tail.len()
    }

    /// Whether the new frame is empty (it never is: it has a header).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The new frame in one buffer (a copy of both parts).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len());
        out.extend_from_slice(&self.head);
        out.extend_from_slice(self.tail);
        out
    }

    /// A whole new frame of `body`'s, all in the head (the tail is `body`'s empty end).
    pub(crate) fn whole(frame: Vec<u8>, body: &'f [u8]) -> Self {
        Spliced { head: frame, tail: body.get(body.len()..).unwrap_or_default() }
    }

    /// The head, and the tail.
    pub(crate) fn into_parts(self) -> (Vec<u8>, &'f [u8]) {
        (self.head, self.tail)
    }
}

/// Splices a checked body after its header (see [`splice_request`]); offsets in the walk
/// count from the body's start.
pub(crate) fn splice_parts<'p>(parts: Parts<'_>, map: Map<'_, 'p>) -> Result<Option<Vec<u8>>, SpliceError> {
    Ok(splice_into(parts, map, true)?.map(|(out, _)| out))
}

/// [`splice_parts`] without copying the body's bytes after the last edit: a [`Spliced`]
/// whose tail is borrowed from `parts.body`.
pub(crate) fn splice_parts_head<'f, 'p>(
    parts: Parts<'f>,
    map: Map<'_, 'p>,
) -> Result<Option<Spliced<'f>>, SpliceError> {
    let body = parts.body;
    let Some((head, at)) = splice_into(parts, map, false)? else { return Ok(None) };
    Ok(Some(Spliced { head, tail: body.get(at..).unwrap_or_default() }))
}

/// The splice itself: the new frame (`whole`), or its bytes up to the end of the last edit;
/// with where the body's bytes not copied start.
fn splice_into<'p>(
    parts: Parts<'_>,
    map: Map<'_, 'p>,
    whole: bool,
) -> Result<Option<(Vec<u8>, usize)>, SpliceError> {
    let Parts { sized, header, body, walker, api, version } = parts;
    // Pass 1: where the edits are and how long each will be.
    let mut plan = splice::Plan::new(body);
    let mut failed: Option<SpliceError> = None;
    // Where the last edit ends: nothing after it changes.
    let mut last_end = 0;
    let walked = entities::walk(walker, api, version, body, 0, &mut |field| {
        if failed.is_some() {
            return;
        }
        let planned = edit_of(field, map).and_then(|edit| match edit {
            Some((_, len)) => {
                last_end = field.span.1;
                let len = splice::prefix_len(field.compact, len) + len;
                plan.edit(field.span, len, field.tagged_sizes()).map_err(SpliceError::from)
            }
            None => Ok(()),
        });
        if let Err(e) = planned {
            failed = Some(e);
        }
    });
    walked.map_err(SpliceError::Body)?;
    if let Some(e) = failed {
        return Err(e);
    }
    let Some(mut writer) = plan.finish()? else { return Ok(None) };
    let frame_len = header.len() + writer.len();
    let size = i32::try_from(frame_len).map_err(|_| SpliceError::TooLong { len: frame_len })?;
    // Pass 2: the one copy (of the bytes up to the last edit, when not `whole`).
    let capacity = frame_len + if sized { 4 } else { 0 };
    let rest = if whole { 0 } else { body.len().saturating_sub(last_end) };
    let mut out = Vec::with_capacity(capacity.saturating_sub(rest));
    if sized {
        out.extend_from_slice(&size.to_be_bytes());
    }
    out.extend_from_slice(header);
    let mut failed: Option<SpliceError> = None;
    entities::walk(walker, api, version, body, 0, &mut |field| {
        if failed.is_some() {
            return;
        }
        let (edit, len) = match edit_of(field, map) {
            Ok(Some(e)) => e,
            Ok(None) => return,
            Err(e) => return failed = Some(e),
        };
        let Found::Text(old) = field.value else { return };
        writer.replace(&mut out, field.span);
        splice::push_prefix(&mut out, field.compact, len);
        edit.write(old, &mut out);
    })
    .map_err(SpliceError::Body)?;
    if let Some(e) = failed {
        return Err(e);
    }
    if whole {
        writer.finish(&mut out)?;
        return Ok(Some((out, body.len())));
    }
    let at = writer.finish_head(&out)?;
    Ok(Some((out, at)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::entities::Walk;
    use crate::codec::types::Ver;
    use crate::codec::wire::Reader;
    use crate::codec::wire::varint::push_uvarint;
    use alloc::string::String;
    use alloc::vec;

    /// No schema has an entity in a known tagged field today, so the tagged-field sizes are
    /// tested with a walker written here: a name, then a tagged field (tag 0) holding a
    /// name and a tagged field of its own (tag 5) holding a nullable group id, then an
    /// unknown tagged field (tag 7).
    fn walker<'a>(r: &mut Reader<'a>, _: Ver, w: &mut Walk<'a, '_>) -> Result<(), DecodeError> {
        w.text(r, EntityKind::TopicName, true, false, "A")?;
        let mut outer = |tag, value: &mut Reader<'a>, w: &mut Walk<'a, '_>| {
            if tag != 0 {
                return Ok(false);
            }
            w.text(value, EntityKind::TopicName, true, false, "B")?;
            let mut inner = |_, v: &mut Reader<'a>, w: &mut Walk<'a, '_>| {
                w.text(v, EntityKind::GroupId, true, true, "C")?;
                Ok(true)
            };
            w.tagged(value, &mut inner, "inner")?;
            Ok(true)
        };
        w.tagged(r, &mut outer, "outer")
    }

    fn compact(s: &str, out: &mut Vec<u8>) {
        push_uvarint(out, s.len() as u32 + 1);
        out.extend_from_slice(s.as_bytes());
    }

    fn tagged(tag: u32, content: &[u8], out: &mut Vec<u8>) {
        push_uvarint(out, tag);
        push_uvarint(out, content.len() as u32);
        out.extend_from_slice(content);
    }

    /// The body with these three strings, every size written from them.
    fn body(a: &str, b: &str, c: &str) -> Vec<u8> {
        let mut inner = Vec::new();
        compact(c, &mut inner);
        let mut outer = Vec::new();
        compact(b, &mut outer);
        outer.push(1);
        tagged(5, &inner, &mut outer);
        let mut out = Vec::new();
        compact(a, &mut out);
        out.push(2);
        tagged(0, &outer, &mut out);
        tagged(7, b"raw", &mut out);
        out
    }

    fn splice_body(input: &[u8], map: Map<'_, '_>) -> Result<Option<Vec<u8>>, SpliceError> {
        let parts =
            Parts { sized: true, header: b"head", body: input, walker, api: ApiKey::Fetch, version: 12 };
        splice_parts(parts, map)
    }

    #[test]
    fn tagged_sizes_grow_and_widen_inside_out() {
        let (b, c) = ("b".repeat(125), "c".repeat(120));
        let input = body("ab", &b, &c);
        // Every name gets the prefix: the compact prefixes of B and C and both tagged sizes
        // become a byte wider.
        let got = splice_body(&input, &mut |_, _| Some(Edit::Prepend("tenant-a."))).unwrap().unwrap();
        let want = body("tenant-a.ab", &alloc::format!("tenant-a.{b}"), &alloc::format!("tenant-a.{c}"));
        assert_eq!(&got[..4], &((4 + want.len()) as i32).to_be_bytes());
        assert_eq!(&got[4..8], b"head");
        assert_eq!(&got[8..], &want[..]);
        // And back: the prefixes come off, and the sizes narrow again.
        let back = splice_body(&want, &mut |_, _| Some(Edit::DropFront(9))).unwrap().unwrap();
        assert_eq!(&back[8..], &input[..]);
        // Only the inner one.
        let got = splice_body(&input, &mut |kind, _| {
            (kind == EntityKind::GroupId).then_some(Edit::Replace(String::from("g").into()))
        })
        .unwrap()
        .unwrap();
        assert_eq!(&got[8..], &body("ab", &b, "g")[..]);
        // Nothing renamed: nothing written.
        assert_eq!(splice_body(&input, &mut |_, _| None), Ok(None));
    }

    #[test]
    fn fields_are_reported_with_their_prefixes_and_sizes() {
        let input = body("ab", "b", "");
        let mut seen = vec![];
        crate::codec::entities::walk(walker, ApiKey::Fetch, 12, &input, 0, &mut |f| {
            seen.push((f.kind, f.value, f.span, f.prefix, f.compact, f.nullable, f.tagged_sizes().to_vec()))
        })
        .unwrap();
        assert_eq!(seen.len(), 3);
        assert_eq!(seen[0], (EntityKind::TopicName, Found::Text("ab"), (0, 3), 1, true, false, vec![]));
        // The tagged section's count at 3, the tag at 4, its size at 5.
        assert_eq!(seen[1], (EntityKind::TopicName, Found::Text("b"), (6, 8), 1, true, false, vec![5]));
        assert_eq!(seen[2], (EntityKind::GroupId, Found::Text(""), (11, 12), 1, true, true, vec![5, 10]));
        // A body cut short is an error.
        for n in 0..input.len() - 1 {
            assert!(splice_body(&input[..n], &mut |_, _| Some(Edit::Prepend("x"))).is_err(), "{n}");
        }
    }
}
