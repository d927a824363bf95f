//! Fetch sessions (KIP-227), as Apache Kafka's `FetchSessionCache` keeps them: a session
//! remembers the partitions a consumer fetches (with their fetch offsets and what the last
//! answer said of them), so that an incremental Fetch names only what changed and its
//! answer carries only the partitions with something new.
//!
//! The cache is bounded: at most [`super::Config::fetch_session_slots`] sessions, each of at
//! most [`MAX_SESSION_PARTITIONS`] partitions. When it is full, a new session takes the place
//! of one idle for [`super::Config::fetch_session_idle`], else of the one with the fewest
//! partitions if the new one has more (Kafka's eviction), else it gets no session: its
//! answer has session id 0, as Kafka's when its cache is full.

use std::collections::{BTreeMap, HashMap};
use std::string::String;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use std::vec::Vec;

use super::lock::lock;
use crate::codec::error_code::ErrorCode;
use crate::codec::types::Uuid;

/// The most partitions one session holds; a full Fetch of more gets no session, and an
/// incremental one that grows a session past it closes the session
/// (FETCH_SESSION_ID_NOT_FOUND, so the client starts again with a full Fetch).
pub(crate) const MAX_SESSION_PARTITIONS: usize = 10_000;

/// A partition in a session: what the client asked last, and what the last answer said.
#[derive(Clone, Debug)]
pub(crate) struct SessionPartition {
    /// The topic's name (before Fetch v13; empty from v13, where the id names it).
    pub topic: String,
    pub topic_id: Uuid,
    pub partition: i32,
    pub fetch_offset: i64,
    pub max_bytes: i32,
    pub current_leader_epoch: i32,
    /// The high watermark, last stable offset and log start offset last answered (-1 and
    /// `i64::MIN` before the first answer, so that it is answered).
    pub answered: (i64, i64, i64),
}

/// A partition's key in a session: (topic id, topic name, partition).
pub(crate) type Key = (Uuid, String, i32);

impl SessionPartition {
    pub fn key(&self) -> Key {
        (self.topic_id, self.topic.clone(), self.partition)
    }
}

#[derive(Debug)]
struct Session {
    /// The epoch the next incremental Fetch must carry.
    epoch: i32,
    /// Made by a Fetch of v13 or later (topics by id).
    uses_ids: bool,
    partitions: BTreeMap<Key, SessionPartition>,
    last_used: Instant,
}

/// What a Fetch names of its session (its id and epoch) and the partitions it sends and
/// forgets.
pub(crate) struct SessionRequest {
    pub session_id: i32,
    pub epoch: i32,
    pub uses_ids: bool,
    pub partitions: Vec<SessionPartition>,
    /// (topic name, topic id, partition)
    pub forgotten: Vec<(String, Uuid, i32)>,
}

/// The partitions a Fetch reads, in its session's terms.
pub(crate) struct SessionContext {
    /// The session id to answer with (0: none).
    pub session_id: i32,
    /// An incremental Fetch: answer only the partitions with something new.
    pub incremental: bool,
    /// Every partition to read (the whole session for an incremental Fetch).
    pub partitions: Vec<SessionPartition>,
}

/// Every fetch session.
#[derive(Debug)]
pub(crate) struct FetchSessions {
    inner: Mutex<Inner>,
    slots: usize,
    idle: Duration,
}

#[derive(Debug, Default)]
struct Inner {
    by_id: HashMap<i32, Session>,
    next: u32,
}

impl FetchSessions {
    pub fn new(slots: usize, idle: Duration) -> FetchSessions {
        FetchSessions { inner: Mutex::new(Inner::default()), slots, idle }
    }

    /// Sessions open now.
    pub fn len(&self) -> usize {
        lock(&self.inner).by_id.len()
    }

    /// Kafka's `FetchManager.newContext`: a full Fetch (epoch 0) closes the session it
    /// names and opens a new one; epoch -1 closes it and fetches without one; an incremental
    /// Fetch (epoch above 0) updates its session (FETCH_SESSION_ID_NOT_FOUND for an unknown
    /// id, INVALID_FETCH_SESSION_EPOCH for another epoch, FETCH_SESSION_TOPIC_ID_ERROR when it
    /// names topics otherwise than the session did).
    pub fn context(&self, req: SessionRequest, seed: u64) -> Result<SessionContext, ErrorCode> {
        let now = Instant::now();
        let mut inner = lock(&self.inner);
        if req.epoch == 0 || req.epoch == -1 {
            if req.session_id != 0 {
                inner.by_id.remove(&req.session_id);
            }
            if req.epoch == -1 {
                return Ok(SessionContext { session_id: 0, incremental: false, partitions: req.partitions });
            }
            let mut partitions = BTreeMap::new();
            for p in &req.partitions {
                upsert(&mut partitions, p.clone());
            }
            let n = partitions.len();
            let id = if n <= MAX_SESSION_PARTITIONS && self.make_room(&mut inner, n, now) {
                let id = new_id(&mut inner, seed);
                inner
                    .by_id
                    .insert(id, Session { epoch: 1, uses_ids: req.uses_ids, partitions, last_used: now });
                id
            } else {
                0
            };
            return Ok(SessionContext { session_id: id, incremental: false, partitions: req.partitions });
        }
        let Some(session) = inner.by_id.get_mut(&req.session_id) else {
            return Err(ErrorCode::FetchSessionIdNotFound);
        };
        if session.epoch != req.epoch {
            return Err(ErrorCode::InvalidFetchSessionEpoch);
        }
        if session.uses_ids != req.uses_ids {
            inner.by_id.remove(&req.session_id);
            return Err(ErrorCode::FetchSessionTopicIdError);
        }
        for p in req.partitions {
            upsert(&mut session.partitions, p);
        }
        for (topic, id, partition) in req.forgotten {
            session.partitions.remove(&(id, topic, partition));
        }
        if session.partitions.len() > MAX_SESSION_PARTITIONS {
            inner.by_id.remove(&req.session_id);
            return Err(ErrorCode::FetchSessionIdNotFound);
        }
        session.epoch = if session.epoch == i32::MAX { 1 } else { session.epoch + 1 };
        session.last_used = now;
        let partitions = session.partitions.values().cloned().collect();
        Ok(SessionContext { session_id: req.session_id, incremental: true, partitions })
    }

    /// Remembers what was answered for a session's partitions (high watermark, last stable
    /// offset, log start offset), so that the next incremental answer leaves out those
    /// without news.
    pub fn answered(&self, session_id: i32, answers: Vec<(Key, (i64, i64, i64))>) {
        if session_id == 0 {
            return;
        }
        let mut inner = lock(&self.inner);
        let Some(session) = inner.by_id.get_mut(&session_id) else { return };
        for (key, a) in answers {
            if let Some(p) = session.partitions.get_mut(&key) {
                p.answered = a;
            }
        }
    }

    /// Makes room for a session of `partitions` partitions: whether there is a slot.
    fn make_room(&self, inner: &mut Inner, partitions: usize, now: Instant) -> bool {
        if self.slots == 0 {
            return false;
        }
        if inner.by_id.len() < self.slots {
            return true;
        }
        let stale = inner
            .by_id
            .iter()
            .filter(|(_, s)| now.duration_since(s.last_used) >= self.idle)
            .min_by_key(|(_, s)| s.last_used)
            .map(|(&id, _)| id);
        let smaller = || {
            inner
                .by_id
                .iter()
                .filter(|(_, s)| s.partitions.len() < partitions)
                .min_by_key(|(_, s)| (s.partitions.len(), s.last_used))
                .map(|(&id, _)| id)
        };
        match stale.or_else(smaller) {
            Some(id) => {
                inner.by_id.remove(&id);
                true
            }
            None => false,
        }
    }
}

/// Adds a partition to a session's list, or updates it in place (keeping what was last
/// answered of it).
fn upsert(partitions: &mut BTreeMap<Key, SessionPartition>, p: SessionPartition) {
    match partitions.get_mut(&p.key()) {
        Some(x) => {
            x.fetch_offset = p.fetch_offset;
            x.max_bytes = p.max_bytes;
            x.current_leader_epoch = p.current_leader_epoch;
        }
        None => {
            partitions.insert(p.key(), p);
        }
    }
}

/// A new positive session id, not in use.
fn new_id(inner: &mut Inner, seed: u64) -> i32 {
    loop {
        inner.next = inner.next.wrapping_add(1);
        // A bijection of the counter, so that ids do not look sequential.
        let mixed = (u64::from(inner.next).wrapping_mul(0x9e37_79b9) ^ seed) as u32 & 0x7fff_ffff;
        let id = i32::try_from(mixed).unwrap_or(1);
        if id != 0 && !inner.by_id.contains_key(&id) {
            return id;
        }
    }
}
