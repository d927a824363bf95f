//! The accept side of a proxy: the bootstrap listener, and the listeners the runtime opens
//! for brokers as responses name them, each served by an accept loop that starts a
//! connection's task (`io/`) per client.
//!
//! Past the connection limit every listener closes, so that clients are refused by the
//! kernel rather than accepted and dropped, and opens again on the same address once a
//! connection ends.

#[allow(unused_imports)]
use std::{borrow::ToOwned, boxed::Box, format, string::String, string::ToString, sync::Arc, vec, vec::Vec};

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use tokio::net::TcpListener;

use super::runtime::{Gate, Runtime};
use super::tls::Tls;
use super::{Event, Hooks, Proxy, ProxyBuilder};
use crate::filter::BrokerPorts;

/// Binds the bootstrap listener and spawns its accept loop.
pub(super) async fn start<H: Hooks>(b: ProxyBuilder<H>) -> std::io::Result<Proxy<H>> {
    let invalid = |what: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, what);
    if b.upstream.is_empty() {
        return Err(invalid("no upstream broker".into()));
    }
    let upstreams =
        b.upstream.iter().map(|u| parse_upstream(u)).collect::<Result<Vec<_>, _>>().map_err(invalid)?;
    let listener = TcpListener::bind(b.listen).await?;
    let local = listener.local_addr()?;
    let advertise = match &b.advertise {
        Some(h) => h.clone(),
        None if local.ip().is_unspecified() => "127.0.0.1".to_string(),
        None => local.ip().to_string(),
    };
    let tls = Tls::new(b.server_tls, b.upstream_tls, b.sni.as_ref(), b.handshake_timeout, local.port())
        .map_err(invalid)?;
    let (opened, mut to_serve) = tokio::sync::mpsc::unbounded_channel();
    let runtime = Arc::new(Runtime {
        hooks: b.hooks,
        filters: b.filters,
        waiting: b.waiting,
        topic_names: b.topic_names,
        look_up_ids: b.user_filters,
        #[cfg(feature = "encrypt")]
        encryption: b.encryption,
        max_frame: b.max_frame,
        idle_timeout: b.idle_timeout,
        bind_ip: local.ip(),
        advertise: advertise.clone(),
        // One bootstrap broker is served at the bootstrap listener (without broker ports);
        // with several, each gets a listener of its own.
        routes: Mutex::new(match &upstreams[..] {
            [one] if b.broker_ports.is_none() => HashMap::from([(one.clone(), local.port())]),
            _ => HashMap::new(),
        }),
        broker_ports: b.broker_ports.map(|base| BrokerPorts::new(advertise, base)),
        nodes: Mutex::new(HashMap::new()),
        next_conn: AtomicU64::new(0),
        gate: Gate::new(b.max_connections),
        metrics: b.metrics,
        tls,
        stop: tokio::sync::watch::channel(false).0,
        opened,
    });
    if let Some(words) = runtime.tls.describe() {
        runtime.hooks.event(None, Event::Notice(&words));
    }
    runtime.hooks.event(None, Event::Listening { addr: local, broker: None });
    tokio::spawn(accept_loop(listener, b.upstream.join(","), runtime.clone()));
    // Listeners opened for brokers, each served until the proxy stops.
    let serving = runtime.clone();
    let mut stop = runtime.stop.subscribe();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                opened = to_serve.recv() => match opened {
                    Some((listener, upstream)) => drop(tokio::spawn(accept_loop(listener, upstream, serving.clone()))),
                    None => return,
                },
                _ = stop.changed() => return,
            }
        }
    });
    Ok(Proxy { runtime, addr: local })
}

/// `host:port` (IPv6 in brackets) to its parts.
pub(super) fn parse_upstream(s: &str) -> Result<(String, i32), String> {
    let (host, port) = s.rsplit_once(':').ok_or(format!("upstream {s}: expected HOST:PORT"))?;
    let port: u16 = port.parse().map_err(|_| format!("upstream {s}: bad port"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Ok((host.to_string(), i32::from(port)))
}

/// Accepts clients on `listener` for `upstream` while the gate has room; when it is full
/// the listener is closed (new clients are refused by the kernel) and opened again on the
/// same address once a connection ends. Ends when the proxy shuts down.
async fn accept_loop<H: Hooks>(listener: TcpListener, upstream: String, runtime: Arc<Runtime<H>>) {
    let Ok(addr) = listener.local_addr() else { return };
    let mut stop = runtime.stop.subscribe();
    let mut listener = Some(listener);
    loop {
        if *stop.borrow() {
            return;
        }
        if !runtime.gate.try_take() {
            if listener.take().is_some() {
                runtime.metrics.listener_closed();
                runtime.notice(&format!(
                    "at {} connections (the connection limit): {addr} closed, new connections are refused until one ends",
                    runtime.gate.max()
                ));
            }
            tokio::select! {
                () = runtime.gate.room() => {}
                _ = stop.changed() => return,
            }
            continue;
        }
        let l = match &listener {
            Some(l) => l,
            None => match rebind(&runtime, addr) {
                Some(l) => listener.insert(l),
                None => {
                    runtime.gate.release();
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            },
        };
        let accepted = tokio::select! {
            a = l.accept() => a,
            _ = stop.changed() => {
                runtime.gate.release();
                return;
            }
        };
        match accepted {
            Ok((stream, peer)) => {
                runtime.metrics.connection_opened();
                let (runtime, upstream) = (runtime.clone(), upstream.clone());
                tokio::spawn(async move {
                    super::io::run(stream, peer, &upstream, &runtime).await;
                    runtime.metrics.connection_closed();
                    runtime.gate.release();
                });
            }
            Err(e) => {
                runtime.gate.release();
                runtime.notice(&format!("accept on {addr} failed: {e}"));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Listens on `addr` again once the gate has room.
fn rebind<H: Hooks>(runtime: &Runtime<H>, addr: SocketAddr) -> Option<TcpListener> {
    let bound = std::net::TcpListener::bind(addr)
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .and_then(TcpListener::from_std);
    match bound {
        Ok(l) => {
            runtime.notice(&format!("{addr} open again, accepting connections"));
            Some(l)
        }
        Err(e) => {
            runtime.notice(&format!("cannot listen on {addr} again: {e}; retrying"));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_parses() {
        assert_eq!(parse_upstream("127.0.0.1:9092").unwrap(), ("127.0.0.1".into(), 9092));
        assert_eq!(parse_upstream("[::1]:9092").unwrap(), ("::1".into(), 9092));
        assert!(parse_upstream("nohost").is_err());
        assert!(parse_upstream("h:99999").is_err());
    }
}
