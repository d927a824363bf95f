//! Entity fields found without decoding: the walkers that `tests/codegen` generates from the
//! schemas (one per message that holds entity fields, after its views in
//! `src/codec/messages/<api>.rs`) report each entity field of a body to a [`Walk`]: its
//! [`EntityKind`], where its bytes are, and the tagged-field sizes around it. This is what
//! rewriting by splicing (`kwire::filter::splice`) needs: in Kafka's encoding, arrays carry
//! counts, not byte lengths, so when a string changes length only its own length prefix,
//! the sizes of the tagged fields around it and the frame's size change.
//!
//! A walker moves past every other field with the views' checks, so it reads what the
//! views read; the bytes of tagged fields that hold no entity are skipped by their size.

use crate::ApiKey;
use crate::codec::error::{DecodeError, DecodeErrorKind};
use crate::codec::types::{Uuid, Ver};
use crate::codec::wire::Reader;

/// What an entity field names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EntityKind {
    /// A topic name (`entityType` `topicName`).
    TopicName,
    /// A consumer or share group id (`groupId`).
    GroupId,
    /// A transactional id (`transactionalId`).
    TransactionalId,
    /// A FindCoordinator key: a group id or a transactional id, by the request's `KeyType`
    /// (the schema does not mark it).
    CoordinatorKey,
    /// A topic id: a `uuid` field named `TopicId`.
    TopicId,
    /// A broker's error message (a string field named `...ErrorMessage`), which may quote
    /// entity names.
    ErrorMessage,
}

/// An entity field's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found<'a> {
    /// A string.
    Text(&'a str),
    /// A null string.
    Null,
    /// A topic id.
    TopicId(Uuid),
}

/// The most tagged fields an entity can be nested in that a walk follows (Kafka's schemas
/// nest at most two).
pub const MAX_TAGGED_DEPTH: usize = 4;

/// One entity field, as a walker reports it. Offsets count from the start of the bytes
/// the walk was given the body's position in (see [`walk`]).
#[derive(Clone, Copy, Debug)]
pub struct EntityField<'a> {
    /// What it names.
    pub kind: EntityKind,
    /// Its value.
    pub value: Found<'a>,
    /// Where the field is: for a string, its length prefix then its bytes; for a topic id,
    /// its 16 bytes.
    pub span: (usize, usize),
    /// The length prefix's width in bytes (0 for a topic id).
    #[cfg_attr(not(test), allow(dead_code))]
    pub prefix: usize,
    /// Whether the length prefix is compact (an unsigned varint of the length + 1) rather
    /// than an `int16`.
    pub compact: bool,
    /// Whether the field may be null in this version.
    #[cfg_attr(not(test), allow(dead_code))]
    pub nullable: bool,
    /// Where the struct that holds the field starts (fields of one struct share it).
    #[cfg_attr(not(feature = "reflect"), allow(dead_code, reason = "read by the value-tree rewrites"))]
    pub owner: usize,
    tagged: [usize; MAX_TAGGED_DEPTH],
    depth: usize,
}

impl EntityField<'_> {
    /// Where the size varints of the tagged fields that hold this field start, outermost
    /// first (empty for a field not in a tagged field).
    pub fn tagged_sizes(&self) -> &[usize] {
        &self.tagged[..self.depth]
    }
}

/// A generated walker (see [`walk`]).
pub type WalkFn = for<'a, 'w> fn(&mut Reader<'a>, Ver, &mut Walk<'a, 'w>) -> Result<(), DecodeError>;

/// What a generated walker reports entity fields to, and the steps it shares (one body for
/// every walker: strings, arrays, structs, tagged sections).
pub struct Walk<'a, 'w> {
    found: &'w mut dyn FnMut(&EntityField<'a>),
    owner: usize,
    tagged: [usize; MAX_TAGGED_DEPTH],
    depth: usize,
}

impl<'a> Walk<'a, '_> {
    fn report(
        &mut self,
        kind: EntityKind,
        value: Found<'a>,
        span: (usize, usize),
        prefix: usize,
        compact: bool,
        nullable: bool,
    ) {
        let field = EntityField {
            kind,
            value,
            span,
            prefix,
            compact,
            nullable,
            owner: self.owner,
            tagged: self.tagged,
            depth: self.depth,
        };
        (self.found)(&field);
    }

    /// A string entity.
    pub(crate) fn text(
        &mut self,
        r: &mut Reader<'a>,
        kind: EntityKind,
        compact: bool,
        nullable: bool,
        field: &'static str,
    ) -> Result<(), DecodeError> {
        let start = r.offset();
        let value = match nullable {
            true => r.nullable_str(compact, field)?,
            false => Some(r.str(compact, field)?),
        };
        let end = r.offset();
        let (value, len) = match value {
            Some(s) => (Found::Text(s), s.len()),
            None => (Found::Null, 0),
        };
        self.report(kind, value, (start, end), end - start - len, compact, nullable);
        Ok(())
    }

    /// An array of string entities.
    pub(crate) fn texts(
        &mut self,
        r: &mut Reader<'a>,
        kind: EntityKind,
        compact: bool,
        nullable: bool,
        field: &'static str,
    ) -> Result<(), DecodeError> {
        let count = match r.array_len(compact, field)? {
            Some(n) => n,
            None if nullable => return Ok(()),
            None => return Err(r.error(DecodeErrorKind::UnexpectedNull, field)),
        };
        for _ in 0..count {
            self.text(r, kind, compact, false, field)?;
        }
        Ok(())
    }

    /// A topic id.
    pub(crate) fn topic_id(&mut self, r: &mut Reader<'a>, field: &'static str) -> Result<(), DecodeError> {
        let start = r.offset();
        let id = r.uuid(field)?;
        self.report(EntityKind::TopicId, Found::TopicId(id), (start, start + 16), 0, false, false);
        Ok(())
    }

    /// A struct that holds entity fields (null first when `nullable`: a marker byte).
    pub(crate) fn one(
        &mut self,
        r: &mut Reader<'a>,
        ver: Ver,
        nullable: bool,
        each: WalkFn,
        field: &'static str,
    ) -> Result<(), DecodeError> {
        if nullable && r.i8(field)? < 0 {
            return Ok(());
        }
        let owner = core::mem::replace(&mut self.owner, r.offset());
        each(r, ver, self)?;
        self.owner = owner;
        Ok(())
    }

    /// An array of structs that hold entity fields.
    pub(crate) fn each(
        &mut self,
        r: &mut Reader<'a>,
        ver: Ver,
        nullable: bool,
        each: WalkFn,
        field: &'static str,
    ) -> Result<(), DecodeError> {
        let count = match r.array_len(ver.flexible, field)? {
            Some(n) => n,
            None if nullable => return Ok(()),
            None => return Err(r.error(DecodeErrorKind::UnexpectedNull, field)),
        };
        let owner = self.owner;
        for _ in 0..count {
            self.owner = r.offset();
            each(r, ver, self)?;
        }
        self.owner = owner;
        Ok(())
    }

    /// A tagged-field section some of whose fields hold entities (no schema has one today;
    /// the generator calls it when a known tagged field holds an entity): `known(tag, value, walk)`
    /// walks a field's bytes and returns `Ok(true)`, or `Ok(false)` for a field that holds
    /// none, which is skipped.
    #[allow(dead_code)]
    pub(crate) fn tagged(
        &mut self,
        r: &mut Reader<'a>,
        known: &mut dyn FnMut(u32, &mut Reader<'a>, &mut Walk<'a, '_>) -> Result<bool, DecodeError>,
        field: &'static str,
    ) -> Result<(), DecodeError> {
        let count = r.uvarint(field)?;
        for _ in 0..count {
            let tag = r.uvarint(field)?;
            let size_at = r.offset();
            let size = r.uvarint(field)? as usize;
            let mut value = r.sub(size, field)?;
            let Some(slot) = self.tagged.get_mut(self.depth) else {
                return Err(value.error(DecodeErrorKind::InvalidLength(-1), field));
            };
            *slot = size_at;
            self.depth += 1;
            let walked = known(tag, &mut value, self);
            self.depth -= 1;
            if walked? && value.remaining() != 0 {
                let kind = DecodeErrorKind::TaggedSizeMismatch {
                    tag,
                    declared: size as u32,
                    actual: value.pos() as u32,
                };
                return Err(value.error(kind, field));
            }
        }
        Ok(())
    }
}

/// Walks a body of `api` at `version` with its generated walker (from
/// `crate::codec::messages::entity_walker`), and calls `found` with each entity field in
/// wire order. The body is `bytes[at..]`, to its end; offsets count from the start of
/// `bytes`. A body the views would refuse may be refused here too, or walked as far as its
/// entities: check bodies with the views first.
pub fn walk<'a>(
    walker: WalkFn,
    api: ApiKey,
    version: i16,
    bytes: &'a [u8],
    at: usize,
    found: &mut dyn FnMut(&EntityField<'a>),
) -> Result<(), DecodeError> {
    let body = bytes.get(at..).unwrap_or_default();
    let mut r = Reader::with_base(body, at);
    let ver = Ver::new(version, api.flexible_versions().contains(version));
    let mut w = Walk { found, owner: at, tagged: [0; MAX_TAGGED_DEPTH], depth: 0 };
    walker(&mut r, ver, &mut w)?;
    r.finish("body")
}
