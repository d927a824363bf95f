//! Record encryption (feature `encrypt`): envelope encryption of record values through the
//! proxy, with data keys wrapped by a key-encryption key that a key management service
//! ([`Kms`]) holds, so that the brokers never hold plaintext.

#[cfg(feature = "encrypt-aws")]
mod aws;
mod kms;

#[cfg(feature = "encrypt-aws")]
pub use aws::{AwsConfigError, AwsCredentials, AwsKms, AwsKmsOptions};
pub use kms::{DataKey, Kms, KmsError, KmsFuture, MemoryKms, PlainKey};
