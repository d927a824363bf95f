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

use alloc::string::String;
use alloc::vec::Vec;

mod about;
mod checked;
mod frame;
mod hex;
mod record_lines;
mod records;
mod render;
mod shown;
pub(crate) mod summary;
mod tree;

pub use about::{About, MAX_DISTINCT, MAX_NAME, Names, Records, SHOWN, about_request, about_response};
pub use checked::{Checked, explain_checked};
pub use frame::explain_frame;
pub use hex::{parse_hex, parse_input, split_frames};
pub use record_lines::{Assigned, RecordLine, RecordLines, produced_lines, record_lines};
pub use records::{DECOMPRESS_LIMIT, annotate_records};
pub use render::{hex_legend, render_hex, render_tree};
pub use shown::{Shown, explain_shown};
pub use summary::{api_name, frame_line};
pub(crate) use tree::bytes_preview;

use super::{StructValue, Value};
use crate::ApiKey;
use crate::codec::error::DecodeErrorKind;

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

#[cfg(test)]
mod tests {
    use alloc::string::ToString;

    use super::*;

    #[test]
    fn problem_display() {
        let e = Problem { offset: 19, path: "body.x".into(), message: "bad".into(), kind: None };
        assert_eq!(e.to_string(), "at byte 19 (0x0013), body.x: bad");
    }
}
