//! The manual: the guides of `docs/`, here so that docs.rs shows them beside the API.
//!
//! Each page is one file of the repository's `docs/` folder, included as it is. The pages
//! hold what the API docs do not: the design and its rules, what each application does
//! and how to run it, how kwire is tested against Apache Kafka and real clients, and what
//! the benchmarks measure. Module docs link here for the long form.
//!
//! | page | what it holds |
//! |---|---|
//! | [`design`] | the layers, what each may use, the generated code, hot paths, value equality |
//! | [`conn`] | [`crate::conn`]: sans-IO connection state, pairing, acks=0, the ApiVersions fallback |
//! | [`records`] | [`crate::records`]: record batches, compression, validation, encoding around borrowed records |
//! | [`secrets`] | [`crate::secrets`]: the fields that carry credentials, and which are left out |
//! | [`serve`] | `kwire serve` and `kwire::broker` (feature `broker`): what the broker does, SCRAM and TLS, clusters |
//! | [`proxy`] | `kwire proxy` and `kwire::proxy` (feature `proxy`): filters, tenants, TLS, logs, metrics |
//! | [`cli`] | the `kwire` command: decode, encode, versions, captures |
//! | [`interop`] | the suites against real clients, brokers and Wireshark |
//! | [`kafka_codec`] | kwire's bytes and JSON against Apache Kafka's own generated codec |
//! | [`oracle`] | kwire against an independent implementation |
//! | [`fuzzing`] | the fuzz targets, what each checks, and the corpus |
//! | [`benchmarks`] | what the benchmarks measure, and their generated report |
//!
//! The pages are compiled only into the documentation (`cfg(doc)`, and not for doctests):
//! they add nothing to a build, and their examples are shell sessions and excerpts.

#[doc = include_str!("../docs/design.md")]
pub mod design {}
#[doc = include_str!("../docs/conn.md")]
pub mod conn {}
#[doc = include_str!("../docs/records.md")]
pub mod records {}
#[doc = include_str!("../docs/secrets.md")]
pub mod secrets {}
#[doc = include_str!("../docs/serve.md")]
pub mod serve {}
#[doc = include_str!("../docs/proxy.md")]
pub mod proxy {}
#[doc = include_str!("../docs/cli.md")]
pub mod cli {}
#[doc = include_str!("../docs/interop.md")]
pub mod interop {}
#[doc = include_str!("../docs/kafka-codec.md")]
pub mod kafka_codec {}
#[doc = include_str!("../docs/oracle.md")]
pub mod oracle {}
#[doc = include_str!("../docs/fuzzing.md")]
pub mod fuzzing {}
#[doc = include_str!("../docs/benchmarks.md")]
pub mod benchmarks {}
