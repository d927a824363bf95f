//! Sans-IO connection state: what a broker, a client or a proxy keeps per connection,
//! without any I/O (feature `alloc`). See [`manual::conn`](crate::manual::conn) for the design.
//!
//! - [`FrameBuf`] splits a byte stream into frames, bounded in size and memory.
//! - [`InFlight`] pairs responses with the requests they answer, bounded, in order.
//! - [`ServerConn`] is a broker's side: bytes in, typed requests out, responses encoded with
//!   the right header; [`ClientConn`] is a client's side: requests encoded with fresh
//!   correlation ids, bytes in, typed responses out paired with their requests, with the
//!   ApiVersions fallback Kafka's clients use.
//! - [`metrics`] (feature `std`): counters by API and version, latency histograms and
//!   connection counts for a broker or proxy, rendered in the Prometheus text format.
//! - [`expects_response`] and [`frame_expects_response`] say which requests get no
//!   answer (Produce with `acks = 0`).
//!
//! The caller owns the sockets, the clock and the output buffers. A broker and a client
//! talking through byte buffers:
//!
//! ```
//! use kwire::ApiKey;
//! use kwire::conn::{ClientConn, Received, ServerConn};
//! use kwire::messages::api_versions::{ApiVersion, ApiVersionsRequest, ApiVersionsResponse};
//! use kwire::messages::{RequestBodyView, ResponseBodyView};
//!
//! let mut client: ClientConn = ClientConn::new(Some("my-client"));
//! let mut server = ServerConn::new();
//!
//! // The client encodes a request; its bytes go to the broker.
//! let mut to_server = Vec::new();
//! let sent = client.encode_request(&ApiVersionsRequest::default(), 3, (), &mut to_server)?;
//! server.feed(&to_server);
//!
//! // The broker reads it and answers.
//! let mut to_client = Vec::new();
//! while let Some(received) = server.next_request()? {
//!     let Received::Request(request) = received else { unreachable!() };
//!     assert_eq!(request.header.client_id(), Some("my-client"));
//!     assert!(matches!(request.body, RequestBodyView::ApiVersions(_)));
//!     let keys = [ApiVersion { api_key: ApiKey::ApiVersions.to_i16(), min_version: 0, max_version: 4, ..Default::default() }];
//!     let body = ApiVersionsResponse { api_keys: (&keys).into(), ..Default::default() };
//!     ServerConn::encode_response(request.reply_to(), &body, &mut to_client)?;
//! }
//!
//! // The client reads the answer, paired with its request.
//! client.feed(&to_client);
//! let response = client.next_response()?.expect("a whole response");
//! assert_eq!(response.correlation_id, sent.correlation_id);
//! assert_eq!((response.api_key, response.version), (ApiKey::ApiVersions, 3));
//! let ResponseBodyView::ApiVersions(body) = response.body else { unreachable!() };
//! assert_eq!(body.api_keys().len(), 1);
//! # Ok::<(), kwire::conn::ConnError>(())
//! ```

mod client;
mod frame_buf;
mod in_flight;
#[cfg(feature = "std")]
pub mod metrics;
mod server;
#[cfg(feature = "tokio")]
pub mod tokio;

pub use client::{
    ApiVersionsOutcome, ClientConn, ClientResponse, Sent, api_versions_outcome, read_response, shared_version,
};
pub use frame_buf::{DEFAULT_BASE_CAPACITY, FrameBuf};
pub use in_flight::{DEFAULT_MAX_IN_FLIGHT, InFlight, Pending};
pub use server::{Received, ReplyTo, ServerConn, ServerRequest};

/// Re-exported from [`crate::codec::frame`], where frames are read.
pub use crate::codec::frame::frame_expects_response;

use core::fmt;

use crate::ApiKey;
use crate::codec::error::{DecodeError, EncodeError};
use crate::codec::frame::FrameError;
use crate::codec::messages::RequestBodyView;

/// Why a connection's state machine refused input or a call: the one error type of `conn`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnError {
    /// A frame could not be split, or its header or body parsed; or its API or version is
    /// not supported. A bad size prefix ends the stream (it sticks, see [`FrameBuf`]);
    /// the others concern one frame, already consumed.
    Frame(FrameError),
    /// A request or response could not be encoded.
    Encode(EncodeError),
    /// The in-flight table is full: wait for responses before sending more.
    InFlightFull {
        /// The table's bound.
        capacity: usize,
    },
    /// A response's correlation id is that of no request in flight.
    UnknownCorrelationId {
        /// The id the response carries.
        correlation_id: i32,
    },
    /// A response answers a request sent after one still unanswered: Kafka answers in
    /// order, so the peer broke the protocol.
    OutOfOrder {
        /// The oldest request's id, which the response should have carried.
        expected: i32,
        /// The id it carries.
        correlation_id: i32,
    },
    /// A response was encoded for a request that gets none (Produce with `acks = 0`).
    NoResponseExpected {
        /// The request's correlation id.
        correlation_id: i32,
    },
    /// A response body's API is not the request's.
    WrongApi {
        /// The request's API.
        expected: ApiKey,
        /// The body's API.
        api_key: ApiKey,
    },
}

impl From<FrameError> for ConnError {
    fn from(e: FrameError) -> Self {
        ConnError::Frame(e)
    }
}

impl From<DecodeError> for ConnError {
    fn from(e: DecodeError) -> Self {
        ConnError::Frame(FrameError::Decode(e))
    }
}

impl From<EncodeError> for ConnError {
    fn from(e: EncodeError) -> Self {
        ConnError::Encode(e)
    }
}

impl fmt::Display for ConnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnError::Frame(e) => e.fmt(f),
            ConnError::Encode(e) => e.fmt(f),
            ConnError::InFlightFull { capacity } => {
                write!(f, "{capacity} requests are in flight, the most this connection allows")
            }
            ConnError::UnknownCorrelationId { correlation_id } => {
                write!(f, "no request with correlation id {correlation_id} awaits a response")
            }
            ConnError::OutOfOrder { expected, correlation_id } => write!(
                f,
                "response with correlation id {correlation_id} arrived before the answer to {expected}"
            ),
            ConnError::NoResponseExpected { correlation_id } => {
                write!(f, "request {correlation_id} gets no response (Produce with acks=0)")
            }
            ConnError::WrongApi { expected, api_key } => {
                write!(f, "a {} response body answers a {} request", api_key.name(), expected.name())
            }
        }
    }
}

impl core::error::Error for ConnError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            ConnError::Frame(e) => Some(e),
            ConnError::Encode(e) => Some(e),
            _ => None,
        }
    }
}

/// Whether a request gets a response: every request does except Produce with `acks = 0`.
pub fn expects_response(body: &RequestBodyView<'_>) -> bool {
    match body {
        #[cfg(feature = "api-produce")]
        RequestBodyView::Produce(p) => p.acks() != 0,
        _ => true,
    }
}
