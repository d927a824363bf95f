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
use super::format::{self, Envelope, FormatError, HEADERS_KEY, NONCE_LEN, PlainHeaders, PlainRef, TAG_LEN};
use super::kms::KmsError;
use super::rules::{EncryptRule, OnFailure, UNDECRYPTED_KEY};
use super::write::{
    Scratch, finish_batch, header_len, into_vec, kept_headers_len, prefix_len, put_header, put_kept_headers,
    put_nullable, put_prefix, put_unchanged, put_with_header, records_to, slice, start_batch,
};
use crate::apps::proxy::io::{give_back_owned, owned_frame};
use crate::codec::dispatch;
use crate::codec::messages::{FetchResponse, ResponseBodyView, ShareFetchResponse};
use crate::codec::types::List;
use crate::codec::wire::varint::{push_varlong, varlong_len};
use crate::filter::DEFAULT_DECOMPRESSION_LIMIT;
use crate::proxy::{ConnInfo, Decision};
use crate::records::{Compression, Error, Record, RecordBatch, RecordBatches, Records};
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
    /// The data key found last (KEK, wrapped key), which the next records nearly always
    /// name again: compared, not hashed.
    last: Option<(String, Vec<u8>, Arc<Cipher>)>,
    /// The header, nonce aside, of an envelope whose data key is `last` and which holds a
    /// value alone, not compressed ([`Ciphers::remember`]); empty if none.
    header: Vec<u8>,
}

impl<'k> Ciphers<'k> {
    pub(super) fn new(keys: &'k Keys) -> Self {
        Ciphers { keys, opened: HashMap::new(), last: None, header: Vec::new() }
    }

    /// The data key `wrapped` holds under `kek`.
    async fn get(&mut self, kek: &str, wrapped: &[u8]) -> Result<&Cipher, Failure> {
        let hit = matches!(&self.last, Some((k, w, _)) if w[..] == *wrapped && k == kek);
        if !hit {
            let cipher = self.find(kek, wrapped).await?;
            self.last = Some((kek.to_owned(), wrapped.to_vec(), cipher));
            self.header.clear();
        }
        match &self.last {
            Some((_, _, cipher)) => Ok(&**cipher),
            None => Err(Failure::Bad("no data key".into())),
        }
    }

    /// Keeps the header of `envelope`, whose data key [`Ciphers::get`] has just given and
    /// which holds a value alone, not compressed: the next envelopes with the same header
    /// but for the nonce are known by it ([`Ciphers::known`]).
    fn remember(&mut self, envelope: &Envelope<'_>) {
        self.header.clear();
        self.header.extend_from_slice(&envelope.header[..envelope.header.len() - NONCE_LEN]);
    }

    /// The data key of the envelope `stored` and the length of its header, if that header
    /// is the remembered one but for the nonce: then it parses as that one did (a value
    /// alone, not compressed, under the same KEK and data key), and its nonce and tag fit.
    fn known(&self, stored: &[u8]) -> Option<(&Cipher, usize)> {
        let (_, _, cipher) = self.last.as_ref()?;
        let n = self.header.len();
        let fits = n > 0 && stored.len() >= n + NONCE_LEN + TAG_LEN && stored[..n] == self.header[..];
        fits.then_some((&**cipher, n + NONCE_LEN))
    }

    /// [`Ciphers::get`] through the map (and the KMS at a key's first use).
    async fn find(&mut self, kek: &str, wrapped: &[u8]) -> Result<Arc<Cipher>, Failure> {
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

/// The scratch a record is decrypted with.
struct Work<'s> {
    plain: &'s mut Vec<u8>,
    value: &'s mut Vec<u8>,
    /// Associated data, starting with the topic's part (`topic_part` bytes, written once).
    aad: &'s mut Vec<u8>,
    topic_part: usize,
}

fn bad(e: impl core::fmt::Display) -> Failure {
    Failure::Bad(e.to_string())
}

/// Opens an envelope into `plain`: its plaintext, read in place. `aad` starts with the
/// topic's part of the associated data, `topic_part` bytes.
async fn open<'w>(
    key: Option<&[u8]>,
    envelope: &Envelope<'_>,
    ciphers: &mut Ciphers<'_>,
    plain: &'w mut Vec<u8>,
    (aad, topic_part): (&mut Vec<u8>, usize),
) -> Result<PlainRef<'w>, Failure> {
    let cipher = ciphers.get(envelope.kek, envelope.wrapped).await?;
    format::associated_data_record(aad, topic_part, key, envelope.header);
    plain.clear();
    plain.extend_from_slice(envelope.sealed);
    let n = cipher.open_within(envelope.nonce, aad, plain, 0).ok_or_else(|| bad(FormatError::Tampered))?;
    PlainRef::parse(envelope.flags, &plain[..n]).map_err(bad)
}

/// The bytes headers opened from a plaintext take in a record (their count, each header).
fn plain_headers_len(h: &PlainHeaders<'_>) -> usize {
    varlong_len(h.header_count() as i64) + h.clone().map(|(k, v)| header_len(k, v)).sum::<usize>()
}

fn put_plain_headers(dst: &mut Vec<u8>, h: PlainHeaders<'_>) {
    push_varlong(dst, h.header_count() as i64);
    for (k, v) in h {
        put_header(dst, k, v);
    }
}

/// Writes one record of a ruled topic at the end of `dst`, decrypted. On an error, `dst`
/// holds part of the record: the caller cuts it off.
async fn decrypt_record(
    dst: &mut Vec<u8>,
    record: &Record<'_>,
    ciphers: &mut Ciphers<'_>,
    w: &mut Work<'_>,
) -> Result<(), Failure> {
    let start = dst.len();
    let Some(stored) = record.value() else {
        let mut found = record.headers().filter(|h| h.key == HEADERS_KEY.as_bytes());
        let Some(header) = found.next() else {
            put_unchanged(dst, record);
            return Ok(());
        };
        if found.next().is_some() {
            return Err(Failure::Bad(format!("a tombstone with two {HEADERS_KEY} headers")));
        }
        let envelope = Envelope::parse(header.value.unwrap_or_default()).map_err(bad)?;
        let plain = open(record.key(), &envelope, ciphers, w.plain, (w.aad, w.topic_part)).await?;
        let (None, Some(headers)) = (plain.value, plain.headers) else {
            return Err(Failure::Bad("a tombstone's envelope holds a value".into()));
        };
        let body = prefix_len(record) + 1 + plain_headers_len(&headers);
        put_prefix(dst, record, body);
        push_varlong(dst, -1);
        put_plain_headers(dst, headers);
        debug_assert_eq!(dst.len() - start, varlong_len(body as i64) + body);
        return Ok(());
    };
    // The records of a batch nearly always share their envelope's header but for the
    // nonce: an envelope whose header is the one before's is not parsed again, nor its data
    // key looked for.
    if ciphers.known(stored).is_none() {
        let envelope = Envelope::parse(stored).map_err(bad)?;
        let flags = envelope.flags;
        if !(flags.value() && !flags.headers() && flags.codec() == Some(Compression::None)) {
            return decrypt_opened(dst, record, &envelope, ciphers, w).await;
        }
        ciphers.get(envelope.kek, envelope.wrapped).await?;
        ciphers.remember(&envelope);
    }
    {
        // The value alone, not compressed: its length is known before it is opened, so
        // it is opened where it goes, in `dst`.
        let Some((cipher, header_len)) = ciphers.known(stored) else {
            return Err(Failure::Bad("no data key".into()));
        };
        let (header, sealed) = stored.split_at(header_len);
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(&header[header_len - NONCE_LEN..]);
        format::associated_data_record(w.aad, w.topic_part, record.key(), header);
        let len = (sealed.len() - TAG_LEN)
            .checked_sub(4)
            .ok_or_else(|| bad(FormatError::Plaintext("value length")))?;
        let body = prefix_len(record) + varlong_len(len as i64) + len + kept_headers_len(record);
        put_prefix(dst, record, body);
        push_varlong(dst, len as i64);
        // Opened in place where the value goes: the plaintext's 4 length bytes land on
        // the 4 bytes before the value (the record's own, at least 6 written since
        // `start`), which are put back after.
        let at = dst.len() - 4;
        let mut kept = [0u8; 4];
        kept.copy_from_slice(&dst[at..]);
        dst.truncate(at);
        dst.extend_from_slice(sealed);
        let opened = cipher.open_within(nonce, w.aad, &mut dst[at..], 0);
        let mut said = [0u8; 4];
        said.copy_from_slice(&dst[at..at + 4]);
        dst[at..at + 4].copy_from_slice(&kept);
        dst.truncate(at + 4 + len);
        if opened.is_none() {
            return Err(bad(FormatError::Tampered));
        }
        if u32::from_be_bytes(said) as usize != len {
            return Err(bad(FormatError::Plaintext("value length")));
        }
        put_kept_headers(dst, record);
        debug_assert_eq!(dst.len() - start, varlong_len(body as i64) + body);
        Ok(())
    }
}

/// Writes the record whose value is `envelope` (not a value alone, uncompressed) at the
/// end of `dst`, decrypted through a plaintext: [`decrypt_record`]'s other case.
async fn decrypt_opened(
    dst: &mut Vec<u8>,
    record: &Record<'_>,
    envelope: &Envelope<'_>,
    ciphers: &mut Ciphers<'_>,
    w: &mut Work<'_>,
) -> Result<(), Failure> {
    let start = dst.len();
    let plain = open(record.key(), envelope, ciphers, w.plain, (w.aad, w.topic_part)).await?;
    let Some(value) = plain.value else {
        return Err(Failure::Bad("an envelope without its value".into()));
    };
    let value = value.read(w.value).map_err(bad)?;
    let headers = match &plain.headers {
        Some(h) => plain_headers_len(h),
        None => kept_headers_len(record),
    };
    let body = prefix_len(record) + varlong_len(value.len() as i64) + value.len() + headers;
    put_prefix(dst, record, body);
    put_nullable(dst, Some(value));
    match plain.headers {
        Some(h) => put_plain_headers(dst, h),
        None => put_kept_headers(dst, record),
    }
    debug_assert_eq!(dst.len() - start, varlong_len(body as i64) + body);
    Ok(())
}

/// Decrypts a Fetch partition's batches at the end of `out` (those it cannot follow the
/// rule's policy), each batch read once, with `s`'s scratch buffers. On an error, `out`
/// is left as it was.
pub(super) async fn decrypt_batches(
    records: RecordBatches<'_>,
    topic: &str,
    rule: &EncryptRule,
    ciphers: &mut Ciphers<'_>,
    out: &mut Vec<u8>,
    s: &mut Scratch,
) -> Result<(), Failure> {
    let start = out.len();
    let result = decrypt_into(records, topic, rule, ciphers, out, s).await;
    if result.is_err() {
        out.truncate(start);
    }
    result
}

async fn decrypt_into(
    records: RecordBatches<'_>,
    topic: &str,
    rule: &EncryptRule,
    ciphers: &mut Ciphers<'_>,
    out: &mut Vec<u8>,
    s: &mut Scratch,
) -> Result<(), Failure> {
    let Scratch { raw, buf, plain, value, aad, .. } = s;
    let topic_part = format::associated_data_topic(aad, topic);
    let mut w = Work { plain, value, aad, topic_part };
    // Opened records are shorter than sealed ones (compressed batches aside).
    out.reserve(records.bytes().len());
    let mut batches = records;
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
                return Ok(());
            }
            Err(e) => return Err(bad(e)),
        };
        if batch.is_control() {
            // Never shown to applications by Kafka's consumers (see the module's doc).
            out.extend_from_slice(batch.bytes());
            continue;
        }
        let codec = batch.compression().map_err(bad)?;
        let records = match batch_records(&batch, buf) {
            Ok(r) => r,
            Err(_) if pass => {
                out.extend_from_slice(batch.bytes());
                continue;
            }
            Err(e) => return Err(bad(e)),
        };
        let at = start_batch(&batch, out).map_err(Failure::Bad)?;
        let dst = records_to(codec, out, raw);
        for record in records {
            let record = record.map_err(bad)?;
            let mark = dst.len();
            match decrypt_record(dst, &record, ciphers, &mut w).await {
                Ok(()) => {}
                Err(Failure::Bad(why)) if pass => {
                    dst.truncate(mark);
                    put_with_header(dst, &record, UNDECRYPTED_KEY.as_bytes(), why.as_bytes());
                }
                Err(e) => return Err(e),
            }
        }
        finish_batch(codec, raw, out, at).map_err(Failure::Bad)?;
    }
    // A last batch cut short (the fetch's size limit) goes on as stored: clients drop it.
    out.extend_from_slice(batches.remaining());
    Ok(())
}

/// What became of a partition's records.
enum Outcome {
    /// Decrypted, at this range of the buffer.
    Bytes(core::ops::Range<usize>),
    /// Not given: the partition is answered with this error.
    Error(ErrorCode),
}

impl Engine {
    /// Whether an answer's records need the filter: records of a ruled topic, or of one
    /// the proxy cannot name.
    fn touches(&self, mut topics: impl Iterator<Item = (Option<String>, bool)>) -> bool {
        topics.any(|(name, has_records)| {
            has_records && name.as_deref().is_none_or(|n| self.rule_for(n).is_some())
        })
    }

    /// One partition's records decrypted at the end of `out`; `name` is the topic's, if the
    /// proxy can name it. `None`: no rule names the topic, the records go as they are.
    async fn decrypt_partition(
        &self,
        name: Option<&str>,
        records: &[u8],
        ciphers: &mut Ciphers<'_>,
        out: &mut Vec<u8>,
        s: &mut Scratch,
    ) -> Option<Outcome> {
        if records.is_empty() {
            return None;
        }
        let Some(name) = name else {
            // A topic the proxy cannot name may be a ruled one: its records do not reach
            // the client undecrypted.
            return Some(Outcome::Error(ErrorCode::UnknownTopicId));
        };
        let rule = self.rule_for(name)?;
        let start = out.len();
        Some(match decrypt_batches(RecordBatches::new(records), name, rule, ciphers, out, s).await {
            Ok(()) => Outcome::Bytes(start..out.len()),
            Err(Failure::Retriable) => Outcome::Error(ErrorCode::KafkaStorageError),
            Err(Failure::Bad(_)) => Outcome::Error(ErrorCode::CorruptMessage),
        })
    }

    /// A Fetch or ShareFetch answer with every record of the ruled topics decrypted, or
    /// their partitions answered with an error.
    pub(super) async fn fetch(
        &self,
        frame: Vec<u8>,
        api_key: ApiKey,
        version: i16,
        conn: &ConnInfo,
        s: &mut Scratch,
    ) -> Decision {
        let decision = match api_key {
            ApiKey::Fetch => self.fetch_with(frame, version, conn, s).await,
            ApiKey::ShareFetch => self.share_fetch_with(frame, version, conn, s).await,
            _ => Decision::Forward(frame),
        };
        s.done();
        decision
    }

    async fn fetch_with(&self, frame: Vec<u8>, version: i16, conn: &ConnInfo, s: &mut Scratch) -> Decision {
        let Ok(response) = dispatch::parse_response(&frame, ApiKey::Fetch, version) else {
            return Decision::Close("a Fetch answer the decryption cannot read".into());
        };
        let ResponseBodyView::Fetch(view) = response.body else { return Decision::Forward(frame) };
        let name = |topic: &crate::codec::messages::fetch::FetchableTopicResponseView<'_>| {
            conn.topic_names().resolve(topic.topic(), topic.topic_id()).map(|n| n.to_string())
        };
        let touched = self.touches(view.responses().iter().map(|t| {
            (name(&t), t.partitions().iter().any(|p| p.records().is_some_and(|r| !r.bytes().is_empty())))
        }));
        if !touched {
            return Decision::Forward(frame);
        }
        let mut ciphers = Ciphers::new(&self.keys);
        let mut out = core::mem::take(&mut s.out);
        let mut outcomes: Vec<((usize, usize), Outcome)> = Vec::new();
        for (ti, topic) in view.responses().iter().enumerate() {
            let name = name(&topic);
            for (pi, partition) in topic.partitions().iter().enumerate() {
                let Some(records) = partition.records() else { continue };
                let got =
                    self.decrypt_partition(name.as_deref(), records.bytes(), &mut ciphers, &mut out, s).await;
                if let Some(outcome) = got {
                    outcomes.push(((ti, pi), outcome));
                }
            }
        }
        let header_len = response.header.as_bytes().len();
        let mut body = FetchResponse::from(view);
        apply(
            &mut body.responses,
            outcomes,
            |t| &mut t.partitions,
            |p, outcome| match outcome {
                Outcome::Bytes(range) => p.records = Some(slice(&out, range)),
                Outcome::Error(code) => {
                    p.error_code = code.to_i16();
                    p.records = Some(List::Borrowed(&[]));
                }
            },
        );
        let decision = encode_answer(
            &frame,
            header_len,
            version,
            |v| body.encoded_len(v),
            |v, b| body.encode(v, b),
            "Fetch",
        );
        drop(body);
        s.out = out;
        give_back_owned(frame);
        decision
    }

    async fn share_fetch_with(
        &self,
        frame: Vec<u8>,
        version: i16,
        conn: &ConnInfo,
        s: &mut Scratch,
    ) -> Decision {
        let Ok(response) = dispatch::parse_response(&frame, ApiKey::ShareFetch, version) else {
            return Decision::Close("a ShareFetch answer the decryption cannot read".into());
        };
        let ResponseBodyView::ShareFetch(view) = response.body else { return Decision::Forward(frame) };
        // Share groups name topics by id only.
        let name = |topic: &crate::codec::messages::share_fetch::ShareFetchableTopicResponseView<'_>| {
            conn.topic_names().resolve("", topic.topic_id()).map(|n| n.to_string())
        };
        let touched = self.touches(
            view.responses()
                .iter()
                .map(|t| (name(&t), t.partitions().iter().any(|p| !p.records().bytes().is_empty()))),
        );
        if !touched {
            return Decision::Forward(frame);
        }
        let mut ciphers = Ciphers::new(&self.keys);
        let mut out = core::mem::take(&mut s.out);
        let mut outcomes: Vec<((usize, usize), Outcome)> = Vec::new();
        for (ti, topic) in view.responses().iter().enumerate() {
            let name = name(&topic);
            for (pi, partition) in topic.partitions().iter().enumerate() {
                let records = partition.records();
                let got =
                    self.decrypt_partition(name.as_deref(), records.bytes(), &mut ciphers, &mut out, s).await;
                if let Some(outcome) = got {
                    outcomes.push(((ti, pi), outcome));
                }
            }
        }
        let header_len = response.header.as_bytes().len();
        let mut body = ShareFetchResponse::from(view);
        apply(
            &mut body.responses,
            outcomes,
            |t| &mut t.partitions,
            |p, outcome| match outcome {
                Outcome::Bytes(range) => p.records = slice(&out, range),
                Outcome::Error(code) => {
                    p.error_code = code.to_i16();
                    p.records = List::Borrowed(&[]);
                }
            },
        );
        let decision = encode_answer(
            &frame,
            header_len,
            version,
            |v| body.encoded_len(v),
            |v, b| body.encode(v, b),
            "ShareFetch",
        );
        drop(body);
        s.out = out;
        give_back_owned(frame);
        decision
    }
}

/// Gives each decrypted partition of an answer its outcome (`set`), found by the (topic,
/// partition) indexes the decryption recorded, in order; the topics and partitions it
/// touches become owned lists, the others stay as they are.
fn apply<'a, T: Clone + 'a, P: Clone + 'a>(
    topics: &mut List<'a, T>,
    outcomes: Vec<((usize, usize), Outcome)>,
    partitions: impl Fn(&mut T) -> &mut List<'a, P>,
    mut set: impl FnMut(&mut P, Outcome),
) {
    let mut owned = into_vec(core::mem::replace(topics, List::Borrowed(&[])));
    let mut outcomes = outcomes.into_iter().peekable();
    for (ti, topic) in owned.iter_mut().enumerate() {
        if outcomes.peek().is_none_or(|((t, _), _)| *t != ti) {
            continue;
        }
        let list = partitions(topic);
        let mut each = into_vec(core::mem::replace(list, List::Borrowed(&[])));
        while let Some(((_, pi), outcome)) = outcomes.next_if(|((t, _), _)| *t == ti) {
            if let Some(partition) = each.get_mut(pi) {
                set(partition, outcome);
            }
        }
        *list = List::Owned(each);
    }
    *topics = List::Owned(owned);
}

/// An answer encoded again after the header of `frame`.
fn encode_answer<E: core::fmt::Display>(
    frame: &[u8],
    header_len: usize,
    version: i16,
    len: impl Fn(i16) -> Result<usize, E>,
    encode: impl FnOnce(i16, &mut [u8]) -> Result<usize, E>,
    what: &str,
) -> Decision {
    let encoded = len(version).and_then(|n| {
        // Every byte is written (the header below): a pooled buffer needs no zeros.
        let mut out = owned_frame(header_len + n);
        let written = encode(version, &mut out[header_len..])?;
        out.truncate(header_len + written);
        Ok(out)
    });
    match encoded {
        Ok(mut out) => {
            out[..header_len].copy_from_slice(&frame[..header_len]);
            Decision::Forward(out)
        }
        Err(e) => Decision::Close(format!("the decrypted {what} answer: {e}")),
    }
}
