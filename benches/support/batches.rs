//! The record batches every records bench reads: per partition one batch of 1,000 records
//! with 100-byte JSON-like values (compressible like real events, not trivially so), a
//! user key and one `trace-id` header each. Shared by `benches/records.rs`,
//! `benches/support/fetch_path.rs` and `benches/peers/benches/peers_records.rs`, so that
//! every reader is timed on the same bytes.
#![allow(dead_code)]

use kwire::records::{BatchBuilder, Compression, NewHeader, NewRecord, RecordBatches};

/// Partitions in the records benches' payload ([`payload`]).
pub const PARTITIONS: usize = 10;
/// Records in each batch.
pub const RECORDS: usize = 1000;
/// Bytes in each record's value.
pub const VALUE: usize = 100;

/// `partitions` batches compressed with `codec`. Batch `p` starts at offset
/// `base_offset(p)`, and its records' timestamps count up from `first_timestamp` by 1 ms.
pub fn batches(
    partitions: usize,
    codec: Compression,
    base_offset: impl Fn(usize) -> i64,
    first_timestamp: i64,
) -> Vec<Vec<u8>> {
    // xorshift64: the same bytes on every run and machine.
    let mut seed = 0x1234_5678_9abc_def0u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    (0..partitions)
        .map(|p| {
            let keys: Vec<Vec<u8>> =
                (0..RECORDS).map(|i| format!("user-{}", (i * 7919 + p) % 100_000).into_bytes()).collect();
            let values: Vec<Vec<u8>> = (0..RECORDS)
                .map(|i| {
                    let mut v = format!(
                        "{{\"id\":{},\"ts\":{},\"amount\":{},\"tag\":\"{:x}\",\"ok\":true,\"pad\":\"",
                        i,
                        1_700_000_000_000u64 + next() % 100_000,
                        next() % 1_000_000,
                        next()
                    )
                    .into_bytes();
                    while v.len() < VALUE - 2 {
                        v.push(b'a' + (next() % 26) as u8);
                    }
                    v.extend_from_slice(b"\"}");
                    v
                })
                .collect();
            let trace: Vec<Vec<u8>> = (0..RECORDS).map(|_| format!("{:016x}", next()).into_bytes()).collect();
            let headers: Vec<[NewHeader<'_>; 1]> =
                trace.iter().map(|t| [NewHeader { key: b"trace-id", value: Some(t) }]).collect();
            let records: Vec<NewRecord<'_>> = (0..RECORDS)
                .map(|i| {
                    NewRecord::new(Some(&keys[i]), Some(&values[i]))
                        .with_headers(&headers[i])
                        .with_timestamp(first_timestamp + i as i64)
                })
                .collect();
            let mut b = BatchBuilder::new(base_offset(p), first_timestamp, &records);
            b.compression = codec;
            let mut out = Vec::new();
            b.encode_to_vec(&mut out).unwrap();
            out
        })
        .collect()
}

/// The records benches' payload: [`PARTITIONS`] partitions' `records` fields, each one batch
/// compressed with `codec`, as a Fetch response carries them.
pub fn payload(codec: Compression) -> Vec<Vec<u8>> {
    batches(PARTITIONS, codec, |p| (p * RECORDS) as i64, 1_700_000_000_000)
}

/// kwire's reading of a payload, the figure every peer's reading must match: every record
/// of every field (CRC-32C checked, decompressed into `scratch`), touching its key, value
/// and headers.
pub fn kwire_walk(fields: &[Vec<u8>], scratch: &mut [u8]) -> u64 {
    let mut sum = 0u64;
    for field in fields {
        for batch in RecordBatches::new(field) {
            for r in batch.unwrap().records_in(scratch).unwrap() {
                let r = r.unwrap();
                sum = sum.wrapping_add(r.offset() as u64 ^ r.timestamp() as u64);
                if let Some(k) = r.key() {
                    sum = sum.wrapping_add(k.len() as u64 + u64::from(k[0]));
                }
                if let Some(v) = r.value() {
                    sum = sum.wrapping_add(v.len() as u64 + u64::from(v[v.len() - 1]));
                }
                for h in r.headers() {
                    sum = sum.wrapping_add(h.key.len() as u64 + h.value.map_or(0, |v| v.len() as u64));
                }
            }
        }
    }
    sum
}
