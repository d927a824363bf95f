//! The `vectored` fuzz target's properties: the vectored encoders (`kwire::vectored`)
//! against `encode`, for arbitrary bodies with `records` fields.
//!
//! Byte 0 selects: bits 0-1 the body (ProduceRequest, FetchResponse, ShareFetchResponse,
//! FetchSnapshotResponse); bit 2 set: the value as the version carries it (`AsVersion`)
//! rather than as generated; bit 3 set: a whole frame (size prefix and header, against
//! `dispatch::encode_*_with`) rather than the bare body; bit 4 set (with bit 3): the header
//! carries an unknown tagged field. Byte 1 the version (`min + b % count`); the rest feeds
//! `arbitrary`.
//!
//! For every input: the vectored size step fails exactly when `encoded_len` does, with the
//! same error; otherwise the parts concatenated are `encode`'s bytes, the number of parts
//! is the one announced and nothing is written past it, every records part is the value's
//! own slice (same pointer) in wire order and no other part is empty, and a buffer or part
//! array one short is refused with its typed error.

use arbitrary::{Arbitrary, Unstructured};
use kwire::frame::{RequestHeader, ResponseHeader};
use kwire::messages::fetch::FetchResponse;
use kwire::messages::fetch_snapshot::FetchSnapshotResponse;
use kwire::messages::produce::ProduceRequest;
use kwire::messages::share_fetch::ShareFetchResponse;
use kwire::testing::AsVersion;
use kwire::types::Ver;
use kwire::vectored::{self, Part, VectoredBody, VectoredLen};
use kwire::{AnyBody, EncodeError, List, RawTaggedField, dispatch};

/// The bytes of every records field of a body, in wire order (null fields left out).
trait RecordFields {
    fn record_fields(&self) -> Vec<&[u8]>;
}

impl RecordFields for ProduceRequest<'_> {
    fn record_fields(&self) -> Vec<&[u8]> {
        let partitions = self.topic_data.iter().flat_map(|t| t.partition_data.iter());
        partitions.filter_map(|p| p.records.as_deref()).collect()
    }
}

impl RecordFields for FetchResponse<'_> {
    fn record_fields(&self) -> Vec<&[u8]> {
        self.responses.iter().flat_map(|t| t.partitions.iter()).filter_map(|p| p.records.as_deref()).collect()
    }
}

impl RecordFields for ShareFetchResponse<'_> {
    fn record_fields(&self) -> Vec<&[u8]> {
        self.responses.iter().flat_map(|t| t.partitions.iter()).map(|p| p.records.as_slice()).collect()
    }
}

impl RecordFields for FetchSnapshotResponse<'_> {
    fn record_fields(&self) -> Vec<&[u8]> {
        self.topics.iter().flat_map(|t| t.partitions.iter()).map(|p| p.unaligned_records.as_slice()).collect()
    }
}

fn concat(parts: &[Part<'_>]) -> Vec<u8> {
    parts.iter().flat_map(|p| p.bytes().iter().copied()).collect()
}

/// The parts' own properties: records parts are `records` (the non-empty ones, same
/// pointers), no part is empty, and the buffer's pieces add up to `len.buf`.
fn check_parts(parts: &[Part<'_>], records: &[&[u8]], len: VectoredLen) {
    let want: Vec<&[u8]> = records.iter().copied().filter(|r| !r.is_empty()).collect();
    let got: Vec<&[u8]> = parts.iter().filter(|p| p.is_records()).map(|p| p.bytes()).collect();
    assert_eq!(got.len(), want.len(), "records parts");
    for (g, w) in got.iter().zip(&want) {
        assert_eq!((g.as_ptr(), g.len()), (w.as_ptr(), w.len()), "a records part is not the field's slice");
    }
    assert!(parts.iter().all(|p| !p.bytes().is_empty()), "an empty part");
    let buf: usize = parts.iter().filter(|p| !p.is_records()).map(|p| p.bytes().len()).sum();
    assert_eq!(buf, len.buf, "buffer pieces");
    assert!(
        parts.windows(2).all(|w| !(w[0].is_records() && w[1].is_records())),
        "two records parts in a row"
    );
}

fn body<B: VectoredBody + RecordFields + std::fmt::Debug>(
    value: &B,
    version: i16,
    encode_vectored: impl for<'b> Fn(&'b B, &'b mut [u8], &mut [Part<'b>]) -> Result<VectoredLen, EncodeError>,
    vectored_len: impl Fn(&B) -> Result<VectoredLen, EncodeError>,
) {
    let n = match value.encoded_len(version) {
        Ok(n) => n,
        Err(e) => {
            assert_eq!(vectored_len(value), Err(e), "the size steps disagree");
            assert_eq!(encode_vectored(value, &mut [], &mut []), Err(e));
            return;
        }
    };
    let mut plain = vec![0u8; n];
    assert_eq!(value.encode(version, &mut plain), Ok(n));
    let len = vectored_len(value).expect("encoded_len succeeded");
    assert_eq!(len.total, n);
    let mut buf = vec![0u8; len.buf];
    let sentinel: &[u8] = b"sentinel";
    let mut parts = vec![Part::Encoded(sentinel); len.parts + 1];
    assert_eq!(encode_vectored(value, &mut buf, &mut parts), Ok(len));
    assert_eq!(parts[len.parts], Part::Encoded(sentinel), "written past the parts");
    assert_eq!(concat(&parts[..len.parts]), plain, "the parts differ from encode");
    check_parts(&parts[..len.parts], &value.record_fields(), len);
    if len.buf > 0 {
        let mut short = vec![0u8; len.buf - 1];
        let mut parts = vec![Part::Encoded(&[]); len.parts];
        let err = EncodeError::BufferTooSmall { needed: len.buf, available: len.buf - 1 };
        assert_eq!(encode_vectored(value, &mut short, &mut parts), Err(err));
    }
    if len.parts > 0 {
        let mut buf = vec![0u8; len.buf];
        let mut parts = vec![Part::Encoded(&[]); len.parts - 1];
        let err = EncodeError::TooFewParts { needed: len.parts, available: len.parts - 1 };
        assert_eq!(encode_vectored(value, &mut buf, &mut parts), Err(err));
    }
}

fn frame<B: VectoredBody + RecordFields>(value: &B, version: i16, tagged: bool) {
    let tags = [RawTaggedField { tag: 3, data: List::Borrowed(b"t") }];
    let tags: &[RawTaggedField<'_>] = if tagged { &tags } else { &[] };
    let (plain, len, parts) = if B::IS_REQUEST {
        let header =
            RequestHeader { correlation_id: 9, client_id: Some("fuzz"), unknown_tagged_fields: tags };
        let Ok(n) = dispatch::request_len(value, version, &header) else {
            assert!(vectored::request_len(value, version, &header).is_err());
            return;
        };
        let mut plain = vec![0u8; n];
        assert_eq!(dispatch::encode_request_with(value, version, &header, &mut plain), Ok(n));
        let len = vectored::request_len(value, version, &header).expect("request_len succeeded");
        let mut buf = vec![0u8; len.buf];
        let mut parts = vec![Part::Encoded(&[]); len.parts];
        assert_eq!(vectored::encode_request(value, version, &header, &mut buf, &mut parts), Ok(len));
        check_parts(&parts, &value.record_fields(), len);
        (plain, len, concat(&parts))
    } else {
        let header = ResponseHeader { correlation_id: 9, unknown_tagged_fields: tags };
        let Ok(n) = dispatch::response_len_with(value, version, &header) else {
            assert!(vectored::response_len(value, version, &header).is_err());
            return;
        };
        let mut plain = vec![0u8; n];
        assert_eq!(dispatch::encode_response_with(value, version, &header, &mut plain), Ok(n));
        let len = vectored::response_len(value, version, &header).expect("response_len succeeded");
        let mut buf = vec![0u8; len.buf];
        let mut parts = vec![Part::Encoded(&[]); len.parts];
        assert_eq!(vectored::encode_response(value, version, &header, &mut buf, &mut parts), Ok(len));
        check_parts(&parts, &value.record_fields(), len);
        (plain, len, concat(&parts))
    };
    assert_eq!(len.total, plain.len());
    assert_eq!(parts, plain, "the frame differs from dispatch's");
}

macro_rules! run {
    ($Body:ident, $mode:expr, $version:expr, $u:expr) => {{
        let Ok(value) = $Body::arbitrary($u) else { return };
        let versions = <$Body<'_> as kwire::Body>::VERSIONS;
        let count = (versions.max - versions.min + 1) as u16;
        let version = versions.min + (u16::from($version) % count) as i16;
        let flexible = <$Body<'_> as kwire::Body>::FLEXIBLE_VERSIONS.contains(version);
        let value = if $mode & 4 != 0 { value.as_version(Ver::new(version, flexible)) } else { value };
        if $mode & 8 != 0 {
            frame(&value, version, $mode & 16 != 0);
        } else {
            body(
                &value,
                version,
                |v, buf, parts| v.encode_vectored(version, buf, parts),
                |v| v.vectored_len(version),
            );
        }
    }};
}

/// The target: see the module docs for the selector bytes.
pub fn vectored(data: &[u8]) {
    let [mode, version, rest @ ..] = data else { return };
    let u = &mut Unstructured::new(rest);
    match mode & 3 {
        0 => run!(ProduceRequest, mode, *version, u),
        1 => run!(FetchResponse, mode, *version, u),
        2 => run!(ShareFetchResponse, mode, *version, u),
        _ => run!(FetchSnapshotResponse, mode, *version, u),
    }
}
