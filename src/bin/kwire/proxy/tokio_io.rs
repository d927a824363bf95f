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

use std::io::ErrorKind;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kwire::conn::metrics::{Direction, Upstream};
use kwire::conn::{FrameBuf, InFlight};
use kwire::filter::Verdict;
use kwire::secrets::RawSasl;
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};

use super::conn::{self, Answer, Batch, COPY_MAX, Conn, Head, Pending, State, lock};
use super::{Shared, now};

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
/// bootstrap listener's `--upstream`).
async fn connect(upstream: &str) -> std::io::Result<TcpStream> {
    let mut last = std::io::Error::new(ErrorKind::InvalidInput, "no address");
    for one in upstream.split(',') {
        let connecting = async {
            match one.parse::<SocketAddr>() {
                Ok(addr) => TcpStream::connect(addr).await,
                Err(_) => TcpStream::connect(one).await,
            }
        };
        match tokio::time::timeout(Duration::from_secs(10), connecting).await {
            Ok(Ok(s)) => return Ok(s),
            Ok(Err(e)) => last = e,
            Err(_) => last = std::io::Error::new(ErrorKind::TimedOut, "timed out"),
        }
    }
    Err(last)
}

/// Serves one client connection until either side closes it.
async fn run(client: TcpStream, peer: SocketAddr, upstream: &str, id: u64, shared: &Arc<Shared>) {
    let server = match connect(upstream).await {
        Ok(s) => s,
        Err(e) => {
            shared
                .log
                .line(format!("{} conn={id} {peer}: cannot connect to {upstream}: {e}; closing", now()));
            shared.metrics.upstream_error(Upstream::Connect);
            return;
        }
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    // The broker's own address (one of a bootstrap list).
    let to = server.peer_addr().map_or_else(|_| upstream.to_string(), |a| a.to_string());
    shared.log.line(format!("{} conn={id} {peer}: connected, forwarding to {to}", now()));
    let conn: Conn = Arc::new(Mutex::new(State {
        in_flight: InFlight::new(),
        sasl: RawSasl::new(),
        filters: super::filters(shared),
        auth: conn::Auth::default(),
    }));
    let (client_r, client_w) = client.into_split();
    let (server_r, server_w) = server.into_split();
    // Whichever direction ends first ends the connection (the other is dropped, and both
    // sockets close).
    let why = tokio::select! {
        why = requests(client_r, server_w, id, shared, &conn) => why,
        why = responses(server_r, client_w, id, shared, &conn) => why,
    };
    let left: Vec<Pending> = lock(&conn).in_flight.drain().collect();
    for p in &left {
        conn::no_response(p.api_key.key(), p.api_version, &p.payload, id, shared);
    }
    shared.log.line(format!("{} conn={id} {peer}: closed ({why})", now()));
}

/// Buffers taken when a direction has bytes to read, given back when it is drained.
struct Buffers {
    frames: FrameBuf,
    batch: Batch,
    /// The last read returned less than it asked for: the socket had no more.
    drained: bool,
}

impl Buffers {
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

/// Waits until `from` has bytes (or an end) and reads them into the direction's buffers,
/// taking them if it had none; `Ok(0)` at the end of the stream.
async fn fill(from: &OwnedReadHalf, bufs: &mut Option<Buffers>, max_frame: usize) -> std::io::Result<usize> {
    loop {
        from.readable().await?;
        let b = bufs.get_or_insert_with(|| Buffers {
            frames: conn::take_frame_buf(BASE, max_frame),
            batch: Batch { out: Vec::new() },
            drained: false,
        });
        let spare = b.frames.spare();
        let asked = spare.len();
        match from.try_read(spare) {
            Ok(n) => {
                b.frames.commit(n);
                b.drained = n < asked;
                return Ok(n);
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
                // Readiness without bytes (a new socket's first wake-up, for one): hold
                // no buffer while waiting again.
                if b.frames.buffered() == 0 {
                    give_back(bufs);
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// Client to broker: forwards requests, then decodes them.
async fn requests(
    from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    id: u64,
    shared: &Shared,
    conn: &Conn,
) -> String {
    let mut bufs: Option<Buffers> = None;
    let mut copied: Vec<(usize, Head)> = Vec::new();
    let mut last_client: Option<Arc<str>> = None;
    loop {
        match fill(&from, &mut bufs, shared.max_frame).await {
            Ok(0) => return "client closed".to_string(),
            Ok(_) => {}
            Err(e) => return format!("client read error: {e}"),
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
                    let violation = conn::violation(&e);
                    shared.stats.violations.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    shared.metrics.violation(Direction::Request);
                    shared.log.line(format!(
                        "{} conn={id} framing violation from the client: {violation}; closing this connection",
                        now()
                    ));
                    end = Some(format!("framing violation: {violation}"));
                    break;
                }
            };
            let (head, verdict) = conn::admit(frame, &mut lock(conn), shared, &mut last_client);
            let forward: &[u8] = match &verdict {
                Verdict::Forward => frame,
                Verdict::Replace(new) => new,
                Verdict::Drop => &[],
                Verdict::Respond(_) | Verdict::Close(_) => {
                    let why = match verdict {
                        Verdict::Close(why) => why,
                        _ => "a filter answered a request itself, which kwire proxy does not do".into(),
                    };
                    shared.log.line(format!("{} conn={id} closing this connection: {why}", now()));
                    end = Some(format!("closed by the proxy: {why}"));
                    break;
                }
            };
            if matches!(verdict, Verdict::Drop) {
                conn::on_request(frame, &head, id, shared);
            } else if forward.len() <= COPY_MAX {
                let at = batch.push(forward);
                copied.push((at, head));
            } else {
                batch.out.extend_from_slice(&(forward.len() as u32).to_be_bytes());
                let r = match to.write_all(&batch.out).await {
                    Ok(()) => to.write_all(forward).await,
                    Err(e) => Err(e),
                };
                for (at, head) in &copied {
                    conn::on_request(batch.frame(*at), head, id, shared);
                }
                batch.out.clear();
                copied.clear();
                if let Err(e) = r {
                    shared.metrics.upstream_error(Upstream::Write);
                    return format!("broker write error: {e}");
                }
                conn::on_request(forward, &head, id, shared);
            }
        }
        // The frames before a violation or a close are still forwarded.
        let r = to.write_all(&batch.out).await;
        for (at, head) in &copied {
            conn::on_request(batch.frame(*at), head, id, shared);
        }
        if let Some(why) = end {
            return why;
        }
        if let Err(e) = r {
            shared.metrics.upstream_error(Upstream::Write);
            return format!("broker write error: {e}");
        }
        if bufs.as_ref().is_some_and(Buffers::idle) {
            give_back(&mut bufs);
            copied = Vec::new();
        }
    }
}

/// Broker to client: pairs each response with its request, runs it through the filters
/// (broker addresses rewritten) and forwards it, then logs it.
async fn responses(
    from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    id: u64,
    shared: &Shared,
    conn: &Conn,
) -> String {
    let mut bufs: Option<Buffers> = None;
    let mut copied: Vec<(usize, Answer)> = Vec::new();
    loop {
        match fill(&from, &mut bufs, shared.max_frame).await {
            Ok(0) => {
                shared.metrics.upstream_error(Upstream::Closed);
                return "the broker closed the connection".to_string();
            }
            Ok(_) => {}
            Err(e) => {
                shared.metrics.upstream_error(Upstream::Read);
                return format!("broker read error: {e}");
            }
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
                    let violation = conn::violation(&e);
                    shared.stats.violations.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    shared.metrics.violation(Direction::Response);
                    shared.log.line(format!(
                        "{} conn={id} framing violation from the broker: {violation}; closing this connection",
                        now()
                    ));
                    end = Some(format!("framing violation from the broker: {violation}"));
                    break;
                }
            };
            let (answer, verdict) = conn::pair(frame, &mut lock(conn), id, shared);
            let forward: &[u8] = match &verdict {
                Verdict::Replace(new) => new,
                Verdict::Close(why) => {
                    shared.log.line(format!("{} conn={id} closing this connection: {why}", now()));
                    end = Some(format!("closed by the proxy: {why}"));
                    break;
                }
                _ => frame,
            };
            if forward.len() <= COPY_MAX {
                let at = batch.push(forward);
                copied.push((at, answer));
            } else {
                batch.out.extend_from_slice(&(forward.len() as u32).to_be_bytes());
                let r = match to.write_all(&batch.out).await {
                    Ok(()) => to.write_all(forward).await,
                    Err(e) => Err(e),
                };
                let done = Instant::now();
                for (at, answer) in copied.drain(..) {
                    conn::on_response(batch.frame(at), answer, done, id, shared);
                }
                batch.out.clear();
                if let Err(e) = r {
                    return format!("client write error: {e}");
                }
                conn::on_response(forward, answer, done, id, shared);
            }
        }
        let r = to.write_all(&batch.out).await;
        let done = Instant::now();
        for (at, answer) in copied.drain(..) {
            conn::on_response(batch.frame(at), answer, done, id, shared);
        }
        if let Some(why) = end {
            return why;
        }
        if let Err(e) = r {
            return format!("client write error: {e}");
        }
        if bufs.as_ref().is_some_and(Buffers::idle) {
            give_back(&mut bufs);
            copied = Vec::new();
        }
    }
}
