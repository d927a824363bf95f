//! [`InFlight`]: the bounded table of requests awaiting their responses.

use alloc::collections::VecDeque;

use super::ConnError;
use crate::ApiKey;

/// The default bound of an [`InFlight`] table (Kafka's clients default to 5 in flight per
/// connection; a proxy sees what its clients pipeline).
pub const DEFAULT_MAX_IN_FLIGHT: usize = 1024;

/// A request awaiting its response, as [`InFlight`] keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pending<T = ()> {
    /// The request's correlation id.
    pub correlation_id: i32,
    /// Its API.
    pub api_key: ApiKey,
    /// Its version: the version its response is read at.
    pub api_version: i16,
    /// The caller's data for it (e.g. the time it was sent, or a reply channel).
    pub payload: T,
}

/// Requests awaiting their responses on one connection, oldest first: correlation id to
/// `(ApiKey, version)` and a caller payload `T`.
///
/// **Bounded.** The table holds at most its capacity; a [`InFlight::push`] beyond it fails
/// with [`ConnError::InFlightFull`] (as Kafka's client stops sending at
/// `max.in.flight.requests.per.connection`). [`InFlight::with_capacity`] allocates the
/// whole bound when the table is made, and the table never allocates after.
/// [`InFlight::new`] (the default bound, far above what clients pipeline) allocates
/// nothing until the first push and grows as entries are pushed, never past the bound,
/// keeping what it grew: a server or proxy holding thousands of idle connections pays for
/// the entries each has had in flight at once, not for the bound.
///
/// **Only requests that get a response go in.** A Produce request with `acks = 0` is never
/// answered ([`super::expects_response`] says which); the caller does not push it, so it
/// can neither wedge the order below nor fill the table.
///
/// **Order.** Apache Kafka answers the requests of a connection in the order they were
/// sent. [`InFlight::complete`] therefore takes the *oldest* entry and requires the
/// response's correlation id to be its id: an id that belongs to a later entry is
/// [`ConnError::OutOfOrder`] (nothing is removed), an id of no entry is
/// [`ConnError::UnknownCorrelationId`]. Both mean the peer broke the protocol, and a
/// client closes the connection (Kafka's throws `CorrelationIdMismatchException`). For a
/// peer known to answer out of order, [`InFlight::remove`] takes the entry wherever it is.
/// Correlation ids are opaque: they may wrap and be negative; a duplicate id in flight is
/// allowed and pairs in order.
///
/// ```
/// use kwire::ApiKey;
/// use kwire::conn::{ConnError, InFlight};
///
/// let mut in_flight = InFlight::with_capacity(2);
/// in_flight.push(7, ApiKey::Metadata, 12, "first")?;
/// in_flight.push(8, ApiKey::ApiVersions, 3, "second")?;
/// assert_eq!(in_flight.push(9, ApiKey::Metadata, 12, "third"), Err(ConnError::InFlightFull { capacity: 2 }));
/// assert_eq!(in_flight.complete(8), Err(ConnError::OutOfOrder { expected: 7, correlation_id: 8 }));
/// assert_eq!(in_flight.complete(7)?.payload, "first");
/// assert_eq!(in_flight.complete(99), Err(ConnError::UnknownCorrelationId { correlation_id: 99 }));
/// # Ok::<(), ConnError>(())
/// ```
#[derive(Clone, Debug)]
pub struct InFlight<T = ()> {
    entries: VecDeque<Pending<T>>,
    capacity: usize,
}

impl<T> InFlight<T> {
    /// A table of at most [`DEFAULT_MAX_IN_FLIGHT`] entries, allocated as they are pushed.
    pub fn new() -> Self {
        InFlight { entries: VecDeque::new(), capacity: DEFAULT_MAX_IN_FLIGHT }
    }

    /// A table of at most `capacity` entries, allocated now.
    pub fn with_capacity(capacity: usize) -> Self {
        InFlight { entries: VecDeque::with_capacity(capacity), capacity }
    }

    /// The bound.
    pub const fn capacity(&self) -> usize {
        self.capacity
    }

    /// Entries in flight.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is in flight.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether [`InFlight::push`] would fail.
    pub fn is_full(&self) -> bool {
        self.entries.len() >= self.capacity
    }

    /// Records a request sent, newest last; fails with [`ConnError::InFlightFull`] when the
    /// table holds its capacity (check before sending).
    pub fn push(
        &mut self,
        correlation_id: i32,
        api_key: ApiKey,
        api_version: i16,
        payload: T,
    ) -> Result<(), ConnError> {
        if self.is_full() {
            return Err(ConnError::InFlightFull { capacity: self.capacity });
        }
        if self.entries.len() == self.entries.capacity() {
            // Doubling (from 4), never past the bound.
            let more = self.entries.len().max(4).min(self.capacity - self.entries.len());
            self.entries.reserve_exact(more);
        }
        self.entries.push_back(Pending { correlation_id, api_key, api_version, payload });
        Ok(())
    }

    /// The oldest entry, which the next response must answer.
    pub fn oldest(&self) -> Option<&Pending<T>> {
        self.entries.front()
    }

    /// The entry of `correlation_id` without removing it, checked as
    /// [`InFlight::complete`] checks it.
    pub fn peek(&self, correlation_id: i32) -> Result<&Pending<T>, ConnError> {
        match self.entries.front() {
            Some(p) if p.correlation_id == correlation_id => Ok(p),
            other => Err(self.mismatch(other.map(|p| p.correlation_id), correlation_id)),
        }
    }

    /// Takes the entry a response with `correlation_id` answers: the oldest, which must
    /// have that id (see the type's docs on order).
    pub fn complete(&mut self, correlation_id: i32) -> Result<Pending<T>, ConnError> {
        self.peek(correlation_id)?;
        self.entries.pop_front().ok_or(ConnError::UnknownCorrelationId { correlation_id })
    }

    /// Takes the oldest entry with `correlation_id` wherever it is, for peers that answer
    /// out of order; [`ConnError::UnknownCorrelationId`] if there is none.
    pub fn remove(&mut self, correlation_id: i32) -> Result<Pending<T>, ConnError> {
        let at = self.entries.iter().position(|p| p.correlation_id == correlation_id);
        at.and_then(|i| self.entries.remove(i)).ok_or(ConnError::UnknownCorrelationId { correlation_id })
    }

    /// Gives back the table's storage beyond its entries (all of it when there are none),
    /// for a connection about to idle; the next [`InFlight::push`] allocates again.
    pub fn shrink_to_fit(&mut self) {
        self.entries.shrink_to_fit();
    }

    /// Takes every entry, oldest first (when the connection closes: these got no answer).
    pub fn drain(&mut self) -> impl Iterator<Item = Pending<T>> + '_ {
        self.entries.drain(..)
    }

    /// The entries, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Pending<T>> + '_ {
        self.entries.iter()
    }

    fn mismatch(&self, oldest: Option<i32>, correlation_id: i32) -> ConnError {
        match oldest {
            Some(expected) if self.entries.iter().any(|p| p.correlation_id == correlation_id) => {
                ConnError::OutOfOrder { expected, correlation_id }
            }
            _ => ConnError::UnknownCorrelationId { correlation_id },
        }
    }
}

impl<T> Default for InFlight<T> {
    fn default() -> Self {
        Self::new()
    }
}
