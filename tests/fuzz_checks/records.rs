//! The `records` fuzz target's properties: record batch views against the reference
//! decoder, and encoding round trips.
//!
//! Byte 0 selects: bits 0-1 the decompression limit (64 bytes, 4 KiB, 64 KiB, 1 MiB);
//! bit 2 set: treat the rest as a legacy message set instead (views against the reference's
//! `decode_legacy`); bit 3 set: prepend a valid batch header (length and CRC fixed up) to
//! the rest, so that the records section is fuzzed past the CRC check, or with bit 2, make
//! the rest the inner set of a valid compressed wrapper (bit 4: magic 1, bits 5-6: gzip,
//! snappy or LZ4, bit 7: log-append time). The rest is the `records` field.

use kwire::records::legacy::{Entries, Entry, LegacyMessages};
use kwire::records::reference::{self, OwnedBatch, OwnedLegacyMessage, OwnedLegacyMessages, OwnedRecords};
use kwire::records::{BatchBuilder, Compression, Error, NewHeader, NewRecord, RecordBatch, RecordBatches};

const LIMITS: [usize; 4] = [64, 4096, 64 << 10, 1 << 20];

/// Decodes a `records` field through the views into the reference's owned form.
pub fn through_views(field: &[u8], limit: usize) -> Result<OwnedRecords, Error> {
    let mut out = OwnedRecords::default();
    let mut batches = RecordBatches::new(field);
    for batch in batches.by_ref() {
        out.batches.push(OwnedBatch::from_view(&batch?, limit)?);
    }
    out.partial = batches.partial();
    Ok(out)
}

/// Decodes a legacy message set through the views (`LegacyMessages`, and each compressed
/// wrapper's `inner_in_vec`) into the reference's owned form.
pub fn legacy_through_views(field: &[u8], limit: usize) -> Result<OwnedLegacyMessages, Error> {
    let mut out = OwnedLegacyMessages::default();
    let mut messages = LegacyMessages::new(field);
    for m in messages.by_ref() {
        let m = m?;
        let mut owned = OwnedLegacyMessage::from_view(&m);
        if m.attributes() & 0x07 != 0 {
            let mut buf = Vec::new();
            owned.inner = Some(m.inner_in_vec(&mut buf, limit).map_err(|e| e.kind()).and_then(|inner| {
                inner.map(|i| i.map(|i| OwnedLegacyMessage::from_view(&i)).map_err(|e| e.kind())).collect()
            }));
        }
        out.messages.push(owned);
    }
    out.partial = messages.partial();
    Ok(out)
}

/// One legacy entry (offset, size, CRC-32, magic, attributes, [timestamp], key, value).
pub fn legacy_entry(
    offset: i64,
    magic: u8,
    attributes: u8,
    timestamp: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) -> Vec<u8> {
    let mut body = vec![magic, attributes];
    if magic == 1 {
        body.extend_from_slice(&timestamp.to_be_bytes());
    }
    for b in [key, value] {
        match b {
            None => body.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(b) => {
                body.extend_from_slice(&(b.len() as i32).to_be_bytes());
                body.extend_from_slice(b);
            }
        }
    }
    let mut out = offset.to_be_bytes().to_vec();
    out.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
    out.extend_from_slice(&kwire::records::crc::crc32(&body).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

/// The legacy property: the views and the reference agree (same messages and inner
/// messages, or the same error kinds); `Entries` reads what `LegacyMessages` reads; the
/// slice path (`inner_in`) does not panic.
fn legacy(rest: &[u8], limit: usize) {
    let views = legacy_through_views(rest, limit);
    let reference = reference::decode_legacy(rest, limit);
    match (&views, &reference) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "legacy views and reference disagree"),
        (Err(a), Err(b)) => assert_eq!(a.kind(), b.kind(), "different errors: views {a}, reference {b}"),
        _ => panic!("legacy views {views:?} but reference {reference:?}"),
    }
    // Where the legacy iterator reads a message, the mixed-format one reads the same.
    let mut mixed = Entries::new(rest);
    for m in LegacyMessages::new(rest) {
        let Ok(m) = m else { break };
        match mixed.next() {
            Some(Ok(Entry::Legacy(e))) => assert_eq!(e, m, "Entries and LegacyMessages disagree"),
            other => panic!("LegacyMessages read {m:?}, Entries {other:?}"),
        }
        let mut buf = vec![0u8; limit];
        if let Ok(inner) = m.inner_in(&mut buf) {
            for i in inner {
                let _ = i.map(|i| (i.offset(), i.key(), i.value(), i.timestamp()));
            }
        }
    }
}

/// A batch header (length and CRC fixed up) in front of `records` (a records section,
/// compressed with the codec in `attributes`).
pub fn with_header(attributes: u8, count: i32, records: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; 61];
    b[16] = 2;
    b[22] = attributes;
    b[57..61].copy_from_slice(&count.to_be_bytes());
    b.extend_from_slice(records);
    let len = (b.len() - 12) as i32;
    b[8..12].copy_from_slice(&len.to_be_bytes());
    let crc = kwire::records::crc::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b
}

/// Re-encodes decoded uncompressed batches and checks that they read back the same.
fn reencode(decoded: &OwnedRecords) {
    for b in &decoded.batches {
        let headers: Vec<Vec<NewHeader<'_>>> = b
            .records
            .iter()
            .map(|r| r.headers.iter().map(|h| NewHeader { key: &h.key, value: h.value.as_deref() }).collect())
            .collect();
        let records: Vec<NewRecord<'_>> = b
            .records
            .iter()
            .zip(&headers)
            .map(|(r, h)| {
                NewRecord::new(r.key.as_deref(), r.value.as_deref())
                    .with_headers(h)
                    .with_timestamp(b.base_timestamp.wrapping_add(r.timestamp_delta))
            })
            .collect();
        // Offset deltas are renumbered 0..n and timestamps must not overflow: skip others.
        if b.records.iter().enumerate().any(|(i, r)| r.offset_delta != i as i32 || r.attributes != 0)
            || b.records.iter().any(|r| b.base_timestamp.checked_add(r.timestamp_delta).is_none())
            || b.attributes & 0x08 != 0
        {
            continue;
        }
        let mut builder = BatchBuilder::new(b.base_offset, b.base_timestamp, &records);
        builder.compression = Compression::None;
        let Ok(len) = builder.encoded_len() else { continue };
        let mut buf = vec![0u8; len];
        assert_eq!(builder.encode(&mut buf).unwrap(), len);
        let again = reference::decode(&buf, 1 << 20).expect("re-encoded batch decodes");
        assert_eq!(again.batches.len(), 1);
        assert_eq!(again.batches[0].records, b.records);
        let batch = RecordBatch::new(&buf).unwrap();
        assert_eq!(batch.records().unwrap().count(), b.records.len());
    }
}

/// The property: views and reference agree (same batches and records, or the same error
/// kind); nothing panics; what decodes re-encodes.
pub fn records(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else { return };
    let limit = LIMITS[usize::from(sel & 3)];
    if sel & 4 != 0 {
        if sel & 8 != 0 {
            // The rest compressed into a valid wrapper, so that inner sets are fuzzed.
            let magic = (sel >> 4) & 1;
            let codec = [Compression::Gzip, Compression::Snappy, Compression::Lz4][usize::from(sel >> 5) % 3];
            let log_append = magic == 1 && sel & 0x80 != 0;
            let mut value = Vec::new();
            if kwire::records::compression::compress(codec, rest, &mut value).is_ok() {
                let attributes = codec.id() | if log_append { 0x08 } else { 0 };
                legacy(&legacy_entry(1_000, magic, attributes, 7, None, Some(&value)), limit);
            }
            return;
        }
        legacy(rest, limit);
        return;
    }
    let owned;
    let field = if sel & 8 != 0 {
        let count = rest.len().min(200) as i32 / 8;
        owned = with_header((sel >> 4) & 7, count, rest);
        &owned[..]
    } else {
        rest
    };
    let views = through_views(field, limit);
    let reference = reference::decode(field, limit);
    match (&views, &reference) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a, b, "views and reference disagree");
            reencode(a);
        }
        (Err(a), Err(b)) => assert_eq!(a.kind(), b.kind(), "different errors: views {a}, reference {b}"),
        _ => panic!("views {views:?} but reference {reference:?}"),
    }
}
