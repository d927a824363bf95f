//! `kwire::conn`: every rule of docs/conn.md, with exact errors. FrameBuf's limits,
//! memory bounds and shrink-back, its steady state without allocation (counted by a
//! global allocator), InFlight's bound and ordering, acks=0, the server and client sides
//! and the ApiVersions fallback between them; the header peek and the response header.

mod common;

use common::{XorShift, unframe, vector};
use kwire::ApiKey;
use kwire::conn::{
    ApiVersionsOutcome, ClientConn, ConnError, FrameBuf, InFlight, Received, ServerConn,
    api_versions_outcome, expects_response, frame_expects_response, read_response,
};
use kwire::dispatch;
use kwire::frame::{self, FrameError, FrameStatus, RequestHeader, RequestHeaderView, ResponseHeader};
use kwire::messages::api_versions::{ApiVersion, ApiVersionsRequest, ApiVersionsResponse};
use kwire::messages::metadata::MetadataRequest;
use kwire::messages::produce::ProduceRequest;
use kwire::messages::{RequestBodyView, ResponseBodyView};
use kwire::{DecodeError, DecodeErrorKind as K, ErrorCode, RawTaggedField, Str, Versions};

#[global_allocator]
static GLOBAL: common::counting::Counting = common::counting::Counting;

use common::counting::allocations;

// ------------------------------------------------------------------ helpers

fn framed(payload: &[u8]) -> Vec<u8> {
    let mut v = (payload.len() as i32).to_be_bytes().to_vec();
    v.extend_from_slice(payload);
    v
}

fn frame_error(kind: K) -> FrameError {
    FrameError::Decode(DecodeError::new(kind, 0, "Frame.size"))
}

/// Every frame of `buf`, fed in chunks of random sizes up to `max_chunk`, through spare/commit
/// or feed alternately; checks the capacity bound after every step. Returns the frames and
/// the final error.
fn split_in_chunks(
    fb: &mut FrameBuf,
    input: &[u8],
    rng: &mut XorShift,
    max_chunk: usize,
) -> (Vec<Vec<u8>>, Option<FrameError>) {
    let mut frames = Vec::new();
    let mut at = 0;
    loop {
        loop {
            match fb.next_frame() {
                Ok(Some(f)) => frames.push(f.to_vec()),
                Ok(None) => break,
                Err(e) => return (frames, Some(e)),
            }
        }
        assert!(fb.capacity() <= fb.capacity_bound(), "{} > {}", fb.capacity(), fb.capacity_bound());
        if at == input.len() {
            return (frames, None);
        }
        let want = 1 + rng.next() as usize % max_chunk;
        let chunk = &input[at..(at + want).min(input.len())];
        let took = if rng.next().is_multiple_of(2) {
            fb.feed(chunk)
        } else {
            let spare = fb.spare();
            let n = spare.len().min(chunk.len());
            spare[..n].copy_from_slice(&chunk[..n]);
            fb.commit(n);
            n
        };
        assert!(fb.capacity() <= fb.capacity_bound());
        at += took;
    }
}

/// What `split_frame` finds in the whole input.
fn split_whole(input: &[u8], max: usize) -> (Vec<Vec<u8>>, Option<FrameError>) {
    let mut frames = Vec::new();
    let mut rest = input;
    loop {
        match frame::split_frame(rest, max) {
            Ok(FrameStatus::Complete { frame, consumed }) => {
                frames.push(frame.to_vec());
                rest = &rest[consumed..];
            }
            Ok(FrameStatus::Incomplete { .. }) => return (frames, None),
            Err(e) => return (frames, Some(e)),
        }
    }
}

// ------------------------------------------------------------------ FrameBuf

#[test]
fn frames_in_random_chunks_are_those_of_split_frame() {
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    for round in 0..300 {
        let mut input = Vec::new();
        for _ in 0..(rng.next() % 12) {
            let len = match rng.next() % 4 {
                0 => 0,
                1 => rng.next() as usize % 8,
                2 => rng.next() as usize % 200,
                _ => rng.next() as usize % 3000,
            };
            let payload: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            input.extend_from_slice(&framed(&payload));
        }
        // Sometimes a bad prefix or a truncated frame at the end.
        match round % 5 {
            0 => input.extend_from_slice(&(-2i32).to_be_bytes()),
            1 => input.extend_from_slice(&5000i32.to_be_bytes()),
            2 => input.extend_from_slice(&[0, 0, 1]),
            _ => {}
        }
        let max = 4000;
        let base = 4 + rng.next() as usize % 600;
        let mut fb = FrameBuf::with_base_capacity(base, max);
        let max_chunk = 1 + rng.next() as usize % 900;
        let got = split_in_chunks(&mut fb, &input, &mut rng, max_chunk);
        assert_eq!(got, split_whole(&input, max), "round {round}");
    }
}

#[test]
fn needed_counts_down_to_a_whole_frame() {
    let mut fb = FrameBuf::new(100);
    assert_eq!(fb.needed(), 4);
    fb.feed(&[0, 0]);
    assert_eq!(fb.needed(), 2);
    fb.feed(&[0, 10]);
    assert_eq!(fb.needed(), 10);
    fb.feed(&[1, 2, 3]);
    assert_eq!(fb.needed(), 7);
    assert_eq!(fb.next_frame(), Ok(None));
    fb.feed(&[4, 5, 6, 7, 8, 9, 10, 0]);
    assert_eq!(fb.needed(), 0);
    assert_eq!(fb.next_frame(), Ok(Some(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10][..])));
    assert_eq!(fb.buffered(), 1);
    assert_eq!(fb.needed(), 3);
}

#[test]
fn negative_size_is_an_error_that_sticks_and_allocates_nothing() {
    let mut fb = FrameBuf::with_base_capacity(64, 1 << 20);
    let (n, ()) = allocations(|| {
        fb.feed(&[0, 0, 0, 1, 9]);
        assert_eq!(fb.next_frame(), Ok(Some(&[9][..])));
        assert_eq!(fb.feed(&[0xff, 0xff, 0xff, 0xff, 1, 2, 3]), 7);
        let want = frame_error(K::InvalidLength(-1));
        assert_eq!(fb.next_frame(), Err(want));
        assert_eq!(fb.next_frame(), Err(want), "sticks");
        assert_eq!(fb.error(), Some(want));
        assert!(fb.spare().is_empty());
        assert_eq!(fb.feed(&[0, 0, 0, 0]), 0);
        assert_eq!(fb.needed(), 0);
    });
    assert_eq!(n, 0, "allocations");
    assert_eq!(fb.capacity(), 64);
}

#[test]
fn oversized_size_is_refused_from_the_prefix_alone() {
    let mut fb = FrameBuf::with_base_capacity(64, 1000);
    let (n, ()) = allocations(|| {
        fb.feed(&1001i32.to_be_bytes());
        assert_eq!(fb.next_frame(), Err(frame_error(K::FrameTooLarge { size: 1001, max: 1000 })));
    });
    assert_eq!(n, 0);
    assert_eq!(fb.capacity(), 64);
    // Exactly the maximum is fine.
    let mut fb = FrameBuf::with_base_capacity(64, 1000);
    let frame = framed(&[7; 1000]);
    assert_eq!(fb.feed(&frame), frame.len());
    assert_eq!(fb.next_frame().unwrap().map(<[u8]>::len), Some(1000));
    assert!(fb.capacity() <= fb.capacity_bound());
    assert_eq!(fb.capacity_bound(), 1004);
}

#[test]
fn a_claimed_size_is_not_allocated_before_its_bytes_arrive() {
    let max = 100 << 20;
    let mut fb = FrameBuf::with_base_capacity(1024, max);
    fb.feed(&(max as i32).to_be_bytes());
    fb.feed(&[0; 1020]);
    assert_eq!(fb.next_frame(), Ok(None));
    assert_eq!(fb.needed(), max - 1020);
    // Full: the next read doubles the buffer, no more.
    assert_eq!(fb.spare().len(), 1024);
    assert_eq!(fb.capacity(), 2048);
}

#[test]
fn grows_for_a_large_frame_and_shrinks_back() {
    let base = 256;
    let mut fb = FrameBuf::with_base_capacity(base, 1 << 20);
    let big = framed(&vec![0xab; 100_000]);
    let mut at = 0;
    while at < big.len() {
        let spare = fb.spare();
        let n = spare.len().min(big.len() - at).min(7000);
        spare[..n].copy_from_slice(&big[at..at + n]);
        fb.commit(n);
        at += n;
        assert!(fb.capacity() <= big.len(), "never past the frame: {}", fb.capacity());
    }
    assert_eq!(fb.next_frame().unwrap().map(<[u8]>::len), Some(100_000));
    assert_eq!(fb.capacity(), big.len());
    fb.feed(&framed(&[1, 2, 3]));
    assert_eq!(fb.capacity(), base, "shrunk back");
    assert_eq!(fb.next_frame(), Ok(Some(&[1, 2, 3][..])));
}

#[test]
fn keeps_its_capacity_between_large_frames_until_a_small_one() {
    // A stream of large frames read from a socket (spare/commit) reuses the room grown for
    // the first one: nothing is allocated for the next ones.
    let base = 256;
    let mut fb = FrameBuf::with_base_capacity(base, 1 << 20);
    let big = framed(&vec![0xab; 100_000]);
    let read_one = |fb: &mut FrameBuf| {
        let mut at = 0;
        while at < big.len() {
            let spare = fb.spare();
            let n = spare.len().min(big.len() - at).min(7000);
            spare[..n].copy_from_slice(&big[at..at + n]);
            fb.commit(n);
            at += n;
        }
        assert_eq!(fb.next_frame().unwrap().map(<[u8]>::len), Some(100_000));
    };
    read_one(&mut fb);
    assert_eq!(fb.capacity(), big.len());
    let (n, ()) = allocations(|| {
        for _ in 0..3 {
            read_one(&mut fb);
        }
    });
    assert_eq!(n, 0, "allocations for the later large frames");
    assert_eq!(fb.capacity(), big.len(), "kept while nothing of the next frame is known");
    // Given back at once on request (a connection gone idle)...
    fb.shrink_to_base();
    assert_eq!(fb.capacity(), base);
    read_one(&mut fb);
    // ... and by itself once a small frame follows: its prefix read in part says nothing
    // yet; read whole and handed out, the next read shrinks the buffer.
    let small = framed(&[1, 2, 3]);
    let spare = fb.spare();
    spare[..2].copy_from_slice(&small[..2]);
    fb.commit(2);
    let spare = fb.spare();
    spare[..small.len() - 2].copy_from_slice(&small[2..]);
    fb.commit(small.len() - 2);
    assert_eq!(fb.capacity(), big.len(), "half a prefix said nothing yet");
    assert_eq!(fb.next_frame(), Ok(Some(&[1, 2, 3][..])));
    assert_eq!(fb.capacity(), big.len());
    let _ = fb.spare();
    assert_eq!(fb.capacity(), base, "shrunk back after a small frame");
    // A small frame's prefix fed into an empty buffer shrinks it too.
    read_one(&mut fb);
    fb.feed(&[0, 0, 0, 1]);
    assert_eq!(fb.capacity(), base, "shrunk back for a small frame");
    // While a large frame is being read, shrink_to_base keeps its room.
    let mut fb = FrameBuf::with_base_capacity(base, 1 << 20);
    fb.feed(&big[..50_000]);
    let held = fb.capacity();
    fb.shrink_to_base();
    assert_eq!(fb.capacity(), held);
    fb.feed(&big[50_000..]);
    assert_eq!(fb.next_frame().unwrap().map(<[u8]>::len), Some(100_000));
    // keep_capacity: small frames after a large one leave it grown, until asked.
    fb.keep_capacity(true);
    for _ in 0..3 {
        fb.feed(&framed(&[1, 2, 3]));
        assert_eq!(fb.next_frame(), Ok(Some(&[1, 2, 3][..])));
        let _ = fb.spare();
    }
    assert_eq!(fb.capacity(), big.len(), "kept");
    fb.shrink_to_base();
    assert_eq!(fb.capacity(), base);
}

#[test]
fn feed_stops_when_whole_frames_fill_the_buffer() {
    let mut fb = FrameBuf::with_base_capacity(16, 100);
    let mut input = Vec::new();
    for i in 0..10u8 {
        input.extend_from_slice(&framed(&[i; 4]));
    }
    let took = fb.feed(&input);
    assert_eq!(took, 16, "two whole frames fill the base capacity");
    assert!(fb.spare().is_empty());
    let mut frames = 0;
    let mut at = took;
    loop {
        while let Some(f) = fb.next_frame().unwrap() {
            assert_eq!(f, &[frames as u8; 4]);
            frames += 1;
        }
        if at == input.len() {
            break;
        }
        at += fb.feed(&input[at..]);
    }
    assert_eq!(frames, 10);
    assert_eq!(fb.capacity(), 16);
}

#[test]
fn zero_length_frames_are_frames() {
    let mut fb = FrameBuf::new(10);
    fb.feed(&[0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(fb.next_frame(), Ok(Some(&[][..])));
    assert_eq!(fb.next_frame(), Ok(Some(&[][..])));
    assert_eq!(fb.next_frame(), Ok(None));
}

#[test]
fn steady_state_allocates_nothing() {
    let request = vector("seed/listoffsets_v10_request.hex");
    let mut server = ServerConn::new();
    let mut out = Vec::with_capacity(1 << 16);
    let mut stream = Vec::new();
    for _ in 0..50 {
        stream.extend_from_slice(&request);
    }
    // Warm up once, then count: reads in odd chunk sizes, requests parsed.
    let run = |server: &mut ServerConn, out: &mut Vec<u8>| {
        let mut seen = 0;
        for chunk in stream.chunks(777) {
            let mut at = 0;
            while at < chunk.len() {
                let spare = server.spare();
                let n = spare.len().min(chunk.len() - at);
                spare[..n].copy_from_slice(&chunk[at..at + n]);
                server.commit(n);
                at += n;
                while let Some(r) = server.next_request().unwrap() {
                    let Received::Request(r) = r else { panic!("not a request") };
                    assert_eq!(r.body.api_key(), ApiKey::ListOffsets);
                    seen += 1;
                }
            }
        }
        out.clear();
        seen
    };
    assert_eq!(run(&mut server, &mut out), 50);
    let (n, seen) = allocations(|| run(&mut server, &mut out));
    assert_eq!(seen, 50);
    assert_eq!(n, 0, "allocations in the steady state");
}

// ------------------------------------------------------------------ InFlight

#[test]
fn in_flight_is_bounded_and_never_grows() {
    let mut t: InFlight<u32> = InFlight::with_capacity(3);
    let (n, ()) = allocations(|| {
        for round in 0..100 {
            for i in 0..3 {
                t.push(round * 3 + i, ApiKey::Metadata, 12, i as u32).unwrap();
            }
            assert_eq!(t.push(-1, ApiKey::Metadata, 12, 9), Err(ConnError::InFlightFull { capacity: 3 }));
            assert_eq!(t.len(), 3);
            for i in 0..3 {
                assert_eq!(t.complete(round * 3 + i).unwrap().payload, i as u32);
            }
        }
    });
    assert_eq!(n, 0, "allocations after construction");
    assert!(t.is_empty());
}

#[test]
fn in_flight_order_unknown_ids_and_duplicates() {
    let mut t = InFlight::with_capacity(8);
    t.push(5, ApiKey::Metadata, 12, "a").unwrap();
    t.push(6, ApiKey::ListOffsets, 10, "b").unwrap();
    t.push(5, ApiKey::Metadata, 11, "c").unwrap();
    assert_eq!(t.complete(6), Err(ConnError::OutOfOrder { expected: 5, correlation_id: 6 }));
    assert_eq!(t.complete(42), Err(ConnError::UnknownCorrelationId { correlation_id: 42 }));
    assert_eq!(t.len(), 3, "nothing removed by a refused response");
    let first = t.complete(5).unwrap();
    assert_eq!((first.api_key, first.api_version, first.payload), (ApiKey::Metadata, 12, "a"));
    // `remove` takes an entry wherever it is.
    assert_eq!(t.remove(5).unwrap().payload, "c");
    assert_eq!(t.remove(5), Err(ConnError::UnknownCorrelationId { correlation_id: 5 }));
    assert_eq!(t.drain().map(|p| p.payload).collect::<Vec<_>>(), ["b"]);
    assert_eq!(t.complete(6), Err(ConnError::UnknownCorrelationId { correlation_id: 6 }));
}

// ------------------------------------------------------------------ acks=0

fn produce(acks: i16, transactional_id: Option<&'static str>) -> ProduceRequest<'static> {
    ProduceRequest { acks, transactional_id: transactional_id.map(Str::Borrowed), ..Default::default() }
}

#[test]
fn produce_with_acks_zero_expects_no_response() {
    let range = ApiKey::Produce.request_versions();
    for version in range.min..=range.max {
        for (acks, tid) in [(0, None), (0, Some("txn-1")), (1, None), (-1, Some("t"))] {
            let mut buf = vec![0; 256];
            let n = dispatch::encode_request(&produce(acks, tid), version, 3, Some("p"), &mut buf).unwrap();
            let frame = unframe(&buf[..n]);
            let request = dispatch::parse_request(frame).unwrap();
            assert_eq!(expects_response(&request.body), acks != 0, "v{version} acks={acks}");
            assert_eq!(frame_expects_response(frame), Ok(acks != 0), "v{version} acks={acks} {tid:?}");
        }
    }
    let mut buf = [0u8; 64];
    let n = dispatch::encode_request(&ApiVersionsRequest::default(), 3, 1, None, &mut buf).unwrap();
    assert_eq!(frame_expects_response(&buf[4..n]), Ok(true));
    // An unknown API expects a response (nothing says otherwise).
    assert_eq!(frame_expects_response(&[0x7f, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff]), Ok(true));
    // A Produce frame cut before acks is an error.
    let n = dispatch::encode_request(&produce(0, None), 9, 1, None, &mut buf).unwrap();
    let cut = &buf[4..n - 9];
    assert!(matches!(frame_expects_response(cut), Err(e) if matches!(e.kind(), K::Truncated { .. })));
}

// ------------------------------------------------------------------ header peek, response header

#[test]
fn peek_returns_the_client_id_for_any_key() {
    let mut buf = [0u8; 64];
    let n = dispatch::encode_request(&MetadataRequest::default(), 12, 77, Some("my-app"), &mut buf).unwrap();
    let peek = RequestHeaderView::peek(&buf[4..n]).unwrap();
    assert_eq!(
        (peek.api_key, peek.api_version, peek.correlation_id, peek.client_id),
        (3, 12, 77, Some("my-app"))
    );
    assert_eq!(peek.key(), Some(ApiKey::Metadata));
    assert_eq!(peek.len, 8 + 2 + 6);
    let unknown = [0x7f, 0x00, 0, 1, 0, 0, 0, 9, 0xff, 0xff];
    let peek = RequestHeaderView::peek(&unknown).unwrap();
    assert_eq!((peek.api_key, peek.client_id, peek.key()), (0x7f00, None, None));
    let bad = [0, 3, 0, 1, 0, 0, 0, 9, 0, 1, 0xff];
    assert_eq!(RequestHeaderView::peek(&bad).unwrap_err().kind(), K::InvalidUtf8);
    assert!(matches!(RequestHeaderView::peek(&bad[..9]).unwrap_err().kind(), K::Truncated { .. }));
}

#[test]
fn response_header_value_type_with_tagged_fields() {
    let tags = [RawTaggedField { tag: 4, data: kwire::Bytes::Borrowed(&[1, 2]) }];
    let header = ResponseHeader { correlation_id: 9, unknown_tagged_fields: &tags };
    assert_eq!(header.encoded_len(1), Ok(4 + 1 + 1 + 1 + 2));
    assert_eq!(header.encoded_len(0), Ok(4));
    let body = kwire::messages::metadata::MetadataResponse::default();
    let n = dispatch::response_len_with(&body, 12, &header).unwrap();
    let mut buf = vec![0; n];
    assert_eq!(dispatch::encode_response_with(&body, 12, &header, &mut buf), Ok(n));
    let response = dispatch::parse_response(unframe(&buf), ApiKey::Metadata, 12).unwrap();
    assert_eq!(response.header.correlation_id(), 9);
    assert_eq!(response.header.unknown_tagged_fields().collect::<Vec<_>>(), [(4, &[1u8, 2][..])]);
    // The plain encoder is the same with no tagged fields.
    let mut a = vec![0; 64];
    let mut b = vec![0; 64];
    let plain = ResponseHeader { correlation_id: 9, unknown_tagged_fields: &[] };
    let na = dispatch::encode_response(&body, 12, 9, &mut a).unwrap();
    let nb = dispatch::encode_response_with(&body, 12, &plain, &mut b).unwrap();
    assert_eq!(a[..na], b[..nb]);
    let _ = RequestHeader::default();
}

#[test]
fn parse_request_prefix_counts_what_follows() {
    let mut frame = unframe(&vector("seed/listgroups_v5_request.hex")).to_vec();
    frame.extend_from_slice(&[1, 2, 3]);
    let (a, ignored) = dispatch::parse_request_prefix(&frame).unwrap();
    assert_eq!(ignored, 3);
    let strict = dispatch::parse_request(&frame[..frame.len() - 3]).unwrap();
    assert_eq!(a.body.as_bytes(), strict.body.as_bytes());
    assert_eq!(dispatch::parse_request(&frame).unwrap_err(), {
        let at = frame.len() - 3;
        FrameError::Decode(DecodeError::new(K::TrailingBytes(3), at, "ListGroupsRequest"))
    });
}

// ------------------------------------------------------------------ server side

fn api_versions_body(keys: &[ApiVersion<'static>]) -> ApiVersionsResponse<'static> {
    ApiVersionsResponse { api_keys: keys.to_vec().into(), ..Default::default() }
}

#[test]
fn server_reads_requests_and_answers_with_the_right_header() {
    let mut server = ServerConn::new();
    let mut input = vector("seed/apiversions_v4_request.hex");
    let mut metadata = vec![0; 64];
    let n = dispatch::encode_request(&MetadataRequest::default(), 12, 2, Some("m"), &mut metadata).unwrap();
    input.extend_from_slice(&metadata[..n]);
    server.feed(&input);
    let mut out = Vec::new();
    let Some(Received::Request(r)) = server.next_request().unwrap() else { panic!() };
    let reply = r.reply_to();
    assert_eq!((reply.api_key, reply.api_version, reply.expects_response), (ApiKey::ApiVersions, 4, true));
    let n = ServerConn::encode_response(reply, &api_versions_body(&[]), &mut out).unwrap();
    // ApiVersions v4: a flexible body, but response header v0 (no tagged-field byte).
    assert_eq!(&out[4..8], &reply.correlation_id.to_be_bytes());
    assert_eq!(out[8..10], [0, 0], "error code right after the correlation id");
    assert_eq!(n, out.len());
    let Some(Received::Request(r)) = server.next_request().unwrap() else { panic!() };
    assert_eq!(r.header.client_id(), Some("m"));
    let before = out.len();
    let body = kwire::messages::metadata::MetadataResponse::default();
    ServerConn::encode_response(r.reply_to(), &body, &mut out).unwrap();
    // Metadata v12: response header v1, one empty tagged section after the correlation id.
    assert_eq!(&out[before + 4..before + 8], &2i32.to_be_bytes());
    assert_eq!(out[before + 8], 0);
    let resp = dispatch::parse_response(&out[before + 4..], ApiKey::Metadata, 12).unwrap();
    assert_eq!(resp.header.version(), 1);
    assert!(server.next_request().unwrap().is_none());
    // A body of another API.
    assert_eq!(
        ServerConn::encode_response(reply, &body, &mut out),
        Err(ConnError::WrongApi { expected: ApiKey::ApiVersions, api_key: ApiKey::Metadata })
    );
}

#[test]
fn server_errors_per_frame_and_trailing_bytes() {
    let mut server = ServerConn::new();
    // Unknown key 0x7f00 at correlation id 9, then a ListGroups with 2 bytes after its body.
    let unknown = framed(&[0x7f, 0x00, 0, 1, 0, 0, 0, 9, 0xff, 0xff]);
    let mut list_groups = unframe(&vector("seed/listgroups_v5_request.hex")).to_vec();
    list_groups.extend_from_slice(&[0xee, 0xee]);
    let mut too_new = unframe(&vector("seed/listgroups_v5_request.hex")).to_vec();
    too_new[3] = 99;
    let mut input = unknown;
    input.extend_from_slice(&framed(&list_groups));
    input.extend_from_slice(&framed(&too_new));
    input.extend_from_slice(&framed(&[0, 16, 0, 5])); // ListGroups header cut short
    server.feed(&input);
    assert_eq!(
        server.next_request().unwrap_err(),
        ConnError::Frame(FrameError::UnsupportedApiKey {
            api_key: 0x7f00,
            api_version: 1,
            correlation_id: 9
        })
    );
    let Some(Received::Request(r)) = server.next_request().unwrap() else { panic!() };
    assert_eq!(
        (r.body.api_key(), r.trailing_bytes, r.frame.len()),
        (ApiKey::ListGroups, 2, list_groups.len())
    );
    assert!(matches!(
        server.next_request(),
        Err(ConnError::Frame(FrameError::UnsupportedVersion {
            api_key: ApiKey::ListGroups,
            api_version: 99,
            ..
        }))
    ));
    assert!(
        matches!(server.next_request(), Err(ConnError::Frame(FrameError::Decode(e))) if matches!(e.kind(), K::Truncated { .. }))
    );
    assert!(server.next_request().unwrap().is_none());
}

#[test]
fn server_refuses_to_answer_acks_zero() {
    let mut server = ServerConn::new();
    let mut buf = vec![0; 128];
    let n = dispatch::encode_request(&produce(0, None), 9, 4, None, &mut buf).unwrap();
    server.feed(&buf[..n]);
    let Some(Received::Request(r)) = server.next_request().unwrap() else { panic!() };
    let reply = r.reply_to();
    assert!(!reply.expects_response);
    let body = kwire::messages::produce::ProduceResponse::default();
    assert_eq!(
        ServerConn::encode_response(reply, &body, &mut Vec::new()),
        Err(ConnError::NoResponseExpected { correlation_id: 4 })
    );
}

#[test]
fn server_answers_unsupported_api_versions_with_a_v0_error() {
    let mut server = ServerConn::new();
    let mut request = unframe(&vector("seed/apiversions_v4_request.hex")).to_vec();
    request[3] = 9; // ApiVersions v9: not one kwire reads
    request[4..8].copy_from_slice(&31i32.to_be_bytes());
    server.feed(&framed(&request));
    let Some(Received::ApiVersionsUnsupported { header, reply_to }) = server.next_request().unwrap() else {
        panic!()
    };
    assert_eq!((header.api_version, reply_to.correlation_id, reply_to.api_version), (9, 31, 0));
    let mut out = Vec::new();
    ServerConn::encode_api_versions_unsupported(reply_to, Versions::new(0, 4), &mut out).unwrap();
    let resp = dispatch::parse_response(unframe(&out), ApiKey::ApiVersions, 0).unwrap();
    let ResponseBodyView::ApiVersions(body) = resp.body else { panic!() };
    assert_eq!(body.error_code(), ErrorCode::UnsupportedVersion.to_i16());
    let keys: Vec<_> =
        body.api_keys().iter().map(|k| (k.api_key(), k.min_version(), k.max_version())).collect();
    assert_eq!(keys, [(18, 0, 4)]);
    // A limit below what kwire reads.
    server.set_api_versions_max(2);
    server.feed(&vector("seed/apiversions_v4_request.hex"));
    assert!(matches!(server.next_request().unwrap(), Some(Received::ApiVersionsUnsupported { .. })));
}

// ------------------------------------------------------------------ client side

#[test]
fn client_assigns_ids_tracks_requests_and_pairs_answers() {
    let mut client: ClientConn<&str> = ClientConn::new(Some("c1"));
    let mut out = Vec::new();
    let a = client.encode_request(&MetadataRequest::default(), 12, "meta", &mut out).unwrap();
    let b = client.encode_request(&produce(0, None), 9, "fire-and-forget", &mut out).unwrap();
    let c = client.encode_request(&ApiVersionsRequest::default(), 3, "versions", &mut out).unwrap();
    assert_eq!((a.correlation_id, b.correlation_id, c.correlation_id), (0, 1, 2));
    assert_eq!((a.expects_response, b.expects_response, c.expects_response), (true, false, true));
    assert_eq!(a.len + b.len + c.len, out.len());
    assert_eq!(client.in_flight().iter().map(|p| p.correlation_id).collect::<Vec<_>>(), [0, 2]);
    // The frames are what a broker reads, with the client id.
    let mut server = ServerConn::new();
    server.feed(&out);
    let mut answers = Vec::new();
    while let Some(Received::Request(r)) = server.next_request().unwrap() {
        assert_eq!(r.header.client_id(), Some("c1"));
        let reply = r.reply_to();
        match r.body {
            RequestBodyView::Metadata(_) => {
                let body = kwire::messages::metadata::MetadataResponse::default();
                ServerConn::encode_response(reply, &body, &mut answers).unwrap();
            }
            RequestBodyView::ApiVersions(_) => {
                ServerConn::encode_response(reply, &api_versions_body(&[]), &mut answers).unwrap();
            }
            RequestBodyView::Produce(_) => assert!(!reply.expects_response),
            _ => panic!(),
        }
    }
    client.feed(&answers);
    let r = client.next_response().unwrap().unwrap();
    assert_eq!((r.correlation_id, r.api_key, r.version, r.payload), (0, ApiKey::Metadata, 12, "meta"));
    let r = client.next_response().unwrap().unwrap();
    assert_eq!((r.correlation_id, r.api_key, r.payload), (2, ApiKey::ApiVersions, "versions"));
    assert_eq!(r.api_versions_outcome(), Some(ApiVersionsOutcome::Ready));
    assert!(client.next_response().unwrap().is_none());
    assert!(client.in_flight().is_empty());
}

#[test]
fn client_rejects_unknown_and_out_of_order_answers() {
    let mut client: ClientConn = ClientConn::new(None);
    let mut out = Vec::new();
    client.encode_request(&ApiVersionsRequest::default(), 3, (), &mut out).unwrap();
    client.encode_request(&ApiVersionsRequest::default(), 3, (), &mut out).unwrap();
    let mut answer = Vec::new();
    let reply = |id| kwire::conn::ReplyTo {
        api_key: ApiKey::ApiVersions,
        api_version: 3,
        correlation_id: id,
        expects_response: true,
    };
    ServerConn::encode_response(reply(1), &api_versions_body(&[]), &mut answer).unwrap();
    ServerConn::encode_response(reply(77), &api_versions_body(&[]), &mut answer).unwrap();
    client.feed(&answer);
    assert_eq!(client.next_response().unwrap_err(), ConnError::OutOfOrder { expected: 0, correlation_id: 1 });
    assert_eq!(client.next_response().unwrap_err(), ConnError::UnknownCorrelationId { correlation_id: 77 });
    assert_eq!(client.in_flight().len(), 2);
    // A response frame too short for a correlation id.
    client.feed(&framed(&[0, 0]));
    assert!(
        matches!(client.next_response(), Err(ConnError::Frame(FrameError::Decode(e))) if matches!(e.kind(), K::Truncated { .. }))
    );
}

#[test]
fn client_full_table_sends_nothing_and_ids_wrap_before_the_sasl_range() {
    let mut client: ClientConn =
        ClientConn::with_limits(None, FrameBuf::new(1 << 20), InFlight::with_capacity(1));
    let mut out = Vec::new();
    client.set_next_correlation_id(i32::MAX - 8);
    let a = client.encode_request(&ApiVersionsRequest::default(), 3, (), &mut out).unwrap();
    assert_eq!(a.correlation_id, i32::MAX - 8);
    assert_eq!(client.next_correlation_id(), 0, "i32::MAX - 7 and up are Kafka's SASL ids");
    let len = out.len();
    assert_eq!(
        client.encode_request(&ApiVersionsRequest::default(), 3, (), &mut out),
        Err(ConnError::InFlightFull { capacity: 1 })
    );
    assert_eq!(out.len(), len, "nothing written");
    assert_eq!(client.next_correlation_id(), 0, "no id used");
    let mut buf = [0u8; 64];
    assert_eq!(
        client.encode_request_into(&ApiVersionsRequest::default(), 3, (), &mut buf),
        Err(ConnError::InFlightFull { capacity: 1 })
    );
    // acks=0 needs no room.
    let sent = client.encode_request(&produce(0, None), 9, (), &mut out).unwrap();
    assert!(!sent.expects_response);
    // An encode error writes nothing either.
    let mut client: ClientConn = ClientConn::new(None);
    let mut out = vec![1, 2, 3];
    assert!(matches!(
        client.encode_request(&ApiVersionsRequest::default(), 99, (), &mut out),
        Err(ConnError::Encode(_))
    ));
    assert_eq!(out, [1, 2, 3]);
    assert!(client.in_flight().is_empty());
}

// ------------------------------------------------------------------ ApiVersions fallback

#[test]
fn api_versions_fallback_between_client_and_server() {
    let mut client: ClientConn = ClientConn::new(Some("fallback"));
    let mut server = ServerConn::new();
    server.set_api_versions_max(2);
    let mut wire = Vec::new();
    let mut version = ApiKey::ApiVersions.request_versions().max;
    let mut rounds = Vec::new();
    loop {
        wire.clear();
        client.encode_request(&ApiVersionsRequest::default(), version, (), &mut wire).unwrap();
        server.feed(&wire);
        wire.clear();
        match server.next_request().unwrap().unwrap() {
            Received::ApiVersionsUnsupported { reply_to, .. } => {
                ServerConn::encode_api_versions_unsupported(reply_to, Versions::new(0, 2), &mut wire)
                    .unwrap();
            }
            Received::Request(r) => {
                let keys = [ApiVersion { api_key: 18, min_version: 0, max_version: 2, ..Default::default() }];
                ServerConn::encode_response(r.reply_to(), &api_versions_body(&keys), &mut wire).unwrap();
            }
            _ => panic!(),
        }
        client.feed(&wire);
        let r = client.next_response().unwrap().unwrap();
        let outcome = r.api_versions_outcome().unwrap();
        rounds.push((r.requested_version, r.version, outcome));
        match outcome {
            ApiVersionsOutcome::Retry { version: v } => version = v,
            _ => break,
        }
    }
    let newest = ApiKey::ApiVersions.request_versions().max;
    assert!(newest > 2);
    assert_eq!(
        rounds,
        [(newest, 0, ApiVersionsOutcome::Retry { version: 2 }), (2, 2, ApiVersionsOutcome::Ready)]
    );
}

#[test]
fn api_versions_outcomes_as_kafka_clients_decide() {
    let error_body = |code: ErrorCode, keys: &[(i16, i16)]| {
        let keys: Vec<ApiVersion<'static>> = keys
            .iter()
            .map(|&(k, max)| ApiVersion {
                api_key: k,
                min_version: 0,
                max_version: max,
                ..Default::default()
            })
            .collect();
        let body =
            ApiVersionsResponse { error_code: code.to_i16(), api_keys: keys.into(), ..Default::default() };
        let mut out = vec![0; 128];
        let n = dispatch::encode_response(&body, 0, 1, &mut out).unwrap();
        out.truncate(n);
        out
    };
    let outcome = |requested: i16, frame: &[u8]| {
        let (resp, read_at) = read_response(unframe(frame), ApiKey::ApiVersions, requested).unwrap();
        let ResponseBodyView::ApiVersions(body) = resp.body else { panic!() };
        (read_at, api_versions_outcome(requested, &body))
    };
    let unsupported = error_body(ErrorCode::UnsupportedVersion, &[(3, 12), (18, 3)]);
    assert_eq!(outcome(4, &unsupported), (0, ApiVersionsOutcome::Retry { version: 3 }));
    // No ApiVersions entry listed: retry at 0.
    let bare = error_body(ErrorCode::UnsupportedVersion, &[]);
    assert_eq!(outcome(3, &bare), (0, ApiVersionsOutcome::Retry { version: 0 }));
    // An error to a v0 request, or another error: fail.
    assert_eq!(outcome(0, &bare), (0, ApiVersionsOutcome::Fail { error_code: 35 }));
    let other = error_body(ErrorCode::ClusterAuthorizationFailed, &[(18, 3)]);
    assert_eq!(outcome(3, &other).1, ApiVersionsOutcome::Fail { error_code: 31 });
    // A listed version not below the one refused would loop: fail.
    let same = error_body(ErrorCode::UnsupportedVersion, &[(18, 4)]);
    assert_eq!(outcome(4, &same).1, ApiVersionsOutcome::Fail { error_code: 35 });
    // A body unreadable at both versions keeps the first error.
    let garbage = framed(&[0, 0, 0, 1, 0xff]);
    assert!(matches!(read_response(unframe(&garbage), ApiKey::ApiVersions, 3), Err(FrameError::Decode(_))));
    // Other APIs get no fallback.
    let meta = error_body(ErrorCode::UnsupportedVersion, &[]);
    assert!(read_response(unframe(&meta), ApiKey::Metadata, 12).is_err());
}
