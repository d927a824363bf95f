//! Unit tests of the Fetch side through [`Encryption`]: each batch decompressed once,
//! control batches passed as stored under either policy, and data keys mixed in one batch.

#[allow(unused_imports)]
use std::{format, sync::Arc, vec, vec::Vec};

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

/// A ShareFetch answer (share groups name topics by id) passes through the filter: the
/// records of a ruled topic come out decrypted, those of another topic as they were, those
/// of a topic the proxy cannot name are refused, and a tampered record follows the rule's
/// policy.
#[cfg(feature = "api-share-fetch")]
#[test]
fn share_fetch_answers_are_decrypted() {
    use super::write::Scratch;
    use crate::codec::dispatch;
    use crate::codec::messages::share_fetch::{AcquiredRecords, PartitionData, ShareFetchableTopicResponse};
    use crate::codec::messages::{ResponseBodyView, ShareFetchResponse};
    use crate::codec::types::{List, Uuid};
    use crate::proxy::{ConnInfo, Decision};
    use crate::{ApiKey, ErrorCode};

    let (ruled, plain_topic, unknown) = (Uuid([1; 16]), Uuid([2; 16]), Uuid([3; 16]));
    let vals: Vec<Vec<u8>> = (0..20).map(|i| format!("share value {i}").into_bytes()).collect();
    let refs: Vec<&[u8]> = vals.iter().map(Vec::as_slice).collect();
    for policy in [OnFailure::Error, OnFailure::PassStored] {
        let e = encryption(policy);
        let stored = block(e.encrypt_records("t", &batch(0, Compression::Lz4, false, &refs))).unwrap();
        let stored_none = block(e.encrypt_records("t", &batch(20, Compression::None, false, &refs))).unwrap();
        // One record's ciphertext altered, in a batch whose CRC is right.
        let mut sealed = values(&stored_none)[3].clone();
        let last = sealed.len() - 1;
        sealed[last] ^= 1;
        let tampered = batch(40, Compression::None, false, &[&sealed]);
        let unruled = batch(0, Compression::None, false, &[b"not secret"]);
        let part = |index: i32, records: &[u8]| PartitionData {
            partition_index: index,
            records: List::Owned(records.to_vec()),
            acquired_records: List::Owned(vec![AcquiredRecords {
                first_offset: 0,
                last_offset: 19,
                delivery_count: 1,
                ..Default::default()
            }]),
            ..Default::default()
        };
        let all = [stored.clone(), stored_none.clone()].concat();
        let body = ShareFetchResponse {
            responses: List::Owned(vec![
                ShareFetchableTopicResponse {
                    topic_id: ruled,
                    partitions: List::Owned(vec![part(0, &all), part(1, &tampered), part(2, &[])]),
                    ..Default::default()
                },
                ShareFetchableTopicResponse {
                    topic_id: plain_topic,
                    partitions: List::Owned(vec![part(0, &unruled)]),
                    ..Default::default()
                },
                ShareFetchableTopicResponse {
                    topic_id: unknown,
                    partitions: List::Owned(vec![part(0, &stored)]),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        };
        let version = ApiKey::ShareFetch.response_versions().max;
        let mut frame = vec![0u8; dispatch::response_len(&body, version).unwrap()];
        dispatch::encode_response(&body, version, 7, &mut frame).unwrap();
        frame.drain(..4);
        let conn = ConnInfo::new(1, "127.0.0.1:5000".parse().unwrap(), "b:9092".into());
        conn.topic_names().learn(ruled, "t");
        conn.topic_names().learn(plain_topic, "plain");
        let engine = e.shared().clone();
        let mut scratch = Scratch::default();
        let Decision::Forward(out) =
            block(engine.fetch(frame.clone(), ApiKey::ShareFetch, version, &conn, &mut scratch))
        else {
            panic!("the answer is forwarded")
        };
        let parsed = dispatch::parse_response(&out, ApiKey::ShareFetch, version).unwrap();
        assert_eq!(parsed.header.correlation_id(), 7);
        let ResponseBodyView::ShareFetch(view) = parsed.body else { panic!("a ShareFetch answer") };
        let topics: Vec<_> = view.responses().iter().collect();
        let ps: Vec<_> = topics[0].partitions().iter().collect();
        assert_eq!(ps[0].error_code(), 0, "{policy:?}");
        let want: Vec<Vec<u8>> = vals.iter().chain(&vals).cloned().collect();
        assert_eq!(values(ps[0].records().bytes()), want, "{policy:?}: decrypted");
        assert_eq!(ps[0].acquired_records().iter().count(), 1, "acquired records kept");
        match policy {
            OnFailure::Error => {
                assert_eq!(ps[1].error_code(), ErrorCode::CorruptMessage.to_i16());
                assert!(ps[1].records().bytes().is_empty(), "nothing of a tampered partition");
            }
            _ => {
                assert_eq!(ps[1].error_code(), 0);
                let mut buf = Vec::new();
                let b = RecordBatches::new(ps[1].records().bytes()).next().unwrap().unwrap();
                let r = b.records_in_vec(&mut buf, 1 << 20).unwrap().next().unwrap().unwrap();
                assert_eq!(r.value(), Some(&sealed[..]), "passed as stored, never as plaintext");
                assert!(r.headers().any(|h| h.key == super::UNDECRYPTED_KEY.as_bytes()));
            }
        }
        assert!(ps[2].records().bytes().is_empty());
        let other: Vec<_> = topics[1].partitions().iter().collect();
        assert_eq!(other[0].records().bytes(), &unruled[..], "a topic without a rule passes unchanged");
        let refused: Vec<_> = topics[2].partitions().iter().collect();
        assert_eq!(refused[0].error_code(), ErrorCode::UnknownTopicId.to_i16());
        assert!(refused[0].records().bytes().is_empty(), "a topic the proxy cannot name is not given");
    }
}

/// The scratch buffers a connection keeps are reused from request to request, and a huge
/// batch does not leave huge buffers behind.
#[test]
fn scratch_is_reused_and_bounded() {
    use super::write::Scratch;
    let e = encryption(OnFailure::Error);
    let engine = e.shared().clone();
    let rule = engine.rule_for("t").unwrap();
    let mut scratch = Scratch::default();
    let run = |scratch: &mut Scratch, values: &[&[u8]]| {
        let produced = batch(0, Compression::Gzip, false, values);
        let batches = RecordBatches::new(&produced);
        let count = super::produce::count_records(&batches).unwrap();
        let mut lease = block(engine.keys.lease(&rule.kek, count)).unwrap();
        let mut out = core::mem::take(&mut scratch.out);
        super::produce::encrypt_batches(batches, "t", rule, &mut lease, &mut out, scratch).unwrap();
        let got = values_of(&block(e.decrypt_records("t", &out)).unwrap());
        scratch.out = out;
        scratch.done();
        got
    };
    let small: Vec<Vec<u8>> = (0..10).map(|i| vec![b'a' + i as u8; 100]).collect();
    let small_refs: Vec<&[u8]> = small.iter().map(Vec::as_slice).collect();
    assert_eq!(run(&mut scratch, &small_refs), small);
    let kept = scratch.capacity();
    assert!(kept > 0, "small buffers are kept for the next request");
    assert_eq!(run(&mut scratch, &small_refs), small);
    assert_eq!(scratch.capacity(), kept, "and reused, not grown");
    // 8 MiB of values: every buffer grows past its bound, and is freed after.
    let big: Vec<Vec<u8>> = (0..64).map(|i| vec![i as u8; 128 << 10]).collect();
    let big_refs: Vec<&[u8]> = big.iter().map(Vec::as_slice).collect();
    assert_eq!(run(&mut scratch, &big_refs), big);
    assert!(scratch.capacity() <= (5 << 20) + (4 << 20), "{} bytes kept", scratch.capacity());
}

fn values_of(records: &[u8]) -> Vec<Vec<u8>> {
    values(records)
}

/// Envelopes of several data keys mixed in one batch, one whose wrapped key was altered and
/// one whose nonce was: each record is opened with its own data key (an envelope whose
/// header is the one before's but for the nonce is known by it, no other), the altered
/// ones follow the policy, and the records after them are decrypted.
#[test]
fn mixed_data_keys_and_altered_headers_in_one_batch() {
    let kms = Arc::new(MemoryKms::new());
    kms.create_key("kek");
    kms.create_key("kek2");
    let under = |kek: &str, policy: OnFailure| {
        Encryption::new(kms.clone()).rule(EncryptRule::new("t", kek).unwrap().on_failure(policy))
    };
    let sealed = |e: &Encryption, vals: &[&[u8]]| {
        values(&block(e.encrypt_records("t", &batch(0, Compression::None, false, vals))).unwrap())
    };
    // Two data keys under `kek` (two proxies), one under `kek2`.
    let a = sealed(&under("kek", OnFailure::Error), &[b"a0", b"a1", b"a2", b"a3"]);
    let b = sealed(&under("kek2", OnFailure::Error), &[b"b0", b"b1"]);
    let c = sealed(&under("kek", OnFailure::Error), &[b"c0"]);
    let header_len = super::format::Envelope::parse(&a[0]).unwrap().header.len();
    assert_ne!(a[0][..header_len - 12], c[0][..header_len - 12], "two data keys under one KEK");
    let mut wrapped_altered = a[2].clone();
    wrapped_altered[12] ^= 1;
    let mut nonce_altered = a[3].clone();
    nonce_altered[header_len - 1] ^= 1;
    let mixed: Vec<&[u8]> =
        vec![&a[0], &a[1], &wrapped_altered, &b[0], &c[0], &a[1], &nonce_altered, &b[1], &a[0]];
    let stored = batch(0, Compression::None, false, &mixed);
    let got = block(under("kek", OnFailure::PassStored).decrypt_records("t", &stored)).unwrap();
    let want: Vec<&[u8]> =
        vec![b"a0", b"a1", &wrapped_altered, b"b0", b"c0", b"a1", &nonce_altered, b"b1", b"a0"];
    assert_eq!(values(&got), want);
    let mut buf = Vec::new();
    let batch_out = RecordBatch::new(&got).unwrap();
    let marked: Vec<bool> = batch_out
        .records_in_vec(&mut buf, 1 << 20)
        .unwrap()
        .map(|r| r.unwrap().headers().any(|h| h.key == super::UNDECRYPTED_KEY.as_bytes()))
        .collect();
    assert_eq!(marked, [false, false, true, false, false, false, true, false, false]);
    let refused = block(under("kek", OnFailure::Error).decrypt_records("t", &stored));
    assert!(matches!(refused, Err(RecordsError::Refused(_))), "{refused:?}");
}
