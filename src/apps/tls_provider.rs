//! The one TLS crypto provider of kwire's TLS endpoints (the broker's listener, both sides
//! of the proxy, the AWS KMS client): rustls over *ring*. A leaf the applications share.
//!
//! Why *ring*: it is already in the tree for record encryption and SCRAM, and it builds
//! with a C compiler alone. rustls' other provider, aws-lc-rs, builds a C library of its own
//! (with cmake on some targets). rustls deprecates *ring*'s provider because *ring* has no
//! post-quantum key exchange (hybrid ML-KEM); the key exchange groups offered are X25519,
//! P-256 and P-384. Kafka's Java clients and brokers (JDK 17) do not offer a post-quantum
//! group either. The deprecation is acknowledged here, in this one place, and nowhere else.

use std::sync::Arc;

use rustls::crypto::CryptoProvider;

/// rustls' *ring* provider, with its default cipher suites and key exchange groups.
pub(crate) fn tls_provider() -> Arc<CryptoProvider> {
    #[allow(deprecated)] // no post-quantum key exchange in *ring*: see the module doc
    Arc::new(rustls::crypto::ring::default_provider())
}
