//! Unit tests of the Fetch side through [`Encryption`]: each batch decompressed once, and
//! control batches passed as stored under either policy.

#[allow(unused_imports)]
use std::{format, sync::Arc, vec::Vec};

use super::fetch::DECOMPRESSED;
use super::{EncryptRule, Encryption, MemoryKms, OnFailure, RecordsError};
use crate::records::{BatchBuilder, Compression, NewRecord, RecordBatch, RecordBatches};

fn block<F: core::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
}

/// Topic `t` encrypted under `kek`, with `policy`.
fn encryption(policy: OnFailure) -> Encryption {
    let kms = MemoryKms::new();
    kms.create_key("kek");
    Encryption::new(Arc::new(kms)).rule(EncryptRule::new("t", "kek").unwrap().on_failure(policy))
}

fn batch(base_offset: i64, codec: Compression, control: bool, values: &[&[u8]]) -> Vec<u8> {
    let records: Vec<NewRecord<'_>> = values.iter().map(|v| NewRecord::new(Some(b"key"), Some(v))).collect();
    let mut b = BatchBuilder::new(base_offset, 1_700_000_000_000, &records);
    b.compression = codec;
    b.control = control;
    let mut out = Vec::new();
    b.encode_to_vec(&mut out).unwrap();
    out
}

/// Every value of `records`, in order.
fn values(records: &[u8]) -> Vec<Vec<u8>> {
    let mut buf = Vec::new();
    let mut out = Vec::new();
    for batch in RecordBatches::new(records) {
        for r in batch.unwrap().records_in_vec(&mut buf, 1 << 24).unwrap() {
            out.push(r.unwrap().value().unwrap().to_vec());
        }
    }
    out
}

#[test]
fn each_batch_is_decompressed_once() {
    let e = encryption(OnFailure::Error);
    let mut stored = Vec::new();
    let mut plain = Vec::new();
    for (i, codec) in [Compression::Gzip, Compression::Lz4, Compression::Zstd].into_iter().enumerate() {
        let vals: Vec<Vec<u8>> =
            (0..50).map(|j| format!("value {i} {j} {}", "z".repeat(j)).into_bytes()).collect();
        let refs: Vec<&[u8]> = vals.iter().map(Vec::as_slice).collect();
        let produced = batch(i as i64 * 50, codec, false, &refs);
        stored.extend(block(e.encrypt_records("t", &produced)).unwrap());
        plain.extend(vals);
    }
    DECOMPRESSED.with(|n| n.set(0));
    let out = block(e.decrypt_records("t", &stored)).unwrap();
    assert_eq!(DECOMPRESSED.with(|n| n.get()), 3, "three compressed batches, each decompressed once");
    assert_eq!(values(&out), plain);
}

/// A batch marked control passes as stored under either policy, whatever its records
/// hold (Kafka's consumers never give them to the application); the data batches
/// around it are decrypted.
#[test]
fn a_control_batch_passes_as_stored_under_either_policy() {
    for policy in [OnFailure::Error, OnFailure::PassStored] {
        let e = encryption(policy);
        let first = block(e.encrypt_records("t", &batch(0, Compression::None, false, &[b"one"]))).unwrap();
        let last = block(e.encrypt_records("t", &batch(2, Compression::Gzip, false, &[b"three"]))).unwrap();
        // Not a control record: a plain value, and a key that is no marker's.
        let control = batch(1, Compression::None, true, &[b"not a marker"]);
        let stored = [first.clone(), control.clone(), last].concat();
        let out = block(e.decrypt_records("t", &stored)).unwrap();
        let batches: Vec<RecordBatch<'_>> = RecordBatches::new(&out).map(Result::unwrap).collect();
        assert_eq!(batches.len(), 3, "{policy:?}");
        assert_eq!(batches[1].bytes(), &control[..], "{policy:?}: the control batch as stored");
        let mut buf = Vec::new();
        for (b, want) in [(&batches[0], &b"one"[..]), (&batches[2], &b"three"[..])] {
            let r = b.records_in_vec(&mut buf, 1 << 20).unwrap().next().unwrap().unwrap();
            assert_eq!(r.value(), Some(want), "{policy:?}");
        }
        // The same record in a data batch is not one the proxy can decrypt.
        let plain = batch(1, Compression::None, false, &[b"not a marker"]);
        let got = block(e.decrypt_records("t", &[first, plain].concat()));
        match policy {
            OnFailure::Error => assert!(matches!(got, Err(RecordsError::Refused(_))), "{got:?}"),
            _ => assert!(got.is_ok()),
        }
    }
}
