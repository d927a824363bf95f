//! One client connection: a thread per direction.

use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kwire::secrets::RawSasl;

use super::decode::{self, Decoded, Split};
use super::{Format, Shared, now};

/// A request awaiting its response.
struct Pending {
    correlation_id: i32,
    api_key: i16,
    api_version: i16,
    client_id: Option<Arc<str>>,
    sent: Instant,
    size: usize,
    /// The name its frames are recorded under.
    record_name: Option<String>,
}

/// Requests sent without a response yet, oldest first. Kafka answers the requests of a
/// connection in order, so a response pairs with the oldest entry of its correlation id,
/// and the entries before it got no response (Produce with acks=0).
type Queue = Arc<Mutex<VecDeque<Pending>>>;

/// Where the connection is in a SaslHandshake v0 exchange, whose raw SASL tokens (frames
/// without a Kafka header) pass through undecoded and unlogged. Shared by both directions:
/// the request side enters it on a v0 handshake request, the response side ends it.
type Sasl = Arc<Mutex<RawSasl>>;

/// What the request side knows of a frame before forwarding it.
enum Head {
    /// A request, registered: its API's name and the name it is recorded under.
    Request(String, Option<String>),
    /// A raw SASL token (SaslHandshake v0).
    Token,
    /// A request whose header does not parse.
    Bad,
}

/// Entries kept at most; beyond, the oldest is dropped (a client sending many acks=0
/// produces between two answered requests).
const MAX_PENDING: usize = 4096;
/// First size of a read buffer; it grows to the largest frame and shrinks back after.
const READ_BUF: usize = 64 * 1024;

/// A read buffer holding whole frames and the start of the next.
struct FrameBuf {
    buf: Vec<u8>,
    len: usize,
    /// Bytes the buffer must hold once the frames split off are consumed: the part of the
    /// next frame already read and the rest of it.
    want: usize,
}

impl FrameBuf {
    fn new() -> Self {
        FrameBuf { buf: vec![0; READ_BUF], len: 0, want: 0 }
    }

    /// Reads once; `Ok(0)` at end of stream.
    fn fill(&mut self, from: &mut TcpStream) -> std::io::Result<usize> {
        if self.len == self.buf.len() {
            // Never reached through split/consume, which size the buffer for the frame
            // being read; a read into no room would look like the end of the stream.
            self.buf.resize(self.buf.len() + READ_BUF, 0);
        }
        loop {
            match from.read(&mut self.buf[self.len..]) {
                Ok(n) => {
                    self.len += n;
                    return Ok(n);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Frame ranges `(start, end)` (size prefix included) of the whole frames buffered,
    /// into `frames`; returns where they end. An error is a framing violation; the frames
    /// before it are in `frames`.
    fn split(&mut self, max: usize, frames: &mut Vec<(usize, usize)>) -> Result<usize, String> {
        frames.clear();
        let mut pos = 0;
        loop {
            match decode::split(&self.buf[pos..self.len], max)? {
                Split::Frame(n) => {
                    frames.push((pos, pos + n));
                    pos += n;
                }
                Split::Incomplete(needed) => {
                    self.want = self.len - pos + needed;
                    return Ok(pos);
                }
            }
        }
    }

    /// Drops the first `pos` bytes (forwarded frames) and sizes the buffer for the next
    /// frame: it grows to one frame (bounded by the size limit `split` checked) and
    /// shrinks back after a large one.
    fn consume(&mut self, pos: usize) {
        self.buf.copy_within(pos..self.len, 0);
        self.len -= pos;
        let want = self.want.max(READ_BUF);
        if self.buf.len() < want {
            self.buf.resize(want, 0);
        } else if self.buf.len() > 4 * READ_BUF && want <= READ_BUF {
            self.buf.truncate(READ_BUF);
            self.buf.shrink_to_fit();
        }
    }
}

fn write_all(to: &mut TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    to.write_all(bytes)
}

/// Serves one client connection until either side closes it.
pub fn run(client: TcpStream, peer: SocketAddr, upstream: &str, id: u64, shared: &Arc<Shared>) {
    let upstream_stream = upstream
        .to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next())
        .ok_or_else(|| std::io::Error::new(ErrorKind::NotFound, "cannot resolve"))
        .and_then(|addr| TcpStream::connect_timeout(&addr, Duration::from_secs(10)));
    let server = match upstream_stream {
        Ok(s) => s,
        Err(e) => {
            shared
                .log
                .line(format!("{} conn={id} {peer}: cannot connect to {upstream}: {e}; closing", now()));
            let _ = client.shutdown(Shutdown::Both);
            return;
        }
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    shared.log.line(format!("{} conn={id} {peer}: connected, forwarding to {upstream}", now()));
    let queue: Queue = Arc::new(Mutex::new(VecDeque::new()));
    let (Ok(client_r), Ok(server_w)) = (client.try_clone(), server.try_clone()) else {
        shared.log.line(format!("{} conn={id} {peer}: cannot clone sockets; closing", now()));
        return;
    };
    let closing = Arc::new(AtomicBool::new(false));
    let sasl: Sasl = Arc::new(Mutex::new(RawSasl::new()));
    let responses = {
        let shared = shared.clone();
        let queue = queue.clone();
        let closing_r = closing.clone();
        let sasl = sasl.clone();
        std::thread::Builder::new()
            .name(format!("conn-{id}-resp"))
            .spawn(move || responses(server, client, id, &shared, &queue, &sasl, &closing_r))
    };
    let mut why = requests(client_r, server_w, id, shared, &queue, &sasl, &closing);
    if let Ok(handle) = responses
        && let Ok(Some(broker_side)) = handle.join()
    {
        // The client side saw the end the broker side caused.
        if !why.starts_with("framing violation") {
            why = broker_side;
        }
    }
    // Requests left without a response: Produce with acks=0, or the connection closed.
    let left: Vec<Pending> = queue.lock().unwrap_or_else(|e| e.into_inner()).drain(..).collect();
    for p in &left {
        no_response(p, id, shared);
    }
    shared.log.line(format!("{} conn={id} {peer}: closed ({why})", now()));
}

/// Client to broker: forwards requests, then decodes them.
fn requests(
    mut client: TcpStream,
    mut server: TcpStream,
    id: u64,
    shared: &Shared,
    queue: &Queue,
    sasl: &Sasl,
    closing: &AtomicBool,
) -> String {
    let mut buf = FrameBuf::new();
    let mut frames = Vec::new();
    let mut last_client: Option<Arc<str>> = None;
    let why = loop {
        match buf.fill(&mut client) {
            Ok(0) => break "client closed".to_string(),
            Ok(_) => {}
            Err(e) => break format!("client read error: {e}"),
        }
        let split = buf.split(shared.max_frame, &mut frames);
        let pos = match split {
            Ok(pos) => pos,
            Err(_) => frames.last().map_or(0, |f| f.1),
        };
        // Register before forwarding: the response may come back before this thread
        // runs again.
        let mut heads = Vec::with_capacity(frames.len());
        for &(start, end) in &frames {
            let frame = &buf.buf[start + 4..end];
            {
                let mut sasl = sasl.lock().unwrap_or_else(|e| e.into_inner());
                if sasl.client_token() {
                    heads.push(Head::Token);
                    continue;
                }
                if let Some(mechanism) = decode::sasl_handshake_v0(frame) {
                    sasl.on_request(kwire::ApiKey::SaslHandshake.key(), 0, mechanism.as_deref());
                }
            }
            let head = decode::request_head(frame);
            if let Ok(h) = &head {
                let client_id = match (&h.client_id, &last_client) {
                    (Some(c), Some(last)) if **last == **c => Some(last.clone()),
                    (Some(c), _) => {
                        let arc: Arc<str> = Arc::from(c.as_str());
                        last_client = Some(arc.clone());
                        Some(arc)
                    }
                    (None, _) => None,
                };
                let api = decode::api_name(h.api_key);
                let record_name = shared
                    .recorder
                    .as_ref()
                    .and_then(|r| r.name(h.client_id.as_deref(), &api, h.api_version));
                let mut q = queue.lock().unwrap_or_else(|e| e.into_inner());
                if q.len() >= MAX_PENDING {
                    q.pop_front();
                }
                q.push_back(Pending {
                    correlation_id: h.correlation_id,
                    api_key: h.api_key,
                    api_version: h.api_version,
                    client_id,
                    sent: Instant::now(),
                    size: end - start,
                    record_name: record_name.clone(),
                });
                heads.push(Head::Request(api, record_name));
            } else {
                heads.push(Head::Bad);
            }
        }
        if let Err(e) = write_all(&mut server, &buf.buf[..pos]) {
            break format!("broker write error: {e}");
        }
        for (&(start, end), head) in frames.iter().zip(&heads) {
            on_request(&buf.buf[start..end], head, id, shared);
        }
        if let Err(violation) = split {
            shared.stats.violations.fetch_add(1, Ordering::Relaxed);
            let line = format!(
                "{} conn={id} framing violation from the client: {violation}; closing this connection",
                now()
            );
            shared.log.line(line);
            break format!("framing violation: {violation}");
        }
        buf.consume(pos);
    };
    // End both directions: the response thread's read returns, and the broker sees the
    // client go.
    closing.store(true, Ordering::SeqCst);
    let _ = server.shutdown(Shutdown::Both);
    let _ = client.shutdown(Shutdown::Both);
    why
}

/// A raw SASL token passed through: one line saying so, never its bytes.
fn on_token(frame: &[u8], from: &str, id: u64, shared: &Shared) {
    shared.stats.sasl_tokens.fetch_add(1, Ordering::Relaxed);
    let n = frame.len() - 4;
    match shared.format {
        Format::Text if !shared.quiet => shared
            .log
            .line(format!("{} conn={id} SASL tokens (v0 handshake): {n} bytes from the {from}, not shown", now())),
        Format::Json => shared.log.line(format!(
            "{{\"time\":\"{}\",\"conn\":{id},\"direction\":\"{}\",\"saslToken\":true,\"size\":{},\"shown\":false}}",
            now(),
            if from == "client" { "request" } else { "response" },
            frame.len()
        )),
        Format::Text => {}
    }
}

fn on_request(frame: &[u8], head: &Head, id: u64, shared: &Shared) {
    let (api, record_name) = match head {
        Head::Request(api, name) => (api, name),
        Head::Token => return on_token(frame, "client", id, shared),
        Head::Bad => {
            shared.stats.requests.fetch_add(1, Ordering::Relaxed);
            let reason = decode::request_head(&frame[4..]).err().unwrap_or_default();
            shared.count_undecoded("request", "?", "malformed");
            shared.log.line(format!("{} conn={id} request not decoded: {reason}", now()));
            if let Some(r) = &shared.recorder {
                let _ = r.save_undecoded("request", frame, None, &reason, shared.show_secrets);
            }
            return;
        }
    };
    shared.stats.requests.fetch_add(1, Ordering::Relaxed);
    let body = &frame[4..];
    let decoded = decode::decode_request(body);
    let roundtrip =
        if shared.verify && decoded == Decoded::Ok { Some(decode::roundtrip_request(body)) } else { None };
    if let (Some(r), Some(name)) = (&shared.recorder, record_name) {
        let _ = r.save("requests", name, frame, None, shared.show_secrets);
    }
    report("request", frame, api, None, &decoded, roundtrip.as_ref(), id, shared, None);
}

/// Logs a frame's decoding problems (text) or the frame itself (JSON).
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
        let what = if unknown { "unknown" } else { "malformed" };
        let before = shared.count_undecoded(direction, api, what);
        if let Some(r) = &shared.recorder {
            let _ = r.save_undecoded(&format!("{direction}_{api}"), frame, response_to, reason, shared.show_secrets);
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
        let body = &frame[4..];
        let (key, version) = match response_to {
            Some(kv) => kv,
            None => match decode::request_head(body) {
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
            let shown = if shared.show_secrets {
                std::borrow::Cow::Borrowed(frame)
            } else {
                std::borrow::Cow::Owned(decode::redacted(frame, response_to).0)
            };
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
            frame.len(),
            decoded.word(),
            extra.unwrap_or_default(),
        );
        shared.log.line(line);
    }
}

/// Broker to client: decodes responses (before forwarding those that may carry broker
/// addresses, which are rewritten), forwards them, and logs one line per request.
/// Returns why it ended when the broker side ended the connection.
fn responses(
    mut server: TcpStream,
    mut client: TcpStream,
    id: u64,
    shared: &Arc<Shared>,
    queue: &Queue,
    sasl: &Sasl,
    closing: &AtomicBool,
) -> Option<String> {
    let mut buf = FrameBuf::new();
    let mut frames = Vec::new();
    let mut paired: Vec<Option<Pending>> = Vec::new();
    let mut tokens: Vec<bool> = Vec::new();
    let mut rewritten: Vec<Option<Vec<u8>>> = Vec::new();
    let why = loop {
        match buf.fill(&mut server) {
            // Unless the request side shut the sockets down (it then says why).
            Ok(0) | Err(_) if closing.load(Ordering::SeqCst) => break None,
            Ok(0) => break Some("the broker closed the connection".to_string()),
            Err(e) => break Some(format!("broker read error: {e}")),
            Ok(_) => {}
        }
        let split = buf.split(shared.max_frame, &mut frames);
        let pos = match split {
            Ok(pos) => pos,
            Err(_) => frames.last().map_or(0, |f| f.1),
        };
        paired.clear();
        tokens.clear();
        rewritten.clear();
        let mut infos = Vec::with_capacity(frames.len());
        {
            let mut q = queue.lock().unwrap_or_else(|e| e.into_inner());
            for &(start, end) in &frames {
                // Decided before the frame is forwarded: after the broker's last token the
                // client sends Kafka requests again.
                let token = sasl.lock().unwrap_or_else(|e| e.into_inner()).server_token(end - start - 4);
                tokens.push(token);
                if token {
                    paired.push(None);
                    continue;
                }
                let cid = decode::response_correlation_id(&buf.buf[start + 4..end]);
                let mut found = None;
                if let Some(cid) = cid
                    && q.iter().any(|p| p.correlation_id == cid)
                {
                    while let Some(p) = q.pop_front() {
                        if p.correlation_id == cid {
                            found = Some(p);
                            break;
                        }
                        // No response for it (Produce with acks=0).
                        no_response(&p, id, shared);
                    }
                }
                if let Some(p) = &found
                    && p.api_key == kwire::ApiKey::SaslHandshake.key()
                    && p.api_version == 0
                {
                    let code = decode::sasl_handshake_error(&buf.buf[start + 4..end], 0);
                    sasl.lock().unwrap_or_else(|e| e.into_inner()).on_handshake_response(code);
                }
                paired.push(found);
            }
        }
        // Responses that may name brokers are decoded, and rewritten, before forwarding.
        for (&(start, end), p) in frames.iter().zip(&paired) {
            let mut info = None;
            let mut new_frame = None;
            if let Some(p) = p
                && decode::may_carry_addresses(p.api_key, p.api_version)
            {
                let i = decode::decode_response(&buf.buf[start + 4..end], p.api_key, p.api_version);
                if !i.addresses.is_empty() {
                    new_frame = rewrite(&buf.buf[start + 4..end], p, &i, id, shared);
                }
                info = Some(i);
            }
            infos.push(info);
            rewritten.push(new_frame);
        }
        let mut result = Ok(());
        let mut from = 0;
        for (&(start, end), new) in frames.iter().zip(&rewritten) {
            if let Some(new) = new {
                result = result.and_then(|()| write_all(&mut client, &buf.buf[from..start]));
                result = result.and_then(|()| write_all(&mut client, new));
                from = end;
            }
        }
        result = result.and_then(|()| write_all(&mut client, &buf.buf[from..pos]));
        let done = Instant::now();
        for ((((&(start, end), p), info), new), &token) in
            frames.iter().zip(paired.drain(..)).zip(infos).zip(&rewritten).zip(&tokens)
        {
            if token {
                on_token(&buf.buf[start..end], "broker", id, shared);
                continue;
            }
            on_response(&buf.buf[start..end], p, info, new.is_some(), done, id, shared);
        }
        if let Err(e) = result {
            break Some(format!("client write error: {e}"));
        }
        if let Err(violation) = split {
            shared.stats.violations.fetch_add(1, Ordering::Relaxed);
            shared.log.line(format!(
                "{} conn={id} framing violation from the broker: {violation}; closing this connection",
                now()
            ));
            break Some(format!("framing violation from the broker: {violation}"));
        }
        buf.consume(pos);
    };
    let _ = client.shutdown(Shutdown::Both);
    let _ = server.shutdown(Shutdown::Both);
    why
}

fn rewrite(
    frame: &[u8],
    p: &Pending,
    info: &decode::ResponseInfo,
    id: u64,
    shared: &Arc<Shared>,
) -> Option<Vec<u8>> {
    let replace: Vec<Option<(String, i32)>> =
        info.addresses.iter().map(|(host, port)| shared.route(host, *port)).collect();
    match decode::rewrite_addresses(frame, p.api_key, info.version, &replace) {
        Ok(new) => {
            shared.stats.rewritten.fetch_add(1, Ordering::Relaxed);
            Some(new)
        }
        Err(e) => {
            shared.log.line(format!(
                "{} conn={id} cannot rewrite the broker addresses of a {} response ({e}); forwarded unchanged",
                now(),
                decode::api_name(p.api_key)
            ));
            None
        }
    }
}

fn no_response(p: &Pending, id: u64, shared: &Shared) {
    if shared.format == Format::Text && !shared.quiet {
        shared.log.line(format!(
            "{} conn={id} {} {} v{} req={}B no response",
            now(),
            p.client_id.as_deref().unwrap_or("-"),
            decode::api_name(p.api_key),
            p.api_version,
            p.size
        ));
    }
}

fn on_response(
    frame: &[u8],
    p: Option<Pending>,
    info: Option<decode::ResponseInfo>,
    rewritten: bool,
    done: Instant,
    id: u64,
    shared: &Shared,
) {
    shared.stats.responses.fetch_add(1, Ordering::Relaxed);
    let body = &frame[4..];
    let Some(p) = p else {
        let cid = decode::response_correlation_id(body);
        let reason = format!("no request with correlation id {cid:?} is awaiting a response");
        shared.count_undecoded("response", "?", "unpaired");
        shared.log.line(format!("{} conn={id} response not decoded: {reason}", now()));
        if let Some(r) = &shared.recorder {
            let _ = r.save_undecoded("response", frame, Some((-1, -1)), &reason, shared.show_secrets);
        }
        return;
    };
    let info = info.unwrap_or_else(|| decode::decode_response(body, p.api_key, p.api_version));
    let api = decode::api_name(p.api_key);
    let latency = done.saturating_duration_since(p.sent);
    if let (Some(r), Some(name)) = (&shared.recorder, &p.record_name) {
        let _ = r.save("responses", name, frame, Some((p.api_key, info.version)), shared.show_secrets);
    }
    let roundtrip = if shared.verify && info.decoded == Decoded::Ok {
        Some(decode::roundtrip_response(body, p.api_key, info.version))
    } else {
        None
    };
    if shared.format == Format::Text && !shared.quiet {
        let mut line = format!(
            "{} conn={id} {} {api} v{} req={}B resp={}B {:.3}ms",
            now(),
            p.client_id.as_deref().unwrap_or("-"),
            p.api_version,
            p.size,
            frame.len(),
            latency.as_secs_f64() * 1e3
        );
        if !info.errors.is_empty() {
            let names: Vec<String> = info.errors.iter().map(|&c| decode::error_name(c)).collect();
            line.push_str(&format!(" errors={}", names.join(",")));
        }
        if rewritten {
            line.push_str(" (broker addresses rewritten)");
        }
        shared.log.line(line);
    }
    let extra = format!(
        ",\"correlationId\":{},\"clientId\":{},\"latencyUs\":{},\"errors\":{:?},\"rewritten\":{rewritten}",
        p.correlation_id,
        serde_json::to_string(&p.client_id.as_deref()).unwrap_or_default(),
        latency.as_micros(),
        info.errors,
    );
    report(
        "response",
        frame,
        &api,
        Some((p.api_key, info.version)),
        &info.decoded,
        roundtrip.as_ref(),
        id,
        shared,
        Some(extra),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame larger than the buffer: the buffer grows to hold it, whatever was read of
    /// it so far, and shrinks back once it is gone.
    #[test]
    fn buffer_grows_for_a_large_frame_and_shrinks_after() {
        let mut b = FrameBuf::new();
        let mut frames = Vec::new();
        let size = 1_000_000usize;
        b.buf[..4].copy_from_slice(&(size as i32).to_be_bytes());
        b.len = READ_BUF;
        assert_eq!(b.split(1 << 24, &mut frames), Ok(0));
        b.consume(0);
        assert!(b.buf.len() >= size + 4, "{}", b.buf.len());
        assert_eq!(b.len, READ_BUF);
        // The rest arrives.
        b.len = size + 4;
        assert_eq!(b.split(1 << 24, &mut frames), Ok(size + 4));
        assert_eq!(frames, vec![(0, size + 4)]);
        b.consume(size + 4);
        assert_eq!(b.len, 0);
        assert_eq!(b.buf.len(), READ_BUF);
        // Two frames and a part in one read: the part moves to the front.
        let mut data = vec![0, 0, 0, 1, 7, 0, 0, 0, 2, 8, 9, 0, 0, 0, 3, 1];
        b.buf[..data.len()].copy_from_slice(&data);
        b.len = data.len();
        assert_eq!(b.split(100, &mut frames), Ok(11));
        assert_eq!(frames, vec![(0, 5), (5, 11)]);
        b.consume(11);
        data.drain(..11);
        assert_eq!(&b.buf[..b.len], &data[..]);
        // A violation after a whole frame: the frame is still reported.
        b.len = 0;
        b.buf[..9].copy_from_slice(&[0, 0, 0, 1, 7, 0xff, 0xff, 0xff, 0xff]);
        b.len = 9;
        assert!(b.split(100, &mut frames).is_err());
        assert_eq!(frames, vec![(0, 5)]);
    }
}
