//! The filter: [`Encryption`] (the KMS, the rules, the key policy) for
//! [`crate::proxy::ProxyBuilder::encrypt`], which makes the engine a proxy's connections
//! share (`engine.rs`), and the filters the builder installs together: a waiting filter
//! for Produce (`produce.rs`) and Fetch (`fetch.rs`), since both may ask the KMS on the
//! way, and a chain filter that refuses what the waiting filter could not encrypt.

#[allow(unused_imports)]
use std::{borrow::ToOwned, boxed::Box, format, string::String, string::ToString, sync::Arc, vec, vec::Vec};

use core::future::Future;
use core::pin::Pin;

use super::dek::{KeyPolicy, Keys};
use super::engine::Engine;
use super::fetch::{Ciphers, Failure, decrypt_batches};
use super::kms::Kms;
use super::produce::{count_records, encrypt_batches};
use super::rules::EncryptRule;
use super::write::Scratch;
use crate::ApiKey;
use crate::codec::dispatch::Request;
use crate::codec::types::Versions;
use crate::filter::{Filter, RequestAction};
use crate::proxy::{ConnInfo, Decision, Upstream, WaitingFilter, WaitingResponses};
use crate::records::RecordBatches;

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

    pub(super) fn shared(&self) -> &Arc<Engine> {
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
        let (mut out, mut scratch) = (Vec::new(), Scratch::default());
        encrypt_batches(batches, topic, rule, &mut lease, &mut out, &mut scratch)
            .map_err(RecordsError::Refused)?;
        Ok(out)
    }

    /// The record batches of one Fetch partition of `topic` as the proxy gives them to
    /// clients: every record decrypted, the rule's policy applied to those that cannot
    /// be ([`RecordsError::Refused`] for [`super::OnFailure::Error`]).
    pub async fn decrypt_records(&self, topic: &str, records: &[u8]) -> Result<Vec<u8>, RecordsError> {
        let engine = self.shared();
        let rule = engine.rule_for(topic).ok_or_else(|| RecordsError::NoRule(topic.to_string()))?;
        let batches = RecordBatches::new(records);
        let mut ciphers = Ciphers::new(&engine.keys);
        let (mut out, mut scratch) = (Vec::new(), Scratch::default());
        decrypt_batches(batches, topic, rule, &mut ciphers, &mut out, &mut scratch).await.map_err(
            |e| match e {
                Failure::Retriable => {
                    RecordsError::Unavailable("the key management service is unavailable".into())
                }
                Failure::Bad(why) => RecordsError::Refused(why),
            },
        )?;
        Ok(out)
    }

    /// The rules.
    pub fn rules(&self) -> &[EncryptRule] {
        &self.rules
    }

    /// What a running proxy shares between its connections.
    pub(crate) fn engine(self) -> Arc<Engine> {
        Arc::new(Engine::new(Keys::new(self.kms, self.policy), self.rules))
    }
}

/// The Produce side: a waiting filter, since the KMS is asked on the way.
pub(crate) struct Encrypt {
    engine: Arc<Engine>,
    conn: Arc<ConnInfo>,
    /// The connection's buffers for Produce, reused (bounded) from request to request.
    scratch: Scratch,
}

impl Encrypt {
    pub(crate) fn new(engine: Arc<Engine>, conn: Arc<ConnInfo>) -> Self {
        Encrypt { engine, conn, scratch: Scratch::default() }
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
        Box::pin(self.engine.produce(frame, &self.conn, &mut self.scratch))
    }

    fn responses(&mut self) -> Option<Box<dyn WaitingResponses>> {
        Some(Box::new(Decrypt {
            engine: self.engine.clone(),
            conn: self.conn.clone(),
            scratch: Scratch::default(),
        }))
    }
}

/// The Fetch and ShareFetch side.
struct Decrypt {
    engine: Arc<Engine>,
    conn: Arc<ConnInfo>,
    /// The connection's buffers for answers, reused (bounded) from answer to answer.
    scratch: Scratch,
}

impl WaitingResponses for Decrypt {
    fn wants_response(&self, api_key: ApiKey, _: i16) -> bool {
        // ShareFetch answers are read only in builds that read ShareFetch (else the
        // chain filter does not offer it).
        api_key == ApiKey::Fetch || (api_key == ApiKey::ShareFetch && cfg!(feature = "api-share-fetch"))
    }

    fn on_response<'a>(
        &'a mut self,
        frame: Vec<u8>,
        api_key: ApiKey,
        version: i16,
    ) -> Pin<Box<dyn Future<Output = Decision> + Send + 'a>> {
        Box::pin(self.engine.fetch(frame, api_key, version, &self.conn, &mut self.scratch))
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
        if api_key == ApiKey::ShareFetch && !cfg!(feature = "api-share-fetch") {
            // Its answers could not be decrypted.
            return None;
        }
        Some(readable)
    }
}
