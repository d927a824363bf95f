//! Record batches inside `records` fields (Produce requests, Fetch, ShareFetch and
//! FetchSnapshot responses) in the tree: a node for every batch (or legacy message), its
//! header fields and its records (the records as lines are `record_lines.rs`).
//!
//! Values come from kwire's record views, which check everything; the byte positions of
//! the fields inside a record are found by skipping the varints of a record that the
//! views have already accepted.

use crate::codec::records::legacy::{Entries, Entry, LegacyMessage, LegacyMessages};
use crate::codec::records::{Attributes, Compression, ControlRecordType, Record, RecordBatch, TimestampType};
use crate::codec::wire::varint;

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use super::{Node, Region, Role, bytes_preview};
use crate::tools::reflect::Value;

mod legacy;

use legacy::legacy_node;
pub(super) use legacy::{legacy_codec, legacy_len};

/// The most bytes one compressed batch (or legacy wrapper) may decompress to.
pub const DECOMPRESS_LIMIT: usize = 64 << 20;

/// Values longer than this many characters are cut in the tree.
const SHOWN_CHARS: usize = 48;

/// Where the nodes being built sit: `base` is the position of byte 0 of the bytes being
/// read, in the frame or (`inner`) in a decompressed payload.
#[derive(Clone, Copy)]
struct Place {
    base: usize,
    inner: bool,
    region: Region,
}

impl Place {
    fn node(&self, name: impl Into<String>, ty: &str, at: usize, len: usize) -> Node {
        let mut n = Node::new(name, ty, self.base + at, self.region).end(self.base + at + len);
        n.inner = self.inner;
        n
    }

    fn error(&self, at: usize, len: usize, message: impl Into<String>) -> Node {
        self.node("error", "", at, len).value(message)
    }
}

// ---------------------------------------------------------------------------------------
// The tree.

/// Adds the batches and records of every `records` field under `node` as its children.
pub fn annotate_records(node: &mut Node) {
    for child in &mut node.children {
        annotate_records(child);
    }
    if node.ty != "records" {
        return;
    }
    let Role::Leaf(Value::Records(bytes)) = &node.role else { return };
    let start = (node.offset + node.size).saturating_sub(bytes.len());
    let place = Place { base: start, inner: false, region: node.region };
    node.children = field_nodes(bytes, place);
}

/// The nodes of a whole `records` field: its batches (or legacy messages) in order, then an
/// error or a partial last batch if there is one.
fn field_nodes(bytes: &[u8], place: Place) -> Vec<Node> {
    let mut out = Vec::new();
    let mut entries = Entries::new(bytes);
    let mut pos = 0;
    for (i, entry) in entries.by_ref().enumerate() {
        match entry {
            Ok(Entry::Batch(b)) => {
                out.push(batch_node(&b, i, pos, place));
                pos += b.bytes().len();
            }
            Ok(Entry::Legacy(m)) => {
                let len = legacy_len(&m);
                out.push(legacy_node(&m, &format!("LegacyMessage[{i}]"), pos, place));
                pos += len;
            }
            Err(e) => {
                let at = e.offset().min(bytes.len());
                out.push(place.error(at, bytes.len() - at, format!("entry {i}: {}", e.kind())));
            }
        }
    }
    if entries.partial() {
        let left = bytes.len().saturating_sub(pos);
        out.push(
            place
                .node("partial", "", pos, left)
                .value(format!("{left} bytes: a last batch cut short"))
                .about("an incomplete last batch, as a Fetch response may end; it is not read"),
        );
    }
    out
}

fn field(place: Place, name: &str, ty: &str, at: usize, len: usize, value: String, about: &str) -> Node {
    place.node(name, ty, at, len).value(value).about(about)
}

fn codec_name(c: Compression) -> &'static str {
    match c {
        Compression::None => "none",
        Compression::Gzip => "gzip",
        Compression::Snappy => "snappy",
        Compression::Lz4 => "lz4",
        Compression::Zstd => "zstd",
    }
}

fn codec_text(id: u8) -> String {
    match Compression::from_id(id) {
        Ok(c) => codec_name(c).to_string(),
        Err(_) => format!("unknown codec {id}"),
    }
}

fn timestamp_text(ts: i64) -> String {
    match utc(ts) {
        Some(t) => format!("{ts} ({t})"),
        None => ts.to_string(),
    }
}

fn batch_node(b: &RecordBatch<'_>, i: usize, pos: usize, place: Place) -> Node {
    let p = Place { base: place.base + pos, ..place };
    let len = b.bytes().len();
    let attrs = b.attributes();
    let codec = codec_text((attrs.0 & Attributes::CODEC_MASK) as u8);
    let count = b.records_count();
    let summary = format!(
        "{count} record{}, offsets {}..{}, {codec}{}",
        if count == 1 { "" } else { "s" },
        b.base_offset(),
        b.last_offset(),
        if b.is_control() { ", control" } else { "" }
    );
    let mut node =
        p.node(format!("RecordBatch[{i}]"), "v2", 0, len).value(summary).about("a record batch (magic 2)");
    let crc = if b.computed_crc() == b.crc() {
        format!("0x{:08x} (ok)", b.crc())
    } else {
        format!("0x{:08x} (mismatch: computed 0x{:08x})", b.crc(), b.computed_crc())
    };
    let ts_type = match b.timestamp_type() {
        TimestampType::CreateTime => "CreateTime",
        TimestampType::LogAppendTime => "LogAppendTime",
    };
    let mut attributes = field(
        p,
        "attributes",
        "int16",
        21,
        2,
        format!("0x{:04x}", attrs.0),
        "codec (bits 0-2), timestamp type, transactional, control, delete horizon",
    );
    attributes.children = vec![
        field(p, "compression", "bits 0-2", 21, 2, codec.clone(), "how the records are compressed"),
        field(
            p,
            "timestampType",
            "bit 3",
            21,
            2,
            ts_type.into(),
            "who set the timestamps: producer or broker",
        ),
        field(
            p,
            "isTransactional",
            "bit 4",
            21,
            2,
            attrs.is_transactional().to_string(),
            "part of a transaction",
        ),
        field(p, "isControl", "bit 5", 21, 2, attrs.is_control().to_string(), "holds control records"),
        field(
            p,
            "hasDeleteHorizonMs",
            "bit 6",
            21,
            2,
            attrs.has_delete_horizon().to_string(),
            "the base timestamp is the delete horizon",
        ),
    ];
    let base_ts_about = if attrs.has_delete_horizon() {
        "the delete horizon (attributes bit 6); record timestamps still add to it"
    } else {
        "timestamp of the first record; record timestamps are deltas from it"
    };
    node.children = vec![
        field(p, "baseOffset", "int64", 0, 8, b.base_offset().to_string(), "offset of the first record"),
        field(p, "batchLength", "int32", 8, 4, b.batch_length().to_string(), "bytes that follow"),
        field(
            p,
            "partitionLeaderEpoch",
            "int32",
            12,
            4,
            b.partition_leader_epoch().to_string(),
            "epoch of the leader that appended the batch",
        ),
        field(p, "magic", "int8", 16, 1, b.magic().to_string(), "format version: 2, a record batch"),
        field(p, "crc", "uint32", 17, 4, crc, "CRC-32C of attributes to the end of the batch"),
        attributes,
        field(
            p,
            "lastOffsetDelta",
            "int32",
            23,
            4,
            format!("{} (last offset {})", b.last_offset_delta(), b.last_offset()),
            "offset delta of the last record",
        ),
        field(p, "baseTimestamp", "int64", 27, 8, timestamp_text(b.base_timestamp()), base_ts_about),
        field(
            p,
            "maxTimestamp",
            "int64",
            35,
            8,
            timestamp_text(b.max_timestamp()),
            "largest record timestamp (log-append time: the broker's)",
        ),
        field(p, "producerId", "int64", 43, 8, b.producer_id().to_string(), "idempotent producer id, or -1"),
        field(p, "producerEpoch", "int16", 51, 2, b.producer_epoch().to_string(), "producer epoch, or -1"),
        field(
            p,
            "baseSequence",
            "int32",
            53,
            4,
            b.base_sequence().to_string(),
            "sequence number of the first record, or -1",
        ),
        field(p, "recordsCount", "int32", 57, 4, count.to_string(), "number of records"),
        records_node(b, p),
    ];
    node
}

/// The records section of a batch, with its records as children.
fn records_node(b: &RecordBatch<'_>, p: Place) -> Node {
    let payload = b.payload();
    let start = b.bytes().len() - payload.len();
    let mut node = p.node("records", "records", start, payload.len());
    let mut scratch = Vec::new();
    let crc_ok = b.computed_crc() == b.crc();
    let compression = b.compression();
    let result = match compression {
        Ok(Compression::None) if !crc_ok => {
            node.children.push(p.error(17, 4, "CRC mismatch: the records below are not verified"));
            b.records_unverified()
        }
        _ => b.records_in_vec(&mut scratch, DECOMPRESS_LIMIT),
    };
    let records = match result {
        Ok(records) => records,
        Err(e) => {
            node.value = format!("{} bytes", payload.len());
            node.children.push(p.error(start, payload.len(), format!("records not read: {}", e.kind())));
            return node;
        }
    };
    let section = records.bytes();
    let inner = match compression {
        Ok(Compression::None) | Err(_) => {
            node.value = format!("{} bytes", payload.len());
            node.about = "the records, uncompressed".into();
            Place { base: p.base + start, ..p }
        }
        Ok(codec) => {
            node.value = format!(
                "{}, {} bytes compressed, {} bytes decompressed",
                codec_name(codec),
                payload.len(),
                section.len()
            );
            node.about = "compressed; the positions below (+0x...) are in the decompressed bytes".into();
            Place { base: 0, inner: true, ..p }
        }
    };
    let mut pos = 0;
    for (i, record) in records.enumerate() {
        match record {
            Ok(r) => {
                let (n, len) = record_node(&r, i, section, pos, inner);
                node.children.push(n);
                pos += len;
            }
            Err(e) => {
                let at = e.offset().min(section.len());
                node.children.push(inner.error(at, 0, format!("record {i}: {}", e.kind())));
            }
        }
    }
    node
}

/// Bytes of the varint at `pos` (at most 10; to the end of `bytes` where none ends there).
fn varint_len(bytes: &[u8], pos: usize) -> usize {
    match varint::uvarlong(bytes, pos) {
        Ok((_, end)) => end - pos,
        Err(_) => bytes.len().saturating_sub(pos).min(varint::MAX_VARLONG_LEN),
    }
}

/// A byte string for the tree: quoted when it is printable UTF-8, else in hex; cut when long.
pub fn show_bytes(b: Option<&[u8]>) -> String {
    let Some(b) = b else { return "null".into() };
    match core::str::from_utf8(b) {
        Ok(s) if !s.chars().any(char::is_control) => {
            if s.chars().count() > SHOWN_CHARS {
                let cut: String = s.chars().take(SHOWN_CHARS).collect();
                format!("{cut:?}...")
            } else {
                format!("{s:?}")
            }
        }
        _ => bytes_preview(b),
    }
}

fn len_note(b: Option<&[u8]>) -> String {
    match b {
        Some(b) => format!("varint len={}", b.len()),
        None => "varint len=-1".into(),
    }
}

/// The node of one record and its length on the wire.
fn record_node(r: &Record<'_>, i: usize, section: &[u8], pos: usize, p: Place) -> (Node, usize) {
    let len_bytes = varint_len(section, pos);
    let body_len = r_len(section, pos);
    let total = len_bytes + body_len;
    let summary = if r.is_control() {
        format!("offset {}, control", r.offset())
    } else {
        format!("offset {}, key {}", r.offset(), show_bytes(r.key()))
    };
    let mut node = p.node(format!("Record[{i}]"), "", pos, total).value(summary);
    let mut c = pos;
    let at = take(&mut c, len_bytes);
    node.children.push(field(
        p,
        "length",
        "varint",
        at,
        len_bytes,
        body_len.to_string(),
        "bytes of the record that follow",
    ));
    let at = take(&mut c, 1);
    node.children.push(field(p, "attributes", "int8", at, 1, r.attributes().to_string(), "unused (0)"));
    let n = varint_len(section, c);
    let at = take(&mut c, n);
    node.children.push(field(
        p,
        "timestampDelta",
        "varlong",
        at,
        n,
        match utc(r.timestamp()) {
            Some(t) => format!("{} (timestamp {}, {t})", r.timestamp_delta(), r.timestamp()),
            None => format!("{} (timestamp {})", r.timestamp_delta(), r.timestamp()),
        },
        "added to the base timestamp (log-append time: the max timestamp instead)",
    ));
    let n = varint_len(section, c);
    let at = take(&mut c, n);
    node.children.push(field(
        p,
        "offsetDelta",
        "varint",
        at,
        n,
        format!("{} (offset {})", r.offset_delta(), r.offset()),
        "added to the batch's base offset",
    ));
    for (name, value, about) in
        [("key", r.key(), "the record's key"), ("value", r.value(), "the record's value")]
    {
        let n = varint_len(section, c) + value.map_or(0, <[u8]>::len);
        let at = take(&mut c, n);
        node.children.push(field(
            p,
            name,
            "bytes",
            at,
            n,
            format!("{} ({})", show_bytes(value), len_note(value)),
            about,
        ));
    }
    let headers_at = c;
    let n = varint_len(section, c);
    take(&mut c, n);
    let mut headers = field(
        p,
        "headers",
        "[]Header",
        headers_at,
        pos + total - headers_at,
        format!("{} header{}", r.header_count(), if r.header_count() == 1 { "" } else { "s" }),
        "header count (varint), then each header",
    );
    for (j, h) in r.headers().enumerate() {
        let start = c;
        let kn = varint_len(section, c) + h.key.len();
        let kat = take(&mut c, kn);
        let vn = varint_len(section, c) + h.value.map_or(0, <[u8]>::len);
        let vat = take(&mut c, vn);
        let mut hn = p.node(format!("Header[{j}]"), "", start, kn + vn);
        hn.value = format!("{} = {}", show_bytes(Some(h.key)), show_bytes(h.value));
        hn.children.push(field(
            p,
            "key",
            "string",
            kat,
            kn,
            format!("{} ({})", show_bytes(Some(h.key)), len_note(Some(h.key))),
            "the header's key",
        ));
        hn.children.push(field(
            p,
            "value",
            "bytes",
            vat,
            vn,
            format!("{} ({})", show_bytes(h.value), len_note(h.value)),
            "the header's value",
        ));
        headers.children.push(hn);
    }
    node.children.push(headers);
    if r.is_control() {
        let text = match r.control() {
            Ok(ctl) => {
                let kind = match ctl.kind {
                    ControlRecordType::Abort => "ABORT".to_string(),
                    ControlRecordType::Commit => "COMMIT".to_string(),
                    ControlRecordType::LeaderChange => "LEADER_CHANGE".to_string(),
                    ControlRecordType::SnapshotHeader => "SNAPSHOT_HEADER".to_string(),
                    ControlRecordType::SnapshotFooter => "SNAPSHOT_FOOTER".to_string(),
                    ControlRecordType::KRaftVersion => "KRAFT_VERSION".to_string(),
                    ControlRecordType::KRaftVoters => "KRAFT_VOTERS".to_string(),
                    ControlRecordType::Other(n) => format!("type {n}"),
                };
                match ctl.marker {
                    Some(m) => format!("{kind} (coordinator epoch {})", m.coordinator_epoch),
                    None => kind,
                }
            }
            Err(e) => format!("invalid: {e}"),
        };
        node.children.push(
            p.node("control", "", pos, total).value(text).about("the control record's type, from its key"),
        );
    }
    (node, total)
}

/// Moves the cursor `c` over `n` bytes; returns where they start.
fn take(c: &mut usize, n: usize) -> usize {
    let at = *c;
    *c += n;
    at
}

/// The record length at `pos` (a zigzag varint), as kwire accepted it.
fn r_len(section: &[u8], pos: usize) -> usize {
    varint::varint(section, pos).map_or(0, |(v, _)| usize::try_from(v).unwrap_or(0))
}

/// A Unix time in milliseconds as an ISO 8601 UTC date, for years 1970 to 9999.
pub fn utc(ms: i64) -> Option<String> {
    if !(0..=253_402_300_799_999).contains(&ms) {
        return None;
    }
    Some(format!("{}.{:03}Z", crate::codec::civil::Utc::from_unix(ms / 1000), ms % 1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(utc(0).as_deref(), Some("1970-01-01T00:00:00.000Z"));
        assert_eq!(utc(1_700_000_000_000).as_deref(), Some("2023-11-14T22:13:20.000Z"));
        assert_eq!(utc(951_782_400_123).as_deref(), Some("2000-02-29T00:00:00.123Z"));
        assert_eq!(utc(253_402_300_799_999).as_deref(), Some("9999-12-31T23:59:59.999Z"));
        assert_eq!(utc(-1), None);
    }

    #[test]
    fn shown_bytes() {
        assert_eq!(show_bytes(None), "null");
        assert_eq!(show_bytes(Some(b"k-0")), "\"k-0\"");
        assert_eq!(show_bytes(Some(b"")), "\"\"");
        assert_eq!(show_bytes(Some(&[0, 1, 2])), "3 bytes: 000102");
        let long = "x".repeat(100);
        assert_eq!(show_bytes(Some(long.as_bytes())), format!("{:?}...", "x".repeat(48)));
    }
}
