//! A frame explained: its object tree, the way the protocol pages draw it. Every field
//! of the size prefix, the header and the body becomes a [`Node`] with its name, type,
//! value, `[offset, size]`, a short description and the part of the frame it is in; record
//! batches in `records` fields get a node for every batch header field and every record
//! ([`annotate_records`]). The same walk builds the header's and body's
//! [`Value`]s. [`render_tree`] prints the tree in aligned columns,
//! [`render_hex`] an annotated hex dump, and [`record_lines`] one line per record.
//!
//! This is what `kwire decode` prints, for any program that must show a frame to a person:
//! a broker logging a request it rejected, a test explaining a mismatch.
//!
//! The tree comes from the schema walker ([`super::walk`]), which reads with kwire's own
//! wire primitives, so it accepts and rejects the same frames as the typed views. When the
//! input is malformed the walk stops at the first problem ([`Explained::problem`]) and
//! keeps every node read before it.
//!
//! ```
//! use kwire::reflect::explain::{FrameKind, explain_frame, render_tree};
//!
//! // An ApiVersions v3 request from client "c", software "kw" version "1".
//! let frame = [0, 0, 0, 18, 0, 18, 0, 3, 0, 0, 0, 1, 0, 1, b'c', 0, 3, b'k', b'w', 2, b'1', 0];
//! let explained = explain_frame(&frame, FrameKind::Request);
//! assert!(explained.problem.is_none());
//! let tree = render_tree(&explained.root);
//! assert!(tree.lines().any(|l| l.contains("ClientSoftwareName") && l.contains("\"kw\"")));
//! assert_eq!(explained.to_json()["body"]["clientSoftwareName"], "kw");
//!
//! // Cut short: what was read is kept, and the problem says where it stopped.
//! let cut = explain_frame(&frame[..20], FrameKind::Request);
//! let problem = cut.problem.unwrap();
//! assert_eq!((problem.offset, problem.path.as_str()), (20, "body.clientSoftwareVersion"));
//! assert!(render_tree(&cut.root).contains("ClientSoftwareName"));
//! ```

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

mod about;
mod checked;
mod hex;
mod records;
mod render;

pub use about::{About, MAX_DISTINCT, MAX_NAME, Names, Records, SHOWN, about_request, about_response};
pub use checked::{Checked, explain_checked};
pub use hex::parse_hex;
pub use records::{DECOMPRESS_LIMIT, RecordLine, RecordLines, annotate_records, record_lines};
pub use render::{hex_legend, render_hex, render_tree};

use super::json::{json_key, type_name, uuid_string};
use super::walk::{
    self as rwalk, Field, REQUEST_HEADER, RESPONSE_HEADER, Scalar, TaggedField, TaggedFraming, Visitor,
};
use super::{Builder, FieldSchema, FieldType, StructSchema, StructValue, Value};
use crate::ApiKey;
use crate::codec::error::DecodeErrorKind;
use crate::codec::error_code::ErrorCode;

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
    Leaf(Value),
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
    pub(crate) fn new(name: impl Into<String>, ty: impl Into<String>, offset: usize, region: Region) -> Node {
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

    pub(crate) fn value(mut self, value: impl Into<String>) -> Node {
        self.value = value.into();
        self
    }

    pub(crate) fn about(mut self, about: impl Into<String>) -> Node {
        self.about = about.into();
        self
    }

    pub(crate) fn role(mut self, role: Role) -> Node {
        self.role = role;
        self
    }

    fn key(mut self, key: Option<String>) -> Node {
        self.key = key;
        self
    }

    pub(crate) fn end(mut self, end: usize) -> Node {
        self.size = end.saturating_sub(self.offset);
        self
    }
}

/// Why a walk stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Offset from the start of the frame.
    pub offset: usize,
    /// The field, as a JSON path (`body.topics[0].partitions[2].timestamp`).
    pub path: String,
    /// What was wrong.
    pub message: String,
    /// kwire's error kind, when the problem is one kwire's decoders report.
    pub kind: Option<DecodeErrorKind>,
}

impl core::fmt::Display for Problem {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "at byte {} (0x{:04x}), {}: {}", self.offset, self.offset, self.path, self.message)
    }
}

/// Whether the frame is a request or a response, and what a response answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// A request: its header says what it is.
    Request,
    /// A response to a request of this API and version.
    Response(ApiKey, i16),
}

/// The result of walking one frame.
#[derive(Debug)]
pub struct Explained {
    /// The message node: `Frame`, the header and the body are its children.
    pub root: Node,
    /// The API and version, once the header was read.
    pub api: Option<(ApiKey, i16)>,
    /// The first problem, if the frame is malformed.
    pub problem: Option<Problem>,
    /// The header's value (what was read of it), once the header was reached.
    pub header: Option<(StructValue, super::Encoding)>,
    /// The body's value (what was read of it), once the body was reached.
    pub body: Option<(StructValue, super::Encoding)>,
    /// What the frame was read as.
    pub kind: FrameKind,
}

impl Explained {
    /// The body node.
    pub fn body_node(&self) -> Option<&Node> {
        self.root.children.iter().find(|c| c.region == Region::Body)
    }

    /// The frame as Kafka's JSON form (what `kwire encode` reads back):
    /// `{"apiName": ..., "header": ..., "body": ...}`, objects in schema order. `apiName` is
    /// the API's name beside the key (kwire's addition; `kwire encode` checks that the two
    /// agree). A response (which does not say what it answers) starts with `apiKey`,
    /// `apiName` and `apiVersion`. What was read of a malformed frame is there; the rest is
    /// left out.
    pub fn to_json(&self) -> serde_json::Value {
        use super::json::to_json;
        let mut top = serde_json::Map::new();
        match (self.kind, self.api) {
            (FrameKind::Response(..), Some((key, version))) => {
                top.insert("apiKey".into(), key.to_i16().into());
                top.insert("apiName".into(), key.name().into());
                top.insert("apiVersion".into(), version.into());
            }
            (FrameKind::Request, Some((key, _))) => {
                top.insert("apiName".into(), key.name().into());
            }
            _ => {}
        }
        if let Some((value, encoding)) = &self.header {
            top.insert("header".into(), to_json(value, *encoding));
        }
        if let Some((value, encoding)) = &self.body {
            top.insert("body".into(), to_json(value, *encoding));
        }
        serde_json::Value::Object(top)
    }
}

/// Explains one frame: `frame` starts at its size prefix and ends where the prefix says (or
/// where the input ends, if it is shorter).
pub fn explain_frame(frame: &[u8], kind: FrameKind) -> Explained {
    let mut root = Node::new("Request", "message", 0, Region::Frame)
        .about("the whole frame: size prefix, header and body");
    let mut walked = Explained {
        root: Node::new("", "", 0, Region::Frame),
        api: None,
        problem: None,
        header: None,
        body: None,
        kind,
    };
    let result = frame_walk(frame, kind, &mut root, &mut walked);
    root.size = frame.len();
    walked.root = root;
    walked.problem = result.err();
    walked
}

fn decode_error(e: &rwalk::WalkError, fallback_path: &str) -> Problem {
    match e {
        rwalk::WalkError::Decode { error, path } => Problem {
            offset: error.offset(),
            path: path.to_string(),
            message: error.kind().to_string(),
            kind: Some(error.kind()),
        },
        other => Problem {
            offset: other.offset(),
            path: fallback_path.into(),
            message: other.to_string(),
            kind: None,
        },
    }
}

fn fail(offset: usize, path: &str, message: String) -> Problem {
    Problem { offset, path: path.into(), message, kind: None }
}

fn frame_walk(frame: &[u8], kind: FrameKind, root: &mut Node, walked: &mut Explained) -> Result<(), Problem> {
    let mut framing =
        Node::new("Frame", "", 0, Region::Frame).about("the size prefix that frames the message");
    let Some(prefix) = frame.first_chunk::<4>() else {
        root.children.push(framing.end(0));
        let kind = DecodeErrorKind::Truncated { needed: 4, available: frame.len() as u32 };
        return Err(Problem {
            offset: 0,
            path: "frame.size".into(),
            message: kind.to_string(),
            kind: Some(kind),
        });
    };
    let size = i32::from_be_bytes(*prefix);
    framing.children.push(
        Node::new("size", "int32", 0, Region::Frame)
            .value(size.to_string())
            .about("number of bytes that follow: header and body")
            .end(4),
    );
    root.children.push(framing.end(4));
    let Ok(declared) = usize::try_from(size) else {
        let kind = DecodeErrorKind::InvalidLength(size);
        return Err(Problem {
            offset: 0,
            path: "frame.size".into(),
            message: kind.to_string(),
            kind: Some(kind),
        });
    };
    let rest = &frame[4..];
    match kind {
        FrameKind::Request => request(frame, rest, root, walked)?,
        FrameKind::Response(key, version) => {
            walked.api = Some((key, version));
            response(frame, rest, key, version, root, walked)?;
        }
    }
    let available = frame.len() - 4;
    if declared > available {
        return Err(fail(
            frame.len(),
            "frame.size",
            format!("the size prefix says {declared} bytes follow, but the input ends after {available}"),
        ));
    }
    Ok(())
}

fn request(frame: &[u8], rest: &[u8], root: &mut Node, walked: &mut Explained) -> Result<(), Problem> {
    let header = Node::new("RequestHeader", "", 4, Region::Header)
        .about("request header: which API and version, and who asks")
        .role(Role::Object);
    let mut v = Both::new(frame, header, Region::Header, &REQUEST_HEADER);
    let result = rwalk::walk_request_header(rest, 4, &mut v);
    let (mut header, value, end) = v.finish();
    // The header version is known once the key and version are (also if a later field fails).
    if let (Some(Value::Int16(key)), Some(Value::Int16(version))) =
        (value.get("RequestApiKey"), value.get("RequestApiVersion"))
        && let Some(key) = ApiKey::from_i16(*key)
        && key.request_versions().contains(*version)
    {
        header.ty = format!("v{}", key.request_header_version(*version));
    }
    walked.header = Some((value, super::Encoding::request_header(2)));
    let info = match result {
        Ok(info) => info,
        Err(e) => {
            root.children.push(header.end(end.unwrap_or(4)));
            return Err(match e {
                rwalk::WalkError::UnknownApiKey { key, offset } => {
                    fail(offset, "header.requestApiKey", format!("API key {key} is not one kwire supports"))
                }
                rwalk::WalkError::UnsupportedVersion { key, version, offset } => {
                    let v = key.request_versions();
                    fail(
                        offset,
                        "header.requestApiVersion",
                        format!(
                            "{} has no request version {version} in kwire (versions {}-{})",
                            key.name(),
                            v.min,
                            v.max
                        ),
                    )
                }
                other => decode_error(&other, "header"),
            });
        }
    };
    let body_at = 4 + info.end;
    root.children.push(header.end(body_at));
    let (key, version) = (info.api_key, info.api_version);
    walked.api = Some((key, version));
    let schema = super::request_schema(key);
    root.name = schema.name.into();
    root.ty = format!("message v{version}");
    body(frame, schema, version, body_at, root, walked)
}

fn response(
    frame: &[u8],
    rest: &[u8],
    key: ApiKey,
    version: i16,
    root: &mut Node,
    walked: &mut Explained,
) -> Result<(), Problem> {
    let schema = super::response_schema(key);
    root.name = schema.name.into();
    root.ty = format!("message v{version}");
    let header_version = key.response_header_version(version);
    let header = Node::new("ResponseHeader", format!("v{header_version}"), 4, Region::Header)
        .about("response header: which request this answers")
        .role(Role::Object);
    let mut v = Both::new(frame, header, Region::Header, &RESPONSE_HEADER);
    let result = rwalk::walk_response_header(rest, header_version, 4, &mut v);
    let (header, value, end) = v.finish();
    walked.header = Some((value, super::Encoding::response_header(header_version)));
    let body_at = match result {
        Ok(n) => 4 + n,
        Err(e) => {
            root.children.push(header.end(end.unwrap_or(4)));
            return Err(decode_error(&e, "header"));
        }
    };
    root.children.push(header.end(body_at));
    if !key.response_versions().contains(version) {
        let v = key.response_versions();
        return Err(fail(
            body_at,
            "body",
            format!(
                "{} has no response version {version} in kwire (versions {}-{})",
                key.name(),
                v.min,
                v.max
            ),
        ));
    }
    body(frame, schema, version, body_at, root, walked)
}

fn body(
    frame: &[u8],
    schema: &'static super::MessageSchema,
    version: i16,
    at: usize,
    root: &mut Node,
    walked: &mut Explained,
) -> Result<(), Problem> {
    let node = Node::new(schema.body.name, "struct", at, Region::Body)
        .about(format!("message body, version {version}"))
        .role(Role::Object);
    let mut v = Both::new(frame, node, Region::Body, schema.body);
    let bytes = frame.get(at..).unwrap_or_default();
    let result = rwalk::walk_body(schema, version, bytes, at, &mut v);
    let (node, value, end) = v.finish();
    walked.body = Some((value, super::Encoding::body(schema, version)));
    root.children.push(node.end(end.unwrap_or(at)));
    result.map_err(|e| decode_error(&e, "body"))
}

/// The visitor of a walk: builds the node tree (under `root`) and the value.
struct Both<'f> {
    tree: TreeBuilder<'f>,
    value: Builder,
}

impl<'f> Both<'f> {
    fn new(frame: &'f [u8], root: Node, region: Region, schema: &'static StructSchema) -> Self {
        Both {
            tree: TreeBuilder { frame, stack: vec![root], region, tagged: 0, end: None },
            value: Builder::new(schema),
        }
    }

    /// The root node (its end not set), the value, and the end of the last event.
    fn finish(mut self) -> (Node, StructValue, Option<usize>) {
        while self.tree.stack.len() > 1 {
            let n = self.tree.stack.pop();
            if let (Some(n), Some(top)) = (n, self.tree.stack.last_mut()) {
                top.children.push(n);
            }
        }
        let root = self.tree.stack.pop().unwrap_or_else(|| Node::new("", "", 0, Region::Frame));
        (root, self.value.finish(), self.tree.end)
    }
}

impl<'a> Visitor<'a> for Both<'_> {
    fn value(&mut self, field: &Field<'_>, value: Scalar<'a>) {
        self.tree.value(field, value);
        self.value.value(field, value);
    }
    fn enter_struct(&mut self, field: &Field<'_>, schema: &'static StructSchema) {
        self.tree.enter_struct(field, schema);
        self.value.enter_struct(field, schema);
    }
    fn leave_struct(&mut self, field: &Field<'_>, schema: &'static StructSchema) {
        self.tree.leave_struct(field, schema);
        self.value.leave_struct(field, schema);
    }
    fn enter_array(&mut self, field: &Field<'_>, count: Option<usize>) {
        self.tree.enter_array(field, count);
        self.value.enter_array(field, count);
    }
    fn leave_array(&mut self, field: &Field<'_>, count: Option<usize>) {
        self.tree.leave_array(field, count);
        self.value.leave_array(field, count);
    }
    fn enter_tagged_fields(&mut self, section: &TaggedFraming<'_>) {
        self.tree.enter_tagged_fields(section);
    }
    fn leave_tagged_fields(&mut self, section: &TaggedFraming<'_>, end: usize) {
        self.tree.leave_tagged_fields(section, end);
    }
    fn tagged_field(&mut self, field: &TaggedField) {
        self.tree.tagged_field(field);
    }
    fn leave_tagged_field(&mut self, field: &TaggedField, end: usize) {
        self.tree.leave_tagged_field(field, end);
    }
    fn unknown_tagged_field(&mut self, field: &TaggedField, data: &'a [u8]) {
        self.tree.unknown_tagged_field(field, data);
        self.value.unknown_tagged_field(field, data);
    }
    fn finish(&mut self, end: usize) {
        self.tree.end = Some(end);
    }
}

/// Builds the nodes of a header or body.
struct TreeBuilder<'f> {
    /// The whole frame (offsets count from its first byte).
    frame: &'f [u8],
    /// The open nodes, the header or body at the bottom.
    stack: Vec<Node>,
    /// The region outside tagged fields.
    region: Region,
    /// How many known tagged fields are open.
    tagged: usize,
    /// Where the walk ended (or stopped).
    end: Option<usize>,
}

impl TreeBuilder<'_> {
    fn region(&self) -> Region {
        if self.tagged > 0 { Region::Tagged } else { self.region }
    }

    fn push(&mut self, node: Node) {
        if let Some(top) = self.stack.last_mut() {
            top.children.push(node);
        }
    }

    /// A node for `field`: named after the field, or `Name[i]` for an element.
    fn node(&self, field: &Field<'_>, ty: String) -> Node {
        let f = field.schema;
        let mut node = match field.index {
            Some(i) => {
                let base = match field.ty {
                    FieldType::Struct(s) => s.name.to_string(),
                    other => type_name(other),
                };
                Node::new(format!("{base}[{i}]"), ty, field.offset, self.region())
            }
            None => {
                Node::new(f.name, ty, field.offset, self.region()).about(f.about).key(Some(json_key(f.name)))
            }
        };
        node.element = field.index.is_some();
        node
    }

    fn header_value(&mut self, field: &Field<'_>, value: Scalar<'_>) -> bool {
        if self.region != Region::Header {
            return false;
        }
        let (name, ty, about, shown) = match (field.schema.name, value) {
            ("RequestApiKey", Scalar::Int16(key)) => {
                let shown = match ApiKey::from_i16(key) {
                    Some(k) => format!("{key} ({})", k.name()),
                    None => format!("{key} (not supported)"),
                };
                ("request_api_key", "int16", "which API the request calls", shown)
            }
            ("RequestApiVersion", Scalar::Int16(v)) => (
                "request_api_version",
                "int16",
                "which version of that API the body is encoded in",
                v.to_string(),
            ),
            ("CorrelationId", Scalar::Int32(c)) => {
                let about = if core::ptr::eq(field.schema, &RESPONSE_HEADER.fields[0]) {
                    "the correlation id of the request this answers"
                } else {
                    "chosen by the client; the response carries it back"
                };
                ("correlation_id", "int32", about, c.to_string())
            }
            ("ClientId", Scalar::String(s)) => (
                "client_id",
                "nullable_string",
                "names the client; an int16-length string in every header version",
                format!("{s:?} (int16 len={})", s.len()),
            ),
            ("ClientId", Scalar::Null) => (
                "client_id",
                "nullable_string",
                "names the client; an int16-length string in every header version",
                "null (int16 len=-1)".to_string(),
            ),
            _ => return false,
        };
        let node = Node::new(name, ty, field.offset, Region::Header)
            .value(shown)
            .about(about)
            .role(Role::Leaf(Value::from_scalar(value)))
            .key(Some(json_key(field.schema.name)))
            .end(field.end);
        self.push(node);
        true
    }
}

impl<'a> Visitor<'a> for TreeBuilder<'_> {
    fn value(&mut self, field: &Field<'_>, value: Scalar<'a>) {
        if self.header_value(field, value) {
            return;
        }
        let flex = field.flexible;
        let f = field.schema;
        let number = |v: i64| {
            if f.name == "ErrorCode" && field.index.is_none() { error_code(v) } else { v.to_string() }
        };
        let shown = match value {
            Scalar::Bool(b) => b.to_string(),
            Scalar::Int8(v) => number(v.into()),
            Scalar::Int16(v) => number(v.into()),
            Scalar::Int32(v) => number(v.into()),
            Scalar::Int64(v) => number(v),
            Scalar::Uint16(v) => number(v.into()),
            Scalar::Uint32(v) => number(v.into()),
            Scalar::Float64(v) => v.to_string(),
            Scalar::Uuid(u) => uuid_string(&u),
            Scalar::String(s) => format!("{s:?} ({})", prefix_note(Some(s.len()), flex, "int16")),
            Scalar::Bytes(b) | Scalar::Records(b) => {
                format!("{} ({})", bytes_preview(b), prefix_note(Some(b.len()), flex, "int32"))
            }
            Scalar::Null => match field.ty {
                FieldType::String => format!("null ({})", prefix_note(None, flex, "int16")),
                FieldType::Struct(_) => {
                    let marker = self.frame.get(field.offset).map_or(-1, |b| *b as i8);
                    format!("null (marker {marker})")
                }
                _ => format!("null ({})", prefix_note(None, flex, "int32")),
            },
        };
        let node = self
            .node(field, type_name(field.ty))
            .value(shown)
            .role(Role::Leaf(Value::from_scalar(value)))
            .end(field.end);
        self.push(node);
    }

    fn enter_struct(&mut self, field: &Field<'_>, schema: &'static StructSchema) {
        let node = self.node(field, schema.name.to_string()).value("struct").role(Role::Object);
        self.stack.push(node);
    }

    fn leave_struct(&mut self, field: &Field<'_>, _: &'static StructSchema) {
        if let Some(node) = self.stack.pop() {
            self.push(node.end(field.end));
        }
    }

    fn enter_array(&mut self, field: &Field<'_>, count: Option<usize>) {
        let flex = field.flexible;
        let value = match count {
            None => "null".to_string(),
            Some(1) => "1 element".to_string(),
            Some(n) => format!("{n} elements"),
        };
        let mut node =
            self.node(field, type_name(field.ty)).value(value).role(Role::Array { null: count.is_none() });
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
            Node::new("length", if flex { "uvarint" } else { "int32" }, field.offset, self.region())
                .value(length)
                .about(about)
                .end(field.end),
        );
        self.stack.push(node);
    }

    fn leave_array(&mut self, field: &Field<'_>, _: Option<usize>) {
        if let Some(node) = self.stack.pop() {
            self.push(node.end(field.end));
        }
    }

    fn enter_tagged_fields(&mut self, section: &TaggedFraming<'_>) {
        let about = if self.region == Region::Header {
            "number of tagged fields in the header"
        } else {
            "number of tagged fields in this struct"
        };
        let about = if section.count == 0 { about.to_string() } else { format!("{about}, then the fields") };
        let node = Node::new("tagged_fields", "uvarint", section.offset, Region::Tagged)
            .value(section.count.to_string())
            .about(about)
            .role(Role::Tagged);
        self.stack.push(node);
    }

    fn leave_tagged_fields(&mut self, _: &TaggedFraming<'_>, end: usize) {
        if let Some(node) = self.stack.pop() {
            self.push(node.end(end));
        }
    }

    fn tagged_field(&mut self, _: &TaggedField) {
        self.tagged += 1;
        // Collects the value's node.
        self.stack.push(Node::new("", "", 0, Region::Tagged));
    }

    fn leave_tagged_field(&mut self, t: &TaggedField, end: usize) {
        self.tagged = self.tagged.saturating_sub(1);
        let Some(mut collector) = self.stack.pop() else { return };
        if let (Some(inner), Some(f)) = (collector.children.pop(), t.known) {
            let entry = tagged_entry(inner, f, t.tag, head(t), t.offset, end);
            self.push(entry);
        }
    }

    fn unknown_tagged_field(&mut self, t: &TaggedField, data: &'a [u8]) {
        let end = t.value_offset + data.len();
        let mut node = Node::new(format!("tag {}", t.tag), "raw", t.offset, Region::Tagged)
            .value(bytes_preview(data))
            .about("a tagged field this schema does not know, kept as raw bytes")
            .role(Role::Unknown { tag: t.tag, data: data.to_vec() })
            .end(end);
        node.children = head(t);
        node.children.push(
            Node::new("data", "bytes", t.value_offset, Region::Tagged)
                .value(bytes_preview(data))
                .about("the field's raw value")
                .end(end),
        );
        self.push(node);
    }
}

/// The tag and size nodes of a tagged field.
fn head(t: &TaggedField) -> Vec<Node> {
    vec![
        Node::new("tag", "uvarint", t.offset, Region::Tagged)
            .value(t.tag.to_string())
            .about("the field's tag")
            .end(t.size_offset),
        Node::new("size", "uvarint", t.size_offset, Region::Tagged)
            .value(t.size.to_string())
            .about("bytes of the field's value")
            .end(t.value_offset),
    ]
}

/// Wraps the node of a decoded known tagged field into its entry: the entry spans the tag
/// and size as well, which become its first children.
fn tagged_entry(
    inner: Node,
    f: &'static FieldSchema,
    tag: u32,
    head: Vec<Node>,
    start: usize,
    end: usize,
) -> Node {
    let json_default = match &inner.role {
        Role::Leaf(v) => v.is_default_for(f),
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
    match i16::try_from(code).ok().filter(|c| *c != 0).and_then(ErrorCode::from_i16) {
        Some(e) => format!("{code} ({})", e.name()),
        None => code.to_string(),
    }
}

/// A short form of a byte string: its length and up to 16 bytes in hex.
pub(crate) fn bytes_preview(b: &[u8]) -> String {
    let shown: String = b.iter().take(16).map(|x| format!("{x:02x}")).collect();
    let more = if b.len() > 16 { "..." } else { "" };
    match b.len() {
        0 => "0 bytes".into(),
        1 => format!("1 byte: {shown}"),
        n => format!("{n} bytes: {shown}{more}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problem_display() {
        let e = Problem { offset: 19, path: "body.x".into(), message: "bad".into(), kind: None };
        assert_eq!(e.to_string(), "at byte 19 (0x0013), body.x: bad");
    }
}
