//! The Fetch side: every record of a ruled topic decrypted before the client gets it, in
//! one pass over each partition's batches. Each batch is read, and decompressed, once: the
//! data keys its envelopes name are unwrapped as they come ([`Ciphers`]), not looked for in
//! a pass of their own.
//!
//! A batch marked control passes as stored, under either policy: Kafka's consumers (the
//! Java client, librdkafka, franz-go) never hand a control batch's records to the
//! application, whatever they hold (the Java client skips them unread; librdkafka and
//! franz-go read them only as transaction markers, and refuse a malformed one themselves),
//! and the proxy never writes one (a Produce request holding a control batch is refused).
//! So nothing in a control batch is shown as if decrypted, and transaction markers reach
//! the consumers that need them unchanged.

#[allow(unused_imports)]
use std::{borrow::ToOwned, format, string::String, string::ToString, sync::Arc, vec, vec::Vec};

use std::collections::HashMap;

use super::dek::{Cipher, Keys};
use super::engine::Engine;
use super::format::{self, Envelope, FormatError, HEADERS_KEY};
use super::kms::KmsError;
use super::rules::{EncryptRule, OnFailure, UNDECRYPTED_KEY};
use super::write::{OutRecord, into_vec, write_batch, write_record};
use crate::codec::dispatch;
use crate::codec::messages::{FetchResponse, ResponseBodyView};
use crate::codec::types::List;
use crate::filter::DEFAULT_DECOMPRESSION_LIMIT;
use crate::proxy::{ConnInfo, Decision};
use crate::records::{Error, RecordBatch, RecordBatches, Records};
use crate::{ApiKey, ErrorCode};

/// Why a record of a Fetch answer was not decrypted.
pub(super) enum Failure {
    /// The KMS is unavailable: the partition is answered with a retriable error.
    Retriable,
    /// The record cannot be decrypted: the rule's policy applies.
    Bad(String),
}

/// A data key unwrapped, or why not.
type Opened = Result<Arc<Cipher>, KmsError>;

/// The data keys one Fetch answer has needed so far, unwrapped (or why not): each asked
/// of [`Keys`] once per answer, found again by its wrapped bytes without allocating.
pub(super) struct Ciphers<'k> {
    keys: &'k Keys,
    /// By wrapped key, then by KEK.
    opened: HashMap<Vec<u8>, Vec<(String, Opened)>>,
}

impl<'k> Ciphers<'k> {
    pub(super) fn new(keys: &'k Keys) -> Self {
        Ciphers { keys, opened: HashMap::new() }
    }

    /// The data key `wrapped` holds under `kek`.
    async fn get(&mut self, kek: &str, wrapped: &[u8]) -> Result<Arc<Cipher>, Failure> {
        let known = self.opened.get(wrapped).and_then(|under| under.iter().find(|(k, _)| k == kek));
        if let Some((_, opened)) = known {
            return usable(opened);
        }
        let opened = self.keys.open(kek, wrapped).await;
        let out = usable(&opened);
        self.opened.entry(wrapped.to_vec()).or_default().push((kek.to_owned(), opened));
        out
    }
}

fn usable(opened: &Opened) -> Result<Arc<Cipher>, Failure> {
    match opened {
        Ok(c) => Ok(c.clone()),
        Err(e) if e.is_retriable() => Err(Failure::Retriable),
        Err(e) => Err(Failure::Bad(e.to_string())),
    }
}

#[cfg(test)]
std::thread_local! {
    /// Batches [`batch_records`] decompressed on this thread.
    pub(super) static DECOMPRESSED: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
}

/// The records of a batch: read in place, or decompressed into `buf`. The Fetch side reads
/// batches only through here.
fn batch_records<'a: 'b, 'b>(batch: &RecordBatch<'a>, buf: &'b mut Vec<u8>) -> Result<Records<'b>, Error> {
    #[cfg(test)]
    {
        if batch.compression().is_ok_and(|c| c != crate::records::Compression::None) {
            DECOMPRESSED.with(|n| n.set(n.get() + 1));
        }
    }
    batch.records_in_vec(buf, DEFAULT_DECOMPRESSION_LIMIT)
}

/// Opens one envelope of `topic` and `key`.
async fn open(
    topic: &str,
    key: Option<&[u8]>,
    bytes: &[u8],
    ciphers: &mut Ciphers<'_>,
) -> Result<format::Plain, Failure> {
    let envelope = Envelope::parse(bytes).map_err(|e| Failure::Bad(e.to_string()))?;
    let cipher = ciphers.get(envelope.kek, envelope.wrapped).await?;
    let aad = format::associated_data(topic, key, envelope.header);
    let plain = cipher
        .open(envelope.nonce, &aad, envelope.sealed)
        .ok_or_else(|| Failure::Bad(FormatError::Tampered.to_string()))?;
    format::open_plain(envelope.flags, &plain).map_err(|e| Failure::Bad(e.to_string()))
}

/// Decrypts one record into `out_record`.
async fn decrypt_record(
    topic: &str,
    out_record: &mut OutRecord<'_>,
    ciphers: &mut Ciphers<'_>,
) -> Result<(), Failure> {
    let record = out_record.record;
    match record.value() {
        Some(value) => {
            let plain = open(topic, record.key(), value, ciphers).await?;
            let Some(v) = plain.value else {
                return Err(Failure::Bad("an envelope without its value".into()));
            };
            out_record.value = Some(v);
            out_record.keep_value = false;
            if let Some(h) = plain.headers {
                out_record.headers = h;
                out_record.keep_headers = false;
            }
        }
        None => {
            let mut found = record.headers().filter(|h| h.key == HEADERS_KEY.as_bytes());
            let Some(header) = found.next() else { return Ok(()) };
            if found.next().is_some() {
                return Err(Failure::Bad(format!("a tombstone with two {HEADERS_KEY} headers")));
            }
            let plain = open(topic, record.key(), header.value.unwrap_or_default(), ciphers).await?;
            match (plain.value, plain.headers) {
                (None, Some(h)) => {
                    out_record.headers = h;
                    out_record.keep_headers = false;
                }
                _ => return Err(Failure::Bad("a tombstone's envelope holds a value".into())),
            }
        }
    }
    Ok(())
}

/// Decrypts a Fetch partition's batches (those it cannot follow the rule's policy), each
/// batch read once.
pub(super) async fn decrypt_batches(
    records: RecordBatches<'_>,
    topic: &str,
    rule: &EncryptRule,
    ciphers: &mut Ciphers<'_>,
) -> Result<Vec<u8>, Failure> {
    let mut out = Vec::with_capacity(records.bytes().len());
    let mut batches = records;
    let (mut raw, mut scratch, mut buf) = (Vec::new(), Vec::new(), Vec::new());
    let pass = rule.on_failure == OnFailure::PassStored;
    loop {
        let before = batches.remaining();
        let Some(batch) = batches.next() else { break };
        let batch = match batch {
            Ok(b) => b,
            Err(_) if pass => {
                // What follows cannot be read: it goes on as stored (it is not plaintext
                // the proxy made; clients find the same error in it).
                out.extend_from_slice(before);
                return Ok(out);
            }
            Err(e) => return Err(Failure::Bad(e.to_string())),
        };
        if batch.is_control() {
            // Never shown to applications by Kafka's consumers (see the module's doc).
            out.extend_from_slice(batch.bytes());
            continue;
        }
        let codec = batch.compression().map_err(|e| Failure::Bad(e.to_string()))?;
        let records = match batch_records(&batch, &mut buf) {
            Ok(r) => r,
            Err(_) if pass => {
                out.extend_from_slice(batch.bytes());
                continue;
            }
            Err(e) => return Err(Failure::Bad(e.to_string())),
        };
        raw.clear();
        for record in records {
            let record = record.map_err(|e| Failure::Bad(e.to_string()))?;
            let mut out_record = OutRecord::unchanged(record);
            match decrypt_record(topic, &mut out_record, ciphers).await {
                Ok(()) => {}
                Err(Failure::Bad(why)) if pass => {
                    let mut headers: Vec<(Vec<u8>, Option<Vec<u8>>)> =
                        record.headers().map(|h| (h.key.to_vec(), h.value.map(<[u8]>::to_vec))).collect();
                    headers.push((UNDECRYPTED_KEY.as_bytes().to_vec(), Some(why.into_bytes())));
                    out_record = OutRecord::unchanged(record);
                    out_record.headers = headers;
                    out_record.keep_headers = false;
                }
                Err(e) => return Err(e),
            }
            write_record(&mut raw, &out_record, &mut scratch);
        }
        write_batch(&batch, codec, &raw, &mut out).map_err(Failure::Bad)?;
    }
    // A last batch cut short (the fetch's size limit) goes on as stored: clients drop it.
    out.extend_from_slice(batches.remaining());
    Ok(out)
}

impl Engine {
    /// A Fetch answer with every record of the ruled topics decrypted, or their partitions
    /// answered with an error.
    pub(super) async fn fetch(&self, frame: Vec<u8>, version: i16, conn: &ConnInfo) -> Decision {
        let Ok(response) = dispatch::parse_response(&frame, ApiKey::Fetch, version) else {
            return Decision::Close("a Fetch answer the decryption cannot read".into());
        };
        let ResponseBodyView::Fetch(view) = response.body else { return Decision::Forward(frame) };
        // Only records of a ruled topic, or of one the proxy cannot name, change anything.
        let touched = view.responses().iter().any(|topic| {
            let ruled = conn
                .topic_names()
                .resolve(topic.topic(), topic.topic_id())
                .map(|n| self.rule_for(&n).is_some());
            ruled != Some(false)
                && topic.partitions().iter().any(|p| p.records().is_some_and(|r| !r.bytes().is_empty()))
        });
        if !touched {
            return Decision::Forward(frame);
        }
        let mut ciphers = Ciphers::new(&self.keys);
        let header_len = response.header.as_bytes().len();
        let mut body = FetchResponse::from(view);
        let mut topics = into_vec(core::mem::replace(&mut body.responses, List::Borrowed(&[])));
        for topic in topics.iter_mut() {
            let name =
                conn.topic_names().resolve(topic.topic.as_ref(), topic.topic_id).map(|n| n.to_string());
            let rule = match &name {
                Some(n) => match self.rule_for(n) {
                    Some(r) => Some(r),
                    None => continue,
                },
                None => None,
            };
            let mut partitions = into_vec(core::mem::replace(&mut topic.partitions, List::Borrowed(&[])));
            for partition in partitions.iter_mut() {
                let Some(records) = partition.records.as_ref() else { continue };
                if records.as_slice().is_empty() {
                    continue;
                }
                let (Some(rule), Some(name)) = (rule, name.as_deref()) else {
                    // A topic the proxy cannot name may be a ruled one: its records do not
                    // reach the client undecrypted.
                    partition.error_code = ErrorCode::UnknownTopicId.to_i16();
                    partition.records = Some(List::Owned(Vec::new()));
                    continue;
                };
                let batches = RecordBatches::new(records.as_slice());
                match decrypt_batches(batches, name, rule, &mut ciphers).await {
                    Ok(bytes) => partition.records = Some(List::Owned(bytes)),
                    Err(Failure::Retriable) => {
                        partition.error_code = ErrorCode::KafkaStorageError.to_i16();
                        partition.records = Some(List::Owned(Vec::new()));
                    }
                    Err(Failure::Bad(_)) => {
                        partition.error_code = ErrorCode::CorruptMessage.to_i16();
                        partition.records = Some(List::Owned(Vec::new()));
                    }
                }
            }
            topic.partitions = List::Owned(partitions);
        }
        body.responses = List::Owned(topics);
        let encoded = body.encoded_len(version).and_then(|n| {
            let mut out = vec![0u8; header_len + n];
            body.encode(version, &mut out[header_len..]).map(|_| out)
        });
        match encoded {
            Ok(mut out) => {
                out[..header_len].copy_from_slice(&frame[..header_len]);
                Decision::Forward(out)
            }
            Err(e) => Decision::Close(format!("the decrypted Fetch answer: {e}")),
        }
    }
}
