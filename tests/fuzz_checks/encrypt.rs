//! Record encryption (`kwire::proxy::encrypt`) on hostile bytes: the envelope's parser,
//! the plaintext reader, and the decryption path of a consumer-side proxy.
//!
//! Byte 0 picks the mode:
//! - `0`: the rest is an envelope (`format::Envelope::parse`) and a sealed plaintext read
//!   under the flags in byte 1 (`format::open_plain`): a value or an error, never a panic,
//!   and a parsed envelope covers exactly its bytes.
//! - `1`: the rest is a Fetch partition's `records` field, decrypted under both policies:
//!   no panic, and whatever comes out is well-formed batches.
//! - `2`: the rest makes records (lengths and bytes from the input), which are encrypted,
//!   then altered at positions the input picks, then decrypted. Unaltered, they read back
//!   exactly. Altered (the batch CRC made right again when the first alteration byte is
//!   odd), under the error policy every value that comes out is one of the originals or
//!   null (never other plaintext); under the pass policy, every value is an original, null,
//!   or carries the undecrypted header.

use std::sync::{Arc, OnceLock};

use kwire::proxy::encrypt::{EncryptRule, Encryption, MemoryKms, OnFailure, UNDECRYPTED_KEY, format};
use kwire::records::{BatchBuilder, Compression, NewHeader, NewRecord, RecordBatches};

/// Runs a future that never waits (the in-memory KMS answers at once).
fn now<F: core::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = core::task::Context::from_waker(core::task::Waker::noop());
    match f.as_mut().poll(&mut cx) {
        core::task::Poll::Ready(r) => r,
        core::task::Poll::Pending => panic!("the in-memory KMS never waits"),
    }
}

/// Encryption with one KMS for the whole run: `strict.*` under the error policy, `soft.*`
/// under the pass policy, both with headers.
fn encryption() -> &'static (Encryption, Encryption) {
    static E: OnceLock<(Encryption, Encryption)> = OnceLock::new();
    E.get_or_init(|| {
        let kms = Arc::new(MemoryKms::new());
        kms.create_key("k");
        let rules = |policy| {
            Encryption::new(kms.clone())
                .rule(EncryptRule::new("t", "k").unwrap().with_headers(true).on_failure(policy))
        };
        (rules(OnFailure::Error), rules(OnFailure::PassStored))
    })
}

/// A record header, owned.
type Header = (Vec<u8>, Option<Vec<u8>>);

/// The records a consumer gets of decrypted batches: (value, headers). Control batches are
/// left out, as consumers leave them out: the proxy passes them as stored, so a data batch
/// whose control bit an attacker set goes out with its envelopes (ciphertext, which no
/// consumer shows).
fn read(bytes: &[u8]) -> Vec<(Option<Vec<u8>>, Vec<Header>)> {
    let mut out = Vec::new();
    let mut buf = Vec::new();
    let mut batches = RecordBatches::new(bytes);
    for batch in &mut batches {
        let Ok(batch) = batch else { return out };
        if batch.is_control() {
            continue;
        }
        let Ok(records) = batch.records_in_vec(&mut buf, 64 << 20) else { continue };
        for r in records.flatten() {
            let headers = r.headers().map(|h| (h.key.to_vec(), h.value.map(<[u8]>::to_vec))).collect();
            out.push((r.value().map(<[u8]>::to_vec), headers));
        }
    }
    out
}

pub fn encrypt(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    let (strict, soft) = encryption();
    match mode % 3 {
        0 => {
            if let Ok(e) = format::Envelope::parse(rest) {
                assert_eq!(e.header.len() + e.sealed.len(), rest.len());
                assert!(e.sealed.len() >= format::TAG_LEN);
            }
            if let Some((&flags, plain)) = rest.split_first() {
                let _ = format::open_plain(format::Flags(flags), plain);
            }
        }
        1 => {
            for e in [strict, soft] {
                if let Ok(out) = now(e.decrypt_records("t", rest)) {
                    // The proxy's output is batches that read (or the input's own tail).
                    let _ = read(&out);
                }
            }
        }
        _ => roundtrip(rest, strict, soft),
    }
}

fn roundtrip(data: &[u8], strict: &Encryption, soft: &Encryption) {
    let Some((&codec, data)) = data.split_first() else { return };
    let codec =
        [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd]
            [usize::from(codec) % 5];
    // Up to eight records: a length byte each (255: null), bytes from the input.
    let mut values: Vec<Option<Vec<u8>>> = Vec::new();
    let mut at = 0;
    while values.len() < 8 && at < data.len() {
        let len = data[at];
        at += 1;
        if len == 255 {
            values.push(None);
            continue;
        }
        let end = (at + usize::from(len % 64)).min(data.len());
        values.push(Some(data[at..end].to_vec()));
        at = end;
    }
    let flips = &data[at.min(data.len())..];
    let header = [NewHeader { key: b"h", value: Some(b"header") }];
    let records: Vec<NewRecord<'_>> =
        values.iter().map(|v| NewRecord::new(Some(b"key"), v.as_deref()).with_headers(&header)).collect();
    let mut batch = Vec::new();
    let mut builder = BatchBuilder::new(0, 1_700_000_000_000, &records);
    builder.compression = codec;
    builder.encode_to_vec(&mut batch).unwrap();
    let sealed = now(strict.encrypt_records("t", &batch)).unwrap();
    let originals: Vec<Option<Vec<u8>>> = values.clone();
    for e in [strict, soft] {
        let back = read(&now(e.decrypt_records("t", &sealed)).unwrap());
        let got: Vec<Option<Vec<u8>>> = back.iter().map(|(v, _)| v.clone()).collect();
        assert_eq!(got, originals, "unaltered records read back exactly");
        assert!(back.iter().all(|(_, h)| h == &[(b"h".to_vec(), Some(b"header".to_vec()))]));
    }
    if flips.is_empty() {
        return;
    }
    let mut altered = sealed.clone();
    for pair in flips.chunks(2) {
        let at = usize::from(pair[0]) * 7 % altered.len();
        altered[at] ^= pair.get(1).copied().unwrap_or(1) | 1;
    }
    // As someone with the broker's disks would: the CRC made right again.
    if flips[0] & 1 == 1 && altered.len() > 21 {
        let crc = kwire::records::crc::crc32c(&altered[21..]);
        altered[17..21].copy_from_slice(&crc.to_be_bytes());
    }
    if let Ok(out) = now(strict.decrypt_records("t", &altered)) {
        for (v, headers) in read(&out) {
            let marked = headers.iter().any(|(k, _)| k == UNDECRYPTED_KEY.as_bytes());
            assert!(!marked, "the error policy passes nothing as stored");
            // A null is no plaintext: tombstones are not encrypted.
            assert!(v.is_none() || originals.contains(&v), "a value that was never sent came out");
        }
    }
    if let Ok(out) = now(soft.decrypt_records("t", &altered)) {
        for (v, headers) in read(&out) {
            let marked = headers.iter().any(|(k, _)| k == UNDECRYPTED_KEY.as_bytes());
            assert!(
                marked || v.is_none() || originals.contains(&v),
                "an unmarked value that was never sent came out"
            );
        }
    }
}
