//! Record encryption (feature `encrypt`): envelope encryption of record values through the
//! proxy, with data keys wrapped by a key-encryption key that a key management service
//! ([`Kms`]) holds, so that the brokers never hold plaintext.
//!
//! # The map
//!
//! | file | what |
//! |---|---|
//! | `kms.rs` | [`Kms`], what encryption needs of a key management service; [`MemoryKms`] for tests and demos |
//! | `aws/` | `AwsKms` (feature `encrypt-aws`): the AWS KMS API (`mod.rs` the calls and answers, `config.rs` the settings, `http.rs` the bounded HTTP/1.1 exchange) |
//! | `format.rs` | the stored form of an encrypted record ([`format`]): the envelope, its associated data, the sealed plaintext, the total parser |
//! | `dek.rs` | data keys: the current one per KEK (leases of nonces, rotation by count and age), the cache of unwrapped ones ([`KeyPolicy`]) |
//! | `rules.rs` | the rules ([`EncryptRule`]): topic patterns, KEKs, headers, [`OnFailure`] |
//! | `filter.rs` | [`Encryption`] for [`crate::proxy::ProxyBuilder::encrypt`], the waiting and chain filters (each side with its connection's scratch buffers) |
//! | `engine.rs` | what the connections share: the rules, the data keys, the refusals on their way to the chain |
//! | `produce.rs` | the Produce side: records sealed in envelopes where they go in the output (the envelope header made once per partition), partitions that cannot be refused |
//! | `fetch.rs` | the Fetch and ShareFetch side: records opened in one pass, each batch read once, values opened where they go in the output, an envelope whose header is the one before's but for the nonce not parsed again; the policies |
//! | `tests.rs` | unit tests: each batch decompressed once, control batches, ShareFetch answers, the scratch buffers' bound, data keys mixed in one batch |
//! | `write.rs` | records and batches written again straight into one output buffer, each record's length computed first; the scratch buffers a connection keeps, bounded (both sides) |
//!
//! # Choosing a KMS
//!
//! | [`Kms`] | where the KEKs live | for |
//! | --- | --- | --- |
//! | [`MemoryKms`] | in the process; lost when it exits, and with them every record | tests and demos |
//! | `AwsKms` (feature `encrypt-aws`) | AWS KMS, or a server of its API: keys by id, ARN or alias | production on AWS, or wherever an AWS-KMS-compatible service runs |
//! | your own | any service that makes and unwraps data keys (Vault's Transit engine, Azure Key Vault, an HSM) | the rest: two async methods |
//!
//! A service that cannot be reached makes calls fail with [`KmsError::Unavailable`], which
//! is retriable.
//!
//! # What is stored
//!
//! For a topic that a rule names, every record the proxy forwards in a Produce request
//! leaves with its value replaced by an envelope ([`format`]): the name of the KEK, the
//! data key wrapped by the KMS under that KEK, a nonce, and the value (and, if the rule
//! says so, the headers) sealed with AES-256-GCM under the data key. Everything else of the
//! record and its batch stays: key, timestamps, offset deltas, record count, producer id,
//! epoch and sequence, transactional and control flags; the batch is written again with
//! the client's codec and its CRC computed again. The value is compressed with that codec
//! before it is encrypted (when that makes it shorter), never after. A tombstone stays a
//! tombstone; its headers, when encrypted, travel in one header of their own.
//!
//! # Why it is safe
//!
//! - The brokers, their disks and backups hold only envelopes: without the KMS's KEK no
//!   data key opens, and without a data key no value does.
//! - The associated data binds each ciphertext to its topic, its record key and its
//!   envelope header: a record moved to another topic or key, or whose header was changed,
//!   does not open, and the rule's policy ([`OnFailure`]) applies. Nothing the proxy cannot
//!   decrypt is ever shown as if it were decrypted: it is an error for its partition, or it
//!   passes as stored with a header saying why ([`UNDECRYPTED_KEY`]).
//! - A batch marked control passes as stored under either policy, as Kafka's consumers
//!   treat it: they never give a control batch's records to the application, whatever
//!   those hold (they read them only as transaction markers, and a malformed marker is
//!   theirs to refuse), and the proxy never writes one (a Produce request holding a
//!   control batch is refused). Nothing in one is shown as if decrypted, and transaction
//!   markers reach the consumers that need them unchanged.
//! - Nonces never repeat under one data key: each data key is new to this proxy (made by
//!   the KMS at its first use and at each rotation), and its nonces are a counter.
//! - If the KMS cannot be reached, nothing is encrypted and nothing is forwarded: the
//!   Produce partitions of ruled topics are answered with KAFKA_STORAGE_ERROR, which every
//!   Kafka client retries and which says the write did not happen, and their records are
//!   taken out of the request before it goes on. A topic the proxy cannot name (Produce
//!   v13 names topics by id) is refused as well.
//! - Data keys live in memory only ([`PlainKey`] is overwritten when dropped, ring's key
//!   schedules are freed), and neither keys nor plaintext appear in a `Debug` output, a
//!   log, a metric or a recording: the proxy's hooks see Produce requests as they leave,
//!   encrypted, and Fetch and ShareFetch answers as the broker gave them, before decryption.
//!
//! # Rotation
//!
//! A data key encrypts at most [`KeyPolicy::max_records`] records for at most
//! [`KeyPolicy::max_age`]; then the next records get a new one from the KMS. Every envelope
//! names its own KEK and carries its own wrapped data key, so records written under any
//! earlier data key stay readable, and so do records written by another proxy, or before a
//! restart, as long as the KMS still holds the KEK. Rotating a KEK in the KMS (a new
//! version under the same name, as KMSs rotate) leaves old wrapped keys readable by the KMS.
//! Unwrapped data keys are cached, at most [`KeyPolicy::cache_entries`] of them for at most
//! [`KeyPolicy::cache_age`].
//!
//! # What a key loss means
//!
//! Losing a KEK (deleting it in the KMS) makes every record encrypted under it unreadable
//! for good: that is the way to shred a topic's data. Losing the KMS for a while stops
//! Produce to ruled topics and Fetch of records whose data keys are not cached, both with
//! retriable errors, until it is back. A data key is never stored unwrapped, so losing a
//! proxy loses nothing.

#[cfg(feature = "encrypt-aws")]
mod aws;
mod dek;
mod engine;
mod fetch;
mod filter;
pub mod format;
mod kms;
mod produce;
mod rules;
#[cfg(test)]
mod tests;
mod write;

#[cfg(feature = "encrypt-aws")]
pub use aws::{AwsConfigError, AwsCredentials, AwsKms, AwsKmsOptions};
pub use dek::KeyPolicy;
pub(crate) use engine::Engine;
pub(crate) use filter::{Encrypt, RefuseUnencrypted};
pub use filter::{Encryption, RecordsError};
pub use kms::{DataKey, Kms, KmsError, KmsFuture, MemoryKms, PlainKey};
pub use rules::{EncryptRule, EncryptRuleError, OnFailure, UNDECRYPTED_KEY};
