//! The proxy's I/O: one task per client connection, over its sans-IO [`Session`].
//!
//! An idle connection holds no buffer: each direction waits for its socket to become
//! readable before it takes a frame buffer ([`BASE`] bytes, growing for a larger frame),
//! and gives the buffer (and its batch of writes) back as soon as the socket is drained
//! (a read returned less than it asked for) with no partial frame left. So an idle
//! connection costs its task, its sockets and its session, a few KB; a busy one two buffers
//! of at most one frame each. A buffer grown by a large frame goes to a small pool
//! ([`give_back_frame_buf`]), so that large frames do not each pay for fresh memory.
//!
//! The loop is generic over the stream ([`Source`] for reading, `AsyncWrite` for writing):
//! plain TCP, or TLS on either side. A TLS stream cannot say it is readable without reading,
//! so an idle TLS direction waits with a read into a few bytes on its task's stack and takes
//! its buffers only when they arrive. Both directions run the one [`forward`] loop; what
//! differs (pairing, filters, hooks) is their [`Side`]. Nothing is queued between the
//! directions but the requests awaiting answers and the answers filters gave, which the
//! response side sends in their turn (woken by the request side).

#[allow(unused_imports)]
use std::{borrow::ToOwned, boxed::Box, format, string::String, string::ToString, sync::Arc, vec, vec::Vec};

use std::future::Future;
use std::io::{ErrorKind, IoSlice};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard};
use std::task::Poll;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::net::tcp::OwnedReadHalf;

use super::dial::connect;
use super::runtime::Runtime;
use super::session::{Action, Answer, Answered, FromClient, RequestHead, Session};
use super::waiting::OwnRequests;
use super::{ConnInfo, Decision, Event, Hooks, Upstream, WaitingFilter, tls};
use crate::ApiKey;
use crate::Direction;
use crate::session::conn::FrameBuf;
use crate::session::conn::metrics::UpstreamFailure as Failure;

/// The frame buffers' base size (`kwire::conn`'s default): they grow as a larger frame's
/// bytes arrive.
const BASE: usize = crate::session::conn::DEFAULT_BASE_CAPACITY;

/// Serves one client connection until either side closes it: the client's TLS handshake
/// first (the SNI name chooses the broker with SNI routing), then the broker's connection
/// (TLS if so set up), then the frames.
pub(super) async fn run<H: Hooks>(
    client: TcpStream,
    peer: SocketAddr,
    upstream: &str,
    runtime: &Arc<Runtime<H>>,
) {
    let _ = client.set_nodelay(true);
    if runtime.tls.terminates() {
        // Boxed, as every TLS step is: TLS state is large, and a future is as large as its
        // largest state, so plain connections would carry it while they idle.
        return Box::pin(accept_tls(client, peer, upstream, runtime)).await;
    }
    let info = runtime.conn_info(peer, upstream.to_string());
    to_broker(client, info, runtime, String::new()).await;
}

/// [`run`] for a client that connects with TLS.
async fn accept_tls<H: Hooks>(
    client: TcpStream,
    peer: SocketAddr,
    upstream: &str,
    runtime: &Arc<Runtime<H>>,
) {
    let accepted = match tls::accept(&runtime.tls, client, upstream, runtime.max_frame).await {
        Ok(a) => a,
        Err(why) => {
            runtime.hooks.event(None, Event::Refused { peer, why: &why });
            return;
        }
    };
    let mut info = runtime.conn_info(peer, accepted.upstream);
    info.server_name = accepted.server_name;
    info.peer_certificates = accepted.certificates;
    let note = format!(" (TLS, server name {})", info.server_name.as_deref().unwrap_or("-"));
    to_broker(accepted.stream, info, runtime, note).await;
}

/// Connects to the broker the connection is routed to (with TLS if so set up) and serves
/// the frames.
async fn to_broker<C: Split, H: Hooks>(
    client: C,
    mut info: ConnInfo,
    runtime: &Arc<Runtime<H>>,
    note: String,
) {
    let (server, reached) = match connect(&info.route).await {
        Ok(s) => s,
        Err(e) => {
            let why = format!("cannot connect to {}: {e}", info.route);
            runtime.hooks.event(Some(&info), Event::Refused { peer: info.peer, why: &why });
            runtime.metrics.upstream_error(Failure::Connect);
            return;
        }
    };
    let _ = server.set_nodelay(true);
    // The broker's own address (one of a bootstrap list).
    info.route = server.peer_addr().map_or_else(|_| reached.clone(), |a| a.to_string());
    if runtime.tls.originates() {
        return Box::pin(connect_tls(client, server, &reached, info, runtime, note)).await;
    }
    serve(client, server, Arc::new(info), runtime, &note).await;
}

/// [`to_broker`] for a broker reached with TLS.
async fn connect_tls<C: Split, H: Hooks>(
    client: C,
    server: TcpStream,
    reached: &str,
    info: ConnInfo,
    runtime: &Arc<Runtime<H>>,
    note: String,
) {
    match tls::connect(&runtime.tls, server, reached).await {
        Ok(server) => {
            serve(client, server, Arc::new(info), runtime, &format!("{note} (TLS to the broker)")).await
        }
        Err(why) => {
            let why = format!("{reached}: {why}");
            runtime.hooks.event(Some(&info), Event::Refused { peer: info.peer, why: &why });
            runtime.metrics.upstream_error(Failure::Connect);
        }
    }
}

/// One connection's session, shared by its two directions.
type Conn<T> = Arc<Mutex<Session<T>>>;

fn lock<T>(conn: &Conn<T>) -> MutexGuard<'_, Session<T>> {
    conn.lock().unwrap_or_else(|e| e.into_inner())
}

/// Forwards frames both ways between `client` and `server` until either side ends, or the
/// proxy shuts down and the requests in flight are answered.
async fn serve<C: Split, S: Split, H: Hooks>(
    client: C,
    server: S,
    info: Arc<ConnInfo>,
    runtime: &Arc<Runtime<H>>,
    note: &str,
) {
    runtime.hooks.event(Some(&info), Event::Connected { upstream: &info.route, tls: note.trim() });
    let filters = runtime.filters(&info);
    let conn: Conn<H::Tag> = Arc::new(Mutex::new(Session::new(info.clone(), filters)));
    let wake = tokio::sync::Notify::new();
    let (client_r, client_w) = client.halves();
    let (server_r, server_w) = server.halves();
    let mut stop = runtime.stop.subscribe();
    let waiting = runtime.waiting(&info);
    let mut requests = Requests { runtime, conn: &conn, wake: &wake, stopping: stop.clone(), waiting };
    let mut responses = Responses { runtime, conn: &conn, wake: &wake };
    // Whichever direction ends first ends the connection (the other is dropped, and both
    // sockets close).
    let why = tokio::select! {
        why = forward(client_r, server_w, &mut requests) => why,
        why = forward(server_r, client_w, &mut responses) => why,
        () = drained(&mut stop, &conn) => "the proxy is shutting down".to_string(),
    };
    let left: Vec<_> = lock(&conn).drain().collect();
    for e in left {
        runtime.hooks.no_response(&info, e.api_key.to_i16(), e.api_version, e.request);
    }
    runtime.hooks.event(Some(&info), Event::Closed { why: &why });
}

/// Returns once the proxy shuts down and the connection has no request awaiting an answer.
async fn drained<T>(stop: &mut tokio::sync::watch::Receiver<bool>, conn: &Conn<T>) {
    while !*stop.borrow_and_update() {
        if stop.changed().await.is_err() {
            return core::future::pending().await;
        }
    }
    while lock(conn).in_flight() > 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A stream the proxy forwards over, split into its two directions.
trait Split: Send {
    type Read: Source;
    type Write: AsyncWrite + Unpin + Send;
    fn halves(self) -> (Self::Read, Self::Write);
}

impl Split for TcpStream {
    type Read = OwnedReadHalf;
    type Write = tokio::net::tcp::OwnedWriteHalf;
    fn halves(self) -> (Self::Read, Self::Write) {
        self.into_split()
    }
}

impl Split for tokio_rustls::server::TlsStream<TcpStream> {
    type Read = tokio::io::ReadHalf<Self>;
    type Write = tokio::io::WriteHalf<Self>;
    fn halves(self) -> (Self::Read, Self::Write) {
        tokio::io::split(self)
    }
}

impl Split for tokio_rustls::client::TlsStream<TcpStream> {
    type Read = tokio::io::ReadHalf<Self>;
    type Write = tokio::io::WriteHalf<Self>;
    fn halves(self) -> (Self::Read, Self::Write) {
        tokio::io::split(self)
    }
}

/// Buffers taken when a direction has bytes to read, given back when it is drained.
struct Buffers {
    frames: FrameBuf,
    batch: Batch,
    /// The last read returned less than it asked for: the socket had no more.
    drained: bool,
}

impl Buffers {
    fn new(max_frame: usize) -> Buffers {
        Buffers { frames: take_frame_buf(BASE, max_frame), batch: Batch { out: Vec::new() }, drained: false }
    }

    /// Whether to give the buffers back: nothing left to read, no partial frame.
    fn idle(&self) -> bool {
        self.drained && self.frames.buffered() == 0
    }
}

/// Gives a direction's buffers back (a grown frame buffer to the proxy's pool, `conn.rs`).
fn give_back(bufs: &mut Option<Buffers>) {
    if let Some(b) = bufs.take() {
        give_back_frame_buf(b.frames);
    }
}

/// The reading half of a stream: waits until it has bytes (or an end) and reads them into a
/// direction's buffers, taking them if it had none; `Ok(0)` at the end of the stream.
trait Source: Send {
    fn fill<'a>(
        &'a mut self,
        bufs: &'a mut Option<Buffers>,
        max_frame: usize,
    ) -> impl Future<Output = std::io::Result<usize>> + Send + 'a;
}

/// Plain TCP: waits for readiness without a buffer, then reads with tokio's `poll_read`,
/// which takes a read that returned less than it asked for as the socket drained (epoll is
/// edge-triggered, so new bytes wake the task again): the next wait goes straight to the
/// runtime instead of first making a `recv` that fails with `EAGAIN` (measured as 42% of
/// the proxy's `recv` calls under bulk load with `readable` and `try_read`).
impl Source for OwnedReadHalf {
    async fn fill(&mut self, bufs: &mut Option<Buffers>, max_frame: usize) -> std::io::Result<usize> {
        loop {
            self.readable().await?;
            let b = bufs.get_or_insert_with(|| Buffers::new(max_frame));
            let spare = b.frames.spare();
            let asked = spare.len();
            match try_read(self, spare).await {
                Some(Ok(n)) => {
                    b.frames.commit(n);
                    b.drained = n < asked;
                    return Ok(n);
                }
                // Readiness without bytes (a new socket's first wake-up, for one): hold no
                // buffer while waiting again.
                None => {
                    if b.frames.buffered() == 0 {
                        give_back(bufs);
                    }
                }
                Some(Err(e)) if e.kind() == ErrorKind::Interrupted => {}
                Some(Err(e)) => return Err(e),
            }
        }
    }
}

/// What an idle TLS direction reads into while it holds no buffers.
const FIRST: usize = 64;

/// Reads what `r` has without waiting: `None` if it would wait.
async fn try_read<R: AsyncRead + Unpin>(r: &mut R, buf: &mut [u8]) -> Option<std::io::Result<usize>> {
    std::future::poll_fn(|cx| {
        let mut rb = ReadBuf::new(buf);
        match Pin::new(&mut *r).poll_read(cx, &mut rb) {
            Poll::Pending => Poll::Ready(None),
            Poll::Ready(Ok(())) => Poll::Ready(Some(Ok(rb.filled().len()))),
            Poll::Ready(Err(e)) => Poll::Ready(Some(Err(e))),
        }
    })
    .await
}

/// Any other stream (TLS): an idle direction waits in a read of a few bytes, then takes its
/// buffers for those and whatever else is there already.
impl<S: AsyncRead + Send> Source for tokio::io::ReadHalf<S> {
    async fn fill(&mut self, bufs: &mut Option<Buffers>, max_frame: usize) -> std::io::Result<usize> {
        if let Some(b) = bufs.as_mut() {
            let spare = b.frames.spare();
            let asked = spare.len();
            let n = self.read(spare).await?;
            b.frames.commit(n);
            b.drained = n < asked;
            return Ok(n);
        }
        let mut first = [0u8; FIRST];
        let n = self.read(&mut first).await?;
        if n == 0 {
            return Ok(0);
        }
        let b = bufs.insert(Buffers::new(max_frame));
        let spare = b.frames.spare();
        spare[..n].copy_from_slice(&first[..n]);
        let (more, asked) = {
            let rest = &mut spare[n..];
            let asked = rest.len();
            match try_read(self, rest).await {
                // An error or the end comes again with the next read.
                None | Some(Err(_)) => (0, asked),
                Some(Ok(m)) => (m, asked),
            }
        };
        b.frames.commit(n + more);
        b.drained = n < FIRST || more < asked;
        Ok(n + more)
    }
}

/// Writes `head` then `body` and flushes (TLS keeps written bytes until a flush). Both go
/// out in one vectored write where the stream takes one (`writev` on TCP, one batch of
/// records with TLS), so that a large frame and its size prefix (and the small frames
/// before it) leave in one system call and one segment train, not as a few bytes of
/// prefix and then the frame. A stream without vectored writes is given the first
/// non-empty slice each time (`poll_write_vectored`'s default), as separate writes.
/// Partial writes continue where they stopped.
async fn send<W: AsyncWrite + Unpin>(to: &mut W, mut head: &[u8], mut body: &[u8]) -> std::io::Result<()> {
    while !head.is_empty() || !body.is_empty() {
        let n = if head.is_empty() {
            to.write(body).await?
        } else if body.is_empty() {
            to.write(head).await?
        } else {
            to.write_vectored(&[IoSlice::new(head), IoSlice::new(body)]).await?
        };
        if n == 0 {
            return Err(ErrorKind::WriteZero.into());
        }
        let from_head = n.min(head.len());
        head = head.get(from_head..).unwrap_or_default();
        body = body.get(n - from_head..).unwrap_or_default();
    }
    to.flush().await
}

/// What one direction does with its frames, for [`forward`].
trait Side: Send {
    /// What is kept of a frame between sending it and reporting it.
    type Meta: Send;
    /// The proxy's frame size limit.
    fn max_frame(&self) -> usize;
    /// Why the direction ended: its stream's end (`None`) or a read error.
    fn read_end(&self, error: Option<std::io::Error>) -> String;
    /// A framing violation (reported here); returns why the connection ends.
    fn violation(&self, violation: String) -> String;
    /// Decides on a frame before it is sent: what to keep of it, and what to send.
    fn admit(&mut self, frame: &[u8]) -> (Self::Meta, Action);
    /// Reports a frame (as sent, or held) after it was written at `done`.
    fn report(&mut self, frame: &[u8], meta: Self::Meta, done: Instant);
    /// A write error (counted here); returns why the connection ends.
    fn write_error(&self, error: std::io::Error) -> String;
    /// Waits until the side has something to send of its own (never, by default), or
    /// the direction should stop reading.
    fn woken(&self) -> impl Future<Output = ()> + Send {
        core::future::pending()
    }
    /// Frames of its own due now (filters' answers), each with what to report of it.
    fn own_frames(&mut self) -> Vec<(Vec<u8>, Self::Meta)> {
        Vec::new()
    }
    /// How long the connection may go without bytes from this side and nothing awaited
    /// before it ends as idle (`None`: no limit).
    fn idle_limit(&self) -> Option<Duration> {
        None
    }
    /// Whether nothing is awaited (the idle limit applies).
    fn is_idle(&self) -> bool {
        true
    }
    /// Whether a frame must wait for a filter before it is admitted (never, by default).
    fn waits(&self, frame: &[u8]) -> bool {
        let _ = frame;
        false
    }
    /// Runs the waiting filter on a frame, with `to` for its own requests: the frame to
    /// admit, or why the connection ends.
    fn wait<W: AsyncWrite + Unpin + Send>(
        &mut self,
        frame: Vec<u8>,
        to: &mut W,
    ) -> impl Future<Output = Result<Vec<u8>, String>> + Send {
        let _ = to;
        core::future::ready(Ok(frame))
    }
}

/// Client to broker: sends requests on, then reports them.
struct Requests<'s, H: Hooks> {
    runtime: &'s Arc<Runtime<H>>,
    conn: &'s Conn<H::Tag>,
    wake: &'s tokio::sync::Notify,
    stopping: tokio::sync::watch::Receiver<bool>,
    waiting: Option<Box<dyn WaitingFilter>>,
}

/// The request side's broker stream and session, lent to a waiting filter.
struct OwnSender<'s, W, T> {
    to: &'s mut W,
    conn: &'s Conn<T>,
}

impl<W: AsyncWrite + Unpin + Send, T: Send> OwnRequests for OwnSender<'_, W, T> {
    fn enter(
        &mut self,
        api_key: ApiKey,
        version: i16,
    ) -> Result<(i32, tokio::sync::oneshot::Receiver<Vec<u8>>), crate::session::conn::ConnError> {
        lock(self.conn).own_request(api_key, version)
    }

    fn write<'a>(
        &'a mut self,
        frame: &'a [u8],
    ) -> Pin<Box<dyn Future<Output = std::io::Result<()>> + Send + 'a>> {
        Box::pin(send(&mut *self.to, frame, &[]))
    }
}

/// What the request side keeps of a frame until it reports it.
struct RequestMeta<T> {
    from: FromClient,
    tag: Option<T>,
}

impl<H: Hooks> Side for Requests<'_, H> {
    type Meta = RequestMeta<H::Tag>;

    fn max_frame(&self) -> usize {
        self.runtime.max_frame
    }

    fn read_end(&self, error: Option<std::io::Error>) -> String {
        match error {
            None => "client closed".to_string(),
            Some(e) => format!("client read error: {e}"),
        }
    }

    fn violation(&self, violation: String) -> String {
        self.runtime.metrics.violation(Direction::Request);
        let info = lock(self.conn).info().clone();
        self.runtime.hooks.event(Some(&info), Event::Violation { from_client: true, what: &violation });
        format!("framing violation: {violation}")
    }

    fn admit(&mut self, frame: &[u8]) -> (Self::Meta, Action) {
        let hooks = &self.runtime.hooks;
        let mut tag = None;
        let from = {
            let mut session = lock(self.conn);
            let info = session.info().clone();
            session.on_client_frame(frame, Instant::now(), |head: &RequestHead| {
                let t = hooks.admit(&info, head, frame);
                tag = Some(t.clone());
                t
            })
        };
        if from.action == Action::Hold {
            // A filter's answer may be due: the response side sends it.
            self.wake.notify_one();
        }
        let action = from.action.clone();
        (RequestMeta { from, tag }, action)
    }

    fn report(&mut self, frame: &[u8], meta: Self::Meta, _done: Instant) {
        let info = lock(self.conn).info().clone();
        let hooks = &self.runtime.hooks;
        let metrics = &self.runtime.metrics;
        if let Some(note) = &meta.from.auth {
            hooks.event(Some(&info), Event::Auth(note));
        }
        match &meta.from.head {
            RequestHead::Token => {
                metrics.bytes(Direction::Request, frame.len() + 4);
                hooks.event(Some(&info), Event::SaslToken { from_client: true, size: frame.len() + 4 });
            }
            RequestHead::Bad(why) => {
                metrics.bytes(Direction::Request, frame.len() + 4);
                hooks.event(Some(&info), Event::BadRequest { frame, why });
            }
            head @ RequestHead::Request { api_key, api_version, expects, client_id, .. } => {
                match crate::ApiKey::from_i16(*api_key) {
                    Some(key) => metrics.request(key, *api_version, frame.len() + 4),
                    None => metrics.unknown_request(frame.len() + 4),
                }
                let Some(tag) = meta.tag else { return };
                hooks.request(&info, frame, head, &tag);
                if !expects {
                    let sent = super::Admitted {
                        client_id: client_id.clone(),
                        at: Instant::now(),
                        size: frame.len() + 4,
                        tag,
                    };
                    hooks.no_response(&info, *api_key, *api_version, sent);
                }
            }
        }
    }

    fn write_error(&self, error: std::io::Error) -> String {
        self.runtime.metrics.upstream_error(Failure::Write);
        format!("broker write error: {error}")
    }

    /// Once the proxy shuts down, the request side reads no more (its wait never ends).
    fn woken(&self) -> impl Future<Output = ()> + Send {
        let mut stop = self.stopping.clone();
        async move {
            while !*stop.borrow_and_update() {
                if stop.changed().await.is_err() {
                    break;
                }
            }
            core::future::pending::<()>().await;
        }
    }

    fn idle_limit(&self) -> Option<Duration> {
        self.runtime.idle_timeout
    }

    fn is_idle(&self) -> bool {
        lock(self.conn).in_flight() == 0
    }

    fn waits(&self, frame: &[u8]) -> bool {
        let Some(filter) = &self.waiting else { return false };
        match crate::codec::frame::RequestHeaderView::peek(frame) {
            Ok(peek) => {
                ApiKey::from_i16(peek.api_key).is_some_and(|key| filter.wants_request(key, peek.api_version))
            }
            Err(_) => false,
        }
    }

    async fn wait<W: AsyncWrite + Unpin + Send>(
        &mut self,
        frame: Vec<u8>,
        to: &mut W,
    ) -> Result<Vec<u8>, String> {
        let Some(filter) = self.waiting.as_mut() else { return Ok(frame) };
        let mut own = OwnSender { to, conn: self.conn };
        let mut upstream = Upstream::new(&mut own);
        match filter.on_request(frame, &mut upstream).await {
            Decision::Forward(frame) => Ok(frame),
            Decision::Close(why) => Err(why),
        }
    }
}

/// Broker to client: pairs each response with its request, runs it through the filters
/// and sends it on, then the filters' answers due after it; then reports them.
struct Responses<'s, H: Hooks> {
    runtime: &'s Arc<Runtime<H>>,
    conn: &'s Conn<H::Tag>,
    wake: &'s tokio::sync::Notify,
}

/// What the response side keeps of a frame until it reports it.
enum ResponseMeta<T> {
    Broker(super::FromBroker<T>),
    Filter(super::Pairing<T>),
}

impl<H: Hooks> Side for Responses<'_, H> {
    type Meta = ResponseMeta<H::Tag>;

    fn max_frame(&self) -> usize {
        self.runtime.max_frame
    }

    fn read_end(&self, error: Option<std::io::Error>) -> String {
        match error {
            None => {
                self.runtime.metrics.upstream_error(Failure::Closed);
                "the broker closed the connection".to_string()
            }
            Some(e) => {
                self.runtime.metrics.upstream_error(Failure::Read);
                format!("broker read error: {e}")
            }
        }
    }

    fn violation(&self, violation: String) -> String {
        self.runtime.metrics.violation(Direction::Response);
        let info = lock(self.conn).info().clone();
        self.runtime.hooks.event(Some(&info), Event::Violation { from_client: false, what: &violation });
        format!("framing violation from the broker: {violation}")
    }

    fn admit(&mut self, frame: &[u8]) -> (Self::Meta, Action) {
        let from = lock(self.conn).on_broker_frame(frame);
        let action = from.action.clone();
        (ResponseMeta::Broker(from), action)
    }

    fn report(&mut self, frame: &[u8], meta: Self::Meta, done: Instant) {
        let info = lock(self.conn).info().clone();
        let hooks = &self.runtime.hooks;
        let metrics = &self.runtime.metrics;
        let from = match meta {
            ResponseMeta::Filter(exchange) => {
                let latency = done.saturating_duration_since(exchange.request.at);
                metrics.response(exchange.api_key, frame.len() + 4, latency);
                hooks.response(&info, frame, exchange, true, latency);
                return;
            }
            ResponseMeta::Broker(from) => from,
        };
        if let Some(note) = &from.auth {
            hooks.event(Some(&info), Event::Auth(note));
        }
        if let Some(correlation_id) = from.out_of_order {
            hooks.event(Some(&info), Event::OutOfOrder { correlation_id });
        }
        match from.answer {
            Answer::Token => {
                metrics.bytes(Direction::Response, frame.len() + 4);
                hooks.event(Some(&info), Event::SaslToken { from_client: false, size: frame.len() + 4 });
            }
            Answer::Unpaired(why) => {
                metrics.bytes(Direction::Response, frame.len() + 4);
                hooks.event(Some(&info), Event::Unpaired { frame, why: &why });
            }
            Answer::Own(_) => metrics.bytes(Direction::Response, frame.len() + 4),
            Answer::Paired(exchange, rewritten) => {
                let latency = done.saturating_duration_since(exchange.request.at);
                metrics.response(exchange.api_key, frame.len() + 4, latency);
                hooks.response(&info, frame, exchange, rewritten, latency);
            }
        }
    }

    fn write_error(&self, error: std::io::Error) -> String {
        format!("client write error: {error}")
    }

    fn woken(&self) -> impl Future<Output = ()> + Send {
        self.wake.notified()
    }

    fn own_frames(&mut self) -> Vec<(Vec<u8>, Self::Meta)> {
        let mut session = lock(self.conn);
        let mut out = Vec::new();
        while let Some(Answered { frame, exchange }) = session.take_answer() {
            out.push((frame, ResponseMeta::Filter(exchange)));
        }
        out
    }
}

/// Reads into `bufs`, or returns `None` when the side is woken (or the wait times out as
/// idle, `Some(Err(TimedOut))`) first.
async fn read_or_wake<R: Source, S: Side>(
    from: &mut R,
    bufs: &mut Option<Buffers>,
    side: &S,
) -> Option<std::io::Result<usize>> {
    let max_frame = side.max_frame();
    let idle = side.idle_limit();
    let read = async {
        let Some(limit) = idle else { return from.fill(bufs, max_frame).await };
        loop {
            // Waiting for readiness is cancel-safe: a wait cut short loses no byte.
            match tokio::time::timeout(limit, from.fill(bufs, max_frame)).await {
                Ok(r) => return r,
                Err(_) if side.is_idle() => {
                    let words = format!("idle for {} ms with nothing awaited", limit.as_millis());
                    return Err(std::io::Error::new(ErrorKind::TimedOut, words));
                }
                Err(_) => {}
            }
        }
    };
    tokio::select! {
        r = read => Some(r),
        () = side.woken() => None,
    }
}

/// One direction: reads what `from` has, splits off the whole frames, sends them in one
/// write (a frame over [`COPY_MAX`] from the read buffer, the others copied into a batch)
/// with the side's own frames in their turn, then reports them; until either stream ends or
/// a frame ends the connection. Returns why.
async fn forward<R: Source, W: AsyncWrite + Unpin + Send, S: Side>(
    mut from: R,
    mut to: W,
    side: &mut S,
) -> String {
    let mut bufs: Option<Buffers> = None;
    let mut copied: Vec<(usize, S::Meta)> = Vec::new();
    let mut own = Batch { out: Vec::new() };
    loop {
        match read_or_wake(&mut from, &mut bufs, side).await {
            None => {
                // The side's own frames (filters' answers with nothing before them).
                own.out.clear();
                let mut metas = Vec::new();
                for (frame, meta) in side.own_frames() {
                    metas.push((own.push(&frame), meta));
                }
                if metas.is_empty() {
                    continue;
                }
                let r = send(&mut to, &own.out, &[]).await;
                let done = Instant::now();
                for (at, meta) in metas {
                    side.report(own.frame(at), meta, done);
                }
                if let Err(e) = r {
                    return side.write_error(e);
                }
                own = Batch { out: Vec::new() };
                continue;
            }
            Some(Ok(0)) => return side.read_end(None),
            Some(Ok(_)) => {}
            Some(Err(e)) if e.kind() == ErrorKind::TimedOut => return e.to_string(),
            Some(Err(e)) => return side.read_end(Some(e)),
        }
        let Some(Buffers { frames, batch, .. }) = bufs.as_mut() else { continue };
        batch.out.clear();
        copied.clear();
        let mut end = None;
        loop {
            let frame = match frames.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(e) => {
                    end = Some(side.violation(violation(&e)));
                    break;
                }
            };
            // A frame a filter waits on: what is batched goes first (its order is the
            // broker's), then the filter, which may write requests of its own.
            let waited;
            let frame = if side.waits(frame) {
                let owned = frame.to_vec();
                let r = send(&mut to, &batch.out, &[]).await;
                let done = Instant::now();
                for (at, meta) in copied.drain(..) {
                    side.report(batch.frame(at), meta, done);
                }
                batch.out.clear();
                if let Err(e) = r {
                    return side.write_error(e);
                }
                match side.wait(owned, &mut to).await {
                    Ok(f) => {
                        waited = f;
                        &waited[..]
                    }
                    Err(why) => {
                        end = Some(format!("closed by the proxy: {why}"));
                        break;
                    }
                }
            } else {
                frame
            };
            let (meta, action) = side.admit(frame);
            let forward: &[u8] = match &action {
                Action::Forward => frame,
                Action::Replace(new) => new,
                Action::Hold => {
                    side.report(frame, meta, Instant::now());
                    continue;
                }
                Action::Close(why) => {
                    end = Some(format!("closed by the proxy: {why}"));
                    side.report(frame, meta, Instant::now());
                    break;
                }
            };
            if forward.len() <= COPY_MAX {
                let at = batch.push(forward);
                copied.push((at, meta));
            } else {
                batch.out.extend_from_slice(&(forward.len() as u32).to_be_bytes());
                let r = send(&mut to, &batch.out, forward).await;
                let done = Instant::now();
                for (at, meta) in copied.drain(..) {
                    side.report(batch.frame(at), meta, done);
                }
                batch.out.clear();
                if let Err(e) = r {
                    return side.write_error(e);
                }
                side.report(forward, meta, done);
            }
            // Filters' answers due after this frame go right behind it.
            for (own_frame, own_meta) in side.own_frames() {
                let at = batch.push(&own_frame);
                copied.push((at, own_meta));
            }
        }
        // The frames before a violation or a close are still sent.
        let r = send(&mut to, &batch.out, &[]).await;
        let done = Instant::now();
        for (at, meta) in copied.drain(..) {
            side.report(batch.frame(at), meta, done);
        }
        if let Some(why) = end {
            return why;
        }
        if let Err(e) = r {
            return side.write_error(e);
        }
        if bufs.as_ref().is_some_and(Buffers::idle) {
            give_back(&mut bufs);
            copied = Vec::new();
        }
    }
}

/// Frames up to this size are copied into the batch written at the end of a read; larger
/// ones are written from the read buffer.
const COPY_MAX: usize = 16 * 1024;

/// Frame buffers grown past their base capacity (by a large frame: Produce, Fetch), given
/// back by connection directions gone idle and taken by the next direction to wake, so that
/// large frames with pauses between them reuse memory already mapped instead of allocating,
/// zero-filling and faulting in a fresh buffer each time (measured as most of the proxy's CPU
/// per MB, [`manual::proxy`](crate::manual::proxy)). Bounded by [`POOL_BUFFERS`] and [`POOL_BYTES`]; past that a buffer
/// is freed. Buffers of the base capacity are freed at once (the allocator reuses those
/// well): an idle connection still holds no buffer.
static POOL: Mutex<Vec<FrameBuf>> = Mutex::new(Vec::new());

/// At most this many buffers wait in [`POOL`].
const POOL_BUFFERS: usize = 8;

/// At most this many bytes wait in [`POOL`], in all.
const POOL_BYTES: usize = 32 << 20;

/// A frame buffer for a direction that has bytes to read: a pooled one if any.
fn take_frame_buf(base: usize, max_frame: usize) -> FrameBuf {
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
fn give_back_frame_buf(fb: FrameBuf) {
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

/// Frames to write in one go: small frames are copied in, with their size prefix.
struct Batch {
    out: Vec<u8>,
}

impl Batch {
    fn push(&mut self, frame: &[u8]) -> usize {
        let at = self.out.len();
        self.out.extend_from_slice(&(frame.len() as u32).to_be_bytes());
        self.out.extend_from_slice(frame);
        at
    }

    /// The frame (without prefix) pushed at `at`.
    fn frame(&self, at: usize) -> &[u8] {
        let len = u32::from_be_bytes([self.out[at], self.out[at + 1], self.out[at + 2], self.out[at + 3]]);
        &self.out[at + 4..at + 4 + len as usize]
    }
}

/// The words for a framing violation (a negative size, or one over the limit).
fn violation(e: &crate::codec::frame::FrameError) -> String {
    match e {
        crate::codec::frame::FrameError::Decode(d) => match d.kind() {
            crate::DecodeErrorKind::InvalidLength(n) => format!("negative frame size {n}"),
            crate::DecodeErrorKind::FrameTooLarge { size, max } => {
                format!("frame size {size} is over the limit of {max} bytes")
            }
            _ => d.to_string(),
        },
        e => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Context;

    /// A writer that takes at most `step` bytes a call, with or without vectored writes.
    struct Trickle {
        got: Vec<u8>,
        step: usize,
        vectored: bool,
        calls: usize,
        flushes: usize,
    }

    impl AsyncWrite for Trickle {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<std::io::Result<usize>> {
            let n = buf.len().min(self.step);
            self.got.extend_from_slice(&buf[..n]);
            self.calls += 1;
            Poll::Ready(Ok(n))
        }
        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            bufs: &[IoSlice<'_>],
        ) -> Poll<std::io::Result<usize>> {
            if !self.vectored {
                let first = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| &b[..]);
                return self.poll_write(cx, first);
            }
            let mut left = self.step;
            for b in bufs {
                let n = b.len().min(left);
                self.got.extend_from_slice(&b[..n]);
                left -= n;
            }
            self.calls += 1;
            Poll::Ready(Ok(self.step - left))
        }
        fn is_write_vectored(&self) -> bool {
            self.vectored
        }
        fn poll_flush(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            self.flushes += 1;
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    #[test]
    fn send_writes_both_slices_in_order_through_partial_writes() {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let head: Vec<u8> = (0..10u8).collect();
        let body: Vec<u8> = (100..200u8).collect();
        let whole: Vec<u8> = head.iter().chain(&body).copied().collect();
        for vectored in [true, false] {
            for step in [1, 3, 10, 11, 64, 1000] {
                let mut w = Trickle { got: Vec::new(), step, vectored, calls: 0, flushes: 0 };
                rt.block_on(send(&mut w, &head, &body)).unwrap();
                assert_eq!(w.got, whole, "vectored {vectored}, step {step}");
                assert_eq!(w.flushes, 1);
                if vectored && step >= whole.len() {
                    assert_eq!(w.calls, 1, "one write for both slices");
                }
                let mut w = Trickle { got: Vec::new(), step, vectored, calls: 0, flushes: 0 };
                rt.block_on(send(&mut w, &head, &[])).unwrap();
                assert_eq!(w.got, head);
                let mut w = Trickle { got: Vec::new(), step, vectored, calls: 0, flushes: 0 };
                rt.block_on(send(&mut w, &[], &body)).unwrap();
                assert_eq!(w.got, body);
            }
        }
        // A writer that takes nothing is an error, not a loop.
        let mut w = Trickle { got: Vec::new(), step: 0, vectored: true, calls: 0, flushes: 0 };
        let e = rt.block_on(send(&mut w, &head, &body)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::WriteZero);
    }
}
