//! The schema walker: reads any body (or header) field by field from its
//! [`MessageSchema`](super::MessageSchema) and hands every field to a [`Visitor`].
//!
//! It reads with the crate's own `wire::Reader`, the cursor the typed
//! views and the reference decoder use, so every length, count, varint, null, UTF-8 and
//! tagged-field rule is applied by the same code, and the walker accepts and rejects the
//! same bodies as the typed views, with the same [`DecodeErrorKind`]s at the same
//! offsets (only the `field` text of a [`DecodeError`] differs: the walker names the
//! schema field, e.g. `"Timestamp"`, and its [`Path`] says where it is).
//!
//! It neither allocates nor needs `alloc`: the [`Path`] to the current field is a fixed
//! array of [`MAX_DEPTH`] steps (Kafka's schemas nest at most four deep).

use super::{FieldSchema, FieldType, StructSchema};
use crate::ApiKey;
use crate::codec::error::{DecodeError, DecodeErrorKind};
use crate::codec::types::Versions;
use crate::codec::wire::Reader;

mod path;
mod visitor;

#[cfg_attr(not(feature = "json"), allow(unused_imports, reason = "JSON paths are written with it"))]
pub(crate) use path::write_key;
pub use path::{FramePart, MAX_DEPTH, Path, Step, WalkError};
pub use visitor::{Field, Scalar, TaggedField, TaggedFraming, Visitor};

/// What [`walk_request_header`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestHeaderInfo {
    /// The API.
    pub api_key: ApiKey,
    /// The request version.
    pub api_version: i16,
    /// The header version (1 or 2).
    pub header_version: i16,
    /// Where the header ends (the body's first byte).
    pub end: usize,
}

const fn header_field(name: &'static str, ty: FieldType, nullable: bool, about: &'static str) -> FieldSchema {
    FieldSchema {
        name,
        ty,
        versions: Versions::new(0, i16::MAX),
        nullable_versions: if nullable { Versions::new(0, i16::MAX) } else { Versions::new(0, -1) },
        tagged_versions: Versions::new(0, -1),
        tag: None,
        default: None,
        ignorable: false,
        entity: None,
        about,
    }
}

/// The request header's fields (header versions 1 and 2; ClientId has an int16 length
/// in both, and version 2 adds a tagged-field section).
pub static REQUEST_HEADER: StructSchema = StructSchema {
    name: "RequestHeader",
    fields: &[
        header_field("RequestApiKey", FieldType::Int16, false, "The API key of this request."),
        header_field("RequestApiVersion", FieldType::Int16, false, "The API version of this request."),
        header_field("CorrelationId", FieldType::Int32, false, "The correlation ID of this request."),
        header_field("ClientId", FieldType::String, true, "The client ID string."),
    ],
};

/// The response header's fields (version 1 adds a tagged-field section).
pub static RESPONSE_HEADER: StructSchema = StructSchema {
    name: "ResponseHeader",
    fields: &[header_field("CorrelationId", FieldType::Int32, false, "The correlation ID of this response.")],
};

/// How a struct's fields are encoded.
#[derive(Clone, Copy)]
struct Mode {
    version: i16,
    /// Compact strings, bytes and arrays.
    flexible: bool,
    /// Tagged-field sections after every struct.
    tagged: bool,
}

struct Walk<'v, V> {
    visitor: &'v mut V,
    mode: Mode,
    path: Path,
}

fn decode_err(error: DecodeError, path: &Path) -> WalkError {
    WalkError::Decode { error, path: *path }
}

impl<'a, V: Visitor<'a>> Walk<'_, V> {
    fn err(&self, error: DecodeError) -> WalkError {
        decode_err(error, &self.path)
    }

    #[allow(clippy::too_many_arguments)]
    fn field<'p>(
        path: &'p Path,
        f: &'static FieldSchema,
        ty: &'static FieldType,
        index: Option<usize>,
        offset: usize,
        end: usize,
        mode: Mode,
        tag: Option<u32>,
    ) -> Field<'p> {
        Field {
            schema: f,
            ty,
            index,
            offset,
            end,
            nullable: index.is_none() && f.is_nullable(mode.version),
            flexible: mode.flexible,
            tag,
            path,
        }
    }

    fn strukt(&mut self, r: &mut Reader<'a>, s: &'static StructSchema) -> Result<(), WalkError> {
        for (i, f) in s.fields.iter().enumerate() {
            if f.is_inline(self.mode.version) {
                if !self.path.push(i) {
                    return Err(WalkError::TooDeep { offset: r.offset() });
                }
                self.value(r, f, &f.ty, None, None)?;
                self.path.pop();
            }
        }
        if self.mode.tagged {
            self.tagged_section(r, Some(s))?;
        }
        Ok(())
    }

    /// Reads one value of type `ty`: the field `f` itself, or element `index` of it.
    fn value(
        &mut self,
        r: &mut Reader<'a>,
        f: &'static FieldSchema,
        ty: &'static FieldType,
        index: Option<usize>,
        tag: Option<u32>,
    ) -> Result<(), WalkError> {
        let start = r.offset();
        let mode = self.mode;
        let flex = mode.flexible;
        let nullable = index.is_none() && f.is_nullable(mode.version);
        let name = f.name;
        let scalar = match ty {
            FieldType::Bool => r.bool(name).map(Scalar::Bool),
            FieldType::Int8 => r.i8(name).map(Scalar::Int8),
            FieldType::Int16 => r.i16(name).map(Scalar::Int16),
            FieldType::Int32 => r.i32(name).map(Scalar::Int32),
            FieldType::Int64 => r.i64(name).map(Scalar::Int64),
            FieldType::Uint16 => r.u16(name).map(Scalar::Uint16),
            FieldType::Uint32 => r.u32(name).map(Scalar::Uint32),
            FieldType::Float64 => r.f64(name).map(Scalar::Float64),
            FieldType::Uuid => r.uuid(name).map(Scalar::Uuid),
            FieldType::String if nullable => {
                r.nullable_str(flex, name).map(|s| s.map_or(Scalar::Null, Scalar::String))
            }
            FieldType::String => r.str(flex, name).map(Scalar::String),
            FieldType::Bytes if nullable => {
                r.nullable_bytes(flex, name).map(|b| b.map_or(Scalar::Null, Scalar::Bytes))
            }
            FieldType::Bytes => r.bytes(flex, name).map(Scalar::Bytes),
            FieldType::Records if nullable => {
                r.nullable_bytes(flex, name).map(|b| b.map_or(Scalar::Null, Scalar::Records))
            }
            FieldType::Records => r.bytes(flex, name).map(Scalar::Records),
            FieldType::Array(elem) => {
                let count = if nullable {
                    r.array_len(flex, name)
                } else {
                    r.array_len_non_null(flex, name).map(Some)
                }
                .map_err(|e| self.err(e))?;
                let at = Self::field(&self.path, f, ty, index, start, r.offset(), mode, tag);
                self.visitor.enter_array(&at, count);
                let mut result = Ok(());
                for i in 0..count.unwrap_or(0) {
                    self.path.set_index(Some(i));
                    result = self.value(r, f, elem, Some(i), None);
                    if result.is_err() {
                        break;
                    }
                }
                if result.is_ok() {
                    // The path names the array again, not its last element.
                    self.path.set_index(None);
                }
                let at = Self::field(&self.path, f, ty, index, start, r.offset(), mode, tag);
                self.visitor.leave_array(&at, count);
                return result;
            }
            FieldType::Struct(s) => {
                if nullable {
                    let marker = r.i8(name).map_err(|e| self.err(e))?;
                    if marker < 0 {
                        let at = Self::field(&self.path, f, ty, index, start, r.offset(), mode, tag);
                        self.visitor.value(&at, Scalar::Null);
                        return Ok(());
                    }
                }
                let at = Self::field(&self.path, f, ty, index, start, r.offset(), mode, tag);
                self.visitor.enter_struct(&at, s);
                let result = self.strukt(r, s);
                let at = Self::field(&self.path, f, ty, index, start, r.offset(), mode, tag);
                self.visitor.leave_struct(&at, s);
                return result;
            }
        };
        let scalar = scalar.map_err(|e| self.err(e))?;
        let at = Self::field(&self.path, f, ty, index, start, r.offset(), mode, tag);
        self.visitor.value(&at, scalar);
        Ok(())
    }

    /// Reads a tagged-field section with the checks of [`Reader::tagged_fields`],
    /// decoding the fields `s` knows in this version and handing on the others raw.
    fn tagged_section(
        &mut self,
        r: &mut Reader<'a>,
        s: Option<&'static StructSchema>,
    ) -> Result<(), WalkError> {
        const FIELD: &str = "_tagged_fields";
        let start = r.offset();
        self.path.tagged = true;
        let count = match r.uvarint(FIELD) {
            Ok(count) => count,
            Err(e) => return Err(self.err(e)),
        };
        if u64::from(count) > r.remaining() as u64 {
            return Err(self.err(DecodeError::new(DecodeErrorKind::ArrayTooLong(count), start, FIELD)));
        }
        let section_path = self.path;
        let section =
            TaggedFraming { owner: s, offset: start, count_end: r.offset(), count, path: &section_path };
        self.visitor.enter_tagged_fields(&section);
        let result = self.tagged_entries(r, s, count);
        self.visitor.leave_tagged_fields(&section, r.offset());
        if result.is_ok() {
            self.path.tagged = false;
        }
        result
    }

    fn tagged_entries(
        &mut self,
        r: &mut Reader<'a>,
        s: Option<&'static StructSchema>,
        count: u32,
    ) -> Result<(), WalkError> {
        const FIELD: &str = "_tagged_fields";
        let mut last: Option<u32> = None;
        for _ in 0..count {
            let entry = r.offset();
            let tag = r.uvarint(FIELD).map_err(|e| self.err(e))?;
            if last.is_some_and(|prev| tag <= prev) {
                return Err(self.err(DecodeError::new(DecodeErrorKind::TagOutOfOrder(tag), entry, FIELD)));
            }
            last = Some(tag);
            let size_offset = r.offset();
            let size = r.uvarint(FIELD).map_err(|e| self.err(e))? as usize;
            let value_offset = r.offset();
            let mut value = r.sub(size, FIELD).map_err(|e| self.err(e))?;
            let known = s.and_then(|s| s.fields.iter().enumerate().find(|(_, f)| f.tag == Some(tag)));
            let mut info = TaggedField { tag, offset: entry, size_offset, value_offset, size, known: None };
            match known {
                Some((i, f)) if f.is_tagged(self.mode.version) => {
                    info.known = Some(f);
                    self.visitor.tagged_field(&info);
                    self.path.tagged = false;
                    if !self.path.push(i) {
                        return Err(WalkError::TooDeep { offset: value_offset });
                    }
                    let mut result = self.value(&mut value, f, &f.ty, None, Some(tag));
                    if result.is_ok() && value.remaining() != 0 {
                        let kind = DecodeErrorKind::TaggedSizeMismatch {
                            tag,
                            declared: size as u32,
                            actual: value.pos() as u32,
                        };
                        result = Err(self.err(DecodeError::new(kind, value.offset(), FIELD)));
                    }
                    self.visitor.leave_tagged_field(&info, r.offset());
                    result?;
                    self.path.pop();
                    self.path.tagged = true;
                }
                Some(_) => {
                    let kind = DecodeErrorKind::TagNotValidForVersion(tag);
                    return Err(self.err(DecodeError::new(kind, value_offset, FIELD)));
                }
                None => {
                    let data = value.take(size, FIELD).map_err(|e| self.err(e))?;
                    self.visitor.unknown_tagged_field(&info, data);
                }
            }
        }
        Ok(())
    }
}

/// Walks a message body of `schema` at `version` that fills all of `body`: the
/// visitor sees every field; bytes after the body are refused
/// ([`DecodeErrorKind::TrailingBytes`]), as [`crate::codec::messages::RequestBodyView::new`]
/// and [`crate::codec::messages::ResponseBodyView::new`] refuse them.
///
/// Offsets count from `base` (0 for offsets within `body`; the body's position in a
/// frame for offsets from the frame's start).
pub fn walk_body<'a, V: Visitor<'a>>(
    schema: &super::MessageSchema,
    version: i16,
    body: &'a [u8],
    base: usize,
    visitor: &mut V,
) -> Result<(), WalkError> {
    let end = walk_body_prefix(schema, version, body, base, visitor)?;
    match body.len() - (end - base) {
        0 => Ok(()),
        n => Err(decode_err(
            DecodeError::new(DecodeErrorKind::TrailingBytes(n as u32), end, "body"),
            &Path::new(FramePart::Body, schema.body),
        )),
    }
}

/// [`walk_body`] for a body that may be followed by other bytes: returns where the body
/// ends (counted from `base`).
pub fn walk_body_prefix<'a, V: Visitor<'a>>(
    schema: &super::MessageSchema,
    version: i16,
    body: &'a [u8],
    base: usize,
    visitor: &mut V,
) -> Result<usize, WalkError> {
    let mut r = Reader::with_base(body, base);
    if !schema.versions.contains(version) {
        let error = DecodeError::new(DecodeErrorKind::UnsupportedVersion(version), base, schema.name);
        return Err(decode_err(error, &Path::new(FramePart::Body, schema.body)));
    }
    let flexible = schema.is_flexible(version);
    let mut w = Walk {
        visitor,
        mode: Mode { version, flexible, tagged: flexible },
        path: Path::new(FramePart::Body, schema.body),
    };
    let result = w.strukt(&mut r, schema.body);
    w.visitor.finish(r.offset());
    result.map(|()| r.offset())
}

/// Walks a request header at the start of `frame` (the bytes after the size prefix):
/// the visitor sees the fields of [`REQUEST_HEADER`] (ClientId with an int16 length, as
/// in every header version) and, in header version 2, its tagged fields. Returns what
/// the body needs: its API, version and start.
pub fn walk_request_header<'a, V: Visitor<'a>>(
    frame: &'a [u8],
    base: usize,
    visitor: &mut V,
) -> Result<RequestHeaderInfo, WalkError> {
    let mut r = Reader::with_base(frame, base);
    let mut w = Walk {
        visitor,
        mode: Mode { version: 0, flexible: false, tagged: false },
        path: Path::new(FramePart::Header, &REQUEST_HEADER),
    };
    let result = request_header(&mut w, &mut r, base);
    w.visitor.finish(r.offset());
    result
}

fn request_header<'a, V: Visitor<'a>>(
    w: &mut Walk<'_, V>,
    r: &mut Reader<'a>,
    base: usize,
) -> Result<RequestHeaderInfo, WalkError> {
    let mut values = [0i32; 3];
    for (i, f) in REQUEST_HEADER.fields.iter().take(3).enumerate() {
        w.path.push(i);
        let start = r.offset();
        let v = match f.ty {
            FieldType::Int16 => r.i16(f.name).map(|v| (i32::from(v), Scalar::Int16(v))),
            _ => r.i32(f.name).map(|v| (v, Scalar::Int32(v))),
        }
        .map_err(|e| w.err(e))?;
        values[i] = v.0;
        let at = Walk::<V>::field(&w.path, f, &f.ty, None, start, r.offset(), w.mode, None);
        w.visitor.value(&at, v.1);
        w.path.pop();
    }
    let key = values[0] as i16;
    let version = values[1] as i16;
    let Some(api_key) = ApiKey::from_i16(key) else {
        return Err(WalkError::UnknownApiKey { key, offset: base });
    };
    if !api_key.request_versions().contains(version) {
        return Err(WalkError::UnsupportedVersion { key: api_key, version, offset: base + 2 });
    }
    let header_version = api_key.request_header_version(version);
    let client = &REQUEST_HEADER.fields[3];
    w.path.push(3);
    w.value(r, client, &client.ty, None, None)?;
    w.path.pop();
    if header_version >= 2 {
        w.tagged_section(r, None)?;
    }
    Ok(RequestHeaderInfo { api_key, api_version: version, header_version, end: r.offset() - base })
}

/// Walks a response header (header version 0 or 1, as
/// [`ApiKey::response_header_version`] says) at the start of `frame`; returns where it
/// ends.
pub fn walk_response_header<'a, V: Visitor<'a>>(
    frame: &'a [u8],
    header_version: i16,
    base: usize,
    visitor: &mut V,
) -> Result<usize, WalkError> {
    let mut r = Reader::with_base(frame, base);
    let tagged = header_version >= 1;
    let mut w = Walk {
        visitor,
        mode: Mode { version: 0, flexible: false, tagged },
        path: Path::new(FramePart::Header, &RESPONSE_HEADER),
    };
    let result = w.strukt(&mut r, &RESPONSE_HEADER);
    w.visitor.finish(r.offset());
    result.map(|()| r.offset() - base)
}
