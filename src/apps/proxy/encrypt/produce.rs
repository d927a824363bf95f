//! The Produce side: every record of a ruled topic sealed in an envelope before the request
//! leaves the proxy, under a lease of nonces taken once per KEK and request; the partitions
//! that cannot be encrypted are emptied, and refused by the chain filter.

#[allow(unused_imports)]
use std::{borrow::ToOwned, format, string::String, string::ToString, vec, vec::Vec};

use std::collections::HashMap;

use super::dek::Lease;
use super::engine::Engine;
use super::format::{self, Flags, HEADERS_KEY};
use super::kms::KmsError;
use super::rules::EncryptRule;
use super::write::{OutRecord, into_vec, write_batch, write_record};
use crate::ErrorCode;
use crate::codec::dispatch::{self, Request};
use crate::codec::messages::{ProduceRequest, RequestBodyView};
use crate::codec::types::List;
use crate::filter::{DEFAULT_DECOMPRESSION_LIMIT, Refusals};
use crate::proxy::{ConnInfo, Decision};
use crate::records::{Compression, Header, RecordBatches};

/// Why a partition is refused on Produce.
fn produce_error(e: &KmsError) -> ErrorCode {
    // KAFKA_STORAGE_ERROR: every Kafka client retries it (the producers after a metadata
    // refresh), and it says the write did not happen, so an idempotent producer's
    // sequence stays valid; the message says what is down.
    if e.is_retriable() { ErrorCode::KafkaStorageError } else { ErrorCode::PolicyViolation }
}

/// Seals one envelope.
fn seal(
    topic: &str,
    key: Option<&[u8]>,
    kek: &str,
    lease: &mut Lease,
    headers: Option<&[Header<'_>]>,
    value: Option<&[u8]>,
    codec: Compression,
) -> Result<Vec<u8>, String> {
    let mut sealed = Vec::new();
    let used = format::write_plain(&mut sealed, headers, value, codec).map_err(|e| e.to_string())?;
    let flags = Flags::new(headers.is_some(), value.is_some(), used);
    let nonce = lease.nonce().ok_or("more records than the batch declared")?;
    let mut envelope = Vec::with_capacity(sealed.len() + 128);
    format::write_header(&mut envelope, flags, kek, &lease.wrapped, &nonce).map_err(|e| e.to_string())?;
    let aad = format::associated_data(topic, key, &envelope);
    lease.cipher.seal(nonce, &aad, &mut sealed).map_err(|()| "sealing failed".to_string())?;
    envelope.extend_from_slice(&sealed);
    Ok(envelope)
}

/// Encrypts every record of a Produce partition's batches into `out`.
pub(super) fn encrypt_batches(
    records: RecordBatches<'_>,
    topic: &str,
    rule: &EncryptRule,
    lease: &mut Lease,
) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(records.bytes().len() + 256);
    let mut batches = records;
    let (mut raw, mut scratch, mut buf) = (Vec::new(), Vec::new(), Vec::new());
    for batch in &mut batches {
        let batch = batch.map_err(|e| e.to_string())?;
        if batch.is_control() {
            return Err("a control batch from a producer".into());
        }
        let codec = batch.compression().map_err(|e| e.to_string())?;
        raw.clear();
        for record in
            batch.records_in_vec(&mut buf, DEFAULT_DECOMPRESSION_LIMIT).map_err(|e| e.to_string())?
        {
            let record = record.map_err(|e| e.to_string())?;
            let headers: Vec<Header<'_>> = record.headers().collect();
            let mut out_record = OutRecord::unchanged(record);
            match record.value() {
                Some(value) => {
                    let inside = rule.headers.then_some(&headers[..]);
                    out_record.value =
                        Some(seal(topic, record.key(), &rule.kek, lease, inside, Some(value), codec)?);
                    out_record.keep_value = false;
                    out_record.keep_headers = !rule.headers;
                }
                // A tombstone stays one; its headers, if encrypted, travel in one header.
                None if rule.headers && !headers.is_empty() => {
                    let sealed =
                        seal(topic, record.key(), &rule.kek, lease, Some(&headers), None, Compression::None)?;
                    out_record.headers = vec![(HEADERS_KEY.as_bytes().to_vec(), Some(sealed))];
                    out_record.keep_headers = false;
                }
                None => {}
            }
            write_record(&mut raw, &out_record, &mut scratch);
        }
        write_batch(&batch, codec, &raw, &mut out)?;
    }
    if batches.partial() {
        return Err("a batch cut short".into());
    }
    Ok(out)
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
    pub(super) async fn produce(&self, frame: Vec<u8>, conn: &ConnInfo) -> Decision {
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
        let mut encrypted: HashMap<(usize, usize), Vec<u8>> = HashMap::new();
        for part in &plan {
            let records = view
                .topic_data()
                .iter()
                .nth(part.topic)
                .and_then(|t| t.partition_data().iter().nth(part.partition))
                .and_then(|p| p.records());
            let result = match (leases.get_mut(part.rule.kek.as_str()), records) {
                (Some(Ok(lease)), Some(records)) => encrypt_batches(records, &part.name, part.rule, lease)
                    .map_err(|why| (ErrorCode::CorruptMessage, why)),
                (Some(Err(e)), _) => Err((produce_error(e), e.to_string())),
                _ => Err((ErrorCode::UnknownServerError, "no lease".to_string())),
            };
            match result {
                Ok(bytes) => {
                    encrypted.insert((part.topic, part.partition), bytes);
                }
                Err((code, why)) => {
                    refusals.partition(part.topic, part.partition, code, Some(&why));
                    wiped.push((part.topic, Some(part.partition)));
                }
            }
        }
        let version = header.api_version();
        let header_len = header.as_bytes().len();
        let correlation_id = header.correlation_id();
        let mut body = ProduceRequest::from(view);
        let mut topics = into_vec(core::mem::replace(&mut body.topic_data, List::Borrowed(&[])));
        for (ti, topic) in topics.iter_mut().enumerate() {
            let mut partitions = into_vec(core::mem::replace(&mut topic.partition_data, List::Borrowed(&[])));
            for (pi, partition) in partitions.iter_mut().enumerate() {
                if let Some(bytes) = encrypted.remove(&(ti, pi)) {
                    partition.records = Some(List::Owned(bytes));
                } else if wiped.iter().any(|&(t, p)| t == ti && p.is_none_or(|p| p == pi)) {
                    // Never forwarded as they came: the chain refuses these partitions.
                    partition.records = None;
                }
            }
            topic.partition_data = List::Owned(partitions);
        }
        body.topic_data = List::Owned(topics);
        let encoded = body.encoded_len(version).and_then(|n| {
            let mut out = vec![0u8; header_len + n];
            body.encode(version, &mut out[header_len..]).map(|_| out)
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
