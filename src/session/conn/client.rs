//! [`ClientConn`]: a client's side of a connection, and the ApiVersions fallback.

use alloc::string::String;
use alloc::vec::Vec;

use super::{ConnError, FrameBuf, InFlight, frame_expects_response};
use crate::ApiKey;
use crate::codec::dispatch::{self, Response};
use crate::codec::encode::AnyBody;
use crate::codec::error_code::ErrorCode;
use crate::codec::frame::{DEFAULT_MAX_FRAME_SIZE, FrameError, RequestHeader, ResponseHeaderView};
use crate::codec::messages::ResponseBodyView;
use crate::codec::messages::api_versions::ApiVersionsResponseView;
use crate::codec::types::Versions;

/// The last correlation id [`ClientConn`] assigns before wrapping to 0: Kafka's clients
/// keep `i32::MAX - 7 ..= i32::MAX` for SASL re-authentication.
const LAST_CORRELATION_ID: i32 = i32::MAX - 8;

/// A request [`ClientConn`] encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sent {
    /// The correlation id it was given.
    pub correlation_id: i32,
    /// The frame's length, size prefix included.
    pub len: usize,
    /// Whether it awaits a response (is in the in-flight table); false for a Produce with
    /// `acks = 0`, which is done once sent.
    pub expects_response: bool,
}

/// A response [`ClientConn`] read, paired with its request.
#[derive(Debug)]
pub struct ClientResponse<'a, T = ()> {
    /// The correlation id.
    pub correlation_id: i32,
    /// The request's API.
    pub api_key: ApiKey,
    /// The version the request was sent at.
    pub requested_version: i16,
    /// The version the body was read at: the requested one, or 0 when an ApiVersions
    /// response could only be read as version 0 (see [`read_response`]).
    pub version: i16,
    /// The header.
    pub header: ResponseHeaderView<'a>,
    /// The body.
    pub body: ResponseBodyView<'a>,
    /// The payload the request was sent with.
    pub payload: T,
    /// The whole frame after its size prefix.
    pub frame: &'a [u8],
}

impl<T> ClientResponse<'_, T> {
    /// For an ApiVersions response, what the client does next ([`api_versions_outcome`]).
    pub fn api_versions_outcome(&self) -> Option<ApiVersionsOutcome> {
        match &self.body {
            ResponseBodyView::ApiVersions(body) => Some(api_versions_outcome(self.requested_version, body)),
            // Unreachable in a build with only ApiVersions.
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }
}

/// Parses a response frame (after its size prefix) to a request of `api_key` at `version`
/// as Kafka's clients do, and returns it with the version its body was read at.
///
/// The one difference from [`dispatch::parse_response`] is Kafka's ApiVersions fallback: a
/// broker that does not serve the ApiVersions version asked for answers with a version-0
/// body (error UNSUPPORTED_VERSION, listing the versions it serves), so an ApiVersions
/// response that cannot be read at the version asked for is read again as version 0
/// (Apache Kafka's `ApiVersionsResponse.parse`). If that fails too, the first error is
/// returned.
pub fn read_response(frame: &[u8], api_key: ApiKey, version: i16) -> Result<(Response<'_>, i16), FrameError> {
    match dispatch::parse_response(frame, api_key, version) {
        Ok(r) => Ok((r, version)),
        Err(e @ FrameError::Decode(_)) if api_key == ApiKey::ApiVersions && version > 0 => {
            match dispatch::parse_response(frame, api_key, 0) {
                Ok(r) => Ok((r, 0)),
                Err(_) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// What a client does after an ApiVersions response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApiVersionsOutcome {
    /// No error: the body lists the broker's versions.
    Ready,
    /// UNSUPPORTED_VERSION: send ApiVersions again at this version.
    Retry {
        /// The version to retry with.
        version: i16,
    },
    /// Any other error, or UNSUPPORTED_VERSION to a version-0 request (or one that would
    /// not retry lower): Kafka's client disconnects.
    Fail {
        /// The error code.
        error_code: i16,
    },
}

/// What Apache Kafka's client (`NetworkClient`) does with an ApiVersions response to a
/// request of `requested_version`: with no error, it is ready; with UNSUPPORTED_VERSION
/// to a request above version 0, it retries at the highest ApiVersions version the body
/// lists (brokers from Kafka 2.4 list it), or at 0 if the body lists none; with any other
/// error it disconnects. The retry version is capped at what this crate encodes, and
/// must be lower than the one refused (else [`ApiVersionsOutcome::Fail`], so that a broken
/// broker cannot make a client loop).
pub fn api_versions_outcome(
    requested_version: i16,
    body: &ApiVersionsResponseView<'_>,
) -> ApiVersionsOutcome {
    let error_code = body.error_code();
    if error_code == ErrorCode::None.to_i16() {
        return ApiVersionsOutcome::Ready;
    }
    if requested_version <= 0 || error_code != ErrorCode::UnsupportedVersion.to_i16() {
        return ApiVersionsOutcome::Fail { error_code };
    }
    let listed = body
        .api_keys()
        .iter()
        .find(|k| k.api_key() == ApiKey::ApiVersions.to_i16())
        .map_or(0, |k| k.max_version());
    let version = listed.min(ApiKey::ApiVersions.request_versions().max).max(0);
    if version >= requested_version {
        return ApiVersionsOutcome::Fail { error_code };
    }
    ApiVersionsOutcome::Retry { version }
}

/// The highest version of `key` that this build of kwire and a broker serving `broker`
/// both speak, or `None` when they share none (or the API is not in this build).
///
/// kwire's side is the intersection of the versions it encodes requests at and reads
/// responses at ([`ApiKey::request_versions`], [`ApiKey::response_versions`]).
///
/// ```
/// use kwire::{ApiKey, Versions};
/// use kwire::conn::shared_version;
///
/// // A broker of the Kafka 2.4 era serving Metadata 0 to 8: version 8.
/// assert_eq!(shared_version(ApiKey::Metadata, Versions::new(0, 8)), Some(8));
/// // A broker newer than kwire: kwire's highest.
/// assert_eq!(shared_version(ApiKey::Metadata, Versions::new(0, i16::MAX)), Some(ApiKey::Metadata.request_versions().max));
/// // No overlap.
/// assert_eq!(shared_version(ApiKey::Produce, Versions::new(0, 1)), None);
/// ```
pub fn shared_version(key: ApiKey, broker: Versions) -> Option<i16> {
    if !key.is_enabled() {
        return None;
    }
    let (req, resp) = (key.request_versions(), key.response_versions());
    let min = req.min.max(resp.min).max(broker.min);
    let max = req.max.min(resp.max).min(broker.max);
    (min <= max).then_some(max)
}

/// The API keys this crate knows in an ApiVersions body, with their versions (the last
/// entry of a key listed twice).
fn listed_versions(body: &ApiVersionsResponseView<'_>) -> Vec<(ApiKey, Versions)> {
    let mut versions: Vec<(ApiKey, Versions)> = Vec::new();
    for k in body.api_keys() {
        let Some(key) = ApiKey::from_i16(k.api_key()) else { continue };
        let range = Versions::new(k.min_version(), k.max_version());
        match versions.iter_mut().find(|(known, _)| *known == key) {
            Some(entry) => entry.1 = range,
            None => versions.push((key, range)),
        }
    }
    versions
}

/// A client's side of a connection: requests encoded with fresh correlation ids and
/// tracked in an [`InFlight`] table (with a payload `T` each), bytes in, responses out as
/// typed views paired with their requests.
///
/// Correlation ids count up from 0 and wrap after `i32::MAX - 8` (Kafka's clients keep
/// the last eight ids for SASL). A Produce request with `acks = 0` gets no entry, since
/// no answer comes. Responses must come in request order ([`InFlight`]); an unknown or
/// out-of-order correlation id is an error, and the connection should be closed.
/// ApiVersions responses are read with Kafka's fallback ([`read_response`]).
///
/// **Versions.** An ApiVersions response without error that [`ClientConn::next_response`]
/// reads (or one given to [`ClientConn::set_api_versions`]) is kept: then
/// [`ClientConn::negotiated`] is the highest version of an API both sides speak.
///
/// **Errors.** Framing errors stick ([`FrameBuf`]). A response that cannot be parsed is
/// returned as an error once; its request leaves the table.
///
/// See the [module docs](super) for a broker and a client talking to each other.
#[derive(Debug)]
pub struct ClientConn<T = ()> {
    frames: FrameBuf,
    in_flight: InFlight<T>,
    next_id: i32,
    client_id: Option<String>,
    /// The broker's versions of the APIs this crate knows, from its last ApiVersions answer
    /// (one entry per key, at most [`ApiKey::ALL`]'s length).
    broker_versions: Option<Vec<(ApiKey, Versions)>>,
}

impl<T> ClientConn<T> {
    /// A connection sending `client_id` in every request header, reading frames up to
    /// Apache Kafka's default 100 MiB, with [`super::DEFAULT_MAX_IN_FLIGHT`] requests in
    /// flight at most.
    pub fn new(client_id: Option<&str>) -> Self {
        Self::with_limits(client_id, FrameBuf::new(DEFAULT_MAX_FRAME_SIZE), InFlight::new())
    }

    /// A connection reading through `frames` and tracking requests in `in_flight`.
    pub fn with_limits(client_id: Option<&str>, frames: FrameBuf, in_flight: InFlight<T>) -> Self {
        ClientConn {
            frames,
            in_flight,
            next_id: 0,
            client_id: client_id.map(String::from),
            broker_versions: None,
        }
    }

    /// The requests awaiting responses.
    pub const fn in_flight(&self) -> &InFlight<T> {
        &self.in_flight
    }

    /// The requests awaiting responses, e.g. to drain them when the connection closes.
    pub fn in_flight_mut(&mut self) -> &mut InFlight<T> {
        &mut self.in_flight
    }

    /// The frame buffer.
    pub const fn frame_buf(&self) -> &FrameBuf {
        &self.frames
    }

    /// The frame buffer, e.g. to change its frame limit.
    pub fn frame_buf_mut(&mut self) -> &mut FrameBuf {
        &mut self.frames
    }

    /// The correlation id the next request gets.
    pub const fn next_correlation_id(&self) -> i32 {
        self.next_id
    }

    /// Sets the correlation id the next request gets.
    pub fn set_next_correlation_id(&mut self, id: i32) {
        self.next_id = id;
    }

    /// Keeps the versions an ApiVersions response lists (replacing any kept before), for
    /// [`ClientConn::negotiated`]; API keys this crate does not know are left out.
    /// [`ClientConn::next_response`] does this itself for every ApiVersions response
    /// without error; call it for a response read another way (e.g. through a codec).
    pub fn set_api_versions(&mut self, body: &ApiVersionsResponseView<'_>) {
        self.broker_versions = Some(listed_versions(body));
    }

    /// The versions of `key` the broker listed in its last ApiVersions answer, or `None`
    /// before one was read or when it did not list the API.
    pub fn broker_versions(&self, key: ApiKey) -> Option<Versions> {
        self.broker_versions.as_ref()?.iter().find(|(k, _)| *k == key).map(|&(_, v)| v)
    }

    /// The version to send `key` at: the highest that kwire and the broker both speak
    /// ([`shared_version`] of [`ClientConn::broker_versions`]), or `None` before an
    /// ApiVersions answer was read, when the broker does not list the API, or when the
    /// two share no version.
    ///
    /// ```
    /// use kwire::ApiKey;
    /// use kwire::conn::ClientConn;
    /// use kwire::messages::api_versions::{ApiVersion, ApiVersionsResponse, ApiVersionsResponseView};
    ///
    /// let mut conn: ClientConn = ClientConn::new(Some("my-app"));
    /// assert_eq!(conn.negotiated(ApiKey::Fetch), None);
    /// let keys = [ApiVersion { api_key: ApiKey::Fetch.to_i16(), min_version: 4, max_version: 11, ..Default::default() }];
    /// let answer = ApiVersionsResponse { api_keys: (&keys).into(), ..Default::default() };
    /// let mut bytes = vec![0; answer.encoded_len(3)?];
    /// answer.encode(3, &mut bytes)?;
    /// conn.set_api_versions(&ApiVersionsResponseView::new(&bytes, 3)?);
    /// assert_eq!(conn.negotiated(ApiKey::Fetch), Some(11));
    /// assert_eq!(conn.negotiated(ApiKey::Produce), None); // not listed
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn negotiated(&self, key: ApiKey) -> Option<i16> {
        shared_version(key, self.broker_versions(key)?)
    }

    /// Encodes a request frame of `body` at `version`, appended to `out`, and tracks it
    /// with `payload` unless it gets no response. Fails, leaving `out` and the next
    /// correlation id as they were, when the body cannot be encoded, or when the request
    /// expects a response and the in-flight table is full.
    pub fn encode_request(
        &mut self,
        body: &impl AnyBody,
        version: i16,
        payload: T,
        out: &mut Vec<u8>,
    ) -> Result<Sent, ConnError> {
        let header = self.header();
        let n = dispatch::request_len(body, version, &header)?;
        let at = out.len();
        out.resize(at + n, 0);
        let sent = dispatch::encode_request_with(body, version, &header, &mut out[at..])
            .map_err(ConnError::from)
            .and_then(|n| self.track(body, version, payload, &out[at..at + n]));
        if sent.is_err() {
            out.truncate(at);
        }
        sent
    }

    /// [`ClientConn::encode_request`] into the front of `buf` (which may have been written
    /// to when it fails).
    pub fn encode_request_into(
        &mut self,
        body: &impl AnyBody,
        version: i16,
        payload: T,
        buf: &mut [u8],
    ) -> Result<Sent, ConnError> {
        let header = self.header();
        let n = dispatch::encode_request_with(body, version, &header, buf)?;
        self.track(body, version, payload, buf.get(..n).unwrap_or_default())
    }

    fn header(&self) -> RequestHeader<'_> {
        RequestHeader {
            correlation_id: self.next_id,
            client_id: self.client_id.as_deref(),
            unknown_tagged_fields: &[],
        }
    }

    fn track(
        &mut self,
        body: &impl AnyBody,
        version: i16,
        payload: T,
        frame: &[u8],
    ) -> Result<Sent, ConnError> {
        let correlation_id = self.next_id;
        let expects_response = frame_expects_response(frame.get(4..).unwrap_or_default())?;
        if expects_response {
            self.in_flight.push(correlation_id, body.api_key(), version, payload)?;
        }
        self.next_id = if correlation_id >= LAST_CORRELATION_ID { 0 } else { correlation_id.wrapping_add(1) };
        Ok(Sent { correlation_id, len: frame.len(), expects_response })
    }

    /// Space to read into ([`FrameBuf::spare`]).
    pub fn spare(&mut self) -> &mut [u8] {
        self.frames.spare()
    }

    /// Marks bytes read into [`ClientConn::spare`] ([`FrameBuf::commit`]).
    pub fn commit(&mut self, n: usize) {
        self.frames.commit(n);
    }

    /// Copies bytes in, as many as fit ([`FrameBuf::feed`]).
    pub fn feed(&mut self, bytes: &[u8]) -> usize {
        self.frames.feed(bytes)
    }

    /// The next response paired with its request, `None` until one is whole, or why it
    /// cannot be read.
    pub fn next_response(&mut self) -> Result<Option<ClientResponse<'_, T>>, ConnError> {
        let Some(frame) = self.frames.next_frame()? else {
            return Ok(None);
        };
        let (header, _) = ResponseHeaderView::parse(frame, 0)?;
        let correlation_id = header.correlation_id();
        let pending = self.in_flight.complete(correlation_id)?;
        let (response, version) = read_response(frame, pending.api_key, pending.api_version)?;
        if let ResponseBodyView::ApiVersions(body) = &response.body
            && body.error_code() == ErrorCode::None.to_i16()
        {
            self.broker_versions = Some(listed_versions(body));
        }
        Ok(Some(ClientResponse {
            correlation_id,
            api_key: pending.api_key,
            requested_version: pending.api_version,
            version,
            header: response.header,
            body: response.body,
            payload: pending.payload,
            frame,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Received, ServerConn};
    use super::*;
    use crate::codec::messages::api_versions::{ApiVersion, ApiVersionsRequest, ApiVersionsResponse};

    #[test]
    fn shared_version_is_the_top_of_the_overlap() {
        let fetch = ApiKey::Fetch.request_versions();
        assert_eq!(shared_version(ApiKey::Fetch, Versions::new(0, 11)), Some(11));
        assert_eq!(shared_version(ApiKey::Fetch, Versions::new(0, i16::MAX)), Some(fetch.max));
        assert_eq!(shared_version(ApiKey::Fetch, Versions::new(fetch.max, fetch.max)), Some(fetch.max));
        // Below what kwire reads, above it, or an empty range: nothing shared.
        assert_eq!(shared_version(ApiKey::Fetch, Versions::new(0, fetch.min - 1)), None);
        assert_eq!(shared_version(ApiKey::Fetch, Versions::new(fetch.max + 1, fetch.max + 5)), None);
        assert_eq!(shared_version(ApiKey::Fetch, Versions::new(5, 4)), None);
    }

    /// The client's answer from a server listing `keys` as (key, min, max).
    fn answered(client: &mut ClientConn, keys: &[(i16, i16, i16)], error_code: i16) {
        let mut server = ServerConn::new();
        let mut wire = Vec::new();
        client.encode_request(&ApiVersionsRequest::default(), 3, (), &mut wire).unwrap();
        server.feed(&wire);
        wire.clear();
        let Some(Received::Request(r)) = server.next_request().unwrap() else { panic!("a request") };
        let keys: Vec<ApiVersion<'_>> = keys
            .iter()
            .map(|&(api_key, min_version, max_version)| ApiVersion {
                api_key,
                min_version,
                max_version,
                ..Default::default()
            })
            .collect();
        let body = ApiVersionsResponse { error_code, api_keys: keys.as_slice().into(), ..Default::default() };
        ServerConn::encode_response(r.reply_to(), &body, &mut wire).unwrap();
        client.feed(&wire);
        assert!(client.next_response().unwrap().is_some());
    }

    #[test]
    fn an_api_versions_answer_sets_the_negotiated_versions() {
        let mut client: ClientConn = ClientConn::new(None);
        assert_eq!(client.negotiated(ApiKey::Produce), None, "nothing before an answer");
        let produce = ApiKey::Produce.request_versions();
        // Produce listed twice (the last wins), Metadata above kwire, an unknown key 999,
        // Fetch entirely below kwire, no ListOffsets.
        let keys = [
            (0, 0, 2),
            (0, 3, 7),
            (3, 0, i16::MAX),
            (999, 0, 5),
            (1, 0, ApiKey::Fetch.request_versions().min - 1),
        ];
        answered(&mut client, &keys, 0);
        assert_eq!(client.negotiated(ApiKey::Produce), Some(7.min(produce.max)));
        assert_eq!(client.broker_versions(ApiKey::Produce), Some(Versions::new(3, 7)));
        assert_eq!(client.negotiated(ApiKey::Metadata), Some(ApiKey::Metadata.request_versions().max));
        assert_eq!(client.negotiated(ApiKey::Fetch), None, "no shared version");
        assert!(client.broker_versions(ApiKey::Fetch).is_some());
        assert_eq!(client.negotiated(ApiKey::ListOffsets), None, "not listed");
        // An answer with an error (UNSUPPORTED_VERSION) keeps what was known.
        answered(&mut client, &[(0, 3, 3)], ErrorCode::UnsupportedVersion.to_i16());
        assert_eq!(client.negotiated(ApiKey::Produce), Some(7.min(produce.max)));
        // A later answer replaces it all.
        answered(&mut client, &[(2, 1, 4)], 0);
        assert_eq!(client.negotiated(ApiKey::Produce), None);
        assert_eq!(client.negotiated(ApiKey::ListOffsets), Some(4));
    }
}
