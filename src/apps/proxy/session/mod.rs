//! [`Session`]: one client connection of a proxy, sans-IO. Feed it each whole frame from the
//! client and from the broker (without the size prefix); it says what to send each side.
//!
//! It keeps the requests awaiting their answers ([`crate::session::conn::InFlight`]), follows the
//! SaslHandshake v0 token phase ([`RawSasl`]), observes authentication (mechanism, user and
//! the broker's verdict, into [`ConnInfo`]), runs the connection's [`FilterChain`] (address
//! rewriting and ApiVersions clamping included), and orders the answers that filters give
//! themselves among the broker's. Each frame is read once ([`ParsedRequest`], [`ParsedResponse`]), by all of
//! these.

#[allow(unused_imports)]
use std::{borrow::ToOwned, boxed::Box, format, string::String, string::ToString, sync::Arc, vec, vec::Vec};

use std::collections::VecDeque;
use std::time::Instant;

use super::ConnInfo;
use super::notes::{Admitted, AuthNote, Pairing, RequestHead};
use crate::ApiKey;
use crate::codec::frame::{FrameError, ResponseHeaderView};
use crate::filter::{FilterChain, ParsedRequest, ParsedResponse, TopicNames, Verdict};
use crate::session::conn::{ConnError, InFlight, expects_response};
use crate::session::secrets::RawSasl;
use auth::Auth;

mod auth;

/// What to do with a frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Send the frame on as it came.
    Forward,
    /// Send this frame on instead (without its size prefix).
    Replace(Vec<u8>),
    /// Send `head` on, then the frame's own bytes from offset `tail` on, as they came (a
    /// filter's [`Verdict::Splice`]: the new frame is the two parts).
    Splice {
        /// The new frame's bytes up to the end of its last change.
        head: Vec<u8>,
        /// Where the rest starts in the frame as it came.
        tail: usize,
    },
    /// Send nothing on: a filter answered the request, and the answer is queued for the
    /// client in its turn ([`Session::take_answer`]); or the request expects no answer; or
    /// the response answers a request of the proxy's own, and went to its waiter.
    Hold,
    /// Close the connection, for this reason.
    Close(String),
}

/// What the session made of a request frame.
#[derive(Debug)]
pub struct FromClient {
    /// What the frame is.
    pub head: RequestHead,
    /// What to send the broker.
    pub action: Action,
    /// What the frame said of authentication.
    pub auth: Option<AuthNote>,
    /// What the session's one parse of the frame found, when something read its body (a
    /// filter, the SASL notes) and the frame goes on as it came: whether it decodes, and why
    /// not; `None` otherwise (a reader parses it then).
    pub read: Option<Result<(), FrameError>>,
}

/// What a response frame answers.
#[derive(Debug)]
pub enum Answer<T> {
    /// The answer to this request; whether a filter (or the clamping) rewrote it.
    Paired(Pairing<T>, bool),
    /// A response that answers no request awaiting one, with the reason.
    Unpaired(String),
    /// A raw SASL token of the SaslHandshake v0 phase.
    Token,
    /// The answer to a request of the proxy's own ([`Session::own_request`]), handed to its
    /// waiter; the client never sees it.
    Own(i32),
}

/// What the session made of a response frame.
#[derive(Debug)]
pub struct FromBroker<T> {
    /// What it answers.
    pub answer: Answer<T>,
    /// What to send the client.
    pub action: Action,
    /// What the frame said of authentication.
    pub auth: Option<AuthNote>,
    /// The broker answered out of order (a correlation id other than the oldest's).
    pub out_of_order: Option<i32>,
    /// The version the session's one parse of the frame read its body at, when something
    /// read it (a filter, the SASL notes, the book of topic names), it decoded, and the
    /// frame goes on as it came; `None` otherwise (a reader parses it then).
    pub read_at: Option<i16>,
}

/// An answer given by a filter, due to the client now: the response frame (without its size
/// prefix) and what it answers.
#[derive(Debug)]
pub struct Answered<T> {
    /// The response frame.
    pub frame: Vec<u8>,
    /// What it answers.
    pub exchange: Pairing<T>,
}

/// A request awaiting an answer: from the broker, or already answered by a filter and
/// waiting for the broker's answers before it.
enum Entry<T> {
    Broker(Admitted<T>),
    Filter(Vec<u8>, Admitted<T>),
    /// A request of the proxy's own (a waiting filter's): its answer goes to the waiter, not
    /// to the client.
    Own(tokio::sync::oneshot::Sender<Vec<u8>>),
}

/// One proxied connection's state, without I/O.
pub struct Session<T = ()> {
    in_flight: InFlight<Entry<T>>,
    sasl: RawSasl,
    filters: FilterChain,
    auth: Auth,
    info: Arc<ConnInfo>,
    last_client: Option<Arc<str>>,
    answers: VecDeque<Answered<T>>,
    /// The correlation id of the proxy's next request of its own (negative, counting down,
    /// apart from clients' ids, which Kafka's clients count up from 0).
    next_own: i32,
}

impl<T> core::fmt::Debug for Session<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Session")
            .field("conn", &self.info.id)
            .field("in_flight", &self.in_flight.len())
            .finish()
    }
}

impl<T> Session<T> {
    /// A session for the connection `info`, with its filters.
    pub fn new(info: Arc<ConnInfo>, filters: FilterChain) -> Self {
        Session {
            in_flight: InFlight::new(),
            sasl: RawSasl::new(),
            filters,
            auth: Auth::default(),
            info,
            last_client: None,
            answers: VecDeque::new(),
            next_own: -1,
        }
    }

    /// The connection.
    pub fn info(&self) -> &Arc<ConnInfo> {
        &self.info
    }

    /// Requests awaiting an answer.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// A request frame from the client (without its size prefix), read at `now`. A
    /// request is entered as awaiting an answer (with what `tag` makes of its head) if it
    /// is sent on and expects one, or if a filter answered it.
    pub fn on_client_frame(
        &mut self,
        frame: &[u8],
        now: Instant,
        tag: impl FnOnce(&RequestHead) -> T,
    ) -> FromClient {
        if self.sasl.client_token() {
            let auth = self.user_from(frame);
            return FromClient { head: RequestHead::Token, action: Action::Forward, auth, read: None };
        }
        // The frame's one parse: its header now, its body when a reader asks (the SASL
        // notes, the filters, the acks of a Produce a filter read).
        let mut parsed = match ParsedRequest::new(frame) {
            Ok(p) => p,
            Err(e) => {
                // What the chain does with a request no filter can read.
                let action = match self.filters.on_request(frame) {
                    Verdict::Forward => Action::Forward,
                    _ => Action::Close(format!("refused: a request whose header does not decode: {e}")),
                };
                return FromClient { head: RequestHead::Bad(e.to_string()), action, auth: None, read: None };
            }
        };
        let peek = *parsed.head();
        let auth = if peek.api_key == ApiKey::SaslHandshake.to_i16()
            || peek.api_key == ApiKey::SaslAuthenticate.to_i16()
        {
            self.sasl_request(&mut parsed)
        } else {
            None
        };
        let client_id = match (peek.client_id, &self.last_client) {
            (Some(c), Some(last)) if **last == *c => Some(last.clone()),
            (Some(c), _) => {
                let arc: Arc<str> = Arc::from(c);
                self.last_client = Some(arc.clone());
                Some(arc)
            }
            (None, _) => None,
        };
        let verdict = self.filters.on_parsed_request(&mut parsed);
        let expects = match &verdict {
            // A request that gets no answer (Produce with acks=0) is never entered.
            Verdict::Forward => match parsed.parsed() {
                Some(Ok(request)) => expects_response(&request.body),
                _ if peek.api_key != ApiKey::Produce.to_i16() => true,
                // A Produce request no one read: its acks alone.
                _ => crate::session::conn::frame_expects_response(frame).unwrap_or(true),
            },
            Verdict::Replace(new) => crate::session::conn::frame_expects_response(new).unwrap_or(true),
            // Renamed strings only: whether it expects an answer is the frame's as it came.
            Verdict::Splice { .. } => match parsed.parsed() {
                Some(Ok(request)) => expects_response(&request.body),
                _ => crate::session::conn::frame_expects_response(frame).unwrap_or(true),
            },
            Verdict::Drop => false,
            Verdict::Respond(_) | Verdict::Close(_) => true,
        };
        let head = RequestHead::Request {
            api_key: peek.api_key,
            api_version: peek.api_version,
            correlation_id: peek.correlation_id,
            client_id: client_id.clone(),
            expects,
        };
        let sent = Admitted { client_id, at: now, size: frame.len() + 4, tag: tag(&head) };
        let key = ApiKey::from_i16(peek.api_key);
        let action = match verdict {
            Verdict::Forward | Verdict::Replace(_) | Verdict::Splice { .. } => {
                let action = match verdict {
                    Verdict::Replace(new) => Action::Replace(new),
                    Verdict::Splice { head, tail } => Action::Splice { head, tail },
                    _ => Action::Forward,
                };
                match key {
                    Some(key) if expects => {
                        match self.in_flight.push(
                            peek.correlation_id,
                            key,
                            peek.api_version,
                            Entry::Broker(sent),
                        ) {
                            Ok(()) => action,
                            Err(e) => Action::Close(e.to_string()),
                        }
                    }
                    // An API kwire does not know is sent on, and its answer is unpaired.
                    _ => action,
                }
            }
            Verdict::Respond(answer) => match key {
                Some(key) => self.answer(peek.correlation_id, key, peek.api_version, answer, sent),
                None => Action::Close("a filter answered a request of an unknown API".into()),
            },
            Verdict::Drop => Action::Hold,
            Verdict::Close(why) => Action::Close(why),
        };
        // The parse describes the frame as sent unless a filter replaced it.
        let read = match action {
            Action::Replace(_) | Action::Splice { .. } => None,
            _ => parsed.parsed().map(|r| r.map(|_| ())),
        };
        FromClient { head, action, auth, read }
    }

    /// Queues a filter's answer: due now if nothing is awaited before it, else entered to
    /// follow the broker's answers before it.
    fn answer(
        &mut self,
        correlation_id: i32,
        key: ApiKey,
        version: i16,
        frame: Vec<u8>,
        sent: Admitted<T>,
    ) -> Action {
        if self.in_flight.is_empty() {
            let exchange = Pairing { api_key: key, api_version: version, correlation_id, request: sent };
            self.answers.push_back(Answered { frame, exchange });
            return Action::Hold;
        }
        match self.in_flight.push(correlation_id, key, version, Entry::Filter(frame, sent)) {
            Ok(()) => Action::Hold,
            Err(e) => Action::Close(e.to_string()),
        }
    }

    /// Moves the filters' answers at the head of the requests awaiting answers to the queue
    /// of answers due.
    fn release_answers(&mut self) {
        while let Some(oldest) = self.in_flight.oldest() {
            if !matches!(oldest.payload, Entry::Filter(..)) {
                break;
            }
            let id = oldest.correlation_id;
            let Ok(p) = self.in_flight.complete(id) else { break };
            let Entry::Filter(frame, request) = p.payload else { break };
            let exchange =
                Pairing { api_key: p.api_key, api_version: p.api_version, correlation_id: id, request };
            self.answers.push_back(Answered { frame, exchange });
        }
    }

    /// The next answer a filter gave that is due to the client now (after every broker
    /// answer before it was sent), in order.
    pub fn take_answer(&mut self) -> Option<Answered<T>> {
        self.answers.pop_front()
    }

    /// Enters a request of the proxy's own, of `api_key` at `version`, to be sent to the
    /// broker in the connection's turn: returns its correlation id (to encode it with) and
    /// where its answer (the response frame, without its size prefix) will come.
    pub fn own_request(
        &mut self,
        api_key: ApiKey,
        version: i16,
    ) -> Result<(i32, tokio::sync::oneshot::Receiver<Vec<u8>>), ConnError> {
        let id = self.next_own;
        self.next_own = if id == i32::MIN { -1 } else { id - 1 };
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.in_flight.push(id, api_key, version, Entry::Own(tx))?;
        Ok((id, rx))
    }

    /// A response frame from the broker (without its size prefix): pairs it with its
    /// request and runs it through the filters. After sending what it says, send the
    /// answers [`Session::take_answer`] gives.
    pub fn on_broker_frame(&mut self, frame: &[u8]) -> FromBroker<T> {
        // Decided before the frame is sent on: after the broker's last token the client
        // sends Kafka requests again.
        if self.sasl.server_token(frame.len()) {
            let auth = (!self.sasl.client_token()).then(|| self.verdict(0));
            return FromBroker {
                answer: Answer::Token,
                action: Action::Forward,
                auth,
                out_of_order: None,
                read_at: None,
            };
        }
        let unpaired = |why: String| FromBroker {
            answer: Answer::Unpaired(why),
            action: Action::Forward,
            auth: None,
            out_of_order: None,
            read_at: None,
        };
        let correlation_id = match ResponseHeaderView::parse(frame, 0) {
            Ok((h, _)) => h.correlation_id(),
            Err(e) => return unpaired(format!("no response header: {e}")),
        };
        let mut out_of_order = None;
        let p = match self.in_flight.complete(correlation_id) {
            Ok(p) => p,
            Err(ConnError::OutOfOrder { .. }) => {
                // Kafka answers in order; send it on all the same, and say so.
                out_of_order = Some(correlation_id);
                match self.in_flight.remove(correlation_id) {
                    Ok(p) => p,
                    Err(e) => return unpaired(e.to_string()),
                }
            }
            Err(e) => return unpaired(e.to_string()),
        };
        if self.in_flight.is_empty() {
            // Nothing awaited: the connection may idle now, and holds no table while it does.
            self.in_flight.shrink_to_fit();
        }
        let request = match p.payload {
            Entry::Broker(request) => request,
            Entry::Own(waiter) => {
                // The waiter may have given up (its connection's task ended); nothing to do then.
                let _ = waiter.send(frame.to_vec());
                self.release_answers();
                return FromBroker {
                    answer: Answer::Own(correlation_id),
                    action: Action::Hold,
                    auth: None,
                    out_of_order,
                    read_at: None,
                };
            }
            // A filter's answer is never awaited from the broker: its id came back twice.
            Entry::Filter(..) => {
                return unpaired(format!("correlation id {correlation_id} was answered by a filter"));
            }
        };
        // The frame's one parse, made when a reader asks: the SASL notes, the book of topic
        // names, the filters.
        let mut parsed = ParsedResponse::new(frame, p.api_key, p.api_version);
        let auth = self.sasl_response(&mut parsed);
        if TopicNames::learns_from(p.api_key)
            && let Some((response, _)) = parsed.response()
        {
            // The proxy's book, shared by its connections and their filters.
            self.info.topic_names().learn_from(&response);
        }
        let verdict = self.filters.on_parsed_response(&mut parsed);
        let (action, rewritten) = match verdict {
            Verdict::Replace(new) => (Action::Replace(new), true),
            Verdict::Splice { head, tail } => (Action::Splice { head, tail }, true),
            Verdict::Close(why) => (Action::Close(why), false),
            _ => (Action::Forward, false),
        };
        self.release_answers();
        let exchange = Pairing { api_key: p.api_key, api_version: p.api_version, correlation_id, request };
        let read_at = match action {
            Action::Forward => parsed.parsed().flatten().map(|(_, at)| at),
            _ => None,
        };
        FromBroker { answer: Answer::Paired(exchange, rewritten), action, auth, out_of_order, read_at }
    }

    /// The requests still awaiting an answer, oldest first, when the connection ends (the
    /// proxy's own are dropped: their waiters see the connection end).
    pub fn drain(&mut self) -> impl Iterator<Item = Pairing<T>> + '_ {
        self.in_flight.drain().filter_map(|p| {
            let request = match p.payload {
                Entry::Broker(s) | Entry::Filter(_, s) => s,
                Entry::Own(_) => return None,
            };
            Some(Pairing {
                api_key: p.api_key,
                api_version: p.api_version,
                correlation_id: p.correlation_id,
                request,
            })
        })
    }
}

#[cfg(test)]
mod tests;
