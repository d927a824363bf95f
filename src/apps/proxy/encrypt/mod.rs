//! Record encryption (feature `encrypt`): envelope encryption of record values through the
//! proxy, with data keys wrapped by a key-encryption key that a key management service
//! ([`Kms`]) holds, so that the brokers never hold plaintext.

mod kms;

pub use kms::{DataKey, Kms, KmsError, KmsFuture, MemoryKms, PlainKey};
