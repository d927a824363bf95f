//! The filter: rules per topic pattern ([`EncryptRule`]), the Produce side (encrypt every
//! record of a ruled topic before it leaves the proxy) and the Fetch side (decrypt them
//! before the client gets them), as a waiting filter and a chain filter that the proxy's
//! builder installs together ([`crate::proxy::ProxyBuilder::encrypt`]).

#[allow(unused_imports)]
use std::{borrow::ToOwned, boxed::Box, format, string::String, string::ToString, sync::Arc, vec, vec::Vec};

use core::future::Future;
use core::pin::Pin;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use super::dek::{Cipher, KeyPolicy, Keys, Lease};
use super::format::{self, Envelope, Flags, FormatError, HEADERS_KEY};
use super::kms::{Kms, KmsError};
use crate::codec::dispatch::{self, Request};
use crate::codec::messages::{FetchResponse, ProduceRequest, RequestBodyView, ResponseBodyView};
use crate::codec::types::{List, Versions};
use crate::codec::wire::varint::push_varlong;
use crate::filter::{DEFAULT_DECOMPRESSION_LIMIT, Filter, Refusals, RequestAction};
use crate::proxy::{ConnInfo, Decision, Upstream, WaitingFilter, WaitingResponses};
use crate::records::{Compression, Header, Record, RecordBatch, RecordBatches};
use crate::{ApiKey, ErrorCode};

/// The header a record passed on as stored gets ([`OnFailure::PassStored`]), with why it
/// was not decrypted: so that it is never taken for a decrypted record.
pub const UNDECRYPTED_KEY: &str = "kwire.undecrypted";

/// What a consumer-side proxy does with a record of a ruled topic that it cannot decrypt
/// (altered, moved from another topic or key, not encrypted, or its KEK refused).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OnFailure {
    /// The partition is answered with CORRUPT_MESSAGE and no records (the consumer stops
    /// there until someone acts).
    #[default]
    Error,
    /// The record passes as stored (its ciphertext), with a header [`UNDECRYPTED_KEY`]
    /// saying why.
    PassStored,
}

/// Why a rule is not one.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncryptRuleError {
    /// The topic pattern is empty or holds a character that is neither one of a Kafka
    /// topic name's nor `*`.
    Pattern(String),
    /// The KEK name is empty or longer than 255 bytes.
    Kek(String),
    /// An option that is not `headers`, `on-failure=error` or `on-failure=pass`.
    Option(String),
}

impl core::fmt::Display for EncryptRuleError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            EncryptRuleError::Pattern(p) => write!(
                f,
                "topic pattern {p:?} is not a topic name with '*' wildcards (letters, digits, '.', '_', '-', '*')"
            ),
            EncryptRuleError::Kek(k) => write!(f, "KEK name {k:?} must be 1 to 255 bytes"),
            EncryptRuleError::Option(o) => {
                write!(f, "unknown option {o:?} (headers, on-failure=error, on-failure=pass)")
            }
        }
    }
}

impl std::error::Error for EncryptRuleError {}

/// Which topics are encrypted, under which KEK, what is encrypted and what happens to a
/// record that cannot be decrypted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncryptRule {
    pattern: String,
    kek: String,
    headers: bool,
    on_failure: OnFailure,
}

impl EncryptRule {
    /// Values of the topics `pattern` matches (a topic name, `*` matching any run of
    /// characters) encrypted under the KEK named `kek`.
    pub fn new(pattern: &str, kek: &str) -> Result<EncryptRule, EncryptRuleError> {
        let ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '*');
        if pattern.is_empty() || !pattern.chars().all(ok) {
            return Err(EncryptRuleError::Pattern(pattern.to_string()));
        }
        if kek.is_empty() || kek.len() > 255 {
            return Err(EncryptRuleError::Kek(kek.to_string()));
        }
        Ok(EncryptRule {
            pattern: pattern.to_string(),
            kek: kek.to_string(),
            headers: false,
            on_failure: OnFailure::Error,
        })
    }

    /// Encrypts the records' headers too.
    pub fn with_headers(mut self, headers: bool) -> Self {
        self.headers = headers;
        self
    }

    /// What happens to a record that cannot be decrypted.
    pub fn on_failure(mut self, on_failure: OnFailure) -> Self {
        self.on_failure = on_failure;
        self
    }

    /// The topic pattern.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// The KEK's name.
    pub fn kek(&self) -> &str {
        &self.kek
    }

    /// Whether headers are encrypted.
    pub fn headers(&self) -> bool {
        self.headers
    }

    /// What happens to a record that cannot be decrypted.
    pub fn failure(&self) -> OnFailure {
        self.on_failure
    }

    /// Whether the pattern matches `topic`.
    pub fn matches(&self, topic: &str) -> bool {
        glob(self.pattern.as_bytes(), topic.as_bytes())
    }
}

/// `*` matches any run of bytes; everything else itself.
fn glob(pattern: &[u8], name: &[u8]) -> bool {
    let (mut p, mut n) = (0, 0);
    let mut back: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some(b'*') => {
                back = Some((p, n));
                p += 1;
            }
            Some(&c) if c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match back {
                Some((bp, bn)) => {
                    p = bp + 1;
                    n = bn + 1;
                    back = Some((bp, bn + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p.min(pattern.len())..].iter().all(|&c| c == b'*')
}

impl core::str::FromStr for EncryptRule {
    type Err = EncryptRuleError;

    /// `PATTERN=KEK[,headers][,on-failure=error|pass]`.
    fn from_str(s: &str) -> Result<EncryptRule, EncryptRuleError> {
        let Some((pattern, rest)) = s.split_once('=') else {
            return Err(EncryptRuleError::Kek(String::new()));
        };
        let mut parts = rest.split(',').map(str::trim);
        let mut rule = EncryptRule::new(pattern.trim(), parts.next().unwrap_or_default())?;
        for option in parts {
            match option {
                "headers" => rule.headers = true,
                "on-failure=error" => rule.on_failure = OnFailure::Error,
                "on-failure=pass" => rule.on_failure = OnFailure::PassStored,
                other => return Err(EncryptRuleError::Option(other.to_string())),
            }
        }
        Ok(rule)
    }
}

/// Record encryption for a proxy: the KMS, the rules (the first that matches a topic
/// applies) and the key policy. Give it to [`crate::proxy::ProxyBuilder::encrypt`].
#[derive(Clone)]
pub struct Encryption {
    kms: Arc<dyn Kms>,
    rules: Vec<EncryptRule>,
    policy: KeyPolicy,
    /// What [`Encryption::encrypt_records`] and [`Encryption::decrypt_records`] use (made
    /// at their first call).
    engine: std::sync::OnceLock<Arc<Engine>>,
}

/// Why [`Encryption::encrypt_records`] or [`Encryption::decrypt_records`] gave no records.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordsError {
    /// No rule names the topic.
    NoRule(String),
    /// The KMS is unavailable (worth retrying).
    Unavailable(String),
    /// The records cannot be encrypted or decrypted, for this reason.
    Refused(String),
}

impl core::fmt::Display for RecordsError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RecordsError::NoRule(t) => write!(f, "no rule names topic {t:?}"),
            RecordsError::Unavailable(why) => write!(f, "{why}"),
            RecordsError::Refused(why) => write!(f, "{why}"),
        }
    }
}

impl std::error::Error for RecordsError {}

impl core::fmt::Debug for Encryption {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Encryption").field("rules", &self.rules).field("policy", &self.policy).finish()
    }
}

impl Encryption {
    /// Encryption with data keys from `kms`, no rules yet.
    pub fn new(kms: Arc<dyn Kms>) -> Self {
        Encryption { kms, rules: Vec::new(), policy: KeyPolicy::default(), engine: Default::default() }
    }

    /// Adds a rule (after the others).
    pub fn rule(mut self, rule: EncryptRule) -> Self {
        self.rules.push(rule);
        self.engine = Default::default();
        self
    }

    /// How long data keys live and how many are kept ([`KeyPolicy::default`] otherwise).
    pub fn key_policy(mut self, policy: KeyPolicy) -> Self {
        self.policy = policy;
        self.engine = Default::default();
        self
    }

    fn shared(&self) -> &Arc<Engine> {
        self.engine.get_or_init(|| self.clone().engine())
    }

    /// The record batches of one Produce partition of `topic` (a `records` field) as the
    /// proxy forwards them: every record encrypted under the topic's rule. For tools and
    /// tests; the proxy does the same per partition.
    pub async fn encrypt_records(&self, topic: &str, records: &[u8]) -> Result<Vec<u8>, RecordsError> {
        let engine = self.shared();
        let rule = engine.rule_for(topic).ok_or_else(|| RecordsError::NoRule(topic.to_string()))?;
        let batches = RecordBatches::new(records);
        let count = count_records(&batches).map_err(RecordsError::Refused)?;
        let mut lease = engine.keys.lease(&rule.kek, count).await.map_err(|e| match e.is_retriable() {
            true => RecordsError::Unavailable(e.to_string()),
            false => RecordsError::Refused(e.to_string()),
        })?;
        encrypt_batches(batches, topic, rule, &mut lease).map_err(RecordsError::Refused)
    }

    /// The record batches of one Fetch partition of `topic` as the proxy gives them to
    /// clients: every record decrypted, the rule's policy applied to those that cannot
    /// be ([`RecordsError::Refused`] for [`OnFailure::Error`]).
    pub async fn decrypt_records(&self, topic: &str, records: &[u8]) -> Result<Vec<u8>, RecordsError> {
        let engine = self.shared();
        let rule = engine.rule_for(topic).ok_or_else(|| RecordsError::NoRule(topic.to_string()))?;
        let batches = RecordBatches::new(records);
        let mut ciphers: Ciphers = HashMap::new();
        for (kek, wrapped) in needed_keys(&batches) {
            let opened = engine.keys.open(&kek, &wrapped).await;
            ciphers.insert((kek, wrapped), opened);
        }
        decrypt_batches(batches, topic, rule, &ciphers).map_err(|e| match e {
            Failure::Retriable => {
                RecordsError::Unavailable("the key management service is unavailable".into())
            }
            Failure::Bad(why) => RecordsError::Refused(why),
        })
    }

    /// The rules.
    pub fn rules(&self) -> &[EncryptRule] {
        &self.rules
    }

    /// What a running proxy shares between its connections.
    pub(crate) fn engine(self) -> Arc<Engine> {
        Arc::new(Engine {
            keys: Keys::new(self.kms, self.policy),
            rules: self.rules,
            refusals: Mutex::default(),
        })
    }
}

/// The most Produce refusals awaiting the chain at once (past it the oldest go: their
/// partitions' records were already taken out).
const MAX_PENDING: usize = 1024;

/// What a proxy's connections share for encryption.
pub(crate) struct Engine {
    rules: Vec<EncryptRule>,
    keys: Keys,
    /// Refusals the waiting filter made, for the chain filter to carry out: by connection
    /// and correlation id.
    refusals: Mutex<VecDeque<((u64, i32), Refusals)>>,
}

impl core::fmt::Debug for Engine {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Engine").field("rules", &self.rules).finish_non_exhaustive()
    }
}

/// Why a partition is refused on Produce.
fn produce_error(e: &KmsError) -> ErrorCode {
    // KAFKA_STORAGE_ERROR: every Kafka client retries it (the producers after a metadata
    // refresh), and it says the write did not happen, so an idempotent producer's
    // sequence stays valid; the message says what is down.
    if e.is_retriable() { ErrorCode::KafkaStorageError } else { ErrorCode::PolicyViolation }
}

/// A record's value and headers on their way out.
struct OutRecord<'r> {
    value: Option<Vec<u8>>,
    keep_value: bool,
    headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    keep_headers: bool,
    record: Record<'r>,
}

fn put_nullable(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => push_varlong(out, -1),
        Some(b) => {
            push_varlong(out, b.len() as i64);
            out.extend_from_slice(b);
        }
    }
}

/// Writes a record as a batch holds it, keeping its attributes, deltas and key.
fn write_record(raw: &mut Vec<u8>, out: &OutRecord<'_>, scratch: &mut Vec<u8>) {
    let r = &out.record;
    scratch.clear();
    scratch.push(r.attributes() as u8);
    push_varlong(scratch, r.timestamp_delta());
    push_varlong(scratch, i64::from(r.offset_delta()));
    put_nullable(scratch, r.key());
    if out.keep_value {
        put_nullable(scratch, r.value());
    } else {
        put_nullable(scratch, out.value.as_deref());
    }
    if out.keep_headers {
        push_varlong(scratch, i64::from(r.header_count()));
        for h in r.headers() {
            push_varlong(scratch, h.key.len() as i64);
            scratch.extend_from_slice(h.key);
            put_nullable(scratch, h.value);
        }
    } else {
        push_varlong(scratch, out.headers.len() as i64);
        for (k, v) in &out.headers {
            push_varlong(scratch, k.len() as i64);
            scratch.extend_from_slice(k);
            put_nullable(scratch, v.as_deref());
        }
    }
    push_varlong(raw, scratch.len() as i64);
    raw.extend_from_slice(scratch);
}

/// Writes a batch like `batch` (every header field kept) around new records `raw`,
/// compressed with the batch's codec, its length and CRC recomputed.
fn write_batch(
    batch: &RecordBatch<'_>,
    codec: Compression,
    raw: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), String> {
    const HEADER: usize = 61;
    let start = out.len();
    out.extend_from_slice(batch.bytes().get(..HEADER).ok_or("a batch shorter than its header")?);
    crate::records::compression::compress(codec, raw, out).map_err(|e| e.to_string())?;
    let length = i32::try_from(out.len() - start - 12).map_err(|_| "a batch over 2 GiB".to_string())?;
    out[start + 8..start + 12].copy_from_slice(&length.to_be_bytes());
    let crc = crate::records::crc::crc32c(&out[start + 21..]);
    out[start + 17..start + 21].copy_from_slice(&crc.to_be_bytes());
    Ok(())
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
fn encrypt_batches(
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
            let mut out_record =
                OutRecord { value: None, keep_value: true, headers: Vec::new(), keep_headers: true, record };
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
fn count_records(records: &RecordBatches<'_>) -> Result<u64, String> {
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

fn into_vec<T: Clone>(list: List<'_, T>) -> Vec<T> {
    match list {
        List::Borrowed(s) => s.to_vec(),
        List::Owned(v) => v,
    }
}

/// Why a record of a Fetch answer was not decrypted.
enum Failure {
    /// The KMS is unavailable: the partition is answered with a retriable error.
    Retriable,
    /// The record cannot be decrypted: the rule's policy applies.
    Bad(String),
}

/// The data keys a Fetch answer's records need, unwrapped (or why not).
type Ciphers = HashMap<(String, Vec<u8>), Result<Arc<Cipher>, KmsError>>;

/// Opens one envelope of `topic` and `key`.
fn open(topic: &str, key: Option<&[u8]>, bytes: &[u8], ciphers: &Ciphers) -> Result<format::Plain, Failure> {
    let envelope = Envelope::parse(bytes).map_err(|e| Failure::Bad(e.to_string()))?;
    let cipher = match ciphers.get(&(envelope.kek.to_owned(), envelope.wrapped.to_vec())) {
        Some(Ok(c)) => c,
        Some(Err(e)) if e.is_retriable() => return Err(Failure::Retriable),
        Some(Err(e)) => return Err(Failure::Bad(e.to_string())),
        None => return Err(Failure::Bad("no data key".into())),
    };
    let aad = format::associated_data(topic, key, envelope.header);
    let plain = cipher
        .open(envelope.nonce, &aad, envelope.sealed)
        .ok_or_else(|| Failure::Bad(FormatError::Tampered.to_string()))?;
    format::open_plain(envelope.flags, &plain).map_err(|e| Failure::Bad(e.to_string()))
}

/// The envelopes a record carries: its value's, or a tombstone's headers'.
fn envelopes<'r>(record: &Record<'r>) -> impl Iterator<Item = &'r [u8]> {
    let value = record.value().filter(|v| format::is_envelope(v));
    let headers = record
        .value()
        .is_none()
        .then(|| record.headers().filter(|h| h.key == HEADERS_KEY.as_bytes()).filter_map(|h| h.value))
        .into_iter()
        .flatten();
    value.into_iter().chain(headers)
}

/// The data keys (KEK, wrapped key) the envelopes of these batches name, each once.
fn needed_keys(records: &RecordBatches<'_>) -> Vec<(String, Vec<u8>)> {
    let mut needed: Vec<(String, Vec<u8>)> = Vec::new();
    let mut buf = Vec::new();
    for batch in records.clone().flatten() {
        let Ok(rs) = batch.records_in_vec(&mut buf, DEFAULT_DECOMPRESSION_LIMIT) else { continue };
        for record in rs.flatten() {
            for bytes in envelopes(&record) {
                if let Ok(e) = Envelope::parse(bytes) {
                    let k = (e.kek.to_owned(), e.wrapped.to_vec());
                    if !needed.contains(&k) {
                        needed.push(k);
                    }
                }
            }
        }
    }
    needed
}

/// Decrypts one record into `out_record`.
fn decrypt_record(topic: &str, out_record: &mut OutRecord<'_>, ciphers: &Ciphers) -> Result<(), Failure> {
    let record = out_record.record;
    match record.value() {
        Some(value) => {
            let plain = open(topic, record.key(), value, ciphers)?;
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
            let plain = open(topic, record.key(), header.value.unwrap_or_default(), ciphers)?;
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

/// Decrypts a Fetch partition's batches (those it cannot follow the rule's policy).
fn decrypt_batches(
    records: RecordBatches<'_>,
    topic: &str,
    rule: &EncryptRule,
    ciphers: &Ciphers,
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
            Err(e) if pass => {
                // What follows cannot be read: it goes on as stored (it is not plaintext
                // the proxy made; clients find the same error in it).
                out.extend_from_slice(before);
                let _ = e;
                return Ok(out);
            }
            Err(e) => return Err(Failure::Bad(e.to_string())),
        };
        if batch.is_control() {
            out.extend_from_slice(batch.bytes());
            continue;
        }
        let codec = batch.compression().map_err(|e| Failure::Bad(e.to_string()))?;
        let records = match batch.records_in_vec(&mut buf, DEFAULT_DECOMPRESSION_LIMIT) {
            Ok(r) => r,
            Err(_) if pass => {
                out.extend_from_slice(batch.bytes());
                continue;
            }
            Err(e) => return Err(Failure::Bad(e.to_string())),
        };
        raw.clear();
        for record in records {
            let record = match record {
                Ok(r) => r,
                Err(e) => return Err(Failure::Bad(e.to_string())),
            };
            let mut out_record =
                OutRecord { value: None, keep_value: true, headers: Vec::new(), keep_headers: true, record };
            match decrypt_record(topic, &mut out_record, ciphers) {
                Ok(()) => {}
                Err(Failure::Bad(why)) if pass => {
                    let mut headers: Vec<(Vec<u8>, Option<Vec<u8>>)> =
                        record.headers().map(|h| (h.key.to_vec(), h.value.map(<[u8]>::to_vec))).collect();
                    headers.push((UNDECRYPTED_KEY.as_bytes().to_vec(), Some(why.into_bytes())));
                    out_record =
                        OutRecord { value: None, keep_value: true, headers, keep_headers: false, record };
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
    fn rule_for(&self, topic: &str) -> Option<&EncryptRule> {
        self.rules.iter().find(|r| r.matches(topic))
    }

    fn stash(&self, conn: u64, correlation_id: i32, refusals: Refusals) {
        let mut pending = self.refusals.lock().unwrap_or_else(|e| e.into_inner());
        if pending.len() == MAX_PENDING {
            pending.pop_front();
        }
        pending.push_back(((conn, correlation_id), refusals));
    }

    fn take(&self, conn: u64, correlation_id: i32) -> Option<Refusals> {
        let mut pending = self.refusals.lock().unwrap_or_else(|e| e.into_inner());
        let at = pending.iter().position(|(k, _)| *k == (conn, correlation_id))?;
        pending.remove(at).map(|(_, r)| r)
    }

    /// A Produce request with every record of the ruled topics encrypted; the partitions
    /// that cannot be are emptied and their refusals left for the chain filter.
    async fn produce(&self, frame: Vec<u8>, conn: &ConnInfo) -> Decision {
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

    /// A Fetch answer with every record of the ruled topics decrypted, or their partitions
    /// answered with an error.
    async fn fetch(&self, frame: Vec<u8>, version: i16, conn: &ConnInfo) -> Decision {
        let Ok(response) = dispatch::parse_response(&frame, ApiKey::Fetch, version) else {
            return Decision::Close("a Fetch answer the decryption cannot read".into());
        };
        let ResponseBodyView::Fetch(view) = response.body else { return Decision::Forward(frame) };
        let mut needed: Vec<(String, Vec<u8>)> = Vec::new();
        let mut any = false;
        for topic in view.responses().iter() {
            let rule = conn
                .topic_names()
                .resolve(topic.topic(), topic.topic_id())
                .map(|n| self.rule_for(&n).is_some());
            if rule == Some(false) {
                continue;
            }
            for partition in topic.partitions().iter() {
                let Some(records) = partition.records() else { continue };
                if records.bytes().is_empty() {
                    continue;
                }
                any = true;
                for k in needed_keys(&records) {
                    if !needed.contains(&k) {
                        needed.push(k);
                    }
                }
            }
        }
        if !any {
            return Decision::Forward(frame);
        }
        let mut ciphers: Ciphers = HashMap::new();
        for (kek, wrapped) in needed {
            let opened = self.keys.open(&kek, &wrapped).await;
            ciphers.insert((kek, wrapped), opened);
        }
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
                match decrypt_batches(RecordBatches::new(records.as_slice()), name, rule, &ciphers) {
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

/// The Produce side: a waiting filter, since the KMS is asked on the way.
pub(crate) struct Encrypt {
    engine: Arc<Engine>,
    conn: Arc<ConnInfo>,
}

impl Encrypt {
    pub(crate) fn new(engine: Arc<Engine>, conn: Arc<ConnInfo>) -> Self {
        Encrypt { engine, conn }
    }
}

impl WaitingFilter for Encrypt {
    fn wants_request(&self, api_key: ApiKey, _: i16) -> bool {
        api_key == ApiKey::Produce
    }

    fn on_request<'a>(
        &'a mut self,
        frame: Vec<u8>,
        _: &'a mut Upstream<'_>,
    ) -> Pin<Box<dyn Future<Output = Decision> + Send + 'a>> {
        Box::pin(self.engine.produce(frame, &self.conn))
    }

    fn responses(&mut self) -> Option<Box<dyn WaitingResponses>> {
        Some(Box::new(Decrypt { engine: self.engine.clone(), conn: self.conn.clone() }))
    }
}

/// The Fetch side.
struct Decrypt {
    engine: Arc<Engine>,
    conn: Arc<ConnInfo>,
}

impl WaitingResponses for Decrypt {
    fn wants_response(&self, api_key: ApiKey, _: i16) -> bool {
        api_key == ApiKey::Fetch
    }

    fn on_response<'a>(
        &'a mut self,
        frame: Vec<u8>,
        _: ApiKey,
        version: i16,
    ) -> Pin<Box<dyn Future<Output = Decision> + Send + 'a>> {
        Box::pin(self.engine.fetch(frame, version, &self.conn))
    }
}

/// The chain's part: refuses the Produce partitions the waiting filter could not encrypt
/// (their records already taken out), and serves Fetch only at versions whose answers hold
/// record batches of magic 2.
pub(crate) struct RefuseUnencrypted {
    engine: Arc<Engine>,
    conn: u64,
}

impl RefuseUnencrypted {
    pub(crate) fn new(engine: Arc<Engine>, conn: u64) -> Self {
        RefuseUnencrypted { engine, conn }
    }
}

impl Filter for RefuseUnencrypted {
    fn wants_request(&self, api_key: ApiKey, _: i16) -> bool {
        api_key == ApiKey::Produce
    }

    fn on_request<'a>(&mut self, request: &Request<'a>) -> RequestAction<'a> {
        match self.engine.take(self.conn, request.header.correlation_id()) {
            Some(refusals) => RequestAction::Refuse(refusals),
            None => RequestAction::Pass,
        }
    }

    fn wants_response(&self, _: ApiKey, _: i16) -> bool {
        false
    }

    fn versions(&self, api_key: ApiKey, readable: Versions) -> Option<Versions> {
        if api_key == ApiKey::Fetch {
            // Older Fetch versions get messages of magic 0 and 1, which carry no envelope.
            let min = readable.min.max(4);
            return (min <= readable.max).then_some(Versions { min, max: readable.max });
        }
        Some(readable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_as_globs() {
        let rule = |p: &str| EncryptRule::new(p, "k").unwrap();
        assert!(rule("orders").matches("orders"));
        assert!(!rule("orders").matches("orders2"));
        assert!(rule("orders.*").matches("orders.eu"));
        assert!(!rule("orders.*").matches("order.eu"));
        assert!(rule("*").matches("anything"));
        assert!(rule("a*b*c").matches("aXXbYYc"));
        assert!(!rule("a*b*c").matches("aXXbYY"));
        assert!(EncryptRule::new("bad topic", "k").is_err());
        assert!(EncryptRule::new("t", "").is_err());
        let parsed: EncryptRule = "pay.*=kek-1,headers,on-failure=pass".parse().unwrap();
        assert_eq!(
            parsed,
            rule("pay.*").with_headers(true).on_failure(OnFailure::PassStored).tap_kek("kek-1")
        );
        assert!("pay=kek,colour".parse::<EncryptRule>().is_err());
        assert!("pay".parse::<EncryptRule>().is_err());
    }

    impl EncryptRule {
        fn tap_kek(mut self, kek: &str) -> Self {
            self.kek = kek.to_string();
            self
        }
    }
}
