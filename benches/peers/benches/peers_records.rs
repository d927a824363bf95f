//! Record batches read by odradek-protocol 0.1 and nisshi-sans-io 0.8, on the payload of
//! kwire's `benches/records.rs` (10 partitions' `records` fields, each one batch of 1,000
//! records with 100-byte values, about 1.2 MB uncompressed), in its groups
//! (`records/uncompressed`, `records/lz4`, `records/zstd`), so that the results land beside
//! kwire's and kafka-protocol's in `target/criterion/` and `benches/report.py` shows them
//! together.
//!
//! - `odradek`: `records::decode_set(&mut Bytes)` of each field (CRC-32C checked, in hardware
//!   with its `hardware-crc` feature; keys and values are `Bytes` slices of the input), then
//!   every record read as kwire's bench reads it. odradek keeps compressed batches as raw
//!   bytes (it has no codecs), so it is in the uncompressed group only.
//! - `nisshi`: `deflated::Batch::try_from(Bytes)` of each field (its CRC-32C is computed but
//!   a mismatch is only logged, not refused), then `inflated::Batch::try_from(&batch)`, which
//!   decompresses (lz4 and zstd through the C libraries) and decodes the records (`Bytes`
//!   slices), then the same reading.
//!
//! Before timing, each peer's sum over every record must equal kwire's (`RecordBatches`,
//! `records_in`) on the same bytes.

use std::hint::black_box;
use std::time::Duration;

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kwire::records::{Compression, RecordBatches};

#[path = "../../support/batches.rs"]
mod batches;

use batches::{kwire_walk, payload};

/// odradek: every batch of every field decoded, every record read. `None` if a batch is
/// compressed (odradek does not decompress).
fn odradek_walk(fields: &[Bytes]) -> Option<u64> {
    use odradek_protocol::records::{Records, decode_set};
    let mut sum = 0u64;
    for field in fields {
        for batch in decode_set(&mut field.clone()).unwrap() {
            let Records::Plain(records) = &batch.records else { return None };
            for r in records {
                let offset = batch.base_offset + i64::from(r.offset_delta);
                let timestamp = batch.base_timestamp + r.timestamp_delta;
                sum = sum.wrapping_add(offset as u64 ^ timestamp as u64);
                if let Some(k) = &r.key {
                    sum = sum.wrapping_add(k.len() as u64 + u64::from(k[0]));
                }
                if let Some(v) = &r.value {
                    sum = sum.wrapping_add(v.len() as u64 + u64::from(v[v.len() - 1]));
                }
                for h in &r.headers {
                    sum =
                        sum.wrapping_add(h.key.len() as u64 + h.value.as_ref().map_or(0, |v| v.len() as u64));
                }
            }
        }
    }
    Some(sum)
}

/// nisshi: each field's batch (one a field here) parsed and inflated, every record read.
fn nisshi_walk(fields: &[Bytes]) -> u64 {
    use nisshi_sans_io::record::{deflated, inflated};
    let mut sum = 0u64;
    for field in fields {
        let deflated = deflated::Batch::try_from(field.clone()).unwrap();
        let batch = inflated::Batch::try_from(&deflated).unwrap();
        for r in &batch.records {
            let offset = batch.base_offset + i64::from(r.offset_delta);
            let timestamp = batch.base_timestamp + r.timestamp_delta;
            sum = sum.wrapping_add(offset as u64 ^ timestamp as u64);
            if let Some(k) = &r.key {
                sum = sum.wrapping_add(k.len() as u64 + u64::from(k[0]));
            }
            if let Some(v) = &r.value {
                sum = sum.wrapping_add(v.len() as u64 + u64::from(v[v.len() - 1]));
            }
            for h in &r.headers {
                sum = sum.wrapping_add(
                    h.key.as_ref().map_or(0, |k| k.len() as u64)
                        + h.value.as_ref().map_or(0, |v| v.len() as u64),
                );
            }
        }
    }
    sum
}

fn bench(c: &mut Criterion) {
    let mut scratch = vec![0u8; 1 << 20];
    let plain = payload(Compression::None);
    let raw_len: usize = plain.iter().map(Vec::len).sum();
    let expected = kwire_walk(&plain, &mut scratch);
    for codec in [Compression::None, Compression::Lz4, Compression::Zstd] {
        let fields = payload(codec);
        assert_eq!(kwire_walk(&fields, &mut scratch), expected, "kwire reads the {codec:?} payload alike");
        // One batch a field: nisshi's `deflated::Batch::try_from` reads one batch.
        for f in &fields {
            assert_eq!(RecordBatches::new(f).count(), 1);
        }
        let fields: Vec<Bytes> = fields.iter().map(|f| Bytes::copy_from_slice(f)).collect();
        let name = if codec == Compression::None {
            "uncompressed".to_string()
        } else {
            format!("{codec:?}").to_lowercase()
        };
        let mut g = c.benchmark_group(format!("records/{name}"));
        g.throughput(Throughput::Bytes(raw_len as u64));
        match odradek_walk(&fields) {
            Some(sum) => {
                assert_eq!(sum, expected, "odradek-protocol reads the records as kwire does");
                g.bench_function("odradek", |b| b.iter(|| odradek_walk(black_box(&fields))));
            }
            None => eprintln!("odradek-protocol keeps {codec:?} batches compressed: not measured"),
        }
        assert_eq!(
            nisshi_walk(&fields),
            expected,
            "nisshi-sans-io reads the {codec:?} records as kwire does"
        );
        g.bench_function("nisshi", |b| b.iter(|| nisshi_walk(black_box(&fields))));
        g.finish();
    }
}

criterion_group! {
    name = benches;
    // As benches/records.rs.
    config = Criterion::default().measurement_time(Duration::from_secs(3)).sample_size(50);
    targets = bench
}
criterion_main!(benches);
