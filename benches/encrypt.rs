//! Record encryption on one core (`kwire::proxy::encrypt`, feature `encrypt`): one Produce
//! partition's batch of 1,000 records with 1 KiB values, uncompressed, through the filter
//! alone: `Encryption::encrypt_records` (every value sealed with AES-256-GCM in an envelope,
//! the batch written again, its CRC computed) and `Encryption::decrypt_records` (every
//! envelope parsed and opened, the batch written again). Beside it, the floor: AES-256-GCM
//! alone (ring, the crate the filter uses) sealing the same 1,000 values in place, and
//! opening them (each copied first, as the filter's output is a new buffer).
//!
//! Throughput is the values' bytes (1,024,000) in every case, so the MB/s compare. The
//! memory KMS answers at once and the data key is cached after the first call, as in a
//! running proxy; the futures run on a current-thread runtime: one core.
//!
//! `cargo bench --bench encrypt`; benches/run.sh runs it and benches/report.py puts it in
//! docs/benchmarks.md ("Record encryption").

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kwire::proxy::encrypt::{EncryptRule, Encryption, MemoryKms};
use kwire::records::{BatchBuilder, NewRecord};
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};

const RECORDS: usize = 1000;
const VALUE: usize = 1024;

/// `RECORDS` values of `VALUE` bytes that do not compress (xorshift).
fn values() -> Vec<Vec<u8>> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..RECORDS)
        .map(|_| {
            (0..VALUE)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect()
        })
        .collect()
}

/// One uncompressed batch of the values, keyed `order-<i>`.
fn batch(values: &[Vec<u8>]) -> Vec<u8> {
    let keys: Vec<String> = (0..values.len()).map(|i| format!("order-{i}")).collect();
    let records: Vec<NewRecord<'_>> =
        values.iter().zip(&keys).map(|(v, k)| NewRecord::new(Some(k.as_bytes()), Some(v))).collect();
    let mut out = Vec::new();
    BatchBuilder::new(0, 1_700_000_000_000, &records).encode_to_vec(&mut out).unwrap();
    out
}

fn nonce(i: usize) -> Nonce {
    let mut n = [0u8; 12];
    n[4..].copy_from_slice(&(i as u64).to_be_bytes());
    Nonce::assume_unique_for_key(n)
}

fn encrypt(c: &mut Criterion) {
    let values = values();
    let bytes = (RECORDS * VALUE) as u64;
    let mut g = c.benchmark_group("encrypt");
    g.throughput(Throughput::Bytes(bytes));

    // The floor: AES-256-GCM over the same values, in place, no envelope and no batch.
    let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &[7u8; 32]).unwrap());
    let mut plain: Vec<u8> = values.concat();
    g.bench_function("aes_256_gcm_seal", |b| {
        b.iter(|| {
            for (i, chunk) in plain.chunks_mut(VALUE).enumerate() {
                let tag = key.seal_in_place_separate_tag(nonce(i), Aad::from(b"topic"), chunk).unwrap();
                let _ = black_box(tag);
            }
        })
    });
    let sealed: Vec<Vec<u8>> = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let mut buf = v.clone();
            key.seal_in_place_append_tag(nonce(i), Aad::from(b"topic"), &mut buf).unwrap();
            buf
        })
        .collect();
    let mut scratch = Vec::with_capacity(VALUE + 16);
    g.bench_function("aes_256_gcm_open", |b| {
        b.iter(|| {
            for (i, s) in sealed.iter().enumerate() {
                scratch.clear();
                scratch.extend_from_slice(s);
                let opened = key.open_in_place(nonce(i), Aad::from(b"topic"), &mut scratch).unwrap();
                black_box(opened.len());
            }
        })
    });

    // The filter alone, on one core.
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let kms = MemoryKms::new();
    kms.create_key("kek-bench");
    let e = Encryption::new(Arc::new(kms)).rule(EncryptRule::new("bench*", "kek-bench").unwrap());
    let produced = batch(&values);
    let stored = rt.block_on(e.encrypt_records("bench-topic", &produced)).unwrap();
    let back = rt.block_on(e.decrypt_records("bench-topic", &stored)).unwrap();
    assert_eq!(back, produced, "the filter gives back the batch it was given");
    g.bench_function("filter_encrypt", |b| {
        b.iter(|| black_box(rt.block_on(e.encrypt_records("bench-topic", black_box(&produced))).unwrap()))
    });
    g.bench_function("filter_decrypt", |b| {
        b.iter(|| black_box(rt.block_on(e.decrypt_records("bench-topic", black_box(&stored))).unwrap()))
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(5)).sample_size(30);
    targets = encrypt
}
criterion_main!(benches);
