//! Record encryption (feature `encrypt`): envelope encryption of record values through the
//! proxy, with data keys wrapped by a key-encryption key that a key management service
//! ([`Kms`]) holds, so that the brokers never hold plaintext.
//!
//! # Choosing a KMS
//!
//! | [`Kms`] | where the KEKs live | for |
//! | --- | --- | --- |
//! | [`MemoryKms`] | in the process; lost when it exits, and with them every record | tests and demos |
//! | `AwsKms` (feature `encrypt-aws`) | AWS KMS, or a server of its API: keys by id, ARN or alias | production on AWS, or wherever an AWS-KMS-compatible service runs |
//! | your own | any service that makes and unwraps data keys (Vault's Transit engine, Azure Key Vault, an HSM) | the rest: two async methods |
//!
//! Whatever the service, losing a KEK loses every record whose data key it wrapped: records
//! carry only wrapped data keys. A service that cannot be reached makes calls fail with
//! [`KmsError::Unavailable`], which is retriable.

#[cfg(feature = "encrypt-aws")]
mod aws;
mod kms;

#[cfg(feature = "encrypt-aws")]
pub use aws::{AwsConfigError, AwsCredentials, AwsKms, AwsKmsOptions};
pub use kms::{DataKey, Kms, KmsError, KmsFuture, MemoryKms, PlainKey};
