//! The proxy's I/O: one task per client connection, on a tokio runtime of one worker
//! thread per core, over the sans-IO state of `conn.rs` (`kwire::conn::{FrameBuf,
//! InFlight}`, `RawSasl`, the filters).
//!
//! An idle connection holds no buffer: each direction waits for its socket to become
//! readable before it takes a frame buffer ([`BASE`] bytes, growing for a larger frame),
//! and gives the buffer (and its batch of writes) back as soon as the socket is drained
//! (a read returned less than it asked for) with no partial frame left. So an idle
//! connection costs its task, its sockets and its connection state, a few KB; a busy
//! one two buffers of at most one frame each. Buffers given back go to
//! the allocator's free lists, where the next connection to wake takes them: a burst over
//! many connections costs what is read at once, not a buffer per connection. A buffer
//! grown by a large frame goes to a small pool instead (`conn::give_back_frame_buf`), so
//! that large frames do not each pay for fresh memory.
//!
//! The loop is generic over the stream ([`Source`] for reading, `AsyncWrite` for writing):
//! plain TCP, or TLS (`tls.rs`) on either side. A TLS stream cannot say it is readable
//! without reading, so an idle TLS direction waits with a read into a few bytes on its
//! task's stack and takes its buffers only when they arrive. Both directions run the one
//! [`forward`] loop; what differs (pairing, filters, reporting, the words of the log) is
//! their [`Side`].

use std::future::Future;
use std::io::{ErrorKind, IoSlice};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use kwire::Direction;
use kwire::conn::metrics::Upstream;
use kwire::conn::{FrameBuf, InFlight};
use kwire::filter::Verdict;
use kwire::secrets::RawSasl;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::{TcpListener, TcpStream};

use super::conn::{self, Answer, Batch, COPY_MAX, Conn, Head, Pending, State, lock};
use super::{Shared, now, tls};

/// The frame buffers' base size (`kwire::conn`'s default): they grow as a larger frame's
/// bytes arrive.
const BASE: usize = kwire::conn::DEFAULT_BASE_CAPACITY;

/// Accepts clients on `listener` for `upstream` while the gate has room; when it is full
/// the listener is closed (new clients are refused by the kernel) and opened again on the
/// same address once a connection ends.
pub async fn accept_loop(listener: TcpListener, upstream: String, shared: Arc<Shared>) {
    let Ok(addr) = listener.local_addr() else { return };
    let mut listener = Some(listener);
    loop {
        if !shared.gate.try_take() {
            if listener.take().is_some() {
                shared.metrics.listener_closed();
                super::log_full(&shared, addr);
            }
            shared.gate.room().await;
            continue;
        }
        let l = match &listener {
            Some(l) => l,
            None => match super::rebind(&shared, addr).and_then(|l| TcpListener::from_std(l).ok()) {
                Some(l) => listener.insert(l),
                None => {
                    shared.gate.release();
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            },
        };
        match l.accept().await {
            Ok((stream, peer)) => {
                let id = super::accepted(&shared);
                let (shared, upstream) = (shared.clone(), upstream.clone());
                tokio::spawn(async move {
                    run(stream, peer, &upstream, id, &shared).await;
                    super::finished(&shared);
                });
            }
            Err(e) => {
                shared.gate.release();
                shared.log.line(format!("{} accept on {addr} failed: {e}", now()));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Connects to `upstream`, or to the first of a comma-separated list that answers (the
/// bootstrap listener's `--upstream`), with the one it reached.
pub(super) async fn connect(upstream: &str) -> std::io::Result<(TcpStream, String)> {
    let mut last = std::io::Error::new(ErrorKind::InvalidInput, "no address");
    for one in upstream.split(',') {
        let connecting = async {
            match one.parse::<SocketAddr>() {
                Ok(addr) => TcpStream::connect(addr).await,
                Err(_) => TcpStream::connect(one).await,
            }
        };
        match tokio::time::timeout(Duration::from_secs(10), connecting).await {
            Ok(Ok(s)) => return Ok((s, one.to_string())),
            Ok(Err(e)) => last = e,
            Err(_) => last = std::io::Error::new(ErrorKind::TimedOut, "timed out"),
        }
    }
    Err(last)
}

/// Serves one client connection until either side closes it: the client's TLS handshake
/// first (with `--tls-cert`; the SNI name chooses the broker with `--sni-pattern`), then
/// the broker's connection (TLS with `--upstream-tls`), then the frames.
async fn run(client: TcpStream, peer: SocketAddr, upstream: &str, id: u64, shared: &Arc<Shared>) {
    let _ = client.set_nodelay(true);
    if !shared.tls.terminates() {
        return to_broker(client, peer, upstream.to_string(), id, shared, String::new()).await;
    }
    let accepted = match tls::accept(&shared.tls, client, upstream, shared.max_frame).await {
        Ok(a) => a,
        Err(why) => {
            shared.log.line(format!("{} conn={id} {peer}: {why}; closing this connection", now()));
            return;
        }
    };
    let note = format!(" (TLS, server name {})", accepted.server_name.as_deref().unwrap_or("-"));
    to_broker(accepted.stream, peer, accepted.upstream, id, shared, note).await;
}

/// Connects to the broker at `upstream` (with TLS if so configured) and serves the frames.
async fn to_broker<C: Split>(
    client: C,
    peer: SocketAddr,
    upstream: String,
    id: u64,
    shared: &Arc<Shared>,
    note: String,
) {
    let (server, reached) = match connect(&upstream).await {
        Ok(s) => s,
        Err(e) => {
            shared
                .log
                .line(format!("{} conn={id} {peer}: cannot connect to {upstream}: {e}; closing", now()));
            shared.metrics.upstream_error(Upstream::Connect);
            return;
        }
    };
    let _ = server.set_nodelay(true);
    // The broker's own address (one of a bootstrap list).
    let to = server.peer_addr().map_or_else(|_| reached.clone(), |a| a.to_string());
    if !shared.tls.originates() {
        return serve(client, server, peer, &to, id, shared, &note).await;
    }
    match tls::connect(&shared.tls, server, &reached).await {
        Ok(server) => {
            serve(client, server, peer, &to, id, shared, &format!("{note} (TLS to the broker)")).await
        }
        Err(why) => {
            shared.log.line(format!("{} conn={id} {peer}: {reached}: {why}; closing this connection", now()));
            shared.metrics.upstream_error(Upstream::Connect);
        }
    }
}

/// Forwards frames both ways between `client` and `server` until either side ends.
async fn serve<C: Split, S: Split>(
    client: C,
    server: S,
    peer: SocketAddr,
    upstream: &str,
    id: u64,
    shared: &Arc<Shared>,
    note: &str,
) {
    shared.log.line(format!("{} conn={id} {peer}: connected, forwarding to {upstream}{note}", now()));
    let conn: Conn = Arc::new(Mutex::new(State {
        in_flight: InFlight::new(),
        sasl: RawSasl::new(),
        filters: super::filters(shared),
        auth: conn::Auth::default(),
    }));
    let (client_r, client_w) = client.halves();
    let (server_r, server_w) = server.halves();
    let mut requests = Requests { id, shared, conn: &conn, last_client: None };
    let mut responses = Responses { id, shared, conn: &conn };
    // Whichever direction ends first ends the connection (the other is dropped, and both
    // sockets close).
    let why = tokio::select! {
        why = forward(client_r, server_w, &mut requests) => why,
        why = forward(server_r, client_w, &mut responses) => why,
    };
    let left: Vec<Pending> = lock(&conn).in_flight.drain().collect();
    for p in &left {
        conn::no_response(p.api_key.to_i16(), p.api_version, &p.payload, id, shared);
    }
    shared.log.line(format!("{} conn={id} {peer}: closed ({why})", now()));
}

/// A stream the proxy forwards over, split into its two directions.
pub(super) trait Split: Send {
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
pub(super) struct Buffers {
    frames: FrameBuf,
    batch: Batch,
    /// The last read returned less than it asked for: the socket had no more.
    drained: bool,
}

impl Buffers {
    fn new(max_frame: usize) -> Buffers {
        Buffers {
            frames: conn::take_frame_buf(BASE, max_frame),
            batch: Batch { out: Vec::new() },
            drained: false,
        }
    }

    /// Whether to give the buffers back: nothing left to read, no partial frame.
    fn idle(&self) -> bool {
        self.drained && self.frames.buffered() == 0
    }
}

/// Gives a direction's buffers back (a grown frame buffer to the proxy's pool, `conn.rs`).
fn give_back(bufs: &mut Option<Buffers>) {
    if let Some(b) = bufs.take() {
        conn::give_back_frame_buf(b.frames);
    }
}

/// The reading half of a stream: waits until it has bytes (or an end) and reads them into a
/// direction's buffers, taking them if it had none; `Ok(0)` at the end of the stream.
pub(super) trait Source: Send {
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
pub(super) trait Side: Send {
    /// What is kept of a frame between forwarding it and reporting it.
    type Meta: Send;
    /// What the proxy shares, and the connection's number.
    fn context(&self) -> (&Shared, u64);
    /// Why the direction ended: its stream's end (`None`) or a read error.
    fn read_end(&self, error: Option<std::io::Error>) -> String;
    /// A framing violation (logged and counted here); returns why the connection ends.
    fn violation(&self, violation: String) -> String;
    /// Classifies a frame before it is forwarded: what to keep of it, and the filters'
    /// verdict.
    fn admit(&mut self, frame: &[u8]) -> (Self::Meta, Verdict);
    /// Reports a frame (as forwarded, or dropped) after it was written at `done`.
    fn report(&mut self, frame: &[u8], meta: Self::Meta, done: Instant);
    /// A write error (counted here); returns why the connection ends.
    fn write_error(&self, error: std::io::Error) -> String;
}

/// Client to broker: forwards requests, then decodes them.
struct Requests<'s> {
    id: u64,
    shared: &'s Shared,
    conn: &'s Conn,
    last_client: Option<Arc<str>>,
}

impl Side for Requests<'_> {
    type Meta = Head;

    fn context(&self) -> (&Shared, u64) {
        (self.shared, self.id)
    }

    fn read_end(&self, error: Option<std::io::Error>) -> String {
        match error {
            None => "client closed".to_string(),
            Some(e) => format!("client read error: {e}"),
        }
    }

    fn violation(&self, violation: String) -> String {
        self.shared.stats.violations.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.shared.metrics.violation(Direction::Request);
        self.shared.log.line(format!(
            "{} conn={} framing violation from the client: {violation}; closing this connection",
            now(),
            self.id
        ));
        format!("framing violation: {violation}")
    }

    fn admit(&mut self, frame: &[u8]) -> (Head, Verdict) {
        conn::admit(frame, &mut lock(self.conn), self.shared, &mut self.last_client)
    }

    fn report(&mut self, frame: &[u8], head: Head, _done: Instant) {
        conn::on_request(frame, &head, self.id, self.shared);
    }

    fn write_error(&self, error: std::io::Error) -> String {
        self.shared.metrics.upstream_error(Upstream::Write);
        format!("broker write error: {error}")
    }
}

/// Broker to client: pairs each response with its request, runs it through the filters
/// (broker addresses rewritten) and forwards it, then logs it.
struct Responses<'s> {
    id: u64,
    shared: &'s Shared,
    conn: &'s Conn,
}

impl Side for Responses<'_> {
    type Meta = Answer;

    fn context(&self) -> (&Shared, u64) {
        (self.shared, self.id)
    }

    fn read_end(&self, error: Option<std::io::Error>) -> String {
        match error {
            None => {
                self.shared.metrics.upstream_error(Upstream::Closed);
                "the broker closed the connection".to_string()
            }
            Some(e) => {
                self.shared.metrics.upstream_error(Upstream::Read);
                format!("broker read error: {e}")
            }
        }
    }

    fn violation(&self, violation: String) -> String {
        self.shared.stats.violations.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.shared.metrics.violation(Direction::Response);
        self.shared.log.line(format!(
            "{} conn={} framing violation from the broker: {violation}; closing this connection",
            now(),
            self.id
        ));
        format!("framing violation from the broker: {violation}")
    }

    fn admit(&mut self, frame: &[u8]) -> (Answer, Verdict) {
        conn::pair(frame, &mut lock(self.conn), self.id, self.shared)
    }

    fn report(&mut self, frame: &[u8], answer: Answer, done: Instant) {
        conn::on_response(frame, answer, done, self.id, self.shared);
    }

    fn write_error(&self, error: std::io::Error) -> String {
        format!("client write error: {error}")
    }
}

/// One direction: reads what `from` has, splits off the whole frames, forwards them in one
/// write (a frame over [`COPY_MAX`] from the read buffer, the others copied into a batch),
/// then reports them; until either stream ends or a frame ends the connection. Returns why.
async fn forward<R: Source, W: AsyncWrite + Unpin + Send, S: Side>(
    mut from: R,
    mut to: W,
    side: &mut S,
) -> String {
    let max_frame = side.context().0.max_frame;
    let mut bufs: Option<Buffers> = None;
    let mut copied: Vec<(usize, S::Meta)> = Vec::new();
    loop {
        match from.fill(&mut bufs, max_frame).await {
            Ok(0) => return side.read_end(None),
            Ok(_) => {}
            Err(e) => return side.read_end(Some(e)),
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
                    end = Some(side.violation(conn::violation(&e)));
                    break;
                }
            };
            let (meta, verdict) = side.admit(frame);
            let forward: &[u8] = match &verdict {
                Verdict::Forward => frame,
                Verdict::Replace(new) => new,
                Verdict::Drop => {
                    side.report(frame, meta, Instant::now());
                    continue;
                }
                Verdict::Respond(_) | Verdict::Close(_) => {
                    let why = match verdict {
                        Verdict::Close(why) => why,
                        _ => "a filter answered a request itself, which kwire proxy does not do".into(),
                    };
                    let (shared, id) = side.context();
                    shared.log.line(format!("{} conn={id} closing this connection: {why}", now()));
                    end = Some(format!("closed by the proxy: {why}"));
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
        }
        // The frames before a violation or a close are still forwarded.
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
