//! The walker's visitors that build the tree: [`Both`] (the nodes and the value together) and
//! `TreeBuilder` (a node for every field, with its value text and description).

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use super::{Node, Region, Role};
use crate::ApiKey;
use crate::codec::error_code::ErrorCode;
use crate::tools::reflect::json::{json_key, type_name, uuid_string};
use crate::tools::reflect::walk::{Field, RESPONSE_HEADER, Scalar, TaggedField, TaggedFraming, Visitor};
use crate::tools::reflect::{Builder, FieldSchema, FieldType, StructSchema, StructValue, Value};

/// The visitor of a walk: builds the node tree (under `root`) and the value.
pub(super) struct Both<'f> {
    tree: TreeBuilder<'f>,
    value: Builder,
}

impl<'f> Both<'f> {
    pub(super) fn new(frame: &'f [u8], root: Node, region: Region, schema: &'static StructSchema) -> Self {
        Both {
            tree: TreeBuilder { frame, stack: vec![root], region, tagged: 0, end: None },
            value: Builder::new(schema),
        }
    }

    /// The root node (its end not set), the value, and the end of the last event.
    pub(super) fn finish(mut self) -> (Node, StructValue, Option<usize>) {
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
