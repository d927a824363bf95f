//! Record batches: a Fetch-like `records` payload of 10 partitions, each one batch of
//! 1,000 records with 100-byte values (about 1.2 MB uncompressed), read record by record
//! (key, value and headers touched), uncompressed and with lz4 and zstd; beside
//! kafka-protocol's record decoder, a plain copy of the bytes, and the decompressors
//! alone. Also CRC-32C throughput (hardware and portable).
//!
//! `cargo bench --bench records`; figures go to `docs/records.md` by hand.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kwire::records::compression::decompress_into;
use kwire::records::{Compression, RecordBatches, crc};

#[path = "support/batches.rs"]
mod batches;

use batches::{kwire_walk, payload};

fn kafka_protocol_walk(fields: &[bytes::Bytes]) -> u64 {
    let mut sum = 0u64;
    for field in fields {
        let mut buf = field.clone();
        for set in kafka_protocol::records::RecordBatchDecoder::decode_all(&mut buf).unwrap() {
            for r in set.records {
                sum = sum.wrapping_add(r.offset as u64 ^ r.timestamp as u64);
                if let Some(k) = &r.key {
                    sum = sum.wrapping_add(k.len() as u64 + u64::from(k[0]));
                }
                if let Some(v) = &r.value {
                    sum = sum.wrapping_add(v.len() as u64 + u64::from(v[v.len() - 1]));
                }
                for (k, v) in &r.headers {
                    sum = sum.wrapping_add(k.len() as u64 + v.as_ref().map_or(0, |v| v.len() as u64));
                }
            }
        }
    }
    sum
}

fn bench(c: &mut Criterion) {
    let plain = payload(Compression::None);
    let raw_len: usize = plain.iter().map(Vec::len).sum();
    let mut scratch = vec![0u8; 1 << 20];
    let expected = kwire_walk(&plain, &mut scratch);

    let mut g = c.benchmark_group("records/uncompressed");
    g.throughput(Throughput::Bytes(raw_len as u64));
    g.bench_function("kwire", |b| b.iter(|| kwire_walk(black_box(&plain), &mut scratch)));
    g.bench_function("kwire_no_crc", |b| {
        b.iter(|| {
            let mut n = 0u64;
            for field in black_box(&plain) {
                for batch in RecordBatches::new(field) {
                    for r in batch.unwrap().records_unverified().unwrap() {
                        let r = r.unwrap();
                        n = n.wrapping_add(
                            r.key().map_or(0, <[u8]>::len) as u64 + r.value().map_or(0, <[u8]>::len) as u64,
                        );
                        for h in r.headers() {
                            n = n.wrapping_add(h.key.len() as u64);
                        }
                    }
                }
            }
            n
        })
    });
    let kp_fields: Vec<bytes::Bytes> = plain.iter().map(|f| bytes::Bytes::copy_from_slice(f)).collect();
    assert_eq!(kafka_protocol_walk(&kp_fields), expected);
    g.bench_function("kafka-protocol", |b| b.iter(|| kafka_protocol_walk(black_box(&kp_fields))));
    let mut dst = vec![0u8; raw_len];
    g.bench_function("copy", |b| {
        b.iter(|| {
            let mut at = 0;
            for f in black_box(&plain) {
                dst[at..at + f.len()].copy_from_slice(f);
                at += f.len();
            }
            black_box(&dst);
        })
    });
    g.finish();

    let all: Vec<u8> = plain.concat();
    let mut g = c.benchmark_group("records/crc32c");
    g.throughput(Throughput::Bytes(all.len() as u64));
    g.bench_function("kwire", |b| b.iter(|| crc::crc32c(black_box(&all))));
    g.bench_function("crc32c_crate", |b| b.iter(|| crc32c::crc32c(black_box(&all))));
    g.bench_function("portable_slice_by_8", |b| b.iter(|| crc::crc32c_portable(black_box(&all))));
    g.finish();
    // A small batch's CRC: the short blocks and the single chain's tail.
    let small = &all[..1000];
    let mut g = c.benchmark_group("records/crc32c_1000_bytes");
    g.throughput(Throughput::Bytes(small.len() as u64));
    g.bench_function("kwire", |b| b.iter(|| crc::crc32c(black_box(small))));
    g.bench_function("crc32c_crate", |b| b.iter(|| crc32c::crc32c(black_box(small))));
    g.finish();

    for codec in [Compression::Lz4, Compression::Zstd] {
        let fields = payload(codec);
        let compressed: usize = fields.iter().map(Vec::len).sum();
        eprintln!("{codec:?}: {raw_len} bytes -> {compressed}");
        assert_eq!(kwire_walk(&fields, &mut scratch), expected);
        let mut g = c.benchmark_group(format!("records/{codec:?}").to_lowercase());
        g.throughput(Throughput::Bytes(raw_len as u64));
        g.bench_function("kwire", |b| b.iter(|| kwire_walk(black_box(&fields), &mut scratch)));
        g.bench_function("decompress_only", |b| {
            b.iter(|| {
                let mut n = 0;
                for f in black_box(&fields) {
                    n += decompress_into(codec, &f[61..], &mut scratch).unwrap();
                }
                n
            })
        });
        let kp_fields: Vec<bytes::Bytes> = fields.iter().map(|f| bytes::Bytes::copy_from_slice(f)).collect();
        assert_eq!(kafka_protocol_walk(&kp_fields), expected);
        g.bench_function("kafka-protocol", |b| b.iter(|| kafka_protocol_walk(black_box(&kp_fields))));
        g.finish();
    }
}

/// The codec crates, each decompressing the same 10 batch payloads into a buffer: the
/// choices in `kwire::records::compression` beside the alternatives.
fn codec_choice(c: &mut Criterion) {
    use std::io::Read;
    let raw_len: usize = payload(Compression::None).iter().map(Vec::len).sum();
    let mut out = vec![0u8; 1 << 20];
    let mut g = c.benchmark_group("records/codec_choice");
    g.throughput(Throughput::Bytes(raw_len as u64));
    for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd] {
        let fields = payload(codec);
        let payloads: Vec<&[u8]> = fields.iter().map(|f| &f[61..]).collect();
        eprintln!("{codec:?}: {raw_len} bytes -> {}", payloads.iter().map(|p| p.len()).sum::<usize>());
        let name = format!("{codec:?}").to_lowercase();
        g.bench_function(format!("{name}/kwire"), |b| {
            b.iter(|| payloads.iter().map(|p| decompress_into(codec, p, &mut out).unwrap()).sum::<usize>())
        });
        match codec {
            Compression::Lz4 => {
                g.bench_function("lz4/lz4-c", |b| {
                    b.iter(|| {
                        let mut n = 0;
                        for p in &payloads {
                            let mut d = lz4_c::Decoder::new(*p).unwrap();
                            let mut at = 0;
                            loop {
                                let k = d.read(&mut out[at..]).unwrap();
                                if k == 0 {
                                    break;
                                }
                                at += k;
                            }
                            n += at;
                        }
                        n
                    })
                });
            }
            Compression::Zstd => {
                let mut d = ruzstd::decoding::FrameDecoder::new();
                g.bench_function("zstd/ruzstd", |b| {
                    b.iter(|| payloads.iter().map(|p| d.decode_all(p, &mut out).unwrap()).sum::<usize>())
                });
            }
            _ => {}
        }
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).sample_size(50);
    targets = bench, codec_choice
}
criterion_main!(benches);
