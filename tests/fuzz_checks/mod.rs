//! The properties the fuzz targets check, one function per target.
//!
//! The fuzz crate (`fuzz/`) includes this file with `#[path]`, and
//! `tests/fuzz_regressions.rs` runs crash inputs and the checked-in corpora through the very
//! same functions, so a crash replays in `cargo test` exactly as libFuzzer saw it.
//!
//! Each function panics when a property fails and returns quietly otherwise. Selector bytes
//! (see `docs/fuzzing.md`):
//!
//! - [`request_frame`]: byte 0 is the framing mode (bit 0: prepend a correct size prefix to
//!   the rest; bit 1: a frame size limit of 64 bytes instead of Kafka's default); the API and
//!   version come from the request header itself.
//! - [`response`]: byte 0 picks the API (`ApiKey::ALL[(b & 0x7f) % ALL.len()]`; bit 7 set: the rest is a
//!   whole response frame without size prefix, else a bare body), byte 1 the version
//!   (`min - 1 + b % (count + 2)`, so one version either side of the range is tried too).
//! - [`roundtrip`]: byte 0 picks the message (`m = b % (2 * ALL.len())`: API `ALL[m / 2]`, response if `m` is
//!   odd), byte 1 the version (`min + b % count`), the rest feeds `arbitrary`.
//! - [`primitives`]: byte 0 picks the primitive, the rest feeds `arbitrary`.
//! - [`explain::explain`]: see its module.
//! - [`capture::capture`]: byte 0 picks a capture file as it is, or a script of TCP
//!   segments written into one (see the module).
//! - [`vectored::vectored`]: byte 0 picks the body with records and the mode, byte 1 the
//!   version, the rest feeds `arbitrary` (see the module).
//! - [`encrypt::encrypt`]: byte 0 picks the mode: the envelope parser, the decryption of
//!   hostile batches, or records encrypted, altered and decrypted (see the module).
#![allow(dead_code)]

use std::hint::black_box;
use std::mem::discriminant;

use arbitrary::Unstructured;
use kwire::AnyBody;
use kwire::ApiKey;
use kwire::dispatch;
use kwire::frame::{self, FrameError, FrameStatus};
use kwire::messages::*;
use kwire::testing::AsVersion;
use kwire::view::Element;
use kwire::wire::{self, Reader, TaggedIter, TaggedSize, Writer};
use kwire::{ArrayView, DecodeError, DecodeErrorKind as K, EncodeError, RawTaggedField, Versions};

/// The messages in selector order: `(api, is_response)`.
pub fn message(selector: u8) -> (ApiKey, bool) {
    let m = usize::from(selector) % (2 * ApiKey::ALL.len());
    (ApiKey::ALL[m / 2], m % 2 == 1)
}

/// The selector byte for a message (the inverse of [`message`]).
pub fn message_selector(key: ApiKey, response: bool) -> u8 {
    let k = ApiKey::ALL.iter().position(|&k| k == key).expect("supported API") as u8;
    k * 2 + u8::from(response)
}

/// A version from a selector byte, one either side of the range included.
pub fn version_with_neighbours(range: Versions, b: u8) -> i16 {
    let count = (range.max - range.min + 1) as u16;
    range.min - 1 + (u16::from(b) % (count + 2)) as i16
}

/// A version inside the range from a selector byte.
pub fn version_in(range: Versions, b: u8) -> i16 {
    let count = (range.max - range.min + 1) as u16;
    range.min + (u16::from(b) % count) as i16
}

// ------------------------------------------------------------------ walking views

/// Elements whose bytes can be compared, so that `ArrayView::get` can be held against
/// the iterator.
trait Elem<'a>: Element<'a> {
    fn elem_bytes(&self) -> &'a [u8];
}

impl<'a> Elem<'a> for &'a str {
    fn elem_bytes(&self) -> &'a [u8] {
        self.as_bytes()
    }
}

macro_rules! elem_views {
    ($($t:path),*) => {$(
        impl<'a> Elem<'a> for $t {
            fn elem_bytes(&self) -> &'a [u8] {
                self.as_bytes()
            }
        }
    )*};
}

elem_views!(
    api_versions::ApiVersionView<'a>,
    api_versions::SupportedFeatureKeyView<'a>,
    api_versions::FinalizedFeatureKeyView<'a>,
    list_groups::ListedGroupView<'a>,
    list_offsets::ListOffsetsTopicView<'a>,
    list_offsets::ListOffsetsPartitionView<'a>,
    list_offsets::ListOffsetsTopicResponseView<'a>,
    list_offsets::ListOffsetsPartitionResponseView<'a>,
    metadata::MetadataRequestTopicView<'a>,
    metadata::MetadataResponseBrokerView<'a>,
    metadata::MetadataResponseTopicView<'a>,
    metadata::MetadataResponsePartitionView<'a>
);

/// [`each`] for arrays of scalars, which have no bytes of their own to compare: the
/// iterator and `get` agree.
fn each_scalar<'a, T: Element<'a> + PartialEq + std::fmt::Debug>(a: ArrayView<'a, T>) {
    let items: Vec<T> = a.iter().collect();
    assert_eq!(items.len(), a.len());
    for (i, item) in items.iter().enumerate() {
        assert_eq!(a.get(i).as_ref(), Some(item));
        black_box(item);
    }
}

/// Iterates an array view, hands every element to `f`, and checks the array's own
/// contract: exactly `len` elements from a fused iterator, and `get` agreeing with it.
fn each<'a, T: Elem<'a>>(a: ArrayView<'a, T>, mut f: impl FnMut(T)) {
    assert_eq!(a.iter().len(), a.len());
    assert_eq!(a.is_empty(), a.iter().next().is_none());
    assert!(a.get(a.len()).is_none());
    let mut seen = 0usize;
    let mut it = a.iter();
    for (i, e) in it.by_ref().enumerate() {
        seen += 1;
        // `get` walks from the start for elements of variable size: spot-check only.
        if i < 8 || i + 1 == a.len() {
            let got = a.get(i).expect("index below len");
            assert_eq!(got.elem_bytes(), e.elem_bytes(), "get({i}) differs from the iterator");
        }
        black_box(e.elem_bytes());
        f(e);
    }
    assert!(it.next().is_none(), "the iterator yields nothing after the end");
    assert_eq!(seen, a.len(), "the iterator yields exactly len elements");
}

fn tags(it: TaggedIter<'_>) {
    let mut last = None;
    for (tag, data) in it {
        assert!(last.is_none_or(|prev| tag > prev), "tags ascend");
        last = Some(tag);
        black_box(data);
    }
}

/// Reads every field of every element at every depth. Never fails: errors of elements
/// are what `validate` reports, and are checked against it.
pub fn walk_request(body: &RequestBodyView<'_>) {
    black_box(body.as_bytes());
    match body {
        RequestBodyView::ApiVersions(v) => {
            black_box((v.client_software_name(), v.client_software_version(), v.version()));
            tags(v.unknown_tagged_fields());
        }
        RequestBodyView::ListGroups(v) => {
            each(v.states_filter(), |s| {
                black_box(s);
            });
            each(v.types_filter(), |s| {
                black_box(s);
            });
            tags(v.unknown_tagged_fields());
        }
        RequestBodyView::ListOffsets(v) => {
            black_box((v.replica_id(), v.isolation_level(), v.timeout_ms()));
            each(v.topics(), |t| {
                black_box((t.name(), t.version()));
                each(t.partitions(), |p| {
                    black_box((p.partition_index(), p.current_leader_epoch(), p.timestamp()));
                    tags(p.unknown_tagged_fields());
                });
                tags(t.unknown_tagged_fields());
            });
            tags(v.unknown_tagged_fields());
        }
        RequestBodyView::Metadata(v) => {
            black_box((v.allow_auto_topic_creation(), v.include_cluster_authorized_operations()));
            black_box(v.include_topic_authorized_operations());
            if let Some(topics) = v.topics() {
                each(topics, |t| {
                    black_box((t.topic_id(), t.name()));
                    tags(t.unknown_tagged_fields());
                });
            }
            tags(v.unknown_tagged_fields());
        }
        // Every other API: Debug reads every field of every element at every depth.
        other => {
            black_box(format!("{other:?}"));
        }
    }
}

/// [`walk_request`] for responses.
pub fn walk_response(body: &ResponseBodyView<'_>) {
    black_box(body.as_bytes());
    match body {
        ResponseBodyView::ApiVersions(v) => {
            black_box((v.error_code(), v.throttle_time_ms(), v.finalized_features_epoch()));
            black_box(v.zk_migration_ready());
            each(v.api_keys(), |k| {
                black_box((k.api_key(), k.min_version(), k.max_version()));
                tags(k.unknown_tagged_fields());
            });
            each(v.supported_features(), |f| {
                black_box((f.name(), f.min_version(), f.max_version()));
                tags(f.unknown_tagged_fields());
            });
            each(v.finalized_features(), |f| {
                black_box((f.name(), f.min_version_level(), f.max_version_level()));
                tags(f.unknown_tagged_fields());
            });
            tags(v.unknown_tagged_fields());
        }
        ResponseBodyView::ListGroups(v) => {
            black_box((v.throttle_time_ms(), v.error_code()));
            each(v.groups(), |g| {
                black_box((g.group_id(), g.protocol_type(), g.group_state(), g.group_type()));
                tags(g.unknown_tagged_fields());
            });
            tags(v.unknown_tagged_fields());
        }
        ResponseBodyView::ListOffsets(v) => {
            black_box(v.throttle_time_ms());
            each(v.topics(), |t| {
                black_box(t.name());
                each(t.partitions(), |p| {
                    black_box((p.partition_index(), p.error_code(), p.timestamp(), p.offset()));
                    black_box(p.leader_epoch());
                    tags(p.unknown_tagged_fields());
                });
                tags(t.unknown_tagged_fields());
            });
            tags(v.unknown_tagged_fields());
        }
        ResponseBodyView::Metadata(v) => {
            black_box((v.throttle_time_ms(), v.cluster_id(), v.controller_id(), v.error_code()));
            black_box(v.cluster_authorized_operations());
            each(v.brokers(), |b| {
                black_box((b.node_id(), b.host(), b.port(), b.rack()));
                tags(b.unknown_tagged_fields());
            });
            each(v.topics(), |t| {
                black_box((t.error_code(), t.name(), t.topic_id(), t.is_internal()));
                black_box(t.topic_authorized_operations());
                each(t.partitions(), |p| {
                    black_box((p.error_code(), p.partition_index(), p.leader_id(), p.leader_epoch()));
                    each_scalar(p.replica_nodes());
                    each_scalar(p.isr_nodes());
                    each_scalar(p.offline_replicas());
                    tags(p.unknown_tagged_fields());
                });
                tags(t.unknown_tagged_fields());
            });
            tags(v.unknown_tagged_fields());
        }
        // Every other API: Debug reads every field of every element at every depth.
        other => {
            black_box(format!("{other:?}"));
        }
    }
}

// ------------------------------------------------------------------ differential decoding

/// Holds the view path (construction, walk, conversion to a value) against the reference
/// decoder on one body, then re-encodes what both accepted.
///
/// - They accept exactly the same bodies, and reject the others with the same kind of
///   error (the view checks arrays of fixed-size elements with one bounds check, so a
///   truncation may be reported at the array rather than inside an element).
/// - If both accept, the values are equal, and the value encodes at the same version to
///   bytes that decode (both ways) to the same value and re-encode identically.
macro_rules! differential {
    ($view:expr, $reference:expr, $walk:ident, $Value:ident, $ViewEnum:ident, $key:expr, $version:expr) => {{
        let view = $view;
        let reference = $reference;
        let (key, version) = ($key, $version);
        match (view, reference) {
            (Err(view_err), Err(reference_err)) => assert_eq!(
                discriminant(&view_err.kind()),
                discriminant(&reference_err.kind()),
                "view: {view_err}; reference: {reference_err}"
            ),
            (Ok(_), Err(e)) => panic!("the reference rejects ({e}) a body the view accepts"),
            (Err(e), Ok(_)) => panic!("the view rejects ({e}) a body the reference accepts"),
            (Ok(v), Ok(reference)) => {
                $walk(&v);
                assert_eq!($Value::from(v), reference, "view and reference decoder disagree");
                let n = reference.encoded_len(version).expect("a decoded value encodes");
                let mut buf = vec![0u8; n];
                assert_eq!(reference.encode(version, &mut buf), Ok(n));
                let again = $Value::decode(&buf, key, version).expect("re-encoded bytes decode");
                assert_eq!(again, reference, "decode(encode(value)) differs");
                let view2 = $ViewEnum::new(&buf, key, version).expect("re-encoded bytes decode");
                assert_eq!($Value::from(view2), reference);
                let mut buf2 = vec![0u8; n];
                assert_eq!(again.encode(version, &mut buf2), Ok(n));
                assert_eq!(buf, buf2, "re-encoding is stable");
            }
        }
    }};
}

fn request_body(key: ApiKey, version: i16, body: &[u8]) {
    differential!(
        RequestBodyView::new(body, key, version),
        RequestBody::decode(body, key, version),
        walk_request,
        RequestBody,
        RequestBodyView,
        key,
        version
    );
}

fn response_body(key: ApiKey, version: i16, body: &[u8]) {
    differential!(
        ResponseBodyView::new(body, key, version),
        ResponseBody::decode(body, key, version),
        walk_response,
        ResponseBody,
        ResponseBodyView,
        key,
        version
    );
}

// ------------------------------------------------------------------ request_frame

/// Arbitrary bytes through frame splitting, header parsing and dispatch, the walk, and
/// the differential check of every complete frame.
pub fn request_frame(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    let max = if mode & 2 != 0 { 64 } else { frame::DEFAULT_MAX_FRAME_SIZE };
    let owned;
    let mut stream = if mode & 1 != 0 {
        let mut v = (rest.len() as u32).to_be_bytes().to_vec();
        v.extend_from_slice(rest);
        owned = v;
        &owned[..]
    } else {
        rest
    };
    loop {
        let status = frame::split_frame(stream, max);
        match status {
            Err(e) => {
                let FrameError::Decode(e) = e else { panic!("split_frame: {e}") };
                assert_eq!((e.offset(), e.field()), (0, "Frame.size"));
                let size = i32::from_be_bytes(stream[..4].try_into().unwrap());
                match e.kind() {
                    K::InvalidLength(n) => assert!(n == size && n < 0),
                    K::FrameTooLarge { size: s, .. } => assert!(s as usize > max && s as i32 == size),
                    other => panic!("split_frame: {other}"),
                }
                return;
            }
            Ok(FrameStatus::Incomplete { needed }) => {
                assert!(needed > 0);
                if let Some(prefix) = stream.first_chunk::<4>() {
                    let size = i32::from_be_bytes(*prefix) as usize;
                    assert_eq!(needed, 4 + size - stream.len());
                } else {
                    assert_eq!(needed, 4 - stream.len());
                }
                return;
            }
            Ok(FrameStatus::Complete { frame, consumed }) => {
                assert_eq!(consumed, frame.len() + 4);
                assert_eq!(frame, &stream[4..consumed]);
                request(frame);
                stream = &stream[consumed..];
            }
        }
    }
}

/// One request frame (after its size prefix): `parse_request` against a header read field
/// by field here, then the body through [`request_body`].
pub fn request(frame_bytes: &[u8]) {
    let parsed = dispatch::parse_request(frame_bytes);
    if let Ok(req) = &parsed {
        walk_request(&req.body);
    }
    let mut r = Reader::new(frame_bytes);
    let fixed = (|| {
        Ok::<_, DecodeError>((
            r.i16("RequestHeader.RequestApiKey")?,
            r.i16("RequestHeader.RequestApiVersion")?,
            r.i32("RequestHeader.CorrelationId")?,
        ))
    })();
    let (api_key, api_version, correlation_id) = match fixed {
        Ok(f) => f,
        Err(e) => {
            assert_eq!(parsed.map(drop), Err(FrameError::Decode(e)));
            return;
        }
    };
    let Some(key) = ApiKey::from_i16(api_key) else {
        assert_eq!(
            parsed.map(drop),
            Err(FrameError::UnsupportedApiKey { api_key, api_version, correlation_id })
        );
        return;
    };
    if !key.request_versions().contains(api_version) {
        assert_eq!(
            parsed.map(drop),
            Err(FrameError::UnsupportedVersion { api_key: key, api_version, correlation_id })
        );
        return;
    }
    let header_version = if key.flexible_versions().contains(api_version) { 2 } else { 1 };
    let header = (|| {
        let client_id = r.nullable_str(false, "RequestHeader.ClientId")?;
        let mut tags = Vec::new();
        if header_version == 2 {
            r.tagged_fields("RequestHeader._tagged_fields", |tag, value| {
                tags.push((tag, value.remaining()));
                Ok(false)
            })?;
        }
        Ok::<_, DecodeError>((client_id, tags))
    })();
    let (client_id, header_tags) = match header {
        Ok(h) => h,
        Err(e) => {
            assert_eq!(parsed.map(drop), Err(FrameError::Decode(e)));
            return;
        }
    };
    let header_len = r.pos();
    let body = &frame_bytes[header_len..];
    match (&parsed, RequestBodyView::new(body, key, api_version)) {
        (Ok(req), Ok(view)) => {
            let h = &req.header;
            assert_eq!(
                (h.api_key(), h.api_version(), h.correlation_id()),
                (api_key, api_version, correlation_id)
            );
            assert_eq!((h.client_id(), h.version()), (client_id, header_version));
            assert_eq!(h.as_bytes(), &frame_bytes[..header_len]);
            let seen: Vec<_> = h.unknown_tagged_fields().map(|(t, d)| (t, d.len())).collect();
            assert_eq!(seen, header_tags);
            assert_eq!(req.body.api_key(), key);
            assert_eq!(req.body.as_bytes(), body);
            assert_eq!(view.as_bytes(), body);
        }
        (Err(FrameError::Decode(e)), Err(view_err)) => assert_eq!(*e, view_err.shifted(header_len)),
        (p, v) => panic!("parse_request: {:?}; body view: {:?}", p.as_ref().map(drop), v.map(drop)),
    }
    request_body(key, api_version, body);
}

// ------------------------------------------------------------------ response

/// A response body (or a whole response frame) of the API and version the first two bytes
/// select.
pub fn response(data: &[u8]) {
    let [a, b, rest @ ..] = data else { return };
    let key = ApiKey::ALL[usize::from(a & 0x7f) % ApiKey::ALL.len()];
    let version = version_with_neighbours(key.response_versions(), *b);
    let supported = key.response_versions().contains(version);
    if a & 0x80 == 0 {
        if !supported {
            let expected = K::UnsupportedVersion(version);
            assert_eq!(
                ResponseBodyView::new(rest, key, version).map(drop).map_err(|e| e.kind()),
                Err(expected)
            );
            assert_eq!(
                ResponseBody::decode(rest, key, version).map(drop).map_err(|e| e.kind()),
                Err(expected)
            );
            return;
        }
        response_body(key, version, rest);
        return;
    }
    // A whole frame: header (correlation id, tagged fields in header v1), then the body.
    let parsed = dispatch::parse_response(rest, key, version);
    if let Ok(resp) = &parsed {
        walk_response(&resp.body);
    }
    if !supported {
        assert_eq!(
            parsed.map(drop),
            Err(FrameError::UnsupportedVersion { api_key: key, api_version: version, correlation_id: -1 })
        );
        return;
    }
    let header_version =
        if key != ApiKey::ApiVersions && key.flexible_versions().contains(version) { 1 } else { 0 };
    let mut r = Reader::new(rest);
    let header = (|| {
        let correlation_id = r.i32("ResponseHeader.CorrelationId")?;
        if header_version == 1 {
            r.tagged_fields("ResponseHeader._tagged_fields", |_, _| Ok(false))?;
        }
        Ok::<_, DecodeError>(correlation_id)
    })();
    let correlation_id = match header {
        Ok(c) => c,
        Err(e) => {
            assert_eq!(parsed.map(drop), Err(e.into()));
            return;
        }
    };
    let header_len = r.pos();
    let body = &rest[header_len..];
    match (&parsed, ResponseBodyView::new(body, key, version)) {
        (Ok(resp), Ok(view)) => {
            assert_eq!(resp.header.correlation_id(), correlation_id);
            assert_eq!(resp.header.version(), header_version);
            assert_eq!(resp.header.as_bytes(), &rest[..header_len]);
            assert_eq!(resp.body.as_bytes(), body);
            assert_eq!(view.as_bytes(), body);
        }
        (Err(e), Err(view_err)) => assert_eq!(*e, view_err.shifted(header_len).into()),
        (p, v) => panic!("parse_response: {:?}; body view: {:?}", p.as_ref().map(drop), v.map(drop)),
    }
    response_body(key, version, body);
}

// ------------------------------------------------------------------ roundtrip

/// The errors the size step may report for a value of a supported version.
pub fn documented(e: &EncodeError) -> bool {
    matches!(
        e,
        EncodeError::FieldNotInVersion { .. }
            | EncodeError::InvalidTaggedFields { .. }
            | EncodeError::StringTooLong { .. }
            | EncodeError::NullNotAllowed { .. }
    )
}

/// Encodes `$value` (which must size successfully) and reads it back through the view
/// (walked) and the reference decoder, both of which must give `$expected`. Evaluates to
/// the bytes.
macro_rules! encode_and_read_back {
    ($value:expr, $expected:expr, $key:expr, $version:expr, $Value:ident, $View:ident, $walk:ident) => {{
        let (value, expected, key, version) = ($value, $expected, $key, $version);
        let n = value.encoded_len(version).expect("sized before");
        let mut buf = vec![0u8; n];
        assert_eq!(value.encode(version, &mut buf), Ok(n), "encode writes encoded_len bytes");
        if n > 0 {
            let mut short = vec![0u8; n - 1];
            assert_eq!(
                value.encode(version, &mut short),
                Err(EncodeError::BufferTooSmall { needed: n, available: n - 1 })
            );
        }
        let view =
            $View::new(&buf, key, version).unwrap_or_else(|e| panic!("view of v{version}: {e}\n{value:?}"));
        $walk(&view);
        assert_eq!(view.as_bytes().len(), n);
        assert_eq!(&$Value::from(view), expected, "view read back v{version}");
        let reference =
            $Value::decode(&buf, key, version).unwrap_or_else(|e| panic!("reference v{version}: {e}"));
        assert_eq!(&reference, expected, "reference decoder read back v{version}");
        buf
    }};
}

/// An arbitrary value of one message (through its dispatch enum), sized, encoded and read
/// back at the selected version, then as the version carries it, then as a whole frame.
macro_rules! roundtrip_message {
    ($u:expr, $selector:expr, $key:expr, $Value:ident, $View:ident, $walk:ident, $is_request:expr) => {{
        let (u, key, is_request) = ($u, $key, $is_request);
        let versions = if is_request { key.request_versions() } else { key.response_versions() };
        let version = version_in(versions, $selector);
        let ver = kwire::types::Ver::new(version, key.flexible_versions().contains(version));
        let name = format!("{}{}", key.name(), if is_request { "Request" } else { "Response" });
        let Ok(value) = $Value::arbitrary_for(key, u) else { return };
        // Versions outside the range are refused.
        for bad in [versions.min - 1, versions.max + 1] {
            match value.encoded_len(bad) {
                Err(EncodeError::UnsupportedVersion { message, version }) => {
                    assert_eq!((message, version), (name.as_str(), bad))
                }
                other => panic!("{name} v{bad}: {other:?}"),
            }
        }
        let expected = value.as_version(ver);
        let as_value = match value.encoded_len(version) {
            Ok(n) => {
                assert_eq!(expected.encoded_len(version), Ok(n), "the value as the version carries it");
                Some(encode_and_read_back!(&value, &expected, key, version, $Value, $View, $walk))
            }
            Err(e) => {
                assert!(documented(&e), "{name} v{version}: undocumented size error {e}");
                // The one-pass write refuses it too, with the size step's error.
                assert_eq!(value.encode(version, &mut vec![0u8; 1 << 16]), Err(e), "{name} v{version}");
                None
            }
        };
        match expected.encoded_len(version) {
            Ok(_) => {
                let bytes = encode_and_read_back!(&expected, &expected, key, version, $Value, $View, $walk);
                if let Some(first) = as_value {
                    assert_eq!(first, bytes, "fields the version drops leave no trace in the bytes");
                }
                frame_roundtrip(&expected, version, is_request, &bytes, u);
            }
            // A null the version cannot carry is an error, not something `as_version` drops.
            Err(e) => {
                assert!(
                    matches!(e, EncodeError::InvalidTaggedFields { .. } | EncodeError::NullNotAllowed { .. }),
                    "{e}"
                );
                assert_eq!(expected.encode(version, &mut vec![0u8; 1 << 16]), Err(e), "{name} v{version}");
            }
        }
    }};
}

/// The value through the whole-frame encoders and parsers.
fn frame_roundtrip<B: AnyBody>(
    body: &B,
    version: i16,
    is_request: bool,
    body_bytes: &[u8],
    u: &mut Unstructured<'_>,
) {
    let key = body.api_key();
    let correlation_id: i32 = u.arbitrary().unwrap_or(0);
    if is_request {
        let client_id: Option<&str> = u.arbitrary().unwrap_or(None);
        let raw: Vec<RawTaggedField<'_>> = u.arbitrary().unwrap_or_default();
        let header = frame::RequestHeader { correlation_id, client_id, unknown_tagged_fields: &raw };
        let len = match dispatch::request_len(body, version, &header) {
            Ok(len) => len,
            Err(EncodeError::StringTooLong { .. } | EncodeError::InvalidTaggedFields { .. }) => return,
            Err(e) => panic!("request_len: {e}"),
        };
        let mut buf = vec![0u8; len];
        assert_eq!(dispatch::encode_request_with(body, version, &header, &mut buf), Ok(len));
        let Ok(FrameStatus::Complete { frame: f, consumed }) = frame::split_frame(&buf, usize::MAX) else {
            panic!("an encoded frame splits")
        };
        assert_eq!(consumed, len);
        let req = dispatch::parse_request(f).expect("an encoded frame parses");
        assert_eq!(req.header.correlation_id(), correlation_id);
        assert_eq!(req.header.client_id(), client_id);
        let flexible = key.flexible_versions().contains(version);
        let tags: Vec<_> = req.header.unknown_tagged_fields().collect();
        let sent: Vec<_> = if flexible { raw.iter().map(|t| (t.tag, &t.data[..])).collect() } else { vec![] };
        assert_eq!(tags, sent);
        assert_eq!(req.body.as_bytes(), body_bytes);
    } else {
        let len = dispatch::response_len(body, version).expect("sized before");
        let mut buf = vec![0u8; len];
        assert_eq!(dispatch::encode_response(body, version, correlation_id, &mut buf), Ok(len));
        let resp = dispatch::parse_response(&buf[4..], key, version).expect("an encoded frame parses");
        assert_eq!(resp.header.correlation_id(), correlation_id);
        assert_eq!(resp.body.as_bytes(), body_bytes);
    }
}

/// Structure-aware: an arbitrary value of the selected message, sized, encoded and read
/// back at the selected version.
pub fn roundtrip(data: &[u8]) {
    let [a, b, rest @ ..] = data else { return };
    let u = &mut Unstructured::new(rest);
    match message(*a) {
        (key, false) => roundtrip_message!(u, *b, key, RequestBody, RequestBodyView, walk_request, true),
        (key, true) => roundtrip_message!(u, *b, key, ResponseBody, ResponseBodyView, walk_response, false),
    }
}

// ------------------------------------------------------------------ primitives

/// Apache Kafka's `ByteUtils.readUnsignedVarint`, transcribed: up to five bytes, bits
/// beyond 32 dropped, a sixth byte an error. `None` for truncated or too long.
pub fn kafka_uvarint(bytes: &[u8]) -> Option<(u32, usize)> {
    let mut value: u32 = 0;
    let mut shift = 0u32;
    for (i, &b) in bytes.iter().enumerate() {
        if i >= 5 {
            return None;
        }
        value |= u32::from(b & 0x7f).wrapping_shl(shift);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
        shift += 7;
    }
    None
}

/// `ByteUtils.readUnsignedVarlong`: up to ten bytes.
pub fn kafka_uvarlong(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value: u64 = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if i >= 10 {
            return None;
        }
        value |= u64::from(b & 0x7f).wrapping_shl(7 * i as u32);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

fn varints(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let (a, b, c, d): (u32, u64, i32, i64) = u.arbitrary()?;
    let mut buf = [0u8; 10];
    let n = wire::uvarint_len(a);
    let mut w = Writer::new(&mut buf[..n]);
    w.uvarint(a);
    assert_eq!(w.pos(), n);
    assert_eq!(kafka_uvarint(&buf[..n]), Some((a, n)));
    let mut r = Reader::new(&buf[..n]);
    assert_eq!(r.uvarint("x"), Ok(a));
    assert_eq!(r.remaining(), 0);

    let n = wire::uvarlong_len(b);
    let mut w = Writer::new(&mut buf[..n]);
    w.uvarlong(b);
    assert_eq!(w.pos(), n);
    assert_eq!(kafka_uvarlong(&buf[..n]), Some((b, n)));
    assert_eq!(Reader::new(&buf[..n]).uvarlong("x"), Ok(b));

    let n = wire::varint_len(c);
    let mut w = Writer::new(&mut buf[..n]);
    w.varint(c);
    assert_eq!(w.pos(), n);
    assert_eq!(Reader::new(&buf[..n]).varint("x"), Ok(c));

    let n = wire::varlong_len(d);
    let mut w = Writer::new(&mut buf[..n]);
    w.varlong(d);
    assert_eq!(w.pos(), n);
    let mut r = Reader::new(&buf[..n]);
    assert_eq!(r.varlong("x"), Ok(d));
    assert_eq!(r.remaining(), 0);
    // A writer with too little room stops within its buffer and says it did not finish.
    let mut small = [0u8; 1];
    let mut w = Writer::new(&mut small);
    w.varlong(d);
    assert!(w.pos() <= 1);
    assert_eq!(w.finish(), if n == 1 { Some(1) } else { None });
    Ok(())
}

fn strings(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let (s, flexible, null): (&str, bool, bool) = u.arbitrary()?;
    let s = if null { None } else { Some(s) };
    let size = match s {
        Some(s) => match wire::string_size(s.len(), flexible, "S.s") {
            Ok(n) => n,
            Err(e) => {
                assert!(s.len() > wire::MAX_STRING_LEN);
                assert_eq!(e, EncodeError::StringTooLong { field: "S.s", len: s.len() });
                // The writer rejects it, however much room it has.
                let mut buf = vec![0u8; s.len() + 3];
                let mut w = Writer::new(&mut buf);
                w.nullable_str(Some(s), flexible);
                assert_eq!(w.finish(), None);
                return Ok(());
            }
        },
        None => wire::null_size(flexible, false),
    };
    let mut buf = vec![0u8; size];
    let mut w = Writer::new(&mut buf);
    w.nullable_str(s, flexible);
    assert_eq!(w.pos(), size);
    let mut r = Reader::new(&buf);
    assert_eq!(r.nullable_str(flexible, "S.s"), Ok(s));
    assert_eq!(r.remaining(), 0);
    let mut r = Reader::new(&buf);
    match s {
        Some(s) => {
            assert_eq!(r.str(flexible, "S.s"), Ok(s));
            assert_eq!(Reader::new(&buf).str_bytes(flexible, "S.s"), Ok(s.as_bytes()));
        }
        None => assert_eq!(r.str(flexible, "S.s"), Err(DecodeError::new(K::UnexpectedNull, 0, "S.s"))),
    }
    // Every strict prefix is truncated.
    for cut in 0..size {
        let e = Reader::new(&buf[..cut]).nullable_str(flexible, "S.s").expect_err("a strict prefix");
        assert!(matches!(e.kind(), K::Truncated { .. }), "{e}");
    }
    Ok(())
}

fn byte_arrays(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let (b, flexible, null): (&[u8], bool, bool) = u.arbitrary()?;
    let b = if null { None } else { Some(b) };
    let size = match b {
        Some(b) => wire::bytes_size(b.len(), flexible, "S.b").expect("short"),
        None => wire::null_size(flexible, true),
    };
    let mut buf = vec![0u8; size];
    let mut w = Writer::new(&mut buf);
    w.nullable_bytes(b, flexible);
    assert_eq!(w.pos(), size);
    let mut r = Reader::new(&buf);
    assert_eq!(r.nullable_bytes(flexible, "S.b"), Ok(b));
    assert_eq!(r.remaining(), 0);
    let expected = b.ok_or(DecodeError::new(K::UnexpectedNull, 0, "S.b"));
    assert_eq!(Reader::new(&buf).bytes(flexible, "S.b"), expected);
    Ok(())
}

fn array_counts(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let (count, flexible, null, extra): (u16, bool, bool, u8) = u.arbitrary()?;
    let count = usize::from(count);
    let prefix = if null {
        wire::null_size(flexible, true)
    } else {
        wire::array_prefix_size(count, flexible, "S.a").expect("small")
    };
    // Room for `count` one-byte elements, or one byte less.
    let body = if extra % 2 == 0 || count == 0 || null { count } else { count - 1 };
    let mut buf = vec![0u8; prefix + body];
    let mut w = Writer::new(&mut buf);
    w.array_len((!null).then_some(count), flexible);
    assert_eq!(w.pos(), prefix);
    let mut r = Reader::new(&buf);
    let got = r.array_len(flexible, "S.a");
    if null {
        assert_eq!(got, Ok(None));
        let e = Reader::new(&buf).array_len_non_null(flexible, "S.a");
        assert_eq!(e, Err(DecodeError::new(K::UnexpectedNull, 0, "S.a")));
    } else if body == count {
        assert_eq!(got, Ok(Some(count)));
        assert_eq!(r.pos(), prefix);
        assert_eq!(Reader::new(&buf).array_len_non_null(flexible, "S.a"), Ok(count));
    } else {
        assert_eq!(got, Err(DecodeError::new(K::ArrayTooLong(count as u32), 0, "S.a")));
        assert_eq!(r.pos(), 0, "a failed count leaves the reader where it was");
    }
    Ok(())
}

static KNOWN: [u32; 4] = [0, 1, 2, 3];

fn tagged_sections(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let raw: Vec<RawTaggedField<'_>> = u.arbitrary()?;
    let known_present: [bool; 4] = u.arbitrary()?;
    let ascending = raw.windows(2).all(|w| w[0].tag < w[1].tag);
    match wire::raw_tagged_fields_size(&raw, "S") {
        Ok(size) => {
            assert!(ascending);
            let mut buf = vec![0u8; size];
            let mut w = Writer::new(&mut buf);
            w.raw_tagged_fields(&raw);
            assert_eq!(w.pos(), size, "raw_tagged_fields_size is exact");
            let mut r = Reader::new(&buf);
            let mut seen = Vec::new();
            let section = r
                .tagged_fields("S", |tag, value| {
                    seen.push((tag, value.remaining()));
                    Ok(false)
                })
                .expect("a written section reads back");
            assert_eq!(r.remaining(), 0);
            assert_eq!(section.count() as usize, raw.len());
            let back: Vec<_> = section.iter().collect();
            let sent: Vec<_> = raw.iter().map(|t| (t.tag, &t.data[..])).collect();
            assert_eq!(back, sent);
            assert_eq!(seen, raw.iter().map(|t| (t.tag, t.data.len())).collect::<Vec<_>>());
            let unknown: Vec<_> = section.unknown(&KNOWN).collect();
            let expected: Vec<_> = sent.iter().copied().filter(|(t, _)| !KNOWN.contains(t)).collect();
            assert_eq!(unknown, expected);
            // Each strict prefix of the section fails.
            for cut in 0..size {
                assert!(Reader::new(&buf[..cut]).tagged_fields("S", |_, _| Ok(false)).is_err());
            }
        }
        Err(EncodeError::InvalidTaggedFields { field: "S", tag }) => {
            assert!(!ascending);
            let first_bad = raw.windows(2).find(|w| w[0].tag >= w[1].tag).unwrap()[1].tag;
            assert_eq!(tag, first_bad);
            // The writer rejects the section, however much room it has.
            let mut buf = vec![0u8; 1 << 12];
            let mut w = Writer::new(&mut buf);
            w.raw_tagged_fields(&raw);
            assert_eq!(w.finish(), None);
        }
        Err(e) => panic!("raw_tagged_fields_size: {e}"),
    }
    // Known fields merged with unknown ones: the size is the sum of the parts.
    let mut size = TaggedSize::new();
    let mut count = 0u32;
    let mut bytes = 0usize;
    for (tag, present) in KNOWN.iter().zip(known_present) {
        if present {
            let len = usize::from(tag.wrapping_mul(7) as u8);
            size.field(*tag, len, "S.k").unwrap();
            count += 1;
            bytes += wire::uvarint_len(*tag) + wire::uvarint_len(len as u32) + len;
        }
    }
    let clash = raw.iter().any(|t| KNOWN.contains(&t.tag));
    match size.finish(&raw, &KNOWN, "S") {
        Ok(n) => {
            assert!(ascending && !clash);
            for t in &raw {
                count += 1;
                bytes += wire::uvarint_len(t.tag) + wire::uvarint_len(t.data.len() as u32) + t.data.len();
            }
            assert_eq!(n, bytes + wire::uvarint_len(count));
        }
        Err(EncodeError::InvalidTaggedFields { .. }) => assert!(!ascending || clash),
        Err(e) => panic!("TaggedSize::finish: {e}"),
    }
    Ok(())
}

/// Arbitrary bytes read as a sequence of primitives chosen by `ops`: never a panic, and
/// each primitive either advances by what it read or reports an error.
fn read_arbitrary(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let ops: Vec<u8> = u.arbitrary()?;
    let input = u.bytes(u.len())?;
    let mut r = Reader::new(input);
    for op in ops {
        let before = r.pos();
        let flexible = op & 0x80 != 0;
        let at = &input[before..];
        let ok = match op % 16 {
            0 => {
                let got = r.uvarint("f");
                match kafka_uvarint(at) {
                    Some((v, n)) => {
                        assert_eq!(got, Ok(v));
                        assert_eq!(r.pos() - before, n);
                        assert!(wire::uvarint_len(v) <= n);
                    }
                    None if at.len() >= 5 => assert_eq!(got.map_err(|e| e.kind()), Err(K::VarintTooLong)),
                    None => assert!(matches!(got.map_err(|e| e.kind()), Err(K::Truncated { .. }))),
                }
                if got.is_err() {
                    assert_eq!(r.pos(), before, "a failed varint leaves the reader where it was");
                }
                got.is_ok()
            }
            1 => {
                let got = r.uvarlong("f");
                match kafka_uvarlong(at) {
                    Some((v, n)) => assert_eq!((got, r.pos() - before), (Ok(v), n)),
                    None => assert!(got.is_err()),
                }
                got.is_ok()
            }
            2 => r.varint("f").is_ok(),
            3 => r.varlong("f").is_ok(),
            4 => r.i8("f").is_ok(),
            5 => r.i16("f").is_ok(),
            6 => r.i32("f").is_ok(),
            7 => r.i64("f").is_ok() && r.f64("f").is_ok(),
            8 => r.uuid("f").is_ok() && r.bool("f").is_ok() && r.u16("f").is_ok() && r.u32("f").is_ok(),
            9 => match r.nullable_str(flexible, "f") {
                Ok(s) => {
                    assert!(s.is_none_or(|s| s.len() <= wire::MAX_STRING_LEN));
                    true
                }
                Err(_) => false,
            },
            10 => r.str_bytes(flexible, "f").is_ok(),
            11 => r.nullable_bytes(flexible, "f").is_ok(),
            12 => match r.array_len(flexible, "f") {
                Ok(Some(n)) => {
                    assert!(n <= r.remaining(), "a count is never above the bytes left");
                    true
                }
                Ok(None) => true,
                Err(_) => {
                    assert_eq!(r.pos(), before, "a failed count leaves the reader where it was");
                    false
                }
            },
            13 => {
                let mut last = None;
                let got = r.tagged_fields("f", |tag, value| {
                    assert!(last.is_none_or(|l| tag > l));
                    last = Some(tag);
                    black_box(value.remaining());
                    Ok(op & 0x40 != 0 && value.i8("g").is_ok() && value.remaining() == 0)
                });
                if let Ok(section) = got {
                    assert_eq!(section.iter().count() as u32, section.count());
                }
                got.is_ok()
            }
            14 => {
                let n = usize::from(op >> 4);
                r.sub(n, "f").map(|s| assert_eq!(s.remaining(), n)).is_ok()
            }
            _ => r.finish("f").is_ok(),
        };
        assert!(r.pos() >= before && r.pos() <= input.len());
        if !ok {
            return Ok(());
        }
    }
    Ok(())
}

/// Varints, lengths, strings, bytes, array counts and tagged sections: written and read
/// back, and arbitrary bytes read without a panic.
pub fn primitives(data: &[u8]) {
    let Some((&op, rest)) = data.split_first() else { return };
    let u = &mut Unstructured::new(rest);
    let _ = match op % 7 {
        0 => varints(u),
        1 => strings(u),
        2 => byte_arrays(u),
        3 => array_counts(u),
        4 => tagged_sections(u),
        5 => read_arbitrary(u),
        _ => {
            // Independent varint decoding of the raw bytes, both widths.
            let mut r = Reader::new(rest);
            // Kafka's policy throughout: what it reads, kwire reads the same; what it refuses,
            // kwire refuses.
            let got = r.uvarint("f").ok().map(|v| (v, r.pos()));
            assert_eq!(got, kafka_uvarint(rest));
            let mut r = Reader::new(rest);
            let got = r.uvarlong("f").ok().map(|v| (v, r.pos()));
            assert_eq!(got, kafka_uvarlong(rest));
            Ok(())
        }
    };
}
pub mod capture;
pub mod conn;
pub mod encrypt;
pub mod explain;
pub mod records;
pub mod validate;
pub mod vectored;
