//! One client connection's frames, whatever moves its bytes (`tokio_io.rs`): kwire's
//! sans-IO connection state (`kwire::conn::InFlight`, `kwire::secrets::RawSasl`, a
//! `kwire::filter::FilterChain`), and the reporting of each frame forwarded (log, metrics,
//! recordings).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use kwire::ApiKey;
use kwire::Direction;
use kwire::conn::metrics::Undecoded;
use kwire::conn::{ConnError, FrameBuf, InFlight};
use kwire::filter::{FilterChain, Verdict};
use kwire::frame::RequestHeaderView;
use kwire::secrets::RawSasl;

use super::decode::{self, Decoded};
use super::{Format, Shared, now};

/// What the proxy keeps of a request awaiting its response.
pub(super) struct Meta {
    client_id: Option<Arc<str>>,
    sent: Instant,
    /// The whole frame's size, prefix included.
    size: usize,
    /// The name its frames are recorded under.
    record_name: Option<String>,
}

pub(super) type Pending = kwire::conn::Pending<Meta>;

/// Frames up to this size are copied into the batch written at the end of a read; larger
/// ones are written from the read buffer.
pub(super) const COPY_MAX: usize = 16 * 1024;

/// Frame buffers grown past their base capacity (by a large frame: Produce, Fetch), given
/// back by connection directions gone idle and taken by the next direction to wake, so that
/// large frames with pauses between them reuse memory already mapped instead of allocating,
/// zero-filling and faulting in a fresh buffer each time (measured as most of the proxy's CPU
/// per MB, docs/proxy.md). Bounded by [`POOL_BUFFERS`] and [`POOL_BYTES`]; past that a buffer
/// is freed. Buffers of the base capacity are freed at once (the allocator reuses those
/// well): an idle connection still holds no buffer.
static POOL: Mutex<Vec<FrameBuf>> = Mutex::new(Vec::new());

/// At most this many buffers wait in [`POOL`].
const POOL_BUFFERS: usize = 8;

/// At most this many bytes wait in [`POOL`], in all.
const POOL_BYTES: usize = 32 << 20;

/// A frame buffer for a direction that has bytes to read: a pooled one if any.
pub(super) fn take_frame_buf(base: usize, max_frame: usize) -> FrameBuf {
    let pooled = POOL.lock().unwrap_or_else(|e| e.into_inner()).pop();
    match pooled {
        Some(mut fb) => {
            fb.set_max_frame_size(max_frame);
            fb
        }
        None => {
            let mut fb = FrameBuf::with_base_capacity(base, max_frame);
            // A grown buffer goes back to the pool grown, whoever used it last.
            fb.keep_capacity(true);
            fb
        }
    }
}

/// Takes back the frame buffer of a direction gone idle (nothing buffered): into the pool
/// if it grew past its base capacity and the pool has room, else freed.
pub(super) fn give_back_frame_buf(fb: FrameBuf) {
    if fb.capacity() <= fb.base_capacity() || fb.buffered() != 0 || fb.error().is_some() {
        return;
    }
    let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
    let held: usize = pool.iter().map(FrameBuf::capacity).sum();
    if pool.len() < POOL_BUFFERS && held.saturating_add(fb.capacity()) <= POOL_BYTES {
        // Not cleared: it is empty, and `clear` would shrink it on its next read.
        pool.push(fb);
    }
}

/// What both directions of a connection share.
pub(super) struct State {
    /// Requests awaiting their responses, in order (Kafka answers a connection's requests
    /// in order; Produce with acks=0 gets no answer and is never entered), at most
    /// `kwire::conn::DEFAULT_MAX_IN_FLIGHT` (`InFlight::new`: the table grows as requests
    /// are pipelined, up to that); a client with more unanswered requests is disconnected.
    pub(super) in_flight: InFlight<Meta>,
    /// Where the connection is in a SaslHandshake v0 exchange, whose raw SASL tokens
    /// (frames without a Kafka header) pass through undecoded and unlogged: the request
    /// side enters it on a v0 handshake request, the response side ends it.
    pub(super) sasl: RawSasl,
    pub(super) filters: FilterChain,
    /// The SASL mechanism of the connection's SaslHandshake, and whether its user was
    /// logged: the log names both, never a secret.
    pub(super) auth: Auth,
}

/// What the log says of a connection's SASL authentication.
#[derive(Default)]
pub(super) struct Auth {
    mechanism: Option<String>,
    user_logged: bool,
}

impl Auth {
    /// A request of the connection (or a raw SaslHandshake v0 token when `token`): the
    /// words for the log when it names the mechanism or the user for the first time.
    fn on_request(&mut self, frame: &[u8], token: bool) -> Option<String> {
        // Secret: `auth_bytes` holds the client's credentials (a PLAIN password, a SCRAM
        // proof, a token). They go only to `sasl_user`, which returns the user name; only
        // the mechanism and that name are formatted here. The log, JSON and recordings get
        // the frame masked by `decode::redacted` (tests/proxy_cluster.rs checks every output).
        let auth_bytes: &[u8] = if token {
            frame
        } else {
            match kwire::dispatch::parse_request(frame).map(|r| r.body) {
                Ok(kwire::messages::RequestBodyView::SaslHandshake(v)) => {
                    let mechanism = v.mechanism().to_string();
                    let words = format!("SASL mechanism {mechanism} (SaslHandshake)");
                    self.mechanism = Some(mechanism);
                    self.user_logged = false;
                    return Some(words);
                }
                Ok(kwire::messages::RequestBodyView::SaslAuthenticate(v)) => v.auth_bytes(),
                _ => return None,
            }
        };
        let mechanism = self.mechanism.as_deref()?;
        if self.user_logged {
            return None;
        }
        let user = kwire::secrets::sasl_user(mechanism, auth_bytes)?;
        self.user_logged = true;
        Some(format!("SASL {mechanism} user {user:?}"))
    }
}

/// Whether a request of this API may name a SASL mechanism or user.
fn sasl_api(api_key: i16) -> bool {
    api_key == ApiKey::SaslHandshake.to_i16() || api_key == ApiKey::SaslAuthenticate.to_i16()
}

pub(super) type Conn = Arc<Mutex<State>>;

pub(super) fn lock(conn: &Conn) -> MutexGuard<'_, State> {
    conn.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the request side knows of a frame before forwarding it.
pub(super) enum Head {
    /// A request: its API's name, whether it expects an answer, and the name it is
    /// recorded under.
    Request { api: String, expects: bool, client_id: Option<Arc<str>>, record_name: Option<String> },
    /// A raw SASL token (SaslHandshake v0), and what the log says of it (its user).
    Token(Option<String>),
    /// A SaslHandshake or SaslAuthenticate request, with what the log says of it (the
    /// mechanism or the user), then the request.
    Sasl(String, Box<Head>),
    /// A request whose header does not parse.
    Bad(String),
}

/// Frames to write in one go: small frames are copied in, with their size prefix.
pub(super) struct Batch {
    pub(super) out: Vec<u8>,
}

impl Batch {
    pub(super) fn push(&mut self, frame: &[u8]) -> usize {
        let at = self.out.len();
        self.out.extend_from_slice(&(frame.len() as u32).to_be_bytes());
        self.out.extend_from_slice(frame);
        at
    }

    /// The frame (without prefix) pushed at `at`.
    pub(super) fn frame(&self, at: usize) -> &[u8] {
        let len = u32::from_be_bytes([self.out[at], self.out[at + 1], self.out[at + 2], self.out[at + 3]]);
        &self.out[at + 4..at + 4 + len as usize]
    }
}

/// The words for a framing violation (a negative size, or one over the limit).
pub(super) fn violation(e: &kwire::frame::FrameError) -> String {
    match e {
        kwire::frame::FrameError::Decode(d) => match d.kind() {
            kwire::DecodeErrorKind::InvalidLength(n) => format!("negative frame size {n}"),
            kwire::DecodeErrorKind::FrameTooLarge { size, max } => {
                format!("frame size {size} is over the limit of {max} bytes (--max-frame-bytes)")
            }
            _ => d.to_string(),
        },
        e => e.to_string(),
    }
}

/// Classifies and registers a request frame (without its size prefix) before it is
/// forwarded; returns what it is and what to forward.
pub(super) fn admit(
    frame: &[u8],
    state: &mut State,
    shared: &Shared,
    last_client: &mut Option<Arc<str>>,
) -> (Head, Verdict) {
    if state.sasl.client_token() {
        return (Head::Token(state.auth.on_request(frame, true)), Verdict::Forward);
    }
    let peek = match RequestHeaderView::peek(frame) {
        Ok(p) => p,
        Err(e) => return (Head::Bad(e.to_string()), Verdict::Forward),
    };
    if sasl_api(peek.api_key)
        && let Some(words) = state.auth.on_request(frame, false)
    {
        let (head, verdict) = admit_request(frame, peek, state, shared, last_client);
        return (Head::Sasl(words, Box::new(head)), verdict);
    }
    admit_request(frame, peek, state, shared, last_client)
}

fn admit_request(
    frame: &[u8],
    peek: kwire::frame::RequestHeaderPeek<'_>,
    state: &mut State,
    shared: &Shared,
    last_client: &mut Option<Arc<str>>,
) -> (Head, Verdict) {
    if let Some(mechanism) = decode::sasl_handshake_v0(frame) {
        state.sasl.on_request(ApiKey::SaslHandshake, 0, mechanism.as_deref());
    }
    let verdict = state.filters.on_request(frame);
    let client_id = match (peek.client_id, &*last_client) {
        (Some(c), Some(last)) if **last == *c => Some(last.clone()),
        (Some(c), _) => {
            let arc: Arc<str> = Arc::from(c);
            *last_client = Some(arc.clone());
            Some(arc)
        }
        (None, _) => None,
    };
    let api = decode::api_name(peek.api_key);
    let record_name = shared.recorder.as_ref().and_then(|r| r.name(peek.client_id, &api, peek.api_version));
    let forwarded = match &verdict {
        Verdict::Replace(new) => &new[..],
        _ => frame,
    };
    // A request that gets no answer (Produce with acks=0) is never entered.
    let expects =
        !matches!(verdict, Verdict::Drop) && kwire::conn::frame_expects_response(forwarded).unwrap_or(true);
    let meta = Meta {
        client_id: client_id.clone(),
        sent: Instant::now(),
        size: frame.len() + 4,
        record_name: record_name.clone(),
    };
    let verdict = match ApiKey::from_i16(peek.api_key) {
        Some(key) if expects && !matches!(verdict, Verdict::Close(_)) => {
            match state.in_flight.push(peek.correlation_id, key, peek.api_version, meta) {
                Ok(()) => verdict,
                Err(e) => Verdict::Close(e.to_string()),
            }
        }
        // An API kwire does not know is forwarded, and its answer is reported unpaired.
        _ => verdict,
    };
    (Head::Request { api, expects, client_id, record_name }, verdict)
}

/// The SASL mechanism or user of a connection, in the log (text, `--quiet` too, or JSON).
fn log_sasl(words: &str, id: u64, shared: &Shared) {
    match shared.format {
        Format::Text => shared.log.line(format!("{} conn={id} {words}", now())),
        Format::Json => shared.log.line(format!(
            "{{\"time\":\"{}\",\"conn\":{id},\"sasl\":{}}}",
            now(),
            serde_json::to_string(words).unwrap_or_default()
        )),
    }
}

/// A raw SASL token passed through: one line saying so, never its bytes.
fn on_token(frame: &[u8], from: &str, id: u64, shared: &Shared) {
    shared.stats.sasl_tokens.fetch_add(1, Ordering::Relaxed);
    shared
        .metrics
        .bytes(if from == "client" { Direction::Request } else { Direction::Response }, frame.len() + 4);
    match shared.format {
        Format::Text if !shared.quiet => shared.log.line(format!(
            "{} conn={id} SASL tokens (v0 handshake): {} bytes from the {from}, not shown",
            now(),
            frame.len()
        )),
        Format::Json => shared.log.line(format!(
            "{{\"time\":\"{}\",\"conn\":{id},\"direction\":\"{}\",\"saslToken\":true,\"size\":{},\"shown\":false}}",
            now(),
            if from == "client" { "request" } else { "response" },
            frame.len() + 4
        )),
        Format::Text => {}
    }
}

/// Logs (and records) a forwarded request (`frame` without its size prefix).
pub(super) fn on_request(frame: &[u8], head: &Head, id: u64, shared: &Shared) {
    let (api, expects, client_id, record_name) = match head {
        Head::Request { api, expects, client_id, record_name } => (api, *expects, client_id, record_name),
        Head::Token(words) => {
            if let Some(words) = words {
                log_sasl(words, id, shared);
            }
            return on_token(frame, "client", id, shared);
        }
        Head::Sasl(words, head) => {
            log_sasl(words, id, shared);
            return on_request(frame, head, id, shared);
        }
        Head::Bad(reason) => {
            shared.stats.requests.fetch_add(1, Ordering::Relaxed);
            shared.metrics.bytes(Direction::Request, frame.len() + 4);
            shared.count_undecoded(Direction::Request, "?", Undecoded::Malformed);
            shared.log.line(format!("{} conn={id} request not decoded: {reason}", now()));
            if let Some(r) = &shared.recorder {
                let _ = r.save_undecoded("request", &with_prefix(frame), None, reason, shared.show_secrets);
            }
            return;
        }
    };
    shared.stats.requests.fetch_add(1, Ordering::Relaxed);
    if let Ok(peek) = RequestHeaderView::peek(frame) {
        match peek.key() {
            Some(key) => shared.metrics.request(key, peek.api_version, frame.len() + 4),
            None => shared.metrics.unknown_request(frame.len() + 4),
        }
    }
    let decoded = decode::decode_request(frame);
    let roundtrip =
        if shared.verify && decoded == Decoded::Ok { Some(decode::roundtrip_request(frame)) } else { None };
    if let (Some(r), Some(name)) = (&shared.recorder, record_name) {
        let _ = r.save("requests", name, &with_prefix(frame), None, shared.show_secrets);
    }
    report("request", frame, api, None, &decoded, roundtrip.as_ref(), id, shared, None);
    if !expects && let Ok(peek) = RequestHeaderView::peek(frame) {
        let meta = Meta {
            client_id: client_id.clone(),
            sent: Instant::now(),
            size: frame.len() + 4,
            record_name: None,
        };
        no_response(peek.api_key, peek.api_version, &meta, id, shared);
    }
}

fn with_prefix(frame: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(frame.len() + 4);
    v.extend_from_slice(&(frame.len() as u32).to_be_bytes());
    v.extend_from_slice(frame);
    v
}

/// Logs a frame's decoding problems (text) or the frame itself (JSON); `frame` is without
/// its size prefix.
#[allow(clippy::too_many_arguments)]
fn report(
    direction: &str,
    frame: &[u8],
    api: &str,
    response_to: Option<(i16, i16)>,
    decoded: &Decoded,
    roundtrip: Option<&Result<bool, String>>,
    id: u64,
    shared: &Shared,
    extra: Option<String>,
) {
    if let Some(reason) = decoded.reason() {
        let unknown = matches!(decoded, Decoded::Unknown(_));
        let why = if unknown { Undecoded::Unknown } else { Undecoded::Malformed };
        let side = if direction == "request" { Direction::Request } else { Direction::Response };
        let before = shared.count_undecoded(side, api, why);
        let what = why.label();
        if let Some(r) = &shared.recorder {
            let _ = r.save_undecoded(
                &format!("{direction}_{api}"),
                &with_prefix(frame),
                response_to,
                reason,
                shared.show_secrets,
            );
        }
        // A malformed frame is logged each time; an API kwire does not know, once.
        if shared.format == Format::Text && (!unknown || before == 0) {
            let more = if unknown { "; further ones are only counted" } else { "" };
            shared
                .log
                .line(format!("{} conn={id} {direction} {api} not decoded ({what}): {reason}{more}", now()));
        }
    }
    if let Some(Err(e)) = roundtrip {
        shared.stats.mismatches.fetch_add(1, Ordering::Relaxed);
        if shared.format == Format::Text {
            shared
                .log
                .line(format!("{} conn={id} {direction} {api} does not re-encode byte for byte: {e}", now()));
        }
    }
    if shared.format == Format::Json {
        let (key, version) = match response_to {
            Some(kv) => kv,
            None => match RequestHeaderView::peek(frame) {
                Ok(h) => (h.api_key, h.api_version),
                Err(_) => (-1, -1),
            },
        };
        let rt = match roundtrip {
            None => "\"skipped\"".to_string(),
            Some(Ok(true)) => "\"ok\"".to_string(),
            Some(Ok(false)) => "\"unknown\"".to_string(),
            Some(Err(e)) => serde_json::to_string(&format!("mismatch: {e}")).unwrap_or_default(),
        };
        let decoded_frame = if *decoded == Decoded::Ok {
            let whole = with_prefix(frame);
            let shown = if shared.show_secrets { whole } else { decode::redacted(&whole, response_to).0 };
            decode::frame_json(&shown, response_to).unwrap_or_else(|| "null".into())
        } else {
            "null".into()
        };
        let reason = serde_json::to_string(&decoded.reason()).unwrap_or_default();
        let line = format!(
            "{{\"time\":\"{}\",\"conn\":{id},\"direction\":\"{direction}\",\"api\":{},\"apiKey\":{key},\
             \"apiVersion\":{version},\"size\":{},\"decoded\":\"{}\",\"reason\":{reason},\"roundtrip\":{rt}{},\
             \"frame\":{decoded_frame}}}",
            now(),
            serde_json::to_string(api).unwrap_or_default(),
            frame.len() + 4,
            decoded.word(),
            extra.unwrap_or_default(),
        );
        shared.log.line(line);
    }
}

/// What the response side knows of a frame before forwarding it.
pub(super) enum Answer {
    /// The response to this request; whether a filter rewrote it.
    Paired(Pending, bool),
    /// A response that answers no request awaiting one.
    Unpaired(String),
    /// A raw SASL token (SaslHandshake v0).
    Token,
}

/// Pairs a response frame (without its size prefix) with its request and runs it through
/// the filters, before it is forwarded.
pub(super) fn pair(frame: &[u8], state: &mut State, id: u64, shared: &Shared) -> (Answer, Verdict) {
    // Decided before the frame is forwarded: after the broker's last token the client
    // sends Kafka requests again.
    if state.sasl.server_token(frame.len()) {
        return (Answer::Token, Verdict::Forward);
    }
    let correlation_id = match kwire::frame::ResponseHeaderView::parse(frame, 0) {
        Ok((h, _)) => h.correlation_id(),
        Err(e) => return (Answer::Unpaired(format!("no response header: {e}")), Verdict::Forward),
    };
    let p = match state.in_flight.complete(correlation_id) {
        Ok(p) => p,
        Err(ConnError::OutOfOrder { expected, .. }) => {
            // Kafka answers in order; forward it all the same, and say so.
            shared.log.line(format!(
                "{} conn={id} the broker answered correlation id {correlation_id} before {expected}",
                now()
            ));
            match state.in_flight.remove(correlation_id) {
                Ok(p) => p,
                Err(e) => return (Answer::Unpaired(e.to_string()), Verdict::Forward),
            }
        }
        Err(e) => return (Answer::Unpaired(e.to_string()), Verdict::Forward),
    };
    if p.api_key == ApiKey::SaslHandshake && p.api_version == 0 {
        state.sasl.on_handshake_response(decode::sasl_handshake_error(frame, 0));
    }
    let verdict = state.filters.on_response(frame, p.api_key, p.api_version);
    let rewritten = matches!(verdict, Verdict::Replace(_));
    (Answer::Paired(p, rewritten), verdict)
}

pub(super) fn no_response(api_key: i16, api_version: i16, meta: &Meta, id: u64, shared: &Shared) {
    if shared.format == Format::Text && !shared.quiet {
        shared.log.line(format!(
            "{} conn={id} {} {} v{api_version} req={}B no response",
            now(),
            meta.client_id.as_deref().unwrap_or("-"),
            decode::api_name(api_key),
            meta.size
        ));
    }
}

/// Logs (and records) a forwarded response (`frame` without its size prefix; the frame as
/// forwarded, after any rewriting).
pub(super) fn on_response(frame: &[u8], answer: Answer, done: Instant, id: u64, shared: &Shared) {
    let (p, rewritten) = match answer {
        Answer::Token => return on_token(frame, "broker", id, shared),
        Answer::Paired(p, rewritten) => (p, rewritten),
        Answer::Unpaired(reason) => {
            shared.stats.responses.fetch_add(1, Ordering::Relaxed);
            shared.metrics.bytes(Direction::Response, frame.len() + 4);
            shared.count_undecoded(Direction::Response, "?", Undecoded::Unpaired);
            shared.log.line(format!("{} conn={id} response not decoded: {reason}", now()));
            if let Some(r) = &shared.recorder {
                let _ = r.save_undecoded(
                    "response",
                    &with_prefix(frame),
                    Some((-1, -1)),
                    &reason,
                    shared.show_secrets,
                );
            }
            return;
        }
    };
    shared.stats.responses.fetch_add(1, Ordering::Relaxed);
    if rewritten {
        shared.stats.rewritten.fetch_add(1, Ordering::Relaxed);
    }
    let key = p.api_key.to_i16();
    let info = decode::decode_response(frame, key, p.api_version);
    let api = decode::api_name(key);
    let m = &p.payload;
    let latency = done.saturating_duration_since(m.sent);
    shared.metrics.response(p.api_key, frame.len() + 4, latency);
    if let (Some(r), Some(name)) = (&shared.recorder, &m.record_name) {
        let _ =
            r.save("responses", name, &with_prefix(frame), Some((key, info.version)), shared.show_secrets);
    }
    let roundtrip = if shared.verify && info.decoded == Decoded::Ok {
        Some(decode::roundtrip_response(frame, key, info.version))
    } else {
        None
    };
    if shared.format == Format::Text && !shared.quiet {
        let mut line = format!(
            "{} conn={id} {} {api} v{} req={}B resp={}B {:.3}ms",
            now(),
            m.client_id.as_deref().unwrap_or("-"),
            p.api_version,
            m.size,
            frame.len() + 4,
            latency.as_secs_f64() * 1e3
        );
        if !info.errors.is_empty() {
            let names: Vec<String> = info.errors.iter().map(|&c| decode::error_name(c)).collect();
            line.push_str(&format!(" errors={}", names.join(",")));
        }
        if rewritten {
            // The deny-list rewrites ApiVersions answers; the address rewriter the others.
            line.push_str(if p.api_key == ApiKey::ApiVersions {
                " (denied APIs removed)"
            } else {
                " (broker addresses rewritten)"
            });
        }
        shared.log.line(line);
    }
    let extra = format!(
        ",\"correlationId\":{},\"clientId\":{},\"latencyUs\":{},\"errors\":{:?},\"rewritten\":{rewritten}",
        p.correlation_id,
        serde_json::to_string(&m.client_id.as_deref()).unwrap_or_default(),
        latency.as_micros(),
        info.errors,
    );
    report(
        "response",
        frame,
        &api,
        Some((key, info.version)),
        &info.decoded,
        roundtrip.as_ref(),
        id,
        shared,
        Some(extra),
    );
}
