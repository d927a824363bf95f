//! The `conn` fuzz target's properties: `FrameBuf`, `ServerConn` and `ClientConn` fed
//! arbitrary bytes in arbitrary chunk sizes.
//!
//! Byte 0 selects the limits: bits 0-1 the frame limit (16 bytes, 300 bytes, 64 KiB, 100
//! MiB), bits 2-4 the base capacity (`4 << b`, so 4 bytes to 512 bytes), bit 5 whether
//! chunks go in through `feed` (set) or `spare`/`commit`, bit 6 whether the client sends
//! Metadata requests between its ApiVersions requests. Byte 1 seeds the chunk sizes (1 to
//! 64 bytes, or up to 4 KiB when bit 7 of byte 0 is set). The rest is the stream.
//!
//! What must hold, for each of the three fed the same stream:
//!
//! - nothing panics;
//! - the buffer's capacity is never over `capacity_bound()` (the base capacity or the frame
//!   limit plus its prefix), checked after every chunk;
//! - the frames are exactly those `split_frame` finds in the whole input, and the framing
//!   error, if any, is the one it finds, returned again on every later call;
//! - the server's answer for each frame is `dispatch::parse_request_prefix`'s (with
//!   ApiVersions of an unsupported version turned into `ApiVersionsUnsupported`), and the
//!   client's is that of an `InFlight` model followed by `read_response`.

use kwire::ApiKey;
use kwire::conn::{ClientConn, ConnError, FrameBuf, InFlight, Received, ServerConn, read_response};
use kwire::dispatch;
use kwire::frame::{self, DEFAULT_MAX_FRAME_SIZE, FrameError, FrameStatus, ResponseHeaderView};
use kwire::messages::api_versions::ApiVersionsRequest;
use kwire::messages::metadata::MetadataRequest;

const LIMITS: [usize; 4] = [16, 300, 64 << 10, DEFAULT_MAX_FRAME_SIZE];

/// Chunk sizes from a seed (xorshift).
struct Chunks(u64, usize);

impl Chunks {
    fn next(&mut self) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        1 + (self.0 as usize) % self.1
    }
}

/// What `split_frame` finds in the whole input.
fn split_whole(input: &[u8], max: usize) -> (Vec<&[u8]>, Option<FrameError>) {
    let mut frames = Vec::new();
    let mut rest = input;
    loop {
        match frame::split_frame(rest, max) {
            Ok(FrameStatus::Complete { frame, consumed }) => {
                frames.push(frame);
                rest = &rest[consumed..];
            }
            Ok(FrameStatus::Incomplete { .. }) => return (frames, None),
            Err(e) => return (frames, Some(e)),
        }
    }
}

/// Puts the next chunk into `fb` through `feed` or `spare`/`commit`; returns how many
/// bytes it took, which must be some: whole frames were taken before, so there is room.
fn put(fb: &mut FrameBuf, chunk: &[u8], use_feed: bool) -> usize {
    let took = if use_feed {
        fb.feed(chunk)
    } else {
        let spare = fb.spare();
        let n = spare.len().min(chunk.len());
        spare[..n].copy_from_slice(&chunk[..n]);
        fb.commit(n);
        n
    };
    assert!(took > 0 || chunk.is_empty(), "no room with no whole frame buffered");
    assert!(fb.capacity() <= fb.capacity_bound(), "capacity {} over {}", fb.capacity(), fb.capacity_bound());
    took
}

/// The `conn` target.
pub fn conn(data: &[u8]) {
    let [mode, seed, ref stream @ ..] = *data else { return };
    let max = LIMITS[usize::from(mode & 3)];
    let base = 4usize << ((mode >> 2) & 7);
    let use_feed = mode & 0x20 != 0;
    let metadata = mode & 0x40 != 0;
    let chunk_max = if mode & 0x80 != 0 { 4096 } else { 64 };
    let (want_frames, want_error) = split_whole(stream, max);

    frame_buf(
        stream,
        base,
        max,
        use_feed,
        Chunks(u64::from(seed) | 0x100, chunk_max),
        &want_frames,
        want_error,
    );
    server(stream, base, max, use_feed, Chunks(u64::from(seed) | 0x200, chunk_max), &want_frames, want_error);
    client(
        stream,
        base,
        max,
        use_feed,
        metadata,
        Chunks(u64::from(seed) | 0x300, chunk_max),
        &want_frames,
        want_error,
    );
}

fn frame_buf(
    stream: &[u8],
    base: usize,
    max: usize,
    use_feed: bool,
    mut chunks: Chunks,
    want_frames: &[&[u8]],
    want_error: Option<FrameError>,
) {
    let mut fb = FrameBuf::with_base_capacity(base, max);
    let mut got = Vec::new();
    let mut error = None;
    let mut at = 0;
    'stream: loop {
        loop {
            match fb.next_frame() {
                Ok(Some(f)) => got.push(f.to_vec()),
                Ok(None) => break,
                Err(e) => {
                    error = Some(e);
                    break 'stream;
                }
            }
        }
        if at == stream.len() {
            break;
        }
        let chunk = &stream[at..(at + chunks.next()).min(stream.len())];
        at += put(&mut fb, chunk, use_feed);
    }
    assert_eq!(got.len(), want_frames.len(), "frame count");
    for (g, w) in got.iter().zip(want_frames) {
        assert_eq!(g, w);
    }
    assert_eq!(error, want_error);
    if let Some(e) = want_error {
        assert_eq!(fb.next_frame(), Err(e), "the error sticks");
        assert!(fb.spare().is_empty());
    } else {
        assert_eq!(fb.next_frame(), Ok(None));
    }
}

/// The server's answer for one frame, reduced to something comparable.
fn server_model(frame: &[u8], api_versions_max: i16) -> Result<(i16, i16, i32, usize, bool), ConnError> {
    match dispatch::parse_request_prefix(frame) {
        Ok((r, trailing)) => {
            let unsupported =
                r.body.api_key() == ApiKey::ApiVersions && r.header.api_version() > api_versions_max;
            Ok((r.header.api_key(), r.header.api_version(), r.header.correlation_id(), trailing, unsupported))
        }
        Err(FrameError::UnsupportedVersion { api_key: ApiKey::ApiVersions, api_version, correlation_id }) => {
            // Answered, from the header peek (which can still fail on the client id).
            let peek = frame::RequestHeaderView::peek(frame)?;
            assert_eq!((peek.api_version, peek.correlation_id), (api_version, correlation_id));
            Ok((ApiKey::ApiVersions.to_i16(), api_version, correlation_id, 0, true))
        }
        Err(e) => Err(e.into()),
    }
}

fn server(
    stream: &[u8],
    base: usize,
    max: usize,
    use_feed: bool,
    mut chunks: Chunks,
    want_frames: &[&[u8]],
    want_error: Option<FrameError>,
) {
    let mut conn = ServerConn::with_frame_buf(FrameBuf::with_base_capacity(base, max));
    // Serve ApiVersions up to 2 only, so that the fallback path runs too.
    conn.set_api_versions_max(2);
    let mut i = 0;
    let mut error = None;
    let mut out = Vec::new();
    let mut at = 0;
    loop {
        loop {
            let got = match conn.next_request() {
                Ok(None) => None,
                Ok(Some(Received::Request(r))) => {
                    assert_eq!(
                        Some(r.frame),
                        want_frames.get(i).copied(),
                        "a request split_frame does not find"
                    );
                    let reply = r.reply_to();
                    // An answer for ApiVersions, to exercise the encoder.
                    if r.body.api_key() == ApiKey::ApiVersions {
                        let body = kwire::messages::api_versions::ApiVersionsResponse::default();
                        let n = ServerConn::encode_response(reply, &body, &mut out).expect("encode");
                        assert_eq!(n, dispatch::response_len(&body, reply.api_version).unwrap());
                    }
                    Some(Ok((
                        r.header.api_key(),
                        r.header.api_version(),
                        r.header.correlation_id(),
                        r.trailing_bytes,
                        false,
                    )))
                }
                Ok(Some(Received::ApiVersionsUnsupported { header, reply_to })) => {
                    ServerConn::encode_api_versions_unsupported(
                        reply_to,
                        kwire::Versions::new(0, 2),
                        &mut out,
                    )
                    .expect("encode");
                    Some(Ok((header.api_key, header.api_version, header.correlation_id, 0, true)))
                }
                Ok(Some(_)) => panic!("an unknown kind of request"),
                Err(e) => Some(Err(e)),
            };
            if let Some(Err(ConnError::Frame(e))) = got
                && conn.frame_buf().error() == Some(e)
            {
                error = Some(e);
                break;
            }
            let Some(got) = got else { break };
            let frame = want_frames.get(i).expect("a request beyond the frames split_frame finds");
            let want = server_model(frame, 2);
            match (&got, &want) {
                (Ok((k, v, c, t, u)), Ok((wk, wv, wc, wt, wu))) => {
                    assert_eq!((k, v, c, u), (wk, wv, wc, wu));
                    if !u {
                        assert_eq!(t, wt);
                    }
                }
                _ => assert_eq!(got, want),
            }
            i += 1;
            out.clear();
        }
        if error.is_some() || at == stream.len() {
            break;
        }
        let chunk = &stream[at..(at + chunks.next()).min(stream.len())];
        at += put(conn.frame_buf_mut(), chunk, use_feed);
    }
    assert_eq!(i, want_frames.len(), "requests read");
    assert_eq!(error, want_error);
    if let Some(e) = want_error {
        assert_eq!(conn.next_request().map(|_| ()), Err(ConnError::Frame(e)), "the error sticks");
    }
}

#[allow(clippy::too_many_arguments)]
fn client(
    stream: &[u8],
    base: usize,
    max: usize,
    use_feed: bool,
    metadata: bool,
    mut chunks: Chunks,
    want_frames: &[&[u8]],
    want_error: Option<FrameError>,
) {
    let mut conn: ClientConn<usize> = ClientConn::with_limits(
        Some("fuzz"),
        FrameBuf::with_base_capacity(base, max),
        InFlight::with_capacity(16),
    );
    let mut model: InFlight<usize> = InFlight::with_capacity(16);
    let mut out = Vec::new();
    let newest = ApiKey::ApiVersions.request_versions().max;
    for i in 0..16usize {
        let (key, version) = if metadata && i % 2 == 1 {
            (ApiKey::Metadata, 12)
        } else {
            (ApiKey::ApiVersions, (i as i16) % (newest + 1))
        };
        let sent = match key {
            ApiKey::Metadata => conn.encode_request(&MetadataRequest::default(), version, i, &mut out),
            _ => conn.encode_request(&ApiVersionsRequest::default(), version, i, &mut out),
        }
        .expect("encode");
        model.push(sent.correlation_id, key, version, i).unwrap();
    }
    assert_eq!(
        conn.encode_request(&ApiVersionsRequest::default(), 0, 99, &mut out),
        Err(ConnError::InFlightFull { capacity: 16 })
    );
    let mut i = 0;
    let mut error = None;
    let mut at = 0;
    loop {
        loop {
            let got = match conn.next_response() {
                Ok(None) => None,
                Ok(Some(r)) => {
                    assert_eq!(
                        Some(r.frame),
                        want_frames.get(i).copied(),
                        "a response split_frame does not find"
                    );
                    Some(Ok((r.correlation_id, r.api_key, r.requested_version, r.version, r.payload)))
                }
                Err(e) => Some(Err(e)),
            };
            if let Some(Err(ConnError::Frame(e))) = got
                && conn.frame_buf().error() == Some(e)
            {
                error = Some(e);
                break;
            }
            let Some(got) = got else { break };
            let frame = want_frames.get(i).expect("a response beyond the frames split_frame finds");
            let want = (|| {
                let (header, _) = ResponseHeaderView::parse(frame, 0)?;
                let p = model.complete(header.correlation_id())?;
                let (_, read_at) = read_response(frame, p.api_key, p.api_version)?;
                Ok::<_, ConnError>((p.correlation_id, p.api_key, p.api_version, read_at, p.payload))
            })();
            assert_eq!(got, want);
            assert_eq!(conn.in_flight().len(), model.len());
            i += 1;
        }
        if error.is_some() || at == stream.len() {
            break;
        }
        let chunk = &stream[at..(at + chunks.next()).min(stream.len())];
        at += put(conn.frame_buf_mut(), chunk, use_feed);
    }
    assert_eq!(i, want_frames.len(), "responses read");
    assert_eq!(error, want_error);
}
