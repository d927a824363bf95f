//! The proxy's I/O: one task per client connection, over its sans-IO [`Session`].
//!
//! An idle connection holds no buffer: each direction waits for its socket to become
//! readable before it takes a frame buffer ([`BASE`] bytes, growing for a larger frame),
//! and gives the buffer (and its batch of writes) back as soon as the socket is drained
//! (a read returned less than it asked for) with no partial frame left. So an idle
//! connection costs its task, its sockets and its session, a few KB; a busy one two buffers
//! of at most one frame each. A buffer grown by a large frame goes to a small pool
//! ([`give_back_frame_buf`]), so that large frames do not each pay for fresh memory, and a
//! few base-size buffers go to another, so that small requests do not each allocate and
//! zero-fill one; both pools are bounded, so idle memory stays bounded.
//!
//! The loop is generic over the stream ([`Source`] for reading, `AsyncWrite` for writing):
//! plain TCP, or TLS on either side. A TLS stream cannot say it is readable without reading,
//! so an idle TLS direction waits with a read into a few bytes on its task's stack and takes
//! its buffers only when they arrive. Both directions run the one [`forward`](forward::forward) loop; what
//! differs (pairing, filters, hooks) is their [`Side`]. Nothing is queued between the
//! directions but the requests awaiting answers and the answers filters gave, which the
//! response side sends in their turn (woken by the request side).

#[allow(unused_imports)]
use std::{borrow::ToOwned, boxed::Box, format, string::String, string::ToString, sync::Arc, vec, vec::Vec};

use std::net::SocketAddr;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::io::AsyncWrite;
use tokio::net::TcpStream;
use tokio::net::tcp::OwnedReadHalf;

use super::dial::connect;
use super::runtime::Runtime;
use super::session::Session;
use super::{ConnInfo, Event, Hooks, tls};
use crate::session::conn::metrics::UpstreamFailure as Failure;
use buffers::Source;
#[cfg(feature = "encrypt")]
pub(super) use buffers::{give_back_owned, owned_frame};
use forward::forward;
use requests::Requests;
use responses::Responses;

mod buffers;
mod forward;
mod requests;
mod responses;

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
    let mut waiting = runtime.waiting(&info);
    let waiting_responses = waiting.as_mut().and_then(|w| w.responses());
    let mut requests = Requests { runtime, conn: &conn, wake: &wake, stopping: stop.clone(), waiting };
    let mut responses = Responses { runtime, conn: &conn, wake: &wake, waiting: waiting_responses };
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
