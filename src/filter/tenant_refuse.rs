//! A tenant's partial answers: the topic entries of a request that name by id a topic that
//! is not the tenant's are refused with UNKNOWN_TOPIC_ID ([`Refusals`]), and the rest of
//! the request goes on, prefixed; the broker's answer, once the tenant has taken its
//! prefix off, gets the refused entries back in the client's order.
//!
//! Only the entries [`Refusals`] counts (the request's topic array, for the APIs and
//! versions [`Refusals::supports`] lists) are refused here; a topic id anywhere else (a
//! Fetch's forgotten topics, a share fetch, a group's assignment) goes to the broker as a
//! stand-in (`tenant.rs`), which answers it as an unknown id.

use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::vec::Vec;

use super::partial::{self, Merge, Split};
use super::{Refusals, TopicNames};
use crate::ErrorCode;
use crate::codec::dispatch::{self, Request};
use crate::codec::types::Uuid;

/// The most partial answers one connection keeps awaiting the broker's.
const MAX_MERGES: usize = 1024;

/// A connection's partial answers awaiting the broker's, by correlation id, oldest first.
#[derive(Debug, Default)]
pub(super) struct Merges(VecDeque<(i32, Merge)>);

impl Merges {
    /// Whether none awaits an answer.
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Keeps a merge for the answer to `correlation_id`; false if too many await.
    pub(super) fn push(&mut self, correlation_id: i32, merge: Merge) -> bool {
        if self.0.len() >= MAX_MERGES {
            return false;
        }
        self.0.push_back((correlation_id, merge));
        true
    }

    /// The merge for the answer to `correlation_id`, if any. Answers come in the order of
    /// their requests: older merges, whose requests were answered otherwise (by a filter
    /// nearer the broker), go.
    pub(super) fn take(&mut self, correlation_id: i32) -> Option<Merge> {
        let at = self.0.iter().position(|(id, _)| *id == correlation_id)?;
        self.0.drain(..at);
        self.0.pop_front().map(|(_, merge)| merge)
    }
}

/// The request's topic entries that name by id a topic that is not the tenant's: one the
/// book knows by a name without the prefix, or does not know at all. `None` if there are
/// none, or if the request cannot be answered in part.
pub(super) fn foreign_entries(request: &Request<'_>, prefix: &str, ids: &TopicNames) -> Option<Refusals> {
    let version = request.header.api_version();
    let topic_ids = partial::topic_ids(&request.body, version, request.body.as_bytes())?;
    let mut refusals = Refusals::new();
    ids.with(|book| {
        for (t, id) in topic_ids.iter().enumerate() {
            if *id != Uuid::ZERO && book.name(id).map(|n| n.starts_with(prefix)) != Some(true) {
                // What Apache Kafka answers for a topic id it does not know.
                refusals.topic(t, ErrorCode::UnknownTopicId, None);
            }
        }
    });
    (!refusals.is_empty()).then_some(refusals)
}

/// What becomes of a request with refused entries.
pub(super) enum Rest {
    /// Forward this body (not yet prefixed); merge the answer with the `Merge` (none for a
    /// request that expects no answer).
    Forward(Vec<u8>, Option<Merge>),
    /// Every entry is refused: the chain answers it ([`super::RequestAction::Refuse`]).
    AllRefused,
    /// It cannot be answered in part: its ids go as stand-ins.
    Unsupported,
}

/// Splits a request by its refusals.
pub(super) fn split(request: &Request<'_>, refusals: &Refusals) -> Result<Rest, String> {
    let version = request.header.api_version();
    let api = request.body.api_key();
    Ok(match partial::split(&request.body, version, request.body.as_bytes(), refusals) {
        Split::Forward(body, merge) => {
            let body = super::encode_body(&body, version).map_err(|e| {
                alloc::format!("a tenant's {} request without its refused topics: {e}", api.name())
            })?;
            Rest::Forward(body, merge)
        }
        Split::ForwardBody(body, merge) => Rest::Forward(body, Some(merge)),
        Split::Answer(_) | Split::AnswerBody(_) => Rest::AllRefused,
        Split::Unsupported(_) => Rest::Unsupported,
    })
}

/// The answer's body (`header`, then `body`: the answer as the tenant leaves it, at
/// `version`) with the refused entries merged in.
pub(super) fn merge(
    merge: Merge,
    api: crate::ApiKey,
    version: i16,
    header: &[u8],
    body: &[u8],
) -> Result<Vec<u8>, String> {
    let mut frame = Vec::with_capacity(header.len() + body.len());
    frame.extend_from_slice(header);
    frame.extend_from_slice(body);
    let response = dispatch::parse_response(&frame, api, version)
        .map_err(|e| alloc::format!("a tenant's {} answer does not decode: {e}", api.name()))?;
    partial::merge(merge, &response.body, version, body)
}
