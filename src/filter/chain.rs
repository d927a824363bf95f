//! [`FilterChain`]: filters in order, their actions turned into one [`Verdict`] per frame,
//! the versions the chain serves, and the partial answers awaiting the broker's.

use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use core::fmt::Write as _;

use super::parsed::read_response;
use super::{
    Exchange, Filter, ParsedRequest, ParsedResponse, RequestAction, ResponseAction, Spliced, TopicNames,
    Verdict, encode_body, partial, splice, versions,
};
use crate::ApiKey;
use crate::codec::dispatch::{self, Request, Response};
use crate::codec::frame::RequestHeader;
use crate::codec::messages::{ResponseBody, ResponseBodyView};
use crate::codec::types::{List, RawTaggedField, Versions};
use crate::session::conn::expects_response;

/// Filters in order: requests go through them first to last, responses last to first.
#[derive(Default)]
pub struct FilterChain {
    filters: Vec<Box<dyn Filter + Send>>,
    /// What the connection serves of each API, from the ApiVersions answers through the chain.
    served: versions::Served,
    /// The last ApiVersions answer this chain changed.
    clamped: Option<LastClamped>,
    /// Whether requests no filter can read are forwarded unread ([`FilterChain::forward_unreadable`]).
    forward_unreadable: bool,
    /// The book the chain fills from the answers that pair topic names with ids.
    topic_names: Option<TopicNames>,
    /// Partial answers awaiting the broker's: (correlation id, the refusing filter's
    /// index, what to merge), oldest first.
    pub(super) merges: alloc::collections::VecDeque<(i32, usize, partial::Merge)>,
}

/// The last ApiVersions answer a chain changed, so that the same answer cut the same way
/// again (a client that asks on every connection check) is not rebuilt and encoded again.
/// The cut is worked out every time: filters' versions may change.
struct LastClamped {
    /// The version the answer was read at.
    read_at: i16,
    /// The answer's body, as the broker (and filters) left it.
    answer: Vec<u8>,
    /// What each of its APIs was cut to, in its order.
    cut: Vec<Option<Versions>>,
    /// The new body (`None`: it did not encode, and the answer went as it came).
    body: Option<Vec<u8>>,
}

/// The most partial answers a chain keeps awaiting the broker's (Kafka's in-flight limit in
/// `kwire::conn::InFlight`); past it the oldest go, whose answers never came.
const MAX_MERGES: usize = 1024;

impl core::fmt::Debug for FilterChain {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "FilterChain({} filters)", self.filters.len())
    }
}

/// What one filter's action made of a request.
enum Step {
    Same,
    New(Vec<u8>),
    /// New bytes, then the frame's own from this offset on ([`Verdict::Splice`]).
    Split(Vec<u8>, usize),
    Done(Verdict),
}

/// A frame as the filters so far left it, the one rule for both directions: as it came; or
/// spliced (new bytes, then the frame's own bytes from an offset on, not copied: only a
/// frame as it came has its tail where the caller has it); or new, whole. A split frame is
/// joined before another filter reads it.
struct Current<'f> {
    /// The frame as it came.
    frame: &'f [u8],
    /// The frame a filter rewrote, whole.
    new: Option<Vec<u8>>,
    /// A splice of the frame as it came: the new head, and where its tail starts in `frame`.
    split: Option<(Vec<u8>, usize)>,
}

impl<'f> Current<'f> {
    fn new(frame: &'f [u8]) -> Self {
        Current { frame, new: None, split: None }
    }

    /// Joins a split frame (a copy of its tail), for a filter that reads it next.
    fn join(&mut self) {
        if let Some((mut head, tail)) = self.split.take() {
            head.extend_from_slice(self.frame.get(tail..).unwrap_or_default());
            self.new = Some(head);
        }
    }

    /// A filter's new frame, whole.
    fn set(&mut self, new: Vec<u8>) {
        self.split = None;
        self.new = Some(new);
    }

    /// A filter's splice of the frame it read (`head`, then that frame's bytes from `tail`
    /// on): left split if that was the frame as it came, else joined.
    fn splice(&mut self, mut head: Vec<u8>, tail: usize) {
        match &self.new {
            None => self.split = Some((head, tail)),
            Some(read) => {
                head.extend_from_slice(read.get(tail..).unwrap_or_default());
                self.new = Some(head);
            }
        }
    }

    /// What becomes of the frame: forwarded as it came, spliced, or replaced.
    fn verdict(self) -> Verdict {
        match (self.split, self.new) {
            (Some((head, tail)), _) => Verdict::Splice { head, tail },
            (None, Some(new)) => Verdict::Replace(new),
            (None, None) => Verdict::Forward,
        }
    }
}

/// A splice a filter made of `read` (the frame it was given): its head and where its tail
/// starts in `read`, when the tail is `read`'s own end; else the spliced frame, whole.
fn split_of(read: &[u8], spliced: Spliced<'_>) -> Result<(Vec<u8>, usize), Vec<u8>> {
    let tail = spliced.tail();
    let at = read.len().saturating_sub(tail.len());
    if read.get(at..).is_some_and(|end| core::ptr::eq(end, tail)) {
        Ok((spliced.into_parts().0, at))
    } else {
        Err(spliced.to_vec())
    }
}

fn request_step(frame: &[u8], request: &Request<'_>, action: RequestAction<'_>) -> Step {
    let header = request.header;
    let version = header.api_version();
    let key = request.body.api_key();
    let wrong_api = |what: &str, got: &str| {
        let mut s = String::new();
        let _ = write!(s, "a filter {what} a {} request with a {got} body", key.name());
        Step::Done(Verdict::Close(s))
    };
    match action {
        RequestAction::Pass => Step::Same,
        RequestAction::Rewrite(body) => {
            if body.api_key() != key {
                return wrong_api("rewrote", body.api_key().name());
            }
            match encode_body(&body, version) {
                Ok(b) => Step::New(splice(&frame[..header.as_bytes().len()], &b)),
                Err(e) => Step::Done(Verdict::Close(alloc::format!(
                    "a filter's rewritten {} request: {e}",
                    key.name()
                ))),
            }
        }
        RequestAction::RewriteBody(body) => {
            let new = splice(&frame[..header.as_bytes().len()], &body);
            match dispatch::parse_request(&new) {
                Ok(r) if r.body.api_key() == key => Step::New(new),
                _ => Step::Done(Verdict::Close(alloc::format!(
                    "a filter's rewritten {} request does not decode",
                    key.name()
                ))),
            }
        }
        RequestAction::RewriteFrame(new) => match dispatch::parse_request(&new) {
            Ok(r) if r.body.api_key() == key && r.header.correlation_id() == header.correlation_id() => {
                Step::New(new)
            }
            _ => Step::Done(Verdict::Close(alloc::format!(
                "a filter's rewritten {} request does not decode",
                key.name()
            ))),
        },
        // Made by kwire's splicing from a checked frame: not parsed again. Its tail is
        // this frame's own end, unless the filter spliced some other frame.
        RequestAction::RewriteSpliced(spliced) => match split_of(frame, spliced) {
            Ok((head, at)) => Step::Split(head, at),
            Err(whole) => Step::New(whole),
        },
        RequestAction::RewriteHeader { client_id } => {
            let tags: Vec<RawTaggedField<'_>> = header
                .unknown_tagged_fields()
                .map(|(tag, data)| RawTaggedField { tag, data: List::Borrowed(data) })
                .collect();
            let new = RequestHeader {
                correlation_id: header.correlation_id(),
                client_id: client_id.as_deref(),
                unknown_tagged_fields: &tags,
            };
            let header_version = header.version();
            match new.encoded_len(header_version) {
                Ok(len) => {
                    let mut out = vec![0u8; len + frame.len() - header.as_bytes().len()];
                    let mut w = crate::codec::wire::Writer::new(&mut out[..len]);
                    new.write(&mut w, key.to_i16(), version, header_version);
                    // The body's bytes as they came (trailing bytes included).
                    out[len..].copy_from_slice(&frame[header.as_bytes().len()..]);
                    Step::New(out)
                }
                Err(e) => Step::Done(Verdict::Close(e.to_string())),
            }
        }
        RequestAction::Respond(body) => {
            if !expects_response(&request.body) {
                return Step::Done(Verdict::Drop);
            }
            if body.api_key() != key {
                return wrong_api("answered", body.api_key().name());
            }
            let answer = dispatch::response_len(&body, version).and_then(|n| {
                let mut out = vec![0u8; n];
                dispatch::encode_response(&body, version, header.correlation_id(), &mut out).map(|_| out)
            });
            match answer {
                Ok(mut out) => {
                    out.drain(..4);
                    Step::Done(Verdict::Respond(out))
                }
                Err(e) => {
                    Step::Done(Verdict::Close(alloc::format!("a filter's answer to {}: {e}", key.name())))
                }
            }
        }
        RequestAction::Drop if expects_response(&request.body) => Step::Done(Verdict::Close(alloc::format!(
            "a filter dropped a {} request, which expects an answer",
            key.name()
        ))),
        RequestAction::Drop => Step::Done(Verdict::Drop),
        RequestAction::Close(why) => Step::Done(Verdict::Close(why)),
        // The chain splits refusals before this step.
        RequestAction::Refuse(_) => Step::Done(Verdict::Close("a refusal the chain did not split".into())),
    }
}

/// The answer to a request of `key` at `version` with this response body (encoded at that
/// version): the response header (the correlation id, and an empty tagged-field section
/// in header version 1) and the body.
fn answer_with(key: ApiKey, version: i16, correlation_id: i32, body: &[u8]) -> Verdict {
    let mut out = Vec::with_capacity(5 + body.len());
    out.extend_from_slice(&correlation_id.to_be_bytes());
    if key.response_header_version(version) >= 1 {
        out.push(0);
    }
    out.extend_from_slice(body);
    Verdict::Respond(out)
}

/// The response as the filters so far left it: the caller's parse, until one rewrote it.
fn read_current<'f: 'b, 'b>(
    parsed: &mut ParsedResponse<'f>,
    current: &'b Option<Vec<u8>>,
) -> Option<(Response<'b>, i16)> {
    match current.as_deref() {
        None => parsed.response(),
        Some(new) => read_response(new, parsed.api_key(), parsed.api_version()),
    }
}

fn unreadable_verdict(forward: bool, why: core::fmt::Arguments<'_>) -> Verdict {
    if forward {
        Verdict::Forward
    } else {
        let mut s = String::from("refused: ");
        let _ = s.write_fmt(why);
        Verdict::Close(s)
    }
}

impl FilterChain {
    /// An empty chain (it forwards everything).
    pub fn new() -> Self {
        FilterChain::default()
    }

    /// Forwards requests that no filter can read (an API or version the connection does not
    /// serve, a body that does not decode) unread, instead of closing the connection: for
    /// chains whose filters only observe. A filter that must see every request
    /// ([`Filter::refuses_unreadable`]) still closes the connection on them.
    pub fn forward_unreadable(&mut self) -> &mut Self {
        self.forward_unreadable = true;
        self
    }

    /// Fills `book` from every answer through the chain that pairs topic names with ids
    /// ([`TopicNames::learn_from`]), before any filter sees the answer; give each filter
    /// that judges topics by name a clone of the same book.
    pub fn learn_topic_names(&mut self, book: TopicNames) -> &mut Self {
        self.topic_names = Some(book);
        self
    }

    /// Whether a request no filter can read is forwarded unread: the chain is empty, or
    /// opted in with [`FilterChain::forward_unreadable`] and no filter refuses them.
    pub fn forwards_unreadable(&self) -> bool {
        self.filters.is_empty()
            || (self.forward_unreadable && !self.filters.iter().any(|f| f.refuses_unreadable()))
    }

    /// The versions of `api_key` a request may use through the chain: what the last
    /// ApiVersions answer through it advertised (cut to what kwire reads and every filter
    /// handles), or before any answer, what kwire reads and every filter handles. `None`:
    /// the API is not served. Produce is advertised from version 0 ([`ApiKey::advertised`])
    /// but served from the lowest version kwire reads.
    pub fn served(&self, api_key: ApiKey) -> Option<Versions> {
        self.served.get(api_key, &self.filters)
    }

    /// Adds a filter after the others (nearer the broker).
    pub fn push(&mut self, filter: impl Filter + Send + 'static) -> &mut Self {
        self.filters.push(Box::new(filter));
        self
    }

    /// Whether the chain has no filters.
    pub fn is_empty(&self) -> bool {
        self.filters.is_empty()
    }

    /// Whether some filter wants requests of this API and version.
    pub fn wants_request(&self, api_key: ApiKey, version: i16) -> bool {
        self.filters.iter().any(|f| f.wants_request(api_key, version))
    }

    /// Whether some filter wants responses of this API and version, or a partial answer
    /// awaits the broker's.
    pub fn wants_response(&self, api_key: ApiKey, version: i16) -> bool {
        !self.merges.is_empty() || self.filters.iter().any(|f| f.wants_response(api_key, version))
    }

    /// Runs a request frame (without its size prefix) through the filters.
    ///
    /// A request of an API or version the chain does not serve ([`FilterChain::served`]),
    /// or whose header or body does not decode, closes the connection, as Apache Kafka's
    /// broker closes it on a version it does not serve; unless the chain forwards such
    /// requests unread ([`FilterChain::forwards_unreadable`]). ApiVersions requests of any
    /// version are answered, as Kafka answers them.
    pub fn on_request(&mut self, frame: &[u8]) -> Verdict {
        match ParsedRequest::new(frame) {
            Ok(mut parsed) => self.on_parsed_request(&mut parsed),
            Err(_) => self.unreadable(format_args!("a request whose header does not decode")),
        }
    }

    /// [`FilterChain::on_request`] for a request already read by its caller: the chain
    /// reads the body through `parsed` (parsing it if no one did yet), so that the caller
    /// and the chain parse the frame once between them.
    pub fn on_parsed_request(&mut self, parsed: &mut ParsedRequest<'_>) -> Verdict {
        let frame = parsed.frame();
        let peek = *parsed.head();
        let (raw_key, version) = (peek.api_key, peek.api_version);
        let Some(key) = ApiKey::from_i16(raw_key) else {
            return self
                .unreadable(format_args!("a request of API key {raw_key}, which kwire does not know"));
        };
        if key == ApiKey::ApiVersions && !key.request_versions().contains(version) {
            return self.unsupported_api_versions(peek.correlation_id);
        }
        if key != ApiKey::ApiVersions && !self.served(key).is_some_and(|v| v.contains(version)) {
            return self.unreadable(format_args!(
                "{} v{version}, a version this connection does not serve ({})",
                key.name(),
                self.served(key).map_or_else(|| "none".into(), |v| alloc::format!("{}-{}", v.min, v.max))
            ));
        }
        if !self.wants_request(key, version) {
            if !self.forwards_unreadable()
                && let Err(e) = parsed.request()
            {
                return self.unreadable(format_args!(
                    "a {} v{version} request that does not decode: {e}",
                    key.name()
                ));
            }
            return Verdict::Forward;
        }
        let forward = self.forwards_unreadable();
        let mut current = Current::new(frame);
        let mut merges = Vec::new();
        for (index, filter) in self.filters.iter_mut().enumerate() {
            if !filter.wants_request(key, version) {
                continue;
            }
            current.join();
            let bytes = current.new.as_deref().unwrap_or(frame);
            // The caller's parse of the frame as it came; a frame a filter rewrote is new.
            let request = match current.new.as_deref() {
                None => parsed.request(),
                Some(new) => dispatch::parse_request_prefix(new).map(|(r, _)| r),
            };
            let request = match request {
                Ok(r) => r,
                // Only the original frame can fail here: a rewritten one was encoded by kwire.
                Err(e) => {
                    return unreadable_verdict(
                        forward,
                        format_args!("a {} v{version} request that does not decode: {e}", key.name()),
                    );
                }
            };
            let action = match filter.on_request(&request) {
                RequestAction::Refuse(refusals) if refusals.is_empty() => RequestAction::Pass,
                RequestAction::Refuse(refusals) => {
                    let body = &bytes[request.header.as_bytes().len()..];
                    match partial::split(&request.body, version, body, &refusals) {
                        partial::Split::Forward(body, merge) => {
                            if let Some(merge) = merge {
                                merges.push((request.header.correlation_id(), index, merge));
                            }
                            RequestAction::Rewrite(body)
                        }
                        partial::Split::Answer(body) => RequestAction::Respond(body),
                        partial::Split::ForwardBody(body, merge) => {
                            merges.push((request.header.correlation_id(), index, merge));
                            RequestAction::RewriteBody(body)
                        }
                        partial::Split::AnswerBody(body) => {
                            return answer_with(key, version, request.header.correlation_id(), &body);
                        }
                        partial::Split::Unsupported(why) => return Verdict::Close(why),
                    }
                }
                action => action,
            };
            match request_step(bytes, &request, action) {
                Step::Same => {}
                Step::New(new) => current.set(new),
                Step::Split(head, tail) => current.splice(head, tail),
                Step::Done(verdict) => return verdict,
            }
        }
        for merge in merges {
            if self.merges.len() == MAX_MERGES {
                self.merges.pop_front();
            }
            self.merges.push_back(merge);
        }
        current.verdict()
    }

    /// What happens to a request no filter can read: forwarded unchanged if the chain
    /// forwards such requests ([`FilterChain::forwards_unreadable`]), else the connection
    /// closes, for this reason.
    fn unreadable(&self, why: core::fmt::Arguments<'_>) -> Verdict {
        unreadable_verdict(self.forwards_unreadable(), why)
    }

    /// Runs a response frame (without its size prefix) that answers a request of
    /// `api_key` at `version` through the filters, last to first.
    pub fn on_response(&mut self, frame: &[u8], api_key: ApiKey, version: i16) -> Verdict {
        self.on_parsed_response(&mut ParsedResponse::new(frame, api_key, version))
    }

    /// [`FilterChain::on_response`] for a response already read by its caller: the chain
    /// reads the body through `parsed` (parsing it if no one did yet), so that the caller
    /// and the chain parse the frame once between them.
    pub fn on_parsed_response(&mut self, parsed: &mut ParsedResponse<'_>) -> Verdict {
        let (api_key, version) = (parsed.api_key(), parsed.api_version());
        if let Some(book) = &self.topic_names
            && TopicNames::learns_from(api_key)
            && let Some((response, _)) = parsed.response()
        {
            book.learn_from(&response);
        }
        let mut current = Current::new(parsed.frame());
        if self.wants_response(api_key, version)
            && let Some(verdict) = self.filter_response(parsed, &mut current)
        {
            return verdict;
        }
        if api_key == ApiKey::ApiVersions {
            current.join();
            if let Some(new) = read_current(parsed, &current.new)
                .and_then(|(response, read_at)| self.clamp(&response, read_at))
            {
                current.set(new);
            }
        }
        current.verdict()
    }

    /// An ApiVersions response (as the filters left it, read at `read_at`) with every API
    /// cut to what the broker serves, kwire reads and every filter handles; `None` if
    /// nothing changes.
    fn clamp(&mut self, response: &Response<'_>, read_at: i16) -> Option<Vec<u8>> {
        // Irrefutable in a build whose only API is ApiVersions.
        #[allow(irrefutable_let_patterns)]
        let ResponseBodyView::ApiVersions(view) = response.body else { return None };
        let ranges = versions::clamp(&view, &self.filters, &mut self.served)?;
        let answer = view.as_bytes();
        if let Some(last) = &self.clamped
            && last.read_at == read_at
            && last.answer[..] == *answer
            && last.cut == ranges
        {
            return last.body.as_ref().map(|body| splice(response.header.as_bytes(), body));
        }
        let body = versions::rebuild(&view, &ranges);
        let body = encode_body(&ResponseBody::ApiVersions(body), read_at).ok();
        let new = body.as_ref().map(|body| splice(response.header.as_bytes(), body));
        self.clamped = Some(LastClamped { read_at, answer: answer.to_vec(), cut: ranges, body });
        new
    }

    /// The answer to an ApiVersions request at a version kwire does not read: what a broker
    /// answers, a version-0 UNSUPPORTED_VERSION body naming the versions to ask at.
    fn unsupported_api_versions(&self, correlation_id: i32) -> Verdict {
        let body = ResponseBody::ApiVersions(versions::unsupported_answer(&self.filters));
        let answer = dispatch::response_len(&body, 0).and_then(|n| {
            let mut out = vec![0u8; n];
            dispatch::encode_response(&body, 0, correlation_id, &mut out).map(|_| out)
        });
        match answer {
            Ok(mut out) => {
                out.drain(..4);
                Verdict::Respond(out)
            }
            Err(e) => Verdict::Close(alloc::format!("the ApiVersions error answer: {e}")),
        }
    }

    /// Runs a response through the filters that want it, last to first; `Some` when one
    /// ends it (a close).
    fn filter_response(&mut self, parsed: &mut ParsedResponse<'_>, cur: &mut Current<'_>) -> Option<Verdict> {
        let (frame, api_key, version) = (parsed.frame(), parsed.api_key(), parsed.api_version());
        for (index, filter) in self.filters.iter_mut().enumerate().rev() {
            let merge = self.merges.front().is_some_and(|&(_, at, _)| at == index);
            if !merge && !filter.wants_response(api_key, version) {
                continue;
            }
            cur.join();
            let current = &mut cur.new;
            let bytes = current.as_deref().unwrap_or(frame);
            let Some((response, read_at)) = read_current(parsed, current) else { break };
            let correlation_id = response.header.correlation_id();
            // A partial answer of this filter's: the refused entries merged in, before the
            // filter sees the answer.
            if let Some(at) = self.merges.iter().position(|&(id, at, _)| id == correlation_id && at == index)
            {
                // Answers come in order: entries of older requests were answered otherwise;
                // those of this one at other filters' places stay for them.
                let mut at = at;
                let mut i = 0;
                while i < at {
                    if self.merges[i].0 == correlation_id {
                        i += 1;
                    } else {
                        self.merges.remove(i);
                        at -= 1;
                    }
                }
                let Some((_, _, pending)) = self.merges.remove(at) else { break };
                let body = &bytes[response.header.as_bytes().len()..];
                match partial::merge(pending, &response.body, read_at, body) {
                    Ok(b) => *current = Some(splice(response.header.as_bytes(), &b)),
                    Err(why) => return Some(Verdict::Close(why)),
                }
                if !filter.wants_response(api_key, version) {
                    continue;
                }
            }
            let Some((response, read_at)) = read_current(parsed, current) else { break };
            let exchange = Exchange { api_key, api_version: read_at, correlation_id };
            match filter.on_response(&exchange, &response) {
                ResponseAction::Pass => {}
                ResponseAction::Rewrite(body) => {
                    if body.api_key() != api_key {
                        return Some(Verdict::Close(alloc::format!(
                            "a filter rewrote a {} response with a {} body",
                            api_key.name(),
                            body.api_key().name()
                        )));
                    }
                    match encode_body(&body, read_at) {
                        Ok(b) => *current = Some(splice(response.header.as_bytes(), &b)),
                        Err(e) => {
                            return Some(Verdict::Close(alloc::format!(
                                "a filter's rewritten {} response: {e}",
                                api_key.name()
                            )));
                        }
                    }
                }
                ResponseAction::RewriteBody(body) => {
                    let new = splice(response.header.as_bytes(), &body);
                    if dispatch::parse_response(&new, api_key, read_at).is_err() {
                        return Some(Verdict::Close(alloc::format!(
                            "a filter's rewritten {} response does not decode",
                            api_key.name()
                        )));
                    }
                    *current = Some(new);
                }
                ResponseAction::RewriteFrame(new) => {
                    match dispatch::parse_response(&new, api_key, read_at) {
                        Ok(r) if r.header.correlation_id() == response.header.correlation_id() => {}
                        _ => {
                            return Some(Verdict::Close(alloc::format!(
                                "a filter's rewritten {} response does not decode",
                                api_key.name()
                            )));
                        }
                    }
                    *current = Some(new);
                }
                // Made by kwire's splicing from a checked frame: not parsed again. Its tail
                // is the frame's own end, unless the filter spliced some other frame.
                ResponseAction::RewriteSpliced(spliced) => {
                    let read = current.as_deref().unwrap_or(frame);
                    match split_of(read, spliced) {
                        Ok((head, at)) => cur.splice(head, at),
                        Err(whole) => cur.set(whole),
                    }
                }
                ResponseAction::Close(why) => return Some(Verdict::Close(why)),
            }
        }
        None
    }
}
