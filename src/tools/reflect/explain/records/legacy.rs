//! Legacy messages (magic 0 and 1) as explain shows them, compressed wrappers opened.

use super::*;

/// The whole length of a legacy entry: offset, size, then the message.
pub(in crate::tools::reflect::explain) fn legacy_len(m: &LegacyMessage<'_>) -> usize {
    let ts = if m.magic() == 1 { 8 } else { 0 };
    12 + 4 + 1 + 1 + ts + 4 + m.key().map_or(0, <[u8]>::len) + 4 + m.value().map_or(0, <[u8]>::len)
}

pub(in crate::tools::reflect::explain) fn legacy_codec(m: &LegacyMessage<'_>) -> Option<Compression> {
    m.compression().ok().filter(|c| *c != Compression::None)
}

pub(super) fn legacy_node(m: &LegacyMessage<'_>, name: &str, pos: usize, place: Place) -> Node {
    let p = Place { base: place.base + pos, ..place };
    let len = legacy_len(m);
    let attrs = m.attributes();
    let codec = codec_text((attrs & 0x07) as u8);
    let summary = match legacy_codec(m) {
        Some(c) => format!("offset {}, {} wrapper", m.offset(), codec_name(c)),
        None => format!("offset {}, key {}", m.offset(), show_bytes(m.key())),
    };
    let mut node = p
        .node(name, &format!("v{}", m.magic()), 0, len)
        .value(summary)
        .about(format!("a legacy message (magic {})", m.magic()));
    let crc = if m.computed_crc() == m.crc() {
        format!("0x{:08x} (ok)", m.crc())
    } else {
        format!("0x{:08x} (mismatch: computed 0x{:08x})", m.crc(), m.computed_crc())
    };
    let mut attr_text = format!("0x{:02x}: {codec}", attrs as u8);
    if m.magic() == 1 {
        attr_text.push_str(match m.timestamp_type() {
            TimestampType::CreateTime => ", CreateTime",
            TimestampType::LogAppendTime => ", LogAppendTime",
        });
    }
    node.children = vec![
        field(p, "offset", "int64", 0, 8, m.offset().to_string(), "the message's offset"),
        field(p, "messageSize", "int32", 8, 4, (len - 12).to_string(), "bytes of the message that follow"),
        field(p, "crc", "uint32", 12, 4, crc, "CRC-32 of magic to the end of the message"),
        field(p, "magic", "int8", 16, 1, m.magic().to_string(), "format version: 0 or 1, a legacy message"),
        field(p, "attributes", "int8", 17, 1, attr_text, "codec (bits 0-2); timestamp type (bit 3, magic 1)"),
    ];
    let mut c = 18;
    if let Some(ts) = m.timestamp() {
        node.children.push(field(
            p,
            "timestamp",
            "int64",
            18,
            8,
            timestamp_text(ts),
            "the message's timestamp",
        ));
        c = 26;
    }
    for (name, value) in [("key", m.key()), ("value", m.value())] {
        let n = 4 + value.map_or(0, <[u8]>::len);
        let shown = match (name, legacy_codec(m)) {
            ("value", Some(_)) => bytes_preview(value.unwrap_or_default()),
            _ => show_bytes(value),
        };
        let note = match value {
            Some(v) => format!("int32 len={}", v.len()),
            None => "int32 len=-1".into(),
        };
        node.children.push(field(p, name, "bytes", c, n, format!("{shown} ({note})"), ""));
        c += n;
    }
    if legacy_codec(m).is_some() {
        let mut scratch = Vec::new();
        let value_at = c - m.value().map_or(0, <[u8]>::len);
        let mut inner = p.node("messages", "", value_at, m.value().map_or(0, <[u8]>::len));
        match m.inner_in_vec(&mut scratch, DECOMPRESS_LIMIT) {
            Ok(messages) => {
                inner.value = format!("{} bytes decompressed", scratch_len(&messages));
                inner.about =
                    "the wrapper's messages; positions (+0x...) are in the decompressed bytes".into();
                let ip = Place { base: 0, inner: true, ..p };
                inner.children = legacy_inner_nodes(messages, ip);
            }
            Err(e) => inner.children.push(p.error(value_at, 0, format!("messages not read: {}", e.kind()))),
        }
        node.children.push(inner);
    }
    node
}

fn scratch_len(messages: &LegacyMessages<'_>) -> usize {
    let mut total = 0;
    for m in messages.clone().flatten() {
        total += legacy_len(&m);
    }
    total
}

fn legacy_inner_nodes(messages: LegacyMessages<'_>, p: Place) -> Vec<Node> {
    let mut out = Vec::new();
    let mut pos = 0;
    for (i, m) in messages.enumerate() {
        match m {
            Ok(m) => {
                out.push(legacy_node(&m, &format!("Message[{i}]"), pos, p));
                pos += legacy_len(&m);
            }
            Err(e) => out.push(p.error(e.offset(), 0, format!("message {i}: {}", e.kind()))),
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Dates.
