//! `ApiKey`: which API a frame belongs to, with the facts of every API (key, versions,
//! header versions). It sits below framing, encoding and the messages, which all use it;
//! its table is generated (`table.rs`, from `src/codec/schema`), the conversions are here.

mod table;

pub use table::ApiKey;

use core::fmt;

use crate::codec::types::Versions;

impl ApiKey {
    /// The key on the wire.
    pub const fn to_i16(self) -> i16 {
        self as i16
    }

    /// The request header version for `version`: 2 for flexible versions, else 1.
    pub const fn request_header_version(self, version: i16) -> i16 {
        if self.flexible_versions().contains(version) { 2 } else { 1 }
    }

    /// The API of a name as [`ApiKey::name`] spells it, in any case and with any `-` or `_`
    /// between its words (`ApiVersions`, `api-versions`, `API_VERSIONS`).
    pub fn from_name(name: &str) -> Option<ApiKey> {
        let wanted = || name.bytes().filter(u8::is_ascii_alphanumeric).map(|b| b.to_ascii_lowercase());
        ApiKey::ALL.iter().copied().find(|k| k.name().bytes().map(|b| b.to_ascii_lowercase()).eq(wanted()))
    }

    /// What an ApiVersions answer advertises for the versions `served` of this API, as Apache
    /// Kafka's brokers advertise it: `served`, except that Produce's minimum is 0 whenever
    /// its lowest readable version is served. Kafka 4.x advertises Produce 0-13 although it
    /// refuses versions 0 to 2 (closing the connection, as for any version it does not read),
    /// because older librdkafka releases (2.0.2 among them) turn compression off when Produce's advertised
    /// minimum is above 0. So a version advertised is not always a version served: serve
    /// `served`, advertise this.
    pub const fn advertised(self, served: Versions) -> Versions {
        match self {
            ApiKey::Produce if !served.is_empty() && served.min == self.request_versions().min => {
                Versions::new(0, served.max)
            }
            _ => served,
        }
    }

    /// The response header version for `version`: 1 for flexible versions, else 0; always 0
    /// for ApiVersions, whose response header never changes so that any client can read it.
    pub const fn response_header_version(self, version: i16) -> i16 {
        match self {
            ApiKey::ApiVersions => 0,
            _ if self.flexible_versions().contains(version) => 1,
            _ => 0,
        }
    }
}

/// An `i16` that is no API key this crate knows (the error of `ApiKey::try_from`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UnknownApiKey(pub i16);

impl fmt::Display for UnknownApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown API key {}", self.0)
    }
}

impl core::error::Error for UnknownApiKey {}

impl TryFrom<i16> for ApiKey {
    type Error = UnknownApiKey;

    fn try_from(key: i16) -> Result<ApiKey, UnknownApiKey> {
        ApiKey::from_i16(key).ok_or(UnknownApiKey(key))
    }
}

impl From<ApiKey> for i16 {
    fn from(key: ApiKey) -> i16 {
        key.to_i16()
    }
}
