//! Client to broker: the request side of the forwarding loop, over the session.

#[allow(unused_imports)]
use std::{borrow::ToOwned, boxed::Box, format, string::String, string::ToString, sync::Arc, vec, vec::Vec};

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use tokio::io::AsyncWrite;

use super::super::notes::RequestHead;
use super::super::runtime::Runtime;
use super::super::session::{Action, FromClient};
use super::super::waiting::OwnRequests;
use super::super::{Decision, Event, Hooks, Upstream, WaitingFilter};
use super::forward::{Side, send};
use super::{Conn, lock};
use crate::ApiKey;
use crate::Direction;
use crate::session::conn::metrics::UpstreamFailure as Failure;

/// Client to broker: sends requests on, then reports them.
pub(super) struct Requests<'s, H: Hooks> {
    pub(super) runtime: &'s Arc<Runtime<H>>,
    pub(super) conn: &'s Conn<H::Tag>,
    pub(super) wake: &'s tokio::sync::Notify,
    pub(super) stopping: tokio::sync::watch::Receiver<bool>,
    pub(super) waiting: Option<Box<dyn WaitingFilter>>,
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
pub(super) struct RequestMeta<T> {
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
        let mut from = {
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
        // The action goes to be carried out; what is reported needs only the rest (a
        // replaced frame is not copied for it).
        let action = core::mem::replace(&mut from.action, Action::Hold);
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
                hooks.request_read(&info, frame, head, &tag, meta.from.read);
                if !expects {
                    let sent = super::super::notes::Admitted {
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
                    && filter.waits_on(frame)
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
