//! Why a [`Client`](super::Client) call failed, and the errors its calls make.

use core::fmt;
use std::io;
use std::string::{String, ToString};

use crate::ApiKey;

use crate::codec::error_code::ErrorCode;
use crate::session::conn::ConnError;

/// Why a [`Client`] call failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The socket failed, timed out ([`io::ErrorKind::WouldBlock`] or `TimedOut`), or the
    /// broker closed the connection ([`io::ErrorKind::UnexpectedEof`]).
    Io(io::Error),
    /// A request could not be encoded, or a response frame could not be read (too large,
    /// malformed, not the answer expected).
    Conn(ConnError),
    /// A record batch could not be built, or a fetched one read.
    Records(crate::codec::records::Error),
    /// The broker answered with an error code.
    Kafka {
        /// The API that failed.
        api: ApiKey,
        /// The error code (see [`Error::error_code`] for the typed one).
        code: i16,
        /// The topic it concerns, if one.
        topic: Option<String>,
        /// The partition it concerns, if one.
        partition: Option<i32>,
        /// The group it concerns, if one.
        group: Option<String>,
        /// The broker's message, if it sent one.
        message: Option<String>,
    },
    /// The broker and this client share no version of an API (or the broker does not
    /// list it).
    NoSharedVersion(ApiKey),
    /// The answer does not hold what was asked (e.g. not the partition asked for).
    Unexpected(String),
}

impl Error {
    /// The Kafka error code of an [`Error::Kafka`], if this crate knows it.
    pub fn error_code(&self) -> Option<ErrorCode> {
        match self {
            Error::Kafka { code, .. } => ErrorCode::from_i16(*code),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => write!(f, "I/O: {e}"),
            Error::Conn(e) => write!(f, "protocol: {e}"),
            Error::Records(e) => write!(f, "record batch: {e}"),
            Error::Kafka { api, code, topic, partition, group, message } => {
                write!(f, "{}", api.name())?;
                if let Some(g) = group {
                    write!(f, " of group {g}")?;
                }
                match (topic, partition) {
                    (Some(t), Some(p)) => write!(f, " of {t}/{p}")?,
                    (Some(t), None) => write!(f, " of {t}")?,
                    _ => {}
                }
                match ErrorCode::from_i16(*code) {
                    Some(e) => write!(f, ": {} ({code})", e.name())?,
                    None => write!(f, ": error code {code}")?,
                }
                match message {
                    Some(m) if !m.is_empty() => write!(f, ": {m}"),
                    _ => Ok(()),
                }
            }
            Error::NoSharedVersion(key) => {
                write!(f, "the broker and kwire share no version of {}", key.name())
            }
            Error::Unexpected(what) => write!(f, "unexpected answer: {what}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(e) => Some(e),
            Error::Conn(e) => Some(e),
            Error::Records(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(e)
    }
}

impl From<ConnError> for Error {
    fn from(e: ConnError) -> Self {
        Error::Conn(e)
    }
}

impl From<crate::codec::records::Error> for Error {
    fn from(e: crate::codec::records::Error) -> Self {
        Error::Records(e)
    }
}

pub(super) fn kafka(
    api: ApiKey,
    code: i16,
    topic: Option<&str>,
    partition: Option<i32>,
    group: Option<&str>,
) -> Error {
    Error::Kafka {
        api,
        code,
        topic: topic.map(String::from),
        partition,
        group: group.map(String::from),
        message: None,
    }
}

/// `Ok` for error code 0, else the [`Error::Kafka`] with its context.
pub(super) fn check(
    api: ApiKey,
    code: i16,
    topic: Option<&str>,
    partition: Option<i32>,
    group: Option<&str>,
    message: Option<&str>,
) -> Result<(), Error> {
    if code == 0 {
        return Ok(());
    }
    let mut e = kafka(api, code, topic, partition, group);
    if let Error::Kafka { message: m, .. } = &mut e {
        *m = message.map(String::from);
    }
    Err(e)
}

pub(super) fn unexpected(api: ApiKey) -> Error {
    Error::Unexpected(std::format!("not a {} response", api.name()))
}

pub(super) fn missing(api: ApiKey, topic: &str, partition: Option<i32>) -> Error {
    let what = match partition {
        Some(p) => std::format!("{topic}/{p}"),
        None => topic.to_string(),
    };
    Error::Unexpected(std::format!("the {} response does not answer for {what}", api.name()))
}
