//! A schema-driven pass over a message body: collects the error codes of a response and
//! finds, and rewrites, the broker addresses it carries (every struct with a `Host` string
//! followed by a `Port` int32: Metadata's brokers, FindCoordinator's coordinators,
//! DescribeCluster's brokers, the `NodeEndpoints` that Produce and Fetch responses carry in
//! tagged fields, ...).
//!
//! It reads the schema tables of `kwire::reflect` (one per API and direction), not the
//! typed views, so an API lights up here as soon as kwire has its schema: no code per
//! API. It never allocates while scanning; rewriting writes a new body.

use kwire::reflect::{FieldType, StructSchema};

/// A problem found while scanning (the typed decoder reports the same frames better).
pub type ScanError = String;

/// What a scan found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Found {
    /// Every non-zero int16 field whose name ends in `ErrorCode`, in wire order, at most
    /// [`MAX_ERRORS`] distinct ones.
    pub errors: Vec<i16>,
    /// Every `(Host, Port)` pair, in wire order.
    pub addresses: Vec<(String, i32)>,
    /// Where the body ended by the schema: the body's length, unless bytes follow.
    pub end: usize,
}

/// Distinct error codes kept per frame.
pub const MAX_ERRORS: usize = 8;

struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], ScanError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(format!(
                "{what}: {n} bytes needed at offset {}, {} left",
                self.pos,
                self.bytes.len() - self.pos
            ));
        };
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn uvarint(&mut self, what: &str) -> Result<u32, ScanError> {
        let mut value: u32 = 0;
        for i in 0..5 {
            let b = self.take(1, what)?[0];
            value |= u32::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(format!("{what}: varint longer than 5 bytes at offset {}", self.pos))
    }

    fn i16(&mut self, what: &str) -> Result<i16, ScanError> {
        let b = self.take(2, what)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    fn i32(&mut self, what: &str) -> Result<i32, ScanError> {
        let b = self.take(4, what)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A length prefix: compact (uvarint N+1, 0 = null) or classic (int16 or int32, -1 =
    /// null). `None` for null.
    fn length(&mut self, compact: bool, wide: bool, what: &str) -> Result<Option<usize>, ScanError> {
        if compact {
            let n = self.uvarint(what)?;
            return Ok(n.checked_sub(1).map(|n| n as usize));
        }
        let n = if wide { self.i32(what)? } else { i32::from(self.i16(what)?) };
        match n {
            -1 => Ok(None),
            n if n < 0 => Err(format!("{what}: negative length {n}")),
            n => Ok(Some(n as usize)),
        }
    }
}

/// The host and port to write in place of an address, by its index in
/// [`Found::addresses`]; `None` keeps it.
pub type Replacements<'r> = &'r [Option<(String, i32)>];

struct Pass<'s, 'r> {
    version: i16,
    flexible: bool,
    found: &'s mut Found,
    /// Set for the rewriting pass.
    replace: Option<Replacements<'r>>,
    /// Index of the next address (rewriting pass).
    next_address: usize,
}

fn put_uvarint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

impl Pass<'_, '_> {
    fn structure(
        &mut self,
        s: &StructSchema,
        r: &mut Cursor<'_>,
        mut out: Option<&mut Vec<u8>>,
    ) -> Result<(), ScanError> {
        // Index of this struct's Host in `found.addresses`, waiting for its Port.
        let mut host_index: Option<usize> = None;
        let version = self.version;
        for f in s.fields.iter().filter(|f| f.is_inline(version)) {
            let start = r.pos;
            if f.name == "Host" && matches!(f.ty, FieldType::String) {
                let len = r.length(self.flexible, false, f.name)?;
                let host = r.take(len.unwrap_or(0), f.name)?;
                match &self.replace {
                    None => {
                        let host = String::from_utf8_lossy(host).into_owned();
                        self.found.addresses.push((host, -1));
                        host_index = Some(self.found.addresses.len() - 1);
                    }
                    Some(rep) => {
                        let index = self.next_address;
                        self.next_address += 1;
                        host_index = Some(index);
                        if let Some(out) = out.as_deref_mut() {
                            match rep.get(index).and_then(|r| r.as_ref()) {
                                Some((new_host, _)) => {
                                    if self.flexible {
                                        put_uvarint(out, new_host.len() as u32 + 1);
                                    } else {
                                        let n = i16::try_from(new_host.len()).map_err(|_| "host too long")?;
                                        out.extend_from_slice(&n.to_be_bytes());
                                    }
                                    out.extend_from_slice(new_host.as_bytes());
                                }
                                None => out.extend_from_slice(&r.bytes[start..r.pos]),
                            }
                        }
                    }
                }
                continue;
            }
            if f.name == "Port" && matches!(f.ty, FieldType::Int32) {
                let port = r.i32(f.name)?;
                if let Some(index) = host_index.take() {
                    match &self.replace {
                        None => self.found.addresses[index].1 = port,
                        Some(rep) => {
                            if let Some(out) = out.as_deref_mut() {
                                let port = rep.get(index).and_then(|r| r.as_ref()).map_or(port, |(_, p)| *p);
                                out.extend_from_slice(&port.to_be_bytes());
                            }
                        }
                    }
                    continue;
                }
                if let Some(out) = out.as_deref_mut() {
                    out.extend_from_slice(&r.bytes[start..r.pos]);
                }
                continue;
            }
            if f.name.ends_with("ErrorCode") && matches!(f.ty, FieldType::Int16) {
                let code = r.i16(f.name)?;
                let errors = &mut self.found.errors;
                if code != 0 && !errors.contains(&code) && errors.len() < MAX_ERRORS {
                    errors.push(code);
                }
                if let Some(out) = out.as_deref_mut() {
                    out.extend_from_slice(&r.bytes[start..r.pos]);
                }
                continue;
            }
            self.value(&f.ty, f.name, r, out.as_deref_mut())?;
        }
        if self.flexible {
            self.tagged(s, r, out)?;
        }
        Ok(())
    }

    fn tagged(
        &mut self,
        s: &StructSchema,
        r: &mut Cursor<'_>,
        mut out: Option<&mut Vec<u8>>,
    ) -> Result<(), ScanError> {
        let count = r.uvarint("tagged fields")?;
        if let Some(out) = out.as_deref_mut() {
            put_uvarint(out, count);
        }
        for _ in 0..count {
            let tag = r.uvarint("tag")?;
            let size = r.uvarint("tagged field size")? as usize;
            let value = r.take(size, "tagged field")?;
            let known = s.fields.iter().find(|f| f.tag == Some(tag) && f.is_tagged(self.version));
            let mut inner = Cursor { bytes: value, pos: 0 };
            match (known, out.as_deref_mut()) {
                (Some(f), Some(out)) => {
                    let mut buf = Vec::with_capacity(size + 16);
                    self.value(&f.ty, f.name, &mut inner, Some(&mut buf))?;
                    put_uvarint(out, tag);
                    put_uvarint(out, buf.len() as u32);
                    out.extend_from_slice(&buf);
                }
                (Some(f), None) => self.value(&f.ty, f.name, &mut inner, None)?,
                (None, Some(out)) => {
                    put_uvarint(out, tag);
                    put_uvarint(out, size as u32);
                    out.extend_from_slice(value);
                }
                (None, None) => {}
            }
        }
        Ok(())
    }

    fn value(
        &mut self,
        ty: &FieldType,
        name: &str,
        r: &mut Cursor<'_>,
        out: Option<&mut Vec<u8>>,
    ) -> Result<(), ScanError> {
        let start = r.pos;
        match ty {
            FieldType::Struct(s) => return self.structure(s, r, out),
            FieldType::Array(elem) => {
                let n = r.length(self.flexible, true, name)?;
                let mut out = out;
                if let Some(out) = out.as_deref_mut() {
                    out.extend_from_slice(&r.bytes[start..r.pos]);
                }
                let n = n.unwrap_or(0);
                // Every element takes a byte at least: a count beyond the bytes left is bad.
                if n > r.bytes.len() - r.pos {
                    return Err(format!("{name}: array of {n} elements runs past the end"));
                }
                for _ in 0..n {
                    self.value(elem, name, r, out.as_deref_mut())?;
                }
                return Ok(());
            }
            FieldType::String => {
                let n = r.length(self.flexible, false, name)?;
                r.take(n.unwrap_or(0), name)?;
            }
            FieldType::Bytes | FieldType::Records => {
                let n = r.length(self.flexible, true, name)?;
                r.take(n.unwrap_or(0), name)?;
            }
            other => {
                let w = other.fixed_width().ok_or_else(|| format!("{name}: unknown type"))?;
                r.take(w, name)?;
            }
        }
        if let Some(out) = out {
            out.extend_from_slice(&r.bytes[start..r.pos]);
        }
        Ok(())
    }
}

/// Scans `body` (a message body at `version`) for error codes and addresses.
pub fn scan(schema: &StructSchema, version: i16, flexible: bool, body: &[u8]) -> Result<Found, ScanError> {
    let mut found = Found::default();
    let mut pass = Pass { version, flexible, found: &mut found, replace: None, next_address: 0 };
    let mut r = Cursor { bytes: body, pos: 0 };
    pass.structure(schema, &mut r, None)?;
    found.end = r.pos;
    Ok(found)
}

/// Writes `body` with the addresses replaced as `replace` says (indexes as in
/// [`Found::addresses`] from [`scan`] of the same body).
pub fn rewrite(
    schema: &StructSchema,
    version: i16,
    flexible: bool,
    body: &[u8],
    replace: Replacements<'_>,
) -> Result<Vec<u8>, ScanError> {
    let mut found = Found::default();
    let mut pass = Pass { version, flexible, found: &mut found, replace: Some(replace), next_address: 0 };
    let mut r = Cursor { bytes: body, pos: 0 };
    let mut out = Vec::with_capacity(body.len() + 64);
    pass.structure(schema, &mut r, Some(&mut out))?;
    if r.pos != body.len() {
        // The schema does not describe these bytes: leave the frame as it is.
        return Err(format!("{} bytes follow the body", body.len() - r.pos));
    }
    Ok(out)
}
