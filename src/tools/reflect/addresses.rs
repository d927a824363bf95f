//! Broker addresses in any message: every struct with a `Host` string followed by a
//! `Port` int32 (Metadata's brokers, FindCoordinator's coordinators, DescribeCluster's
//! brokers, the `NodeEndpoints` that Produce and Fetch responses carry in tagged fields,
//! and every API that gains one), found and rewritten from the schema tables, with no
//! code per API.
//!
//! [`scan`] walks a body with the schema walker (no copy of the body) and returns its
//! addresses and the error codes it carries; [`rewrite`] walks it the same way and splices
//! the addresses a mapping function returns into one copy of the body, with no value tree
//! (the header and everything else of the frame are the caller's).
//!
//! Addresses are numbered in wire order: the inline fields of each struct in schema
//! order, then its known tagged fields in tag order, depth first. [`scan`] and
//! [`rewrite`] number them the same way.

use super::value::ValueError;
use super::walk::{self, Field, Scalar, TaggedField, Visitor, WalkError};
use super::{MessageSchema, RewriteError};
use crate::codec::error::EncodeError;
use crate::codec::splice;
use crate::codec::wire::MAX_STRING_LEN;
use alloc::string::String;
use alloc::vec::Vec;

/// What [`scan`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scan {
    /// Every distinct non-zero `int16` field whose name ends in `ErrorCode` (inline fields
    /// of structs, not array elements), in wire order, at most [`MAX_ERRORS`].
    pub errors: Vec<i16>,
    /// Every `(host, port)`, in wire order.
    pub addresses: Vec<(String, i32)>,
    /// Where the body ends by its schema (bytes after it are not read).
    pub end: usize,
}

/// Distinct error codes [`scan`] keeps.
pub const MAX_ERRORS: usize = 8;

#[derive(Default)]
struct Finder {
    found: Scan,
    /// Per open struct: the index in `found.addresses` of its Host, waiting for its Port.
    pending: Vec<Option<usize>>,
}

fn inline_field(field: &Field<'_>) -> bool {
    field.index.is_none() && field.tag.is_none()
}

impl<'a> Visitor<'a> for Finder {
    fn value(&mut self, field: &Field<'_>, value: Scalar<'a>) {
        if !inline_field(field) {
            return;
        }
        let name = field.schema.name;
        match value {
            Scalar::String(host) if name == "Host" => {
                self.found.addresses.push((host.into(), -1));
                if let Some(slot) = self.pending.last_mut() {
                    *slot = Some(self.found.addresses.len() - 1);
                }
            }
            Scalar::Int32(port) if name == "Port" => {
                if let Some(i) = self.pending.last_mut().and_then(Option::take)
                    && let Some(a) = self.found.addresses.get_mut(i)
                {
                    a.1 = port;
                }
            }
            Scalar::Int16(code) if name.ends_with("ErrorCode") => {
                let errors = &mut self.found.errors;
                if code != 0 && !errors.contains(&code) && errors.len() < MAX_ERRORS {
                    errors.push(code);
                }
            }
            _ => {}
        }
    }

    fn enter_struct(&mut self, _: &Field<'_>, _: &'static super::StructSchema) {
        self.pending.push(None);
    }

    fn leave_struct(&mut self, _: &Field<'_>, _: &'static super::StructSchema) {
        self.pending.pop();
    }
}

/// Scans a body of `schema` at `version` (which may be followed by other bytes) for its
/// addresses and error codes.
pub fn scan(schema: &MessageSchema, version: i16, body: &[u8]) -> Result<Scan, WalkError> {
    let mut f = Finder { found: Scan::default(), pending: alloc::vec![None] };
    let end = walk::walk_body_prefix(schema, version, body, 0, &mut f)?;
    f.found.end = end;
    Ok(f.found)
}

/// The addresses of a whole body of `schema` at `version`, in wire order.
pub fn find(schema: &MessageSchema, version: i16, body: &[u8]) -> Result<Vec<(String, i32)>, WalkError> {
    let mut f = Finder { found: Scan::default(), pending: alloc::vec![None] };
    walk::walk_body(schema, version, body, 0, &mut f)?;
    Ok(f.found.addresses)
}

/// Rewrites the addresses of a whole body of `schema` at `version`: `map(index, host,
/// port)` returns the address to write instead, or `None` to keep it. Returns the body with
/// each changed host and port spliced in (one copy; the hosts' length prefixes and the
/// sizes of the tagged fields around them adjusted, every other byte as it came), or
/// `None` when `map` changed nothing. No value tree is built.
pub fn rewrite(
    schema: &MessageSchema,
    version: i16,
    body: &[u8],
    mut map: impl FnMut(usize, &str, i32) -> Option<(String, i32)>,
) -> Result<Option<Vec<u8>>, RewriteError> {
    let mut s = Splicer {
        next: 0,
        map: &mut map,
        pending: alloc::vec![None],
        tagged: Vec::new(),
        edits: Vec::new(),
        error: None,
    };
    walk::walk_body(schema, version, body, 0, &mut s).map_err(RewriteError::Walk)?;
    // The body's own Host, without a Port.
    if let Some(Some(host)) = s.pending.pop()
        && let Some((new, _)) = (s.map)(host.index, host.text, -1)
    {
        s.host(&host, &new);
    }
    if let Some(e) = s.error {
        return Err(RewriteError::Encode(ValueError::Encode(e)));
    }
    // A Host is edited when its struct ends, after what the struct holds. The walk has
    // checked every tagged field's size, so only a size past `u32` can fail.
    let failed = |_| RewriteError::Encode(ValueError::Encode(EncodeError::TooLong { field: "tagged field" }));
    s.edits.sort_by_key(|e| e.at);
    let mut plan = splice::Plan::new(body);
    for e in &s.edits {
        plan.edit((e.at, e.end), e.bytes.len(), &e.tagged).map_err(failed)?;
    }
    let Some(mut writer) = plan.finish().map_err(failed)? else { return Ok(None) };
    let mut out = Vec::with_capacity(writer.len());
    for e in &s.edits {
        writer.replace(&mut out, (e.at, e.end));
        out.extend_from_slice(&e.bytes);
    }
    writer.finish(&mut out).map_err(failed)?;
    Ok(Some(out))
}

/// A Host seen, waiting for its struct's Port.
struct Host<'a> {
    index: usize,
    at: usize,
    end: usize,
    flexible: bool,
    text: &'a str,
}

/// Bytes `at..end` of the body replaced by `bytes`, inside the known tagged fields whose
/// size varints start at `tagged` (outermost first).
struct Edit {
    at: usize,
    end: usize,
    bytes: Vec<u8>,
    tagged: Vec<usize>,
}

struct Splicer<'a, 'm, M> {
    next: usize,
    map: &'m mut M,
    /// Per open struct: its Host, waiting for its Port.
    pending: Vec<Option<Host<'a>>>,
    /// Where the size varints of the known tagged fields open around the walk start.
    tagged: Vec<usize>,
    edits: Vec<Edit>,
    error: Option<EncodeError>,
}

impl<M: FnMut(usize, &str, i32) -> Option<(String, i32)>> Splicer<'_, '_, M> {
    /// Replaces `at..end` with `bytes` (a Host is edited when its struct ends, inside the
    /// same tagged fields as when it was seen).
    fn edit(&mut self, at: usize, end: usize, bytes: Vec<u8>) {
        self.edits.push(Edit { at, end, bytes, tagged: self.tagged.clone() });
    }

    fn host(&mut self, host: &Host<'_>, new: &str) {
        if new == host.text {
            return;
        }
        if new.len() > MAX_STRING_LEN {
            self.error.get_or_insert(EncodeError::StringTooLong { field: "Host", len: new.len() });
            return;
        }
        let mut bytes = Vec::with_capacity(new.len() + 3);
        splice::push_str(&mut bytes, host.flexible, new);
        self.edit(host.at, host.end, bytes);
    }
}

impl<'a, M: FnMut(usize, &str, i32) -> Option<(String, i32)>> Visitor<'a> for Splicer<'a, '_, M> {
    fn value(&mut self, field: &Field<'_>, value: Scalar<'a>) {
        if !inline_field(field) {
            return;
        }
        match (field.schema.name, value) {
            ("Host", Scalar::String(text)) => {
                let host = Host {
                    index: self.next,
                    at: field.offset,
                    end: field.end,
                    flexible: field.flexible,
                    text,
                };
                self.next += 1;
                if let Some(slot) = self.pending.last_mut() {
                    *slot = Some(host);
                }
            }
            ("Port", Scalar::Int32(port)) => {
                let Some(host) = self.pending.last_mut().and_then(Option::take) else { return };
                if let Some((new_host, new_port)) = (self.map)(host.index, host.text, port) {
                    self.host(&host, &new_host);
                    if new_port != port {
                        self.edit(field.offset, field.end, new_port.to_be_bytes().to_vec());
                    }
                }
            }
            _ => {}
        }
    }

    fn enter_struct(&mut self, _: &Field<'_>, _: &'static super::StructSchema) {
        self.pending.push(None);
    }

    fn leave_struct(&mut self, _: &Field<'_>, _: &'static super::StructSchema) {
        // A Host without a Port: only the host can change.
        if let Some(Some(host)) = self.pending.pop()
            && let Some((new, _)) = (self.map)(host.index, host.text, -1)
        {
            self.host(&host, &new);
        }
    }

    fn tagged_field(&mut self, field: &TaggedField) {
        self.tagged.push(field.size_offset);
    }

    fn leave_tagged_field(&mut self, _: &TaggedField, _: usize) {
        self.tagged.pop();
    }
}
