//! What a running proxy shares: its listeners (the bootstrap one, and one per broker as
//! responses name brokers), the connection gate, routes, TLS, metrics and hooks.
//!
//! Past the connection limit every listener closes, so that clients are refused by the
//! kernel rather than accepted and dropped, and opens again on the same address once a
//! connection ends.

#[allow(unused_imports)]
use std::{borrow::ToOwned, boxed::Box, format, string::String, string::ToString, sync::Arc, vec, vec::Vec};

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::net::TcpListener;

use super::tls::Tls;
use super::{ConnInfo, Event, FilterFactory, Hooks, Proxy, ProxyBuilder, WaitingFactory};
use crate::conn::metrics::Metrics;
use crate::filter::{BrokerPorts, ByName, FilterChain, RewriteAddresses};

/// Everything a proxy's connections share.
pub(super) struct Runtime<H: Hooks> {
    pub(super) hooks: Arc<H>,
    pub(super) filters: Arc<FilterFactory>,
    pub(super) waiting: Option<Arc<WaitingFactory>>,
    pub(super) max_frame: usize,
    pub(super) idle_timeout: Option<Duration>,
    bind_ip: IpAddr,
    advertise: String,
    /// Upstream `(host, port)` to the local port that forwards to it.
    routes: Mutex<HashMap<(String, i32), u16>>,
    /// A port per broker by node id, and node id to the broker address its listener
    /// forwards to.
    broker_ports: Option<BrokerPorts>,
    nodes: Mutex<HashMap<i32, String>>,
    next_conn: AtomicU64,
    pub(super) gate: Gate,
    pub(super) metrics: Arc<Metrics>,
    pub(super) tls: Tls,
    /// Set when the proxy shuts down.
    pub(super) stop: tokio::sync::watch::Sender<bool>,
}

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
    let runtime = Arc::new(Runtime {
        hooks: b.hooks,
        filters: b.filters,
        waiting: b.waiting,
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
    });
    if let Some(words) = runtime.tls.describe() {
        runtime.hooks.event(None, Event::Notice(&words));
    }
    runtime.hooks.event(None, Event::Listening { addr: local, broker: None });
    tokio::spawn(accept_loop(listener, b.upstream.join(","), runtime.clone()));
    Ok(Proxy { runtime, addr: local })
}

/// `host:port` (IPv6 in brackets) to its parts.
pub(super) fn parse_upstream(s: &str) -> Result<(String, i32), String> {
    let (host, port) = s.rsplit_once(':').ok_or(format!("upstream {s}: expected HOST:PORT"))?;
    let port: u16 = port.parse().map_err(|_| format!("upstream {s}: bad port"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Ok((host.to_string(), i32::from(port)))
}

impl<H: Hooks> Runtime<H> {
    /// A notice for the operator.
    pub(super) fn notice(&self, words: &str) {
        self.hooks.event(None, Event::Notice(words));
    }

    /// The metrics in the Prometheus text format.
    pub(super) fn render_metrics(&self) -> String {
        let mut body = self.metrics.render(Some(self.gate.max()));
        if self.tls.terminates() {
            self.tls.failures.render_into(&mut body, super::METRICS_NAMESPACE);
        }
        body
    }

    /// The next connection's facts.
    pub(super) fn conn_info(&self, peer: SocketAddr, route: String) -> ConnInfo {
        ConnInfo::new(self.next_conn.fetch_add(1, Ordering::Relaxed) + 1, peer, route)
    }

    /// A connection's filters: the user's, then the rewriting of broker addresses (nearest
    /// the broker, so that it sees responses first).
    pub(super) fn filters(self: &Arc<Self>, conn: &Arc<ConnInfo>) -> FilterChain {
        let mut chain = (self.filters)(conn);
        if let Some(sni) = &self.tls.sni {
            // One port for every broker, each by its name (SNI); what the responses say of
            // the brokers' own addresses is where those names' connections go.
            let learn = self.clone();
            let by_name = ByName::new(sni.names.clone(), sni.port, move |id, host: &str, port| {
                if let Some(sni) = &learn.tls.sni {
                    sni.learn(id, host, port);
                }
            });
            chain.push(RewriteAddresses::with_route(by_name));
            return chain;
        }
        let routes = self.clone();
        if self.broker_ports.is_some() {
            chain.push(RewriteAddresses::by_node(move |node: i32, host: &str, port: i32| {
                routes.route_node(node, host, port)
            }));
        } else {
            chain.push(RewriteAddresses::new(move |host: &str, port: i32| routes.route(host, port)));
        }
        chain
    }

    /// The local address clients should use for upstream broker `(host, port)`: an
    /// existing listener, or a new one.
    fn route(self: &Arc<Self>, host: &str, port: i32) -> Option<(String, i32)> {
        // No broker there (a FindCoordinator error answers host "" and port -1).
        if host.is_empty() || !(1..=65535).contains(&port) {
            return None;
        }
        let mut routes = self.routes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(local) = routes.get(&(host.to_string(), port)) {
            return Some((self.advertise.clone(), i32::from(*local)));
        }
        let listener = std::net::TcpListener::bind(SocketAddr::new(self.bind_ip, 0))
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .and_then(TcpListener::from_std);
        let listener = match listener {
            Ok(l) => l,
            Err(e) => {
                self.notice(&format!("cannot open a listener for broker {host}:{port}: {e}"));
                return None;
            }
        };
        let addr = listener.local_addr().ok()?;
        routes.insert((host.to_string(), port), addr.port());
        drop(routes);
        let upstream = format!("{host}:{port}");
        self.hooks.event(None, Event::Listening { addr, broker: Some((&upstream, None)) });
        // Called from a connection's task (its filters), so within the runtime.
        drop(tokio::spawn(accept_loop(listener, upstream, self.clone())));
        Some((self.advertise.clone(), i32::from(addr.port())))
    }

    /// With a port per broker: the address clients should use for broker `node_id` at
    /// `host:port`; its listener (port BASE+N) is opened when the node is first named.
    fn route_node(self: &Arc<Self>, node_id: i32, host: &str, port: i32) -> Option<(String, i32)> {
        let ports = self.broker_ports.as_ref()?;
        if host.is_empty() || !(1..=65535).contains(&port) {
            return None;
        }
        let upstream = format!("{host}:{port}");
        let mut nodes = self.nodes.lock().unwrap_or_else(|e| e.into_inner());
        let Some(local) = ports.port(node_id) else {
            if nodes.insert(node_id, upstream).is_none() {
                self.notice(&format!(
                    "broker {node_id} ({host}:{port}) has no port under the broker ports: its address is not rewritten"
                ));
            }
            return None;
        };
        match nodes.get(&node_id) {
            Some(known) if *known == upstream => {}
            Some(known) => {
                // The listener forwards to the address it was opened for (a broker that
                // moved keeps its node id; restart the proxy to follow it).
                self.notice(&format!(
                    "broker {node_id} is now named at {upstream}; port {local} still forwards to {known}"
                ));
                nodes.insert(node_id, upstream);
            }
            None => {
                let addr = SocketAddr::new(self.bind_ip, local);
                let listener = std::net::TcpListener::bind(addr)
                    .and_then(|l| l.set_nonblocking(true).map(|()| l))
                    .and_then(TcpListener::from_std);
                match listener {
                    Ok(l) => {
                        self.hooks
                            .event(None, Event::Listening { addr, broker: Some((&upstream, Some(node_id))) });
                        drop(tokio::spawn(accept_loop(l, upstream.clone(), self.clone())));
                    }
                    Err(e) => {
                        self.notice(&format!(
                            "cannot listen on {addr} for broker {node_id} at {upstream}: {e}"
                        ));
                        return None;
                    }
                }
                nodes.insert(node_id, upstream);
            }
        }
        Some((ports.host().to_string(), i32::from(local)))
    }
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

/// The count of open client connections, bounded.
pub(super) struct Gate {
    max: usize,
    open: Mutex<usize>,
    /// Woken when a place is given back.
    notify: tokio::sync::Notify,
}

impl Gate {
    /// A gate of at most `max` connections.
    pub(super) fn new(max: usize) -> Gate {
        Gate { max, open: Mutex::new(0), notify: tokio::sync::Notify::new() }
    }

    /// The bound.
    pub(super) fn max(&self) -> usize {
        self.max
    }

    /// Connections open now.
    pub(super) fn open(&self) -> usize {
        *self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes a place if there is one: the caller then accepts at most one connection, and
    /// gives the place back with [`Gate::release`] if it accepted none.
    fn try_take(&self) -> bool {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if *open >= self.max {
            return false;
        }
        *open += 1;
        true
    }

    /// Gives a place back (a connection ended, or none was accepted).
    fn release(&self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        *open = open.saturating_sub(1);
        self.notify.notify_waiters();
    }

    /// Waits until a place is free.
    async fn room(&self) {
        loop {
            let notified = self.notify.notified();
            let mut notified = core::pin::pin!(notified);
            notified.as_mut().enable();
            if self.open() < self.max {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gate_bounds_and_releases() {
        let gate = Gate::new(2);
        assert!(gate.try_take() && gate.try_take());
        assert!(!gate.try_take());
        gate.release();
        assert_eq!(gate.open(), 1);
        assert!(gate.try_take());
        gate.release();
        gate.release();
        gate.release();
        assert_eq!(gate.open(), 0);
    }

    #[test]
    fn upstream_parses() {
        assert_eq!(parse_upstream("127.0.0.1:9092").unwrap(), ("127.0.0.1".into(), 9092));
        assert_eq!(parse_upstream("[::1]:9092").unwrap(), ("::1".into(), 9092));
        assert!(parse_upstream("nohost").is_err());
        assert!(parse_upstream("h:99999").is_err());
    }
}
