//! The Produce side: every record of a ruled topic sealed in an envelope before the request
//! leaves the proxy, under a lease of nonces taken once per KEK and request; the partitions
//! that cannot be encrypted are emptied, and refused by the chain filter.

#[allow(unused_imports)]
use std::{borrow::ToOwned, format, string::String, string::ToString, vec, vec::Vec};

use std::collections::HashMap;

use super::dek::Lease;
use super::engine::Engine;
use super::format::{self, Flags, HEADERS_KEY};
use super::format::{NONCE_LEN, TAG_LEN};
use super::kms::KmsError;
use super::rules::EncryptRule;
use super::write::{
    Scratch, finish_batch, header_len, into_vec, kept_headers_len, prefix_len, put_kept_headers, put_prefix,
    put_unchanged, records_to, slice, start_batch,
};
use crate::ErrorCode;
use crate::apps::proxy::io::{give_back_owned, owned_frame};
use crate::codec::dispatch::{self, Request};
use crate::codec::messages::{ProduceRequest, RequestBodyView};
use crate::codec::types::List;
use crate::codec::wire::varint::{push_varlong, varlong_len};
use crate::filter::{DEFAULT_DECOMPRESSION_LIMIT, Refusals};
use crate::proxy::{ConnInfo, Decision};
use crate::records::{Compression, Record, RecordBatches};

/// Why a partition is refused on Produce.
fn produce_error(e: &KmsError) -> ErrorCode {
    // KAFKA_STORAGE_ERROR: every Kafka client retries it (the producers after a metadata
    // refresh), and it says the write did not happen, so an idempotent producer's
    // sequence stays valid; the message says what is down.
    if e.is_retriable() { ErrorCode::KafkaStorageError } else { ErrorCode::PolicyViolation }
}

/// What the envelopes of one partition's records share, made once: the topic's part of the
/// associated data (at the start of the `aad` scratch), and an envelope header (its last
/// flags) without the nonce, copied into each envelope.
struct Shared<'r> {
    rule: &'r EncryptRule,
    /// The length of an envelope's header.
    header_len: usize,
    /// The length of the topic's part of the associated data.
    topic_part: usize,
    /// The flags `header` was written for.
    flags: Option<Flags>,
    header: Vec<u8>,
}

impl<'r> Shared<'r> {
    fn new(topic: &str, rule: &'r EncryptRule, lease: &Lease, aad: &mut Vec<u8>) -> Self {
        let topic_part = format::associated_data_topic(aad, topic);
        let header_len = format::header_len(&rule.kek, &lease.wrapped);
        Shared { rule, header_len, topic_part, flags: None, header: Vec::new() }
    }
}

/// Writes one envelope (`len` bytes in all) at the end of `dst`: its header, then the
/// plaintext `plain` writes, sealed in place, then the tag.
fn put_envelope(
    dst: &mut Vec<u8>,
    aad: &mut Vec<u8>,
    shared: &mut Shared<'_>,
    key: Option<&[u8]>,
    lease: &mut Lease,
    flags: Flags,
    plain: impl FnOnce(&mut Vec<u8>),
) -> Result<(), String> {
    let nonce = lease.nonce().ok_or("more records than the batch declared")?;
    if shared.flags != Some(flags) {
        shared.header.clear();
        format::write_header(&mut shared.header, flags, &shared.rule.kek, &lease.wrapped, &nonce)
            .map_err(|e| e.to_string())?;
        shared.header.truncate(shared.header.len() - NONCE_LEN);
        shared.flags = Some(flags);
    }
    let header = dst.len();
    dst.extend_from_slice(&shared.header);
    dst.extend_from_slice(&nonce);
    format::associated_data_record(aad, shared.topic_part, key, &dst[header..]);
    let sealed = dst.len();
    plain(dst);
    let tag = lease
        .cipher
        .seal_separate(nonce, aad, &mut dst[sealed..])
        .map_err(|()| "sealing failed".to_string())?;
    dst.extend_from_slice(&tag);
    Ok(())
}

/// Writes one record of a ruled topic at the end of `dst`, its value (and headers, if the
/// rule says so) sealed in an envelope; `plain` is scratch for a compressed value.
fn seal_record(
    dst: &mut Vec<u8>,
    record: &Record<'_>,
    shared: &mut Shared<'_>,
    lease: &mut Lease,
    codec: Compression,
    plain: &mut Vec<u8>,
    aad: &mut Vec<u8>,
) -> Result<(), String> {
    let inside = shared.rule.headers;
    let envelope_header = shared.header_len;
    let start = dst.len();
    let body = match record.value() {
        Some(value) => {
            // The plaintext's length first: exact when nothing is compressed, else the
            // value is compressed into `plain` once, and copied from there.
            let (plain_len, used) = if codec == Compression::None {
                let headers = if inside { format::plain_headers_len(record.headers()) } else { 0 };
                (headers + 4 + value.len(), Compression::None)
            } else {
                plain.clear();
                if inside {
                    format::write_plain_headers(plain, record.header_count() as usize, record.headers());
                }
                let used = format::write_plain_value(plain, value, codec).map_err(|e| e.to_string())?;
                (plain.len(), used)
            };
            let len = envelope_header + plain_len + TAG_LEN;
            let headers = if inside { 1 } else { kept_headers_len(record) };
            let body = prefix_len(record) + varlong_len(len as i64) + len + headers;
            put_prefix(dst, record, body);
            push_varlong(dst, len as i64);
            let flags = Flags::new(inside, true, used);
            put_envelope(dst, aad, shared, record.key(), lease, flags, |dst| {
                if codec == Compression::None {
                    if inside {
                        format::write_plain_headers(dst, record.header_count() as usize, record.headers());
                    }
                    // Not compressed: cannot fail.
                    let _ = format::write_plain_value(dst, value, Compression::None);
                } else {
                    dst.extend_from_slice(plain);
                }
            })?;
            if inside {
                push_varlong(dst, 0);
            } else {
                put_kept_headers(dst, record);
            }
            body
        }
        // A tombstone stays one; its headers, if encrypted, travel in one header.
        None if inside && record.header_count() > 0 => {
            let len = envelope_header + format::plain_headers_len(record.headers()) + TAG_LEN;
            let name = HEADERS_KEY.as_bytes();
            let body = prefix_len(record) + 1 + varlong_len(1) + header_len(name, None) - 1
                + varlong_len(len as i64)
                + len;
            put_prefix(dst, record, body);
            push_varlong(dst, -1);
            push_varlong(dst, 1);
            push_varlong(dst, name.len() as i64);
            dst.extend_from_slice(name);
            push_varlong(dst, len as i64);
            let flags = Flags::new(true, false, Compression::None);
            put_envelope(dst, aad, shared, record.key(), lease, flags, |dst| {
                format::write_plain_headers(dst, record.header_count() as usize, record.headers())
            })?;
            body
        }
        None => {
            put_unchanged(dst, record);
            return Ok(());
        }
    };
    debug_assert_eq!(dst.len() - start, varlong_len(body as i64) + body, "a record's length as computed");
    Ok(())
}

/// Encrypts every record of a Produce partition's batches at the end of `out` (left as it
/// was on an error), with `s`'s scratch buffers.
pub(super) fn encrypt_batches(
    records: RecordBatches<'_>,
    topic: &str,
    rule: &EncryptRule,
    lease: &mut Lease,
    out: &mut Vec<u8>,
    s: &mut Scratch,
) -> Result<(), String> {
    let start = out.len();
    let result = encrypt_into(records, topic, rule, lease, out, s);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

fn encrypt_into(
    records: RecordBatches<'_>,
    topic: &str,
    rule: &EncryptRule,
    lease: &mut Lease,
    out: &mut Vec<u8>,
    s: &mut Scratch,
) -> Result<(), String> {
    let Scratch { raw, buf, plain, aad, .. } = s;
    let mut shared = Shared::new(topic, rule, lease, aad);
    // Each record grows by its envelope's header, tag and lengths: reserved at once.
    let per_record = format::header_len(&rule.kek, &lease.wrapped) + TAG_LEN + 16;
    let count = usize::try_from(count_records(&records).unwrap_or(0)).unwrap_or(0);
    out.reserve(records.bytes().len() + count.saturating_mul(per_record).min(1 << 26));
    let mut batches = records;
    for batch in &mut batches {
        let batch = batch.map_err(|e| e.to_string())?;
        if batch.is_control() {
            return Err("a control batch from a producer".into());
        }
        let codec = batch.compression().map_err(|e| e.to_string())?;
        let at = start_batch(&batch, out)?;
        let dst = records_to(codec, out, raw);
        for record in batch.records_in_vec(buf, DEFAULT_DECOMPRESSION_LIMIT).map_err(|e| e.to_string())? {
            let record = record.map_err(|e| e.to_string())?;
            seal_record(dst, &record, &mut shared, lease, codec, plain, aad)?;
        }
        finish_batch(codec, raw, out, at)?;
    }
    if batches.partial() {
        return Err("a batch cut short".into());
    }
    Ok(())
}

/// The records a partition's batches declare, or why they cannot be encrypted.
pub(super) fn count_records(records: &RecordBatches<'_>) -> Result<u64, String> {
    let mut batches = records.clone();
    let mut n = 0u64;
    for batch in &mut batches {
        let batch = batch.map_err(|e| e.to_string())?;
        n += u64::try_from(batch.records_count()).map_err(|_| "a negative record count".to_string())?;
    }
    if batches.partial() {
        return Err("a batch cut short".into());
    }
    Ok(n)
}

impl Engine {
    /// A Produce request with every record of the ruled topics encrypted; the partitions
    /// that cannot be are emptied and their refusals left for the chain filter.
    pub(super) async fn produce(&self, frame: Vec<u8>, conn: &ConnInfo, s: &mut Scratch) -> Decision {
        let decision = self.produce_with(frame, conn, s).await;
        s.done();
        decision
    }

    async fn produce_with(&self, frame: Vec<u8>, conn: &ConnInfo, s: &mut Scratch) -> Decision {
        let Ok(request) = dispatch::parse_request(&frame) else {
            return Decision::Close("a Produce request the encryption cannot read".into());
        };
        let Request { header, body: RequestBodyView::Produce(view) } = request else {
            return Decision::Forward(frame);
        };
        struct Part<'r> {
            topic: usize,
            partition: usize,
            name: String,
            rule: &'r EncryptRule,
            count: u64,
        }
        let mut refusals = Refusals::new();
        // (topic, partition) whose records are taken out; `None`: the whole topic.
        let mut wiped: Vec<(usize, Option<usize>)> = Vec::new();
        let mut plan = Vec::new();
        for (ti, topic) in view.topic_data().iter().enumerate() {
            let Some(name) = conn.topic_names().resolve(topic.name(), topic.topic_id()) else {
                refusals.topic(ti, ErrorCode::UnknownTopicId, Some("the proxy cannot name this topic id"));
                wiped.push((ti, None));
                continue;
            };
            let Some(rule) = self.rule_for(&name) else { continue };
            for (pi, partition) in topic.partition_data().iter().enumerate() {
                let Some(records) = partition.records() else { continue };
                match count_records(&records) {
                    Ok(count) => {
                        plan.push(Part { topic: ti, partition: pi, name: name.to_string(), rule, count })
                    }
                    Err(why) => {
                        refusals.partition(ti, pi, ErrorCode::CorruptMessage, Some(&why));
                        wiped.push((ti, Some(pi)));
                    }
                }
            }
        }
        if plan.is_empty() && wiped.is_empty() {
            return Decision::Forward(frame);
        }
        // One lease per KEK, for every record the request encrypts under it.
        let mut totals: Vec<(&str, u64)> = Vec::new();
        for part in &plan {
            match totals.iter_mut().find(|(k, _)| *k == part.rule.kek) {
                Some((_, n)) => *n += part.count,
                None => totals.push((&part.rule.kek, part.count)),
            }
        }
        let mut leases: HashMap<&str, Result<Lease, KmsError>> = HashMap::new();
        for (kek, count) in totals {
            leases.insert(kek, self.keys.lease(kek, count).await);
        }
        let head = (header.api_version(), header.as_bytes().len(), header.correlation_id());
        // Every partition encrypted into one buffer, one after the other.
        let mut out = core::mem::take(&mut s.out);
        let mut encrypted: HashMap<(usize, usize), core::ops::Range<usize>> = HashMap::new();
        for part in &plan {
            let records = view
                .topic_data()
                .iter()
                .nth(part.topic)
                .and_then(|t| t.partition_data().iter().nth(part.partition))
                .and_then(|p| p.records());
            let start = out.len();
            let result = match (leases.get_mut(part.rule.kek.as_str()), records) {
                (Some(Ok(lease)), Some(records)) => {
                    encrypt_batches(records, &part.name, part.rule, lease, &mut out, s)
                        .map_err(|why| (ErrorCode::CorruptMessage, why))
                }
                (Some(Err(e)), _) => Err((produce_error(e), e.to_string())),
                _ => Err((ErrorCode::UnknownServerError, "no lease".to_string())),
            };
            match result {
                Ok(()) => {
                    encrypted.insert((part.topic, part.partition), start..out.len());
                }
                Err((code, why)) => {
                    refusals.partition(part.topic, part.partition, code, Some(&why));
                    wiped.push((part.topic, Some(part.partition)));
                }
            }
        }
        let decision = self.produce_frame(&frame, view, head, &out, encrypted, &wiped, refusals, conn);
        s.out = out;
        give_back_owned(frame);
        decision
    }

    /// The Produce request again, the encrypted partitions' records from `out`.
    #[allow(clippy::too_many_arguments)]
    fn produce_frame(
        &self,
        frame: &[u8],
        view: crate::codec::messages::ProduceRequestView<'_>,
        (version, header_len, correlation_id): (i16, usize, i32),
        out: &[u8],
        mut encrypted: HashMap<(usize, usize), core::ops::Range<usize>>,
        wiped: &[(usize, Option<usize>)],
        refusals: Refusals,
        conn: &ConnInfo,
    ) -> Decision {
        let mut body = ProduceRequest::from(view);
        let mut topics = into_vec(core::mem::replace(&mut body.topic_data, List::Borrowed(&[])));
        for (ti, topic) in topics.iter_mut().enumerate() {
            let mut partitions = into_vec(core::mem::replace(&mut topic.partition_data, List::Borrowed(&[])));
            for (pi, partition) in partitions.iter_mut().enumerate() {
                if let Some(range) = encrypted.remove(&(ti, pi)) {
                    partition.records = Some(slice(out, range));
                } else if wiped.iter().any(|&(t, p)| t == ti && p.is_none_or(|p| p == pi)) {
                    // Never forwarded as they came: the chain refuses these partitions.
                    partition.records = None;
                }
            }
            topic.partition_data = List::Owned(partitions);
        }
        body.topic_data = List::Owned(topics);
        let encoded = body.encoded_len(version).and_then(|n| {
            // Every byte is written (the header below): a pooled buffer needs no zeros.
            let mut out = owned_frame(header_len + n);
            let written = body.encode(version, &mut out[header_len..])?;
            out.truncate(header_len + written);
            Ok(out)
        });
        let mut out = match encoded {
            Ok(out) => out,
            Err(e) => return Decision::Close(format!("the encrypted Produce request: {e}")),
        };
        out[..header_len].copy_from_slice(&frame[..header_len]);
        if !refusals.is_empty() {
            self.stash(conn.id, correlation_id, refusals);
        }
        Decision::Forward(out)
    }
}
