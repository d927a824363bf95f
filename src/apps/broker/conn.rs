//! The I/O: an accept loop and one thread per connection, each an I/O loop over
//! [`ServerConn`], writing its answers from an [`Outbox`].

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::string::{String, ToString};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::vec::Vec;

use super::handle::{Handler, Outcome};
use super::outbox::Outbox;
use super::state::Shared;
use crate::codec::frame::FrameError;
use crate::session::conn::{ConnError, FrameBuf, Received, ServerConn};

/// Answers are written once they pass this many bytes, and at the end of each read.
const FLUSH_AT: usize = 256 * 1024;

/// Accepts the connections of node `node` (an index into the cluster's nodes) until the
/// broker stops or the node does; then closes the listener and every connection.
pub(crate) fn accept_loop(listener: TcpListener, shared: Arc<Shared>, node: usize) {
    let mut conns: Vec<(TcpStream, JoinHandle<()>)> = Vec::new();
    for stream in listener.incoming() {
        if !shared.serving(node) {
            break;
        }
        let stream = match stream {
            Ok(s) => s,
            Err(e) => {
                shared.log(format_args!("accept failed: {e}"));
                continue;
            }
        };
        conns.retain(|(_, t)| !t.is_finished());
        let Ok(handle) = stream.try_clone() else { continue };
        let peer = stream.peer_addr().map_or_else(|_| "unknown peer".to_string(), |a| a.to_string());
        let s = shared.clone();
        shared.connection_opened();
        let spawned = std::thread::Builder::new().name("kwire-broker-conn".into()).spawn(move || {
            s.log(format_args!("{peer}: connected"));
            let why = serve_accepted(stream, &s, &peer, node);
            s.log(format_args!("{peer}: closed ({why})"));
            s.connection_closed();
        });
        match spawned {
            Ok(t) => conns.push((handle, t)),
            Err(e) => {
                shared.connection_closed();
                shared.log(format_args!("cannot start a connection thread: {e}"));
            }
        }
    }
    drop(listener);
    for (stream, _) in &conns {
        let _ = stream.shutdown(Shutdown::Both);
    }
    for (_, t) in conns {
        let _ = t.join();
    }
}

/// Serves an accepted connection, with TLS on it when the broker has [`super::Config::tls`],
/// then shuts the socket down (the accept loop keeps a handle to it, to shut it down on
/// stop, so dropping this one would not close it); returns why it ended.
fn serve_accepted(stream: TcpStream, shared: &Shared, peer: &str, node: usize) -> String {
    let _ = stream.set_nodelay(true);
    #[cfg(feature = "broker-tls")]
    if let Some(tls) = &shared.config.tls {
        let mut stream = match super::tls::wrap(tls, stream) {
            Ok(s) => s,
            Err(e) => return std::format!("TLS: {e}"),
        };
        let why = serve(&mut stream, shared, peer, node);
        stream.conn.send_close_notify();
        while stream.conn.wants_write() && stream.conn.write_tls(&mut stream.sock).is_ok_and(|n| n > 0) {}
        let _ = stream.sock.shutdown(Shutdown::Both);
        return why;
    }
    let mut stream = stream;
    let why = serve(&mut stream, shared, peer, node);
    let _ = stream.shutdown(Shutdown::Both);
    why
}

/// Writes the answers waiting, and flushes the stream (TLS holds what it was given).
fn flush(stream: &mut impl Write, pending: &mut Outbox) -> std::io::Result<()> {
    pending.flush(stream)?;
    stream.flush()
}

/// Serves one connection until the peer closes it, sends what cannot be read, or the
/// broker stops; returns why it ended.
fn serve(stream: &mut (impl Read + Write), shared: &Shared, peer: &str, node: usize) -> String {
    let mut handler = Handler::new(shared, peer, node);
    let mut conn = ServerConn::with_frame_buf(FrameBuf::new(shared.config.max_frame_bytes));
    if let Some(v) = shared.versions(crate::ApiKey::ApiVersions) {
        conn.set_api_versions_max(v.max);
    }
    let mut pending = Outbox::default();
    loop {
        loop {
            if !shared.serving(node) {
                return "broker or node stopping".into();
            }
            let before = pending.total_len();
            if handler.raw_sasl {
                match conn.frame_buf_mut().next_frame() {
                    Ok(Some(token)) => {
                        if shared.config.verbose {
                            shared.log(format_args!(
                                "{peer}: SASL token (v0 handshake): {} bytes, not shown",
                                token.len()
                            ));
                        }
                        if let Outcome::Close(why) = handler.raw_token(token, &mut pending) {
                            let _ = flush(stream, &mut pending);
                            std::thread::sleep(handler.close_delay());
                            return why;
                        }
                        continue;
                    }
                    Ok(None) => break,
                    Err(e) => return std::format!("refused: {e}"),
                }
            }
            let what = match conn.next_request() {
                Ok(None) => break,
                Ok(Some(Received::Request(request))) => {
                    let what = (
                        request.body.api_key().name(),
                        request.header.api_version(),
                        request.frame.len() + 4,
                    );
                    match handler.handle(&request, &mut pending) {
                        Ok(Outcome::Continue) => {}
                        Ok(Outcome::Close(why)) => {
                            let _ = flush(stream, &mut pending);
                            std::thread::sleep(handler.close_delay());
                            return why;
                        }
                        Err(e) => {
                            let _ = flush(stream, &mut pending);
                            return std::format!("cannot answer {} v{}: {e}", what.0, what.1);
                        }
                    }
                    what
                }
                Ok(Some(Received::ApiVersionsUnsupported { header, reply_to })) => {
                    let served = shared
                        .versions(crate::ApiKey::ApiVersions)
                        .unwrap_or(crate::ApiKey::ApiVersions.request_versions());
                    if let Err(e) =
                        ServerConn::encode_api_versions_unsupported(reply_to, served, &mut pending)
                    {
                        return std::format!("cannot answer ApiVersions: {e}");
                    }
                    ("ApiVersions", header.api_version, 0)
                }
                Err(e) => {
                    let _ = flush(stream, &mut pending);
                    return match (conn.frame_buf().error(), e) {
                        (Some(_), e) => std::format!("refused: {e}"),
                        (
                            None,
                            ConnError::Frame(FrameError::UnsupportedVersion { api_key, api_version, .. }),
                        ) => {
                            std::format!("{} v{api_version} is not a version kwire reads", api_key.name())
                        }
                        (None, ConnError::Frame(FrameError::UnsupportedApiKey { api_key, .. })) => {
                            std::format!("unknown API key {api_key}")
                        }
                        (None, e) => std::format!("malformed request: {e}"),
                    };
                }
            };
            if shared.config.verbose {
                let (api, version, size) = what;
                shared.log(format_args!(
                    "{peer}: {api} v{version}: {size} bytes in, {} out",
                    pending.total_len() - before
                ));
            }
            if pending.total_len() >= FLUSH_AT
                && let Err(e) = flush(stream, &mut pending)
            {
                return std::format!("write failed: {e}");
            }
        }
        if let Err(e) = flush(stream, &mut pending) {
            return std::format!("write failed: {e}");
        }
        // The stream is shut down by the accept loop on stop, which ends this read.
        match stream.read(conn.spare()) {
            Ok(0) => return "peer closed the connection".into(),
            Ok(n) => conn.commit(n),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return std::format!("read failed: {e}"),
        }
    }
}
