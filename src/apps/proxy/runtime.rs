//! What a running proxy's connections share ([`Runtime`]): the hooks, the filter factories,
//! the routes to brokers (a listener per broker, opened as responses name them), the
//! connection gate, TLS and metrics.

#[allow(unused_imports)]
use std::{borrow::ToOwned, boxed::Box, format, string::String, string::ToString, sync::Arc, vec, vec::Vec};

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::net::TcpListener;

use super::tls::Tls;
use super::{ConnInfo, Event, FilterFactory, Hooks, WaitingFactory};
use crate::filter::{BrokerPorts, ByName, FilterChain, RewriteAddresses, TopicNames};
use crate::session::conn::metrics::Metrics;

/// Everything a proxy's connections share.
pub(super) struct Runtime<H: Hooks> {
    pub(super) hooks: Arc<H>,
    pub(super) filters: Arc<FilterFactory>,
    pub(super) waiting: Option<Arc<WaitingFactory>>,
    /// The topic names by id that every connection's filters share.
    pub(super) topic_names: TopicNames,
    /// Whether connections look up the topic ids they name that the book does not know
    /// (with the user's filters).
    pub(super) look_up_ids: bool,
    /// Record encryption, if set up.
    #[cfg(feature = "encrypt")]
    pub(super) encryption: Option<Arc<super::encrypt::Engine>>,
    pub(super) max_frame: usize,
    pub(super) idle_timeout: Option<Duration>,
    pub(super) bind_ip: IpAddr,
    pub(super) advertise: String,
    /// Upstream `(host, port)` to the local port that forwards to it.
    pub(super) routes: Mutex<HashMap<(String, i32), u16>>,
    /// A port per broker by node id, and node id to the broker address its listener
    /// forwards to.
    pub(super) broker_ports: Option<BrokerPorts>,
    pub(super) nodes: Mutex<HashMap<i32, String>>,
    pub(super) next_conn: AtomicU64,
    pub(super) gate: Gate,
    pub(super) metrics: Arc<Metrics>,
    pub(super) tls: Tls,
    /// Set when the proxy shuts down.
    pub(super) stop: tokio::sync::watch::Sender<bool>,
    /// Listeners opened for brokers as responses name them, to the accept side
    /// (`listeners.rs`), which serves each with the broker it forwards to.
    pub(super) opened: tokio::sync::mpsc::UnboundedSender<(TcpListener, String)>,
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
        let mut info = ConnInfo::new(self.next_conn.fetch_add(1, Ordering::Relaxed) + 1, peer, route);
        info.topic_names = self.topic_names.clone();
        info
    }

    /// A connection's waiting filter: the look-ups of topic ids and of a tenant's ACL
    /// bindings (with the user's filters), then the user's own.
    pub(super) fn waiting(&self, conn: &Arc<ConnInfo>) -> Option<Box<dyn super::WaitingFilter>> {
        let user = self.waiting.as_ref().map(|make| make(conn));
        // Encryption after the user's own, nearest the chain.
        #[cfg(feature = "encrypt")]
        let user = match (&self.encryption, user) {
            (None, user) => user,
            (Some(engine), user) => {
                let encrypt: Box<dyn super::WaitingFilter> =
                    Box::new(super::encrypt::Encrypt::new(engine.clone(), conn.clone()));
                Some(match user {
                    Some(user) => Box::new(super::waiting::Both(user, encrypt)),
                    None => encrypt,
                })
            }
        };
        if !self.look_up_ids {
            return user;
        }
        let ids: Box<dyn super::WaitingFilter> =
            Box::new(super::topic_ids::LookUpIds::new(self.topic_names.clone()));
        let acls: Box<dyn super::WaitingFilter> =
            Box::new(super::acl_lookups::LookUpAcls::new(conn.acl_lookups.clone()));
        let lookups: Box<dyn super::WaitingFilter> = Box::new(super::waiting::Both(ids, acls));
        Some(match user {
            Some(user) => Box::new(super::waiting::Both(lookups, user)),
            None => lookups,
        })
    }

    /// A connection's filters: the user's, then the rewriting of broker addresses (nearest
    /// the broker, so that it sees responses first).
    pub(super) fn filters(self: &Arc<Self>, conn: &Arc<ConnInfo>) -> FilterChain {
        let mut chain = (self.filters)(conn);
        #[cfg(feature = "encrypt")]
        if let Some(engine) = &self.encryption {
            chain.push(super::encrypt::RefuseUnencrypted::new(engine.clone(), conn.id));
        }
        // The session fills the proxy's book of topic names (`conn.topic_names`, the same
        // book) from its one parse of each answer, before the chain sees it.
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
        let _ = self.opened.send((listener, upstream));
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
                        let _ = self.opened.send((l, upstream.clone()));
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
    pub(super) fn try_take(&self) -> bool {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if *open >= self.max {
            return false;
        }
        *open += 1;
        true
    }

    /// Gives a place back (a connection ended, or none was accepted).
    pub(super) fn release(&self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        *open = open.saturating_sub(1);
        self.notify.notify_waiters();
    }

    /// Waits until a place is free.
    pub(super) async fn room(&self) {
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
}
