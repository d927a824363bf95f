//! What the reader reports: [`Event`]s, each captured [`Frame`] with its typed view, the
//! capture's [`Timestamp`]s and why a frame was [`Cut`].

use std::format;
use std::prelude::rust_2024::*;

use std::fmt;
use std::net::SocketAddr;

use crate::{ApiKey, Direction};

/// A capture timestamp: seconds and nanoseconds since the Unix epoch (UTC), with the
/// capture's precision.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    /// Seconds since 1970-01-01T00:00:00Z.
    pub secs: i64,
    /// Nanoseconds in the second.
    pub nanos: u32,
    /// Fraction digits the capture's precision gives: 3, 6 or 9.
    pub digits: u8,
}

impl Timestamp {
    /// Nanoseconds since the epoch.
    pub fn as_nanos(&self) -> i128 {
        i128::from(self.secs) * 1_000_000_000 + i128::from(self.nanos)
    }
}

impl fmt::Display for Timestamp {
    /// RFC 3339 in UTC, with the capture's precision: `2026-12-03T02:50:01.123456Z`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", crate::codec::civil::Utc::from_unix(self.secs))?;
        match self.digits {
            0..=3 => write!(f, ".{:03}Z", self.nanos / 1_000_000),
            4..=6 => write!(f, ".{:06}Z", self.nanos / 1_000),
            _ => write!(f, ".{:09}Z", self.nanos),
        }
    }
}

/// Why a frame is not whole in the capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cut {
    /// Bytes of the frame are missing: lost by the capture, or cut by its snaplen.
    Gap,
    /// The capture ends before the frame does.
    EndOfCapture,
    /// The connection closed (FIN or RST) before the frame ended.
    Closed,
    /// The frame is larger than [`Limits::max_frame`](super::Limits::max_frame): only its
    /// first bytes are held.
    TooLarge,
    /// The reader's total memory bound ([`Limits::max_total`](super::Limits::max_total)) was
    /// reached: the frame in progress was given up.
    MemoryLimit,
}

impl fmt::Display for Cut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Cut::Gap => "bytes missing from the capture",
            Cut::EndOfCapture => "the capture ends inside it",
            Cut::Closed => "the connection closed inside it",
            Cut::TooLarge => "larger than the frame size limit",
            Cut::MemoryLimit => "given up at the memory limit",
        })
    }
}

/// The request a response answers, as the capture showed it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RequestOf {
    /// The request's [`Frame::index`].
    pub index: u64,
    /// When the request was read whole (or cut).
    pub ts: Timestamp,
    /// Its size in bytes, size prefix included.
    pub size: usize,
    /// Its client id.
    pub client_id: Option<String>,
}

/// A Kafka frame in the capture.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Frame {
    /// The frame's number in the capture, from 1 (`kwire decode --frame N`).
    pub index: u64,
    /// The connection's number in the capture, from 1.
    pub conn: u64,
    /// The client's address.
    pub client: SocketAddr,
    /// The broker's address.
    pub broker: SocketAddr,
    /// Request (client to broker) or response.
    pub direction: Direction,
    /// The time of the packet that completed the frame (or that held its last bytes).
    pub ts: Timestamp,
    /// The size the frame's prefix declares (bytes after the prefix), when captured.
    pub size: Option<u32>,
    /// The correlation id, when captured.
    pub correlation_id: Option<i32>,
    /// The API key as on the wire: a request's own; a response's request's (`None` when
    /// unpaired). [`Frame::api`] gives it as an [`ApiKey`].
    pub api_key: Option<i16>,
    /// The API version, as [`Frame::api_key`].
    pub api_version: Option<i16>,
    /// The client id of the request (a response's request's).
    pub client_id: Option<String>,
    /// `None`: [`Frame::bytes`] is the whole frame. Otherwise why it is not: the bytes are
    /// then those the capture holds from the frame's start to its first missing byte.
    pub cut: Option<Cut>,
    /// For a paired response: its request.
    pub request: Option<RequestOf>,
    /// The frame with its size prefix (see [`Frame::cut`]); [`Frame::payload`] is the
    /// frame without it.
    pub bytes: Vec<u8>,
}

impl Frame {
    /// Whether this is a response whose request is not in the capture.
    pub fn is_unpaired(&self) -> bool {
        self.direction == Direction::Response && self.request.is_none()
    }

    /// Whether the frame is whole (and so can be decoded).
    pub fn is_whole(&self) -> bool {
        self.cut.is_none()
    }

    /// The API, when kwire knows its key: a request's own, a paired response's request's.
    /// `None` for an unpaired response, and for a key kwire does not know, which
    /// [`Frame::api_key`] still holds as it was on the wire.
    pub fn api(&self) -> Option<ApiKey> {
        self.api_key.and_then(ApiKey::from_i16)
    }

    /// Whether a request expects a response: false for a Produce with `acks=0`; true for
    /// any other frame, and for one too short to say.
    pub fn expects_response(&self) -> bool {
        self.bytes.get(4..).is_none_or(|f| crate::codec::frame::frame_expects_response(f).unwrap_or(true))
    }

    /// The frame after its 4-byte size prefix (header and body), as
    /// [`dispatch::parse_request`](crate::dispatch::parse_request) and
    /// [`dispatch::parse_response`](crate::dispatch::parse_response) take it; for a cut
    /// frame, the bytes the capture holds of it.
    pub fn payload(&self) -> &[u8] {
        self.bytes.get(4..).unwrap_or_default()
    }

    /// The frame as its typed request or response view, in one call.
    pub fn view(&self) -> Result<FrameView<'_>, ViewError> {
        if let Some(cut) = self.cut {
            return Err(ViewError::Cut(cut));
        }
        match self.direction {
            Direction::Request => crate::dispatch::parse_request(self.payload())
                .map(FrameView::Request)
                .map_err(ViewError::Frame),
            Direction::Response => {
                let (Some(key), Some(version)) = (self.api_key, self.api_version) else {
                    return Err(ViewError::Unpaired);
                };
                let api = ApiKey::from_i16(key).ok_or(ViewError::UnknownApi(key))?;
                crate::dispatch::parse_response(self.payload(), api, version)
                    .map(FrameView::Response)
                    .map_err(ViewError::Frame)
            }
        }
    }
}

#[cfg(feature = "json")]
impl Frame {
    /// What the capture says of the frame, as one JSON object: index, time, connection,
    /// addresses, direction, correlation id, API, client id, size, why it is cut and, for
    /// a paired response, its request's index and the latency. `kwire decode --format
    /// json` of a capture adds the frame's tree, its records and its problem (docs/cli.md).
    pub fn to_json(&self) -> serde_json::Value {
        let mut obj = serde_json::json!({
            "index": self.index,
            "ts": self.ts.to_string(),
            "conn": self.conn,
            "client": self.client.to_string(),
            "broker": self.broker.to_string(),
            "direction": self.direction.name(),
            "correlationId": self.correlation_id,
            "apiKey": self.api_key,
            "apiName": self.api().map(|k| k.name()),
            "apiVersion": self.api_version,
            "clientId": self.client_id,
            "size": self.size.map(|s| u64::from(s) + 4),
            "cut": self.cut.map(|c| c.to_string()),
        });
        if let Some(r) = &self.request {
            obj["requestIndex"] = serde_json::json!(r.index);
            obj["latencyUs"] = serde_json::json!((self.ts.as_nanos() - r.ts.as_nanos()) / 1000);
        }
        obj
    }
}

#[cfg(feature = "explain")]
impl Frame {
    /// What the frame is, for [`crate::reflect::explain`]: a request, or a response to its
    /// request's API and version (`None` for an unpaired response, or one to an API key
    /// kwire does not know).
    pub fn explain_kind(&self) -> Option<crate::reflect::explain::FrameKind> {
        use crate::reflect::explain::FrameKind;
        match self.direction {
            Direction::Request => Some(FrameKind::Request),
            Direction::Response => Some(FrameKind::Response(self.api()?, self.api_version?)),
        }
    }
}

/// A captured frame's typed view ([`Frame::view`]).
#[derive(Clone, Copy, Debug)]
pub enum FrameView<'a> {
    /// A request: its header and body.
    Request(crate::dispatch::Request<'a>),
    /// A response, read as the answer to its request's API and version.
    Response(crate::dispatch::Response<'a>),
}

/// Why a captured frame has no typed view ([`Frame::view`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ViewError {
    /// The capture lacks some of its bytes.
    Cut(Cut),
    /// A response whose request is not in the capture: what it answers is not known.
    Unpaired,
    /// A response to an API key kwire does not know.
    UnknownApi(i16),
    /// The bytes do not decode.
    Frame(crate::frame::FrameError),
}

impl fmt::Display for ViewError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ViewError::Cut(c) => write!(f, "the frame is cut ({c})"),
            ViewError::Unpaired => f.write_str("a response whose request is not in the capture"),
            ViewError::UnknownApi(k) => write!(f, "a response to API key {k}, which kwire does not know"),
            ViewError::Frame(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ViewError {}

/// What reading a capture shows.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// A Kafka frame (whole or cut; paired or not).
    Frame(Frame),
    /// `bytes` bytes of a direction of a Kafka connection are not in the capture.
    Gap {
        /// The connection.
        conn: u64,
        /// Its client.
        client: SocketAddr,
        /// Its broker.
        broker: SocketAddr,
        /// The direction that lost the bytes.
        direction: Direction,
        /// When the loss was seen.
        ts: Timestamp,
        /// How many bytes are missing.
        bytes: u64,
    },
    /// The capture joined a Kafka connection after its start: reading begins at the first
    /// plausible frame, after `skipped` bytes.
    JoinedLate {
        /// The connection.
        conn: u64,
        /// Its client.
        client: SocketAddr,
        /// Its broker.
        broker: SocketAddr,
        /// The direction.
        direction: Direction,
        /// When the frame boundary was found.
        ts: Timestamp,
        /// Bytes skipped before it.
        skipped: u64,
    },
    /// A direction lost track of frame boundaries (a gap over a size prefix, an
    /// impossible size) and found the next plausible frame after `skipped` bytes.
    Resynchronised {
        /// The connection.
        conn: u64,
        /// Its client.
        client: SocketAddr,
        /// Its broker.
        broker: SocketAddr,
        /// The direction.
        direction: Direction,
        /// When the frame boundary was found.
        ts: Timestamp,
        /// Bytes skipped before it (gaps included).
        skipped: u64,
    },
    /// The capture file ends inside a record, or is corrupt from here on: reading stops.
    FileCut {
        /// What is wrong.
        message: String,
    },
    /// Something skipped or limited, in words (a packet that could not be read, a limit).
    Note {
        /// When.
        ts: Timestamp,
        /// What.
        message: String,
    },
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dir = |d: &Direction| match d {
            Direction::Request => "requests",
            Direction::Response => "responses",
        };
        match self {
            Event::Frame(fr) => write!(
                f,
                "{} connection {} {} -> {}: {:?} frame {}{}",
                fr.ts,
                fr.conn,
                fr.client,
                fr.broker,
                fr.direction,
                fr.index,
                fr.cut.map(|c| format!(" (cut: {c})")).unwrap_or_default()
            ),
            Event::Gap { conn, client, broker, direction, ts, bytes } => write!(
                f,
                "{ts} connection {conn} {client} -> {broker}: {bytes} bytes of the {} are not in the capture",
                dir(direction)
            ),
            Event::JoinedLate { conn, client, broker, direction, ts, skipped } => write!(
                f,
                "{ts} connection {conn} {client} -> {broker}: the capture joined it late; {} read from the first \
                 plausible frame, after {skipped} bytes",
                dir(direction)
            ),
            Event::Resynchronised { conn, client, broker, direction, ts, skipped } => write!(
                f,
                "{ts} connection {conn} {client} -> {broker}: {} resynchronised at the next plausible frame, \
                 after {skipped} bytes",
                dir(direction)
            ),
            Event::FileCut { message } => f.write_str(message),
            Event::Note { ts, message } => write!(f, "{ts} {message}"),
        }
    }
}
