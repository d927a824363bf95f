//! The vectored encoders (`kwire::vectored`) against `encode`, for every body with `records`
//! fields at every version: arbitrary values, and the real clients' Produce requests of
//! `tests/vectors/records` (and Fetch responses carrying their batches).
//!
//! For each value and version: the size step fails exactly when `encoded_len` does, with
//! the same error; otherwise its total is `encoded_len`, the parts concatenated are the bytes
//! `encode` writes, the number of parts is the one announced, every records part is the
//! value's own slice (same pointer: nothing copied) in wire order, every other part is a
//! non-empty piece of the caller's buffer, and a buffer or part array one short is refused
//! with its typed error. Whole frames are held against `dispatch::encode_*_with`. Nothing
//! allocates (`tests/common/counting.rs`).

mod common;

use std::io::IoSlice;

use arbitrary::{Arbitrary, Unstructured};
use common::{XorShift, hex, vectors_dir};
use kwire::frame::{RequestHeader, ResponseHeader};
use kwire::messages::fetch::{FetchResponse, FetchableTopicResponse, PartitionData};
use kwire::messages::fetch_snapshot::FetchSnapshotResponse;
use kwire::messages::produce::{ProduceRequest, ProduceRequestView};
use kwire::messages::share_fetch::ShareFetchResponse;
use kwire::testing::AsVersion;
use kwire::types::Ver;
use kwire::vectored::{self, Part, VectoredBody, VectoredLen};
use kwire::{Body, EncodeError, List, dispatch};

#[global_allocator]
static GLOBAL: common::counting::Counting = common::counting::Counting;

/// `f`'s result and the allocations it made (fails if the counter is not installed).
fn allocations<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let (n, out) = common::counting::allocations(f);
    (out, n)
}

// ------------------------------------------------------------------ the bodies

/// What the tests need of a body with records, beyond the library's traits.
trait Records: VectoredBody + AsVersion + std::fmt::Debug {
    /// The bytes of every records field, in wire order (null fields left out).
    fn records(&self) -> Vec<&[u8]>;
    /// `encoded_len` and `encode`.
    fn len(&self, version: i16) -> Result<usize, EncodeError>;
    fn enc(&self, version: i16, buf: &mut [u8]) -> Result<usize, EncodeError>;
    fn vlen(&self, version: i16) -> Result<VectoredLen, EncodeError>;
    fn venc<'b, S: vectored::Slot<'b>>(
        &'b self,
        version: i16,
        buf: &'b mut [u8],
        parts: &mut [S],
    ) -> Result<VectoredLen, EncodeError>;
}

macro_rules! records_body {
    ($Body:ident, |$b:ident| $walk:expr) => {
        impl Records for $Body<'_> {
            fn records(&self) -> Vec<&[u8]> {
                let $b = self;
                $walk
            }
            fn len(&self, version: i16) -> Result<usize, EncodeError> {
                self.encoded_len(version)
            }
            fn enc(&self, version: i16, buf: &mut [u8]) -> Result<usize, EncodeError> {
                self.encode(version, buf)
            }
            fn vlen(&self, version: i16) -> Result<VectoredLen, EncodeError> {
                self.vectored_len(version)
            }
            fn venc<'b, S: vectored::Slot<'b>>(
                &'b self,
                version: i16,
                buf: &'b mut [u8],
                parts: &mut [S],
            ) -> Result<VectoredLen, EncodeError> {
                self.encode_vectored(version, buf, parts)
            }
        }
    };
}

records_body!(ProduceRequest, |b| b
    .topic_data
    .iter()
    .flat_map(|t| t.partition_data.iter().filter_map(|p| p.records.as_deref()))
    .collect());
records_body!(FetchResponse, |b| b
    .responses
    .iter()
    .flat_map(|t| t.partitions.iter().filter_map(|p| p.records.as_deref()))
    .collect());
records_body!(ShareFetchResponse, |b| b
    .responses
    .iter()
    .flat_map(|t| t.partitions.iter().map(|p| p.records.as_slice()))
    .collect());
records_body!(FetchSnapshotResponse, |b| b
    .topics
    .iter()
    .flat_map(|t| t.partitions.iter().map(|p| p.unaligned_records.as_slice()))
    .collect());

// ------------------------------------------------------------------ the check

#[derive(Default)]
struct Counts {
    encoded: usize,
    refused: usize,
    parts: usize,
    records_parts: usize,
}

/// Every property of the module docs for `body` at `version`; returns whether it encoded.
fn check<B: Records>(body: &B, version: i16, counts: &mut Counts) -> bool {
    let name = B::NAME;
    let len = match body.len(version) {
        Ok(n) => n,
        Err(e) => {
            assert_eq!(body.vlen(version), Err(e), "{name} v{version}: the size steps disagree");
            let mut buf = [0u8; 0];
            let mut parts: [Part<'_>; 0] = [];
            assert_eq!(body.venc(version, &mut buf, &mut parts), Err(e));
            counts.refused += 1;
            return false;
        }
    };
    let mut plain = vec![0u8; len];
    assert_eq!(body.enc(version, &mut plain), Ok(len));

    let vlen = body.vlen(version).unwrap_or_else(|e| panic!("{name} v{version}: {e}"));
    let records = body.records();
    let record_bytes: usize = records.iter().map(|r| r.len()).sum();
    let non_empty: Vec<&[u8]> = records.iter().copied().filter(|r| !r.is_empty()).collect();
    assert_eq!(vlen.total, len, "{name} v{version}: total");
    assert_eq!(vlen.buf, len - record_bytes, "{name} v{version}: buffer bytes");
    assert!(
        vlen.parts == 2 * non_empty.len() || vlen.parts == 2 * non_empty.len() + 1,
        "{name} v{version}: {} parts for {} records parts",
        vlen.parts,
        non_empty.len()
    );

    // Exactly sized buffer and array; one more entry, left as it was, shows nothing is
    // written past the announced count.
    let mut buf = vec![0u8; vlen.buf];
    let buf_range = buf.as_ptr_range();
    let sentinel: &[u8] = b"sentinel";
    let mut parts = vec![Part::Encoded(sentinel); vlen.parts + 1];
    let used = body.venc(version, &mut buf, &mut parts).unwrap_or_else(|e| panic!("{name} v{version}: {e}"));
    assert_eq!(used, vlen, "{name} v{version}: what the write step used");
    assert_eq!(parts[vlen.parts], Part::Encoded(sentinel), "{name} v{version}: wrote past the parts");
    let parts = &parts[..vlen.parts];
    assert_eq!(parts.concat_bytes(), plain, "{name} v{version}: parts differ from encode");

    let got: Vec<&[u8]> = parts.iter().filter(|p| p.is_records()).map(|p| p.bytes()).collect();
    assert_eq!(got.len(), non_empty.len(), "{name} v{version}: records parts");
    for (g, want) in got.iter().zip(&non_empty) {
        assert_eq!(g.as_ptr(), want.as_ptr(), "{name} v{version}: a records part was copied");
        assert_eq!(g.len(), want.len());
    }
    let mut in_buf = 0;
    for (i, p) in parts.iter().enumerate() {
        assert!(!p.bytes().is_empty(), "{name} v{version}: empty part {i}");
        if let Part::Encoded(b) = p {
            assert!(buf_range.contains(&b.as_ptr()), "{name} v{version}: part {i} is not in the buffer");
            in_buf += b.len();
        }
        if i > 0 {
            assert!(!(p.is_records() && parts[i - 1].is_records()), "{name} v{version}: two records parts");
        }
    }
    assert_eq!(in_buf, vlen.buf);
    counts.parts += vlen.parts;
    counts.records_parts += non_empty.len();

    // One short, either way: the typed errors, nothing written into the parts.
    if vlen.buf > 0 {
        let mut short = vec![0u8; vlen.buf - 1];
        let mut parts = vec![Part::Encoded(&[]); vlen.parts];
        assert_eq!(
            body.venc(version, &mut short, &mut parts),
            Err(EncodeError::BufferTooSmall { needed: vlen.buf, available: vlen.buf - 1 })
        );
        assert!(parts.iter().all(|p| p.bytes().is_empty()));
    }
    if vlen.parts > 0 {
        let mut buf = vec![0u8; vlen.buf];
        let mut parts = vec![Part::Encoded(&[]); vlen.parts - 1];
        assert_eq!(
            body.venc(version, &mut buf, &mut parts),
            Err(EncodeError::TooFewParts { needed: vlen.parts, available: vlen.parts - 1 })
        );
    }

    // The other slot types give the same bytes.
    let mut buf = vec![0u8; vlen.buf];
    let mut slices: Vec<&[u8]> = vec![&[]; vlen.parts];
    body.venc(version, &mut buf, &mut slices).unwrap();
    assert_eq!(slices.concat(), plain);
    let mut buf = vec![0u8; vlen.buf];
    let mut iov = vec![IoSlice::new(&[]); vlen.parts];
    body.venc(version, &mut buf, &mut iov).unwrap();
    let mut out = Vec::new();
    vectored::write_all(&mut out, &mut iov).unwrap();
    assert_eq!(out, plain);

    check_frames(body, version);
    counts.encoded += 1;
    true
}

/// Whole frames, request or response as the body is, against `dispatch`.
fn check_frames<B: Records>(body: &B, version: i16) {
    let name = B::NAME;
    let tagged = [kwire::RawTaggedField { tag: 5, data: List::Borrowed(b"xyz") }];
    for tags in [&[][..], &tagged[..]] {
        let (plain, vlen, buf, parts) = if B::IS_REQUEST {
            let header = RequestHeader {
                correlation_id: 77,
                client_id: Some("vectored"),
                unknown_tagged_fields: tags,
            };
            let n = dispatch::request_len(body, version, &header).unwrap();
            let mut plain = vec![0u8; n];
            assert_eq!(dispatch::encode_request_with(body, version, &header, &mut plain), Ok(n));
            let vlen = vectored::request_len(body, version, &header).unwrap();
            let mut buf = vec![0u8; vlen.buf];
            let mut parts = vec![Part::Encoded(&[]); vlen.parts];
            let used = vectored::encode_request(body, version, &header, &mut buf, &mut parts).unwrap();
            assert_eq!(used, vlen);
            let bytes = parts.concat_bytes();
            (plain, vlen, buf.len(), bytes)
        } else {
            let header = ResponseHeader { correlation_id: 77, unknown_tagged_fields: tags };
            let n = dispatch::response_len_with(body, version, &header).unwrap();
            let mut plain = vec![0u8; n];
            assert_eq!(dispatch::encode_response_with(body, version, &header, &mut plain), Ok(n));
            let vlen = vectored::response_len(body, version, &header).unwrap();
            let mut buf = vec![0u8; vlen.buf];
            let mut parts = vec![Part::Encoded(&[]); vlen.parts];
            let used = vectored::encode_response(body, version, &header, &mut buf, &mut parts).unwrap();
            assert_eq!(used, vlen);
            // The first part starts with the size prefix: one writev sends the frame.
            assert!(matches!(parts.first(), Some(Part::Encoded(b)) if b.len() >= 4));
            let bytes = parts.concat_bytes();
            (plain, vlen, buf.len(), bytes)
        };
        assert_eq!(vlen.total, plain.len(), "{name} v{version}: frame length");
        assert_eq!(buf, vlen.buf);
        assert_eq!(parts, plain, "{name} v{version}: the frame differs from dispatch's");
    }
}

trait Concat {
    fn concat_bytes(&self) -> Vec<u8>;
}

impl Concat for [Part<'_>] {
    fn concat_bytes(&self) -> Vec<u8> {
        self.iter().flat_map(|p| p.bytes().iter().copied()).collect()
    }
}

impl Concat for Vec<Part<'_>> {
    fn concat_bytes(&self) -> Vec<u8> {
        self.as_slice().concat_bytes()
    }
}

/// Values per body and version (each value is tried at every version, as generated and as
/// the version carries it): a body with few versions gets more values.
const CASES: usize = 2400;

/// Values of `$Body` from a seeded stream, each checked at every version as generated and
/// as the version carries it.
macro_rules! arbitrary_every_version {
    ($Body:ident, $seed:expr) => {{
        let mut rng = XorShift($seed);
        let mut counts = Counts::default();
        let versions = ($Body::VERSIONS.max - $Body::VERSIONS.min + 1) as usize;
        for _ in 0..(CASES / versions).max(150) {
            let data = rng.input(4096);
            let Ok(value) = $Body::arbitrary(&mut Unstructured::new(&data)) else { continue };
            for version in $Body::VERSIONS.min..=$Body::VERSIONS.max {
                check(&value, version, &mut counts);
                let ver = Ver::new(version, $Body::FLEXIBLE_VERSIONS.contains(version));
                check(&value.as_version(ver), version, &mut counts);
            }
        }
        counts
    }};
}

fn report<B: Body>(c: &Counts) {
    eprintln!(
        "{}: {} encodings checked ({} refused like encode), {} parts, {} of them records",
        B::NAME,
        c.encoded,
        c.refused,
        c.parts,
        c.records_parts
    );
    // The generated values must reach the interesting cases.
    assert!(c.encoded >= 100, "{}: only {} values encoded", B::NAME, c.encoded);
    assert!(c.records_parts >= 50, "{}: only {} records parts", B::NAME, c.records_parts);
}

#[test]
fn produce_requests() {
    report::<ProduceRequest>(&arbitrary_every_version!(ProduceRequest, 0x9e37_79b9_7f4a_7c15));
}

#[test]
fn fetch_responses() {
    report::<FetchResponse>(&arbitrary_every_version!(FetchResponse, 0xd1b5_4a32_d192_ed03));
}

#[test]
fn share_fetch_responses() {
    report::<ShareFetchResponse>(&arbitrary_every_version!(ShareFetchResponse, 0x8cb9_2ba7_2f3d_8dd7));
}

#[test]
fn fetch_snapshot_responses() {
    report::<FetchSnapshotResponse>(&arbitrary_every_version!(FetchSnapshotResponse, 0x2545_f491_4f6c_dd1d));
}

// ------------------------------------------------------------------ real clients' batches

/// The Produce request frames of tests/vectors/records/requests.
fn produce_vectors() -> Vec<(String, Vec<u8>)> {
    let dir = vectors_dir().join("records/requests");
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "hex"))
        .map(|p| {
            (
                p.file_stem().unwrap().to_string_lossy().into_owned(),
                hex(&std::fs::read_to_string(&p).unwrap()),
            )
        })
        .collect();
    out.sort();
    assert!(out.len() >= 15, "{} record vectors", out.len());
    out
}

/// The Produce request of a frame, borrowing the frame's records, and its header's fields.
fn produce_of(frame: &[u8]) -> (ProduceRequest<'_>, i16, i32, Option<&str>) {
    let request = dispatch::parse_request(&frame[4..]).unwrap();
    let kwire::messages::RequestBodyView::Produce(view) = request.body else {
        panic!("not a Produce request")
    };
    let view: ProduceRequestView<'_> = view;
    let version = request.header.api_version();
    (ProduceRequest::from(view), version, request.header.correlation_id(), request.header.client_id())
}

#[test]
fn real_clients_produce_requests() {
    let mut counts = Counts::default();
    for (name, frame) in produce_vectors() {
        let (body, version, correlation_id, client_id) = produce_of(&frame);
        assert!(!body.records().is_empty(), "{name}: no records");
        // The records are the frame's own bytes.
        for r in body.records() {
            assert!(frame.as_ptr_range().contains(&r.as_ptr()), "{name}: records not borrowed");
        }
        assert!(check(&body, version, &mut counts), "{name}");
        // The client's own frame, byte for byte, around its own batches.
        let header = RequestHeader { correlation_id, client_id, unknown_tagged_fields: &[] };
        let vlen = vectored::request_len(&body, version, &header).unwrap();
        let mut buf = vec![0u8; vlen.buf];
        let mut parts = vec![Part::Encoded(&[]); vlen.parts];
        vectored::encode_request(&body, version, &header, &mut buf, &mut parts).unwrap();
        assert_eq!(parts.concat_bytes(), frame, "{name}: the client's frame");
        // And at every other version of Produce that can carry it.
        for v in ProduceRequest::VERSIONS.min..=ProduceRequest::VERSIONS.max {
            check(&body, v, &mut counts);
        }
    }
    eprintln!("{} encodings, {} records parts", counts.encoded, counts.records_parts);
    assert!(counts.records_parts > 0);
}

/// A Fetch response carrying the batches of a Produce request, partition for partition.
fn fetch_of<'a>(
    produce: &'a ProduceRequest<'a>,
    partitions: &'a mut Vec<Vec<PartitionData<'a>>>,
) -> Vec<FetchableTopicResponse<'a>> {
    *partitions = produce
        .topic_data
        .iter()
        .map(|t| {
            t.partition_data
                .iter()
                .map(|p| PartitionData {
                    partition_index: p.index,
                    high_watermark: 1000,
                    last_stable_offset: 1000,
                    log_start_offset: 0,
                    records: p.records.as_deref().map(List::Borrowed),
                    ..Default::default()
                })
                .collect()
        })
        .collect();
    produce
        .topic_data
        .iter()
        .zip(partitions.iter())
        .map(|(t, ps)| FetchableTopicResponse {
            topic: t.name.clone(),
            topic_id: t.topic_id,
            partitions: List::Borrowed(ps),
            ..Default::default()
        })
        .collect()
}

#[test]
fn real_clients_batches_in_fetch_responses() {
    let mut counts = Counts::default();
    for (name, frame) in produce_vectors() {
        let (produce, ..) = produce_of(&frame);
        let mut partitions = Vec::new();
        let topics = fetch_of(&produce, &mut partitions);
        let body = FetchResponse { responses: List::Borrowed(&topics), ..Default::default() };
        for version in FetchResponse::VERSIONS.min..=FetchResponse::VERSIONS.max {
            // Topic names before v13, ids from v13: one of the two is refused.
            let ver = Ver::new(version, FetchResponse::FLEXIBLE_VERSIONS.contains(version));
            let body = body.as_version(ver);
            assert!(check(&body, version, &mut counts), "{name} v{version}");
            for r in body.records() {
                assert!(frame.as_ptr_range().contains(&r.as_ptr()), "{name}: records not borrowed");
            }
        }
    }
    eprintln!("{} Fetch encodings, {} records parts", counts.encoded, counts.records_parts);
}

// ------------------------------------------------------------------ no allocation, I/O

#[test]
fn nothing_allocates() {
    let vectors = produce_vectors();
    let mut checked = 0;
    for (name, frame) in &vectors {
        let (produce, version, correlation_id, client_id) = produce_of(frame);
        let mut partitions = Vec::new();
        let topics = fetch_of(&produce, &mut partitions);
        let fetch = FetchResponse { responses: List::Borrowed(&topics), ..Default::default() };
        let fetch = fetch.as_version(Ver::new(12, true));
        let (mut buf, mut buf2, mut buf3) =
            (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
        let mut parts = vec![Part::Encoded(&[]); 256];
        let (mut iov, mut iov2) = (vec![IoSlice::new(&[]); 256], vec![IoSlice::new(&[]); 256]);

        let header = RequestHeader { correlation_id, client_id, unknown_tagged_fields: &[] };
        let (len, n) = allocations(|| produce.vectored_len(version).unwrap());
        assert_eq!(n, 0, "{name}: vectored_len allocated");
        let (used, n) = allocations(|| produce.encode_vectored(version, &mut buf, &mut parts).unwrap());
        assert_eq!((used, n), (len, 0), "{name}: encode_vectored allocated");
        let (_, n) = allocations(|| {
            vectored::encode_request(&produce, version, &header, &mut buf2, &mut iov).unwrap()
        });
        assert_eq!(n, 0, "{name}: encode_request allocated");

        let header = ResponseHeader { correlation_id, unknown_tagged_fields: &[] };
        let (_, n) = allocations(|| vectored::response_len(&fetch, 12, &header).unwrap());
        assert_eq!(n, 0, "{name}: response_len allocated");
        let (used, n) =
            allocations(|| vectored::encode_response(&fetch, 12, &header, &mut buf3, &mut iov2).unwrap());
        assert_eq!(n, 0, "{name}: encode_response allocated");
        assert!(used.parts >= 2, "{name}: {used:?}");
        checked += 1;
    }
    assert_eq!(checked, vectors.len());
}

/// A writer that takes at most 7 bytes a call, from at most two slices, and is
/// interrupted every fifth call.
struct Trickle(Vec<u8>, usize);

impl std::io::Write for Trickle {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.write_vectored(&[IoSlice::new(buf)])
    }
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> std::io::Result<usize> {
        self.1 += 1;
        if self.1.is_multiple_of(5) {
            return Err(std::io::ErrorKind::Interrupted.into());
        }
        let mut taken = 0;
        for b in bufs.iter().take(2) {
            let n = b.len().min(7 - taken);
            self.0.extend_from_slice(&b[..n]);
            taken += n;
            if taken == 7 {
                break;
            }
        }
        Ok(taken)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn write_all_sends_every_part_through_short_writes() {
    for (name, frame) in produce_vectors().into_iter().take(6) {
        let (body, version, correlation_id, client_id) = produce_of(&frame);
        let header = RequestHeader { correlation_id, client_id, unknown_tagged_fields: &[] };
        let len = vectored::request_len(&body, version, &header).unwrap();
        let mut buf = vec![0u8; len.buf];
        let mut iov = vec![IoSlice::new(&[]); len.parts + 2];
        vectored::encode_request(&body, version, &header, &mut buf, &mut iov).unwrap();
        let mut out = Trickle(Vec::new(), 0);
        vectored::write_all(&mut out, &mut iov[..len.parts]).unwrap();
        assert_eq!(out.0, frame, "{name}");
        assert!(out.1 > len.parts, "{name}: the writer took it in pieces");
    }
}

#[test]
fn unsupported_version_is_refused() {
    let body = FetchResponse::default();
    let mut buf = [0u8; 64];
    let mut parts = [Part::Encoded(&[]); 4];
    let err = Err(EncodeError::UnsupportedVersion { message: "FetchResponse", version: 3 });
    assert_eq!(body.vectored_len(3), err);
    assert_eq!(body.encode_vectored(3, &mut buf, &mut parts), err);
    assert_eq!(vectored::response_len(&body, 3, &ResponseHeader::default()), err);
}
