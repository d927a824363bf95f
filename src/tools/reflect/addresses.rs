//! Broker addresses in any message: every struct with a `Host` string followed by a
//! `Port` int32 (Metadata's brokers, FindCoordinator's coordinators, DescribeCluster's
//! brokers, the `NodeEndpoints` that Produce and Fetch responses carry in tagged fields,
//! and every API that gains one), found and rewritten from the schema tables, with no
//! code per API.
//!
//! [`scan`] walks a body with the schema walker (no copy of the body) and returns its
//! addresses and the error codes it carries; [`rewrite`] decodes the body into a
//! [`StructValue`], replaces the addresses a mapping function returns, and encodes that
//! body again (the header and everything else of the frame are the caller's).
//!
//! Addresses are numbered in wire order: the inline fields of each struct in schema
//! order, then its known tagged fields in tag order, depth first. [`scan`] and
//! [`rewrite`] number them the same way.

use super::value::{Encoding, StructValue, Value};
use super::walk::{self, Field, Scalar, Visitor, WalkError};
use super::{MessageSchema, RewriteError};
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
/// port)` returns the address to write instead, or `None` to keep it. Returns the body
/// encoded again (byte for byte the input where nothing changed, for bodies in Kafka's
/// canonical encoding), or `None` when `map` changed nothing.
pub fn rewrite(
    schema: &MessageSchema,
    version: i16,
    body: &[u8],
    mut map: impl FnMut(usize, &str, i32) -> Option<(String, i32)>,
) -> Result<Option<Vec<u8>>, RewriteError> {
    let mut value = StructValue::decode_body(schema, version, body).map_err(RewriteError::Walk)?;
    let mut r = Rewriter { version, next: 0, changed: false, map: &mut map };
    r.strukt(&mut value);
    if !r.changed {
        return Ok(None);
    }
    value.to_bytes(Encoding::body(schema, version)).map(Some).map_err(RewriteError::Encode)
}

struct Rewriter<'m, M> {
    version: i16,
    next: usize,
    changed: bool,
    map: &'m mut M,
}

impl<M: FnMut(usize, &str, i32) -> Option<(String, i32)>> Rewriter<'_, M> {
    fn strukt(&mut self, s: &mut StructValue) {
        let version = self.version;
        let schema = s.schema;
        // The slot of this struct's Host, waiting for its Port.
        let mut host: Option<(usize, usize)> = None;
        for (i, f) in schema.fields.iter().enumerate() {
            if !f.is_inline(version) {
                continue;
            }
            match (f.name, s.fields.get(i).and_then(Option::as_ref)) {
                ("Host", Some(Value::String(_))) => {
                    host = Some((i, self.next));
                    self.next += 1;
                }
                ("Port", Some(Value::Int32(_))) => {
                    if let Some((h, index)) = host.take() {
                        self.address(s, h, i, index);
                    }
                }
                _ => {
                    if let Some(Some(v)) = s.fields.get_mut(i) {
                        self.value(v);
                    }
                }
            }
        }
        if let Some((h, index)) = host {
            // A Host without a Port: only the host can change.
            if let Some(Some(Value::String(old))) = s.fields.get(h)
                && let Some((new, _)) = (self.map)(index, old, -1)
            {
                s.fields[h] = Some(Value::String(new));
                self.changed = true;
            }
        }
        for i in schema.tagged_in_order(version) {
            if let Some(Some(v)) = s.fields.get_mut(i) {
                self.value(v);
            }
        }
    }

    fn address(&mut self, s: &mut StructValue, h: usize, p: usize, index: usize) {
        let (Some(Some(Value::String(host))), Some(Some(Value::Int32(port)))) =
            (s.fields.get(h), s.fields.get(p))
        else {
            return;
        };
        if let Some((new_host, new_port)) = (self.map)(index, host, *port) {
            if *host != new_host || *port != new_port {
                self.changed = true;
            }
            s.fields[h] = Some(Value::String(new_host));
            s.fields[p] = Some(Value::Int32(new_port));
        }
    }

    fn value(&mut self, v: &mut Value) {
        match v {
            Value::Struct(s) => self.strukt(s),
            Value::Array(items) => items.iter_mut().for_each(|i| self.value(i)),
            _ => {}
        }
    }
}
