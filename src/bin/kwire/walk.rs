//! A table-driven walker over the reflect schemas: it reads a frame field by field with
//! kwire's [`Reader`] primitives and builds a tree of nodes (name, type, value, offset,
//! size, description, children) from which the tree, JSON and hex outputs are printed.
//!
//! The walker applies the same rules as kwire's typed views (it uses the same primitives
//! for every length, count, varint, null and tagged-field check), so both accept and
//! reject the same frames; `kwire decode` runs both and reports any disagreement. When
//! the input is malformed the walk stops at the first problem and keeps every node read
//! before it, so the outputs can show what decoded.

use kwire::reflect::{self, FieldSchema, FieldType, StructSchema};
use kwire::wire::{self, Reader};
use kwire::{ApiKey, DecodeError, DecodeErrorKind, ErrorCode};

use crate::value::{Scalar, bytes_preview, json_key, type_name};

/// Which part of a frame a byte belongs to, for colouring the hex dump.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Region {
    /// The size prefix.
    Frame,
    /// The request or response header.
    Header,
    /// The body.
    Body,
    /// A tagged-field section, in the header or anywhere in the body.
    Tagged,
}

/// What a node stands for, which decides its JSON form.
#[derive(Clone, Debug, PartialEq)]
pub enum Role {
    /// Wire structure only (the message, the frame, counts, tag headers): no JSON.
    Plain,
    /// A struct, header or body: a JSON object of its keyed children.
    Object,
    /// An array: a JSON array of its element children, or null.
    Array {
        /// Whether the array was null.
        null: bool,
    },
    /// A single value.
    Leaf(Scalar),
    /// A tagged-field section, whose children are the fields in it.
    Tagged,
    /// A tagged field that the schema does not know.
    Unknown {
        /// Its tag.
        tag: u32,
        /// Its raw bytes.
        data: Vec<u8>,
    },
}

/// One line of the object tree.
#[derive(Clone, Debug)]
pub struct Node {
    /// The name: a schema field name, `Name[i]` for elements, or a structural name.
    pub name: String,
    /// The schema type, or a structural description (`message v4`, `v2`).
    pub ty: String,
    /// The value as shown in the tree.
    pub value: String,
    /// Offset from the start of the frame (its size prefix).
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
    /// A short description.
    pub about: String,
    /// The part of the frame it is in.
    pub region: Region,
    /// What it stands for.
    pub role: Role,
    /// Its key in the JSON object of its parent (none for structure and elements).
    pub key: Option<String>,
    /// Whether it is an element of an array.
    pub element: bool,
    /// A known tagged field that holds its default value: Kafka's JSON leaves it out.
    pub json_default: bool,
    /// Its children, in wire order.
    pub children: Vec<Node>,
    /// Its offset counts from the start of a decompressed payload, not from the frame
    /// (records of compressed batches, in the tree).
    pub inner: bool,
}

impl Node {
    pub fn new(name: impl Into<String>, ty: impl Into<String>, offset: usize, region: Region) -> Node {
        Node {
            name: name.into(),
            ty: ty.into(),
            value: String::new(),
            offset,
            size: 0,
            about: String::new(),
            region,
            role: Role::Plain,
            key: None,
            element: false,
            json_default: false,
            children: Vec::new(),
            inner: false,
        }
    }

    pub fn value(mut self, value: impl Into<String>) -> Node {
        self.value = value.into();
        self
    }

    pub fn about(mut self, about: impl Into<String>) -> Node {
        self.about = about.into();
        self
    }

    pub fn role(mut self, role: Role) -> Node {
        self.role = role;
        self
    }

    fn key(mut self, key: Option<String>) -> Node {
        self.key = key;
        self
    }

    pub fn end(mut self, end: usize) -> Node {
        self.size = end.saturating_sub(self.offset);
        self
    }
}

/// Why a walk stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalkError {
    /// Offset from the start of the frame.
    pub offset: usize,
    /// The field, as a JSON path (`body.topics[0].partitions[2].timestamp`).
    pub path: String,
    /// What was wrong.
    pub message: String,
    /// kwire's error kind, when the problem is one kwire's decoders report.
    pub kind: Option<DecodeErrorKind>,
}

impl std::fmt::Display for WalkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "at byte {} (0x{:04x}), {}: {}", self.offset, self.offset, self.path, self.message)
    }
}

/// Whether the frame is a request or a response, and what a response answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A request: its header says what it is.
    Request,
    /// A response to a request of this API and version.
    Response(ApiKey, i16),
}

/// The result of walking one frame.
#[derive(Debug)]
pub struct Walked {
    /// The message node: `Frame`, the header and the body are its children.
    pub root: Node,
    /// The API and version, once the header was read.
    pub api: Option<(ApiKey, i16)>,
    /// The first problem, if the frame is malformed.
    pub error: Option<WalkError>,
}

impl Walked {
    /// The header node.
    pub fn header(&self) -> Option<&Node> {
        self.root.children.iter().find(|c| c.region == Region::Header)
    }

    /// The body node.
    pub fn body(&self) -> Option<&Node> {
        self.root.children.iter().find(|c| c.region == Region::Body)
    }
}

/// Walks one frame: `frame` starts at its size prefix and ends where the prefix says (or
/// where the input ends, if it is shorter).
pub fn walk(frame: &[u8], kind: Kind) -> Walked {
    let mut w = Walker { version: 0, flexible: false, path: String::new() };
    let mut root = Node::new("Request", "message", 0, Region::Frame)
        .about("the whole frame: size prefix, header and body");
    let mut api = None;
    let result = w.frame(frame, kind, &mut root, &mut api);
    root.size = frame.len();
    Walked { root, api, error: result.err() }
}

struct Walker {
    version: i16,
    flexible: bool,
    path: String,
}

type Res = Result<(), WalkError>;

impl Walker {
    fn err(&self, e: DecodeError) -> WalkError {
        WalkError {
            offset: e.offset(),
            path: self.path.clone(),
            message: e.kind().to_string(),
            kind: Some(e.kind()),
        }
    }

    fn fail(&self, offset: usize, message: String) -> WalkError {
        WalkError { offset, path: self.path.clone(), message, kind: None }
    }

    fn enter(&mut self, segment: &str) -> usize {
        let mark = self.path.len();
        if !self.path.is_empty() && !segment.starts_with('[') {
            self.path.push('.');
        }
        self.path.push_str(segment);
        mark
    }

    fn leave(&mut self, mark: usize) {
        self.path.truncate(mark);
    }

    fn frame(&mut self, frame: &[u8], kind: Kind, root: &mut Node, api: &mut Option<(ApiKey, i16)>) -> Res {
        let mut r = Reader::new(frame);
        let mut framing =
            Node::new("Frame", "", 0, Region::Frame).about("the size prefix that frames the message");
        self.path = "frame.size".into();
        let size = r.i32("Frame.size");
        let size = match size {
            Ok(size) => size,
            Err(e) => {
                root.children.push(framing.end(r.offset()));
                return Err(self.err(e));
            }
        };
        framing.children.push(
            Node::new("size", "int32", 0, Region::Frame)
                .value(size.to_string())
                .about("number of bytes that follow: header and body")
                .end(4),
        );
        root.children.push(framing.end(4));
        let Ok(declared) = usize::try_from(size) else {
            let e = DecodeError::new(DecodeErrorKind::InvalidLength(size), 0, "Frame.size");
            return Err(self.err(e));
        };
        let kind_result = match kind {
            Kind::Request => self.request(&mut r, root, api),
            Kind::Response(key, version) => {
                *api = Some((key, version));
                self.response(&mut r, key, version, root)
            }
        };
        kind_result?;
        let available = frame.len() - 4;
        if declared > available {
            self.path = "frame.size".into();
            return Err(self.fail(
                frame.len(),
                format!("the size prefix says {declared} bytes follow, but the input ends after {available}"),
            ));
        }
        Ok(())
    }

    fn request(&mut self, r: &mut Reader<'_>, root: &mut Node, api: &mut Option<(ApiKey, i16)>) -> Res {
        let mut header = Node::new("RequestHeader", "", 4, Region::Header)
            .about("request header: which API and version, and who asks")
            .role(Role::Object);
        let result = self.request_header(r, &mut header, api);
        header = header.end(r.offset());
        root.children.push(header);
        result?;
        let Some((key, version)) = *api else { return Ok(()) };
        let schema = reflect::request_schema(key);
        root.name = schema.name.into();
        root.ty = format!("message v{version}");
        self.body(r, schema.body, version, key.flexible_versions().contains(version), root)
    }

    fn request_header(
        &mut self,
        r: &mut Reader<'_>,
        header: &mut Node,
        api: &mut Option<(ApiKey, i16)>,
    ) -> Res {
        let out = &mut header.children;
        let at = r.offset();
        self.path = "header.requestApiKey".into();
        let key = r.i16("RequestHeader.RequestApiKey").map_err(|e| self.err(e))?;
        let known = ApiKey::from_i16(key);
        let shown = match known {
            Some(k) => format!("{key} ({})", k.name()),
            None => format!("{key} (not supported)"),
        };
        out.push(
            Node::new("request_api_key", "int16", at, Region::Header)
                .value(shown)
                .about("which API the request calls")
                .role(Role::Leaf(Scalar::I16(key)))
                .key(Some("requestApiKey".into()))
                .end(r.offset()),
        );
        let at = r.offset();
        self.path = "header.requestApiVersion".into();
        let version = r.i16("RequestHeader.RequestApiVersion").map_err(|e| self.err(e))?;
        out.push(
            Node::new("request_api_version", "int16", at, Region::Header)
                .value(version.to_string())
                .about("which version of that API the body is encoded in")
                .role(Role::Leaf(Scalar::I16(version)))
                .key(Some("requestApiVersion".into()))
                .end(r.offset()),
        );
        let at = r.offset();
        self.path = "header.correlationId".into();
        let correlation = r.i32("RequestHeader.CorrelationId").map_err(|e| self.err(e))?;
        out.push(
            Node::new("correlation_id", "int32", at, Region::Header)
                .value(correlation.to_string())
                .about("chosen by the client; the response carries it back")
                .role(Role::Leaf(Scalar::I32(correlation)))
                .key(Some("correlationId".into()))
                .end(r.offset()),
        );
        let Some(key) = known else {
            self.path = "header.requestApiKey".into();
            return Err(self.fail(
                4,
                format!(
                    "API key {key} is not one kwire supports ({}); if the frame is a response, say what it \
                     answers with --api-key and --api-version, or --request",
                    supported_list()
                ),
            ));
        };
        if !key.request_versions().contains(version) {
            self.path = "header.requestApiVersion".into();
            let v = key.request_versions();
            return Err(self.fail(
                6,
                format!(
                    "{} has no request version {version} in kwire (versions {}-{})",
                    key.name(),
                    v.min,
                    v.max
                ),
            ));
        }
        let header_version = key.request_header_version(version);
        header.ty = format!("v{header_version}");
        let out = &mut header.children;
        let at = r.offset();
        self.path = "header.clientId".into();
        let bytes = r.nullable_str_bytes(false, "RequestHeader.ClientId").map_err(|e| self.err(e))?;
        let client = match bytes {
            Some(b) => {
                Some(wire::utf8(b, at, "RequestHeader.ClientId").map_err(|e| self.err(e))?.to_string())
            }
            None => None,
        };
        let shown = match &client {
            Some(s) => format!("{s:?} (int16 len={})", s.len()),
            None => "null (int16 len=-1)".into(),
        };
        out.push(
            Node::new("client_id", "nullable_string", at, Region::Header)
                .value(shown)
                .about("names the client; an int16-length string in every header version")
                .role(Role::Leaf(Scalar::Str(client)))
                .key(Some("clientId".into()))
                .end(r.offset()),
        );
        if header_version >= 2 {
            self.path = "header".into();
            self.tagged_section(r, None, "number of tagged fields in the header", out)?;
        }
        *api = Some((key, version));
        Ok(())
    }

    fn response(&mut self, r: &mut Reader<'_>, key: ApiKey, version: i16, root: &mut Node) -> Res {
        let schema = reflect::response_schema(key);
        root.name = schema.name.into();
        root.ty = format!("message v{version}");
        let header_version = key.response_header_version(version);
        let mut header = Node::new("ResponseHeader", format!("v{header_version}"), 4, Region::Header)
            .about("response header: which request this answers")
            .role(Role::Object);
        let result = (|| {
            let at = r.offset();
            self.path = "header.correlationId".into();
            let correlation = r.i32("ResponseHeader.CorrelationId").map_err(|e| self.err(e))?;
            header.children.push(
                Node::new("correlation_id", "int32", at, Region::Header)
                    .value(correlation.to_string())
                    .about("the correlation id of the request this answers")
                    .role(Role::Leaf(Scalar::I32(correlation)))
                    .key(Some("correlationId".into()))
                    .end(r.offset()),
            );
            if header_version >= 1 {
                self.path = "header".into();
                self.tagged_section(r, None, "number of tagged fields in the header", &mut header.children)?;
            }
            Ok(())
        })();
        root.children.push(header.end(r.offset()));
        result?;
        if !key.response_versions().contains(version) {
            self.path = "body".into();
            let v = key.response_versions();
            return Err(self.fail(
                r.offset(),
                format!(
                    "{} has no response version {version} in kwire (versions {}-{})",
                    key.name(),
                    v.min,
                    v.max
                ),
            ));
        }
        self.body(r, schema.body, version, key.flexible_versions().contains(version), root)
    }

    fn body(
        &mut self,
        r: &mut Reader<'_>,
        s: &'static StructSchema,
        version: i16,
        flexible: bool,
        root: &mut Node,
    ) -> Res {
        self.version = version;
        self.flexible = flexible;
        self.path = "body".into();
        let mut body = Node::new(s.name, "struct", r.offset(), Region::Body)
            .about(format!("message body, version {version}"))
            .role(Role::Object);
        let result = self.struct_fields(r, s, Region::Body, &mut body.children);
        root.children.push(body.end(r.offset()));
        result?;
        self.path = "body".into();
        r.finish("body").map_err(|e| self.err(e))
    }

    fn struct_fields(
        &mut self,
        r: &mut Reader<'_>,
        s: &'static StructSchema,
        region: Region,
        out: &mut Vec<Node>,
    ) -> Res {
        for f in s.fields {
            if f.is_inline(self.version) {
                let mark = self.enter(&json_key(f.name));
                let result = self.value(r, f, &f.ty, region, out, None);
                self.leave(mark);
                result?;
            }
        }
        if self.flexible {
            self.tagged_section(r, Some(s), "number of tagged fields in this struct", out)?;
        }
        Ok(())
    }

    /// Reads one value of type `ty`: the field `f` itself, or (with `index`) element
    /// `index` of the array field `f`.
    fn value(
        &mut self,
        r: &mut Reader<'_>,
        f: &'static FieldSchema,
        ty: &'static FieldType,
        region: Region,
        out: &mut Vec<Node>,
        index: Option<usize>,
    ) -> Res {
        let start = r.offset();
        let flex = self.flexible;
        // Elements are never null; fields follow their nullable versions.
        let nullable = index.is_none() && f.is_nullable(self.version);
        let (name, about, key) = match index {
            Some(i) => {
                let base = match ty {
                    FieldType::Struct(s) => s.name.to_string(),
                    other => type_name(other),
                };
                (format!("{base}[{i}]"), String::new(), None)
            }
            None => (f.name.to_string(), f.about.to_string(), Some(json_key(f.name))),
        };
        let field = f.name;
        let leaf = |value: String, scalar: Scalar, end: usize| {
            let mut node = Node::new(name.clone(), type_name(ty), start, region)
                .value(value)
                .about(about.clone())
                .role(Role::Leaf(scalar))
                .key(key.clone())
                .end(end);
            node.element = index.is_some();
            node
        };
        macro_rules! scalar {
            ($read:ident, $variant:ident) => {{
                let v = r.$read(field).map_err(|e| self.err(e))?;
                let shown = if f.name == "ErrorCode" && index.is_none() {
                    error_code(i64::from(v))
                } else {
                    v.to_string()
                };
                out.push(leaf(shown, Scalar::$variant(v), r.offset()));
                Ok(())
            }};
        }
        match ty {
            FieldType::Bool => {
                let v = r.bool(field).map_err(|e| self.err(e))?;
                out.push(leaf(v.to_string(), Scalar::Bool(v), r.offset()));
                Ok(())
            }
            FieldType::Int8 => scalar!(i8, I8),
            FieldType::Int16 => scalar!(i16, I16),
            FieldType::Int32 => scalar!(i32, I32),
            FieldType::Int64 => scalar!(i64, I64),
            FieldType::Uint16 => scalar!(u16, U16),
            FieldType::Uint32 => scalar!(u32, U32),
            FieldType::Float64 => {
                let v = r.f64(field).map_err(|e| self.err(e))?;
                out.push(leaf(v.to_string(), Scalar::F64(v), r.offset()));
                Ok(())
            }
            FieldType::Uuid => {
                let v = r.uuid(field).map_err(|e| self.err(e))?;
                let s = Scalar::Uuid(v.0);
                out.push(leaf(s.display(), s, r.offset()));
                Ok(())
            }
            FieldType::String => {
                let bytes = if nullable {
                    r.nullable_str_bytes(flex, field)
                } else {
                    r.str_bytes(flex, field).map(Some)
                }
                .map_err(|e| self.err(e))?;
                let s = match bytes {
                    Some(b) => Some(wire::utf8(b, start, field).map_err(|e| self.err(e))?.to_string()),
                    None => None,
                };
                let len = s.as_ref().map(String::len);
                let shown =
                    format!("{} ({})", Scalar::Str(s.clone()).display(), prefix_note(len, flex, "int16"));
                out.push(leaf(shown, Scalar::Str(s), r.offset()));
                Ok(())
            }
            FieldType::Bytes | FieldType::Records => {
                let bytes =
                    if nullable { r.nullable_bytes(flex, field) } else { r.bytes(flex, field).map(Some) }
                        .map_err(|e| self.err(e))?;
                let shown = match bytes {
                    Some(b) => {
                        format!("{} ({})", bytes_preview(b), prefix_note(Some(b.len()), flex, "int32"))
                    }
                    None => format!("null ({})", prefix_note(None, flex, "int32")),
                };
                out.push(leaf(shown, Scalar::Bytes(bytes.map(<[u8]>::to_vec)), r.offset()));
                Ok(())
            }
            FieldType::Array(elem) => {
                let count = if nullable {
                    r.array_len(flex, field)
                } else {
                    r.array_len_non_null(flex, field).map(Some)
                }
                .map_err(|e| self.err(e))?;
                let value = match count {
                    None => "null".to_string(),
                    Some(1) => "1 element".to_string(),
                    Some(n) => format!("{n} elements"),
                };
                let mut node = Node::new(name.clone(), type_name(ty), start, region)
                    .value(value)
                    .about(about.clone())
                    .role(Role::Array { null: count.is_none() })
                    .key(key.clone());
                node.element = index.is_some();
                let length = match (count, flex) {
                    (Some(n), true) => format!("{} (compact, n+1)", n + 1),
                    (None, true) => "0 (compact, null)".to_string(),
                    (Some(n), false) => n.to_string(),
                    (None, false) => "-1 (null)".to_string(),
                };
                let about = match count {
                    None => "the array is null",
                    Some(_) if flex => "element count plus one; 0 would mean null",
                    Some(_) => "element count; -1 would mean null",
                };
                node.children.push(
                    Node::new("length", if flex { "uvarint" } else { "int32" }, start, region)
                        .value(length)
                        .about(about)
                        .end(r.offset()),
                );
                let mut result = Ok(());
                for i in 0..count.unwrap_or(0) {
                    let mark = self.enter(&format!("[{i}]"));
                    result = self.value(r, f, elem, region, &mut node.children, Some(i));
                    self.leave(mark);
                    if result.is_err() {
                        break;
                    }
                }
                out.push(node.end(r.offset()));
                result
            }
            FieldType::Struct(s) => {
                if nullable {
                    let marker = r.i8(field).map_err(|e| self.err(e))?;
                    if marker < 0 {
                        out.push(leaf(format!("null (marker {marker})"), Scalar::Null, r.offset()));
                        return Ok(());
                    }
                }
                let mut node = Node::new(name.clone(), s.name, start, region)
                    .value("struct")
                    .about(about.clone())
                    .role(Role::Object)
                    .key(key.clone());
                node.element = index.is_some();
                let result = self.struct_fields(r, s, region, &mut node.children);
                out.push(node.end(r.offset()));
                result
            }
        }
    }

    /// Reads a tagged-field section with the same checks as [`Reader::tagged_fields`],
    /// decoding the fields `s` knows and keeping the others raw.
    fn tagged_section(
        &mut self,
        r: &mut Reader<'_>,
        s: Option<&'static StructSchema>,
        about: &str,
        out: &mut Vec<Node>,
    ) -> Res {
        let start = r.offset();
        let mark = self.path.len();
        self.path.push_str(" (tagged fields)");
        let count = match r.uvarint("tagged_fields") {
            Ok(count) => count,
            Err(e) => {
                let err = self.err(e);
                self.leave(mark);
                return Err(err);
            }
        };
        if u64::from(count) > r.remaining() as u64 {
            let e = DecodeError::new(DecodeErrorKind::ArrayTooLong(count), start, "tagged_fields");
            let err = self.err(e);
            self.leave(mark);
            return Err(err);
        }
        let about = if count == 0 { about.to_string() } else { format!("{about}, then the fields") };
        let mut node = Node::new("tagged_fields", "uvarint", start, Region::Tagged)
            .value(count.to_string())
            .about(about)
            .role(Role::Tagged);
        let result = self.tagged_entries(r, s, count, &mut node.children);
        self.leave(mark);
        out.push(node.end(r.offset()));
        result
    }

    fn tagged_entries(
        &mut self,
        r: &mut Reader<'_>,
        s: Option<&'static StructSchema>,
        count: u32,
        out: &mut Vec<Node>,
    ) -> Res {
        let mut last: Option<u32> = None;
        for _ in 0..count {
            let entry = r.offset();
            let tag = r.uvarint("tagged_fields").map_err(|e| self.err(e))?;
            if last.is_some_and(|prev| tag <= prev) {
                let e = DecodeError::new(DecodeErrorKind::TagOutOfOrder(tag), entry, "tagged_fields");
                return Err(self.err(e));
            }
            last = Some(tag);
            let size_at = r.offset();
            let size = r.uvarint("tagged_fields").map_err(|e| self.err(e))? as usize;
            let value_at = r.offset();
            let mut value = r.sub(size, "tagged_fields").map_err(|e| self.err(e))?;
            let head = vec![
                Node::new("tag", "uvarint", entry, Region::Tagged)
                    .value(tag.to_string())
                    .about("the field's tag")
                    .end(size_at),
                Node::new("size", "uvarint", size_at, Region::Tagged)
                    .value(size.to_string())
                    .about("bytes of the field's value")
                    .end(value_at),
            ];
            let known = s.and_then(|s| s.fields.iter().find(|f| f.tag == Some(tag)));
            match known {
                Some(f) if f.is_tagged(self.version) => {
                    let mark = self.path.rfind(" (tagged fields)").unwrap_or(self.path.len());
                    let saved = self.path.clone();
                    self.path.truncate(mark);
                    self.enter(&json_key(f.name));
                    let mut decoded = Vec::new();
                    let result = self.value(&mut value, f, &f.ty, Region::Tagged, &mut decoded, None);
                    let result = result.and_then(|()| {
                        if value.remaining() != 0 {
                            let kind = DecodeErrorKind::TaggedSizeMismatch {
                                tag,
                                declared: size as u32,
                                actual: value.pos() as u32,
                            };
                            Err(self.err(DecodeError::new(kind, value.offset(), "tagged_fields")))
                        } else {
                            Ok(())
                        }
                    });
                    self.path = saved;
                    if let Some(inner) = decoded.pop() {
                        out.push(tagged_entry(inner, f, tag, head, entry, r.offset()));
                    }
                    result?;
                }
                Some(_) => {
                    let e = DecodeError::new(
                        DecodeErrorKind::TagNotValidForVersion(tag),
                        value_at,
                        "tagged_fields",
                    );
                    return Err(self.err(e));
                }
                None => {
                    let data = value.take(size, "tagged_fields").map_err(|e| self.err(e))?;
                    let mut node = Node::new(format!("tag {tag}"), "raw", entry, Region::Tagged)
                        .value(bytes_preview(data))
                        .about("a tagged field this schema does not know, kept as raw bytes")
                        .role(Role::Unknown { tag, data: data.to_vec() })
                        .end(r.offset());
                    node.children = head;
                    node.children.push(
                        Node::new("data", "bytes", value_at, Region::Tagged)
                            .value(bytes_preview(data))
                            .about("the field's raw value")
                            .end(r.offset()),
                    );
                    out.push(node);
                }
            }
        }
        Ok(())
    }
}

/// Wraps the node of a decoded known tagged field into its entry: the entry spans the tag
/// and size as well, which become its first children.
fn tagged_entry(inner: Node, f: &FieldSchema, tag: u32, head: Vec<Node>, start: usize, end: usize) -> Node {
    let json_default = match &inner.role {
        Role::Leaf(s) => s.is_default(f),
        Role::Array { null } => {
            let null_default = f.default == Some("null");
            if *null { null_default } else { !null_default && inner.children.iter().all(|c| !c.element) }
        }
        _ => false,
    };
    let mut entry = Node::new(inner.name.clone(), inner.ty.clone(), start, Region::Tagged)
        .value(format!("{} (tag {tag})", inner.value))
        .about(inner.about.clone())
        .role(inner.role.clone())
        .key(inner.key.clone())
        .end(end);
    entry.json_default = json_default;
    entry.children = head;
    if inner.children.is_empty() {
        let mut value = inner;
        value.name = "value".into();
        value.key = None;
        value.role = Role::Plain;
        value.about = "the field's value".into();
        entry.children.push(value);
    } else {
        entry.children.extend(inner.children);
    }
    entry
}

/// The length-prefix note of a string or byte array (`compact, len+1=1`, `int16 len=0`).
fn prefix_note(len: Option<usize>, flexible: bool, classic: &str) -> String {
    match (len, flexible) {
        (Some(n), true) => format!("compact, len+1={}", n + 1),
        (None, true) => "compact, len+1=0".into(),
        (Some(n), false) => format!("{classic} len={n}"),
        (None, false) => format!("{classic} len=-1"),
    }
}

/// An error code with Kafka's name for it when it is not 0.
fn error_code(code: i64) -> String {
    match i16::try_from(code).ok().filter(|c| *c != 0).and_then(ErrorCode::from_code) {
        Some(e) => format!("{code} ({})", e.name()),
        None => code.to_string(),
    }
}

/// The supported API keys, for error messages.
pub fn supported_list() -> String {
    let keys: Vec<String> = ApiKey::ALL.iter().map(|k| format!("{} {}", k.key(), k.name())).collect();
    format!("supported: {}", keys.join(", "))
}
