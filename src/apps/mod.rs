//! Layer 5, applications: programs as libraries, with I/O. They may use every layer below
//! ([`codec`](crate::codec), [`session`](crate::session), `tools`, `filter`), never each
//! other.
//!
//! - `broker` (feature `broker`): an in-process Kafka broker;
//! - `proxy` (feature `proxy`): a Kafka proxy on tokio with a filter chain per connection;
//! - `capture` (feature `capture`): Kafka traffic from packet captures;
//! - `client` (feature `client`): a small blocking Kafka client for tests and tools.

#[cfg(feature = "broker")]
pub mod broker;
#[cfg(feature = "capture")]
pub mod capture;
#[cfg(feature = "client")]
pub mod client;
#[cfg(feature = "proxy")]
pub mod proxy;
#[cfg(any(feature = "broker-tls", feature = "proxy"))]
mod tls_provider;
