//! Broker to client: the response side of the forwarding loop, which pairs each answer with
//! its request and sends the filters' own answers in their turn.

#[allow(unused_imports)]
use std::{borrow::ToOwned, boxed::Box, format, string::String, string::ToString, sync::Arc, vec, vec::Vec};

use std::future::Future;
use std::time::Instant;

use super::super::runtime::Runtime;
use super::super::session::{Action, Answer, Answered};
use super::super::{Decision, Event, Hooks, WaitingResponses};
use super::forward::Side;
use super::{Conn, lock};
use crate::ApiKey;
use crate::Direction;
use crate::session::conn::metrics::UpstreamFailure as Failure;

/// Broker to client: pairs each response with its request, runs it through the filters
/// and sends it on, then the filters' answers due after it; then reports them.
pub(super) struct Responses<'s, H: Hooks> {
    pub(super) runtime: &'s Arc<Runtime<H>>,
    pub(super) conn: &'s Conn<H::Tag>,
    pub(super) wake: &'s tokio::sync::Notify,
    pub(super) waiting: Option<Box<dyn WaitingResponses>>,
}

/// What the response side keeps of a frame until it reports it.
pub(super) enum ResponseMeta<T> {
    Broker(super::super::session::FromBroker<T>),
    Filter(super::super::notes::Pairing<T>),
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
        let mut from = lock(self.conn).on_broker_frame(frame);
        // The action goes to be carried out; what is kept for the report and a waiting filter
        // needs only whether the frame is sent (a new frame or head is not copied for it).
        let action = match from.action {
            Action::Replace(_) | Action::Splice { .. } => {
                core::mem::replace(&mut from.action, Action::Forward)
            }
            ref other => other.clone(),
        };
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
                hooks.response_read(&info, frame, exchange, rewritten, latency, from.read_at);
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

    fn waits_after(&self, meta: &Self::Meta) -> Option<(ApiKey, i16)> {
        let waiting = self.waiting.as_ref()?;
        match meta {
            ResponseMeta::Broker(super::super::session::FromBroker {
                answer: Answer::Paired(pairing, _),
                action,
                ..
            }) if matches!(action, Action::Forward | Action::Replace(_) | Action::Splice { .. })
                && waiting.wants_response(pairing.api_key, pairing.api_version) =>
            {
                Some((pairing.api_key, pairing.api_version))
            }
            _ => None,
        }
    }

    async fn wait_after(&mut self, frame: Vec<u8>, exchange: (ApiKey, i16)) -> Result<Vec<u8>, String> {
        let Some(waiting) = self.waiting.as_mut() else { return Ok(frame) };
        match waiting.on_response(frame, exchange.0, exchange.1).await {
            Decision::Forward(frame) => Ok(frame),
            Decision::Close(why) => Err(why),
        }
    }
}
